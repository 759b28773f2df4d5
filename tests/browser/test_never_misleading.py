"""Never misleading (issue 11) in the page: the verdict first, each figure with its condition,
what is typed before Python is ready, the link while a field is in error, the memory bar's
reserved share, and wide tables on a phone."""

import json

from pagekit import POLL_MS, choose_model, metrics, open_folds, open_page, settle, url_of, fill_shown


def test_typing_before_python_is_ready_is_kept_and_computed(page, site):
    held = []
    page.route("**/app/kvcalc.zip", lambda route: held.append(route))
    page.goto(site + "#model=meta-llama%2FLlama-3.1-8B&gpu=h100-sxm-80gb")
    page.wait_for_function("document.readyState === 'complete'")
    page.wait_for_function("window.kvcalcEdited !== undefined")
    assert page.evaluate("document.documentElement.dataset.state") == "loading"
    page.fill("#context", "65536")
    page.fill("#batch", "3")
    # The page says it is starting and that the changes will be computed.
    assert page.is_visible("#status-typed")
    assert "computed as soon as it is ready" in page.inner_text("#status")
    for route in held:
        route.continue_()
    page.unroute("**/app/kvcalc.zip")
    page.wait_for_function("document.documentElement.dataset.state === 'ready'", polling=POLL_MS, timeout=90_000)
    assert page.input_value("#context") == "65536" and page.input_value("#batch") == "3"
    m = metrics(page)
    assert m["kv_bytes_per_request"] == str(65536 * 131072)
    assert m["kv_bytes_total"] == str(3 * 65536 * 131072)
    assert "context=65536" in url_of(page) and "batch=3" in page.url
    assert not page.is_visible("#status-typed")


def test_verdict_first_and_conditions_beside_each_figure(page, site):
    open_page(page, site + "#model=meta-llama%2FLlama-3.1-405B&gpu=h100-sxm-80gb&gpus=8")
    m = metrics(page)
    assert m["verdict"] == "false"
    verdict = page.inner_text('[data-metric="verdict"]')
    assert verdict.startswith("Does not fit: the weights need 94.50 GiB per GPU")
    # First among the results: above the headline figures.
    order = page.evaluate("""() => [...document.querySelectorAll('#summary [data-metric]')].map(e => e.dataset.metric)""")
    assert order[0] == "verdict"
    # The decode speed of a deployment that does not fit is not shown.
    assert m["decode_tokens_per_s_per_request"] == ""
    assert "does not fit" in page.inner_text('[data-metric="decode_tokens_per_s_per_request"]')
    assert "of 8,192 tokens each, on 8 GPUs" in page.inner_text('[data-cond="max_concurrency"]')
    assert page.inner_text('[data-cond="weights_bytes"]') == "all 8 GPUs together"
    assert page.inner_text('[data-cond="weights_bytes_per_gpu"]') == "each of 8 GPUs"
    page.fill("#gpus", "16")
    page.wait_for_function("document.querySelector('[data-metric=verdict]').dataset.value === 'true'")
    assert page.inner_text('[data-metric="verdict"]').startswith("Fits: 1 request of 8,192 tokens")


def test_link_with_a_field_in_error_keeps_the_last_valid_value(page, site):
    open_page(page, site + "#model=meta-llama%2FLlama-3.1-8B&context=32768")
    page.fill("#batch", "4")
    assert "batch=4" in url_of(page)
    page.fill("#batch", "4x")
    page.wait_for_selector("#error-batch:not(:empty)")
    before = page.inner_text("#copy-status")
    page.click("#copy-link")
    settle(page)
    assert "batch=4&" in page.url + "&" and "4x" not in page.url
    # The status is written when the clipboard's promise settles, after the click returns.
    page.wait_for_function("before => document.getElementById('copy-status').textContent !== before", arg=before)
    assert "left out" in page.inner_text("#copy-status") or "last valid" in page.inner_text("#copy-status")


def test_memory_bar_draws_the_reserved_share_and_the_overflow(page, site):
    open_page(page, site + "#model=meta-llama%2FLlama-3.1-8B&gpu=h100-sxm-80gb&memory-utilization=0.9")
    reserved = int(page.get_attribute("#bar-reserved", "data-bytes"))
    assert reserved == 85_520_809_984 - int(85_520_809_984 * 0.9)
    width = page.evaluate("document.getElementById('bar-reserved').getBoundingClientRect().width")
    whole = page.evaluate("document.getElementById('memory-bar').getBoundingClientRect().width")
    assert abs(width / whole - 0.1) < 0.01
    assert "Kept back" in page.inner_text("#bar-legend")
    page.fill("#context", "131072")
    page.fill("#batch", "8")
    page.wait_for_function("document.getElementById('memory-bar').dataset.fits === 'false'")
    assert "does not fit" in page.inner_text("#bar-over")


def test_wide_tables_scroll_on_a_phone_with_a_cue(browser, site):
    context = browser.new_context(viewport={"width": 390, "height": 844}, service_workers="block")
    page = context.new_page()
    open_page(page, site + "#model=deepseek-ai%2FDeepSeek-V3&gpus=8&gpu=h200-141gb")
    open_folds(page, "source", "designs", "precisions")
    # The cue is set after the browser's layout (a ResizeObserver): wait for it to be there.
    page.wait_for_function("""() => [...document.querySelectorAll('.table-wrap')].filter(w => w.checkVisibility())
        .every(w => w.dataset.scrolls === (w.scrollWidth > w.clientWidth + 1 ? 'true' : 'false'))""")
    wraps = page.evaluate("""() => [...document.querySelectorAll('.table-wrap')].filter(w => w.checkVisibility())
        .map(w => ({scrolls: w.scrollWidth > w.clientWidth, overflow: getComputedStyle(w).overflowX,
                    cue: w.dataset.scrolls}))""")
    assert wraps and all(w["overflow"] == "auto" for w in wraps)
    assert any(w["scrolls"] for w in wraps)
    assert all(w["cue"] == ("true" if w["scrolls"] else "false") for w in wraps), wraps
    page_width = page.evaluate("document.documentElement.scrollWidth")
    assert page_width <= 390
    context.close()


def test_params_field_takes_model_card_spellings(page, site):
    open_page(page, site + "#model=meta-llama%2FLlama-3.1-8B&gpu=h100-sxm-80gb")
    page.evaluate("document.getElementById('advanced').open = true")
    page.fill("#params", "7.6B")
    page.wait_for_function("document.querySelector('[data-metric=weights_bytes]').dataset.value === '15200000000'")
    assert page.inner_text('[data-metric="weights_bytes"] .figure').startswith("≈ ")
    page.fill("#params", "70")
    page.wait_for_selector("#error-params:not(:empty)")
    assert "implausibly few" in page.inner_text("#error-params")


def test_pasted_config_reaches_capacity(page, site):
    from support import hf_fixture
    open_page(page, site)
    choose_model(page, "config")
    cfg = {k: v for k, v in hf_fixture("Qwen__Qwen2.5-7B.json").items() if k != "_name_or_path"}
    fill_shown(page, "#hf-config", json.dumps(cfg))
    page.wait_for_function("document.querySelector('[data-metric=weights_bytes]').dataset.value === '15231233024'")
    assert page.get_attribute('[data-metric="max_concurrency"]', "data-value") not in ("", "0")


def test_messages_use_the_page_labels(page, site):
    # The engine names other inputs by their CLI names; the page says the labels a user sees.
    page.goto(site + "#layers=32&kv-heads=8&head-dim=128&params=8B&gpu=h100-sxm-80gb&engine=vllm")
    page.wait_for_function("document.documentElement.dataset.state !== 'loading'", polling=POLL_MS, timeout=90_000)
    # vLLM's overhead estimate needs the hidden size this custom model leaves out: its field says so.
    page.wait_for_selector("#error-hidden-size:not(:empty)")
    text = page.inner_text("#error-hidden-size")
    assert "“KV memory per GPU from your log”" in text and "kv-memory-gib" not in text and "hidden-size" not in text
    assert "overhead-gib" not in page.inner_text("#error-summary")
