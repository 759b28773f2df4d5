"""Hostile log lines built from a reader's own rules: the literal runs of a rule's pattern and a
line of one of them repeated (tests/engines/test_hostile_logs.py, tests/browser/test_hostile_log_page.py)."""

import re


def words(rule) -> list[str]:
    """The literal runs of a rule's pattern ("KV buffer size =", "llama_kv_cache", "avail mem=")."""
    source = re.sub(r"\?P<\w+>|\?<?[:=!]", "", rule.pattern.pattern)          # group names, lookarounds
    source = re.sub(r"\[(?:\\.|[^\]])*\]|\{\d*,?\d*\}|\\[dswbDSWB]", " ", source)  # classes, counts
    runs = re.findall(r"(?:\\.|[^\\()\[\]{}?*+|^$.])+", source)
    runs = [re.sub(r"\\(.)", r"\1", run) for run in runs]
    return [run for run in runs if len(run.strip()) > 1]


def units(rule) -> list[str]:
    """What a hostile line of this rule repeats: its needle and its words, bare, with a digit or a
    space after them, and all its words in a row."""
    found = words(rule)
    needle = rule.needle or (found[0] if found else "x")
    out = [needle, needle + "1", needle + " ", " ".join(found) + " ", "".join(found) + "1", "".join(found) + "1."]
    out += [w + tail for w in found[:6] for tail in ("", "1", " 1,")]
    return [u for u in dict.fromkeys(out) if u]


def line_of(unit: str, length: int) -> str:
    return (unit * (length // len(unit) + 1))[:length]
