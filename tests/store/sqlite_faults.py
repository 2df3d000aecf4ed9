"""Real SQLite failures under the real SQLite store, for the tests of what the store and the
session layer do when the database fails as operators meet it (docs/operations.md, "When the
database fails"): no proxy of the connection, SQLite itself refuses.

* **A full disk** (SQLITE_FULL): ``PRAGMA max_page_count`` on the store's own connection, set
  to the pages the file has (:meth:`LimitedSqliteStore.fill_up`), so that a write needing one
  more page fails as on a full volume, while a write that fits in the pages there succeeds;
  :meth:`~LimitedSqliteStore.make_room` gives the room back. ``page_size`` (a new file only)
  makes pages small, so that a few writes need a new one.
* **A read-only database** (SQLITE_READONLY): ``PRAGMA query_only``. As root (the tests, CI)
  a chmod does not stop SQLite from writing, nor does it for a running engine whatever its
  user (the file is open already).
* **Writes queued into one commit** (:func:`held`): the store's thread is held by a read that
  waits, so that the writes sent meanwhile share the next transaction (group commit).
* **No space left on the volume** (ENOSPC, :func:`small_volume`): a tmpfs of its own, filled
  with a ballast file; needs the right to mount (root), else the test is skipped.
* **No shared memory for a WAL** (:func:`without_shared_memory`): the store's connection
  opened through SQLite's ``unix-none`` VFS, which has none (as on a file system that cannot
  map one), so that ``PRAGMA journal_mode=WAL`` leaves the file in its rollback journal.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sqlite3
import subprocess
import threading
from pathlib import Path
from typing import AsyncIterator, Iterator

import pytest

from engine_service.store import SqliteStore


class LimitedSqliteStore(SqliteStore):
    """The SQLite store, whose database the test can fill up or make read-only."""

    def __init__(self, *args, page_size: int = 0, read_only: bool = False, full: bool = False,
                 **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.page_size = page_size
        self.opens_read_only = read_only  # as SQLite opens a file it may not write
        self.opens_full = full  # as on a volume without a free byte: no page can be added

    def _init_sync(self, conn) -> None:
        if self.page_size:  # takes effect on a new file only
            conn.execute(f"PRAGMA page_size={self.page_size}")
        if self.opens_read_only:
            conn.execute("PRAGMA query_only=1")
        if self.opens_full:
            pages = conn.execute("PRAGMA page_count").fetchone()[0]
            conn.execute(f"PRAGMA max_page_count={max(1, pages)}")
        super()._init_sync(conn)

    async def fill_up(self) -> int:
        """No page can be added to the file from now on (SQLITE_FULL); returns its pages."""
        def fn() -> int:
            pages = self._conn.execute("PRAGMA page_count").fetchone()[0]
            assert self._conn.execute(f"PRAGMA max_page_count={pages}").fetchone()[0] == pages
            return pages
        return await self._run(fn)

    async def make_room(self, pages: int = 100_000) -> None:
        def fn() -> None:
            count = self._conn.execute("PRAGMA page_count").fetchone()[0]
            self._conn.execute(f"PRAGMA max_page_count={count + pages}")
        await self._run(fn)

    async def read_only(self, on: bool = True) -> None:
        await self._run(lambda: self._conn.execute(f"PRAGMA query_only={int(on)}"))

    def queued(self) -> int:
        """Calls waiting for the store's thread."""
        return self._jobs.qsize() if self._jobs is not None else 0


@contextlib.asynccontextmanager
async def held(store: SqliteStore) -> AsyncIterator[None]:
    """Hold the store's thread (a read that waits) until the block ends: the writes sent
    meanwhile are queued, and the thread takes them into one transaction."""
    gate = threading.Event()
    blocker = asyncio.ensure_future(store._run(gate.wait))
    await asyncio.sleep(0.05)
    try:
        yield
    finally:
        gate.set()
        await blocker


async def until_queued(store: LimitedSqliteStore, count: int, timeout: float = 30.0) -> None:
    """Wait until ``count`` calls wait for the held store's thread."""
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while store.queued() < count:
        assert loop.time() < end, f"{store.queued()} calls queued, not {count}"
        await asyncio.sleep(0.002)


@contextlib.contextmanager
def small_volume(where: Path, size: str = "1m") -> Iterator[Path]:
    """A tmpfs of ``size`` mounted at ``where`` (skip the test if it cannot be mounted)."""
    where.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size},mode=0700", "tmpfs", str(where)],
                          capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip() or done.returncode}")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


def fill_volume(where: Path) -> Path:
    """Write a ballast file on ``where`` until its filesystem has no byte left (ENOSPC)."""
    ballast = where / "ballast"
    fd = os.open(ballast, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        while True:
            os.write(fd, b"\0" * 65536)
    except OSError:
        pass
    try:
        while True:  # the last bytes
            os.write(fd, b"\0" * 512)
    except OSError:
        pass
    finally:
        os.close(fd)
    return ballast


def without_shared_memory(monkeypatch: pytest.MonkeyPatch) -> None:
    """Until the test's end (or ``monkeypatch.undo()``), SQLite opens every file through its
    ``unix-none`` VFS, which maps no shared memory: a WAL cannot be used (SQLite keeps the
    rollback journal), and a file in WAL mode cannot be read (SQLITE_CANTOPEN)."""
    connect = sqlite3.connect

    def without(path, *args, **kwargs):
        return connect(f"file:{path}?vfs=unix-none", *args, uri=True, **kwargs)
    monkeypatch.setattr(sqlite3, "connect", without)
