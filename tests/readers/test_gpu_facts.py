"""The GPU as a typed fact (issue 35): every preset in app/kvcalc/data/gpus.json states its platform,
compute capability (CUDA) or gfx target (ROCm), SMs / CUs, interconnect, unified memory and device
name, each with its source; a preset missing one is refused. The engine rules that read substrings
of the display name now ask these facts: the rules as they read the name before (kept below, word
for word) and the facts agree on every preset, except where the name rule fell to a default for a
card it did not name, and there the fact is the device's own (named below, with its source)."""

import json
import math
import re
from fractions import Fraction
from pathlib import Path

import pytest

from kvcalc.evaluation import evaluate
from kvcalc.engines.releases import release
from kvcalc.engines.vllm import allocator, non_torch, profile, release as vllm_release
from kvcalc.readers.gpu_presets import GPU_FACTS, gpu_from_row, gpus, whole_gpus
from kvcalc.readers.presets import DATA

MIB, GIB = 1 << 20, 1 << 30


def rows() -> list[dict]:
    with open(f"{DATA}/gpus.json", encoding="utf-8") as fh:
        return json.load(fh)["gpus"]


# ---- every preset states every fact ------------------------------------------------------------

def test_every_preset_states_every_fact_with_its_source():
    for row in rows():
        for fact in GPU_FACTS:
            assert fact in row, f"{row['id']} does not state {fact}"
        g = gpus()[row["id"]]
        if g.platform == "cuda":
            assert g.compute_capability is not None and g.gfx_arch is None, g.id
        if g.platform == "rocm":
            assert re.fullmatch(r"gfx9\d\d", g.gfx_arch) and g.compute_capability is None, g.id
        if g.platform in ("cuda", "rocm"):
            assert g.compute_units > 0, g.id              # engine rules read them there
        # The source names where each fact is from: a spec sheet, a whitepaper, a table, a log.
        assert re.search(r"whitepaper|datasheet|spec|table|print|log", g.facts_source), g.id
        assert g.device_name and g.interconnect and isinstance(g.unified_memory, bool)


def test_the_vendor_and_the_platform_go_together():
    platforms = {(g.vendor, g.platform) for g in gpus().values()}
    assert platforms == {("NVIDIA", "cuda"), ("AMD", "rocm"), ("Apple", "metal")}


@pytest.mark.parametrize("change, words", [
    (lambda row: row.pop("interconnect"), "does not state its interconnect"),
    (lambda row: row.pop("unified_memory"), "does not state its unified_memory"),
    (lambda row: row.pop("compute_capability"), "runs cuda and does not state its compute_capability"),
    (lambda row: row.update(platform="vulkan"), "platform 'vulkan' is none of cuda, rocm, xpu, metal"),
    (lambda row: row.update(interconnect="infiniband"), "interconnect 'infiniband' is none of"),
    (lambda row: row.update(compute_units=None), "compute_units (its SMs or CUs) are read by engine rules"),
    (lambda row: row.update(compute_capability="9.0"), "compute_capability is [major, minor]"),
    (lambda row: row.update(gfx_arch="gfx942"), "gfx_arch is a fact of ROCm devices, not of a cuda one"),
])
def test_a_preset_missing_a_fact_or_giving_an_unknown_word_is_refused(change, words):
    row = next(r for r in rows() if r["id"] == "h100-sxm-80gb")
    assert gpu_from_row(dict(row)).compute_capability == (9, 0)
    broken = dict(row)
    change(broken)
    with pytest.raises(ValueError) as refused:
        gpu_from_row(broken)
    assert "h100-sxm-80gb" in str(refused.value) and words in str(refused.value)


# ---- the worked examples, from their sources -------------------------------------------------

def test_worked_examples():
    g = gpus()
    # NVIDIA H100 whitepaper: H100 SXM5 132 SMs, H100 PCIe 114 SMs; CUDA GPUs table: 9.0.
    assert (g["h100-sxm-80gb"].compute_capability, g["h100-sxm-80gb"].compute_units,
            g["h100-sxm-80gb"].interconnect) == ((9, 0), 132, "nvlink")
    assert (g["h100-pcie-80gb"].compute_capability, g["h100-pcie-80gb"].compute_units,
            g["h100-pcie-80gb"].interconnect) == ((9, 0), 114, "pcie")
    # H100 NVL: a PCIe card whose pairs NVLink bridges join; 132 SMs.
    assert (g["h100-nvl-94gb"].compute_units, g["h100-nvl-94gb"].interconnect) == (132, "nvlink")
    # A100 whitepaper: 108 SMs; compute capability 8.0; torch's device name "NVIDIA A100-SXM4-80GB".
    assert {g[i].compute_capability for i in g if i.startswith("a100")} == {(8, 0)}
    assert g["a100-sxm-80gb"].device_name == "NVIDIA A100-SXM4-80GB"
    # DGX Spark: GB10, compute capability 12.1, 48 SMs, 128 GB shared with the Grace CPU.
    spark = g["dgx-spark-128gb"]
    assert (spark.compute_capability, spark.compute_units, spark.unified_memory, spark.device_name) == \
        ((12, 1), 48, True, "NVIDIA GB10")
    # ROCm's hardware table: MI300X 304 CUs gfx942, MI355X 256 CUs gfx950, on Infinity Fabric.
    assert (g["mi300x-192gb"].platform, g["mi300x-192gb"].gfx_arch, g["mi300x-192gb"].compute_units,
            g["mi300x-192gb"].interconnect) == ("rocm", "gfx942", 304, "xgmi")
    assert (g["mi355x-288gb"].gfx_arch, g["mi355x-288gb"].compute_units) == ("gfx950", 256)
    # Blackwell: B200 10.0 (148 SMs), B300 10.3 (148), GB300 10.3 (160), RTX 5090 12.0 (170).
    assert [(g[i].compute_capability, g[i].compute_units) for i in
            ("b200-180gb", "b300-288gb", "gb300-288gb", "rtx-5090-32gb")] == \
        [((10, 0), 148), ((10, 3), 148), ((10, 3), 160), ((12, 0), 170)]
    # Apple: Metal, unified; the M2 Ultra preset's GPU cores are not known (60 or 76 with 192 GB).
    assert g["m2-ultra-192gb"].compute_units is None and g["m3-ultra-512gb"].compute_units == 80
    assert all(x.unified_memory and x.platform == "metal" for x in g.values() if x.vendor == "Apple")


# ---- the rules that read the display name, as they read it before issue 35 -------------------

OLD_FLASH_MLA = ("H100", "H200", "H800", "H20", "GH200", "B200", "B300", "GB200")
OLD_HOPPER_OR_LATER = ("H100", "H200", "H800", "H20", "GH200", "B200", "B300", "GB200", "GB300", "5090", "PRO 6000")
OLD_SM_COUNTS = (("H100 PCIE", 114), ("GH200", 132), ("H100", 132), ("H200", 132), ("H800", 132), ("H20", 78),
                 ("GB200", 152), ("GB300", 160), ("B200", 148), ("B300", 148), ("A100", 108), ("A10G", 80),
                 ("L40S", 142), ("L40", 142), ("L4", 58), ("A40", 84), ("A6000", 84), ("6000 ADA", 142),
                 ("PRO 6000", 188), ("4090", 128), ("3090", 82), ("5090", 170), ("T4", 40), ("V100", 80))
OLD_PCIE_ONLY = re.compile(r"PCIE|RTX|GEFORCE|\bL40S?\b|\bL4\b|\bA10G?\b|\bT4\b|\bA40\b|A6000|6000 ADA|PRO 6000"
                           r"|\bA16\b|\bA2\b")


def old_sms(name: str) -> int | None:
    return next((n for tag, n in OLD_SM_COUNTS if tag in name.upper()), None)


def old_big(version: str, memory: int, name: str) -> bool:
    name, r = name.upper(), release(version)
    if not r.at_least(0, 8, 5):
        return "H100" in name or "H200" in name
    if memory < 70 * GIB:
        return False
    if "SPARK" in name or "GB10" in name:
        return False        # GB10's NVML has no memory query before 0.33.0, which names it (release._big)
    return not (r.at_least(0, 9, 0) and "A100" in name)


def test_flash_mla_blocks_by_compute_capability_agree_with_the_name_list():
    """FlashMLA's 64-token blocks on compute capability 9.x and 10.x: the Hopper and Blackwell
    datacenter cards the old list named, and no other."""
    for g in gpus().values():
        assert allocator._flash_mla_gpu(g) == any(t in g.name.upper() for t in OLD_FLASH_MLA), g.id
    assert allocator._flash_mla_gpu(None) is False


def test_pcie_from_the_interconnect_agrees_with_the_name_pattern():
    for g in gpus().values():
        name = g.name.upper()
        old = bool(OLD_PCIE_ONLY.search(name)) and "NVL" not in name
        assert (g.interconnect == "pcie") == old, g.id
        for tp in (2, 4, 8):
            assert (non_torch.non_torch_memory(tp, g)[:3] == non_torch.PCIE) == old, (g.id, tp)
    assert non_torch.non_torch_memory(2, None)[0] == non_torch.PCIE[0]    # a custom GPU: a PCIe workstation's


def test_rocm_from_the_platform_agrees_with_the_name():
    for g in gpus().values():
        name = g.name.upper()
        assert (g.platform == "rocm") == (name.startswith(("AMD", "MI")) or "INSTINCT" in name), g.id


@pytest.mark.parametrize("version", ["0.7.3", "0.8.4", "0.8.5", "0.9.0", "0.28.0", "0.32.0", "0.33.0"])
def test_vllm_batch_tiers_from_the_device_name_and_capability_agree_with_the_display_name(version):
    """vLLM reads its device's name (H100/H200 before 0.8.5, A100 from 0.9.0) and, from 0.33.0,
    compute capability 12.1 (GB10; before, NVML's missing memory query keeps GB10 small): the preset's
    device_name and compute_capability. A MIG instance's tier is its own rule (its test below)."""
    for g in whole_gpus().values():
        assert vllm_release._big(release(version), g.memory_bytes, g) == old_big(version, g.memory_bytes, g.name), \
            (g.id, version)


def test_sm_counts_agree_where_the_name_table_named_the_card():
    """The old table covered the CUDA cards it named; every other fell to an H100's 132. The facts
    give those their own: GB10's 48 SMs, the Instinct cards' CUs (vLLM's Triton sampler buffer is
    sized by current_platform.num_compute_units on ROCm too), the Apple GPUs' cores."""
    differ = {}
    for g in whole_gpus().values():         # a MIG instance's SMs are its profile's (its test below)
        named = old_sms(g.name)
        if named is not None:
            assert profile.compute_units(g) == named == g.compute_units, g.id
        elif profile.compute_units(g) != profile.DEFAULT_SMS:
            differ[g.id] = profile.compute_units(g)
    assert differ == {"dgx-spark-128gb": 48, "mi300x-192gb": 304, "mi325x-256gb": 304, "mi355x-288gb": 256,
                      "m3-max-128gb": 40, "m4-max-128gb": 40, "m3-ultra-512gb": 80}
    assert profile.compute_units(None) == profile.compute_units(gpus()["m2-ultra-192gb"]) == 132


def test_cublas_workspace_by_compute_capability_agrees_with_the_name_list_but_for_gb10():
    """PyTorch's CublasHandlePool.cpp: 32 MiB on compute capability 9.x to 12.x, 8 MiB + 128 KiB
    before. The old list had the 12.0 cards (RTX 5090, RTX PRO 6000) but not GB10 (12.1)."""
    differ = set()
    for g in gpus().values():
        old = 32 * MIB if any(t in g.name.upper() for t in OLD_HOPPER_OR_LATER) else 8 * MIB + 128 * 1024
        if profile.cublas_workspace(g) != old:
            differ.add(g.id)
    assert differ == {"dgx-spark-128gb"}
    assert profile.cublas_workspace(gpus()["dgx-spark-128gb"]) == 33_554_432
    assert profile.cublas_workspace(gpus()["a100-sxm-80gb"]) == 8_519_680
    assert profile.cublas_workspace(gpus()["mi300x-192gb"]) == 8_519_680      # ROCm: not modelled, as before
    assert profile.cublas_workspace(None) == 8_519_680                        # a custom GPU, as before


# ---- the deployment carries the preset ------------------------------------------------------

def test_the_deployment_carries_the_preset_and_a_custom_gpu_none():
    dep = evaluate({"model": "meta-llama/Llama-3.1-8B", "gpu": "h100-pcie-80gb"}).scenario.deployment
    assert dep.gpu is gpus()["h100-pcie-80gb"] and dep.gpu.interconnect == "pcie"
    assert not hasattr(dep, "gpu_name")
    custom = evaluate({"model": "meta-llama/Llama-3.1-8B", "gpu-memory-gib": "80"}).scenario.deployment
    assert custom.gpu is None and custom.gpu_memory_bytes == 80 * GIB


def test_deepseek_v3_on_h200_takes_64_token_blocks_and_on_an_rtx_pro_6000_16():
    """DeepSeek-V3's MLA on an H200 (compute capability 9.0): FlashMLA's 64-token blocks; on an
    RTX PRO 6000 (12.0), where FlashMLA does not run, vLLM's default 16."""
    base = {"model": "deepseek-ai/DeepSeek-V3", "engine": "vllm", "gpus": "8", "kv-memory-gib": "40"}
    assert evaluate(dict(base, gpu="h200-141gb")).engine.block_size == 64
    assert evaluate(dict(base, gpu="rtx-pro-6000-96gb")).engine.block_size == 16


def test_no_engine_rule_reads_the_display_name():
    """The engines ask the preset's facts: no rule under engines/ reads a GPU's display name (its
    `name`, or the deployment's gpu_name it replaced) to decide what the hardware is."""
    engines_dir = Path(DATA).parent / "engines"
    readers = re.compile(r"\bgpu_name\b|\bgpu\.name\b")
    found = [f"{p.relative_to(engines_dir)}:{n}" for p in sorted(engines_dir.rglob("*.py"))
             for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1) if readers.search(line)]
    assert found == []


# ---- MIG instances (issue 41, part 4a) ---------------------------------------------------------
# Each instance's memory as `nvidia-smi mig -lgip` prints it (GiB to 0.01; the MiB below, every one a
# multiple of 1/8 GiB), its SMs from the same listing, its memory slices of 8 from `-lgipp` and the
# MIG user guide's Fraction of Memory column. Sources (the rows' own): H100 80GB HBM3, stackhpc/
# ansible-slurm-appliance docs/mig.md; H100 NVL, NVIDIA/gpu-operator PR #900 and NVIDIA/mig-parted
# PR #101; H200, NVIDIA/mig-parted issue #120; B200, NVIDIA/gpu-operator PR #1351 (March 2025);
# GB200, NVIDIA/mig-parted issue #227. B200's and GB200's 3g, 4g and 7g are left out: no listing of
# their memory was found.
MIG = {   # id: (GPU, profile, memory slices, SMs, MiB)
    "h100-sxm-80gb-mig-1g-10gb": ("h100-sxm-80gb", "1g.10gb", 1, 16, 9_984),
    "h100-sxm-80gb-mig-1g-20gb": ("h100-sxm-80gb", "1g.20gb", 2, 26, 20_096),
    "h100-sxm-80gb-mig-2g-20gb": ("h100-sxm-80gb", "2g.20gb", 2, 32, 20_096),
    "h100-sxm-80gb-mig-3g-40gb": ("h100-sxm-80gb", "3g.40gb", 4, 60, 40_448),
    "h100-sxm-80gb-mig-4g-40gb": ("h100-sxm-80gb", "4g.40gb", 4, 64, 40_448),
    "h100-sxm-80gb-mig-7g-80gb": ("h100-sxm-80gb", "7g.80gb", 8, 132, 81_152),
    "h100-nvl-94gb-mig-1g-12gb": ("h100-nvl-94gb", "1g.12gb", 1, 16, 11_008),
    "h100-nvl-94gb-mig-1g-24gb": ("h100-nvl-94gb", "1g.24gb", 2, 26, 22_144),
    "h100-nvl-94gb-mig-2g-24gb": ("h100-nvl-94gb", "2g.24gb", 2, 32, 22_144),
    "h100-nvl-94gb-mig-3g-47gb": ("h100-nvl-94gb", "3g.47gb", 4, 60, 47_488),
    "h100-nvl-94gb-mig-4g-47gb": ("h100-nvl-94gb", "4g.47gb", 4, 64, 47_488),
    "h100-nvl-94gb-mig-7g-94gb": ("h100-nvl-94gb", "7g.94gb", 8, 132, 95_360),
    "h200-141gb-mig-1g-18gb": ("h200-141gb", "1g.18gb", 1, 16, 16_384),
    "h200-141gb-mig-1g-35gb": ("h200-141gb", "1g.35gb", 2, 26, 33_024),
    "h200-141gb-mig-2g-35gb": ("h200-141gb", "2g.35gb", 2, 32, 33_024),
    "h200-141gb-mig-3g-71gb": ("h200-141gb", "3g.71gb", 4, 60, 71_168),
    "h200-141gb-mig-4g-71gb": ("h200-141gb", "4g.71gb", 4, 64, 71_168),
    "h200-141gb-mig-7g-141gb": ("h200-141gb", "7g.141gb", 8, 132, 143_104),
    "b200-180gb-mig-1g-23gb": ("b200-180gb", "1g.23gb", 1, 18, 20_992),
    "b200-180gb-mig-1g-45gb": ("b200-180gb", "1g.45gb", 2, 30, 45_312),
    "b200-180gb-mig-2g-45gb": ("b200-180gb", "2g.45gb", 2, 36, 45_312),
    "gb200-186gb-mig-1g-23gb": ("gb200-186gb", "1g.23gb", 1, 18, 22_528),
    "gb200-186gb-mig-1g-47gb": ("gb200-186gb", "1g.47gb", 2, 32, 46_592),
    "gb200-186gb-mig-2g-47gb": ("gb200-186gb", "2g.47gb", 2, 38, 46_592),
}


def test_the_mig_presets_are_the_sourced_profiles():
    assert {g.id for g in gpus().values() if g.mig_of} == set(MIG)
    for gpu_id, (parent, profile, slices, sms, mib) in MIG.items():
        g, whole = gpus()[gpu_id], gpus()[parent]
        assert (g.mig_of, g.mig_profile, g.mig_memory_slices, g.compute_units) == (parent, profile, slices, sms)
        assert g.memory_bytes == mib * MIB and g.torch_memory_bytes is None, gpu_id
        assert g.name == f"{whole.name} MIG {profile}" and g.device_name == f"{whole.device_name} MIG {profile}"
        assert (g.vendor, g.platform, g.compute_capability) == (whole.vendor, whole.platform, whole.compute_capability)
        assert g.interconnect == "none" and not g.unified_memory
        # Derived, and said so: an eighth of the GPU's bandwidth per memory slice (the MIG guide's Concepts),
        # the GPU's dense peaks times the instance's share of its SMs, rounded down.
        assert g.bandwidth_bytes_per_s * 8 == whole.bandwidth_bytes_per_s * slices
        assert g.peak_flops == {k: v * sms // whole.compute_units for k, v in whole.peak_flops.items()}
        assert "Bandwidth derived" in g.source and "concepts.html" in g.source and "lgip" in g.source
        assert g.peak_flops_source.startswith(f"derived: {parent}'s dense peaks x {sms}/{whole.compute_units} SMs")
        assert "nvidia-smi mig -lgip" in g.memory_note and "gpu-memory-gib" in g.memory_note


def test_a_profiles_name_is_its_memory_slices_of_the_gpus_memory_rounded():
    """go-nvlib's getMigMemorySizeGB, the calculation the driver uses (NVIDIA/gpu-operator issue #351):
    the name's GB = round(slices / 8 x the GPU's memory in GiB rounded up), halves away from zero. So the
    slices here are the ones the names were made from: H200 (143,771 MiB: 141 GiB up) 3g.71gb is
    4/8 x 141 = 70.5, rounded to 71; H100 NVL (95,830 MiB: 94) 1g.12gb is 1/8 x 94 = 11.75, to 12."""
    for gpu_id, (parent, profile, slices, _, mib) in MIG.items():
        whole_gib = -(-gpus()[parent].memory_bytes // GIB)
        named = math.floor(Fraction(slices, 8) * whole_gib + Fraction(1, 2))
        assert profile.endswith(f".{named}gb"), gpu_id
        assert mib * MIB < Fraction(slices, 8) * gpus()[parent].memory_bytes, gpu_id   # below its share: usable


def test_h100_3g_40gb_worked_by_hand():
    """H100 SXM 3g.40gb: 39.50 GiB in `nvidia-smi mig -lgip` = 40,448 MiB = 42,412,802,048 B, the
    MIG device NVIDIA's MIG user guide shows (40448MiB, 60 SMs); 4 of 8 memory slices x 3.35 TB/s =
    1.675 TB/s; 60 of 132 SMs x 989.4 dense BF16 TFLOPS = 449,727,272,727,272 FLOP/s (rounded down)."""
    g = gpus()["h100-sxm-80gb-mig-3g-40gb"]
    assert g.memory_bytes == 40_448 * MIB == 42_412_802_048 == int(Fraction("39.5") * GIB)
    assert g.bandwidth_bytes_per_s == 1_675_000_000_000
    assert g.peak_flops["bf16"] == 449_727_272_727_272 and g.peak_flops["fp8"] == 899_500_000_000_000
    assert g.device_name == "NVIDIA H100 80GB HBM3 MIG 3g.40gb" and g.compute_units == 60


def test_acceptance_h100_mig_3g_40gb_sizes_as_a_card_of_its_memory():
    """Llama 3.1 8B at 8,192 tokens on h100-sxm-80gb-mig-3g-40gb is the H100 with gpu-memory-gib 39.5.

    Exact ideal, by hand: KV per token 32 layers x 8 KV heads x 128 x 2 (K and V) x 2 B = 131,072 B,
    so 1,073,741,824 B a request; weights 16,060,522,496 B (the checkpoint's); KV budget
    42,412,802,048 - 16,060,522,496 = 26,352,279,552 B; floor(26,352,279,552 / 1,073,741,824) = 24
    requests (24.54).

    vLLM 0.33.0: it requests ceil(0.92 x 42,412,802,048) = 39,019,777,885 B (the instance's total: no
    PyTorch total is on record for it, nor for a typed memory) and takes the small tier's 2,048
    tokens and 256 requests on both (39.5 GiB is under the 70 GiB tier; a MIG instance is small
    anyway, vllm issue #55381). The one difference is the instance's 60 SMs: the Triton top-k/top-p
    buffer is 4 B x min(nextpow2(min(SMs, 256)), SMs) rows x 128,256 vocabulary = 4 x 60 x 128,256 =
    30,781,440 B on the instance against 4 x 132 x 128,256 = 67,719,168 B on the whole H100, so the
    instance keeps 36,937,728 B more KV: 21,366,579,037 B, 10,188 blocks of 16 tokens (2,097,152 B
    each) = 163,008 tokens, 19 requests of 8,192 (19.9); the H100 at 39.5 GiB: 21,329,641,309 B,
    162,720 tokens, 19 requests."""
    model = "meta-llama/Llama-3.1-8B"
    mig = evaluate({"model": model, "gpu": "h100-sxm-80gb-mig-3g-40gb"})
    card = evaluate({"model": model, "gpu": "h100-sxm-80gb", "gpu-memory-gib": "39.5"})
    assert mig.scenario.deployment.gpu_memory_bytes == card.scenario.deployment.gpu_memory_bytes == 42_412_802_048
    for r in (mig.result, card.result):
        assert (r.kv_budget_bytes_per_gpu, r.kv_bytes_per_request, r.max_concurrency) == \
            (26_352_279_552, 1_073_741_824, 24)
    assert mig.scenario.deployment.weights_bytes == 16_060_522_496
    mig_v, card_v = (evaluate({"model": model, "gpu": gpu, "engine": "vllm", **extra}).engine
                     for gpu, extra in (("h100-sxm-80gb-mig-3g-40gb", {}),
                                        ("h100-sxm-80gb", {"gpu-memory-gib": "39.5"})))
    assert math.ceil(Fraction(92, 100) * 42_412_802_048) == 39_019_777_885
    assert profile.triton_buffer(mig.scenario.model, release("0.33.0"), gpus()["h100-sxm-80gb-mig-3g-40gb"], 256) \
        == 4 * 60 * 128_256 == 30_781_440
    assert mig_v.kv_budget_bytes_per_gpu - card_v.kv_budget_bytes_per_gpu == 4 * (132 - 60) * 128_256 == 36_937_728
    assert (mig_v.kv_budget_bytes_per_gpu, mig_v.kv_tokens, int(mig_v.max_concurrency)) == (21_366_579_037, 163_008, 19)
    assert (card_v.kv_budget_bytes_per_gpu, card_v.kv_tokens, int(card_v.max_concurrency)) == \
        (21_329_641_309, 162_720, 19)
    assert mig_v.prefill_chunk == card_v.prefill_chunk == 2_048
    assert vllm_release.MIG_TIER_WORDS in mig_v.notes and vllm_release.MIG_TIER_WORDS not in card_v.notes


@pytest.mark.parametrize("version, big", [("0.8.4", True), ("0.8.5", False), ("0.33.0", False)])
def test_vllm_puts_a_mig_instance_on_the_small_tier_from_0_8_5(version, big):
    """Before 0.8.5 vLLM's tier is by device name ("h100" in "NVIDIA H100 80GB HBM3 MIG 7g.80gb"); from
    0.8.5 by NVML's total of the parent GPU, which a MIG container may not read: 0 bytes, the small tier
    (vllm-project/vllm issue #55381), even for a 79.25 GiB 7g.80gb the whole-GPU rule would call big."""
    g = gpus()["h100-sxm-80gb-mig-7g-80gb"]
    assert g.memory_bytes == 81_152 * MIB > vllm_release.BIG_GPU_BYTES
    assert vllm_release._big(release(version), g.memory_bytes, g) is big


def mig_row(**changes) -> dict:
    row = next(r for r in rows() if r["id"] == "h100-sxm-80gb-mig-3g-40gb")
    return {**row, **changes}


@pytest.mark.parametrize("row, words", [
    (mig_row(mig_of="h100-sxm-81gb"), "mig_of 'h100-sxm-81gb' is no whole GPU's preset above it"),
    (mig_row(mig_of="h100-sxm-80gb-mig-7g-80gb"), "mig_of 'h100-sxm-80gb-mig-7g-80gb' is no whole GPU's preset"),
    (mig_row(mig_of="mi300x-192gb"), "a MIG instance is mi300x-192gb's chip: its vendor, platform and compute"),
    (mig_row(mig_of="h200-141gb"), "bandwidth is its 4/8 of h200-141gb's 4,800,000,000,000 B/s"),
    (mig_row(mig_profile="3g40gb"), "mig_profile '3g40gb' is not a profile such as 3g.40gb"),
    (mig_row(mig_profile="8g.90gb"), "mig_profile '8g.90gb' is not a profile such as 3g.40gb"),
    (mig_row(mig_memory_slices=9), "mig_memory_slices is 1 to 8, got 9"),
    (mig_row(interconnect="nvlink"), "a MIG instance has no peer link; its interconnect is none"),
    (mig_row(memory_bytes=90 * GIB), "holds at most h100-sxm-80gb's memory and SMs"),
    ({k: v for k, v in mig_row().items() if k != "mig_profile"}, "it does not state mig_profile"),
    ({**next(r for r in rows() if r["id"] == "l40s-48gb"), "interconnect": "none"},
     "states mig_of, mig_profile, mig_memory_slices; it does not state mig_of, mig_profile, mig_memory_slices"),
])
def test_a_mig_row_names_its_whole_gpu_and_a_profile(row, words):
    with pytest.raises(ValueError) as e:
        gpu_from_row(row, gpus())
    assert words in str(e.value)
