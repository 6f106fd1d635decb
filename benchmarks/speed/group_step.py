"""The search's K-network epoch alone and vmapped over G rounds at once: `python3 -m benchmarks.speed.group_step [F]
[--groups 2,4,8]` (`--groups ""`: the epoch alone).

Random batches of news4's shape (B = 64, 70 nonzeros a document in batches 8,192 slots wide, 101 of 128 steps
visited, K = 6 networks of 128 hidden units over F columns, default 8,192), the epoch program as the search runs it
(dense on a GPU, and with the fused Pallas W1 update), then G = 2, 4, 8 copies vmapped into one program (as G rounds
of other variants or folds would train side by side), and K = 48 networks in one round for reference. Prints
microseconds a step (median of 5 epochs after a first, compiling one).
"""

from __future__ import annotations

import argparse
import time

import jax
import jax.numpy as jnp
import numpy as np

from textclf.training.steps import stacked as stacked_step
from textclf.training.steps.optimizers import adam

K, HIDDEN, CLASSES, BATCH = 6, 128, 4, 64
STEPS, CAP, VISITED, NONZEROS = 128, 8192, 101, 70
RATES = jnp.asarray([1e-3, 3e-3, 1e-2] * 2, jnp.float32)
DECAYS = jnp.asarray([0.0] * 3 + [1e-4] * 3, jnp.float32)


def batches(rng: np.random.Generator, features: int) -> list[jax.Array]:
    """One round's (STEPS, ...) batches: indices, values, rows (CAP wide), labels, mask (BATCH wide)."""
    indices = rng.integers(0, features, (STEPS, CAP)).astype(np.int32)
    values = rng.random((STEPS, CAP)).astype(np.float32)
    values[:, BATCH * NONZEROS :] = 0  # the rest of each batch is padding
    rows = np.minimum(np.arange(CAP) // NONZEROS, BATCH - 1).astype(np.int32)[None].repeat(STEPS, 0)
    labels = rng.integers(0, CLASSES, (STEPS, BATCH)).astype(np.int32)
    mask = np.ones((STEPS, BATCH), np.float32)
    mask[VISITED:] = 0
    return [jnp.asarray(a) for a in (indices, values, rows, labels, mask)]


def seconds(fn, *args, repeat: int = 5) -> float:
    jax.block_until_ready(fn(*args))  # compiles
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        jax.block_until_ready(fn(*args))
        times.append(time.perf_counter() - start)
    return float(np.median(times))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("features", nargs="?", type=int, default=8192)
    parser.add_argument("--groups", default="2,4,8")
    args = parser.parse_args()
    features = args.features
    rng = np.random.default_rng(0)
    epoch = stacked_step.stacked_epoch.__wrapped__  # the undecorated epoch, to jit and vmap here
    dense = jax.default_backend() == "gpu"
    order, visited = jnp.arange(STEPS, dtype=jnp.int32), jnp.asarray(VISITED, jnp.int32)
    for fused in [False, True] if dense else [False]:
        params = stacked_step.init_stack(jax.random.PRNGKey(0), features, HIDDEN, CLASSES, K)
        run = jax.jit(lambda p, s, *a: epoch(p, s, RATES, DECAYS, *a, dense=dense, fused=fused))
        t = seconds(run, params, adam().init(params), *batches(rng, features), order, visited)
        print(f"G=1 fused={fused}: {1e6 * t / VISITED:.0f} us/step", flush=True)
    for groups in [int(g) for g in args.groups.split(",") if g]:
        params = jax.tree.map(
            lambda a: jnp.stack([a] * groups),
            stacked_step.init_stack(jax.random.PRNGKey(0), features, HIDDEN, CLASSES, K),
        )
        state = jax.vmap(adam().init)(params)
        data = [jnp.stack([a] * groups) for a in batches(rng, features)]
        orders = jnp.stack([order] * groups)
        run = jax.jit(
            jax.vmap(
                lambda p, s, i, v, r, y, m, o, n: epoch(p, s, RATES, DECAYS, i, v, r, y, m, o, n, dense=dense),
                in_axes=(0, 0, 0, 0, 0, 0, 0, 0, None),
            )
        )
        t = seconds(run, params, state, *data, orders, visited)
        print(
            f"G={groups} vmapped: {1e6 * t / VISITED:.0f} us/step, {1e6 * t / VISITED / groups:.0f} us/step/group",
            flush=True,
        )
    if not args.groups:
        return
    params = stacked_step.init_stack(jax.random.PRNGKey(0), features, HIDDEN, CLASSES, K * 8)
    run = jax.jit(lambda p, s, *a: epoch(p, s, jnp.tile(RATES, 8), jnp.tile(DECAYS, 8), *a, dense=dense, fused=False))
    t = seconds(run, params, adam().init(params), *batches(rng, features), order, visited)
    print(f"K={K * 8} one group: {1e6 * t / VISITED:.0f} us/step", flush=True)


if __name__ == "__main__":
    main()
