"""The text network's weights as one named tuple, without importing JAX: the same type holds them as JAX arrays
while training (textclf/models/mlp.py) and as NumPy arrays in a trained model (textclf/inference/text_model.py),
whose prediction runs on the host without starting JAX."""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

import numpy as np

if TYPE_CHECKING:  # annotations only: importing JAX here would start it for host-side prediction
    import jax


class Params(NamedTuple):
    w1: jax.Array | np.ndarray  # (F, H) features -> hidden
    b1: jax.Array | np.ndarray  # (H,)
    w2: jax.Array | np.ndarray  # (H, C) hidden -> classes
    b2: jax.Array | np.ndarray  # (C,)


def sigmoid(x: np.ndarray) -> np.ndarray:
    return 0.5 * (1.0 + np.tanh(0.5 * x))  # overflow-free form of 1 / (1 + exp(-x))


def host_scores(params: Params, matrix) -> np.ndarray:
    """(n, F) CSR (or dense) inputs -> (n, C) class scores, computed with NumPy/SciPy on the host."""
    w1, b1, w2, b2 = params
    hidden = sigmoid(np.asarray(matrix @ w1) + b1)
    return hidden @ w2 + b2
