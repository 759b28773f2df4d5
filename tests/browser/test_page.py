"""The page, in real Chromium: it starts, computes the engine's numbers, shares them by link,
imports config.json, and keeps what a user typed when a value is wrong."""

import json
import re

from kvcalc.reports.link import evaluate_link
from kvcalc.reports.report import to_json

from pagekit import choose_model, fill_shown, metrics, open_page, url_of
from support import ROOT

INT_METRICS = ("kv_bytes_per_token", "kv_bytes_per_request", "kv_bytes_total", "kv_bytes_per_gpu",
               "weights_bytes", "max_concurrency", "max_context", "kv_equals_weights_context")


def engine_for(url: str) -> dict:
    evaluation, ignored = evaluate_link(url.partition("#")[2])
    assert evaluation.ok and not ignored
    return to_json(evaluation.scenario, evaluation)


def assert_matches_engine(page):
    shown, expected = metrics(page), engine_for(url_of(page))
    for key in INT_METRICS:
        assert shown[key] == ("" if expected[key] is None else str(expected[key])), key


def test_ready_without_errors_and_only_own_origin(page, site):
    recorder = open_page(page, site)
    assert recorder.problems == []
    assert page.locator(".py-error").count() == 0
    assert recorder.requests and all(url.startswith(site) for url in recorder.requests), recorder.requests
    assert page.locator("#inputs").is_enabled()
    assert_matches_engine(page)


def test_inputs_update_figures_to_the_engines_numbers(page, site):
    open_page(page, site)
    choose_model(page, "meta-llama/Llama-3.1-70B")
    page.fill("#context", "32768")
    page.fill("#batch", "8")
    page.select_option("#kv-dtype", "fp8")
    page.fill("#gpus", "4")
    assert "context=32768" in url_of(page) and "kv-dtype=fp8" in url_of(page)
    assert metrics(page)["kv_bytes_per_token"] == str(327_680 // 2)
    assert_matches_engine(page)


def test_a_link_reproduces_the_figures_in_a_fresh_page(page, site, context):
    open_page(page, site + "#model=google/gemma-2-9b&context=65536&batch=12&kv-dtype=q8_0&gpu=l40s-48gb&gpus=2")
    first = metrics(page)
    assert_matches_engine(page)
    fresh = context.new_page()
    open_page(fresh, url_of(page))
    assert metrics(fresh) == first
    assert fresh.input_value("#context") == "65536" and fresh.input_value("#model") == "google/gemma-2-9b"


def test_hashchange_loads_new_state(page, site):
    open_page(page, site)
    page.evaluate("location.hash = 'model=deepseek-ai/DeepSeek-V3&context=4096'")
    page.wait_for_function("document.querySelector('[data-metric=kv_bytes_per_token]').dataset.value === '70272'")
    assert page.input_value("#model") == "deepseek-ai/DeepSeek-V3"


def test_config_json_paste_and_its_link(page, site, context):
    open_page(page, site)
    choose_model(page, "config")
    text = (ROOT / "tests" / "fixtures" / "hf" / "openai__gpt-oss-120b.json").read_text()
    fill_shown(page, "#hf-config", text)
    page.fill("#context", "65536")
    page.select_option("#gpu", "")
    assert metrics(page)["kv_bytes_per_request"] == str(18 * 2048 * (65536 + 128))
    assert "hf-config=" in url_of(page)
    fresh = context.new_page()
    open_page(fresh, url_of(page))
    assert metrics(fresh) == metrics(page)
    assert json.loads(fresh.input_value("#hf-config")) == json.loads(text)


def test_bad_config_json_says_why(page, site):
    open_page(page, site)
    before = metrics(page)
    choose_model(page, "config")
    fill_shown(page, "#hf-config", '{"num_hidden_layers": 32, "num_attention_heads": 32,')
    assert "not valid JSON" in page.inner_text("#error-hf-config")
    assert page.get_attribute("#results", "data-stale") == "true"
    assert metrics(page) == before


def test_bad_value_shows_its_error_and_keeps_the_rest(page, site):
    open_page(page, site)
    page.fill("#batch", "4")
    good = metrics(page)
    url = url_of(page)
    page.fill("#context", "12abc")
    assert "whole number" in page.inner_text("#error-context")
    assert page.get_attribute("#context", "aria-invalid") == "true"
    assert page.get_attribute("#results", "data-stale") == "true" and page.is_visible("#stale-badge")
    assert metrics(page) == good and url_of(page) == url
    assert page.input_value("#context") == "12abc" and page.input_value("#batch") == "4"
    page.fill("#context", "16384")
    assert page.get_attribute("#results", "data-stale") == "false" and page.inner_text("#error-context") == ""


def test_gb_gib_switch(page, site):
    open_page(page, site)
    before = metrics(page)
    assert "GiB" in page.inner_text("[data-metric=kv_bytes_per_request]")
    page.check("input[name=unit][value=gb]")
    shown = page.inner_text("[data-metric=kv_bytes_per_request]")
    assert re.search(r"\bGB\b", shown) and "GiB" not in shown
    assert metrics(page) == before and "unit=gb" in url_of(page)


def test_link_with_bad_values_loads_the_rest_and_lists_them(page, site):
    dialogs = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    open_page(page, site + "#model=meta-llama/Llama-3.1-8B&context=-1&batch=%3Cimg%20src%3Dx%20onerror%3Dalert(1)%3E&zzz=1&kv-dtype=fp8")
    notes = page.inner_text("#link-notes")
    # Each in the page's own words: the field's label, and other fields named by their labels too.
    assert "Context length:" in notes and "Concurrent requests:" in notes and "zzz" in notes
    assert "context:" not in notes and "batch:" not in notes
    assert page.locator("img[src=x]").count() == 0 and dialogs == []
    assert page.input_value("#kv-dtype") == "fp8"
    assert_matches_engine(page)


def test_csp_is_the_built_value(page, site):
    import sys
    sys.path.insert(0, str(ROOT / "tools"))
    from build import CSP
    open_page(page, site)
    assert page.get_attribute('meta[http-equiv="Content-Security-Policy"]', "content") == CSP
    assert "connect-src 'self'" in CSP and "https:" not in CSP
