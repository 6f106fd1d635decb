"""Where a large file's vocabulary fit spends its wall time: the fit `textclf train` runs on a large JSONL file's
sample (FIT_DOCUMENTS of its documents, read by the workers that count them; the sample's rows built too, which
the transform then skips), each step's wall seconds summed over its calls (a step called on several threads at
once sums their times, so it can exceed the fit's).

    python -m benchmarks.vectorizing.fit_steps TRAIN.jsonl [--repeat 2] [--workers N]

Prints one markdown row a fit: the settings of benchmarks.vectorizing.vectorize_file (unigrams, no stop words, no
weights:
what the search chooses for the synthetic corpus) `repeat` times, then the defaults (bigrams, English stop words, NB
weights, sublinear tf) once; the fit's seconds; the workers' counting (_map_chunks: the parent waits for it); the
terms' merge (merge_terms, of it the keys' ranking _ranks_of_runs); the rows' weighting and the selection
(_view_from_chunks, of it chi2_scores and nb_ratios); and the steps' sums on threads (_weight, move_columns).
"""

from __future__ import annotations

import argparse
import functools
import time
from pathlib import Path

import numpy as np

from pipelines import vectorize, word_counts
from pipelines.corpus import read_corpus
from textclf.settings import Settings

STEPS = (
    (vectorize, "_map_chunks"),
    (word_counts, "merge_terms"),
    (word_counts, "_ranks_of_runs"),
    (vectorize, "_view_from_chunks"),
    (vectorize, "chi2_scores"),
    (vectorize, "nb_ratios"),
    (vectorize, "_weight"),
    (word_counts, "move_columns"),
)


def _timed(wall: dict[str, float], module, name: str) -> None:
    """Replace module.name with a wrapper that adds each call's wall seconds to wall[name]."""
    step = getattr(module, name)

    @functools.wraps(step)
    def wrapper(*args, **kwargs):
        start = time.perf_counter()
        try:
            return step(*args, **kwargs)
        finally:
            wall[name] = wall.get(name, 0.0) + time.perf_counter() - start

    setattr(module, name, wrapper)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("train")
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--workers", type=int, default=None, help="worker processes (default: every core)")
    args = parser.parse_args()
    import sklearn.feature_extraction.text  # noqa: F401  (imported before the clock, as `textclf train` does)

    wall: dict[str, float] = {}
    for module, name in STEPS:
        _timed(wall, module, name)
    print("| settings | fit s | " + " | ".join(name for _, name in STEPS) + " |")
    print("|---|---:|" + "---:|" * len(STEPS))
    unigrams = Settings(ngram_max=1, stop_words=None).replace(nb_weighting=False, sublinear_tf=False)
    for label, settings in [("unigrams", unigrams)] * args.repeat + [("defaults", Settings())]:
        with vectorize.vectorize_pool(Path(args.train).stat().st_size // 100, args.workers) as pool:
            corpus = read_corpus(args.train, pool=pool, keep_texts=False)
            sample = vectorize.fit_rows(len(corpus.labels), settings)
            sample = np.arange(len(corpus.labels)) if sample is None else sample
            labels = [corpus.labels[i] for i in sample]
            wall.clear()
            start = time.perf_counter()
            vectorize.fit_vectorizer(corpus.texts.lines(sample), labels, settings, pool=pool)  # (and its rows)
            seconds = time.perf_counter() - start
        print(
            f"| {label} | {seconds:.2f} | " + " | ".join(f"{wall.get(name, 0.0):.2f}" for _, name in STEPS) + " |",
            flush=True,
        )


if __name__ == "__main__":
    main()
