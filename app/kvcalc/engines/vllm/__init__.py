"""vLLM's home: engine (its block allocator, usable memory, what it prints), release (the rules
each release changed), profile (the memory profiling run's overhead) and log (its start-up log's
reader)."""

from ... import parallel

# How vLLM places a layout's weights (parallel.py): the exact ideal's, its name in the refusal of
# experts that tp x dp does not divide. Its engine and its launch command pass it to parallel.
PLACEMENT = parallel.Placement(splits_experts="vLLM")
