"""Where a training epoch's GPU time goes: per-kernel time of the product's resident epoch, from a profiler trace.

    python -m benchmarks.speed.epoch_profile TRAIN.jsonl [--batches 256,4096] [--backends pallas-dense,xla]
        [--repeat 10] [--vectorizer tfidf] [--top 12]

Vectorizes the corpus once (stacked --repeat times), trains one warm-up epoch per (backend, batch) so nothing is
compiled inside the trace, then traces two more epochs of `fit_network` (the same call `textclf train` makes)
and prints, per kernel name, the calls, microseconds per training step and share of the kernels' total, plus
the epoch's wall time per step: wall minus kernel time is what launches, gaps and the host cost.
"""

from __future__ import annotations

import argparse
import tempfile

import jax

from benchmarks.timing import gpu_kernel_events, kernel_totals
from benchmarks.kernels.mlp import load_problem
from textclf.settings import Settings
from textclf.training.inputs import TrainingRows
from textclf.training.network import fit_network


def profile(x, y, n_classes: int, settings: Settings, backend: str, top: int) -> None:
    fit_network(TrainingRows(x, y, n_classes), settings.replace(epochs=1), backend)  # compile outside the trace
    with tempfile.TemporaryDirectory() as trace_dir:
        with jax.profiler.trace(trace_dir, create_perfetto_trace=True):
            result = fit_network(TrainingRows(x, y, n_classes), settings, backend)
        events = gpu_kernel_events(trace_dir)
    steps = settings.epochs * -(-x.shape[0] // settings.batch_size)
    wall = sum(e.seconds for e in result.history)
    totals, calls = kernel_totals(events)
    kernel_us = sum(totals.values())
    print(
        f"\n#### {settings.backend}{'-' + settings.pallas_input if backend == 'pallas' else ''}, batch "
        f"{settings.batch_size:,}: {steps} steps, wall {wall / steps * 1e6:.1f} us/step "
        f"({x.shape[0] * settings.epochs / wall:,.0f} docs/s), GPU kernels {kernel_us / steps:.1f} us/step\n"
    )
    if not kernel_us:
        print("(no GPU kernel events in the trace: no GPU, or no CUPTI)")
        return
    print("| kernel | calls/step | us/step | share |")
    print("|---|---:|---:|---:|")
    for name, total in totals.most_common(top):
        print(f"| `{name}` | {calls[name] / steps:.2f} | {total / steps:.1f} | {100 * total / kernel_us:.0f}% |")
    rest = kernel_us - sum(t for _, t in totals.most_common(top))
    if rest > 0:
        print(f"| (other {len(totals) - top} kernels) | | {rest / steps:.1f} | {100 * rest / kernel_us:.0f}% |")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("train")
    parser.add_argument("--batches", default="256,4096")
    parser.add_argument("--backends", default="pallas-dense,xla")
    parser.add_argument("--repeat", type=int, default=10, help="stack the vectorized corpus N times")
    parser.add_argument("--vectorizer", default="tfidf")
    parser.add_argument("--top", type=int, default=12)
    args = parser.parse_args()
    settings = Settings(vectorizer=args.vectorizer, epochs=2, min_steps=0)
    x, y, n_classes = load_problem(args.train, args.repeat, args.vectorizer)
    print(f"{args.train}: {x.shape[0]:,} documents, {x.nnz / x.shape[0]:.0f} nonzeros each; {jax.devices()[0]}")
    for name in args.backends.split(","):
        backend, _, pallas_input = name.partition("-")
        for batch in (int(b) for b in args.batches.split(",")):
            run = settings.replace(batch_size=batch, backend=backend, pallas_input=pallas_input or "auto")
            profile(x, y, n_classes, run, backend, args.top)


if __name__ == "__main__":
    main()
