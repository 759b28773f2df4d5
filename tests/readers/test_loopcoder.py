"""IQuest LoopCoder (vLLM 0.34.0 iquest_loopcoder.py LoopCoderAttention): each physical layer runs loop_num times;
loop 0 keeps a full cache, every later loop its own cache of the same KV heads sliding over loop_window_size
tokens (an Attention built with a copy of cache_config whose sliding_window is loop_window_size), named
layers.{loop x num_hidden_layers + layer}. Later loops read loop 0's cache without writing it.

LOOPCODER_40B: the checkpoint configuration a public MLX port's architecture test decodes for the 40B Loop
model (its test JSON, transcribed; no config.json from the model's own repository could be reached here)."""

import pytest

from kvcalc.errors import InputError
from kvcalc.evaluation import evaluate
from kvcalc.precision import precision
from kvcalc.readers.hfconfig import model_from_config

LOOPCODER_40B = {"architectures": ["IQuestLoopCoderForCausalLM"], "model_type": "iquestloopcoder", "hidden_size": 5120,
                 "num_hidden_layers": 80, "intermediate_size": 27648, "num_attention_heads": 40, "rms_norm_eps": 1e-6,
                 "vocab_size": 76800, "head_dim": 128, "num_key_value_heads": 8, "max_position_embeddings": 131072,
                 "attention_bias": False, "mlp_bias": False, "rope_theta": 500000, "tie_word_embeddings": False,
                 "loop_num": 2, "loop_window_size": 64}
BF16 = precision("bf16")


def test_two_loops_keep_80_full_and_80_sliding_caches():
    """8 KV heads of 128: 2 x 8 x 128 x 2 B = 4,096 B a token in every cache. A request of 32,768 tokens keeps
    80 x 32,768 x 4,096 = 10,737,418,240 B in loop 0 and 80 x 64 x 4,096 = 20,971,520 B in loop 1:
    10,758,389,760 B (the exact ideal)."""
    model = model_from_config(LOOPCODER_40B)
    assert [layer.kind for layer in model.layers] == ["full"] * 80 + ["sliding"] * 80
    assert {layer.window for layer in model.layers[80:]} == {64} and model.loop_caches == 2
    assert {layer.row_bytes(BF16) for layer in model.layers} == {4_096}
    e = evaluate({"hf-config": LOOPCODER_40B, "engine": "exact", "context": "32768"})
    assert e.ok and e.result.kv_bytes_per_request == 80 * 32_768 * 4_096 + 80 * 64 * 4_096 == 10_758_389_760


def test_vllm_reserves_the_loop_caches_as_sliding_layers():
    """vLLM 0.33.0 at 32,768 tokens, prefill chunk 8,192, async scheduling: a loop-1 cache reserves
    cdiv(min(63 + 2 x 8,192, 32,768), 16) + 1 = 1,029 blocks of 16 x 4,096 B; loop 0 2,048. Two groups of 80."""
    e = evaluate({"hf-config": LOOPCODER_40B, "engine": "vllm", "context": "32768", "kv-memory-gib": "40",
                  "prefill-chunk": "8192"})
    assert e.ok, e.errors
    assert e.engine.kv_bytes_per_request == 80 * (2_048 + 1_029) * 16 * 4_096


@pytest.mark.parametrize("tp", [8, 40])
def test_tp_splits_and_replicates_the_8_kv_heads(tp):
    """tp 8: one KV head a GPU; tp 40: each of the 8 heads on 5 GPUs; either way 2 x 128 x 2 B = 512 B a token."""
    model = model_from_config(LOOPCODER_40B)
    model.check_parallel(tp, 1)
    assert model.layers[0].row_bytes(BF16, tp) == model.layers[80].row_bytes(BF16, tp) == 512


def test_a_tp_that_neither_splits_nor_replicates_is_refused():
    with pytest.raises(InputError, match="tp=20"):
        model_from_config(LOOPCODER_40B).check_parallel(20, 1)


def test_what_vllm_does_not_build_is_refused():
    with pytest.raises(InputError, match="hidden_size // num_attention_heads = 128"):
        model_from_config(LOOPCODER_40B | {"head_dim": 64})
    with pytest.raises(InputError, match="pipeline stages of a looped model"):
        model_from_config(LOOPCODER_40B).check_parallel(1, 2)
    out = evaluate({"hf-config": {**LOOPCODER_40B, "model_type": "llama", "architectures": ["LlamaForCausalLM"]},
                    "engine": "exact"})
    assert [x.field for x in out.errors] == ["loop_num"]
