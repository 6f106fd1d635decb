"""Where a command's seconds go, start-up and exit included (`textclf train --profile`): the interpreter's start and
the imports before the command runs (from the process's start time, Linux /proc), each phase the run recorded, what
fell outside them, and the exit (its handlers and the flush of the output, timed by textclf.frontends.cli.main)."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path


def process_start() -> float | None:
    """This process's start as a Unix time (to the clock tick, 10 ms), from /proc; None where there is none."""
    try:
        ticks = int(Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()[19])  # field 22: start time
        boot = next(
            int(line.split()[1]) for line in Path("/proc/stat").read_text().splitlines() if line.startswith("btime ")
        )
        return boot + ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError, StopIteration):
        return None


class CommandProfile:
    """Made when the command starts; rows() once its run has finished. The exit, which comes after the command
    returns, is timed and printed by the CLI's main (exit_line)."""

    pending: CommandProfile | None = None  # the profile whose exit line main() prints

    def __init__(self):
        self.entered = time.time()
        self.started = process_start()
        CommandProfile.pending = self

    def rows(self, phases: dict[str, float]) -> list[tuple[str, float]]:
        """(what, seconds) from the process's start to now: start-up, the run's phases in order, the rest."""
        now = time.time()
        rows = [] if self.started is None else [("start-up (interpreter, imports)", self.entered - self.started)]
        rows += [(name, seconds) for name, seconds in phases.items()]
        rows.append(
            ("outside the phases (the run's imports, record, output)", now - self.entered - sum(phases.values()))
        )
        return rows

    def lines(self, phases: dict[str, float]) -> list[str]:
        rows = self.rows(phases)
        total = sum(seconds for _, seconds in rows)
        width = max(len(name) for name, _ in rows)
        return [f"{name:<{width}}  {seconds:7.2f} s  {seconds / total:4.0%}" for name, seconds in rows] + [
            f"{'so far (the exit follows)':<{width}}  {total:7.2f} s"
        ]

    def exit_line(self, exit_seconds: float) -> str:
        total = time.time() - (self.started or self.entered)
        return f"profile  exit (handlers, output) {exit_seconds:.2f} s; {total:.2f} s from the process's start"


def print_exit(exit_seconds: float) -> None:
    """The pending profile's exit line, on stderr (main() calls it after the exit handlers ran)."""
    if CommandProfile.pending is not None:
        print(CommandProfile.pending.exit_line(exit_seconds), file=sys.stderr, flush=True)
