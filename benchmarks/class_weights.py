"""Class weights for an imbalanced corpus, judged on a training file alone (the test file is not read):

    python -m benchmarks.class_weights TRAIN.jsonl --lr 0.003 --weight-decay 0 --epochs 10 [--stop-words english]
        [--ngrams 2] [--seeds 0,1]

A stratified quarter set aside (per seed); on the rest, with the given settings (the search's choice for the
corpus), one network trained three ways, scored on the quarter set aside:
- "none": every document weighs the same (textclf's training);
- "balanced": each class weighs as much as every other ("balanced" class weights, n / (C n_c) a document), drawn as
  a sample of the rest's size with each document's chance proportional to its weight, so that an epoch has the
  same steps and its expected gradient is the class-weighted one;
- "prior-corrected": the "none" network with each class's log prior subtracted from its log-probabilities at
  prediction (logit adjustment: the decision rule class weights aim at, without retraining).

Prints accuracy and macro-averaged F1 of each, and each one's paired accuracy gain over "none" with its standard
error.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from benchmarks.word_folds import add_setting_arguments, file_view, fold_matrices, round_of


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("train")
    add_setting_arguments(parser, epochs=10)
    args = parser.parse_args()
    from sklearn.metrics import f1_score
    from sklearn.model_selection import train_test_split

    from textclf.training.candidates import fit_candidates

    start = time.perf_counter()
    view = file_view(args.train, args.stop_words, args.ngrams)
    y, classes, settings = view.y, view.classes, view.settings
    for seed in (int(s) for s in args.seeds.split(",")):
        rest, aside = train_test_split(np.arange(len(y)), test_size=0.25, random_state=seed, stratify=y)
        rest, aside = np.sort(rest), np.sort(aside)
        rest_x, aside_x = fold_matrices(view, rest, aside)
        rest_y, truth = y[rest], y[aside]
        counts = np.bincount(rest_y, minlength=len(classes))

        def trained(rows: np.ndarray) -> np.ndarray:
            """(validation documents, C) log-probabilities of one network trained on these rows of the rest."""
            data = round_of(rest_x[rows], rest_y[rows], aside_x, truth, settings.batch_size, seed)
            _, fold_scores = fit_candidates(data, len(classes), [args.lr], [args.weight_decay], args.epochs,
                                            settings.hidden, 10 + seed, scores_from=args.epochs)
            return fold_scores[-1][:, 0]

        plain = trained(np.arange(len(rest)))
        weights = (len(rest_y) / (len(classes) * counts))[rest_y]
        drawn = np.sort(np.random.default_rng(seed).choice(len(rest), len(rest), p=weights / weights.sum()))
        balanced = trained(drawn)
        corrected = plain - np.log(counts / counts.sum())
        single = plain.argmax(axis=-1) == truth
        parts = []
        for name, scores in (("none", plain), ("balanced", balanced), ("prior-corrected", corrected)):
            predicted = scores.argmax(axis=-1)
            gain = (predicted == truth).astype(np.float64) - single
            f1 = f1_score(truth, predicted, average="macro")
            error = gain.std() / np.sqrt(len(gain))
            parts.append(f"{name} {np.mean(predicted == truth):.4f} / F1 {f1:.4f}"
                         + ("" if name == "none" else f" ({gain.mean():+.4f}, SE {error:.4f})"))
        share = counts.max() / counts.sum()
        print(f"| {args.train} | {seed} | {share:.2f} | " + " | ".join(parts)
              + f" | {time.perf_counter() - start:.0f} s |", flush=True)


if __name__ == "__main__":
    main()
