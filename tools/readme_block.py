"""Rewrite one generated block of README.md, between its start and end markers."""

import pathlib

ROOT = pathlib.Path(__file__).resolve().parent.parent


def replace(name: str, text: str, path: str = "README.md") -> None:
    """README's (or another document's) block `<!-- name:start -->` ... `<!-- name:end -->`
    becomes `text`."""
    start, end = f"<!-- {name}:start -->\n", f"\n<!-- {name}:end -->"
    readme = ROOT / path
    head, rest = readme.read_text(encoding="utf-8").split(start)
    _, tail = rest.split(end)
    readme.write_text(head + start + text + end + tail, encoding="utf-8")
