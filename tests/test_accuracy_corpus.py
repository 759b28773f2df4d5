"""Issue 36: the accuracy corpus is real public start-up logs, each row what its log prints.

tests/fixtures/logs/corpus/*.json hold one row per log (docs/accuracy.md gives the format);
tools/accuracy.py (make accuracy) scores them. These tests keep the corpus honest: every figure a
row says its log printed is in that log's text, every log is a fixture with its URL, the inputs
are what a user types (never a figure the log measured), and docs/accuracy.md shows the scores
the rows give now."""

import json
import re
import sys

import pytest

from kvcalc import engines
from kvcalc.inputs.options import OPTION_BY_NAME
from support import FIXTURES, ROOT

sys.path.insert(0, str(ROOT / "tools"))
import accuracy  # noqa: E402

ROWS = accuracy.parts()
SOURCES = (FIXTURES / "logs" / "SOURCES.md").read_text(encoding="utf-8")
ids = [row["file"][:70] for row in ROWS]


def test_the_corpus_is_eighty_logs_or_more_across_engines_releases_and_kinds():
    assert len(ROWS) >= 80, len(ROWS)
    assert len({row["file"] for row in ROWS}) == len(ROWS), "one row per log"
    assert {row["engine"] for row in ROWS} == {"vllm", "sglang", "llama.cpp"}
    kinds = {kind for row in ROWS for kind in row.get("kind", ())}
    assert {"dense", "moe", "mla", "hybrid", "fp8-kv"} <= kinds, kinds
    layouts = [row.get("layout", {}) for row in ROWS]
    for name in ("tp", "pp", "dp"):
        assert any(layout.get(name, 1) > 1 for layout in layouts), name
    assert len({accuracy.release_group(row) for row in ROWS if row["engine"] == "vllm"}) >= 4


@pytest.mark.parametrize("row", ROWS, ids=ids)
def test_a_row_is_a_public_log_and_what_a_user_types(row):
    log = FIXTURES / "logs" / row["file"]
    assert log.is_file(), row["file"]
    assert row["url"].startswith("https://") and row["url"] in SOURCES, f"{row['file']}: its URL is not in SOURCES.md"
    assert row["engine"] in engines.REGISTRY, row["engine"]
    inputs = row["inputs"]
    assert inputs.get("engine") == row["engine"]
    for name in inputs:
        assert name in OPTION_BY_NAME, f"{row['file']}: {name} is not an input"
        assert name not in accuracy.MEASURED, f"{row['file']}: {name} is a figure the log measured, not a typed input"
    for name in ("hf-config", "draft-hf-config"):
        if name in inputs:
            assert (FIXTURES / inputs[name]).is_file(), inputs[name]
    assert any(key in row["printed"] for key in ("kv_gib", "kv_tokens", "max_concurrency")), row["file"]


def _spellings(value) -> set[str]:
    if isinstance(value, int) and not isinstance(value, bool):
        return {str(value), f"{value:,}"}
    text = repr(float(value))
    out = {text, text.rstrip("0").rstrip("."), f"{value:.2f}", f"{value:.1f}", f"{value:.3f}", f"{value:.4f}"}
    return out


@pytest.mark.parametrize("row", ROWS, ids=ids)
def test_every_printed_figure_is_in_the_logs_text(row):
    """A row's figures are copied from its log; one computed from others is listed in "derived"
    (and its notes say how)."""
    text = (FIXTURES / "logs" / row["file"]).read_text(encoding="utf-8", errors="replace")
    # A figure followed by a comma ("#tokens: 404890, K size") is the figure, not "404890,".
    numbers = {n.rstrip(",") for n in re.findall(r"-?[0-9][0-9,]*(?:\.[0-9]+)?", text)}
    derived = set(row.get("derived", ()))
    for key, value in row["printed"].items():
        if key in derived or value is None:
            continue
        assert _spellings(value) & numbers, f"{row['file']}: {key} {value} is not in the log"
    if derived:
        assert row.get("notes"), f"{row['file']}: say how the derived figures are computed"


@pytest.mark.parametrize("row", ROWS, ids=ids)
def test_the_typed_inputs_are_sized_or_the_refusal_is_known(row):
    evaluation = accuracy.size_typed(row)
    if row.get("refused_here"):
        assert not getattr(evaluation, "ok", False), f"{row['file']}: sized now; drop refused_here"
    else:
        assert getattr(evaluation, "ok", False), (row["file"], evaluation)


def test_docs_accuracy_shows_the_scores_the_corpus_gives_now():
    text = (ROOT / "docs" / "accuracy.md").read_text(encoding="utf-8")
    block = text.split("<!-- accuracy:start -->\n")[1].split("\n<!-- accuracy:end -->")[0]
    scored = [accuracy.score(row) for row in ROWS]
    assert block == accuracy.markdown(scored), "run python3 tools/accuracy.py --docs"
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    headline = readme.split("<!-- accuracy:start -->\n")[1].split("\n<!-- accuracy:end -->")[0]
    assert headline == accuracy.headline(scored), "run python3 tools/accuracy.py --docs"


def test_worked_example_a_row_scored_from_its_log_and_from_typed_inputs():
    """vllm-llama3.1-8b-l4-util092-32k-seqs128-v0.11.0.log prints "Available KV cache memory:
    4.75 GiB" and "GPU KV cache size: 38,944 tokens". Pasted, its 4.75 GiB in blocks of 16 tokens x
    131,072 B gives 2,432 blocks, 38,912 tokens: -0.08%, inside the 2-decimal rounding of its GiB
    (38,944 tokens are 4.754 GiB). Typed, the overhead is our estimate: scored, not exact."""
    row = next(r for r in ROWS if r["file"] == "vllm-llama3.1-8b-l4-util092-32k-seqs128-v0.11.0.log")
    scored = accuracy.score(row)
    assert scored["log"]["tokens"] == 38_944 and scored["log"]["kv"] == 4.75
    assert scored["pasted"]["sized"]["tokens"] == int(4.75 * (1 << 30)) // (16 * 131_072) * 16 == 38_912
    assert scored["pasted"]["errors"]["tokens"] == 100 * (38_912 - 38_944) / 38_944
    assert abs(scored["pasted"]["errors"]["tokens"]) < 100 * 0.005 / 4.75
    assert set(scored["typed"]["errors"]) >= {"kv", "tokens", "concurrency"}
