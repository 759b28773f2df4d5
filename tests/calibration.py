"""The vLLM overhead estimate against the real start-up logs it is calibrated on.

Each row of tests/fixtures/logs/overhead-calibration.json names a log fixture, the inputs it implies
and the figures it prints. What vLLM subtracted besides the weights is what the log implies:
total x utilization - weights - available KV memory. Our estimate for the same inputs, and its
band, come from the engine as the CLI and page call it.
"""

import json
import statistics
from fractions import Fraction

from kvcalc.engines import releases
from kvcalc.engines.vllm import engine as vllm, profile as vllm_profile
from kvcalc.evaluation import evaluate
from support import FIXTURES

GIB = 1 << 30
TABLE = FIXTURES / "logs" / "overhead-calibration.json"


def rows() -> list[dict]:
    return json.loads(TABLE.read_text(encoding="utf-8"))["logs"]


# A calibration row's keys and the inputs they are.
ROW_INPUTS = (("gpu", "gpu"), ("gpu_memory_gib", "gpu-memory-gib"), ("utilization", "memory-utilization"),
              ("max_num_seqs", "batch"), ("max_num_batched_tokens", "prefill-chunk"), ("entry", "vllm-entry"),
              ("engine_variant", "vllm-engine"), ("enforce_eager", "enforce-eager"), ("runner", "vllm-runner"))


def inputs(row: dict) -> dict:
    values = {"engine": "vllm", "engine-version": row["version"], "context": str(row["context"]),
              "gpus": str(row["tp"]), "tp": str(row["tp"])}
    values["model" if "model" in row else "hf-config"] = row.get("model") or row["config"]
    for key, option in ROW_INPUTS:
        if key in row:
            values[option] = str(row[key]) if isinstance(row[key], int) else row[key]
    if "weights_gib" in row["printed"]:
        values["weights-gib"] = str(row["printed"]["weights_gib"])
    return values


def printed_overhead(row: dict, evaluation) -> float | None:
    """GiB the log implies vLLM subtracted besides the weights, or None when it prints too little."""
    p = row["printed"]
    if "weights_gib" not in p or "kv_gib" not in p:
        return None
    if "requested_gib" in p:
        requested = p["requested_gib"]
    else:
        dep, settings = evaluation.scenario.deployment, evaluation.scenario.settings
        util = Fraction(row["utilization"]) if "utilization" in row else \
            vllm.rules.default_utilization(settings.release)
        total = p.get("total_gib") or (dep.torch_memory_bytes or dep.gpu_memory_bytes) / GIB
        requested = float(total * util)
    return requested - p["weights_gib"] - p["kv_gib"]


def printed_activation(estimate, scenario) -> float:
    """Our figure for the log's "peak activation", GiB: from 0.27.0 vLLM prints the transient peak plus the
    CUDA-graph estimate it subtracts (gpu_worker.py determine_available_memory: peak_activation_memory =
    transient_peak_headroom + cudagraph_memory_estimate_applied); the torch peak increase alone before."""
    graphs = estimate.cudagraph if scenario.settings.release.at_least(0, 27, 0) else 0
    return (estimate.activation + graphs) / GIB


def check(row: dict) -> dict:
    """Ours against the log's, in GiB: the total with its band, and the activation where printed."""
    e = evaluate(inputs(row))
    assert e.ok, (row["file"], e.errors)
    engine, scenario = e.engine, e.scenario
    estimate = vllm_profile.estimate(scenario, scenario.settings.release, engine.prefill_chunk,
                                     vllm.max_num_seqs(scenario))
    out = {"file": row["file"], "release": str(releases.pep440(row["version"]).key[:3]),
           "version": row["version"], "excluded": row.get("excluded", ""),
           "total": printed_overhead(row, e), "ours": estimate.total / GIB,
           "low": estimate.low / GIB, "high": estimate.high / GIB,
           "activation": row["printed"].get("activation_gib"), "our_activation": printed_activation(estimate, scenario),
           "multimodal": scenario.model.multimodal}
    return out


def checked() -> list[dict]:
    # An excluded row is left out, but for one whose total alone is excluded ("total: ..."): its
    # activation peak still counts.
    return [check(row) for row in rows() if not row.get("excluded") or row["excluded"].startswith("total:")]


def release_of(version: str) -> str:
    """The release a version's rules come from, as the table in docs/engines-and-releases.md groups them."""
    found = releases.pep440(version)
    major, minor, patch = found.key[:3]
    return f"{major}.{minor}.x"


def markdown_table() -> str:
    """docs/engines-and-releases.md's table: per release line, the logs, and the median and worst error of the overhead
    estimate (ours - the log's, GiB)."""
    by_release: dict[str, list[float]] = {}
    inside: dict[str, int] = {}
    activation: dict[str, list[float]] = {}
    for out in checked():
        key = release_of(out["version"])
        if out["total"] is not None and not out["excluded"]:
            by_release.setdefault(key, []).append(out["ours"] - out["total"])
            inside[key] = inside.get(key, 0) + (out["low"] <= out["total"] <= out["high"])
        if out["activation"] is not None:
            activation.setdefault(key, []).append(out["our_activation"] - out["activation"])
    lines = ["| vLLM release | logs (total / activation) | inside the band | overhead error, median | worst | "
             "activation error, median | worst |",
             "| --- | --- | --- | --- | --- | --- | --- |"]

    def fmt(errors):
        if not errors:
            return "-", "-"
        worst = max(errors, key=abs)
        return f"{statistics.median(errors):+.2f} GiB", f"{worst:+.2f} GiB"
    for key in sorted(set(by_release) | set(activation), key=lambda k: tuple(int(p) for p in k[:-2].split("."))):
        totals, acts = by_release.get(key, []), activation.get(key, [])
        lines.append(f"| {key} | {len(totals)} / {len(acts)} | {inside.get(key, 0)} of {len(totals)} | " +
                     " | ".join(fmt(totals)) + " | " + " | ".join(fmt(acts)) + " |")
    return "\n".join(lines)
