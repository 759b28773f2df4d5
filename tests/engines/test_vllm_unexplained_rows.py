"""Accuracy-corpus rows that missed by more than 10% with no named cause (issue 36), each worked from
its real public log (tests/fixtures/logs, URLs in SOURCES.md) and the vLLM wheel of its release:
- the gpt-oss-120b H100 refusal (vllm-project/vllm#27508): 0.11.0 runs mxfp4 experts on Marlin, whose
  padding the loaded weights carry (release.mxfp4_marlin);
- Qwen3-235B-A22B-FP8 at tp 4 on H100 with LMCache (#21348) and on H200 (#21429): before 0.11.0 NCCL's
  whole set-up is non-torch memory (non_torch.NVLS_WHOLE_SETUP);
- Qwen3-Next 80B AWQ at tp 2 on L40S, a log that prints no release: its source lines are 0.13.0's
  (release.SOURCE_LINES), whose "GPU KV cache size" counts blocks // groups x block size.
"""

from fractions import Fraction
from pathlib import Path

from kvcalc.engines import releases
from kvcalc.engines.vllm import engine as vllm, non_torch, release as rules
from kvcalc.evaluation import evaluate
from kvcalc.inputs.startup_log import read_log
from kvcalc.readers.gpu_presets import gpus
from kvcalc.units import GIB, MIB

LOGS = Path(__file__).resolve().parent.parent / "fixtures" / "logs"


def r(text: str):
    return releases.parse(vllm, text)


def log(name: str) -> str:
    return (LOGS / name).read_text(encoding="utf-8")


def sized(values: dict):
    evaluation = evaluate(values)
    assert evaluation.ok, evaluation.errors
    return evaluation


def within(ours: int, printed_gib: str, share: Fraction = Fraction(1, 10)) -> bool:
    theirs = Fraction(printed_gib) * GIB
    return abs(ours - theirs) <= share * theirs


def test_gpt_oss_120b_on_h100_at_0_11_0_loads_marlins_padding_and_refuses_as_the_log_does():
    """vllm-gpt-oss-120b-h100-refusal.log: `vllm serve openai/gpt-oss-120b --gpu-memory-utilization 0.95
    --max-num-batched-tokens 1024`, "Available KV cache memory: 1.71 GiB", then "(4.54 GiB KV cache is
    needed, which is larger than the available KV cache memory (1.71 GiB)". Its gpu_worker.py:298 and
    kv_cache_utils.py:716 are 0.11.0's lines. 0.11.0's get_mxfp4_backend takes Marlin on an H100 (no
    FlashInfer without VLLM_USE_FLASHINFER_MOE_MXFP4_BF16, no triton_kernels in the wheel's
    requirements): the loaded weights carry 0.10.1's padding, and the KV memory left is 1.88 GiB, not
    the 7.01 the checkpoint alone leaves."""
    text = log("vllm-gpt-oss-120b-h100-refusal.log")
    assert "Available KV cache memory: 1.71 GiB" in text and "(4.54 GiB KV cache is needed" in text
    assert "kv_cache_utils.py\", line 716" in text and "[gpu_worker.py:298]" in text
    h100, b200 = gpus()["h100-sxm-80gb"], gpus()["b200-180gb"]
    assert rules.mxfp4_marlin(r("0.11.0"), h100) and not rules.mxfp4_marlin(r("0.11.0"), b200)
    assert not rules.mxfp4_marlin(r("0.11.1"), h100)              # not read: the checkpoint's bytes
    values = {"engine": "vllm", "model": "openai/gpt-oss-120b", "gpu": "h100-sxm-80gb", "context": "131072",
              "memory-utilization": "0.95", "prefill-chunk": "1024"}
    at = {v: sized(values | {"engine-version": v}).engine for v in ("0.10.1", "0.11.0", "0.11.1")}
    assert at["0.11.0"].kv_budget_bytes_per_gpu == at["0.10.1"].kv_budget_bytes_per_gpu       # the same padding
    assert at["0.11.1"].kv_budget_bytes_per_gpu - at["0.11.0"].kv_budget_bytes_per_gpu > 5 * GIB
    assert within(at["0.11.0"].kv_budget_bytes_per_gpu, "1.71")
    assert not at["0.11.0"].starts and "(4.54 GiB KV cache is needed" in at["0.11.0"].refusal


def test_before_0_11_0_nccls_whole_set_up_is_non_torch_memory_on_hopper_nvlink():
    """vllm-qwen3-235b-a22b-fp8-tp4-h200-util05-debug-v0.10.0dev.log (4x H200, tp 4, 0.10.0 dev):
    "non-torch forward increase memory: 2.04GiB". The 0.10.0 wheel's gpu_worker.py init_device takes its
    first MemorySnapshot before init_worker_distributed_environment (NCCL, custom all-reduce, the KV
    connector); 0.11.0 takes it after. So 0.10.0 at tp 4 keeps 2,089 MiB (2.04 GiB), 0.11.0 the 1,600
    MiB the profiling run connects; tp 2 is not measured and keeps the table's."""
    assert "non-torch forward increase memory: 2.04GiB" in log(
        "vllm-qwen3-235b-a22b-fp8-tp4-h200-util05-debug-v0.10.0dev.log")
    h200 = gpus()["h200-141gb"]
    early, words = non_torch.non_torch_memory(4, h200, r("0.10.0"))[0], non_torch.non_torch_memory(4, h200, r("0.10.0"))[3]
    assert early == 2089 * MIB and f"{early / GIB:.2f}" == "2.04"
    assert "vLLM 0.10.0 counts NCCL's whole set-up" in words
    assert non_torch.non_torch_memory(4, h200, r("0.11.0"))[0] == non_torch.non_torch_memory(4, h200)[0] == 1600 * MIB
    assert non_torch.non_torch_memory(2, h200, r("0.10.0"))[0] == 1 << 30
    a100 = gpus()["a100-sxm-80gb"]                                   # no NVLink SHARP: unchanged
    assert non_torch.non_torch_memory(4, a100, r("0.10.0")) == non_torch.non_torch_memory(4, a100)


def test_qwen3_235b_fp8_tp4_h100_with_lmcache_is_within_10_percent_at_0_10_0():
    """vllm-qwen3-235b-a22b-fp8-tp4-h100-lmcache.log (vllm-project/vllm#21348): `--tensor-parallel-size 4
    --kv-transfer-config '{"kv_connector":"LMCacheConnectorV1",...}'`, "Available KV cache memory: 8.11
    GiB". Typed as 0.10.0 on 4x H100 (max_model_len the model's 40,960): 12.0% over with 1.56 GiB of
    non-torch memory, within 10% with NCCL's whole set-up (the connector's own buffers, initialized
    after the snapshot too, are what is left)."""
    assert "Available KV cache memory: 8.11 GiB" in log("vllm-qwen3-235b-a22b-fp8-tp4-h100-lmcache.log")
    engine = sized({"engine": "vllm", "engine-version": "0.10.0", "model": "Qwen/Qwen3-235B-A22B",
                    "weights-dtype": "fp8", "gpu": "h100-sxm-80gb", "gpus": "4", "tp": "4",
                    "context": "40960"}).engine
    assert within(engine.kv_budget_bytes_per_gpu, "8.11")


def test_a_log_without_its_release_is_read_as_the_release_its_source_lines_name():
    """vllm-qwen3-next-80b-awq-tp2-l40s-fp8-v0.13.log prints no release: "[gpu_worker.py:375] Available
    KV cache memory: 17.58 GiB", "[kv_cache_utils.py:1291] GPU KV cache size: 767,552 tokens",
    "[kv_cache_utils.py:1296] Maximum concurrency for 32,768 tokens per request: 84.29x". Of every
    wheel 0.8.0-0.34.0 only 0.13.0 logs those three from those lines, and 767,552 is not 84.29 x 32,768
    (2,762,035): blocks // groups x block size, as before 0.20.1. Read as 0.13.0 with the model chosen,
    2,865 blocks // 4 groups x 1,072 = 767,552 tokens, the log's, and 2,865 / 34 = 84.26x, inside what
    17.58 GiB rounded to two decimals allows (2,866 / 34 = 84.29)."""
    name = "vllm-qwen3-next-80b-awq-tp2-l40s-fp8-v0.13.log"
    assert rules.releases_printing_at("kv_tokens", "kv_cache_utils.py", 1291) == {"0.13.0"}
    assert rules.releases_printing_at("concurrency", "kv_cache_utils.py", 1296) == {"0.13.0"}
    assert rules.releases_printing_at("kv_memory", "gpu_worker.py", 375) == {"0.13.0"}
    assert rules.releases_printing_at("kv_memory", "kv_cache_utils.py", 375) is None
    assert not rules.tokens_as_concurrency(767_552, Fraction("84.29"), 32_768)
    assert rules.tokens_as_concurrency(2_762_035, Fraction("84.29"), 32_768)      # int(84.29 x 32,768)
    assert rules.tokens_as_concurrency(2_761_185, Fraction("84.26"), 32_768)      # int(2,865 / 34 x 32,768)
    reading = read_log(log(name), "vllm")
    assert reading.values["engine-version"] == "0.13.0"
    assert any("inferred from kv_cache_utils.py:1291, kv_cache_utils.py:1296, gpu_worker.py:375" in note
               for note in reading.notes)
    values = dict(reading.values) | {"model": "Qwen/Qwen3-Next-80B-A3B-Instruct", "tp": "2", "gpus": "2",
                                     "kv-dtype": "fp8"}
    values.pop("measured-with")
    engine = sized(values).engine
    assert engine.kv_tokens == 767_552 and engine.max_concurrency == Fraction(2865, 34)
    low, high = sorted(engine.max_concurrency_range)
    assert low <= Fraction("84.29") <= high + Fraction(1, 200)


def test_source_lines_several_releases_share_take_the_newest_and_a_dev_build_none():
    """vllm-llama3.1-8b-l40s-32k-v1-v0.8.5dev.log (PR #17122, a main build of 2025-04-24): its
    kv_cache_utils.py:634 and :637 are 0.8.4's, 0.8.5's and 0.8.5.post1's, so 0.8.5.post1 is taken and
    the range said. vllm-qwen3.6-27b-int4-2x3090-tp2-util088-fp8e5m2-cudagraph-est.log prints no release
    and lines no release read has together (kv_cache_utils.py:1710 and :1711 are 0.21.0's, its
    gpu_worker.py:460 is no release's: a build between releases): nothing is inferred, and the note
    says so."""
    reading = read_log(log("vllm-llama3.1-8b-l40s-32k-v1-v0.8.5dev.log"), "vllm")
    assert reading.values["engine-version"] == "0.8.5.post1"
    assert any("vLLM 0.8.4 to 0.8.5.post1 print these lines" in note for note in reading.notes)
    dev = read_log(log("vllm-qwen3.6-27b-int4-2x3090-tp2-util088-fp8e5m2-cudagraph-est.log"), "vllm")
    assert rules.releases_printing_at("kv_tokens", "kv_cache_utils.py", 1710) == {"0.21.0"}
    assert rules.releases_printing_at("kv_memory", "gpu_worker.py", 460) == set()
    assert "engine-version" not in dev.values
    assert "release not inferred: no release read prints kv_cache_utils.py:1710 and kv_cache_utils.py:1711 and " \
           "gpu_worker.py:460" in dev.notes
    # A release printed is never replaced: the 0.12.0 Qwen3-30B log keeps its own.
    printed = read_log(log("vllm-qwen3-30b-a3b-h100-tp2-40k-seqs64-v0.12.0.log"), "vllm")
    assert printed.values["engine-version"] == "0.12.0"
    assert not any("inferred from" in note for note in printed.notes)


def test_without_source_lines_a_count_that_is_not_concurrency_times_length_is_read_as_before_0_20_1():
    """The same Qwen3-Next log pasted without its "[file:line]" prefixes (as some tools copy it): no
    line names a release, but 767,552 tokens beside 84.29x for 32,768 tokens is a count of blocks //
    groups x block size, which no release from 0.20.1 prints: 0.20.0, the newest that does, is taken
    and said, and the count is the log's again."""
    text = log("vllm-qwen3-next-80b-awq-tp2-l40s-fp8-v0.13.log")
    bare = "\n".join(line.split("] ", 1)[-1] for line in text.splitlines())
    assert "kv_cache_utils.py" not in bare and "GPU KV cache size: 767,552 tokens" in bare
    reading = read_log(bare, "vllm")
    assert reading.values["engine-version"] == "0.20.0"
    assert any("GPU KV cache size 767,552 tokens, not 84.29x x 32,768 (blocks // groups x block size: before "
               "0.20.1): vLLM 0.20.0" in note for note in reading.notes)
    values = dict(reading.values) | {"model": "Qwen/Qwen3-Next-80B-A3B-Instruct", "tp": "2", "gpus": "2",
                                     "kv-dtype": "fp8"}
    values.pop("measured-with")
    assert sized(values).engine.kv_tokens == 767_552
