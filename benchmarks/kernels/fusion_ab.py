"""A/B of KernelConfig.adam_fused_dw1 (dW1 inside W1's Adam update; set per device and batch in
pallas_kernels/tuned.json), on and off, on news4 (stacked 10x; B = 64, 256, 4,096) and agnews7600 rows (100x; B =
4,096): us per step of `fit_network` epochs (median of epochs 2-3). Then counts the copies of the dense epoch's (B, Kp)
zero buffer in the compiled epoch (should be 0: each step's erase must happen in place). GPU only.

    python -m benchmarks.kernels.fusion_ab
"""

from __future__ import annotations

import argparse
import itertools
import re

import jax
import jax.numpy as jnp
import numpy as np

from benchmarks.kernels.mlp import load_problem
from textclf.training import network
from textclf.training.steps import pallas as pallas_training
from textclf.training.steps.step import kernel_config_for
from textclf.settings import Settings
from textclf.models.mlp import init_params
from textclf.training.steps.optimizers import make_optimizer

TASKS = ((".devdata/news4/train.jsonl", 10, (64, 256, 4096)), (".devdata/agnews7600/train.jsonl", 100, (4096,)))
VARIANTS = (True, False)  # fused Adam dW1


def step_time(x, y, n_classes: int, batch: int, optimizer: str, fuse: bool):
    """-> (us per step, docs/s, final loss) of 3 epochs with this option."""
    settings = Settings(
        epochs=3, min_steps=0, batch_size=batch, backend="pallas", pallas_input="dense", optimizer=optimizer
    )
    config = kernel_config_for(settings).replace(input_format="dense", adam_fused_dw1=fuse)
    result = network.fit_network(network.TrainingRows(x, y, n_classes), settings, "pallas", kernel_config=config)
    seconds = float(np.median([e.seconds for e in result.history[1:]]))
    return seconds / -(-x.shape[0] // batch) * 1e6, x.shape[0] / seconds, result.history[-1].loss


def buffer_copies(optimizer: str, batch: int = 4096) -> list[str]:
    """HLO copy instructions of the (B, Kp) dense buffer in the compiled epoch (4 steps of empty batches)."""
    config = kernel_config_for(Settings(batch_size=batch))
    params = pallas_training.pad_params(init_params(jax.random.PRNGKey(0), 32754, 128, 4), config)
    steps, cap = 4, 2**19
    args = (
        jnp.zeros((steps, cap), jnp.int32),
        jnp.zeros((steps, cap)),
        jnp.zeros((steps, cap), jnp.int32),
        jnp.zeros((steps, batch), jnp.int32),
        jnp.ones((steps, batch)),
        jnp.full((steps,), 0.1),
    )
    epoch = jax.jit(
        lambda p, o, *a: pallas_training.pallas_epoch(
            p, o, *a, n_classes=4, momentum=0.9, weight_decay=0.0, config=config, optimizer=optimizer
        )
    )
    hlo = epoch.lower(params, make_optimizer(optimizer).init(params), *args).compile().as_text()
    shape = f"[{batch},{params.w1.shape[0]}]"
    return [line.strip()[:160] for line in hlo.splitlines() if re.search(r"\bcopy(-start)?\(", line) and shape in line]


def main() -> None:
    argparse.ArgumentParser(description=__doc__.split("\n\n")[0]).parse_args()  # --help; no options
    for path, repeat, batches in TASKS:
        x, y, n_classes = load_problem(path, repeat)
        for batch, optimizer in itertools.product(batches, ("adam", "sgd")):
            for fuse in VARIANTS:
                if optimizer == "sgd" and not fuse:  # the Adam option: one sgd run
                    continue
                us, docs, loss = step_time(x, y, n_classes, batch, optimizer, fuse)
                print(
                    f"{path.split('/')[1]} B={batch} {optimizer} fuse_adam={fuse}: {us:.1f} us/step, "
                    f"{docs:,.0f} docs/s, loss {loss:.4f}",
                    flush=True,
                )
    for optimizer in ("adam", "sgd"):
        copies = buffer_copies(optimizer)
        print(optimizer, "copies of the dense buffer:", len(copies), *copies, sep="\n  ")


if __name__ == "__main__":
    main()
