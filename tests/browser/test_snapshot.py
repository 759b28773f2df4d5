"""Issue 40, warm loads: a reload served by the service worker restores the started runtime's
memory snapshot (tools/snapshot.mjs, made by the build from the very zip the page ships) instead
of starting Python, and computes the same figures; one Pyodide refuses (another build's, as after
a release) or that is damaged is set aside and the runtime starts as on a cold load."""

import os
from pathlib import Path

from pagekit import POLL_MS, metrics, open_page
from support import ROOT
from kvcalc.reports.link import evaluate_link
from kvcalc.reports.report import to_json

DIST = Path(os.environ.get("KVCALC_DIST") or ROOT / "dist")
READY = "document.documentElement.dataset.state === 'ready'"
LINK = "#model=google%2Fgemma-2-9b&context=65536&batch=3&kv-dtype=fp8&gpu=l40s-48gb&gpus=2&unit=gb"
MARKS = "() => performance.getEntriesByType('mark').map(m => m.name)"


def _expected() -> dict:
    evaluation, ignored = evaluate_link(LINK.lstrip("#"))
    assert evaluation.ok and not ignored
    return to_json(evaluation.scenario, evaluation)


def _warm(browser, site):
    """A context whose first visit installed the offline copy, the snapshot with it."""
    context = browser.new_context()          # service workers allowed here
    page = context.new_page()
    open_page(page, site + LINK)
    assert "kvcalc-snapshot-restored" not in page.evaluate(MARKS)      # a cold load never waits for it
    page.evaluate("navigator.serviceWorker.ready.then(() => true)")
    return context, page


def _reload(page) -> None:
    page.reload()
    page.wait_for_function(READY, polling=POLL_MS, timeout=90_000)


def test_the_build_names_the_snapshot_it_made():
    snapshots = list((DIST / "static" / "vendor" / "pyodide").glob("snapshot-*.bin"))
    assert len(snapshots) == 1 and snapshots[0].stat().st_size > 1_000_000
    assert snapshots[0].read_bytes()[:2] == b"\x1f\x8b"          # gzipped by the build
    early = (DIST / "static" / "early.mjs").read_text(encoding="utf-8")
    assert f'const SNAPSHOT = "{snapshots[0].name}";' in early
    headers = (DIST / "_headers").read_text(encoding="utf-8")
    assert f"/static/vendor/pyodide/{snapshots[0].name}\n  Cache-Control: public, max-age=31536000, immutable" in headers


def test_a_warm_reload_restores_the_snapshot_and_computes_the_same(browser, site):
    context, page = _warm(browser, site)
    try:
        _reload(page)
        marks = page.evaluate(MARKS)
        assert "kvcalc-snapshot-restored" in marks and "kvcalc-snapshot-refused" not in marks
        shown = metrics(page)
        expected = _expected()
        for key in ("kv_bytes_per_token", "kv_bytes_per_request", "max_concurrency", "max_context"):
            assert shown[key] == str(expected[key]), key
        # Python restored is Python still: the app's own modules came from its zip, and a module
        # the start never imported (a source in the runtime's zip) compiles and runs.
        checked = page.evaluate("""async () => {
            const early = await import(new URL('static/early.mjs', location.href).href);
            const py = await early.loadPyodide();
            return py.runPython(`
import sys, email.utils, decimal
[sys.modules["kvcalc.sizing"].__spec__.origin.split("/")[-3], sys.modules["pyscript"].__spec__.origin,
 sys.path[0], sys.path.count(""), email.utils.formataddr(("a", "b@c")),
 str(decimal.Decimal("1.10") + decimal.Decimal("2.205"))]`).toJs();
        }""")
        # The app's zip first on sys.path, once, as on a cold load: PyScript's own package comes
        # from it too, compiled, not from the sources PyScript writes at every start.
        assert checked == ["kvcalc.zip", "/home/pyodide/kvcalc.zip/pyscript/__init__.pyc",
                           "/home/pyodide/kvcalc.zip", 1, "a <b@c>", "3.305"]
    finally:
        context.close()


def test_a_snapshot_from_another_release_or_damaged_is_set_aside(browser, site):
    context, page = _warm(browser, site)
    try:
        name = (DIST / "static" / "early.mjs").read_text(encoding="utf-8").split('const SNAPSHOT = "')[1].split('"')[0]
        # The service worker keeps it inflated (sw.js). Bytes 16-47 hold the build id of the
        # Pyodide that made it: zeros are another release's. Damaged: gzip that does not inflate.
        for how, why in (("another release", "build id mismatch"), ("damaged", "")):
            page.evaluate("""async ([url, how]) => {
                for (const key of await caches.keys()) {
                    const cache = await caches.open(key), cached = await cache.match(url);
                    if (!cached) continue;
                    if (!cached.headers.get("X-Kvcalc-Inflated")) throw new Error("kept as it came");
                    const bytes = new Uint8Array(await cached.arrayBuffer());
                    bytes.fill(0, 16, 48);
                    await cache.put(url, how === "damaged" ? new Response(bytes.slice(0, 4096))
                        : new Response(bytes, {headers: {"X-Kvcalc-Inflated": "1"}}));
                }
            }""", [site + "static/vendor/pyodide/" + name, how])
            _reload(page)
            refused = page.evaluate("""() => performance.getEntriesByName('kvcalc-snapshot-refused')
                .map(m => m.detail)""")
            assert len(refused) == 1 and why in refused[0].lower(), (how, refused, page.evaluate(MARKS))
            assert "kvcalc-snapshot-restored" not in page.evaluate(MARKS)
            assert metrics(page)["kv_bytes_per_token"] == str(_expected()["kv_bytes_per_token"])
            assert page.evaluate("document.documentElement.dataset.state") == "ready"
    finally:
        context.close()


def test_a_snapshot_made_with_another_zip_than_the_one_that_came_is_not_restored(browser, site):
    # A release arriving between the snapshot and the app's zip: the zip that came is not the one
    # the snapshot's engine was imported from, so the snapshot is set aside before it is restored.
    context, page = _warm(browser, site)
    try:
        page.evaluate("""async (url) => {
            for (const key of await caches.keys()) {
                const cache = await caches.open(key), cached = await cache.match(url);
                if (!cached) continue;
                // The same zip with a one-byte comment: still a zip, another size.
                const bytes = new Uint8Array(await cached.arrayBuffer());
                const longer = new Uint8Array(bytes.length + 1);
                longer.set(bytes);
                longer[bytes.length - 2] = 1;          // the end record's comment length (none before)
                longer[bytes.length] = 0x78;
                await cache.put(url, new Response(longer, {headers: {"Content-Type": "application/zip"}}));
            }
        }""", site + "app/kvcalc.zip")
        _reload(page)
        refused = page.evaluate("performance.getEntriesByName('kvcalc-snapshot-refused').map(m => m.detail)")
        assert len(refused) == 1 and "kvcalc.zip" in refused[0], refused
        assert "kvcalc-snapshot-restored" not in page.evaluate(MARKS)
        assert metrics(page)["kv_bytes_per_token"] == str(_expected()["kv_bytes_per_token"])
    finally:
        context.close()
