// Precompile Python sources in a zip: run the vendored Pyodide in Node, compile every .py with
// that very interpreter to an unchecked hash-based .pyc (PEP 552), so the bytecode and its magic
// number are Python 3.14's whatever Python the build machine has, and write the zip again.
// zipimport then loads the .pyc and never compiles at start-up; the runtime is unchanged.
//
//     node tools/precompile.mjs PYODIDE_DIR IN_ZIP OUT_ZIP [--keep-sources] [--as-source=a,b]
//                                [--checked=a,b] [--record-exec=FILE:package]
//
// Pyodide's python_stdlib.zip ships sources only, so every page load compiled the ~190 modules
// start-up imports (issue 14). Without sources, each module.pyc sits where module.py was, which
// is where zipimport looks (the standard library is imported from its zip). --keep-sources keeps
// each .py and writes its bytecode to __pycache__/module.<cache tag>.pyc, which is where the
// filesystem importer looks (the app's zip is unpacked to the filesystem; a .pyc beside its .py
// would be ignored there), and tracebacks keep their lines. --checked names top-level packages
// whose sources someone else writes at run time (PyScript writes its own `pyscript` package at
// every start): only their bytecode is kept, as *checked* hash-based .pyc, so Python compares
// it with the source it finds and compiles that source itself if the two ever differ.
// --record-exec=web/generated_code.marshal:kvcalc imports every module of the package from the
// written zip inside web.generated_code.recording(), and adds the table of generated sources and
// their code (the dataclasses' methods) to the zip as FILE. --as-source names top-level modules
// left as sources: ones the page never imports at start-up stay importable, and deflated
// sources are about half the size of bytecode, which counts on a slow network.
import { loadPyodide } from "pyodide";
import { readFileSync, writeFileSync } from "node:fs";
import path from "node:path";

const args = process.argv.slice(2);
const keep = args.includes("--keep-sources");
const listed = (flag) => (args.find((a) => a.startsWith(flag)) || flag).slice(flag.length).split(",").filter(Boolean);
const asSource = listed("--as-source=");
const checked = listed("--checked=");
const [recordTo, recordPackage] = (args.find((a) => a.startsWith("--record-exec=")) || "=").split("=")[1].split(":");
const [dir, input, out] = args.filter((a) => !a.startsWith("--"));
if (!dir || !input || !out) {
  console.error("usage: node tools/precompile.mjs PYODIDE_DIR IN_ZIP OUT_ZIP [--keep-sources] [--as-source=a,b] " +
    "[--checked=a,b] [--record-exec=FILE:package]");
  process.exit(2);
}
const pyodide = await loadPyodide({ indexURL: path.resolve(dir) + "/" });
pyodide.FS.writeFile("/tmp/in.zip", readFileSync(input));
pyodide.globals.set("keep_sources", keep);
pyodide.globals.set("as_source", pyodide.toPy(asSource));
pyodide.globals.set("checked", pyodide.toPy(checked));
const report = pyodide.runPython(`
import importlib.util, marshal, posixpath, sys, zipfile

def pyc(source: bytes, name: str, check_source: bool) -> bytes:
    code = compile(source, name, "exec", dont_inherit=True, optimize=0)
    # flags 0b01: hash-based, unchecked (never compared with a source: ours ship together);
    # 0b11: hash-based, checked against the source found beside it at import
    flags = 0b11 if check_source else 0b01
    return importlib.util.MAGIC_NUMBER + flags.to_bytes(4, "little") + \\
        importlib.util.source_hash(source) + marshal.dumps(code)

compiled = 0
with zipfile.ZipFile("/tmp/in.zip") as src, zipfile.ZipFile("/tmp/out.zip", "w", zipfile.ZIP_DEFLATED) as dst:
    for info in src.infolist():
        data = src.read(info)
        top = info.filename.split("/")[0].removesuffix(".py")
        if info.filename.endswith(".py") and top not in as_source:
            name = info.filename + "c"
            if keep_sources or top in checked:
                folder, module = posixpath.split(info.filename[:-3])
                name = posixpath.join(folder, "__pycache__", f"{module}.{sys.implementation.cache_tag}.pyc")
            target = zipfile.ZipInfo(name, info.date_time)
            target.compress_type = zipfile.ZIP_DEFLATED
            dst.writestr(target, pyc(data, info.filename, top in checked))
            compiled += 1
            if not keep_sources or top in checked:
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
with zipfile.ZipFile("/tmp/out.zip") as zf:
    zf.extractall("/tmp/record")
sys.path.insert(0, "/tmp/record")
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
