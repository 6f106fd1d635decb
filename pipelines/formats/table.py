"""CSV (.csv) and TSV (.tsv, .tab) corpora: without a header row, column 1 is the label and the other columns are
joined as the text (AG News: class index, title, description). A header row is one that names a label column
(LABEL_COLUMNS: "label", "class", "category", "sentiment", ...; the first of those it holds is the label; one of
MULTI_LABEL_COLUMNS holds several labels split by commas); the text is then its text columns (TEXT_COLUMNS: "text",
"sentence", "review", "title", ...) joined, or where it names none, every other column. Line breaks written as
"\\n" (Yelp, DBpedia, Yahoo Answers) or as a backslash alone (AG News) become spaces (newline_escapes). A TSV file
is the IANA text/tab-separated-values format: no quoting, one row a line. Decision: a CSV is read from the top by
one reader (every share parses the whole file), since a quoted field may hold line breaks."""

from __future__ import annotations

import csv
import itertools
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Iterator, Sequence

from pipelines.documents import decode_text
from pipelines.errors import CorpusError
from pipelines.formats.base import (
    LABEL_COLUMNS,
    MULTI_LABEL_COLUMNS,
    TABLE_LABEL_SEPARATOR,
    TEXT_COLUMNS,
    LineBreakInField,
    ReadStats,
    _check_text_file,
    _decoded_lines,
    _part,
    _placed_lines,
)
from pipelines.formats.lines import LinesFormat
from pipelines.formats.records import class_name, skip_reason
from pipelines.labels import joined


@dataclass(frozen=True)
class TableFormat(LinesFormat):
    """A CSV or TSV file's reading, its first row's decided once for every share (of): which columns hold the label
    and the text, how line breaks are written. One reader reads the file from the top (documents: a quoted field may
    hold line breaks); workers read its lines as rows (placed_documents), and hand a share back where one is not."""

    tsv: bool = False
    label_column: int = 0
    text_columns: tuple[int, ...] | None = None  # None: every column after the label's
    escapes: bool = False  # line breaks written as "\\n" (newline_escapes)
    header_bytes: int = 0  # a header row: the bytes of its first line, not a document
    label_separator: str | None = None  # label cells hold several labels split by this (MULTI_LABEL_COLUMNS)
    header_width: int = 0  # the header's cells (0: no header): a row's cells past them are counted, unread
    first_line_parsed: bool = True  # False: the first line is not a row (workers do not read the file)

    @property
    def kind(self) -> str:
        return "tsv" if self.tsv else "csv"

    @property
    def name(self) -> str:
        return self.kind.upper()

    @classmethod
    def of(cls, path: Path) -> "TableFormat":
        """A CSV or TSV file's reading, decided from its first TABLE_SNIFF_BYTES."""
        tsv = path.suffix.lower() != ".csv"
        _check_text_file(path, "TSV" if tsv else "CSV")
        with path.open("rb") as handle:
            head = handle.read(TABLE_SNIFF_BYTES)
        first_line = head.split(b"\n", 1)[0] + b"\n"
        try:
            first = next(table_reader([decode_text(first_line)[0]], tsv), None)
        except csv.Error:  # (one reader refuses it with its line number)
            return cls(tsv, first_line_parsed=False)
        columns = table_columns(first, where=f"corpus '{path}'") if first is not None else None
        label_column, text_columns = columns if columns is not None else (0, None)
        return cls(
            tsv,
            label_column,
            None if text_columns is None else tuple(text_columns),
            newline_escapes(head),
            len(first_line) if columns is not None else 0,
            _label_separator(first, columns),
            len(first) if columns is not None else 0,
        )

    def documents(
        self, path: Path, max_bytes: int, stats: ReadStats, share: tuple[int, int]
    ) -> Iterator[tuple[str, str]]:
        stats.bytes_total = path.stat().st_size
        documents = _csv_documents(path, stats, self.tsv)
        return iter(_part(list(documents), *share)) if share[1] > 1 else documents

    def most_shares(self, path: Path) -> int:
        return sys.maxsize if self.first_line_parsed else 1

    def placed_documents(
        self, path: Path, stats: ReadStats, start: int = 0, end: int | None = None
    ) -> Iterator[tuple[int, str, str]]:
        """A table line that is not a row of whole fields raises LineBreakInField (_line_row)."""
        where = self.where(path, start)
        for number, (offset, line) in enumerate(_placed_lines(path, stats, start, end), 1):
            row = _line_row(self, line, where, number)  # (the header's line too: a field may open there)
            if offset < self.header_bytes:
                continue
            document = _table_row_document(self, row, stats, where, number)
            if document is not None:
                yield offset, *document

    def line_text(self, line: str) -> str:
        row = next(table_reader([line], self.tsv))
        columns = self.text_columns if self.text_columns is not None else range(1, len(row))
        return table_text((row[i] for i in columns if i < len(row)), self.escapes)

    def check_labels(self, source: str, labels: Sequence[str]) -> None:
        check_table_labels(source, self.kind, labels)


def _line_row(fmt: TableFormat, line: str, where: str, number: int) -> list[str]:
    """A CSV or TSV line's cells. A CSV line is parsed strictly: one that ends inside a quoted field (which then
    holds a line break, so the file's lines are not its rows) or that a strict reading refuses raises
    LineBreakInField, and the file is read by one reader from the top (_csv_documents), which words any error."""
    try:
        return next(csv.reader([line], strict=True) if fmt.kind == "csv" else table_reader([line], True), [])
    except csv.Error as exc:
        raise LineBreakInField(f"{where} {number}: {exc}") from None


def _table_row_document(
    fmt: TableFormat, row: list[str], stats: ReadStats, where: str = "table row", number: int = 0
) -> tuple[str, str] | None:
    """One row of a CSV or TSV file as _csv_documents reads it, or None (counted in stats); where, number: the
    row's place, for a label the record contract refuses."""
    if len(row) < 2:
        stats.skipped["bad_row"] += 1
        return None
    _count_cells_beyond(row, fmt.header_width, stats)
    columns = fmt.text_columns if fmt.text_columns is not None else range(1, len(row))
    body = table_text((row[i] for i in columns if i < len(row)), fmt.escapes)
    label = (
        _cell_label(row[fmt.label_column], fmt.label_separator, where, number) if fmt.label_column < len(row) else ""
    )
    reason = skip_reason(label, body)
    if reason:
        stats.skipped[reason] += 1
        return None
    return label, body


def _count_cells_beyond(row: list[str], header_width: int, stats: ReadStats) -> None:
    """A row's cells past its table's header (which names no column for them): counted, as every cell not read is."""
    if header_width and len(row) > header_width:
        stats.skipped["cells_beyond_header"] += len(row) - header_width


def _label_separator(header: Sequence[str] | None, columns) -> str | None:
    """TABLE_LABEL_SEPARATOR where a table's header names its label column as one of several labels
    (MULTI_LABEL_COLUMNS), else None."""
    if header is None or columns is None or columns[0] is None:
        return None
    return TABLE_LABEL_SEPARATOR if header[columns[0]].strip().lower() in MULTI_LABEL_COLUMNS else None


def _cell_label(cell: str, separator: str | None, where: str, number: int) -> str:
    """A table's label cell as the document's label string: one label, or its labels split by the separator
    (pipelines/labels.py; an empty cell of a labels column: none of them); each a class name (records.py)."""
    if separator is None:
        return class_name(cell, where, number)
    return joined(name for name in (class_name(part, where, number) for part in cell.split(separator)) if name)


def table_reader(lines: Iterable[str], tsv: bool):
    """csv.reader over a CSV's lines, or a TSV's: tab-separated, no quoting (TSV_SUFFIXES)."""
    return csv.reader(lines, delimiter="\t", quoting=csv.QUOTE_NONE) if tsv else csv.reader(lines)


def table_columns(
    first_row: Sequence[str], labelled: bool = True, where: str = "the table"
) -> tuple[int | None, list[int]] | None:
    """A CSV or TSV file's first row -> (the label column, the text columns) where it is a header row, None where
    it is not (then it is a document: in a corpus, column 1 its label and the others its text). A header row names
    a label column (LABEL_COLUMNS), or with labelled=False (documents to classify) a label or a text column
    (TEXT_COLUMNS; the label column is then None where it names none). The text columns: those it names as text,
    else every column but the label's. A header that names its label column twice is refused: which one holds the
    labels cannot be known (where: the file, for the message)."""
    header = [cell.strip().lower() for cell in first_row]
    label = next((header.index(name) for name in LABEL_COLUMNS if name in header), None)
    if label is not None and header.count(header[label]) > 1:
        second = header.index(header[label], label + 1)
        raise CorpusError(
            f"the header of {where} names the label column '{first_row[label].strip()}' twice (columns "
            f"{label + 1} and {second + 1}): rename or drop one of them"
        )
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
    label_col, text_cols, header_width = 0, None, 0
    first = next(rows, None)
    columns = table_columns(first, where=f"corpus '{path}'") if first is not None else None
    separator = _label_separator(first, columns)
    if columns is not None:
        label_col, text_cols = columns  # (a corpus's header always names its label column)
        header_width, first = len(first), None
    read = 0
    where = f"{'TSV' if tsv else 'CSV'} corpus '{path}' row"
    for row in itertools.chain([first] if first is not None else [], rows):
        if len(row) < 2:
            stats.skipped["bad_row"] += 1
            continue
        read += 1
        _count_cells_beyond(row, header_width, stats)
        cols = text_cols if text_cols is not None else range(1, len(row))
        body = table_text((row[i] for i in cols if i < len(row)), escapes)
        label = _cell_label(row[label_col], separator, where, read) if label_col < len(row) else ""
        reason = skip_reason(label, body)
        if reason:
            stats.skipped[reason] += 1
            continue
        yield label, body
    if not read and stats.skipped["bad_row"]:  # one column in every row: other separators (";" from a spreadsheet)
        separator = "tabs" if tsv else "commas (or, tab-separated, as a .tsv file)"
        raise CorpusError(
            f"{'TSV' if tsv else 'CSV'} corpus '{path}' has one column in each of its "
            f"{stats.skipped['bad_row']:,} rows: a row is the label, then the text, separated by "
            f"{separator}; save it so"
        )


def _csv_rows(path: Path, reader, kind: str = "CSV") -> Iterator[list[str]]:
    """The reader's rows; a row the csv module cannot parse (a bare carriage return inside an unquoted field,
    a NUL byte) is refused with its line number rather than leaking csv.Error."""
    while True:
        try:
            row = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            fix = (
                "save it as UTF-8 text without NUL bytes"
                if kind == "TSV"
                else "quote fields that hold line breaks and save the file with \\n line endings"
            )
            if "field larger than field limit" in str(exc):
                fix = (
                    f"a field is over {csv.field_size_limit():,} characters: split the document, or close a quote "
                    "left open (a stray \" makes the rest of the file one field)"
                )
            raise CorpusError(
                f"{kind} corpus '{path}' line {reader.line_num} cannot be parsed ({exc}): {fix}"
            ) from None
        yield row


# check_table_labels refuses a CSV or TSV corpus of at least TEXT_LIKE_MIN_DOCUMENTS documents whose distinct labels
# are at least this share of them: labels are classes that several documents share, and a column of nearly all
# different values is a text column read as the label (a header the reader did not recognise, or the columns the
# other way round), which trained, or failed later on a label "with only 1 document", to no purpose.
TEXT_LIKE_MIN_DOCUMENTS = 50


TEXT_LIKE_LABEL_SHARE = 0.9


def check_table_labels(source: str, fmt: str, labels: Sequence[str]) -> None:
    """Refuse a CSV or TSV file whose labels look like texts (TEXT_LIKE_LABEL_SHARE says why), naming the fix."""
    distinct = len(set(labels))
    if (
        fmt in ("csv", "tsv")
        and len(labels) >= TEXT_LIKE_MIN_DOCUMENTS
        and distinct >= len(labels) * TEXT_LIKE_LABEL_SHARE
    ):
        raise CorpusError(
            f"corpus '{source}' has {distinct:,} distinct labels among {len(labels):,} documents, so its labels look "
            f"like texts: a .{fmt} file takes column 1 as the label unless a header row names the label column "
            f"({', '.join(LABEL_COLUMNS[:5])}, ...); add such a header or put the label first"
        )
