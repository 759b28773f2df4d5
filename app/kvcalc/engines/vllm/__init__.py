"""vLLM's home: engine (the Engine protocol's members: usable memory, overhead, figures, notes),
allocator (one spec per layer kind, the KV cache groups, the pool), printing (what its start-up log
prints), launch (`vllm serve`), release (the rules each release changed), profile (the memory
profiling run's overhead), log (its start-up log's reader) and serving (its serving rules as
data)."""

from ... import parallel

# How vLLM places a layout's weights (parallel.py): the exact ideal's, its name in the refusal of
# experts that tp x dp does not divide. Its engine and its launch command pass it to parallel.
PLACEMENT = parallel.Placement(splits_experts="vLLM")
