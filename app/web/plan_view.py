"""What do I need? (issue 25): the plan's table, its chart and the verdict's pointer to its best
row, computed in the page one GPU type at a time.

The engine plans (kvcalc.planning: ask.ask_from, plan.gpu_rows per GPU type, ranking.finish,
plan.curve per type drawn); here its rows are written and a chosen one is applied to the form.
Between GPU types the page gets its thread back once a slice's time is used (asyncio.sleep(0) is
a browser task in Pyodide's event loop), so typing never waits for a plan; an update started
meanwhile (state.plan_generation) stops the older plan, whose last good table stays until the new
one is whole. Figures are the engine's (plan_report.row_json), only written here. Imported on
first use (web.loop), so the page starts without it."""

import asyncio
import time

from kvcalc.planning import plan as planner
from kvcalc.planning.ask import ask_from
from kvcalc.planning.candidates import gpu_counts
from kvcalc.planning.ranking import finish
from kvcalc.errors import InputError
from kvcalc.planning.plan_report import pointer, withheld

from web import plan_chart, plan_table, state
from web.errors import in_page_words, label
from web.dom import put, q

SLICE_SECONDS = 0.012           # the longest the plan runs before the page gets its thread back
# The inputs a row sets: a plan whose other inputs are unchanged is the same plan (a row applied).
_ROW_SET = ("gpu", "gpus", "tp", "pp", "dp", "ep", "unit")
_mode = {"everything": False}
_shown = {"key": None, "plan": None, "ask": None}
_field_errors = set()           # the plan fields this module marked in error
timings = []                    # per finished plan: its compute, table and whole times (bench/plan_page.py)

def _key(values: dict) -> str:
    # With a rate, each row holds its own Little's law concurrency: the batch a row applied is not
    # an input of the plan.
    row_set = _ROW_SET + ("batch",) * ("rate" in values)
    return repr(sorted((k, str(v)) for k, v in values.items() if k not in row_set)) + repr(_mode["everything"])


def _cancelled(generation: int) -> bool:
    return state.plan_generation != generation


class _Slices:
    """The thread given back between slices once SLICE_SECONDS are used; the longest stretch
    the page waited is kept (bench/plan_page.py reports it)."""

    def __init__(self, generation: int):
        self.generation, self.since, self.longest = generation, time.perf_counter(), 0.0

    async def pause(self, status: str = "") -> bool:
        """After a slice: True when a newer plan was asked for meanwhile (this one stops)."""
        now = time.perf_counter()
        if now - self.since < SLICE_SECONDS:
            return False
        self.longest = max(self.longest, now - self.since)
        if status:
            put("#plan-status", status)
        await asyncio.sleep(0)
        self.since = time.perf_counter()
        return _cancelled(self.generation)

    def end(self) -> None:
        self.longest = max(self.longest, time.perf_counter() - self.since)


async def run(generation: int, values: dict) -> None:
    """Plan for these (typed) inputs; stops when a newer plan is asked for."""
    if _cancelled(generation):
        return
    key = _key(values)
    if key == _shown["key"]:
        _done()         # the same plan (a row applied, a unit switched): only which row is current changes
        return
    started = time.perf_counter()
    slices = _Slices(generation)
    try:
        ask = ask_from(values)
    except InputError as e:
        _refused(e)
        return
    _clear_field_errors()
    everything = _mode["everything"]
    rows, compute = [], 0.0
    try:
        for i, gpu_id in enumerate(ask.gpus):
            if await slices.pause(f"Planning… {i} of {len(ask.gpus)} GPU types"):
                return
            t = time.perf_counter()
            rows.extend(planner.gpu_rows(ask, gpu_id, everything))
            compute += time.perf_counter() - t
        t = time.perf_counter()
        result = finish(ask, rows, everything)
        compute += time.perf_counter() - t
    except InputError as e:
        _not_planned(f"Not planned: {label(e.field)}: {in_page_words(e.message)}")
        return
    _shown.update(key=key, plan=result, ask=ask)
    plan_table.render(result, ask)
    table_ms = (time.perf_counter() - started) * 1000
    if not await _chart(slices, result, ask):
        return
    slices.end()
    timings.append({"compute_ms": compute * 1000, "table_ms": table_ms,
                    "wall_ms": (time.perf_counter() - started) * 1000, "longest_slice_ms": slices.longest * 1000,
                    "rows": len(result.rows), "gpus": len(ask.gpus)})
    _done()


async def _chart(slices: _Slices, result, ask) -> bool:
    """The chart's lines, a GPU type per slice; False when a newer plan stopped it."""
    drawn = plan_chart.drawn_gpus(result.rows, ask.gpus)
    names = {row.gpu: row.gpu_name for row in result.rows}
    curves = []
    for gpu_id in drawn:
        if await slices.pause():
            return False
        try:
            curves.append((names.get(gpu_id, gpu_id), planner.curve(ask, gpu_id)))
        except InputError:
            continue
    plan_chart.render(gpu_counts(ask.max_gpus), curves, len(ask.gpus))
    return True


def _done() -> None:
    plan_table.mark_current()
    _hint()
    put("#plan", "done", "state")


def _refused(error: InputError) -> None:
    """A plan input the plan refuses (a rate with no output tokens): said beside its field and
    in the section's status; the last plan stays."""
    _clear_field_errors()
    message = in_page_words(error.message)
    target = q(f"#error-{error.field}")
    if target is not None:
        put(f"#error-{error.field}", message)
        control = q(f"#{error.field}")
        if control is not None:
            control.setAttribute("aria-invalid", "true")
        _field_errors.add(error.field)
    _not_planned(f"Not planned: {label(error.field)}: {message}. The table is the last plan's.")


def _not_planned(text: str) -> None:
    put("#plan-status", text)
    put("#plan", "refused", "state")
    put("#plan-best", True, "hidden")


def _clear_field_errors() -> None:
    for field in _field_errors:
        put(f"#error-{field}", "")
        control = q(f"#{field}")
        if control is not None:
            control.removeAttribute("aria-invalid")
    _field_errors.clear()


def _hint() -> None:
    """A verdict that does not fit names what the plan says is needed: the user's own GPU type's
    smallest deployment that fits, then the plan's fewest-GPU row (plan_report.pointer)."""
    result = _shown["plan"]
    fits = None if state.current is None else state.current.get("fits")
    if fits is not False or result is None or state.stale:
        put("#plan-best", True, "hidden")
        return
    evaluation = state.evaluation
    why = None if evaluation is None or evaluation.result is None else \
        withheld(evaluation.scenario, evaluation, str(evaluation.values.get("unit", "gib")).lower())
    if why is not None:             # a measured KV memory: the plan answers another question
        put("#plan-best-text", f"What you need is not sized here: {why}.")
        put("#plan-best", False, "hidden")
        return
    needed = pointer(result, evaluation.values if evaluation else {})
    put("#plan-best-text", f"What you need: {needed}." if needed else
        f"No deployment of up to {_shown['ask'].max_gpus:,} GPUs fits either.")
    put("#plan-best", False, "hidden")


def toggle_everything() -> None:
    """The whole table on demand, or back to the smallest per GPU type."""
    everything = _mode["everything"] = not _mode["everything"]
    put("#plan-everything", "true" if everything else "false", "aria-pressed")
    put("#plan-everything", "Show the smallest per GPU type" if everything else "Show every deployment")
