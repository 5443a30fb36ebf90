"""The one exception type users see: a sentence saying what is wrong and what to do."""


class PorterError(Exception):
    """An error the user can act on. The CLI prints its message on one line, no traceback."""
