"""vLLM (V1): how its KV cache manager turns the memory left for the cache into blocks, tokens
and a maximum concurrency, and when it refuses to start.

Read from vLLM's sources (paths as of its 2025-2026 main):
- `vllm/v1/kv_cache_interface.py`: page_size_bytes = block_size x the bytes one token takes in
  the layer on this rank; FullAttentionSpec / MLAAttentionSpec.max_memory_usage_bytes =
  cdiv(max_model_len, block) pages; SlidingWindowSpec = cdiv(min(W - 1 + max_num_batched_tokens,
  max_model_len), block) + 1 pages; ChunkedLocalAttentionSpec = cdiv(min(chunk +
  max_num_batched_tokens, max_model_len), block) pages.
- `vllm/v1/core/kv_cache_utils.py`: get_kv_cache_groups (one group when every layer needs the
  same token slots; otherwise `_get_kv_cache_groups_uniform_page_size`: groups of equal size,
  the smallest type count, or the largest when it is under 1.5x the smallest, padded);
  unify_kv_cache_spec_page_size (smaller pages grow their block size by the ratio);
  get_num_blocks (available // page // layers per group); get_kv_cache_configs (every worker
  takes the smallest block count); _report_kv_cache_config ("GPU KV cache size" = num_blocks
  // groups x the smallest block size; "Maximum concurrency" = num_blocks / blocks one request
  at max_model_len needs); _check_enough_kv_cache_memory and _estimate_max_model_len_from_groups
  (the refusal and its binary search).
"""

import math
import sys
from dataclasses import dataclass, replace
from fractions import Fraction

from ...errors import InputError
from ...command_line import Launch, common_notes, env, kv_flag, prefill_chunk, repo, requests, shell_join, utilization
from ...units import GIB, ceil_div
from ... import parallel
from .. import releases
from . import profile as profile, release as rules
from ..result import Budget, EngineResult, torch_total, without_budget

# The releases read (docs/research/vllm-release-rules.md): a version outside them is refused.
FIRST_RELEASE, NEWEST_RELEASE = "0.6.4", "0.33.0"
VERSION_EXAMPLE, VERSIONS_BY_BUILD = "0.10.2 or v0.19.1", False
parse_version = releases.pep440
NAME, TITLE = "vllm", "vLLM"
# The GPUs it runs on (CUDA and ROCm builds): the planner considers no others.
VENDORS = ("NVIDIA", "AMD")
# It builds a vision tower's linears split over tp under --mm-encoder-tp-mode weights, and refuses
# to start where tp does not divide their widths (production.encoder.check_tp).
CHECKS_ENCODER_SPLIT = True
KV_MEMORY_LOGGED = True      # its log prints "Available KV cache memory" to 0.01 GiB
SEPARATE_V = False           # K and V in one dtype
TOKENS_LABEL = "GPU KV cache size"            # what its log calls the token count
REFUSED_MAX_LEN_WORDS = "vLLM's estimate"     # a refusal prints the longest length it estimates
CONCURRENCY_FORMAT = "{:,.2f}x"              # as its log prints it
# The engine card's labels, in the words of its start-up log.
LABELS = {"engine_max_concurrency": "Maximum concurrency it prints",
          "engine_kv_tokens": "GPU KV cache size it prints",
          "engine_kv_budget_bytes_per_gpu": "Available KV cache memory it prints, per GPU",
          "engine_kv_bytes_per_request": "Reserved per request, per GPU",
          "engine_max_model_len": "max_model_len it starts with",
          "engine_overhead_band": "Overhead per GPU, estimated"}
# Its KV pool is allocated whole at start-up: what the requests leave is the cache's, not free.
ALLOCATES_WHOLE_BUDGET = True
USABLE_WORDS = ""
DEFAULT_BLOCK = 16
FLASH_MLA_BLOCK = 64         # FlashMLA (Hopper, Blackwell) forces 64-token blocks for MLA models


def format_gib(n: int) -> str:
    # vllm/utils/mem_utils.py format_gib: round(GiB, 2) as Python prints it ("24.0", "4.54").
    return str(round(n / GIB, 2))


# Mamba / linear-attention state (MambaSpec.max_memory_usage_bytes): with prefix caching on,
# vLLM's default for hybrids since v0.26 (ModelConfig.is_prefix_caching_supported), mamba_cache_mode
# "align" keeps two state pages per request; with it off ("none", and before v0.26) one.
MAMBA_ALIGN_PAGES = 2
MAMBA_NONE_PAGES = 1
KERNEL_BLOCK_ALIGNMENT = 16       # the smallest kernel block of the CUDA attention backends


@dataclass(frozen=True)
class Spec:
    """One layer's cache as vLLM's KV cache manager sees it on one rank."""
    kind: str                # full, mla, sliding, chunked, mamba
    token_bytes: int         # one token in this layer on this rank (0 for mamba)
    block_size: int
    window: int = 0          # sliding window or attention chunk
    state_bytes: int = 0     # mamba: the (padded) state page
    state_pages: int = MAMBA_ALIGN_PAGES   # mamba: pages one request keeps

    @property
    def page_bytes(self) -> int:
        return self.state_bytes if self.kind == "mamba" else self.block_size * self.token_bytes

    def slots(self) -> tuple:
        """What decides how many token slots a request needs: equal slots share one group."""
        return (self.kind in ("full", "mla"), self.window if self.kind not in ("full", "mla") else 0, self.kind)

    def blocks_for(self, model_len: int, prefill_chunk: int) -> int:
        if self.kind == "mamba":
            return self.state_pages
        if self.kind in ("full", "mla"):
            return ceil_div(model_len, self.block_size)
        if self.kind == "sliding":
            return ceil_div(min(self.window - 1 + prefill_chunk, model_len), self.block_size) + 1
        return ceil_div(min(self.window + prefill_chunk, model_len), self.block_size)


@dataclass(frozen=True)
class Group:
    spec: Spec
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


def specs_of(model, kv_precision, state_precision, tp: int, block_size: int,
             state_pages: int = MAMBA_ALIGN_PAGES) -> tuple[list, int, list]:
    """Each layer's spec (None for a layer without a KV cache) in model order, the block size,
    and the lines vLLM logs when a hybrid's state page moves it.

    Hybrids (vllm/platforms/interface.py _align_hybrid_block_size): the attention block grows to
    16 x cdiv(state page, 16 x one token's attention bytes) so an attention page holds a state,
    and the state page is padded to exactly that."""
    attention = [layer for layer in model.layers if layer.kind in ("full", "sliding", "chunked", "mla")]
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
            lines.append(f"Setting attention block size to {block_size} tokens to ensure that attention page "
                         "size is >= mamba page size.")
        padded = block_size * token_bytes
        if padded != state_page:
            lines.append(f"Padding mamba page size by {100 * (padded - state_page) / state_page:.2f}% to ensure "
                         "that mamba page size and attention page size are exactly equal.")
    out = []
    for layer in model.layers:
        if layer.kind == "state":
            out.append(Spec("mamba", 0, block_size, 0, padded, state_pages))
        elif layer.kind == "none" or layer.held_range(1) is None:
            out.append(None)
        else:
            out.append(Spec(layer.kind, layer.row_bytes(kv_precision, tp), block_size, getattr(layer, "window", 0)))
    return out, block_size, lines


def kv_groups(specs: list) -> tuple[list, int]:
    """vLLM's KV cache groups for these layer specs, and the padding layers it adds."""
    cached = [(i, s) for i, s in enumerate(specs) if s is not None]
    if not cached:
        raise InputError("engine", "the model keeps no KV cache, so vLLM allocates no KV blocks")
    if len({s.slots() for _, s in cached}) == 1:
        # Every layer needs the same token slots: one group, each layer its own page size.
        return [Group(None, tuple(i for i, _ in cached))], []
    by_spec: dict = {}
    for i, s in cached:
        by_spec.setdefault(s, []).append(i)
    largest = max(s.page_bytes for s in by_spec)
    unified = {}
    for s, layers in by_spec.items():
        if s.kind == "mamba":
            if s.page_bytes != largest:
                raise InputError("engine", "vLLM cannot make this hybrid's state and attention pages equal")
            unified.setdefault(s, []).extend(layers)
            continue
        if largest % s.page_bytes:
            raise InputError("engine", "vLLM cannot unify this model's page sizes (one does not divide the "
                                       "other), so it would not start with the hybrid KV cache manager")
        grown = Spec(s.kind, s.token_bytes, s.block_size * (largest // s.page_bytes), s.window)
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
        page = sum(n * s.page_bytes for s, n in mine)
        need = sum(n * s.blocks_for(model_len, chunk) * s.page_bytes for s, n in mine)
        return page, 1, need
    page = groups[0].spec.page_bytes
    group_size = max(sum(1 for i in g.layers if i in stage) for g in groups)
    blocks = sum(g.spec.blocks_for(model_len, chunk) for g in groups)
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


def _layout(model, kv_precision, state_precision, tp: int, pp: int, block_size: int, state_pages: int):
    """(specs, block size, config lines, groups, padding, each worker's cached layers), kept in
    the model's memo: the longest-context search and the charts ask for the same layout many
    times per update, and it depends on none of the numbers they vary."""
    key = ("vllm-layout", kv_precision.name, (state_precision or kv_precision).name, tp, pp, block_size, state_pages)
    memo = model.memo
    if key not in memo:
        memo[key] = _make_layout(model, kv_precision, state_precision, tp, pp, block_size, state_pages)
    return memo[key]


def _make_layout(model, kv_precision, state_precision, tp: int, pp: int, block_size: int, state_pages: int):
    specs, block_size, config_lines = specs_of(model, kv_precision, state_precision or kv_precision, tp, block_size,
                                               state_pages)
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
                  state_precision=None, state_pages: int = MAMBA_ALIGN_PAGES) -> int:
    """What one request at max_model_len reserves on the fullest worker ("X GiB KV cache is
    needed"): it depends on the model and the context, not on the memory."""
    specs, _, _, groups, _, stages = _layout(model, kv_precision, state_precision, tp, pp, block_size, state_pages)
    return max(_worker_need(groups, specs, stage, model_len, prefill_chunk)[2] for stage in stages)


def allocate(model, kv_precision, tp: int, pp: int, model_len: int, prefill_chunk: int,
             block_size: int, available_bytes: int, state_precision=None,
             state_pages: int = MAMBA_ALIGN_PAGES) -> tuple:
    """The pool for `available_bytes` of KV memory on every worker, or vLLM's refusal.

    Returns (pool, refusal message, the longest max_model_len that fits, the lines vLLM logs
    while it sizes a hybrid's pages)."""
    specs, block_size, config_lines, groups, padding, stages = _layout(
        model, kv_precision, state_precision, tp, pp, block_size, state_pages)

    def longest_on(workers) -> int:
        """vLLM's binary search for the longest max_model_len these workers hold."""
        def fits(length: int) -> bool:
            return all(_worker_need(groups, specs, s, length, prefill_chunk)[2] <= available_bytes for s in workers)
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
        return None, ("ValueError: No available memory for the cache blocks. Try increasing "
                      "`gpu_memory_utilization` when initializing the engine."), 0, config_lines
    needs = [_worker_need(groups, specs, s, model_len, prefill_chunk) for s in stages]
    # vLLM checks the workers in rank order and raises at the first that cannot hold one request.
    failing = [i for i, (_, _, need) in enumerate(needs) if need > available_bytes]
    if failing:
        first = failing[0]
        worst = needs[first][2]
        longest = longest_on([stages[first]])
        estimate = (f"Based on the available memory, the estimated maximum model length is {longest}. "
                    if longest > 0 else "")
        return None, (f"ValueError: To serve at least one request with the models's max seq len ({model_len}), "
                      f"({format_gib(worst)} GiB KV cache is needed, which is larger than the available KV cache "
                      f"memory ({format_gib(available_bytes)} GiB). {estimate}Try increasing "
                      "`gpu_memory_utilization` or decreasing `max_model_len` when initializing the engine."), longest, config_lines
    worst = max(need for _, _, need in needs)
    longest = model_len
    num_blocks = min(available_bytes // page // layers for page, layers, _ in needs)
    if groups[0].spec is None:
        per_request_blocks = max(specs[i].blocks_for(model_len, prefill_chunk) for i in groups[0].layers)
        min_block = block_size
    else:
        per_request_blocks = sum(g.spec.blocks_for(model_len, prefill_chunk) for g in groups)
        min_block = min(g.spec.block_size for g in groups)
    concurrency = Fraction(num_blocks, per_request_blocks)
    pool = Pool(block_size=min_block, num_blocks=num_blocks,
                # Current vLLM (_report_kv_cache_config) logs max_concurrency x max_model_len as the
                # KV cache size; releases before it logged num_blocks // groups x block_size.
                kv_tokens=int(concurrency * model_len),
                max_concurrency=concurrency,
                bytes_per_request=worst, groups=len(groups), padding=tuple(padding))
    return pool, None, longest, config_lines


BLOCK_SIZES = (8, 16, 32, 64, 128, 256)      # vllm/config/cache.py BlockSize (1 is for TPU)


def block_size_for(model, gpu_name: str | None, block_size: int | None) -> tuple[int, str | None]:
    """The block size vLLM uses, and why when it is not its default of 16."""
    if block_size and block_size > 1:
        if block_size not in BLOCK_SIZES:
            raise InputError("block-size", f"vLLM takes block sizes {', '.join(map(str, BLOCK_SIZES))}, "
                                           f"not {block_size}")
        return block_size, None
    if any(layer.kind == "mla" for layer in model.layers) and gpu_name and _flash_mla_gpu(gpu_name):
        return FLASH_MLA_BLOCK, "vLLM's FlashMLA backend (Hopper, Blackwell) uses 64-token blocks for MLA."
    return DEFAULT_BLOCK, None


def _flash_mla_gpu(gpu_name: str) -> bool:
    name = gpu_name.upper()
    return any(tag in name for tag in ("H100", "H200", "H800", "H20", "GH200", "B200", "B300", "GB200"))


def log_lines(pool: Pool | None, refusal: str | None, available_bytes: int, model_len: int,
              config_lines=(), release=None, swap_blocks: int | None = None) -> list[str]:
    lines = list(config_lines)
    if release is not None and not rules.v1(release):
        return _v0_lines(pool, refusal, available_bytes, model_len, release, swap_blocks)
    lines.append(f"Available KV cache memory: {format_gib(available_bytes)} GiB")
    if pool is not None:
        for added, percent in pool.padding:
            lines.append(f"Add {added} padding layers, may waste at most {percent:.2f}% KV cache memory")
        lines.append(f"GPU KV cache size: {pool.kv_tokens:,} tokens")
        lines.append(f"Maximum concurrency for {model_len:,} tokens per request: {float(pool.max_concurrency):.2f}x")
    if refusal:
        lines.append(refusal)
    return lines


def _v0_lines(pool, refusal, available_bytes: int, model_len: int, release, swap_blocks) -> list[str]:
    """V0's executor_base.py lines: the block counts (GPU, then cuda, then CUDA by release) and
    num_blocks x block_size / max_model_len as its concurrency."""
    word = "GPU" if not release.at_least(0, 7, 0) else "cuda" if not release.at_least(0, 8, 0) else "CUDA"
    blocks = 0 if pool is None else pool.num_blocks
    # 0.6.5 on (worker.py): "... the rest of the memory reserved for KV Cache is X GiB."
    lines = [f"the rest of the memory reserved for KV Cache is {available_bytes / GIB:.2f}GiB."] \
        if release.at_least(0, 6, 5) else []
    lines.append(f"# {word} blocks: {blocks}, # CPU blocks: {swap_blocks}")
    block = DEFAULT_BLOCK if pool is None else pool.block_size
    lines.append(f"Maximum concurrency for {model_len} tokens per request: {blocks * block / model_len:.2f}x")
    if refusal:
        lines.append(refusal)
    return lines


SWAP_SPACE_BYTES = 4 * GIB     # V0's --swap-space default: CPU blocks for preempted sequences


def _swap_blocks(model, work, dep, block: int) -> int | None:
    """V0's "# CPU blocks": its 4 GiB swap space over one block of every layer on the rank."""
    key = ("vllm-swap", work.kv_precision.name, dep.tp, block)
    if key not in model.memo:
        model.memo[key] = _count_swap_blocks(model, work, dep, block)
    return model.memo[key]


def _count_swap_blocks(model, work, dep, block: int) -> int | None:
    per_block = sum(block * layer.row_bytes(work.kv_precision, dep.tp) for layer in model.layers
                    if layer.kind in ("full", "sliding", "chunked", "mla") and layer.held_range(1) is not None)
    return SWAP_SPACE_BYTES // per_block if per_block else None


def release_of(scenario):
    return releases.in_force(sys.modules[__name__], scenario.settings)


def _batch_defaults(scenario) -> tuple[int, int]:
    dep = scenario.deployment
    return rules.batch_defaults(release_of(scenario), dep.gpu_memory_bytes, dep.gpu_name,
                                scenario.workload.context_tokens, scenario.settings.vllm_entry)


def default_chunk(scenario) -> int:
    return _batch_defaults(scenario)[0]


def max_num_seqs(scenario) -> int:
    """--max-num-seqs: the requests asked for when chosen (the launch command sets it), else the
    release's default for this GPU. It is each data-parallel rank's (every engine core schedules
    its own), so a rank's share of the requests: ceil(batch / dp)."""
    work = scenario.workload
    return parallel.rank_batch(work.batch, scenario.deployment.dp) if scenario.settings.batch_given \
        else _batch_defaults(scenario)[1]


def memory_utilization(scenario, chunk: int) -> Fraction:
    """--gpu-memory-utilization in force: the one given, else this release's default."""
    if scenario.settings.utilization_given:
        return scenario.deployment.memory_utilization
    return rules.default_utilization(release_of(scenario))


def usable_memory(scenario, chunk: int, notes: list, ideal_usable: int) -> int:
    """The total PyTorch reports, times --gpu-memory-utilization (its default when not given)."""
    dep, settings = scenario.deployment, scenario.settings
    memory = torch_total(dep, settings, notes)
    release = release_of(scenario)
    # requested memory: int(total x util), math.ceil from 0.14.0 (vllm/v1/worker/utils.py request_memory).
    rounding = math.ceil if release.at_least(0, 14, 0) else int
    if settings.utilization_given:
        return rounding(memory * dep.memory_utilization)
    default = rules.default_utilization(release)
    notes.append(f"vLLM {release}'s default --gpu-memory-utilization {float(default):g} is used (0.9 before "
                 "0.20.0, 0.92 from it; set a memory utilization to change it).")
    return rounding(memory * default)


def estimate_overhead(scenario, chunk: int, notes: list) -> tuple[int, int, tuple[int, int]]:
    """(activation peak, everything subtracted besides the weights, that total's band) per GPU,
    as vLLM's profiling run and start-up measure them in this release."""
    estimate = profile.estimate(scenario, release_of(scenario), chunk, max_num_seqs(scenario))
    notes.append(f"The overhead is an estimate ({estimate.words}; its band {format_gib(estimate.low)}-"
                 f"{format_gib(estimate.high)} GiB): paste \"Available KV cache memory\" from your log as "
                 "kv-memory-gib for exact figures")
    return estimate.activation, estimate.total, (estimate.low, estimate.high)


def size(scenario, chunk: int, budget: Budget, notes: list) -> EngineResult:
    model, work, dep = scenario.model, scenario.workload, scenario.deployment
    parallel.check(model, dep, parallel.VLLM)
    if scenario.serving.draft is not None:
        _check_draft(scenario, notes)
    block, why = block_size_for(model, dep.gpu_name, scenario.settings.block_size)
    if why:
        notes.append(why)
    if dep.dp > 1:
        notes.append(_dp_words(dep, work))
    if budget.kv_bytes_per_gpu is None:
        return without_budget(NAME, TITLE, block, chunk, budget, notes, request_bytes(
            model, work.kv_precision, dep.tp, dep.pp, work.context_tokens, chunk, block, work.state_precision,
            state_pages(scenario)))
    available = budget.kv_bytes_per_gpu
    release = release_of(scenario)
    pages = state_pages(scenario)
    pool, refusal, longest, config_lines = allocate(model, work.kv_precision, dep.tp, dep.pp, work.context_tokens,
                                                    chunk, block, available, work.state_precision, pages)
    if pool is not None and not rules.logs_tokens_as_concurrency(release):
        pool = replace(pool, kv_tokens=pool.num_blocks // pool.groups * pool.block_size)
    # A refusal still quotes what one request needs ("X GiB KV cache is needed").
    needed = pool.bytes_per_request if pool is not None else request_bytes(
        model, work.kv_precision, dep.tp, dep.pp, work.context_tokens, chunk, block, work.state_precision, pages)
    return EngineResult(
        engine=NAME, block_size=block if pool is None else pool.block_size, prefill_chunk=chunk,
        kv_budget_bytes_per_gpu=available, kv_bytes_per_request=needed,
        kv_tokens=None if pool is None else pool.kv_tokens,
        max_concurrency=None if pool is None else pool.max_concurrency, starts=pool is not None,
        max_model_len=work.context_tokens if pool is not None else longest, refusal=refusal,
        activation_bytes_per_gpu=budget.activation_bytes_per_gpu, overhead_bytes_per_gpu=budget.overhead_bytes_per_gpu,
        budget_source=budget.source, log=tuple(log_lines(pool, refusal, available, work.context_tokens, config_lines,
                                                         release, _swap_blocks(model, work, dep, block))),
        notes=tuple(notes))


def state_pages(scenario) -> int:
    """Pages of state one request keeps in each Mamba group: the release's, plus one a speculative
    token (MambaSpec.num_speculative_blocks = num_speculative_tokens; max_memory_usage_bytes =
    page x (1 or 2 + num_speculative_blocks), kv_cache_interface.py)."""
    pages = rules.mamba_state_pages(release_of(scenario))
    draft = scenario.serving.draft
    return pages + (draft.spec_tokens or 0) if draft is not None else pages


def _check_draft(scenario, notes: list) -> None:
    """vLLM V1 pools a drafter's layers with the target's (gpu_model_runner.py get_kv_cache_spec;
    KVCacheSpec.is_draft compare=False, 0.33.0): the sizing model already holds them. V0's
    speculative worker kept a cache of its own, which is not modelled."""
    release = release_of(scenario)
    if not rules.v1(release):
        raise InputError("engine-version", f"vLLM {release}'s V0 engine ran the draft in a worker with a KV cache of "
                                           "its own, which is not modelled; V1 pools it with the target's")
    draft = scenario.serving.draft
    notes.append(f"The {'MTP heads' if draft.kind == 'mtp' else 'draft ' + draft.name}' {len(draft.layers)} "
                 "layer(s) share the target's KV cache groups (a layer with the target's spec joins its group; any "
                 "other spec is grouped by the hybrid rule), and its weights load with the target's, inside \"Model "
                 "loading took\". The capacity printed leaves out the lookahead slots (num_speculative_tokens per "
                 "running request) the scheduler reserves at run time.")


def _dp_words(dep, work) -> str:
    experts = ("whole over the expert-parallel group of" if dep.expert_parallel else
               "sliced by tensor parallelism over all")
    return (f"--data-parallel-size {dep.dp}: {dep.dp} engine cores, each of tp {dep.tp} GPUs with its own copy of the "
            f"attention and dense layers and its own KV cache for its share of the requests (ceil(batch / dp) = "
            f"{parallel.rank_batch(work.batch, dep.dp):,}); the routed experts are {experts} {dep.tp * dep.dp} GPUs (FusedMoEParallelConfig). The "
            "\"GPU KV cache size\" and \"Maximum concurrency\" lines are each rank's, printed once per engine core; "
            f"the deployment holds {dep.dp} x that.")


def stores(kv_precision) -> bool:
    return NAME in kv_precision.engines


def explain(scenario, out: EngineResult) -> list[str]:
    """Why its figures differ from the exact ideal, in its own terms."""
    work = scenario.workload
    kinds = {layer.kind for layer in scenario.model.layers}
    line = (f"vLLM hands out blocks of {out.block_size} tokens per layer; a request at "
            f"{work.context_tokens:,} tokens reserves whole blocks")
    if "sliding" in kinds:
        line += (f", and sliding-window layers reserve window - 1 + the prefill chunk ({out.prefill_chunk:,}) "
                 "tokens plus one block")
    why = [line + "."]
    if "state" in kinds:
        why.append(f"The state layers share the pool: the block grew to {out.block_size} tokens so one "
                   "attention page holds a state, and each request keeps two state pages (prefix caching's "
                   "align mode, vLLM's default for hybrids since v0.26; one with --no-enable-prefix-caching "
                   "or in older releases, which also printed num_blocks // groups x block size as the "
                   "token count).")
    why.append("Its maximum concurrency is for requests at the full context (max_model_len); it is "
               "printed unrounded.")
    return why


# --kv-cache-dtype choices (vllm/config/cache.py CacheDType) by our precision name.
LAUNCH_KV = {"fp8": "fp8", "fp8_e4m3": "fp8_e4m3", "fp8_e5m2": "fp8_e5m2", "bf16": "bfloat16"}
# Its MLA backends on NVIDIA (FlashInfer MLA, FlashMLA) take no fp8_e5m2 cache.
MLA_KV = {"fp8", "fp8_e4m3", "bf16"}


def launch(scenario, result=None) -> Launch:
    """`vllm serve` with the flags that size this deployment."""
    work, dep, notes = scenario.workload, scenario.deployment, common_notes(scenario, "vLLM")
    kv, why = kv_flag(scenario, LAUNCH_KV, "vLLM")
    if why:
        return Launch(NAME, None, (why,))
    if kv != "auto" and any(layer.kind == "mla" for layer in scenario.model.layers) and \
            scenario.workload.kv_precision.name not in MLA_KV:
        return Launch(NAME, None, (f"vLLM's MLA backends cannot store the latent as {kv}; use fp8 (e4m3)",))
    args = env(scenario, "vLLM") + ["vllm", "serve", repo(scenario, notes), "--max-model-len",
                                      str(work.context_tokens)]
    try:
        parallel.check(scenario.model, dep, parallel.VLLM)
    except InputError as e:
        return Launch(NAME, None, (e.message,))
    seqs = requests(scenario, result, "vllm", "--max-num-seqs", notes)
    if seqs and dep.dp > 1:
        seqs = _per_rank(scenario, result, seqs, notes)
    args += ["--max-num-seqs", str(seqs)] if seqs else []
    args += ["--kv-cache-dtype", kv, "--tensor-parallel-size", str(dep.tp), "--pipeline-parallel-size", str(dep.pp)]
    args += ["--data-parallel-size", str(dep.dp)] if dep.dp > 1 else []
    args += ["--enable-expert-parallel"] if dep.expert_parallel else []
    args += utilization(scenario, "--gpu-memory-utilization", notes,
                        f"{float(rules.default_utilization(release_of(scenario))):g} in vLLM {release_of(scenario)}")
    args += prefill_chunk(scenario, default_chunk(scenario), "--max-num-batched-tokens", notes)
    args += ["--enforce-eager"] if scenario.settings.enforce_eager else []
    args += _pin(scenario, result, notes)
    if scenario.settings.vllm_entry == "llm":
        notes.append(f"sized for the LLM() class; `vllm serve` batches fewer tokens by default: pass "
                     f"--max-num-batched-tokens {default_chunk(scenario)} to size it the same")
    if work.block_size_tokens > 1:
        if work.block_size_tokens not in BLOCK_SIZES:
            return Launch(NAME, None, (f"vLLM block sizes are {', '.join(map(str, BLOCK_SIZES))}; "
                                         f"not {work.block_size_tokens}",))
        args += ["--block-size", str(work.block_size_tokens)]
    else:
        block = result.engine.block_size if result is not None and result.engine is not None and \
            result.engine.engine == NAME else block_size_for(scenario.model, dep.gpu_name, None)[0]
        notes.append(f"vLLM pages this model's cache in blocks of {block} tokens here; its figures above count "
                     "them (the exact ideal's count single tokens)")
    return Launch(NAME, shell_join(args), tuple(notes))


def _per_rank(scenario, result, seqs: int, notes: list) -> int:
    """--max-num-seqs is each engine core's: a rank's share of the requests asked for, or what one
    rank holds (vLLM's own concurrency is per rank already)."""
    chosen = result is not None and result.engine is not None and result.engine.engine == NAME
    if scenario.settings.batch_given or not chosen:
        per_rank = parallel.rank_batch(seqs, scenario.deployment.dp)
        notes.append(f"--max-num-seqs {per_rank:,} is each of the {scenario.deployment.dp} data-parallel ranks' "
                     f"(ceil({seqs:,} / {scenario.deployment.dp}))")
        return per_rank
    notes.append(f"--max-num-seqs {seqs:,} is each data-parallel rank's: {scenario.deployment.dp} x {seqs:,} requests "
                 "in all")
    return seqs


def _pin(scenario, result, notes: list) -> list[str]:
    """--kv-cache-memory-bytes (0.10.2 on, CacheConfig.kv_cache_memory_bytes): the KV memory we
    computed, so vLLM allocates exactly the pool these figures describe."""
    engine = None if result is None else result.engine
    if engine is None or engine.engine != NAME or not engine.starts or not engine.kv_budget_bytes_per_gpu:
        return []
    release = release_of(scenario)
    if not rules.kv_cache_memory_flag(release):
        notes.append(f"vLLM {release} cannot pin the KV memory (--kv-cache-memory-bytes came in 0.10.2): its own "
                     "profiling decides it")
        return []
    notes.append(f"--kv-cache-memory-bytes {engine.kv_budget_bytes_per_gpu:,} pins the KV memory computed here: vLLM "
                 "then allocates exactly this pool instead of measuring what is left, so the figures above are "
                 "what it prints; if its activations need more than the estimate leaves, it runs out of memory "
                 "at run time instead of starting smaller (drop the flag to let it measure)")
    return ["--kv-cache-memory-bytes", str(engine.kv_budget_bytes_per_gpu)]
