"""The charts on the page (issue 23, point 8 and the charts' share of point 2): a line's colour
and dash are those of what it is on every model, the current design, precision, context and
batch are marked, the decode chart shows the compute ceiling, the context axis ends at the
model's limit, hovering moves nothing, and with vLLM chosen the budget is vLLM's KV memory."""

import json
from fractions import Fraction

import pytest

from kvcalc.reports.link import evaluate_link
from kvcalc.reports.sweep import SERIES_STYLES, context_points, decode_series

from pagekit import choose_model, metrics, open_page, settle, url_of, open_folds
from support import cli

GIB = 2 ** 30
LLAMA = "#model=meta-llama/Llama-3.1-8B&gpu=h100-sxm-80gb&context=32768&batch=8&kv-dtype=fp8"
CHARTS = ("chart-memory", "chart-concurrency", "chart-roofline", "chart-batch")


def series(page, chart_id):
    """Each line as uPlot draws it: label, colour, dash, width, and its x and y."""
    settle(page)
    return page.evaluate("""(id) => {
        const plot = kvcalcCharts[id];
        return plot.series.slice(1).map(s => ({label: s.label, stroke: s.stroke(), dash: s.dash || null,
            width: s.width, x: Array.from(plot.data[0]), y: Array.from(plot.data[plot.series.indexOf(s)])}));
    }""", chart_id)


def exact(page, chart_id):
    return [values for _, values in json.loads(page.evaluate(f"kvcalcChartExact('{chart_id}')"))]


def marks(page, chart_id):
    settle(page)
    return page.evaluate("id => JSON.parse(JSON.stringify(kvcalcMarks[id]))", chart_id)


def evaluation_of(page):
    evaluation, ignored = evaluate_link(url_of(page).partition("#")[2])
    assert evaluation.ok and not ignored
    return evaluation


def line(lines, name):
    return next(item for item in lines if item["label"].removesuffix(" (current)") == name)


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_a_design_keeps_its_colour_and_dash_on_every_model(browser, site, scheme):
    context = browser.new_context(color_scheme=scheme, service_workers="block")
    page = context.new_page()
    open_page(page, site + "#model=meta-llama/Llama-3.1-8B&gpu=h100-sxm-80gb")
    open_folds(page, "charts")
    theme = 0 if scheme == "light" else 1
    before = series(page, "chart-memory")
    choose_model(page, "deepseek-ai/DeepSeek-V2-Lite")
    page.wait_for_function("kvcalcCharts['chart-memory'].series.some(s => s.label === 'MLA (current)')")
    after = series(page, "chart-memory")
    labels = [[s["label"] for s in lines] for lines in (before, after)]
    # MQA is third on Llama (MHA, GQA, MQA, MLA) and on DeepSeek-V2-Lite, whose GQA row is the one it
    # would have (8 KV heads) ...
    assert labels[0].index("MQA") == 2 and labels[1].index("MQA") == 2
    light, dark, dash = SERIES_STYLES["MQA"]
    for lines in (before, after):
        mqa = line(lines, "MQA")
        # ... and is drawn the same on both, in the colour of this page's theme.
        assert mqa["stroke"] == (light, dark)[theme] and mqa["dash"] == list(dash)
        assert line(lines, "MHA")["stroke"] == SERIES_STYLES["MHA"][theme]
    context.close()


def test_the_current_design_precision_and_context_are_marked(page, site):
    open_page(page, site + LLAMA)
    open_folds(page, "charts")
    evaluation = evaluation_of(page)
    contexts = context_points(evaluation.scenario)
    at = contexts.index(32768)
    memory = series(page, "chart-memory")
    assert [s["label"] for s in memory][:4] == ["MHA", "GQA (current)", "MQA", "MLA"]
    assert line(memory, "GQA")["width"] > max(s["width"] for s in memory if s["label"] != "GQA (current)")
    requests = series(page, "chart-concurrency")
    assert "fp8 (current)" in [s["label"] for s in requests]
    assert sum(s["label"].endswith("(current)") for s in requests) == 1
    # The current context: a vertical line there, and a point on each current line.
    gqa = exact(page, "chart-memory")[1]
    (here,) = marks(page, "chart-memory")
    assert here["x"] == 32768 and here["text"] == "this context: 32K"
    assert [d["y"] for d in here["dots"]] == [gqa[at] / GIB]
    assert gqa[at] == evaluation.result.kv_bytes_per_gpu
    (here,) = marks(page, "chart-concurrency")
    headline = int(metrics(page)["max_concurrency"])
    assert here["x"] == 32768 and [d["y"] for d in here["dots"]] == [headline] and headline == evaluation.capacity


def test_the_decode_chart_marks_the_chosen_batch_and_the_compute_ceiling(page, site):
    open_page(page, site + LLAMA)
    open_folds(page, "time")
    evaluation = evaluation_of(page)
    expected = decode_series(evaluation.scenario, evaluation, evaluation.timing)
    lines = series(page, "chart-batch")
    assert [s["label"] for s in lines] == ["in total", "per request", "compute ceiling"]
    total, per_request, ceiling = exact(page, "chart-batch")
    at = expected["batches"].index(8)
    (chosen,) = marks(page, "chart-batch")
    assert chosen["x"] == 8 and chosen["text"] == "chosen: batch 8"
    assert [d["y"] for d in chosen["dots"]] == [total[at], per_request[at]]
    # The ceiling: tp x peak FLOP/s / a token's FLOPs, the figures the CLI gives.
    timing = evaluation.timing
    code, out, err = cli("--model", "meta-llama/Llama-3.1-8B", "--gpu", "h100-sxm-80gb", "--context", "32768",
                         "--batch", "8", "--kv-dtype", "fp8", "--json")
    assert code == 0, err
    assert json.loads(out)["peak_flops_per_s"] == timing.peak_flops_per_s
    flat = Fraction(timing.peak_flops_per_s * 8, timing.decode_flops)
    assert ceiling == [float(flat)] * len(total) and all(t <= c for t, c in zip(total, ceiling))
    assert lines[2]["y"] == [float(flat)] * len(total)
    note = page.inner_text("#batch-note")
    assert "compute ceiling" in note
    bound = timing.compute_bound_batch
    assert (f"compute-bound from batch {bound:,}" in note) if bound else ("memory-bound" in note)


def test_the_context_axis_ends_at_the_models_limit(page, site):
    open_page(page, site + "#model=deepseek-ai/DeepSeek-V3&gpu=h200-141gb&gpus=8&context=8192")
    open_folds(page, "charts")
    settle(page)
    for chart in ("chart-memory", "chart-concurrency"):
        xs, top = page.evaluate("id => [Array.from(kvcalcCharts[id].data[0]), kvcalcCharts[id].scales.x.max]", chart)
        assert xs[-1] == 163840 == top and 262144 not in xs          # not rounded out to 256K
    # Past the limit: the context stays a marked point, the lines stop at the limit.
    page.fill("#context", "200000")
    page.wait_for_function("kvcalcMarks['chart-memory'][0].x === 200000")
    for chart in ("chart-memory", "chart-concurrency"):
        here, limit = marks(page, chart)
        assert here["text"] == "this context: 200,000, past the limit"
        assert limit["x"] == 163840 and limit["text"] == "the model's limit: 160K"
        for item in series(page, chart):
            drawn = [x for x, y in zip(item["x"], item["y"]) if y is not None]
            assert drawn and max(drawn) <= 163840, item["label"]
        assert page.evaluate("id => kvcalcCharts[id].scales.x.max", chart) == 200000


@pytest.mark.parametrize("viewport", [(1280, 800), (390, 844)])
def test_hovering_a_chart_moves_nothing(browser, site, viewport):
    width, height = viewport
    context = browser.new_context(viewport={"width": width, "height": height}, service_workers="block")
    page = context.new_page()
    open_page(page, site + LLAMA)
    open_folds(page, "charts", "time")
    settle(page)
    # Each chart's own box and where what follows it starts, measured from the chart: what a
    # hover could move (the page's other sections may still be settling, which these do not see).
    layout = """() => %s.map(id => {
        const chart = document.getElementById(id), box = chart.getBoundingClientRect(),
              legend = chart.querySelector('.u-legend').getBoundingClientRect();
        const next = chart.nextElementSibling || chart.parentElement.nextElementSibling;
        return [box.width, box.height, legend.height, next.getBoundingClientRect().top - box.top];
    })""" % json.dumps(list(CHARTS))
    for chart in CHARTS:
        page.locator(f"#{chart}").scroll_into_view_if_needed()
        before = page.evaluate(layout)
        plot = page.locator(f"#{chart} .u-over").bounding_box()
        for share in (0.9, 0.1):
            page.mouse.move(plot["x"] + plot["width"] * share, plot["y"] + plot["height"] / 2)
            page.wait_for_function("id => { const tip = document.querySelector(`#${id} .chart-tip`);"
                                   " return !tip.hidden && tip.innerText.length > 0; }", arg=chart)
            assert page.evaluate(layout) == before, (chart, share)
        page.mouse.move(0, 0)
        page.wait_for_function("id => document.querySelector(`#${id} .chart-tip`).hidden", arg=chart)
    context.close()


def test_with_vllm_the_budget_is_vllms_kv_memory(page, site):
    open_page(page, site + "#model=meta-llama/Llama-3.1-8B&gpu=h100-sxm-80gb&engine=vllm&context=16384"
                           "&memory-utilization=0.9")
    open_folds(page, "charts")
    evaluation = evaluation_of(page)
    at = context_points(evaluation.scenario).index(16384)
    code, out, err = cli("--model", "meta-llama/Llama-3.1-8B", "--gpu", "h100-sxm-80gb", "--engine", "vllm",
                         "--context", "16384", "--memory-utilization", "0.9", "--json")
    assert code == 0, err
    figures = json.loads(out)
    assert int(metrics(page)["engine_kv_budget_bytes_per_gpu"]) == figures["engine_kv_budget_bytes_per_gpu"]
    lines = series(page, "chart-memory")
    labels = [s["label"] for s in lines]
    assert "KV memory per GPU (vLLM)" in labels and "KV budget per GPU" not in labels
    budget = exact(page, "chart-memory")[labels.index("KV memory per GPU (vLLM)")]
    assert budget[at] == figures["engine_kv_budget_bytes_per_gpu"]
    assert budget[at] != evaluation.result.kv_budget_bytes_per_gpu        # the exact ideal's, as drawn before
    # The requests that fit: vLLM's own count at each point, the headline's at this one.
    requests = series(page, "chart-concurrency")
    assert [s["label"] for s in requests] == ["bf16 (current)", "fp8"]          # no GGUF types in vLLM
    assert exact(page, "chart-concurrency")[0][at] == int(figures["engine_max_concurrency"]) == \
        int(metrics(page)["max_concurrency"])
    assert page.evaluate("kvcalcCharts['chart-concurrency'].axes[1].label") == "requests (vLLM's sizing)"
    assert "As vLLM sizes them" in page.inner_text("#concurrency-note")
    # The exact ideal: its own budget and its own label.
    page.select_option("#engine", "exact")
    page.wait_for_function("kvcalcCharts['chart-memory'].series.some(s => s.label === 'KV budget per GPU')")
    assert page.evaluate("kvcalcCharts['chart-concurrency'].axes[1].label") == "requests (exact ideal)"
    assert page.inner_text("#concurrency-note") == ""
