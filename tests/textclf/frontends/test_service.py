"""The HTTP service in-process (TestClient), plus one real end-to-end run of daemon + service subprocesses."""

import asyncio
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import httpx
import numpy as np
import pytest
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings, strategies as st

from db import jobs, open_db
from tests.conftest import free_port, wait_until_answers
from textclf.frontends.daemon import DaemonOptions, run_daemon
from textclf.frontends.service import ServiceOptions, create_app
from textclf.inference.artifacts import load_model

REPO = Path(__file__).resolve().parents[3]
TOKEN = "s3cret"


@pytest.fixture
def published(corpus_dir, db_path, fast_settings):
    """A DB with model 'sample' v1 trained on the sample corpus."""
    jobs.submit(open_db(db_path), str(corpus_dir), fast_settings.to_dict(), "sample")
    run_daemon(DaemonOptions(db_path=db_path, once=True))
    return db_path


@pytest.fixture
def client(published, tmp_path, corpus_dir):
    options = ServiceOptions(
        db_path=published,
        token=TOKEN,
        data_root=corpus_dir.parent,
        max_instances=5,
        max_body_bytes=10_000,
        reload_seconds=0.1,
    )
    with TestClient(create_app(options)) as test_client:
        yield test_client


def test_predict_matches_the_library(client, published):
    texts = ["the striker scored twice and the team won the match", "the rocket reached orbit", "fry the onions"]
    model = load_model(open_db(published)["models"].get(("sample", 1))["path"])
    response = client.post("/v1/models/sample:predict", json={"instances": texts, "top_k": 2})
    assert response.status_code == 200
    body = response.json()
    assert body["version"] == 1 and [p["label"] for p in body["predictions"]] == model.predict(texts)
    top = body["predictions"][0]["top"]
    assert len(top) == 2 and top[0]["probability"] == pytest.approx(model.predict_proba(texts[:1]).max(), abs=1e-5)
    assert client.get("/v1/models").json()["models"][0]["name"] == "sample"
    assert "path" not in client.get("/v1/models").json()["models"][0]  # no server paths in answers
    assert client.get("/v1/models/sample").json()["versions"][0]["version"] == 1
    assert client.get("/health/ready").json() == {"status": "ready", "models": 1}
    assert client.get("/health/live").status_code == 200
    for path in ("/nope/1", "/nope/2", "/v1/models/other"):
        client.get(path)
    exposed = client.get("/metrics").text
    # labelled by route template and method: a 404 path or another model name adds no series
    assert 'textclf_http_requests_total{handler="/v1/models/{name}",method="GET",status="200"}' in exposed
    assert 'handler="/v1/models/{name}:predict"' in exposed and "/nope" not in exposed and "other" not in exposed
    # a prediction answered by PlainPredict (in front of FastAPI) counts in the same series
    before = _series(
        exposed, 'textclf_http_requests_total{handler="/v1/models/{name}:predict",method="POST",status="200"}'
    )
    assert client.post("/v1/models/sample:predict", json={"instances": ["rocket"]}).status_code == 200
    after = _series(
        client.get("/metrics").text,
        'textclf_http_requests_total{handler="/v1/models/{name}:predict",method="POST",status="200"}',
    )
    assert after == before + 1
    assert client.get("/openapi.json").status_code == 200


def test_the_published_metadata_names_what_predict_answers(client):
    signature = client.get("/v1/models/sample/metadata").json()["metadata"]["signature_def"]["signature_def"][
        "serving_default"
    ]
    rows = client.post("/v1/models/sample:predict", json={"instances": ["the striker scored"]}).json()["predictions"]
    columns = client.post("/v1/models/sample:predict", json={"inputs": ["the striker scored"]}).json()["outputs"]
    assert set(signature["outputs"]) == set(rows[0]) == set(columns) == {"label", "top"}
    assert list(signature["inputs"]) == ["text"]


def test_no_api_docs_page_that_needs_a_cdn_only_the_schema(client):
    """FastAPI's /docs and /redoc load their script from a CDN (a blank page offline): off; the OpenAPI schema
    stays."""
    assert client.get("/docs").status_code == client.get("/redoc").status_code == 404
    assert client.get("/openapi.json").json()["info"]["title"] == "textclf"


def _series(exposed: str, name: str) -> float:
    return next((float(line.split()[-1]) for line in exposed.splitlines() if line.startswith(name)), 0.0)


@pytest.mark.parametrize(
    "kwargs, status",
    [
        (dict(json={"instances": []}), 400),
        (dict(json={"instances": "not a list"}), 422),
        (dict(json={"instances": [1, 2]}), 422),
        (dict(content=b"{not json", headers={"content-type": "application/json"}), 400),  # not JSON: 400, as TF Serving
        (dict(content=b"{not json"), 400),
        (dict(content=b'{"instances": ["\xff\xfe"]}', headers={"content-type": "application/json"}), 400),  # not UTF-8
        (dict(json={"instances": ["rocket"], "top_k": True}), 422),  # a boolean is not a count
        (dict(json={"instances": ["rocket"], "top_k": 0}), 422),
        (dict(json={"instances": ["rocket"], "top_k": -2}), 422),
        (dict(json={"instances": ["x"] * 6}), 413),
        (dict(json={"instances": ["x" * 20_000]}), 413),
    ],
)
def test_bad_requests_get_4xx_json_and_the_service_keeps_serving(client, kwargs, status):
    response = client.post("/v1/models/sample:predict", **kwargs)
    assert response.status_code == status and "error" in response.json()
    if kwargs.get("content", b"").startswith(b"{not"):
        assert response.json()["error"] == "the body is not valid JSON (at character 1): send one JSON object"
    assert client.post("/v1/models/sample:predict", json={"instances": ["rocket"]}).status_code == 200


@pytest.mark.parametrize(
    "kwargs",
    [
        dict(json={"instances": []}),
        dict(json={"instances": [1, 2]}),
        dict(json={"top_k": 1}),
        dict(content=b""),
        dict(content=b"{not json", headers={"content-type": "application/json"}),
        dict(content=b'{"instances": ["\xff\xfe"]}', headers={"content-type": "application/json"}),
        dict(json={"instances": ["x"] * 6}),
        dict(json={"instances": ["rocket"], "top_k": 2}),
    ],
)
def test_the_hot_predict_route_answers_as_the_documented_one(client, kwargs):
    # /v1/models/{name}:predict is answered by PlainPredict in front of FastAPI when valid (errors go on to
    # FastAPI); the pinned-version route is FastAPI's alone: the same statuses and answers.
    hot = client.post("/v1/models/sample:predict", **kwargs)
    pinned = client.post("/v1/models/sample/versions/1:predict", **kwargs)
    assert hot.status_code == pinned.status_code
    assert hot.json() == pinned.json()
    assert hot.headers["content-type"] == pinned.headers["content-type"]


def test_device_scoring_matches_host(published):
    texts = ["the striker scored", "the rocket reached orbit", "fry the onions", "x"]
    answers = {}
    for where in ("host", "device"):
        with TestClient(create_app(ServiceOptions(db_path=published, score_on=where))) as c:
            answers[where] = c.post("/v1/models/sample:predict", json={"instances": texts, "top_k": 3}).json()
    # The GPU computes the device side's matmuls in TF32 (~5e-4 relative): probabilities agree to 2e-3 there,
    # and the top label must agree wherever the host's top two are further apart than that.
    for host, device in zip(answers["host"]["predictions"], answers["device"]["predictions"]):
        host_p = {t["label"]: t["probability"] for t in host["top"]}
        device_p = {t["label"]: t["probability"] for t in device["top"]}
        assert host_p.keys() == device_p.keys()
        for label, p in host_p.items():
            assert device_p[label] == pytest.approx(p, abs=2e-3), label
        first, second = sorted(host_p.values(), reverse=True)[:2]
        if first - second > 4e-3:
            assert host["label"] == device["label"]


def test_unknown_model_and_job(client):
    assert client.post("/v1/models/nope:predict", json={"instances": ["x"]}).status_code == 404
    assert client.get("/v1/models/nope").status_code == 404
    assert client.get("/v1/jobs/999").status_code == 404


def test_job_submission_needs_token_and_data_root(client, corpus_dir, tmp_path):
    assert client.post("/v1/jobs", json={"corpus": str(corpus_dir)}).status_code == 401
    auth = {"Authorization": f"Bearer {TOKEN}"}
    outside = client.post("/v1/jobs", json={"corpus": "/etc"}, headers=auth)
    assert outside.status_code == 400 and "outside the data root" in outside.json()["error"]
    bad = client.post("/v1/jobs", json={"corpus": str(corpus_dir), "settings": {"epochs": 0}}, headers=auth)
    assert bad.status_code == 400 and "epochs must be 1 to 10,000" in bad.json()["error"]
    created = client.post(
        "/v1/jobs", json={"corpus": str(corpus_dir), "name": "again", "settings": {"epochs": 1}}, headers=auth
    )
    assert created.status_code == 201 and created.json()["status"] == "queued"
    # a relative path is read under the data root, whatever folder the server runs in
    relative = client.post("/v1/jobs", json={"corpus": corpus_dir.name, "settings": {"epochs": 1}}, headers=auth)
    assert relative.status_code == 201 and relative.json()["corpus"] == str(corpus_dir.resolve()), relative.json()
    escaping = client.post("/v1/jobs", json={"corpus": f"../{corpus_dir.name}"}, headers=auth)
    assert escaping.status_code == 400 and "outside the data root" in escaping.json()["error"]
    assert client.get(f"/v1/jobs/{created.json()['id']}").json()["name"] == "again"
    for name in ("../../../../tmp/ESCAPED", "/tmp/ESCAPED", ".hidden", "a\x00b", "x" * 65):
        refused = client.post("/v1/jobs", json={"corpus": str(corpus_dir), "name": name}, headers=auth)
        assert refused.status_code == 400 and "is not allowed" in refused.json()["error"], name


def test_token_everywhere_off_loopback(published):
    options = ServiceOptions(db_path=published, token=TOKEN, require_token_everywhere=True)
    with TestClient(create_app(options)) as c:
        assert c.get("/v1/models").status_code == 401
        assert c.get("/v1/models", headers={"Authorization": f"Bearer {TOKEN}"}).status_code == 200
        body = {"instances": ["rocket"]}
        assert c.post("/v1/models/sample:predict", json=body).status_code == 401
        assert (
            c.post("/v1/models/sample:predict", json=body, headers={"Authorization": "Bearer wrong"}).status_code == 401
        )
        assert (
            c.post("/v1/models/sample:predict", json=body, headers={"Authorization": f"Bearer {TOKEN}"}).status_code
            == 200
        )
        assert c.get("/health/live").status_code == 200
        assert c.get("/v2/health/live").status_code == c.get("/v2/health/ready").status_code == 200  # probes
        assert c.get("/v2/models/sample").status_code == 401
        for scheme in ("bearer", "BEARER"):  # a scheme's name in any case (RFC 9110)
            assert (
                c.post(
                    "/v1/models/sample:predict", json=body, headers={"Authorization": f"{scheme} {TOKEN}"}
                ).status_code
                == 200
            )
        assert (
            c.post("/v1/models/sample:predict", json=body, headers={"Authorization": f"Basic {TOKEN}"}).status_code
            == 401
        )


def test_a_body_with_no_content_type_is_json_and_top_k_minus_one_is_every_label(client):
    """TF Serving reads any body as JSON (its curl examples send a form's content type, or none); -1 asks for every
    label, as the CLI's -k -1 does."""
    for path in ("/v1/models/sample:predict", "/v1/models/sample/versions/1:predict"):
        rows = client.post(path, content=json.dumps({"instances": ["rocket"], "top_k": -1}).encode())
        assert rows.status_code == 200, rows.json()
        assert len(rows.json()["predictions"][0]["top"]) == 3  # the sample model's three labels
        columns = client.post(path, content=json.dumps({"inputs": {"text": ["rocket"]}}).encode())
        assert columns.status_code == 200, columns.json()
        form = client.post(
            path,
            content=b'{"instances": ["rocket"]}',  # what `curl -d` sends
            headers={"content-type": "application/x-www-form-urlencoded"},
        )
        assert form.status_code == 200, form.json()


def test_hot_reload_under_concurrent_load(published, corpus_dir, fast_settings):
    """A bounded load test: 50 concurrent clients x 200 requests while version 2 is published in the
    middle: no errors, both versions served, the last answers from version 2."""
    options = ServiceOptions(db_path=published, reload_seconds=0.05)
    app = create_app(options)
    versions: list[int] = []

    async def client_loop(client: httpx.AsyncClient) -> None:
        for _ in range(200):
            response = await client.post("/v1/models/sample:predict", json={"instances": ["the moon orbit"]})
            assert response.status_code == 200, response.text
            versions.append(response.json()["version"])

    async def main() -> None:
        transport = httpx.ASGITransport(app=app)
        async with app.app.router.lifespan_context(app.app):
            async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
                await client.post("/v1/models/sample:predict", json={"instances": ["warm up"]})
                load = asyncio.gather(*(client_loop(client) for _ in range(50)))
                jobs.submit(open_db(published), str(corpus_dir), fast_settings.replace(seed=3).to_dict(), "sample")
                await asyncio.to_thread(run_daemon, DaemonOptions(db_path=published, once=True, publish="always"))
                await load
                await asyncio.sleep(0.2)
                after = await client.post("/v1/models/sample:predict", json={"instances": ["x"]})
                versions.append(after.json()["version"])

    asyncio.run(main())
    assert len(versions) == 10_001 and set(versions) == {1, 2} and versions[-1] == 2


def test_end_to_end_daemon_and_service_subprocesses(corpus_dir, tmp_path, isolated_home):
    db_path = tmp_path / "e2e.db"
    port = free_port()
    env = {**os.environ, "TEXTCLF_HOME": str(isolated_home), "TEXTCLF_TOKEN": TOKEN}
    cli = [sys.executable, "-m", "textclf"]
    service = subprocess.Popen(
        cli + ["serve", "--port", str(port), "--db", str(db_path), "--data-root", str(tmp_path)],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    daemon = subprocess.Popen(
        cli + ["daemon", "--db", str(db_path), "--poll", "0.2"],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = wait_until_answers(f"{base}/health/live")
        job = httpx.post(
            f"{base}/v1/jobs",
            headers={"Authorization": f"Bearer {TOKEN}"},
            timeout=10,
            json={
                "corpus": str(corpus_dir),
                "name": "e2e",
                "settings": {"epochs": 2, "min_steps": 60, "batch_size": 8, "learning_rate": 0.5},
            },
        )
        assert job.status_code == 201, job.text
        while (status := httpx.get(f"{base}/v1/jobs/{job.json()['id']}", timeout=5).json()["status"]) in (
            "queued",
            "running",
        ):
            assert time.time() < deadline + 120, "job did not finish"
            time.sleep(0.2)
        assert status == "succeeded"
        predicted = httpx.post(
            f"{base}/v1/models/e2e:predict", json={"instances": ["the rocket reached orbit"]}, timeout=10
        )
        assert predicted.status_code == 200 and predicted.json()["predictions"][0]["label"] == "space"
    finally:
        for process in (daemon, service):
            process.terminate()
        for process in (daemon, service):
            process.wait(timeout=30)
    assert daemon.returncode == 0


def test_serve_with_several_worker_processes(published, isolated_home):
    port = free_port()
    env = {**os.environ, "TEXTCLF_HOME": str(isolated_home)}
    service = subprocess.Popen(
        [sys.executable, "-m", "textclf", "serve", "--port", str(port), "--db", str(published), "--workers", "2"],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        wait_until_answers(f"{base}/health/live")
        for _ in range(10):  # spread over both workers by the kernel's accept queue
            response = httpx.post(f"{base}/v1/models/sample:predict", json={"instances": ["a rocket"]}, timeout=10)
            assert response.status_code == 200 and response.json()["version"] == 1
    finally:
        service.terminate()
        output, _ = service.communicate(timeout=30)
    assert service.returncode == 0, output


def test_a_pinned_version_and_the_kserve_v2_protocol(client, published):
    texts = ["the striker scored twice and the team won the match", "the rocket reached orbit"]
    model = load_model(open_db(published)["models"].get(("sample", 1))["path"])
    pinned = client.post("/v1/models/sample/versions/1:predict", json={"instances": texts})
    assert pinned.status_code == 200 and pinned.json()["version"] == 1
    assert [p["label"] for p in pinned.json()["predictions"]] == model.predict(texts)
    assert client.post("/v1/models/sample/versions/2:predict", json={"instances": texts}).status_code == 404
    assert client.post("/v1/models/sample/versions/0:predict", json={"instances": texts}).status_code == 422
    assert client.get("/v2/health/live").json() == {"live": True}
    assert client.get("/v2/health/ready").json() == {"ready": True}
    meta = client.get("/v2/models/sample").json()
    assert meta["versions"] == ["1"] and meta["inputs"][0]["datatype"] == "BYTES"
    assert meta["parameters"]["labels"] == list(model.labels)
    assert client.get("/v2/models/sample/ready").json()["ready"] is True
    request = {"id": "r1", "inputs": [{"name": "text", "shape": [2], "datatype": "BYTES", "data": texts}]}
    for path in ("/v2/models/sample/infer", "/v2/models/sample/versions/1/infer"):
        answer = client.post(path, json=request).json()
        assert answer["id"] == "r1" and answer["model_version"] == "1"
        labels, probabilities = answer["outputs"]
        assert labels["data"] == model.predict(texts)
        assert probabilities["shape"] == [2, len(model.labels)]
        np.testing.assert_allclose(np.reshape(probabilities["data"], (2, -1)), model.predict_proba(texts), atol=1e-5)
    for bad, fragment in (
        ({"inputs": [{"name": "text", "shape": [3], "datatype": "BYTES", "data": texts}]}, "shape"),
        ({"inputs": [{"name": "text", "shape": [2], "datatype": "FP32", "data": texts}]}, "BYTES"),
        ({"inputs": [{"name": "text", "shape": [0], "datatype": "BYTES", "data": []}]}, "no texts"),
    ):
        refused = client.post("/v2/models/sample/infer", json=bad)
        assert refused.status_code == 400 and fragment in refused.json()["error"]
    assert client.post("/v2/models/nope/infer", json=request).status_code == 404


def test_job_settings_are_validated_strictly(client, corpus_dir):
    auth = {"Authorization": f"Bearer {TOKEN}"}
    for job_settings, fragment in (
        ({"epochs": "abc"}, "'epochs'"),
        ({"epochs": 1.5}, "'epochs'"),
        ({"epochz": 3}, "unknown setting 'epochz'"),
        ("fast", "valid dictionary"),
    ):
        refused = client.post("/v1/jobs", json={"corpus": str(corpus_dir), "settings": job_settings}, headers=auth)
        assert refused.status_code in (400, 422) and fragment in str(refused.json()["error"]), job_settings
    assert client.get(f"/v1/jobs/{10**23}").status_code == 422
    nul = client.post("/v1/jobs", json={"corpus": str(corpus_dir) + "\x00x"}, headers=auth)
    assert nul.status_code == 400 and "NUL byte" in nul.json()["error"]
    created = client.post(
        "/v1/jobs", json={"corpus": str(corpus_dir), "settings": {"learning_rate": 0.01}}, headers=auth
    ).json()
    assert created["settings"]["pinned"] == ["learning_rate"]


def test_a_chunked_body_over_the_limit_gets_413_as_it_arrives(client):
    sent = []

    def chunks():  # no Content-Length: the size is known only from the bytes themselves
        yield b'{"instances": ["'
        for _ in range(100):
            sent.append(1)
            yield b"x" * 1000
        yield b'"]}'

    response = client.post("/v1/models/sample:predict", content=chunks(), headers={"content-type": "application/json"})
    assert response.status_code == 413 and "over 10000 bytes" in response.json()["error"]
    assert client.post("/v1/models/sample:predict", json={"instances": ["rocket"]}).status_code == 200


def test_a_damaged_published_version_is_not_served_and_the_previous_one_is(
    published, corpus_dir, fast_settings, caplog
):
    db = open_db(published)
    jobs.submit(db, str(corpus_dir), fast_settings.replace(seed=5).to_dict(), "sample")
    run_daemon(DaemonOptions(db_path=published, once=True, publish="always"))
    v2 = Path(db["models"].get(("sample", 2))["path"])
    v2.write_bytes(v2.read_bytes()[:500])  # the disk damaged the newest version
    with TestClient(create_app(ServiceOptions(db_path=published, reload_seconds=0.05))) as client:
        answer = client.post("/v1/models/sample:predict", json={"instances": ["the rocket reached orbit"]})
        assert answer.status_code == 200 and answer.json()["version"] == 1  # not a 400 blaming the client
        pinned = client.post("/v1/models/sample/versions/2:predict", json={"instances": ["x"]})
        assert pinned.status_code == 503 and "republish" in pinned.json()["error"]
        # a damaged version published while serving: said once in the log, the current version keeps serving
        v3 = v2.parent / "v3.textclf.npz"
        v3.write_bytes(b"not a model")
        assert jobs.publish_model(db, "sample", path=str(v3), eval_accuracy=1.0) == 3
        time.sleep(0.5)
        answer = client.post("/v1/models/sample:predict", json={"instances": ["the rocket reached orbit"]})
        assert answer.status_code == 200 and answer.json()["version"] == 1
        # TF Serving's status says so: the damaged versions END with the reason, the serving one AVAILABLE
        status = {s["version"]: s for s in client.get("/v1/models/sample").json()["model_version_status"]}
        assert status["1"]["state"] == "AVAILABLE" and status["1"]["status"]["error_code"] == "OK"
        for damaged in ("2", "3"):
            assert status[damaged]["state"] == "END" and status[damaged]["status"]["error_code"] == "UNKNOWN"
            assert "is corrupt or not a textclf model" in status[damaged]["status"]["error_message"]
        [pinned] = client.get("/v1/models/sample/versions/3").json()["model_version_status"]
        assert pinned["state"] == "END"
    assert sum("sample v3 cannot be loaded" in r.getMessage() for r in caplog.records) == 1


TEXTS = st.lists(
    st.text(st.characters(blacklist_categories=("Cs", "Cc", "Zl", "Zp")), min_size=1, max_size=40).filter(
        lambda text: text.strip() and "\x85" not in text
    ),
    min_size=1,
    max_size=5,
)


@settings(deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(texts=TEXTS, threshold=st.one_of(st.none(), st.floats(0, 1)))
def test_the_cli_and_both_service_routes_answer_generated_documents_alike(client, published, texts, threshold):
    """One contract for every face: the same documents (and threshold, the CLI's -t) get the same labels and
    probabilities from `textclf predict`, TF Serving's row and columnar :predict and the Open Inference Protocol's
    infer (its parameters.threshold; its "label" "" where the v1 routes' is null)."""
    from typer.testing import CliRunner

    from textclf.frontends.cli import app

    path = open_db(published)["models"].get(("sample", 1))["path"]
    given = {"top_k": -1, **({} if threshold is None else {"threshold": threshold})}
    rows = client.post("/v1/models/sample:predict", json={"instances": texts, **given}).json()["predictions"]
    columns = client.post("/v1/models/sample:predict", json={"inputs": texts, **given}).json()["outputs"]
    request = {
        "inputs": [{"name": "text", "shape": [len(texts)], "datatype": "BYTES", "data": texts}],
        **({} if threshold is None else {"parameters": {"threshold": threshold}}),
    }
    labels, probabilities = client.post("/v2/models/sample/infer", json=request).json()["outputs"]
    printed = CliRunner().invoke(
        app,
        [
            "predict",
            "-",
            "--lines",
            "--model",
            path,
            "--json",
            "-k",
            "-1",
            *([] if threshold is None else ["-t", repr(threshold)]),
        ],
        input="\n".join(texts) + "\n",
    )
    assert printed.exit_code == 0, printed.output
    cli = [json.loads(line) for line in printed.stdout.splitlines()]
    assert [r["label"] for r in rows] == columns["label"] == [c["label"] for c in cli]
    assert [r["label"] or "" for r in rows] == labels["data"]
    if threshold is not None:
        assert all(t["probability"] >= threshold for r in rows for t in r["top"])
    matrix = np.reshape(probabilities["data"], (len(texts), -1))
    for row, column_top, cli_row, probs in zip(rows, columns["top"], cli, matrix):
        assert row["top"] == column_top
        assert [t["label"] for t in row["top"]] == [t["label"] for t in cli_row["top"]]
        np.testing.assert_allclose(
            [t["probability"] for t in row["top"]], [t["probability"] for t in cli_row["top"]], atol=1e-5
        )
        listed = sorted((p for p in probs if threshold is None or p >= threshold), reverse=True)
        np.testing.assert_allclose([t["probability"] for t in row["top"]], listed, atol=1e-5)


@pytest.mark.parametrize("threshold", [1.5, -0.1, True, "0.5"])
def test_a_threshold_is_a_probability_on_the_service_as_on_the_command_line(client, threshold):
    refused = client.post("/v1/models/sample:predict", json={"instances": ["rocket"], "threshold": threshold})
    assert refused.status_code == 422 and "threshold" in refused.text
    request = {
        "inputs": [{"name": "text", "shape": [1], "datatype": "BYTES", "data": ["rocket"]}],
        "parameters": {"threshold": threshold},
    }
    refused = client.post("/v2/models/sample/infer", json=request)
    assert refused.status_code == 400 and "parameters.threshold is" in refused.json()["error"]
    assert "give a probability from 0 to 1" in refused.json()["error"]


def test_an_empty_document_is_refused_by_both_service_routes_alike(client):
    texts = ["the rocket reached orbit", " "]
    v1 = client.post("/v1/models/sample:predict", json={"instances": texts})
    request = {"inputs": [{"name": "text", "shape": [2], "datatype": "BYTES", "data": texts}]}
    v2 = client.post("/v2/models/sample/infer", json=request)
    assert v1.status_code == v2.status_code == 400
    assert v1.json()["error"] == v2.json()["error"] == "instance 1 is empty: there is nothing to classify"
