"""A vision tower's own tensor-parallel limits, as vLLM checks them (issue 34, item 8).

vLLM 0.33.0 builds a Qwen vision tower split over tp under --mm-encoder-tp-mode weights (its
default): qwen2_5_vl.py Qwen2_5_VisionAttention takes num_attention_heads_per_partition =
dist_utils.divide(num_heads, tp_size), which asserts divisibility, and qwen3_vl.py's blocks (which
Qwen3.5's tower reuses) build that same attention. The Qwen towers ask is_vit_use_data_parallel()
without their head count, so vision.py's fallback to data parallel never applies to them: vLLM
issue #55517 is this refusal at tp 3 ("AssertionError: 16 is not divisible by 3"), PRs #55587 and
#57119 (open) would pass the count. --mm-encoder-tp-mode data sets the tower's tp_size to 1.

The real case: Qwen3.5-397B-A17B's language model splits over tp 32 (32 attention heads, 2 KV heads
replicated), its vision tower's 16 heads (vision_config.num_heads, the preset's config.json) do not.
"""

import pytest

from kvcalc import engines, evaluate
from kvcalc.readers.hfconfig import model_from_config
from kvcalc.serving import encoder
from support import cli, hf_fixture

QWEN35 = {"model": "Qwen/Qwen3.5-397B-A17B", "gpu": "h100-sxm-80gb", "engine": "vllm"}


def test_qwen3_5_397b_at_tp_32_is_refused_as_vllm_refuses_it():
    refused = evaluate(dict(QWEN35, tp="32"))
    assert [e.field for e in refused.errors] == ["tp"]
    message = refused.errors[0].message
    assert message.startswith("vLLM refuses to start: the vision tower's 16 attention heads (vision_config.num_heads) "
                              "are not divisible by tp 32")
    assert "--mm-encoder-tp-mode data" in message and "a tp of 1, 2, 4, 8, 16" in message
    code, _, err = cli("--model", "Qwen/Qwen3.5-397B-A17B", "--gpu", "h100-sxm-80gb", "--engine", "vllm", "--tp", "32")
    assert code != 0 and err.count("\n") == 1 and err.startswith("kvcalc: error: --tp: vLLM refuses to start")
    # At tp 16 the 16 heads split one a GPU, and the MLP's 4,304 (vision_config.intermediate_size)
    # 269 a GPU: it starts.
    assert not evaluate(dict(QWEN35, tp="16")).errors


def test_data_mode_keeps_the_tower_whole_and_starts_at_tp_32():
    whole = evaluate(dict(QWEN35, tp="32", **{"mm-encoder-tp-mode": "data"}))
    assert not whole.errors, whole.errors
    tower = whole.scenario.serving.encoder
    assert tower.mode == "data" and tower.splits == ()
    # Each GPU holds the whole tower beside its 1/32 share: W - ceil(W / 32) more.
    added = dict(whole.scenario.serving.added)["encoder"]
    assert added == -(-tower.weights_bytes * 31 // 32)


def test_qwen3_vl_32b_tower_at_tp_32_from_its_config():
    # tests/fixtures/hf/Qwen__Qwen3-VL-32B-Instruct.json: 64 attention heads and 8 KV heads split over
    # tp 32; the tower's 16 heads do not.
    cfg = hf_fixture("Qwen__Qwen3-VL-32B-Instruct.json")
    assert cfg["vision_config"]["num_heads"] == 16
    refused = evaluate({"hf-config": cfg, "gpu": "h200-141gb", "engine": "vllm", "tp": "32"})
    assert [e.field for e in refused.errors] == ["tp"]
    assert "16 attention heads (vision_config.num_heads) are not divisible by tp 32" in refused.errors[0].message
    fits = evaluate({"hf-config": cfg, "gpu": "h200-141gb", "engine": "vllm", "tp": "8"})
    assert not fits.errors and fits.scenario.serving.encoder.splits == (
        ("num_heads", "attention heads", 16), ("intermediate_size", "MLP channels", 4304))


@pytest.mark.parametrize("engine", ["exact", "sglang"])
def test_only_vllms_rule(engine):
    # The exact ideal has no engine's rules; SGLang's towers are not read here: neither refuses.
    cfg = hf_fixture("Qwen__Qwen3-VL-32B-Instruct.json")
    out = evaluate({"hf-config": cfg, "gpu": "h200-141gb", "engine": engine, "tp": "32"})
    assert not [e for e in out.errors if "vision tower" in e.message]


def test_the_mlp_width_is_checked_too():
    # A tower whose heads divide tp but whose MLP width does not: Qwen2.5-VL-7B's tower with its
    # intermediate_size 3,420 over tp 8 (3,420 = 4 x 855). vLLM's MergedColumnParallelLinear asserts
    # each of [3,420, 3,420] divides by tp.
    cfg = hf_fixture("Qwen__Qwen2.5-VL-7B-Instruct.json")
    tower = encoder.Encoder(mode="weights", weights_bytes=1, tower=model_from_config(cfg).shapes.vision,
                            wrapper="qwen2_5_vl")
    assert engines.REGISTRY["vllm"].CHECKS_ENCODER_SPLIT
    assert not hasattr(engines.REGISTRY["sglang"], "CHECKS_ENCODER_SPLIT")
    with pytest.raises(Exception) as e:
        encoder.check_tp(tower, 8, True)
    assert e.value.field == "tp"
    assert "the vision tower's 3,420 MLP channels (vision_config.intermediate_size) are not divisible by tp 8" \
        in e.value.message
    assert encoder.check_tp(tower, 4, True).splits[1] == ("intermediate_size", "MLP channels", 3420)
    assert encoder.check_tp(tower, 8, False) is tower
