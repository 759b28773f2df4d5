"""The browser module: the only code that touches the page.

It reads the form, asks the engine (the `kvcalc` package, the same one the CLI runs), and
writes text into the page. Every value from a user, a link or a file goes in through
textContent or a form control's value, never as markup.
"""

import json

import js
from pyscript import document, window
from pyodide.ffi import jsnull
from pyscript.ffi import create_proxy, to_js

from kvcalc import link
from kvcalc.compare import attention_variants, compare_table, precision_rows
from kvcalc.errors import InputError
from kvcalc.export import export
from kvcalc.hfconfig import parse_config_text
from kvcalc.launch import ENGINES, launch
from kvcalc.hfconfig import MAX_CONFIG_BYTES
from kvcalc.options import (MANUAL_FIELDS, MLA_ONLY, MODEL_INPUTS, OPTION_BY_NAME, OPTIONS, canonical_value,
                            evaluate, form_values, parse_value)
from kvcalc.report import page_texts, size, to_json
from kvcalc.sweep import concurrency_series, context_points, memory_bar, memory_series

HTML = document.documentElement
_proxies = []          # keep JS callbacks alive for the page's lifetime
_state = {"config": None, "config_error": None, "last_hash": None, "pins": [], "unit": "gib",
          "current": None, "export": "", "valid_once": False, "stale": False}
_pinned = {}           # pin fragment -> its to_json column (or an error text), computed once
_charts = {}
UNIT_SCALE = {"gib": (1 << 30, "GiB"), "gb": (10 ** 9, "GB")}


def absent(value) -> bool:
    # Pyodide hands JS null over as jsnull, not None.
    return value is None or value is jsnull


def q(selector):
    """The element, or None."""
    element = document.querySelector(selector)
    return None if absent(element) else element


_elements = {}          # selector -> element; the page's structure is fixed, so look each up once
_written = {}           # (selector, what) -> the last value written there


def el(selector):
    element = _elements.get(selector)
    if element is None:
        element = _elements[selector] = q(selector)
    return element


def put(selector: str, value: str, what: str = "text") -> None:
    """Write a text, a data-* value or a class only when it differs from the last write: every
    call into the page costs about 10 us from Pyodide, and most of them would change nothing."""
    key = (selector, what)
    if _written.get(key) == value:
        return
    _written[key] = value
    element = el(selector)
    if what == "text":
        element.textContent = value
    elif what == "class":
        element.className = value
    elif what == "hidden":
        element.hidden = value
    elif what == "disabled":
        element.disabled = value
    elif what == "width":
        element.style.width = value
    else:
        setattr(element.dataset, what, value)


class Rows:
    """A tbody or list whose rows are built once and rewritten cell by cell where text changed.
    A row is (row class, [(text, data-value or None, cell class), ...])."""

    def __init__(self, container, item_tag="tr", first_cell_tag="th", cell_tag="td"):
        self.container, self.item_tag = container, item_tag
        self.first_cell_tag, self.cell_tag = first_cell_tag, cell_tag
        self.items, self.shape, self.last = [], None, []

    def show(self, rows) -> None:
        shape = [len(cells) for _, cells in rows]
        if shape != self.shape:
            self._build(rows)
            return
        for (item, cells), old, new in zip(self.items, self.last, rows):
            if old[0] != new[0]:
                item.className = new[0]
            for cell, before, after in zip(cells, old[1], new[1]):
                if before[0] != after[0]:
                    cell.textContent = after[0]
                if before[1] != after[1]:
                    cell.dataset.value = after[1] or ""
                if before[2] != after[2]:
                    cell.className = after[2]
        self.last = rows

    def _build(self, rows) -> None:
        self.container.replaceChildren()
        self.items = []
        for row_class, cells in rows:
            item = document.createElement(self.item_tag)
            item.className = row_class
            made = []
            for i, (text, value, cell_class) in enumerate(cells):
                cell = item if self.item_tag == "li" else document.createElement(
                    self.first_cell_tag if i == 0 else self.cell_tag)
                if self.item_tag != "li":
                    if i == 0 and self.first_cell_tag == "th":
                        cell.scope = "row"
                    item.appendChild(cell)
                cell.textContent = text
                if value is not None:
                    cell.dataset.value = value
                if cell_class:
                    cell.className = cell_class
                made.append(cell)
            self.container.appendChild(item)
            self.items.append((item, made))
        self.shape, self.last = [len(cells) for _, cells in rows], rows


def lines_of(texts) -> list:
    return [("", [(text, None, "")]) for text in texts]


_views = {}


def view(selector, **kw) -> Rows:
    if selector not in _views:
        _views[selector] = Rows(el(selector), **kw)
    return _views[selector]


def on(element, event, handler):
    proxy = create_proxy(handler)
    _proxies.append(proxy)
    element.addEventListener(event, proxy)


# ---- reading the form ---------------------------------------------------------------

def unit() -> str:
    return _fields.get("unit", "gib")


_fields = {}            # option name -> the form's current text, kept in step with the controls


def sync_fields() -> None:
    """Read every control (on start and after the page itself rewrote the form)."""
    _fields.clear()
    for element in document.querySelectorAll("[data-option]"):
        name = element.dataset.option
        if element.type != "radio" or element.checked:
            _fields[name] = element.value
    _fields["attention-kind"] = el("#attention-kind").value


def note_field(target) -> None:
    """One control changed: read just that one."""
    name = None if absent(target) else getattr(target.dataset, "option", None)
    if absent(name) or not name:
        if not absent(target) and target.id == "attention-kind":
            _fields["attention-kind"] = target.value
        return
    if target.type != "radio" or target.checked:
        _fields[name] = target.value


def read_form() -> dict:
    """The inputs as the engine's raw values, keyed by option name."""
    fields = {k: v for k, v in _fields.items() if k != "attention-kind"}
    return form_values(fields, _fields.get("attention-kind", "gqa"), _state["config"])


def link_values(raw: dict) -> dict:
    """What goes into the share link: every input that differs from the empty form."""
    defaults = {o.name: o.default for o in OPTIONS}
    return {k: v for k, v in raw.items() if str(v) != str(defaults.get(k))}


# ---- writing the form (from a link) ---------------------------------------------------

def write_form(raw: dict) -> None:
    """Show a link's inputs. A key the link leaves out takes the CLI's default, so the page and
    `kvcalc --link` read the same link the same way."""
    defaults = {o.name: o.default for o in OPTIONS}
    manual = [name for name in MANUAL_FIELDS if name in raw]
    if "tp" in raw and "gpus" not in raw:
        # The CLI derives gpus from tp x pp; the page's GPU count must say the same.
        tp = parse_value(OPTION_BY_NAME["tp"], raw["tp"])
        pp = parse_value(OPTION_BY_NAME["pp"], raw.get("pp", "1"))
        raw = dict(raw, gpus=str(tp * pp))
    for element in document.querySelectorAll("[data-option]"):
        name = element.dataset.option
        value = raw.get(name, defaults.get(name))
        try:
            value = canonical_value(name, value)
        except InputError:
            pass
        if element.type == "radio":
            element.checked = element.value == (value or "gib")
        elif name != "model" and (name not in MANUAL_FIELDS or manual):
            element.value = "" if value is None else str(value)
    if "hf-config" in raw:
        set_model_choice("config")
        _state["config"] = raw["hf-config"]
        pretty = json.dumps(raw["hf-config"], indent=2)
        # A config near the size limit goes in compact, so the page can read its own link back.
        q("#hf-config").value = pretty if len(pretty) <= MAX_CONFIG_BYTES else json.dumps(raw["hf-config"])
    elif manual:
        set_model_choice("custom")
        q("#attention-kind").value = "mla" if any(n in raw for n in MLA_ONLY) else "gqa"
    elif "model" in raw:
        set_model_choice(canonical_value("model", raw["model"]))
    show_model_fields()
    sync_fields()


def set_model_choice(value: str) -> None:
    select = q("#model")
    wanted = value.lower()
    for option in select.options:
        if option.value.lower() == wanted:
            select.value = option.value
            return
    # An id that is valid for the engine (an alias) but not listed: add it as typed, as text.
    group = q("#model-other")
    if group is None:
        group = document.createElement("optgroup")
        group.id = "model-other"
        group.label = "From a link"
        select.insertBefore(group, q("#model optgroup[label='Your own']"))
    option = document.createElement("option")
    option.value = value
    option.textContent = value
    group.appendChild(option)
    select.value = value


def show_model_fields(*_):
    choice = q("#model").value
    q("#custom-fields").hidden = choice != "custom"
    q("#config-fields").hidden = choice != "config"
    mla = q("#attention-kind").value == "mla"
    for element in document.querySelectorAll(".kind-mla"):
        element.hidden = not mla
    for element in document.querySelectorAll(".kind-gqa"):
        element.hidden = mla


# ---- rendering -----------------------------------------------------------------------



def render(evaluation, u: str) -> None:
    scenario, result = evaluation.scenario, evaluation.result
    texts = page_texts(scenario, result, u)
    for key, (value, text) in texts["metrics"].items():
        selector = f'[data-metric="{key}"]'
        put(selector, text)
        put(selector, value, "value")
    put("#model-line", texts["model_line"])
    view("#formula", item_tag="li").show(lines_of(texts["formula"]))
    for key, text in texts["live"].items():
        put(f'[data-live="{key}"]', text)
    render_charts(scenario, result, u)
    _state["current"] = texts["data"]
    _state["export_args"] = (scenario, result, u)
    schedule_side_sections()


def schedule_side_sections() -> None:
    """The side tables, comparison, launch commands and export follow in the next task, so the
    headline figures and charts reach the screen first; <html data-pending> says they are due."""
    if not _state.get("side_due"):
        _state["side_due"] = True
        mark_pending()
        window.setTimeout(_side_sections_proxy, 0)


def render_side_sections(*_) -> None:
    _state["side_due"] = False
    scenario, result, u = _state["export_args"]
    render_rows("#attention-table tbody", attention_variants(scenario), u)
    render_rows("#precision-table tbody", precision_rows(scenario), u)
    render_compare()
    render_launch(scenario)
    render_export()
    mark_pending()


_side_sections_proxy = create_proxy(render_side_sections)


def js_obj(value):
    return to_js(value, dict_converter=js.Object.fromEntries)


def _proxy(fn):
    proxy = create_proxy(fn)
    _proxies.append(proxy)
    return proxy


PALETTE = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b")
DASHES = (None, [8, 4], [2, 3], [10, 4, 2, 4], [1, 3], [4, 4])


def _tokens(value) -> str:
    value = int(value)
    for scale, suffix in ((1 << 20, "M"), (1 << 10, "K")):
        if value >= scale and value % scale == 0:
            return f"{value // scale}{suffix}"
    return f"{value:,}"


def _legend_value(chart_id, series_index, index):
    """Legend text under the cursor: the exact figure in the chosen unit."""
    if series_index == 0:
        return _tokens(_state["contexts"][index])
    chart = _charts_exact.get(chart_id, [])
    if series_index - 1 >= len(chart):
        return "–"
    kind, exact = chart[series_index - 1]
    v = exact[index]
    if v is None:
        return "does not fit" if kind == "requests" else "–"
    return f"{v:,} requests" if kind == "requests" else f"{size(v, _state['unit'])} ({v:,} B)"


_charts_exact = {}      # chart id -> [(kind, exact values)] per series, for the legend and tests


def _plot(chart_id: str, y_label: str, lines: list, contexts: list, scale: int) -> None:
    """Draw or redraw one chart: each line is (label, kind, exact values, flat)."""
    uplot = getattr(window, "uPlot", None)
    if absent(uplot):
        return
    _charts_exact[chart_id] = [(kind, exact) for _, kind, exact, _ in lines]
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
    ink, line = style.color, style.getPropertyValue("--line").strip() or "#888"
    box = document.getElementById(chart_id)
    legend_value = _state.get("legend")
    if legend_value is None:
        legend_value = _state["legend"] = window.kvcalcLegend(_proxy(_legend_value))
    series = [{"label": "context", "value": legend_value}]
    for i, (label, kind, _, flat) in enumerate(lines):
        colour = PALETTE[i % len(PALETTE)]
        item = {"label": label, "stroke": colour, "width": 2, "value": legend_value, "spanGaps": False,
                "points": {"show": not flat, "size": 5}}
        dash = [6, 4] if flat else DASHES[i % len(DASHES)]
        if dash:
            item["dash"] = dash
        series.append(item)
    axis = {"stroke": ink, "grid": {"stroke": line, "width": 1}, "ticks": {"stroke": line}}
    options = {
        "width": max(280, int(box.clientWidth or 600)), "height": 280,
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
    return json.dumps(_charts_exact.get(str(chart_id), []))


def _resize_charts(*_) -> None:
    for chart_id, (_, plot) in _charts.items():
        width = document.getElementById(chart_id).clientWidth
        if width:
            plot.setSize(js_obj({"width": max(280, int(width)), "height": 280}))


def render_charts(scenario, result, u: str) -> None:
    scale, unit_name = UNIT_SCALE[u]
    contexts = _state["contexts"] = context_points(scenario)
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
    render_bar(result, scenario, u)


def render_bar(result, scenario, u: str) -> None:
    bar = memory_bar(result, scenario)
    shown = {key: bar[key] for key in ("weights", "kv", "overhead")}
    shown["free"] = max(0, bar["free"]) if bar["free"] is not None else 0
    whole = bar["total"] or sum(shown.values()) or 1
    legends = {}
    for key, value in shown.items():
        put(f"#bar-{key}", f"{min(100, value * 100 / whole):.3f}%", "width")
        put(f"#bar-{key}", "" if bar[key] is None else str(bar[key]), "bytes")
        legends[key] = "n/a (no GPU chosen)" if bar[key] is None else size(bar[key], u) if bar[key] >= 0 \
            else f"none: over by {size(-bar[key], u)}"
        put(f"#legend-{key}", legends[key])
    put("#memory-bar", "true" if bar["fits"] else "false", "fits")
    label = ", ".join(f"{name} {legends[key]}" for key, name in
                      (("weights", "weights"), ("kv", "KV cache"), ("overhead", "overhead"), ("free", "free")))
    label = "Per-GPU memory: " + label + ("" if bar["fits"] else "; does not fit")
    if _written.get(("#memory-bar", "label")) != label:
        _written[("#memory-bar", "label")] = label
        el("#memory-bar").setAttribute("aria-label", label)


# ---- compare, launch commands, exports -------------------------------------------------

def pinned_column(fragment: str):
    """A pin's figures (or why it has none) and what its link held that was ignored."""
    if fragment not in _pinned:
        _, evaluation, dropped = link.load(fragment)
        column = to_json(evaluation.scenario, evaluation.result) if evaluation.ok else \
            "; ".join(f"{e.field}: {e.message}" for e in evaluation.errors)
        _pinned[fragment] = (column, "; ".join(f"{key}: {why}" for key, why in dropped))
    return _pinned[fragment][0]


def pin_notes() -> list:
    notes = []
    for n, fragment in enumerate(_state["pins"], 1):
        pinned_column(fragment)
        column, dropped = _pinned[fragment]
        if isinstance(column, str):
            notes.append(f"Pin {n} has no figures: {column}")
        elif dropped:
            notes.append(f"Pin {n} ignored {dropped}")
    return notes


def _compare_text(kind: str, value, u: str) -> str:
    if value is None:
        return "n/a"
    if kind == "bytes":
        return size(value, u)
    if kind == "count":
        return f"{value:,}"
    return str(value)


def render_compare() -> None:
    u = _state["unit"]
    columns, headers = [_state["current"]], ["Current"]
    for n, fragment in enumerate(_state["pins"], 1):
        column = pinned_column(fragment)
        columns.append(column if isinstance(column, dict) else {})
        headers.append(f"Pin {n}")
    if _written.get(("#compare-table", "headers")) != headers:
        _written[("#compare-table", "headers")] = headers
        head = el("#compare-table thead tr")
        head.replaceChildren()
        for n, text in enumerate(["Figure"] + headers):
            th = document.createElement("th")
            th.scope = "col"
            th.textContent = text
            if n > 1:
                remove = document.createElement("button")
                remove.type = "button"
                remove.className = "unpin"
                remove.dataset.pin = str(n - 2)
                remove.textContent = "Remove"
                remove.setAttribute("aria-label", f"Remove {text}")
                th.appendChild(document.createTextNode(" "))
                th.appendChild(remove)
            head.appendChild(th)
    rows = []
    for row in compare_table(columns):
        marked = "differs" if row["differs"] and len(columns) > 1 else ""
        rows.append(("", [(row["label"], None, "")] + [
            (_compare_text(row["kind"], value, u), "" if value is None else str(value), marked)
            for value in row["values"]]))
    view("#compare-table tbody").show(rows)
    # What the last pin action did (said once), then anything a pin had to ignore.
    put("#pin-status", "; ".join([m for m in [_state.pop("pin_message", "")] if m] + pin_notes()))
    update_pin_button()


def update_pin_button() -> None:
    # Pinning needs valid inputs (a pin holds figures, never a value in error) and room.
    put("#pin", _state["stale"] or len(_state["pins"]) >= link.MAX_PINS, "disabled")


def render_launch(scenario) -> None:
    for engine in ENGINES:
        command = launch(scenario, engine)
        box = f"[id='launch-{engine}']"
        put(f"{box} pre", command.command or "")
        put(f"{box} button", command.command is None, "disabled")
        view(f"{box} .notes", item_tag="li").show(lines_of(command.notes))


def render_export() -> None:
    scenario, result, u = _state["export_args"]
    _state["export"] = export(scenario, result, el("#export-format").value, u)
    put("#export-text", _state["export"])


def copy_text(text: str, status: str) -> None:
    def done(*_):
        put(status, "Copied.")

    def failed(*_):
        put(status, "Copy failed: select the text and copy it.")
    try:
        window.navigator.clipboard.writeText(text).then(_proxy(done), _proxy(failed))
    except Exception:      # no clipboard API here
        failed()


def on_export_download(*_) -> None:
    fmt = q("#export-format").value
    mime = {"csv": "text/csv", "json": "application/json", "markdown": "text/markdown"}[fmt]
    blob = js.Blob.new(to_js([_state["export"]]), js_obj({"type": mime}))
    url = js.URL.createObjectURL(blob)
    anchor = document.createElement("a")
    anchor.href = url
    anchor.download = "kvcalc." + {"csv": "csv", "json": "json", "markdown": "md"}[fmt]
    anchor.click()
    js.URL.revokeObjectURL(url)
    put("#export-status", f"Saved {anchor.download}.")


def on_pin(*_) -> None:
    fragment = link.encode(link_values(read_form()))
    if len(_state["pins"]) < link.MAX_PINS:
        _state["pins"].append(fragment)
        _state["pin_message"] = f"Pinned as Pin {len(_state['pins'])}."
    update()


def on_compare_click(event) -> None:
    target = event.target
    if target.classList.contains("unpin"):
        index = int(target.dataset.pin)
        if 0 <= index < len(_state["pins"]):
            del _state["pins"][index]
            _state["pin_message"] = f"Removed Pin {index + 1}."
        update()
        el("#pin").focus()        # the button pressed is gone with the header row it sat in


def on_copy_command(event) -> None:
    engine = getattr(event.target.dataset, "engine", None)
    if engine:
        box = document.getElementById(f"launch-{engine}")
        copy_text(box.querySelector("pre").textContent, "#export-status")


def render_rows(selector, rows, u: str) -> None:
    shown = []
    for row in rows:
        r = row.result
        cells = [row.label + (" (current)" if row.current else ""), row.detail]
        if r is None:
            cells += [f"n/a: {row.refused}", "", ""]
        else:
            cells += [f"{r.kv_bytes_per_token:,} B", size(r.kv_bytes_per_request, u),
                      "n/a" if r.max_concurrency is None else f"{r.max_concurrency:,}"]
        shown.append(("current" if row.current else "", [(text, None, "") for text in cells]))
    view(selector).show(shown)


def show_errors(errors) -> None:
    placed = {}
    summary = []
    for error in errors:
        field = _error_place(error.field)
        if field:
            placed[field] = error.message if field == error.field else f"{error.field}: {error.message}"
        summary.append(f"{error.field}: {error.message}")
    before = _state.get("placed", {})
    for field in set(before) | set(placed):
        put(f"#error-{field}", placed.get(field, ""))
        control = q(f"#{field}")
        if control is not None:
            if field in placed:
                control.setAttribute("aria-invalid", "true")
            else:
                control.removeAttribute("aria-invalid")
    _state["placed"] = placed
    put("#error-summary", " · ".join(summary))
    stale = bool(errors)
    _state["stale"] = stale
    update_pin_button()
    put("#results", "true" if stale else "false", "stale")
    put("#stale-badge", not stale, "hidden")
    put("#stale-badge", "stale: showing the last valid inputs" if _state["valid_once"] else "no result yet: fix the inputs")


def _error_place(field: str):
    """The visible field an error belongs next to: itself, the field it is derived from, or
    the config box for a key inside config.json."""
    if field not in OPTION_BY_NAME:
        return "hf-config" if _fields.get("model") == "config" else None
    for candidate in (field, {"tp": "gpus", "gpus": "gpus", "pp": "pp"}.get(field, field)):
        target = q(f"#error-{candidate}")
        control = q(f"#{candidate}")
        if target is not None and absent(target.closest("[hidden]")) and not (
                candidate == "tp" and control is not None and not control.value):
            return candidate
    return "gpus" if field == "tp" else None


# ---- the loop ------------------------------------------------------------------------

def update(*_) -> None:
    raw = read_form()
    errors = []
    if _fields.get("model") == "config":
        if _state["config_error"] is not None:
            errors.append(_state["config_error"])
        elif _state["config"] is None:
            errors.append(InputError("hf-config", "paste or drop a config.json"))
    evaluation = None if errors else evaluate(raw)
    if evaluation is not None:
        errors = list(evaluation.errors)
    show_errors(errors)
    if errors:
        return
    _state["unit"] = unit()
    render(evaluation, _state["unit"])
    if not _state["valid_once"]:
        window.performance.mark("kvcalc-figures")
    _state["valid_once"] = True
    schedule_link(link.encode(link_values(raw), pins=_state["pins"]))


URL_DELAY_MS = 80


def schedule_link(fragment: str) -> None:
    """Rewrite the fragment once a burst of edits pauses: replaceState costs ~2.5 ms in
    Chromium, which throttles it when called on every keystroke. Copy link flushes it first."""
    if fragment == _state["last_hash"]:
        return
    _state["last_hash"] = fragment
    _state["url_due"] = fragment
    if _state.get("url_timer") is not None:
        window.clearTimeout(_state["url_timer"])
    _state["url_timer"] = window.setTimeout(_write_link_proxy, URL_DELAY_MS)
    mark_pending()


def write_link(*_) -> None:
    fragment = _state.pop("url_due", None)
    _state["url_timer"] = None
    if fragment is not None:
        window.history.replaceState(None, "", "#" + fragment if fragment else window.location.pathname)
    mark_pending()


def mark_pending() -> None:
    """<html data-pending="true"> while the side sections or the link are still to be written."""
    put("html", "true" if _state.get("side_due") or "url_due" in _state else "false", "pending")
    put("html", "pending" if _state.get("side_due") else "done", "side")


_write_link_proxy = create_proxy(write_link)


def on_config_text(*_) -> None:
    text = q("#hf-config").value
    _state["config"], _state["config_error"] = None, None
    if text.strip():
        try:
            _state["config"] = parse_config_text(text)
        except InputError as e:
            _state["config_error"] = e
    update()


def on_config_file(event) -> None:
    files = event.target.files
    if files.length:
        read_file(files.item(0))


def read_file(file) -> None:
    if file.size > 1 << 20:
        _state["config"], _state["config_error"] = None, InputError(
            "hf-config", f"the file is {file.size:,} bytes; the limit is {1 << 20:,} (real configs are a few KB)")
        update()
        return

    def loaded(text):
        q("#hf-config").value = text
        on_config_text()
    file.text().then(create_proxy(loaded))


def on_drop(event) -> None:
    # Only files are ours to take; text dropped into the box goes in as the browser does it.
    files = event.dataTransfer.files if event.dataTransfer else None
    if files and files.length:
        event.preventDefault()
        set_model_choice("config")
        show_model_fields()
        sync_fields()
        read_file(files.item(0))


def on_dragover(event) -> None:
    types = event.dataTransfer.types if event.dataTransfer else None
    if types and types.includes("Files"):
        event.preventDefault()      # so a dropped file is read here, not opened over the page


def on_model_change(*_) -> None:
    show_model_fields()
    update()


def on_search(*_) -> None:
    words = q("#model-search").value.lower().split()
    shown = 0
    for group in q("#model").querySelectorAll("optgroup:not([label='Your own'])"):
        visible = 0
        for option in group.querySelectorAll("option"):
            text = (option.textContent + " " + option.value).lower()
            option.hidden = not all(w in text for w in words)
            visible += not option.hidden
        group.hidden = visible == 0
        shown += visible
    put("#search-status", "" if not words else
        f"{shown} models match" if shown else "No model matches; try fewer words.")


def on_context_shortcut(event) -> None:
    button = event.target.closest("button")
    value = None if absent(button) else getattr(button.dataset, "context", None)
    if value:
        q("#context").value = _fields["context"] = value
        update()


def on_copy_link(*_) -> None:
    if "url_due" in _state:
        window.clearTimeout(_state["url_timer"])
        write_link()
    url = window.location.href

    def done(*_):
        put("#copy-status", "Copied the link to the last valid inputs: the ones marked in error are not in it."
            if _state["stale"] else "Link copied. It holds every input; nothing is stored anywhere else.")

    def failed(*_):
        put("#copy-status", f"Copy this link: {url}")
    try:
        window.navigator.clipboard.writeText(url).then(create_proxy(done), create_proxy(failed))
    except Exception:      # no clipboard API in this browser: show the link instead
        failed()


def load_fragment(fragment: str) -> None:
    kept, _, dropped = link.load(fragment)
    _state["pins"], pin_notes = link.decode_pins(fragment)
    write_form(kept)
    notes = [f"{key}: {why}" for key, why in dropped + pin_notes]
    if not any(k in kept for k in MODEL_INPUTS):
        notes.append(f"model: the link names none; showing {q('#model').selectedOptions.item(0).textContent}")
    put("#link-notes", ("This link had entries that were ignored: " + "; ".join(notes)) if notes else "")
    on_config_text() if "hf-config" in kept else update()


def on_hash_change(*_) -> None:
    fragment = window.location.hash.lstrip("#")
    if fragment != _state["last_hash"]:
        load_fragment(fragment)


def on_user_input(event) -> None:
    put("#link-notes", "")      # the notes were about the link; the inputs are the user's now
    note_field(event.target)
    update()


def main() -> None:
    form = q("#calc")
    on(form, "input", on_user_input)
    on(form, "submit", lambda event: event.preventDefault())
    on(q("#model"), "change", on_model_change)
    on(q("#attention-kind"), "change", on_model_change)
    on(q("#model-search"), "input", on_search)
    on(q("#hf-config"), "input", on_config_text)
    on(q("#hf-config-file"), "change", on_config_file)
    on(document, "dragover", on_dragover)
    on(document, "drop", on_drop)
    on(q(".shortcuts"), "click", on_context_shortcut)
    on(q("#copy-link"), "click", on_copy_link)
    on(window, "hashchange", on_hash_change)
    on(window, "resize", _resize_charts)
    on(window, "pagehide", lambda *_: write_link() if "url_due" in _state else None)
    on(q("#pin"), "click", on_pin)
    on(q("#compare-table"), "click", on_compare_click)
    on(q(".takeaway"), "click", lambda event: on_copy_command(event) if event.target.classList.contains("copy-command") else None)
    on(q("#export-format"), "change", lambda *_: render_export())
    on(q("#export-download"), "click", on_export_download)
    on(q("#export-copy"), "click", lambda *_: copy_text(_state["export"], "#export-status"))
    sync_fields()
    fragment = window.location.hash.lstrip("#")
    if fragment:
        load_fragment(fragment)
    else:
        show_model_fields()
        update()
    if _state.get("side_due"):
        render_side_sections()      # ready means everything on the page is current
    if "url_due" in _state:
        window.clearTimeout(_state["url_timer"])
        write_link()
    q("#inputs").disabled = False
    for button in document.querySelectorAll("#export-download, #export-copy"):
        button.disabled = False
    q("#status").hidden = True
    HTML.dataset.state = "ready"
    window.performance.mark("kvcalc-ready")
    window.kvcalcChartExact = _proxy(chart_exact)
    list_loaded_files()
    on(q("#recheck-files"), "click", list_loaded_files)
    register_offline_copy()


def list_loaded_files(*_) -> None:
    """The page's own proof of privacy: every file the browser fetched for it, from where."""
    entries = window.performance.getEntriesByType("resource")
    origin = window.location.origin
    names = [window.location.href.split("#")[0]] + [e.name for e in entries]
    others = sorted({n.split("/")[2] for n in names if not n.startswith(origin + "/") and "://" in n})
    put("#loaded-files", (f"{len(names)} files loaded, all from this site ({origin}); nothing sent: your "
                          "inputs stay in this tab and in the link after the #." if not others else
                          f"{len(names)} files loaded; from other hosts: {', '.join(others)}"))
    put("#loaded-files", str(len(names)), "count")
    put("#loaded-files", " ".join(names), "files")


def register_offline_copy() -> None:
    # After start-up, so caching the site never competes with the first load.
    workers = getattr(window.navigator, "serviceWorker", None)
    if not absent(workers):
        workers.register("sw.js").catch(_proxy(lambda *_: None))


try:
    main()
except Exception as exc:   # the page must say it failed, not sit in "loading" forever
    HTML.dataset.state = "error"
    put("#status-text", f"The calculator failed to start: {exc}")
    raise
