"""One engine process per database: the ownership lock of a SQLite database file.

An engine holds its matches' watchers, timers and bot seats in memory and is the single writer
of their action logs (ARCHITECTURE.md section 4). A second engine on the same database would
resume the same matches, arm the same timers and serve players who never see each other's
actions live; the database's keys keep the logs consistent, but the matches would not be. So
the store refuses to open a database that another engine process holds
(:class:`~.base.StoreInUse`), after waiting ``wait_s`` for it to be released (a previous
process still draining).

For SQLite the lock is an exclusive ``flock`` on ``<database>.lock`` beside the database,
held for the life of the store. The kernel releases it when the process ends, however it
ends (``kill -9`` included), so a crashed engine never leaves a stale lock behind. It is a
file of its own rather than the database file because SQLite takes POSIX record locks on the
database, and mixing lock kinds on one file interacts badly on some filesystems; readers
such as the online backup (docs/operations.md) never touch it. The file carries the
holder's pid, host and start time, which the refusal quotes.

The PostgreSQL store holds a session-level advisory lock instead (:mod:`.pg_ownership`).
"""

from __future__ import annotations

import errno
import json
import os
import socket
import time
from datetime import datetime, timezone

import structlog

from .base import StoreError, StoreInUse

try:
    import fcntl
except ImportError:  # Windows: byte-range locking through msvcrt
    fcntl = None  # type: ignore[assignment]
    import msvcrt

#: How often a store waiting for the lock (``--db-lock-wait-s``: a successor started while its
#: predecessor drains) tries again: it takes it at most this long after the holder lets go (it
#: tried every 0.1 s, up to 100 ms more of a restart's downtime). An attempt is an open, a
#: ``flock`` and a close: a hundred a second cost nothing measurable.
POLL_S = 0.01

#: The errors of a lock attempt that mean another process holds the lock.
_HELD = frozenset({errno.EAGAIN, errno.EWOULDBLOCK, errno.EACCES, errno.EDEADLK})

log = structlog.get_logger("engine_service.store")


def holder_identity() -> dict[str, object]:
    """Who this process is, as another engine's refusal names it."""
    return {"pid": os.getpid(), "host": socket.gethostname(),
            "since": datetime.now(timezone.utc).isoformat(timespec="seconds")}


def describe_holder(info: dict[str, object] | None) -> str:
    if not info:
        return "another engine process"
    return f"another engine process (pid {info.get('pid', '?')} on {info.get('host', '?')} " \
           f"since {info.get('since', '?')})"


class FileOwnership:
    """The exclusive lock of one SQLite database file (see the module docstring).

    Blocking calls: the SQLite store runs them on its own thread."""

    def __init__(self, db_path: str) -> None:
        self.db_path = db_path
        self.lock_path = f"{db_path}.lock"
        # A path that is a symbolic link to the database is locked beside the link (as every
        # engine did) and beside the file it names: a second engine given the file's path, or
        # another link to it, locked a lock file of its own and opened the same database;
        # the lock beside the link still excludes an engine of a release before this one.
        beside_path = os.path.join(os.path.realpath(os.path.dirname(os.path.abspath(db_path))),
                                   os.path.basename(db_path))
        real = os.path.realpath(db_path)
        self.lock_paths = (self.lock_path,) if real == beside_path else (self.lock_path, f"{real}.lock")
        self._fds: list[int] = []

    @property
    def held(self) -> bool:
        return bool(self._fds)

    def acquire(self, wait_s: float = 0.0) -> None:
        """Take the lock, waiting up to ``wait_s`` seconds for its holder to let go;
        :class:`StoreInUse` naming the holder when it does not."""
        if self._fds:
            return
        deadline = time.monotonic() + max(0.0, wait_s)
        try:
            for lock_path in self.lock_paths:
                self._fds.append(self._acquire(lock_path, deadline))
        except BaseException:
            self.release()
            raise

    def _acquire(self, lock_path: str, deadline: float) -> int:
        waiting = False  # said once, so that a silent start-up is not taken for a hang
        while True:
            fd = self._open(lock_path)
            try:
                locked = self._try_lock(fd)
            except OSError as exc:
                os.close(fd)
                raise StoreError(f"cannot lock the lock file {lock_path}: {exc.strerror or exc}") from None
            if locked:
                if self._still_linked(fd, lock_path):
                    self._record_holder(fd)
                    return fd
                os.close(fd)  # the file was replaced between open and lock: lock the new one
                continue
            holder = self._read_holder(fd)
            os.close(fd)
            if time.monotonic() >= deadline:
                raise StoreInUse(f"database {self.db_path} is in use by {describe_holder(holder)}; "
                                 "one engine per database: stop the other one first "
                                 f"(lock file {lock_path})")
            if not waiting:
                waiting = True
                log.warning("db_lock_waiting", db=self.db_path, holder=describe_holder(holder),
                            wait_s=round(deadline - time.monotonic(), 1))
            time.sleep(POLL_S)

    def release(self) -> None:
        """Let go (closing the file releases the lock; the file stays, harmless)."""
        fds, self._fds = self._fds, []
        for fd in fds:
            os.close(fd)

    # ---- the operating system's part ---------------------------------------------------

    @staticmethod
    def _open(lock_path: str) -> int:
        try:
            return os.open(lock_path, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o600)
        except OSError as exc:
            raise StoreError(f"cannot open the lock file {lock_path}: {exc.strerror}") from None

    @staticmethod
    def _try_lock(fd: int) -> bool:
        """Whether the lock was taken; False while another process holds it. Any other failure
        (ENOLCK: a file system without locks, such as NFS without its lock service) is raised:
        waiting for it ended in "in use by another engine process", which it was not."""
        try:
            if fcntl is not None:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            else:
                os.lseek(fd, 0, os.SEEK_SET)
                msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
        except OSError as exc:
            # held elsewhere: EWOULDBLOCK (flock), EACCES or EDEADLK (Windows' msvcrt.locking)
            if exc.errno in _HELD:
                return False
            raise
        return True

    @staticmethod
    def _still_linked(fd: int, lock_path: str) -> bool:
        try:
            return os.path.samestat(os.fstat(fd), os.stat(lock_path))
        except OSError:
            return False

    @staticmethod
    def _record_holder(fd: int) -> None:
        data = json.dumps(holder_identity()).encode() + b"\n"
        try:
            os.ftruncate(fd, 0)
            os.lseek(fd, 0, os.SEEK_SET)
            os.write(fd, data)
        except OSError:
            pass  # the description is a courtesy to the next process; the lock is what counts

    @staticmethod
    def _read_holder(fd: int) -> dict[str, object] | None:
        try:
            os.lseek(fd, 0, os.SEEK_SET)
            info = json.loads(os.read(fd, 4096) or b"null")
        except (OSError, ValueError):
            return None
        return info if isinstance(info, dict) else None
