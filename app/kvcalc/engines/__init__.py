"""The engines' registry and the one dispatch: each engine (vLLM's blocks, SGLang's token pool,
llama.cpp's cells) is a module with the members engines/protocol.py writes down (NAME, TITLE,
default_chunk, usable_memory, estimate_overhead, size, stores, explain, launch and the words the
page labels its figures with); this module picks the KV memory (the user's figure from a log, or the
engine's estimate) and calls it. Adding an engine is one folder, engines/<engine>/, and one line
here: `register(module)`.

An engine leaves out an optional member to take its default, which is kept here and only here:
DEFAULTS for data, `member(engine, name)` to read one, and the functions below for the optional
callables (memory_utilization, data_parallel, sharing, the source formula's words). The shared code asks
these, never an engine's name.

Each engine names its start-up log reader (LOG_READER, a module of its folder); `log_readers()`
loads them on the first ask, so the page does not load the log readers at start-up (it loads
them when a log is pasted)."""

import importlib
from dataclasses import replace
from fractions import Fraction

from ..errors import InputError
from ..sizing import CONTEXT_SEARCH_LIMIT, _largest_fitting, _linear_guess
from ..units import GIB, ceil_div
from .llamacpp import engine as llamacpp
from . import measured, releases
from .sglang import engine as sglang
from .vllm import engine as vllm
from .result import Band, Budget, BudgetSource, EngineResult, Sharing

# The default of each optional data member (protocol.py documents each): what an engine that
# leaves the member out gets. Read with member(engine, name); None (the exact ideal) reads these too.
DEFAULTS = {
    "ALIASES": (),                         # no other spelling of NAME
    "FILE_FORMATS": (),                    # no checkpoint format is its own
    "KV_MEMORY_HALF_WIDTH": Fraction(1, 200),   # a logged KV memory printed to 0.01 GiB: +-0.005
    "CHECKS_ENCODER_SPLIT": False,         # it does not refuse a vision tower tp does not divide
    "SPLITS_LAYERS": False,                # it splits the heads over tp (not whole layers over its GPUs)
    "DP_ATTENTION": False,                 # dp > 1 replicates the whole model per rank
    "LOG_FIGURES": (),                     # no figure of its log compared beside ours
    "LOG_READER": None,                    # no start-up log reader
    "FAILURES": None,                      # no reader of its failed starts, no fixes of its own
    "OWN_OPTIONS": (),                     # no option that only it takes
    "LOGGED_WHEN_SET": (),                 # no option its log is known to print whenever set
    "PADS_CELLS_TO": None,                 # it pads no cell count
    "USABLE_BY_GPU": False,                # its usable memory may move with the layout: the planner asks per layout
    "SERVING": None,                       # its serving rules are not written down: serving/ refuses the parts
}

REGISTRY: dict = {}
ENGINES: tuple = ()
ALIASES: dict = {}        # every spelling --engine takes (each NAME and its ALIASES) -> NAME

__all__ = ["DEFAULT", "DEFAULTS", "ENGINES", "REGISTRY", "EngineResult", "engine_name", "title",
           "default_prefill_chunk", "size", "answer", "longest_context", "memory_utilization", "native_engine",
           "register", "unregister", "member", "log_readers", "option_owners", "data_parallel", "sharing"]


def member(engine, name: str):
    """The engine's `name` member, or its default (DEFAULTS) where it leaves an optional one out;
    `engine` None (the exact ideal, no engine's rules) takes every default."""
    if engine is not None and hasattr(engine, name):
        return getattr(engine, name)
    return DEFAULTS[name]


def register(engine) -> None:
    """Make `engine` (a module, or any object with protocol.Engine's members) one of the engines:
    --engine takes its NAME and ALIASES, the log reader reads its log (LOG_READER)."""
    if engine.NAME in REGISTRY:
        raise ValueError(f"an engine named {engine.NAME!r} is registered already")
    taken = [a for a in (engine.NAME, *member(engine, "ALIASES")) if ALIASES.get(a, engine.NAME) != engine.NAME]
    if taken:
        raise ValueError(f"{engine.NAME}'s aliases {taken} name another engine")
    REGISTRY[engine.NAME] = engine
    ALIASES.update({alias: engine.NAME for alias in (engine.NAME, *member(engine, "ALIASES"))})
    _renamed()


def unregister(name: str) -> None:
    """Forget the engine `name` and its aliases (a test's own engine, after the test)."""
    del REGISTRY[name]
    for alias in [a for a, n in ALIASES.items() if n == name]:
        del ALIASES[alias]
    _renamed()


def _renamed() -> None:
    global ENGINES
    ENGINES = tuple(REGISTRY)


register(vllm)
register(sglang)
register(llamacpp)
# What the page's "Size as" starts with and the CLI sizes as when no engine is named (a link
# without an `engine` key keeps meaning the exact ideal): the newest release modelled of it.
DEFAULT = vllm.NAME


def _own_modules(name: str) -> tuple:
    """(engine, its `name` member) for each registered engine that gives one: a module of the
    engine's own folder named by a string is loaded here on the first ask (the page starts
    without them), an object of its own is taken as it is."""
    out = []
    for engine in tuple(REGISTRY.values()):
        found = member(engine, name)
        if isinstance(found, str):
            found = importlib.import_module(f"{engine.__name__.rpartition('.')[0]}.{found}")
        if found is not None:
            out.append((engine, found))
    return tuple(out)


def log_readers() -> tuple:
    """Each registered engine's start-up log reader (protocol.LogReader), in the registry's
    order: its LOG_READER."""
    return tuple(reader for _, reader in _own_modules("LOG_READER"))


def failure_readers() -> tuple:
    """(name, module) of each registered engine's failure reader (engines/<engine>/failures.py:
    RULES, PHASE_MARKS, MARKS, fix_kinds), its FAILURES, loaded as the log readers are."""
    return tuple((engine.NAME, reader) for engine, reader in _own_modules("FAILURES"))


def option_owners() -> dict:
    """Each option only one engine takes (its OWN_OPTIONS) -> that engine's NAME."""
    return {option: name for name, engine in REGISTRY.items() for option in member(engine, "OWN_OPTIONS")}


def data_parallel(engine, moe: bool) -> bool:
    """Whether `engine` (a module, None for the exact ideal) runs data-parallel ranks for a model
    that is (`moe`) or is not a mixture of experts: its data_parallel(moe) where it has one (SGLang's
    DP attention is for mixtures of experts; llama.cpp has no ranks), else yes."""
    own = getattr(engine, "data_parallel", None)
    return True if own is None else own(moe)


# How a server that holds what it needs shares a GPU: the exact ideal's, and an engine's that gives
# no `sharing` of its own. Its port is vLLM's OpenAI server's, as the ideal's launch command is none.
NEEDS = Sharing("needs", 0, 8000, "it holds what it needs on each GPU (its weights, its cache for the requests "
                "and its overhead), so the servers fit together when what they hold adds up to the memory at most")


def sharing(engine, scenario) -> Sharing:
    """How the server `engine` (a module, None for the exact ideal) runs beside servers started
    before it: its sharing(scenario) where it has one, else NEEDS."""
    own = getattr(engine, "sharing", None)
    return NEEDS if own is None else own(scenario)


def title(name: str) -> str:
    """The engine's name as it writes it (vLLM, SGLang, llama.cpp)."""
    return REGISTRY[name].TITLE


def native_engine(file_format: str) -> str | None:
    """The engine whose own checkpoint format this is (a GGUF: llama.cpp), or None."""
    return next((name for name, module in REGISTRY.items() if file_format in member(module, "FILE_FORMATS")),
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
    # An engine that loads less than the checkpoint for these inputs (vLLM's pooling runner drops
    # the lm_head) says so with loaded_weights(scenario, weights) -> (weights, words).
    weights, loaded = result.weights_bytes_per_gpu, getattr(engine, "loaded_weights", None)
    if loaded is not None:
        weights, words = loaded(scenario, weights)
        notes.extend([words] if words else [])
    own = None if weights == result.weights_bytes_per_gpu else weights
    if settings.overhead_given:
        return Budget(usable - weights - dep.overhead_bytes, None, dep.overhead_bytes,
                      BudgetSource.GIVEN_OVERHEAD, weights_bytes_per_gpu=own)
    activation, overhead, band = engine.estimate_overhead(scenario, chunk, notes)
    return Budget(usable - weights - overhead, activation, overhead, BudgetSource.ESTIMATE, band,
                  weights_bytes_per_gpu=own)


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
    spread = concurrencies = None
    memory = settings.kv_memory_gib
    if budget.source is BudgetSource.GIVEN_KV_MEMORY and memory is not None and engine.KV_MEMORY_LOGGED and \
            (memory * 100).denominator == 1:
        # Both ends of what a log's two decimals stand for, as the tests feed real logs (SGLang's
        # K and V sizes are each rounded, so their sum is off by twice as much).
        half = member(engine, "KV_MEMORY_HALF_WIDTH")
        ends = [engine.size(scenario, chunk, replace(budget, kv_bytes_per_gpu=int((memory + d) * GIB)), [])
                for d in (-half, half)]
        if all(e.kv_tokens is not None for e in ends):
            spread = (ends[0].kv_tokens, ends[1].kv_tokens)
            if all(e.max_concurrency is not None for e in ends):
                concurrencies = (ends[0].max_concurrency, ends[1].max_concurrency)
    return replace(out, kv_tokens_range=spread, max_concurrency_range=concurrencies,
                   band=out.band or _band(engine, scenario, chunk, budget))


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
    if out.kv_budget_bytes_per_gpu is None or out.refusal_words:
        return None, None       # no memory, or a refusal no context length lifts (vLLM's Mamba blocks)
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


# The source formula's words for each engine's rules (reports/source_formula.py), asked here so its
# rules stay in the engine's home; an engine without its own words takes these.

def usable_words(scenario, out: EngineResult, usable: int) -> str:
    """What the engine may use of each GPU (`usable` bytes, as its usable_memory gave), in its terms."""
    own = getattr(REGISTRY[out.engine], "usable_words", None)
    if own is not None:
        return own(scenario, out, usable)
    return (f"memory utilization {float(scenario.deployment.memory_utilization):g}: {title(out.engine)} allocates "
            "what it is asked for")


def overhead_words(scenario, out: EngineResult) -> str:
    """What the engine subtracts beside the weights and the cache, in its terms."""
    own = getattr(REGISTRY[out.engine], "overhead_words", None)
    return own(scenario, out) if own is not None else f"{title(out.engine)}'s overhead per GPU, estimated"


def reservation_words(scenario, out: EngineResult) -> str:
    """How the engine reserves one request: its own words, else the first line of its explain."""
    own = getattr(REGISTRY[out.engine], "reservation_words", None)
    return own(scenario, out) if own is not None else REGISTRY[out.engine].explain(scenario, out)[0].rstrip(".")


def count_words(scenario, out: EngineResult) -> str:
    """How the engine turns its pool into the requests it holds."""
    own = getattr(REGISTRY[out.engine], "count_words", None)
    return own(scenario, out) if own is not None else f"{title(out.engine)}'s own counting"


def request_bytes_all_gpus(scenario, out: EngineResult) -> int | None:
    """What one request reserves on all GPUs together by the engine's rules: its figure per GPU
    times the GPUs, unless the engine says otherwise (llama.cpp's figure is already every GPU's);
    None where it gives none."""
    own = getattr(REGISTRY[out.engine], "request_bytes_all_gpus", None)
    if own is not None:
        return own(scenario, out)
    return None if out.kv_bytes_per_request is None else scenario.deployment.gpus * out.kv_bytes_per_request


KV_BASE = "engines.kv_layers base"      # a kept model's memo: the model its layers' dtypes were placed on


def kv_layers(name: str | None, model, kv_precision, skip: tuple, settings):
    """The model with each attention layer's KV dtype as the engine `name` places them (its
    kv_layers rule, for the release in force); the model as it is where the engine has no such
    rule, and a packed format refused without an engine that stores it. Made once per model,
    precision, list and release (the model's memo: the page asks on every update)."""
    engine = REGISTRY.get(name or "")
    own = getattr(engine, "kv_layers", None) if engine is not None else None
    if own is None:
        if kv_precision.packed:
            owners = [n for n, e in REGISTRY.items() if e.stores(kv_precision)]
            raise InputError("kv-dtype", f"{kv_precision.name} is a packed format whose layers the engine places; "
                                         f"choose engine {' or '.join(owners) or 'one that stores it'} to size it")
        return model
    release = releases.in_force(engine, settings)
    key = ("kv_layers", engine.NAME, kv_precision.name, tuple(skip), str(release))
    memo = model.memo
    if key not in memo:
        kept = own(model, kv_precision, skip, release)
        if kept is not model:
            kept.memo[KV_BASE] = model
        memo[key] = kept
    return memo[key]


def at_kv_precision(scenario, precision, **workload):
    """The scenario at another KV precision (a side table's row, a chart's line): its layers' KV dtypes
    placed again by the engine's rule, from the model they were placed on, and the workload's other
    fields as given."""
    model, settings = scenario.model, scenario.settings
    base = model.memo.get(KV_BASE, model)
    if base is model and any(getattr(layer, "kv_dtype", None) for layer in model.layers):
        # A model whose kept layers were placed before others were added (a draft's): not placed again.
        raise InputError("kv-dtype", "this model's layers keep their own KV dtypes; it is sized at the chosen "
                                     "kv-dtype only")
    placed = kv_layers(settings.engine, base, precision, settings.kv_skip_layers, settings)
    return replace(scenario, model=placed, workload=replace(scenario.workload, kv_precision=precision, **workload))
