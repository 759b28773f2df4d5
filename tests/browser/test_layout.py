"""The answer stays in view (issue 9): inputs beside the results on a wide screen, a compact
summary on a phone, the Advanced group, the model combobox, chart legends, the comparison that
appears with its first pin, and the screenshots."""

import struct
import sys

import pytest

from pagekit import metrics, open_page, settle, open_folds
from support import ROOT

HEADLINE = ("max_concurrency", "kv_bytes_per_request", "kv_bytes_per_gpu", "max_context")
VISIBLE_CONTROLS = """() => [...document.querySelectorAll('#calc input, #calc select, #calc textarea')]
    .filter(e => e.checkVisibility() && !e.disabled).map(e => e.id ? '#' + e.id : `input[name="${e.name}"][value="${e.value}"]`)"""
HEADLINE_IN_VIEW = """keys => keys.every(k => {
    const r = document.querySelector('.headline [data-metric="' + k + '"]').getBoundingClientRect();
    return r.height > 0 && r.top >= 0 && r.bottom <= window.innerHeight; })"""


def new_page(browser, width, height, scheme="light"):
    context = browser.new_context(viewport={"width": width, "height": height}, color_scheme=scheme,
                                  service_workers="block")
    return context, context.new_page()


@pytest.mark.parametrize("width, height", [(1280, 800), (390, 844)])
def test_headline_figures_stay_in_view_while_each_input_is_edited(browser, site, width, height):
    context, page = new_page(browser, width, height)
    open_page(page, site + "#model=meta-llama/Llama-3.1-70B&gpu=h100-sxm-80gb&gpus=4&context=32768")
    page.evaluate("document.getElementById('advanced').open = true")
    controls = page.evaluate(VISIBLE_CONTROLS)
    assert len(controls) >= 15, controls       # the common inputs and the Advanced group
    for selector in controls:
        page.focus(selector)
        assert page.evaluate(HEADLINE_IN_VIEW, list(HEADLINE)), f"headline out of view while {selector} has focus"
    # The same at the bottom of the page, where the explanations are.
    page.evaluate("window.scrollTo(0, document.body.scrollHeight)")
    if width >= 1000:
        page.focus("#overhead-gib")
        assert page.evaluate(HEADLINE_IN_VIEW, list(HEADLINE))
    context.close()


def test_wide_screen_puts_inputs_beside_results(browser, site):
    context, page = new_page(browser, 1280, 800)
    open_page(page, site)
    form, summary = page.locator("#calc").bounding_box(), page.locator("#summary").bounding_box()
    assert form["x"] + form["width"] <= summary["x"] and summary["y"] < 200
    # The headline figures are on the first screen, above any scrolling.
    assert page.evaluate(HEADLINE_IN_VIEW, list(HEADLINE))
    context.close()


def test_summary_carries_the_same_figures_and_conditions(page, site):
    open_page(page, site + "#model=google/gemma-2-9b&context=65536&batch=12&gpu=l40s-48gb&gpus=2")
    shown = metrics(page)
    for key in HEADLINE:
        cell = page.locator(f'.headline [data-metric="{key}"]')
        assert cell.get_attribute("data-value") == shown[key]
    conditions = page.inner_text("#conditions")
    assert "65,536 tokens per request" in conditions and "12 requests" in conditions and "2 x" in conditions


def test_summary_marks_stale_and_names_the_error(page, site):
    open_page(page, site)
    page.fill("#context", "abc")
    assert page.get_attribute("#summary", "data-stale") == "true"
    assert "context" in page.inner_text("#summary")
    page.fill("#context", "4096")
    assert page.get_attribute("#summary", "data-stale") == "false"


def test_advanced_group_opens_for_a_link_that_sets_one_of_its_values(page, site, context):
    open_page(page, site)
    assert not page.evaluate("document.getElementById('advanced').open")
    assert page.is_hidden("#tp")
    fresh = context.new_page()
    open_page(fresh, site + "#model=meta-llama/Llama-3.1-70B&tp=4")
    assert fresh.evaluate("document.getElementById('advanced').open") and fresh.is_visible("#tp")
    assert fresh.input_value("#tp") == "4"
    # A link with only common inputs keeps it closed (the memory utilization is left to the
    # engine, so the page's own links carry none); an older link's 0.9 is a value set, and shown.
    other = context.new_page()
    open_page(other, site + "#model=meta-llama/Llama-3.1-70B&context=4096&gpus=2&engine=vllm")
    assert not other.evaluate("document.getElementById('advanced').open")
    older = context.new_page()
    open_page(older, site + "#model=meta-llama/Llama-3.1-70B&context=4096&gpus=2&memory-utilization=0.9")
    assert older.evaluate("document.getElementById('advanced').open")
    assert older.input_value("#memory-utilization") == "0.9"


def test_advanced_group_opens_when_an_error_is_inside(page, site):
    open_page(page, site + "#model=meta-llama/Llama-3.1-8B&engine=vllm")
    assert not page.evaluate("document.getElementById('advanced').open")
    # A value typed in a closed group (as a restored form or autofill can): its error opens it.
    page.evaluate("""() => { const f = document.getElementById('overhead-gib'); f.value = 'abc';
                             f.dispatchEvent(new Event('input', {bubbles: true})); }""")
    page.wait_for_function("document.getElementById('advanced').open")
    assert page.inner_text("#error-overhead-gib")


@pytest.mark.parametrize("typed, expected", [("qwen3 32", "Qwen/Qwen3-32B"), ("deepseek v3", "deepseek-ai/DeepSeek-V3"),
                                             ("llama3 70b", "meta-llama/Llama-3.1-70B")])
def test_combobox_finds_a_model_by_keyboard(page, site, typed, expected):
    open_page(page, site)
    page.focus("#model-search")
    page.keyboard.press("Control+a")
    page.keyboard.type(typed)
    assert page.get_attribute("#model-search", "aria-expanded") == "true"
    active = page.get_attribute("#model-search", "aria-activedescendant")
    assert page.get_attribute(f"#{active}", "data-value") == expected
    page.keyboard.press("Enter")
    settle(page)
    assert page.input_value("#model") == expected
    assert page.get_attribute("#model-search", "aria-expanded") == "false"
    assert f"model={expected}" in page.url


def test_combobox_arrow_keys_and_pointer(page, site):
    open_page(page, site)
    page.focus("#model-search")
    page.keyboard.press("Control+a")
    page.keyboard.type("gemma 2")
    page.keyboard.press("ArrowDown")
    page.keyboard.press("Enter")
    assert page.input_value("#model") == "google/gemma-2-27b"
    page.click("#model-search")
    page.click('#model-list [data-value="openai/gpt-oss-20b"]')
    assert page.input_value("#model") == "openai/gpt-oss-20b" and page.input_value("#model-search") == "gpt-oss-20b"
    assert metrics(page)["kv_bytes_per_token"] == str(24 * 2 * 8 * 64 * 2)


def test_sources_are_peers_of_the_combobox(page, site):
    open_page(page, site)
    for source, fields in (("config", "#config-fields"), ("custom", "#custom-fields")):
        assert page.is_visible(f"#source-{source}") and page.is_hidden(fields)
        page.click(f"#source-{source}")
        assert page.is_visible(fields) and page.get_attribute(f"#source-{source}", "aria-pressed") == "true"
    assert page.is_visible("#source-file")
    assert page.get_attribute("#hf-config-file", "accept").startswith(".json")


def test_chart_legends_name_series_without_empty_values(page, site):
    open_page(page, site + "#model=meta-llama/Llama-3.1-70B&gpu=h100-sxm-80gb&gpus=4")
    open_folds(page, "charts")
    settle(page)
    legend = page.locator("#chart-memory .u-legend")
    assert "GQA" in legend.inner_text() and "MHA" in legend.inner_text()
    assert ":" not in legend.inner_text()          # no "MHA: " placeholder before any hover
    # The exact figures under the pointer are in the tooltip over the plot; the legend stays as it is.
    page.locator("#chart-memory .u-over").hover()
    page.wait_for_function("document.querySelector('#chart-memory .chart-tip').innerText.includes('B)')")
    assert ":" not in legend.inner_text()


def test_compare_table_appears_with_the_first_pin(page, site):
    open_page(page, site)
    open_folds(page, "compare")
    settle(page)
    assert page.is_hidden("#compare-table")
    page.click("#pin")
    settle(page)
    assert page.is_visible("#compare-table")
    page.click("#compare-table button.unpin")
    settle(page)
    assert page.is_hidden("#compare-table")


def test_screenshots_regenerate(browser, site, tmp_path):
    sys.path.insert(0, str(ROOT / "tools"))
    import screenshots
    written = screenshots.shoot(browser, site, tmp_path)
    assert len(written) == 6
    for path in written:
        data = path.read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n"
        width, height = struct.unpack(">II", data[16:24])
        name = path.stem.split("-")[0]
        assert (width, height) == screenshots.VIEWPORTS[name], path.name


def test_in_page_link_scrolls_without_touching_the_inputs(page, site):
    open_page(page, site)
    page.fill("#context", "32768")
    page.fill("#batch", "4")
    url = url_of_settled(page)
    page.click("a[href='#privacy-proof']")
    page.wait_for_function("document.activeElement.id === 'privacy-proof'")
    # A changed fragment would fire hashchange in a later task: let the tasks queued by now run.
    page.evaluate("() => new Promise(done => requestAnimationFrame(() => setTimeout(done)))")
    assert page.input_value("#context") == "32768" and page.input_value("#batch") == "4"
    assert page.url == url and page.inner_text("#link-notes") == ""
    assert page.evaluate("document.activeElement.id") == "privacy-proof"


def url_of_settled(page):
    settle(page)
    return page.url


def test_clicking_into_the_combobox_keeps_the_model_on_enter_and_typing_replaces(page, site):
    open_page(page, site + "#model=meta-llama/Llama-3.1-70B&gpu=h100-sxm-80gb")
    page.click("#model-search")
    active = page.get_attribute("#model-search", "aria-activedescendant")
    assert page.get_attribute(f"#{active}", "data-value") == "meta-llama/Llama-3.1-70B"
    page.keyboard.press("Enter")
    assert page.input_value("#model") == "meta-llama/Llama-3.1-70B"
    page.click("#model-search")
    page.keyboard.type("llama 3.3 70b")
    page.keyboard.press("Enter")
    assert page.input_value("#model") == "meta-llama/Llama-3.3-70B-Instruct"
    page.click("#model-search")
    page.keyboard.type("gem")
    assert "match" in page.inner_text("#search-status")
    page.keyboard.press("Escape")
    assert page.inner_text("#search-status") == ""


def test_paste_config_button_shows_no_error_before_anything_is_pasted(page, site):
    open_page(page, site)
    page.click("#source-config")
    assert page.inner_text("#error-hf-config") == "" and page.inner_text("#error-summary") == ""
    assert "waiting for a config.json" in page.inner_text("#stale-badge")


def test_phone_summary_never_covers_the_field_in_error(browser, site):
    context, page = new_page(browser, 390, 844)
    open_page(page, site)
    heights = [page.locator("#summary").bounding_box()["height"]]
    page.fill("#batch", "x")
    page.fill("#gpus", "y")
    page.fill("#context", "z")
    heights.append(page.locator("#summary").bounding_box()["height"])
    assert heights[1] <= heights[0] + 32, heights          # one line for the stale badge, no more
    for field in ("#batch", "#gpus", "#context"):
        page.focus(field)
        summary, box = page.locator("#summary").bounding_box(), page.locator(field).bounding_box()
        assert box["y"] >= summary["y"] + summary["height"] - 1, field
    context.close()


def test_n_a_says_what_is_missing(page, site):
    open_page(page, site + "#layers=32&kv-heads=8&head-dim=128&gpu=h100-sxm-80gb")
    assert "give the weights" in page.inner_text('.headline [data-metric="max_concurrency"]')
    open_page(page, site + "#model=meta-llama/Llama-3.1-8B")
    assert "choose a GPU" in page.inner_text('.headline [data-metric="max_concurrency"]')
