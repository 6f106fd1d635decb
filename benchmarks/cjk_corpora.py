"""Three Chinese review corpora as train/test JSONL pairs, from a checkout of github.com/SophonPlus/ChineseNlpCorpus:

    python -m benchmarks.cjk_corpora CHECKOUT OUT [--gzip GZ_FOLDER]

- htl: ChnSentiCorp_htl_all.csv, hotel reviews, 2 classes (label 1 / 0);
- waimai: waimai_10k.csv, food delivery reviews, 2 classes;
- shop10: online_shopping_10_cats.zip's CSV, online shopping reviews, its 10 product categories as the labels.

Each: the rows with a non-empty review (a leading byte order mark removed), shuffled with random.Random(0), the
first 80% the training file and the rest the test file (OUT/NAME/train.jsonl, test.jsonl; {"text", "label"}).
--gzip also writes GZ_FOLDER/NAME-train.jsonl.gz and -test.jsonl.gz, what benchmarks/gpu/cjk.sh reads.
"""

from __future__ import annotations

import argparse
import csv
import gzip
import io
import json
import random
import zipfile
from pathlib import Path

TRAIN_FRACTION = 0.8


def _rows(checkout: Path, name: str) -> list[tuple[str, str]]:
    """-> (label, text) of each row with a review."""
    datasets = checkout / "datasets"
    if name == "shop10":
        with zipfile.ZipFile(datasets / "online_shopping_10_cats" / "online_shopping_10_cats.zip") as archive:
            text = archive.read("online_shopping_10_cats.csv").decode("utf-8")
        label_key = "cat"
    else:
        file = {"htl": "ChnSentiCorp_htl_all/ChnSentiCorp_htl_all.csv", "waimai": "waimai_10k/waimai_10k.csv"}[name]
        text = (datasets / file).read_text(encoding="utf-8")
        label_key = "label"
    return [(row[label_key], row["review"].lstrip("\ufeff")) for row in csv.DictReader(io.StringIO(text))
            if row["review"] and row["review"].strip()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("checkout", type=Path)
    parser.add_argument("out", type=Path)
    parser.add_argument("--gzip", type=Path, default=None)
    args = parser.parse_args()
    for name in ("htl", "waimai", "shop10"):
        rows = _rows(args.checkout, name)
        random.Random(0).shuffle(rows)
        cut = int(len(rows) * TRAIN_FRACTION)
        for split, part in (("train", rows[:cut]), ("test", rows[cut:])):
            lines = "".join(json.dumps({"text": text, "label": label}, ensure_ascii=False) + "\n"
                            for label, text in part)
            (args.out / name).mkdir(parents=True, exist_ok=True)
            (args.out / name / f"{split}.jsonl").write_text(lines, encoding="utf-8")
            if args.gzip:
                args.gzip.mkdir(parents=True, exist_ok=True)
                (args.gzip / f"{name}-{split}.jsonl.gz").write_bytes(gzip.compress(lines.encode("utf-8"), 9))
        print(f"{name}: {cut} training, {len(rows) - cut} test documents")


if __name__ == "__main__":
    main()
