"""Data parallelism (textclf/training/parallel/data.py) and several processes (textclf/training/parallel/processes.py),
on CPU
devices.

The device count of a JAX process is fixed when JAX starts, so multi-device runs happen in subprocesses with
XLA_FLAGS=--xla_force_host_platform_device_count=N; processes talk through jax.distributed (gloo on CPU).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from typer.testing import CliRunner

from tests.conftest import free_port
from textclf.errors import SettingsError
from textclf.frontends.cli import app
from textclf.training.parallel.data import check_batch
from textclf.training.parallel.processes import coordinates_from_env, initialize

REPO = Path(__file__).resolve().parents[4]
WORKER = Path(__file__).with_name("parallel_worker.py")


def _env(devices: int, home: Path) -> dict:
    path = os.pathsep.join([str(REPO)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p])
    env = dict(
        os.environ,
        XLA_FLAGS=f"--xla_force_host_platform_device_count={devices}",
        TEXTCLF_HOME=str(home),
        TEXTCLF_PALLAS_INTERPRET="1",
        PYTHONPATH=path,
        JAX_PLATFORMS="cpu",
    )
    env.pop("TEXTCLF_DB", None)
    return env


def _json_tail(text: str) -> dict:
    """The JSON object a command printed (gloo prints its connection lines to stdout first)."""
    return json.loads(text[text.index("{") :])


def test_batch_must_split_evenly():
    with pytest.raises(SettingsError, match="batch size 64 does not split evenly over 3 devices: pass --batch-size 63"):
        check_batch(64, SimpleNamespace(size=3))
    assert check_batch(64, SimpleNamespace(size=4)) == 16


@pytest.mark.parametrize(
    "case",
    [
        "xla:adam",
        "xla:sgd",
        "pallas:adam",
        "pallas:sgd",
        "xla-features:adam",
        "xla-features:sgd",
        "features-pieces:adam",
    ],
)
def test_one_and_four_devices_give_the_same_parameters(tmp_path, case):
    """Same global batches on 1 and on 4 devices: the same parameters up to float32 summation order, for the
    XLA path and the Pallas kernels (interpret mode) inside shard_map, both optimizers, and for W1 split by
    feature rows (xla-features: through fit_network; features-pieces: the pieces layout a GPU reads). One case
    a test, so that the test workers share them (together they were the suite's longest test)."""
    done = subprocess.run(
        [sys.executable, str(WORKER), case], env=_env(4, tmp_path), capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    results = json.loads(done.stdout)
    for case, result in results.items():
        assert result["devices"] == 4, case
        assert max(result["max_abs_diff"].values()) < 1e-5, (case, result)
        assert abs(result["loss"][0] - result["loss"][1]) < 1e-5, (case, result)
        if "eval_accuracy" in result:
            assert result["eval_accuracy"][0] == result["eval_accuracy"][1], (case, result)
        if "padding_rows_zero" in result:
            assert result["padding_rows_zero"], (case, result)


def _train_in_two_processes(tmp_path: Path, arguments: list[str], devices: int) -> list[dict]:
    """`textclf train ARGUMENTS --json` as processes 0 and 1 of a jax.distributed run on localhost, each with
    `devices` CPU devices and its own data dir, process i writing model{i}.npz -> their JSON results."""
    port = free_port()
    common = [
        sys.executable,
        "-m",
        "textclf",
        "train",
        *arguments,
        "--json",
        "--coordinator",
        f"127.0.0.1:{port}",
        "--num-processes",
        "2",
    ]
    procs = [
        subprocess.Popen(
            common + ["--process-id", str(i), "--out", str(tmp_path / f"model{i}.npz")],
            env=_env(devices, tmp_path / f"home{i}"),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for i in range(2)
    ]
    outputs = [p.communicate(timeout=300) for p in procs]
    for p, (out, err) in zip(procs, outputs):
        assert p.returncode == 0, (out + err)[-3000:]
    return [_json_tail(out) for out, _ in outputs]


def test_two_processes_each_read_their_share_and_train_like_one(tmp_path, corpus_dir):
    """Two `textclf train` processes (2 CPU devices each) joined through jax.distributed on localhost: each
    reads only its half of the training and test corpora (documents counted), they agree on the vocabulary
    through the runtime, only process 0 writes the model, and it matches a one-process run's model."""
    first, second = _train_in_two_processes(
        tmp_path,
        [str(corpus_dir), "--test", str(corpus_dir), "--epochs", "3", "--devices", "2", "--batch-size", "16"],
        devices=2,
    )
    assert first["model_path"] == str(tmp_path / "model0.npz") and second["model_path"] is None
    assert not (tmp_path / "model1.npz").exists()
    assert first["read_documents"] == second["read_documents"] == 18  # of the sample corpus's 36
    assert first["n_train"] == second["n_train"] == 36 and first["n_eval"] == 36
    single = subprocess.run(
        [
            sys.executable,
            "-m",
            "textclf",
            "train",
            str(corpus_dir),
            "--test",
            str(corpus_dir),
            "--json",
            "--epochs",
            "3",
            "--batch-size",
            "16",
            "--devices",
            "1",
            "--out",
            str(tmp_path / "single.npz"),
        ],
        env=_env(1, tmp_path / "home-single"),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert single.returncode == 0, single.stderr[-3000:]
    alone_result = _json_tail(single.stdout)
    assert alone_result["read_documents"] == 36
    assert alone_result["eval_accuracy"] == first["eval_accuracy"] == second["eval_accuracy"]
    with np.load(tmp_path / "model0.npz") as distributed, np.load(tmp_path / "single.npz") as alone:
        assert list(distributed["vectorizer.terms"]) == list(alone["vectorizer.terms"])
        np.testing.assert_allclose(distributed["vectorizer.idf"], alone["vectorizer.idf"], rtol=1e-6)
        for name in ("w1", "b1", "w2", "b2"):
            np.testing.assert_allclose(distributed[name], alone[name], atol=1e-5)
            assert np.abs(alone[name]).max() > 0


def test_two_processes_without_a_test_corpus_hold_out_from_their_shares(tmp_path):
    """A JSONL corpus (each process reads the lines that start in its half of the bytes) with the hashing
    vectorizer and no --test: every document is read by exactly one process, and each holds out a tenth of
    its own share."""
    corpus = tmp_path / "corpus.jsonl"
    words = {"cooking": "oven flour bake simmer", "space": "orbit rocket launch comet"}
    corpus.write_text(
        "".join(
            json.dumps({"text": f"{words[label]} note {i} " * (1 + i % 5), "label": label}) + "\n"
            for i in range(61)
            for label in [("cooking", "space")[i % 2]]
        )
    )
    results = _train_in_two_processes(
        tmp_path, [str(corpus), "--epochs", "2", "--vectorizer", "hashing", "--features", "512"], devices=1
    )
    assert sum(r["read_documents"] for r in results) == 61 and min(r["read_documents"] for r in results) > 20
    assert results[0]["n_train"] + results[0]["n_eval"] == 61 and results[0]["eval_kind"] == "validation"
    assert results[0]["n_eval"] == sum(round(r["read_documents"] * 0.1) for r in results)


def test_devices_option_errors():
    runner = CliRunner()
    result = runner.invoke(app, ["train", "nowhere", "--devices", "two"])
    assert result.exit_code == 1
    assert "--devices 'two' is not a device count: pass a whole number >= 1 or 'all'" in result.output
    result = runner.invoke(app, ["train", str(REPO / "textclf" / "sample_corpus"), "--devices", "64"])
    assert result.exit_code == 1
    assert "--devices 64: this process sees only" in result.output and "pass --devices" in result.output


def test_parallel_option_errors():
    runner = CliRunner()
    sample = str(REPO / "textclf" / "sample_corpus")
    result = runner.invoke(app, ["train", sample, "--parallel", "rows"])
    assert result.exit_code == 1
    assert "parallel must be one of auto, data, features" in result.output
    result = runner.invoke(app, ["train", sample, "--parallel", "features", "--backend", "pallas"])
    assert result.exit_code == 1
    assert "--parallel features trains with the XLA step: pass --backend xla" in result.output


def test_coordinates_from_the_environment():
    assert coordinates_from_env({}) is None
    assert coordinates_from_env(
        {"TEXTCLF_COORDINATOR": "h:1", "TEXTCLF_NUM_PROCESSES": "4", "TEXTCLF_PROCESS_ID": "2"}
    ) == ("h:1", 4, 2)
    step = {
        "SLURM_NTASKS": "2",
        "SLURM_PROCID": "1",
        "SLURM_STEP_ID": "0",
        "SLURM_JOB_ID": "7",
        "SLURM_STEP_NODELIST": "node[001-002]",
        "SLURM_LOCALID": "0",
    }
    assert coordinates_from_env(step) == "slurm"
    for missing in ("SLURM_JOB_ID", "SLURM_STEP_NODELIST", "SLURM_LOCALID"):  # JAX raised "coordinator_address"
        with pytest.raises(SettingsError, match=f"a SLURM job step of 2 tasks without {missing}: start it with srun"):
            coordinates_from_env({k: v for k, v in step.items() if k != missing})
    with pytest.raises(SettingsError, match="not a job step"):  # a batch script's shell: no other task will come
        coordinates_from_env({"SLURM_NTASKS": "2", "SLURM_PROCID": "0"})
    assert coordinates_from_env({"SLURM_NTASKS": "1", "SLURM_PROCID": "0"}) is None
    with pytest.raises(SettingsError, match="set all three"):
        coordinates_from_env({"TEXTCLF_COORDINATOR": "h:1"})


def test_distributed_options_are_checked_before_anything_starts():
    with pytest.raises(SettingsError, match="go together"):
        initialize("h:1", None, 0)
    with pytest.raises(SettingsError, match="outside 0..1"):
        initialize("h:1", 2, 5)
    with pytest.raises(SettingsError, match="needs a port"):
        initialize("hostonly", 2, 0)
    assert initialize("h:1", 1, 0) is False  # one process: nothing to join


def test_all_devices_means_enough_rows_per_device():
    from textclf.training.parallel.data import auto_device_count

    assert auto_device_count(8, 64) == 1  # 64 documents: splitting costs more than it saves
    assert auto_device_count(2, 8192) == 1  # 4,096 each: 2 GPUs measured no faster than one
    assert auto_device_count(2, 16384) == 2 and auto_device_count(8, 65536) == 8
    assert auto_device_count(4, 24576) == 3  # the most that split it evenly with >= 8,192 each
    assert auto_device_count(1, 16384) == 1
