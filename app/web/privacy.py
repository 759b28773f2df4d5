"""The page's own proof of privacy: every file the browser fetched for it, and from where;
and the offline copy, registered after start-up so caching never competes with the first load."""

from pyscript import window

from web.dom import absent, proxy, put


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
    if not absent(workers):
        workers.register("sw.js").catch(proxy(lambda *_: None))
