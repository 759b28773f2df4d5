"""Fast first paint, a shared link never showing the default numbers, offline after one visit,
and a sub-path host."""

import html as html_module
import os
import re
from contextlib import contextmanager
from pathlib import Path
import shutil
import subprocess
import sys

import pytest

from pagekit import POLL_MS, metrics, open_page, settle, fill_shown
from support import ROOT

DIST = Path(os.environ.get("KVCALC_DIST") or ROOT / "dist")   # another build, for a second checkout at work
READY = "document.documentElement.dataset.state === 'ready'"


def test_prerendered_figures_equal_what_python_computes(page, site):
    html = (DIST / "index.html").read_text()
    prerendered = {key: html_module.unescape(value) for key, value in
                   re.findall(r'<(?:dd|p)[^>]* data-metric="([a-z_]+)" data-value="([^"]*)"', html)}
    open_page(page, site)
    assert metrics(page) == prerendered


def test_shared_link_shows_computing_until_python_has_its_numbers(page, site):
    # Hold the engine back so the page stays in "loading" while we look at it.
    held = []
    page.route("**/app/kvcalc.zip", lambda route: held.append(route))
    page.goto(site + "#model=deepseek-ai/DeepSeek-V3&context=4096")
    page.wait_for_function("document.documentElement.classList.contains('from-link')")
    cell = page.locator('[data-metric="kv_bytes_per_token"]')
    assert cell.evaluate("e => getComputedStyle(e).fontSize") == "0px"
    assert "computing" in cell.evaluate("e => getComputedStyle(e, '::after').content")
    for route in held:
        route.continue_()
    page.unroute("**/app/kvcalc.zip")
    if not held:
        pytest.fail("the engine archive was never requested")
    page.wait_for_function("document.documentElement.dataset.state === 'ready'", polling=POLL_MS, timeout=90_000)
    assert metrics(page)["kv_bytes_per_token"] == "70272"
    assert cell.evaluate("e => getComputedStyle(e).fontSize") != "0px"


def test_works_offline_after_one_visit(browser, site):
    context = browser.new_context()          # service workers allowed here
    page = context.new_page()
    open_page(page, site)
    # The first visit installs the cache (after start-up); the next load is served from it.
    page.evaluate("navigator.serviceWorker.ready.then(() => true)")
    page.reload()
    page.wait_for_function("document.documentElement.dataset.state === 'ready'", polling=POLL_MS, timeout=90_000)
    page.wait_for_function("navigator.serviceWorker.controller !== null")
    context.set_offline(True)
    try:
        page.goto(site + "#model=Qwen/Qwen3-32B&context=32768")
        page.wait_for_function("document.documentElement.dataset.state === 'ready'", polling=POLL_MS, timeout=90_000)
        assert metrics(page)["kv_bytes_per_token"] == "262144"
        page.fill("#batch", "4")
        settle(page)
        assert metrics(page)["kv_bytes_total"] == str(4 * 32768 * 262144)
    finally:
        context.set_offline(False)
        context.close()


@pytest.fixture
def sub_site(tmp_path):
    root = tmp_path / "host"
    shutil.copytree(DIST, root / "tools" / "kvcalc")
    proc = subprocess.Popen([sys.executable, str(ROOT / "tools" / "serve.py"), str(root), "--port", "0"],
                            stdout=subprocess.PIPE, text=True)
    yield proc.stdout.readline().split()[-1] + "tools/kvcalc/"
    proc.terminate()
    proc.wait(timeout=10)


def test_works_from_a_sub_path(page, sub_site):
    recorder = open_page(page, sub_site + "#model=google/gemma-2-9b")
    assert metrics(page)["kv_bytes_per_token"] == "344064"
    assert recorder.problems == []
    assert all(url.startswith(sub_site) for url in recorder.requests), recorder.requests
    manifest = page.evaluate("fetch('static/manifest.webmanifest').then(r => r.json())")
    start = page.evaluate(f"new URL({manifest['start_url']!r}, new URL('static/manifest.webmanifest', location.href)).href")
    assert start == sub_site


@contextmanager
def release_a(browser, tmp_path):
    """A host serving a copy of dist/ (release A) and a tab that has installed its offline copy
    and is controlled by it: (the host's folder, the page)."""
    root = tmp_path / "host"
    shutil.copytree(DIST, root)
    proc = subprocess.Popen([sys.executable, str(ROOT / "tools" / "serve.py"), str(root), "--port", "0"],
                            stdout=subprocess.PIPE, text=True)
    base = proc.stdout.readline().split()[-1]
    context = browser.new_context()
    try:
        page = context.new_page()
        open_page(page, base)
        page.evaluate("navigator.serviceWorker.ready.then(() => true)")
        page.reload()
        page.wait_for_function(READY, polling=POLL_MS, timeout=90_000)
        page.wait_for_function("navigator.serviceWorker.controller !== null")
        yield root, page
    finally:
        context.set_offline(False)
        context.close()
        proc.terminate()
        proc.wait(timeout=10)


def publish_release_b(root) -> str:
    """The host starts serving release B: a new title and a new sw.js version. Its version."""
    index = (root / "index.html").read_text()
    (root / "index.html").write_text(index.replace("<title>", "<title>Release B: ", 1))
    worker = (root / "sw.js").read_text()
    version = re.search(r'const CACHE = PREFIX \+ "([0-9a-f]+)";', worker).group(1)
    (root / "sw.js").write_text(worker.replace(version, "b" * len(version)))
    return "b" * len(version)


def test_a_new_release_replaces_the_offline_copy(browser, tmp_path):
    # A visit installs release A; the host then serves release B (new files, a new sw.js
    # version). The next visit finds the new worker, which caches B and deletes A's cache, and
    # the visit after is B's page, offline too.
    with release_a(browser, tmp_path) as (root, page):
        caches_before = page.evaluate("caches.keys()")
        assert len(caches_before) == 1
        version = publish_release_b(root)
        page.reload()         # still release A, from the cache; the browser checks sw.js
        expected = [caches_before[0].rsplit(":", 1)[0] + ":" + version]
        # Each poll asks the cache again and looks at the answer the poll before got.
        page.wait_for_function("""expected => { caches.keys().then(keys => { window.__keys = JSON.stringify(keys); });
                                                 return window.__keys === JSON.stringify(expected); }""",
                               arg=expected, timeout=60_000)
        page.reload()
        assert page.title().startswith("Release B: ")
        page.context.set_offline(True)
        page.reload()
        page.wait_for_function(READY, polling=POLL_MS, timeout=90_000)
        assert page.title().startswith("Release B: ")


def test_an_open_tab_says_when_a_new_version_is_ready(browser, tmp_path):
    # Release A is open (served by its offline copy) when the host starts serving release B: the
    # browser installs B's worker, and the tab of A says, politely, that a new version is ready,
    # with a button that reloads into B.
    with release_a(browser, tmp_path) as (root, page):
        # One version only so far: nothing to say (the first copy is this very page).
        assert page.inner_text("#update-text") == "" and page.is_hidden("#update-reload")
        assert page.get_attribute("#update", "role") == "status"        # a polite live region
        publish_release_b(root)
        page.reload()         # still release A, from its copy; the browser finds B's sw.js
        page.wait_for_function(READY, polling=POLL_MS, timeout=90_000)
        page.wait_for_selector("#update-reload", state="visible", timeout=60_000)
        assert page.inner_text("#update-text") == "A new version is ready."
        assert not page.title().startswith("Release B: ")
        with page.expect_navigation():
            page.click("#update-reload")
        page.wait_for_function(READY, polling=POLL_MS, timeout=90_000)
        assert page.title().startswith("Release B: ")
        assert page.inner_text("#update-text") == "" and page.is_hidden("#update-reload")


def test_a_pasted_log_never_leaves_the_tab(page, site):
    # Every request the page makes while a log is pasted, read and edited: only the page's own
    # files, none carrying a line of the log (in its address or a body).
    log = (ROOT / "tests/fixtures/logs/vllm-qwen3-30b-a3b-h100-tp2-40k-seqs64-v0.12.0.log").read_text()
    sent = []
    page.on("request", lambda r: sent.append((r.url, r.post_data or "")))
    recorder = open_page(page, site)
    page.click("#source-log")
    fill_shown(page, "#startup-log", log)
    page.wait_for_function("!document.getElementById('log-reading').hidden")
    page.select_option("#kv-dtype", "fp8")
    settle(page)
    page.click("#copy-link")
    settle(page)
    assert recorder.problems == []
    assert sent and all(url.startswith(site) for url, _ in sent), [u for u, _ in sent if not u.startswith(site)]
    pieces = [line.strip()[-40:] for line in log.splitlines() if len(line.strip()) > 40]
    for url, body in sent:
        for piece in pieces + ["APIServer", "pid="]:
            assert piece not in url and piece not in body, (url, piece)
    # Nor does the link the page would share.
    assert "APIServer" not in page.url and "measured-with=" in page.url
