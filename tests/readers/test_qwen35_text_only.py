"""Text-only Qwen3.5 checkpoints (issue 37): Qwen3_5ForCausalLM and Qwen3_5MoeForCausalLM are the language models
of the Qwen3_5*ForConditionalGeneration wrappers without a tower (vLLM 0.34.0 vllm/models/qwen3_5). Their
MODELS_CONFIG_MAP entry, Qwen3_5ForCausalLMConfig (models/config.py), takes the state dtype from
mamba_ssm_dtype as the wrappers' does, and drops the M-RoPE fields: positions are one-dimensional. The config
below is Qwen/Qwen3.5-27B's text_config (tests/fixtures/hf) named as a text-only checkpoint would name it: a
labelled transformation, no text-only Qwen3.5 config.json having been found."""

import copy

from kvcalc.evaluation import evaluate
from kvcalc.readers.architectures import entry
from support import hf_fixture

WRAPPED = hf_fixture("Qwen__Qwen3.5-27B.json")


def _text_only(architecture="Qwen3_5ForCausalLM"):
    text = copy.deepcopy(WRAPPED["text_config"])
    text["architectures"] = [architecture]
    return text


def _eval(config):
    return evaluate({"hf-config": config, "context": "4096", "engine": "vllm", "gpu": "h100-sxm-80gb",
                     "engine-version": "0.27.1"})


def test_the_cache_is_the_wrapper_s_language_model_s():
    """16 full-attention layers of 4 KV heads of 256 (16 x 4 x 256 x 2 x 2 B = 65,536 B a token) and 48 Gated
    DeltaNet states in float32 (its mamba_ssm_dtype): 153,944,064 B a request, as the wrapper's."""
    assert entry("Qwen3_5ForCausalLM")["status"] == entry("Qwen3_5MoeForCausalLM")["status"] == "exact"
    wrapped, text = _eval(WRAPPED), _eval(_text_only())
    assert wrapped.ok and text.ok
    assert text.result.kv_bytes_per_token == wrapped.result.kv_bytes_per_token == 16 * 4 * 256 * 2 * 2 == 65_536
    assert text.result.kv_state_bytes_per_request == wrapped.result.kv_state_bytes_per_request == 153_944_064
    assert {layer.ssm_dtype for layer in text.scenario.model.layers if layer.kind == "state"} == {"fp32"}
    assert not text.scenario.model.multimodal


def test_its_rope_cache_is_one_dimensional():
    """262,144 positions x 64 rotary dims (256 x 0.25) either way; the wrapper's is M-RoPE, whose cache vLLM
    makes four times longer from 0.7.3 (vllm_loaded_extra), the text-only model's is not."""
    assert _eval(WRAPPED).scenario.model.shapes.rope_cache == (262_144 * 64, True)
    assert _eval(_text_only()).scenario.model.shapes.rope_cache == (262_144 * 64, False)
