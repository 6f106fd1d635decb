"""The text network's weights as one named tuple, without importing JAX: the same type holds them as JAX arrays
while training (textclf/models/mlp.py) and as NumPy arrays in a trained model (textclf/inference/text_model.py),
whose prediction runs on the host without starting JAX."""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:  # annotations only: importing JAX here would start it for host-side prediction
    import jax
    import numpy as np


class Params(NamedTuple):
    w1: jax.Array | np.ndarray  # (F, H) features -> hidden
    b1: jax.Array | np.ndarray  # (H,)
    w2: jax.Array | np.ndarray  # (H, C) hidden -> classes
    b2: jax.Array | np.ndarray  # (C,)
