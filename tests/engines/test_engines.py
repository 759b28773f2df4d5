"""Engine modes against real start-up logs (tests/fixtures/logs, each with its URL in SOURCES.md).

A log prints the KV memory rounded to 0.01 GiB, so each case feeds both ends of that rounding
and asserts the logged figure lies between what the two ends give: exact up to the log's own
precision, never a tolerance of ours."""

import math
import re
from fractions import Fraction

import pytest

from kvcalc.readers.hfconfig import model_from_config
from kvcalc.readers import gpu_presets
from kvcalc.evaluation import evaluate
from kvcalc.engines.llamacpp import allocator as llamacpp_allocator, printing as llamacpp_printing
from kvcalc.engines import releases
from kvcalc.engines.sglang import allocator as sglang_allocator, engine as sglang, printing as sglang_printing
from kvcalc.engines.vllm import allocator as vllm_allocator, release as vllm_release
from kvcalc.precision import precision
from support import FIXTURES, cli, hf_fixture

GIB = 1 << 30
LOGS = FIXTURES / "logs"


def log_text(name: str) -> str:
    return (LOGS / name).read_text(encoding="utf-8")


def ends(gib: str):
    """The byte counts a figure printed as `gib` with two decimals can stand for."""
    value = Fraction(gib)
    return int((value - Fraction(1, 200)) * GIB), int((value + Fraction(1, 200)) * GIB)


def vllm_range(model, kv, tp, pp, model_len, chunk, block, gib):
    pools = [vllm_allocator.allocate(model, precision(kv), tp, pp, model_len, chunk, block, n) for n in ends(gib)]
    return pools


# Qwen3-0.6B's config (huggingface.co/Qwen/Qwen3-0.6B config.json): 28 layers, 8 kv heads of 128.
QWEN3_06B = {"model_type": "qwen3", "num_hidden_layers": 28, "num_attention_heads": 16, "num_key_value_heads": 8,
             "head_dim": 128, "hidden_size": 1024, "torch_dtype": "bfloat16", "max_position_embeddings": 40960}
# Qwen3-Coder-480B-A35B-Instruct(-FP8) config.json: 62 layers, 96 query heads, 8 kv heads of 128.
QWEN3_CODER_480B = {"model_type": "qwen3_moe", "num_hidden_layers": 62, "num_attention_heads": 96,
                    "num_key_value_heads": 8, "head_dim": 128, "hidden_size": 6144, "torch_dtype": "bfloat16",
                    "max_position_embeddings": 262144}


def test_vllm_dense_a100_tokens_and_concurrency():
    # vllm-qwen3-0.6b-a100-bf16.log: 69.66 GiB -> 652,144 tokens, 159.21x at 4,096.
    assert "GPU KV cache size: 652,144 tokens" in log_text("vllm-qwen3-0.6b-a100-bf16.log")
    low, high = vllm_range(model_from_config(QWEN3_06B), "bf16", 1, 1, 4096, 2048, 16, "69.66")
    assert low[0].kv_tokens <= 652_144 <= high[0].kv_tokens
    assert round(float(low[0].max_concurrency), 2) <= 159.21 <= round(float(high[0].max_concurrency), 2)


def test_vllm_mla_under_tensor_and_pipeline_parallel():
    # vllm-deepseek-v2-lite-tp2-pp2-l4.log: the latent is whole on every rank; blocks are the
    # smallest over the stages (stage 0: 14 of 27 layers, 12.13 GiB).
    text = log_text("vllm-deepseek-v2-lite-tp2-pp2-l4.log")
    assert "807,792 tokens" in text and "788.86x" in text
    raw = {"model": "deepseek-ai/DeepSeek-V2-Lite", "tp": "2", "pp": "2", "context": "1024", "engine": "vllm",
           "gpu": "l4-24gb"}
    got = [evaluate(dict(raw, **{"kv-memory-gib": f"{n / GIB:.12f}"})).engine for n in ends("12.13")]
    assert all(e.block_size == 16 for e in got)           # no FlashMLA on an L4
    assert got[0].kv_tokens <= 807_792 <= got[1].kv_tokens
    assert float(got[0].max_concurrency) <= 788.865 and float(got[1].max_concurrency) >= 788.855


def test_vllm_replicated_kv_head_under_tp8():
    # vllm-qwen3-coder-30b-a3b-tp8-24gb-ampere.log: 4 kv heads over tp 8, one whole head per rank.
    # Qwen3-Coder-30B-A3B has the shape of the Qwen3-30B-A3B preset (48 layers, 4 kv heads of 128).
    text = log_text("vllm-qwen3-coder-30b-a3b-tp8-24gb-ampere.log")
    assert "534,064 tokens" in text and "2.04x" in text
    raw = {"model": "Qwen/Qwen3-30B-A3B", "tp": "8", "context": "262144", "engine": "vllm"}
    got = [evaluate(dict(raw, **{"kv-memory-gib": f"{n / GIB:.12f}"})).engine for n in ends("12.22")]
    assert got[0].kv_tokens <= 534_064 <= got[1].kv_tokens
    assert f"{float(got[0].max_concurrency):.2f}" == "2.04"


def test_vllm_sliding_window_hybrid_refuses_like_the_log():
    # vllm-gpt-oss-120b-h100-refusal.log: 18 full + 18 sliding (window 128) layers, chunk 1024:
    # 4.54 GiB needed at 131,072 against 1.71 GiB.
    text = log_text("vllm-gpt-oss-120b-h100-refusal.log")
    # Its release is not printed; SOURCES.md infers ~0.11.0 from the traceback's kv_cache_utils.py:716.
    raw = {"model": "openai/gpt-oss-120b", "context": "131072", "engine": "vllm", "prefill-chunk": "1024",
           "gpu": "h100-sxm-80gb", "kv-memory-gib": "1.71", "engine-version": "0.11.0"}
    engine = evaluate(raw).engine
    assert engine.starts is False and "(4.54 GiB KV cache is needed" in engine.refusal
    assert "available KV cache memory (1.71 GiB)" in engine.refusal
    assert text.count("4.54 GiB KV cache is needed") == 1
    assert evaluate(raw).capacity == 0          # as vLLM sizes it: it refuses
    assert evaluate(raw).result.max_concurrency == 4   # the exact ideal, kept beside it


@pytest.mark.parametrize("gib, estimate", [("48.66", 205728), ("55.65", 235296)])
def test_vllm_refusal_estimates_the_longest_model_length(gib, estimate):
    # vllm-qwen3-coder-480b-fp8-dp8-h20-refusal.log: 62.00 GiB needed at 262,144; the estimate.
    text = log_text("vllm-qwen3-coder-480b-fp8-dp8-h20-refusal.log")
    assert f"estimated maximum model length is {estimate}" in text and "(62.00 GiB KV cache is needed" in text
    model = model_from_config(QWEN3_CODER_480B)
    low, high = vllm_range(model, "bf16", 1, 1, 262144, 8192, 16, gib)
    # That release printed GiB with two decimals; current vLLM prints round(x, 2): "62.0".
    assert low[0] is None and "(62.0 GiB KV cache is needed" in low[1]
    assert low[2] <= estimate <= high[2]


def test_vllm_refuses_negative_memory_like_the_log():
    # vllm-gpt-oss-120b-h100-default-negative-kv.log: "Available KV cache memory: -2.14 GiB".
    assert "Available KV cache memory: -2.14 GiB" in log_text("vllm-gpt-oss-120b-h100-default-negative-kv.log")
    pool, refusal, longest, _ = vllm_allocator.allocate(model_from_config(QWEN3_06B), precision("bf16"), 1, 1, 4096,
                                                        8192, 16, int(-2.14 * GIB))
    assert pool is None and refusal.startswith("ValueError: No available memory for the cache blocks") and longest == 0


def test_sglang_dense_pool_and_its_k_v_sizes():
    # sglang-qwen3-8b-tp1-mfs090.log: #tokens 404890, K size 27.80 GB, V size 27.80 GB (GiB).
    text = log_text("sglang-qwen3-8b-tp1-mfs090.log")
    assert "#tokens: 404890, K size: 27.80 GB, V size: 27.80 GB" in text
    raw = {"model": "Qwen/Qwen3-8B", "engine": "sglang", "context": "8096"}
    low, high = (evaluate(dict(raw, **{"kv-memory-gib": f"{n / GIB:.12f}"})).engine
                 for n in ends("55.60"))
    assert low.kv_tokens <= 404_890 <= high.kv_tokens
    pool = sglang_allocator.allocate(evaluate(raw).scenario.model, precision("bf16"), 1, 1, 8096, 404_890 * 147_456)
    assert pool.kv_tokens == 404_890
    assert "KV Cache is allocated. #tokens: 404890, K size: 27.80 GB, V size: 27.80 GB" in \
        sglang_printing.log_lines(pool)


def test_sglang_one_kv_head_per_rank_under_tp4():
    # sglang-qwen3-235b-a22b-fp8-tp4-mfs093.log: 4 kv heads over tp 4; K size 8.23 GB at 367404.
    text = log_text("sglang-qwen3-235b-a22b-fp8-tp4-mfs093.log")
    assert "#tokens: 367404, K size: 8.23 GB, V size: 8.23 GB" in text
    model = evaluate({"model": "Qwen/Qwen3-235B-A22B"}).scenario.model
    cell = sum(layer.row_bytes(precision("bf16"), 4) for layer in model.layers)
    pool = sglang_allocator.allocate(model, precision("bf16"), 4, 1, 8192, 367_404 * cell)
    assert pool.kv_tokens == 367_404 and f"{pool.k_bytes / GIB:.2f}" == "8.23"


def test_llamacpp_quantized_cache_matches_the_log():
    # llamacpp-qwen25-coder-32b-q8kv-2gpu-b4462.log: -c 32768 -ctk q8_0 -ctv q8_0: K 2176.00 MiB.
    text = log_text("llamacpp-qwen25-coder-32b-q8kv-2gpu-b4462.log")
    assert "K (q8_0): 2176.00 MiB, V (q8_0): 2176.00 MiB" in text
    engine = evaluate({"model": "Qwen/Qwen2.5-32B", "engine": "llama.cpp", "context": "32768",
                       "kv-dtype": "q8_0"}).engine
    assert "K (q8_0): 2176.00 MiB, V (q8_0): 2176.00 MiB" in engine.log[0]
    assert engine.kv_tokens == 32768


def test_llamacpp_f16_cache_of_a_llama2_7b():
    # llamacpp-llama2-7b-class-cpu-unified-4k.log: 4096 cells, 32 layers, 2048.00 MiB.
    assert "KV self size  = 2048.00 MiB, K (f16): 1024.00 MiB" in log_text("llamacpp-llama2-7b-class-cpu-unified-4k.log")
    engine = evaluate({"model": "meta-llama/Llama-2-7b-hf", "engine": "llama.cpp", "context": "4096",
                       "kv-dtype": "fp16"}).engine
    assert "size = 2048.00 MiB (  4096 cells,  32 layers,  1/1 seqs), K (f16): 1024.00 MiB" in engine.log[0]


def test_llamacpp_iswa_cells_and_separate_v_type():
    # llama-kv-cache-iswa.cpp: SWA cells = pad(min(n_ctx_seq, n_swa x (unified ? n_seq : 1) + n_ubatch), 256).
    model = evaluate({"model": "google/gemma-3-27b-it"}).scenario.model
    pool = llamacpp_allocator.allocate(model, precision("q8_0"), precision("q4_0"), 32768, 2, ubatch=512)
    full, swa = pool.caches
    assert (full.cells, swa.cells) == (32768, 1536)          # 1024 + 512 = 1536, already a multiple of 256
    assert pool.v_type == "q4_0" and swa.k_bytes > swa.v_bytes
    unified = llamacpp_allocator.allocate(model, precision("fp16"), precision("fp16"), 5000, 3, unified=True)
    assert unified.caches[0].cells == 15104 and unified.caches[1].cells == 3584   # pad(15000); pad(1024 x 3 + 512)


def test_default_prefill_chunks_and_block_sizes():
    r = releases.release
    gpus = gpu_presets.gpus()
    assert vllm_release.batch_defaults(r("0.19.1"), 80 * GIB, gpus["h100-sxm-80gb"], 131072) == (8192, 1024)
    assert vllm_release.batch_defaults(r("0.19.1"), 80 * GIB, gpus["a100-sxm-80gb"], 131072) == (2048, 256)
    assert vllm_release.batch_defaults(r("0.19.1"), 24 * GIB, gpus["l4-24gb"], 131072) == (2048, 256)
    v3 = evaluate({"model": "deepseek-ai/DeepSeek-V3", "engine": "vllm", "gpu": "h200-141gb", "gpus": "8",
                   "kv-memory-gib": "40"}).engine
    assert v3.block_size == 64 and v3.kv_tokens % 64 == 0


@pytest.mark.parametrize("args, words", [
    (["--engine", "tgi"], "--engine: unknown engine"),
    (["--engine", "vllm", "--kv-memory-gib", "-3"], "--kv-memory-gib"),
    (["--engine", "vllm", "--kv-memory-gib", "1e9"], "--kv-memory-gib"),
    (["--engine", "vllm", "--prefill-chunk", "0"], "--prefill-chunk"),
    (["--engine", "vllm", "--kv-dtype", "q4_0"], "--kv-dtype: vllm cannot store"),
    (["--engine", "sglang", "--kv-dtype-v", "q8_0"], "--kv-dtype-v: only llama.cpp"),
    (["--engine", "llama.cpp", "--kv-dtype-v", "fp8"], "--kv-dtype-v: llama.cpp cannot store"),
    (["--engine", "exact", "--format", "log"], "--format: log prints an engine's start-up lines"),
])
def test_bad_engine_input_is_one_line_naming_the_option(args, words):
    code, _, err = cli("--model", "meta-llama/Llama-3.1-8B", *args)
    assert code == 2 and err.count("\n") == 1 and words in err, err


def test_log_format_prints_what_the_engine_would():
    code, out, _ = cli("--model", "meta-llama/Llama-3.1-8B", "--engine", "vllm", "--kv-memory-gib", "40",
                       "--format", "log")
    assert code == 0
    assert out.splitlines() == ["Available KV cache memory: 40.0 GiB", "GPU KV cache size: 327,680 tokens",
                                           "Maximum concurrency for 8,192 tokens per request: 40.00x"]


def test_without_an_engine_every_figure_stays_the_ideal():
    raw = {"model": "meta-llama/Llama-3.1-8B", "gpu": "h100-sxm-80gb"}
    plain = evaluate(raw)
    assert plain.engine is None
    from kvcalc.reports.report import to_json
    data = to_json(evaluate(raw).scenario, plain)
    assert data["engine"] is None and data["engine_kv_tokens"] is None


def test_launch_commands_carry_the_prefill_chunk_and_v_type():
    from kvcalc.serving.launch import launch
    chosen = evaluate({"model": "meta-llama/Llama-3.1-8B", "gpu": "h100-sxm-80gb", "prefill-chunk": "4096",
                       "kv-dtype": "q8_0", "kv-dtype-v": "q4_0", "engine": "llama.cpp"}).scenario
    assert "-ub 4096" in launch(chosen, "llama.cpp").command
    assert "-ctk q8_0 -ctv q4_0" in launch(chosen, "llama.cpp").command
    plain = evaluate({"model": "meta-llama/Llama-3.1-8B", "gpu": "h100-sxm-80gb", "prefill-chunk": "4096"}).scenario
    assert "--max-num-batched-tokens 4096" in launch(plain, "vllm").command
    assert "--chunked-prefill-size 4096" in launch(plain, "sglang").command
    default = evaluate({"model": "meta-llama/Llama-3.1-8B", "gpu": "h100-sxm-80gb"}).scenario
    assert "--max-num-batched-tokens" not in launch(default, "vllm").command
    assert any("default for this GPU applies (8,192)" in note for note in launch(default, "vllm").notes)
    said = evaluate({"model": "meta-llama/Llama-3.1-8B", "gpu": "h100-sxm-80gb", "prefill-chunk": "8192"}).scenario
    assert any("is the engine's default here" in note for note in launch(said, "vllm").notes)


def test_vllm_concurrency_from_blocks_at_a_short_context():
    # vllm-llama-3.1-70b-w8a8-v1-early.log: 1,381 blocks of 16 -> 10.79x at 2,048 tokens
    # (1381 / cdiv(2048, 16) = 10.789). KV memory that gives exactly 1,381 blocks of Llama 3.1 70B.
    text = log_text("vllm-llama-3.1-70b-w8a8-v1-early.log")
    assert "# GPU blocks: 1381" in text and "Maximum concurrency for 2048 tokens per request: 10.79x" in text
    model = evaluate({"model": "meta-llama/Llama-3.1-70B"}).scenario.model
    block_bytes = 16 * sum(layer.row_bytes(precision("bf16")) for layer in model.layers)
    pool, refusal, _, _ = vllm_allocator.allocate(model, precision("bf16"), 1, 1, 2048, 2048, 16,
                                                  1381 * block_bytes + block_bytes - 1)
    assert refusal is None and pool.num_blocks == 1381 and f"{float(pool.max_concurrency):.2f}" == "10.79"


def test_sglang_derives_its_memory_fraction_and_chunk_from_the_gpu():
    # server_args.py _handle_gpu_memory_settings: H100 (< 90 GiB): chunk 8192, cuda_graph_max_bs 256
    # under tp 4; reserved = 512 + 8192 x 1.5 + 256 x 2 + 1/8 x 1024 MiB, at least 10 GiB over 60 GiB.
    # From 0.5.10 the prefill graphs' 58 sizes up to 8,192 tokens add 8 MiB each (release.py).
    memory = 81_559 << 20                               # an H100's 81,559 MiB
    chunk, graph_bs, fraction = sglang.defaults(memory, 1, 1, release=releases.release("0.5.9"))
    reserved = 512 + 8192 * 1.5 + 256 * 2 + 1 / 8 * 1024
    assert (chunk, graph_bs) == (8192, 256) and float(fraction) == round((81_559 - reserved) / 81_559, 3)
    assert float(sglang.defaults(memory, 1, 1)[2]) == round((81_559 - reserved - 58 * 8) / 81_559, 3) == 0.830
    assert sglang.defaults(24 << 30, 1, 1, release=releases.release("0.5.19"))[:2] == (2048, 24)
    assert sglang.defaults(24 << 30, 1, 1)[:2] == (4096, 48) and sglang.defaults(192 << 30, 8, 1)[:2] == (16384, 512)


def test_sglang_estimate_is_close_to_a_real_pool():
    # sglang-qwen3-8b-tp1-mfs090.log: 404,890 tokens at --mem-fraction-static 0.9 on one H100.
    # The CUDA-context constant was read from this same log (and our weights are params x 2,
    # 15.26 GiB, where SGLang measured 15.35), so this guards the arithmetic to 0.5%.
    engine = evaluate({"model": "Qwen/Qwen3-8B", "gpu": "h100-sxm-80gb", "engine": "sglang",
                       "memory-utilization": "0.9", "context": "8096"}).engine
    assert abs(engine.kv_tokens - 404_890) / 404_890 < 0.005


def test_sglang_keeps_one_pool_for_gemma_and_gpt_oss():
    # server_args.py: hybrid SWA memory is disabled for Gemma 2/3 and gpt-oss: every layer full.
    model = evaluate({"model": "google/gemma-3-27b-it"}).scenario.model
    pool = sglang_allocator.allocate(model, precision("bf16"), 1, 1, 8192, 40 * GIB)
    assert pool.swa_tokens is None
    assert pool.k_bytes == (pool.kv_tokens + 1) * sum(l.kv_heads * l.head_dim * 2 for l in model.layers)


def test_vllm_refuses_at_the_first_worker_that_cannot_hold_a_request():
    # kv_cache_utils.get_kv_cache_configs checks workers in rank order: with 10 layers over pp 4
    # (2, 3, 3, 2 layers) stage 0 fails first, needing 1.0 GiB, and its own estimate is given.
    engine = evaluate({"layers": "10", "kv-heads": "8", "head-dim": "128", "pp": "4", "gpus": "4",
                       "context": "131072", "engine": "vllm", "kv-memory-gib": "0.9"}).engine
    assert "(1.0 GiB KV cache is needed" in engine.refusal and engine.max_model_len == 117_952


def test_vllm_hybrid_padding_and_current_kv_cache_size():
    # Gemma 3 27B: 52 sliding + 10 full layers -> groups of 10, 8 padding layers (15.38%); current
    # vLLM logs max_concurrency x max_model_len as the KV cache size.
    engine = evaluate({"model": "google/gemma-3-27b-it", "engine": "vllm", "kv-memory-gib": "40",
                       "context": "131072"}).engine
    assert "Add 8 padding layers, may waste at most 15.38% KV cache memory" in engine.log
    assert engine.kv_tokens == int(engine.max_concurrency * 131072)


def test_vllm_uses_its_default_utilization_when_none_is_given():
    given = evaluate({"model": "meta-llama/Llama-3.1-8B", "gpu": "h100-sxm-80gb", "engine": "vllm",
                      "memory-utilization": "0.92"}).engine
    default = evaluate({"model": "meta-llama/Llama-3.1-8B", "gpu": "h100-sxm-80gb", "engine": "vllm"}).engine
    assert default.kv_budget_bytes_per_gpu == given.kv_budget_bytes_per_gpu


def test_sglang_splits_pools_only_for_its_hybrid_architectures():
    oss = evaluate({"model": "openai/gpt-oss-20b", "engine": "sglang", "kv-memory-gib": "20"}).engine
    assert "full_layer_tokens=485451, swa_layer_tokens=388360" in oss.log[0]
    gemma = evaluate({"model": "google/gemma-3-27b-it", "engine": "sglang", "kv-memory-gib": "20"}).engine
    assert not any("sliding window memory pool" in line for line in gemma.log)


def test_llamacpp_window_layers_only_where_llama_cpp_has_iswa():
    # Mistral 7B v0.1 (llama arch) and Phi-3 keep every token: no separate SWA cache.
    mistral = evaluate({"model": "mistralai/Mistral-7B-v0.1", "engine": "llama.cpp", "context": "32768"}).engine
    caches = [line for line in mistral.log if line.startswith("llama_kv_cache")]
    assert len(caches) == 1 and "size = 4096.00 MiB ( 32768 cells" in caches[0]


def test_llamacpp_split_over_gpus_and_its_limits():
    raw = {"model": "meta-llama/Llama-3.1-70B", "engine": "llama.cpp", "gpu": "h100-sxm-80gb", "context": "65536"}
    assert evaluate(dict(raw, gpus="2")).engine.starts is True
    errors = evaluate(dict(raw, batch="300")).errors
    assert errors and errors[0].field == "batch" and "256" in errors[0].message


def test_any_engine_input_is_a_figure_or_a_named_error():
    # Hostile and odd combinations: every evaluation ends in figures or errors naming a field,
    # never an exception, and what starts has sane figures.
    from hypothesis import example, given, settings, strategies as st
    from kvcalc.readers.presets import model_entries
    models = [e["id"] for e in model_entries()]
    plausible = st.integers(1, 1 << 17).map(str)
    number = st.one_of(plausible, plausible, plausible, st.integers(-3, 1 << 22).map(str),
                       st.sampled_from(["0", "1e9", "abc", "", "1,024", "7.5"]))
    started = []

    @settings(max_examples=300, deadline=None, derandomize=True)     # the same cases on every run
    @given(st.sampled_from(models), st.sampled_from(["vllm", "sglang", "llama.cpp", "VLLM", "tgi"]), number,
           number, st.sampled_from(["1", "2", "3", "8", "16"]), st.sampled_from(["1", "2", "4"]),
           st.one_of(st.none(), st.sampled_from(["0.01", "0", "12.22", "1000000", "-1"])),
           st.one_of(st.none(), number), st.sampled_from(["", "fp8", "q8_0", "bf16", "nvfp4"]),
           st.sampled_from([None, "h100-sxm-80gb", "rtx-4090-24gb"]))
    # Cases that start, run on every run whatever the generator draws: the assertions on what
    # starts are never vacuous.
    @example("meta-llama/Llama-3.1-8B", "vllm", "8192", "4", "1", "1", None, None, "", "h100-sxm-80gb")
    @example("Qwen/Qwen3-32B", "sglang", "32768", "8", "2", "1", "12.22", None, "fp8", None)
    @example("google/gemma-2-9b", "llama.cpp", "8192", "2", "1", "1", None, "1024", "q8_0", "rtx-4090-24gb")
    @example("deepseek-ai/DeepSeek-V2-Lite", "VLLM", "4096", "16", "2", "2", "12.22", "2048", "bf16", None)
    def check(model, engine, context, batch, gpus, pp, memory, chunk, kv, gpu):
        raw = {"model": model, "engine": engine, "context": context, "batch": batch, "gpus": gpus, "pp": pp,
               "kv-dtype": kv}
        for key, value in (("kv-memory-gib", memory), ("prefill-chunk", chunk), ("gpu", gpu)):
            if value is not None:
                raw[key] = value
        evaluation = evaluate(raw)
        if not evaluation.ok:
            assert evaluation.errors and all(e.field and e.message for e in evaluation.errors)
            return
        engine_result = evaluation.engine
        if engine_result.starts:
            started.append(engine)
            assert engine_result.kv_tokens >= 0 and engine_result.max_concurrency >= 0
            assert engine_result.log
    check()
    assert {"vllm", "sglang", "llama.cpp", "VLLM"} <= set(started), "each engine's examples must start"


@pytest.mark.parametrize("tp", [1, 2])
def test_vllm_hybrid_state_pages_set_the_block_size(tp):
    # vLLM PR #32492 (vllm-project/vllm): "qwen3-next model uses non-standard block size (544)".
    # _align_hybrid_block_size: 16 x cdiv(state page, 16 x one token's attention bytes), the state
    # page padded to the attention page; groups of 12 (12 full, 36 gated-deltanet layers).
    engine = evaluate({"model": "Qwen/Qwen3-Next-80B-A3B-Instruct", "tp": str(tp), "engine": "vllm",
                       "kv-memory-gib": "20", "context": "32768"}).engine
    assert engine.log[0] == ("Setting attention block size to 544 tokens to ensure that attention page size is "
                             ">= mamba page size.")
    assert engine.log[1].startswith("Padding mamba page size by 1.49%") and engine.block_size == 544
    # Per request: cdiv(32768, 544) attention pages + 2 state pages (align mode) for each of 3 groups.
    page = 544 * (2048 // tp)
    blocks = int(20 * GIB) // page // 12
    assert engine.max_concurrency == Fraction(blocks, -(-32768 // 544) + 3 * 2)


def test_vllm_dense_a100_40gb_at_32k():
    # vllm-qwen3-14b-a100-40g-32k-lmcache.log: 6.51 GiB -> 42,656 tokens, 1.30x at 32,768.
    text = log_text("vllm-qwen3-14b-a100-40g-32k-lmcache.log")
    assert "GPU KV cache size: 42,656 tokens" in text and "32,768 tokens per request: 1.30x" in text
    raw = {"model": "Qwen/Qwen3-14B", "context": "32768", "engine": "vllm", "gpu": "a100-sxm-40gb"}
    low, high = (evaluate(dict(raw, **{"kv-memory-gib": f"{n / GIB:.12f}"})).engine for n in ends("6.51"))
    assert low.kv_tokens <= 42_656 <= high.kv_tokens
    assert f"{float(low.max_concurrency):.2f}" <= "1.30" <= f"{float(high.max_concurrency):.2f}"


def test_vllm_tensor_parallel_two_at_8k():
    # vllm-mistral-small-3.1-24b-tp2-8k.log: 16.20 GiB per rank, tp 2 -> 212,352 tokens, 25.92x.
    # Mistral Small 3.1's text model has the attention of the Mistral Small 3 24B preset.
    text = log_text("vllm-mistral-small-3.1-24b-tp2-8k.log")
    assert "GPU KV cache size: 212,352 tokens" in text and "8,192 tokens per request: 25.92x" in text
    raw = {"model": "mistralai/Mistral-Small-24B-Base-2501", "tp": "2", "context": "8192", "engine": "vllm",
           "prefill-chunk": "8192"}
    low, high = (evaluate(dict(raw, **{"kv-memory-gib": f"{n / GIB:.12f}"})).engine for n in ends("16.20"))
    assert low.kv_tokens <= 212_352 <= high.kv_tokens
    assert float(low.max_concurrency) <= 25.925 and float(high.max_concurrency) >= 25.915


def test_llamacpp_llama_70b_cache_as_ollama_prints_it():
    # llamacpp-llama3-70b-q3km-ollama-4k-2gpu.log: 4096 cells x 80 layers, f16: 1280.00 MiB.
    assert "KV self size  = 1280.00 MiB, K (f16):  640.00 MiB, V (f16):  640.00 MiB" in \
        log_text("llamacpp-llama3-70b-q3km-ollama-4k-2gpu.log")
    engine = evaluate({"model": "meta-llama/Llama-3.3-70B-Instruct", "engine": "llama.cpp", "context": "4096",
                       "kv-dtype": "fp16"}).engine
    assert "size = 1280.00 MiB (  4096 cells,  80 layers,  1/1 seqs), K (f16):  640.00 MiB, V (f16):  640.00 MiB" \
        in engine.log[0]


def test_sglang_sparse_mla_pool_in_fp8_with_its_indexer():
    # sglang-deepseek-v32-exp-mla-tp8-dp8.log (SGLang PR #11309): "#tokens: 975424, KV size: 43.67 GB"
    # with the indexer counted. In fp8 a V3.2 layer holds the fp8_ds_mla latent (656 B) and the
    # indexer key (128 fp8 + one fp32 scale), 788 B a token; the KV dtype is inferred (SOURCES.md).
    assert "#tokens: 975424, KV size: 43.67 GB" in log_text("sglang-deepseek-v32-exp-mla-tp8-dp8.log")
    from support import hf_fixture
    cfg = dict(hf_fixture("deepseek-ai__DeepSeek-V3.json"), model_type="deepseek_v32", index_head_dim=128)
    model = model_from_config(cfg)
    assert model.layers[0].row_bytes(precision("fp8")) == 656 + 132
    # --tp 8 --dp 8 --enable-dp-attention: each DP rank's pool is sized at attn_tp_size 8 // 8 = 1
    # (our tp, the tp inside a rank; test_parallel_layouts.py sizes it through dp 8). An MLA latent is
    # the same at any tp, so tp 8 would give the same pool; the rank's is the right one.
    pool = sglang_allocator.allocate(model, precision("fp8"), 1, 1, 8192, 975_424 * 788 * 61 + 5, page_size=64)
    assert pool.kv_tokens == 975_424
    assert "KV Cache is allocated. #tokens: 975424, KV size: 43.67 GB" in sglang_printing.log_lines(pool)


def test_engines_multiply_the_total_pytorch_reports():
    # vLLM logs total_gpu_memory 79.22 GiB on an H100 80GB (vLLM PR #12126), 0.43 GiB under
    # nvidia-smi's 81,559 MiB: the preset carries both, and the engines use PyTorch's.
    from kvcalc.readers.gpu_presets import gpu
    h100 = gpu("h100-sxm-80gb")
    assert h100.torch_memory_bytes == int(Fraction("79.22") * GIB) < h100.memory_bytes
    raw = {"model": "meta-llama/Llama-3.1-8B", "gpu": "h100-sxm-80gb", "engine": "vllm", "memory-utilization": "0.9",
           "overhead-gib": "5"}
    evaluation = evaluate(raw)
    engine = evaluation.engine
    # vllm/v1/worker/utils.py request_memory: math.ceil(total x util) from 0.14.0.
    assert engine.kv_budget_bytes_per_gpu == math.ceil(h100.torch_memory_bytes * Fraction(9, 10)) \
        - engine.weights_bytes_per_gpu - 5 * GIB
    # the weights as vLLM loads them: the checkpoint's and its rope cache (131,072 x 128 x 2 B)
    assert engine.weights_bytes_per_gpu == evaluation.result.weights_bytes_per_gpu + 131_072 * 128 * 2
    # A GPU without a recorded PyTorch total says it falls back to nvidia-smi's.
    notes = evaluate(dict(raw, gpu="h100-pcie-80gb")).engine.notes
    assert any("not on record" in note for note in notes)


def test_every_gpu_vllm_and_sglang_run_on_has_its_pytorch_total_with_a_source():
    # The totals come from PyTorch OOM messages, deviceQuery and vLLM logs (sources in gpus.json).
    # They depend on the driver by up to ~0.1 GiB; each lies under the nominal memory by less than 1 GiB.
    from kvcalc.readers.gpu_presets import gpus
    missing = set()
    for g in gpus().values():
        if g.vendor == "Apple" or g.unified_memory:
            continue    # no vLLM or SGLang on Apple; on unified memory the CUDA total is the OS's view of RAM
        if g.torch_memory_bytes is None:
            missing.add(g.id)
            continue
        assert g.torch_memory_source and 0 <= g.memory_bytes - g.torch_memory_bytes < GIB, g.id
    # No public source names these; the fallback above says so on the page (tests/readers/test_gpus.py
    # holds each of the 2025-26 rows to what its sources give). Nor one for a MIG instance: one unsourced
    # test fixture's 39.25 GiB on a 3g.40gb (docs/formulas.md, MIG instances).
    assert missing == {"h100-pcie-80gb", "b300-288gb", "h20-96gb", "gb200-186gb", "gb300-288gb",
                       "rtx-pro-6000-server-96gb", "l40-48gb", "a40-48gb"} | {g.id for g in gpus().values() if g.mig_of}
    h200 = gpus()["h200-141gb"]
    assert h200.torch_memory_bytes == round(Fraction("139.81") * GIB)


@pytest.mark.parametrize("name, hidden, vocab, context, ubatch", [
    ("llamacpp-glm-z1-32b-32k-fa-b5274.log", 6144, 151_552, 32768, 512),
    ("llamacpp-glm-4.5-air-128k-ub4096-fa.log", 4096, 151_552, 131072, 4096),
])
def test_llama_cpp_compute_buffer_estimate_on_real_logs(name, hidden, vocab, context, ubatch):
    # The estimate is said to be within about 15%; on these two logs it is within 2%.
    from kvcalc.engines.llamacpp import allocator as llamacpp_allocator, printing as llamacpp_printing
    from kvcalc.layers import FullAttention
    from kvcalc.model import Model
    from kvcalc.precision import precision
    logged = float(re.search(r"CUDA0 compute buffer size =\s+([0-9.]+) MiB", log_text(name))[1]) * (1 << 20)
    host = float(re.search(r"CUDA_Host compute buffer size =\s+([0-9.]+) MiB", log_text(name))[1]) * (1 << 20)
    assert abs(host - 4 * ubatch * (context + hidden)) < 0.2 * (1 << 20)        # the inputs are the log's
    model = Model("m", (FullAttention(8, 128),) * 4, hidden_size=hidden, vocab_size=vocab)
    pool = llamacpp_allocator.allocate(model, precision("fp16"), precision("fp16"), context, 1, ubatch=ubatch)
    estimate = llamacpp_allocator.compute_buffer_bytes(model, pool, ubatch)
    assert abs(estimate - logged) / logged < 0.02
    assert llamacpp_printing.compute_buffer_line(estimate).startswith("llama_context:      CUDA0 compute buffer size = ")


def test_llama_cpp_budget_leaves_room_for_the_compute_buffer():
    raw = {"hf-config": hf_fixture("meta-llama__Llama-3.1-8B.json"), "gpu": "rtx-4090-24gb", "engine": "llama.cpp",
           "context": "32768"}
    engine = evaluate(raw).engine
    assert engine.activation_bytes_per_gpu == engine.overhead_bytes_per_gpu > 200 << 20
    assert any("compute buffer size" in line and "estimated" in line for line in engine.log)
    # A preset without the vocabulary size says the buffer is not counted.
    engine = evaluate({"model": "mistralai/Mistral-Large-Instruct-2407", "gpu": "rtx-4090-24gb",
                       "engine": "llama.cpp"}).engine
    assert engine.overhead_bytes_per_gpu in (None, 0) and any("not counted" in note for note in engine.notes)


def test_vllm_hybrid_pool_on_a_real_qwen3_next_log():
    # vLLM 0.13 on 2 x L40S, fp8 cache, prefix caching off (one state page per request). The log's
    # 17.58 GiB is rounded to 0.01 GiB: both ends of that are tried, as for every log here.
    text = log_text("vllm-qwen3-next-80b-awq-tp2-l40s-fp8-v0.13.log")
    model = model_from_config(hf_fixture("Qwen__Qwen3-Next-80B-A3B-Thinking.json"))
    logged_tokens = int(re.search(r"GPU KV cache size: ([0-9,]+) tokens", text)[1].replace(",", ""))
    logged_concurrency = re.search(r"Maximum concurrency for 32,768 tokens per request: ([0-9.]+)x", text)[1]
    seen = set()
    for memory in (Fraction("17.575"), Fraction("17.58"), Fraction("17.585")):
        pool, refusal, _, lines = vllm_allocator.allocate(model, precision("fp8"), 2, 1, 32768, 8192, 16,
                                                          int(memory * GIB), precision("bf16"),
                                                          state_pages=vllm_allocator.MAMBA_NONE_PAGES)
        assert refusal is None and pool.block_size == 1072
        assert lines == ["Setting attention block size to 1072 tokens to ensure that attention page size is "
                         ">= mamba page size."]
        # v0.13 printed num_blocks // groups x block size (current vLLM prints concurrency x max_model_len).
        seen.add((pool.num_blocks // pool.groups * pool.block_size, f"{float(pool.max_concurrency):.2f}"))
    assert (logged_tokens, logged_concurrency) in seen


def test_what_one_request_reserves_is_given_whenever_the_model_and_context_are_known():
    """Issue 22's short check: the engine's per-request figure needs no GPU and stays when the
    engine refuses. vLLM, Llama 3.1 8B at 8,192 tokens in 16-token blocks: 512 blocks x 32 layers x
    16 x 4,096 B = 1,073,741,824 B; SGLang's single-token pool the same bytes; gpt-oss-120b at
    131,072 tokens, the refusal's own "4.54 GiB KV cache is needed"."""
    from kvcalc.reports.report import to_json
    for engine in ("vllm", "sglang", "llama.cpp"):
        e = evaluate({"model": "meta-llama/Llama-3.1-8B", "engine": engine, "context": "8192"})
        assert e.ok and to_json(e.scenario, e)["engine_kv_bytes_per_request"] is not None, engine
    assert evaluate({"model": "meta-llama/Llama-3.1-8B", "engine": "vllm", "context": "8192"}
                    ).engine.kv_bytes_per_request == 512 * 32 * 16 * 4096 == 1_073_741_824
    assert evaluate({"model": "meta-llama/Llama-3.1-8B", "engine": "sglang", "context": "8192"}
                    ).engine.kv_bytes_per_request == 8192 * 131_072
    refused = evaluate({"model": "openai/gpt-oss-120b", "context": "131072", "engine": "vllm", "prefill-chunk": "1024",
                        "gpu": "h100-sxm-80gb", "kv-memory-gib": "1.71", "engine-version": "0.11.0"}).engine
    assert refused.starts is False and f"{refused.kv_bytes_per_request / GIB:.2f}" == "4.54"
    # From 0.26.0 a sliding layer also keeps the second batch in flight (async scheduling): 2 x 1,024 new tokens.
    newer = evaluate({"model": "openai/gpt-oss-120b", "context": "131072", "engine": "vllm", "prefill-chunk": "1024",
                      "gpu": "h100-sxm-80gb", "kv-memory-gib": "1.71", "engine-version": "0.26.0"}).engine
    assert newer.starts is False and f"{newer.kv_bytes_per_request / GIB:.2f}" == "4.58"
