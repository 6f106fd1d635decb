"""The pieces-layout hidden layer (pallas_kernels/pieces_hidden.py) against its plain-JAX reference."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.test_util import check_grads

from pallas_kernels.pieces_hidden import (
    PiecesBlocks,
    pieces_gather_sum,
    pieces_gather_sum_reference,
    pieces_hidden,
    pieces_hidden_reference,
    pieces_input_grad,
)
from tests.pallas_kernels.conftest import ON_GPU, assert_close, gpu_only, poison_device_memory


def _pieces(env, rng, cap, width, n_features, batch_size):
    """Random pieces: ascending document rows (some documents with several pieces, some with none), a hot
    feature in many pieces (a frequent word), padding slots (value 0, index n_features: one past the last
    row, as textclf/device_data.host_pieces writes them) and an all-padding tail."""
    indices = rng.integers(0, n_features, (cap, width))
    indices[::3, 0] = 5
    values = rng.uniform(0.1, 1.0, (cap, width)) * (rng.uniform(size=(cap, width)) < 0.8)
    used = cap - cap // 5
    values[used:] = 0
    rows = np.sort(rng.integers(0, batch_size, cap))
    rows[used:] = batch_size - 1
    indices[values == 0] = n_features
    return jnp.asarray(indices, jnp.int32), jnp.asarray(values, env.dtype), jnp.asarray(rows, jnp.int32)


@pytest.mark.parametrize("cap, width, n_features, block_p", [(48, 4, 64, 16), (37, 8, 200, 16), (16, 16, 128, 16)])
def test_gather_sum_matches_reference(env, rng, cap, width, n_features, block_p):
    """cap not a multiple of the block (37, 48 with block 16 -> padded programs), widths 4-16."""
    indices, values, _ = _pieces(env, rng, cap, width, n_features, 9)
    w1 = env.array(rng, (n_features, 128))
    poison_device_memory()
    got = pieces_gather_sum(indices, values, w1, block_sizes=PiecesBlocks(block_p=block_p), interpret=env.interpret)
    assert_close(got, pieces_gather_sum_reference(indices, values, w1), env)


@pytest.mark.parametrize("batch_size", [3, 16, 21])
def test_layer_and_gradients_match_jax_grad_of_reference(env, rng, batch_size):
    indices, values, rows = _pieces(env, rng, 40, 8, 96, batch_size)
    w1, b1 = env.array(rng, (96, 128), scale=0.3), env.array(rng, (128,), scale=0.3)
    dh = env.array(rng, (batch_size, 128))
    blocks = PiecesBlocks(block_p=16, num_warps=4)
    kernel = lambda w, b: pieces_hidden(w, b, indices, values, rows, batch_size, (blocks, env.interpret))
    reference = lambda w, b: pieces_hidden_reference(w, b, indices, values, rows, batch_size)
    assert_close(kernel(w1, b1), reference(w1, b1), env, "h")
    got = jax.grad(lambda w, b: jnp.sum(kernel(w, b) * dh), argnums=(0, 1))(w1, b1)
    want = jax.grad(lambda w, b: jnp.sum(reference(w, b) * dh), argnums=(0, 1))(w1, b1)
    for name, a, b in zip(("dW1", "db1"), got, want):
        assert_close(a, b, env, name)
    if env.dtype == jnp.float64:
        check_grads(kernel, (w1, b1), order=1, modes=["rev"])


def test_input_grad_is_x_transpose_dpre(env, rng):
    """dW1 from the scatter = X^T dPre with X built densely from the pieces (padding adds nothing)."""
    indices, values, rows = _pieces(env, rng, 24, 4, 32, 7)
    dpre = env.array(rng, (7, 128))
    dense = np.zeros((7, 33))  # one column more for the padding slots' index (value 0)
    np.add.at(dense, (np.repeat(np.asarray(rows), 4), np.asarray(indices).ravel()), np.asarray(values).ravel())
    dense = dense[:, :32]
    assert_close(pieces_input_grad(indices, values, rows, dpre, 32), dense.T @ np.asarray(dpre, np.float64), env)


@gpu_only
@pytest.mark.parametrize("block_p, warps", [(64, 4), (128, 8)])
def test_production_shapes_on_gpu(env, rng, block_p, warps):
    """A news4-sized batch: 4,096 documents in 32,768 pieces of 16 over 32,768 features, bf16 W1 too."""
    indices, values, rows = _pieces(env, rng, 32768, 16, 32768, 4096)
    w1 = env.array(rng, (32768, 128), scale=0.05)
    for dtype, tolerance in ((jnp.float32, 1e-5), (jnp.bfloat16, 1e-2)):
        poison_device_memory()
        got = pieces_gather_sum(
            indices, values, w1.astype(dtype), block_sizes=PiecesBlocks(block_p=block_p, num_warps=warps)
        )
        want = pieces_gather_sum_reference(indices, values.astype(jnp.float32), w1.astype(dtype).astype(jnp.float32))
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=tolerance, atol=tolerance)
    assert ON_GPU
