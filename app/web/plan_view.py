"""What do I need? (issue 25): the plan's table, its chart and the verdict's pointer to its best
row, computed in the page one GPU type at a time.

The engine plans (kvcalc.plan: ask_from, gpu_rows per GPU type, finish, curve per type drawn);
here its rows are written and a chosen one is applied to the form. Between GPU types the page
gets its thread back once a slice's time is used (asyncio.sleep(0) is a browser task in Pyodide's
event loop), so typing never waits for a plan; an update started meanwhile (state.plan_generation)
stops the older plan, whose last good table stays until the new one is whole. Figures are the
engine's (plan_report.row_json), only written here. Imported on first use (web.loop), so the page
starts without it."""

import asyncio
import json
import time

import js

from kvcalc import plan as planner
from kvcalc.errors import InputError
from kvcalc.options import canonical_value
from kvcalc.plan_report import row_json

from web import form, plan_chart, state
from web.errors import in_page_words, label
from web.dom import absent, el, put, q, view

SLICE_SECONDS = 0.012           # the longest the plan runs before the page gets its thread back
# The inputs a row sets: a plan whose other inputs are unchanged is the same plan (a row applied).
_ROW_SET = ("gpu", "gpus", "tp", "pp", "dp", "ep", "unit")
_mode = {"everything": False}
_shown = {"key": None, "plan": None, "ask": None, "rows": []}
_field_errors = set()           # the plan fields this module marked in error
timings = []                    # per finished plan: its compute, table and whole times (bench/plan_page.py)

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


def _key(values: dict) -> str:
    return repr(sorted((k, str(v)) for k, v in values.items() if k not in _ROW_SET)) + repr(_mode["everything"])


def _cancelled(generation: int) -> bool:
    return state.plan_generation != generation


class _Slices:
    """The thread given back between slices once SLICE_SECONDS are used; the longest stretch
    the page waited is kept (bench/plan_page.py reports it)."""

    def __init__(self, generation: int):
        self.generation, self.since, self.longest = generation, time.perf_counter(), 0.0

    async def pause(self, status: str = "") -> bool:
        """After a slice: True when a newer plan was asked for meanwhile (this one stops)."""
        now = time.perf_counter()
        if now - self.since < SLICE_SECONDS:
            return False
        self.longest = max(self.longest, now - self.since)
        if status:
            put("#plan-status", status)
        await asyncio.sleep(0)
        self.since = time.perf_counter()
        return _cancelled(self.generation)

    def end(self) -> None:
        self.longest = max(self.longest, time.perf_counter() - self.since)


async def run(generation: int, values: dict) -> None:
    """Plan for these (typed) inputs; stops when a newer plan is asked for."""
    if _cancelled(generation):
        return
    key = _key(values)
    if key == _shown["key"]:
        _done()         # the same plan (a row applied, a unit switched): only which row is current changes
        return
    started = time.perf_counter()
    slices = _Slices(generation)
    try:
        ask = planner.ask_from(values)
    except InputError as e:
        _refused(e)
        return
    _clear_field_errors()
    everything = _mode["everything"]
    rows, compute = [], 0.0
    try:
        for i, gpu_id in enumerate(ask.gpus):
            if await slices.pause(f"Planning… {i} of {len(ask.gpus)} GPU types"):
                return
            t = time.perf_counter()
            rows.extend(planner.gpu_rows(ask, gpu_id, everything))
            compute += time.perf_counter() - t
        t = time.perf_counter()
        result = planner.finish(ask, rows, everything)
        compute += time.perf_counter() - t
    except InputError as e:
        _not_planned(f"Not planned: {label(e.field)}: {in_page_words(e.message)}")
        return
    _shown.update(key=key, plan=result, ask=ask)
    _render(result, ask)
    table_ms = (time.perf_counter() - started) * 1000
    if not await _chart(slices, result, ask):
        return
    slices.end()
    timings.append({"compute_ms": compute * 1000, "table_ms": table_ms,
                    "wall_ms": (time.perf_counter() - started) * 1000, "longest_slice_ms": slices.longest * 1000,
                    "rows": len(result.rows), "gpus": len(ask.gpus)})
    _done()


async def _chart(slices: _Slices, result, ask) -> bool:
    """The chart's lines, a GPU type per slice; False when a newer plan stopped it."""
    drawn = plan_chart.drawn_gpus(result.rows, ask.gpus)
    names = {row.gpu: row.gpu_name for row in result.rows}
    curves = []
    for gpu_id in drawn:
        if await slices.pause():
            return False
        try:
            curves.append((names.get(gpu_id, gpu_id), planner.curve(ask, gpu_id)))
        except InputError:
            continue
    plan_chart.render(planner.gpu_counts(ask.max_gpus), curves, len(ask.gpus))
    return True


def _done() -> None:
    _mark_current()
    _hint()
    put("#plan", "done", "state")


def _refused(error: InputError) -> None:
    """A plan input the plan refuses (a rate with no output tokens): said beside its field and
    in the section's status; the last plan stays."""
    _clear_field_errors()
    message = in_page_words(error.message)
    target = q(f"#error-{error.field}")
    if target is not None:
        put(f"#error-{error.field}", message)
        control = q(f"#{error.field}")
        if control is not None:
            control.setAttribute("aria-invalid", "true")
        _field_errors.add(error.field)
    _not_planned(f"Not planned: {label(error.field)}: {message}. The table is the last plan's.")


def _not_planned(text: str) -> None:
    put("#plan-status", text)
    put("#plan", "refused", "state")
    put("#plan-best", True, "hidden")


def _clear_field_errors() -> None:
    for field in _field_errors:
        put(f"#error-{field}", "")
        control = q(f"#{field}")
        if control is not None:
            control.removeAttribute("aria-invalid")
    _field_errors.clear()


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


def _render(result, ask) -> None:
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
    _shown["rows"] = list(result.rows)
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


def _mark_current() -> None:
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


def _hint() -> None:
    """A verdict that does not fit names the plan's best row."""
    result = _shown["plan"]
    fits = None if state.current is None else state.current.get("fits")
    if fits is not False or result is None or state.stale:
        put("#plan-best", True, "hidden")
        return
    best = result.best
    put("#plan-best-text", f"The plan's best: {best.words()}." if best else
        f"No deployment of up to {_shown['ask'].max_gpus:,} GPUs fits either.")
    put("#plan-best", False, "hidden")


def choose(event) -> bool:
    """A click on a row (or its Use button): the row's deployment written into the form. True
    when one was applied."""
    if not absent(event.target.closest("#plan-table details")):
        return False            # opening why a row does not fit, not choosing it
    tr = event.target.closest("#plan-table tbody tr")
    if absent(tr) or not _shown["rows"]:
        return False
    index = int(tr.dataset.row)
    if index >= len(_shown["rows"]):
        return False
    apply(_shown["rows"][index])
    return True


def apply(row) -> None:
    """row.form_values() into the form, as a link's inputs are written, so that the single view
    then shows exactly the row. Its precisions are the inputs it was evaluated with (row.values):
    none where the model's own was used, as naming the model's dtype can size its weights another
    way; with a rate, the concurrency it holds is the row's."""
    values = row.form_values()
    for name in ("kv-dtype", "weights-dtype"):
        values[name] = str(row.values.get(name, ""))
    if _shown["ask"] is not None and _shown["ask"].rate is not None:
        values["batch"] = str(row.batch)
    for name, text in values.items():
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


def toggle_everything() -> None:
    """The whole table on demand, or back to the smallest per GPU type."""
    everything = _mode["everything"] = not _mode["everything"]
    put("#plan-everything", "true" if everything else "false", "aria-pressed")
    put("#plan-everything", "Show the smallest per GPU type" if everything else "Show every deployment")
