"""One GPU's memory as a bar, as the sizing in force lays it out: the exact ideal's (memory x
utilization, the overhead you set) or the chosen engine's (its usable memory, its overhead
estimate, the KV pool it allocates whole). Pure, exact ints."""

from ..engines import REGISTRY
from ..engines.result import BudgetSource
from ..serving import WEIGHT_PARTS
from .report import usable_bytes_per_gpu

# Each part's words, for the legend and the bar's label: the engine's pool is allocated whole at
# start-up, so what the requests do not use is still the cache's, not free memory.
IDEAL_LABELS = {"weights": "Weights", "kv": "KV cache", "overhead": "Overhead", "free": "Free",
                "reserved": "Kept back (1 − utilization)"}


def memory_bar(evaluation, scenario) -> dict:
    """{total, usable, weights, draft, lora, encoder, kv, overhead, free, reserved, over, fits,
    labels} per GPU, bytes (None without a GPU). `over` is how far the parts pass the usable
    memory. What runs beside the model (a draft, LoRA slots, an encoder kept whole) has its own
    segments, carved out of the weights the engine loads with them."""
    bar = _bar(evaluation, scenario)
    added = dict(scenario.serving.added)
    weights = bar["weights"]
    for part, label in WEIGHT_PARTS.items():
        n = min(added.get(part, 0), weights)
        bar[part], weights = n, weights - n
        bar["labels"][part] = label
    bar["weights"] = weights
    return bar


def _bar(evaluation, scenario) -> dict:
    result = evaluation.result
    if evaluation.engine is not None and evaluation.engine.kv_budget_bytes_per_gpu is not None \
            and result.gpu_memory_bytes is not None:
        return _engine_bar(evaluation, scenario)
    total = result.gpu_memory_bytes
    overhead = scenario.deployment.overhead_bytes if evaluation.engine is None else \
        evaluation.engine.overhead_bytes_per_gpu or 0
    parts = {"weights": result.weights_bytes_per_gpu or 0, "kv": result.kv_bytes_per_gpu, "overhead": overhead}
    used = sum(parts.values())
    usable = None if total is None else int(total * scenario.deployment.memory_utilization)
    parts["reserved"] = None if total is None else total - usable
    parts["free"] = None if total is None else usable - used
    over = None if total is None else max(0, used - usable)
    return {"total": total, "usable": usable, **parts, "over": over, "fits": total is None or used <= usable,
            "labels": dict(IDEAL_LABELS)}


def _engine_bar(evaluation, scenario) -> dict:
    result = evaluation.result
    engine, work = evaluation.engine, scenario.workload
    module = REGISTRY[engine.engine]
    name = module.TITLE
    total = result.gpu_memory_bytes
    weights = engine.weights_bytes_per_gpu     # a log's, where it measured them
    if weights is None:
        weights = result.weights_bytes_per_gpu or 0
    pool = max(0, engine.kv_budget_bytes_per_gpu)
    asked = work.batch * (engine.kv_bytes_per_request or 0)
    if engine.kv_bytes_on_busiest_gpu is not None:
        asked = engine.kv_bytes_on_busiest_gpu      # what it allocates on this GPU, its layers' share
    # Requests past what a started engine holds wait their turn; one that does not start is drawn
    # with what was asked for, so the overflow shows past the line.
    in_use = min(asked, pool) if engine.starts else asked
    usable = usable_bytes_per_gpu(evaluation)
    whole = module.ALLOCATES_WHOLE_BUDGET
    labels = {"weights": "Weights", "kv": "KV cache in use by the requests" if whole else "KV cache",
              "free": f"KV pool not in use ({name} allocates it whole at start-up)" if whole else "Free"}
    if usable is None:
        # A KV memory read from a log: only the pool is known; the rest is one part.
        overhead, reserved = max(0, total - weights - pool), 0
        labels.update(overhead=f"The rest (your log gives only {name}'s KV memory)", reserved="—")
        usable = total
    else:
        overhead, reserved = engine.overhead_bytes_per_gpu or 0, total - usable
        what = {BudgetSource.ESTIMATE: "estimated", BudgetSource.MEASURED: "the log's, re-estimated"}.get(engine.budget_source, "yours")
        labels.update(overhead=f"Overhead ({name}, {what})", reserved=f"Kept back by {name}'s memory cap")
    over = 0 if engine.starts else max(0, weights + overhead + in_use - usable)
    free = max(0, (pool if whole else usable - weights - overhead) - in_use)
    return {"total": total, "usable": usable, "weights": weights, "kv": in_use, "overhead": overhead,
            "free": free, "reserved": reserved, "over": over, "fits": bool(engine.starts), "labels": labels}
