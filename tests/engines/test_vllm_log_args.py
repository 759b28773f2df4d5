"""vLLM's non-default args line: a size it leaves out is its default (1) only where the line is whole. A paste
or a log collector may cut a long line; the dict is then open and a size given may be in the part lost.
Worked on real public logs (tests/fixtures/logs, URLs in SOURCES.md)."""

from pathlib import Path

import pytest

from kvcalc.engines.vllm.log import _closed
from kvcalc.inputs.startup_log import read_log

LOGS = Path(__file__).resolve().parent.parent / "fixtures" / "logs"


def _read(name: str):
    return read_log((LOGS / name).read_text(encoding="utf-8"), "vllm")


def test_a_cut_args_line_leaves_tp_unread_rather_than_one():
    """vllm-qwen3.8-27b-fp8-2x5090-tp2-64k.log: two RTX 5090s (Worker_TP0 prints), its args line cut after
    'reaso' with no tensor_parallel_size shown: tp is asked for, not taken as the default 1."""
    text = (LOGS / "vllm-qwen3.8-27b-fp8-2x5090-tp2-64k.log").read_text(encoding="utf-8")
    assert "'tensor_parallel_size'" not in text and "Worker_TP0" in text
    reading = _read("vllm-qwen3.8-27b-fp8-2x5090-tp2-64k.log")
    assert "tp" not in reading.values
    assert any("cut short" in note for note in reading.notes)
    assert any("tp not read" in note for note in reading.notes)


def test_a_whole_args_line_gives_the_default_sizes():
    # vllm-qwen3.6-27b-fp8-h100-util088-4k-eager-v0.27.1.log: a whole args line without tensor_parallel_size.
    reading = _read("vllm-qwen3.6-27b-fp8-h100-util088-4k-eager-v0.27.1.log")
    assert reading.values["tp"] == "1"
    assert not any("cut short" in note for note in reading.notes)


@pytest.mark.parametrize("args, whole", [
    ("{'a': 1}", True), ("{'a': {'b': 1}}", True), ("{'t': '{% if x %}'}", True), ("{'a': 'it\\'s }'}", True),
    ("{'a': 1", False), ("{'a': 'x', 'reaso", False), ("{'a': 'x}", False), ("{'a': 1}}", False)])
def test_a_dict_is_whole_where_its_braces_close_outside_its_strings(args, whole):
    assert _closed(args) is whole
