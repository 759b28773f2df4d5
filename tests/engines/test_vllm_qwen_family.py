"""The Qwen3-Next / Qwen3.5 / Qwen3.6 (Gated DeltaNet hybrid) family under vLLM, from what a user types
(issue 36). The rule (readers/quantized_bytes.typed_weights, GDN_AT_8_BITS): a typed nvfp4 stores the
linear-attention projections (`linear_attn.in_proj_qkvz` / `out_proj`) at 8 bits, as NVIDIA ModelOpt's
published checkpoints do (nvidia/Qwen3.6-27B-NVFP4's quantization_config: MIXED_PRECISION, FP8 for every
linear_attn projection); llm-compressor's NVFP4 recipes keep them 16-bit (examples/quantization_w4a4_fp4/
qwen3_6_example.py: ignore "re:.*linear_attn.*"); no published NVFP4 recipe stores them at 4 bits. Every log
is a public fixture (tests/fixtures/logs, its URL in SOURCES.md)."""

import json
import pathlib

from kvcalc.evaluation import evaluate
from kvcalc.readers.presets import preset_model
from kvcalc.readers.quantized_bytes import typed_weights
from kvcalc.units import GIB

FIXTURES = pathlib.Path(__file__).resolve().parent.parent / "fixtures"
LOGS = FIXTURES / "logs"


def _groups(tensors, costs, part):
    return [(g, c) for g, c in zip(tensors, costs) if part in g.name]


def test_nvidia_modelopt_keeps_every_linear_attention_projection_in_fp8():
    # The recipe the rule follows, as NVIDIA's own checkpoint config states it: every linear_attn
    # projection it quantizes is in the 8-bit float group, none in the 4-bit one, and the small
    # in_proj_a / in_proj_b are in neither (16-bit).
    config = json.loads((FIXTURES / "hf" / "nvidia__Qwen3.6-27B-NVFP4.json").read_text(encoding="utf-8"))
    groups = config["quantization_config"]["config_groups"]
    bits = {g["weights"]["num_bits"]: g["targets"] for g in groups.values()}
    gdn8 = [t for t in bits[8] if ".linear_attn." in t]
    assert len(gdn8) == 48 * 3                      # 48 linear-attention layers x in_proj_qkv, in_proj_z, out_proj
    assert not [t for t in bits[4] if ".linear_attn." in t]
    assert not [t for ts in bits.values() for t in ts if t.endswith(("in_proj_a", "in_proj_b"))]


def test_typed_nvfp4_prices_the_gated_deltanet_projections_at_8_bits():
    tensors = preset_model("Qwen/Qwen3.6-35B-A3B").shapes.tensors
    priced = typed_weights(tensors, "nvfp4")
    qkvz = _groups(tensors, priced.group_bytes, ".linear_attn.in_proj_qkvz")
    ba = _groups(tensors, priced.group_bytes, ".linear_attn.in_proj_ba")
    experts = _groups(tensors, priced.group_bytes, ".mlp.experts.gate_proj")
    assert len(qkvz) == 30 and len(ba) == 30         # 30 of the 40 layers are linear attention
    # 12,288 x 2,048 at one byte a weight plus a float32 scale; the 64 x 2,048 in_proj_ba in bf16;
    # the routed experts stay nvfp4 (half a byte a weight, an fp8 scale per 16, two float32 scales).
    assert all(cost == 12288 * 2048 + 4 for _, cost in qkvz)
    assert all(cost == 64 * 2048 * 2 for _, cost in ba)
    assert all(cost == 256 * (512 * 2048 // 2 + 512 * 2048 // 16 + 8) for _, cost in experts)
    assert "Gated DeltaNet projections fp8" in priced.rule
    # int4 recipes differ (AutoRound and llm-compressor's AWQ quantize them): unchanged, 4 bits.
    int4 = typed_weights(tensors, "int4")
    assert all(cost == 12288 * 2048 // 2 + 2 * 12288 * (2048 // 128)
               for _, cost in _groups(tensors, int4.group_bytes, ".linear_attn.in_proj_qkvz"))
    assert "Gated DeltaNet" not in int4.rule


def test_qwen36_35b_nvfp4_on_an_rtx_5090_leaves_the_kv_memory_vllm_024_prints():
    # vllm-qwen3.6-35b-a3b-nvfp4-5090-fp8kv.log (noonghunna/club-3090 issue #612): NVIDIA's ModelOpt
    # checkpoint (--quantization modelopt), max_model_len 131072, fp8 KV, max_num_seqs 1, 8,192 batched
    # tokens, on one RTX 5090, vLLM 0.24.0: "Available KV cache memory: 5.98 GiB", "GPU KV cache size:
    # 567,978 tokens". With the linear-attention projections at 4 bits the weights were 0.41 GiB light
    # and the KV memory 6.41 GiB (+7.2%).
    text = (LOGS / "vllm-qwen3.6-35b-a3b-nvfp4-5090-fp8kv.log").read_text(encoding="utf-8")
    assert "Available KV cache memory: 5.98 GiB" in text and "GPU KV cache size: 567,978 tokens" in text
    evaluation = evaluate({"engine": "vllm", "engine-version": "0.24.0", "model": "Qwen/Qwen3.6-35B-A3B",
                           "weights-dtype": "nvfp4", "kv-dtype": "fp8", "gpu": "rtx-5090-32gb",
                           "context": "131072", "prefill-chunk": "8192", "batch": "1", "prefix-caching": "on"})
    assert evaluation.ok, evaluation.errors
    kv = evaluation.engine.kv_budget_bytes_per_gpu / GIB
    assert abs(kv - 5.98) <= 5.98 * 0.02, kv
    assert abs(evaluation.engine.kv_tokens - 567_978) <= 567_978 * 0.02
