"""Optimizers as (init, update) pairs, as optax writes them, and the learning-rate schedules.

`Optimizer.init(params) -> state`; `Optimizer.update(params, state, grads, lr) -> (params, state)`, traceable,
on any tuple of arrays (one network's Params, the CNN's CNNParams, the model search's stacked networks).
Every trainer takes its optimizer from here: the XLA step and the CNN call `update`; the Pallas step
(textclf/training/steps/pallas.py) starts from the same `init` and state types (AdamState; SGD's velocity, shaped
like the parameters) but updates with its fused kernels, which compute W1's gradient inside the update and so
never hand a gradient to `update` (tests/pallas_kernels/test_mlp.py checks it against this Adam and SGD).
"""

from __future__ import annotations

from typing import Any, Callable, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

ADAM_BETA1, ADAM_BETA2, ADAM_EPS = 0.9, 0.999, 1e-8


class Optimizer(NamedTuple):
    init: Callable[[Any], Any]  # params -> optimizer state
    update: Callable[..., tuple]  # (params, state, grads, lr) -> (params, state)


class AdamState(NamedTuple):
    m: Any  # first-moment estimates, shaped like the parameters
    v: Any  # second-moment estimates
    step: jax.Array  # () float32, steps taken


def adam_corrections(step) -> tuple:
    """Bias corrections (1 - beta1^t, 1 - beta2^t) for step t (1-based)."""
    return 1.0 - ADAM_BETA1**step, 1.0 - ADAM_BETA2**step


def _per_leaf(value, params):
    """One value for every parameter, or (a tuple like params) one per parameter, e.g. per stacked network."""
    return value if isinstance(value, tuple) else jax.tree.map(lambda _: value, params)


def adam(weight_decay=0.0) -> Optimizer:
    """Adam (Kingma & Ba 2015) with coupled L2: g <- g + weight_decay * w. weight_decay and update's lr: one
    value, or a tuple like params of values that broadcast against each parameter (one per stacked network)."""

    def init(params) -> AdamState:
        zeros = jax.tree.map(jnp.zeros_like, params)
        return AdamState(zeros, jax.tree.map(jnp.zeros_like, params), jnp.zeros((), jnp.float32))

    def update(params, state: AdamState, grads, lr):
        step = state.step + 1
        c1, c2 = adam_corrections(step)
        grads = jax.tree.map(lambda g, w, d: g + d * w, grads, params, _per_leaf(weight_decay, params))
        m = jax.tree.map(lambda m, g: ADAM_BETA1 * m + (1 - ADAM_BETA1) * g, state.m, grads)
        v = jax.tree.map(lambda v, g: ADAM_BETA2 * v + (1 - ADAM_BETA2) * g * g, state.v, grads)
        params = jax.tree.map(
            lambda w, r, m, v: w - r * (m / c1) / (jnp.sqrt(v / c2) + ADAM_EPS), params, _per_leaf(lr, params), m, v
        )
        return params, AdamState(m, v, step)

    return Optimizer(init, update)


def sgd(momentum: float = 0.9, weight_decay: float = 0.0) -> Optimizer:
    """Minibatch SGD with momentum, PyTorch's convention: v <- momentum * v + g + weight_decay * w;
    w <- w - lr * v. State: the velocities, shaped like the parameters."""

    def init(params):
        return jax.tree.map(jnp.zeros_like, params)

    def update(params, velocity, grads, lr):
        velocity = jax.tree.map(lambda v, g, w: momentum * v + g + weight_decay * w, velocity, grads, params)
        return jax.tree.map(lambda w, v: w - lr * v, params, velocity), velocity

    return Optimizer(init, update)


def make_optimizer(name: str, momentum: float = 0.9, weight_decay: float = 0.0) -> Optimizer:
    """The optimizer Settings.optimizer names ("adam" or "sgd"; momentum is SGD's only)."""
    return adam(weight_decay) if name == "adam" else sgd(momentum, weight_decay)


def scheduled_rates(schedule: str, learning_rate: float, steps: np.ndarray, total_steps: int) -> np.ndarray:
    """Learning rate at each of `steps` (0-based step numbers of a run of total_steps): "constant", or
    "linear" / "cosine" decay to 0 over the run. -> float32 array like steps (text MLP and CNN alike)."""
    done = np.asarray(steps) / total_steps  # fraction of the run behind
    scale = {"constant": np.ones_like(done), "linear": 1.0 - done, "cosine": 0.5 * (1.0 + np.cos(np.pi * done))}[
        schedule
    ]
    return (learning_rate * scale).astype(np.float32)
