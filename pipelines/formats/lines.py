"""Files of one document a line (JSONL, fastText's, CSV, TSV): what their formats share. A share is the lines that
start in a run of the file's bytes (byte_share), so any share is read as one reader of the whole file reads its
lines; a document's place is the byte its line starts at, from which its text is read back alone."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Iterator

import numpy as np

from pipelines.documents import decode_text
from pipelines.formats.base import CorpusFormat, ReadStats, byte_share


class LinesFormat(CorpusFormat):
    """A CorpusFormat of one document a line; each format says how a line is a document (placed_documents) and
    where its text stands (line_text)."""

    name = ""  # the format as messages name it: "JSONL", "fastText", "CSV", "TSV"

    def placed_documents(
        self, path: Path, stats: ReadStats, start: int = 0, end: int | None = None
    ) -> Iterator[tuple[int, str, str]]:
        """(the byte its line starts at, label, text) of each document whose line starts in bytes [start, end), as
        one reader of the whole file reads it (its skips counted in stats)."""
        raise NotImplementedError

    def line_text(self, line: str) -> str:
        """The text of a line that reading found to be a document."""
        raise NotImplementedError

    def where(self, path: Path, start: int) -> str:
        """How a message names a line of this file's share from byte `start` (a number follows)."""
        return f"{self.name} corpus '{path}'" + (" line" if start == 0 else f" (from byte {start}) line")

    def documents(
        self, path: Path, max_bytes: int, stats: ReadStats, share: tuple[int, int]
    ) -> Iterator[tuple[str, str]]:
        start, end = byte_share(path, *share)  # (the file was checked to be text when its format was decided)
        stats.bytes_total = end - start
        return ((label, text) for _, label, text in self.placed_documents(path, stats, start, end))

    def most_shares(self, path: Path) -> int:
        return sys.maxsize

    def share_documents(self, path: Path, stats: ReadStats, index: int, count: int) -> Iterator[tuple[int, str, str]]:
        return self.placed_documents(path, stats, *byte_share(path, index, count))

    def place_sizes(self, places: np.ndarray, file_size: int) -> np.ndarray:
        return np.diff(np.append(places, file_size))  # a line's bytes: to the next document's line at most

    def texts_at(self, path: Path, places: np.ndarray) -> Iterator[str]:
        with open(path, "rb") as handle:
            for offset in places:
                handle.seek(int(offset))
                yield self.line_text(decode_text(handle.readline())[0])
