"""The service against the clients people already have, in a real `textclf serve` process: tritonclient (HTTP)
and the kserve SDK's REST client for the Open Inference Protocol, and requests written from TF Serving's REST
API documentation."""

import asyncio
import os
import shutil
import subprocess
import sys
from pathlib import Path

import httpx
import numpy as np
import pytest

from db import jobs, open_db
from tests.conftest import free_port, wait_until_answers
from textclf.frontends.daemon import DaemonOptions, run_daemon
from textclf.inference.artifacts import load_model
from textclf.settings import Settings

REPO = Path(__file__).resolve().parents[3]
TEXTS = ["the striker scored twice and the team won the match", "the rocket reached orbit", "fry the onions"]


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """-> (host:port, the published model) of a `textclf serve` process serving model 'sample' v1."""
    home = tmp_path_factory.mktemp("clients")
    corpus = home / "corpus"
    shutil.copytree(REPO / "textclf" / "sample_corpus", corpus)
    env = {**os.environ, "TEXTCLF_HOME": str(home)}
    env.pop("TEXTCLF_DB", None)
    db_path = home / "runs.db"
    settings = Settings(epochs=2, min_steps=60, batch_size=8, hidden=16, search="off")
    jobs.submit(open_db(db_path), str(corpus), settings.to_dict(), "sample")
    run_daemon(DaemonOptions(db_path=db_path, once=True))
    model = load_model(open_db(db_path)["models"].get(("sample", 1))["path"])
    port = free_port()
    service = subprocess.Popen(
        [sys.executable, "-m", "textclf", "serve", "--port", str(port), "--db", str(db_path)],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    url = f"127.0.0.1:{port}"
    wait_until_answers(f"http://{url}/health/live", service)
    yield url, model
    service.terminate()
    service.wait(timeout=30)


def test_tritonclient_http_every_call(served):
    tritonclient = pytest.importorskip("tritonclient.http")
    from tritonclient.utils import InferenceServerException

    url, model = served
    client = tritonclient.InferenceServerClient(url=url)
    assert client.is_server_live() and client.is_server_ready()
    assert client.is_model_ready("sample") and client.is_model_ready("sample", "1")
    assert not client.is_model_ready("sample", "2") and not client.is_model_ready("nope")
    assert client.get_server_metadata()["name"] == "textclf"
    metadata = client.get_model_metadata("sample")
    assert metadata["versions"] == ["1"] and client.get_model_metadata("sample", "1")["inputs"][0]["name"] == "text"
    assert client.get_model_config("sample")["input"][0]["data_type"] == "TYPE_STRING"
    texts = np.array([t.encode() for t in TEXTS], dtype=object)
    for binary, shape in ((True, [3]), (False, [3]), (True, [3, 1])):
        text = tritonclient.InferInput("text", shape, "BYTES")
        text.set_data_from_numpy(texts.reshape(shape), binary_data=binary)
        result = client.infer("sample", [text])  # no outputs named: every output, as binary data
        assert [label.decode() for label in result.as_numpy("label")] == model.predict(TEXTS)
        np.testing.assert_allclose(result.as_numpy("probabilities"), model.predict_proba(TEXTS), atol=1e-5)
    asked = [tritonclient.InferRequestedOutput("label", binary_data=False)]
    result = client.infer("sample", [text], model_version="1", outputs=asked, request_id="r7")
    assert result.get_response()["id"] == "r7" and result.as_numpy("probabilities") is None
    assert list(result.as_numpy("label")) == model.predict(TEXTS)  # JSON data: strings
    compressed = client.infer("sample", [text], request_compression_algorithm="gzip")
    assert [label.decode() for label in compressed.as_numpy("label")] == model.predict(TEXTS)
    wrong = tritonclient.InferInput("input-0", [3], "BYTES")
    wrong.set_data_from_numpy(texts)
    with pytest.raises(InferenceServerException, match="unknown input 'input-0'"):
        client.infer("sample", [wrong])
    with pytest.raises(InferenceServerException, match="unknown output 'scores'"):
        client.infer("sample", [text], outputs=[tritonclient.InferRequestedOutput("scores")])
    with pytest.raises(InferenceServerException, match="does not exist"):
        client.infer("nope", [text])


def test_kserve_sdk_rest_client(served):
    kserve = pytest.importorskip("kserve")
    url, model = served
    base = f"http://{url}"

    async def calls():
        client = kserve.InferenceRESTClient(kserve.RESTConfig(protocol="v2", timeout=30))
        try:
            assert await client.is_server_live(base) and await client.is_server_ready(base)
            assert await client.is_model_ready(base, "sample")
            answers = []
            for binary in (False, True):
                text = kserve.InferInput(name="text", shape=[3], datatype="BYTES")
                text.set_data_from_numpy(np.array(TEXTS, dtype=object), binary_data=binary)
                request = kserve.InferRequest(model_name="sample", infer_inputs=[text], request_id="k1")
                answers.append(await client.infer(base, request, model_name="sample"))
            return answers
        finally:
            await client.close()

    for response in asyncio.run(calls()):
        outputs = {output.name: output for output in response.outputs}
        assert [
            str(label) if isinstance(label, str) else label.decode() for label in outputs["label"].data
        ] == model.predict(TEXTS)
        np.testing.assert_allclose(
            np.reshape(outputs["probabilities"].data, (3, -1)), model.predict_proba(TEXTS), atol=1e-5
        )


def test_tf_serving_rest_requests_as_its_documentation_writes_them(served):
    url, model = served
    base = f"http://{url}/v1/models/sample"
    expected = model.predict(TEXTS)
    row = httpx.post(f"{base}:predict", json={"signature_name": "serving_default", "instances": TEXTS}).json()
    assert [p["label"] for p in row["predictions"]] == expected
    named = httpx.post(f"{base}:predict", json={"instances": [{"text": t} for t in TEXTS]}).json()
    assert [p["label"] for p in named["predictions"]] == expected
    import base64

    encoded = [{"b64": base64.b64encode(t.encode()).decode()} for t in TEXTS]
    assert [
        p["label"] for p in httpx.post(f"{base}:predict", json={"instances": encoded}).json()["predictions"]
    ] == expected
    for columnar in ({"inputs": TEXTS}, {"inputs": {"text": TEXTS}}):
        assert httpx.post(f"{base}/versions/1:predict", json=columnar).json()["outputs"]["label"] == expected
    status = httpx.get(base).json()["model_version_status"]
    assert status == [{"version": "1", "state": "AVAILABLE", "status": {"error_code": "OK", "error_message": ""}}]
    assert httpx.get(f"{base}/versions/1").json()["model_version_status"][0]["state"] == "AVAILABLE"
    metadata = httpx.get(f"{base}/metadata").json()
    assert metadata["model_spec"] == {"name": "sample", "signature_name": "", "version": "1"}
    assert "text" in metadata["metadata"]["signature_def"]["signature_def"]["serving_default"]["inputs"]
    for body, fragment in (
        ({"instances": [{"txt": "x"}]}, "input 'txt'"),
        ({"instances": TEXTS, "inputs": TEXTS}, "either 'instances'"),
    ):
        refused = httpx.post(f"{base}:predict", json=body)
        assert refused.status_code == 400 and fragment in refused.json()["error"]
    assert httpx.get(f"{base}/versions/9").status_code == 404
