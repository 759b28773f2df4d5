"""The fixes under the verdict: a failed start pasted in the log's box, or inputs the chosen
engine will not start with, get the changes that start them (kvcalc.reports.fixes), each with a
"Use" button that writes it into the form. Loaded only when there is something to fix: the
page starts without it (web.loop's side step asks `needed` first)."""

import json

import js

from kvcalc.inputs import failed_start, log_flow
from kvcalc.reports import failure_report, fixes as start_fixes

from web import errors, form, state
from web.dom import el, put


# The tail failed_start reads, cut where it cuts it (after a line's end), and the number of its
# first line: only that much crosses into Python, as `kvcalc --from-log` reads the same tail.
_TAIL = js.Function.new("box", "tail", """
  const text = box.value;
  let start = Math.max(0, text.length - tail);
  if (start > 0) { const i = text.indexOf("\\n", start - 1); start = i < 0 ? text.length : i + 1; }
  let line = 1;
  for (let i = text.indexOf("\\n"); i >= 0 && i < start; i = text.indexOf("\\n", i + 1)) line++;
  return [text.slice(start), line];""")


def take(box) -> None:
    """A pasted log's failed start, read (kvcalc.inputs.failed_start), kept for every update."""
    text, first_line = _TAIL(box, failed_start.TAIL_CHARS)
    state.failed = failed_start.read(str(text), first_line=int(first_line))


def failure_only(refuse) -> bool:
    """A pasted text that gives no inputs: a failed start's error alone (its cause and the fixes
    its own figures give, the inputs on screen kept and marked stale: `refuse(message)`), or an
    error that is not about memory, said so. False when it is neither."""
    failed, state.failed = state.failed, None
    if failed is None or (failed.failure is None and failed.other_error is None):
        return False
    if failed.failure is None:
        refuse(failed.message)
        return True
    refuse(f"the pasted text is a failed start: {failed.message}")
    state.failed = failed
    render({"engine": failed.engine} if failed.engine else {})
    return True


def render(raw: dict | None = None) -> None:
    """The failure's sentence and its fixes, or the section hidden when nothing needs one
    (`raw`: the inputs the fixes change; the form's unless given)."""
    failed = state.failed
    raw = state.raw or {} if raw is None else raw
    if failed is not None and state.reading is not None:
        raw = _as_the_log_ran(raw)
    if failed is not None and failed.failure is not None:
        served = log_flow.served_path(state.reading)
        found = start_fixes.for_failure(failed.failure, raw, served) if failed.read else []
        said = start_fixes.contradiction(state.evaluation) if state.evaluation is not None and raw else None
        head = failure_report.headline(failed) + (f" {said}." if said else "")
    else:
        found = start_fixes.fixes(raw) if state.current and state.current.get("fits") is False else []
        head = "It will not start as sized here; these changes start it:" if found else ""
    show(head, found)


def _as_the_log_ran(raw: dict) -> dict:
    """The inputs a failed start's fixes are sized from: a GPU the log did not name and the user
    has not chosen since is the page's default, not the server's, so it is left out, as
    `kvcalc --from-log` leaves it out."""
    from web import log_check
    if any(name in state.reading.values for name in log_flow.GPU_GIVEN) or not log_check.gpu_is_the_logs():
        return raw
    return {name: value for name, value in raw.items() if name not in log_flow.GPU_GIVEN}


def show(head: str, found: list) -> None:
    put("#fixes", not head, "hidden")
    put("#failed-start", head)
    items = []
    for fix in found:
        item = el("#fixes").ownerDocument.createElement("li")
        code = item.ownerDocument.createElement("code")
        code.textContent = fix.flags
        words = item.ownerDocument.createElement("span")
        words.textContent = f": {failure_report.gives(fix)}"
        button = item.ownerDocument.createElement("button")
        button.type, button.className, button.textContent = "button", "use-fix", "Use"
        button.dataset.changes = json.dumps({k: (None if v is None else str(v)) for k, v in fix.changes})
        button.setAttribute("aria-label", f"Use {fix.flags}")
        item.append(button, " ", code, words)
        items.append(item)
    el("#fix-list").replaceChildren(*items)


def use(event, update) -> None:
    """A "Use" button: its fix written into the form, then recomputed (`update`: web.loop.update)."""
    target = event.target
    if not target.classList.contains("use-fix"):
        return
    changes = json.loads(target.dataset.changes)
    values = form.read()
    for name, value in changes.items():
        if value is None:
            values.pop(name, None)
        else:
            values[name] = value
    form.write(values)
    form.sync()
    state.failed = None         # the log's failure is answered: the form now holds the fix
    errors.release()            # a failed start's own refusal (its error alone) is answered too
    update()
