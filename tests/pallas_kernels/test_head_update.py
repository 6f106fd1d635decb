import jax.numpy as jnp
import pytest

from pallas_kernels.head_update import head_update, head_update_reference
from tests.pallas_kernels.conftest import assert_close, poison_device_memory

NAMES = ("b1", "vb1", "w2", "v2", "b2", "vb2")


@pytest.mark.parametrize("parts, classes", [(1, 4), (3, 16), (4, 32), (64, 4)])
@pytest.mark.parametrize("weight_decay", [0.0, 0.01])
def test_matches_reference(env, rng, parts, classes, weight_decay):
    shapes = [(128,), (128,), (128, classes), (128, classes), (classes,), (classes,)]
    params = [env.array(rng, shape) for shape in shapes]
    partials = [env.array(rng, (parts, 128)), env.array(rng, (parts, 128, classes)), env.array(rng, (parts, classes))]
    expected = head_update_reference(*params, *partials, 0.3, momentum=0.9, weight_decay=weight_decay)
    poison_device_memory()
    got = head_update(*(jnp.copy(p) for p in params), *partials, jnp.asarray([0.3], env.dtype), momentum=0.9,
                      weight_decay=weight_decay, interpret=env.interpret)
    for name, a, b in zip(NAMES, got, expected):
        assert_close(a, b, env, name)
