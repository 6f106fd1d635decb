"""Joining several processes (hosts) into one JAX runtime: `jax.distributed.initialize`, NCCL between GPUs.

Every process runs the same `textclf train` command; together their devices form one data-parallel mesh
(textclf/training/parallel/data.py). Each process reads only its share of the corpus (a contiguous part in
reading order, pipelines/corpus.py) and of the test corpus, counts its own documents' terms, and the processes
agree on one vocabulary, IDF, selection and naive Bayes weights by exchanging counts and per-class sums through
the runtime (`exchange_arrays`; pipelines/vectorize.fit_vectorizer_shared), never documents. Each global batch
is the one-process run's (the same order over all documents): every process feeds the rows of it that it holds,
so N processes train the one-process model up to float summation order. Only process 0 writes the run record
and the model file.

Where the coordinates come from, first match wins:
  1. --coordinator HOST:PORT --num-processes N --process-id I (the CLI);
  2. TEXTCLF_COORDINATOR, TEXTCLF_NUM_PROCESSES, TEXTCLF_PROCESS_ID in the environment;
  3. a SLURM job step with more than one task (SLURM_NTASKS > 1): jax's own SLURM detection.
Nothing found: one process, nothing to initialize.
"""

from __future__ import annotations

import io
import os
import sys

import numpy as np

from textclf.errors import SettingsError


SLURM_COORDINATES = ("SLURM_JOB_ID", "SLURM_STEP_NODELIST", "SLURM_LOCALID")


def coordinates_from_env(env: dict | None = None) -> tuple[str, int, int] | None | str:
    """(coordinator, num_processes, process_id) from TEXTCLF_* variables, "slurm" for a multi-task SLURM
    step, None for a single process."""
    env = os.environ if env is None else env
    if env.get("TEXTCLF_COORDINATOR"):
        try:
            return env["TEXTCLF_COORDINATOR"], int(env["TEXTCLF_NUM_PROCESSES"]), int(env["TEXTCLF_PROCESS_ID"])
        except (KeyError, ValueError):
            raise SettingsError(
                "TEXTCLF_COORDINATOR is set but TEXTCLF_NUM_PROCESSES / TEXTCLF_PROCESS_ID are missing or not "
                "integers: set all three"
            ) from None
    tasks = env.get("SLURM_NTASKS", "1") or "1"
    if not tasks.strip().isdigit():
        raise SettingsError(f"SLURM_NTASKS={tasks!r} is not a task count: run under srun, or unset it")
    if int(tasks) > 1 and env.get("SLURM_PROCID") is not None:
        # Only inside a job step (srun) do the other tasks exist: a batch script's own shell has SLURM_NTASKS too,
        # and there JAX would wait for tasks that never come, then end the process from C++.
        if not (env.get("SLURM_STEP_ID") or env.get("SLURM_STEPID")):
            raise SettingsError(
                f"SLURM_NTASKS={tasks} but this is not a job step of those tasks: start it with "
                "srun, or unset SLURM_NTASKS to train in this process alone"
            )
        # what JAX's SLURM detection reads to find the coordinator (jax/_src/clusters/slurm_cluster.py)
        missing = [name for name in SLURM_COORDINATES if not env.get(name)]
        if missing:
            raise SettingsError(
                f"a SLURM job step of {tasks} tasks without {', '.join(missing)}: start it with "
                "srun (which sets them), or set TEXTCLF_COORDINATOR, TEXTCLF_NUM_PROCESSES and "
                "TEXTCLF_PROCESS_ID"
            )
        return "slurm"
    return None


def initialize(coordinator: str | None = None, num_processes: int | None = None, process_id: int | None = None) -> bool:
    """Join the distributed runtime if this is one of several processes; must run before JAX touches a device.
    Returns True when several processes were joined. JAX is imported only to join (see is_primary)."""
    given = [coordinator is not None, num_processes is not None, process_id is not None]
    if any(given) and not all(given):
        raise SettingsError("--coordinator, --num-processes and --process-id go together: pass all three")
    where = (coordinator, num_processes, process_id) if all(given) else coordinates_from_env()
    if where is None:
        return False
    import jax

    if where == "slurm":
        jax.distributed.initialize()
        return True
    coordinator, num_processes, process_id = where
    if num_processes < 1 or not 0 <= process_id < num_processes:
        raise SettingsError(f"process id {process_id} is outside 0..{num_processes - 1}: number the processes from 0")
    if num_processes == 1:
        return False
    if ":" not in coordinator:
        raise SettingsError(f"coordinator '{coordinator}' needs a port: pass HOST:PORT, e.g. 10.0.0.1:12345")
    jax.distributed.initialize(coordinator, num_processes, process_id)
    return True


def is_primary() -> bool:
    """True in process 0 (the only one that writes the run record and the model file) and when alone."""
    # Without JAX imported this process cannot have joined a runtime; asking JAX would start its backend now,
    # before textclf/runs/run.py forks its vectorizing workers (pipelines/workers.py).
    if "jax" not in sys.modules:
        return True
    import jax

    return jax.process_index() == 0


def exchange_arrays(arrays: dict[str, np.ndarray]) -> list[dict[str, np.ndarray]]:
    """Every process's arrays (numbers, fixed-width strings), in process order, this process's included: one
    all-gather of their bytes through JAX's distributed runtime (multihost_utils.process_allgather). Every
    process must call it at the same point; alone, it returns [arrays]."""
    import jax

    if jax.process_count() == 1:
        return [dict(arrays)]
    from jax.experimental import multihost_utils

    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    payload = np.frombuffer(buffer.getvalue(), np.uint8)
    sizes = np.asarray(multihost_utils.process_allgather(np.array([payload.size], np.int32))).reshape(-1)
    padded = np.zeros(int(sizes.max()), np.uint8)
    padded[: payload.size] = payload
    gathered = np.asarray(multihost_utils.process_allgather(padded))  # (processes, longest)
    received = []
    for row, size in zip(gathered, sizes):
        with np.load(io.BytesIO(row[:size].tobytes()), allow_pickle=False) as loaded:  # never unpickle
            received.append({name: loaded[name] for name in loaded.files})
    return received


def summed(*values: int) -> tuple[int, ...]:
    """Each value added up over every process (alone: as given)."""
    shared = exchange_arrays({"values": np.array(values, np.int64)})
    return tuple(sum(int(part["values"][i]) for part in shared) for i in range(len(values)))
