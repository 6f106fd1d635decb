"""Two ensembles the model search does not build, judged on a training file alone (the test file is not read):

    python -m benchmarks.accuracy.ensembles TRAIN.jsonl --kind rates [--stop-words none] [--ngrams 2]
    python -m benchmarks.accuracy.ensembles TRAIN.jsonl --kind folds --lr 0.003 --weight-decay 0 --epochs 17 [--seeds
    0,1]

--kind rates: 3-fold cross-validation of a search round's 6 networks (3 learning rates x 2 weight decays, side by
side, 20 epochs); one network is the best (network, epoch) of the folds' mean curve, an ensemble of the top m sums
the log-probabilities of the m best networks, each at its own best epoch; "snapshots" sums the best network's
epochs around its best. Both sides are picked on the same folds, so both are as optimistic.
--kind folds: a stratified quarter set aside (per seed); on the rest, with the given settings, one network on all
of it, 5 such networks (different initialisations), and "bagging": one network on each of 3 folds' training rows
(two thirds of the rest each), their log-probabilities summed, and that with the one network added; scored on the
quarter set aside.

Prints each option's accuracy and its paired gain over one network with the standard error of that gain.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from benchmarks.accuracy.word_folds import add_setting_arguments, file_view, fold_matrices, round_of


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("train")
    parser.add_argument("--kind", required=True, choices=("rates", "folds"))
    add_setting_arguments(parser, epochs=20)
    args = parser.parse_args()
    from sklearn.model_selection import train_test_split

    from textclf.training.search.rounds import fit_candidates
    from textclf.training.search.folds import stratified_folds as _folds
    from textclf.training.search.rules import SearchRules

    LEARNING_RATES, WEIGHT_DECAYS = SearchRules().learning_rates, SearchRules().weight_decays

    start = time.perf_counter()
    view = file_view(args.train, args.stop_words, args.ngrams)
    y, classes, settings = view.y, view.classes, view.settings

    def scores(train_x, train_y, val_x, val_y, rates, decays, epochs, seed, scores_from):
        """(epochs scored, validation documents, networks, C) log-probabilities, and the (epochs, networks) curve."""
        data = round_of(train_x, train_y, val_x, val_y, settings.batch_size, seed)
        curve, fold_scores = fit_candidates(
            data, len(classes), rates, decays, epochs, settings.hidden, seed, scores_from=scores_from
        )
        return fold_scores, curve

    def row(name: str, right: np.ndarray, single: np.ndarray) -> str:
        gain = right.astype(np.float64) - single
        return f"{name} {right.mean():.4f} ({gain.mean():+.4f}, SE {gain.std() / np.sqrt(len(gain)):.4f})"

    if args.kind == "rates":
        rates = [r for r in LEARNING_RATES for _ in WEIGHT_DECAYS]
        decays = [d for _ in LEARNING_RATES for d in WEIGHT_DECAYS]
        folds = _folds(y, 3, settings.seed)
        runs = []
        for fold, (train, val) in enumerate(folds):
            train_x, val_x = fold_matrices(view, train, val)
            runs.append(scores(train_x, y[train], val_x, y[val], rates, decays, args.epochs, fold, 1))
        mean = np.mean([curve for _, curve in runs], axis=0)  # (epochs, networks)
        best_epoch, ranked = mean.argmax(axis=0), np.argsort(-mean.max(axis=0))

        def right(members, around: int = 0) -> np.ndarray:
            hits = []
            for (fold_scores, _), (_, val) in zip(runs, folds):
                summed = sum(
                    fold_scores[min(max(best_epoch[k] + d, 0), args.epochs - 1), :, k]
                    for k in members
                    for d in range(-around, around + 1)
                )
                hits.append(np.argmax(summed, axis=-1) == y[val])
            return np.concatenate(hits)

        single = right(ranked[:1])
        best = ranked[0]
        parts = [row(f"top {m}", right(ranked[:m]), single) for m in (2, 3, 4, 6)]
        parts += [row(f"snapshots +-{a}", right(ranked[:1], a), single) for a in (1, 2)]
        print(
            f"| {args.train} | lr {rates[best]:g}, wd {decays[best]:g}, {best_epoch[best] + 1} epochs: "
            f"{single.mean():.4f} | " + " | ".join(parts) + f" | {time.perf_counter() - start:.0f} s |"
        )
        return
    for seed in (int(s) for s in args.seeds.split(",")):
        rest, aside = train_test_split(np.arange(len(y)), test_size=0.25, random_state=seed, stratify=y)
        rest, aside = np.sort(rest), np.sort(aside)
        rest_x, aside_x = fold_matrices(view, rest, aside)
        truth = y[aside]

        def trained(rows: np.ndarray, networks: int, network_seed: int) -> np.ndarray:
            fold_scores, _ = scores(
                rest_x[rows],
                y[rest][rows],
                aside_x,
                truth,
                [args.lr] * networks,
                [args.weight_decay] * networks,
                args.epochs,
                network_seed,
                args.epochs,
            )
            return fold_scores[-1]  # (documents, networks, C)

        full = trained(np.arange(len(rest)), 5, 10 + seed)
        bags = sum(trained(train, 1, 20 + seed + f)[:, 0] for f, (train, _) in enumerate(_folds(y[rest], 3, seed)))
        single = np.argmax(full[:, 0], axis=-1) == truth
        parts = [
            row("5 networks", np.argmax(full.sum(axis=1), axis=-1) == truth, single),
            row("bagging 3", np.argmax(bags, axis=-1) == truth, single),
            row("one + bagging 3", np.argmax(full[:, 0] + bags, axis=-1) == truth, single),
        ]
        print(
            f"| {args.train} | {seed} | {single.mean():.4f} | "
            + " | ".join(parts)
            + f" | {time.perf_counter() - start:.0f} s |"
        )


if __name__ == "__main__":
    main()
