"""Failed starts read from real logs (tests/fixtures/logs/failed/*/SOURCES.md names each
thread), and the fixes the engine computes for them.

Each row: the fixture, the engine, the kind of failure, its phase where one ran out, and the
figures the engine printed (GiB as printed, counts exact)."""

import json
from fractions import Fraction
from pathlib import Path

import pytest

from kvcalc.cli import run
from kvcalc.errors import InputError
from kvcalc.evaluation import evaluate
from kvcalc.inputs import failed_start
from kvcalc.inputs.startup_log import read_log
from kvcalc.reports import fixes

FAILED = Path(__file__).resolve().parents[1] / "fixtures" / "logs" / "failed"
LOGS = FAILED.parent

CORPUS = [
    # vLLM, the V0 check: max seq len against the tokens its blocks hold.
    ("vllm/kind1_rtx3090_llama31-8b_maxlen29000.log", "vllm", "kv-short", None, {"context": 29000, "kv_tokens": 23648}),
    ("vllm/kind1_rtx3090_qwen15-7b-gptq_32768.log", "vllm", "kv-short", None, {"context": 32768, "kv_tokens": 24320}),
    ("vllm/kind1_v100s-32g_qwen14b-lora_4096.log", "vllm", "kv-short", None, {"context": 4096, "kv_tokens": 1216}),
    # V1's: the GiB one request needs against the KV memory (0.8.2 wrote GiB as "GB").
    ("vllm/kind2_8x-rtx4090_vllm082_maxlen116160.log", "vllm", "kv-short", None,
     {"context": 116160, "needed_gib": Fraction("4.43"), "kv_memory_gib": Fraction("3.48"), "short_gib": Fraction("0.95")}),
    ("vllm/kind2_fp8-kvcache_maxlen221000.log", "vllm", "kv-short", None,
     {"context": 221000, "estimated_max_len": 122080, "short_gib": Fraction("4.53")}),
    ("vllm/kind2_h20x8-dp8_qwen3-coder-480b-fp8_util-default.log", "vllm", "kv-short", None,
     {"needed_gib": 62, "kv_memory_gib": Fraction("48.66"), "estimated_max_len": 205728}),
    ("vllm/kind2_h20x8-dp8_qwen3-coder-480b-fp8_util0.95.log", "vllm", "kv-short", None,
     {"kv_memory_gib": Fraction("55.65"), "estimated_max_len": 235296}),
    ("vllm/kind2_qwen3-vl-instruct_xinference_262144.log", "vllm", "kv-short", None, {"estimated_max_len": 50512}),
    # A message without its parentheses around the GiB needed.
    ("vllm/kind2_rtx3090_club3090-long-text_180000.log", "vllm", "kv-short", None,
     {"context": 180000, "estimated_max_len": 111456, "short_gib": Fraction("0.88")}),
    ("vllm/kind3_docker_qwen25-0.5b_vllm064post1_util0.4.log", "vllm", "no-kv-memory", None, {}),
    ("vllm/kind3_rtx3090_qanything-qwen7b_gpublocks0.log", "vllm", "no-kv-memory", None, {}),
    # No error line: "the rest of the memory reserved for KV Cache is -1.05GiB" is the refusal.
    ("vllm/kind3_rtx4060-8g_qwen25-7b_negative-kv.log", "vllm", "no-kv-memory", None, {"short_gib": Fraction("1.05")}),
    ("vllm/kind4_2xh100_nemotron-120b_maxnumseqs1024.log", "vllm", "state-blocks", None, {"batch": 1024, "blocks": 524}),
    ("vllm/kind4_h100_qwen36-27b-fp8_maxnumseqs1024.log", "vllm", "state-blocks", None, {"batch": 1024, "blocks": 856}),
    ("vllm/kind4_h100_qwen38-27b_maxlen132000_maxnumseqs1024.log", "vllm", "state-blocks", None, {"blocks": 969}),
    ("vllm/kind4_l40s_qwen35-4b-w4a16-lora_maxnumseqs256.log", "vllm", "state-blocks", None, {"batch": 256, "blocks": 243}),
    ("vllm/kind4_rtxpro6000_qwen38-27b-fp8_maxnumseqs1024.log", "vllm", "state-blocks", None, {"blocks": 939}),
    # Torch's words: 150 MiB tried, 39 MiB free of 21.99 GiB.
    ("vllm/kind5_4xa10_qwen3-30b-a3b_torch-oom.log", "vllm", "out-of-memory", None,
     {"tried_gib": Fraction(150, 1024), "total_gib": Fraction("21.99")}),
    # After "Graph capturing finished", in flashinfer's sampling: the sampler's warm-up.
    ("vllm/kind5_4xrtx4090_qwen3-30b-a3b_vllm0110_sampler-oom.log", "vllm", "out-of-memory", "sampler",
     {"tried_gib": Fraction(150, 1024), "free_gib": Fraction("11.69") / 1024}),
    # Its message wrapped over three lines.
    ("vllm/kind5_tp2_qwen3-32b_vllm0110_sampler-warmup.log", "vllm", "out-of-memory", "sampler", {"batch": 1024}),
    ("vllm/kind6_140g-gpu_mixtral-8x7b-fp8_util0.9.log", "vllm", "free-memory", None,
     {"free_gib": Fraction("7.34"), "total_gib": Fraction("139.72"), "utilization": Fraction("0.9")}),
    ("vllm/kind6_2xa100-80g_qwen3-omni-30b_vllm-omni_util0.6.log", "vllm", "free-memory", None,
     {"free_gib": Fraction("0.49"), "total_gib": Fraction("79.32")}),
    ("vllm/kind6_48g-gpu_vllm091_docker_util0.95.log", "vllm", "free-memory", None,
     {"free_gib": Fraction("31.44"), "wanted_gib": Fraction("45.01"), "short_gib": Fraction("13.57")}),
    ("vllm/kind6_a100-80g_2x-llama31-8b_kvcached_util0.9.log", "vllm", "free-memory", None,
     {"free_gib": Fraction("67.24"), "total_gib": Fraction("79.25")}),
    ("sglang/deepseek-r1-rocm-dp8-negative-profiled-tokens.log", "sglang", "pool-short", None, {"pool_tokens": -561981}),
    ("sglang/h20-2node-deepep-low-latency-cuda-graph-oom.log", "sglang", "out-of-memory", "graphs",
     {"tried_gib": Fraction(448, 1024)}),
    ("sglang/qwen3-8b-ascend910b2-gpustack-not-enough-memory.log", "sglang", "pool-short", None,
     {"utilization": Fraction("0.2")}),
    ("llamacpp/apertus-70b-iq4xs-2x7900xtx-rocm-compute-pp-oom.log", "llama.cpp", "buffer", "compute", {}),
    ("llamacpp/deepseek-r1-q2k-15gpu-ik-llama-compute-oom.log", "llama.cpp", "buffer", "compute", {}),
    ("llamacpp/deepseek-v3-q2kl-4xa100-llama-cpp-python-kv-cache-oom.log", "llama.cpp", "buffer", "kv-cache",
     {"tried_gib": 200}),
    ("llamacpp/llama-cpp-python-langchain-5gpu-device4-compute-oom.log", "llama.cpp", "buffer", "compute", {"device": 4}),
    ("llamacpp/llama3-8b-64k-ollama-ctx65536-compute-oom.log", "llama.cpp", "buffer", "compute", {}),
    ("llamacpp/llama31-70b-q4kl-rocm-compute-oom.log", "llama.cpp", "buffer", "compute",
     {"tried_gib": Fraction("17536.01") / 1024}),
    ("llamacpp/llama31-70b-q4kl-rocm-ngl0-compute-oom.log", "llama.cpp", "buffer", "compute",
     {"tried_gib": Fraction(18035509504, 1 << 30)}),
    ("llamacpp/model-load-144817mib-cuda0-weights-oom.log", "llama.cpp", "buffer", "loading", {}),
    # The second collection: threads that state the fix that worked, with its value.
    ("llamacpp/8x-rtx3090_dsv4-flash-q4kexperts-gguf_c4096_compute-buffer-oom.log", "llama.cpp", "buffer", "compute",
     {"tried_gib": Fraction("3076.72") / 1024}),
    ("llamacpp/ollama_1x-rtx3090_deepseek-v3-q4km_gpu-overhead_weights-oom.log", "llama.cpp", "buffer", None,
     {"tried_gib": Fraction("28426.68") / 1024}),
    ("llamacpp/ollama_2x-mi50-32g_deepseek-r1-671b_compute-buffer-oom.log", "llama.cpp", "buffer", None,
     {"tried_gib": Fraction(5274339328, 1 << 30)}),
    ("llamacpp/ollama_2x-rtx3090_deepseek-r1-671b_cuda0-weights-oom.log", "llama.cpp", "buffer", "loading", {}),
    # SGLang's newer words: "Loaded weights leave no GPU memory for the KV cache under --mem-fraction-static=0.9".
    ("sglang/4xh100_dsv4-flash-eagle_memfrac0.9_no-kv-memory.log", "sglang", "pool-short", None,
     {"utilization": Fraction("0.9")}),
    ("vllm/kind1_2x-l40-tp2_deepseek-coder-v2-lite_163840.log", "vllm", "kv-short", None,
     {"context": 163840, "kv_tokens": 63040}),
    ("vllm/kind1_2x-rtx5090-pp2_qwq-32b-bnb4bit_maxlen60000.log", "vllm", "kv-short", None,
     {"context": 60000, "kv_tokens": 58384}),
    ("vllm/kind1_rtx4090_qanything-qwen7b_4096.log", "vllm", "kv-short", None, {"context": 4096, "kv_tokens": 3792}),
    # Wrapped over three lines: the estimate is on the third.
    ("vllm/kind2_2x-dgx-spark-gb10-tp2_minimax-m27-awq_util0.8_196608.log", "vllm", "kv-short", None,
     {"estimated_max_len": 190272, "short_gib": Fraction("0.75")}),
    ("vllm/kind3_2x-rtx3090-tp2_qwen25-32b-w8a16_maxseqs-default.log", "vllm", "no-kv-memory", None, {}),
    # Torch's words without their first line ("Tried to allocate 136.00 MiB. GPU 0 ..."), after the cache was sized.
    ("vllm/kind5_rtx5090-laptop-24g_qwen38-27b-nvfp4_util0.98_cudagraph-oom.log", "vllm", "out-of-memory", "graphs",
     {"tried_gib": Fraction(136, 1024), "total_gib": Fraction("22.36"), "free_gib": Fraction("120.88") / 1024}),
]


def read(name: str):
    return failed_start.read((FAILED / name).read_text(encoding="utf-8", errors="replace"))


def test_every_fixture_is_in_the_corpus_table():
    on_disk = {str(p.relative_to(FAILED)) for p in FAILED.glob("*/*.log")}
    assert on_disk == {row[0] for row in CORPUS}


@pytest.mark.parametrize("name,engine,kind,phase,figures", CORPUS, ids=[row[0] for row in CORPUS])
def test_every_failed_start_is_read(name, engine, kind, phase, figures):
    found = read(name)
    assert found.read, found.message
    failure = found.failure
    assert (failure.engine, failure.kind, failure.phase) == (engine, kind, phase)
    for figure, value in figures.items():
        assert failure.figure(figure) == value, figure
    assert failure.printed and failure.line_number >= 1


def fixes_of(name: str, **given) -> list:
    text = (FAILED / name).read_text(encoding="utf-8", errors="replace")
    found = failed_start.read(text)
    try:
        values = dict(read_log(text).values)
    except InputError:      # only the error's lines: the figures alone
        values = {"engine": found.engine}
    values.update(given)
    return fixes.for_failure(found.failure, values)


def test_the_thread_fixes_are_among_ours():
    """Each value a thread says started the server is within what our fix of that kind allows
    (an upper bound: --max-model-len and --max-num-seqs start at any value up to ours)."""
    # vllm#6140-style: "--max-model-len 20000 worked" (Llama 3.1 8B, RTX 3090); vLLM printed 23,648 tokens.
    ours = dict({f.kind: f for f in fixes_of("vllm/kind1_rtx3090_llama31-8b_maxlen29000.log")}["context"].changes)
    assert ours["context"] == 23648 and 20000 <= ours["context"]
    # "--max-model-len 24320" suggested: the tokens the cache holds, exactly.
    context = {f.kind: f for f in fixes_of("vllm/kind1_rtx3090_qwen15-7b-gptq_32768.log")}["context"]
    assert dict(context.changes)["context"] == 24320
    # The same flags with --max-model-len 100000 started; vLLM's estimate was 122,080.
    context = {f.kind: f for f in fixes_of("vllm/kind2_fp8-kvcache_maxlen221000.log")}["context"]
    assert context.flags == "--max-model-len 122080" and 100000 <= dict(context.changes)["context"]
    # "--max-num-seqs 512" for Qwen3.6-27B-FP8 on an H100: 856 blocks.
    seqs = {f.kind: f for f in fixes_of("vllm/kind4_h100_qwen36-27b-fp8_maxnumseqs1024.log")}["state-seqs"]
    assert seqs.flags == "--max-num-seqs 856" and 512 <= dict(seqs.changes)["batch"]
    # "max_num_seqs <= available blocks (e.g. 64)": 243.
    seqs = {f.kind: f for f in fixes_of("vllm/kind4_l40s_qwen35-4b-w4a16-lora_maxnumseqs256.log")}["state-seqs"]
    assert dict(seqs.changes)["batch"] == 243 and 64 <= dict(seqs.changes)["batch"]


def test_the_second_collection_thread_fixes_are_among_ours():
    """vllm#14452: --max-model-len 50000 started QwQ-32B where 58,384 tokens fit; vllm#6156:
    30720 where 63,040 fit; vllm#57475: --gpu-memory-utilization 0.97 where 0.98 ran out of 15 MiB
    capturing graphs (0.98 - (15.12 MiB + 0.005 GiB) / 22.36 GiB = 0.979, down to 0.97: the thread's
    value exactly); eugr/spark-vllm-docker#396: 0.85 started what needed 0.75 GiB more at 0.8 of the
    GB10's 119.7 GiB (ours 0.81, and 0.85 is above it); vllm#17238: max_num_seqs 8 on 2 x RTX 3090
    for Qwen2.5-32B W8A16 (ours: at most 840)."""
    def flags(name, **given):
        return {f.kind: f for f in fixes_of(name, **given)}
    assert 50000 <= dict(flags("vllm/kind1_2x-rtx5090-pp2_qwq-32b-bnb4bit_maxlen60000.log")["context"].changes)["context"]
    assert 30720 <= dict(flags("vllm/kind1_2x-l40-tp2_deepseek-coder-v2-lite_163840.log")["context"].changes)["context"]
    laptop = flags("vllm/kind5_rtx5090-laptop-24g_qwen38-27b-nvfp4_util0.98_cudagraph-oom.log")
    assert laptop["utilization-down"].flags == "--gpu-memory-utilization 0.97"
    spark = flags("vllm/kind2_2x-dgx-spark-gb10-tp2_minimax-m27-awq_util0.8_196608.log", gpu="dgx-spark-128gb",
                  **{"memory-utilization": "0.8"})
    ours = Fraction(dict(spark["utilization-up"].changes)["memory-utilization"])
    assert ours == Fraction("0.81") and ours <= Fraction("0.85")
    seqs = flags("vllm/kind3_2x-rtx3090-tp2_qwen25-32b-w8a16_maxseqs-default.log", model="Qwen/Qwen2.5-32B-Instruct",
                 gpu="rtx-3090-24gb", **{"weights-dtype": "int8", "engine-version": "0.8.1"})["seqs-for-kv"]
    assert 8 <= dict(seqs.changes)["batch"] < 1024 and seqs.max_concurrency >= 1
    # The command restarts the checkpoint the log served, not the preset's repo id of its shape.
    code, out, _ = run_cli("--from-log", str(FAILED / "vllm/kind3_2x-rtx3090-tp2_qwen25-32b-w8a16_maxseqs-default.log"),
                           "--model", "Qwen/Qwen2.5-32B-Instruct", "--gpu", "rtx-3090-24gb", "--weights-dtype", "int8",
                           "--engine-version", "0.8.1", "--json")
    commands = [fix["command"] for fix in json.loads(out)["fixes"]]
    assert code == 0 and commands and all(c.startswith("vllm serve Qwen2.5-32B-Instruct-INT8-W8A16 ") for c in commands)


def test_free_memory_asks_for_what_was_free():
    """31.44 of 47.38 GiB free: 0.6635..., so --gpu-memory-utilization 0.66 (rounded down)."""
    fix = fixes_of("vllm/kind6_48g-gpu_vllm091_docker_util0.95.log")[0]
    assert (fix.kind, fix.flags) == ("utilization-free", "--gpu-memory-utilization 0.66")


def test_the_sampler_warm_up_runs_with_fewer_sequences():
    """150 MiB tried, 11.69 MiB free: the sampler's tensors scale with max_num_seqs, so a
    warm-up of 1,024 requests fits in 1,024 x 11.69 / 150 = 79 (rounded down); the default
    utilization of 0.9 less 0.14 GiB of 23.52 is 0.89."""
    found = {f.kind: f for f in fixes_of("vllm/kind5_4xrtx4090_qwen3-30b-a3b_vllm0110_sampler-oom.log",
                                         batch="1024", **{"memory-utilization": "0.9"})}
    assert found["seqs-down"].flags == "--max-num-seqs 79"
    assert found["utilization-down"].flags == "--gpu-memory-utilization 0.89"


def test_a_refusal_sized_again_with_the_model():
    """Llama 3.1 8B on an RTX 3090 (23.58 GiB, utilization 0.90, 2.89 GiB KV memory measured):
    29,000 tokens need 3.54 GiB at 128 KiB a token; 0.93 of the card gives 0.71 GiB more."""
    found = {f.kind: f for f in fixes_of("vllm/kind1_rtx3090_llama31-8b_maxlen29000.log",
                                         model="meta-llama/Llama-3.1-8B-Instruct")}
    assert list(found) == ["utilization-up", "kv-fp8", "context", "layout"]     # cheapest first
    assert found["utilization-up"].flags == "--gpu-memory-utilization 0.93"
    assert 1 <= found["utilization-up"].max_concurrency < Fraction(11, 10)     # just enough
    assert found["context"].flags == "--max-model-len 23648"
    assert found["kv-fp8"].flags == "--kv-cache-dtype fp8"
    assert "--kv-cache-memory-bytes" not in found["context"].command   # vLLM measures its own


def test_bad_input_is_said_plainly():
    good = (LOGS / "vllm-llama3.1-8b-a100-80gb-tp1-32k-v0.17.1.log").read_text(encoding="utf-8")
    assert failed_start.read(good).message.startswith("no start-up failure found")
    other = failed_start.read("Traceback (most recent call last):\n  File \"x.py\", line 1\n"
                              "FileNotFoundError: [Errno 2] No such file or directory: '/models/llama'\n")
    assert other.message.startswith("this failure is not about memory: line 3")
    assert other.failure is None
    two = failed_start.read("ValueError: max_num_seqs (1024) exceeds available Mamba cache blocks (969).\n"
                            "ValueError: Free memory on device (7.34/139.72 GiB) on startup is less than desired GPU "
                            "memory utilization (0.9, 125.75 GiB).\n")
    assert not two.read and "2 different failures" in two.message
    wrapped = failed_start.read("RuntimeError: Engine core initialization failed. See root cause above.\n")
    assert wrapped.message.startswith("no start-up failure found")


def test_one_failure_printed_by_every_rank_is_one():
    line = ("(Worker_TP{n} pid=1) ERROR torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 150.00 MiB. "
            "GPU {n} has a total capacity of 23.52 GiB of which 11.69 MiB is free.\n")
    found = failed_start.read("".join(line.format(n=n) for n in range(4)))
    assert found.read and found.failure.figure("device") == 0


def run_cli(*argv):
    from io import StringIO
    out, err = StringIO(), StringIO()
    code = run(list(argv), stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def test_the_cli_answers_a_failed_start():
    code, out, _ = run_cli("--from-log", str(FAILED / "vllm/kind2_fp8-kvcache_maxlen221000.log"))
    assert code == 0
    assert out.startswith("vLLM will not start: its KV cache cannot hold one request")
    assert "--max-model-len 122080" in out
    code, out, _ = run_cli("--from-log", str(FAILED / "vllm/kind4_h100_qwen36-27b-fp8_maxnumseqs1024.log"), "--json")
    data = json.loads(out)
    assert data["failed_start"]["kind"] == "state-blocks" and data["fixes"][0]["changes"] == {"batch": 856}


def test_error_lines_alone_with_the_model_given_are_sized_or_refused_plainly():
    """ollama#11202 printed three lines; with the model and GPUs given the answer is the verdict,
    the failure and the sized fixes; an input the engine cannot take is refused by name, never
    'see the verdict below' over no verdict."""
    log = str(FAILED / "llamacpp/ollama_2x-mi50-32g_deepseek-r1-671b_compute-buffer-oom.log")
    code, out, err = run_cli("--from-log", log, "--model", "meta-llama/Llama-3.1-70B", "--gpu", "rtx-3090-24gb",
                             "--gpus", "2", "--weights-dtype", "q4_0", "--context", "131072")
    assert code == 0 and out.startswith("Verdict") and "llama.cpp will not start" in out
    assert "-ngl " in out and "Max context (1 request)" in out
    code, out, err = run_cli("--from-log", log, "--model", "meta-llama/Llama-3.1-70B", "--gpu", "mi50-32gb")
    assert code == 2 and out == "" and "--gpu: unknown GPU 'mi50-32gb'" in err


def test_a_configuration_that_does_not_start_gets_fixes_without_a_log():
    """Llama 3.1 70B in bf16 on one H100 80GB: 141 GB of weights do not fit; tp 2 does not
    either with its overhead at 0.9, tp 4 does (the layout fix), and nothing else can."""
    code, out, _ = run_cli("--model", "meta-llama/Llama-3.1-70B-Instruct", "--gpu", "h100-sxm", "--engine", "vllm",
                           "--context", "8192", "--json")
    data = json.loads(out)
    assert code == 0 and data["fixes"], data.get("verdict")
    assert all(fix["kind"] == "layout" for fix in data["fixes"])
    assert data["fixes"][0]["changes"]["tp"] in (2, 4)


def test_fewer_cuda_graphs_start_what_their_estimate_kept_out_of_the_cache():
    """Llama 3.1 8B on an RTX 4090, 256 sequences at 45,000 tokens, vLLM 0.33.0: 0.24 GiB short of
    one request. From 0.20.0 the graphs' estimate comes out of the KV memory, so capturing fewer
    starts it, cheaper than none (--enforce-eager): the largest limit that starts, whose command
    starts and one above it does not."""
    values = {"model": "meta-llama/Llama-3.1-8B", "gpu": "rtx-4090-24gb", "engine": "vllm", "engine-version": "0.33.0",
              "context": "45000", "batch": "256"}
    found = {f.kind: f for f in fixes.fixes(values)}
    kinds = list(found)
    assert kinds.index("graphs-fewer") < kinds.index("eager-for-kv")
    fewer = found["graphs-fewer"]
    limit = dict(fewer.changes)["max-cudagraph-capture-size"]
    assert fewer.flags == f"--max-cudagraph-capture-size {limit}" and 1 < limit < 512
    assert fewer.command.endswith(f"--max-cudagraph-capture-size {limit}")
    assert fixes.starts(evaluate(values | {"max-cudagraph-capture-size": str(limit)}))
    assert not fixes.starts(evaluate(values | {"max-cudagraph-capture-size": str(limit + 1)}))
    # Before 0.20.0 the graphs are captured after the cache is sized: fewer of them give it nothing.
    assert "graphs-fewer" not in {f.kind for f in fixes.fixes(values | {"engine-version": "0.19.1"})}


# --- review: what must never be answered wrongly ---------------------------------------------

def test_two_starts_of_one_kind_are_two_failures_not_one():
    # Llama 3.1 8B refused at 29,000 tokens, then Qwen3-VL at 262,144: never "--max-model-len 50512 ... not 29,000".
    text = "".join((FAILED / name).read_text(encoding="utf-8") for name in
                   ("vllm/kind1_rtx3090_llama31-8b_maxlen29000.log", "vllm/kind2_qwen3-vl-instruct_xinference_262144.log"))
    found = failed_start.read(text)
    assert not found.read and "2 different failures" in found.message


def test_a_number_split_over_two_lines_is_not_read_short():
    found = failed_start.read("ValueError: To serve at least one request with the model's max seq len (180000), "
                              "(3.05 GiB KV cache is needed, which is larger than the available KV cache memory "
                              "(2.17 GiB). Based on the available memory, the estimated maximum model length is 11\n"
                              "1456. Try increasing `gpu_memory_utilization`\n")
    assert found.read and found.failure.figure("estimated_max_len") is None


def test_an_error_after_the_server_started_is_not_a_failed_start():
    good = (LOGS / "vllm-llama3.1-8b-a100-80gb-tp1-32k-v0.17.1.log").read_text(encoding="utf-8")
    text = good + ("(APIServer pid=1) INFO:     Application startup complete.\n"
                   "(EngineCore pid=2) torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 150.00 MiB. "
                   "GPU 0 has a total capacity of 79.19 GiB of which 11.69 MiB is free.\n")
    found = failed_start.read(text)
    assert found.failure is None and "came after, while it served" in found.message


def test_the_tail_of_a_long_log_is_read_with_its_line_numbers():
    error = (FAILED / "vllm/kind4_l40s_qwen35-4b-w4a16-lora_maxnumseqs256.log").read_text(encoding="utf-8")
    text = "INFO 01-01 00:00:00 [core.py:1] waiting\n" * 20_000 + error
    found = failed_start.read(text)
    assert found.read and found.failure.figure("blocks") == 243 and found.failure.line_number > 20_000
    assert found.failure.line_number == failed_start.read(error).failure.line_number + 20_000


def test_a_refusal_sized_here_as_starting_gets_no_sized_fix():
    """The Ollama log ran out of compute-buffer memory at 65,536 tokens; sized here on an RTX 3090
    the same inputs start, so no -c is bisected from them (it gave -c 65280 before)."""
    values = {"engine": "llama.cpp", "model": "meta-llama/Llama-3.1-8B", "gpu": "rtx-3090-24gb", "context": "65536"}
    failure = read("llamacpp/llama3-8b-64k-ollama-ctx65536-compute-oom.log").failure
    assert fixes.starts(fixes.evaluate(values))
    assert fixes.for_failure(failure, values) == []


def test_torch_words_alone_take_the_engine_given_and_its_fixes():
    line = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of "
            "79.19 GiB of which 1.00 GiB is free.\n")
    found = failed_start.read(line)
    assert found.read and found.failure.engine is None
    sized = fixes.for_failure(found.failure, {"engine": "vllm", "model": "meta-llama/Llama-3.1-8B",
                                              "gpu": "h100-sxm-80gb", "memory-utilization": "0.9"})
    assert sized and {fix.kind for fix in sized} <= {"utilization-down", "eager", "layout"}


def test_the_share_asked_for_is_rounded_past_the_printed_figures():
    """0.95 GiB short of a 23.99 GiB card at 0.9: (0.95 + 0.01) / 23.99 = 0.0400..., so 0.95, not
    the 0.94 that 0.95 / 23.99 = 0.0396 alone would round to (each figure is printed to 0.01)."""
    failure = read("vllm/kind2_8x-rtx4090_vllm082_maxlen116160.log").failure
    found = fixes.for_failure(failure, {"engine": "vllm", "gpu-memory-gib": "23.99", "memory-utilization": "0.9"})
    assert [fix.flags for fix in found if fix.kind == "utilization-up"] == ["--gpu-memory-utilization 0.95"]


def test_the_host_running_out_and_memory_moving_are_named_not_taken_for_the_gpu():
    host = failed_start.read("Error: model requires more system memory (29.9 GiB) than is available (13.1 GiB)\n")
    assert host.read and host.failure.kind == "host-memory"
    assert host.message == "the host ran out of memory (its RAM or shared memory), not the GPU"
    for line in ("RuntimeError: [enforce fail at alloc_cpu.cpp:117] data. DefaultCPUAllocator: not enough memory: "
                 "you tried to allocate 4294967296 bytes.",
                 "ray.exceptions.OutOfMemoryError: Task was killed due to the node running low on memory."):
        assert failed_start.read(line + "\n").failure.kind == "host-memory", line
    moved = failed_start.read("AssertionError: Error in memory profiling. Initial free memory 5.1 GiB, current free "
                              "memory 5.9 GiB. This happens when the GPU memory was not properly cleaned up\n")
    assert moved.read and (moved.engine, moved.failure.kind) == ("vllm", "memory-moved")
    assert fixes.for_failure(moved.failure, {"engine": "vllm"}) == []


def test_each_engines_failures_module_gives_what_the_shared_code_asks():
    from kvcalc import engines
    readers = dict(engines.failure_readers())
    assert set(readers) == set(engines.ENGINES)
    for name, module in readers.items():
        for member in ("RULES", "PHASE_MARKS", "MARKS", "STARTED_MARKS", "FLAG_OF", "PINNED_FLAGS", "fix_kinds",
                       "refused_kind"):
            assert hasattr(module, member), f"{name}: {member}"
        kinds = {kind for rule in module.RULES for kind in [rule.kind]}
        assert kinds <= set(failed_start.KINDS_SAID), f"{name}: {kinds - set(failed_start.KINDS_SAID)}"
        for kind in module.fix_kinds(failed_start.Failure(name, "kv-short", 1, "")):
            assert kind in fixes.KINDS


def test_the_runtimes_other_words_for_running_out_are_read():
    for line in ("RuntimeError: CUDA error: CUBLAS_STATUS_ALLOC_FAILED when calling `cublasCreate(handle)`",
                 "node1:123:456 [0] NCCL WARN Cuda failure 2 'out of memory'",
                 "triton.runtime.errors.OutOfResources: CUDA_ERROR_OUT_OF_MEMORY",
                 "RuntimeError: HIP error: hipErrorOutOfMemory"):
        found = failed_start.read(line + "\n")
        assert found.read and found.failure.kind == "out-of-memory", line
    metal = failed_start.read("ggml_backend_metal_buffer_type_alloc_buffer: error: failed to allocate buffer, "
                              "size = 17000.50 MiB\nllama_model_load: error loading model\n")
    assert metal.read and metal.engine == "llama.cpp" and metal.failure.figure("tried_gib") == Fraction("17000.50") / 1024


def test_error_lines_alone_take_the_failures_own_figures_and_engine():
    """QAnything's one line says max seq len 4096 (vLLM's words): with Llama 3.1 8B on an RTX 4090
    given, the question sized is 4,096 tokens, no launch line stands beside the failure, other
    formats are refused as before, and another engine named is refused by name."""
    log = str(FAILED / "vllm/kind1_rtx4090_qanything-qwen7b_4096.log")
    code, out, _ = run_cli("--from-log", log, "--model", "meta-llama/Llama-3.1-8B", "--gpu", "rtx-4090-24gb")
    assert code == 0 and "KV per request (at 4,096 tokens)" in out and "Launch:" not in out
    assert "--max-model-len 3792" in out
    code, _, err = run_cli("--from-log", log, "--model", "meta-llama/Llama-3.1-8B", "--format", "csv")
    assert code == 2 and "a failed start is answered as a table or --json" in err
    code, _, err = run_cli("--from-log", log, "--model", "meta-llama/Llama-3.1-8B", "--engine", "sglang")
    assert code == 2 and "the failed start is vLLM's, not SGLang's" in err


def test_fewer_graphs_are_never_offered_below_the_speculative_step_nor_for_sequences_not_given():
    """With 4 speculative tokens vLLM rounds each graph size up to a multiple of 5: a limit under 5
    leaves none and it refuses to start, so such a limit is refused here and never a fix. Without
    --max-num-seqs given the launch command writes the requests that fit as --max-num-seqs, whose
    own limit is not the one sized: no graphs-fewer fix then."""
    base = {"model": "meta-llama/Llama-3.1-8B", "gpu": "rtx-4090-24gb", "engine": "vllm", "engine-version": "0.33.0",
            "draft-model": "meta-llama/Llama-3.2-1B", "spec-tokens": "4"}
    refused = evaluate(base | {"max-cudagraph-capture-size": "4"})
    assert [e.field for e in refused.errors] == ["max-cudagraph-capture-size"] and "under 5" in refused.errors[0].message
    assert evaluate(base | {"max-cudagraph-capture-size": "5"}).ok
    short = {"model": "meta-llama/Llama-3.1-8B", "gpu": "rtx-4090-24gb", "engine": "vllm", "context": "44000"}
    assert "graphs-fewer" not in {f.kind for f in fixes.fixes(short)}
    limited = [f for f in fixes.fixes(base | {"kv-dtype": "fp8", "context": "48500", "batch": "64"})
               if f.kind == "graphs-fewer"]
    assert all(dict(f.changes)["max-cudagraph-capture-size"] >= 5 for f in limited)


def test_a_logs_graphs_move_when_a_what_if_limits_them():
    """Gemma 4 26B-A4B on a DGX Spark, vLLM 0.20.0, ran with the default limit (its non-default args
    name none): --max-cudagraph-capture-size 8 leaves fewer graphs and more KV memory than the
    40.61 GiB it printed; --enforce-eager with a limit says the limit is left out of the command."""
    log = str(LOGS / "vllm-gemma4-26b-a4b-dgx-spark-tp1-util08-8k-v0.20.0.log")
    _, same, _ = run_cli("--from-log", log, "--json")
    _, fewer, _ = run_cli("--from-log", log, "--max-cudagraph-capture-size", "8", "--json")
    assert json.loads(same)["engine_kv_budget_bytes_per_gpu"] < json.loads(fewer)["engine_kv_budget_bytes_per_gpu"]
    code, out, _ = run_cli("--model", "meta-llama/Llama-3.1-8B", "--gpu", "h100-sxm-80gb", "--engine", "vllm",
                           "--enforce-eager", "on", "--max-cudagraph-capture-size", "64")
    assert code == 0 and "--max-cudagraph-capture-size" not in out.split("Launch: ")[1].split("\n")[0]
    assert "# no --max-cudagraph-capture-size: --enforce-eager captures no CUDA graphs" in out
