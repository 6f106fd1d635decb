"""The search's tests' shared fixture."""

import pytest

from pipelines.workers import WorkerPool


@pytest.fixture(scope="module")
def pool():
    """One vectorizing worker, kept for a test module's searches."""
    with WorkerPool(1) as own:
        yield own
