"""Rewrite README.md's table of the vLLM overhead estimate's error per release from the
calibration logs (tests/test_overhead_calibration.py fails while the two differ)."""

import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "app"), str(ROOT / "tests")]

import calibration  # noqa: E402

START, END = "<!-- overhead:start -->\n", "\n<!-- overhead:end -->"
readme = ROOT / "README.md"
text = readme.read_text(encoding="utf-8")
head, rest = text.split(START)
_, tail = rest.split(END)
readme.write_text(head + START + calibration.markdown_table() + END + tail, encoding="utf-8")
