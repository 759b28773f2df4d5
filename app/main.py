"""The browser module: the only code that touches the page.

It reads the form, asks the engine (the `kvcalc` package, the same one the CLI runs), and
writes text into the page. Every value from a user, a link or a file goes in through
textContent or a form control's value, never as markup.
"""

import json

import js
from pyscript import document, window
from pyscript.ffi import create_proxy

from kvcalc import link
from kvcalc.compare import attention_variants, precision_rows
from kvcalc.errors import InputError
from kvcalc.hfconfig import parse_config_text
from kvcalc.options import MANUAL_FIELDS, OPTIONS, evaluate
from kvcalc.report import formula_lines, size, to_json
from kvcalc.sizing import generation_work

MLA_FIELDS = ("mla-rank", "mla-rope-dim")
GQA_FIELDS = tuple(f for f in MANUAL_FIELDS if f not in MLA_FIELDS)
HTML = document.documentElement
_proxies = []          # keep JS callbacks alive for the page's lifetime
_state = {"config": None, "config_error": None, "last_hash": None}


def q(selector):
    return document.querySelector(selector)


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
    for element in document.querySelectorAll("[data-option]"):
        name = element.dataset.option
        value = raw.get(name, defaults.get(name))
        if element.type == "radio":
            element.checked = element.value == (value or "gib")
        elif name != "model" and name not in MANUAL_FIELDS:
            element.value = "" if value is None else str(value)
        elif name in raw:
            element.value = str(value)
    manual = [name for name in MANUAL_FIELDS if name in raw]
    if "hf-config" in raw:
        set_model_choice("config")
        _state["config"] = raw["hf-config"]
        q("#hf-config").value = json.dumps(raw["hf-config"], indent=2)
    elif manual:
        set_model_choice("custom")
        q("#attention-kind").value = "mla" if any(n in raw for n in MLA_FIELDS) else "gqa"
    elif "model" in raw:
        set_model_choice(raw["model"])
    show_model_fields()


def set_model_choice(value: str) -> None:
    select = q("#model")
    wanted = value.lower()
    for option in select.options:
        if option.value.lower() == wanted:
            select.value = option.value
            return
    # An id that is valid for the engine (an alias) but not listed: add it as typed, as text.
    option = document.createElement("option")
    option.value = value
    option.textContent = value
    select.appendChild(option)
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
    render_bar(result, scenario, u)
    render_rows(q("#attention-table tbody"), attention_variants(scenario), u)
    render_rows(q("#precision-table tbody"), precision_rows(scenario), u)
    work = generation_work(scenario.workload.context_tokens)
    live = {"work-tokens": f"{work.tokens:,}", "work-without": f"{work.without_cache:,}",
            "work-with": f"{work.with_cache:,}", "crossover": "n/a" if cross is None else f"{cross:,}"}
    for element in document.querySelectorAll("[data-live]"):
        element.textContent = live.get(element.dataset.live, "")


def fill_list(container, lines) -> None:
    container.replaceChildren()
    for line in lines:
        item = document.createElement("li")
        item.textContent = line
        container.appendChild(item)


def render_bar(result, scenario, u: str) -> None:
    total = result.gpu_memory_bytes
    parts = {"weights": result.weights_bytes_per_gpu or 0, "kv": result.kv_bytes_per_gpu,
             "overhead": scenario.deployment.overhead_bytes}
    parts["free"] = max(0, total - sum(parts.values())) if total else 0
    scale = total or sum(parts.values()) or 1
    for name, value in parts.items():
        q(f"#bar-{name}").style.width = f"{min(100, value * 100 / scale):.3f}%"
        q(f"#legend-{name}").textContent = size(value, u)
    over = total is not None and sum(v for k, v in parts.items() if k != "free") > total
    q("#memory-bar").dataset.over = "true" if over else "false"
    label = (f"Per-GPU memory: weights {size(parts['weights'], u)}, KV {size(parts['kv'], u)}, overhead "
             f"{size(parts['overhead'], u)}" + (f", of {size(total, u)}" if total else ", no GPU chosen")
             + (": does not fit" if over else ""))
    q("#memory-bar").setAttribute("aria-label", label)


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
        target = q(f"#error-{error.field}")
        if target is not None and not target.closest("[hidden]"):
            target.textContent = error.message
            control = q(f"#{error.field}")
            if control is not None:
                control.setAttribute("aria-invalid", "true")
        summary.append(f"{error.field}: {error.message}")
    q("#error-summary").textContent = " · ".join(summary)
    stale = bool(errors)
    q("#results").dataset.stale = "true" if stale else "false"
    q("#stale-badge").hidden = not stale


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
    render(evaluation, unit())
    fragment = link.encode(link_values(raw))
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
    event.preventDefault()
    files = event.dataTransfer.files
    if files.length:
        set_model_choice("config")
        show_model_fields()
        read_file(files.item(0))


def on_model_change(*_) -> None:
    show_model_fields()
    update()


def on_search(*_) -> None:
    words = q("#model-search").value.lower().split()
    select = q("#model")
    for option in select.querySelectorAll("optgroup:not([label='Your own']) option"):
        text = (option.textContent + " " + option.value).lower()
        option.hidden = not all(w in text for w in words)


def on_context_shortcut(event) -> None:
    value = event.target.dataset.context
    if value:
        q("#context").value = value
        update()


def on_copy_link(*_) -> None:
    url = window.location.href
    status = q("#copy-status")

    def done(*_):
        status.textContent = "Link copied. It holds every input; nothing is stored anywhere else."

    def failed(*_):
        status.textContent = f"Copy this link: {url}"
    try:
        window.navigator.clipboard.writeText(url).then(create_proxy(done), create_proxy(failed))
    except Exception:      # no clipboard API in this browser: show the link instead
        failed()


def load_fragment(fragment: str) -> None:
    raw, ignored = link.decode(fragment)
    evaluation, dropped = link.evaluate_link(fragment) if raw else (None, [])
    kept = {k: v for k, v in raw.items() if k not in {key for key, _ in dropped}}
    write_form(kept)
    notes = [f"{key}: {why}" for key, why in ignored + dropped]
    q("#link-notes").textContent = ("This link had entries that were ignored: " + "; ".join(notes)) if notes else ""
    on_config_text() if "hf-config" in kept else update()


def on_hash_change(*_) -> None:
    fragment = window.location.hash.lstrip("#")
    if fragment != _state["last_hash"]:
        load_fragment(fragment)


def main() -> None:
    form = q("#calc")
    on(form, "input", update)
    on(form, "submit", lambda event: event.preventDefault())
    on(q("#model"), "change", on_model_change)
    on(q("#attention-kind"), "change", on_model_change)
    on(q("#model-search"), "input", on_search)
    on(q("#hf-config"), "input", on_config_text)
    on(q("#hf-config-file"), "change", on_config_file)
    on(q("#config-fields"), "dragover", lambda event: event.preventDefault())
    on(q("#config-fields"), "drop", on_drop)
    on(q(".shortcuts"), "click", on_context_shortcut)
    on(q("#copy-link"), "click", on_copy_link)
    on(window, "hashchange", on_hash_change)
    fragment = window.location.hash.lstrip("#")
    if fragment:
        load_fragment(fragment)
    else:
        show_model_fields()
        update()
    q("#inputs").disabled = False
    q("#status").hidden = True
    HTML.dataset.state = "ready"


try:
    main()
except Exception as exc:   # the page must say it failed, not sit in "loading" forever
    HTML.dataset.state = "error"
    q("#status-text").textContent = f"The calculator failed to start: {exc}"
    raise
