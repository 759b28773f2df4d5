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
from kvcalc.options import MANUAL_FIELDS, OPTION_BY_NAME, OPTIONS, canonical_value, evaluate
from kvcalc.report import formula_lines, size, to_json
from kvcalc.sizing import generation_work
from kvcalc.sweep import concurrency_series, context_points, memory_bar, memory_series

MLA_ONLY = ("mla-rank", "mla-rope-dim")
MLA_FIELDS = ("layers", *MLA_ONLY)
GQA_FIELDS = tuple(f for f in MANUAL_FIELDS if f not in MLA_ONLY)
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


def on(element, event, handler):
    proxy = create_proxy(handler)
    _proxies.append(proxy)
    element.addEventListener(event, proxy)


# ---- reading the form ---------------------------------------------------------------

def unit() -> str:
    checked = q('input[name="unit"]:checked')
    return checked.value if checked else "gib"


def read_form() -> dict:
    """The inputs as the engine's raw values, keyed by option name."""
    raw = {}
    for element in document.querySelectorAll("[data-option]"):
        name = element.dataset.option
        if element.type == "radio":
            if element.checked:
                raw[name] = element.value
            continue
        raw[name] = element.value
    choice = raw.pop("model", "")
    kind = q("#attention-kind").value
    for name in MANUAL_FIELDS:
        value = raw.pop(name, "")
        if choice == "custom" and (name in (MLA_FIELDS if kind == "mla" else GQA_FIELDS)):
            raw[name] = value
    if choice == "config":
        if _state["config"] is not None:
            raw["hf-config"] = _state["config"]
    elif choice != "custom":
        raw["model"] = choice
    if raw.get("unit") == "gib":
        raw.pop("unit")
    return {k: v for k, v in raw.items() if v not in ("", None)}


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
        raw = dict(raw, gpus=str(int(raw["tp"]) * int(raw.get("pp", 1))))
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
        q("#hf-config").value = json.dumps(raw["hf-config"], indent=2)
    elif manual:
        set_model_choice("custom")
        q("#attention-kind").value = "mla" if any(n in raw for n in MLA_ONLY) else "gqa"
    elif "model" in raw:
        set_model_choice(canonical_value("model", raw["model"]))
    show_model_fields()


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

def set_metric(key: str, value, text: str) -> None:
    element = q(f'[data-metric="{key}"]')
    if element is None:
        return
    element.textContent = text
    element.dataset.value = "" if value is None else str(value)


def fmt_count(n) -> str:
    return "n/a" if n is None else f"{n:,}"


def render(evaluation, u: str) -> None:
    scenario, result = evaluation.scenario, evaluation.result
    data = to_json(scenario, result)
    for key in ("kv_bytes_per_token", "kv_bytes_per_request", "kv_bytes_total", "kv_bytes_per_gpu", "weights_bytes"):
        value = data[key]
        set_metric(key, value, "n/a (give parameters or weights)" if value is None else
                   f"{size(value, u)}  ({value:,} B)")
    no_gpu = "n/a: choose a GPU or its memory"
    set_metric("max_concurrency", data["max_concurrency"],
               no_gpu if data["gpu_memory_bytes"] is None else fmt_count(data["max_concurrency"]))
    ctx = data["max_context"]
    if data["max_context_limited_by"] is None:
        ctx_text = no_gpu
    elif ctx is None:
        ctx_text = "unbounded: every layer's cache is capped"
    else:
        ctx_text = f"{ctx:,} tokens" + (" (the model's limit)" if data["max_context_limited_by"] == "model" else "")
    set_metric("max_context", ctx, ctx_text)
    cross = data["kv_equals_weights_context"]
    set_metric("kv_equals_weights_context", cross, "n/a" if cross is None else f"{cross:,} tokens")
    tps = data["decode_tokens_per_s_per_request"]
    set_metric("decode_tokens_per_s_per_request", None if tps is None else int(tps),
               "n/a: choose a GPU preset" if tps is None else
               f"≤ {tps:,.1f} tokens/s per request, ≤ {data['decode_tokens_per_s_total']:,.0f} in total")
    model = scenario.model
    kinds = ", ".join(f"{n} {k}" for k, n in data["layer_kinds"].items())
    q("#model-line").textContent = (f"{model.name}: {len(model.layers)} layers ({kinds}); KV stored as "
                                    f"{scenario.workload.kv_precision.name}; tp={result.tp}, pp={result.pp}.")
    fill_list(q("#formula"), formula_lines(scenario, result, u) + [f"Note: {w}" for w in scenario.warnings])
    render_charts(scenario, result, u)
    render_rows(q("#attention-table tbody"), attention_variants(scenario), u)
    render_rows(q("#precision-table tbody"), precision_rows(scenario), u)
    work = generation_work(scenario.workload.context_tokens)
    live = {"work-tokens": f"{work.tokens:,}", "work-without": f"{work.without_cache:,}",
            "work-with": f"{work.with_cache:,}", "crossover": "n/a" if cross is None else f"{cross:,}"}
    for element in document.querySelectorAll("[data-live]"):
        element.textContent = live.get(element.dataset.live, "")
    _state["current"] = data
    render_compare()
    render_launch(scenario)
    _state["export_args"] = (scenario, result, u)
    render_export()


def fill_list(container, lines) -> None:
    container.replaceChildren()
    for line in lines:
        item = document.createElement("li")
        item.textContent = line
        container.appendChild(item)


def js_obj(value):
    return to_js(value, dict_converter=js.Object.fromEntries)


PALETTE = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b")
DASHES = ([], [6, 3], [2, 2], [8, 3, 2, 3], [1, 3], [4, 4])


def _tick_tokens(value, *_):
    value = int(float(value))
    for scale, suffix in ((1 << 20, "M"), (1 << 10, "K")):
        if value >= scale and value % scale == 0:
            return f"{value // scale}{suffix}"
    return f"{value:,}"


def _tooltip_label(context):
    dataset = context.dataset
    i = context.dataIndex
    exact = dataset.exact[i] if hasattr(dataset, "exact") else None
    if dataset.kind == "requests":
        return f"{dataset.label}: {'n/a' if absent(exact) else f'{exact:,}'} requests"
    return dataset.label if absent(exact) else f"{dataset.label}: {size(exact, _state['unit'])} ({exact:,} B)"


def _chart(canvas_id, config):
    if canvas_id not in _charts:
        Chart = getattr(window, "Chart", None)
        if Chart is None:
            return None
        if not _charts:
            # Text and grid in the page's own colours, so dark mode stays readable.
            style = window.getComputedStyle(document.body)
            Chart.defaults.color = style.color
            Chart.defaults.borderColor = style.getPropertyValue("--line").strip() or "#888"
            Chart.defaults.font.size = 13
        _charts[canvas_id] = Chart.new(q(f"#{canvas_id}"), js_obj(config))
    return _charts[canvas_id]


def _context_ticks(axis, *_):
    # Ticks exactly at the swept contexts (powers of two), not at the log scale's 10s.
    axis.ticks = js_obj([{"value": c} for c in _state["contexts"]])


def _axis(title, kind="linear", ticks=None):
    axis = {"type": kind, "title": {"display": True, "text": title}}
    if ticks:
        axis["ticks"] = {"callback": ticks}
    return axis


def _line_options(x_title, y_title, y_kind):
    tooltip = _proxy(_tooltip_label)
    return {"animation": False, "responsive": True, "maintainAspectRatio": False, "parsing": False,
            "interaction": {"mode": "nearest", "intersect": False},
            "scales": {"x": dict(_axis(x_title, "logarithmic", _proxy(_tick_tokens)),
                                 afterBuildTicks=_proxy(_context_ticks)), "y": _axis(y_title, y_kind)},
            "plugins": {"tooltip": {"callbacks": {"label": tooltip}},
                        "legend": {"labels": {"usePointStyle": True}}}}


def _proxy(fn):
    proxy = create_proxy(fn)
    _proxies.append(proxy)
    return proxy


def _dataset(label, xs, exact, scale, kind, index, flat=False):
    values = [None if v is None else v / scale for v in exact]
    return {"label": label, "kind": kind, "exact": exact, "borderColor": PALETTE[index % 6],
            "backgroundColor": PALETTE[index % 6], "borderDash": [5, 5] if flat else DASHES[index % 6],
            "pointRadius": 0 if flat else 2, "borderWidth": 2, "spanGaps": False,
            "data": [{"x": x, "y": y} for x, y in zip(xs, values)]}


def render_charts(scenario, result, u: str) -> None:
    scale, unit_name = UNIT_SCALE[u]
    contexts = context_points(scenario)
    _state["contexts"] = contexts
    mem = memory_series(scenario, contexts)
    datasets = [_dataset(line["label"], contexts, line["bytes"], scale, "bytes", i)
                for i, line in enumerate(mem["lines"])]
    for label, value, i in (("weights per GPU", mem["weights_bytes_per_gpu"], 4),
                            ("KV budget per GPU", mem["kv_budget_bytes_per_gpu"], 5)):
        if value is not None and value > 0:
            datasets.append(_dataset(label, contexts, [value] * len(contexts), scale, "bytes", i, flat=True))
    chart = _chart("chart-memory", {"type": "line", "data": {"datasets": []},
                                    "options": _line_options("context length (tokens)", f"{unit_name} per GPU", "logarithmic")})
    if chart is not None:
        chart.data.datasets = js_obj(datasets)
        chart.options.scales.y.title.text = f"KV cache, {unit_name} per GPU"
        chart.update("none")

    conc = concurrency_series(scenario, contexts)
    q("#concurrency-note").textContent = "" if conc["lines"] else "Choose a GPU (or its memory) to see how many requests fit."
    datasets = [_dataset(line["label"], contexts, line["requests"], 1, "requests", i)
                for i, line in enumerate(conc["lines"])]
    chart = _chart("chart-concurrency", {"type": "line", "data": {"datasets": []},
                                         "options": _line_options("context length (tokens)", "max concurrent requests", "logarithmic")})
    if chart is not None:
        chart.data.datasets = js_obj(datasets)
        chart.update("none")

    bar = memory_bar(result, scenario)
    parts = (("weights", "Weights", 0), ("kv", "KV cache", 1), ("overhead", "Overhead", 3), ("free", "Free", 2))
    datasets = []
    for key, label, i in parts:
        value = bar[key]
        q(f"#legend-{key}").textContent = "n/a (no GPU chosen)" if value is None else size(value, u)
        if value is not None and value > 0:
            datasets.append({"label": label, "kind": "bytes", "exact": [value], "data": [value / scale],
                             "backgroundColor": ("#1f5f8b", "#d97706", "#9da7b3", "#7c3aed")[i]})
    chart = _chart("chart-bar", {"type": "bar", "data": {"labels": ["GPU"], "datasets": []}, "options": {
        "indexAxis": "y", "animation": False, "responsive": True, "maintainAspectRatio": False,
        "scales": {"x": {"stacked": True, "title": {"display": True, "text": unit_name}}, "y": {"stacked": True}},
        "plugins": {"tooltip": {"callbacks": {"label": _proxy(_tooltip_label)}}}}})
    if chart is not None:
        chart.data.datasets = js_obj(datasets)
        chart.options.scales.x.title.text = unit_name + ("" if bar["fits"] else " (does not fit)")
        chart.update("none")
    label = ", ".join(f"{name} {q(f'#legend-{key}').textContent}" for key, name, _ in parts)
    q("#chart-bar").setAttribute("aria-label", "Per-GPU memory: " + label + ("" if bar["fits"] else "; does not fit"))


# ---- compare, launch commands, exports -------------------------------------------------

def pinned_column(fragment: str):
    if fragment not in _pinned:
        evaluation, _ = link.evaluate_link(fragment)
        _pinned[fragment] = to_json(evaluation.scenario, evaluation.result) if evaluation.ok else \
            "; ".join(f"{e.field}: {e.message}" for e in evaluation.errors)
    return _pinned[fragment]


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
    head = q("#compare-table thead tr")
    head.replaceChildren()
    first = document.createElement("th")
    first.scope = "col"
    first.textContent = "Figure"
    head.appendChild(first)
    for n, text in enumerate(headers):
        th = document.createElement("th")
        th.scope = "col"
        th.textContent = text
        if n:
            remove = document.createElement("button")
            remove.type = "button"
            remove.className = "unpin"
            remove.dataset.pin = str(n - 1)
            remove.textContent = "Remove"
            remove.setAttribute("aria-label", f"Remove {text}")
            th.appendChild(document.createTextNode(" "))
            th.appendChild(remove)
        head.appendChild(th)
    body = q("#compare-table tbody")
    body.replaceChildren()
    for row in compare_table(columns):
        tr = document.createElement("tr")
        th = document.createElement("th")
        th.scope = "row"
        th.textContent = row["label"]
        tr.appendChild(th)
        for value in row["values"]:
            td = document.createElement("td")
            td.textContent = _compare_text(row["kind"], value, u)
            td.dataset.value = "" if value is None else str(value)
            if row["differs"] and len(columns) > 1:
                td.className = "differs"
            tr.appendChild(td)
        body.appendChild(tr)
    broken = [f"Pin {n}: {c}" for n, c in enumerate((pinned_column(f) for f in _state["pins"]), 1) if isinstance(c, str)]
    q("#pin-status").textContent = "; ".join(broken)
    q("#pin").disabled = len(_state["pins"]) >= link.MAX_PINS


def render_launch(scenario) -> None:
    for engine in ENGINES:
        command = launch(scenario, engine)
        box = document.getElementById(f"launch-{engine}")
        box.querySelector("pre").textContent = command.command or ""
        box.querySelector("button").disabled = command.command is None
        fill_list(box.querySelector(".notes"), list(command.notes))


def render_export() -> None:
    scenario, result, u = _state["export_args"]
    _state["export"] = export(scenario, result, q("#export-format").value, u)
    q("#export-text").textContent = _state["export"]


def copy_text(text: str, status) -> None:
    def done(*_):
        status.textContent = "Copied."

    def failed(*_):
        status.textContent = "Copy failed: select the text and copy it."
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
    q("#export-status").textContent = f"Saved {anchor.download}."


def on_pin(*_) -> None:
    fragment = link.encode(link_values(read_form()))
    if len(_state["pins"]) < link.MAX_PINS:
        _state["pins"].append(fragment)
        q("#pin-status").textContent = f"Pinned as Pin {len(_state['pins'])}."
    update()


def on_compare_click(event) -> None:
    target = event.target
    if target.classList.contains("unpin"):
        index = int(target.dataset.pin)
        if 0 <= index < len(_state["pins"]):
            del _state["pins"][index]
        update()


def on_copy_command(event) -> None:
    engine = event.target.dataset.engine
    if engine:
        box = document.getElementById(f"launch-{engine}")
        copy_text(box.querySelector("pre").textContent, q("#export-status"))


def render_rows(tbody, rows, u: str) -> None:
    tbody.replaceChildren()
    for row in rows:
        tr = document.createElement("tr")
        if row.current:
            tr.className = "current"
        r = row.result
        cells = [row.label + (" (current)" if row.current else ""), row.detail]
        if r is None:
            cells += [f"n/a: {row.refused}", "", ""]
        else:
            cells += [f"{r.kv_bytes_per_token:,} B", size(r.kv_bytes_per_request, u),
                      "n/a" if r.max_concurrency is None else f"{r.max_concurrency:,}"]
        for i, text in enumerate(cells):
            cell = document.createElement("th" if i == 0 else "td")
            if i == 0:
                cell.scope = "row"
            cell.textContent = text
            tr.appendChild(cell)
        tbody.appendChild(tr)


def show_errors(errors) -> None:
    for element in document.querySelectorAll(".error"):
        element.textContent = ""
    for element in document.querySelectorAll("[aria-invalid]"):
        element.removeAttribute("aria-invalid")
    summary = []
    for error in errors:
        field = _error_place(error.field)
        target = q(f"#error-{field}") if field else None
        if target is not None:
            target.textContent = error.message if field == error.field else f"{error.field}: {error.message}"
            control = q(f"#{field}")
            if control is not None:
                control.setAttribute("aria-invalid", "true")
        summary.append(f"{error.field}: {error.message}")
    q("#error-summary").textContent = " · ".join(summary)
    stale = bool(errors)
    _state["stale"] = stale
    q("#results").dataset.stale = "true" if stale else "false"
    q("#stale-badge").hidden = not stale
    q("#stale-badge").textContent = ("stale: showing the last valid inputs" if _state["valid_once"]
                                     else "no result yet: fix the inputs")


def _error_place(field: str):
    """The visible field an error belongs next to: itself, the field it is derived from, or
    the config box for a key inside config.json."""
    if field not in OPTION_BY_NAME:
        return "hf-config" if q("#model").value == "config" else None
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
    if q("#model").value == "config":
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
    _state["valid_once"] = True
    fragment = link.encode(link_values(raw), pins=_state["pins"])
    _state["last_hash"] = fragment
    if window.location.hash.lstrip("#") != fragment:
        window.history.replaceState(None, "", "#" + fragment if fragment else window.location.pathname)


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
    q("#search-status").textContent = ("" if not words else
                                       f"{shown} models match" if shown else "No model matches; try fewer words.")


def on_context_shortcut(event) -> None:
    button = event.target.closest("button")
    if not absent(button) and button.dataset.context:
        q("#context").value = button.dataset.context
        update()


def on_copy_link(*_) -> None:
    url = window.location.href
    status = q("#copy-status")

    def done(*_):
        status.textContent = ("Copied the link to the last valid inputs: the ones marked in error are not in it."
                              if _state["stale"] else
                              "Link copied. It holds every input; nothing is stored anywhere else.")

    def failed(*_):
        status.textContent = f"Copy this link: {url}"
    try:
        window.navigator.clipboard.writeText(url).then(create_proxy(done), create_proxy(failed))
    except Exception:      # no clipboard API in this browser: show the link instead
        failed()


def load_fragment(fragment: str) -> None:
    raw, _ = link.decode(fragment)
    _state["pins"], pin_notes = link.decode_pins(fragment)
    evaluation, dropped = link.evaluate_link(fragment)
    kept = {k: v for k, v in raw.items() if k not in {key for key, why in dropped if key in raw}}
    write_form(kept)
    notes = [f"{key}: {why}" for key, why in dropped + pin_notes]
    if not any(k in kept for k in ("model", "hf-config", *MANUAL_FIELDS)):
        notes.append(f"model: the link names none; showing {q('#model').selectedOptions.item(0).textContent}")
    q("#link-notes").textContent = ("This link had entries that were ignored: " + "; ".join(notes)) if notes else ""
    on_config_text() if "hf-config" in kept else update()


def on_hash_change(*_) -> None:
    fragment = window.location.hash.lstrip("#")
    if fragment != _state["last_hash"]:
        load_fragment(fragment)


def on_user_input(*_) -> None:
    q("#link-notes").textContent = ""     # the notes were about the link; the inputs are the user's now
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
    on(q("#pin"), "click", on_pin)
    on(q("#compare-table"), "click", on_compare_click)
    on(q(".takeaway"), "click", lambda event: on_copy_command(event) if event.target.classList.contains("copy-command") else None)
    on(q("#export-format"), "change", lambda *_: render_export())
    on(q("#export-download"), "click", on_export_download)
    on(q("#export-copy"), "click", lambda *_: copy_text(_state["export"], q("#export-status")))
    fragment = window.location.hash.lstrip("#")
    if fragment:
        load_fragment(fragment)
    else:
        show_model_fields()
        update()
    q("#inputs").disabled = False
    for button in document.querySelectorAll("#pin, #export-download, #export-copy"):
        button.disabled = False
    q("#status").hidden = True
    HTML.dataset.state = "ready"


try:
    main()
except Exception as exc:   # the page must say it failed, not sit in "loading" forever
    HTML.dataset.state = "error"
    q("#status-text").textContent = f"The calculator failed to start: {exc}"
    raise
