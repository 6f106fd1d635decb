"""`textclf serve`: predictions and job submission over HTTP (FastAPI on uvicorn). The OpenAPI schema at /openapi.json.

  tfserving.py  TF Serving's REST API: POST /v1/models/{name}[/versions/{v}]:predict in the row ("instances")
                and columnar ("inputs") forms, plus "top_k"; GET /v1/models, /v1/models/{name}[/versions/{v}]
                (model status), .../metadata
  oip.py        the Open Inference Protocol (KServe v2): GET /v2, /v2/health/live|ready,
                /v2/models/{name}[/versions/{v}][/ready]; POST /v2/models/{name}[/versions/{v}]/infer, JSON or
                binary tensor data
  jobs.py       POST /v1/jobs {"corpus", "name", "test_corpus", "settings"}, GET /v1/jobs/{id}
  app.py        the app: those routers, /health/live|ready, /metrics (Prometheus), errors as {"error": "..."}
  serving.py    the served models: loaded once, scored in batches gathered from concurrent requests (on the host
                or the device, `score_on`), swapped within `reload_seconds` of a new version's publication
  model_files.py  model files and folders of numbered versions served as they lie on disk, beside the published
  asgi.py       in front of FastAPI: the Guard (token, body limit) and PlainPredict (a valid row-form :predict
                answered without FastAPI's per-request layers, the hot path of one-document clients)
  options.py    ServiceOptions: limits, the token rule, where the network runs

Security: binds 127.0.0.1 unless told otherwise; a bearer token guards job submission, and every endpoint when
bound to a non-loopback address; job corpora must lie under the data root; bodies over `max_body_bytes` and
requests with more than `max_instances` texts get 413; a prediction that takes longer than `timeout_s` gets 504.
Models are .npz files loaded without pickle; request bodies are JSON (with binary tensor data after the JSON
header where the Open Inference Protocol's extension is used).
"""

from textclf.frontends.service.app import app_from_env, create_app
from textclf.frontends.service.options import OPTIONS_ENV, ServiceOptions, options_to_env

__all__ = ["OPTIONS_ENV", "ServiceOptions", "app_from_env", "create_app", "options_to_env"]
