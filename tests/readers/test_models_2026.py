"""The models people run now (issue 21), read the way vLLM reads them.

No verbatim config.json of these 2025-2026 families could be confirmed in the stored copies, so
each test writes the fields its family's vLLM code reads, from public transcriptions of the
released configs or the configuration class's defaults, and says so. None is claimed to be a
real file. Bytes are worked by hand in each docstring: bf16 is 2 B per element, fp32 4 B.
"""

import json

import pytest

from kvcalc import InputError, evaluate, model_from_config
from kvcalc.precision import precision

from support import FIXTURES, fixture_names, hf_fixture

BF16 = precision("bf16")


def per_token(model, tp=1):
    return sum(layer.row_bytes(BF16, tp) for layer in model.layers)


def state(model, tp=1):
    return sum(layer.state_bytes(BF16, tp) for layer in model.layers)


def per_request(cfg, context=4096):
    r = evaluate({"model": "custom", "hf-config": cfg, "context": str(context)})
    assert r.ok, r.errors
    return r.result.kv_bytes_per_request


def qwen35_moe(**overrides):
    """Qwen3.5-35B-A3B's text_config as public transcriptions of the release give it (not a
    verbatim file): 40 layers, every 4th full attention, Gated DeltaNet elsewhere, state in float32."""
    text = {"model_type": "qwen3_5_moe_text", "dtype": "bfloat16", "num_hidden_layers": 40,
            "layer_types": (["linear_attention"] * 3 + ["full_attention"]) * 10, "full_attention_interval": 4,
            "num_attention_heads": 16, "num_key_value_heads": 2, "head_dim": 256, "hidden_size": 2048,
            "linear_conv_kernel_dim": 4, "linear_key_head_dim": 128, "linear_num_key_heads": 16,
            "linear_num_value_heads": 32, "linear_value_head_dim": 128, "mamba_ssm_dtype": "float32",
            "max_position_embeddings": 262144, "mtp_num_hidden_layers": 1, "mlp_only_layers": [],
            "vocab_size": 248320, "attn_output_gate": True, "partial_rotary_factor": 0.25}
    text.update(overrides)
    return {"architectures": ["Qwen3_5MoeForConditionalGeneration"], "model_type": "qwen3_5_moe",
            "text_config": text}


def test_qwen35_state_in_float32():
    """vLLM Qwen3_5ForConditionalGenerationConfig copies text_config.mamba_ssm_dtype into
    mamba_ssm_cache_dtype; MambaStateDtypeCalculator.gated_delta_net_state_dtype keeps the conv
    state in the model's dtype and the temporal state in that one.

    Full attention, 10 layers: 2 kv x (256 + 256) x 2 B = 2,048 B; x 10 = 20,480 B per token.
    Gated DeltaNet, 30 layers: conv (4 - 1) x (2 x 16 x 128 + 32 x 128) = 24,576 x 2 B = 49,152 B,
    ssm 32 x 128 x 128 = 524,288 x 4 B = 2,097,152 B; 2,146,304 B x 30 = 64,389,120 B per request
    (in bf16 it would be 1,097,728 x 30 = 32,931,840: half the state, the bug of issue 21).
    At 4,096 tokens: 20,480 x 4,096 + 64,389,120 = 83,886,080 + 64,389,120 = 148,275,200 B.
    """
    model = model_from_config(qwen35_moe())
    assert per_token(model) == 20_480
    assert {layer.ssm_dtype for layer in model.layers if layer.kind == "state"} == {"fp32"}
    assert state(model) == 64_389_120
    assert per_request(qwen35_moe()) == 148_275_200
    # "auto" keeps the model's dtype; an explicit mamba_ssm_cache_dtype wins (as --mamba-ssm-cache-dtype).
    assert state(model_from_config(qwen35_moe(mamba_ssm_dtype="auto"))) == 32_931_840
    assert state(model_from_config(qwen35_moe(mamba_ssm_cache_dtype="bfloat16"))) == 32_931_840


def test_qwen35_tp2_splits_heads_and_state():
    """tp 2: kv heads 2 // 2 = 1, so 1 x 512 x 2 B = 1,024 B x 10 = 10,240 B per token; the state
    splits by its 32 value heads: conv 12,288 x 2 B = 24,576 B, ssm 262,144 x 4 B = 1,048,576 B,
    1,073,152 B x 30 = 32,194,560 B per request per GPU."""
    model = model_from_config(qwen35_moe())
    assert per_token(model, tp=2) == 10_240
    assert state(model, tp=2) == 32_194_560


def test_mamba_ssm_dtype_on_another_architecture_is_refused():
    """vLLM reads mamba_ssm_dtype only for the Qwen3.5 architectures (the wrappers and, in 0.34.0's
    MODELS_CONFIG_MAP, their text-only twins: tests/readers/test_qwen35_text_only.py); elsewhere it is unknown."""
    cfg = qwen35_moe()
    cfg["architectures"] = ["Qwen3NextForCausalLM"]
    with pytest.raises(InputError) as e:
        model_from_config(cfg)
    assert e.value.field == "text_config.mamba_ssm_dtype"
    # A name outside vLLM's registry is refused by the architecture itself.
    cfg["architectures"] = ["Qwen9MoeForCausalLM"]
    with pytest.raises(InputError) as e:
        model_from_config(cfg)
    assert e.value.field == "architectures"


def minimax_m2(**overrides):
    """MiniMax-M2's fields as public transcriptions give them (not a verbatim file)."""
    cfg = {"architectures": ["MiniMaxM2ForCausalLM"], "model_type": "minimax_m2", "torch_dtype": "bfloat16",
           "num_hidden_layers": 62, "num_attention_heads": 48, "num_key_value_heads": 8, "head_dim": 128,
           "hidden_size": 3072, "max_position_embeddings": 196608, "vocab_size": 200064, "rotary_dim": 64,
           "attn_type_list": [1] * 62}
    cfg.update(overrides)
    return cfg


def test_minimax_m2_all_ones_is_full_attention():
    """vLLM minimax_m2.py builds softmax attention in every layer: 62 x 2 x 8 x 128 x 2 B =
    253,952 B per token; at 4,096 tokens 1,040,187,392 B. tp 16: max(1, 8 // 16) = 1 head per GPU
    (replicated), 62 x 2 x 128 x 2 B = 31,744 B."""
    model = model_from_config(minimax_m2())
    assert {layer.kind for layer in model.layers} == {"full"}
    assert per_token(model) == 253_952
    assert per_request(minimax_m2()) == 253_952 * 4096
    assert per_token(model, tp=16) == 31_744


def test_minimax_m2_with_linear_layers_is_refused():
    with pytest.raises(InputError) as e:
        model_from_config(minimax_m2(attn_type_list=[0, 1] * 31))
    assert e.value.field == "attn_type_list"


def test_minimax_text01_lightning_state():
    """MiniMax-Text-01, written from the configuration class's fields (not a verbatim file): 80
    layers, 7 lightning then 1 softmax. vLLM minimax_text_01.py: attn_type_list 0 is lightning
    attention, its state linear_attention_state_shape = heads x head_dim x head_dim in the cache dtype.
    Softmax, 10 layers: 2 x 8 x 128 x 2 B = 4,096 B; x 10 = 40,960 B per token.
    Lightning, 70 layers: 64 x 128 x 128 = 1,048,576 x 2 B = 2,097,152 B; x 70 = 146,800,640 B.
    At 4,096 tokens: 40,960 x 4,096 + 146,800,640 = 167,772,160 + 146,800,640 = 314,572,800 B."""
    cfg = {"architectures": ["MiniMaxText01ForCausalLM"], "model_type": "minimax_text_01",
           "torch_dtype": "bfloat16", "num_hidden_layers": 80, "num_attention_heads": 64,
           "num_key_value_heads": 8, "head_dim": 128, "hidden_size": 6144, "max_position_embeddings": 10240000,
           "attn_type_list": ([0] * 7 + [1]) * 10}
    model = model_from_config(cfg)
    assert per_token(model) == 40_960
    assert state(model) == 146_800_640
    assert per_request(cfg) == 314_572_800


def kimi_linear():
    """Kimi-Linear-48B-A3B's fields as public transcriptions give them (not a verbatim file)."""
    full = [4, 8, 12, 16, 20, 24, 27]
    return {"architectures": ["KimiLinearForCausalLM"], "model_type": "kimi_linear", "torch_dtype": "bfloat16",
            "num_hidden_layers": 27, "num_attention_heads": 32, "hidden_size": 2304, "kv_lora_rank": 512,
            "qk_rope_head_dim": 64, "qk_nope_head_dim": 128, "v_head_dim": 128, "q_lora_rank": None,
            "max_position_embeddings": 1048576, "vocab_size": 163840, "mla_use_nope": True,
            "linear_attn_config": {"full_attn_layers": full, "kda_layers": [i for i in range(1, 28) if i not in full],
                                   "head_dim": 128, "num_heads": 32, "short_conv_kernel_size": 4}}


def test_kimi_linear_kda_and_mla():
    """vLLM KimiLinearConfig.is_kda_layer: kda_layers are 1-based. The other 7 are MLA (kimi_linear is
    in ModelConfig.is_deepseek_mla): 7 x (512 + 64) x 2 B = 8,064 B per token, whole on every GPU.
    KDA (kda_state_shape, kda_state_dtype): conv 3 x 32 x 128 x (4 - 1) = 36,864 x 2 B = 73,728 B,
    recurrent 32 x 128 x 128 = 524,288 x 4 B (float32) = 2,097,152 B; 2,170,880 B x 20 = 43,417,600 B."""
    model = model_from_config(kimi_linear())
    kinds = [layer.kind for layer in model.layers]
    assert kinds.count("mla") == 7 and kinds[3] == "mla" and kinds[26] == "mla" and kinds[0] == "state"
    assert per_token(model) == 8_064
    assert state(model) == 43_417_600
    assert per_token(model, tp=4) == 8_064            # the latent is replicated
    assert state(model, tp=4) == 43_417_600 // 4


def test_kimi_linear_layers_must_cover_every_layer():
    cfg = kimi_linear()
    cfg["linear_attn_config"]["full_attn_layers"] = [4, 8]
    with pytest.raises(InputError) as e:
        model_from_config(cfg)
    assert e.value.field == "linear_attn_config.full_attn_layers"


def mimo_v2():
    """MiMo-V2-Flash's head geometry as a public validator transcribes it (48 layers; full 4 kv heads,
    K 192, V 128; window layers 8 kv heads, K 192, V 128, window 128). The layer pattern here is
    written for the test (8 full, 40 window), not the released one."""
    return {"architectures": ["MiMoV2FlashForCausalLM"], "model_type": "mimo_v2_flash", "torch_dtype": "bfloat16",
            "num_hidden_layers": 48, "num_attention_heads": 64, "num_key_value_heads": 4, "head_dim": 192,
            "v_head_dim": 128, "swa_num_attention_heads": 64, "swa_num_key_value_heads": 8, "swa_head_dim": 192,
            "swa_v_head_dim": 128, "sliding_window_size": 128, "hidden_size": 4096,
            "max_position_embeddings": 262144, "hybrid_layer_pattern": ([0] + [1] * 5) * 8}


def test_mimo_v2_k_and_v_apart():
    """vLLM mimo_v2_flash.py: hybrid_layer_pattern 1 is a window layer with the swa_* dims and
    sliding_window_size; Attention gets head_size_v. Full: 4 x (192 + 128) x 2 B = 2,560 B;
    window: 8 x 320 x 2 B = 5,120 B. At 4,096 tokens: 8 x 2,560 x 4,096 + 40 x 5,120 x 128 =
    83,886,080 + 26,214,400 = 110,100,480 B (not 2 x 192 for V: that would be 3,072 and 6,144)."""
    model = model_from_config(mimo_v2())
    full = model.layers[0]
    window = model.layers[1]
    assert (full.kind, full.row_bytes(BF16)) == ("full", 2_560)
    assert (window.kind, window.row_bytes(BF16), window.window) == ("sliding", 5_120, 128)
    assert per_request(mimo_v2()) == 110_100_480
    assert window.row_bytes(BF16, tp=8) == 640        # 8 // 8 = 1 kv head per GPU


def test_v_head_dim_elsewhere_is_refused():
    """A V head dim of its own where vLLM's model code is not known to pass head_size_v: refused."""
    cfg = {"model_type": "llama", "num_hidden_layers": 2, "num_attention_heads": 8, "num_key_value_heads": 8,
           "head_dim": 128, "v_head_dim": 64, "hidden_size": 1024}
    with pytest.raises(InputError) as e:
        model_from_config(cfg)
    assert e.value.field == "v_head_dim"


def test_nemotron_layers_block_type_spelling():
    """The spelled-out layout (vLLM NemotronHConfig: M mamba, * attention, - mlp, E moe) gives the
    same model as the real Nemotron-H-56B config's hybrid_override_pattern."""
    cfg = hf_fixture("nvidia__Nemotron-H-56B-Base-8K.json")
    names = {"M": "mamba", "*": "attention", "-": "mlp", "E": "moe"}
    spelled = {k: v for k, v in cfg.items() if k != "hybrid_override_pattern"}
    spelled["layers_block_type"] = [names[c] for c in cfg["hybrid_override_pattern"]]
    assert model_from_config(spelled).layers == model_from_config(cfg).layers
    spelled["layers_block_type"] = spelled["layers_block_type"][:-1]
    with pytest.raises(InputError) as e:
        model_from_config(spelled)
    assert e.value.field == "layers_block_type"


@pytest.mark.parametrize("key, value, family", [
    ("global_head_dim", 512, "Gemma 4"), ("num_global_key_value_heads", 4, "Gemma 4"),
    ("compress_ratios", [4, 128], "DeepSeek-V4"),
])
def test_families_not_modelled_are_refused(key, value, family):
    cfg = {**hf_fixture("meta-llama__Llama-3.1-8B.json"), key: value}
    with pytest.raises(InputError) as e:
        model_from_config(cfg)
    assert e.value.field == key


SUPPORTED = fixture_names()
UNKNOWN_KEYS = ["local_head_dim", "num_local_kv_heads", "num_global_heads", "attention_window",
                "chunk_window", "sink_layers", "extra_kv_heads", "compressed_layer_types"]


@pytest.mark.parametrize("name", SUPPORTED)
@pytest.mark.parametrize("key", UNKNOWN_KEYS)
def test_unknown_cache_shaped_key_is_refused(name, key):
    """Any config that computes, plus one cache-shaped key nobody reads, is refused naming the key."""
    cfg = hf_fixture(name)
    model_from_config(cfg)
    text = cfg.get("text_config", cfg)
    text[key] = 8
    with pytest.raises(InputError) as e:
        model_from_config(cfg)
    assert e.value.field.endswith(key)


@pytest.mark.parametrize("build", [qwen35_moe, minimax_m2, kimi_linear, mimo_v2])
@pytest.mark.parametrize("key", UNKNOWN_KEYS)
def test_unknown_key_refused_in_new_families(build, key):
    cfg = json.loads(json.dumps(build()))
    model_from_config(cfg)
    cfg.get("text_config", cfg)[key] = 8
    with pytest.raises(InputError) as e:
        model_from_config(cfg)
    assert e.value.field.endswith(key)


@pytest.mark.parametrize("change, field", [
    ({"layer_types": ["full_attention"] * 31}, "layer_types"),
    ({"head_dim": None, "hidden_size": 4000, "num_attention_heads": 48}, "head_dim"),
    ({"num_key_value_heads": 64}, "num_key_value_heads"),
    ({"sliding_window": 0, "layer_types": ["sliding_attention", "full_attention"] * 16}, "sliding_window"),
])
def test_bad_input_one_refusal_naming_the_field(change, field):
    cfg = {**hf_fixture("meta-llama__Llama-3.1-8B.json"), **change}
    with pytest.raises(InputError) as e:
        model_from_config(cfg)
    assert e.value.field == field


def test_keys_of_real_configs_that_change_no_cache_are_read_not_refused():
    """Keys shaped like cache dimensions that real configs carry and that change no cache: a
    re-saved Llama 4 config's moe_layers, DeepSeek-V3.2's index_n_heads (the indexer caches one
    128-wide fp8 key per token, 61 x (576 x 2 + 128 + 4) = 78,324 B per token in bf16), and
    Command R7B's order_of_interleaved_layers, whose only value is the layout its pattern gives."""
    from kvcalc.readers.hfconfig import model_from_config
    from kvcalc.precision import precision
    from kvcalc.sizing import bytes_per_token
    from support import hf_fixture
    v32 = dict(hf_fixture("deepseek-ai__DeepSeek-V3.json"), model_type="deepseek_v32", index_head_dim=128,
               index_n_heads=64, index_topk=2048)
    model = model_from_config(v32)
    assert bytes_per_token(model.layer_counts(), precision("bf16")) == 61 * (576 * 2 + 128 + 4) == 78_324
    scout = {"model_type": "llama4", "text_config": {
        "model_type": "llama4_text", "num_hidden_layers": 4, "num_attention_heads": 40, "num_key_value_heads": 8,
        "head_dim": 128, "hidden_size": 5120, "attention_chunk_size": 8192, "moe_layers": [0, 1, 2, 3]}}
    assert [layer.kind for layer in model_from_config(scout).layers] == ["chunked"] * 3 + ["full"]
    r7b = {"model_type": "cohere2", "num_hidden_layers": 8, "num_attention_heads": 32, "num_key_value_heads": 8,
           "hidden_size": 4096, "sliding_window": 4096, "sliding_window_pattern": 4,
           "order_of_interleaved_layers": "local_attn_first"}
    assert [layer.kind for layer in model_from_config(r7b).layers] == (["sliding"] * 3 + ["full"]) * 2
    import pytest
    from kvcalc.errors import InputError
    with pytest.raises(InputError) as refused:
        model_from_config(dict(r7b, order_of_interleaved_layers="global_attn_first"))
    assert refused.value.field == "order_of_interleaved_layers"


def lfm2_1b(**overrides):
    """LFM2-1.2B's fields as transformers Lfm2Config and its model card give them (not a verbatim
    file): 16 layers, 6 of them full attention, short convolutions elsewhere."""
    cfg = {"architectures": ["Lfm2ForCausalLM"], "model_type": "lfm2", "hidden_size": 2048,
           "num_hidden_layers": 16, "num_attention_heads": 32, "num_key_value_heads": 8, "conv_L_cache": 3,
           "conv_dim": 2048, "vocab_size": 65536, "max_position_embeddings": 128000, "torch_dtype": "bfloat16",
           "layer_types": ["conv", "conv", "full_attention", "conv", "conv", "full_attention", "conv", "conv",
                           "full_attention", "conv", "full_attention", "conv", "full_attention", "conv",
                           "full_attention", "conv"]}
    cfg.update(overrides)
    return cfg


def test_lfm2_short_convolutions_keep_a_small_state():
    """vLLM lfm2.py: "conv" layers keep MambaStateShapeCalculator.short_conv_state_shape,
    (conv_L_cache - 1) x conv_dim in the model's dtype, conv_dim split by tp; the attention
    layers' head dim is hidden / heads = 2,048 / 32 = 64.
    Attention, 6 layers: 2 x 8 kv x 64 x 2 B = 2,048 B; x 6 = 12,288 B per token.
    Short conv, 10 layers: (3 - 1) x 2,048 x 2 B = 8,192 B; x 10 = 81,920 B per request
    (40,960 B per GPU at tp 2).
    At 4,096 tokens: 12,288 x 4,096 + 81,920 = 50,331,648 + 81,920 = 50,413,568 B."""
    model = model_from_config(lfm2_1b())
    assert per_token(model) == 12_288
    assert state(model) == 81_920 and state(model, tp=2) == 40_960
    assert per_request(lfm2_1b()) == 50_413_568
    # transformers Lfm2Config builds layer_types from full_attn_idxs when a config gives only those.
    spelled = lfm2_1b(layer_types=None, full_attn_idxs=[2, 5, 8, 10, 12, 14])
    del spelled["layer_types"]
    assert model_from_config(spelled).layers == model.layers
    with pytest.raises(InputError) as e:
        model_from_config(lfm2_1b(layer_types=["conv", "mamba"] * 8))
    assert e.value.field == "layer_types"


def test_gemma4_without_layer_types_takes_its_config_class_defaults():
    """transformers Gemma4TextConfig builds layer_types with pattern 6 (five sliding, one full) and
    forces the last layer full; the window defaults to 512. 8 layers: S S S S S F S F."""
    cfg = {"architectures": ["Gemma4ForCausalLM"], "model_type": "gemma4_text", "num_hidden_layers": 8,
           "num_attention_heads": 8, "num_key_value_heads": 4, "head_dim": 256, "hidden_size": 2048}
    for window in (None, 1024):
        model = model_from_config(dict(cfg, sliding_window=window) if window else cfg)
        assert [layer.kind for layer in model.layers] == ["sliding"] * 5 + ["full", "sliding", "full"]
        assert {layer.window for layer in model.layers if layer.kind == "sliding"} == {window or 512}
        # Full layers: global_head_dim's default 512, num_key_value_heads (no attention_k_eq_v).
        assert {(layer.kv_heads, layer.head_dim) for layer in model.layers if layer.kind == "full"} == {(4, 512)}


@pytest.mark.parametrize("key", ["_mtp_num_hidden_layers", "_num_nextn_predict_layers", "__mlp_only_layers"])
def test_a_harmless_key_under_a_private_spelling_is_harmless(key):
    """Issue 37: an exporter's underscore spelling of a draft's layer count (or a weights-only list) changes no
    cache, as the key it spells does not: the config is sized as without it. A cache-shaped private key that is
    not such a spelling is still refused."""
    cfg = hf_fixture("meta-llama__Llama-3.1-8B.json")
    plain = model_from_config(cfg)
    cfg[key] = 1 if "layers" in key and "only" not in key else []
    assert model_from_config(cfg).layers == plain.layers
    cfg["_kv_lora_rank"] = 8
    with pytest.raises(InputError) as e:
        model_from_config(cfg)
    assert e.value.field == "_kv_lora_rank"
