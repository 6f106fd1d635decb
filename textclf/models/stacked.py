"""K networks side by side as one set of weights: the model of the search's candidates, an ensemble and the rate
candidates (trained by textclf/training/steps/stacked.py).

The same Params as one network (textclf/models/weights.py) with the K networks along the hidden axis: W1 (F, K*H)
and b1 (K*H,), model k's first layer being columns k*H .. (k+1)*H, so one gather of a batch's nonzero rows serves
all K; W2 (K, H, C) and b2 (K, C), each network's own output layer. K linear models are the same with H = 0:
W1 (F, K*C) maps the features to each model's classes directly, b1 (K*C,) their biases (textclf/models/weights.py,
is_linear). Each network's loss is its own mean
cross-entropy and the loss differentiated is their sum, so every network gets exactly the gradient it would get
alone. `merged` turns a stack into one network whose scores are the mean of theirs, so a model file, prediction
and the service take an ensemble unchanged.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from textclf.models.mlp import binary_cross_entropy, glorot_limit
from textclf.models.weights import Params, is_linear


def init_stacked(
    key: jax.Array, n_features: int, hidden: int, n_classes: int, models: int, gain: float = 1.0, w1_limit=None
) -> Params:
    """K independent Glorot-uniform initialisations (textclf.models.mlp.init_params, K times; w1_limit as there);
    hidden 0: K linear models, all zeros (a convex loss needs no random start). Jitted with the search's compiler
    options where it trains: textclf/training/steps/stacked.py, start_stack."""
    if hidden == 0:
        return Params(
            jnp.zeros((n_features, models * n_classes), jnp.float32),
            jnp.zeros((models * n_classes,), jnp.float32),
            jnp.zeros((models, 0, n_classes), jnp.float32),
            jnp.zeros((models, n_classes), jnp.float32),
        )
    k1, k2 = jax.random.split(key)
    limit1 = glorot_limit(n_features, hidden, gain) if w1_limit is None else w1_limit
    limit2 = gain * np.sqrt(6.0 / (hidden + n_classes))
    return Params(
        jax.random.uniform(k1, (n_features, models * hidden), jnp.float32, -limit1, limit1),
        jnp.zeros((models * hidden,), jnp.float32),
        jax.random.uniform(k2, (models, hidden, n_classes), jnp.float32, -limit2, limit2),
        jnp.zeros((models, n_classes), jnp.float32),
    )


def stacked_logits(params: Params, indices, values, rows, batch_size: int) -> jax.Array:
    """Flat sparse batch (pipelines/batches.py: (cap,) each) -> (B, K, C) scores of the K models: the batch's W1 rows
    gathered and summed per document (the work scales with the nonzeros: what a CPU wants). The dense formulation
    (a GPU's: its tensor cores do the (B, F) x (F, K*H) product faster than the (cap, K*H) gather and its
    scatter-add gradient, measured: BENCHMARKS.md, "The model search's K-network step") is dense_scores of the
    batch stored in the epoch's zero (B, F) buffer (textclf/training/steps/stacked.py; device_data.write_batch)."""
    gathered = params.w1[indices] * values[:, None]  # (cap, K*H): one gather for all K models
    pre = jax.ops.segment_sum(gathered, rows, num_segments=batch_size) + params.b1  # (B, K*H)
    return head(pre, params.w2, params.b2)


def dense_scores(params: Params, x: jax.Array) -> jax.Array:
    """A batch already dense, x (B, F) -> (B, K, C) scores of the K models."""
    return head(x @ params.w1 + params.b1, params.w2, params.b2)


def head(pre: jax.Array, w2: jax.Array, b2: jax.Array) -> jax.Array:
    """(B, K*H) pre-activations -> (B, K, C) scores: each model's sigmoid hidden units through its own output layer;
    K linear models (H = 0): (B, K*C) scores already (b1 their bias; b2 stays zero, so it has no gradient)."""
    models, hidden, classes = w2.shape
    if hidden == 0:
        return pre.reshape(pre.shape[0], models, classes)
    activations = jax.nn.sigmoid(pre).reshape(pre.shape[0], models, hidden)
    return jnp.einsum("bkh,khc->bkc", activations, w2) + b2


def summed_loss(scores: jax.Array, labels, mask, loss: str = "log") -> jax.Array:
    """(B, K, C) scores -> the sum over the K models of each one's mean cross-entropy on the unmasked rows; for
    (B, C) label sets, each one's mean binary cross-entropy summed over its outputs (models/mlp.py's
    multi_label_loss, K times). loss "squared_hinge" (textclf.settings.LINEAR_LOSSES): one-vs-rest as scikit-learn's
    LinearSVC, each one's mean over the rows of sum_c max(0, 1 - t_c s_c)^2, t_c +1 for the document's class (its
    labels) and -1 for the others."""
    if loss == "squared_hinge":
        truth = labels[:, None, :] if labels.ndim == 2 else jax.nn.one_hot(labels, scores.shape[-1])[:, None, :]
        margins = jnp.maximum(0.0, 1.0 - jnp.where(truth > 0, 1.0, -1.0) * scores)  # (B, K, C)
        return _row_mean(jnp.sum(jnp.square(margins), axis=-1), mask)
    if labels.ndim == 2:
        return _row_mean(jnp.sum(binary_cross_entropy(scores, labels[:, None, :]), axis=-1), mask)
    log_probs = jax.nn.log_softmax(scores, axis=-1)  # (B, K, C)
    return _row_mean(-jnp.take_along_axis(log_probs, labels[:, None, None], axis=2)[..., 0], mask)


def _row_mean(per_row: jax.Array, mask) -> jax.Array:
    """(B, K) each model's loss on each row -> the sum over the K models of their mean over the unmasked rows."""
    return jnp.sum(per_row * mask[:, None]) / jnp.maximum(jnp.sum(mask), 1.0)


def stacked_loss(params: Params, indices, values, rows, labels, mask, loss: str = "log") -> jax.Array:
    """Sum over the K models of each one's mean loss on the unmasked rows (the sparse formulation; summed_loss)."""
    return summed_loss(stacked_logits(params, indices, values, rows, labels.shape[0]), labels, mask, loss)


def dense_loss(params: Params, x: jax.Array, labels, mask, loss: str = "log") -> jax.Array:
    """stacked_loss of a batch already dense: x (B, F)."""
    return summed_loss(dense_scores(params, x), labels, mask, loss)


def merged(params: Params) -> Params:
    """The K models as one network whose scores are the mean of theirs: hidden units side by side (F, K*H),
    output weights stacked and divided by K (K*H, C), output bias the mean (C,), as NumPy Params, so a model
    file, prediction and the service take an ensemble unchanged."""
    models, hidden, classes = params.w2.shape
    if hidden == 0:  # K linear models: the mean of their weights scores the mean of their scores
        w1 = np.asarray(params.w1).reshape(-1, models, classes).mean(axis=1)
        b1 = np.asarray(params.b1).reshape(models, classes).mean(axis=0)
        return Params(w1, b1, np.zeros((0, classes), np.float32), np.asarray(params.b2).mean(axis=0))
    w2 = np.asarray(params.w2).reshape(models * hidden, classes) / models
    return Params(np.asarray(params.w1), np.asarray(params.b1), w2, np.asarray(params.b2).mean(axis=0))


def joined_views(views: list[Params]) -> Params:
    """One network per input view (each a Params over its own columns, e.g. the words' and the character
    n-grams', pipelines.vectorize.Vectorizer.view_widths) -> one network over all the columns whose scores are
    the mean of theirs: W1 block-diagonal (view v's columns feed only view v's hidden units; the zero blocks
    keep them apart), b1 side by side, output weights stacked and divided by the number of views, output bias
    the mean. A model file, prediction and the service take it unchanged. Linear views: their W1s one above the
    other, each divided by the number of views."""
    if is_linear(views[0]):
        count = len(views)
        return Params(
            np.concatenate([np.asarray(v.w1) for v in views]) / count,
            np.mean([np.asarray(v.b1) for v in views], axis=0),
            np.asarray(views[0].w2),
            np.mean([np.asarray(v.b2) for v in views], axis=0),
        )
    rows, columns = sum(v.w1.shape[0] for v in views), sum(v.w1.shape[1] for v in views)
    w1 = np.zeros((rows, columns), np.float32)
    row = column = 0
    for view in views:
        w1[row : row + view.w1.shape[0], column : column + view.w1.shape[1]] = np.asarray(view.w1)
        row, column = row + view.w1.shape[0], column + view.w1.shape[1]
    return Params(
        w1,
        np.concatenate([np.asarray(v.b1) for v in views]),
        np.concatenate([np.asarray(v.w2) for v in views]) / len(views),
        np.mean([np.asarray(v.b2) for v in views], axis=0),
    )


def with_linear(network: Params, linear: Params) -> Params:
    """A network (views joined, ensembles merged) and a linear model over the first of its input rows (the words'
    columns) -> one Params whose scores are the sum of theirs: the linear model's W1 columns after the hidden
    units' (weights.Params), zero on the rows it does not read (a character view's)."""
    rows, classes = network.w1.shape[0], linear.w1.shape[1]
    direct = np.zeros((rows, classes), np.float32)
    direct[: linear.w1.shape[0]] = np.asarray(linear.w1)
    return Params(
        np.concatenate([np.asarray(network.w1, np.float32), direct], axis=1),
        np.concatenate([np.asarray(network.b1), np.asarray(linear.b1)]).astype(np.float32),
        np.asarray(network.w2),
        (np.asarray(network.b2) + np.asarray(linear.b2)).astype(np.float32),
    )


def member(params: Params, k: int) -> Params:
    """Network k of a stack, as NumPy Params."""
    units = params.w1.shape[1] // params.w2.shape[0]  # H, or C for linear models
    units = slice(k * units, (k + 1) * units)
    return Params(
        np.asarray(params.w1[:, units]),
        np.asarray(params.b1[units]),
        np.asarray(params.w2[k]),
        np.asarray(params.b2[k]),
    )
