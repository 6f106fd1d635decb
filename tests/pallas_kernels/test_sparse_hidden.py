import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.sparse as sp
from jax.test_util import check_grads

from pallas_kernels.sparse_hidden import (
    SparseForwardBlocks,
    SparseGradBlocks,
    document_offsets,
    sparse_hidden,
    sparse_hidden_forward,
    sparse_hidden_reference,
    sparse_input_grad,
    sparse_input_grad_reference,
    sparse_input_grad_update,
)
from pallas_kernels.sgd_update import sgd_update_reference
from pipelines.batches import make_batches
from tests.pallas_kernels.conftest import ON_GPU, assert_close, gpu_only, poison_device_memory

CHUNK = 16  # nonzeros per chunk: several chunks per document at these sizes


def _batch(env, rng, batch_size, n_features, density=0.08, hot_feature=True):
    """A flat sparse batch as training builds it: rows in order, padding after; one empty document and
    (hot_feature) one feature in every document, like a frequent word."""
    x = sp.random(batch_size, n_features, density=density, format="lil", random_state=rng.integers(1 << 30))
    if batch_size > 3:
        x[2, :] = 0
    if hot_feature:
        x[:, 5] = rng.uniform(0.1, 1.0, size=(batch_size, 1))
        x[2, 5] = 0
    x = x.tocsr()
    x.eliminate_zeros()
    b = make_batches(x, np.zeros(batch_size, np.int32), batch_size)
    return (jnp.asarray(b.indices[0]), jnp.asarray(b.values[0], env.dtype), jnp.asarray(b.rows[0])), x


def test_document_offsets_skip_padding():
    rows = jnp.asarray([0, 0, 1, 3, 3, 3, 0, 0], jnp.int32)  # documents 0, 1, 3; then padding
    assert document_offsets(rows, 5).tolist() == [0, 2, 3, 3, 6, 6]


@pytest.mark.parametrize("batch_size, n_features", [(37, 256), (16, 128), (5, 64)])
def test_forward_matches_reference(env, rng, batch_size, n_features):
    (indices, values, rows), _ = _batch(env, rng, batch_size, n_features)
    w1, b1 = env.array(rng, (n_features, 128)), env.array(rng, (128,))
    poison_device_memory()
    got = sparse_hidden_forward(
        indices,
        values,
        rows,
        w1,
        b1,
        batch_size=batch_size,
        block_sizes=SparseForwardBlocks(block_b=16, block_n=CHUNK),
        precision=env.precision,
        interpret=env.interpret,
    )
    assert_close(got, sparse_hidden_reference(w1, b1, indices, values, rows, batch_size), env)


@pytest.mark.parametrize("batch_size, n_features, block_k", [(37, 256, 64), (16, 128, 32), (5, 64, 64)])
def test_input_grad_matches_reference(env, rng, batch_size, n_features, block_k):
    (indices, values, rows), _ = _batch(env, rng, batch_size, n_features)
    dpre = env.array(rng, (batch_size, 128))
    poison_device_memory()
    got = sparse_input_grad(
        indices,
        values,
        rows,
        dpre,
        n_features=n_features,
        block_sizes=SparseGradBlocks(block_k=block_k, block_n=CHUNK),
        precision=env.precision,
        interpret=env.interpret,
    )
    assert_close(got, sparse_input_grad_reference(indices, values, rows, dpre, n_features, "highest"), env)


@pytest.mark.parametrize("momentum, weight_decay", [(0.9, 1e-3), (0.0, 0.0)])
def test_fused_update_matches_grad_then_update(env, rng, momentum, weight_decay):
    (indices, values, rows), _ = _batch(env, rng, 24, 256, density=0.02)
    dpre = env.array(rng, (24, 128))
    w, v = env.array(rng, (256, 128)), env.array(rng, (256, 128))
    grad = sparse_input_grad_reference(indices, values, rows, dpre, 256, "highest")
    expected_w, expected_v = sgd_update_reference(w, v, grad, 0.1, momentum=momentum, weight_decay=weight_decay)
    got_w, got_v = sparse_input_grad_update(
        indices,
        values,
        rows,
        dpre,
        jnp.copy(w),
        jnp.copy(v),
        0.1,
        momentum=momentum,
        weight_decay=weight_decay,
        block_sizes=SparseGradBlocks(block_k=32, block_n=CHUNK),
        precision=env.precision,
        interpret=env.interpret,
    )
    assert_close(got_w, expected_w, env, "w")
    assert_close(got_v, expected_v, env, "v")


def test_gradients_match_reference(env, rng):
    (indices, values, rows), _ = _batch(env, rng, 19, 128)
    w1, b1 = env.array(rng, (128, 128), scale=0.3), env.array(rng, (128,))
    kernel = (
        SparseForwardBlocks(block_b=16, block_n=16),
        SparseGradBlocks(block_k=32, block_n=16),
        env.precision,
        env.interpret,
    )
    probe = env.array(rng, (19, 128))

    def loss(w1, b1):
        return jnp.sum(sparse_hidden(w1, b1, indices, values, rows, 19, kernel) * probe)

    def reference(w1, b1):
        return jnp.sum(sparse_hidden_reference(w1, b1, indices, values, rows, 19) * probe)

    for got, want in zip(jax.grad(loss, argnums=(0, 1))(w1, b1), jax.grad(reference, argnums=(0, 1))(w1, b1)):
        assert_close(got, want, env)
    if not ON_GPU:
        check_grads(loss, (w1, b1), order=1, modes=["rev"])


@gpu_only
def test_production_shape(env, rng):
    (indices, values, rows), _ = _batch(env, rng, 4096, 32768, density=0.003)
    w1, b1 = env.array(rng, (32768, 128), scale=0.01), env.array(rng, (128,))
    h = sparse_hidden_forward(indices, values, rows, w1, b1, batch_size=4096)
    ref = sparse_hidden_reference(w1, b1, indices, values, rows, 4096)
    assert float(jnp.abs(h - ref).max()) < 1e-3
    dpre = env.array(rng, (4096, 128), scale=1e-3)
    got = sparse_input_grad(indices, values, rows, dpre, n_features=32768)
    want = sparse_input_grad_reference(indices, values, rows, dpre, 32768, "highest")
    assert float(jnp.abs(got - want).max()) < 1e-3 * float(jnp.abs(want).max()) + 1e-6
