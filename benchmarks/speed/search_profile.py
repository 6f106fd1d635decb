"""Where the model search's time goes: `python3 -m benchmarks.speed.search_profile CORPUS.jsonl [...] [--budget S]
[--repeat N] [--compiles]`.

Runs textclf.training.search.search_settings on each corpus (its training file only) as `textclf train` does, with
timers around its parts, and prints one row per corpus and run: seconds in tokenising (count_terms), the rounds'
host matrices and their cut and uploaded batches (in the search thread / in the prefetch thread; a trial's own are
in the trial), the rounds' training and scoring (waited for on the device), the networks trial (ensemble,
character view) and the family trial, XLA's compilation (in any thread: the rounds' or the one compiling ahead),
and the search thread's rest. --repeat: that many runs in one process (the first compiles, into a fresh persistent
cache); --compiles: each compilation of 0.05 s or more listed after its row (program, thread, when).
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import threading
import time
from collections import defaultdict
from pathlib import Path

from pipelines.workers import WorkerPool

SECONDS: dict[str, float] = defaultdict(float)
TRIAL = False  # inside a trial: its matrices and batches are counted apart, as part of the trial


def _timed(module, name: str, label: str, wait: bool = False) -> None:
    original = getattr(module, name)

    def wrapper(*args, **kwargs):
        global TRIAL
        start = time.perf_counter()
        if label.endswith("trial"):
            TRIAL = True
        try:
            result = original(*args, **kwargs)
        finally:
            if label.endswith("trial"):
                TRIAL = False
        if wait:
            import jax

            jax.block_until_ready(result)
        thread = "" if threading.current_thread() is threading.main_thread() else " (prefetch)"
        within = " (trial)" if TRIAL and label not in ("networks trial", "family trial") else ""
        SECONDS[label + thread + within] += time.perf_counter() - start
        return result

    setattr(module, name, wrapper)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpora", nargs="+")
    parser.add_argument("--budget", type=float, default=0.0, help="search seconds (default 0: the device's default)")
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--compiles", action="store_true", help="also list each compilation: program, thread, when")
    args = parser.parse_args()
    # The vectorizing workers are forked as `textclf train` forks them (pipelines/workers.py): after the run's
    # imports (scikit-learn, pandas, pyarrow: a worker forked before them imports them on its first chunk, ~1.3 s
    # of a cold search's tokenising on an H200) and before JAX's.
    import textclf.runs.run  # noqa: F401

    with WorkerPool(os.cpu_count() or 1) as pool:
        _profile(args, pool)


def _profile(args, pool: WorkerPool) -> None:
    import jax

    from textclf.settings import Settings
    from textclf.training.search import family as search_family, halving as search, networks as search_networks
    from textclf.training.backends import configure_compilation

    configure_compilation(Path(tempfile.mkdtemp()))  # as `textclf train` compiles, into a fresh (cold) cache

    _timed(search, "count_terms", "tokenise")
    _timed(search, "term_masks", "masks")
    for module in (search, search_networks, search_family):
        _timed(module, "fold_matrices", "matrices")
        _timed(module, "round_data", "batches", wait=True)
    _timed(search.CandidateRound, "run", "rounds", wait=True)  # (a trial's own rounds: "rounds (trial)")
    _timed(search.NetworksTrial, "choose", "networks trial")
    _timed(search.FamilyTrial, "choose", "family trial")
    compiles: list[tuple[float, float, str, str]] = []  # (end, seconds, thread, program) of each compilation

    def compiled(event: str, seconds: float, fun_name: str = "?", **_) -> None:
        # XLA's compilation, in whichever thread (the rounds' thread or the one compiling ahead)
        if event == "/jax/core/compile/backend_compile_duration":
            SECONDS["compile"] += seconds
            compiles.append((time.perf_counter(), seconds, threading.current_thread().name, fun_name))

    jax.monitoring.register_event_duration_secs_listener(compiled)
    platform = jax.default_backend()
    columns = [
        "tokenise",
        "masks",
        "matrices",
        "matrices (prefetch)",
        "batches",
        "batches (prefetch)",
        "rounds",
        "networks trial",
        "family trial",
        "compile",
    ]
    print(f"device: {jax.devices()[0].device_kind}, platform {platform}")
    print(
        "| corpus | search s | rounds | network-steps | "
        + " | ".join(f"{c} s" for c in columns)
        + " | other s | best val acc |"
    )
    print("|---|---:|---:|---:|" + "---:|" * len(columns) + "---:|---:|")
    for path in args.corpora:
        rows = [json.loads(line) for line in open(path, encoding="utf-8")]
        texts, labels = [r["text"] for r in rows], [str(r["label"]) for r in rows]
        for _ in range(args.repeat):
            SECONDS.clear()
            compiles.clear()
            start = time.perf_counter()
            result = search.search_settings(texts, labels, Settings(search_budget=args.budget), pool, platform)
            total = time.perf_counter() - start
            # other: the search thread's time in none of the timed parts (the matrices and batches in the
            # trials are in their own "(trial)" keys, counted within the trials' columns)
            main_thread = sum(
                SECONDS[c]
                for c in ("tokenise", "masks", "matrices", "batches", "rounds", "networks trial", "family trial")
            )
            summary = result.summary.to_record()
            print(
                f"| {path} | {total:.1f} | {summary.get('rounds')} | {summary.get('steps')} | "
                + " | ".join(f"{SECONDS.get(c, 0.0):.2f}" for c in columns)
                + f" | {total - main_thread:.2f} | {summary.get('best_accuracy', 0):.4f} |",
                flush=True,
            )
            if args.compiles:
                small = [seconds for _, seconds, _, _ in compiles if seconds < 0.05]
                for end, seconds, thread, name in compiles:
                    if seconds >= 0.05:
                        print(f"  compiled {name} in {thread}: {end - seconds - start:.2f} -> {end - start:.2f} s")
                print(f"  and {len(small)} programs of under 0.05 s each: {sum(small):.2f} s")


if __name__ == "__main__":
    main()
