"""Kernel configuration sweeps of `python -m benchmarks.kernels.mlp --sweep --db FILE`: one row per (kernel, batch size,
configuration) tried, the timing or the compiler's refusal, in a SQLite file of the benchmark's own (table
`kernel_sweeps`), not in the product's run database."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path

import sqlite_utils


def open_sweep_db(path: str | Path) -> sqlite_utils.Database:
    db = sqlite_utils.Database(path)
    if "kernel_sweeps" not in db.table_names():
        db["kernel_sweeps"].create(
            {
                "id": int,
                "created_at": str,
                "device": str,
                "kernel": str,
                "batch_size": int,
                "config": str,
                "seconds": float,
                "error": str,
            },
            pk="id",
        )
    return db


def record_kernel_sweep(
    db: sqlite_utils.Database,
    device: str,
    kernel: str,
    batch_size: int,
    config: dict,
    seconds: float | None,
    error: str | None,
) -> None:
    db["kernel_sweeps"].insert(
        {
            "created_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "device": device,
            "kernel": kernel,
            "batch_size": batch_size,
            "config": json.dumps(config),
            "seconds": seconds,
            "error": error,
        }
    )
