"""A fitted word vectorizer's raw-count transform, this project's (pipelines/word_counts.py) beside scikit-learn's
CountVectorizer with the same vocabulary, from one document (a prediction request) to a whole file:

    python -m benchmarks.vectorizing.transform_latency TRAIN.jsonl [--sizes 1,64,256,0]

Fits the default settings' vectorizer on TRAIN, then times both counters on its first N documents (0: all of them;
the mean of repeated calls, about 2,000 documents' worth). Prints a markdown table and whether the counts agree.
"""

from __future__ import annotations

import argparse
import time

from sklearn.feature_extraction.text import CountVectorizer

from pipelines import vectorize
from pipelines.corpus import read_corpus
from textclf.settings import Settings


def _seconds(transform, documents: list[str]) -> float:
    calls = max(1, 2000 // len(documents))
    transform(documents)  # first call: lazy set-up
    start = time.perf_counter()
    for _ in range(calls):
        transform(documents)
    return (time.perf_counter() - start) / calls


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("train")
    parser.add_argument("--sizes", default="1,64,256,0")
    args = parser.parse_args()
    corpus = read_corpus(args.train)
    vectorizer, _ = vectorize.fit_vectorizer(corpus.texts, corpus.labels, Settings(), workers=1)
    ours = vectorizer._counter()
    theirs = CountVectorizer(
        vocabulary=vectorizer.terms,
        **vectorize.word_counter_params(
            vectorizer.ngram_max, vectorizer.stop_words, vectorizer.start_token, vectorizer.unspaced_as_characters
        ),
    )
    print("| documents | word_counts us | CountVectorizer us | ratio | same counts |")
    print("|---:|---:|---:|---:|---|")
    for size in (int(s) for s in args.sizes.split(",")):
        documents = corpus.texts[:size] if size else corpus.texts
        a, b = _seconds(ours.transform, documents), _seconds(theirs.transform, documents)
        same = (ours.transform(documents) != theirs.transform(documents)).nnz == 0
        print(f"| {len(documents):,} | {a * 1e6:,.0f} | {b * 1e6:,.0f} | {a / b:.2f}x | {same} |", flush=True)


if __name__ == "__main__":
    main()
