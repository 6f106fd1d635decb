"""conv2d_blocked_forward against plain JAX: in interpret mode on any machine, compiled on a Hopper GPU."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from pallas_kernels.conv2d_tma import Conv2dTmaBlocks, conv2d_blocked_forward, from_blocked, supports_tma, to_blocked


def _reference(x, w, b, pad, relu):
    """x NHWC -> NHWC."""
    y = jax.lax.conv_general_dilated(x.astype(jnp.float32), w.astype(jnp.float32), (1, 1), [(pad, pad)] * 2,
                                     dimension_numbers=("NHWC", "HWIO", "NHWC"), precision="highest") + b
    return jax.nn.relu(y) if relu else y


def _case(seed, shape, size, cout):
    rng = np.random.default_rng(seed)
    x = jnp.asarray(rng.normal(size=shape), jnp.bfloat16)
    w = jnp.asarray(rng.normal(size=(size, size, shape[3], cout)) / np.sqrt(size * size * shape[3]), jnp.bfloat16)
    b = jnp.asarray(rng.normal(size=(cout,)), jnp.float32)
    return x, w, b


# Interpret mode (jax 0.11.2) zero-fills a TMA box that overhangs the far end of an array but not one that starts
# before it, which the hardware also zero-fills: the "same" padding's boxes start at -pad, so the padded cases run
# on the GPU only; on a CPU the valid (pad 0) ones cover the tiling, the pipeline and the tiles that overhang.
@pytest.mark.parametrize("shape, size, cout, blocks", [
    ((16, 6, 7, 128), 3, 128, Conv2dTmaBlocks(tile_h=2, tile_w=2, tile_n=16, block_n=64, stages=3)),
    ((16, 5, 6, 64), 3, 256, Conv2dTmaBlocks(tile_h=1, tile_w=4, tile_n=16, block_n=128, stages=2)),
    ((8, 4, 5, 64), 1, 64, Conv2dTmaBlocks(tile_h=2, tile_w=4, tile_n=8, block_n=64, stages=4)),
])
@pytest.mark.parametrize("relu", [True, False])
def test_valid_convolution_in_interpret_mode(shape, size, cout, blocks, relu):
    x, w, b = _case(0, shape, size, cout)
    out = from_blocked(conv2d_blocked_forward(to_blocked(x), w, b, pad=0, relu=relu, blocks=blocks, interpret=True))
    expected = _reference(x, w, b, 0, relu)
    assert out.shape == expected.shape and out.dtype == jnp.bfloat16
    np.testing.assert_allclose(np.asarray(out, np.float32), np.asarray(expected), atol=0.05, rtol=0.02)


@pytest.mark.parametrize("bad, match", [
    (dict(cout=96), "Cout a multiple of 64"),
    (dict(cout=192), "multiple of block_n"),
    (dict(images=12), "multiple of tile_n"),
])
def test_rejects_shapes_it_cannot_tile(bad, match):
    cout, images = bad.get("cout", 128), bad.get("images", 32)
    x, w, b = _case(0, (images, 8, 8, 64), 3, cout)
    with pytest.raises(ValueError, match=match):
        conv2d_blocked_forward(to_blocked(x), w, b, pad=1, interpret=True)


def test_blocked_layout_round_trip():
    x = jnp.arange(2 * 3 * 4 * 128, dtype=jnp.float32).reshape(2, 3, 4, 128)
    blocked = to_blocked(x)
    assert blocked.shape == (3, 4, 2, 2, 64)
    assert float(blocked[1, 2, 1, 0, 5]) == float(x[0, 1, 2, 64 + 5])
    np.testing.assert_array_equal(from_blocked(blocked), x)


hopper = pytest.mark.skipif(not any(d.platform == "gpu" and getattr(d, "compute_capability", "").startswith("9")
                                    for d in jax.devices()), reason="needs a Hopper GPU (TMA and wgmma)")


@hopper
@pytest.mark.parametrize("shape, size, cout, blocks", [
    ((32, 32, 48, 64), 3, 64, Conv2dTmaBlocks(tile_h=2, tile_w=2, tile_n=32, block_n=64, stages=4)),
    ((24, 14, 14, 128), 3, 256, Conv2dTmaBlocks(tile_h=4, tile_w=4, tile_n=8, block_n=128, stages=4)),
    ((16, 13, 11, 64), 3, 128, Conv2dTmaBlocks(tile_h=2, tile_w=4, tile_n=16, block_n=128, stages=3)),
    ((16, 7, 9, 256), 5, 512, Conv2dTmaBlocks(tile_h=1, tile_w=4, tile_n=16, block_n=256, stages=4)),
])
def test_same_padding_on_the_gpu(shape, size, cout, blocks):
    x, w, b = _case(1, shape, size, cout)
    assert supports_tma(x, w)
    # Poisoned output memory shows unwritten elements: fill the allocator's free blocks with NaN first.
    poison = jnp.full((4, *shape[:3], cout), jnp.nan, jnp.bfloat16).block_until_ready()
    del poison
    out = from_blocked(conv2d_blocked_forward(to_blocked(x), w, b, pad=size // 2, blocks=blocks))
    np.testing.assert_allclose(np.asarray(out, np.float32), np.asarray(_reference(x, w, b, size // 2, True)),
                               atol=0.05, rtol=0.02)
