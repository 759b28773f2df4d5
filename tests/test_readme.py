"""The README is an entrance (issue 39): at most 200 lines, the CLI and the library each shown in
its first 100, and every page of the manual it links to there. The manual's own links land."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def test_the_readme_is_short_and_shows_each_home_early():
    lines = README.splitlines()
    assert len(lines) <= 200
    first = "\n".join(lines[:100])
    assert "\nkvcalc --model " in first and "\nimport kvcalc\n" in first and "make serve" in first


def test_every_link_lands():
    for page in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        text = page.read_text(encoding="utf-8")
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text):
            if target.startswith(("http://", "https://")):
                continue
            assert (page.parent / target).exists(), f"{page.name}: {target}"


def test_the_manual_has_each_page_the_readme_names():
    named = set(re.findall(r"\(docs/([\w-]+\.md)\)", README))
    on_disk = {p.name for p in (ROOT / "docs").glob("*.md")}
    assert named == on_disk, (named ^ on_disk)


def test_the_readme_examples_say_what_the_code_does():
    """The library example run as written, its commented figures checked; the CLI example's output
    is the CLI's, line for line where the README does not cut a line short with '...'."""
    from fractions import Fraction

    from support import cli
    code = README.split("```python\n", 1)[1].split("```", 1)[0]
    scope: dict = {}
    exec(code, scope)
    e = scope["e"]
    assert e.result.kv_bytes_per_token == 131072 and e.engine.kv_tokens == 465056
    assert e.engine.max_concurrency == Fraction(14533, 1024)
    command = re.search(r"\nkvcalc (--model meta-llama/Llama-3.1-8B [^\n]+)\n", README)[1].split()
    shown = README.split("```\nVerdict", 1)[1].split("```", 1)[0]
    _, out, _ = cli(*command)
    printed = out.splitlines()
    for line in ("Verdict" + shown).splitlines():
        if line.endswith("..."):
            assert any(p.startswith(line[:-3]) for p in printed), line
        else:
            assert line in printed, line
