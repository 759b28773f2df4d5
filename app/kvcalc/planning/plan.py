"""What do I need? The inverse of the single view: for each GPU type, the deployments that serve
the workload as the chosen engine sizes them, smallest first.

Every row is evaluation.evaluate of the inputs with the deployment filled in (the function the
single view, the CLI and the link call): the planner chooses the GPU, the count, the layout and
the precisions, never a figure. Its phases, one module each:
- ask: the plan's own inputs, typed, and the work they ask bounded before it starts.
- candidates: what is searched: GPU counts (1, 2, 4 and 8 on a node, then whole nodes of 8; a
  machine whose memory the CPU shares is one device) and, at each count, the layouts in the order
  people deploy them. The first that fits is the row; over several precisions allowed, the fewest
  GPUs (at a tie, the precisions in the order asked).
- bounds: two lower bounds skip what cannot fit, without the engine's rules (need_bytes for a
  count, screen_bytes over room_bytes for a layout); tests/planning/test_plan.py checks both
  against full evaluations over every preset, and the search against the exhaustive table.
- probe: whether a deployment fits, the exact ideal and the engine's answer only, at the
  concurrency it must hold (the inputs' requests, or Little's law's at a request rate).
- rows: the row is then the deployment's full evaluation, with the limit it names (weights, kv,
  context, layout, hybrid, engine, rate, unknown, or the field of any other refusal).
- ranking: the rows in order and the plan's notes.
This module is the search that joins them (plan; gpu_rows and finish, which the page calls per GPU
type; curve, the chart's line). What depends on no GPU (the model, its layouts, each layout's
bytes on its busiest GPU) is worked out once for every GPU type, in the ask's memo.
Pure: values in, rows out.
"""

from ..readers import gpu_presets
from ..inputs.options import parse_options
from ..inputs.scenario import build_scenario
from .ask import Ask, ask_from, check_bounds
from .bounds import gpu_memory, memo_key, need_bytes, room_key_of
from .candidates import Layout, gpu_counts_on, layouts, with_layout
from .probe import Probe, probe_deployment, quick_evaluation
from .ranking import Plan, finish
from .rows import LAYOUT_FIELDS, Row, row_of


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
            values = _with_precisions(ask.base, weights_dtype, kv_dtype)
            counts = gpu_counts_on(gpu, ask.max_gpus)
            if not everything and best is not None and best.fits:
                counts = [n for n in counts if n < best.gpus]     # an equal count keeps the first pair
                if not counts:
                    continue
            found = _search(ask, dict(values, gpu=gpu_id), need_bytes(ask, values), everything, counts,
                            fallback=best is None or not best.fits)
            if everything:
                rows.extend(found)
            elif found and (best is None or (found[0].fits and (not best.fits or found[0].gpus < best.gpus))):
                best = found[0]
    return rows if everything else [best] if best is not None else []


def _with_precisions(values: dict, weights_dtype: str | None, kv_dtype: str | None) -> dict:
    """The inputs at one precision pair (None: the inputs' own)."""
    out = dict(values)
    if weights_dtype:
        out["weights-dtype"] = weights_dtype
    if kv_dtype:
        out["kv-dtype"] = kv_dtype
    return out


def _search(ask: Ask, values: dict, need: int | None, everything: bool, counts: list,
            fallback: bool = True) -> list[Row]:
    """The first deployment that fits over `counts` and their layouts; when none does, the
    fallback row (or nothing, without `fallback`); or, `everything`, every row."""
    model = _model(ask, values)
    memory = gpu_memory(gpu_presets.gpu(values["gpu"]))
    screen = need is not None
    rows, tried = [], []
    room_key = room_key_of(values)
    for count in counts:
        # The GPU's room (room_bytes) once a probe has found it, else its whole memory.
        if not everything and need is not None and count * ask.memo.get(room_key, memory) < need:
            continue
        for layout in _layouts(ask, values, model, count):
            layout_values = with_layout(values, layout)
            if everything:
                # Every row is evaluated whole anyway; only a rate needs its probe (Little's law's N).
                probe = Probe(layout_values, None) if ask.rate is None else probe_deployment(ask, layout_values, memory, False)
                rows.append(row_of(ask, probe))
                continue
            probe = probe_deployment(ask, layout_values, memory, screen)
            tried.append((count, probe))
            if _refused_whatever_the_layout(probe):
                return [row_of(ask, probe)]       # the model or the settings, refused as at every count
            if probe.fits:
                row = row_of(ask, probe)
                if row.fits:            # always: the engine's answer is the row's, its band only words
                    return [row]
    if everything or not fallback:
        return rows
    return [_fallback(ask, values, model, counts, memory, tried)]


def _refused_whatever_the_layout(probe: "Probe") -> bool:
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


def _model(ask: Ask, values: dict):
    """The model of these inputs, built once per precision pair (the model or workload refused
    raises the single view's refusal)."""
    key = ("model", memo_key(values))
    if key not in ask.memo:
        typed, errors = parse_options(values)
        if errors:
            raise errors[0]
        ask.memo[key] = build_scenario(typed).model
    return ask.memo[key]


def _layouts(ask: Ask, values: dict, model, count: int) -> list:
    key = ("layouts", memo_key(values), count)
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
            probe = probe_deployment(ask, probe.values, memory, False)
            probes.append(probe)
            if probe.holds >= 0:
                break
    if not probes:
        for count in reversed(counts):
            options = _layouts(ask, values, model, count)
            if options:
                probes = [probe_deployment(ask, with_layout(values, layout), memory, False) for layout in options]
                break
        else:
            return row_of(ask, probe_deployment(ask, with_layout(values, Layout(1, counts[-1])), memory, False))
    return row_of(ask, max(probes, key=_closeness))


def _closeness(probe: "Probe") -> tuple:
    evaluation = probe.evaluation
    budget = evaluation.budget_bytes_per_gpu if evaluation is not None and evaluation.ok else None
    return probe.holds, -1 << 80 if budget is None else budget, probe.values["gpus"]


def curve(ask: Ask, gpu_id: str) -> list[tuple[int, int]]:
    """(GPUs, requests that fit) for one GPU type over every count, each in the count's preferred
    layout (the first of `layouts`): the plan chart's line. 0 where it does not start."""
    # The first precisions allowed.
    values = _with_precisions(dict(ask.base, gpu=gpu_id), ask.weights_dtypes[0], ask.kv_dtypes[0])
    model = _model(ask, values)
    gpu = gpu_presets.gpu(gpu_id)
    points = []
    for count in gpu_counts_on(gpu, ask.max_gpus):
        options = _layouts(ask, values, model, count)
        if not options:
            continue
        evaluation = quick_evaluation(ask, with_layout(values, options[0]), gpu_memory(gpu), False)
        points.append((count, (evaluation.capacity or 0) if evaluation.ok else 0))
    return points
