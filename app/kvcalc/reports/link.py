"""Share links: the inputs in the URL fragment, keyed by the CLI's long option names.

A fragment is input from a stranger. Decoding never raises: what is valid is kept, and every
key that is dropped comes back with the reason, so the page can say what it ignored.
"""

import base64
import json
import zlib
from fractions import Fraction

from ..errors import InputError
from ..readers.hfconfig import MAX_CONFIG_BYTES, parse_config_text
from ..evaluation import Evaluation, evaluate
from ..inputs.options import MODEL_INPUTS, OPTION_BY_NAME, OPTIONS, parse_value

# Percent-encoding (RFC 3986) by hand: urllib.parse takes ~50 ms to import in Pyodide, a third
# of the page's own start-up, for two small functions.
_UNRESERVED = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
_HEX = "0123456789ABCDEF"


def quote(text: str, safe: str = "/") -> str:
    keep = _UNRESERVED | frozenset(safe.encode())
    return "".join(chr(b) if b in keep else f"%{_HEX[b >> 4]}{_HEX[b & 15]}" for b in text.encode("utf-8"))


def unquote(text: str, errors: str = "replace") -> str:
    """%XX sequences to bytes, then UTF-8 (bad sequences replaced); a stray % stays as it is."""
    if "%" not in text:
        return text
    out = bytearray()
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch == "%" and i + 2 < n and _is_hex(text[i + 1:i + 3]):
            out.append(int(text[i + 1:i + 3], 16))
            i += 3
        else:
            out.extend(ch.encode("utf-8"))
            i += 1
    return out.decode("utf-8", errors)


def _is_hex(pair: str) -> bool:
    return len(pair) == 2 and all(c in "0123456789abcdefABCDEF" for c in pair)


MAX_FRAGMENT_CHARS = 256 * 1024
MAX_PAIRS = 64
MAX_PINS = 4          # pinned configurations for side-by-side comparison
PIN_KEY = "pin"
# The page's sections opened, in the page's order (open=plan,time): the view, not an input, so the
# CLI reads past it and the evaluation never sees it.
OPEN_KEY = "open"


def _decimal(value: Fraction) -> str:
    """Exact decimal text for a fraction whose denominator is 2^a 5^b (anything typed as decimal)."""
    if value.denominator == 1:
        return str(value.numerator)
    digits = 0
    while (value * 10 ** digits).denominator != 1:
        digits += 1
        if digits > 30:
            return repr(float(value))
    scaled = value.numerator * 10 ** digits // value.denominator
    text = str(scaled).rjust(digits + 1, "0")
    return (text[:-digits] + "." + text[-digits:]).rstrip("0").rstrip(".")


def encode_config(cfg: dict) -> str:
    packed = zlib.compress(json.dumps(cfg, separators=(",", ":"), sort_keys=True).encode(), 9)
    return base64.urlsafe_b64encode(packed).decode().rstrip("=")


def decode_config(text: str, field: str = "hf-config") -> dict:
    try:
        packed = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
        inflater = zlib.decompressobj()
        raw = inflater.decompress(packed, MAX_CONFIG_BYTES + 1)
    except (ValueError, zlib.error):
        raise InputError(field, "the embedded config.json is damaged (not base64url + zlib)") from None
    if len(raw) > MAX_CONFIG_BYTES or inflater.unconsumed_tail:
        raise InputError(field, f"the embedded config.json is over {MAX_CONFIG_BYTES:,} bytes")
    return parse_config_text(raw, field)        # a draft's config names draft-hf-config


def encode(values: dict, pins=(), opened=()) -> str:
    """Fragment text (without '#') for typed or raw values, in the schema's order; each pinned
    configuration (itself a fragment) rides along percent-encoded under `pin`, and the page's
    sections opened under `open`."""
    parts = []
    for option in OPTIONS:
        value = values.get(option.name)
        if value is None or value == "":
            continue
        if option.kind == "config":
            text = encode_config(value)
        elif isinstance(value, Fraction):
            text = _decimal(value)
        elif isinstance(value, tuple):      # a typed list: GPUs, precisions, (GPU, price) pairs
            text = ",".join(f"{v[0]}:{_decimal(Fraction(v[1]))}" if isinstance(v, tuple) else str(v) for v in value)
        else:
            text = str(value)
        parts.append(f"{option.name}={quote(text, safe='/-_.:')}")
    parts.extend(f"{PIN_KEY}={quote(pin, safe='')}" for pin in list(pins)[:MAX_PINS])
    if opened:
        parts.append(f"{OPEN_KEY}={','.join(quote(name, safe='-') for name in opened)}")
    return "&".join(parts)


def decode_open(fragment: str) -> tuple[list[str], list[tuple[str, str]]]:
    """The names of the sections a link opens, as written (the page keeps those it has), and a
    second `open` said as ignored, as decode says of any repeated key."""
    if not isinstance(fragment, str) or len(fragment) > MAX_FRAGMENT_CHARS:
        return [], []
    names, ignored = None, []
    for pair in fragment.lstrip("#").split("&")[:MAX_PAIRS]:
        key, _, text = pair.partition("=")
        if _safe(unquote(key, errors="replace")) != OPEN_KEY:
            continue
        if names is not None:
            ignored.append((OPEN_KEY, "repeated; the first value was kept"))
            break
        names = [name for name in unquote(text, errors="replace").split(",") if name][:MAX_PAIRS]
    return names or [], ignored


def decode_pins(fragment: str) -> tuple[list[str], list[tuple[str, str]]]:
    """The pinned configurations' fragments, at most MAX_PINS, each still to be decoded."""
    if not isinstance(fragment, str) or len(fragment) > MAX_FRAGMENT_CHARS:
        return [], []
    pins, ignored = [], []
    for pair in fragment.lstrip("#").split("&")[:MAX_PAIRS]:
        key, _, text = pair.partition("=")
        if key != PIN_KEY:
            continue
        if len(pins) == MAX_PINS:
            ignored.append((PIN_KEY, f"more than {MAX_PINS} pinned configurations; the rest were ignored"))
            break
        pins.append(unquote(text, errors="replace"))
    return pins, ignored


def decode(fragment: str) -> tuple[dict, list[tuple[str, str]]]:
    """(raw values, [(key, why ignored)]). Values keep their text, hf-config becomes a dict."""
    ignored: list[tuple[str, str]] = []
    if not isinstance(fragment, str):
        return {}, [("link", "not text")]
    if fragment.startswith("#"):
        fragment = fragment[1:]
    if len(fragment) > MAX_FRAGMENT_CHARS:
        return {}, [("link", f"the link is {len(fragment):,} characters; the limit is {MAX_FRAGMENT_CHARS:,}")]
    raw: dict = {}
    pairs = [p for p in fragment.split("&") if p]
    if len(pairs) > MAX_PAIRS:
        ignored.append(("link", f"{len(pairs) - MAX_PAIRS} entries past the first {MAX_PAIRS} were ignored"))
        pairs = pairs[:MAX_PAIRS]
    for pair in pairs:
        key, sep, text = pair.partition("=")
        key = _safe(unquote(key, errors="replace"))
        text = unquote(text, errors="replace")
        if key == PIN_KEY or key == OPEN_KEY:
            continue              # pinned configurations and the sections opened: decode_pins, decode_open
        option = OPTION_BY_NAME.get(key)
        if option is None:
            ignored.append((key[:40], "unknown key"))
            continue
        if key in raw:
            ignored.append((key, "repeated; the first value was kept"))
            continue
        if not sep or not text:
            ignored.append((key, "empty value"))
            continue
        try:
            value = decode_config(text, key) if option.kind == "config" else text
            parse_value(option, value)
        except InputError as e:
            ignored.append((key, e.message))
            continue
        raw[key] = value
    return raw, ignored


def _safe(text: str) -> str:
    # Keys are echoed back to the user; keep them printable and short.
    return "".join(ch if ch.isprintable() else "?" for ch in text)[:40]


def evaluate_link(fragment: str) -> tuple[Evaluation, list[tuple[str, str]]]:
    """Evaluate what a link holds, dropping any field the engine refuses, each with its reason."""
    _, evaluation, ignored = load(fragment)
    return evaluation, ignored


# A link that names no model is still checked field by field against this one; the page shows
# its own current model, the CLI says the model is missing.
PROBE_MODEL = "meta-llama/Llama-3.1-8B"


def load(fragment: str) -> tuple[dict, Evaluation, list[tuple[str, str]]]:
    """(the raw values kept, their evaluation, [(key, why ignored)]) for a link."""
    raw, ignored = decode(fragment)
    no_model = not any(key in raw for key in MODEL_INPUTS)
    for _ in range(len(raw) + 1):
        probe = dict(raw, model=PROBE_MODEL) if no_model else raw
        evaluation = evaluate(probe)
        if evaluation.ok or not evaluation.errors:
            break
        error = evaluation.errors[0]
        culprit = _culprit(error.field, raw)
        if culprit is None:
            break
        ignored.append((culprit, error.message if culprit == error.field else f"{error.field}: {error.message}"))
        del raw[culprit]
    if no_model:
        evaluation = evaluate(raw)
    return raw, evaluation, ignored


# An error can name a value the link did not set (tp derived from gpus, a key inside the
# config); drop the entry it came from.
_DERIVED_FROM = {"tp": ("gpus", "pp", "dp"), "pp": ("gpus",), "dp": ("gpus",), "gpus": ("tp", "pp", "dp"),
                 "params": ("gpu-memory-gib", "gpu"), "kv-dtype": (), "layers": ("kv-heads", "head-dim")}


def _culprit(field: str, raw: dict) -> str | None:
    if field in raw:
        return field
    for candidate in _DERIVED_FROM.get(field, ()):
        if candidate in raw:
            return candidate
    if field not in OPTION_BY_NAME and "hf-config" in raw:
        return "hf-config"
    return None
