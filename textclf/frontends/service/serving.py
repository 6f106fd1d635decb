"""The models being served: each published version loaded once, scored in batches gathered from concurrent
requests (on the host or the device), and swapped when a newer version is published."""

from __future__ import annotations

import asyncio
import logging
import os
import time
from typing import Any

from fastapi import HTTPException
from prometheus_client import CollectorRegistry, Gauge, Histogram

from db import models as published
from db import open_db
from textclf.errors import ArtifactError
from textclf.frontends.service.model_files import ModelFiles
from textclf.frontends.service.options import ServiceOptions
from textclf.inference.artifacts import load_model
from textclf.inference.predict import first_empty
from textclf.inference.text_model import Model
from textclf.paths import run_db_path

log = logging.getLogger("textclf.frontends.service")


class Scorer:
    """texts -> class probabilities for one model: vectorize on the host, run the network on the device
    (weights put there once, one compiled program per padded batch shape) or with NumPy on the host."""

    def __init__(self, model: Model, where: str):
        self.model = model
        self.images = model.kind == "image"
        if self.images:
            return  # its predict_proba runs the jitted CNN on the default device
        # The vectorizer's counters built now, not on the first request (a character view's imports scikit-learn,
        # which a model of words alone does without: ~1.5 s on a 2-core CPU).
        model.vectorizer.transform(["warm"])
        if where == "auto":
            from textclf.training import device_kind

            where = "device" if device_kind() == "gpu" else "host"
        self.on_device = where == "device"
        if self.on_device:
            from textclf.inference.device_scores import DeviceScores

            self.device_scores = DeviceScores(model.params)

    def __call__(self, texts: list):
        if self.images:  # decoded uint8 (H, W, C) arrays
            import numpy as np

            return self.model.predict_proba(np.stack(texts))
        if not self.on_device:
            return self.model.predict_proba(texts)
        return self.model.probabilities(self.device_scores(self.model.vectorizer.transform(texts)))


# Batches of at most this many texts are scored on the event loop itself (<= ~2 ms of it): the hop to a worker
# thread and back cost more than it let overlap, since tokenising holds the GIL either way (server CPU a
# one-document request under 50 clients: 0.223 -> 0.209 ms). Bigger batches, and images (whose network costs
# more), go to a thread, so the loop keeps reading requests while they are scored.
INLINE_BATCH = 64


class Batcher:
    """Collects concurrent requests for one model version and scores them together."""

    def __init__(self, model: Model, version: int, options: ServiceOptions, metrics: Metrics):
        self.model, self.version, self.options, self.metrics = model, version, options, metrics
        self.score = Scorer(model, options.score_on)
        self.queue: asyncio.Queue = asyncio.Queue()
        self.task = asyncio.get_running_loop().create_task(self._loop())

    async def predict(self, texts: list[str], timeout_s: float) -> Any:
        """(n, classes) probabilities of these texts; TimeoutError after timeout_s. A timer handle on the
        future rather than asyncio.wait_for, whose timeout context cost ~7% of a one-document request's
        server time (measured with py-spy under 50 concurrent clients)."""
        loop = asyncio.get_running_loop()
        future = loop.create_future()
        self.queue.put_nowait((texts, future))  # unbounded queue: never waits
        timer = loop.call_later(timeout_s, _expire, future)
        try:
            return await future
        finally:
            timer.cancel()

    async def _loop(self) -> None:
        while True:
            batch = [await self.queue.get()]
            size = len(batch[0][0])
            deadline = time.perf_counter() + self.options.batch_window_ms / 1000
            while size < self.options.max_batch:
                # Everything already waiting joins the batch; requests that arrive while it is scored form
                # the next one, so batches grow with load and a lone request waits for nothing.
                try:
                    item = self.queue.get_nowait()
                except asyncio.QueueEmpty:
                    remaining = deadline - time.perf_counter()
                    if remaining <= 0:
                        break
                    try:
                        item = await asyncio.wait_for(self.queue.get(), remaining)
                    except TimeoutError:
                        break
                batch.append(item)
                size += len(item[0])
            texts = [t for item, _ in batch for t in item]
            self.metrics.batch_size.observe(len(texts))
            try:
                if len(texts) <= INLINE_BATCH and not self.score.images:
                    probabilities = self.score(texts)
                else:
                    probabilities = await asyncio.to_thread(self.score, texts)
            except Exception as exc:  # hand the error to every waiting request
                for _, future in batch:
                    if not future.done():
                        future.set_exception(exc)
                continue
            start = 0
            for item, future in batch:
                if not future.done():
                    future.set_result(probabilities[start : start + len(item)])
                start += len(item)


def _expire(future: asyncio.Future) -> None:
    if not future.done():
        future.set_exception(TimeoutError())


class Metrics:
    def __init__(self):
        self.registry = CollectorRegistry()
        # Requests and their latency: prometheus-fastapi-instrumentator (create_app), labelled by route template
        # ("/v1/models/{name}:predict") and method, so every distinct URL does not add a series.
        self.batch_size = Histogram(
            "textclf_batch_size",
            "Instances scored together",
            registry=self.registry,
            buckets=(1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024),
        )
        self.model_version = Gauge("textclf_model_version", "Served version", ["model"], registry=self.registry)


class ServedModels:
    """The newest version of every model name, loaded on first use and swapped on a new one: the published models,
    and the model files the service was given (model_files.py; a file's name wins over a published one's)."""

    def __init__(self, options: ServiceOptions, metrics: Metrics):
        self.options, self.metrics = options, metrics
        self.db = open_db(run_db_path(options.db_path))
        self.files = ModelFiles(options.model_paths)
        self.batchers: dict[str, Batcher] = {}
        self.unloadable: set[tuple[str, int, str]] = set()  # (name, version, path) whose file failed to load
        self.checked: dict[tuple, str | None] = {}  # (path, size, mtime) -> why it does not load, or None

    def latest(self) -> dict[str, dict]:
        return {**published.latest_versions(self.db), **self.files.latest()}

    def versions(self, name: str, version: int | None = None) -> list[dict]:
        """The rows of a model's versions (oldest first), or of one version of it; 404 where there are none."""
        rows = self.files.versions(name) if name in self.files.served else published.versions(self.db, name)
        if version is not None:
            rows = [row for row in rows if row["version"] == version]
        if not rows:
            what = f"model '{name}'" if version is None else f"version {version} of model '{name}'"
            raise HTTPException(404, f"{what} does not exist: see GET /v1/models/{name}")
        return rows

    def batcher(self, name: str, version: int | None = None) -> Batcher:
        """The batcher of a model's newest version (swapped when a newer one is published), or of one pinned
        version (kept as it is)."""
        key = name if version is None else f"{name}@{version}"
        if key not in self.batchers:
            rows = self.versions(name, version)
            # The newest version whose file loads: a damaged file is the server's problem, not the client's,
            # and an older version serves meanwhile (a pinned version has no stand-in: 503).
            problems = []
            for row in reversed(rows):
                try:
                    model = load_model(row["path"])
                except ArtifactError as exc:
                    log.warning("model %s v%s cannot be loaded: %s", name, row["version"], exc)
                    problems.append(str(exc))
                    continue
                self._install(key, row, model)
                break
            else:
                raise HTTPException(503, f"model '{name}' cannot be loaded on the server ({problems[0]}); republish it")
        return self.batchers[key]

    def load_problem(self, row: dict) -> str | None:
        """Why a version's file cannot be served (None: it loads), each file checked once a change: a status
        that says AVAILABLE must not be believed before the file is."""
        served = self.batchers.get(row["name"])
        if served is not None and served.version == row["version"]:
            return None  # serving it now
        try:
            status = os.stat(row["path"]) if row["path"] else None
        except OSError:
            status = None
        if status is None:
            return f"model file '{row['path']}' is missing"
        key = (row["path"], status.st_size, status.st_mtime_ns)
        if key not in self.checked:
            try:
                load_model(row["path"])
                self.checked[key] = None
            except ArtifactError as exc:
                self.checked[key] = str(exc)
        return self.checked[key]

    def _install(self, name: str, row: dict, model: Model) -> None:
        # One assignment (on the event loop): requests that already took the old batcher finish on it, and
        # its gathering task is stopped once no request can still be waiting on it.
        old = self.batchers.get(name)
        self.batchers[name] = Batcher(model, row["version"], self.options, self.metrics)
        self.metrics.model_version.labels(name).set(row["version"])
        if old is not None:
            asyncio.get_running_loop().call_later(self.options.timeout_s + 1, old.task.cancel)

    async def watch(self) -> None:
        while True:
            await asyncio.sleep(self.options.reload_seconds)
            try:
                self.files.refresh()
                latest = self.latest()
            except Exception as exc:  # a locked DB: keep serving the current versions, look again next time
                log.warning("model reload failed, still serving the current versions: %s", exc)
                continue
            for name, row in latest.items():
                current = self.batchers.get(name)  # the newest-version batcher; pinned ones stay
                # An empty path: the daemon is still moving the file into place (it sets the path after).
                attempt = (name, row["version"], row["path"])
                if (
                    current is None
                    or row["version"] <= current.version
                    or not row["path"]
                    or attempt in self.unloadable
                ):
                    continue
                try:
                    self._install(name, row, await asyncio.to_thread(load_model, row["path"]))
                except Exception as exc:  # a damaged file: the current version keeps serving; said once
                    self.unloadable.add(attempt)
                    log.warning(
                        "model %s v%s cannot be loaded, still serving v%s: %s",
                        name,
                        row["version"],
                        current.version,
                        exc,
                    )


async def score(models: ServedModels, name: str, version: int | None, instances: list) -> tuple[Batcher, Any]:
    """-> (the batcher that scored them, (n, classes) probabilities) of these instances: texts, or base64 image
    files for an image model (decoded here, so one bad image fails its own request, not the batch)."""
    options = models.options
    if len(instances) > options.max_instances:
        raise HTTPException(413, f"{len(instances)} instances, over the limit of {options.max_instances}")
    batcher = models.batcher(name, version)
    empty = first_empty(instances)
    if empty is not None:  # as `textclf predict` refuses an empty document
        raise HTTPException(400, f"instance {empty} is empty: there is nothing to classify")
    if batcher.score.images:
        from textclf.inference.image_model import decode_base64_image

        instances = [
            decode_base64_image(text, batcher.model.image_shape, f"instance {i}") for i, text in enumerate(instances)
        ]
    try:
        return batcher, await batcher.predict(instances, options.timeout_s)
    except TimeoutError:
        raise HTTPException(504, too_slow(options))


def too_slow(options: ServiceOptions) -> str:
    return f"prediction took longer than {options.timeout_s} s"
