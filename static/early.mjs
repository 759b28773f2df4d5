// Start Pyodide at once, before PyScript's own modules have loaded, and hand the instance to
// PyScript: pyscript.toml's `interpreter` names this module, and PyScript 0.7.31 calls its
// loadPyodide({stdout, stderr, indexURL}) and reads its version (core.js, the "py" engine).
// Python's output goes wherever PyScript asks once it asks. Nothing else happens here but
// telling the boot script's watchdog (index.html, tools/build.py BOOT) how far the runtime got:
// the marks, and the runtime's own failure in words.
import { loadPyodide as load, version } from "./vendor/pyodide/pyodide.mjs";

const sink = { stdout: (text) => console.log(text), stderr: (text) => console.error(text) };
performance.mark("kvcalc-pyodide-start");
const started = load({
  indexURL: new URL("./vendor/pyodide/", import.meta.url).href,
  stdout: (text) => sink.stdout(text),
  stderr: (text) => sink.stderr(text),
});
started.then(
  () => performance.mark("kvcalc-pyodide-loaded"),
  (error) => window.kvcalcStart?.fail(`The Python runtime (Pyodide ${version}) could not start: ${error?.message ?? error}.`));

export { version };
export const loadPyodide = ({ stdout, stderr } = {}) => {
  if (stdout) sink.stdout = stdout;
  if (stderr) sink.stderr = stderr;
  performance.mark("kvcalc-pyodide-handed-over");
  return started;
};
