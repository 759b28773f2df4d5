"""The time section: prefill, decode and chunked-prefill lower bounds (figures written by
results.write_metrics from the engine's texts), the roofline and decode speed against batch size
(drawn by web.plot from the engine's series), and the explainer's live numbers."""

from kvcalc.timing import batch_series, roofline_series

from web.dom import put
from web.plot import plot

TERA = 10 ** 12


def _intensity(x) -> str:
    return f"{float(x):,.3g} FLOP/byte"


def _flops_value(kind: str, v) -> str:
    return "–" if v is None else f"{float(v) / TERA:,.4g} TFLOP/s"


def _batch(x) -> str:
    return f"batch {int(x):,}"


def _speed_value(kind: str, v) -> str:
    return "–" if v is None else f"{float(v):,.1f} tokens/s"


def render(texts: dict, scenario, result, fits) -> None:
    for key, text in texts["time_live"].items():
        put(f'[data-live="{key}"]', text)
    timing = result.timing
    shown = timing is not None and fits is not False
    put("#timing-missing", "" if shown else
        "Not given: the configuration does not fit." if timing is not None else
        f"Not given: {result.timing_missing}.")
    put("#timing-body", not shown, "hidden")
    if not shown:
        return
    roof = roofline_series(timing)
    plot("chart-roofline", "arithmetic intensity (FLOP/byte)", [float(x) for x in roof["intensities"]],
         "TFLOP/s per GPU", [(f"roof ({timing.compute_precision})", "flops", roof["roof"], "line"),
                             ("this decode step", "flops", roof["decode"], "dot"),
                             ("this prefill", "flops", roof["prefill"], "dot")],
         TERA, _intensity, _flops_value, x_log=10)
    series = batch_series(scenario, result, timing, result.capacity)
    plot("chart-batch", "batch (requests decoding)", series["batches"], "tokens/s",
         [("in total", "speed", series["total"], False), ("per request", "speed", series["per_request"], False)],
         1, _batch, _speed_value)
