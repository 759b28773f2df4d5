"""Shared paths and loaders for the tests."""

import io
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures"


# Real configs the calculator refuses, each with the field its one-line refusal names and why.
REFUSED_FIXTURES = {
    "deepseek-ai__DeepSeek-V4-Flash.json": "compress_ratios",      # DeepSeek-V4's compressed caches
    "deepseek-ai__DeepSeek-V4-Pro.json": "compress_ratios",
    "nvidia__DeepSeek-V4-Flash-NVFP4.json": "compress_ratios",
    "zai-org__GLM-5.2.json": "indexer_types",                      # layers sharing another's indexer
}


def fixture_names(refused: bool = False) -> list[str]:
    """The real config fixtures the calculator sizes (or, with refused, those it refuses)."""
    names = sorted(p.name for p in (FIXTURES / "hf").glob("*.json"))
    return [n for n in names if (n in REFUSED_FIXTURES) == refused]


def hf_fixture(name: str) -> dict:
    with open(FIXTURES / "hf" / name, encoding="utf-8") as fh:
        return json.load(fh)


def cli(*argv, stdin=None):
    """Run `kvcalc` in-process: (exit code, stdout, stderr)."""
    from kvcalc.cli import run
    out, err = io.StringIO(), io.StringIO()
    if stdin is not None:
        old = sys.stdin
        sys.stdin = io.TextIOWrapper(io.BytesIO(stdin.encode()))
    try:
        code = run(list(argv), out, err)
    finally:
        if stdin is not None:
            sys.stdin = old
    return code, out.getvalue(), err.getvalue()
