"""Helpers shared by the kernels: padding, Triton compiler parameters, matmul precision."""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax import lax
from jax.experimental.pallas import triton as pltriton

PRECISIONS = {"default": None, "highest": lax.Precision.HIGHEST}


def next_power_of_two(n: int) -> int:
    return 1 << max(0, int(n - 1).bit_length())


def round_up(n: int, multiple: int) -> int:
    return -(-n // multiple) * multiple


def pad_axis(x: jax.Array, axis: int, size: int, value=0) -> jax.Array:
    """Pad axis of x with `value` up to `size` (no copy when it already has that size)."""
    if x.shape[axis] == size:
        return x
    widths = [(0, 0)] * x.ndim
    widths[axis] = (0, size - x.shape[axis])
    return jnp.pad(x, widths, constant_values=value)


def triton_params(num_warps: int, num_stages: int) -> pltriton.CompilerParams:
    return pltriton.CompilerParams(num_warps=num_warps, num_stages=num_stages)


def accumulator_dtype(dtype) -> type:
    """fp64 stays fp64 (the CPU float64 tests); everything else accumulates in fp32."""
    return jnp.float64 if dtype == jnp.float64 else jnp.float32


def narrowed(a: jax.Array, like: jax.Array) -> jax.Array:
    """`a` in `like`'s dtype when that is the narrower float: what `dot` does to each tile inside a kernel, done
    once in the wrapper instead, so every program reads half the bytes (e.g. fp32 W1 against bf16 X, which
    each row block of the forward re-reads). The products are bit-identical either way."""
    if a.dtype != like.dtype and jnp.finfo(like.dtype).bits < jnp.finfo(a.dtype).bits:
        return a.astype(like.dtype)
    return a


def dot(a: jax.Array, b: jax.Array, precision: str, contract=((1,), (0,))) -> jax.Array:
    """a @ b inside a kernel with fp32 accumulation; `contract` picks transposes (Triton supports
    contracting dim 0 of a and dim 1 of b). precision "default" is TF32 for fp32 inputs on the GPU."""
    if a.dtype != b.dtype:  # Triton needs one element type: compute in the narrower one (e.g. bf16 X).
        narrow = a.dtype if jnp.finfo(a.dtype).bits < jnp.finfo(b.dtype).bits else b.dtype
        a, b = a.astype(narrow), b.astype(narrow)
    accumulate = accumulator_dtype(a.dtype)
    return lax.dot_general(
        a, b, (contract, ((), ())), precision=PRECISIONS[precision], preferred_element_type=accumulate
    )


class KernelShapeError(ValueError):
    """A kernel was handed arrays it cannot take: wrongly ranked or mismatched shapes, or a block size Triton
    cannot tile with. Raised while tracing, before anything is padded: padding is for sizes that are not block
    multiples, and must never turn a caller's mismatch into zero-padded, quietly wrong results."""


def describe(**arrays) -> str:
    """ "x (64, 32768), w1 (32768, 128)": the shapes a KernelShapeError names."""
    return ", ".join(f"{name} {tuple(a.shape)}" for name, a in arrays.items())


def require(kernel: str, condition: bool, expected: str, **arrays) -> None:
    """Raise KernelShapeError naming the kernel, what it takes and what it got, unless `condition`."""
    if not condition:
        raise KernelShapeError(f"{kernel} takes {expected}; got {describe(**arrays)}")


def require_blocks(kernel: str, **blocks: int) -> None:
    """Block sizes must be positive powers of two (Triton's tiles are)."""
    for name, size in blocks.items():
        if not (isinstance(size, int) and size > 0 and size & (size - 1) == 0):
            raise KernelShapeError(f"{kernel}: {name} must be a positive power of two, not {size!r}")
