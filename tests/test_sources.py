"""Nothing from a user, a link or a file reaches an HTML sink: the sources never use one."""

import re

from support import ROOT

SINKS = re.compile(r"innerHTML|outerHTML|insertAdjacentHTML|document\.write|srcdoc|createContextualFragment"
                   r"|DOMParser|\beval\(|new Function|setAttribute\(\s*['\"]on")


def served_sources():
    files = [ROOT / "index.html", ROOT / "app" / "main.py"]
    files += sorted((ROOT / "app" / "kvcalc").rglob("*.py")) + sorted((ROOT / "app" / "web").rglob("*.py"))
    files += [p for p in sorted((ROOT / "static").rglob("*")) if p.is_file() and "vendor" not in p.parts]
    files += sorted((ROOT / "tools").glob("*.py"))
    return [p for p in files if p.suffix in (".py", ".js", ".html", ".css")]


def test_no_html_sinks_in_our_sources():
    found = []
    for path in served_sources():
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if SINKS.search(line) and not line.lstrip().startswith(("#", "//")):
                found.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    assert found == [], "\n".join(found)


BROWSER_LAYER = [ROOT / "app" / "main.py", *sorted((ROOT / "app" / "web").glob("*.py"))]


def test_text_goes_in_as_text():
    # The browser layer writes page text only through textContent (and form values).
    assert "textContent" in (ROOT / "app" / "web" / "dom.py").read_text(encoding="utf-8")
    for path in BROWSER_LAYER:
        assert not re.search(r"\.(innerText|innerHTML|outerHTML)\s*=", path.read_text(encoding="utf-8")), path


def test_engine_never_touches_the_page():
    # One engine, three homes: nothing under app/kvcalc imports the browser's modules.
    for path in sorted((ROOT / "app" / "kvcalc").rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        assert not re.search(r"^\s*(from|import)\s+(js|pyscript|pyodide|web)\b", text, re.M), path


def test_browser_modules_are_short_enough_to_read_in_one_sitting():
    for path in BROWSER_LAYER:
        assert len(path.read_text(encoding="utf-8").splitlines()) <= 250, path


def test_no_other_host_in_served_files():
    pattern = re.compile(r"https?://(?!127\.0\.0\.1|localhost)[^\s\"')<>]+")
    for path in served_sources():
        if path.parent.name == "tools":
            continue
        text = path.read_text(encoding="utf-8")
        assert not pattern.search(text), f"{path}: {pattern.search(text).group(0)}"
