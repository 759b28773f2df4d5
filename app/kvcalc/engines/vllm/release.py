"""vLLM's start-up defaults and memory accounting, release by release.

Each rule names the first PyPI release whose wheel has it; they were bisected over every release
from 0.6.3 to 0.33.0 (docs/research/vllm-release-rules.md, which gives file and function).
Everything here is pure and takes the release as a value (releases.Release).
"""

from dataclasses import replace
from fractions import Fraction

from ...errors import InputError
from ...units import GIB

BIG_GPU_BYTES = 70 * GIB          # get_batch_defaults: NVML total >= 70 GiB is the "big" tier
MIG_TIER_WORDS = (
    "On a MIG instance vLLM sizes its KV memory from the total CUDA reports inside it, the instance's own; its "
    "batch defaults (max_num_seqs, max_num_batched_tokens) from 0.8.5 read the total NVML gives for the parent GPU, "
    "which a MIG container may not read: vLLM then takes 0 bytes and its small-GPU defaults (vllm-project/vllm "
    "issue #55381), as taken here. Where NVML can read the parent (no container), vLLM takes the whole GPU's "
    "defaults: give batch to fix the requests.")
HUGE_GPU_BYTES = 160 * GIB        # 0.28.0 on: a third tier at >= 160 GiB


def default_utilization(release) -> Fraction:
    """--gpu-memory-utilization: 0.9, then 0.92 from 0.20.0 (vllm/config/cache.py CacheConfig)."""
    return Fraction(92, 100) if release.at_least(0, 20, 0) else Fraction(9, 10)


def v1(release) -> bool:
    """The V1 engine is the default from 0.8.0 (VLLM_USE_V1 defaults to 1); V0 before, and in
    0.8-0.10 when VLLM_USE_V1=0 chose it (--vllm-engine v0)."""
    if release.variant is not None:
        return release.variant == "v1"
    return release.at_least(0, 8, 0)


def engine_variant(release, variant: str):
    """The release running the engine chosen, or the error a user reads."""
    if variant == "v0" and release.at_least(0, 11, 0):
        raise InputError("vllm-engine", f"vLLM {release} has no V0 engine: it was removed in 0.11.0")
    if variant == "v1" and not release.at_least(0, 8, 0):
        raise InputError("vllm-engine", f"V1 was an opt-in preview before 0.8.0 whose profiling is not modelled; "
                                        f"vLLM {release} runs V0 by default")
    return replace(release, variant=variant)


def _big(release, memory_bytes: int | None, gpu) -> bool:
    """Whether vLLM puts this GPU on its large batch tier. vLLM reads the device's own name
    (current_platform.get_device_name(), lower-cased) where a rule names cards, so the preset's
    device_name answers those, never its display name; a custom GPU (None) has no name to match."""
    device = gpu.device_name.lower() if gpu is not None else ""
    if not release.at_least(0, 8, 5):
        # 0.7.0-0.8.4 picked the large tier by device name (_override_v1_engine_args).
        return "h100" in device or "h200" in device
    if memory_bytes is None or memory_bytes < BIG_GPU_BYTES:
        return False
    if gpu is not None and gpu.mig_of is not None:
        # A MIG instance: get_device_total_memory asks NVML for the parent GPU by its index, which a MIG
        # container may not read (NoPermission), and get_batch_defaults' `except Exception` takes 0 bytes:
        # the small tier (vllm-project/vllm issue #55381, open; PR #55481, the fallback to the instance's
        # torch total, is not in a release). Where NVML reads the parent, the tier is the whole GPU's
        # (MIG_TIER_WORDS, the note the engine shows).
        return False
    if gpu is not None and gpu.cuda_at((12, 1)):
        # GB10 (DGX Spark) is on the small tier in every release: to 0.32.x get_batch_defaults reads
        # platforms/cuda.py get_device_total_memory, NVML's nvmlDeviceGetMemoryInfo, which GB10 does
        # not implement (nvidia-smi's [N/A]; no fallback in the 0.13.0, 0.19.0 or 0.26.0 wheels), and
        # its `except Exception` takes 0 bytes; 0.33.0 adds the fallback and keeps GB10 small by name
        # (is_device_capability((12, 1))). The DGX Spark logs print it: 0.13.0's max_num_batched_tokens
        # =2048, 0.25.1's Gemma 4 2,496 (2,048 raised for its largest multimodal item).
        return False
    # 0.9.0 on: A100s are kept on the small tier ("a100" not in device_name, arg_utils.py _set_default_args_v1).
    return not (release.at_least(0, 9, 0) and "a100" in device)


# Gemma 4's largest multimodal item, a video: 32 frames (_VIDEO_MAX_FRAMES) of 70 soft tokens
# (_VIDEO_MAX_SOFT_TOKENS) + begin / end + 6 timestamp tokens (gemma4_mm.py get_mm_max_tokens_per_item,
# the same in the 0.25.1, 0.26.0 and 0.33.0 wheels); its image (280) and audio (750) items are smaller.
GEMMA4_VIDEO_TOKENS = 32 * (70 + 2 + 6)
MM_FLOOR_FROM = (0, 22, 0)      # arg_utils.py _get_min_mm_batched_tokens: in 0.22.0, not in 0.21.0


def mm_batch_floor(release, wrapper: str) -> int:
    """The fewest max_num_batched_tokens vLLM defaults to for a multimodal prefix-LM model, which may
    not chunk a multimodal item (arg_utils.py _set_default_max_num_seqs_and_batched_tokens_args:
    "Raising max_num_batched_tokens from %d to %d", read in the 0.25.1 wheel): Gemma 4 (its config's
    model_type `wrapper`) from 0.22.0; 0 for the others (Gemma 3's processing info gives no per-item
    ceiling, so nothing is raised). The Gemma 4 DGX Spark logs (0.25.1) print
    max_num_batched_tokens=2496: the small tier's 2,048 raised to the video's 2,496."""
    return GEMMA4_VIDEO_TOKENS if wrapper == "gemma4" and release.at_least(*MM_FLOOR_FROM) else 0


V0_MULTIMODAL_TOKENS = 5120    # config.py _MULTIMODAL_MODEL_MAX_NUM_BATCHED_TOKENS (the 0.7.0 and 0.8.3 wheels)


def batch_defaults(release, memory_bytes: int | None, gpu, max_model_len: int,
                   entry: str = "serve", mm_floor: int = 0, multimodal: bool = False) -> tuple[int, int]:
    """(max_num_batched_tokens, max_num_seqs) vLLM picks when neither is given: `vllm serve`
    (UsageContext.OPENAI_API_SERVER) or the LLM() class (LLM_CLASS), whose batches are larger.
    `gpu` is the GPU preset (readers/gpu_presets.GPU), None for a custom one; `mm_floor` the
    model's mm_batch_floor, raised to before the rest bounds it."""
    if not v1(release):
        # V0 (vllm/config.py SchedulerConfig): chunked prefill only above 32K on CUDA, and then
        # 2048 tokens a step; otherwise a step holds a whole prompt of max_model_len. A multimodal
        # model's step holds at least 5,120 tokens ("at least the number of multimodal tokens").
        tokens = 2048 if max_model_len > 32768 else max(max_model_len, 2048)
        return (max(tokens, V0_MULTIMODAL_TOKENS) if multimodal else tokens), 256
    big = _big(release, memory_bytes, gpu)
    huge = release.at_least(0, 28, 0) and memory_bytes is not None and memory_bytes >= HUGE_GPU_BYTES and big
    if entry == "llm":
        tokens = 16384 if big else 8192
    else:
        tokens = 16384 if huge else 8192 if big else 2048
    tokens = max(tokens, mm_floor)
    if release.at_least(0, 8, 4):
        seqs = 1024 if big else 256
    else:
        seqs = 1024
    if release.at_least(0, 10, 1):
        seqs = min(seqs, tokens)                        # _set_default_args_v1: min(default, mnbt)
    if release.at_least(0, 11, 1):
        tokens = min(seqs * max_model_len, tokens)      # never more than max_num_seqs whole requests
    return tokens, seqs


def logs_tokens_as_concurrency(release) -> bool:
    """0.20.1 on, "GPU KV cache size" is int(max concurrency x max_model_len); before, num_blocks
    // groups x the smallest block size (_report_kv_cache_config)."""
    return release.at_least(0, 20, 1)


# The source line of each KV-cache line a V1 log prints ("[kv_cache_utils.py:1291] GPU KV cache size: ..."),
# by release: the line of the logger call (a log record's lineno) in every wheel from 0.8.0 to 0.34.0,
# read with Python's ast (vllm/v1/core/kv_cache_utils.py _report_kv_cache_config, and
# vllm/v1/worker/gpu_worker.py determine_available_memory / its successors). 0.28.0 on print the
# concurrency, 0.30.0 on the token count, from other files. A log that prints no release shows which
# releases printed its lines there (release_from_source_lines).
SOURCE_LINES = {
    "kv_tokens": ("kv_cache_utils.py", {
    537: "0.8.0 0.8.1", 566: "0.8.2", 578: "0.8.3", 634: "0.8.4 0.8.5 0.8.5.post1", 637: "0.9.0 0.9.0.1",
    715: "0.9.1", 716: "0.9.2", 833: "0.10.0", 849: "0.10.1 0.10.1.1", 864: "0.10.2", 870: "0.9.1", 873: "0.9.2",
    997: "0.10.0", 1013: "0.10.1 0.10.1.1", 1028: "0.10.2", 1087: "0.11.0", 1229: "0.11.1 0.11.2", 1286: "0.12.0",
    1291: "0.13.0", 1305: "0.14.0 0.14.1", 1307: "0.15.0 0.15.1 0.16.0", 1314: "0.17.0 0.17.1",
    1316: "0.18.0 0.18.1", 1319: "0.19.0 0.19.1", 1708: "0.20.1 0.20.2", 1710: "0.21.0", 1711: "0.20.0",
    1733: "0.22.0 0.22.1", 1744: "0.23.0", 1869: "0.28.0", 2032: "0.29.0", 2146: "0.24.0 0.25.0 0.25.1",
    2177: "0.26.0", 2235: "0.27.0 0.27.1"}),
    "concurrency": ("kv_cache_utils.py", {
    540: "0.8.0 0.8.1", 569: "0.8.2", 581: "0.8.3", 637: "0.8.4 0.8.5 0.8.5.post1", 640: "0.9.0 0.9.0.1",
    719: "0.9.1", 720: "0.9.2", 837: "0.10.0", 853: "0.10.1 0.10.1.1", 868: "0.10.2", 874: "0.9.1", 877: "0.9.2",
    1001: "0.10.0", 1017: "0.10.1 0.10.1.1", 1032: "0.10.2", 1091: "0.11.0", 1234: "0.11.1 0.11.2", 1291: "0.12.0",
    1296: "0.13.0", 1310: "0.14.0 0.14.1", 1312: "0.15.0 0.15.1 0.16.0", 1319: "0.17.0 0.17.1",
    1321: "0.18.0 0.18.1", 1324: "0.19.0 0.19.1", 1709: "0.20.1 0.20.2", 1711: "0.21.0", 1716: "0.20.0",
    1734: "0.22.0 0.22.1", 1745: "0.23.0", 2147: "0.24.0 0.25.0 0.25.1", 2178: "0.26.0", 2236: "0.27.0 0.27.1"}),
    "kv_memory": ("gpu_worker.py", {
    227: "0.9.1", 232: "0.9.2", 255: "0.10.0", 276: "0.10.1 0.10.1.1", 298: "0.10.2 0.11.0", 356: "0.15.0 0.15.1",
    358: "0.14.0 0.14.1", 359: "0.11.1 0.11.2 0.12.0", 373: "0.16.0", 375: "0.13.0", 424: "0.17.0 0.17.1",
    436: "0.19.0 0.19.1", 440: "0.20.0 0.20.1 0.20.2", 456: "0.18.0 0.18.1", 462: "0.21.0", 466: "0.22.0 0.22.1",
    480: "0.23.0", 508: "0.24.0", 538: "0.25.0 0.25.1", 560: "0.26.0", 563: "0.27.0 0.27.1", 578: "0.28.0",
    625: "0.29.0", 640: "0.30.0", 692: "0.31.0", 759: "0.32.0", 772: "0.33.0", 795: "0.34.0"}),
}
SOURCE_LINES_READ = ("0.8.0", "0.34.0")


def releases_printing_at(kind: str, file: str, line: int) -> set[str] | None:
    """The releases whose `kind` line ("kv_tokens", "concurrency", "kv_memory") is logged from
    `file`:`line` (SOURCE_LINES), or None where that file never logs it in a release read."""
    home, lines = SOURCE_LINES[kind]
    if file != home:
        return None
    return set(lines.get(line, "").split())


def tokens_as_concurrency(tokens: int, concurrency, model_len: int) -> bool:
    """Whether a printed "GPU KV cache size" can be int(max_concurrency x max_model_len), as 0.20.1 on
    print it (logs_tokens_as_concurrency), given the concurrency printed to two decimals ("%.2fx"): a
    count outside that range is blocks // groups x block size, a release before 0.20.1."""
    low, high = (concurrency - Fraction(1, 200)) * model_len, (concurrency + Fraction(1, 200)) * model_len
    return int(low) - 1 <= tokens <= high


MAMBA_ALIGN_FROM = (0, 17, 0)     # the first wheel read whose MambaModelConfig has mamba_cache_mode align


def mamba_state_pages(release, prefix_caching: bool | None = None) -> int:
    """Pages of Mamba state one request keeps: prefix caching's "align" mode keeps two, vLLM's
    default for hybrids from 0.28.0; one before (every wheel 0.18.1-0.33.0 read: up to 0.25.x
    ModelConfig.is_prefix_caching_supported says no for hybrids; 0.26.0-0.27.x it says yes but
    EngineArgs's default_prefix_caching adds "and not model_config.is_hybrid"; 0.28.0 on
    MambaModelConfig.verify_and_update_config sets mamba_cache_mode "align" under the prefix
    caching now on by default)."""
    if prefix_caching is None:          # the release's default
        prefix_caching = release.at_least(0, 28, 0)
    # --enable-prefix-caching given: MambaModelConfig sets mamba_cache_mode "align" (0.17.0 on: its
    # verify_and_update_config is the same in the 0.17.0, 0.18.0 and 0.18.1 wheels).
    return 2 if prefix_caching and release.at_least(*MAMBA_ALIGN_FROM) else 1


# --max-cudagraph-capture-size, with --cudagraph-capture-sizes, replaced --cuda-graph-sizes (vllm-project/vllm
# PR #26016, first in 0.11.1).
CAPTURE_SIZE_LIMIT_FROM = (0, 11, 1)


def check_capture_size_limit(release, limit: int, spec_tokens: int = 0) -> None:
    if not release.at_least(*CAPTURE_SIZE_LIMIT_FROM):
        raise InputError("max-cudagraph-capture-size", f"vLLM {release} has no --max-cudagraph-capture-size (0.11.1 "
                                                       "on; before it --cuda-graph-sizes, which is not modelled)")
    q = 1 + spec_tokens
    if q > 1 and limit < q:
        # compilation.py adjust_cudagraph_sizes_for_spec_decode rounds each size up to a multiple of q
        # within the limit: under q none is left, and vLLM raises rather than start.
        raise InputError("max-cudagraph-capture-size", f"{limit} is under {q}, the tokens a decode step verifies with "
                                                       f"{spec_tokens} speculative tokens: vLLM rounds every graph "
                                                       f"size up to a multiple of {q} and, none left, refuses to start "
                                                       f"(\"No valid cudagraph sizes\"); give {q} or more")


def subtracts_cudagraphs(release, eager: bool = False, rocm: bool = False) -> bool:
    """0.20.0 on, the CUDA-graph memory estimate comes out of the KV budget by default
    (VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS defaults to "1" in the 0.20.0 wheel's vllm/envs.py, and
    gpu_worker.py determine_available_memory subtracts it; the line it logs says "default since v0.21.0",
    a text that is already in 0.20.0); before, graphs were captured after the cache was allocated, inside
    what utilization leaves. What the estimate is: profile.cudagraph_estimate."""
    # The estimate runs on CUDA only until 0.26.0 (is_cuda(), then is_cuda_alike()).
    return release.at_least(0, 20, 0) and not eager and not (rocm and not release.at_least(0, 26, 0))


TEXT_ONLY_FROM = (0, 10, 2)          # the first wheel read whose model files build no tower at zero limits
LANGUAGE_MODEL_ONLY_FROM = (0, 17, 0)  # MultiModalConfig.language_model_only: not in 0.16.0, in 0.17.0


def text_only_flags(release) -> list:
    """The flags that serve a multimodal checkpoint text-only (readers/text_only.py): 0.17.0 on
    --language-model-only (config/multimodal.py: get_limit_per_prompt answers 0 for every
    modality); 0.10.2-0.16.x a zero limit for the image and video modalities, which the Qwen-VL,
    LLaVA and (0.15 on) every tower's model file reads to build no tower."""
    if release.at_least(*LANGUAGE_MODEL_ONLY_FROM):
        return ["--language-model-only"]
    return limits_flags(release, {"image": 0, "video": 0})


def check_text_only(release, limits: dict) -> None:
    """Before 0.10.2 no wheel read skips the tower at zero limits (0.8.3's qwen2_5_vl.py builds it
    whatever --limit-mm-per-prompt says): serving text-only is not sized there."""
    if not release.at_least(*TEXT_ONLY_FROM):
        field = "limit-mm-per-prompt" if limits else "language-model-only"
        raise InputError(field, f"vLLM {release} builds the vision tower whatever the multimodal limits say; "
                                "text-only serving (no tower loaded) is read from 0.10.2: choose 0.10.2 or "
                                "later, or allow an image")


LIMITS_AS_JSON_FROM = (0, 9, 0)     # EngineArgs parses dict fields with json.loads (0.9.0, 0.10.2); 0.8.3 KEY=VALUE


def limits_flags(release, limits: dict) -> list:
    """--limit-mm-per-prompt as the release parses it: JSON from 0.9.0 (arg_utils.py parse_type's
    json.loads, which 0.9.0 still falls back from to KEY=VALUE; 0.10.2 takes JSON only),
    `image=1,video=0` before (0.8.3's nullable_kvs)."""
    if release.at_least(*LIMITS_AS_JSON_FROM):
        return ["--limit-mm-per-prompt", "{" + ", ".join(f'"{k}": {v}' for k, v in limits.items()) + "}"]
    return ["--limit-mm-per-prompt", ",".join(f"{k}={v}" for k, v in limits.items())]


def kv_cache_memory_flag(release) -> bool:
    """--kv-cache-memory-bytes pins the KV memory from 0.10.2 (CacheConfig.kv_cache_memory_bytes)."""
    return release.at_least(0, 10, 2)


def mxfp4_marlin(release, gpu) -> bool:
    """Whether vLLM runs an mxfp4 MoE (gpt-oss) on the Marlin kernel, whose padding the loaded
    weights carry (readers/quantized_bytes.mxfp4_padding_bytes), in the releases whose
    vllm/model_executor/layers/quantization/mxfp4.py was read:
    - 0.10.1 (Mxfp4MoEMethod._should_use_marlin): on CUDA but compute capability 10.0, Marlin
      below 9.0, and from 9.0 unless triton_kernels and torch >= 2.8.0 are installed; its wheel
      pins torch 2.7.1, so Marlin on every CUDA GPU but a B200 (the gpt-oss-120b H100 log: 65.9651
      GiB loaded, the checkpoint's 60.77 plus 5.13 of padding);
    - 0.11.0 (get_mxfp4_backend): FlashInfer only where installed (the wheel's `flashinfer` extra;
      Hopper also needs VLLM_USE_FLASHINFER_MOE_MXFP4_BF16=1), Triton only with the optional
      triton_kernels package, which the wheel does not require, so Marlin on every CUDA GPU but a
      B200 (taken as the docker image's, which ships FlashInfer), its padding as 0.10.1's
      (create_weights: the expert width to 128, the hidden size to 256). The gpt-oss-120b H100
      refusal log (its gpu_worker.py:298 and kv_cache_utils.py:716 are 0.11.0's lines): 1.71 GiB
      left at utilization 0.95, the Marlin padding's 5.13 GiB less than the checkpoint alone leaves;
    - 0.13.0 (get_mxfp4_backend): triton_kernels only for capability 9.0 to 10.x and FlashInfer
      on the 10.x family, so Marlin below 9.0 and from 11.0 (the gpt-oss-20b DGX Spark log, 12.1:
      13.7193 GiB loaded, the checkpoint's 12.82 plus 0.85).
    Other releases are not read: the checkpoint's bytes are kept there, as is Hopper's triton
    layout, which is not modelled."""
    if release is None or gpu is None or gpu.platform != "cuda" or gpu.compute_capability is None:
        return False
    capability = gpu.compute_capability
    if (release.at_least(0, 10, 1) and not release.at_least(0, 10, 2)) or \
            (release.at_least(0, 11, 0) and not release.at_least(0, 11, 1)):
        return capability != (10, 0)
    if release.at_least(0, 13, 0) and not release.at_least(0, 14, 0):
        return capability < (9, 0) or capability >= (11, 0)
    return False


SKIP_LAYERS_FROM = (0, 19, 0)       # CacheConfig.kv_cache_dtype_skip_layers (absent in 0.18.1)
TURBOQUANT_FROM = (0, 20, 0)        # the turboquant_* CacheDType presets (no turboquant/ in 0.19.1)
TURBOQUANT_HYBRID_FROM = (0, 21, 0)  # 0.20.0's create_engine_config raises NotImplementedError for hybrids
KEPT_BLOCK_FROM = (0, 25, 0)        # platforms/interface.py _align_heterogeneous_kv_block_size


def check_turboquant(release, name: str, hybrid: bool) -> None:
    """TurboQuant's presets from 0.20.0 (vllm/model_executor/layers/quantization/turboquant), on
    models with state layers from 0.21.0 (get_boundary_skip_layers takes the model config and
    keeps none of a hybrid's layers)."""
    if not release.at_least(*TURBOQUANT_FROM):
        raise InputError("kv-dtype", f"vLLM {release} has no {name} cache dtype; TurboQuant's presets came in "
                                     "0.20.0: choose 0.20.0 or later, or another kv-dtype")
    if hybrid and not release.at_least(*TURBOQUANT_HYBRID_FROM):
        raise InputError("kv-dtype", f"vLLM {release} refuses TurboQuant on a model with state layers "
                                     "(NotImplementedError); 0.21.0 runs it: choose 0.21.0 or later")


NVFP4_KV_FROM = (0, 20, 0)          # CacheDType "nvfp4" (absent in 0.19.x): 4-bit values, an fp8 scale a 16


def check_nvfp4(release) -> None:
    if not release.at_least(*NVFP4_KV_FROM):
        raise InputError("kv-dtype", f"vLLM {release} has no nvfp4 cache dtype; it came in 0.20.0: choose 0.20.0 "
                                     "or later, or fp8")


def check_skip_layers(release) -> None:
    if not release.at_least(*SKIP_LAYERS_FROM):
        raise InputError("kv-dtype-skip-layers", f"vLLM {release} has no --kv-cache-dtype-skip-layers; it came in "
                                                 "0.19.0: choose 0.19.0 or later, or leave it out")


def aligns_kept_block(release) -> bool:
    """Whether the quantized layers' block grows to cover a kept layer's page (0.25.0 on)."""
    return release is None or release.at_least(*KEPT_BLOCK_FROM)


HMA_READ_FROM = (0, 10, 2)          # the first wheel whose VllmConfig.__post_init__ was read for it
HMA_CONNECTORS_FROM = (0, 22, 0)    # before, any --kv-transfer-config turned the manager off
HMA_TRISTATE_FROM = (0, 13, 0)      # the flag None by default; an explicit enable that cannot hold raises
HMA_PROMOTE_WORDS_FROM = (0, 27, 0)
# Connectors that subclass SupportsHMA, and the first release each does (kv_connector/v1/*.py, read in
# the wheels 0.18.0-0.34.0); a connector not listed (LMCacheConnectorV1, LMCacheMPConnector, FlexKV, a
# custom class) turns the manager off.
HMA_CONNECTORS = {"NixlConnector": (0, 18, 0), "SimpleCPUOffloadConnector": (0, 19, 0),
                  "MooncakeConnector": (0, 20, 0), "OffloadingConnector": (0, 21, 0),
                  "DecodeBenchConnector": (0, 21, 0), "MooncakeStoreConnector": (0, 22, 0),
                  "ExampleHiddenStatesConnector": (0, 22, 0), "MoRIIOConnector": (0, 30, 0),
                  "HiSparseConnector": (0, 30, 0), "UMBPStoreConnector": (0, 34, 0)}
CHUNKED_HMA_ENV = "VLLM_ALLOW_CHUNKED_LOCAL_ATTN_WITH_HYBRID_KV_CACHE=1"
OFFLOAD_CONNECTOR_BEFORE_HMA_FROM = (0, 26, 0)   # --kv-offloading-size's connector set before the rule runs


def _connector_keeps_hma(release, connector: str) -> bool:
    first = HMA_CONNECTORS.get(connector)
    return release.at_least(*HMA_CONNECTORS_FROM) and first is not None and release.at_least(*first)


def hybrid_manager(release, asked: str | None, connector: str | None, chunked: bool,
                   hidden_states_draft: bool = False) -> tuple[bool, str | None]:
    """(whether the hybrid KV cache manager runs, why not in words) as VllmConfig.__post_init__
    decides (vllm/config/vllm.py, 0.10.2-0.34.0): off when asked (--disable-hybrid-kv-cache-manager),
    for chunked local attention unless its environment variable allows it (the on asked here), and
    for a --kv-transfer-config connector that does not support it (any connector before 0.22.0), and for
    chunked local attention with a draft on the target's hidden states (EAGLE, MTP) whatever the variable
    says. An enable asked where it cannot hold is vLLM's ValueError (0.13.0 on)."""
    if asked is None and connector is None and not chunked:
        return True, None
    if not release.at_least(*HMA_READ_FROM) or not v1(release):
        field = "hybrid-kv-cache-manager" if asked is not None else "kv-connector"
        if asked is None and connector is None:
            return True, None           # a release whose chunked-attention rule is not read: as before
        raise InputError(field, f"vLLM {release}'s hybrid KV cache manager rules are read from 0.10.2 (V1): "
                                "choose 0.10.2 or later, or leave it out")
    if asked == "off":
        return False, "--disable-hybrid-kv-cache-manager"
    if connector is not None and not _connector_keeps_hma(release, connector):
        why = (f"--kv-transfer-config's {connector} does not support it in vLLM {release}"
               if release.at_least(*HMA_CONNECTORS_FROM) else
               f"vLLM {release} turns it off for any --kv-transfer-config")
        return _off(release, asked, why)
    if chunked and hidden_states_draft:
        why = "chunked local attention with a draft on the target's hidden states (MTP, EAGLE)"
        return _off(release, asked, why)
    if chunked and asked != "on":
        return False, (f"chunked local attention turns it off unless {CHUNKED_HMA_ENV} is set "
                       "(hybrid-kv-cache-manager on)")
    return True, None


def _off(release, asked: str | None, why: str) -> tuple[bool, str]:
    """Off for `why`; an enable asked for there is vLLM's ValueError (0.13.0 on; before, the flag's
    False was its default, and the rule turned it off whatever was asked)."""
    if asked == "on" and release.at_least(*HMA_TRISTATE_FROM):
        raise InputError("hybrid-kv-cache-manager", f"vLLM {release} raises \"Hybrid KV cache manager was explicitly "
                                                    f"enabled but is not supported in this configuration\": {why}; "
                                                    "leave it to vLLM or off")
    return False, why


def hma_refusal(release) -> str:
    """What vLLM raises when the manager is off and a state layer cannot be made full attention."""
    if release.at_least(*HMA_PROMOTE_WORDS_FROM):
        return "Failed to promote local KV cache specs to one unified type."
    return "Hybrid KV cache manager is disabled but failed to convert the KV cache specs to one unified type."


IN_FLIGHT_FROM = (0, 26, 0)         # SlidingWindowSpec.max_admission_blocks_per_request takes max_in_flight_tokens
ASYNC_SPEC_CHECK_UNTIL = (0, 33, 0)  # 0.26.0-0.32.x turn async scheduling off for a draft model's speculation


def concurrent_batches(release, pp: int, pooling: bool, draft_model: bool, runner_v2: bool) -> int:
    """VllmConfig.max_concurrent_batches (vllm/config/vllm.py, 0.26.0-0.34.0): with async
    scheduling 2 at pp 1, pp + 1 on the V2 runner, else pp; without it pp. Async scheduling is on by
    default except for a pooling model and, 0.26.0-0.32.x, speculation by a separate draft model
    (its method is none of the eagle, MTP, DFlash or GPU n-gram kinds)."""
    asynchronous = not pooling and not (draft_model and not release.at_least(*ASYNC_SPEC_CHECK_UNTIL))
    if not asynchronous:
        return pp
    if runner_v2:
        return pp + 1
    return 2 if pp <= 1 else pp


def in_flight_tokens(release, chunk: int, batches: int) -> int:
    """The new tokens a sliding-window or chunked layer reserves beside its window: the prefill chunk
    (max_num_batched_tokens) before 0.26.0; from it max_in_flight_tokens = the concurrent batches x
    that chunk (out-of-window blocks are freed on the processed tokens)."""
    return chunk * batches if release.at_least(*IN_FLIGHT_FROM) else chunk
