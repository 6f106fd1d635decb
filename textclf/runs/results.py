"""What a training run hands back and reports while it works, shared by the text and image runs."""

from __future__ import annotations

import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from textclf.paths import models_dir
from textclf.training import EpochStats


@dataclass
class TrainResult:
    run_id: int
    model_path: Path | None  # None in processes other than 0 of a multi-process run (they write nothing)
    eval_accuracy: float
    eval_kind: str  # "test" or "validation"
    train_accuracy: float
    n_train: int
    n_eval: int
    history: list[EpochStats]
    phases: dict[str, float]
    skipped: dict[str, int]
    non_utf8: int  # documents kept but decoded with a fallback encoding
    model: object = field(repr=False)  # inference.text_model.Model, or inference.image_model.ImageModel
    search: object = None  # SearchSummary: what the model search ran and chose (None where it does not apply)
    read_documents: int | None = None  # training documents this process read (several processes: its share)


@dataclass
class PlannedRun:
    """What `train(..., plan_only=True)` returns: the run that searched and planned, and its plan."""

    run_id: int
    plan: object  # textclf.training.plan.TrainingPlan
    settings: object  # textclf.settings.Settings, as the search chose them
    search: object  # textclf.training.search.SearchSummary, or None


@dataclass
class TrainEvent:
    """What `train` reports while it works: kind is "phase" (name starts; `description` where it is not the
    phase's usual one; the "train" phase with `views`, the networks that train one after another, where there are
    several), "search" (`done` of `total` search rounds finished), "steps" (`done` of the current epoch's `total`
    steps, where an epoch runs step by step), "progress" (within phase `name`: "read", `done` of `total` bytes of
    the file, 0 if unknown, and `documents` read; "vectorize", `done` of `total` documents) or "epoch" (stats
    ready; `view` and the epoch's number within it, `view_epoch`, where several views train)."""

    kind: str
    name: str = ""
    epoch: EpochStats | None = None
    total_epochs: int = 0
    done: int = 0
    total: int = 0
    documents: int = 0
    description: str = ""
    views: tuple[str, ...] = ()
    view: str = ""
    view_epoch: int = 0


class PhaseTimer:
    """`with phase("vectorize"):` reports the phase's start and adds its wall time to `seconds[name]`."""

    def __init__(self, report: Callable[[TrainEvent], None]):
        self.seconds: dict[str, float] = {}
        self.report = report

    @contextmanager
    def __call__(self, name: str, description: str = ""):
        self.report(TrainEvent("phase", name, description=description))
        start = time.perf_counter()
        yield
        self.seconds[name] = self.seconds.get(name, 0.0) + time.perf_counter() - start


def default_model_path(run_id: int) -> Path:
    return models_dir() / f"run-{run_id}.textclf.npz"
