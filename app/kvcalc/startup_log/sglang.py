"""SGLang's start-up lines (to be read)."""

NAME = "sglang"
RULES = ()
EXPECTED = ()


def complete(sink) -> None:
    """What follows from the lines together."""
