"""Shared fixtures: a tiny corpus, an isolated data dir and run database, fast settings, ../shared data."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

try:  # a dev dependency (make setup); the GPU machine's image runs the suite without it
    from hypothesis import settings as hypothesis_settings
except ImportError:
    hypothesis_settings = None
if hypothesis_settings is not None:
    # Fuzz tests (tests/test_fuzz.py) draw the same examples on every run unless a profile says otherwise.
    hypothesis_settings.register_profile("default", max_examples=60, derandomize=True, deadline=None)
    hypothesis_settings.register_profile("deep", max_examples=2000, derandomize=False, deadline=None)
    hypothesis_settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))

from textclf.settings import Settings

REPO = Path(__file__).resolve().parents[1]
SAMPLE_CORPUS = REPO / "textclf" / "sample_corpus"
SHARED_DATA = Path(os.environ.get("TEXTCLF_SHARED", REPO.parent / "shared")) / "data"


def pytest_configure(config):
    """One JAX compilation cache for the whole run: the test processes, the pytest-xdist workers and the textclf
    processes the tests start (JAX_COMPILATION_CACHE_DIR, which textclf.paths.compile_cache_dir honours), so a
    program compiled once is loaded, not compiled again, by every other process of the run: every program, however
    quick to compile (as textclf's own runs set it: textclf.training.backends.configure_compilation), since most of a
    test's programs compile in well under jax's default second and the tests build many of the same shapes. A fresh
    folder each run (removed at the end): nothing carries over from one run to the next. Set by the controlling
    process only; the workers inherit it."""
    if hasattr(config, "workerinput"):
        return
    _fast_compiles()
    os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", "0")
    if os.environ.get("JAX_COMPILATION_CACHE_DIR"):
        return
    import tempfile

    config._textclf_compile_cache = tempfile.mkdtemp(prefix="textclf-tests-jax-cache-")
    os.environ["JAX_COMPILATION_CACHE_DIR"] = config._textclf_compile_cache


def _fast_compiles() -> None:
    """Compile the run's programs with LLVM's -O1 instead of -O3 (XLA_FLAGS, inherited by the workers and the
    textclf processes the tests start). More than half of the suite's time is XLA compiling small programs once
    each, which -O1 shortens (docs/decisions.md, "The initial weights compiled at LLVM's -O1"), while the
    tests' arrays are too small for the less optimised loops to cost. The tests compare programs with each other
    and with their references, at one level. A level already in XLA_FLAGS is kept."""
    flags = os.environ.get("XLA_FLAGS", "")
    if "--xla_backend_optimization_level" not in flags:
        os.environ["XLA_FLAGS"] = f"{flags} --xla_backend_optimization_level=1".strip()


# Where the longest tests are (a doc's blocks train its examples one after another: a minute and more; the searches,
# the runs and the several processes: 5-15 s each), started first in this order, so that the run ends on short tests
# and no worker waits at its end on another's long one (pytest-xdist's work stealing takes from the end of a queue).
LONGEST_FIRST = (
    "tests/test_docs.py",
    "tests/textclf/training/search/",
    "tests/textclf/runs/",
    "tests/textclf/training/parallel/",
    "tests/textclf/test_multi_label.py",
)


def pytest_collection_modifyitems(config, items):
    def rank(item) -> int:
        return next((i for i, prefix in enumerate(LONGEST_FIRST) if item.nodeid.startswith(prefix)), len(LONGEST_FIRST))

    items.sort(key=rank)  # stable: within a rank the collection's order


def pytest_unconfigure(config):
    folder = getattr(config, "_textclf_compile_cache", None)
    if folder:
        shutil.rmtree(folder, ignore_errors=True)
        os.environ.pop("JAX_COMPILATION_CACHE_DIR", None)


@pytest.fixture(autouse=True)
def isolated_home(tmp_path_factory, monkeypatch):
    """Every test gets its own data dir and DB, so nothing touches the user's files or other tests."""
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("TEXTCLF_HOME", str(home))
    monkeypatch.delenv("TEXTCLF_DB", raising=False)
    monkeypatch.setenv("TEXTCLF_DB_TIMEOUT", "0.5")
    return home


@pytest.fixture
def corpus_dir(tmp_path) -> Path:
    """A copy of the shipped sample corpus (3 labels x 12 short documents) that tests may modify."""
    target = tmp_path / "corpus"
    shutil.copytree(SAMPLE_CORPUS, target)
    return target


@pytest.fixture
def db_path(tmp_path) -> Path:
    return tmp_path / "runs.db"


@pytest.fixture
def fast_settings() -> Settings:
    """Small enough to train in well under a second after compilation."""
    # search off: the model search has its own tests (tests/textclf/training/search/test_halving.py)
    return Settings(
        epochs=2, min_steps=60, batch_size=8, hidden=16, optimizer="sgd", learning_rate=0.5, init_gain=4.0, search="off"
    )


def shared_path(*parts: str) -> Path:
    path = SHARED_DATA.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"needs the shared data at {path} (../shared beside the repo); not present here")
    return path


def free_port() -> int:
    """A TCP port on loopback that nothing listens on now."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_until_answers(url: str, process=None, timeout: float = 60) -> float:
    """Poll `url` until it answers 200 (a server process starting); fails if `process` exits first. -> the
    deadline used."""
    import time

    import httpx

    deadline = time.time() + timeout
    while True:
        try:
            if httpx.get(url, timeout=1).status_code == 200:
                return deadline
        except httpx.TransportError:
            assert time.time() < deadline and (process is None or process.poll() is None), f"{url} did not answer"
            time.sleep(0.2)
