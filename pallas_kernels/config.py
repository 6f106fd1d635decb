"""Block sizes and launch parameters of every kernel, as one static (hashable) value.

Defaults are safe everywhere; `tuned(batch_size, device_kind)` returns the configuration picked by the sweep on
the GPU (`python -m benchmarks.kernels --sweep`, results in pallas_kernels/tuned.json and the runs DB; the
Adam dW1 fusion from `python -m benchmarks.fusion_ab`) for the nearest batch size measured on that device.
"""

from __future__ import annotations

import dataclasses
import json
import math
from dataclasses import dataclass
from pathlib import Path

TUNED_FILE = Path(__file__).with_name("tuned.json")


@dataclass(frozen=True)
class KernelConfig:
    forward_block_m: int = 64
    forward_block_k: int = 64
    forward_split_k: int = 1
    forward_warps: int = 4
    forward_stages: int = 3
    loss_block_m: int = 64
    backward_block_m: int = 64
    grad_block_m: int = 32
    grad_block_k: int = 128
    grad_warps: int = 4
    grad_stages: int = 3
    # Adam: dW1 computed inside W1's update (input_grad_adam_update, grad_* blocks) instead of input_grad then
    # adam_update. Which is faster depends on the batch size and the blocks (BENCHMARKS.md, "Step fusions":
    # on an H100 it won at B = 256 and lost at 64 and 4,096), so it is set per device and batch in tuned.json
    # from `python -m benchmarks.fusion_ab`.
    adam_fused_dw1: bool = False
    # dW1 alone (input_grad: Adam unless adam_fused_dw1, data parallelism, the custom_vjp): its best blocks
    # differ from the fused dW1 + update kernel's (grad_*), which the sweep picks by whole-step time.
    dw_block_m: int = 32
    dw_block_k: int = 128
    dw_warps: int = 4
    dw_stages: int = 3
    update_block: int = 4096
    # Input format of the training step: "dense" (X scattered into a (B, Kp) bf16 matrix, tensor-core matmuls)
    # or "sparse" (pallas_kernels/sparse_hidden.py reads the nonzeros directly).
    input_format: str = "dense"
    # Sparse block sizes: the best of a sweep on news4 batches of 4,096 on an H200 (BENCHMARKS.md): forward
    # 0.146 ms at (16, 128) vs 0.54-0.69 ms with 64-document blocks; dW1 0.213 ms at (16, 128) vs 0.45-0.58 ms
    # with 64-128-row blocks (fewer, longer-running programs: frequent features pile up in a block).
    sparse_block_b: int = 16  # documents per forward program (Triton's smallest dot is 16 rows)
    sparse_block_n: int = 128  # nonzeros per chunk
    sparse_block_k: int = 16  # W1 rows per backward program
    sparse_warps: int = 4
    sparse_stages: int = 2
    # Pieces layout (pallas_kernels/pieces_hidden.py): pieces per forward program.
    pieces_block_p: int = 64
    pieces_warps: int = 4
    precision: str = "default"  # "highest": IEEE fp32 matmuls (slow; for checks against XLA)
    x_dtype: str = "bfloat16"  # dense input on the device; "float32" for exact checks
    interpret: bool = False  # True on a CPU (tests)

    def replace(self, **changes) -> "KernelConfig":
        return dataclasses.replace(self, **changes)


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
    config = KernelConfig(**best["config"])
    rows = max(16, 1 << max(0, (batch_size - 1).bit_length()))  # Triton's smallest dot is 16 rows
    return config.replace(**{k: min(getattr(config, k), rows) for k in
                             ("forward_block_m", "loss_block_m", "backward_block_m", "grad_block_m", "dw_block_m")})
