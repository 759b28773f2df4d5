"""Issue 22: vLLM's overhead as its profiling run measures it, release by release, checked
against real start-up logs (tests/fixtures/logs, each with its URL in SOURCES.md and the JSON
files beside it). The estimate's band is what these logs support; every log falls inside it."""

import json
import re

import pytest

import calibration
from support import FIXTURES, ROOT

LOGS = FIXTURES / "logs"
CHECKED = calibration.checked()


@pytest.mark.parametrize("out", [o for o in CHECKED if o["total"] is not None and not o["excluded"]],
                         ids=lambda o: o["file"][:60])
def test_the_overhead_a_log_implies_lies_in_the_estimates_band(out):
    # total x utilization - weights - "Available KV cache memory", as the log prints them.
    assert out["low"] <= out["total"] <= out["high"], out


@pytest.mark.parametrize("out", [o for o in CHECKED if o["activation"] is not None], ids=lambda o: o["file"][:60])
def test_the_activation_peak_is_vllms_profiling_run(out):
    """The printed "PyTorch activation peak" / "peak activation": the larger of the dummy forward
    and the sampler warm-up, within 0.3 GiB (or 8 %) where no vision encoder is profiled."""
    slack = max(0.3, 0.08 * out["our_activation"])
    if out["multimodal"]:
        assert out["our_activation"] - slack <= out["activation"] <= out["our_activation"] + 3.5 + slack, out
    else:
        assert abs(out["our_activation"] - out["activation"]) <= slack, out


def test_worked_example_llama_3_8b_on_an_h100_in_v0_6_5():
    """vllm-llama3-8b-h100-tp1-breakdown-v0.6.5dev.log prints "PyTorch activation peak memory
    1.26GiB". V0 profiles max(max_model_len 8,192, 2,048) tokens over 256 sequences; the driver's
    sampler sorts 256 rows of the 128,256-entry vocabulary: 38 B x 256 x 128,256 = 1,247,735,808 B,
    plus the 8,192 x 4,096 bf16 hidden states it keeps (67,108,864 B) and the 32 MiB cuBLAS
    workspace: 1,348,399,104 B = 1.256 GiB."""
    out = next(o for o in CHECKED if o["file"] == "vllm-llama3-8b-h100-tp1-breakdown-v0.6.5dev.log")
    assert round(out["our_activation"] * (1 << 30)) == 38 * 256 * 128256 + 8192 * 4096 * 2 + 2 * 2 * 256 * 4096 \
        + 32 * (1 << 20)
    assert f"{out['our_activation']:.2f}" == "1.26"


def test_every_new_log_is_in_the_calibration_or_says_why_not():
    listed = {row["file"]: row for row in calibration.rows()}
    new = []
    for name in ("overhead-vllm-v1.json", "overhead-v0-sglang-llamacpp.json", "overhead-vllm-2026.json"):
        new += json.loads((LOGS / name).read_text(encoding="utf-8"))
    vllm_new = [e for e in new if e.get("engine", "vllm") == "vllm"]     # overhead-vllm-2026.json is vLLM's alone
    for entry in vllm_new:
        assert entry["file"] in listed or "cut" in entry.get("notes", "") or "prose" in entry.get("notes", "") \
            or entry["file"].startswith(("vllm-deepseek-r1-q3km", "vllm-r1-distill")), entry["file"]
    for row in calibration.rows():
        assert (LOGS / row["file"]).exists(), row["file"]
    # Issue 22: at least 30 new fixtures, over at least five vLLM releases (39 over 13 here).
    assert len(new) >= 30
    assert len({calibration.release_of(e["version"].split("+")[0]) for e in vllm_new
                if re.match(r"v?[0-9]", e["version"] or "")}) >= 5


def test_readme_has_the_calibration_table():
    text = (ROOT / "docs" / "engines-and-releases.md").read_text(encoding="utf-8")
    block = text.split("<!-- overhead:start -->\n")[1].split("\n<!-- overhead:end -->")[0]
    assert block == calibration.markdown_table(), "run python tools/readme_overhead.py"
