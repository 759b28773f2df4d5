"""The sections beyond the answer, each a fold closed until opened, drawn only while open: a fold
closed is neither imported nor drawn at start-up, and is drawn for the figures on screen when it
opens (issue 40: the first figures wait for nothing they do not show). The charts and the time
are drawn with the headline figures; the others are side steps of the update (web.loop)."""

import sys

from pyscript import window

from web import sections, state
from kvcalc.words import size

from web.dom import el, guarded, proxy, put, view


def _charts() -> None:
    from web import charts
    scenario, evaluation = state.computed
    charts.render(scenario, state.unit, evaluation)


def _time() -> None:
    from web import timing_view
    scenario, evaluation = state.computed
    timing_view.render(state.texts, scenario, evaluation, state.current["fits"])


def _designs_head(table: str) -> None:
    put(f"{table} .max-head", f"Max requests ({state.current['sized_as']})")


def _designs() -> None:
    from kvcalc.reports.compare import attention_variants
    _designs_head("#attention-table")
    designs = attention_variants(state.computed[0])
    _rows("#attention-table tbody", designs, why=True)
    put("#designs-note", "Why each design's line lies where it does: " + "; ".join(
        f"{row.label}, {row.why}" for row in designs if row.why) + "." if designs else "")


def _precisions() -> None:
    from kvcalc.reports.compare import precision_rows
    _designs_head("#precision-table")
    _rows("#precision-table tbody", precision_rows(state.computed[0]))


def _compare() -> None:
    from web import compare
    compare.render()
    compare.update_pin_button()


def _takeaway() -> None:
    from web import takeaway
    takeaway.render_launch(*state.computed)
    takeaway.render_export()


def _source() -> None:
    from web import source_view
    source_view.render(*state.computed, state.unit)


def _together() -> None:
    from web import together_view
    together_view.draw()


def _rows(selector: str, rows, why: bool = False) -> None:
    shown = []
    for row in rows:
        e = row.evaluation
        cells = [row.label + (" (current)" if row.current else ""), row.detail]
        if e is None:
            cells += [f"n/a: {row.refused}", "", ""]
        else:
            cells += [f"{e.result.kv_bytes_per_token:,} B", size(e.result.kv_bytes_per_request, state.unit),
                      "n/a" if e.capacity is None else f"{e.capacity:,}"]
        cells += [row.why] if why else []
        shown.append(("current" if row.current else "", [(text, None, "") for text in cells]))
    view(selector).show(shown)


# Each fold's drawing, by its name (data-fold); the ones the headline figures carry come first.
WITH_FIGURES = {"charts": _charts, "time": _time}
SIDE = {"designs": _designs, "precisions": _precisions, "compare": _compare, "takeaway": _takeaway,
        "source": _source, "together": _together}
DRAWS = {**WITH_FIGURES, **SIDE}


_drawn_for = {}         # fold name -> the computation (state.computed) it was last drawn for


def _draw(name: str) -> None:
    DRAWS[name]()
    _drawn_for[name] = state.computed


def _while_open(name: str):
    def step() -> None:
        if sections.is_open(name):
            _draw(name)
    step.__name__ = f"draw_{name}"
    return step


def draw_with_figures() -> None:
    for name in WITH_FIGURES:
        _while_open(name)()


def opened(name: str) -> None:
    """A fold just opened: drawn for the figures on screen, unless it is already (the same
    update drew it while it was open)."""
    if state.computed is not None and _drawn_for.get(name) is not state.computed:
        _draw(name)


SIDE_STEPS = tuple(_while_open(name) for name in SIDE)


def pin_button() -> None:
    if "web.compare" in sys.modules:        # drawn with its fold; a closed fold's button waits
        sys.modules["web.compare"].update_pin_button()


def chart_exact(chart_id):
    from web import plot
    return plot.chart_exact(chart_id)


def _lazy(module: str, name: str):
    """An event handler of a fold's own module, imported when first used (the fold is open by
    then: its buttons are inside it)."""
    def handler(*args):
        __import__(f"web.{module}")
        return getattr(sys.modules[f"web.{module}"], name)(*args)
    return handler


def on_pin(fragment: str) -> None:
    from web import compare
    compare.pin(fragment)


def on_unpin(event) -> bool:
    from web import compare
    return compare.unpin(event)


def wire(on) -> None:
    for name in DRAWS:
        sections.ON_OPEN[name] = guarded(lambda name=name: opened(name))
    on(window, "resize", sections.resize_charts)
    on(el(".takeaway"), "click", _lazy("takeaway", "on_click"))
    on(el("#export-format"), "change", lambda *_: _lazy("takeaway", "render_export")())
    on(el("#export-download"), "click", _lazy("takeaway", "on_download"))
    on(el("#export-copy"), "click", _lazy("takeaway", "on_copy_export"))
    window.kvcalcChartExact = proxy(chart_exact)
