"""Folder corpora: corpus/<label>/<any file>; files in sub-folders of a label folder belong to that label. Dotfiles
and hidden folders are skipped everywhere; files beside the label folders are skipped and counted, as are the files
of a folder named for unlabelled documents (UNLABELLED_FOLDERS: aclImdb's "unsup")."""

from __future__ import annotations

import stat
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from pipelines.confine import outside
from pipelines.confine import root as confine_root
from pipelines.documents import classify_file
from pipelines.errors import CorpusError
from pipelines.formats.base import FORMAT_HINT, CorpusFormat, ReadStats, _part
from pipelines.formats.records import class_name
from pipelines.labels import merged_documents


@dataclass(frozen=True)
class FolderFormat(CorpusFormat):
    """A folder of label folders: share i of n reads files [i N / n, (i + 1) N / n) of its N (names listed first)."""

    kind = "folder"

    def documents(
        self, path: Path, max_bytes: int, stats: ReadStats, share: tuple[int, int]
    ) -> Iterator[tuple[str, str]]:
        return _folder_documents(path, max_bytes, stats, share)

    def as_label_sets(self, texts: list[str], labels: list[str]) -> tuple[list[str], list[str]]:
        return merged_documents(texts, labels)


def _folder_documents(
    root: Path, max_bytes: int, stats: ReadStats, share: tuple[int, int]
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


def _folder_files(
    root: Path, label_dirs: list[Path], max_bytes: int, stats: ReadStats, share: tuple[int, int]
) -> Iterator[tuple[str, str]]:
    # Each real folder is walked once: a link back to the corpus (comp/loop -> ..) or into another label's
    # folder would otherwise read documents again, under the wrong label, or forever.
    seen = {_identity(root)} | {_identity(d) for d in label_dirs}
    # Names only: cheap beside reading the files. Every share walks all the folders, and share 0 alone counts
    # what the walk skips (hidden entries, links), so that the shares' counts add up to one reader's.
    walk_skipped = stats.skipped if share[0] == 0 else Counter()
    files = [
        (number, file)
        for number, label_dir in enumerate(label_dirs)
        for file in _walk_files(label_dir, walk_skipped, seen)
    ]
    if share[1] > 1:
        files = _part(files, *share)
    by_label: list[list[Path]] = [[] for _ in label_dirs]
    for number, file in files:
        by_label[number].append(file)
    names = [
        class_name(label_dir.name, f"corpus folder '{root}' label folder", number)
        for number, label_dir in enumerate(label_dirs, 1)
    ]
    for name, label_files in zip(names, by_label):
        found = False
        for file in label_files:
            text, reason, fallback = classify_file(file, max_bytes)
            if reason:
                stats.skipped[reason] += 1
                continue
            stats.non_utf8 += fallback
            found = True
            yield name, text
        if not found:
            stats.empty_labels.append(name)


def _identity(folder: Path) -> tuple[int, int]:
    info = folder.stat()
    return info.st_dev, info.st_ino


def check_corpus_path(path: Path) -> None:
    """A corpus path that exists, is a folder or a regular file (a FIFO or a device would block or never end), and
    lies under the read root where one is set (pipelines/confine.py)."""
    if not path.exists():
        raise CorpusError(f"corpus path '{path}' does not exist: {FORMAT_HINT}")
    if outside(path):
        raise CorpusError(
            f"corpus '{path}' resolves to '{path.resolve()}', outside the data root '{confine_root()}': "
            "put the corpus under it"
        )
    if not path.is_dir() and not stat.S_ISREG(path.stat().st_mode):
        raise CorpusError(
            f"corpus path '{path}' is not a regular file or a folder (a FIFO, device or socket): {FORMAT_HINT}"
        )


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
