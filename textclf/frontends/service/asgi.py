"""Plain ASGI layers in front of the FastAPI app: the Guard (token, body limit) and PlainPredict (the hot
`:predict` route answered without FastAPI's per-request layers)."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable

from fastapi import FastAPI, HTTPException
from fastapi.responses import JSONResponse


HEALTH_PATHS = ("/health/", "/v2/health/")  # liveness and readiness: a probe carries no token


FORM = b"application/x-www-form-urlencoded"  # what `curl -d` names any body: no route here takes a form


def json_by_default(scope: dict) -> dict:
    """The request's scope with `content-type: application/json` where a body-carrying request names no type or a
    form's: TF Serving reads any body as JSON, and its own examples (`curl -d '{"instances": ...}'`) send a form's."""
    if scope["method"] not in ("POST", "PUT", "PATCH"):
        return scope
    kept = [
        (name, value)
        for name, value in scope["headers"]
        if name != b"content-type" or value.split(b";")[0].strip().lower() != FORM
    ]
    if any(name == b"content-type" for name, _ in kept):
        return scope
    return {**scope, "headers": [*kept, (b"content-type", b"application/json")]}


class Guard:
    """ASGI middleware in front of every route: the bearer token where every endpoint needs it (not the health
    probes), a body with no content type or a form's read as JSON (json_by_default), and the body limit, on the
    Content-Length header and on the bytes as they arrive (a chunked body has no header), so an oversized body is
    refused with 413 and never held whole. Plain ASGI, not Starlette's BaseHTTPMiddleware,
    which costs every request an extra task and stream (measured: BENCHMARKS.md, "Daemon and service")."""

    def __init__(self, app, max_bytes: int, authorized: Callable[[dict], bool] | None):
        self.app, self.max_bytes, self.authorized = app, max_bytes, authorized

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        if self.authorized is not None and not scope["path"].startswith(HEALTH_PATHS) and not self.authorized(scope):
            return await JSONResponse(
                {"error": "missing or wrong bearer token: send 'Authorization: Bearer <token>'"}, status_code=401
            )(scope, receive, send)
        scope = json_by_default(scope)
        length = next((value for name, value in scope["headers"] if name == b"content-length"), b"0")
        if int(length or 0) > self.max_bytes:
            response = JSONResponse({"error": f"request body over {self.max_bytes} bytes"}, status_code=413)
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
    (tests/textclf/frontends/test_service.py compares them) and is counted in the same metric series."""

    PATH = re.compile(r"/v1/models/([^/]+):predict")
    TEMPLATE = "/v1/models/{name}:predict"
    HEADERS = [(b"content-type", b"application/json")]

    def __init__(
        self,
        app: FastAPI,
        answer: Callable,
        record: Callable[[int, float], None],
        max_bytes: int,
        authorized: Callable[[dict], bool] | None,
    ):
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
        await send(
            {
                "type": "http.response.start",
                "status": status,
                "headers": [*self.HEADERS, (b"content-length", str(len(content)).encode())],
            }
        )
        await send({"type": "http.response.body", "body": content})
        self.record(status, time.perf_counter() - began)
