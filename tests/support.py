"""Shared paths and loaders for the tests."""

import json
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures"


def hf_fixture(name: str) -> dict:
    with open(FIXTURES / "hf" / name, encoding="utf-8") as fh:
        return json.load(fh)
