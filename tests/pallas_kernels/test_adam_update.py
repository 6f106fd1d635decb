import jax.numpy as jnp
import pytest

from pallas_kernels.adam_update import AdamUpdateBlocks, adam_update, adam_update_reference
from tests.pallas_kernels.conftest import assert_close


@pytest.mark.parametrize("shape", [(1000,), (128, 16), (300, 7), (4,)])
@pytest.mark.parametrize("weight_decay", [0.0, 0.01])
def test_matches_reference(env, rng, shape, weight_decay):
    w, m, g = (env.array(rng, shape) for _ in range(3))
    v = env.array(rng, shape, kind="uniform")
    scalars = jnp.asarray([1e-3, 1 - 0.9**3, 1 - 0.999**3, 0.0], env.dtype)
    expected = adam_update_reference(w, m, v, g, scalars, weight_decay=weight_decay)
    got = adam_update(
        jnp.copy(w),
        jnp.copy(m),
        jnp.copy(v),
        g,
        scalars,
        weight_decay=weight_decay,
        block_sizes=AdamUpdateBlocks(block=256),
        interpret=env.interpret,
    )
    for name, a, b in zip("wmv", got, expected):
        assert_close(a, b, env, name)
