"""How SGLang fails to start, in its words, and which of its flags start it (inputs/failed_start
reads a log with these; reports/fixes evaluates each change with this engine's own rules).

From python/sglang/srt/model_executor/model_runner.py: profile_max_num_token's "Not enough
memory. Please try to increase --mem-fraction-static." (the pool's share, total x
mem_fraction_static, is spent before the KV pool: 0.3 on), and cuda_graph_runner.py's "Capture
cuda graph failed" with its four remedies (a lower --mem-fraction-static first)."""

import re

from ...readers.failure_rules import FailureRule

NAME = "sglang"
MARKS = ("sglang", "[TP0]", "[TP1]", "srt/", "ServerArgs(", "Scheduler hit an exception", "mem_fraction_static")

# What it prints once it serves: an error after these is not a start's.
STARTED_MARKS = ("The server is fired up and ready to roll", "Application startup complete", "Uvicorn running on")

RULES = (
    FailureRule("pool-short", re.compile(r"Not enough memory\. Please try to increase --mem-fraction-static"
                                         r"(?:\.? ?Current value: \S{0,40}?mem_fraction_static=(?P<utilization_frac>"
                                         r"\d(?:\.\d{1,4})?))?"), needle="Not enough memory"),
    # Its newer words for the same (model_runner_kv_cache_mixin._profile_available_bytes).
    FailureRule("pool-short", re.compile(r"Loaded weights leave no GPU memory for the KV cache under "
                                         r"--mem-fraction-static=(?P<utilization_frac>\d(?:\.\d{1,4})?)"),
                needle="Loaded weights leave no GPU memory"),
    # The pool it profiled, below zero: the same refusal follows (profile_max_num_token).
    FailureRule("pool-short", re.compile(r"profiled value (?P<pool_tokens>-\d{1,12})"), needle="profiled value -"),
    # Another process holds memory on some GPUs (scheduler.py's check of the ranks' free memory).
    FailureRule("free-memory", re.compile(r"The memory capacity is unbalanced"), needle="memory capacity is unbalanced"),
    FailureRule("out-of-memory", re.compile(r"Capture (?:cuda|CUDA) graph failed"), phase="graphs",
                needle="graph failed"),
)

PHASE_MARKS = (
    ("Load weight begin", "loading"), ("load_model", "loading"), ("Loading safetensors checkpoint shards", "loading"),
    ("Load weight end", "kv-cache"), ("init_memory_pool", "kv-cache"), ("profile_max_num_token", "kv-cache"),
    ("KV Cache is allocated", "graphs"), ("Memory pool end", "graphs"), ("Capture cuda graph begin", "graphs"),
    ("Capture CUDA graph begin", "graphs"), ("init_cuda_graphs", "graphs"), ("cuda_graph_runner", "graphs"),
)

UTILIZATION_FLAG = "--mem-fraction-static"
HIGHEST_UTILIZATION = "0.95"
# What a larger share costs: the rest of the card is what its activations and CUDA graphs run in.
UTILIZATION_COST = ("less room for its activations and CUDA graphs than its own default keeps: if it then runs out "
                    "capturing graphs, lower --cuda-graph-max-bs")


def fix_kinds(failure) -> tuple:
    """The changes worth evaluating for this failure, cheapest first (reports/fixes knows each)."""
    kind, phase = failure.kind, failure.phase
    if kind == "pool-short":
        return ("utilization-up", "kv-fp8", "context", "layout")
    if kind == "out-of-memory" and phase == "loading":
        return ("layout",)
    if kind == "out-of-memory":
        # Its own advice: a lower --mem-fraction-static leaves the graphs their memory.
        return ("utilization-down", "layout")
    return ()


def refused_kind(out) -> str:
    """The failure its sizing foresees (an EngineResult that does not start), as RULES name it:
    a pool of nothing is "Not enough memory"; a pool too small for one request is refused by
    --context-length's check, which the fixes answer alike."""
    return "pool-short"


# The flag each input a fix changes is written as (launch.py), and the flag a fix's command
# leaves out: pinning the pool computed here would stop SGLang measuring its own.
FLAG_OF = {"context": ("--context-length",), "memory-utilization": ("--mem-fraction-static",),
           "kv-dtype": ("--kv-cache-dtype",), "tp": ("--tp-size",), "pp": ("--pp-size",), "batch": ("--max-running-requests",),
           "prefill-chunk": ("--chunked-prefill-size",)}
PINNED_FLAGS = ("--max-total-tokens",)
