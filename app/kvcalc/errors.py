"""The one error type the engine raises for anything a user typed, linked or uploaded, and the
header readers' request for more of a file (NeedMore) with the loop that answers it."""


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
    The header readers (GGUF, safetensors) raise it so a caller reading through File.slice or
    a file handle fetches a longer prefix and tries again."""

    def __init__(self, size: int):
        super().__init__(f"need {size} bytes")
        self.size = size

    def next_read(self, have: int, file_size: int) -> int:
        """How much of the file's start to read next: what the reader asks, and at least twice
        what it had, so a header that keeps asking takes few reads."""
        return min(file_size, max(self.size, 2 * have))


FIRST_READ = 1 << 20          # a checkpoint's header usually fits; more is read only when asked


def read_header_from(fh, file_size: int, read_header, first: int = FIRST_READ):
    """read_header(data, file_size) on the start of an open binary file, read longer while the
    reader raises NeedMore."""
    want = min(first, file_size)
    while True:
        fh.seek(0)
        try:
            return read_header(fh.read(want), file_size)
        except NeedMore as more:
            want = more.next_read(want, file_size)
