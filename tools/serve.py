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
* gzip for text, JavaScript, JSON and WebAssembly when the browser accepts it (Pyodide's
  9.6 MB wasm travels as 3.6 MB), compressed once per file version and kept in memory; zips and
  images are already compressed and go as they are.
* The headers in DIR/_headers, which tools/build.py writes for static hosts (Netlify's and
  Cloudflare Pages' format): the Content-Security-Policy on the HTML pages (the meta tag's
  policy, plus frame-ancestors), X-Content-Type-Options, Referrer-Policy... Read again whenever
  the file changes, so a rebuilt dist/ is served with its own policy.
* Threaded; per-request logging is off (errors still go to stderr).
"""

from __future__ import annotations

import argparse
import datetime
import email.utils
import functools
import gzip
import http.server
import io
import os
import re
import socket
import sys
import threading
import urllib.parse

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


def parse_headers_file(text: str) -> list[tuple[str, dict[str, str]]]:
    """The rules of a `_headers` file: a path (`*` matches any run of characters) and the
    indented `Name: value` lines under it; `#` starts a comment."""
    rules: list[tuple[str, dict[str, str]]] = []
    for line in text.splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        if not line[0].isspace():
            rules.append((line.strip(), {}))
        elif rules and ":" in line:
            name, _, value = line.strip().partition(":")
            rules[-1][1][name.strip()] = value.strip()
    return rules


def rule_matches(pattern: str, path: str) -> bool:
    return re.fullmatch(".*".join(re.escape(part) for part in pattern.split("*")), path) is not None


class HeadersFile:
    """DIR/_headers, parsed once per version of the file (none: no rules)."""

    def __init__(self):
        self._cache: dict[str, tuple] = {}
        self._lock = threading.Lock()

    def for_path(self, root: str, path: str) -> dict[str, str]:
        name = os.path.join(root, "_headers")
        try:
            stat = os.stat(name)
        except OSError:
            return {}
        key = (stat.st_size, stat.st_mtime_ns)
        with self._lock:
            cached = self._cache.get(name)
            if cached is None or cached[0] != key:
                with open(name, encoding="utf-8") as file:
                    cached = self._cache[name] = (key, parse_headers_file(file.read()))
        path = urllib.parse.unquote(path.split("?", 1)[0].split("#", 1)[0])
        found: dict[str, str] = {}
        for pattern, headers in cached[1]:
            if rule_matches(pattern, path):
                found.update(headers)
        return found


HEADERS_FILE = HeadersFile()


# Already-compressed formats (zips, images, fonts) gain nothing from gzip.
COMPRESSIBLE = {".html", ".htm", ".css", ".js", ".mjs", ".json", ".map", ".webmanifest", ".wasm", ".py",
                ".toml", ".txt", ".md", ".csv", ".svg"}
# Below this size the gzip header and a round of compression cost more than they save.
MIN_COMPRESS_BYTES = 1024
GZIP_LEVEL = 6


def accepts_gzip(header: str | None) -> bool:
    """Whether an Accept-Encoding value allows gzip (RFC 9110: gzip's own entry wins over `*`,
    and a q of 0 refuses)."""
    qualities = {}
    for item in (header or "").split(","):
        name, _, params = item.strip().partition(";")
        quality = 1.0
        for param in params.split(";"):
            key, _, value = param.strip().partition("=")
            if key.strip().lower() == "q":
                try:
                    quality = float(value)
                except ValueError:
                    quality = 0.0
        qualities.setdefault(name.strip().lower(), quality)
    return qualities.get("gzip", qualities.get("*", 0.0)) > 0


class GzipCache:
    """gzip bodies by (path, size, mtime): each version of a file is compressed once."""

    def __init__(self):
        self._bodies: dict[tuple, bytes] = {}
        self._lock = threading.Lock()

    def body(self, path: str, stat: os.stat_result) -> bytes:
        key = (path, stat.st_size, stat.st_mtime_ns)
        with self._lock:
            body = self._bodies.get(key)
            if body is None:
                with open(path, "rb") as file:
                    body = gzip.compress(file.read(), GZIP_LEVEL, mtime=0)
                self._bodies = {k: v for k, v in self._bodies.items() if k[0] != path}
                self._bodies[key] = body
            return body


GZIP_CACHE = GzipCache()


class Handler(http.server.SimpleHTTPRequestHandler):
    extensions_map = MIME_TYPES
    compress = True
    # HTTP/1.1 keep-alive: many small files (module chunks) load faster.
    protocol_version = "HTTP/1.1"

    def guess_type(self, path):  # noqa: D102 - stdlib override
        _, ext = os.path.splitext(str(path))
        return MIME_TYPES.get(ext.lower(), MIME_TYPES[""])

    def send_head(self):  # noqa: D102 - stdlib override: the gzip branch, else the stdlib's
        path = self.translate_path(self.path)
        if os.path.isdir(path) and self.path.split("?", 1)[0].endswith("/"):
            path = os.path.join(path, "index.html")
        _, ext = os.path.splitext(path)
        compressible = ext.lower() in COMPRESSIBLE
        try:
            stat = os.stat(path) if compressible else None
        except OSError:
            stat = None
        if stat is None or not self.compress or not os.path.isfile(path) or stat.st_size < MIN_COMPRESS_BYTES \
                or not accepts_gzip(self.headers.get("Accept-Encoding")):
            self._vary = compressible
            return super().send_head()
        if self._not_modified(stat):
            self.send_response(304)
            self._vary = True
            self.end_headers()
            return None
        body = GZIP_CACHE.body(path, stat)
        self.send_response(200)
        self.send_header("Content-Type", self.guess_type(path))
        self.send_header("Content-Encoding", "gzip")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Last-Modified", self.date_time_string(int(stat.st_mtime)))
        self._vary = True
        self.end_headers()
        return io.BytesIO(body)

    def _not_modified(self, stat: os.stat_result) -> bool:
        # The stdlib's rule: If-Modified-Since is honoured only without If-None-Match.
        since = self.headers.get("If-Modified-Since")
        if not since or "If-None-Match" in self.headers:
            return False
        try:
            when = email.utils.parsedate_to_datetime(since)
        except (TypeError, IndexError, OverflowError, ValueError):
            return False
        if when.tzinfo is None:           # the obsolete format without a zone is UTC
            when = when.replace(tzinfo=datetime.timezone.utc)
        return when.tzinfo is datetime.timezone.utc and int(stat.st_mtime) <= when.timestamp()

    def end_headers(self):
        if getattr(self, "_vary", False):
            # One URL, two bodies: caches must key on Accept-Encoding.
            self.send_header("Vary", "Accept-Encoding")
        self._vary = False
        extra = HEADERS_FILE.for_path(self.directory, self.path)
        self.send_header("Cache-Control", extra.pop("Cache-Control", cache_control(self.path)))
        extra.setdefault("X-Content-Type-Options", "nosniff")
        for name, value in extra.items():
            self.send_header(name, value)
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
    parser.add_argument("--no-gzip", action="store_true", help="send every file as it is (to measure a host without compression)")
    args = parser.parse_args(argv)

    root = os.path.abspath(args.directory)
    if not os.path.isdir(root):
        parser.error(f"not a directory: {args.directory}")

    handler = functools.partial(type("Handler", (Handler,), {"compress": not args.no_gzip}), directory=root)
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
