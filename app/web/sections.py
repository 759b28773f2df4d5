"""The page's sections beyond the answer: each a fold (<details data-fold>) closed until opened,
the ones open kept in the link (open=plan,time), and a link to one (the summary's index, "What
do I need?") opens it and lands below the sticky summary."""

import sys

from pyscript import document, window

from web import state
from web.dom import absent, el, guarded, proxy


# What a fold draws when it opens, for a section drawn only while open (web.loop fills it).
ON_OPEN = {}


def is_open(name: str) -> bool:
    fold = el(f'details[data-fold="{name}"]')
    return fold is not None and bool(fold.open)


def opened() -> list[str]:
    return [fold.getAttribute("data-fold") for fold in document.querySelectorAll("details[data-fold][open]")]


def open_from_link(wanted: list[str]) -> list[str]:
    """Open the folds a link names, close the others; the names it gave that the page has no
    section for, for the link's notes."""
    known = []
    for fold in document.querySelectorAll("details[data-fold]"):
        known.append(fold.getAttribute("data-fold"))
        if bool(fold.open) != (known[-1] in wanted):
            fold.open = known[-1] in wanted
    state.opened = opened()
    return [name for name in wanted if name not in known]


def on_toggle(event) -> bool:
    """A fold opened or closed by the user: whether the folds open changed (the link is then
    rewritten by the caller); a fold opened is drawn for the figures on screen, at its width."""
    fold = event.target
    # Other <details> toggle too (Advanced, Production, a plan row's why): only a fold counts.
    if absent(fold) or absent(getattr(fold, "getAttribute", None)) or absent(fold.getAttribute("data-fold")):
        return False
    try:
        if fold.open:
            _draw_opened(fold)
        now = opened()
        changed = now != state.opened
        state.opened = now
        return changed
    finally:
        settled(fold)


def _draw_opened(fold) -> None:
    # Drawn whether or not the list of folds open changed: two folds opened in one task (or by a
    # link) change it once, and each must still be drawn (ON_OPEN skips one drawn already).
    resize_charts()             # a chart drawn while its fold was closed had no width to take
    name = fold.getAttribute("data-fold")
    if name in ON_OPEN:
        ON_OPEN[name]()


def resize_charts(*_) -> None:
    # Only charts drawn have a width to follow: web.plot is loaded with the first (web/folds.py).
    if "web.plot" in sys.modules:
        sys.modules["web.plot"].resize()


def settled(fold=None) -> None:
    """Say on each fold (or on `fold`) that Python has handled its opening or closing: open and
    drawn where there are figures (data-drawn="true"), or closed. After the first figures too,
    for a fold opened before Python was listening (the first update drew it)."""
    for each in [fold] if fold is not None else document.querySelectorAll("details[data-fold]"):
        each.dataset.drawn = "true" if each.open else "false"


def reveal(target) -> None:
    """Open every fold around `target` (or `target` itself, a fold), then scroll it into view
    below the summary where the summary stays on screen (it is sticky on wide screens)."""
    node = target
    while not absent(node):
        if getattr(node, "tagName", "") == "DETAILS" and not node.open:
            node.open = True
        node = node.parentElement
    target.scrollIntoView()
    summary = el("#summary")
    if summary is not None and window.getComputedStyle(summary).position == "sticky":
        under = target.getBoundingClientRect().top - summary.getBoundingClientRect().bottom
        if under < 0:
            window.scrollBy(0, under - 8)


def wire(handler) -> None:
    # "toggle" does not bubble: listened to on the document in the capture phase.
    document.addEventListener("toggle", proxy(guarded(handler)), True)
