"""Time bounds from peak figures: prefill, decode and chunked prefill, and the roofline.

Every step moves bytes through HBM and does FLOPs on the tensor cores; at best it takes the
longer of the two (the roofline model: JAX scaling book, "All about transformer inference";
LLM-Viewer, arXiv 2402.16363). So each time here is a lower bound at the GPU's peak:
    time = max(FLOPs / (tp x peak FLOP/s), bytes on a GPU / HBM bandwidth)
with pipeline stages running one after another for a token (their bytes add up).

FLOPs per token: 2 x the parameters a token goes through, less the input embedding (a lookup,
not a matmul); mixture-of-experts models count their active parameters. Attention adds, per
layer, its FLOPs per key times the keys the token attends (the layer kinds own both).
Bytes: a step reads the weights its tokens touch and the batch's whole cache once; prefill
also writes the prompt's cache. A dense model's tokens touch every weight; a mixture of experts'
touch the attention and shared weights and, of the routed experts, those the step's tokens are
expected to reach under uniform routing, E x (1 - (1 - k/E)^B) per MoE layer for B tokens
(experts.py: k of E at a batch of one, nearly all of them for a large batch or a prompt).

With dp data-parallel ranks (parallel.py) the bounds are the busiest rank's: its ceil(batch / dp)
requests' FLOPs over its tp GPUs and its own cache, while the routed experts, split over all
tp x dp GPUs, are reached by every rank's tokens; tokens/s in total are the whole batch's.

Pure: values in, Fractions of seconds out.
"""

from dataclasses import dataclass
from fractions import Fraction

from ..experts import RoutedExperts, every_weight, expected_experts, weights_read
from .. import parallel
from ..sizing import batch_bytes, cache_bytes
from ..units import ceil_div, last_holding

# Weights precisions that run on narrower tensor cores where the GPU has them; anything else is
# computed in 16 bits (weight-only quantization dequantizes to bf16 before the matmul).
COMPUTE_FOR_WEIGHTS = {"fp8": "fp8", "fp8_e4m3": "fp8", "fp8_e5m2": "fp8", "nvfp4": "fp4", "mxfp4": "fp4",
                       "int8": "int8"}
BATCH_LIMIT = 1 << 20          # the compute-bound batch is searched no further


@dataclass(frozen=True)
class Timing:
    compute_precision: str
    peak_flops_per_s: int               # per GPU, dense, at compute_precision
    bandwidth_bytes_per_s: int
    ridge_flops_per_byte: Fraction
    prompt_tokens: int
    prefill_chunk: int
    prefill_flops: int                  # one prompt, the whole deployment
    prefill_bytes_per_gpu: int
    prefill_seconds: Fraction
    decode_flops: int                   # one step of the batch (of the busiest data-parallel rank's)
    decode_bytes_per_gpu: int
    decode_step_seconds: Fraction
    decode_compute_seconds: Fraction
    decode_memory_seconds: Fraction
    decode_flops_per_byte: Fraction
    prefill_flops_per_byte: Fraction
    compute_bound_batch: int | None
    prefill_steps: int
    chunked_step_seconds: Fraction
    ttft_seconds: Fraction
    embedding_known: bool
    notes: tuple[str, ...]
    decode_weights_bytes_per_gpu: int = 0   # of decode_bytes_per_gpu: the weights the step reads
    all_weights_bytes_per_gpu: int = 0      # every weight, each GPU's share (what a dense step reads)
    unrouted_weights_bytes_per_gpu: int = 0  # all but the routed experts: what every step reads
    routed: RoutedExperts | None = None     # a mixture of experts' routed experts, where their share is known
    decode_experts_expected: Fraction | None = None  # distinct routed experts per MoE layer the batch touches
    experts_note: str | None = None         # why a mixture of experts' share is not known (every weight read)

    @property
    def decode_tokens_per_s_per_request(self) -> Fraction:
        return 1 / self.decode_step_seconds


def compute_precision(weights_dtype: str | None, peaks: dict) -> str | None:
    """The tensor cores a step runs on: the weights' own where the GPU has them, else 16 bits
    (fp16 on GPUs without bf16: V100, T4); None when no such peak is on record."""
    wanted = COMPUTE_FOR_WEIGHTS.get(weights_dtype or "", "bf16")
    return next((p for p in (wanted, "bf16", "fp16") if p in peaks), None)


def matmul_params(model) -> tuple[int, bool]:
    """Parameters a token goes through in matmuls, and whether the embedding was taken out."""
    active = model.active_params or model.params
    if model.vocab_size and model.hidden_size:
        return active - model.vocab_size * model.hidden_size, True
    return active, False


def token_flops(model, matmul: int, q_heads: int, keys_by_layer) -> int:
    """FLOPs of tokens that attend `keys_by_layer(layer)` keys in each layer, and `matmul`
    parameters' worth of multiply-adds."""
    attention = sum(count * layer.flops_per_key(q_heads) * keys_by_layer(layer)
                    for layer, count in model.layer_counts().items())
    return 2 * matmul + attention


def query_heads(model) -> int:
    if model.attention_heads:
        return model.attention_heads
    # Not given (a custom model): at least one query head per kv head, a lower bound.
    return max((getattr(layer, "kv_heads", 1) for layer in model.layers), default=1)


def time_bounds(scenario, result, prompt_tokens: int, prefill_chunk: int, peaks: dict) -> Timing:
    model, work, dep = scenario.model, scenario.workload, scenario.deployment
    precision = compute_precision(scenario.settings.weights_dtype or model.weights_dtype, peaks)
    peak, bandwidth = peaks[precision], dep.bandwidth_bytes_per_s
    tp, dp = dep.tp, dep.dp
    matmul, embedding_known = matmul_params(model)
    heads = query_heads(model)
    layers = model.layer_counts()
    # A token passes every stage in turn: each GPU of a stage reads its share of that stage (of a
    # mixture of experts, the routed experts the step's tokens are expected to touch).
    weights = result.weights_bytes
    routed, moe_note = parallel.routed_for(model, weights, dep)

    def weights_for(tokens: int) -> int:
        # All data-parallel ranks' tokens meet in the experts, split over tp x dp GPUs (parallel.py).
        if dep.dp_attention:            # SGLang's DP attention: what each GPU holds (parallel.weights_read)
            return parallel.weights_read(model, weights, dep, tokens)
        return weights_read(routed, weights, tp, tokens, dp)
    ctx, batch = work.context_tokens, work.batch
    # With dp ranks, the busiest rank's ceil(batch / dp) requests: its own cache, its own compute.
    rank = parallel.rank_batch(batch, dp)
    notes = []
    if not embedding_known:
        notes.append("the vocabulary size is not known, so the embedding lookup is counted as a matmul "
                     "(the compute time is a little high)")
    if moe_note:
        notes.append(moe_note)

    def seconds(flops: int, bytes_per_gpu: int) -> tuple[Fraction, Fraction]:
        return Fraction(flops, tp * peak), Fraction(bytes_per_gpu, bandwidth)

    # Decode: one new token per request, attending the held context.
    per_token = token_flops(model, matmul, heads, lambda layer: _keys_at(layer, ctx))
    kv_gpu = _kv_per_gpu(model, work, dep, ctx, rank)
    decode_weights = weights_for(batch)
    decode_bytes = decode_weights + kv_gpu
    decode_flops = rank * per_token
    compute_s, memory_s = seconds(decode_flops, decode_bytes)
    step = max(compute_s, memory_s)

    # Prefill of one prompt alone: every token through the weights, causal attention, cache written.
    prompt_flops = 2 * matmul * prompt_tokens + sum(count * layer.flops_per_key(heads) * layer.keys_total(prompt_tokens)
                                                     for layer, count in layers.items())
    prompt_write = _kv_per_gpu(model, work, dep, prompt_tokens, 1)
    prefill_bytes = weights_for(prompt_tokens) + prompt_write
    prefill = max(seconds(prompt_flops, prefill_bytes))

    # Chunked prefill: the batch's decode step also carries one chunk of a new prompt, here the
    # last (positions prompt - chunk + 1 .. prompt: the longest attention, the costliest step).
    chunk = min(prefill_chunk, prompt_tokens)
    start = prompt_tokens - chunk
    chunk_flops = 2 * matmul * chunk + sum(count * layer.flops_per_key(heads) *
                                           (layer.keys_total(prompt_tokens) - layer.keys_total(start))
                                           for layer, count in layers.items())
    prefix_read = _kv_per_gpu(model, work, dep, start, 1) if start else 0
    chunk_write = prompt_write - prefix_read if start else prompt_write
    chunked = max(seconds(decode_flops + chunk_flops,
                          weights_for(batch + chunk) + kv_gpu + prefix_read + chunk_write))

    # Time to first token: every chunk's step, each carrying the batch's decodes. Compute and
    # memory are summed over the steps apart, which keeps the bound a lower bound in closed form.
    steps = ceil_div(prompt_tokens, prefill_chunk)
    last = prompt_tokens - (steps - 1) * prefill_chunk
    step_weights = (steps - 1) * weights_for(batch + prefill_chunk) + weights_for(batch + last)
    ttft = max(seconds(steps * decode_flops + prompt_flops, step_weights + steps * kv_gpu + prompt_write))

    every = parallel.model_share(model, dep) if dep.dp_attention and weights is not None else every_weight(routed, weights, tp, dp)
    ridge = Fraction(peak, bandwidth)
    intensity = Fraction(decode_flops, tp * decode_bytes)
    return Timing(
        compute_precision=precision, peak_flops_per_s=peak, bandwidth_bytes_per_s=bandwidth,
        ridge_flops_per_byte=ridge, prompt_tokens=prompt_tokens, prefill_chunk=prefill_chunk,
        prefill_flops=prompt_flops, prefill_bytes_per_gpu=prefill_bytes, prefill_seconds=prefill,
        decode_flops=decode_flops, decode_bytes_per_gpu=decode_bytes, decode_step_seconds=step,
        decode_compute_seconds=compute_s, decode_memory_seconds=memory_s,
        decode_flops_per_byte=intensity, prefill_flops_per_byte=Fraction(prompt_flops, tp * prefill_bytes),
        compute_bound_batch=_compute_bound_batch_all(per_token, tp * peak, weights_for, every,
                                                     _kv_per_gpu(model, work, dep, ctx, 1, shared=False), bandwidth, dp),
        prefill_steps=steps, chunked_step_seconds=chunked, ttft_seconds=ttft,
        embedding_known=embedding_known, notes=tuple(notes), decode_weights_bytes_per_gpu=decode_weights,
        all_weights_bytes_per_gpu=every, unrouted_weights_bytes_per_gpu=weights_for(0), routed=routed,
        decode_experts_expected=expected_experts(routed.experts, routed.top_k, batch) if routed else None,
        experts_note=moe_note)


def decode_steps(scenario, result, timing: Timing, batches: list[int]) -> list[Fraction]:
    """The decode step of each batch size at the scenario's context (for the batch chart): a
    token's FLOPs are the same for every batch, the cache grows with it, and so do a mixture of
    experts' weights read (the experts the batch is expected to touch)."""
    model, work, dep = scenario.model, scenario.workload, scenario.deployment
    matmul, _ = matmul_params(model)
    per_token = token_flops(model, matmul, query_heads(model), lambda layer: _keys_at(layer, work.context_tokens))
    routed, dp = timing.routed, dep.dp
    return [max(Fraction(parallel.rank_batch(batch, dp) * per_token, dep.tp * timing.peak_flops_per_s),
                Fraction((parallel.weights_read(model, result.weights_bytes, dep, batch) if dep.dp_attention else
                          weights_read(routed, result.weights_bytes, dep.tp, batch, dp))
                         + _kv_per_gpu(model, work, dep, work.context_tokens, parallel.rank_batch(batch, dp)),
                         timing.bandwidth_bytes_per_s))
            for batch in batches]


def _keys_at(layer, context: int) -> int:
    """Keys the token at position `context` attends in this layer."""
    return layer.keys_total(context) - layer.keys_total(context - 1)


def _kv_per_gpu(model, work, dep, context: int, batch: int, shared: bool = True) -> int:
    """Cache bytes `batch` requests at `context` put on a GPU, summed over pipeline stages (they
    run one after another for a token). `shared=False`: one request's own share only."""
    total = 0
    for stage, n in model.stage_groups(dep.pp):
        if shared:
            total += n * batch_bytes(stage, context, work, batch, dep.tp)
        else:
            total += n * cache_bytes(stage, context, work, dep.tp)[1]
    return total


def _compute_bound_batch_all(flops_per_request: int, peak_all: int, weights_for, every: int, kv_per_request: int,
                             bandwidth: int, dp: int) -> int | None:
    """The compute-bound batch of the whole deployment: with dp ranks each serving b requests, the
    experts see b x dp tokens; the first b bound, times dp."""
    if dp == 1:
        return _compute_bound_batch(flops_per_request, peak_all, weights_for, every, kv_per_request, bandwidth)
    b = _compute_bound_batch(flops_per_request, peak_all, lambda n: weights_for(n * dp), every, kv_per_request,
                             bandwidth)
    return None if b is None else b * dp


def _compute_bound_batch(flops_per_request: int, peak_all: int, weights_for, every: int, kv_per_request: int,
                         bandwidth: int) -> int | None:
    """Smallest batch B with B f / peak >= (W(B) + B k) / bw, W(B) the weights a step of B
    tokens reads: never, when a request's own compute time does not pass its own cache's read
    time. A dense model's W is one number, `every` (each GPU's share of every weight):
    B = W / bw / (f / peak - k / bw), rounded up. A mixture of experts' W(B) grows with B ever
    more slowly (the experts touched), to at most that: its B is no larger, and is found between
    1 and it by halving, since a batch that is compute-bound stays so as it grows."""
    gain = Fraction(flops_per_request, peak_all) - Fraction(kv_per_request, bandwidth)
    if gain <= 0:
        return None
    batch = Fraction(every, bandwidth) / gain
    high = max(1, ceil_div(batch.numerator, batch.denominator))

    def bound(b: int) -> bool:
        return b * gain >= Fraction(weights_for(b), bandwidth)
    if high > BATCH_LIMIT:
        if not bound(BATCH_LIMIT):
            return None
        high = BATCH_LIMIT
    if weights_for(1) == every:                   # dense, or every weight counted as read
        return high
    # bound(0) is False (no batch), bound(high) True: the first batch bound is one past the last not.
    return last_holding(lambda b: not bound(b), 0, high) + 1


def roofline_series(timing: Timing) -> dict:
    """The roofline: attainable FLOP/s per GPU against arithmetic intensity (FLOP per byte),
    min(peak, bandwidth x intensity), with the current decode and prefill points on it."""
    decode, prefill = timing.decode_flops_per_byte, timing.prefill_flops_per_byte
    grid = [Fraction(10) ** (k / 4) for k in range(-8, 25)]     # 0.01 to 1,000,000 FLOP/byte
    grid = [Fraction(round(float(x) * 1000), 1000) for x in grid if x > 0]
    xs = sorted(set(grid) | {decode, prefill})

    def attainable(x: Fraction) -> Fraction:
        return min(Fraction(timing.peak_flops_per_s), timing.bandwidth_bytes_per_s * x)
    return {
        "intensities": xs,
        "roof": [attainable(x) for x in xs],
        "decode": [attainable(x) if x == decode else None for x in xs],
        "prefill": [attainable(x) if x == prefill else None for x in xs],
        "ridge": timing.ridge_flops_per_byte,
    }


def batch_series(scenario, result, timing: Timing, limit: int | None) -> dict:
    """Decode tokens/s in total and per request against batch size, up to what fits in memory
    (or the batch asked for, when more)."""
    top = max(1, scenario.workload.batch, limit or 1)
    batches = sorted({1 << k for k in range(0, 21) if (1 << k) <= top} | {top, scenario.workload.batch})
    steps = decode_steps(scenario, result, timing, batches)
    return {"batches": batches, "total": [b / s for b, s in zip(batches, steps)],
            "per_request": [1 / s for s in steps], "limit": limit}
