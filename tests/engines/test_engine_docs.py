"""docs/engines.md, the developers' manual of the engines' homes, stays true to the code: every
module under app/kvcalc/engines/ (each engine folder's files and the shared ones) is named in it,
every path it names exists, each name its tables give for a file is a name that module has, and
its lists of the protocol's members are engines/protocol.py's, member for member."""

import importlib
import re
from pathlib import Path

import pytest

from kvcalc.engines import protocol

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "app" / "kvcalc"
DOC = ROOT / "docs" / "engines.md"
IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def code_spans(text: str) -> list[str]:
    """The inline code of a Markdown text (`...`), fenced blocks left out."""
    text = re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)
    return re.findall(r"`([^`\n]+)`", text)


def named_paths(text: str) -> list[str]:
    """The paths the text names in code: spans with a '/' and no placeholder, space or URL."""
    return [span for span in code_spans(text)
            if "/" in span and not re.search(r"[<>*{}\s]|://", span)]


def resolves(path: str) -> bool:
    """A path as the doc writes it: from the repository's root, or below app/kvcalc/."""
    return any((base / path.rstrip("/")).exists() for base in (ROOT, PACKAGE))


def table_rows(text: str) -> dict:
    """{a module path the first cell names: the code names the row gives for it}."""
    rows = {}
    for line in text.splitlines():
        cells = line.split("|")
        if not line.startswith("| `") or len(cells) < 4:
            continue
        first = code_spans(cells[1])
        if len(first) == 1 and first[0].endswith(".py"):
            rows[first[0]] = [s for s in code_spans("|".join(cells[2:])) if IDENTIFIER.fullmatch(s)]
    return rows


def module_of(path: str):
    return importlib.import_module("kvcalc." + path.removesuffix(".py").removesuffix("/__init__").replace("/", "."))


def listed_members(text: str, protocol_class: str) -> set:
    """The members the doc's list item for `protocol_class` (its line holding (`Engine`) etc.) names."""
    lines = [line for line in text.splitlines() if line.startswith("- ") and f"(`{protocol_class}`)" in line]
    assert len(lines) == 1, f"docs/engines.md lists the {protocol_class} members on one line: {lines}"
    return set(code_spans(lines[0].split("):", 1)[1]))


DOC_TEXT = DOC.read_text(encoding="utf-8")


def test_every_file_of_the_engines_folders_is_named():
    engines = PACKAGE / "engines"
    files = sorted(p.relative_to(PACKAGE).as_posix() for p in engines.rglob("*.py"))
    assert "engines/vllm/release.py" in files and "engines/sglang/allocator.py" in files   # the walk finds them
    named = set(code_spans(DOC_TEXT))
    assert [f for f in files if f not in named] == [], "docs/engines.md does not name these"


def test_every_path_named_exists():
    paths = named_paths(DOC_TEXT)
    assert "engines/llamacpp/launch.py" in paths and "tests/fixtures/logs/SOURCES.md" in paths
    assert [p for p in paths if not resolves(p)] == [], "docs/engines.md names paths that are not there"


def test_the_path_check_catches_a_missing_file():
    text = "see `engines/vllm/releases.py`, `engines/<engine>/` and `tests/engines/test_releases.py`"
    assert [p for p in named_paths(text) if not resolves(p)] == ["engines/vllm/releases.py"]


def test_each_name_given_for_a_file_is_in_that_module():
    rows = table_rows(DOC_TEXT)
    assert "register" in rows["engines/__init__.py"] and "FullAttentionSpec" in rows["engines/vllm/allocator.py"]
    missing = []
    for path, names in rows.items():
        module = module_of(path)
        missing += [f"{path}: {name}" for name in names if not hasattr(module, name)]
    assert missing == [], "docs/engines.md gives names these modules do not have"


@pytest.mark.parametrize("protocol_class", ["Engine", "OptionalMembers", "Releases", "LogReader"])
def test_the_protocol_lists_are_the_protocols(protocol_class):
    data, calls = protocol._members(getattr(protocol, protocol_class))
    listed = listed_members(DOC_TEXT, protocol_class)
    assert sorted(listed - {*data, *calls}) == [], f"docs/engines.md lists what {protocol_class} does not have"
    assert sorted({*data, *calls} - listed) == [], f"docs/engines.md leaves out {protocol_class} members"


def test_the_required_list_names_the_members_every_engine_must_give():
    required = listed_members(DOC_TEXT, "Engine")
    assert {"NAME", "size", "launch"} <= required and "SERVING" not in required
    assert required == {*protocol.REQUIRED_DATA, *protocol.REQUIRED_CALLS}
