"""Chart series: the same scenario swept over context length. Pure, exact ints."""

from dataclasses import replace

from .compare import attention_variants_models
from .scenario import Scenario
from .precision import PRECISIONS
from .sizing import _max_concurrency, batch_bytes

CHART_PRECISIONS = ("bf16", "fp8", "q8_0", "q4_0")


def context_points(scenario: Scenario) -> list[int]:
    """Powers of two from 512 up to the model's limit (or 128K), plus the current context."""
    current = scenario.workload.context_tokens
    top = max(current, scenario.model.max_context_tokens or 131_072)
    points = {1 << k for k in range(9, 41) if (1 << k) <= top} | {current, top}
    return sorted(points)


def kv_per_gpu(model, workload, deployment, context: int) -> int:
    # cache_bytes clamps the shared prefix to the context itself.
    return max(batch_bytes(stage, context, workload, workload.batch, deployment.tp)
               for stage, _ in model.stage_groups(deployment.pp))


def memory_series(scenario: Scenario, contexts: list[int]) -> dict:
    """KV bytes on the most loaded GPU against context, one line per attention design, with
    the weights and the KV budget per GPU as flat lines (None where unknown)."""
    dep = scenario.deployment
    lines = []
    for label, model in attention_variants_models(scenario):
        try:
            model.check_parallel(dep.tp, dep.pp)
        except ValueError:
            continue
        lines.append({"label": label, "bytes": [kv_per_gpu(model, scenario.workload, dep, c) for c in contexts]})
    weights = dep.weights_bytes_per_gpu
    budget = None
    if dep.gpu_memory_bytes is not None and weights is not None:
        budget = int(dep.gpu_memory_bytes * dep.memory_utilization) - weights - dep.overhead_bytes
    return {"contexts": contexts, "lines": lines, "weights_bytes_per_gpu": weights, "kv_budget_bytes_per_gpu": budget}


def concurrency_series(scenario: Scenario, contexts: list[int]) -> dict:
    """Max concurrent requests against context, one line per KV precision (empty without a GPU)."""
    dep = scenario.deployment
    if dep.gpu_memory_bytes is None or dep.weights_bytes is None:
        return {"contexts": contexts, "lines": []}
    budget = int(dep.gpu_memory_bytes * dep.memory_utilization) - dep.weights_bytes_per_gpu - dep.overhead_bytes
    stages = [stage for stage, _ in scenario.model.stage_groups(dep.pp)]
    names = list(CHART_PRECISIONS)
    if scenario.workload.kv_precision.name not in names:
        names.insert(0, scenario.workload.kv_precision.name)
    lines = []
    for name in names:
        work = replace(scenario.workload, kv_precision=PRECISIONS[name])
        values = [_max_concurrency(stages, c, work, budget, dep.tp) for c in contexts]
        lines.append({"label": name, "requests": values})
    return {"contexts": contexts, "lines": lines}


def memory_bar(result, scenario: Scenario) -> dict:
    """One GPU's memory split: weights, KV, overhead, the share the utilization cap keeps back,
    and what is left (None without a GPU). `over` is how far the first three pass the cap."""
    total = result.gpu_memory_bytes
    parts = {"weights": result.weights_bytes_per_gpu or 0, "kv": result.kv_bytes_per_gpu,
             "overhead": scenario.deployment.overhead_bytes}
    used = sum(parts.values())
    usable = None if total is None else int(total * scenario.deployment.memory_utilization)
    parts["reserved"] = None if total is None else total - usable
    parts["free"] = None if total is None else usable - used
    over = None if total is None else max(0, used - usable)
    return {"total": total, "usable": usable, **parts, "over": over, "fits": total is None or used <= usable}
