"""What the model search chooses, and by how much, over several seeds: `python3 -m benchmarks.accuracy.search_choices
TRAIN.jsonl [...] [--seeds 0,1] [--budget S] [--race]`.

Runs textclf.training.search.search_settings on each training file (as `textclf train` does; the test file is not
read) once per seed (Settings.seed: the folds, the initialisations, the batches) and prints one markdown row per
(file, seed): the chosen settings, the best round's validation accuracy, and the networks trial (one network,
the ensemble and the character pair, with the standard errors of their paired gains), so that a rule of the
search can be judged by how often, and by how much, its choice turns on differences within the noise.
--race: then, per (file, seed), every vectorizer variant's best validation accuracy on fold 0 (the race) and its mean
over the folds it reached, best first: which variants ever lead, and by how much.
"""

from __future__ import annotations

import argparse
import os
import time

from pipelines.workers import WorkerPool


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpora", nargs="+")
    parser.add_argument("--seeds", default="0,1")
    parser.add_argument("--budget", type=float, default=0.0, help="search seconds (default 0: the device's default)")
    parser.add_argument("--race", action="store_true", help="also print each variant's fold-0 and mean accuracy")
    args = parser.parse_args()
    races = []
    # Workers forked before JAX is imported, as `textclf train` does (pipelines/workers.py).
    with WorkerPool(os.cpu_count() or 1) as pool:
        import jax

        from pipelines.corpus import read_corpus
        from textclf.settings import Settings
        from textclf.training.search import search_settings

        print(f"device: {jax.devices()[0].device_kind}")
        print(
            "| training file | seed | s | chose | best round | one network | ensemble (SE) | character pair (SE) | "
            "fold 0: winner / NB off / raw tf / batch 256 |"
        )
        print("|---|---:|---:|---|---:|---:|---:|---:|---|")
        for path in args.corpora:
            corpus = read_corpus(path)
            for seed in (int(s) for s in args.seeds.split(",")):
                start = time.perf_counter()
                result = search_settings(
                    list(corpus.texts),
                    list(corpus.labels),
                    Settings(seed=seed, search_budget=args.budget),
                    pool,
                    jax.default_backend(),
                )
                s, networks = result.settings, (result.summary.ensemble.to_record() if result.summary.ensemble else {})
                best = result.leaderboard[0]["accuracy"] if result.leaderboard else float("nan")

                def value(name: str, error: str) -> str:
                    if name not in networks:
                        return "-"
                    return (
                        f"{networks[name]:.4f} ({networks[error]:.4f})"
                        if error in networks
                        else f"{networks[name]:.4f}"
                    )

                chose = (
                    f"stop words {s.stop_words}, n-grams {s.ngram_max}, NB {s.nb_weighting}, sublinear tf "
                    f"{s.sublinear_tf}, batch {s.batch_size}, lr {s.learning_rate:g}, wd {s.weight_decay:g}, "
                    f"{s.epochs} epochs, {s.ensemble} network(s)" + (" + characters" if s.char_ngrams else "")
                )
                print(
                    f"| {path} | {seed} | {time.perf_counter() - start:.1f} | {chose} | {best:.4f} | "
                    f"{value('single_accuracy', '')} | {value('ensemble_accuracy', 'ensemble_standard_error')} | "
                    f"{value('char_pair_accuracy', 'char_pair_standard_error')} | {refinements(result)} |",
                    flush=True,
                )
                races.append((path, seed, result))
        if args.race:
            print(
                "\n| training file | seed | variant (stop words, n-grams, NB, sublinear tf, batch) | fold 0 | "
                "folds | mean over them |"
            )
            print("|---|---:|---|---:|---:|---:|")
            for path, seed, result in races:
                for variant, fold0, folds, mean in race(result):
                    print(f"| {path} | {seed} | {variant} | {fold0:.4f} | {folds} | {mean:.4f} |")


def race(result) -> list[tuple[str, float, int, float]]:
    """Each variant's (name, best validation accuracy on fold 0, folds reached, mean of its best candidate's
    curve over them at that candidate's best epoch), fold 0's best first."""
    import numpy as np

    fields = ("stop_words", "ngram_max", "nb_weighting", "sublinear_tf", "batch_size")
    curves: dict[tuple, dict[int, dict[tuple, list[float]]]] = {}  # variant -> fold -> (lr, wd) -> curve
    for t in result.trials:
        key = tuple(t["settings"][f] for f in fields)
        optimizer = (t["settings"]["learning_rate"], t["settings"]["weight_decay"])
        curves.setdefault(key, {}).setdefault(t["fold"], {})[optimizer] = t["epoch_accuracies"]
    rows = []
    for key, by_fold in curves.items():
        if 0 not in by_fold:
            continue
        fold0 = max(max(c) for c in by_fold[0].values())
        shared = [o for o in by_fold[0] if all(o in f for f in by_fold.values())]
        best = 0.0
        for optimizer in shared:  # the mean curve over the folds, cut to the shortest (early stopping)
            length = min(len(f[optimizer]) for f in by_fold.values())
            mean = np.mean([f[optimizer][:length] for f in by_fold.values()], axis=0)
            best = max(best, float(mean.max()))
        rows.append((", ".join(map(str, key)), fold0, len(by_fold), best))
    return sorted(rows, key=lambda r: -r[1])


def refinements(result) -> str:
    """Fold 0's best validation accuracy of the race's winner (the chosen stop words and n-grams with the default
    NB weights, sublinear tf and batch 64) and of its three refinements (NB weights off, raw tf, batch 256), "-"
    where one did not run."""
    if not result.leaderboard:
        return "-"
    chosen = result.leaderboard[0]["settings"]

    def best(nb: bool, sublinear: bool, batch: int) -> str:
        curves = [
            max(t["epoch_accuracies"])
            for t in result.trials
            if t["fold"] == 0
            and all(t["settings"][k] == chosen[k] for k in ("stop_words", "ngram_max"))
            and (t["settings"]["nb_weighting"], t["settings"]["sublinear_tf"], t["settings"]["batch_size"])
            == (nb, sublinear, batch)
        ]
        return f"{max(curves):.4f}" if curves else "-"

    return f"{best(True, True, 64)} / {best(False, True, 64)} / {best(True, False, 64)} / {best(True, True, 256)}"


if __name__ == "__main__":
    main()
