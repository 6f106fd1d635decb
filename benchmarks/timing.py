"""Timing helpers for device code.

device_time(fn, args): seconds per call of jit(fn), from `reps` calls queued back to back and one wait at
the end (median of `trials`). The GPU runs them in order, so for anything longer than the host's dispatch
cost (a few microseconds per call) this is the device time; for ops shorter than that it is an upper bound.
Both sides of every comparison are timed the same way. (An earlier version looped inside one jitted
fori_loop; XLA folded the dependence trick and hoisted plain XLA ops out of the loop, so it was dropped.)

carried_time (benchmarks/kernels/mlp.py) times whole training steps inside one fori_loop whose carry is the
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


def gpu_kernel_events(trace_dir: str) -> list[tuple[str, float]]:
    """(kernel name, microseconds) of every GPU kernel in the JAX profiler trace written under trace_dir."""
    import glob
    import gzip
    import json

    files = glob.glob(f"{trace_dir}/**/*perfetto_trace.json.gz", recursive=True)
    if not files:
        return []
    with gzip.open(files[0]) as handle:
        events = json.load(handle)["traceEvents"]
    gpu_pids = {
        e["pid"]
        for e in events
        if e.get("ph") == "M" and e.get("name") == "process_name" and "GPU" in str(e.get("args", {}).get("name", ""))
    }
    stream_threads = {
        (e["pid"], e["tid"])
        for e in events
        if e.get("ph") == "M"
        and e.get("name") == "thread_name"
        and e["pid"] in gpu_pids
        and str(e.get("args", {}).get("name", "")).startswith("Stream")
    }
    return [
        (e.get("name", "?"), e.get("dur", 0))
        for e in events
        if e.get("ph") == "X" and (e.get("pid"), e.get("tid")) in stream_threads
    ]


def kernel_totals(events: list[tuple[str, float]], width: int = 70) -> tuple[dict, dict]:
    """gpu_kernel_events' (name, microseconds) -> (collections.Counter of microseconds, of calls) per kernel name
    cut to `width` characters."""
    import collections

    totals, calls = collections.Counter(), collections.Counter()
    for name, duration in events:
        totals[name[:width]] += duration
        calls[name[:width]] += 1
    return totals, calls


def kernel_time(fn, args, reps: int = 20) -> float | None:
    """Device seconds per call of jit(fn), summed over the GPU kernels it launches, read from a JAX profiler
    trace (CUPTI): unaffected by host dispatch cost, which dominates ops of a few microseconds. None when the
    trace holds no GPU kernel events (no GPU, or no CUPTI)."""
    import tempfile

    jitted = jax.jit(fn)
    jax.block_until_ready(jitted(*args))
    with tempfile.TemporaryDirectory() as trace_dir:
        with jax.profiler.trace(trace_dir, create_perfetto_trace=True):
            for _ in range(reps):
                out = jitted(*args)
            jax.block_until_ready(out)
        total_us = sum(duration for _, duration in gpu_kernel_events(trace_dir))
    return total_us * 1e-6 / reps if total_us else None
