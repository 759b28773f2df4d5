"""What do I need?'s table: the plan's rows written (one call into the page for the whole body),
the row the inputs now are marked, and a row chosen applied to the form. The figures are the
engine's (plan_report.row_json), only written here."""

import json

import js

from kvcalc.errors import InputError
from kvcalc.inputs.options import canonical_value
from kvcalc.planning.plan_report import row_json

from web import form
from web.dom import absent, el, put, view

_rows = []                      # the rows shown, in the table's order (a row's data-row is its index)

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


def _cells(row, figures: dict) -> list:
    fits = figures["fits"]
    requests = figures["max_concurrency"]
    longest = figures["max_context_tokens"]
    decode = figures["decode_tokens_per_s"]
    weights = figures["weights_dtype"] or "model's"
    return [
        (f"{figures['gpus']:,} x {figures['gpu_name']}", "", ""),
        (row.layout.words(), "", "", f"{figures['kv_dtype']} / {weights}"),
        ("fits" if fits else "unknown" if fits is None else f"does not fit ({figures['limit']})",
         "" if fits else "plan-why", "" if fits else figures["why"]),
        ("–" if requests is None else f"{requests:,}", "num", ""),
        ("–" if longest is None else f"{longest:,}", "num", ""),
        ("–" if decode is None else f"{decode:,.0f}", "num", ""),
        (_money(figures["usd_per_hour"]), "num price", ""),
        (_money(figures["usd_per_million_tokens"]), "num price", ""),
    ]


def render(result, ask) -> None:
    """The plan's rows into the table, with its caption, count, status and notes."""
    shown = []
    for i, row in enumerate(result.rows):
        figures = row_json(row)
        data = {"row": str(i), "gpu": row.gpu, "gpus": str(row.gpus), "tp": str(row.layout.tp),
                "pp": str(row.layout.pp), "dp": str(row.layout.dp), "ep": "on" if row.layout.ep else "off",
                "fits": "true" if row.fits else "false", "requests": "" if row.max_concurrency is None else
                str(row.max_concurrency)}
        if figures["usd_per_hour"] is not None:
            data["usd-per-hour"] = repr(figures["usd_per_hour"])
        shown.append({"cls": "fits" if row.fits else "no-fit", "data": data, "cells": _cells(row, figures),
                      "label": row.words()})
    _BUILD(el("#plan-table tbody"), json.dumps(shown))
    _rows[:] = result.rows
    put("#plan-table", "true" if ask.prices else "false", "priced")      # no price given: no price columns
    everything = result.everything
    put("#plan-caption", "Every deployment tried, per GPU type" if everything else
        "The smallest deployment that fits, per GPU type")
    put("#plan-count", f"{len(result.rows):,} rows over {len(ask.gpus):,} GPU types, up to {ask.max_gpus:,} GPUs")
    fitting = sum(1 for row in result.rows if row.fits)
    best = result.best
    put("#plan-status", (f"Best: {best.words()}." if best else f"No deployment of up to {ask.max_gpus:,} GPUs fits.")
        + f" {fitting:,} of {len(result.rows):,} rows fit. Choose a row to apply it.")
    view("#plan-notes", item_tag="li").show([("", [(note, None, "")]) for note in result.notes])


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
