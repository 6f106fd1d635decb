"""Writing a benchmark corpus as train/test JSONL pairs ({"text", "label"} a line), for the corpus builders
(benchmarks/corpora/unspaced_corpora.py, benchmarks/corpora/english_corpora.py)."""

from __future__ import annotations

import gzip
import json
import random
from pathlib import Path

TRAIN_FRACTION = 0.8

Rows = list[tuple[str, str]]  # (label, text)


def shuffled_split(rows: Rows) -> dict[str, Rows]:
    """A corpus without a test split: shuffled with random.Random(0), the first TRAIN_FRACTION the training file."""
    rows = list(rows)
    random.Random(0).shuffle(rows)
    cut = int(len(rows) * TRAIN_FRACTION)
    return {"train": rows[:cut], "test": rows[cut:]}


def write_pairs(out: Path, gz: Path | None, name: str, splits: dict[str, Rows]) -> None:
    """OUT/NAME/SPLIT.jsonl for each split; with gz also GZ/NAME-train.jsonl.gz and -test.jsonl.gz (what the GPU
    scripts carry). Prints how many documents each split holds."""
    for split, rows in splits.items():
        lines = "".join(json.dumps({"text": text, "label": label}, ensure_ascii=False) + "\n" for label, text in rows)
        (out / name).mkdir(parents=True, exist_ok=True)
        (out / name / f"{split}.jsonl").write_text(lines, encoding="utf-8")
        if gz and split in ("train", "test"):
            gz.mkdir(parents=True, exist_ok=True)
            (gz / f"{name}-{split}.jsonl.gz").write_bytes(gzip.compress(lines.encode("utf-8"), 9))
    print(name + ": " + ", ".join(f"{len(rows)} {split}" for split, rows in splits.items()))
