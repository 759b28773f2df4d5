"""The Production group's inputs (issue 26): the draft model's field offers the presets (a
datalist of their ids, named), filled the first time the group opens or the field takes focus,
so the page starts without it. The fields themselves are read, written and checked like every
other (web.form, web.errors): each is named by its engine option."""

from pyscript import document

from kvcalc.readers import presets

from web.dom import el, on

_filled = []


def fill_presets(*_) -> None:
    """The draft's suggestions: every preset's id, with its name beside it."""
    if _filled:
        return
    _filled.append(True)
    box = el("#draft-presets")
    for entry in presets.model_entries():
        option = document.createElement("option")
        option.value = entry["id"]
        option.label = entry["name"]
        box.appendChild(option)


def wire() -> None:
    on(el("#serving"), "toggle", fill_presets)
    on(el("#draft-model"), "focus", fill_presets)
