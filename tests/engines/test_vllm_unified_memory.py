"""vLLM on a unified-memory GPU (DGX Spark's GB10): what the host does moves the KV memory, and the total vLLM
multiplies is the machine's. Each rule checked on the real DGX Spark logs (tests/fixtures/logs, URLs in SOURCES.md;
their corpus rows in tests/fixtures/logs/corpus/).

- vllm/utils/mem_utils.py MemorySnapshot.measure (0.13.0: capabilities (8, 7), (11, 0), (12, 1); 0.22.0 and
  0.25.1: is_integrated_gpu; 0.34.0: device_memory_info, read in their wheels) takes psutil's available memory as
  the free memory and keeps cudaMemGetInfo's total; vllm/v1/worker/utils.py request_memory (0.25.1) requests
  ceil(total x --gpu-memory-utilization). On a GB10 the total is the machine's memory as its kernel counts it:
  the preset's 121.69 GiB (torch_memory_bytes) on newer kernels, 119.70 GiB on others (torch_memory_low_bytes).
- vllm/v1/worker/gpu_worker.py (0.20.0 to 0.25.1) prints the total back: "--gpu-memory-utilization=U is
  equivalent to round(U - estimate / total, 4)", the estimate "Estimated CUDA graph memory: E GiB" (2 places).
"""

import json
import math
from fractions import Fraction

import pytest

from kvcalc.engines.vllm import non_torch
from kvcalc.evaluation import evaluate
from kvcalc.readers.gpu_presets import gpu_from_row, gpus
from kvcalc.readers.hfconfig import parse_config_text
from support import FIXTURES

LOGS = FIXTURES / "logs"
GIB = 1 << 30
SPARK = "dgx-spark-128gb"


def rows() -> list[dict]:
    out = []
    for part in ("vllm.json", "vllm-2026.json"):
        out += json.loads((LOGS / "corpus" / part).read_text(encoding="utf-8"))["logs"]
    return [r for r in out if r["inputs"].get("gpu") == SPARK]


def typed(row: dict):
    values = dict(row["inputs"])
    if isinstance(values.get("hf-config"), str):
        values["hf-config"] = parse_config_text((FIXTURES / values["hf-config"]).read_text(encoding="utf-8"))
    return evaluate(values)


def equivalents(total: int, utilization: str, estimate: str) -> set[str]:
    """What vLLM may print for "equivalent to --gpu-memory-utilization" at this total, the estimate being
    anything its 2-place print stands for (gpu_worker.py: round(util - estimate / total, 4))."""
    u, e = Fraction(utilization), Fraction(estimate) * GIB
    ends = (u - (e + GIB // 200) / total, u - (e - GIB // 200) / total)
    return {f"{k // 10_000}.{k % 10_000:04d}" for k in range(math.floor(ends[0] * 10_000), math.ceil(ends[1] * 10_000) + 1)
            if ends[0] - Fraction(1, 20_000) <= Fraction(k, 10_000) <= ends[1] + Fraction(1, 20_000)}


@pytest.mark.parametrize("name, estimate, utilization, printed, which", [
    # jethac/dgx-spark-hijinks, vLLM 0.20.0, Gemma 4 26B-A4B bf16 and its QAT twin: the lower total.
    ("vllm-gemma4-26b-a4b-dgx-spark-tp1-util08-8k-v0.20.0.log", "1.69", "0.8000", "0.7859", "low"),
    ("vllm-gemma4-26b-a4b-qat-dgx-spark-tp1-util08-8k-v0.20.0.log", "0.91", "0.8000", "0.7924", "low"),
    # sostrowsk/dgx-spark-local-llm, vLLM 0.25.1, Laguna-S-2.1 INT4 (unpinned): the preset's total.
    ("vllm-laguna-s-2.1-int4-dgx-spark-util089-262k-dflash-unpinned-v0.25.1.log", "2.55", "0.8900", "0.8690", "high"),
])
def test_the_total_vllm_multiplies_on_a_dgx_spark_is_the_machines(name, estimate, utilization, printed, which):
    """Each log prints its own total through the utilization equivalent: the Gemma 4 twins' fit 119.70 GiB and
    not 121.69, the Laguna log's 121.69 and not 119.70. One machine's total is not another's: the preset keeps
    both, the newer as the estimate, the lower in the band."""
    log = (LOGS / name).read_text(encoding="utf-8")
    assert f"Estimated CUDA graph memory: {estimate} GiB" in log
    assert f"--gpu-memory-utilization={utilization} is equivalent to --gpu-memory-utilization={printed}" in log
    spark = gpus()[SPARK]
    assert (spark.torch_memory_bytes, spark.torch_memory_low_bytes) == (130_663_642_563, 128_526_896_333)
    assert (round(spark.torch_memory_bytes / GIB, 2), round(spark.torch_memory_low_bytes / GIB, 2)) == (121.69, 119.7)
    fits_low = printed in equivalents(spark.torch_memory_low_bytes, utilization, estimate)
    fits_high = printed in equivalents(spark.torch_memory_bytes, utilization, estimate)
    assert (fits_low, fits_high) == ((True, False) if which == "low" else (False, True))


def test_the_bands_top_takes_the_lower_total_times_the_utilization():
    """The lower total requests (121.69 - 119.70 GiB) x utilization less: at the Gemma 4 twins' 0.8, 1.59 GiB on top
    of the 4 GiB the host may take outside PyTorch. The estimate stays the 2.2 GiB share; a total the user gives
    (share 0) adds nothing; a discrete GPU is untouched."""
    spark = gpus()[SPARK]
    base = non_torch.non_torch_memory(1, spark, share=0)
    at_08 = non_torch.non_torch_memory(1, spark, share=Fraction(8, 10))
    assert base[:3] == non_torch.UNIFIED
    assert at_08[0] == base[0] == 2250 << 20 and at_08[1] == base[1]
    less = at_08[2] - base[2]
    assert less == math.ceil((130_663_642_563 - 128_526_896_333) * Fraction(8, 10)) == 1_709_396_984
    assert round(less / GIB, 2) == 1.59
    assert "119.7-121.69 GiB" in at_08[3] and "up to 1.59 GiB less requested in the band's top" in at_08[3]
    h100 = gpus()["h100-sxm-80gb"]
    assert non_torch.non_torch_memory(1, h100, share=Fraction(9, 10)) == non_torch.non_torch_memory(1, h100)


def test_every_dgx_spark_log_lies_in_its_band_and_the_words_say_the_host_moves_it():
    """Every DGX Spark row we size from its typed inputs (vLLM 0.13.0 to 0.25.1) prints an "Available KV cache
    memory" inside the band, the host's share named where the answer is shown. The 0.18.1rc1 Qwen3.5-35B-A3B-FP8
    log's 55.72 GiB was below the band before the lower total (56.65 GiB); the Gemma 4 bf16 twin's 40.61 GiB is
    11 % under the estimate, inside it."""
    sized = {}
    for row in rows():
        e = typed(row)
        if not e.ok or e.engine is None or e.engine.band is None or "kv_gib" not in row["printed"]:
            continue
        kv = Fraction(str(row["printed"]["kv_gib"])) * GIB
        ends = sorted(end.kv_bytes_per_gpu for end in e.engine.band)
        assert ends[0] <= kv <= ends[-1], (row["file"], ends, kv)
        notes = " ".join(e.engine.notes)
        assert "vLLM takes the host's available memory as the GPU's free memory, so what the host and this process " \
               "hold while it starts moves the KV memory" in notes, row["file"]
        sized[row["file"]] = (kv, ends)
    assert len(sized) >= 10
    kv, ends = sized["vllm-qwen3.5-35b-a3b-fp8-dgx-spark-tp1-util08-262k-v0.18.1rc1.log"]
    assert kv == Fraction("55.72") * GIB and ends[0] < Fraction("55.72") * GIB < ends[0] + Fraction("1.59") * GIB
    assert "Available KV cache memory: 55.72 GiB" in (
        LOGS / "vllm-qwen3.5-35b-a3b-fp8-dgx-spark-tp1-util08-262k-v0.18.1rc1.log").read_text(encoding="utf-8")


def test_a_lowest_total_is_a_unified_memory_fact_at_most_the_total():
    row = {"id": "x", "name": "X", "vendor": "NVIDIA", "platform": "cuda", "compute_capability": [12, 1],
           "compute_units": 48, "interconnect": "network", "unified_memory": True, "device_name": "X",
           "facts_source": "s", "memory_bytes": 1 << 37, "memory_note": "n", "bandwidth_bytes_per_s": 1,
           "source": "s", "torch_memory_bytes": 120 * GIB, "torch_memory_source": "s",
           "torch_memory_low_bytes": 119 * GIB, "torch_memory_low_source": "s"}
    assert gpu_from_row(row).torch_memory_low_bytes == 119 * GIB
    for bad in ({"torch_memory_low_bytes": 121 * GIB}, {"unified_memory": False}, {"torch_memory_low_source": ""}):
        with pytest.raises(ValueError, match="torch_memory_low_bytes"):
            gpu_from_row(row | bad)
