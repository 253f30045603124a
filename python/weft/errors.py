"""weft's exceptions: UserError for mistakes in what was given (located when a file is involved),
InternalError for bugs in weft. The C++ core raises these same classes."""


class UserError(Exception):
    """A mistake in the input: a program, an option, an array. ``str(e)`` reads
    ``file:line:col: error: message`` when the location is known; ``file``, ``line`` and
    ``column`` hold it (None when unknown) and ``message`` the bare message."""

    def __init__(self, text, message=None, file=None, line=None, column=None):
        super().__init__(text)
        self.message = text if message is None else message
        self.file = file
        self.line = line
        self.column = column


class InternalError(Exception):
    """A broken invariant inside weft: a bug in weft, never in the input. Please report it."""


def user_error(message, file=None):
    """A UserError raised from Python, rendered as the C++ ones are."""
    text = f"{file}: error: {message}" if file else f"error: {message}"
    return UserError(text, message, file)
