"""Every worked figure in ../shared/seeds, reproduced exactly. Each test names its seed."""

from fractions import Fraction

from kvcalc import FullAttention, MLAAttention, Model, evaluate, precision
from kvcalc.sizing import generation_work

GIB = 1 << 30


def kv(layers, kv_heads, head_dim, **more):
    raw = {"layers": str(layers), "kv-heads": str(kv_heads), "head-dim": str(head_dim), "kv-dtype": "fp16"}
    raw.update({k: str(v) for k, v in more.items()})
    evaluation = evaluate(raw)
    assert not evaluation.errors, evaluation.errors
    return evaluation.result


# seed 001 "The KV Cache": Concrete Example (LLaMA-3 70B FP16)
def test_seed_001_llama3_70b_per_token_and_batch():
    r = kv(80, 8, 128, context=8192, batch=32)
    assert r.kv_bytes_per_token == 2 * 80 * 8 * 128 * 2 == 327_680
    assert r.kv_bytes_total == 85_899_345_920            # "≈ 86.0 GB of VRAM"
    assert round(r.kv_bytes_total / 10 ** 9, 1) == 85.9  # the seed rounds 85.9 GB up to "86.0"
    assert r.kv_bytes_total == 80 * GIB                  # exactly 80.0 GiB (seed 004's "80.0 GB")


# seed 004 "KV cache memory math": Llama 3 70B @ 8K, 32 requests (int8): 40.0 GB total
def test_seed_004_int8_halves_the_cache():
    r = kv(80, 8, 128, context=8192, batch=32, **{"kv-dtype": "int8"})
    assert r.kv_bytes_total == 42_949_672_960 == 40 * GIB


# seed 004: Llama 3 8B at 2K / 8K / 32K / 128K
def test_seed_004_llama3_8b_context_ladder():
    assert kv(32, 8, 128).kv_bytes_per_token == 131_072                     # "128 KB"
    expected = {2048: 268_435_456, 8192: GIB, 32768: 4 * GIB, 131072: 17_179_869_184}
    for context, total in expected.items():
        assert kv(32, 8, 128, context=context).kv_bytes_per_request == total


# seed 004: Llama 3 70B at 2K / 8K / 32K / 128K (320 KB a token)
def test_seed_004_llama3_70b_context_ladder():
    expected = {2048: 640 << 20, 8192: 2.5 * GIB, 32768: 10 * GIB, 131072: 40 * GIB}
    for context, total in expected.items():
        assert kv(80, 8, 128, context=context).kv_bytes_per_request == total


# seed 004: Llama 3 405B "504 KB * 131072 ≈ 63 GB"
def test_seed_004_llama3_405b():
    r = kv(126, 8, 128, context=131072)
    assert r.kv_bytes_per_token == 516_096 == 504 * 1024
    assert r.kv_bytes_per_request == 67_645_734_912 == 63 * GIB


# seed 004: "Why GQA and MQA exist" and "The impact on serving economics"
def test_seed_004_mha_gqa_mqa():
    assert kv(32, 32, 128).kv_bytes_per_token == 524_288      # Llama 3 8B as MHA, 512 KB
    assert kv(80, 64, 128).kv_bytes_per_token == 2_621_440    # Llama 3 70B as MHA, 2.5 MB
    assert kv(80, 8, 128).kv_bytes_per_token == 327_680
    assert kv(80, 1, 128).kv_bytes_per_token == 40_960        # MQA, 40 KB
    # seed 000: GQA 8 query heads per KV head "slashes KV cache memory by up to 8x (87.5%)"
    assert Fraction(kv(80, 8, 128).kv_bytes_per_token, kv(80, 64, 128).kv_bytes_per_token) == 1 - Fraction(875, 1000)


# seed 004: 8x A100 80 GB, ~35 GB int4 weights, 2-4 GB overhead: 240 / 60 / 15 requests; MHA 30
def test_seed_004_serving_capacity():
    deployment = {"gpus": 8, "gpu-memory-gib": 80, "weights-gib": 35, "overhead-gib": "0.5"}
    for context, requests in {8192: 240, 32768: 60, 131072: 15}.items():
        assert kv(80, 8, 128, context=context, **deployment).max_concurrency == requests
    assert kv(80, 64, 128, context=8192, **deployment).max_concurrency == 30


# seed 004 gives DeepSeek-V2 as 2 x 60 x 512 x 2 = 122,880 bytes. That doubles the latent:
# vLLM (MLAAttentionSpec) and SGLang (MLATokenToKVPool) store ONE latent of
# kv_lora_rank + qk_rope_head_dim = 576 elements per token per layer, no factor 2 for K and V.
def test_seed_004_deepseek_v2_mla_is_not_doubled():
    r = evaluate({"layers": "60", "mla-rank": "512", "mla-rope-dim": "64", "kv-dtype": "bf16"}).result
    assert r.kv_bytes_per_token == 60 * (512 + 64) * 2 == 69_120
    assert r.kv_bytes_per_token != 122_880


# seed 000: MLA "d_c = 512 along with decoupled RoPE d_R = 64"; MLA latent is not split by TP
def test_seed_000_mla_latent_replicated_under_tp():
    one = evaluate({"layers": "61", "mla-rank": "512", "mla-rope-dim": "64"}).result
    eight = evaluate({"layers": "61", "mla-rank": "512", "mla-rope-dim": "64", "tp": "8"}).result
    assert one.kv_bytes_per_token == 70_272
    assert eight.kv_bytes_per_gpu == one.kv_bytes_per_gpu
    assert eight.kv_bytes_all_gpus == 8 * one.kv_bytes_total


# seed 000: FP8 "cuts KV memory by exactly 50%", INT4 "by 75%"
def test_seed_000_quantized_ratios():
    bf16 = precision("bf16")
    for name, ratio in {"fp8": Fraction(1, 2), "fp8_e4m3": Fraction(1, 2), "int8": Fraction(1, 2),
                        "int4": Fraction(1, 4)}.items():
        assert precision(name).bits_per_element / bf16.bits_per_element == ratio
    model = Model("llama-3-70b-like", (FullAttention(8, 128),) * 80)
    assert sum(layer.row_bytes(precision("int4")) for layer in model.layers) == 327_680 // 4


# seed 001: without a cache the work to generate N tokens is O(N^3); with it, O(N^2)
def test_seed_001_with_and_without_cache():
    w = generation_work(100)
    assert w.projections_with_cache == 100
    assert w.dot_products_with_cache == 5050                  # sum of t for t = 1..100
    assert w.dot_products_without_cache == 338_350            # sum of t^2
    big = generation_work(1000)
    # Ten times the tokens: about 100x the work with a cache, about 1000x without.
    assert 99 < big.dot_products_with_cache / w.dot_products_with_cache < 100
    assert 980 < big.dot_products_without_cache / w.dot_products_without_cache < 1000
    assert big.without_cache > 300 * big.with_cache
