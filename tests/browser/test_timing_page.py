"""The time section on the page (issue 12): the same lower bounds as `kvcalc --json`, the
roofline and batch charts drawn from the engine's series, and what is said when there are none."""

import json

from kvcalc.reports.link import evaluate_link
from kvcalc.reports.report import to_json

from pagekit import metrics, open_page, url_of, open_folds


def cli_json(page) -> dict:
    evaluation, ignored = evaluate_link(url_of(page).partition("#")[2])
    assert evaluation.ok and not ignored
    return to_json(evaluation.scenario, evaluation)


def test_time_figures_and_charts_match_the_engine(page, site):
    open_page(page, site + "#model=meta-llama/Llama-3.1-8B&gpu=h100-sxm-80gb&context=32768&batch=8"
                           "&prompt-tokens=16384&prefill-chunk=2048")
    open_folds(page, "time")
    expected = cli_json(page)
    shown = metrics(page)
    for key in ("prefill_seconds", "ttft_seconds", "chunked_step_seconds", "decode_flops_per_byte",
                "ridge_flops_per_byte"):
        assert abs(float(shown[key]) - expected[key]) <= 1e-5 * expected[key], key
    assert shown["prefill_steps"] == "8" == str(expected["prefill_steps"])
    assert shown["prefill_flops"] == str(expected["prefill_flops"])
    assert "lower bounds" in page.inner_text("#timing").lower()
    assert "a prompt of 16,384 tokens" in page.inner_text('[data-cond="ttft_seconds"]')
    # The roofline's exact series: the roof is min(peak, bandwidth x intensity); the decode point sits on it.
    roof = json.loads(page.evaluate("window.kvcalcChartExact('chart-roofline')"))
    kinds = [kind for kind, _ in roof]
    assert kinds == ["flops", "flops", "flops"]
    decode = [v for v in roof[1][1] if v is not None]
    assert len(decode) == 1
    assert abs(float(decode[0]) - expected["decode_flops_per_byte"] * 3.35e12) < 1e3
    batch = json.loads(page.evaluate("window.kvcalcChartExact('chart-batch')"))
    total, per_request, ceiling = (values for _, values in batch)   # the compute ceiling third
    assert all(t <= c for t, c in zip(total, ceiling))
    assert all(b >= a for a, b in zip(total, total[1:]))            # more batch, more tokens/s in total
    assert all(b <= a for a, b in zip(per_request, per_request[1:]))  # and fewer per request
    # The explainer quotes the same numbers.
    assert f"{expected['ridge_flops_per_byte']:,.0f}" in page.inner_text(".timing-explain")


def test_no_time_bounds_without_peaks_or_when_it_does_not_fit(page, site):
    open_page(page, site + "#model=meta-llama/Llama-3.1-8B&gpu=m2-ultra-192gb")
    open_folds(page, "time")
    assert "peak FLOP/s" in page.inner_text("#timing-missing")
    assert page.is_hidden("#timing-body")
    assert page.get_attribute('[data-metric="ttft_seconds"]', "data-value") == ""
    page.select_option("#gpu", "h100-sxm-80gb")
    page.wait_for_function("document.querySelector('[data-metric=ttft_seconds]').dataset.value !== ''")
    assert page.inner_text("#timing-missing") == "" and page.is_visible("#chart-roofline")
    assert page.is_visible("#timing-body")
    page.evaluate("document.getElementById('advanced').open = true")      # where the prompt length is
    page.fill("#prompt-tokens", "999999")
    page.wait_for_selector("#error-prompt-tokens:not(:empty)")
    assert "longer than the context" in page.inner_text("#error-prompt-tokens")
