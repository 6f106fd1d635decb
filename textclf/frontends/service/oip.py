"""The Open Inference Protocol (KServe v2) over REST, as tritonclient and the kserve SDK speak it: server and
model metadata, Triton's model configuration, liveness and readiness (with and without a version), and infer with one
BYTES input of texts
(base64 image files for an image model), in JSON or with the binary tensor data extension (the clients'
default), any or no content type. Outputs: "label" (BYTES, one a document) and "probabilities" (FP32,
documents x classes, in the order of the metadata's parameters.labels); requested outputs are honoured; the
request's parameters.threshold (a probability) leaves out labels under it, as `textclf predict -t` does.
Errors are `{"error": "..."}`. https://kserve.github.io/website/docs/concepts/architecture/data-plane/v2-protocol"""

from __future__ import annotations

import json
import math
import struct
import zlib
from typing import Any

import numpy as np
from fastapi import APIRouter, HTTPException, Request, Response
from pydantic import BaseModel, Field, ValidationError

from textclf import __version__
from textclf.errors import USER_ERRORS
from textclf.frontends.service.serving import ServedModels, score
from textclf.frontends.service.tfserving import VersionNumber

HEADER_LENGTH = "inference-header-content-length"
OUTPUTS = ("label", "probabilities")


class InferTensor(BaseModel):
    name: str
    shape: list[int] = Field(max_length=8)
    datatype: str
    parameters: dict[str, Any] | None = None
    data: list[Any] | None = None


class RequestedOutput(BaseModel):
    name: str
    parameters: dict[str, Any] | None = None


class InferRequest(BaseModel):
    id: str | None = None
    parameters: dict[str, Any] | None = None
    inputs: list[InferTensor] = Field(min_length=1)
    outputs: list[RequestedOutput] | None = None


def _input_name(images: bool) -> str:
    return "image" if images else "text"


def _flat(data: list) -> list:
    """The protocol allows a tensor's JSON data flat or nested by its shape."""
    out = []
    for item in data:
        out.extend(_flat(item) if isinstance(item, list) else [item])
    return out


def _bytes_elements(raw: bytes, name: str) -> list[str]:
    """A BYTES tensor in the binary extension: each element a 4-byte little-endian length, then its bytes."""
    elements, at = [], 0
    while at < len(raw):
        if at + 4 > len(raw):
            raise HTTPException(400, f"input '{name}': binary data ends inside an element's length")
        (size,) = struct.unpack_from("<I", raw, at)
        at += 4
        if at + size > len(raw):
            raise HTTPException(400, f"input '{name}': an element of {size} bytes runs past the binary data")
        try:
            elements.append(raw[at : at + size].decode("utf-8"))
        except UnicodeDecodeError:
            raise HTTPException(400, f"input '{name}': element {len(elements)} is not UTF-8 text") from None
        at += size
    return elements


def _inflated(body: bytes, encoding: str, limit: int) -> bytes:
    """A gzip or deflate request body (tritonclient's request compression), refused past `limit` bytes."""
    if encoding in ("", "identity"):
        return body
    if encoding not in ("gzip", "deflate"):
        raise HTTPException(415, f"content-encoding '{encoding}' is not supported: send gzip, deflate or none")
    inflater = zlib.decompressobj(wbits=31 if encoding == "gzip" else 15)
    try:
        out = inflater.decompress(body, limit + 1)
    except zlib.error:
        raise HTTPException(400, f"the body is not valid {encoding} data") from None
    if len(out) > limit:
        raise HTTPException(413, f"request body inflates to over {limit} bytes")
    return out


def parse_infer(body: bytes, headers, limit: int) -> tuple[InferRequest, bytes]:
    """-> (the JSON header, the binary data after it) of an infer request."""
    body = _inflated(body, headers.get("content-encoding", "").strip().lower(), limit)
    length = headers.get(HEADER_LENGTH)
    if length is None:
        header, binary = body, b""
    else:
        if not length.strip().isdigit() or int(length) > len(body):
            raise HTTPException(
                400,
                f"{HEADER_LENGTH} is {length!r}: give the JSON header's length in bytes, "
                f"at most the body's {len(body)}",
            )
        header, binary = body[: int(length)], body[int(length) :]
    try:
        return InferRequest.model_validate_json(header), binary
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(str(p) for p in e['loc']) or 'body'}: {e['msg']}" for e in exc.errors())
        raise HTTPException(400, f"invalid inference request: {problems}") from None


def request_texts(request: InferRequest, binary: bytes, images: bool) -> list[str]:
    expected = _input_name(images)
    if len(request.inputs) != 1:
        raise HTTPException(400, f"{len(request.inputs)} inputs: send one, '{expected}' (BYTES)")
    tensor = request.inputs[0]
    if tensor.name != expected:
        raise HTTPException(400, f"unknown input '{tensor.name}': the model's one input is '{expected}'")
    if tensor.datatype != "BYTES":
        raise HTTPException(400, f"input '{tensor.name}' has datatype {tensor.datatype}: send BYTES (texts)")
    size = (tensor.parameters or {}).get("binary_data_size")
    if size is not None:
        if not isinstance(size, int) or size < 0 or size != len(binary):
            raise HTTPException(
                400, f"input '{tensor.name}': binary_data_size {size!r} but {len(binary)} bytes follow the header"
            )
        texts = _bytes_elements(binary, tensor.name)
    elif tensor.data is not None and not binary:
        texts = _flat(tensor.data)
        if not all(isinstance(t, str) for t in texts):
            raise HTTPException(400, f"input '{tensor.name}' holds a non-string element: send texts")
    else:
        raise HTTPException(
            400, f"input '{tensor.name}' has no data: send 'data', or binary data with parameters.binary_data_size"
        )
    if any(d < 0 for d in tensor.shape) or math.prod(tensor.shape) != len(texts):
        raise HTTPException(
            400,
            f"input '{tensor.name}' has shape {tensor.shape} but {len(texts)} elements: the "
            "shape must multiply out to the number of texts",
        )
    if not texts:
        raise HTTPException(400, f"input '{tensor.name}' holds no texts")
    return texts


def _outputs_wanted(request: InferRequest) -> list[tuple[str, bool]]:
    """-> [(output name, as binary data)], in the order asked (every output when none is named)."""
    binary_default = bool((request.parameters or {}).get("binary_data_output", False))
    if request.outputs is None:
        return [(name, binary_default) for name in OUTPUTS]
    wanted = []
    for output in request.outputs:
        if output.name not in OUTPUTS:
            raise HTTPException(400, f"unknown output '{output.name}': the outputs are {', '.join(OUTPUTS)}")
        wanted.append((output.name, bool((output.parameters or {}).get("binary_data", binary_default))))
    return wanted


def _encoded(name: str, values: Any) -> bytes:
    if name == "label":
        return b"".join(struct.pack("<I", len(v)) + v for v in (s.encode() for s in values))
    return np.ascontiguousarray(values, dtype="<f4").tobytes()


def request_threshold(request: InferRequest) -> float | None:
    """The request's parameters.threshold: a probability 0 to 1 (as `predict -t` and :predict's "threshold"), or
    None where not given."""
    from textclf.inference.predict import check_threshold

    value = (request.parameters or {}).get("threshold")
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise HTTPException(
            400, f"parameters.threshold is {json.dumps(value)}: give a probability from 0 to 1 (a number)"
        )
    try:
        return check_threshold(float(value), "parameters.threshold")
    except USER_ERRORS as exc:
        raise HTTPException(400, str(exc)) from None


def _label_values(model, probabilities: np.ndarray, threshold: float | None) -> list[str]:
    """Each document's "label" by the rule every face answers with (predictions_of): the most probable label ("" where
    it is under `threshold`); a multi-label model's labels above their thresholds or above `threshold`, most probable
    first, joined by commas ("" for none: a BYTES tensor holds one string a document)."""
    from textclf.inference.predict import predictions_of

    predictions = predictions_of(model, probabilities, [""] * len(probabilities), 1, threshold)
    return [",".join(p.labels) if p.labels is not None else (p.label or "") for p in predictions]


def infer_answer(
    request: InferRequest, name: str, version: int, model, probabilities: np.ndarray, threshold: float | None = None
) -> Response:
    """The requested outputs: "label" (_label_values) and "probabilities", each label's own."""
    values = {"label": _label_values(model, probabilities, threshold), "probabilities": probabilities}
    shapes = {"label": [len(probabilities)], "probabilities": list(probabilities.shape)}
    outputs, binary = [], []
    for output, as_binary in _outputs_wanted(request):
        tensor = {"name": output, "datatype": "BYTES" if output == "label" else "FP32", "shape": shapes[output]}
        if as_binary:
            binary.append(_encoded(output, values[output]))
            tensor["parameters"] = {"binary_data_size": len(binary[-1])}
        else:
            tensor["data"] = values[output] if output == "label" else [float(p) for p in probabilities.ravel()]
        outputs.append(tensor)
    answer = {"model_name": name, "model_version": str(version), "outputs": outputs}
    if request.id is not None:
        answer["id"] = request.id
    header = json.dumps(answer, allow_nan=False, separators=(",", ":")).encode()
    if not binary:
        return Response(header, media_type="application/json")
    return Response(
        header + b"".join(binary),
        media_type="application/octet-stream",
        headers={"Inference-Header-Content-Length": str(len(header))},
    )


router = APIRouter(tags=["Open Inference Protocol (KServe v2)"])


def _models(request: Request) -> ServedModels:
    return request.app.state.models


def _ready(request: Request) -> None:
    try:
        _models(request).latest()
    except USER_ERRORS as exc:
        raise HTTPException(503, str(exc))


@router.get("/v2")
async def server_metadata() -> dict:
    return {"name": "textclf", "version": __version__, "extensions": ["binary_tensor_data"]}


@router.get("/v2/health/live")
async def live() -> dict:
    return {"live": True}


@router.get("/v2/health/ready")
async def ready(request: Request) -> dict:
    _ready(request)
    return {"ready": True}


def model_metadata(models: ServedModels, name: str, version: int | None) -> dict:
    batcher = models.batcher(name, version)  # 404 for a name or version that does not exist
    labels = list(batcher.model.labels)
    return {
        "name": name,
        "versions": [str(r["version"]) for r in models.versions(name)],
        "platform": "textclf",
        "parameters": {"labels": labels, "version": str(batcher.version)},
        "inputs": [{"name": _input_name(batcher.score.images), "datatype": "BYTES", "shape": [-1]}],
        "outputs": [
            {"name": "label", "datatype": "BYTES", "shape": [-1]},
            {"name": "probabilities", "datatype": "FP32", "shape": [-1, len(labels)]},
        ],
    }


@router.get("/v2/models/{name}")
async def metadata(request: Request, name: str) -> dict:
    return model_metadata(_models(request), name, None)


@router.get("/v2/models/{name}/versions/{version}")
async def version_metadata(request: Request, name: str, version: VersionNumber) -> dict:
    return model_metadata(_models(request), name, version)


def model_config(models: ServedModels, name: str, version: int | None) -> dict:
    """Triton's model configuration (its clients' get_model_config), from the model's metadata."""
    meta = model_metadata(models, name, version)
    types = {"BYTES": "TYPE_STRING", "FP32": "TYPE_FP32"}
    tensors = {
        kind: [{"name": t["name"], "data_type": types[t["datatype"]], "dims": t["shape"]} for t in meta[kind]]
        for kind in ("inputs", "outputs")
    }
    return {
        "name": name,
        "platform": "textclf",
        "max_batch_size": 0,
        "input": tensors["inputs"],
        "output": tensors["outputs"],
        "parameters": {"labels": {"string_value": json.dumps(meta["parameters"]["labels"])}},
    }


@router.get("/v2/models/{name}/config")
async def config(request: Request, name: str) -> dict:
    return model_config(_models(request), name, None)


@router.get("/v2/models/{name}/versions/{version}/config")
async def version_config(request: Request, name: str, version: VersionNumber) -> dict:
    return model_config(_models(request), name, version)


@router.get("/v2/models/{name}/ready")
async def model_ready(request: Request, name: str) -> dict:
    _models(request).batcher(name)
    return {"name": name, "ready": True}


@router.get("/v2/models/{name}/versions/{version}/ready")
async def version_ready(request: Request, name: str, version: VersionNumber) -> dict:
    _models(request).batcher(name, version)
    return {"name": name, "version": str(version), "ready": True}


async def _infer(request: Request, name: str, version: int | None) -> Response:
    models = _models(request)
    parsed, binary = parse_infer(await request.body(), request.headers, models.options.max_body_bytes)
    threshold = request_threshold(parsed)
    batcher = models.batcher(name, version)
    texts = request_texts(parsed, binary, batcher.score.images)
    batcher, probabilities = await score(models, name, version, texts)
    return infer_answer(parsed, name, batcher.version, batcher.model, probabilities, threshold)


@router.post("/v2/models/{name}/infer")
async def infer(request: Request, name: str) -> Response:
    return await _infer(request, name, None)


@router.post("/v2/models/{name}/versions/{version}/infer")
async def infer_version(request: Request, name: str, version: VersionNumber) -> Response:
    return await _infer(request, name, version)
