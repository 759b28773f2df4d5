"""Cheapest and fewest: the two rows every plan names (issue 41).

The worked example is the issue's: Qwen/Qwen3-235B-A22B served at 10 requests/s with 1,024
output tokens each, on vLLM, with what the user pays per GPU-hour: H100 $2.49, H200 $3.50,
MI300X $2.20 (family names: "H100" prices the SXM, PCIe and NVL presets). Each GPU type's row is
its smallest deployment that holds the concurrency Little's law asks for. Its $/hour is the price
times the GPUs, and its $/M tokens the hour over the tokens its decode bound gives in an hour:
  8 x MI300X   8 x 2.20 = 17.60 $/hour
  8 x H200     8 x 3.50 = 28.00 $/hour
  16 x H100   16 x 2.49 = 39.84 $/hour
All serve the same 10 x 1,024 = 10,240 tokens/s, 36,864,000 an hour, so the cheapest per token is
the cheapest per hour: 8 x MI300X, $17.60 / 36.864 = $0.477 per million tokens served. The fewest
GPUs is 4 x MI355X (288 GB each), which has no price.
"""

import json
from fractions import Fraction

from hypothesis import given, strategies as st

from kvcalc.planning import plan as planner
from kvcalc.planning.candidates import Layout
from kvcalc.planning.plan_report import plan_json, plan_table, pointer
from kvcalc.planning.ranking import Plan
from kvcalc.planning.rows import Row
from kvcalc.inputs.options import parse_options

from support import cli

QWEN = ["--model", "Qwen/Qwen3-235B-A22B", "--engine", "vllm", "--rate", "10", "--output-tokens", "1024"]
PRICES = ["--price", "H100=2.49", "--price", "H200=3.5", "--price", "MI300X=2.2"]


def test_the_issue_s_workload_names_the_mi300x_cheapest_and_the_mi355x_fewest():
    code, out, err = cli(*QWEN, *PRICES, "--plan", "--json")
    assert code == 0, err
    data = json.loads(out)
    rows = data["plan"]
    cheapest, fewest = data["plan_cheapest"], data["plan_fewest"]
    assert (cheapest["gpu"], cheapest["gpus"], cheapest["usd_per_hour"]) == ("mi300x-192gb", 8, 17.6)
    assert cheapest["by"] == "usd_per_million_tokens_served" and cheapest["fits"]
    assert cheapest["usd_per_million_tokens_served"] == float(Fraction("17.60") * 10 ** 6 / (10 * 1024 * 3600))
    assert round(cheapest["usd_per_million_tokens_served"], 3) == 0.477
    assert rows[cheapest["index"]] == {k: v for k, v in cheapest.items()
                                       if k not in ("index", "words", "flags", "by", "usd_per_million_tokens_served")}
    assert cheapest["flags"] == ["--gpu", "mi300x-192gb", "--gpus", "8", "--dp", "2", "--ep", "on"]
    # The least $/hour of every fitting priced row: each the price times the GPUs.
    priced = [row for row in rows if row["fits"] and row["usd_per_hour"] is not None]
    assert {(row["gpu"], row["gpus"], row["usd_per_hour"]) for row in priced} >= {
        ("mi300x-192gb", 8, 17.6), ("h200-141gb", 8, 28.0), ("h100-sxm-80gb", 16, 39.84)}
    assert cheapest["usd_per_hour"] == min(row["usd_per_hour"] for row in priced)
    # Fewest GPUs: the first fitting row, 4 x MI355X, unpriced; plan_best keeps its words.
    assert (fewest["gpu"], fewest["gpus"], fewest["usd_per_hour"], fewest["index"]) == ("mi355x-288gb", 4, None, 0)
    assert data["plan_best"] == fewest["words"] == "4 x AMD Instinct MI355X 288GB (tp 4) fits 408 requests"


def _values(*extra: str, **more) -> dict:
    raw = {"model": "Qwen/Qwen3-235B-A22B", "engine": "vllm", "rate": "10", "output-tokens": "1024",
           "plan-gpus": "h100-sxm-80gb,h200-141gb,mi300x-192gb,mi355x-288gb", **more}
    values, errors = parse_options(raw)
    assert not errors, errors
    return values


def test_the_table_says_both_with_the_cost_it_was_chosen_by():
    plan = planner.plan(_values(prices="H100=2.49,H200=3.5,MI300X=2.2"))
    text = plan_table(plan)
    assert "fewest GPUs: 4 x AMD Instinct MI355X 288GB (tp 4) fits 408 requests: --gpu mi355x-288gb --gpus 4" in text
    assert "cheapest: 8 x AMD Instinct MI300X 192GB (tp 4, dp 2, ep) fits 630 requests at $0.477/M tokens served " \
           "($17.60/hour): --gpu mi300x-192gb --gpus 8 --dp 2 --ep on" in text
    assert plan.cheapest.usd_per_hour == 8 * Fraction("2.2")


def test_what_you_need_adds_the_cheapest_when_it_is_another_row():
    values = _values(prices="H100=2.49,H200=3.5,MI300X=2.2", gpu="h100-sxm-80gb", gpus="4")
    assert pointer(planner.plan(values), values) == (
        "16 x NVIDIA H100 SXM 80GB (tp 4, dp 4, ep) fits 424 requests; fewest GPUs: 4 x AMD Instinct MI355X 288GB "
        "(tp 4) fits 408 requests; cheapest: 8 x AMD Instinct MI300X 192GB (tp 4, dp 2, ep) fits 630 requests at "
        "$0.477/M tokens served ($17.60/hour)")
    # Without prices nothing is cheapest, and the words are as before.
    unpriced = _values(gpu="h100-sxm-80gb", gpus="4")
    assert pointer(planner.plan(unpriced), unpriced) == (
        "16 x NVIDIA H100 SXM 80GB (tp 4, dp 4, ep) fits 424 requests; fewest GPUs: 4 x AMD Instinct MI355X 288GB "
        "(tp 4) fits 408 requests")


def test_prices_on_no_fitting_row_name_no_cheapest_and_say_why():
    # Only the T4 is priced, and at 10 requests/s of Qwen3-235B no T4 deployment up to 64 fits.
    plan = planner.plan(_values(prices="T4=0.35", **{"plan-gpus": "t4-16gb,h200-141gb"}))
    assert plan.cheapest is None and plan.fewest.gpu == "h200-141gb"
    assert "no fitting row has a price, so none is named cheapest: price a GPU of a row that fits" in plan.notes
    assert "cheapest: no fitting row has a price" in plan_table(plan)
    assert plan_json(plan)["plan_cheapest"] is None


def _row(gpu: str, gpus: int, fits: bool, usd_per_hour, tokens_per_s) -> Row:
    return Row(gpu=gpu, gpu_name=gpu.upper(), layout=Layout(gpus), kv_dtype="bf16", weights_dtype="bf16", fits=fits,
               max_concurrency=10 if fits else 0, max_context_tokens=4096, limit="kv", why="", batch=8,
               decode_tokens_per_s=None if tokens_per_s is None else Fraction(tokens_per_s),
               usd_per_hour=None if usd_per_hour is None else Fraction(usd_per_hour), values={})


def test_at_a_rate_the_hour_decides_and_the_token_s_cost_is_over_the_tokens_served():
    # 2 x A at $4/hour and 4 x B at $6/hour both serve 1,000 tokens/s at the plan's rate: A costs
    # 4 x 10^6 / (1,000 x 3,600) = $1.11 per million tokens served, B $1.67. B's decode bound
    # (2,000 tok/s) is what it could do, not what the workload asks, so it does not make B cheaper.
    rows = (_row("a", 2, True, 4, 1000), _row("b", 4, True, 6, 2000), _row("c", 1, False, 1, None))
    plan = Plan(rows, (), False, served_tokens_per_s=Fraction(1000))
    assert plan.cheapest.gpu == "a" and plan.cheapest_by == "usd_per_million_tokens_served"
    assert plan.usd_per_million_tokens_served(rows[0]) == Fraction(4 * 10 ** 6, 1000 * 3600)
    assert Plan(rows, (), False).cheapest.gpu == "a" and Plan(rows, (), False).cheapest_by == "usd_per_hour"


def test_a_tie_goes_to_the_row_first_in_the_plan_s_order():
    rows = (_row("a", 2, True, 4, 1000), _row("b", 2, True, 4, 1000))
    assert Plan(rows, (), False, served_tokens_per_s=Fraction(1000)).cheapest is rows[0]


@given(st.lists(st.tuples(st.booleans(), st.one_of(st.none(), st.integers(1, 500)), st.integers(1, 5000)),
                max_size=8), st.one_of(st.none(), st.integers(1, 10 ** 6)))
def test_cheapest_is_the_least_hour_of_the_fitting_priced_rows(specs, served):
    rows = tuple(_row(f"g{i}", 1 + i, fits, price, tokens) for i, (fits, price, tokens) in enumerate(specs))
    plan = Plan(rows, (), False, None if served is None else Fraction(served))
    candidates = [row for row in rows if row.fits and row.usd_per_hour is not None]
    if not candidates:
        assert plan.cheapest is None
    else:
        least = min(row.usd_per_hour for row in candidates)
        assert plan.cheapest is next(row for row in candidates if row.usd_per_hour == least)
        if served is not None:
            assert plan.usd_per_million_tokens_served(plan.cheapest) == least * 10 ** 6 / (served * 3600)
    assert plan.fewest is next((row for row in rows if row.fits), None)


def test_a_price_note_names_what_was_typed_not_every_preset_it_covered():
    # "H100=2.49" prices the SXM, PCIe and NVL presets; with only the SXM considered the other two
    # are no news. "A100=1.2" priced four presets none of which is considered: named as typed.
    plan = planner.plan(_values(prices="H100=2.49,A100=1.2,l40s-48gb=0.9", **{"plan-gpus": "h100-sxm-80gb"}))
    assert "prices for GPUs the plan does not consider: A100, l40s-48gb" in plan.notes


def test_a_name_priced_twice_is_one_line_naming_it():
    code, out, err = cli("--model", "meta-llama/Llama-3.1-8B-Instruct", "--plan", "--price", "H100=2.49",
                         "--price", "H100=3")
    assert code == 2 and out == ""
    assert err.strip() == "kvcalc: error: --price: H100 is priced twice (h100-sxm-80gb)"


def test_two_names_that_overlap_price_a_preset_once_or_are_refused_naming_both():
    # "A100 80GB" (SXM and PCIe) and "A100 SXM" (40 and 80 GB) both cover a100-sxm-80gb, equally broad.
    values, errors = parse_options({"prices": "A100 80GB=1,A100 SXM=1"})
    assert not errors and dict(values["prices"])["a100-sxm-80gb"] == 1
    _, errors = parse_options({"prices": "A100 80GB=1,A100 SXM=2"})
    assert [e.message for e in errors] == ["A100 80GB and A100 SXM price it differently (a100-sxm-80gb)"]
