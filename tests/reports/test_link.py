"""Share links: the fragment holds the inputs under the CLI's long option names.

A link is input from a stranger: decoding never raises, keeps what is valid, and says what it
ignored and why.
"""

from hypothesis import given, settings, strategies as st

from kvcalc.reports.link import decode, decode_config, encode, encode_config, evaluate_link
from kvcalc.evaluation import evaluate
from kvcalc.inputs.options import OPTIONS, parse_options

from support import hf_fixture


def test_issue_example_link():
    evaluation, ignored = evaluate_link("#model=meta-llama/Llama-3.1-70B&context=8192&batch=32&kv-dtype=fp8&gpus=8")
    assert ignored == [] and evaluation.ok
    assert evaluation.result.kv_bytes_total == 32 * 8192 * 327_680 // 2


def test_round_trip_every_kind_of_value():
    values = {"model": "google/gemma-2-9b", "context": "131072", "batch": "7", "kv-dtype": "q4_0",
              "block-size": "16", "prefix-tokens": "1000", "gpus": "4", "pp": "2", "gpu": "l40s-48gb",
              "memory-utilization": "0.92", "weights-dtype": "fp8", "overhead-gib": "1.25", "unit": "gb"}
    raw, ignored = decode(encode(values))
    assert ignored == [] and raw == values
    assert evaluate(raw).result == evaluate(values).result


def test_imported_config_round_trips():
    cfg = hf_fixture("Qwen__Qwen3-Next-80B-A3B-Thinking.json")
    assert decode_config(encode_config(cfg)) == cfg
    raw, ignored = decode(encode({"hf-config": cfg, "context": "262144"}))
    assert ignored == [] and raw["hf-config"] == cfg


def test_bad_values_are_dropped_and_reported():
    evaluation, ignored = evaluate_link("model=meta-llama/Llama-3.1-8B&context=-1&batch=<script>&foo=1&gpu=h100-sxm-80gb")
    reasons = dict(ignored)
    assert set(reasons) == {"context", "batch", "foo"}
    assert "whole number" in reasons["batch"] and reasons["foo"] == "unknown key"
    assert evaluation.ok and evaluation.result.max_concurrency > 0


def test_cross_field_errors_drop_the_culprit():
    # 3 GPUs cannot split Llama 3.1 8B's 8 kv heads: the link loads on one GPU and says why.
    evaluation, ignored = evaluate_link("model=meta-llama/Llama-3.1-8B&gpus=3")
    assert evaluation.ok and ignored[0][0] == "gpus"


def test_repeated_keys_keep_the_first():
    raw, ignored = decode("context=100&context=200")
    assert raw == {"context": "100"} and ignored == [("context", "repeated; the first value was kept")]


def test_damaged_config_is_reported():
    raw, ignored = decode("hf-config=!!!notbase64&context=100")
    assert raw == {"context": "100"} and ignored[0][0] == "hf-config"


def test_huge_fragment_is_refused_whole():
    raw, ignored = decode("context=1&" + "x" * 300_000)
    assert raw == {} and "limit" in ignored[0][1]


keys = st.sampled_from([o.name for o in OPTIONS] + ["", "x", "<b>", "model\u202e"])
values = st.one_of(st.text(max_size=40), st.integers(-10 ** 30, 10 ** 30).map(str),
                   st.sampled_from(["NaN", "1e308", "-1", "0", "javascript:alert(1)", "%00", "%ZZ", "8k"]))


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(keys, values), max_size=12))
def test_decoder_never_raises_and_keeps_only_valid(pairs):
    from urllib.parse import quote
    fragment = "&".join(f"{quote(k)}={quote(v)}" for k, v in pairs)
    raw, ignored = decode(fragment)
    assert all(isinstance(k, str) and isinstance(why, str) for k, why in ignored)
    _, errors = parse_options(raw)
    assert errors == []
    evaluation, _ = evaluate_link(fragment)   # never raises either
    assert evaluation.ok or evaluation.errors


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=300))
def test_any_text_as_a_fragment(text):
    # Only the documented outcomes: values kept, reasons given, or InputError values; no exception.
    raw, ignored = decode(text)
    evaluation, dropped = evaluate_link(text)
    assert isinstance(raw, dict) and all(isinstance(why, str) for _, why in ignored + dropped)
    assert evaluation.ok or all(e.field and e.message for e in evaluation.errors)


@settings(max_examples=500, deadline=None)
@given(st.text(max_size=60), st.sampled_from(["", "/", "/-_.:"]))
def test_percent_codec_matches_the_standard_library(text, safe):
    import urllib.parse
    from kvcalc.reports.link import quote, unquote
    assert quote(text, safe=safe) == urllib.parse.quote(text, safe=safe)
    assert unquote(quote(text, safe=safe)) == text


@settings(max_examples=500, deadline=None)
@given(st.text(alphabet="%0123456789abcdefABCDEFgz\u00e9 ", max_size=30))
def test_unquote_matches_the_standard_library(text):
    import urllib.parse
    from kvcalc.reports.link import unquote
    assert unquote(text) == urllib.parse.unquote(text, errors="replace")


def test_a_bad_choice_is_refused_as_the_link_is_read_without_evaluating(monkeypatch):
    """Engine, precisions, GPU and unit are typed at the edge: a link with `kv-dtype=fp8x` or
    `engine=tgi` loses those entries, each with its reason, as it is decoded; nothing is computed."""
    import kvcalc.evaluation
    from kvcalc.reports import link

    def never(*_):
        raise AssertionError("the scenario was evaluated")
    monkeypatch.setattr(kvcalc.evaluation, "build_scenario", never)
    raw, ignored = link.decode("model=meta-llama/Llama-3.1-8B&kv-dtype=fp8x&engine=tgi&gpu=h1000&unit=tb"
                               "&weights-dtype=int3&kv-dtype-v=Q8_0&context=4096")
    reasons = dict(ignored)
    assert set(reasons) == {"kv-dtype", "engine", "gpu", "unit", "weights-dtype"}
    assert reasons["kv-dtype"].startswith("unknown precision 'fp8x'")
    assert reasons["engine"].startswith("unknown engine 'tgi'")
    assert reasons["unit"] == "expected gib or gb, got 'tb'"
    assert raw == {"model": "meta-llama/Llama-3.1-8B", "kv-dtype-v": "Q8_0", "context": "4096"}
