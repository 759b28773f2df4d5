"""Nemotron-NAS / DeciLM (issue 37): vLLM's nemotron_nas.py (DeciLMDecoderLayer, the same in 0.13.0 and 0.34.0)
builds each layer from its block_configs entry: an attention that is a no-op keeps no cache; any other has
num_attention_heads // n_heads_in_group KV heads of the model's head_dim. The config is
nvidia/Llama-3_3-Nemotron-Super-49B-v1's own (tests/fixtures/hf/SOURCES.md)."""

import copy

import pytest

from kvcalc.evaluation import evaluate
from kvcalc.readers.architectures import entry
from support import hf_fixture

SUPER = hf_fixture("nvidia__Llama-3_3-Nemotron-Super-49B-v1.json")


def _eval(config, tp=1, context="4096"):
    return evaluate({"hf-config": config, "context": context, "gpus": str(tp), "tp": str(tp)})


def test_49_of_80_layers_keep_8_kv_heads_each():
    """64 heads // n_heads_in_group 8 = 8 KV heads of 8,192 / 64 = 128 on each of the 49 attention layers; the
    31 no-op blocks keep nothing: 49 x 8 x 128 x 2 (K and V) x 2 B = 200,704 B a token, 822,083,584 B for a
    4,096-token request. A Llama-3.3-70B of the same width keeps 80 layers: 327,680 B a token."""
    assert entry("DeciLMForCausalLM")["status"] == "exact"
    out = _eval(SUPER)
    assert out.ok
    kinds = [layer.kind for layer in out.scenario.model.layers]
    assert kinds.count("full") == 49 and kinds.count("none") == 31
    assert out.result.kv_bytes_per_token == 49 * 8 * 128 * 2 * 2 == 200_704
    assert out.result.kv_bytes_per_request == 200_704 * 4_096 == 822_083_584


@pytest.mark.parametrize("tp, per_gpu", [(2, 411_041_792), (8, 102_760_448), (16, 102_760_448)])
def test_tp_splits_each_layer_s_heads_and_replicates_past_them(tp, per_gpu):
    """tp 2: 4 heads a rank; tp 8: 1; tp 16: 8 heads cannot split 16 ways, so each rank keeps one (vLLM
    replicates KV heads where tp exceeds them)."""
    out = _eval(SUPER, tp)
    assert out.ok and out.result.kv_bytes_per_gpu == per_gpu


def test_a_block_list_of_the_wrong_length_is_refused_by_name():
    config = copy.deepcopy(SUPER)
    config["block_configs"] = config["block_configs"][:79]
    out = _eval(config)
    assert [e.field for e in out.errors] == ["block_configs"] and "80" in out.errors[0].message


@pytest.mark.parametrize("key, value", [("replace_with_linear", True), ("window_length", 4096), ("num_sink_tokens", 4)])
def test_an_attention_key_vllm_does_not_read_is_refused_by_name(key, value):
    config = copy.deepcopy(SUPER)
    config["block_configs"][3]["attention"][key] = value
    out = _eval(config)
    assert [e.field for e in out.errors] == [f"block_configs[3].attention.{key}"]


@pytest.mark.parametrize("group", [0, 3, None, "8"])
def test_a_group_that_does_not_divide_the_heads_is_refused(group):
    config = copy.deepcopy(SUPER)
    config["block_configs"][0]["attention"]["n_heads_in_group"] = group
    out = _eval(config)
    assert [e.field for e in out.errors] == ["block_configs[0].attention.n_heads_in_group"]


def test_block_configs_on_another_model_type_are_refused():
    config = copy.deepcopy(SUPER)
    config["model_type"] = "llama"
    config["architectures"] = ["LlamaForCausalLM"]
    out = _eval(config)
    assert [e.field for e in out.errors] == ["block_configs"]
