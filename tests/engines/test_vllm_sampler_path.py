"""Issue 36: the sampler warm-up of vLLM's profiling run (_dummy_sampler_run) takes the top-k/top-p path
each release takes by default (engines/vllm/profile.py sampler_bytes, read in the wheels' vllm/envs.py,
vllm/v1/sample/ops/topk_topp_sampler.py and vllm/v1/worker/gpu_model_runner.py of 0.8.0, 0.9.0, 0.10.1,
0.11.0, 0.11.1, 0.12.0, 0.16.0, 0.17.0, 0.20.0, 0.21.0, 0.27.1, 0.29.0, 0.33.0). Worked on real public logs
(tests/fixtures/logs, URLs in SOURCES.md; their rows in tests/fixtures/logs/corpus/)."""

import json

from kvcalc.engines import releases
from kvcalc.engines.vllm import engine as vllm
from kvcalc.engines.vllm import profile
from kvcalc.evaluation import evaluate
from kvcalc.readers import gpu_presets
from kvcalc.readers.hfconfig import parse_config_text
from support import FIXTURES

LOGS = FIXTURES / "logs"
GIB = 1 << 30


def row(name: str) -> dict:
    for part in ("vllm.json", "vllm-2026.json"):
        for r in json.loads((LOGS / "corpus" / part).read_text(encoding="utf-8"))["logs"]:
            if r["file"] == name:
                return r
    raise KeyError(name)


def typed(name: str, **changes):
    """The row's typed inputs (as tools/accuracy.py evaluates them), evaluated."""
    values = dict(row(name)["inputs"], **changes)
    if "hf-config" in values:
        values["hf-config"] = parse_config_text((FIXTURES / values["hf-config"]).read_text(encoding="utf-8"))
    evaluation = evaluate(values)
    assert evaluation.ok, evaluation.errors
    return evaluation


def phases(evaluation):
    """(forward peak, (sampler peak, its lowest, path), rows, release) of the profiling run on rank 0."""
    scenario = evaluation.scenario
    release, chunk = vllm.release_of(scenario), vllm.default_chunk(scenario)
    rows = min(vllm.max_num_seqs(scenario), chunk)
    forward = profile.forward_peak(scenario.model, release, scenario.deployment.tp, chunk)[0]
    return forward, profile.sampler_peak(scenario.model, release, scenario.deployment.gpu, chunk, rows), rows, release


def text(name: str) -> str:
    return (LOGS / name).read_text(encoding="utf-8")


def test_v0_sorts_natively_on_the_driver():
    """vllm-qwen2.5-7b-4bit-rtx4060-8gb-util070-negative-v0.7.3.log prints "PyTorch activation peak memory
    takes 1.42GiB". V0 (0.7.3 vllm/worker/model_runner.py profile_run: SamplingParams(top_p=0.99,
    top_k=vocab - 1) over max_num_seqs 256 sequences) sorts 256 rows of Qwen2.5's 152,064 entries at
    38 B, keeps the 4,096 tokens' bf16 hidden states, and adds the pre-Hopper cuBLAS workspace."""
    name = "vllm-qwen2.5-7b-4bit-rtx4060-8gb-util070-negative-v0.7.3.log"
    assert "PyTorch activation peak memory takes 1.42GiB" in text(name)
    evaluation = typed(name)
    forward, (peak, lowest, path), rows, _ = phases(evaluation)
    assert (rows, path) == (256, "V0's native sort on the driver")
    assert peak == lowest == 38 * 256 * 152_064 + 4096 * 3584 * 2 + 2 * 2 * 256 * 3584 > forward
    activation = evaluation.engine.activation_bytes_per_gpu
    assert activation == peak + 4096 * 1024 * 2 + 16 * 1024 * 8 == 1_520_828_416
    assert f"{activation / GIB:.2f}" == "1.42"


def test_the_0_10_2_pip_wheel_sorts_natively_the_docker_image_samples_with_flashinfer():
    """vllm-llava-1.5-7b-awq-rtx4080-util085-4k-v0.10.2.log prints "0.34 GiB for peak activation". 0.10.2's
    V1 sampler takes FlashInfer whenever it is importable (VLLM_USE_FLASHINFER_SAMPLER unset is None, "in
    V1, None means True"), but the wheel lists flashinfer-python only as an extra: pip installs sort
    256 rows x 32,064 entries natively (38 B), 332,890,112 B with the kept hidden states, above the
    2,048-token forward. FlashInfer's 14 B (the docker image, the band's bottom) would print about 0.19."""
    name = "vllm-llava-1.5-7b-awq-rtx4080-util085-4k-v0.10.2.log"
    assert "0.34 GiB for peak activation" in text(name)
    evaluation = typed(name)
    forward, (peak, lowest, path), rows, _ = phases(evaluation)
    assert path == "native top-k/top-p (FlashInfer in the docker image)"
    kept = 2048 * 4096 * 2 + 2 * 2 * 256 * 4096
    assert (peak, lowest) == (38 * 256 * 32_064 + kept, 14 * 256 * 32_064 + kept) == (332_890_112, 135_888_896)
    assert peak > forward > lowest
    activation = evaluation.engine.activation_bytes_per_gpu
    assert abs(activation / GIB - 0.34) < 0.01
    assert (activation - peak + forward) / GIB < 0.20         # the docker image's FlashInfer, were it used


def test_rocm_takes_no_flashinfer_before_0_11_1():
    """0.10.1 topk_topp_sampler.py: FlashInfer only `if current_platform.is_cuda()`; else forward_native.
    The same llava log's launch on an MI300X keeps the native sort as the band's bottom too."""
    name = "vllm-llava-1.5-7b-awq-rtx4080-util085-4k-v0.10.2.log"
    evaluation = typed(name, **{"gpu": "mi300x-192gb", "gpu-memory-gib": None})
    _, (peak, lowest, path), rows, _ = phases(evaluation)
    chunk = vllm.default_chunk(evaluation.scenario)          # the larger GPU's defaults: 1,024 rows
    assert (rows, path) == (1024, "native top-k/top-p")
    assert peak == lowest == 38 * rows * 32_064 + chunk * 4096 * 2 + 2 * 2 * rows * 4096
    mi300x = gpu_presets.gpu("mi300x-192gb")
    assert profile.sampler_bytes(evaluation.scenario.model, releases.release("0.10.2"), 256, gpu=mi300x) \
        == (38, 38, "native top-k/top-p")


def test_from_0_17_0_the_triton_kernel_runs_from_8_rows():
    """vllm-llama3.1-8b-a100-80gb-tp1-32k-v0.17.1.log prints "Available KV cache memory: 55.79 GiB". FlashInfer
    is opt-in from 0.11.1 to 0.20.x (VLLM_USE_FLASHINFER_SAMPLER unset is None, read as off), so the native
    path runs, and from 0.17.0 its apply_top_k_top_p takes the Triton kernel from 8 rows (0.16.0 sorts):
    14 B x 256 x 128,256 plus the kernel's buffer of 108 A100 SMs' rows. Ours 55.69 GiB (-0.2%); the sort's
    38 B would leave 0.73 GiB less (-1.5%)."""
    name = "vllm-llama3.1-8b-a100-80gb-tp1-32k-v0.17.1.log"
    assert "Available KV cache memory: 55.79 GiB" in text(name)
    evaluation = typed(name)
    forward, (peak, _, path), rows, release = phases(evaluation)
    triton = profile.triton_buffer(evaluation.scenario.model, release, evaluation.scenario.deployment.gpu, rows)
    assert (path, triton) == ("Triton top-k/top-p", 4 * 108 * 128_256)
    assert peak == 14 * 256 * 128_256 + 2048 * 4096 * 2 + 2 * 2 * 256 * 4096 + triton > forward
    kv = evaluation.engine.kv_budget_bytes_per_gpu / GIB
    assert abs(kv / 55.79 - 1) < 0.003
    assert abs((kv - 24 * 256 * 128_256 / GIB) / 55.79 - 1) > 0.01
    model = evaluation.scenario.model
    assert profile.sampler_bytes(model, releases.release("0.16.0"), 256)[0] == 38
    assert profile.sampler_bytes(model, releases.release("0.17.1"), 7)[:2] == (38, 38)     # under 8 rows: the sort


def test_from_0_21_0_flashinfer_then_the_native_pass_makes_the_triton_buffer():
    """vllm-qwen3.6-27b-a100-80gb-tp2-64k-v0.27.1.log prints "2.32 GiB for peak activation" (its transient and
    the 0.96 GiB CUDA-graph estimate). From 0.21.0 VLLM_USE_FLASHINFER_SAMPLER defaults to True, and an A100
    samples the warm-up with FlashInfer; _dummy_sampler_run then warms forward_native with a generator
    ("Also warm forward_native", 0.21.0-0.33.0 gpu_model_runner.py), so apply_top_k_top_p's Triton kernel
    runs over 256 rows and caches its 108-row buffer (_TRITON_BUFFER_CACHE, never reset): kept after the
    run, counted as consumed memory from 0.27.0, not in the printed peak."""
    name = "vllm-qwen3.6-27b-a100-80gb-tp2-64k-v0.27.1.log"
    assert "2.32 GiB for peak activation" in text(name)
    evaluation = typed(name)
    _, (peak, _, path), rows, release = phases(evaluation)
    scenario = evaluation.scenario
    triton = profile.triton_buffer(scenario.model, release, scenario.deployment.gpu, rows)
    assert (path, rows, triton) == ("FlashInfer, then Triton", 256, 4 * 108 * 248_320)
    estimate = profile.estimate(scenario, release, vllm.default_chunk(scenario), vllm.max_num_seqs(scenario))
    assert estimate.kept >= triton
    # The printed 2.32 less the 0.96 estimate: a transient of 1.36 GiB; ours holds the sampler's pass and
    # the encoder's, the buffer left out.
    assert abs(estimate.activation / GIB - (2.32 - 0.96)) < 0.3
    # On ROCm both passes are forward_native (no FlashInfer; aiter's sampler off by default): the same bytes.
    mi300x = gpu_presets.gpu("mi300x-192gb")
    assert profile.sampler_bytes(scenario.model, release, 256, gpu=mi300x) == (14, 14, "Triton top-k/top-p")
