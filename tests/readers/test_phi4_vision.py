"""Phi-4-reasoning-vision-15B (issue 37): vLLM 0.34.0 registers Phi4ForCausalLMV (phi4siglip.py), which builds
its language model as Phi3ForCausalLM over the same flat config and a NaFlex SigLIP2 tower (lfm2_siglip2.py
Siglip2Model, cut at its second-to-last layer, no post-norm) with LLaVA's two-layer projector. The tower's
attention asserts num_heads % tp == 0 when it is built. The config is microsoft/Phi-4-reasoning-vision-15B's own
(tests/fixtures/hf/SOURCES.md)."""

from kvcalc.evaluation import evaluate
from kvcalc.readers.architectures import entry
from support import hf_fixture

PHI4V = hf_fixture("microsoft__Phi-4-reasoning-vision-15B.json")


def _values(tp: int) -> dict:
    return {"hf-config": PHI4V, "context": "4096", "gpus": str(tp), "tp": str(tp), "engine": "vllm",
            "gpu": "h100-sxm-80gb"}


def test_phi3_s_cache_40_layers_of_10_kv_heads():
    """40 layers x 10 KV heads x 128 x (K and V) x 2 B = 204,800 B a token; at tp 2 each GPU holds 5 heads."""
    assert entry("Phi4ForCausalLMV")["status"] == "exact"
    one, two = evaluate(_values(1)), evaluate(_values(2))
    assert one.ok and two.ok
    assert one.result.kv_bytes_per_token == 40 * 10 * 128 * 2 * 2 == 204_800
    assert two.result.kv_bytes_per_gpu * 2 == one.result.kv_bytes_per_gpu


def test_the_parameters_are_phi4_s_and_the_siglip2_tower_s():
    """Text: a layer's q 5,120^2, k and v 2 x 5,120 x 1,280, o 5,120^2, the MLP 3 x 5,120 x 17,920 and two norms:
    340,797,440; x 40 = 13,631,897,600; the untied embedding and head 2 x 100,352 x 5,120 = 1,027,604,480 and the
    final norm 5,120: 14,659,507,200. Tower: the patch linear 1,152 x (3 x 16 x 16) + bias, 256 positions x 1,152,
    26 layers (27 - 1) of 15,239,504 (two LayerNorms, four biased 1,152^2 projections, fc1 and fc2 of 4,304),
    and the projector 1,152 -> 5,120 -> 5,120 with biases: 429,530,784. In all 15,089,037,984."""
    model = evaluate(_values(1)).scenario.model
    tower = sum(rows * cols for _, rows, cols in model.shapes.vision.groups)
    assert tower == 885_888 + 294_912 + 26 * 15_239_504 + 5_903_360 + 26_219_520 == 429_530_784
    assert model.params == 14_659_507_200 + 429_530_784 == 15_089_037_984


def test_tp_must_divide_the_10_kv_heads_and_the_tower_s_16_heads():
    """10 KV heads allow tp 1, 2, 5 and 10; the tower's 16 heads, tp 1, 2, 4, 8 and 16: only 1 and 2 start."""
    for tp, why in ((4, "10 kv heads"), (8, "10 kv heads"), (5, "16 attention heads")):
        out = evaluate(_values(tp))
        assert [e.field for e in out.errors] == ["tp"] and why in out.errors[0].message, tp
