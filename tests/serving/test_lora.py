"""LoRA adapter slots (issue 26, part 4), worked by hand from vLLM's create_lora_weights shapes
(lora/layers/*.py, 0.33.0; docs/research/issue-26-engine-rules.md section 4.1): every slot holds an
A and a B at the max rank for qkv_proj, o_proj, gate_up_proj and down_proj of every layer, plus
embed_tokens and lm_head, in the model's dtype, per GPU under tensor parallel."""

import pytest

from kvcalc import InputError, evaluate
from kvcalc.readers import presets
from kvcalc.serving import lora
from kvcalc.serving import ServingSettings


def llama(size="8B"):
    return presets.preset_model(f"meta-llama/Llama-3.1-{size}")


def test_llama_3_1_8b_rank_64_four_adapters_is_the_researchs_table():
    """Research 4.1: h 4,096, I 14,336, q 4,096, kv 1,024, 32 layers, vocab 128,256, N 4, R 64.
    Per layer: qkv A 3 x 4 x 64 x 4,096 = 3,145,728, B 4 x 64 x 6,144 = 1,572,864; o A and B
    1,048,576 each; gate_up A 2,097,152, B 4 x 64 x 28,672 = 7,340,032; down A 3,670,016,
    B 1,048,576: 20,971,520 x 32 = 671,088,640. embed_tokens and lm_head 4 x 64 x (128,256 + 4,096)
    = 33,882,112 each. 738,852,864 elements x 2 B = 1,477,705,728 B (1,409.25 MiB) per GPU."""
    sized = lora.slots(lora.Lora(max_loras=4, max_rank=64), llama(), 1, "vllm")
    assert sized.bytes_per_gpu == 1_477_705_728
    assert dict(sized.modules) == {"qkv_proj": (3_145_728 + 1_572_864) * 32, "o_proj": 2 * 1_048_576 * 32,
                                   "gate_up_proj": (2_097_152 + 7_340_032) * 32,
                                   "down_proj": (3_670_016 + 1_048_576) * 32,
                                   "embed_tokens": 33_882_112, "lm_head": 33_882_112}
    assert sized.dtype == "bf16" and sized.slots == 4 and sized.rank == 64
    assert any("1,477,705,728 B per GPU" in line and "create_lora_weights" in line for line in sized.lines)
    # The exact ideal counts vLLM's set.
    assert lora.slots(lora.Lora(4, 64), llama(), 1, None).bytes_per_gpu == 1_477_705_728


def test_llama_3_1_8b_at_tp_2_splits_the_sharded_sides_only():
    """tp 2: q/tp 2,048, kv per rank 4 heads x 128 = 512, I/tp 7,168; N x R = 256.
    qkv A 3 x 256 x 4,096 = 3,145,728 (input whole), B 256 x (2,048 + 2 x 512) = 786,432;
    o A 256 x 2,048 = 524,288, B 4 x 4,096 x 64 = 1,048,576; gate_up A 2 x 256 x 4,096 = 2,097,152,
    B 256 x 2 x 7,168 = 3,670,016; down A 256 x 7,168 = 1,835,008, B 1,048,576.
    Per layer 14,155,776 x 32 = 452,984,832; embed_tokens and lm_head stay whole (33,882,112 each):
    520,749,056 elements x 2 B = 1,041,498,112 B per GPU."""
    assert lora.slots(lora.Lora(4, 64), llama(), 2, "vllm").bytes_per_gpu == 1_041_498_112


def test_llama_3_1_70b_at_tp_4():
    """h 8,192, I 28,672, 64 heads x 128 (q 8,192), 8 kv heads, 80 layers, vocab 128,256; tp 4,
    N 4, R 64 (N x R = 256): q/tp 2,048, kv per rank 2 x 128 = 256, I/tp 7,168.
    qkv A 3 x 256 x 8,192 = 6,291,456, B 256 x (2,048 + 512) = 655,360; o A 256 x 2,048 = 524,288,
    B 4 x 8,192 x 64 = 2,097,152; gate_up A 2 x 256 x 8,192 = 4,194,304, B 256 x 14,336 = 3,670,016;
    down A 256 x 7,168 = 1,835,008, B 2,097,152. Per layer 21,364,736 x 80 = 1,709,178,880.
    embed_tokens and lm_head 256 x (128,256 + 8,192) = 34,930,688 each.
    1,779,040,256 elements x 2 B = 3,558,080,512 B per GPU."""
    assert lora.slots(lora.Lora(4, 64), llama("70B"), 4, "vllm").bytes_per_gpu == 3_558_080_512


def test_kv_heads_are_replicated_past_tp_equal_to_kv_heads():
    """Llama 3.1 8B at tp 16 (hypothetically; 32 heads divide): one whole kv head per rank, so each
    B of k and v is 256 x 128 wide, not 256 x 64. qkv B per layer 256 x (256 + 2 x 128) = 131,072."""
    sized = lora.slots(lora.Lora(4, 64), llama(), 16, "vllm")
    assert dict(sized.modules)["qkv_proj"] == (3 * 256 * 4096 + 256 * (256 + 2 * 128)) * 32


def test_inputs_and_their_defaults():
    """vllm/config/lora.py: max_loras defaults to 1, max_lora_rank to 16."""
    assert lora.lora_from(ServingSettings()) is None
    alone = lora.lora_from(ServingSettings(max_lora_rank=32))
    assert (alone.max_loras, alone.max_rank, alone.loras_given) == (1, 32, False)
    loras = lora.lora_from(ServingSettings(max_loras=2))
    assert (loras.max_loras, loras.max_rank, loras.rank_given) == (2, 16, False)
    assert any("vLLM's default rank 16" in line for line in lora.slots(loras, llama(), 1, "vllm").lines)
    assert any("vLLM's default --max-loras 1" in line for line in lora.slots(alone, llama(), 1, "vllm").lines)


def test_sglang_counts_the_linears_with_its_own_slot_default():
    """SGLang's LoRAMemoryPool: the same shapes for the same modules, all-linear assumed (no
    embeddings): 671,088,640 elements x 2 B = 1,342,177,280 B for N 4, R 64. Without max-loras it
    allocates its --max-loras-per-batch default, 8: twice that."""
    assert lora.slots(lora.Lora(4, 64), llama(), 1, "sglang").bytes_per_gpu == 1_342_177_280
    sized = lora.slots(lora.lora_from(ServingSettings(max_lora_rank=64)), llama(), 1, "sglang")
    assert sized.slots == 8 and sized.bytes_per_gpu == 2 * 1_342_177_280
    assert any("all-linear is assumed" in line for line in sized.lines)


def test_refusals_name_the_field_and_what_is_allowed():
    with pytest.raises(InputError) as e:
        lora.slots(lora.Lora(4, 48), llama(), 1, "vllm")
    assert e.value.field == "max-lora-rank" and "1, 8, 16, 32, 64, 128, 256, 320, 512" in e.value.message
    # SGLang takes any rank.
    assert lora.slots(lora.Lora(1, 48), llama(), 1, "sglang").rank == 48
    with pytest.raises(InputError) as e:
        lora.slots(lora.Lora(4, 64), llama(), 1, "llama.cpp")
    assert e.value.field == "max-loras" and "--lora FILE whole" in e.value.message
    # Gemma 3's 262,208-token vocabulary is past LogitsProcessorWithLoRA's 258,048.
    with pytest.raises(InputError) as e:
        lora.slots(lora.Lora(1, 16), presets.preset_model("google/gemma-3-27b-it"), 1, "vllm")
    assert e.value.field == "max-loras" and "258,048" in e.value.message
    # Mixture-of-experts (fused experts' slots unverified) and MLA layers are refused, not guessed.
    for model_id, words in (("mistralai/Mixtral-8x7B-v0.1", "mixture-of-experts"),
                            ("deepseek-ai/DeepSeek-V3", "mixture-of-experts")):
        with pytest.raises(InputError) as e:
            lora.slots(lora.Lora(1, 16), presets.preset_model(model_id), 8, "vllm")
        assert e.value.field == "max-loras" and words in e.value.message


def test_launch_flags_and_figures_through_the_scenario():
    e = evaluate({"model": "meta-llama/Llama-3.1-8B", "engine": "vllm", "gpu": "h100-sxm-80gb",
                  "max-loras": 4, "max-lora-rank": 64})
    assert e.scenario.serving.lora == lora.Lora(4, 64)
    assert e.scenario.deployment.added_weights_bytes_per_gpu == 1_477_705_728
    data = lora.figures(e.scenario.serving.lora, e.scenario, e)
    assert {k: data[k] for k in ("max_loras", "max_lora_rank", "lora_bytes_per_gpu", "lora_dtype")} == {
        "max_loras": 4, "max_lora_rank": 64, "lora_bytes_per_gpu": 1_477_705_728, "lora_dtype": "bf16"}
    assert any("punica" in line for line in data["lines"])
    assert lora.launch_flags(lora.Lora(4, 64), "vllm") == ["--enable-lora", "--max-loras", "4", "--max-lora-rank", "64"]
    assert lora.launch_flags(lora.Lora(4, 64), "sglang") == ["--enable-lora", "--max-loras-per-batch", "4",
                                                             "--max-lora-rank", "64"]
    assert lora.launch_flags(lora.Lora(4, 64), "llama.cpp") == []
    old = evaluate({"model": "meta-llama/Llama-3.1-8B", "engine": "vllm", "engine-version": "0.10.2",
                    "gpu": "h100-sxm-80gb", "max-loras": 4, "max-lora-rank": 64})
    assert any("lora_extra_vocab_size" in line for line in
               lora.figures(old.scenario.serving.lora, old.scenario, old)["lines"])


def test_pipeline_stages_each_hold_their_own_layers_slots():
    """Llama 3.1 8B at pp 2, 4 slots of rank 64: each stage wraps its 16 layers (20,971,520
    elements a layer, the research's table), the first also the embedding (33,882,112), the last
    the head (33,882,112): the busiest holds 16 x 20,971,520 + 33,882,112 = 369,426,432
    elements = 738,852,864 B, half the pp 1 figure less one end."""
    model = presets.preset_model("meta-llama/Llama-3.1-8B")
    sized = lora.slots(lora.Lora(4, 64), model, 1, "vllm", pp=2)
    assert sized.bytes_per_gpu == 2 * (16 * 20_971_520 + 33_882_112) == 738_852_864
    e = evaluate({"model": "meta-llama/Llama-3.1-8B", "gpu": "h100-sxm-80gb", "gpus": "2", "pp": "2",
                  "engine": "vllm", "max-loras": "4", "max-lora-rank": "64"})
    assert e.ok and dict(e.scenario.serving.added)["lora"] == 738_852_864
