"""From the source's formula: the textbook arithmetic the seeds use, on these inputs, and each
difference from its answer to ours, named and sized. Every text is the engine's
(`kvcalc.reports.source_formula.texts`); each row's count after its step is the last cell's data-value."""

from kvcalc.reports.source_formula import source_formula, texts

from web.dom import lines_of, put, view

CELLS = ("name", "source", "here", "effect")


def render(scenario, evaluation, unit: str) -> None:
    words = texts(source_formula(scenario, evaluation), unit)
    view("#source-lines", item_tag="li").show(lines_of(words["formula"]))
    put("#source-summary", words["summary"])
    view("#source-table tbody").show([
        (row["key"], [(row[cell], None, "") for cell in CELLS]
         + [(row["requests"], row["requests_value"], "")]) for row in words["rows"]])
    put("#source-table", not words["rows"], "hidden")
    put("#source-same", words["same"])
