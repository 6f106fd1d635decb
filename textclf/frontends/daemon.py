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
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from db import jobs as job_queue
from db import models as published
from db import open_db
from db import runs as run_queries
from db.errors import InvalidName
from pipelines.confine import confined_to
from pipelines.workers import WorkerPool, fork_is_safe
from textclf.errors import USER_ERRORS
from textclf.paths import data_dir, run_db_path
from textclf.runs.owner import reap_orphaned_runs
from textclf.runs.run import train
from textclf.settings import Settings
from textclf.training import Checkpointer
from textclf.training import TrainingStopped


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


def _move(source: Path, target: Path) -> None:
    os.replace(source, target)  # one rename: the file is at one of the two paths, never neither


def _placed(db, name: str, version: int, model_file: Path) -> Path:
    """The published row's file moved to v{N}.textclf.npz and its path set; each step skipped where done before
    (a daemon killed between them), so finishing it again neither moves a file twice nor leaves an empty path."""
    final = model_file.parent / f"v{version}.textclf.npz"
    if not final.exists():
        _move(model_file, final)
    published.set_path(db, name, version, str(final))
    return final


def publish_file(db, name: str, model_file: Path, **fields) -> int:
    """Publish `model_file` as the next version of model `name` the way a job's ending does (the version's row,
    then the file moved to v{N}.textclf.npz beside it); fields: the row's (run_id, eval_accuracy, ...). -> the
    version."""
    version = job_queue.publish_model(db, name, path="", **fields)
    _placed(db, name, version, Path(model_file))
    return version


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
    earlier = run_queries.runs_of_job(db, job_id)  # read once: how the job's earlier runs ended decides the rest
    finished = [run for run in earlier if run["status"] == "finished"]
    if finished:  # its daemon died while ending it: the ending finished from the records, never trained again
        return _end_job(db, job, finished[-1], options, checkpoint)
    beat = _Heartbeat(options, job_id)
    beat.start()
    # A run of this job still marked running belongs to a daemon that died mid-job (the job was claimed again
    # because its heartbeat went stale; on this host reap_orphaned_runs may have ended it already): it ends
    # here, and the new run records the interrupted run it resumes.
    for run in earlier:
        if run["status"] == "running":
            run_queries.end_run(
                db,
                run["id"],
                "interrupted",
                error=f"the daemon training job {job_id} stopped without ending this run (killed "
                f"or crashed); the job was taken over at {run_queries.now()}",
            )
            run["status"] = "interrupted"
    earlier = [run for run in earlier if run["status"] == "interrupted"]
    try:
        settings = Settings.from_dict(job["settings"])
        with confined_to(job.get("data_root")):  # a job taken over HTTP reads under the service's data root only
            result = train(
                job["corpus"],
                settings,
                test_path=job["test_corpus"],
                db_path=options.db_path,
                model_path=_model_folder(job["name"]) / f".job-{job_id}.textclf.npz",
                checkpointer=checkpoint,
                pool=pool,
                job_id=job_id,
                resumes_run=earlier[-1]["id"] if earlier else None,
                stop_requested=lambda: stopping() or job_queue.cancel_requested(db, job_id),
            )
    except TrainingStopped:
        if job_queue.cancel_requested(db, job_id):
            job_queue.finish(db, job_id, "cancelled", error="cancelled while running")
            checkpoint.remove()
            return "cancelled"
        job_queue.requeue(db, job_id)
        return "queued"
    except Exception as exc:  # bad input, or a bug, a device error, a full disk: recorded, the daemon kept alive
        user_error = isinstance(exc, USER_ERRORS)
        error = str(exc) if user_error else f"{type(exc).__name__}: {exc}"
        job_queue.finish(db, job_id, "failed", error=error, run_id=_newest_run_id(db, job_id))
        if user_error:  # (the same job fails the same way: nothing to resume; another failure may not recur)
            checkpoint.remove()
        return "failed"
    finally:
        beat.done.set()
    return _end_job(db, job, run_queries.get_run(db, result.run_id), options, checkpoint)


def _end_job(db, job: dict, run: dict, options: DaemonOptions, checkpoint: Checkpointer) -> str:
    """After the job's run finished with its model file: publish it (or hold it back), record why on the run, end
    the job. Each step is one write that a later call skips where it was done (the decision is recorded on the run
    before the model moves), so a daemon killed anywhere in here is finished by the next one from the records
    (run_job), never by training again."""
    job_id, name = job["id"], job["name"]
    model_file = _model_folder(name) / f".job-{job_id}.textclf.npz"
    held = _model_folder(name) / f"held-job-{job_id}.textclf.npz"
    decision = run.get("publish_decision") or ""
    row = published.version_of_job(db, job_id)
    if row is None and not decision.startswith(("not published", "publishing")):
        decision = _publish_decision(db, name, run, options)
        run_queries.update_run(db, run["id"], publish_decision=decision)
    if decision.startswith("not published"):
        return _hold(db, job_id, run["id"], model_file, held, decision, checkpoint)
    if row is None:
        version = job_queue.publish_model(
            db,
            name,
            path="",
            run_id=run["id"],
            job_id=job_id,
            eval_accuracy=run["eval_accuracy"],
            eval_kind=run["eval_kind"],
            labels=json.dumps(run["labels"]),
        )
        row = published.get_version(db, name, version)
    final = Path(row["path"]) if row["path"] else _placed(db, name, row["version"], model_file)
    # the file that exists from now on, and why it was published
    run_queries.update_run(
        db,
        run["id"],
        model_path=str(final),
        publish_decision=decision.replace("publishing", f"published as v{row['version']}", 1),
    )
    job_queue.finish(db, job_id, "succeeded", run_id=run["id"], model_version=row["version"])
    checkpoint.remove()
    return "succeeded"


def _publish_decision(db, name: str, run: dict, options: DaemonOptions) -> str:
    """ "publishing" (with the serving version's accuracy beside the run's, where both are known), or "not
    published: ..." where the run scored below the serving version and options.publish is "not-worse"."""
    serving = published.get_version(db, name)
    comparable = serving is not None and serving["eval_accuracy"] is not None and run["eval_accuracy"] is not None
    if options.publish == "not-worse" and comparable and run["eval_accuracy"] < serving["eval_accuracy"]:
        return (
            f"not published: {run['eval_kind']} accuracy {run['eval_accuracy']:.4f} is below the serving "
            f"v{serving['version']}'s {serving['eval_accuracy']:.4f} (textclf daemon --publish always "
            "publishes every version)"
        )
    return "publishing" + (
        f" ({run['eval_kind']} accuracy {run['eval_accuracy']:.4f}, serving v{serving['version']} "
        f"had {serving['eval_accuracy']:.4f})"
        if comparable
        else ""
    )


def _hold(db, job_id: int, run_id: int, model_file: Path, held: Path, reason: str, checkpoint: Checkpointer) -> str:
    """The job's model kept beside the published ones for a look, never served; each step skipped where done."""
    if model_file.exists() and not held.exists():
        _move(model_file, held)
    run_queries.update_run(db, run_id, model_path=str(held))
    job_queue.finish(db, job_id, "held", run_id=run_id, error=reason)
    checkpoint.remove()
    return "held"


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
    previous = (
        {sig: signal.signal(sig, lambda *_: stop.set()) for sig in (signal.SIGTERM, signal.SIGINT)} if in_main else {}
    )
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
