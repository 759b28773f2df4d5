"""Hostile config values on the page (issue 19): a pasted config the engine refuses is said beside
the config box, every figure on the page is marked stale until a valid result replaces it, and
nothing reaches the console. Before, a qwen3_moe `mlp_only_layers: 5` threw inside the engine: the
green "Fits ... 56 requests" of the previous model stayed under the new config, unmarked, and a
link holding it said "the calculator failed to start"."""

import json

from kvcalc.reports import link
from kvcalc.readers import presets
from pagekit import choose_model, metrics, open_page, settle, fill_shown, open_folds

QWEN_MOE = next(e for e in presets.model_entries() if e["id"].startswith("Qwen/Qwen3-30B-A3B"))["config"]
HOSTILE = dict(QWEN_MOE, mlp_only_layers=5)


def stale(page) -> str:
    return page.evaluate("document.documentElement.dataset.stale")


def test_a_pasted_config_that_is_refused_marks_every_figure_stale(page, site):
    recorder = open_page(page, site + "#model=meta-llama%2FLlama-3.1-8B&gpu=h100-sxm-80gb")
    open_folds(page, "time")
    before = metrics(page)
    assert before["verdict"] == "true" and stale(page) == "false"
    choose_model(page, "config")
    fill_shown(page, "#hf-config", json.dumps(HOSTILE))
    page.wait_for_function("document.documentElement.dataset.stale === 'true'")
    error = page.inner_text("#error-hf-config")
    assert "mlp_only_layers" in error and "list of layer indices" in error, error
    assert page.get_attribute("#summary", "data-stale") == "true"
    assert page.get_attribute("#results", "data-stale") == "true"
    assert page.is_visible("#stale-badge")
    # The time section, commands and charts are greyed and their headings say why.
    assert page.evaluate("getComputedStyle(document.querySelector('#h-timing'), '::after').content").startswith('" · stale')
    assert metrics(page)["max_concurrency"] == before["max_concurrency"]     # kept, and marked as the last valid
    # A valid config replaces them: the page is current again.
    fill_shown(page, "#hf-config", json.dumps(QWEN_MOE))
    page.wait_for_function("document.documentElement.dataset.stale === 'false'")
    settle(page)
    assert page.inner_text("#error-hf-config") == "" and page.get_attribute("#summary", "data-stale") == "false"
    assert metrics(page)["kv_bytes_per_token"] != before["kv_bytes_per_token"]
    assert recorder.problems == []
    assert page.locator(".py-error").count() == 0


def test_a_link_holding_a_refused_config_starts_and_says_why(page, site):
    fragment = link.encode({"hf-config": HOSTILE, "context": "4096"})
    recorder = open_page(page, site + "#" + fragment)       # asserts data-state "ready"
    notes = page.inner_text("#link-notes")
    assert "config.json" in notes and "mlp_only_layers" in notes, notes
    assert "hf-config" not in notes                            # the page's words, not the link's key
    assert page.input_value("#context") == "4096"
    assert "failed" not in page.inner_text("#status-text")
    assert recorder.problems == []
