"""llama.cpp's start-up lines (to be read)."""

NAME = "llama.cpp"
RULES = ()
EXPECTED = ()


def complete(sink) -> None:
    """What follows from the lines together."""
