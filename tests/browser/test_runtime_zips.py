"""The precompiled runtime (issue 14): the standard library and the app ship as .pyc compiled
by the vendored Pyodide itself. Its magic number must be the runtime's, and the built zips must
boot: a Pyodide run in Node from dist/ imports every engine module from bytecode and computes."""

import hashlib
import json
import subprocess
import sys
import zipfile

import pytest

from conftest import DIST, ROOT

PYODIDE = DIST / "static" / "vendor" / "pyodide"


def node(script: str, tmp_path) -> str:
    path = tmp_path / "check.mjs"
    path.write_text(script)
    done = subprocess.run(["node", str(path)], cwd=ROOT, capture_output=True, text=True, timeout=120)
    # Node prints the runtime's minified source before a Python traceback: show the traceback.
    where = done.stderr.find("PythonError")
    assert done.returncode == 0, done.stderr[where:where + 3000] if where >= 0 else done.stderr[-2000:]
    return done.stdout


def runtime_magic(tmp_path) -> bytes:
    tiny = tmp_path / "tiny.zip"
    with zipfile.ZipFile(tiny, "w") as zf:
        zf.writestr("probe.py", "x = 1\n")
    out = subprocess.run(["node", str(ROOT / "tools" / "precompile.mjs"), str(ROOT / "node_modules" / "pyodide"),
                          str(tiny), str(tmp_path / "out.zip")], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return bytes.fromhex(out.stdout.strip().rsplit("magic ", 1)[1].split(",")[0])


APP = DIST / "app"
# python_stdlib_later.zip holds sources only (test_the_standard_library_is_split_...).
ZIPS = [PYODIDE / "python_stdlib.zip", APP / "kvcalc.zip", APP / "kvcalc-later.zip"]


def modules(names, suffix: str) -> set:
    return {n[:-len(suffix)].removesuffix("/__init__").replace("/", ".") for n in names if n.endswith(suffix)}


@pytest.mark.parametrize("zip_path", ZIPS, ids=lambda p: p.name)
def test_every_pyc_has_the_runtimes_magic(zip_path, tmp_path):
    magic = runtime_magic(tmp_path)
    with zipfile.ZipFile(zip_path) as zf:
        pycs = [n for n in zf.namelist() if n.endswith(".pyc")]
        assert len(pycs) > 20
        for name in pycs:
            assert zf.read(name)[:4] == magic, name


def test_the_standard_library_is_split_by_first_use_and_nothing_is_lost():
    # python_stdlib.zip holds bytecode for exactly the modules tools/stdlib_compiled.txt lists
    # (what the page and the engine import); python_stdlib_later.zip, fetched after the first
    # figures, every other module as its source.
    sys.path.insert(0, str(ROOT / "tools"))
    from vendor import compiled_stdlib
    with zipfile.ZipFile(PYODIDE / "python_stdlib.zip") as start, \
            zipfile.ZipFile(PYODIDE / "python_stdlib_later.zip") as later, \
            zipfile.ZipFile(ROOT / "node_modules" / "pyodide" / "python_stdlib.zip") as stock:
        assert modules(start.namelist(), ".pyc") == set(compiled_stdlib()) and not modules(start.namelist(), ".py")
        assert not modules(later.namelist(), ".pyc")
        every = modules(start.namelist(), ".pyc") | modules(later.namelist(), ".py")
        assert every == modules(stock.namelist(), ".py")
        assert {"json", "asyncio", "fractions", "shlex"} <= set(compiled_stdlib()) and {"email", "xml", "decimal"} <= every


def test_the_app_is_split_by_first_use_and_nothing_is_lost():
    # kvcalc.zip: the modules tools/startup_modules.txt lists, as bytecode only, with the data
    # and PyScript's package; kvcalc-later.zip: every other module of the app with its source.
    sys.path.insert(0, str(ROOT / "tools"))
    from build import startup_modules
    ours = ("kvcalc", "web", "main")
    with zipfile.ZipFile(APP / "kvcalc.zip") as start, zipfile.ZipFile(APP / "kvcalc-later.zip") as later:
        started = {m for m in modules(start.namelist(), ".pyc") if m.split(".")[0] in ours}
        assert started == set(startup_modules())
        assert not modules(start.namelist(), ".py") - modules(start.namelist(), ".pyc")
        # Sources only for PyScript's package (11 KB): the app's start ships bytecode alone.
        assert {m.split(".")[0] for m in modules(start.namelist(), ".py")} <= {"pyscript"}
        assert modules(later.namelist(), ".pyc") == modules(later.namelist(), ".py")
        shipped = started | modules(later.namelist(), ".pyc")
    app = ROOT / "app"
    sources = {p.relative_to(app).with_suffix("").as_posix().removesuffix("/__init__").replace("/", ".")
               for package in ("kvcalc", "web") for p in (app / package).rglob("*.py")} | {"main"}
    assert shipped == sources
    assert {"kvcalc.sizing", "web.later"} <= started and {"kvcalc.cli", "kvcalc.planning", "web.charts"} <= shipped - started


def test_the_built_zips_boot_and_compute_from_bytecode(tmp_path):
    # The app's zip is imported as it is, first on sys.path, as static/early.mjs does it; every
    # engine module and the standard library it pulls in must then import without one call to
    # compile(), nor one exec of a source the build did not compile.
    out = node(f"""
import {{ loadPyodide }} from "{(ROOT / 'node_modules' / 'pyodide' / 'pyodide.mjs').as_posix()}";
import {{ readFileSync }} from "node:fs";
const py = await loadPyodide({{ indexURL: "{PYODIDE.as_posix()}/" }});
py.FS.mkdir("/app");
for (const name of ["kvcalc.zip", "kvcalc-later.zip"])
  py.FS.writeFile(`/app/${{name}}`, new Uint8Array(readFileSync(`{APP.as_posix()}/${{name}}`)));
py.FS.writeFile("/app/python_stdlib_later.zip", new Uint8Array(readFileSync("{(PYODIDE / 'python_stdlib_later.zip').as_posix()}")));
console.log(py.runPython(`
import builtins, sys, zipfile
sys.path.append("/app/python_stdlib_later.zip")    # zipfile's cp437, as app/web/later.py adds it
import encodings
encodings.__path__.append("/app/python_stdlib_later.zip/encodings")
# Every module of the engine in the two zips, read before the spy: cp437 is a source.
names = sorted(set(n[:-4].replace("/", ".") for zip_name in ("kvcalc.zip", "kvcalc-later.zip")
                   for n in zipfile.ZipFile("/app/" + zip_name).namelist()
                   if n.startswith("kvcalc") and n.endswith(".pyc") and not n.endswith("__main__.pyc")))
compiled = []
real_compile = builtins.compile
def spy(source, filename, *args, **kwargs):
    compiled.append(str(filename))
    return real_compile(source, filename, *args, **kwargs)
builtins.compile = spy
sys.path[:0] = ["/app/kvcalc.zip", "/app/kvcalc-later.zip"]
import json, pkgutil, importlib
from web.generated_code import precompiled
with precompiled() as generated:
    # Each package also looks for its modules in the later zip's folder, as app/web/later.py
    # arranges it in the page.
    packages = [n.removesuffix(".__init__") for n in names if n.endswith(".__init__")]
    for name in packages:       # first: each package's modules are in either zip
        importlib.import_module(name).__path__.append("/app/kvcalc-later.zip/" + name.replace(".", "/"))
    for name in names:
        importlib.import_module(name.removesuffix(".__init__"))
from kvcalc import evaluate
e = evaluate({{"model": "meta-llama/Llama-3.1-8B", "gpu": "h100-sxm-80gb"}})
builtins.compile = real_compile
json.dumps({{"modules": len(names), "kv": e.result.kv_bytes_per_token, "compiled": compiled,
            "generated": [generated.used, generated.missed],
            "stdlib_from": sys.modules["json"].__spec__.origin,
            "origin": sys.modules["kvcalc.sizing"].__spec__.origin}})
`));
""", tmp_path)
    data = json.loads(out.strip().splitlines()[-1])
    assert data["modules"] >= 100 and data["kv"] == 131_072
    assert data["compiled"] == []
    # Every dataclass took its methods from the build's table (web/generated_code.py).
    assert data["generated"][0] >= 30 and data["generated"][1] == 0
    assert data["stdlib_from"].endswith(".pyc")
    assert data["origin"] == "/app/kvcalc.zip/kvcalc/sizing.pyc"


def test_pyodide_starts_before_pyscript_and_is_handed_over(page, site):
    # static/early.mjs starts loadPyodide as the page loads; PyScript (pinned 0.7.31 in
    # package.json) asks pyscript.toml's interpreter module for it later and gets that instance.
    # A PyScript that stopped calling the module's loadPyodide would never mark the hand-over.
    from pagekit import open_page
    open_page(page, site)
    marks = page.evaluate("""() => Object.fromEntries(performance.getEntriesByType('mark')
        .map(m => [m.name, m.startTime]))""")
    assert marks["kvcalc-pyodide-start"] < marks["kvcalc-pyodide-handed-over"] < marks["kvcalc-ready"]
    pins = json.loads((ROOT / "package.json").read_text())["devDependencies"]
    assert pins["@pyscript/core"] == "0.7.31" and pins["pyodide"] == "314.0.7"


def shipped_sources() -> dict:
    """Each module's source as the build compiled it, by its path in the app's zip."""
    sys.path.insert(0, str(ROOT / "tools"))
    from build import pyscript_sources
    app = ROOT / "app"
    found = {p.relative_to(app).as_posix(): p.read_text(encoding="utf-8")
             for package in ("kvcalc", "web") for p in (app / package).rglob("*.py")}
    found["main.py"] = (app / "main.py").read_text(encoding="utf-8")
    vendored = pyscript_sources(ROOT / "static" / "vendor")
    found.update({f"pyscript/{name}": source.decode("utf-8") for name, source in vendored.items()})
    return found


def test_the_page_imports_everything_at_start_up_from_bytecode(page, site):
    # In the page itself, after start-up: each standard-library module came from a .pyc in the
    # runtime's zip, and each module of the app and of PyScript's own package from the .pyc we
    # shipped in the app's zip, made from the very source in this tree (the hash in its header is
    # the source's, taken by the runtime's own Python): Python loads such a .pyc and compiles nothing.
    from pagekit import open_page
    open_page(page, site + "#model=Qwen/Qwen3-32B&context=32768")
    found = json.loads(page.evaluate("""async (sources) => {
        const early = await import(new URL('static/early.mjs', location.href).href);
        const py = await early.loadPyodide();
        py.globals.set("sources", py.toPy(sources));
        return py.runPython(`
import sys
started = list(sys.modules.items())          # before this check's own imports
import hashlib, importlib.util, json
app = sys.path[0] + "/"
zips = tuple(path + "/" for path in sys.path[1:] if path.endswith("python314.zip"))
stdlib, ours, elsewhere = {}, {}, []
for name, module in started:
    spec = getattr(module, "__spec__", None)
    origin = getattr(spec, "origin", None) or ""
    if origin.startswith(app):
        data = spec.loader.get_data(origin)
        source = sources.get(origin[len(app):-1], "").encode("utf-8") if origin.endswith(".pyc") else b""
        ours[name] = [origin[len(app):], hashlib.sha256(data).hexdigest(),
                      data[8:16] == importlib.util.source_hash(source)]
    elif zips and origin.startswith(zips):
        stdlib[name] = origin
    elif name in ("main", "web", "kvcalc", "pyscript") or name.startswith(("web.", "kvcalc.", "pyscript.")):
        if origin.endswith(".py"):      # not PyScript's modules made in JavaScript (pyscript.js_modules)
            elsewhere.append(name)
json.dumps({"stdlib": stdlib, "ours": ours, "elsewhere": elsewhere, "app": app})
`);
    }""", shipped_sources()))
    assert found["app"].endswith("kvcalc.zip/")
    assert len(found["stdlib"]) > 60 and {"asyncio", "json", "fractions"} <= set(found["stdlib"])
    assert [n for n, origin in found["stdlib"].items() if not origin.endswith(".pyc")] == []
    assert {"main", "web.loop", "kvcalc.sizing", "kvcalc.engines.vllm.engine", "pyscript", "pyscript.context",
            "pyscript.display", "pyscript.events"} <= set(found["ours"])
    assert found["elsewhere"] == []        # none from the sources PyScript writes, compiled at start
    with zipfile.ZipFile(DIST / "app" / "kvcalc.zip") as zf:
        shipped = {n: hashlib.sha256(zf.read(n)).hexdigest() for n in zf.namelist() if n.endswith(".pyc")}
    assert {name: path for name, (path, digest, _) in found["ours"].items() if shipped.get(path) != digest} == {}
    assert [name for name, (_, _, fresh) in found["ours"].items() if not fresh] == []
