"""Suite-wide fixtures."""

from __future__ import annotations

import os

import pytest
import structlog

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
