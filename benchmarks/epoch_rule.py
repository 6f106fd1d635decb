"""The model search's choice of learning rate, weight decay and epoch count, judged on its own fold curves:
`python3 -m benchmarks.epoch_rule TRAIN.jsonl [...] [--platform gpu] [--seed 0]`.

Runs textclf.training.search.search_settings on each training file with the platform's rules (a GPU's: 3 folds,
every round on every fold; runnable on a CPU, slowly) and a budget that lets every round finish, then, on the
winning vectorizer variant's per-fold validation curves (the test file is never read), chooses (rate, decay,
epochs) on two folds and scores that choice on the third, for each fold in turn, by three rules:
- argmax: the best mean accuracy (the search's rule: the first maximum, so the fewest epochs among ties);
- 1se_fewest_epochs: the fewest epochs of any (rate, decay) whose mean is within one binomial standard error of
  the best (Breiman's one-standard-error rule, the simplest model the noise cannot tell from the best);
- 1se_same_curve: the best (rate, decay), at its first epoch within one standard error of its best.
Prints a markdown row per (file, rule): the held-out fold accuracies and their mean, and the choices.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from textclf.training.search_folds import binomial_error as _binomial_error  # the search's own error (Laplace-smoothed binomial)

RULES = ("argmax", "1se_fewest_epochs", "1se_same_curve")


def fold_curves(trials: list[dict], variant: dict) -> tuple[dict[int, np.ndarray], list[tuple]]:
    """-> ({fold: (epochs, candidates) validation accuracies, NaN after a candidate stopped}, candidates)."""
    curves = {}
    for trial in trials:
        settings = trial["settings"]
        if all(settings.get(k) == v for k, v in variant.items()):
            curves[(trial["fold"], (settings["learning_rate"], settings["weight_decay"]))] = trial["epoch_accuracies"]
    candidates = sorted({c for _, c in curves})
    epochs = max(len(c) for c in curves.values())
    arrays = {}
    for fold in sorted({f for f, _ in curves}):
        array = np.full((epochs, len(candidates)), np.nan)
        for j, candidate in enumerate(candidates):
            curve = curves.get((fold, candidate), [])
            array[:len(curve), j] = curve
        array[array == 0] = np.nan  # a candidate stopped early records 0 for the epochs it did not train
        arrays[fold] = array
    return arrays, candidates


def choose(mean: np.ndarray, rule: str, validation_documents: int) -> tuple[int, int]:
    """(epoch index, candidate index) by `rule` on (epochs, candidates) mean accuracies (NaN: not trained)."""
    best = np.nanmax(mean)
    epoch, candidate = np.unravel_index(np.nanargmax(mean), mean.shape)  # epoch-major: the fewest epochs first
    if rule == "argmax":
        return int(epoch), int(candidate)
    floor = best - _binomial_error(best, validation_documents)
    if rule == "1se_fewest_epochs":
        near = np.argwhere(mean >= floor)
        e, k = min(near, key=lambda ek: (ek[0], -mean[ek[0], ek[1]]))
        return int(e), int(k)
    return int(min(e for e in range(mean.shape[0]) if mean[e, candidate] >= floor)), int(candidate)


def nested(arrays: dict[int, np.ndarray], n_documents: int) -> dict[str, list[tuple[float, int, int]]]:
    """{rule: [(held-out fold accuracy, epochs, candidate index) for each fold]}."""
    results = {rule: [] for rule in RULES}
    for fold, held_out in arrays.items():
        others = np.stack([a for f, a in arrays.items() if f != fold])
        mean = others.mean(axis=0)  # NaN wherever a fold had stopped: only epochs every fold trained
        validation = n_documents * len(others) // len(arrays)
        for rule in RULES:
            epoch, candidate = choose(mean, rule, validation)
            results[rule].append((float(held_out[epoch, candidate]), epoch + 1, candidate))
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpora", nargs="+")
    parser.add_argument("--platform", default="gpu", choices=("gpu", "cpu"))
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    from pipelines.corpus import read_corpus
    from pipelines.vectorize import vectorize_pool
    from textclf.settings import Settings
    from textclf.training.search import search_settings

    print("| training file | rule | held-out fold accuracies | mean | choices (epochs, rate, decay) |")
    print("|---|---|---|---:|---|")
    for path in args.corpora:
        corpus = read_corpus(path)
        start = time.perf_counter()
        with vectorize_pool(len(corpus.texts)) as pool:
            result = search_settings(corpus.texts, corpus.labels, Settings(seed=args.seed, search_budget=1e5), pool,
                                     args.platform)
        winner = result.leaderboard[0]["settings"]
        variant = {k: v for k, v in winner.items() if k not in ("learning_rate", "weight_decay", "epochs")}
        arrays, candidates = fold_curves(result.trials, variant)
        if len(arrays) < 2:
            print(f"| {path} | (one fold: nothing to hold out) | | | |")
            continue
        for rule, picks in nested(arrays, len(corpus.texts)).items():
            accuracies = ", ".join(f"{a:.4f}" for a, _, _ in picks)
            chosen = ", ".join(f"({e}, {candidates[k][0]:g}, {candidates[k][1]:g})" for _, e, k in picks)
            print(f"| {path} | {rule} | {accuracies} | {np.nanmean([a for a, _, _ in picks]):.4f} | {chosen} |",
                  flush=True)
        print(f"<!-- {path}: search {time.perf_counter() - start:.0f} s, variant {variant} -->", flush=True)


if __name__ == "__main__":
    main()
