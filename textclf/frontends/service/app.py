"""The service assembled: the FastAPI app with its routers (TF Serving, Open Inference Protocol, jobs), the
health and metrics routes, one error shape, and the plain ASGI layers in front."""

from __future__ import annotations

import asyncio
import os
from contextlib import asynccontextmanager

from fastapi import FastAPI, HTTPException, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, PlainTextResponse
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from prometheus_fastapi_instrumentator import Instrumentator
from prometheus_fastapi_instrumentator import metrics as instrumentation
from prometheus_fastapi_instrumentator.metrics import Info
from starlette.exceptions import HTTPException as StarletteHTTPException

from db import jobs as job_queue
from textclf.errors import USER_ERRORS
from textclf.frontends.bearer import bearer_matches
from textclf.frontends.service.asgi import Guard, PlainPredict
from textclf.frontends.service.jobs import router as jobs_router
from textclf.frontends.service.oip import router as oip_router
from textclf.frontends.service.options import OPTIONS_ENV, ServiceOptions, options_from_env
from textclf.frontends.service.serving import Metrics, ServedModels
from textclf.frontends.service.tfserving import plain_answerer
from textclf.frontends.service.tfserving import router as tfserving_router


def create_app(options: ServiceOptions) -> PlainPredict:
    """The service as an ASGI app: PlainPredict in front of the FastAPI app (`.app`)."""
    metrics = Metrics()

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        app.state.models = ServedModels(options, metrics)
        watcher = asyncio.get_running_loop().create_task(app.state.models.watch())
        yield
        watcher.cancel()

    # FastAPI's OpenTelemetry hooks off: the service exports Prometheus metrics (/metrics), and the hooks' check
    # for configured providers ran on every request (~4% of a one-document request's server CPU).
    # No /docs or /redoc pages: FastAPI's load their script from a CDN (blank offline), and the Swagger UI that a
    # package ships (swagger-ui-bundle 1.1, Swagger UI 4) cannot render FastAPI's OpenAPI 3.1. The schema stays at
    # /openapi.json for any OpenAPI viewer or client generator.
    app = FastAPI(
        title="textclf",
        version="1",
        lifespan=lifespan,
        docs_url=None,
        redoc_url=None,
        telemetry={"tracing": False, "metrics": False, "logs": False},
    )
    app.state.options = options
    authorized = _scope_authorized(options) if options.require_token_everywhere else None
    app.add_middleware(Guard, max_bytes=options.max_body_bytes, authorized=authorized)
    record_hot_request = _instrument(app, metrics)
    _answer_errors_as_json(app)
    _add_health_and_metrics(app, metrics)
    for router in (tfserving_router, oip_router, jobs_router):
        app.include_router(router)
    return PlainPredict(
        app, plain_answerer(lambda: app.state.models), record_hot_request, options.max_body_bytes, authorized
    )


def app_from_env() -> PlainPredict:
    """App factory for `textclf serve --workers N`: uvicorn starts N processes, each building its own app
    (own model copies and batchers) from the options the parent put in the environment as JSON."""
    return create_app(options_from_env(os.environ[OPTIONS_ENV]))


def _scope_authorized(options: ServiceOptions):
    def authorized(scope: dict) -> bool:
        return bearer_matches(Request(scope).headers.get("authorization", ""), options.token)

    return authorized


def _instrument(app: FastAPI, metrics: Metrics):
    """Requests by route template, method and status, and their latency by template and method. Not the library's
    default set, whose request and response size histograms parse every request's headers once more: ~3% of a
    one-document request's server CPU. -> the recorder of a request PlainPredict answered (the same series)."""
    instrumentator = Instrumentator(
        registry=metrics.registry,
        should_group_status_codes=False,
        should_group_untemplated=True,
        excluded_handlers=["/metrics"],
    )
    recorders = [
        instrumentation.requests(metric_namespace="textclf", registry=metrics.registry),
        instrumentation.latency(metric_namespace="textclf", registry=metrics.registry),
    ]
    instrumentator.add(*recorders)
    instrumentator.instrument(app)

    def record_hot_request(status: int, seconds: float) -> None:
        info = Info(
            request=None,
            response=None,
            method="POST",
            modified_handler=PlainPredict.TEMPLATE,
            modified_status=str(status),
            modified_duration=seconds,
        )
        for record in recorders:
            record(info)

    return record_hot_request


def _answer_errors_as_json(app: FastAPI) -> None:
    """Every error as {"error": "one line"}: what TF Serving writes and the Open Inference Protocol's clients read."""

    async def http_error(request: Request, exc: StarletteHTTPException):
        return JSONResponse({"error": str(exc.detail)}, status_code=exc.status_code, headers=exc.headers)

    async def user_error(request: Request, exc: Exception):
        return JSONResponse({"error": str(exc)}, status_code=404 if isinstance(exc, job_queue.JobNotFound) else 400)

    async def invalid_body(request: Request, exc: RequestValidationError):
        # The place and the reason, not FastAPI's echo of each wrong value: a body holding NaN or Infinity (which
        # Python's JSON parser takes) would then fail to serialise, a 500 for a client's mistake.
        problems = "; ".join(
            f"{'.'.join(str(p) for p in error.get('loc', ()))}: {error.get('msg', '')}" for error in exc.errors()
        )
        # a body that is not JSON at all: 400, as TF Serving answers it; a JSON body of the wrong shape: 422
        malformed = next((e for e in exc.errors() if e.get("type") == "json_invalid"), None)
        if malformed is not None:
            at = malformed.get("loc", ("body", "?"))[-1]
            return JSONResponse(
                {"error": f"the body is not valid JSON (at character {at}): send one JSON object"}, status_code=400
            )
        return JSONResponse({"error": f"invalid request: {problems}"}, status_code=422)

    app.add_exception_handler(StarletteHTTPException, http_error)
    app.add_exception_handler(RequestValidationError, invalid_body)
    for error_class in USER_ERRORS:
        app.add_exception_handler(error_class, user_error)


def _add_health_and_metrics(app: FastAPI, metrics: Metrics) -> None:
    @app.get("/health/live")
    async def live() -> dict:
        return {"status": "ok"}

    @app.get("/health/ready")
    async def ready(request: Request) -> dict:
        try:
            names = request.app.state.models.latest()
        except USER_ERRORS as exc:
            raise HTTPException(503, str(exc))
        return {"status": "ready", "models": len(names)}

    @app.get("/metrics")
    async def metrics_endpoint() -> PlainTextResponse:
        return PlainTextResponse(generate_latest(metrics.registry), media_type=CONTENT_TYPE_LATEST)
