"""What every step of one training run shares: its record, its JAX warm-up, its reporting, its rules."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from db import runs as run_queries
from pipelines.workers import WorkerPool
from textclf.training import BackendWarmup
from textclf.runs.results import PhaseTimer, TrainEvent
from textclf.training.search import SearchRules


@dataclass
class RunContext:
    """What every step of one run shares: its record, its JAX warm-up, its reporting and its rules."""

    db: object
    run_id: int
    warmup: BackendWarmup
    report: Callable[[TrainEvent], None]
    phase: PhaseTimer
    primary: bool  # process 0 (the one that records and writes the model)
    pool: WorkerPool | None  # vectorizing workers handed in (the daemon's), else the run starts its own
    checkpointer: object
    stop_requested: Callable[[], bool] | None
    rules: SearchRules
    plan_only: bool = False
    keep_files: bool = True  # a model file and the vector cache (False: the estimator's run, in memory)
    source: str = ""  # the training corpus's name as the run records it (runs/run.py, source_name)

    def record(self, **fields) -> None:
        """Write these fields of the run's row: every step records through here (the run's one recorder)."""
        run_queries.update_run(self.db, self.run_id, **fields)

    def backend_ready(self) -> str:
        """Wait for the JAX warm-up; record the device. -> the backend as asked (checked)."""
        backend, device = self.warmup.result()
        self.record(device=device)
        return backend
