"""What every corpus format shares: the skip counts (ReadStats), a line-file's format decided once (LineFormat),
the column names a table's header or a JSONL record may give, and reading a file's lines with their offsets."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

from pipelines.documents import BINARY_SNIFF_BYTES, decode_text, is_binary
from pipelines.errors import CorpusError

FORMAT_HINT = (
    "pass a folder with one sub-folder per label, a .csv, .tsv, .jsonl or .parquet file, or a fastText "
    "file (\"__label__<label> <text>\" a line)"
)


TSV_SUFFIXES = (".tsv", ".tab")


# The column names a header row may give its label and its text (lowercase; table_columns). Label names in order
# of preference: a header naming two of them takes the first as the label. The names public corpora use.
# A table's label column with one of these names holds several labels a document, split by TABLE_LABEL_SEPARATOR
# ("labels": "grain,trade"; an empty cell: none of them); one named "label" (the others of LABEL_COLUMNS) holds one.
MULTI_LABEL_COLUMNS = ("labels", "tags", "topics", "categories")


TABLE_LABEL_SEPARATOR = ","


LABEL_COLUMNS = (
    "label",
    "labels",
    "class",
    "category",
    "sentiment",
    "target",
    "topic",
    "intent",
    "tags",
    "topics",
    "categories",
)


TEXT_COLUMNS = (
    "text",
    "sentence",
    "review",
    "content",
    "body",
    "title",
    "description",
    "document",
    "question",
    "message",
    "comment",
    "tweet",
)


@dataclass
class ReadStats:
    """What reading found besides the documents, filled in as the documents are read."""

    skipped: Counter = field(default_factory=Counter)  # files or rows left out, by reason
    non_utf8: int = 0  # documents decoded with a fallback encoding (kept)
    empty_labels: list[str] = field(default_factory=list)  # label folders whose every file was skipped
    bytes_read: int = 0  # of a CSV or JSONL file so far (a folder's files are not added up)
    bytes_total: int = 0  # that file's size (0 for a folder: not known before its walk)


def _file_head(path: str | Path) -> bytes:
    """The file's first BINARY_SNIFF_BYTES, or nothing where it cannot be read."""
    try:
        with open(path, "rb") as handle:
            return handle.read(BINARY_SNIFF_BYTES)
    except OSError:
        return b""


def _part(items: list, index: int, count: int) -> list:
    """Share `index` of `count` of a list: its contiguous [index L / count, (index + 1) L / count) part."""
    return items[len(items) * index // count : len(items) * (index + 1) // count]


@dataclass(frozen=True)
class LineFormat:
    """How the lines of a file of one document a line are documents (line_format): JSONL, fastText's format, or a
    CSV or TSV file as _csv_documents reads it, its first row's reading decided once for every share; or how a
    Parquet file's rows are (parquet_format: its workers' shares are row groups, not bytes)."""

    kind: str  # "jsonl", "fasttext", "csv", "tsv" or "parquet"
    label_column: int = 0  # a table's
    text_columns: tuple[int, ...] | None = None  # a table's; None: every column after the label's
    escapes: bool = False  # a table's line breaks written as "\\n" (newline_escapes)
    header_bytes: int = 0  # a table's header row: the bytes of its first line, not a document
    class_names: tuple[str, ...] | None = None  # a Parquet label column's ClassLabel names (class_label_names)
    text_keys: tuple[str, ...] = ("text",)  # a JSONL file's text keys (jsonl_format), joined where several
    label_key: str = "label"  # a JSONL file's label key
    label_separator: str | None = None  # a table's label cells hold several labels split by this (MULTI_LABEL_COLUMNS)
    header_width: int = 0  # a table's header's cells (0: no header): a row's cells past them are counted, unread


class LineBreakInField(Exception):
    """A CSV or TSV line that is not a row of whole fields as one reader of the file reads it (_line_row): the file
    is read by one reader from the top (_csv_documents)."""


def _check_text_file(path: Path, kind: str) -> None:
    with path.open("rb") as handle:
        head = handle.read(BINARY_SNIFF_BYTES)
    if not head.strip() and path.stat().st_size <= len(head):
        raise CorpusError(f"{kind} corpus '{path}' is empty: add one document per row")
    if is_binary(head):
        raise CorpusError(f"{kind} corpus '{path}' is a binary file, not text: {FORMAT_HINT}")


def _decoded_lines(path: Path, stats: ReadStats, start: int = 0, end: int | None = None) -> Iterator[str]:
    """The file's lines, line endings kept, each decoded on its own (UTF-8, else the fallbacks of
    pipelines/documents.py), read a buffer at a time. start, end: only the lines that start in bytes
    [start, end) (a line that starts before `start` belongs to the share before)."""
    return (line for _, line in _placed_lines(path, stats, start, end))


def _placed_lines(path: Path, stats: ReadStats, start: int = 0, end: int | None = None) -> Iterator[tuple[int, str]]:
    """_decoded_lines, each with the byte offset its line starts at."""
    with path.open("rb") as handle:
        position = start
        if start > 0:
            handle.seek(start - 1)
            position = start - 1 + len(handle.readline())  # the end of the line holding byte start - 1
        for raw in handle:
            if end is not None and position >= end:
                return
            line, fallback = decode_text(raw)
            stats.non_utf8 += fallback
            yield position, line
            position += len(raw)
            stats.bytes_read += len(raw)
