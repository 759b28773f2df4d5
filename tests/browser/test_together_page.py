"""Several models on these GPUs, on the page (issue 41): the section's table, joint verdict and
launch commands are kvcalc.reports.colocation's for the inputs on screen, computed here in the
test's own Python; a refusal (shares past 1) is said in the section's status line naming the
server, and the last table stays. Every wait is for a condition.

The worked example is the CLI's (tests/reports/test_colocation.py): Llama 3.1 8B Instruct and
Qwen3 14B at 0.45 each on one H100 SXM 80GB, vLLM, 8,192 tokens x 16 requests. Each share is
ceil(85,061,827,297 B x 0.45) = 38,277,822,284 B plus a CUDA context of 268,435,456 B: 71.80 GiB
held of 79.22 GiB, so they fit together; the 8B's cache holds 19 requests, the 14B's 5 of 16.
"""

from urllib.parse import unquote

from kvcalc.inputs.options import server_sets
from kvcalc.reports.colocation import colocate
from kvcalc.reports.link import encode, evaluate_link

from pagekit import fill_shown, open_folds, open_page, settle, url_of
from test_a11y import run_axe

TWO = "#" + encode({"model": "meta-llama/Llama-3.1-8B-Instruct", "gpu": "h100-sxm-80gb", "engine": "vllm",
                    "memory-utilization": "0.45", "context": "8192", "batch": "16",
                    "also": "model:Qwen/Qwen3-14B,memory-utilization:0.45"})
ROWS = "#together-table tbody tr"


def expected(page):
    evaluation, ignored = evaluate_link(unquote(url_of(page).split("#", 1)[1]))
    assert evaluation.ok and not ignored, (evaluation.errors, ignored)
    values = evaluation.values
    return colocate({k: v for k, v in values.items() if k != "also"}, server_sets(values["also"]))


def rows_of(page) -> list[list[str]]:
    return page.eval_on_selector_all(ROWS, "rows => rows.map(r => [...r.children].map(c => c.textContent))")


def test_two_servers_on_one_h100_are_each_sized_and_together(page, site):
    recorder = open_page(page, site + TWO)
    open_folds(page, "together")
    page.wait_for_function("document.getElementById('together').dataset.state === 'done'")
    found = expected(page)
    one, two = found.servers
    rows = rows_of(page)
    assert [row[:2] for row in rows] == [["Server 1: Llama 3.1 8B", "0.45 of the memory, port 8000"],
                                         ["Server 2: Qwen3 14B", "0.45 of the memory, port 8001"]]
    assert [row[3:] for row in rows] == [["19.54 GiB", "19 (16 asked)", "35.90 GiB"],
                                         ["6.72 GiB", "5 (16 asked)", "35.90 GiB"]]
    assert rows[1][2].startswith("Does not fit") and rows[0][2].startswith("Fits")
    assert page.inner_text("#together-status") == found.together.words
    assert "7,969,311,817 B (7.42 GiB) left" in found.together.words
    assert page.inner_text("#together-commands").splitlines() == [one.command, two.command]
    # The Instruct repo as typed (an alias of the Llama 3.1 8B preset), as the CLI serves it.
    assert one.command.startswith("vllm serve meta-llama/Llama-3.1-8B-Instruct ") and one.command.endswith("--port 8000")
    assert page.input_value("#model") == "meta-llama/Llama-3.1-8B-Instruct"
    assert page.input_value("#model-search") == "Llama 3.1 8B"
    assert page.get_attribute("#together-table tbody tr:nth-child(2)", "class") == "short"
    # Shares past 1: one line naming the server and the sum; the last table stays.
    fill_shown(page, "#also", "model:Qwen/Qwen3-14B,memory-utilization:0.6")
    page.wait_for_function("document.getElementById('together').dataset.state === 'refused'")
    said = page.inner_text("#together-status")
    assert said.startswith("Not sized: Other servers on these GPUs: server 2's memory-utilization 0.6") or \
        said.startswith("Not sized:"), said
    assert "0.45 (server 1) + 0.6 (server 2) = 1.05" in said and "\n" not in said
    assert rows_of(page) == rows
    violations = run_axe(page, site)
    assert violations == [], violations
    assert recorder.problems == []


def test_without_other_servers_the_section_says_what_to_type(page, site):
    open_page(page, site + "#model=meta-llama%2FLlama-3.1-8B&gpu=h100-sxm-80gb")
    open_folds(page, "together")
    settle(page)
    assert page.get_attribute("#together", "data-state") == "idle"
    assert page.inner_text("#together-status").startswith("Name the other servers above")
    assert rows_of(page) == []
