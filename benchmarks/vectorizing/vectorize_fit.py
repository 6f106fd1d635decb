"""A word vectorizer's fit on a corpus, timed alone: `fit_vectorizer` on every CPU core as `textclf train` runs it
(a vocabulary fitted on at most FIT_DOCUMENTS of the documents, then all of them transformed), NB weights and
sublinear tf off, so that only counting, the vocabulary and the chi-squared selection count.

    python -m benchmarks.vectorizing.vectorize_fit TRAIN.jsonl --ngrams 2 --stop-words english --label NAME [--weights]
        [--profile]

--weights: NB weights and sublinear tf as Settings has them (on); --profile: then print where this process spent
its time (cProfile, the 25 largest; the workers' time shows as waiting).

Prints one markdown row: label, n-grams, stop words, seconds, nonzeros of the matrix (the same nonzeros from two
source trees say they counted alike).
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import time

from pipelines import vectorize
from pipelines.corpus import read_corpus
from textclf.settings import Settings


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("train")
    parser.add_argument("--ngrams", type=int, default=2)
    parser.add_argument("--stop-words", default="english", help="english or none")
    parser.add_argument("--label", default=".")
    parser.add_argument("--weights", action="store_true")
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args()
    train = read_corpus(args.train)
    settings = Settings(ngram_max=args.ngrams, stop_words=None if args.stop_words == "none" else args.stop_words)
    if not args.weights:
        settings = settings.replace(nb_weighting=False, sublinear_tf=False)
    profile = cProfile.Profile()
    with vectorize.vectorize_pool(len(train.texts), None) as pool:
        start = time.perf_counter()
        if args.profile:
            profile.enable()
        _, matrix = vectorize.fit_vectorizer(train.texts, train.labels, settings, pool=pool)
        profile.disable()
        seconds = time.perf_counter() - start
    print(f"| {args.label} | {args.ngrams} | {args.stop_words} | {seconds:.2f} | {matrix.nnz} |", flush=True)
    if args.profile:
        pstats.Stats(profile).sort_stats("tottime").print_stats(25)


if __name__ == "__main__":
    main()
