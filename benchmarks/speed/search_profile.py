"""Where the model search's time goes: `python3 -m benchmarks.speed.search_profile CORPUS.jsonl [...] [--budget S]
[--repeat N]`.

Runs textclf.training.search.search_settings on each corpus (its training file only) as `textclf train` does, with
timers around its parts, and prints one row per corpus and setting: seconds in tokenising (count_terms), the
rounds' host matrices (in the search thread / in the prefetch thread), cutting and uploading batches, the
K-network epochs, the validation scoring (both waited for on the device), the whole trial of an ensemble and
a character network (whose parts are also in those columns), and the rest; --repeat times (the first run
compiles).
"""

from __future__ import annotations

import argparse
import json
import os
import threading
import time
from collections import defaultdict

from pipelines.workers import WorkerPool

SECONDS: dict[str, float] = defaultdict(float)


def _timed(module, name: str, label: str, wait: bool = False) -> None:
    original = getattr(module, name)

    def wrapper(*args, **kwargs):
        start = time.perf_counter()
        result = original(*args, **kwargs)
        if wait:
            import jax

            jax.block_until_ready(result)
        thread = "" if threading.current_thread() is threading.main_thread() else " (prefetch)"
        SECONDS[label + thread] += time.perf_counter() - start
        return result

    setattr(module, name, wrapper)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpora", nargs="+")
    parser.add_argument("--budget", type=float, default=0.0, help="search seconds (default 0: the device's default)")
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args()
    # The vectorizing workers are forked before JAX is imported, as `textclf train` does (pipelines/workers.py):
    # a pool made after it would start fresh interpreters, and their start would count as tokenising.
    with WorkerPool(os.cpu_count() or 1) as pool:
        _profile(args, pool)


def _profile(args, pool: WorkerPool) -> None:
    import jax

    from textclf.settings import Settings
    from textclf.training import candidates, search

    _timed(search, "count_terms", "tokenise")
    _timed(search, "term_masks", "masks")
    _timed(search, "_fold_matrices", "matrices")
    _timed(search, "init_stacked", "init", wait=True)
    _timed(candidates, "_device_batches", "batches")
    _timed(candidates, "_epoch", "epochs", wait=True)
    _timed(candidates, "_hits", "scoring", wait=True)
    _timed(search, "_choose_networks", "networks trial")
    platform = jax.default_backend()
    columns = ["tokenise", "masks", "matrices", "matrices (prefetch)", "init", "batches", "batches (prefetch)", "epochs",
               "scoring", "networks trial"]
    print(f"device: {jax.devices()[0].device_kind}, platform {platform}")
    print("| corpus | search s | rounds | " + " | ".join(f"{c} s" for c in columns) + " | other s | best val acc |")
    print("|---|---:|---:|" + "---:|" * len(columns) + "---:|---:|")
    for path in args.corpora:
        rows = [json.loads(line) for line in open(path, encoding="utf-8")]
        texts, labels = [r["text"] for r in rows], [str(r["label"]) for r in rows]
        for _ in range(args.repeat):
            SECONDS.clear()
            start = time.perf_counter()
            result = search.search_settings(texts, labels, Settings(search_budget=args.budget), pool, platform)
            total = time.perf_counter() - start
            # (the networks trial's own matrices, batches and epochs are in their columns too)
            main_thread = sum(v for k, v in SECONDS.items() if "prefetch" not in k and k != "networks trial")
            summary = result.summary
            print(f"| {path} | {total:.1f} | {summary.get('rounds')} | "
                  + " | ".join(f"{SECONDS.get(c, 0.0):.2f}" for c in columns)
                  + f" | {total - main_thread:.2f} | {summary.get('best_accuracy', 0):.4f} |", flush=True)


if __name__ == "__main__":
    main()
