"""`textclf bench`: real tool subprocesses on a tiny task, results in the table and the run database."""

import json

from typer.testing import CliRunner

from db import open_db
from pipelines.corpus import read_corpus
from textclf.frontends.cli import app


def _task(corpus_dir, root):
    corpus = read_corpus(corpus_dir)
    folder = root / "tiny"
    folder.mkdir(parents=True)
    for split, rows in (("train", range(0, 36, 1)), ("test", range(0, 36, 3))):
        with (folder / f"{split}.jsonl").open("w") as out:
            for i in rows:
                out.write(json.dumps({"text": corpus.texts[i], "label": corpus.labels[i]}) + "\n")
    return root


def test_bench_runs_tools_side_by_side_and_records_them(corpus_dir, tmp_path, db_path):
    data = _task(corpus_dir, tmp_path / "datasets")
    result = CliRunner().invoke(
        app,
        [
            "bench",
            "tiny",
            "--data",
            str(data),
            "--tools",
            "textclf-xla,sklearn-sgd",
            "--db",
            str(db_path),
            "--out",
            str(tmp_path / "bench.md"),
        ],
    )
    assert result.exit_code == 0, result.output
    table = (tmp_path / "bench.md").read_text()
    assert "| tiny | textclf-xla | " in table and "| tiny | sklearn-sgd | " in table
    rows = list(open_db(db_path)["bench_results"].rows)
    assert [r["tool"] for r in rows] == ["textclf-xla", "sklearn-sgd"] and len({r["bench_id"] for r in rows}) == 1
    for row in rows:
        assert row["error"] is None and 0 <= row["accuracy"] <= 1
        assert row["wall_s"] > row["train_s"] > 0 and row["peak_host_mb"] > 10 and row["n_test"] == 12


def test_bench_refuses_unknown_tools_and_missing_tasks(tmp_path, db_path):
    runner = CliRunner()
    result = runner.invoke(app, ["bench", "news4", "--tools", "weka", "--data", str(tmp_path), "--db", str(db_path)])
    assert result.exit_code == 1 and "unknown tool 'weka': choose from textclf-pallas" in result.output
    result = runner.invoke(app, ["bench", "news4", "--data", str(tmp_path), "--db", str(db_path)])
    assert result.exit_code == 1
    assert "task 'news4' has no" in result.output and "textclf dataset news4" in result.output
    assert open_db(db_path)["bench_results"].count == 0


def test_a_task_folder_holds_its_corpora_in_any_format_textclf_reads(tmp_path):
    import pytest

    from textclf.errors import CorpusError
    from textclf.frontends.bench import task_files

    imdb = tmp_path / "aclImdb"  # train/ and test/ folders of label folders
    for split in ("train", "test"):
        (imdb / split / "pos").mkdir(parents=True)
    (imdb / "README").write_text("the corpus's notes")
    assert task_files(tmp_path, "aclImdb") == (imdb / "train", imdb / "test")
    assert task_files(tmp_path / "elsewhere", str(imdb)) == (imdb / "train", imdb / "test")  # a path to the task
    hf = tmp_path / "hf"  # a Hugging Face dataset's files
    hf.mkdir()
    for name in ("train-00000-of-00001.parquet", "test-00000-of-00001.parquet", "unsupervised-00000.parquet"):
        (hf / name).write_bytes(b"PAR1")
    assert task_files(tmp_path, "hf") == (hf / "train-00000-of-00001.parquet", hf / "test-00000-of-00001.parquet")
    cooking = tmp_path / "cooking"  # fastText's tutorial: a validation file where there is no test file
    cooking.mkdir()
    for name in ("cooking.train", "cooking.valid", "cooking.stackexchange.txt"):
        (cooking / name).write_text("__label__baking bread\n")
    assert task_files(tmp_path, "cooking") == (cooking / "cooking.train", cooking / "cooking.valid")
    both = tmp_path / "both"
    both.mkdir()
    for name in ("train.csv", "train.tsv", "test.csv"):
        (both / name).write_text("a,b\n")
    with pytest.raises(CorpusError, match=r"holds 2 'train' corpora \(train\.csv, train\.tsv\): keep one"):
        task_files(tmp_path, "both")
    with pytest.raises(CorpusError, match=r"task 'mine' \(no folder .*mine\) has no training and test corpus"):
        task_files(tmp_path, "mine")
