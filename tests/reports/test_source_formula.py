"""From the source's formula (issue 23 point 7): the seeds' textbook arithmetic on the inputs given,
reproduced exactly, and the chain of named differences that arrives exactly at our figure."""

import json
import math
from fractions import Fraction

import pytest

from kvcalc import evaluate
from kvcalc.engines.vllm import engine as vllm
from kvcalc.reports.source_formula import json_of, source_formula, texts, to_json

GIB = 1 << 30
H100_SMI, H100_TORCH = 85_520_809_984, 85_061_827_297      # nvidia-smi's and PyTorch's totals (gpus.json)
A100_SMI, A100_TORCH = 85_899_345_920, 85_100_068_864
H200_SMI = 150_754_820_096


def block_of(raw):
    evaluation = evaluate(raw)
    assert not evaluation.errors, evaluation.errors
    return evaluation, source_formula(evaluation.scenario, evaluation)


def steps(block) -> dict:
    return {step.key: step for step in block.steps}


def assert_chain_arrives(block, ours):
    """Each step starts where the last ended, the moves add up, and the last count is ours."""
    assert block.ours == ours
    count = block.source.requests
    for step in block.steps:
        assert step.requests == count + step.change_requests, step
        count = step.requests
    assert count == ours
    assert block.source.requests + sum(step.change_requests for step in block.steps) == ours


# seed 004: "8x A100 80 GB GPUs (640 GB total) ... ~35 GB (int4) ... 2-4 GB ... Available for KV cache:
# 640 - 35 - 4 ≈ 601 GB; maximum concurrent requests at 8K context: 601 / 2.5 ≈ 240". Its "GB" are GiB.
SEED_004 = {"layers": "80", "kv-heads": "8", "head-dim": "128", "kv-dtype": "fp16", "gpus": "8",
            "gpu-memory-gib": "80", "weights-gib": "35", "overhead-gib": "0.5"}


def test_seed_004_source_column_exactly():
    evaluation, block = block_of({**SEED_004, "context": "8192"})
    src = block.source
    assert src.applies and (src.layers, src.kv_heads, src.head_dim) == (80, 8, 128)
    assert src.bytes_per_token == 2 * 80 * 8 * 128 * 2 == 327_680
    assert src.bytes_per_request == Fraction(5, 2) * GIB                 # "2.5 GB per request"
    assert src.memory_bytes == 640 * GIB and src.weights_bytes == 35 * GIB and src.overhead_bytes == 4 * GIB
    assert src.free_bytes == 601 * GIB                                    # "601 GB"
    assert src.requests_exact == Fraction(601 * 2, 5) and src.requests == 240   # "≈ 240"
    assert texts(block, "gib")["formula"] == [
        "KV per token = 2 x 80 layers x 8 KV heads x 128 head dim x 2 B (fp16) = 327,680 B",
        "Per request = 327,680 B x 8,192 tokens = 2.50 GiB",
        "Free = 8 x 80.00 GiB - weights 35.00 GiB - overhead 4.00 GiB = 601.00 GiB",
        "Requests = 601.00 GiB / 2.50 GiB = 240.4 -> about 240",
    ]
    # The same inputs in the exact ideal: nothing differs but the note on the source's "GB".
    assert_chain_arrives(block, 240)
    assert evaluation.result.max_concurrency == 240
    assert [s.key for s in block.steps if s.changes] == []
    units = steps(block)["units"]
    assert units.side == "none" and units.change_requests == 0
    assert "would count 258" in units.why            # 601 GiB in GB (645.3) over 2.5: what mixing them gives
    assert math.floor(Fraction(601 * GIB, 10 ** 9) / Fraction(5, 2)) == 258


@pytest.mark.parametrize("context, requests", [(8192, 240), (32768, 60), (131072, 15)])
def test_seed_004_context_ladder_as_the_source(context, requests):
    _, block = block_of({**SEED_004, "context": str(context)})
    assert block.source.requests == requests == block.ours


def test_seed_004_mha_as_the_source():
    _, block = block_of({**SEED_004, "kv-heads": "64"})        # "With full MHA ... Max concurrent: ~30"
    assert block.source.bytes_per_token == 2_621_440
    assert block.source.requests == 30 == block.ours


def test_seed_004_in_gb_says_the_same_bytes():
    _, block = block_of({**SEED_004, "context": "8192"})
    words = texts(block, "gb")
    assert words["formula"][1] == "Per request = 327,680 B x 8,192 tokens = 2.68 GB"
    assert words["formula"][3] == "Requests = 645.32 GB / 2.68 GB = 240.4 -> about 240"
    units = next(row for row in words["rows"] if row["key"] == "source-units")
    assert units["source"] == '2.50 "GB" per request'
    assert units["here"].startswith("2.50 GiB = 2.68 GB per request")


def test_the_seed_deployment_sized_as_vllm():
    """Llama 3.1 70B, int4 weights, on 8 A100 80GB: the source's formula says 241, vLLM 209, and why.
    (The int4 weights are the linear layers' as vLLM quantizes them, the embeddings and head kept in
    bf16: 39.5 GB, where the seed's round "~35 GB" gives its ~240.)"""
    evaluation, block = block_of({"model": "meta-llama/Llama-3.1-70B", "gpu": "a100-sxm-80gb", "gpus": "8",
                              "weights-dtype": "int4", "engine": "vllm"})
    src = block.source
    assert src.bytes_per_request == Fraction(5, 2) * GIB
    assert src.free_bytes == 8 * A100_SMI - evaluation.result.weights_bytes
    assert src.requests == 241
    by = steps(block)
    usable = math.ceil(A100_TORCH * Fraction(92, 100))        # vLLM 0.14+: ceil(total x utilization)
    assert by["utilization"].source == A100_SMI and by["utilization"].ours == usable
    assert by["utilization"].change_bytes == -8 * (A100_SMI - usable)
    assert by["utilization"].change_requests == -23
    overhead = evaluation.engine.overhead_bytes_per_gpu
    assert by["overhead"].ours == overhead and by["overhead"].change_bytes == -8 * overhead
    assert by["overhead"].change_requests == -9
    assert_chain_arrives(block, 209)
    assert evaluation.capacity == 209
    assert block.ours_label == f"vLLM {vllm.NEWEST_RELEASE}'s rules"


def test_llama_8b_on_one_h100_with_vllm():
    evaluation, block = block_of({"model": "meta-llama/Llama-3.1-8B", "gpu": "h100-sxm-80gb", "engine": "vllm"})
    src = block.source
    assert src.bytes_per_token == 131_072 and src.bytes_per_request == GIB
    assert src.free_bytes == H100_SMI - 16_060_522_496 and src.requests == 64
    by = steps(block)
    usable = math.ceil(H100_TORCH * Fraction(92, 100))
    assert by["utilization"].ours == usable
    assert (by["utilization"].change_bytes, by["utilization"].change_requests) == (usable - H100_SMI, -7)
    assert by["overhead"].change_bytes == -evaluation.engine.overhead_bytes_per_gpu
    assert by["overhead"].change_requests == -3
    # 8,192 tokens are whole 16-token blocks, tp 1 splits nothing: considered, the same.
    assert {"blocks", "bytes per token"} <= set(block.same)
    assert "blocks" not in by and "replication" not in by
    assert_chain_arrives(block, 54)
    assert evaluation.capacity == 54 == int(evaluation.engine.max_concurrency)
    # The last step's free memory is exactly vLLM's KV memory, its request exactly vLLM's reservation.
    last = block.steps[-1]
    assert last.free_bytes == evaluation.engine.kv_budget_bytes_per_gpu
    assert last.request_bytes == evaluation.engine.kv_bytes_per_request
    row = next(row for row in texts(block)["rows"] if row["key"] == "source-utilization")
    assert row["effect"] == "-6.77 GiB, -7 requests" and row["requests_value"] == "57"
    summary = texts(block)["summary"]
    assert summary == (f"The source's arithmetic: 64 requests; here 54 (vLLM {vllm.NEWEST_RELEASE}'s rules): "
                       "memory utilization -7, overhead -3.")


def test_sliding_windows_gemma_3():
    """Gemma 3 27B at 32K: 52 of its 62 layers keep 1,024 tokens; the textbook counts all 32,768."""
    evaluation, block = block_of({"model": "google/gemma-3-27b-it", "gpu": "h100-sxm-80gb", "context": "32768"})
    row = 2 * 16 * 128 * 2
    assert block.source.bytes_per_token == 62 * row and block.source.requests == 1
    windows = steps(block)["windows"]
    assert windows.source == 62 * row * 32768
    assert windows.ours == 10 * row * 32768 + 52 * row * 1024 == evaluation.result.kv_bytes_per_request
    assert windows.change_requests == 8 and "52 of the 62 layers keep only the last 1,024 tokens" in windows.why
    assert_chain_arrives(block, 9)
    assert evaluation.result.max_concurrency == 9


def test_sliding_windows_gemma_3_as_vllm():
    """vLLM reserves window - 1 + the tokens in flight (from 0.26.0 two batches of the prefill chunk under async
    scheduling) plus a block in each sliding layer: named, sized."""
    evaluation, block = block_of({"model": "google/gemma-3-27b-it", "gpu": "h100-sxm-80gb", "context": "32768",
                              "engine": "vllm"})
    by = steps(block)
    assert by["windows"].change_requests > 0
    rules = by["engine_rules"]
    assert rules.ours == evaluation.engine.kv_bytes_per_request
    assert "window - 1 + the tokens in flight (2 concurrent batches x the prefill chunk 8,192 = 16,384)" in rules.why
    assert rules.change_requests < 0
    assert_chain_arrives(block, evaluation.capacity)


def test_sliding_windows_gemma_3_as_sglang():
    """SGLang keeps one pool of whole-context cells for Gemma 3: the windows it gives back, said."""
    evaluation, block = block_of({"model": "google/gemma-3-27b-it", "gpu": "h100-sxm-80gb", "context": "32768",
                              "engine": "sglang"})
    by = steps(block)
    assert by["engine_rules"].change_bytes == -by["windows"].change_bytes
    assert "every token in the sliding-window layers" in by["engine_rules"].why
    assert_chain_arrives(block, evaluation.capacity)


def test_deepseek_v3_mla_says_the_textbook_does_not_apply():
    evaluation, block = block_of({"model": "deepseek-ai/DeepSeek-V3", "gpu": "h200-141gb", "gpus": "8", "tp": "8"})
    src = block.source
    assert not src.applies and src.layers is None and src.kv_heads is None
    assert "all 61 layers are MLA" in src.why_not and "(512 + 64)" in src.why_not
    formula = texts(block)["formula"]
    assert "does not apply" in formula[0]
    assert not any(line.startswith("KV per token = 2 x") for line in formula)   # no wrong textbook figure
    assert src.bytes_per_token == 61 * (512 + 64) * 2 == 70_272
    # The weights: the preset's real config.json's fp8 linear weights and block scales, 673,150,611,808 B.
    assert src.free_bytes == 8 * H200_SMI - 673_150_611_808 and src.requests == 925
    replication = steps(block)["replication"]
    assert replication.ours == 8 * replication.source == 8 * 70_272 * 8192
    assert "MLA latent is kept whole on each of the 8 GPUs" in replication.why
    assert replication.change_requests == -810
    assert_chain_arrives(block, 115)
    assert evaluation.result.max_concurrency == 115


def test_deepseek_v3_as_vllm_arrives():
    evaluation, block = block_of({"model": "deepseek-ai/DeepSeek-V3", "gpu": "h200-141gb", "gpus": "8", "tp": "8",
                              "engine": "vllm"})
    assert not block.source.applies
    assert {"utilization", "overhead", "replication"} <= set(steps(block))
    assert_chain_arrives(block, evaluation.capacity)


def test_tp_above_kv_heads_replicates():
    """Llama 3.1 70B on 16 GPUs: tp 16 over 8 KV heads keeps each head on two GPUs."""
    evaluation, block = block_of({"model": "meta-llama/Llama-3.1-70B", "gpu": "h100-sxm-80gb", "gpus": "16",
                              "tp": "16"})
    assert block.source.requests == 457
    replication = steps(block)["replication"]
    assert (replication.source, replication.ours) == (Fraction(5, 2) * GIB, 5 * GIB)
    assert "tp 16 is more than the 8 KV heads" in replication.why and "2 copies" in replication.why
    assert replication.change_requests == -229
    assert_chain_arrives(block, 228)
    assert evaluation.result.max_concurrency == 228


def test_hybrid_linear_attention_says_so():
    evaluation, block = block_of({"model": "Qwen/Qwen3-Next-80B-A3B-Instruct", "gpu": "h100-sxm-80gb", "gpus": "4"})
    assert not block.source.applies and "fixed state per request" in block.source.why_not
    state = steps(block)["state"]
    assert state.source == 0 and state.ours == evaluation.result.kv_state_bytes_per_request
    assert_chain_arrives(block, evaluation.result.max_concurrency)


def test_blocks_stages_and_a_shared_prefix_in_the_ideal():
    evaluation, block = block_of({"model": "meta-llama/Llama-3.1-8B", "gpu": "h100-sxm-80gb", "gpus": "6", "pp": "3",
                              "tp": "2", "block-size": "16", "prefix-tokens": "1000", "context": "5000"})
    by = steps(block)
    assert by["blocks"].ours == 131_072 * 5008             # 5,000 tokens in 313 blocks of 16
    assert "11 of the 32 layers" in by["stages"].why
    assert by["prefix"].side == "both" and by["prefix"].change_requests > 0
    assert_chain_arrives(block, evaluation.result.max_concurrency)


def test_llama_cpp_holds_the_sequences_asked_for():
    evaluation, block = block_of({"model": "meta-llama/Llama-3.1-8B", "gpu": "h100-sxm-80gb", "engine": "llama.cpp",
                              "batch": "4"})
    count = steps(block)["engine_count"]
    assert count.side == "count" and count.ours == 4 and "-np 4" in count.why
    assert_chain_arrives(block, 4)


def test_past_the_models_limit_is_said():
    _, block = block_of({"model": "meta-llama/Llama-2-7b-hf", "gpu": "h100-sxm-80gb", "context": "8192"})
    limit = steps(block)["limit"]
    assert (limit.source, limit.ours, limit.change_requests) == (8192, 4096, 0)
    assert "max_position_embeddings" in limit.why


def test_without_a_gpu_there_is_no_count_and_it_says_why():
    _, block = block_of({"model": "meta-llama/Llama-3.1-8B"})
    assert block.steps == () and block.source.requests is None
    words = texts(block)
    assert words["rows"] == [] and "needs the GPU's memory" in words["summary"]
    assert words["formula"][0].endswith("= 131,072 B")


@pytest.mark.parametrize("engine", [None, "vllm", "sglang", "llama.cpp"])
@pytest.mark.parametrize("model", ["meta-llama/Llama-3.1-8B", "google/gemma-3-12b-it", "openai/gpt-oss-20b",
                                   "mistralai/Mixtral-8x7B-v0.1", "deepseek-ai/DeepSeek-V2-Lite",
                                   "Qwen/Qwen3-Next-80B-A3B-Instruct"])
def test_every_chain_arrives_at_our_figure(model, engine):
    for extra in ({}, {"context": "32768", "block-size": "16", "batch": "3"}, {"gpus": "4", "pp": "2"}):
        raw = {"model": model, "gpu": "h200-141gb", **extra} | ({"engine": engine} if engine else {})
        evaluation = evaluate(raw)
        if evaluation.errors:
            continue
        block = source_formula(evaluation.scenario, evaluation)
        assert_chain_arrives(block, evaluation.capacity)
        data = json.loads(json.dumps(to_json(block)))
        assert data["requests"] == evaluation.capacity
        assert data["source"]["requests"] == block.source.requests


def test_json_is_exact_integers():
    evaluation = evaluate({"model": "meta-llama/Llama-3.1-8B", "gpu": "h100-sxm-80gb", "engine": "vllm"})
    data = json_of(evaluation.scenario, evaluation)
    assert data["source"]["bytes_per_request"] == GIB and data["source"]["requests"] == 64
    # vLLM's weights step: its load counts the rope cache (131,072 x 128 x 2 B) beyond the checkpoint
    assert [s["key"] for s in data["steps"]] == ["units", "utilization", "weights", "overhead"]
    assert data["steps"][2]["change_bytes"] == -131_072 * 128 * 2
    assert all(isinstance(s["change_bytes"], int) for s in data["steps"])
    assert data["requests"] == 54 and data["missing"] is None


def test_kv_memory_from_a_log_replaces_the_memory_steps():
    evaluation, block = block_of({"model": "meta-llama/Llama-3.1-8B", "gpu": "h100-sxm-80gb", "engine": "vllm",
                              "kv-memory-gib": "60"})
    by = steps(block)
    assert "utilization" not in by and "overhead" not in by
    assert by["kv_memory"].ours == 60 * GIB and by["kv_memory"].free_bytes == 60 * GIB
    assert_chain_arrives(block, 60)
    assert evaluation.capacity == 60
    rows = texts(block)["rows"]
    assert [row["name"] for row in rows] == ["The source's answer", "GiB vs GB", "KV memory from your log",
                                             "Here (vLLM " + vllm.NEWEST_RELEASE + "'s rules)"]
