"""vLLM's memory outside PyTorch (engines/vllm/non_torch.py), by the GPU preset's facts and tp,
checked against the figures real start-up logs print (tests/fixtures/logs, each URL in SOURCES.md):
"non_torch_memory takes X GiB" (V0), "X GiB for non-torch memory" and "consumed memory (weights +
non-torch)" (V1). And the L40S's total as vLLM prints it."""

import json
from fractions import Fraction

import pytest

from kvcalc.engines.vllm import engine as vllm, non_torch, profile
from kvcalc.engines.vllm.printing import format_gib
from kvcalc.evaluation import evaluate
from kvcalc.inputs.startup_log import read_log
from kvcalc.readers.gpu_presets import gpu_from_row, gpus
from kvcalc.readers.presets import DATA
from support import FIXTURES

GIB = 1 << 30
LOGS = FIXTURES / "logs"


def printed(name: str) -> dict:
    return read_log((LOGS / name).read_text(encoding="utf-8")).values


def gib(text: str) -> int:
    return int(Fraction(text) * GIB)


def inside(figure: int, tp: int, gpu) -> bool:
    estimate, low, high, _ = non_torch.non_torch_memory(tp, gpu)
    return low <= figure <= high


@pytest.mark.parametrize("name, gpu, figure", [
    # RTX 4080 16 GB (no preset: given by its 15.99 GiB), vLLM 0.10.2: "0.02 GiB for non-torch memory".
    ("vllm-llava-1.5-7b-awq-rtx4080-util085-4k-v0.10.2.log", None, "0.02"),
    # H100 PCIe, 0.10.2: 0.07; an 80 GB card (0.9.1, V0): "non_torch_memory takes 0.16GiB".
    ("vllm-llava-v1.6-mistral-7b-h100-pcie-llm-4k-v0.10.2.log", "h100-pcie-80gb", "0.07"),
    ("vllm-qwen3-0.6b-80gb-util080-8k-seqs8-v0-v0.9.1.log", None, "0.16"),
])
def test_one_discrete_gpu_keeps_a_little_outside_pytorch(name, gpu, figure):
    assert printed(name)["non-torch-gib"] == figure
    preset = gpus()[gpu] if gpu else None
    estimate, low, high, _ = non_torch.non_torch_memory(1, preset)
    assert estimate == 150 << 20 and low <= gib(figure) <= high
    assert abs(estimate - gib(figure)) < 150 << 20


def test_pcie_joined_l40s_at_tp_2_is_nccls_alone():
    """2x L40S, vLLM 0.8.2 (issue #15815): "non_torch_memory takes 0.30GiB". PCIe-joined cards: 0.25 GiB,
    0.05 under the log; NVLink's Hopper figure (1.0 GiB) would be 0.7 over."""
    assert printed("vllm-qwen2.5-32b-2xl40s-tp2-10k-v0-v0.8.2.log")["non-torch-gib"] == "0.30"
    l40s = gpus()["l40s-48gb"]
    estimate, low, high, words = non_torch.non_torch_memory(2, l40s)
    assert (estimate, low, high) == non_torch.PCIE == (256 << 20, 16 << 20, 800 << 20)
    assert low <= gib("0.30") <= high and gib("0.30") - estimate <= gib("0.05")
    assert words.startswith("non-torch memory 0.25 GiB at tp 2: 2 GPUs joined by PCIe;")


def test_a_gpu_given_only_by_its_memory_is_taken_as_pcie_joined_and_says_so():
    """16x RTX 3090 (tp 8 x pp 2), vLLM 0.8.1 (issue #15340): "total_gpu_memory (23.58GiB)" and
    "non_torch_memory takes 0.20GiB". Given only by its memory, the GPU was taken as NVLink-joined
    (1.5 GiB at tp 8, 1.3 over); now as a workstation's PCIe card (0.25 GiB), and the words say so,
    with NVLink Hopper's 4.5 GiB as the band's top."""
    values = printed("vllm-deepseek-r1-q3km-gguf-16x3090-tp8-pp2-util094-v0-v0.8.1.log")
    assert values["gpu-memory-gib"] == "23.58" and "gpu" not in values
    log = (LOGS / "vllm-deepseek-r1-q3km-gguf-16x3090-tp8-pp2-util094-v0-v0.8.1.log").read_text(encoding="utf-8")
    assert "non_torch_memory takes 0.20GiB" in log
    estimate, low, high, words = non_torch.non_torch_memory(8, None)
    assert estimate == 256 << 20 and low <= gib("0.20") <= high and high == non_torch.NVLS[8][2] == 4608 << 20
    assert "a GPU given only by its memory is taken as a workstation's, joined by PCIe" in words
    assert "NVLink-joined Hopper cards keep up to 4.5 GiB, the band's top" in words
    # The same words reach the answer's note.
    e = evaluate({"model": "meta-llama/Llama-3.1-8B", "engine": "vllm", "gpu-memory-gib": "23.58", "gpus": "8",
                  "tp": "8"})
    assert any("taken as a workstation's, joined by PCIe" in n for n in e.engine.notes)


def test_nvlink_on_hopper_keeps_nccls_nvls_buffers():
    """4x H200, vLLM 0.10.0 dev (PR #21429): "non-torch forward increase memory: 2.04GiB". Hopper on
    NVLink: 1.56 GiB at tp 4, the band 0.29-3.0 GiB."""
    assert printed("vllm-qwen3-235b-a22b-fp8-tp4-h200-util05-debug-v0.10.0dev.log")["non-torch-gib"] == "2.04"
    h200 = gpus()["h200-141gb"]
    estimate, low, high, words = non_torch.non_torch_memory(4, h200)
    assert (estimate, low, high) == (1600 << 20, 300 << 20, 3072 << 20) and low <= gib("2.04") <= high
    assert "joined by NVLink on Hopper or later" in words
    # At tp 2 Hopper keeps 1.0 GiB (1.38 on an H200 in issue 36; the old rule's 0.49 under both).
    assert non_torch.non_torch_memory(2, h200)[0] == 1 << 30


def test_nvlink_before_hopper_keeps_far_less():
    """2x A100 80GB, vLLM 0.27.1: "25.86 GiB for consumed memory (weights + non-torch)" and "Model loading
    took 25.69 GiB": 0.17 GiB outside PyTorch. No NVLink SHARP before compute capability 9.0: 0.25 GiB."""
    values = printed("vllm-qwen3.6-27b-a100-80gb-tp2-64k-v0.27.1.log")
    reading = read_log((LOGS / "vllm-qwen3.6-27b-a100-80gb-tp2-64k-v0.27.1.log").read_text(encoding="utf-8"))
    figure = reading.printed["consumed_gib"].value - Fraction(values["loaded-weights-gib"])
    assert figure == Fraction("0.17")
    a100 = gpus()["a100-sxm-80gb"]
    estimate, low, high, words = non_torch.non_torch_memory(2, a100)
    assert estimate == 256 << 20 and inside(int(figure * GIB), 2, a100)
    assert not inside(int(figure * GIB), 2, gpus()["h100-sxm-80gb"])      # Hopper's band starts at 0.2 GiB
    assert "joined by NVLink (NCCL and custom all-reduce buffers)" in words


def test_unified_memory_counts_the_hosts_share():
    """DGX Spark (GB10, unified memory), vLLM 0.25.1, --gpu-memory-utilization 0.85: "Model loading took
    16.63 GiB", "Available KV cache memory: 83.89 GiB", "Estimated CUDA graph memory: 0.14 GiB". With the
    121.69 GiB CUDA reports on a Spark (the preset's), vLLM took 0.85 x 121.69 - 16.63 - 83.89 = 2.92 GiB
    besides the weights: ours 2.56 with 2.2 GiB of it the host's share (MemorySnapshot reads the host's
    available memory on GB10); a discrete GPU's 0.15 GiB would leave it 2 GiB short. Ours profiles the
    log's own 2,496-token step (GB10's small tier raised for Gemma 4's video: release.batch_defaults); the
    0.36 GiB left is inside the band, where Gemma 4's vision encoder pass (its tower not read) is bounded."""
    name = "vllm-gemma4-26b-a4b-awq-int4-dgx-spark-util085-262k-v0.25.1.log"
    values = printed(name)
    assert (values["loaded-weights-gib"], values["kv-memory-gib"]) == ("16.63", "83.89")
    spark = gpus()["dgx-spark-128gb"]
    assert spark.unified_memory and format_gib(spark.torch_memory_bytes) == "121.69"
    implied = Fraction("0.85") * Fraction(spark.torch_memory_bytes, GIB) - Fraction("16.63") - Fraction("83.89")
    assert round(float(implied), 2) == 2.92
    e = evaluate({"model": "google/gemma-4-26B-A4B", "engine": "vllm", "engine-version": "0.25.1",
                  "gpu": "dgx-spark-128gb", "memory-utilization": "0.85", "batch": "32", "context": "262144"})
    s = e.scenario
    est = profile.estimate(s, s.settings.release, e.engine.prefill_chunk, vllm.max_num_seqs(s))
    assert est.non_torch == non_torch.UNIFIED[0] == 2250 << 20
    assert e.engine.prefill_chunk == 2496
    assert est.low <= implied * GIB <= est.high and abs(est.total - implied * GIB) < GIB * 4 // 10
    assert "non-torch memory 2.2 GiB (unified memory: vLLM takes the host's available memory as the GPU's free " \
           "memory, so what the host and this process hold while it starts moves the KV memory" in est.words


def test_windows_and_wsl2_are_the_bands_top_on_consumer_cards():
    """Issue 36's logs: about 0.56 GiB on WSL2 (tp 1), 0.74 GiB on Windows at tp 2. How the machine runs,
    not a GPU fact: inside the band of PCIe-joined and custom GPUs, and said; never the estimate."""
    for gpu in (gpus()["rtx-3090-24gb"], None):
        e1, _, top1, words1 = non_torch.non_torch_memory(1, gpu)
        e2, _, top2, words2 = non_torch.non_torch_memory(2, gpu)
        assert top1 >= gib("0.56") and top2 >= gib("0.74") and e1 < gib("0.2") and e2 < gib("0.3")
        assert "Windows / WSL2 keep more (up to 0.74 GiB): the band's top" in words1 and "Windows" in words2
    assert non_torch.non_torch_memory(1, gpus()["h100-sxm-80gb"])[3] == ""       # a datacenter board: nothing said


def test_intel_xpu_keeps_its_own_non_torch_allocation():
    """Intel XPU (vllm/v1/worker/xpu_worker.py counts (total - free) - torch's allocation): about 1.5 GiB
    in issue 36's log (no public XPU log among the fixtures)."""
    with open(f"{DATA}/gpus.json", encoding="utf-8") as fh:
        row = next(r for r in json.load(fh)["gpus"] if r["id"] == "l40s-48gb")
    row = dict(row, id="arc-test", vendor="Intel", platform="xpu", compute_capability=None, compute_units=None)
    xpu = gpu_from_row(row)
    estimate, low, high, words = non_torch.non_torch_memory(1, xpu)
    assert (estimate, low, high) == non_torch.XPU == (1536 << 20, 512 << 20, 2560 << 20)
    assert "non-torch memory 1.5 GiB (Intel XPU's non-torch allocation)" in words


def test_the_l40s_total_is_the_one_vllm_prints():
    """2x L40S, vLLM 0.8.2: "total_gpu_memory (44.42GiB) x gpu_memory_utilization (0.90) = 39.98GiB".
    The preset's PyTorch total is 44.42 GiB (it was 44.53, 0.11 over)."""
    values = printed("vllm-qwen2.5-32b-2xl40s-tp2-10k-v0-v0.8.2.log")
    l40s = gpus()["l40s-48gb"]
    assert values["gpu-memory-gib"] == format_gib(l40s.torch_memory_bytes) == "44.42"
    assert format_gib(int(l40s.torch_memory_bytes * Fraction("0.9"))) == "39.98"
