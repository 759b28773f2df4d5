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

from kvcalc import plan, presets  # noqa: E402
from kvcalc.options import parse_options  # noqa: E402

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
    args = parser.parse_args()
    print(f"plan.plan over {len(presets.gpus())} GPU presets, engine {args.engine}, {args.runs} runs, "
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
              f"{len(result.rows)} rows; best: {best.words() if best else 'none'}")


if __name__ == "__main__":
    main()
