"""The charts' series (issue 23, point 8 and the charts' share of point 2): fixed styles by what a
line is, the context axis ending at the model's limit, the decode chart's compute ceiling, and,
with an engine chosen, the engine's own KV memory and capacity at every point."""

import itertools
import math
import re
from dataclasses import replace
from fractions import Fraction

import pytest

from kvcalc import engines
from kvcalc.reports.compare import attention_variants
from kvcalc.errors import InputError
from kvcalc.evaluation import evaluate
from kvcalc.precision import PRECISIONS
from kvcalc.sizing import compute
from kvcalc.reports.sweep import (
    CHART_KEYS, CHART_PRECISIONS, SERIES_STYLES, concurrency_series, context_points, decode_series, engine_answers,
    line_end, memory_series, style_key)
from kvcalc.reports import sweep

from support import ROOT


def evaluated(**values):
    e = evaluate({k.replace("_", "-"): str(v) for k, v in values.items()})
    assert e.ok, e.errors
    return e


# ---- the styles ---------------------------------------------------------------------------

def page_backgrounds() -> tuple[str, str]:
    """--bg of the light page and of the dark one, as static/style.css sets them."""
    css = (ROOT / "static" / "style.css").read_text(encoding="utf-8")
    light = re.search(r":root\s*{[^}]*--bg:\s*(#[0-9a-fA-F]{6})", css).group(1)
    dark = re.search(r"prefers-color-scheme:\s*dark\)\s*{\s*:root\s*{[^}]*--bg:\s*(#[0-9a-fA-F]{6})", css).group(1)
    return light, dark


def linear(hex_colour: str) -> list[float]:
    channels = [int(hex_colour[i:i + 2], 16) / 255 for i in (1, 3, 5)]
    return [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]


def contrast(a: str, b: str) -> float:
    """WCAG contrast ratio."""
    la, lb = (0.2126 * r + 0.7152 * g + 0.0722 * b_ for r, g, b_ in (linear(a), linear(b)))
    return (max(la, lb) + 0.05) / (min(la, lb) + 0.05)


def lab(hex_colour: str) -> tuple[float, float, float]:
    r, g, b = linear(hex_colour)
    x, y, z = ((0.4124 * r + 0.3576 * g + 0.1805 * b) / 0.95047, 0.2126 * r + 0.7152 * g + 0.0722 * b,
               (0.0193 * r + 0.1192 * g + 0.9505 * b) / 1.08883)

    def f(t):
        return t ** (1 / 3) if t > 0.008856 else 7.787 * t + 16 / 116
    return 116 * f(y) - 16, 500 * (f(x) - f(y)), 200 * (f(y) - f(z))


def test_every_style_reads_on_both_pages():
    light_bg, dark_bg = page_backgrounds()
    for key, (light, dark, dash) in SERIES_STYLES.items():
        assert contrast(light, light_bg) >= 3, (key, light)      # WCAG's 3:1 for lines and marks
        assert contrast(dark, dark_bg) >= 3, (key, dark)
        assert dash is None or (len(dash) % 2 == 0 and all(d > 0 for d in dash)), key


def test_lines_drawn_together_differ_in_colour_and_in_dash():
    for chart, keys in CHART_KEYS.items():
        for a, b in itertools.combinations(keys, 2):
            for theme in (0, 1):
                distance = math.dist(lab(SERIES_STYLES[a][theme]), lab(SERIES_STYLES[b][theme]))
                assert distance >= 20, (chart, a, b, theme, distance)    # CIE76: clearly apart
            if chart != "chart-roofline":       # the roofline's two points are dots on a line
                assert SERIES_STYLES[a][2] != SERIES_STYLES[b][2], (chart, a, b)


def test_each_design_and_precision_has_its_style_whatever_the_model():
    labels = set()
    for model in ("meta-llama/Llama-3.1-8B", "deepseek-ai/DeepSeek-V2-Lite", "tiiuae/falcon-7b", "google/gemma-2-9b"):
        e = evaluated(model=model)
        rows = attention_variants(e.scenario)
        lines = memory_series(e.scenario, context_points(e.scenario))["lines"]
        # The key is the design itself, never its place: MQA is second on DeepSeek-V2-Lite, third on Llama.
        assert [line["key"] for line in lines] == [row.label for row in rows]
        assert [line["current"] for line in lines] == [row.current for row in rows]
        labels |= {row.label for row in rows}
    assert labels == {"MHA", "GQA", "MQA", "MLA"}
    assert all(style_key(label) == label for label in labels)
    assert all(style_key(name) == name for name in CHART_PRECISIONS)
    # Any other precision is only ever drawn as the current one, beside the four: one shared style.
    others = {style_key(name) for name in PRECISIONS if name not in CHART_PRECISIONS}
    assert others == {"other precision"}
    assert style_key("something new") == "other"


# ---- the context axis ---------------------------------------------------------------------

def test_the_axis_ends_at_the_models_limit():
    llama = evaluated(model="meta-llama/Llama-3.1-8B", context=8192).scenario
    assert context_points(llama)[0] == 512 and context_points(llama)[-1] == 131072 == line_end(llama)
    deepseek = evaluated(model="deepseek-ai/DeepSeek-V3", context=8192).scenario
    points = context_points(deepseek)
    assert points[-1] == 163840 == line_end(deepseek) and 131072 in points and 262144 not in points
    gemma = evaluated(model="google/gemma-2-9b", context=4096).scenario
    assert context_points(gemma)[-1] == 8192                       # no longer 128K
    assert context_points(gemma) == [512, 1024, 2048, 4096, 8192]


def test_a_context_past_the_limit_is_a_point_the_lines_do_not_reach():
    s = evaluated(model="google/gemma-2-9b", context=20000).scenario
    points = context_points(s)
    assert points[-2:] == [8192, 20000] and line_end(s) == 8192


def test_without_a_limit_the_axis_ends_at_128k_or_the_context():
    custom = dict(layers=32, kv_heads=8, head_dim=128)
    s = evaluated(**custom, context=8192).scenario
    assert s.model.max_context_tokens is None and line_end(s) is None
    assert context_points(s)[-1] == 131072
    assert context_points(evaluated(**custom, context=300000).scenario)[-1] == 300000


# ---- with an engine chosen: the engine's own answers --------------------------------------

def engine_size(scenario, result, context, name):
    """engines.size at one point, as the brief states it: (capacity in whole requests, KV memory)."""
    work = scenario.workload
    at = replace(scenario, workload=replace(work, context_tokens=context, kv_precision=PRECISIONS[name],
                                            prefix_tokens=min(work.prefix_tokens, context)))
    try:
        out = engines.size(at, result)
    except InputError:
        return None, None
    capacity = None if out.starts is None else int(out.max_concurrency) if out.starts else 0
    return capacity, out.kv_budget_bytes_per_gpu


ENGINE_CASES = [
    dict(model="meta-llama/Llama-3.1-8B", gpu="h100-sxm-80gb", engine="vllm"),
    dict(model="meta-llama/Llama-3.1-8B", gpu="h100-sxm-80gb", engine="vllm", batch=64, kv_dtype="fp8"),
    dict(model="meta-llama/Llama-3.1-8B", gpu="h100-sxm-80gb", engine="vllm", kv_memory_gib="20.5"),
    dict(model="meta-llama/Llama-3.1-8B", gpu="h100-sxm-80gb", engine="vllm", overhead_gib="3"),
    dict(model="meta-llama/Llama-3.1-8B", gpu="h100-sxm-80gb", engine="vllm", prefill_chunk=512),
    # V0 prefills a whole prompt of max_model_len below 32K: its profiling run, and so its KV
    # memory, follows the context.
    dict(model="meta-llama/Llama-3.1-8B", gpu="h100-sxm-80gb", engine="vllm", engine_version="0.6.4"),
    dict(model="deepseek-ai/DeepSeek-V3", gpu="h200-141gb", gpus=8, engine="vllm"),
    dict(model="meta-llama/Llama-3.1-70B", gpu="h100-sxm-80gb", gpus=4, engine="sglang", context=32768),
    dict(model="google/gemma-2-9b", gpu="l4-24gb", engine="sglang", context=20000),       # past its limit
    dict(model="meta-llama/Llama-3.1-8B", gpu="rtx-4090-24gb", engine="llama.cpp", weights_dtype="q4_0", batch=4),
    dict(model="Qwen/Qwen3-32B", gpu="rtx-4090-24gb", engine="llama.cpp", weights_dtype="q4_0", context=32768),
]


@pytest.mark.parametrize("case", ENGINE_CASES, ids=lambda c: "-".join(str(v) for v in c.values()))
def test_engine_series_are_the_engines_answers(case):
    e = evaluated(**case)
    s, r = e.scenario, e.result
    contexts = context_points(s)
    conc = concurrency_series(s, contexts, r)
    module = engines.REGISTRY[engines.engine_name(s.settings.engine)]
    names = [line["label"] for line in conc["lines"]]
    assert names and all(module.stores(PRECISIONS[name]) for name in names)
    assert set(names) >= {n for n in CHART_PRECISIONS if module.stores(PRECISIONS[n])}
    assert conc["engine"] == engines.title(module.NAME)
    for line in conc["lines"]:
        assert line["requests"] == [engine_size(s, r, c, line["label"])[0] for c in contexts], line["label"]
    # At the current context and precision: the page's headline capacity.
    at = contexts.index(s.workload.context_tokens)
    current = next(line for line in conc["lines"] if line["current"])
    assert current["label"] == s.workload.kv_precision.name
    assert current["requests"][at] == e.capacity is not None
    # The budget line: the engine's KV memory at each context, the headline's at the current one.
    budget = memory_series(s, contexts, r)["budget"]
    assert budget["label"] == f"KV memory per GPU ({conc['engine']})"
    assert budget["bytes"] == [engine_size(s, r, c, current["label"])[1] for c in contexts]
    assert budget["bytes"][at] == e.engine.kv_budget_bytes_per_gpu


def test_vllm_stores_no_gguf_types_and_llama_cpp_no_fp8():
    vllm = concurrency_series(*(lambda e: (e.scenario, context_points(e.scenario), e.result))(
        evaluated(model="meta-llama/Llama-3.1-8B", gpu="h100-sxm-80gb", engine="vllm")))
    assert [line["label"] for line in vllm["lines"]] == ["bf16", "fp8"]
    e = evaluated(model="meta-llama/Llama-3.1-8B", gpu="rtx-4090-24gb", engine="llama.cpp", weights_dtype="q4_0")
    assert [line["label"] for line in concurrency_series(e.scenario, context_points(e.scenario), e.result)["lines"]] \
        == ["bf16", "q8_0", "q4_0"]


def test_the_engines_budget_follows_the_context_where_the_engine_does():
    # llama.cpp's compute buffer grows with the cells it attends: less KV memory at longer contexts.
    e = evaluated(model="meta-llama/Llama-3.1-8B", gpu="rtx-4090-24gb", engine="llama.cpp", weights_dtype="q4_0")
    values = memory_series(e.scenario, context_points(e.scenario), e.result)["budget"]["bytes"]
    assert values == sorted(values, reverse=True) and values[0] > values[-1]
    # vLLM V0's profiling run prefills max_model_len tokens up to 32K, 2,048 a step above.
    e = evaluated(model="meta-llama/Llama-3.1-8B", gpu="h100-sxm-80gb", engine="vllm", engine_version="0.6.4")
    contexts = context_points(e.scenario)
    values = dict(zip(contexts, memory_series(e.scenario, contexts, e.result)["budget"]["bytes"]))
    assert values[2048] > values[8192] > values[32768] and values[65536] == values[2048]
    # SGLang from 0.5.13 captures its prefill graphs up to min(chunk, context), 8 MiB a size
    # (engines/sglang/release.py): below the chunk a shorter context reserves less; from it, flat.
    e = evaluated(model="meta-llama/Llama-3.1-8B", gpu="h100-sxm-80gb", engine="sglang")
    contexts = context_points(e.scenario)
    values = dict(zip(contexts, memory_series(e.scenario, contexts, e.result)["budget"]["bytes"]))
    chunk = e.engine.prefill_chunk
    assert len({v for c, v in values.items() if c >= chunk}) == 1
    assert values[min(contexts)] > values[max(contexts)]
    # vLLM V1 sets its memory aside whatever the context: a flat line.
    e = evaluated(model="meta-llama/Llama-3.1-8B", gpu="h100-sxm-80gb", engine="vllm")
    assert len(set(memory_series(e.scenario, context_points(e.scenario), e.result)["budget"]["bytes"])) == 1


def test_edits_of_the_context_rerun_the_engine_for_the_new_points_only(monkeypatch):
    runs = []
    real = sweep._answer
    monkeypatch.setattr(sweep, "_answer", lambda *a: runs.append(a[2]) or real(*a))      # (scenario, result, context, precision)
    base = dict(model="meta-llama/Llama-3.1-8B", gpu="h100-sxm-80gb", engine="vllm", batch=3)
    first = evaluated(**base, context=8192)
    concurrency_series(first.scenario, context_points(first.scenario), first.result)
    assert len(runs) == 2 * len(context_points(first.scenario))           # bf16 and fp8 at every point
    runs.clear()
    second = evaluated(**base, context=9000)
    conc = concurrency_series(second.scenario, context_points(second.scenario), second.result)
    assert runs == [9000, 9000]                                            # the new point, both precisions
    at = context_points(second.scenario).index(9000)
    assert next(line for line in conc["lines"] if line["current"])["requests"][at] == second.capacity
    # Any other input starts afresh: a new batch changes vLLM's --max-num-seqs and its estimate.
    runs.clear()
    third = evaluated(**base | {"batch": 200}, context=9000)
    conc = concurrency_series(third.scenario, context_points(third.scenario), third.result)
    assert len(runs) == 2 * len(context_points(third.scenario))
    assert next(line for line in conc["lines"] if line["current"])["requests"][at] == third.capacity


def test_engine_answers_without_a_result_size_it_first():
    e = evaluated(model="meta-llama/Llama-3.1-8B", gpu="h100-sxm-80gb", engine="sglang")
    contexts = context_points(e.scenario)
    assert engine_answers(e.scenario, None, contexts, ["bf16"]) == engine_answers(e.scenario, e.result, contexts, ["bf16"])


def test_no_memory_no_engine_lines():
    e = evaluated(model="meta-llama/Llama-3.1-8B", engine="vllm")
    assert concurrency_series(e.scenario, context_points(e.scenario), e.result)["lines"] == []
    assert memory_series(e.scenario, context_points(e.scenario), e.result)["budget"] is None


def test_without_an_engine_the_exact_ideal_as_before():
    e = evaluated(model="meta-llama/Llama-3.1-70B", gpu="h100-sxm-80gb", gpus=8, batch=16, context=16384,
                  memory_utilization="0.9", engine="exact")
    assert e.scenario.settings.engine is None
    contexts = context_points(e.scenario)
    mem = memory_series(e.scenario, contexts, e.result)
    assert mem["budget"] == {"label": "KV budget per GPU", "bytes": [e.result.kv_budget_bytes_per_gpu] * len(contexts)}
    conc = concurrency_series(e.scenario, contexts, e.result)
    assert conc["engine"] is None and [line["label"] for line in conc["lines"]] == list(CHART_PRECISIONS)
    for line in conc["lines"]:
        for c, v in zip(contexts, line["requests"]):
            work = replace(e.scenario.workload, context_tokens=c, kv_precision=PRECISIONS[line["label"]],
                           prefix_tokens=0)
            assert v == compute(e.scenario.model, work, e.scenario.deployment, searches=False).max_concurrency


# ---- the decode chart ---------------------------------------------------------------------

@pytest.mark.parametrize("case", [
    dict(model="meta-llama/Llama-3.1-8B", gpu="h100-sxm-80gb", context=32768, batch=8),
    dict(model="meta-llama/Llama-3.1-8B", gpu="h100-sxm-80gb", context=512, batch=3, engine="exact"),
    dict(model="meta-llama/Llama-3.1-70B", gpu="h100-sxm-80gb", gpus=4, context=2048, batch=24),
])
def test_decode_series_ceiling_and_chosen_batch(case):
    e = evaluated(**case)
    s, r, t = e.scenario, e, e.timing
    series = decode_series(s, r, t)
    assert series["chosen"] == s.workload.batch in series["batches"]
    per_token = t.decode_flops // s.workload.batch
    assert per_token * s.workload.batch == t.decode_flops
    ceiling = Fraction(s.deployment.tp * t.peak_flops_per_s, per_token)
    assert series["ceiling"] == [ceiling] * len(series["batches"])
    assert all(total <= ceiling for total in series["total"])
    bound = series["compute_bound_batch"]
    assert bound == t.compute_bound_batch
    # From the compute-bound batch on, all requests together decode at the ceiling; below it, under.
    for batch, total in zip(series["batches"], series["total"]):
        assert (total == ceiling) == (bound is not None and batch >= bound), batch
