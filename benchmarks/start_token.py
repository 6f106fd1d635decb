"""The start token (Settings.start_token) by cross-validation on a training file alone: one word network with and
without it, as the model search's rounds train it (textclf/training/search.py).

    python -m benchmarks.start_token TRAIN.jsonl [--stop-words english|none] [--ngrams 2] [--seeds 0,1]

For each fold seed: 3 stratified folds, the word variant given (the one the search chose for the corpus), the
8,192 columns most tied to the labels within each fold, NB weights, 3 learning rates x 15 epochs side by side;
the score is the best point of the folds' mean validation curve. Prints one markdown row: the scores without and
with the start token per seed, and the mean difference in points. Reads no test file.
pipelines.vectorize.START_TOKEN rests on it.
"""

from __future__ import annotations

import argparse

import numpy as np


def cross_validated(counts, terms, y, settings, seed: int, epochs: int) -> float:
    """The best (epoch, learning rate) of the mean validation curve over 3 folds drawn with `seed`."""
    from pipelines.vectorize import term_mask
    from textclf.training.candidates import batch_shape, cut_order, fit_candidates, round_data
    from textclf.training.search import LEARNING_RATES, ROUND_FEATURES, Variant, _fold_matrices, _folds

    variant = Variant(settings.stop_words, settings.ngram_max, settings.nb_weighting, True, settings.batch_size)
    mask = np.flatnonzero(term_mask(terms, settings.ngram_max, settings.stop_words))
    width = min(ROUND_FEATURES, 1 << int(np.ceil(np.log2(min(ROUND_FEATURES, len(mask))))))
    curves = []
    for fold, (train, val) in enumerate(_folds(y, 3, seed)):
        train_x, val_x = _fold_matrices(counts, y, mask, train, val, settings, ROUND_FEATURES, width, variant)
        cut, _ = cut_order(fold, len(train))
        data = round_data(train_x, y[train], val_x, y[val], settings.batch_size, fold,
                          batch_shape([train_x], settings.batch_size, [cut]), batch_shape([val_x], 1024), 1024)
        curves.append(fit_candidates(data, int(y.max()) + 1, list(LEARNING_RATES), [0.0] * len(LEARNING_RATES),
                                     epochs, settings.hidden, fold))
    return float(np.mean(curves, axis=0).max())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("train")
    parser.add_argument("--stop-words", default="none", choices=("english", "none"))
    parser.add_argument("--ngrams", type=int, default=2)
    parser.add_argument("--seeds", default="0,1")
    parser.add_argument("--epochs", type=int, default=15)
    args = parser.parse_args()
    from pipelines.corpus import read_corpus
    from pipelines.vectorize import count_terms, vectorize_pool
    from textclf.settings import Settings

    corpus = read_corpus(args.train)
    classes = sorted(set(corpus.labels))
    y = np.searchsorted(np.array(classes), np.array(corpus.labels)).astype(np.int32)
    seeds = [int(s) for s in args.seeds.split(",")]
    scores = {}
    for start_token in (False, True):
        settings = Settings(stop_words=None if args.stop_words == "none" else "english", ngram_max=args.ngrams,
                            start_token=start_token)
        with vectorize_pool(len(corpus.texts)) as pool:
            # The search's widest view: no stop words removed (the variant's are masked out of it).
            terms, counts = count_terms(corpus.texts, settings.ngram_max, None, settings.min_df, pool, start_token)
        scores[start_token] = [cross_validated(counts, terms, y, settings, seed, args.epochs) for seed in seeds]
    print("| training file | word variant | without (per seed) | with (per seed) | difference (points) |")
    print("|---|---|---:|---:|---:|")
    print(f"| {args.train} | stop words {args.stop_words}, n-grams 1-{args.ngrams} | "
          + " | ".join(" / ".join(f"{v:.4f}" for v in scores[on]) for on in (False, True))
          + f" | {100 * (np.mean(scores[True]) - np.mean(scores[False])):+.2f} |")


if __name__ == "__main__":
    main()
