#!/usr/bin/env python3
"""Build dist/: exactly the files to put on a static host.

    python3 tools/build.py [DIST]

Renders index.html (preset lists and help texts from the engine's own data, escaped), packs
the engine into one zip for PyScript's [files], copies static/ and the vendored runtime.
"""

import html
import io
import re
import shutil
import sys
import zipfile
from itertools import groupby
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "app"))

from kvcalc import presets  # noqa: E402
from kvcalc.options import OPTIONS  # noqa: E402
from kvcalc.precision import PRECISIONS  # noqa: E402

# The minimum PyScript on Pyodide needs: 'unsafe-eval' (PyScript builds functions from strings,
# and it also lets Pyodide compile its WebAssembly); everything else is this origin only.
CSP = ("default-src 'none'; script-src 'self' 'unsafe-eval'; "
       "style-src 'self'; img-src 'self'; connect-src 'self'; manifest-src 'self'; "
       "base-uri 'none'; form-action 'none'; object-src 'none'")
DEFAULTS = {"model": "meta-llama/Llama-3.1-8B", "gpu": "h100-sxm-80gb"}
WEIGHT_PRECISIONS = ("fp32", "bf16", "fp16", "fp8", "int8", "nvfp4", "int4", "q8_0", "q4_0")


def option(value: str, label: str, selected: bool = False) -> str:
    mark = " selected" if selected else ""
    return f'<option value="{html.escape(value)}"{mark}>{html.escape(label)}</option>'


def model_options() -> str:
    entries = sorted(presets.model_entries(), key=lambda e: (e["family"].lower(), e["name"].lower()))
    out = []
    for family, group in groupby(entries, key=lambda e: e["family"]):
        out.append(f'        <optgroup label="{html.escape(family)}">')
        for e in group:
            out.append("          " + option(e["id"], f'{e["name"]} ({e["id"]})', e["id"] == DEFAULTS["model"]))
        out.append("        </optgroup>")
    return "\n".join(out)


def gpu_options() -> str:
    return "\n".join("        " + option(g.id, f"{g.name} ({g.memory_bytes / 2 ** 30:,.1f} GiB)",
                                         g.id == DEFAULTS["gpu"])
                     for g in presets.gpus().values())


def precision_options(names) -> str:
    return "\n".join("        " + option(n, f"{n} ({float(PRECISIONS[n].bits_per_element):g} bits)")
                     for n in names)


def render_index() -> str:
    text = (ROOT / "index.html").read_text(encoding="utf-8")
    text = text.replace("@CSP@", CSP)
    text = text.replace("@MODEL_OPTIONS@", model_options())
    text = text.replace("@GPU_OPTIONS@", gpu_options())
    text = text.replace("@PRECISION_OPTIONS@", precision_options(PRECISIONS))
    text = text.replace("@WEIGHT_OPTIONS@", precision_options(WEIGHT_PRECISIONS))
    for o in OPTIONS:
        text = text.replace(f'data-help="{o.name}"></small>', f'data-help="{o.name}">{html.escape(o.help)}</small>')
    left = re.findall(r"@[A-Z_]+@", text)
    if left:
        sys.exit(f"index.html has unfilled markers: {left}")
    return text


def engine_zip() -> bytes:
    """The kvcalc package as one zip, fixed timestamps so the build is reproducible."""
    buffer = io.BytesIO()
    package = ROOT / "app" / "kvcalc"
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as zf:
        for path in sorted(package.rglob("*")):
            if path.is_file() and path.suffix in (".py", ".json"):
                info = zipfile.ZipInfo(str(Path("kvcalc") / path.relative_to(package)), (2020, 1, 1, 0, 0, 0))
                info.compress_type = zipfile.ZIP_DEFLATED
                zf.writestr(info, path.read_bytes())
    return buffer.getvalue()


def build(dist: Path) -> None:
    vendor = ROOT / "static" / "vendor"
    if not (vendor / "pyodide" / "pyodide.mjs").exists():
        sys.exit("static/vendor is missing: run `make vendor` (npm ci, then tools/vendor.py)")
    if dist.exists():
        shutil.rmtree(dist)
    (dist / "app").mkdir(parents=True)
    (dist / "index.html").write_text(render_index(), encoding="utf-8")
    shutil.copy(ROOT / "pyscript.toml", dist / "pyscript.toml")
    shutil.copy(ROOT / "app" / "main.py", dist / "app" / "main.py")
    (dist / "app" / "kvcalc.zip").write_bytes(engine_zip())
    shutil.copytree(ROOT / "static", dist / "static")


if __name__ == "__main__":
    build(Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "dist")
