"""One way to draw a chart (uPlot, vendored) for every section: lines of exact values over an x
axis, log scales, a legend that names each line and shows the exact figure only under the
pointer. The sections pass the values and say how to write them; nothing is computed here."""

import json

import js
from pyscript import document, window
from pyscript.ffi import to_js

from web.dom import absent, js_obj, proxy

PALETTE = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b")
DASHES = (None, [8, 4], [2, 3], [10, 4, 2, 4], [1, 3], [4, 4])
HEIGHT = 260
_charts = {}            # chart id -> (key of its series, the uPlot instance)
_exact = {}             # chart id -> [(kind, exact values)] per series, for the legend and tests
_axes = {}              # chart id -> (x values, how to write an x, how to write a (kind, value))
_legend = [None]


def _legend_value(chart_id, series_index, index):
    xs, write_x, write_value = _axes.get(chart_id, ([], str, None))
    if series_index == 0:
        return write_x(xs[index]) if index < len(xs) else "–"
    lines = _exact.get(chart_id, [])
    if series_index - 1 >= len(lines):
        return "–"
    kind, exact = lines[series_index - 1]
    return write_value(kind, exact[index])


def plot(chart_id: str, x_label: str, xs: list, y_label: str, lines: list, scale, write_x, write_value,
         x_log: int = 2, points: list | None = None) -> None:
    """Draw or redraw one chart. Each line is (label, kind, exact values, flat); values are
    divided by `scale` for drawing. `points` marks single points: (label, x, y)."""
    uplot = getattr(window, "uPlot", None)
    if absent(uplot):
        return
    _exact[chart_id] = [(kind, exact) for _, kind, exact, _ in lines]
    _axes[chart_id] = (xs, write_x, write_value)
    data = [[float(x) for x in xs]] + [[None if v is None or v <= 0 else float(v) / scale for v in exact]
                                       for _, _, exact, _ in lines]
    key = (x_label, y_label, tuple(label for label, _, _, _ in lines))
    existing = _charts.get(chart_id)
    if existing is not None and existing[0] == key:
        existing[1].setData(to_js(data))
        return
    if existing is not None:
        existing[1].destroy()
    style = window.getComputedStyle(document.body)
    ink, grid = style.color, style.getPropertyValue("--line").strip() or "#888"
    box = document.getElementById(chart_id)
    if _legend[0] is None:
        _legend[0] = window.kvcalcLegend(proxy(_legend_value))
    series = [{"label": x_label, "value": _legend[0]}]
    for i, (label, kind, _, style) in enumerate(lines):
        # style: False a line with its points, True a flat reference (dashed), "line" a plain
        # line, "dot" a single marked point.
        item = {"label": label, "stroke": PALETTE[i % len(PALETTE)], "width": 2, "value": _legend[0],
                "spanGaps": False, "points": {"show": style in (False, "dot"), "size": 11 if style == "dot" else 5}}
        dash = [6, 4] if style is True else None if style in ("line", "dot") else DASHES[i % len(DASHES)]
        if dash:
            item["dash"] = dash
        if style == "dot":
            item["points"]["fill"] = PALETTE[i % len(PALETTE)]
        series.append(item)
    axis = {"stroke": ink, "grid": {"stroke": grid, "width": 1}, "ticks": {"stroke": grid}}
    options = {
        "width": max(260, int(box.clientWidth or 600)), "height": HEIGHT,
        "scales": {"x": {"time": False, "distr": 3, "log": x_log}, "y": {"distr": 3, "log": 10}},
        "axes": [dict(axis, label=x_label), dict(axis, label=y_label, size=70)],
        "series": series, "legend": {"live": True},
    }
    chart = uplot.new(js_obj(options), to_js(data), box)
    _charts[chart_id] = (key, chart)
    registry = getattr(window, "kvcalcCharts", None)
    if absent(registry):
        window.kvcalcCharts = registry = js_obj({})
    js.Reflect.set(registry, chart_id, chart)     # for the tests: the library's own data


def chart_exact(chart_id) -> str:
    """The exact values behind a chart's lines, as JSON (the library holds scaled floats);
    asked for by the tests, so nothing is converted on every update."""
    return json.dumps(_exact.get(str(chart_id), []), default=float)     # Fractions as numbers


def resize(*_) -> None:
    for chart_id, (_, chart) in _charts.items():
        width = document.getElementById(chart_id).clientWidth
        if width:
            chart.setSize(js_obj({"width": max(260, int(width)), "height": HEIGHT}))
