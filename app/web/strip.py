"""The headline strip on a phone: closed it keeps a steady height (two lines of the verdict);
tapped, it opens to the whole verdict and its conditions, and closes again. Closed, its toggle
says when the whole verdict holds what a pasted log left unsaid or printed otherwise (#log-check,
hidden in the closed strip)."""

from web.dom import el, put


def _opened() -> bool:
    return getattr(el("#summary").dataset, "expanded", "false") == "true"


def relabel() -> None:
    """The toggle's words for the strip's state and for what only the whole verdict shows."""
    if _opened():
        put("#strip-toggle", "Close the verdict")
    elif not el("#log-check").hidden:
        put("#strip-toggle", "Read the whole verdict: a note on the log")
    else:
        put("#strip-toggle", "Read the whole verdict")


def on_toggle(*_) -> None:
    opened = not _opened()
    put("#summary", "true" if opened else "false", "expanded")
    put("#strip-toggle", "true" if opened else "false", "aria-expanded")
    relabel()


def close() -> None:
    """Closed again once a link in it was followed: what it led to is then in view below it."""
    if _opened():
        on_toggle()


def on_verdict_click(event) -> None:
    """A tap on the clamped verdict opens it too: it is where the eye is."""
    if el("#strip-toggle").offsetParent is not None:      # only where the toggle is shown (a phone)
        on_toggle(event)
