"""Whether a configuration fits, in one sentence, for the ideal and for each engine's rules.

Pure: it reads a Scenario and its Result. `fits` is None when the inputs cannot tell (no GPU, or
weights unknown) and the sentence then says what is missing.
"""

from dataclasses import dataclass

from ..engines import REGISTRY, title
from ..engines.result import BudgetSource
from ..serving import offload, prefix_hits
from ..words import listed as in_words, plural, size


@dataclass(frozen=True)
class Verdict:
    fits: bool | None
    sentence: str
    reasons: tuple[str, ...]      # "context", "weights", "kv", "engine": what does not fit


def verdict(scenario, evaluation, unit: str = "gib") -> Verdict:
    judged = _verdict(scenario, evaluation, unit)
    more = _beside(scenario, unit) + _tiers(scenario, evaluation, judged.fits)
    if not more:
        return judged
    return Verdict(judged.fits, judged.sentence[:-1] + more + ".", judged.reasons)


def _tiers(scenario, evaluation, fits) -> str:
    """What the host tier and the prefix hits add, as expectations and a tier beside the GPUs."""
    serving, words = scenario.serving, ""
    if serving.offload is not None:
        tier = offload.figures(serving.offload, scenario, evaluation)
        held = "" if tier["offload_requests"] is None else f" ({plural(tier['offload_requests'], 'request')})"
        words += f"; its host KV tier holds {plural(tier['offload_tokens'], 'more token')}{held}"
    if serving.prefix_hit_rate is not None and fits is not None:
        expected = prefix_hits.figures(serving.prefix_hit_rate, scenario, evaluation)["expected_requests_fit"]
        if expected is not None:
            words += (f"; at a prefix hit rate of {float(serving.prefix_hit_rate) * 100:g}%, {float(expected):,.0f} "
                      "requests are expected to fit")
    return words


def _beside(scenario, unit: str) -> str:
    """What each GPU holds beside the model's weights (a draft, LoRA slots, an encoder kept whole),
    which the figures above have already subtracted: said, so the verdict is not read as the bare
    model's."""
    parts = [(name, n) for name, n in scenario.serving.added if n]
    if not parts:
        return ""
    draft, encoder = scenario.serving.draft, scenario.serving.encoder
    projector = encoder is not None and encoder.mode == "mmproj"
    words = {"draft": "the MTP heads" if draft is not None and draft.kind == "mtp" else "the draft model",
             "lora": "the LoRA slots", "encoder": "the rest of a whole vision encoder"}
    listed = [f"{words[name]} ({size(n, unit)})" for name, n in parts if not (projector and name == "encoder")]
    said = ""
    if listed:
        said = f"; beside its share of the model's weights each GPU holds {in_words(listed)}"
    if projector:
        said += f"; the first GPU also holds the multimodal projector (--mmproj, {size(dict(parts)['encoder'], unit)})"
    return said


def _verdict(scenario, evaluation, unit: str) -> Verdict:
    result = evaluation.result
    model, work, dep = scenario.model, scenario.workload, scenario.deployment
    ctx, batch = work.context_tokens, work.batch
    requests = f"{plural(batch, 'request')} of {plural(ctx, 'token')}"
    # Data-parallel ranks each hold ceil(batch / dp) of the requests; an engine prints one rank's figures.
    rank, dp = -(-batch // dep.dp), dep.dp
    per_rank = f" on each of its {dp} data-parallel ranks" if dp > 1 else ""
    if dp > 1:
        requests += f" over {dp} data-parallel ranks ({plural(rank, 'request')} a rank)"
    problems, reasons = [], []
    if model.past_limit(ctx):
        problems.append(f"a context of {ctx:,} tokens is past the model's limit of {model.max_context_tokens:,}")
        reasons.append("context")

    engine = evaluation.engine
    if engine is not None:
        name = title(engine.engine)
        contradiction = kv_memory_contradiction(scenario, evaluation, unit)
        if contradiction is not None:
            # A KV memory from a log (or kv-memory-gib) replaces only the engine's estimate: the
            # card still holds the weights beside it, and what it cannot hold is no fit.
            problems.append(contradiction[0])
            reasons.append(contradiction[1])
            return Verdict(False, "Does not fit: " + "; ".join(problems) + ".", tuple(reasons))
        if engine.starts is None:
            return _unknown(problems, reasons, dep, result, f"{name}'s figures need")
        if not engine.starts:
            budget = engine.kv_budget_bytes_per_gpu
            if engine.refusal_words:
                problems.append(f"{name} will not start: {engine.refusal_words}")
            elif budget is not None and budget < 0:
                problems.append(f"{name} will not start: the weights and its overhead leave no memory for the "
                                f"cache ({size(-budget, unit)} short per GPU)")
            else:
                # vLLM prints its own estimate when it refuses; for the others, the engine's
                # longest context for the requests at this memory (the summary's figure).
                most = engine.max_model_len if REGISTRY[engine.engine].REFUSED_MAX_LEN_WORDS else \
                    evaluation.context_limit[0]
                longest = f"; the longest context it can serve is {most:,} tokens" if most else ""
                problems.append(f"{name} will not start: one request of {ctx:,} tokens needs more KV cache than "
                                f"the {size(budget, unit)} it has per GPU{longest}")
            reasons.append("engine")
        elif engine.max_concurrency is not None and engine.max_concurrency < 1:
            # It starts, but not even one request of this context fits its pool: none can run.
            problems.append(f"{name} starts, but its KV cache of {plural(engine.kv_tokens or 0, 'token')} cannot hold "
                            f"one request of {ctx:,} tokens")
            reasons.append("kv")
        elif engine.max_concurrency is not None and engine.max_concurrency < rank:
            problems.append(f"{name} holds {float(engine.max_concurrency):,.2f} requests of {ctx:,} tokens at "
                            f"once{per_rank}, not {rank:,}: the rest wait")
            reasons.append("kv")
        # The overhead's band can change whether the engine holds the requests, never a context limit.
        band = "" if "context" in reasons else _band_words(engine, rank, not problems, unit)
        if problems:
            return Verdict(False, "Does not fit: " + "; ".join(problems) + band + ".", tuple(reasons))
        at_once = "" if engine.max_concurrency is None else \
            f" (up to {float(engine.max_concurrency):,.2f} at once{per_rank})"
        return Verdict(True, f"Fits as {name} allocates: {requests}{at_once}{band}.", ())

    budget = result.kv_budget_bytes_per_gpu
    if budget is None:
        return _unknown(problems, reasons, dep, result, "Whether it fits needs")
    if budget < 0:
        overhead = f" and {size(dep.overhead_bytes, unit)} overhead" if dep.overhead_bytes else ""
        problems.append(f"the weights need {size(result.weights_bytes_per_gpu, unit)} per GPU{overhead}, "
                        f"{size(-budget, unit)} more than the {size(result.usable_bytes_per_gpu, unit)} usable")
        reasons.append("weights")
    elif result.kv_bytes_per_gpu > budget:
        most = evaluation.capacity or 0
        room = f"at most {plural(most, 'request')} of {ctx:,} tokens fit" if most else \
            f"not even one request of {ctx:,} tokens fits"
        problems.append(f"{requests} {'need' if batch > 1 else 'needs'} {size(result.kv_bytes_per_gpu, unit)} of KV "
                        f"cache per GPU, "
                        f"{size(result.kv_bytes_per_gpu - budget, unit)} over the {size(budget, unit)} left after "
                        f"the weights; {room}")
        reasons.append("kv")
    if problems:
        return Verdict(False, "Does not fit: " + "; ".join(problems) + ".", tuple(reasons))
    spare = f"; up to {plural(evaluation.capacity, 'request')} would fit" \
        if evaluation.capacity and evaluation.capacity > batch else ""
    return Verdict(True, f"Fits: {requests} {'take' if batch > 1 else 'takes'} {size(result.kv_bytes_per_gpu, unit)} of the "
                         f"{size(budget, unit)} KV budget per GPU{spare}.", ())


def kv_memory_contradiction(scenario, evaluation, unit: str = "gib") -> tuple[str, str] | None:
    """(what is wrong, its reason) when a KV memory given or read from a log cannot be on this
    deployment: the weights on the busiest GPU (the log's measurement, else the model's) over the
    card's whole memory ("weights"), or the KV memory over what the card leaves beside them
    ("kv-memory": the log and these inputs contradict each other). None when it can. The figures
    that KV memory gives (requests, longest context) are then withheld, not shown beside it."""
    result = evaluation.result
    engine, dep, settings = evaluation.engine, scenario.deployment, scenario.settings
    card = dep.gpu_memory_bytes
    if engine is None or engine.budget_source is not BudgetSource.GIVEN_KV_MEMORY or engine.kv_budget_bytes_per_gpu is None or card is None:
        return None
    kv = engine.kv_budget_bytes_per_gpu
    measured = settings.measured
    logged = measured.weights_bytes if measured is not None and measured.engine == engine.engine else None
    weights = engine.weights_bytes_per_gpu or logged or result.weights_bytes_per_gpu
    if settings.n_gpu_layers is not None or settings.n_cpu_moe:
        weights = None          # some weights stay in CPU memory: only the KV memory itself is weighed
    source = "the log's" if measured is not None else "the one given (kv-memory-gib)"
    if weights is not None and weights > card:
        return (f"the weights need {size(weights, unit)} per GPU, {size(weights - card, unit)} more than the card's "
                f"{size(card, unit)}, so the KV memory of {size(kv, unit)} per GPU, {source}, cannot have been "
                f"measured on this deployment", "weights")
    room = card - (weights or 0)
    if kv > room:
        beside = f" beside the weights' {size(weights, unit)} per GPU" if weights else ""
        return (f"a KV memory of {size(kv, unit)} per GPU, {source}, is more than the {size(room, unit)} the card's "
                f"{size(card, unit)} leaves{beside}: the KV memory and these inputs contradict each other (check "
                f"the GPU, the model and the layout it was measured with)", "kv-memory")
    return None


def _holds(end, batch: int) -> bool:
    return bool(end.starts) and end.max_concurrency is not None and end.max_concurrency >= batch


def _band_words(engine, batch: int, fits: bool, unit: str) -> str:
    """What changes inside the overhead estimate's band, when the answer does."""
    if not engine.band:
        return ""
    top, bottom = engine.band
    if fits and not _holds(top, batch):
        return (f"; that is at the estimate: at the top of its range ({size(top.overhead_bytes_per_gpu, unit)} "
                f"overhead) it does not fit" + ("" if top.max_concurrency is None or not top.starts else
                                              f", holding {float(top.max_concurrency):,.2f}"))
    if not fits and _holds(bottom, batch):
        return (f"; that is at the estimate: at the bottom of its range ({size(bottom.overhead_bytes_per_gpu, unit)} "
                f"overhead) it fits, holding {float(bottom.max_concurrency):,.2f}")
    return ""


def _unknown(problems, reasons, dep, result, lead) -> Verdict:
    if problems:
        return Verdict(False, "Does not fit: " + "; ".join(problems) + ".", tuple(reasons))
    missing = "a GPU (or its memory)" if dep.gpu_memory_bytes is None else \
        "the weights' size (Parameters or Weights)" if result.weights_bytes is None else \
        "the GPU's memory and the weights"
    return Verdict(None, f"{lead} {missing}.", ())
