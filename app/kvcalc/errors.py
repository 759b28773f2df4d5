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
