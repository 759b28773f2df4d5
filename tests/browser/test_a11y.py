"""Every user: axe-core finds no serious or critical problem, the keyboard reaches every control
in order with a visible focus, results are announced politely, and the page works at 360 px
and at 200% zoom."""

import json

import pytest

from pagekit import choose_model, open_page, settle, open_folds
from support import ROOT

AXE = ROOT / "node_modules" / "axe-core" / "axe.min.js"   # from npm, for the tests only


def run_axe(page, site):
    # Served from the page's own origin (a route, not a file in dist/), so the CSP stays on. The
    # context's route, not the page's: once the offline copy's service worker controls the page
    # (a matter of timing, under load), the request is the worker's fetch, which only the
    # context's routes see (a page route missed it: "Failed to load script", CI with both cores busy).
    page.context.route(site + "__tests__/axe.min.js", lambda route: route.fulfill(
        body=AXE.read_bytes(), content_type="text/javascript"))
    page.add_script_tag(url=site + "__tests__/axe.min.js")
    result = page.evaluate("""() => axe.run(document, {resultTypes: ['violations']})
        .then(r => r.violations.map(v => ({id: v.id, impact: v.impact, nodes: v.nodes.slice(0, 3).map(n => n.target.join(' '))})))""")
    return [v for v in result if v["impact"] in ("serious", "critical")]


@pytest.mark.parametrize("color_scheme", ["light", "dark"])
def test_axe_on_the_loaded_page(browser, site, color_scheme):
    context = browser.new_context(color_scheme=color_scheme)
    page = context.new_page()
    open_page(page, site + "#model=meta-llama/Llama-3.1-70B&gpus=8&gpu=h100-sxm-80gb&context=32768")
    assert run_axe(page, site) == []
    context.close()


def test_axe_on_the_custom_form_and_errors(page, site):
    open_page(page, site)
    choose_model(page, "custom")
    page.fill("#kv-heads", "abc")
    settle(page)
    assert run_axe(page, site) == []


def test_axe_on_the_compare_view(page, site):
    open_page(page, site)
    open_folds(page, "compare")
    page.click("#pin")
    page.select_option("#kv-dtype", "fp8")
    page.click("#pin")
    settle(page)
    assert run_axe(page, site) == []


def test_keyboard_reaches_every_control_in_order(page, site):
    open_page(page, site)
    controls = page.evaluate("""() => [...document.querySelectorAll('#calc input, #calc select, #calc textarea, #calc button')]
        .filter(e => e.checkVisibility() && !e.disabled).map(e => e.id || e.name + ':' + e.value)""")
    reached = []
    page.focus("#model-search")
    for _ in range(len(controls) + 5):
        if page.evaluate("document.activeElement === document.body"):
            break                   # past the page's last control
        reached.append(page.evaluate("document.activeElement.id || (document.activeElement.name + ':' + document.activeElement.value)"))
        outline = page.evaluate("getComputedStyle(document.activeElement).outlineStyle")
        assert outline != "none", f"no visible focus on {reached[-1]}"
        page.keyboard.press("Tab")
    in_form = [c for c in reached if c in controls]
    # Radio groups take one tab stop: the checked radio stands for its group.
    expected = [c for c in controls if not (c.startswith("unit") and c != "unit-gib")]
    assert in_form[:len(expected)] == expected


def test_results_are_announced_politely_and_not_by_colour_alone(page, site):
    open_page(page, site)
    assert page.get_attribute("dl.metrics", "aria-live") == "polite"
    page.fill("#context", "oops")
    # An error is words and a marker, not just red.
    assert page.inner_text("#error-context").strip() and page.get_attribute("#context", "aria-invalid") == "true"
    assert page.is_visible("#stale-badge") and "stale" in page.inner_text("#stale-badge")


@pytest.mark.parametrize("width, scale", [(360, 1), (640, 2)])   # a phone; 1280 px at 200% zoom
def test_no_horizontal_scroll(browser, site, width, scale):
    context = browser.new_context(viewport={"width": width, "height": 800}, device_scale_factor=scale)
    page = context.new_page()
    open_page(page, site + "#model=deepseek-ai/DeepSeek-V3&gpus=8&gpu=h200-141gb&batch=64")
    open_folds(page, "compare")
    page.click("#pin")
    settle(page)
    overflow = page.evaluate("""() => [...document.querySelectorAll('body *')]
        .filter(e => e.getBoundingClientRect().right > document.documentElement.clientWidth + 1
                     && !e.closest('.table-wrap') && getComputedStyle(e).position !== 'fixed')
        .slice(0, 5).map(e => e.tagName + '#' + e.id + '.' + e.className)""")
    assert page.evaluate("document.documentElement.scrollWidth <= document.documentElement.clientWidth"), overflow
    context.close()
