"""`textclf serve`: predictions and job submission over HTTP (FastAPI on uvicorn).

Endpoints (OpenAPI docs at /docs):
  POST /v1/models/{name}:predict  {"instances": ["text", ...], "top_k": 3} -> label + top-k per instance
                                  (image models: each instance is an image file's bytes, base64-encoded)
  POST /v1/models/{name}/versions/{version}:predict   the same, from one pinned version (TF Serving's path)
  GET  /v1/models, GET /v1/models/{name}     published versions, metrics, run ids
  KServe v2 (Open Inference Protocol): GET /v2/health/live, /v2/health/ready, /v2/models/{name}[/versions/{v}],
  /v2/models/{name}/ready; POST /v2/models/{name}[/versions/{v}]/infer with one BYTES input of texts ->
  outputs "label" (BYTES, one per text) and "probabilities" (FP32, texts x classes, in the order of the
  metadata's parameters.labels)
  POST /v1/jobs {"corpus": ..., "name": ..., "settings": {...}}, GET /v1/jobs/{id}
  GET  /health/live, /health/ready, /metrics (Prometheus)
Serving: concurrent predict requests for one model are scored together (small batches on the event loop, larger
ones in a worker thread), the network on the host or the device (`score_on`, see there): whatever is queued when
the previous batch finishes (up to `max_batch` instances), optionally waiting `batch_window_ms` for more. A valid
`:predict` request is answered by PlainPredict in front of FastAPI; everything else goes through FastAPI's routes.
Every `reload_seconds` (1 s) the service looks for newly published versions and swaps the model object;
requests already holding the old one finish on it.
Security: binds 127.0.0.1 unless told otherwise; a bearer token guards job submission, and every endpoint
when bound to a non-loopback address; job corpora must lie under the data root; bodies over `max_body_bytes`
and requests with more than `max_instances` texts get 413; a prediction that takes longer than
`timeout_s` gets 504. Models are .npz files loaded without pickle; request bodies are JSON only.
"""

from __future__ import annotations

import asyncio
import hmac
import json
import logging
import math
import os
import re
import time
from contextlib import asynccontextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Annotated, Any, Callable

from fastapi import Depends, FastAPI, HTTPException, Request
from fastapi.exceptions import RequestValidationError
from fastapi import Path as FastPath
from fastapi.responses import JSONResponse, PlainTextResponse
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Gauge, Histogram, generate_latest
from prometheus_fastapi_instrumentator import Instrumentator
from prometheus_fastapi_instrumentator import metrics as instrumentation
from pydantic import BaseModel, Field
from prometheus_fastapi_instrumentator.metrics import Info

from db import jobs as job_queue
from db import models as published
from textclf.paths import run_db_path
from db import open_db
from textclf.inference.artifacts import load_model
from textclf.inference.text_model import Model
from textclf.settings import Settings
from textclf.errors import USER_ERRORS, ArtifactError, SettingsError
from textclf.inference.predict import top_labels

log = logging.getLogger("textclf.frontends.service")


@dataclass
class ServiceOptions:
    db_path: Path | None = None
    token: str | None = None
    require_token_everywhere: bool = False  # set when binding a non-loopback address
    data_root: Path | None = None  # job corpora must lie below it (None: no job submission over HTTP)
    max_body_bytes: int = 1_000_000
    max_instances: int = 1000
    max_batch: int = 512
    batch_window_ms: float = 0.0  # 0: take what is queued now (batches grow by themselves under load)
    timeout_s: float = 10.0
    reload_seconds: float = 1.0
    # "host": NumPy; "device": the network through JAX on its default device; "auto": device when JAX sees
    # a GPU. Vectorizing stays on the host either way. Host is the default because it measured faster for
    # this network on the H200 machine (8 workers, batched: 47,523 vs 21,637 docs/s; one document: p50 3.8 vs
    # 4.6 ms): a ~40-term document times a 128-wide layer is microseconds of NumPy, less than a GPU dispatch.
    score_on: str = "host"

    def __post_init__(self) -> None:
        if self.score_on not in ("host", "device", "auto"):
            raise SettingsError(f"--score-on must be host, device or auto, not '{self.score_on}'")
        if not (self.reload_seconds > 0 and math.isfinite(self.reload_seconds)):
            raise SettingsError(f"--reload-seconds must be a positive number of seconds, not {self.reload_seconds}")

    @classmethod
    def binding(cls, host: str, token: str | None, **options) -> "ServiceOptions":
        """The options for a service bound to `host`: beyond loopback every endpoint needs the token, and
        there is no such service without one (it would take jobs from anyone who can reach the port)."""
        public = not _is_loopback(host)
        if public and not token:
            raise SettingsError(f"binding {host} exposes the service beyond this machine: set --token or "
                                "TEXTCLF_TOKEN")
        return cls(token=token, require_token_everywhere=public, **options)


class PredictRequest(BaseModel):
    instances: list[str] = Field(min_length=1)
    top_k: int = Field(default=3, ge=1, le=100)


class InferTensor(BaseModel):
    name: str
    shape: list[int] = Field(max_length=8)
    datatype: str
    data: list[str]


class InferRequest(BaseModel):
    """KServe v2 inference request: one BYTES input of texts (or base64 images for an image model)."""
    id: str | None = None
    inputs: list[InferTensor] = Field(min_length=1)


# A version number in a URL: 1 up to SQLite's largest integer (a larger number would overflow its query).
VersionNumber = Annotated[int, FastPath(ge=1, le=2**63 - 1)]


class JobRequest(BaseModel):
    corpus: str
    name: str | None = None
    test_corpus: str | None = None
    settings: dict[str, Any] = Field(default_factory=dict)


class _Scorer:
    """texts -> class probabilities for one model: vectorize on the host, run the network on the device
    (weights put there once, one compiled program per padded batch shape) or with NumPy on the host."""

    def __init__(self, model: Model, where: str):
        self.model = model
        self.images = hasattr(model, "image_shape")  # an ImageModel (textclf/inference/image_model.py)
        if self.images:
            return  # its predict_proba runs the jitted CNN on the default device
        # The vectorizer's counters built now, not on the first request (a character view's imports scikit-learn,
        # which a model of words alone does without: ~1.5 s on a 2-core CPU).
        model.vectorizer.transform(["warm"])
        if where == "auto":
            from textclf.training.backends import device_kind

            where = "device" if device_kind() == "gpu" else "host"
        self.on_device = where == "device"
        if self.on_device:
            import jax

            from textclf.models.mlp import Params
            from textclf.training.loop import _warm_scores

            self.params = Params(*jax.device_put(tuple(model.params)))
            self.compiled = _warm_scores()

    def __call__(self, texts: list):
        if self.images:  # decoded uint8 (H, W, C) arrays
            import numpy as np

            return self.model.predict_proba(np.stack(texts))
        if not self.on_device:
            return self.model.predict_proba(texts)
        from textclf.inference.text_model import softmax
        from textclf.training.loop import predict_scores_device

        matrix = self.model.vectorizer.transform(texts)
        return softmax(predict_scores_device(self.params, matrix, self.compiled))


# Batches of at most this many texts are scored on the event loop itself (<= ~2 ms of it): the hop to a worker
# thread and back cost more than it let overlap, since tokenising holds the GIL either way (server CPU a
# one-document request under 50 clients: 0.223 -> 0.209 ms). Bigger batches, and images (whose network costs
# more), go to a thread, so the loop keeps reading requests while they are scored.
INLINE_BATCH = 64


class _Batcher:
    """Collects concurrent requests for one model version and scores them together."""

    def __init__(self, model: Model, version: int, options: ServiceOptions, metrics: "_Metrics"):
        self.model, self.version, self.options, self.metrics = model, version, options, metrics
        self.score = _Scorer(model, options.score_on)
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
                    except asyncio.TimeoutError:
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
                    future.set_result(probabilities[start:start + len(item)])
                start += len(item)


def _expire(future: asyncio.Future) -> None:
    if not future.done():
        future.set_exception(TimeoutError())


class _Metrics:
    def __init__(self):
        self.registry = CollectorRegistry()
        # Requests and their latency: prometheus-fastapi-instrumentator (create_app), labelled by route template
        # ("/v1/models/{name}:predict") and method, so every distinct URL does not add a series.
        self.batch_size = Histogram("textclf_batch_size", "Instances scored together", registry=self.registry,
                                    buckets=(1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024))
        self.model_version = Gauge("textclf_model_version", "Served version", ["model"], registry=self.registry)


class _Models:
    """The newest published version of every model name, loaded on first use and swapped on publication."""

    def __init__(self, options: ServiceOptions, metrics: _Metrics):
        self.options, self.metrics = options, metrics
        self.db = open_db(run_db_path(options.db_path))
        self.batchers: dict[str, _Batcher] = {}
        self.unloadable: set[tuple[str, int, str]] = set()  # (name, version, path) whose file failed to load

    def latest(self) -> dict[str, dict]:
        return published.latest_versions(self.db)

    def batcher(self, name: str, version: int | None = None) -> _Batcher:
        """The batcher of a model's newest version (swapped when a newer one is published), or of one pinned
        version (kept as it is)."""
        key = name if version is None else f"{name}@{version}"
        if key not in self.batchers:
            rows = published.versions(self.db, name)
            if version is not None:
                rows = [row for row in rows if row["version"] == version]
            if not rows:
                what = f"model '{name}'" if version is None else f"version {version} of model '{name}'"
                raise HTTPException(404, f"{what} does not exist: see GET /v1/models/{name}")
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
                raise HTTPException(503, f"model '{name}' cannot be loaded on the server ({problems[0]}); "
                                         "republish it")
        return self.batchers[key]

    def _install(self, name: str, row: dict, model: Model) -> None:
        # One assignment (on the event loop): requests that already took the old batcher finish on it, and
        # its gathering task is stopped once no request can still be waiting on it.
        old = self.batchers.get(name)
        self.batchers[name] = _Batcher(model, row["version"], self.options, self.metrics)
        self.metrics.model_version.labels(name).set(row["version"])
        if old is not None:
            asyncio.get_running_loop().call_later(self.options.timeout_s + 1, old.task.cancel)

    async def watch(self) -> None:
        while True:
            await asyncio.sleep(self.options.reload_seconds)
            try:
                latest = self.latest()
            except Exception as exc:  # a locked DB: keep serving the current versions, look again next time
                log.warning("model reload failed, still serving the current versions: %s", exc)
                continue
            for name, row in latest.items():
                current = self.batchers.get(name)  # the newest-version batcher; pinned ones stay
                # An empty path: the daemon is still moving the file into place (it sets the path after).
                attempt = (name, row["version"], row["path"])
                if current is None or row["version"] <= current.version or not row["path"] or attempt in self.unloadable:
                    continue
                try:
                    self._install(name, row, await asyncio.to_thread(load_model, row["path"]))
                except Exception as exc:  # a damaged file: the current version keeps serving; said once
                    self.unloadable.add(attempt)
                    log.warning("model %s v%s cannot be loaded, still serving v%s: %s", name, row["version"],
                                current.version, exc)


OPTIONS_ENV = "TEXTCLF_SERVICE_OPTIONS"


def app_from_env() -> "PlainPredict":
    """App factory for `textclf serve --workers N`: uvicorn starts N processes, each building its own app
    (own model copies and batchers) from the options the parent put in the environment as JSON."""
    raw = json.loads(os.environ[OPTIONS_ENV])
    for key in ("db_path", "data_root"):
        raw[key] = Path(raw[key]) if raw.get(key) else None
    return create_app(ServiceOptions(**raw))


def options_to_env(options: ServiceOptions) -> str:
    return json.dumps({k: str(v) if isinstance(v, Path) else v for k, v in asdict(options).items()})


def _is_loopback(host: str) -> bool:
    return host in ("127.0.0.1", "localhost", "::1") or host.startswith("127.")


class Guard:
    """ASGI middleware in front of every route: the bearer token where every endpoint needs it, and the body
    limit, on the Content-Length header and on the bytes as they arrive (a chunked body has no header), so an
    oversized body is refused with 413 and never held whole. Plain ASGI, not Starlette's BaseHTTPMiddleware,
    which costs every request an extra task and stream (measured: BENCHMARKS.md, "Daemon and service")."""

    def __init__(self, app, max_bytes: int, authorized: Callable[[dict], bool] | None):
        self.app, self.max_bytes, self.authorized = app, max_bytes, authorized

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        if self.authorized is not None and not scope["path"].startswith("/health") and not self.authorized(scope):
            return await JSONResponse({"detail": "missing or wrong bearer token"}, status_code=401)(scope, receive, send)
        length = next((value for name, value in scope["headers"] if name == b"content-length"), b"0")
        if int(length or 0) > self.max_bytes:
            response = JSONResponse({"detail": f"request body over {self.max_bytes} bytes"}, status_code=413)
            return await response(scope, receive, send)
        received = 0

        async def limited_receive():
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.max_bytes:
                    # FastAPI passes an HTTPException raised while it reads the body on as the response.
                    raise HTTPException(413, f"request body over {self.max_bytes} bytes")
            return message

        await self.app(scope, limited_receive, send)


class PlainPredict:
    """The outermost ASGI app: answers POST /v1/models/{name}:predict itself when the request is a plain valid
    one (token where needed, body within the limit, a valid body for a text model the service has), and hands
    everything else, that request's body replayed, to the FastAPI app, whose routes document the API and answer
    every error. Why: FastAPI's and Starlette's per-request layers (middleware, routing, dependency solving,
    serialisation) were about two thirds of a one-document request's server CPU, and one-document clients are
    the service's hardest load (BENCHMARKS.md, "Daemon and service"). The answer is the FastAPI route's JSON
    (tests/textclf/test_service.py compares them) and is counted in the same metric series."""

    PATH = re.compile(r"/v1/models/([^/]+):predict")
    TEMPLATE = "/v1/models/{name}:predict"
    HEADERS = [(b"content-type", b"application/json")]

    def __init__(self, app: FastAPI, answer: Callable, record: Callable[[int, float], None], max_bytes: int,
                 authorized: Callable[[dict], bool] | None):
        self.app, self.answer, self.record, self.max_bytes, self.authorized = app, answer, record, max_bytes, authorized

    async def __call__(self, scope, receive, send):
        match = self.PATH.fullmatch(scope["path"]) if scope["type"] == "http" and scope["method"] == "POST" else None
        if match is None or (self.authorized is not None and not self.authorized(scope)):
            return await self.app(scope, receive, send)
        began = time.perf_counter()
        received, size = [], 0
        while size <= self.max_bytes:
            message = await receive()
            received.append(message)
            size += len(message.get("body", b""))
            if message["type"] != "http.request" or not message.get("more_body", False):
                break
        result = None
        if size <= self.max_bytes and received[-1]["type"] == "http.request" and not received[-1].get("more_body"):
            result = await self.answer(match[1], b"".join(m.get("body", b"") for m in received))
        if result is None:
            pending = iter(received)

            async def replay():
                return next(pending, None) or await receive()

            return await self.app(scope, replay, send)
        status, payload = result
        # As Starlette's JSONResponse renders it.
        content = json.dumps(payload, ensure_ascii=False, allow_nan=False, indent=None, separators=(",", ":")).encode()
        await send({"type": "http.response.start", "status": status,
                    "headers": [*self.HEADERS, (b"content-length", str(len(content)).encode())]})
        await send({"type": "http.response.body", "body": content})
        self.record(status, time.perf_counter() - began)


def create_app(options: ServiceOptions) -> "PlainPredict":
    """The service as an ASGI app: PlainPredict in front of the FastAPI app (`.app`)."""
    metrics = _Metrics()
    state: dict[str, _Models] = {}

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        state["models"] = _Models(options, metrics)
        watcher = asyncio.get_running_loop().create_task(state["models"].watch())
        yield
        watcher.cancel()

    # FastAPI's OpenTelemetry hooks off: the service exports Prometheus metrics (/metrics), and the hooks' check
    # for configured providers ran on every request (~4% of a one-document request's server CPU).
    app = FastAPI(title="textclf", version="1", lifespan=lifespan,
                  telemetry={"tracing": False, "metrics": False, "logs": False})

    def authorized(request: Request) -> bool:
        if not options.token:
            return False
        given = request.headers.get("authorization", "")
        return hmac.compare_digest(given.encode(), f"Bearer {options.token}".encode())

    def require_token(request: Request) -> None:
        if not options.token:
            raise HTTPException(403, "job submission is off: start the service with --token (or TEXTCLF_TOKEN)")
        if not authorized(request):
            raise HTTPException(401, "missing or wrong bearer token: send 'Authorization: Bearer <token>'")

    def scope_authorized(scope: dict) -> bool:
        return authorized(Request(scope))

    app.add_middleware(Guard, max_bytes=options.max_body_bytes,
                       authorized=scope_authorized if options.require_token_everywhere else None)
    # Requests by route template, method and status, and their latency by template and method. Not the library's
    # default set, whose request and response size histograms parse every request's headers once more: ~3% of
    # a one-document request's server CPU.
    instrumentator = Instrumentator(registry=metrics.registry, should_group_status_codes=False,
                                    should_group_untemplated=True, excluded_handlers=["/metrics"])
    recorders = [instrumentation.requests(metric_namespace="textclf", registry=metrics.registry),
                 instrumentation.latency(metric_namespace="textclf", registry=metrics.registry)]
    instrumentator.add(*recorders)
    instrumentator.instrument(app)

    def record_hot_request(status: int, seconds: float) -> None:
        """A request PlainPredict answered, counted by the instrumentator's own recorders (same series)."""
        info = Info(request=None, response=None, method="POST", modified_handler=PlainPredict.TEMPLATE,
                    modified_status=str(status), modified_duration=seconds)
        for record in recorders:
            record(info)

    async def user_error(request: Request, exc: Exception):
        return JSONResponse({"detail": str(exc)}, status_code=404 if isinstance(exc, job_queue.JobNotFound) else 400)

    for error_class in USER_ERRORS:
        app.add_exception_handler(error_class, user_error)

    async def invalid_body(request: Request, exc: RequestValidationError):
        # FastAPI's own handler echoes each wrong value back, and a body holding NaN or Infinity (which Python's
        # JSON parser takes) then fails to serialise: a 500 for a client's mistake. The place and the reason are
        # what the client needs.
        errors = [{"loc": list(error.get("loc", ())), "msg": error.get("msg", ""), "type": error.get("type", "")}
                  for error in exc.errors()]
        return JSONResponse({"detail": errors}, status_code=422)

    app.add_exception_handler(RequestValidationError, invalid_body)

    @app.get("/health/live")
    async def live() -> dict:
        return {"status": "ok"}

    @app.get("/health/ready")
    async def ready() -> dict:
        try:
            names = state["models"].latest()
        except USER_ERRORS as exc:
            raise HTTPException(503, str(exc))
        return {"status": "ready", "models": len(names)}

    @app.get("/metrics")
    async def metrics_endpoint() -> PlainTextResponse:
        return PlainTextResponse(generate_latest(metrics.registry), media_type=CONTENT_TYPE_LATEST)

    def public(row: dict) -> dict:
        """A published version as the API shows it: no server file paths."""
        return {k: v for k, v in row.items() if k != "path"}

    @app.get("/v1/models")
    async def list_models() -> dict:
        return {"models": [public(row) for row in state["models"].latest().values()]}

    @app.get("/v1/models/{name}")
    async def model_versions(name: str) -> dict:
        rows = published.versions(state["models"].db, name)
        if not rows:
            raise HTTPException(404, f"model '{name}' does not exist: see GET /v1/models")
        return {"name": name, "versions": [public(row) for row in rows]}

    too_slow = f"prediction took longer than {options.timeout_s} s"

    async def score(name: str, version: int | None, instances: list[str]) -> tuple[_Batcher, Any]:
        """-> (the batcher that scored them, (n, classes) probabilities) of these instances."""
        if len(instances) > options.max_instances:
            raise HTTPException(413, f"{len(instances)} instances, over the limit of {options.max_instances}")
        batcher = state["models"].batcher(name, version)
        if batcher.score.images:  # decoded here, so one bad image fails its own request, not the batch
            from textclf.inference.image_model import decode_base64_image

            instances = [decode_base64_image(text, batcher.model.image_shape, f"instance {i}")
                         for i, text in enumerate(instances)]
        try:
            return batcher, await batcher.predict(instances, options.timeout_s)
        except TimeoutError:
            raise HTTPException(504, too_slow)

    def prediction_answer(name: str, batcher: _Batcher, probabilities: Any, top_k: int) -> dict:
        predictions = [{"label": top[0][0], "top": [{"label": label, "probability": p} for label, p in top]}
                       for top in top_labels(batcher.model.labels, probabilities, top_k)]
        return {"model": name, "version": batcher.version, "predictions": predictions}

    async def predict_v1(name: str, version: int | None, body: PredictRequest) -> dict:
        batcher, probabilities = await score(name, version, body.instances)
        return prediction_answer(name, batcher, probabilities, body.top_k)

    async def answer_plain_request(name: str, raw: bytes) -> tuple[int, dict] | None:
        """The answer to POST /v1/models/{name}:predict with this body when it is a valid request for a text
        model the service has, else None (the FastAPI route then answers it, with its documented error)."""
        try:
            body = PredictRequest.model_validate_json(raw)
            batcher = state["models"].batcher(name, None)
        except Exception:  # invalid JSON or fields, an unknown or unloadable model: FastAPI's route says which
            return None
        if len(body.instances) > options.max_instances or batcher.score.images:
            return None
        try:
            probabilities = await batcher.predict(body.instances, options.timeout_s)
        except TimeoutError:
            return 504, {"detail": too_slow}
        except USER_ERRORS as exc:
            return 400, {"detail": str(exc)}
        return 200, prediction_answer(name, batcher, probabilities, body.top_k)

    @app.post("/v1/models/{name}:predict")
    async def predict(name: str, body: PredictRequest) -> dict:
        return await predict_v1(name, None, body)

    @app.post("/v1/models/{name}/versions/{version}:predict")
    async def predict_version(name: str, version: VersionNumber, body: PredictRequest) -> dict:
        return await predict_v1(name, version, body)

    # KServe v2 / Open Inference Protocol.
    @app.get("/v2/health/live")
    async def v2_live() -> dict:
        return {"live": True}

    @app.get("/v2/health/ready")
    async def v2_ready() -> dict:
        try:
            state["models"].latest()
        except USER_ERRORS as exc:
            raise HTTPException(503, str(exc))
        return {"ready": True}

    def v2_metadata(name: str, version: int | None) -> dict:
        batcher = state["models"].batcher(name, version)  # 404 for a name or version that does not exist
        labels = list(batcher.model.labels)
        return {"name": name, "versions": [str(r["version"]) for r in published.versions(state["models"].db, name)],
                "platform": "textclf", "parameters": {"labels": labels, "version": str(batcher.version)},
                "inputs": [{"name": "text", "datatype": "BYTES", "shape": [-1]}],
                "outputs": [{"name": "label", "datatype": "BYTES", "shape": [-1]},
                            {"name": "probabilities", "datatype": "FP32", "shape": [-1, len(labels)]}]}

    @app.get("/v2/models/{name}")
    async def v2_model(name: str) -> dict:
        return v2_metadata(name, None)

    @app.get("/v2/models/{name}/versions/{version}")
    async def v2_model_version(name: str, version: VersionNumber) -> dict:
        return v2_metadata(name, version)

    @app.get("/v2/models/{name}/ready")
    async def v2_model_ready(name: str) -> dict:
        state["models"].batcher(name)
        return {"name": name, "ready": True}

    async def infer_v2(name: str, version: int | None, body: InferRequest) -> dict:
        if len(body.inputs) != 1:
            raise HTTPException(400, f"{len(body.inputs)} inputs: send one BYTES input holding the texts")
        tensor = body.inputs[0]
        if tensor.datatype != "BYTES":
            raise HTTPException(400, f"input '{tensor.name}' has datatype {tensor.datatype}: send BYTES (texts)")
        if math.prod(tensor.shape) != len(tensor.data):
            raise HTTPException(400, f"input '{tensor.name}' has shape {tensor.shape} but {len(tensor.data)} "
                                     "elements: the shape must multiply out to the number of texts")
        if not tensor.data:
            raise HTTPException(400, f"input '{tensor.name}' holds no texts")
        batcher, probabilities = await score(name, version, tensor.data)
        labels = [batcher.model.labels[i] for i in probabilities.argmax(axis=1)]
        answer = {"model_name": name, "model_version": str(batcher.version),
                  "outputs": [{"name": "label", "datatype": "BYTES", "shape": [len(labels)], "data": labels},
                              {"name": "probabilities", "datatype": "FP32", "shape": list(probabilities.shape),
                               "data": [float(p) for p in probabilities.ravel()]}]}
        if body.id is not None:
            answer["id"] = body.id
        return answer

    @app.post("/v2/models/{name}/infer")
    async def infer(name: str, body: InferRequest) -> dict:
        return await infer_v2(name, None, body)

    @app.post("/v2/models/{name}/versions/{version}/infer")
    async def infer_version(name: str, version: VersionNumber, body: InferRequest) -> dict:
        return await infer_v2(name, version, body)

    @app.post("/v1/jobs", status_code=201, dependencies=[Depends(require_token)])
    async def submit_job(body: JobRequest) -> dict:
        if options.data_root is None:
            raise HTTPException(403, "job submission needs --data-root: corpora must lie under it")
        root = options.data_root.resolve()
        for given in (body.corpus, body.test_corpus):
            if given and "\x00" in given:
                raise HTTPException(400, "a corpus path holds a NUL byte: send the path as it is on the server")
        paths = [Path(p).resolve() for p in (body.corpus, body.test_corpus) if p]
        for path in paths:
            if not path.is_relative_to(root):
                raise HTTPException(400, f"corpus '{path}' is outside the data root '{root}'")
            if not path.exists():
                raise HTTPException(400, f"corpus '{path}' does not exist")
        settings = Settings.from_user(body.settings)  # strict; left out: the model's defaults
        db = state["models"].db
        job_id = job_queue.submit(db, str(paths[0]), settings.to_dict(), body.name or paths[0].stem,
                                  str(paths[1]) if len(paths) > 1 else None)
        return job_queue.get(db, job_id)

    @app.get("/v1/jobs/{job_id}")
    async def get_job(job_id: VersionNumber) -> dict:
        return job_queue.get(state["models"].db, job_id)

    return PlainPredict(app, answer_plain_request, record_hot_request, options.max_body_bytes,
                        scope_authorized if options.require_token_everywhere else None)
