"""The one exception the pipelines raise for input they cannot use.

Messages name the thing that is wrong and the fix, e.g. "corpus path 'x/' does not exist: pass a folder with one
sub-folder per label, a .csv, .tsv or .jsonl file". The application (textclf/errors.py) treats it as a user error.
"""


class CorpusError(Exception):
    """The corpus cannot be read or is unusable (missing, empty, one label, ...)."""
