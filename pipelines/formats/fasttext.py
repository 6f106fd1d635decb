"""fastText's format (any other text file whose first non-blank line holds a "__label__" word, e.g. fastText's
`cooking.train` or Kaggle's `train.ft.txt`): one document a line, "__label__<label> <text>". As fastText reads it,
every word that starts with "__label__" is a label, wherever it stands; the label is the word without the prefix.
A line of several labels is a document of those labels (pipelines/labels.py); a line without a label is skipped
and counted (fastText skips it too)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from pipelines.documents import is_binary
from pipelines.formats.base import ReadStats, _file_head, _placed_lines
from pipelines.formats.lines import LinesFormat
from pipelines.formats.records import class_name
from pipelines.labels import joined

FASTTEXT_LABEL_PREFIX = "__label__"


def is_fasttext_file(path: str | Path) -> bool:
    """Whether a file is in fastText's format: text whose first non-blank line (within the first
    BINARY_SNIFF_BYTES) holds a word starting with "__label__", first or anywhere else, as fastText reads labels."""
    return is_fasttext_head(_file_head(path))


def is_fasttext_head(head: bytes) -> bool:
    """is_fasttext_file of a file whose first BINARY_SNIFF_BYTES are head."""
    if is_binary(head):
        return False
    first = head.lstrip(b"\xef\xbb\xbf").lstrip().split(b"\n", 1)[0]
    return any(word.startswith(FASTTEXT_LABEL_PREFIX.encode()) for word in first.split())


def fasttext_line(line: str) -> tuple[list[str], str]:
    """One line of a fastText file -> (its labels, prefix removed, in order; its text). Every word starting with
    "__label__" is a label, as fastText reads it. Most files hold one, first: the text is then the rest of the
    line as written; where labels stand elsewhere, the other words joined by single spaces."""
    line = line.replace("\t", " ")  # (fastText splits words on tabs too)
    head, _, rest = line.strip().partition(" ")
    if head.startswith(FASTTEXT_LABEL_PREFIX) and FASTTEXT_LABEL_PREFIX not in rest:
        return [head[len(FASTTEXT_LABEL_PREFIX) :]], rest.strip()
    words = line.split()
    labels = [word[len(FASTTEXT_LABEL_PREFIX) :] for word in words if word.startswith(FASTTEXT_LABEL_PREFIX)]
    return labels, " ".join(word for word in words if not word.startswith(FASTTEXT_LABEL_PREFIX))


def _fasttext_document(line: str, stats: ReadStats, where: str, number: int) -> tuple[str, str] | None:
    """One line of a fastText file -> (label, text), or None for a blank line or one skipped (counted in stats).
    A line of several labels is a multi-label document (pipelines/labels.py), as fastText's -loss ova reads it."""
    if not line.strip():
        return None
    labels, text = fasttext_line(line)
    labels = [name for name in (class_name(label, where, number) for label in labels) if name]
    if not labels:
        stats.skipped["no_label"] += 1
    elif not text:
        stats.skipped["empty"] += 1
    else:
        return joined(labels), text
    return None


@dataclass(frozen=True)
class FastTextFormat(LinesFormat):
    """fastText's format (the module's docstring): nothing to decide beyond the file's being one."""

    kind = "fasttext"
    name = "fastText"

    def placed_documents(
        self, path: Path, stats: ReadStats, start: int = 0, end: int | None = None
    ) -> Iterator[tuple[int, str, str]]:
        where = self.where(path, start)
        for number, (offset, line) in enumerate(_placed_lines(path, stats, start, end), 1):
            document = _fasttext_document(line, stats, where, number)
            if document is not None:
                yield offset, *document

    def line_text(self, line: str) -> str:
        return fasttext_line(line)[1]
