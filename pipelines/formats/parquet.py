"""Parquet corpora (.parquet, e.g. a Hugging Face dataset's `train-00000-of-00001.parquet`): the columns named as a
table's header names them (LABEL_COLUMNS, TEXT_COLUMNS; where it names no text column, every other string column
is text). An integer label column with Hugging Face's ClassLabel names in the file's metadata takes the names
(IMDB's 0/1 become "neg"/"pos"); other numbers are read as JSONL's are; a list column is each row's labels."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import numpy as np
import pyarrow as pa

from pipelines.errors import CorpusError
from pipelines.formats.base import LABEL_COLUMNS, TEXT_COLUMNS, CorpusFormat, ReadStats
from pipelines.formats.records import joined_texts, label_value, skip_reason, text_value
from pipelines.formats.table import table_columns


@dataclass(frozen=True)
class ParquetFormat(CorpusFormat):
    """A Parquet corpus's columns by name and its ClassLabel names (parquet_format), decided once for every share.
    A worker's share is whole row groups (one group is decoded by one reader); a document's place is its row."""

    label_column: int = 0
    text_columns: tuple[int, ...] = ()
    class_names: tuple[str, ...] | None = None  # the label column's ClassLabel names (class_label_names)

    kind = "parquet"

    @classmethod
    def of(cls, path: Path) -> "ParquetFormat":
        return parquet_format(path)

    def documents(
        self, path: Path, max_bytes: int, stats: ReadStats, share: tuple[int, int]
    ) -> Iterator[tuple[str, str]]:
        stats.bytes_total = path.stat().st_size
        return _parquet_documents(self, path, stats, share)

    def most_shares(self, path: Path) -> int:
        return open_parquet(path).num_row_groups

    def share_documents(self, path: Path, stats: ReadStats, index: int, count: int) -> Iterator[tuple[int, str, str]]:
        size = path.stat().st_size
        stats.bytes_read = size * (index + 1) // count - size * index // count
        return _placed_parquet_documents(self, path, stats, (index, count), by_groups=True)

    def texts_at(self, path: Path, places: np.ndarray) -> Iterator[str]:
        return iter(parquet_texts(str(path), self, places))

    def place_sizes(self, places: np.ndarray, file_size: int) -> np.ndarray:
        return np.full(len(places), max(1, file_size // max(1, len(places))), np.int64)


def parquet_texts(path: str, fmt: ParquetFormat, rows: np.ndarray) -> list[str]:
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


# Parquet corpora are read this many rows at a time (a batch's texts in memory at once).
PARQUET_BATCH_ROWS = 65_536


def open_parquet(path: Path, kind: str = "Parquet corpus"):
    """A Parquet file opened by pyarrow, or its refusal naming the fix."""
    import pyarrow.parquet as pq

    try:
        return pq.ParquetFile(path)
    except (pa.ArrowException, OSError) as exc:
        raise CorpusError(
            f"{kind} '{path}' cannot be read as Parquet ({str(exc).splitlines()[0]}): pass a .parquet "
            f"file as pyarrow or pandas write it"
        ) from None


def parquet_columns(
    path: Path, schema: pa.Schema, labelled: bool = True, kind: str = "Parquet corpus"
) -> tuple[int | None, list[int]]:
    """(the label column, the text columns) of a Parquet file, named as a table's header names them
    (table_columns); where it names no text column, the other string columns. Refused where it names no label
    column (labelled) or no text can be found."""
    names = list(schema.names)
    columns = table_columns(names, labelled, where=f"{kind} '{path}'")
    text_like = [
        i
        for i, name in enumerate(names)
        if pa.types.is_string(schema.field(name).type) or pa.types.is_large_string(schema.field(name).type)
    ]
    if columns is None and not labelled:
        columns = (None, text_like)
    if columns is None:
        raise CorpusError(
            f"{kind} '{path}' names no label column (its columns: {', '.join(names)}): name the "
            f"label column one of {', '.join(LABEL_COLUMNS[:5])}, ..."
        )
    label, text = columns
    if not any(names[i].strip().lower() in TEXT_COLUMNS for i in text):  # every other column: its strings only
        text = [i for i in text if i in text_like]
    if not text:
        raise CorpusError(
            f"{kind} '{path}' has no text column (its columns: {', '.join(names)}): name the text "
            f"column one of {', '.join(TEXT_COLUMNS[:5])}, ..."
        )
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


def _parquet_documents(
    fmt: ParquetFormat, path: Path, stats: ReadStats, share: tuple[int, int]
) -> Iterator[tuple[str, str]]:
    for _, label, text in _placed_parquet_documents(fmt, path, stats, share):
        yield label, text
    stats.bytes_read = stats.bytes_total


def parquet_format(path: Path) -> ParquetFormat:
    """How a Parquet corpus's rows are read (its columns by name, its ClassLabel names), decided once for every
    share."""
    schema = open_parquet(path).schema_arrow
    label_column, text_columns = parquet_columns(path, schema)
    names = class_label_names(schema, schema.names[label_column])
    return ParquetFormat(label_column, tuple(text_columns), None if names is None else tuple(names))


def _placed_parquet_documents(
    fmt: ParquetFormat, path: Path, stats: ReadStats, share: tuple[int, int] = (0, 1), by_groups: bool = False
) -> Iterator[tuple[int, str, str]]:
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
        label_key = batch.schema.names[0]
        for number, label in enumerate(labels, begin + skip + 1):  # rows counted from 1
            if isinstance(label, dict):  # (unhashable) refused with the row
                _table_label(label, class_names, path, number, label_key)
            key = _cell_key(label)
            if key not in names_of:
                names_of[key] = _table_label(label, class_names, path, number, label_key)
        texts = _corpus_texts(batch, path, begin + skip + 1)
        for at, (label, text) in enumerate(zip(labels, texts), begin + skip):
            label = names_of[_cell_key(label)]
            reason = skip_reason(label, text)
            if reason:
                stats.skipped[reason] += 1
                continue
            yield at, label, text


def _cell_key(label):
    """A label cell as a key: its type and value (a list of labels as a tuple of its items' keys)."""
    if isinstance(label, list):
        return list, tuple(_cell_key(item) for item in label)
    return type(label), label


def _table_label(value, names: list[str] | None, path: Path, row: int, key: str = "label") -> str:
    """A Parquet cell as the class name: a ClassLabel's index (or a list of them) as its name(s), then the cell as
    the record contract reads a typed label (records.label_value: JSONL's rule)."""
    if names is not None:
        value = _class_label_names(value, names, path, row)
    return label_value(value, f"Parquet corpus '{path}' row", row, key)


def _class_label_names(value, names: list[str], path: Path, row: int):
    """A label cell with its ClassLabel indices (an int, or a list's ints) replaced by their names; else as it is."""
    if isinstance(value, (list, tuple)):
        return [_class_label_names(item, names, path, row) for item in value]
    if not isinstance(value, int) or isinstance(value, bool):
        return value
    if not 0 <= value < len(names):
        raise CorpusError(
            f"Parquet corpus '{path}' row {row} has label {value}, outside its {len(names)} "
            f"class names: fix the row or the file's label names"
        )
    return names[value]


def _corpus_texts(batch, path: Path, first_row: int) -> list[str]:
    """A batch's text cells (its columns after the label's) as the record contract reads typed texts, stripped: the
    one column's strings (a string a row taken as it is, the rest through text_value), or several columns' strings,
    nulls left out, joined by spaces. first_row: the batch's first row, counted from 1."""
    where, keys = f"Parquet corpus '{path}' row", batch.schema.names[1:]
    columns = [column.to_pylist() for column in batch.columns[1:]]
    if len(columns) == 1:
        return [
            (value if type(value) is str else text_value(value, where, row, keys[0])).strip()
            for row, value in enumerate(columns[0], first_row)
        ]
    return [
        joined_texts(dict(zip(keys, cells)), where, row).strip() for row, cells in enumerate(zip(*columns), first_row)
    ]
