"""llama.cpp's home: engine (its KV cells, compute buffers, releases, what it prints) and log (its
start-up log's reader)."""

from ... import parallel

# How llama.cpp places a layout's weights (parallel.py): no data or expert parallelism, refused in
# its words. Its engine passes it to parallel.
PLACEMENT = parallel.Placement(
    no_data_parallel="llama.cpp has no data parallelism (dp={dp}): one llama-server spreads one copy of the model "
                     "over its GPUs; run dp servers behind a load balancer and size each alone with dp 1",
    no_expert_parallel="llama.cpp has no expert parallelism: its split modes (-sm layer, row) place layers or rows, "
                       "and --n-cpu-moe keeps experts on the CPU; set ep off")
