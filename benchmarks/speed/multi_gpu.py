"""Training throughput on 1 vs N devices at the same global batch, and how far apart the parameters end up.

    python -m benchmarks.speed.multi_gpu TRAIN.jsonl [--batches 8192,16384] [--devices 1,2]
        [--backends pallas-dense,pallas-sparse,xla,xla-features]
        [--epochs 3] [--vectorizer hashing] [--features 32754]

Reads and vectorizes the corpus once (all CPU cores), then trains each (backend, global batch, device count)
from the same initial weights for --epochs epochs with no validation set. docs/s is the training set size over
the median epoch time after the first epoch (the epoch loop only: the training set is already resident, no
vectorization, no compilation). A backend name's suffix is a Pallas input format (pallas-dense) or "features"
(xla-features: W1 split by feature rows, textclf/training/parallel/features.py; the rest are data parallel).
Prints a markdown table.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from pipelines.corpus import read_corpus
from pipelines.vectorize import fit_vectorizer
from textclf.inference.text_model import encode_labels
from textclf.settings import Settings
from textclf.training.inputs import TrainingRows
from textclf.training.network import fit_network


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("train")
    parser.add_argument("--batches", default="8192,16384")
    parser.add_argument("--devices", default="1,2")
    parser.add_argument("--backends", default="pallas,xla")
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--vectorizer", default="hashing")
    parser.add_argument("--features", type=int, default=Settings().features, help="bag-of-words width (W1's rows)")
    parser.add_argument("--repeat", type=int, default=1, help="stack the vectorized corpus N times (scale stand-in)")
    args = parser.parse_args()
    import jax

    start = time.perf_counter()
    corpus = read_corpus(args.train)
    read_s = time.perf_counter() - start
    settings = Settings(vectorizer=args.vectorizer, features=args.features, epochs=args.epochs, min_steps=0)
    start = time.perf_counter()
    _, x = fit_vectorizer(corpus.texts, corpus.labels, settings)
    vectorize_s = time.perf_counter() - start
    classes = sorted(set(corpus.labels))
    y = encode_labels(corpus.labels, classes)
    if args.repeat > 1:
        import scipy.sparse as sp

        x, y = sp.vstack([x] * args.repeat, format="csr"), np.tile(y, args.repeat)
    print(
        f"{x.shape[0]:,} documents, {x.nnz / x.shape[0]:.0f} nonzeros each, {len(classes)} classes; "
        f"read {read_s:.1f} s, vectorize ({args.vectorizer}) {vectorize_s:.1f} s; devices: {jax.devices()}"
    )
    print("| backend | global batch | devices | docs/s | speed-up | max abs param diff vs 1 device | final loss |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name in args.backends.split(","):
        backend, _, variant = name.partition("-")  # e.g. pallas-sparse, pallas-dense, xla, xla-features
        layout = "features" if variant == "features" else "data"
        pallas_input = "auto" if variant in ("", "features") else variant
        for batch in (int(b) for b in args.batches.split(",")):
            baseline = None
            for devices in (int(d) for d in args.devices.split(",")):
                run = settings.replace(
                    batch_size=batch, devices=devices, backend=backend, pallas_input=pallas_input, parallel=layout
                )
                result = fit_network(TrainingRows(x, y, len(classes)), run, backend)
                times = [e.seconds for e in result.history[1:]] or [result.history[0].seconds]
                docs_per_s = x.shape[0] / float(np.median(times))
                if baseline is None:
                    baseline = (docs_per_s, result.params)
                diff = max(float(np.abs(a - b).max()) for a, b in zip(result.params, baseline[1]))
                print(
                    f"| {name} | {batch:,} | {devices} | {docs_per_s:,.0f} | {docs_per_s / baseline[0]:.2f}x | "
                    f"{diff:.2e} | {result.history[-1].loss:.4f} |",
                    flush=True,
                )


if __name__ == "__main__":
    main()
