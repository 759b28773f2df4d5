"""The source's formula beside ours: the textbook arithmetic the seeds' worked figures use, on the
inputs given, and each difference from its answer to ours, named and sized.

The textbook (../shared/seeds): KV bytes per token = 2 x layers x KV heads x head dim x bytes per
element; requests = (total GPU memory - weights - overhead) / (KV per token x context). Its "601 GB
free, 2.5 GB per request, about 240 requests" is reproduced exactly here, then changed one named
difference at a time (memory utilization, weights per GPU, overhead, K and V widths, sliding
windows, fixed state, blocks, replication under tensor parallelism, pipeline stages, a shared
prefix, the chosen engine's own rules) until the count is ours: the exact ideal's, or the chosen
engine's (Evaluation.capacity). Each step says what it changes (free memory, or one request's bytes,
both counted on all GPUs together as the textbook counts them) and how many requests that moves.
Where the textbook formula does not fit the model (MLA, linear-attention or state-space layers,
layers that keep no cache, layers of different shapes) it says so and starts from the model's own
bytes per token instead of printing a wrong textbook figure.

Pure: `source_formula(scenario, result)` gives the steps as exact numbers, `texts(block, unit)` the
words in GiB or GB, `to_json(block)` the export's values.
"""

import math
from dataclasses import dataclass, replace
from fractions import Fraction

from .. import engines
from ..engines.result import BudgetSource
from ..layers import FullAttention, IndexedAttention
from ..precision import Precision
from ..inputs.scenario import Scenario
from ..evaluation import Evaluation
from ..sizing import cache_bytes
from ..units import GB, GIB
from ..words import bytes_each, plural, size


@dataclass(frozen=True)
class Source:
    """The textbook arithmetic on these inputs, exactly. Memory figures are all GPUs together."""
    applies: bool                     # the textbook's per-token formula fits this model
    why_not: str | None               # when it does not, in words
    precision: Precision              # the KV cache's
    layers: int | None                # the textbook's L, H, D (None where it does not apply)
    kv_heads: int | None
    head_dim: int | None
    bytes_per_token: Fraction         # 2 x L x H x D x bytes; the model's own where it does not apply
    context_tokens: int
    bytes_per_request: Fraction
    gpus: int
    memory_bytes: int | None          # every GPU's memory together
    weights_bytes: int | None
    overhead_bytes: int               # every GPU's together: the overhead given, else none
    free_bytes: int | None            # memory - weights - overhead
    requests: int | None              # floor(free / per request), at least 0

    @property
    def requests_exact(self) -> Fraction | None:
        if self.requests is None:
            return None
        return max(Fraction(0), Fraction(self.free_bytes) / self.bytes_per_request)


@dataclass(frozen=True)
class Step:
    """One difference between the source's arithmetic and ours, and where the chain stands after it."""
    key: str                 # units, limit, utilization, kv_memory, weights, overhead, per_token, windows,
                             # state, blocks, replication, stages, prefix, engine_rules, engine_count, rest
    name: str
    side: str                # what it changes: "free" (memory), "request" (one request's bytes), "both",
                             # "count" (the engine's counting) or "none" (a note: the same bytes)
    source: object           # the source's value: bytes (per GPU for the memory steps, per request on all
    ours: object             # GPUs for the request steps), tokens for "limit", requests for "engine_count"
    free_bytes: int          # all GPUs, after this step
    request_bytes: Fraction  # one request on all GPUs, after this step
    requests: int | None     # after this step
    change_bytes: Fraction   # this step's change to free memory ("free") or to one request ("request", "both")
    change_requests: int | None
    why: str                 # in words, without sizes (the columns carry them)

    @property
    def changes(self) -> bool:
        return self.change_bytes != 0 or bool(self.change_requests)


@dataclass(frozen=True)
class SourceFormula:
    source: Source
    steps: tuple[Step, ...]        # the differences in the order they are applied
    same: tuple[str, ...]          # differences considered that change nothing here, by name
    ours: int | None               # our request count: the engine's when one is chosen, else the exact ideal's
    ours_label: str                # "the exact ideal" or "vLLM 0.33.0's rules"
    missing: str | None            # why there is no request count to compare, when there is none


def _count(free, per_request) -> int | None:
    if free is None or not per_request:
        return None
    return max(0, math.floor(Fraction(free) / Fraction(per_request)))


def _textbook(model) -> tuple[tuple[int, int, int] | None, str | None]:
    """(L, H, D) when the textbook's 2 x L x H x D x bytes fits every layer, else why not."""
    layers = model.layers
    why = []
    mla = [layer for layer in layers if layer.kind == "mla"]
    if mla:
        latent = mla[0]
        why.append(f"{_share(len(mla), len(layers))} are MLA: one latent of ({latent.kv_lora_rank} + "
                   f"{latent.rope_dim}) elements per token per layer, no factor 2 and no KV heads (2 x layers x "
                   f"latent x bytes, as a source may write it, doubles the latent and leaves out the RoPE key)")
    state = [layer for layer in layers if layer.kind == "state"]
    if state:
        why.append(f"{_share(len(state), len(layers))} are {state[0].label} (linear attention or state "
                   "space): a fixed state per request, no K and V per token")
    empty = [layer for layer in layers if layer.kind == "none"]
    if empty:
        why.append(f"{_share(len(empty), len(layers))} keep no cache")
    attention = [layer for layer in layers if isinstance(layer, FullAttention)]
    shapes = sorted({(layer.kv_heads, layer.head_dim) for layer in attention})
    if len(shapes) > 1:
        why.append("the layers differ in KV heads x head dim (" + ", ".join(f"{h} x {d}" for h, d in shapes)
                   + "): no single 2 x layers x KV heads x head dim fits them")
    if why:
        return None, "; ".join(why)
    heads, dim = shapes[0]
    return (len(layers), heads, dim), None


def _share(n: int, layers: int) -> str:
    return f"all {layers} layers" if n == layers else f"{n} of the {layers} layers"


def _source(scenario: Scenario, evaluation: Evaluation) -> Source:
    result = evaluation.result
    model, work, dep = scenario.model, scenario.workload, scenario.deployment
    shape, why_not = _textbook(model)
    if shape is None:
        per_token = Fraction(result.kv_bytes_per_token)
        layers = heads = dim = None
    else:
        layers, heads, dim = shape
        per_token = 2 * layers * heads * dim * work.kv_precision.bits_per_element / 8
    per_request = per_token * work.context_tokens
    gpus = dep.gpus
    memory = None if dep.gpu_memory_bytes is None else gpus * dep.gpu_memory_bytes
    overhead = gpus * dep.overhead_bytes
    free = None if memory is None or dep.weights_bytes is None else memory - dep.weights_bytes - overhead
    return Source(shape is not None, why_not, work.kv_precision, layers, heads, dim, per_token, work.context_tokens,
                  per_request, gpus, memory, dep.weights_bytes, overhead, free, _count(free, per_request))


class _Chain:
    """The running state: free memory and one request's bytes on all GPUs, and the count."""

    def __init__(self, free, per_request):
        self.free, self.per_request = free, Fraction(per_request)
        self.requests = _count(free, per_request)
        self.steps, self.same = [], []

    def step(self, key, name, side, source, ours, why, free=None, per_request=None, requests=None,
             considered=True, always=False):
        """Apply one difference. It is listed when it changes something (or `always`, or a note of
        side "none"); one considered that changes nothing is named in `same`."""
        free = self.free if free is None else free
        per_request = self.per_request if per_request is None else Fraction(per_request)
        count = _count(free, per_request) if requests is None else requests
        change = free - self.free if side == "free" else per_request - self.per_request
        moved = None if count is None or self.requests is None else count - self.requests
        made = Step(key, name, side, source, ours, free, per_request, count, Fraction(change), moved, why)
        if made.changes or always or side == "none":
            self.steps.append(made)
        elif considered:
            self.same.append(name)
        self.free, self.per_request, self.requests = free, per_request, count


def source_formula(scenario: Scenario, evaluation: Evaluation) -> SourceFormula:
    """The source's arithmetic on these inputs and the steps from its answer to ours: kept for
    the last inputs, which an update asks for three times (the JSON, the export, the section)."""
    held = _LAST[0]
    if held is not None and held[0] is scenario and held[1] is evaluation:
        return held[2]
    block = _source_formula(scenario, evaluation)
    _LAST[0] = (scenario, evaluation, block)    # the inputs held too, so `is` can never match a stranger
    return block


_LAST = [None]


def _source_formula(scenario: Scenario, evaluation: Evaluation) -> SourceFormula:
    src = _source(scenario, evaluation)
    engine = evaluation.engine
    label = "the exact ideal" if engine is None else _engine_label(scenario, engine) + "'s rules"
    ours = evaluation.capacity
    if src.free_bytes is None:
        return SourceFormula(src, (), (), ours, label, "the source's request count needs the GPU's memory and "
                                                       "the weights' size")
    if ours is None:
        return SourceFormula(src, (), (), ours, label, f"{label} need a GPU and the weights, or the KV memory "
                                                       "from a log")
    chain = _Chain(src.free_bytes, src.bytes_per_request)
    _notes(chain, scenario, src)
    _memory(chain, scenario, evaluation, src)
    _request(chain, scenario, evaluation, src)
    if chain.requests != ours:
        _count_rules(chain, scenario, evaluation, ours)
    return SourceFormula(src, tuple(chain.steps), tuple(chain.same), ours, label, None)


def _engine_label(scenario: Scenario, engine) -> str:
    release = scenario.settings.release
    title = engines.title(engine.engine)
    return title if release is None else f"{title} {release}"


def _notes(chain: _Chain, scenario: Scenario, src: Source) -> None:
    """The notes that change no byte: the source's GB, and a context past the model's limit."""
    mixed = _count(Fraction(src.free_bytes, GB), src.bytes_per_request / GIB)
    # A model whose requests keep no bytes per token (state layers only) has no count to mix up.
    mixing = "" if mixed is None else f" Memory in GB (10^9 B) over each request in GiB would count {mixed:,}"
    chain.step("units", "GiB vs GB", "none", src.bytes_per_request, src.bytes_per_request,
               "the source's \"GB\" are GiB (it divides by 1024^3); both columns here count the same bytes." + mixing)
    model, ctx = scenario.model, scenario.workload.context_tokens
    if model.past_limit(ctx):
        chain.step("limit", "the model's limit", "none", ctx, model.max_context_tokens,
                   f"the model reads at most {model.max_context_tokens:,} positions (max_position_embeddings); "
                   f"the source sizes any context, and these figures are for the {ctx:,} asked, past what the "
                   "model was trained for (engines refuse it unless told to allow it)")


def _memory(chain: _Chain, scenario: Scenario, evaluation: Evaluation, src: Source) -> None:
    """Utilization, the weights on the most loaded GPU and the overhead, on every GPU together."""
    result = evaluation.result
    dep, engine, gpus = scenario.deployment, evaluation.engine, src.gpus
    memory = dep.gpu_memory_bytes
    if engine is not None and engine.budget_source is BudgetSource.GIVEN_KV_MEMORY:
        chain.step("kv_memory", "KV memory from your log", "free", Fraction(src.free_bytes, gpus),
                   engine.kv_budget_bytes_per_gpu, "the KV memory per GPU your engine's log printed, in place of "
                   "utilization, weights and overhead", free=gpus * engine.kv_budget_bytes_per_gpu)
        return
    if engine is None:
        usable, overhead, why_usable = result.usable_bytes_per_gpu, dep.overhead_bytes, \
            f"memory utilization {float(dep.memory_utilization):g}: the share of each GPU's memory the engine may use"
    else:
        rules = engines.REGISTRY[engine.engine]
        usable = rules.usable_memory(scenario, engine.prefill_chunk, [], result.usable_bytes_per_gpu)
        overhead = engine.overhead_bytes_per_gpu or 0
        why_usable = engines.usable_words(scenario, engine, usable)
    chain.step("utilization", "memory utilization", "free", memory, usable, why_usable,
               free=chain.free - gpus * (memory - usable))
    weights = result.weights_bytes_per_gpu if engine is None else usable - overhead - engine.kv_budget_bytes_per_gpu
    why = "the most loaded GPU's share of the weights (the source spreads them evenly)"
    if engine is not None and weights != result.weights_bytes_per_gpu:
        why = f"the weights {engines.title(engine.engine)} keeps on the most loaded GPU " + \
            ("(some stay on the CPU)" if weights < result.weights_bytes_per_gpu else
             "(its load counts more than the checkpoint's tensors: caches, padding, modules held whole)")
    chain.step("weights", "weights per GPU", "free", Fraction(dep.weights_bytes, gpus), weights, why,
               free=chain.free - (gpus * weights - dep.weights_bytes))
    chain.step("overhead", "overhead", "free", dep.overhead_bytes, overhead, _overhead_words(scenario, engine),
               free=chain.free - gpus * (overhead - dep.overhead_bytes), always=True)


def _overhead_words(scenario: Scenario, engine) -> str:
    if scenario.settings.overhead_given:
        return "yours, per GPU, in both: activations, CUDA graphs and the runtime"
    if engine is None:
        return ("none given, so none in either: a real engine takes a few GiB per GPU for activations, CUDA "
                "graphs and its runtime (set an overhead, or size as an engine for its estimate)")
    return engines.overhead_words(scenario, engine)


def _request(chain: _Chain, scenario: Scenario, evaluation: Evaluation, src: Source) -> None:
    """One request's bytes on all GPUs, from the textbook's to the engine's (or the exact ideal's)."""
    result = evaluation.result
    model, work, dep, engine = scenario.model, scenario.workload, scenario.deployment, evaluation.engine
    ctx, tp, gpus = work.context_tokens, dep.tp, dep.gpus
    everything = model.layer_counts()
    plain = replace(work, block_size_tokens=1, prefix_tokens=0)
    if src.applies:
        own = result.kv_bytes_per_token
        chain.step("per_token", "bytes per token", "request", src.bytes_per_token, Fraction(own),
                   _per_token_words(model, work), per_request=own * ctx)
    state = sum(count * layer.state_bytes(work.state_precision) for layer, count in everything.items())
    tokens = cache_bytes(everything, ctx, plain)[1] - state
    windowed = _window_words(model, ctx)
    chain.step("windows", "sliding windows", "request", chain.per_request, tokens,
               windowed or "no layer keeps only a window", per_request=tokens, considered=bool(windowed))
    if state:
        kinds = sorted({layer.label for layer in everything if layer.kind == "state"})
        n = sum(count for layer, count in everything.items() if layer.kind == "state")
        chain.step("state", "fixed state", "request", 0, state,
                   f"{n} {', '.join(kinds)} layers keep a fixed state per request, whatever the context",
                   per_request=tokens + state)
    block = work.block_size_tokens if engine is None else engine.block_size
    blocked = replace(work, block_size_tokens=block, prefix_tokens=0)
    rounded = cache_bytes(everything, ctx, blocked)[1]
    pads = None if engine is None else engines.member(engines.REGISTRY[engine.engine], "PADS_CELLS_TO")
    chain.step("blocks", "blocks", "request", chain.per_request, rounded,
               f"each layer rounds the tokens it holds up to whole blocks of {block:,}"
               + (f" ({engines.title(engine.engine)} pads its cells to {pads:,})" if pads else ""),
               per_request=rounded, considered=block > 1)
    replicated = tp * cache_bytes(everything, ctx, blocked, tp)[1]
    chain.step("replication", "replication", "request", chain.per_request, replicated,
               _replication_words(model, tp) or f"tp {tp} splits the cache evenly", per_request=replicated,
               considered=tp > 1)
    stage, stage_layers = _limiting_stage(scenario, evaluation, blocked)
    staged = gpus * cache_bytes(stage, ctx, blocked, tp)[1]
    chain.step("stages", "pipeline stages", "request", chain.per_request, staged,
               f"the most loaded of the {dep.pp} pipeline stages holds {stage_layers} of the {len(model.layers)} "
               "layers, and every GPU is sized as it is", per_request=staged, considered=dep.pp > 1)
    if engine is None and work.prefix_tokens:
        shared, private = cache_bytes(stage, ctx, work, tp)
        chain.step("prefix", "shared prefix", "both", chain.per_request, gpus * private,
                   f"the first {work.prefix_tokens:,} tokens every request shares are stored once per GPU (whole "
                   "blocks only): less per request, that much less free", free=chain.free - gpus * shared,
                   per_request=gpus * private)
    if engine is not None:
        reserved = _engine_request_bytes(scenario, engine)
        if reserved is not None:
            chain.step("engine_rules", f"{engines.title(engine.engine)}'s reservation", "request",
                       chain.per_request, reserved, engines.reservation_words(scenario, engine), per_request=reserved)


def _per_token_words(model, work) -> str:
    why = []
    if any(layer.v_head_dim not in (None, layer.head_dim) for layer in model.layers):
        why.append("V is not as wide as K: K + V, not 2 x head dim")
    if any(isinstance(layer, IndexedAttention) for layer in model.layers):
        why.append("sparse-attention index keys, one per token in their layers")
    kv = work.kv_precision
    kept = [layer for layer in model.layers if getattr(layer, "kv_dtype", None)]
    if kept:
        why.append(f"{len(kept)} of the {len(model.layers)} layers keep their cache in {kept[0].kv_dtype}, not "
                   f"{kv.name}")
    sample = next((layer for layer in model.layers if isinstance(layer, FullAttention)), None)
    if kv.packed and sample is not None:
        why.append(f"{kv.name} packs each head's K and V into one slot ({kv.kv_head_words(sample.head_dim, sample.v_head_dim or sample.head_dim)}), "
                   f"not {float(kv.bits_per_element):g} bits an element")
    elif kv.bits_per_element % 8:
        why.append(f"{bytes_each(kv)} per element, each row rounded up to whole bytes")
    return "; ".join(why) or "the same formula"


def _window_words(model, ctx: int) -> str:
    groups = {}
    for layer in model.layers:
        if layer.kind in ("sliding", "chunked") and layer.window < ctx:
            groups[(layer.kind, layer.window)] = groups.get((layer.kind, layer.window), 0) + 1
    words = [f"{n} of the {len(model.layers)} layers keep only the last {window:,} tokens" if kind == "sliding" else
             f"{n} of the {len(model.layers)} layers attend within chunks of {window:,} tokens"
             for (kind, window), n in sorted(groups.items())]
    return "; ".join(words)


def _replication_words(model, tp: int) -> str:
    words = []
    heads = sorted({layer.kv_heads for layer in model.layers if isinstance(layer, FullAttention)
                    and layer.kv_heads < tp})
    for h in heads:
        words.append(f"tp {tp} is more than the {h} KV heads: each GPU keeps one whole head, {tp // h} copies of each")
    if any(layer.kind == "mla" for layer in model.layers):
        words.append(f"the MLA latent is kept whole on each of the {tp} GPUs")
    if any(isinstance(layer, IndexedAttention) for layer in model.layers):
        words.append("index keys are kept whole on every GPU")
    return "; ".join(words)


def _limiting_stage(scenario: Scenario, evaluation: Evaluation, blocked):
    """The pipeline stage that limits the count (its layers, and how many), as the ideal finds it."""
    result = evaluation.result
    model, work, dep = scenario.model, scenario.workload, scenario.deployment
    best = None
    budget = result.kv_budget_bytes_per_gpu
    for stage, _ in model.stage_groups(dep.pp):
        shared, private = cache_bytes(stage, work.context_tokens, replace(blocked, prefix_tokens=work.prefix_tokens),
                                      dep.tp)
        if not private:
            continue
        key = Fraction(budget - shared, private) if evaluation.engine is None and budget is not None else -private
        if best is None or key < best[0]:
            best = (key, stage)
    stage = best[1] if best else model.layer_counts()
    return stage, sum(stage.values())


def _engine_request_bytes(scenario: Scenario, engine) -> int | None:
    """What one request reserves on all GPUs by the engine's rules, where it says per GPU."""
    return engines.request_bytes_all_gpus(scenario, engine)


def _count_rules(chain: _Chain, scenario: Scenario, evaluation: Evaluation, ours: int) -> None:
    """The engine's own counting, from the bytes to the requests it holds."""
    engine = evaluation.engine
    if engine is None:
        chain.step("rest", "the exact ideal's stages", "count", chain.requests, ours,
                   "the stage that limits the count", requests=ours)
        return
    name = engines.title(engine.engine)
    chain.step("engine_count", f"{name}'s count", "count", chain.requests, ours, engines.count_words(scenario, engine),
               requests=ours)


# Words -----------------------------------------------------------------------------------------

def _signed(n, unit: str) -> str:
    if n == 0:
        return "0 B"
    text = size(int(n) if Fraction(n).denominator == 1 else round(n), unit)
    return text if n < 0 else "+" + text


def _moved(n: int | None) -> str:
    if n is None:
        return "n/a"
    if n == 0:
        return "no change"
    return f"{n:+,} request" + ("" if abs(n) == 1 else "s")


def _bytes(n, unit: str) -> str:
    return size(int(n) if Fraction(n).denominator == 1 else round(n), unit)


def source_lines(block: SourceFormula, unit: str = "gib") -> list[str]:
    """The source's arithmetic written out, as it writes it, with these inputs."""
    src = block.source
    lines = []
    if src.applies:
        lines.append(f"KV per token = 2 x {src.layers} layers x {src.kv_heads} KV heads x {src.head_dim} head dim x "
                     f"{bytes_each(src.precision)} ({src.precision.name}) = {_exact(src.bytes_per_token)} B")
    else:
        lines.append(f"The textbook's KV per token (2 x layers x KV heads x head dim x bytes) does not apply: "
                     f"{src.why_not}. The source's arithmetic below uses this model's own "
                     f"{_exact(src.bytes_per_token)} B per token (the arithmetic above)")
    lines.append(f"Per request = {_exact(src.bytes_per_token)} B x {src.context_tokens:,} tokens = "
                 f"{_bytes(src.bytes_per_request, unit)}")
    if src.free_bytes is None:
        lines.append("Requests: " + block.missing)
        return lines
    gpu = src.memory_bytes // src.gpus
    memory = _bytes(gpu, unit) if src.gpus == 1 else f"{src.gpus} x {_bytes(gpu, unit)}"
    lines.append(f"Free = {memory} - weights {_bytes(src.weights_bytes, unit)} - overhead "
                 f"{_bytes(src.overhead_bytes, unit)} = {_bytes(src.free_bytes, unit)}")
    if src.requests is None:
        lines.append("Requests: no count, as nothing is kept per token")
    elif src.free_bytes <= 0:
        lines.append("Requests = 0: the weights and overhead take all of the memory")
    else:
        lines.append(f"Requests = {_bytes(src.free_bytes, unit)} / {_bytes(src.bytes_per_request, unit)} = "
                     f"{float(src.requests_exact):,.1f} -> about {src.requests:,}")
    return lines


def _exact(n: Fraction) -> str:
    n = Fraction(n)
    return f"{n.numerator:,}" if n.denominator == 1 else f"{float(n):,.1f}"


def _value(step: Step, ours: bool, unit: str, gpus: int) -> str:
    """The source's value of a step (ours=False) or ours, in words."""
    value = step.ours if ours else step.source
    if step.key == "units":
        return (f"{size(round(value), 'gib')} = {size(round(value), 'gb')} per request" if ours else
                f"{float(value / GIB):,.2f} \"GB\" per request")
    if step.key == "limit":
        return plural(value, "token")
    if step.side == "count":
        return plural(value, "request")
    if step.side == "free":
        return _bytes(value, unit) + " per GPU"
    where = " on all GPUs" if gpus > 1 and step.key in ("replication", "stages", "prefix", "engine_rules") else ""
    return _bytes(value, unit) + " per request" + where


def _effect(step: Step, unit: str, gpus: int) -> str:
    moved = _moved(step.change_requests)
    if step.side == "none" or step.side == "count":
        return moved
    where = " per request" if step.side != "free" else f" on {gpus} GPUs" if gpus > 1 else ""
    return f"{_signed(step.change_bytes, unit)}{where}, {moved}"


def texts(block: SourceFormula, unit: str = "gib") -> dict:
    """The block's words in GiB or GB: the source's lines, one row per difference (name, the
    source's value, ours with why, the effect, the count after it), the steps in one line each,
    and a summary of the chain."""
    src, gpus = block.source, block.source.gpus
    rows = []
    if src.requests is not None and block.ours is not None:
        rows.append(_row("source-answer", "The source's answer", f"({_bytes(src.memory_bytes, unit)} - "
                         f"{_bytes(src.weights_bytes, unit)} - {_bytes(src.overhead_bytes, unit)}) / "
                         f"{_bytes(src.bytes_per_request, unit)} per request", "", "", src.requests))
        for step in block.steps:
            rows.append(_row(f"source-{step.key}", _capital(step.name),
                             _value(step, False, unit, gpus), f"{_value(step, True, unit, gpus)}: {step.why}",
                             _effect(step, unit, gpus), step.requests))
        rows.append(_row("source-ours", f"Here ({block.ours_label})", "", "", "", block.ours))
    lines = [f"{step.name}: {_value(step, False, unit, gpus)} -> {_value(step, True, unit, gpus)}: "
             f"{_effect(step, unit, gpus)} ({step.why})" for step in block.steps]
    if block.missing:
        summary = block.missing[0].upper() + block.missing[1:] + "."
    elif src.requests is None:
        summary = (f"The source's arithmetic gives no count: this model keeps no cache per token; here "
                   f"{block.ours:,} ({block.ours_label}).")
    else:
        moves = [f"{step.name} {step.change_requests:+,}" for step in block.steps if step.change_requests]
        summary = (f"The source's arithmetic: {plural(src.requests, 'request')}; here {block.ours:,} "
                   f"({block.ours_label})" + (": " + ", ".join(moves) if moves else ": the same") + ".")
    return {"formula": source_lines(block, unit), "rows": rows, "lines": lines, "summary": summary,
            "same": "Considered, the same in both: " + ", ".join(block.same) + "." if block.same else ""}


def _capital(name: str) -> str:
    """A step's name to start a row; engine names keep their own case (vLLM, llama.cpp)."""
    return name if name.startswith(tuple(engines.title(e) for e in engines.ENGINES)) else name[0].upper() + name[1:]


def _row(key: str, name: str, source: str, here: str, effect: str, requests: int | None) -> dict:
    return {"key": key, "name": name, "source": source, "here": here, "effect": effect,
            "requests": "n/a" if requests is None else plural(requests, "request"),
            "requests_value": "" if requests is None else str(requests)}


def json_of(scenario: Scenario, evaluation: Evaluation) -> dict:
    """The export's "source_formula" value for these inputs."""
    return to_json(source_formula(scenario, evaluation))


def to_json(block: SourceFormula) -> dict:
    """The block's exact values for the JSON export (bytes as integers; a fractional byte count,
    from a sub-byte precision, as a float)."""
    src = block.source
    return {
        "applies": src.applies, "why_not": src.why_not,
        "source": {"kv_dtype": src.precision.name, "layers": src.layers, "kv_heads": src.kv_heads,
                   "head_dim": src.head_dim,
                   "bytes_per_token": _plain(src.bytes_per_token), "bytes_per_request": _plain(src.bytes_per_request),
                   "memory_bytes": src.memory_bytes, "weights_bytes": src.weights_bytes,
                   "overhead_bytes": src.overhead_bytes, "free_bytes": src.free_bytes, "requests": src.requests},
        "steps": [{"key": s.key, "name": s.name, "side": s.side, "source": _plain(s.source), "ours": _plain(s.ours),
                   "change_bytes": _plain(s.change_bytes), "change_requests": s.change_requests,
                   "requests": s.requests, "why": s.why} for s in block.steps],
        "same": list(block.same), "requests": block.ours, "ours": block.ours_label, "missing": block.missing,
    }


def _plain(value):
    if isinstance(value, Fraction):
        return value.numerator if value.denominator == 1 else float(value)
    return value
