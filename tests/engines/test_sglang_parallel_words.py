"""SGLang's own parallel vocabulary (issue 34, item 5): `--tp 8 --dp 8 --enable-dp-attention` is 8
GPUs, not 64.

SGLang python/sglang/srt/server_args.py _handle_data_parallelism: with --enable-dp-attention,
`assert self.tp_size % self.dp_size == 0`; layers/dp_attention.py: attn_tp_size = tp_size //
dp_size. So --tp-size counts every GPU of a pipeline stage and dp splits the attention inside
them. vLLM's --tensor-parallel-size 8 --data-parallel-size 8 is 64 GPUs (each DP rank its own tp
group), as our own layout (tp per rank) counts them. The worked figures are test_parallel_layouts'
DeepSeek-V3 on 8 x H200 (240 requests of 8,192 tokens at dp 8, 81 at tp 8).
"""

import pytest

from kvcalc.serving import launch
from kvcalc.engines import REGISTRY
from kvcalc.evaluation import evaluate
from kvcalc.parallel import gpus_given
from kvcalc.inputs.startup_log import read_log
from support import FIXTURES, cli
from test_parallel_layouts import deepseek_v3, run

V3 = {"gpu": "h200-141gb", "engine": "sglang", "context": "8192"}


def test_sglang_tp8_dp8_is_eight_gpus_as_sglang_counts_them():
    typed = run(dict(V3, **{"hf-config": deepseek_v3(), "tp": "8", "dp": "8"}))
    dep = typed.scenario.deployment
    # 8 GPUs, 8 ranks of attention tp 8 // 8 = 1: the same deployment as gpus 8, dp 8.
    assert (dep.gpus, dep.tp, dep.dp) == (8, 1, 8)
    same = run(dict(V3, **{"hf-config": deepseek_v3(), "gpus": "8", "dp": "8"}))
    assert typed.capacity == same.capacity == 208
    assert typed.engine.kv_tokens == 216_909
    # With the GPU count typed too (what the issue found refused as "use 64 GPUs").
    with_gpus = run(dict(V3, **{"hf-config": deepseek_v3(), "tp": "8", "dp": "8", "gpus": "8"}))
    assert with_gpus.capacity == 208
    # The launch command gives back the user's own words.
    command = launch.launch(typed.scenario, "sglang", typed).command
    assert "--tp-size 8 --pp-size 1 --dp-size 8 --enable-dp-attention" in command


def test_vllm_tp8_dp8_stays_sixty_four_gpus():
    # vLLM's DP ranks are whole tp groups: --tensor-parallel-size 8 --data-parallel-size 8 = 64 GPUs.
    raw = {"model": "deepseek-ai/DeepSeek-V3", "gpu": "h200-141gb", "engine": "vllm", "tp": "8", "dp": "8",
           "kv-memory-gib": "20"}
    dep = run(raw).scenario.deployment
    assert (dep.gpus, dep.tp, dep.dp) == (64, 8, 8)
    assert gpus_given(8, 1, 8, REGISTRY["vllm"]) == 64 and gpus_given(8, 1, 8, REGISTRY["sglang"]) == 8
    assert gpus_given(8, 2, 4, REGISTRY["sglang"]) == 16          # --tp-size 8 --pp-size 2: 8 GPUs a stage
    assert gpus_given(8, 1, 8, None) == 64                        # the exact ideal: our own words


def test_a_layout_in_our_words_is_still_read_as_such():
    # gpus = tp x pp x dp typed together (the planner's rows, a log's reading): tp is the
    # attention's, --tp-size 64 over 64 GPUs.
    dep = run(dict(V3, **{"hf-config": deepseek_v3(), "tp": "8", "dp": "8", "gpus": "64"})).scenario.deployment
    assert (dep.gpus, dep.tp, dep.dp) == (64, 8, 8)


@pytest.mark.parametrize("extra, field, words", [
    # server_args.py asserts tp_size % dp_size == 0.
    ({"tp": "4", "dp": "8"}, "tp", "tp 4 is not a multiple of dp 8; give tp 8, 16, 32, 64"),
    ({"tp": "8", "dp": "8", "gpus": "16"}, "gpus", "tp x pp = 8 GPUs, 8 ranks of attention tp 1; give gpus 8"),
])
def test_sglang_layouts_it_refuses_name_the_field(extra, field, words):
    evaluation = evaluate(dict(V3, model="deepseek-ai/DeepSeek-V3", **extra))
    assert [e.field for e in evaluation.errors] == [field]
    assert words in evaluation.errors[0].message
    code, _, err = cli("--model", "deepseek-ai/DeepSeek-V3", "--gpu", "h200-141gb", "--engine", "sglang",
                       *[a for k, v in extra.items() for a in (f"--{k}", v)])
    assert code != 0 and err.count("\n") == 1 and f"--{field}" in err


def test_the_dp_attention_log_reads_into_the_same_deployment():
    # sglang-deepseek-v32-exp-mla-tp8-dp8.log, SGLang PR #11309: "--tp 8 --dp 8
    # --enable-dp-attention". The reader writes the layout in our words (tp 1, dp 8, gpus 8); typed
    # in SGLang's (tp 8, dp 8) it is the same 8 GPUs.
    lines = (FIXTURES / "logs" / "sglang-deepseek-v32-exp-mla-tp8-dp8.log").read_text().split("\n")
    reading = read_log("\n".join(lines[:5]) + "\n")
    read = {k: reading.values[k] for k in ("tp", "dp", "gpus")}
    assert read == {"tp": "1", "dp": "8", "gpus": "8"}
    from_log = run(dict(V3, **{"hf-config": deepseek_v3()}, **read)).scenario.deployment
    typed = run(dict(V3, **{"hf-config": deepseek_v3(), "tp": "8", "dp": "8"})).scenario.deployment
    assert (from_log.gpus, from_log.tp, from_log.dp) == (typed.gpus, typed.tp, typed.dp) == (8, 1, 8)


# --- What each GPU holds under DP attention (the reviewer's defect: a dense model at tp 8 dp 8) ---
# SGLang with --enable-dp-attention runs only the attention data-parallel: each rank's attention
# over attn_tp_size = tp_size // dp_size GPUs, its KV pool holding only its own requests; the MLP /
# MoE layers and the head stay tensor-parallel over all tp_size GPUs, the input embedding whole
# (layers/dp_attention.py; models/deepseek_v2.py VocabParallelEmbedding(enable_tp=not
# is_dp_attention_enabled()); Llama's attention on the attn-tp group since sgl-project/sglang#15268).
# The deployment carries it, so the verdict, the table, the engine notes, the attention table and
# the JSON all read the same weights per GPU.

LLAMA = {"model": "meta-llama/Llama-3.1-70B", "gpu": "h100-sxm-80gb", "engine": "sglang", "tp": "8", "dp": "8"}


def test_llama_70b_tp8_dp8_weights_per_gpu_as_sglang_places_them():
    from fractions import Fraction
    from kvcalc.reports import report
    from kvcalc.reports.compare import attention_variants
    evaluation = evaluate(LLAMA)
    assert evaluation.errors == ()
    scenario, result = evaluation.scenario, evaluation.result
    # Llama 3.1 70B, bf16: per layer q 8,192 x 8,192 + k, v 8,192 x 1,024 + o 8,192 x 8,192 =
    # 150,994,944 parameters, x 80 layers x 2 B = 24,159,191,040 B of attention (on its rank's one
    # GPU); the embedding 128,256 x 8,192 x 2 B = 2,101,346,304 B whole; over all 8: the MLPs
    # 3 x 8,192 x 28,672 x 80 x 2 B = 112,742,891,520 B, the head 2,101,346,304 B and the norms
    # (2 x 80 + 1) x 8,192 x 2 B = 2,637,824 B.
    assert 24_159_191_040 + 2_101_346_304 * 2 + 112_742_891_520 + 2_637_824 == scenario.deployment.weights_bytes
    per_gpu = 24_159_191_040 + 2_101_346_304 + (112_742_891_520 + 2_101_346_304 + 2_637_824) // 8
    assert per_gpu == 40_616_396_800                       # 37.83 GiB on an 80 GB card, not 131.42
    assert result.weights_bytes_per_gpu == per_gpu
    # The pool: mem_fraction_static 0.592 = round((81,559 - 33,280) / 81,559, 3) (33,280 MiB reserved
    # as test_parallel_layouts works it for DP attention) of the memory free after its 390 MiB context,
    # less 0.592 x the 2.38 GiB DP attention's communicators hold (sglang#5390's DP0 TP0).
    free = scenario.deployment.torch_memory_bytes - 390 * 2**20
    assert evaluation.engine.overhead_bytes_per_gpu == int(2_555_505_541 * Fraction("0.592")) == 1_512_859_280
    # Its load takes more than the tensors (engine.loaded_weights): the rotary cache's 131,072 x 128
    # x 2 B = 33,554,432 B and the 0.11 GiB the load leaves outside PyTorch, 118,111,600 B.
    pool = int(free * Fraction("0.592")) - per_gpu - 33_554_432 - 118_111_600 - 1_512_859_280
    assert pool == 7_833_584_420 == evaluation.engine.kv_budget_bytes_per_gpu
    # A rank's cell at attention tp 1: 80 layers x 2 x 8 kv heads x 128 x 2 B = 327,680 B a token.
    assert evaluation.engine.kv_tokens == pool // 327_680 == 23_906
    assert evaluation.engine.max_concurrency == Fraction(23_906, 8192)              # 2.92 a rank
    assert evaluation.capacity == 2 * 8 == 16
    # The exact ideal on the same GPUs: 85,520,809,984 B - 40,616,396,800 B holds 16 requests of
    # 2,684,354,560 B a rank, 128 in all (it said 0 when it kept 131.42 GiB a GPU).
    assert (85_520_809_984 - per_gpu) // 2_684_354_560 == 16 and result.max_concurrency == 16 * 8
    table = report.table(evaluation)
    assert "Weights per GPU                                                      40,616,396,800 B" in table
    assert "The exact ideal fits 128 requests of 8,192 tokens; SGLang 2.92 on each of its 8 data-parallel " \
           "ranks (23.35 in all)." in table
    assert "KV per GPU (1 request a rank; attention tp=1, pp=1, dp attention=8)" in table
    # The summary in SGLang's words, as the tp field shows it; the JSON too.
    assert "(tp 8 (attention tp 1), pp 1, dp attention 8)" in report.conditions(scenario, evaluation)
    data = report.to_json(scenario, evaluation)
    assert (data["tp"], data["dp"], data["attention_tp"], data["gpus"]) == (8, 8, 1, 8)
    assert data["weights_bytes_per_gpu"] == per_gpu
    # A dense model's decode step reads every weight a GPU holds, no more.
    assert data["decode_weights_bytes_per_gpu"] == per_gpu
    # The attention table holds the model's weights fixed: every design at the same 40,616,396,800 B.
    rows = attention_variants(scenario)
    assert [(r.label, r.refused, r.evaluation.result.weights_bytes_per_gpu) for r in rows] == [
        (label, None, per_gpu) for label in ("MHA", "GQA", "MQA", "MLA")]
    assert [r.evaluation.capacity for r in rows if r.label == "GQA"] == [16]


def test_deepseek_v3_tp8_dp8_on_h100_does_not_fit_anywhere_it_is_said():
    from kvcalc.reports import report
    from kvcalc.reports.compare import attention_variants
    evaluation = evaluate(dict(LLAMA, model="deepseek-ai/DeepSeek-V3"))
    result = evaluation.result
    # test_parallel_layouts' split: attention 11,416,465,248 B and embedding 1,853,358,080 B whole,
    # the rest 5,812,371,968 B and the routed experts 654,068,416,512 B over 8: 95,754,921,888 B,
    # more than an H100's 85,520,809,984 B.
    assert result.weights_bytes_per_gpu == 95_754_921_888 > 85_520_809_984
    assert not evaluation.engine.starts and result.max_concurrency == 0 and evaluation.capacity == 0
    assert report.verdict(evaluation.scenario, evaluation, "gib").sentence.startswith("Does not fit")
    assert all(r.evaluation.result.weights_bytes_per_gpu == 95_754_921_888 and r.evaluation.capacity == 0
               for r in attention_variants(evaluation.scenario))


def test_deepseek_v3_tp8_dp8_on_h200_decode_reads_the_experts_it_touches():
    from kvcalc.reports import report
    evaluation = evaluate(dict(LLAMA, model="deepseek-ai/DeepSeek-V3", gpu="h200-141gb"))
    data = report.to_json(evaluation.scenario, evaluation)
    assert data["weights_bytes_per_gpu"] == 95_754_921_888 and data["max_concurrency"] == 208
    # One request's token touches 8 of the 256 routed experts: of each GPU's 654,068,416,512 / 8 =
    # 81,758,552,064 B of them, (248 / 256) = 31 / 32 stay unread: 95,754,921,888 - 79,203,597,312.
    assert 654_068_416_512 // 8 * 31 // 32 == 79_203_597_312
    assert data["decode_weights_bytes_per_gpu"] == 95_754_921_888 - 79_203_597_312 == 16_551_324_576


def test_the_exact_ideal_and_vllm_keep_their_own_ranks():
    # Without SGLang the ranks are whole replicas of everything but the routed experts:
    # (W - X) + X / 8 on 8 GPUs at dp 8; vLLM's tp 8 dp 8 is 64 GPUs, (W - X) / 8 + X / 64.
    raw = {"model": "deepseek-ai/DeepSeek-V3", "gpu": "h200-141gb"}
    exact = evaluate(dict(raw, gpus="8", dp="8"))
    assert not exact.scenario.deployment.dp_attention
    assert exact.result.weights_bytes_per_gpu == 673_150_611_808 - 654_068_416_512 + 654_068_416_512 // 8
    vllm = evaluate(dict(raw, engine="vllm", tp="8", dp="8"))
    assert not vllm.scenario.deployment.dp_attention
    assert vllm.result.weights_bytes_per_gpu == -(-(19_082_195_296 * 8 + 654_068_416_512) // 64) == 12_605_093_420
