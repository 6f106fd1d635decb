"""The text network's weights as one named tuple, without importing JAX: the same type holds them as JAX arrays
while training (textclf/models/mlp.py) and as NumPy arrays in a trained model (textclf/inference/text_model.py),
whose prediction runs on the host without starting JAX."""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

import numpy as np

if TYPE_CHECKING:  # annotations only: importing JAX here would start it for host-side prediction
    import jax


class Params(NamedTuple):
    """The network's weights. W1's columns beyond W2's rows score the classes directly: the linear family's are
    the same tuple with no hidden units (W1 (F, C) maps the features to the classes, b1 (C,) is their bias, W2
    (0, C) is empty and b2 (C,) zero), and a network with a linear model beside it (Settings.family
    "network+linear") holds W1 (F, H + C), b1 (H + C,): its scores are the network's plus the linear model's."""

    w1: jax.Array | np.ndarray  # (F, H) features -> hidden
    b1: jax.Array | np.ndarray  # (H,)
    w2: jax.Array | np.ndarray  # (H, C) hidden -> classes
    b2: jax.Array | np.ndarray  # (C,)


def is_linear(params: Params) -> bool:
    """Whether these are the linear family's weights (no hidden units: W2's hidden axis is empty)."""
    return params.w2.shape[-2] == 0


def sigmoid(x: np.ndarray) -> np.ndarray:
    return 0.5 * (1.0 + np.tanh(0.5 * x))  # overflow-free form of 1 / (1 + exp(-x))


def direct_columns(params: Params) -> int:
    """How many of W1's columns score the classes directly (Params): 0, or C where a linear model is held."""
    return params.w1.shape[-1] - params.w2.shape[-2]


def host_scores(params: Params, matrix) -> np.ndarray:
    """(n, F) CSR (or dense) inputs -> (n, C) class scores, computed with NumPy/SciPy on the host."""
    w1, b1, w2, b2 = params
    pre = np.asarray(matrix @ w1) + b1
    hidden = w2.shape[0]  # 0 for the linear family: its scores are W1's direct columns alone
    scores = sigmoid(pre[:, :hidden]) @ w2 + b2
    return scores + pre[:, hidden:] if direct_columns(params) else scores
