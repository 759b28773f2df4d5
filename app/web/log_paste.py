"""A pasted start-up log (issue 24): vLLM's, SGLang's or llama.cpp's lines become the inputs they
imply, each shown with its line, and the log's figures beside ours after every update; a failed
start's cause and fixes are web.fixes_view's. The reader (kvcalc.inputs.startup_log) takes the
text in slices, giving the page its thread back between them (asyncio.sleep(0)), so a paste of a
server's whole day never freezes the tab. A refused log changes no input: it is said beside the
box and in the summary, the figures marked stale. A log whose model is not known leaves no other
model on screen (kvcalc.inputs.log_flow). The link carries the inputs read, never the log.
Imported on first use, so the page starts without it."""

import asyncio

import js
from pyscript import document

from kvcalc.inputs import log_flow
from kvcalc.errors import InputError
from kvcalc.inputs.options import MANUAL_FIELDS
from kvcalc.inputs.startup_log import LogReader

from web import errors, files, fixes_view, form, log_check, model_picker, state, strip
from web.dom import el, lines_of, put, view

# One feed, after which the page gets its thread back. Each slice's work is bounded by
# construction, not by a clock: the reader reads SLICE_CHARS and at most MAX_LINE_CHARS + 1 left
# open by the slice before, in time linear in those characters (tests/engines/test_hostile_logs.py). The
# box's data-slices, data-largest-slice and data-yields say what the last read did (the page's
# test and `make bench` read them).
SLICE_CHARS = 64 << 10
MEASURED = log_check.MEASURED

_generation = [0]                # the latest read: an older one still reading stops
_set_by_log = log_check.set_by_log
_applied = {}                     # the inputs as the log left them, to tell the user's later edits
# How a user gives the model here, in log_flow's sentences.
CONFIG_WORDS, CHOOSE_WORDS = "paste its config.json", "choose a model {what}"


# The box's text, a slice at a time: taking the whole value into Python at once would copy a
# 10 MB paste in one go (a third of a second in Pyodide) while the tab waits.
_SLICER = js.Function.new("box", "const text = box.value; return (start, end) => text.slice(start, end);")


class _Cancelled(Exception):
    """The text changed (or the log was forgotten) while it was read."""


def toggle(*_) -> None:
    """"Paste a log" opens the log's box, or closes it."""
    opening = el("#log-fields").hidden
    put("#log-fields", not opening, "hidden")
    put("#source-log", "true" if opening else "false", "aria-pressed")
    if opening:
        el("#startup-log").focus()


def _mb(n: int) -> str:
    return f"{n / 1e6:.1f} MB"


async def _read(size: int, text_slice, generation: int):
    """The Reading of the text, fed a slice at a time; InputError when it is refused."""
    reader = LogReader()
    LogReader.check_length(size)       # refused at once, before a line is copied or read
    yields = 0
    for start in range(0, size, SLICE_CHARS):
        if size > SLICE_CHARS:      # the thread given back before every slice (the first: the status line)
            await asyncio.sleep(0)
            yields += 1
            if _generation[0] != generation:
                raise _Cancelled()
        reader.feed(text_slice(start, start + SLICE_CHARS))
    box = el("#startup-log")
    for name, value in (("slice-chars", SLICE_CHARS), ("slices", reader.feeds), ("largest-slice", reader.largest_feed),
                        ("yields", yields)):
        box.setAttribute(f"data-{name}", str(value))
    return reader.finish()


async def take(then) -> None:
    """Read the pasted log; on success write its inputs into the form, then `then()`. A refusal
    is one line beside the box and in the summary, the inputs unchanged, the figures stale until
    the box changes. An emptied box changes no input (a refusal held for its text goes)."""
    _generation[0] += 1
    generation = _generation[0]
    box = el("#startup-log")
    size, text_slice = int(box.textLength), _SLICER(box)
    if not size:
        put("#log-status", "")
        if errors.held() and state.reading is None:
            errors.release()             # the refused text is gone: nothing is held back
            then()
        return
    put("#log-status", f"Reading the log here in this tab… ({_mb(size)})" if size > SLICE_CHARS else "")
    fixes_view.take(box)
    try:
        reading = await _read(size, text_slice, generation)
    except _Cancelled:
        return
    except InputError as e:     # a failed start's error alone, or an error not about memory: said so
        if not fixes_view.failure_only(lambda message: _refused(message, then)):
            _refused(f"the pasted text {e.message}", then)
        return
    except Exception as e:               # a fault in the reader: said, never "Reading…" forever
        _refused(f"the pasted log could not be read ({type(e).__name__})", then)
        return
    if _generation[0] != generation:
        return
    _apply(reading)
    put("#log-status", "Read here in this tab; nothing was uploaded, and the link holds only the inputs below.")
    then()


def _refused(message: str, then) -> None:
    """A paste that is no log we can read: said beside the box and in the summary, the figures
    on screen marked stale (they are not the log's), the inputs as they were."""
    put("#log-status", "")
    state.reading = None
    put("#log-reading", True, "hidden")
    put("#log-check", True, "hidden")
    strip.relabel()
    errors.hold(InputError("log", message))
    then()


def _withheld(reading) -> str | None:
    """Why no figures can be shown for this log yet: the model it names is no preset (unless the
    config.json on screen is that model's), or it names none and the model on screen is a preset
    nobody chose for it. A config or dimensions the user gave stand for a log naming no model."""
    choice = form.model_choice()
    text = log_flow.unresolved(reading, CONFIG_WORDS, CHOOSE_WORDS)
    if text is not None and choice == "config" and log_flow.same_model(state.config, log_flow.named_model(reading)):
        return None
    if text is None and choice not in ("config", "custom"):
        text = log_flow.no_model(reading, CONFIG_WORDS, CHOOSE_WORDS)
    return text


def _apply(reading) -> None:
    """The inputs on screen overlaid with the log's: what the log does not give stays, except
    the figures an earlier log measured. The model is the log's, or none: a log never leaves
    another model on screen (its figures are withheld until the model is given)."""
    named = reading.values.get("model")
    shapes = any(name in reading.values for name in MANUAL_FIELDS)     # llama.cpp's, with no model named
    withheld = _withheld(reading)
    cleared = withheld is not None and form.model_choice() not in ("config", "custom")
    if (named and named != form.model_choice()) or shapes or cleared:
        files.forget()                   # weights read from files belong to the model before
    current = form.read()
    for name in MEASURED:
        current.pop(name, None)
    if named or shapes or cleared:
        for name in ("hf-config", *MANUAL_FIELDS):
            current.pop(name, None)
    values = dict(current, **reading.values)
    form.write(values)
    if cleared:
        model_picker.choose("")          # no preset is the log's: none is shown as if it were
        form.sync()
    if "hf-config" in values:
        model_picker.parse_config()
    _set_by_log.clear()
    _set_by_log.update({name: reading.values[name] for name in MEASURED if name in reading.values})
    _applied.clear()
    _applied.update(form.read())
    state.reading = reading
    log_check.remember()
    empty = log_flow.no_cache(reading)       # the log's engine did not start: no figure is what it ran
    state.failed = state.failed if state.failed is not None and state.failed.failure else None
    if withheld is not None:
        errors.hold(InputError("model", withheld), form.read())
        if state.failed is not None:
            fixes_view.render(dict(reading.values))     # what its own figures give, as the CLI says
    elif empty is not None and state.failed is None:
        errors.hold(InputError("log", empty))
    else:
        errors.release()
    _render(reading)


def model_given() -> None:
    """A model given over a log naming none: what the log's figures imply for it, as `kvcalc
    --from-log` with --model reads it (log_flow.implied_for_model)."""
    if state.reading is None:
        return
    current = form.read()
    again, taken = log_flow.implied_for_model(state.reading, current, _applied)
    if again is state.reading:
        return
    if taken:
        form.write(dict(current, **taken))
        form.sync()
    state.reading = again
    _render(again)


def _render(reading) -> None:
    put("#log-reading", False, "hidden")
    put("#log-read", False, "hidden")
    put("#log-summary", reading.summary() + ".")
    log_check.model_warning()
    _read_rows(reading.read)
    put("#log-not-read", ("Not in the log, so the inputs on screen give them: " + "; ".join(reading.not_read) + ".")
        if reading.not_read else "")
    view("#log-notes", item_tag="li").show(lines_of(reading.notes))
    log_check.render_comparison()


def _read_rows(read) -> None:
    """Each input read: its option, its value (and, smaller, how it was derived), its line."""
    body = el("#log-read tbody")
    rows = []
    for r in read:
        row = document.createElement("tr")
        name, value, line = (document.createElement(tag) for tag in ("th", "td", "td"))
        name.scope, name.className, line.className = "row", "option", "num"
        name.textContent, value.textContent, line.textContent = r.option, r.text, f"{r.line_number:,}"
        if r.how:
            how = document.createElement("small")
            how.className, how.textContent = "how", r.how
            value.append(" ", how)
        row.append(name, value, line)
        rows.append(row)
    body.replaceChildren(*rows)


def drop() -> None:
    """The panel and the reading gone; the inputs as they are (a link loaded over them)."""
    _generation[0] += 1
    state.reading = None
    state.failed = None
    _set_by_log.clear()
    errors.release()
    put("#log-check", True, "hidden")
    strip.relabel()
    put("#log-reading", True, "hidden")
    put("#log-status", "")
    put("#error-log", "")


def forget(then) -> None:
    """"Forget the log": the figures it measured cleared (the KV memory only while it is still
    the log's), the panel and the pasted text gone; the other inputs stay."""
    for name in MEASURED:
        field = el(f"#{name}")
        if name != "kv-memory-gib" or field.value == _set_by_log.get(name):
            field.value = ""
    el("#startup-log").value = ""
    drop()
    form.sync()
    then()
