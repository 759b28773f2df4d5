// The started runtime's memory, for warm loads (issue 40): run the vendored Pyodide in Node up
// to the point the page hands it to PyScript, before any of the app, and write its memory
// snapshot. A reload served by the service worker restores it instead of starting Python.
//
//     node tools/snapshot.mjs PYODIDE_DIR OUT
//
// The snapshot holds Python's state as started from PYODIDE_DIR's python_stdlib.zip (zipimport's
// directory of that very zip included), so it is made from the zip the page ships and named by
// its content; Pyodide itself refuses one from another build (its build id). Nothing in it
// comes from the machine: Python starts with the same empty environment as in the page.
import { loadPyodide } from "pyodide";
import { writeFileSync } from "node:fs";
import path from "node:path";

const [dir, out] = process.argv.slice(2);
if (!dir || !out) {
  console.error("usage: node tools/snapshot.mjs PYODIDE_DIR OUT");
  process.exit(2);
}
const pyodide = await loadPyodide({ indexURL: path.resolve(dir) + "/", _makeSnapshot: true });
const snapshot = pyodide.makeMemorySnapshot();
writeFileSync(out, snapshot);
console.log(`${path.basename(out)}: the runtime's memory snapshot, ${snapshot.length} bytes`);
