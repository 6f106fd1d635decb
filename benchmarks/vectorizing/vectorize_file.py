"""Vectorizing a large JSONL file alone, the path `textclf train` takes for it: the workers parse their byte shares
(labels and digests come back, the texts stay in the file), the vocabulary is fitted on a sample of at most
FIT_DOCUMENTS of the documents (which gives the sample's rows too), then every share's other documents are
transformed where it is parsed; the rows are consumed as they arrive (as the device upload does), not stacked.

    python -m benchmarks.vectorizing.vectorize_file TRAIN.jsonl [--ngrams 1] [--stop-words none] [--no-weights]
    [--workers N]
        [--repeat R] [--label NAME] [--profile]

Settings: Settings()'s word view with these n-grams and stop words (NB weights and sublinear tf on unless
--no-weights). Prints one markdown row a repeat: label, each stage's seconds (read, fit, transform), the total, the
file's MB/s over the total, and the nonzeros (the same nonzeros from two source trees say they counted alike).
scikit-learn's text module is imported before the clock starts, as `textclf train` imports it when it starts
(textclf/runs/run.py); its import time is printed on a line of its own. --profile: then where this process spent
the last repeat's fit (cProfile, the 25 largest; the workers' time shows as waiting).
"""

from __future__ import annotations

import argparse
import cProfile
import inspect
import pstats
import time
from pathlib import Path

import numpy as np

from pipelines import vectorize
from pipelines.corpus import read_corpus
from textclf.settings import Settings


def _skips_known_rows() -> bool:
    """Whether this tree's transform takes the fit sample's rows (`known`); a tree from before takes none, and its
    fit gives no rows (the benchmark runs each tree's own path: benchmarks/gpu/vectorize_file.sh)."""
    return "known" in inspect.signature(vectorize.Vectorizer.transform_file_parts).parameters


def fit(corpus, sample: np.ndarray, settings: Settings, pool) -> tuple[vectorize.Vectorizer, object]:
    """The vocabulary's fit as `textclf train` runs it on a file left in place -> (the vectorizer, what its
    transform takes as `known`: the sample's rows and their vectors, or None)."""
    labels = [corpus.labels[i] for i in sample]
    matrix = _skips_known_rows()
    vec, rows = vectorize.fit_vectorizer(corpus.texts.lines(sample), labels, settings, pool=pool, matrix=matrix)
    return vec, (sample, rows) if matrix else None


def one_pass(
    path: str, settings: Settings, workers: int | None, profile: cProfile.Profile | None = None
) -> dict[str, float]:
    size = Path(path).stat().st_size
    with vectorize.vectorize_pool(size // 100, workers) as pool:
        start = time.perf_counter()
        corpus = read_corpus(path, pool=pool, keep_texts=False)
        read = time.perf_counter()
        sample = vectorize.fit_rows(len(corpus.labels), settings)
        sample = np.arange(len(corpus.labels)) if sample is None else sample
        if profile is not None:
            profile.enable()
        vec, known = fit(corpus, sample, settings, pool)
        if profile is not None:
            profile.disable()
        fitted = time.perf_counter()
        parts = (
            vec.transform_file_parts(corpus.texts, pool, known=known)
            if known is not None
            else vec.transform_file_parts(corpus.texts, pool)
        )
        nonzeros = sum(part.nnz for part in parts)
        done = time.perf_counter()
    return {
        "read": read - start,
        "fit": fitted - read,
        "transform": done - fitted,
        "total": done - start,
        "mb_s": size / 1e6 / (done - start),
        "nonzeros": nonzeros,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("train")
    parser.add_argument("--ngrams", type=int, default=2)
    parser.add_argument("--stop-words", default="english", help="english or none")
    parser.add_argument("--no-weights", action="store_true", help="NB weights and sublinear tf off")
    parser.add_argument("--workers", type=int, default=None, help="worker processes (default: every core)")
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--label", default=".")
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args()
    start = time.perf_counter()
    import sklearn.feature_extraction.text  # noqa: F401  (textclf train's start: see the docstring)

    print(f"scikit-learn's text module imported in {time.perf_counter() - start:.2f} s, before the clock", flush=True)
    settings = Settings(ngram_max=args.ngrams, stop_words=None if args.stop_words == "none" else args.stop_words)
    if args.no_weights:
        settings = settings.replace(nb_weighting=False, sublinear_tf=False)
    profile = cProfile.Profile() if args.profile else None
    for _ in range(args.repeat):
        if profile is not None:
            profile = cProfile.Profile()  # the last repeat's only
        r = one_pass(args.train, settings, args.workers, profile)
        print(
            f"| {args.label} | {args.ngrams} | {args.stop_words} | {r['read']:.2f} | {r['fit']:.2f} | "
            f"{r['transform']:.2f} | **{r['total']:.2f}** | {r['mb_s']:.0f} | {r['nonzeros']} |",
            flush=True,
        )
    if profile is not None:
        pstats.Stats(profile).sort_stats("tottime").print_stats(25)


if __name__ == "__main__":
    main()
