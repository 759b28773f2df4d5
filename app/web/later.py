"""The modules the first figures do not need come after them (issue 40): the app's other modules
(the log readers, the planner, the sections' drawings, the CLI's words) in kvcalc-later.zip, and
the standard library's others in python_stdlib_later.zip. static/early.mjs holds the two zips'
addresses and bytes (window.kvcalcLater); this module fetches them once the first figures are
shown and puts them on sys.path.

A module asked for before they came is never an ImportError: Finder, last on sys.meta_path, is
asked only for a module no other finder found; if the build listed it in a later zip, it fetches
that zip at once, synchronously, and looks again. A package whose modules are split between two
zips (kvcalc in kvcalc.zip, its planner in kvcalc-later.zip) is given the later zip's folder on
its __path__ too."""

import asyncio
import json
import os
import sys
from importlib.machinery import PathFinder

from pyscript import window

from web.dom import absent

# Each later zip's size and modules, by its file name (tools/build.py split_app).
_INDEX = json.loads(__loader__.get_data(os.path.join(os.path.dirname(__file__), "later_modules.json")))
ZIP_OF = {module: name for name, entry in _INDEX.items() for module in entry["modules"]}
# Each zip's package folders ("kvcalc/plan"): the packages that may have modules in it.
_FOLDERS = {name: {module.rpartition(".")[0].replace(".", "/") for module in entry["modules"]} - {""}
            for name, entry in _INDEX.items()}
_mounted: list[str] = []                 # the zips' paths on sys.path, in the order they came


class AnotherRelease(Exception):
    """A later zip of another size than this release's: a release came after this page started."""


def mount() -> bool:
    """Write every zip that has come into the filesystem and put it on sys.path; True if any.
    One of another size than the build wrote down is not mounted (AnotherRelease): its modules
    would meet this release's."""
    mounted = False
    for zip_entry in window.kvcalcLater.zips:
        path = str(zip_entry.path)
        if path in _mounted or absent(zip_entry.bytes):
            continue
        data = zip_entry.bytes.to_py()
        zip_entry.bytes = None
        name = os.path.basename(path)
        if len(data) != _INDEX[name]["bytes"]:
            raise AnotherRelease(f"{name} is another release's ({len(data):,} bytes, not "
                                 f"{_INDEX[name]['bytes']:,}): reload the page")
        with open(path, "wb") as file:
            file.write(data)
        zip_entry.mounted = True          # in the filesystem now: fetched no more
        _mounted.append(path)
        sys.path.append(path)
        mounted = True
    return extend_packages() or mounted


def extend_packages() -> bool:
    """Each imported package with modules in a mounted zip gets that zip's folder on its
    __path__ (its other modules are found there); True if any did."""
    extended = False
    for path in _mounted:
        for folder in _FOLDERS.get(os.path.basename(path), ()):
            package = sys.modules.get(folder.replace("/", "."))
            search = getattr(package, "__path__", None)
            where = f"{path}/{folder}"
            if isinstance(search, list) and where not in search:
                search.append(where)
                extended = True
    return extended


class Finder:
    """Asked last, for a module no other finder found: it may be in a zip not yet mounted."""

    @staticmethod
    def find_spec(name, path=None, target=None):
        zip_name = ZIP_OF.get(name)
        if zip_name is None or _mounted_as(zip_name) and not extend_packages():
            return None                   # absent everywhere: the import fails as it would anywhere
        try:
            if not _mounted_as(zip_name):
                window.kvcalcLater.fetchNow(zip_name)     # only the zip that holds it
            mount()
        except Exception as exc:          # said as what it is to the import: asked again next time
            raise ImportError(f"{name} is in {zip_name}, which could not be loaded: {exc}", name=name) from exc
        parent = sys.modules.get(name.rpartition(".")[0])
        return PathFinder.find_spec(name, getattr(parent, "__path__", None) if parent else None, target)


def _mounted_as(zip_name: str) -> bool:
    return any(os.path.basename(path) == zip_name for path in _mounted)


def install() -> None:
    if not any(isinstance(finder, Finder) for finder in sys.meta_path):
        sys.meta_path.append(Finder())


async def _fetch() -> None:
    try:
        await window.kvcalcLater.fetch()
    except Exception as exc:              # a Finder's synchronous fetch tries again when asked
        window.kvcalcLater.failed = str(exc)
        window.console.warn(f"The modules after the first figures did not come: {exc}")
    try:
        mount()                           # each zip that came
    except AnotherRelease as exc:
        window.kvcalcLater.failed = str(exc)
        window.console.warn(f"The modules after the first figures were not taken: {exc}")


def fetch_in_background() -> None:
    asyncio.ensure_future(_fetch())
