"""clients.local_service: the engine as a child process, seen as it starts listening and as it
ends (the sample clients' "no --target" mode and most tests that need a real engine)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
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


def _fake_engine(tmp_path, script: str) -> str:
    """A stand-in for ``python`` (``LocalService(python=...)``): a shell script, ``script``."""
    fake = tmp_path / "python"
    fake.write_text("#!/bin/sh\n" + script)
    fake.chmod(0o755)
    return str(fake)


#: Says it listens on port 4321, with the admin token it was given and its arguments, then waits.
STARTS = ("echo \"{\\\"event\\\": \\\"grpc_server_started\\\", \\\"port\\\": 4321, "
          "\\\"token\\\": \\\"${CARDGAMES_ADMIN_TOKEN-none}\\\", \\\"args\\\": \\\"$*\\\"}\"\n"
          "exec sleep 60\n")


def test_the_admin_token_goes_in_the_environment_and_only_the_one_given(tmp_path):
    """The engine's admin token is the one given (``admin_token``), in its environment, never
    on its command line (anyone on the machine reads that); one in the caller's environment is
    not passed on, so that an engine started without a token has none; ``""`` is no token, as
    the engine reads an empty variable (docs/operations.md), so none is set."""
    env = dict(os.environ, CARDGAMES_ADMIN_TOKEN="the caller's")
    for token, has in ((None, "none"), ("", "none"), ("s3cret-t0ken", "s3cret-t0ken")):
        service = LocalService(python=_fake_engine(tmp_path, STARTS), env=env, admin_token=token,
                               log_path=tmp_path / f"engine-{has}.log")
        try:
            service.start()
            line = service.find_log("grpc_server_started")[-1]
            assert line["token"] == has and "s3cret" not in line["args"], line
        finally:
            service.kill()


def test_the_engine_listens_on_loopback_with_the_settings_given(tmp_path):
    """The engine a client starts for itself serves, and exports its metrics, on 127.0.0.1
    only (its target is 127.0.0.1: nothing else on the network reaches it), on the ports
    asked, with the database given, JSON logs (read back for its port) and the caller's
    arguments last, where they can add to the engine's settings."""
    db = f"{tmp_path}/matches.sqlite3"
    service = LocalService(python=_fake_engine(tmp_path, STARTS), db=db, port=4321, metrics_port=9999,
                           args=["--bot-deadline-s", "5"], log_path=tmp_path / "engine.log")
    try:
        service.start()
        assert service.find_log("grpc_server_started")[-1]["args"] == (
            "-m engine_service serve --host 127.0.0.1 --port 4321 --metrics-host 127.0.0.1 --metrics-port 9999 "
            f"--db {db} --log-format json --bot-deadline-s 5")
    finally:
        service.kill()


def test_the_environment_given_is_the_engines_whole_environment(tmp_path, monkeypatch):
    """``env`` is the engine's environment in place of the caller's (a setting the caller has
    in its own, CARDGAMES_DB say, would otherwise reach the engine), run in ``cwd``."""
    monkeypatch.setenv("CARDGAMES_DB", "callers.sqlite3")
    says = ("echo \"{\\\"event\\\": \\\"grpc_server_started\\\", \\\"port\\\": 4321, "
            "\\\"env\\\": \\\"${CARDGAMES_DB-none} ${CARDGAMES_LOG_LEVEL-none}\\\", "
            "\\\"cwd\\\": \\\"$(pwd)\\\"}\"\nexec sleep 60\n")
    given = {"PATH": os.environ["PATH"], "CARDGAMES_LOG_LEVEL": "debug", "CARDGAMES_ADMIN_TOKEN": "the caller's"}
    service = LocalService(python=_fake_engine(tmp_path, says), env=given, admin_token="s3cret-t0ken",
                           cwd=tmp_path, log_path=tmp_path / "engine.log")
    try:
        line = service.start().find_log("grpc_server_started")[-1]
        assert line["env"] == "none debug" and line["cwd"] == str(tmp_path), line
    finally:
        service.kill()
    # the caller's dict is the caller's: the engine's token (and PYTHONUNBUFFERED) went into a copy
    assert given == {"PATH": os.environ["PATH"], "CARDGAMES_LOG_LEVEL": "debug", "CARDGAMES_ADMIN_TOKEN": "the caller's"}


def test_the_engine_writes_its_log_unbuffered_and_reads_no_input(tmp_path, monkeypatch):
    """The engine's output is a file, which Python buffers: PYTHONUNBUFFERED (unless the
    caller set it) makes every line, ``grpc_server_started`` first, reach the log as it is
    written. Its stdin is /dev/null, not the caller's: clients.play reads the player's moves
    from its own stdin, and an engine sharing it could take them."""
    says = ("echo \"{\\\"event\\\": \\\"grpc_server_started\\\", \\\"port\\\": 4321, "
            "\\\"unbuffered\\\": \\\"${PYTHONUNBUFFERED-none}\\\", "
            "\\\"stdin\\\": \\\"$(readlink /proc/self/fd/0)\\\"}\"\nexec sleep 60\n")
    ours, theirs = os.pipe()  # the caller's stdin, for the length of the test
    saved = os.dup(0)
    os.dup2(ours, 0)
    try:
        for env, unbuffered in (({"PATH": os.environ["PATH"]}, "1"), ({"PATH": os.environ["PATH"], "PYTHONUNBUFFERED": "x"}, "x")):
            service = LocalService(python=_fake_engine(tmp_path, says), env=env, log_path=tmp_path / f"{unbuffered}.log")
            try:
                line = service.start().find_log("grpc_server_started")[-1]
                assert (line["unbuffered"], line["stdin"]) == (unbuffered, "/dev/null"), line
            finally:
                service.kill()
    finally:
        os.dup2(saved, 0)
        for fd in (saved, ours, theirs):
            os.close(fd)


def test_a_reused_log_file_is_read_from_this_start_on(tmp_path):
    """``log_path`` may hold earlier runs: the port is the one this start logs, not an older
    engine's (a client would reach nothing, or another engine)."""
    log = tmp_path / "engine.log"
    log.write_text('{"event": "grpc_server_started", "port": 1111}\n'
                   '{"event": "grpc_server_started", "port": 2222}\n')
    service = LocalService(python=_fake_engine(tmp_path, "sleep 0.1\n" + STARTS), log_path=log)
    try:
        assert service.start().target == "127.0.0.1:4321"
    finally:
        service.kill()


def test_an_engine_that_exits_or_never_listens_is_one_failure_naming_it(tmp_path):
    """ServiceFailed: an engine that exits at its start is said at once with its status and
    its last log lines (not after the start's whole timeout); one that never says it listens
    is killed at the timeout. Before a start there is no target to give."""
    service = LocalService(python=_fake_engine(tmp_path, "echo 'cannot open the database' >&2\nexit 2\n"),
                           log_path=tmp_path / "exits.log", startup_timeout_s=20)
    with pytest.raises(RuntimeError, match="the service is not started"):
        getattr(service, "target")
    started = time.monotonic()
    with pytest.raises(local_service.ServiceFailed) as failed:
        service.start()
    assert str(failed.value) == "the engine exited with status 2:\ncannot open the database"
    assert time.monotonic() - started < 10, "the exit was seen only at the start's timeout"
    quiet = LocalService(python=_fake_engine(tmp_path, "echo 'still migrating'\nexec sleep 60\n"),
                         log_path=tmp_path / "quiet.log", startup_timeout_s=0.2)
    try:
        with pytest.raises(local_service.ServiceFailed, match=r"^the engine did not start within 0.2 s:") as late:
            quiet.start()
        assert str(late.value).splitlines()[1:] == ["still migrating"]  # its log's tail, as for an exit
        assert quiet.process.poll() == -signal.SIGKILL  # killed, and reaped
    finally:
        quiet.kill()


def test_a_failure_ends_with_the_engines_last_log_lines(tmp_path):
    """ServiceFailed's message ends with the engine's last 30 log lines (the reason is at the
    end of a long log), not its first ones nor only its very last. A log never written has
    no tail."""
    says = "for n in $(seq 1 60); do echo \"line $n\"; done\nexit 1\n"
    service = LocalService(python=_fake_engine(tmp_path, says), log_path=tmp_path / "engine.log")
    with pytest.raises(local_service.ServiceFailed) as failed:
        service.start()
    status, *lines = str(failed.value).splitlines()
    assert status == "the engine exited with status 1:" and lines == [f"line {n}" for n in range(31, 61)]
    assert LocalService(log_path=tmp_path / "never-written.log").log_tail() == ""


def test_a_start_waits_its_timeout_by_the_clock_and_no_longer(tmp_path, monkeypatch):
    """An engine that never says it listens is given ``startup_timeout_s`` of the monotonic
    clock from its start, looked at every START_POLL_S, and then killed: not twice as long
    (a clock that only moves when the start sleeps: no real waiting)."""
    clock = [1000.0]
    monkeypatch.setattr(local_service, "time", SimpleNamespace(
        sleep=lambda s: clock.__setitem__(0, clock[0] + s), monotonic=lambda: clock[0]))
    service = LocalService(python=_fake_engine(tmp_path, "exec sleep 60\n"), log_path=tmp_path / "engine.log",
                           startup_timeout_s=5.0)
    try:
        with pytest.raises(local_service.ServiceFailed, match=r"^the engine did not start within 5 s:"):
            service.start()
        assert 5.0 <= clock[0] - 1000.0 <= 5.0 + local_service.START_POLL_S + 1e-6, clock
        assert service.process.returncode == -signal.SIGKILL
    finally:
        service.kill()


def test_a_failed_start_is_said_in_one_line(tmp_path):
    """failure(): the last error (or critical) line's ``error``, or its event when it has none;
    else the last line of the log's tail less argparse's ``prog: error:`` (or a plain
    ``error:``) unless that is a log line (a start that timed out); else the status line without
    its colon. JSON that is no log line is skipped, and a log never written is no line at all."""
    log = tmp_path / "engine.log"
    service = LocalService(log_path=log)
    exited = local_service.ServiceFailed("the engine exited with status 2:")
    assert service.logs() == [] and service.failure(exited) == "the engine exited with status 2"
    log.write_text('42\n["a list"]\n')
    assert service.logs() == []
    argparse_says = local_service.ServiceFailed(
        "the engine exited with status 2:\nusage: python -m engine_service serve [-h]\n"
        "python -m engine_service serve: error: argument --port: not a port\n\n")
    assert service.failure(argparse_says) == "argument --port: not a port"
    assert service.failure(local_service.ServiceFailed("the engine exited with status 1:\nerror: no such file\n")) \
        == "no such file"
    log.write_text('{"level": "error", "event": "store_open_failed", "error": "disk full"}\n'
                   '{"level": "critical", "event": "cannot_serve"}\n')
    assert service.failure(argparse_says) == "cannot_serve"
    log.write_text('{"level": "error", "event": "a", "error": "first"}\n'
                   '{"level": "warning", "event": "b", "error": "a warning"}\n'
                   'a plain line, then JSON lines again\n'
                   '{"level": "error", "event": "c", "error": "last"}\n'
                   '{"level": "warning", "event": "d", "error": "a later warning"}\n'
                   '{"level": "info", "event": "c_done"}\n')
    assert service.failure(exited) == "last"  # a warning is no failure, even the last line
    assert [line["event"] for line in service.logs()] == ["a", "b", "c", "d", "c_done"]
    assert [line["event"] for line in service.find_log("c")] == ["c"]  # the event named, not a prefix
    log.write_text('{"level": "info", "event": "bot_host_started"}\n')
    timed_out = local_service.ServiceFailed(
        'the engine did not start within 30 s:\n{"level": "info", "event": "bot_host_started"}\n')
    assert service.failure(timed_out) == "the engine did not start within 30 s"  # not the info line


def test_the_log_file_is_removed_only_when_the_service_made_it(tmp_path):
    """A log file of its own (no ``log_path``) goes with the service at the end of its
    ``with`` block; the caller's log file stays. The end of the block stops the engine with
    SIGTERM (it drains, as in production), not SIGKILL. stop() before any start is 0."""
    mine = LocalService(python=_fake_engine(tmp_path, STARTS))
    theirs = LocalService(python=_fake_engine(tmp_path, STARTS), log_path=tmp_path / "engine.log")
    assert theirs.stop() == 0
    for service in (mine, theirs):
        with service:
            assert service.log_path.exists()
        assert service.process.returncode == -signal.SIGTERM
    assert not mine.log_path.exists() and theirs.log_path.exists()


def test_a_free_port_is_a_number_nothing_holds():
    """free_port(): a TCP port that could be bound a moment ago, never one in use."""
    port = local_service.free_port()
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", port))
        taken.listen()
        other = local_service.free_port()
        assert isinstance(other, int) and other != port


def test_by_default_the_engine_binds_a_free_port_with_a_database_in_memory(tmp_path):
    """The module's defaults: ``--port 0`` (the engine binds a free port and says which),
    ``--db memory:`` (nothing survives the process), a free metrics port, and a log file of
    its own in the temporary directory (not the directory the client was started in); the start
    waits up to 30 s for the engine to listen (README: clients.play's engine of its own)."""
    service = LocalService()
    try:
        assert service.startup_timeout_s == 30
        command = service.command()
        assert command[command.index("--port") + 1] == "0"
        assert command[command.index("--db") + 1] == "memory:"
        assert int(command[command.index("--metrics-port") + 1]) == service.metrics_port > 0
        assert service.log_path.parent == Path(tempfile.gettempdir())
        assert service.log_path.name.startswith("cardgames-") and service.log_path.suffix == ".log"
    finally:
        service.cleanup()


#: Says it listens, then drains for 0.5 s on SIGTERM and exits 0.
DRAINS_SLOWLY = ("trap 'kill $!; sleep 0.5; exit 0' TERM\n"
                 "echo '{\"event\": \"grpc_server_started\", \"port\": 4321}'\n"
                 "sleep 60 & wait\n")


def test_a_draining_engine_is_given_its_time_at_the_end_of_the_block(tmp_path):
    """stop() (the end of a ``with`` block) waits for a drain that takes a while (0.5 s here)
    and returns its exit status; SIGKILL is for an engine still there after ``timeout_s``."""
    with LocalService(python=_fake_engine(tmp_path, DRAINS_SLOWLY), log_path=tmp_path / "engine.log") as service:
        pass
    assert service.process.returncode == 0


def test_a_service_leaves_no_descriptor_open(tmp_path):
    """A service started and stopped leaves the caller's process with the descriptors it had:
    neither the log file it hands the engine nor the one its own log was made with (each
    LocalService without ``log_path`` kept one open until the process exited)."""
    def open_fds() -> int:
        return len(os.listdir("/proc/self/fd"))

    before = open_fds()
    for log_path in (None, tmp_path / "engine.log"):
        with LocalService(python=_fake_engine(tmp_path, STARTS), log_path=log_path):
            pass
    assert open_fds() == before


def test_a_metrics_port_0_is_read_back_as_the_port_bound(tmp_path):
    """``metrics_port=0`` binds any free port (the module docstring): ``metrics_port`` is the one
    the engine's ``metrics_server_started`` line names, as ``port`` is the gRPC one; it stayed
    0. A line of an earlier run in a reused log is not taken for this run's."""
    log = tmp_path / "engine.log"
    log.write_text('{"event": "metrics_server_started", "port": 1111}\n')
    says = ("echo '{\"event\": \"metrics_server_started\", \"port\": 5678}'\n" + STARTS)
    service = LocalService(python=_fake_engine(tmp_path, says), metrics_port=0, log_path=log)
    with service:
        assert (service.port, service.metrics_port) == (4321, 5678)
    service = LocalService(python=_fake_engine(tmp_path, STARTS), metrics_port=0, log_path=log)
    with service:  # no new line: the port asked for stays
        assert (service.port, service.metrics_port) == (4321, 0)
