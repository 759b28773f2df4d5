// Precompile Python sources in a zip: run the vendored Pyodide in Node, compile every .py with
// that very interpreter to an unchecked hash-based .pyc (PEP 552), so the bytecode and its magic
// number are Python 3.14's whatever Python the build machine has, and write the zip again.
// zipimport then loads the .pyc and never compiles at start-up; the runtime is unchanged.
//
//     node tools/precompile.mjs PYODIDE_DIR IN_ZIP OUT_ZIP [--keep-sources] [--only=a,b.c]
//                                [--optimize=2] [--record-exec=FILE:package]
//
// Pyodide's python_stdlib.zip ships sources only, so every page load compiled the ~190 modules
// start-up imports (issue 14). Without sources, each module.pyc sits where module.py was, which
// is where zipimport looks (the standard library is imported from its zip). --keep-sources keeps
// each .py beside its .pyc: zipimport takes module.pyc first (the app's zip is imported as it
// is, never unpacked: issue 40), and tracebacks keep their lines from the source.
// --record-exec=web/generated_code.marshal:kvcalc imports every module of the package from the
// written zip, as the page does, inside web.generated_code.recording(), and adds the table of
// generated sources and their code (the dataclasses' methods) to the zip as FILE. --only names
// the modules compiled (dotted names; a package by its own name); the others stay sources: the
// ones the page never imports at start-up stay importable, and deflated sources are about half
// the size of bytecode, which counts on a slow network. --optimize=2 compiles as python -OO does:
// without docstrings and asserts (the standard library supports it; 15% fewer bytes).
import { loadPyodide } from "pyodide";
import { readFileSync, writeFileSync } from "node:fs";
import path from "node:path";

const args = process.argv.slice(2);
const keep = args.includes("--keep-sources");
const listed = (flag) => (args.find((a) => a.startsWith(flag)) || flag).slice(flag.length).split(",").filter(Boolean);
const only = listed("--only=");
const optimize = Number(listed("--optimize=")[0] || 0);
const [recordTo, recordPackage] = (args.find((a) => a.startsWith("--record-exec=")) || "=").split("=")[1].split(":");
const [dir, input, out] = args.filter((a) => !a.startsWith("--"));
if (!dir || !input || !out) {
  console.error("usage: node tools/precompile.mjs PYODIDE_DIR IN_ZIP OUT_ZIP [--keep-sources] [--only=a,b.c] " +
    "[--optimize=2] [--record-exec=FILE:package]");
  process.exit(2);
}
const pyodide = await loadPyodide({ indexURL: path.resolve(dir) + "/" });
pyodide.FS.writeFile("/tmp/in.zip", readFileSync(input));
pyodide.globals.set("keep_sources", keep);
pyodide.globals.set("only", pyodide.toPy(only));
pyodide.globals.set("optimize", optimize);
const report = pyodide.runPython(`
import importlib.util, marshal, sys, zipfile

def pyc(source: bytes, name: str) -> bytes:
    code = compile(source, name, "exec", dont_inherit=True, optimize=optimize)
    # flags 0b01: hash-based, unchecked (never compared with a source: ours ship together)
    return importlib.util.MAGIC_NUMBER + (0b01).to_bytes(4, "little") + \\
        importlib.util.source_hash(source) + marshal.dumps(code)

compiled = 0
with zipfile.ZipFile("/tmp/in.zip") as src, zipfile.ZipFile("/tmp/out.zip", "w", zipfile.ZIP_DEFLATED) as dst:
    for info in src.infolist():
        data = src.read(info)
        module = info.filename.removesuffix(".py").removesuffix("/__init__").replace("/", ".")
        if info.filename.endswith(".py") and (not only or module in only):
            target = zipfile.ZipInfo(info.filename + "c", info.date_time)
            target.compress_type = zipfile.ZIP_DEFLATED
            dst.writestr(target, pyc(data, info.filename))
            compiled += 1
            if not keep_sources:
                continue
        dst.writestr(info, data)
f"{compiled} modules compiled, magic {importlib.util.MAGIC_NUMBER.hex()}, tag {sys.implementation.cache_tag}"
`);
let recorded = "";
if (recordTo) {
  pyodide.globals.set("record_to", recordTo);
  pyodide.globals.set("record_package", recordPackage);
  recorded = pyodide.runPython(`
import importlib, marshal, pkgutil, sys, zipfile
import shutil
shutil.copy("/tmp/out.zip", "/tmp/record.zip")      # read while the table is added to out.zip
sys.path.insert(0, "/tmp/record.zip")
from web.generated_code import recording
with recording() as recorded:
    package = importlib.import_module(record_package)
    for found in pkgutil.walk_packages(package.__path__, record_package + "."):
        if not found.name.endswith("__main__"):
            importlib.import_module(found.name)
table = recorded.table
with zipfile.ZipFile("/tmp/out.zip", "a", zipfile.ZIP_DEFLATED) as zf:
    zf.writestr(zipfile.ZipInfo(record_to, (2020, 1, 1, 0, 0, 0)), marshal.dumps(table), zipfile.ZIP_DEFLATED)
f"; {len(table)} generated sources compiled into {record_to}"
`);
}
writeFileSync(out, pyodide.FS.readFile("/tmp/out.zip"));
console.log(`${path.basename(out)}: ${report}${recorded}`);
