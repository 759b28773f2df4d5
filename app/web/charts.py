"""The two charts (uPlot, vendored): KV cache per GPU against context for each attention
design, and requests that fit against context for each KV precision. The series come from the
engine's sweep; the legend names each line and shows exact values only under the pointer."""

import json

import js
from pyscript import document, window
from pyscript.ffi import to_js

from kvcalc.report import size
from kvcalc.sweep import concurrency_series, context_points, memory_series

from web.dom import absent, js_obj, proxy, put

UNIT_SCALE = {"gib": (1 << 30, "GiB"), "gb": (10 ** 9, "GB")}
PALETTE = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b")
DASHES = (None, [8, 4], [2, 3], [10, 4, 2, 4], [1, 3], [4, 4])
HEIGHT = 260
_charts = {}            # chart id -> (key of its series, the uPlot instance)
_exact = {}             # chart id -> [(kind, exact values)] per series, for the legend and tests
_now = {"contexts": [], "unit": "gib", "legend": None}


def _tokens(value) -> str:
    value = int(value)
    for scale, suffix in ((1 << 20, "M"), (1 << 10, "K")):
        if value >= scale and value % scale == 0:
            return f"{value // scale}{suffix}"
    return f"{value:,}"


def _legend_value(chart_id, series_index, index):
    """Legend text under the pointer: the exact figure in the chosen unit."""
    if series_index == 0:
        return _tokens(_now["contexts"][index])
    lines = _exact.get(chart_id, [])
    if series_index - 1 >= len(lines):
        return "–"
    kind, exact = lines[series_index - 1]
    v = exact[index]
    if v is None:
        return "does not fit" if kind == "requests" else "–"
    return f"{v:,} requests" if kind == "requests" else f"{size(v, _now['unit'])} ({v:,} B)"


def _plot(chart_id: str, y_label: str, lines: list, contexts: list, scale: int) -> None:
    """Draw or redraw one chart: each line is (label, kind, exact values, flat)."""
    uplot = getattr(window, "uPlot", None)
    if absent(uplot):
        return
    _exact[chart_id] = [(kind, exact) for _, kind, exact, _ in lines]
    data = [contexts] + [[None if v is None or v <= 0 else v / scale for v in exact]
                         for _, _, exact, _ in lines]
    key = (y_label, tuple(label for label, _, _, _ in lines))
    existing = _charts.get(chart_id)
    if existing is not None and existing[0] == key:
        existing[1].setData(to_js(data))
        return
    if existing is not None:
        existing[1].destroy()
    style = window.getComputedStyle(document.body)
    ink, grid = style.color, style.getPropertyValue("--line").strip() or "#888"
    box = document.getElementById(chart_id)
    if _now["legend"] is None:
        _now["legend"] = window.kvcalcLegend(proxy(_legend_value))
    series = [{"label": "context", "value": _now["legend"]}]
    for i, (label, kind, _, flat) in enumerate(lines):
        item = {"label": label, "stroke": PALETTE[i % len(PALETTE)], "width": 2, "value": _now["legend"],
                "spanGaps": False, "points": {"show": not flat, "size": 5}}
        dash = [6, 4] if flat else DASHES[i % len(DASHES)]
        if dash:
            item["dash"] = dash
        series.append(item)
    axis = {"stroke": ink, "grid": {"stroke": grid, "width": 1}, "ticks": {"stroke": grid}}
    options = {
        "width": max(260, int(box.clientWidth or 600)), "height": HEIGHT,
        "scales": {"x": {"time": False, "distr": 3, "log": 2}, "y": {"distr": 3, "log": 10}},
        "axes": [dict(axis, label="context length (tokens)"), dict(axis, label=y_label, size=70)],
        "series": series, "legend": {"live": True},
    }
    plot = uplot.new(js_obj(options), to_js(data), box)
    _charts[chart_id] = (key, plot)
    registry = getattr(window, "kvcalcCharts", None)
    if absent(registry):
        window.kvcalcCharts = registry = js_obj({})
    js.Reflect.set(registry, chart_id, plot)     # for the tests: the library's own data


def chart_exact(chart_id) -> str:
    """The exact ints behind a chart's lines, as JSON (the library holds unit-scaled floats);
    asked for by the tests, so nothing is converted on every update."""
    return json.dumps(_exact.get(str(chart_id), []))


def resize(*_) -> None:
    for chart_id, (_, plot) in _charts.items():
        width = document.getElementById(chart_id).clientWidth
        if width:
            plot.setSize(js_obj({"width": max(260, int(width)), "height": HEIGHT}))


def render(scenario, u: str) -> None:
    scale, unit_name = UNIT_SCALE[u]
    _now["unit"] = u
    contexts = _now["contexts"] = context_points(scenario)
    mem = memory_series(scenario, contexts)
    lines = [(line["label"], "bytes", line["bytes"], False) for line in mem["lines"]]
    for label, value in (("weights per GPU", mem["weights_bytes_per_gpu"]),
                         ("KV budget per GPU", mem["kv_budget_bytes_per_gpu"])):
        if value is not None and value > 0:
            lines.append((label, "bytes", [value] * len(contexts), True))
    _plot("chart-memory", f"{unit_name} per GPU", lines, contexts, scale)

    conc = concurrency_series(scenario, contexts)
    put("#concurrency-note", "" if conc["lines"] else
        "Choose a GPU (or its memory) and the weights to see how many requests fit.")
    _plot("chart-concurrency", "max concurrent requests",
          [(line["label"], "requests", line["requests"], False) for line in conc["lines"]], contexts, 1)
