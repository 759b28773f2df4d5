"""Rewrite docs/formulas.md's table of architectures from app/kvcalc/data/architectures.json
(tests/readers/test_architectures.py fails while the two differ)."""

import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "app"), str(ROOT / "tools")]

import readme_block  # noqa: E402
from kvcalc.readers import architectures  # noqa: E402

readme_block.replace("architectures", architectures.markdown_table(), "docs/formulas.md")
