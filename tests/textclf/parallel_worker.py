"""Run in a subprocess by test_parallel.py (the device count must be fixed before JAX starts):
train the same network on 1 device and on all devices of the process, print the parameter differences as JSON.

usage: python parallel_worker.py BACKEND:OPTIMIZER[,BACKEND:OPTIMIZER...]
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import jax
import numpy as np
import scipy.sparse as sp

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from textclf.settings import Settings  # noqa: E402
from textclf.training.loop import fit_network  # noqa: E402
from textclf.training.step import kernel_config_for  # noqa: E402

BATCH = 16


def compare(backend: str, optimizer: str) -> dict:
    rng = np.random.default_rng(0)
    # 75 rows in batches of 16: the last batch (11 rows) is partial and on 4 devices its last slice is all
    # padding. Small (75 x 64 -> 16 -> 3) because the Pallas kernels run in interpret mode here.
    n, features, classes = 75, 64, 3
    x = sp.random(n, features, density=0.1, format="csr", random_state=1, dtype=np.float32)
    y = rng.integers(0, classes, n).astype(np.int32)
    results = {}
    for devices in (1, len(jax.devices())):
        settings = Settings(batch_size=BATCH, epochs=1, min_steps=0, optimizer=optimizer, devices=devices,
                            learning_rate=0.01, hidden=16)
        config = None
        if backend == "pallas":  # exact arithmetic so that only the reduction order differs
            config = kernel_config_for(settings, BATCH // devices).replace(precision="highest", x_dtype="float32")
        results[devices] = fit_network(x, y, classes, settings, backend, x, y, kernel_config=config)
    one, many = results.values()
    return {
        "devices": len(jax.devices()),
        "max_abs_diff": {k: float(np.abs(getattr(one.params, k) - getattr(many.params, k)).max())
                         for k in ("w1", "b1", "w2", "b2")},
        "loss": [one.history[-1].loss, many.history[-1].loss],
        "eval_accuracy": [one.history[-1].eval_accuracy, many.history[-1].eval_accuracy],
    }


if __name__ == "__main__":
    cases = [c.split(":") for c in sys.argv[1].split(",")]
    print(json.dumps({f"{b}:{o}": compare(b, o) for b, o in cases}))
