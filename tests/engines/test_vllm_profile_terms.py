"""Issue 36: the terms of vLLM's start-up overhead on the newest releases, each worked from a real
public start-up log (tests/fixtures/logs, URL in SOURCES.md) and the release's own code
(the wheels' vllm/config/vllm.py, vllm/v1/worker/gpu_model_runner.py, gpu_worker.py,
vllm/v1/worker/gpu/model_runner.py and cudagraph_utils.py)."""

import re
from io import StringIO

import pytest

import calibration
from kvcalc.cli import run
from kvcalc.engines import releases
from kvcalc.engines.vllm import engine as vllm, profile
from kvcalc.evaluation import evaluate
from kvcalc.inputs.startup_log import read_log
from kvcalc.readers import gpu_presets
from support import FIXTURES

LOGS = FIXTURES / "logs"
GIB, MIB = 1 << 30, 1 << 20


def log_text(name: str) -> str:
    return (LOGS / name).read_text(encoding="utf-8")


def graph_line(text: str) -> tuple[int, int]:
    """(PIECEWISE, FULL) of the log's "Profiling CUDA graph memory: PIECEWISE=n (largest=..), FULL=m" line."""
    line = re.search(r"Profiling CUDA graph memory: (.*)", text).group(1)
    counts = [re.search(mode + r"=(\d+)", line) for mode in ("PIECEWISE", "FULL")]
    return tuple(int(m.group(1)) if m else 0 for m in counts)


def printed_estimate(text: str) -> float:
    return float(re.search(r"Estimated CUDA graph memory: ([0-9.]+) GiB total", text).group(1))


# (log, release, max_num_seqs, max_num_batched_tokens, GPU preset or None): the graphs vLLM printed it captures.
CAPTURES = [
    # vllm serve on an RTX 3090, defaults: 256 sequences, 2,048 tokens a step -> sizes 1 .. 512, FULL up to 256.
    ("vllm-phi-3-mini-rtx3090-wsl-util085-4k-v0.19.1.log", "0.19.1", 256, 2048, "rtx-3090-24gb"),
    # --max-num-seqs 64: sizes 1, 2, 4, 8 .. 128 (19), FULL up to 64 (11).
    ("vllm-qwen3-30b-a3b-2507-fp8-h100-8k-seqs64-v0.22.1.log", "0.22.1", 64, 8192, "h100-sxm-80gb"),
    # --max-num-seqs 16: 1, 2, 4, 8 .. 32 (7), FULL 1, 2, 4, 8, 16 (5).
    ("vllm-qwen3-coder-30b-a3b-a100-80gb-util090-131k-seqs16-v0.26.1rc1.log", "0.26.1", 16, 2048, "a100-sxm-80gb"),
    # --max-num-seqs 32 on a DGX Spark: 1 .. 64 (11), FULL up to 32 (7).
    ("vllm-gemma4-26b-a4b-nvfp4-dgx-spark-util085-262k-v0.25.1.log", "0.25.1", 32, 2048, "dgx-spark-128gb"),
    ("vllm-qwen2.5-72b-4xl40s-tp4-8k-v0.19.0.log", "0.19.0", 256, 2048, "l40s-48gb"),
]


@pytest.mark.parametrize("name, version, seqs, chunk, gpu", CAPTURES, ids=lambda v: str(v)[:40])
def test_the_graphs_vllm_captures_are_its_capture_sizes(name, version, seqs, chunk, gpu):
    release = releases.pep440(version)
    preset = gpu_presets.gpu(gpu) if gpu else None
    assert profile.capture_sizes(release, seqs, chunk, preset) == graph_line(log_text(name))


def test_blackwell_captures_up_to_1024_from_0_28_0():
    """0.28.0 raises the default largest graph to 1,024 on compute capability 10.x: 1,024 sequences
    give 1, 2, 4, 31 sizes below 256 and (1,024 - 256) / 16 + 1 = 49 above, 83 in all."""
    b200 = gpu_presets.gpu("b200-180gb")
    assert profile.capture_sizes(releases.pep440("0.27.1"), 1024, 8192, b200) == (51, 51)
    assert profile.capture_sizes(releases.pep440("0.28.0"), 1024, 8192, b200) == (83, 83)


def test_a_speculator_rounds_the_sizes_to_its_step():
    """vllm-qwen3.6-35b-a3b-nvfp4-dgx-spark-util085-262k-mtp-v0.25.1.log, MTP with 3 speculative tokens and
    --max-num-seqs 32: sizes up to 2 x 32 x 4 = 256 rounded up to multiples of 4 (4, 8, 16 .. 256: 33),
    FULL up to 32 x 4 = 128 (17), as the log prints "PIECEWISE=33 (largest=256), FULL=17 (largest=128)"."""
    name = "vllm-qwen3.6-35b-a3b-nvfp4-dgx-spark-util085-262k-mtp-v0.25.1.log"
    assert profile.capture_sizes(releases.pep440("0.25.1"), 32, 2048, gpu_presets.gpu("dgx-spark-128gb"), 3) \
        == graph_line(log_text(name)) == (33, 17)


def test_worked_example_qwen3_30b_a3b_on_0_22_1():
    """vllm-qwen3-30b-a3b-2507-fp8-h100-8k-seqs64-v0.22.1.log prints "Estimated CUDA graph memory:
    0.14 GiB total" for PIECEWISE=19, FULL=11. Ours: 30 graphs x 48 layers x 256 KiB = 360 MiB; the band
    runs from the code's 1 MiB floor per PIECEWISE graph after the first (18 MiB) to 1 MiB per graph and
    layer (1,440 MiB)."""
    e = evaluate({"engine": "vllm", "engine-version": "0.22.1", "model": "Qwen/Qwen3-30B-A3B-Instruct-2507",
                  "gpu": "h100-sxm-80gb", "context": "8192", "batch": "64", "prefill-chunk": "8192"})
    assert e.ok, e.errors
    est, low, high, words = profile.cudagraph_estimate(e.scenario.model, e.scenario.settings.release,
                                                       e.scenario.deployment.gpu, 1, 8192, 64)
    assert (est, low, high) == (30 * 48 * 256 * 1024, 18 * MIB, 30 * 48 * MIB)
    assert "19 PIECEWISE and 11 FULL over 48 layers" in words
    assert low <= printed_estimate(log_text("vllm-qwen3-30b-a3b-2507-fp8-h100-8k-seqs64-v0.22.1.log")) * GIB <= high


# Logs whose model the reader resolves: the printed estimate lies in the rule's band.
ESTIMATED = ["vllm-phi-3-mini-rtx3090-wsl-util085-4k-v0.19.1.log", "vllm-qwen2.5-72b-4xl40s-tp4-8k-v0.19.0.log",
             "vllm-qwen3-30b-a3b-2507-fp8-h100-8k-seqs64-v0.22.1.log",
             "vllm-gemma4-26b-a4b-nvfp4-dgx-spark-util085-262k-v0.25.1.log",
             "vllm-qwen3.6-35b-a3b-nvfp4-dgx-spark-util085-262k-mtp-v0.25.1.log"]


@pytest.mark.parametrize("name", ESTIMATED)
def test_the_printed_graph_estimate_lies_in_the_band(name):
    text = log_text(name)
    reading = read_log(text)
    values = {k: v for k, v in reading.values.items() if not k.endswith("-gib") or k == "gpu-memory-gib"}
    e = evaluate(values)
    assert e.ok, e.errors
    scenario, dep = e.scenario, e.scenario.deployment
    release = releases.pep440(re.search(r"version (\d+\.\d+\.\d+)|LLM engine \(v(\d+\.\d+\.\d+)", text).group(1))
    draft = scenario.serving.draft
    spec = draft.spec_tokens if draft is not None else 0
    pieces, full = profile.capture_sizes(release, vllm.max_num_seqs(scenario), e.engine.prefill_chunk, dep.gpu, spec)
    assert (pieces, full) == graph_line(text)
    est, low, high, _ = profile.cudagraph_estimate(scenario.model, release, dep.gpu, dep.pp, e.engine.prefill_chunk,
                                                   vllm.max_num_seqs(scenario), spec)
    printed = printed_estimate(text) * GIB
    assert low <= printed <= high, (name, low / GIB, printed / GIB, high / GIB)
    assert est / 4 <= printed <= est * 4          # within a factor of four of the estimate itself


def test_the_v2_runner_estimates_no_graphs_until_0_29_0():
    """V2's profile_cudagraph_memory is `return 0` in 0.22.0-0.28.0 (vllm/v1/worker/gpu/model_runner.py)
    and measures from 0.29.0 (cudagraph_utils.py): Llama 3.1 8B is on V2 from 0.23.0."""
    def graphs(version):
        e = evaluate({"model": "meta-llama/Llama-3.1-8B", "engine": "vllm", "engine-version": version,
                      "gpu": "h100-sxm-80gb"})
        return profile.estimate(e.scenario, e.scenario.settings.release, e.engine.prefill_chunk,
                                vllm.max_num_seqs(e.scenario)).cudagraph
    assert graphs("0.22.0") == (51 + 51) * 32 * profile.GRAPH_LAYER       # still the V1 runner (Qwen3 only on V2)
    assert graphs("0.23.0") == graphs("0.28.0") == 0
    assert graphs("0.29.0") == (51 + 51) * 32 * profile.GRAPH_LAYER


def test_pipeline_parallelism_binds_on_the_last_stage():
    """vllm-deepseek-v2-lite-tp2-pp2-l4.log (a July 2025 build, 0.9.x): the first stage's ranks print
    12.13 GiB of KV memory, the last stage's 11.33 GiB: only the last stage runs the sampler warm-up,
    and it keeps the 2 x 2,048 x 2,048 bf16 intermediate tensors it receives (16 MiB). Our budget is the
    last stage's, within 1% of 11.33 GiB; the first stage keeps the sampler's surplus over the forward
    more (stage_surplus), and the pool is the fewest blocks a worker holds: the first stage's 14 MLA
    layers bind, within 0.5% of the 807,792 tokens and 788.86x the log prints (before, the last stage's
    memory on the first stage's layers gave 754,064, 6.7% short)."""
    text = log_text("vllm-deepseek-v2-lite-tp2-pp2-l4.log")
    assert "Available KV cache memory: 11.33 GiB" in text and "Available KV cache memory: 12.13 GiB" in text
    e = evaluate({"engine": "vllm", "engine-version": "0.9.1", "model": "deepseek-ai/DeepSeek-V2-Lite",
                  "context": "1024", "enforce-eager": "on", "tp": "2", "pp": "2", "gpus": "4", "gpu": "l4-24gb"})
    assert e.ok, e.errors
    assert profile.pipeline_buffers(e.scenario.model, 2, 2048) == 2 * 2048 * 2048 * 2
    assert profile.pipeline_buffers(e.scenario.model, 1, 2048) == 0
    assert abs(e.engine.kv_budget_bytes_per_gpu / GIB - 11.33) <= 0.01 * 11.33
    assert "807,792 tokens" in text and "788.86x" in text
    assert abs(e.engine.kv_tokens - 807_792) <= 0.005 * 807_792
    assert abs(float(e.engine.max_concurrency) - 788.86) <= 0.005 * 788.86
    release, chunk = e.scenario.settings.release, e.engine.prefill_chunk
    surplus = profile.stage_surplus(e.scenario, release, chunk, vllm.max_num_seqs(e.scenario))
    # V0.9.1's native sampler over 256 rows of the 102,400-entry vocabulary, beyond the forward.
    forward, sampler = profile._runs(e.scenario, release, chunk, 256)[:2]
    assert surplus == sampler - forward > 0
    tp2 = evaluate({"engine": "vllm", "engine-version": "0.9.1", "model": "deepseek-ai/DeepSeek-V2-Lite",
                    "context": "1024", "enforce-eager": "on", "tp": "2", "gpus": "2", "gpu": "l4-24gb"})
    assert profile.stage_surplus(tp2.scenario, release, chunk, 256) == 0        # one stage: nothing to move


def test_the_step_and_the_widest_decode_batch_are_captured():
    """0.22.0 adds max_num_batched_tokens to the sizes when it is within the largest (100 tokens a
    step: 1, 2, 4, 8 .. 96 and 100); 0.34.0 also adds max_num_seqs (100 sequences: 8 .. 200 and 100)."""
    r = releases.pep440
    assert profile.capture_sizes(r("0.20.0"), 256, 100, None) == (15, 15)
    assert profile.capture_sizes(r("0.22.0"), 256, 100, None) == (16, 16)
    assert profile.capture_sizes(r("0.29.0"), 100, 8192, None) == (28, 15)
    assert profile.capture_sizes(r("0.34.0"), 100, 8192, None) == (29, 16)


def test_max_cudagraph_capture_size_stands_for_the_default_limit():
    """--max-cudagraph-capture-size 64 with 256 sequences (vllm/config/vllm.py _set_cudagraph_sizes,
    PR #26016): 1, 2, 4, 8, 16 .. 64, eleven sizes of each mode, not the default's 51 PIECEWISE up to
    512 and 35 FULL up to the 256 sequences; still within max_num_batched_tokens (100 tokens: 1 .. 96
    and 100, as without it). The graphs' estimate, and so the KV memory from 0.20.0, moves by the
    graphs left out x the layers: (86 - 22) x 32 layers x 256 KiB = 512 MiB more for Llama 3.1 8B's
    cache on an H100."""
    r = releases.pep440
    assert profile.capture_sizes(r("0.33.0"), 256, 2048, None) == (51, 35)
    assert profile.capture_sizes(r("0.33.0"), 256, 2048, None, 0, 64) == (11, 11)
    assert profile.capture_sizes(r("0.22.0"), 256, 100, None, 0, 512) == (16, 16)
    base = {"model": "meta-llama/Llama-3.1-8B", "gpu": "h100-sxm-80gb", "engine": "vllm", "engine-version": "0.33.0",
            "context": "8192", "batch": "256"}
    default, fewer = evaluate(base), evaluate(base | {"max-cudagraph-capture-size": "64"})
    assert fewer.engine.kv_budget_bytes_per_gpu - default.engine.kv_budget_bytes_per_gpu == (86 - 22) * 32 * 256 * 1024
    out = StringIO()
    assert run(["--model", "meta-llama/Llama-3.1-8B", "--gpu", "h100-sxm-80gb", "--engine", "vllm",
                "--max-cudagraph-capture-size", "64", "--launch", "vllm"], stdout=out, stderr=StringIO()) == 0
    assert " --max-cudagraph-capture-size 64 " in out.getvalue()
    # Before 0.20.0 the graphs are captured after the cache is sized: the flag moves no figure.
    old = base | {"engine-version": "0.19.1"}
    assert evaluate(old | {"max-cudagraph-capture-size": "64"}).engine.kv_budget_bytes_per_gpu == \
        evaluate(old).engine.kv_budget_bytes_per_gpu
    refused = evaluate(base | {"engine-version": "0.10.2", "max-cudagraph-capture-size": "64"})
    assert [e.field for e in refused.errors] == ["max-cudagraph-capture-size"]
    assert "0.11.1" in refused.errors[0].message


def test_a_separate_draft_model_keeps_the_v1_runner_until_0_31_0():
    """V2 lacks the "draft_model" speculative method until 0.31.0 (vllm/config/vllm.py
    _get_v2_model_runner_unsupported_features: 0.25.1 takes eagle, eagle3, mtp, dflash, dspark), so a
    dense model that V2 would run falls back to V1: its CUDA-graph estimate is subtracted and the sampler
    warm-up is V1's (14 B per row and vocabulary entry). Llama 3.1 8B with Llama 3.2 1B drafting 4 tokens
    on an H100: 1,024 sequences x 5 tokens a step reach the 512 ceiling; the 51 default sizes rounded up to
    multiples of 5 are 48 (5, 10, 20, 25 .. 480, 500), each PIECEWISE and FULL, over the 32 + 16 layers of
    the model and its draft (the drafter captures graphs of its own)."""
    def run(version, **extra):
        e = evaluate({"model": "meta-llama/Llama-3.1-8B", "engine": "vllm", "engine-version": version,
                      "gpu": "h100-sxm-80gb", **extra})
        assert e.ok, e.errors
        return e, profile.estimate(e.scenario, e.scenario.settings.release, e.engine.prefill_chunk,
                                   vllm.max_num_seqs(e.scenario))
    draft = {"draft-model": "meta-llama/Llama-3.2-1B", "spec-tokens": "4"}
    e, plain = run("0.25.1")
    assert plain.cudagraph == 0 and "V2 runner" in plain.words
    e, drafted = run("0.25.1", **draft)
    pieces, full = profile.capture_sizes(e.scenario.settings.release, 1024, e.engine.prefill_chunk,
                                         e.scenario.deployment.gpu, 4)
    assert (pieces, full) == (48, 48)
    assert drafted.cudagraph == (48 + 48) * (32 + 16) * profile.GRAPH_LAYER
    assert "V2 runner" not in drafted.words
    assert profile.uses_runner_v2(e.scenario.model, releases.pep440("0.31.0"), draft_model=True)
    assert not profile.uses_runner_v2(e.scenario.model, releases.pep440("0.30.0"), draft_model=True)


def test_the_v2_samplers_penalty_statistics_count_from_0_27_0():
    """The V2 runner's sampler keeps an int32 count per request and vocabulary entry and a bit mask
    (vllm/v1/worker/gpu/sample/penalties.py), made after the weights are measured; 0.27.0's
    memory_profiling charges everything consumed since start-up, so they come out of the KV memory.
    Llama 3.1 8B on an H100 (1,024 sequences, 128,256 entries): 1,024 x 4 x (128,256 + 4,008) B.
    vllm-pr57047-consumed-memory-summary-sm89.log is such a start-up: the V2 runner (model_runner.py)
    printing its non-KV memory as "consumed memory (weights + non-torch)" beside the peak."""
    text = log_text("vllm-pr57047-consumed-memory-summary-sm89.log")
    assert "[model_runner.py:" in text and "GiB for consumed memory (weights + non-torch)" in text

    def buffers(version, model="meta-llama/Llama-3.1-8B"):
        e = evaluate({"model": model, "engine": "vllm", "engine-version": version, "gpu": "h100-sxm-80gb"})
        assert e.ok, e.errors
        est = profile.estimate(e.scenario, e.scenario.settings.release, e.engine.prefill_chunk,
                               vllm.max_num_seqs(e.scenario))
        assert est.total == est.activation + est.kept + est.non_torch + est.cudagraph + est.buffers
        return est.buffers
    assert buffers("0.26.0") == 0                          # V2, but nothing before profiling was counted
    assert buffers("0.27.0") == buffers("0.28.0") == 1024 * 4 * (128256 + 4008)
    assert buffers("0.28.0", "Qwen/Qwen3-30B-A3B") == 0    # a MoE model ran V1 until 0.29.0
    assert buffers("0.29.0", "Qwen/Qwen3-30B-A3B") == 1024 * 4 * (151936 + 4748)


def test_the_v2_runners_warm_up_samples_the_logits_as_made():
    """The V2 runner's warm-up samples without top-k/top-p. vllm-qwen3-8b-2xt4-tp2-util085-8k-eager-llm-v0.22.0.log:
    Qwen3ForCausalLM, unquantized, on 0.22.0's V2 runner, whose Sampler copies the 256 rows of bf16 logits to
    fp32 (2 + 4 B per entry: more than the tp 2 all-gather's two copies and a half); beside them the
    8,192 x 4,096 hidden states of the forward and two 256-row ones. The forward (8,192 tokens through a
    12,288 / 2-wide MLP) is larger and binds; the log's 0.79 GiB besides the weights lies in the band.
    From 0.26.0 the logits are sampled as made (2 B), so at tp 2 the all-gather is the peak."""
    row = next(r for r in calibration.rows() if r["file"] == "vllm-qwen3-8b-2xt4-tp2-util085-8k-eager-llm-v0.22.0.log")
    e = evaluate(calibration.inputs(row))
    assert e.ok, e.errors
    scenario, release = e.scenario, e.scenario.settings.release
    forward, sampler, _, path = profile._runs(scenario, release, 8192, 256)[:4]
    logits, kept = 2 * 256 * 151936, 8192 * 4096 * 2 + 2 * 2 * 256 * 4096
    assert "V2 runner" in path and sampler == logits + 4 * 256 * 151936 + kept
    assert forward > sampler
    out = calibration.check(row)
    assert out["low"] <= out["total"] <= out["high"] and f"{out['total']:.2f}" == "0.79"
    later = profile._runs(scenario, releases.pep440("0.26.0"), 8192, 256)[1]
    assert later == 2 * logits + logits // 2 + kept
