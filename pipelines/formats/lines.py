"""A file of one document a line in any format (JSONL, fastText's, CSV, TSV; Parquet's rows likewise): its format
decided once from the file (line_format), each line's document and text as one reader of the whole file reads
them, whichever share of the file is read."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Iterator

from pipelines.documents import decode_text
from pipelines.formats.base import TSV_SUFFIXES, LineFormat, ReadStats, _placed_lines
from pipelines.formats.fasttext import _fasttext_document, fasttext_line, is_fasttext_file
from pipelines.formats.jsonl import _placed_jsonl_documents, jsonl_format, record_text
from pipelines.formats.parquet import parquet_format
from pipelines.formats.table import (
    TABLE_SNIFF_BYTES,
    _label_separator,
    _line_row,
    _table_row_document,
    newline_escapes,
    table_columns,
    table_reader,
    table_text,
)


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
        columns = table_columns(first, where=f"corpus '{path}'") if first is not None else None
        label_column, text_columns = columns if columns is not None else (0, None)
        return LineFormat(
            "tsv" if tsv else "csv",
            label_column,
            None if text_columns is None else tuple(text_columns),
            newline_escapes(head),
            len(first_line) if columns is not None else 0,
            label_separator=_label_separator(first, columns),
            header_width=len(first) if columns is not None else 0,
        )
    if path.is_file() and is_fasttext_file(path):
        return LineFormat("fasttext")
    return None


def _placed_line_documents(
    fmt: LineFormat, path: Path, stats: ReadStats, start: int = 0, end: int | None = None
) -> Iterator[tuple[int, str, str]]:
    """(the byte its line starts at, label, text) of each document whose line starts in bytes [start, end), read
    as one reader of the whole file reads it (its skips counted in stats). A table line that is not a row of whole
    fields raises LineBreakInField (_line_row)."""
    if fmt.kind == "jsonl":
        yield from _placed_jsonl_documents(path, stats, start, end, fmt)
        return
    where = f"{'fastText' if fmt.kind == 'fasttext' else fmt.kind.upper()} corpus '{path}'" + (
        " line" if start == 0 else f" (from byte {start}) line"
    )
    for number, (offset, line) in enumerate(_placed_lines(path, stats, start, end), 1):
        if fmt.kind == "fasttext":
            document = _fasttext_document(line, stats, where, number)
        else:
            row = _line_row(fmt, line, where, number)  # (the header's line too: a field may open there)
            if offset < fmt.header_bytes:
                continue
            document = _table_row_document(fmt, row, stats, where, number)
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


def _fasttext_documents(
    path: Path, stats: ReadStats, start: int = 0, end: int | None = None
) -> Iterator[tuple[str, str]]:
    return ((label, text) for _, label, text in _placed_line_documents(LineFormat("fasttext"), path, stats, start, end))


def _text_at(handle, offset: int, fmt: LineFormat = LineFormat("jsonl")) -> str:
    """The text of the document whose line starts at this byte offset of the open file (one that reading yielded:
    a valid line), decoded as reading decoded it."""
    handle.seek(offset)
    line, _ = decode_text(handle.readline())
    return _line_text(fmt, line)
