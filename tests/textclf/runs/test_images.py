"""Images end to end: `textclf train IMAGES --model cnn`, `textclf predict image.png`, the daemon."""

import json

import numpy as np
import pytest
from PIL import Image
from typer.testing import CliRunner

from db import jobs, open_db
from textclf.inference.artifacts import load_model
from textclf.frontends.cli import app
from textclf.frontends.daemon import DaemonOptions, run_daemon

FAST = [
    "--model",
    "cnn",
    "--conv-channels",
    "4,8",
    "--conv-kernel",
    "3",
    "--hidden",
    "16",
    "--epochs",
    "8",
    "--batch-size",
    "16",
    "--lr",
    "0.003",
    "--backend",
    "xla",
]


@pytest.fixture
def image_dir(tmp_path):
    """Two classes told apart by where the bright half is: left or right."""
    rng = np.random.default_rng(0)
    root = tmp_path / "images"
    for label, cols in (("left", slice(0, 6)), ("right", slice(6, 12))):
        (root / label).mkdir(parents=True)
        for i in range(40):
            pixels = rng.integers(0, 60, (12, 12)).astype(np.uint8)
            pixels[:, cols] += 150
            Image.fromarray(pixels, "L").save(root / label / f"{i}.png")
    return root


def test_train_and_predict_images(image_dir, tmp_path, db_path):
    runner = CliRunner()
    model_path = tmp_path / "cnn.npz"
    result = runner.invoke(
        app, ["train", str(image_dir), "--out", str(model_path), "--db", str(db_path), "--json", *FAST]
    )
    assert result.exit_code == 0, result.output
    summary = json.loads(result.output)
    assert summary["eval_kind"] == "validation" and summary["eval_accuracy"] >= 0.9
    model = load_model(model_path)
    assert model.image_shape == (12, 12, 1) and model.labels == ["left", "right"]
    probe = tmp_path / "probe.png"
    pixels = np.zeros((12, 12), np.uint8)
    pixels[:, 6:] = 200
    Image.fromarray(pixels, "L").save(probe)
    result = runner.invoke(app, ["predict", str(probe), "--model", str(model_path), "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output.splitlines()[0])["label"] == "right"  # JSON Lines
    small = tmp_path / "small.png"
    Image.fromarray(np.zeros((8, 8), np.uint8), "L").save(small)
    result = runner.invoke(app, ["predict", str(small), "--model", str(model_path)])
    assert result.exit_code == 1 and "is 8x8 but the model takes 12x12: resize it first" in result.output
    result = runner.invoke(app, ["eval", str(image_dir), "--model", str(model_path), "--json"])
    assert result.exit_code == 0, result.output
    scored = json.loads(result.output)
    assert scored["n"] == 80 and scored["accuracy"] >= 0.9 and scored["labels"] == ["left", "right"]
    text = tmp_path / "note.txt"
    text.write_text("a text document")
    result = runner.invoke(app, ["predict", str(text), "--model", str(model_path)])
    assert result.exit_code == 1 and "this is an image model" in result.output


def test_image_corpus_errors_and_settings(tmp_path, db_path):
    runner = CliRunner()
    (tmp_path / "one" / "only").mkdir(parents=True)
    Image.new("L", (4, 4)).save(tmp_path / "one" / "only" / "a.png")
    result = runner.invoke(app, ["train", str(tmp_path / "one"), "--db", str(db_path), *FAST])
    assert result.exit_code == 1 and "only one class" in result.output
    result = runner.invoke(app, ["train", str(tmp_path / "one"), "--model", "cnn", "--conv-kernel", "4"])
    assert result.exit_code == 1 and "conv_kernel must be odd" in result.output
    from db import runs

    recorded = len(runs.list_runs(open_db(db_path)))
    result = runner.invoke(app, ["train", str(tmp_path / "one"), "--augment", "flip", "--db", str(db_path)])
    assert result.exit_code == 1 and "--augment applies to image models only: add --model cnn" in result.output
    assert len(runs.list_runs(open_db(db_path))) == recorded  # refused before a run was recorded


def test_daemon_trains_image_jobs(image_dir, db_path):
    settings = {
        "model": "cnn",
        "conv_channels": "4,8",
        "conv_kernel": 3,
        "hidden": 16,
        "epochs": 3,
        "batch_size": 16,
        "backend": "xla",
    }
    job_id = jobs.submit(open_db(db_path), str(image_dir), settings, "shapes")
    assert run_daemon(DaemonOptions(db_path=db_path, once=True)) == 1
    db = open_db(db_path)
    assert jobs.get(db, job_id)["status"] == "succeeded"
    assert load_model(db["models"].get(("shapes", 1))["path"]).labels == ["left", "right"]


def test_image_run_stops_and_resumes_through_train(image_dir, db_path, tmp_path):
    from db import runs
    from textclf.training.checkpoint import Checkpointer
    from textclf.settings import Settings
    from textclf.runs.run import train
    from textclf.training.events import TrainingStopped

    settings = Settings(model="cnn", conv_channels="4", conv_kernel=3, hidden=8, epochs=3, batch_size=16, backend="xla")
    checkpoint = Checkpointer(tmp_path / "job.npz", every_seconds=3600)
    with pytest.raises(TrainingStopped):
        train(image_dir, settings, db_path=db_path, checkpointer=checkpoint, stop_requested=lambda: True)
    db = open_db(db_path)
    assert runs.list_runs(db)[0]["status"] == "interrupted" and checkpoint.load().epochs_done == 1
    result = train(image_dir, settings, db_path=db_path, checkpointer=checkpoint)
    assert [h.epoch for h in result.history] == [1, 2, 3]
    assert [e["epoch"] for e in runs.get_run(db, result.run_id)["epochs"]] == [2, 3]


def test_service_classifies_base64_images(image_dir, db_path):
    """An image model published by the daemon answers POST :predict with base64-encoded image files; a
    bad instance gets a 400 that names it."""
    import base64

    from fastapi.testclient import TestClient

    from textclf.frontends.service import ServiceOptions, create_app

    settings = {
        "model": "cnn",
        "conv_channels": "4,8",
        "conv_kernel": 3,
        "hidden": 16,
        "epochs": 8,
        "batch_size": 16,
        "learning_rate": 0.003,
        "backend": "xla",
    }
    jobs.submit(open_db(db_path), str(image_dir), settings, "shapes")
    assert run_daemon(DaemonOptions(db_path=db_path, once=True)) == 1
    files = [image_dir / "left" / "0.png", image_dir / "right" / "0.png"]
    encoded = [base64.b64encode(f.read_bytes()).decode() for f in files]
    with TestClient(create_app(ServiceOptions(db_path=db_path))) as client:
        response = client.post("/v1/models/shapes:predict", json={"instances": encoded, "top_k": 2})
        assert response.status_code == 200, response.text
        assert [p["label"] for p in response.json()["predictions"]] == ["left", "right"]
        bad = client.post("/v1/models/shapes:predict", json={"instances": [encoded[0], "not base64!"]})
        assert bad.status_code == 400 and "instance 1 is not base64" in bad.json()["error"]
        Image.new("L", (5, 5)).save(image_dir / "small.png")
        small = base64.b64encode((image_dir / "small.png").read_bytes()).decode()
        wrong = client.post("/v1/models/shapes:predict", json={"instances": [small]})
        assert wrong.status_code == 400 and "5x5 but the model takes 12x12" in wrong.json()["error"]


@pytest.mark.skipif(
    __import__("jax").default_backend() != "cpu",
    reason="a CPU runs a CNN epoch step by step and reports the steps (training/cnn.py); a GPU's is one program",
)
def test_image_training_reports_its_epochs_once_and_steps_within_them(image_dir, tmp_path, db_path):
    result = CliRunner().invoke(
        app, ["train", str(image_dir), "--out", str(tmp_path / "cnn.npz"), "--db", str(db_path), *FAST]
    )
    assert result.exit_code == 0, result.output
    assert result.output.count("training 8 epochs") == 1 and "training 0 epochs" not in result.output
    # 72 training images in batches of 16: 5 steps an epoch, the last of each reported (the CPU's stepwise epoch)
    assert result.output.count("5/5 steps of this epoch") == 8


def test_an_image_run_is_planned_as_a_text_run_is(image_dir, tmp_path, db_path):
    """An image run takes the one plan (training/plan.py): recorded in its row (a CNN, one network on the images'
    pixels, the epochs as given), and `--plan-only` stops there, its model not trained."""
    from db import runs

    runner = CliRunner()
    result = runner.invoke(app, ["train", str(image_dir), "--db", str(db_path), "--plan-only", "--json", *FAST])
    assert result.exit_code == 0, result.output
    planned = runs.get_run(open_db(db_path), json.loads(result.output)["run_id"])
    assert planned["status"] == "planned" and planned["model_path"] is None
    plan = planned["plan"]
    assert plan["family"] == "cnn" and plan["arrangement"] == "one" and plan["networks"] == 1
    assert plan["views"][0]["columns"] == 12 * 12 and plan["views"][0]["epochs"] == 8
    assert plan["training_documents"] == 80 - 8 and plan["batch_size"] == 16
    trained = runner.invoke(app, ["train", str(image_dir), "--db", str(db_path), "--json", *FAST])
    assert trained.exit_code == 0, trained.output
    run = runs.get_run(open_db(db_path), json.loads(trained.output)["run_id"])
    assert run["status"] == "finished" and run["plan"] == plan
