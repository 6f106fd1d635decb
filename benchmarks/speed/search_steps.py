"""Where a search's rounds spend their time on the device: `python3 -m benchmarks.speed.search_steps CORPUS.jsonl [...]
[--repeat N]`.

Runs textclf.training.search.search_settings on each training file as `textclf train` does (no flags), --repeat
times in one process (the first compiles), with timers around the K-network epochs and the validation scoring
(each waited for on the device), the rounds' batch cutting and upload (in the search thread and in the prefetch
thread) and the rounds (CandidateRound.run) as a whole; prints the totals, the epoch calls and training steps,
the microseconds a step (epoch seconds over steps) and the chosen settings.
"""

from __future__ import annotations

import argparse
import json
import os
import threading
import time
from collections import defaultdict

from pipelines.workers import WorkerPool


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpora", nargs="+")
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args()
    # Workers forked before JAX is imported, as `textclf train` forks them (pipelines/workers.py).
    with WorkerPool(os.cpu_count() or 1) as pool:
        _measure(args, pool)


def _measure(args, pool: WorkerPool) -> None:
    import jax

    from textclf.settings import Settings
    from textclf.training.steps import stacked as stacked_step
    from textclf.training.search import halving as search

    seconds: dict[str, float] = defaultdict(float)
    counts: dict[str, int] = defaultdict(int)
    epoch, hits = stacked_step.stacked_epoch, stacked_step.stacked_hits
    fit, cut = search.CandidateRound.run, search.round_data

    def timed_epoch(*a, **k):
        start = time.perf_counter()
        result = jax.block_until_ready(epoch(*a, **k))
        seconds["epoch s"] += time.perf_counter() - start
        counts["epoch calls"] += 1
        steps = a[10] if len(a) > 10 else k.get("steps")  # the traced count of batches visited
        counts["steps"] += int(steps) if steps is not None else a[4].shape[0]
        return result

    def timed_hits(*a, **k):
        start = time.perf_counter()
        result = jax.block_until_ready(hits(*a, **k))
        seconds["hits s"] += time.perf_counter() - start
        return result

    def timed_fit(*a, **k):
        start = time.perf_counter()
        result = fit(*a, **k)
        seconds["rounds s"] += time.perf_counter() - start
        counts["rounds"] += 1
        return result

    def timed_cut(*a, **k):
        start = time.perf_counter()
        result = cut(*a, **k)
        where = "" if threading.current_thread() is threading.main_thread() else " (thread)"
        seconds["round_data s" + where] += time.perf_counter() - start
        return result

    stacked_step.stacked_epoch, stacked_step.stacked_hits, search.CandidateRound.run, search.round_data = (
        timed_epoch,
        timed_hits,
        timed_fit,
        timed_cut,
    )
    print("device", jax.devices()[0].device_kind)
    for path in args.corpora:
        rows = [json.loads(line) for line in open(path, encoding="utf-8")]
        texts, labels = [r["text"] for r in rows], [str(r["label"]) for r in rows]
        for _ in range(args.repeat):
            seconds.clear()
            counts.clear()
            start = time.perf_counter()
            result = search.search_settings(texts, labels, Settings(), pool, jax.default_backend())
            total = time.perf_counter() - start
            per_step = 1e6 * seconds["epoch s"] / max(1, counts["steps"])
            print(
                path,
                f"search {total:.2f}s",
                {k: round(v, 2) for k, v in seconds.items()},
                dict(counts),
                f"{per_step:.0f} us/step",
                "chosen",
                result.summary.chosen,
                flush=True,
            )


if __name__ == "__main__":
    main()
