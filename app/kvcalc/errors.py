"""The one error type the engine raises for anything a user typed, linked or uploaded."""


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
