// Precompile Python sources in a zip: run the vendored Pyodide in Node, compile every .py with
// that very interpreter to an unchecked hash-based .pyc (PEP 552), so the bytecode and its magic
// number are Python 3.14's whatever Python the build machine has, and write the zip again.
// zipimport then loads the .pyc and never compiles at start-up; the runtime is unchanged.
//
//     node tools/precompile.mjs PYODIDE_DIR IN_ZIP OUT_ZIP [--keep-sources] [--as-source=a,b]
//
// Pyodide's python_stdlib.zip ships sources only, so every page load compiled the ~190 modules
// start-up imports (issue 14). --keep-sources keeps the .py beside the .pyc (the app's own zip:
// small, and its tracebacks keep their lines). --as-source names top-level modules left as
// sources: ones the page never imports at start-up stay importable, and deflated sources are
// about half the size of bytecode, which counts on a slow network.
import { loadPyodide } from "pyodide";
import { readFileSync, writeFileSync } from "node:fs";
import path from "node:path";

const args = process.argv.slice(2);
const keep = args.includes("--keep-sources");
const asSource = (args.find((a) => a.startsWith("--as-source=")) || "--as-source=").slice(12).split(",").filter(Boolean);
const [dir, input, out] = args.filter((a) => !a.startsWith("--"));
if (!dir || !input || !out) {
  console.error("usage: node tools/precompile.mjs PYODIDE_DIR IN_ZIP OUT_ZIP [--keep-sources]");
  process.exit(2);
}
const pyodide = await loadPyodide({ indexURL: path.resolve(dir) + "/" });
pyodide.FS.writeFile("/tmp/in.zip", readFileSync(input));
pyodide.globals.set("keep_sources", keep);
pyodide.globals.set("as_source", pyodide.toPy(asSource));
const report = pyodide.runPython(`
import importlib.util, marshal, zipfile

def pyc(source: bytes, name: str) -> bytes:
    code = compile(source, name, "exec", dont_inherit=True, optimize=0)
    # flags 0b01: hash-based and unchecked: never compared with a source, none needed
    return importlib.util.MAGIC_NUMBER + (1).to_bytes(4, "little") + \\
        importlib.util.source_hash(source) + marshal.dumps(code)

compiled = 0
with zipfile.ZipFile("/tmp/in.zip") as src, zipfile.ZipFile("/tmp/out.zip", "w", zipfile.ZIP_DEFLATED) as dst:
    for info in src.infolist():
        data = src.read(info)
        top = info.filename.split("/")[0].removesuffix(".py")
        if info.filename.endswith(".py") and top not in as_source:
            target = zipfile.ZipInfo(info.filename + "c", info.date_time)
            target.compress_type = zipfile.ZIP_DEFLATED
            dst.writestr(target, pyc(data, info.filename))
            compiled += 1
            if not keep_sources:
                continue
        dst.writestr(info, data)
f"{compiled} modules compiled, magic {importlib.util.MAGIC_NUMBER.hex()}"
`);
writeFileSync(out, pyodide.FS.readFile("/tmp/out.zip"));
console.log(`${path.basename(out)}: ${report}`);
