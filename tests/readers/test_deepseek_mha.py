"""DeepSeek-V2's plain multi-head attention (vLLM 0.34.0 deepseek_v2.py DeepseekV2DecoderLayer): with
qk_nope_head_dim and qk_rope_head_dim both 0 it runs DeepseekAttention, heads of hidden_size //
num_attention_heads, K and V alike, whatever kv_lora_rank (null) and v_head_dim (0 or 128) say. DeepSeek-OCR's
3B MoE language model is such a model.

OCR_LM: the language model's keys of DeepSeek-OCR's config as a public port's test transcribes the official
checkpoint's (labelled), as a deepseek_v2 text config named DeepseekV2ForCausalLM, the model vLLM builds."""

import pytest

from kvcalc.evaluation import evaluate
from kvcalc.precision import precision
from kvcalc.readers.hfconfig import model_from_config

OCR_LM = {"architectures": ["DeepseekV2ForCausalLM"], "model_type": "deepseek_v2", "hidden_size": 1280,
          "intermediate_size": 6848, "kv_lora_rank": None, "max_position_embeddings": 32768,
          "moe_intermediate_size": 896, "moe_layer_freq": 1, "n_group": 1, "n_routed_experts": 64,
          "n_shared_experts": 2, "num_attention_heads": 10, "num_experts_per_tok": 6, "num_hidden_layers": 12,
          "num_key_value_heads": 10, "q_lora_rank": None, "qk_nope_head_dim": 0, "qk_rope_head_dim": 0,
          "use_mla": False, "v_head_dim": 0, "vocab_size": 129280, "first_k_dense_replace": 1,
          "topk_method": "greedy", "tie_word_embeddings": False, "torch_dtype": "bfloat16"}
BF16 = precision("bf16")


@pytest.mark.parametrize("v_head_dim", [0, 128])
def test_zero_qk_dims_run_multi_head_attention(v_head_dim):
    """10 KV heads of 1,280 // 10 = 128: 2 x 10 x 128 x 2 B = 5,120 B a token a layer, 61,440 B over 12 layers;
    8,192 tokens 503,316,480 B."""
    model = model_from_config(OCR_LM | {"v_head_dim": v_head_dim})
    assert {(layer.kind, layer.kv_heads, layer.head_dim, layer.v_head_dim) for layer in model.layers} == \
        {("full", 10, 128, None)}
    assert sum(layer.row_bytes(BF16) for layer in model.layers) == 12 * 5_120 == 61_440
    e = evaluate({"hf-config": OCR_LM | {"v_head_dim": v_head_dim}, "engine": "exact", "context": "8192"})
    assert e.ok and e.result.kv_bytes_per_request == 8_192 * 61_440 == 503_316_480


def test_tp_splits_the_ten_heads_and_refuses_three():
    model = model_from_config(OCR_LM)
    model.check_parallel(2, 1)
    assert model.layers[0].row_bytes(BF16, 2) == 2_560
    out = evaluate({"hf-config": OCR_LM, "engine": "vllm", "tp": "3", "gpus": "3"})
    assert [e.field for e in out.errors] == ["tp"]


def test_a_latent_with_rope_dims_is_still_mla():
    """One qk dim non-zero keeps the MLA path (DeepseekV2MLAAttention): the latent kv_lora_rank + rope."""
    model = model_from_config(OCR_LM | {"kv_lora_rank": 512, "qk_nope_head_dim": 128, "qk_rope_head_dim": 64,
                                        "v_head_dim": 128})
    assert {layer.kind for layer in model.layers} == {"mla"}
