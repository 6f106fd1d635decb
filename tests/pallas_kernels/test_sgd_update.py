import jax.numpy as jnp
import pytest

from pallas_kernels.sgd_update import SgdUpdateBlocks, sgd_update, sgd_update_reference
from tests.pallas_kernels.conftest import assert_close


@pytest.mark.parametrize("shape", [(1000,), (128, 16), (300, 7), (4,)])
@pytest.mark.parametrize("weight_decay", [0.0, 0.01])
def test_matches_reference(env, rng, shape, weight_decay):
    w, v, g = (env.array(rng, shape) for _ in range(3))
    expected = sgd_update_reference(w, v, g, 0.3, momentum=0.9, weight_decay=weight_decay)
    got = sgd_update(
        jnp.copy(w),
        jnp.copy(v),
        g,
        jnp.asarray([0.3], env.dtype),
        momentum=0.9,
        weight_decay=weight_decay,
        block_sizes=SgdUpdateBlocks(block=256),
        interpret=env.interpret,
    )
    assert_close(got[0], expected[0], env, "w")
    assert_close(got[1], expected[1], env, "v")
