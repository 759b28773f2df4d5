"""The time section: prefill, decode and chunked-prefill lower bounds (figures written by
results.write_metrics from the engine's texts), the roofline and decode speed against batch size
with its compute ceiling and the chosen batch marked (drawn by web.plot from the engine's
series), and the explainer's live numbers."""

from kvcalc.reports.sweep import decode_series
from kvcalc.serving.timing import roofline_series

from web.dom import put
from web.plot import Line, Mark, plot

TERA = 10 ** 12


def _intensity(x) -> str:
    return f"{float(x):,.3g} FLOP/byte"


def _flops_value(kind: str, v) -> str:
    return "–" if v is None else f"{float(v) / TERA:,.4g} TFLOP/s"


def _batch(x) -> str:
    return f"batch {int(x):,}"


def _speed_value(kind: str, v) -> str:
    return "–" if v is None else f"{float(v):,.1f} tokens/s"


def render(texts: dict, scenario, evaluation, fits) -> None:
    for key, text in texts["time_live"].items():
        put(f'[data-live="{key}"]', text)
    timing = evaluation.timing
    shown = timing is not None and fits is not False
    put("#timing-missing", "" if shown else
        "Not given: the configuration does not fit." if timing is not None else
        f"Not given: {evaluation.timing_missing}.")
    put("#timing-body", not shown, "hidden")
    if not shown:
        return
    roof = roofline_series(timing)
    plot("chart-roofline", "arithmetic intensity (FLOP/byte)", [float(x) for x in roof["intensities"]],
         "TFLOP/s per GPU", [Line(f"roof ({timing.compute_precision})", "flops", roof["roof"], "roof", "plain"),
                             Line("this decode step", "flops", roof["decode"], "decode", "dot"),
                             Line("this prefill", "flops", roof["prefill"], "prefill", "dot")],
         TERA, _intensity, _flops_value, x_log=10)
    series = decode_series(scenario, evaluation, timing)
    batches, chosen = series["batches"], series["chosen"]
    at = batches.index(chosen)
    lines = [Line("in total", "speed", series["total"], "total"),
             Line("per request", "speed", series["per_request"], "per request")]
    if series["ceiling"][0] is not None:
        lines.append(Line("compute ceiling", "speed", series["ceiling"], "ceiling", "flat"))
    bound = series["compute_bound_batch"]
    put("#batch-note", "Tokens per second in total and per request, up to the requests that fit in memory. No batch "
        "decodes faster than the compute ceiling, the GPUs' peak FLOP/s ÷ a token's FLOPs" +
        (f": the step is compute-bound from batch {bound:,}." if bound else
         ": at this context the cache reads keep every batch memory-bound."))
    plot("chart-batch", "batch (requests decoding)", batches, "tokens/s", lines, 1, _batch, _speed_value,
         marks=(Mark(chosen, f"chosen: batch {chosen:,}", ((0, series["total"][at]), (1, series["per_request"][at]))),))
