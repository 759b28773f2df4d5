"""What do I need?'s table: the plan's rows written (one call into the page for the whole body),
the fewest-GPU and cheapest rows marked, the rows sorted by the column the user chose (the plan's
own order until then), the row the inputs now are marked, and a row chosen applied to the form.
The figures and the two named rows are the engine's (plan_report.row_json, Plan.fewest and
Plan.cheapest), only written here."""

import json

import js

from kvcalc.errors import InputError
from kvcalc.inputs.options import canonical_value
from kvcalc.planning.plan_report import cost_words, row_json

from web import form
from web.dom import absent, el, put, view

_rows = []                      # the plan's rows, in its order (a row's data-row is its index there)
_shown = []                     # each row as written, with its sort keys, in the plan's order
_sort = {"column": None, "descending": False}     # the column chosen, or None: the plan's order
SORT_STATES = ("ascending", "descending")

# One call builds the table body from the rows' texts: a row at a time from Python would cost
# ~10 us per element and attribute, tens of ms for the whole table.
_BUILD = js.Function.new("tbody", "text", """
const rows = JSON.parse(text);
tbody.replaceChildren(...rows.map(r => {
  const tr = document.createElement("tr");
  tr.className = r.cls;
  for (const [k, v] of Object.entries(r.data)) tr.setAttribute("data-" + k, v);
  r.cells.forEach(([value, cls, note, sub], i) => {
    const cell = document.createElement(i === 0 ? "th" : "td");
    if (i === 0) cell.scope = "row";
    if (cls) cell.className = cls;
    if (note) {             // why it does not fit, opened on demand: the column stays narrow
      const details = document.createElement("details"), summary = document.createElement("summary");
      const why = document.createElement("p");
      summary.textContent = value; why.className = "why"; why.textContent = note;
      details.append(summary, why); cell.append(details);
    } else cell.textContent = value;
    if (sub) {
      const small = document.createElement("small");
      small.className = "sub"; small.textContent = sub; cell.append(small);
    }
    tr.append(cell);
  });
  const td = document.createElement("td"), button = document.createElement("button");
  button.type = "button"; button.className = "use"; button.textContent = "Use";
  button.setAttribute("aria-label", "Use " + r.label);
  td.append(button); tr.append(td);
  return tr;
}));
""")


def _money(value) -> str:
    return "–" if value is None else f"${value:,.2f}"


def _cells(row, figures: dict, marks: str) -> list:
    fits = figures["fits"]
    requests = figures["max_concurrency"]
    longest = figures["max_context_tokens"]
    decode = figures["decode_tokens_per_s"]
    weights = figures["weights_dtype"] or "model's"
    return [
        (f"{figures['gpus']:,} x {figures['gpu_name']}", "", "", marks),
        (row.layout.words(), "", "", f"{figures['kv_dtype']} / {weights}"),
        ("fits" if fits else "unknown" if fits is None else f"does not fit ({figures['limit']})",
         "" if fits else "plan-why", "" if fits else figures["why"]),
        (f"{figures['batch']:,}", "num", ""),
        ("–" if requests is None else f"{requests:,}", "num", ""),
        ("–" if longest is None else f"{longest:,}", "num", ""),
        ("–" if decode is None else f"{decode:,.0f}", "num", ""),
        (_money(figures["usd_per_hour"]), "num price", ""),
        (_money(figures["usd_per_million_tokens"]), "num price", ""),
    ]


def _keys(row, figures: dict) -> list:
    """Each column's sort key, as the cells above: a number where the cell is one, None where the
    cell is "–" (last whichever the direction)."""
    layout = row.layout
    return [[figures["gpus"], figures["gpu_name"]], [layout.tp, layout.pp, layout.dp, layout.ep, figures["kv_dtype"]],
            {True: 0, None: 1, False: 2}[figures["fits"]], figures["batch"], figures["max_concurrency"],
            figures["max_context_tokens"], figures["decode_tokens_per_s"], figures["usd_per_hour"],
            figures["usd_per_million_tokens"]]


def render(result, ask) -> None:
    """The plan's rows into the table, with its caption, count, status and notes."""
    shown = []
    fewest, cheapest = result.fewest, result.cheapest
    for i, row in enumerate(result.rows):
        figures = row_json(row)
        data = {"row": str(i), "gpu": row.gpu, "gpus": str(row.gpus), "tp": str(row.layout.tp),
                "pp": str(row.layout.pp), "dp": str(row.layout.dp), "ep": "on" if row.layout.ep else "off",
                "fits": "true" if row.fits else "false", "requests": "" if row.max_concurrency is None else
                str(row.max_concurrency)}
        if figures["usd_per_hour"] is not None:
            data["usd-per-hour"] = repr(figures["usd_per_hour"])
        marks = ["fewest GPUs"] * (row is fewest) + ["cheapest"] * (row is cheapest)
        for mark in marks:
            data[mark.split()[0]] = "true"
        shown.append({"cls": "fits" if row.fits else "no-fit", "data": data, "label": row.words(),
                      "cells": _cells(row, figures, " · ".join(marks)), "keys": _keys(row, figures)})
    _shown[:] = shown
    _rows[:] = result.rows
    _write()
    put("#plan-table", "true" if ask.prices else "false", "priced")      # no price given: no price columns
    everything = result.everything
    put("#plan-caption", "Every deployment tried, per GPU type" if everything else
        "The smallest deployment that fits, per GPU type")
    put("#plan-count", f"{len(result.rows):,} rows over {len(ask.gpus):,} GPU types, up to {ask.max_gpus:,} GPUs")
    fitting = sum(1 for row in result.rows if row.fits)
    named = f"Fewest GPUs: {fewest.words()}." if fewest else f"No deployment of up to {ask.max_gpus:,} GPUs fits."
    if cheapest is not None:
        named += f" Cheapest: {cheapest.words()} at {cost_words(result, cheapest)}."
    put("#plan-status", f"{named} {fitting:,} of {len(result.rows):,} rows fit. Choose a row to apply it.")
    view("#plan-notes", item_tag="li").show([("", [(note, None, "")]) for note in result.notes])


def _write() -> None:
    """The rows in the order chosen: the plan's, or by one column (ties in the plan's order, a
    missing figure last), and the headers' aria-sort saying which."""
    column, descending = _sort["column"], _sort["descending"]
    rows = list(_shown)
    if column is not None:
        present = [row for row in rows if row["keys"][column] is not None]
        present.sort(key=lambda row: row["keys"][column], reverse=descending)
        rows = present + [row for row in rows if row["keys"][column] is None]
    _BUILD(el("#plan-table tbody"), json.dumps([{k: v for k, v in row.items() if k != "keys"} for row in rows]))
    for button in el("#plan-table thead").querySelectorAll("button.sort"):
        th = button.parentElement
        if column is not None and int(button.dataset.sort) == column:
            th.setAttribute("aria-sort", SORT_STATES[descending])
        else:
            th.removeAttribute("aria-sort")


def sort_by(event) -> bool:
    """A header's button: sorted by its column, ascending, then descending, then the plan's order
    again. True when a header was the target."""
    button = event.target.closest("#plan-table thead button.sort")
    if absent(button):
        return False
    column = int(button.dataset.sort)
    if _sort["column"] != column:
        _sort.update(column=column, descending=False)
    elif not _sort["descending"]:
        _sort["descending"] = True
    else:
        _sort.update(column=None, descending=False)
    _write()
    mark_current()
    return True


def mark_current() -> None:
    """The row the inputs now are, marked (a row applied, or typed by hand)."""
    fields = {name: form.fields.get(name, "").strip() for name in ("gpu", "gpus", "tp", "pp", "dp", "ep")}
    for tr in el("#plan-table tbody").children:
        data = tr.dataset
        current = (data.gpu == fields["gpu"] and data.gpus == fields["gpus"] and data.pp == (fields["pp"] or "1")
                   and data.dp == (fields["dp"] or "1") and (data.ep == "on") == (fields["ep"] == "on")
                   and fields["tp"] in ("", data.tp))
        if current != tr.classList.contains("current"):
            tr.classList.toggle("current", current)
            if current:
                tr.setAttribute("aria-current", "true")
            else:
                tr.removeAttribute("aria-current")


def choose(event) -> bool:
    """A click on a row (or its Use button): the row's deployment written into the form. True
    when one was applied."""
    if not absent(event.target.closest("#plan-table details")):
        return False            # opening why a row does not fit, not choosing it
    tr = event.target.closest("#plan-table tbody tr")
    if absent(tr) or not _rows:
        return False
    index = int(tr.dataset.row)
    if index >= len(_rows):
        return False
    apply(_rows[index])
    return True


def apply(row) -> None:
    """row.form_values() into the form, as a link's inputs are written, so that the single view
    then shows exactly the row."""
    for name, text in row.form_values().items():
        element = el(f"#{name}")
        try:
            text = str(canonical_value(name, text))
        except InputError:
            pass
        if element.tagName == "SELECT" and not any(option.value == text for option in element.options):
            text = ""           # "off": the select's own empty choice
        element.value = text
    form.sync()
    form.open_advanced_if_set()
    put("#link-notes", "")
    put("#plan-status", f"Applied {row.words()}: the figures above are now that deployment's.")
