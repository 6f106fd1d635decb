import jax.numpy as jnp
import numpy as np
import pytest

from pallas_kernels.softmax_xent import SoftmaxXentBlocks, padded_classes, softmax_xent, softmax_xent_reference
from tests.pallas_kernels.conftest import assert_close, poison_device_memory


# Rows are cut into blocks and classes padded to lanes independently: every class count on rows of a partial last
# block, and the rows' other cases (whole blocks; fewer rows than a block) each with the most and the fewest classes.
@pytest.mark.parametrize("m, n_classes", [(37, 2), (37, 3), (37, 4), (37, 20), (64, 20), (5, 2)])
def test_matches_reference(env, rng, m, n_classes):
    h = env.array(rng, (m, 128), kind="uniform")
    w2 = env.array(rng, (128, n_classes))
    b2 = env.array(rng, (n_classes,))
    labels = jnp.asarray(rng.integers(0, n_classes, m), jnp.int32)
    weight = env.array(rng, (m,), kind="uniform")
    poison_device_memory()
    nll, predicted, dz = softmax_xent(
        h,
        w2,
        b2,
        labels,
        weight,
        n_classes=n_classes,
        block_sizes=SoftmaxXentBlocks(block_m=16),
        precision=env.precision,
        interpret=env.interpret,
    )
    ref_nll, ref_predicted, ref_dz = softmax_xent_reference(
        h, w2, b2, labels, weight, n_classes=n_classes, precision="highest"
    )
    assert dz.shape == (m, padded_classes(n_classes))
    assert_close(nll, ref_nll, env, "nll")
    assert_close(dz[:, :n_classes], ref_dz, env, "dz")
    assert_close(dz[:, n_classes:], np.zeros((m, dz.shape[1] - n_classes)), env, "padded classes")
    np.testing.assert_array_equal(predicted, ref_predicted)


def test_large_scores_stay_finite(env, rng):
    """Subtracting the row max keeps exp() in range where a naive softmax overflows."""
    h = jnp.ones((16, 128), env.dtype)
    w2 = jnp.concatenate([jnp.full((128, 1), 50.0, env.dtype), jnp.zeros((128, 2), env.dtype)], axis=1)
    labels = jnp.array([0, 1] * 8, jnp.int32)
    nll, _, dz = softmax_xent(
        h,
        w2,
        jnp.zeros(3, env.dtype),
        labels,
        jnp.ones(16, env.dtype),
        n_classes=3,
        block_sizes=SoftmaxXentBlocks(block_m=16),
        precision=env.precision,
        interpret=env.interpret,
    )
    assert np.isfinite(np.asarray(nll)).all() and np.isfinite(np.asarray(dz)).all()
    assert float(nll[1]) == pytest.approx(6400.0, rel=1e-6)  # 128 * 50 logits apart


@pytest.mark.parametrize("m,n_classes", [(37, 10), (16, 3)])
def test_loss_and_gradients_match_reference(env, rng, m, n_classes):
    """softmax_xent_loss (the CNN's output layer): value, predictions and gradients in h, w2, b2 and weight
    against jax.grad of the plain-JAX loss."""
    import jax

    from pallas_kernels.softmax_xent import softmax_xent_loss

    h = env.array(rng, (m, 32), kind="uniform")
    w2, b2 = env.array(rng, (32, n_classes)), env.array(rng, (n_classes,))
    labels = jnp.asarray(rng.integers(0, n_classes, m), jnp.int32)
    weight = env.array(rng, (m,), kind="uniform")

    def reference(h, w2, b2, weight):
        nll, _, _ = softmax_xent_reference(h, w2, b2, labels, weight, n_classes=n_classes, precision="highest")
        return jnp.sum(nll * weight)

    kernel = lambda h, w2, b2, weight: softmax_xent_loss(
        h, w2, b2, labels, weight, n_classes, env.precision, env.interpret
    )
    loss, predicted = kernel(h, w2, b2, weight)
    assert_close(loss, reference(h, w2, b2, weight), env, "loss")
    np.testing.assert_array_equal(predicted, softmax_xent_reference(h, w2, b2, labels, weight, n_classes=n_classes)[1])
    grads = jax.grad(lambda *a: 3.0 * kernel(*a)[0], argnums=(0, 1, 2, 3))(h, w2, b2, weight)
    ref_grads = jax.grad(lambda *a: 3.0 * reference(*a), argnums=(0, 1, 2, 3))(h, w2, b2, weight)
    for name, got, want in zip(("dh", "dw2", "db2", "dweight"), grads, ref_grads):
        assert_close(got, want, env, name)
