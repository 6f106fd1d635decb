"""Job submission over HTTP: POST /v1/jobs (bearer token, corpora under the data root), GET /v1/jobs/{id}."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fastapi import APIRouter, Depends, HTTPException, Request
from pydantic import BaseModel, Field

from db import jobs as job_queue
from textclf.frontends.bearer import bearer_matches
from textclf.frontends.service.serving import ServedModels
from textclf.frontends.service.tfserving import VersionNumber
from textclf.settings import Settings


class JobRequest(BaseModel):
    corpus: str
    name: str | None = None
    test_corpus: str | None = None
    settings: dict[str, Any] = Field(default_factory=dict)


def require_token(request: Request) -> None:
    if not request.app.state.options.token:
        raise HTTPException(403, "job submission is off: start the service with --token (or TEXTCLF_TOKEN)")
    if not bearer_matches(request.headers.get("authorization", ""), request.app.state.options.token):
        raise HTTPException(401, "missing or wrong bearer token: send 'Authorization: Bearer <token>'")


def _corpus_paths(body: JobRequest, data_root: Path | None) -> list[Path]:
    if data_root is None:
        raise HTTPException(403, "job submission needs --data-root: corpora must lie under it")
    root = data_root.resolve()
    for given in (body.corpus, body.test_corpus):
        if given and "\x00" in given:
            raise HTTPException(400, "a corpus path holds a NUL byte: send the path as it is on the server")
    # a relative path is under the data root (the one folder a client can name), not the server's working folder
    paths = [(root / p).resolve() for p in (body.corpus, body.test_corpus) if p]
    for path in paths:
        if not path.is_relative_to(root):
            raise HTTPException(400, f"corpus '{path}' is outside the data root '{root}'")
        if not path.exists():
            raise HTTPException(400, f"corpus '{path}' does not exist")
    return paths


router = APIRouter(tags=["Training jobs"])


def _models(request: Request) -> ServedModels:
    return request.app.state.models


@router.post("/v1/jobs", status_code=201, dependencies=[Depends(require_token)])
async def submit_job(request: Request, body: JobRequest) -> dict:
    paths = _corpus_paths(body, request.app.state.options.data_root)
    settings = Settings.from_user(body.settings)  # strict; left out: the model's defaults
    db = _models(request).db
    job_id = job_queue.submit(
        db,
        str(paths[0]),
        settings.to_dict(),
        body.name or paths[0].stem,
        str(paths[1]) if len(paths) > 1 else None,
        data_root=str(request.app.state.options.data_root.resolve()),
    )
    return job_queue.get(db, job_id)


@router.get("/v1/jobs/{job_id}")
async def get_job(request: Request, job_id: VersionNumber) -> dict:
    return job_queue.get(_models(request).db, job_id)
