"""Converters from the public datasets' own layouts to textclf corpora (JSONL, one document per line).

- 20 Newsgroups "bydate" (folders 20news-bydate-train/<group>/<id> and 20news-bydate-test/...):
  "20news" keeps all 20 groups as labels; "news4" keeps the groups under comp., rec., sci. and talk. and
  labels each by that top-level name (9,650 train / 6,425 test documents).
- AG News CSV (class index, title, description): "agnews7600" is the 7,600-row test.csv shuffled with
  Python's random.Random(0), the first 6,080 rows for training and the last 1,520 for testing; the text is
  title + " " + description, labels are the names in classes.txt beside the CSV when present.
- "synthetic": a large corpus sampled from a real one's word distribution (pipelines/synthetic.py): from a
  20news-bydate folder, its 20 training groups; from any corpus (folder, CSV, JSONL), its labels. Writes
  train.jsonl (--docs documents) and test.jsonl (a tenth as many, other seed).
"""

from __future__ import annotations

import csv
import json
import random
from pathlib import Path

from pipelines.documents import classify_file
from pipelines.errors import CorpusError

NEWS4_GROUPS = ("comp", "rec", "sci", "talk")
DATASETS = ("news4", "20news", "agnews7600", "synthetic")


def _write_jsonl(path: Path, records: list[tuple[str, str]]) -> int:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".jsonl.tmp")
    with tmp.open("w", encoding="utf-8") as out:
        for label, text in records:
            out.write(json.dumps({"text": text, "label": label}, ensure_ascii=False) + "\n")
    tmp.replace(path)
    return len(records)


def _newsgroups_split(root: Path, split: str, top_level: bool) -> list[tuple[str, str]]:
    folder = root / f"20news-bydate-{split}"
    if not folder.is_dir():
        raise CorpusError(f"'{folder}' not found: pass the folder that holds 20news-bydate-train and -test")
    records = []
    for group in sorted(p for p in folder.iterdir() if p.is_dir() and not p.name.startswith(".")):
        top = group.name.split(".")[0]
        if top_level and top not in NEWS4_GROUPS:
            continue
        for file in sorted(f for f in group.iterdir() if f.is_file() and not f.name.startswith(".")):
            text, reason, _ = classify_file(file, max_bytes=10 * 1024 * 1024)
            if text is not None:
                records.append((top if top_level else group.name, text))
    return records


def _agnews(csv_path: Path) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    if not csv_path.is_file():
        raise CorpusError(f"AG News CSV '{csv_path}' not found: pass the path of test.csv (class, title, description)")
    classes_file = csv_path.parent / "classes.txt"
    names = classes_file.read_text().split() if classes_file.exists() else None
    with csv_path.open(encoding="utf-8", newline="") as handle:
        rows = [row for row in csv.reader(handle) if len(row) >= 3]
    random.Random(0).shuffle(rows)
    records = []
    for row in rows:
        label = names[int(row[0]) - 1] if names and row[0].isdigit() and 0 < int(row[0]) <= len(names) else row[0]
        records.append((label, (row[1] + " " + row[2]).replace("\\", " ")))
    n_train = int(len(records) * 0.8)  # 6,080 of 7,600
    return records[:n_train], records[n_train:]


def _synthetic(source: Path, out_dir: Path, n_docs: int) -> dict[str, Path]:
    from pipelines.corpus import read_corpus
    from pipelines.synthetic import write_synthetic

    if (source / "20news-bydate-train").is_dir():
        records = _newsgroups_split(source, "train", top_level=False)
        texts, labels = [t for _, t in records], [label for label, _ in records]
    else:
        corpus = read_corpus(source)
        texts, labels = corpus.texts, corpus.labels
    return {
        "train": write_synthetic(texts, labels, out_dir / "train.jsonl", n_docs, seed=0),
        "test": write_synthetic(texts, labels, out_dir / "test.jsonl", max(1, n_docs // 10), seed=1),
    }


def build_dataset(name: str, source: str | Path, out_dir: str | Path, n_docs: int = 1_000_000) -> dict[str, Path]:
    """Write <out_dir>/train.jsonl and <out_dir>/test.jsonl for a named dataset; return their paths.
    n_docs: training documents of "synthetic"."""
    source, out_dir = Path(source), Path(out_dir)
    if name == "synthetic":
        return _synthetic(source, out_dir, n_docs)
    if name in ("news4", "20news"):
        train = _newsgroups_split(source, "train", name == "news4")
        test = _newsgroups_split(source, "test", name == "news4")
    elif name == "agnews7600":
        train, test = _agnews(source)
    else:
        raise CorpusError(f"unknown dataset '{name}': choose one of {', '.join(DATASETS)}")
    paths = {"train": out_dir / "train.jsonl", "test": out_dir / "test.jsonl"}
    _write_jsonl(paths["train"], train)
    _write_jsonl(paths["test"], test)
    return paths
