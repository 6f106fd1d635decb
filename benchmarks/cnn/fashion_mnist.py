"""Fashion-MNIST with the default LeNet-style network (textclf/models/cnn.py): test accuracy and training images/s.

    python -m benchmarks.cnn.fashion_mnist [/usr/share/datasets/fashion-mnist] [--backend xla|pallas] [--epochs N]
        [--dropout P] [--augment shift,flip] [--lr-schedule constant|linear|cosine] [--weight-decay W]

Train on the 60,000 training images, test on the 10,000 t10k images after every epoch. Options left out take
the product's defaults (textclf.settings.Settings, as `textclf train FOLDER --model cnn` would use them).
images/s: training images per second of the epoch's dispatch (epoch 1 includes compiling).
"""

from __future__ import annotations

import argparse

import jax

from pipelines.images import read_image_corpus
from textclf.inference.text_model import encode_labels
from textclf.training.cnn import fit_cnn
from textclf.settings import Settings


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("folder", nargs="?", default="/usr/share/datasets/fashion-mnist")
    parser.add_argument("--backend", default="xla")
    parser.add_argument("--limit", type=int, default=0, help="train on the first N images only")
    defaults = Settings(model="cnn")
    for name in ("epochs", "dropout", "augment", "lr_schedule", "weight_decay", "learning_rate", "batch_size"):
        value = getattr(defaults, name)
        parser.add_argument("--" + name.replace("_", "-"), type=type(value), default=value)
    args = parser.parse_args()
    settings = defaults.replace(
        epochs=args.epochs,
        dropout=args.dropout,
        augment=args.augment,
        lr_schedule=args.lr_schedule,
        weight_decay=args.weight_decay,
        learning_rate=args.learning_rate,
        batch_size=args.batch_size,
    )
    train, test = read_image_corpus(args.folder, "train"), read_image_corpus(args.folder, "t10k")
    classes = sorted(set(train.labels))
    encode = lambda labels: encode_labels(labels, classes)
    images, labels = train.images, encode(train.labels)
    if args.limit:
        images, labels = images[: args.limit], labels[: args.limit]
    print(
        f"device {jax.devices()[0].device_kind}, backend {args.backend}, {len(images):,} training images, "
        f"epochs {settings.epochs}, dropout {settings.dropout}, augment '{settings.augment}', "
        f"lr {settings.learning_rate} {settings.lr_schedule}, weight decay {settings.weight_decay}"
    )
    print("| epoch | loss | train accuracy | test accuracy | seconds | images/s |")
    print("|---:|---:|---:|---:|---:|---:|")
    _, history = fit_cnn(images, labels, len(classes), settings, args.backend, test.images, encode(test.labels))
    for e in history:
        print(
            f"| {e.epoch} | {e.loss:.4f} | {e.train_accuracy:.4f} | {e.eval_accuracy:.4f} | {e.seconds:.2f} | "
            f"{e.docs_per_s:,.0f} |"
        )
    steady = [e.docs_per_s for e in history[1:]] or [history[0].docs_per_s]
    print(
        f"final test accuracy {history[-1].eval_accuracy:.4f}, best {max(e.eval_accuracy for e in history):.4f}; "
        f"training images/s (epochs 2+, median) {sorted(steady)[len(steady) // 2]:,.0f}"
    )


if __name__ == "__main__":
    main()
