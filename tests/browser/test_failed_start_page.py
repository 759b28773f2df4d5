"""A failed start pasted in the log's box (issue 38): the summary says it will not start, why in
the engine's words and ours, and lists the fixes, each with a Use button that writes it into
the form; a configuration that does not start gets the same fixes without a log."""

from pagekit import choose_model, open_page, settle
from support import ROOT
from test_log_page import paste_log

FAILED = ROOT / "tests/fixtures/logs/failed"
FIXES_SHOWN = "!document.getElementById('fixes').hidden && document.querySelectorAll('#fix-list li').length > 0"


def fixes(page) -> list[str]:
    return page.eval_on_selector_all("#fix-list li code", "codes => codes.map(c => c.textContent)")


def test_a_failed_start_with_its_model_gets_its_fixes_and_one_is_used(page, site):
    """Llama 3.1 8B on an RTX 3090 refused at 29,000 tokens (vLLM printed 23,648 in its
    cache): the model chosen, the fixes are sized again; "Use" on --max-model-len writes it."""
    recorder = open_page(page, site)
    text = (FAILED / "vllm/kind1_rtx3090_llama31-8b_maxlen29000.log").read_text()
    paste_log(page, text)
    page.wait_for_function("!document.getElementById('log-reading').hidden")
    choose_model(page, "meta-llama/Llama-3.1-8B")
    page.wait_for_function(FIXES_SHOWN)
    settle(page)
    assert page.inner_text("#failed-start").startswith("vLLM will not start: its KV cache cannot hold one request")
    shown = fixes(page)
    assert shown[0] == "--gpu-memory-utilization 0.93"
    assert "--max-model-len 23648" in shown
    index = shown.index("--max-model-len 23648")
    page.click(f"#fix-list li:nth-child({index + 1}) .use-fix")
    page.wait_for_function("document.getElementById('context').value === '23648'")
    page.wait_for_function("document.getElementById('fixes').hidden")
    settle(page)
    assert page.inner_text('[data-metric="verdict"] .figure').startswith("Fits")
    assert all(url.startswith(site) for url in recorder.requests)
    assert recorder.problems == []


def test_an_error_alone_gives_the_fixes_its_figures_allow(page, site):
    """The Mamba ceiling's one line: no inputs to read, the inputs on screen kept (stale), the
    fix from the blocks it printed."""
    open_page(page, site)
    before = page.input_value("#batch")
    paste_log(page, (FAILED / "vllm/kind4_h100_qwen36-27b-fp8_maxnumseqs1024.log").read_text())
    page.wait_for_function(FIXES_SHOWN)
    assert "will not start" in page.inner_text("#failed-start")
    assert fixes(page) == ["--max-num-seqs 856"]
    assert page.input_value("#batch") == before
    assert page.get_attribute("#summary", "data-stale") == "true"


def test_a_traceback_that_is_not_about_memory_is_said_so(page, site):
    open_page(page, site)
    paste_log(page, "Traceback (most recent call last):\n  File \"serve.py\", line 3\n"
                    "FileNotFoundError: [Errno 2] No such file or directory: '/models/llama'\n")
    page.wait_for_function("document.getElementById('error-summary').textContent.includes('not about memory')")
    assert page.is_hidden("#fixes")


def test_a_configuration_that_does_not_start_lists_fixes_without_a_log(page, site):
    """Llama 3.1 70B in bf16 on one H100: its weights do not fit; tensor parallel does."""
    open_page(page, site + "#model=meta-llama%2FLlama-3.1-70B-Instruct&gpu=h100-sxm&engine=vllm&context=8192")
    page.wait_for_function(FIXES_SHOWN)
    assert all(flag.startswith("--tensor-parallel-size") for flag in fixes(page))
