"""Rewrite README.md's table of architectures from app/kvcalc/data/architectures.json
(tests/test_architectures.py fails while the two differ)."""

import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "app"))

from kvcalc import architectures  # noqa: E402

START, END = "<!-- architectures:start -->\n", "\n<!-- architectures:end -->"
readme = ROOT / "README.md"
text = readme.read_text(encoding="utf-8")
head, rest = text.split(START)
_, tail = rest.split(END)
readme.write_text(head + START + architectures.markdown_table() + END + tail, encoding="utf-8")
