import jax.numpy as jnp
import numpy as np
import pytest

from pallas_kernels.softmax_xent import padded_classes, softmax_xent, softmax_xent_reference
from tests.pallas_kernels.conftest import assert_close, poison_device_memory


@pytest.mark.parametrize("m", [37, 64, 5])
@pytest.mark.parametrize("n_classes", [2, 3, 4, 20])
def test_matches_reference(env, rng, m, n_classes):
    h = env.array(rng, (m, 128), kind="uniform")
    w2 = env.array(rng, (128, n_classes))
    b2 = env.array(rng, (n_classes,))
    labels = jnp.asarray(rng.integers(0, n_classes, m), jnp.int32)
    weight = env.array(rng, (m,), kind="uniform")
    poison_device_memory()
    nll, predicted, dz = softmax_xent(h, w2, b2, labels, weight, n_classes=n_classes, block_m=16,
                                      precision=env.precision, interpret=env.interpret)
    ref_nll, ref_predicted, ref_dz = softmax_xent_reference(h, w2, b2, labels, weight, n_classes=n_classes,
                                                             precision="highest")
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
    nll, _, dz = softmax_xent(h, w2, jnp.zeros(3, env.dtype), labels, jnp.ones(16, env.dtype), n_classes=3,
                              block_m=16, precision=env.precision, interpret=env.interpret)
    assert np.isfinite(np.asarray(nll)).all() and np.isfinite(np.asarray(dz)).all()
    assert float(nll[1]) == pytest.approx(6400.0, rel=1e-6)  # 128 * 50 logits apart
