"""vLLM's overhead terms, each beside the figure a real start-up log prints for it (tests/fixtures/logs,
each URL in SOURCES.md), and the release whose code the rule comes from."""

from fractions import Fraction

from kvcalc.engines import releases
from kvcalc.engines.vllm import engine as vllm, non_torch
from kvcalc.evaluation import evaluate
from kvcalc.inputs.startup_log import read_log
from kvcalc.readers.gpu_presets import gpus
from support import FIXTURES

GIB, MIB = 1 << 30, 1 << 20
LOGS = FIXTURES / "logs"
RTX3090_20K = "vllm-llama3.1-8b-rtx3090-20k-profile-v0.6.4.log"


def r(text: str):
    return releases.parse(vllm, text)


def gib(text: str) -> int:
    return int(Fraction(text) * GIB)


def test_0_6_4_counts_the_cuda_context_as_non_torch_memory():
    """vLLM 0.6.4 (vllm/worker/worker.py determine_num_available_blocks, 0.6.4.post1 wheel) takes everything in
    use on the GPU less what PyTorch allocated: an RTX 3090 running Llama 3.1 8B (issue #10517) prints
    "non_torch_memory=0.35GiB", its CUDA context included. 0.6.5 counts only the increase since init_device
    (memory_profiling's baseline, 0.6.5 wheel): without the context the estimate was 0.146 GiB, 0.20 under."""
    log = (LOGS / RTX3090_20K).read_text(encoding="utf-8")
    assert "non_torch_memory=0.35GiB" in log
    assert read_log(log).values["non-torch-gib"] == "0.35"
    rtx3090 = gpus()["rtx-3090-24gb"]
    estimate, low, high, words = non_torch.non_torch_memory(1, rtx3090, r("0.6.4"))
    assert estimate == (150 + 256) * MIB                          # the increase (ONE_GPU) + the context
    assert low <= gib("0.35") <= high and abs(estimate - gib("0.35")) < 50 * MIB
    assert "its CUDA context too" in words
    # Its post release is the same code; 0.6.5 and later leave the context out.
    assert non_torch.non_torch_memory(1, rtx3090, r("0.6.4.post1"))[0] == estimate
    assert non_torch.non_torch_memory(1, rtx3090, r("0.6.5"))[0] == 150 * MIB
    assert non_torch.non_torch_memory(1, rtx3090, r("0.6.5"))[3].find("CUDA context") < 0


def test_0_6_4_rtx3090_log_kv_memory_from_typed_inputs():
    """The same log, typed (Llama 3.1 8B, RTX 3090, vLLM 0.6.4, max_model_len 20000): it prints
    "kv_cache_size=3.81GiB" (overhead 0.9 x 23.58 - 14.99 - 3.81 = 2.42 GiB: activation 17.06 - 14.99 and
    non-torch 0.35). Ours is within 2% of the KV memory (8.1% over before the context was counted)."""
    log = (LOGS / RTX3090_20K).read_text(encoding="utf-8")
    assert "kv_cache_size=3.81GiB" in log
    e = evaluate({"engine": "vllm", "engine-version": "0.6.4", "model": "meta-llama/Llama-3.1-8B",
                  "gpu": "rtx-3090-24gb", "context": "20000"})
    assert e.ok
    kv = e.engine.kv_budget_bytes_per_gpu
    assert abs(kv - gib("3.81")) / gib("3.81") < Fraction(2, 100)
    low, high = sorted(end.overhead_bytes_per_gpu for end in e.engine.band)[::len(e.engine.band) - 1]
    assert low <= gib("2.42") <= high


def band(e) -> tuple[int, int]:
    ends = sorted(end.overhead_bytes_per_gpu for end in e.engine.band)
    return ends[0], ends[-1]


def test_0_6_4_to_0_6_6_count_what_the_allocator_keeps_cached_as_non_torch_memory():
    """0.6.5 subtracts what PyTorch has allocated, not what its allocator reserves (utils.py MemorySnapshot.measure:
    allocated_bytes.all.current, 0.6.5 and 0.6.6.post1 wheels; 0.7.0 subtracts memory_reserved()), so segments it
    cannot release after the profiling run count as non-torch memory. The H100 log of PR #10511 (Llama 3 8B,
    max_model_len 8192) prints "non_torch_memory     1.79GiB" beside "PyTorch activation peak memory       1.26GiB":
    its overhead 71.29 - 14.96 - 53.29 = 3.04 GiB lay past our band's top (2.14 GiB); the band now adds the peak
    (1.26 GiB, ours exactly) for what may stay cached, and holds it. 0.7.0 does not."""
    log = (LOGS / "vllm-llama3-8b-h100-tp1-breakdown-v0.6.5dev.log").read_text(encoding="utf-8")
    assert "non_torch_memory     1.79GiB" in log and "PyTorch activation peak memory       1.26GiB" in log
    typed = {"engine": "vllm", "engine-version": "0.6.5", "model": "meta-llama/Llama-3.1-8B", "gpu": "h100-sxm-80gb",
             "context": "8192"}
    e = evaluate(typed)
    assert round(e.engine.activation_bytes_per_gpu / GIB, 2) == 1.26
    low, high = band(e)
    assert low <= gib("3.04") <= high
    assert any("keeps cached after the profiling run as non-torch memory" in n for n in e.engine.notes)
    later = evaluate(dict(typed, **{"engine-version": "0.7.0"}))
    assert band(later)[1] < gib("3.04") and band(later)[1] == high - e.engine.activation_bytes_per_gpu
    assert non_torch.counts_cached(r("0.6.4.post1")) and non_torch.counts_cached(r("0.6.6.post1"))
    assert not non_torch.counts_cached(r("0.7.0")) and not non_torch.counts_cached(None)


def test_speculative_capture_sizes_stay_within_the_largest_size_listed():
    """vLLM 0.26.0 sets max_cudagraph_capture_size to the largest size it lists (vllm/config/vllm.py
    _set_cudagraph_sizes: valid_max_size), and adjust_cudagraph_sizes_for_spec_decode (config/compilation.py) keeps
    only the sizes that, rounded up to the decode step, stay within it. The R9700 log (Qwen3.6-27B int4, MTP 4,
    max_num_seqs 2, max_num_batched_tokens 2560) prints "cudagraph_capture_sizes': [1, 2, 4, 8, 16]" and
    "PIECEWISE=2 (largest=10), FULL=2 (largest=10)": 5 and 10, not 20 (the limit 2 x 2 x 5). We counted 3 PIECEWISE
    graphs. Without speculation nothing changes: the H100 log's "PIECEWISE=19 (largest=128), FULL=11 (largest=64)"."""
    from kvcalc.engines.vllm import profile
    log = (LOGS / "vllm-qwen3.6-27b-int4-r9700-rocm-tp1-fp8kv-mtp4-131k-v0.26.0.log").read_text(encoding="utf-8")
    assert "cudagraph_capture_sizes': [1, 2, 4, 8, 16]" in log and "PIECEWISE=2 (largest=10), FULL=2 (largest=10)" in log
    assert profile.capture_sizes(r("0.26.0"), 2, 2560, None, 4) == (2, 2)
    h100 = (LOGS / "vllm-qwen3-30b-a3b-2507-fp8-h100-8k-seqs64-v0.22.1.log").read_text(encoding="utf-8")
    assert "PIECEWISE=19 (largest=128), FULL=11 (largest=64)" in h100
    assert profile.capture_sizes(r("0.22.1"), 64, 8192, gpus()["h100-sxm-80gb"]) == (19, 11)
    # MTP 3 over 32 sequences lists up to 256, a multiple of 4: all 33 kept (the DGX Spark 0.25.1 log).
    spark = (LOGS / "vllm-qwen3.6-35b-a3b-nvfp4-dgx-spark-util085-262k-mtp-v0.25.1.log").read_text(encoding="utf-8")
    assert "PIECEWISE=33 (largest=256), FULL=17 (largest=128)" in spark
    assert profile.capture_sizes(r("0.25.1"), 32, 2048, None, 3) == (33, 17)
