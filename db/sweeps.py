"""Kernel configuration sweeps (table `kernel_sweeps`): one row per (kernel, batch size, configuration) tried by
`python -m benchmarks.kernels --sweep --db FILE`, the timing or the compiler's refusal."""

from __future__ import annotations

import json

import sqlite_utils

from db.runs import now


def record_kernel_sweep(db: sqlite_utils.Database, device: str, kernel: str, batch_size: int, config: dict,
                        seconds: float | None, error: str | None) -> None:
    db["kernel_sweeps"].insert({"created_at": now(), "device": device, "kernel": kernel, "batch_size": batch_size,
                                "config": json.dumps(config), "seconds": seconds, "error": error})
