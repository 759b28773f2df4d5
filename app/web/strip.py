"""The headline strip on a phone: closed it keeps a steady height (two lines of the verdict);
tapped, it opens to the whole verdict and its conditions, and closes again."""

from web.dom import el, put


def on_toggle(*_) -> None:
    opened = getattr(el("#summary").dataset, "expanded", "false") != "true"
    put("#summary", "true" if opened else "false", "expanded")
    put("#strip-toggle", "true" if opened else "false", "aria-expanded")
    put("#strip-toggle", "Close the verdict" if opened else "Read the whole verdict")


def on_verdict_click(event) -> None:
    """A tap on the clamped verdict opens it too: it is where the eye is."""
    if el("#strip-toggle").offsetParent is not None:      # only where the toggle is shown (a phone)
        on_toggle(event)
