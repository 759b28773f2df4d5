"""The build: dist/ holds exactly what a static host needs, the default view is rendered into
the HTML by the engine, and the offline copy is versioned by content."""

import html
import json
import re
import sys

from support import ROOT

sys.path.insert(0, str(ROOT / "tools"))
import build  # noqa: E402

from kvcalc.options import evaluate, form_values  # noqa: E402
from kvcalc.report import page_texts  # noqa: E402


def test_default_view_is_prerendered_by_the_engine():
    text = build.render_index()
    parser = build._FormDefaults()
    parser.feed(text)
    evaluation = evaluate(form_values(parser.values))
    expected = page_texts(evaluation.scenario, evaluation.result)["metrics"]
    for key, (value, figure, exact) in expected.items():
        match = re.search(rf'<(?:dd|p)[^>]* data-metric="{key}" data-value="([^"]*)"[^>]*><span class="figure">([^<]*)'
                          r'</span> <span class="exact">([^<]*)</span></(?:dd|p)>', text)
        assert match, key
        assert html.unescape(match.group(1)) == value
        assert [html.unescape(match.group(2)), html.unescape(match.group(3))] == [figure, exact]
    # Each figure's condition is written beside it before Python starts.
    conditions = page_texts(evaluation.scenario, evaluation.result)["metric_conditions"]
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


def test_manifest_works_from_a_sub_path():
    manifest = json.loads((ROOT / "static" / "manifest.webmanifest").read_text())
    # Relative to the manifest (static/), so the app installs wherever dist/ is hosted.
    assert manifest["start_url"] == "../" and manifest["scope"] == "../"
    assert manifest["icons"] and not any(i["src"].startswith("/") for i in manifest["icons"])
