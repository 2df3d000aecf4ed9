"""Suite-wide fixtures, among them the PostgreSQL ones (tests/store/pg.py): a database per test
session (per pytest-xdist worker), a schema per test; the store tests and the transport tests
that run the engine on PostgreSQL use them."""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile

import pytest
import structlog

from tests.store.pg import TestDatabase

# Engines started by the tests (subprocesses inherit this) play bot moves at once: the pacing
# that hides forced moves (GJ-11.8) has tests of its own, and whole matches against bots
# would otherwise take minutes.
os.environ.setdefault("CARDGAMES_BOT_PACE_S", "0")


def share_bytecode(environ: "os._Environ[str] | dict[str, str]") -> str | None:
    """Where the environment turns bytecode off (``PYTHONDONTWRITEBYTECODE``, as CI images and
    sandboxes often do), every Python process the tests start (each engine, its bot zygote, a
    command line) compiled the project's sources again: ~0.14 s of CPU in an engine and as
    much in its zygote, with the imports a quarter of the time an engine takes to serve (685
    ms median, 560 with the modules compiled). They write and share one bytecode cache instead,
    in a directory of this session's own (``PYTHONPYCACHEPREFIX``), never in the source tree;
    it is removed when the session ends. Returns that directory (None: bytecode is not off,
    or a cache is set already: the xdist workers inherit the session's)."""
    if not environ.get("PYTHONDONTWRITEBYTECODE") or environ.get("PYTHONPYCACHEPREFIX"):
        return None
    cache = tempfile.mkdtemp(prefix="cardgames-tests-pycache-")
    del environ["PYTHONDONTWRITEBYTECODE"]
    environ["PYTHONPYCACHEPREFIX"] = cache
    return cache


_bytecode_cache = share_bytecode(os.environ)
if _bytecode_cache is not None:
    atexit.register(shutil.rmtree, _bytecode_cache, ignore_errors=True)


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
