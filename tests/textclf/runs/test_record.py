"""The run's record (textclf/runs/record.py): epoch rows written together at most once a second, every one of them
there at the end, and those of a run stopped mid-training kept."""

import pytest

from db import open_db, runs
from textclf.runs import record as record_module
from textclf.runs.record import EpochRecorder
from textclf.settings import Settings
from textclf.training import EpochStats, TrainingStopped


def _stats(epoch: int) -> EpochStats:
    return EpochStats(epoch, 1.0 / epoch, 0.5, None, 0.01, 100.0)


def test_epochs_within_a_second_go_in_one_write_and_all_are_there_after_the_flush(db_path, monkeypatch):
    db = open_db(db_path)
    run_id = runs.start_run(db, corpus="c", settings={})
    clock = [0.0]
    monkeypatch.setattr(record_module.time, "monotonic", lambda: clock[0])
    writes = []
    real = runs.add_epochs
    monkeypatch.setattr(runs, "add_epochs", lambda *a: writes.append(len(a[2])) or real(*a))
    recorder = EpochRecorder(db, run_id)
    for epoch in range(1, 6):  # five short epochs: none written yet
        recorder(_stats(epoch))
        clock[0] += 0.1
    assert writes == []
    clock[0] += 1.0
    recorder(_stats(6))  # a second on: the six in one write
    recorder(_stats(7))
    assert writes == [6]
    recorder.flush()
    assert writes == [6, 1]
    rows = list(db.query("select epoch from epochs where run_id = ? order by epoch", [run_id]))
    assert [row["epoch"] for row in rows] == list(range(1, 8))


def test_a_run_stopped_mid_training_keeps_the_epochs_it_trained(corpus_dir, db_path):
    from textclf.runs.run import train

    ended = []

    def stop_after_three() -> bool:
        ended.append(1)
        return len(ended) > 3

    settings = Settings(search="off", epochs=20, min_steps=0)
    with pytest.raises(TrainingStopped):
        train(corpus_dir, settings, db_path=db_path, stop_requested=stop_after_three)
    run = runs.get_run(open_db(db_path), 1)
    epochs = list(open_db(db_path).query("select epoch from epochs where run_id = ?", [run["id"]]))
    assert run["status"] == "interrupted" and len(epochs) >= 3
