"""A text model's network run through JAX on the default device, for a service that scores there (`textclf serve
--score-on device`): its weights put on the device once, batches cut on the host (pipelines.batches.make_batches)
and scored by one jitted program a batch shape. Imports JAX: only where asked for."""

from __future__ import annotations

import functools

import jax
import numpy as np
import scipy.sparse as sp

from pipelines.batches import make_batches
from textclf.models.mlp import batched_logits
from textclf.models.weights import Params

SCORE_BATCH = 1024  # rows a batch: one program serves every request of up to this many documents


@functools.partial(jax.jit, static_argnames=("batch_size",))
def _scores(params: Params, indices, values, rows, batch_size: int) -> jax.Array:
    return batched_logits(params, indices, values, rows, batch_size)


class DeviceScores:
    """params (NumPy) -> a callable (n, F) CSR -> (n, C) class scores, computed on the default device."""

    def __init__(self, params: Params):
        self.params = Params(*jax.device_put(tuple(params)))

    def __call__(self, matrix: sp.csr_matrix) -> np.ndarray:
        batches = make_batches(matrix, np.zeros(matrix.shape[0], np.int32), SCORE_BATCH)
        scores = _scores(self.params, *jax.device_put([batches.indices, batches.values, batches.rows]), SCORE_BATCH)
        return np.asarray(scores).reshape(-1, scores.shape[-1])[: matrix.shape[0]]
