"""What every corpus format shares: the skip counts (ReadStats), the interface of a format decided once
(CorpusFormat), the column names a table's header or a JSONL record may give, and reading a file's lines with their
offsets."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator, Sequence

import numpy as np

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


class CorpusFormat:
    """How a corpus's documents are read, decided once from its path (pipelines/formats/detect.py, corpus_format:
    a folder's, a table's header, a JSONL file's keys, a Parquet file's columns) and carried out by every reader of
    it: this process's, a share's and a worker's. Instances are frozen and picklable: workers are handed one."""

    kind = ""  # "folder", "csv", "tsv", "jsonl", "fasttext" or "parquet" (Corpus.format)

    def documents(
        self, path: Path, max_bytes: int, stats: ReadStats, share: tuple[int, int]
    ) -> Iterator[tuple[str, str]]:
        """(label, text) of each document of share (index, count), in the order one reader of the whole corpus
        reads them (pipelines/corpus.py says what a share holds); stats filled in as they are read."""
        raise NotImplementedError

    def most_shares(self, path: Path) -> int:
        """How many shares worker processes may parse the file in, a share each (1: one reader reads it)."""
        return 1

    def share_documents(self, path: Path, stats: ReadStats, index: int, count: int) -> Iterator[tuple[int, str, str]]:
        """A worker's share `index` of `count`: (place, label, text) of each document, its place what texts_at
        takes back (a line's byte offset, a row)."""
        raise NotImplementedError

    def texts_at(self, path: Path, places: np.ndarray) -> Iterator[str]:
        """The texts of the documents at these places (share_documents'), in this order, as reading found them."""
        raise NotImplementedError

    def place_sizes(self, places: np.ndarray, file_size: int) -> np.ndarray:
        """About the bytes of each document at these places (all of them, in order): what sizes a chunk."""
        raise NotImplementedError

    def check_labels(self, source: str, labels: Sequence[str]) -> None:
        """Refuse labels that this format's reading may have taken from the wrong place (the table's)."""

    def as_label_sets(self, texts: list[str], labels: list[str]) -> tuple[list[str], list[str]]:
        """The documents read as label sets (a multi-label run's): a format that writes a document's labels with it
        holds them already; a folder's copies of one document in several label folders are merged (FolderFormat)."""
        return texts, labels


def byte_share(path: str | Path, index: int, count: int) -> tuple[int, int]:
    """Share `index` of `count` of a file of one document a line: the bytes [start, end) its lines start in."""
    size = Path(path).stat().st_size
    return size * index // count, size * (index + 1) // count


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
