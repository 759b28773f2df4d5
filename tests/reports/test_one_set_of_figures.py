"""Issue 23: with an engine chosen, every figure that says what fits follows it (the verdict, the
summary, the memory bar, the side tables, the commands, the exports); the exact ideal's own stay
under `exact_ideal`; "exact" names the ideal; each engine speaks in its own words and limits."""

from dataclasses import replace

import pytest

from kvcalc import engines
from kvcalc.engines.result import BudgetSource
from kvcalc.reports import link
from kvcalc.reports.compare import attention_variants, precision_rows
from kvcalc.evaluation import evaluate, sized_as
from kvcalc.serving.launch import launch
from kvcalc.reports.memory_bar import memory_bar
from kvcalc.reports.report import page_texts, to_json
from kvcalc.units import GIB

LLAMA_H100 = {"model": "meta-llama/Llama-3.1-8B", "context": "8192", "gpu": "h100-sxm-80gb"}
DEEPSEEK_8_H200 = {"model": "deepseek-ai/DeepSeek-V3", "context": "131072", "gpu": "h200-141gb", "gpus": "8",
                   "tp": "8", "kv-dtype": "fp8"}


def ok(raw: dict):
    evaluation = evaluate(raw)
    assert evaluation.ok, evaluation.errors
    return evaluation


def engine_holds(scenario, evaluation, context: int) -> bool:
    """The engine's own answer at one context and the KV memory it sized: the batch at once?"""
    out = evaluation.engine
    budget = engines.Budget(out.kv_budget_bytes_per_gpu, out.activation_bytes_per_gpu, out.overhead_bytes_per_gpu,
                            out.budget_source)
    at = replace(scenario, workload=replace(scenario.workload, context_tokens=context))
    e = engines.REGISTRY[out.engine].size(at, out.prefill_chunk, budget, [])
    return bool(e.starts) and e.max_concurrency >= scenario.workload.batch


@pytest.mark.parametrize("engine", ["vllm", "sglang", "llama.cpp"])
def test_the_summary_follows_the_engine(engine):
    ev = ok(dict(LLAMA_H100, batch="64", engine=engine))
    data = to_json(ev.scenario, ev)
    out = ev.engine
    assert data["max_concurrency"] == (int(out.max_concurrency) if out.starts else 0)
    assert data["kv_budget_bytes_per_gpu"] == out.kv_budget_bytes_per_gpu
    # The exact ideal is kept, named, beside: 64.69 GiB of budget and 64 requests at 1 GiB each.
    assert data["exact_ideal"]["max_concurrency"] == 64
    assert data["exact_ideal"]["kv_budget_bytes_per_gpu"] == ev.result.kv_budget_bytes_per_gpu
    assert data["sized_as"].startswith(engines.title(engine))
    # The longest context for the 64 requests is the engine's own: it holds them there, not one
    # token further.
    longest = data["max_context"]
    assert data["max_context_limited_by"] == "memory"
    assert engine_holds(ev.scenario, ev, longest)
    assert not engine_holds(ev.scenario, ev, longest + 1)


def test_vllm_longest_context_for_64_requests_worked_by_hand():
    # vLLM 0.33.0 on an H100 SXM: the KV memory it sizes for 64 requests of Llama 3.1 8B holds
    # num_blocks = memory // (16 tokens x 128 KiB); 64 requests of n tokens take 64 x ceil(n/16)
    # blocks, so the longest n is 16 x floor(num_blocks / 64).
    ev = ok(dict(LLAMA_H100, batch="64", engine="vllm"))
    memory = ev.engine.kv_budget_bytes_per_gpu
    num_blocks = memory // (16 * 131_072)
    assert ev.context_limit == (16 * (num_blocks // 64), "memory")


def test_one_request_reaches_the_models_limit_under_every_engine():
    for engine in ("vllm", "sglang", "llama.cpp"):
        ev = ok(dict(LLAMA_H100, engine=engine))
        assert ev.context_limit == (131_072, "model"), engine


def test_exact_names_the_ideal_and_a_link_without_an_engine_means_it():
    exact = ok(dict(LLAMA_H100, engine="exact"))
    none = ok(dict(LLAMA_H100))
    assert exact.engine is None and to_json(exact.scenario, exact) == to_json(none.scenario, none)
    old_link, _ = link.evaluate_link("model=meta-llama/Llama-3.1-8B&context=8192&gpu=h100-sxm-80gb&memory-utilization=0.9")
    assert old_link.engine is None and old_link.capacity == 56      # as every shared link said
    assert "engine=exact" in link.encode({"engine": "exact", "model": "meta-llama/Llama-3.1-8B"})
    bad = evaluate(dict(LLAMA_H100, engine="tgi"))
    assert bad.errors[0].field == "engine" and "exact (the exact ideal)" in bad.errors[0].message


def test_the_memory_bar_is_the_engines():
    ev = ok(dict(LLAMA_H100, engine="vllm"))
    bar = memory_bar(ev, ev.scenario)
    out = ev.engine
    assert bar["overhead"] == out.overhead_bytes_per_gpu == to_json(ev.scenario, ev)["overhead_bytes_per_gpu"]
    # weights + the pool + the overhead is vLLM's usable memory; the rest is its cap's.
    assert bar["weights"] + bar["kv"] + bar["free"] + bar["overhead"] + bar["reserved"] == bar["total"]
    assert bar["kv"] + bar["free"] == out.kv_budget_bytes_per_gpu
    assert bar["kv"] == out.kv_bytes_per_request      # one request of 8,192 tokens: 512 blocks of 16
    assert "vLLM" in bar["labels"]["overhead"]
    # A KV memory read from a log: the pool is known, the rest is one part, said so.
    logged = ok(dict(LLAMA_H100, engine="vllm", **{"kv-memory-gib": "40"}))
    bar = memory_bar(logged, logged.scenario)
    assert bar["kv"] + bar["free"] == 40 * GIB and "log" in bar["labels"]["overhead"]
    # llama.cpp allocates the cells its sequences need, not all that is left.
    cpp = ok(dict(LLAMA_H100, engine="llama.cpp"))
    bar = memory_bar(cpp, cpp.scenario)
    assert bar["labels"]["free"] == "Free" and bar["free"] > bar["kv"]


def test_the_side_tables_follow_the_engine():
    ev = ok(dict(LLAMA_H100, engine="vllm"))
    current = next(row for row in attention_variants(ev.scenario) if row.current)
    assert current.evaluation.capacity == ev.capacity == 54
    precisions = {row.label: row for row in precision_rows(ev.scenario)}
    assert precisions["bf16"].evaluation.capacity == 54
    assert precisions["q4_0"].evaluation is None and "vllm cannot store" in precisions["q4_0"].refused
    exact = ok(dict(LLAMA_H100, engine="exact"))
    assert next(row for row in attention_variants(exact.scenario) if row.current).evaluation.capacity == 64


def test_each_command_is_sized_by_its_own_engine():
    ev = ok(dict(LLAMA_H100, engine="vllm"))
    sglang = sized_as(ev, "sglang")
    assert sglang.engine.engine == "sglang"
    command = launch(ev.scenario, "sglang", sglang).command
    assert f"--max-running-requests {int(sglang.engine.max_concurrency)}" in command
    assert int(sglang.engine.max_concurrency) != ev.capacity       # not vLLM's count
    # A release given for vLLM is vLLM's alone.
    old = ok(dict(LLAMA_H100, engine="vllm", **{"engine-version": "0.8.5"}))
    assert sized_as(old, "sglang").engine is not None
    assert sized_as(ev, "llama.cpp").engine.engine == "llama.cpp"


def test_sglang_longest_context_is_within_its_context_length_and_the_model():
    # DeepSeek-V3 at 128K on 8 x H200: the pool holds over a million tokens, but SGLang is
    # launched with --context-length 131072 and the model stops at 163,840.
    ev = ok(dict(DEEPSEEK_8_H200, engine="sglang"))
    out = ev.engine
    assert out.kv_tokens > 1_000_000
    assert out.max_model_len == 131_072
    assert ev.context_limit == (163_840, "model")


def test_replicated_latent_is_said_per_gpu_one_copy_and_on_all_gpus():
    ev = ok(dict(DEEPSEEK_8_H200, engine="vllm"))
    texts = page_texts(ev.scenario, ev)
    r = ev.result
    # 61 layers x (512 + 64) x 1 byte = 35,136 B per token; every one of 8 GPUs keeps the latent.
    assert r.kv_bytes_per_token == 35_136
    assert r.kv_bytes_all_gpus == 8 * r.kv_bytes_total == 8 * r.kv_bytes_per_gpu
    assert texts["metrics"]["kv_bytes_all_gpus"][0] == str(r.kv_bytes_all_gpus)
    assert "8 copies" in texts["metric_conditions"]["kv_bytes_all_gpus"]
    assert "one copy" in texts["metric_conditions"]["kv_bytes_total"]


def test_units_reach_the_verdict():
    ev = ok(dict(LLAMA_H100, engine="exact"))
    assert "GB" in to_json(ev.scenario, ev, "gb")["verdict"]
    assert "GiB" not in to_json(ev.scenario, ev, "gb")["verdict"]
    assert "GiB" in to_json(ev.scenario, ev, "gib")["verdict"]


def test_engine_cards_speak_each_engines_words():
    words = {}
    for engine in ("vllm", "sglang", "llama.cpp"):
        ev = ok(dict(LLAMA_H100, engine=engine))
        words[engine] = page_texts(ev.scenario, ev)["engine"]["labels"]["engine_max_concurrency"]
    assert words["vllm"] == "Maximum concurrency it prints"
    assert "prints" not in words["llama.cpp"] and "not printed" in words["sglang"]


def test_overhead_and_activation_are_figures():
    ev = ok(dict(LLAMA_H100, engine="vllm"))
    metrics = page_texts(ev.scenario, ev)["metrics"]
    assert metrics["overhead_bytes_per_gpu"][0] == str(ev.engine.overhead_bytes_per_gpu)
    assert metrics["activation_bytes_per_gpu"][0] == str(ev.engine.activation_bytes_per_gpu)
    exact = ok(dict(LLAMA_H100, engine="exact"))
    assert page_texts(exact.scenario, exact)["metrics"]["activation_bytes_per_gpu"][0] == ""


def test_llama_cpp_over_two_gpus_draws_its_busiest_gpus_share():
    # Llama 3.1 70B at 32K on 2 x H100: llama.cpp splits its 81 slots (80 layers and the output) by
    # the GPUs' equal free memory (load_tensors), 41 layers on the busiest: 41 x 8 x 128 x 2 x 2 B x
    # 32,768 tokens of the 10 GiB cache. The bar draws that GPU's; the exact ideal halves the cache.
    ev = ok({"model": "meta-llama/Llama-3.1-70B", "context": "32768", "gpu": "h100-sxm-80gb", "gpus": "2",
             "engine": "llama.cpp"})
    assert ev.engine.kv_bytes_per_request == 10 * GIB            # one sequence, all GPUs together
    assert memory_bar(ev, ev.scenario)["kv"] == 41 * 8 * 128 * 2 * 2 * 32768 == ev.engine.kv_bytes_on_busiest_gpu
    assert ev.result.kv_bytes_per_gpu == 5 * GIB


def test_a_refusing_engine_names_the_longest_context_the_summary_shows():
    ev = ok({"model": "meta-llama/Llama-3.1-70B", "context": "131072", "gpu": "h100-sxm-80gb", "gpus": "2",
             "engine": "llama.cpp"})
    assert ev.engine.starts is False
    longest = ev.context_limit[0]
    assert f"the longest context it can serve is {longest:,} tokens" in to_json(ev.scenario, ev)["verdict"]
    assert longest < 131_072


def test_an_engine_that_starts_but_holds_no_request_says_so():
    # --mem-fraction-static 0.85: SGLang 0.5.23's own 0.828 at tp 2 leaves less than the weights.
    ev = ok({"model": "meta-llama/Llama-3.1-70B", "context": "131072", "gpu": "h100-sxm-80gb", "gpus": "2",
             "engine": "sglang", "memory-utilization": "0.85"})
    out = ev.engine
    assert out.starts and out.max_concurrency < 1
    verdict = to_json(ev.scenario, ev)["verdict"]
    assert f"SGLang starts, but its KV cache of {out.kv_tokens:,} tokens cannot hold one request" in verdict
    assert "the rest wait" not in verdict


def test_a_log_memory_is_the_engine_sized_as_alone():
    ev = ok(dict(LLAMA_H100, batch="16", engine="vllm", **{"kv-memory-gib": "40"}))
    sglang = sized_as(ev, "sglang")
    assert sglang.engine.budget_source is BudgetSource.ESTIMATE
    assert sglang.engine.kv_budget_bytes_per_gpu != 40 * GIB


def test_vllm_command_names_the_block_it_uses():
    ev = ok(dict(DEEPSEEK_8_H200, engine="exact"))
    notes = launch(ev.scenario, "vllm", sized_as(ev, "vllm")).notes
    assert any("blocks of 64 tokens" in note for note in notes)         # FlashMLA on Hopper


def test_a_start_the_engine_refuses_has_no_longest_context_on_the_page_as_in_the_cli():
    """Qwen3.5-27B on one H100 under vLLM 0.33.0's defaults: max_num_seqs 1,024 over its Mamba cache
    blocks, so vLLM refuses at any context. The page's card said "give the weights" (they were
    known: 54,713,457,120 B); it says what the CLI's Max context row says."""
    evaluation = ok({"model": "Qwen/Qwen3.5-27B", "engine": "vllm", "gpu": "h100-sxm-80gb"})
    assert evaluation.engine.refusal_words and evaluation.result.weights_bytes_per_gpu == 54_713_457_120
    text = page_texts(evaluation.scenario, evaluation)["metrics"]["max_context"][1]
    assert text == "n/a: it does not start at any context (the verdict says why)"
