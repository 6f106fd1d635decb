"""Cold `textclf train`, phase by phase: each run is a fresh process with a fresh data dir (no vector cache, no
compilation cache), then the same command again in that data dir (both caches warm). Several source trees can be
compared side by side in one call (e.g. the commit before a change, unpacked into build/old).

    python -m benchmarks.speed.cold_start TRAIN.jsonl --test TEST.jsonl [--variants new=.,old=build/old] [--repeat 2]

Prints a markdown table: wall seconds from process start to exit, the run's phases (textclf/runs/run.py), "other"
= wall - phases (interpreter start, imports, the database), and the test accuracy.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PHASES = ("read", "warmup", "search", "vectorize", "rates", "compile", "train", "evaluate", "save")


def run_once(source: Path, home: Path, train: str, test: str | None, extra: list[str]) -> dict:
    """One `python -m textclf train ... --json` from the source tree `source`; -> its JSON plus wall_s."""
    env = {
        **os.environ,
        "TEXTCLF_HOME": str(home),
        "PYTHONPATH": os.pathsep.join([str(source), os.environ.get("PYTHONPATH", "")]),
    }
    command = [sys.executable, "-m", "textclf", "train", str(Path(train).resolve()), "--json", *extra]
    if test:
        command += ["--test", str(Path(test).resolve())]
    start = time.perf_counter()
    done = subprocess.run(command, cwd=source, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - start
    if done.returncode:
        raise SystemExit(f"{source}: exit {done.returncode}\n{done.stderr[-2000:]}")
    return {**json.loads(done.stdout), "wall_s": wall}


def row(variant: str, repeat: int, caches: str, result: dict) -> str:
    phases = result["phases"]
    cells = [f"{phases[p]:.2f}" if p in phases else "" for p in PHASES]
    other = result["wall_s"] - sum(phases.values())
    return (
        f"| {variant} | {repeat} | {caches} | **{result['wall_s']:.2f}** | "
        + " | ".join(cells)
        + f" | {other:.2f} | {result['eval_accuracy']:.4f} |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("train")
    parser.add_argument("--test")
    parser.add_argument("--variants", default="new=.", help="name=source_tree,... (run in this order)")
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--extra", default="", help="more `textclf train` options, space-separated")
    args = parser.parse_args()
    variants = [(name, Path(path).resolve()) for name, path in (v.split("=", 1) for v in args.variants.split(","))]
    print(f"cold `textclf train {args.train}`, {os.cpu_count()} CPU cores\n")
    print("| variant | repeat | caches | wall s | " + " | ".join(PHASES) + " | other | accuracy |")
    print("|---|---:|---|---:|" + "---:|" * len(PHASES) + "---:|---:|")
    for repeat in range(1, args.repeat + 1):
        for name, source in variants:
            with tempfile.TemporaryDirectory() as home:
                for caches in ("cold", "warm"):
                    result = run_once(source, Path(home), args.train, args.test, args.extra.split())
                    print(row(name, repeat, caches, result), flush=True)


if __name__ == "__main__":
    main()
