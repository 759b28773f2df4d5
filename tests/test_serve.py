"""tools/serve.py sends the headers a static host should send (issue 14): application/wasm for
Pyodide's streaming compile, a year for content-hashed files, revalidation for the rest."""

import subprocess
import sys
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
