"""Chart series: the same scenario swept over context length, and the decode chart's extra lines.
Pure, exact ints and Fractions. Every series carries a key saying what it is (an attention design,
a KV precision, the weights, the budget...), and SERIES_STYLES draws each key one way, so MQA has
the same colour and dash on every model, whatever its place among the lines."""

from dataclasses import replace
from fractions import Fraction

from .. import engines, parallel
from .compare import attention_variants_models
from ..errors import InputError
from ..precision import PRECISIONS
from ..inputs.scenario import Scenario
from ..sizing import _max_concurrency, batch_bytes, compute
from ..serving.timing import batch_series
from ..units import ceil_div

CHART_PRECISIONS = ("bf16", "fp8", "q8_0", "q4_0")
NO_LIMIT_TOP = 131_072          # where the context axis ends for a model that gives no limit

# key -> (colour on the light page, colour on the dark page, dash pattern in px or None: solid).
# Fixed per series, never per position. Each colour keeps 3:1 against its page's background
# (style.css --bg: #ffffff, #0d1117) and the lines one chart draws together differ in colour
# and in dash, so they read apart without colour too (tests/reports/test_charts.py checks all three).
# The limits (the KV budget, the compute ceiling, the roof) are drawn in the page's ink.
INK = ("#1b1f24", "#e6edf3")
SERIES_STYLES = {
    # attention designs (compare.attention_variants' labels)
    "MHA": ("#cf222e", "#ff7b72", None),
    "GQA": ("#1a7f37", "#3fb950", (10, 4)),
    "MQA": ("#8250df", "#bc8cff", (2, 3)),
    "MLA": ("#9a6700", "#d29922", (10, 3, 2, 3)),
    # KV precisions: the four every chart draws; any other is drawn only as the current one
    "bf16": ("#0969da", "#58a6ff", None),
    "fp8": ("#bc4c00", "#f0883e", (10, 4)),
    "q8_0": ("#1b7c83", "#39c5cf", (2, 3)),
    "q4_0": ("#bf3989", "#f778ba", (10, 3, 2, 3)),
    "other precision": ("#6639ba", "#a371f7", (6, 2, 2, 2, 2, 2)),
    # named lines
    "weights": ("#1f5f8b", "#58a6ff", (6, 6)),          # the memory bar's weights colour (--c-weights)
    "budget": (*INK, (14, 3, 3, 3)),
    "total": ("#0969da", "#58a6ff", None),
    "per request": ("#bc4c00", "#f0883e", (10, 4)),
    "ceiling": (*INK, (14, 3, 3, 3)),
    "roof": (*INK, None),
    "decode": ("#bc4c00", "#f0883e", None),
    "prefill": ("#1b7c83", "#39c5cf", None),
    # marks: the chosen context or batch, the model's limit
    "mark": ("#57606a", "#9da7b3", (3, 3)),
    "other": ("#57606a", "#9da7b3", (1, 2)),
    # the plan chart's GPU types, in the plan's order: "gpu 1" is the best row's type
    "gpu 1": ("#0969da", "#58a6ff", None),
    "gpu 2": ("#bc4c00", "#f0883e", (10, 4)),
    "gpu 3": ("#1a7f37", "#3fb950", (2, 3)),
    "gpu 4": ("#8250df", "#bc8cff", (10, 3, 2, 3)),
    "gpu 5": ("#cf222e", "#ff7b72", (6, 2, 2, 2, 2, 2)),
    "gpu 6": ("#1b7c83", "#39c5cf", (6, 6)),
}
# The series each chart draws together (the tests check they read apart).
CHART_KEYS = {
    "chart-memory": ("MHA", "GQA", "MQA", "MLA", "weights", "budget", "mark"),
    "chart-concurrency": (*CHART_PRECISIONS, "other precision", "mark"),
    "chart-batch": ("total", "per request", "ceiling", "mark"),
    "chart-roofline": ("roof", "decode", "prefill"),
    "chart-plan": ("gpu 1", "gpu 2", "gpu 3", "gpu 4", "gpu 5", "gpu 6"),
}


def style_key(key: str) -> str:
    """The style a series is drawn in: its own, or the shared one of precisions drawn only as the
    current one (never two at once) and of anything unforeseen."""
    if key in SERIES_STYLES:
        return key
    return "other precision" if key in PRECISIONS else "other"


def context_points(scenario: Scenario) -> list[int]:
    """Powers of two from 512 up to the model's limit (max_position_embeddings), the limit itself
    and the current context; without a limit, up to 128K or the current context. A current
    context past the limit stays a point for its mark only: the lines end at line_end."""
    current = scenario.workload.context_tokens
    top = scenario.model.max_context_tokens or max(current, NO_LIMIT_TOP)
    points = {1 << k for k in range(9, 41) if (1 << k) <= top} | {top, current}
    return sorted(points)


def line_end(scenario: Scenario) -> int | None:
    """The last context a line is drawn to: the model's limit, where it gives one."""
    return scenario.model.max_context_tokens or None


def kv_per_gpu(model, workload, deployment, context: int) -> int:
    # cache_bytes clamps the shared prefix to the context itself; a GPU holds its data-parallel
    # rank's requests.
    batch = ceil_div(workload.batch, deployment.dp)
    return max(batch_bytes(stage, context, workload, batch, deployment.tp)
               for stage, _ in model.stage_groups(deployment.pp))


def memory_series(scenario: Scenario, contexts: list[int], result=None) -> dict:
    """KV bytes on the most loaded GPU against context, one line per attention design (the
    model's own flagged current), with the weights per GPU and the KV budget per GPU (None where
    unknown). The budget is the exact ideal's, memory x utilization - weights - overhead; with
    an engine chosen it is the engine's own KV memory at each context in the current precision
    (llama.cpp's compute buffer grows with the context), from `result`, the scenario's sizing."""
    dep = scenario.deployment
    lines = []
    for label, model, current in attention_variants_models(scenario):
        try:
            model.check_parallel(dep.tp, dep.pp)
        except ValueError:
            continue
        try:
            sizes = [kv_per_gpu(model, scenario.workload, dep, c) for c in contexts]
        except InputError:
            continue            # a design the KV precision cannot store (a packed format's MLA)
        lines.append({"label": label, "key": label, "current": current, "bytes": sizes})
    weights = result.weights_bytes_per_gpu if result is not None else parallel.weights_bytes_per_gpu(scenario.model, dep)
    ideal = None
    if dep.gpu_memory_bytes is not None and weights is not None:
        ideal = int(dep.gpu_memory_bytes * dep.memory_utilization) - weights - dep.overhead_bytes
    budget = None if ideal is None else {"label": "KV budget per GPU", "bytes": [ideal] * len(contexts)}
    engine = scenario.settings.engine
    if engine:
        name = scenario.workload.kv_precision.name
        answers = engine_answers(scenario, result, contexts, [name])[name]
        values = [None if a is None else a.kv_budget_bytes_per_gpu for a in answers]
        budget = None if all(v is None for v in values) else \
            {"label": f"KV memory per GPU ({_engine_title(scenario)})", "bytes": values}
    return {"contexts": contexts, "lines": lines, "weights_bytes_per_gpu": weights, "kv_budget_bytes_per_gpu": ideal,
            "budget": budget, "engine": _engine_title(scenario)}


def concurrency_series(scenario: Scenario, contexts: list[int], result=None) -> dict:
    """Max concurrent requests against context, one line per KV precision (the current one
    flagged; empty without a GPU). With an engine chosen, each point is that engine's own answer
    at that context and precision, as the page's headline gives it for the current ones (0 when
    it does not start, None where it refuses the inputs), for the precisions it can store."""
    if scenario.settings.engine:
        return _engine_concurrency(scenario, contexts, result)
    dep = scenario.deployment
    if dep.gpu_memory_bytes is None or dep.weights_bytes is None:
        return {"contexts": contexts, "lines": [], "engine": None}
    weights = result.weights_bytes_per_gpu if result is not None else parallel.weights_bytes_per_gpu(scenario.model, dep)
    budget = int(dep.gpu_memory_bytes * dep.memory_utilization) - weights - dep.overhead_bytes
    lines = []
    for name in _precision_names(scenario):
        try:
            at = engines.at_kv_precision(scenario, PRECISIONS[name])     # its own kept layers, placed again
        except InputError:
            lines.append(_precision_line(scenario, name, [None] * len(contexts)))
            continue
        work = at.workload
        stages = [stage for stage, _ in at.model.stage_groups(dep.pp)]
        # Each data-parallel rank holds as many again.
        values = [None if (v := _max_concurrency(stages, c, work, budget, dep.tp)) is None else v * dep.dp
                  for c in contexts]
        lines.append(_precision_line(scenario, name, values))
    return {"contexts": contexts, "lines": lines, "engine": None}


def _precision_names(scenario: Scenario) -> list[str]:
    names = list(CHART_PRECISIONS)
    if scenario.workload.kv_precision.name not in names:
        names.insert(0, scenario.workload.kv_precision.name)
    return names


def _precision_line(scenario: Scenario, name: str, values: list) -> dict:
    return {"label": name, "key": name, "current": name == scenario.workload.kv_precision.name, "requests": values}


def _engine_title(scenario: Scenario) -> str | None:
    engine = scenario.settings.engine
    return engines.title(engines.engine_name(engine)) if engine else None


def _engine_concurrency(scenario: Scenario, contexts: list[int], result) -> dict:
    module = engines.REGISTRY[engines.engine_name(scenario.settings.engine)]
    names = [name for name in _precision_names(scenario) if module.stores(PRECISIONS[name])]
    answers = engine_answers(scenario, result, contexts, names)
    dp = scenario.deployment.dp
    lines = [_precision_line(scenario, name, [None if (c := _capacity(a)) is None else c * dp for a in answers[name]])
             for name in names]
    if all(v is None for line in lines for v in line["requests"]):
        lines = []          # no memory to size in: the engine gives no capacity anywhere
    return {"contexts": contexts, "lines": lines, "engine": _engine_title(scenario)}


def _capacity(answer) -> int | None:
    """Whole requests, as sizing.Result.capacity counts the engine's: 0 when it does not start."""
    if answer is None or answer.starts is None:
        return None
    return int(answer.max_concurrency) if answer.starts else 0


def engine_answers(scenario: Scenario, result, contexts: list[int], names: list[str]) -> dict:
    """The chosen engine's answer (an EngineResult; None where it refuses the inputs) at each
    context for each KV precision named, as engines.size gives it for the scenario at that
    context and precision. `result` is the scenario's sizing (its usable memory and weights per
    GPU are what the engine sizes in; computed when not given).

    The chart needs only the answer itself, not the ends of its band, so each point runs the
    engine once (engines.answer). A page update redraws the charts
    on every keystroke: the answers are kept on the model for the inputs that are not swept, so
    editing the context or the precision runs the engine for the new points only."""
    work = scenario.workload
    if result is None:
        result = compute(scenario.model, work, scenario.deployment, searches=False)
    key = (replace(work, context_tokens=0, kv_precision=None), scenario.deployment, scenario.settings,
           result.usable_bytes_per_gpu, result.weights_bytes_per_gpu)
    memo = scenario.model.memo
    held = memo.get("sweep.engine_answers")
    if held is None or held[0] != key:
        held = memo["sweep.engine_answers"] = (key, {})
    table = held[1]
    out = {}
    for name in names:
        precision = PRECISIONS[name]
        row = []
        for context in contexts:
            if (context, name) not in table:
                table[(context, name)] = _answer(scenario, result, context, precision)
            row.append(table[(context, name)])
        out[name] = row
    return out


def _answer(scenario: Scenario, result, context: int, precision):
    """What engines.size answers at this context and precision, without its bands
    (engines.answer: one run of the engine's own sizing); None where it refuses the inputs."""
    work = scenario.workload
    try:
        at = engines.at_kv_precision(scenario, precision, context_tokens=context,
                                     prefix_tokens=min(work.prefix_tokens, context))
        return engines.answer(at, result)
    except InputError:
        return None


def decode_series(scenario: Scenario, evaluation, timing) -> dict:
    """Decode tokens/s against batch size (timing.batch_series, up to the requests that fit),
    with the compute ceiling and the chosen batch. A step takes at least its FLOPs at peak,
    batch x FLOPs per token / (tp x peak FLOP/s), and a token's FLOPs do not depend on the
    batch, so the tokens/s of all requests stay under tp x peak / FLOPs per token: the
    ceiling, reached from timing's compute_bound_batch (None: never, the cache reads grow as
    fast). Timing.decode_flops is the chosen batch's step."""
    result = evaluation.result
    series = batch_series(scenario, result, timing, evaluation.capacity)
    batch = scenario.workload.batch
    ceiling = Fraction(scenario.deployment.tp * timing.peak_flops_per_s * batch, timing.decode_flops) \
        if timing.decode_flops else None
    return {**series, "ceiling": [ceiling] * len(series["batches"]), "chosen": batch,
            "compute_bound_batch": timing.compute_bound_batch}
