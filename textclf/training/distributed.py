"""Joining several processes (hosts) into one JAX runtime: `jax.distributed.initialize`, NCCL between GPUs.

Every process runs the same `textclf train` command; together their devices form one data-parallel mesh
(textclf/training/data_parallel.py). Decision: every process reads the corpus and fits the same vocabulary (the fit is
deterministic for a corpus and seed), then feeds only the slices of each global batch that its own devices
own. This keeps "one shared vocabulary" exact without shipping term lists between hosts; the price is that
vectorization is repeated on each host (seconds for news4; see BENCHMARKS.md) rather than split. Only process
0 writes the run record and the model file.

Where the coordinates come from, first match wins:
  1. --coordinator HOST:PORT --num-processes N --process-id I (the CLI);
  2. TEXTCLF_COORDINATOR, TEXTCLF_NUM_PROCESSES, TEXTCLF_PROCESS_ID in the environment;
  3. a SLURM job step with more than one task (SLURM_NTASKS > 1): jax's own SLURM detection.
Nothing found: one process, nothing to initialize.
"""

from __future__ import annotations

import os
import sys

from textclf.errors import SettingsError


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
        return "slurm"
    return None


def initialize(coordinator: str | None = None, num_processes: int | None = None,
               process_id: int | None = None) -> bool:
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
        raise SettingsError(
            f"process id {process_id} is outside 0..{num_processes - 1}: number the processes from 0"
        )
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
