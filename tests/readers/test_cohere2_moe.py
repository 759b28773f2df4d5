"""Cohere 2 MoE (vLLM 0.34.0 cohere2_moe.py): a "sliding_attention" layer slides over sliding_window + 1 tokens
(Cohere2MoeAttention: `self.sliding_window = config.sliding_window + 1`); where the config gives no layer_types,
transformers 5.25's Cohere2MoeConfig.__post_init__ builds them: the first_k_dense_replace prefix layers slide
except every prefix_dense_sliding_window_pattern-th, the rest except every sliding_window_pattern-th (4).

No verbatim config.json of a Cohere 2 MoE checkpoint could be reached from here: COHERE2_MOE is
transformers 5.25.0's Cohere2MoeConfig() defaults as its to_dict writes them (labelled, not a checkpoint)."""

import pytest

from kvcalc.errors import InputError
from kvcalc.evaluation import evaluate
from kvcalc.precision import precision
from kvcalc.readers.hfconfig import model_from_config

COHERE2_MOE = {"architectures": ["Cohere2MoeForCausalLM"], "model_type": "cohere2_moe", "vocab_size": 256000,
               "hidden_size": 8192, "intermediate_size": 22528, "num_hidden_layers": 40, "num_attention_heads": 64,
               "num_key_value_heads": 64, "head_dim": 128, "max_position_embeddings": 8192, "sliding_window": 4096,
               "num_experts_per_tok": 2, "num_experts": 8, "sliding_window_pattern": 4,
               "prefix_dense_sliding_window_pattern": 1, "torch_dtype": "bfloat16"}
BF16 = precision("bf16")


def test_the_defaults_slide_three_layers_of_four_over_4097_tokens():
    """40 layers: (i + 1) % 4 slides, so 30 sliding and 10 full, every one 2 x 64 x 128 x 2 B = 32,768 B a token.
    A request of 8,192 tokens keeps 10 x 8,192 + 30 x 4,097 = 204,830 token rows: 6,711,869,440 B."""
    model = model_from_config(COHERE2_MOE)
    kinds = [layer.kind for layer in model.layers]
    assert kinds == ["sliding", "sliding", "sliding", "full"] * 10
    assert {layer.window for layer in model.layers if layer.kind == "sliding"} == {4097}
    assert {layer.row_bytes(BF16) for layer in model.layers} == {32_768}
    e = evaluate({"hf-config": COHERE2_MOE, "engine": "exact", "context": "8192"})
    assert e.ok and e.result.kv_bytes_per_request == (10 * 8_192 + 30 * 4_097) * 32_768 == 6_711_869_440


def test_layer_types_and_a_dense_prefix():
    """layer_types given are read as written; without them, first_k_dense_replace 3 with the prefix pattern 1
    makes the 3 prefix layers full (every first of one), then the pattern of 4 over the other 37."""
    given = model_from_config(COHERE2_MOE | {"num_hidden_layers": 4,
                                             "layer_types": ["full_attention", "sliding_attention"] * 2})
    assert [layer.kind for layer in given.layers] == ["full", "sliding", "full", "sliding"]
    prefixed = model_from_config(COHERE2_MOE | {"first_k_dense_replace": 3})
    kinds = [layer.kind for layer in prefixed.layers]
    assert kinds[:3] == ["full"] * 3 and kinds[3:7] == ["sliding", "sliding", "sliding", "full"]


@pytest.mark.parametrize("tp, row", [(8, 8 * 512), (64, 512)])
def test_tp_splits_the_64_kv_heads(tp, row):
    # Its defaults have as many KV heads as query heads: no tp replicates a head, one past 64 splits no query.
    model = model_from_config(COHERE2_MOE)
    model.check_parallel(tp, 1)
    assert model.layers[0].row_bytes(BF16, tp) == row      # max(1, 64 // tp) heads of 2 x 128 x 2 B


def test_a_tp_that_splits_no_head_evenly_is_refused():
    for tp in (3, 128):
        with pytest.raises(InputError, match=f"tp={tp} does not divide the model's 64 attention heads"):
            model_from_config(COHERE2_MOE).check_parallel(tp, 1)


def test_the_prefix_pattern_is_read_for_cohere2_moe_only():
    out = evaluate({"hf-config": {**COHERE2_MOE, "model_type": "cohere2", "architectures": ["Cohere2ForCausalLM"]},
                    "engine": "exact"})
    assert [e.field for e in out.errors] == ["prefix_dense_sliding_window_pattern"]
