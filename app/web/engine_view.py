"""The engine's view: when "Size as" names an engine, its figures (data-metric engine_*), the
lines it would print at start-up with these numbers, and why they differ from the exact ideal.
Every text is the engine's own (`report.engine_texts`)."""

from web.dom import copy_text, el, lines_of, put, view
from web.errors import in_page_words
from web.results import write_metrics


def render(texts: dict) -> None:
    shown = bool(texts["title"])
    put("#engine-view", not shown, "hidden")
    if not shown:
        return
    put("#engine-title", texts["title"])
    write_metrics(texts["metrics"])
    for key, label in texts["labels"].items():
        put(f'[data-label="{key}"]', label)     # each engine in its own words
    put("#engine-log", texts["log"])
    view("#engine-why", item_tag="li").show(lines_of([in_page_words(line) for line in texts["why"]]))


def on_copy(*_) -> None:
    copy_text(el("#engine-log").textContent, "#engine-log-status")
