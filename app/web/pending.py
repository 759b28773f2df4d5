"""Work still due after the headline figures: the side sections (next task) and the link in
the address bar (once edits pause). <html data-pending="true"> says so, for tests and tools."""

from web.dom import put

due = {"side": False, "link": False}


def mark(what: str, is_due: bool) -> None:
    due[what] = is_due
    put("html", "true" if due["side"] or due["link"] else "false", "pending")
    put("html", "pending" if due["side"] else "done", "side")
