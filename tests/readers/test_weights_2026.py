"""Weights for the models people run now (issue 21): parameter counts of the 2025-26 families
from their configs' shapes, and the bytes a quantization_config stores them in.

Configs written here (not fixtures) carry the fields of the released config.json as public
transcriptions give them, and are not claimed to be verbatim files; the one real file is the
Qwen3-Next fixture (tests/fixtures/hf/SOURCES.md). Published totals are model cards' rounded
figures (Hugging Face shows the same rounding): a count is held to the exact integer worked
out in its docstring, and to the card within the card's rounding.
"""

from fractions import Fraction

import pytest

from kvcalc import InputError
from kvcalc.readers.params import FAMILIES, FAMILIES_2026, count_params
from kvcalc.readers.quantized_bytes import quantized_weights
from kvcalc.inputs.scenario import PLAUSIBLE_BITS_PER_PARAM

from support import FIXTURES, fixture_names, hf_fixture
from test_models_2026 import qwen35_moe

assert FAMILIES_2026.items() <= FAMILIES.items()      # the 2025-26 families are registered


def olmo2_7b():
    return {"model_type": "olmo2", "hidden_size": 4096, "intermediate_size": 11008, "num_hidden_layers": 32,
            "num_attention_heads": 32, "num_key_value_heads": 32, "vocab_size": 100352,
            "tie_word_embeddings": False, "attention_bias": False}


def smollm3_3b():
    return {"model_type": "smollm3", "hidden_size": 2048, "intermediate_size": 11008, "num_hidden_layers": 36,
            "num_attention_heads": 16, "num_key_value_heads": 4, "vocab_size": 128256, "tie_word_embeddings": True}


def seed_oss_36b():
    return {"model_type": "seed_oss", "hidden_size": 5120, "intermediate_size": 27648, "num_hidden_layers": 64,
            "num_attention_heads": 80, "num_key_value_heads": 8, "head_dim": 128, "vocab_size": 155136,
            "tie_word_embeddings": False, "attention_bias": True, "attention_out_bias": False, "mlp_bias": False}


def minimax_m2():
    return {"model_type": "minimax_m2", "hidden_size": 3072, "intermediate_size": 1536, "num_hidden_layers": 62,
            "num_attention_heads": 48, "num_key_value_heads": 8, "head_dim": 128, "vocab_size": 200064,
            "num_local_experts": 256, "num_experts_per_tok": 8, "tie_word_embeddings": False, "use_qk_norm": True}


def glm45_air():
    return {"model_type": "glm4_moe", "hidden_size": 4096, "intermediate_size": 10944, "moe_intermediate_size": 1408,
            "num_hidden_layers": 46, "num_attention_heads": 96, "num_key_value_heads": 8, "head_dim": 128,
            "vocab_size": 151552, "n_routed_experts": 128, "n_shared_experts": 1, "num_experts_per_tok": 8,
            "first_k_dense_replace": 1, "attention_bias": True, "use_qk_norm": False, "tie_word_embeddings": False}


def ernie45_21b():
    return {"model_type": "ernie4_5_moe", "hidden_size": 2560, "intermediate_size": 12288,
            "moe_intermediate_size": 1536, "num_hidden_layers": 28, "num_attention_heads": 20,
            "num_key_value_heads": 4, "head_dim": 128, "vocab_size": 103424, "moe_num_experts": 64, "moe_k": 6,
            "moe_num_shared_experts": 2, "moe_layer_start_index": 1, "moe_layer_end_index": 27,
            "moe_layer_interval": 1, "use_bias": False, "tie_word_embeddings": True}


def qwen35_35b():
    return qwen35_moe(num_experts=256, num_experts_per_tok=8, moe_intermediate_size=512,
                      shared_expert_intermediate_size=512, tie_word_embeddings=False)


def test_qwen3_next_counts_gated_deltanet_and_gated_attention():
    """The real Qwen3-Next-80B-A3B-Thinking config: hidden 2048, 48 layers, every 4th full attention.
    Gated DeltaNet (36 layers, transformers Qwen3NextGatedDeltaNet): key 16 x 128 = 2,048, value
    32 x 128 = 4,096; in_proj_qkvz (2 x 2,048 + 2 x 4,096) x 2,048 = 25,165,824, in_proj_ba 64 x 2,048
    = 131,072, conv1d (2 x 2,048 + 4,096) x 4 = 32,768 (no bias), dt_bias 32, A_log 32, norm 128,
    out_proj 2,048 x 4,096 = 8,388,608: 33,718,464.
    Gated attention (12 layers): q_proj 2 x 16 x 256 x 2,048 = 16,777,216 (query and its gate), k and
    v 512 x 2,048 each = 2,097,152, o 2,048 x 4,096 = 8,388,608, q/k norms 2 x 256: 27,263,488.
    MoE (48 layers): router 512 x 2,048 = 1,048,576, experts 512 x 3 x 2,048 x 512 = 1,610,612,736,
    shared expert 3,145,728 and its gate 2,048: 1,614,809,088; two norms 4,096.
    Embedding and head 2 x 151,936 x 2,048 = 622,329,856, final norm 2,048.
    Total 622,331,904 + 36 x 33,718,464 + 12 x 27,263,488 + 48 x 1,614,813,184 = 79,674,391,296
    (Qwen: "80B in total"; the checkpoint's mtp.* draft layer is not built by transformers or vLLM's
    model and is left out). Active: the router, 10 of the experts (31,457,280), the shared expert and
    its gate per layer: 3,874,929,408 with the embedding (3.56B without; Qwen: "3B activated")."""
    counted = count_params(hf_fixture("Qwen__Qwen3-Next-80B-A3B-Thinking.json"))
    assert counted.total == 79_674_391_296
    assert counted.active == 3_874_929_408
    assert abs(counted.total - 80e9) < 0.5e9


@pytest.mark.parametrize("build, total, active, card", [
    # OLMo 2 7B: embed and head 2 x 100,352 x 4,096 = 822,083,584; per layer attention 4 x 4,096^2 =
    # 67,108,864 plus full-width q/k norms 2 x 4,096, MLP 3 x 4,096 x 11,008 = 135,266,304, two norms
    # 8,192: 202,391,552 x 32 = 6,476,529,664; + final norm: 7,298,617,344 (Ai2's card: 7.3B).
    (olmo2_7b, 7_298_617_344, None, 7.3e9),
    # SmolLM3-3B (tied): embed 128,256 x 2,048 = 262,668,288; per layer q, o 2 x 2,048^2 = 8,388,608,
    # k, v 2 x 2,048 x 512 = 2,097,152, MLP 3 x 2,048 x 11,008 = 67,633,152, norms 4,096: 78,123,008
    # x 36 = 2,812,428,288; + 2,048: 3,075,098,624 (Hugging Face's card: 3.08B).
    (smollm3_3b, 3_075_098_624, None, 3.08e9),
    # Seed-OSS-36B: untied 2 x 155,136 x 5,120 = 1,588,592,640; per layer q, o 2 x 10,240 x 5,120,
    # k, v 2 x 1,024 x 5,120, q/k/v biases 12,288 (o has none: attention_out_bias), MLP 3 x 5,120 x
    # 27,648 = 424,673,280, norms 10,240: 540,039,168 x 64; total 36,151,104,512 (ByteDance: 36B).
    (seed_oss_36b, 36_151_104_512, None, 36e9),
    # MiniMax-M2: 62 layers of 256 experts of 3 x 3,072 x 1,536 (top 8), a router and its
    # e_score_correction_bias, attention 48/8 heads of 128 with full-width q/k norms (MiniMax: 230B
    # total, 10B active; the checkpoint's MTP modules are not built).
    (minimax_m2, 228_689_764_864, 11_030_553_088, 230e9),
    # GLM-4.5-Air: 46 layers, the first dense (10,944), then 128 experts of 1,408 plus one shared,
    # the router's float32 correction bias, biased q/k/v (Z.ai: 106B total, 12B active).
    (glm45_air, 106_852_251_264, 13_424_129_664, 106e9),
    # ERNIE-4.5-21B-A3B: layer 0 dense, layers 1-27 64 experts of 1,536 (top 6) plus 2 shared widths
    # (Baidu: 21B total, 3B active per token; Hugging Face shows 21.8B).
    (ernie45_21b, 21_825_437_888, 3_352_150_208, 21.8e9),
    # Qwen3.5-35B-A3B's language model: 30 Gated DeltaNet and 10 gated attention layers, 256 experts of
    # 512 (top 8) and a shared one in every layer (Qwen: 35B, vision tower included, which is not here).
    (qwen35_35b, 34_660_610_688, 3_454_988_928, 35e9),
])
def test_2026_families_count_from_their_shapes(build, total, active, card):
    counted = count_params(build())
    assert (counted.total, counted.active) == (total, active or total)
    assert abs(counted.total - card) / card < 0.02
    assert counted.total == sum(g.elements for g in counted.tensors)


def test_ernie_moe_layers_follow_start_end_and_interval():
    """moe_layer_end_index -1 is the last layer (transformers Ernie4_5_MoeConfig); interval 2 puts
    experts in every second layer from the start index."""
    assert count_params(ernie45_21b()) == count_params({**ernie45_21b(), "moe_layer_end_index": -1})
    halved = count_params({**ernie45_21b(), "moe_layer_interval": 2})
    experts = [g for g in halved.tensors if g.role == "expert"]
    assert {int(g.name.split(".")[2]) for g in experts} == set(range(1, 28, 2))


def test_gpt_oss_mxfp4_equals_the_published_index_totals():
    """mxfp4 (transformers Mxfp4): only the experts' gate_up and down projections are quantized, as
    *_blocks (two 4-bit values a byte) and *_scales (one uint8 per 32): 17/32 B per element. 20b: 24
    layers x 32 experts x (5,760 x 2,880 + 2,880 x 2,880) = 19,110,297,600 elements x 17/32 =
    10,152,345,600 B; the other 1,804,459,584 parameters (expert biases, attention, router, embedding,
    head) x 2 B = 3,608,919,168 B; 13,761,264,768 B: the preset's checkpoint_bytes, the published
    model.safetensors.index.json total_size. 120b likewise: 65,248,815,744 B."""
    for name, preset in (("openai__gpt-oss-20b.json", 13_761_264_768), ("openai__gpt-oss-120b.json", 65_248_815_744)):
        assert quantized_weights(hf_fixture(name)).bytes == preset
    from kvcalc.readers import presets
    assert presets.preset_model("openai/gpt-oss-20b").checkpoint_bytes == 13_761_264_768
    assert presets.preset_model("openai/gpt-oss-120b").checkpoint_bytes == 65_248_815_744


def test_deepseek_v3_fp8_blocks_and_16_bit_rest():
    """fp8 with weight_block_size [128, 128] (vLLM Fp8LinearMethod, weight_scale_inv): every decoder
    linear in 1 B plus a float32 per 128 x 128 block (ceil-divided: kv_a_proj_with_mqa's 576 rows
    make 5 row blocks); embedding, head, norms and the 58 routers in bf16, their e_score_correction_bias
    in float32. 673,150,611,808 B for 671,026,419,200 parameters: 0.32% above params x 1 B (the
    embedding and head's second byte alone are 2 x 129,280 x 7,168 = 1,853,358,080 B)."""
    cfg = hf_fixture("deepseek-ai__DeepSeek-V3.json")
    counted = count_params(cfg)
    weights = quantized_weights(cfg, counted).bytes
    assert weights == 673_150_611_808
    assert round((weights / counted.total - 1) * 100, 2) == 0.32
    # Leaving out weight_block_size is per-tensor fp8: one float32 scale per linear, no blocks.
    per_tensor = dict(cfg, quantization_config={"quant_method": "fp8", "activation_scheme": "dynamic"})
    assert quantized_weights(per_tensor).bytes < weights


L8 = 8_030_261_248


def llama8b(**quant):
    return dict(hf_fixture("meta-llama__Llama-3.1-8B.json"), quantization_config=quant)


def test_awq_and_gptq_int4_groups():
    """Llama 3.1 8B: 6,979,321,856 linear weights in 32 layers (per layer q, o 4,096^2, k, v 1,024 x
    4,096, MLP 3 x 14,336 x 4,096 = 218,103,808); embedding and head 2 x 525,336,576 and norms
    266,240 stay 16-bit: 1,050,939,392 x 2 B = 2,101,878,784 B.
    AWQ (GEMM layout, group 128): qweight n / 2 B, per group of 128 inputs an fp16 scale and a 4-bit
    zero per output: n / 2 + n / 128 x 2.5 B = 3,489,660,928 + 136,314,880 = 3,625,975,808 B; with
    the rest 5,727,854,592 B (5.71 bits per parameter).
    GPTQ adds an int32 g_idx per input column of every linear, 32 x (6 x 4,096 + 14,336) x 4 B =
    4,980,736 B: 5,732,835,328 B."""
    awq = quantized_weights(llama8b(quant_method="awq", bits=4, group_size=128, zero_point=True, version="gemm"))
    gptq = quantized_weights(llama8b(quant_method="gptq", bits=4, group_size=128, desc_act=False, sym=True))
    assert awq.bytes == 5_727_854_592
    assert gptq.bytes == 5_732_835_328
    linear = 6_979_321_856
    assert awq.bytes == (L8 - linear) * 2 + linear // 2 + linear // 128 * 5 // 2


def test_nvfp4_groups_of_16():
    """ModelOpt NVFP4: n / 2 B of packed values and an fp8 scale per 16, n x 9/16 B, plus
    weight_scale_2 and input_scale (float32) per linear: 6,979,321,856 x 9/16 = 3,925,868,544 B,
    224 linears x 8 B = 1,792 B, the rest 16-bit 2,101,878,784 B: 6,027,749,120 B."""
    w = quantized_weights(llama8b(quant_method="modelopt", quant_algo="NVFP4", group_size=16,
                                  exclude_modules=["lm_head"]))
    linear = 6_979_321_856
    assert w.bytes == (L8 - linear) * 2 + linear * 9 // 16 + 32 * 7 * 8 == 6_027_749_120
    # Excluding a layer's attention (a glob) keeps those weights in 16 bits.
    skipped = quantized_weights(llama8b(quant_method="modelopt", quant_algo="NVFP4", group_size=16,
                                        exclude_modules=["lm_head", "model.layers.0.self_attn*"]))
    attention = 2 * 4096 * 4096 + 2 * 1024 * 4096
    assert skipped.bytes - w.bytes == attention * 2 - (attention * 9 // 16 + 4 * 8)


def test_modules_to_not_convert_keep_16_bits():
    base = quantized_weights(llama8b(quant_method="awq", bits=4, group_size=128, version="gemm")).bytes
    kept = quantized_weights(llama8b(quant_method="awq", bits=4, group_size=128, version="gemm",
                                     modules_to_not_convert=["model.layers.31.mlp"])).bytes
    mlp = 3 * 14336 * 4096
    assert kept - base == mlp * 2 - (mlp // 2 + mlp // 128 * 5 // 2)


@pytest.mark.parametrize("quant, field", [
    ({"quant_method": "bitsandbytes", "load_in_4bit": True}, "quantization_config.quant_method"),
    ({"quant_method": "awq", "bits": 3, "group_size": 128}, "quantization_config.bits"),
    ({"quant_method": "gptq", "bits": 4, "group_size": 128, "lm_head": True}, "quantization_config.lm_head"),
    ({"quant_method": "modelopt", "quant_algo": "FP8"}, "quantization_config.quant_method"),
    ({"quant_method": "compressed-tensors"}, "quantization_config.quant_method"),
    ({"quant_method": "fp8", "weight_block_size": [128]}, "quantization_config.weight_block_size"),
])
def test_other_quantizations_are_refused_with_the_reason(quant, field):
    with pytest.raises(InputError) as e:
        quantized_weights(llama8b(**quant))
    assert e.value.field == field and e.value.message


FAMILY_CONFIGS = [olmo2_7b, smollm3_3b, seed_oss_36b, minimax_m2, glm45_air, ernie45_21b, qwen35_35b]
FIXTURE_NAMES = fixture_names()
QUANTS = [None, {"quant_method": "fp8", "weight_block_size": [128, 128]}, {"quant_method": "mxfp4"},
          {"quant_method": "modelopt", "quant_algo": "NVFP4", "group_size": 16},
          {"quant_method": "awq", "bits": 4, "group_size": 64, "version": "gemm"},
          {"quant_method": "gptq", "bits": 4, "group_size": 128}, {"quant_method": "gptq", "bits": 8, "group_size": -1}]


def _configs():
    for build in FAMILY_CONFIGS:
        yield build.__name__, build()
    for name in FIXTURE_NAMES:
        yield name, hf_fixture(name)


@pytest.mark.parametrize("quant", QUANTS, ids=lambda q: q["quant_method"] + str(q.get("bits", "")) if q else "bf16")
def test_counted_weights_are_plausible_bits_per_parameter(quant):
    """Any supported family, any rule: weights within scenario._check_plausible's band."""
    low, high = PLAUSIBLE_BITS_PER_PARAM
    checked = 0
    for name, cfg in _configs():
        try:
            counted = count_params(cfg)
        except InputError:
            continue
        if quant is None:
            weights = 2 * counted.total
        else:
            cfg = {k: v for k, v in cfg.items() if k != "quantization_config"}
            try:
                weights = quantized_weights(dict(cfg, quantization_config=quant), counted).bytes
            except InputError:
                continue
        assert low <= Fraction(8 * weights, counted.total) <= high, name
        checked += 1
    assert checked >= 10


def test_a_pasted_quantized_config_sizes_with_its_computed_weights():
    """A config.json alone now sizes a quantized checkpoint: gpt-oss-120b's mxfp4 experts give
    65,248,815,744 B (its published index total_size), DeepSeek-V3's fp8 blocks 673,150,611,808 B,
    each said to be computed from the config; a checkpoint's own bytes, given, still win."""
    from kvcalc.evaluation import evaluate
    from support import hf_fixture
    oss = evaluate({"hf-config": hf_fixture("openai__gpt-oss-120b.json"), "gpu": "h100-sxm-80gb"})
    assert oss.result.weights_bytes == 65_248_815_744
    assert any("computed from the config's quantization_config" in w for w in oss.scenario.warnings)
    assert not any("give the weights precision" in w for w in oss.scenario.warnings)
    v3 = evaluate({"hf-config": hf_fixture("deepseek-ai__DeepSeek-V3.json"), "gpu": "h200-141gb", "gpus": "8"})
    assert v3.result.weights_bytes == 673_150_611_808
    given = evaluate({"hf-config": hf_fixture("openai__gpt-oss-120b.json"), "gpu": "h100-sxm-80gb",
                      "weights-bytes": "65248815000"})
    assert given.result.weights_bytes == 65_248_815_000


def qwen3_vl_8b(**text):
    """Qwen3-VL-8B-Instruct's shapes as its model card and config give them (not a verbatim file)."""
    vision = {"model_type": "qwen3_vl", "depth": 27, "hidden_size": 1152, "intermediate_size": 4304,
              "num_heads": 16, "out_hidden_size": 4096, "patch_size": 16, "num_position_embeddings": 2304,
              "deepstack_visual_indexes": [8, 16, 24], "temporal_patch_size": 2, "spatial_merge_size": 2,
              "in_channels": 3}
    text_config = {"model_type": "qwen3_vl_text", "hidden_size": 4096, "intermediate_size": 12288,
                   "num_hidden_layers": 36, "num_attention_heads": 32, "num_key_value_heads": 8, "head_dim": 128,
                   "vocab_size": 151936, **text}
    return {"architectures": ["Qwen3VLForConditionalGeneration"], "model_type": "qwen3_vl",
            "text_config": text_config, "vision_config": vision, "tie_word_embeddings": False}


def test_qwen3_vl_counts_its_vision_tower_and_deepstack_mergers():
    """transformers Qwen3VLVisionModel, hidden h = 1,152, MLP 4,304, 27 blocks:
    a block: norms 4h = 4,608; qkv 3h x h + 3h = 3,984,768; proj h x h + h = 1,328,256;
    fc1 4,304 x h + 4,304 = 4,962,512; fc2 h x 4,304 + h = 4,959,360; 15,239,504 x 27 = 411,466,608.
    Patch embedding 3 x 2 x 16 x 16 x h + h = 1,770,624; positions 2,304 x h = 2,654,208.
    Merger on 4 patches (4,608 wide): norm 2h = 2,304, fc1 4,608^2 + 4,608 = 21,238,272,
    fc2 4,608 x 4,096 + 4,096 = 18,878,464: 40,119,040; each of 3 DeepStack mergers norms the
    merged width (9,216): 40,125,952 x 3 = 120,377,856. Tower: 576,388,336.
    Text, Qwen3-8B's shapes untied: 8,190,735,360. Total 8,767,123,696, the safetensors total of
    Qwen/Qwen3-VL-8B-Instruct (8.77B on its model page)."""
    counted = count_params(qwen3_vl_8b())
    assert counted.total == 8_767_123_696
    vision = sum(g.elements for g in counted.tensors if g.role == "vision")
    assert vision == 576_388_336
    # The wrapper's tie_word_embeddings rules when text_config has none (Qwen3-VL-2B and 4B tie).
    tied = qwen3_vl_8b()
    tied["tie_word_embeddings"] = True
    assert count_params(tied).total == 8_767_123_696 - 151_936 * 4_096


def test_qwen35_tower_has_no_deepstack_mergers():
    """Qwen3_5VisionModel builds Qwen3-VL's blocks and merger but no DeepStack list, whatever the
    config says: the tower above less 120,377,856."""
    cfg = qwen3_vl_8b()
    cfg["model_type"] = "qwen3_5"
    cfg["text_config"]["model_type"] = "qwen3_vl_text"
    assert count_params(cfg).total == 8_767_123_696 - 120_377_856


def gemma3_27b():
    """google/gemma-3-27b-it's text and vision shapes as its config.json publishes them (not a verbatim file)."""
    return {"architectures": ["Gemma3ForConditionalGeneration"], "model_type": "gemma3",
            "text_config": {"model_type": "gemma3_text", "num_hidden_layers": 62, "num_attention_heads": 32,
                            "num_key_value_heads": 16, "head_dim": 128, "hidden_size": 5376,
                            "intermediate_size": 21504, "vocab_size": 262208, "sliding_window": 1024},
            "vision_config": {"hidden_size": 1152, "image_size": 896, "intermediate_size": 4304,
                              "model_type": "siglip_vision_model", "num_attention_heads": 16,
                              "num_hidden_layers": 27, "patch_size": 14, "vision_use_head": False}}


def test_gemma3_counts_siglip_and_its_projector():
    """SigLIP, h = 1,152: a layer has the same 15,239,504 as Qwen3-VL's block (q, k, v, out biased),
    x 27 = 411,466,608; patch embedding 3 x 14 x 14 x h + h = 678,528; positions (896 / 14)^2 = 4,096
    x h = 4,718,592; post norm 2,304: 416,866,032. Projector: 1,152 x 5,376 + 1,152 = 6,194,304.
    Text: embeddings 262,208 x 5,376 = 1,409,630,208 (tied); a layer: q and o 2 x 4,096 x 5,376,
    k and v 2 x 2,048 x 5,376 = 66,060,288, q/k norms 256, 4 norms 21,504, MLP 3 x 5,376 x 21,504
    = 346,816,512: 412,898,560 x 62 = 25,599,710,720; final norm 5,376: 27,009,346,304.
    Total 27,432,406,640: gemma-3-27b-it's safetensors total (27.4B)."""
    assert count_params(gemma3_27b()).total == 27_432_406_640
    # SigLIP's attention-pooling head, where the config keeps it (SiglipVisionConfig's default):
    # probe h, in_proj 3h^2 + 3h, out_proj h^2 + h, norm 2h, MLP 2 x 4,304 x h + 4,304 + h.
    cfg = gemma3_27b()
    del cfg["vision_config"]["vision_use_head"]
    h = 1152
    head = h + 3 * h * h + 3 * h + h * h + h + 2 * h + 2 * 4304 * h + 4304 + h
    assert count_params(cfg).total == 27_432_406_640 + head


def test_an_unknown_vision_tower_is_refused_not_left_out():
    cfg = gemma3_27b()
    cfg["model_type"] = "mistral3"
    cfg["text_config"]["model_type"] = "gemma3_text"
    with pytest.raises(InputError) as e:
        count_params(cfg)
    assert e.value.field == "vision_config" and "mistral3" in e.value.message


def test_nemotron_h_counts_mamba2_attention_and_ungated_mlp_layers():
    """The real Nemotron-H-56B-Base-8K config (vLLM nemotron_h.py, MambaMixer2): hidden 8,192,
    118 layers by hybrid_override_pattern: 54 M, 10 *, 54 -; each has one RMSNorm (8,192).
    Mamba-2: 256 heads x 64 = 16,384 inner, 8 groups x 256 state: conv channels 16,384 + 4,096 =
    20,480; in_proj (16,384 + 20,480 + 256) x 8,192 = 304,087,040; conv1d 20,480 x 4 + 20,480 bias
    = 102,400; A, D, dt_bias 3 x 256 = 768; gated norm 16,384; out_proj 8,192 x 16,384 =
    134,217,728: 438,432,512 with the norm.
    Attention: q and o 2 x 8,192 x 8,192, k and v 2 x 1,024 x 8,192: 150,994,944; 151,003,136.
    MLP (relu2, no gate): 2 x 32,768 x 8,192 = 536,870,912; 536,879,104.
    54 x 438,432,512 + 10 x 151,003,136 + 54 x 536,879,104 = 54,176,858,624; embeddings and head
    2 x 131,072 x 8,192 = 2,147,483,648; norm_f 8,192: 56,324,350,464 (NVIDIA: 56B)."""
    counted = count_params(hf_fixture("nvidia__Nemotron-H-56B-Base-8K.json"))
    assert counted.total == counted.active == 56_324_350_464
