"""The host-memory KV tier (issue 26, part 2), worked by hand with the engines' sources
(docs/research/issue-26-engine-rules.md section 2, re-read in the unpacked wheels):

- Llama 3.1 8B (meta-llama/Llama-3.1-8B config.json: 32 layers, 8 KV heads of 128, bf16):
  one token is 2 (K, V) x 32 x 8 x 128 x 2 B = 131,072 B; one 16-token vLLM block 2,097,152 B.
  - vLLM 0.33.0 native, 64 GiB (v1/kv_offload/cpu/spec.py CPUOffloadingSpec.__init__):
    64 x 2^30 = 68,719,476,736 B // round_up(2,097,152 x 1 rank, 4,096) = 32,768 chunks
    x 16 = 524,288 tokens.
  - LMCache, 64 GiB per worker (lmcache/v1/storage_backend/local_cpu_backend.py): chunks of 256
    tokens = 33,554,432 B; 68,719,476,736 // 33,554,432 = 2,048 chunks = 524,288 tokens.
  - SGLang --hicache-size 64 (GB per rank; mem_cache/pool_host/base.py HostKVCache.__init__):
    64 x 10^9 // 131,072 = 488,281; page_num = 488,281 // 1 + 1 = 488,282 tokens. 64 GiB typed is
    68.719 GB, and --hicache-size is a whole number (server_args.py type=int), so 68:
    68 x 10^9 // 131,072 = 518,798, + 1 page = 518,799 tokens.
- DeepSeek-V3 (deepseek-ai/DeepSeek-V3: 61 MLA layers, a latent of 512 + rope 64, bf16 KV) on
  8 x H200 under vLLM 0.33.0 (FlashMLA's 64-token block): one token 61 x 576 x 2 B = 70,272 B on
  every rank (the latent is replicated over tp); one block 4,497,408 B (= 1,098 x 4,096).
  From 0.27.0 the replicated layout (distributed/kv_transfer/kv_connector/v1/offloading/config.py:
  MLA, tp > 1, pp = 1, one node, mp backend; CUDA's shared mmap region) stores one copy, not 8:
  256 x 2^30 = 274,877,906,944 // 4,497,408 = 61,119 chunks x 64 = 3,911,616 tokens.
  Before (0.26.0) every rank's copy: // (8 x 4,497,408 = 35,979,264) = 7,639 chunks = 488,896 tokens.
- PCIe (PCI-SIG PCI Express Base Specification 4.0 and 5.0, 128b/130b): Gen4 x16 is
  16 x 10^9 x 16 x 128/130 / 8 = 409,600,000,000/13 B/s (31.5 GB/s); Gen5 twice that.
"""

from fractions import Fraction

import pytest

from kvcalc.errors import InputError
from kvcalc.evaluation import evaluate
from kvcalc.inputs.options import parse_options
from kvcalc.serving import offload
from kvcalc.inputs.scenario import serving_settings_from, settings_from

GIB = 1 << 30
L8 = {"model": "meta-llama/Llama-3.1-8B", "gpu": "h100-sxm-80gb"}
DSV3 = {"model": "deepseek-ai/DeepSeek-V3", "gpu": "h200-141gb", "gpus": "8", "context": "32768"}
L8_TOKEN, DSV3_TOKEN = 2 * 32 * 8 * 128 * 2, 61 * (512 + 64) * 2
PCIE4 = Fraction(409_600_000_000, 13)


def typed(raw: dict) -> dict:
    values, errors = parse_options(raw)
    assert not errors, errors
    return values


def ask_and_run(raw: dict, extra: dict):
    """(ask, evaluation) for these inputs, the ask typed as the scenario's builder will type it."""
    e = evaluate(raw)
    assert e.ok, e.errors
    values = typed(dict(raw, **extra))
    ask = offload.offload_from(serving_settings_from(values), values.get("engine"), e.scenario.deployment,
                               e.scenario.settings.release)
    return ask, e


def tier_of(raw: dict, extra: dict) -> offload.Tier:
    ask, e = ask_and_run(raw, extra)
    return offload.tier(ask, ask.engine, e.scenario, e)


def refusal(raw: dict, extra: dict = None, deployment=None) -> InputError:
    values = typed(dict(raw, **(extra or {})))
    with pytest.raises(InputError) as caught:
        e = evaluate(raw)
        offload.offload_from(serving_settings_from(values), values.get("engine"), deployment or e.scenario.deployment,
                             e.scenario.settings.release if e.scenario else None)
    return caught.value


def test_llama_8b_64_gib_under_vllm_native_is_32768_chunks_of_16_tokens():
    assert L8_TOKEN == 131_072
    t = tier_of(dict(L8, engine="vllm"), {"offload-gib": "64"})
    assert t.release == "0.33.0"
    assert t.capacity_bytes == 64 * GIB == 68_719_476_736
    assert t.chunk_tokens == 16 and t.chunk_bytes == 2_097_152
    assert t.chunks == 32_768 and t.tokens == 524_288
    assert t.bytes_per_token_stored == 131_072 and t.copies == 1
    assert t.requests == 64                      # 32,768 chunks // (8,192 / 16) per request
    assert t.write_policy.startswith("write-through")


def test_llama_8b_64_gib_under_lmcache_is_2048_chunks_of_256_tokens():
    t = tier_of(dict(L8, engine="vllm"), {"offload-gib": "64", "offload-backend": "lmcache"})
    assert t.chunk_tokens == 256 and t.chunk_bytes == 256 * 131_072 == 33_554_432
    assert t.chunks == 2_048 and t.tokens == 524_288
    assert t.capacity_scope == "per worker"
    assert "LMCacheMPConnector" in t.rule        # vLLM 0.23.0 on: the LMCache server owns the size


def test_sglang_hicache_size_64_gb_holds_488282_tokens():
    # 64 GB exactly is 64e9 / 2^30 = 59.604644775390625 GiB: --hicache-size 64.
    ask, e = ask_and_run(dict(L8, engine="sglang"), {"offload-gib": "59.604644775390625"})
    assert offload.launch_flags(ask, "sglang") == ["--enable-hierarchical-cache", "--hicache-size", "64"]
    t = offload.tier(ask, "sglang", e.scenario, e)
    assert t.capacity_bytes == 64 * 10 ** 9 and t.capacity_scope == "per rank"
    assert t.chunks == 64 * 10 ** 9 // 131_072 + 1 == 488_282 and t.tokens == 488_282


def test_sglang_64_gib_typed_becomes_hicache_size_68_gb():
    ask, e = ask_and_run(dict(L8, engine="sglang"), {"offload-gib": "64"})
    assert offload.launch_flags(ask, "sglang") == ["--enable-hierarchical-cache", "--hicache-size", "68"]
    f = offload.figures(ask, e.scenario, e)
    assert f["offload_tokens"] == 68 * 10 ** 9 // 131_072 + 1 == 518_799
    assert f["offload_bytes"] == 68 * 10 ** 9
    assert any("68.719 GB" in line and "--hicache-size 68" in line for line in f["lines"])


def test_sglang_refuses_less_than_one_whole_gb_per_rank():
    err = refusal(dict(L8, engine="sglang"), {"offload-gib": "0.5"})   # 0.537 GB
    assert err.field == "offload-gib" and "1 GB" in err.message


def test_the_exact_ideal_divides_the_tier_by_one_logical_copy():
    t = tier_of(L8, {"offload-gib": "64"})
    assert t.chunk_tokens == 1 and t.tokens == 64 * GIB // 131_072 == 524_288
    assert t.requests == 524_288 // 8_192 == 64


def test_deepseek_v3_on_8_h200_with_256_gib_vllm_stores_the_latent_once():
    assert DSV3_TOKEN == 70_272
    t = tier_of(dict(DSV3, engine="vllm"), {"offload-gib": "256", "offload-link": "pcie5"})
    assert t.chunk_tokens == 64 and t.replicated_layout and t.copies == 1
    assert t.chunk_bytes == 64 * 70_272 == 4_497_408 == 1_098 * 4_096
    assert t.chunks == 256 * GIB // 4_497_408 == 61_119
    assert t.tokens == 61_119 * 64 == 3_911_616
    assert t.requests == 61_119 // (32_768 // 64) == 119


def test_deepseek_v3_before_vllm_0_27_stores_every_ranks_copy():
    t = tier_of(dict(DSV3, engine="vllm", **{"engine-version": "0.26.0"}), {"offload-gib": "256"})
    assert not t.replicated_layout and t.copies == 8
    assert t.chunk_bytes == 8 * 4_497_408 == 35_979_264
    assert t.chunks == 256 * GIB // 35_979_264 == 7_639 and t.tokens == 488_896


def test_rocm_has_no_shared_region_so_no_replicated_layout():
    # v1/kv_offload/cpu/spec.py _uses_shared_region: CUDA (not ROCm) or XPU. MI300X runs 16-token
    # blocks (no FlashMLA): 8 x 16 x 70,272 = 8,994,816 B a chunk.
    t = tier_of(dict(DSV3, engine="vllm", gpu="mi300x-192gb"), {"offload-gib": "256"})
    assert not t.replicated_layout and t.chunk_bytes == 8_994_816
    assert t.chunks == 256 * GIB // 8_994_816 == 30_559


def test_vllm_rounds_a_chunk_to_4_kib_from_0_23_0_only():
    # A custom model of 3 layers x 1 KV head of 8: 2 x 3 x 8 x 2 B = 96 B a token, 1,536 B a block.
    custom = {"layers": "3", "kv-heads": "1", "head-dim": "8", "params": "1B", "kv-memory-gib": "10",
              "gpu": "h100-sxm-80gb", "engine": "vllm"}
    before = tier_of(dict(custom, **{"engine-version": "0.22.0"}), {"offload-gib": "1"})
    after = tier_of(dict(custom, **{"engine-version": "0.23.0"}), {"offload-gib": "1"})
    assert before.chunk_bytes == 1_536 and before.chunks == GIB // 1_536 == 699_050
    assert after.chunk_bytes == 4_096 and after.chunks == GIB // 4_096 == 262_144


def test_pcie_and_nvme_bandwidths_from_the_pci_sig_rates():
    assert offload.LINKS["pcie4"].bytes_per_s == PCIE4            # 31,507,692,307.7 B/s
    assert offload.LINKS["pcie5"].bytes_per_s == 2 * PCIE4
    assert offload.LINKS["nvme"].bytes_per_s == PCIE4 / 4         # the assumed Gen4 x4 drive link
    assert "PCI-SIG" in offload.LINKS["pcie5"].source


def test_one_32k_request_of_deepseek_v3_comes_back_over_pcie5_in_at_least_36_5_ms():
    ask, e = ask_and_run(dict(DSV3, engine="vllm"), {"offload-gib": "256", "offload-link": "pcie5"})
    f = offload.figures(ask, e.scenario, e)
    # Each GPU pulls its own copy of the latent over its own x16 link: 32,768 x 70,272 B.
    assert f["offload_restore_bytes"] == 32_768 * 70_272 == 2_302_672_896
    assert f["offload_restore_seconds"] == Fraction(2_302_672_896) / (2 * PCIE4) == Fraction(14_274, 390_625)
    assert f["offload_link"] == "pcie5"
    assert any("lower bound" in line and "PCI-SIG" in line for line in f["lines"])


def test_one_32k_request_of_llama_8b_over_pcie4_takes_at_least_136_ms():
    ask, e = ask_and_run(dict(L8, engine="vllm", context="32768"), {"offload-gib": "64", "offload-link": "pcie4"})
    t = offload.tier(ask, "vllm", e.scenario, e)
    assert t.restore_bytes == 32_768 * 131_072 == 4 * GIB
    assert t.restore_seconds == Fraction(4 * GIB) / PCIE4 == Fraction(4 * GIB * 13, 409_600_000_000)


def test_figures_carry_the_keys_the_report_reads():
    ask, e = ask_and_run(dict(L8, engine="vllm"), {"offload-gib": "64"})
    f = offload.figures(ask, e.scenario, e)
    assert {"offload_bytes", "offload_tokens", "offload_requests", "offload_bytes_per_token",
            "offload_restore_seconds", "offload_link", "lines"} <= set(f)
    assert f["offload_restore_seconds"] is None and f["offload_link"] is None     # no link given
    assert any("cpu/spec.py" in line for line in f["lines"])


def test_launch_flags_per_engine():
    ask, _ = ask_and_run(dict(L8, engine="vllm"), {"offload-gib": "64"})
    assert offload.launch_flags(ask, "vllm") == ["--kv-offloading-size", "64", "--kv-offloading-backend", "native"]
    # LMCache: 16 GiB per worker at tp 2; vLLM 0.11.1-0.22 passed --kv-offloading-size / (tp x pp) to each.
    ask, _ = ask_and_run(dict(L8, engine="vllm", tp="2", gpus="2"), {"offload-gib": "16", "offload-backend": "lmcache"})
    assert offload.launch_flags(ask, "vllm") == ["--kv-offloading-size", "32", "--kv-offloading-backend", "lmcache"]
    assert offload.launch_env(ask, "vllm") == {"LMCACHE_MAX_LOCAL_CPU_SIZE": "16"}


def test_tier_options_without_a_size_are_refused():
    for name, value in (("offload-backend", "native"), ("offload-link", "pcie5"), ("host-memory-gib", "512")):
        with pytest.raises(InputError) as caught:
            offload.offload_from(serving_settings_from(typed({name: value})), "vllm", None)
        assert caught.value.field == name and "offload-gib" in caught.value.message


def test_a_negative_size_is_refused_by_the_parser():
    _, errors = parse_options({"offload-gib": "-1"})
    assert [e.field for e in errors] == ["offload-gib"]


def test_lmcache_is_vllms_backend():
    err = refusal(dict(L8, engine="sglang"), {"offload-gib": "64", "offload-backend": "lmcache"})
    assert err.field == "offload-backend" and "--enable-lmcache" in err.message
    # The exact ideal sizes any tier as one logical copy (kvcalc --launch vllm without --engine).
    ideal = evaluate(dict(L8, **{"offload-gib": "64", "offload-backend": "lmcache"}))
    assert ideal.ok and ideal.scenario.serving.offload.backend == "lmcache"


def test_llama_cpp_has_no_host_tier_modelled():
    err = refusal(dict(L8, engine="llama.cpp"), {"offload-gib": "8"})
    assert err.field == "offload-gib" and "--cache-ram" in err.message


def test_releases_without_a_working_flag_are_refused():
    err = refusal(dict(L8, engine="vllm", **{"engine-version": "0.11.0"}), {"offload-gib": "64"})
    assert err.field == "engine-version" and "0.11.1" in err.message
    err = refusal(dict(L8, engine="vllm", **{"engine-version": "0.13.0"}), {"offload-gib": "64"})
    assert err.field == "engine-version" and "num_cpu_blocks" in err.message
    # lmcache works from 0.11.1 (LMCacheConnectorV1, lmcache.max_local_cpu_size per rank).
    t = tier_of(dict(L8, engine="vllm", **{"engine-version": "0.13.0"}), {"offload-gib": "64", "offload-backend": "lmcache"})
    assert t.tokens == 524_288
    err = refusal(dict(L8, engine="sglang", **{"engine-version": "0.4.5"}), {"offload-gib": "64"})
    assert err.field == "engine-version" and "0.4.6" in err.message


def test_sglang_per_rank_size_times_the_ranks_on_a_host_must_fit_its_memory():
    # 16 GPUs span 2 hosts of 8: --hicache-size 68 GB on each of 8 ranks is 544 GB = 506.6 GiB a host.
    raw = dict(L8, engine="sglang", tp="16", gpus="16")
    ask, _ = ask_and_run(raw, {"offload-gib": "64", "host-memory-gib": "512"})
    assert offload.host_bytes(ask) == 8 * 68 * 10 ** 9
    err = refusal(raw, {"offload-gib": "64", "host-memory-gib": "500"})
    assert err.field == "offload-gib" and "8 ranks on the host" in err.message and "500 GiB" in err.message


def test_vllm_total_size_is_spread_over_the_hosts_its_ranks_span():
    # --kv-offloading-size 64 is the total over 16 ranks; each host of 8 holds half: 32 GiB.
    raw = dict(L8, engine="vllm", tp="16", gpus="16")
    ask, _ = ask_and_run(raw, {"offload-gib": "64", "host-memory-gib": "32"})
    assert offload.host_bytes(ask) == 32 * GIB
    err = refusal(raw, {"offload-gib": "64", "host-memory-gib": "31"})
    assert err.field == "offload-gib" and "at most 62 GiB" in err.message


def test_the_engine_defaults_to_the_one_the_inputs_name():
    # serving.serving_from types the tier for the engine the scenario's Settings name.
    settings = settings_from(typed({"engine": "vllm", "offload-gib": "64", "offload-backend": "lmcache"}))
    ask = offload.offload_from(settings.serving, settings.engine)
    assert ask.engine == "vllm" and ask.backend == "lmcache"
    settings = settings_from(typed({"engine": "vllm"}))
    assert offload.offload_from(settings.serving, settings.engine) is None


def test_another_engines_launch_command_carries_the_same_bytes_per_rank():
    # 64 GiB total over vLLM's 2 ranks is 32 GiB = 34.36 GB a rank: SGLang's --hicache-size 34.
    ask, _ = ask_and_run(dict(L8, engine="vllm", tp="2", gpus="2"), {"offload-gib": "64"})
    assert offload.launch_flags(ask, "sglang") == ["--enable-hierarchical-cache", "--hicache-size", "34"]
    assert offload.launch_flags(ask, "llama.cpp") == []
    # SGLang's 64 GiB per rank at tp 2 is vLLM's --kv-offloading-size 128 (the total).
    ask, _ = ask_and_run(dict(L8, engine="sglang", tp="2", gpus="2"), {"offload-gib": "64"})
    assert offload.launch_flags(ask, "vllm") == ["--kv-offloading-size", "128", "--kv-offloading-backend", "native"]
    # Under 1 GB a rank SGLang has no flag to hold it: no flags rather than a refusal.
    ask, _ = ask_and_run(dict(L8, engine="vllm"), {"offload-gib": "0.5"})
    assert offload.launch_flags(ask, "sglang") == []


def test_the_release_is_read_from_the_inputs_when_not_passed():
    values = typed({"engine": "vllm", "engine-version": "0.13.0", "offload-gib": "64"})
    settings = settings_from(values)          # the release typed once, with the scenario's Settings
    with pytest.raises(InputError) as caught:
        offload.offload_from(settings.serving, settings.engine, None, settings.release)
    assert caught.value.field == "engine-version"
