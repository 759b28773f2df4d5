"""Kimi K2.5's weights (issue 34 item 6: "Kimi K2.5 with a capacity").

No exact byte total of moonshotai/Kimi-K2.5's checkpoint could be cited: no copy of its
model.safetensors.index.json (metadata.total_size) was found in public repositories, pages or
issues (searched 2026-12-03); the figures quoted are rounded ("~595 GB", "64 shards"). So the preset
is sized as an estimate, shown with "≈": the language model's bytes computed from its published
compressed-tensors quantization_config (tests/fixtures/hf/moonshotai__Kimi-K2.5.json, AIC's verbatim
copy @095f58a5), plus the MoonViT tower and projector, which this calculator does not count, in bf16
at the high end of a sourced band of their parameter count (the preset's vision_params_band).
"""

from fractions import Fraction

import pytest

from kvcalc import InputError, evaluate
from kvcalc.readers.quantized_bytes import quantized_weights
from kvcalc.readers.gpu_presets import gpus
from kvcalc.readers.presets import preset_model

from support import hf_fixture

GIB = 1 << 30
TEXT_BYTES = 594_206_457_856          # the language model, as its quantization_config stores it
TOWER_HIGH = 500_000_000              # vision_params_band's high end, parameters at 2 B


def _text_config():
    """The published config.json without its vision_config: the language model alone."""
    return {k: v for k, v in hf_fixture("moonshotai__Kimi-K2.5.json").items() if k != "vision_config"}


def test_compressed_tensors_int4_prices_kimi_k25s_language_model():
    """compressed-tensors pack-quantized, int4 symmetric, group 32, targets Linear, ignoring lm_head,
    every self_attn, the shared experts and the dense layer's mlp.(gate|up|down)_proj ("re:" entries):
    only the routed experts are int4. 60 MoE layers x 384 experts x 3 linears of 2,048 x 7,168 =
    69,120 linears, each weight_packed 2,048 x 7,168 / 2 = 7,340,032 B, weight_scale 2,048 x 224 x 2 B =
    917,504 B, weight_shape 16 B: 8,257,552 B, 570,761,994,240 B in all. The rest in bf16: embedding and
    head 2 x 163,840 x 7,168 = 2,348,810,240, attention, dense MLP and shared experts 9,207,218,176,
    routers 60 x 384 x 7,168 = 165,150,720, norms 1,006,592 parameters = 11,722,185,728 x 2 B, and the
    routers' e_score_correction_bias 60 x 384 in float32: 23,444,463,616 B. 594,206,457,856 B: 553.40
    GiB, the "~595 GB" everyone quotes less the vision tower."""
    per_linear = 2048 * 7168 // 2 + 2048 * (7168 // 32) * 2 + 16
    routed = 60 * 384 * 3 * per_linear
    rest = (2 * 163_840 * 7168 + 9_207_218_176 + 60 * 384 * 7168 + 1_006_592) * 2 + 60 * 384 * 4
    computed = quantized_weights(_text_config())
    assert (per_linear, routed, rest) == (8_257_552, 570_761_994_240, 23_444_463_616)
    assert computed.bytes == routed + rest == TEXT_BYTES
    assert computed.routed_bytes == routed
    assert "int4" in computed.rule and "per 32 inputs" in computed.rule


def test_kimi_k25_preset_is_an_estimate_from_its_config_and_a_tower_band():
    """The preset's weights: 594,206,457,856 B + 500,000,000 parameters x 2 B = 595,206,457,856 B,
    never shown to the byte (weights_exact False: the row says "≈ 554.33 GiB")."""
    model = preset_model("moonshotai/Kimi-K2.5")
    assert model.config_weights_estimated and model.checkpoint_bytes is None
    assert model.config_weights_bytes == TEXT_BYTES + 2 * TOWER_HIGH == 595_206_457_856
    assert "350,000,000 to 500,000,000 parameters" in model.config_weights_rule
    e = evaluate({"model": "moonshotai/Kimi-K2.5", "gpu": "h200-141gb", "gpus": "8"})
    assert e.ok and e.scenario.deployment.weights_exact is False
    note = next(n for n in e.scenario.warnings if "quantization_config and shapes" in n)
    assert "≈ 554.33 GiB" in note and "595,206,457,856" not in note


def test_kimi_k25_capacity_on_8_h200_as_vllm_sizes_it():
    """8 x H200 at tp 8, vLLM 0.33's default utilization 0.92 of the 150,119,844,413 B PyTorch sees:
    ceil(0.92 x that) = 138,110,256,860 B; less the weights per GPU, 595,206,457,856 / 8 =
    74,400,807,232 B (69.29 GiB), and the estimated overhead (8,705,277,952 B: the activation peak, NCCL's
    NVLink buffers at tp 8, the CUDA-graph estimate over 61 layers, the V2 sampler's buffers, and the
    1.86 GiB the cuBLAS and MoE workspaces keep allocated after the profiling run), the KV memory is
    55,004,171,676 B (51.23 GiB). A 64-token block of MLA latents over 61 layers is 64 x 61 x 1,152 =
    4,497,408 B: 12,230 blocks, 782,720 tokens, so 12,230 / 128 = 95.55 requests of 8,192 tokens (vLLM
    would print 95.55x): 95 at once."""
    e = evaluate({"model": "moonshotai/Kimi-K2.5", "gpu": "h200-141gb", "gpus": "8", "context": "8192",
                  "engine": "vllm"})
    assert e.ok, e.errors
    vllm = e.engine
    torch_memory = gpus()["h200-141gb"].torch_memory_bytes
    usable = -(-Fraction(92, 100) * torch_memory // 1)
    per_gpu = 595_206_457_856 // 8
    assert (torch_memory, usable, e.result.weights_bytes_per_gpu) == (150_119_844_413, 138_110_256_860, per_gpu)
    assert vllm.overhead_bytes_per_gpu == 8_705_277_952
    assert vllm.kv_budget_bytes_per_gpu == usable - per_gpu - vllm.overhead_bytes_per_gpu == 55_004_171_676
    assert vllm.kv_budget_bytes_per_gpu // (64 * 61 * 1152) == 12_230
    assert vllm.kv_tokens == 12_230 * 64 == 782_720
    assert vllm.max_concurrency == Fraction(12_230, 128) and e.capacity == 95
    assert "Maximum concurrency for 8,192 tokens per request: 95.55x" in vllm.log


def test_the_tower_band_moves_vllms_figure_by_less_than_a_request():
    """At the band's low end (350M parameters, 700,000,000 B) the weights per GPU are 37,500,000 B
    less: 8 more blocks, 95.61x instead of 95.55x; still 95 requests at once."""
    low = evaluate({"model": "moonshotai/Kimi-K2.5", "gpu": "h200-141gb", "gpus": "8", "context": "8192",
                    "engine": "vllm", "weights-bytes": str(TEXT_BYTES + 2 * 350_000_000)})
    assert low.ok, low.errors
    assert low.engine.max_concurrency == Fraction(12_238, 128) and low.capacity == 95


def test_vllm_015s_printed_weights_per_gpu_cross_check():
    """A cross-check, not the preset's data: vLLM 0.15.0 serving moonshotai/Kimi-K2.5 at tp 8 on
    8 x H100 80GB took "72.02 GiB per GPU" (t0mdicks0n/llm-self-hosting @d9aa0fc3
    notes/kimi-k2.5-setup-log.md and notes/kimi-k2.5-benchmark-results.md, vllm serve -tp 8
    --mm-encoder-tp-mode data). The calculator spreads the weights evenly, 69.29 GiB per GPU; vLLM
    keeps on every rank what tp 8 does not split: MLA's q_a_proj and kv_a_proj_with_mqa (61 x (1,536 +
    576) x 7,168 x 2 B), the routers (60 x 384 x 7,168 x 2 B) and, in data mode, the whole vision tower
    (at most 1,000,000,000 B): each 7/8 above its even share. Those put the even split within 0.2 GiB
    of the printed figure, and below it."""
    per_gpu = evaluate({"model": "moonshotai/Kimi-K2.5", "gpu": "h100-sxm-80gb", "gpus": "8"}).result.weights_bytes_per_gpu
    replicated = 61 * (1536 + 576) * 7168 * 2 + 60 * 384 * 7168 * 2 + 2 * TOWER_HIGH
    printed = Fraction(7202, 100) * GIB
    assert round(per_gpu / GIB, 2) == 69.29
    assert 0 < printed - per_gpu - Fraction(7, 8) * replicated < Fraction(2, 10) * GIB


@pytest.mark.parametrize("entry", ["re:(a+)+$", "re:.*[0-9]+.*", "re:" + "(a|b)" * 7])
def test_a_regular_expression_beyond_the_read_forms_is_refused(entry):
    """An ignore entry is read only in the forms real configs write; anything else (a nested
    quantifier that could backtrack without end, a character class, 128 expanded alternatives)
    is refused naming quantization_config.ignore, never run."""
    cfg = _text_config()
    text = dict(cfg["text_config"])
    text["quantization_config"] = {**text["quantization_config"], "ignore": ["lm_head", entry]}
    with pytest.raises(InputError) as e:
        quantized_weights({**cfg, "text_config": text})
    assert e.value.field == "quantization_config.ignore"
