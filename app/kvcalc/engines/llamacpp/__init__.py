"""llama.cpp's home: engine (the Engine protocol's members: builds, flash attention, offload,
figures, notes), allocator (its KV cells and buffers), printing (what its start-up log prints),
launch (`llama-server`), log (its start-up log's reader) and serving (its serving rules as data);
PLACEMENT below, how it places a layout's weights."""

from ... import parallel

# How llama.cpp places a layout's weights (parallel.py): no data or expert parallelism, refused in
# its words. Its engine passes it to parallel.
PLACEMENT = parallel.Placement(
    no_data_parallel="llama.cpp has no data parallelism (dp={dp}): one llama-server spreads one copy of the model "
                     "over its GPUs; run dp servers behind a load balancer and size each alone with dp 1",
    no_expert_parallel="llama.cpp has no expert parallelism: its split modes (-sm layer, row) place layers or rows, "
                       "and --n-cpu-moe keeps experts on the CPU; set ep off")
