"""A PostgreSQL server of a test's own, for the tests that stop, restart or crash the server
under a running store or engine: the suite's shared server (tests/store/pg.py, perhaps the
machine's, used by other test runs) must never be. Made as tests/postgres_env.sh makes the
suite's private cluster: Debian's ``initdb`` and ``pg_ctl`` (as the postgres user when run as
root: initdb refuses root), trust authentication, a free port on 127.0.0.1 and a temp
directory, stopped and deleted by :meth:`PrivateCluster.close`. initdb runs once per test
process (a second or two on a loaded machine); each cluster starts from a copy of its
untouched data directory, as fresh as its own initdb would make it."""

from __future__ import annotations

import atexit
import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

_template: Path | None = None  # this process's initdb output, copied by every cluster


def _bindir() -> Path:
    """Where initdb and pg_ctl are: Debian's newest /usr/lib/postgresql/N/bin, or the PATH."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"),
                   key=lambda p: int(Path(p).parts[-3]) if Path(p).parts[-3].isdigit() else 0)
    if found:
        return Path(found[-1]).parent
    initdb = shutil.which("initdb")
    if initdb:
        return Path(initdb).parent
    raise AssertionError("these tests start a PostgreSQL server of their own: install PostgreSQL's "
                         "server programs (Debian's postgresql package), as tests/postgres_env.sh does")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class PrivateCluster:
    """A throw-away PostgreSQL cluster: ``url()`` names its ``postgres`` database; ``stop``,
    ``start`` and ``restart`` take pg_ctl's shutdown modes (``fast``, ``immediate``)."""

    def __init__(self) -> None:
        self.bin = _bindir()
        self.dir = Path(tempfile.mkdtemp(prefix="cardgames-pg-"))
        self.data = self.dir / "data"
        self.log = self.dir / "log"
        self._as: list[str] = []
        if os.getuid() == 0:
            os.chown(self.dir, pwd.getpwnam("postgres").pw_uid, -1)
            self._as = ["runuser", "-u", "postgres", "--"]
        self._run("cp", "-a", str(self._initdb_once()), str(self.data))
        for attempt in range(5):  # a free port may be taken before the server binds it
            self.port = _free_port()
            try:
                self.start()
                break
            except AssertionError:
                if attempt == 4:
                    raise

    def _initdb_once(self) -> Path:
        """A data directory initdb made and nothing started (removed when the process exits)."""
        global _template
        if _template is None:
            made = Path(tempfile.mkdtemp(prefix="cardgames-pg-template-"))
            atexit.register(shutil.rmtree, made, True)
            if self._as:
                os.chown(made, pwd.getpwnam("postgres").pw_uid, -1)
            self._run("initdb", "-D", str(made / "data"), "-A", "trust", "-U", "postgres")
            _template = made / "data"
        return _template

    def _run(self, program: str, *args: str) -> None:
        path = program if program == "cp" else str(self.bin / program)
        done = subprocess.run([*self._as, path, *args], capture_output=True, text=True, timeout=60)
        if done.returncode:
            log = self.log.read_text()[-2000:] if self.log.exists() else ""
            raise AssertionError(f"{program} {' '.join(args)} failed: {done.stderr}\n{log}")

    def url(self, user: str = "postgres", password: str = "") -> str:
        auth = f"{user}:{password}" if password else user
        return f"postgresql://{auth}@127.0.0.1:{self.port}/postgres"

    def start(self) -> None:
        self._run("pg_ctl", "-D", str(self.data), "-l", str(self.log), "-w", "-o",
                  f"-p {self.port} -k {self.dir} -c listen_addresses=127.0.0.1", "start")

    def stop(self, mode: str = "fast") -> None:
        self._run("pg_ctl", "-D", str(self.data), "-m", mode, "-w", "stop")

    def restart(self, mode: str = "fast", down_s: float = 0.0) -> None:
        self.stop(mode)
        time.sleep(down_s)
        self.start()

    def close(self) -> None:
        if (self.data / "postmaster.pid").exists():
            subprocess.run([*self._as, str(self.bin / "pg_ctl"), "-D", str(self.data), "-m", "immediate",
                            "-w", "stop"], capture_output=True, timeout=60)
        shutil.rmtree(self.dir, ignore_errors=True)


@pytest.fixture
def cluster():
    """A private cluster for one test, stopped and removed after it."""
    c = PrivateCluster()
    try:
        yield c
    finally:
        c.close()
