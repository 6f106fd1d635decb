import pytest

from pallas_kernels.hidden_forward import HiddenForwardBlocks, hidden_forward, hidden_forward_reference
from tests.pallas_kernels.conftest import assert_close, gpu_only, poison_device_memory


@pytest.mark.parametrize("m, k, split_k", [(37, 300, 1), (64, 512, 4), (5, 1000, 2), (96, 256, 8)])
def test_matches_reference(env, rng, m, k, split_k):
    x = env.array(rng, (m, k), kind="uniform")
    w1 = env.array(rng, (k, 128), scale=0.1)
    b1 = env.array(rng, (128,))
    poison_device_memory()
    out = hidden_forward(
        x,
        w1,
        b1,
        block_sizes=HiddenForwardBlocks(block_m=16, block_k=32, split_k=split_k),
        precision=env.precision,
        interpret=env.interpret,
    )
    assert_close(out, hidden_forward_reference(x, w1, b1, precision="highest"), env)


@gpu_only
def test_production_shape_bf16_input(env, rng):
    import jax.numpy as jnp

    x = (env.array(rng, (4096, 32768), kind="uniform") * (rng.uniform(size=(4096, 32768)) < 0.005)).astype(jnp.bfloat16)
    w1 = env.array(rng, (32768, 128), scale=0.05)
    b1 = env.array(rng, (128,))
    out = hidden_forward(x, w1, b1, block_sizes=HiddenForwardBlocks(block_m=64, block_k=64, split_k=8))
    ref = hidden_forward_reference(x.astype(jnp.float32), w1.astype(jnp.bfloat16).astype(jnp.float32), b1, "highest")
    assert float(jnp.abs(out - ref).max()) < 1e-3


@pytest.mark.parametrize("split_k", [1, 4])
@pytest.mark.parametrize("m, block_m", [(40, 16), (80, 16), (40, 64)])  # 3, 5 and 1 row blocks
def test_bf16_input_with_fp32_weights_keeps_fp32_output(env, rng, split_k, m, block_m):
    """bf16 X against fp32 W1 (the product's dense path): W1 is narrowed once in the wrapper from
    NARROW_MIN_ROW_BLOCKS row blocks on, else each tile in the kernel; the output stays fp32 and equals the fp32
    product of the bf16-rounded operands either way."""
    import jax.numpy as jnp

    x = env.array(rng, (m, 512), kind="uniform").astype(jnp.bfloat16)
    w1 = env.array(rng, (512, 128), scale=0.1).astype(jnp.float32)
    b1 = env.array(rng, (128,)).astype(jnp.float32)
    out = hidden_forward(
        x,
        w1,
        b1,
        block_sizes=HiddenForwardBlocks(block_m=block_m, block_k=32, split_k=split_k),
        interpret=env.interpret,
    )
    assert out.dtype == jnp.float32
    ref = hidden_forward_reference(x.astype(jnp.float32), w1.astype(jnp.bfloat16).astype(jnp.float32), b1, "highest")
    assert float(jnp.abs(out - ref).max()) < 1e-5
