"""Issue 40: what the first figures do not need comes after them, in two zips (kvcalc-later.zip,
python_stdlib_later.zip; app/web/later.py). They are asked for only once the figures are shown;
a module asked for before they came is fetched at once, never an ImportError; a module absent
everywhere fails as anywhere, without fetching them."""

import json

from pagekit import POLL_MS, open_folds, open_page

LINK = "#model=meta-llama/Llama-3.1-70B&context=32768&batch=16&kv-dtype=fp8&gpu=h100-sxm-80gb&gpus=8"
LATER = ("kvcalc-later.zip", "python_stdlib_later.zip")


def run_python(page, code: str):
    return json.loads(page.evaluate("""async (code) => {
        const early = await import(new URL('static/early.mjs', location.href).href);
        return (await early.loadPyodide()).runPython(code);
    }""", code))


def later_requests(recorder) -> list:
    return [url.rsplit("/", 1)[-1] for url in recorder.requests if url.endswith(LATER)]


def refuse_the_first_fetch(page) -> None:
    """The page's own fetch of each later zip fails (as on a dropped connection); any other
    request for it goes through."""
    refused = set()

    def route(request_route):
        name = request_route.request.url.rsplit("/", 1)[-1]
        if name in refused:
            request_route.continue_()
        else:
            refused.add(name)
            request_route.abort()
    for name in LATER:
        page.route(f"**/{name}", route)


def test_the_later_zips_are_asked_for_after_the_first_figures(page, site):
    recorder = open_page(page, site + LINK)
    page.wait_for_function("globalThis.kvcalcLater.zips.every(z => z.mounted)", polling=POLL_MS)
    timings = page.evaluate("""() => ({
        figures: performance.getEntriesByName('kvcalc-figures')[0].startTime,
        later: performance.getEntriesByType('resource').filter(e => /[-_]later\\.zip$/.test(e.name))
            .map(e => [e.name.split('/').pop(), e.startTime])})""")
    assert sorted(name for name, _ in timings["later"]) == sorted(LATER)
    assert all(start > timings["figures"] for _, start in timings["later"]), timings
    # Once they came, the split packages look in both zips: kvcalc's planner is importable.
    paths = run_python(page, "import json, sys, kvcalc; json.dumps([sys.path, kvcalc.__path__])")
    assert paths[0][-2:] == ["/lib/python_stdlib_later.zip", "/home/pyodide/kvcalc-later.zip"]
    assert paths[1] == ["/home/pyodide/kvcalc.zip/kvcalc", "/home/pyodide/kvcalc-later.zip/kvcalc"]
    assert sorted(later_requests(recorder)) == sorted(LATER)
    assert recorder.problems == []


def test_a_module_asked_for_before_its_zip_came_is_fetched_at_once(page, site):
    # The page's fetch of the later zips fails; the charts, whose drawing is in kvcalc-later.zip,
    # are then opened: the module is fetched at once, synchronously, and the charts are drawn.
    refuse_the_first_fetch(page)
    recorder = open_page(page, site + LINK)
    page.wait_for_function("globalThis.kvcalcLater.failed", polling=POLL_MS)
    assert run_python(page, "import json, sys; json.dumps('web.charts' in sys.modules)") is False
    open_folds(page, "charts")
    assert page.locator("#fold-charts canvas, #fold-charts svg").count() > 0
    loaded = run_python(page, "import json, sys; json.dumps(sys.modules['web.charts'].__spec__.origin)")
    assert loaded == "/home/pyodide/kvcalc-later.zip/web/charts.pyc"
    # The page's own fetch of each (refused), then the import's of the one zip that holds it.
    assert sorted(later_requests(recorder)) == sorted(LATER + ("kvcalc-later.zip",))
    assert [p for p in recorder.problems if "did not come" not in p and "ERR_FAILED" not in p] == []


def test_a_module_absent_everywhere_fails_without_fetching_the_later_zips(page, site):
    # An optional import the standard library tries (and a typo) must not fetch 2 MB at once.
    refuse_the_first_fetch(page)
    recorder = open_page(page, site + LINK)
    page.wait_for_function("globalThis.kvcalcLater.failed", polling=POLL_MS)
    asked = len(later_requests(recorder))
    failed = run_python(page, """
import json
try:
    import _winapi
    found = True
except ImportError:
    found = False
json.dumps(found)""")
    assert failed is False
    assert len(later_requests(recorder)) == asked == 2
    # A standard-library module of the later zip is found, through the same synchronous fetch.
    origin = run_python(page, "import json, email.message; json.dumps(email.message.__spec__.origin)")
    assert origin == "/lib/python_stdlib_later.zip/email/message.py"
    assert sorted(later_requests(recorder)) == sorted(LATER + ("python_stdlib_later.zip",))


def test_a_later_zip_of_another_release_is_not_taken(page, site):
    # A release deployed after this page started: its kvcalc-later.zip (another size than the one
    # this page's build wrote down) must not run against this page's start modules.
    page.route("**/kvcalc-later.zip", lambda route: route.fulfill(
        body=b"PK\x05\x06" + bytes(18), content_type="application/zip"))
    open_page(page, site + LINK)
    page.wait_for_function("globalThis.kvcalcLater.failed", polling=POLL_MS)
    assert "another release" in page.evaluate("globalThis.kvcalcLater.failed")
    said = run_python(page, """
import json
try:
    import web.charts
    said = None
except ImportError as exc:
    said = str(exc)
json.dumps(said)""")
    assert said.startswith("web.charts is in kvcalc-later.zip, which could not be loaded: ") and "reload" in said
    # The standard library's later zip, of this release, was taken.
    assert run_python(page, "import json, email; json.dumps(email.__spec__.origin)").startswith(
        "/lib/python_stdlib_later.zip/")
