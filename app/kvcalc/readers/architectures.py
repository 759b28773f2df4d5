"""Which config.json architectures this calculator sizes, from data/architectures.json: every
text-generating architecture in vLLM's model registry, each marked exact, refused (with why) or
not yet read, with the vLLM module its rule was read from.

A config naming an architecture outside the table, or one not marked exact, is refused by field
name: its model code may build a cache this reader does not know, and a number computed as if it
were a plain decoder could be silently wrong. A hand-written config with no architectures key is
read by its fields alone, as before.
"""

import json
import os
from functools import lru_cache

from .config_fields import show
from ..errors import InputError

DATA = os.path.join(os.path.dirname(os.path.dirname(__file__)), "data", "architectures.json")
STATUSES = ("exact", "refused", "not yet")


@lru_cache(maxsize=None)
def table() -> dict:
    """{"source": ..., "architectures": {name: {"module", "status", "layout", "why"}}}"""
    return json.loads(__loader__.get_data(DATA))       # inside the app's zip too (presets.read_data)


def entry(architecture: str) -> dict | None:
    return table()["architectures"].get(architecture)


def check(architecture: str | None, field: str = "architectures") -> None:
    """Refuse an architecture this calculator does not size exactly, saying why."""
    if architecture is None:
        return
    row = entry(architecture)
    if row is None:
        raise InputError(field, f"{show(architecture)} is not an architecture this calculator knows (it reads "
                                "those of vLLM's model registry, kvcalc --list-architectures); its cache layout "
                                "has not been read, so no number is given rather than a wrong one")
    if row["status"] == "refused":
        raise InputError(field, f"{architecture}: {row['why']}; no number rather than a wrong one")
    if row["status"] != "exact":
        raise InputError(field, f"{architecture} (vLLM {module_file(row['module'])}) is not read yet: its cache "
                                "layout has not been checked against vLLM's code, so no number is given")


def module_file(module: str) -> str:
    """Where vLLM keeps a registry module: model_executor/models/<name>.py, or a package of its own
    (`vllm.models.beam`, 0.3x) given by its dotted path."""
    return module.replace(".", "/") + "/" if "." in module else f"{module}.py"


def rows() -> list[tuple[str, dict]]:
    return sorted(table()["architectures"].items(), key=lambda item: item[0].lower())


def summary(row: dict) -> str:
    """What an exact row sizes, or why any other row is not sized."""
    return row.get("layout", "") if row["status"] == "exact" else row.get("why", "")


def markdown_table() -> str:
    """docs/formulas.md's table: every architecture, its status and why, and the vLLM module read."""
    lines = ["| Architecture | vLLM module | Status | Cache layout, or why not |", "| --- | --- | --- | --- |"]
    for name, row in rows():
        lines.append(f"| `{name}` | `{row['module']}` | {row['status']} | {summary(row)} |")
    return "\n".join(lines)
