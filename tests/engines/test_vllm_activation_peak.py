"""vLLM's activation peak as its start-up log prints it (issue 36), checked against real logs
(tests/fixtures/logs, each URL in SOURCES.md).

Two rules of engines/vllm/profile.py, each from vLLM's own code:
- From 0.27.0 the "peak activation" a log prints is the profiling run's transient only: the torch peak less
  what is still allocated after the run (vllm/utils/mem_utils.py memory_profiling, transient_peak_headroom,
  0.27.1 and 0.29.0 wheels), plus the CUDA-graph estimate (gpu_worker.py determine_available_memory). What the
  run keeps (the cuBLAS workspace, the MoE workspace, the Triton sampler's buffer) is in its "consumed memory"
  instead: Estimate.kept. Until 0.26.x the log printed the torch peak increase, the kept part inside it.
- From 0.22.0 the fused MoE's Triton experts run as a modular kernel whose workspace is (M, topk, max(N/2, K))
  and (M, topk, max(N, K)), N = 2 x expert width / tp, K = hidden (fused_moe/experts/triton_moe.py
  workspace_shapes), held by the worker's WorkspaceManager; before, fused_experts_impl's max(N, K) + N/2.
"""

import json

from kvcalc.engines.vllm import engine as vllm, profile
from kvcalc.evaluation import evaluate
from kvcalc.readers.hfconfig import parse_config_text

from support import FIXTURES

LOGS = FIXTURES / "logs"
GIB = 1 << 30
MIB = 1 << 20


def text(name: str) -> str:
    return (LOGS / name).read_text(encoding="utf-8")


def estimate(values: dict):
    e = evaluate(values)
    assert e.ok, e.errors
    scenario = e.scenario
    release = scenario.settings.release
    chunk, seqs = e.engine.prefill_chunk, vllm.max_num_seqs(scenario)
    return e, profile.estimate(scenario, release, chunk, seqs), profile._runs(scenario, release, chunk, seqs)


def printed(est, release) -> int:
    """Our figure for the log's "peak activation": from 0.27.0 the transient plus the CUDA-graph estimate."""
    return est.activation + (est.cudagraph if release.at_least(*profile.PEAK_IS_TRANSIENT) else 0)


# Qwen3-235B-A22B-Instruct-2507-FP8 at tp 4 on four RTX PRO 6000 Blackwell Server cards, vLLM 0.27.1,
# --max-model-len 32768 --max-num-seqs 32 --gpu-memory-utilization 0.90 (the post's launch command).
BLOG = "vllm-qwen3-235b-a22b-fp8-4x-rtx-pro-6000-tp4-32k-seqs32-v0.27.1.log"
BLOG_INPUTS = {"engine": "vllm", "engine-version": "0.27.1", "model": "Qwen/Qwen3-235B-A22B", "weights-dtype": "fp8",
               "gpu": "rtx-pro-6000-server-96gb", "gpus": "4", "tp": "4", "context": "32768", "batch": "32",
               "memory-utilization": "0.9"}


def test_moe_at_tp_4_on_0_27_1_prints_the_transient_over_what_the_run_keeps():
    """The post's log prints "0.76 GiB for peak activation" (with "56.89 GiB for consumed memory"). The dummy
    forward runs 8,192 tokens (the default for a GPU past 70 GiB). Its transient is the hidden states the layer
    keeps: 8,192 x 2 B x (5 rows of Qwen3's MLP path at tp > 1, plus the MoE output) x 4,096 = 402,653,184 B;
    the Triton sampler's buffer, made after that peak and kept, lowers the headroom by 4 x 32 rows x 151,936
    entries = 19,447,808 B: 383,205,376 B. The CUDA-graph estimate: 11 PIECEWISE and 7 FULL graphs x 94 layers
    x 256 KiB = 443,547,648 B. Together 826,753,024 B = 0.77 GiB against 0.76 (it was 1.37 GiB when the
    MoE workspace and the cuBLAS workspace were counted in the peak)."""
    log = text(BLOG)
    assert "0.76 GiB for peak activation" in log and "56.89 GiB for consumed memory" in log
    e, est, (forward, sampler, *_) = estimate(BLOG_INPUTS)
    assert e.engine.prefill_chunk == 8192 and est.cudagraph == 18 * 94 * 256 * 1024 == 443_547_648
    moe = profile.moe_workspace(e.scenario.model, e.scenario.settings.release, 8192, 4)
    triton = 4 * 32 * 151_936
    assert forward - moe == 8192 * 2 * 6 * 4096 == 402_653_184 and sampler < forward - moe
    assert est.activation == 402_653_184 - triton == 383_205_376
    assert est.kept == 32 * MIB + moe + triton            # the Blackwell cuBLAS workspace, MoE, Triton
    ours = printed(est, e.scenario.settings.release)
    assert ours == 826_753_024 and abs(ours / GIB - 0.76) <= 0.02
    assert e.engine.activation_bytes_per_gpu == est.activation


def test_the_same_start_up_before_0_27_0_counts_what_it_keeps_in_the_peak():
    """Until 0.26.x vLLM printed the torch peak increase (0.26.0 gpu_worker.py: peak_activation_memory =
    torch_peak_increase), so the same inputs at 0.26.0 take the MoE and cuBLAS workspaces inside the peak;
    the total both releases subtract is the same sum."""
    _, at_27, _ = estimate(BLOG_INPUTS)
    e, at_26, (forward, sampler, *_) = estimate({**BLOG_INPUTS, "engine-version": "0.26.0"})
    assert at_26.kept == 0 and at_26.activation == max(forward, sampler) + 32 * MIB
    assert at_26.activation == at_27.activation + at_27.kept
    assert at_26.total - at_26.cudagraph == at_27.total - at_27.cudagraph


def test_the_moe_workspace_is_the_modular_triton_experts_from_0_22_0():
    """Qwen3-235B's experts at tp 4: N = 2 x 1,536 / 4 = 768, K = 4,096, top 8, 8,192 tokens in bf16. From 0.22.0:
    2 x 8,192 x 8 x (max(384, 4,096) + max(768, 4,096)) = 1,073,741,824 B, kept by the WorkspaceManager; 0.21's
    fused_experts_impl: 2 x 8,192 x 8 x (max(768, 4,096) + 384) = 587,202,560 B. The post's log: 85.51 GiB
    requested - 55.19 of weights - 27.85 of KV = 2.47 GiB subtracted; ours 2.07 GiB (1.62 with the older
    shape), inside the band."""
    e, est, _ = estimate(BLOG_INPUTS)
    model = e.scenario.model
    assert (model.moe_mlp_size, model.hidden_size, model.experts_per_token) == (1536, 4096, 8)
    release = e.scenario.settings.release
    assert profile.moe_workspace(model, release, 8192, 4) == 2 * 8192 * 8 * (4096 + 4096) == 1_073_741_824
    before = evaluate({**BLOG_INPUTS, "engine-version": "0.21.0"}).scenario.settings.release
    assert profile.moe_workspace(model, before, 8192, 4) == 2 * 8192 * 8 * (4096 + 384) == 587_202_560
    logged = 85.51 - 55.19 - 27.85
    low, high = sorted(end.overhead_bytes_per_gpu / GIB for end in e.engine.band)
    assert low <= logged <= high
    assert abs(est.total / GIB - logged) <= 0.41


def test_the_moe_workspace_on_a_0_26_1_a100_log():
    """vllm-qwen3-coder-30b-a3b-a100-80gb-util090-131k-seqs16-v0.26.1rc1.log: Qwen3-Coder-30B-A3B in bf16 on an
    A100 at 2,048 tokens (N = 2 x 768 = 1,536, K = 2,048, top 8): 2 x 2,048 x 8 x (2,048 + 2,048) = 134,217,728 B
    where fused_experts_impl's shape took 92,274,688. It prints 71.33 - 56.93 - 13.84 = 0.56 GiB subtracted;
    ours 0.46 GiB (0.42 before)."""
    log = text("vllm-qwen3-coder-30b-a3b-a100-80gb-util090-131k-seqs16-v0.26.1rc1.log")
    assert "Desired GPU memory utilization is (0.9, 71.33 GiB)" in log and "Available KV cache memory: 13.84 GiB" in log
    e, est, _ = estimate({"engine": "vllm", "engine-version": "0.26.1", "model": "Qwen/Qwen3-30B-A3B",
                          "gpu": "a100-sxm-80gb", "context": "131072", "batch": "16", "memory-utilization": "0.9"})
    assert e.engine.prefill_chunk == 2048
    assert profile.moe_workspace(e.scenario.model, e.scenario.settings.release, 2048, 1) == 134_217_728
    assert abs(est.total / GIB - (71.33 - 56.93 - 13.84)) <= 0.11


def test_a_sampler_phase_buffer_is_kept_not_peak_on_0_27_1():
    """vllm-qwen3.6-27b-a100-80gb-tp2-64k-v0.27.1.log prints "2.32 GiB for peak activation". Its largest phase is
    the vision encoder's pass (1.13 GiB, encoder_profile.py); what the run keeps is the A100's 8,519,680 B cuBLAS
    workspace and the Triton sampler's buffer, 4 x 108 SMs x 248,320 entries = 107,274,240 B (256 rows, capped at
    the SMs); the CUDA-graph estimate adds 86 graphs x 64 layers x 256 KiB. The log prints that estimate apart
    ("Estimated CUDA graph memory: 0.96 GiB"), so its transient is 2.32 - 0.96 = 1.36 GiB; ours is 1.20 GiB: the
    language model's run with the image's cached tokens and its pixel values, which V1's profile_run keeps
    (encoder_profile.py), over the encoder's own 1.13 GiB."""
    log = text("vllm-qwen3.6-27b-a100-80gb-tp2-64k-v0.27.1.log")
    assert "2.32 GiB for peak activation" in log and "Estimated CUDA graph memory: 0.96 GiB" in log
    e, est, _ = estimate(_row_inputs("vllm-qwen3.6-27b-a100-80gb-tp2-64k-v0.27.1.log"))
    assert est.kept == 8_519_680 + 4 * 108 * 248_320 == 115_793_920
    assert est.cudagraph == 86 * 64 * 256 * 1024
    assert abs(est.activation / GIB - (2.32 - 0.96)) <= 0.2


def test_before_0_27_0_the_printed_peak_still_holds_the_moe_at_tp_4():
    """vllm-qwen3-235b-a22b-fp8-tp4-h200-util05-debug-v0.10.0dev.log prints "torch peak memory increase: 5.62GiB"
    (0.10.0: the torch peak increase, kept parts inside). 1,024 rows of the native sampler over 151,936 entries
    bind, not the MoE at tp 4; nothing is set apart."""
    name = "vllm-qwen3-235b-a22b-fp8-tp4-h200-util05-debug-v0.10.0dev.log"
    assert "torch peak memory increase: 5.62GiB" in text(name)
    e, est, (forward, sampler, *_) = estimate(_row_inputs(name))
    assert est.kept == 0 and sampler > forward
    assert abs(printed(est, e.scenario.settings.release) / GIB - 5.62) <= 0.01


def _row_inputs(name: str) -> dict:
    """A corpus row's typed inputs (tests/fixtures/logs/corpus), its config read where it names one."""
    for path in sorted((LOGS / "corpus").glob("*.json")):
        for row in json.loads(path.read_text(encoding="utf-8"))["logs"]:
            if row["file"] == name:
                values = dict(row["inputs"])
                if isinstance(values.get("hf-config"), str):
                    config = (FIXTURES / values["hf-config"]).read_text(encoding="utf-8")
                    values["hf-config"] = parse_config_text(config)
                return values
    raise AssertionError(f"{name} is no corpus row")
