"""Start the engine as a child process on free ports: for the sample clients' "no --target"
mode, for demos, and for tests that need a real service.

``LocalService`` runs ``python -m engine_service serve`` with ``--port 0`` unless told a port
(the server binds a free port and logs it in its ``grpc_server_started`` line, which is read
back here; ``metrics_port=0`` likewise, read back from ``metrics_server_started``), JSON logs
to a file, and a database of the caller's choosing (``memory:`` by default: nothing survives
the process). Stopping sends SIGTERM, so the service drains as in production.

    with LocalService() as service:
        client = connect(service.target)
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Sequence

from engine_service.child_exit import wait_for_exit


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port that was free a moment ago (for servers that cannot bind port 0 and say so)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


#: How often :meth:`LocalService.start` reads the engine's log for the line that says it
#: listens: the start waited up to this long after it (it read it every 0.05 s).
START_POLL_S = 0.01


def _is_log_line(line: str) -> bool:
    """Whether ``line`` is one of the engine's JSON log lines (a JSON object)."""
    try:
        return isinstance(json.loads(line), dict)
    except ValueError:
        return False


class ServiceFailed(RuntimeError):
    """The engine exited or did not start in time; the message ends with its last 30 log lines
    (:meth:`LocalService.log_tail`)."""


class LocalService:
    """The engine as a child process (see the module docstring).

    ``admin_token`` goes to the engine in ``CARDGAMES_ADMIN_TOKEN``, never on its command line;
    ``None`` or ``""`` starts it without one (an empty variable is unset, docs/operations.md:
    the admin API then refuses every call), and a token in the caller's environment is never
    passed on. ``env`` replaces the caller's environment for the child."""

    def __init__(self, *, db: str = "memory:", admin_token: str | None = None, port: int = 0,
                 metrics_port: int | None = None, args: Sequence[str] = (),
                 env: dict[str, str] | None = None, log_path: str | Path | None = None,
                 startup_timeout_s: float = 30.0, python: str = sys.executable,
                 cwd: str | Path | None = None) -> None:
        self.db = db
        self.admin_token = admin_token
        self.requested_port = port
        self.metrics_port = metrics_port if metrics_port is not None else free_port()
        self.args = list(args)
        self.env = env
        self.startup_timeout_s = startup_timeout_s
        self.python = python
        self.cwd = cwd
        self._own_log = log_path is None
        if not log_path:
            fd, own = tempfile.mkstemp(prefix="cardgames-", suffix=".log")
            os.close(fd)  # the engine writes it; the descriptor mkstemp opened stayed open until the exit
            log_path = own
        self.log_path = Path(log_path)
        self.process: subprocess.Popen | None = None
        self.port: int | None = None

    @property
    def target(self) -> str:
        if self.port is None:
            raise RuntimeError("the service is not started")
        return f"127.0.0.1:{self.port}"

    def command(self) -> list[str]:
        return [self.python, "-m", "engine_service", "serve", "--host", "127.0.0.1", "--port", str(self.requested_port),
                "--metrics-host", "127.0.0.1", "--metrics-port", str(self.metrics_port),
                "--db", self.db, "--log-format", "json", *self.args]

    def start(self) -> "LocalService":
        env = dict(os.environ if self.env is None else self.env)
        env.pop("CARDGAMES_ADMIN_TOKEN", None)
        if self.admin_token:
            env["CARDGAMES_ADMIN_TOKEN"] = self.admin_token  # never on the command line
        env.setdefault("PYTHONUNBUFFERED", "1")
        seen = len(self.find_log("grpc_server_started"))  # a reused log file keeps older runs
        seen_metrics = len(self.find_log("metrics_server_started"))
        log = open(self.log_path, "ab")
        self.process = subprocess.Popen(self.command(), stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                                        env=env, cwd=self.cwd)
        log.close()
        deadline = time.monotonic() + self.startup_timeout_s
        while time.monotonic() < deadline:
            started = self.find_log("grpc_server_started")
            if len(started) > seen:
                self.port = int(started[-1]["port"])
                # logged before the gRPC server starts: a metrics port 0 asked for is the one bound
                metrics = self.find_log("metrics_server_started")
                if len(metrics) > seen_metrics:
                    self.metrics_port = int(metrics[-1]["port"])
                return self
            if self.process.poll() is not None:
                raise ServiceFailed(f"the engine exited with status {self.process.returncode}:\n{self.log_tail()}")
            time.sleep(START_POLL_S)
        self.kill()
        raise ServiceFailed(f"the engine did not start within {self.startup_timeout_s:g} s:\n{self.log_tail()}")

    def failure(self, exc: ServiceFailed) -> str:
        """Why the engine did not start (``exc``, from :meth:`start`), in one line for the
        command that started it (clients.play, clients.remote_bot): its last JSON error line's
        ``error`` (or event), else, for a setting refused before its logging began (``--db
        sqlite://x``), argparse's one plain line, the last of the log; the status line alone
        ("exited with status 2:") said nothing. A log line that is no error is no reason either
        (a start that timed out after ``bot_host_started``): then the status line is said."""
        errors = [line for line in self.logs() if line.get("level") in ("error", "critical")]
        if errors:
            return str(errors[-1].get("error") or errors[-1].get("event"))
        status, *tail = str(exc).splitlines()
        last = next((line.strip() for line in reversed(tail) if line.strip()), "")
        if not last or _is_log_line(last):
            return status.rstrip(":")
        return re.sub(r"^python -m engine_service serve: error: |^error: ", "", last)

    def logs(self) -> list[dict[str, Any]]:
        """Every JSON log line written so far (other lines are skipped)."""
        out = []
        if not self.log_path.exists():
            return out
        for line in self.log_path.read_text(errors="replace").splitlines():
            try:
                item = json.loads(line)
            except ValueError:
                continue
            if isinstance(item, dict):
                out.append(item)
        return out

    def find_log(self, event: str) -> list[dict[str, Any]]:
        return [line for line in self.logs() if line.get("event") == event]

    def log_tail(self, lines: int = 30) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    def stop(self, timeout_s: float = 20.0) -> int:
        """SIGTERM (the service drains) and wait; SIGKILL after ``timeout_s``. Returns the exit status."""
        if self.process is None:
            return 0
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            if wait_for_exit(self.process, timeout_s) is None:
                self.process.kill()
                self.process.wait()
        return self.process.returncode

    def kill(self) -> None:
        """SIGKILL: a crash, as far as the service can tell."""
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait()

    def cleanup(self) -> None:
        if self._own_log:
            try:
                self.log_path.unlink()
            except OSError:
                pass

    def __enter__(self) -> "LocalService":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
        self.cleanup()
