#!/usr/bin/env python3
"""Planner benchmark: plan.plan for a model preset over every GPU preset, in this Python.

    .venv/bin/python bench/plan.py [--runs N] [--engine vllm|sglang|llama.cpp|exact] [--everything]

Each case runs once cold (a fresh model memo: the first plan after the preset is picked), then N
times with the batch moved by one each run (so no result is reused, only the model's per-layer
work, as on the page while one types), timed with time.perf_counter. Prints the cold time and
p50 / p95 of the runs. The page's target is 100 ms p95 in Pyodide, which runs this code about 2-3x
slower than CPython. A benchmark: it prints figures and asserts nothing.
"""

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "app"))

from kvcalc.planning import plan
from kvcalc.readers import gpu_presets  # noqa: E402
from kvcalc.errors import InputError  # noqa: E402
from kvcalc.inputs.options import parse_options  # noqa: E402

CASES = (
    ("meta-llama/Llama-3.1-8B", 8192, 64),
    ("meta-llama/Llama-3.1-70B", 8192, 64),
    ("deepseek-ai/DeepSeek-V3", 131072, 1),
    ("Qwen/Qwen3-30B-A3B", 8192, 64),
)


def percentile(samples: list, p: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))]


def values_for(model: str, context: int, batch: int, engine: str) -> dict:
    raw = {"model": model, "context": str(context), "batch": str(batch)}
    if engine != "exact":
        raw["engine"] = engine
    values, errors = parse_options(raw)
    if errors:
        raise SystemExit(f"{model}: {errors[0]}")
    return values


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--engine", default="vllm", choices=("vllm", "sglang", "llama.cpp", "exact"))
    parser.add_argument("--everything", action="store_true", help="every count and layout, not the smallest")
    parser.add_argument("--limits", action="store_true", help="the largest plans ask.check_bounds allows, timed once")
    args = parser.parse_args()
    if args.limits:
        limits(args.engine)
        return
    print(f"plan.plan over {len(gpu_presets.whole_gpus())} GPU presets, engine {args.engine}, {args.runs} runs, "
          f"Python {sys.version.split()[0]}")
    for model, context, batch in CASES:
        start = time.perf_counter()
        result = plan.plan(values_for(model, context, batch, args.engine), args.everything)
        cold = time.perf_counter() - start
        samples = []
        for i in range(args.runs):
            values = values_for(model, context, batch + 1 + i, args.engine)
            start = time.perf_counter()
            plan.plan(values, args.everything)
            samples.append(time.perf_counter() - start)
        best = result.best
        print(f"{model:28} {context:>7,} x {batch:<3} cold {cold * 1000:6.1f} ms   p50 "
              f"{statistics.median(samples) * 1000:6.1f} ms   p95 {percentile(samples, 95) * 1000:6.1f} ms   "
              f"{len(result.rows)} rows; fewest GPUs: {best.words() if best else 'none'}")


def limits(engine: str) -> None:
    """The planner at its bounds (issue 34): up to 4096 GPUs over every GPU type at 12 precision
    pairs (MAX_SEARCHES), the whole table at the largest GPU count MAX_EVERY_COUNT allows, and a
    single view past them, refused at once."""
    every = "fp32,fp16,bf16,fp8,fp8_e4m3,fp8_e5m2,int8,int4,q8_0,q5_1,q5_0,q4_1,q4_0,iq4_nl,nvfp4"
    base = {"model": "meta-llama/Llama-3.1-70B", "context": "131072", "batch": "4096", "plan-max-gpus": "4096"}
    if engine != "exact":
        base["engine"] = engine
    cases = (("4096 GPUs, 4 KV x 3 weight precisions", dict(base, **{"plan-kv-dtypes": "fp8,bf16,int4,fp16",
                                                                     "plan-weights-dtypes": "bf16,fp8,int4"}), False),
             ("whole table, up to 64 GPUs (the default)", dict(base, **{"plan-max-gpus": "64"}), True),
             ("whole table, up to 128 GPUs (near MAX_EVERY_COUNT)", dict(base, **{"plan-max-gpus": "128"}), True),
             ("4096 GPUs, 15 x 15 precisions (refused)", dict(base, **{"plan-kv-dtypes": every,
                                                                       "plan-weights-dtypes": every}), False),
             ("whole table, 4096 GPUs (refused)", base, True))
    for label, raw, everything in cases:
        values, errors = parse_options(raw)
        start, cpu = time.perf_counter(), time.process_time()
        try:
            found = plan.plan(values, everything)
            said = f"{len(found.rows)} rows; fewest GPUs: {found.best.words() if found.best else 'none'}"
        except InputError as e:
            said = f"refused: {e.field}: {e.message[:70]}"
        print(f"{label:44} {(time.perf_counter() - start) * 1000:8.0f} ms wall {(time.process_time() - cpu) * 1000:8.0f} "
              f"ms CPU   {said}")


if __name__ == "__main__":
    main()
