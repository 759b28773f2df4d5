"""The form: reading its controls as the engine's raw inputs, writing a link's inputs into it,
and the folded groups (Advanced, Production) that open when one of their values differs from
the page's default."""

import json

from pyscript import document

from kvcalc.errors import InputError
from kvcalc.readers.hfconfig import MAX_CONFIG_BYTES
from kvcalc.inputs.form_fields import MLA_ONLY, form_values
from kvcalc.engines import REGISTRY
from kvcalc.inputs.options import EXACT, MANUAL_FIELDS, OPTION_BY_NAME, OPTIONS, canonical_value, parse_value
from kvcalc.parallel import gpus_given

from web import model_picker, state
from web.dom import absent, el

DEFAULTS = {o.name: o.default for o in OPTIONS}
fields = {}             # option name -> the form's current text, kept in step with the controls


def sync() -> None:
    """Read every control (on start and after the page itself rewrote the form)."""
    fields.clear()
    for element in document.querySelectorAll("[data-option]"):
        if element.type != "radio" or element.checked:
            fields[element.dataset.option] = element.value
    fields["attention-kind"] = el("#attention-kind").value


def note(target) -> None:
    """One control changed: read just that one."""
    if absent(target):
        return
    if target.id == "attention-kind":
        fields["attention-kind"] = target.value
        return
    name = getattr(target.dataset, "option", None)
    if not absent(name) and name and (target.type != "radio" or target.checked):
        fields[name] = target.value


def set_field(name: str, value: str) -> None:
    el(f"#{name}").value = fields[name] = value


def unit() -> str:
    return fields.get("unit", "gib")


def model_choice() -> str:
    return fields.get("model", "")


def read() -> dict:
    """The inputs as the engine's raw values, keyed by option name."""
    values = {k: v for k, v in fields.items() if k != "attention-kind"}
    return form_values(values, fields.get("attention-kind", "gqa"), state.config)


def link_values(raw: dict) -> dict:
    """What goes into the share link: every input that differs from the CLI's defaults."""
    return {k: v for k, v in raw.items() if str(v) != str(DEFAULTS.get(k))}


def write(raw: dict) -> None:
    """Show a link's inputs. A key the link leaves out takes the CLI's default, so the page and
    `kvcalc --link` read the same link the same way."""
    manual = [name for name in MANUAL_FIELDS if name in raw]
    if "tp" in raw and "gpus" not in raw:
        # The CLI derives gpus from tp x pp x dp; the page's GPU count must say the same.
        tp = parse_value(OPTION_BY_NAME["tp"], raw["tp"])
        pp = parse_value(OPTION_BY_NAME["pp"], raw.get("pp", "1"))
        dp = parse_value(OPTION_BY_NAME["dp"], raw.get("dp", "1"))
        try:
            engine = parse_value(OPTION_BY_NAME["engine"], raw["engine"]) if raw.get("engine") else None
        except InputError:
            engine = None
        # In the engine's own words: SGLang's --tp-size counts every GPU under DP attention.
        raw = dict(raw, gpus=str(gpus_given(tp, pp, dp, REGISTRY.get(engine or ""))))
    for element in document.querySelectorAll("[data-option]"):
        name = element.dataset.option
        value = raw.get(name, DEFAULTS.get(name))
        if name == "engine" and not value:
            value = EXACT       # a link without an engine is the exact ideal; the page's own default is vLLM
        elif name not in raw and element.tagName == "INPUT" and element.defaultValue == "":
            # Left empty by the page (the memory utilization: each engine's own default), a key
            # the link leaves out stays unset, as `kvcalc --link` reads it, not set to the CLI's 1.
            value = ""
        try:
            value = canonical_value(name, value)
        except InputError:
            pass
        if element.type == "radio":
            element.checked = element.value == (value or "gib")
        elif name != "model" and (name not in MANUAL_FIELDS or manual):
            element.value = "" if value is None else str(value)
    if "hf-config" in raw:
        model_picker.choose("config")
        state.config, state.config_error = raw["hf-config"], None
        pretty = json.dumps(raw["hf-config"], indent=2)
        # A config near the size limit goes in compact, so the page can read its own link back.
        el("#hf-config").value = pretty if len(pretty) <= MAX_CONFIG_BYTES else json.dumps(raw["hf-config"])
    elif manual:
        model_picker.choose("custom")
        el("#attention-kind").value = "mla" if any(n in raw for n in MLA_ONLY) else "gqa"
    elif "model" in raw:
        model_picker.choose(canonical_value("model", raw["model"]))
    model_picker.show_fields()
    sync()
    open_advanced_if_set()


FOLDED_GROUPS = ("#advanced", "#serving")


def open_advanced_if_set() -> None:
    """Open each folded group (Advanced, Production) when any of its controls holds something
    other than the page's own default, so a link's tp or LoRA slots are never hidden."""
    for selector in FOLDED_GROUPS:
        group = el(selector)
        if any(_changed(element) for element in group.querySelectorAll("input, select")):
            group.open = True


def _changed(element) -> bool:
    if element.tagName == "SELECT":
        initial = next((i for i, o in enumerate(element.options) if o.defaultSelected), 0)
        return element.selectedIndex != initial
    return element.value != element.defaultValue


def on_context_shortcut(event) -> bool:
    """A context shortcut button: True when it set the context."""
    button = event.target.closest("button")
    value = None if absent(button) else getattr(button.dataset, "context", None)
    if absent(value) or not value:
        return False
    set_field("context", value)
    return True
