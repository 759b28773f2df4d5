"""Hostile config.json values: every numeric key of one config of every supported family, set in
turn to a value no model has, is refused in one line naming a field or gives figures that are
non-negative and finite; never a traceback, in the engine or in anything that renders its result
(the CLI table, JSON, exports, launch commands, the page's texts, tables and chart series).

The failures this guards against were found by hand (issue 19): a qwen3_moe `mlp_only_layers` of 5
or "0,1" and a gpt_oss `experts_per_token` of "4", [4], 2.5 or 10**400 ended in tracebacks;
`experts_per_token: -1000` gave "Fits" with a negative decode step and -595 billion active
parameters."""

import json
import math
import os
import zlib
from fractions import Fraction

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from kvcalc.readers import presets
from kvcalc.reports.compare import attention_variants, precision_rows
from kvcalc.errors import InputError
from kvcalc.reports.export import export
from kvcalc.engines import ENGINES
from kvcalc.serving.launch import launch
from kvcalc.evaluation import Unexpected, evaluate
from kvcalc.reports.report import page_texts, table, to_json
from kvcalc.reports.memory_bar import memory_bar
from kvcalc.reports.sweep import concurrency_series, context_points, memory_series
from kvcalc.serving.timing import batch_series, roofline_series
from support import FIXTURES, cli, fixture_names, hf_fixture

HOSTILE = (-1000, -1, 0, 0.5, 2.5, "4", [4], {"n": 4}, True, 10 ** 400, float("nan"), float("inf"), 1 << 62,
           1, 7, 64.0, 1 << 20)
ENGINE_CYCLE = (None, "vllm", "sglang", "llama.cpp")
# Negative by meaning: the memory left for the cache when the weights do not fit.
STATS = {"refused": 0, "computed": 0}
RENDERED: set = set()        # fingerprints of the (scenario, result) pairs already rendered
SIGNED = {"kv_budget_bytes_per_gpu", "engine_kv_budget_bytes_per_gpu",
          # The source's formula: each difference is signed (utilization takes memory away, windows
          # give requests back), and the textbook's free memory is less than none when the weights
          # do not fit.
          "change_bytes", "change_requests", "free_bytes"}


def family_configs() -> dict:
    """Every real config.json among the fixtures, and one preset config per model_type besides."""
    chosen = {name[:-len(".json")]: hf_fixture(name) for name in fixture_names()}
    for entry in presets.model_entries():
        cfg = entry["config"]
        kind = (cfg.get("text_config") or cfg).get("model_type") or cfg.get("model_type") or entry["id"]
        chosen.setdefault(kind, cfg)
    return chosen


# The layouts only tests/readers/test_hfconfig.py's hand-written configs reach (no preset or fixture has them).
LAYOUTS = {
    "mpt": {"model_type": "mpt", "d_model": 4096, "n_heads": 32, "n_layers": 32,
            "attn_config": {"attn_type": "grouped_query_attention", "kv_n_heads": 8}},
    "dbrx": {"model_type": "dbrx", "d_model": 6144, "n_heads": 48, "n_layers": 40,
             "attn_config": {"clip_qkv": 8, "kv_n_heads": 8, "rope_theta": 500000}},
    "chatglm": {"model_type": "chatglm", "num_layers": 40, "num_attention_heads": 32, "hidden_size": 4096,
                "multi_query_attention": True, "multi_query_group_num": 2, "kv_channels": 128},
    "gpt_bigcode": {"model_type": "gpt_bigcode", "n_embd": 6144, "n_head": 48, "n_layer": 40, "multi_query": True},
    "llama4": {"model_type": "llama4", "text_config": {"model_type": "llama4_text", "num_hidden_layers": 8,
               "num_attention_heads": 40, "num_key_value_heads": 8, "head_dim": 128, "hidden_size": 5120,
               "attention_chunk_size": 8192, "no_rope_layers": [1, 1, 1, 0, 1, 1, 1, 0]}},
    "glm4_moe_lite": {"model_type": "glm4_moe_lite", "num_hidden_layers": 47, "num_attention_heads": 20,
                      "hidden_size": 2048, "kv_lora_rank": 512, "qk_rope_head_dim": 64, "qk_nope_head_dim": 192,
                      "v_head_dim": 256},
    "minicpm3": {"model_type": "minicpm3", "num_hidden_layers": 62, "num_attention_heads": 40, "hidden_size": 2560,
                 "kv_lora_rank": 256, "qk_rope_head_dim": 32, "qk_nope_head_dim": 64, "v_head_dim": 64},
    "bamba": {"model_type": "bamba", "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8,
              "hidden_size": 4096, "attn_layer_indices": [9, 18, 27], "mamba_n_heads": 128, "mamba_d_head": 64,
              "mamba_n_groups": 1, "mamba_d_state": 128, "mamba_d_conv": 4},
    "gemma3n_text": {"model_type": "gemma3n_text", "num_hidden_layers": 35, "num_attention_heads": 8,
                     "num_key_value_heads": 2, "head_dim": 256, "hidden_size": 2048, "num_kv_shared_layers": 15,
                     "layer_types": (["sliding_attention"] * 4 + ["full_attention"]) * 7, "sliding_window": 512},
    "RefinedWeb": {"model_type": "RefinedWeb", "n_head": 128, "n_head_kv": 8, "n_layer": 60, "hidden_size": 8192},
    "deepseek_v32": dict(hf_fixture("deepseek-ai__DeepSeek-V3.json"), model_type="deepseek_v32", index_head_dim=128),
}
FAMILIES = dict(family_configs(), **LAYOUTS)

# `make test` runs a fixed sample of the sweeps: every key of every family once (its first value),
# and an eighth of the other (key, value) cases, chosen by a hash of the case, the same every run.
# `make test-all` (which CI runs too) sets KVCALC_SWEEP=all and runs every case.
WHOLE = os.environ.get("KVCALC_SWEEP") == "all"
SAMPLE_ONE_IN = 8


def sampled(family: str, path: tuple, cases: list) -> list:
    """The cases of one key that this run tries: all with KVCALC_SWEEP=all, else the first and a
    fixed quarter of the rest."""
    if WHOLE:
        return cases
    return [case for i, case in enumerate(cases)
            if i == 0 or zlib.crc32(repr((family, path, i)).encode()) % SAMPLE_ONE_IN == 0]


def numeric_paths(cfg: dict, prefix=()):
    """Paths to every number (and every list of numbers) in a config, nested objects included."""
    for key, value in _sampled(cfg):
        if isinstance(value, dict):
            yield from numeric_paths(value, prefix + (key,))
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            yield prefix + (key,)
        elif isinstance(value, list) and value and all(isinstance(v, (int, float)) for v in value):
            yield prefix + (key,)


def with_value(cfg: dict, path: tuple, value) -> dict:
    out = json.loads(json.dumps(cfg))
    node = out
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    return out


def numbers(value, key=""):
    if isinstance(value, dict):
        for k, v in value.items():
            yield from numbers(v, k)
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from numbers(v, key)
    elif isinstance(value, (int, float, Fraction)) and not isinstance(value, bool):
        yield key, value


def assert_sane(raw: dict) -> None:
    """Refused with a field and words, or figures that make sense, rendered everywhere they go."""
    evaluation = evaluate(raw)
    if evaluation.errors:
        for error in evaluation.errors:
            assert isinstance(error, InputError) and error.field and error.message
            assert not isinstance(error, Unexpected), f"validation let this through: {error}"
        STATS["refused"] += 1
        return
    STATS["computed"] += 1
    scenario = evaluation.scenario
    out = to_json(scenario, evaluation)
    for key, value in numbers(out):
        assert math.isfinite(value), (key, value)
        assert value >= 0 or key in SIGNED, (key, value)
    # Every renderer below is a pure function of the scenario and the result: a hostile value the
    # reader ignores gives one already rendered, and rendering it again proves nothing new.
    fingerprint = repr((scenario, evaluation.result, evaluation.engine, evaluation.timing))
    if fingerprint in RENDERED:
        return
    RENDERED.add(fingerprint)
    texts = page_texts(scenario, evaluation, "gib")
    assert "nan" not in json.dumps(texts["metrics"]).lower()
    table(evaluation)
    for fmt in ("csv", "json", "markdown"):
        export(scenario, evaluation, fmt)
    for engine in ENGINES:
        launch(scenario, engine, evaluation)
    attention_variants(scenario)
    precision_rows(scenario)
    contexts = context_points(scenario)
    memory_series(scenario, contexts)
    concurrency_series(scenario, contexts)
    memory_bar(evaluation, scenario)
    if evaluation.timing is not None:
        roofline_series(evaluation.timing)
        series = batch_series(scenario, evaluation.result, evaluation.timing, evaluation.capacity)
        assert all(len(v) <= 4096 for v in series.values() if isinstance(v, list))


def raw_for(cfg: dict, n: int) -> dict:
    raw = {"hf-config": cfg, "gpu": "h100-sxm-80gb", "context": "4096", "batch": "4",
           "weights-dtype": "bf16"}
    inner = cfg.get("text_config") if isinstance(cfg.get("text_config"), dict) else cfg
    if str(inner.get("model_type")) in LAYOUTS:
        raw["params"] = "7B"    # their shapes give no count: so that every case reaches the time bounds
    engine = ENGINE_CYCLE[n % len(ENGINE_CYCLE)]
    if engine:
        raw["engine"] = engine
    return raw


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_every_numeric_key_of_every_family_refused_or_sane(family):
    cfg = FAMILIES[family]
    assert evaluate(raw_for(cfg, 0)).ok, "the unmodified config computes"
    n = 0
    for path in numeric_paths(cfg):
        for value in sampled(family, path, list(HOSTILE)):
            n += 1
            try:
                assert_sane(raw_for(with_value(cfg, path, value), n))
            except AssertionError:
                raise
            except Exception as e:      # the property: nothing escapes as a traceback
                pytest.fail(f"{family} {'.'.join(path)}={str(value)[:20]}: {type(e).__name__}: {e}")
    assert n > 0


# Values of the wrong shape for the keys that are not numbers: layouts, dtypes, nested objects.
STRUCTURAL = ("", "x" * 300, None, [], {}, [None], ["full_attention"] * 3, "MMM*", [1, 0, 1],
              {"quant_method": 5}, "float64")


def every_path(cfg: dict, prefix=()):
    for key, value in _sampled(cfg):
        yield prefix + (key,)
        if isinstance(value, dict):
            yield from every_path(value, prefix + (key,))


def _sampled(node: dict):
    """A dict's items, but of a table keyed by module names (ModelOpt's quantized_layers, with
    hundreds of same-shaped entries) only the first three: each shape once, not each module."""
    items = list(node.items())
    modules = [item for item in items if "." in str(item[0]) and isinstance(item[1], dict)]
    return [item for item in items if item not in modules[3:]]


def without(cfg: dict, path: tuple) -> dict:
    out = json.loads(json.dumps(cfg))
    node = out
    for key in path[:-1]:
        node = node[key]
    del node[path[-1]]
    return out


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_every_key_removed_or_of_the_wrong_shape(family):
    cfg = FAMILIES[family]
    n = 0
    for path in every_path(cfg):
        makers = [lambda: without(cfg, path)] + [lambda v=value: with_value(cfg, path, v)
                                                 for value in STRUCTURAL + HOSTILE[:6]]
        for make in sampled(family, path, makers):
            case = make()
            n += 1
            try:
                assert_sane(raw_for(case, n))
            except AssertionError:
                raise
            except Exception as e:
                pytest.fail(f"{family} {'.'.join(path)}: {type(e).__name__}: {e}")


@pytest.mark.parametrize("key, value, field", [
    ("mlp_only_layers", 5, "mlp_only_layers"),
    ("mlp_only_layers", "0,1", "mlp_only_layers"),
    ("mlp_only_layers", [99], "mlp_only_layers"),
])
def test_qwen_moe_dense_layers_must_be_a_list_of_layers(key, value, field):
    cfg = dict(FAMILIES["qwen3_moe"], **{key: value})       # the Qwen3-30B-A3B preset's config
    code, out, err = cli("--hf-config", "-", stdin=json.dumps(cfg))
    assert code == 2 and err.startswith(f"kvcalc: error: {field}: expected a list of layer indices"), err


@pytest.mark.parametrize("value", ["4", [4], 2.5, -1000, 0, 10 ** 400])
def test_gpt_oss_experts_per_token_is_a_whole_number_of_experts(value):
    cfg = dict(hf_fixture("openai__gpt-oss-20b.json"))
    cfg.pop("num_experts_per_tok", None)
    cfg["experts_per_token"] = value
    text = json.dumps(cfg) if value != 10 ** 400 else json.dumps(cfg).replace('"experts_per_token": 0', "")
    code, out, err = cli("--hf-config", "-", "--gpu", "h100-sxm-80gb", "--weights-dtype", "bf16", stdin=text)
    assert code == 2, out
    assert err.startswith("kvcalc: error: experts_per_token: "), err
    assert "Traceback" not in err and len(err.splitlines()) == 1


def test_gpt_oss_experts_per_token_within_range_still_counts():
    """gpt-oss-20b: 32 experts, 4 per token (experts_per_token is its own config's key)."""
    cfg = dict(hf_fixture("openai__gpt-oss-20b.json"))
    cfg.pop("num_experts_per_tok", None)
    cfg["experts_per_token"] = 4
    evaluation = evaluate({"hf-config": cfg})
    assert evaluation.ok
    assert 0 < evaluation.scenario.model.active_params < evaluation.scenario.model.params


def test_stray_mla_fields_in_a_llama_config_are_ignored_as_vllm_does():
    """vLLM's LlamaForCausalLM never reads kv_lora_rank: Llama 3.1 8B stays 2 x 32 layers x
    8 kv heads x 128 x 2 B = 131,072 B per token (they were sized as MiniCPM3's 786,432)."""
    cfg = dict(hf_fixture("meta-llama__Llama-3.1-8B.json"), kv_lora_rank=512, qk_rope_head_dim=64,
               qk_nope_head_dim=128, v_head_dim=128)
    assert evaluate({"hf-config": cfg}).result.kv_bytes_per_token == 131_072


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(family=st.sampled_from(sorted(FAMILIES)), data=st.data())
def test_several_hostile_values_at_once(family, data):
    cfg = FAMILIES[family]
    paths = list(numeric_paths(cfg))
    chosen = data.draw(st.lists(st.sampled_from(paths), min_size=2, max_size=4, unique=True))
    for path in chosen:
        cfg = with_value(cfg, path, data.draw(st.one_of(
            st.sampled_from(HOSTILE), st.integers(-10, 1 << 20), st.floats(allow_nan=True)), label=".".join(path)))
    assert_sane(raw_for(cfg, data.draw(st.integers(0, 3))))


def test_the_property_reached_both_outcomes():
    """Many hostile values are refused and some (a float 4.0, a larger window) still compute:
    a run where every case was refused would prove nothing about the figures."""
    for family in ("meta-llama__Llama-3.1-8B", "qwen3_moe", "deepseek-ai__DeepSeek-V3"):
        test_every_numeric_key_of_every_family_refused_or_sane(family)
    assert STATS["refused"] > 100 and STATS["computed"] > 20, STATS


def test_a_config_named_like_a_preset_keeps_its_own_shapes():
    """A config whose _name_or_path is a preset's takes the preset's published parameter count only
    when it is that model; with a wider MLP it is another model, counted from its own shapes."""
    preset_cfg = next(e for e in presets.model_entries() if e["id"] == "meta-llama/Llama-3.1-8B")["config"]
    same = dict(preset_cfg, _name_or_path="meta-llama/Llama-3.1-8B")
    assert evaluate({"hf-config": same}).scenario.model.params == 8_030_261_248
    wider = dict(same, intermediate_size=28672)
    model = evaluate({"hf-config": wider}).scenario.model
    # 32 layers x 3 x 4096 x 14336 more MLP weights than Llama 3.1 8B's published 8,030,261,248.
    assert model.params == 8_030_261_248 + 32 * 3 * 4096 * 14336
    other_vocab = dict(same, vocab_size=32000)
    assert evaluate({"hf-config": other_vocab}).scenario.model.params != 8_030_261_248


@pytest.mark.parametrize("weights, ok", [("1", False), ("1000000", False), ("16060522496", True),
                                         ("4920739840", True), ("64242089984", True), ("128484179969", False)])
def test_exact_weights_must_be_possible_for_the_model(weights, ok):
    """Llama 3.1 8B (8,030,261,248 parameters): an index total_size of 1 byte was shown as its
    exact weights. A checkpoint holds 0.75 to 64 bits per parameter: bf16 is 16,060,522,496 B,
    Q4_K_M about 4.9 GB, fp32 with anything beside it up to 8 bytes each."""
    evaluation = evaluate({"model": "meta-llama/Llama-3.1-8B", "weights-bytes": weights, "gpu": "h100-sxm-80gb"})
    assert evaluation.ok is ok
    if not ok:
        assert evaluation.errors[0].field == "weights-bytes"
        assert "bits per parameter" in evaluation.errors[0].message
