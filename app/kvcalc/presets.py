"""Model and GPU presets, read lazily from the JSON files in data/ (presets are data, not code)."""

import json
import os
from dataclasses import dataclass
from functools import lru_cache

from .errors import InputError
from .hfconfig import model_from_config
from .model import Model

DATA = os.path.join(os.path.dirname(__file__), "data")   # os.path: pathlib costs ~10 ms to import in Pyodide


@dataclass(frozen=True)
class GPU:
    id: str
    name: str
    vendor: str
    memory_bytes: int
    bandwidth_bytes_per_s: int
    memory_note: str
    source: str


@lru_cache(maxsize=None)
def model_entries() -> tuple[dict, ...]:
    with open(os.path.join(DATA, "models.json"), encoding="utf-8") as fh:
        return tuple(json.load(fh)["models"])


@lru_cache(maxsize=None)
def _model_index() -> dict:
    index = {}
    for entry in model_entries():
        for key in [entry["id"], *entry.get("aliases", [])]:
            index[key.lower()] = entry
    return index


def find_model_entry(model_id: str) -> dict | None:
    return _model_index().get(model_id.strip().lower())


@lru_cache(maxsize=None)
def _model_from_entry(model_id: str) -> Model:
    entry = _model_index()[model_id]
    return model_from_config(entry["config"], name=entry["name"], hf_repo=entry["id"],
                             params=entry.get("params"), active_params=entry.get("active_params"),
                             source=entry.get("source"))


def preset_model(model_id: str, field: str = "model") -> Model:
    if not isinstance(model_id, str) or find_model_entry(model_id) is None:
        shown = model_id[:60] if isinstance(model_id, str) else type(model_id).__name__
        raise InputError(field, f"unknown model {shown!r}; use a preset id such as "
                                "meta-llama/Llama-3.1-8B (kvcalc --list-models), or import its config.json")
    return _model_from_entry(model_id.strip().lower())


@lru_cache(maxsize=None)
def gpus() -> dict[str, GPU]:
    with open(os.path.join(DATA, "gpus.json"), encoding="utf-8") as fh:
        rows = json.load(fh)["gpus"]
    fields = GPU.__dataclass_fields__
    return {row["id"]: GPU(**{k: v for k, v in row.items() if k in fields}) for row in rows}


def gpu(gpu_id: str, field: str = "gpu") -> GPU:
    key = gpu_id.strip().lower() if isinstance(gpu_id, str) else ""
    table = gpus()
    if key in table:
        return table[key]
    by_name = {g.name.lower(): g for g in table.values()}
    if key in by_name:
        return by_name[key]
    raise InputError(field, f"unknown GPU {str(gpu_id)[:40]!r}; known: {', '.join(table)}")
