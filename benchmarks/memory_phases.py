"""Where a `train` run's host memory goes: resident memory at every phase change and the peak within each phase.

    python -m benchmarks.memory_phases TRAIN [--test TEST] [--sample-every 0.05]

Runs textclf's `train` (no flags: the settings a user gets) in this process, sampling this process's resident
memory (/proc/self/statm: the vectorizing workers are separate processes and not counted) on a thread, and
prints one row a phase: memory when it started, its peak, and the phase's seconds. Linux only.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import threading
import time
from pathlib import Path

PAGE = os.sysconf("SC_PAGE_SIZE")


def resident_bytes() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * PAGE


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("train")
    parser.add_argument("--test")
    parser.add_argument("--sample-every", type=float, default=0.05, help="seconds between memory samples")
    args = parser.parse_args()
    from textclf.runs.run import train

    phases: list[dict] = [{"name": "start", "at": time.perf_counter(), "start": resident_bytes(), "peak": 0}]
    done = threading.Event()

    def sample() -> None:
        while not done.wait(args.sample_every):
            phases[-1]["peak"] = max(phases[-1]["peak"], resident_bytes())

    def on_event(event) -> None:
        if event.kind == "phase":
            now = resident_bytes()
            phases[-1]["peak"] = max(phases[-1]["peak"], now)
            phases.append({"name": event.name, "at": time.perf_counter(), "start": now, "peak": now})

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    with tempfile.TemporaryDirectory() as home:
        result = train(args.train, test_path=args.test, db_path=Path(home) / "runs.db",
                       model_path=Path(home) / "model.npz", on_event=on_event)
    done.set()
    sampler.join()
    phases[-1]["peak"] = max(phases[-1]["peak"], resident_bytes())
    ends = [p["at"] for p in phases[1:]] + [time.perf_counter()]
    print(f"accuracy {result.eval_accuracy:.4f} ({result.eval_kind}), {result.n_train:,} training documents")
    print("| phase | s | resident at start MB | peak in phase MB |")
    print("|---|---:|---:|---:|")
    for phase, end in zip(phases, ends):
        print(f"| {phase['name']} | {end - phase['at']:.1f} | {phase['start'] / 2**20:,.0f} | {phase['peak'] / 2**20:,.0f} |")


if __name__ == "__main__":
    main()
