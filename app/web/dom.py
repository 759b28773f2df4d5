"""Page access for the other modules: look elements up once, write only what changed, keep
JS callbacks alive. Every value from a user, a link or a file goes in as textContent or a
form control's value, never as markup."""

import js
from pyodide.ffi import jsnull
from pyscript import document, window
from pyscript.ffi import create_proxy, to_js

HTML = document.documentElement
_proxies = []           # JS callbacks must outlive the call that made them
_elements = {}          # selector -> element; the page's structure is fixed, so look each up once
_written = {}           # (selector, what) -> the last value written there


def absent(value) -> bool:
    # Pyodide hands JS null over as jsnull, not None.
    return value is None or value is jsnull


def q(selector):
    """The element, or None."""
    element = document.querySelector(selector)
    return None if absent(element) else element


def el(selector):
    element = _elements.get(selector)
    if element is None:
        element = _elements[selector] = q(selector)
    return element


def put(selector: str, value, what: str = "text") -> None:
    """Write a text, a property or a data-* value only when it differs from the last write:
    every call into the page costs about 10 us from Pyodide, and most would change nothing."""
    key = (selector, what)
    if _written.get(key) == value:
        return
    _written[key] = value
    element = el(selector)
    if what == "text":
        element.textContent = value
    elif what in ("className", "hidden", "disabled", "href"):
        setattr(element, what, value)
    elif what == "width":
        element.style.width = value
    elif what.startswith("aria-"):
        element.setAttribute(what, value)
    else:
        setattr(element.dataset, what, value)


def proxy(fn):
    """A Python function JS may call later, kept alive for the page's lifetime."""
    made = create_proxy(fn)
    _proxies.append(made)
    return made


_fault = [None]         # what to do with an exception a handler let out (web.errors.fault)


def on_fault(report) -> None:
    _fault[0] = report


def guarded(fn):
    """fn, with anything it raises shown on the page as a refusal instead of escaping into the
    console as a traceback (and leaving the last figures looking current)."""
    def call(*args):
        try:
            return fn(*args)
        except Exception as e:      # noqa: BLE001 - the page's one boundary
            if _fault[0] is None:
                raise
            _fault[0](e)
    return call


def on(element, event: str, handler) -> None:
    element.addEventListener(event, proxy(guarded(handler)))


def js_obj(value):
    return to_js(value, dict_converter=js.Object.fromEntries)


def copy_text(text: str, status: str, done_text: str = "Copied.",
              failed_text: str = "Copy failed: select the text and copy it.") -> None:
    """Put text on the clipboard and say so in the status element."""
    try:
        window.navigator.clipboard.writeText(text).then(proxy(lambda *_: put(status, done_text)),
                                                        proxy(lambda *_: put(status, failed_text)))
    except Exception:      # no clipboard API in this browser
        put(status, failed_text)


class Rows:
    """A tbody or list whose rows are built once and rewritten cell by cell where text changed.
    A row is (row class, [(text, data-value or None, cell class), ...])."""

    def __init__(self, container, item_tag="tr", first_cell_tag="th", cell_tag="td"):
        self.container, self.item_tag = container, item_tag
        self.first_cell_tag, self.cell_tag = first_cell_tag, cell_tag
        self.items, self.shape, self.last = [], None, []

    def show(self, rows) -> None:
        shape = [len(cells) for _, cells in rows]
        if shape != self.shape:
            self._build(rows)
            return
        for (item, cells), old, new in zip(self.items, self.last, rows):
            if old[0] != new[0]:
                item.className = new[0]
            for cell, before, after in zip(cells, old[1], new[1]):
                if before[0] != after[0]:
                    cell.textContent = after[0]
                if before[1] != after[1]:
                    cell.dataset.value = after[1] or ""
                if before[2] != after[2]:
                    cell.className = after[2]
        self.last = rows

    def _build(self, rows) -> None:
        self.container.replaceChildren()
        self.items = []
        for row_class, cells in rows:
            item = document.createElement(self.item_tag)
            item.className = row_class
            made = []
            for i, (text, value, cell_class) in enumerate(cells):
                cell = item if self.item_tag == "li" else document.createElement(
                    self.first_cell_tag if i == 0 else self.cell_tag)
                if self.item_tag != "li":
                    if i == 0 and self.first_cell_tag == "th":
                        cell.scope = "row"
                    item.appendChild(cell)
                cell.textContent = text
                if value is not None:
                    cell.dataset.value = value
                if cell_class:
                    cell.className = cell_class
                made.append(cell)
            self.container.appendChild(item)
            self.items.append((item, made))
        self.shape, self.last = [len(cells) for _, cells in rows], rows


_views = {}


def view(selector: str, **kw) -> Rows:
    if selector not in _views:
        _views[selector] = Rows(el(selector), **kw)
    return _views[selector]


def lines_of(texts) -> list:
    return [("", [(text, None, "")]) for text in texts]


def watch_scrolling_tables() -> None:
    """Mark each wide table as its size changes (a ResizeObserver on the wrappers and their
    tables): the browser calls it after its own layout, so no update forces one to ask."""
    observer = js.ResizeObserver.new(proxy(mark_scrolling_tables))
    for wrap in document.querySelectorAll(".table-wrap"):
        observer.observe(wrap)
        table = wrap.querySelector("table")
        if not absent(table):
            observer.observe(table)


def mark_scrolling_tables(*_) -> None:
    """A wide table on a narrow screen scrolls sideways; its wrapper says so (data-scrolls),
    which the stylesheet turns into a visible cue."""
    for wrap in document.querySelectorAll(".table-wrap"):
        scrolls = "true" if wrap.scrollWidth > wrap.clientWidth + 1 else "false"
        if wrap.getAttribute("data-scrolls") != scrolls:
            wrap.setAttribute("data-scrolls", scrolls)
