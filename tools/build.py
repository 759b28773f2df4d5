#!/usr/bin/env python3
"""Build dist/: exactly the files to put on a static host.

    python3 tools/build.py [DIST]

Renders index.html (preset lists and help texts from the engine's own data, escaped), packs
the engine into one zip for PyScript's [files], copies static/ and the vendored runtime.
"""

import base64
import hashlib
import html
import io
import json
import re
import shutil
import sys
import zipfile
from itertools import groupby
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "app"))

from html.parser import HTMLParser  # noqa: E402

from kvcalc import presets  # noqa: E402
from kvcalc.options import evaluate, form_values  # noqa: E402
from kvcalc.report import page_texts  # noqa: E402
from kvcalc.options import OPTIONS  # noqa: E402
from kvcalc.precision import PRECISIONS  # noqa: E402

# The minimum PyScript on Pyodide needs: 'unsafe-eval' (PyScript builds functions from strings,
# and it also lets Pyodide compile its WebAssembly); everything else is this origin only.
# Before first paint: the figures in the HTML are the default view's. A shared link shows other
# inputs, so mark the page and let the stylesheet show "computing…" until Python has computed
# the link's own numbers. Inline, allowed by its hash alone: a separate file cost a round trip
# (~70 ms) before PyScript could start. It reads no input and computes nothing.
# Before Python is ready the form already takes input: the ids edited are kept here, and Python
# computes them once it starts (app/web/early.py); the status line then says they will be.
BOOT = ('if (location.hash.length > 1) document.documentElement.classList.add("from-link");'
        'window.kvcalcEdited = [];'
        'addEventListener("input", e => { if (window.kvcalcEdited && e.target.id) {'
        ' kvcalcEdited.push(e.target.id); document.documentElement.dataset.typed = "true"; } }, true);')
BOOT_HASH = "sha256-" + base64.b64encode(hashlib.sha256(BOOT.encode()).digest()).decode()
CSP = (f"default-src 'none'; script-src 'self' 'unsafe-eval' '{BOOT_HASH}'; "
       "style-src 'self'; img-src 'self'; connect-src 'self'; manifest-src 'self'; "
       "base-uri 'none'; form-action 'none'; object-src 'none'")
DEFAULTS = {"model": "meta-llama/Llama-3.1-8B", "gpu": "h100-sxm-80gb"}
WEIGHT_PRECISIONS = ("fp32", "bf16", "fp16", "fp8", "int8", "nvfp4", "int4", "q8_0", "q4_0")


def option(value: str, label: str, selected: bool = False) -> str:
    mark = " selected" if selected else ""
    return f'<option value="{html.escape(value)}"{mark}>{html.escape(label)}</option>'


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


def gpu_options() -> str:
    return "\n".join("        " + option(g.id, f"{g.name} ({g.memory_bytes / 2 ** 30:,.1f} GiB)",
                                         g.id == DEFAULTS["gpu"])
                     for g in presets.gpus().values())


def precision_options(names) -> str:
    return "\n".join("        " + option(n, f"{n} ({float(PRECISIONS[n].bits_per_element):g} bits)")
                     for n in names)


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
    return page_texts(evaluation.scenario, evaluation.result, "gib")


def prerender(text: str) -> str:
    texts = default_view(text)
    for key, (value, figure, exact) in texts["metrics"].items():
        text, n = re.subn(rf'<(dd|p)( class="\w+")? data-metric="{key}" data-value=""([^>]*)><span class="figure">…</span> '
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
    return text


def render_index() -> str:
    text = (ROOT / "index.html").read_text(encoding="utf-8")
    text = text.replace("@CSP@", CSP).replace("@BOOT@", BOOT)
    text = text.replace("@MODEL_OPTIONS@", model_options())
    text = text.replace("@MODEL_ID@", html.escape(DEFAULTS["model"]))
    text = text.replace("@MODEL_NAME@", html.escape(presets.find_model_entry(DEFAULTS["model"])["name"]))
    text = text.replace("@MODEL_COUNT@", str(len(presets.model_entries())))
    text = text.replace("@GPU_OPTIONS@", gpu_options())
    text = text.replace("@PRECISION_OPTIONS@", precision_options(PRECISIONS))
    text = text.replace("@WEIGHT_OPTIONS@", precision_options(WEIGHT_PRECISIONS))
    for o in OPTIONS:
        text = text.replace(f'data-help="{o.name}"></small>',
                            f'id="help-{o.name}" data-help="{o.name}">{html.escape(o.help)}</small>')
    for o in OPTIONS:
        # Each control names its help and its error, so both are read when it takes focus.
        described = " ".join(x for x in (f"help-{o.name}", f"error-{o.name}") if f'id="{x}"' in text)
        if not described:
            continue
        text = re.sub(rf'(<(?:input|select|textarea)[^>]*\bid="{re.escape(o.name)}"[^>]*?)(\s*/?>)',
                      rf'\1 aria-describedby="{described}"\2', text, count=1)
    text = prerender(text)
    left = re.findall(r"@[A-Z_]+@", text)
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
    """The app's zip with each module's bytecode in __pycache__, compiled by the vendored Pyodide
    (its sources stay: small, and tracebacks keep their lines). PyScript's own package is
    compiled too, bytecode only and checked against the sources PyScript writes: were they ever
    to differ, Python compiles them as it did before."""
    with zipfile.ZipFile(zip_path, "a", zipfile.ZIP_DEFLATED) as zf:
        for name, source in pyscript_sources(vendor).items():
            zf.writestr(zipfile.ZipInfo(f"pyscript/{name}", (2020, 1, 1, 0, 0, 0)), source,
                        compress_type=zipfile.ZIP_DEFLATED)
    from vendor import VendorError, precompile
    try:
        precompile(zip_path, zip_path, keep_sources=True, checked=("pyscript",),
                   record_exec="web/generated_code.marshal:kvcalc")
    except VendorError as e:
        sys.exit(f"build.py: {e}")


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
    shutil.copytree(ROOT / "static", dist / "static", ignore=shutil.ignore_patterns("sw.js", ".ready"))
    write_service_worker(dist)


def write_service_worker(dist: Path) -> None:
    """dist/sw.js with this build's file list and a version that changes with any file."""
    files = sorted(p for p in dist.rglob("*") if p.is_file())
    digest = hashlib.sha256()
    for path in files:
        digest.update(str(path.relative_to(dist)).encode())
        digest.update(path.read_bytes())
    names = ["./"] + [f"./{p.relative_to(dist).as_posix()}" for p in files]
    text = (ROOT / "static" / "sw.js").read_text(encoding="utf-8")
    text = text.replace("@VERSION@", digest.hexdigest()[:16]).replace("@FILES@", json.dumps(names))
    (dist / "sw.js").write_text(text, encoding="utf-8")


if __name__ == "__main__":
    build(Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "dist")
