"""The model presets, read lazily from data/models.json (presets are data, not code), and the one
matcher of ids as people type them that the GPU presets (readers/gpu_presets) share."""

import json
import re
import os
from dataclasses import dataclass, replace
from functools import lru_cache

from .config_fields import InvalidValue
from ..errors import InputError
from .hfconfig import model_from_config
from ..model import Model
from .quantized_bytes import has_quantization, quantized_weights

DATA = os.path.join(os.path.dirname(os.path.dirname(__file__)), "data")   # os.path: pathlib costs ~10 ms to import in Pyodide


def read_data(name: str) -> bytes:
    """A file of kvcalc/data, through the loader that imported this module: on disk for the CLI,
    inside the app's zip for the page (imported from the zip as it is, never unpacked)."""
    return __loader__.get_data(os.path.join(DATA, name))


@lru_cache(maxsize=None)
def model_entries() -> tuple[dict, ...]:
    return tuple(json.loads(read_data("models.json"))["models"])


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
    model = with_config_weights(model, entry["config"])
    if model.config_weights_bytes is None and entry.get("vision_params_band"):
        model = _with_uncounted_tower(model, entry["config"], entry["vision_params_band"])
    return model


def _with_uncounted_tower(model: Model, cfg: dict, band: dict) -> Model:
    """A quantized wrapper whose vision tower this calculator does not count: the language
    model's bytes from its quantization_config plus the tower's 16-bit bytes at the high end of
    the preset's sourced band of its parameter count, an estimate (shown with ≈, never to the byte)."""
    try:
        text = quantized_weights({k: v for k, v in cfg.items() if k != "vision_config"})
    except InputError:
        return model
    low, high = band["low"], band["high"]
    rule = (f"{text.rule}: the language model's {text.bytes:,} B; plus the vision tower and projector, "
            f"not counted here, at 16 bits for {low:,} to {high:,} parameters ({band['source']}): "
            f"{2 * low:,} to {2 * high:,} B, sized at the high end, so the total is an estimate")
    return replace(model, config_weights_bytes=text.bytes + 2 * high, config_weights_rule=rule,
                   config_weights_estimated=True)


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
    """The preset a model is typed as (an id, a variant of one, a local path, words): see
    `resolve_model`. A checkpoint whose weights are not the preset's (a quantized re-release)
    keeps the preset's shapes with its weights unknown, and says so."""
    match = resolve_model(model_id, field)
    model = _matched_model(match.entry["id"].lower(), match.note(), match.weights_differ, match.typed)
    alias = repo_alias(match.entry, model_id)
    return model if alias is None else replace(model, hf_repo=alias)


def repo_alias(entry: dict, typed: str) -> str | None:
    """The repo id `typed` is when the preset lists it as an alias (its Instruct release, an older
    name), as the preset spells it: that repo is served, not the base model whose shapes it shares."""
    key = typed.strip().lower()
    return next((a for a in entry.get("aliases", ()) if "/" in a and a.lower() == key), None)


@lru_cache(maxsize=64)
def _matched_model(key: str, note: str | None, weights_differ: bool, typed: str = "") -> Model:
    if note is None:
        return _model_from_entry(key)
    if weights_differ:
        # Named as typed: the preset's name is its own checkpoint's ("... NVFP4"), not this one's.
        model = _shape_model(key)
        shown = typed if len(typed) <= 60 else "..." + typed[-57:]
        # Its config's tensors are the shape's (model_shape_config: no quantization), read with it.
        return replace(model, name=f"{shown}, as {model.name}'s shape", notes=model.notes + (note,))
    model = _model_from_entry(key)
    return replace(model, notes=model.notes + (note,))


# What a config.json says about how one checkpoint stores its weights and cache, not the
# model's shape: another checkpoint of the same shape (the base model a quantized preset was
# made from, or another quantization of it) shares none of it.
STORAGE_KEYS = ("quantization_config", "compression_config")


def model_shape_config(cfg: dict) -> dict:
    """A preset's config.json without what only its checkpoint says: its quantization_config
    (the weights' format, a kv_cache_scheme's fp8 cache), at the top and in text_config."""
    shape = {k: v for k, v in cfg.items() if k not in STORAGE_KEYS}
    inner = shape.get("text_config")
    if isinstance(inner, dict):
        shape["text_config"] = {k: v for k, v in inner.items() if k not in STORAGE_KEYS}
    return shape


@lru_cache(maxsize=None)
def _shape_model(key: str) -> Model:
    """The preset's shape alone, for a checkpoint of it that is not the preset's own: its
    config without the preset's quantization, so the KV cache defaults to the model's dtype
    (never the preset checkpoint's kv_cache_scheme) and the weights are unknown until given."""
    entry = _model_index()[key]
    model = model_from_config(model_shape_config(entry["config"]), name=entry["name"], hf_repo=entry["id"],
                              params=entry.get("params"), active_params=entry.get("active_params"),
                              source=entry.get("source"))
    return replace(model, weights_dtype=None, checkpoint_bytes=None)




# ---- ids as people type them ---------------------------------------------------------------
#
# One matcher for every place a model or a GPU is named: the CLI, a link, the page's search
# and price fields, a log's model path. A name resolves only to the preset it is: a repo id or
# alias; a checkpoint of the same name with its checkpoint words or its quantization added or
# dropped (Qwen/Qwen2.5-72B-Instruct-AWQ is Qwen/Qwen2.5-72B's shape, not its weights); or words
# that name exactly one preset. A name that several presets fit is answered with them ("did
# you mean"), and a size is never guessed: "llama 70b" is three presets, "qwen2.5-1.5b" none.

MAX_ID_CHARS = 1024      # past any repo id or local path; a longer value is refused, never scanned

# Words a checkpoint's name ends in that say how its weights are stored, not which model it is.
_QUANT_TAIL = re.compile(
    r"[-_. ](?:awq|gptq|auto-?round|int[248]|w[248]a(?:8|16)|fp8|dynamic|static|block|nvfp4|mxfp4|fp4|bnb"
    r"|[2-8]-?bits?|g(?:32|64|128|256)|\d{1,2}(?:\.\d{1,2})?bpw|gguf"
    r"|mlx|exl[23]|quantized|bf16|fp16|f16|f32|nf4|hqq|marlin|unsloth|ud|imatrix"
    r"|i?q[1-8](?:_k)?(?:_[a-z]{1,2}|_[01])?)$", re.IGNORECASE)
# Words that say which checkpoint of the model (tuned, base, dated release), not its shape.
_CHECKPOINT_TAIL = re.compile(r"[-_. ](?:instruct|chat|it|base|hf|pt|\d{4})$", re.IGNORECASE)
_GGUF_FILE = re.compile(r"(?:-\d{5}-of-\d{5})?\.gguf$", re.IGNORECASE)
_HF_CACHE = re.compile(r"models--([^/]{1,200}?)--([^/]{1,200})")
_MAX_STRIPS = 8

# The same words as single search words (q4_k_m is q4, k, m), forgiven when a preset lacks them.
_QUANT_WORDS = frozenset({"awq", "gptq", "autoround", "int2", "int4", "int8", "w4a16", "w8a8", "w8a16", "w4a8", "fp8",
                          "dynamic", "static", "nvfp4", "mxfp4", "fp4", "bnb", "2bit", "3bit", "4bit", "5bit", "6bit",
                          "8bit", "gguf", "mlx", "exl2", "exl3",
                          "quantized", "bf16", "fp16", "f16", "f32", "nf4", "hqq", "marlin", "ud", "imatrix",
                          "k", "m", "s", "l", "xl", "xs", "xxs"})
_QUANT_WORD = re.compile(r"i?q[1-8]")
# Words people add to a model's name that say which checkpoint, not which model: never a reason
# to miss ("Meta-Llama-3.1-70B-Instruct" finds Llama 3.1 70B).
_SUFFIX_WORDS = frozenset({"instruct", "chat", "it", "base", "hf", "meta", "pt"})
_WORD = re.compile(r"[a-z0-9]+(?:\.[0-9]+[a-z0-9]*)*")
_NAME_DIGITS = re.compile(r"([a-z]{2,})([0-9][a-z0-9.]*)")
SHOWN_CANDIDATES = 5


def _is_quant_word(word: str) -> bool:
    return word in _QUANT_WORDS or _QUANT_WORD.fullmatch(word) is not None


def model_words(text: str) -> list[str]:
    """A name's words as the search compares them: "Qwen2.5-72B" is qwen2.5 and 72b, versions
    kept whole (3.1 is not 3.3)."""
    return _WORD.findall(text.lower())


def _entry_words(text: str) -> list[str]:
    """A preset's words: its name's, each name's letters and version apart too (qwen2.5 is also
    qwen and 2.5), and each two neighbours run together (llama and 3.1 is also llama3.1)."""
    words = []
    for word in model_words(text):
        words.append(word)
        split = _NAME_DIGITS.fullmatch(word)
        if split:
            words.extend(split.groups())
    raw = model_words(text)
    words.extend(a + b for a, b in zip(raw, raw[1:]))
    return words


def typed_id(text, field: str, what: str, example: str) -> str:
    """The value as typed, or one line saying why it is none: not text, empty, too long."""
    if not isinstance(text, str):
        raise InputError(field, f"expected a {what} as text, got {type(text).__name__}")
    cleaned = text.strip().strip("'\"").strip()
    if not cleaned:
        raise InputError(field, f"is empty; give a {what} such as {example}")
    if len(cleaned) > MAX_ID_CHARS:
        raise InputError(field, f"is {len(cleaned):,} characters long; a {what} is at most {MAX_ID_CHARS:,}")
    return cleaned


def shown_id(text: str) -> str:
    return repr(text if len(text) <= 60 else text[:57] + "...")


def _split_tail(name: str, pattern: re.Pattern) -> tuple[str, str]:
    """(the name without its trailing words of `pattern`, those words lower-case, '-' joined)."""
    words = []
    for _ in range(_MAX_STRIPS):
        m = pattern.search(name)
        if m is None or m.start() == 0:
            break
        words.append(m.group()[1:].lower())
        name = name[:m.start()]
    return name, "-".join(reversed(words))


def _core(name: str) -> tuple[str, str]:
    """(a checkpoint name's core: the model and its size, separators as '-'; its quantization
    words). Meta-Llama-3.1-70B-Instruct-FP8 is (meta-llama-3.1-70b, fp8)."""
    name = _GGUF_FILE.sub("", name.strip())
    rest, quant = _split_tail(name, _QUANT_TAIL)
    rest, _ = _split_tail(rest, _CHECKPOINT_TAIL)
    return re.sub(r"[\s_-]+", "-", rest.lower()).strip("-"), quant


@lru_cache(maxsize=None)
def _core_index() -> dict:
    """core -> {preset id: its quantization words}, over every preset's ids, aliases and name."""
    index: dict = {}
    for entry in model_entries():
        for key in (entry["id"], *entry.get("aliases", []), entry["name"]):
            core, quant = _core(key.rsplit("/", 1)[-1])
            if core:
                index.setdefault(core, {}).setdefault(entry["id"], quant)
    return index


@lru_cache(maxsize=None)
def _search_index() -> tuple:
    index = []
    for entry in model_entries():
        text = " ".join([entry["name"], entry["id"], *entry.get("aliases", [])])
        words = frozenset(_entry_words(text))
        family = frozenset(_entry_words(entry["family"])) - words
        index.append((entry, words, family, "".join(model_words(f"{text} {entry['family']}"))))
    return tuple(index)


@dataclass(frozen=True)
class _Ranked:
    score: int          # the list's order: whole words 3, a word's start or the family's word 2, a part 1
    words: int          # whole words alone: what ties presets that fit the words equally well
    level: int          # the weakest match: 3 every word whole (or forgiven), 2 a start, 1 a part
    order: int          # the presets' table order
    entry: dict


def _rank(query: str) -> list[_Ranked]:
    """Every preset matching each word of the query, best first: a whole word of its name or
    id scores 3, its family's word or a word's start 2, a part of the name run together 1;
    words that say which checkpoint or quantization are forgiven when a preset lacks them.
    Words that stand next to each other in the name as in the query add 2 ("3.3 70b" puts
    Llama 3.3 before 3.1)."""
    tokens = model_words(query)
    pairs = [a + b for a, b in zip(tokens, tokens[1:])]
    ranked = []
    for order, (entry, words, family, squashed) in enumerate(_search_index()):
        score, level = 0, 3
        for token in tokens:
            if token in words:
                score += 3
            elif token in _SUFFIX_WORDS or _is_quant_word(token):
                continue
            elif token in family or any(w.startswith(token) for w in words):
                score, level = score + 2, min(level, 2)
            elif token in squashed:
                score, level = score + 1, 1
            else:
                break
        else:
            bonus = sum(2 for pair in pairs if pair in squashed)
            ranked.append(_Ranked(score + bonus, score, level, order, entry))
    ranked.sort(key=lambda r: (-r.score, r.order))
    return ranked


def search_models(query: str) -> list[dict]:
    """Presets matching every word of the query, best first (the page's list, and the order
    `resolve_model` reads words in). Separators and spacing are forgiven ("llama3 70b" finds
    Llama 3.1 70B, "qwen3 32" Qwen3 32B); an empty query lists every preset in table order."""
    if not isinstance(query, str) or not model_words(query[:MAX_ID_CHARS]):
        return list(model_entries())
    return [r.entry for r in _rank(query[:MAX_ID_CHARS])]


@dataclass(frozen=True, eq=False)
class ModelMatch:
    """The preset a typed model is, and how it was found."""
    entry: dict
    typed: str
    how: str                    # "id" (the preset's id or an alias), "variant" (a checkpoint of its name), "words"
    quantization: str = ""      # the typed checkpoint's quantization words (awq, gptq-int4), "" when none
    weights_differ: bool = False  # its weights are not the preset's: their size is unknown
    release: str = ""           # a dated release no id of the preset names (Instruct-2507): its limits may differ

    @property
    def preset_quantization(self) -> str:
        return _core(self.entry["id"].rsplit("/", 1)[-1])[1]

    def weights_words(self) -> str:
        """Whose weights the checkpoint holds, in words: "AWQ's", "the original's"."""
        if self.quantization:
            return f"{self.quantization.upper()}'s"
        return f"the unquantized release's, not the preset's {self.preset_quantization.upper()}"

    def how_words(self) -> str:
        """How the typed name is the preset, for a note or a log's reading."""
        if self.how == "id":
            return ""
        said = f"the preset of identical shape ({self.entry['id']}) to {shown_id(self.typed)}"
        if self.weights_differ:
            return f"{said}; its weights are {self.weights_words()}"
        return said

    def note(self) -> str | None:
        if self.how == "id":
            return None
        text = f"model {shown_id(self.typed)} sized as {self.entry['name']} ({self.entry['id']}), the preset of identical shape"
        if self.weights_differ:
            text += (f"; its weights are {self.weights_words()}, so their size is unknown until given "
                     "(weights-dtype, weights-gib or the checkpoint's files)")
            if has_quantization(self.entry["config"]):
                text += ("; the preset's quantization_config is its own checkpoint's, not taken: the KV cache "
                         "defaults to the model's dtype, not a kv_cache_scheme")
        if self.release:
            text += (f"; {self.release} is a release of its own: a limit its config.json sets (the longest "
                     "context) may differ from the preset's, which its config.json (hf-config) would settle")
        return text


def _model_refusal(typed: str, field: str, candidates: list[dict], strict: bool) -> InputError:
    if not candidates:
        return InputError(field, f"unknown model {typed[:60]!r}; use a preset id such as meta-llama/Llama-3.1-8B "
                                 "(kvcalc --list-models), or import its config.json")
    ids = [entry["id"] for entry in candidates]
    shown = ", ".join(ids[:SHOWN_CANDIDATES]) + (f" or {len(ids) - SHOWN_CANDIDATES} more" if len(ids) > SHOWN_CANDIDATES else "")
    what = f"fits {len(ids)} presets" if strict and len(ids) > 1 else "is no preset's name"
    return InputError(field, f"{shown_id(typed)} {what}; did you mean {shown}? (kvcalc --list-models lists them all)")


def _candidates(text: str) -> list[str]:
    """The names a typed model may be: itself, a Hugging Face cache folder's repo, a local
    path's last two folders and its last."""
    cleaned = text.replace("\\", "/").rstrip("/")
    parts = [p for p in cleaned.split("/") if p not in ("", ".", "..", "~")]
    names = [cleaned]
    for part in parts:
        m = _HF_CACHE.fullmatch(part)
        if m:
            names.append(f"{m[1]}/{m[2]}")
    if len(parts) >= 2:
        names.append("/".join(parts[-2:]))
    if parts:
        names.append(parts[-1])
    return list(dict.fromkeys(names))


def _by_core(name: str, typed: str) -> ModelMatch | list[dict] | None:
    """The preset a checkpoint name is by its core (model and size) and quantization words:
    one with the same quantization, else the unquantized one; several: their entries."""
    core, quant = _core(name.rsplit("/", 1)[-1])
    found = _core_index().get(core)
    if not found:
        return None
    same = [i for i, q in found.items() if q == quant]
    plain = [i for i, q in found.items() if not q]
    chosen = same if same else plain if plain else list(found)
    if len(chosen) > 1:
        return [find_model_entry(i) for i in chosen]
    preset_id = chosen[0]
    entry = find_model_entry(preset_id)
    differ = found[preset_id] != quant
    how = "id" if entry["id"].lower() == name.lower() else "variant"
    return ModelMatch(entry, typed, how, quant, differ, _other_release(name, entry))


_DATE = re.compile(r"(?<![0-9])[0-9]{4}(?![0-9])")


def _other_release(name: str, entry: dict) -> str:
    """A dated release (-2507) the name ends in that none of the preset's ids or name carries."""
    rest, _ = _split_tail(_GGUF_FILE.sub("", name.rsplit("/", 1)[-1]), _QUANT_TAIL)
    _, tail = _split_tail(rest, _CHECKPOINT_TAIL)
    known = " ".join([entry["id"], entry["name"], *entry.get("aliases", [])])
    dates = [d for d in _DATE.findall(tail) if d not in known]
    return "-".join(dates)


def resolve_model(text, field: str = "model") -> ModelMatch:
    """The preset a model is typed as: a preset's id or alias; a checkpoint of its name (with
    or without -Instruct, a dated release, an org's re-release, a quantization: -AWQ, -FP8,
    -GPTQ-Int4, -bnb-4bit, -GGUF, a .gguf file); a local path or Hugging Face cache folder of
    one; or words naming exactly one preset ("llama 3.1 70b", "deepseek-r1"). A quantized
    checkpoint keeps the preset's shapes, its weights marked as not the preset's. Several
    presets equally fit: an InputError naming them ("did you mean"); none: one naming what
    was typed and kvcalc --list-models."""
    typed = typed_id(text, field, "model", "meta-llama/Llama-3.1-8B")
    entry = find_model_entry(typed)
    if entry is not None:
        return ModelMatch(entry, typed, "id")
    names = _candidates(typed)
    for name in names:
        entry = find_model_entry(name)
        if entry is not None:
            return ModelMatch(entry, typed, "variant")
    for name in names[::-1]:          # the last folder first: a path's parents name no model
        found = _by_core(name, typed)
        if isinstance(found, ModelMatch):
            return found
        if found:
            raise _model_refusal(typed, field, found, True)
    _refuse_named_after(names[-1], typed, field)
    return _by_words(names[-1] if len(names) > 1 else typed, typed, field, len(names) == 1)


def _refuse_named_after(name: str, typed: str, field: str) -> None:
    """A name that ends in a preset's name after words of its own (DeepSeek-R1-0528-Qwen3-8B, a
    distill of R1 into Qwen3 8B; Hermes-3-Llama-3.1-8B, a fine-tune) is neither model for sure:
    its shape is the one it ends in only if its config.json says so. Refused, the reason said,
    that preset suggested; never sized as the model its name starts with."""
    core, _ = _core(name.rsplit("/", 1)[-1])
    parts = core.split("-")
    for i in range(1, min(len(parts), 16)):
        found = _core_index().get("-".join(parts[i:]))
        if found and any(c.isalpha() for c in "".join(parts[:i])):
            ids = ", ".join(list(found)[:SHOWN_CANDIDATES])
            raise InputError(field, f"{shown_id(typed)} is no preset's name: it ends in another model's name after "
                                    f"words of its own (a distill or fine-tune: its shape is that model's only if "
                                    f"its config.json says so; import it); did you mean {ids}?")


def _by_words(query: str, typed: str, field: str, resolve: bool = True) -> ModelMatch:
    """The one preset whose whole words are every word typed (checkpoint and quantization
    words forgiven); several equally: "did you mean"; only starts of words: a suggestion. A
    repo id or a path (`resolve` False) is a name, not words: its folder "llama-1b" may be any
    1B Llama, so it is only suggested."""
    ranked = _rank(query)
    if not resolve:
        raise _model_refusal(typed, field, [r.entry for r in ranked if r.level >= 2], False)
    strict = sorted((r for r in ranked if r.level == 3), key=lambda r: (-r.words, r.order))
    if not strict:
        raise _model_refusal(typed, field, [r.entry for r in ranked if r.level == 2], False)
    best = [r.entry for r in strict if r.words == strict[0].words]
    if len(best) > 1:
        # Presets of one name and size, a quantized release beside the original: the original.
        cores = {_core(e["id"].rsplit("/", 1)[-1])[0] for e in best}
        plain = [e for e in best if not _core(e["id"].rsplit("/", 1)[-1])[1]]
        if len(cores) == 1 and len(plain) == 1:
            best = plain
        else:
            raise _model_refusal(typed, field, best, True)
    entry = best[0]
    quant = "-".join(t for t in model_words(query) if _is_quant_word(t) and t not in ("k", "m", "s", "l"))
    preset_quant = _core(entry["id"].rsplit("/", 1)[-1])[1]
    differ = set(quant.split("-")) - {""} != set(preset_quant.split("-")) - {""}
    return ModelMatch(entry, typed, "words", quant, differ)


def model_match_for(text) -> ModelMatch | None:
    """How a typed model resolves (`resolve_model`), or None (unknown, ambiguous or not text)."""
    try:
        return resolve_model(text)
    except InputError:
        return None


def model_entry_for(text) -> dict | None:
    """The preset a typed model resolves to, or None (unknown, ambiguous or not text)."""
    match = model_match_for(text)
    return None if match is None else match.entry
