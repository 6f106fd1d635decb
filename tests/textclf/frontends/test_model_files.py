"""`textclf serve MODEL_FILE_OR_FOLDER...`: model files served as they lie on disk (textclf/frontends/service/
model_files.py), in-process and as a real server process with a real HTTP client."""

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from tests.conftest import free_port, wait_until_answers
from textclf.errors import SettingsError
from textclf.frontends.cli import app as cli
from textclf.frontends.service import ServiceOptions, create_app
from textclf.frontends.service.model_files import ModelFiles, model_name

REPO = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def two_models(tmp_path_factory):
    """Two different model files of the sample corpus (other seeds: other weights)."""
    from textclf.runs.run import train
    from textclf.settings import Settings

    corpus = REPO / "textclf" / "sample_corpus"
    folder = tmp_path_factory.mktemp("models")
    paths = []
    for seed in (0, 1):
        settings = Settings(
            epochs=2,
            min_steps=60,
            batch_size=8,
            hidden=16,
            optimizer="sgd",
            learning_rate=0.5,
            init_gain=4.0,
            search="off",
            seed=seed,
        )
        result = train(corpus, settings, db_path=folder / "runs.db", model_path=folder / f"m{seed}.npz")
        paths.append(Path(result.model_path))
    return paths


def _probabilities(client, path: str) -> list:
    answer = client.post(path, json={"instances": ["the rocket reached orbit"], "top_k": -1})
    assert answer.status_code == 200, answer.text
    return answer.json()


def test_a_file_is_served_under_its_name_and_a_replaced_file_is_its_next_version(two_models, tmp_path):
    served = tmp_path / "news.textclf.npz"
    shutil.copy(two_models[0], served)
    options = ServiceOptions(db_path=tmp_path / "runs.db", model_paths=[str(served)], reload_seconds=0.05)
    with TestClient(create_app(options)) as client:
        first = _probabilities(client, "/v1/models/news:predict")
        assert first["version"] == 1
        [listed] = client.get("/v1/models").json()["models"]
        assert (listed["name"], listed["version"], listed["source"]) == ("news", 1, "file")
        assert "path" not in listed  # no server paths
        replacement = tmp_path / "incoming.npz"
        shutil.copy(two_models[1], replacement)
        os.replace(replacement, served)  # as `textclf train --out` writes: a new file moved into place
        deadline = time.monotonic() + 10
        while (second := _probabilities(client, "/v1/models/news:predict"))["version"] == 1:
            assert time.monotonic() < deadline, "the replaced file was not picked up"
            time.sleep(0.05)
        assert second["version"] == 2 and second["predictions"] != first["predictions"]
        assert client.get("/v2/models/news").json()["versions"] == ["2"]


def test_a_folder_serves_its_numbered_files_as_versions(two_models, tmp_path):
    folder = tmp_path / "news"
    folder.mkdir()
    shutil.copy(two_models[0], folder / "1.npz")
    shutil.copy(two_models[1], folder / "2.textclf.npz")
    (folder / "notes.txt").write_text("not a version")
    options = ServiceOptions(db_path=tmp_path / "runs.db", model_paths=[str(folder)], reload_seconds=0.05)
    with TestClient(create_app(options)) as client:
        newest = _probabilities(client, "/v1/models/news:predict")
        pinned = _probabilities(client, "/v1/models/news/versions/1:predict")
        assert newest["version"] == 2 and pinned["version"] == 1 and newest["predictions"] != pinned["predictions"]
        shutil.copy(two_models[0], folder / "3.npz")
        deadline = time.monotonic() + 10
        while _probabilities(client, "/v1/models/news:predict")["version"] != 3:
            assert time.monotonic() < deadline, "version 3 was not picked up"
            time.sleep(0.05)


@pytest.mark.parametrize(
    "make, fragment",
    [
        (lambda d: [d / "missing.npz"], "model file '.*missing.npz' does not exist"),
        (lambda d: [d], "holds no numbered model file"),
        (lambda d: [d / "a" / "m.npz", d / "b" / "m.npz"], "two models are named 'm'"),
    ],
)
def test_model_paths_that_cannot_be_served_are_refused_before_the_service_starts(tmp_path, make, fragment):
    for sub in ("a", "b"):
        (tmp_path / sub).mkdir()
        (tmp_path / sub / "m.npz").write_bytes(b"x")
    with pytest.raises(SettingsError, match=fragment):
        ModelFiles(make(tmp_path))


def test_model_names_come_from_the_file_or_the_folder():
    assert [model_name(Path(p)) for p in ("a/news.npz", "a/news.textclf.npz", "a/news", "a/.npz")] == [
        "news",
        "news",
        "news",
        ".npz",
    ]


def test_the_cli_refuses_a_file_that_is_not_a_model_with_one_line(tmp_path):
    fake = tmp_path / "fake.npz"
    fake.write_text("not a model")
    for given, fragment in ((fake, "is corrupt or not a textclf model"), (tmp_path / "none.npz", "does not exist")):
        result = CliRunner().invoke(cli, ["serve", str(given), "--port", str(free_port())])
        assert result.exit_code == 1 and fragment in result.stderr and result.stderr.count("\n") == 1, result.output


def test_train_then_serve_the_file_then_curl_in_real_processes(two_models, tmp_path, isolated_home):
    """The README's quick start: a model file from `textclf train --out`, served by `textclf serve FILE`, asked
    as TF Serving's own examples ask (curl -d: a form's content type) and as the Open Inference Protocol."""
    served = tmp_path / "sample.npz"
    shutil.copy(two_models[0], served)
    port = free_port()
    env = {**os.environ, "TEXTCLF_HOME": str(isolated_home)}
    service = subprocess.Popen(
        [sys.executable, "-m", "textclf", "serve", str(served), "--port", str(port)],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        wait_until_answers(f"{base}/health/live")
        tf = httpx.post(
            f"{base}/v1/models/sample:predict",
            content=b'{"instances": ["the rocket reached orbit"]}',
            headers={"content-type": "application/x-www-form-urlencoded"},
            timeout=10,
        )
        assert tf.status_code == 200 and tf.json()["predictions"][0]["label"] == "space", tf.text
        oip = httpx.post(
            f"{base}/v2/models/sample/infer",
            timeout=10,
            json={"inputs": [{"name": "text", "datatype": "BYTES", "shape": [1], "data": ["fry the onions"]}]},
        )
        assert oip.status_code == 200 and oip.json()["outputs"][0]["data"] == ["cooking"], oip.text
        tritonclient = pytest.importorskip("tritonclient.http")  # the Open Inference Protocol's own client
        import numpy as np

        from textclf.inference.artifacts import load_model

        client = tritonclient.InferenceServerClient(url=f"127.0.0.1:{port}")
        assert client.is_model_ready("sample") and client.get_model_metadata("sample")["versions"] == ["1"]
        texts = ["the rocket reached orbit", "fry the onions"]
        text = tritonclient.InferInput("text", [2], "BYTES")
        text.set_data_from_numpy(np.array([t.encode() for t in texts], dtype=object))
        result = client.infer("sample", [text])
        np.testing.assert_allclose(result.as_numpy("probabilities"), load_model(served).predict_proba(texts), atol=1e-5)
    finally:
        service.terminate()
        service.wait(timeout=20)
