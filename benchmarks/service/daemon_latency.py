"""Submit-to-model latency through a warm `textclf daemon`.

    python -m benchmarks.service.daemon_latency TRAIN [TRAIN ...] [--test TEST] [--seeds 0,0,1] [--search auto|off]

Starts a daemon on a fresh data dir (and a fresh compilation cache), waits until it polls, then submits each corpus
once per seed, one after another, timing each from submission until the job's model is published. Several
corpora: each a corpus the daemon has not seen (its test file the test.jsonl beside it, if any). The first job pays for
compilation,
vectorization and the model search; a later job with the same seed (the same settings) finds the compiled
programs in the daemon's memory, the search's choice recorded (textclf/runs/search.py) and the vectors in
the vector cache (pipelines/vector_cache.py), which is what a user re-training on a corpus sees; one with another
seed searches again (the seed decides the search's folds) in a warm process.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from db import jobs, open_db
from textclf.paths import run_db_path
from db import runs as run_queries
from textclf.settings import Settings


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("train", nargs="+")
    parser.add_argument("--test")
    parser.add_argument("--seeds", default="0,0,1", help="one job per seed, in this order")
    parser.add_argument("--search", default="auto", choices=("auto", "off"))
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as home:
        env = dict(
            os.environ, TEXTCLF_HOME=home, XDG_CACHE_HOME=str(Path(home) / "cache")
        )  # a cold compilation cache too
        db_path = Path(home) / "runs.db"
        db = open_db(run_db_path(db_path))
        daemon = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "textclf",
                "daemon",
                "--db",
                str(db_path),
                "--poll",
                "0.01",
                "--publish",
                "always",
            ],  # every job's model published, better or not
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        time.sleep(8.0)  # imports and JAX start-up: not part of a warm daemon's latency
        print("| job | corpus | seed | submit -> published s | search | phases (s) |")
        print("|---:|---|---:|---:|---|---|")
        try:
            for train, seed in ((t, int(s)) for t in args.train for s in args.seeds.split(",")):
                start = time.perf_counter()
                settings = Settings(seed=seed, search=args.search)
                test = Path(args.test) if args.test else Path(train).with_name("test.jsonl")
                job_id = jobs.submit(
                    db,
                    str(Path(train).resolve()),
                    settings.to_dict(),
                    "latency",
                    str(test.resolve()) if test.exists() else None,
                )
                while jobs.get(db, job_id)["status"] in ("queued", "running"):
                    if daemon.poll() is not None:
                        raise SystemExit(f"daemon exited: {daemon.stderr.read()[-2000:]}")
                    time.sleep(0.005)
                wall = time.perf_counter() - start
                job = jobs.get(db, job_id)
                run = run_queries.get_run(db, job["run_id"]) if job["run_id"] else {}
                shown = ", ".join(f"{k} {v:.2f}" for k, v in run.get("phases", {}).items())
                search = run.get("search") or {}
                how = (
                    f"reused run {search['reused_from']}'s"
                    if search.get("reused_from")
                    else search.get("skipped") or f"{search.get('rounds')} rounds"
                )
                print(
                    f"| {job_id} | {Path(train).parent.name} | {seed} | {wall:.2f} | {how} | {job['status']}: "
                    f"{shown} |",
                    flush=True,
                )
        finally:
            daemon.terminate()
            daemon.wait(timeout=60)


if __name__ == "__main__":
    main()
