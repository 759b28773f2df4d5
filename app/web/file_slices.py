"""Reading files by slices for web.files: the engine's incremental header parsers
(kvcalc/errors.py) ask for byte ranges, each one File.slice; between slices of their work the page
gets its thread back (asyncio.sleep(0) is a browser task in Pyodide's event loop), and the bytes
read are shown in #files-status now and then."""

import asyncio
import time

from kvcalc.errors import PAUSE

from web.dom import put

CHUNK_BYTES = 1 << 20            # one File.slice read
SLICE_SECONDS = 0.02             # the longest the parsers run before the page gets its thread back
STATUS_SECONDS = 0.1             # how often the bytes read are shown


class Cancelled(Exception):
    """Newer files were opened while these were read."""


def size_text(n: int) -> str:
    return f"{n / 1e9:.1f} GB" if n >= 1e9 else f"{n / 1e6:.1f} MB"


class Progress:
    """The bytes read so far, shown in #files-status now and then; and when to yield."""

    def __init__(self, generation: int, latest: list):
        self.generation, self.latest = generation, latest      # latest[0]: the newest reading's number
        self.name, self.size, self.read = "", 0, 0
        self.shown = self.yielded = time.monotonic()

    def file(self, file) -> None:
        self.name, self.size, self.read = str(file.name), int(file.size), 0

    def add(self, n: int) -> None:
        self.read += n
        now = time.monotonic()
        if now - self.shown >= STATUS_SECONDS:
            self.shown = now
            put("#files-status", f"Reading the headers here in this tab… {self.name[:80]}: "
                                 f"{size_text(self.read)} of {size_text(self.size)} read")

    async def breathe(self, force: bool = False) -> None:
        """Give the page its thread back when the parsers have held it a slice's time."""
        if force or time.monotonic() - self.yielded >= SLICE_SECONDS:
            await asyncio.sleep(0)
            self.yielded = time.monotonic()
        if self.latest[0] != self.generation:
            raise Cancelled()


async def read_bytes(file, start: int, end: int) -> bytes:
    buffer = await file.slice(start, end).arrayBuffer()
    return bytes(buffer.to_py())


async def drive(parser, file, progress: Progress):
    """Run an engine header parser on `file`: each (start, end) it asks for is one File.slice
    of about a chunk; after each slice of its work the page runs."""
    size = int(file.size)
    request = next(parser)
    while True:
        reply = None
        if request is not PAUSE:
            start, end = request
            reply = await read_bytes(file, start, min(size, max(end, start + CHUNK_BYTES)))
            progress.add(len(reply))
            progress.yielded = time.monotonic()      # the await gave the page its thread
        await progress.breathe()
        try:
            request = parser.send(reply)
        except StopIteration as done:
            return done.value


async def whole(file, progress: Progress) -> bytes:
    """A small file (config.json, an index) in full, a chunk at a time."""
    parts, size = [], int(file.size)
    for start in range(0, size, CHUNK_BYTES):
        parts.append(await read_bytes(file, start, min(size, start + CHUNK_BYTES)))
        progress.add(len(parts[-1]))
        await progress.breathe()
    return b"".join(parts)


async def run_parser(parser, progress: Progress):
    """A parser that reads nothing (its text is given), run with the page's pauses."""
    while True:
        await progress.breathe()
        try:
            next(parser)
        except StopIteration as done:
            return done.value
