"""Take it away: each engine's launch command for the current inputs, and the results as CSV,
JSON or Markdown to copy or download. Commands and exports are the engine's own texts."""

import js
from pyscript import document
from pyscript.ffi import to_js

from kvcalc.reports.export import export
from kvcalc.engines import ENGINES
from kvcalc.evaluation import sized_as
from kvcalc.serving.launch import launch

from web import state
from web.dom import copy_text, el, js_obj, lines_of, put, view

MIME = {"csv": "text/csv", "json": "application/json", "markdown": "text/markdown"}
SUFFIX = {"csv": "csv", "json": "json", "markdown": "md"}
_export = [""]


def render_launch(scenario, evaluation) -> None:
    for engine in ENGINES:
        # Each command is sized by its own engine, whichever the page is sized as.
        command = launch(scenario, engine, sized_as(evaluation, engine))
        box = f"[id='launch-{engine}']"
        put(f"{box} pre", command.command or "")
        put(f"{box} button", command.command is None, "disabled")
        view(f"{box} .notes", item_tag="li").show(lines_of(command.notes))


def render_export() -> None:
    scenario, evaluation = state.computed
    _export[0] = export(scenario, evaluation, el("#export-format").value, state.unit)
    put("#export-text", _export[0])


def on_copy_export(*_) -> None:
    copy_text(_export[0], "#export-status")


def on_download(*_) -> None:
    fmt = el("#export-format").value
    blob = js.Blob.new(to_js([_export[0]]), js_obj({"type": MIME[fmt]}))
    url = js.URL.createObjectURL(blob)
    anchor = document.createElement("a")
    anchor.href = url
    anchor.download = "kvcalc." + SUFFIX[fmt]
    anchor.click()
    js.URL.revokeObjectURL(url)
    put("#export-status", f"Saved {anchor.download}.")


def on_click(event) -> None:
    """A Copy button under a launch command."""
    target = event.target
    if target.classList.contains("copy-command"):
        box = document.getElementById(f"launch-{target.dataset.engine}")
        copy_text(box.querySelector("pre").textContent, "#export-status")
