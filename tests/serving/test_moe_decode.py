"""The mixture-of-experts decode bound (issue 23, point 6), worked by hand like the seeds.

A decode step of B tokens reads the attention, shared and dense weights, and of each MoE layer's
E routed experts only those its tokens touch: under uniform routing (k of E per token, tokens
independent) an expert is missed by all B with probability (1 - k/E)^B, so E (1 - (1 - k/E)^B)
are touched on average (app/kvcalc/experts.py). Before, a step read every weight: Qwen3-30B-A3B
at batch 1 on an H100 was bounded at 54 tokens/s from 56.87 GiB read, though one token goes
through 8 of 128 experts per layer (3.35 B of its 30.53 B parameters).

Every figure below is computed here from the config.json numbers (the presets' configs in
app/kvcalc/data/models.json, the verbatim DeepSeek-V3 config.json in tests/fixtures/hf) and the
GPU datasheets in gpus.json (H100 SXM 3.35 TB/s, H200 4.8 TB/s), then checked exactly against
the engine's.
"""

import time
from fractions import Fraction

from hypothesis import given, settings, strategies as st

from kvcalc import evaluate
from kvcalc.experts import EXACT_BITS, RoutedExperts, expected_experts, routed_experts, weights_read
from kvcalc.reports.report import to_json
from kvcalc.serving.timing import batch_series, decode_steps
from support import cli, hf_fixture

H100_BW, H200_BW = 3_350 * 10 ** 9, 4_800 * 10 ** 9


def ceil(x: Fraction) -> int:
    return -(-x.numerator // x.denominator)


def timing(**values):
    e = evaluate({k.replace("_", "-"): v if isinstance(v, dict) else str(v) for k, v in values.items()})
    assert e.ok, e.errors
    return e, e.timing


# ---- Qwen3-30B-A3B (config: 48 layers, hidden 2,048, 32 query / 4 kv heads of 128, vocabulary
# 151,936 untied, 128 routed experts of width 768, top-8, no shared expert, bf16) ----------------

QWEN_E, QWEN_K, QWEN_LAYERS = 128, 8, 48
QWEN_ROUTED = QWEN_LAYERS * QWEN_E * 3 * 2048 * 768            # gate, up, down of every expert
QWEN_PER_LAYER = (4096 * 2048 + 2 * 512 * 2048 + 2048 * 4096   # q, k, v, o
                  + 2 * 128 + 2 * 2048                         # q/k norms, the two layer norms
                  + 128 * 2048)                                # the router
QWEN_REST = 2 * 151_936 * 2048 + 2048 + QWEN_LAYERS * QWEN_PER_LAYER   # embedding, head, final norm
QWEN_KV_PER_TOKEN = 2 * 48 * 4 * 128 * 2                       # K and V, 48 layers, 4 heads of 128, bf16


def test_qwen3_30b_a3b_counts_add_up():
    assert QWEN_ROUTED == 28_991_029_248 and QWEN_REST == 1_541_093_376
    assert QWEN_ROUTED + QWEN_REST == 30_532_122_624                    # the preset's parameters
    assert QWEN_REST + QWEN_ROUTED * QWEN_K // QWEN_E == 3_353_032_704  # its active parameters


def test_qwen3_30b_a3b_batch_1_reads_its_active_parameters_not_all_57_gib():
    e, t = timing(model="Qwen/Qwen3-30B-A3B", gpu="h100-sxm-80gb", context=4096, batch=1)
    # 128 x (1 - (120/128)^1) = 8 experts per layer: exactly the token's own top-8.
    expected = QWEN_E * (1 - Fraction(QWEN_E - QWEN_K, QWEN_E) ** 1)
    assert expected == 8 == t.decode_experts_expected
    weights = ceil(2 * QWEN_REST + 2 * QWEN_ROUTED * (1 - Fraction(120, 128) ** 1))
    assert weights == 2 * 3_353_032_704 == 6_706_065_408 == t.decode_weights_bytes_per_gpu
    cache = 4096 * QWEN_KV_PER_TOKEN
    assert t.decode_bytes_per_gpu == weights + cache == 7_108_718_592
    assert t.decode_step_seconds == t.decode_memory_seconds == Fraction(7_108_718_592, H100_BW)
    assert round(float(1 / t.decode_step_seconds), 1) == 471.3           # tokens/s, was 54.5
    every = 2 * 30_532_122_624
    assert t.all_weights_bytes_per_gpu == every
    assert round(float(Fraction(H100_BW, every + cache)), 1) == 54.5     # the old bound, every weight read
    assert t.routed.layers == QWEN_LAYERS and t.routed.routed_bytes == 2 * QWEN_ROUTED
    assert t.unrouted_weights_bytes_per_gpu == 2 * QWEN_REST
    assert not any("not known" in n for n in t.notes)


def test_qwen3_30b_a3b_batch_64_touches_almost_every_expert():
    e, t = timing(model="Qwen/Qwen3-30B-A3B", gpu="h100-sxm-80gb", context=2048, batch=64)
    # 128 x (1 - (120/128)^64) = 125.94 experts per layer (not 8 x 64 = 512: tokens share experts).
    expected = QWEN_E * (1 - Fraction(120, 128) ** 64)
    assert t.decode_experts_expected == expected and round(float(expected), 2) == 125.94
    weights = ceil(2 * QWEN_REST + 2 * QWEN_ROUTED * (1 - Fraction(120, 128) ** 64))
    assert weights == t.decode_weights_bytes_per_gpu == 60_132_160_677
    cache = 64 * 2048 * QWEN_KV_PER_TOKEN
    assert t.decode_bytes_per_gpu == weights + cache
    assert t.decode_memory_seconds > t.decode_compute_seconds
    assert t.decode_step_seconds == Fraction(weights + cache, H100_BW)
    # 73,017,062,565 B / 3.35 TB/s = 21.80 ms: <= 2,936 tokens/s in total, 45.9 per request
    # (every weight read: 73,949,147,136 B, 2,899.3 tokens/s; at 64 the experts are nearly all read).
    assert weights + cache == 73_017_062_565
    assert round(float(64 / t.decode_step_seconds)) == 2_936
    assert round(float(1 / t.decode_step_seconds), 1) == 45.9
    assert round(64 * H100_BW / (2 * 30_532_122_624 + cache), 1) == 2_899.3
    # The sizing's own step (used where no FLOP peaks are on record) reads the same bytes.
    assert e.result.decode_step_seconds == Fraction(weights + cache, H100_BW)


# ---- DeepSeek-V3 (config: 61 layers, hidden 7,168; the first 3 dense (first_k_dense_replace),
# 58 MoE layers of 256 routed experts of width 2,048, top-8, 1 shared expert; MLA latent 512 +
# rope 64; fp8 weights in 128 x 128 blocks with a float32 scale each) ----------------------------

V3_E, V3_K, V3_MOE_LAYERS = 256, 8, 61 - 3
V3_ROUTED_PARAMS = V3_MOE_LAYERS * V3_E * 3 * 7168 * 2048
# One expert tensor (2,048 x 7,168 or 7,168 x 2,048) in fp8: a byte a weight and a float32 per
# 128 x 128 block, 16 x 56 blocks.
V3_TENSOR_FP8 = 2048 * 7168 + 4 * (2048 // 128) * (7168 // 128)
V3_ROUTED_FP8 = V3_MOE_LAYERS * V3_E * 3 * V3_TENSOR_FP8
V3_WEIGHTS_FP8 = 673_150_611_808     # the config's fp8 blocks (tests/readers/test_weights_2026.py works it)
V3_KV_PER_TOKEN = 61 * (512 + 64) * 2   # the MLA latent, kept whole on every tensor-parallel rank


def test_deepseek_v3_architecture_batch_1_and_64_on_8_h200():
    # The DeepSeek-V3.1 preset: DeepSeek-V3's config.json with the same shapes and fp8 blocks
    # (the DeepSeek-V3 preset's own config omits the MoE keys: see the test after this one).
    assert hf_fixture("deepseek-ai__DeepSeek-V3.json")["n_routed_experts"] == V3_E
    assert V3_ROUTED_FP8 == 654_068_416_512
    rest = V3_WEIGHTS_FP8 - V3_ROUTED_FP8                    # attention, 3 dense MLPs, shared experts...
    assert rest == 19_082_195_296
    for batch, context, experts, weights_read_gpu in ((1, 4096, 8, 4_940_229_164),
                                                      (64, 2048, None, 73_426_585_782)):
        e, t = timing(model="deepseek-ai/DeepSeek-V3.1", gpu="h200-141gb", gpus=8, context=context, batch=batch)
        expected = V3_E * (1 - Fraction(V3_E - V3_K, V3_E) ** batch)
        assert t.decode_experts_expected == expected
        if experts:
            assert expected == experts
        else:
            assert round(float(expected), 1) == 222.4
        weights = ceil((rest + V3_ROUTED_FP8 * (1 - Fraction(248, 256) ** batch)) / 8)   # tp = 8 splits each
        assert weights == weights_read_gpu == t.decode_weights_bytes_per_gpu
        cache = batch * context * V3_KV_PER_TOKEN
        assert t.decode_bytes_per_gpu == weights + cache
        assert t.decode_memory_seconds > t.decode_compute_seconds
        assert t.decode_step_seconds == Fraction(weights + cache, H200_BW)
        assert t.routed.layers == V3_MOE_LAYERS and t.routed.routed_bytes == V3_ROUTED_FP8
    # Batch 1: 4.94 GB per GPU, 5.23 GB with the cache: <= 917.7 tokens/s (every weight: <= 56.9).
    _, one = timing(model="deepseek-ai/DeepSeek-V3.1", gpu="h200-141gb", gpus=8, context=4096, batch=1)
    assert round(float(1 / one.decode_step_seconds), 1) == round(H200_BW / (4_940_229_164 + 4096 * 70_272), 1)
    assert round(float(1 / one.decode_step_seconds)) == 918


def test_deepseek_v3_config_json_at_one_byte_a_weight():
    """The verbatim DeepSeek-V3 config.json with weights-dtype fp8: its linear layers and experts a
    byte a weight plus a float32 scale per tensor, the embedding, head and norms 16-bit, as vLLM
    loads such a checkpoint (readers/quantized_bytes.typed_weights): 672,987,439,008 B; the routed
    experts from its tensors, 58 MoE layers x 256 x 3 x (2,048 x 7,168 + 4) B."""
    cfg = hf_fixture("deepseek-ai__DeepSeek-V3.json")
    total, active = 671_026_419_200, 37_552_297_472          # counted from its shapes (test_weights_2026)
    assert V3_E * (total - active) // (V3_E - V3_K) == V3_ROUTED_PARAMS == 653_908_770_816
    typed, routed = 672_987_439_008, V3_MOE_LAYERS * V3_E * 3 * (2048 * 7168 + 4)
    for batch in (1, 64):
        e, t = timing(hf_config=cfg, weights_dtype="fp8", gpu="h200-141gb", gpus=8, context=2048, batch=batch)
        assert e.result.weights_bytes == typed
        weights = ceil((typed - routed * Fraction(248, 256) ** batch) / 8)
        assert t.decode_weights_bytes_per_gpu == weights
        assert t.decode_bytes_per_gpu == weights + batch * 2048 * V3_KV_PER_TOKEN
        if batch == 1:       # one token reads all but the routed experts, and 8 of their 256
            assert weights == ceil(Fraction(typed - routed + routed * 8 // 256, 8))
        assert "as weights-dtype fp8 stores them" in t.routed.how


def test_a_share_that_cannot_be_known_reads_every_weight_and_says_so():
    # The DeepSeek-V3 preset's config has no expert keys and rounded counts (671B, 37B); the
    # verbatim config.json's quantized bytes are priced as a whole. Both read every weight, with a
    # note; neither guesses.
    for values in ({"model": "deepseek-ai/DeepSeek-V3"},
                   {"hf-config": hf_fixture("deepseek-ai__DeepSeek-V3.json")}):
        e, t = timing(**values, gpu="h200-141gb", gpus=8, context=4096)
        if t.routed is None:
            assert t.decode_weights_bytes_per_gpu == ceil(Fraction(e.result.weights_bytes, 8))
            assert any("not known" in n and "every weight" in n for n in t.notes)
            assert t.decode_experts_expected is None
            assert "every weight" in to_json(e.scenario, e)["decode_experts_note"]
        else:       # once the share is known, it is DeepSeek-V3.1's (the same shapes)
            assert t.routed.routed_bytes == V3_ROUTED_FP8
    # A size given by hand that no pricing of the counted parameters explains: the same.
    e, t = timing(model="Qwen/Qwen3-30B-A3B", weights_gib=50, gpu="h100-sxm-80gb", context=4096)
    assert t.routed is None and t.decode_weights_bytes_per_gpu == 50 * 2 ** 30
    assert any("not known" in n for n in t.notes)


def test_a_dense_model_is_unchanged():
    e, t = timing(model="meta-llama/Llama-3.1-8B", gpu="h100-sxm-80gb", context=8192)
    assert t.routed is None and t.decode_experts_expected is None and not t.notes
    assert t.decode_weights_bytes_per_gpu == t.all_weights_bytes_per_gpu == 2 * 8_030_261_248
    assert t.decode_bytes_per_gpu == 2 * 8_030_261_248 + 8192 * 131_072
    code, out, _ = cli("--model", "meta-llama/Llama-3.1-8B", "--gpu", "h100-sxm-80gb")
    assert code == 0 and "routed experts" not in out and "uniform routing" not in out


def test_a_batch_of_a_million_is_fast_and_reads_every_expert():
    e, t = timing(model="Qwen/Qwen3-30B-A3B", gpu="h100-sxm-80gb", context=128, batch=10 ** 6)
    every = 2 * 30_532_122_624
    # (120/128)^1,000,000 x 58 GB is far below a byte: every weight, to the byte.
    assert t.decode_weights_bytes_per_gpu == every
    assert 128 - Fraction(1, 10 ** 30) < t.decode_experts_expected <= 128
    routed = t.routed
    best = float("inf")
    for _ in range(5):
        start = time.perf_counter()
        for _ in range(100):
            weights_read(routed, every, 1, 10 ** 6)
        best = min(best, (time.perf_counter() - start) / 100)
    assert best < 0.0002, f"{best * 1e3:.3f} ms a call"
    # The batch chart (every power of two to a million, and the batch): well under a millisecond
    # a point (the page draws it on every keystroke, in Pyodide about 3 times slower).
    best = float("inf")
    for _ in range(5):
        start = time.perf_counter()
        series = batch_series(e.scenario, e.result, t, 10 ** 6)
        best = min(best, time.perf_counter() - start)
    assert len(series["batches"]) == 21 and best < 0.02, f"{best * 1e3:.3f} ms"


def test_large_batches_are_exact_past_the_written_out_power():
    """Past EXACT_BITS the power is bracketed in fixed point; the byte count is the exact ceiling
    all the same (checked against the Fraction for batches where that is still cheap)."""
    routed = RoutedExperts(128, 8, 48, Fraction(57_982_058_496), "")
    first = EXACT_BITS // 8 + 1                      # the first batch past the written-out power
    for batch in (first, first + 1, 700, 1000, 1500, 2500):
        exact = ceil((61_064_245_248 - routed.routed_bytes * Fraction(120, 128) ** batch) / 3)
        assert weights_read(routed, 61_064_245_248, 3, batch) == exact
    odd = RoutedExperts(10, 3, None, Fraction(7_000_001, 3), "")
    for batch in (1500, 1501, 2047):
        exact = ceil((10 ** 7 - odd.routed_bytes * Fraction(7, 10) ** batch) / 7)
        assert weights_read(odd, 10 ** 7, 7, batch) == exact


def test_the_cli_and_json_say_it_is_an_expectation():
    code, out, _ = cli("--model", "Qwen/Qwen3-30B-A3B", "--context", "4096", "--gpu", "h100-sxm-80gb", "--explain")
    assert code == 0
    line = next(l for l in out.splitlines() if "Weights a decode step reads" in l)
    assert "128 x (1 - (120/128)^1) = 8 of 128 routed experts per MoE layer (48 layers)" in line
    assert "expected under uniform routing" in line
    assert "<= 471.3 tokens/s per request" in out
    e, t = timing(model="Qwen/Qwen3-30B-A3B", context=2048, gpu="h100-sxm-80gb", batch=64)
    data = to_json(e.scenario, e)
    assert data["decode_weights_bytes_per_gpu"] == 60_132_160_677
    assert data["decode_experts_expected_per_layer"] == float(128 * (1 - Fraction(120, 128) ** 64))
    assert data["decode_experts_note"].startswith("≈ 125.9 of 128 routed experts per MoE layer read, expected "
                                                  "under uniform routing")
    # The page: the decode step's figure and the explainer's weights say it too.
    from kvcalc.reports.time_report import timing_texts
    texts = timing_texts(e.scenario, e, True)
    assert texts["metrics"]["decode_step_seconds"][2] == ("memory-bound; ≈ 125.9 of 128 experts per layer read, "
                                                          "expected under uniform routing")
    assert "expected to touch under uniform routing" in texts["live"]["time-weights"]
    dense = evaluate({"model": "meta-llama/Llama-3.1-8B", "gpu": "h100-sxm-80gb"})
    assert to_json(dense.scenario, dense)["decode_experts_note"] is None


@settings(max_examples=200, derandomize=True, deadline=None)
@given(st.integers(2, 512), st.data(), st.integers(1, 10 ** 12), st.sampled_from([1, 2, 4, 8]),
       st.integers(1, 5000), st.integers(1, 10 ** 6))
def test_bytes_never_fall_as_the_batch_grows_nor_pass_every_weight(experts, data, weights, tp, batch, more):
    top_k = data.draw(st.integers(1, experts))
    routed_bytes = Fraction(data.draw(st.integers(0, weights)), data.draw(st.sampled_from([1, 2, 8])))
    routed = RoutedExperts(experts, top_k, None, min(routed_bytes, Fraction(weights)), "")
    every = ceil(Fraction(weights, tp))
    read, later = weights_read(routed, weights, tp, batch), weights_read(routed, weights, tp, batch + more)
    assert read <= later <= every
    assert weights_read(routed, weights, tp, 1) <= read
    assert 0 < expected_experts(experts, top_k, batch) <= min(experts, top_k * batch)


@settings(max_examples=30, derandomize=True, deadline=None)
@given(st.sampled_from(["Qwen/Qwen3-30B-A3B", "deepseek-ai/DeepSeek-V3.1", "openai/gpt-oss-120b",
                        "mistralai/Mixtral-8x7B-v0.1", "nvidia/MiniMax-M2.5-NVFP4"]),
       st.integers(1, 4096), st.integers(1, 1 << 20))
def test_decode_steps_of_moe_presets_grow_with_the_batch_up_to_every_weight(model, batch, more):
    e = evaluate({"model": model, "gpu": "h200-141gb", "gpus": "8", "context": "1024"})
    assert e.ok, e.errors
    t = e.timing
    routed, _ = routed_experts(e.scenario.model, e.result.weights_bytes)
    assert routed is not None and routed.routed_bytes < e.result.weights_bytes
    small, large = decode_steps(e.scenario, e.result, t, [batch, batch + more])
    assert small <= large
    for b in (batch, batch + more):
        assert weights_read(routed, e.result.weights_bytes, 8, b) <= t.all_weights_bytes_per_gpu


def test_the_compute_bound_batch_of_a_mixture_of_experts():
    """The smallest batch whose step is compute-bound, with the weights read growing with the
    batch: one request fewer still waits on memory. By then (thousands of requests) every expert
    is touched, so it is where reading every weight puts it, or a little below."""
    values = {"model": "deepseek-ai/DeepSeek-V3.1", "gpu": "h200-141gb", "gpus": 8, "context": 128}
    _, t = timing(**values)
    b = t.compute_bound_batch
    below, at = (timing(**values, batch=n)[1] for n in (b - 1, b))
    assert below.decode_compute_seconds < below.decode_memory_seconds
    assert at.decode_compute_seconds >= at.decode_memory_seconds
    f = t.decode_flops                                   # one request's FLOPs at batch 1
    kv = 128 * V3_KV_PER_TOKEN
    every = Fraction(t.all_weights_bytes_per_gpu, H200_BW) / (Fraction(f, 8 * t.peak_flops_per_s)
                                                              - Fraction(kv, H200_BW))
    assert b <= ceil(every) and b == 6_066
