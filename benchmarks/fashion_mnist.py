"""Fashion-MNIST with the default LeNet-style network (textclf/cnn.py): test accuracy and training images/s.

    python -m benchmarks.fashion_mnist [/usr/share/datasets/fashion-mnist] [--backend xla|pallas] [--epochs 10]

Train on the 60,000 training images, test on the 10,000 t10k images after every epoch.
"""

from __future__ import annotations

import argparse

import jax

from pipelines.images import read_image_corpus
from textclf.classifier import encode_labels
from textclf.cnn import CNNSettings, fit_cnn


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("folder", nargs="?", default="/usr/share/datasets/fashion-mnist")
    parser.add_argument("--backend", default="xla")
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--limit", type=int, default=0, help="train on the first N images only")
    args = parser.parse_args()
    train, test = read_image_corpus(args.folder, "train"), read_image_corpus(args.folder, "t10k")
    classes = sorted(set(train.labels))
    encode = lambda labels: encode_labels(labels, classes)
    images, labels = train.images, encode(train.labels)
    if args.limit:
        images, labels = images[: args.limit], labels[: args.limit]
    print(f"device {jax.devices()[0].device_kind}, backend {args.backend}, {len(images):,} training images")
    print("| epoch | loss | train accuracy | test accuracy | seconds | images/s |")
    print("|---:|---:|---:|---:|---:|---:|")
    settings = CNNSettings(epochs=args.epochs)
    _, history = fit_cnn(images, labels, len(classes), settings, args.backend, test.images, encode(test.labels))
    for e in history:
        print(f"| {e.epoch} | {e.loss:.4f} | {e.train_accuracy:.4f} | {e.eval_accuracy:.4f} | {e.seconds:.1f} | "
              f"{e.docs_per_s:,.0f} |")


if __name__ == "__main__":
    main()
