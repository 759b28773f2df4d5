#!/usr/bin/env python3
"""Serve a directory over HTTP for local use and tests (stdlib only).

    python3 tools/serve.py DIR [--host 127.0.0.1] [--port 8000]

* Binds 127.0.0.1 unless told otherwise.
* ``--port 0`` picks a free port. Whatever the port, the first line on
  stdout is ``serving http://HOST:PORT/`` (flushed), so a test can start the
  server and read the URL back.
* MIME types are fixed here rather than taken from the host's mimetypes
  database: Pyodide needs ``application/wasm`` for streaming compilation and
  browsers only run module scripts served as JavaScript.
* Cache-Control as a static host should send it: a year for content-hashed files, revalidation
  for every name that stays the same across releases (see cache_control and the README).
* Threaded; per-request logging is off (errors still go to stderr).
"""

from __future__ import annotations

import argparse
import functools
import http.server
import os
import re
import socket
import sys

MIME_TYPES = {
    "": "application/octet-stream",
    ".html": "text/html; charset=utf-8",
    ".htm": "text/html; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".mjs": "text/javascript; charset=utf-8",
    ".json": "application/json",
    ".map": "application/json",
    ".webmanifest": "application/manifest+json",
    ".wasm": "application/wasm",
    ".zip": "application/zip",
    ".whl": "application/zip",
    ".py": "text/x-python; charset=utf-8",
    ".toml": "application/toml; charset=utf-8",
    ".txt": "text/plain; charset=utf-8",
    ".md": "text/markdown; charset=utf-8",
    ".csv": "text/csv; charset=utf-8",
    ".svg": "image/svg+xml",
    ".png": "image/png",
    ".ico": "image/x-icon",
    ".jpg": "image/jpeg",
    ".jpeg": "image/jpeg",
    ".gif": "image/gif",
    ".webp": "image/webp",
    ".woff2": "font/woff2",
    ".woff": "font/woff",
}


# File names that carry a hash of their content (PyScript's chunks: core-C9KDLldu.js) never
# change: a browser may keep them for a year. Everything else keeps its name across releases
# (index.html, sw.js, the app zip, Pyodide's files), so the browser revalidates it each time
# (Last-Modified / If-Modified-Since answer 304 when it has not changed).
HASHED_NAME = re.compile(r"/static/vendor/pyscript/[\w-]+-[\w-]{8}\.js$")


def cache_control(path: str) -> str:
    path = path.split("?", 1)[0].split("#", 1)[0]
    return "public, max-age=31536000, immutable" if HASHED_NAME.search(path) else "no-cache"


class Handler(http.server.SimpleHTTPRequestHandler):
    extensions_map = MIME_TYPES
    # HTTP/1.1 keep-alive: many small files (module chunks) load faster.
    protocol_version = "HTTP/1.1"

    def guess_type(self, path):  # noqa: D102 - stdlib override
        _, ext = os.path.splitext(str(path))
        return MIME_TYPES.get(ext.lower(), MIME_TYPES[""])

    def end_headers(self):
        self.send_header("Cache-Control", cache_control(self.path))
        self.send_header("X-Content-Type-Options", "nosniff")
        super().end_headers()

    def log_message(self, format, *args):  # quiet access log
        pass

    def log_error(self, format, *args):
        sys.stderr.write("%s - %s\n" % (self.address_string(), format % args))


class Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def handle_error(self, request, client_address):
        # A browser that closes a connection mid-file (a reload, a closed tab) is not an error.
        if isinstance(sys.exc_info()[1], (BrokenPipeError, ConnectionResetError)):
            return
        super().handle_error(request, client_address)


class Server6(Server):
    address_family = socket.AF_INET6


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("directory", help="directory to serve")
    parser.add_argument("--host", default="127.0.0.1", help="bind address (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=8000, help="port, 0 = pick a free one (default 8000)")
    args = parser.parse_args(argv)

    root = os.path.abspath(args.directory)
    if not os.path.isdir(root):
        parser.error(f"not a directory: {args.directory}")

    handler = functools.partial(Handler, directory=root)
    server_cls = Server6 if ":" in args.host else Server
    try:
        httpd = server_cls((args.host, args.port), handler)
    except OSError as exc:
        print(f"serve.py: cannot bind {args.host}:{args.port}: {exc}", file=sys.stderr)
        return 1
    host, port = httpd.server_address[:2]
    shown = f"[{host}]" if ":" in host else host
    print(f"serving http://{shown}:{port}/", flush=True)
    try:
        httpd.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        httpd.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
