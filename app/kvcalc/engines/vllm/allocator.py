"""vLLM (V1)'s KV cache allocator: one frozen spec per layer kind owning its page and what one
request keeps of it, the KV cache groups, and the pool the memory left for the cache buys.

Shaped as vLLM shapes its own (paths as of its 2025-2026 main):
- `vllm/v1/kv_cache_interface.py`: a spec per layer kind (FullAttentionSpec, MLAAttentionSpec,
  SlidingWindowSpec, ChunkedLocalAttentionSpec, MambaSpec), each with `page_size_bytes` (one
  block of this layer on this rank) and `max_memory_usage_bytes` (what one request at
  max_model_len keeps of it).
- `vllm/v1/core/kv_cache_utils.py`: get_kv_cache_groups (one group when every layer needs the
  same token slots; otherwise `_get_kv_cache_groups_uniform_page_size`: groups of equal size,
  the smallest type count, or the largest when it is under 1.5x the smallest, padded);
  unify_kv_cache_spec_page_size (smaller pages grow their block size by the ratio);
  get_num_blocks (available // page // layers per group); get_kv_cache_configs (every worker
  takes the smallest block count); _report_kv_cache_config ("GPU KV cache size" = num_blocks
  // groups x the smallest block size; "Maximum concurrency" = num_blocks / blocks one request
  at max_model_len needs); _check_enough_kv_cache_memory and _estimate_max_model_len_from_groups
  (the refusal and its binary search).
- `vllm/platforms/interface.py` _align_hybrid_block_size: a hybrid's attention block grows until
  one attention page holds a state page.
"""

from dataclasses import dataclass, replace
from fractions import Fraction

from ...errors import InputError
from ...precision import precision
from ...units import GIB, ceil_div
from . import printing, release as rules

DEFAULT_BLOCK = 16
FLASH_MLA_BLOCK = 64         # FlashMLA (Hopper, Blackwell) forces 64-token blocks for MLA models
BLOCK_SIZES = (8, 16, 32, 64, 128, 256)      # vllm/config/cache.py BlockSize (1 is for TPU)
# Mamba / linear-attention state (MambaSpec.max_memory_usage_bytes): with prefix caching on,
# vLLM's default for hybrids since v0.28 (release.mamba_state_pages), mamba_cache_mode "align" keeps
# two state pages per request; with it off ("none", and before v0.28) one.
MAMBA_ALIGN_PAGES = 2
MAMBA_NONE_PAGES = 1
KERNEL_BLOCK_ALIGNMENT = 16       # the smallest kernel block of the CUDA attention backends
BYTE = precision("int8")           # a uint8 cache's element
SWAP_SPACE_BYTES = 4 * GIB        # V0's --swap-space default: CPU blocks for preempted sequences


@dataclass(frozen=True)
class AttentionSpec:
    """What every attention layer's spec shares: a page is block_size tokens of this layer's K
    and V on this rank (AttentionSpec.page_size_bytes), and a request keeps whole pages."""
    block_size: int
    token_bytes: int         # one token's K and V (or latent) in this layer on this rank

    @property
    def page_size_bytes(self) -> int:
        return self.block_size * self.token_bytes

    def pages(self, model_len: int, prefill_chunk: int) -> int:
        """The pages one request at `model_len` keeps in this layer."""
        raise NotImplementedError

    def max_memory_usage_bytes(self, model_len: int, prefill_chunk: int) -> int:
        return self.pages(model_len, prefill_chunk) * self.page_size_bytes

    def token_slots(self) -> tuple:
        """What decides how many token slots a request needs: layers with equal slots share one
        group, each with its own page size (UniformTypeKVCacheSpecs)."""
        return (type(self).__name__, 0)


@dataclass(frozen=True)
class FullAttentionSpec(AttentionSpec):
    """A layer that keeps every token: a request at max_model_len holds cdiv(max_model_len,
    block_size) pages (FullAttentionSpec.max_memory_usage_bytes)."""

    def pages(self, model_len: int, prefill_chunk: int) -> int:
        return ceil_div(model_len, self.block_size)


@dataclass(frozen=True)
class MLAAttentionSpec(FullAttentionSpec):
    """DeepSeek's latent attention: every token's compressed latent, whole on every rank (its
    token_bytes are kv_lora_rank + qk_rope_head_dim wide); pages as FullAttentionSpec's, but a type
    of its own, so it never shares a group with plain attention."""


@dataclass(frozen=True)
class SlidingWindowSpec(AttentionSpec):
    """A layer that keeps the last `window` tokens: during chunked prefill it holds window - 1
    computed tokens plus a batch of new ones, never more than max_model_len, and one page more
    because the window need not start at a page's edge (SlidingWindowSpec.max_memory_usage_bytes)."""
    window: int

    def pages(self, model_len: int, prefill_chunk: int) -> int:
        return ceil_div(min(self.window - 1 + prefill_chunk, model_len), self.block_size) + 1

    def token_slots(self) -> tuple:
        return (type(self).__name__, self.window)


@dataclass(frozen=True)
class ChunkedLocalAttentionSpec(AttentionSpec):
    """Llama 4's chunked local attention: the current chunk plus a batch of new tokens, never more
    than max_model_len (ChunkedLocalAttentionSpec.max_memory_usage_bytes)."""
    window: int              # attention_chunk_size

    def pages(self, model_len: int, prefill_chunk: int) -> int:
        return ceil_div(min(self.window + prefill_chunk, model_len), self.block_size)

    def token_slots(self) -> tuple:
        return (type(self).__name__, self.window)


@dataclass(frozen=True)
class MambaSpec:
    """A state-space or linear-attention layer: a fixed state per request whatever its length,
    its page padded to the attention page (MambaSpec.page_size_padded); a request keeps
    `state_pages` of them: 1 ("none"), 2 (prefix caching's "align"), plus one per speculative
    token (num_speculative_blocks)."""
    block_size: int
    state_page_bytes: int
    state_pages: int = MAMBA_ALIGN_PAGES

    @property
    def page_size_bytes(self) -> int:
        return self.state_page_bytes

    def pages(self, model_len: int, prefill_chunk: int) -> int:
        return self.state_pages

    def max_memory_usage_bytes(self, model_len: int, prefill_chunk: int) -> int:
        return self.state_pages * self.page_size_bytes

    def token_slots(self) -> tuple:
        return (type(self).__name__, 0)


# Our layer kinds (layers.py) and the spec vLLM gives each.
ATTENTION_SPECS = {"full": FullAttentionSpec, "mla": MLAAttentionSpec, "sliding": SlidingWindowSpec,
                   "chunked": ChunkedLocalAttentionSpec}


@dataclass(frozen=True)
class Group:
    spec: object               # the group's spec; None for the one group of a uniform-type model
    layers: tuple[int, ...]    # model layer indices in this group


@dataclass(frozen=True)
class Pool:
    """The KV cache vLLM would configure, and what it would print."""
    block_size: int
    num_blocks: int
    kv_tokens: int                 # "GPU KV cache size: N tokens"
    max_concurrency: Fraction      # "Maximum concurrency for L tokens per request: C x"
    bytes_per_request: int         # what one request at max_model_len reserves on the fullest worker
    groups: int
    padding: tuple = ()            # (layers added, % of that type) per padded layer type
    block_bytes: int = 0           # one block of every group on the fullest worker (page x layers a group)


def block_size_for(model, gpu, block_size: int | None) -> tuple[int, str | None]:
    """The block size vLLM uses, and why when it is not its default of 16. `gpu` is the GPU preset
    (readers/gpu_presets.GPU), None for a custom one."""
    if block_size and block_size > 1:
        if block_size not in BLOCK_SIZES:
            raise InputError("block-size", f"vLLM takes block sizes {', '.join(map(str, BLOCK_SIZES))}, "
                                           f"not {block_size}")
        return block_size, None
    if any(layer.kind == "mla" for layer in model.layers) and _flash_mla_gpu(gpu):
        return FLASH_MLA_BLOCK, "vLLM's FlashMLA backend (Hopper, Blackwell) uses 64-token blocks for MLA."
    return DEFAULT_BLOCK, None


# FlashMLA runs on CUDA compute capability 9.x and 10.x (Hopper, datacenter Blackwell; vLLM's
# attention/ops/flashmla.py checks the major), not on 12.x (RTX Blackwell, GB10).
FLASH_MLA_MAJORS = (9, 10)


def _flash_mla_gpu(gpu) -> bool:
    return gpu is not None and gpu.cuda_major() in FLASH_MLA_MAJORS


def specs_of(model, kv_precision, state_precision, tp: int, block_size: int,
             state_pages: int = MAMBA_ALIGN_PAGES, release=None, hma: bool = True) -> tuple[list, int, list]:
    """Each layer's spec (None for a layer without a KV cache) in model order, the block size,
    and the lines vLLM logs when a hybrid's state page moves it.

    Hybrids (vllm/platforms/interface.py _align_hybrid_block_size): the attention block grows to
    16 x cdiv(state page, 16 x one token's attention bytes) so an attention page holds a state,
    and the state page is padded to exactly that."""
    attention = [layer for layer in model.layers if layer.kind in ATTENTION_SPECS]
    states = [layer.state_bytes(state_precision, tp) for layer in model.layers if layer.kind == "state"]
    lines, padded = [], 0
    if states:
        if not attention:
            raise InputError("engine", "a model of state-space layers only keeps no attention pages; vLLM's "
                                       "figures for it are not modelled")
        token_bytes = attention[0].row_bytes(kv_precision, tp)
        state_page = max(states)
        align = max(KERNEL_BLOCK_ALIGNMENT, block_size)
        needed = align * ceil_div(state_page, align * token_bytes)
        if block_size < needed:
            block_size = needed
            lines.append(printing.attention_block_line(block_size))
        padded = block_size * token_bytes
        if padded != state_page:
            lines.append(printing.mamba_padding_line(padded, state_page))
    if rules.aligns_kept_block(release):
        block_size = _kept_layers_block(attention, kv_precision, tp, block_size, lines)
    if not hma and any(layer.kind in ("sliding", "chunked") for layer in attention):
        lines.append(printing.HMA_DISABLED_LINE)
    out = []
    for layer in model.layers:
        if layer.kind == "state":
            out.append(MambaSpec(block_size, padded, state_pages))
        elif layer.kind == "none" or layer.held_range(1) is None:
            out.append(None)
        elif layer.kind in ("sliding", "chunked") and not hma:
            # The hybrid KV cache manager off (release.hybrid_manager): unify_hybrid_kv_cache_specs makes a
            # local layer a FullAttentionSpec that records its window, charged for the whole max_model_len.
            out.append(FullAttentionSpec(block_size, layer.row_bytes(kv_precision, tp)))
        elif layer.kind in ("sliding", "chunked"):
            out.append(ATTENTION_SPECS[layer.kind](block_size, layer.row_bytes(kv_precision, tp), layer.window))
        else:
            out.append(ATTENTION_SPECS[layer.kind](block_size, layer.row_bytes(kv_precision, tp)))
    return out, block_size, lines


def _kept_layers_block(attention: list, kv_precision, tp: int, block_size: int, lines: list) -> int:
    """Where some layers keep another KV dtype (kv_layers.py), the quantized layers' block grows in
    steps of max(16, block) until their page covers 16 tokens of the widest kept layer
    (vllm/platforms/interface.py _align_heterogeneous_kv_block_size, 0.25.0-0.34.0); the kept
    layers take that block too, each its own page size in one group (UniformTypeKVCacheSpecs).
    The quantized page it measures is a FullAttentionSpec's in the cache dtype's torch dtype,
    uint8 for TurboQuant (the first layer's backend, a kept layer's, packs nothing): a byte an element."""
    kept = [layer.row_bytes(kv_precision, tp) for layer in attention if getattr(layer, "kv_dtype", None)]
    quantized = [layer for layer in attention if not getattr(layer, "kv_dtype", None)]
    if not kept or not quantized:
        return block_size
    measured = quantized[0].row_bytes(BYTE if kv_precision.packed else kv_precision, tp)
    if max(kept) <= measured:
        return block_size
    align = max(KERNEL_BLOCK_ALIGNMENT, block_size)
    needed = align * ceil_div(max(kept) * KERNEL_BLOCK_ALIGNMENT, align * measured)
    if block_size < needed:
        lines.append(printing.kept_layers_block_line(needed))
        return needed
    return block_size


def kv_groups(specs: list) -> tuple[list, list]:
    """vLLM's KV cache groups for these layer specs, and the padding layers it adds.

    Layers that all need the same token slots make one group (Group.spec None), each layer its
    own page size. Otherwise the pages are unified to the largest (a smaller page's block grows
    by the ratio) and each spec's layers are dealt into groups of one size: the smallest spec's
    layer count, or the largest when that is under 1.5x the smallest; a spec whose count it does
    not divide is padded.

    Worked example, Gemma 3 27B (google/gemma-3-27b-it: 62 layers, every sixth full, the rest
    sliding over 1,024 tokens; 16 KV heads of 128, bf16, tp 1, 16-token blocks): every layer's
    page is 16 x 2 x 16 x 128 x 2 = 131,072 B, so none grows. 10 full and 52 sliding layers: the
    group size is 10 (52 >= 1.5 x 10), so the full layers are one group and the sliding ones
    cdiv(52, 10) = 6 groups, 60 slots for 52 layers: "Add 8 padding layers, may waste at most
    15.38% KV cache memory". Seven groups of 10; a block is 10 x 131,072 = 1,310,720 B, and a
    request at 32,768 tokens with a 2,048-token prefill chunk keeps 2,048 full-attention pages
    plus 6 x (cdiv(1,023 + 2,048, 16) + 1 = 193) sliding pages = 3,206 blocks, 4,202,168,320 B.
    """
    cached = [(i, s) for i, s in enumerate(specs) if s is not None]
    if not cached:
        raise InputError("engine", "the model keeps no KV cache, so vLLM allocates no KV blocks")
    if len({s.token_slots() for _, s in cached}) == 1:
        return [Group(None, tuple(i for i, _ in cached))], []
    by_spec: dict = {}
    for i, s in cached:
        by_spec.setdefault(s, []).append(i)
    largest = max(s.page_size_bytes for s in by_spec)
    unified = {}
    for s, layers in by_spec.items():
        if isinstance(s, MambaSpec):
            if s.page_size_bytes != largest:
                raise InputError("engine", "vLLM cannot make this hybrid's state and attention pages equal")
            unified.setdefault(s, []).extend(layers)
            continue
        if largest % s.page_size_bytes:
            raise InputError("engine", "vLLM cannot unify this model's page sizes (one does not divide the "
                                       "other), so it would not start with the hybrid KV cache manager")
        grown = replace(s, block_size=s.block_size * (largest // s.page_size_bytes))
        unified.setdefault(grown, []).extend(layers)
    counts = [len(v) for v in unified.values()]
    group_size = min(counts)
    if max(counts) < group_size * 1.5:
        group_size = max(counts)
    groups, padding = [], []
    for s, layers in unified.items():
        layers = sorted(layers)
        n_groups = ceil_div(len(layers), group_size)
        if n_groups * group_size > len(layers):
            added = n_groups * group_size - len(layers)
            padding.append((added, added / len(layers) * 100))
        groups.extend(Group(s, tuple(layers[i::n_groups])) for i in range(n_groups))
    return groups, padding


def _worker_need(groups, specs, stage: set, model_len: int, chunk: int):
    """(page bytes of one block, layers sharing a block tensor, bytes one request needs at
    model_len) on the worker holding the layers in `stage`."""
    if groups[0].spec is None:               # one group, each layer its own page size
        # Models repeat a handful of layer specs: each distinct one is priced once.
        mine = _stage_specs(groups, specs, stage)
        page = sum(n * s.page_size_bytes for s, n in mine)
        need = sum(n * s.max_memory_usage_bytes(model_len, chunk) for s, n in mine)
        return page, 1, need
    page = groups[0].spec.page_size_bytes
    group_size = max(sum(1 for i in g.layers if i in stage) for g in groups)
    blocks = sum(g.spec.pages(model_len, chunk) for g in groups)
    return page, group_size, group_size * page * blocks


class _Stage(set):
    """One worker's cached layer indices, with (spec, how many of its layers have it) for the one
    group's layers, priced once each: models repeat a handful of layer specs."""
    counts: tuple = ()


def _stage_specs(groups, specs, stage: set) -> tuple:
    counts = getattr(stage, "counts", None)
    if counts:
        return counts
    held = {}
    for i in groups[0].layers:
        if i in stage:
            held[specs[i]] = held.get(specs[i], 0) + 1
    return tuple(held.items())


def _layout(model, kv_precision, state_precision, tp: int, pp: int, block_size: int, state_pages: int,
            release=None, hma: bool = True):
    """(specs, block size, config lines, groups, padding, each worker's cached layers), kept in
    the model's memo: the longest-context search and the charts ask for the same layout many
    times per update, and it depends on none of the numbers they vary."""
    key = ("vllm-layout", kv_precision.name, (state_precision or kv_precision).name, tp, pp, block_size, state_pages,
           rules.aligns_kept_block(release), hma)
    memo = model.memo
    if key not in memo:
        memo[key] = _make_layout(model, kv_precision, state_precision, tp, pp, block_size, state_pages, release, hma)
    return memo[key]


def _make_layout(model, kv_precision, state_precision, tp: int, pp: int, block_size: int, state_pages: int,
                 release=None, hma: bool = True):
    specs, block_size, config_lines = specs_of(model, kv_precision, state_precision or kv_precision, tp, block_size,
                                               state_pages, release, hma)
    groups, padding = kv_groups(specs)
    stages, start = [], 0
    for stage in model.stages(pp):
        size = sum(stage.values())
        stages.append(_Stage(range(start, start + size)))
        start += size
    stages = [s for s in stages if any(specs[i] is not None for i in s)]
    if groups[0].spec is None:
        for stage in stages:
            stage.counts = _stage_specs(groups, specs, stage)
    return specs, block_size, config_lines, groups, padding, stages


def request_bytes(model, kv_precision, tp: int, pp: int, model_len: int, prefill_chunk: int, block_size: int,
                  state_precision=None, state_pages: int = MAMBA_ALIGN_PAGES, release=None, hma: bool = True) -> int:
    """What one request at max_model_len reserves on the fullest worker ("X GiB KV cache is
    needed"): it depends on the model and the context, not on the memory."""
    specs, _, _, groups, _, stages = _layout(model, kv_precision, state_precision, tp, pp, block_size, state_pages,
                                             release, hma)
    return max(_worker_need(groups, specs, stage, model_len, prefill_chunk)[2] for stage in stages)


def allocate(model, kv_precision, tp: int, pp: int, model_len: int, prefill_chunk: int,
             block_size: int, available_bytes: int, state_precision=None,
             state_pages: int = MAMBA_ALIGN_PAGES, spare_before_last: int = 0, release=None,
             mamba_none: bool = False, hma: bool = True) -> tuple:
    """The pool for `available_bytes` of KV memory on every worker, or vLLM's refusal. Under pipeline
    parallelism `available_bytes` is the last stage's and the stages before it have `spare_before_last`
    more (what the last one alone spends: profile.stage_surplus); vLLM's pool is the fewest blocks any
    worker holds.

    `release` picks how "GPU KV cache size" is counted (printed_tokens; None: the current rule);
    `mamba_none` says the state groups run mamba_cache_mode "none" (prefix caching off), whose spec
    block is max_model_len.

    Returns (pool, refusal message, the longest max_model_len that fits, the lines vLLM logs
    while it sizes a hybrid's pages)."""
    specs, block_size, config_lines, groups, padding, stages = _layout(
        model, kv_precision, state_precision, tp, pp, block_size, state_pages, release, hma)
    last_layer = len(specs) - 1

    def avail(stage) -> int:
        return available_bytes + (spare_before_last if last_layer not in stage else 0)

    def longest_on(workers) -> int:
        """vLLM's binary search for the longest max_model_len these workers hold."""
        def fits(length: int) -> bool:
            return all(_worker_need(groups, specs, s, length, prefill_chunk)[2] <= avail(s) for s in workers)
        if available_bytes <= 0 or not fits(1):
            return 0
        lo, hi = 1, model_len
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if fits(mid):
                lo = mid
            else:
                hi = mid - 1
        return lo

    if available_bytes <= 0:
        return None, printing.NO_MEMORY_REFUSAL, 0, config_lines
    needs = [_worker_need(groups, specs, s, model_len, prefill_chunk) for s in stages]
    # vLLM checks the workers in rank order and raises at the first that cannot hold one request.
    failing = [i for i, (_, _, need) in enumerate(needs) if need > avail(stages[i])]
    if failing:
        first = failing[0]
        longest = longest_on([stages[first]])
        return None, printing.too_long_refusal(model_len, needs[first][2], avail(stages[first]), longest), longest, \
            config_lines
    worst = max(need for _, _, need in needs)
    num_blocks = min(avail(stage) // page // layers for stage, (page, layers, _) in zip(stages, needs))
    block_bytes = max(page * layers for page, layers, _ in needs)
    if groups[0].spec is None:
        per_request_blocks = max(specs[i].pages(model_len, prefill_chunk) for i in groups[0].layers)
        min_block = block_size
    else:
        per_request_blocks = sum(g.spec.pages(model_len, prefill_chunk) for g in groups)
        min_block = min(g.spec.block_size for g in groups)
    concurrency = Fraction(num_blocks, per_request_blocks)
    has_state = any(isinstance(g.spec, MambaSpec) for g in groups)
    pool = Pool(block_size=min_block, num_blocks=num_blocks,
                kv_tokens=printed_tokens(num_blocks, per_request_blocks, len(groups), min_block, model_len, release,
                                         has_state and mamba_none),
                max_concurrency=concurrency,
                bytes_per_request=worst, groups=len(groups), padding=tuple(padding), block_bytes=block_bytes)
    return pool, None, model_len, config_lines


def printed_tokens(num_blocks: int, per_request_blocks: int, groups: int, min_block: int, model_len: int,
                   release=None, mamba_none: bool = False) -> int:
    """vLLM's "GPU KV cache size: N tokens" (vllm/v1/core/kv_cache_utils.py _report_kv_cache_config).

    0.20.1 on (read in the 0.20.1 wheel; release.logs_tokens_as_concurrency): int(max_concurrency x
    max_model_len), max_concurrency being the Python float num_blocks / blocks one request needs
    (get_max_concurrency_for_kv_cache_config), so the float's rounding is kept: 1 / 49 x 49 is
    0.999..., printed 0. The Qwen3.6-27B FP8 H100 log (0.27.1): 857 blocks / 12 a request x 4,096 =
    292,522 tokens.

    Before (read in the 0.10.2, 0.12.0, 0.18.1, 0.19.0 and 0.20.0 wheels; 0.8.3 had one group): num_blocks // groups x the smallest block
    size of any group, a Mamba group's being its spec's block: the attention block in "align" mode,
    max_model_len in "none" (MambaModelConfig / HybridAttentionMambaModelConfig.verify_and_update_config,
    vllm/model_executor/models/config.py: mamba_block_size = max_model_len without prefix caching). So
    a hybrid printed far fewer tokens than its concurrency says (vllm-project/vllm#40691, fixed by
    #40694): Qwen3.5-27B at 0.19.0, 1,487 blocks in 4 groups of 784-token pages, 371 x 784 = 290,864
    tokens beside 1,487 / 45 = 33.04x for 32,768 tokens."""
    if release is None or rules.logs_tokens_as_concurrency(release):
        return int(num_blocks / per_request_blocks * model_len)
    block = min(min_block, model_len) if mamba_none else min_block
    return num_blocks // groups * block


def count_words(pool: Pool, model_len: int, mamba_none: bool) -> str | None:
    """Where no release is given, what a release before 0.20.1 prints for this pool when its
    count differs (a pool of several groups: hybrids, sliding windows), so that a log whose
    "GPU KV cache size" is far from concurrency x max_model_len reads as one of those."""
    if pool is None or pool.groups < 2:
        return None
    block = min(pool.block_size, model_len) if mamba_none else pool.block_size
    older = pool.num_blocks // pool.groups * block
    if older == pool.kv_tokens:
        return None
    return (f"vLLM before 0.20.1 prints \"GPU KV cache size\" as blocks // groups x block size: "
            f"{pool.num_blocks:,} // {pool.groups} x {block:,} = {older:,} tokens for this pool, not {pool.kv_tokens:,} "
            "(max concurrency x max_model_len); give the release for its own figure")


# The Mamba-cache-block ceiling: vllm/config/compilation.py CompilationConfig.
# resolve_cudagraph_mode_and_sizes, from 0.20.0 (PR #38270) to 0.33.0 unchanged, raises when the
# KV cache config has Mamba layers, the CUDA-graph mode has full graphs (FULL_AND_PIECEWISE, V1's
# default; NONE under --enforce-eager) and max_num_reqs (--max-num-seqs) > kv_cache_config.num_blocks:
# every group shares one block count, and each decode sequence's full graph indexes one state block.
# 0.18.x-0.19.x instead shrank the CUDA-graph capture sizes to the block count
# (adjust_cudagraph_sizes_for_mamba_cache) and started.
MAMBA_CEILING_FROM = (0, 20, 0)


def mamba_ceiling(model, pool: Pool, release, eager: bool) -> int | None:
    """The most decode sequences vLLM lets this pool's full CUDA graphs index (its num_blocks),
    or None where the check does not run: no state layers, eager mode, V0 or a release before it."""
    if pool is None or eager or release is None or not release.at_least(*MAMBA_CEILING_FROM):
        return None
    if not rules.v1(release) or not any(layer.kind == "state" for layer in model.layers):
        return None
    return pool.num_blocks


# --enable-prefix-caching on a hybrid (vllm/model_executor/models/config.py MambaModelConfig): 0.28.0
# on, mamba_cache_mode "align" (two state pages a request); 0.17.0-0.27.x, "all" (a state page per
# block of the context) for the models that implement SupportsMambaPrefixCaching (as of 0.26.0), unless
# a draft runs (0.20.0 on: align), and align for the others (Qwen3-Next / 3.5's Gated DeltaNet ...).
MAMBA_ALL_MODE_ARCHS = ("FalconH1ForCausalLM", "GraniteMoeHybridForCausalLM", "JambaForCausalLM",
                        "MambaForCausalLM", "Mamba2ForCausalLM", "NemotronHForCausalLM", "Zamba2ForCausalLM")


def check_prefix_caching(model, release, draft: bool) -> None:
    """Refuse --enable-prefix-caching on a hybrid where vLLM keeps what is not modelled."""
    if not release.at_least(*rules.MAMBA_ALIGN_FROM):
        raise InputError("prefix-caching", f"vLLM {release}'s prefix caching for hybrid models is not modelled "
                                           "(read from 0.17.0 on)")
    if release.at_least(0, 28, 0) or (draft and release.at_least(0, 20, 0)):
        return
    if (model.architecture or "") in MAMBA_ALL_MODE_ARCHS:
        raise InputError("prefix-caching", f"vLLM {release} keeps a Mamba state page per block of the context for "
                                           f"{model.architecture} with prefix caching on (mamba_cache_mode all), "
                                           "which is not modelled; align mode (two pages) from 0.28.0")


def mamba_ceiling_refusal(max_num_seqs: int, blocks: int) -> str:
    """The ValueError vLLM raises (compilation.py resolve_cudagraph_mode_and_sizes, 0.20.0 on)."""
    return (f"ValueError: max_num_seqs ({max_num_seqs}) exceeds available Mamba cache blocks ({blocks}). "
            "Each decode sequence requires one Mamba cache block, so CUDA graph capture cannot proceed. "
            f"Please lower max_num_seqs to at most {blocks} or increase gpu_memory_utilization.")


def swap_blocks(model, kv_precision, tp: int, block: int) -> int | None:
    """V0's "# CPU blocks": its 4 GiB swap space over one block of every layer on the rank."""
    key = ("vllm-swap", kv_precision.name, tp, block)
    if key not in model.memo:
        per_block = sum(block * layer.row_bytes(kv_precision, tp) for layer in model.layers
                        if layer.kind in ATTENTION_SPECS and layer.held_range(1) is not None)
        model.memo[key] = SWAP_SPACE_BYTES // per_block if per_block else None
    return model.memo[key]
