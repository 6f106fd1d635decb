"""The start token (Settings.start_token) by cross-validation on a training file alone: one word network with and
without it, as the model search's rounds train it (textclf/training/search/halving.py).

    python -m benchmarks.accuracy.start_token TRAIN.jsonl [--stop-words english|none] [--ngrams 2] [--seeds 0,1]

For each fold seed: 3 stratified folds, the word variant given (the one the search chose for the corpus), the
8,192 columns most tied to the labels within each fold, NB weights, 3 learning rates x 15 epochs side by side;
the score is the best point of the folds' mean validation curve. Prints one markdown row: the scores without and
with the start token per seed, and the mean difference in points. Reads no test file.
pipelines.vectorize.START_TOKEN rests on it.
"""

from __future__ import annotations

import argparse

import numpy as np


def cross_validated(view, seed: int, epochs: int) -> float:
    """The best (epoch, learning rate) of the mean validation curve over 3 folds drawn with `seed`
    (view: benchmarks.accuracy.word_folds.WordView)."""
    from benchmarks.accuracy.word_folds import fold_matrices, round_of
    from textclf.training.search.rounds import fit_candidates
    from textclf.training.search.folds import stratified_folds as _folds
    from textclf.training.search.rules import SearchRules

    LEARNING_RATES = SearchRules().learning_rates

    y, curves = view.y, []
    for fold, (train, val) in enumerate(_folds(y, 3, seed)):
        train_x, val_x = fold_matrices(view, train, val)
        data = round_of(train_x, y[train], val_x, y[val], view.settings.batch_size, fold)
        curves.append(
            fit_candidates(
                data,
                int(y.max()) + 1,
                list(LEARNING_RATES),
                [0.0] * len(LEARNING_RATES),
                epochs,
                view.settings.hidden,
                fold,
            )
        )
    return float(np.mean(curves, axis=0).max())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("train")
    parser.add_argument("--stop-words", default="none", choices=("english", "none"))
    parser.add_argument("--ngrams", type=int, default=2)
    parser.add_argument("--seeds", default="0,1")
    parser.add_argument("--epochs", type=int, default=15)
    args = parser.parse_args()
    from benchmarks.accuracy.word_folds import word_view
    from pipelines.corpus import read_corpus
    from pipelines.vectorize import vectorize_pool

    corpus = read_corpus(args.train)
    seeds = [int(s) for s in args.seeds.split(",")]
    scores = {}
    for start_token in (False, True):
        with vectorize_pool(len(corpus.texts)) as pool:
            # The search's widest view: no stop words removed (the variant's are masked out of it).
            view = word_view(corpus.texts, corpus.labels, args.stop_words, args.ngrams, pool, start_token)
        scores[start_token] = [cross_validated(view, seed, args.epochs) for seed in seeds]
    print("| training file | word variant | without (per seed) | with (per seed) | difference (points) |")
    print("|---|---|---:|---:|---:|")
    print(
        f"| {args.train} | stop words {args.stop_words}, n-grams 1-{args.ngrams} | "
        + " | ".join(" / ".join(f"{v:.4f}" for v in scores[on]) for on in (False, True))
        + f" | {100 * (np.mean(scores[True]) - np.mean(scores[False])):+.2f} |"
    )


if __name__ == "__main__":
    main()
