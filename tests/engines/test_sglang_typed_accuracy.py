"""SGLang's available KV memory from typed inputs (issue 36): the terms the accuracy corpus
(tests/fixtures/logs/corpus/sglang.json) showed wrong, each worked against a real public log
(its URL in tests/fixtures/logs/SOURCES.md) with the figures it prints.

SGLang sizes its pool in model_runner.py profile_max_num_token (0.3.6-0.5.23): rest memory =
avail mem after the load - avail mem before it x (1 - mem_fraction_static) = mem_fraction_static x
(avail before) - the load's "mem usage"; #tokens = rest // the cell it counts."""

from fractions import Fraction
from pathlib import Path

from kvcalc.engines import releases
from kvcalc.engines.sglang import allocator, engine as sglang, release as rules
from kvcalc.evaluation import evaluate
from kvcalc.readers import gpu_presets

LOGS = Path(__file__).resolve().parents[1] / "fixtures" / "logs"
GIB = 1 << 30


def text(name: str) -> str:
    return (LOGS / name).read_text(encoding="utf-8")


def gib(value: int) -> float:
    return value / GIB


# --- the cell profile_max_num_token counts for DeepSeek's sparse attention (allocator.profile_cell_bytes) ---

GLM5 = {"engine": "sglang", "engine-version": "0.5.8.post1", "model": "zai-org/GLM-5-FP8", "gpu": "mi355x-288gb",
        "gpus": "8", "tp": "8", "kv-dtype": "fp8"}


def test_glm5_on_mi355x_pool_is_sized_by_708_bytes_a_layer_and_allocates_788():
    """sglang-glm-5-fp8-mi355x-tp8-fp8kv-rocm-v0.5.8.post1.log: avail mem 283.50 GB before the load,
    mem usage 89.58 GB, mem_fraction_static 0.908 (its server_args), #tokens 3,262,823, KV size
    186.77 GB. The rest memory 0.908 x 283.50 - 89.58 = 167.84 GiB holds exactly the tokens at
    (512 + 64) x 1 B + 132 B of indexer key = 708 B a layer (0.5.8.post1 get_cell_size_per_token),
    while NSATokenToKVPool allocates 656 + 132 = 788 B: the pool prints 788 / 708 of its rest."""
    log = text("sglang-glm-5-fp8-mi355x-tp8-fp8kv-rocm-v0.5.8.post1.log")
    assert "avail mem=283.50 GB" in log and "mem usage=89.58 GB." in log
    assert "#tokens: 3262823, KV size: 186.77 GB" in log
    rest = Fraction("0.908") * Fraction("283.50") - Fraction("89.58")             # 167.838 GiB
    assert int(rest * GIB) // (708 * 78) == 3_263_339                                # 516 over: the GBs' rounding
    assert abs(Fraction(3_262_823 * 708 * 78, GIB) - rest) < Fraction(3, 100)      # 0.027: three figures to 0.01
    assert abs(Fraction((3_262_823 + 1) * 788 * 78, GIB) - Fraction("186.77")) < Fraction(1, 200)

    e = evaluate(GLM5)
    layers = e.scenario.model.layers
    fp8 = e.scenario.workload.kv_precision
    mla = [layer for layer in layers if layer.kind == "mla"]
    assert len(mla) == 78 and mla[0].indexer_row_bytes == 132 and mla[0].row_bytes(fp8) == 788
    by = {v: allocator.profile_cell_bytes(layers, fp8, 8, releases.release(v)) for v in ("0.5.3", "0.5.8.post1", "0.5.17")}
    assert by == {"0.5.3": 576 * 78, "0.5.8.post1": 708 * 78, "0.5.17": 788 * 78}
    # Typed: the tokens come within 1.7% (our weights are 2.48 GiB under its 89.58 on this ROCm
    # build); the KV memory is the pool as allocated, tokens x 788 x 78, not the rest it was cut from.
    engine = e.engine
    assert abs(engine.kv_tokens / 3_262_823 - 1) < 0.02
    assert engine.kv_budget_bytes_per_gpu == (engine.kv_tokens + 1) * 788 * 78
    assert any("a cell of 55,224 B" in note and "NSATokenToKVPool allocates 61,464 B" in note for note in engine.notes)
    # A pasted log's K + V is the pool as allocated: its tokens come back at 788 B a layer.
    pasted = evaluate(dict(GLM5, **{"kv-memory-gib": "186.77"}))
    assert abs(pasted.engine.kv_tokens - 3_262_823) < 100


def test_deepseek_v32_runs_before_and_after_pr_11309_agree_with_0_5_4_default():
    """sglang-deepseek-v32-exp-mla-tp8-dp8.log (sgl-project/sglang#11309): main (0.5.3's code: mem_
    fraction_static forced to 0.8 for DeepSeek NSA, no indexer key in the profile) held 1,462,784
    tokens at 576 B a layer; the PR (0.5.4's code: the default fraction, the key counted) 975,424 at
    708 B. The rest memories differ by (0.8 - f) x the memory before the load, f = 0.751, 0.5.4's
    default on a B200 at --tp-size 8 --dp-size 8 (release.py)."""
    log = text("sglang-deepseek-v32-exp-mla-tp8-dp8.log")
    assert "#tokens: 975424, KV size: 43.67 GB" in log and "#tokens: 1462784, KV size: 54.52 GB" in log
    main, pr = Fraction(1_462_784 * 576 * 61, GIB), Fraction(975_424 * 708 * 61, GIB)
    assert round(float(main), 2) == 47.87 and round(float(pr), 2) == 39.23
    b200 = gpu_presets.gpu("b200-180gb")
    out = rules.defaults(releases.release("0.5.4"), b200.memory_bytes, rules.Launch(tp=8, dp=8, mla=True))
    assert out.fraction == Fraction(751, 1000)
    before = (main - pr) / (Fraction(8, 10) - out.fraction)                           # 176.19 GiB
    assert 170 < before < gib(b200.torch_memory_bytes)

    row = {"engine": "sglang", "engine-version": "0.5.4", "model": "deepseek-ai/DeepSeek-V3.2", "gpu": "b200-180gb",
           "gpus": "8", "tp": "1", "dp": "8", "kv-dtype": "fp8", "block-size": "64"}
    e = evaluate(row)
    assert abs(e.engine.kv_tokens / 975_424 - 1) < 0.02                           # 991,424: +1.6%
    older = evaluate(dict(row, **{"engine-version": "0.5.3"})).engine.kv_tokens    # 576 B counted: more tokens
    assert older > e.engine.kv_tokens * 708 // 576 - 64


# --- what the load takes beyond the checkpoint (engine.loaded_weights, absorbed_mla_bytes) -------

def test_load_weight_end_mem_usage_as_three_16_bit_logs_print_it():
    """'Load weight end. mem usage' is the fall of the free memory: the tensors, their layers' extras
    (rotary cache, vocabulary padding, the allocator's 2 MiB segments) and what the load leaves
    outside PyTorch (0.11 GiB, the median of these three logs' remainders)."""
    cases = [
        ("sglang-qwen3-8b-tp1-mfs090.log", "mem usage=15.35 GB",
         {"engine-version": "0.4.6", "model": "Qwen/Qwen3-8B", "gpu": "h100-sxm-80gb", "context": "8096",
          "memory-utilization": "0.9"}, Fraction("15.35"), 404_890),
        ("sglang-llama3.2-3b-l40s-mfs02-hicache-35k.log", "mem usage=6.13 GB",
         {"engine-version": "0.5.8", "model": "meta-llama/Llama-3.2-3B", "gpu": "l40s-48gb", "context": "35000",
          "memory-utilization": "0.2"}, Fraction("6.13"), 25_169),
        ("sglang-qwq-32b-4xl4-tp4-mfs085-v0.4.3.post4.log", "mem usage=15.54 GB",
         {"engine-version": "0.4.3.post4", "model": "Qwen/Qwen2.5-32B", "gpu": "l4-24gb", "gpus": "4", "tp": "4",
          "context": "131072"}, Fraction("15.54"), 46_611),
    ]
    for name, line, raw, printed, tokens in cases:
        assert line in text(name)
        e = evaluate(dict(raw, engine="sglang"))
        loaded = e.engine.weights_bytes_per_gpu
        assert loaded > e.result.weights_bytes_per_gpu, name
        assert abs(Fraction(loaded, GIB) - printed) < Fraction(3, 100), (name, gib(loaded))
        assert abs(e.engine.kv_tokens / tokens - 1) < 0.025, (name, e.engine.kv_tokens)
    # The remainder is the constant the notes name.
    assert sglang.LOAD_REMAINDER == Fraction("0.11")


def test_mla_absorbed_copies_are_counted_per_rank_heads():
    """deepseek_v2.py post_load_weights stores w_kc and w_vc beside kv_b_proj: one more copy of its
    kv_lora_rank x heads x (qk_nope + v) elements, bf16 on CUDA. DeepSeek-V3.2 under DP attention
    (attn_tp_size 1, all 128 heads): 61 x 512 x 128 x 256 x 2 B. Kimi K2.5 on MI355X at tp 8 (bf16
    attention): 61 x 512 x 8 x 256 x 2 B. GLM-5-FP8 on ROCm: fp8, 1 B."""
    v32 = evaluate({"engine": "sglang", "engine-version": "0.5.4", "model": "deepseek-ai/DeepSeek-V3.2",
                    "gpu": "b200-180gb", "gpus": "8", "tp": "1", "dp": "8", "kv-dtype": "fp8", "block-size": "64"})
    assert sglang.absorbed_mla_bytes(v32.scenario.model, v32.scenario.deployment)[0] == 61 * 512 * 128 * 256 * 2
    kimi = evaluate({"engine": "sglang", "engine-version": "0.5.8.post1", "model": "moonshotai/Kimi-K2.5",
                     "gpu": "mi355x-288gb", "gpus": "8", "tp": "8"})
    assert sglang.absorbed_mla_bytes(kimi.scenario.model, kimi.scenario.deployment)[0] == 61 * 512 * 8 * 256 * 2
    glm = evaluate(GLM5)
    model = glm.scenario.model
    qk, v = model.mla_head_dims
    assert sglang.absorbed_mla_bytes(model, glm.scenario.deployment)[0] == 78 * 512 * 8 * (qk - 64 + v) * 1
    # A dense model has none.
    dense = evaluate({"engine": "sglang", "model": "Qwen/Qwen3-8B", "gpu": "h100-sxm-80gb"})
    assert sglang.absorbed_mla_bytes(dense.scenario.model, dense.scenario.deployment) == (0, "")


# --- a corpus row's inputs read from its log -------------------------------------------------------

def test_no_release_derives_0_82_for_a_16_gb_card_so_the_awq_log_typed_it():
    """sglang-qwen2.5-7b-awq-16gb-nocudagraph.log: its server_args print mem_fraction_static=0.82 and
    chunked_prefill_size=8192 on a 16 GB card (15.08 GB free before the load). No release derives
    them there (0.88 before 0.4.7.post1, 0.818-0.819 for 0.4.7.post1-0.5.2, under 0.78 from 0.5.3;
    the chunk 2,048 or 4,096), so they were given: 0.82 x 15.08 - 5.25 = 7.12 GiB, K 3.55 + V 3.55."""
    log = text("sglang-qwen2.5-7b-awq-16gb-nocudagraph.log")
    assert "avail mem=15.08 GB" in log and "mem usage=5.25 GB." in log and "K size: 3.55 GB, V size: 3.55 GB" in log
    for version in ("0.4.6", "0.4.7.post1", "0.5.2", "0.5.3", "0.5.16", "0.5.23"):
        for mib in (16_303, 16_376):
            out = rules.defaults(releases.release(version), mib << 20, rules.Launch())
            assert out.fraction != Fraction(82, 100) and out.chunk != 8192, (version, mib)
    assert abs(Fraction("0.82") * Fraction("15.08") - Fraction("5.25") - Fraction("7.10")) <= Fraction(2, 100)


# --- NCCL's set-up at tp 4 on NVLink SHARP (engine.communicators) ------------------------------------

def test_nvls_set_up_at_tp_4_weighs_what_tp_8_prints():
    """sglang-qwen3-235b-a22b-fp8-tp4-mfs093.log: Qwen3-235B-A22B-FP8 on 4 x H100 at
    --mem-fraction-static 0.93 holds 367,404 tokens (K 8.23 + V 8.23 GB). NCCL's NVLS buffers at tp 4
    weigh about what SGLang prints at tp 8 (1.96 GiB, sglang#11716): vLLM 0.10.0, which measured
    NCCL's whole set-up the same way, prints 2.04 GiB at tp 4 on H200 for the same model."""
    assert "#tokens: 367404, K size: 8.23 GB, V size: 8.23 GB" in text("sglang-qwen3-235b-a22b-fp8-tp4-mfs093.log")
    assert "non-torch forward increase memory: 2.04GiB" in text(
        "vllm-qwen3-235b-a22b-fp8-tp4-h200-util05-debug-v0.10.0dev.log")
    e = evaluate({"engine": "sglang", "engine-version": "0.4.9", "model": "Qwen/Qwen3-235B-A22B", "weights-dtype": "fp8",
                  "gpu": "h100-sxm-80gb", "gpus": "4", "tp": "4", "memory-utilization": "0.93"})
    estimate, low, high, words = sglang.communicators(e.scenario)
    assert estimate == int(sglang.COMM_NVLS_TP8[0] * GIB) and "2.04 GiB" in words
    assert e.engine.overhead_bytes_per_gpu == int(estimate * Fraction("0.93"))
    assert abs(e.engine.kv_tokens / 367_404 - 1) < 0.02                             # about -1%
    # tp 2 keeps half of it, its band up to it.
    two = evaluate({"engine": "sglang", "model": "Qwen/Qwen3-32B", "gpu": "h100-sxm-80gb", "gpus": "2", "tp": "2"})
    assert sglang.communicators(two.scenario)[0] == int(sglang.COMM_NVLS_TP8[0] / 2 * GIB)


def test_0_5_3_forces_0_8_for_deepseek_sparse_attention():
    """The same PR's 'main (hardcoded mem-fraction-static=0.8)' run: 0.5.3's server_args.py sets 0.8
    for DeepSeek NSA whatever was given, and its profile counts 576 B a layer (no indexer key):
    1,462,784 tokens printed; typed at 0.5.3, 1,481,600 (+1.3%)."""
    assert "hardcoded mem-fraction-static=0.8" in text("sglang-deepseek-v32-exp-mla-tp8-dp8.log")
    row = {"engine": "sglang", "engine-version": "0.5.3", "model": "deepseek-ai/DeepSeek-V3.2", "gpu": "b200-180gb",
           "gpus": "8", "tp": "1", "dp": "8", "kv-dtype": "fp8", "block-size": "64"}
    main = evaluate(row)
    assert sglang.memory_utilization(main.scenario, main.engine.prefill_chunk) == Fraction(8, 10)
    assert abs(main.engine.kv_tokens / 1_462_784 - 1) < 0.02
    given = evaluate(dict(row, **{"memory-utilization": "0.7"}))
    assert given.engine.kv_tokens == main.engine.kv_tokens
    # 0.5.4 takes its own default (0.751 here) and a given one.
    assert evaluate(dict(row, **{"engine-version": "0.5.4", "memory-utilization": "0.7"})).engine.kv_tokens \
        < evaluate(dict(row, **{"engine-version": "0.5.4"})).engine.kv_tokens
