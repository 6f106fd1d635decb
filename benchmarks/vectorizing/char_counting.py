"""The character view's counting, scikit-learn's analyzer against the compiled one, on the same workers:

    python -m benchmarks.vectorizing.char_counting TRAIN [TRAIN ...] [--repeat 2]

For each training file: `vectorize.count_chars` (char_wb 2-5-grams, min_df 2, pipelines/char_counts.py counting in
the workers and word_counts.merge merging) and the path it replaced, scikit-learn's analyzer with a Counter per
document in the workers and `_merge_counts` (still the path of word trigrams), alternating, on one pool of all
cores. Prints each one's seconds and whether the terms and counts are the same.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from pipelines import vectorize
from pipelines.corpus import read_corpus


def _scikit_learn(texts, pool):
    return vectorize.terms._counted(
        texts,
        2,
        pool,
        vectorize.terms._count_chunk,
        vectorize.terms._merge_counts,
        None,
        dict(analyzer=vectorize.CHAR_ANALYZER, ngram_range=vectorize.CHAR_NGRAM_RANGE, dtype=np.float32),
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("train", nargs="+")
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args()
    print("| file | documents | characters | scikit-learn's s | compiled s | terms | same |")
    print("|---|---:|---:|---|---|---:|---|")
    for path in args.train:
        texts = read_corpus(path).texts
        with vectorize.vectorize_pool(len(texts)) as pool:
            _scikit_learn(texts[:200], pool)  # the workers started
            theirs_s, ours_s = [], []
            for _ in range(args.repeat):
                start = time.perf_counter()
                theirs = _scikit_learn(texts, pool)
                theirs_s.append(time.perf_counter() - start)
                start = time.perf_counter()
                ours = vectorize.count_chars(texts, 2, pool)
                ours_s.append(time.perf_counter() - start)
        same = list(theirs[0]) == list(ours[0]) and (theirs[1] != ours[1]).nnz == 0
        print(
            f"| {path} | {len(texts):,} | {sum(map(len, texts)):,} | {' / '.join(f'{s:.2f}' for s in theirs_s)} | "
            f"{' / '.join(f'{s:.2f}' for s in ours_s)} | {len(ours[0]):,} | {same} |",
            flush=True,
        )


if __name__ == "__main__":
    main()
