"""Timing helpers for device code.

`device_time(fn, args)` runs fn `reps` times inside one jitted lax.fori_loop (one dispatch, so Python and
launch overheads of the host do not count), chaining a negligible data dependence through the loop so XLA
cannot hoist the work out of it, and subtracts the cost of the same loop around an identity function.
Result: median over `trials` of seconds per call.
"""

from __future__ import annotations

import statistics
import time

import jax
import jax.numpy as jnp


def _first_scalar(tree):
    leaf = jax.tree.leaves(tree)[0]
    return leaf.reshape(-1)[0].astype(jnp.float32)


def _looped(fn, perturb: int, reps: int):
    """fn repeated `reps` times in one fori_loop. The whole output is the loop carry, so XLA must compute
    all of it every iteration (a result used only in part could be sliced away). The next iteration's
    argument `perturb` gets where(last output's first element == inf, 1, 0) added: always 0 for finite
    outputs, but not something XLA can fold away (it does fold `x * 0`, and then hoists the whole op out of
    the loop), so every iteration really runs fn."""

    def run(*args):
        def body(_, carry):
            dependence, _ = carry
            args_i = list(args)
            args_i[perturb] = args[perturb] + jnp.where(dependence == jnp.inf, 1, 0).astype(args[perturb].dtype)
            out = fn(*args_i)
            return _first_scalar(out), out

        shapes = jax.eval_shape(fn, *args)
        init = (jnp.float32(0), jax.tree.map(lambda s: jnp.zeros(s.shape, s.dtype), shapes))
        return jax.lax.fori_loop(0, reps, body, init)

    return jax.jit(run)


def device_time(fn, args, perturb: int, reps: int = 50, trials: int = 5) -> float:
    looped = _looped(fn, perturb, reps)
    empty = _looped(lambda *a: a[perturb], perturb, reps)
    samples = []
    for f in (looped, empty):
        jax.block_until_ready(f(*args))  # compile + warm up
        times = []
        for _ in range(trials):
            start = time.perf_counter()
            jax.block_until_ready(f(*args))
            times.append((time.perf_counter() - start) / reps)
        samples.append(statistics.median(times))
    return max(samples[0] - samples[1], 1e-9)


def wall_time(fn, trials: int = 5) -> float:
    """Median wall seconds of fn() (fn must block until its work is done)."""
    fn()
    times = []
    for _ in range(trials):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)
