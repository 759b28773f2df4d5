#!/usr/bin/env python3
"""Copy the browser runtime the page needs out of node_modules (stdlib only).

    python3 tools/vendor.py OUTDIR        # e.g. static/vendor

Writes OUTDIR/pyscript/ and OUTDIR/pyodide/ (each replaced whole) with only
the files PyScript and Pyodide fetch at run time on the main thread, as
observed in a headless Chromium network log:

* PyScript: core.js, core.css, the core chunk it imports, the tiny TOML
  parser chunk (fetched because the config is a .toml file) and the plugin
  chunks core always imports (error, deprecations-manager, donkey,
  py-editor, py-game, py-terminal). The code editor, terminal (xterm),
  archive and package-graph chunks are only fetched by features the page
  does not use and are left out, as are source maps.
* Pyodide: pyodide.mjs, pyodide.asm.mjs, pyodide.asm.wasm,
  python_stdlib.zip and pyodide-lock.json. No Pyodide packages (wheels).
  python_stdlib.zip is written precompiled: the same modules as .pyc, compiled by
  this very Pyodide run in Node (tools/precompile.mjs), so no page load compiles them.
  It keeps only the modules compiled (what the page and the engine import); the others go
  to python_stdlib_later.zip, fetched after the first figures (issue 40).
* uPlot: the minified IIFE build and its stylesheet (the charts: a small, fast, well-kept
  library; chosen over Chart.js, whose redraw alone took 4-5 ms a chart in our benchmark).

The chunk file names carry content hashes, so they are found by following
core.js's imports rather than hard-coded. The versions in node_modules must
match the pins in package.json; run `npm ci` first. Any surprise (missing
node_modules, version drift, a chunk that is no longer there) is an error.
"""

from __future__ import annotations

import json
import re
import shutil
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NODE_MODULES = ROOT / "node_modules"
PYSCRIPT_DIST = NODE_MODULES / "@pyscript" / "core" / "dist"
PYODIDE_DIR = NODE_MODULES / "pyodide"
UPLOT_DIST = NODE_MODULES / "uplot" / "dist"
UPLOT_FILES = ["uPlot.iife.min.js", "uPlot.min.css"]   # the IIFE build defines window.uPlot

PYSCRIPT_ENTRY = ["core.js", "core.css"]
# Chunks that core's own code imports dynamically during every start-up
# (config parser and the default plugin set). Matched by name before the hash.
PYSCRIPT_RUNTIME_CHUNKS = [
    "toml",
    "error",
    "deprecations-manager",
    "donkey",
    "py-editor",
    "py-game",
    "py-terminal",
]
# The standard library's modules not compiled (stdlib_compiled.txt): after the first figures.
STDLIB_LATER = "python_stdlib_later.zip"
PYODIDE_FILES = [
    "pyodide.mjs",
    "pyodide.asm.mjs",
    "pyodide.asm.wasm",
    "python_stdlib.zip",
    "pyodide-lock.json",
]

# `from"./x.js"`, `import"./x.js"` (static) and `import("./x.js")` (dynamic).
STATIC_IMPORT = re.compile(r'(?:\bfrom|\bimport)\s*"\./([\w.-]+\.js)"')
DYNAMIC_IMPORT = re.compile(r'\bimport\(\s*"\./([\w.-]+\.js)"\s*\)')
HASHED = re.compile(r"^(?P<name>.+)-[\w-]{8}\.js$")


class VendorError(Exception):
    pass


def _read_json(path: Path) -> dict:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise VendorError(f"missing {path.relative_to(ROOT)}") from None


def check_versions() -> None:
    if not NODE_MODULES.is_dir():
        raise VendorError(
            f"{NODE_MODULES} does not exist: run `npm ci` in {ROOT} first"
        )
    pins = _read_json(ROOT / "package.json").get("devDependencies", {})
    for name, pkg_dir in (("@pyscript/core", PYSCRIPT_DIST.parent), ("pyodide", PYODIDE_DIR),
                          ("uplot", UPLOT_DIST.parent)):
        want = pins.get(name)
        if not want:
            raise VendorError(f"package.json pins no version of {name}")
        if not pkg_dir.is_dir():
            raise VendorError(f"{pkg_dir} is missing: run `npm ci` in {ROOT}")
        have = _read_json(pkg_dir / "package.json").get("version")
        if have != want:
            raise VendorError(
                f"node_modules has {name} {have} but package.json pins {want}: run `npm ci`"
            )


def _js(name: str) -> str:
    path = PYSCRIPT_DIST / name
    if not path.is_file():
        raise VendorError(f"PyScript chunk {name} is missing from {PYSCRIPT_DIST}")
    return path.read_text(encoding="utf-8")


def _static_closure(start: list[str]) -> set[str]:
    seen: set[str] = set()
    todo = list(start)
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        todo.extend(STATIC_IMPORT.findall(_js(name)))
    return seen


def pyscript_files() -> list[str]:
    files = _static_closure(["core.js"])
    dynamic = set()
    for name in files:
        dynamic.update(DYNAMIC_IMPORT.findall(_js(name)))
    by_name: dict[str, list[str]] = {}
    for chunk in dynamic:
        m = HASHED.match(chunk)
        if m:
            by_name.setdefault(m.group("name"), []).append(chunk)
    wanted = []
    for name in PYSCRIPT_RUNTIME_CHUNKS:
        found = by_name.get(name, [])
        if len(found) != 1:
            raise VendorError(
                f"expected one dynamically imported '{name}-<hash>.js' chunk in "
                f"PyScript core, found {found or 'none'}; re-check the runtime file list"
            )
        wanted.append(found[0])
    files |= _static_closure(wanted)
    for name in PYSCRIPT_ENTRY:
        if not (PYSCRIPT_DIST / name).is_file():
            raise VendorError(f"{PYSCRIPT_DIST / name} is missing")
    return sorted(files | set(PYSCRIPT_ENTRY))


def _copy(src_dir: Path, names: list[str], dest: Path) -> list[tuple[Path, int]]:
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    copied = []
    for name in names:
        src = src_dir / name
        if not src.is_file():
            raise VendorError(f"{src} is missing")
        shutil.copyfile(src, dest / name)
        copied.append((dest / name, src.stat().st_size))
    return copied


# The standard-library modules compiled: the ones the page's start and the engine import. The
# others stay sources: importable, and half the bytes of their bytecode on the wire.
COMPILED_LIST = Path(__file__).with_name("stdlib_compiled.txt")


def compiled_stdlib() -> tuple:
    rows = COMPILED_LIST.read_text(encoding="utf-8").splitlines()
    return tuple(row.split()[0] for row in rows if row.strip() and not row.startswith("#"))


def module_of(member: str) -> str | None:
    """The dotted module a zip member holds ("a/b/__init__.pyc" is a.b); None for data."""
    stem, _, suffix = member.rpartition(".")
    return stem.removesuffix("/__init__").replace("/", ".") if suffix in ("py", "pyc") else None


def split_by_first_use(zip_path: Path, later_path: Path, at_start) -> tuple[int, int]:
    """Rewrite zip_path with the members at_start(name) keeps (True), and write the others (False)
    to later_path: a zip the page fetches after its first figures (static/early.mjs) and puts on
    sys.path then (app/web/later.py), so a slow link spends its start on what the first figures
    need. A member at_start answers None for is left out. Returns the two zips' sizes in bytes."""
    with zipfile.ZipFile(zip_path) as whole:
        members = [(info, whole.read(info)) for info in whole.infolist()]
    placed = {info.filename: at_start(info.filename) for info, _ in members if not info.is_dir()}
    for path, keep in ((zip_path, True), (later_path, False)):
        with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as part:
            for info, data in members:
                # A folder goes where its files go: one left empty would be a namespace package
                # that hides the package of the same name in the other zip.
                if placed.get(info.filename) is keep if not info.is_dir() else any(
                        name.startswith(info.filename) and where is keep for name, where in placed.items()):
                    part.writestr(info, data, compress_type=zipfile.ZIP_DEFLATED)
    return zip_path.stat().st_size, later_path.stat().st_size


def precompile(source_zip: Path, out_zip: Path, keep_sources: bool = False, only: tuple = (),
               record_exec: str = "", optimize: int = 0) -> None:
    """The zip's Python compiled to .pyc by the vendored Pyodide itself (tools/precompile.mjs)."""
    import subprocess
    command = ["node", str(ROOT / "tools" / "precompile.mjs"), str(PYODIDE_DIR), str(source_zip), str(out_zip)]
    if keep_sources:
        command.append("--keep-sources")
    if only:
        command.append("--only=" + ",".join(only))
    if record_exec:
        command.append("--record-exec=" + record_exec)
    if optimize:
        command.append(f"--optimize={optimize}")
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
    if done.returncode:
        raise VendorError(f"precompiling {source_zip.name} failed: {done.stderr.strip()[-400:]}")
    print(done.stdout.strip())


def main(argv: list[str]) -> int:
    if len(argv) != 1 or argv[0].startswith("-"):
        print("usage: python3 tools/vendor.py OUTDIR", file=sys.stderr)
        return 2
    out = Path(argv[0])
    try:
        check_versions()
        copied = _copy(PYSCRIPT_DIST, pyscript_files(), out / "pyscript")
        copied += _copy(PYODIDE_DIR, PYODIDE_FILES, out / "pyodide")
        copied += _copy(UPLOT_DIST, UPLOT_FILES, out / "uplot")
        stdlib = out / "pyodide" / "python_stdlib.zip"
        # As python -OO compiles it: no docstrings, no asserts (15% fewer bytes at start).
        precompile(PYODIDE_DIR / "python_stdlib.zip", stdlib, only=compiled_stdlib(), optimize=2)
        # At start: every module compiled, the engine's own (marked *) too: a failed start's
        # fixes quote with shlex, and a module the page may ask for at start never waits for
        # the later zip's 1.9 MB.
        start = frozenset(compiled_stdlib())
        sizes = split_by_first_use(stdlib, stdlib.with_name(STDLIB_LATER), lambda name: module_of(name) in start)
        copied += [(stdlib.with_name(STDLIB_LATER), sizes[1])]
    except VendorError as exc:
        print(f"vendor.py: error: {exc}", file=sys.stderr)
        return 1
    total = 0
    for path, size in copied:
        total += size
        print(f"{size:>10}  {path}")
    print(f"{total:>10}  total ({len(copied)} files)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
