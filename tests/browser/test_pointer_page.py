"""The page's "What you need" under a verdict that does not fit (plan_report.pointer) speaks only
where the plan sizes the verdict's own question (tests/reports/test_pointer.py for the CLI). A pasted
start-up log's measured KV memory is not the plan's estimate: the pointer is left out with one
clause saying why, never naming the deployment the log shows refusing (the logs are public;
tests/fixtures/logs/SOURCES.md gives each one's URL)."""

from pagekit import open_page, settle, fill_shown
from support import ROOT

LOGS = ROOT / "tests/fixtures/logs"
READ = "!document.getElementById('log-reading').hidden"
SHOWN = "(want) => { const p = document.getElementById('plan-best'); " \
        "return !p.hidden && document.getElementById('plan-best-text').textContent === want; }"


def paste_log(page, name: str) -> None:
    if page.get_attribute("#source-log", "aria-pressed") != "true":
        page.click("#source-log")
    fill_shown(page, "#startup-log", (LOGS / name).read_text())
    page.wait_for_function(READ)
    settle(page)


def pointer_says(page, want: str) -> None:
    """The pointer shows `want` once the page has caught up (the plan runs after the paste)."""
    try:
        page.wait_for_function(SHOWN, arg=want, timeout=60_000, polling=200)
    except Exception:
        shown = page.inner_text("#plan-best-text") if page.is_visible("#plan-best") else "(hidden)"
        assert shown == want
    assert page.get_attribute("[data-metric=verdict]", "data-value") == "false"


def test_a_log_that_shows_vllm_refusing_is_not_answered_with_its_own_deployment(page, site):
    # vLLM refuses gpt-oss-120b at 131,072 tokens with 1.71 GiB of KV cache on one H100; the
    # pointer said "1 x NVIDIA H100 SXM 80GB (tp 1) fits 2 requests".
    open_page(page, site + "#gpu=h100-sxm-80gb")
    paste_log(page, "vllm-gpt-oss-120b-h100-refusal.log")
    pointer_says(page, "What you need is not sized here: the plan sizes from vLLM's estimates, not the measured "
                       "KV memory of 1.71 GiB per GPU.")
    assert page.inner_text("[data-metric=verdict]").startswith("Does not fit: vLLM will not start")


def test_a_log_that_contradicts_the_card_names_no_deployment(page, site):
    # SGLang's 108.24 GiB measured on an H200 cannot be on an H100 beside the weights; the
    # pointer said "1 x NVIDIA H100 SXM 80GB ... fits 54".
    open_page(page, site + "#gpu=h100-sxm-80gb")
    paste_log(page, "sglang-gemma3-4b-it-h200-mfs088-tp1-v0.4.4.log")
    pointer_says(page, "What you need is not sized here: the plan sizes from SGLang's estimates, not the measured "
                       "KV memory of 108.24 GiB per GPU.")
    assert "contradict each other" in page.inner_text("[data-metric=verdict]")


def test_a_measured_kv_memory_beside_a_links_gpu_is_not_sized_by_the_plan(page, site):
    # After a link to 8 x B200, the L4 log's 4.75 GiB holds 1.22 requests of 32,000 tokens; the
    # pointer said "4 x NVIDIA B200 (HGX/DGX) 180GB (tp 4) fits 161 requests".
    open_page(page, site + "#gpu=b200-180gb&gpus=8")
    paste_log(page, "vllm-llama3.1-8b-l4-util092-32k-seqs128-v0.11.0.log")
    pointer_says(page, "What you need is not sized here: the plan sizes from vLLM's estimates, not the measured "
                       "KV memory of 4.75 GiB per GPU.")
    assert "holds 1.22 requests of 32,000 tokens" in page.inner_text("[data-metric=verdict]")


def test_the_pointer_never_names_the_deployment_the_verdict_refuses(page, site):
    # 16 GiB given for an H100: vLLM cannot start Llama 3.1 8B on it; the plan, at the card's own
    # memory, finds 1 x H100 fits 54, which the pointer named. It names the next row instead.
    open_page(page, site + "#model=meta-llama%2FLlama-3.1-8B&gpu=h100-sxm-80gb&gpu-memory-gib=16&engine=vllm")
    pointer_says(page, "What you need: 1 x AMD Instinct MI355X 288GB (tp 1) fits 246 requests.")
