"""Results as CSV, JSON (the keys of `kvcalc --json`) and a Markdown table."""

import csv
import io
import json

from .options import Scenario
from .report import size, to_json
from .sizing import Result

FORMATS = ("json", "csv", "markdown")


def _cell(value) -> str:
    if value is None:
        return ""
    if isinstance(value, (dict, list)):
        return json.dumps(value, sort_keys=True)
    return str(value)


def export(scenario: Scenario, result: Result, fmt: str, unit: str = "gib") -> str:
    data = to_json(scenario, result)
    if fmt == "json":
        return json.dumps(data, indent=2) + "\n"
    if fmt == "csv":
        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(["metric", "value"])
        for key, value in data.items():
            writer.writerow([key, _cell(value)])
        return out.getvalue()
    if fmt == "markdown":
        lines = ["| metric | value | readable |", "|---|---|---|"]
        for key, value in data.items():
            readable = size(value, unit) if isinstance(value, int) and "bytes" in key else ""
            text = _cell(value).replace("|", "\\|")
            lines.append(f"| {key} | {text} | {readable} |")
        return "\n".join(lines) + "\n"
    raise ValueError(f"unknown format {fmt!r}")
