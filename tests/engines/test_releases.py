"""Issue 22: the engine's release, as it prints it, decides the rules; every rule that changed is
keyed to the release that changed it (docs/research/vllm-release-rules.md, bisected over every
vLLM wheel from 0.6.3 to 0.33.0)."""

import math
from fractions import Fraction

import pytest

from kvcalc.engines.llamacpp import engine as llamacpp
from kvcalc.engines import releases
from kvcalc.engines.sglang import engine as sglang
from kvcalc.engines.vllm import engine as vllm, profile as vllm_profile, release as rules
from kvcalc.evaluation import evaluate
from kvcalc.readers.gpu_presets import gpus
from support import cli

GIB = 1 << 30
r = releases.release


@pytest.mark.parametrize("text, key", [
    ("0.10.2", (0, 10, 2, 0, 0)), ("v0.19.1", (0, 19, 1, 0, 0)),
    ("0.28.1rc1.dev50+g1a2b3c4d", (0, 28, 1, 0, -1)),     # a build before 0.28.1: 0.28.0's rules
    ("0.4.6.post1", (0, 4, 6, 0, 2)), ("0.4.6.post1.dev3", (0, 4, 6, 0, 1)),   # a dev build of a post release
    ("0.13.0+faa43dbf.nv26.01", (0, 13, 0, 0, 0))])
def test_versions_as_the_engines_print_them(text, key):
    assert releases.pep440(text).key == key


def test_a_development_build_takes_the_rules_of_the_release_before_it():
    dev = releases.pep440("0.20.1rc1.dev7+gabc")
    assert dev.at_least(0, 20, 0) and not dev.at_least(0, 20, 1)
    assert releases.pep440("0.20.1").at_least(0, 20, 1)


def test_llama_cpp_builds():
    assert releases.build_number("b5192").key[0] == 5192
    assert releases.build_number("version: 5192 (4d3b6b2a)").key[0] == 5192


@pytest.mark.parametrize("engine, version, words", [
    ("vllm", "0.5.4", "0.5.4 is older than modelled; vLLM releases modelled: 0.6.4 to 0.33.0"),
    ("vllm", "0.34.0", "0.34.0 is newer than modelled; vLLM releases modelled: 0.6.4 to 0.33.0"),
    ("vllm", "0.33.1", "0.33.1 is newer than modelled"),              # a later patch may change a rule
    ("vllm", "latest", "'latest' is not a vLLM version (e.g. 0.10.2 or v0.19.1)"),
    ("sglang", "0.6.0", "SGLang releases modelled: 0.3.6 to 0.5.23"),
    ("llama.cpp", "0.10.2", "is not a llama.cpp version (e.g. b5192)")])
def test_an_unknown_version_lists_the_releases_modelled_and_exits_2(engine, version, words):
    code, out, err = cli("--model", "meta-llama/Llama-3.1-8B", "--engine", engine, "--engine-version", version)
    assert code == 2 and out == "" and "--engine-version" in err and words in err, err


def test_the_default_is_the_newest_release_modelled_and_the_json_names_it():
    e = evaluate({"model": "meta-llama/Llama-3.1-8B", "engine": "vllm"})
    assert str(e.scenario.settings.release) == vllm.NEWEST_RELEASE == "0.33.0"
    code, out, _ = cli("--model", "meta-llama/Llama-3.1-8B", "--engine", "sglang", "--json")
    assert code == 0 and '"engine_version": "0.5.23"' in out


def test_default_utilization_is_0_9_then_0_92_from_0_20_0():
    assert rules.default_utilization(r("0.19.1")) == Fraction(9, 10)
    assert rules.default_utilization(r("0.20.0")) == Fraction(92, 100)
    # Llama 3.1 8B on an H100 (PyTorch total 85,029,158,912 B): 0.9 and 0.92 of it.
    for version, util in (("0.19.1", Fraction(9, 10)), ("0.20.0", Fraction(92, 100))):
        e = evaluate({"model": "meta-llama/Llama-3.1-8B", "engine": "vllm", "engine-version": version,
                      "gpu": "h100-sxm-80gb"})
        engine = e.engine
        usable = engine.kv_budget_bytes_per_gpu + engine.weights_bytes_per_gpu + engine.overhead_bytes_per_gpu
        assert usable == math.ceil(e.scenario.deployment.torch_memory_bytes * util)     # request_memory, 0.14 on


@pytest.mark.parametrize("version, memory_gib, gpu, expected", [
    ("0.6.6", 80, "h100-sxm-80gb", (8192, 256)),       # V0: a whole 8K prompt, 256 sequences
    ("0.8.0", 24, "l4-24gb", (2048, 1024)),            # V1 default; 1024 sequences on every GPU
    ("0.8.4", 24, "l4-24gb", (2048, 256)),
    ("0.8.4", 80, "a100-sxm-80gb", (2048, 256)),       # the tier went by device name: H100/H200 only
    ("0.8.4", 80, "h100-sxm-80gb", (8192, 1024)),      # "NVIDIA H100 80GB HBM3" has "h100"
    ("0.8.4", 96, "h20-96gb", (2048, 256)),            # "NVIDIA H20": a Hopper, but not by name
    ("0.8.5", 80, "a100-sxm-80gb", (8192, 1024)),      # then by memory
    ("0.9.0", 80, "a100-sxm-80gb", (2048, 256)),       # A100s back on the small tier ("a100" in its name)
    ("0.27.1", 180, "b200-180gb", (8192, 1024)),
    ("0.28.0", 180, "b200-180gb", (16384, 1024)),      # 160 GiB and more: 16,384
    ("0.33.0", 128, "dgx-spark-128gb", (2048, 256)),   # GB10, compute capability 12.1: the small tier
    # Before 0.33.0 too: NVML's memory query fails on GB10 and get_batch_defaults takes 0 bytes (the 0.25.1
    # Gemma 4 DGX Spark logs print max_num_batched_tokens=2496: 2,048 raised for its largest multimodal item).
    ("0.32.0", 128, "dgx-spark-128gb", (2048, 256)),
    ("0.25.1", 128, "dgx-spark-128gb", (2048, 256))])
def test_batch_defaults_by_release_and_gpu(version, memory_gib, gpu, expected):
    assert rules.batch_defaults(r(version), memory_gib * GIB, gpus()[gpu], 8192) == expected


def test_max_num_batched_tokens_never_exceeds_max_num_seqs_whole_requests_from_0_11_1():
    h100 = gpus()["h100-sxm-80gb"]
    assert rules.batch_defaults(r("0.11.0"), 80 * GIB, h100, 4) == (8192, 1024)
    assert rules.batch_defaults(r("0.11.1"), 80 * GIB, h100, 4) == (4096, 1024)


def test_the_sampler_path_each_release_takes_by_default():
    llama = evaluate({"model": "meta-llama/Llama-3.1-8B"}).scenario.model
    moe = evaluate({"model": "google/gemma-4-26B-A4B"}).scenario.model
    assert vllm_profile.sampler_bytes(llama, r("0.7.3"))[0] == 38        # V0's native sort
    assert vllm_profile.sampler_bytes(llama, r("0.10.2"))[:2] == (38, 14)  # pip native, docker FlashInfer
    assert vllm_profile.sampler_bytes(llama, r("0.16.0"))[0] == 38
    assert vllm_profile.sampler_bytes(llama, r("0.17.0"))[0] == 14        # Triton
    assert vllm_profile.sampler_bytes(llama, r("0.25.0"))[0] == 6         # the V2 runner for dense models
    assert vllm_profile.sampler_bytes(moe, r("0.25.0"))[0] == 14          # MoE stays on the V1 runner
    assert vllm_profile.sampler_bytes(moe, r("0.29.0"))[0] == 2
    assert vllm_profile.sampler_bytes(llama, r("0.33.0"))[0] == 14        # V2's fp32 top-k/top-p pass


def test_cuda_graphs_come_out_of_the_budget_from_0_20_0():
    def graphs(version, model="Qwen/Qwen3-30B-A3B"):
        e = evaluate({"model": model, "engine": "vllm", "engine-version": version, "gpu": "h100-sxm-80gb",
                      "gpus": "2"})
        return vllm_profile.estimate(e.scenario, e.scenario.settings.release, e.engine.prefill_chunk,
                                     vllm.max_num_seqs(e.scenario)).cudagraph
    # H100, 1,024 sequences: 51 PIECEWISE sizes (1 to 512) and 51 FULL ones, over Qwen3-30B-A3B's 48 layers.
    assert graphs("0.19.1") == 0 and graphs("0.20.0") == (51 + 51) * 48 * vllm_profile.GRAPH_LAYER
    # 0.25-0.28's V2 runner estimated 0 for dense models.
    assert graphs("0.26.0", "meta-llama/Llama-3.1-8B") == 0 and graphs("0.29.0", "meta-llama/Llama-3.1-8B") > 0


def test_the_token_line_by_release():
    """Before 0.20.1 vLLM printed num_blocks // groups x block size; from it, int(concurrency x
    max_model_len). Llama 3.1 8B at 1,000 tokens with 10 GiB: 10,240 blocks of 16 (64 blocks a
    request): 163,840 tokens the old way, int(160 x 1,000) = 160,000 the new."""
    base = {"model": "meta-llama/Llama-3.1-8B", "engine": "vllm", "context": "1000", "kv-memory-gib": "10"}
    old = evaluate({**base, "engine-version": "0.20.0"}).engine
    new = evaluate({**base, "engine-version": "0.20.1"}).engine
    assert old.max_concurrency == new.max_concurrency == Fraction(10 * GIB // (16 * 131072), 63)
    assert old.kv_tokens == 10 * GIB // (16 * 131072) * 16 and new.kv_tokens == int(new.max_concurrency * 1000)


def test_hybrid_state_pages_two_from_0_28_0():
    # 0.26.0-0.27.x turned prefix caching off for hybrids by default (default_prefix_caching ... and not
    # is_hybrid): vllm-qwen3.6-27b-a100-80gb-tp2-64k-v0.27.1.log prints enable_prefix_caching=False.
    assert rules.mamba_state_pages(r("0.25.1")) == rules.mamba_state_pages(r("0.27.1")) == 1
    assert rules.mamba_state_pages(r("0.28.0")) == 2


def test_sglang_memory_fraction_by_release():
    """Rule 7, read from each release's server_args.py, on an H200 (143,156 MiB as nvidia-smi
    reports it): 0.3.6-0.4.5 by tp alone (0.88 at tp 1; 0.82 at tp 8 in 0.3.6, 0.81 from 0.4.0);
    0.4.6 keeps 13 GiB back on GPUs over 80 GiB, (143,156 - 13,312) / 143,156; 0.4.7.post1 a
    reserve of (12 + 1/2) GiB, round((143,156 - 12,800) / 143,156, 3) = 0.911."""
    memory = 143_156 * (1 << 20)
    assert sglang.defaults(memory, 1, 1, release=r("0.4.5"))[2] == Fraction(88, 100)
    assert sglang.defaults(memory, 1, 2, release=r("0.4.5"))[2] == Fraction(88, 100)    # tp alone
    assert sglang.defaults(memory, 8, 1, release=r("0.3.6"))[2] == Fraction(82, 100)
    assert sglang.defaults(memory, 8, 1, release=r("0.4.0"))[2] == Fraction(81, 100)
    assert sglang.defaults(memory, 1, 1, release=r("0.4.6"))[2] == Fraction(143_156 - 13_312, 143_156)
    assert sglang.defaults(memory, 1, 1, release=r("0.4.7.post1"))[2] == Fraction(911, 1000)
    # The chunk: 2,048 under 35 GiB, 16,384 from 160 GiB in 0.4.7.post1-0.5.2; 2,048 under 25 GB before.
    assert sglang.defaults(24 * GIB, 1, 1, release=r("0.5.2"))[0] == 2048
    assert sglang.defaults(180 * GIB, 1, 1, release=r("0.5.2"))[0] == 16384
    assert sglang.defaults(48 * GIB, 1, 1, release=r("0.4.5"))[0] == 8192


def test_sglang_counts_from_the_memory_free_at_start():
    base = {"model": "meta-llama/Llama-3.1-8B", "engine": "sglang", "gpu": "h100-sxm-80gb",
            "memory-utilization": "0.9"}
    default = evaluate(base).engine
    # 10 GiB in use besides its CUDA context (390 MiB): 0.9 x 10 GiB less pool.
    busy = evaluate({**base, "memory-in-use-gib": "10.380859375"}).engine
    assert default.kv_budget_bytes_per_gpu - busy.kv_budget_bytes_per_gpu in (9 * GIB, 9 * GIB + 1)
    code, _, err = cli("--model", "meta-llama/Llama-3.1-8B", "--engine", "vllm", "--memory-in-use-gib", "1")
    assert code == 2 and "--memory-in-use-gib: applies to SGLang only" in err


def test_launch_commands_pin_the_figure_computed():
    code, out, err = cli("--model", "meta-llama/Llama-3.1-8B", "--engine", "vllm", "--gpu", "h100-sxm-80gb",
                         "--launch", "vllm")
    out += err
    budget = evaluate({"model": "meta-llama/Llama-3.1-8B", "engine": "vllm", "gpu": "h100-sxm-80gb"}
                      ).engine.kv_budget_bytes_per_gpu
    assert code == 0 and f"--kv-cache-memory-bytes {budget}" in out and "pins the KV memory" in out
    code, out, err = cli("--model", "meta-llama/Llama-3.1-8B", "--engine", "vllm", "--engine-version", "0.10.1",
                         "--gpu", "h100-sxm-80gb", "--launch", "vllm")
    out += err
    assert code == 0 and "--kv-cache-memory-bytes" not in out.splitlines()[0] and "came in 0.10.2" in out
    tokens = evaluate({"model": "meta-llama/Llama-3.1-8B", "engine": "sglang", "gpu": "h100-sxm-80gb"}
                      ).engine.kv_tokens
    code, out, _ = cli("--model", "meta-llama/Llama-3.1-8B", "--engine", "sglang", "--gpu", "h100-sxm-80gb",
                       "--launch", "sglang")
    assert code == 0 and f"--max-total-tokens {tokens}" in out


def test_the_llm_class_batches_more_tokens_than_vllm_serve():
    """get_batch_defaults by usage context: LLM() takes 16,384 tokens on a big GPU (serve 8,192),
    8,192 on a small one (serve 2,048); vllm bench latency runs it (the Gemma 3 4B B200 log)."""
    assert rules.batch_defaults(r("0.10.2"), 80 * GIB, gpus()["h100-sxm-80gb"], 131072, "llm") == (16384, 1024)
    assert rules.batch_defaults(r("0.10.2"), 24 * GIB, gpus()["l4-24gb"], 131072, "llm") == (8192, 256)
    e = evaluate({"model": "meta-llama/Llama-3.1-8B", "engine": "vllm", "vllm-entry": "llm", "gpu": "h100-sxm-80gb"})
    assert e.engine.prefill_chunk == 16384
    code, _, err = cli("--model", "meta-llama/Llama-3.1-8B", "--engine", "exact", "--vllm-entry", "llm")
    assert code == 2 and "applies to vLLM only" in err


def test_sglang_0_4_4_lowers_the_fraction_for_a_multimodal_model():
    """tests/fixtures/logs/sglang-gemma3-4b-it-h200-mfs088-tp1-v0.4.4.log: Gemma 3 4B on an H200
    (PyTorch total 139.81 GiB) with --mem-fraction-static 0.88; after 8.13 GiB of weights 131.08 GiB
    are free, so 0.60 GiB was in use at start. ModelRunner lowers the fraction to 0.88 x 0.95 =
    0.836 for a multimodal model: (139.21 x 0.836 - 8.13) GiB / 139,264 B a token (34 layers x
    2 x 4 heads x 256 x 2 B) = 834,616 tokens; the log prints 834,615 from its rounded GiB."""
    e = evaluate({"model": "google/gemma-3-4b-it", "engine": "sglang", "engine-version": "0.4.4.post2",
                  "gpu": "h200-141gb", "memory-utilization": "0.88", "weights-gib": "8.13",
                  "memory-in-use-gib": "0.60"})
    assert abs(e.engine.kv_tokens - 834_615) <= 2
    assert any("keeps 0.95 of mem_fraction_static" in note for note in e.engine.notes)
    text = evaluate({"model": "meta-llama/Llama-3.1-8B", "engine": "sglang", "engine-version": "0.4.4.post2",
                     "gpu": "h200-141gb", "memory-utilization": "0.88"}).engine.notes
    assert not any("of mem_fraction_static for a multimodal" in note for note in text)


def test_the_v0_engine_inside_0_8_to_0_10_and_its_lines():
    """tests/fixtures/logs/vllm-qwen2.5-32b-2xl40s-tp2-10k-v0-v0.8.2.log ran V0 in 0.8.2 (its
    executor_base.py lines): 7.71 GiB of KV memory over 64 layers x 2 x 4 heads x 128 x 2 B x 16
    tokens per block gives its 3,947 CUDA blocks, and 4 GiB of swap its 2,048 CPU blocks."""
    code, out, err = cli("--model", "Qwen/Qwen2.5-32B", "--engine", "vllm", "--engine-version", "0.8.2",
                         "--vllm-engine", "v0", "--gpus", "2", "--context", "10000", "--kv-memory-gib", "7.71",
                         "--format", "log")
    assert code == 0, err
    assert "# CUDA blocks: 3947, # CPU blocks: 2048" in out.splitlines()
    assert rules.v1(r("0.8.2")) and not rules.v1(rules.engine_variant(r("0.8.2"), "v0"))
    for version, variant, words in (("0.11.0", "v0", "has no V0 engine"), ("0.7.3", "v1", "opt-in preview")):
        code, _, err = cli("--model", "Qwen/Qwen2.5-32B", "--engine", "vllm", "--engine-version", version,
                           "--vllm-engine", variant)
        assert code == 2 and "--vllm-engine" in err and words in err, err


def test_sglang_0_4_10_on_scales_a_derived_fraction_by_the_vision_tower():
    """adjust_mem_fraction_for_vlm: 0.95 x (1 - 0.1 x (layers x width^2 / (24 x 1024^2) - 1)).
    Qwen2.5-VL's vision_config has depth 32 but no num_hidden_layers, so SGLang reads 24 layers of
    width 1280: a ratio of 1.5625 and a factor of 0.95 x 0.94375 = 0.8965625. On a B200 SGLang
    0.5.6 derives 0.856 and keeps 0.7675; its log
    (tests/fixtures/logs/sglang-qwen2.5-vl-7b-b200-mfs-auto-pcg-tp1-v0.5.6dev.log, a dev build)
    prints 0.7629746875, 0.6% under."""
    cfg = {"architectures": ["Qwen2_5_VLForConditionalGeneration"], "model_type": "qwen2_5_vl",
           "num_hidden_layers": 28, "num_attention_heads": 28, "num_key_value_heads": 4, "hidden_size": 3584,
           "intermediate_size": 18944, "vocab_size": 152064, "max_position_embeddings": 128000,
           "vision_config": {"depth": 32, "hidden_size": 1280, "out_hidden_size": 3584}}
    e = evaluate({"hf-config": cfg, "engine": "sglang", "engine-version": "0.5.6", "gpu": "b200-180gb",
                  "weights-gib": "15.5"})
    assert e.scenario.model.vision_shape == (24, 1280)
    note = next(n for n in e.engine.notes if "multimodal" in n)
    assert "keeps 0.8966 of mem_fraction_static" in note
    engine, dep = e.engine, e.scenario.deployment
    usable = engine.kv_budget_bytes_per_gpu + e.result.weights_bytes_per_gpu
    fraction = sglang.defaults(dep.gpu_memory_bytes, 1, 1, release=r("0.5.6"))[2] * Fraction(8965625, 10 ** 7)
    assert usable == int((dep.torch_memory_bytes - sglang.CONTEXT_BYTES) * fraction)
    assert abs(fraction - Fraction("0.7629746875")) < Fraction(6, 1000)      # the log's, 0.6% under ours
    # Given a fraction, 0.4.10 on leaves it alone; 0.4.5-0.4.8 took 0.90 of it either way.
    given = {"hf-config": cfg, "engine": "sglang", "gpu": "b200-180gb", "weights-gib": "15.5",
             "memory-utilization": "0.8"}
    assert not any("multimodal" in n for n in evaluate(dict(given, **{"engine-version": "0.5.6"})).engine.notes)
    assert any("keeps 0.9 of" in n for n in evaluate(dict(given, **{"engine-version": "0.4.6"})).engine.notes)


def test_eager_mode_takes_no_cuda_graphs_and_pcie_gpus_little_non_torch_memory():
    """--enforce-eager: no CUDA-graph estimate comes out of the KV memory (0.20.0 on). Non-torch
    memory at tp 4: 1.6 GiB where GPUs share NVLink (custom all-reduce, NCCL's NVLink buffers;
    2.04 GiB in the Qwen3-235B H200 log), 0.25 GiB over PCIe (0.04-0.35 GiB in the RTX 3090 and
    L40S logs)."""
    def overhead(**extra):
        values = {"model": "Qwen/Qwen2.5-32B", "engine": "vllm", "gpus": "4", "context": "8192",
                  "engine-version": "0.22.0", **extra}
        e = evaluate(values)
        return vllm_profile.estimate(e.scenario, e.scenario.settings.release, e.engine.prefill_chunk,
                                     vllm.max_num_seqs(e.scenario))
    graphs, eager = overhead(gpu="h100-sxm-80gb"), overhead(gpu="h100-sxm-80gb", **{"enforce-eager": "on"})
    assert graphs.cudagraph == (51 + 51) * 64 * vllm_profile.GRAPH_LAYER and eager.cudagraph == 0   # 64 layers
    assert graphs.non_torch == 1600 << 20 and overhead(gpu="l40s-48gb").non_torch == 256 << 20
    code, out, _ = cli("--model", "Qwen/Qwen2.5-32B", "--engine", "vllm", "--gpus", "4", "--gpu", "h100-sxm-80gb",
                       "--enforce-eager", "on", "--launch", "vllm")
    assert code == 0 and "--enforce-eager" in out.splitlines()[0]


def test_the_v2_runner_by_release_and_architecture():
    """vllm/config/vllm.py DEFAULT_V2_MODEL_RUNNER_ARCHITECTURES: Qwen3 dense in 0.22.0, Llama and
    Mistral too in 0.23.0, three MoE families in 0.24.0; from 0.25.0 every non-MoE model and the
    listed MoE ones; every model from 0.29.0. Its CUDA-graph estimate is 0 until 0.29.0."""
    llama = evaluate({"model": "meta-llama/Llama-3.1-8B"}).scenario.model
    qwen3 = evaluate({"model": "Qwen/Qwen3-8B"}).scenario.model
    moe = evaluate({"model": "Qwen/Qwen3-30B-A3B"}).scenario.model
    runs = vllm_profile.uses_runner_v2
    assert runs(qwen3, r("0.22.0")) and not runs(llama, r("0.22.0")) and runs(llama, r("0.23.0"))
    assert not runs(qwen3, r("0.22.0"), quantized=True) and not runs(qwen3, r("0.21.0"))
    assert not runs(moe, r("0.24.0")) and not runs(moe, r("0.28.0")) and runs(moe, r("0.29.0"))
    assert vllm_profile.sampler_bytes(llama, r("0.23.0"))[0] == 6


def test_versions_compare_by_release_not_by_spelling():
    for text in ("4462", "B4462", "b04462", "build 9272", "version: 9272 (4d3b6b2a)"):
        code, _, err = cli("--model", "meta-llama/Llama-3.1-8B", "--engine", "llama.cpp", "--engine-version", text)
        assert code == 0, (text, err)
    assert releases.build_number("4462") == releases.release("b4462")


def test_the_band_never_speaks_to_a_context_past_the_models_limit():
    code, out, _ = cli("--model", "meta-llama/Llama-3.1-8B", "--engine", "vllm", "--gpu", "h100-sxm-80gb",
                       "--context", "140000", "--json")
    data = __import__("json").loads(out)
    assert data["fits"] is False and "past the model's limit" in data["verdict"] and "range" not in data["verdict"]
    low, high = data["overhead_band_bytes_per_gpu"]
    assert low < data["overhead_bytes_per_gpu"] < high
    at_low, at_high = data["engine_max_concurrency_band"]      # least overhead first, as the bytes
    assert at_low > data["engine_max_concurrency"] > at_high


def test_rocm_subtracts_cuda_graphs_from_0_26_0():
    assert not rules.subtracts_cudagraphs(r("0.25.1"), rocm=True) and rules.subtracts_cudagraphs(r("0.26.0"), rocm=True)


def test_a_release_applies_only_to_its_own_engine():
    """Sized as SGLang 0.5.2, the vLLM and llama.cpp launch commands keep their own newest rules:
    vLLM's default utilization is 0.92 (0.33.0's), not read from SGLang's 0.5.2."""
    code, out, err = cli("--model", "meta-llama/Llama-3.1-8B", "--engine", "sglang", "--engine-version", "0.5.2",
                         "--gpu", "h100-sxm-80gb", "--launch", "vllm")
    assert code == 0 and "(0.92 in vLLM 0.33.0)" in out + err, out + err
    settings = evaluate({"model": "meta-llama/Llama-3.1-8B", "engine": "vllm", "engine-version": "0.10.2"}
                        ).scenario.settings
    assert str(releases.in_force(vllm, settings)) == "0.10.2"
    assert str(releases.in_force(llamacpp, settings)) == llamacpp.NEWEST_RELEASE       # not build 0 of "0.10.2"
    assert str(releases.in_force(sglang, settings)) == sglang.NEWEST_RELEASE
