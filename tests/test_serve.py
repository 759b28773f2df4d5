"""tools/serve.py sends the headers a static host should send (issue 14): application/wasm for
Pyodide's streaming compile, a year for content-hashed files, revalidation for the rest, gzip for
what compresses."""

import gzip
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request

from support import ROOT


def test_headers_a_static_host_should_send(tmp_path):
    (tmp_path / "index.html").write_text("<!doctype html>")
    (tmp_path / "sw.js").write_text("//")
    vendor = tmp_path / "static" / "vendor"
    (vendor / "pyscript").mkdir(parents=True)
    (vendor / "pyodide").mkdir(parents=True)
    (vendor / "pyscript" / "core-C9KDLldu.js").write_text("//")
    (vendor / "pyscript" / "core.js").write_text("//")
    (vendor / "pyodide" / "pyodide.asm.wasm").write_bytes(b"\0asm")
    proc = subprocess.Popen([sys.executable, str(ROOT / "tools" / "serve.py"), str(tmp_path), "--port", "0"],
                            stdout=subprocess.PIPE, text=True)
    try:
        base = proc.stdout.readline().split()[-1]

        def headers(path):
            with urllib.request.urlopen(base + path) as response:
                return response.headers
        assert headers("static/vendor/pyodide/pyodide.asm.wasm")["Content-Type"] == "application/wasm"
        assert headers("static/vendor/pyscript/core-C9KDLldu.js")["Cache-Control"] == \
            "public, max-age=31536000, immutable"
        for path in ("", "sw.js", "static/vendor/pyscript/core.js", "static/vendor/pyodide/pyodide.asm.wasm"):
            assert headers(path)["Cache-Control"] == "no-cache", path
        assert headers("sw.js")["Last-Modified"]
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def _serve(root, *options):
    proc = subprocess.Popen([sys.executable, str(ROOT / "tools" / "serve.py"), str(root), "--port", "0", *options],
                            stdout=subprocess.PIPE, text=True)
    return proc, proc.stdout.readline().split()[-1]


def _get(url, **headers):
    request = urllib.request.Request(url, headers=headers)
    try:
        with urllib.request.urlopen(request) as response:
            return response.status, response.headers, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.headers, error.read()


def test_gzip_for_what_compresses_when_the_browser_accepts_it(tmp_path):
    wasm = bytes(range(256)) * 400 + b"\0" * 50_000      # compresses, like Pyodide's wasm
    (tmp_path / "pyodide.asm.wasm").write_bytes(wasm)
    (tmp_path / "index.html").write_text("<!doctype html>" + "<p>figures</p>" * 200)
    (tmp_path / "app.zip").write_bytes(b"PK" + b"\0" * 5000)
    (tmp_path / "tiny.js").write_text("//")
    proc, base = _serve(tmp_path)
    try:
        status, headers, body = _get(base + "pyodide.asm.wasm", **{"Accept-Encoding": "gzip, deflate, br"})
        assert status == 200 and headers["Content-Encoding"] == "gzip"
        assert headers["Content-Type"] == "application/wasm" and headers["Vary"] == "Accept-Encoding"
        assert int(headers["Content-Length"]) == len(body) < len(wasm) // 3
        assert gzip.decompress(body) == wasm
        # The directory index is the same file, compressed the same way.
        status, headers, body = _get(base, **{"Accept-Encoding": "gzip"})
        assert headers["Content-Encoding"] == "gzip"
        assert gzip.decompress(body) == (tmp_path / "index.html").read_bytes()
        # Refused (q=0) or not offered: the file as it is, still marked as varying.
        for offer in ({"Accept-Encoding": "gzip;q=0, identity"}, {"Accept-Encoding": "identity"}, {}):
            status, headers, body = _get(base + "pyodide.asm.wasm", **offer)
            assert headers["Content-Encoding"] is None and body == wasm, offer
            assert headers["Vary"] == "Accept-Encoding"
        # Zips are compressed already; a tiny file is not worth it.
        for name in ("app.zip", "tiny.js"):
            status, headers, body = _get(base + name, **{"Accept-Encoding": "gzip"})
            assert headers["Content-Encoding"] is None and body == (tmp_path / name).read_bytes()
        assert _get(base + "app.zip")[1]["Vary"] is None
        # Revalidation answers 304 on the compressed path too; a new version is compressed anew.
        modified = _get(base + "pyodide.asm.wasm", **{"Accept-Encoding": "gzip"})[1]["Last-Modified"]
        status, headers, body = _get(base + "pyodide.asm.wasm",
                                     **{"Accept-Encoding": "gzip", "If-Modified-Since": modified})
        assert status == 304 and body == b""
        # As the standard library reads it: a date without a zone is UTC; one in another zone is ignored.
        for since, expected in (("Mon, 01 Jan 2035 00:00:00", 304), ("Mon, 01 Jan 2035 00:00:00 +0100", 200)):
            assert _get(base + "pyodide.asm.wasm", **{"Accept-Encoding": "gzip", "If-Modified-Since": since})[0] == \
                expected, since
        newer = wasm[::-1] + b"new release"
        (tmp_path / "pyodide.asm.wasm").write_bytes(newer)
        os.utime(tmp_path / "pyodide.asm.wasm", (time.time() + 10, time.time() + 10))
        status, headers, body = _get(base + "pyodide.asm.wasm",
                                     **{"Accept-Encoding": "gzip", "If-Modified-Since": modified})
        assert status == 200 and gzip.decompress(body) == newer
        assert _get(base + "missing.js", **{"Accept-Encoding": "gzip"})[0] == 404
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_accept_encoding_is_read_as_rfc_9110_says():
    sys.path.insert(0, str(ROOT / "tools"))
    from serve import accepts_gzip
    assert accepts_gzip("gzip, deflate, br, zstd")          # Chromium's
    assert accepts_gzip("br;q=1.0, gzip;q=0.8, *;q=0.1")
    assert accepts_gzip("*")
    assert not accepts_gzip("gzip;q=0")
    assert not accepts_gzip("gzip;q=0.0, br")
    assert not accepts_gzip("identity")
    assert not accepts_gzip("")
    assert not accepts_gzip(None)
    assert not accepts_gzip("gzip;q=zero")
    assert accepts_gzip("*;q=0, gzip")
    assert not accepts_gzip("gzip;q=0, *")


def test_no_gzip_sends_every_file_as_it_is(tmp_path):
    # To measure what a host without compression would give (bench, docs/hosting.md).
    wasm = b"\0asm" + b"\0" * 50_000
    (tmp_path / "pyodide.asm.wasm").write_bytes(wasm)
    proc, base = _serve(tmp_path, "--no-gzip")
    try:
        status, headers, body = _get(base + "pyodide.asm.wasm", **{"Accept-Encoding": "gzip"})
        assert status == 200 and headers["Content-Encoding"] is None and body == wasm
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_security_headers_come_from_the_headers_file_build_writes(tmp_path):
    # The policy is written once (tools/build.py CSP, into dist/_headers); serve.py sends what
    # that file says: the CSP with frame-ancestors on the HTML pages, the rest everywhere.
    sys.path.insert(0, str(ROOT / "tools"))
    import build
    (tmp_path / "index.html").write_text("<!doctype html>" + "<p>figures</p>" * 200)
    (tmp_path / "sw.js").write_text("//")
    (tmp_path / "static" / "vendor" / "pyscript").mkdir(parents=True)
    (tmp_path / "static" / "vendor" / "pyscript" / "core-C9KDLldu.js").write_text("//")
    build.write_headers(tmp_path)
    proc, base = _serve(tmp_path)
    try:
        for path, offer in (("", {}), ("index.html", {}), ("", {"Accept-Encoding": "gzip"})):
            status, headers, _ = _get(base + path, **offer)
            assert status == 200 and headers["Content-Security-Policy"] == build.HEADER_CSP, (path, offer)
            assert "frame-ancestors 'none'" in headers["Content-Security-Policy"]
            assert headers.get_all("X-Content-Type-Options") == ["nosniff"]       # once, not twice
            assert headers["Referrer-Policy"] == "no-referrer" and headers["X-Frame-Options"] == "DENY"
        status, headers, _ = _get(base + "sw.js")
        assert headers["Content-Security-Policy"] is None and headers["X-Frame-Options"] == "DENY"
        assert headers["Cache-Control"] == "no-cache"
        assert _get(base + "static/vendor/pyscript/core-C9KDLldu.js")[1].get_all("Cache-Control") == \
            ["public, max-age=31536000, immutable"]
        # A rebuilt site is served with its own policy (the file is read again when it changes).
        (tmp_path / "_headers").write_text("/\n  Content-Security-Policy: default-src 'none'\n")
        os.utime(tmp_path / "_headers", (time.time() + 10, time.time() + 10))
        assert _get(base)[1]["Content-Security-Policy"] == "default-src 'none'"
        assert _get(base + "index.html")[1]["Content-Security-Policy"] is None
        # Errors carry them too, and a site without the file gets serve.py's own two.
        (tmp_path / "_headers").unlink()
        status, headers, _ = _get(base + "missing.html")
        assert status == 404 and headers["X-Content-Type-Options"] == "nosniff"
        assert headers["Content-Security-Policy"] is None
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_headers_file_rules():
    sys.path.insert(0, str(ROOT / "tools"))
    from serve import parse_headers_file, rule_matches
    rules = parse_headers_file("# comment\n/\n  A: 1\n  B: x: y\n\n/static/*\n  C: 2\n/*.js\n  D: 3\n")
    assert rules == [("/", {"A": "1", "B": "x: y"}), ("/static/*", {"C": "2"}), ("/*.js", {"D": "3"})]
    assert rule_matches("/", "/") and not rule_matches("/", "/index.html")
    assert rule_matches("/static/*", "/static/a/b.js") and not rule_matches("/static/*", "/app/static/x")
    assert rule_matches("/*.js", "/static/a.js") and not rule_matches("/*.js", "/a.json")
    assert rule_matches("/a.b", "/a.b") and not rule_matches("/a.b", "/axb")        # dots are literal
