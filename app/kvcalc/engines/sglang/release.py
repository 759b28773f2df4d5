"""SGLang's defaults by release: chunked_prefill_size, cuda_graph_max_bs and mem_fraction_static as
each release picks them when they are not given, keyed by the GPU's memory (in MiB, as
get_device_memory_capacity reads nvidia-smi's total) and facts, and by the launch.

Read from each release's own code (the wheels on PyPI):
- 0.3.6-0.4.7: python/sglang/srt/server_args.py ServerArgs.__post_init__, a table by tp (tp x pp
  from 0.4.7), 0.4.6-0.4.7 larger-GPU branches (docs/research/vllm-release-rules.md Rule 7);
- 0.4.7.post1-0.5.2: the same place, a reserve by GPU memory (2.8 + tp.pp/10, 9.5 + tp.pp/2,
  12 + tp.pp/2 GiB, 32 GiB over 160 GiB); --enable-dp-attention reserves 4 GiB more (0.5.2's
  `if self.enable_dp_attention: reserved_mem += 4 * 1024`);
- 0.5.3-0.5.18: server_args.py _handle_gpu_memory_settings; 0.5.19-0.5.23
  arg_groups/memory_hook.py handle_gpu_memory_settings: the chunk and decode graph batch by GPU
  memory tier, then reserved = 512 + max(chunk, 2048) x 1.5 + tp.pp/8 x 1024 + the graphs' terms,
  at least 10 GiB on GPUs over 60 GiB, and mem_fraction_static = round((gpu - reserved) / gpu, 3).
  Its terms by release:
  - decode graphs: cuda_graph_max_bs x 2 MiB (0.5.16 on: only while decode graphs are captured,
    not with --disable-cuda-graph; reserve_for_graph_mb);
  - DP attention ("needs more padding for some operations"): cuda_graph_max_bs x dp x 3 MiB, and
    x 1.5 more over a batch of 300 (PR #10975, 0.5.3 on; before the 10 GiB floor);
  - prefill (piecewise) graphs: off by default to 0.5.9 (--enable-piecewise-cuda-graph); on by
    default from 0.5.10 (--disable-piecewise-cuda-graph), where _handle_piecewise_cuda_graph turns
    them off for a multimodal model, DP attention, pp > 1, a non-CUDA GPU, LoRA, speculative
    decoding (0.5.10-0.5.11) and the architectures of piecewise_cuda_graph_disabled_model_archs
    (configs/model_config.py); 0.5.16 on also with --disable-cuda-graph (cuda_graph_hook: both
    phases disabled). Reserve: 8 MiB per captured size (the sizes 4, 8 ... 32, 48 ... 256, 288 ...
    512, 576 ... 1024, 1280 ... 4096, 4608 ... up to the chunk, clamped to the context from
    0.5.13), or 1.5 GiB with an MLA backend (0.5.10 on), before the floor;
  - the <35 GiB tier: cuda_graph_max_bs 16 / 80 (tp 4 on) in 0.5.3-0.5.4, 24 / 80 in 0.5.5-0.5.19,
    and chunk 4096 with 48 / 160 from 0.5.20; 0.5.23 lowers a default graph batch to a given
    --max-running-requests;
  - XPU: 2 GiB more, after the floor (0.5.20 on);
  - no GPU memory known: 0.88, 0.95 from 0.5.20.
  Speculative decoding's reserve (2 GiB, 4 GiB from 0.5.10, 6 GiB STANDALONE, none for NGRAM) went
  in 0.5.16, the first release whose drafts are sized here (engine.py refuses older ones). DeepEP's
  2 GiB (--moe-a2a-backend deepep, 0.5.16 on) is not an input here.
"""

from dataclasses import dataclass
from fractions import Fraction

from ...units import MIB

GIB_MIB = 1024

# _handle_gpu_memory_settings (0.5.3 on): (below this many MiB, chunked_prefill_size,
# cuda_graph_max_bs under tp 4, from tp 4); None: the largest GPUs, one batch for every tp.
_TIERS = ((20 * GIB_MIB, 2048, 8, 8), (35 * GIB_MIB, 2048, 24, 80), (60 * GIB_MIB, 4096, 32, 160),
          (90 * GIB_MIB, 8192, 256, 512), (160 * GIB_MIB, 8192, 256, 512), (None, 16384, 512, 512))
# The <35 GiB tier by release (A10, 4090, 5090): (chunk, batch under tp 4, from tp 4).
_SMALL_TIER = (((0, 5, 20), (4096, 48, 160)), ((0, 5, 5), (2048, 24, 80)), ((0, 5, 3), (2048, 16, 80)))
# configs/model_config.py piecewise_cuda_graph_disabled_model_archs (0.5.12-0.5.23; the DSA
# models among them, DeepseekV32 and GlmMoeDsa, are refused by the allocator anyway).
PIECEWISE_DISABLED_ARCHS = ("DeepseekV32ForCausalLM", "GlmMoeDsaForCausalLM", "DeepseekV4ForCausalLM",
                            "DeepseekV4ForCausalLMNextN", "DeepseekV4ForCausalLMDSpark", "Qwen3NextForCausalLM",
                            "Glm5NextForConditionalGeneration", "BailingMoeV2_5ForCausalLM", "LLaDAModelLM")
# 0.5.23 model_config.py multimodal_piecewise_cuda_graph_supported_model_archs: multimodal models
# that keep their prefill graphs.
PIECEWISE_MULTIMODAL_ARCHS = ("KimiK25ForConditionalGeneration", "MiniMaxM3SparseForCausalLM",
                              "MiniMaxM3SparseForConditionalGeneration")


@dataclass(frozen=True)
class Launch:
    """What the default depends on besides the GPU's memory and the release."""
    tp: int = 1                  # --tp-size: every GPU of a stage (tp x dp under DP attention)
    pp: int = 1
    dp: int = 1                  # --dp-size with --enable-dp-attention
    chunk: int | None = None     # --chunked-prefill-size given (before DP attention divides it)
    mla: bool = False            # an MLA attention backend
    multimodal: bool = False
    architecture: str = ""
    platform: str = "cuda"       # the GPU preset's platform: cuda, rocm, xpu ("" for a custom GPU: CUDA taken)
    enforce_eager: bool = False  # --disable-cuda-graph
    context: int | None = None   # --context-length
    requests: int | None = None  # --max-running-requests given
    lora: bool = False
    draft: bool = False


@dataclass(frozen=True)
class Defaults:
    chunk: int
    graph_bs: int
    fraction: Fraction
    reserved_mib: float | None = None          # None where the release keys the fraction on tp alone
    terms: tuple = ()                           # (words, MiB) of the reserve, as the code adds them
    gpu_mib: float | None = None


def defaults(release, gpu_memory_bytes: int | None, launch: Launch) -> Defaults:
    """(chunk, graph batch, mem_fraction_static and the reserve's terms) this release picks."""
    if gpu_memory_bytes is None:
        fraction = Fraction(95, 100) if release.at_least(0, 5, 20) else Fraction(88, 100)
        return Defaults(launch.chunk or 4096, 160, fraction)
    mib = gpu_memory_bytes / MIB
    if not release.at_least(0, 5, 3):
        return _before_0_5_3(release, mib, launch)
    chunk, graph_bs = _tier(release, mib, launch)
    if launch.requests is not None and release.at_least(0, 5, 23) and graph_bs > launch.requests:
        graph_bs = launch.requests          # memory_hook.py: a default decode max_bs within the requests
    parallel = launch.tp * launch.pp
    terms = [("constant metadata", 512), (f"activations: max(chunk {chunk:,}, 2,048) x 1.5", max(chunk, 2048) * 1.5),
             (f"tp x pp {parallel} / 8 GiB", parallel / 8 * 1024)]
    if not (launch.enforce_eager and release.at_least(0, 5, 16)):
        terms.append((f"decode CUDA graphs: batch {graph_bs} x 2", graph_bs * 2))
    if launch.dp > 1:
        dp_mib = graph_bs * launch.dp * 3 + (graph_bs * launch.dp * 1.5 if graph_bs > 300 else 0)
        terms.append((f"DP attention's padding buffers: batch {graph_bs} x dp {launch.dp} x "
                      + ("4.5" if graph_bs > 300 else "3"), dp_mib))
    piecewise = _piecewise_mib(release, chunk, launch)
    if piecewise:
        terms.append(piecewise)
    reserved = sum(mib_ for _, mib_ in terms)
    if mib > 60 * GIB_MIB and reserved < 10 * GIB_MIB:
        terms.append(("raised to the 10 GiB floor (GPUs over 60 GiB)", 10 * GIB_MIB - reserved))
        reserved = 10 * GIB_MIB
    if launch.platform == "xpu" and release.at_least(0, 5, 20):
        terms.append(("XPU oneDNN scratch", 2 * GIB_MIB))
        reserved += 2 * GIB_MIB
    return Defaults(chunk, graph_bs, _rounded(mib, reserved), reserved, tuple(terms), mib)


def _rounded(mib: float, reserved: float) -> Fraction:
    """round((gpu_mem - reserved_mem) / gpu_mem, 3), in the float arithmetic the code uses."""
    return Fraction(round((mib - reserved) / mib, 3)).limit_denominator(1000)


def _tier(release, mib: float, launch: Launch) -> tuple[int, int]:
    for limit, tier_chunk, small_bs, big_bs in _TIERS:
        if limit is None or mib < limit:
            break
    if limit == 35 * GIB_MIB:
        tier_chunk, small_bs, big_bs = next(values for first, values in _SMALL_TIER if release.at_least(*first))
    return launch.chunk or tier_chunk, small_bs if launch.tp < 4 else big_bs


def piecewise_on(release, launch: Launch) -> bool:
    """Whether prefill (piecewise) CUDA graphs are captured by default (_handle_piecewise_cuda_graph)."""
    if not release.at_least(0, 5, 10):
        return False
    if launch.multimodal and not (release.at_least(0, 5, 23) and launch.architecture in PIECEWISE_MULTIMODAL_ARCHS):
        return False
    if launch.draft and not release.at_least(0, 5, 12):
        return False
    if launch.enforce_eager and release.at_least(0, 5, 16):
        return False
    return not (launch.dp > 1 or launch.pp > 1 or launch.platform not in ("cuda", "") or launch.lora
                or launch.architecture in PIECEWISE_DISABLED_ARCHS)


def piecewise_sizes(max_tokens: int) -> list[int]:
    """_generate_piecewise_cuda_graph_tokens (0.5.9 on; 0.5.19 on cuda_graph_hook.py
    generate_prefill_cuda_graph_batch_sizes): the token counts captured up to max_tokens."""
    sizes = (list(range(4, 33, 4)) + list(range(48, 257, 16)) + list(range(288, 513, 32))
             + list(range(576, 1025, 64)) + list(range(1280, 4097, 256)) + list(range(4608, max_tokens + 1, 512)))
    return [s for s in sizes if s <= max_tokens]


def _piecewise_mib(release, chunk: int, launch: Launch):
    if not piecewise_on(release, launch):
        return None
    if launch.mla:
        return "prefill CUDA graphs with an MLA backend: 1.5 GiB", 1.5 * GIB_MIB
    top = chunk
    if launch.context is not None and release.at_least(0, 5, 13):
        top = min(top, launch.context)
    count = len(piecewise_sizes(top))
    return f"prefill CUDA graphs: {count} sizes up to {top:,} tokens x 8", count * 8


def _before_0_5_3(release, mib: float, launch: Launch) -> Defaults:
    """ServerArgs.__post_init__ before 0.5.3 (research Rule 7, checked against each release's
    server_args.py): the chunk by GPU memory, then the fraction."""
    tp, pp, chunk = launch.tp, launch.pp, launch.chunk
    small = mib < 25_000
    if release.at_least(0, 4, 7, post=1):
        tier_chunk = 2048 if mib < 35 * 1024 else 8192 if mib < 160 * 1024 else 16384
    elif release.at_least(0, 4, 7):
        tier_chunk = 2048 if small else 16384 if mib > 180_000 else 8192
    else:
        tier_chunk = 2048 if small else 8192
    chunk = chunk or tier_chunk
    graph_bs = (8 if tp < 4 else 80) if small else 160      # cuda_graph_max_bs on GPUs under 25 GB
    if release.at_least(0, 4, 7, post=1):
        # A reserve by GPU memory (MiB), the rest for weights and the pool.
        parallel = tp * pp
        reserved = ((2.8 + parallel / 10) * 1024 if mib < 35 * 1024 else
                    (9.5 + parallel / 2) * 1024 if mib < 90 * 1024 else
                    (12 + parallel / 2) * 1024 if mib < 160 * 1024 else 32 * 1024)
        terms = [("by GPU memory and tp x pp", reserved)]
        if launch.dp > 1:
            terms.append(("DP attention", 4 * 1024))
            reserved += 4 * 1024
        return Defaults(chunk, graph_bs, _rounded(mib, reserved), reserved, tuple(terms), mib)
    # By tensor parallelism (tp x pp from 0.4.7); 0.81 at tp 8 from 0.4.0 (0.82 in 0.3.6).
    parallel = tp * pp if release.at_least(0, 4, 7) else tp
    by_parallel = Fraction(79 if parallel >= 16 else (82 if not release.at_least(0, 4, 0) else 81)
                           if parallel >= 8 else 85 if parallel >= 4 else 87 if parallel >= 2 else 88, 100)
    if mib <= 81920 or not release.at_least(0, 4, 6):
        return Defaults(chunk, graph_bs, by_parallel, gpu_mib=mib)
    if not release.at_least(0, 4, 7):
        # 0.4.6: larger GPUs keep 13 GiB back, unrounded.
        return Defaults(chunk, graph_bs, Fraction(round(mib) - 13 * 1024, round(mib)), 13 * 1024,
                        (("GPUs over 80 GiB", 13 * 1024),), mib)
    # 0.4.7: 0.79 over 180,000 MiB; over 96 GiB more for the pool.
    if mib > 180_000:
        return Defaults(chunk, graph_bs, Fraction(79, 100), gpu_mib=mib)
    fraction = 0.88
    if mib > 96 * 1024:
        fraction = min(fraction + 48 * 1024 * (1 - fraction) / mib, (mib - 18 * 1024) / mib)
    return Defaults(chunk, graph_bs, Fraction(fraction).limit_denominator(10 ** 6), gpu_mib=mib)


def words(release, out: Defaults) -> str:
    """The reserve as this release adds it, for the notes."""
    if out.reserved_mib is None or out.gpu_mib is None:
        return ""
    where = ("server_args.py ServerArgs.__post_init__" if not release.at_least(0, 5, 3) else
             "server_args.py _handle_gpu_memory_settings" if not release.at_least(0, 5, 19) else
             "arg_groups/memory_hook.py handle_gpu_memory_settings")
    parts = " + ".join(f"{m:,.0f} ({w})" for w, m in out.terms)
    return (f"SGLang {release} ({where}) reserves {parts} = {out.reserved_mib:,.0f} MiB of the GPU's "
            f"{out.gpu_mib:,.0f} MiB: mem_fraction_static = round(({out.gpu_mib:,.0f} - {out.reserved_mib:,.0f}) / "
            f"{out.gpu_mib:,.0f}, 3) = {float(out.fraction):.3f}.")
