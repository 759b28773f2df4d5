"""Results as CSV, JSON (the keys of `kvcalc --json`) and a Markdown table."""

import json

from ..inputs.scenario import Scenario
from .report import size, to_json
from ..evaluation import Evaluation

FORMATS = ("json", "csv", "markdown")


def _cell(value) -> str:
    if value is None:
        return ""
    if isinstance(value, (dict, list)):
        return json.dumps(value, sort_keys=True)
    return str(value)


def _csv(text: str) -> str:
    # RFC 4180 quoting, as the csv module writes it (not imported: ~8 ms at start-up in Pyodide).
    return '"' + text.replace('"', '""') + '"' if any(c in text for c in ',"\r\n') else text


def export(scenario: Scenario, evaluation: Evaluation, fmt: str, unit: str = "gib") -> str:
    data = to_json(scenario, evaluation, unit)
    if fmt == "json":
        return json.dumps(data, indent=2) + "\n"
    if fmt == "csv":
        rows = [("metric", "value")] + [(key, _cell(value)) for key, value in data.items()]
        return "".join(f"{_csv(a)},{_csv(b)}\n" for a, b in rows)
    if fmt == "markdown":
        lines = ["| metric | value | readable |", "|---|---|---|"]
        for key, value in data.items():
            readable = size(value, unit) if isinstance(value, int) and "bytes" in key else ""
            text = _cell(value).replace("|", "\\|")
            lines.append(f"| {key} | {text} | {readable} |")
        return "\n".join(lines) + "\n"
    raise ValueError(f"unknown format {fmt!r}")
