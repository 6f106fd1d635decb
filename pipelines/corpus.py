"""Corpus readers: a folder of label folders, a CSV, TSV, JSONL, fastText or Parquet file -> Corpus (texts,
labels, skip counts). (Over 600 lines: the five format readers and the share reader call each other: a share's
lines are parsed by their format's line parser, and the fastText and JSONL readers read through the share reader;
the formats split into modules of their own once each format's line parser is passed to the share reader as data.)

Formats
- folder: corpus/<label>/<any file>; files in sub-folders of a label folder belong to that label.
  Dotfiles and hidden folders are skipped everywhere; files beside the label folders are skipped and counted, as
  are the files of a folder named for unlabelled documents (UNLABELLED_FOLDERS: aclImdb's "unsup").
- CSV (.csv) and TSV (.tsv, .tab): without a header row, column 1 is the label and the other columns are joined
  as the text (AG News: class index, title, description). A header row is one that names a label column
  (LABEL_COLUMNS: "label", "class", "category", "sentiment", ...; the first of those it holds is the label); the
  text is then its text columns (TEXT_COLUMNS: "text", "sentence", "review", "title", ...) joined, or where it
  names none, every other column. GLUE's SST-2 ("sentence<TAB>label") and Kaggle's IMDB reviews
  ("review,sentiment") read as they are. Line breaks written as "\\n" (Yelp, DBpedia, Yahoo Answers) or as a
  backslash alone (AG News) become spaces (newline_escapes). A TSV
  file is the IANA text/tab-separated-values format: no quoting (a quote mark is text, as GLUE's files hold
  them), one row a line.
- JSONL (.jsonl/.ndjson): one {"text": ..., "label": ...} object per line; where the first record has no "text" or
  "label" key, its keys as a table's header names columns (jsonl_format: GLUE's {"idx", "sentence", "label"}).
- fastText's format (any other text file whose first non-blank line starts with "__label__", e.g. fastText's
  `cooking.train` or Kaggle's `train.ft.txt`): one document a line, "__label__<label> <text>". As fastText reads
  it, every word that starts with "__label__" is a label, wherever it stands; the label is the word without the
  prefix (the prefix is the format's, not the user's label). A line with two or more labels is refused with its
  number: textclf trains one label a document, and taking one of them would change the data unseen. A line
  without a label is skipped and counted (fastText skips it too).
- Parquet (.parquet, e.g. a Hugging Face dataset's `train-00000-of-00001.parquet`): the columns are named as a
  table's header names them (LABEL_COLUMNS, TEXT_COLUMNS; where it names no text column, every other string
  column is text). An integer label column with Hugging Face's ClassLabel names in the file's metadata takes the
  names (IMDB's 0/1 become "neg"/"pos"); other numbers are read as JSONL's are (1 and 1.0 are "1").

Shares (several processes training together, each reading only its part; `share=(index, count)`): share i of n
holds a contiguous run of the corpus in reading order, so the shares laid end to end are the whole corpus in
the order one reader sees it.
- folder: the files are listed (names only), and share i reads files [i N / n, (i + 1) N / n) of the N;
- JSONL and fastText's format: share i reads the lines that start in bytes [i S / n, (i + 1) S / n) of the
  file's S bytes;
- Parquet: share i reads rows [i N / n, (i + 1) N / n) of the N;
- CSV: every share parses the whole file and keeps its contiguous part of the documents. Decision: a quoted
  CSV field may hold line breaks, so a byte offset is not known to start a row without reading from the top.
A share is not checked for usability on its own (it may lack a label): the caller checks the union
(check_usable on every share's labels; an empty label folder is one that is empty in every share).
"""

from __future__ import annotations

import csv
import hashlib
import itertools
import json
import os
import stat
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterable, Iterator, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.json as pa_json

from pipelines.confine import outside
from pipelines.confine import root as confine_root
from pipelines.documents import BINARY_SNIFF_BYTES, classify_file, decode_text, is_binary
from pipelines.errors import CorpusError
from pipelines.labels import joined

if TYPE_CHECKING:
    from pipelines.workers import WorkerPool

FORMAT_HINT = ("pass a folder with one sub-folder per label, a .csv, .tsv, .jsonl or .parquet file, or a fastText "
               "file (\"__label__<label> <text>\" a line)")
TSV_SUFFIXES = (".tsv", ".tab")
# The column names a header row may give its label and its text (lowercase; table_columns). Label names in order
# of preference: a header naming two of them takes the first as the label. The names public corpora use.
# A table's label column with one of these names holds several labels a document, split by TABLE_LABEL_SEPARATOR
# ("labels": "grain,trade"; an empty cell: none of them); one named "label" (the others of LABEL_COLUMNS) holds one.
MULTI_LABEL_COLUMNS = ("labels", "tags", "topics", "categories")
TABLE_LABEL_SEPARATOR = ","
LABEL_COLUMNS = ("label", "labels", "class", "category", "sentiment", "target", "topic", "intent", "tags", "topics",
                 "categories")
TEXT_COLUMNS = ("text", "sentence", "review", "content", "body", "title", "description", "document", "question",
                "message", "comment", "tweet")


@dataclass
class Corpus:
    texts: "list[str] | FileTexts"  # FileTexts: left in the file (read_corpus's keep_texts)
    labels: list[str]
    source: str
    format: str
    # Files or rows left out, by reason; "non_utf8" counts documents decoded with a fallback (kept).
    skipped: dict[str, int] = field(default_factory=dict)
    non_utf8: int = 0
    fingerprint: str = ""  # sha256 of every (label, text) in reading order
    empty_labels: list[str] = field(default_factory=list)  # label folders with no usable document (of this share)

    @property
    def label_counts(self) -> dict[str, int]:
        return dict(sorted(Counter(self.labels).items()))

    def __len__(self) -> int:
        return len(self.texts)


@dataclass
class ReadStats:
    """What reading found besides the documents, filled in as the documents are read."""

    skipped: Counter = field(default_factory=Counter)  # files or rows left out, by reason
    non_utf8: int = 0  # documents decoded with a fallback encoding (kept)
    empty_labels: list[str] = field(default_factory=list)  # label folders whose every file was skipped
    bytes_read: int = 0  # of a CSV or JSONL file so far (a folder's files are not added up)
    bytes_total: int = 0  # that file's size (0 for a folder: not known before its walk)


def open_documents(path: str | Path, max_file_mb: float = 10.0, share: tuple[int, int] = (0, 1)
                   ) -> tuple[str, ReadStats, Iterator[tuple[str, str]]]:
    """-> (format, stats, iterator of (label, text) in reading order). The path's kind, a folder's label folders
    and a file's first bytes are checked now; the documents are read one at a time as the iterator is
    consumed (so a corpus larger than memory can be streamed), and stats are complete once it is exhausted.
    share: (index, count): only that part of the corpus (module docstring)."""
    path = Path(path)
    index, count = share
    if not 0 <= index < count:
        raise ValueError(f"share {index} of {count}")
    check_corpus_path(path)
    max_bytes = int(max_file_mb * 1024 * 1024)
    stats = ReadStats()
    if path.is_dir():
        return "folder", stats, _folder_documents(path, max_bytes, stats, share)
    if path.suffix.lower() == ".csv" or path.suffix.lower() in TSV_SUFFIXES:
        tsv = path.suffix.lower() in TSV_SUFFIXES
        _check_text_file(path, "TSV" if tsv else "CSV")
        stats.bytes_total = path.stat().st_size
        documents = _csv_documents(path, stats, tsv)
        if count > 1:
            documents = iter(_part(list(documents), index, count))
        return "tsv" if tsv else "csv", stats, documents
    if path.suffix.lower() in (".jsonl", ".ndjson"):
        _check_text_file(path, "JSONL")
        start, end = _share_bounds(path, index, count)
        stats.bytes_total = end - start
        return "jsonl", stats, _jsonl_documents(path, stats, start, end, jsonl_format(path))
    if path.suffix.lower() == ".parquet":
        stats.bytes_total = path.stat().st_size
        return "parquet", stats, _parquet_documents(path, stats, share)
    if is_fasttext_file(path):
        start, end = _share_bounds(path, index, count)
        stats.bytes_total = end - start
        return "fasttext", stats, _fasttext_documents(path, stats, start, end)
    kind = f"unknown type '{path.suffix}'" if path.suffix else "no known type (no suffix, no \"__label__\" first line)"
    if FASTTEXT_LABEL_PREFIX.encode() in _file_head(path) and not is_binary(_file_head(path)):
        raise CorpusError(f"corpus path '{path}' reads as fastText's format but its first line holds no "
                          f"\"{FASTTEXT_LABEL_PREFIX}\": give every line a \"{FASTTEXT_LABEL_PREFIX}<label>\" (or remove the "
                          "first line if it is a header)")
    if _first_line_has_tab(path):  # e.g. Reuters R8/R52's "r8-train-all-terms.txt": label, a tab, the text
        raise CorpusError(f"corpus path '{path}' is a file of {kind}: its lines hold tabs; if each is a label, a tab "
                          f"and its text, name the file .tsv (e.g. '{path.with_suffix('.tsv').name}')")
    raise CorpusError(f"corpus path '{path}' is a file of {kind}: {FORMAT_HINT}")


def _first_line_has_tab(path: Path) -> bool:
    """Whether the file's first line (within its first BINARY_SNIFF_BYTES) holds a tab."""
    return b"\t" in _file_head(path).split(b"\n", 1)[0]


def _file_head(path: str | Path) -> bytes:
    """The file's first BINARY_SNIFF_BYTES, or nothing where it cannot be read."""
    try:
        with open(path, "rb") as handle:
            return handle.read(BINARY_SNIFF_BYTES)
    except OSError:
        return b""


# read_corpus's on_progress is called once per this many documents read (and once at the end).
PROGRESS_DOCUMENTS = 20_000
# A file of one document a line of at least this many bytes is read by a WorkerPool's workers, a share each
# (parallel_read says why); a smaller one in this process.
PARALLEL_READ_BYTES = 64 * 1024 * 1024
# Workers read a large file in byte shares of at most about this many bytes (_share_count): a share's texts are
# in a worker's memory at once, and pipelines/vectorize.py found chunks of ~16M characters transformed fastest
# (CHUNK_CHARACTERS).
SHARE_BYTES = 16 * 1024 * 1024
# FileTexts.fetch gives each worker this many groups of rows (a slow worker holds less back).
FETCH_GROUPS_PER_WORKER = 4


def _part(items: list, index: int, count: int) -> list:
    """Share `index` of `count` of a list: its contiguous [index L / count, (index + 1) L / count) part."""
    return items[len(items) * index // count: len(items) * (index + 1) // count]


def read_corpus(path: str | Path, max_file_mb: float = 10.0,
                on_progress: Callable[[int, ReadStats], None] | None = None, share: tuple[int, int] = (0, 1),
                pool: "WorkerPool | None" = None, keep_texts: bool = True) -> Corpus:
    """Read a corpus in any supported format and check it can be trained on (>= 2 labels, none empty).
    on_progress(documents read, stats) every PROGRESS_DOCUMENTS documents and at the end: stats.bytes_read of
    stats.bytes_total for a file. share (index, count): read only that part (module docstring), unchecked: the
    caller checks the union of the shares; the part's empty label folders are in Corpus.empty_labels.
    pool: parse a large file of one document a line in its workers (parallel_read); the same Corpus.
    keep_texts=False: such a file's texts stay in it (Corpus.texts is a FileTexts; a Parquet file's and other
    corpora's are read whole)."""
    check_corpus_path(Path(path))
    if pool is not None and pool.processes > 1 and share == (0, 1) and parallel_read(path):
        return _read_lines_in_workers(Path(path), line_format(Path(path)), max_file_mb, on_progress, pool,
                                      keep_texts)
    fmt, stats, documents = open_documents(path, max_file_mb, share)
    labels, texts, fingerprint = [], [], Fingerprint()
    # (A file read here is read a line at a time, telling its progress every PROGRESS_DOCUMENTS documents; pyarrow's
    # parse, _read_share_arrow, would save ~50 ms of news4's 20 MB and tell nothing until its end.)
    for label, text in documents:
        labels.append(label)
        texts.append(text)
        fingerprint.add(label, text)
        if on_progress is not None and len(texts) % PROGRESS_DOCUMENTS == 0:
            on_progress(len(texts), stats)
    if on_progress is not None:
        on_progress(len(texts), stats)
    corpus = Corpus(texts, labels, str(path), fmt, {k: v for k, v in stats.skipped.items() if v}, stats.non_utf8,
                    fingerprint=fingerprint.hexdigest(), empty_labels=list(stats.empty_labels))
    if share[1] == 1:
        check_usable(str(path), labels, stats.skipped, stats.empty_labels)
        check_table_labels(str(path), fmt, labels)
    return corpus


def parallel_read(path: str | Path) -> bool:
    """Whether read_corpus(path, pool=...) parses the file in the pool's workers (given more than one): a file of
    one document a line (line_format) of at least PARALLEL_READ_BYTES. Parsing JSON a line at a time in one
    process read a million documents (1.2 GB) at ~80 MB/s on the H100 machine, and a CSV, fastText or Parquet file
    of them took 7-14 s on the H200 machine (BENCHMARKS.md, "A million documents in each format"); each worker
    parses its share of the bytes (the lines that start in it, as several processes' shares do) and sends back
    its labels and texts, or where each text's line starts (a Parquet file of two row groups or more: a share of
    whole row groups each, and the rows of its texts)."""
    path = Path(path)
    if not path.is_file() or path.stat().st_size < PARALLEL_READ_BYTES:
        return False
    if path.suffix.lower() == ".parquet":  # its shares are whole row groups: one group is read by one reader
        return open_parquet(path).num_row_groups >= 2
    return line_format(path) is not None


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


class LineBreakInField(Exception):
    """A CSV or TSV line that is not a row of whole fields as one reader of the file reads it (_line_row): the file
    is read by one reader from the top (_csv_documents)."""


def line_format(path: Path) -> LineFormat | None:
    """The LineFormat of a JSONL, fastText, CSV, TSV or Parquet file, or None (a folder, an unknown file)."""
    suffix = path.suffix.lower()
    if suffix in (".jsonl", ".ndjson"):
        return jsonl_format(path)
    if suffix == ".parquet":
        return parquet_format(path)
    if suffix == ".csv" or suffix in TSV_SUFFIXES:
        tsv = suffix in TSV_SUFFIXES
        with path.open("rb") as handle:
            head = handle.read(TABLE_SNIFF_BYTES)
        first_line = head.split(b"\n", 1)[0] + b"\n"
        try:
            first = next(table_reader([decode_text(first_line)[0]], tsv), None)
        except csv.Error:  # (one reader refuses it with its line number)
            return None
        columns = table_columns(first) if first is not None else None
        label_column, text_columns = columns if columns is not None else (0, None)
        return LineFormat("tsv" if tsv else "csv", label_column, None if text_columns is None else tuple(text_columns),
                          newline_escapes(head), len(first_line) if columns is not None else 0,
                          label_separator=_label_separator(first, columns))
    if path.is_file() and is_fasttext_file(path):
        return LineFormat("fasttext")
    return None


def _placed_line_documents(fmt: LineFormat, path: Path, stats: ReadStats, start: int = 0, end: int | None = None
                           ) -> Iterator[tuple[int, str, str]]:
    """(the byte its line starts at, label, text) of each document whose line starts in bytes [start, end), read
    as one reader of the whole file reads it (its skips counted in stats). A table line that is not a row of whole
    fields raises LineBreakInField (_line_row)."""
    if fmt.kind == "jsonl":
        yield from _placed_jsonl_documents(path, stats, start, end, fmt)
        return
    where = f"{'fastText' if fmt.kind == 'fasttext' else fmt.kind.upper()} corpus '{path}'" + \
        (" line" if start == 0 else f" (from byte {start}) line")
    for number, (offset, line) in enumerate(_placed_lines(path, stats, start, end), 1):
        if fmt.kind == "fasttext":
            document = _fasttext_document(line, stats, where, number)
        else:
            row = _line_row(fmt, line, where, number)  # (the header's line too: a field may open there)
            if offset < fmt.header_bytes:
                continue
            document = _table_row_document(fmt, row, stats)
        if document is not None:
            yield offset, *document


def _line_text(fmt: LineFormat, line: str) -> str:
    """The text of a line that reading found to be a document."""
    if fmt.kind == "jsonl":
        return record_text(json.loads(line), fmt.text_keys)
    if fmt.kind == "fasttext":
        return fasttext_line(line)[1]
    row = next(table_reader([line], fmt.kind == "tsv"))
    columns = fmt.text_columns if fmt.text_columns is not None else range(1, len(row))
    return table_text((row[i] for i in columns if i < len(row)), fmt.escapes)


def _line_row(fmt: LineFormat, line: str, where: str, number: int) -> list[str]:
    """A CSV or TSV line's cells. A CSV line is parsed strictly: one that ends inside a quoted field (which then
    holds a line break, so the file's lines are not its rows) or that a strict reading refuses raises
    LineBreakInField, and the file is read by one reader from the top (_csv_documents), which words any error."""
    try:
        return next(csv.reader([line], strict=True) if fmt.kind == "csv" else table_reader([line], True), [])
    except csv.Error as exc:
        raise LineBreakInField(f"{where} {number}: {exc}") from None


def _table_row_document(fmt: LineFormat, row: list[str], stats: ReadStats) -> tuple[str, str] | None:
    """One row of a CSV or TSV file as _csv_documents reads it, or None (counted in stats)."""
    if len(row) < 2:
        stats.skipped["bad_row"] += 1
        return None
    columns = fmt.text_columns if fmt.text_columns is not None else range(1, len(row))
    body = table_text((row[i] for i in columns if i < len(row)), fmt.escapes)
    label = _cell_label(row[fmt.label_column], fmt.label_separator) if fmt.label_column < len(row) else ""
    if not body or not label:
        stats.skipped["empty"] += 1
        return None
    return label, body


def _read_share(index: int, path: str, count: int, keep_texts: bool, fmt: LineFormat
                ) -> tuple[list[str], list[str] | np.ndarray, bytes, dict[str, int], int, int]:
    """A worker's part of _read_lines_in_workers: share `index` of `count` -> (labels, texts or, without
    keep_texts, the byte offsets their lines start at (documents,) int64, the documents' digests joined, skipped,
    non_utf8, bytes read). A JSONL share is parsed by pyarrow where it can be (_read_share_arrow)."""
    if not 0 <= index < count:
        raise ValueError(f"share {index} of {count}")
    if fmt.kind == "parquet":
        return _read_parquet_share(path, index, count, keep_texts, fmt)
    start, end = _share_bounds(path, index, count)
    parsed = _read_share_arrow(path, start, end, keep_texts, fmt) if fmt.kind == "jsonl" else None
    return _read_share_lines(path, start, end, keep_texts, ReadStats(), fmt) if parsed is None else parsed


def _read_parquet_share(path: str, index: int, count: int, keep_texts: bool, fmt: LineFormat
                        ) -> tuple[list[str], list[str] | np.ndarray, bytes, dict[str, int], int, int]:
    """_read_share of a Parquet file's row groups share `index` of `count`: its texts, or without keep_texts the
    rows they are in (documents,) int64."""
    stats = ReadStats()
    size = Path(path).stat().st_size
    stats.bytes_read = size * (index + 1) // count - size * index // count
    return _collected_share(
        _placed_parquet_documents(fmt, Path(path), stats, (index, count), by_groups=True), keep_texts, stats)


def parquet_texts(path: str, fmt: LineFormat, rows: np.ndarray) -> list[str]:
    """The texts of these rows of a Parquet corpus (rows that reading found to be documents), in this order, as
    reading found them: the row groups that hold them are decoded one at a time and only these rows kept."""
    parquet = open_parquet(Path(path))
    names = parquet.schema_arrow.names
    columns = [names[i] for i in fmt.text_columns]
    starts = np.cumsum([0] + [parquet.metadata.row_group(i).num_rows for i in range(parquet.num_row_groups)])
    rows = np.asarray(rows, np.int64)
    group_of = np.searchsorted(starts, rows, side="right") - 1
    texts: list[str] = [""] * len(rows)
    for group in np.unique(group_of).tolist():
        mine = np.flatnonzero(group_of == group)
        table = parquet.read_row_group(group, columns=columns).take(pa.array(rows[mine] - starts[group]))
        for at, cells in zip(mine.tolist(), zip(*(column.to_pylist() for column in table.columns))):
            texts[at] = parquet_text(cells)
    return texts


def parquet_text(cells) -> str:
    """A Parquet row's text cells as one text."""
    if len(cells) == 1:
        text = cells[0]
        return text.strip() if isinstance(text, str) else "" if text is None else str(text).strip()
    return " ".join(str(cell) for cell in cells if cell is not None).strip()


def _read_share_lines(path: str, start: int, end: int, keep_texts: bool, stats: ReadStats, fmt: LineFormat
                      ) -> tuple[list[str], list[str] | np.ndarray, bytes, dict[str, int], int, int]:
    """_read_share of the lines that start in bytes [start, end), a line at a time."""
    return _collected_share(_placed_line_documents(fmt, Path(path), stats, start, end), keep_texts, stats)


def _collected_share(documents: Iterator[tuple[int, str, str]], keep_texts: bool, stats: ReadStats
                     ) -> tuple[list[str], list[str] | np.ndarray, bytes, dict[str, int], int, int]:
    """A share's (place, label, text) documents as _read_share returns them: (labels, texts or, without keep_texts,
    their places (documents,) int64, the digests joined, skipped, non_utf8, bytes read); stats once they are read."""
    labels, texts, places, digests = [], [], [], []
    for place, label, text in documents:
        labels.append(label)
        digests.append(document_digest(label, text))
        if keep_texts:
            texts.append(text)
        else:
            places.append(place)
    return labels, texts if keep_texts else np.array(places, np.int64), b"".join(digests), dict(stats.skipped), \
        stats.non_utf8, stats.bytes_read


# Bytes -> 1 for an ASCII character that Python's str.strip keeps (str.isspace is False): a text that opens or ends
# with one is not empty once stripped. 0 for Python's ASCII whitespace and for every byte of a non-ASCII character,
# whose text str.strip itself then checks.
_KEPT_BY_STRIP = bytes(1 if byte < 128 and not chr(byte).isspace() else 0 for byte in range(256))


def _read_share_arrow(path: str, start: int, end: int, keep_texts: bool, fmt: "LineFormat | None" = None
                      ) -> tuple[list[str], list[str] | np.ndarray, bytes, dict[str, int], int, int] | None:
    """_read_share of the lines that start in bytes [start, end), parsed by pyarrow's JSON reader (compiled: a 14
    MB share of synthetic posts in ~50 ms on one core, where _read_share_lines took ~85 ms); the same labels,
    offsets or texts, digests, skip counts and bytes. None (then _read_share_lines reads the share, and words any
    error) where that is not sure: a share that is not UTF-8, a line pyarrow refuses (not JSON, a key
    twice, an unpaired surrogate escape), a text or label that is missing or null, a text that is not a string,
    labels that are not all strings or all integers (a fraction or a boolean goes a line at a time, where
    _json_label formats or refuses it), a count of lines that differs from pyarrow's rows, or texts under several
    keys (fmt.text_keys: read a line at a time, where they are joined)."""
    fmt = fmt or LineFormat("jsonl")
    data, position = _share_data(path, start, end)
    if not data or len(fmt.text_keys) != 1:
        return None
    text_key, label_key = fmt.text_keys[0], fmt.label_key
    for label_type in (pa.large_string(), pa.int64()):  # string labels, else class numbers (a dataset's ids)
        table = _parse_jsonl(data, **{text_key: pa.large_string(), label_key: label_type})
        if table is not None:
            break
    else:
        return None
    texts, labels = table.column(text_key).combine_chunks(), table.column(label_key).combine_chunks()
    if texts.null_count or labels.null_count:
        return None
    # Each row's line: the lines that are not blank, in order. A line that opens with "{" is not; the others (few,
    # if any) are looked at. pyarrow's rows must then be as many as those lines (two objects on one line, which
    # Python's json refuses, would make more).
    raw = np.frombuffer(data, np.uint8)
    row_starts = np.concatenate([[0], np.flatnonzero(raw[:-1] == ord("\n")) + 1])
    line_ends = np.append(row_starts[1:], len(data))
    written = raw[row_starts] == ord("{")
    for line in np.flatnonzero(~written):
        written[line] = bool(data[row_starts[line]:line_ends[line]].strip(b" \t\r\n"))
    row_starts = row_starts[written]
    if len(row_starts) != len(texts):
        return None
    # Skipped as reading skips them: a text empty once stripped, or a label. A text that opens or ends with a
    # character str.strip keeps is not; the others (few, if any) are stripped by Python.
    from pipelines.word_counts import string_offsets  # (here: word_counts brings scipy, which reading needs not)

    text_offsets = string_offsets(texts)
    text_bytes = texts.buffers()[2]
    ends = np.frombuffer(text_bytes, np.uint8)
    kept_by_strip = np.frombuffer(_KEPT_BY_STRIP, np.uint8)
    nonempty = text_offsets[1:] > text_offsets[:-1]
    text_kept = np.zeros(len(texts), bool)
    text_kept[nonempty] = (kept_by_strip[ends[text_offsets[:-1][nonempty]]] |
                           kept_by_strip[ends[text_offsets[1:][nonempty] - 1]]) > 0
    for row in np.flatnonzero(~text_kept):
        text_kept[row] = bool(texts[int(row)].as_py().strip())
    # _json_label's class names: a string stripped, an integer in its plain form
    label_list = [label.strip() for label in labels.to_pylist()] if pa.types.is_large_string(labels.type) else \
        [str(label) for label in labels.to_pylist()]
    documents = [row for row in np.flatnonzero(text_kept).tolist() if label_list[row]]
    # document_digest of each: the hash of a label and its separator taken once a label and copied a document
    view = memoryview(text_bytes)
    label_hashes = {label: _label_hash(label) for label in set(label_list)}
    digests = []
    for row in documents:
        digest = label_hashes[label_list[row]].copy()
        digest.update(view[text_offsets[row]:text_offsets[row + 1]])
        digests.append(digest.digest())
    skipped = len(texts) - len(documents)
    rows = np.array(documents, np.int64)
    # The texts (no copy where none was skipped), or where their lines start
    found = (texts.take(pa.array(rows)) if skipped else texts).to_pylist() if keep_texts else position + row_starts[rows]
    return [label_list[row] for row in documents], found, b"".join(digests), {"empty": skipped} if skipped else {}, \
        0, len(data)


def _share_data(path: str, start: int, end: int) -> tuple[bytes, int]:
    """The bytes of the lines that start in [start, end) of a file (b"" for none), and where the first starts."""
    with open(path, "rb") as handle:
        position = start
        if start > 0:
            handle.seek(start - 1)
            position = start - 1 + len(handle.readline())  # the end of the line holding byte start - 1
        if position >= end:
            return b"", position
        handle.seek(end - 1)
        last_end = end - 1 + len(handle.readline())  # the end of the last line that starts in the share
        handle.seek(position)
        return handle.read(last_end - position), position


def _parse_jsonl(data: bytes, **columns: pa.DataType) -> pa.Table | None:
    """JSONL lines -> a table of these keys' values (other keys ignored), by pyarrow's JSON reader in one block;
    None where the bytes are not UTF-8 (the reader does not check the bytes inside strings) or it refuses a line."""
    if not data.isascii():
        try:
            data.decode("utf-8")
        except UnicodeDecodeError:
            return None
    try:
        return pa_json.read_json(
            pa.BufferReader(data), read_options=pa_json.ReadOptions(use_threads=False, block_size=len(data) + 1),
            parse_options=pa_json.ParseOptions(explicit_schema=pa.schema(list(columns.items())),
                                               unexpected_field_behavior="ignore"))
    except pa.ArrowException:  # (what a line it refuses raises: ArrowInvalid)
        return None


def _share_count(path: Path, pool: "WorkerPool") -> int:
    """Byte shares of a file for the pool's workers: shares of at most ~SHARE_BYTES, their number a multiple of
    the workers' (no worker idles through a last round), at least 2 a worker (progress moves, and a slow worker
    holds less back)."""
    rounds = max(2, -(-path.stat().st_size // (pool.processes * SHARE_BYTES)))
    return pool.processes * rounds


def _read_lines_in_workers(path: Path, fmt: LineFormat, max_file_mb: float, on_progress, pool: "WorkerPool",
                           keep_texts: bool = True) -> Corpus:
    """read_corpus of a file of one document a line (or a row), its shares parsed in the pool's workers and joined in
    order as they arrive: the documents one reader sees, in its order, so the same fingerprint. Without keep_texts
    the texts stay in the file (Corpus.texts is a FileTexts). Where a share cannot be parsed, or a CSV's quoted field
    holds a line break (its lines are not its rows), or nothing usable is found, this process reads the file itself:
    the same corpus, or the error naming the line from the top of the file."""
    if fmt.kind != "parquet":
        _check_text_file(path, {"jsonl": "JSONL", "fasttext": "fastText"}.get(fmt.kind, fmt.kind.upper()))
    status = path.stat()
    stats = ReadStats(bytes_total=status.st_size)
    count = _share_count(path, pool)
    if fmt.kind == "parquet":  # whole row groups a share
        count = min(count, open_parquet(path).num_row_groups)
    labels, texts, offsets, fingerprint, first_rows = [], [], [], Fingerprint(), [0]
    try:
        for part_labels, texts_or_offsets, digests, skipped, non_utf8, bytes_read in pool.imap(
                _read_share, list(range(count)), str(path), count, keep_texts, fmt):
            fingerprint.add_digests(digests)
            labels += part_labels
            first_rows.append(len(labels))
            if keep_texts:
                texts += texts_or_offsets
            else:
                offsets.append(texts_or_offsets)
            stats.skipped.update(skipped)
            stats.non_utf8 += non_utf8
            stats.bytes_read += bytes_read
            if on_progress is not None:
                on_progress(len(labels), stats)
    except (CorpusError, LineBreakInField):
        return read_corpus(path, max_file_mb, on_progress)
    if not labels:
        return read_corpus(path, max_file_mb, on_progress)
    check_usable(str(path), labels, stats.skipped, stats.empty_labels)
    check_table_labels(str(path), fmt.kind, labels)
    left = None if keep_texts else FileTexts(path, first_rows, np.concatenate(offsets),
                                             (status.st_size, status.st_mtime_ns), fmt)
    return Corpus(texts if keep_texts else left, labels, str(path), fmt.kind,
                  {k: v for k, v in stats.skipped.items() if v}, stats.non_utf8, fingerprint=fingerprint.hexdigest())


@dataclass(frozen=True)
class FileTexts:
    """The texts of a JSONL, fastText, CSV, TSV or Parquet file that read_corpus(..., keep_texts=False) left in the file
    (`format`: how its lines, or rows, are documents; a Parquet file's `offsets` are its documents' rows and its
    shares whole row groups): a pool's workers parse its byte shares again to fetch some of them (fetch) or to turn
    each share's texts into something smaller (map_shares), so that this process never holds them all (a million
    documents' texts are 1.2 GB of text and ~1.3 GB of Python strings). The shares are those of the first reading, so
    a share's documents are the rows first_rows[i] .. first_rows[i + 1] - 1; offsets[row] is the byte its line starts
    at, so that a sample of the rows is read without parsing the lines around it."""

    path: Path
    first_rows: list[int]  # (shares + 1,) the row each share starts at; the last: the documents' count
    # (documents,) int64: where each document's line starts in the file. Left out of == and hash(): the file, its
    # stamp and the shares' rows decide it (and an array has no truth value or hash of its own).
    offsets: np.ndarray = field(repr=False, compare=False)
    stamp: tuple[int, int] = (0, 0)  # the file's (size, mtime_ns) when it was read
    format: LineFormat = LineFormat("jsonl")  # how its lines are documents

    @property
    def shares(self) -> int:
        return len(self.first_rows) - 1

    def _check_unchanged(self) -> None:
        """The rows name the documents of the file as it was read: a file rewritten since would pair texts with
        other documents' labels."""
        status = self.path.stat()
        if (status.st_size, status.st_mtime_ns) != self.stamp:
            raise CorpusError(f"corpus file '{self.path}' changed while it was being read for training: train "
                              "again once it is written")

    def __len__(self) -> int:
        return self.first_rows[-1]

    def fetch(self, rows: np.ndarray, pool: "WorkerPool") -> "FetchedTexts":
        """The texts of these rows (any order), read by the pool's workers from their lines alone (offsets):
        a sample costs its own lines, where parsing the shares that hold it read the whole file (the search's
        20,000 documents of a million, BENCHMARKS.md "Big corpora with no flags")."""
        rows = np.unique(np.asarray(rows, dtype=np.int64))
        groups = np.array_split(rows, min(len(rows), FETCH_GROUPS_PER_WORKER * pool.processes) or 1)
        texts: dict[int, str] = {}
        for group, part in zip(groups, pool.map(list, [self.lines(group) for group in groups])):
            texts.update(zip(group.tolist(), part))
        return FetchedTexts(len(self), texts)

    def lines(self, rows: np.ndarray) -> "LineTexts":
        """The texts of these rows, in this order, as a sequence that reads them when iterated (LineTexts)."""
        self._check_unchanged()
        rows = np.asarray(rows, dtype=np.int64)
        if self.format.kind == "parquet":  # a row's bytes: the file's share of a document (what sizes a chunk)
            return LineTexts(str(self.path), self.offsets[rows],
                             np.full(len(rows), max(1, self.stamp[0] // max(1, len(self))), np.int64), self.format)
        ends = np.append(self.offsets[1:], self.stamp[0])  # a line's end: the next document's start at most
        return LineTexts(str(self.path), self.offsets[rows], ends[rows] - self.offsets[rows], self.format)

    def map_shares(self, pool: "WorkerPool", fn: Callable, *args,
                   on_progress: Callable[[int, int], None] | None = None, arrow: bool = False) -> list:
        """[fn(the texts of share i, *args) for every share], computed by the pool's workers, in share order; fn
        a module-level function (the workers import it). on_progress(documents done, of all) as shares finish.
        arrow: fn takes the texts as a list of str or as a pyarrow string array (share_texts_arrow), which a share
        is handed where pyarrow's JSON reader parses it to the documents reading found."""
        return list(self.imap_shares(pool, fn, *args, on_progress=on_progress, arrow=arrow))

    def imap_shares(self, pool: "WorkerPool", fn: Callable, *args,
                    on_progress: Callable[[int, int], None] | None = None, arrow: bool = False,
                    share_args: Sequence | None = None) -> Iterator:
        """map_shares, each share's result yielded as it arrives (in share order), so that a caller can use and
        drop it before the next. share_args: one argument more for each share, passed after its texts."""
        self._check_unchanged()
        arrow = arrow and self.format.kind == "jsonl"  # (pyarrow parses JSON lines only)
        items = list(range(self.shares)) if share_args is None else list(zip(range(self.shares), share_args))
        results = pool.imap(_share_apply, items, str(self.path), self.shares, self.format,
                            fn, args, self.first_rows if arrow else None)
        for share, result in enumerate(results):
            if on_progress is not None:
                on_progress(self.first_rows[share + 1], len(self))
            yield result


class FetchedTexts(Sequence):
    """Some texts of a corpus of `total` documents, by row (FileTexts.fetch): len() is the corpus's; a row not
    fetched raises KeyError."""

    def __init__(self, total: int, texts: dict[int, str]):
        self.total, self.texts = total, texts

    def __len__(self) -> int:
        return self.total

    def __getitem__(self, row: int) -> str:
        row = int(row)
        if not 0 <= row < self.total:
            raise IndexError(f"row {row} of {self.total}")
        return self.texts[row]


def _share_texts(index: int, path: str, count: int, fmt: LineFormat) -> list[str]:
    """The texts of the documents whose lines start in byte share `index` of `count` (of a Parquet file: in its
    row groups' share), as reading found them."""
    if fmt.kind == "parquet":
        documents = _placed_parquet_documents(fmt, Path(path), ReadStats(), (index, count), by_groups=True)
    else:
        documents = _placed_line_documents(fmt, Path(path), ReadStats(), *_share_bounds(path, index, count))
    return [text for _, _, text in documents]


class LineTexts(Sequence):
    """Texts of a file FileTexts holds, named by the offsets their lines start at (FileTexts.lines), read when iterated,
    by the process that iterates them. A slice is another LineTexts, and one pickles as its path and offsets (8 bytes
    a document): a fit sample sent to the workers in chunks is read there, where sending its texts cost the parent
    pickling and writing them after reading them (200,000 documents of a million: ~230 MB each way)."""

    def __init__(self, path: str, offsets: np.ndarray, line_bytes: np.ndarray,
                 fmt: LineFormat = LineFormat("jsonl")):
        self.path, self.offsets, self.line_bytes, self.format = path, offsets, line_bytes, fmt

    def __len__(self) -> int:
        return len(self.offsets)

    def __getitem__(self, index):
        if isinstance(index, slice):
            return LineTexts(self.path, self.offsets[index], self.line_bytes[index], self.format)
        if self.format.kind == "parquet":
            return parquet_texts(self.path, self.format, self.offsets[index:index + 1])[0]
        with open(self.path, "rb") as handle:
            return _text_at(handle, int(self.offsets[index]), self.format)

    def __iter__(self) -> Iterator[str]:
        if self.format.kind == "parquet":  # (a row group is decoded whole: the rows of each at once)
            yield from parquet_texts(self.path, self.format, self.offsets)
            return
        with open(self.path, "rb") as handle:
            for offset in self.offsets:
                yield _text_at(handle, int(offset), self.format)

    def characters(self) -> int:
        """About the texts' characters, from their lines' bytes (the JSON around them included), without reading
        them: what sizes a chunk of them."""
        return int(self.line_bytes.sum())

    def arrow(self) -> pa.Array | None:
        """The texts as one pyarrow large_string array, their lines read whole and parsed at once (_arrow_texts,
        which says when it gives None: then iterate). A line's bytes run to the next document's line, so a
        skipped line between them makes the count differ, and None."""
        if not len(self) or self.format.kind != "jsonl":
            return None
        with open(self.path, "rb") as handle:
            descriptor = handle.fileno()
            data = b"".join([os.pread(descriptor, int(size), int(offset))
                             for offset, size in zip(self.offsets, self.line_bytes)])
        return _arrow_texts(data, len(self), self.format)


def _share_apply(item: int | tuple[int, object], path: str, count: int, fmt: LineFormat, fn: Callable, args: tuple,
                 first_rows: list[int] | None = None):
    """A worker's part of FileTexts.map_shares: item, the share's index, or (its index, its own argument);
    first_rows given (its `arrow`): the share's texts as share_texts_arrow parses them where it can."""
    index, own = (item, ()) if isinstance(item, int) else (item[0], (item[1],))
    texts = None
    if first_rows is not None:
        texts = share_texts_arrow(path, *_share_bounds(path, index, count), first_rows[index + 1] - first_rows[index],
                                  fmt)
    return fn(_share_texts(index, path, count, fmt) if texts is None else texts, *own, *args)


def _share_bounds(path: str | Path, index: int, count: int) -> tuple[int, int]:
    """Share `index` of `count` of a JSONL file: the bytes [start, end) its lines start in."""
    size = Path(path).stat().st_size
    return size * index // count, size * (index + 1) // count


def share_texts_arrow(path: str, start: int, end: int, documents: int, fmt: "LineFormat | None" = None
                      ) -> pa.Array | None:
    """The texts of the JSONL lines that start in bytes [start, end) of a file that reading found to hold
    `documents` documents there, as one pyarrow large_string array (_arrow_texts); None where pyarrow's parse is
    not sure to be what reading found (then the share is read line by line)."""
    data, _ = _share_data(path, start, end)
    return _arrow_texts(data, documents, fmt) if data else None


def _arrow_texts(data: bytes, documents: int, fmt: "LineFormat | None" = None) -> pa.Array | None:
    """JSONL lines of a file that reading found to hold `documents` documents -> their texts as one pyarrow
    large_string array, parsed by pyarrow's JSON reader (compiled, no Python object per document: a 14 MB share
    of synthetic posts in ~21 ms on one core, where Python's json took ~69 ms a line at a time); None where it
    cannot be sure these are the texts reading found: bytes that are not UTF-8 (reading decodes them with
    fallbacks), a line pyarrow refuses (a key twice, an unpaired surrogate escape: Python's json takes them), or
    another number of documents (a line that reading skipped: an empty text or label). Every line parsed as JSON
    when the file was read (its callers check that the file is unchanged since), so the lines pyarrow takes hold
    the same strings."""
    fmt = fmt or LineFormat("jsonl")
    if len(fmt.text_keys) != 1:  # (joined a line at a time)
        return None
    table = _parse_jsonl(data, **{fmt.text_keys[0]: pa.large_string()})
    if table is None:
        return None
    texts = table.column(fmt.text_keys[0]).combine_chunks()
    if len(texts) != documents or texts.null_count:
        return None
    return texts


def document_digest(label: str, text: str) -> bytes:
    """sha256 of one (label, text): 32 bytes."""
    digest = _label_hash(label)
    digest.update(text.encode("utf-8", "surrogatepass"))
    return digest.digest()


def _label_hash(label: str):
    """document_digest's sha256 once it has taken the label and its separator, before the text."""
    digest = hashlib.sha256(label.encode())
    digest.update(b"\x00")
    return digest


class Fingerprint:
    """sha256 of the documents' digests (document_digest) in reading order: equal corpora, equal fingerprints
    (the vector and search caches' key). A digest a document first, so that workers each reading a share of a
    file digest their own documents and this process joins 32 bytes a document, not the texts."""

    def __init__(self):
        self._digest = hashlib.sha256()

    def add(self, label: str, text: str) -> None:
        self._digest.update(document_digest(label, text))

    def add_digests(self, digests: bytes) -> None:
        """Documents digested elsewhere: their digests, joined in reading order."""
        self._digest.update(digests)

    def hexdigest(self) -> str:
        return self._digest.hexdigest()


def _folder_documents(root: Path, max_bytes: int, stats: ReadStats, share: tuple[int, int]
                      ) -> Iterator[tuple[str, str]]:
    label_dirs = []
    for entry in sorted(root.iterdir()):
        if entry.name.startswith("."):
            stats.skipped["hidden"] += share[0] == 0  # counted once over the shares
        elif entry.is_dir() and entry.name.lower() in UNLABELLED_FOLDERS:
            if share[0] == 0:
                stats.skipped["unlabelled"] += sum(1 for _ in _walk_files(entry, Counter(), {_identity(entry)}))
        elif entry.is_dir():
            label_dirs.append(entry)
        else:  # a file beside the label folders has no label (aclImdb's urls_pos.txt, labeledBow.feat)
            stats.skipped["outside_label_folders"] += share[0] == 0
    if not label_dirs:
        raise CorpusError(
            f"corpus folder '{root}' has no label folders: put each label's documents in "
            f"'{root}/<label>/', or pass a .csv, .tsv, .jsonl, .parquet or fastText file"
        )
    _refuse_split_layout(root, label_dirs)
    return _folder_files(root, label_dirs, max_bytes, stats, share)


# Folders of documents without a label, by the names public corpora give them (aclImdb's train/unsup holds 50,000
# reviews beside pos/ and neg/): their files are skipped and counted ("unlabelled"), not trained as a class of
# their own, which would be most of the corpus and no class a user wants predicted.
UNLABELLED_FOLDERS = {"unsup", "unlabeled", "unlabelled"}
SPLIT_NAMES = {"train", "training", "test", "testing", "dev", "valid", "validation"}


def _refuse_split_layout(root: Path, label_dirs: list[Path]) -> None:
    """A folder of split folders (corpus/train/<label>/, corpus/test/<label>/) would otherwise train the
    classes "train" vs "test": refuse it and name the two paths to pass instead."""
    names = {d.name.lower() for d in label_dirs}
    nested = all(any(child.is_dir() for child in d.iterdir()) for d in label_dirs)
    if len(names) >= 2 and names <= SPLIT_NAMES and nested:
        train = next((d for d in label_dirs if d.name.lower() in ("train", "training")), label_dirs[0])
        test = next((d for d in label_dirs if d.name.lower() in ("test", "testing")), label_dirs[-1])
        raise CorpusError(
            f"corpus folder '{root}' holds the splits {', '.join(sorted(d.name for d in label_dirs))}, not labels: "
            f"pass '{train}' as the corpus and --test '{test}'"
        )


def _folder_files(root: Path, label_dirs: list[Path], max_bytes: int, stats: ReadStats, share: tuple[int, int]
                  ) -> Iterator[tuple[str, str]]:
    # Each real folder is walked once: a link back to the corpus (comp/loop -> ..) or into another label's
    # folder would otherwise read documents again, under the wrong label, or forever.
    seen = {_identity(root)} | {_identity(d) for d in label_dirs}
    # Names only: cheap beside reading the files. Every share walks all the folders, and share 0 alone counts
    # what the walk skips (hidden entries, links), so that the shares' counts add up to one reader's.
    walk_skipped = stats.skipped if share[0] == 0 else Counter()
    files = [(number, file) for number, label_dir in enumerate(label_dirs)
             for file in _walk_files(label_dir, walk_skipped, seen)]
    if share[1] > 1:
        files = _part(files, *share)
    by_label: list[list[Path]] = [[] for _ in label_dirs]
    for number, file in files:
        by_label[number].append(file)
    for label_dir, label_files in zip(label_dirs, by_label):
        found = False
        for file in label_files:
            text, reason, fallback = classify_file(file, max_bytes)
            if reason:
                stats.skipped[reason] += 1
                continue
            stats.non_utf8 += fallback
            found = True
            yield label_dir.name, text
        if not found:
            stats.empty_labels.append(label_dir.name)


def _identity(folder: Path) -> tuple[int, int]:
    info = folder.stat()
    return info.st_dev, info.st_ino


def check_corpus_path(path: Path) -> None:
    """A corpus path that exists, is a folder or a regular file (a FIFO or a device would block or never end), and
    lies under the read root where one is set (pipelines/confine.py)."""
    if not path.exists():
        raise CorpusError(f"corpus path '{path}' does not exist: {FORMAT_HINT}")
    if outside(path):
        raise CorpusError(f"corpus '{path}' resolves to '{path.resolve()}', outside the data root '{confine_root()}': "
                          "put the corpus under it")
    if not path.is_dir() and not stat.S_ISREG(path.stat().st_mode):
        raise CorpusError(f"corpus path '{path}' is not a regular file or a folder (a FIFO, device or socket): "
                          f"{FORMAT_HINT}")


def folder_files(folder: Path) -> tuple[list[Path], Counter]:
    """Every file under a folder as a folder corpus reads a label folder's (sorted, recursing, hidden entries and
    links back into a walked folder skipped), and the skips counted by reason."""
    skipped: Counter = Counter()
    return list(_walk_files(folder, skipped, {_identity(folder)})), skipped


def _walk_files(folder: Path, skipped: Counter, seen: set[tuple[int, int]]):
    """Files under folder in sorted order, recursing into sub-folders not walked before (`seen`: their device
    and inode), skipping hidden entries; links that lead nowhere or back into a walked folder are counted as
    skipped."""
    for entry in sorted(folder.iterdir()):
        if entry.name.startswith("."):
            skipped["hidden"] += 1
        elif outside(entry):
            skipped["outside the data root"] += 1
        elif entry.is_dir():
            identity = _identity(entry)
            if identity in seen:
                skipped["linked folder already read (symlink loop)"] += 1
                continue
            seen.add(identity)
            yield from _walk_files(entry, skipped, seen)
        elif entry.is_file():
            yield entry
        elif entry.is_symlink() and not entry.exists():
            skipped["broken symlink"] += 1
        else:
            skipped["not a regular file"] += 1


FASTTEXT_LABEL_PREFIX = "__label__"


def is_fasttext_file(path: str | Path) -> bool:
    """Whether a file is in fastText's format: text whose first non-blank line starts with "__label__" (within
    the first BINARY_SNIFF_BYTES)."""
    head = _file_head(path)
    if is_binary(head):
        return False
    return head.lstrip().lstrip(b"\xef\xbb\xbf").startswith(FASTTEXT_LABEL_PREFIX.encode())


def fasttext_line(line: str) -> tuple[list[str], str]:
    """One line of a fastText file -> (its labels, prefix removed, in order; its text). Every word starting with
    "__label__" is a label, as fastText reads it. Most files hold one, first: the text is then the rest of the
    line as written; where labels stand elsewhere, the other words joined by single spaces."""
    line = line.replace("\t", " ")  # (fastText splits words on tabs too)
    head, _, rest = line.strip().partition(" ")
    if head.startswith(FASTTEXT_LABEL_PREFIX) and FASTTEXT_LABEL_PREFIX not in rest:
        return [head[len(FASTTEXT_LABEL_PREFIX):]], rest.strip()
    words = line.split()
    labels = [word[len(FASTTEXT_LABEL_PREFIX):] for word in words if word.startswith(FASTTEXT_LABEL_PREFIX)]
    return labels, " ".join(word for word in words if not word.startswith(FASTTEXT_LABEL_PREFIX))


def _fasttext_documents(path: Path, stats: ReadStats, start: int = 0, end: int | None = None
                        ) -> Iterator[tuple[str, str]]:
    return ((label, text) for _, label, text in _placed_line_documents(LineFormat("fasttext"), path, stats, start,
                                                                       end))


def _fasttext_document(line: str, stats: ReadStats, where: str, number: int) -> tuple[str, str] | None:
    """One line of a fastText file -> (label, text), or None for a blank line or one skipped (counted in stats).
    A line of several labels is a multi-label document (pipelines/labels.py), as fastText's -loss ova reads it."""
    if not line.strip():
        return None
    labels, text = fasttext_line(line)
    labels = [label for label in labels if label]
    if not labels:
        stats.skipped["no_label"] += 1
    elif not text:
        stats.skipped["empty"] += 1
    else:
        return joined(labels), text
    return None


# Parquet corpora are read this many rows at a time (a batch's texts in memory at once).
PARQUET_BATCH_ROWS = 65_536


def open_parquet(path: Path, kind: str = "Parquet corpus"):
    """A Parquet file opened by pyarrow, or its refusal naming the fix."""
    import pyarrow.parquet as pq

    try:
        return pq.ParquetFile(path)
    except (pa.ArrowException, OSError) as exc:
        raise CorpusError(f"{kind} '{path}' cannot be read as Parquet ({str(exc).splitlines()[0]}): pass a .parquet "
                          f"file as pyarrow or pandas write it") from None


def parquet_columns(path: Path, schema: pa.Schema, labelled: bool = True,
                    kind: str = "Parquet corpus") -> tuple[int | None, list[int]]:
    """(the label column, the text columns) of a Parquet file, named as a table's header names them
    (table_columns); where it names no text column, the other string columns. Refused where it names no label
    column (labelled) or no text can be found."""
    names = list(schema.names)
    columns = table_columns(names, labelled)
    text_like = [i for i, name in enumerate(names) if pa.types.is_string(schema.field(name).type)
                 or pa.types.is_large_string(schema.field(name).type)]
    if columns is None and not labelled:
        columns = (None, text_like)
    if columns is None:
        raise CorpusError(f"{kind} '{path}' names no label column (its columns: {', '.join(names)}): name the "
                          f"label column one of {', '.join(LABEL_COLUMNS[:5])}, ...")
    label, text = columns
    if not any(names[i].strip().lower() in TEXT_COLUMNS for i in text):  # every other column: its strings only
        text = [i for i in text if i in text_like]
    if not text:
        raise CorpusError(f"{kind} '{path}' has no text column (its columns: {', '.join(names)}): name the text "
                          f"column one of {', '.join(TEXT_COLUMNS[:5])}, ...")
    return label, text


def class_label_names(schema: pa.Schema, column: str) -> list[str] | None:
    """The class names Hugging Face's datasets record for an integer label column (its ClassLabel feature, in
    the file's "huggingface" metadata), or None."""
    try:
        info = json.loads((schema.metadata or {}).get(b"huggingface", b"{}"))
        feature = (info.get("info") or {}).get("features", {}).get(column) or {}
        names = feature.get("names") if feature.get("_type") == "ClassLabel" else None
    except (ValueError, AttributeError):
        return None
    return [str(name) for name in names] if isinstance(names, list) and names else None


def _parquet_documents(path: Path, stats: ReadStats, share: tuple[int, int] = (0, 1)
                       ) -> Iterator[tuple[str, str]]:
    for _, label, text in _placed_parquet_documents(parquet_format(path), path, stats, share):
        yield label, text
    stats.bytes_read = stats.bytes_total


def parquet_format(path: Path) -> "LineFormat":
    """How a Parquet corpus's rows are read (its columns by name, its ClassLabel names), decided once for every
    share."""
    schema = open_parquet(path).schema_arrow
    label_column, text_columns = parquet_columns(path, schema)
    names = class_label_names(schema, schema.names[label_column])
    return LineFormat("parquet", label_column, tuple(text_columns), class_names=None if names is None else
                      tuple(names))


def _placed_parquet_documents(fmt: "LineFormat", path: Path, stats: ReadStats, share: tuple[int, int] = (0, 1),
                              by_groups: bool = False) -> Iterator[tuple[int, str, str]]:
    """(row, label, text) of each document of rows [i N / n, (i + 1) N / n) of a Parquet corpus's N (share (i, n));
    by_groups: of its row groups [i G / n, (i + 1) G / n) instead (so that no group is decoded by two shares). Only
    the row groups that hold them are read. Rows are counted from 0; an error names them from 1."""
    parquet = open_parquet(path)
    names = parquet.schema_arrow.names
    columns = [names[fmt.label_column], *(names[i] for i in fmt.text_columns)]
    starts = np.cumsum([0] + [parquet.metadata.row_group(i).num_rows for i in range(parquet.num_row_groups)])
    if by_groups:
        groups = parquet.num_row_groups
        first, last = int(starts[groups * share[0] // share[1]]), int(starts[groups * (share[0] + 1) // share[1]])
    else:
        rows = parquet.metadata.num_rows
        first, last = rows * share[0] // share[1], rows * (share[0] + 1) // share[1]
    groups = [i for i in range(parquet.num_row_groups) if starts[i] < last and starts[i + 1] > first]
    if not groups:
        return
    class_names = None if fmt.class_names is None else list(fmt.class_names)
    row = int(starts[groups[0]])
    for batch in parquet.iter_batches(PARQUET_BATCH_ROWS, row_groups=groups, columns=columns):
        begin, row = row, row + batch.num_rows
        if row <= first or begin >= last:
            continue
        skip = max(first - begin, 0)
        batch = batch.slice(skip, min(last, row) - begin - skip)
        labels = batch.column(0).to_pylist()
        names_of = {}  # each distinct cell's class name, worked out once
        for number, label in enumerate(labels, begin + skip + 1):  # rows counted from 1
            if isinstance(label, dict):  # (unhashable) refused with the row
                _table_label(label, class_names, path, number)
            key = _cell_key(label)
            if key not in names_of:
                names_of[key] = _table_label(label, class_names, path, number)
        texts = [parquet_text(cells) for cells in zip(*(column.to_pylist() for column in batch.columns[1:]))]
        for at, (label, text) in enumerate(zip(labels, texts), begin + skip):
            label = names_of[_cell_key(label)]
            if not text or not label:
                stats.skipped["empty"] += 1
                continue
            yield at, label, text


def _cell_key(label):
    """A label cell as a key: its type and value (a list of labels as a tuple of its items' keys)."""
    if isinstance(label, list):
        return list, tuple(_cell_key(item) for item in label)
    return type(label), label


def _table_label(value, names: list[str] | None, path: Path, row: int) -> str:
    """A Parquet cell as the class name: strings stripped; a ClassLabel's index as its name; numbers as JSONL's
    (_json_label); null as "" (skipped as empty)."""
    if value is None:
        return ""
    if names is not None and isinstance(value, int) and not isinstance(value, bool):
        if not 0 <= value < len(names):
            raise CorpusError(f"Parquet corpus '{path}' row {row} has label {value}, outside its {len(names)} "
                              f"class names: fix the row or the file's label names")
        return names[value]
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, (str, int, float)):
        return _json_label(value, f"Parquet corpus '{path}' row", row)
    if isinstance(value, (list, tuple)):  # a list column: the document's labels (pipelines/labels.py)
        return joined(name for name in (_table_label(item, names, path, row) for item in value) if name)
    raise CorpusError(f"Parquet corpus '{path}' row {row} has a label that is {_json_kind(value)}: store the label "
                      f"as a string or a number, or the labels as a list of them")


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


def _label_separator(header: Sequence[str] | None, columns) -> str | None:
    """TABLE_LABEL_SEPARATOR where a table's header names its label column as one of several labels
    (MULTI_LABEL_COLUMNS), else None."""
    if header is None or columns is None or columns[0] is None:
        return None
    return TABLE_LABEL_SEPARATOR if header[columns[0]].strip().lower() in MULTI_LABEL_COLUMNS else None


def _cell_label(cell: str, separator: str | None) -> str:
    """A table's label cell as the document's label string: one label, or its labels split by the separator
    (pipelines/labels.py; an empty cell of a labels column: none of them)."""
    if separator is None:
        return cell.strip()
    return joined(part.strip() for part in cell.split(separator) if part.strip())


def table_reader(lines: Iterable[str], tsv: bool):
    """csv.reader over a CSV's lines, or a TSV's: tab-separated, no quoting (TSV_SUFFIXES)."""
    return csv.reader(lines, delimiter="\t", quoting=csv.QUOTE_NONE) if tsv else csv.reader(lines)


def table_columns(first_row: Sequence[str], labelled: bool = True) -> tuple[int | None, list[int]] | None:
    """A CSV or TSV file's first row -> (the label column, the text columns) where it is a header row, None where
    it is not (then it is a document: in a corpus, column 1 its label and the others its text). A header row names
    a label column (LABEL_COLUMNS), or with labelled=False (documents to classify) a label or a text column
    (TEXT_COLUMNS; the label column is then None where it names none). The text columns: those it names as text,
    else every column but the label's."""
    header = [cell.strip().lower() for cell in first_row]
    label = next((header.index(name) for name in LABEL_COLUMNS if name in header), None)
    named = [i for i, name in enumerate(header) if name in TEXT_COLUMNS and i != label]
    if label is None and (labelled or not named):
        return None
    return label, named or [i for i in range(len(header)) if i != label]


# How a table file writes its line breaks, judged from its first TABLE_SNIFF_BYTES: Zhang et al.'s corpora (Yelp,
# Amazon, Yahoo Answers, DBpedia) as "\n" (a backslash, then n), AG News's as a backslash alone ("dwindling\band":
# 11 of its test file's 1,670 backslashes stand before an n, as often as words start with one). Where at least
# NEWLINE_ESCAPE_SHARE of TABLE_SNIFF_MIN_BACKSLASHES or more backslashes stand before an n, "\n" is the line
# break; else a backslash is. Either becomes a space: read the other way, Yelp's "\nThe" became the word "nthe".
TABLE_SNIFF_BYTES = 1 << 20
TABLE_SNIFF_MIN_BACKSLASHES = 10
NEWLINE_ESCAPE_SHARE = 0.8


def newline_escapes(head: bytes) -> bool:
    """Whether a table file whose first bytes are `head` writes its line breaks as "\\n" (TABLE_SNIFF_BYTES)."""
    backslashes = head.count(b"\\")
    return backslashes >= TABLE_SNIFF_MIN_BACKSLASHES and head.count(b"\\n") >= backslashes * NEWLINE_ESCAPE_SHARE


def table_text(cells: Iterable[str], escapes: bool) -> str:
    """A table row's text cells as one text, its written line breaks as spaces (newline_escapes)."""
    text = " ".join(cells)
    if escapes:
        text = text.replace("\\n", " ")
    return text.replace("\\", " ").strip()


def _csv_documents(path: Path, stats: ReadStats, tsv: bool = False) -> Iterator[tuple[str, str]]:
    with path.open("rb") as handle:
        escapes = newline_escapes(handle.read(TABLE_SNIFF_BYTES))
    rows = _csv_rows(path, table_reader(_decoded_lines(path, stats), tsv), "TSV" if tsv else "CSV")
    label_col, text_cols = 0, None
    first = next(rows, None)
    columns = table_columns(first) if first is not None else None
    separator = _label_separator(first, columns)
    if columns is not None:
        label_col, text_cols = columns  # (a corpus's header always names its label column)
        first = None
    read = 0
    for row in itertools.chain([first] if first is not None else [], rows):
        if len(row) < 2:
            stats.skipped["bad_row"] += 1
            continue
        read += 1
        cols = text_cols if text_cols is not None else range(1, len(row))
        body = table_text((row[i] for i in cols if i < len(row)), escapes)
        label = _cell_label(row[label_col], separator) if label_col < len(row) else ""
        if not body or not label:
            stats.skipped["empty"] += 1
            continue
        yield label, body
    if not read and stats.skipped["bad_row"]:  # one column in every row: other separators (";" from a spreadsheet)
        separator = "tabs" if tsv else "commas (or, tab-separated, as a .tsv file)"
        raise CorpusError(f"{'TSV' if tsv else 'CSV'} corpus '{path}' has one column in each of its "
                          f"{stats.skipped['bad_row']:,} rows: a row is the label, then the text, separated by "
                          f"{separator}; save it so")


def _csv_rows(path: Path, reader, kind: str = "CSV") -> Iterator[list[str]]:
    """The reader's rows; a row the csv module cannot parse (a bare carriage return inside an unquoted field,
    a NUL byte) is refused with its line number rather than leaking csv.Error."""
    while True:
        try:
            row = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            fix = "save it as UTF-8 text without NUL bytes" if kind == "TSV" else \
                "quote fields that hold line breaks and save the file with \\n line endings"
            if "field larger than field limit" in str(exc):
                fix = (f"a field is over {csv.field_size_limit():,} characters: split the document, or close a quote "
                       "left open (a stray \" makes the rest of the file one field)")
            raise CorpusError(
                f"{kind} corpus '{path}' line {reader.line_num} cannot be parsed ({exc}): {fix}") from None
        yield row


def jsonl_format(path: Path) -> "LineFormat":
    """A JSONL corpus's keys, from its first record, as a table's header names its columns: "text" and "label",
    else the first key LABEL_COLUMNS names as the label and the keys TEXT_COLUMNS names as the text, joined in the
    record's order (GLUE's {"idx", "sentence", "label"}; DBpedia's {"label", "title", "content"} as Hugging Face
    writes it). Every record then holds them; a file whose first record names none keeps "text" and "label", and
    reading it says what to rename."""
    record = None
    with path.open("rb") as handle:
        for raw in handle:
            if raw.strip():
                try:
                    record = json.loads(decode_text(raw)[0])
                except json.JSONDecodeError:
                    pass
                break
    if not isinstance(record, dict):
        return LineFormat("jsonl")
    keys = [key for key in record if isinstance(key, str)]
    label = "label" if "label" in record else next(
        (key for name in LABEL_COLUMNS for key in keys if key.lower() == name), "label")
    return LineFormat("jsonl", text_keys=record_text_keys(record) or ("text",), label_key=label)


def record_text_keys(record: dict) -> tuple[str, ...]:
    """A JSONL record's text keys: "text", else the keys TEXT_COLUMNS names, in the record's order (none of them a
    label name: the two lists share none); () where it holds none."""
    if "text" in record:
        return ("text",)
    return tuple(key for key in record if isinstance(key, str) and key.lower() in TEXT_COLUMNS)


def record_text(record: dict, keys: tuple[str, ...]):
    """A JSONL record's text: its one text key's value, or the string values of several joined by spaces."""
    if len(keys) == 1:
        return record[keys[0]]
    return " ".join(record[key] for key in keys if isinstance(record.get(key), str))


def _jsonl_documents(path: Path, stats: ReadStats, start: int = 0, end: int | None = None,
                     fmt: "LineFormat | None" = None) -> Iterator[tuple[str, str]]:
    return ((label, text) for _, label, text in _placed_jsonl_documents(path, stats, start, end, fmt))


def _placed_jsonl_documents(path: Path, stats: ReadStats, start: int = 0, end: int | None = None,
                            fmt: "LineFormat | None" = None) -> Iterator[tuple[int, str, str]]:
    """_jsonl_documents, each as (the byte offset its line starts at, label, text); fmt: its keys (jsonl_format)."""
    fmt = fmt or LineFormat("jsonl")
    text_keys, label_key = fmt.text_keys, fmt.label_key
    shape = "{" + ", ".join(f'"{key}": ...' for key in (*text_keys, label_key)) + "}"
    where = f"JSONL corpus '{path}' line" if start == 0 else f"JSONL corpus '{path}' (from byte {start}) line"
    for number, (offset, line) in enumerate(_placed_lines(path, stats, start, end), 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise CorpusError(f"{where} {number} is not valid JSON ({exc.msg}): write one {shape} object per line"
                              ) from None
        if not isinstance(record, dict) or label_key not in record or not all(key in record for key in text_keys):
            missing = " or ".join(f'"{key}"' for key in (*text_keys, label_key))
            hint = _key_hint(record) if fmt.text_keys == ("text",) and label_key == "label" else ""
            raise CorpusError(f"{where} {number} lacks a {missing} key: write one {shape} object per line"
                              + (hint or _keys_of(record)))
        text, label = record_text(record, text_keys), _json_label(record[label_key], where, number, label_key)
        if not isinstance(text, str):
            raise CorpusError(
                f"{where} {number} has a \"{text_keys[0]}\" that is {_json_kind(text)}, not a string: "
                "write the document's text as a JSON string"
            )
        if not text.strip() or not label:
            stats.skipped["empty"] += 1
            continue
        yield offset, label, text


def _key_hint(record) -> str:
    """For a JSONL record without "text" or "label": the renames that would make it one, from the names a table's
    header may give those columns (LABEL_COLUMNS, TEXT_COLUMNS), e.g. ' (rename "sentence" to "text")'; else ''."""
    if not isinstance(record, dict):
        return ""
    renames = []
    for wanted, names in (("text", TEXT_COLUMNS), ("label", LABEL_COLUMNS)):
        found = [key for key in record if isinstance(key, str) and key.lower() in names]
        if wanted not in record and found:
            renames.append(f'"{found[0]}" to "{wanted}"')
    return f" (rename {' and '.join(renames)})" if renames else ""


def _keys_of(record) -> str:
    """For a JSONL record without the keys wanted: the keys it has, e.g. ' (its keys: "category", "texts")'."""
    if not isinstance(record, dict) or not record:
        return ""
    keys = [json.dumps(str(key), ensure_ascii=False) for key in list(record)[:8]]
    return f" (its keys: {', '.join(keys)}{', ...' if len(record) > 8 else ''})"


def _text_at(handle, offset: int, fmt: LineFormat = LineFormat("jsonl")) -> str:
    """The text of the document whose line starts at this byte offset of the open file (one that reading yielded:
    a valid line), decoded as reading decoded it."""
    handle.seek(offset)
    line, _ = decode_text(handle.readline())
    return _line_text(fmt, line)


def _json_kind(value) -> str:
    if value is None:
        return "null"
    name = type(value).__name__
    return f"{'an' if name[0] in 'aeiou' else 'a'} {name}"


def _json_label(value, where: str, number: int, key: str = "label") -> str:
    """A JSONL label as the class name: strings stripped; numbers in their plain form, so that 1, "1" and 1.0
    are one class ("1"); a list, the document's labels (pipelines/labels.py; [] none of them); null, booleans and
    objects refused with the line number."""
    if isinstance(value, list):
        names = [_json_label(item, where, number, key) for item in value]
        return joined(name for name in names if name)
    if isinstance(value, str):
        return value.strip()
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(int(value)) if float(value).is_integer() else repr(float(value))
    raise CorpusError(
        f"{where} {number} has a \"{key}\" that is {_json_kind(value)}: "
        "write the label as a string or a number, or the labels as a list of them"
    )


# check_table_labels refuses a CSV or TSV corpus of at least TEXT_LIKE_MIN_DOCUMENTS documents whose distinct labels
# are at least this share of them: labels are classes that several documents share, and a column of nearly all
# different values is a text column read as the label (a header the reader did not recognise, or the columns the
# other way round), which trained, or failed later on a label "with only 1 document", to no purpose.
TEXT_LIKE_MIN_DOCUMENTS = 50
TEXT_LIKE_LABEL_SHARE = 0.9


def check_table_labels(source: str, fmt: str, labels: Sequence[str]) -> None:
    """Refuse a CSV or TSV file whose labels look like texts (TEXT_LIKE_LABEL_SHARE says why), naming the fix."""
    distinct = len(set(labels))
    if fmt in ("csv", "tsv") and len(labels) >= TEXT_LIKE_MIN_DOCUMENTS and \
            distinct >= len(labels) * TEXT_LIKE_LABEL_SHARE:
        raise CorpusError(
            f"corpus '{source}' has {distinct:,} distinct labels among {len(labels):,} documents, so its labels look "
            f"like texts: a .{fmt} file takes column 1 as the label unless a header row names the label column "
            f"({', '.join(LABEL_COLUMNS[:5])}, ...); add such a header or put the label first")


def check_usable(source: str, labels: list[str], skipped: dict[str, int], empty_labels: list[str]) -> None:
    """After reading: refuse a corpus with no documents, an empty label folder, or a single label."""
    where = f"corpus '{source}'"
    if not labels:
        reasons = ", ".join(f"{n} {r}" for r, n in sorted(skipped.items()) if n) or "no documents"
        raise CorpusError(f"{where} has no usable document ({reasons}): add non-empty text documents")
    if empty_labels:
        raise CorpusError(
            f"label '{empty_labels[0]}' in {where} has no usable document (all files empty, binary, too large or "
            f"unreadable): add text documents to it or remove the folder"
        )
    if len(set(labels)) < 2:
        raise CorpusError(
            f"{where} has only one label ({labels[0]!r}): a classifier needs at least 2 labels"
        )

