"""The character view by cross-validation on a training file alone: one network on the words, one on character
2-5-grams, and the two averaged, as the model search's network trial builds them (textclf/training/search/halving.py).

    python -m benchmarks.accuracy.char_view TRAIN.jsonl [--stop-words english|none] [--ngrams 2] [--folds 3] [--epochs
    15]

The word variant is given (the one the search chose for the corpus); its learning rate (1e-3 / 3e-3 / 1e-2) and
epoch count are read off the folds' mean validation curve. Then, on every fold, a word network and a character
network train with that rate for that many epochs (the character network takes the words' settings, as the
product's does on a CPU; on a GPU the search reads the character network's own off its curves) and their validation
log-probabilities are summed. Prints one markdown row: mean validation
accuracy of the words, the characters, the pair, and the pair's paired gain over the words with its standard
error. Reads no test file. SearchRules.char_max_characters and Settings.char_ngrams rest on it.
"""

from __future__ import annotations

import argparse
import time

import numpy as np


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("train")
    parser.add_argument("--stop-words", default="none", choices=("english", "none"))
    parser.add_argument("--ngrams", type=int, default=2)
    parser.add_argument("--folds", type=int, default=3)
    parser.add_argument("--epochs", type=int, default=15)
    args = parser.parse_args()
    from benchmarks.accuracy.word_folds import fold_matrices, round_of, word_view
    from pipelines.corpus import read_corpus
    from pipelines.vectorize import count_chars, vectorize_pool
    from textclf.training.search.rounds import fit_candidates
    from textclf.training.search.folds import char_fold_matrices as _char_fold_matrices, stratified_folds as _folds
    from textclf.training.search.rules import SearchRules

    start = time.perf_counter()
    corpus = read_corpus(args.train)
    with vectorize_pool(len(corpus.texts)) as pool:
        view = word_view(corpus.texts, corpus.labels, args.stop_words, args.ngrams, pool)
        chars = count_chars(corpus.texts, view.settings.min_df, pool)
    y, classes, settings = view.y, view.classes, view.settings
    folds = _folds(y, args.folds, settings.seed)
    rates = list(SearchRules().learning_rates)

    def data(train_x, val_x, train, val, seed):
        return round_of(train_x, y[train], val_x, y[val], settings.batch_size, seed)

    words = [fold_matrices(view, train, val) for train, val in folds]
    curves = [
        fit_candidates(
            data(*matrices, train, val, fold),
            len(classes),
            rates,
            [0.0] * len(rates),
            args.epochs,
            settings.hidden,
            fold,
        )
        for fold, (matrices, (train, val)) in enumerate(zip(words, folds))
    ]
    mean = np.mean(curves, axis=0)  # (epochs, rates)
    epoch, best = np.unravel_index(np.argmax(mean), mean.shape)
    rate, epochs = rates[best], int(epoch) + 1
    accuracy = {"words": [], "characters": [], "pair": []}
    gains = []
    for fold, (matrices, (train, val)) in enumerate(zip(words, folds)):
        char_matrices = _char_fold_matrices(*chars, y, train, val, settings, SearchRules().round_features)
        _, word_scores = fit_candidates(
            data(*matrices, train, val, 100 + fold),
            len(classes),
            [rate],
            [0.0],
            epochs,
            settings.hidden,
            100 + fold,
            scores_from=epochs,
        )
        _, char_scores = fit_candidates(
            data(*char_matrices, train, val, 200 + fold),
            len(classes),
            [rate],
            [0.0],
            epochs,
            settings.hidden,
            200 + fold,
            scores_from=epochs,
        )
        right = {
            name: np.argmax(scores[:, 0], axis=-1) == y[val]
            for name, scores in (
                ("words", word_scores[-1]),
                ("characters", char_scores[-1]),
                ("pair", word_scores[-1] + char_scores[-1]),
            )
        }
        for name, hits in right.items():
            accuracy[name].append(hits.mean())
        gains.append(right["pair"].astype(np.float64) - right["words"])
    gain = np.concatenate(gains)
    print(
        "| training file | characters | word variant | lr, epochs | words | characters | pair | pair - words "
        "(standard error) | s |"
    )
    print("|---|---:|---|---|---:|---:|---:|---:|---:|")
    print(
        f"| {args.train} | {sum(map(len, corpus.texts)):,} | stop words {args.stop_words}, n-grams "
        f"1-{args.ngrams} | {rate:g}, {epochs} | "
        + " | ".join(f"{np.mean(v):.4f}" for v in accuracy.values())
        + f" | {gain.mean():+.4f} ({gain.std() / np.sqrt(len(gain)):.4f}) | {time.perf_counter() - start:.0f} |"
    )


if __name__ == "__main__":
    main()
