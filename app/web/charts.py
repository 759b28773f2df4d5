"""The two context charts: KV cache per GPU against context for each attention design, and
requests that fit against context for each KV precision, each marking the current context (and
the model's limit when the context is past it). With an engine chosen, the KV memory and the
requests are that engine's. The series come from the engine's sweep; drawing is web.plot's."""

from kvcalc.units import GB, GIB
from kvcalc.words import size
from kvcalc.reports.sweep import concurrency_series, context_points, line_end, memory_series

from web import state
from web.dom import put
from web.plot import Line, Mark, plot

UNIT_SCALE = {"gib": (GIB, "GiB"), "gb": (GB, "GB")}
X_LABEL = "context length (tokens)"
_now = {"unit": "gib"}


def _tokens(value) -> str:
    value = int(value)
    for scale, suffix in ((1 << 20, "M"), (1 << 10, "K")):
        if value >= scale and value % scale == 0:
            return f"{value // scale}{suffix}"
    return f"{value:,}"


def _context(value) -> str:
    return f"{_tokens(value)} tokens"


def _value(kind: str, v) -> str:
    """Tooltip text under the pointer: the exact figure in the chosen unit."""
    if kind == "requests":
        return "–" if v is None else "0: does not fit" if v == 0 else f"{v:,} request{'' if v == 1 else 's'}"
    if kind == "approx":        # from weights of a rounded parameter count: never to the byte
        return "–" if v is None else f"≈ {size(v, _now['unit'])} (from a rounded parameter count)"
    return "–" if v is None else f"{size(v, _now['unit'])} ({v:,} B)"


def _marks(lines: list, at: int, context: int, end) -> tuple:
    """The current context: a line there and a point on each current line; past the model's limit,
    the limit too (the lines end there)."""
    past = end is not None and context > end
    here = Mark(context, f"this context: {_tokens(context)}" + (", past the limit" if past else ""),
                tuple((i, line.values[at]) for i, line in enumerate(lines) if line.current))
    return (here, Mark(end, f"the model's limit: {_tokens(end)}")) if past else (here,)


def render(scenario, u: str, evaluation=None) -> None:
    """`evaluation` is the scenario's (the exact ideal, the engine's figures beside it); the last
    computed one when it is not passed."""
    if evaluation is None and state.computed is not None and state.computed[0] is scenario:
        evaluation = state.computed[1]
    result = evaluation.result if evaluation is not None else None
    scale, unit_name = UNIT_SCALE[u]
    _now["unit"] = u
    contexts = context_points(scenario)
    context, end = scenario.workload.context_tokens, line_end(scenario)
    at = contexts.index(context)
    mem = memory_series(scenario, contexts, result)
    lines = [Line(line["label"], "bytes", line["bytes"], line["key"], current=line["current"]) for line in mem["lines"]]
    weights, budget = mem["weights_bytes_per_gpu"], mem["budget"]
    rounded = "bytes" if scenario.deployment.weights_exact else "approx"     # the weights' and what they leave
    if weights is not None and weights > 0:
        lines.append(Line("weights per GPU", rounded, [weights] * len(contexts), "weights", "flat"))
    if budget is not None and any(v is not None and v > 0 for v in budget["bytes"]):
        lines.append(Line(budget["label"], rounded, budget["bytes"], "budget", "flat"))
    plot("chart-memory", X_LABEL, contexts, f"{unit_name} per GPU", lines, scale, _context, _value,
         marks=_marks(lines, at, context, end), x_end=end)

    conc = concurrency_series(scenario, contexts, result)
    engine = conc["engine"]
    put("#concurrency-note",
        "Choose a GPU (or its memory) and the weights to see how many requests fit." if not conc["lines"] else
        f"As {engine} sizes them: each point is {engine}'s own answer at that context and KV precision "
        f"(its KV memory, its blocks), 0 where it would not start; the precisions {engine} can store."
        if engine else "")
    lines = [Line(line["label"], "requests", line["requests"], line["key"], current=line["current"])
             for line in conc["lines"]]
    plot("chart-concurrency", X_LABEL, contexts, f"requests ({engine}'s sizing)" if engine else
         "requests (exact ideal)", lines, 1, _context, _value, marks=_marks(lines, at, context, end), x_end=end)
