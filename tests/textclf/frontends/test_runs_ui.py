"""`textclf runs ui`: Datasette on the run database, in a real process, looked at in headless Chromium."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

from db.columns import TABLES
from tests.conftest import free_port, wait_until_answers
from textclf.frontends.cli import app

REPO = Path(__file__).resolve().parents[3]
CHROMIUM = shutil.which("chromium")
CHROMEDRIVER = shutil.which("chromedriver")


@pytest.fixture(scope="module")
def ui(tmp_path_factory):
    """-> the base URL of `textclf runs ui` on a database holding one trained run."""
    home = tmp_path_factory.mktemp("ui")
    db_path = home / "runs.db"
    trained = CliRunner().invoke(
        app,
        [
            "train",
            str(REPO / "textclf" / "sample_corpus"),
            "--db",
            str(db_path),
            "--out",
            str(home / "m.npz"),
            "--search",
            "off",
            "--epochs",
            "4",
            "--hidden",
            "16",
        ],
    )
    assert trained.exit_code == 0, trained.output
    port = free_port()
    env = {**os.environ, "TEXTCLF_HOME": str(home)}
    process = subprocess.Popen(
        [sys.executable, "-m", "textclf", "runs", "ui", "--db", str(db_path), "--port", str(port)],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    base = f"http://127.0.0.1:{port}"
    wait_until_answers(f"{base}/-/versions.json", process)
    yield base
    process.terminate()
    process.wait(timeout=30)


def test_the_columns_are_described_and_the_canned_queries_run(ui):
    metadata = httpx.get(f"{ui}/-/metadata.json").json()["databases"]["runs"]
    assert metadata["tables"]["epochs"]["columns"]["loss"] == TABLES["epochs"]["columns"]["loss"]
    assert httpx.get(f"{ui}/runs/run_epochs.json", params={"run_id": 1, "_shape": "array"}).json()[0]["epoch"] == 1
    best = httpx.get(f"{ui}/runs/best_run_per_corpus.json", params={"_shape": "array"}).json()
    assert best[0]["run_id"] == 1 and best[0]["metric"] == "accuracy" and 0 <= best[0]["score"] <= 1
    for query in ("accuracy_over_time", "search_leaderboard"):
        assert httpx.get(f"{ui}/runs/{query}.json", params={"run_id": 1, "corpus": ""}).status_code == 200


def test_the_database_is_read_only_through_the_ui(ui):
    refused = httpx.post(f"{ui}/runs/-/query", params={"sql": "delete from runs"})
    assert refused.status_code in (400, 403, 405)
    for path in ("/runs/runs/-/insert", "/runs/-/create", "/runs/runs/1/-/delete"):  # Datasette's write API
        written = httpx.post(f"{ui}{path}", json={"row": {"status": "x"}})
        assert written.status_code == 405 and "read-only" in written.text and "Traceback" not in written.text
    answer = httpx.get(f"{ui}/runs.json", params={"sql": "delete from runs"})
    assert answer.status_code == 400
    assert httpx.get(f"{ui}/runs/runs.json", params={"_shape": "array"}).json()[0]["id"] == 1


@pytest.mark.skipif(
    not (CHROMIUM and CHROMEDRIVER), reason="needs Debian's chromium and chromium-driver (.ci/run installs them)"
)
def test_a_runs_page_shows_its_epochs_and_learning_curve_in_chromium(ui):
    from selenium import webdriver
    from selenium.webdriver.common.by import By

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in (
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
    ):
        options.add_argument(flag)
    browser = webdriver.Chrome(options=options, service=webdriver.ChromeService(executable_path=CHROMEDRIVER))
    try:
        browser.get(f"{ui}/runs/runs/1")
        assert browser.find_element(By.TAG_NAME, "h1").text.startswith("run 1: ")
        summary = browser.find_element(By.CSS_SELECTOR, "dl.run-summary").text
        assert "validation accuracy" in summary and "finished" in summary
        # the curve and the epochs first; every recorded field (the long JSON) folded below them
        record = browser.find_element(By.CSS_SELECTOR, "details.run-record")
        assert record.get_attribute("open") is None and not record.find_element(By.TAG_NAME, "table").is_displayed()
        curve_y = browser.find_element(By.CSS_SELECTOR, ".learning-curve").location["y"]
        assert curve_y < record.location["y"] and curve_y < 1000
        epochs = browser.find_elements(By.CSS_SELECTOR, "table.run-epochs tbody tr")
        assert [row.find_element(By.TAG_NAME, "td").text for row in epochs] == ["1", "2", "3", "4"]
        curve = browser.find_element(By.CSS_SELECTOR, ".learning-curve svg")
        assert curve.size["width"] > 300 and curve.size["height"] > 100  # drawn, not an empty box
        browser.get(f"{ui}/runs")
        assert "best_run_per_corpus" in browser.page_source or "Best run per corpus" in browser.page_source
    finally:
        browser.quit()


def test_beyond_loopback_the_ui_needs_a_token():
    result = CliRunner().invoke(app, ["runs", "ui", "--host", "0.0.0.0"], env={"TEXTCLF_TOKEN": ""})
    assert result.exit_code == 1 and "set --token" in result.output


def test_with_a_token_every_request_carries_it_by_header_or_cookie(tmp_path):
    import asyncio

    from textclf.frontends.runs_ui import build_app

    db_path = tmp_path / "runs.db"
    from db import open_db

    open_db(db_path)
    app_ = build_app(db_path, "s3cret")

    async def calls():
        transport = httpx.ASGITransport(app=app_)
        async with httpx.AsyncClient(transport=transport, base_url="http://ui") as client:
            assert (await client.get("/runs/runs.json")).status_code == 401
            assert (await client.get("/runs/runs.json?token=wrong")).status_code == 401
            ok = await client.get("/runs/runs.json", headers={"Authorization": "Bearer s3cret"})
            assert ok.status_code == 200
            lower = await client.get("/runs/runs.json", headers={"Authorization": "bearer s3cret"})
            assert lower.status_code == 200  # a scheme's name in any case
            other = await client.get("/runs/runs.json", headers={"Authorization": "Basic s3cret"})
            assert other.status_code == 401
            login = await client.get("/runs?token=s3cret")
            assert login.status_code == 302 and "textclf_token=s3cret" in login.headers["set-cookie"]
            assert (await client.get("/runs/runs.json")).status_code == 200  # the cookie it set

    asyncio.run(calls())


def test_the_canned_rankings_use_each_run_s_own_metric(tmp_path):
    """A label-set run is ranked by its micro-F1 (eval_score), not by the subset accuracy in eval_accuracy, and
    runs judged by different metrics are not ranked against each other."""
    from db import open_db, runs
    from textclf.frontends.runs_ui import QUERIES

    database = open_db(tmp_path / "runs.db")
    for corpus, accuracy, metric, score in (
        ("tags", 0.60, "micro-f1", 0.95),
        ("tags", 0.70, "micro-f1", 0.90),
        ("news", 0.91, None, None),
        ("news", 0.93, None, None),
    ):
        run_id = runs.start_run(database, corpus=corpus, settings={}, versions={})
        database["runs"].update(
            run_id, {"status": "finished", "eval_accuracy": accuracy, "eval_metric": metric, "eval_score": score}
        )
    rows = database.execute(QUERIES["best_run_per_corpus"]["sql"]).fetchall()
    best = {(corpus, metric): (run_id, score) for corpus, metric, run_id, score, *_ in rows}
    assert best == {("news", "accuracy"): (4, 0.93), ("tags", "micro-f1"): (1, 0.95)}


def test_the_leaderboard_query_lists_the_candidates_as_runs_show_does_the_chosen_one_marked(tmp_path):
    import json

    from db import open_db
    from textclf.frontends.runs_ui import QUERIES

    # the settings' own variant kept within a standard error: first, though the second scored higher
    def settings(stop_words, rate, epochs):
        return {
            "stop_words": stop_words,
            "ngram_max": 1,
            "nb_weighting": True,
            "learning_rate": rate,
            "weight_decay": 0.0,
            "epochs": epochs,
        }

    board = [
        {"settings": settings(None, 0.01, 4), "accuracy": 0.901, "folds": 3},
        {"settings": settings("english", 0.003, 9), "accuracy": 0.905, "folds": 3},
        {"settings": settings("english", 0.01, 3), "accuracy": 0.850, "folds": 1},
    ]
    db = open_db(tmp_path / "runs.db")
    search = {
        "rounds": 9,
        "rounds_planned": 9,
        "folds": 3,
        "seconds": 4.2,
        "chosen": board[0]["settings"],
        "leaderboard": board,
    }
    db["runs"].insert({"id": 7, "status": "finished", "search": json.dumps(search)})
    db["runs"].insert({"id": 8, "status": "finished", "search": json.dumps({"skipped": "--search off"})})
    sql = QUERIES["search_leaderboard"]["sql"]
    rows = [
        dict(zip(("rank", "chosen", "accuracy", "folds", "settings"), row))
        for row in db.execute(sql, {"run_id": 7}).fetchall()
    ]
    assert [(r["rank"], r["chosen"], r["accuracy"], r["folds"]) for r in rows] == [
        (1, "chosen", 0.901, 3),
        (2, "", 0.905, 3),
        (3, "", 0.850, 1),
    ]
    assert [json.loads(r["settings"]) for r in rows] == [row["settings"] for row in board]
    assert db.execute(sql, {"run_id": 8}).fetchall() == []
    shown = CliRunner().invoke(app, ["runs", "show", "7", "--db", str(tmp_path / "runs.db"), "--json"])
    assert shown.exit_code == 0, shown.output
    listed = json.loads(shown.output)["search"]["leaderboard"]  # the order runs show's table lists them in
    assert [(row["accuracy"], row["folds"]) for row in listed] == [(r["accuracy"], r["folds"]) for r in rows]
    table = CliRunner().invoke(app, ["runs", "show", "7", "--db", str(tmp_path / "runs.db")])
    marks = [
        line.split("│")[2].strip()
        for line in table.output.splitlines()
        if line.count("│") > 5 and line.split("│")[1].strip().isdigit()
    ]
    assert len(marks) == 3 and marks[0].startswith("ch") and marks[1:] == ["", ""]  # (a narrow terminal cuts it)
