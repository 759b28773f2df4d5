"""Model and GPU presets, read lazily from the JSON files in data/ (presets are data, not code)."""

import json
import re
import os
from dataclasses import dataclass, replace
from functools import lru_cache

from .config_fields import InvalidValue
from .errors import InputError
from .hfconfig import model_from_config
from .model import Model
from .params import has_quantization, quantized_weights

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
    torch_memory_bytes: int | None = None   # the total PyTorch reports (what vLLM and SGLang multiply)
    torch_memory_source: str | None = None
    peak_flops: dict | None = None          # dense tensor FLOP/s per compute precision (bf16, fp8, fp4, int8)
    peak_flops_source: str | None = None
    unified_memory: bool = False            # memory shared with the CPU and OS (Apple M-series, DGX Spark GB10)


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
    model = model_from_config(entry["config"], name=entry["name"], hf_repo=entry["id"],
                              params=entry.get("params"), active_params=entry.get("active_params"),
                              source=entry.get("source"), checkpoint_bytes=entry.get("checkpoint_bytes"))
    if entry.get("weights_unknown"):
        # The repo's weights are not in the precision its config.json implies (a quantization
        # kept in a file of its own): unknown until given, rather than sized wrongly.
        model = replace(model, weights_dtype=None, notes=model.notes + (entry["weights_unknown"],))
    return with_config_weights(model, entry["config"])


def with_config_weights(model: Model, cfg: dict, notes: list | None = None, counted=None) -> Model:
    """A quantized checkpoint's bytes computed from its quantization_config and shapes (a
    checkpoint's own headers, given, still win); unchanged where the rule or the count is refused."""
    if not has_quantization(cfg):
        return model
    try:
        computed = quantized_weights(cfg, counted)
    except InvalidValue:
        raise
    except InputError as e:
        if notes is not None:
            notes.append(f"weights not computed from the quantization_config ({e.field}: {e.message})")
        return model
    return replace(model, config_weights_bytes=computed.bytes, config_weights_rule=computed.rule)


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


# Words people add to a model's name that say which checkpoint, not which model: never a reason
# to miss ("Meta-Llama-3.1-70B-Instruct" finds Llama 3.1 70B).
_SUFFIX_WORDS = frozenset({"instruct", "chat", "it", "base", "hf", "meta"})


def _words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9]+", text.lower())


@lru_cache(maxsize=None)
def _search_index() -> tuple:
    index = []
    for entry in model_entries():
        words = _words(" ".join([entry["name"], entry["id"], entry["family"], *entry.get("aliases", [])]))
        index.append((entry, frozenset(words), "".join(words)))
    return tuple(index)


def search_models(query: str) -> list[dict]:
    """Presets matching every word of the query, best first: whole words before word starts
    before any substring, and words that stand next to each other in the name as they do in
    the query ("3.3 70b" puts Llama 3.3 before 3.1). Separators and spacing are forgiven
    ("llama3 70b" finds Llama 3.1 70B, "qwen3 32" Qwen3 32B); an empty query lists every
    preset in table order."""
    tokens = _words(query)
    if not tokens:
        return list(model_entries())
    pairs = [a + b for a, b in zip(tokens, tokens[1:])]
    ranked = []
    for order, (entry, words, squashed) in enumerate(_search_index()):
        score = 0
        for token in tokens:
            if token in words:
                score += 3
            elif any(w.startswith(token) for w in words):
                score += 2
            elif token in squashed:
                score += 1
            elif token not in _SUFFIX_WORDS:
                break
        else:
            score += sum(2 for pair in pairs if pair in squashed)
            ranked.append((-score, order, entry))
    return [entry for _, _, entry in sorted(ranked, key=lambda r: r[:2])]
