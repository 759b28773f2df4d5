#!/usr/bin/env python3
"""Log-paste benchmark: how long the tab is held while a pasted start-up log is read, and the
reader's CPU time against the log's size.

    .venv/bin/python bench/log_gaps.py [--dist DIR] [--runs N]      (`make bench`: bench/load.py runs it last)

In headless Chromium, a heartbeat every 10 ms records the gaps between beats while the status
says "Reading": a gap is the thread held by one slice of the reader (app/web/log_paste.py feeds
64K characters at a time and gives the thread back before each). Two pastes: a 10 MB vLLM log
(a start-up and 45,000 throughput lines, as tests/browser/test_log_page.py pastes) and a 16 MB
llama.cpp log of the hostile lines tests/engines/test_hostile_logs.py builds. Then, in CPython, the
reader on 1 MB and 16 MB of each engine's hostile lines. A benchmark: it prints figures and
asserts nothing (the tests assert the slicing and the linear growth, never a duration).
"""

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

from playwright.sync_api import sync_playwright

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "app"), str(ROOT / "tests"), str(ROOT / "tests" / "engines")]

from kvcalc.errors import InputError  # noqa: E402
from kvcalc.inputs.startup_log import read_log  # noqa: E402
from test_hostile_logs import engine_log  # noqa: E402

ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run"]
READY = "document.documentElement.dataset.state === 'ready'"
DONE = "!document.getElementById('log-reading').hidden || document.getElementById('error-log').textContent !== ''"
LOG = ROOT / "tests/fixtures/logs/vllm-qwen3-30b-a3b-h100-tp2-40k-seqs64-v0.12.0.log"


def busy_vllm_log() -> str:
    busy = "".join(f"(APIServer pid=248518) INFO 12-20 18:40:{i % 60:02d} [loggers.py:123] Engine 000: Avg prompt "
                   "throughput: 1520.3 tokens/s, Avg generation throughput: 812.5 tokens/s, Running: 12 reqs, "
                   "Waiting: 0 reqs, GPU KV cache usage: 7.1%, Prefix cache hit rate: 0.0%\n" for i in range(45000))
    return LOG.read_text() + busy


def paste(browser, url: str, text: str) -> dict:
    page = browser.new_page()
    page.goto(url)
    page.wait_for_function(READY, timeout=120_000)
    page.click("#source-log")
    page.evaluate("text => { document.getElementById('startup-log').value = text; }", text)
    page.evaluate("() => new Promise(done => requestAnimationFrame(() => requestAnimationFrame(done)))")
    page.evaluate("""() => { window.__gaps = []; let last = performance.now(); window.__t0 = last;
        window.__beat = setInterval(() => { const now = performance.now();
            if (document.getElementById('log-status').textContent.startsWith('Reading')) window.__gaps.push(now - last);
            last = now; }, 10);
        document.getElementById('startup-log').dispatchEvent(new Event('input', {bubbles: true})); }""")
    page.wait_for_function(DONE, timeout=300_000, polling=50)
    figures = page.evaluate("""() => { clearInterval(window.__beat); const box = document.getElementById('startup-log');
        return {gaps: window.__gaps, total: performance.now() - window.__t0, slices: box.dataset.slices,
                largest: box.dataset.largestSlice, yields: box.dataset.yields,
                error: document.getElementById('error-log').textContent}; }""")
    page.close()
    return figures


def percentile(values, q):
    values = sorted(values)
    return values[min(len(values) - 1, int(round(q * (len(values) - 1))))] if values else float("nan")


def cpu(text: str, engine: str) -> float:
    start = time.process_time()
    try:
        read_log(text, engine)
    except InputError:
        pass
    return time.process_time() - start


def main(argv=None):
    parser = argparse.ArgumentParser()
    parser.add_argument("--dist", default=str(ROOT / "dist"))
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--chromium", default="/usr/bin/chromium")
    args = parser.parse_args(argv)
    if not (Path(args.dist) / "index.html").exists():
        sys.exit(f"{args.dist} is not built: run make dist")
    pastes = (("10 MB vLLM log (start-up + 45,000 throughput lines)", busy_vllm_log()),
              ("16 MB llama.cpp log of hostile lines", engine_log("llama.cpp", (16 << 20) - 4096)))
    proc = subprocess.Popen([sys.executable, str(ROOT / "tools" / "serve.py"), args.dist, "--port", "0"],
                            stdout=subprocess.PIPE, text=True)
    url = proc.stdout.readline().split()[-1]
    results = {label: [] for label, _ in pastes}
    try:
        with sync_playwright() as pw:
            launch = {"args": ARGS}
            if Path(args.chromium).exists():
                launch["executable_path"] = args.chromium
            browser = pw.chromium.launch(**launch)
            for _ in range(args.runs):
                for label, text in pastes:
                    results[label].append(paste(browser, url, text))
            browser.close()
    finally:
        proc.terminate()
    print(f"Log paste benchmark: {args.runs} runs each, headless Chromium; gaps between 10 ms heartbeats while "
          "the status says Reading")
    print(f"{'paste':52} {'slices':>7} {'largest':>8} {'gap p50':>8} {'gap p95':>8} {'gap max':>8} {'total':>8}")
    for label, runs in results.items():
        gaps = [g for run in runs for g in run["gaps"]]
        last = runs[-1]
        print(f"{label:52} {last['slices'] or '-':>7} {last['largest'] or '-':>8} {percentile(gaps, .5):8.1f} "
              f"{percentile(gaps, .95):8.1f} {max(gaps, default=float('nan')):8.1f} "
              f"{statistics.median(r['total'] for r in runs):8.0f}  ms" + (f"  ({last['error'][:60]})" if last["error"]
                                                                           else ""))
    print(f"{'reader in CPython, hostile lines':52} {'1 MB':>8} {'16 MB':>8} {'ratio':>7}")
    for engine in ("vllm", "sglang", "llama.cpp"):
        small, large = engine_log(engine, 1 << 20), engine_log(engine, (16 << 20) - 4096)
        one, sixteen = min(cpu(small, engine) for _ in range(2)), min(cpu(large, engine) for _ in range(2))
        print(f"{engine:52} {one * 1000:8.0f} {sixteen * 1000:8.0f} {sixteen / one:7.1f}  ms CPU")


if __name__ == "__main__":
    main()
