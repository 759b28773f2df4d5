"""SGLang's home: engine (the Engine protocol's members: defaults by release, usable memory,
figures, notes), allocator (its token pool), printing (what its start-up log prints), launch
(`python -m sglang.launch_server`), log (its start-up log's reader) and serving (its serving rules
as data); PLACEMENT below, how it places a layout's weights."""

from ... import parallel

# How SGLang places a layout's weights (parallel.py): dp > 1 is DP attention (the embedding whole,
# dense layers over all tp x dp GPUs), and --ep-size places whole experts only. Its engine and its
# launch command pass it to parallel.
PLACEMENT = parallel.Placement(
    splits_experts="SGLang", dp_attention=True,
    whole_experts="SGLang places whole experts: its --ep-size {group} (tp x dp = {tp} x {dp}) must divide the "
                  "model's {experts} routed experts (FusedMoE asserts num_experts % ep_size == 0); allowed: tp x dp "
                  "of {allowed}")
