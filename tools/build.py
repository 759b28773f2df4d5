#!/usr/bin/env python3
"""Build dist/: exactly the files to put on a static host.

    python3 tools/build.py [DIST]

Renders index.html (preset lists, and the field blocks from the option schema, from the engine's
own data, escaped; the boot script inlined from static/boot.js), packs
the engine into one zip (imported as it is: static/early.mjs), copies static/ and the vendored runtime.
"""

import base64
import gzip
import hashlib
import html
import io
import json
import re
import shutil
import subprocess
import sys
import zipfile
from itertools import groupby
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "app"))

from html.parser import HTMLParser  # noqa: E402

from kvcalc.readers import presets  # noqa: E402
from kvcalc.evaluation import evaluate  # noqa: E402
from kvcalc.inputs import form_blocks  # noqa: E402
from kvcalc.inputs.form_fields import form_values  # noqa: E402
from kvcalc.reports.report import page_texts  # noqa: E402

# The boot script (static/boot.js says what it does), inlined before first paint and allowed by its
# hash alone.
BOOT_FILE = ROOT / "static" / "boot.js"


def boot_script(source: str) -> str:
    """static/boot.js as the page inlines it: each line trimmed, comment and blank lines left out."""
    return "\n".join(line.strip() for line in source.splitlines()
                     if line.strip() and not line.strip().startswith("//"))


BOOT = boot_script(BOOT_FILE.read_text(encoding="utf-8"))
BOOT_HASH = "sha256-" + base64.b64encode(hashlib.sha256(BOOT.encode()).digest()).decode()
# The minimum PyScript on Pyodide needs: 'unsafe-eval' (PyScript builds functions from strings,
# and it also lets Pyodide compile its WebAssembly); everything else is this origin only.
CSP = (f"default-src 'none'; script-src 'self' 'unsafe-eval' '{BOOT_HASH}'; "
       "style-src 'self'; img-src 'self'; connect-src 'self'; manifest-src 'self'; "
       "base-uri 'none'; form-action 'none'; object-src 'none'")
# The same policy as a header, which can also forbid framing (a meta tag cannot carry
# frame-ancestors); with the other headers a static host should send. dist/_headers holds them
# (Netlify and Cloudflare Pages read it; tools/serve.py sends what it says).
HEADER_CSP = CSP + "; frame-ancestors 'none'"
SECURITY_HEADERS = {"X-Content-Type-Options": "nosniff", "Referrer-Policy": "no-referrer", "X-Frame-Options": "DENY"}
IMMUTABLE = "public, max-age=31536000, immutable"
DEFAULTS = {"model": "meta-llama/Llama-3.1-8B"}
# Where index.html wants a place's field blocks (kvcalc.inputs.form_blocks), alone on its line.
FIELDS_MARKER = re.compile(r"^([ \t]*)@FIELDS:([\w-]+)@$", re.M)


def model_options() -> str:
    """The combobox's listbox: every preset in the table's order (the search's order for an
    empty query), its name and repo id."""
    out = []
    for n, e in enumerate(presets.model_entries()):
        selected = "true" if e["id"] == DEFAULTS["model"] else "false"
        out.append(f'        <div role="option" id="model-opt-{n}" data-value="{html.escape(e["id"])}" '
                   f'data-name="{html.escape(e["name"])}" aria-selected="{selected}">'
                   f'<span class="name">{html.escape(e["name"])}</span> <span class="repo">{html.escape(e["id"])}</span></div>')
    return "\n".join(out)


def field_blocks(text: str) -> str:
    """Each @FIELDS:place@ marker replaced by that place's blocks, rendered from the option schema
    (kvcalc.inputs.form_blocks) and indented as the marker is; every place exactly once."""
    problems = form_blocks.problems()
    if problems:
        sys.exit("kvcalc/inputs/form_blocks.py: " + "; ".join(problems))
    places = [m[2] for m in FIELDS_MARKER.finditer(text)]
    if sorted(places) != sorted(form_blocks.PLACES):
        sys.exit(f"index.html: the @FIELDS:place@ markers are {places}, expected each of "
                 f"{list(form_blocks.PLACES)} once")
    return FIELDS_MARKER.sub(lambda m: form_blocks.render_place(m[2], m[1]), text)


class _FormDefaults(HTMLParser):
    """The form's initial values, read from the page itself (the single source of defaults)."""

    def __init__(self):
        super().__init__()
        self.values, self._select = {}, None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        name = a.get("data-option")
        if tag == "input" and name:
            if a.get("type") != "radio" or "checked" in a:
                self.values[name] = a.get("value", "")
        elif tag == "select":
            self._select = name
        elif tag == "option" and self._select and "selected" in a:
            self.values[self._select] = a.get("value", "")

    def handle_endtag(self, tag):
        if tag == "select":
            self._select = None


def default_view(text: str) -> dict:
    """The engine's texts for the form as it first loads (what Python would compute)."""
    parser = _FormDefaults()
    parser.feed(text)
    evaluation = evaluate(form_values(parser.values))
    if not evaluation.ok:
        sys.exit(f"the page's default inputs do not compute: {evaluation.errors}")
    return page_texts(evaluation.scenario, evaluation, "gib")


def prerender(text: str) -> str:
    texts = default_view(text)
    engine = texts["engine"]
    for key, (value, figure, exact) in list(texts["metrics"].items()) + list(engine["metrics"].items()):
        text, n = re.subn(rf'<(dd|p)( class="\w+")? data-metric="{key}" data-value=""([^>]*)><span class="figure">…?</span> '
                          rf'<span class="exact"></span></(dd|p)>',
                          lambda m: f'<{m[1]}{m[2] or ""} data-metric="{key}" data-value="{html.escape(value)}"{m[3]}>'
                                    f'<span class="figure">{html.escape(figure)}</span> '
                                    f'<span class="exact">{html.escape(exact)}</span></{m[4]}>', text)
        if n != 1:
            sys.exit(f"index.html: no single placeholder for metric {key}")
    for key, shown in texts["metric_conditions"].items():
        text, n = re.subn(rf'<small class="cond" data-cond="{key}"></small>',
                          f'<small class="cond" data-cond="{key}">{html.escape(shown)}</small>', text)
        if n != 1:
            sys.exit(f"index.html: no single condition for metric {key}")
    text = text.replace('<p class="conditions" id="conditions"></p>',
                        f'<p class="conditions" id="conditions">{html.escape(texts["conditions"])}</p>')
    text = text.replace('<p class="model-line" id="model-line"></p>',
                        f'<p class="model-line" id="model-line">{html.escape(texts["model_line"])}</p>')
    items = "".join(f"<li>{html.escape(line)}</li>" for line in texts["formula"])
    text = text.replace('<ol class="formula" id="formula"></ol>', f'<ol class="formula" id="formula">{items}</ol>')
    for key, shown in texts["live"].items():
        text = re.sub(rf'<span data-live="{key}">[^<]*</span>', f'<span data-live="{key}">{html.escape(shown)}</span>', text)
    return prerender_engine(text, engine)


def prerender_engine(text: str, engine: dict) -> str:
    """The engine card of the default view (the page starts sized as vLLM), so its first screen
    is what vLLM prints before Python runs; without an engine the card stays hidden."""
    if not engine["title"]:
        return text
    replacements = [
        ('<section class="engine-view" id="engine-view" aria-labelledby="h-engine" hidden>',
         '<section class="engine-view" id="engine-view" aria-labelledby="h-engine">'),
        ('<span id="engine-title">the engine</span>', f'<span id="engine-title">{html.escape(engine["title"])}</span>'),
        ('<pre class="command" id="engine-log" tabindex="0"', '<pre class="command" id="engine-log" tabindex="0"'),
        ('<ul class="notes" id="engine-why"></ul>',
         '<ul class="notes" id="engine-why">' + "".join(f"<li>{html.escape(line)}</li>" for line in engine["why"])
         + "</ul>"),
    ]
    for old, new in replacements:
        if text.count(old) != 1:
            sys.exit(f"index.html: no single {old!r} for the engine card")
        text = text.replace(old, new)
    text = re.sub(r'(<pre class="command" id="engine-log"[^>]*>)</pre>',
                  lambda m: m[1] + html.escape(engine["log"]) + "</pre>", text, count=1)
    for key, label in engine["labels"].items():
        text, n = re.subn(rf'<dt data-label="{key}">[^<]*</dt>', f'<dt data-label="{key}">{html.escape(label)}</dt>', text)
        if n != 1:
            sys.exit(f"index.html: no single label for {key}")
    return text


def render_index() -> str:
    text = (ROOT / "index.html").read_text(encoding="utf-8")
    text = text.replace("@CSP@", CSP).replace("@BOOT@", BOOT)
    text = text.replace("@MODEL_OPTIONS@", model_options())
    text = text.replace("@MODEL_ID@", html.escape(DEFAULTS["model"]))
    text = text.replace("@MODEL_NAME@", html.escape(presets.find_model_entry(DEFAULTS["model"])["name"]))
    text = text.replace("@MODEL_COUNT@", str(len(presets.model_entries())))
    text = field_blocks(text)
    text = prerender(text)
    # @VERSION@ is the offline copy's, known once every file is written (write_service_worker).
    left = [m for m in re.findall(r"@[A-Z_]+(?::[\w-]+)?@", text) if m != "@VERSION@"]
    if left:
        sys.exit(f"index.html has unfilled markers: {left}")
    return text


def engine_zip() -> bytes:
    """The engine (kvcalc), the browser layer (web) and its entry point (main.py) as one zip, one
    request, with fixed timestamps so the build is reproducible. The page runs `import main`."""
    buffer = io.BytesIO()
    app = ROOT / "app"
    files = [p for package in ("kvcalc", "web") for p in sorted((app / package).rglob("*"))
             if p.is_file() and p.suffix in (".py", ".json")]
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as zf:
        for path in files + [app / "main.py"]:
            info = zipfile.ZipInfo(path.relative_to(app).as_posix(), (2020, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(info, path.read_bytes())
    return buffer.getvalue()


# PyScript writes its own Python package (`pyscript`) as sources into the working directory at
# every start, from string literals in its core chunk: `pyscript:{"__init__.py":"…",…}`.
PYSCRIPT_PACKAGE = re.compile(r'\bpyscript:\{((?:"\w+\.py":"(?:[^"\\]|\\.)*",?)+)\}')
PYSCRIPT_MODULE = re.compile(r'"(\w+\.py)":("(?:[^"\\]|\\.)*")')


def pyscript_sources(vendor: Path) -> dict[str, bytes]:
    """The sources of PyScript's `pyscript` package exactly as PyScript writes them at start-up
    (read from the vendored core chunk; the strings are JSON-escaped)."""
    chunks = sorted((vendor / "pyscript").glob("core-*.js"))
    found = [m for chunk in chunks for m in PYSCRIPT_PACKAGE.finditer(chunk.read_text(encoding="utf-8"))]
    if len(found) != 1:
        sys.exit(f"build.py: expected PyScript's Python package once in static/vendor/pyscript/core-*.js, "
                 f"found it {len(found)} times: re-check pyscript_sources() against this PyScript")
    return {name: json.loads(text).encode("utf-8") for name, text in PYSCRIPT_MODULE.findall(found[0].group(1))}


def precompile_app(zip_path: Path, vendor: Path) -> None:
    """The app's zip with each module's bytecode beside its source, compiled by the vendored
    Pyodide (the sources stay: small, and tracebacks keep their lines). The page imports from the
    zip as it is (static/early.mjs puts it first on sys.path), so PyScript's own package, taken
    from the vendored core, is imported from it too, compiled, rather than from the sources
    PyScript writes at every start."""
    with zipfile.ZipFile(zip_path, "a", zipfile.ZIP_DEFLATED) as zf:
        for name, source in pyscript_sources(vendor).items():
            zf.writestr(zipfile.ZipInfo(f"pyscript/{name}", (2020, 1, 1, 0, 0, 0)), source,
                        compress_type=zipfile.ZIP_DEFLATED)
    from vendor import VendorError, precompile
    try:
        precompile(zip_path, zip_path, keep_sources=True, record_exec="web/generated_code.marshal:kvcalc")
    except VendorError as e:
        sys.exit(f"build.py: {e}")


STARTUP_MODULES = ROOT / "tools" / "startup_modules.txt"
APP_PACKAGES = ("kvcalc", "web", "main")


def startup_modules() -> frozenset:
    """The app's modules the page's start imports (tools/startup_modules.txt, kept true by
    tests/browser/test_startup_modules.py)."""
    rows = STARTUP_MODULES.read_text(encoding="utf-8").splitlines()
    return frozenset(row.split()[0] for row in rows if row.strip() and not row.startswith("#"))


def split_app(zip_path: Path) -> None:
    """kvcalc.zip keeps what the first figures need: the start's modules as bytecode, the data and
    PyScript's package. Every other module of the app, with its source, goes to kvcalc-later.zip,
    fetched after the first figures. The start's own sources are left out: 0.4 MB a slow link
    would wait for, read only by a traceback (which then names file and line without the text)."""
    from vendor import module_of, split_by_first_use
    start = startup_modules()

    def at_start(name: str):
        module = module_of(name)
        if module is None or module.split(".")[0] not in APP_PACKAGES:
            return True
        if module in start:
            return True if name.endswith(".pyc") else None
        return False
    split_by_first_use(zip_path, zip_path.with_name(APP_LATER), at_start)
    later = {path.name: {"bytes": path.stat().st_size,
                         "modules": sorted(filter(None, map(module_of, zipfile.ZipFile(path).namelist())))}
             for path in (STDLIB_LATER, zip_path.with_name(APP_LATER))}
    with zipfile.ZipFile(zip_path, "a", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr(zipfile.ZipInfo(LATER_INDEX, (2020, 1, 1, 0, 0, 0)), json.dumps(later, indent=0),
                    compress_type=zipfile.ZIP_DEFLATED)


APP_LATER = "kvcalc-later.zip"
STDLIB_LATER = ROOT / "static" / "vendor" / "pyodide" / "python_stdlib_later.zip"
# Each later zip's size and modules, by its name: app/web/later.py's Finder fetches a zip at once
# only for one of its modules (never for an optional import absent everywhere), gives each
# package its folder in the zip that holds its other modules, and refuses a zip of another size
# (another release's, arrived after this one's start).
LATER_INDEX = "web/later_modules.json"


def _not_copied(folder: str, names: list[str]) -> list[str]:
    """static/'s sources the build writes into other files (sw.js made per build, boot.js inlined
    into index.html), and the vendor step's marker."""
    own = Path(folder) == ROOT / "static"
    return [n for n in names if n == ".ready" or (own and n in ("sw.js", "boot.js"))]


def build(dist: Path) -> None:
    vendor = ROOT / "static" / "vendor"
    if not (vendor / "pyodide" / "pyodide.mjs").exists():
        sys.exit("static/vendor is missing: run `make vendor` (npm ci, then tools/vendor.py)")
    if dist.exists():
        shutil.rmtree(dist)
    (dist / "app").mkdir(parents=True)
    (dist / "index.html").write_text(render_index(), encoding="utf-8")
    shutil.copy(ROOT / "pyscript.toml", dist / "pyscript.toml")
    (dist / "app" / "kvcalc.zip").write_bytes(engine_zip())
    precompile_app(dist / "app" / "kvcalc.zip", vendor)
    split_app(dist / "app" / "kvcalc.zip")
    shutil.copytree(ROOT / "static", dist / "static", ignore=_not_copied)
    write_snapshot(dist)
    write_headers(dist)
    write_service_worker(dist)


SNAPSHOT_SLOT = 'const SNAPSHOT = "";'
ZIP_BYTES_SLOT = "const SNAPSHOT_ZIP_BYTES = 0;"
SNAPSHOT_NAME = re.compile(r"snapshot-[0-9a-f]{16}\.bin")
# The engine modules the page's start imports first (tools/startup_modules.txt lists every
# module it imports): in the snapshot, imported already; the start imports whatever else it needs.
SNAPSHOT_IMPORTS = ("kvcalc.evaluation", "kvcalc.reports.report", "kvcalc.reports.link", "kvcalc.reports.memory_bar",
                    "kvcalc.inputs.form_fields", "kvcalc.command_line")


def write_snapshot(dist: Path) -> None:
    """The started runtime's memory snapshot (tools/snapshot.mjs), gzipped, and its name and the
    app zip's size written into dist's static/early.mjs, which restores it on a warm load.
    Gzipped here, not by the host: 34 MiB of memory is 6 MB so, on every host (one that does not
    compress it would send it all, and some refuse files over 25 MiB). Named by what it is made
    from, not by its bytes, which differ from one run to the next (Python's hash seed, its random
    state): a build of the same sources gives the same name, and the offline copy the same
    version (write_service_worker), so a redeploy is not a new release to the browsers."""
    pyodide = dist / "static" / "vendor" / "pyodide"
    made = pyodide / "snapshot.bin"
    done = subprocess.run(["node", str(ROOT / "tools" / "snapshot.mjs"), str(pyodide), str(made),
                           str(dist / "app" / "kvcalc.zip"), ",".join(SNAPSHOT_IMPORTS)],
                          cwd=ROOT, capture_output=True, text=True)
    if done.returncode:
        sys.exit(f"build.py: the runtime's snapshot failed: {done.stderr.strip()[-400:]}")
    packed = gzip.compress(made.read_bytes(), 6, mtime=0)
    made.unlink()
    inputs = hashlib.sha256()
    app_zip = (dist / "app" / "kvcalc.zip").read_bytes()
    for part in (pyodide / "pyodide.asm.wasm", pyodide / "pyodide.asm.mjs", pyodide / "python_stdlib.zip",
                 ROOT / "tools" / "snapshot.mjs"):
        inputs.update(part.read_bytes())
    inputs.update(app_zip + ",".join(SNAPSHOT_IMPORTS).encode())
    # ".bin", not ".gz": a server that sees .gz may send it as Content-Encoding: gzip (inflated twice).
    name = f"snapshot-{inputs.hexdigest()[:16]}.bin"
    (pyodide / name).write_bytes(packed)
    early = dist / "static" / "early.mjs"
    text = early.read_text(encoding="utf-8")
    for slot, filled in ((SNAPSHOT_SLOT, f'const SNAPSHOT = "{name}";'),
                         (ZIP_BYTES_SLOT, f"const SNAPSHOT_ZIP_BYTES = {len(app_zip)};")):
        if slot not in text:
            sys.exit(f"build.py: static/early.mjs has no {slot} for the build to fill in")
        text = text.replace(slot, filled)
    early.write_text(text, encoding="utf-8")
    print(f"{name}: the runtime's memory snapshot, {(pyodide / name).stat().st_size:,} bytes")


def write_headers(dist: Path) -> None:
    """dist/_headers: the Content-Security-Policy on every HTML page (the meta tag's policy plus
    frame-ancestors), the other security headers on everything, a year's caching for the files
    whose names carry a hash of their content (the others revalidate: every host's default)."""
    lines = ["# The headers to send with this site, written by tools/build.py: Netlify and Cloudflare",
             "# Pages read this file; tools/serve.py sends what it says."]
    pages = sorted(p.relative_to(dist).as_posix() for p in dist.rglob("*.html"))
    for page in pages:
        paths = [f"/{page}"] + ([f"/{page[:-len('index.html')]}"] if page.endswith("index.html") else [])
        for path in sorted(paths):
            lines += [path, f"  Content-Security-Policy: {HEADER_CSP}"]
    lines.append("/*")
    lines += [f"  {name}: {value}" for name, value in SECURITY_HEADERS.items()]
    for path in sorted((dist / "static" / "vendor" / "pyscript").glob("*-*.js")):
        if re.fullmatch(r"[\w-]+-[\w-]{8}\.js", path.name):
            lines += [f"/{path.relative_to(dist).as_posix()}", f"  Cache-Control: {IMMUTABLE}"]
    for path in sorted((dist / "static" / "vendor" / "pyodide").glob("snapshot-*.bin")):
        lines += [f"/{path.relative_to(dist).as_posix()}", f"  Cache-Control: {IMMUTABLE}"]
    (dist / "_headers").write_text("\n".join(lines) + "\n", encoding="utf-8")


# Not part of the page: the host's configuration.
NOT_CACHED = {"_headers"}


def write_service_worker(dist: Path) -> None:
    """dist/sw.js with this build's file list and a version that changes with any file; the
    version also goes into index.html, so the page knows which release it is."""
    files = sorted(p for p in dist.rglob("*") if p.is_file() and p.name not in NOT_CACHED)
    digest = hashlib.sha256()
    for path in files:
        digest.update(str(path.relative_to(dist)).encode())
        if not SNAPSHOT_NAME.fullmatch(path.name):     # named by what it is made from (write_snapshot)
            digest.update(path.read_bytes())
    names = ["./"] + [f"./{p.relative_to(dist).as_posix()}" for p in files]
    version = digest.hexdigest()[:16]
    text = (ROOT / "static" / "sw.js").read_text(encoding="utf-8")
    text = text.replace("@VERSION@", version).replace("@FILES@", json.dumps(names))
    (dist / "sw.js").write_text(text, encoding="utf-8")
    index = dist / "index.html"
    if index.exists():
        index.write_text(index.read_text(encoding="utf-8").replace("@VERSION@", version), encoding="utf-8")


if __name__ == "__main__":
    build(Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "dist")
