"""Scoring a held-out set on the host (NumPy/SciPy) or on the device (JAX), as `textclf train`'s evaluate phase
does: `python3 -m benchmarks.speed.eval_scoring TRAIN.jsonl TEST.jsonl [--docs 1000,10000,100000] [--networks 1,5]`.

The vectorizer is fitted on up to 20,000 training documents (default settings), the first N test documents are
transformed, and a network of the default shape (an ensemble of M networks is one network of M x 128 hidden
units) with random weights scores them. Prints seconds for the host and for the device, the device's first call
(compiling this shape) and a second one, and whether both pick the same classes. run.DEVICE_EVAL_DOCUMENTS
rests on it.
"""

from __future__ import annotations

import argparse
import time

import numpy as np


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("train")
    parser.add_argument("test")
    parser.add_argument("--docs", default="1000,10000,100000")
    parser.add_argument("--networks", default="1,5")
    args = parser.parse_args()
    import jax

    from pipelines.corpus import read_corpus
    from pipelines.vectorize import fit_vectorizer
    from textclf.models.mlp import Params
    from textclf.models.weights import host_scores
    from textclf.settings import Settings
    from textclf.inference.device_scores import DeviceScores

    train, test = read_corpus(args.train, 10_000), read_corpus(args.test, 10_000)
    vectorizer, _ = fit_vectorizer(train.texts[:20_000], train.labels[:20_000], Settings())
    classes = len(set(train.labels))
    rng = np.random.default_rng(0)
    print(f"device: {jax.devices()[0].device_kind}")
    print("| documents | networks | host s | device s (first call) | device s (second) | same classes |")
    print("|---:|---:|---:|---:|---:|---|")
    for docs in (int(d) for d in args.docs.split(",")):
        matrix = vectorizer.transform(test.texts[:docs])
        for networks in (int(n) for n in args.networks.split(",")):
            hidden = 128 * networks
            params = Params(
                rng.normal(0, 0.05, (matrix.shape[1], hidden)).astype(np.float32),
                np.zeros(hidden, np.float32),
                rng.normal(0, 0.2, (hidden, classes)).astype(np.float32),
                np.zeros(classes, np.float32),
            )
            start = time.perf_counter()
            host = host_scores(params, matrix)
            host_s = time.perf_counter() - start
            seconds = []
            for _ in range(2):
                start = time.perf_counter()
                device = DeviceScores(params)(matrix)
                seconds.append(time.perf_counter() - start)
            same = bool((host.argmax(axis=1) == device.argmax(axis=1)).mean() > 0.999)
            print(
                f"| {docs:,} | {networks} | {host_s:.3f} | {seconds[0]:.3f} | {seconds[1]:.3f} | {same} |", flush=True
            )


if __name__ == "__main__":
    main()
