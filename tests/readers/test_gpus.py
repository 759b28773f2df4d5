"""GPU presets added for issue 21: every row's bytes worked out from what its source prints, every
figure sourced, and a figure no public source gives left out (and the test says which)."""

import re
from fractions import Fraction

import pytest

from kvcalc.inputs.form_blocks import gpu_choices
from kvcalc.readers.gpu_presets import gpu, gpus

from support import cli

MiB, GiB = 1 << 20, 1 << 30
URL = re.compile(r"\b[a-z0-9-]+(\.[a-z0-9-]+)*\.[a-z]{2,}/\S+|[\w.-]+/[\w.-]+ (issue|PR) #\d+")
TFLOPS = 10 ** 12

# id -> exact bytes, worked out the way the seeds work numbers.
MEMORY = {
    # 96 GB HBM3; nvidia-smi prints 97,871 MiB (NVIDIA/nvtrust #128), the same as GH200's 96 GB HBM3.
    "h20-96gb": 97_871 * MiB,                       # 102,625,181,696 B = 95.58 GiB
    # "186 GB" per GPU (13.4 TB / 72); nvidia-smi -q -x prints 189,471 MiB (k8s-test-infra qx-gb200.xml).
    "gb200-186gb": 189_471 * MiB,                   # 198,674,743,296 B = 185.03 GiB
    # "288 GB" per GPU; nvidia-smi -q -x prints 284,208 MiB (qx-gb300.xml), more than HGX B300's 275,040.
    "gb300-288gb": 284_208 * MiB,                   # 298,013,687,808 B = 277.55 GiB
    # 96 GB GDDR7 = 32 chips x 3 GiB = 98,304 MiB on the board; nvidia-smi prints 97,887 MiB (antirez/ds4 #431).
    "rtx-pro-6000-96gb": 97_887 * MiB,              # 102,641,958,912 B = 95.59 GiB
    # Server Edition: no device figure found, so the board's 32 x 24 Gbit = 96 x 2^30 exactly.
    "rtx-pro-6000-server-96gb": 32 * 3 * GiB,       # 103,079,215,104 B
    # 48 GB GDDR6 with ECC on: nvidia-smi prints 46,068 MiB, as on the L40S (49,140 MiB with ECC off).
    "l40-48gb": 46_068 * MiB,                       # 48,305,799,168 B = 44.99 GiB
    "a40-48gb": 46_068 * MiB,
    "rtx-6000-ada-48gb": 46_068 * MiB,
    # 128 GB LPDDR5x installed, DRAM sized in powers of two like the Apple rows: 128 x 2^30.
    "dgx-spark-128gb": 128 * GiB,                   # 137,438,953,472 B
}

# The total PyTorch sees, where a public log prints it (to 0.01 GiB); None where no source gives one.
TORCH = {
    "rtx-pro-6000-96gb": round(Fraction("94.97") * GiB),     # ds4 #431: "total=94.97 GiB"
    "rtx-6000-ada-48gb": round(Fraction("44.43") * GiB),     # MTVCrafter #21: "total capacity of 44.43 GiB"
    "dgx-spark-128gb": round(Fraction("121.69") * GiB),      # MiaAI-Lab #47: CUDA total 121.69 GiB
    "h20-96gb": None, "gb200-186gb": None, "gb300-288gb": None,
    "rtx-pro-6000-server-96gb": None, "l40-48gb": None, "a40-48gb": None,
}

BANDWIDTH = {
    "h20-96gb": 4_000 * 10 ** 9, "gb200-186gb": 576 * 10 ** 12 // 72, "gb300-288gb": 576 * 10 ** 12 // 72,
    "rtx-pro-6000-96gb": 512 // 8 * 28 * 10 ** 9,            # 512-bit at 28 Gbps = 1,792 GB/s
    "rtx-pro-6000-server-96gb": 512 // 8 * 28 * 10 ** 9,
    "l40-48gb": 864 * 10 ** 9, "a40-48gb": 696 * 10 ** 9, "rtx-6000-ada-48gb": 960 * 10 ** 9,
    "dgx-spark-128gb": 273 * 10 ** 9,
}

# Dense FLOP/s as recorded; None where no source gives per-precision dense figures.
PEAKS = {
    "h20-96gb": {"bf16": 148 * TFLOPS, "fp8": 296 * TFLOPS, "int8": 296 * TFLOPS},
    # NVL72: 360 / 720 / 1,440 / 720 PFLOPS sparse per 72 GPUs, halved for dense.
    "gb200-186gb": {p: v * 10 ** 15 // 72 // 2 for p, v in
                    {"bf16": 360, "fp8": 720, "fp4": 1_440, "int8": 720}.items()},
    # GB300 NVL72: FP4 1,080 PFLOPS dense; FP8 720 and BF16 360 sparse; per 72 GPUs.
    "gb300-288gb": {"bf16": 360 * 10 ** 15 // 144, "fp8": 720 * 10 ** 15 // 144, "fp4": 1_080 * 10 ** 15 // 72},
    "rtx-pro-6000-96gb": {"bf16": Fraction("503.8") * TFLOPS, "fp8": Fraction("1007.6") * TFLOPS,
                          "fp4": Fraction("2015.2") * TFLOPS},
    "l40-48gb": {"bf16": Fraction("181.05") * TFLOPS, "fp8": 362 * TFLOPS, "int8": 362 * TFLOPS},
    "a40-48gb": {"bf16": Fraction("149.7") * TFLOPS, "int8": Fraction("299.3") * TFLOPS},
    "rtx-pro-6000-server-96gb": None,   # no per-edition clocks published
    "rtx-6000-ada-48gb": None,          # no dense per-precision figures found
    "dgx-spark-128gb": None,            # only "1 PFLOP FP4 with sparsity" is published
}
FP8_IS_TWICE_BF16 = ["h20-96gb", "gb200-186gb", "gb300-288gb", "rtx-pro-6000-96gb"]


@pytest.mark.parametrize("gpu_id", MEMORY)
def test_new_row_has_its_exact_bytes_and_sources(gpu_id):
    g = gpus()[gpu_id]
    assert g.memory_bytes == MEMORY[gpu_id]
    assert g.bandwidth_bytes_per_s == BANDWIDTH[gpu_id] > 0
    assert g.torch_memory_bytes == TORCH[gpu_id]
    assert (g.torch_memory_source is None) == (TORCH[gpu_id] is None)
    assert g.memory_note and g.source and g.vendor == "NVIDIA"
    if PEAKS[gpu_id] is None:
        assert g.peak_flops is None and g.peak_flops_source is None
    else:
        assert g.peak_flops == PEAKS[gpu_id] and g.peak_flops_source
        assert all(isinstance(v, int) and v > 0 for v in g.peak_flops.values())
        assert g.peak_flops.get("bf16", 0) > 0        # compute falls back to bf16: it must be there


def test_worked_numbers():
    assert MEMORY["h20-96gb"] == 102_625_181_696 == gpus()["gh200-96gb"].memory_bytes
    assert MEMORY["gb200-186gb"] == 198_674_743_296 and round(MEMORY["gb200-186gb"] / GiB, 2) == 185.03
    assert MEMORY["gb300-288gb"] == 298_013_687_808 and round(MEMORY["gb300-288gb"] / GiB, 2) == 277.55
    assert MEMORY["rtx-pro-6000-96gb"] == 102_641_958_912 and 96 * 1024 - 97_887 == 417
    assert MEMORY["rtx-pro-6000-server-96gb"] == 103_079_215_104
    assert MEMORY["l40-48gb"] == 48_305_799_168 == gpus()["l40s-48gb"].memory_bytes
    assert MEMORY["dgx-spark-128gb"] == 137_438_953_472
    assert BANDWIDTH["rtx-pro-6000-96gb"] == 1_792_000_000_000 and BANDWIDTH["gb200-186gb"] == 8 * 10 ** 12
    assert PEAKS["gb200-186gb"] == {"bf16": 2_500 * TFLOPS, "fp8": 5_000 * TFLOPS, "fp4": 10_000 * TFLOPS,
                                    "int8": 5_000 * TFLOPS}
    assert PEAKS["gb300-288gb"] == {"bf16": 2_500 * TFLOPS, "fp8": 5_000 * TFLOPS, "fp4": 15_000 * TFLOPS}


@pytest.mark.parametrize("gpu_id", FP8_IS_TWICE_BF16)
def test_fp8_is_twice_bf16_where_the_datasheet_says_so(gpu_id):
    peaks = gpus()[gpu_id].peak_flops
    assert peaks["fp8"] == 2 * peaks["bf16"]


def test_sources_name_where_the_figures_come_from():
    for gpu_id in MEMORY:
        g = gpus()[gpu_id]
        assert "MiB" in g.memory_note or "2^30" in g.memory_note or "GiB" in g.memory_note, gpu_id
        # Each source names a page (a host and path) or a public thread (owner/repo issue or PR #n).
        for part in filter(None, [g.source, g.torch_memory_source, g.peak_flops_source]):
            assert URL.search(part), (gpu_id, part)
    # Sparse datasheet figures were halved, and the row says so.
    for gpu_id in ("h20-96gb", "gb200-186gb", "gb300-288gb", "rtx-pro-6000-96gb", "l40-48gb", "a40-48gb"):
        assert "dense" in gpus()[gpu_id].peak_flops_source or "sparsity" in gpus()[gpu_id].peak_flops_source


def test_total_pytorch_sees_is_below_what_the_device_reports():
    for gpu_id, torch in TORCH.items():
        if torch is not None and not gpus()[gpu_id].unified_memory:
            assert 0 <= MEMORY[gpu_id] - torch < GiB, gpu_id


def test_unified_memory_devices_are_marked_and_say_the_system_shares_it():
    unified = {g.id for g in gpus().values() if g.unified_memory}
    assert unified == {"dgx-spark-128gb"} | {g.id for g in gpus().values() if g.vendor == "Apple"}
    assert len(unified) >= 5
    for gpu_id in unified:
        note = gpus()[gpu_id].memory_note
        assert "CPU" in note and "OS" in note and "not all of it is for the model" in note, gpu_id
    for g in gpus().values():
        assert g.unified_memory is (g.id in unified)    # a plain bool on every row, False by default


def test_new_gpus_resolve_by_id_and_name_and_are_listed():
    code, out, err = cli("--list-gpus")
    assert code == 0 and not err
    listed = {line.split()[0] for line in out.splitlines()}
    for gpu_id in MEMORY:
        assert gpu_id in listed
        assert gpu(gpu_id.upper()).id == gpu_id
        assert gpu(gpus()[gpu_id].name).id == gpu_id
    assert f"{MEMORY['gb200-186gb'] / GiB:8.2f} GiB" in out


def test_a_unified_gpu_still_sizes_and_a_gpu_without_peaks_says_so():
    from kvcalc import evaluate
    spark = evaluate({"model": "meta-llama/Llama-3.1-8B", "gpu": "dgx-spark-128gb"})
    assert spark.ok and spark.result.max_concurrency > 0
    code, out, _ = cli("--model", "meta-llama/Llama-3.1-8B", "--gpu", "rtx-6000-ada-48gb", "--json")
    assert code == 0


def test_a_unified_memory_device_says_the_system_shares_it():
    """DGX Spark's 128 GiB of LPDDR5x holds the OS and the CPU's work too: the figures say so,
    unless the memory given is what the machine leaves free."""
    from kvcalc.evaluation import evaluate
    shared = evaluate({"model": "meta-llama/Llama-3.1-8B", "gpu": "dgx-spark-128gb"}).scenario.warnings
    assert any("128 GiB of unified memory shared with the CPU and the operating system" in w for w in shared)
    given = evaluate({"model": "meta-llama/Llama-3.1-8B", "gpu": "dgx-spark-128gb",
                      "gpu-memory-gib": "100"}).scenario.warnings
    assert not any("unified memory" in w for w in given)
    assert not any("unified memory" in w for w in evaluate(
        {"model": "meta-llama/Llama-3.1-8B", "gpu": "h100-sxm-80gb"}).scenario.warnings)


def test_mig_instances_are_listed_after_the_whole_gpus():
    """--list-gpus and the page's select: the whole GPUs first, as before; the MIG instances after them
    (the CLI under a line saying what they are), each with its instance memory (39.50 GiB for the H100's
    3g.40gb, as nvidia-smi mig -lgip prints it) and its 4/8 of 3.35 TB/s."""
    code, out, err = cli("--list-gpus")
    assert code == 0 and not err
    lines = out.splitlines()
    (header,) = [i for i, line in enumerate(lines) if line.startswith("MIG instances")]
    ids = [line.split()[0] for line in lines]
    assert all(gpus()[gpu_id].mig_of is None for gpu_id in ids[:header])
    assert ids[header + 1:] and all(gpus()[gpu_id].mig_of for gpu_id in ids[header + 1:])
    (row,) = [line for line in lines if line.startswith("h100-sxm-80gb-mig-3g-40gb ")]
    assert row.split()[-4:] == ["39.50", "GiB", "1.68", "TB/s"]
    choices = [gpu_id for gpu_id, _ in gpu_choices()]
    assert choices == ids[:header] + ids[header + 1:] and choices[0] == "a100-sxm-40gb"
    assert dict(gpu_choices())["h100-sxm-80gb-mig-3g-40gb"] == "NVIDIA H100 SXM 80GB MIG 3g.40gb (39.5 GiB)"
