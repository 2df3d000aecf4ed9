"""clients.local_service: the engine as a child process, seen as it starts listening and as it
ends (the sample clients' "no --target" mode and most tests that need a real engine)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from types import SimpleNamespace

import pytest

from clients import local_service
from clients.local_service import LocalService
from engine_service.child_exit import wait_for_exit

#: A stand-in for a draining engine: ready once it has said so, then SIGTERM ends it 0.1 s later.
DRAINS = ("import signal, sys, time\n"
          "signal.signal(signal.SIGTERM, lambda *_: (time.sleep(0.1), sys.exit(0)))\n"
          "print('ready', flush=True)\n"
          "time.sleep(60)\n")


def _child(code: str) -> subprocess.Popen:
    child = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    assert child.stdout is not None and child.stdout.readline() == "ready\n"
    return child


def _looks(patched: pytest.MonkeyPatch) -> list[float]:
    """The sleeps of ``Popen.wait`` with a timeout, which looks for the end at intervals."""
    looks: list[float] = []
    patched.setattr(subprocess, "time", SimpleNamespace(
        sleep=lambda s: looks.append(s) or time.sleep(s), monotonic=time.monotonic))
    return looks


@pytest.mark.parametrize("pidfds", [True, False], ids=["pidfd", "without-pidfds"])
def test_a_stopped_engine_is_seen_as_it_ends_and_reaped(pidfds, monkeypatch):
    """stop() sends SIGTERM and returns the exit status once the engine has drained, seen
    through the process's pidfd the moment it ends: Popen.wait with a timeout looked at
    intervals growing to 50 ms, and saw an idle engine's end (tens of milliseconds after the
    signal) up to that much later at every stop (it looks only where there is no pidfd)."""
    if not pidfds:
        monkeypatch.delattr(os, "pidfd_open", raising=False)
    elif not hasattr(os, "pidfd_open"):
        pytest.skip("no pidfds here")
    service = LocalService()
    service.process = _child(DRAINS)
    try:
        with pytest.MonkeyPatch.context() as patched:
            looks = _looks(patched)
            assert service.stop(timeout_s=30.0) == 0
            assert (looks == []) is pidfds, looks
        assert service.process.returncode == 0  # reaped
    finally:
        service.kill()
        service.cleanup()


def test_an_engine_that_does_not_end_in_time_is_killed():
    """An engine that is still there ``timeout_s`` after SIGTERM is killed (SIGKILL) and
    reaped; wait_for_exit alone leaves a running process as it is."""
    holds = ("import signal, time\n"
             "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
             "print('ready', flush=True)\n"
             "time.sleep(60)\n")
    child = _child(holds)
    try:
        assert wait_for_exit(child, 0.05) is None and child.poll() is None
    finally:
        child.kill()
        child.wait()
    service = LocalService()
    service.process = _child(holds)
    try:
        assert service.stop(timeout_s=0.1) == -signal.SIGKILL
    finally:
        service.kill()
        service.cleanup()


def test_a_start_reads_the_engines_log_every_10_ms(tmp_path, monkeypatch):
    """start() returns with the port of the engine's ``grpc_server_started`` line, reading its
    log every START_POLL_S (0.01 s): every start waited up to 50 ms after that line, read
    every 0.05 s."""
    fake = tmp_path / "python"
    fake.write_text("#!/bin/sh\nsleep 0.1\n"
                    "echo '{\"event\": \"grpc_server_started\", \"port\": 4321}'\n"
                    "exec sleep 60\n")
    fake.chmod(0o755)
    naps: list[float] = []
    monkeypatch.setattr(local_service, "time", SimpleNamespace(
        sleep=lambda s: naps.append(s) or time.sleep(s), monotonic=time.monotonic))
    service = LocalService(python=str(fake), log_path=tmp_path / "engine.log")
    try:
        service.start()
        assert service.port == 4321
        assert naps and max(naps) <= 0.01, naps
    finally:
        service.kill()
