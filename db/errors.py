"""The exceptions the run database raises; the application (textclf/errors.py) treats them as user errors."""


class DatabaseError(Exception):
    """The run database cannot be opened or written (locked, read-only, newer schema), or holds no such row."""


class StateError(Exception):
    """A row is in a state that does not allow the change asked for (e.g. cancelling a finished job)."""


class InvalidName(ValueError):
    """A model or job name outside the safe alphabet (it names a folder: it must not escape it)."""
