"""Pallas vs XLA training from the same initial weights and the same minibatches (the original design's
CPU-vs-GPU check). Prints the largest parameter differences and both test accuracies.

    python -m benchmarks.kernels.parity --train data/news4/train.jsonl --test data/news4/test.jsonl [--epochs 2]

"highest": IEEE fp32 matmuls and an fp32 input on both sides (differences should be ~1e-6 relative);
"default": each backend's production precision (Pallas: bf16 input, TF32/bf16 matmuls).
"""

from __future__ import annotations

import argparse

import jax
import numpy as np

from pallas_kernels.config import KernelConfig
from pipelines.corpus import read_corpus
from pipelines.vectorize import fit_vectorizer
from textclf.inference.text_model import Model, encode_labels
from textclf.models.weights import Params
from textclf.settings import Settings
from textclf.training.inputs import TrainingRows
from textclf.training.network import fit_network
from textclf.training.steps.step import kernel_config_for


def gradient_check(matrix, labels, n_classes: int, batch: int = 256) -> None:
    """Gradients of the loss on one real minibatch at the initial weights: Pallas custom_vjp vs jax.grad of
    the plain-JAX reference, both at IEEE fp32 ("highest") with an fp32 input."""
    import jax.numpy as jnp

    from pallas_kernels.mlp import mlp_loss, mlp_loss_reference
    from pipelines.batches import make_batches
    from textclf.models.mlp import init_params
    from textclf.training.steps.pallas import dense_batch, pad_params

    config = KernelConfig().replace(precision="highest", x_dtype="float32")
    params = pad_params(init_params(jax.random.PRNGKey(0), matrix.shape[1], 128, n_classes), config)
    b = make_batches(matrix, labels, batch)
    x = dense_batch(
        jnp.asarray(b.indices[0]),
        jnp.asarray(b.values[0]),
        jnp.asarray(b.rows[0]),
        batch,
        params.w1.shape[0],
        jnp.float32,
    )
    y, weight = jnp.asarray(b.labels[0]), jnp.asarray(b.mask[0]) / batch
    kernel = jax.grad(lambda *p: mlp_loss(*p, x, y, weight, n_classes, config), argnums=(0, 1, 2, 3))(*params)
    reference = jax.grad(lambda *p: mlp_loss_reference(*p, x, y, weight, n_classes, "highest"), argnums=(0, 1, 2, 3))(
        *params
    )
    print(f"Gradients on one news4 minibatch (B={batch}) at the initial weights, Pallas vs jax.grad(reference):\n")
    print("| gradient | max abs diff | max abs value | relative |")
    print("|---|---:|---:|---:|")
    for name, a, r in zip(("dW1", "db1", "dW2", "db2"), kernel, reference):
        diff, scale = float(jnp.abs(a - r).max()), float(jnp.abs(r).max())
        print(f"| {name} | {diff:.3g} | {scale:.3g} | {diff / scale:.3g} |")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--train", required=True)
    parser.add_argument("--test", required=True)
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--docs", type=int, default=1600, help="train on the first N documents (a short run)")
    args = parser.parse_args()
    train, test = read_corpus(args.train), read_corpus(args.test)
    settings = Settings(epochs=args.epochs, min_steps=0)
    vectorizer, train_x = fit_vectorizer(train.texts, train.labels, settings)
    test_x = vectorizer.transform(test.texts)
    classes = sorted(set(train.labels))
    train_y, test_y = encode_labels(train.labels, classes), encode_labels(test.labels, classes)

    def accuracy(params) -> float:
        model = Model(vectorizer, Params(*params), labels=classes, settings=settings)
        return float((model.scores(test_x).argmax(axis=1) == test_y).mean())

    gradient_check(train_x, train_y, len(classes))
    order = np.random.default_rng(0).permutation(train_x.shape[0])[: args.docs]
    short_x, short_y = train_x[order], train_y[order]
    print(
        f"\nShort run: {short_x.shape[0]} documents, {args.epochs} epoch(s), batch {settings.batch_size}, "
        f"IEEE fp32 (highest) on both sides, same initial weights and batches:\n"
    )
    print("| param | max abs diff | max abs value | max-relative | norm-relative |")
    print("|---|---:|---:|---:|---:|")
    with jax.default_matmul_precision("highest"):
        xla = fit_network(TrainingRows(short_x, short_y, len(classes)), settings, "xla")
    config = kernel_config_for(settings).replace(precision="highest", x_dtype="float32")
    pallas = fit_network(TrainingRows(short_x, short_y, len(classes)), settings, "pallas", kernel_config=config)
    for name, a, b in zip(("w1", "b1", "w2", "b2"), pallas.params, xla.params):
        diff, scale = float(np.abs(a - b).max()), float(np.abs(b).max())
        norm = float(np.linalg.norm(a - b) / np.linalg.norm(b))
        print(f"| {name} | {diff:.3g} | {scale:.3g} | {diff / scale:.3g} | {norm:.3g} |")

    full = Settings()
    print(f"\nFull run with the default settings ({full.epochs} epochs), each backend at its production precision:\n")
    print("| backend | test accuracy | train s |")
    print("|---|---:|---:|")
    for backend in ("xla", "pallas"):
        result = fit_network(TrainingRows(train_x, train_y, len(classes)), full, backend)
        print(f"| {backend} | {accuracy(result.params):.4f} | {result.train_seconds:.2f} |")


if __name__ == "__main__":
    main()
