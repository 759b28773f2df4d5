"""The plan's rows in words and JSON: one function per form, shared by the CLI and the page."""

from .plan import Plan, Row


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
    }


def plan_json(plan: Plan) -> dict:
    return {"plan": [row_json(row) for row in plan.rows], "plan_notes": list(plan.notes),
            "plan_everything": plan.everything,
            "plan_best": None if plan.best is None else plan.best.words()}
