"""Pinned configurations beside the current one. A pin is a link fragment; its figures are
computed once by the engine from that fragment. The table appears once something is pinned."""

from pyscript import document

from kvcalc.reports import link
from kvcalc.reports.compare import compare_table
from kvcalc.reports.report import to_json
from kvcalc.words import size

from web import state
from web.dom import el, put, view

_columns = {}           # pin fragment -> (its to_json column or why it has none, what it ignored)
_said = [""]            # what the last pin action did, said once
_headers = [None]


def pin(fragment: str) -> None:
    if len(state.pins) < link.MAX_PINS:
        state.pins.append(fragment)
        _said[0] = f"Pinned as Pin {len(state.pins)}."


def unpin(event) -> bool:
    """A Remove button in the table's header: True when a pin went."""
    target = event.target
    if not target.classList.contains("unpin"):
        return False
    index = int(target.dataset.pin)
    if 0 <= index < len(state.pins):
        del state.pins[index]
        _said[0] = f"Removed Pin {index + 1}."
    return True


def _column(fragment: str):
    if fragment not in _columns:
        _, evaluation, dropped = link.load(fragment)
        column = to_json(evaluation.scenario, evaluation) if evaluation.ok else \
            "; ".join(f"{e.field}: {e.message}" for e in evaluation.errors)
        _columns[fragment] = (column, "; ".join(f"{key}: {why}" for key, why in dropped))
    return _columns[fragment]


def _notes() -> list:
    notes = []
    for n, fragment in enumerate(state.pins, 1):
        column, dropped = _column(fragment)
        if isinstance(column, str):
            notes.append(f"Pin {n} has no figures: {column}")
        elif dropped:
            notes.append(f"Pin {n} ignored {dropped}")
    return notes


def _text(kind: str, value, u: str) -> str:
    if value is None:
        return "n/a"
    if kind == "bytes":
        return size(value, u)
    if kind == "count":
        return f"{value:,}"
    return str(value)


def render() -> None:
    u = state.unit
    columns, headers = [state.current], ["Current"]
    for n, fragment in enumerate(state.pins, 1):
        column, _ = _column(fragment)
        columns.append(column if isinstance(column, dict) else {})
        headers.append(f"Pin {n}")
    put("#compare-wrap", not state.pins, "hidden")
    if _headers[0] != headers:
        _headers[0] = headers
        _write_headers(headers)
    rows = []
    for row in compare_table(columns):
        marked = "differs" if row["differs"] and len(columns) > 1 else ""
        rows.append(("", [(row["label"], None, "")] + [
            (_text(row["kind"], value, u), "" if value is None else str(value), marked)
            for value in row["values"]]))
    view("#compare-table tbody").show(rows)
    said, _said[0] = _said[0], ""
    put("#pin-status", "; ".join([m for m in [said] if m] + _notes()))
    update_pin_button()


def _write_headers(headers: list) -> None:
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


def update_pin_button() -> None:
    # Pinning needs valid inputs (a pin holds figures, never a value in error) and room.
    put("#pin", state.stale or len(state.pins) >= link.MAX_PINS, "disabled")
