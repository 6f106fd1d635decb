"""What splitting text of scripts written without spaces into characters does to a plain bag of words:

    python -m benchmarks.accuracy.unspaced_tokens DATA [NAME ...] [--split test|valid]

For each task folder DATA/NAME (train.jsonl and the --split file, default test.jsonl; default names: htl waimai
shop10 wisesight, benchmarks/corpora/unspaced_corpora.py):
TF-IDF ((1, 2)-grams, sublinear tf) + LinearSVC, as `textclf bench`'s sklearn-svm, with scikit-learn's own token
pattern (runs of word characters kept whole), with pipelines.word_counts.UNSPACED_TOKEN_PATTERN (each such character a
word), and with that pattern less the characters that are not word characters (Thai's vowel and tone marks). Prints
the vocabulary size and accuracy of each on the --split file (valid.jsonl, a split of the training data, is what chose
to keep the marks). textclf's own measurement is `textclf train` with and without --no-unspaced-as-characters.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from pipelines.corpus import read_corpus
from pipelines.word_counts import TOKEN_PATTERN, UNSPACED_CLASS, UNSPACED_TOKEN_PATTERN

# Each character of the ranges a word only where it is a word character: what the rule would be without the marks.
LETTERS_ONLY_PATTERN = f"(?u)[^\\W{UNSPACED_CLASS}]{{2,}}|(?=\\w)[{UNSPACED_CLASS}]"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("data", type=Path)
    parser.add_argument("names", nargs="*", default=["htl", "waimai", "shop10", "wisesight"])
    parser.add_argument("--split", default="test", choices=("test", "valid"))
    args = parser.parse_args()
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.svm import LinearSVC

    print(f"| task | tokens | terms | {args.split} accuracy | s |")
    print("|---|---|---:|---:|---:|")
    for name in args.names:
        train = read_corpus(args.data / name / "train.jsonl")
        test = read_corpus(args.data / name / f"{args.split}.jsonl")
        for label, pattern in (
            ("runs whole (scikit-learn's)", TOKEN_PATTERN),
            ("characters", UNSPACED_TOKEN_PATTERN),
            ("word characters only", LETTERS_ONLY_PATTERN),
        ):
            start = time.perf_counter()
            vectorizer = TfidfVectorizer(ngram_range=(1, 2), sublinear_tf=True, token_pattern=pattern)
            x = vectorizer.fit_transform(train.texts)
            model = LinearSVC(random_state=0).fit(x, train.labels)
            accuracy = (model.predict(vectorizer.transform(test.texts)) == test.labels).mean()
            print(
                f"| {name} | {label} | {x.shape[1]:,} | {accuracy:.4f} | {time.perf_counter() - start:.1f} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
