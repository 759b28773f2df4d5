#!/usr/bin/env python3
"""Plan benchmark: "What do I need?" for a few presets over every GPU preset, in the page's own
Python (Pyodide in headless Chromium) and, for comparison, on CPython.

    .venv/bin/python bench/plan_page.py [--dist DIR] [--runs N]

Three figures per preset:
- compute: the engine's plan as the page runs it (ask.ask_from, plan.gpu_rows for each GPU type,
  ranking.finish), timed with time.perf_counter inside the page's interpreter, N times;
- page: the section's own plan after an edit (a price typed, so every figure is planned again):
  the compute slices, the table written, and the whole with the chart, from web.plan_view's
  timings, and the longest the page waited between two slices (what an edit can wait);
- CPython: the same compute here.
Prints p50 / p95 in ms. A benchmark: it prints figures and asserts nothing.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from playwright.sync_api import sync_playwright

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "app"))

from kvcalc.planning.ask import ask_from  # noqa: E402
from kvcalc.inputs.options import parse_options  # noqa: E402

ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
        "--disable-sync", "--no-first-run"]
PRESETS = ("meta-llama/Llama-3.1-8B", "meta-llama/Llama-3.1-70B", "deepseek-ai/DeepSeek-V3", "Qwen/Qwen3-30B-A3B",
           "openai/gpt-oss-120b")
INPUTS = {"context": "8192", "batch": "64", "engine": "vllm"}
READY = "document.documentElement.dataset.state === 'ready'"
DONE = "document.getElementById('plan').dataset.state === 'done'"

# The compute loop, the same text in the page and here: `model`, `runs` given.
COMPUTE = """
import time
from kvcalc.planning import plan
from kvcalc.planning.ask import ask_from
from kvcalc.planning.ranking import finish
from kvcalc.inputs.options import parse_options
values, errors = parse_options(dict(INPUTS, model=model))
assert not errors, errors
times = []
for _ in range(runs):
    started = time.perf_counter()
    ask = ask_from(values)
    rows = []
    for gpu_id in ask.gpus:
        rows.extend(plan.gpu_rows(ask, gpu_id))
    finish(ask, rows)
    times.append((time.perf_counter() - started) * 1000)
"""


def percentiles(times: list) -> str:
    ordered = sorted(times)
    p95 = ordered[min(len(ordered) - 1, max(0, round(0.95 * len(ordered)) - 1))]
    return f"p50 {statistics.median(ordered):7.1f}  p95 {p95:7.1f}"


def cpython(model: str, runs: int) -> list:
    scope = {"INPUTS": INPUTS, "model": model, "runs": runs}
    exec(COMPUTE, scope)
    return scope["times"]


def in_page(page, model: str, runs: int) -> list:
    code = f"INPUTS = {INPUTS!r}\nmodel = {model!r}\nruns = {runs}\n" + COMPUTE + "\nimport json\njson.dumps(times)"
    return json.loads(page.evaluate("""async code => {
        const early = await import(new URL('static/early.mjs', location.href).href);
        const py = await early.loadPyodide();
        return py.runPython(code);
    }""", code))


def page_timings(page) -> list:
    return json.loads(page.evaluate("""async () => {
        const early = await import(new URL('static/early.mjs', location.href).href);
        const py = await early.loadPyodide();
        return py.runPython("import json, sys; json.dumps(sys.modules['web.plan_view'].timings)");
    }"""))


def section(page, site: str, model: str, runs: int) -> list:
    """The section's own plans: the preset's link, then a price edited each run."""
    page.goto(site + "#" + "&".join(f"{k}={v}" for k, v in dict(INPUTS, model=model).items()))
    page.reload()
    page.wait_for_function(READY, timeout=90_000)
    page.locator("#plan").scroll_into_view_if_needed()
    page.wait_for_function(DONE, timeout=120_000)
    before = len(page_timings(page))
    for i in range(runs):
        page.fill("#prices", f"t4-16gb={0.5 + i / 100:.2f}")
        page.wait_for_function("document.documentElement.dataset.pending !== 'true'")
        page.wait_for_function(DONE, timeout=120_000)
    return page_timings(page)[before:]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dist", default=os.environ.get("KVCALC_DIST") or str(ROOT / "dist"))
    parser.add_argument("--runs", type=int, default=20)
    args = parser.parse_args()
    server = subprocess.Popen([sys.executable, str(ROOT / "tools" / "serve.py"), args.dist, "--port", "0"],
                              stdout=subprocess.PIPE, text=True)
    site = server.stdout.readline().split()[-1]
    considered = len(ask_from(parse_options(dict(INPUTS, model=PRESETS[0]))[0]).gpus)
    print(f"The plan over every GPU preset the engine runs on ({considered}), {INPUTS}, {args.runs} runs; ms")
    try:
        with sync_playwright() as p:
            path = os.environ.get("CHROMIUM", "/usr/bin/chromium")
            browser = p.chromium.launch(args=ARGS, **({"executable_path": path} if os.path.exists(path) else {}))
            page = browser.new_page(viewport={"width": 1280, "height": 800}, service_workers="block")
            page.goto(site)
            page.wait_for_function(READY, timeout=90_000)
            for model in PRESETS:
                in_page(page, model, 2)                 # warm: modules imported, caches filled
                compute = in_page(page, model, args.runs)
                here = cpython(model, args.runs)
                runs = section(page, site, model, max(3, args.runs // 4))
                print(f"\n{model}")
                print(f"  compute, in the page (Pyodide)   {percentiles(compute)}")
                print(f"  compute, CPython {sys.version.split()[0]:<16}{percentiles(here)}")
                if runs:
                    print(f"  section after an edit: compute   {percentiles([r['compute_ms'] for r in runs])}")
                    print(f"                         table     {percentiles([r['table_ms'] for r in runs])}")
                    print(f"                         + chart   {percentiles([r['wall_ms'] for r in runs])}")
                    print(f"  longest wait between slices      {percentiles([r['longest_slice_ms'] for r in runs])}"
                          f"  ({runs[0]['rows']} rows)")
            browser.close()
    finally:
        server.terminate()
        server.wait(timeout=10)
    return 0


if __name__ == "__main__":
    started = time.time()
    code = main()
    print(f"\n({time.time() - started:.0f} s)")
    sys.exit(code)
