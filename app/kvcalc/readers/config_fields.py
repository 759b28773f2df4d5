"""Typed reads of one config.json object, every refusal naming the key: the one reader that
hfconfig (the cache's shape) and params (the parameter count) both read through."""

import json

from ..errors import InputError

MAX_DIM = 1 << 20            # no real head count or head dim comes near this


class InvalidValue(InputError):
    """A key the config does set, to something no model has: the config is refused, where a key
    that is only missing may leave a figure unknown (the parameter count) and say so."""


def show(value) -> str:
    """A config value as the user wrote it, short."""
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 64:
        return "a number too large to show"
    try:
        text = json.dumps(value) if not isinstance(value, str) else repr(value)
    except (TypeError, ValueError, RecursionError):
        text = type(value).__name__
    return text if len(text) <= 40 else text[:37] + "..."


class ConfigFields:
    """One config dict (or its text_config) with its key prefix for messages. `missing` says
    why a missing key matters to this reader."""

    def __init__(self, cfg: dict, prefix: str = "", maximum: int = MAX_DIM, missing: str = "missing from config.json"):
        self.cfg, self.prefix, self.maximum, self.missing = cfg, prefix, maximum, missing

    def has(self, key) -> bool:
        return self.cfg.get(key) is not None

    def first(self, *keys):
        for key in keys:
            if self.cfg.get(key) is not None:
                return key
        return None

    def int(self, key: str, default: int | None = None, *, minimum: int = 1, maximum: int | None = None,
            also: tuple = ()) -> int:
        """A whole number within [minimum, maximum] from the first of `key`, *also* that is set,
        else `default`; whatever the config holds there is checked, never passed on."""
        found = self.first(key, *also)
        if found is None:
            if default is not None:
                return default
            raise InputError(self.prefix + key, self.missing)
        value = self.cfg[found]
        maximum = self.maximum if maximum is None else maximum
        if isinstance(value, float) and value.is_integer() and abs(value) < 1 << 53:
            value = int(value)
        if isinstance(value, bool) or not isinstance(value, int):
            raise InvalidValue(self.prefix + found, f"expected a whole number, got {show(value)}")
        if not minimum <= value <= maximum:
            raise InvalidValue(self.prefix + found, f"{show(value)} is out of range; allowed {minimum:,} to {maximum:,}")
        return value

    # Below the method named int, the annotations name the type as text.
    def opt_int(self, key: str, **kw) -> "int | None":
        return self.int(key, **kw) if self.has(key) else None

    def need_int(self, *keys, **kw) -> "int":
        key = self.first(*keys)
        if key is None:
            raise InputError(self.prefix + keys[0], f"missing from config.json (also looked for: "
                                                    f"{', '.join(keys[1:]) or 'nothing else'})")
        return self.int(key, **kw)

    def flag(self, key: str | None, default: bool = False) -> bool:
        if key is None or self.cfg.get(key) is None:
            return default
        value = self.cfg[key]
        if not isinstance(value, bool):
            raise InvalidValue(self.prefix + key, f"expected true or false, got {show(value)}")
        return value

    def layer_set(self, key: str, layers: "int") -> frozenset:
        """Layer indices listed under `key` (Qwen MoE's mlp_only_layers), each within the model."""
        value = self.cfg.get(key)
        if value is None:
            return frozenset()
        if not isinstance(value, list) or not all(isinstance(i, int) and not isinstance(i, bool)
                                                  and 0 <= i < layers for i in value):
            raise InvalidValue(self.prefix + key, f"expected a list of layer indices from 0 to {layers - 1}, "
                                                  f"got {show(value)}")
        return frozenset(value)
