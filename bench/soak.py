#!/usr/bin/env python3
"""Soak: many cold loads of the page under CPU load, to catch a start that never becomes ready.

    .venv/bin/python bench/soak.py [--loads 100] [--service-workers allow|block] [--timeout 60]
                                   [--site DIR] [--hogs 2] [--throttle] [--cut] [--reload-midway]
                                   [--json OUT]

Serves a copy of DIR (default dist/) with tools/serve.py on 127.0.0.1 and loads the page N times,
each in a fresh browser context (a cold load: no HTTP cache, no service worker yet), alternating
the default view and a shared link. Two `yes > /dev/null` loops run meanwhile (the machine has 2
cores: the page competes for both), started here and killed at the end; each also runs under
`timeout`, so they end even if this script is killed.

Service workers: "allow" is real use (the page registers its offline copy after start-up, which
then downloads the whole site while the context is still open; the context is closed as soon as
the load is judged, as a user closing the tab would); "block" is what the browser tests do.

Each load records the page console, page errors, every request still pending, and, when it
leaves "loading" for anything but "ready" or the timeout passes, where the start stopped: the
performance marks (kvcalc-pyodide-start, kvcalc-pyodide-handed-over, kvcalc-figures,
kvcalc-ready), data-state, the status line, the resources the browser finished. A soak: it prints
a summary and one block per bad load, and asserts nothing.
"""

import argparse
import json
import os
import random
import signal
import statistics
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from playwright.sync_api import Error as PlaywrightError
from playwright.sync_api import sync_playwright

ROOT = Path(__file__).resolve().parent.parent
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
        "--disable-sync", "--no-first-run"]
LINK = "#model=meta-llama/Llama-3.1-70B&context=32768&batch=16&kv-dtype=fp8&gpu=h100-sxm-80gb&gpus=8"
MARKS = ("kvcalc-pyodide-start", "kvcalc-pyodide-handed-over", "kvcalc-figures", "kvcalc-ready")
WHERE = """(marks) => ({
    state: document.documentElement.dataset.state,
    status: (document.getElementById('status-text') || {}).textContent,
    readyState: document.readyState,
    marks: Object.fromEntries(marks.map(n => [n, Math.round((performance.getEntriesByName(n)[0] || {}).startTime ?? -1)])),
    resources: performance.getEntriesByType('resource').map(e => [e.name.replace(location.origin, ''),
        Math.round(e.responseEnd), e.responseStatus]),
    watchdog: window.kvcalcStart ? {stage: window.kvcalcStart.stage, pending: [...(window.kvcalcStart.pending || [])]} : null,
})"""


def serve(site: Path):
    proc = subprocess.Popen([sys.executable, str(ROOT / "tools" / "serve.py"), str(site), "--port", "0"],
                            stdout=subprocess.PIPE, text=True)
    return proc, proc.stdout.readline().split()[-1]


def cpu_load(seconds: int, count: int):
    """`count` busy loops, each `timeout SECONDS yes > /dev/null` in a process group of its own:
    stop_load kills the group (killing `timeout` alone would leave its `yes` running)."""
    return [subprocess.Popen(["timeout", str(seconds), "yes"], stdout=subprocess.DEVNULL, start_new_session=True)
            for _ in range(count)]


def stop_load(hogs) -> None:
    for hog in hogs:
        try:
            os.killpg(hog.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        hog.wait()


def evaluate_bounded(page, script, arg, seconds=10):
    """page.evaluate, or None when the page's main thread does not answer in time (busy)."""
    out = {}

    def run():
        try:
            out["value"] = page.evaluate(script, arg)
        except PlaywrightError as e:
            out["error"] = str(e)
    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    return out if out else {"error": f"no answer from the page in {seconds} s (main thread busy?)"}


# Chromium's network emulation (as bench/load.py): 20 Mbit/s down, 5 up, 40 ms latency.
THROTTLE = {"offline": False, "latency": 40, "downloadThroughput": 20e6 / 8, "uploadThroughput": 5e6 / 8}


def cut_short(browser, url: str, service_workers: str, rng) -> None:
    """A load abandoned mid-start (a tab closed while it starts): its context is closed after a
    random 0-3 s, whatever the page was doing."""
    context = browser.new_context(service_workers=service_workers)
    page = context.new_page()
    try:
        page.goto(url, wait_until="commit")
        page.wait_for_timeout(rng.uniform(0, 3000))
    except PlaywrightError:
        pass
    context.close()


def one_load(browser, url: str, service_workers: str, timeout_s: float, throttle: bool = False,
             reload_after_ms: float | None = None) -> dict:
    context = browser.new_context(service_workers=service_workers)
    page = context.new_page()
    if throttle:
        cdp = context.new_cdp_session(page)
        cdp.send("Network.enable")
        cdp.send("Network.emulateNetworkConditions", THROTTLE)
    log, pending, failed = [], {}, []
    t0 = time.monotonic()
    stamp = lambda: round((time.monotonic() - t0) * 1000)   # noqa: E731
    page.on("console", lambda m: log.append(f"{stamp()} console.{m.type}: {m.text}"))
    page.on("pageerror", lambda e: log.append(f"{stamp()} pageerror: {e}"))
    page.on("crash", lambda *_: log.append(f"{stamp()} the page crashed"))
    page.on("request", lambda r: pending.__setitem__(id(r), (r.url, stamp())))
    page.on("requestfinished", lambda r: pending.pop(id(r), None))

    def on_failed(r):
        pending.pop(id(r), None)
        failed.append(f"{r.url} {r.failure}")
    page.on("requestfailed", on_failed)
    record = {"url": url, "service_workers": service_workers}
    try:
        page.goto(url, timeout=timeout_s * 1000)
        if reload_after_ms is not None:       # a reload while it starts: the judged load is the second
            page.wait_for_timeout(reload_after_ms)
            record["reloaded_after_ms"] = round(reload_after_ms)
            page.reload(timeout=timeout_s * 1000)
        page.wait_for_function("document.documentElement.dataset.state !== 'loading'", timeout=timeout_s * 1000)
        record["state"] = page.evaluate("document.documentElement.dataset.state")
        record["ms"] = page.evaluate("Math.round(performance.getEntriesByName('kvcalc-ready')[0]?.startTime ?? -1)")
    except PlaywrightError as e:
        record["state"] = "timeout" if "Timeout" in str(e) else "error"
        record["error"] = str(e).splitlines()[0]
    if record["state"] != "ready":
        where = evaluate_bounded(page, WHERE, list(MARKS))
        record["where"] = where.get("value", where.get("error"))
        record["pending"] = [f"{u} (since {t} ms)" for u, t in pending.values()]
        record["failed"] = failed
        record["log"] = log
    else:
        record["problems"] = [line for line in log if "pageerror" in line or "console.error" in line]
    try:
        context.close()
    except PlaywrightError:
        pass
    return record


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--loads", type=int, default=100)
    parser.add_argument("--service-workers", choices=("allow", "block"), default="allow")
    parser.add_argument("--timeout", type=float, default=60, help="seconds a load may take (default 60)")
    parser.add_argument("--site", type=Path, default=ROOT / "dist", help="the built site (default dist/)")
    parser.add_argument("--hogs", type=int, default=2, help="busy `yes` loops meanwhile (default 2, 0 for none)")
    parser.add_argument("--throttle", action="store_true", help="through Chromium's 20 Mbit/s network emulation")
    parser.add_argument("--cut", action="store_true",
                        help="before each load, another one in its own context closed after a random 0-3 s")
    parser.add_argument("--reload-midway", action="store_true",
                        help="reload each page after a random 0-3 s of its start; the reload is judged")
    parser.add_argument("--seed", type=int, default=19)
    parser.add_argument("--json", type=Path, help="write every load's record here")
    args = parser.parse_args()

    site = Path(tempfile.mkdtemp(prefix="kvcalc-soak-"))
    shutil.copytree(args.site, site / "site")
    server, base = serve(site / "site")
    hogs = cpu_load(int(args.loads * (args.timeout + 15) + 120), args.hogs)
    records = []
    rng = random.Random(args.seed)
    started = time.monotonic()
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=ARGS)
            browser.new_page().goto(base)          # the server gzips each file on its first request
            for n in range(args.loads):
                url = base + (LINK if n % 2 else "")
                if args.cut:
                    cut_short(browser, url, args.service_workers, rng)
                record = one_load(browser, url, args.service_workers, args.timeout, args.throttle,
                                  rng.uniform(0, 3000) if args.reload_midway else None)
                records.append(record)
                mark = "." if record["state"] == "ready" else "X"
                print(mark, end="\n" if (n + 1) % 50 == 0 else "", flush=True)
                if record["state"] != "ready":
                    print(f"\nload {n + 1}: {json.dumps(record, indent=1)}", flush=True)
            browser.close()
    finally:
        stop_load(hogs)
        server.terminate()
        server.wait(timeout=10)
        shutil.rmtree(site, ignore_errors=True)
    ready = [r for r in records if r["state"] == "ready"]
    times = sorted(r["ms"] for r in ready)
    print(f"\n{len(records)} cold loads, service workers {args.service_workers}, "
          f"{args.hogs} busy loops{', throttled' if args.throttle else ''}{', each after one cut short' if args.cut else ''}"
          f"{', reloaded midway' if args.reload_midway else ''}, {time.monotonic() - started:.0f} s: "
          f"{len(ready)} ready, {len(records) - len(ready)} not "
          f"({', '.join(sorted({r['state'] for r in records if r['state'] != 'ready'})) or 'none'})")
    if times:
        print(f"ready at (ms): median {statistics.median(times):.0f}, "
              f"p95 {times[min(len(times) - 1, round(0.95 * (len(times) - 1)))]}, max {times[-1]}")
    noisy = [r for r in ready if r["problems"]]
    if noisy:
        print(f"{len(noisy)} ready loads logged errors, e.g. {noisy[0]['problems'][:3]}")
    if args.json:
        args.json.write_text(json.dumps(records, indent=1))


if __name__ == "__main__":
    main()
