"""Speculative decoding (issue 26, part 1): a draft model or the target's own MTP heads, worked out
by hand with the engines' rules (docs/research/issue-26-engine-rules.md section 1) and held to a
public vLLM start-up log of an MTP deployment (tests/fixtures/logs/SOURCES.md)."""

import json

import pytest

from kvcalc.readers import presets
from kvcalc.evaluation import evaluate
from kvcalc.readers.params import count_params
from kvcalc.readers.quantized_bytes import quantized_weights
from kvcalc.serving import draft as drafts
from kvcalc.inputs.startup_log import read_log
from kvcalc.units import GIB
from support import FIXTURES

H200 = {"gpu": "h200-141gb", "gpus": "8", "kv-dtype": "bf16"}
DEEPSEEK_MTP = {"model": "deepseek-ai/DeepSeek-V3", "mtp": "on", **H200}
LLAMA_DRAFT = {"model": "meta-llama/Llama-3.1-70B", "draft-model": "meta-llama/Llama-3.2-1B", "gpu": "h100-sxm-80gb",
               "gpus": "4", "spec-tokens": "4"}


def run(values):
    e = evaluate(values)
    assert e.ok, e.errors
    return e


def refused(values):
    e = evaluate(values)
    assert not e.ok
    return e.errors[0]


# --- DeepSeek-V3 with its MTP head, 8 x H200, bf16 KV ------------------------------------------

def test_deepseek_v3_mtp_adds_one_mla_layer_of_1152_bytes():
    # config.json num_nextn_predict_layers = 1: one more DeepseekV2DecoderLayer (deepseek_mtp.py),
    # MLA with kv_lora_rank 512 and qk_rope_head_dim 64: (512 + 64) x 2 B = 1,152 B per token,
    # whole on every GPU, no factor 2.
    e = run({**DEEPSEEK_MTP, "engine": "vllm"})
    draft = e.scenario.serving.draft
    assert (draft.kind, len(draft.layers), draft.spec_tokens) == ("mtp", 1, 1)   # vLLM: n_predict
    assert drafts.kv_bytes_per_token(draft, e.scenario.workload.kv_precision, 8) == 1_152
    model = e.scenario.model
    assert model.name == "DeepSeek-V3 + MTP (1 layer)" and len(model.layers) == 62
    assert e.result.kv_bytes_per_token == 62 * 1_152 == 71_424    # MLA: the same on every GPU


def test_deepseek_v3_mtp_weights_per_gpu():
    # The MTP decoder layer in the checkpoint's fp8 block-scaled format (its config's shapes with
    # a 62nd layer, less the 61-layer count): 11,511,947,488 B, split over tp 8 like a target layer.
    # eh_proj is a plain nn.Linear(2h, h) in bf16, whole on every rank: 2 x 7,168 x 7,168 x 2 B =
    # 205,520,896 B; enorm, hnorm and shared_head.norm 3 x 7,168 x 2 B = 43,008 B. Its embed_tokens
    # and shared_head.head are replaced by the target's (_maybe_share_embeddings / _lm_head).
    e = run({**DEEPSEEK_MTP, "engine": "vllm"})
    draft = e.scenario.serving.draft
    assert draft.split_bytes == 11_511_947_488
    assert draft.replicated_bytes == 205_520_896 + 43_008
    assert draft.weights_bytes == 11_717_511_392
    per_gpu = 11_511_947_488 // 8 + 205_520_896 + 43_008
    assert per_gpu == 1_644_557_340
    assert e.scenario.deployment.added_weights_bytes_per_gpu == per_gpu
    bare = run({**H200, "model": "deepseek-ai/DeepSeek-V3", "engine": "vllm"})
    assert e.result.weights_bytes_per_gpu - bare.result.weights_bytes_per_gpu == per_gpu


def test_the_mtp_layer_bytes_add_up_to_the_checkpoint_total():
    # deepseek-ai/DeepSeek-V3's safetensors headers total 688,574,839,360 B ("Total Parameters
    # Size" of `model-inspect deepseek-ai/DeepSeek-V3`, github.com/simpx/model-inspect README.md;
    # the 685B the card states against 671B without layer 61). Layer 61 holds the MTP decoder
    # layer, its own BF16 embed_tokens and shared_head.head (129,280 x 7,168 x 2 B =
    # 1,853,358,080 B each, listed there), eh_proj (205,520,896 B, listed) and three norms
    # (14,336 B each, listed). With the 61 layers computed from the config, it adds up exactly.
    cfg = presets.find_model_entry("deepseek-ai/DeepSeek-V3")["config"]
    layers_61 = quantized_weights(cfg).bytes
    assert layers_61 == 673_150_611_808
    draft = run({**DEEPSEEK_MTP, "engine": "vllm"}).scenario.serving.draft
    assert layers_61 + draft.split_bytes + 2 * 1_853_358_080 + 205_520_896 + 3 * 14_336 == 688_574_839_360


def test_vllm_pools_the_mtp_layer_in_the_target_group():
    # 40 GiB of KV memory, FlashMLA's 64-token blocks on H200: one group of 62 MLA layers, so
    # num_blocks = 42,949,672,960 // (64 x 1,152 x 62) = 9,395 against 9,549 with 61 layers:
    # tokens scale by 61/62 (to the block).
    memory = {"kv-memory-gib": "40", "engine": "vllm"}
    with_mtp = run({**DEEPSEEK_MTP, **memory}).engine
    bare = run({**H200, "model": "deepseek-ai/DeepSeek-V3", **memory}).engine
    assert 40 * GIB // (64 * 1_152 * 62) == 9_395 and 40 * GIB // (64 * 1_152 * 61) == 9_549
    assert (with_mtp.kv_tokens, bare.kv_tokens) == (9_395 * 64, 9_549 * 64) == (601_280, 611_136)
    assert not any("padding" in line for line in with_mtp.log)


def test_sglang_0_5_23_cell_is_target_plus_its_share():
    # pool_configurator.py DefaultPoolConfigurator: cell = cell_target + int(cell_target x L_draft
    # / L_target) = 70,272 + int(70,272 x 1 / 61) = 70,272 + 1,152 = 71,424 B per token per GPU.
    e = run({**DEEPSEEK_MTP, "kv-memory-gib": "40", "engine": "sglang"})
    engine = e.engine
    assert engine.kv_tokens == 40 * GIB // 71_424 == 601_333
    assert engine.kv_bytes_per_request == 71_424 * 8_192
    assert e.scenario.serving.draft.spec_tokens == 3       # _auto_choose_speculative_params: (3, 1, 4)
    assert any("int(70,272 x 1 / 61) = 1,152" in note for note in engine.notes)


def test_sglang_before_0_5_16_is_refused():
    error = refused({**DEEPSEEK_MTP, "engine": "sglang", "engine-version": "0.5.9"})
    assert error.field == "engine-version" and "profile_max_num_token" in error.message


def test_deepseek_mtp_figures_and_launch_flags():
    e = run({**DEEPSEEK_MTP, "engine": "vllm"})
    draft = e.scenario.serving.draft
    f = drafts.figures(draft, e.scenario, e)
    assert {k: f[k] for k in ("kind", "spec_tokens", "draft_weights_bytes", "draft_weights_bytes_per_gpu",
                              "draft_kv_bytes_per_token", "draft_kv_bytes_per_gpu")} == {
        "kind": "mtp", "spec_tokens": 1, "draft_weights_bytes": 11_717_511_392,
        "draft_weights_bytes_per_gpu": 1_644_557_340, "draft_kv_bytes_per_token": 1_152,
        "draft_kv_bytes_per_gpu": 1_152 * 8_192}
    assert any("deepseek_mtp.py" in line for line in f["lines"])
    assert drafts.launch_flags(draft, "vllm") == ["--speculative-config", '{"method": "mtp", "num_speculative_tokens": 1}']
    sg = run({**DEEPSEEK_MTP, "engine": "sglang"}).scenario.serving.draft
    assert drafts.launch_flags(sg, "sglang") == ["--speculative-algorithm", "NEXTN", "--speculative-num-steps", "3",
                                                  "--speculative-eagle-topk", "1", "--speculative-num-draft-tokens", "4"]


# --- Llama 3.1 70B with Llama 3.2 1B as the draft, tp 4 -----------------------------------------

def test_llama_1b_draft_kv_and_weights():
    # Llama-3.2-1B: 16 layers, 8 kv heads of 64, vocabulary 128,256 like Llama 3.1 70B's. At tp 4:
    # 16 x (8 / 4) x 64 x 2 x 2 B = 8,192 B per token per GPU beside the 70B's 80 x 2 x 128 x 2 x 2
    # = 81,920. Weights: 1,235,814,400 parameters (its config with tied embeddings; the preset's
    # published count) x 2 B = 2,471,628,800 B, split over tp 4 (vLLM's draft_model runs at the
    # target's tp): 617,907,200 B per GPU.
    e = run({**LLAMA_DRAFT, "engine": "vllm"})
    draft = e.scenario.serving.draft
    assert (draft.kind, draft.vocab_size, len(draft.layers)) == ("draft", 128_256, 16)
    assert drafts.kv_bytes_per_token(draft, e.scenario.workload.kv_precision, 4) == 8_192
    # The whole model's row (tp 1): 80 x 8 x 128 x 2 x 2 + 16 x 8 x 64 x 2 x 2 = 327,680 + 32,768.
    assert e.result.kv_bytes_per_token == 327_680 + 32_768
    assert draft.weights_bytes == 1_235_814_400 * 2 == 2_471_628_800
    # Llama-3.2-1B's config.json ties the embeddings (tie_word_embeddings: true), which the
    # preset's copy of it leaves out: counted so, its shapes give the published 1,235,814,400.
    cfg = presets.find_model_entry("meta-llama/Llama-3.2-1B")["config"]
    assert count_params({**cfg, "tie_word_embeddings": True}).total == 1_235_814_400
    assert e.scenario.deployment.added_weights_bytes_per_gpu == 617_907_200


def test_llama_draft_in_vllm_and_sglang_pools():
    # vLLM: every layer full attention, so one group with each layer its own page size
    # (head_dim 64 and 128): num_blocks = 30 GiB // (16 x (81,920 + 8,192)) = 22,341, x 16 tokens.
    # SGLang 0.5.23 sizes a STANDALONE draft as if it had the target's heads: 81,920 +
    # int(81,920 x 16 / 80) = 98,304 B a cell, 30 GiB // 98,304 = 327,680 tokens.
    memory = {**LLAMA_DRAFT, "kv-memory-gib": "30"}
    assert run({**memory, "engine": "vllm"}).engine.kv_tokens == 30 * GIB // (16 * 90_112) * 16 == 357_456
    assert run({**memory, "engine": "sglang"}).engine.kv_tokens == 30 * GIB // 98_304 == 327_680


def test_llama_draft_launch_flags():
    vllm = run({**LLAMA_DRAFT, "engine": "vllm"}).scenario.serving.draft
    assert drafts.launch_flags(vllm, "vllm") == [
        "--speculative-config", '{"model": "meta-llama/Llama-3.2-1B", "method": "draft_model", '
                                '"num_speculative_tokens": 4}']
    sglang = run({**LLAMA_DRAFT, "engine": "sglang"}).scenario.serving.draft
    assert drafts.launch_flags(sglang, "sglang")[:4] == ["--speculative-algorithm", "STANDALONE",
                                                         "--speculative-draft-model-path", "meta-llama/Llama-3.2-1B"]


def test_llamacpp_gives_the_draft_its_own_f16_context():
    # Llama 3.1 8B with the 1B draft on one H100 at 8,192 tokens: the draft's context holds as many
    # cells as the target's, f16: 16 layers x 8 x 64 x 2 x 2 B = 32,768 B a cell x 8,192 = 256 MiB,
    # beside its 2,471,628,800 B of weights; the target's cache is sized as before.
    values = {"model": "meta-llama/Llama-3.1-8B", "draft-model": "meta-llama/Llama-3.2-1B", "gpu": "h100-sxm-80gb",
              "engine": "llama.cpp"}
    e = run(values)
    bare = run({k: v for k, v in values.items() if k != "draft-model"})
    assert e.scenario.model is bare.scenario.model or e.scenario.model == bare.scenario.model
    engine = e.engine
    assert bare.engine.kv_budget_bytes_per_gpu - engine.kv_budget_bytes_per_gpu == 2_471_628_800 + 268_435_456
    assert engine.log[-1] == ("llama_kv_cache: size =  256.00 MiB (  8192 cells,  16 layers,  1/1 seqs), "
                              "K (f16):  128.00 MiB, V (f16):  128.00 MiB")
    f = drafts.figures(e.scenario.serving.draft, e.scenario, e)
    assert (f["draft_kv_bytes_per_token"], f["draft_kv_bytes_per_gpu"]) == (32_768, 268_435_456)
    assert drafts.launch_flags(e.scenario.serving.draft, "llama.cpp") == ["-md", "Llama-3.2-1B.gguf"]


# --- The public vLLM log of an MTP deployment ---------------------------------------------------

MTP_LOG = "vllm-qwen3.6-35b-a3b-nvfp4-dgx-spark-util085-262k-mtp-v0.25.1.log"


def test_qwen3_6_mtp_log_is_reproduced():
    # sostrowsk/dgx-spark-local-llm qwen36.log (SOURCES.md), vLLM 0.25.1, its non-default args
    # print speculative_config {'method': 'mtp', 'num_speculative_tokens': 3}. Qwen3.6-35B-A3B:
    # 30 Gated DeltaNet + 10 full-attention layers; the MTP head adds an 11th full layer, so the
    # groups are 11 layers and the 30 linear ones pad to 33: "Add 3 padding layers, may waste at
    # most 10.00%". The conv state keeps 3 + 3 positions (conv_kernel_size - 1 + num_spec): 6 x
    # 8,192 x 2 B + 32 x 128 x 128 x 4 B = 2,195,456 B, 1,072 tokens of 2,048 B ("Setting attention
    # block size to 1072 tokens"). Each Mamba group keeps 1 + 3 pages a request
    # (num_speculative_blocks), so 245 + 3 x 4 = 257 blocks: 3,300 / 257 x 262,144 = 3,366,051
    # tokens, 12.84x, the log's own figures (74.22 GiB holds 3,299 to 3,300 blocks of 11 layers).
    reading = read_log((FIXTURES / "logs" / MTP_LOG).read_text(encoding="utf-8"))
    printed = reading.printed
    # The reader takes the MTP heads and their tokens from the non-default args line; the model is
    # RedHatAI's NVFP4 checkpoint of Qwen/Qwen3.6-35B-A3B (the preset's shapes).
    assert (reading.values["mtp"], reading.values["spec-tokens"]) == ("on", "3")
    e = run({**reading.values, "model": "Qwen/Qwen3.6-35B-A3B"})
    engine = e.engine
    assert engine.block_size == printed["attention_block_size"].value == 1_072
    low, high = engine.kv_tokens_range
    assert low <= printed["kv_tokens"].value == 3_366_051 <= high
    assert 3_300 * 262_144 // 257 == 3_366_051
    assert f"{float(engine.max_concurrency):.2f}" == "12.84"
    assert "Add 3 padding layers, may waste at most 10.00% KV cache memory" in engine.log
    # The bare model misses all three: 1,056-token blocks, no padding, 3,832,295 tokens.
    without = {k: v for k, v in reading.values.items() if k not in ("mtp", "spec-tokens", "measured-with", "loaded-weights-gib")}
    bare = run({**without, "model": "Qwen/Qwen3.6-35B-A3B"}).engine
    assert bare.block_size == 1_056 and bare.kv_tokens == 3_832_295
    assert not any("padding layers" in line for line in bare.log)


# --- Bad input, one field named each ------------------------------------------------------------

def test_a_draft_with_another_vocabulary_is_refused():
    error = refused({**LLAMA_DRAFT, "draft-model": "Qwen/Qwen3-8B", "engine": "vllm"})
    assert error.field == "draft-model"
    assert "Target and draft model should have the same vocabulary size. Target model vocab_size=128256. " \
           "Draft model vocab_size=151936." in error.message


def test_llamacpp_allows_128_tokens_of_vocabulary_difference():
    # Qwen2.5-7B (152,064) with Qwen3-8B (151,936): 128 apart, within llama.cpp's
    # SPEC_VOCAB_MAX_SIZE_DIFFERENCE; vLLM refuses any difference.
    values = {"model": "Qwen/Qwen2.5-7B", "draft-model": "Qwen/Qwen3-8B", "gpu": "h100-sxm-80gb"}
    assert run({**values, "engine": "llama.cpp"}).scenario.serving.draft.vocab_size == 151_936
    assert refused({**values, "engine": "vllm", "spec-tokens": "3"}).field == "draft-model"
    error = refused({"model": "meta-llama/Llama-3.1-8B", "draft-model": "Qwen/Qwen3-8B", "gpu": "h100-sxm-80gb",
                     "engine": "llama.cpp"})
    assert error.field == "draft-model" and "SPEC_VOCAB_MAX_SIZE_DIFFERENCE" in error.message


@pytest.mark.parametrize("values,field,words", [
    ({"model": "meta-llama/Llama-3.1-8B", "mtp": "on"}, "mtp", "no MTP heads"),
    ({"model": "moonshotai/Kimi-K2-Instruct", "mtp": "on"}, "mtp", "num_nextn_predict_layers = 0"),
    ({"model": "nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-FP8", "mtp": "on"}, "mtp", "not modelled"),
    ({"model": "meta-llama/Llama-3.1-8B", "spec-tokens": "3"}, "spec-tokens", "needs a draft"),
    ({"model": "deepseek-ai/DeepSeek-V3", "mtp": "on", "draft-model": "meta-llama/Llama-3.2-1B"}, "draft-model",
     "not both"),
    ({**LLAMA_DRAFT, "spec-tokens": None, "engine": "vllm"}, "spec-tokens", "num_speculative_tokens"),
    ({**DEEPSEEK_MTP, "gpus": "16", "pp": "2"}, "pp", "pipeline"),
    ({"model": "meta-llama/Llama-3.1-8B", "draft-model": "no-such/model"}, "draft-model", "unknown model"),
])
def test_bad_input_names_the_field(values, field, words):
    error = refused({k: v for k, v in values.items() if v is not None})
    assert error.field == field and words in error.message


# --- What stays as it was -----------------------------------------------------------------------

def test_no_draft_leaves_the_model_and_weights_alone():
    values = {"model": "deepseek-ai/DeepSeek-V3", **H200, "engine": "vllm"}
    e = run(values)
    assert e.scenario.serving.draft is None and e.scenario.deployment.added_weights_bytes_per_gpu == 0
    assert e.scenario.model is presets.preset_model("deepseek-ai/DeepSeek-V3")
    assert run({**values, "mtp": "off"}).result == e.result


def test_the_sizing_model_is_the_same_object_every_edit():
    # The page evaluates on every edit: the model's memos (stages, groups) must carry over.
    first = run({**DEEPSEEK_MTP, "engine": "vllm"}).scenario.model
    again = run({**DEEPSEEK_MTP, "engine": "vllm", "context": "4096"}).scenario.model
    assert first is again


def test_qwen3_5_27b_mtp_head_weights_and_row():
    # tests/fixtures/hf/Qwen__Qwen3.5-27B.json: mtp_num_hidden_layers 1, a full-attention decoder
    # layer (qwen3_5_mtp.py builds it with layer_type "full_attention"): 4 kv heads of 256, so
    # 2 x 4 x 256 x 2 B = 4,096 B per token at tp 1, the target's full layers' row.
    # Its weights, hidden 5,120: q_proj with its output gate 5,120 x 24 x 256 x 2 = 62,914,560,
    # k and v 5,120 x 1,024 each = 10,485,760, o 6,144 x 5,120 = 31,457,280, q/k norms 512, the MLP
    # 3 x 5,120 x 17,408 = 267,386,880, two norms 10,240: 372,255,232 x 2 B = 744,510,464 B; fc
    # (a ColumnParallelLinear, split over tp) 2 x 5,120 x 5,120 x 2 B = 104,857,600 B; three
    # norms 3 x 5,120 x 2 B = 30,720 B on every GPU. At tp 8: 849,368,064 / 8 + 30,720.
    cfg = json.loads((FIXTURES / "hf" / "Qwen__Qwen3.5-27B.json").read_text(encoding="utf-8"))
    e = run({"hf-config": cfg, "mtp": "on", "gpu": "h200-141gb", "gpus": "8", "engine": "vllm"})
    draft = e.scenario.serving.draft
    assert drafts.kv_bytes_per_token(draft, e.scenario.workload.kv_precision, 1) == 4_096
    assert (draft.split_bytes, draft.replicated_bytes) == (744_510_464 + 104_857_600, 30_720)
    assert e.scenario.deployment.added_weights_bytes_per_gpu == 849_368_064 // 8 + 30_720 == 106_201_728
    # vLLM widens the 48 Gated DeltaNet layers' conv state by the spec tokens (1, n_predict).
    assert any("conv state from 3 to 4 positions" in line
               for line in drafts.figures(draft, e.scenario, e)["lines"])
