"""The page's own proof of privacy: every file the browser fetched for it, and from where;
and the offline copy, registered after start-up so caching never competes with the first load,
which says when a new version of the site is ready."""

from pyscript import document, window

from web.dom import absent, el, on, proxy, put


def list_loaded_files(*_) -> None:
    entries = window.performance.getEntriesByType("resource")
    origin = window.location.origin
    names = [window.location.href.split("#")[0]] + [e.name for e in entries]
    others = sorted({n.split("/")[2] for n in names if not n.startswith(origin + "/") and "://" in n})
    put("#loaded-files", (f"{len(names)} files loaded, all from this site ({origin}); nothing sent: your "
                          "inputs stay in this tab and in the link after the #." if not others else
                          f"{len(names)} files loaded; from other hosts: {', '.join(others)}"))
    put("#loaded-files", str(len(names)), "count")
    put("#loaded-files", " ".join(names), "files")


def register_offline_copy() -> None:
    workers = getattr(window.navigator, "serviceWorker", None)
    if absent(workers):
        return
    on(el("#update-reload"), "click", lambda *_: window.location.reload())
    # What the worker said before Python ran, kept by the boot script, then what it says next.
    start = window.kvcalcStart
    for index in range(0 if absent(start) else start.messages.length):
        on_worker_message(start.messages[index])
    on(workers, "message", lambda event: on_worker_message(event.data))
    workers.register("sw.js").then(proxy(on_registered), proxy(lambda *_: None))


def this_version() -> str:
    meta = document.querySelector('meta[name="kvcalc-version"]')
    return "" if absent(meta) else meta.content


def on_worker_message(data) -> None:
    """sw.js says "updated" when it has replaced another release's copy: news for a page of
    another version only."""
    if getattr(data, "kvcalc", None) == "updated" and getattr(data, "version", None) != this_version():
        new_version_ready()


def on_registered(registration) -> None:
    if not absent(registration.waiting):
        new_version_ready()
    watch(registration.installing)
    on(registration, "updatefound", lambda *_: watch(registration.installing))


def watch(worker) -> None:
    """A worker being installed while this page has a controller is a new version (without a
    controller it is the first copy, of this very page)."""
    if absent(worker) or absent(window.navigator.serviceWorker.controller):
        return

    def changed(*_):
        if worker.state in ("installed", "activating", "activated"):
            new_version_ready()
    on(worker, "statechange", changed)
    changed()


def new_version_ready() -> None:
    put("#update-text", "A new version is ready.")
    put("#update-reload", False, "hidden")
