// The boot script, inlined into index.html by tools/build.py and run before first paint; the
// page's Content-Security-Policy allows it by its hash alone, computed from this file as inlined
// (each line trimmed, these comment lines and blank lines left out). Inline, not a file of the
// site: a separate file cost a round trip, ~70 ms, before PyScript could start. It computes
// nothing: it does only what Python cannot do because Python is not running yet.
// - A shared link: the figures in the HTML are the default view's, so the page is marked and the
//   stylesheet shows "computing…" until Python has computed the link's own numbers. Once the page
//   is parsed, the link's plain key=value entries are written into the controls of that name, to
//   be seen at once (a preset model by its name; hf-config and pins are left to Python). The ids
//   written and their values before are kept (kvcalcStart.preview): Python puts them back and
//   loads the link itself (app/web/early.py), so these never count as typed and Python's reading
//   wins.
// - Typing before Python is ready: the ids edited are kept (kvcalcEdited), and Python computes
//   them once it starts (app/web/early.py); the status line says they will be.
// - The start's watchdog: a fetch that fails or answers an error, a script that does not load, an
//   uncaught error or rejection while loading sets <html data-state="failed"> at once and says
//   what failed in #status-text, with a Reload button (the stylesheet shows it); after 30 s still
//   loading, it says so too, naming the stage (the performance marks) and the files still
//   awaited. A start that completes after all still becomes "ready" (app/main.py sets it).
//   PyScript 0.7.31 opens an IndexedDB store (its packages cache) before it asks for Python and
//   waits for it with no timeout and no "blocked" handler: the opens made while loading are
//   counted, so a browser whose storage never answers is named as the stage.
// - Messages from the service worker (a new version) are kept until Python reads them: the
//   browser delivers them once the page is parsed, before Python runs (app/web/privacy.py).
(() => {
const root = document.documentElement, hash = location.hash.slice(1);
if (hash) root.classList.add("from-link");
window.kvcalcEdited = [];
addEventListener("input", e => { if (window.kvcalcEdited && e.target.id) { kvcalcEdited.push(e.target.id); root.dataset.typed = "true"; } }, true);
const start = window.kvcalcStart = {pending: [], preview: [], messages: [], failed: "", late: false};
const loading = () => root.dataset.state === "loading";
const name = url => String(url).split(/[?#]/)[0].split("/").pop();
const what = file => (/^(pyodide|python_stdlib)/.test(file) ? "The Python runtime" :
  /^(core|toml|error)[-.]|^pyscript\./.test(file) ? "PyScript" : file === "kvcalc.zip" ? "The calculator's code" :
  file === "early.mjs" ? "The start-up script" : "A file the page needs") + " (" + file + ")";
const show = () => { const text = document.getElementById("status-text"); if (text && start.failed) text.textContent = start.failed; };
const fail = (why, late) => {
  if (!(loading() || (root.dataset.state === "failed" && start.late && !late))) return;
  start.failed = why; start.late = !!late; root.dataset.state = "failed"; show();
};
start.fail = fail;
const reason = error => String(error && error.message || error);
const realFetch = window.fetch;
window.fetch = (...args) => {
  const fetched = realFetch(...args);
  if (loading()) {
    const url = String(args[0] && args[0].url || args[0]);
    start.pending.push(new URL(url, location.href).href);
    fetched.then(r => { if (!r.ok) fail(what(name(url)) + " could not be loaded: the server answered " + r.status + "."); },
                 e => fail(what(name(url)) + " could not be loaded: " + reason(e) + "."));
  }
  return fetched;
};
if (window.indexedDB) {
  const open = indexedDB.open.bind(indexedDB);
  indexedDB.open = (...args) => {
    const request = open(...args);
    if (loading()) {
      start.storage = (start.storage || 0) + 1;
      const answered = () => { start.storage--; };
      request.addEventListener("success", answered, {once: true});
      request.addEventListener("error", answered, {once: true});
    }
    return request;
  };
}
const missing = () => performance.getEntriesByType("resource").filter(r => !r.transferSize && !r.decodedBodySize).map(r => name(r.name));
addEventListener("error", e => {
  const t = e.target;
  if (t && t.tagName === "SCRIPT") {
    const files = missing();
    fail(what(name(t.src)) + " could not be loaded" + (files.length ? ": " + files.join(", ") + " did not arrive." : "."));
  } else if (!(t && t.tagName) && !/^ResizeObserver loop/.test(e.message)) fail("The start failed: " + reason(e.error || e.message) + ".");
}, true);
addEventListener("unhandledrejection", e => fail("The start failed: " + reason(e.reason) + "."));
const marked = mark => performance.getEntriesByName(mark).length > 0;
const stage = () => marked("kvcalc-python") ? "the calculator's Python code started but has not finished its first computation" :
  start.storage > 0 ? "the browser's storage (IndexedDB), which PyScript opens before it starts Python, has not answered (if reloading does not help, restart the browser)" :
  marked("kvcalc-pyodide-loaded") ? (marked("kvcalc-pyodide-handed-over") ? "PyScript is still setting up Python and the calculator's code" :
    "the Python runtime is ready but PyScript has not asked for it") :
  marked("kvcalc-pyodide-start") ? "the Python runtime (Pyodide) is still starting" : "the start-up scripts have not run";
const waiting = () => {
  const done = new Set(performance.getEntriesByType("resource").map(r => r.name));
  const left = start.pending.filter(url => !done.has(url)).map(name);
  return left.length ? "; still waiting for " + left.join(", ") : "";
};
setTimeout(() => { if (loading()) fail("The calculator has not started after 30 seconds: " + stage() + waiting() + ". Reload to try again.", true); }, 30000);
addEventListener("click", e => { if (e.target.closest && e.target.closest("#status-reload")) location.reload(); });
if (navigator.serviceWorker) navigator.serviceWorker.addEventListener("message", e => start.messages.push(e.data));
const edited = id => (window.kvcalcEdited || []).includes(id);
const keep = el => start.preview.push({id: el.id, value: el.value, checked: el.checked});
const put = (key, value) => {
  if (key === "model") {
    const wanted = value.toLowerCase();
    const preset = [...document.querySelectorAll("#model-list [data-value]")]
      .find(o => o.dataset.value.toLowerCase() === wanted || o.dataset.name.toLowerCase() === wanted);
    for (const [id, shown] of [["model", preset ? preset.dataset.value : value], ["model-search", preset ? preset.dataset.name : value]]) {
      const el = document.getElementById(id);
      if (el && !edited(id)) { keep(el); el.value = shown; }
    }
    return;
  }
  const controls = [...document.querySelectorAll("[data-option]")].filter(el => el.dataset.option === key && !edited(el.id));
  const radios = controls.filter(el => el.type === "radio");
  if (radios.some(el => el.value === value)) for (const el of radios) { keep(el); el.checked = el.value === value; }
  for (const el of controls) {
    if (el.tagName === "SELECT" ? [...el.options].some(o => o.value === value) : el.tagName === "INPUT" && el.type === "text") {
      keep(el); el.value = value;
    }
  }
};
const preview = () => {
  if (!hash.includes("=") || hash.length > 262144) return;
  const seen = new Set();
  for (const pair of hash.split("&").filter(Boolean).slice(0, 64)) {
    const at = pair.indexOf("=");
    let key, value;
    try { key = decodeURIComponent(pair.slice(0, at < 0 ? pair.length : at)); value = at < 0 ? "" : decodeURIComponent(pair.slice(at + 1)); }
    catch (error) { continue; }
    if (!value || seen.has(key)) continue;
    seen.add(key);
    put(key, value);
  }
};
document.addEventListener("readystatechange", () => { if (document.readyState === "interactive") { show(); preview(); } });
})();
