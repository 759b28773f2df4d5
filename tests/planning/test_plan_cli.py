"""`kvcalc --plan`: what do I need? (issue 25, the CLI half). Every row is the single view of
its own deployment, so each is checked against `kvcalc --json` of that deployment; prices are the
user's, and the arithmetic of $/hour and $/Mtok is redone from the row's own numbers.

The worked example is Llama 3.1 70B (meta-llama/Llama-3.1-70B, config.json: 80 layers, 8 KV heads
of 128) at 8,192 tokens x 64 requests, sized as vLLM allocates:
  KV per token   2 x 80 x 8 x 128 x 2 B (bf16)            =     327,680 B
  KV, all 64     64 x 8,192 x 327,680 B                    = 171,798,691,840 B
  weights        70,553,706,496 parameters x 2 B (bf16)    = 141,107,412,992 B
  together                                                 = 312,906,104,832 B
Four H100 SXM at vLLM's default --gpu-memory-utilization 0.92 of the 85,061,827,297 B PyTorch
reports have 313,027,524,453 B: 121 MB over, on four GPUs, for activations and CUDA graphs. Too
little, so the H100's row is 8 GPUs (the next count, tensor parallel 8), holding 171 requests.
"""

import json
import math
import os
import subprocess
import sys
from fractions import Fraction

import pytest

from kvcalc.planning import plan as planner
from kvcalc.readers import gpu_presets
from kvcalc.evaluation import evaluate
from kvcalc.reports.link import encode
from kvcalc.inputs.options import parse_options
from kvcalc.planning.plan_report import row_flags

from support import FIXTURES, ROOT, cli

L70 = ["--model", "meta-llama/Llama-3.1-70B", "--context", "8192", "--batch", "64", "--engine", "vllm"]
ROW_KEYS = {"gpu": str, "gpus": int, "tp": int, "pp": int, "dp": int, "ep": bool, "kv_dtype": str,
            "weights_dtype": str, "fits": bool, "max_concurrency": int, "max_context_tokens": int, "limit": str,
            "decode_tokens_per_s": float, "usd_per_hour": float, "usd_per_million_tokens": float}
KV_BYTES_PER_TOKEN = 2 * 80 * 8 * 128 * 2
WEIGHTS_BYTES = 70_553_706_496 * 2


def kvcalc(*argv):
    """`python -m kvcalc` as a user runs it: (exit code, stdout, stderr)."""
    env = dict(os.environ, PYTHONPATH=str(ROOT / "app"))
    done = subprocess.run([sys.executable, "-m", "kvcalc", *argv], capture_output=True, text=True, env=env,
                          timeout=120)
    return done.returncode, done.stdout, done.stderr


def cli_json(*argv):
    code, out, err = cli(*argv, "--json")
    assert code == 0, err
    return json.loads(out)


@pytest.fixture(scope="module")
def llama70b_plan():
    """`kvcalc --plan --json` for the worked example, run as users run it, with one price."""
    code, out, err = kvcalc(*L70, "--plan", "--json", "--price", "h100-sxm-80gb=2.5")
    assert code == 0, err
    return json.loads(out)


def deployment(row: dict) -> list[str]:
    """The row's deployment as options of the single view, from the JSON row alone."""
    return ["--gpu", row["gpu"], "--gpus", str(row["gpus"]), "--pp", str(row["pp"]), "--dp", str(row["dp"]),
            "--ep", "on" if row["ep"] else "off", "--kv-dtype", row["kv_dtype"]]


def test_the_worked_example_arithmetic():
    assert KV_BYTES_PER_TOKEN == 327_680
    assert 64 * 8192 * KV_BYTES_PER_TOKEN + WEIGHTS_BYTES == 312_906_104_832
    single = cli_json(*L70, "--gpu", "h100-sxm-80gb", "--gpus", "8")
    assert single["kv_bytes_per_token"] == KV_BYTES_PER_TOKEN and single["weights_bytes"] == WEIGHTS_BYTES
    assert single["kv_bytes_total"] + single["weights_bytes"] == 312_906_104_832
    assert math.floor(4 * 85_061_827_297 * Fraction("0.92")) == 313_027_524_452


def test_plan_json_keys_types_and_the_h100_row(llama70b_plan):
    data = llama70b_plan
    assert set(data) >= {"plan", "plan_notes"} and isinstance(data["plan_notes"], list)
    rows = data["plan"]
    # One row per GPU type vLLM runs on: every NVIDIA and AMD whole GPU's preset, no Apple machine, no
    # MIG instance (a plan considers one only when plan-gpus names it).
    runs_on = [g.id for g in gpu_presets.whole_gpus().values() if g.vendor in ("NVIDIA", "AMD")]
    assert sorted(row["gpu"] for row in rows) == sorted(runs_on)
    for row in rows:
        for key, kind in ROW_KEYS.items():
            assert row[key] is None or type(row[key]) is kind, (key, row)
        assert row["gpus"] == row["tp"] * row["pp"] * row["dp"]
    # Sorted by GPU count, those that fit first.
    fitting = [row for row in rows if row["fits"]]
    assert rows[:len(fitting)] == fitting and [r["gpus"] for r in fitting] == sorted(r["gpus"] for r in fitting)
    (h100,) = [row for row in rows if row["gpu"] == "h100-sxm-80gb"]
    assert (h100["gpus"], h100["tp"], h100["pp"], h100["dp"], h100["ep"]) == (8, 8, 1, 1, False)
    assert (h100["fits"], h100["max_concurrency"], h100["max_context_tokens"]) == (True, 171, 21_888)
    assert (h100["kv_dtype"], h100["weights_dtype"], h100["limit"]) == ("bf16", "bf16", "kv")
    # The smallest: four H100s do not fit (the module docstring's 121 MB), in the single view too.
    assert cli_json(*L70, "--gpu", "h100-sxm-80gb", "--gpus", "4")["fits"] is False
    assert not any("no prices" in note for note in data["plan_notes"])      # one price was given


def test_each_row_is_the_single_view_of_its_deployment(llama70b_plan):
    rows = {row["gpu"]: row for row in llama70b_plan["plan"]}
    # A sample: tensor parallel 2, 4 and 8, pipeline stages, and one that does not fit.
    sample = [rows[g] for g in ("h100-sxm-80gb", "h200-141gb", "mi300x-192gb", "a100-pcie-40gb", "t4-16gb",
                                "dgx-spark-128gb")]
    assert any(row["pp"] > 1 for row in sample) and any(row["fits"] is False for row in sample)
    for row in sample:
        single = cli_json(*L70, *deployment(row))
        assert single["max_concurrency"] == row["max_concurrency"], row["gpu"]
        assert single["max_context"] == row["max_context_tokens"], row["gpu"]
        assert single["fits"] == row["fits"], row["gpu"]
        assert single["decode_tokens_per_s_total"] == row["decode_tokens_per_s"], row["gpu"]
        assert (single["tp"], single["pp"]) == (row["tp"], row["pp"])


def test_plan_all_rows_agree_too_data_parallel_among_them():
    code, out, err = cli(*L70, "--plan-all", "--plan-gpus", "h100-sxm-80gb", "--plan-max-gpus", "16", "--json")
    assert code == 0, err
    rows = json.loads(out)["plan"]
    dp = [row for row in rows if row["dp"] > 1]
    assert dp and all(row["ep"] is False for row in rows)        # a dense model: no expert parallel
    for row in dp[:2] + [row for row in rows if row["pp"] > 1][:2]:
        single = cli_json(*L70, *deployment(row))
        assert (single["max_concurrency"], single["max_context"], single["fits"]) == \
            (row["max_concurrency"], row["max_context_tokens"], row["fits"])
        assert single["decode_tokens_per_s_total"] == row["decode_tokens_per_s"]


def test_prices_give_dollars_per_hour_and_per_million_tokens(llama70b_plan):
    rows = llama70b_plan["plan"]
    (h100,) = [row for row in rows if row["gpu"] == "h100-sxm-80gb"]
    assert h100["usd_per_hour"] == 2.5 * 8 == 20.0
    # $/Mtok = $/hour x 1e6 / (decode tok/s x 3600), from the row's own numbers (the JSON's floats
    # are the exact fractions rounded once, so the two sides meet to the last digit or two).
    assert math.isclose(h100["usd_per_million_tokens"], 20.0 * 1e6 / (h100["decode_tokens_per_s"] * 3600),
                        rel_tol=1e-15, abs_tol=0)
    assert 1.01 < h100["usd_per_million_tokens"] < 1.02          # 20 / (5,481.5 x 3,600 / 1e6)
    # No price is built in: every other GPU has none.
    assert all(row["usd_per_hour"] is None and row["usd_per_million_tokens"] is None
               for row in rows if row["gpu"] != "h100-sxm-80gb")


def test_the_exact_fractions_behind_the_price():
    values, errors = parse_options({"model": "meta-llama/Llama-3.1-70B", "context": "8192", "batch": "64",
                                    "engine": "vllm", "plan-gpus": "h100-sxm-80gb", "prices": "h100-sxm-80gb=2.5"})
    assert not errors
    (row,) = planner.plan(values).rows
    assert row.usd_per_hour == Fraction(20)
    assert row.usd_per_million_tokens == Fraction(20) * 10 ** 6 / (row.decode_tokens_per_s * 3600)
    # The decode bound is the single view's: 64 requests over one decode step of its timing.
    assert row.decode_tokens_per_s == Fraction(64) / evaluate(row.values).timing.decode_step_seconds


def test_the_table_one_line_a_row_with_the_notes():
    code, out, err = cli(*L70, "--plan", "--plan-gpus", "h100-sxm-80gb,h200-141gb", "--price", "h100-sxm-80gb=2.5",
                         "--price", "h200-141gb=3.5")
    assert code == 0, err
    lines = out.splitlines()
    head = next(i for i, line in enumerate(lines) if line.startswith("GPU "))
    assert lines[head].split() == ["GPU", "GPUs", "layout", "KV/weights", "fits", "needs", "holds", "context",
                                   "limit", "tok/s", "≤", "$/hour", "$/Mtok", "≥"]
    # 4 x H200 at 3.50 = 14.00 an hour; 8 x H100 at 2.50 = 20.00.
    assert lines[head + 1].split() == ["h200-141gb", "4", "tp", "4", "bf16/bf16", "yes", "64", "148", "19,008", "kv",
                                       "3,927", "14.00", "0.99"]
    assert lines[head + 2].split()[:2] == ["h100-sxm-80gb", "8"] and "20.00" in lines[head + 2]
    assert "fewest GPUs: 4 x NVIDIA H200 SXM 141GB (tp 4) fits 148 requests: --gpu h200-141gb --gpus 4" in out
    # No rate: the cheapest is by the hour, and 4 x H200 ($14) is also the cheapest.
    assert "cheapest: 4 x NVIDIA H200 SXM 141GB (tp 4) fits 148 requests at $14.00/hour: --gpu h200-141gb " \
           "--gpus 4" in out
    assert "note: --plan-all for every GPU count and layout tried (the cheapest here is of the rows shown" in out
    assert max(len(line) for line in lines) <= 120


def test_plan_all_has_more_rows_and_holds_the_plan_rows():
    argv = [*L70, "--plan-gpus", "h100-sxm-80gb,h200-141gb", "--plan-max-gpus", "16", "--json"]
    smallest = json.loads(cli(*argv, "--plan")[1])
    every = json.loads(cli(*argv, "--plan-all")[1])
    assert smallest["plan_everything"] is False and every["plan_everything"] is True
    assert len(every["plan"]) > len(smallest["plan"]) == 2
    for row in smallest["plan"]:
        assert row in every["plan"]


@pytest.mark.parametrize("argv, option", [
    (["--price", "tpu-v9=2"], "--price"),                     # a GPU with no preset
    (["--price", "h100-sxm-80gb=abc"], "--price"),
    (["--price", "h100-sxm-80gb=-2"], "--price"),             # negative
    (["--price", "h100-sxm-80gb=5000"], "--price"),           # a node's price, or cents: absurd per GPU-hour
    (["--price", "h100-sxm-80gb=2", "--price", "h100-sxm-80gb=3"], "--price"),
    (["--prices", "h100-sxm-80gb=0"], "--prices"),
    (["--rate", "0", "--output-tokens", "256"], "--rate"),
    (["--rate", "nan", "--output-tokens", "256"], "--rate"),
    (["--rate", "2"], "--output-tokens"),                     # a rate needs each request's output
    (["--plan-max-gpus", "0"], "--plan-max-gpus"),
    (["--plan-max-gpus", "100000"], "--plan-max-gpus"),
    (["--plan-gpus", "m4-max-128gb"], "--plan-gpus"),         # vLLM does not run on a Mac
    (["--format", "csv"], "--plan"),
    (["--launch", "vllm"], "--plan"),
])
def test_bad_plan_input_exits_2_with_one_line(argv, option):
    code, out, err = cli(*L70, "--plan", *argv)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith(f"kvcalc: error: {option}:"), err


def test_a_negative_price_is_said_to_be_one():
    code, out, err = kvcalc(*L70, "--plan", "--price", "h100-sxm-80gb=-2")
    assert (code, out) == (2, "") and err == "kvcalc: error: --price: h100-sxm-80gb: a price is at least 0.01 USD " \
                                             "per GPU-hour, got -2\n"


def test_bad_plan_input_as_a_user_runs_it():
    code, out, err = kvcalc(*L70, "--plan", "--price", "h100-sxm-80gb=abc")
    assert (code, out) == (2, "") and err == "kvcalc: error: --price: h100-sxm-80gb: 'abc' is not a price in " \
                                             "USD per GPU-hour like 2.49\n"
    # Refused alike without --plan: the plan's inputs are inputs of the single view too.
    assert cli(*L70, "--gpu", "h100-sxm-80gb", "--gpus", "8", "--rate", "2")[0] == 2


def test_the_verdict_that_does_not_fit_names_the_best_row():
    # Two H100s hold 4 of the 64 requests. What they need: the smallest H100 deployment that
    # fits (8 x H100, the worked example above), then the plan's best row over every GPU, the
    # fewest GPUs: two MI355X (288 GB each).
    code, out, err = cli(*L70, "--gpu", "h100-sxm-80gb", "--gpus", "2")
    assert code == 0, err
    first, second = out.splitlines()[:2]
    assert first.startswith("Verdict") and "Does not fit" in first
    assert second.strip() == "What you need: 8 x NVIDIA H100 SXM 80GB (tp 8) fits 171 requests; fewest GPUs: " \
                             "2 x AMD Instinct MI355X 288GB (tp 2) fits 157 requests; kvcalc --plan for every GPU"
    assert second.index("What") == first.index("Does")
    data = cli_json(*L70, "--gpu", "h100-sxm-80gb", "--gpus", "2")
    assert data["fits"] is False and data["plan_best"] == "8 x NVIDIA H100 SXM 80GB (tp 8) fits 171 requests; " \
                                                          "fewest GPUs: 2 x AMD Instinct MI355X 288GB (tp 2) fits 157 requests"
    own = cli_json(*L70, "--gpu", "h100-sxm-80gb", "--gpus", "2", "--plan-gpus", "h100-sxm-80gb")
    assert own["plan_best"] == "8 x NVIDIA H100 SXM 80GB (tp 8) fits 171 requests"


def test_a_verdict_nothing_fixes_up_to_the_largest_count_says_so():
    # Llama 3.1 405B at 131,072 tokens x 64: 4.3 TB of KV cache, past 8 of any GPU.
    data = cli_json("--model", "meta-llama/Llama-3.1-405B", "--context", "131072", "--batch", "64", "--engine",
                    "vllm", "--gpu", "h100-sxm-80gb", "--plan-max-gpus", "8")
    assert data["fits"] is False
    assert data["plan_best"] == "no deployment of up to 8 GPUs fits on any GPU considered"


def test_a_fitting_verdict_plans_nothing(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("the plan ran for a deployment that fits")
    monkeypatch.setattr(planner, "plan", refuse)
    code, out, _ = cli(*L70, "--gpu", "h100-sxm-80gb", "--gpus", "8")
    assert code == 0 and "What you need" not in out
    assert "plan_best" not in cli_json(*L70, "--gpu", "h100-sxm-80gb", "--gpus", "8")
    # Past the model's limit no deployment helps: the verdict says so, without a plan.
    code, out, _ = cli("--model", "google/gemma-2-9b", "--context", "32768", "--gpu", "l40s-48gb")
    assert code == 0 and "past the model's limit" in out and "What you need" not in out


def test_a_link_carries_the_plan_inputs():
    values = {"model": "meta-llama/Llama-3.1-70B", "context": "8192", "engine": "vllm", "rate": "2",
              "output-tokens": "512", "plan-gpus": "h100-sxm-80gb,h200-141gb", "prices": "h100-sxm-80gb:2.5"}
    via_link = cli_json("--link", "http://127.0.0.1:8000/#" + encode(values), "--plan")
    direct = cli_json("--model", "meta-llama/Llama-3.1-70B", "--context", "8192", "--engine", "vllm", "--rate", "2",
                      "--output-tokens", "512", "--plan-gpus", "h100-sxm-80gb,h200-141gb",
                      "--price", "h100-sxm-80gb=2.5", "--plan")
    assert via_link == direct and len(direct["plan"]) == 2
    assert any("Little's law at 2 requests/s and 512 output tokens" in note for note in direct["plan_notes"])
    for row in direct["plan"]:
        # Little's law's concurrency for the row's own time bounds: the decode speed serves the rate.
        assert row["fits"] and row["batch"] < row["max_concurrency"]
        assert row["decode_tokens_per_s"] >= 2 * 512
    # The --price flag and the link's prices key are one input.
    (h100,) = [row for row in direct["plan"] if row["gpu"] == "h100-sxm-80gb"]
    assert h100["usd_per_hour"] == 2.5 * h100["gpus"]


def test_row_flags_give_the_row_back():
    # An fp8 cache halves the 160 GiB of KV: 8 x A100 40GB, not the 16 of the bf16 cache, hold it.
    values, _ = parse_options({"model": "meta-llama/Llama-3.1-70B", "context": "8192", "batch": "64",
                               "engine": "vllm", "plan-gpus": "a100-pcie-40gb", "plan-kv-dtypes": "fp8"})
    (row,) = planner.plan(values).rows
    assert row_flags(row) == ["--gpu", "a100-pcie-40gb", "--gpus", "8", "--kv-dtype", "fp8"]
    assert row.max_concurrency == 119        # 120 before the weights counted vLLM's rope cache and norms
    single = cli_json(*L70, *row_flags(row))
    assert (single["max_concurrency"], single["fits"]) == (row.max_concurrency, row.fits)


def test_from_log_plans_from_its_inputs(tmp_path):
    log = FIXTURES / "logs" / "vllm-qwen3-8b-2xt4-tp2-util085-8k-eager-llm-v0.22.0.log"
    code, out, err = cli("--from-log", str(log), "--model", "Qwen/Qwen3-8B", "--plan", "--plan-gpus", "t4-16gb",
                         "--json")
    assert code == 0, err
    data = json.loads(out)
    (row,) = data["plan"]
    # The log's 2 x T4 at tensor parallel 2 is what the plan finds for the T4 too.
    assert (row["gpu"], row["gpus"], row["tp"], row["fits"]) == ("t4-16gb", 2, 2, True)
    assert any(note.startswith("left out, as they belong to one deployment: kv-memory-gib")
               for note in data["plan_notes"])
    assert "# the plan chooses the GPU and the layout, so the inputs' gpus" in err


def test_expert_parallel_rows_agree_for_a_mixture_of_experts():
    # Qwen3-30B-A3B (128 experts, 8 a token): expert parallel and data-parallel ranks are layouts
    # the plan tries; each such row is again the single view of its --dp and --ep.
    base = ["--model", "Qwen/Qwen3-30B-A3B", "--context", "32768", "--batch", "64", "--engine", "vllm"]
    code, out, err = cli(*base, "--plan-all", "--plan-gpus", "h100-sxm-80gb", "--plan-max-gpus", "8", "--json")
    assert code == 0, err
    rows = json.loads(out)["plan"]
    expert = [row for row in rows if row["ep"]]
    assert any(row["dp"] > 1 for row in expert) and any(row["dp"] == 1 for row in expert)
    for row in [r for r in expert if r["dp"] > 1][:2] + [r for r in expert if r["dp"] == 1][:1]:
        single = cli_json(*base, *deployment(row))
        assert (single["max_concurrency"], single["max_context"], single["fits"]) == \
            (row["max_concurrency"], row["max_context_tokens"], row["fits"])
        assert single["decode_tokens_per_s_total"] == row["decode_tokens_per_s"]
