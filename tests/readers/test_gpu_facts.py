"""The GPU as a typed fact (issue 35): every preset in app/kvcalc/data/gpus.json states its platform,
compute capability (CUDA) or gfx target (ROCm), SMs / CUs, interconnect, unified memory and device
name, each with its source; a preset missing one is refused. The engine rules that read substrings
of the display name now ask these facts: the rules as they read the name before (kept below, word
for word) and the facts agree on every preset, except where the name rule fell to a default for a
card it did not name, and there the fact is the device's own (named below, with its source)."""

import json
import re
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

