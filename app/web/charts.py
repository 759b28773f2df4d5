"""The two context charts: KV cache per GPU against context for each attention design, and
requests that fit against context for each KV precision. The series come from the engine's
sweep; drawing is web.plot's."""

from kvcalc.units import GB, GIB
from kvcalc.words import size
from kvcalc.sweep import concurrency_series, context_points, memory_series

from web.dom import put
from web.plot import plot

UNIT_SCALE = {"gib": (GIB, "GiB"), "gb": (GB, "GB")}
_now = {"unit": "gib"}


def _tokens(value) -> str:
    value = int(value)
    for scale, suffix in ((1 << 20, "M"), (1 << 10, "K")):
        if value >= scale and value % scale == 0:
            return f"{value // scale}{suffix}"
    return f"{value:,}"


def _value(kind: str, v) -> str:
    """Legend text under the pointer: the exact figure in the chosen unit."""
    if v is None:
        return "does not fit" if kind == "requests" else "–"
    return f"{v:,} requests" if kind == "requests" else f"{size(v, _now['unit'])} ({v:,} B)"


def render(scenario, u: str) -> None:
    scale, unit_name = UNIT_SCALE[u]
    _now["unit"] = u
    contexts = context_points(scenario)
    mem = memory_series(scenario, contexts)
    lines = [(line["label"], "bytes", line["bytes"], False) for line in mem["lines"]]
    for label, value in (("weights per GPU", mem["weights_bytes_per_gpu"]),
                         ("KV budget per GPU", mem["kv_budget_bytes_per_gpu"])):
        if value is not None and value > 0:
            lines.append((label, "bytes", [value] * len(contexts), True))
    plot("chart-memory", "context length (tokens)", contexts, f"{unit_name} per GPU", lines, scale, _tokens, _value)

    conc = concurrency_series(scenario, contexts)
    put("#concurrency-note", "" if conc["lines"] else
        "Choose a GPU (or its memory) and the weights to see how many requests fit.")
    plot("chart-concurrency", "context length (tokens)", contexts, "max concurrent requests",
         [(line["label"], "requests", line["requests"], False) for line in conc["lines"]], 1, _tokens, _value)
