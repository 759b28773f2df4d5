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


@pytest.mark.parametrize("zip_path", [PYODIDE / "python_stdlib.zip", DIST / "app" / "kvcalc.zip"])
def test_every_pyc_has_the_runtimes_magic(zip_path, tmp_path):
    magic = runtime_magic(tmp_path)
    with zipfile.ZipFile(zip_path) as zf:
        pycs = [n for n in zf.namelist() if n.endswith(".pyc")]
        assert len(pycs) > 40
        for name in pycs:
            assert zf.read(name)[:4] == magic, name
        if zip_path.name == "python_stdlib.zip":
            # Bytecode only, but for the packages the page never imports at start-up (kept as
            # sources, smaller on the wire, still importable).
            sys.path.insert(0, str(ROOT / "tools"))
            from vendor import AS_SOURCE
            sources = {n.split("/")[0].removesuffix(".py") for n in zf.namelist() if n.endswith(".py")}
            assert sources and sources <= set(AS_SOURCE)
            assert "json/__init__.pyc" in zf.namelist() and "asyncio/__init__.pyc" in zf.namelist()


def test_the_built_zips_boot_and_compute_from_bytecode(tmp_path):
    # The app's zip is unpacked to the filesystem as PyScript does it; every engine module and
    # the standard library it pulls in must then import without one call to compile(), nor
    # one exec of a source the build did not compile.
    out = node(f"""
import {{ loadPyodide }} from "{(ROOT / 'node_modules' / 'pyodide' / 'pyodide.mjs').as_posix()}";
import {{ readFileSync }} from "node:fs";
const py = await loadPyodide({{ indexURL: "{PYODIDE.as_posix()}/" }});
py.unpackArchive(new Uint8Array(readFileSync("{(DIST / 'app' / 'kvcalc.zip').as_posix()}")), "zip", {{ extractDir: "/app" }});
console.log(py.runPython(`
import builtins, sys
compiled = []
real_compile = builtins.compile
def spy(source, filename, *args, **kwargs):
    compiled.append(str(filename))
    return real_compile(source, filename, *args, **kwargs)
builtins.compile = spy
sys.path.insert(0, "/app")
import json, pkgutil, importlib
from web.generated_code import precompiled
with precompiled() as generated:
    import kvcalc
    names = [m.name for m in pkgutil.walk_packages(kvcalc.__path__, "kvcalc.") if not m.name.endswith("__main__")]
    for name in names:
        importlib.import_module(name)
from kvcalc import evaluate
e = evaluate({{"model": "meta-llama/Llama-3.1-8B", "gpu": "h100-sxm-80gb"}})
builtins.compile = real_compile
json.dumps({{"modules": len(names), "kv": e.result.kv_bytes_per_token, "compiled": compiled,
            "generated": [generated.used, generated.missed],
            "stdlib_from": sys.modules["json"].__spec__.origin,
            "cached": sys.modules["kvcalc.sizing"].__spec__.cached}})
`));
""", tmp_path)
    data = json.loads(out.strip().splitlines()[-1])
    assert data["modules"] >= 25 and data["kv"] == 131_072
    assert data["compiled"] == []
    # Every dataclass took its methods from the build's table (web/generated_code.py).
    assert data["generated"][0] >= 30 and data["generated"][1] == 0
    assert data["stdlib_from"].endswith(".pyc")
    assert data["cached"] == "/app/kvcalc/__pycache__/sizing.cpython-314.pyc"


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


def test_the_page_imports_everything_at_start_up_from_bytecode(page, site):
    # In the page itself, after start-up: each standard-library module came from a .pyc in the
    # zip, and each module of the app and of PyScript's own package has the .pyc we shipped in
    # __pycache__, made from the very source beside it (the hash in its header is the source's):
    # Python loads such a .pyc and compiles nothing. (PyScript sets sys.dont_write_bytecode, so
    # a stale one would be compiled again at every start, silently: this is the check.)
    from pagekit import open_page
    open_page(page, site + "#model=Qwen/Qwen3-32B&context=32768")
    found = json.loads(page.evaluate("""async () => {
        const early = await import(new URL('static/early.mjs', location.href).href);
        const py = await early.loadPyodide();
        return py.runPython(`
import hashlib, importlib.util, json, os, sys
stdlib, ours = {}, {}
zips = tuple(path + "/" for path in sys.path if path.endswith(".zip"))
for name, module in list(sys.modules.items()):
    spec = getattr(module, "__spec__", None)
    origin = getattr(spec, "origin", None) or ""
    if zips and origin.startswith(zips):
        stdlib[name] = origin
    elif name in ("main", "web", "kvcalc", "pyscript") or name.startswith(("web.", "kvcalc.", "pyscript.")):
        if not origin.endswith(".py"):
            continue          # PyScript's modules made in JavaScript (pyscript.js_modules)
        with open(spec.cached, "rb") as pyc, open(origin, "rb") as source:
            data = pyc.read()
            ours[name] = [os.path.relpath(spec.cached), hashlib.sha256(data).hexdigest(),
                          data[8:16] == importlib.util.source_hash(source.read())]
json.dumps({"stdlib": stdlib, "ours": ours})
`);
    }"""))
    assert len(found["stdlib"]) > 100 and {"asyncio", "json", "fractions"} <= set(found["stdlib"])
    assert [n for n, origin in found["stdlib"].items() if not origin.endswith(".pyc")] == []
    assert {"main", "web.loop", "kvcalc.sizing", "kvcalc.engines.vllm.engine", "pyscript", "pyscript.context",
            "pyscript.display", "pyscript.events"} <= set(found["ours"])
    with zipfile.ZipFile(DIST / "app" / "kvcalc.zip") as zf:
        shipped = {n: hashlib.sha256(zf.read(n)).hexdigest() for n in zf.namelist() if n.endswith(".pyc")}
    assert {name: path for name, (path, digest, _) in found["ours"].items() if shipped.get(path) != digest} == {}
    assert [name for name, (_, _, fresh) in found["ours"].items() if not fresh] == []
