"""Time bounds from peak figures (issue 12), worked by hand like the seeds' examples.

Llama 3.1 8B on one H100 SXM: 989.4 TFLOP/s dense BF16 (Hopper whitepaper), 3.35 TB/s. Its
8,030,261,248 parameters less the 128,256 x 4,096 embedding are 7,504,924,672 matmul
parameters, 2 FLOPs each per token; attention adds 2 x 32 heads x (128 + 128) per key per layer.
"""

from fractions import Fraction

import pytest
from hypothesis import given, settings, strategies as st

from kvcalc import evaluate
from kvcalc.reports.report import to_json

H100_BF16, H100_BW = 989_400 * 10 ** 9, 3_350 * 10 ** 9
MATMUL_8B = 8_030_261_248 - 128_256 * 4_096
ATTENTION_PER_KEY_8B = 32 * 2 * 32 * 256          # layers x 2 x heads x (K + V dims)


def timing(**values):
    e = evaluate({k.replace("_", "-"): str(v) for k, v in values.items()})
    assert e.ok, e.errors
    return e, e.timing


def test_prefill_of_8k_prompt_on_h100_is_about_0_15_s():
    e, t = timing(model="meta-llama/Llama-3.1-8B", gpu="h100-sxm-80gb", context=8192)
    keys = 8192 * 8193 // 2                          # causal: token t attends t keys
    assert t.prefill_flops == 2 * MATMUL_8B * 8192 + ATTENTION_PER_KEY_8B * keys
    assert t.prefill_seconds == Fraction(t.prefill_flops, H100_BF16)       # compute-bound
    assert 0.14 < float(t.prefill_seconds) < 0.15
    assert t.compute_precision == "bf16" and t.prompt_tokens == 8192


def test_batch_one_decode_step_is_memory_bound_at_about_5_1_ms():
    e, t = timing(model="meta-llama/Llama-3.1-8B", gpu="h100-sxm-80gb", context=8192)
    weights, cache = 2 * 8_030_261_248, 8192 * 131_072
    assert t.decode_step_seconds == t.decode_memory_seconds == Fraction(weights + cache, H100_BW)
    assert 5.11 < float(t.decode_step_seconds) * 1000 < 5.12
    assert t.decode_flops == 2 * MATMUL_8B + ATTENTION_PER_KEY_8B * 8192
    assert t.decode_compute_seconds < t.decode_memory_seconds / 100
    assert float(t.ridge_flops_per_byte) == pytest.approx(295.3, abs=0.1)


def test_when_decode_becomes_compute_bound():
    # At 8,192 tokens a request's own cache (1 GiB, 0.32 ms) takes longer to read than its
    # FLOPs take (0.02 ms): no batch makes decode compute-bound.
    _, t = timing(model="meta-llama/Llama-3.1-8B", gpu="h100-sxm-80gb", context=8192)
    assert t.compute_bound_batch is None
    # At 128 tokens: B x f / peak >= (W + B x k) / bw from B = W/bw / (f/peak - k/bw): 469.
    _, t = timing(model="meta-llama/Llama-3.1-8B", gpu="h100-sxm-80gb", context=128)
    f = 2 * MATMUL_8B + ATTENTION_PER_KEY_8B * 128
    k = 128 * 131_072
    exact = Fraction(2 * 8_030_261_248, H100_BW) / (Fraction(f, H100_BF16) - Fraction(k, H100_BW))
    assert t.compute_bound_batch == -(-exact.numerator // exact.denominator)
    assert t.compute_bound_batch == 469
    below, at = (timing(model="meta-llama/Llama-3.1-8B", gpu="h100-sxm-80gb", context=128, batch=b)[1]
                 for b in (t.compute_bound_batch - 1, t.compute_bound_batch))
    assert below.decode_compute_seconds < below.decode_memory_seconds
    assert at.decode_compute_seconds >= at.decode_memory_seconds


def test_moe_computes_with_active_parameters_and_reads_the_experts_its_batch_touches():
    # Qwen3-30B-A3B: 30,532,122,624 parameters, 3,353,032,704 active (151,936 x 2,048 embedding).
    _, t = timing(model="Qwen/Qwen3-30B-A3B", gpu="h100-sxm-80gb", context=4096)
    embedding = 151_936 * 2048
    attention = 48 * 2 * 32 * (128 + 128) * 4096
    assert t.decode_flops == 2 * (3_353_032_704 - embedding) + attention
    # One token touches its 8 of 128 experts per layer: it reads exactly its active parameters
    # (tests/serving/test_moe_decode.py works the larger batches).
    assert t.decode_bytes_per_gpu == 2 * 3_353_032_704 + 4096 * 98_304
    assert t.all_weights_bytes_per_gpu == 2 * 30_532_122_624


def test_chunked_prefill_and_time_to_first_token():
    e, t = timing(model="meta-llama/Llama-3.1-8B", gpu="h100-sxm-80gb", context=32768, prompt_tokens=32768,
                  prefill_chunk=2048, batch=8)
    assert t.prefill_steps == 16
    # The step carrying the last chunk costs more than a plain decode step, and the first token
    # takes at least the prompt's own prefill.
    assert t.chunked_step_seconds > t.decode_step_seconds
    assert t.ttft_seconds >= t.prefill_seconds
    # Sixteen steps each read the weights and the batch's cache: memory alone bounds TTFT.
    assert t.ttft_seconds >= Fraction(16 * t.decode_bytes_per_gpu, H100_BW)


def test_fp8_weights_run_on_fp8_tensor_cores_where_the_gpu_has_them():
    _, t = timing(model="meta-llama/Llama-3.1-8B", gpu="h100-sxm-80gb", weights_dtype="fp8")
    assert t.compute_precision == "fp8" and t.peak_flops_per_s == 1_978_900 * 10 ** 9
    _, t = timing(model="meta-llama/Llama-3.1-8B", gpu="a100-sxm-80gb", weights_dtype="fp8")
    assert t.compute_precision == "bf16" and t.peak_flops_per_s == 312 * 10 ** 12
    _, t = timing(model="meta-llama/Llama-3.1-8B", gpu="v100-sxm2-32gb")
    assert t.compute_precision == "fp16"


def test_tensor_parallel_divides_compute_and_each_gpu_reads_its_share():
    _, one = timing(model="meta-llama/Llama-3.1-70B", gpu="h100-sxm-80gb", gpus=4, context=4096)
    assert one.decode_compute_seconds == Fraction(one.decode_flops, 4 * H100_BF16)
    assert one.decode_bytes_per_gpu == -(-2 * 70_553_706_496 // 4) + 4096 * 327_680 // 4


def test_json_and_refusals():
    e, t = timing(model="meta-llama/Llama-3.1-8B", gpu="h100-sxm-80gb")
    data = to_json(e.scenario, e)
    for key in ("prefill_flops", "prefill_seconds", "decode_step_seconds", "decode_flops_per_byte",
                "ridge_flops_per_byte", "compute_bound_batch", "prefill_steps", "chunked_step_seconds",
                "ttft_seconds", "decode_tokens_per_s_per_request", "decode_tokens_per_s_total"):
        assert key in data
    assert data["decode_step_seconds"] == float(t.decode_step_seconds) and data["timing_missing"] is None
    # A prompt longer than the context, a chunk of 0: the field and the reason.
    bad = evaluate({"model": "meta-llama/Llama-3.1-8B", "context": "4096", "prompt-tokens": "8192"})
    assert bad.errors[0].field == "prompt-tokens" and "longer than the context" in bad.errors[0].message
    bad = evaluate({"model": "meta-llama/Llama-3.1-8B", "prefill-chunk": "0"})
    assert bad.errors[0].field == "prefill-chunk"
    # A GPU without peak figures (Apple): no time bounds, and why.
    mac = evaluate({"model": "meta-llama/Llama-3.1-8B", "gpu": "m2-ultra-192gb"})
    data = to_json(mac.scenario, mac)
    assert mac.ok and data["ttft_seconds"] is None and "peak FLOP/s" in data["timing_missing"]
    # What does not fit gets no time bounds either.
    over = evaluate({"model": "meta-llama/Llama-3.1-405B", "gpu": "h100-sxm-80gb", "gpus": "8"})
    data = to_json(over.scenario, over)
    assert data["ttft_seconds"] is None and data["timing_missing"] == "the configuration does not fit"


@settings(max_examples=40, derandomize=True, deadline=None)
@given(st.sampled_from(["meta-llama/Llama-3.1-8B", "Qwen/Qwen3-30B-A3B", "deepseek-ai/DeepSeek-V2-Lite",
                        "google/gemma-2-9b"]),
       st.integers(1, 32768), st.integers(1, 512), st.integers(1, 16384))
def test_more_batch_never_lowers_the_step_and_a_bigger_chunk_never_cheapens_its_step(model, context, batch, chunk):
    from kvcalc.serving.timing import decode_steps
    e = evaluate({"model": model, "gpu": "h200-141gb", "context": str(context), "prefill-chunk": str(chunk)})
    assert e.ok, e.errors
    t = e.timing
    step, step_after = decode_steps(e.scenario, e.result, t, [batch, batch + 1])
    assert step_after >= step
    bigger = evaluate({"model": model, "gpu": "h200-141gb", "context": str(context),
                       "prefill-chunk": str(chunk + 1)}).timing
    if chunk < context:
        assert bigger.chunked_step_seconds >= t.chunked_step_seconds


def test_a_gpu_with_only_a_4_bit_peak_on_record_has_no_time_bounds_not_a_crash():
    """A GPU whose datasheet gives only an fp4 peak (DGX Spark: "1 PFLOP FP4 with sparsity") has
    no 16-bit peak to time a bf16 model's step with: the time bounds say so."""
    from kvcalc.serving.timing import compute_precision
    assert compute_precision("bf16", {"fp4": 10 ** 15}) is None
    assert compute_precision("fp8", {"fp8": 2, "bf16": 1}) == "fp8"
    assert compute_precision("bf16", {"fp16": 1}) == "fp16"
