"""Prefix caching with a hit rate (issue 26, part 5), worked by hand.

Llama 3.1 8B (meta-llama/Llama-3.1-8B config.json: 32 layers, 8 KV heads of 128, bf16): one token
is 131,072 B. At a context of 8,192 tokens one request holds 8,192 x 131,072 = 1,073,741,824 B.
A shared prefix of 2,050 tokens under vLLM (16-token blocks; v1/core/kv_cache_utils.py hashes full
blocks only, v1/core/kv_cache_manager.py stops at the prompt - 1) caches floor(2,050 / 16) x 16 =
2,048 tokens on a hit, 2,048 x 131,072 = 268,435,456 B stored once. At a hit rate of 0.5:
- expected cached tokens per request 0.5 x 2,048 = 1,024, and as many prefill tokens skipped;
- expected KV per request 1,073,741,824 - 0.5 x 268,435,456 = 939,524,096 B;
- expected requests in vLLM 0.33.0's KV memory on an H100 SXM (59,490,946,522 B, as
  tests/engines/test_engines.py's rules give it): (59,490,946,522 - 268,435,456) // 939,524,096 = 63.
SGLang's radix cache matches per page (page 1): the whole 2,050 tokens.
"""

from fractions import Fraction

import pytest

from kvcalc.errors import InputError
from kvcalc.evaluation import evaluate
from kvcalc.inputs.options import parse_options
from kvcalc.serving import prefix_hits
from kvcalc.serving import ServingSettings
from kvcalc.inputs.scenario import serving_settings_from

L8 = {"model": "meta-llama/Llama-3.1-8B", "gpu": "h100-sxm-80gb", "context": "8192"}
TOKEN = 2 * 32 * 8 * 128 * 2
REQUEST = 8_192 * TOKEN


def run(raw: dict):
    e = evaluate(raw)
    assert e.ok, e.errors
    return e


def test_a_hit_rate_needs_the_shared_prefix():
    values, errors = parse_options({"prefix-hit-rate": "0.5"})
    assert not errors
    with pytest.raises(InputError) as caught:
        prefix_hits.hit_rate_from(serving_settings_from(values), None)
    assert caught.value.field == "prefix-hit-rate" and "prefix-tokens" in caught.value.message
    values, _ = parse_options({"prefix-hit-rate": "0.5", "prefix-tokens": "2050"})
    assert prefix_hits.hit_rate_from(serving_settings_from(values), None) == Fraction(1, 2)
    assert prefix_hits.hit_rate_from(ServingSettings(prefix_tokens=2050), None) is None


@pytest.mark.parametrize("raw", ["1.5", "-0.1", "2"])
def test_a_hit_rate_outside_0_to_1_is_refused_naming_the_field(raw):
    _, errors = parse_options({"prefix-hit-rate": raw, "prefix-tokens": "2050"})
    assert [e.field for e in errors] == ["prefix-hit-rate"]


def test_half_the_requests_hitting_2050_tokens_under_vllm():
    e = run(dict(L8, engine="vllm", **{"prefix-tokens": "2050"}))
    assert e.engine.block_size == 16
    # less the weights as vLLM loads them: the checkpoint's and the rope cache (131,072 x 128 x 2 B)
    assert e.budget_bytes_per_gpu == 58_617_843_162 - 131_072 * 128 * 2
    f = prefix_hits.figures(Fraction(1, 2), e.scenario, e)
    assert f["prefix_hit_rate"] == Fraction(1, 2)
    assert f["cached_tokens_on_hit"] == 2_048
    assert f["expected_cached_tokens_per_request"] == 1_024
    assert f["expected_prefill_tokens_skipped"] == 1_024
    assert f["prefix_shared_bytes_per_gpu"] == 2_048 * TOKEN == 268_435_456
    assert f["kv_bytes_per_request_without_sharing"] == REQUEST == 1_073_741_824
    assert f["expected_kv_bytes_per_request"] == REQUEST - Fraction(268_435_456, 2) == 939_524_096
    assert f["expected_requests_fit"] == (58_617_843_162 - 268_435_456) // 939_524_096 == 62
    assert all("expectation" in line for line in f["lines"])


def test_sglang_matches_every_token_of_the_prefix_on_its_one_token_pages():
    e = run(dict(L8, engine="sglang", **{"prefix-tokens": "2050"}))
    x = prefix_hits.expected(Fraction(1, 4), e.scenario, e)
    assert x.block_tokens == 1 and x.cached_tokens_on_hit == 2_050
    assert x.expected_cached_tokens == Fraction(2_050, 4)
    assert x.expected_bytes_per_request == REQUEST - Fraction(2_050 * TOKEN, 4)


def test_a_prefix_as_long_as_the_prompt_leaves_the_last_block_to_compute():
    # vLLM: "we must recompute the last token to obtain logits": min(8,192, 8,191) // 16 x 16 = 8,176.
    e = run(dict(L8, engine="vllm", **{"prefix-tokens": "8192"}))
    x = prefix_hits.expected(Fraction(1), e.scenario, e)
    assert x.cached_tokens_on_hit == 8_176 and x.expected_prefill_skipped == 8_176
    # A hit shares the 511 blocks it caches; the last block it recomputes is its own.
    assert x.shared_bytes == 8_176 * TOKEN


def test_a_prefix_longer_than_the_prompt_shares_only_what_a_hit_caches():
    # prompt 100: a hit caches min(8,000, 99) // 16 x 16 = 96 tokens, and shares those bytes only.
    e = run(dict(L8, engine="vllm", **{"prefix-tokens": "8000", "prompt-tokens": "100"}))
    x = prefix_hits.expected(Fraction(1, 2), e.scenario, e)
    assert x.cached_tokens_on_hit == 96 and x.shared_bytes == 96 * TOKEN
    # A miss holds what vLLM reserves for a request (its blocks at the context); at rate 0 the
    # expectation is vLLM's own capacity.
    zero = prefix_hits.expected(Fraction(0), e.scenario, e)
    assert zero.bytes_without_sharing == e.engine.kv_bytes_per_request
    assert zero.expected_requests_fit == int(e.engine.max_concurrency)


def test_llama_cpp_shares_no_prefix_between_its_slots():
    e = evaluate(dict(L8, engine="llama.cpp", **{"prefix-tokens": "2000", "prefix-hit-rate": "0.5"}))
    assert not e.ok and e.errors[0].field == "prefix-hit-rate" and "-np" in e.errors[0].message


def test_the_ideal_at_rate_1_is_the_shared_prefix_it_sizes_and_at_rate_0_no_sharing():
    shared = run(dict(L8, **{"prefix-tokens": "2000"}))
    alone = run(L8)
    assert shared.result.max_concurrency == 85 and alone.result.max_concurrency == 64
    assert prefix_hits.expected(Fraction(1), shared.scenario, shared).expected_requests_fit == 85
    assert prefix_hits.expected(Fraction(0), shared.scenario, shared).expected_requests_fit == 64
    half = prefix_hits.expected(Fraction(1, 2), shared.scenario, shared)
    assert half.expected_requests_fit == (69_460_287_488 - 2_000 * TOKEN) // (REQUEST - 1_000 * TOKEN) == 73
