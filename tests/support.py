"""Shared paths and loaders for the tests."""

import io
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures"


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
