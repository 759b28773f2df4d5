// The started runtime's memory, for warm loads (issue 40): run the vendored Pyodide in Node up
// to the point the page hands it to PyScript, and write its memory snapshot. A reload served by the service worker restores it instead of starting Python.
//
//     node tools/snapshot.mjs PYODIDE_DIR OUT [APP_ZIP MODULE,MODULE...]
//
// With the app's zip, it is put first on sys.path at the page's own path (static/early.mjs
// APP_ZIP) and the engine modules named are imported, with the build's compiled dataclass
// methods (web/generated_code.py) as the page does: a warm load then has them imported already.
// Only the engine's standard-library Python: nothing of the page (PyScript, the DOM) is imported.
//
// The snapshot holds Python's state as started from PYODIDE_DIR's python_stdlib.zip (zipimport's
// directory of that very zip included), so it is made from the zip the page ships and named by
// what it is made from (tools/build.py write_snapshot); Pyodide itself refuses one from another
// build (its build id). Nothing in it
// comes from the machine: Python starts with the same empty environment as in the page.
import { loadPyodide } from "pyodide";
import { readFileSync, writeFileSync } from "node:fs";
import path from "node:path";

const [dir, out, appZip, modules] = process.argv.slice(2);
if (!dir || !out || (appZip && !modules)) {
  console.error("usage: node tools/snapshot.mjs PYODIDE_DIR OUT [APP_ZIP MODULE,MODULE...]");
  process.exit(2);
}
const APP_ZIP = "/home/pyodide/kvcalc.zip";         // as static/early.mjs writes it
const pyodide = await loadPyodide({ indexURL: path.resolve(dir) + "/", _makeSnapshot: true });
if (appZip) {
  pyodide.FS.writeFile(APP_ZIP, readFileSync(appZip));
  pyodide.globals.set("modules", pyodide.toPy(modules.split(",")));
  pyodide.runPython(`
import importlib, sys
sys.path.insert(0, "${APP_ZIP}")
from web.generated_code import precompiled
with precompiled():
    for name in modules:
        importlib.import_module(name)
del modules, name
`);
}
const snapshot = pyodide.makeMemorySnapshot();
writeFileSync(out, snapshot);
console.log(`${path.basename(out)}: the runtime's memory snapshot, ${snapshot.length} bytes`);
