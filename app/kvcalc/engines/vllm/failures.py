"""How vLLM fails to start, in its words, and which of its flags start it (inputs/failed_start
reads a log with these; reports/fixes evaluates each change with this engine's own rules).

The refusals, from vllm/v1/core/kv_cache_utils.py (check_enough_kv_cache_memory, 0.6-0.34),
vllm/v1/worker/gpu_worker.py (the free-memory check, 0.7.4 on) and mamba_utils / the hybrid
allocator (the Mamba block ceiling, 0.10.2 on); the phases from the functions a traceback names
(gpu_model_runner.py: load_model, profile_run, _dummy_sampler_run, initialize_kv_cache,
capture_model)."""

import re

from ...readers.failure_rules import FailureRule
from . import profile, release as rules
from .engine import max_num_seqs as seqs_in_force, release_of

NAME = "vllm"
# Words only vLLM's logs and tracebacks print: a torch error among them is vLLM's.
MARKS = ("vllm/", "vllm.", "(EngineCore", "(VllmWorker", "(APIServer", "INFO 0", "INFO 1", "vLLM",
         "[gpu_worker.py", "[kv_cache_utils.py", "[gpu_model_runner.py", "VLLM_")

# What it prints once it serves: an error after these is not a start's.
STARTED_MARKS = ("Application startup complete", "Uvicorn running on", "Starting vLLM API server on")

RULES = (
    FailureRule("kv-short", re.compile(
        r"max seq len \((?P<context>\d{1,9})\), \(?(?P<needed_gib>\d{1,6}(?:\.\d{1,4})?) (?:GiB|GB) KV cache is needed, "
        r"which is larger than the available KV cache memory \((?P<kv_memory_gib>-?\d{1,6}(?:\.\d{1,4})?) (?:GiB|GB)\)"
        r"(?:\. Based on the available memory, the estimated maximum model length is (?P<estimated_max_len>\d{1,9})"
        r"(?=\.))?"),
        needle="KV cache is needed"),
    FailureRule("kv-short", re.compile(
        r"The model's max seq len \((?P<context>\d{1,9})\) is larger than the maximum number of tokens that can "
        r"be stored in KV cache \((?P<kv_tokens>\d{1,12})\)"), needle="can be stored in KV cache"),
    FailureRule("no-kv-memory", re.compile(r"No available memory for the cache blocks"),
                needle="No available memory for the cache blocks"),
    # What it printed before refusing, where a log ends there: a KV memory below zero, no blocks.
    FailureRule("no-kv-memory", re.compile(r"(?:Available KV cache memory: |reserved for KV Cache is )-(?P<short_gib>"
                                           r"\d{1,6}(?:\.\d{1,4})?) ?GiB"), needle="KV "),
    FailureRule("no-kv-memory", re.compile(r"# (?:GPU|cuda|CUDA|gpu) blocks: 0\b"), needle="blocks: 0"),
    FailureRule("state-blocks", re.compile(
        r"max_num_seqs \((?P<batch>\d{1,9})\) exceeds available Mamba cache blocks \((?P<blocks>\d{1,9})\)"),
        needle="exceeds available Mamba cache blocks"),
    FailureRule("free-memory", re.compile(
        r"Free memory on device(?: [\w:]{1,20})? \((?P<free_gib>\d{1,6}(?:\.\d{1,4})?)/(?P<total_gib>\d{1,6}"
        r"(?:\.\d{1,4})?) GiB\) on startup is less than desired GPU memory utilization \((?P<utilization_frac>"
        r"\d(?:\.\d{1,4})?), (?P<wanted_gib>\d{1,6}(?:\.\d{1,4})?) GiB\)"), needle="on startup is less than desired"),
    # Another process freed or took memory while it measured its peak (gpu_worker, 0.7-0.10).
    FailureRule("memory-moved", re.compile(r"Error in memory profiling\. Initial free memory (?P<free_gib>\d{1,6}"
                                          r"(?:\.\d{1,4})?) GiB, current free memory (?P<now_free_gib>\d{1,6}"
                                          r"(?:\.\d{1,4})?) GiB"), needle="Error in memory profiling"),
    FailureRule("out-of-memory", re.compile(
        r"CUDA out of memory occurred when warming up sampler with (?P<batch>\d{1,9}) dummy requests"),
        phase="sampler", needle="when warming up sampler"),
)

# (substring, the phase it begins): the last one before the error is where it struck. A
# traceback lists the outer call first, so its innermost frame comes last, as the log's lines do.
PHASE_MARKS = (
    ("Starting to load model", "loading"), ("Loading safetensors checkpoint shards", "loading"),
    ("Loading weights", "loading"), ("load_model", "loading"), ("load_weights", "loading"),
    ("Model loading took", "profiling"), ("Loading model weights took", "profiling"),
    ("profile_run", "profiling"), ("determine_available_memory", "profiling"),
    ("determine_num_available_blocks", "profiling"), ("_dummy_run", "profiling"),
    ("_dummy_sampler_run", "sampler"), ("warming up sampler", "sampler"),
    ("initialize_kv_cache", "kv-cache"), ("_allocate_kv_cache", "kv-cache"), ("_init_cache_engine", "kv-cache"),
    ("Available KV cache memory", "kv-cache"), ("GPU KV cache size", "graphs"),
    ("capture_model", "graphs"), ("Capturing CUDA graph", "graphs"), ("_capture_cudagraphs", "graphs"),
    ("Capturing cudagraphs", "graphs"), ("cudagraph_capture", "graphs"),
    # V1 warms the sampler up once the graphs are captured (gpu_worker.compile_or_warm_up_model).
    ("Graph capturing finished", "sampler"), ("sampler.py", "sampler"), ("sampling.py", "sampler"),
)

# vLLM 0.8 printed these GiB as "GB" (its own GiB_bytes): read as GiB.
# The flags that start it, in the order of what they cost the user: memory the card has to
# spare first, then precision, then requests at once, then speed, then context, then GPUs.
UTILIZATION_FLAG = "--gpu-memory-utilization"
# Above this share the CUDA context, NCCL and the allocator's fragments of an 80 GB card have
# no room left; vLLM does not stop you, but we do not offer it.
HIGHEST_UTILIZATION = "0.95"
# What a larger share costs: it profiles its activation peak and leaves it out of the pool.
UTILIZATION_COST = "nothing lost, if nothing else runs on the card"


def fix_kinds(failure) -> tuple:
    """The changes worth evaluating for this failure, cheapest first (reports/fixes knows each)."""
    kind, phase = failure.kind, failure.phase
    if kind in ("kv-short", "no-kv-memory"):
        # Fewer sequences: its sampler's warm-up over max_num_seqs comes out of the cache (profile.py).
        # Fewer graphs: from 0.20.0 their estimate comes out of it too; fewer is cheaper than none.
        return ("utilization-up", "kv-fp8", "seqs-for-kv", "graphs-fewer", "eager-for-kv", "context", "layout")
    if kind == "state-blocks":
        return ("state-seqs", "utilization-up", "layout")
    if kind == "free-memory":
        return ("utilization-free",)
    if kind == "out-of-memory" and phase == "loading":
        return ("layout",)
    if kind == "out-of-memory" and phase == "sampler":
        # Its own advice: "Please try lowering `max_num_seqs` or `gpu_memory_utilization`".
        return ("seqs-down", "utilization-down", "layout")
    if kind == "out-of-memory" and phase == "profiling":
        return ("seqs-down", "layout")
    if kind == "out-of-memory":
        return ("utilization-down", "eager", "layout")
    return ()


def capture_limit_in_force(evaluation) -> int | None:
    """The largest batch it captures CUDA graphs for with these inputs, where their memory comes out
    of the KV memory (profile.cudagraph_estimate); None where it does not (eager, before 0.20.0), or
    where the sequences are not given: the launch command then writes the requests that fit as
    --max-num-seqs, whose own default limit (2 x that) is not the one sized here."""
    scenario = evaluation.scenario
    if not scenario.settings.batch_given:
        return None
    release, gpu = release_of(scenario), scenario.deployment.gpu
    if not rules.subtracts_cudagraphs(release, scenario.settings.enforce_eager,
                                      gpu is not None and gpu.platform == "rocm"):
        return None
    draft = scenario.serving.draft
    spec = draft.spec_tokens if draft is not None and draft.spec_tokens else 0
    return profile.capture_limit(release, seqs_in_force(scenario), evaluation.engine.prefill_chunk, gpu, spec,
                                 scenario.settings.capture_size_limit)


def refused_kind(out) -> str:
    """The failure its sizing foresees (an EngineResult that does not start), as RULES name it."""
    if out.refusal_words:
        return "state-blocks"
    budget = out.kv_budget_bytes_per_gpu
    return "no-kv-memory" if budget is not None and budget <= 0 else "kv-short"


# The flag each input a fix changes is written as (launch.py), and the flag a fix's command
# leaves out: pinning the KV memory computed here would stop vLLM measuring its own.
FLAG_OF = {"context": ("--max-model-len",), "memory-utilization": ("--gpu-memory-utilization",),
           "kv-dtype": ("--kv-cache-dtype",), "tp": ("--tensor-parallel-size",), "pp": ("--pipeline-parallel-size",), "batch": ("--max-num-seqs",),
           "enforce-eager": ("--enforce-eager",), "prefill-chunk": ("--max-num-batched-tokens",),
           "max-cudagraph-capture-size": ("--max-cudagraph-capture-size",)}
PINNED_FLAGS = ("--kv-cache-memory-bytes",)
