#!/usr/bin/env python3
"""Load benchmark: the app against a bare PyScript page on the stock runtime as published.

    make bench        (or: .venv/bin/python bench/load.py [--runs N] [--edits N])

Serves a copy of dist/ plus a baseline page (PyScript printing one number) on 127.0.0.1, visits
each once uncounted (the server gzips a file on its first request), then alternates cold runs
(fresh browser context) of each, each followed by a warm run (reload in the same context). The baseline loads PyScript and Pyodide exactly as npm publishes them (node_modules),
not our build of them. Then the same cold runs through Chromium's network emulation (20 Mbit/s
down, 40 ms latency), cold and warm. Prints medians and the app / baseline ratios, and the bytes
each page moved. A benchmark: it prints figures and asserts nothing.
"""

import argparse
import contextlib
import io
import gzip
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from playwright.sync_api import sync_playwright

import log_gaps  # bench/log_gaps.py, beside this file

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "app"))
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
        "--disable-sync", "--no-first-run"]
LINK = "#model=meta-llama/Llama-3.1-70B&context=32768&batch=16&kv-dtype=fp8&gpu=h100-sxm-80gb&gpus=8&memory-utilization=0.9"
BASELINE_HTML = """<!doctype html>
<html lang="en" data-state="loading"><head><meta charset="utf-8"><title>baseline</title>
<link rel="icon" href="../static/icon.svg">
<script type="module" src="../stock/pyscript/core.js"></script></head>
<body><p>bytes per token: <output id="out">…</output></p>
<script type="py" config="./pyscript.toml">
from pyscript import document, window
document.querySelector("#out").textContent = str(2 * 80 * 8 * 128 * 2)
document.documentElement.dataset.state = "ready"
window.performance.mark("kvcalc-ready")
window.performance.mark("kvcalc-figures")
</script></body></html>
"""
BASELINE_TOML = 'interpreter = "../stock/pyodide/pyodide.mjs"\n'
STOCK = {"pyscript": ROOT / "node_modules" / "@pyscript" / "core" / "dist", "pyodide": ROOT / "node_modules" / "pyodide"}
# Chromium's network emulation: 20 Mbit/s down, 5 up, 40 ms before each response starts.
THROTTLE = {"offline": False, "latency": 40, "downloadThroughput": 20e6 / 8, "uploadThroughput": 5e6 / 8}
READY = "document.documentElement.dataset.state === 'ready'"
MARKS = """() => Object.fromEntries(['kvcalc-ready', 'kvcalc-figures'].map(n =>
    [n, (performance.getEntriesByName(n)[0] || {}).startTime]).concat(
    [['fcp', (performance.getEntriesByName('first-contentful-paint')[0] || {}).startTime],
     ['wire', performance.getEntriesByType('navigation').concat(performance.getEntriesByType('resource'))
        .reduce((sum, e) => sum + (e.transferSize || 0), 0)]]))"""


def serve(site: Path):
    proc = subprocess.Popen([sys.executable, str(ROOT / "tools" / "serve.py"), str(site), "--port", "0"],
                            stdout=subprocess.PIPE, text=True)
    return proc, proc.stdout.readline().split()[-1]


def median(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else float("nan")


def p95(values):
    values = sorted(values)
    return values[min(len(values) - 1, int(round(0.95 * (len(values) - 1))))]


def visit(browser, url, warm=False, record=False, throttle=False):
    # The app's own service worker is part of the app: it registers after start-up and serves
    # the warm reload from its cache. The baseline page has none.
    context = browser.new_context()
    page = context.new_page()
    if throttle:
        cdp = context.new_cdp_session(page)
        cdp.send("Network.enable")
        cdp.send("Network.emulateNetworkConditions", THROTTLE)
    sizes = []
    if record:
        page.on("response", lambda r: sizes.append(r))
    page.goto(url)
    page.wait_for_function(READY, timeout=120_000)
    cold = page.evaluate(MARKS)
    # Bodies before the reload: a navigation discards the responses of the page before it.
    bodies = []
    for response in sizes:
        try:
            bodies.append((response.url, response.body()))
        except Exception:
            pass
    # The app's service worker caches the site after start-up; let it finish, so that it is not
    # still downloading (in the browser's network service) during the next cold run.
    # (It registers right after the ready mark: wait for the registration, then for it to be active.)
    if "/baseline/" not in url:
        page.evaluate("""async () => {
            for (let i = 0; i < 200 && !(await navigator.serviceWorker.getRegistration()); i++)
                await new Promise(r => setTimeout(r, 50));
            await navigator.serviceWorker.ready; }""")
    warm_marks = None
    if warm:
        page.reload()
        page.wait_for_function(READY, timeout=120_000)
        warm_marks = page.evaluate(MARKS)
    return context, page, cold, warm_marks, bodies


def update_latency(page, edits: int):
    # The charts redraw in microtasks queued by the input handler; awaiting three microtasks
    # queued after them puts the clock after the redraw. The side sections (tables, commands,
    # export) follow in a task of their own, and the link after a pause in the edits: the second
    # figure waits for the side sections.
    # Every section open but the plan (which plans on each edit once seen, bench/plan_page.py):
    # a closed fold draws nothing (web/folds.py), and these rows time what an edit redraws.
    return page.evaluate("""async (edits) => {
        const folds = [...document.querySelectorAll('details[data-fold]')].filter(f => f.dataset.fold !== 'plan');
        for (const fold of folds) fold.open = true;
        while (!folds.every(f => f.dataset.drawn === 'true')) await new Promise(r => setTimeout(r, 10));
        const context = document.getElementById('context'), batch = document.getElementById('batch');
        const micro = () => new Promise(resolve => queueMicrotask(resolve));
        const settled = async () => { await micro(); await micro(); await micro(); };
        const figures = [], everything = [];
        for (let i = 0; i < edits; i++) {
            const field = i % 2 ? batch : context;
            field.value = String(i % 2 ? 1 + (i % 64) : 1024 * (1 + (i % 128)));
            const t0 = performance.now();
            field.dispatchEvent(new Event('input', {bubbles: true}));
            await settled();
            figures.push(performance.now() - t0);
            // A zero timer queued now fires after the side-sections timer queued by the handler.
            while (document.documentElement.dataset.side === 'pending') await new Promise(r => setTimeout(r, 0));
            everything.push(performance.now() - t0);
            // Let the browser paint before the next edit, as between a person's keystrokes.
            await new Promise(r => requestAnimationFrame(() => setTimeout(r, 0)));
        }
        return [figures, everything];
    }""", edits)


def import_copy(site: Path) -> None:
    """site/imports/: the app again, its Python started with -X importtime (each import's time,
    written to stderr, which the page sends to the console)."""
    shutil.copytree(site, site / "imports", ignore=shutil.ignore_patterns("stock", "baseline", "imports"))
    early = site / "imports" / "static" / "early.mjs"
    text = early.read_text(encoding="utf-8")
    assert "const OPTIONS = {" in text, "static/early.mjs has no OPTIONS for loadPyodide: update bench/load.py"
    early.write_text(text.replace("const OPTIONS = {", 'const OPTIONS = { args: ["-X", "importtime"],', 1),
                     encoding="utf-8")


def import_times(browser, url) -> list:
    """[(module, self µs, cumulative µs, depth)] of a shared link's start, in import order."""
    context = browser.new_context()
    page = context.new_page()
    lines = []
    page.on("console", lambda message: lines.append(message.text))
    page.goto(url)
    page.wait_for_function(READY, timeout=120_000)
    context.close()
    rows = []
    for line in "\n".join(lines).splitlines():
        if line.startswith("import time:") and "|" in line and "self [us]" not in line:
            own, total, name = line[len("import time:"):].split("|")
            rows.append((name.strip(), int(own), int(total), (len(name) - len(name.lstrip()) - 1) // 2))
    return rows


def print_imports(rows: list) -> None:
    ours = ("kvcalc", "web", "main", "pyscript")
    app = [r for r in rows if r[0].split(".")[0] in ours]
    stdlib = [r for r in rows if r[0].split(".")[0] not in ours]
    ms = lambda us: us / 1000
    print(f"Start-up imports of a shared link (python -X importtime in the page; the timer's own cost "
          f"included): {len(app)} of the app and PyScript, {ms(sum(r[1] for r in app)):.0f} ms of their own; "
          f"{len(stdlib)} of the standard library and Pyodide, {ms(sum(r[1] for r in stdlib)):.0f} ms")
    cells = [f"{name} {ms(own):.1f}" for name, own, _, _ in sorted(app, key=lambda r: -r[1])]
    for i in range(0, len(cells), 3):
        print("  " + "".join(f"{cell:40}" for cell in cells[i:i + 3]).rstrip())
    print("  standard library and Pyodide, the ten slowest: " + ", ".join(
        f"{name} {ms(own):.1f}" for name, own, _, _ in sorted(stdlib, key=lambda r: -r[1])[:10]) + " (ms)")


def engine_timings():
    from kvcalc.evaluation import evaluate
    from kvcalc.reports.sweep import context_points, memory_series
    raw = {"model": "meta-llama/Llama-3.1-70B", "context": "32768", "batch": "16", "gpu": "h100-sxm-80gb",
           "gpus": "8", "memory-utilization": "0.9"}
    evaluation = evaluate(raw)
    n = 200
    t = time.perf_counter()
    for _ in range(n):
        evaluate(raw)
    full = (time.perf_counter() - t) / n
    contexts = context_points(evaluation.scenario)
    t = time.perf_counter()
    for _ in range(n):
        memory_series(evaluation.scenario, contexts)
    sweep = (time.perf_counter() - t) / n
    return full, sweep


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--edits", type=int, default=200)
    parser.add_argument("--slow-runs", type=int, default=3, help="cold runs through the throttled network")
    parser.add_argument("--chromium", default="/usr/bin/chromium")
    parser.add_argument("--each", action="store_true", help="also print every run's figures, in run order")
    parser.add_argument("--write-docs", action="store_true",
                        help="also write the table and the import list into docs/performance.md (make bench)")
    args = parser.parse_args()
    dist = ROOT / "dist"
    if not (dist / "index.html").exists():
        sys.exit("dist/ is not built: run make dist")
    site = Path(tempfile.mkdtemp(prefix="kvcalc-bench-"))
    shutil.copytree(dist, site, dirs_exist_ok=True)
    for name, source in STOCK.items():
        shutil.copytree(source, site / "stock" / name)
    (site / "baseline").mkdir()
    (site / "baseline" / "index.html").write_text(BASELINE_HTML)
    (site / "baseline" / "pyscript.toml").write_text(BASELINE_TOML)
    import_copy(site)
    proc, base = serve(site)
    rows = {k: [] for k in ("app_wire", "base_wire", "app_fcp", "app_link_figures", "app_ready", "app_warm", "base_ready", "base_warm",
                            "slow_app_link_figures", "slow_app_ready", "slow_base_ready", "slow_app_fcp",
                            "slow_app_warm", "slow_base_warm", "slow_app_wire", "slow_base_wire")}
    latencies, transfer = [], {}
    try:
        with sync_playwright() as pw:
            launch = {"args": ARGS}
            if Path(args.chromium).exists():
                launch["executable_path"] = args.chromium
            browser = pw.chromium.launch(**launch)
            # One visit of each first, not counted: the server compresses each file on its first
            # request (a static host serves it compressed already).
            for url in (base, base + "baseline/", base + LINK):
                visit(browser, url)[0].close()
            for run in range(args.runs):
                for name, url in (("app", base), ("base", base + "baseline/")):
                    context, page, cold, warm, bodies = visit(browser, url, warm=True, record=run == 0)
                    rows[f"{name}_ready"].append(cold["kvcalc-ready"])
                    rows[f"{name}_warm"].append(warm["kvcalc-ready"])
                    rows[f"{name}_wire"].append(cold["wire"])
                    if name == "app":
                        rows["app_fcp"].append(cold["fcp"])
                        if run == 0:
                            latencies = update_latency(page, args.edits)
                    if bodies:
                        raw = sum(len(b) for _, b in bodies)
                        packed = sum(len(gzip.compress(b, 6)) for _, b in bodies)
                        transfer[name] = (len(bodies), raw, packed)
                    context.close()
                context, page, cold, _, _ = visit(browser, base + LINK)
                rows["app_link_figures"].append(cold["kvcalc-figures"])
                context.close()
            for run in range(args.slow_runs):
                for name, url in (("app", base), ("base", base + "baseline/")):
                    context, page, cold, warm, _ = visit(browser, url, warm=True, throttle=True)
                    rows[f"slow_{name}_ready"].append(cold["kvcalc-ready"])
                    rows[f"slow_{name}_warm"].append(warm["kvcalc-ready"])
                    rows[f"slow_{name}_wire"].append(cold["wire"])
                    if name == "app":
                        rows["slow_app_fcp"].append(cold["fcp"])
                    context.close()
                context, page, cold, _, _ = visit(browser, base + LINK, throttle=True)
                rows["slow_app_link_figures"].append(cold["kvcalc-figures"])
                context.close()
            imports = import_times(browser, base + "imports/" + LINK)
            browser.close()
    finally:
        proc.terminate()
        shutil.rmtree(site, ignore_errors=True)

    if args.each:
        for key, values in rows.items():
            print(f"{key:24}", " ".join(f"{v:8.0f}" for v in values if v is not None))
    printed = io.StringIO()
    with contextlib.redirect_stdout(Tee(sys.stdout, printed)):
        report(args, rows, latencies, transfer, imports)
    if args.write_docs:
        sys.path.insert(0, str(ROOT / "tools"))
        import readme_block
        readme_block.replace("bench", "```\n" + printed.getvalue().strip() + "\n```", "docs/performance.md")
        print("docs/performance.md: the table written")
    print()
    # The tab while a pasted log is read, and the reader's CPU against the log's size.
    log_gaps.main(["--dist", str(dist), "--runs", "1", "--chromium", args.chromium])


class Tee:
    def __init__(self, *streams):
        self.streams = streams

    def write(self, text):
        for stream in self.streams:
            stream.write(text)
        return len(text)

    def flush(self):
        for stream in self.streams:
            stream.flush()


def report(args, rows, latencies, transfer, imports) -> None:
    full, sweep = engine_timings()
    base_ready, base_warm = median(rows["base_ready"]), median(rows["base_warm"])
    print(f"KVCacheCalc load benchmark: medians of {args.runs} runs each ({args.slow_runs} throttled), headless "
          f"Chromium, 127.0.0.1; baseline: the stock npm runtime")
    print(f"{'measure':58} {'app':>10} {'baseline':>10} {'ratio':>7}")
    def line(label, app, baseline=None, unit="ms"):
        ratio = f"{app / baseline:7.2f}" if baseline else " " * 7
        base_text = f"{baseline:10,.0f}" if baseline else " " * 10
        print(f"{label:58} {app:10,.0f} {base_text} {ratio}  {unit}")
    line("first correct figures visible, default view (FCP)", median(rows["app_fcp"]), base_ready)
    line("first correct figures visible, shared link", median(rows["app_link_figures"]), base_ready)
    line("ready, cold (fresh context)", median(rows["app_ready"]), base_ready)
    line("ready, warm (reload, same context)", median(rows["app_warm"]), base_warm)
    line("bytes on the wire, cold (transferSize; gzip from serve.py)", median(rows["app_wire"]),
         median(rows["base_wire"]), unit="B")
    slow_base = median(rows["slow_base_ready"])
    line("throttled 20 Mbit/s: default-view figures (FCP)", median(rows["slow_app_fcp"]), slow_base)
    line("throttled 20 Mbit/s: shared-link figures, cold", median(rows["slow_app_link_figures"]), slow_base)
    line("throttled 20 Mbit/s: ready, cold", median(rows["slow_app_ready"]), slow_base)
    line("throttled 20 Mbit/s: ready, warm (reload)", median(rows["slow_app_warm"]), median(rows["slow_base_warm"]))
    line("throttled 20 Mbit/s: bytes on the wire, cold", median(rows["slow_app_wire"]),
         median(rows["slow_base_wire"]), unit="B")
    figures, everything = latencies
    print(f"{'update: figures and charts, median of ' + str(len(figures)) + ' edits':58} "
          f"{statistics.median(figures):10.2f} {'':10} {'':7}  ms")
    print(f"{'update: figures and charts, p95':58} {p95(figures):10.2f} {'':10} {'':7}  ms")
    print(f"{'update: every section (tables, commands, export), median':58} "
          f"{statistics.median(everything):10.2f} {'':10} {'':7}  ms")
    print(f"{'update: every section, p95':58} {p95(everything):10.2f} {'':10} {'':7}  ms")
    for name in ("app", "base"):
        files, raw, packed = transfer.get(name, (0, 0, 0))
        print(f"{('app' if name == 'app' else 'baseline') + ': files requested / bytes raw / bytes gzip':58} "
              f"{files:10d} {raw:12,d} {packed:12,d}")
    print(f"{'engine in CPython: one full result':58} {full * 1000:10.3f} {'':10} {'':7}  ms")
    print(f"{'engine in CPython: one chart sweep (4 designs)':58} {sweep * 1000:10.3f} {'':10} {'':7}  ms")
    print()
    print_imports(imports)


if __name__ == "__main__":
    main()
