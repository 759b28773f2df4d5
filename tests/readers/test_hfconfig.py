"""config.json import, read the way vLLM and transformers read it (engines.md, "Full attention").

Real configs live in tests/fixtures/hf (see SOURCES.md there). Where no verbatim copy could be
found (Falcon, MPT, ChatGLM, Jamba, Gemma 3, Llama 4), the test builds the few fields the
transformers configuration class documents, and says so.
"""

import json

import pytest

from kvcalc import InputError, evaluate, model_from_config, parse_config_text
from kvcalc.layers import (
    ChunkedLocalAttention, FullAttention, MLAAttention, NoCache, SlidingWindowAttention, StateSpaceLayer)
from kvcalc.precision import precision

from support import FIXTURES, fixture_names, hf_fixture

BF16 = precision("bf16")


def per_token(model):
    return sum(layer.row_bytes(BF16) for layer in model.layers)


def kinds(model):
    return [layer.kind for layer in model.layers]


@pytest.mark.parametrize("name, bytes_per_token", [
    ("meta-llama__Llama-3.1-8B.json", 131_072),
    ("meta-llama__Llama-3.1-70B.json", 327_680),
    ("Qwen__Qwen2.5-7B.json", 57_344),
    ("Qwen__Qwen3-32B.json", 262_144),               # head_dim 128, not 5120 / 64 = 80
    ("deepseek-ai__DeepSeek-V3.json", 70_272),       # 61 x 576 x 2 (engines.md)
    ("deepseek-ai__DeepSeek-V2-Lite.json", 31_104),  # 27 x 576 x 2
    ("moonshotai__Kimi-K2-Instruct.json", 70_272),
    ("google__gemma-2-9b-it.json", 344_064),         # head_dim 256, not 3584 / 16 = 224
    ("openai__gpt-oss-120b.json", 73_728),           # head_dim 64, not 2880 / 64 = 45
    ("openai__gpt-oss-20b.json", 49_152),
    ("mistralai__Mistral-7B-v0.1.json", 131_072),
    ("mistralai__Mixtral-8x7B-v0.1.json", 131_072),
    ("microsoft__Phi-3-mini-4k-instruct.json", 393_216),
])
def test_real_configs_bytes_per_token(name, bytes_per_token):
    assert per_token(model_from_config(hf_fixture(name))) == bytes_per_token


def test_every_fixture_imports():
    names = fixture_names()
    assert len(names) >= 35
    for name in names:
        model = model_from_config(hf_fixture(name))
        assert model.layers and per_token(model) > 0


def test_qwen25_use_sliding_window_false_means_no_window():
    cfg = hf_fixture("Qwen__Qwen2.5-7B.json")
    assert cfg["sliding_window"] and cfg["use_sliding_window"] is False
    model = model_from_config(cfg)
    assert set(kinds(model)) == {"full"}
    # Turned on, transformers Qwen2Config slides from max_window_layers on while vLLM's Qwen2Model
    # applies the window to every layer (and asserts against a window on only some): refused.
    with pytest.raises(InputError) as e:
        model_from_config({**cfg, "use_sliding_window": True, "max_window_layers": 20})
    assert e.value.field == "use_sliding_window"


def test_gemma2_alternates_even_layers_slide():
    model = model_from_config(hf_fixture("google__gemma-2-9b-it.json"))
    assert kinds(model)[:4] == ["sliding", "full", "sliding", "full"]
    assert kinds(model).count("sliding") == 21
    # At 32K the 21 sliding layers hold 4,096 tokens, the 21 global layers hold all 32,768.
    r = evaluate({"model": "custom", "hf-config": hf_fixture("google__gemma-2-9b-it.json"), "context": "32768"}).result
    assert r.kv_bytes_per_request == 21 * 8192 * (32768 + 4096)


def test_gpt_oss_layer_types_window_128():
    model = model_from_config(hf_fixture("openai__gpt-oss-120b.json"))
    assert kinds(model)[:2] == ["sliding", "full"]
    assert {layer.window for layer in model.layers if layer.kind == "sliding"} == {128}


def test_mistral_v01_every_layer_slides():
    model = model_from_config(hf_fixture("mistralai__Mistral-7B-v0.1.json"))
    assert set(kinds(model)) == {"sliding"} and model.layers[0].window == 4096


def test_qwen3_next_hybrid_state():
    model = model_from_config(hf_fixture("Qwen__Qwen3-Next-80B-A3B-Thinking.json"))
    assert kinds(model).count("full") == 12 and kinds(model)[3] == "full" and kinds(model)[0] == "state"
    state = model.layers[0]
    # models.csv: 36 x (32*128*128 + 3*(2*16*128 + 32*128)) elements of per-sequence state
    assert state.conv_elements + state.ssm_elements == 32 * 128 * 128 + 3 * (2 * 16 * 128 + 32 * 128)
    assert per_token(model) == 24_576


def test_nemotron_h_pattern():
    model = model_from_config(hf_fixture("nvidia__Nemotron-H-56B-Base-8K.json"))
    assert kinds(model).count("full") == 10
    assert kinds(model)[:3] == ["state", "none", "state"]
    mamba = model.layers[0]
    # Mamba-2: conv (4-1) x (256*64 + 2*groups*256), ssm 256 heads x 64 x 256
    assert mamba.ssm_elements == 256 * 64 * 256


def test_falcon_multi_query_is_one_kv_head():
    # transformers FalconConfig (falcon-7b): multi_query true, no new_decoder_architecture.
    cfg = {"model_type": "falcon", "hidden_size": 4544, "num_attention_heads": 71, "num_hidden_layers": 32,
           "multi_query": True, "num_kv_heads": 71, "new_decoder_architecture": False}
    model = model_from_config(cfg)
    assert model.layers[0] == FullAttention(1, 64)
    # falcon-40b: new_decoder_architecture with num_kv_heads 8 (models.csv row Falcon 40B).
    cfg40 = {"model_type": "falcon", "hidden_size": 8192, "num_attention_heads": 128, "num_hidden_layers": 60,
             "multi_query": True, "num_kv_heads": 8, "new_decoder_architecture": True}
    assert per_token(model_from_config(cfg40)) == 122_880


def test_mpt_fields():
    # transformers MptConfig: d_model, n_heads, n_layers, attn_config.
    cfg = {"model_type": "mpt", "d_model": 4096, "n_heads": 32, "n_layers": 32, "attn_config": {"attn_type": "multihead_attention"}}
    assert per_token(model_from_config(cfg)) == 524_288
    cfg["attn_config"] = {"attn_type": "grouped_query_attention", "kv_n_heads": 8}
    assert per_token(model_from_config(cfg)) == 131_072


def test_chatglm_names():
    # ChatGLM3-6B / GLM-4-9B: num_layers, multi_query_group_num, kv_channels.
    cfg = {"model_type": "chatglm", "num_layers": 40, "num_attention_heads": 32, "hidden_size": 4096,
           "multi_query_attention": True, "multi_query_group_num": 2, "kv_channels": 128}
    assert per_token(model_from_config(cfg)) == 2 * 40 * 2 * 128 * 2


def test_text_config_nested_and_gemma3_pattern():
    # Gemma 3: text_config nested, 5 sliding : 1 global (sliding_window_pattern 6).
    cfg = {"model_type": "gemma3", "torch_dtype": "bfloat16", "text_config": {
        "model_type": "gemma3_text", "num_hidden_layers": 62, "num_attention_heads": 32,
        "num_key_value_heads": 16, "head_dim": 128, "hidden_size": 5376, "sliding_window": 1024,
        "sliding_window_pattern": 6}}
    model = model_from_config(cfg)
    assert kinds(model)[:6] == ["sliding"] * 5 + ["full"]
    assert kinds(model).count("full") == 10
    assert model.dtype == "bf16"


def test_jamba_attention_period():
    # transformers JambaConfig defaults: attn_layer_period 8, offset 4, mamba d_state 16, d_conv 4, expand 2.
    cfg = {"model_type": "jamba", "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8,
           "hidden_size": 4096, "attn_layer_period": 8, "attn_layer_offset": 4,
           "mamba_d_state": 16, "mamba_d_conv": 4, "mamba_expand": 2}
    model = model_from_config(cfg)
    assert [i for i, k in enumerate(kinds(model)) if k == "full"] == [4, 12, 20, 28]
    assert model.layers[0] == StateSpaceLayer(3 * 8192, 8192 * 16, heads=8192, label="mamba")


def test_llama4_chunked_layers():
    cfg = {"model_type": "llama4", "text_config": {"model_type": "llama4_text", "num_hidden_layers": 8,
           "num_attention_heads": 40, "num_key_value_heads": 8, "head_dim": 128, "hidden_size": 5120,
           "attention_chunk_size": 8192}}
    model = model_from_config(cfg)
    assert kinds(model) == ["chunked"] * 3 + ["full"] + ["chunked"] * 3 + ["full"]
    assert isinstance(model.layers[0], ChunkedLocalAttention) and model.layers[0].window == 8192


def test_torch_dtype_is_default_kv_precision():
    cfg = dict(hf_fixture("meta-llama__Llama-3.1-8B.json"), torch_dtype="float16")
    r = evaluate({"hf-config": cfg})
    assert r.scenario.workload.kv_precision.name == "fp16"
    # vLLM --dtype auto serves a float32 checkpoint in 16 bits (_get_and_verify_dtype).
    fp32 = model_from_config(dict(cfg, torch_dtype="float32"))
    assert fp32.dtype == "bf16" and "float32" in fp32.notes[0]


@pytest.mark.parametrize("change, field, words", [
    ({"num_hidden_layers": None}, "num_hidden_layers", "missing"),
    ({"num_hidden_layers": "32"}, "num_hidden_layers", "whole number"),
    ({"num_hidden_layers": [32]}, "num_hidden_layers", "whole number"),
    ({"num_hidden_layers": 0}, "num_hidden_layers", "out of range"),
    ({"num_key_value_heads": -8}, "num_key_value_heads", "out of range"),
    ({"num_key_value_heads": 7}, "num_key_value_heads", "do not divide"),
    ({"num_attention_heads": None}, "num_attention_heads", "missing"),
    ({"torch_dtype": "float64"}, "torch_dtype", "unknown dtype"),
    ({"layer_types": ["full_attention"]}, "layer_types", "one per layer"),
])
def test_bad_fields_name_the_field(change, field, words):
    cfg = dict(hf_fixture("meta-llama__Llama-3.1-8B.json"))
    for key, value in change.items():
        if value is None:
            cfg.pop(key)
        else:
            cfg[key] = value
    with pytest.raises(InputError) as info:
        model_from_config(cfg)
    assert info.value.field == field and words in info.value.message


def test_head_dim_underivable_is_refused():
    with pytest.raises(InputError, match="head_dim"):
        model_from_config({"num_hidden_layers": 2, "num_attention_heads": 3, "hidden_size": 100})


@pytest.mark.parametrize("text, words", [
    ("{", "not valid JSON"),
    ("[1, 2]", "must be a JSON object"),
    ("[" * 100 + "]" * 100, "nests"),
    (b"\xff\xfe", "not UTF-8"),
    ("x" * (2 << 20), "limit"),
])
def test_malformed_config_text(text, words):
    with pytest.raises(InputError) as info:
        parse_config_text(text)
    assert info.value.field == "hf-config" and words in info.value.message


def test_config_text_round_trip_matches_file():
    path = FIXTURES / "hf" / "deepseek-ai__DeepSeek-V3.json"
    assert parse_config_text(path.read_bytes()) == json.loads(path.read_text())


# ---- rules checked against vLLM and transformers sources (review findings) ---------------

def test_gemma3_without_pattern_uses_transformers_default_of_6():
    # The published gemma-3-27b-it text_config has sliding_window 1024 and no pattern key.
    cfg = {"model_type": "gemma3", "text_config": {"model_type": "gemma3_text", "num_hidden_layers": 62,
           "num_attention_heads": 32, "num_key_value_heads": 16, "head_dim": 128, "sliding_window": 1024}}
    assert kinds(model_from_config(cfg)).count("full") == 10


def test_mla_only_for_vllm_mla_model_types():
    # GLM-4.7-Flash (glm4_moe_lite): hidden 2048 / 20 heads does not divide, but MLA needs no head_dim.
    glm = {"model_type": "glm4_moe_lite", "num_hidden_layers": 47, "num_attention_heads": 20,
           "hidden_size": 2048, "kv_lora_rank": 512, "qk_rope_head_dim": 64, "qk_nope_head_dim": 192, "v_head_dim": 256}
    assert per_token(model_from_config(glm)) == 47 * 576 * 2
    # MiniCPM3 has kv_lora_rank but vLLM runs it as plain attention over 96-wide heads (minicpm3.py).
    minicpm = {"model_type": "minicpm3", "num_hidden_layers": 62, "num_attention_heads": 40, "hidden_size": 2560,
               "kv_lora_rank": 256, "qk_rope_head_dim": 32, "qk_nope_head_dim": 64, "v_head_dim": 64}
    assert model_from_config(minicpm).layers[0] == FullAttention(40, 96)


def test_deepseek_v32_indexer_cache():
    cfg = dict(hf_fixture("deepseek-ai__DeepSeek-V3.json"), model_type="deepseek_v32", index_head_dim=128)
    assert per_token(model_from_config(cfg)) == 61 * (576 * 2 + 128 + 4)


def test_dbrx_kv_n_heads_and_bigcode_multi_query():
    dbrx = {"model_type": "dbrx", "d_model": 6144, "n_heads": 48, "n_layers": 40,
            "attn_config": {"clip_qkv": 8, "kv_n_heads": 8, "rope_theta": 500000}}
    assert model_from_config(dbrx).layers[0] == FullAttention(8, 128)
    starcoder = {"model_type": "gpt_bigcode", "n_embd": 6144, "n_head": 48, "n_layer": 40, "multi_query": True}
    assert model_from_config(starcoder).layers[0] == FullAttention(1, 128)


def test_refinedweb_falcon_40b_and_7b():
    # vLLM RWConfig: hidden 8192 forces the new decoder architecture; n_head_kv defaults to 1.
    rw40 = {"model_type": "RefinedWeb", "n_head": 128, "n_head_kv": 8, "n_layer": 60, "hidden_size": 8192}
    assert model_from_config(rw40).layers[0] == FullAttention(8, 64)
    rw7 = {"model_type": "RefinedWebModel", "n_head": 71, "n_layer": 32, "hidden_size": 4544, "multi_query": True}
    assert model_from_config(rw7).layers[0] == FullAttention(1, 64)


def test_qwen_without_use_sliding_window_does_not_slide():
    cfg = {"model_type": "qwen2", "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8,
           "hidden_size": 4096, "sliding_window": 32768, "max_window_layers": 28}
    assert set(kinds(model_from_config(cfg))) == {"full"}


def test_unknown_window_layout_and_hybrids_are_refused():
    with pytest.raises(InputError, match="which layers slide"):
        model_from_config({"model_type": "somethingnew", "num_hidden_layers": 4, "num_attention_heads": 4,
                           "hidden_size": 256, "sliding_window": 128})
    with pytest.raises(InputError, match="state-space fields"):
        model_from_config({"model_type": "newhybrid", "num_hidden_layers": 4, "num_attention_heads": 4,
                           "hidden_size": 256, "mamba_d_state": 16})
    for field in ("linear_attn_config", "attn_type_list"):
        with pytest.raises(InputError) as info:
            model_from_config({"num_hidden_layers": 4, "num_attention_heads": 4, "hidden_size": 256, field: [1]})
        assert info.value.field == field


def test_bamba_attn_layer_indices():
    cfg = {"model_type": "bamba", "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8,
           "hidden_size": 4096, "attn_layer_indices": [9, 18, 27], "mamba_n_heads": 128, "mamba_d_head": 64,
           "mamba_n_groups": 1, "mamba_d_state": 128, "mamba_d_conv": 4}
    assert [i for i, k in enumerate(kinds(model_from_config(cfg))) if k == "full"] == [9, 18, 27]


def test_gemma3n_shared_kv_layers_have_no_cache():
    cfg = {"model_type": "gemma3n_text", "num_hidden_layers": 35, "num_attention_heads": 8, "num_key_value_heads": 2,
           "head_dim": 256, "hidden_size": 2048, "num_kv_shared_layers": 15,
           "layer_types": ["sliding_attention"] * 4 + ["full_attention"] + ["sliding_attention"] * 4 + ["full_attention"]
           + (["sliding_attention"] * 4 + ["full_attention"]) * 5, "sliding_window": 512}
    assert kinds(model_from_config(cfg)).count("none") == 15


def test_nemotron_h_ssm_state_is_fp32():
    model = model_from_config(hf_fixture("nvidia__Nemotron-H-56B-Base-8K.json"))
    mamba = model.layers[0]
    assert mamba.ssm_dtype == "fp32"
    assert mamba.state_bytes(BF16) == mamba.conv_elements * 2 + mamba.ssm_elements * 4


def test_fp8_checkpoint_weights_and_other_quantizations():
    v3 = model_from_config(hf_fixture("deepseek-ai__DeepSeek-V3.json"))
    assert v3.weights_dtype == "fp8"
    oss = model_from_config(hf_fixture("openai__gpt-oss-120b.json"))
    assert oss.weights_dtype is None and "mxfp4" in " ".join(oss.notes)
    e = evaluate({"hf-config": hf_fixture("openai__gpt-oss-120b.json"), "params": "116829156672", "gpu": "h100-sxm-80gb"})
    assert e.ok and e.result.max_concurrency is None and e.result.kv_bytes_per_token == 73_728
    assert any("mxfp4" in w and "weights-dtype" in w for w in e.scenario.warnings)
    e = evaluate({"hf-config": hf_fixture("openai__gpt-oss-120b.json"), "weights-gib": "61", "gpu": "h100-sxm-80gb"})
    assert e.ok


@pytest.mark.parametrize("cfg", [
    {"model_type": "mpt", "n_heads": 32, "d_model": 4096, "n_layers": 32, "attn_config": [1]},
    {"num_hidden_layers": 4, "num_attention_heads": 10 ** 5000, "hidden_size": 256},
    {"num_hidden_layers": 4, "num_attention_heads": {"a": {1, 2}}, "hidden_size": 256},
    {"num_hidden_layers": 4, "num_attention_heads": 4, "hidden_size": 256, "layer_types": "full"},
    {"model_type": "llama4", "num_hidden_layers": 4, "num_attention_heads": 4, "head_dim": 64,
     "attention_chunk_size": 8192, "no_rope_layers": [1]},
])
def test_hostile_configs_raise_only_input_error(cfg):
    with pytest.raises(InputError):
        model_from_config(cfg)


def test_huge_integer_literal_in_json_is_refused():
    with pytest.raises(InputError):
        parse_config_text('{"num_hidden_layers": ' + "1" * 5000 + "}")


# ---- fuzz: real configs with hostile values ----------------------------------------------

from hypothesis import given, settings, strategies as st  # noqa: E402

HOSTILE = st.one_of(st.none(), st.booleans(), st.integers(-10 ** 30, 10 ** 30), st.floats(allow_nan=True),
                    st.text(max_size=20), st.lists(st.integers(), max_size=3),
                    st.dictionaries(st.text(max_size=5), st.integers(), max_size=2))
NAMES = sorted(p.name for p in (FIXTURES / "hf").glob("*.json"))


@settings(max_examples=400, deadline=None)
@given(name=st.sampled_from(NAMES), data=st.data())
def test_mutated_real_configs_fail_only_with_input_error(name, data):
    cfg = hf_fixture(name)
    target = cfg.get("text_config", cfg) if isinstance(cfg.get("text_config"), dict) else cfg
    keys = sorted(target)
    for key in data.draw(st.lists(st.sampled_from(keys), min_size=1, max_size=3)):
        target[key] = data.draw(HOSTILE)
    try:
        model = model_from_config(cfg)
    except InputError as e:
        assert e.field and e.message
        return
    evaluation = evaluate({"hf-config": cfg, "context": "4096", "gpu": "h100-sxm-80gb", "params": "1000000000"})
    assert evaluation.ok or evaluation.errors
    assert all(layer.row_bytes(BF16) >= 0 for layer in model.layers)


def test_nesting_counts_only_brackets_outside_strings():
    # Brackets inside a string must not hide real nesting (Pyodide's stack overflows on it).
    deep = '{"x": "' + "]" * 10_000 + '", "y": ' + "[" * 10_000 + "]" * 10_000 + "}"
    with pytest.raises(InputError, match="nests"):
        parse_config_text(deep)
    assert parse_config_text(json.dumps({"a": "[" * 40})) == {"a": "[" * 40}


def test_byte_order_mark_in_pasted_text():
    assert parse_config_text("\ufeff{\"a\": 1}") == {"a": 1}


def test_absurd_layer_counts_are_refused():
    with pytest.raises(InputError, match="out of range"):
        model_from_config({"num_hidden_layers": 1 << 20, "num_attention_heads": 32, "hidden_size": 4096})
