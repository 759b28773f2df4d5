"""From the source's formula, on the page (issue 23 point 7): the textbook arithmetic the seeds use,
with the inputs on screen, and each difference from its answer to ours, the same as the engine's
`source_formula` for the page's own link, arriving at the figure the summary shows."""

from kvcalc.reports.link import evaluate_link
from kvcalc.reports.source_formula import source_formula, texts

from pagekit import metrics, open_page, settle, url_of, open_folds

LLAMA_VLLM = "#model=meta-llama/Llama-3.1-8B&gpu=h100-sxm-80gb&engine=vllm"
DEEPSEEK_TP8 = "#model=deepseek-ai/DeepSeek-V3&gpu=h200-141gb&gpus=8&tp=8"


def expected(page, unit: str = "gib") -> dict:
    evaluation, ignored = evaluate_link(url_of(page).partition("#")[2])
    assert evaluation.ok and not ignored
    return texts(source_formula(evaluation.scenario, evaluation), unit)


def shown_rows(page) -> list:
    settle(page)
    return page.evaluate("""() => [...document.querySelectorAll('#source-table tbody tr')].map(tr => ({
        key: tr.className, cells: [...tr.children].map(c => c.textContent),
        requests: tr.lastElementChild.dataset.value}))""")


def test_the_source_beside_vllm_for_llama_8b(page, site):
    open_page(page, site + LLAMA_VLLM)
    open_folds(page, "arithmetic", "source")
    want = expected(page)
    rows = shown_rows(page)
    assert [row["key"] for row in rows] == [row["key"] for row in want["rows"]]
    assert [row["requests"] for row in rows] == [row["requests_value"] for row in want["rows"]]
    assert rows[0]["key"] == "source-answer" and rows[0]["requests"] == "64"      # 64.69 GiB / 1 GiB
    assert rows[-1]["key"] == "source-ours"
    assert rows[-1]["requests"] == metrics(page)["max_concurrency"]            # the chain ends at the summary's
    utilization = next(row for row in rows if row["key"] == "source-utilization")
    assert utilization["cells"][3].endswith("-7 requests") and "0.92" in utilization["cells"][2]
    assert page.inner_text("#source-summary") == want["summary"]
    lines = page.evaluate("[...document.querySelectorAll('#source-lines li')].map(li => li.textContent)")
    assert lines == want["formula"]
    assert lines[0] == "KV per token = 2 x 32 layers x 8 KV heads x 128 head dim x 2 B (bf16) = 131,072 B"
    assert page.is_visible("#source-table")


def test_mla_says_the_textbook_does_not_apply(page, site):
    open_page(page, site + DEEPSEEK_TP8)
    open_folds(page, "arithmetic", "source")
    want = expected(page)
    rows = shown_rows(page)
    first = page.inner_text("#source-lines li:first-child")
    assert "does not apply" in first and "MLA" in first
    assert not any(line.startswith("KV per token = 2 x") for line in want["formula"])
    assert "source-replication" in [row["key"] for row in rows]
    assert rows[-1]["requests"] == metrics(page)["max_concurrency"] == want["rows"][-1]["requests_value"]


def test_it_follows_the_unit_and_the_engine(page, site):
    open_page(page, site + LLAMA_VLLM)
    open_folds(page, "arithmetic", "source")
    settle(page)
    page.check("input[name=unit][value=gb]")
    page.wait_for_function("document.querySelector('#source-lines li:nth-child(2)').textContent.endsWith('GB')")
    settle(page)
    assert page.inner_text("#source-lines li:nth-child(2)") == expected(page, "gb")["formula"][1]
    page.select_option("#engine", "sglang")
    page.wait_for_function("document.querySelector('#source-table tbody tr:last-child th')"
                           ".textContent.includes('SGLang')")
    rows = shown_rows(page)
    assert rows[-1]["requests"] == metrics(page)["max_concurrency"]
    assert [row["requests"] for row in rows] == [row["requests_value"] for row in expected(page, "gb")["rows"]]
