"""The start (issue 19, "nothing hangs or lies"): a file that cannot be loaded sets
data-state="failed" at once and says which, with a Reload button; a start that has not finished
after 30 s says where it stopped, and still becomes ready if it completes; Python's own failure
is the same state; a link's inputs are in the form before Python runs, and no figure is shown as
the link's until Python computed it. Every wait is for a condition."""

import io
import sys
import zipfile

import pytest

from kvcalc.reports.link import evaluate_link
from kvcalc.reports.report import to_json

from pagekit import POLL_MS, metrics, open_page
from support import ROOT

sys.path.insert(0, str(ROOT / "tools"))
import build  # noqa: E402

STATE = "document.documentElement.dataset.state"
FAILED = f"{STATE} === 'failed'"
READY = f"{STATE} === 'ready'"
LINK = "#model=google%2Fgemma-2-9b&context=65536&batch=3&kv-dtype=fp8&gpu=l40s-48gb&gpus=2&unit=gb"


def shown_as_not_computed(page) -> bool:
    cell = page.locator('[data-metric="kv_bytes_per_token"]')
    return (cell.evaluate("e => getComputedStyle(e).fontSize") == "0px"
            and "not computed" in cell.evaluate("e => getComputedStyle(e, '::after').content"))


@pytest.mark.parametrize("pattern, words", [
    ("**/app/kvcalc.zip", "The calculator's code (kvcalc.zip) could not be loaded"),
    ("**/pyodide.asm.wasm", "The Python runtime (pyodide.asm.wasm) could not be loaded"),
    ("**/python_stdlib.zip", "The Python runtime (python_stdlib.zip) could not be loaded"),
    ("**/pyodide.asm.mjs", "pyodide.asm.mjs"),
    ("**/static/vendor/pyscript/core-*.js", "PyScript (core.js) could not be loaded: core-"),
    ("**/pyscript.toml", "PyScript (pyscript.toml) could not be loaded"),
    ("**/static/early.mjs", "The start-up script (early.mjs) could not be loaded"),
])
def test_a_file_that_cannot_load_fails_at_once_and_names_it(page, site, pattern, words):
    page.route(pattern, lambda route: route.abort())
    page.goto(site + LINK)
    page.wait_for_function(FAILED, timeout=25_000)
    # At once, on the load error: not the 30-second watchdog.
    assert page.evaluate("kvcalcStart.late") is False
    assert words in page.inner_text("#status-text")
    assert page.is_visible("#status-reload") and not page.is_visible("#progress")
    # The link's figures were never computed: none is shown as if it were.
    assert shown_as_not_computed(page)


def test_reload_after_a_failed_start(page, site):
    page.route("**/app/kvcalc.zip", lambda route: route.abort())
    page.goto(site + LINK)
    page.wait_for_function(FAILED, timeout=25_000)
    page.unroute("**/app/kvcalc.zip")
    with page.expect_navigation():
        page.click("#status-reload")
    page.wait_for_function(READY, polling=POLL_MS, timeout=90_000)
    assert metrics(page)["kv_bytes_per_token"] == str(to_json(*_evaluated(LINK))["kv_bytes_per_token"])


def _evaluated(fragment: str):
    evaluation, ignored = evaluate_link(fragment.lstrip("#"))
    assert evaluation.ok and not ignored
    return evaluation.scenario, evaluation


def test_python_failing_to_start_is_the_same_failed_state(page, site):
    # The app's zip without one of its modules (and its bytecode): Python's import fails.
    from support import ROOT as root
    original = (root / "dist" / "app" / "kvcalc.zip").read_bytes()
    broken = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(original)) as source, zipfile.ZipFile(broken, "w") as target:
        for item in source.infolist():
            if not item.filename.startswith(("web/dom.py", "web/__pycache__/dom.")):
                target.writestr(item, source.read(item))
    page.route("**/app/kvcalc.zip", lambda route: route.fulfill(body=broken.getvalue(), content_type="application/zip"))
    page.goto(site + LINK)
    page.wait_for_function(FAILED, polling=POLL_MS, timeout=90_000)
    text = page.inner_text("#status-text")
    assert "The calculator failed to start: ModuleNotFoundError" in text and "web.dom" in text
    assert page.is_visible("#status-reload")
    assert shown_as_not_computed(page)


def test_a_stalled_start_says_where_it_stopped_and_still_becomes_ready(page, site):
    # The runtime's wasm is held: nothing fails, the start just does not finish, and after 30 s
    # the watchdog says so. (Waited for in real time: Playwright's fake clock replaces the
    # performance API too, and with it the marks and resource entries the message is made of.)
    held = []
    page.route("**/pyodide.asm.wasm", lambda route: held.append(route))
    page.goto(site + LINK)
    page.wait_for_function("window.kvcalcStart && kvcalcStart.pending.some(u => u.endsWith('pyodide.asm.wasm'))")
    assert page.evaluate(STATE) == "loading"
    page.wait_for_function(FAILED, timeout=60_000)
    assert page.evaluate("performance.now()") >= 30_000
    text = page.inner_text("#status-text")
    assert "has not started after 30 seconds" in text and "still waiting for pyodide.asm.wasm" in text, text
    assert "the Python runtime (Pyodide) is still starting" in text, text
    assert page.evaluate("kvcalcStart.late") is True and shown_as_not_computed(page)
    # The start then completes: ready, with the link's own figures, and no failure shown.
    for route in held:
        route.continue_()
    page.unroute("**/pyodide.asm.wasm")
    page.wait_for_function(READY, polling=POLL_MS, timeout=90_000)
    assert not page.is_visible("#status")
    assert metrics(page)["kv_bytes_per_token"] == str(to_json(*_evaluated(LINK))["kv_bytes_per_token"])


def test_storage_that_never_answers_is_named(page, site):
    # PyScript opens IndexedDB before it asks for Python and waits with no timeout: a browser
    # whose storage is wedged would leave the page starting for ever. Here it never answers.
    page.add_init_script("indexedDB.open = () => new EventTarget();")
    page.goto(site + LINK)
    page.wait_for_function(FAILED, timeout=60_000)
    text = page.inner_text("#status-text")
    assert "has not started after 30 seconds" in text and "storage (IndexedDB)" in text, text
    assert "restart the browser" in text and shown_as_not_computed(page)


def test_a_normal_start_never_passes_through_failed_and_sends_the_csp_header(page, site):
    response = page.goto(site + LINK)
    recorder_state = page.wait_for_function(f"{STATE} !== 'loading'", polling=POLL_MS, timeout=90_000)
    assert recorder_state and page.evaluate(STATE) == "ready"
    assert page.evaluate("kvcalcStart.failed") == "" and page.evaluate("kvcalcStart.storage") == 0
    # The policy as a header too, with what a meta tag cannot carry; the same hash for the boot script.
    assert response.headers["content-security-policy"] == build.HEADER_CSP == build.CSP + "; frame-ancestors 'none'"
    assert page.get_attribute('meta[http-equiv="Content-Security-Policy"]', "content") == build.CSP
    assert response.headers["x-content-type-options"] == "nosniff"


def test_a_links_inputs_are_in_the_form_before_python_runs(page, site):
    held = []
    page.route("**/app/kvcalc.zip", lambda route: held.append(route))
    # The zip is asked for once the wasm has come (static/early.mjs): held from then on.
    with page.expect_request("**/app/kvcalc.zip"):
        page.goto(site + LINK)
    page.wait_for_function("document.readyState !== 'loading'")
    assert page.evaluate(STATE) == "loading"
    assert page.input_value("#context") == "65536" and page.input_value("#batch") == "3"
    assert page.input_value("#kv-dtype") == "fp8" and page.input_value("#gpu") == "l40s-48gb"
    assert page.input_value("#gpus") == "2" and page.is_checked("#unit-gb")
    name = page.get_attribute('#model-list [data-value="google/gemma-2-9b"]', "data-name")
    assert page.input_value("#model") == "google/gemma-2-9b" and page.input_value("#model-search") == name
    # Shown, not typed; and no figure is the link's yet.
    assert page.evaluate("kvcalcEdited.length") == 0 and page.get_attribute("html", "data-typed") is None
    cell = page.locator('[data-metric="kv_bytes_per_token"]')
    assert "computing" in cell.evaluate("e => getComputedStyle(e, '::after').content")
    assert held, "the engine archive was never requested"
    for route in held:
        route.continue_()
    page.unroute("**/app/kvcalc.zip")
    page.wait_for_function(READY, polling=POLL_MS, timeout=90_000)
    assert page.input_value("#context") == "65536" and page.input_value("#model") == "google/gemma-2-9b"
    expected = to_json(*_evaluated(LINK))
    shown = metrics(page)
    for key in ("kv_bytes_per_token", "kv_bytes_per_request", "max_concurrency"):
        assert shown[key] == str(expected[key]), key
    assert page.inner_text("#link-notes") == ""


def test_pythons_reading_of_the_link_wins_over_the_preview(page, site):
    held = []
    page.route("**/app/kvcalc.zip", lambda route: held.append(route))
    page.goto(site + "#model=no-such%2Fmodel&context=-1&batch=%3Cimg%20src%3Dx%20onerror%3Dalert(1)%3E&gpus=4")
    page.wait_for_function("document.readyState !== 'loading'")
    # The preview writes text as it is, nothing more: the values Python will refuse are there too.
    assert page.input_value("#context") == "-1" and page.input_value("#gpus") == "4"
    assert page.input_value("#model-search") == "no-such/model"
    assert page.locator("img[src=x]").count() == 0
    for route in held:
        route.continue_()
    page.unroute("**/app/kvcalc.zip")
    page.wait_for_function(READY, polling=POLL_MS, timeout=90_000)
    # Python loaded the link itself: what it refused is back to the default and listed.
    assert page.input_value("#context") == "8192" and page.input_value("#gpus") == "4"
    assert page.input_value("#model") == "meta-llama/Llama-3.1-8B"
    notes = page.inner_text("#link-notes")
    assert "Context length" in notes and "Concurrent requests" in notes and "no-such/model" in notes
    assert page.locator("img[src=x]").count() == 0


def test_typed_while_starting_wins_over_the_preview(page, site):
    held = []
    page.route("**/app/kvcalc.zip", lambda route: held.append(route))
    page.goto(site + LINK)
    page.wait_for_function("document.readyState !== 'loading' && window.kvcalcEdited !== undefined")
    assert page.input_value("#batch") == "3"
    page.fill("#batch", "5")
    for route in held:
        route.continue_()
    page.unroute("**/app/kvcalc.zip")
    page.wait_for_function(READY, polling=POLL_MS, timeout=90_000)
    assert page.input_value("#batch") == "5" and page.input_value("#context") == "65536"
    m = metrics(page)
    assert m["kv_bytes_total"] == str(5 * int(m["kv_bytes_per_request"]))


def test_default_view_is_ready_as_before(page, site):
    recorder = open_page(page, site)
    assert recorder.problems == [] and page.evaluate("kvcalcStart.failed") == ""


def test_on_a_first_visit_the_apps_zip_is_asked_for_once_the_wasm_has_come(page, site):
    # static/early.mjs: the zip is needed last (once Python has started), so on a slow link it
    # should not share the line with the wasm, which Python needs first.
    open_page(page, site + LINK)
    timing = page.evaluate("""() => {
        const mark = performance.getEntriesByName('kvcalc-wasm-arrived')[0];
        const file = (name) => performance.getEntriesByType('resource').find(e => e.name.endsWith(name));
        return {arrived: mark && mark.startTime, zip: file('/app/kvcalc.zip').startTime,
                wasm: file('/pyodide.asm.wasm').responseStart};
    }""")
    assert timing["arrived"] is not None, "the wasm's last byte was not seen"
    assert timing["wasm"] <= timing["arrived"] <= timing["zip"], timing
