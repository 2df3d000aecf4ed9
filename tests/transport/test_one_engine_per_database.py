"""One engine process per database, as the operator meets it: a second ``serve`` on the
database of a running one exits with status 2 after ``--db-lock-wait-s`` and one log line
naming the holder, and the running one goes on serving (docs/operations.md)."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from tests.processes import child_pids

from .harness import run
from .test_process import Service


def _until_waiting_for_the_database(engine: subprocess.Popen, log_path) -> None:
    """Return once ``engine``'s log at ``log_path`` says it waits for the database's lock
    (``db_lock_waiting``); fail if it exits first."""
    give_up = time.monotonic() + 60  # against a hang only: a start on a loaded machine
    while b'"db_lock_waiting"' not in log_path.read_bytes():
        assert engine.poll() is None, log_path.read_text()
        assert time.monotonic() < give_up, log_path.read_text()
        time.sleep(0.05)


def _engine_env(db, port: object = "0", metrics_port: object = "0", lock_wait_s: str | None = None,
                **extra: str) -> dict[str, str]:
    """The environment of a second engine on ``db``: loopback ports (0: any free one), JSON
    logs, one bot worker, ``--db-lock-wait-s`` when given."""
    env = {**os.environ, "CARDGAMES_DB": str(db), "CARDGAMES_PORT": str(port),
           "CARDGAMES_METRICS_PORT": str(metrics_port), "CARDGAMES_HOST": "127.0.0.1",
           "CARDGAMES_METRICS_HOST": "127.0.0.1", "CARDGAMES_LOG_FORMAT": "json",
           "CARDGAMES_BOT_WORKERS": "1", **extra}
    if lock_wait_s is not None:
        env["CARDGAMES_DB_LOCK_WAIT_S"] = lock_wait_s
    return env


def test_a_second_engine_on_the_same_database_exits_2_naming_the_holder(tmp_path):
    db = tmp_path / "cards.sqlite3"
    first = Service(tmp_path, db, "first")
    try:
        env = _engine_env(db, lock_wait_s="0.5")
        started = time.monotonic()
        second = subprocess.run([sys.executable, "-m", "engine_service", "serve"], cwd=tmp_path, env=env,
                                capture_output=True, text=True, timeout=60)
        took = time.monotonic() - started
        lines = [json.loads(raw) for raw in second.stdout.splitlines() + second.stderr.splitlines()
                 if raw.startswith("{")]
        refusal = [line for line in lines if line.get("event") == "db_in_use"]
        assert second.returncode == 2, second.stderr
        assert len(refusal) == 1 and refusal[0]["level"] == "error"
        assert f"pid {first.proc.pid} " in refusal[0]["error"] and refusal[0]["db"] == str(db)
        assert not any(line.get("event") == "serving" for line in lines)
        assert took >= 0.5
        waiting = [line for line in lines if line.get("event") == "db_lock_waiting"]
        assert len(waiting) == 1 and waiting[0]["level"] == "warning"  # said at once, not at the end
        assert f"pid {first.proc.pid} " in waiting[0]["holder"] and lines.index(waiting[0]) < lines.index(refusal[0])

        async def health():
            async with grpc.aio.insecure_channel(first.target) as ch:
                return (await health_pb2_grpc.HealthStub(ch).Check(health_pb2.HealthCheckRequest())).status
        assert run(health)() == health_pb2.HealthCheckResponse.SERVING  # undisturbed
    finally:
        assert first.stop() == 0


def test_a_forgotten_second_engine_on_the_same_ports_is_refused_for_the_database(tmp_path):
    """docs/operations.md names "a forgotten `make run`" among the second engines refused with
    db_in_use: the same host, the same database, and so the same ports. The metrics port used
    to be bound before the database's lock was tried, so that engine failed at once with
    metrics_port_unavailable ("Address already in use"), never saying which engine held the
    database; the ports are now bound only once the database is held."""
    db = tmp_path / "cards.sqlite3"
    first = Service(tmp_path, db, "first")
    try:
        env = _engine_env(db, port=first.port, metrics_port=first.metrics_port, lock_wait_s="0.5")
        second = subprocess.run([sys.executable, "-m", "engine_service", "serve"], cwd=tmp_path, env=env,
                                capture_output=True, text=True, timeout=60)
        lines = [json.loads(raw) for raw in second.stderr.splitlines() if raw.startswith("{")]
        errors = [line["event"] for line in lines if line["level"] == "error"]
        assert second.returncode == 2, second.stderr
        assert errors == ["db_in_use"], errors
        assert f"pid {first.proc.pid} " in lines[-1]["error"]
        assert not any(line["event"] == "metrics_server_started" for line in lines)
        metrics = urllib.request.urlopen(f"http://127.0.0.1:{first.metrics_port}/metrics", timeout=30).read()
        assert b"cardgames_rpc_requests_total" in metrics  # the first one's endpoint, undisturbed
    finally:
        assert first.stop() == 0


def test_a_busy_metrics_port_still_stops_the_start_and_lets_the_database_go(tmp_path):
    """The metrics port bound after the database: a busy one still stops the start with exit
    status 2 and metrics_port_unavailable, and the database's lock goes with it (the next
    engine starts at once)."""
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        db = tmp_path / "cards.sqlite3"
        env = _engine_env(db, metrics_port=busy.getsockname()[1])
        done = subprocess.run([sys.executable, "-m", "engine_service", "serve"], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=60)
    lines = [json.loads(raw) for raw in done.stderr.splitlines() if raw.startswith("{")]
    assert done.returncode == 2, done.stderr
    assert [line["event"] for line in lines if line["level"] == "error"] == ["metrics_port_unavailable"]
    assert not any(line["event"] == "serving" for line in lines)
    after = Service(tmp_path, db, "after", CARDGAMES_DB_LOCK_WAIT_S="0")
    assert after.stop() == 0


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_ctrl_c_while_waiting_for_the_database_ends_the_start_at_once(tmp_path, backend, request):
    """docs/operations.md: a signal before the engine serves is not a drain, the process ends
    at once. SIGINT (Ctrl-C at a `make run` that waits for the database) used to be turned
    into asyncio's cancellation: on SQLite the lock's wait runs on the store's thread, which
    the cancellation does not reach, so the process waited out the rest of
    ``--db-lock-wait-s`` (30 s by default, up to a day) before it went; on PostgreSQL it went
    at once; both ended with a KeyboardInterrupt traceback among the JSON log lines. It now
    ends the process at once, as SIGTERM does, status 130 (128 + SIGINT), nothing written."""
    db = tmp_path / "cards.sqlite3" if backend == "sqlite" else request.getfixturevalue("pg_url")
    first = Service(tmp_path, db, "first")
    try:
        env = _engine_env(db, lock_wait_s="60")
        log_path = tmp_path / "second.log"
        with open(log_path, "w") as log_file:
            second = subprocess.Popen([sys.executable, "-m", "engine_service", "serve"], cwd=tmp_path, env=env,
                                      stdout=log_file, stderr=subprocess.STDOUT)
        try:
            _until_waiting_for_the_database(second, log_path)
            second.send_signal(signal.SIGINT)
            status = second.wait(30)  # at once: the rest of its 60 s wait would outlast this
        finally:
            if second.poll() is None:
                second.kill()
                second.wait()
        output = log_path.read_text()
        assert status == -signal.SIGINT, output
        assert '"db_in_use"' not in output, output  # the wait was not waited out
        assert "Traceback" not in output and "KeyboardInterrupt" not in output, output
        assert all(raw.startswith("{") for raw in output.splitlines()), output  # JSON lines only

        async def health():
            async with grpc.aio.insecure_channel(first.target) as ch:
                return (await health_pb2_grpc.HealthStub(ch).Check(health_pb2.HealthCheckRequest())).status
        assert run(health)() == health_pb2.HealthCheckResponse.SERVING  # undisturbed
    finally:
        assert first.stop() == 0


@pytest.mark.parametrize("nohup", [False, True])
def test_sighup_while_waiting_for_the_database_ends_the_start_at_once_unless_ignored(tmp_path, nohup):
    """docs/operations.md: SIGHUP before the engine serves ends the process at once, status
    129 (128 + SIGHUP), as SIGTERM and SIGINT do; an engine started with SIGHUP ignored
    (`nohup`) keeps ignoring it, during the start too, and SIGTERM still ends that start."""
    db = tmp_path / "cards.sqlite3"
    first = Service(tmp_path, db, "first")
    try:
        log_path = tmp_path / "second.log"
        ignore_sighup = (lambda: signal.signal(signal.SIGHUP, signal.SIG_IGN)) if nohup else None
        with open(log_path, "w") as log_file:
            second = subprocess.Popen([sys.executable, "-m", "engine_service", "serve"], cwd=tmp_path,
                                      env=_engine_env(db, lock_wait_s="60"), stdout=log_file,
                                      stderr=subprocess.STDOUT, preexec_fn=ignore_sighup)
        try:
            _until_waiting_for_the_database(second, log_path)
            second.send_signal(signal.SIGHUP)
            if nohup:
                with pytest.raises(subprocess.TimeoutExpired):
                    second.wait(0.5)  # still waiting for the database
                second.send_signal(signal.SIGTERM)
            status = second.wait(30)  # at once: the rest of its 60 s wait would outlast this
        finally:
            if second.poll() is None:
                second.kill()
                second.wait()
        output = log_path.read_text()
        assert status == (-signal.SIGTERM if nohup else -signal.SIGHUP), output
        assert '"db_in_use"' not in output and "Traceback" not in output, output
    finally:
        assert first.stop() == 0


def test_a_successor_waiting_on_the_same_database_and_ports_starts_once_the_first_has_drained(tmp_path):
    """A successor started before its predecessor has finished (`make run` again while the
    first drains, a supervisor on one host) waits for the database and then binds the same
    ports. The predecessor released the database before its metrics port: the successor,
    given the lock, found the port still bound (metrics_port_unavailable, exit 2) while the
    first was still closing its bot workers. An engine now lets its ports go before its
    database."""
    db = tmp_path / "cards.sqlite3"
    first = Service(tmp_path, db, "first")
    env = _engine_env(db, port=first.port, metrics_port=first.metrics_port, lock_wait_s="60",
                      PYTHONUNBUFFERED="1")
    log_path = tmp_path / "second.log"
    with open(log_path, "w") as log_file:
        second = subprocess.Popen([sys.executable, "-m", "engine_service", "serve"], cwd=tmp_path, env=env,
                                  stdout=log_file, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 60
        while '"db_lock_waiting"' not in log_path.read_text():
            assert second.poll() is None and time.monotonic() < deadline, log_path.read_text()
            time.sleep(0.05)
        assert first.stop() == 0
        while '"serving"' not in log_path.read_text():
            assert second.poll() is None and time.monotonic() < deadline, log_path.read_text()
            time.sleep(0.05)
        second.send_signal(signal.SIGTERM)
        assert second.wait(30) == 0
    finally:
        if second.poll() is None:
            second.kill()
            second.wait()


def _can_unshare_pid() -> bool:
    import shutil

    if shutil.which("unshare") is None:
        return False
    try:
        return subprocess.run(["unshare", "--pid", "--fork", "true"], capture_output=True,
                              timeout=10).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


@pytest.mark.skipif(not _can_unshare_pid(), reason="needs unshare --pid (root or user namespaces)")
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP], ids=lambda s: s.name)
def test_sigterm_or_sighup_during_the_start_of_an_engine_that_is_pid_1_ends_it_at_once(tmp_path, sig):
    """In a container the engine is PID 1, and the kernel delivers PID 1 no signal it has no
    handler for: before the engine served, SIGTERM kept its default action and so was
    ignored, and `docker stop` or a pod's deletion during the start (here: waiting for the
    database another engine holds) waited until SIGKILL. A handler now ends the start at once,
    status 143 as outside a container; SIGHUP too, status 129 (docs/operations.md: SIGTERM,
    SIGINT or SIGHUP before the engine serves, in a container too). `unshare --pid --fork`
    makes it PID 1 of a namespace."""
    db = tmp_path / "cards.sqlite3"
    first = Service(tmp_path, db, "first")
    try:
        env = _engine_env(db, lock_wait_s="60")
        log_path = tmp_path / "second.log"
        with open(log_path, "w") as log_file:
            second = subprocess.Popen(["unshare", "--pid", "--fork", "--kill-child", sys.executable, "-m",
                                       "engine_service", "serve"], cwd=tmp_path, env=env,
                                      stdout=log_file, stderr=subprocess.STDOUT)
        try:
            _until_waiting_for_the_database(second, log_path)
            engine = child_pids(second.pid)
            assert len(engine) == 1
            with open(f"/proc/{engine[0]}/status") as status_file:
                assert "NSpid:" in (ns := [l for l in status_file if l.startswith("NSpid:")][0]) \
                    and ns.split()[-1] == "1"
            os.kill(engine[0], sig)
            status = second.wait(30)  # at once: the rest of its 60 s wait would outlast this
        finally:
            if second.poll() is None:
                second.kill()
                second.wait()
        assert status == 128 + sig, log_path.read_text()
        assert '"db_in_use"' not in log_path.read_text()  # the wait was not waited out
    finally:
        assert first.stop() == 0
