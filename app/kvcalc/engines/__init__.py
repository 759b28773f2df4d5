"""Sizing the way one serving engine allocates: vLLM's blocks, SGLang's token pool, llama.cpp's
cells. Each engine's rules live in its own module with their sources; this module picks the KV
memory (the user's figure from a log, or an estimate), calls the engine, and says what it
would print at start-up."""

from dataclasses import dataclass, replace
from fractions import Fraction

from ..errors import InputError
from ..precision import precision
from ..units import GIB
from . import llamacpp, sglang, vllm

ENGINES = ("vllm", "sglang", "llama.cpp")
TITLES = {"vllm": "vLLM", "sglang": "SGLang", "llama.cpp": "llama.cpp"}     # as each engine writes its name
# vllm/config/cache.py gpu_memory_utilization: 0.92 in current releases (the `vllm serve` docs:
# "If unspecified, will use the default value of 0.92"); 0.9 before.
VLLM_DEFAULT_UTILIZATION = Fraction(92, 100)
ALIASES = {"vllm": "vllm", "sglang": "sglang", "llama.cpp": "llama.cpp", "llamacpp": "llama.cpp",
           "llama-cpp": "llama.cpp", "llama_cpp": "llama.cpp"}

# vLLM's start-up overhead, an estimate: the activation peak of its profiling run grows with
# the prefill chunk and the model's width; non-torch memory (CUDA context, NCCL buffers) grows
# with tensor parallelism. Calibrated on published H100 runs at max_num_batched_tokens 8192
# (llm-d's vLLM memory notes: peaks of 4.8 GiB for Llama-3.1-8B, hidden 4096; 5.6 GiB for
# Qwen3-32B, hidden 5120; non-torch 0.13 GiB at tp 1, 0.55 GiB at tp 2) and the gpt-oss-120b
# log in tests/fixtures/logs (7.4 GiB over weights at 0.9 of an H100). Per token of the chunk
# and unit of hidden size: 150 bytes. It lands within 0.3 GiB of the two dense peaks and 4 GiB
# under gpt-oss-120b's (a 201K vocabulary and MoE buffers), so it is said to be an estimate.
ACTIVATION_BYTES_PER_TOKEN_PER_HIDDEN = 150
ACTIVATION_ERROR = "within about 0.5 GiB for dense models, up to 4 GiB low for large-vocabulary MoE models"
NON_TORCH_BYTES, NON_TORCH_BYTES_TP = 140 << 20, 560 << 20


def engine_name(text: str) -> str:
    key = str(text).strip().lower()
    if key not in ALIASES:
        raise InputError("engine", f"unknown engine {str(text)[:30]!r}; allowed: {', '.join(ENGINES)}")
    return ALIASES[key]


@dataclass(frozen=True)
class EngineResult:
    engine: str
    block_size: int                    # vLLM's block, SGLang's page, llama.cpp's cell padding
    prefill_chunk: int
    kv_budget_bytes_per_gpu: int | None
    kv_bytes_per_request: int | None   # what the engine reserves for one request at the context
    kv_tokens: int | None              # vLLM "GPU KV cache size", SGLang "#tokens", llama.cpp cells
    max_concurrency: Fraction | None   # unrounded, as vLLM prints it
    starts: bool | None
    max_model_len: int | None          # longest context one request can have
    refusal: str | None
    activation_bytes_per_gpu: int | None
    overhead_bytes_per_gpu: int | None
    budget_source: str                 # "kv-memory-gib", "overhead-gib", "estimate" or "none"
    log: tuple[str, ...]
    notes: tuple[str, ...]
    ideal_max_concurrency: int | None = None   # the exact ideal's, for saying how they differ
    # A KV memory read from a log is rounded to 0.01 GiB: the token counts that rounding allows.
    kv_tokens_range: tuple[int, int] | None = None


def default_prefill_chunk(engine: str, deployment) -> int:
    if engine == "vllm":
        return vllm.default_prefill_chunk(deployment.gpu_memory_bytes, deployment.gpu_name)
    if engine == "sglang":
        return sglang.defaults(deployment.gpu_memory_bytes, deployment.tp, deployment.pp)[0]
    return llamacpp.DEFAULT_UBATCH


def estimate_overhead(engine: str, model, tp: int, prefill_chunk: int) -> tuple[int | None, int]:
    """(activation peak, everything subtracted besides weights) per GPU, estimated."""
    if engine != "vllm":                       # SGLang's activations live in what mem_fraction_static leaves
        return None, 0
    # CUDA graphs are captured after the KV cache is allocated and are not subtracted by default
    # (VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=0 in vllm/envs.py), so they are not here either.
    hidden = model.hidden_size
    if not hidden:
        raise InputError("overhead-gib", "vLLM's start-up overhead is estimated from the model's hidden size, "
                                         "which this model does not give; give hidden-size, or set overhead-gib "
                                         "or kv-memory-gib")
    activation = prefill_chunk * hidden * ACTIVATION_BYTES_PER_TOKEN_PER_HIDDEN
    return activation, activation + (NON_TORCH_BYTES if tp == 1 else NON_TORCH_BYTES_TP)


def _usable_memory(engine: str, dep, values: dict, chunk: int, notes: list, ideal_usable: int) -> int:
    """The memory per GPU an engine lets weights and its cache take, decided once per engine."""
    if engine == "llama.cpp":
        return ideal_usable             # it allocates what it is asked for, within the GPU's memory
    # vLLM and SGLang multiply the total PyTorch reports, a few hundred MiB under nvidia-smi's.
    memory = dep.torch_memory_bytes or dep.gpu_memory_bytes
    if dep.torch_memory_bytes is None and "gpu-memory-gib" not in values:
        notes.append("This GPU's total as PyTorch reports it is not on record: its nvidia-smi total is used, "
                     "a few hundred MiB high.")
    given = "memory-utilization" in values
    if engine == "vllm":
        if not given:
            notes.append("vLLM's current default --gpu-memory-utilization 0.92 is used (0.9 in older releases; "
                         "set a memory utilization to change it).")
        return int(memory * (dep.memory_utilization if given else VLLM_DEFAULT_UTILIZATION))
    memory -= sglang.CONTEXT_BYTES       # SGLang starts from what is free after its CUDA context
    _, _, fraction = sglang.defaults(memory, dep.tp, dep.pp, chunk)
    if given:
        notes.append(f"Your memory utilization {float(dep.memory_utilization):g} is SGLang's "
                     f"--mem-fraction-static; its own default here would be {float(fraction):.3g}.")
        return int(memory * dep.memory_utilization)
    notes.append(f"SGLang derives mem_fraction_static {float(fraction):.3g} from the GPU's memory, the "
                 "prefill chunk and parallelism (server_args.py).")
    return int(memory * fraction)


def size(scenario, result, values: dict) -> EngineResult:
    engine = engine_name(values["engine"])
    model, work, dep = scenario.model, scenario.workload, scenario.deployment
    if engine not in work.kv_precision.engines:
        raise InputError("kv-dtype", f"{engine} cannot store the KV cache as {work.kv_precision.name}")
    if "kv-dtype-v" in values and engine != "llama.cpp":
        raise InputError("kv-dtype-v", f"only llama.cpp stores V in another type than K; {engine} uses kv-dtype for both")
    chunk = values.get("prefill-chunk") or default_prefill_chunk(engine, dep)
    notes = []
    activation = overhead = None
    source = "none"
    budget = None
    if "kv-memory-gib" in values:
        budget = int(values["kv-memory-gib"] * GIB)
        source = "kv-memory-gib"
    elif result.usable_bytes_per_gpu is not None and result.weights_bytes_per_gpu is not None:
        usable = _usable_memory(engine, dep, values, chunk, notes, result.usable_bytes_per_gpu)
        if "overhead-gib" in values and values["overhead-gib"] > 0:
            overhead = dep.overhead_bytes
            source = "overhead-gib"
        else:
            activation, overhead = estimate_overhead(engine, model, dep.tp, chunk)
            source = "estimate"
            if engine == "vllm":
                notes.append(f"The overhead is an estimate ({ACTIVATION_ERROR}): paste "
                             "\"Available KV cache memory\" from your log as kv-memory-gib for exact figures")
        budget = usable - result.weights_bytes_per_gpu - overhead
    sizing = {"vllm": _vllm, "sglang": _sglang, "llama.cpp": _llamacpp}[engine]
    out = sizing(scenario, values, chunk, budget, activation, overhead, source, notes)
    spread = None
    memory = values.get("kv-memory-gib")
    if memory is not None and engine != "llama.cpp" and (memory * 100).denominator == 1:
        # Both ends of what a log's two decimals stand for, as the tests feed real logs.
        ends = [sizing(scenario, values, chunk, int((memory + d) * GIB), None, None, source, [])
                for d in (Fraction(-1, 200), Fraction(1, 200))]
        if all(e.kv_tokens is not None for e in ends):
            spread = (ends[0].kv_tokens, ends[1].kv_tokens)
    return replace(out, ideal_max_concurrency=result.max_concurrency, kv_tokens_range=spread)


def _vllm(scenario, values, chunk, budget, activation, overhead, source, notes) -> EngineResult:
    model, work, dep = scenario.model, scenario.workload, scenario.deployment
    block, why = vllm.block_size_for(model, dep.gpu_name, values.get("block-size"))
    if why:
        notes.append(why)
    if budget is None:
        return EngineResult("vllm", block, chunk, None, None, None, None, None, None, None, activation, overhead,
                            source, (), tuple(notes + ["Give a GPU and the weights, or the KV memory from a log, for vLLM's figures."]))
    pool, refusal, longest, config_lines = vllm.allocate(model, work.kv_precision, dep.tp, dep.pp, work.context_tokens,
                                                         chunk, block, budget, work.state_precision)
    log = vllm.log_lines(pool, refusal, budget, work.context_tokens, config_lines)
    return EngineResult(
        "vllm", block if pool is None else pool.block_size, chunk, budget, None if pool is None else pool.bytes_per_request,
        None if pool is None else pool.kv_tokens, None if pool is None else pool.max_concurrency,
        pool is not None, work.context_tokens if pool is not None else longest, refusal,
        activation, overhead, source, tuple(log), tuple(notes))


def _sglang(scenario, values, chunk, budget, activation, overhead, source, notes) -> EngineResult:
    model, work, dep = scenario.model, scenario.workload, scenario.deployment
    page = values.get("block-size") or 1
    if budget is None:
        return EngineResult("sglang", page, chunk, None, None, None, None, None, None, None, activation, overhead,
                            source, (), tuple(notes + ["Give a GPU and the weights, or the KV memory from a log, for SGLang's figures."]))
    pool = sglang.allocate(model, work.kv_precision, dep.tp, dep.pp, work.context_tokens, budget, page)
    starts = pool.kv_tokens > 0
    refusal = None if starts else ("RuntimeError: Not enough memory. Please try to increase --mem-fraction-static.")
    # One request may use the whole full-attention pool.
    return EngineResult("sglang", page, chunk, budget, pool.bytes_per_request, pool.kv_tokens, pool.max_concurrency,
                        starts, pool.kv_tokens, refusal, activation, overhead, source,
                        tuple(sglang.log_lines(pool) + ([refusal] if refusal else [])), tuple(notes))


def _llamacpp(scenario, values, chunk, budget, activation, overhead, source, notes) -> EngineResult:
    model, work, dep = scenario.model, scenario.workload, scenario.deployment
    v_precision = precision(values["kv-dtype-v"], field="kv-dtype-v") if "kv-dtype-v" in values else work.kv_precision
    pool = llamacpp.allocate(model, work.kv_precision, v_precision, work.context_tokens, work.batch, ubatch=chunk)
    on_gpu = llamacpp.bytes_on_busiest_gpu(model, pool, dep.gpus)
    compute = llamacpp.compute_buffer_bytes(model, pool, chunk)
    extra_log = []
    if compute is None:
        notes.append("llama.cpp's compute buffer (a few hundred MiB) is not counted: this model does not give "
                     "its vocabulary size and hidden size.")
    else:
        extra_log.append(llamacpp.compute_buffer_line(compute) + f"   (estimated, {llamacpp.COMPUTE_BUFFER_ERROR})")
        if budget is not None and source != "overhead-gib":
            budget -= compute
            activation = overhead = compute
        notes.append(f"llama.cpp's compute buffer, estimated at {compute / llamacpp.MIB:,.0f} MiB "
                     f"({llamacpp.COMPUTE_BUFFER_ERROR}) for -ub {chunk:,} with flash attention, comes out of the "
                     "memory beside the weights.")
    starts = None if budget is None else on_gpu <= budget
    if dep.gpus > 1:
        notes.append(f"llama.cpp splits layers over the {dep.gpus} GPUs; the busiest holds "
                     f"{on_gpu / GIB:.2f} GiB of the cache.")
    refusal = None
    if starts is False:
        refusal = "the KV cache does not fit beside the weights: llama.cpp fails to allocate its buffers"
    per_seq = pool.bytes_total // pool.seqs
    return EngineResult("llama.cpp", llamacpp.PAD, chunk, budget, per_seq, pool.kv_tokens, pool.max_concurrency,
                        starts, pool.max_context_per_seq, refusal, activation, overhead, source,
                        tuple(llamacpp.log_lines(pool) + extra_log + ([refusal] if refusal else [])), tuple(notes))
