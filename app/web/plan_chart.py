"""The plan's chart: requests that fit against GPU count, one line per GPU type drawn, each point
the engine's own answer (kvcalc.planning.plan.curve: the count in its first layout, 0 where it does not
start). The GPU types drawn are those of the plan's best rows; which they are is said beside the
chart. Drawing is web.plot's; nothing is computed here."""

from web.dom import put
from web.plot import Line, plot

DRAWN = 6               # GPU types drawn at most (sweep.SERIES_STYLES has a style for each: "gpu 1".."gpu 6")


def drawn_gpus(rows, considered: tuple) -> list[str]:
    """The GPU types of the best rows, in the plan's order (fitting rows first), at most DRAWN;
    every type considered when the plan names no more than that."""
    if len(considered) <= DRAWN:
        ordered = [row.gpu for row in rows if row.fits] + [row.gpu for row in rows] + list(considered)
    else:
        ordered = [row.gpu for row in rows]
    return list(dict.fromkeys(ordered))[:DRAWN]


def _count(value) -> str:
    return f"{int(value):,} GPU" + ("s" * (int(value) != 1))


def _value(kind: str, v) -> str:
    return "–" if v is None else "0: does not fit" if v == 0 else f"{v:,} request{'' if v == 1 else 's'}"


def render(counts: list[int], curves: list[tuple[str, list]], considered: int) -> None:
    """`curves`: (the GPU type's name, [(GPUs, requests that fit)]) per type drawn."""
    lines = []
    for i, (name, points) in enumerate(curves):
        at = dict(points)
        lines.append(Line(name, "requests", [at.get(n) for n in counts], f"gpu {i + 1}"))
    names = ", ".join(name for name, _ in curves)
    put("#plan-chart-note", f"One line per GPU type: {names}" +
        (f" (the {len(curves)} types of the best rows, of {considered} planned)" if considered > len(curves) else "")
        + ". Each count in its first layout, 0 (no point) where it does not start; the table above gives the figures.")
    plot("chart-plan", "GPUs", counts, "requests that fit", lines, 1, _count, _value, x_log=2)
