"""Corpora of scripts written without spaces between words, as train/test JSONL pairs ({"text", "label"}):

    python -m benchmarks.corpora.unspaced_corpora OUT [--chinese CHECKOUT] [--thai CHECKOUT] [--gzip GZ_FOLDER]

--chinese: a checkout of github.com/SophonPlus/ChineseNlpCorpus, three review corpora:
- htl: ChnSentiCorp_htl_all.csv, hotel reviews, 2 classes (label 1 / 0);
- waimai: waimai_10k.csv, food delivery reviews, 2 classes;
- shop10: online_shopping_10_cats.zip's CSV, online shopping reviews, its 10 product categories as the labels.
Each: the rows with a non-empty review (a leading byte order mark removed), shuffled with random.Random(0), the
first 80% the training file and the rest the test file.
--thai: a checkout of github.com/PyThaiNLP/wisesight-sentiment: wisesight, Thai social media posts, 4 classes (pos,
neu, neg, q), its Hugging Face split (huggingface/data.zip: train, valid, test) as it is, "texts" and "category"
renamed; valid.jsonl too, a split of the training data to choose by.
OUT/NAME/train.jsonl, test.jsonl; --gzip also writes GZ_FOLDER/NAME-train.jsonl.gz and -test.jsonl.gz, what
benchmarks/gpu/unspaced.sh reads.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import zipfile
from pathlib import Path

from benchmarks.corpora.corpus_pairs import shuffled_split, write_pairs


def _chinese_rows(checkout: Path, name: str) -> list[tuple[str, str]]:
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
    return [
        (row[label_key], row["review"].lstrip("\ufeff"))
        for row in csv.DictReader(io.StringIO(text))
        if row["review"] and row["review"].strip()
    ]


def _thai_splits(checkout: Path) -> dict[str, list[tuple[str, str]]]:
    """wisesight's Hugging Face splits -> {split: [(label, text)]}."""
    with zipfile.ZipFile(checkout / "huggingface" / "data.zip") as archive:
        return {
            split: [
                (record["category"], record["texts"])
                for record in map(json.loads, archive.read(f"data/{split}.jsonl").decode("utf-8").splitlines())
                if record["texts"].strip()
            ]
            for split in ("train", "valid", "test")
        }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out", type=Path)
    parser.add_argument("--chinese", type=Path, default=None)
    parser.add_argument("--thai", type=Path, default=None)
    parser.add_argument("--gzip", type=Path, default=None)
    args = parser.parse_args()
    if args.chinese:
        for name in ("htl", "waimai", "shop10"):
            write_pairs(args.out, args.gzip, name, shuffled_split(_chinese_rows(args.chinese, name)))
    if args.thai:
        write_pairs(args.out, args.gzip, "wisesight", _thai_splits(args.thai))


if __name__ == "__main__":
    main()
