"""How llama.cpp fails to start, in its words, and which of its flags start it (inputs/failed_start
reads a log with these; reports/fixes evaluates each change with this engine's own rules).

From ggml/src/ggml-cuda/ggml-cuda.cu ("allocating X MiB on device N: cudaMalloc failed: out of
memory"), ggml-backend ("failed to allocate CUDA0 buffer of size N"), src/llama-kv-cache*.cpp
("failed to allocate buffer for kv cache"), src/llama-context.cpp ("failed to allocate compute
buffers") and src/llama-model-loader.cpp ("unable to allocate CUDA0 buffer")."""

import re

from ...readers.failure_rules import FailureRule

NAME = "llama.cpp"
MARKS = ("llama_", "ggml_", "llm_load", "load_tensors", "print_info", "llama.cpp", "llama-server")

# What it prints once it serves: an error after these is not a start's.
STARTED_MARKS = ("server is listening on", "main: model loaded", "all slots are idle")

RULES = (
    FailureRule("buffer", re.compile(r"failed to allocate buffer for kv cache"), phase="kv-cache",
                needle="buffer for kv cache"),
    FailureRule("buffer", re.compile(r"failed to allocate compute (?:pp )?buffers?"), phase="compute",
                needle="failed to allocate compute"),
    FailureRule("buffer", re.compile(r"unable to allocate (?P<buffer>\w{1,20}) buffer"), phase="loading",
                needle="unable to allocate"),
    FailureRule("buffer", re.compile(r"allocating (?P<tried_gib>\d{1,9}(?:\.\d{1,4})?) (?P<tried_unit>MiB|GiB) on "
                                     r"device (?P<device>\d{1,3}): (?:cuda|hip|vk)?Malloc failed"),
                needle="Malloc failed"),
    FailureRule("buffer", re.compile(r"failed to allocate (?P<buffer>\w{1,20}) buffer of size (?P<tried_bytes>\d{1,15})"),
                needle="buffer of size"),
    # Ollama's runner passes the allocator's words on without the size.
    FailureRule("buffer", re.compile(r"(?:cuda|hip)Malloc failed: out of memory"), needle="Malloc failed: out of memory"),
    # Vulkan's and Metal's words for the same.
    FailureRule("buffer", re.compile(r"Device memory allocation of size (?P<tried_bytes>\d{1,15}) failed"),
                needle="Device memory allocation of size"),
    FailureRule("buffer", re.compile(r"ErrorOutOfDeviceMemory|kIOGPUCommandBufferCallbackErrorOutOfMemory"),
                needle="OutOf"),
    FailureRule("buffer", re.compile(r"failed to allocate buffer, size = +(?P<tried_gib>\d{1,9}(?:\.\d{1,4})?) "
                                     r"(?P<tried_unit>MiB|GiB)"), needle="failed to allocate buffer, size"),
)

PHASE_MARKS = (
    ("llm_load_tensors", "loading"), ("load_tensors:", "loading"), ("llama_model_load", "loading"),
    ("llama_kv_cache", "kv-cache"), ("llama_new_context_with_model", "kv-cache"), ("llama_context:", "kv-cache"),
    ("llama_init_from_model", "kv-cache"), ("KV self size", "compute"), ("KV buffer size", "compute"),
    ("graph_reserve", "compute"), ("compute buffer", "compute"),
)


def fix_kinds(failure) -> tuple:
    """The changes worth evaluating for this failure, cheapest first (reports/fixes knows each)."""
    if failure.kind not in ("buffer", "out-of-memory"):
        return ()
    if failure.phase == "loading":
        return ("cpu-moe", "ngl-down")
    return ("kv-q8", "cpu-moe", "ctx-down", "ngl-down")


def refused_kind(out) -> str:
    """The failure its sizing foresees (an EngineResult that does not start): its buffers do not fit."""
    return "buffer"


# The flags each input a fix changes is written as (launch.py).
FLAG_OF = {"context": ("-c",), "kv-dtype": ("-ctk", "-ctv"), "flash-attn": ("-fa",), "n-gpu-layers": ("-ngl",),
           "n-cpu-moe": ("--n-cpu-moe",), "batch": ("-np",), "prefill-chunk": ("-ub", "-b")}
PINNED_FLAGS = ()
