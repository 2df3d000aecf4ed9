"""A real engine for the client tests: ``python -m engine_service serve`` as a child process
(clients.local_service), shared by the tests of a module; its log is printed on failure."""

from __future__ import annotations

import asyncio
import secrets
import shutil
import subprocess
from pathlib import Path
from typing import Any, Awaitable, Iterator

import pytest

from clients.local_service import LocalService

ADMIN_TOKEN = secrets.token_hex(16)


def run(coro: Awaitable[Any], timeout_s: float = 120.0) -> Any:
    """Run a coroutine to completion in a fresh event loop, with a hard timeout."""
    async def bounded() -> Any:
        return await asyncio.wait_for(coro, timeout_s)
    return asyncio.run(bounded())


@pytest.fixture(scope="module")
def engine(tmp_path_factory) -> Iterator[LocalService]:
    log = tmp_path_factory.mktemp("engine") / "engine.log"
    service = LocalService(admin_token=ADMIN_TOKEN, log_path=log,
                           args=["--bot-deadline-s", "5", "--reconnect-grace-s", "30"])
    service.start()
    yield service
    status = service.stop()
    assert status == 0, f"the engine did not drain cleanly (exit {status}):\n{service.log_tail()}"


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    report = yield
    if report.failed and "engine" in getattr(item, "funcargs", {}):
        report.sections.append(("engine log (tail)", item.funcargs["engine"].log_tail(40)))
    return report


def self_signed_certificate(folder: Path) -> tuple[Path, Path]:
    """A throw-away TLS certificate for localhost / 127.0.0.1 and its key: (cert, key)."""
    openssl = shutil.which("openssl")
    assert openssl, "openssl is needed to make a test certificate"
    key, cert = folder / "key.pem", folder / "cert.pem"
    subprocess.run([openssl, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key),
                    "-out", str(cert), "-days", "1", "-subj", "/CN=localhost",
                    "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1"],
                   check=True, capture_output=True)
    return cert, key
