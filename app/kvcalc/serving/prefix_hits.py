"""Prefix caching with a hit rate (issue 26, part 5): a share P of the requests starts with the
shared prefix of S tokens (prefix-tokens); the rest share nothing. Without a hit rate the prefix is
stored once for every request (P = 1). The figures are expectations over that population: the
cached tokens, the KV bytes, the requests that fit and the prefill skipped per request.

The engines' rules (docs/research/issue-26-engine-rules.md section 5, re-read here):
- vLLM hashes only full blocks (v1/core/kv_cache_utils.py request_block_hasher) and takes the
  longest chain of cached full blocks up to num_tokens - 1 (v1/core/kv_cache_manager.py
  get_computed_blocks: "we must recompute the last token to obtain logits"), counted in whole
  blocks (v1/core/single_type_kv_cache_manager.py: max_length // block_size), vLLM 0.33.0.
- SGLang's radix cache matches per page (page 1 by default) up to input_len - 1
  (managers/schedule_batch.py _compute_max_prefix_len, SGLang 0.5.23).
So a hit caches floor(min(S, prompt - 1) / block) x block tokens; the KV it shares is the prefix's
whole blocks, stored once (sizing.cache_bytes). Each engine's words for its rule, and its refusal
where requests never share a prefix's cache (llama.cpp), are data in its home
(engines/<engine>/serving.py PREFIX), asked through rules.py.
"""

from dataclasses import dataclass, replace
from fractions import Fraction

from ..errors import InputError
from ..sizing import cache_bytes
from .rules import rules_of


def hit_rate_from(asked, engine: str | None) -> Fraction | None:
    """The hit rate the inputs give (asked: the ServingSettings; the parser bounds it to [0, 1]);
    it needs a shared prefix, and an engine whose requests share a prefix's cache."""
    rate = asked.prefix_hit_rate
    if rate is None:
        return None
    refusal = rules_of(engine).prefix.refusal
    if refusal:
        raise InputError("prefix-hit-rate", refusal)
    if asked.prefix_tokens <= 0:
        raise InputError("prefix-hit-rate", "is the share of requests that start with the shared prefix: give "
                                            "the shared prefix's length with prefix-tokens (e.g. 2048) too, or "
                                            "leave prefix-hit-rate out")
    return Fraction(rate)


@dataclass(frozen=True)
class Expectation:
    rate: Fraction
    prefix_tokens: int                    # S, as given
    block_tokens: int                     # the engine's block (vLLM) or page (SGLang); 1 ideally
    prompt_tokens: int                    # the prompt a hit is capped by (prompt - 1)
    cached_tokens_on_hit: int             # floor(min(S, prompt - 1) / block) x block
    expected_cached_tokens: Fraction      # P x cached_tokens_on_hit
    shared_bytes: int                     # the prefix's whole blocks on the busiest GPU, stored once
    bytes_without_sharing: int            # one request holding its own copy of everything
    expected_bytes_per_request: Fraction  # bytes_without_sharing - P x shared_bytes
    budget_bytes_per_gpu: int | None      # the KV memory in force
    expected_requests_fit: int | None     # (budget - shared) // expected bytes, x dp
    expected_prefill_skipped: Fraction    # P x cached_tokens_on_hit


def _block_tokens(scenario, result) -> int:
    return result.engine.block_size if result.engine is not None else scenario.workload.block_size_tokens


def expected(rate: Fraction, scenario, result) -> Expectation:
    """The expectations at hit rate `rate` for this scenario, at the busiest pipeline stage."""
    model, dep, workload = scenario.model, scenario.deployment, scenario.workload
    block = _block_tokens(scenario, result)
    ctx, prefix = workload.context_tokens, workload.prefix_tokens
    prompt = scenario.settings.prompt_tokens or ctx
    cached = max(0, min(prefix, prompt - 1)) // block * block
    # What a hit shares is what it caches: whole blocks, never past the prompt - 1.
    sharing = replace(workload, block_size_tokens=block, prefix_tokens=cached)
    alone = replace(sharing, prefix_tokens=0)
    budget = result.budget_bytes_per_gpu
    # An engine's own reservation for a request (vLLM's blocks with its windows and hybrid
    # padding, SGLang's cell with a draft's layers) is what a miss holds; per GPU, for one stage.
    reserved = result.engine.kv_bytes_per_request if result.engine is not None and dep.pp == 1 else None
    rows = []
    for stage, _ in model.stage_groups(dep.pp):
        shared, _rest = cache_bytes(stage, ctx, sharing, dep.tp)
        _none, own = cache_bytes(stage, ctx, alone, dep.tp)
        own = own if reserved is None else reserved
        mean = own - rate * shared
        fit = None
        if budget is not None and mean > 0:
            # The one shared copy is stored once a request has hit it; then each request its mean.
            fit = max(0, int((budget - (shared if rate else 0)) // mean)) * dep.dp
        rows.append((shared, own, mean, fit))
    # The busiest stage: the one fitting fewest requests (or holding most bytes per request).
    shared, own, mean, fit = min(rows, key=lambda r: (r[3] if r[3] is not None else 0, -r[2]))
    return Expectation(rate=rate, prefix_tokens=prefix, block_tokens=block, prompt_tokens=prompt,
                       cached_tokens_on_hit=cached, expected_cached_tokens=rate * cached, shared_bytes=shared,
                       bytes_without_sharing=own, expected_bytes_per_request=mean, budget_bytes_per_gpu=budget,
                       expected_requests_fit=fit, expected_prefill_skipped=rate * cached)


def figures(rate: Fraction, scenario, result) -> dict:
    """The expectations for reports and the CLI JSON, with plain sentences that say they are."""
    e = expected(rate, scenario, result)
    engine = result.engine.engine if result.engine is not None else None
    rule = rules_of(engine).prefix.words or rules_of(None).prefix.words
    lines = [f"Prefix hits, an expectation: {_percent(e.rate)} of requests start with the shared {e.prefix_tokens:,}-token "
             f"prefix. A hit caches floor(min({e.prefix_tokens:,}, {e.prompt_tokens:,} - 1) / {e.block_tokens}) x "
             f"{e.block_tokens} = {e.cached_tokens_on_hit:,} tokens ({rule}); expected cached tokens per request "
             f"{_dec(e.rate)} x {e.cached_tokens_on_hit:,} = {_num(e.expected_cached_tokens)}.",
             f"Expected KV per request (busiest GPU): {e.bytes_without_sharing:,} B of its own less "
             f"{_dec(e.rate)} x {e.shared_bytes:,} B shared = {_num(e.expected_bytes_per_request)} B, an expectation: "
             "a hit shares the one stored copy of the prefix, a miss stores its own.",
             f"Expected prefill skipped per request: {_dec(e.rate)} x {e.cached_tokens_on_hit:,} = "
             f"{_num(e.expected_prefill_skipped)} tokens, an expectation."]
    if e.expected_requests_fit is not None:
        lines.append(f"Expected requests that fit: ({e.budget_bytes_per_gpu:,} B of KV memory per GPU - "
                     f"{e.shared_bytes if e.rate else 0:,} B shared once) // {_num(e.expected_bytes_per_request)} B"
                     + (f" x {scenario.deployment.dp} data-parallel ranks" if scenario.deployment.dp > 1 else "")
                     + f" = {e.expected_requests_fit:,}, an expectation over the population of prompts.")
    return {"prefix_hit_rate": e.rate, "cached_tokens_on_hit": e.cached_tokens_on_hit,
            "expected_cached_tokens_per_request": e.expected_cached_tokens,
            "prefix_shared_bytes_per_gpu": e.shared_bytes, "kv_bytes_per_request_without_sharing": e.bytes_without_sharing,
            "expected_kv_bytes_per_request": e.expected_bytes_per_request,
            "expected_requests_fit": e.expected_requests_fit,
            "expected_prefill_tokens_skipped": e.expected_prefill_skipped, "lines": lines}


def _percent(value: Fraction) -> str:
    return f"{float(value) * 100:g}%"


def _dec(value: Fraction) -> str:
    return str(int(value)) if Fraction(value).denominator == 1 else f"{float(value):g}"


def _num(value: Fraction) -> str:
    value = Fraction(value)
    return f"{int(value):,}" if value.denominator == 1 else f"{float(value):,.2f}"
