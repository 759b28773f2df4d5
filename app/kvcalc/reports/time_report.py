"""The time bounds in words and JSON: each figure with its arithmetic, said to be a lower bound."""

from .. import parallel
from ..experts import expected_experts
from ..inputs.scenario import Scenario
from ..words import plural, rate, size
from ..units import ceil_div


TIMING_KEYS = ("compute_precision", "peak_flops_per_s", "ridge_flops_per_byte", "prompt_tokens", "prefill_chunk",
               "prefill_flops", "prefill_seconds", "decode_flops_per_byte", "compute_bound_batch", "prefill_steps",
               "chunked_step_seconds", "ttft_seconds", "decode_weights_bytes_per_gpu",
               "decode_experts_expected_per_layer", "decode_experts_note")
UNIFORM = "expected under uniform routing"


def timing_json(timing, missing: str | None) -> dict:
    """The time bounds (lower bounds at peak) under their JSON keys; null, with the reason, without."""
    if timing is None:
        return dict(dict.fromkeys(TIMING_KEYS), timing_missing=missing)
    return {
        "compute_precision": timing.compute_precision, "peak_flops_per_s": timing.peak_flops_per_s,
        "ridge_flops_per_byte": float(timing.ridge_flops_per_byte), "prompt_tokens": timing.prompt_tokens,
        "prefill_chunk": timing.prefill_chunk, "prefill_flops": timing.prefill_flops,
        "prefill_seconds": float(timing.prefill_seconds), "decode_flops_per_byte": float(timing.decode_flops_per_byte),
        "compute_bound_batch": timing.compute_bound_batch, "prefill_steps": timing.prefill_steps,
        "chunked_step_seconds": float(timing.chunked_step_seconds), "ttft_seconds": float(timing.ttft_seconds),
        "decode_weights_bytes_per_gpu": timing.decode_weights_bytes_per_gpu,
        "decode_experts_expected_per_layer": None if timing.decode_experts_expected is None
        else float(timing.decode_experts_expected),
        "decode_experts_note": _experts_note(timing),
        "timing_missing": None,
    }


def _experts_note(timing) -> str | None:
    """A mixture of experts' decode reads in a sentence for the JSON: the experts expected, or why
    every weight is read. None for a dense model."""
    routed, expected = timing.routed, timing.decode_experts_expected
    if routed is None or expected is None:
        return timing.experts_note
    return (f"{_experts_count(expected)} of {routed.experts:,} routed experts per MoE layer read, {UNIFORM}: "
            f"E x (1 - (1 - k/E)^B) for top-{routed.top_k:,} of E = {routed.experts:,}, B the batch (a token a request)")


def _experts_count(n) -> str:
    """A count of experts: whole where it is, else to a tenth, said to be rounded."""
    return f"{n.numerator:,}" if n.denominator == 1 else f"≈ {float(n):,.1f}"


def experts_words(scenario: Scenario, timing) -> str | None:
    """Which routed experts a decode step reads, with its numbers: those the batch is expected to
    touch under uniform routing. None for a dense model (or one whose experts' share is unknown)."""
    routed, expected = timing.routed, timing.decode_experts_expected
    if routed is None or expected is None:
        return None
    e, k, batch = routed.experts, routed.top_k, scenario.workload.batch
    layers = f" ({plural(routed.layers, 'layer')})" if routed.layers else ""
    return (f"{e:,} x (1 - ({e - k:,}/{e:,})^{batch:,}) = {_experts_count(expected)} of {e:,} routed experts per "
            f"MoE layer{layers}, {UNIFORM} (top-{k:,}, {plural(batch, 'token')})")


def decode_bound_line(scenario: Scenario, result) -> str:
    """The decode bound where no FLOP peaks are on record (sizing's own step: bytes read over
    bandwidth), with what a mixture of experts reads said to be expected under uniform routing."""
    dep, work, step = scenario.deployment, scenario.workload, result.decode_step_seconds
    routed, note = parallel.routed_for(scenario.model, result.weights_bytes, dep)
    read = "weights" if routed is None else (
        f"the weights the batch touches (of the routed experts, the "
        f"{_experts_count(expected_experts(routed.experts, routed.top_k, work.batch))} of {routed.experts:,} per "
        f"layer {UNIFORM})")
    cache = "the batch's KV" if dep.dp == 1 else (
        f"the busiest of {dep.dp} data-parallel ranks' KV ({plural(ceil_div(work.batch, dep.dp), 'request')})")
    return (f"Decode bound: {read} and {cache} read once per step at {dep.bandwidth_bytes_per_s / 10 ** 12:g} "
            f"TB/s -> >= {rate(float(step) * 1000)} ms per step, <= {rate(float(1 / step))} tokens/s per request, "
            f"{rate(float(work.batch / step))} in total" + (f" (note: {note})" if note else ""))


def _ms(seconds) -> str:
    return f"{rate(float(seconds) * 1000)} ms"


def _flops(n) -> str:
    for scale, name in ((1e18, "EFLOP"), (1e15, "PFLOP"), (1e12, "TFLOP"), (1e9, "GFLOP"), (1e6, "MFLOP")):
        if n >= scale:
            return f"{float(n) / scale:,.3g} {name}"
    return f"{n:,} FLOP"


def timing_lines(scenario: Scenario, timing, unit: str = "gib") -> list[str]:
    """The time bounds' arithmetic with these numbers: lower bounds at the GPU's peak."""
    dep, work = scenario.deployment, scenario.workload
    peak, bw = timing.peak_flops_per_s, timing.bandwidth_bytes_per_s
    gpus = f"{dep.tp} x " if dep.tp > 1 else ""
    lines = [
        f"Peak: {gpus}{peak / 1e12:,.4g} TFLOP/s dense {timing.compute_precision} and {bw / 1e12:g} TB/s per GPU; "
        f"ridge point {float(timing.ridge_flops_per_byte):,.0f} FLOP/byte (below it a step waits on memory)",
        f"Decode step of {plural(work.batch, 'request')}"
        + (f" over {dep.dp} data-parallel ranks (the busiest rank's {plural(ceil_div(work.batch, dep.dp), 'request')}: "
           "its FLOPs over its own GPUs, its own cache; the experts over all of them)" if dep.dp > 1 else "")
        + f" at {work.context_tokens:,} tokens: "
        f"{_flops(timing.decode_flops)} / compute = {_ms(timing.decode_compute_seconds)}; "
        f"{size(timing.decode_bytes_per_gpu, unit)} read per GPU / bandwidth = {_ms(timing.decode_memory_seconds)}; "
        f">= {_ms(timing.decode_step_seconds)} ("
        + ("compute-bound" if timing.decode_compute_seconds >= timing.decode_memory_seconds else "memory-bound")
        + f", {float(timing.decode_flops_per_byte):,.1f} FLOP/byte)",
    ]
    experts = experts_words(scenario, timing)
    if experts:
        rest, read = timing.unrouted_weights_bytes_per_gpu, timing.decode_weights_bytes_per_gpu
        lines.append(
            f"Weights a decode step reads per GPU: {size(rest, unit)} of all but the routed experts (every step) + "
            f"{size(read - rest, unit)} of routed experts, those the batch touches: {experts} -> {size(read, unit)} of the "
            f"{size(timing.all_weights_bytes_per_gpu, unit)} of every weight (routed experts: {timing.routed.how})")
    lines += [
        f"Decode: <= {rate(float(1 / timing.decode_step_seconds))} tokens/s per request, "
        f"{rate(float(work.batch / timing.decode_step_seconds))} in total; "
        + (f"compute-bound from a batch of {timing.compute_bound_batch:,} at this context"
           if timing.compute_bound_batch else "never compute-bound at this context (each request's own cache "
                                              "takes longer to read than its FLOPs take)"),
        f"Prefill of a prompt of {timing.prompt_tokens:,} tokens alone: {_flops(timing.prefill_flops)} -> "
        f">= {_ms(timing.prefill_seconds)} ({float(timing.prefill_flops_per_byte):,.0f} FLOP/byte)",
        f"Chunked prefill: {plural(timing.prefill_steps, 'step')} of {timing.prefill_chunk:,} tokens; a step that "
        f"carries the last chunk with the batch's decodes >= {_ms(timing.chunked_step_seconds)} (the inter-token "
        f"latency while a prompt prefills); time to first token >= {_ms(timing.ttft_seconds)}",
        "All times are lower bounds at peak FLOP/s and bandwidth: a real step takes longer.",
    ]
    return lines + [f"Note: {note}" for note in timing.notes]


TIME_METRICS = ("ttft_seconds", "prefill_seconds", "decode_step_seconds", "chunked_step_seconds",
                "compute_bound_batch", "decode_flops_per_byte", "ridge_flops_per_byte", "decode_tokens_per_s_total",
                "prefill_flops", "prefill_steps")


def timing_texts(scenario: Scenario, evaluation, fits: bool | None, unit: str = "gib") -> dict:
    """The time section's figures (value, figure, second line), conditions and live numbers."""
    timing, work = evaluation.timing, scenario.workload
    if timing is None or fits is False:
        why = "n/a: it does not fit" if timing is not None else f"n/a: {evaluation.timing_missing or 'no GPU'}"
        return {"metrics": {key: ("", why, "") for key in TIME_METRICS}, "conditions": _conditions(scenario, None),
                "live": {}, "shown": False}
    bound = "compute-bound" if timing.decode_compute_seconds >= timing.decode_memory_seconds else "memory-bound"
    metrics = {
        "ttft_seconds": (f"{float(timing.ttft_seconds):.6g}", f"≥ {_ms(timing.ttft_seconds)}",
                         f"{plural(timing.prefill_steps, 'step')} of {timing.prefill_chunk:,} tokens"),
        "prefill_seconds": (f"{float(timing.prefill_seconds):.6g}", f"≥ {_ms(timing.prefill_seconds)}",
                            f"{_flops(timing.prefill_flops)}"),
        "decode_step_seconds": (f"{float(timing.decode_step_seconds):.6g}", f"≥ {_ms(timing.decode_step_seconds)}",
                                bound if timing.decode_experts_expected is None else
                                f"{bound}; {_experts_count(timing.decode_experts_expected)} of "
                                f"{timing.routed.experts:,} experts per layer read, {UNIFORM}"),
        "chunked_step_seconds": (f"{float(timing.chunked_step_seconds):.6g}",
                                 f"≥ {_ms(timing.chunked_step_seconds)}",
                                 f"+{_ms(timing.chunked_step_seconds - timing.decode_step_seconds)} over a plain step"),
        "compute_bound_batch": ("" if timing.compute_bound_batch is None else str(timing.compute_bound_batch),
                                "never at this context" if timing.compute_bound_batch is None
                                else plural(timing.compute_bound_batch, "request"), ""),
        "decode_flops_per_byte": (f"{float(timing.decode_flops_per_byte):.6g}",
                                  f"{float(timing.decode_flops_per_byte):,.1f} FLOP/byte",
                                  f"the ridge is {float(timing.ridge_flops_per_byte):,.0f}"),
        "ridge_flops_per_byte": (f"{float(timing.ridge_flops_per_byte):.6g}",
                                 f"{float(timing.ridge_flops_per_byte):,.0f} FLOP/byte",
                                 f"{timing.peak_flops_per_s / 1e12:,.4g} TFLOP/s ÷ {timing.bandwidth_bytes_per_s / 1e12:g} TB/s"),
        "decode_tokens_per_s_total": (f"{float(work.batch / timing.decode_step_seconds):.6g}",
                                      f"≤ {rate(float(work.batch / timing.decode_step_seconds))} tokens/s",
                                      f"≤ {rate(float(1 / timing.decode_step_seconds))} per request"),
        "prefill_flops": (str(timing.prefill_flops), _flops(timing.prefill_flops), f"{timing.prefill_flops:,} FLOP"),
        "prefill_steps": (str(timing.prefill_steps), plural(timing.prefill_steps, "step"),
                          f"of at most {timing.prefill_chunk:,} tokens"),
    }
    weights = timing.decode_weights_bytes_per_gpu
    experts = experts_words(scenario, timing)
    live = {
        "time-weights": size(weights, unit) + (
            f": of its routed experts, only the {_experts_count(timing.decode_experts_expected)} of "
            f"{timing.routed.experts:,} per layer the batch is expected to touch under uniform routing"
            if experts else ""),
        "time-kv": size(timing.decode_bytes_per_gpu - weights, unit),
        "time-intensity": f"{float(timing.decode_flops_per_byte):,.1f}",
        "time-ridge": f"{float(timing.ridge_flops_per_byte):,.0f}", "time-chunk": f"{timing.prefill_chunk:,}",
        "time-chunked": _ms(timing.chunked_step_seconds), "time-step": _ms(timing.decode_step_seconds),
        "time-ttft": _ms(timing.ttft_seconds), "time-precision": timing.compute_precision,
        "time-bound": "the step waits on memory" if bound == "memory-bound" else "past the ridge, the step is "
                      "compute-bound",
    }
    return {"metrics": metrics, "conditions": _conditions(scenario, timing), "live": live, "shown": True}


def _conditions(scenario: Scenario, timing) -> dict:
    work = scenario.workload
    requests = plural(work.batch, "request")
    prompt = f"a prompt of {timing.prompt_tokens:,} tokens" if timing else "a prompt"
    chunk = f"last chunk of {timing.prefill_chunk:,} tokens" if timing else "last chunk"
    return {
        "ttft_seconds": f"{prompt} in chunks, beside {requests} decoding",
        "prefill_seconds": f"{prompt}, alone",
        "decode_step_seconds": f"{requests} at {work.context_tokens:,} tokens, one token each",
        "chunked_step_seconds": f"that step also carrying the {chunk} of {prompt}",
        "compute_bound_batch": f"the batch at which decode at {work.context_tokens:,} tokens turns compute-bound",
        "decode_flops_per_byte": "arithmetic intensity of a decode step, per GPU",
        "ridge_flops_per_byte": "peak FLOP/s over bandwidth: where a step turns compute-bound",
        "decode_tokens_per_s_total": f"{requests} at {work.context_tokens:,} tokens, together",
        "prefill_flops": f"{prompt}, the whole deployment",
        "prefill_steps": f"{prompt} cut into prefill chunks",
    }
