"""Sizing rules beyond the seeds: windows, state, blocks, prefixes, tensor and pipeline parallel."""

from collections import Counter
from fractions import Fraction

import pytest
from hypothesis import given, settings, strategies as st

from kvcalc import (
    FullAttention, InputError, MLAAttention, Model, NoCache, SlidingWindowAttention, StateSpaceLayer, compute,
    evaluate, precision)
from kvcalc.sizing import Deployment, Workload

BF16 = precision("bf16")


def work(context, batch=1, dtype="bf16", block=1, prefix=0):
    return Workload(context, precision(dtype), BF16, batch=batch, block_size_tokens=block, prefix_tokens=prefix)


def model_of(*layers, heads=None, max_context=None):
    return Model("test", tuple(layers), attention_heads=heads, max_context_tokens=max_context)


def test_sliding_window_caps_tokens():
    m = model_of(SlidingWindowAttention(8, 128, window=4096))
    assert compute(m, work(1000), Deployment()).kv_bytes_per_request == 1000 * 4096
    assert compute(m, work(100_000), Deployment()).kv_bytes_per_request == 4096 * 4096


def test_state_layers_are_fixed_per_request():
    state = StateSpaceLayer(conv_elements=300, ssm_elements=700, heads=10)
    m = model_of(state, FullAttention(1, 64))
    small, large = compute(m, work(10), Deployment()), compute(m, work(10_000), Deployment())
    assert small.kv_state_bytes_per_request == large.kv_state_bytes_per_request == 2000
    assert large.kv_bytes_per_request - small.kv_bytes_per_request == 9990 * 256


def test_block_rounding_per_layer():
    m = model_of(FullAttention(8, 128), SlidingWindowAttention(8, 128, window=100))
    # Full layer: 1000 tokens -> 63 blocks of 16 = 1008 slots. Window layer holds [900, 1000):
    # blocks 56..62 -> 7 blocks = 112 slots.
    r = compute(m, work(1000, block=16), Deployment())
    assert r.kv_bytes_per_request == (1008 + 112) * 4096


def test_shared_prefix_stored_once_in_whole_blocks():
    m = model_of(FullAttention(8, 128))
    r = compute(m, work(1000, batch=10, prefix=600), Deployment())
    assert r.kv_bytes_shared_prefix == 600 * 4096
    assert r.kv_bytes_total == (600 + 10 * 400) * 4096
    # vLLM caches full blocks only: 600 tokens = 37 whole blocks of 16 (592 tokens) shared.
    r = compute(m, work(1000, batch=10, prefix=600, block=16), Deployment())
    assert r.kv_bytes_shared_prefix == 592 * 4096
    assert r.kv_bytes_total == (592 + 10 * (1008 - 592)) * 4096


def test_prefix_longer_than_context_refused():
    with pytest.raises(InputError, match="prefix"):
        compute(model_of(FullAttention(1, 64)), work(10, prefix=11), Deployment())


def test_tp_splits_heads_and_replicates_below_one():
    m = model_of(FullAttention(8, 128), heads=64)
    base = compute(m, work(1024), Deployment()).kv_bytes_per_gpu
    assert compute(m, work(1024), Deployment(tp=4)).kv_bytes_per_gpu == base // 4
    assert compute(m, work(1024), Deployment(tp=8)).kv_bytes_per_gpu == base // 8
    # tp 16 > 8 kv heads: each rank still holds one whole head (engines.md, vLLM get_num_kv_heads)
    r16 = compute(m, work(1024), Deployment(tp=16))
    assert r16.kv_bytes_per_gpu == base // 8
    assert r16.kv_bytes_all_gpus == 2 * r16.kv_bytes_total


def test_tp_that_does_not_divide_is_refused():
    m = model_of(FullAttention(8, 128), heads=64)
    with pytest.raises(InputError) as info:
        compute(m, work(10), Deployment(tp=3))
    assert info.value.field == "tp"
    with pytest.raises(InputError):
        compute(model_of(FullAttention(8, 128), heads=48), work(10), Deployment(tp=32))


def test_pp_splits_layers_like_vllm():
    # vLLM get_pp_indices: 7 layers over 4 stages -> [2, 2, 2, 1]
    m = model_of(*[FullAttention(1, 64)] * 7)
    assert [sum(s.values()) for s in m.stages(4)] == [2, 2, 2, 1]
    r = compute(m, work(100), Deployment(pp=4))
    assert r.kv_bytes_per_gpu == 2 * 100 * 256
    assert r.kv_bytes_all_gpus == r.kv_bytes_total


def test_pp_most_loaded_stage_with_mixed_layers():
    m = model_of(FullAttention(1, 64), SlidingWindowAttention(1, 64, window=10))
    r = compute(m, work(1000), Deployment(pp=2))
    assert r.kv_bytes_per_gpu == 1000 * 256


def test_capacity_and_max_context_with_windows():
    m = model_of(*[SlidingWindowAttention(8, 128, window=4096)] * 32, max_context=32768)
    r = compute(m, work(8192, batch=4), Deployment(gpu_memory_bytes=80 << 30, weights_bytes=14 << 30))
    per_request = 32 * 4096 * 4096
    assert r.max_concurrency == (66 << 30) // per_request
    assert (r.max_context, r.max_context_limited_by) == (32768, "model")


def test_max_context_is_exact_boundary():
    m = model_of(FullAttention(8, 128))
    d = Deployment(gpu_memory_bytes=4096 * 1000 + 5, weights_bytes=5)
    r = compute(m, work(10, batch=3), d)
    assert r.max_context == 333 and r.max_context_limited_by == "memory"
    assert r.max_concurrency == 100


def test_weights_larger_than_memory_fit_nothing():
    m = model_of(FullAttention(8, 128))
    r = compute(m, work(10), Deployment(gpu_memory_bytes=10, weights_bytes=100))
    assert r.max_concurrency == 0 and r.max_context == 0


def test_memory_utilization_scales_budget():
    m = model_of(FullAttention(8, 128))
    r = compute(m, work(1000), Deployment(gpu_memory_bytes=1000 * 4096 * 10, memory_utilization=Fraction(9, 10),
                                          weights_bytes=0))
    assert r.usable_bytes_per_gpu == 1000 * 4096 * 9 and r.max_concurrency == 9


def test_kv_equals_weights_crossover():
    m = model_of(FullAttention(8, 128))
    r = compute(m, work(1, batch=2), Deployment(weights_bytes=4096 * 2 * 500))
    assert r.kv_equals_weights_context == 500


def test_decode_roofline():
    m = model_of(FullAttention(8, 128))
    r = compute(m, work(1000, batch=2), Deployment(weights_bytes=10 ** 9, bandwidth_bytes_per_s=10 ** 12))
    assert r.decode_step_seconds == Fraction(10 ** 9 + 2 * 1000 * 4096, 10 ** 12)


def test_llama_cpp_block_formats_row_rounding():
    # q4_0: 18 bytes per 32 elements = 4.5 bits; 8 heads x 128 x 2 = 2048 elements = 1152 bytes
    assert FullAttention(8, 128).row_bytes(precision("q4_0")) == 1152
    assert FullAttention(8, 128).row_bytes(precision("q8_0")) == 2176
    # Rounded up once per layer row: 3 elements at 4.5 bits = 13.5 -> 14 bits -> 2 bytes
    assert FullAttention(1, 1, 2).row_bytes(precision("q4_0")) == 2


def test_k_and_v_widths_may_differ():
    assert FullAttention(16, 192, 128).row_bytes(BF16) == 16 * (192 + 128) * 2


# ---- properties -------------------------------------------------------------------------

dims = st.integers(1, 64)
contexts = st.integers(1, 1 << 20)


@settings(max_examples=200, deadline=None)
@given(layers=st.integers(1, 128), heads=dims, head_dim=st.integers(1, 512), context=contexts, batch=st.integers(1, 512))
def test_full_attention_is_linear_in_batch_and_context(layers, heads, head_dim, context, batch):
    m = model_of(*[FullAttention(heads, head_dim)] * layers)
    r = compute(m, work(context, batch), Deployment())
    assert r.kv_bytes_per_token == 2 * layers * heads * head_dim * 2
    assert r.kv_bytes_per_request == r.kv_bytes_per_token * context
    assert r.kv_bytes_total == r.kv_bytes_per_request * batch


@settings(max_examples=200, deadline=None)
@given(window=st.integers(1, 1 << 16), context=contexts, heads=dims)
def test_window_caps_and_is_monotone(window, context, heads):
    m = model_of(SlidingWindowAttention(heads, 64, window=window))
    a = compute(m, work(context), Deployment()).kv_bytes_per_request
    b = compute(m, work(context + 1), Deployment()).kv_bytes_per_request
    assert a <= b <= heads * 256 * window
    assert a == heads * 256 * min(context, window)


@settings(max_examples=100, deadline=None)
@given(heads=dims, context=contexts, name=st.sampled_from(["fp8", "int8", "int4", "q8_0", "q4_0", "nvfp4", "fp32"]))
def test_quantized_ratio_is_bits_ratio(heads, context, name):
    m = model_of(FullAttention(heads, 128))
    q = compute(m, work(context, dtype=name), Deployment()).kv_bytes_per_request
    h = compute(m, work(context), Deployment()).kv_bytes_per_request
    assert Fraction(q, h) == precision(name).bits_per_element / 16


@settings(max_examples=100, deadline=None)
@given(kv_heads=st.sampled_from([1, 2, 4, 8, 16]), tp=st.sampled_from([1, 2, 4, 8, 16, 32]), context=contexts)
def test_tp_replication_rule(kv_heads, tp, context):
    m = model_of(FullAttention(kv_heads, 128), MLAAttention(512, 64))
    r = compute(m, work(context), Deployment(tp=tp))
    per_gpu_heads = max(1, kv_heads // tp)
    assert r.kv_bytes_per_gpu == context * (per_gpu_heads * 256 * 2 + 576 * 2)


@settings(max_examples=100, deadline=None)
@given(budget_tokens=st.integers(1, 1 << 24), batch=st.integers(1, 64), heads=dims)
def test_max_context_is_the_largest_that_fits(budget_tokens, batch, heads):
    m = model_of(FullAttention(heads, 64), SlidingWindowAttention(heads, 64, window=1000))
    d = Deployment(gpu_memory_bytes=budget_tokens * heads * 256, weights_bytes=0)
    r = compute(m, work(1, batch), d)
    if r.max_context:
        fits = compute(m, work(r.max_context, batch), d)
        over = compute(m, work(r.max_context + 1, batch), d)
        assert fits.kv_bytes_per_gpu <= d.gpu_memory_bytes < over.kv_bytes_per_gpu


def test_evaluate_collects_errors_without_raising():
    e = evaluate({"layers": "x", "kv-heads": "8", "head-dim": "128"})
    assert not e.ok and e.errors[0].field == "layers"
    e = evaluate({"model": "custom"})
    assert e.errors[0].field == "model"


@settings(max_examples=300, deadline=None)
@given(threshold=st.integers(1, 1 << 40), limit=st.integers(2, 1 << 41), guess=st.one_of(st.none(), st.integers(-5, 1 << 42)))
def test_search_with_any_guess_finds_the_boundary(threshold, limit, guess):
    from kvcalc.sizing import _largest_fitting
    found = _largest_fitting(lambda n: n <= threshold, 1, limit, guess)
    assert found == (None if threshold >= limit else threshold)
