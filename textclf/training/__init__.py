"""Training: the networks' steps, the one epoch loop, the plan, the search (its own front door, `search/`).

The front door, what runs/, the faces and the service use:
- the plan: draft_plan -> TrainingPlan (completed once vectorizing is done), Machine, held_out_count and the plan's
  constants;
- the trainers: fit_network (one network), fit_ensemble / fit_members / fit_rates (K networks side by side or one
  after another), side_by_side_backend (the K-network step's rule), fit_cnn; what they are handed (TrainingRows,
  Watch, mean_one) and report (EpochStats, TrainingStopped, Terminated); EarlyStopping; Checkpointer;
- the device: BackendWarmup and the backend rules, the resident training set (resident_rows, resident_from_parts,
  host_rows, ResidentRows), held-out scoring on the device;
- several processes and devices: initialize, is_primary, summed, exchange_arrays, data_mesh, RowShare.
Inside: steps/ (one network's step, XLA's and the Pallas kernels', K networks side by side, the optimizers),
parallel/ (the batch or W1 split across devices, several processes), epochs.py (the one epoch loop), network.py (one
network's trainer), ensembles.py (K networks of one view: an ensemble, the rate candidates), plan.py, device_data.py,
backends.py, checkpoint.py, cnn.py; the search's rounds in search/rounds.py.

The names load on first use: importing the package must not import JAX, which would keep a run from forking its
vectorizing workers (pipelines/workers.py), and the search's host work runs while JAX starts.
"""

import importlib

_HOMES = {
    "BackendWarmup": "backends",
    "Checkpointer": "checkpoint",
    "EarlyStopping": "epochs",
    "EpochStats": "events",
    "MULTI_LABEL_PATIENCE": "plan",
    "Machine": "plan",
    "REFIT_HELD_OUT_FRACTION": "plan",
    "ResidentRows": "device_data",
    "RowShare": "parallel.data",
    "Terminated": "events",
    "TrainingPlan": "plan",
    "TrainingRows": "inputs",
    "TrainingStopped": "events",
    "Watch": "inputs",
    "choose_backend": "backends",
    "data_mesh": "parallel.data",
    "device_description": "backends",
    "device_kind": "backends",
    "draft_plan": "plan",
    "exchange_arrays": "parallel.processes",
    "expected_platform": "backends",
    "fit_cnn": "cnn",
    "fit_ensemble": "ensembles",
    "fit_members": "ensembles",
    "fit_network": "network",
    "fit_rates": "ensembles",
    "held_out_count": "plan",
    "held_out_scores_device": "network",
    "host_rows": "device_data",
    "initialize": "parallel.processes",
    "is_primary": "parallel.processes",
    "mean_one": "inputs",
    "resident_from_parts": "device_data",
    "resident_rows": "device_data",
    "side_by_side_backend": "ensembles",
    "stacked_is_faster": "ensembles",
    "summed": "parallel.processes",
}

__all__ = sorted(_HOMES)


def __getattr__(name: str):
    if name not in _HOMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{_HOMES[name]}"), name)
