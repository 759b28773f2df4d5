"""The page's form as the engine's raw inputs, as pure functions: only the chosen model's fields,
no blanks, no default that is not a choice."""

from .options import MANUAL_FIELDS, OPTION_BY_NAME


MLA_ONLY = ("mla-rank", "mla-rope-dim")


def form_values(fields: dict, attention_kind: str = "gqa", config: dict | None = None) -> dict:
    """The page form's fields (name -> text, `model` being the select's value: a preset id,
    "custom" or "config") as the engine's raw inputs: only the chosen model's fields, no blanks."""
    raw = dict(fields)
    choice = raw.pop("model", "") or ""
    for name in MANUAL_FIELDS:
        value = raw.pop(name, "")
        mla_field = name in MLA_ONLY
        if choice == "custom" and (name == "layers" or mla_field == (attention_kind == "mla")):
            raw[name] = value
    if choice == "config":
        if config is not None:
            raw["hf-config"] = config
    elif choice != "custom":
        raw["model"] = choice
    if str(raw.get("unit", "")).lower() == "gib":
        raw.pop("unit")
    if str(raw.get("batch", "")).strip() == OPTION_BY_NAME["batch"].default:
        # The form always holds a batch; its default one request is not a choice to pass to a
        # server as its concurrency limit.
        raw.pop("batch")
    return {k: v for k, v in raw.items() if v not in ("", None)}
