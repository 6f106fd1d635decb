"""Submit-to-model latency through a warm `textclf daemon`.

    python -m benchmarks.daemon_latency TRAIN [--test TEST] [--jobs 3]

Starts a daemon on a fresh data dir, waits until it polls, then submits the same corpus --jobs times, one after
another (seeds 0, 1, ...), timing each from submission until the job's model is published. The first job pays
for compilation and vectorization; later ones find the compiled epoch in the daemon's memory and the vectors in
the vector cache (pipelines/vector_cache.py), which is what a user re-training on a corpus sees.
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
    parser.add_argument("train")
    parser.add_argument("--test")
    parser.add_argument("--jobs", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as home:
        env = dict(os.environ, TEXTCLF_HOME=home)
        db_path = Path(home) / "runs.db"
        db = open_db(run_db_path(db_path))
        daemon = subprocess.Popen([sys.executable, "-m", "textclf", "daemon", "--db", str(db_path), "--poll", "0.01"],
                                  env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        time.sleep(8.0)  # imports and JAX start-up: not part of a warm daemon's latency
        print("| job | submit -> published s | phases (s) |")
        print("|---:|---:|---|")
        try:
            for seed in range(args.jobs):
                start = time.perf_counter()
                job_id = jobs.submit(db, str(Path(args.train).resolve()), Settings(seed=seed).to_dict(), "latency",
                                     str(Path(args.test).resolve()) if args.test else None)
                while jobs.get(db, job_id)["status"] not in ("succeeded", "failed"):
                    if daemon.poll() is not None:
                        raise SystemExit(f"daemon exited: {daemon.stderr.read()[-2000:]}")
                    time.sleep(0.005)
                wall = time.perf_counter() - start
                job = jobs.get(db, job_id)
                phases = run_queries.get_run(db, job["run_id"])["phases"] if job["run_id"] else {}
                shown = ", ".join(f"{k} {v:.2f}" for k, v in phases.items())
                print(f"| {job_id} | {wall:.2f} | {job['status']}: {shown} |", flush=True)
        finally:
            daemon.terminate()
            daemon.wait(timeout=60)


if __name__ == "__main__":
    main()
