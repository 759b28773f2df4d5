"""Charts, comparison, launch commands and exports on the page, checked against the engine."""

import csv
import io
import json

from kvcalc.evaluation import sized_as
from kvcalc.serving.launch import launch
from kvcalc.reports.link import evaluate_link
from kvcalc.reports.sweep import concurrency_series, context_points, memory_series

from pagekit import choose_model, metrics, open_page, settle, url_of, open_folds

LINK = "#model=meta-llama/Llama-3.1-70B&context=16384&batch=16&gpu=h100-sxm-80gb&gpus=8&memory-utilization=0.9"


def chart_data(page, chart_id):
    """Each line as the charting library holds it (x, y) beside the exact ints behind it."""
    settle(page)
    return page.evaluate("""(id) => {
        const plot = kvcalcCharts[id], exact = JSON.parse(kvcalcChartExact(id));
        return plot.series.slice(1).map((s, i) => ({label: s.label, exact: exact[i][1],
            x: Array.from(plot.data[0]), y: Array.from(plot.data[i + 1])}));
    }""", chart_id)


def scenario_of(url):
    evaluation, _ = evaluate_link(url.partition("#")[2])
    return evaluation


def by_label(page, chart_id):
    """The chart's lines by label, the current one's "(current)" left off."""
    return {d["label"].removesuffix(" (current)"): d for d in chart_data(page, chart_id)}


def test_charts_hold_the_engines_numbers(page, site):
    open_page(page, site + LINK)
    open_folds(page, "charts")
    evaluation = scenario_of(url_of(page))
    contexts = context_points(evaluation.scenario)
    memory = by_label(page, "chart-memory")
    mem = memory_series(evaluation.scenario, contexts, evaluation.result)
    for line in mem["lines"]:
        assert memory[line["label"]]["exact"] == line["bytes"]
        assert memory[line["label"]]["x"] == contexts
        assert memory[line["label"]]["y"] == [v / 2 ** 30 for v in line["bytes"]]
    # The budget as the rules in force size it ("KV budget per GPU", or an engine's KV memory).
    assert mem["budget"]["label"] in memory and "weights per GPU" in memory
    assert memory[mem["budget"]["label"]]["exact"] == mem["budget"]["bytes"]
    requests = by_label(page, "chart-concurrency")
    for line in concurrency_series(evaluation.scenario, contexts, evaluation.result)["lines"]:
        assert requests[line["label"]]["exact"] == line["requests"]
        assert requests[line["label"]]["y"] == [v or None for v in line["requests"]]
    bar = bar_bytes(page)
    assert bar["kv"] == evaluation.result.kv_bytes_per_gpu
    assert bar["weights"] == evaluation.result.weights_bytes_per_gpu
    # Redrawn within the same update as the figures, and in the chosen unit.
    page.fill("#context", "65536")
    page.check("input[name=unit][value=gb]")
    assert bar_bytes(page)["kv"] == int(metrics(page)["kv_bytes_per_gpu"])
    kv = by_label(page, "chart-memory")["GQA"]
    assert kv["y"][kv["x"].index(65536)] == kv["exact"][kv["x"].index(65536)] / 10 ** 9


def bar_bytes(page):
    settle(page)
    return page.evaluate("""() => Object.fromEntries(['weights', 'kv', 'overhead', 'free'].map(k =>
        [k, Number(document.getElementById('bar-' + k).dataset.bytes)]))""")


def test_pins_compare_and_round_trip(page, site, context):
    open_page(page, site + LINK)
    open_folds(page, "compare")
    page.click("#pin")
    page.select_option("#kv-dtype", "fp8")
    page.click("#pin")
    choose_model(page, "Qwen/Qwen3-32B")
    settle(page)
    assert url_of(page).count("pin=") == 2
    headers = page.locator("#compare-table thead th").all_inner_texts()
    assert headers[:2] == ["Figure", "Current"] and headers[2].startswith("Pin 1") and headers[3].startswith("Pin 2")
    row = page.locator("#compare-table tbody tr", has_text="KV per token")
    values = row.locator("td").evaluate_all("tds => tds.map(td => td.dataset.value)")
    # Current: Qwen3-32B with fp8 still chosen; pin 1: Llama 3.1 70B bf16; pin 2: the same in fp8.
    assert values == ["131072", "327680", "163840"]
    assert row.locator("td.differs").count() == 3
    fresh = context.new_page()
    open_page(fresh, url_of(page))
    fresh_values = fresh.locator("#compare-table tbody tr", has_text="KV per token").locator("td") \
        .evaluate_all("tds => tds.map(td => td.dataset.value)")
    assert fresh_values == values
    fresh.click("#compare-table button.unpin >> nth=0")
    settle(fresh)
    assert url_of(fresh).count("pin=") == 1


def test_launch_commands_match_the_engine(page, site):
    for fragment in (LINK, "#model=google/gemma-2-9b&context=8192&batch=4&kv-dtype=q8_0",
                     "#model=deepseek-ai/DeepSeek-V3&context=32768&gpus=8&gpu=h200-141gb&kv-dtype=fp8&block-size=64"):
        open_page(page, site + fragment)
        open_folds(page, "takeaway")
        evaluation = scenario_of(url_of(page))
        for engine in ("vllm", "sglang", "llama.cpp"):
            # Each command is sized by its own engine, whichever the page is sized as.
            expected = launch(evaluation.scenario, engine, sized_as(evaluation, engine))
            box = page.locator(f"[id='launch-{engine}']")
            assert box.locator("pre").inner_text() == (expected.command or "")
            assert box.locator(".notes li").all_inner_texts() == list(expected.notes)


def test_copy_launch_command(page, site, context):
    context.grant_permissions(["clipboard-read", "clipboard-write"])
    open_page(page, site + LINK)
    open_folds(page, "takeaway")
    page.click("button.copy-command[data-engine=vllm]")
    page.wait_for_function("document.getElementById('export-status').textContent === 'Copied.'")
    assert page.evaluate("navigator.clipboard.readText()").startswith("vllm serve meta-llama/Llama-3.1-70B")


def test_exports_parse_back_to_the_same_numbers(page, site):
    open_page(page, site + LINK)
    open_folds(page, "takeaway")
    shown = metrics(page)
    settle(page)
    page.select_option("#export-format", "json")
    data = json.loads(page.inner_text("#export-text"))
    for key in ("kv_bytes_per_token", "kv_bytes_total", "kv_bytes_per_gpu", "max_concurrency", "max_context"):
        assert str(data[key]) == shown[key]
    page.select_option("#export-format", "csv")
    with page.expect_download() as download:
        page.click("#export-download")
    text = open(download.value.path(), encoding="utf-8").read()
    rows = dict(csv.reader(io.StringIO(text)))
    assert rows["kv_bytes_total"] == shown["kv_bytes_total"] and download.value.suggested_filename == "kvcalc.csv"
    page.select_option("#export-format", "markdown")
    table = {line.split("|")[1].strip(): line.split("|")[2].strip() for line in page.inner_text("#export-text").splitlines()[2:]}
    assert table["max_concurrency"] == shown["max_concurrency"]
