"""`textclf daemon`: owns the device and trains queued jobs one at a time with the same `train` as the CLI.

Per job: claim it (db/jobs.py), heartbeat from a side thread while it trains, checkpoint after every epoch
(data dir/checkpoints/job-<id>.npz), publish the model as the next version of the job's name
(data dir/models/<name>/v<version>.textclf.npz + a `models` row), mark it succeeded.
- SIGTERM / SIGINT: the job stops after its current epoch (checkpoint written), goes back to the queue without
  using up an attempt, and the daemon exits 0.
- kill -9 or power loss: the heartbeat stops; after `stale_after` seconds a restarted (or another) daemon
  claims the job and resumes it from its checkpoint; a job whose holders died `max_attempts` times fails.
- `textclf jobs cancel`: a running job stops after its current epoch and is marked cancelled.
Compiled programs stay warm across jobs through JAX's persistent compilation cache.
"""

from __future__ import annotations

import json

import os
import signal
import socket
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from db import jobs as job_queue
from db import models as published
from db import runs as run_queries
from db.errors import InvalidName
from db import open_db
from pipelines.confine import confined_to
from pipelines.workers import WorkerPool, fork_is_safe
from textclf.training.checkpoint import Checkpointer
from textclf.settings import Settings
from textclf.errors import USER_ERRORS
from textclf.paths import data_dir, run_db_path
from textclf.runs.owner import reap_orphaned_runs
from textclf.runs.run import train
from textclf.training.events import TrainingStopped


@dataclass
class DaemonOptions:
    db_path: Path | None = None
    poll_seconds: float = 1.0
    stale_after: float = 60.0  # seconds without a heartbeat before a running job counts as orphaned
    heartbeat_seconds: float = 5.0
    once: bool = False  # exit when the queue is empty instead of waiting for more
    checkpoint_seconds: float = 10.0  # at most this much training is redone after a crash (0: every epoch)
    worker: str = field(default_factory=lambda: f"{socket.gethostname()}:{os.getpid()}")
    # "not-worse": a job's model is published only if its evaluation accuracy is not below the serving
    # version's (a bad corpus or setting never replaces a good model); "always": every job's model is published.
    publish: str = "not-worse"


PUBLISH_RULES = ("not-worse", "always")


def publish_file(db, name: str, model_file: Path, **fields) -> tuple[int, Path]:
    """Publish a written model file as the next version of `name`: the row first with an empty path (the service
    skips it), the file renamed to v{N}.textclf.npz beside it, then the path set. -> (N, the final path)."""
    version = job_queue.publish_model(db, name, path="", **fields)
    final = Path(model_file).parent / f"v{version}.textclf.npz"
    os.replace(model_file, final)
    published.set_path(db, name, version, str(final))
    return version, final


def checkpoint_path(job_id: int) -> Path:
    return data_dir() / "checkpoints" / f"job-{job_id}.npz"


class _Heartbeat(threading.Thread):
    """Refreshes the job's heartbeat every few seconds from its own DB connection while the job trains."""

    def __init__(self, options: DaemonOptions, job_id: int):
        super().__init__(daemon=True)
        self.options, self.job_id = options, job_id
        self.done = threading.Event()

    def run(self) -> None:
        db = open_db(run_db_path(self.options.db_path))
        while not self.done.wait(self.options.heartbeat_seconds):
            try:
                job_queue.heartbeat(db, self.job_id, self.options.worker)
            except USER_ERRORS:
                pass  # a locked DB delays one beat; stale_after is many beats long


def _newest_run_id(db, job_id: int) -> int | None:
    """The run a failed job got as far as starting (None: it failed before one started), for `textclf runs show`."""
    runs = run_queries.runs_of_job(db, job_id)
    return max(run["id"] for run in runs) if runs else None


def run_job(db, job: dict, options: DaemonOptions, stopping: Callable[[], bool], pool=None) -> str:
    """Train one claimed job to the end, or until asked to stop. Returns the job's new status.
    pool: the daemon's vectorizing workers (None: the job starts its own)."""
    job_id = job["id"]
    checkpoint = Checkpointer(checkpoint_path(job_id), options.checkpoint_seconds)
    beat = _Heartbeat(options, job_id)
    beat.start()
    # A run of this job still marked running belongs to a daemon that died mid-job (the job was claimed again
    # because its heartbeat went stale; on this host reap_orphaned_runs may have ended it already): it ends
    # here, and the new run records the interrupted run it resumes.
    earlier = run_queries.runs_of_job(db, job_id)
    for run in earlier:
        if run["status"] == "running":
            run_queries.end_run(db, run["id"], "interrupted",
                                error=f"the daemon training job {job_id} stopped without ending this run (killed "
                                      f"or crashed); the job was taken over at {run_queries.now()}")
            run["status"] = "interrupted"
    earlier = [run for run in earlier if run["status"] == "interrupted"]
    try:
        settings = Settings.from_dict(job["settings"])
        with confined_to(job.get("data_root")):  # a job taken over HTTP reads under the service's data root only
            result = train(job["corpus"], settings, test_path=job["test_corpus"], db_path=options.db_path,
                           model_path=_model_folder(job["name"]) / f".job-{job_id}.textclf.npz",
                           checkpointer=checkpoint, pool=pool, job_id=job_id,
                           resumes_run=earlier[-1]["id"] if earlier else None,
                           stop_requested=lambda: stopping() or job_queue.cancel_requested(db, job_id))
    except TrainingStopped:
        if job_queue.cancel_requested(db, job_id):
            job_queue.finish(db, job_id, "cancelled", error="cancelled while running")
            checkpoint.remove()
            return "cancelled"
        job_queue.requeue(db, job_id)
        return "queued"
    except USER_ERRORS as exc:
        job_queue.finish(db, job_id, "failed", error=str(exc), run_id=_newest_run_id(db, job_id))
        checkpoint.remove()
        return "failed"
    except Exception as exc:  # a bug, a device error, a full disk: record it on the job, keep the daemon alive
        job_queue.finish(db, job_id, "failed", error=f"{type(exc).__name__}: {exc}", run_id=_newest_run_id(db, job_id))
        return "failed"
    finally:
        beat.done.set()
    serving = published.get_version(db, job["name"])
    comparable = serving is not None and serving["eval_accuracy"] is not None and result.eval_accuracy is not None
    if options.publish == "not-worse" and comparable and result.eval_accuracy < serving["eval_accuracy"]:
        held = result.model_path.parent / f"held-job-{job_id}.textclf.npz"  # kept for a look, never served
        os.replace(result.model_path, held)
        reason = (f"not published: {result.eval_kind} accuracy {result.eval_accuracy:.4f} is below the serving "
                  f"v{serving['version']}'s {serving['eval_accuracy']:.4f} (textclf daemon --publish always "
                  "publishes every version)")
        run_queries.update_run(db, result.run_id, model_path=str(held), publish_decision=reason)
        job_queue.finish(db, job_id, "held", run_id=result.run_id, error=reason)
        checkpoint.remove()
        return "held"
    version, final = publish_file(db, job["name"], result.model_path, run_id=result.run_id, job_id=job_id,
                                  eval_accuracy=result.eval_accuracy, eval_kind=result.eval_kind,
                                  labels=json.dumps(list(result.model.labels)))
    decision = f"published as v{version}"
    if comparable:
        decision += (f" ({result.eval_kind} accuracy {result.eval_accuracy:.4f}, serving v{serving['version']} had "
                     f"{serving['eval_accuracy']:.4f})")
    # the file that exists from now on, and why it was published
    run_queries.update_run(db, result.run_id, model_path=str(final), publish_decision=decision)
    job_queue.finish(db, job_id, "succeeded", run_id=result.run_id, model_version=version)
    checkpoint.remove()
    return "succeeded"


def run_daemon(options: DaemonOptions, on_event: Callable[[str], None] | None = None) -> int:
    """Claim and train jobs until stopped (SIGTERM/SIGINT) or, with options.once, until the queue is empty.
    Returns the number of jobs it ran."""
    report = on_event or (lambda message: None)
    # Vectorizing workers for the daemon's life, forked now if that is safe (before JAX and any thread of ours
    # start; pipelines/workers.py): each job on a new corpus then counts at once, instead of starting fresh
    # worker interpreters (measured on the H100: vectorize 7.2 s in a first news4 job with fresh ones).
    pool = WorkerPool(os.cpu_count() or 1) if fork_is_safe() else None
    db = open_db(run_db_path(options.db_path))
    reap_orphaned_runs(db)  # runs of this host left `running` by a process that is gone
    stop = threading.Event()
    # Signal handlers can only be installed from the main thread (a daemon run from a test thread skips them).
    in_main = threading.current_thread() is threading.main_thread()
    previous = {sig: signal.signal(sig, lambda *_: stop.set()) for sig in (signal.SIGTERM, signal.SIGINT)} if in_main else {}
    ran = 0
    try:
        while not stop.is_set():
            job = job_queue.claim(db, options.worker, options.stale_after)
            if job is None:
                if options.once:
                    break
                stop.wait(options.poll_seconds)
                continue
            report(f"job {job['id']} ({job['name']}): attempt {job['attempts']}")
            status = run_job(db, job, options, stop.is_set, pool)
            ran += 1
            report(f"job {job['id']}: {status}")
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        if pool is not None:
            pool.close()
    return ran


def _model_folder(name: str) -> Path:
    """<data dir>/models/<name>, for a name that passes db.jobs.check_name and still resolves inside models/
    (a row written by hand into the database is checked again here)."""
    root = (data_dir() / "models").resolve()
    folder = (root / job_queue.check_name(name)).resolve()
    if folder.parent != root:
        raise InvalidName(f"model name {name!r} leaves the models folder: use a plain name")
    return folder
