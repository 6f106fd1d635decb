"""Every failure a user can cause is a TextclfError; the CLI and the service turn it into a one-line message.

Each message names the thing that is wrong and the fix, e.g.
"corpus path 'x/' does not exist: pass a folder with one sub-folder per label, a .csv or a .jsonl file".
"""


class TextclfError(Exception):
    """Base class: a problem with the user's input or environment, not a bug."""


class CorpusError(TextclfError):
    """The corpus cannot be read or is unusable (missing, empty, one label, ...)."""


class InputError(TextclfError):
    """A document handed to predict cannot be used (missing, empty, binary, too large)."""


class ArtifactError(TextclfError):
    """A model file is missing, corrupt, foreign or of a newer format."""


class DatabaseError(TextclfError):
    """The run database cannot be opened or written (locked, read-only, newer schema)."""


class SettingsError(TextclfError):
    """A setting is out of range or names an unknown option."""


class BackendError(TextclfError):
    """The requested compute backend is not available on this machine."""
