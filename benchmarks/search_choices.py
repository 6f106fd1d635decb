"""What the model search chooses, and by how much, over several seeds: `python3 -m benchmarks.search_choices
TRAIN.jsonl [...] [--seeds 0,1] [--budget S]`.

Runs textclf.training.search.search_settings on each training file (as `textclf train` does; the test file is not
read) once per seed (Settings.seed: the folds, the initialisations, the batches) and prints one markdown row per
(file, seed): the chosen settings, the best round's validation accuracy, and the networks trial (one network,
the ensemble and the character pair, with the standard errors of their paired gains), so that a rule of the
search can be judged by how often, and by how much, its choice turns on differences within the noise.
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
    args = parser.parse_args()
    # Workers forked before JAX is imported, as `textclf train` does (pipelines/workers.py).
    with WorkerPool(os.cpu_count() or 1) as pool:
        import jax

        from pipelines.corpus import read_corpus
        from textclf.settings import Settings
        from textclf.training.search import search_settings

        print(f"device: {jax.devices()[0].device_kind}")
        print("| training file | seed | s | chose | best round | one network | ensemble (SE) | character pair (SE) | "
              "fold 0: winner / raw tf / batch 256 |")
        print("|---|---:|---:|---|---:|---:|---:|---:|---|")
        for path in args.corpora:
            corpus = read_corpus(path)
            for seed in (int(s) for s in args.seeds.split(",")):
                start = time.perf_counter()
                result = search_settings(list(corpus.texts), list(corpus.labels),
                                         Settings(seed=seed, search_budget=args.budget), pool, jax.default_backend())
                s, networks = result.settings, result.summary.get("ensemble", {})
                best = result.leaderboard[0]["accuracy"] if result.leaderboard else float("nan")

                def value(name: str, error: str) -> str:
                    if name not in networks:
                        return "-"
                    return f"{networks[name]:.4f} ({networks[error]:.4f})" if error in networks else \
                        f"{networks[name]:.4f}"

                chose = (f"stop words {s.stop_words}, n-grams {s.ngram_max}, NB {s.nb_weighting}, sublinear tf "
                         f"{s.sublinear_tf}, batch {s.batch_size}, lr {s.learning_rate:g}, wd {s.weight_decay:g}, "
                         f"{s.epochs} epochs, {s.ensemble} network(s)" + (" + characters" if s.char_ngrams else ""))
                print(f"| {path} | {seed} | {time.perf_counter() - start:.1f} | {chose} | {best:.4f} | "
                      f"{value('single_accuracy', '')} | {value('ensemble_accuracy', 'ensemble_standard_error')} | "
                      f"{value('char_pair_accuracy', 'char_pair_standard_error')} | {refinements(result)} |",
                      flush=True)


def refinements(result) -> str:
    """Fold 0's best validation accuracy of the race's winner (its sublinear tf and batch 64) and of its two
    refinements (raw tf, batch 256), "-" where one did not run."""
    if not result.leaderboard:
        return "-"
    chosen = result.leaderboard[0]["settings"]
    same = ("stop_words", "ngram_max", "nb_weighting")

    def best(sublinear: bool, batch: int) -> str:
        curves = [max(t["epoch_accuracies"]) for t in result.trials if t["fold"] == 0
                  and all(t["settings"][k] == chosen[k] for k in same)
                  and t["settings"]["sublinear_tf"] == sublinear and t["settings"]["batch_size"] == batch]
        return f"{max(curves):.4f}" if curves else "-"

    return f"{best(True, 64)} / {best(False, 64)} / {best(True, 256)}"


if __name__ == "__main__":
    main()
