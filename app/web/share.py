"""The share link: inputs and pins in the URL fragment (which no server sees), written once
edits pause; read back on load and when the fragment changes."""

from pyscript import window

from kvcalc.reports import link
from kvcalc.inputs.options import MODEL_INPUTS

from web import form, pending, sections, state, strip
from web.errors import in_page_words, label
from web.dom import absent, copy_text, el, js_obj, proxy, put, q

URL_DELAY_MS = 80
_link = {"last": None, "due": None, "timer": None}


def schedule(raw: dict) -> None:
    """Rewrite the fragment once a burst of edits pauses: replaceState costs ~2.5 ms in
    Chromium, which throttles it when called on every keystroke. Copy link flushes it first."""
    fragment = link.encode(form.link_values(raw), pins=state.pins, opened=state.opened)
    if fragment == _link["last"]:
        return
    _link["last"] = _link["due"] = fragment
    if _link["timer"] is not None:
        window.clearTimeout(_link["timer"])
    _link["timer"] = window.setTimeout(_write_proxy, URL_DELAY_MS)
    pending.mark("link", True)


def flush(*_) -> None:
    if _link["timer"] is not None:
        window.clearTimeout(_link["timer"])
    _write()


def _write(*_) -> None:
    fragment, _link["due"], _link["timer"] = _link["due"], None, None
    if fragment is not None:
        window.history.replaceState(None, "", "#" + fragment if fragment else window.location.pathname)
    pending.mark("link", False)


_write_proxy = proxy(_write)


def on_copy(*_) -> None:
    flush()
    url = window.location.href
    copy_text(url, "#copy-status",
              "Copied the link to the last valid inputs: the ones marked in error are not in it."
              if state.stale else "Link copied. It holds every input; nothing is stored anywhere else.",
              f"Copy this link: {url}")


def load(fragment: str) -> dict:
    """Write a link's inputs and pins into the page; what was ignored is said. The inputs kept."""
    kept, _, dropped = link.load(fragment)
    state.pins[:], pin_notes = link.decode_pins(fragment)
    form.write(kept)
    opened, open_notes = link.decode_open(fragment)
    notes = [f"{label(key)}: {in_page_words(why)}" for key, why in dropped + pin_notes + open_notes]
    notes += [f"open: the page has no section {name[:40]!r}" for name in sections.open_from_link(opened)]
    # A key the page has no field for (a draft's config.json) is said, never silently left out.
    notes += [f"{key}: not an input on this page; the CLI reads it (kvcalc --link)" for key in kept
              if key != "hf-config" and q(f'[data-option="{key}"]') is None]
    if not any(k in kept for k in MODEL_INPUTS) and not any(k in MODEL_INPUTS for k, _ in dropped):
        notes.append(f"model: the link names none; showing {el('#model-search').value}")
    put("#link-notes", ("This link had entries that were ignored: " + "; ".join(notes)) if notes else "")
    _link["last"] = fragment
    return kept


def is_link(fragment: str) -> bool:
    """A share link holds key=value entries; a bare name is an in-page anchor (#privacy-proof)."""
    return "=" in fragment or not fragment


def current_fragment() -> str:
    fragment = window.location.hash.lstrip("#")
    return fragment if is_link(fragment) else ""


def changed_from_outside() -> str | None:
    """The fragment, when someone other than this page changed it (a pasted link, Back)."""
    fragment = window.location.hash.lstrip("#")
    if fragment == _link["last"] or not is_link(fragment):
        return None
    return fragment


def on_section_toggle(event) -> None:
    if sections.on_toggle(event) and state.raw is not None:
        schedule(state.raw)         # the link keeps the sections open


def on_anchor_click(event) -> None:
    """In-page links scroll to their target without touching the fragment, which holds the inputs."""
    anchor = event.target.closest('a[href^="#"]')
    if absent(anchor):
        return
    target = el(anchor.getAttribute("href"))
    if target is not None:
        event.preventDefault()
        strip.close()               # a phone's opened strip: what the link leads to shows below it
        sections.reveal(target)
        target.setAttribute("tabindex", "-1")
        target.focus(js_obj({"preventScroll": True}))
