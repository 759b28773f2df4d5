"""The engines' registry and the one dispatch: each engine (vLLM's blocks, SGLang's token pool,
llama.cpp's cells) is a module with the same members (NAME, TITLE, default_chunk, usable_memory,
estimate_overhead, size, stores, explain and the words the page labels its figures with); this module picks the KV memory (the user's figure
from a log, or the engine's estimate) and calls it. Adding an engine is one module and one line
in REGISTRY."""

from dataclasses import replace
from fractions import Fraction

from ..errors import InputError
from ..sizing import CONTEXT_SEARCH_LIMIT, _largest_fitting, _linear_guess
from ..units import GIB, ceil_div
from .llamacpp import engine as llamacpp
from . import measured
from .sglang import engine as sglang
from .vllm import engine as vllm
from .result import Band, Budget, BudgetSource, EngineResult

REGISTRY = {module.NAME: module for module in (vllm, sglang, llamacpp)}
ENGINES = tuple(REGISTRY)
# What the page's "Size as" starts with and the CLI sizes as when no engine is named (a link
# without an `engine` key keeps meaning the exact ideal): the newest release modelled of it.
DEFAULT = vllm.NAME
ALIASES = {"vllm": "vllm", "sglang": "sglang", "llama.cpp": "llama.cpp", "llamacpp": "llama.cpp",
           "llama-cpp": "llama.cpp", "llama_cpp": "llama.cpp"}

__all__ = ["DEFAULT", "ENGINES", "REGISTRY", "EngineResult", "engine_name", "title", "default_prefill_chunk", "size",
           "answer", "longest_context", "memory_utilization", "native_engine"]


def title(name: str) -> str:
    """The engine's name as it writes it (vLLM, SGLang, llama.cpp)."""
    return REGISTRY[name].TITLE


def native_engine(file_format: str) -> str | None:
    """The engine whose own checkpoint format this is (a GGUF: llama.cpp), or None."""
    return next((name for name, module in REGISTRY.items() if file_format in getattr(module, "FILE_FORMATS", ())),
                None)


def engine_name(text: str) -> str:
    key = str(text).strip().lower()
    name = ALIASES.get(key, key)
    if name not in REGISTRY:
        raise InputError("engine", f"unknown engine {str(text)[:30]!r}; allowed: {', '.join(ENGINES)}")
    return name


def default_prefill_chunk(engine: str, scenario) -> int:
    return REGISTRY[engine].default_chunk(scenario)


def _budget(engine, scenario, result, chunk: int, notes: list) -> Budget:
    """The KV memory per GPU: from a log, or what the engine leaves beside the weights and its overhead."""
    dep, settings = scenario.deployment, scenario.settings
    logged = measured.budget(engine, scenario, result, chunk, notes)
    if logged is not None:
        return logged
    if settings.kv_memory_gib is not None and (settings.measured is None or settings.measured.engine == engine.NAME):
        return Budget(int(settings.kv_memory_gib * GIB), None, None, BudgetSource.GIVEN_KV_MEMORY)
    if result.usable_bytes_per_gpu is None or result.weights_bytes_per_gpu is None:
        # No memory to size in: the estimate is shown where it can be made, and one the model's
        # dimensions cannot support (a custom model without its hidden size) is not needed yet.
        try:
            activation, overhead, band = engine.estimate_overhead(scenario, chunk, []) \
                if not settings.overhead_given else (None, None, None)
        except InputError:
            activation, overhead, band = None, None, None
        return Budget(None, activation, overhead, BudgetSource.NONE, band)
    usable = engine.usable_memory(scenario, chunk, notes, result.usable_bytes_per_gpu)
    if settings.overhead_given:
        return Budget(usable - result.weights_bytes_per_gpu - dep.overhead_bytes, None, dep.overhead_bytes,
                      BudgetSource.GIVEN_OVERHEAD)
    activation, overhead, band = engine.estimate_overhead(scenario, chunk, notes)
    return Budget(usable - result.weights_bytes_per_gpu - overhead, activation, overhead, BudgetSource.ESTIMATE, band)


def _checked(scenario):
    """(the engine's module, its prefill chunk) for these inputs, or the refusal naming the field."""
    settings = scenario.settings
    name = engine_name(settings.engine)
    engine, work = REGISTRY[name], scenario.workload
    if not engine.stores(work.kv_precision):
        raise InputError("kv-dtype", f"{name} cannot store the KV cache as {work.kv_precision.name}")
    if settings.v_precision is not None and not engine.SEPARATE_V:
        raise InputError("kv-dtype-v", f"only llama.cpp stores V in another type than K; {name} uses kv-dtype for both")
    return engine, settings.prefill_chunk or engine.default_chunk(scenario)


def answer(scenario, result) -> EngineResult:
    """The engine's answer alone, one run of its sizing: what `size` gives without the ends of
    its band or of a logged memory's rounding, for the side tables and the charts, which show
    only the answer and ask for it many times an update."""
    engine, chunk = _checked(scenario)
    notes = []
    budget = _budget(engine, scenario, result, chunk, notes)
    return _weighed(engine.size(scenario, chunk, budget, notes), budget)


def _weighed(out: EngineResult, budget: Budget) -> EngineResult:
    return out if budget.weights_bytes_per_gpu is None else replace(out, weights_bytes_per_gpu=budget.weights_bytes_per_gpu)


def size(scenario, result) -> EngineResult:
    settings = scenario.settings
    engine, chunk = _checked(scenario)
    notes = []
    budget = _budget(engine, scenario, result, chunk, notes)
    out = _weighed(engine.size(scenario, chunk, budget, notes), budget)
    spread = None
    memory = settings.kv_memory_gib
    if budget.source is BudgetSource.GIVEN_KV_MEMORY and memory is not None and engine.KV_MEMORY_LOGGED and \
            (memory * 100).denominator == 1:
        # Both ends of what a log's two decimals stand for, as the tests feed real logs (SGLang's
        # K and V sizes are each rounded, so their sum is off by twice as much).
        half = getattr(engine, "KV_MEMORY_HALF_WIDTH", Fraction(1, 200))
        ends = [engine.size(scenario, chunk, replace(budget, kv_bytes_per_gpu=int((memory + d) * GIB)), [])
                for d in (-half, half)]
        if all(e.kv_tokens is not None for e in ends):
            spread = (ends[0].kv_tokens, ends[1].kv_tokens)
    return replace(out, kv_tokens_range=spread, band=out.band or _band(engine, scenario, chunk, budget))


def _band(engine, scenario, chunk: int, budget: Budget):
    """The engine's answer at both ends of its overhead estimate's band: the most overhead the
    calibration allows (least KV memory) first, then the least."""
    if budget.source not in (BudgetSource.ESTIMATE, BudgetSource.MEASURED) or budget.band is None or budget.kv_bytes_per_gpu is None:
        return None
    low, high = budget.band
    ends = []
    for overhead in (high, low):
        kv = budget.kv_bytes_per_gpu + budget.overhead_bytes_per_gpu - overhead
        out = engine.size(scenario, chunk, replace(budget, kv_bytes_per_gpu=kv, overhead_bytes_per_gpu=overhead), [])
        ends.append(Band(overhead, kv, out.starts, out.max_concurrency, out.kv_tokens))
    return tuple(ends)


def memory_utilization(scenario, out: EngineResult) -> Fraction | None:
    """The share of each GPU's memory the engine was sized with: the one given, or the engine's
    own default (vLLM's --gpu-memory-utilization, SGLang's derived mem_fraction_static); an engine
    without a member for it allocates what it is asked for, the utilization given. None where a
    KV memory given or read from a log stands in for it."""
    if out.budget_source is BudgetSource.GIVEN_KV_MEMORY:
        return None
    own = getattr(REGISTRY[out.engine], "memory_utilization", None)
    if own is None:
        return scenario.deployment.memory_utilization
    return own(scenario, out.prefill_chunk)


def longest_context(scenario, out: EngineResult) -> tuple[int | None, str | None]:
    """(the longest context at which the engine holds the batch at once, what limits it), at the
    KV memory it sized for these inputs: what it would take with a longer --max-model-len, no
    further than the model's limit. (None, None) without a KV memory."""
    if out.kv_budget_bytes_per_gpu is None:
        return None, None
    engine, work, model = REGISTRY[out.engine], scenario.workload, scenario.model
    budget = Budget(out.kv_budget_bytes_per_gpu, out.activation_bytes_per_gpu, out.overhead_bytes_per_gpu,
                    out.budget_source)
    need = ceil_div(work.batch, scenario.deployment.dp)     # an engine prints one data-parallel rank's

    def holds(tokens: int) -> bool:
        at = replace(scenario, workload=replace(work, context_tokens=tokens,
                                                prefix_tokens=min(work.prefix_tokens, tokens)))
        try:
            e = engine.size(at, out.prefill_chunk, budget, [])
        except InputError:
            return False
        return bool(e.starts) and e.max_concurrency is not None and e.max_concurrency >= need

    if out.kv_budget_bytes_per_gpu <= 0 or not holds(1):
        return 0, "memory"
    limit = model.max_context_tokens or CONTEXT_SEARCH_LIMIT
    # The exact ideal's answer at this memory is close (blocks and windows move it a little):
    # it only narrows the search, every step of which asks the engine itself.
    guesses = [g for stage, _ in model.stage_groups(scenario.deployment.pp)
               if (g := _linear_guess(stage, work, need, out.kv_budget_bytes_per_gpu, scenario.deployment.tp))]
    largest = _largest_fitting(holds, 1, limit, min(guesses) if guesses else None)
    if largest is not None:
        return largest, "memory"
    return (model.max_context_tokens, "model") if model.max_context_tokens else (None, "none")
