"""The network, in plain JAX (the XLA backend and the reference for the Pallas kernels).

features -> hidden (sigmoid) -> classes (softmax), cross-entropy loss.
Input rows arrive as flat sparse batches (see pipelines/batches.py): the hidden pre-activation of document r
is sum over its nonzeros of value * W1[index], i.e. a gather + segment-sum ("embedding bag"), which touches
~100 of the 32,754 rows of W1 per document instead of all of them.
"""

from __future__ import annotations

import functools
import jax
import jax.numpy as jnp
import numpy as np

from textclf.models.weights import Params, direct_columns


def glorot_limit(fan_in: int, fan_out: int, gain: float = 1.0) -> np.float32:
    """The Glorot-uniform bound of a (fan_in, fan_out) layer times `gain`, as the float32 the draws are scaled by."""
    return np.float32(gain * np.sqrt(6.0 / (fan_in + fan_out)))


@functools.partial(jax.jit, static_argnames=("n_features", "hidden", "n_classes", "gain"))
def init_params(
    key: jax.Array, n_features: int, hidden: int, n_classes: int, gain: float = 1.0, w1_limit=None
) -> Params:
    """Glorot-uniform weights times `gain`, biases zero. Glorot & Bengio (2010) suggest gain 4 for sigmoid
    units; with SGD it trained better on news4 (0.9356 vs 0.9304), with Adam gain 1 did (agnews7600 0.907 vs
    0.900). Jitted: one compilation instead of one per random op (~1 s of a cold start on a CPU).
    w1_limit: W1's bound where its rows are padded past the input's columns (glorot_limit of the real columns; a
    traced value, so that one program serves every column count of a bucket); the real rows draw the same numbers
    as an unpadded W1's (jax's partitionable threefry: a draw depends on its position only)."""
    k1, k2 = jax.random.split(key)
    limit1 = glorot_limit(n_features, hidden, gain) if w1_limit is None else w1_limit
    limit2 = gain * np.sqrt(6.0 / (hidden + n_classes))
    return Params(
        jax.random.uniform(k1, (n_features, hidden), jnp.float32, -limit1, limit1),
        jnp.zeros((hidden,), jnp.float32),
        jax.random.uniform(k2, (hidden, n_classes), jnp.float32, -limit2, limit2),
        jnp.zeros((n_classes,), jnp.float32),
    )


def pre_activation(w1: jax.Array, indices, values, rows, batch_size: int) -> jax.Array:
    """(cap,) sparse batch -> (B, H) x @ w1, no bias: a gather + segment sum over the batch's nonzeros. With W1
    sharded by feature rows (textclf/training/parallel/features.py) each device computes it for its own columns
    and the shards' results are summed."""
    gathered = w1[indices] * values[:, None]  # (cap, H)
    return jax.ops.segment_sum(gathered, rows, num_segments=batch_size)


def pre_activation_pieces(w1: jax.Array, indices, values, piece_rows, batch_size: int) -> jax.Array:
    """Pieces layout (textclf/training/device_data.py): indices, values (cap, width), piece_rows (cap,) ascending ->
    (B, H) x @ w1, no bias. Each piece's fixed-width gather-sum, then the few pieces of each document summed
    (sorted segment ids)."""
    # Padding slots index one past the last row: "fill" reads 0 there, and jax.grad's scatter drops them.
    rows = w1.at[indices].get(mode="fill", fill_value=0)  # (cap, width, H)
    per_piece = jnp.sum(rows * values[..., None], axis=1)  # (cap, H)
    return jax.ops.segment_sum(per_piece, piece_rows, num_segments=batch_size, indices_are_sorted=True)


def hidden_layer(params: Params, indices, values, rows, batch_size: int) -> jax.Array:
    """(cap,) sparse batch -> (B, H) sigmoid activations."""
    return jax.nn.sigmoid(pre_activation(params.w1, indices, values, rows, batch_size) + params.b1)


def hidden_layer_pieces(params: Params, indices, values, piece_rows, batch_size: int) -> jax.Array:
    """Pieces layout -> (B, H) sigmoid activations."""
    return jax.nn.sigmoid(pre_activation_pieces(params.w1, indices, values, piece_rows, batch_size) + params.b1)


def logits_pieces(params: Params, indices, values, piece_rows, batch_size: int) -> jax.Array:
    return hidden_layer_pieces(params, indices, values, piece_rows, batch_size) @ params.w2 + params.b2


def logits(params: Params, indices, values, rows, batch_size: int) -> jax.Array:
    """(cap,) sparse batch -> (B, C) unnormalised scores. W1's columns beyond the hidden units add a linear model's
    scores (weights.Params): the linear family's (no hidden units) are those alone."""
    if direct_columns(params):
        hidden = params.w2.shape[-2]
        pre = pre_activation(params.w1, indices, values, rows, batch_size) + params.b1
        return jax.nn.sigmoid(pre[:, :hidden]) @ params.w2 + params.b2 + pre[:, hidden:]
    return hidden_layer(params, indices, values, rows, batch_size) @ params.w2 + params.b2


def batched_logits(params: Params, indices, values, rows, batch_size: int) -> jax.Array:
    """(steps, cap) sparse batches of `batch_size` rows -> (steps, B, C) unnormalised scores, one batch a scan step."""

    def one(_, batch):
        return None, logits(params, *batch, batch_size)

    return jax.lax.scan(one, None, (indices, values, rows))[1]


def masked_loss(scores: jax.Array, labels: jax.Array, mask: jax.Array, count=None) -> tuple[jax.Array, jax.Array]:
    """Mean cross-entropy over the unmasked rows, and the number of them predicted right. count: the divisor
    (default: this batch's unmasked rows); data-parallel training passes the whole global batch's count so
    that the per-device losses sum to the global mean. labels (B, C), label sets: each output's binary
    cross-entropy, summed over the outputs (one-vs-rest), and the rows whose every output is right at 0.5."""
    if labels.ndim == 2:
        return multi_label_loss(scores, labels, mask, count)
    log_probs = jax.nn.log_softmax(scores)
    nll = -jnp.take_along_axis(log_probs, labels[:, None], axis=1)[:, 0]
    count = jnp.sum(mask) if count is None else count
    loss = jnp.sum(nll * mask) / jnp.maximum(count, 1.0)
    correct = jnp.sum((jnp.argmax(scores, axis=1) == labels) * mask)
    return loss, correct


def multi_label_loss(scores: jax.Array, labels: jax.Array, mask: jax.Array, count=None) -> tuple[jax.Array, jax.Array]:
    """masked_loss of label sets: scores and labels (B, C), labels 0/1 (any dtype)."""
    bce = jnp.sum(binary_cross_entropy(scores, labels), axis=1)
    count = jnp.sum(mask) if count is None else count
    loss = jnp.sum(bce * mask) / jnp.maximum(count, 1.0)
    return loss, jnp.sum(predicted_right(scores, labels) * mask)


def binary_cross_entropy(scores: jax.Array, labels: jax.Array) -> jax.Array:
    """Each output's binary cross-entropy against 0/1 labels (any dtype, broadcast against the scores):
    log(1 + exp(-|s|)) + max(s, 0) - s * y, stable for any score."""
    targets = labels.astype(scores.dtype)
    return jax.nn.softplus(-jnp.abs(scores)) + jnp.maximum(scores, 0.0) - scores * targets


def predicted_right(scores: jax.Array, labels: jax.Array) -> jax.Array:
    """Whether each document is predicted right: its class the top score, or (label sets, labels shaped as the
    scores) every output on the right side of probability 0.5."""
    if labels.ndim == scores.ndim:
        return jnp.all((scores > 0) == (labels > 0), axis=-1)
    return jnp.argmax(scores, axis=-1) == labels
