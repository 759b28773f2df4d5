"""Size as an engine, on the page: the engine's figures and start-up lines beside the ideal,
the same as `kvcalc --engine`, and a KV memory pasted from a real log reproducing its figures."""

from kvcalc.reports.link import evaluate_link
from kvcalc.reports.report import to_json

from pagekit import metrics, open_page, settle, url_of, open_folds

LLAMA_H100 = "#model=meta-llama/Llama-3.1-8B&gpu=h100-sxm-80gb&memory-utilization=0.9"


def engine_json(page) -> dict:
    evaluation, ignored = evaluate_link(url_of(page).partition("#")[2])
    assert evaluation.ok and not ignored
    return to_json(evaluation.scenario, evaluation)


def test_choosing_vllm_shows_what_it_will_print(page, site):
    open_page(page, site + LLAMA_H100)
    assert page.is_hidden("#engine-view")
    page.select_option("#engine", "vllm")
    settle(page)
    open_folds(page, "why")
    expected = engine_json(page)
    assert expected["engine"] == "vllm" and "engine=vllm" in page.url
    assert page.is_visible("#engine-view")
    assert page.inner_text("#engine-log").splitlines() == expected["engine_log"]
    shown = metrics(page)
    assert shown["engine_kv_tokens"] == str(expected["engine_kv_tokens"])
    assert shown["max_concurrency"] == str(expected["max_concurrency"])       # the summary follows the engine
    assert "vLLM" in page.inner_text("#conditions")
    assert "estimate" in page.inner_text("#engine-why") and "exact ideal fits" in page.inner_text("#engine-why")
    # The verdict, first in the summary, is the engine's.
    assert shown["verdict"] == "true" and page.inner_text('[data-metric="verdict"]') == expected["verdict"]
    assert expected["verdict"].startswith("Fits as vLLM allocates: 1 request of 8,192 tokens (up to ")


def test_kv_memory_from_a_real_log_reproduces_its_figures(page, site):
    # tests/fixtures/logs/vllm-qwen3-coder-30b-a3b-tp8-24gb-ampere.log: 12.22 GiB -> 534,064 tokens, 2.04x.
    open_page(page, site + "#model=Qwen/Qwen3-30B-A3B&tp=8&context=262144&engine=vllm&kv-memory-gib=12.22")
    open_folds(page, "why")
    settle(page)
    assert page.evaluate("document.getElementById('advanced').open")
    log = page.inner_text("#engine-log")
    assert "Maximum concurrency for 262,144 tokens per request: 2.04x" in log
    low, high = engine_json(page)["engine_kv_tokens_range"]
    assert low <= 534_064 <= high and f"between {low:,} and {high:,}" in page.inner_text("#engine-why")


def test_bad_engine_inputs_say_which_field(page, site):
    open_page(page, site + LLAMA_H100 + "&engine=vllm")
    before = metrics(page)
    page.evaluate("document.getElementById('advanced').open = true")     # the link's 0.9 may have opened it
    page.fill("#kv-memory-gib", "-3")
    assert page.inner_text("#error-kv-memory-gib") and page.get_attribute("#summary", "data-stale") == "true"
    assert metrics(page) == before
    page.fill("#kv-memory-gib", "")
    page.select_option("#kv-dtype", "q8_0")
    assert "vllm cannot store" in page.inner_text("#error-kv-dtype")
    page.select_option("#kv-dtype", "fp8")
    assert page.get_attribute("#summary", "data-stale") == "false"


def test_refusal_is_said_with_vllms_own_words(page, site):
    open_page(page, site + "#model=openai/gpt-oss-120b&context=131072&engine=vllm&prefill-chunk=1024"
                           "&gpu=h100-sxm-80gb&kv-memory-gib=1.71&engine-version=0.11.0")    # the log's inferred release
    settle(page)
    assert "4.54 GiB KV cache is needed" in page.inner_text("#engine-log")
    assert metrics(page)["engine_starts"] == "false" and metrics(page)["max_concurrency"] == "0"


def test_the_engine_release_beside_size_as(page, site):
    """Issue 22: the page names the release it sizes as (the newest modelled unless given), takes
    the release a user runs, and keeps the previous one's figures when the text is not a release."""
    open_page(page, site + LLAMA_H100 + "&engine=vllm")
    open_folds(page, "why")
    assert page.inner_text("#engine-title") == "vLLM 0.33.0"
    assert "newest release modelled" in page.inner_text("#engine-why")
    page.fill("#engine-version", "v0.19.1")
    settle(page)
    assert "engine-version=v0.19.1" in page.url and page.inner_text("#engine-title") == "vLLM v0.19.1"
    expected = engine_json(page)
    assert metrics(page)["engine_kv_tokens"] == str(expected["engine_kv_tokens"])
    before = metrics(page)
    page.fill("#engine-version", "0.99.0")
    assert "vLLM releases modelled: 0.6.4 to 0.33.0" in page.inner_text("#error-engine-version")
    assert page.get_attribute("#summary", "data-stale") == "true" and metrics(page) == before


def test_llamacpp_tensor_split_field_moves_the_busiest_gpus_cache(page, site):
    # tests/fixtures/logs/llamacpp-qwen25-coder-32b-q8kv-2gpu-b4462.log: -ts 10,6 puts 41 of Qwen2.5-32B's
    # 64 layers on CUDA0, 2,788.00 MiB of q8_0 KV at 32,768 cells (an even split: 33 layers, 2,244 MiB).
    open_page(page, site + "#model=Qwen/Qwen2.5-32B&gpu=rtx-3090-24gb&gpus=2&context=32768&engine=llama.cpp"
                           "&engine-version=b4462&kv-dtype=q8_0&weights-dtype=q8_0")
    open_folds(page, "why")
    settle(page)
    why = page.inner_text("#engine-why")
    assert "by each GPU's free memory" in why and "GPU 0: 33 layers" in why
    page.evaluate("document.getElementById('advanced').open = true")
    page.fill("#tensor-split", "10,6")
    settle(page)
    assert "tensor-split=10" in page.url
    evaluation, ignored = evaluate_link(url_of(page).partition("#")[2])
    assert evaluation.ok and not ignored
    assert evaluation.engine.kv_bytes_on_busiest_gpu == 2788 << 20
    assert "GPU 0: 41 layers" in page.inner_text("#engine-why") and "-ts 10,6" in page.inner_text("#engine-why")
    page.fill("#tensor-split", "10,6,4")
    assert "3 proportions for 2 GPUs" in page.inner_text("#error-tensor-split")


def test_per_layer_kv_dtypes_and_the_hybrid_manager_on_the_page(page, site):
    """TurboQuant keeps Llama 3.1 8B's first and last two layers in bf16 (engines/vllm/kv_layers.py): the page
    shows the CLI's figures and the kept layers; a skip list naming a layer the model lacks is said beside its
    field and the answer stays; the hybrid manager off makes Gemma 3's sliding layers full."""
    open_page(page, site + LLAMA_H100 + "&engine=vllm&kv-dtype=turboquant_k8v4")
    settle(page)
    expected = engine_json(page)
    assert page.inner_text("#engine-log").splitlines() == expected["engine_log"]
    assert "Setting attention block size to 32 tokens" in page.inner_text("#engine-log")
    assert metrics(page)["engine_kv_tokens"] == str(expected["engine_kv_tokens"])
    before = metrics(page)
    page.evaluate("document.getElementById('advanced').open = true")
    page.fill("#kv-dtype-skip-layers", "40")
    assert "layers 0 to 31" in page.inner_text("#error-kv-dtype-skip-layers")
    assert page.get_attribute("#summary", "data-stale") == "true" and metrics(page) == before
    page.fill("#kv-dtype-skip-layers", "2")
    page.wait_for_function("location.hash.includes('kv-dtype-skip-layers=2')")     # the link follows the edit
    assert page.get_attribute("#summary", "data-stale") == "false"
    assert engine_json(page)["engine_kv_tokens"] != expected["engine_kv_tokens"]
    open_page(page, site + "#model=google/gemma-3-27b-it&gpu=h100-sxm-80gb&context=32768&engine=vllm"
                           "&kv-memory-gib=20&hybrid-kv-cache-manager=off")
    settle(page)
    assert page.inner_text("#engine-log").startswith("Hybrid KV cache manager is disabled for this hybrid model")
    assert "GPU KV cache size: 42,272 tokens" in page.inner_text("#engine-log")
