import jax
import jax.numpy as jnp
import numpy as np
import pytest

from pallas_kernels.sigmoid_bce import SigmoidBceBlocks, sigmoid_bce, sigmoid_bce_loss, sigmoid_bce_reference
from pallas_kernels.softmax_xent import padded_classes
from tests.pallas_kernels.conftest import assert_close, poison_device_memory


def _targets(rng, m, n_classes):
    return jnp.asarray(rng.random((m, n_classes)) < 0.3, jnp.uint8)


# Rows are cut into blocks and outputs padded to lanes independently: every output count on rows of a partial last
# block, and the rows' other cases (whole blocks; fewer rows than a block) each with the widest and the fewest outputs.
@pytest.mark.parametrize("m, n_classes", [(37, 1), (37, 3), (37, 20), (37, 90), (64, 90), (5, 1)])
def test_matches_reference(env, rng, m, n_classes):
    h = env.array(rng, (m, 128), kind="uniform")
    w2, b2 = env.array(rng, (128, n_classes)), env.array(rng, (n_classes,))
    targets = _targets(rng, m, n_classes)
    weight = env.array(rng, (m,), kind="uniform")
    poison_device_memory()
    loss, right, dz = sigmoid_bce(
        h,
        w2,
        b2,
        targets,
        weight,
        n_classes=n_classes,
        block_sizes=SigmoidBceBlocks(block_m=16),
        precision=env.precision,
        interpret=env.interpret,
    )
    ref_loss, ref_right, ref_dz = sigmoid_bce_reference(
        h, w2, b2, targets, weight, n_classes=n_classes, precision="highest"
    )
    assert dz.shape == (m, padded_classes(n_classes))
    assert_close(loss, ref_loss, env, "loss")
    assert_close(dz[:, :n_classes], ref_dz, env, "dz")
    assert_close(dz[:, n_classes:], np.zeros((m, dz.shape[1] - n_classes)), env, "padded outputs")
    # a score within rounding of 0 may fall either side at low precision: rows all right agree elsewhere
    scores = np.asarray(h, np.float64) @ np.asarray(w2, np.float64) + np.asarray(b2, np.float64)
    clear = np.abs(scores).min(axis=1) > 1e-2
    np.testing.assert_array_equal(np.asarray(right)[clear], np.asarray(ref_right)[clear])


def test_large_scores_stay_finite(env, rng):
    """softplus(-|z|) + max(z, 0) - z y: no overflow where a naive log(1 + exp(-z)) overflows."""
    h = jnp.ones((16, 128), env.dtype)
    w2 = jnp.concatenate([jnp.full((128, 1), 50.0, env.dtype), jnp.full((128, 1), -50.0, env.dtype)], axis=1)
    targets = jnp.asarray([[0, 1]] * 16, jnp.uint8)
    loss, right, dz = sigmoid_bce(
        h,
        w2,
        jnp.zeros(2, env.dtype),
        targets,
        jnp.ones(16, env.dtype),
        n_classes=2,
        block_sizes=SigmoidBceBlocks(block_m=16),
        precision=env.precision,
        interpret=env.interpret,
    )
    assert np.isfinite(np.asarray(loss)).all() and np.isfinite(np.asarray(dz)).all()
    assert float(loss[0]) == pytest.approx(2 * 6400.0, rel=1e-5)  # both outputs 6400 logits wrong
    assert int(right[0]) == 0


@pytest.mark.parametrize("m,n_classes", [(37, 10), (16, 3)])
def test_loss_and_gradients_match_reference(env, rng, m, n_classes):
    h = env.array(rng, (m, 32), kind="uniform")
    w2, b2 = env.array(rng, (32, n_classes)), env.array(rng, (n_classes,))
    targets = _targets(rng, m, n_classes)
    weight = env.array(rng, (m,), kind="uniform")

    def reference(h, w2, b2, weight):
        loss, _, _ = sigmoid_bce_reference(h, w2, b2, targets, weight, n_classes=n_classes, precision="highest")
        return jnp.sum(loss * weight)

    kernel = lambda h, w2, b2, weight: sigmoid_bce_loss(
        h, w2, b2, targets, weight, n_classes, env.precision, env.interpret
    )[0]
    assert_close(kernel(h, w2, b2, weight), reference(h, w2, b2, weight), env, "loss")
    grads = jax.grad(kernel, argnums=(0, 1, 2, 3))(h, w2, b2, weight)
    expected = jax.grad(reference, argnums=(0, 1, 2, 3))(h, w2, b2, weight)
    for name, got, want in zip(("dh", "dw2", "db2", "dweight"), grads, expected):
        assert_close(got, want, env, name)
