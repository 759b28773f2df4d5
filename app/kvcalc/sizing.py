"""KV cache size, memory budget, capacity and the decode roofline. Pure functions on values.

Every byte figure is an int. Fractions appear only for ratios (memory utilization, seconds).
"""

from dataclasses import dataclass, replace
from fractions import Fraction

from .errors import InputError
from . import parallel
from .model import LayerCounts, Model
from .precision import Precision
from .readers.gpu_presets import GPU
from .units import ceil_div, last_holding

# Searches for the longest context stop here: 2^40 tokens is far past any model.
CONTEXT_SEARCH_LIMIT = 1 << 40


@dataclass(frozen=True)
class Workload:
    context_tokens: int
    kv_precision: Precision
    state_precision: Precision
    batch: int = 1
    block_size_tokens: int = 1       # 1 = ideal, no PagedAttention rounding
    prefix_tokens: int = 0           # a prompt prefix every request shares, stored once


@dataclass(frozen=True)
class Deployment:
    tp: int = 1
    pp: int = 1
    gpu_memory_bytes: int | None = None      # per GPU
    memory_utilization: Fraction = Fraction(1)
    overhead_bytes: int = 0                  # per GPU: activations, CUDA graphs, non-torch memory
    weights_bytes: int | None = None         # whole model
    bandwidth_bytes_per_s: int | None = None  # per GPU
    # The GPU preset, its facts typed (readers/gpu_presets.GPU: compute capability, SMs, interconnect,
    # unified memory, platform); None for a custom GPU given only by its memory. Engine rules ask
    # its facts, never its display name (gpu.name, what reports print).
    gpu: GPU | None = None
    torch_memory_bytes: int | None = None    # per GPU, as PyTorch reports it, where known
    weights_exact: bool = True               # False when weights come from a rounded parameter count
    stage_weights_bytes: tuple = ()          # per pipeline stage, where a checkpoint gives them by layer
    peak_flops: tuple = ()                   # per GPU: (precision, dense FLOP/s) pairs, where known
    dp: int = 1                              # data-parallel attention ranks, each tp x pp GPUs
    expert_parallel: bool = False            # MoE experts placed whole over the tp x dp GPUs
    # dp splits only the attention (SGLang's --enable-dp-attention): every other weight is tensor
    # parallel over all tp x dp GPUs of a stage (parallel.weights_bytes_per_gpu places them).
    dp_attention: bool = False
    # Held on every GPU beside its share of the model's weights (serving/): a draft's
    # weights, LoRA slots, a vision encoder kept whole; engines load them with the model.
    added_weights_bytes_per_gpu: int = 0

    @property
    def gpus(self) -> int:
        return self.tp * self.pp * self.dp

    @property
    def weights_bytes_per_gpu(self) -> int | None:
        """The weights on the most loaded GPU: its stage's share (the whole split evenly unless
        a checkpoint says what each layer weighs), divided over tensor-parallel ranks."""
        if self.weights_bytes is None:
            return None
        if self.stage_weights_bytes:
            return max(ceil_div(stage, self.tp) for stage in self.stage_weights_bytes)
        return ceil_div(self.weights_bytes, self.tp * self.pp)


def cache_bytes(layers: LayerCounts, context_tokens: int, workload: Workload, tp: int = 1):
    """(shared, per_request) bytes for these layers at `context_tokens`.

    Blocks are counted on absolute positions, as a paged cache lays them out: a layer holding
    positions [start, end) uses ceil(end/bs) - floor(start/bs) blocks, and only the whole blocks
    of the shared prefix are shared (vLLM's prefix caching hashes full blocks only).
    """
    bs = workload.block_size_tokens
    prefix = min(workload.prefix_tokens, context_tokens)
    shared_blocks_end = prefix // bs
    shared = 0
    per_request, rows = _rows(layers, workload, tp)
    for layer, row in rows:
        start, end = layer.held_range(context_tokens)
        first, end = start // bs, ceil_div(end, bs)
        shared_blocks = max(0, min(shared_blocks_end, end) - first)
        shared += shared_blocks * bs * row
        per_request += (end - first - shared_blocks) * bs * row
    return shared, per_request


def _rows(layers: LayerCounts, workload: Workload, tp: int):
    """(fixed state bytes, [(layer, bytes per token for all its copies)]) for these layers,
    kept in the layers' memo: the searches ask for the same rows dozens of times per update."""
    key = (workload.kv_precision.name, workload.state_precision.name, tp)
    memo = layers.memo
    if key not in memo:
        state = sum(count * layer.state_bytes(workload.state_precision, tp) for layer, count in layers.items())
        rows = [(layer, count * layer.row_bytes(workload.kv_precision, tp))
                for layer, count in layers.items() if layer.held_range(1) is not None]
        memo[key] = (state, rows)
    return memo[key]


def batch_bytes(layers: LayerCounts, context_tokens: int, workload: Workload, batch: int, tp: int = 1) -> int:
    shared, per_request = cache_bytes(layers, context_tokens, workload, tp)
    return shared + batch * per_request


def bytes_per_token(layers: LayerCounts, precision: Precision, tp: int = 1) -> int:
    return sum(count * layer.row_bytes(precision, tp) for layer, count in layers.items())


def _largest_fitting(fits, low: int, limit: int, guess: int | None = None) -> int | None:
    """Largest n in [low, limit] with fits(n), for a monotone fits; None if even `limit` fits.
    Assumes fits(low) is True. From a close guess (exact for plain full attention; an engine's
    blocks move its answer a few tokens from the ideal's) it steps out by 1, 2, 4... to bracket
    the answer, then bisects: a wrong guess costs steps, never correctness."""
    if fits(limit):
        return None
    lo, hi = low, limit                     # fits(lo) holds, fits(hi) does not
    if guess is not None and lo < guess < hi:
        step = 1
        if fits(guess):
            lo = guess
            while (probe := guess + step) < limit and fits(probe):
                lo, step = probe, step * 2
            hi = min(limit, probe)
        else:
            hi = guess
            while (probe := guess - step) > low and not fits(probe):
                hi, step = probe, step * 2
            lo = max(low, probe)
    return last_holding(fits, lo, hi)


def _linear_guess(layers: LayerCounts, workload: Workload, batch: int, room: int, tp: int = 1) -> int | None:
    """Context at which `batch` requests fill `room` bytes if every cached layer held the whole
    context: the answer for plain full attention, a starting point for the rest."""
    state, rows = _rows(layers, workload, tp)
    per_token = sum(row for _, row in rows)
    if per_token == 0:
        return None
    return max(1, (room - batch * state) // (batch * per_token))


@dataclass(frozen=True)
class Result:
    kv_bytes_per_token: int
    kv_bytes_per_request: int          # one request at the context, windows and state honoured
    kv_bytes_shared_prefix: int        # stored once for the batch
    kv_bytes_total: int                # whole batch, one logical copy
    kv_bytes_per_gpu: int              # most loaded GPU, replication counted
    kv_bytes_all_gpus: int             # what all GPUs hold together, replication counted
    kv_state_bytes_per_request: int    # fixed state of linear / state-space layers
    weights_bytes: int | None
    weights_bytes_per_gpu: int | None
    gpu_memory_bytes: int | None
    usable_bytes_per_gpu: int | None   # memory x utilization
    kv_budget_bytes_per_gpu: int | None
    max_concurrency: int | None
    max_context: int | None
    max_context_limited_by: str | None  # "memory", "model" (max_position_embeddings) or "none"
    kv_equals_weights_context: int | None   # context at which the most loaded GPU's KV reaches its weights
    decode_step_seconds: Fraction | None
    tp: int
    pp: int
    dp: int = 1                        # data-parallel ranks: the per-GPU figures are the busiest rank's
    rank_batch: int | None = None      # the requests the busiest rank serves, ceil(batch / dp)
    # The exact ideal alone: an engine's answer and the time bounds stand beside it in
    # evaluation.Evaluation, which also gives the figures that follow the chosen rules.


def compute(model: Model, workload: Workload, deployment: Deployment, searches: bool = True) -> Result:
    """Everything for one configuration. `searches=False` skips the two context searches
    (longest context that fits, KV = weights crossover) for side tables that do not show them.

    With dp data-parallel ranks (parallel.py) the per-GPU figures are the busiest rank's: its
    ceil(batch / dp) requests; the totals add every rank's, and the requests that fit are one
    rank's times dp."""
    tp, pp, dp = deployment.tp, deployment.pp, deployment.dp
    model.check_parallel(tp, pp)
    parallel.check(model, deployment)
    if workload.prefix_tokens > workload.context_tokens:
        raise InputError("prefix-tokens", f"a shared prefix of {workload.prefix_tokens:,} tokens "
                         f"is longer than the context of {workload.context_tokens:,}")
    everything = model.layer_counts()
    ctx, batch = workload.context_tokens, workload.batch
    rank = parallel.rank_batch(batch, dp)
    ranks = parallel.ranks_serving(batch, dp)
    per_rank = workload if rank == batch else replace(workload, batch=rank)
    shared, per_request = cache_bytes(everything, ctx, workload)
    state = _rows(everything, workload, 1)[0]
    groups = model.stage_groups(pp)
    stage_bytes = [(batch_bytes(stage, ctx, workload, rank, tp), n) for stage, n in groups]
    all_ranks = [(ranks * s + batch * r, n) for (s, r), n in
                 ((cache_bytes(stage, ctx, workload, tp), n) for stage, n in groups)]
    distinct = [stage for stage, _ in groups]

    weights = deployment.weights_bytes
    weights_per_gpu = parallel.weights_bytes_per_gpu(model, deployment)
    usable = budget = max_conc = max_ctx = limited_by = None
    if deployment.gpu_memory_bytes is not None and weights is not None:
        usable = int(deployment.gpu_memory_bytes * deployment.memory_utilization)
        budget = usable - weights_per_gpu - deployment.overhead_bytes
        max_conc = _max_concurrency(distinct, ctx, workload, budget, tp)
        if max_conc is not None:
            max_conc *= dp
        if searches:
            max_ctx, limited_by = _max_context(model, distinct, per_rank, budget, tp)

    crossover = None
    if weights is not None and searches:
        # Per GPU, as the memory is spent: the most loaded GPU's KV against its share of the
        # weights (tensor parallelism replicates an MLA latent, so its cache catches up sooner).
        def below_weights(n):
            return all(batch_bytes(stage, n, workload, rank, tp) < weights_per_gpu for stage in distinct)
        if below_weights(1):
            guesses = [_linear_guess(stage, workload, rank, weights_per_gpu - 1, tp) for stage in distinct]
            guesses = [g for g in guesses if g is not None]
            last_below = _largest_fitting(below_weights, 1, CONTEXT_SEARCH_LIMIT, min(guesses) if guesses else None)
            crossover = None if last_below is None else last_below + 1
        else:
            crossover = 1

    step = None
    if deployment.bandwidth_bytes_per_s and weights is not None:
        # A decode step streams the weights its tokens touch (a mixture of experts: the routed
        # experts the batch is expected to reach, experts.py; every weight of a dense model) and
        # the rank's whole cache through each GPU once; pipeline stages run one after another.
        # Every rank's tokens meet in the experts, split over all tp x dp GPUs (parallel.py).
        step_bytes = parallel.weights_read(model, weights, deployment, batch) + sum(b * n for b, n in stage_bytes)
        step = Fraction(step_bytes, deployment.bandwidth_bytes_per_s)

    return Result(
        kv_bytes_per_token=bytes_per_token(everything, workload.kv_precision),
        kv_bytes_per_request=per_request + shared,
        kv_bytes_shared_prefix=shared,
        kv_bytes_total=ranks * shared + batch * per_request,
        kv_bytes_per_gpu=max(b for b, _ in stage_bytes),
        kv_bytes_all_gpus=tp * sum(b * n for b, n in all_ranks),
        kv_state_bytes_per_request=state,
        weights_bytes=weights,
        weights_bytes_per_gpu=weights_per_gpu,
        gpu_memory_bytes=deployment.gpu_memory_bytes,
        usable_bytes_per_gpu=usable,
        kv_budget_bytes_per_gpu=budget,
        max_concurrency=max_conc,
        max_context=max_ctx,
        max_context_limited_by=limited_by,
        kv_equals_weights_context=crossover,
        decode_step_seconds=step,
        tp=tp, pp=pp, dp=dp, rank_batch=rank,
    )


def _max_concurrency(stages, ctx, workload, budget, tp) -> int | None:
    if budget < 0:
        return 0
    best = None
    for stage in stages:
        shared, per_request = cache_bytes(stage, ctx, workload, tp)
        if shared > budget:
            return 0
        if per_request == 0:
            continue
        fits = (budget - shared) // per_request
        best = fits if best is None else min(best, fits)
    return best


def _max_context(model, stages, workload, budget, tp):
    """Longest context at which `batch` requests fit on every GPU, and what limits it."""
    def fits(n):
        return all(batch_bytes(stage, n, workload, workload.batch, tp) <= budget for stage in stages)
    if budget < 0 or not fits(1):
        return 0, "memory"
    limit = model.max_context_tokens or CONTEXT_SEARCH_LIMIT
    guesses = [_linear_guess(stage, workload, workload.batch, budget, tp) for stage in stages]
    guesses = [g for g in guesses if g is not None]
    largest = _largest_fitting(fits, 1, limit, min(guesses) if guesses else None)
    if largest is not None:
        return largest, "memory"
    if model.max_context_tokens:
        return model.max_context_tokens, "model"
    return None, "none"


@dataclass(frozen=True)
class GenerationWork:
    """Work to generate `tokens` tokens one at a time, counted in per-token vector operations
    per layer and head: K/V projections and query-key dot products (the seeds' comparison)."""
    tokens: int
    projections_with_cache: int       # each token projected once: N
    projections_without_cache: int    # step t re-projects all t tokens: N(N+1)/2
    dot_products_with_cache: int      # step t attends t keys: N(N+1)/2, O(N^2)
    dot_products_without_cache: int   # step t recomputes t x t attention: N(N+1)(2N+1)/6, O(N^3)

    @property
    def with_cache(self) -> int:
        return self.projections_with_cache + self.dot_products_with_cache

    @property
    def without_cache(self) -> int:
        return self.projections_without_cache + self.dot_products_without_cache


def generation_work(tokens: int) -> GenerationWork:
    n = tokens
    return GenerationWork(n, n, n * (n + 1) // 2, n * (n + 1) // 2, n * (n + 1) * (2 * n + 1) // 6)
