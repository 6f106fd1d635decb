"""Run in a subprocess by test_parallel.py (the device count must be fixed before JAX starts):
train the same network on 1 device and on all devices of the process, print the parameter differences as JSON.

usage: python parallel_worker.py BACKEND:OPTIMIZER[,BACKEND:OPTIMIZER...]
BACKEND: xla or pallas (data parallel), or xla-features (W1 split by feature rows,
textclf/training/parallel/features.py)
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import jax
import numpy as np
import scipy.sparse as sp

sys.path.insert(0, str(Path(__file__).resolve().parents[4]))

from textclf.settings import Settings  # noqa: E402
from textclf.training.inputs import TrainingRows  # noqa: E402
from textclf.training.network import fit_network  # noqa: E402
from textclf.training.steps.step import kernel_config_for  # noqa: E402

BATCH = 16


def compare(backend: str, optimizer: str) -> dict:
    backend, _, layout = backend.partition("-")
    rng = np.random.default_rng(0)
    # 75 rows in batches of 16: the last batch (11 rows) is partial and on 4 devices its last slice is all
    # padding. Small (75 x 64 -> 16 -> 3) because the Pallas kernels run in interpret mode here.
    # 66 features: not a multiple of 4, so the feature-split W1 carries padding rows.
    n, features, classes = 75, 66, 3
    x = sp.random(n, features, density=0.1, format="csr", random_state=1, dtype=np.float32)
    y = rng.integers(0, classes, n).astype(np.int32)
    results = {}
    for devices in (1, len(jax.devices())):
        settings = Settings(
            batch_size=BATCH,
            epochs=1,
            min_steps=0,
            optimizer=optimizer,
            devices=devices,
            learning_rate=0.01,
            hidden=16,
            parallel=layout or "data",
        )
        config = None
        if backend == "pallas":  # exact arithmetic so that only the reduction order differs
            config = kernel_config_for(settings, BATCH // devices).replace(precision="highest", x_dtype="float32")
        results[devices] = fit_network(TrainingRows(x, y, classes, x, y), settings, backend, kernel_config=config)
    one, many = results.values()
    return {
        "devices": len(jax.devices()),
        "max_abs_diff": {
            k: float(np.abs(getattr(one.params, k) - getattr(many.params, k)).max()) for k in ("w1", "b1", "w2", "b2")
        },
        "loss": [one.history[-1].loss, many.history[-1].loss],
        "eval_accuracy": [one.history[-1].eval_accuracy, many.history[-1].eval_accuracy],
    }


def compare_pieces(optimizer: str) -> dict:
    """The feature-split epoch on the pieces layout (what the XLA step reads on a GPU; fit_network gives a CPU
    flat batches) against the one-device epoch on the same pieces."""
    import jax.numpy as jnp

    from textclf.models.mlp import init_params
    from textclf.training.parallel import features as feature_parallel
    from textclf.training.device_data import epoch_order, gather_piece_batches, host_pieces
    from textclf.training.steps.optimizers import make_optimizer
    from textclf.training.steps.step import xla_epoch

    n, features, classes, cap, width = 75, 66, 3, 512, 4
    x = sp.random(n, features, density=0.1, format="csr", random_state=1, dtype=np.float32)
    y = np.random.default_rng(0).integers(0, classes, n).astype(np.int32)
    steps = -(-n // BATCH)
    order = epoch_order(0, 0, n, steps, BATCH)
    lrs = np.full(steps, 0.01, np.float32)
    params = init_params(jax.random.PRNGKey(0), features, 16, classes)
    state = make_optimizer(optimizer).init(params)
    batches = gather_piece_batches(jax.device_put(host_pieces(x, y, width)), jnp.asarray(order), cap)
    one, _, one_losses, _ = jax.jit(
        lambda p, s, *b: xla_epoch(p, s, *b, momentum=0.9, weight_decay=0.0, optimizer=optimizer)
    )(params, state, *batches, lrs)
    parts = len(jax.devices())
    mesh = feature_parallel.feature_mesh(parts)
    shards = feature_parallel.host_shards(x, y, parts, "pieces", width)
    padded = feature_parallel.pad_params((params, state), parts)
    padded = feature_parallel.place(padded, mesh, feature_parallel.param_specs(padded))
    data = (
        feature_parallel.place(shards, mesh, feature_parallel.SHARDED),
        feature_parallel.place(y, mesh, feature_parallel.REPLICATED),
    )
    epoch = jax.jit(feature_parallel.epoch_function(optimizer, 0.9, 0.0, mesh, cap))
    many, _, many_losses, _ = epoch(*padded, data, order, lrs)
    return {
        "devices": parts,
        "max_abs_diff": {
            k: float(
                np.abs(
                    np.asarray(getattr(one, k)) - np.asarray(getattr(many, k))[: features if k == "w1" else None]
                ).max()
            )
            for k in ("w1", "b1", "w2", "b2")
        },
        "padding_rows_zero": bool(np.all(np.asarray(many.w1)[features:] == 0)),
        "loss": [float(one_losses[-1]), float(many_losses[-1])],
    }


if __name__ == "__main__":
    cases = [c.split(":") for c in sys.argv[1].split(",")]
    print(json.dumps({f"{b}:{o}": compare_pieces(o) if b == "features-pieces" else compare(b, o) for b, o in cases}))
