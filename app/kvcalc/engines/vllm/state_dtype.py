"""What a hybrid's start-up log says of its recurrent state's dtype.

vLLM grows a hybrid's attention block until one attention page holds a layer's state
(vllm/platforms/interface.py _align_hybrid_block_size) and prints the size it chose: "Setting
attention block size to 448 tokens to ensure that attention page size is >= mamba page size".
The state's page is conv state + SSM state, the SSM part in --mamba-ssm-cache-dtype, whose
"auto" takes the config's mamba_ssm_dtype and else the model's dtype
(vllm/model_executor/models/config.py, Qwen3.5 and NemotronH, 0.20-0.28). A checkpoint re-saved
without that key (a W4A16 of Qwen3.6-27B on an Arc B70, 0.23.0: 448 tokens where the float32 of
the original's config gives 784) keeps its state in the model's dtype. The printed block size
tells the two apart; the model's own config cannot.

Worked example (the W4A16 log, tp 1, bf16 cache): a full-attention token is 2 x 256 x 4 heads x
2 B = 4,096 B a layer; a Gated DeltaNet state is 30,720 conv + 786,432 SSM elements: 3,207,168 B
with the SSM part in float32, 1,634,304 B in bfloat16. In steps of the backend's 64-token block,
the attention page first holds the float32 state at 832 tokens, the bfloat16 one at 448: the
printed 448 is bfloat16, and the log's "Padding mamba page size by 12.28%" is 448 x 4,096 /
1,634,304 - 1.
"""

from dataclasses import replace

from ...errors import InputError
from ...precision import STATE_DTYPES, precision
from ...readers.log_rules import Read
from . import allocator


def attention_block(model, kv_dtype: str, tp: int, block_size: int) -> int:
    """The attention block vLLM settles on for this model's states (allocator.specs_of)."""
    state = precision(model.dtype)
    return allocator.specs_of(model, precision(kv_dtype), state, tp, block_size)[1]


def _with_ssm(model, name: str):
    return replace(model, layers=tuple(replace(layer, ssm_dtype=name) if layer.kind == "state" else layer
                                       for layer in model.layers))


def _candidates(model) -> list[str]:
    """One state dtype a width: the model's own first (what "auto" falls back to), then the rest;
    bfloat16 and float16 take the same pages, so the block size cannot tell them apart."""
    by_width = {}
    for name in (precision(model.dtype).name, *STATE_DTYPES):
        if name in STATE_DTYPES:
            by_width.setdefault(precision(name).bits_per_element, name)
    return list(by_width.values())


def implied(printed: dict, model, values: dict) -> tuple[list, list]:
    """([Read], [notes]): mamba-ssm-dtype where the attention block size the log printed is the one
    state dtype's and not the config's (module doc). Nothing where the user set it, the layout is
    not read, or the block size is every dtype's or none's."""
    figure = printed.get("attention_block_size")
    states = [layer for layer in model.layers if layer.kind == "state"]
    if figure is None or not states or "mamba-ssm-dtype" in values or not str(values.get("tp", "")).isdigit():
        return [], []
    tp = int(values["tp"])
    # kv_cache_dtype=auto printed: the cache in the model's dtype, whatever a preset's checkpoint says.
    kv_dtype = values.get("kv-dtype") or (model.dtype if "kv_dtype_default" in printed else
                                          model.kv_dtype or model.dtype)
    block = int(values["block-size"]) if str(values.get("block-size", "")).isdigit() else allocator.DEFAULT_BLOCK
    try:
        if attention_block(model, kv_dtype, tp, block) == figure.value:
            return [], []
        fitting = [name for name in _candidates(model)
                   if attention_block(_with_ssm(model, name), kv_dtype, tp, block) == figure.value]
    except (InputError, ValueError, ArithmeticError):
        return [], []
    configured = states[0].ssm_dtype or precision(model.dtype).name
    if len(fitting) != 1:
        return [], [f"the attention block size printed ({figure.value:,} tokens, line {figure.line_number:,}) is not "
                    f"the one this model's state gives (its SSM state in {configured}, block size {block}): "
                    "the checkpoint's state is not the config's"]
    how = (f"implied: the attention block size printed, {figure.value:,} tokens, holds the state only with its SSM "
           f"part in {fitting[0]} (the config says {configured})")
    return [Read("mamba-ssm-dtype", fitting[0], figure.line_number, figure.line, how)], [
        f"mamba-ssm-dtype {fitting[0]} implied, not printed: {figure.value:,}-token attention blocks (line "
        f"{figure.line_number:,}) fit that state, not the config's {configured}; check it"]
