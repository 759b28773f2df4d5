"""What a user typed while Python was starting: the boot script notes which controls changed;
here their values are taken before the page writes a link or its defaults, and put back after,
so the first computation is of what the user typed (never silently dropped)."""

from pyscript import document, window

from web.dom import absent


def take() -> dict:
    """id -> (value, checked) of every control edited before start; stops the recording."""
    edited = window.kvcalcEdited
    window.kvcalcEdited = None
    kept = {}
    if absent(edited):
        return kept
    for index in range(edited.length):
        element = document.getElementById(edited[index])
        if not absent(element) and element.id not in kept:
            kept[element.id] = (element.value, bool(element.checked))
    return kept


def restore(kept: dict) -> None:
    for element_id, (value, checked) in kept.items():
        element = document.getElementById(element_id)
        if element.type in ("radio", "checkbox"):
            element.checked = checked
        else:
            element.value = value
    if kept:
        # The status line said the changes would be computed; from now on they simply are.
        document.documentElement.removeAttribute("data-typed")
