"""The Pallas MLP step's kernel configuration: each kernel's own launch parameters (its block-size dataclass,
defined beside the kernel, as jax's Pallas ops do), the step's input format and its numerics, as one static
(hashable) value.

Defaults are safe everywhere; `tuned(batch_size, device_kind)` returns the configuration picked by the sweep on
the GPU (`python -m benchmarks.kernels.mlp --sweep`, results in pallas_kernels/tuned.json and the runs DB; the
Adam dW1 fusion from `python -m benchmarks.kernels.fusion_ab`) for the nearest batch size measured on that device.
"""

from __future__ import annotations

import dataclasses
import json
import math
from dataclasses import dataclass
from pathlib import Path

from pallas_kernels.adam_update import AdamUpdateBlocks
from pallas_kernels.hidden_backward import HiddenBackwardBlocks
from pallas_kernels.hidden_forward import HiddenForwardBlocks
from pallas_kernels.input_grad import InputGradBlocks
from pallas_kernels.pieces_hidden import PiecesBlocks
from pallas_kernels.sgd_update import SgdUpdateBlocks
from pallas_kernels.softmax_xent import SoftmaxXentBlocks
from pallas_kernels.sparse_hidden import SparseForwardBlocks, SparseGradBlocks

TUNED_FILE = Path(__file__).with_name("tuned.json")
# The entries whose block_m is rows of the batch: tuned() keeps them no taller than the batch.
ROW_BLOCKS = ("forward", "loss", "backward", "grad", "dw")


@dataclass(frozen=True)
class KernelConfig:
    forward: HiddenForwardBlocks = HiddenForwardBlocks(block_m=64, block_k=64, split_k=1, num_warps=4, num_stages=3)
    loss: SoftmaxXentBlocks = SoftmaxXentBlocks(block_m=64)
    backward: HiddenBackwardBlocks = HiddenBackwardBlocks(block_m=64)
    # dW1 inside W1's update (input_grad_update for sgd, input_grad_adam_update when adam_fused_dw1).
    grad: InputGradBlocks = InputGradBlocks(block_m=32, block_k=128, num_warps=4, num_stages=3)
    # Adam: dW1 computed inside W1's update (input_grad_adam_update, `grad` blocks) instead of input_grad then
    # adam_update. Which is faster depends on the batch size and the blocks (docs/decisions.md, "Step fusions":
    # on an H100 it won at B = 256 and lost at 64 and 4,096), so it is set per device and batch in tuned.json
    # from `python -m benchmarks.kernels.fusion_ab`.
    adam_fused_dw1: bool = False
    # dW1 alone (input_grad: Adam unless adam_fused_dw1, data parallelism, the custom_vjp): its best blocks
    # differ from the fused dW1 + update kernel's (`grad`), which the sweep picks by whole-step time.
    dw: InputGradBlocks = InputGradBlocks(block_m=32, block_k=128, num_warps=4, num_stages=3)
    adam_update: AdamUpdateBlocks = AdamUpdateBlocks(block=4096)
    sgd_update: SgdUpdateBlocks = SgdUpdateBlocks(block=4096)
    # Input format of the training step: "dense" (X scattered into a (B, Kp) bf16 matrix, tensor-core matmuls),
    # "sparse" (pallas_kernels/sparse_hidden.py reads the nonzeros directly) or "pieces" (pieces_hidden.py).
    input_format: str = "dense"
    # Sparse blocks: the best of a sweep on news4 batches of 4,096 on an H200 (BENCHMARKS.md): forward 0.146 ms
    # at 16 documents x 128 nonzeros vs 0.54-0.69 ms with 64-document blocks; dW1 0.213 ms at 16 W1 rows x 128
    # vs 0.45-0.58 ms with 64-128-row blocks (fewer, longer-running programs: frequent features pile up in a
    # block). Triton's smallest dot is 16 rows.
    sparse_forward: SparseForwardBlocks = SparseForwardBlocks(block_b=16, block_n=128, num_warps=4, num_stages=2)
    sparse_grad: SparseGradBlocks = SparseGradBlocks(block_k=16, block_n=128, num_warps=4, num_stages=2)
    pieces: PiecesBlocks = PiecesBlocks(block_p=64, num_warps=4)
    precision: str = "default"  # "highest": IEEE fp32 matmuls (slow; for checks against XLA)
    x_dtype: str = "bfloat16"  # dense input on the device; "float32" for exact checks
    interpret: bool = False  # True on a CPU (tests)

    def replace(self, **changes) -> "KernelConfig":
        """A copy with `changes`; a kernel's entry may be given as a dict of only the fields that change."""
        for name, value in changes.items():
            if isinstance(value, dict):
                changes[name] = dataclasses.replace(getattr(self, name), **value)
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict:
        """Nested plain values (a kernel's entry as a dict of its fields), as tuned.json stores them."""
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> "KernelConfig":
        """From to_dict's form; entries and fields left out keep this class's defaults."""
        return cls().replace(**data)


def tuned(batch_size: int, device_name: str) -> KernelConfig:
    """The swept configuration for the closest measured batch size (on a log scale) on this device, else on
    any swept GPU (block shapes that suit one Hopper part suit another far better than the defaults), with
    row blocks no taller than the batch so small batches are not padded."""
    table = json.loads(TUNED_FILE.read_text()) if TUNED_FILE.exists() else {}
    entries = table.get("configs", [])
    entries = [e for e in entries if e["device"] == device_name] or entries
    if not entries:
        return KernelConfig()
    best = min(entries, key=lambda e: abs(math.log2(e["batch_size"]) - math.log2(max(batch_size, 1))))
    config = KernelConfig.from_dict(best["config"])
    rows = max(16, 1 << max(0, (batch_size - 1).bit_length()))  # Triton's smallest dot is 16 rows
    return config.replace(**{name: {"block_m": min(getattr(config, name).block_m, rows)} for name in ROW_BLOCKS})
