"""``python -m engine_service serve`` as a child process of a test: on ports 0, with JSON logs
in a file, the tests' admin token and the database given: a SQLite file or a ``postgresql://`` URL
(test_process, test_crash_under_load, the PostgreSQL and retention tests)."""

from __future__ import annotations

import json
import os
import re
import resource
import signal
import subprocess
import sys
import time
from pathlib import Path

from clients.local_service import START_POLL_S
from engine_service.child_exit import wait_for_exit

from .harness import ADMIN_TOKEN


#: A line of gRPC's C core (absl log format: severity, date, time, thread, file:line).
GRPC_CORE_LINE = re.compile(r"[IWEF]\d{4} \d\d:\d\d:\d\d\.\d+ +\d+ [\w./-]+:\d+\] ")


class Service:
    """One ``serve`` process on a temp database (a path, or a PostgreSQL URL); its stderr (JSON
    logs) goes to a file."""

    def __init__(self, tmp: Path, db: Path | str, name: str, *,
                 open_files: tuple[int, int] | None = None, **env: str) -> None:
        """``open_files``: the (soft, hard) RLIMIT_NOFILE the process starts with."""
        self.log_path = tmp / f"{name}.log"
        environ = {**os.environ, "CARDGAMES_PORT": "0", "CARDGAMES_METRICS_PORT": "0",
                   "CARDGAMES_METRICS_HOST": "127.0.0.1", "CARDGAMES_HOST": "127.0.0.1",
                   "CARDGAMES_DB": str(db), "CARDGAMES_LOG_FORMAT": "json",
                   "CARDGAMES_ADMIN_TOKEN": ADMIN_TOKEN, "CARDGAMES_BOT_WORKERS": "1",
                   "CARDGAMES_DRAIN_GRACE_S": "5", "PYTHONUNBUFFERED": "1", **env}
        self._log = open(self.log_path, "w")
        limit = None if open_files is None else \
            (lambda: resource.setrlimit(resource.RLIMIT_NOFILE, open_files))
        self.proc = subprocess.Popen([sys.executable, "-m", "engine_service", "serve"], cwd=tmp,
                                     env=environ, stdout=self._log, stderr=subprocess.STDOUT,
                                     preexec_fn=limit)
        try:
            self.port, self.metrics_port = self._wait_serving()
        except BaseException:  # a start that fails any way leaves no process behind
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait(10)
            self._log.close()
            raise

    def lines(self, *, grpc_core: bool = False) -> list[dict]:
        """The JSON log lines. ``grpc_core``: skip the plain lines gRPC's C core writes on
        stderr itself (``E1203 16:23:44.119190 7212 file.cc:164] text``), which only come
        from faults the test provoked; otherwise every line must be one JSON object."""
        out = []
        for raw in self.log_path.read_text().splitlines():
            if grpc_core and GRPC_CORE_LINE.match(raw):
                continue
            out.append(json.loads(raw))
        return out

    def grpc_core_lines(self) -> list[str]:
        return [raw for raw in self.log_path.read_text().splitlines() if GRPC_CORE_LINE.match(raw)]

    def _wait_serving(self, timeout: float = 60.0) -> tuple[int, int]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError(f"serve exited with {self.proc.returncode}:\n{self.log_path.read_text()}")
            for line in self.lines(grpc_core=True) if self.log_path.stat().st_size else []:
                if line.get("event") == "serving":
                    return line["port"], line["metrics_port"]
            time.sleep(START_POLL_S)
        self.proc.kill()
        raise AssertionError(f"serve did not start:\n{self.log_path.read_text()}")

    @property
    def target(self) -> str:
        return f"127.0.0.1:{self.port}"

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 30.0) -> int:
        """Send ``sig`` and wait for the exit status (seen as the process ends:
        engine_service.child_exit.wait_for_exit); subprocess.TimeoutExpired after ``timeout``."""
        self.proc.send_signal(sig)
        try:
            status = wait_for_exit(self.proc, timeout)
            if status is None:
                raise subprocess.TimeoutExpired(self.proc.args, timeout)
            return status
        finally:
            self._log.close()
