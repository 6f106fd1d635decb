"""The whole network's loss through the Pallas kernels, with an explicit backward (`jax.custom_vjp`):
pallas_call has no transpose rule, so jax.grad cannot differentiate the kernels themselves.

Parameter layout on this path (padded once, before training):
  w1 (Kp, N) with Kp = features rounded up to the kernels' K block (extra rows stay 0: their inputs are 0)
  b1 (N,)  w2 (N, Cp)  b2 (Cp,) with Cp = padded class count (extra classes masked to -inf in the loss).
loss = sum over rows of weight * nll; with weight = mask / number of real rows it is the mean loss.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp

from pallas_kernels.common import PRECISIONS
from pallas_kernels.config import KernelConfig
from pallas_kernels.hidden_backward import hidden_backward
from pallas_kernels.hidden_forward import hidden_forward
from pallas_kernels.input_grad import input_grad
from pallas_kernels.sigmoid_bce import SigmoidBceBlocks, sigmoid_bce
from pallas_kernels.softmax_xent import softmax_xent


# Nine arguments: the four weights, the batch with its labels and row weights, the class count and the kernels' config.
def forward(w1, b1, w2, b2, x, labels, weight, n_classes: int, config: KernelConfig):
    """-> (h, nll, predicted, dz): the hidden activations and everything the loss kernel produces."""
    h = hidden_forward(x, w1, b1, block_sizes=config.forward, precision=config.precision, interpret=config.interpret)
    return (h, *output_loss(h, w2, b2, labels, weight, n_classes, config))


def output_loss(h, w2, b2, labels, weight, n_classes: int, config: KernelConfig):
    """The output layer's loss kernel -> (per-row loss, predicted class, dZ): softmax_xent for (M,) class
    numbers; for (M, C) label sets sigmoid_bce, its second output whether each row is all right (1/0)."""
    numerics = dict(precision=config.precision, interpret=config.interpret)
    if labels.ndim == 2:
        blocks = SigmoidBceBlocks(config.loss.block_m, config.loss.num_warps)
        return sigmoid_bce(h, w2, b2, labels, weight, n_classes=n_classes, block_sizes=blocks, **numerics)
    return softmax_xent(h, w2, b2, labels, weight, n_classes=n_classes, block_sizes=config.loss, **numerics)


def backward_to_hidden(dz, w2, h, config: KernelConfig):
    """-> (dPre, dW2, db2, db1) from the loss gradient dz."""
    dpre, dw2, db2, db1 = hidden_backward(
        dz, w2, h, block_sizes=config.backward, precision=config.precision, interpret=config.interpret
    )
    return dpre, dw2[:, : w2.shape[1]], db2[: w2.shape[1]], db1


def weight_grad(x, dpre, config: KernelConfig):
    """dW1 = X^T @ dPre on its own (input_grad with the `dw` blocks)."""
    return input_grad(x, dpre, block_sizes=config.dw, precision=config.precision, interpret=config.interpret)


# Nine arguments: forward's, as custom_vjp passes them.
@functools.partial(jax.custom_vjp, nondiff_argnums=(7, 8))
def mlp_loss(w1, b1, w2, b2, x, labels, weight, n_classes: int, config: KernelConfig):
    _, nll, _, _ = forward(w1, b1, w2, b2, x, labels, weight, n_classes, config)
    return jnp.sum(nll * weight)


# Nine arguments: mlp_loss's, the custom_vjp forward rule's.
def _mlp_loss_fwd(w1, b1, w2, b2, x, labels, weight, n_classes, config):
    h, nll, _, dz = forward(w1, b1, w2, b2, x, labels, weight, n_classes, config)
    return jnp.sum(nll * weight), (x, h, w2, dz)


def _mlp_loss_bwd(n_classes, config, residuals, g):
    x, h, w2, dz = residuals
    dpre, dw2, db2, db1 = backward_to_hidden(dz, w2, h, config)
    dw1 = weight_grad(x, dpre, config)
    # Data (x), labels and weights get no gradient (None = zero cotangent).
    return g * dw1, g * db1, g * dw2, g * db2, None, None, None


mlp_loss.defvjp(_mlp_loss_fwd, _mlp_loss_bwd)


# Nine arguments: mlp_loss's, a precision in place of the kernels' config.
def mlp_loss_reference(w1, b1, w2, b2, x, labels, weight, n_classes: int, precision: str = "default"):
    """Plain JAX: the same loss from dense x, differentiable by jax.grad."""
    prec = PRECISIONS[precision]
    h = jax.nn.sigmoid(jnp.dot(x.astype(w1.dtype), w1, precision=prec) + b1)
    scores = jnp.dot(h, w2[:, :n_classes], precision=prec) + b2[:n_classes]
    nll = -jnp.take_along_axis(jax.nn.log_softmax(scores), labels[:, None], axis=1)[:, 0]
    return jnp.sum(nll * weight)
