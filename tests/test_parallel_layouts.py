"""Data-parallel attention and expert parallelism (issue 24, parts 3 and 4), as worked examples.

Our layout: tp is the tensor-parallel size inside one data-parallel rank (the attention's), dp the
ranks, GPUs = tp x pp x dp; each rank's cache holds only its own ceil(batch / dp) requests.

Sources (read, not copied):
- SGLang python/sglang/srt/layers/dp_attention.py (attn_tp_size = tp_size // dp_size),
  model_executor/model_runner_kv_cache_mixin.py (get_cell_size_per_token over
  get_attention_tp_size(); profile_max_num_token per rank), server_args.py
  (_handle_data_parallelism: assert tp_size % dp_size == 0, chunked_prefill_size // dp_size;
  _handle_gpu_memory_settings from PR #10975: + cuda_graph_max_bs x dp_size x 3 MiB reserved, and
  x 1.5 more over a graph batch of 300), models/*: VocabParallelEmbedding(enable_tp=not
  is_dp_attention_enabled()), FusedMoE (assert num_experts % moe_ep_size == 0,
  intermediate_size % moe_tp_size == 0).
- vLLM vllm/model_executor/layers/fused_moe/config.py FusedMoEParallelConfig.make
  (flatten_tp_across_dp: experts over tp x dp, by tensor parallel or, with
  --enable-expert-parallel, whole experts; determine_expert_map gives the first E mod ep ranks
  one more); each DP rank is its own engine core with its own KV cache and log lines.
"""

from fractions import Fraction

import pytest

from kvcalc.serving import launch
from kvcalc import parallel
from kvcalc.evaluation import evaluate
from kvcalc.experts import weight_parts
from kvcalc.readers.gpu_presets import gpu
from kvcalc.inputs.scenario import _config_model
from kvcalc.reports.verdict import verdict
from kvcalc.reports.sweep import concurrency_series, memory_series
from support import FIXTURES, hf_fixture

GIB = 1 << 30
MIB = 1 << 20


def full_config(cfg: dict) -> dict:
    """A config.json given whole (hf-config): its tensors by name are read with it, where
    experts.weight_parts finds them (model.shapes)."""
    assert _config_model(cfg)[0].shapes is not None
    return cfg


def deepseek_v3() -> dict:
    return full_config(hf_fixture("deepseek-ai__DeepSeek-V3.json"))


def run(raw: dict):
    evaluation = evaluate(raw)
    assert not evaluation.errors, evaluation.errors
    return evaluation


# --- DeepSeek-V3 on 8 x H200 under SGLang: tp 8 against dp 8 with DP attention -----------------

def test_deepseek_v3_weights_split_by_tensor():
    # The config's FP8 layout (e4m3 weights, one float32 scale per 128 x 128 block; embedding, head
    # and norms in bf16): 673,150,611,808 bytes, of which the routed experts (256 per MoE layer,
    # 58 layers) 654,068,416,512; the MLA attention of 61 layers 11,416,465,248; the embedding
    # 129,280 x 7,168 x 2 B = 1,853,358,080; the rest (3 dense MLPs, shared experts, routers,
    # norms, lm_head) 5,812,371,968.
    evaluation = run({"hf-config": deepseek_v3()})
    weights = evaluation.result.weights_bytes
    parts, why = weight_parts(evaluation.scenario.model, weights)
    assert why is None and weights == 673_150_611_808
    assert (parts.routed, parts.attention, parts.embedding, parts.rest) == \
        (654_068_416_512, 11_416_465_248, 1_853_358_080, 5_812_371_968)
    assert parts.embedding == 129_280 * 7_168 * 2
    assert parts.routed + parts.attention + parts.embedding + parts.rest == weights
    assert (parts.experts, parts.expert_width) == (256, 2048)


def test_deepseek_v3_sglang_tp8_against_dp8_attention_on_h200():
    raw = {"hf-config": deepseek_v3(), "gpu": "h200-141gb", "engine": "sglang", "context": "8192"}
    tp8 = run(dict(raw, gpus="8"))
    dp8 = run(dict(raw, gpus="8", dp="8"))
    h200 = gpu("h200-141gb")
    assert h200.memory_bytes == 143_771 * MIB          # nvidia-smi's 143,771 MiB
    free = h200.torch_memory_bytes - 390 * MIB         # PyTorch's total less SGLang's CUDA context
    assert free == 149_710_899_773

    # tp 8 (--tp-size 8): every weight over 8 GPUs; SGLang 0.5.23's mem_fraction_static =
    # round((143,771 - (512 + 8,192 x 1.5 + 8 x 1 / 8 x 1,024 + 512 x 2 + 1,536 for an MLA backend's
    # prefill graphs)) / 143,771, 3) = round(127,387 / 143,771, 3) = 0.886 (engines/sglang/release.py).
    assert tp8.result.weights_bytes_per_gpu == 673_150_611_808 // 8 == 84_143_826_476
    # Its communicators hold 1.96 GiB a GPU before the base is measured (8 x H200, sglang#11716):
    # the pool loses 0.886 x 2,104,533,975 B = 1,864,617,101 B of them.
    assert tp8.engine.overhead_bytes_per_gpu == int(2_104_533_975 * Fraction("0.886")) == 1_864_617_101
    # Its load takes more than the tensors (engines/sglang/engine.py loaded_weights): the modules every
    # rank holds whole (MLA's q_a_proj and kv_a_proj_with_mqa, the routers, the norms: 996,304,372 B,
    # readers/quantized_bytes.replicated_bytes), MLA's absorbed w_kc and w_vc, a bf16 copy of each
    # rank's kv_b_proj, 61 x 512 x 16 heads x 256 x 2 B = 255,852,544 B (deepseek_v2.py
    # post_load_weights), and the 0.11 GiB the load leaves outside PyTorch (118,111,600 B).
    pool = int(free * Fraction("0.886")) - 84_143_826_476 - 996_304_372 - 255_852_544 - 118_111_600 - 1_864_617_101
    assert pool == 45_265_145_105 == tp8.engine.kv_budget_bytes_per_gpu
    # The MLA latent, 61 x (512 + 64) x 2 B = 70,272 B a token, replicated on all 8 GPUs.
    assert tp8.engine.kv_tokens == pool // 70_272 == 644_141
    assert tp8.capacity == 644_141 // 8192 == 78

    # dp 8 (--tp-size 8 --dp-size 8 --enable-dp-attention): attn_tp_size 1. Weights per GPU as
    # SGLang places them: attention and embedding whole, the rest and the experts over 8:
    sglang_weights = 11_416_465_248 + 1_853_358_080 + 5_812_371_968 // 8 + 654_068_416_512 // 8
    assert sglang_weights == 95_754_921_888
    # The deployment is SGLang's DP attention, so the exact ideal beside it places them as SGLang
    # does (vLLM's ranks would keep the rest whole: (W - X) + X / 8 = 100,840,747,360).
    assert dp8.result.weights_bytes_per_gpu == sglang_weights
    # mem_fraction_static: + 512 x 8 x 3 + 512 x 8 x 1.5 MiB for DP attention (graph batch 512 > 300),
    # no prefill graphs under DP attention: round((143,771 - 33,280) / 143,771, 3) = 0.769.
    assert any("0.769" in note for note in dp8.engine.notes)
    # DP attention's communicators: 2.38 GiB a GPU (8 x B200, sglang#5390), 0.769 of it lost.
    assert dp8.engine.overhead_bytes_per_gpu == int(2_555_505_541 * Fraction("0.769")) == 1_965_183_761
    # The absorbed w_kc and w_vc at attn_tp_size 1 hold all 128 heads: 61 x 512 x 128 x 256 x 2 B =
    # 2,046,820,352 B a GPU (1.91 GiB), and the load's 118,111,600 B.
    pool = int(free * Fraction("0.769")) - sglang_weights - 2_046_820_352 - 118_111_600 - 1_965_183_761
    assert pool == 15_242_644_324 == dp8.engine.kv_budget_bytes_per_gpu
    # Each rank's pool holds its own requests' latents: 216,909 tokens a rank, printed by each.
    assert dp8.engine.kv_tokens == pool // 70_272 == 216_909
    assert "KV Cache is allocated. #tokens: 216909, KV size: 14.20 GB" in dp8.engine.log
    # Requests of 8,192 tokens in total: 26 a rank x 8 ranks = 208, about two and a half times tp 8's 78.
    assert dp8.engine.max_concurrency == Fraction(216_909, 8192)
    assert dp8.capacity == 26 * 8 == 208


def test_deepseek_v3_sglang_dp8_launch_command():
    raw = {"hf-config": deepseek_v3(), "gpu": "h200-141gb", "engine": "sglang", "context": "8192", "gpus": "8",
           "dp": "8", "ep": "on"}
    evaluation = run(raw)
    command = launch.launch(evaluation.scenario, "sglang", evaluation).command
    assert "--tp-size 8 --pp-size 1 --dp-size 8 --enable-dp-attention --ep-size 8" in command
    # --max-running-requests is the deployment's (SGLang divides it by dp_size): 26 a rank x 8.
    assert "--max-running-requests 208" in command
    # --max-total-tokens is each rank's pool.
    assert "--max-total-tokens 216909" in command


# --- Qwen3-235B-A22B under vLLM: dp 2 x tp 4 with expert parallelism ----------------------------

def test_qwen3_235b_vllm_dp2_tp4_expert_parallel():
    # Weights: 235B at bf16 = 470,000,000,000 B (a rounded count); the routed experts' tensors
    # 227,096,395,776 parameters x 2 B = 454,192,791,552 B.
    raw = {"model": "Qwen/Qwen3-235B-A22B", "engine": "vllm", "context": "32768", "kv-memory-gib": "20",
           "batch": "26"}
    dp2 = run(dict(raw, gpus="8", dp="2", ep="on"))
    tp8 = run(dict(raw, gpus="8"))
    # tp 8: 470e9 / 8. dp 2 x tp 4 with EP over 8: (W - X) / 4 + X / 8 (128 experts, 16 a GPU).
    assert tp8.result.weights_bytes_per_gpu == 58_750_000_000
    assert dp2.result.weights_bytes_per_gpu == (470_000_000_000 - 454_192_791_552) // 4 + 454_192_791_552 // 8 \
        == 60_725_901_056
    # KV on a GPU: 4 kv heads over tp 4 (and over tp 8: max(1, 4 // 8) = 1, replicated): one head,
    # 94 layers x 2 x 128 x 2 B = 48,128 B a token; a block of 16 tokens 770,048 B over all layers.
    # 20 GiB a GPU: 21,474,836,480 // 770,048 = 27,887 blocks; a request at 32,768 takes 2,048.
    for evaluation in (dp2, tp8):
        engine = evaluation.engine
        assert engine.max_concurrency == Fraction(27_887, 2048)
        assert "GPU KV cache size: 446,192 tokens" in engine.log           # 27,887 x 16, each rank's
        assert "Maximum concurrency for 32,768 tokens per request: 13.62x" in engine.log
    # 13 requests a rank: tp 8 is one rank (13 in all), dp 2 two (26 in all, the batch asked for).
    assert tp8.capacity == 13 and dp2.capacity == 26
    assert dp2.result.rank_batch == 13
    assert verdict(dp2.scenario, dp2).fits is True
    assert verdict(tp8.scenario, tp8).fits is False
    command = launch.launch(dp2.scenario, "vllm", dp2).command
    assert "--tensor-parallel-size 4 --pipeline-parallel-size 1 --data-parallel-size 2 --enable-expert-parallel" \
        in command
    assert "--max-num-seqs 13" in command          # each engine core's: ceil(26 / 2)


def test_vllm_expert_parallel_gives_the_first_ranks_one_expert_more():
    # determine_expert_map: 128 experts over an EP group of 3 -> 43, 43, 42; the busiest GPU holds
    # 43 / 128 of the routed experts, and the rest whole (tp 1 a rank).
    evaluation = run({"model": "Qwen/Qwen3-235B-A22B", "gpus": "3", "dp": "3", "ep": "on", "engine": "vllm",
                      "kv-memory-gib": "1"})
    x = 454_192_791_552
    assert evaluation.result.weights_bytes_per_gpu == 470_000_000_000 - x + -(-x * 43 // 128)


def test_exact_ideal_follows_the_ranks():
    # Qwen3-235B-A22B on 8 x H200, dp 2 x tp 4: each rank's GPUs hold only their rank's 8 of 16
    # requests; the total counts every rank.
    evaluation = run({"model": "Qwen/Qwen3-235B-A22B", "gpus": "8", "dp": "2", "gpu": "h200-141gb",
                      "context": "32768", "batch": "16"})
    result = evaluation.result
    per_request = 94 * 2 * 4 * 128 * 2 * 32768               # 4 kv heads, all GPUs of a rank together
    assert result.kv_bytes_per_request == per_request
    assert result.kv_bytes_per_gpu == 8 * per_request // 4  # 8 requests, one kv head a GPU
    assert result.kv_bytes_total == 16 * per_request
    assert result.kv_bytes_all_gpus == 4 * 16 * per_request // 4
    budget = int(gpu("h200-141gb").memory_bytes) - result.weights_bytes_per_gpu
    assert result.max_concurrency == budget // (per_request // 4) * 2
    # The decode step reads the rank's 8 requests' cache and, of the experts, what 16 tokens touch.
    timing = evaluation.timing
    assert timing.decode_flops * 2 == run({"model": "Qwen/Qwen3-235B-A22B", "gpus": "8", "gpu": "h200-141gb",
                                           "context": "32768", "batch": "16"}).timing.decode_flops


# --- The SGLang DP-attention log (PR #11309) ------------------------------------------------------

def test_sglang_deepseek_v32_dp8_log_per_rank_pool():
    # sglang-deepseek-v32-exp-mla-tp8-dp8.log: --tp 8 --dp 8 --enable-dp-attention, "[DP0 TP0] KV
    # Cache is allocated. #tokens: 975424, KV size: 43.67 GB": each rank's pool (attn_tp_size 1),
    # 788 B a token a layer in fp8 (the latent and the indexer key), pages of 64.
    text = (FIXTURES / "logs" / "sglang-deepseek-v32-exp-mla-tp8-dp8.log").read_text()
    assert "--tp 8 --dp 8 --enable-dp-attention" in text and "#tokens: 975424, KV size: 43.67 GB" in text
    cfg = full_config(dict(hf_fixture("deepseek-ai__DeepSeek-V3.json"), model_type="deepseek_v32",
                           index_head_dim=128))
    evaluation = run({"hf-config": cfg, "gpus": "8", "dp": "8", "engine": "sglang", "kv-dtype": "fp8",
                      "block-size": "64", "kv-memory-gib": "43.67", "context": "8192"})
    assert evaluation.scenario.deployment.tp == 1          # attn_tp_size = 8 // 8
    low, high = evaluation.engine.kv_tokens_range
    assert low <= 975_424 <= high


# --- Refusals ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("raw, field, words", [
    ({"model": "Qwen/Qwen3-8B", "engine": "llama.cpp", "gpus": "2", "dp": "2", "gpu": "h100-sxm-80gb"},
     "dp", "llama.cpp has no data parallelism"),
    ({"model": "Qwen/Qwen3-30B-A3B", "engine": "llama.cpp", "ep": "on", "gpu": "h100-sxm-80gb"},
     "ep", "llama.cpp has no expert parallelism"),
    ({"model": "meta-llama/Llama-3.1-8B", "ep": "on", "gpus": "2"}, "ep", "no routed experts"),
    # 128 experts do not split whole over an EP group of 3 in SGLang (FusedMoE asserts it).
    ({"model": "Qwen/Qwen3-235B-A22B", "engine": "sglang", "gpus": "3", "dp": "3", "ep": "on",
      "kv-memory-gib": "1"}, "ep", "must divide the model's 128 routed experts"),
    # Without EP each expert's width 1,536 is sliced over tp x dp = 5: it does not divide.
    ({"model": "Qwen/Qwen3-235B-A22B", "engine": "vllm", "gpus": "5", "dp": "5", "kv-memory-gib": "1"},
     "dp", "moe_intermediate_size 1,536"),
    ({"model": "Qwen/Qwen3-235B-A22B", "gpus": "5", "dp": "5"}, "dp", "moe_intermediate_size 1,536"),
    # Attention heads (64) must divide by the attention tp (3 a rank).
    ({"model": "Qwen/Qwen3-235B-A22B", "engine": "sglang", "gpus": "6", "dp": "2", "kv-memory-gib": "1"},
     "tp", "does not divide the model's 64 attention heads"),
    # Jamba's routed experts' share is not read from its config: its weights cannot be split by rank.
    # (DeepSeek-R1 was this case until its published config gave it V3's experts, issue 34.)
    ({"model": "ai21labs/Jamba-v0.1", "gpus": "8", "dp": "8"}, "dp", "the weights per GPU are not known"),
])
def test_refusals_name_the_field(raw, field, words):
    evaluation = evaluate(raw)
    assert evaluation.errors, "expected a refusal"
    error = evaluation.errors[0]
    assert error.field == field and words in error.message, (error.field, error.message)


def test_llamacpp_launch_says_why_there_is_no_command_for_dp():
    evaluation = run({"model": "Qwen/Qwen3-8B", "gpus": "2", "dp": "2", "gpu": "h100-sxm-80gb"})
    out = launch.launch(evaluation.scenario, "llama.cpp", evaluation)
    assert out.command is None and "no data parallelism" in out.notes[0]


def test_dp1_figures_are_unchanged_by_the_layout():
    # dp 1 without EP is the layout before this change: the same weights per GPU and capacity.
    raw = {"model": "Qwen/Qwen3-235B-A22B", "gpus": "8", "gpu": "h200-141gb", "context": "32768"}
    plain, explicit = run(raw), run(dict(raw, dp="1", ep="off"))
    assert plain.result == explicit.result
    assert plain.result.weights_bytes_per_gpu == 470_000_000_000 // 8
    assert parallel.rank_batch(17, 4) == 5 and parallel.ranks_serving(3, 8) == 3


def test_decode_under_dp_reads_the_rank_copy_and_the_experts_the_batch_touches():
    # DeepSeek-V3 dp 8 on H200, 64 requests (8 a rank): each GPU reads its whole copy of the
    # non-expert weights, W - X = 19,082,195,296 B, and of its eighth of the routed experts those
    # the 64 tokens of all ranks are expected to touch, 1 - (1 - 8/256)^64 of them (experts.py).
    evaluation = run({"hf-config": deepseek_v3(), "gpus": "8", "dp": "8", "gpu": "h200-141gb", "context": "8192",
                      "batch": "64"})
    timing, x = evaluation.timing, 654_068_416_512
    touched = x * (1 - Fraction(248, 256) ** 64) / 8
    expected = (673_150_611_808 - x) + touched
    assert timing.decode_weights_bytes_per_gpu == -(-expected.numerator // expected.denominator)
    assert timing.all_weights_bytes_per_gpu == evaluation.result.weights_bytes_per_gpu == 100_840_747_360
    assert timing.decode_weights_bytes_per_gpu < timing.all_weights_bytes_per_gpu
    # The rank's cache: 8 requests of 8,192 tokens, one latent each, 70,272 B a token.
    assert evaluation.result.kv_bytes_per_gpu == 8 * 8192 * 70_272


def test_longest_context_under_dp_is_what_one_rank_holds_for_its_share():
    # Same deployment: 27,887 blocks of 16 a rank. 26 requests are 13 a rank, so the longest
    # context is the one 13 requests fill: 13 x ceil(C / 16) <= 27,887 blocks, C = 16 x 2,145
    # = 34,320 tokens; tp 8 (one rank) must hold all 26: 16 x 1,072 = 17,152.
    raw = {"model": "Qwen/Qwen3-235B-A22B", "engine": "vllm", "context": "32768", "kv-memory-gib": "20",
           "batch": "26"}
    assert run(dict(raw, gpus="8", dp="2", ep="on")).engine.max_context == 16 * (27_887 // 13) == 34_320
    assert run(dict(raw, gpus="8")).engine.max_context == 16 * (27_887 // 26) == 17_152


def test_charts_count_every_rank():
    raw = {"model": "Qwen/Qwen3-235B-A22B", "engine": "vllm", "context": "32768", "kv-memory-gib": "20",
           "batch": "26", "gpus": "8", "dp": "2", "ep": "on"}
    e = run(raw)
    series = concurrency_series(e.scenario, [32768], e.result)
    current = next(line for line in series["lines"] if line["current"])
    assert current["requests"] == [26]                 # 13 a rank, as the headline's capacity
    memory = memory_series(e.scenario, [32768], e.result)
    assert memory["weights_bytes_per_gpu"] == 60_725_901_056
    own = next(line for line in memory["lines"] if line["current"])
    assert own["bytes"] == [13 * 2048 * 770_048]       # the rank's 13 requests' blocks on a GPU


def test_the_deepseek_v3_preset_splits_by_rank_as_its_config_does():
    # The preset now carries the real config.json (its experts' shapes): picking it, not pasting
    # the file, gives the worked figures above: 644,141 tokens and 78 requests at tp 8, 216,909 a
    # rank and 26 x 8 = 208 requests at dp 8 with attention DP.
    raw = {"model": "deepseek-ai/DeepSeek-V3", "gpus": "8", "gpu": "h200-141gb", "engine": "sglang",
           "context": "8192"}
    tp8, dp8 = run(raw), run(dict(raw, dp="8"))
    assert (tp8.engine.kv_tokens, tp8.capacity) == (644_141, 78)
    assert (dp8.engine.kv_tokens, dp8.capacity) == (216_909, 208)
