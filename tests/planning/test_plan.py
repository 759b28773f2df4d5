"""The planner (issue 25, the engine half): what do I need? For every GPU type the smallest
deployment that serves the workload as the engine sizes it, each row the single view of its own
inputs.

Worked examples, by hand, with the source of every number:
- Llama 3.1 70B (meta-llama/Llama-3.1-70B; app/kvcalc/data/models.json, its verbatim config.json:
  80 layers, 64 attention heads of 8,192 / 64 = 128, 8 KV heads, bf16; 70,553,706,496 parameters)
  at 8,192 tokens x 64 requests:
    KV per token   2 (K, V) x 80 x 8 x 128 x 2 B            =         327,680 B
    KV, all 64     64 x 8,192 x 327,680 B                    = 171,798,691,840 B
    weights        70,553,706,496 x 2 B                       = 141,107,412,992 B
  GPU memory from app/kvcalc/data/gpus.json: H100 SXM 85,520,809,984 B (PyTorch's total
  85,061,827,297 B, what vLLM multiplies), A100 SXM4 80GB 85,899,345,920 B (PyTorch 85,100,068,864 B).
- DeepSeek-V3 (deepseek-ai/DeepSeek-V3: 61 layers of MLA, a latent of 512 + a rope part of 64,
  671e9 parameters in fp8) at 131,072 tokens under vLLM.
vLLM's rules (docs/engines-and-releases.md): --gpu-memory-utilization 0.92 of
PyTorch's total by default from 0.20.0 (rounded up from 0.14.0), pages of 16 tokens (64 for MLA on
Hopper, FlashMLA), num_blocks = KV memory // (the layers' pages together), the concurrency
num_blocks / the blocks one request needs.
"""

import math
from fractions import Fraction

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from kvcalc.planning import plan as planner
from kvcalc.planning.ask import ask_from
from kvcalc.planning.bounds import gpu_memory, need_bytes, screen_bytes
from kvcalc.planning.candidates import Layout, gpu_counts_on, layouts, with_layout
from kvcalc.planning.probe import verdict_fits
from kvcalc.planning.rows import Row
from kvcalc.readers import gpu_presets, presets
from kvcalc.errors import InputError
from kvcalc.evaluation import begin, evaluate
from kvcalc.inputs.options import parse_options
from kvcalc.reports.report import to_json

GIB = 1 << 30
L70 = "meta-llama/Llama-3.1-70B"
L70_KV_PER_TOKEN = 2 * 80 * 8 * 128 * 2
L70_KV_ALL = 64 * 8192 * L70_KV_PER_TOKEN
L70_WEIGHTS = 70_553_706_496 * 2
H100, A100, H200 = "h100-sxm-80gb", "a100-sxm-80gb", "h200-141gb"
H100_MEMORY, H100_TORCH = 85_520_809_984, 85_061_827_297
A100_MEMORY, A100_TORCH = 85_899_345_920, 85_100_068_864
VLLM_UTILIZATION = Fraction(92, 100)
HYPOTHESIS = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def typed(**raw) -> dict:
    """Typed values from the inputs as a form holds them (keys with '-' spelled with '_')."""
    values, errors = parse_options({k.replace("_", "-"): str(v) for k, v in raw.items()})
    assert not errors, errors
    return values


def smallest(values: dict, gpu: str) -> Row:
    rows = [row for row in planner.plan(dict(values, **{"plan-gpus": (gpu,)})).rows if row.gpu == gpu]
    assert len(rows) == 1
    return rows[0]


def test_hand_arithmetic_the_preset_agrees_with():
    # The figures the module docstring works out, as the calculator itself computes them.
    result = evaluate(typed(model=L70, context=8192, batch=64)).result
    assert result.kv_bytes_per_token == L70_KV_PER_TOKEN == 327_680
    assert result.kv_bytes_total == L70_KV_ALL == 171_798_691_840
    assert result.weights_bytes == L70_WEIGHTS == 141_107_412_992
    assert gpu_presets.gpu(H100).memory_bytes == H100_MEMORY and gpu_presets.gpu(H100).torch_memory_bytes == H100_TORCH
    assert gpu_presets.gpu(A100).memory_bytes == A100_MEMORY and gpu_presets.gpu(A100).torch_memory_bytes == A100_TORCH


@pytest.mark.parametrize("gpu, memory", [(H100, H100_MEMORY), (A100, A100_MEMORY)])
def test_llama70b_exact_ideal_smallest_is_four_gpus_tp4(gpu, memory):
    # The exact ideal: all of the memory (utilization 1), no overhead, KV heads split over tp.
    # 2 GPUs: 141.1e9 / 2 + 171.8e9 / 2 = 156.5e9 B a GPU, more than ~85.5e9 B. 4 GPUs, tp 4:
    per_gpu = L70_WEIGHTS // 4 + L70_KV_ALL // 4
    assert per_gpu == 78_226_526_208 < memory
    assert L70_WEIGHTS // 2 + L70_KV_ALL // 2 > memory
    row = smallest(typed(model=L70, context=8192, batch=64), gpu)
    assert (row.gpus, row.layout) == (4, Layout(4))
    assert row.fits and row.limit == "kv"
    # Requests that fit: (memory - weights a GPU) // one request's KV a GPU (8,192 x 327,680 / 4).
    assert row.max_concurrency == (memory - L70_WEIGHTS // 4) // (8192 * L70_KV_PER_TOKEN // 4)
    assert row.max_concurrency == {H100: 74, A100: 75}[gpu]


@pytest.mark.parametrize("gpu, torch_memory, holds", [(H100, H100_TORCH, 171), (A100, A100_TORCH, 176)])
def test_llama70b_vllm_smallest_is_eight_gpus_tp8(gpu, torch_memory, holds):
    values = typed(model=L70, context=8192, batch=64, engine="vllm")
    usable = math.ceil(torch_memory * VLLM_UTILIZATION)
    # 4 GPUs, tp 4: the weights and the 64 requests' blocks (8,192 / 16 = 512 blocks each, exactly
    # the tokens) leave 30 MB (H100) for everything else; vLLM's overhead alone is more (its
    # non-torch memory at tp 4 is 1.6 GiB, docs/engines-and-releases.md), so tp 4 does not start with 64 requests.
    room = usable - L70_WEIGHTS // 4 - L70_KV_ALL // 4
    four = evaluate(dict(values, gpu=gpu, gpus=4))
    assert four.engine.overhead_bytes_per_gpu > max(room, 0) and four.capacity < 64
    if gpu == H100:
        assert room == 30_354_906
    row = smallest(values, gpu)
    assert (row.gpus, row.layout) == (8, Layout(8)) and row.fits
    # 8 GPUs, tp 8: one KV head a GPU, 16 x 128 x 2 x 2 B = 8,192 B a page and layer, 80 layers a block.
    engine = evaluate(row.values).engine
    # the weights as vLLM loads them: its share, the rope cache (131,072 x 128 x 2 B) and the 161
    # RMSNorms of 8,192 every rank holds whole (quantized_bytes.vllm_loaded_extra)
    assert engine.weights_bytes_per_gpu == L70_WEIGHTS // 8 + 131_072 * 128 * 2 + 161 * 8192 * 2 * 7 // 8
    assert engine.kv_budget_bytes_per_gpu == usable - engine.weights_bytes_per_gpu - engine.overhead_bytes_per_gpu
    num_blocks = engine.kv_budget_bytes_per_gpu // (80 * 16 * 128 * 2 * 2)
    assert row.max_concurrency == num_blocks // (8192 // 16) == holds


def test_deepseek_v3_128k_vllm_h100_needs_pipeline_stages_h200_does_not():
    values = typed(model="deepseek-ai/DeepSeek-V3", context=131072, engine="vllm")
    weights = evaluate(values).result.weights_bytes
    assert weights > 671 * 10 ** 9          # fp8, one byte a parameter, and the parts kept in bf16
    # 8 x H100: each GPU holds at least weights / 8, more than vLLM's 0.92 x 85.06e9 B: none starts.
    assert weights / 8 > H100_TORCH * VLLM_UTILIZATION
    h100 = smallest(values, H100)
    assert (h100.gpus, h100.layout) == (16, Layout(8, 2)) and h100.fits
    # 8 x H200 (150.1e9 B as PyTorch counts it): weights / 8 and the 64-token MLA blocks of one
    # request's latent, 61 x (512 + 64) x 2 B x 131,072, copied on every tensor-parallel GPU, fit.
    latent = 61 * (512 + 64) * 2 * 131072
    assert weights / 8 + latent < gpu_presets.gpu(H200).torch_memory_bytes * VLLM_UTILIZATION
    assert weights / 4 > gpu_presets.gpu(H200).torch_memory_bytes * VLLM_UTILIZATION
    h200 = smallest(values, H200)
    assert (h200.gpus, h200.layout) == (8, Layout(8)) and h200.fits


# Row by row: each row is what the single view gives for its inputs (evaluate, report.to_json).
AGREEMENT = [
    ("meta-llama/Llama-3.1-8B", "vllm", 8192, 64, ("h100-sxm-80gb", "l4-24gb", "mi300x-192gb")),
    ("Qwen/Qwen3-30B-A3B", "sglang", 8192, 32, ("h100-sxm-80gb", "rtx-4090-24gb")),
    ("Qwen/Qwen3-30B-A3B", "vllm", 4096, 16, ("a100-sxm-40gb", "l40s-48gb")),
    ("deepseek-ai/DeepSeek-V2-Lite", "vllm", 32768, 8, ("h100-sxm-80gb", "a10g-24gb")),
    ("openai/gpt-oss-20b", "llama.cpp", 32768, 4, ("rtx-4090-24gb", "m3-max-128gb", "t4-16gb")),
    ("google/gemma-3-12b-it", None, 16384, 8, ("l4-24gb", "h100-sxm-80gb")),
    ("google/gemma-3-12b-it", "vllm", 16384, 8, ("l4-24gb",)),
]


def _agree(row: Row):
    evaluation = evaluate(row.values)
    if not evaluation.ok:
        assert row.fits is False and row.max_concurrency is None
        assert row.why == f"{evaluation.errors[0].field}: {evaluation.errors[0].message}"
        return
    single = to_json(evaluation.scenario, evaluation)
    assert row.max_concurrency == single["max_concurrency"]
    assert row.max_context_tokens == single["max_context"]
    assert row.fits == single["fits"]
    shown = None if row.decode_tokens_per_s is None else float(row.decode_tokens_per_s)
    assert shown == (single["decode_tokens_per_s_total"] if single["fits"] else None)


@pytest.mark.parametrize("model, engine, context, batch, gpus", AGREEMENT)
def test_every_row_is_the_single_view(model, engine, context, batch, gpus):
    raw = dict(model=model, context=context, batch=batch, plan_gpus=",".join(gpus), plan_max_gpus=16)
    if engine:
        raw["engine"] = engine
    values = typed(**raw)
    smallest_rows = planner.plan(values).rows
    assert [row.gpu for row in smallest_rows] and {row.gpu for row in smallest_rows} == set(gpus)
    everything = planner.plan(values, everything=True).rows
    for row in smallest_rows + everything[::3]:
        _agree(row)


@pytest.mark.parametrize("model, engine, context, batch, gpus", AGREEMENT[:5])
def test_the_smallest_row_is_the_first_fitting_deployment_of_all(model, engine, context, batch, gpus):
    # The count skip and the per-layout screen never skip what would fit: the plan's row is the
    # first fitting row of the exhaustive table (every count, every layout, in their order).
    raw = dict(model=model, context=context, batch=batch, plan_gpus=",".join(gpus), plan_max_gpus=16)
    if engine:
        raw["engine"] = engine
    values = typed(**raw)
    ask = ask_from(values)
    for gpu in gpus:
        every = planner.gpu_rows(ask, gpu, everything=True)
        fitting = [row for row in every if row.fits]
        (row,) = planner.gpu_rows(ask, gpu)
        if fitting:
            assert (row.gpus, row.layout) == (fitting[0].gpus, fitting[0].layout)
            assert row == fitting[0]
        else:
            assert not row.fits


def test_a_price_gives_dollars_an_hour_and_a_bound_per_million_tokens():
    values = typed(model="meta-llama/Llama-3.1-8B", context=8192, batch=64, engine="vllm",
                   plan_gpus="h100-sxm-80gb,l4-24gb", prices="h100-sxm-80gb=2.49")
    result = planner.plan(values)
    h100 = next(row for row in result.rows if row.gpu == H100)
    l4 = next(row for row in result.rows if row.gpu == "l4-24gb")
    assert h100.usd_per_hour == Fraction("2.49") * h100.gpus
    step = evaluate(h100.values).timing.decode_step_seconds
    assert h100.decode_tokens_per_s == Fraction(64) / step
    # $/Mtok = $/hour / (tokens/s x 3,600 s) x 10^6: a lower bound, as the decode rate is an upper one.
    assert h100.usd_per_million_tokens == h100.usd_per_hour * 10 ** 6 / (h100.decode_tokens_per_s * 3600)
    assert l4.usd_per_hour is None and l4.usd_per_million_tokens is None
    assert not any("no prices given" in note for note in result.notes)


def test_nothing_fits_names_the_closest_deployment_and_what_limits_it():
    # Llama 3.1 405B in bf16 is 811e9 B; 8 x T4 (16e9 B) cannot hold the weights whatever the layout.
    values = typed(model="meta-llama/Llama-3.1-405B", context=8192, batch=1, engine="vllm",
                   plan_gpus="t4-16gb", plan_max_gpus=8)
    (row,) = planner.plan(values).rows
    assert not row.fits and row.gpus == 8 and row.limit == "weights"
    assert planner.plan(values).best is None
    # Past what pipeline stages reach (tp 8 x its 126 layers), more GPUs only add replicas: the row
    # is the deployment that comes closest, 1,008 GPUs of tp 8 x pp 126, short of the rate.
    values = typed(model="meta-llama/Llama-3.1-405B", context=131072, batch=256, plan_gpus="t4-16gb",
                   plan_max_gpus=4096, rate=50, output_tokens=1000)
    (row,) = planner.plan(values).rows
    assert not row.fits and (row.gpus, row.layout) == (1008, Layout(8, 126)) and row.limit == "rate"


def test_limits_are_named():
    # The model's own context limit (Llama 3.1: 131,072 positions).
    # No count or layout changes that: the search ends at the first deployment.
    values = typed(model="meta-llama/Llama-3.1-8B", context=262144, engine="vllm", plan_gpus="h100-sxm-80gb",
                   plan_max_gpus=4096)
    (row,) = planner.plan(values).rows
    assert not row.fits and row.limit == "context" and row.gpus == 1
    # SGLang's hybrid state pools of Qwen3-Next are modelled from 0.5.9: an older release is refused.
    values = typed(model="Qwen/Qwen3-Next-80B-A3B-Instruct", engine="sglang", engine_version="0.5.6",
                   plan_gpus="h100-sxm-80gb", plan_max_gpus=4)
    (row,) = planner.plan(values).rows
    assert not row.fits and row.limit == "hybrid" and "hybrid" in row.why
    # A refusal of the model, not of a layout, ends the search at the first deployment tried: llama.cpp
    # does not model MLA caches. DeepSeek-V3's 671e9 fp8 parameters need 8 x 85.5e9 B at least.
    values = typed(model="deepseek-ai/DeepSeek-V3", engine="llama.cpp", plan_gpus="h100-sxm-80gb")
    (row,) = planner.plan(values).rows
    assert not row.fits and row.limit == "engine" and row.gpus == 8 and "not modelled" in row.why


def test_layouts_the_engines_allow():
    model = evaluate(typed(model="meta-llama/Llama-3.1-8B")).scenario.model
    dense = layouts(16, model, "vllm")
    assert dense[0] == Layout(8, 2)
    assert all(layout.gpus == 16 and layout.pp <= 32 and not layout.ep for layout in dense)
    assert Layout(8, dp=2) in dense
    # SGLang's data-parallel ranks are DP attention: for a mixture of experts only.
    assert all(layout.dp == 1 for layout in layouts(16, model, "sglang"))
    # llama.cpp: no tensor or data parallelism; it splits the layers over its GPUs.
    assert layouts(4, model, "llama.cpp") == [Layout(1, 4)]
    assert layouts(64, model, "llama.cpp") == []          # more GPUs than its 32 layers
    moe = evaluate(typed(model="Qwen/Qwen3-30B-A3B")).scenario.model
    assert Layout(8, ep=True) in layouts(8, moe, "vllm")
    assert Layout(2, dp=4, ep=True) in layouts(8, moe, "sglang")
    # tp only where the heads divide: Qwen3-30B-A3B has 4 KV heads and 32 query heads.
    assert all(moe.attention_heads % layout.tp == 0 for n in (1, 2, 4, 8, 16) for layout in layouts(n, moe, None))
    # A machine whose memory the CPU shares is one device.
    values = typed(model="meta-llama/Llama-3.1-8B", plan_gpus="m3-max-128gb")
    assert [row.gpus for row in planner.plan(values, everything=True).rows] == [1]


# Little's law: N = rate x (TTFT + output tokens x decode step at N), the least fixed point.
def _needed(values: dict, batch: int, rate: Fraction, output: int) -> int:
    timing = evaluate(dict(values, batch=batch)).timing
    return max(1, math.ceil(rate * (timing.ttft_seconds + output * timing.decode_step_seconds)))


@pytest.mark.parametrize("model, engine, gpu, rate", [
    ("meta-llama/Llama-3.1-8B", "vllm", "h100-sxm-80gb", 20),
    ("Qwen/Qwen3-30B-A3B", "sglang", "h200-141gb", 40),
    ("meta-llama/Llama-3.1-70B", None, "a100-sxm-80gb", "2.5"),
])
def test_littles_law_concurrency_is_the_least_fixed_point(model, engine, gpu, rate):
    raw = dict(model=model, context=8192, plan_gpus=gpu, rate=rate, output_tokens=512)
    if engine:
        raw["engine"] = engine
    values = typed(**raw)
    result = planner.plan(values)
    (row,) = result.rows
    assert row.fits and row.batch > 1
    assert row.values["prompt-tokens"] == 8192 - 512
    # N is a fixed point (the requests in flight at N need no more than N) and the least (N - 1 is not).
    assert _needed(row.values, row.batch, Fraction(rate), 512) <= row.batch
    assert _needed(row.values, row.batch - 1, Fraction(rate), 512) > row.batch - 1
    assert row.max_concurrency >= row.batch
    _agree(row)
    assert any("Little's law" in note and "lower bound" in note for note in result.notes)


def test_a_rate_past_what_the_deployment_decodes_does_not_fit():
    # 1,000 requests/s of 512 tokens: ~15,000 at once. (At 100,000/s, 1.5 million: vLLM from 0.27.0
    # keeps sampler statistics for every one of --max-num-seqs, which alone overflows the GPUs.)
    values = typed(model="meta-llama/Llama-3.1-8B", context=8192, engine="vllm", plan_gpus="l4-24gb",
                   plan_max_gpus=2, rate=1000, output_tokens=512)
    (row,) = planner.plan(values).rows
    assert not row.fits and row.limit == "rate" and row.batch > row.max_concurrency
    assert planner.plan(values).best is None


@pytest.mark.parametrize("raw, field", [
    ({"prices": "no-such-gpu=2"}, "prices"),
    ({"prices": "h100-sxm-80gb=-1"}, "prices"),
    ({"prices": "h100-sxm-80gb=5000"}, "prices"),
    ({"plan-max-gpus": "0"}, "plan-max-gpus"),
    ({"plan-max-gpus": "100000"}, "plan-max-gpus"),
    ({"rate": "0", "output-tokens": "100"}, "rate"),
    ({"rate": "nan", "output-tokens": "100"}, "rate"),
    ({"plan-gpus": "no-such-gpu"}, "plan-gpus"),
    ({"plan-kv-dtypes": "fp7"}, "plan-kv-dtypes"),
])
def test_bad_plan_inputs_name_their_option(raw, field):
    _, errors = parse_options(dict(raw, model="meta-llama/Llama-3.1-8B"))
    assert errors and errors[0].field == field, errors


@pytest.mark.parametrize("raw, field", [
    ({"rate": "1"}, "output-tokens"),
    ({"rate": "1", "output-tokens": "8192", "context": "8192"}, "output-tokens"),
    ({"engine": "vllm", "plan-gpus": "m3-max-128gb"}, "plan-gpus"),
])
def test_plan_refusals_name_their_option(raw, field):
    values, errors = parse_options(dict(raw, model="meta-llama/Llama-3.1-8B"))
    assert not errors
    with pytest.raises(InputError) as refused:
        ask_from(values)
    assert refused.value.field == field


def test_precisions_allowed_give_the_smallest_over_them():
    values = typed(model=L70, context=8192, batch=64, engine="vllm", plan_gpus="h100-sxm-80gb",
                   plan_kv_dtypes="bf16,fp8", plan_weights_dtypes="bf16,fp8")
    (row,) = planner.plan(values).rows
    # fp8 weights (70.6 GB) and an fp8 cache (86 GB for the 64) fit on 4 x H100; bf16 of both needs 8.
    assert row.fits and row.gpus < 8 and (row.weights_dtype, row.kv_dtype) != ("bf16", "bf16")
    _agree(row)
    everything = planner.plan(values, everything=True).rows
    assert {(r.weights_dtype, r.kv_dtype) for r in everything} == {(w, k) for w in ("bf16", "fp8")
                                                                    for k in ("bf16", "fp8")}


def test_deployment_inputs_are_left_out_with_a_note():
    values = typed(model="meta-llama/Llama-3.1-8B", gpu="h100-sxm-80gb", gpus=2, gpu_memory_gib=40,
                   plan_gpus="l4-24gb")
    result = planner.plan(values)
    assert any("gpu-memory-gib" in note for note in result.notes)
    assert all("gpu-memory-gib" not in row.values for row in result.rows)


def test_form_values_and_words():
    values = typed(model="deepseek-ai/DeepSeek-V3", context=131072, engine="vllm", plan_gpus="h100-sxm-80gb")
    (row,) = planner.plan(values).rows
    assert row.form_values()["gpus"] == "16" and row.form_values()["pp"] == "2"
    assert row.words().startswith("16 x NVIDIA H100 SXM 80GB (tp 8, pp 2) fits")


def test_curve_rises_with_the_gpus():
    ask = ask_from(typed(model=L70, context=8192, batch=64, engine="vllm", plan_max_gpus=32))
    points = planner.curve(ask, H100)
    assert [n for n, _ in points] == [1, 2, 4, 8, 16, 24, 32]
    held = [held for _, held in points]
    assert held[0] == 0 and held == sorted(held) and held[3] == 171     # 8 GPUs: the row of the worked example


# Properties. Presets that every engine sizes, contexts and batches drawn at random.
MODELS = ("meta-llama/Llama-3.1-8B", "Qwen/Qwen3-30B-A3B", "deepseek-ai/DeepSeek-V2-Lite", "openai/gpt-oss-20b",
          "google/gemma-3-4b-it", "mistralai/Mixtral-8x7B-v0.1")
GPUS = ("h100-sxm-80gb", "l4-24gb", "a100-sxm-40gb", "mi300x-192gb")


@HYPOTHESIS
@given(model=st.sampled_from(MODELS), engine=st.sampled_from((None, "vllm", "sglang", "llama.cpp")),
       context=st.sampled_from((1024, 8192, 32768)), batch=st.integers(1, 96), gpu=st.sampled_from(GPUS),
       tp=st.sampled_from((1, 2, 4)), grow=st.sampled_from(("pp", "dp")))
def test_more_gpus_in_the_same_layout_never_hold_fewer_requests(model, engine, context, batch, gpu, tp, grow):
    if engine == "llama.cpp" and (grow == "dp" or tp > 1):
        return                                     # llama.cpp: no data or tensor parallelism
    base = dict(model=model, context=context, batch=batch, gpu=gpu, tp=tp)
    if engine:
        base["engine"] = engine
    held = []
    for n in (1, 2, 4, 8):
        raw = dict(base, **{grow: n}, gpus=tp * n)
        evaluation = evaluate(typed(**raw))
        if not evaluation.ok:
            break                                  # a layout the model does not split into (more stages than layers)
        held.append(evaluation.capacity or 0)
    assert held == sorted(held), held


@HYPOTHESIS
@given(model=st.sampled_from(MODELS), engine=st.sampled_from((None, "vllm", "sglang", "llama.cpp")),
       context=st.sampled_from((2048, 16384, 65536)), batch=st.integers(1, 128),
       gpus=st.lists(st.sampled_from(GPUS), min_size=2, max_size=4, unique=True),
       priced=st.booleans())
def test_rows_are_sorted_as_documented(model, engine, context, batch, gpus, priced):
    raw = dict(model=model, context=context, batch=batch, plan_gpus=",".join(gpus), plan_max_gpus=16)
    if engine:
        raw["engine"] = engine
    if priced:
        raw["prices"] = ",".join(f"{gpu}={i + 1}" for i, gpu in enumerate(gpus[::2]))
    values = typed(**raw)
    result = planner.plan(values)
    rows = result.rows
    assert len(rows) == len(gpus) and {row.gpu for row in rows} == set(gpus)
    keys = [(not row.fits, row.gpus, row.usd_per_hour is None, row.usd_per_hour or 0, -(row.max_concurrency or 0))
            for row in rows]
    assert keys == sorted(keys)
    assert result.best is (rows[0] if rows[0].fits else None)


@HYPOTHESIS
@given(model=st.sampled_from(MODELS), engine=st.sampled_from((None, "vllm", "sglang", "llama.cpp")),
       context=st.sampled_from((4096, 32768, 131072)), batch=st.integers(1, 256), gpu=st.sampled_from(GPUS))
def test_the_search_finds_what_the_exhaustive_table_finds(model, engine, context, batch, gpu):
    raw = dict(model=model, context=context, batch=batch, plan_gpus=gpu, plan_max_gpus=16)
    if engine:
        raw["engine"] = engine
    ask = ask_from(typed(**raw))
    try:
        every = planner.gpu_rows(ask, gpu, everything=True)
    except InputError:
        return                                     # the model or workload refused: no plan at all
    fitting = [row for row in every if row.fits]
    (row,) = planner.gpu_rows(ask, gpu)
    assert row == (fitting[0] if fitting else row) and bool(row.fits) == bool(fitting)


ALL_MODELS = tuple(entry["id"] for entry in presets.model_entries())


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(model=st.sampled_from(ALL_MODELS), engine=st.sampled_from((None, "vllm", "sglang", "llama.cpp")),
       context=st.sampled_from((2048, 32768, 131072)), batch=st.integers(1, 64),
       gpu=st.sampled_from(GPUS + ("b200-180gb", "rtx-4090-24gb", "m3-ultra-512gb")),
       count=st.sampled_from((1, 2, 4, 8, 16)), pick=st.integers(0, 7))
def test_what_fits_is_never_below_the_lower_bounds(model, engine, context, batch, gpu, count, pick):
    # The search's two lower bounds, against the full evaluation of any deployment: what fits
    # holds at least the exact ideal's weights and KV on its busiest GPU, and all its GPUs together
    # at least the ideal's weights and every request's cache.
    raw = dict(model=model, context=context, batch=batch)
    if engine:
        raw["engine"] = engine
    values = typed(**raw)
    try:
        ask = ask_from(dict(values, **{"plan-gpus": (gpu,)}))     # vLLM and SGLang refuse Apple's
        model_of = planner._model(ask, dict(values, gpu=gpu))
    except InputError:
        return
    options = layouts(count, model_of, engine)
    if not options or gpu_presets.gpu(gpu).unified_memory and count > 1:
        return
    row_values = with_layout(dict(values, gpu=gpu), options[pick % len(options)])
    evaluation = evaluate(row_values)
    if not (evaluation.ok and verdict_fits(evaluation)):
        return
    memory = gpu_memory(gpu_presets.gpu(gpu))
    screen = screen_bytes(begin(row_values, searches=False), engine)
    assert screen is None or screen <= memory
    need = need_bytes(ask, values)
    assert need is None or need <= count * memory


@pytest.mark.parametrize("raw", [
    dict(model="meta-llama/Llama-3.1-8B", context=8192, batch=64, engine="vllm", gpu="l4-24gb", gpus=2),
    dict(model="deepseek-ai/DeepSeek-V3", context=131072, engine="sglang", gpu="h200-141gb", gpus=8, dp=8, ep="on"),
    dict(model="openai/gpt-oss-20b", context=32768, batch=4, engine="llama.cpp", gpu="rtx-4090-24gb"),
    dict(model="google/gemma-3-12b-it", context=16384, batch=8, gpu="l4-24gb", gpus=2, pp=2),
    dict(model="meta-llama/Llama-3.1-70B", context=8192, batch=64, engine="vllm", gpu="h100-sxm-80gb", gpus=4),
])
def test_the_halves_the_planner_uses_are_evaluate(raw):
    from kvcalc.evaluation import begin, carry_on, searched
    values = typed(**raw)
    whole, quick = evaluate(values), evaluate(values, searches=False)
    assert carry_on(begin(values, False), False).result == quick.result
    assert carry_on(begin(values)).result == whole.result
    assert searched(quick).result == whole.result and searched(begin(values, False)).result == whole.result


# ---- MIG instances (issue 41, part 4a) ---------------------------------------------------------

MIG_3G = "h100-sxm-80gb-mig-3g-40gb"


def test_a_mig_instance_is_planned_only_when_named_and_as_one_device():
    """The default list is the whole GPUs (every one at 12 precision pairs stays within MAX_SEARCHES);
    a MIG instance named in plan-gpus is one device: one row of 1 GPU. Llama 3.1 8B at 8,192 x 16 on the
    3g.40gb holds 24 requests in the exact ideal: (42,412,802,048 - 16,060,522,496) // 1,073,741,824."""
    everything = ask_from(typed(model="meta-llama/Llama-3.1-8B", engine="vllm"))
    assert not any(gpu_presets.gpu(gpu_id).mig_of for gpu_id in everything.gpus)
    assert gpu_counts_on(gpu_presets.gpu(MIG_3G), 64) == [1] and gpu_counts_on(gpu_presets.gpu(H100), 16) == [1, 2, 4, 8, 16]
    row = smallest(typed(model="meta-llama/Llama-3.1-8B", context=8192, batch=16), MIG_3G)
    assert (row.gpus, row.layout.tp, row.fits, row.max_concurrency) == (1, 1, True, 24)


def test_a_whole_gpus_price_does_not_price_its_mig_instances():
    values = typed(model="meta-llama/Llama-3.1-8B", context=8192, batch=16, plan_gpus=f"H100 SXM,{MIG_3G}",
                   prices="H100=2.49")
    result = planner.plan(values)
    (mig,) = [row for row in result.rows if row.gpu == MIG_3G]
    assert mig.usd_per_hour is None
    assert ("unpriced MIG instances: h100-sxm-80gb-mig-3g-40gb (a whole GPU's price does not price its instances; "
            "give each its own, e.g. \"H100 3g.40gb=1.20\")") in result.notes
    priced = planner.plan(dict(values, prices=(("h100-sxm-80gb", Fraction("2.49")), (MIG_3G, Fraction("1.2")))))
    assert [row.usd_per_hour for row in priced.rows if row.gpu == MIG_3G] == [Fraction("1.2")]
    assert not any("unpriced MIG" in note for note in priced.notes)


@pytest.mark.parametrize("raw, field", [({"gpus": "2"}, "gpus"), ({"tp": "2"}, "tp"), ({"pp": "2", "gpus": "2"}, "gpus")])
def test_a_mig_instance_runs_no_multi_gpu_layout(raw, field):
    result = evaluate({"model": "meta-llama/Llama-3.1-8B", "gpu": MIG_3G, **raw})
    (error,) = result.errors
    assert (error.field, error.message) == (field, "h100-sxm-80gb-mig-3g-40gb is one MIG instance, one device with "
                                                   "no peer link: it runs on 1 GPU, not 2; give 1 GPU, or the whole "
                                                   "h100-sxm-80gb for several")
