// Start Pyodide at once, before PyScript's own modules have loaded, and hand the instance to
// PyScript: pyscript.toml's `interpreter` names this module, and PyScript 0.7.31 calls its
// loadPyodide({stdout, stderr, indexURL}) and reads its version (core.js, the "py" engine).
// Python's output goes wherever PyScript asks once it asks. Nothing else happens here but
// telling the boot script's watchdog (index.html, tools/build.py BOOT) how far the runtime got:
// the marks, and the runtime's own failure in words.
import { loadPyodide as load, version } from "./vendor/pyodide/pyodide.mjs";

const sink = { stdout: (text) => console.log(text), stderr: (text) => console.error(text) };
// The app's code: one zip, imported as it is, first on sys.path: zipimport reads each module's
// .pyc from it, nothing is unpacked. (PyScript's [files] unpacking imported shutil, tempfile and
// three compressors, ~70 ms.)
// It is needed last, once Python has started, so on a first visit it is asked for once the wasm
// has come: on a slow link the wasm then comes sooner, and the zip comes while Python starts
// (at 20 Mbit/s, ready ~0.3 s sooner). Pyodide fetches the wasm with the page's fetch: that one
// request is passed through a stream that says when its last byte came. A load the service
// worker serves asks at once (its cache answers), as does one where Pyodide's fetch is not seen.
const APP_ZIP = "/home/pyodide/kvcalc.zip";
const pageFetch = globalThis.fetch;
let wasmCame;
const wasmArrived = new Promise((resolve) => { wasmCame = resolve; });
const watchWasm = async (input, init) => {
  if (!String(input?.url ?? input).endsWith("/pyodide.asm.wasm")) return pageFetch(input, init);
  globalThis.fetch = pageFetch;
  const response = await pageFetch(input, init);
  if (!response.ok || !response.body) return response;
  const body = response.body.pipeThrough(new TransformStream({ flush: () => wasmCame("kvcalc-wasm-arrived") }));
  return new Response(body, { status: response.status, statusText: response.statusText, headers: response.headers });
};
if (navigator.serviceWorker?.controller) wasmCame();
else globalThis.fetch = watchWasm;
const appCode = wasmArrived.then((mark) => {
  if (mark) performance.mark(mark);
  return pageFetch(new URL("../app/kvcalc.zip", import.meta.url));
}).then((response) => response.ok ? response.arrayBuffer() : null);
// The started runtime's memory, with the engine imported from the app's zip (tools/snapshot.mjs;
// the build writes its file name and the zip's size here): a warm load, served by the service
// worker whose cache holds it, restores it instead of starting Python. A cold load never waits
// for it (its 6 MB on the wire cost more than it saves at 20 Mbit/s). One that Pyodide refuses
// (another build's: a release changed), one that fails, or one made with another zip than the
// one that came (a release that arrived between the two) is set aside, and the runtime starts
// as on a cold load.
const SNAPSHOT = "";
const SNAPSHOT_ZIP_BYTES = 0;
const OPTIONS = {
  indexURL: new URL("./vendor/pyodide/", import.meta.url).href,
  stdout: (text) => sink.stdout(text),
  stderr: (text) => sink.stderr(text),
};
const cachedSnapshot = async () => {
  if (!SNAPSHOT || !navigator.serviceWorker?.controller || !globalThis.caches) return null;
  const cached = await caches.match(new URL(`./vendor/pyodide/${SNAPSHOT}`, import.meta.url).href);
  if (!cached) return null;
  // Kept inflated by the service worker (sw.js); else as the build gzipped it.
  if (cached.headers.get("X-Kvcalc-Inflated")) return cached.arrayBuffer();
  return new Response(cached.body.pipeThrough(new DecompressionStream("gzip"))).arrayBuffer();
};
const restored = async (snapshot, zip) => {
  // Made with another zip than the one that came (a release that arrived between the two): not
  // restored at all, so its engine never meets the new zip's modules.
  if (zip !== null && zip.byteLength !== SNAPSHOT_ZIP_BYTES)
    return setAside(`made with a ${SNAPSHOT_ZIP_BYTES}-byte kvcalc.zip, not the ${zip.byteLength}-byte one that came`);
  try {
    const py = await load({ ...OPTIONS, _loadSnapshot: snapshot });
    // The snapshot's random state is the build's: each page gets its own.
    py.runPython("import random; random.seed()");
    performance.mark("kvcalc-snapshot-restored");
    return py;
  } catch (error) {
    return setAside(error);
  }
};
const setAside = (error) => {
  performance.mark("kvcalc-snapshot-refused", { detail: String(error?.message ?? error) });
  return load(OPTIONS);
};
performance.mark("kvcalc-pyodide-start");
const runtime = cachedSnapshot().then(
  async (snapshot) => snapshot ? restored(snapshot, await appCode) : load(OPTIONS), setAside);
// Whatever became of the wasm's request, the zip is asked for once the runtime has started or failed.
runtime.finally(() => { wasmCame(); if (globalThis.fetch === watchWasm) globalThis.fetch = pageFetch; })
  .catch(() => {});       // the runtime's failure is said below
runtime.then(
  () => performance.mark("kvcalc-pyodide-loaded"),
  (error) => window.kvcalcStart?.fail(`The Python runtime (Pyodide ${version}) could not start: ${error?.message ?? error}.`));
// A zip that did not arrive is said by the boot script's watchdog, naming it; Python is not
// handed over without it.
const started = Promise.all([runtime, appCode]).then(([py, zip]) => {
  if (zip === null) throw new Error("the calculator's code (kvcalc.zip) could not be loaded");
  py.FS.writeFile(APP_ZIP, new Uint8Array(zip));
  // First on sys.path, once: a restored snapshot has it already, and Pyodide puts "" before it
  // at every start (so "" would come first, and twice).
  py.runPython(`import sys; sys.path[:] = ["${APP_ZIP}", *dict.fromkeys(e for e in sys.path if e != "${APP_ZIP}")]`);
  return py;
});

// What the first figures do not need: the app's other modules (the log readers, the planner, the
// sections' drawings) and the standard library's others, in two zips (tools/build.py, vendor.py).
// app/web/later.py fetches them once the first figures are shown, so a slow link spends its start
// on the start, and puts them on sys.path; an import that cannot wait for them (a module asked
// for before they came) fetches them at once, synchronously (fetchNow).
const LATER = [["./vendor/pyodide/python_stdlib_later.zip", "/lib/python_stdlib_later.zip"],
               ["../app/kvcalc-later.zip", "/home/pyodide/kvcalc-later.zip"]];
const failed = (zip, status) => new Error(`${zip.url.split("/").pop()} could not be loaded (${status})`);
globalThis.kvcalcLater = {
  zips: LATER.map(([url, path]) => ({ url: new URL(url, import.meta.url).href, path, bytes: null, mounted: false })),
  failed: "",       // why the fetch after the first figures failed (app/web/later.py)
  // Each zip that came is kept for mounting, whatever became of the other; the first failure
  // is thrown once both are settled.
  async fetch() {
    const settled = await Promise.allSettled(this.zips.map(async (zip) => {
      if (zip.bytes || zip.mounted) return;
      const response = await fetch(zip.url);
      if (!response.ok) throw failed(zip, response.status);
      const bytes = new Uint8Array(await response.arrayBuffer());
      if (!zip.mounted) zip.bytes = bytes;    // else an import fetched it meanwhile, at once
    }));
    const refused = settled.find((outcome) => outcome.status === "rejected");
    if (refused) throw refused.reason;
  },
  fetchNow(name) {
    for (const zip of this.zips.filter((z) => !z.bytes && !z.mounted && z.url.endsWith(`/${name}`))) {
      // A synchronous request cannot ask for an ArrayBuffer on a page: each byte comes as one
      // character of a user-defined charset (0xF780 + byte above 0x7F), and is masked back.
      const request = new XMLHttpRequest();
      request.open("GET", zip.url, false);
      request.overrideMimeType("text/plain; charset=x-user-defined");
      request.send();
      if (request.status !== 200) throw failed(zip, request.status);
      const text = request.responseText;
      const bytes = new Uint8Array(text.length);
      for (let i = 0; i < text.length; i++) bytes[i] = text.charCodeAt(i) & 0xff;
      zip.bytes = bytes;
    }
  },
};

export { version };
export const loadPyodide = ({ stdout, stderr } = {}) => {
  if (stdout) sink.stdout = stdout;
  if (stderr) sink.stderr = stderr;
  performance.mark("kvcalc-pyodide-handed-over");
  return started;
};
