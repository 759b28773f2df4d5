"""Issue 23 on the page: a fresh page is sized as vLLM; with an engine chosen every section tells
one story (the bar's overhead is the CLI's estimate, the tables follow the engine, SGLang's
longest context is capped); an old link without an engine is the exact ideal; GB reaches the
verdict; on a phone the strip opens to the whole verdict and names the field in error."""

import json
import subprocess
import sys

from kvcalc.reports.link import evaluate_link
from kvcalc.reports.report import to_json

from pagekit import metrics, open_page, settle, url_of, open_folds


def cli_json(*args) -> dict:
    out = subprocess.run([sys.executable, "-m", "kvcalc", "--json", *args], capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def page_json(page) -> dict:
    evaluation, ignored = evaluate_link(url_of(page).partition("#")[2])
    assert evaluation.ok and not ignored
    return to_json(evaluation.scenario, evaluation)


def test_a_fresh_page_shows_what_vllm_will_print(page, site):
    open_page(page, site)
    settle(page)
    assert page.eval_on_selector("#engine", "e => e.value") == "vllm"
    assert "engine=vllm" in url_of(page)                   # links the page writes carry the engine
    expected = cli_json("--model", "meta-llama/Llama-3.1-8B", "--context", "8192", "--gpu", "h100-sxm-80gb",
                        "--engine", "vllm")
    shown = metrics(page)
    assert shown["max_concurrency"] == str(expected["max_concurrency"]) == str(int(expected["engine_max_concurrency"]))
    assert page.inner_text("#engine-log").splitlines() == expected["engine_log"]
    # The bar's overhead is the estimate the CLI gives, and so is the figure.
    assert page.get_attribute("#bar-overhead", "data-bytes") == str(expected["overhead_bytes_per_gpu"])
    assert shown["overhead_bytes_per_gpu"] == str(expected["overhead_bytes_per_gpu"])
    assert shown["activation_bytes_per_gpu"] == str(expected["activation_bytes_per_gpu"])
    assert "vLLM" in page.inner_text("#legend-name-overhead")
    assert shown["max_context"] == str(expected["max_context"])


def test_the_tables_and_commands_follow_the_engine(page, site):
    open_page(page, site + "#model=meta-llama/Llama-3.1-8B&gpu=h100-sxm-80gb&engine=vllm")
    open_folds(page, "designs", "precisions", "takeaway")
    settle(page)
    expected = page_json(page)
    current = page.inner_text("#attention-table tr.current").split("\t")
    assert current[4].strip() == f"{expected['max_concurrency']:,}"     # then why it fits what it fits
    assert current[5] == "131,072 B a token on the most loaded GPU (8 kv heads a layer, on the one GPU)"
    assert "vLLM" in page.inner_text("#attention-table .max-head")
    bf16 = next(row for row in page.inner_text("#precision-table tbody").splitlines() if row.startswith("bf16"))
    assert bf16.split("\t")[-1].strip() == f"{expected['max_concurrency']:,}"
    sglang = cli_json("--model", "meta-llama/Llama-3.1-8B", "--context", "8192", "--gpu", "h100-sxm-80gb",
                      "--engine", "sglang")
    command = page.inner_text("#launch-sglang pre")
    assert f"--max-running-requests {int(sglang['engine_max_concurrency'])}" in command
    # Exact ideal is a choice, and the tables follow it too.
    page.select_option("#engine", "exact")
    settle(page)
    assert "engine=exact" in page.url
    assert "exact ideal" in page.inner_text("#attention-table .max-head")
    assert page.is_hidden("#engine-view")


def test_an_old_link_without_an_engine_is_the_exact_ideal(page, site):
    open_page(page, site + "#model=meta-llama/Llama-3.1-8B&gpu=h100-sxm-80gb&memory-utilization=0.9")
    settle(page)
    assert page.eval_on_selector("#engine", "e => e.value") == "exact"
    assert metrics(page)["max_concurrency"] == "56"           # what every such link has said
    assert page.get_attribute("#bar-overhead", "data-bytes") == "0"


def test_sglang_longest_context_is_capped(page, site):
    open_page(page, site + "#model=deepseek-ai/DeepSeek-V3&context=131072&gpu=h200-141gb&gpus=8&tp=8&kv-dtype=fp8"
                           "&engine=sglang")
    settle(page)
    shown = metrics(page)
    assert shown["engine_max_model_len"] == "131072"          # its --context-length, not the pool's 1.4M
    assert shown["max_context"] == "163840"                   # the model's limit
    assert "8 copies" in page.inner_text('[data-cond="kv_bytes_all_gpus"]')
    assert "prints" not in page.inner_text('[data-label="engine_max_concurrency"]')


def test_gb_reaches_the_verdict(page, site):
    open_page(page, site + "#model=meta-llama/Llama-3.1-8B&gpu=h100-sxm-80gb&engine=exact&batch=80")
    page.check("#unit-gb")
    page.wait_for_function("document.querySelector('.verdict').textContent.includes(' GB')")
    assert "GiB" not in page.inner_text(".verdict")


def test_the_phone_strip_opens_and_names_the_field_in_error(browser, site):
    phone = browser.new_page(viewport={"width": 390, "height": 844})
    open_page(phone, site + "#model=deepseek-ai/DeepSeek-V3&context=131072&gpu=h200-141gb&gpus=8&tp=8&kv-dtype=fp8"
                            "&engine=vllm&batch=64")
    settle(phone)
    verdict = phone.locator("#summary .verdict")
    clamped = verdict.evaluate("e => e.scrollHeight > e.clientHeight + 1")
    assert clamped, "the test needs a verdict longer than the strip's two lines"
    phone.click("#strip-toggle")
    phone.wait_for_function("document.getElementById('summary').dataset.expanded === 'true'")
    assert verdict.evaluate("e => e.scrollHeight <= e.clientHeight + 1")
    assert phone.get_attribute("#strip-toggle", "aria-expanded") == "true"
    phone.click("#strip-toggle")
    phone.wait_for_function("document.getElementById('summary').dataset.expanded === 'false'")
    phone.fill("#context", "-5")
    phone.wait_for_function("!document.getElementById('first-error').hidden")
    assert phone.inner_text("#first-error").startswith("Stale · fix “Context length”")
    assert phone.get_attribute("#first-error", "href") == "#context"
    assert phone.is_visible("#first-error")
    phone.close()
