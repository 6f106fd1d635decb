"""TF Serving's REST API: predict in the row (`instances`) and columnar (`inputs`) forms, model status and
metadata in its shapes (https://www.tensorflow.org/tfx/serving/api_rest), plus `top_k`. Errors are
`{"error": "..."}` as TF Serving writes them."""

from __future__ import annotations

import asyncio
import base64
import binascii
from typing import Annotated, Any

from fastapi import APIRouter, HTTPException, Request
from fastapi import Path as FastPath
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, Strict

from textclf.errors import USER_ERRORS, InputError
from textclf.frontends.service.serving import Batcher, ServedModels, score, too_slow
from textclf.inference.predict import ALL_LABELS, check_threshold

# A version number in a URL: 1 up to SQLite's largest integer (a larger number would overflow its query).
VersionNumber = Annotated[int, FastPath(ge=1, le=2**63 - 1)]
TEXT_INPUT = "text"  # the one named input, as the row form's objects and the columnar form's dict name it


def _top_k(value: int) -> int:
    if value != ALL_LABELS and not 1 <= value <= 100:
        raise ValueError(f"top_k is {value}: give 1 to 100 labels, or -1 for all of them")
    return value


# How many labels each answer lists: an integer (not true or 2.0), 1 to 100, or -1 for every label (the CLI's -k -1).
TopK = Annotated[int, Strict(), AfterValidator(_top_k)]


def _threshold(value: float) -> float:
    try:
        return check_threshold(value, "threshold")  # the CLI's rule, as a validation error
    except InputError as exc:
        raise ValueError(str(exc)) from None


# The CLI's -t: only labels with at least this probability (a multi-label model's labels: those above it). A number
# (not true or "0.5"), 0 to 1; none: every label of the top_k, a multi-label model's own thresholds.
Threshold = Annotated[float, Strict(), AfterValidator(_threshold)]


class PredictRequest(BaseModel):
    """The row form with plain strings: the hot path's request (PlainPredict validates with it alone)."""

    model_config = ConfigDict(extra="forbid")
    signature_name: str | None = None
    instances: list[str] = Field(min_length=1)
    top_k: TopK = 3
    threshold: Threshold | None = None


class TFPredictRequest(BaseModel):
    """Every form TF Serving's REST API takes: `instances` (rows: strings, {"b64": ...} or {"text": ...}) or
    `inputs` (columns: a list, or {"text": [...]})."""

    model_config = ConfigDict(extra="forbid")
    signature_name: str | None = None
    instances: list[str | dict[str, Any]] | None = None
    inputs: list[str | dict[str, Any]] | dict[str, Any] | str | None = None
    top_k: TopK = 3
    threshold: Threshold | None = None


def _text(value: Any, where: str) -> str:
    """A string instance, or TF Serving's binary form {"b64": "..."} decoded to text."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and set(value) == {"b64"} and isinstance(value["b64"], str):
        try:
            return base64.b64decode(value["b64"], validate=True).decode("utf-8")
        except (binascii.Error, UnicodeDecodeError):
            raise HTTPException(400, f"{where} is not base64 of UTF-8 text: encode the document's bytes") from None
    raise HTTPException(400, f"{where} is not a string: send each document as a string or {{\"b64\": ...}}")


def _named(value: dict, where: str) -> Any:
    unknown = sorted(set(value) - {TEXT_INPUT})
    if unknown or TEXT_INPUT not in value:
        raise HTTPException(
            400,
            f"{where} names input {unknown[0] if unknown else 'nothing'!r}: the model's one input is '{TEXT_INPUT}'",
        )
    return value[TEXT_INPUT]


def request_texts(body: TFPredictRequest) -> tuple[list[str], bool]:
    """-> (the documents, whether the request was columnar)."""
    if (body.instances is None) == (body.inputs is None):
        raise HTTPException(400, "send either 'instances' (the row form) or 'inputs' (the columnar form)")
    if body.instances is not None:
        rows = [
            _named(row, f"instance {i}") if isinstance(row, dict) and "b64" not in row else row
            for i, row in enumerate(body.instances)
        ]
        texts = [_text(row, f"instance {i}") for i, row in enumerate(rows)]
    else:
        column = (
            _named(body.inputs, "'inputs'")
            if isinstance(body.inputs, dict) and "b64" not in body.inputs
            else body.inputs
        )
        column = column if isinstance(column, list) else [column]
        texts = [_text(value, f"input {i}") for i, value in enumerate(column)]
    if not texts:
        raise HTTPException(400, "the request holds no documents: send at least one")
    return texts, body.inputs is not None


def prediction_answer(
    name: str, batcher: Batcher, probabilities: Any, top_k: int, threshold: float | None = None
) -> dict:
    """Each document's label and top_k probabilities at or above `threshold`; a multi-label model's "labels" too
    (those above their thresholds, or above `threshold`, most probable first; "label" the first of them, or null):
    the rule `textclf predict` answers by (inference.predict.predictions_of)."""
    from textclf.inference.predict import predictions_of

    model = batcher.model
    predictions = []
    for p in predictions_of(model, probabilities, [""] * len(probabilities), top_k, threshold):
        row = {"label": p.label, "top": [{"label": label, "probability": q} for label, q in p.top]}
        predictions.append(row if p.labels is None else {**row, "labels": p.labels})
    return {"model": name, "version": batcher.version, "predictions": predictions}


def columnar_answer(
    name: str, batcher: Batcher, probabilities: Any, top_k: int, threshold: float | None = None
) -> dict:
    rows = prediction_answer(name, batcher, probabilities, top_k, threshold)["predictions"]
    outputs = {"label": [row["label"] for row in rows], "top": [row["top"] for row in rows]}
    if rows and "labels" in rows[0]:
        outputs["labels"] = [row["labels"] for row in rows]
    return {"model": name, "version": batcher.version, "outputs": outputs}


async def _status(models: ServedModels, row: dict) -> dict:
    """TF Serving's status of one version: AVAILABLE where its file loads, else END with the reason."""
    problem = await asyncio.to_thread(models.load_problem, row)
    if problem is None:
        return {
            "version": str(row["version"]),
            "state": "AVAILABLE",
            "status": {"error_code": "OK", "error_message": ""},
        }
    return {
        "version": str(row["version"]),
        "state": "END",
        "status": {"error_code": "UNKNOWN", "error_message": problem},
    }


def public(row: dict) -> dict:
    """A published version as the API shows it: no server file paths."""
    return {k: v for k, v in row.items() if k != "path"}


def _metadata(models: ServedModels, name: str, version: int | None) -> dict:
    """TF Serving's metadata: the signature's outputs are the keys :predict answers each document with (its
    "predictions" rows, its columnar "outputs"): the label, the top labels as {label, probability} records (a
    variant: a record, not a number), and a multi-label model's labels."""
    batcher = models.batcher(name, version)
    tensor = {"dtype": "DT_STRING", "tensor_shape": {"dim": [{"size": "-1"}]}}
    per_document = {"tensor_shape": {"dim": [{"size": "-1"}, {"size": "-1"}]}}
    outputs = {"label": {**tensor, "name": "label:0"}, "top": {"dtype": "DT_VARIANT", **per_document, "name": "top:0"}}
    if getattr(batcher.model, "multi_label", False):
        outputs["labels"] = {"dtype": "DT_STRING", **per_document, "name": "labels:0"}
    signature = {
        "inputs": {TEXT_INPUT: {**tensor, "name": f"{TEXT_INPUT}:0"}},
        "outputs": outputs,
        "method_name": "tensorflow/serving/predict",
    }
    return {
        "model_spec": {"name": name, "signature_name": "", "version": str(batcher.version)},
        "metadata": {
            "signature_def": {"signature_def": {"serving_default": signature}},
            "labels": list(batcher.model.labels),
        },
    }


def plain_answerer(models_of):
    """The answer to POST /v1/models/{name}:predict with this body when it is a valid row-form request for a text
    model the service has, else None (the FastAPI route then answers it, with its documented error)."""

    async def answer(name: str, raw: bytes) -> tuple[int, dict] | None:
        models = models_of()
        try:
            body = PredictRequest.model_validate_json(raw)
            batcher = models.batcher(name, None)
        except Exception:  # invalid JSON or fields, an unknown or unloadable model: FastAPI's route says which
            return None
        if (
            len(body.instances) > models.options.max_instances
            or batcher.score.images
            or not all(text.strip() for text in body.instances)
        ):
            return None
        try:
            probabilities = await batcher.predict(body.instances, models.options.timeout_s)
        except TimeoutError:
            return 504, {"error": too_slow(models.options)}
        except USER_ERRORS as exc:
            return 400, {"error": str(exc)}
        return 200, prediction_answer(name, batcher, probabilities, body.top_k, body.threshold)

    return answer


router = APIRouter(tags=["TF Serving REST API"])


def _models(request: Request) -> ServedModels:
    return request.app.state.models


async def _predict(request: Request, name: str, version: int | None, body: TFPredictRequest) -> dict:
    texts, columnar = request_texts(body)
    batcher, probabilities = await score(_models(request), name, version, texts)
    answer = columnar_answer if columnar else prediction_answer
    return answer(name, batcher, probabilities, body.top_k, body.threshold)


@router.get("/v1/models")
async def list_models(request: Request) -> dict:
    return {"models": [public(row) for row in _models(request).latest().values()]}


@router.get("/v1/models/{name}")
async def model_status(request: Request, name: str) -> dict:
    """TF Serving's model status (every published version), and the versions' records."""
    models = _models(request)
    rows = models.versions(name)
    return {
        "model_version_status": [await _status(models, row) for row in reversed(rows)],
        "name": name,
        "versions": [public(row) for row in rows],
    }


@router.get("/v1/models/{name}/versions/{version}")
async def version_status(request: Request, name: str, version: VersionNumber) -> dict:
    models = _models(request)
    return {"model_version_status": [await _status(models, row) for row in models.versions(name, version)]}


@router.get("/v1/models/{name}/metadata")
async def metadata(request: Request, name: str) -> dict:
    return _metadata(_models(request), name, None)


@router.get("/v1/models/{name}/versions/{version}/metadata")
async def version_metadata(request: Request, name: str, version: VersionNumber) -> dict:
    return _metadata(_models(request), name, version)


@router.post("/v1/models/{name}:predict")
async def predict(request: Request, name: str, body: TFPredictRequest) -> dict:
    return await _predict(request, name, None, body)


@router.post("/v1/models/{name}/versions/{version}:predict")
async def predict_version(request: Request, name: str, version: VersionNumber, body: TFPredictRequest) -> dict:
    return await _predict(request, name, version, body)
