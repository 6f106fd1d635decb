"""What splitting Chinese and Japanese text into characters does to a plain bag of words, test files read:

    python -m benchmarks.cjk_tokens DATA [NAME ...]

For each task folder DATA/NAME (train.jsonl, test.jsonl; default: htl waimai shop10, benchmarks/cjk_corpora.py):
TF-IDF ((1, 2)-grams, sublinear tf) + LinearSVC, as `textclf bench`'s sklearn-svm, with scikit-learn's own token
pattern (runs of word characters kept whole) and with pipelines.word_counts.CJK_TOKEN_PATTERN (each such character
a word). Prints the vocabulary size and test accuracy of each. A peer's view of the tokens, not a choice of
textclf's settings: textclf's own measurement is `textclf train` with and without --no-cjk-characters.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from pipelines.corpus import read_corpus
from pipelines.word_counts import CJK_TOKEN_PATTERN, TOKEN_PATTERN


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("data", type=Path)
    parser.add_argument("names", nargs="*", default=["htl", "waimai", "shop10"])
    args = parser.parse_args()
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.svm import LinearSVC

    print("| task | tokens | terms | test accuracy | s |")
    print("|---|---|---:|---:|---:|")
    for name in args.names:
        train, test = read_corpus(args.data / name / "train.jsonl"), read_corpus(args.data / name / "test.jsonl")
        for label, pattern in (("runs whole (scikit-learn's)", TOKEN_PATTERN), ("characters", CJK_TOKEN_PATTERN)):
            start = time.perf_counter()
            vectorizer = TfidfVectorizer(ngram_range=(1, 2), sublinear_tf=True, token_pattern=pattern)
            x = vectorizer.fit_transform(train.texts)
            model = LinearSVC(random_state=0).fit(x, train.labels)
            accuracy = (model.predict(vectorizer.transform(test.texts)) == test.labels).mean()
            print(f"| {name} | {label} | {x.shape[1]:,} | {accuracy:.4f} | {time.perf_counter() - start:.1f} |",
                  flush=True)


if __name__ == "__main__":
    main()
