import jax.numpy as jnp
import pytest

from pallas_kernels.adam_update import adam_update_reference
from pallas_kernels.input_grad import (
    InputGradBlocks,
    input_grad,
    input_grad_adam_update,
    input_grad_reference,
    input_grad_update,
)
from pallas_kernels.sgd_update import sgd_update_reference
from tests.pallas_kernels.conftest import assert_close, gpu_only, poison_device_memory


@pytest.mark.parametrize("m, k", [(37, 256), (64, 512), (3, 128)])
def test_matches_reference(env, rng, m, k):
    x = env.array(rng, (m, k), kind="uniform")
    dpre = env.array(rng, (m, 128))
    poison_device_memory()
    got = input_grad(
        x, dpre, block_sizes=InputGradBlocks(block_m=16, block_k=64), precision=env.precision, interpret=env.interpret
    )
    assert_close(got, input_grad_reference(x, dpre, "highest"), env)


@pytest.mark.parametrize("m, k", [(37, 256), (16, 128)])
def test_fused_update_matches_grad_then_update(env, rng, m, k):
    x = env.array(rng, (m, k), kind="uniform")
    dpre = env.array(rng, (m, 128))
    w, v = env.array(rng, (k, 128)), env.array(rng, (k, 128))
    expected_w, expected_v = sgd_update_reference(
        w, v, input_grad_reference(x, dpre, "highest"), 0.1, momentum=0.9, weight_decay=1e-3
    )
    got_w, got_v = input_grad_update(
        x,
        dpre,
        jnp.copy(w),
        jnp.copy(v),
        0.1,
        momentum=0.9,
        weight_decay=1e-3,
        block_sizes=InputGradBlocks(block_m=16, block_k=64),
        precision=env.precision,
        interpret=env.interpret,
    )
    assert_close(got_w, expected_w, env, "w")
    assert_close(got_v, expected_v, env, "v")


@pytest.mark.parametrize("m, k", [(37, 256), (16, 128)])
def test_fused_adam_update_matches_grad_then_adam(env, rng, m, k):
    x = env.array(rng, (m, k), kind="uniform")
    dpre = env.array(rng, (m, 128))
    w, mom, v = env.array(rng, (k, 128)), env.array(rng, (k, 128)), env.array(rng, (k, 128), kind="uniform")
    scalars = jnp.asarray([0.01, 0.19, 0.002, 0.0], env.dtype)
    expected = adam_update_reference(w, mom, v, input_grad_reference(x, dpre, "highest"), scalars, weight_decay=1e-3)
    poison_device_memory()
    got = input_grad_adam_update(
        x,
        dpre,
        jnp.copy(w),
        jnp.copy(mom),
        jnp.copy(v),
        scalars,
        weight_decay=1e-3,
        block_sizes=InputGradBlocks(block_m=16, block_k=64),
        precision=env.precision,
        interpret=env.interpret,
    )
    for name, a, b in zip("wmv", got, expected):
        assert_close(a, b, env, name)


@gpu_only
def test_production_shape(env, rng):
    x = (env.array(rng, (4096, 32768), kind="uniform") * (rng.uniform(size=(4096, 32768)) < 0.005)).astype(jnp.bfloat16)
    dpre = env.array(rng, (4096, 128), scale=1e-3)
    got = input_grad(x, dpre)
    ref = input_grad_reference(x.astype(jnp.float32), dpre.astype(jnp.bfloat16).astype(jnp.float32), "highest")
    assert float(jnp.abs(got - ref).max()) < 1e-4 * float(jnp.abs(ref).max()) + 1e-6


def test_bf16_input_with_fp32_dpre_keeps_fp32_output(env, rng):
    """dPre is narrowed to bf16 once in the wrapper (as the kernel's dot would per tile); dW1 stays fp32."""
    import jax.numpy as jnp

    from pallas_kernels.input_grad import input_grad, input_grad_reference

    x = env.array(rng, (48, 256), kind="uniform").astype(jnp.bfloat16)
    dpre = env.array(rng, (48, 128)).astype(jnp.float32)
    out = input_grad(x, dpre, block_sizes=InputGradBlocks(block_m=16, block_k=64), interpret=env.interpret)
    assert out.dtype == jnp.float32
    ref = input_grad_reference(x.astype(jnp.float32), dpre.astype(jnp.bfloat16).astype(jnp.float32), "highest")
    assert float(jnp.abs(out - ref).max()) < 1e-4
