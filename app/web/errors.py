"""Errors as the page shows them: each beside the field it is about, all in one summary, and
the results marked stale (the last valid figures stay, in words and style)."""

import re

from kvcalc.evaluation import unexpected
from kvcalc.inputs.options import MODEL_INPUTS, OPTION_BY_NAME, OPTIONS

from web import state, strip
from web.dom import absent, on_fault, q, put

_placed = {}            # field id -> the message shown beside it
# What a pasted log holds back: [(InputError, the model inputs when it was said)]. A log that
# was refused ("log") holds until the box changes; a log whose model is not known ("model")
# until the user gives one (the model inputs differ from those it was said over).
_held = []
CONTROLS = {"model": "model-search", "log": "startup-log"}     # the control an error's link leads to


# The engine names other inputs by their CLI names (weights-gib); the page says their labels.
_OPTION_IDS = re.compile(r"(?<![\w-])(" + "|".join(sorted((re.escape(o.name) for o in OPTIONS if "-" in o.name),
                                                         key=len, reverse=True)) + r")(?![\w-])")


# What the engine tells a CLI user to run, as the page offers it.
_CLI_WORDS = (("kvcalc --list-gpus lists the presets", "the GPU menu lists the presets"),
              ("(kvcalc --list-models)", "(the model search lists them)"))


def cli_words(text: str) -> str:
    for said, page_words in _CLI_WORDS:
        text = text.replace(said, page_words)
    return text


def in_page_words(text: str, field: str | None = None) -> str:
    """The engine's message as the page says it: CLI commands as the page's controls, and the
    inputs it names by their labels, save in the `also` field's messages, whose keys are typed
    as they are named (engine-version:0.10.0)."""
    text = cli_words(text)
    return text if field == "also" else _OPTION_IDS.sub(lambda m: f"“{label(m[1])}”", text)


def model_inputs(raw: dict) -> dict:
    return {name: raw[name] for name in MODEL_INPUTS if name in raw}


def hold(error, raw: dict | None = None) -> None:
    """A pasted log's refusal ("log"), or its model that is not known ("model", with the inputs
    it was said over): said beside the log box and in the summary, the figures stale, until
    `release` or, for the model, until the model inputs change."""
    _held[:] = [(error, None if raw is None else model_inputs(raw))]


def release() -> None:
    _held.clear()


def held() -> str:
    """The message a pasted log holds the figures back with, or ""."""
    text = _held[0][0].message if _held else ""
    return text[:1].upper() + text[1:]


def with_held(problems: list, raw: dict) -> list:
    """The update's problems with what a pasted log holds back first (one message: the model's
    own "choose a model" is the log's). The model chosen since frees the figures."""
    if not _held:
        return problems
    error, inputs = _held[0]
    if inputs is not None and model_inputs(raw) != inputs:
        _held.clear()
        return problems
    if error.field == "model":
        problems = [p for p in problems if p.field not in MODEL_INPUTS]
    return [error, *problems]


def show(errors, model_choice: str) -> None:
    put("#error-log", held())
    placed, summary = {}, []
    for error in errors:
        field = _place(error.field, model_choice)
        message = in_page_words(error.message, error.field)
        if field:
            placed[field] = message if field == error.field else f"{label(error.field)}: {message}"
        summary.append(f"{label(error.field)}: {message}")
    for field in set(_placed) | set(placed):
        put(f"#error-{field}", placed.get(field, ""))
        control = q(f"#{field}")
        if control is not None:
            if field in placed:
                control.setAttribute("aria-invalid", "true")
                group = control.closest("details.group")
                if not absent(group):
                    group.open = True       # an error is never hidden in a closed group (Advanced, Production)
            else:
                control.removeAttribute("aria-invalid")
    _placed.clear()
    _placed.update(placed)
    put("#error-summary", " · ".join(summary))
    if errors:
        put("#log-check", True, "hidden")      # about figures no longer current
        strip.relabel()
    _first_error(errors, placed)
    _mark_stale(bool(errors))
    put("#stale-badge", "stale: showing the last valid inputs" if state.valid_once else "no result yet: fix the inputs")


def _first_error(errors, placed: dict) -> None:
    """The strip names the first field in error and leads to it: on a phone the errors beside
    their fields may be a long scroll away."""
    first = next((error for error in errors), None)
    put("#first-error", first is None, "hidden")
    if first is None:
        return
    field = "log" if first.field == "log" else (
        _place(first.field, "config" if first.field == "hf-config" else "") or next(iter(placed), None))
    more = f" (+{len(errors) - 1})" if len(errors) > 1 else ""
    put("#first-error", f"Stale · fix “{label(first.field)}”{more}")
    put("#first-error", f"#{CONTROLS.get(field, field)}" if field else "#error-summary", "href")


def _mark_stale(stale: bool) -> None:
    """Every figure on the page, not only the headline: <html data-stale> greys the time bounds,
    charts, tables, comparison and commands too, until a valid result replaces them."""
    state.stale = stale
    text = "true" if stale else "false"
    put("#results", text, "stale")
    put("#summary", text, "stale")
    put("html", text, "stale")
    put("#stale-badge", not stale, "hidden")


def fault(error: Exception) -> None:
    """Something inside raised where no refusal was foreseen: said as one, figures marked stale."""
    raw = {"hf-config": state.config} if state.config is not None else {}
    show([unexpected(error, raw)], "config" if state.config is not None else "")


on_fault(fault)


def waiting(text: str) -> None:
    """Nothing wrong, nothing to compute yet (an empty config box): say so, keep the last figures."""
    show([], "")
    _mark_stale(True)
    put("#stale-badge", text)


def label(field: str) -> str:
    """The field's label on the page, the words a user knows it by."""
    if field == "hf-config":
        return "config.json"
    if field in ("model", "log"):
        return {"model": "Model", "log": "Start-up log"}[field]
    if field not in OPTION_BY_NAME:
        return field            # a key from a link or a config: shown as it was, never a selector
    element = q(f'label[for="{field}"]')
    # The words before a parenthesis: "Context length (tokens)" is "Context length".
    return field if element is None else element.textContent.split(" (")[0].strip()


def _place(field: str, model_choice: str):
    """The visible field an error belongs next to: itself, the field it is derived from, or
    the config box for a key inside config.json."""
    if field == "log":
        return None             # beside the log box already (#error-log)
    if field not in OPTION_BY_NAME:
        return "hf-config" if model_choice == "config" else None
    for candidate in (field, {"tp": "gpus"}.get(field, field)):
        target = q(f"#error-{candidate}")
        control = q(f"#{candidate}")
        if target is not None and absent(target.closest("[hidden]")) and not (
                candidate == "tp" and control is not None and not control.value):
            return candidate
    return "gpus" if field == "tp" else None
