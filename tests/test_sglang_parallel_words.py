"""SGLang's own parallel vocabulary (issue 34, item 5): `--tp 8 --dp 8 --enable-dp-attention` is 8
GPUs, not 64.

SGLang python/sglang/srt/server_args.py _handle_data_parallelism: with --enable-dp-attention,
`assert self.tp_size % self.dp_size == 0`; layers/dp_attention.py: attn_tp_size = tp_size //
dp_size. So --tp-size counts every GPU of a pipeline stage and dp splits the attention inside
them. vLLM's --tensor-parallel-size 8 --data-parallel-size 8 is 64 GPUs (each DP rank its own tp
group), as our own layout (tp per rank) counts them. The worked figures are test_parallel_layouts'
DeepSeek-V3 on 8 x H200 (264 requests of 8,192 tokens at dp 8, 87 at tp 8).
"""

import pytest

from kvcalc import launch
from kvcalc.engines import REGISTRY
from kvcalc.evaluation import evaluate
from kvcalc.parallel import gpus_given
from kvcalc.startup_log import read_log
from support import FIXTURES, cli
from test_parallel_layouts import deepseek_v3, run

V3 = {"gpu": "h200-141gb", "engine": "sglang", "context": "8192"}


def test_sglang_tp8_dp8_is_eight_gpus_as_sglang_counts_them():
    typed = run(dict(V3, **{"hf-config": deepseek_v3(), "tp": "8", "dp": "8"}))
    dep = typed.scenario.deployment
    # 8 GPUs, 8 ranks of attention tp 8 // 8 = 1: the same deployment as gpus 8, dp 8.
    assert (dep.gpus, dep.tp, dep.dp) == (8, 1, 8)
    same = run(dict(V3, **{"hf-config": deepseek_v3(), "gpus": "8", "dp": "8"}))
    assert typed.result.capacity == same.result.capacity == 264
    assert typed.result.engine.kv_tokens == 275_682
    # With the GPU count typed too (what the issue found refused as "use 64 GPUs").
    with_gpus = run(dict(V3, **{"hf-config": deepseek_v3(), "tp": "8", "dp": "8", "gpus": "8"}))
    assert with_gpus.result.capacity == 264
    # The launch command gives back the user's own words.
    command = launch.launch(typed.scenario, "sglang", typed.result).command
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
