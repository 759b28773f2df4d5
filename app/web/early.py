"""What a user typed while Python was starting: the boot script notes which controls changed;
here their values are taken before the page writes a link or its defaults, and put back after,
so the first computation is of what the user typed (never silently dropped).

The boot script also shows a link's inputs in the form before Python runs; those are its view,
not the user's: forget_preview puts back what those controls held, and Python loads the link."""

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


def forget_preview() -> None:
    """Put back what the controls held before the boot script wrote a link's inputs into them
    (kvcalcStart.preview: id, value, checked, in the order written), so share.load reads the link
    exactly as if they had never been written. Run after take(): a control the user then edited
    is restored from what take() kept."""
    start = window.kvcalcStart
    written = None if absent(start) else start.preview
    if absent(written):
        return
    for index in reversed(range(written.length)):
        before = written[index]
        element = document.getElementById(before.id)
        if absent(element):
            continue
        if element.type in ("radio", "checkbox"):
            element.checked = bool(before.checked)
        else:
            element.value = before.value
    start.preview = []
