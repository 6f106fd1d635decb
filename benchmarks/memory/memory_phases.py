"""Where a `train` run's host memory goes: resident memory at every phase change and the peak within each phase.

    python -m benchmarks.memory.memory_phases TRAIN [--test TEST] [--sample-every 0.05]

Runs textclf's `train` (no flags: the settings a user gets) in this process, sampling this process's resident
memory (/proc/self/statm: the vectorizing workers are separate processes and not counted) on a thread, and
prints one row a phase: memory when it started, its peak, and the phase's seconds; at the start and the peak, the
part that is anonymous memory (the process's own arrays and heaps; the rest is pages of mapped files: shared
libraries such as CUDA's, which count in the resident total as well). Linux only.
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


def anonymous_bytes() -> int:
    """RssAnon of /proc/self/status: resident memory that is no file's pages."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("RssAnon:"):
                return int(line.split()[1]) * 1024
    return 0


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("train")
    parser.add_argument("--test")
    parser.add_argument("--sample-every", type=float, default=0.05, help="seconds between memory samples")
    args = parser.parse_args()
    from textclf.runs.run import train

    def new_phase(name: str) -> dict:
        now, anonymous = resident_bytes(), anonymous_bytes()
        return {
            "name": name,
            "at": time.perf_counter(),
            "start": now,
            "start_anon": anonymous,
            "peak": now,
            "peak_anon": anonymous,
        }

    def note(phase: dict) -> None:
        now = resident_bytes()
        if now > phase["peak"]:
            phase["peak"], phase["peak_anon"] = now, anonymous_bytes()

    phases: list[dict] = [new_phase("start")]
    done = threading.Event()

    def sample() -> None:
        while not done.wait(args.sample_every):
            note(phases[-1])

    def on_event(event) -> None:
        if event.kind == "phase":
            note(phases[-1])
            phases.append(new_phase(event.name))

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    with tempfile.TemporaryDirectory() as home:
        result = train(
            args.train,
            test_path=args.test,
            db_path=Path(home) / "runs.db",
            model_path=Path(home) / "model.npz",
            on_event=on_event,
        )
    done.set()
    sampler.join()
    note(phases[-1])
    ends = [p["at"] for p in phases[1:]] + [time.perf_counter()]
    print(f"accuracy {result.eval_accuracy:.4f} ({result.eval_kind}), {result.n_train:,} training documents")
    print("| phase | s | resident at start MB (anonymous) | peak in phase MB (anonymous) |")
    print("|---|---:|---:|---:|")
    for phase, end in zip(phases, ends):
        print(
            f"| {phase['name']} | {end - phase['at']:.1f} | {phase['start'] / 2**20:,.0f} "
            f"({phase['start_anon'] / 2**20:,.0f}) | {phase['peak'] / 2**20:,.0f} ({phase['peak_anon'] / 2**20:,.0f}) |"
        )


if __name__ == "__main__":
    main()
