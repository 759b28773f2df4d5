"""Each real 2025-26 config.json fixture (tests/fixtures/hf/SOURCES.md, "2026 pass 2 (issue 21)"),
sized by hand the way vLLM allocates it, and the real configs the calculator refuses.

Every sized fixture has one test. Its docstring names the file and the URL it was copied from,
then works the cache out from the config's own numbers: bf16 is 2 B per element, fp32 4 B,
fp8 1 B. A full-attention layer keeps K and V, 2 x kv heads x head_dim per token. An MLA layer
keeps one latent of kv_lora_rank + qk_rope_head_dim, and a DeepSeek sparse-attention indexer adds
its fp8 key, index_head_dim plus one fp32 scale per 128 elements. A linear-attention or Mamba
layer keeps a fixed state per request: the conv state in the model's dtype, and the temporal/ssm
state in the dtype the config names (vLLM's mamba_ssm_cache_dtype). With tensor parallelism, kv
heads split as max(1, heads // tp) per GPU, replicated when there are fewer heads than GPUs. MLA
latents and indexer keys stay whole on every GPU. States split by their heads (vLLM's
MambaStateShapeCalculator). The rules and their sources are in docs/research/vllm-2026-layouts.md.
Parameter counts are checked against the model's published total within that figure's rounding
(2%, as in test_weights_2026.py), or the refusal is pinned where the calculator does not count.
"""

import copy
import re
from collections import Counter

import pytest
from hypothesis import given, settings, strategies as st

from kvcalc import InputError, evaluate, model_from_config
from kvcalc.readers.params import count_params
from kvcalc.precision import precision

from support import FIXTURES, REFUSED_FIXTURES, hf_fixture
from test_models_2026 import per_token, state

BF16 = precision("bf16")
_LOADED = {}


def cfg_of(name: str) -> dict:
    """A fresh copy of a fixture (loaded once; the NVFP4 exports are ~2,000 lines)."""
    if name not in _LOADED:
        _LOADED[name] = hf_fixture(name)
    return copy.deepcopy(_LOADED[name])


def request(cfg: dict, context: int, kv: str | None = None) -> int:
    """KV bytes per request at `context` tokens (cache plus fixed state), as evaluate sizes it."""
    raw = {"model": "custom", "hf-config": cfg, "context": str(context)}
    if kv:
        raw["kv-dtype"] = kv
    r = evaluate(raw)
    assert r.ok, r.errors
    return r.result.kv_bytes_per_request


def kinds(model) -> Counter:
    return Counter(layer.kind for layer in model.layers)


def near_card(total: int, card: float) -> bool:
    """Within a published figure's rounding (the 2% test_weights_2026.py holds counts to)."""
    return abs(total - card) / card < 0.02


def count_refusal(cfg: dict) -> str:
    with pytest.raises(InputError) as e:
        count_params(cfg)
    return e.value.field


def only(model, kind):
    layers = {layer for layer in model.layers if layer.kind == kind}
    assert len(layers) == 1, layers
    return layers.pop()


def qwen35_layers_follow_layer_types(cfg, model):
    expected = ["full" if t == "full_attention" else "state" for t in cfg["text_config"]["layer_types"]]
    assert [layer.kind for layer in model.layers] == expected
    assert {layer.ssm_dtype for layer in model.layers if layer.kind == "state"} == {"fp32"}


# ---------------------------------------------------------------------------------------------
# Qwen3.5 / 3.6: gated attention every 4th layer, Gated DeltaNet elsewhere, state in float32.
# vLLM's Qwen3_5ForConditionalGenerationConfig copies text_config.mamba_ssm_dtype into
# mamba_ssm_cache_dtype for both Qwen3.5 architectures; gated_delta_net_state_dtype keeps the conv
# state in the model dtype. Conv state (2 x key heads x key dim + value heads x value dim) x
# (kernel - 1); temporal state value heads x value dim x key dim.
# ---------------------------------------------------------------------------------------------

def check_qwen35(cfg, layers, elements, token, fixed, requests, tp8, total, card):
    """layers (full, Gated DeltaNet), the DeltaNet (conv, ssm) elements, bytes per token, the
    fixed state, {context: bytes per request}, (per token, state) per GPU at tp 8, the counted
    parameters and the card's rounded total."""
    model = model_from_config(cfg)
    assert kinds(model) == {"full": layers[0], "state": layers[1]}
    qwen35_layers_follow_layer_types(cfg, model)
    gdn = only(model, "state")
    assert (gdn.conv_elements, gdn.ssm_elements) == elements
    assert (per_token(model), state(model)) == (token, fixed)
    assert {context: request(cfg, context) for context in requests} == requests
    assert (per_token(model, tp=8), state(model, tp=8)) == tp8
    counted = count_params(cfg).total
    assert counted == total and near_card(counted, card)


def test_qwen35_27b():
    """Qwen/Qwen3.5-27B: tests/fixtures/hf/Qwen__Qwen3.5-27B.json, from
    https://github.com/ai-dynamo/aiconfigurator/blob/095f58a51c4ca8e61b66ec108d86f223f8d559ce/aic-core/src/aiconfigurator_core/model_configs/Qwen--Qwen3.5-27B_config.json

    text_config: 64 layers, layer_types full_attention every 4th, so 16 full and 48
    linear_attention; num_key_value_heads 4, head_dim 256; linear_num_key_heads 16 x
    linear_key_head_dim 128, linear_num_value_heads 48 x linear_value_head_dim 128,
    linear_conv_kernel_dim 4; dtype bfloat16, mamba_ssm_dtype float32.
    Full attention: 2 x 4 x 256 x 2 B = 4,096 B per layer; x 16 = 65,536 B per token.
    Gated DeltaNet: conv (2 x 16 x 128 + 48 x 128) x (4 - 1) = 10,240 x 3 = 30,720 elements
    x 2 B = 61,440 B; ssm 48 x 128 x 128 = 786,432 x 4 B = 3,145,728 B; 3,207,168 B x 48 =
    153,944,064 B per request.
    At 4,096 tokens: 65,536 x 4,096 + 153,944,064 = 268,435,456 + 153,944,064 = 422,379,520 B.
    tp 8: max(1, 4 // 8) = 1 kv head per GPU (replicated, 8 % 4 = 0): 2 x 256 x 2 B = 1,024 B
    x 16 = 16,384 B per token. The state splits by heads (16 / 8 = 2 key, 48 / 8 = 6 value): conv
    10,240 / 8 = 1,280 x 3 = 3,840 x 2 B = 7,680 B, ssm 6 x 128 x 128 = 98,304 x 4 B =
    393,216 B; 400,896 B x 48 = 19,243,008 B per GPU.
    Parameters: 27,356,728,560 counted (language model and vision tower; the mtp.* draft layer is
    not built). Qwen: "27B". Within 2%.
    """
    cfg = cfg_of("Qwen__Qwen3.5-27B.json")
    check_qwen35(cfg, (16, 48), (30_720, 786_432), 65_536, 153_944_064, {4096: 422_379_520},
                 (16_384, 19_243_008), 27_356_728_560, 27e9)


def test_qwen35_35b_a3b():
    """Qwen/Qwen3.5-35B-A3B: tests/fixtures/hf/Qwen__Qwen3.5-35B-A3B.json, from
    https://github.com/ai-dynamo/aiconfigurator/blob/095f58a51c4ca8e61b66ec108d86f223f8d559ce/aic-core/src/aiconfigurator_core/model_configs/Qwen--Qwen3.5-35B-A3B_config.json

    text_config: 40 layers, 10 full_attention (every 4th), 30 linear_attention; kv heads 2,
    head_dim 256; key heads 16 x 128, value heads 32 x 128, conv kernel 4; mamba_ssm_dtype float32.
    Full: 2 x 2 x 256 x 2 B = 2,048 B; x 10 = 20,480 B per token.
    Gated DeltaNet: conv (2 x 16 x 128 + 32 x 128) x 3 = 8,192 x 3 = 24,576 x 2 B = 49,152 B;
    ssm 32 x 128 x 128 = 524,288 x 4 B = 2,097,152 B; 2,146,304 B x 30 = 64,389,120 B.
    At 4,096 tokens: 20,480 x 4,096 + 64,389,120 = 83,886,080 + 64,389,120 = 148,275,200 B.
    tp 8: max(1, 2 // 8) = 1 kv head (replicated): 1,024 B x 10 = 10,240 B per token; state conv
    8,192 / 8 x 3 = 3,072 x 2 B = 6,144 B, ssm 4 x 128 x 128 = 65,536 x 4 B = 262,144 B;
    268,288 B x 30 = 8,048,640 B.
    Parameters: 35,107,181,936 counted (with the vision tower). Qwen: "35B" total. Within 2%.
    """
    cfg = cfg_of("Qwen__Qwen3.5-35B-A3B.json")
    check_qwen35(cfg, (10, 30), (24_576, 524_288), 20_480, 64_389_120, {4096: 148_275_200},
                 (10_240, 8_048_640), 35_107_181_936, 35e9)


def test_qwen35_122b_a10b():
    """Qwen/Qwen3.5-122B-A10B: tests/fixtures/hf/Qwen__Qwen3.5-122B-A10B.json, from
    https://github.com/ai-dynamo/aiconfigurator/blob/095f58a51c4ca8e61b66ec108d86f223f8d559ce/aic-core/src/aiconfigurator_core/model_configs/Qwen--Qwen3.5-122B-A10B_config.json

    text_config: 48 layers, 12 full, 36 linear; kv heads 2, head_dim 256; key heads 16 x 128,
    value heads 64 x 128, conv kernel 4; mamba_ssm_dtype float32.
    Full: 2 x 2 x 256 x 2 B = 2,048 B; x 12 = 24,576 B per token.
    Gated DeltaNet: conv (2 x 16 x 128 + 64 x 128) x 3 = 12,288 x 3 = 36,864 x 2 B = 73,728 B;
    ssm 64 x 128 x 128 = 1,048,576 x 4 B = 4,194,304 B; 4,268,032 B x 36 = 153,649,152 B.
    At 4,096 tokens: 24,576 x 4,096 + 153,649,152 = 100,663,296 + 153,649,152 = 254,312,448 B.
    At 32,768 tokens: 24,576 x 32,768 + 153,649,152 = 805,306,368 + 153,649,152 = 958,955,520 B.
    tp 8: 1 kv head: 1,024 B x 12 = 12,288 B per token; state conv 12,288 / 8 x 3 = 4,608 x 2 B =
    9,216 B, ssm 8 x 128 x 128 = 131,072 x 4 B = 524,288 B; 533,504 B x 36 = 19,206,144 B.
    Parameters: 122,562,817,776 counted (with the vision tower). Qwen: "122B" total. Within 2%
    (0.46%).
    """
    cfg = cfg_of("Qwen__Qwen3.5-122B-A10B.json")
    check_qwen35(cfg, (12, 36), (36_864, 1_048_576), 24_576, 153_649_152, {4096: 254_312_448, 32768: 958_955_520},
                 (12_288, 19_206_144), 122_562_817_776, 122e9)


def test_qwen35_397b_a17b():
    """Qwen/Qwen3.5-397B-A17B: tests/fixtures/hf/Qwen__Qwen3.5-397B-A17B.json, from
    https://github.com/ai-dynamo/aiconfigurator/blob/095f58a51c4ca8e61b66ec108d86f223f8d559ce/aic-core/src/aiconfigurator_core/model_configs/Qwen--Qwen3.5-397B-A17B_config.json

    text_config: 60 layers, 15 full, 45 linear; kv heads 2, head_dim 256; key heads 16 x 128,
    value heads 64 x 128, conv kernel 4; mamba_ssm_dtype float32.
    Full: 2 x 2 x 256 x 2 B = 2,048 B; x 15 = 30,720 B per token.
    Gated DeltaNet (as 122B's): 73,728 + 4,194,304 = 4,268,032 B; x 45 = 192,061,440 B.
    At 4,096 tokens: 30,720 x 4,096 + 192,061,440 = 125,829,120 + 192,061,440 = 317,890,560 B.
    tp 8: 1 kv head: 1,024 B x 15 = 15,360 B per token; state 9,216 + 524,288 = 533,504 B x 45
    = 24,007,680 B.
    Parameters: 396,802,360,816 counted (with the vision tower). Qwen: "397B" total. Within 2%.
    """
    cfg = cfg_of("Qwen__Qwen3.5-397B-A17B.json")
    check_qwen35(cfg, (15, 45), (36_864, 1_048_576), 30_720, 192_061_440, {4096: 317_890_560},
                 (15_360, 24_007_680), 396_802_360_816, 397e9)


def test_qwen36_35b_a3b():
    """Qwen/Qwen3.6-35B-A3B: tests/fixtures/hf/Qwen__Qwen3.6-35B-A3B.json, from
    https://github.com/ai-dynamo/aiconfigurator/blob/abbac647cd87e18557a8cb398b347db2257a6a9a/src/aiconfigurator/model_configs/Qwen--Qwen3.6-35B-A3B_config.json

    The same geometry as Qwen3.5-35B-A3B. text_config: 40 layers, 10 full, 30 linear; kv heads 2
    x 256; key heads 16 x 128, value heads 32 x 128, kernel 4; mamba_ssm_dtype float32.
    Full: 2 x 2 x 256 x 2 B = 2,048 B x 10 = 20,480 B per token.
    Gated DeltaNet: conv 8,192 x 3 = 24,576 x 2 B = 49,152 B, ssm 32 x 128 x 128 = 524,288 x 4 B
    = 2,097,152 B; 2,146,304 B x 30 = 64,389,120 B.
    At 32,768 tokens: 20,480 x 32,768 + 64,389,120 = 671,088,640 + 64,389,120 = 735,477,760 B.
    tp 8: 1 kv head, 10,240 B per token; state 268,288 B x 30 = 8,048,640 B.
    Parameters: 35,107,181,936. Qwen: "35B". Within 2%.
    """
    cfg = cfg_of("Qwen__Qwen3.6-35B-A3B.json")
    model = model_from_config(cfg)
    assert kinds(model) == {"full": 10, "state": 30}
    qwen35_layers_follow_layer_types(cfg, model)
    assert per_token(model) == 20_480
    assert state(model) == 64_389_120
    assert request(cfg, 32768) == 735_477_760
    assert per_token(model, tp=8) == 10_240
    assert state(model, tp=8) == 8_048_640
    total = count_params(cfg).total
    assert total == 35_107_181_936 and near_card(total, 35e9)


def test_nvidia_qwen36_27b_nvfp4():
    """nvidia/Qwen3.6-27B-NVFP4: tests/fixtures/hf/nvidia__Qwen3.6-27B-NVFP4.json, from
    https://github.com/ai-dynamo/aiconfigurator/blob/095f58a51c4ca8e61b66ec108d86f223f8d559ce/aic-core/src/aiconfigurator_core/model_configs/nvidia--Qwen3.6-27B-NVFP4_config.json

    The same geometry as Qwen3.5-27B. text_config: 64 layers, 16 full, 48 linear; kv heads 4 x
    256; key heads 16 x 128, value heads 48 x 128, kernel 4; mamba_ssm_dtype float32.
    In bf16 (--kv-cache-dtype bfloat16): full 2 x 4 x 256 x 2 B = 4,096 B x 16 = 65,536 B per
    token; Gated DeltaNet 61,440 + 3,145,728 = 3,207,168 B x 48 = 153,944,064 B.
    At 4,096 tokens: 268,435,456 + 153,944,064 = 422,379,520 B.
    tp 8: 1 kv head, 1,024 x 16 = 16,384 B per token; state 400,896 x 48 = 19,243,008 B.
    The ModelOpt quantization_config has kv_cache_scheme {num_bits 8, type float}, so vLLM's
    "auto" cache is fp8. See test_modelopt_kv_cache_scheme_makes_auto_fp8.
    Parameters: 27,356,728,560, the same as Qwen3.5-27B (NVFP4 stores them, it does not remove
    any). Name: "27B". Within 2%.
    """
    cfg = cfg_of("nvidia__Qwen3.6-27B-NVFP4.json")
    model = model_from_config(cfg)
    assert kinds(model) == {"full": 16, "state": 48}
    qwen35_layers_follow_layer_types(cfg, model)
    assert per_token(model) == 65_536
    assert state(model) == 153_944_064
    assert request(cfg, 4096, kv="bf16") == 422_379_520
    assert per_token(model, tp=8) == 16_384
    assert state(model, tp=8) == 19_243_008
    total = count_params(cfg).total
    assert total == 27_356_728_560 and near_card(total, 27e9)


def test_qwen3_vl_32b_instruct():
    """Qwen/Qwen3-VL-32B-Instruct: tests/fixtures/hf/Qwen__Qwen3-VL-32B-Instruct.json, from
    https://github.com/ai-dynamo/aiconfigurator/blob/095f58a51c4ca8e61b66ec108d86f223f8d559ce/aic-core/src/aiconfigurator_core/model_configs/Qwen--Qwen3-VL-32B-Instruct_config.json

    text_config (qwen3_vl_text): 64 layers, all full attention; kv heads 8, head_dim 128.
    2 x 8 x 128 x 2 B = 4,096 B per layer; x 64 = 262,144 B per token.
    At 4,096 tokens: 262,144 x 4,096 = 1,073,741,824 B (1 GiB).
    tp 8: 8 // 8 = 1 kv head per GPU: 2 x 128 x 2 B = 512 B x 64 = 32,768 B per token.
    Parameters: the language model has Qwen3-32B's geometry (hidden 5,120, 64 layers, 64 / 8 heads
    of 128, intermediate 25,600, vocab 151,936, untied), so 32,762,123,264 (Qwen3-32B's card:
    32.8B). The vision tower (depth 27, hidden 1,152, MLP 4,304, patch 16, temporal 2, 3 channels)
    adds: patch_embed 1,152 x 1,536 + 1,152 = 1,770,624; pos_embed 2,304 x 1,152 = 2,654,208;
    each block: norms 4,608, qkv 3,456 x 1,152 + 3,456 = 3,984,768, proj 1,152 x 1,152 + 1,152 =
    1,328,256, fc1 4,304 x 1,152 + 4,304 = 4,962,512, fc2 1,152 x 4,304 + 1,152 = 4,959,360, so
    15,239,504 x 27 = 411,466,608. Merger (merged width 1,152 x 2^2 = 4,608): norm 2,304, fc1
    4,608 x 4,608 + 4,608 = 21,238,272, fc2 5,120 x 4,608 + 5,120 = 23,598,080, so 44,838,656.
    Three DeepStack mergers, norm over 4,608 (9,216): 44,845,568 x 3 = 134,536,704. Tower total
    595,266,800. All: 32,762,123,264 + 595,266,800 = 33,357,390,064. The name's "32B" is the
    Qwen3-32B family tag, not a rounding of 33.36B.
    """
    cfg = cfg_of("Qwen__Qwen3-VL-32B-Instruct.json")
    model = model_from_config(cfg)
    assert kinds(model) == {"full": 64}
    assert per_token(model) == 262_144
    assert state(model) == 0
    assert request(cfg, 4096) == 1_073_741_824
    assert per_token(model, tp=8) == 32_768
    counted = count_params(cfg)
    vision = sum(g.elements for g in counted.tensors if g.role == "vision")
    assert vision == 595_266_800
    assert counted.total - vision == count_params(cfg_of("Qwen__Qwen3-32B.json")).total == 32_762_123_264
    assert counted.total == 33_357_390_064
    assert near_card(counted.total - vision, 32.8e9)


# ---------------------------------------------------------------------------------------------
# Gemma 4 (vLLM gemma4.py, Gemma4Attention): full layers take global_head_dim and, with
# attention_k_eq_v, num_global_key_value_heads; K and V are both kept; sliding layers take head_dim
# and num_key_value_heads and hold sliding_window tokens.
# ---------------------------------------------------------------------------------------------

def gemma4_layers_follow_layer_types(cfg, model):
    expected = ["full" if t == "full_attention" else "sliding" for t in cfg["text_config"]["layer_types"]]
    assert [layer.kind for layer in model.layers] == expected
    assert expected[-1] == "full"                   # the last layer attends fully


def test_gemma4_26b_a4b():
    """google/gemma-4-26B-A4B: tests/fixtures/hf/google__gemma-4-26B-A4B.json, from
    https://github.com/ai-dynamo/aiconfigurator/blob/095f58a51c4ca8e61b66ec108d86f223f8d559ce/aic-core/src/aiconfigurator_core/model_configs/google--gemma-4-26B-A4B_config.json

    text_config: 30 layers, layer_types 5 sliding then 1 full, so 5 full (layers 5, 11, 17, 23, 29)
    and 25 sliding; attention_k_eq_v true, num_global_key_value_heads 2, global_head_dim 512;
    num_key_value_heads 8, head_dim 256, sliding_window 1,024; num_kv_shared_layers 0.
    Full: 2 x 2 x 512 x 2 B = 4,096 B per layer; x 5 = 20,480 B per token.
    Sliding: 2 x 8 x 256 x 2 B = 8,192 B per layer; x 25 = 204,800 B per token (of the window).
    Together 225,280 B per token.
    At 4,096 tokens: 20,480 x 4,096 + 204,800 x 1,024 = 83,886,080 + 209,715,200 = 293,601,280 B.
    At 32,768 tokens: 20,480 x 32,768 + 204,800 x 1,024 = 671,088,640 + 209,715,200 = 880,803,840 B.
    tp 8, each kind by its own kv heads: full max(1, 2 // 8) = 1 (replicated, 8 % 2 = 0), 2 x 512
    x 2 B = 2,048 B x 5 = 10,240 B; sliding 8 // 8 = 1, 2 x 256 x 2 B = 1,024 B x 25 = 25,600 B;
    35,840 B per token per GPU.
    Parameters: gemma4_text is not a counted family, so count_params refuses, naming
    text_config.model_type. Google: 26B total, 4B active.
    """
    cfg = cfg_of("google__gemma-4-26B-A4B.json")
    model = model_from_config(cfg)
    assert kinds(model) == {"full": 5, "sliding": 25}
    gemma4_layers_follow_layer_types(cfg, model)
    full, sliding = only(model, "full"), only(model, "sliding")
    assert (full.kv_heads, full.head_dim) == (2, 512)
    assert (sliding.kv_heads, sliding.head_dim, sliding.window) == (8, 256, 1024)
    assert per_token(model) == 225_280
    assert request(cfg, 4096) == 293_601_280
    assert request(cfg, 32768) == 880_803_840
    assert full.row_bytes(BF16, tp=8) * 5 == 10_240 and sliding.row_bytes(BF16, tp=8) * 25 == 25_600
    assert per_token(model, tp=8) == 35_840
    assert count_refusal(cfg) == "text_config.model_type"


def test_nvidia_gemma4_31b_it_nvfp4():
    """nvidia/Gemma-4-31B-IT-NVFP4: tests/fixtures/hf/nvidia__Gemma-4-31B-IT-NVFP4.json, from
    https://github.com/ai-dynamo/aiconfigurator/blob/095f58a51c4ca8e61b66ec108d86f223f8d559ce/aic-core/src/aiconfigurator_core/model_configs/nvidia--Gemma-4-31B-IT-NVFP4_config.json

    text_config: 60 layers, 10 full (every 6th, the last among them), 50 sliding;
    attention_k_eq_v true, num_global_key_value_heads 4, global_head_dim 512;
    num_key_value_heads 16, head_dim 256, sliding_window 1,024.
    Full: 2 x 4 x 512 x 2 B = 8,192 B; x 10 = 81,920 B per token.
    Sliding: 2 x 16 x 256 x 2 B = 16,384 B; x 50 = 819,200 B per token (of the window).
    Together 901,120 B per token.
    At 4,096 tokens, in bf16: 81,920 x 4,096 + 819,200 x 1,024 = 335,544,320 + 838,860,800 =
    1,174,405,120 B. At 32,768: 81,920 x 32,768 + 838,860,800 = 2,684,354,560 + 838,860,800 =
    3,523,215,360 B.
    tp 8: full max(1, 4 // 8) = 1 (replicated), 2,048 B x 10 = 20,480 B; sliding 16 // 8 = 2,
    2 x 2 x 256 x 2 B = 2,048 B x 50 = 102,400 B; 122,880 B per token per GPU.
    The quantization_config has kv_cache_scheme fp8, so vLLM's "auto" cache is fp8. See
    test_modelopt_kv_cache_scheme_makes_auto_fp8.
    Parameters: gemma4_text is refused, field text_config.model_type (name: 31B).
    """
    cfg = cfg_of("nvidia__Gemma-4-31B-IT-NVFP4.json")
    model = model_from_config(cfg)
    assert kinds(model) == {"full": 10, "sliding": 50}
    gemma4_layers_follow_layer_types(cfg, model)
    full, sliding = only(model, "full"), only(model, "sliding")
    assert (full.kv_heads, full.head_dim) == (4, 512)
    assert (sliding.kv_heads, sliding.head_dim, sliding.window) == (16, 256, 1024)
    assert per_token(model) == 901_120
    assert request(cfg, 4096, kv="bf16") == 1_174_405_120
    assert request(cfg, 32768, kv="bf16") == 3_523_215_360
    assert full.row_bytes(BF16, tp=8) * 10 == 20_480 and sliding.row_bytes(BF16, tp=8) * 50 == 102_400
    assert per_token(model, tp=8) == 122_880
    assert count_refusal(cfg) == "text_config.model_type"


# ---------------------------------------------------------------------------------------------
# MLA (vLLM MLAAttentionSpec): one latent of kv_lora_rank + qk_rope_head_dim per token per layer,
# no factor 2, whole on every GPU. DeepSeek sparse attention (V3.2, GLM-5) adds the indexer's key:
# index_head_dim in fp8 + index_head_dim // 128 fp32 scales = 128 + 4 = 132 B, in any KV dtype.
# ---------------------------------------------------------------------------------------------

def test_deepseek_v31():
    """deepseek-ai/DeepSeek-V3.1: tests/fixtures/hf/deepseek-ai__DeepSeek-V3.1.json, from
    https://github.com/ai-dynamo/aiconfigurator/blob/39033e8cd1f8aa03770a7820bce974ea9238eff9/src/aiconfigurator/model_configs/deepseek-ai--DeepSeek-V3.1_config.json

    deepseek_v3, 61 layers, kv_lora_rank 512, qk_rope_head_dim 64 (num_key_value_heads 128 is
    not used by MLA).
    (512 + 64) x 2 B = 1,152 B per layer; x 61 = 70,272 B per token.
    At 4,096 tokens: 70,272 x 4,096 = 287,834,112 B.
    tp 8: the latent stays whole on every GPU: 70,272 B per token.
    Parameters: every architecture value equals DeepSeek-V3's, so 671,026,419,200 (the MTP
    module is left out), 37,552,297,472 active with the embedding. DeepSeek: 671B total, 37B
    activated. Both within 2%.
    """
    cfg = cfg_of("deepseek-ai__DeepSeek-V3.1.json")
    model = model_from_config(cfg)
    assert kinds(model) == {"mla": 61}
    mla = only(model, "mla")
    assert (mla.kv_lora_rank, mla.rope_dim, mla.indexer_row_bytes) == (512, 64, 0)
    assert per_token(model) == 70_272
    assert request(cfg, 4096) == 287_834_112
    assert per_token(model, tp=8) == 70_272
    counted = count_params(cfg)
    assert counted.total == count_params(cfg_of("deepseek-ai__DeepSeek-V3.json")).total == 671_026_419_200
    assert near_card(counted.total, 671e9) and counted.active == 37_552_297_472 and near_card(counted.active, 37e9)


def test_deepseek_v32():
    """deepseek-ai/DeepSeek-V3.2: tests/fixtures/hf/deepseek-ai__DeepSeek-V3.2.json, from
    https://github.com/ai-dynamo/aiconfigurator/blob/095f58a51c4ca8e61b66ec108d86f223f8d559ce/aic-core/src/aiconfigurator_core/model_configs/deepseek-ai--DeepSeek-V3.2_config.json

    deepseek_v32, 61 layers, kv_lora_rank 512, qk_rope_head_dim 64, index_head_dim 128.
    Latent (512 + 64) x 2 B = 1,152 B, plus the indexer key 128 + 128 // 128 x 4 = 132 B (vLLM
    DeepseekV32IndexerCache, uint8): 1,284 B per layer; x 61 = 78,324 B per token.
    At 4,096 tokens: 78,324 x 4,096 = 320,815,104 B.
    tp 8: latent and indexer key both whole on every GPU: 78,324 B per token.
    Parameters: DeepSeek-V3's 671,026,419,200 plus the lightning indexer of each of 61 layers:
    wq_b 64 x 128 x 1,536 = 12,582,912, wk 128 x 7,168 = 917,504, k_norm 2 x 128 = 256,
    weights_proj 64 x 7,168 = 458,752; 13,959,424 x 61 = 851,524,864: 671,877,944,064 (DeepSeek's
    card: 671B total).
    """
    cfg = cfg_of("deepseek-ai__DeepSeek-V3.2.json")
    model = model_from_config(cfg)
    assert kinds(model) == {"mla": 61}
    mla = only(model, "mla")
    assert (mla.kv_lora_rank, mla.rope_dim, mla.indexer_row_bytes) == (512, 64, 132)
    assert per_token(model) == 78_324
    assert request(cfg, 4096) == 320_815_104
    assert per_token(model, tp=8) == 78_324
    assert count_params(cfg).total == 671_026_419_200 + 61 * 13_959_424 == 671_877_944_064


def test_kimi_k25():
    """moonshotai/Kimi-K2.5: tests/fixtures/hf/moonshotai__Kimi-K2.5.json, from
    https://github.com/ai-dynamo/aiconfigurator/blob/095f58a51c4ca8e61b66ec108d86f223f8d559ce/aic-core/src/aiconfigurator_core/model_configs/moonshotai--Kimi-K2.5_config.json

    text_config kimi_k2 (in vLLM's MLA list), 61 layers, kv_lora_rank 512, qk_rope_head_dim 64.
    (512 + 64) x 2 B = 1,152 B per layer; x 61 = 70,272 B per token.
    At 4,096 tokens: 70,272 x 4,096 = 287,834,112 B.
    tp 8: the latent stays whole: 70,272 B per token.
    Its compressed-tensors quantization_config has kv_cache_scheme null, so the cache is bf16.
    Parameters: the kimi_k25 vision tower is not counted: refused, field vision_config.
    """
    cfg = cfg_of("moonshotai__Kimi-K2.5.json")
    model = model_from_config(cfg)
    assert kinds(model) == {"mla": 61}
    assert per_token(model) == 70_272
    assert request(cfg, 4096) == 287_834_112
    assert per_token(model, tp=8) == 70_272
    assert count_refusal(cfg) == "vision_config"


def test_nvidia_kimi_k26_nvfp4():
    """nvidia/Kimi-K2.6-NVFP4: tests/fixtures/hf/nvidia__Kimi-K2.6-NVFP4.json, from
    https://github.com/ai-dynamo/aiconfigurator/blob/095f58a51c4ca8e61b66ec108d86f223f8d559ce/aic-core/src/aiconfigurator_core/model_configs/nvidia--Kimi-K2.6-NVFP4_config.json

    text_config deepseek_v3, 61 layers, kv_lora_rank 512, qk_rope_head_dim 64.
    In bf16: (512 + 64) x 2 B = 1,152 B per layer; x 61 = 70,272 B per token; at 4,096 tokens
    70,272 x 4,096 = 287,834,112 B. tp 8: whole on every GPU, 70,272 B.
    kv_cache_scheme fp8 makes vLLM's "auto" cache fp8. See
    test_modelopt_kv_cache_scheme_makes_auto_fp8.
    Parameters: the kimi_k25 vision tower is refused, field vision_config.
    """
    cfg = cfg_of("nvidia__Kimi-K2.6-NVFP4.json")
    model = model_from_config(cfg)
    assert kinds(model) == {"mla": 61}
    assert per_token(model) == 70_272
    assert request(cfg, 4096, kv="bf16") == 287_834_112
    assert per_token(model, tp=8) == 70_272
    assert count_refusal(cfg) == "vision_config"


def check_glm5(cfg):
    model = model_from_config(cfg)
    assert kinds(model) == {"mla": 78}
    mla = only(model, "mla")
    assert (mla.kv_lora_rank, mla.rope_dim, mla.indexer_row_bytes) == (512, 64, 132)
    assert per_token(model) == 100_152
    assert request(cfg, 4096) == 410_222_592
    assert per_token(model, tp=8) == 100_152
    # GLM-5's indexer per layer: wq_b 32 x 128 x 2,048 = 8,388,608, wk 128 x 6,144 = 786,432,
    # k_norm 256, weights_proj 32 x 6,144 = 196,608: 9,371,904 x 78 = 731,008,512 of the total.
    counted = count_params(cfg)
    indexer = sum(g.elements for g in counted.tensors if ".indexer." in g.name)
    assert indexer == 78 * 9_371_904 == 731_008_512
    assert counted.total == 743_911_218_432 and near_card(counted.total, 744e9)   # Z.ai: 744B


def test_glm5():
    """zai-org/GLM-5: tests/fixtures/hf/zai-org__GLM-5.json, from
    https://github.com/ai-dynamo/aiconfigurator/blob/095f58a51c4ca8e61b66ec108d86f223f8d559ce/aic-core/src/aiconfigurator_core/model_configs/zai-org--GLM-5_config.json

    glm_moe_dsa (in vLLM's MLA list), 78 layers, kv_lora_rank 512, qk_rope_head_dim 64,
    index_head_dim 128 (head_dim 64 and num_key_value_heads 64 are not used by MLA).
    Latent (512 + 64) x 2 B = 1,152 B, plus the indexer key 128 + 4 = 132 B: 1,284 B per layer;
    x 78 = 100,152 B per token.
    At 4,096 tokens: 100,152 x 4,096 = 410,222,592 B.
    tp 8: latent and indexer key whole on every GPU: 100,152 B per token.
    Parameters: 743,911,218,432 counted (the indexer's share below), Z.ai's 744B.
    """
    check_glm5(cfg_of("zai-org__GLM-5.json"))


def test_glm5_fp8():
    """zai-org/GLM-5-FP8: tests/fixtures/hf/zai-org__GLM-5-FP8.json, from
    https://github.com/ai-dynamo/aiconfigurator/blob/095f58a51c4ca8e61b66ec108d86f223f8d559ce/aic-core/src/aiconfigurator_core/model_configs/zai-org--GLM-5-FP8_config.json

    GLM-5's architecture values plus an FP8 weight quantization_config with no kv_cache_scheme,
    so the cache stays bf16.
    Latent (512 + 64) x 2 B = 1,152 B, plus the indexer key 128 + 4 = 132 B: 1,284 B per layer;
    x 78 = 100,152 B per token.
    At 4,096 tokens: 100,152 x 4,096 = 410,222,592 B.
    tp 8: latent and indexer key whole on every GPU: 100,152 B per token.
    Parameters: as GLM-5's.
    """
    check_glm5(cfg_of("zai-org__GLM-5-FP8.json"))


def test_glm51():
    """zai-org/GLM-5.1: tests/fixtures/hf/zai-org__GLM-5.1.json, from
    https://github.com/ai-dynamo/aiconfigurator/blob/095f58a51c4ca8e61b66ec108d86f223f8d559ce/aic-core/src/aiconfigurator_core/model_configs/zai-org--GLM-5.1_config.json

    Every architecture value is GLM-5's: 78 MLA layers of (512 + 64) x 2 B = 1,152 B plus the
    132 B indexer key = 1,284 B; x 78 = 100,152 B per token.
    At 4,096 tokens: 100,152 x 4,096 = 410,222,592 B.
    tp 8: whole on every GPU: 100,152 B per token.
    Parameters: as GLM-5's.
    """
    check_glm5(cfg_of("zai-org__GLM-5.1.json"))


# ---------------------------------------------------------------------------------------------
# Nemotron 3 (vLLM nemotron_h.py): M Mamba-2, * attention, E MoE (no cache). Mamba-2 state
# (mamba2_state_shape): conv (mamba_num_heads x mamba_head_dim + 2 x n_groups x ssm_state_size)
# x (conv_kernel - 1) in the model dtype; ssm mamba_num_heads x mamba_head_dim x ssm_state_size in
# mamba_ssm_cache_dtype (float32 in all three configs). n_groups 8 divides tp 8: no group padding.
# ---------------------------------------------------------------------------------------------

def check_nemotron(cfg, layers, elements, token, fixed, requests, tp8, params, card):
    """layers (mamba, attention, moe), the Mamba-2 (conv, ssm) elements, bytes per token, the
    fixed state, {context: bytes per request}, (per token, state) per GPU at tp 8, and the
    (total, active) parameters counted, with the card's (total, active)."""
    model = model_from_config(cfg)
    mamba, attention, moe = layers
    assert kinds(model) == {"state": mamba, "full": attention, "none": moe}
    assert {layer.ssm_dtype for layer in model.layers if layer.kind == "state"} == {"fp32"}
    full = only(model, "full")
    assert (full.kv_heads, full.head_dim) == (2, 128)
    layer = only(model, "state")
    assert (layer.conv_elements, layer.ssm_elements) == elements
    assert (per_token(model), state(model)) == (token, fixed)
    assert {context: request(cfg, context) for context in requests} == requests
    assert (per_token(model, tp=8), state(model, tp=8)) == tp8
    counted = count_params(cfg)
    assert (counted.total, counted.active) == params
    # Cards give the active count without the input embedding (a lookup, not a matmul).
    assert near_card(counted.total, card[0]) and near_card(counted.active - counted.embedding, card[1])


def test_nemotron3_nano_30b_a3b():
    """nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16:
    tests/fixtures/hf/nvidia__NVIDIA-Nemotron-3-Nano-30B-A3B-BF16.json, from
    https://github.com/ai-dynamo/aiconfigurator/blob/095f58a51c4ca8e61b66ec108d86f223f8d559ce/aic-core/src/aiconfigurator_core/model_configs/nvidia--NVIDIA-Nemotron-3-Nano-30B-A3B-BF16_config.json

    hybrid_override_pattern of 52 characters: 23 M, 6 *, 23 E. Attention: num_key_value_heads 2,
    head_dim 128. Mamba-2: mamba_num_heads 64 x mamba_head_dim 64 = 4,096, n_groups 8,
    ssm_state_size 128, conv_kernel 4, mamba_ssm_cache_dtype float32.
    Attention: 2 x 2 x 128 x 2 B = 1,024 B; x 6 = 6,144 B per token.
    Mamba-2: conv (4,096 + 2 x 8 x 128) x 3 = 6,144 x 3 = 18,432 x 2 B = 36,864 B; ssm 64 x 64 x
    128 = 524,288 x 4 B = 2,097,152 B; 2,134,016 B x 23 = 49,082,368 B per request.
    At 4,096 tokens: 6,144 x 4,096 + 49,082,368 = 25,165,824 + 49,082,368 = 74,248,192 B.
    tp 8: max(1, 2 // 8) = 1 kv head (replicated): 512 B x 6 = 3,072 B per token; state conv
    6,144 / 8 = 768 x 3 = 2,304 x 2 B = 4,608 B, ssm 64 / 8 = 8 x 64 x 128 = 65,536 x 4 B =
    262,144 B; 266,752 B x 23 = 6,135,296 B.
    Parameters (vLLM nemotron_h.py's modules, test_weights_2026 works a layer of each kind):
    31,577,940,288 total, 3,580,076,352 active with the embeddings; NVIDIA's card: 31.6B total,
    3.6B active including embeddings (3.2B without).
    """
    cfg = cfg_of("nvidia__NVIDIA-Nemotron-3-Nano-30B-A3B-BF16.json")
    pattern = cfg["hybrid_override_pattern"]
    assert (len(pattern), pattern.count("M"), pattern.count("*"), pattern.count("E")) == (52, 23, 6, 23)
    check_nemotron(cfg, (23, 6, 23), (18_432, 524_288), 6_144, 49_082_368, {4096: 74_248_192},
                   (3_072, 6_135_296), (31_577_940_288, 3_580_076_352), (31.6e9, 3.2e9))


def test_nemotron3_super_120b_a12b_fp8():
    """nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-FP8:
    tests/fixtures/hf/nvidia__NVIDIA-Nemotron-3-Super-120B-A12B-FP8.json, from
    https://github.com/ai-dynamo/aiconfigurator/blob/095f58a51c4ca8e61b66ec108d86f223f8d559ce/aic-core/src/aiconfigurator_core/model_configs/nvidia--NVIDIA-Nemotron-3-Super-120B-A12B-FP8_config.json

    hybrid_override_pattern of 88 characters: 40 M, 8 *, 40 E. Attention: 2 kv heads x 128.
    Mamba-2: 128 heads x 64 = 8,192, n_groups 8, state 128, kernel 4, ssm cache float32. The
    config has no quantization_config, so nothing sets the KV dtype.
    Attention: 2 x 2 x 128 x 2 B = 1,024 B; x 8 = 8,192 B per token.
    Mamba-2: conv (8,192 + 2 x 8 x 128) x 3 = 10,240 x 3 = 30,720 x 2 B = 61,440 B; ssm 128 x 64 x
    128 = 1,048,576 x 4 B = 4,194,304 B; 4,255,744 B x 40 = 170,229,760 B per request.
    At 4,096 tokens: 8,192 x 4,096 + 170,229,760 = 33,554,432 + 170,229,760 = 203,784,192 B.
    tp 8: 1 kv head: 512 B x 8 = 4,096 B per token; state conv 10,240 / 8 = 1,280 x 3 = 3,840 x
    2 B = 7,680 B, ssm 16 x 64 x 128 = 131,072 x 4 B = 524,288 B; 531,968 B x 40 = 21,278,720 B.
    Parameters: 120,668,707,840 total, 12,770,237,440 active (NVIDIA: 120B, A12B).
    """
    cfg = cfg_of("nvidia__NVIDIA-Nemotron-3-Super-120B-A12B-FP8.json")
    pattern = cfg["hybrid_override_pattern"]
    assert (len(pattern), pattern.count("M"), pattern.count("*"), pattern.count("E")) == (88, 40, 8, 40)
    check_nemotron(cfg, (40, 8, 40), (30_720, 1_048_576), 8_192, 170_229_760, {4096: 203_784_192},
                   (4_096, 21_278_720), (120_668_707_840, 12_770_237_440), (120e9, 12e9))


def test_nemotron3_ultra_550b_a55b():
    """nvidia/NVIDIA-Nemotron-3-Ultra-550B-A55B-BF16:
    tests/fixtures/hf/nvidia__NVIDIA-Nemotron-3-Ultra-550B-A55B-BF16.json, from
    https://github.com/ai-dynamo/aiconfigurator/blob/095f58a51c4ca8e61b66ec108d86f223f8d559ce/aic-core/src/aiconfigurator_core/model_configs/nvidia--NVIDIA-Nemotron-3-Ultra-550B-A55B-BF16_config.json

    No num_hidden_layers or pattern. layers_block_type lists 108 layers: 48 mamba, 12 attention,
    48 moe. Attention: 2 kv heads x 128. Mamba-2: 256 heads x 64 = 16,384, n_groups 8, state 128,
    kernel 4, ssm cache float32.
    Attention: 2 x 2 x 128 x 2 B = 1,024 B; x 12 = 12,288 B per token.
    Mamba-2: conv (16,384 + 2 x 8 x 128) x 3 = 18,432 x 3 = 55,296 x 2 B = 110,592 B; ssm 256 x 64
    x 128 = 2,097,152 x 4 B = 8,388,608 B; 8,499,200 B x 48 = 407,961,600 B per request.
    At 4,096 tokens: 12,288 x 4,096 + 407,961,600 = 50,331,648 + 407,961,600 = 458,293,248 B.
    At 32,768 tokens: 12,288 x 32,768 + 407,961,600 = 402,653,184 + 407,961,600 = 810,614,784 B.
    tp 8: 1 kv head: 512 B x 12 = 6,144 B per token; state conv 18,432 / 8 = 2,304 x 3 = 6,912 x
    2 B = 13,824 B, ssm 32 x 64 x 128 = 262,144 x 4 B = 1,048,576 B; 1,062,400 B x 48 =
    50,995,200 B.
    Parameters: 549,308,993,536 total, 56,058,843,136 active (NVIDIA: 550B, A55B).
    """
    cfg = cfg_of("nvidia__NVIDIA-Nemotron-3-Ultra-550B-A55B-BF16.json")
    blocks = Counter(cfg["layers_block_type"])
    assert "num_hidden_layers" not in cfg and blocks == {"mamba": 48, "attention": 12, "moe": 48}
    check_nemotron(cfg, (48, 12, 48), (55_296, 2_097_152), 12_288, 407_961_600,
                   {4096: 458_293_248, 32768: 810_614_784}, (6_144, 50_995_200),
                   (549_308_993_536, 56_058_843_136), (550e9, 55e9))


# ---------------------------------------------------------------------------------------------
# MiniMax-M2.x (vLLM minimax_m2.py): softmax attention in every layer (attn_type_list all 1).
# ---------------------------------------------------------------------------------------------

def check_minimax(cfg):
    assert cfg["attn_type_list"] == [1] * 62
    model = model_from_config(cfg)
    assert kinds(model) == {"full": 62}
    assert per_token(model) == 253_952
    assert request(cfg, 4096, kv="bf16") == 1_040_187_392
    assert per_token(model, tp=8) == 31_744
    total = count_params(cfg).total
    assert total == 228_689_764_864 and near_card(total, 230e9)


def test_nvidia_minimax_m25_nvfp4():
    """nvidia/MiniMax-M2.5-NVFP4: tests/fixtures/hf/nvidia__MiniMax-M2.5-NVFP4.json, from
    https://github.com/ai-dynamo/aiconfigurator/blob/095f58a51c4ca8e61b66ec108d86f223f8d559ce/aic-core/src/aiconfigurator_core/model_configs/nvidia--MiniMax-M2.5-NVFP4_config.json

    62 layers, attn_type_list all 1 (softmax), num_key_value_heads 8, head_dim 128.
    In bf16: 2 x 8 x 128 x 2 B = 4,096 B per layer; x 62 = 253,952 B per token; at 4,096 tokens
    253,952 x 4,096 = 1,040,187,392 B.
    tp 8: 8 // 8 = 1 kv head: 2 x 128 x 2 B = 512 B x 62 = 31,744 B per token.
    kv_cache_scheme fp8 makes vLLM's "auto" cache fp8. See
    test_modelopt_kv_cache_scheme_makes_auto_fp8.
    Parameters: 228,689,764,864 (62 layers of 256 experts of 3 x 3,072 x 1,536, as MiniMax-M2
    in test_weights_2026.py; the MTP modules are not built). MiniMax: 230B total. Within 2%.
    """
    check_minimax(cfg_of("nvidia__MiniMax-M2.5-NVFP4.json"))


def test_nvidia_minimax_m27_nvfp4():
    """nvidia/MiniMax-M2.7-NVFP4: tests/fixtures/hf/nvidia__MiniMax-M2.7-NVFP4.json, from
    https://github.com/ai-dynamo/aiconfigurator/blob/095f58a51c4ca8e61b66ec108d86f223f8d559ce/aic-core/src/aiconfigurator_core/model_configs/nvidia--MiniMax-M2.7-NVFP4_config.json

    M2.5's architecture: 62 softmax layers, 8 kv heads x 128.
    In bf16: 2 x 8 x 128 x 2 B = 4,096 B x 62 = 253,952 B per token; at 4,096 tokens
    1,040,187,392 B. tp 8: 1 kv head, 512 B x 62 = 31,744 B per token.
    kv_cache_scheme fp8 makes vLLM's "auto" cache fp8. See
    test_modelopt_kv_cache_scheme_makes_auto_fp8.
    Parameters: 228,689,764,864. MiniMax: 230B total. Within 2%.
    """
    check_minimax(cfg_of("nvidia__MiniMax-M2.7-NVFP4.json"))


# Each sized 2026 fixture and its test.
SIZED = {
    "Qwen__Qwen3.5-27B.json": test_qwen35_27b,
    "Qwen__Qwen3.5-35B-A3B.json": test_qwen35_35b_a3b,
    "Qwen__Qwen3.5-122B-A10B.json": test_qwen35_122b_a10b,
    "Qwen__Qwen3.5-397B-A17B.json": test_qwen35_397b_a17b,
    "Qwen__Qwen3.6-35B-A3B.json": test_qwen36_35b_a3b,
    "nvidia__Qwen3.6-27B-NVFP4.json": test_nvidia_qwen36_27b_nvfp4,
    "Qwen__Qwen3-VL-32B-Instruct.json": test_qwen3_vl_32b_instruct,
    "google__gemma-4-26B-A4B.json": test_gemma4_26b_a4b,
    "nvidia__Gemma-4-31B-IT-NVFP4.json": test_nvidia_gemma4_31b_it_nvfp4,
    "deepseek-ai__DeepSeek-V3.1.json": test_deepseek_v31,
    "deepseek-ai__DeepSeek-V3.2.json": test_deepseek_v32,
    "moonshotai__Kimi-K2.5.json": test_kimi_k25,
    "nvidia__Kimi-K2.6-NVFP4.json": test_nvidia_kimi_k26_nvfp4,
    "zai-org__GLM-5.json": test_glm5,
    "zai-org__GLM-5-FP8.json": test_glm5_fp8,
    "zai-org__GLM-5.1.json": test_glm51,
    "nvidia__NVIDIA-Nemotron-3-Nano-30B-A3B-BF16.json": test_nemotron3_nano_30b_a3b,
    "nvidia__NVIDIA-Nemotron-3-Super-120B-A12B-FP8.json": test_nemotron3_super_120b_a12b_fp8,
    "nvidia__NVIDIA-Nemotron-3-Ultra-550B-A55B-BF16.json": test_nemotron3_ultra_550b_a55b,
    "nvidia__MiniMax-M2.5-NVFP4.json": test_nvidia_minimax_m25_nvfp4,
    "nvidia__MiniMax-M2.7-NVFP4.json": test_nvidia_minimax_m27_nvfp4,
}


def pass2_sources() -> dict:
    """File -> GitHub URL, from the rows of SOURCES.md's "2026 pass 2 (issue 21)" table."""
    text = (FIXTURES / "hf" / "SOURCES.md").read_text(encoding="utf-8")
    section = text.split("## 2026 pass 2 (issue 21)", 1)[1].split("\n## ", 1)[0]
    rows = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) >= 4 and re.fullmatch(r"`[^`]+\.json`", cells[0]):
            rows[cells[0].strip("`")] = cells[3]
    return rows


def test_every_2026_fixture_is_sized_or_refused_and_named_with_its_source():
    """The pass-2 table's files are exactly the sized ones here plus REFUSED_FIXTURES. Each test's
    docstring names its file and the URL SOURCES.md gives for it."""
    sources = pass2_sources()
    assert len(sources) == 25
    assert set(sources) == set(SIZED) | set(REFUSED_FIXTURES)
    assert not set(SIZED) & set(REFUSED_FIXTURES)
    for name, test in SIZED.items():
        assert (FIXTURES / "hf" / name).is_file()
        assert name in test.__doc__, name
        assert sources[name].startswith("https://github.com/") and sources[name] in test.__doc__, name


@pytest.mark.parametrize("name, key", sorted(REFUSED_FIXTURES.items()))
def test_refused_fixtures_are_refused_naming_their_key(name, key):
    """DeepSeek-V4's compress_ratios and GLM-5.2's indexer_types: one InputError naming the field,
    both from model_from_config and through evaluate."""
    assert name in pass2_sources()
    with pytest.raises(InputError) as e:
        model_from_config(cfg_of(name))
    assert e.value.field.endswith(key)
    r = evaluate({"model": "custom", "hf-config": cfg_of(name), "context": "4096"})
    assert not r.ok and any(err.field.endswith(key) for err in r.errors)


# ---------------------------------------------------------------------------------------------
# vLLM's resolve_kv_cache_dtype_string (vllm/utils/torch_utils.py, vllm-project/vllm @
# 959009b402c329c7b885afe7d459726db919a41f, with get_kv_cache_quant_algo_string): for a
# quant_method starting "modelopt", a kv_cache_scheme {"dynamic": false, "num_bits": 8, "type":
# "float"} turns --kv-cache-dtype auto into fp8. The research note's section 0 says the same.
# The calculator's default KV precision is the model's dtype (scenario.py), so for these five
# checkpoints its default is twice what vLLM allocates for the attention cache.
# ---------------------------------------------------------------------------------------------

KV_SCHEME_FP8 = [
    # Qwen3.6-27B-NVFP4: full 2 x 4 x 256 x 1 B = 2,048 B x 16 = 32,768 B per token; x 4,096 =
    # 134,217,728, plus the state, which is unchanged (conv in the model dtype, ssm float32),
    # 153,944,064: 288,161,792 B.
    ("nvidia__Qwen3.6-27B-NVFP4.json", 288_161_792),
    # Gemma-4-31B: full 2 x 4 x 512 x 1 B = 4,096 x 10 = 40,960 B x 4,096 = 167,772,160; sliding
    # 2 x 16 x 256 x 1 B = 8,192 x 50 = 409,600 B x 1,024 = 419,430,400; 587,202,560 B.
    ("nvidia__Gemma-4-31B-IT-NVFP4.json", 587_202_560),
    # Kimi-K2.6 (plain MLA, not sparse, so not fp8_ds_mla): (512 + 64) x 1 B = 576 x 61 = 35,136 B
    # x 4,096 = 143,917,056 B.
    ("nvidia__Kimi-K2.6-NVFP4.json", 143_917_056),
    # MiniMax-M2.5 / 2.7: 2 x 8 x 128 x 1 B = 2,048 x 62 = 126,976 B x 4,096 = 520,093,696 B.
    ("nvidia__MiniMax-M2.5-NVFP4.json", 520_093_696),
    ("nvidia__MiniMax-M2.7-NVFP4.json", 520_093_696),
]


@pytest.mark.parametrize("name, fp8_bytes", KV_SCHEME_FP8)
def test_fp8_cache_of_the_kv_scheme_checkpoints_when_asked(name, fp8_bytes):
    """With --kv-cache-dtype fp8 given, the calculator's figure at 4,096 tokens is the hand one."""
    cfg = cfg_of(name)
    assert cfg["quantization_config"]["quant_method"] == "modelopt"
    assert cfg["quantization_config"]["kv_cache_scheme"] == {"dynamic": False, "num_bits": 8, "type": "float"}
    assert request(cfg, 4096, kv="fp8") == fp8_bytes


@pytest.mark.parametrize("name, fp8_bytes", KV_SCHEME_FP8)
def test_modelopt_kv_cache_scheme_makes_auto_fp8(name, fp8_bytes):
    """vLLM resolve_kv_cache_dtype_string turns --kv-cache-dtype auto into fp8 for a ModelOpt
    kv_cache_scheme {dynamic false, num_bits 8, type float}: with no KV precision given, the
    default is the fp8 figure (MiniMax-M2.5-NVFP4 at 4,096 tokens 520,093,696 B, not the bf16
    1,040,187,392 B), and the result says why."""
    assert request(cfg_of(name), 4096) == fp8_bytes
    r = evaluate({"model": "custom", "hf-config": cfg_of(name), "context": "4096"})
    assert any("kv_cache_scheme" in note for note in r.scenario.warnings)


# ---------------------------------------------------------------------------------------------
# Any one unknown cache-shaped key added to a real config is refused, naming the key.
# ---------------------------------------------------------------------------------------------

UNKNOWN_CACHE_KEYS = ["local_head_dim", "num_local_kv_heads", "attention_window", "sliding_layers",
                      "index_cache_dim", "compress_ratio", "kv_share_layer_types"]
VALUES = st.one_of(
    st.integers(min_value=0, max_value=1 << 20),
    st.lists(st.integers(min_value=0, max_value=128), min_size=1, max_size=8),
    st.lists(st.sampled_from(["full_attention", "sliding_attention", "linear_attention"]), min_size=1,
             max_size=8),
    st.sampled_from(["full_attention", "sliding", "auto"]),
    st.booleans(),
)


@pytest.mark.parametrize("name", sorted(SIZED))
@pytest.mark.parametrize("key", UNKNOWN_CACHE_KEYS)
@settings(max_examples=8, deadline=None)
@given(value=VALUES)
def test_unknown_cache_shaped_key_is_refused(name, key, value):
    cfg = cfg_of(name)
    text = cfg["text_config"] if isinstance(cfg.get("text_config"), dict) else cfg
    assert key not in text
    text[key] = value
    with pytest.raises(InputError) as e:
        model_from_config(cfg)
    assert e.value.field.endswith(key)
    assert e.value.field == ("text_config." + key if text is not cfg else key)
