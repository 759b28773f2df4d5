"""The plan's rows in words and JSON: one function per form, shared by the CLI and the page."""

from ..engines import title
from ..engines.result import BudgetSource
from .ranking import Plan
from .rows import Row
from ..words import size


def row_json(row: Row) -> dict:
    """A row under the CLI's --json key `plan` (floats for the bounds, ints for the rest)."""
    per_million = row.usd_per_million_tokens
    return {
        "gpu": row.gpu, "gpu_name": row.gpu_name, "gpus": row.gpus,
        "tp": row.layout.tp, "pp": row.layout.pp, "dp": row.layout.dp, "ep": row.layout.ep,
        "kv_dtype": row.kv_dtype, "weights_dtype": row.weights_dtype,
        "fits": row.fits, "batch": row.batch,
        "max_concurrency": row.max_concurrency, "max_context_tokens": row.max_context_tokens,
        "limit": row.limit, "why": row.why,
        "decode_tokens_per_s": None if row.decode_tokens_per_s is None else float(row.decode_tokens_per_s),
        "usd_per_hour": None if row.usd_per_hour is None else float(row.usd_per_hour),
        "usd_per_million_tokens": None if per_million is None else float(per_million),
        "beside_weights_bytes_per_gpu": dict(row.beside),
    }


def plan_json(plan: Plan) -> dict:
    """The plan under --json: its rows, notes, and the two rows it names, each as its row with
    its index in `plan`, its words and its flags (`plan_best`, the fewest's words, kept for
    scripts written before `plan_fewest`)."""
    return {"plan": [row_json(row) for row in plan.rows], "plan_notes": list(plan.notes),
            "plan_everything": plan.everything,
            "plan_best": None if plan.best is None else plan.best.words(),
            "plan_fewest": _named_json(plan, plan.fewest),
            "plan_cheapest": _cheapest_json(plan)}


def _cheapest_json(plan: Plan) -> dict | None:
    named = _named_json(plan, plan.cheapest)
    if named is None:
        return None
    served = plan.usd_per_million_tokens_served(plan.cheapest)
    return {**named, "by": plan.cheapest_by,
            "usd_per_million_tokens_served": None if served is None else float(served)}


def _named_json(plan: Plan, row: Row | None) -> dict | None:
    if row is None:
        return None
    index = next(i for i, each in enumerate(plan.rows) if each is row)
    return {"index": index, "words": row.words(), "flags": row_flags(row), **row_json(row)}


def cost_words(plan: Plan, row: Row) -> str:
    """The cheapest row's cost in words: "$0.477/M tokens served ($17.60/hour)" at a rate, else
    "$17.60/hour"."""
    served = plan.usd_per_million_tokens_served(row)
    hourly = f"${_usd(row.usd_per_hour)}/hour"
    return hourly if served is None else f"${_usd(served)}/M tokens served ({hourly})"


def row_flags(row: Row) -> list[str]:
    """The row's deployment as the CLI's options: with the plan's other inputs, `kvcalc` gives
    this row in the single view."""
    flags = ["--gpu", row.gpu, "--gpus", str(row.gpus)]
    flags += ["--pp", str(row.layout.pp)] * (row.layout.pp > 1) + ["--dp", str(row.layout.dp)] * (row.layout.dp > 1)
    flags += ["--ep", "on"] * row.layout.ep
    for name in ("kv-dtype", "weights-dtype"):
        if row.values.get(name):
            flags += [f"--{name}", str(row.values[name])]
    return flags


def _count(value) -> str:
    return "-" if value is None else f"{value:,}"


def _usd(value) -> str:
    if value is None:
        return "-"
    return f"{float(value):,.2f}" if value >= 1 else f"{float(value):.3g}"


_FITS = {True: "yes", False: "no", None: "?"}


def plan_table(plan: Plan) -> str:
    """The plan as the CLI prints it: one line a row, then the notes. The $ columns only when
    some row has a price; decode tok/s is an upper bound and $/Mtok a lower one."""
    priced = any(row.usd_per_hour is not None for row in plan.rows)
    head = ["GPU", "GPUs", "layout", "KV/weights", "fits", "needs", "holds", "context", "limit",
            "tok/s ≤"]
    head += ["$/hour", "$/Mtok ≥"] * priced
    lines = []
    for row in plan.rows:
        cells = [row.gpu, str(row.gpus), row.layout.words(), f"{row.kv_dtype}/{row.weights_dtype or '-'}",
                 _FITS[row.fits], _count(row.batch), _count(row.max_concurrency), _count(row.max_context_tokens), row.limit,
                 "-" if row.decode_tokens_per_s is None else f"{float(row.decode_tokens_per_s):,.0f}"]
        if priced:
            cells += [_usd(row.usd_per_hour), _usd(row.usd_per_million_tokens)]
        lines.append(cells)
    widths = [max(len(cells[i]) for cells in [head] + lines) for i in range(len(head))]
    left = {0, 2, 3, 4, 8}          # words to the left, numbers to the right

    def line(cells):
        return "  ".join(c.ljust(w) if i in left else c.rjust(w) for i, (c, w) in enumerate(zip(cells, widths)))\
            .rstrip()
    if plan.everything:
        title = "What do I need? Every GPU count and layout tried, those that fit first, by GPUs then $/hour:"
    else:
        title = "What do I need? The smallest deployment that fits, per GPU type, by GPUs then $/hour:"
    out = [title, "", line(head)] + [line(cells) for cells in lines]
    if not plan.rows:
        out.append("(no GPU considered)")
    out.append("")
    out += _named_lines(plan, priced)
    out.append("needs: the requests in flight it must hold; holds: how many fit; context: the longest for those")
    out.append("limit: what stops more (kv: memory for the cache; context: the model's own limit)")
    out.append("tok/s: decode, all requests together; ≤ an upper bound, ≥ a lower bound")
    notes = list(plan.notes)
    if not plan.everything:
        notes.append("--plan-all for every GPU count and layout tried"
                     + " (the cheapest here is of the rows shown, the smallest per GPU type)" * priced)
    beside = sorted({part for row in plan.rows for part, n in row.beside if n})
    if beside:
        notes.append(f"every row counts what each GPU holds beside the model's weights ({', '.join(beside)}), "
                     "as its layout places it")
    for note in notes:
        out.extend(_wrap(f"note: {note}"))
    return "\n".join(out)


def _named_lines(plan: Plan, priced: bool) -> list[str]:
    """The rows the plan names, with their flags: the fewest GPUs, and with prices the cheapest."""
    fewest, cheapest = plan.fewest, plan.cheapest
    if fewest is None:
        return ["fewest GPUs: none of these fits"]
    lines = [f"fewest GPUs: {fewest.words()}: {' '.join(row_flags(fewest))}"]
    if cheapest is not None:
        lines.append(f"cheapest: {cheapest.words()} at {cost_words(plan, cheapest)}: {' '.join(row_flags(cheapest))}")
    elif priced:
        lines.append("cheapest: no fitting row has a price")
    return lines


def _wrap(text: str, width: int = 110) -> list[str]:
    """A note in lines of at most `width` (textwrap's job, kept out of the page's imports)."""
    lines, line = [], ""
    for word in text.split(" "):
        if line and len(line) + 1 + len(word) > width:
            lines.append(line)
            line = "  " + word
        else:
            line = f"{line} {word}" if line else word
    return lines + [line]


# Where the verdict's KV memory comes from when it is not the engine's estimate, which the plan is
# (it drops a deployment's measurements, ask.DEPLOYMENT_INPUTS): a log's or the one given
# (kv-memory-gib), or a log's parts re-estimated for the inputs on screen (measured-with).
MEASURED_BUDGETS = (BudgetSource.GIVEN_KV_MEMORY, BudgetSource.MEASURED)


def withheld(scenario, evaluation, unit: str = "gib") -> str | None:
    """Why the plan does not size the verdict's question, in one clause, or None when it does:
    a verdict that rests on a measured KV memory (a log's, kv-memory-gib, measured-with), or on a
    contradiction between it and the inputs, is not the planner's estimate of each deployment,
    so no row of the plan may be named beside it as what it needs."""
    engine = evaluation.engine
    if engine is None or engine.budget_source not in MEASURED_BUDGETS:
        return None
    estimates = f"the plan sizes from {title(engine.engine)}'s estimates"
    if engine.budget_source is BudgetSource.MEASURED:
        return f"{estimates}, not the log's measurements"
    kv = engine.kv_budget_bytes_per_gpu
    if kv is None or kv < 0:
        return f"{estimates}, not the measured KV memory"
    return f"{estimates}, not the measured KV memory of {size(kv, unit)} per GPU"


def _deployment(values: dict) -> tuple:
    """The single view's deployment as the plan's rows set it (plan.Row.values): GPU, GPU count,
    pp, dp, ep and the precisions (None: the model's own)."""
    gpus = values.get("gpus", 1)
    return (values.get("gpu"), int(gpus), int(values.get("pp", 1)), int(values.get("dp", 1)),
            values.get("ep") == "on",
            values.get("kv-dtype"), values.get("weights-dtype"))


def _is_view(row: Row, values: dict) -> bool:
    """The row is the deployment the single view sized (its precisions where the row keeps the
    inputs' own)."""
    view = _deployment(values)
    kv, weights = row.values.get("kv-dtype", view[5]), row.values.get("weights-dtype", view[6])
    return (row.gpu, row.gpus, row.layout.pp, row.layout.dp, row.layout.ep, kv, weights) == view


def pointer(plan: Plan, values: dict) -> str | None:
    """What a verdict that does not fit says the user needs: the smallest deployment of their own
    GPU type that fits, and the plan's best row when that is another GPU type or fewer GPUs
    ("16 x H100 (tp 8, pp 2) fits 6 requests; fewest GPUs: 8 x H200 (tp 8) fits 5 requests"),
    and with prices the cheapest row when it is none of those ("; cheapest: 8 x MI300X (tp 4,
    dp 2, ep) fits 630 requests at $0.477/M tokens served ($17.60/hour)"). `values` are the single view's inputs: a
    row that is its own deployment is never named (the verdict has just said it does not fit).
    None when nothing else fits."""
    rows = [row for row in plan.rows if row.fits and not _is_view(row, values)]
    best = rows[0] if rows else None
    own = next((row for row in rows if row.gpu == values.get("gpu")), None)
    if own is None:
        named = [] if best is None else [best]
        words = None if best is None else best.words()
    elif best is own or (best.gpu == own.gpu and best.gpus == own.gpus):
        named, words = [own], own.words()
    else:
        named, words = [own, best], f"{own.words()}; fewest GPUs: {best.words()}"
    cheapest = plan.cheapest
    if cheapest is None or cheapest in named or _is_view(cheapest, values):
        return words
    cheap = f"cheapest: {cheapest.words()} at {cost_words(plan, cheapest)}"
    return cheap if words is None else f"{words}; {cheap}"
