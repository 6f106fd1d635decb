"""Which format a corpus path is, decided once (corpus_format): a folder of label folders, or a file by its suffix
(FORMATS), else fastText's by its first line; with what that format decides from the file before reading it (a
table's header, a JSONL file's keys, a Parquet file's columns). Every reader then carries the decision out."""

from __future__ import annotations

from pathlib import Path

from pipelines.documents import is_binary
from pipelines.errors import CorpusError
from pipelines.formats.base import FORMAT_HINT, CorpusFormat, _file_head
from pipelines.formats.fasttext import FASTTEXT_LABEL_PREFIX, FastTextFormat, is_fasttext_head
from pipelines.formats.folder import FolderFormat, check_corpus_path
from pipelines.formats.jsonl import JsonlFormat
from pipelines.formats.parquet import ParquetFormat
from pipelines.formats.table import TableFormat

# A corpus file's format by its suffix (lowercase); a file of none of them is fastText's where its first line says so.
FORMATS = {
    ".csv": TableFormat,
    ".tsv": TableFormat,
    ".tab": TableFormat,
    ".jsonl": JsonlFormat,
    ".ndjson": JsonlFormat,
    ".parquet": ParquetFormat,
}


def corpus_format(path: str | Path) -> CorpusFormat:
    """The format of the corpus at `path`, decided from the path and the file's first bytes; a path that is no
    corpus (missing, outside the data root, not a file or folder, of no known format) refused, naming the fix."""
    path = Path(path)
    check_corpus_path(path)
    if path.is_dir():
        return FolderFormat()
    chosen = FORMATS.get(path.suffix.lower())
    if chosen is not None:
        return chosen.of(path)
    head = _file_head(path)
    if is_fasttext_head(head):
        return FastTextFormat()
    raise CorpusError(_unknown_file(path, head))


def _unknown_file(path: Path, head: bytes) -> str:
    """Why a file of no known format (its first bytes: head) is refused, and what to do."""
    kind = f"unknown type '{path.suffix}'" if path.suffix else "no known type (no suffix, no \"__label__\" first line)"
    if FASTTEXT_LABEL_PREFIX.encode() in head and not is_binary(head):
        return (
            f"corpus path '{path}' reads as fastText's format but its first line holds no "
            f"\"{FASTTEXT_LABEL_PREFIX}\": give every line a \"{FASTTEXT_LABEL_PREFIX}<label>\" (or remove the "
            "first line if it is a header)"
        )
    if b"\t" in head.split(b"\n", 1)[0]:  # e.g. Reuters R8/R52's "r8-train-all-terms.txt": label, a tab, the text
        return (
            f"corpus path '{path}' is a file of {kind}: its lines hold tabs; if each is a label, a tab "
            f"and its text, name the file .tsv (e.g. '{path.with_suffix('.tsv').name}')"
        )
    return f"corpus path '{path}' is a file of {kind}: {FORMAT_HINT}"
