"""Every failure a user can cause is one of USER_ERRORS; the CLI and the service turn it into a one-line message.

The lower layers (pipelines/, db/) import nothing from textclf, so they raise their own exception classes
(pipelines.errors.CorpusError, db.errors.DatabaseError / StateError); they are re-exported here and counted in
USER_ERRORS, so the application catches one tuple.

Each message names the thing that is wrong and the fix, e.g.
"corpus path 'x/' does not exist: pass a folder with one sub-folder per label, a .csv, .tsv or .jsonl file".
"""

from db.errors import DatabaseError, InvalidName, StateError
from pipelines.errors import CorpusError


class TextclfError(Exception):
    """Base class: a problem with the user's input or environment, not a bug."""


class InputError(TextclfError):
    """A document handed to predict cannot be used (missing, empty, binary, too large)."""


class ArtifactError(TextclfError):
    """A model file is missing, corrupt, foreign or of a newer format."""


class SettingsError(TextclfError, ValueError):
    """A setting is out of range or names an unknown option."""


class BackendError(TextclfError):
    """The requested compute backend is not available on this machine."""


USER_ERRORS = (TextclfError, CorpusError, DatabaseError, StateError, InvalidName)
