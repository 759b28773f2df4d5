"""Edge cases found by a review of the page: each one is a sequence a user can do."""

from kvcalc.reports.link import evaluate_link
from kvcalc.reports.report import to_json

from pagekit import choose_model, metrics, open_page, settle, url_of, fill_shown, open_folds

INT_METRICS = ("kv_bytes_per_token", "kv_bytes_per_request", "kv_bytes_total", "kv_bytes_per_gpu", "max_concurrency")


def same_as_cli(page, fragment=None):
    evaluation, _ = evaluate_link((fragment or url_of(page)).partition("#")[2] if "#" in (fragment or url_of(page)) else "")
    assert evaluation.ok, evaluation.errors
    expected = to_json(evaluation.scenario, evaluation)
    shown = metrics(page)
    for key in INT_METRICS:
        assert shown[key] == ("" if expected[key] is None else str(expected[key])), key


def test_custom_mla_model(page, site):
    open_page(page, site)
    choose_model(page, "custom")
    page.select_option("#attention-kind", "mla")
    page.fill("#layers", "61")
    assert page.inner_text("#error-summary") == ""
    assert metrics(page)["kv_bytes_per_token"] == "70272"
    same_as_cli(page)


def test_custom_mla_link_from_the_cli(page, site):
    open_page(page, site + "#layers=61&mla-rank=512&mla-rope-dim=64")
    assert metrics(page)["kv_bytes_per_token"] == "70272"
    assert page.input_value("#attention-kind") == "mla"


def test_config_missing_heads_is_shown_at_the_config_box(page, site):
    recorder = open_page(page, site)
    choose_model(page, "config")
    fill_shown(page, "#hf-config", '{"model_type": "llama", "num_hidden_layers": 28, "hidden_size": 3072}')
    assert "num_attention_heads" in page.inner_text("#error-hf-config")
    assert recorder.problems == [] and page.locator(".py-error").count() == 0


def test_link_values_in_any_case_or_alias_are_kept(page, site):
    fragment = "#model=META-LLAMA/llama-3.1-8b&kv-dtype=FP8&gpu=H100-SXM-80GB&unit=GB&weights-dtype=bfloat16"
    open_page(page, site + fragment)
    assert page.input_value("#kv-dtype") == "fp8" and page.input_value("#gpu") == "h100-sxm-80gb"
    assert page.is_checked("input[name=unit][value=gb]")
    assert page.inner_text("#link-notes") == ""
    same_as_cli(page, fragment)


def test_link_without_a_model_says_so(page, site):
    open_page(page, site + "#context=4096")
    assert "names none" in page.inner_text("#link-notes")


def test_link_custom_fields_not_inherited(page, site):
    open_page(page, site + "#layers=32&kv-heads=8&head-dim=128&sliding-window=4096")
    page.evaluate("location.hash = 'layers=32&kv-heads=6&head-dim=128'")
    page.wait_for_function("document.querySelector('[data-metric=kv_bytes_per_token]').dataset.value === '98304'")
    assert page.input_value("#sliding-window") == "" and page.inner_text("#error-summary") == ""


def test_tp_link_without_gpus(page, site):
    fragment = "#model=meta-llama/Llama-3.1-8B&tp=4"
    open_page(page, site + fragment)
    assert page.input_value("#gpus") == "4" and page.inner_text("#error-summary") == ""
    same_as_cli(page, fragment)


def test_link_notes_once_and_cleared_by_editing(page, site):
    open_page(page, site + "#model=meta-llama/Llama-3.1-8B&foo=1&context=-5")
    notes = page.inner_text("#link-notes")
    assert notes.count("foo") == 1 and notes.count("Context length") == 1
    page.fill("#batch", "2")
    assert page.inner_text("#link-notes") == ""


def test_shortcut_gap_click_is_harmless(page, site):
    recorder = open_page(page, site)
    page.locator(".shortcuts").click(position={"x": 1, "y": 1})
    page.click(".shortcuts button[data-context='32768']")
    assert page.input_value("#context") == "32768" and recorder.problems == []


def test_model_search_lists_matches_best_first(page, site):
    open_page(page, site)
    page.fill("#model-search", "qwen3")
    shown = page.evaluate("[...document.querySelectorAll('#model-list [role=option]')].filter(o => !o.hidden).map(o => o.dataset.value)")
    # Qwen's own repos first; re-exports of them (nvidia/Qwen3.6-27B-NVFP4) match too.
    assert shown and shown[0].startswith("Qwen/Qwen3") and all("/qwen3" in v.lower() for v in shown)
    assert page.is_visible("#model-list") and "match" in page.inner_text("#search-status")
    page.fill("#model-search", "zzzz-nothing")
    assert "No model matches" in page.inner_text("#search-status")
    page.keyboard.press("Escape")
    assert page.is_hidden("#model-list") and page.input_value("#model-search") == "Llama 3.1 8B"


def test_custom_model_with_default_gpu_shows_kv(page, site):
    open_page(page, site)
    choose_model(page, "custom")
    assert page.inner_text("#error-summary") == ""
    assert metrics(page)["kv_bytes_per_token"] == str(2 * 32 * 8 * 128 * 2)
    assert metrics(page)["max_concurrency"] == ""


def test_tp_conflict_error_sits_by_gpus(page, site):
    open_page(page, site)
    page.fill("#gpus", "3")
    assert "tp=3" in page.inner_text("#error-gpus")


def test_tp_with_separator_in_a_link(page, site):
    fragment = "#model=meta-llama/Llama-3.1-8B&tp=1,6"
    recorder = open_page(page, site + fragment)
    assert recorder.problems == [] and page.input_value("#gpus") == "16"
    same_as_cli(page, fragment)


def test_pin_with_ignored_fields_says_so_and_remove_keeps_focus(page, site):
    from urllib.parse import quote
    pin = quote("model=meta-llama/Llama-3.1-8B&context=abc&gpu=nonsense", safe="")
    open_page(page, site + "#model=meta-llama/Llama-3.1-8B&pin=" + pin)
    open_folds(page, "compare")
    assert "Pin 1 ignored" in page.inner_text("#pin-status") and "context" in page.inner_text("#pin-status")
    page.focus("#compare-table button.unpin")
    page.keyboard.press("Enter")
    assert page.evaluate("document.activeElement.id") == "pin"
    settle(page)
    assert "Removed Pin 1" in page.inner_text("#pin-status")


def test_pin_is_disabled_while_inputs_are_in_error(page, site):
    open_page(page, site)
    open_folds(page, "compare")
    page.fill("#context", "abc")
    assert page.is_disabled("#pin")
    page.fill("#context", "4096")
    assert page.is_enabled("#pin")
