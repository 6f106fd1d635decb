"""How a run's record is written, for the text and the image run alike: each epoch's row, the run's end, and the
model file saved before the run is marked finished. Every write waits out another writer's database lock for a
while (a busy database must not stop a training or leave its run `running`)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Callable

from db import runs as run_queries
from db.errors import DatabaseError
from textclf.runs.context import RunContext
from textclf.runs.results import default_model_path
from textclf.training import EpochStats

# Ending a run waits out another writer's lock this many times (each the busy timeout, TEXTCLF_DB_TIMEOUT):
# a run whose end cannot be written stays `running` until its owner is found gone (textclf/runs/owner.py).
END_ATTEMPTS = 6


def waiting_out_locks(write: Callable[[], None]) -> None:
    """Run a database write, retried while another writer holds the lock (END_ATTEMPTS busy timeouts)."""
    for attempt in range(END_ATTEMPTS):
        try:
            return write()
        except DatabaseError:
            if attempt == END_ATTEMPTS - 1:
                raise


def end_run(db, run_id: int, status: str, **fields) -> None:
    waiting_out_locks(lambda: run_queries.end_run(db, run_id, status, **fields))


# Epoch rows are written together at most this often (and at the run's end): a corpus of a few documents trains
# hundreds of short epochs, and a transaction for each row would cost more than the epoch.
EPOCH_WRITE_SECONDS = 1.0


class EpochRecorder:
    """Writes the epochs' rows as they end, those of the last EPOCH_WRITE_SECONDS together; while another writer
    holds the database lock the rows wait and go with a later epoch's (or with `flush` at the end), so a busy
    database does not stop training. (The run's heartbeat comes from textclf/runs/owner.py's RunHeartbeat thread, in
    every phase.)"""

    def __init__(self, db, run_id: int):
        self.db, self.run_id, self.pending = db, run_id, []
        self.written = time.monotonic()

    def __call__(self, stats: EpochStats) -> None:
        self.pending.append(stats)
        if time.monotonic() - self.written >= EPOCH_WRITE_SECONDS:
            self.flush_if_free()  # locked: written with a later epoch

    def _write(self) -> None:
        if self.pending:
            run_queries.add_epochs(self.db, self.run_id, [stats.__dict__ for stats in self.pending])
            self.pending = []
        self.written = time.monotonic()

    def flush(self) -> None:
        waiting_out_locks(self._write)

    def flush_if_free(self) -> None:
        """The rows not yet written, where the database takes them now (a run ending on an error or a stop)."""
        try:
            self._write()
        except DatabaseError:
            pass


def finish_run(
    run: RunContext,
    save: Callable[[Path], object] | None,
    model_path,
    record_epoch: EpochRecorder,
    last: EpochStats,
    eval_accuracy: float,
) -> Path | None:
    """The end of a run that trained: the model file written (by the primary process, through save(path)) before
    the run is marked finished with it, the epochs and phase times recorded. save None: no file (the estimator
    keeps its model in memory). -> the model file's path (None without a file)."""
    path = Path(model_path) if model_path else default_model_path(run.run_id)
    if run.primary and save is not None:
        with run.phase("save"):
            save(path)
    record_epoch.flush()
    run_queries.add_phases(run.db, run.run_id, run.phase.seconds)
    end_run(
        run.db,
        run.run_id,
        "finished",
        model_path=str(path.resolve()) if save is not None else None,
        final_loss=last.loss,
        train_accuracy=last.train_accuracy,
        eval_accuracy=eval_accuracy,
    )
    return path if save is not None else None
