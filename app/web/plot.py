"""One way to draw a chart (uPlot, vendored) for every section: lines of exact values over an x
axis, log scales. Each line is drawn in the style of what it is (kvcalc.reports.sweep.SERIES_STYLES: a
colour for each theme and a dash, never picked by the line's place), the scenario's own line
thicker and labelled "(current)"; marks show the chosen context or batch (a vertical line, points
on the lines there). The legend names the lines and never changes; the exact figures under the
pointer go in a tooltip over the plot (static/legend.js), so hovering moves nothing on the page.
The sections pass the values and say how to write them; nothing is computed here."""

import json
from typing import NamedTuple

import js
from pyscript import document, window
from pyscript.ffi import to_js

from kvcalc.reports.sweep import SERIES_STYLES, style_key

from web.dom import absent, js_obj, proxy

HEIGHT = 260
WIDTH, CURRENT_WIDTH = 2, 4         # px: a line, and the scenario's own
_charts = {}            # chart id -> (key of its series, the uPlot instance)
_exact = {}             # chart id -> [(kind, exact values)] per series, for the tooltip and tests
_axes = {}              # chart id -> (x values, how to write an x, how to write a (kind, value), shapes)
_last = {}              # chart id -> the last call's arguments, to redraw in the other theme
_text = [None]


class Line(NamedTuple):
    label: str
    kind: str               # how its values are written: the section's write_value(kind, value)
    values: list            # exact, one per x (None: no point there)
    key: str                # what it is: its style (sweep.SERIES_STYLES)
    shape: str = "points"   # "points" a line with its points, "flat" a reference line, "plain" a
    #                         bare line, "dot" single marked points
    current: bool = False   # the scenario's own: thicker, labelled "(current)"


class Mark(NamedTuple):
    x: object               # where, in x's units
    text: str               # said beside the vertical line
    dots: tuple = ()        # (line index, exact y): points drawn on those lines at x


def dark() -> bool:
    return bool(window.matchMedia("(prefers-color-scheme: dark)").matches)


def colour(key: str, is_dark: bool) -> str:
    light, night, _ = SERIES_STYLES[style_key(key)]
    return night if is_dark else light


def _tooltip_text(chart_id, series_index, index):
    xs, write_x, write_value, shapes = _axes.get(chart_id, ([], str, None, ()))
    if series_index == 0:
        return write_x(xs[index]) if index < len(xs) else ""
    lines = _exact.get(chart_id, [])
    if series_index - 1 >= len(lines) or index >= len(xs):
        return ""
    kind, exact = lines[series_index - 1]
    value = exact[index]
    if value is None and shapes[series_index - 1] == "dot":
        return ""                   # a single point says nothing at the other x
    return write_value(kind, value)


def plot(chart_id: str, x_label: str, xs: list, y_label: str, lines: list, scale, write_x, write_value,
         x_log: int = 2, marks: tuple = (), x_end=None) -> None:
    """Draw or redraw one chart. `lines` are Line, their values divided by `scale` for drawing;
    `marks` are Mark. No line is drawn past `x_end` (the tooltip still gives the exact values there)."""
    uplot = getattr(window, "uPlot", None)
    if absent(uplot):
        return
    _last[chart_id] = (x_label, xs, y_label, lines, scale, write_x, write_value, x_log, marks, x_end)
    _exact[chart_id] = [(line.kind, line.values) for line in lines]
    _axes[chart_id] = (xs, write_x, write_value, tuple(line.shape for line in lines))
    beyond = [x_end is not None and x > x_end for x in xs]
    data = [[float(x) for x in xs]] + [
        [None if v is None or v <= 0 or past else float(v) / scale for v, past in zip(line.values, beyond)]
        for line in lines]
    is_dark = dark()
    style = window.getComputedStyle(document.body)
    halo = style.backgroundColor
    if absent(getattr(window, "kvcalcMarks", None)):
        window.kvcalcMarks = js_obj({})
    js.Reflect.set(window.kvcalcMarks, chart_id, js_obj([
        {"x": float(m.x), "text": m.text, "color": colour("mark", is_dark), "halo": halo,
         "dash": list(SERIES_STYLES["mark"][2]),
         "dots": [{"y": float(y) / scale, "color": colour(lines[i].key, is_dark)} for i, y in m.dots
                  if y is not None and y > 0]}
        for m in marks]))
    key = (x_label, y_label, x_log, is_dark, tuple((line.label, line.key, line.shape, line.current) for line in lines))
    existing = _charts.get(chart_id)
    if existing is not None and existing[0] == key:
        existing[1].setData(to_js(data))
        return
    if existing is not None:
        existing[1].destroy()
    ink, grid = style.color, style.getPropertyValue("--line").strip() or "#888"
    box = document.getElementById(chart_id)
    if _text[0] is None:
        _text[0] = proxy(_tooltip_text)
    series = [{"label": x_label}]
    for line in lines:
        _, _, dash = SERIES_STYLES[style_key(line.key)]
        stroke = colour(line.key, is_dark)
        dot = line.shape == "dot"
        item = {"label": line.label + (" (current)" if line.current else ""), "stroke": stroke,
                "width": CURRENT_WIDTH if line.current else WIDTH, "spanGaps": False, "kvShape": line.shape,
                "points": {"show": line.shape in ("points", "dot"), "size": 11 if dot else 7 if line.current else 5,
                           "fill": stroke if dot else halo}}
        if dash and not dot:
            item["dash"] = list(dash)
        series.append(item)
    axis = {"stroke": ink, "grid": {"stroke": grid, "width": 1}, "ticks": {"stroke": grid, "width": 1}}
    options = {
        "width": max(260, int(box.clientWidth or 600)), "height": HEIGHT,
        "padding": [10, 30, None, None],          # room for the last x label at the right edge
        "scales": {"x": {"time": False, "distr": 3, "log": x_log}, "y": {"distr": 3, "log": 10}},
        "axes": [dict(axis, label=x_label), dict(axis, label=y_label, size=70)],
        "series": series, "legend": {"live": False},
        "plugins": [window.kvcalcChartPlugin(chart_id, _text[0])],
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


def _retheme(*_) -> None:
    # The colours are read when a chart is made: a change of the system's theme remakes each
    # (the theme is part of a chart's key).
    for chart_id, args in list(_last.items()):
        plot(chart_id, *args)


if not absent(getattr(window, "matchMedia", None)):
    window.matchMedia("(prefers-color-scheme: dark)").addEventListener("change", proxy(_retheme))
