"""One CNN training epoch, scanned (one jitted scan over the steps) vs stepwise (a Python loop over one jitted
step), side by side in one run: `python3 -m benchmarks.cnn.cnn_epoch [--images N] [--repeat R] [--backends xla,pallas]`.

Synthetic 28 x 28 x 1 uint8 images (Fashion-MNIST's shape) and the default network and settings
(Settings(model="cnn")); each mode runs its epoch once to compile, then R times alternating with the other.
Prints images/s per (backend, mode) (median) and the stepwise / scanned time ratio on this process's default
device (`--modes stepwise` times one mode only; `--backends xla,pallas` puts the Pallas kernels beside XLA; `--profile
TOP`: each mode's TOP kernels by GPU time, from a profiler trace of one more epoch).
"""

from __future__ import annotations

import argparse
import collections
import statistics
import tempfile
import time

import jax
import jax.numpy as jnp
import numpy as np

from benchmarks.timing import gpu_kernel_events
from textclf.models.cnn import init_cnn
from textclf.settings import Settings
from textclf.training.cnn import _epoch_fn, learning_rates
from textclf.training.device_data import epoch_order
from textclf.training.steps.optimizers import adam


def synthetic_epoch_inputs(images_count: int, settings: Settings) -> tuple:
    """(images (N, 28, 28, 1) uint8, labels, order (steps, B), learning rates) of one epoch on the device: random
    pixels and labels in Fashion-MNIST's shapes (the pixels' values do not change the work)."""
    rng = np.random.default_rng(0)
    images = jnp.asarray(rng.integers(0, 256, (images_count, 28, 28, 1), dtype=np.uint8))
    labels = jnp.asarray(rng.integers(0, 10, images_count).astype(np.int32))
    steps = -(-images_count // settings.batch_size)
    order = epoch_order(settings.seed, 1, images_count, steps, settings.batch_size)
    return images, labels, order, jnp.asarray(learning_rates(settings, 0, steps))


def timed_epoch(epoch, settings: Settings, inputs: tuple) -> float:
    """Seconds of one call of an epoch function (textclf.training.cnn._epoch_fn) from fresh weights."""
    params = init_cnn(jax.random.PRNGKey(0), (28, 28, 1), 10, settings.channels, settings.conv_kernel, settings.hidden)
    state = adam().init(params)
    start = time.perf_counter()
    jax.block_until_ready(epoch(params, state, *inputs, jax.random.PRNGKey(1)))
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--images", type=int, default=1024)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--modes", default="scanned,stepwise", help="comma-separated: scanned, stepwise")
    parser.add_argument("--backends", default="xla", help="comma-separated: xla, pallas (GPU)")
    parser.add_argument(
        "--profile",
        type=int,
        default=0,
        metavar="TOP",
        help="then trace one more epoch a mode and print its TOP kernels by GPU time",
    )
    args = parser.parse_args()
    settings = Settings(model="cnn")
    inputs = synthetic_epoch_inputs(args.images, settings)
    steps = inputs[2].shape[0]
    epochs = {
        f"{backend} {mode}": _epoch_fn(
            backend,
            False,
            settings.dropout,
            settings.augmentations,
            settings.weight_decay,
            stepwise=(mode == "stepwise"),
        )
        for backend in args.backends.split(",")
        for mode in args.modes.split(",")
    }

    def run(mode: str) -> float:
        return timed_epoch(epochs[mode], settings, inputs)

    for mode in epochs:
        run(mode)  # compile
    seconds = {mode: [] for mode in epochs}
    for _ in range(args.repeat):
        for mode in epochs:
            seconds[mode].append(run(mode))
    print(
        f"device: {jax.devices()[0].device_kind}, {args.images} images, batch {settings.batch_size}, "
        f"{args.repeat} epochs a mode"
    )
    print("| backend, mode | epoch s (median) | images/s |")
    print("|---|---:|---:|")
    for mode, values in seconds.items():
        median = statistics.median(values)
        print(f"| {mode} | {median:.2f} | {args.images / median:,.0f} |")
    for backend in args.backends.split(","):
        if {f"{backend} stepwise", f"{backend} scanned"} <= seconds.keys():
            ratio = statistics.median(seconds[f"{backend} stepwise"]) / statistics.median(seconds[f"{backend} scanned"])
            print(f"{backend}: stepwise / scanned time: {ratio:.2f}x")
    for mode in epochs if args.profile else ():
        with tempfile.TemporaryDirectory() as trace_dir:
            with jax.profiler.trace(trace_dir, create_perfetto_trace=True):
                run(mode)
            events = gpu_kernel_events(trace_dir)
        totals, calls = collections.Counter(), collections.Counter()
        for name, duration in events:
            totals[name[:70]] += duration
            calls[name[:70]] += 1
        kernel_us = sum(totals.values()) or 1.0
        print(
            f"\n{mode}: GPU kernels {kernel_us / steps:.1f} us/step\n\n| kernel | calls/step | us/step | share |\n"
            "|---|---:|---:|---:|"
        )
        for name, total in totals.most_common(args.profile):
            print(f"| `{name}` | {calls[name] / steps:.2f} | {total / steps:.1f} | {100 * total / kernel_us:.0f}% |")


if __name__ == "__main__":
    main()
