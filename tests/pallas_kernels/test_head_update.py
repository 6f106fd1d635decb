import jax.numpy as jnp
import pytest

from pallas_kernels.adam_update import adam_update_reference
from pallas_kernels.head_update import head_adam_update, head_update, head_update_reference
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
    got = head_update(
        *(jnp.copy(p) for p in params),
        *partials,
        jnp.asarray([0.3], env.dtype),
        momentum=0.9,
        weight_decay=weight_decay,
        interpret=env.interpret,
    )
    for name, a, b in zip(NAMES, got, expected):
        assert_close(a, b, env, name)


@pytest.mark.parametrize("parts, classes", [(1, 4), (3, 16)])
def test_adam_matches_reference(env, rng, parts, classes):
    shapes = [(128,), (128, classes), (classes,)]
    groups = [(env.array(rng, s), env.array(rng, s), env.array(rng, s, kind="uniform")) for s in shapes]
    partials = [env.array(rng, (parts, *s)) for s in shapes]
    scalars = jnp.asarray([0.01, 0.19, 0.002, 0.0], env.dtype)
    expected = [
        a
        for (w, m, v), g in zip(groups, partials)
        for a in adam_update_reference(w, m, v, g.sum(axis=0), scalars, weight_decay=1e-3)
    ]
    poison_device_memory()
    got = head_adam_update(
        *(jnp.copy(a) for g in groups for a in g), *partials, scalars, weight_decay=1e-3, interpret=env.interpret
    )
    for name, a, b in zip(("b1", "mb1", "vb1", "w2", "m2", "v2", "b2", "mb2", "vb2"), got, expected):
        assert_close(a, b, env, name)
