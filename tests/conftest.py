"""Suite-wide fixtures."""

from __future__ import annotations

import pytest
import structlog


@pytest.fixture(autouse=True)
def _restore_structlog_configuration():
    """Some code under test (the remote bot runner's CLI, worker start-up) configures structlog
    for its process; inside the test process that must not leak into the next test, whose
    ``capture_logs`` would otherwise see a filtering logger and nothing else."""
    saved = structlog.get_config()
    yield
    structlog.configure(**saved)
