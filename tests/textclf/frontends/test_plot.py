"""A run's curves (textclf/frontends/plot.py): `textclf runs plot` and the run UI's page draw them alike."""

from pathlib import Path

from typer.testing import CliRunner

from db import open_db
from db.runs import get_run
from textclf.frontends.cli import app
from textclf.frontends.plot import _figure, plot_run

REPO = Path(__file__).resolve().parents[3]


def _epoch(n: int, view=None, eval_accuracy=0.5) -> dict:
    return {
        "epoch": n,
        "loss": 1.0 / n,
        "train_accuracy": 0.5 + n / 100,
        "eval_accuracy": eval_accuracy,
        "seconds": 0.1,
        "view": view,
    }


def test_a_dashed_line_and_its_name_mark_where_each_of_a_runs_models_starts():
    epochs = (
        [_epoch(n, "word network") for n in (1, 2, 3)]
        + [_epoch(n, "character network") for n in (4, 5)]
        + [_epoch(6, "linear model")]
    )
    figure = _figure({"id": 3, "corpus": "mr", "status": "finished", "eval_kind": "test", "epochs": epochs})
    for axes in figure.axes:
        lines = [line.get_xdata()[0] for line in axes.get_lines() if line.get_linestyle() == "--"]
        assert lines == [3.5, 5.5]
        assert [text.get_text() for text in axes.texts] == ["character network", "linear model"]
    alone = _figure({"id": 4, "corpus": "mr", "status": "finished", "epochs": [_epoch(1), _epoch(2)]})
    assert not any(line.get_linestyle() == "--" for axes in alone.axes for line in axes.get_lines())


def test_a_label_set_run_is_drawn_by_its_own_metric_beside_the_subset_accuracy():
    run = {
        "id": 5,
        "corpus": "reuters",
        "status": "finished",
        "eval_kind": "test",
        "eval_metric": "micro-f1",
        "early_stopping": {"accuracies": [0.6, 0.8, 0.85]},
        "epochs": [_epoch(n, eval_accuracy=0.3) for n in (1, 2, 3)],
    }
    scores = _figure(run).axes[1]
    labels = [text.get_text() for text in scores.get_legend().get_texts()]
    assert labels == ["train (subset)", "test (subset)", "held-out micro-f1"]
    assert list(scores.get_lines()[2].get_ydata()) == [0.6, 0.8, 0.85]
    assert "micro-f1" in scores.get_title()


def test_a_run_with_a_character_network_records_which_model_trained_each_epoch(tmp_path):
    db_path = tmp_path / "runs.db"
    trained = CliRunner().invoke(
        app,
        [
            "train",
            str(REPO / "textclf" / "sample_corpus"),
            "--db",
            str(db_path),
            "--out",
            str(tmp_path / "m.npz"),
            "--search",
            "off",
            "--epochs",
            "2",
            "--hidden",
            "8",
            "--char-ngrams",
        ],
    )
    assert trained.exit_code == 0, trained.output
    run = get_run(open_db(db_path), 1)
    views = [e["view"] for e in run["epochs"]]
    assert views[0] == "word network" and views[-1] == "character network", views
    assert plot_run(run, tmp_path / "run.svg").read_text().count("character network") >= 2  # on both plots
