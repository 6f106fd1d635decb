import time

import pytest

from db import jobs, open_db
from db.jobs import JobNotFound, JobStateError


@pytest.fixture
def db(db_path):
    return open_db(db_path)


def test_claim_takes_oldest_queued_once(db, db_path):
    first = jobs.submit(db, "/c1", {"epochs": 1}, "a")
    second = jobs.submit(db, "/c2", {"epochs": 1}, "b")
    other = open_db(db_path)  # a second daemon on the same DB
    got_a = jobs.claim(db, "w1", stale_after=60)
    got_b = jobs.claim(other, "w2", stale_after=60)
    assert (got_a["id"], got_b["id"]) == (first, second)
    assert jobs.claim(db, "w1", stale_after=60) is None
    assert got_a["status"] == "running" and got_a["attempts"] == 1 and got_a["settings"] == {"epochs": 1}


def test_stale_job_is_taken_over_then_failed_after_max_attempts(db):
    job_id = jobs.submit(db, "/c", {}, "a", max_attempts=2)
    jobs.claim(db, "dead-1", stale_after=60)
    assert jobs.claim(db, "w2", stale_after=60) is None  # heartbeat is fresh
    time.sleep(0.05)
    taken = jobs.claim(db, "w2", stale_after=0.01)  # holder stopped heartbeating
    assert taken["id"] == job_id and taken["attempts"] == 2 and taken["worker"] == "w2"
    assert not jobs.heartbeat(db, job_id, "dead-1") and jobs.heartbeat(db, job_id, "w2")
    time.sleep(0.05)
    assert jobs.claim(db, "w3", stale_after=0.01) is None
    job = jobs.get(db, job_id)
    assert job["status"] == "failed" and "stopped heartbeating 2 times" in job["error"]


def test_cancel_and_requeue(db):
    queued = jobs.submit(db, "/c", {}, "a")
    assert jobs.cancel(db, queued) == "cancelled"
    with pytest.raises(JobStateError, match="is cancelled and cannot be cancelled"):
        jobs.cancel(db, queued)
    running = jobs.submit(db, "/c", {}, "a")
    jobs.claim(db, "w", 60)
    assert jobs.cancel(db, running) == "cancelling" and jobs.cancel_requested(db, running)
    jobs.requeue(db, running)
    job = jobs.get(db, running)
    assert job["status"] == "queued" and job["attempts"] == 0
    with pytest.raises(JobNotFound, match="job 99 does not exist"):
        jobs.get(db, 99)


def test_model_versions_count_up(db):
    assert jobs.publish_model(db, "news", path="/a") == 1
    assert jobs.publish_model(db, "news", path="/b") == 2
    assert jobs.publish_model(db, "other", path="/c") == 1


@pytest.mark.parametrize("name", ["../../x", "/abs/x", "a/b", ".hidden", "..", "a\x00b", "", "x" * 65, 3])
def test_names_that_could_leave_their_folder_are_refused(db, name):
    from db.errors import InvalidName

    with pytest.raises(InvalidName, match="is not allowed"):
        jobs.submit(db, "corpus", {}, name)
    assert jobs.list_jobs(db) == []


def test_the_daemon_checks_a_name_again_before_building_its_folder(tmp_path, monkeypatch):
    from db.errors import InvalidName
    from textclf.frontends.daemon import _model_folder

    monkeypatch.setenv("TEXTCLF_HOME", str(tmp_path))
    assert _model_folder("news-v2.1") == (tmp_path / "models" / "news-v2.1").resolve()
    with pytest.raises(InvalidName):
        _model_folder("../escaped")  # a row written into the database by hand
