"""Suite-wide fixtures, among them the PostgreSQL ones (tests/store/pg.py): a database per test
session (per pytest-xdist worker), a schema per test; the store tests and the transport tests
that run the engine on PostgreSQL use them."""

from __future__ import annotations

import os

import pytest
import structlog

from tests.store.pg import TestDatabase

# Engines started by the tests (subprocesses inherit this) play bot moves at once: the pacing
# that hides forced moves (GJ-11.8) has tests of its own, and whole matches against bots
# would otherwise take minutes.
os.environ.setdefault("CARDGAMES_BOT_PACE_S", "0")


@pytest.fixture(autouse=True)
def _restore_structlog_configuration():
    """Some code under test (the remote bot runner's CLI, worker start-up) configures structlog
    for its process; inside the test process that must not leak into the next test, whose
    ``capture_logs`` would otherwise see a filtering logger and nothing else."""
    saved = structlog.get_config()
    yield
    structlog.configure(**saved)


@pytest.fixture(scope="session")
def pg_database():
    db = TestDatabase()  # fails (no skip) when the server is not there
    try:
        yield db
    finally:
        db.drop()


@pytest.fixture
def pg_schema(pg_database) -> tuple[str, str]:
    """A fresh, empty schema of the session's database: (name, URL with that search_path)."""
    return pg_database.schema()


@pytest.fixture
def pg_url(pg_schema) -> str:
    return pg_schema[1]
