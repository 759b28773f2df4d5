"""Rewrite docs/engines-and-releases.md's table of the vLLM overhead estimate's error per release from the
calibration logs (tests/engines/test_overhead_calibration.py fails while the two differ)."""

import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "app"), str(ROOT / "tests"), str(ROOT / "tools")]

import calibration  # noqa: E402
import readme_block  # noqa: E402

readme_block.replace("overhead", calibration.markdown_table(), "docs/engines-and-releases.md")
