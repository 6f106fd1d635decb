"""Timing helpers for device code.

device_time(fn, args): seconds per call of jit(fn), from `reps` calls queued back to back and one wait at
the end (median of `trials`). The GPU runs them in order, so for anything longer than the host's dispatch
cost (a few microseconds per call) this is the device time; for ops shorter than that it is an upper bound.
Both sides of every comparison are timed the same way. (An earlier version looped inside one jitted
fori_loop; XLA folded the dependence trick and hoisted plain XLA ops out of the loop, so it was dropped.)

carried_time (benchmarks/kernels.py) times whole training steps inside one fori_loop whose carry is the
parameters, which every step reads and rewrites in full, so nothing can be hoisted or sliced away.
"""

from __future__ import annotations

import statistics
import time

import jax


def device_time(fn, args, reps: int = 100, trials: int = 5) -> float:
    jitted = jax.jit(fn)
    jax.block_until_ready(jitted(*args))  # compile + warm up
    samples = []
    for _ in range(trials):
        start = time.perf_counter()
        for _ in range(reps):
            out = jitted(*args)
        jax.block_until_ready(out)
        samples.append((time.perf_counter() - start) / reps)
    return statistics.median(samples)
