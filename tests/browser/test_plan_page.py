"""What do I need? on the page (issue 25): the section's table is the engine's plan for the inputs
on screen (each row as kvcalc.planning.plan.plan gives it here, in the test's own Python), a row chosen
is applied and the single view then shows exactly its figures, prices give $/hour, a bad plan
input is said beside its field and the last plan stays, the chart draws one line per GPU type
drawn, the link carries the plan's inputs, and a verdict that does not fit names the plan's best
row. The page starts without the planner. Every wait is for a condition."""

import json
from fractions import Fraction
from urllib.parse import unquote

from kvcalc.planning import plan
from kvcalc.planning.ask import ask_from
from kvcalc.reports.link import encode, evaluate_link
from kvcalc.reports.report import to_json

from pagekit import metrics, open_page, settle, url_of, open_folds
from test_a11y import run_axe

LLAMA_70B = "#model=meta-llama%2FLlama-3.1-70B&context=8192&batch=64&engine=vllm"
DEEPSEEK = "#model=deepseek-ai%2FDeepSeek-V3&context=131072&engine=vllm&gpu=h100-sxm-80gb&gpus=8"
DONE = "document.getElementById('plan').dataset.state === 'done'"
ROWS = "#plan-table tbody tr"


def planned(page) -> None:
    """The section opened and brought on screen (it plans from then on) and its plan finished."""
    open_folds(page, "plan")
    page.locator("#plan").scroll_into_view_if_needed()
    wait_plan(page)


def wait_plan(page) -> None:
    settle(page)
    page.wait_for_function(DONE, timeout=60_000)


def shown_rows(page) -> list[dict]:
    return page.eval_on_selector_all(ROWS, "rows => rows.map(r => ({...r.dataset, text: r.innerText}))")


def values_of(page) -> dict:
    """The typed inputs of the page's own link, as the CLI reads them."""
    evaluation, ignored = evaluate_link(unquote(url_of(page).split("#", 1)[1]))
    assert evaluation.ok and not ignored, (evaluation.errors, ignored)
    return evaluation.values


def expected(row) -> dict:
    return {"gpu": row.gpu, "gpus": str(row.gpus), "tp": str(row.layout.tp), "pp": str(row.layout.pp),
            "dp": str(row.layout.dp), "requests": "" if row.max_concurrency is None else str(row.max_concurrency)}


def same_rows(page, values) -> list:
    rows = plan.plan(values).rows
    shown = shown_rows(page)
    assert [{k: r[k] for k in ("gpu", "gpus", "tp", "pp", "dp", "requests")} for r in shown] == \
        [expected(row) for row in rows]
    return list(rows)


def test_the_table_is_the_engines_plan_and_a_row_chosen_is_the_single_view(page, site):
    recorder = open_page(page, site + LLAMA_70B)
    assert page.get_attribute("#plan", "data-state") == "idle"      # nothing planned while it is closed
    planned(page)
    rows = same_rows(page, values_of(page))
    assert len(rows) > 10 and page.inner_text("#plan-caption").startswith("The smallest deployment")
    assert f"Fewest GPUs: {plan.plan(values_of(page)).fewest.words()}." in page.inner_text("#plan-status")
    # A row with pipeline stages, chosen by its Use button.
    index, row = next((i, r) for i, r in enumerate(rows) if r.fits and r.layout.pp > 1)
    page.locator(f"{ROWS} >> nth={index}").locator("button.use").click()
    wait_plan(page)
    assert page.input_value("#gpu") == row.gpu and page.input_value("#gpus") == str(row.gpus)
    assert page.input_value("#pp") == str(row.layout.pp) and page.input_value("#tp") == ""
    shown = metrics(page)
    evaluation, _ = evaluate_link(unquote(url_of(page).split("#", 1)[1]))
    assert evaluation.capacity == row.max_concurrency
    assert shown["max_concurrency"] == str(to_json(evaluation.scenario, evaluation)["max_concurrency"])
    assert to_json(evaluation.scenario, evaluation)["max_context"] == row.max_context_tokens
    assert page.get_attribute("[data-metric=verdict]", "data-value") == "true"
    # The applied row is marked as the inputs on screen; the plan itself is unchanged.
    assert page.eval_on_selector_all(f"{ROWS}.current", "rows => rows.map(r => r.dataset.row)") == [str(index)]
    same_rows(page, values_of(page))
    assert recorder.problems == []


# Issue 41's workload: Qwen3-235B-A22B at 10 requests/s, 1,024 output tokens each, with the user's
# prices by family name, over four GPU types (the CLI's test, tests/planning/test_cheapest.py,
# plans every preset): fewest GPUs 4 x MI355X (unpriced), cheapest 8 x MI300X at 8 x 2.20 = $17.60
# an hour, the least of the priced rows that fit (8 x H200 $28.00, 16 x H100 $39.84); all serve
# 10 x 1,024 tokens/s, so $17.60 / 36.864 M tokens an hour = $0.477 per million served. Sorted by
# the $/M tokens column (each row's lower bound over its decode bound), it is first too.
QWEN_PRICED = "#" + encode({"model": "Qwen/Qwen3-235B-A22B", "engine": "vllm", "rate": "10", "output-tokens": "1024",
                            "plan-gpus": "h100-sxm-80gb,h200-141gb,mi300x-192gb,mi355x-288gb",
                            "prices": "H100:2.49,H200:3.5,MI300X:2.2"})


def test_the_cheapest_and_the_fewest_are_marked_and_any_column_sorts_by_keyboard(page, site):
    open_page(page, site + QWEN_PRICED)
    planned(page)
    values = values_of(page)
    rows = same_rows(page, values)
    result = plan.plan(values)
    cheapest, fewest = rows.index(result.cheapest), rows.index(result.fewest)
    assert (result.cheapest.gpu, result.cheapest.gpus, result.cheapest.usd_per_hour) == ("mi300x-192gb", 8, Fraction("17.6"))
    assert (result.fewest.gpu, result.fewest.gpus) == ("mi355x-288gb", 4)
    marked = page.eval_on_selector_all(ROWS, "rows => rows.map(r => [r.dataset.row, r.dataset.cheapest || '', "
                                             "r.dataset.fewest || '', (r.querySelector('th .sub') || {}).textContent || ''])")
    assert [m for m in marked if m[1] or m[2]] == [[str(fewest), "", "true", "fewest GPUs"],
                                                   [str(cheapest), "true", "", "cheapest"]]
    status = page.inner_text("#plan-status")
    assert f"Fewest GPUs: {result.fewest.words()}." in status
    assert f"Cheapest: {result.cheapest.words()} at $0.477/M tokens served ($17.60/hour)." in status
    # The needs column is each row's concurrency by Little's law, as the CLI's "needs".
    needs = page.eval_on_selector_all(ROWS, "rows => rows.map(r => r.children[3].textContent)")
    assert needs == [f"{row.batch:,}" for row in rows]
    # $/M tokens, by the keyboard: ascending puts the cheapest first, the unpriced rows last.
    header = page.locator("#plan-table thead button.sort[data-sort='8']")
    header.focus()
    page.keyboard.press("Enter")
    page.wait_for_function("document.querySelector('#plan-table thead th[aria-sort]')")
    order = page.eval_on_selector_all(ROWS, "rows => rows.map(r => r.dataset.row)")
    assert order[0] == str(cheapest) and sorted(order) == sorted(str(i) for i in range(len(rows)))
    priced = [rows[int(i)].usd_per_million_tokens for i in order if rows[int(i)].usd_per_million_tokens is not None]
    assert priced == sorted(priced) and all(rows[int(i)].usd_per_million_tokens is None for i in order[len(priced):])
    assert page.get_attribute("#plan-table thead th:nth-child(9)", "aria-sort") == "ascending"
    page.keyboard.press(" ")
    page.wait_for_function("document.querySelector('#plan-table thead th[aria-sort=descending]')")
    order = page.eval_on_selector_all(ROWS, "rows => rows.map(r => r.dataset.row)")
    assert [rows[int(i)].usd_per_million_tokens for i in order[:len(priced)]] == sorted(priced, reverse=True)
    # A third press gives the plan's own order back; a row chosen from a sorted table is that row.
    page.keyboard.press("Enter")
    page.wait_for_function("!document.querySelector('#plan-table thead th[aria-sort]')")
    assert page.eval_on_selector_all(ROWS, "rows => rows.map(r => r.dataset.row)") == [str(i) for i in
                                                                                       range(len(rows))]
    page.locator("#plan-table thead button.sort[data-sort='4']").click()      # requests that fit, ascending
    page.wait_for_function("document.querySelector('#plan-table thead th[aria-sort]')")
    page.locator(f'{ROWS}[data-row="{cheapest}"]').locator("button.use").click()
    wait_plan(page)
    assert page.input_value("#gpu") == "mi300x-192gb" and page.input_value("#gpus") == "8"
    assert page.get_attribute("#plan-table thead th:nth-child(5)", "aria-sort") == "ascending"   # kept on re-render
    violations = run_axe(page, site)
    assert violations == [], violations


def test_enter_on_a_rows_button_applies_it(page, site):
    open_page(page, site + LLAMA_70B)
    planned(page)
    rows = same_rows(page, values_of(page))
    button = page.locator(f"{ROWS} >> nth=2").locator("button.use")
    button.focus()
    page.keyboard.press("Enter")
    wait_plan(page)
    assert page.input_value("#gpu") == rows[2].gpu and page.input_value("#gpus") == str(rows[2].gpus)
    assert metrics(page)["max_concurrency"] == str(rows[2].max_concurrency)


def test_prices_give_dollars_per_hour_and_a_bad_one_keeps_the_plan(page, site):
    open_page(page, site + LLAMA_70B)
    open_folds(page, "plan")
    planned(page)
    page.fill("#prices", "h100-sxm-80gb=2.5, h200-141gb=3.5")
    page.wait_for_function("document.querySelector('#plan-table tr[data-gpu=\"h100-sxm-80gb\"][data-usd-per-hour]')")
    wait_plan(page)
    rows = same_rows(page, values_of(page))
    for gpu, price in (("h100-sxm-80gb", 2.5), ("h200-141gb", 3.5)):
        row = next(r for r in rows if r.gpu == gpu)
        cell = page.locator(f'#plan-table tr[data-gpu="{gpu}"]')
        assert float(cell.get_attribute("data-usd-per-hour")) == price * row.gpus == float(row.usd_per_hour)
        assert f"${price * row.gpus:,.2f}" in cell.inner_text()
    assert page.is_visible('#plan-table th.price')
    before = shown_rows(page)
    link = url_of(page)
    for bad in ("h100-sxm-80gb=-3", "no-such-gpu=2"):
        page.fill("#prices", bad)
        page.wait_for_function("document.getElementById('error-prices').textContent !== ''")
        settle(page)
        assert page.get_attribute("#prices", "aria-invalid") == "true"
        assert page.get_attribute("#plan", "data-state") == "done" and shown_rows(page) == before
        assert url_of(page) == link         # the link keeps the last valid prices
        said = page.inner_text("#error-prices")
        assert "\n" not in said.strip() and "kvcalc" not in said          # one line, in the page's words
    assert said == "unknown GPU 'no-such-gpu'; the GPU menu lists the presets (e.g. h100-sxm-80gb, h200-141gb, " \
                   "mi300x-192gb)"
    page.fill("#prices", "")
    wait_plan(page)
    assert page.inner_text("#error-prices") == "" and page.get_attribute("#prices", "aria-invalid") is None
    page.wait_for_function("!document.querySelector('#plan-table tr[data-usd-per-hour]')")
    assert page.is_hidden('#plan-table th.price')


def test_a_rate_without_output_tokens_is_said_beside_the_field(page, site):
    open_page(page, site + LLAMA_70B)
    open_folds(page, "plan")
    planned(page)
    before = shown_rows(page)
    page.fill("#rate", "2")
    page.wait_for_function("document.getElementById('plan').dataset.state === 'refused'")
    said = page.inner_text("#error-output-tokens")
    assert "needs the tokens each request generates (“Output tokens per request”)" in said
    assert page.inner_text("#plan-status").startswith("Not planned: Output tokens per request:")
    assert page.get_attribute("#output-tokens", "aria-invalid") == "true" and shown_rows(page) == before
    page.fill("#output-tokens", "512")
    wait_plan(page)
    assert page.inner_text("#error-output-tokens") == ""
    rows = same_rows(page, values_of(page))
    assert any("Little's law" in note for note in plan.plan(values_of(page)).notes)
    # With a rate, a row applied holds the concurrency Little's law gives it.
    page.locator(f"{ROWS} >> nth=0").locator("button.use").click()
    wait_plan(page)
    assert page.input_value("#batch") == str(rows[0].batch)
    assert metrics(page)["max_concurrency"] == str(rows[0].max_concurrency)


def test_the_chart_draws_one_line_per_gpu_type_drawn(page, site):
    open_page(page, site + LLAMA_70B)
    open_folds(page, "plan")
    planned(page)
    rows = plan.plan(values_of(page)).rows
    drawn = list(dict.fromkeys([r.gpu_name for r in rows if r.fits] + [r.gpu_name for r in rows]))[:6]
    page.wait_for_function("window.kvcalcCharts && kvcalcCharts['chart-plan']")
    labels = page.evaluate("kvcalcCharts['chart-plan'].series.slice(1).map(s => s.label)")
    assert labels == drawn
    note = page.inner_text("#plan-chart-note")
    assert all(name in note for name in drawn) and "of 32 planned" in note
    exact = json.loads(page.evaluate("kvcalcChartExact('chart-plan')"))
    ask = ask_from(values_of(page))
    first = next(r.gpu for r in rows if r.gpu_name == drawn[0])
    assert [v for _, v in plan.curve(ask, first)] == exact[0][1]
    # Two GPU types named: both drawn, whatever fits.
    page.fill("#plan-gpus", "h100-sxm-80gb, t4-16gb")
    page.wait_for_function("kvcalcCharts['chart-plan'].series.length === 3")
    wait_plan(page)
    assert len(shown_rows(page)) == 2


def test_the_link_carries_the_plan_and_every_deployment_on_demand(page, site, context):
    open_page(page, site + LLAMA_70B)
    open_folds(page, "plan")
    planned(page)
    page.fill("#plan-gpus", "h100-sxm-80gb,h200-141gb,l40s-48gb")
    page.fill("#plan-max-gpus", "16")
    page.fill("#prices", "h100-sxm-80gb=2.49")
    wait_plan(page)
    values = values_of(page)
    assert values["plan-gpus"] == ("h100-sxm-80gb", "h200-141gb", "l40s-48gb") and values["plan-max-gpus"] == 16
    rows = same_rows(page, values)
    assert len(rows) == 3
    other = context.new_page()
    open_page(other, url_of(page))
    assert other.input_value("#plan-gpus") == "h100-sxm-80gb,h200-141gb,l40s-48gb"
    assert other.get_attribute("#plan", "data-state") != "idle"      # a link with plan inputs plans at once
    planned(other)
    assert shown_rows(other) == shown_rows(page)
    # The whole table: every count and layout tried, the same slices with everything.
    other.click("#plan-everything")
    other.wait_for_function("document.getElementById('plan-everything').getAttribute('aria-pressed') === 'true'")
    other.wait_for_function(f"document.querySelectorAll('{ROWS}').length > 3")
    wait_plan(other)
    everything = plan.plan(values, everything=True).rows
    assert [{k: r[k] for k in ("gpu", "gpus", "tp", "pp", "dp", "requests")} for r in shown_rows(other)] == \
        [expected(row) for row in everything]
    assert other.inner_text("#plan-caption").startswith("Every deployment")
    other.close()


def test_a_verdict_that_does_not_fit_names_the_plans_best_row(page, site):
    open_page(page, site + DEEPSEEK)
    open_folds(page, "plan")
    assert page.get_attribute("[data-metric=verdict]", "data-value") == "false"
    # Planned without scrolling: the verdict needs it.
    page.wait_for_function(DONE, timeout=60_000)
    values = values_of(page)
    planned = plan.plan(values)
    best = planned.best
    assert best is not None
    page.wait_for_function("!document.getElementById('plan-best').hidden")
    # The user's own GPU type first (16 x H100, tp 8, pp 2), then the fewest GPUs of any type.
    own = next(row for row in planned.rows if row.fits and row.gpu == values["gpu"])
    assert (own.gpus, own.layout.pp) == (16, 2)
    assert page.inner_text("#plan-best-text") == f"What you need: {own.words()}; fewest GPUs: {best.words()}."
    # Chosen, it fits, and the pointer goes.
    page.locator(f'{ROWS}[data-gpu="{best.gpu}"][data-gpus="{best.gpus}"]').first.click()
    wait_plan(page)
    assert page.get_attribute("[data-metric=verdict]", "data-value") == "true"
    assert page.is_hidden("#plan-best")
    assert metrics(page)["max_concurrency"] == str(best.max_concurrency)


def test_the_page_starts_without_the_planner_and_the_section_passes_axe(page, site):
    open_page(page, site)
    loaded = page.evaluate("""async () => {
        const early = await import(new URL('static/early.mjs', location.href).href);
        const py = await early.loadPyodide();
        return py.runPython("import sys, json; "
            + "json.dumps([m for m in ('kvcalc.planning.plan', 'kvcalc.planning.ask', 'kvcalc.planning.rows', 'web.plan_view') if m in sys.modules])");
    }""")
    assert json.loads(loaded) == []
    open_folds(page, "plan")
    planned(page)
    assert page.get_attribute("#plan-table", "data-priced") == "false"
    violations = run_axe(page, site)
    assert violations == [], violations
