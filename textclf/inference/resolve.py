"""Which model file a `--model` value names: a file; a published model, NAME (its newest version) or NAME@N; or,
given nothing, the model of the newest finished run. One rule for every command that takes --model."""

from __future__ import annotations

from pathlib import Path

from db import open_db
from db.jobs import NAME_PATTERN
from db.models import get_version
from db.runs import latest_model_path
from textclf.errors import ArtifactError
from textclf.paths import run_db_path


def resolve_model(model: str | None, db_path: str | Path | None = None) -> Path:
    if model is None:
        latest = latest_model_path(open_db(run_db_path(db_path)))
        if not latest:
            raise ArtifactError(
                "no model given and no finished run in the run database: "
                "train one with 'textclf train CORPUS' or pass --model"
            )
        return Path(latest)
    if Path(model).exists():
        return Path(model)
    name, _, version = model.partition("@")
    if NAME_PATTERN.fullmatch(name) and (not version or version.isdigit()) and not model.endswith(".npz"):
        row = get_version(open_db(run_db_path(db_path)), name, int(version) if version else None)
        if row is not None:
            return Path(row["path"])
        raise ArtifactError(
            f"--model '{model}' is neither a model file nor a published model: pass a file, or a "
            "name from 'textclf jobs list' (NAME for its newest version, NAME@N for version N)"
        )
    return Path(model)  # a path that does not exist: load_model says so
