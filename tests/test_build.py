"""The build: dist/ holds exactly what a static host needs, the default view is rendered into
the HTML by the engine, and the offline copy is versioned by content."""

import base64
import hashlib
import html
import json
import re
import sys

from support import ROOT

sys.path.insert(0, str(ROOT / "tools"))
import build  # noqa: E402

from kvcalc.evaluation import evaluate  # noqa: E402
from kvcalc.inputs.form_fields import form_values  # noqa: E402
from kvcalc.reports.report import page_texts  # noqa: E402


def test_default_view_is_prerendered_by_the_engine():
    text = build.render_index()
    parser = build._FormDefaults()
    parser.feed(text)
    evaluation = evaluate(form_values(parser.values))
    expected = page_texts(evaluation.scenario, evaluation)["metrics"]
    for key, (value, figure, exact) in expected.items():
        match = re.search(rf'<(?:dd|p)[^>]* data-metric="{key}" data-value="([^"]*)"[^>]*><span class="figure">([^<]*)'
                          r'</span> <span class="exact">([^<]*)</span></(?:dd|p)>', text)
        assert match, key
        assert html.unescape(match.group(1)) == value
        assert [html.unescape(match.group(2)), html.unescape(match.group(3))] == [figure, exact]
    # Each figure's condition is written beside it before Python starts.
    conditions = page_texts(evaluation.scenario, evaluation)["metric_conditions"]
    for key, shown in conditions.items():
        assert f'<small class="cond" data-cond="{key}">{html.escape(shown)}</small>' in text, key


def test_csp_allows_only_this_origin_and_the_boot_flag():
    text = build.render_index()
    assert f'content="{build.CSP}"' in text
    assert "connect-src 'self'" in build.CSP and "http" not in build.CSP
    # The inline boot flag is allowed by its hash, and is the only inline script.
    assert text.count("<script>") == 1 and build.BOOT in text
    # The faster start (issue 14) added no exception: 'unsafe-eval' for PyScript stays the only one.
    directives = {d.split()[0]: d.split()[1:] for d in build.CSP.split("; ")}
    assert directives["default-src"] == ["'none'"] and directives["connect-src"] == ["'self'"]
    assert directives["script-src"] == ["'self'", "'unsafe-eval'", f"'{build.BOOT_HASH}'"]
    assert [d for d, sources in directives.items() if any("unsafe" in x for x in sources)] == ["script-src"]
    assert all(x in ("'self'", "'none'") for d, sources in directives.items() if d != "script-src" for x in sources)
    # The hash is of the script exactly as the page carries it (the watchdog and the link's
    # preview live in it now), and nothing is allowed inline any other way.
    inline = re.search(r"<script>(.*?)</script>", text, re.S).group(1)
    assert "sha256-" + base64.b64encode(hashlib.sha256(inline.encode()).digest()).decode() == build.BOOT_HASH
    assert "unsafe-inline" not in build.CSP and not re.search(r"<[^>]+\son\w+=", text)


def test_the_boot_script_is_a_file_of_its_own():
    # static/boot.js, inlined line by line (trimmed, its comments left out): the hash above is of
    # it, build.py holds no JS, and the site does not serve it a second time as a file.
    source = (ROOT / "static" / "boot.js").read_text(encoding="utf-8")
    code = [line.strip() for line in source.splitlines() if line.strip() and not line.strip().startswith("//")]
    assert build.BOOT.split("\n") == code and code[0] == "(() => {" and code[-1] == "})();"
    assert "addEventListener" not in (ROOT / "tools" / "build.py").read_text(encoding="utf-8")
    assert build._not_copied(str(ROOT / "static"), ["boot.js", "sw.js", "early.mjs", ".ready"]) == [
        "boot.js", "sw.js", ".ready"]
    assert build._not_copied(str(ROOT / "static" / "vendor"), ["boot.js", "sw.js"]) == []


def test_headers_file_carries_the_same_policy_and_what_a_meta_tag_cannot(tmp_path):
    site = tmp_path / "site"
    (site / "static" / "vendor" / "pyscript").mkdir(parents=True)
    (site / "index.html").write_text("<!doctype html>")
    (site / "static" / "vendor" / "pyscript" / "core-C9KDLldu.js").write_text("//")
    (site / "static" / "vendor" / "pyscript" / "core.js").write_text("//")
    build.write_headers(site)
    sys.path.insert(0, str(ROOT / "tools"))
    from serve import parse_headers_file, rule_matches
    rules = parse_headers_file((site / "_headers").read_text())

    def headers(path):
        found = {}
        for pattern, values in rules:
            if rule_matches(pattern, path):
                found.update(values)
        return found
    assert build.HEADER_CSP == build.CSP + "; frame-ancestors 'none'"
    for path in ("/", "/index.html"):
        assert headers(path)["Content-Security-Policy"] == build.HEADER_CSP, path
    assert "Content-Security-Policy" not in headers("/static/vendor/pyscript/core.js")
    assert headers("/static/vendor/pyscript/core-C9KDLldu.js")["Cache-Control"] == "public, max-age=31536000, immutable"
    assert "Cache-Control" not in headers("/static/vendor/pyscript/core.js")      # its name never changes
    for path in ("/", "/sw.js", "/app/kvcalc.zip"):
        assert headers(path)["X-Content-Type-Options"] == "nosniff" and headers(path)["Referrer-Policy"] == "no-referrer"
        assert headers(path)["X-Frame-Options"] == "DENY"
    # Not one of the site's files: the offline copy leaves it out.
    build.write_service_worker(site)
    assert "_headers" not in (site / "sw.js").read_text()


def test_service_worker_lists_every_file_and_changes_with_content(tmp_path):
    site = tmp_path / "site"
    (site / "app").mkdir(parents=True)
    (site / "index.html").write_text("one")
    (site / "app" / "x.js").write_text("two")
    build.write_service_worker(site)
    first = (site / "sw.js").read_text()
    files = json.loads(re.search(r"const FILES = (\[.*?\]);", first).group(1))
    assert files == ["./", "./app/x.js", "./index.html"]
    (site / "app" / "x.js").write_text("three")
    build.write_service_worker(site)
    version = re.compile(r'const CACHE = PREFIX \+ "([0-9a-f]{16})"')
    assert version.search(first).group(1) != version.search((site / "sw.js").read_text()).group(1)
    # The page knows its own version (to tell a new one from itself): index.html carries it.
    (site / "index.html").write_text('<meta name="kvcalc-version" content="@VERSION@">')
    build.write_service_worker(site)
    own = re.search(r'content="([0-9a-f]{16})"', (site / "index.html").read_text()).group(1)
    assert own == version.search((site / "sw.js").read_text()).group(1)


def test_manifest_works_from_a_sub_path():
    manifest = json.loads((ROOT / "static" / "manifest.webmanifest").read_text())
    # Relative to the manifest (static/), so the app installs wherever dist/ is hosted.
    assert manifest["start_url"] == "../" and manifest["scope"] == "../"
    assert manifest["icons"] and not any(i["src"].startswith("/") for i in manifest["icons"])
