"""The one error type the engine raises for anything a user typed, linked or uploaded, and the
header readers' way of asking for bytes (NeedMore, and the incremental parsers' drivers).

A header parser (gguf.parse, safetensors.parse) is a generator that never touches a file. It
yields `(start, end)` when it needs the file's bytes from `start` to at least `end`, and is sent
them (a driver may send more, up to a chunk; never fewer); it yields PAUSE when it has done a
slice of work and the page may run its event loop. Its return value is the header. So one
parser serves the CLI (a file handle), the page (File.slice, awaited) and bytes in memory, and
a longer read continues where the parser stopped instead of parsing again from byte 0.
"""


class InputError(ValueError):
    """A value a user can fix: which field, what was wrong, what is allowed.

    `field` is the CLI long option name (or the config.json key) at fault, so the CLI, the
    page and the link decoder can all point at the same place.
    """

    def __init__(self, field: str, message: str):
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


class NeedMore(Exception):
    """A header runs past the bytes given: read at least `size` bytes from the file's start.
    Raised by the readers of bytes in memory (gguf.read_header, safetensors.read_header) when
    they are given a prefix of the file."""

    def __init__(self, size: int):
        super().__init__(f"need {size} bytes")
        self.size = size

    def next_read(self, have: int, file_size: int) -> int:
        """How much of the file's start to read next: what the reader asks, and at least twice
        what it had, so a header that keeps asking takes few reads."""
        return min(file_size, max(self.size, 2 * have))


PAUSE = None                  # what a parser yields between slices of work: nothing to read
FIRST_READ = 1 << 20          # a checkpoint's header usually fits; more is read only when asked
CHUNK_BYTES = 1 << 20         # each further read: a header costs its own size plus at most this


def drive(parser, read):
    """Run a header parser, answering each (start, end) it asks for with read(start, end): the
    bytes from start to at least end (more is fine, up to a chunk)."""
    request = next(parser)
    while True:
        reply = None if request is PAUSE else read(*request)
        try:
            request = parser.send(reply)
        except StopIteration as done:
            return done.value


def parse_bytes(parser, data):
    """Run `parser` on `data`, the start of the file (the whole file, or a prefix of it: then
    NeedMore says how long a prefix the parser needs)."""
    view = memoryview(data)

    def read(start: int, end: int):
        if end > len(view):
            parser.close()
            raise NeedMore(end)
        return view[start:]
    return drive(parser, read)


def read_header_from(fh, file_size: int, parse, chunk: int = CHUNK_BYTES):
    """The header of an open binary file, parsed by `parse(file_size)` (gguf.parse,
    safetensors.parse): each byte the parser needs is read once, in reads of about `chunk`
    bytes, and the bytes it steps over (a skipped array) are never read."""
    def read(start: int, end: int) -> bytes:
        fh.seek(start)
        return fh.read(min(file_size, max(end, start + chunk)) - start)
    return drive(parse(file_size), read)


class Window:
    """A parser's view of the file: the bytes read so far from `start` (`data`), its position
    `pos`, and the limits every read is checked against (the file's size, the header's cap).
    Only the bytes from `pos` on are kept, so memory stays at about one chunk."""

    def __init__(self, file_size: int, max_bytes: int, field: str, what: str):
        self.file_size, self.max_bytes, self.field, self.what = file_size, max_bytes, field, what
        self.data = memoryview(b"")
        self.start = self.pos = 0
        self.work = 0

    @property
    def end(self) -> int:
        return self.start + len(self.data)

    def check(self, end: int) -> None:
        """Refuse before reading past the file's end or the header's cap."""
        if end > self.file_size:
            raise InputError(self.field, f"the header runs past the end of the file ({self.file_size:,} bytes): "
                                         f"the file is truncated or not a {self.what}")
        if end > self.max_bytes:
            raise InputError(self.field, f"the header is longer than {self.max_bytes >> 20} MiB, past any real "
                                         f"{self.what} header (the largest vocabularies take tens of MB)")

    def need(self, n: int):
        """(A generator.) Make the next `n` bytes, from `pos`, available in `data`."""
        want = self.pos + n
        if want <= self.end:
            return
        self.check(want)
        keep = self.data[self.pos - self.start:] if self.pos < self.end else b""
        read_from = max(self.pos, self.end)
        got = yield (read_from, want)
        if len(got) < want - read_from:
            raise InputError(self.field, f"the file ended at {read_from + len(got):,} bytes, before the "
                                         f"{self.file_size:,} its size says")
        self.data = memoryview(b"".join((keep, got)) if len(keep) else got)
        self.start = read_from - len(keep)

    def take(self, n: int):
        """(A generator.) The next `n` bytes."""
        if self.pos + n > self.end:
            yield from self.need(n)
        at = self.pos - self.start
        self.pos += n
        return self.data[at:at + n]

    def skip(self, n: int) -> None:
        """Step over `n` bytes without reading them."""
        self.check(self.pos + n)
        self.pos += n

    def breathe(self, units: int = 1, every: int = 2048) -> bool:
        """Count work done; True when the parser should yield PAUSE (about every few ms of work,
        so the page's thread is never held long)."""
        self.work += units
        if self.work >= every:
            self.work = 0
            return True
        return False
