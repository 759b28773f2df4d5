"""What do I need? The inverse of the single view: for each GPU type, the deployments that serve
the workload as the chosen engine sizes them, smallest first.

Every row is evaluation.evaluate of the inputs with the deployment filled in (the function the
single view, the CLI and the link call): the planner chooses the GPU, the count, the layout and
the precisions, never a figure. What is searched, and how:
- GPU counts: 1, 2, 4 and 8 on a node, then whole nodes of 8, up to plan-max-gpus; a machine
  whose memory the CPU shares (Apple, DGX Spark) is one device.
- Layouts at a count, in the order people deploy them: tensor parallel within the node (the
  widest the model's heads divide) with pipeline stages across the rest; then data-parallel ranks
  (with the experts placed whole, expert parallel, for a mixture of experts); then narrower tensor
  parallel with more stages (an MLA latent is copied on every tensor-parallel GPU, so stages can
  hold more of it). Never more stages than layers. llama.cpp has neither tensor nor data
  parallelism: it splits the layers over its GPUs (tp 1, pp the count). SGLang's data-parallel
  ranks are DP attention, which it runs for a mixture of experts. The first that fits is the row;
  over several precisions allowed, the fewest GPUs (at a tie, the precisions in the order asked).
- Two lower bounds skip what cannot fit, without the engine's rules. Every layout stores each
  weight at least once and each request's cache at least once, and every engine only adds
  (blocks, pages, padding, a prefix copied per rank, its overhead): so a count whose GPUs'
  memory together is less than the exact ideal's weights plus every request's KV cache is
  skipped (_need), and a layout whose busiest GPU, as the exact ideal fills it, needs more than
  the GPU's room is screened out (_screen_bytes, _room). Neither depends on anything but bytes the
  engines are known to hold at least; tests/planning/test_plan.py checks both against full evaluations over
  every preset, and the search against the exhaustive table.
- A probe asks only whether a deployment fits: the exact ideal and the engine's answer
  (engines.answer, without the ends of its overhead band, which change the verdict's words,
  never whether it fits), no time bounds and no longest-context search; the row is then the
  deployment's full evaluation. What depends on no GPU (the model, its layouts, each layout's
  bytes on its busiest GPU) is worked out once for every GPU type.
- With a request rate, each deployment's concurrency is Little's law on its own time bounds,
  N = rate x (TTFT + output tokens x decode step at N), iterated from N = 1 (the step grows with N,
  so the iteration rises to the least fixed point, or past what fits: the rate is more than it
  serves); a lower bound, as queueing and scheduling only add.
- Limits a row names: weights, kv, context (the model's own limit), layout (a tp, pp, dp or ep the
  engine or model refuses, with the refusal's own words), hybrid (an engine that refuses the
  model's hybrid state pages), engine (another refusal of its), rate, unknown, or the field of any
  other refusal.
Pure: values in, rows out.
"""

from dataclasses import dataclass, field, replace
from fractions import Fraction

from .. import engines
from ..readers import gpu_presets
from ..errors import InputError
from ..evaluation import Evaluation, begin, carry_on, evaluate, refused, searched
from ..inputs.options import OPTION_BY_NAME, parse_options
from .. import parallel
from ..parallel import is_moe
from ..inputs.scenario import MEASURED_INPUTS, build_scenario
from ..reports.verdict import verdict

NODE_GPUS = 8
DEFAULT_MAX_GPUS = int(OPTION_BY_NAME["plan-max-gpus"].default)
# Inputs of one deployment, which the plan chooses or which were measured on one: dropped.
DEPLOYMENT_INPUTS = ("gpu", "gpus", "tp", "pp", "dp", "ep", "gpu-memory-gib", "kv-memory-gib", "measured-with",
                     *MEASURED_INPUTS)
_CHOSEN = ("gpu", "gpus", "tp", "pp", "dp", "ep")        # what every row sets anew
PLAN_INPUTS = ("rate", "output-tokens", "plan-gpus", "plan-max-gpus", "plan-kv-dtypes", "plan-weights-dtypes",
               "prices")
# Little's law iterations: the concurrency rises each step; past this many it is not settling.
FIXED_POINT_STEPS = 60
# The planner's work, bounded before it starts (issue 34): each GPU type and precision pair is one
# search over the GPU counts, stopping at the first that fits (a few ms each, up to 4096 GPUs:
# every preset at 15 x 15 precisions ran 34 s), and the whole table (--plan-all, "Show every
# deployment") sizes every count's every layout in full. Past these the plan is refused, naming
# the input to narrow, never run for minutes (bench/plan.py --limits times the largest allowed).
MAX_SEARCHES = 480            # GPU types x precision pairs: every preset (36 for vLLM) at 12 pairs
MAX_EVERY_COUNT = 800         # the whole table: GPU types x GPU counts x precision pairs (2x the default)
SECONDS_PER_HOUR = 3600
TOKENS_PER_MILLION = 10 ** 6


@dataclass(frozen=True)
class Layout:
    tp: int
    pp: int = 1
    dp: int = 1
    ep: bool = False

    @property
    def gpus(self) -> int:
        return self.tp * self.pp * self.dp

    def words(self) -> str:
        parts = [f"tp {self.tp}"] + [f"pp {self.pp}"] * (self.pp > 1) + [f"dp {self.dp}"] * (self.dp > 1) + \
            ["ep"] * self.ep
        return ", ".join(parts)


@dataclass(frozen=True)
class Row:
    """One deployment, as the single view sizes it."""
    gpu: str                                  # preset id
    gpu_name: str
    layout: Layout
    kv_dtype: str
    weights_dtype: str | None
    fits: bool | None
    max_concurrency: int | None               # requests that fit, as the engine sizes them
    max_context_tokens: int | None            # the longest context for the requests
    limit: str                                # what limits it: weights, kv, context, layout, rate, unknown
    why: str                                  # the verdict's sentence, or the refusal
    batch: int                                # the concurrency the row must hold
    decode_tokens_per_s: Fraction | None      # an upper bound, all requests together
    usd_per_hour: Fraction | None
    values: dict                              # the inputs that give this row in the single view
    # What each GPU holds beside its share of the model's weights in this layout (a draft, LoRA
    # slots, an encoder kept whole), by part: counted in every figure above.
    beside: tuple = ()

    @property
    def gpus(self) -> int:
        return self.layout.gpus

    @property
    def usd_per_million_tokens(self) -> Fraction | None:
        """A lower bound on the cost of output tokens: the hour's price over the decode bound."""
        if self.usd_per_hour is None or not self.decode_tokens_per_s:
            return None
        return self.usd_per_hour * TOKENS_PER_MILLION / (self.decode_tokens_per_s * SECONDS_PER_HOUR)

    def form_values(self) -> dict:
        """The deployment's inputs as a form holds them (text), to apply the row to the form. The
        precisions are the ones it was evaluated with: empty where the model's own was used (naming
        the model's dtype can size a quantized checkpoint's weights another way), and the
        concurrency is the one it holds (Little's law's, with a rate)."""
        return {"gpu": self.gpu, "gpus": str(self.gpus), "tp": "", "pp": str(self.layout.pp),
                "dp": str(self.layout.dp), "ep": "on" if self.layout.ep else "off",
                "kv-dtype": str(self.values.get("kv-dtype", "")),
                "weights-dtype": str(self.values.get("weights-dtype", "")), "batch": str(self.batch)}

    def words(self) -> str:
        """"8 x H200 fits 12 requests": a row as the verdict names it."""
        head = f"{self.gpus} x {self.gpu_name}"
        if self.fits is None:
            return f"{head}: whether it fits is not known ({self.limit})"
        if not self.fits:
            return f"{head} does not fit ({self.limit})"
        return f"{head} ({self.layout.words()}) fits {self.max_concurrency:,} request" + \
            ("s" * (self.max_concurrency != 1))


@dataclass(frozen=True)
class Plan:
    rows: tuple[Row, ...]
    notes: tuple[str, ...]
    everything: bool                          # every deployment, not only the smallest per GPU type

    @property
    def best(self) -> Row | None:
        return next((row for row in self.rows if row.fits), None)


@dataclass(frozen=True)
class Ask:
    """The plan's own inputs, typed."""
    base: dict                                # the inputs less the deployment's
    gpus: tuple[str, ...]
    max_gpus: int
    kv_dtypes: tuple[str | None, ...]         # None: the inputs' own
    weights_dtypes: tuple[str | None, ...]
    prices: dict
    rate: Fraction | None
    output_tokens: int | None
    engine: str | None
    dropped: tuple[str, ...] = ()             # inputs of one deployment the plan leaves out
    # What depends on no GPU, worked out once for every GPU type: the model, its layouts and the
    # ideal's need per precision pair, and each layout's exact-ideal bytes on its busiest GPU (the screen).
    memo: dict = field(default_factory=dict, compare=False)


def ask_from(values: dict) -> Ask:
    """The plan's inputs from typed values (options.parse_options), InputError naming the field."""
    rate, output = values.get("rate"), values.get("output-tokens")
    if rate is not None and output is None:
        raise InputError("output-tokens", "a request rate needs the tokens each request generates (output-tokens) "
                                          "for its decode time")
    base = {k: v for k, v in values.items() if k not in DEPLOYMENT_INPUTS and k not in PLAN_INPUTS}
    if output is not None:
        context = values.get("context", int(OPTION_BY_NAME["context"].default))
        if "prompt-tokens" not in values:
            if output >= context:
                raise InputError("output-tokens", f"{output:,} output tokens leave no prompt in a context of "
                                                  f"{context:,}; the context holds the prompt and the output")
            base["prompt-tokens"] = context - output
        elif values["prompt-tokens"] + output > context:
            raise InputError("output-tokens", f"a prompt of {values['prompt-tokens']:,} and {output:,} output tokens "
                                              f"are longer than the context of {context:,}")
    prices = dict(values.get("prices", ()))
    engine = values.get("engine")
    vendors = engines.REGISTRY[engine].VENDORS if engine else None
    if "plan-gpus" in values:
        considered = values["plan-gpus"]
        foreign = [gpu_id for gpu_id in considered if vendors and gpu_presets.gpu(gpu_id).vendor not in vendors]
        if foreign:
            raise InputError("plan-gpus", f"{engines.title(engine)} does not run on {', '.join(foreign)} "
                                          f"(it runs on {' and '.join(vendors)} GPUs)")
    else:
        considered = tuple(gpu_id for gpu_id, gpu in gpu_presets.gpus().items() if gpu.memory_bytes and
                           gpu.bandwidth_bytes_per_s and (not vendors or gpu.vendor in vendors))
    ask = Ask(base=base, gpus=tuple(considered), max_gpus=values.get("plan-max-gpus", DEFAULT_MAX_GPUS),
              kv_dtypes=values.get("plan-kv-dtypes") or (None,),
              weights_dtypes=values.get("plan-weights-dtypes") or (None,),
              prices=prices, rate=rate, output_tokens=output, engine=engine,
              dropped=tuple(name for name in DEPLOYMENT_INPUTS if name in values and name not in _CHOSEN))
    check_bounds(ask)
    return ask


def check_bounds(ask: Ask, everything: bool = False) -> None:
    """InputError when the plan asked is more work than MAX_SEARCHES searches (or, `everything`,
    MAX_EVERY_COUNT deployments' counts), naming the input that multiplies it."""
    kv, weights = len(ask.kv_dtypes), len(ask.weights_dtypes)
    searches = len(ask.gpus) * kv * weights
    if searches > MAX_SEARCHES:
        field = "plan-kv-dtypes" if kv >= weights else "plan-weights-dtypes"
        raise InputError(field, f"{kv} KV x {weights} weight precisions on {len(ask.gpus)} GPU types is {searches:,} "
                                f"searches; the plan runs at most {MAX_SEARCHES} (every GPU type at 12 precision "
                                "pairs): name fewer precisions, or fewer GPU types in plan-gpus")
    if everything:
        counts = sum(1 if gpu_presets.gpu(gpu_id).unified_memory else len(gpu_counts(ask.max_gpus)) for gpu_id in ask.gpus)
        total = counts * kv * weights
        if total > MAX_EVERY_COUNT:
            raise InputError("plan-max-gpus", f"every deployment of up to {ask.max_gpus:,} GPUs is {total:,} GPU "
                                              f"counts to size in full ({len(ask.gpus)} GPU types, {kv * weights} "
                                              f"precision pair{'s' if kv * weights > 1 else ''}); at most {MAX_EVERY_COUNT:,}: a smaller "
                                              "plan-max-gpus, fewer GPU types (plan-gpus) or precisions, or the "
                                              "smallest deployment per GPU type")


def gpu_counts(max_gpus: int) -> list[int]:
    """1, 2, 4, 8 on a node, then whole nodes of 8."""
    return [n for n in (1, 2, 4) if n <= max_gpus] + list(range(NODE_GPUS, max_gpus + 1, NODE_GPUS))


def layouts(count: int, model, engine: str | None) -> list[Layout]:
    """The layouts of `count` GPUs the plan tries, in the order it prefers them (module docstring),
    each one the engine and the model allow: tp a width the model's heads divide (no wider than a
    node), pp no more stages than layers, data-parallel ranks only where the engine has them
    (llama.cpp has none and no tensor parallelism either: it splits layers over its GPUs; SGLang's
    ranks are DP attention, which it runs for a mixture of experts)."""
    layers = len(model.layers)
    rules = engines.REGISTRY[engine] if engine else None
    if engines.member(rules, "SPLITS_LAYERS"):
        return [Layout(1, count)] if count <= layers else []
    widths = [tp for tp in (8, 4, 2, 1) if tp <= count and count % tp == 0 and _splits(model, tp)]
    moe = is_moe(model)
    data_parallel = engines.data_parallel(rules, moe)
    out = []
    if widths and count // widths[0] <= layers:
        out.append(Layout(widths[0], count // widths[0]))
    if widths and moe and count == widths[0]:
        out.append(Layout(widths[0], ep=True))
    if data_parallel:
        out.extend(Layout(tp, dp=count // tp, ep=moe) for tp in widths if count > tp)
    out.extend(Layout(tp, count // tp) for tp in widths[1:] if count // tp <= layers)
    return list(dict.fromkeys(out))


def _splits(model, tp: int) -> bool:
    try:
        model.check_parallel(tp, 1)
    except InputError:
        return False
    return True


def plan(values: dict, everything: bool = False) -> Plan:
    """For each GPU type considered: the smallest deployment that fits (or, `everything`, every
    count and layout), sorted by GPU count, then price, then the requests it holds. The page
    calls the same three steps itself (ask_from, gpu_rows per GPU type, finish), yielding between
    GPU types so that typing never waits."""
    ask = ask_from(values)
    check_bounds(ask, everything)
    rows = []
    for gpu_id in ask.gpus:
        rows.extend(gpu_rows(ask, gpu_id, everything))
    return finish(ask, rows, everything)


def finish(ask: Ask, rows: list, everything: bool = False) -> Plan:
    notes = []
    if not ask.prices:
        notes.append("no prices given: add what you pay per GPU-hour (prices, or --price GPU=USD) for $/hour and "
                     "$/million tokens")
    if ask.rate is not None:
        notes.append(f"concurrency from Little's law at {_decimal(ask.rate)} requests/s and {ask.output_tokens:,} output "
                     "tokens each: a lower bound, from the time bounds (queueing and scheduling only add)")
    if ask.dropped:
        notes.append(f"left out, as they belong to one deployment: {', '.join(ask.dropped)}")
    unused = [gpu_id for gpu_id in ask.prices if gpu_id not in ask.gpus]
    if unused:
        notes.append(f"prices for GPUs the plan does not consider: {', '.join(unused)}")
    return Plan(tuple(sorted(rows, key=_order(ask))), tuple(notes), everything)


def _order(ask: Ask):
    """Fitting rows first; then fewer GPUs, then cheaper (priced before unpriced), then more
    requests held; then the GPU types and precisions in the order asked, fewer stages, wider tp."""
    rank = {gpu_id: i for i, gpu_id in enumerate(ask.gpus)}

    def key(row: Row):
        price = row.usd_per_hour
        return (not row.fits, row.gpus, price is None, price or 0, -(row.max_concurrency or 0), rank.get(row.gpu, 0),
                _index(ask.weights_dtypes, row.weights_dtype), _index(ask.kv_dtypes, row.kv_dtype),
                row.layout.pp, -row.layout.tp, row.layout.dp, row.layout.ep)
    return key


def _index(names: tuple, name) -> int:
    return names.index(name) if name in names else 0


def gpu_rows(ask: Ask, gpu_id: str, everything: bool = False) -> list[Row]:
    """One GPU type's rows: the smallest deployment that fits over the precisions allowed (the
    fewest GPUs; at a tie, the precisions in the order asked), the largest tried when none does;
    or, `everything`, every count, layout and precision pair."""
    if everything:
        check_bounds(ask, everything)   # the page calls this per GPU type, without plan()
    rows = []
    gpu = gpu_presets.gpu(gpu_id)
    best = None
    for weights_dtype in ask.weights_dtypes:
        for kv_dtype in ask.kv_dtypes:
            values = dict(ask.base)
            if weights_dtype:
                values["weights-dtype"] = weights_dtype
            if kv_dtype:
                values["kv-dtype"] = kv_dtype
            # A machine whose memory is shared with its CPU is one device: no parallelism across machines.
            counts = [1] if gpu.unified_memory else gpu_counts(ask.max_gpus)
            if not everything and best is not None and best.fits:
                counts = [n for n in counts if n < best.gpus]     # an equal count keeps the first pair
                if not counts:
                    continue
            found = _search(ask, dict(values, gpu=gpu_id), _need(ask, values), everything, counts,
                            fallback=best is None or not best.fits)
            if everything:
                rows.extend(found)
            elif found and (best is None or (found[0].fits and (not best.fits or found[0].gpus < best.gpus))):
                best = found[0]
    return rows if everything else [best] if best is not None else []


def _need(ask: Ask, values: dict) -> int | None:
    """Bytes all a deployment's GPUs together can do with no less of: the weights and every
    request's KV cache as the exact ideal sizes them (one logical copy, no overhead). Every
    layout stores each weight at least once (tensor parallelism splits or copies, data-parallel
    ranks copy, SGLang's DP attention copies its embedding) and each request's cache at least
    once, and every engine only adds (blocks, pages, padding, a prefix copied per rank, its
    overhead), so a count whose GPUs' whole memory is less cannot fit. None where it cannot be
    said: weights unknown, or llama.cpp keeping layers or experts in CPU memory."""
    if any(name in values for name in ("n-gpu-layers", "n-cpu-moe")):
        return None
    key = ("need", _key(values))
    if key not in ask.memo:
        begun = begin(dict(values, batch=1) if ask.rate else values, searches=False)
        result = begun.result
        ask.memo[key] = None if not begun.ok or result.weights_bytes is None else \
            result.weights_bytes + result.kv_bytes_total
    return ask.memo[key]


def _memory(gpu) -> int:
    """A GPU's memory as the most generous sizing counts it (nvidia-smi's or PyTorch's total)."""
    return max(gpu.memory_bytes, gpu.torch_memory_bytes or 0)


def _search(ask: Ask, values: dict, need: int | None, everything: bool, counts: list,
            fallback: bool = True) -> list[Row]:
    """The first deployment that fits over `counts` and their layouts; when none does, the
    fallback row (or nothing, without `fallback`); or, `everything`, every row."""
    model = _model(ask, values)
    memory = _memory(gpu_presets.gpu(values["gpu"]))
    screen = need is not None
    rows, tried = [], []
    room_key = _room_key(values)
    for count in counts:
        # The GPU's room (_room) once a probe has found it, else its whole memory.
        if not everything and need is not None and count * ask.memo.get(room_key, memory) < need:
            continue
        for layout in _layouts(ask, values, model, count):
            layout_values = _with_layout(values, layout)
            if everything:
                # Every row is evaluated whole anyway; only a rate needs its probe (Little's law's N).
                probe = _Probe(layout_values, None) if ask.rate is None else _probe(ask, layout_values, memory, False)
                rows.append(_row(ask, probe))
                continue
            probe = _probe(ask, layout_values, memory, screen)
            tried.append((count, probe))
            if _refused_whatever_the_layout(probe):
                return [_row(ask, probe)]       # the model or the settings, refused as at every count
            if probe.fits:
                row = _row(ask, probe)
                if row.fits:            # always: the engine's answer is the row's, its band only words
                    return [row]
    if everything or not fallback:
        return rows
    return [_fallback(ask, values, model, counts, memory, tried)]


def _refused_whatever_the_layout(probe: "_Probe") -> bool:
    """A refusal of the model or the settings (an engine that does not model its caches, a KV
    precision it cannot store), not of this layout, or a context past the model's own limit: no
    other count or layout would be taken."""
    evaluation = probe.evaluation
    if evaluation is None:
        return False
    if not evaluation.ok:
        return evaluation.errors[0].field not in LAYOUT_FIELDS
    scenario = evaluation.scenario
    return bool(scenario.model.past_limit(scenario.workload.context_tokens))


def _key(values: dict) -> tuple:
    """The inputs but the GPU, as a key: what the model, its layouts and the screen depend on."""
    return tuple(sorted((k, str(v)) for k, v in values.items() if k != "gpu"))


def _model(ask: Ask, values: dict):
    """The model of these inputs, built once per precision pair (the model or workload refused
    raises the single view's refusal)."""
    key = ("model", _key(values))
    if key not in ask.memo:
        typed, errors = parse_options(values)
        if errors:
            raise errors[0]
        ask.memo[key] = build_scenario(typed).model
    return ask.memo[key]


def _layouts(ask: Ask, values: dict, model, count: int) -> list:
    key = ("layouts", _key(values), count)
    if key not in ask.memo:
        ask.memo[key] = layouts(count, model, ask.engine)
    return ask.memo[key]


def _fallback(ask: Ask, values: dict, model, counts: list, memory: int, tried: list) -> Row:
    """Nothing fits: the deployment tried that comes closest (the most requests held, then the
    most KV memory a GPU, short or not, then more GPUs), to say how far short it is (the last
    screened out, evaluated, when every one evaluated was refused); without one tried, the
    layouts of the largest count considered."""
    probes = [probe for _, probe in tried if probe.evaluation is not None or probe.held is not None]
    if max((probe.holds for probe in probes), default=-1) < 0:
        # Every one evaluated was refused: the last screened out says how far short memory is.
        screened = [probe for _, probe in tried if probe.evaluation is None and probe.held is None]
        # The largest first, pipeline stages before data-parallel ranks (which engines refuse more
        # often), eight at most, until one is not refused.
        screened.sort(key=lambda probe: (probe.values["dp"] == 1, probe.values["gpus"]), reverse=True)
        for probe in screened[:8]:
            probe = _probe(ask, probe.values, memory, False)
            probes.append(probe)
            if probe.holds >= 0:
                break
    if not probes:
        for count in reversed(counts):
            options = _layouts(ask, values, model, count)
            if options:
                probes = [_probe(ask, _with_layout(values, layout), memory, False) for layout in options]
                break
        else:
            return _row(ask, _probe(ask, _with_layout(values, Layout(1, counts[-1])), memory, False))
    return _row(ask, max(probes, key=_closeness))


def _closeness(probe: "_Probe") -> tuple:
    evaluation = probe.evaluation
    budget = evaluation.budget_bytes_per_gpu if evaluation is not None and evaluation.ok else None
    return probe.holds, -1 << 80 if budget is None else budget, probe.values["gpus"]


def _with_layout(values: dict, layout: Layout) -> dict:
    out = dict(values, gpus=layout.gpus, tp=layout.tp, pp=layout.pp, dp=layout.dp)
    if layout.ep:
        out["ep"] = "on"
    return out


@dataclass(frozen=True)
class _Probe:
    values: dict                              # the deployment's inputs, at the concurrency it must hold
    evaluation: Evaluation | None             # of these values, as judged (see _quick); None: not evaluated
    rate_met: bool = True
    fits: bool = False
    held: int | None = None                   # the requests it holds, where evaluation does not say

    @property
    def holds(self) -> int:
        """The requests it holds (-1: refused or not evaluated): the fallback picks the most."""
        evaluation = self.evaluation
        if evaluation is None:
            return -1 if self.held is None else self.held
        return (evaluation.capacity or 0) if evaluation.ok else -1


def _screen_bytes(begun: Evaluation, engine: str | None) -> int | None:
    """The exact ideal's weights and KV cache on the deployment's busiest GPU, no overhead: every
    engine holds at least those bytes there (the same weights per GPU; blocks, pages and pools
    only add), so a GPU with less memory cannot fit it. None where that does not hold or is not
    known (unknown weights). SGLang's DP attention places less than the ideal on a GPU (the
    embedding whole, dense layers over all tp x dp GPUs): its ranks count the weights as it places
    them. The figure depends on the layout and the workload, not on the GPU."""
    if not begun.ok:
        return None
    result, dep = begun.result, begun.scenario.deployment
    weights = result.weights_bytes_per_gpu
    if weights is not None and dep.dp_attention:
        try:
            # The deployment carries the engine's DP attention (its DP_ATTENTION, dp > 1): the
            # weights as those ranks place them.
            weights = parallel.weights_bytes_per_gpu(begun.scenario.model, dep)
        except InputError:
            return None
    return None if weights is None else weights + result.kv_bytes_per_gpu


_UNKNOWN = object()


def _room(begun: Evaluation) -> int | None:
    """The most memory a GPU of this deployment has for its weights and cache as the chosen rules
    size it: the exact ideal's memory x utilization, or the engine's usable memory (usable_memory,
    before it takes its overhead). Every engine's KV memory is that less the weights and an
    overhead of no less than nothing. None where it cannot be said."""
    result, scenario = begun.result, begun.scenario
    if result.usable_bytes_per_gpu is None:
        return None
    name = scenario.settings.engine
    if not name:
        return result.usable_bytes_per_gpu
    try:
        module = engines.REGISTRY[engines.engine_name(name)]
        chunk = scenario.settings.prefill_chunk or engines.default_prefill_chunk(module.NAME, scenario)
        return module.usable_memory(scenario, chunk, [], result.usable_bytes_per_gpu)
    except InputError:
        return None


def _quick(ask: Ask, values: dict, memory: int, screen: bool, timed: bool = False) -> Evaluation | None:
    """Enough of evaluate(values, searches=False) to say whether the deployment fits: the exact
    ideal and the engine's answer (engines.answer: its sizing without the ends of its overhead
    band, which change the verdict's words, never whether it fits); with `timed`, all of it, the
    time bounds too. None when screened out before the engine's rules: the exact ideal's bytes on
    the busiest GPU (_screen_bytes, worked out for a layout on the first GPU type and kept for the
    others) over the GPU's room (_room, kept per GPU type where no layout moves it)."""
    key = ("screen", _key(values))
    room_key = _room_key(values)
    known = ask.memo.get(key, _UNKNOWN) if screen else None
    room = ask.memo.get(room_key, memory)
    if known is not _UNKNOWN and known is not None and known > room:
        return None
    begun = begin(values, searches=False)
    if screen and begun.ok:
        if known is _UNKNOWN:
            known = ask.memo[key] = _screen_bytes(begun, ask.engine)
        if known is not None:
            room = _room(begun)
            # Kept per GPU type where the chosen rules' memory for the weights and the cache (the
            # total times the utilization, before any overhead) depends on the GPU and the settings
            # only (the exact ideal's; an engine's USABLE_BY_GPU): SGLang's mem_fraction_static
            # shrinks as tp x pp grows, so its room is taken layout by layout.
            if (not ask.engine or engines.member(engines.REGISTRY[ask.engine], "USABLE_BY_GPU")) and room is not None:
                ask.memo[room_key] = room
            if known > (memory if room is None else room):
                return None
    if timed or not begun.ok or not begun.scenario.settings.engine:
        return carry_on(begun, searches=False) if timed else begun
    try:
        engine = engines.answer(begun.scenario, begun.result)
    except Exception as e:      # noqa: BLE001 - as evaluate: a fault is a refusal, the row says which
        return refused(begun.values, e)
    return replace(begun, engine=engine)


_LAYOUT_KEYS = ("gpus", "tp", "pp", "dp", "ep", "batch")


def _room_key(values: dict) -> tuple:
    return ("room", values["gpu"], _key({k: v for k, v in values.items() if k not in _LAYOUT_KEYS}))


def _probe(ask: Ask, values: dict, memory: int, screen: bool = True) -> _Probe:
    """Whether the deployment fits at the concurrency it must hold (the inputs' requests, or
    Little's law's), without the longest-context searches.

    Little's law: N = rate x (TTFT + output tokens x decode step at N), each bound at N requests.
    The right side grows with N, so iterating from N = 1 rises to its least fixed point (never
    past it: below a fixed point the next N stays below it); it stops there, or once N is more
    than the deployment holds (the rate is past what it serves: the decode step grows with N, so
    a rate above what the largest batch decodes has no fixed point within it), or after
    FIXED_POINT_STEPS steps without settling."""
    if ask.rate is None:
        evaluation = _quick(ask, values, memory, screen)
        return _Probe(values, evaluation, True, evaluation is not None and _fits(evaluation))
    batch = 1
    for _ in range(FIXED_POINT_STEPS):
        row_values = dict(values, batch=batch)
        evaluation = _quick(ask, row_values, memory, screen, timed=True)
        if evaluation is None or not evaluation.ok:
            return _Probe(row_values, evaluation, False)
        step, ttft = _step_seconds(evaluation), _ttft_seconds(evaluation)
        if step is None:
            return _Probe(row_values, evaluation, rate_met=False)
        needed = _ceil(ask.rate * (ttft + ask.output_tokens * step))
        if needed <= batch:
            return _Probe(row_values, evaluation, True, _fits(evaluation))
        capacity = evaluation.capacity
        if capacity is not None and needed > capacity:
            # More requests in flight than fit: the rate is past what it serves.
            return _Probe(dict(values, batch=needed), None, rate_met=False, held=capacity)
        batch = needed
    return _Probe(row_values, evaluation, rate_met=False)


def _fits(evaluation: Evaluation) -> bool:
    if not evaluation.ok:
        return False
    return bool(verdict(evaluation.scenario, evaluation).fits)


def _row(ask: Ask, probe: _Probe) -> Row:
    """The row of a probe: evaluate(values), the single view's own evaluation of its inputs (from
    the scenario the probe built of the same values, evaluation.searched)."""
    values = probe.values
    gpu = gpu_presets.gpu(values["gpu"])
    layout = Layout(values["tp"], values["pp"], values["dp"], values.get("ep") == "on")
    price = ask.prices.get(gpu.id)
    hourly = None if price is None else price * layout.gpus
    probed = probe.evaluation
    evaluation = searched(probed) if probed is not None and probed.ok else evaluate(values)
    batch = values.get("batch", 1)
    if not evaluation.ok:
        error = evaluation.errors[0]
        return Row(gpu.id, gpu.name, layout, values.get("kv-dtype", ""), values.get("weights-dtype"), False, None,
                   None, _refusal_limit(error), f"{error.field}: {error.message}", batch, None, hourly,
                   _shown(values))
    scenario = evaluation.scenario
    judged = verdict(scenario, evaluation)
    fits = judged.fits and probe.rate_met
    longest, limited_by = evaluation.context_limit
    if not probe.rate_met and (judged.fits or (evaluation.capacity and set(judged.reasons) <= {"kv", "engine"})):
        # It holds requests, but not the many Little's law puts in flight at this rate.
        limit, why = "rate", _rate_words(ask, batch, evaluation)
    elif judged.fits is False:
        limit, why = _limit(judged.reasons, evaluation), judged.sentence
    elif judged.fits is None:
        limit, why = "unknown", judged.sentence
    else:
        limit, why = ("context" if limited_by == "model" else "kv"), judged.sentence
    step = _step_seconds(evaluation)
    tokens_per_s = Fraction(batch) / step if step and fits else None
    return Row(gpu.id, gpu.name, layout, scenario.workload.kv_precision.name,
               scenario.settings.weights_dtype or scenario.model.weights_dtype, fits, evaluation.capacity, longest, limit,
               why, batch, tokens_per_s, hourly, _shown(values), scenario.serving.added)


def _rate_words(ask: Ask, batch: int, evaluation: Evaluation) -> str:
    capacity = evaluation.capacity
    if capacity is not None and batch > capacity:
        return (f"{batch:,} requests in flight at {_decimal(ask.rate)}/s (Little's law) are more than the "
                f"{capacity:,} that fit")
    return (f"Little's law at {_decimal(ask.rate)}/s does not settle within {FIXED_POINT_STEPS} steps: the rate is at "
            "the edge of what it serves")


# The limits a row names: weights, kv, context (the model's own limit), layout (a refused tp, pp,
# dp or ep: heads not divisible by tp and the like), hybrid (an engine that refuses the model's
# hybrid state pages), engine (another refusal of the engine's), rate, unknown, or the field of
# any other refusal (kv-dtype an engine cannot store, ...).
LAYOUT_FIELDS = ("tp", "pp", "dp", "ep", "gpus")


def _refusal_limit(error: InputError) -> str:
    if error.field in LAYOUT_FIELDS:
        return "layout"
    if error.field == "engine":
        return "hybrid" if "hybrid" in error.message else "engine"
    return error.field


def _limit(reasons: tuple, evaluation: Evaluation) -> str:
    if "context" in reasons:
        return "context"
    if "weights" in reasons:
        return "weights"
    budget = evaluation.budget_bytes_per_gpu
    if "engine" in reasons and budget is not None and budget < 0:
        return "weights"
    return "kv"


def _shown(values: dict) -> dict:
    """The row's inputs as the single view takes them (the link, the form): tp follows from the
    GPUs over pp x dp, and pp 1, dp 1 are the defaults."""
    return {k: v for k, v in values.items() if k != "tp" and not (k in ("pp", "dp") and v == 1)}


def _step_seconds(evaluation: Evaluation) -> Fraction | None:
    timing = evaluation.timing
    return timing.decode_step_seconds if timing else evaluation.result.decode_step_seconds


def _ttft_seconds(evaluation: Evaluation) -> Fraction:
    timing = evaluation.timing
    return timing.ttft_seconds if timing else Fraction(0)


def _ceil(value: Fraction) -> int:
    return max(1, -(-value.numerator // value.denominator))


def _decimal(value: Fraction) -> str:
    return f"{float(value):g}"


def curve(ask: Ask, gpu_id: str) -> list[tuple[int, int]]:
    """(GPUs, requests that fit) for one GPU type over every count, each in the count's preferred
    layout (the first of `layouts`): the plan chart's line. 0 where it does not start."""
    values = dict(ask.base, gpu=gpu_id)
    weights_dtype, kv_dtype = ask.weights_dtypes[0], ask.kv_dtypes[0]     # the first precisions allowed
    if weights_dtype:
        values["weights-dtype"] = weights_dtype
    if kv_dtype:
        values["kv-dtype"] = kv_dtype
    model = _model(ask, values)
    gpu = gpu_presets.gpu(gpu_id)
    counts = [1] if gpu.unified_memory else gpu_counts(ask.max_gpus)
    points = []
    for count in counts:
        options = _layouts(ask, values, model, count)
        if not options:
            continue
        evaluation = _quick(ask, _with_layout(values, options[0]), _memory(gpu), False)
        points.append((count, (evaluation.capacity or 0) if evaluation.ok else 0))
    return points
