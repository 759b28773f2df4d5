"""Kimi K3 (issue 37): vLLM 0.34.0 registers KimiK3ForConditionalGeneration (vllm/models/kimi_k3), which builds
its text_config as KimiLinearForCausalLM: each layer in linear_attn_config.kda_layers (1-based) keeps a KDA state
(MambaStateShapeCalculator.kda_state_shape over num_heads, head_dim and short_conv_kernel_size, the same with
use_full_rank_gate), the rest an MLA latent of kv_lora_rank + qk_rope_head_dim per token (nvidia/mla.py: the rope
part is cached even where mla_use_nope). A dsa_config names layers that also keep an indexer key (dsa_cache.py):
not modelled, so refused. The config is moonshotai/Kimi-K3's (tests/fixtures/hf/SOURCES.md)."""

import copy

from kvcalc.evaluation import evaluate
from kvcalc.readers.architectures import entry
from support import hf_fixture

K3 = hf_fixture("moonshotai__Kimi-K3.json")


def test_the_wrapper_is_sized_as_kimi_linear_69_kda_and_24_mla_layers():
    """Per token, the 24 MLA layers cache 512 + 64 = 576 values of 2 B: 24 x 576 x 2 = 27,648 B. Per request,
    each of the 69 KDA layers keeps its state: the short convolutions 3 x (96 x 128) x (4 - 1) = 110,592 values in
    bf16 (221,184 B) and the recurrent state 96 x 128 x 128 = 1,572,864 values in float32 (6,291,456 B):
    69 x 6,512,640 = 449,372,160 B. At 4,096 tokens a request is 27,648 x 4,096 + 449,372,160 = 562,618,368 B."""
    assert entry("KimiK3ForConditionalGeneration")["status"] == "exact"
    out = evaluate({"hf-config": K3, "context": "4096"})
    assert out.ok
    kinds = [layer.kind for layer in out.scenario.model.layers]
    assert kinds.count("state") == 69 and kinds.count("mla") == 24
    r = out.result
    assert r.kv_bytes_per_token == 24 * (512 + 64) * 2 == 27_648
    assert r.kv_state_bytes_per_request == 69 * (3 * 96 * 128 * 3 * 2 + 96 * 128 * 128 * 4) == 449_372_160
    assert r.kv_bytes_per_request == 27_648 * 4_096 + 449_372_160 == 562_618_368


def test_at_tp_8_the_latent_is_on_every_gpu_and_the_state_split():
    """tp 8: MLA's one latent is replicated on each rank (27,648 x 4,096 = 113,246,208 B), the KDA heads split
    96 / 8 = 12 a rank (449,372,160 / 8 = 56,171,520 B): 169,417,728 B per GPU a request."""
    out = evaluate({"hf-config": K3, "context": "4096", "gpus": "8", "tp": "8"})
    assert out.ok and out.result.kv_bytes_per_gpu == 113_246_208 + 56_171_520 == 169_417_728


def test_a_dsa_config_is_refused_by_name():
    config = copy.deepcopy(K3)
    config["text_config"]["dsa_config"] = {"dsa_layers": [4, 8]}
    out = evaluate({"hf-config": config, "context": "4096"})
    assert [e.field for e in out.errors] == ["text_config.dsa_config"]


def test_a_tp_the_kda_heads_do_not_divide_is_refused():
    out = evaluate({"hf-config": K3, "context": "4096", "gpus": "5", "tp": "5"})
    assert not out.ok and out.errors[0].field == "tp"
