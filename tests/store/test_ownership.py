"""One engine process per database (engine_service.store.ownership / pg_ownership): a second
engine's store is refused, naming the holder, or waits for it to let go; the lock goes with
the holder's process however it ends; the PostgreSQL lock session is watched, taken again
after a lost connection, and a lock another engine took meanwhile stops writes for good."""

from __future__ import annotations

import asyncio
import contextlib
import errno
import fcntl
import gc
import json
import math
import os
import re
import signal
import socket
import stat
import subprocess
import sys
import threading
import time
import warnings
from datetime import timedelta

import psycopg
import pytest
import structlog
import structlog.testing

from engine_service.observability.metrics import Metrics
from engine_service.store import OwnershipLost, SqliteStore, StoreError, StoreInUse
from engine_service.store.postgres import PostgresStore
from engine_service.store import pg_ownership
from engine_service.store import ownership
from engine_service.store.ownership import FileOwnership
from engine_service.store.pg_ownership import OWNER_LOCK_CLASS

from .pg import TestDatabase, connect, url_with
from .test_store import DECK0, record, run
from tests.crash import crash


def _attempt(make) -> BaseException | None:
    """Open (and close) a store; the exception, or None when it opened."""
    async def go():
        st = make()
        try:
            await st.open()
        except StoreError as exc:
            return exc
        await st.close()
        return None
    return run(go())


# ---- SQLite --------------------------------------------------------------------------------

def test_a_second_store_on_a_sqlite_file_is_refused_naming_the_holder(tmp_path):
    path = tmp_path / "db.sqlite3"

    async def go():
        first = SqliteStore(path)
        await first.open()
        await first.create_match(record(), [DECK0])
        with structlog.testing.capture_logs() as logs, pytest.raises(StoreInUse) as refused:
            await SqliteStore(path).open()
        # no wait asked for: refused at once, the waiting path (its db_lock_waiting line, then
        # polls) not taken
        assert [line for line in logs if line["event"] == "db_lock_waiting"] == []
        await first.save_seat("m1", record().seats[0])  # the holder goes on undisturbed
        await first.close()
        second = SqliteStore(path)  # released by close()
        await second.open()
        got = await second.load_match("m1")
        await second.close()
        return str(refused.value), got

    message, got = run(go())
    assert f"pid {os.getpid()} on {socket.gethostname()}" in message
    assert "one engine per database" in message and str(path) in message
    assert got is not None and got.decks == (DECK0,)
    assert stat.S_IMODE(os.stat(f"{path}.lock").st_mode) == 0o600


def test_a_second_store_through_a_symbolic_link_is_refused(tmp_path):
    """The lock is the file's, whatever path names it: a second engine given a symbolic link
    to the database (or the file a link names) is refused as on the same path. It took a lock
    file beside the link (``link.sqlite3.lock``) and opened the same database. The lock
    beside the link is taken too, so that an engine of an earlier release, which locks only
    there, still excludes one of this release on the same link (a rolling update); and a
    path through a linked directory takes one lock (the same file), without waiting for
    itself."""
    real, link = tmp_path / "db.sqlite3", tmp_path / "link.sqlite3"
    link.symlink_to(real)
    (tmp_path / "dir").symlink_to(tmp_path, target_is_directory=True)

    async def go():
        for first_path, second_path in ((real, link), (link, real)):
            first = SqliteStore(first_path)
            await first.open()
            try:
                with pytest.raises(StoreInUse):
                    await SqliteStore(second_path).open()
            finally:
                await first.close()
        earlier = os.open(f"{link}.lock", os.O_RDWR)  # an earlier release's engine on the link
        fcntl.flock(earlier, fcntl.LOCK_EX | fcntl.LOCK_NB)
        try:
            with pytest.raises(StoreInUse):
                await SqliteStore(link).open()
        finally:
            os.close(earlier)
        through_dir = SqliteStore(tmp_path / "dir" / "db.sqlite3")
        await through_dir.open()
        await through_dir.close()

    run(go())
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.endswith(".lock")) == [
        "db.sqlite3.lock", "link.sqlite3.lock"]


class _Pauses:
    """A module's ``time`` or ``asyncio`` as the module sees it, but for its ``sleep``, which
    records each pause asked for (seconds) before it sleeps."""

    def __init__(self, real, pauses: list[float]) -> None:
        self._real = real
        self._pauses = pauses

    def __getattr__(self, name: str):
        return getattr(self._real, name)

    def sleep(self, seconds: float, *args):
        self._pauses.append(seconds)
        return self._real.sleep(seconds, *args)


def _waited_for_the_holder(make, release_after_s: float, monkeypatch) -> tuple[float, list, list[float]]:
    """Open a store, and a second one with a lock wait while the first closes after
    ``release_after_s``: how long the second waited (it then writes, as the owner), its
    attempts to take the lock, each as (begun after the first had closed, took the lock), and
    the pauses it made between them (seconds asked for). The second says once that it waits,
    and for whom (db_lock_waiting), so that an engine waiting out a draining predecessor is
    not taken for a hung one."""
    attempts: list[tuple[bool, bool]] = []
    pauses: list[float] = []
    released = threading.Event()  # the SQLite store tries from its own thread

    def try_lock(fd, real=FileOwnership._try_lock):
        after = released.is_set()
        attempts.append((after, took := real(fd)))
        return took

    async def try_take(self, real=pg_ownership.AdvisoryOwnership._try_take):
        after = released.is_set()
        attempts.append((after, took := await real(self)))
        return took

    async def go():
        first = make()
        await first.open()

        async def let_go():
            await asyncio.sleep(release_after_s)
            await first.close()
            released.set()

        releasing = asyncio.create_task(let_go())
        started = time.monotonic()
        second = make(lock_wait_s=10)  # a hang guard too: StoreInUse after 10 s
        with monkeypatch.context() as patch:
            patch.setattr(FileOwnership, "_try_lock", staticmethod(try_lock))
            patch.setattr(ownership, "time", _Pauses(time, pauses))
            patch.setattr(pg_ownership.AdvisoryOwnership, "_try_take", try_take)
            patch.setattr(pg_ownership, "asyncio", _Pauses(asyncio, pauses))
            with structlog.testing.capture_logs() as logs:
                await second.open()
        waited = time.monotonic() - started
        waiting = [line for line in logs if line["event"] == "db_lock_waiting"]
        assert len(waiting) == 1 and waiting[0]["log_level"] == "warning", logs
        assert f"pid {os.getpid()} " in waiting[0]["holder"] and 9 <= waiting[0]["wait_s"] <= 10
        assert waiting[0]["db"]  # which database it waits for
        await releasing
        await second.create_match(record())
        await second.close()
        return waited, list(attempts), list(pauses)
    return run(go())


def _took_the_lock_at_once(attempts: list[tuple[bool, bool]], pauses: list[float], poll_s: float) -> None:
    """Refused while the holder held it, tried again every ``poll_s`` (never a longer pause),
    and taken by the first attempt begun after the holder let go: no later than that, not
    when the wait ran out (a time bound on a loaded machine said the same with a false alarm)."""
    assert [took for _, took in attempts] == [False] * (len(attempts) - 1) + [True], attempts
    assert len(attempts) >= 2 and not any(after and not took for after, took in attempts), attempts
    assert pauses == [poll_s] * (len(attempts) - 1), pauses


def test_a_waiting_store_opens_once_the_holder_lets_go(tmp_path, monkeypatch):
    waited, attempts, pauses = _waited_for_the_holder(
        lambda **kw: SqliteStore(tmp_path / "db.sqlite3", **kw), 0.4, monkeypatch)
    assert waited >= 0.3
    _took_the_lock_at_once(attempts, pauses, ownership.POLL_S)
    # taken at most 10 ms after its holder let go: every 0.1 s, a successor started while its
    # predecessor drained (a restart) waited up to 100 ms more
    assert ownership.POLL_S <= 0.01


class _Clock:
    """ownership.py's ``time``, whose clock moves only when it sleeps, by the pause asked for
    and without pausing: a wait measured by it, not by a loaded machine's pace (a 0.5 s wait
    checked against a wall-clock bound of 3 s)."""

    def __init__(self) -> None:
        self.now = 1000.0
        self.pauses: list[float] = []

    def __getattr__(self, name: str):
        return getattr(time, name)

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.pauses.append(seconds)
        self.now += seconds


def test_a_refused_wait_ends_after_lock_wait_s(tmp_path, monkeypatch):
    path = tmp_path / "db.sqlite3"
    clock = _Clock()

    async def go():
        first = SqliteStore(path)
        await first.open()
        try:
            with monkeypatch.context() as patch, pytest.raises(StoreInUse):
                patch.setattr(ownership, "time", clock)
                await SqliteStore(path, lock_wait_s=0.5).open()
        finally:
            await first.close()

    run(go())
    # tried every POLL_S, refused once the wait had run out: not before, nor a poll later
    assert set(clock.pauses) == {ownership.POLL_S}, clock.pauses
    assert 0.5 <= clock.now - 1000.0 < 0.5 + ownership.POLL_S + 1e-9, clock.now


def test_a_non_exclusive_reader_opens_beside_the_engine(tmp_path):
    path = tmp_path / "db.sqlite3"

    async def go():
        engine = SqliteStore(path)
        await engine.open()
        await engine.create_match(record())
        reader = SqliteStore(path, exclusive=False)
        await reader.open()
        listed = await reader.list_matches()
        await reader.close()
        await engine.append_action("m1", _action())  # the engine still owns it
        await engine.close()
        return listed

    assert [li.record.match_id for li in run(go())] == ["m1"]


_HOLDER = """
import asyncio, sys
from engine_service.store import SqliteStore

async def main():
    st = SqliteStore(sys.argv[1])
    await st.open()
    print("open", flush=True)
    await asyncio.sleep(120)

asyncio.run(main())
"""


def test_the_lock_goes_with_a_killed_process(tmp_path):
    """kill -9 releases the lock at once: a crashed engine never blocks its successor."""
    path = tmp_path / "db.sqlite3"
    proc = subprocess.Popen([sys.executable, "-c", _HOLDER, str(path)], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "open"
        refused = _attempt(lambda: SqliteStore(path))
        assert isinstance(refused, StoreInUse) and f"pid {proc.pid} " in str(refused)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
    assert _attempt(lambda: SqliteStore(path)) is None


def _action(seq: int = 1):
    from engine_service.store import ActionRecord
    return ActionRecord(seq, 0, "pass")


# ---- the SQLite lock file itself (FileOwnership) -----------------------------------------------

def _fds_on(lock_path: str) -> int:
    """This process's descriptors open on ``lock_path`` (or on a file deleted or replaced
    there): only those, so that a descriptor another thread opens meanwhile counts for none."""
    count = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            count += os.readlink(f"/proc/self/fd/{fd}").startswith(lock_path)
        except OSError:  # closed meanwhile
            pass
    return count


def test_a_refusal_names_the_holders_start_time_and_keeps_no_descriptor(tmp_path, monkeypatch):
    """The refusal quotes the holder's pid, host and start time (docs/operations.md "Why one
    replica"); each attempt refused closes its file: a store waiting out its predecessor
    tries a hundred times a second, and kept one descriptor per attempt."""
    path = str(tmp_path / "db.sqlite3")
    holder = FileOwnership(path)
    holder.acquire()
    try:
        clock = _Clock()
        monkeypatch.setattr(ownership, "time", clock)
        with pytest.raises(StoreInUse) as refused:
            FileOwnership(path).acquire(wait_s=0.1)
        assert len(clock.pauses) >= 5 and _fds_on(f"{path}.lock") == 1  # the holder's
    finally:
        holder.release()
    assert re.search(rf"\(pid {os.getpid()} on {re.escape(socket.gethostname())} since "
                     r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00\)", str(refused.value)), refused.value


def test_a_file_system_without_locks_is_said_at_once_not_taken_for_another_engine(tmp_path, monkeypatch):
    """A lock attempt that fails for another reason than a holder (ENOLCK: NFS without its lock
    service) is a StoreError at once naming the lock file and the reason, its descriptor closed:
    it was taken for a held lock, waited out --db-lock-wait-s and then said "in use by another
    engine process", which sent the operator looking for an engine that was not there."""

    path = str(tmp_path / "db.sqlite3")

    def no_locks(fd, operation):
        raise OSError(errno.ENOLCK, os.strerror(errno.ENOLCK))

    clock = _Clock()
    monkeypatch.setattr(ownership, "time", clock)
    monkeypatch.setattr(ownership.fcntl, "flock", no_locks)
    with pytest.raises(StoreError) as refused:
        FileOwnership(path).acquire(wait_s=30)
    assert not isinstance(refused.value, StoreInUse) and clock.pauses == []
    assert str(refused.value) == f"cannot lock the lock file {path}.lock: {os.strerror(errno.ENOLCK)}"
    assert _fds_on(f"{path}.lock") == 0


def test_a_holder_is_named_over_a_longer_description_left_in_the_lock_file(tmp_path):
    """The lock file stays after its holder ends (an engine never deletes it); the next
    holder's description replaces what it held, however long, not only its start."""
    path = str(tmp_path / "db.sqlite3")
    with open(f"{path}.lock", "w") as stale:
        stale.write(json.dumps({"pid": 1, "host": "h" * 300, "since": "then"}))
    holder = FileOwnership(path)
    holder.acquire()
    try:
        with pytest.raises(StoreInUse) as refused:
            FileOwnership(path).acquire()
    finally:
        holder.release()
    assert f"(pid {os.getpid()} on {socket.gethostname()} since " in str(refused.value)


@pytest.mark.parametrize("change", ["replaced", "deleted"])
def test_a_lock_file_replaced_or_deleted_before_it_is_locked_is_not_the_one_held(tmp_path, monkeypatch, change):
    """Between the open and the lock another process may replace or delete the lock file:
    the lock then taken is on a file no other engine can find, so the store takes it again
    on the file now at the path (FileOwnership._acquire), closing the one it had opened."""
    path = str(tmp_path / "db.sqlite3")
    lock_path = f"{path}.lock"
    calls = []

    def try_lock(fd, real=FileOwnership._try_lock):
        if not calls:
            if change == "replaced":
                with open(f"{lock_path}.new", "w"):
                    pass
                os.replace(f"{lock_path}.new", lock_path)
            else:
                os.unlink(lock_path)
        calls.append(fd)
        return real(fd)

    first = FileOwnership(path)
    with monkeypatch.context() as patch:
        patch.setattr(FileOwnership, "_try_lock", staticmethod(try_lock))
        first.acquire()
    try:
        assert len(calls) == 2
        with pytest.raises(StoreInUse):
            FileOwnership(path).acquire()
        assert _fds_on(lock_path) == 1
    finally:
        first.release()
    assert _fds_on(lock_path) == 0


def test_taking_a_held_lock_again_or_letting_go_twice_changes_nothing(tmp_path):
    path = str(tmp_path / "db.sqlite3")
    lock = FileOwnership(path)
    lock.acquire()
    lock.acquire()  # already held: not refused by itself
    assert lock.held and _fds_on(f"{path}.lock") == 1
    lock.release()
    assert not lock.held and _fds_on(f"{path}.lock") == 0
    lock.release()  # nothing more to close (closing again could close another file's descriptor)
    other = FileOwnership(path)
    other.acquire()  # let go: another takes it
    other.release()


def test_a_refusal_through_a_symbolic_link_names_the_lock_file_that_is_held(tmp_path):
    """A store on a link takes two lock files (beside the link, beside the file it names):
    refused for the second, it names that one, the file an operator looks at (or deletes
    once no engine runs, docs/operations.md), not the one beside the link it had taken."""
    real, link = tmp_path / "db.sqlite3", tmp_path / "link.sqlite3"
    link.symlink_to(real)
    holder = FileOwnership(str(real))
    holder.acquire()
    try:
        with pytest.raises(StoreInUse) as refused:
            FileOwnership(str(link)).acquire()
    finally:
        holder.release()
    assert str(refused.value).endswith(f"(lock file {real}.lock)"), refused.value


def test_a_wait_interrupted_lets_go_of_the_lock_file_it_had_taken(tmp_path, monkeypatch):
    """A store on a link holds the lock beside the link while it waits for the one beside
    the file it names; a wait ended by anything (Ctrl-C included: a BaseException, not an
    Exception) lets go of the first, which an engine of an earlier release on the link, or
    this one started again, would otherwise find held by a process that holds nothing."""
    real, link = tmp_path / "db.sqlite3", tmp_path / "link.sqlite3"
    link.symlink_to(real)

    class _Interrupted(_Clock):
        def sleep(self, seconds: float) -> None:
            raise KeyboardInterrupt

    holder = FileOwnership(str(real))
    holder.acquire()
    try:
        monkeypatch.setattr(ownership, "time", _Interrupted())
        with pytest.raises(KeyboardInterrupt):
            FileOwnership(str(link)).acquire(wait_s=5)
    finally:
        holder.release()
    fd = os.open(f"{link}.lock", os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # free: BlockingIOError if still held
    finally:
        os.close(fd)


def _refusal_of_a_lock_file_held_with(tmp_path, content: bytes) -> str:
    """The StoreInUse message for a database whose lock file another process holds, with
    ``content`` as the holder's description."""
    path = str(tmp_path / "db.sqlite3")
    fd = os.open(f"{path}.lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        os.write(fd, content)
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        with pytest.raises(StoreInUse) as refused:
            FileOwnership(path).acquire()
    finally:
        os.close(fd)
    return str(refused.value)


@pytest.mark.parametrize("content", [b"not json", b"[1, 2]", b"{}"])
def test_a_holder_whose_lock_file_says_nothing_readable_is_another_engine_process(tmp_path, content):
    """The description is a courtesy (ownership._record_holder): a held lock file without
    one (not JSON, not an object, nothing in it) still refuses the store, as held by
    "another engine process", not with a traceback from reading it."""
    refusal = _refusal_of_a_lock_file_held_with(tmp_path, content)
    assert "is in use by another engine process; one engine per database" in refusal


def test_a_holder_whose_description_lacks_a_field_is_named_with_a_question_mark(tmp_path):
    """A description missing a field (written by another release, or cut short) still names
    what it has; what it lacks reads "?", never a blank the operator takes for a value."""
    refusal = _refusal_of_a_lock_file_held_with(tmp_path, json.dumps({"host": "box"}).encode())
    assert "in use by another engine process (pid ? on box since ?);" in refusal


def test_no_wait_asked_for_is_refused_without_a_single_poll(tmp_path, monkeypatch):
    """``wait_s`` 0 (the default, ``--db-lock-wait-s`` unset) refuses at the first attempt,
    even on a clock that has not moved since the deadline was set: no pause, no
    ``db_lock_waiting`` line (a negative wait is no wait either)."""
    path = str(tmp_path / "db.sqlite3")
    holder = FileOwnership(path)
    holder.acquire()
    try:
        for wait_s in (0.0, -5.0):
            clock = _Clock()
            monkeypatch.setattr(ownership, "time", clock)
            with structlog.testing.capture_logs() as logs, pytest.raises(StoreInUse):
                FileOwnership(path).acquire(wait_s=wait_s)
            assert clock.pauses == [] and logs == [], (wait_s, clock.pauses, logs)
    finally:
        holder.release()


def test_a_waiting_store_says_once_how_long_it_will_wait_to_a_tenth_of_a_second(tmp_path, monkeypatch):
    """The one ``db_lock_waiting`` line of a wait gives the time left to a tenth of a second
    (an operator reads "0.3", not "0", for a wait of a third of a second)."""
    path = str(tmp_path / "db.sqlite3")
    holder = FileOwnership(path)
    holder.acquire()
    try:
        clock = _Clock()
        monkeypatch.setattr(ownership, "time", clock)
        with structlog.testing.capture_logs() as logs, pytest.raises(StoreInUse):
            FileOwnership(path).acquire(wait_s=0.34)
    finally:
        holder.release()
    assert len(clock.pauses) >= 30
    assert [(line["event"], line["wait_s"]) for line in logs] == [("db_lock_waiting", 0.3)], logs


def test_a_lock_file_that_cannot_be_opened_is_said_at_once_not_taken_for_another_engine(tmp_path):
    """A lock file the engine may not create (its directory missing or read-only) is a
    StoreError naming the file and the reason, not "in use by another engine process"."""
    path = str(tmp_path / "missing" / "db.sqlite3")
    with pytest.raises(StoreError) as refused:
        FileOwnership(path).acquire(wait_s=30)
    assert not isinstance(refused.value, StoreInUse)
    assert str(refused.value) == f"cannot open the lock file {path}.lock: {os.strerror(errno.ENOENT)}"


def test_the_lock_file_holds_one_json_line_naming_the_holder(tmp_path):
    """What the holder writes in its lock file (read by the next engine's refusal, and by an
    operator): one line of JSON with its pid, host and start time."""
    path = str(tmp_path / "db.sqlite3")
    holder = FileOwnership(path)
    holder.acquire()
    try:
        with open(f"{path}.lock", "rb") as fh:
            content = fh.read()
    finally:
        holder.release()
    assert content.endswith(b"\n") and content.count(b"\n") == 1, content
    info = json.loads(content)
    assert (info["pid"], info["host"]) == (os.getpid(), socket.gethostname())


def test_a_holder_that_cannot_write_its_description_still_holds_the_lock(tmp_path, monkeypatch):
    """The description is a courtesy (a full disk, ENOSPC, must not stop the engine): the lock
    is taken all the same, and the next engine is refused as by "another engine process"."""
    path = str(tmp_path / "db.sqlite3")

    def no_space(fd, length):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    holder = FileOwnership(path)
    with monkeypatch.context() as patch:
        patch.setattr(ownership.os, "ftruncate", no_space)
        holder.acquire()
    try:
        assert holder.held
        with pytest.raises(StoreInUse) as refused:
            FileOwnership(path).acquire()
    finally:
        holder.release()
    assert "is in use by another engine process; one engine per database" in str(refused.value)


def test_a_store_on_a_link_waits_lock_wait_s_in_all_for_its_two_lock_files(tmp_path, monkeypatch):
    """``wait_s`` bounds the whole wait, not each lock file's: a store on a link that waited
    for the lock beside the link (an engine of an earlier release held it) waits for the one
    beside the file only what is left, and is refused ``wait_s`` after it began."""
    real, link = tmp_path / "db.sqlite3", tmp_path / "link.sqlite3"
    link.symlink_to(real)
    old = os.open(f"{link}.lock", os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(old, fcntl.LOCK_EX | fcntl.LOCK_NB)
    holder = FileOwnership(str(real))
    holder.acquire()

    class Releases(_Clock):  # the old engine lets go of the link's lock 0.3 s into the wait
        def sleep(self, seconds: float) -> None:
            super().sleep(seconds)
            if self.now >= 1000.3 and old_fd:
                os.close(old_fd.pop())

    old_fd = [old]
    clock = Releases()
    try:
        monkeypatch.setattr(ownership, "time", clock)
        with pytest.raises(StoreInUse) as refused:
            FileOwnership(str(link)).acquire(wait_s=0.5)
    finally:
        holder.release()
        for fd in old_fd:
            os.close(fd)
    assert old_fd == [] and str(refused.value).endswith(f"(lock file {real}.lock)")
    assert 0.5 <= clock.now - 1000.0 < 0.5 + ownership.POLL_S + 1e-9, clock.now


def test_taking_a_held_lock_again_makes_no_attempt_and_keeps_the_lock_files_held(tmp_path, monkeypatch):
    """``acquire`` on a lock already held returns at once: it does not let go and take the
    lock again, which left a moment for another engine to take it."""
    path = str(tmp_path / "db.sqlite3")
    lock = FileOwnership(path)
    lock.acquire()
    attempts = []
    try:
        with monkeypatch.context() as patch:
            patch.setattr(FileOwnership, "_open", staticmethod(lambda p: attempts.append(p) or os.open(p, os.O_RDWR)))
            lock.acquire()
        assert attempts == [] and lock.held
    finally:
        lock.release()


# ---- PostgreSQL ----------------------------------------------------------------------------

def _lock_backend(pg_database, schema: str) -> int | None:
    """The server pid of the session holding ``schema``'s ownership lock: the key
    docs/operations.md gives operators, ``(0x43474532, hashtext(current_schema()))``, spelt
    out here (not the module's constant) so that the lock an engine takes is the one documented."""
    assert OWNER_LOCK_CLASS == 0x43474532  # "CGE2"
    rows = pg_database.execute(
        "SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND granted AND classid = %s::oid "
        "AND objid = hashtext(current_schema())::oid AND objsubid = 2", (0x43474532,), schema=schema)
    return rows[0][0] if rows else None


def _terminate(pg_database, pid: int) -> None:
    pg_database.execute("SELECT pg_terminate_backend(%s)", (pid,))


def take_over(pg_database, schema: str):
    """Another engine takes ``schema``'s lock the moment its holder's session ends: a session
    queued on the lock (``pg_advisory_lock`` waits in line, ahead of any later try) before
    the holder's session is terminated. Returns that session's connection (close it to let
    go). Blocking: call it off the event loop."""
    holder = _lock_backend(pg_database, schema)
    assert holder is not None
    conn = connect(url_with(pg_database.url, schema=schema, application_name="the-other-engine"))
    waiter = threading.Thread(target=conn.execute, args=(
        "SELECT pg_advisory_lock(%s, hashtext(current_schema()))", (OWNER_LOCK_CLASS,)))
    waiter.start()
    deadline = time.monotonic() + 10
    while not pg_database.execute("SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND NOT granted "
                                  "AND classid = %s::oid", (OWNER_LOCK_CLASS,), schema=schema):
        assert time.monotonic() < deadline, "the waiter did not queue"
        time.sleep(0.01)
    _terminate(pg_database, holder)
    waiter.join(10)
    assert not waiter.is_alive() and _lock_backend(pg_database, schema) not in (None, holder)
    return conn


def test_a_second_store_on_a_postgres_schema_is_refused_naming_the_holder(pg_database, pg_schema):
    schema, url = pg_schema
    other_schema, other_url = pg_database.schema()

    async def go():
        first = PostgresStore(url)
        await first.open()
        try:
            with structlog.testing.capture_logs() as logs, pytest.raises(StoreInUse) as refused:
                await PostgresStore(url).open()
            # no wait asked for: refused at once, the waiting path not taken
            assert [line for line in logs if line["event"] == "db_lock_waiting"] == []
            neighbour = PostgresStore(other_url)  # another schema of the same database: its own
            await neighbour.open()
            await neighbour.create_match(record())
            await neighbour.close()
            await first.create_match(record())  # the holder goes on undisturbed
        finally:
            await first.close()
        again = PostgresStore(url)
        await again.open()
        await again.close()
        return str(refused.value)

    message = run(go())
    assert f"cardgames-engine owner pid {os.getpid()} on " in message
    assert "one engine per database" in message
    assert _lock_backend(pg_database, schema) is None  # closed: released
    assert _lock_backend(pg_database, other_schema) is None


def test_a_closed_postgres_store_has_let_go_when_close_returns(pg_database, pg_schema, monkeypatch):
    """close() unlocks before it ends the lock session: the server releases a closing
    session's locks only once its backend has exited, a moment after the client has gone, and
    a successor opening the schema at once (no lock wait: a restart, a reopen) was refused
    now and then under load. Here the sessions linger a second after close() (their closing
    deferred), and every successor still opens at once."""
    schema, url = pg_schema
    lingering: list = []

    async def close_later(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            lingering.append(asyncio.get_running_loop().call_later(
                1.0, lambda: lingering.append(asyncio.ensure_future(conn.close()))))

    monkeypatch.setattr(pg_ownership.AdvisoryOwnership, "_close", close_later)

    async def go():
        left = []
        for _ in range(5):
            store = PostgresStore(url)  # lock_wait_s 0: refused at once if still held
            await store.open()
            await store.close()
            left.append(_lock_backend(pg_database, schema))
        await asyncio.sleep(1.2)  # the lingering sessions end
        await asyncio.gather(*(t for t in lingering if isinstance(t, asyncio.Future)))
        return left

    assert run(go()) == [None] * 5


def test_a_closed_postgres_store_stops_watching_and_never_takes_its_lock_again(pg_database, pg_schema):
    """close() stops the watchdog first: left running, it found the lock session gone at its
    next check and took the lock again, holding the schema for a store nobody uses."""
    schema, url = pg_schema

    async def go():
        st = PostgresStore(url, ownership_check_s=0.02)
        await st.open()
        watchdog, session = st._owner._watchdog, st._owner._conn
        assert watchdog.get_name() == "store-ownership"  # named in task dumps
        await st.close()
        await asyncio.sleep(0.1)  # five checks' time
        return watchdog.done(), session.closed, _lock_backend(pg_database, schema)

    assert run(go()) == (True, True, None)


def test_a_check_finds_the_lock_gone_from_a_session_still_connected(pg_url):
    """The check asks whether the lock session holds the lock, not whether it answers: a
    session that no longer holds it (here unlocked on it) is not held, though connected, nor
    once another session (another engine) holds it: its own session's, not anyone's."""
    async def go():
        st = PostgresStore(pg_url, ownership_check_s=60)
        await st.open()
        try:
            owner = st._owner
            held = await owner._still_held()
            await owner._conn.execute(pg_ownership._UNLOCK, {"cls": OWNER_LOCK_CLASS})
            unlocked = await owner._still_held()
            async with await psycopg.AsyncConnection.connect(pg_url, autocommit=True) as other:
                taken = await (await other.execute(pg_ownership._TRY_LOCK, {"cls": OWNER_LOCK_CLASS})).fetchone()
                return held, unlocked, taken[0], await owner._still_held()
        finally:
            await st.close()

    assert run(go()) == (True, False, True, False)


def _recording_connect(monkeypatch) -> list[psycopg.AsyncConnection]:
    """The connections the ownership opens from now on (to tell that it closed them)."""
    opened: list[psycopg.AsyncConnection] = []
    connect = psycopg.AsyncConnection.connect

    async def recorded(*args, **kwargs):
        opened.append(conn := await connect(*args, **kwargs))
        return conn

    monkeypatch.setattr(pg_ownership.psycopg.AsyncConnection, "connect", recorded)
    return opened


def test_a_lock_session_the_server_refuses_is_reported_in_the_servers_words(pg_url, monkeypatch):
    """An attempt to take the lock that the server refuses (here its settings statement) is a
    StoreError quoting the server's message alone (not the statement it quotes back), not a
    server without an answer; the session is closed, nothing held."""
    monkeypatch.setattr(pg_ownership, "_SERVER_SETTINGS", "SELEC 1")
    opened = _recording_connect(monkeypatch)

    async def go():
        owner = pg_ownership.AdvisoryOwnership(pg_url, "the database")
        with pytest.raises(StoreError) as refused:
            await owner._try_take()
        assert owner._conn is None and not owner.held
        assert [conn.closed for conn in opened] == [True]
        await owner.release()  # never acquired (nor watched): nothing to let go
        return str(refused.value)

    assert run(go()) == 'cannot take the lock of the database: syntax error at or near "SELEC"'


def test_an_attempt_cancelled_while_it_waits_for_the_server_closes_its_session(pg_url, monkeypatch):
    """The watchdog stopped (release()) during an attempt to take the lock: the attempt's new
    session is closed, never left open (the lock may be granted to it), and the cancellation
    goes on."""
    monkeypatch.setattr(pg_ownership, "_SERVER_SETTINGS", "SELECT pg_sleep(10), now()")
    opened = _recording_connect(monkeypatch)

    async def go():
        owner = pg_ownership.AdvisoryOwnership(pg_url, "the database")
        attempt = asyncio.create_task(owner._try_take())
        while not opened:
            await asyncio.sleep(0.01)
        await asyncio.sleep(0.1)  # waiting for the server's answer
        attempt.cancel()
        with pytest.raises(asyncio.CancelledError):
            await attempt
        return owner._conn, [conn.closed for conn in opened]

    assert run(go()) == (None, [True])


def test_a_lock_session_is_remembered_by_its_pid_and_start(pg_url):
    """The store knows each lock session it opened by its server pid and start (a pid is
    reused by later sessions), and so tells its own from a later session with that pid."""
    async def go():
        st = PostgresStore(pg_url, ownership_check_s=60)
        await st.open()
        try:
            owner = st._owner
            holder = await owner._holder_row()
            return owner._pid, dict(owner._sessions), holder, owner._own(holder)
        finally:
            await st.close()

    pid, sessions, holder, own = run(go())
    assert holder[0] == pid and sessions == {pid: holder[3]} and holder[3] is not None and own
    assert holder[4] is not None  # idle between checks, never in a transaction: its silence is known


def test_an_old_session_is_ended_by_its_pid_and_start_only(pg_url):
    """_END_OLD ends a session by its server pid and its start both, never another session
    that has the same pid later (its start differs), and ends it (pg_terminate_backend, not
    a cancel of its query: the lock goes only with the session)."""
    async def go():
        owner = pg_ownership.AdvisoryOwnership(pg_url, "the database")
        async with await psycopg.AsyncConnection.connect(pg_url, autocommit=True) as old:
            pid, start = await (await old.execute(
                "SELECT pid, backend_start FROM pg_stat_activity WHERE pid = pg_backend_pid()")).fetchone()
            reused = await owner._ask(pg_ownership._END_OLD, {"pid": pid, "start": start - timedelta(seconds=1)})
            alive = (await (await old.execute("SELECT 1")).fetchone())[0]
            ended = await owner._ask(pg_ownership._END_OLD, {"pid": pid, "start": start})
            with pytest.raises(psycopg.OperationalError):
                await old.execute("SELECT 1")
        return reused, alive, ended

    assert run(go()) == (None, 1, (True,))


def test_the_holder_asked_about_is_that_of_this_schema_of_this_database(pg_database, pg_schema):
    """Who holds the lock (:data:`_HOLDER`): the holder of this schema's lock in this database
    only (one engine per schema: docs/operations.md), not an engine on another schema of the
    database nor on a schema of the same name in another database; and how long it has sent
    no query (the refusal's "no query for N s"), not how long it has been connected."""
    schema, url = pg_schema
    _, other_schema_url = pg_database.schema()
    other_database = TestDatabase()

    async def take(conninfo: str) -> psycopg.AsyncConnection:
        conn = await psycopg.AsyncConnection.connect(conninfo, autocommit=True)
        await conn.execute(pg_ownership._TRY_LOCK, {"cls": OWNER_LOCK_CLASS})
        return conn

    async def go():
        other_database.execute(f'CREATE SCHEMA "{schema}"')
        others = [await take(other_schema_url), await take(url_with(other_database.url, schema=schema))]
        try:
            owner = pg_ownership.AdvisoryOwnership(url, "the database")
            nobody = await owner._holder_row()
            async with await psycopg.AsyncConnection.connect(url, autocommit=True) as holder:
                await holder.execute("SELECT pg_sleep(0.5)")  # connected half a second before its last query
                await holder.execute(pg_ownership._TRY_LOCK, {"cls": OWNER_LOCK_CLASS})
                pid = holder.info.backend_pid
                row = await owner._holder_row()
            return nobody, row[0] == pid, row[4]
        finally:
            for other in others:
                await other.close()

    try:
        nobody, named, idle_s = run(go())
    finally:
        other_database.drop()
    assert nobody is None and named and 0 <= idle_s < 0.45, (nobody, named, idle_s)


def test_a_holder_gone_from_the_activity_view_is_nobody_yet_not_a_holder_of_unknown_name(pg_url):
    """pg_locks and pg_stat_activity are two snapshots: a holder that ended between them (an
    old session of the store's own, ended) was a row with its pid and nothing else, which
    ``_own`` could not know as the store's and the watchdog took for another engine's
    (``db_ownership_lost``, exit 1), where a lock "held by nobody by the time the holder is
    asked (the old session ended meanwhile) is tried again, never taken for lost" (the
    module's docstring). Staged with a transaction's activity snapshot (taken at its first
    read, kept to its end) that predates the holder: no row, as for nobody; once the snapshot
    is new, the holder is named."""
    async def go():
        async with await psycopg.AsyncConnection.connect(pg_url, autocommit=True) as asker:
            async with asker.transaction():
                await asker.execute("SELECT count(*) FROM pg_stat_activity")
                async with await psycopg.AsyncConnection.connect(pg_url, autocommit=True) as holder:
                    await holder.execute(pg_ownership._TRY_LOCK, {"cls": OWNER_LOCK_CLASS})
                    before = await (await asker.execute(pg_ownership._HOLDER, {"cls": OWNER_LOCK_CLASS})).fetchall()
            after = await (await asker.execute(pg_ownership._HOLDER, {"cls": OWNER_LOCK_CLASS})).fetchall()
            async with await psycopg.AsyncConnection.connect(pg_url, autocommit=True) as holder:
                await holder.execute(pg_ownership._TRY_LOCK, {"cls": OWNER_LOCK_CLASS})
                named = await (await asker.execute(pg_ownership._HOLDER, {"cls": OWNER_LOCK_CLASS})).fetchall()
                return before, after, [row[0] for row in named] == [holder.info.backend_pid]

    assert run(go()) == ([], [], True)


def test_an_attempt_refused_the_lock_closes_its_session_and_forgets_it(pg_url, monkeypatch):
    """An attempt that finds the lock held (another engine's) closes its session at once and
    does not remember it as one of the store's own: it answered, so it cannot hold the lock
    (a store waiting ``wait_s`` makes one attempt every POLL_S). The question who holds it
    closes its connection too."""
    async def go():
        holder = PostgresStore(pg_url, ownership_check_s=60)
        await holder.open()
        try:
            owner = pg_ownership.AdvisoryOwnership(pg_url, "the database")
            with monkeypatch.context() as patch:
                opened = _recording_connect(patch)
                took = await owner._try_take()
                row = await owner._holder_row()
            return (took, owner._conn, owner._sessions, [conn.closed for conn in opened],
                    row[0] == holder._owner._pid)
        finally:
            await holder.close()

    assert run(go()) == (False, None, {}, [True, True], True)


def test_an_attempt_to_take_the_lock_without_an_answer_in_time_is_an_unreachable_server(pg_url, monkeypatch):
    """The attempt's bound running out (here at once) is a server that gave no answer, not a
    refusal; its session stays known to the store (the lock may have been granted to it, the
    answer lost)."""
    monkeypatch.setattr(pg_ownership, "Bound", lambda seconds, real=pg_ownership.Bound: real(0.0))

    async def go():
        owner = pg_ownership.AdvisoryOwnership(pg_url, "the database", timeout_s=3)
        with pytest.raises(StoreError) as refused:
            await owner._try_take()
        return str(refused.value), owner._conn, len(owner._sessions)

    assert run(go()) == ("the database gave no answer within 3 s", None, 1)


class _ClockAhead(_Pauses):
    """A module's ``asyncio`` as the module sees it, but for the running loop's clock, which
    runs ``ahead[0]`` seconds ahead of the real one."""

    def get_running_loop(self):
        loop, ahead = self._real.get_running_loop(), self._pauses

        class Clocked:
            def time(self) -> float:
                return loop.time() + ahead[0]

            def __getattr__(self, name: str):
                return getattr(loop, name)

        return Clocked()


def test_a_connection_made_as_the_bound_ran_out_leaves_no_time_for_its_statements(pg_url, monkeypatch):
    """timeout_s bounds an attempt to take the lock, and a question to the server, connection
    included: a connection made only as the bound ran out (here the loop's clock moved on 4 s,
    past the bound of 3 s, while it was made) leaves its statements no time (their bound: none
    left, not a second more). The attempt is a server without an answer (its session still
    known: the lock may be granted to it)."""
    ahead = [0.0]
    bounds: list[float] = []
    connect = psycopg.AsyncConnection.connect

    async def slow(*args, **kwargs):
        conn = await connect(*args, **kwargs)
        ahead[0] += 4.0
        return conn

    class Recorded(pg_ownership.Bound):
        def __init__(self, seconds: float) -> None:
            bounds.append(seconds)
            super().__init__(seconds)

    monkeypatch.setattr(pg_ownership.psycopg.AsyncConnection, "connect", slow)
    monkeypatch.setattr(pg_ownership, "asyncio", _ClockAhead(asyncio, ahead))
    monkeypatch.setattr(pg_ownership, "Bound", Recorded)

    async def go():
        owner = pg_ownership.AdvisoryOwnership(pg_url, "the database", timeout_s=3)
        with pytest.raises(StoreError) as refused:
            await owner._try_take()
        await owner._holder_row()  # its answer may come before the cut: only its bound is told
        return str(refused.value), len(owner._sessions), [seconds <= 0 for seconds in bounds]

    assert run(go()) == ("the database gave no answer within 3 s", 1, [True, True])


class _LostAtOnce(pg_ownership.Bound):
    """A connection lost under the call (severed at once), its bound never run out."""

    @contextlib.contextmanager
    def on(self, conn, seconds=None):
        pg_ownership.sever(conn)
        yield


def test_a_lock_session_lost_while_the_lock_is_taken_is_reported_as_lost(pg_url, monkeypatch):
    """A lock session lost during the attempt (no answer from a server that said nothing:
    psycopg's own error) is a StoreError saying so, not "None", and not a server without an
    answer within the bound."""
    monkeypatch.setattr(pg_ownership, "Bound", _LostAtOnce)

    async def go():
        owner = pg_ownership.AdvisoryOwnership(pg_url, "the database")
        with pytest.raises(StoreError) as refused:
            await owner._try_take()
        return str(refused.value)

    message = run(go())
    assert message.startswith("cannot take the lock of the database: ") and "None" not in message, message
    assert "server closed the connection unexpectedly" in message, message  # libpq's words


def test_a_waiting_postgres_store_opens_once_the_holder_lets_go(pg_url, monkeypatch):
    waited, attempts, pauses = _waited_for_the_holder(lambda **kw: PostgresStore(pg_url, **kw), 0.5, monkeypatch)
    assert waited >= 0.4
    _took_the_lock_at_once(attempts, pauses, pg_ownership.POLL_S)


class _LoopClock:
    """pg_ownership's ``asyncio``, but for the running loop's clock, which moves only when the
    module sleeps, by the pause asked for and without pausing (as :class:`_Clock`)."""

    def __init__(self) -> None:
        self.now = 1000.0
        self.pauses: list[float] = []

    def __getattr__(self, name: str):
        return getattr(asyncio, name)

    def get_running_loop(self):
        loop, clock = asyncio.get_running_loop(), self

        class Clocked:
            def time(self) -> float:
                return clock.now

            def __getattr__(self, name: str):
                return getattr(loop, name)

        return Clocked()

    def sleep(self, seconds: float):
        self.pauses.append(seconds)
        self.now += seconds
        return asyncio.sleep(0)


def test_a_postgres_lock_wait_ends_at_wait_s_and_says_the_time_left_to_a_tenth(pg_url, monkeypatch):
    """As on SQLite: ``wait_s`` 0 refuses at the first attempt, even on a clock that has not
    moved since the deadline was set (no pause, no ``db_lock_waiting`` line); a wait is said
    once, the time left to a tenth of a second, tried every POLL_S and refused once it has
    run out, not a poll later."""
    async def go():
        holder = PostgresStore(pg_url, ownership_check_s=60)
        await holder.open()
        try:
            seen = []
            for wait_s in (0.0, 0.34):
                clock = _LoopClock()
                with monkeypatch.context() as patch, structlog.testing.capture_logs() as logs:
                    patch.setattr(pg_ownership, "asyncio", clock)
                    with pytest.raises(StoreInUse):
                        await pg_ownership.AdvisoryOwnership(pg_url, "the database", wait_s=wait_s).acquire()
                seen.append((clock.pauses, [(line["event"], line["wait_s"]) for line in logs]))
            return seen
        finally:
            await holder.close()

    polls = [pg_ownership.POLL_S] * math.ceil(0.34 / pg_ownership.POLL_S)
    assert run(go()) == [([], []), (polls, [("db_lock_waiting", 0.3)])]


def test_a_crashed_holders_session_releases_the_lock(pg_url):
    async def go():
        first = PostgresStore(pg_url)
        await first.open()
        crash(first)  # the process dies: the server ends its session
        second = PostgresStore(pg_url, lock_wait_s=5)
        await second.open()
        await second.close()
    run(go())


def test_a_lost_lock_session_is_replaced_and_writes_go_on(pg_database, pg_schema):
    """The server ended the lock session (a restart, a network failure, an operator): writes
    are refused until the watchdog has the lock again, then go on; nobody is told to stop."""
    schema, url = pg_schema
    told: list[str] = []

    async def go():
        st = PostgresStore(url, ownership_check_s=0.1)
        st.on_ownership_lost = told.append
        await st.open()
        try:
            await st.create_match(record())
            before = _lock_backend(pg_database, schema)
            _terminate(pg_database, before)
            deadline = time.monotonic() + 10
            while (after := _lock_backend(pg_database, schema)) in (None, before):
                assert time.monotonic() < deadline, "the lock was not taken again"
                await asyncio.sleep(0.05)
            while not st._owner.held:
                await asyncio.sleep(0.05)
            await st.append_action("m1", _action())
            return before, after
        finally:
            await st.close()

    before, after = run(go())
    assert before != after and told == []


def test_a_lock_taken_by_another_engine_meanwhile_stops_this_one(pg_database, pg_schema):
    """The first engine is told, and its writes are refused (OwnershipLost), each counted in
    cardgames_store_errors_total (which alerts watch), none as a write's latency."""
    schema, url = pg_schema
    told: list[str] = []
    metrics = Metrics()

    async def go():
        first = PostgresStore(url, metrics, ownership_check_s=0.1)
        first.on_ownership_lost = told.append
        await first.open()
        await first.create_match(record())
        other = await asyncio.to_thread(take_over, pg_database, schema)
        try:
            deadline = time.monotonic() + 10
            while not told:
                assert time.monotonic() < deadline, "the first store was not told"
                await asyncio.sleep(0.05)
            with pytest.raises(OwnershipLost):
                await first.append_action("m1", _action())
            await first.close()
            assert _lock_backend(pg_database, schema) is not None  # the other engine's, still
        finally:
            await first.close()
            other.close()

    run(go())
    assert len(told) == 1 and "this engine stops" in told[0] and "(the-other-engine; server pid " in told[0]
    assert metrics.value("cardgames_store_errors_total", {"operation": "append_action"}) == 1
    assert metrics.value("cardgames_store_write_seconds_count", {"operation": "append_action"}) == 0


# ---- PostgreSQL: what the lock's holder is told, without a server ---------------------------

def _advisory(**kw) -> pg_ownership.AdvisoryOwnership:
    return pg_ownership.AdvisoryOwnership("dbname=cardgames", "the database", **kw)


def test_a_refusal_names_what_the_role_may_see_of_the_holder():
    """The holder as pg_stat_activity shows it: each part said only when known (an idle time
    of 0 s is known), and a holder nobody could describe is still "another engine process"."""
    from datetime import datetime, timezone
    describe = pg_ownership.AdvisoryOwnership._describe
    started = datetime(2026, 1, 2, 3, 4, 5, 678000, tzinfo=timezone.utc)
    assert describe(None) == describe(()) == "another engine process"
    assert describe((123, "the-other-engine", "10.0.0.7", started, 7.4)) == (
        "another engine process (the-other-engine; server pid 123, from 10.0.0.7, "
        "since 2026-01-02T03:04:05+00:00, no query for 7 s)")
    assert describe((123, "", None, None, 0.0)) == (
        "another engine process (no application_name; server pid 123, no query for 0 s)")
    assert describe((123, None, None, None, None)) == "another engine process (no application_name; server pid 123)"


def test_a_holder_silent_for_three_checks_is_refused_with_how_to_end_its_session():
    """Below three checks' time without a query (or that time unknown) the holder is taken
    for a running engine: stop it first. From three checks on, the refusal says that its
    engine is most likely gone, when the server ends its session, and the statement that ends
    it now, for that holder's pid."""
    owner = _advisory()
    stale_s = 3 * pg_ownership.CHECK_S

    def row(idle_s):
        return (4321, "old-engine", None, None, idle_s)

    for fresh in (None, row(None), row(0.0), row(stale_s - 0.01)):
        refusal = owner._refusal(fresh)
        assert refusal.startswith("the database is in use by another engine process")
        assert refusal.endswith("; one engine per database (or schema): stop the other one first"), refusal
    for stale in (row(stale_s), row(3600.0)):
        refusal = owner._refusal(stale)
        assert "stop the other one first" not in refusal and "most likely gone" in refusal
        assert f"The server ends it {pg_ownership.SERVER_WINDOW_S} s after the last packet" in refusal
        assert refusal.endswith("runs, end it: SELECT pg_terminate_backend(4321)"), refusal
    assert f"has not checked the lock for {stale_s:.0f} s" in owner._refusal(row(stale_s))


def test_a_lock_holder_is_this_stores_own_only_by_its_pid_and_start(monkeypatch):
    """A session the store opened: its server pid, and its start when both sides know it (a
    server pid is reused by later sessions); the start unknown on either side, the
    application_name, this process's, decides."""
    monkeypatch.setattr(pg_ownership, "application_name", lambda: "this engine")
    owner = _advisory()
    owner._sessions = {1: "start 1", 2: None}
    assert owner._own((1, "this engine", None, "start 1", None))
    assert not owner._own((1, "this engine", None, "a later start", None))  # the pid reused
    assert not owner._own((3, "this engine", None, "start 1", None))  # never opened here
    assert owner._own((2, "this engine", None, "start 2", None))
    assert not owner._own((2, "another engine", None, "start 2", None))
    assert owner._own((1, "this engine", None, None, None))
    assert not owner._own((1, "another engine", None, None, None))


def test_the_lock_sessions_name_fits_the_63_bytes_of_an_application_name(monkeypatch):
    monkeypatch.setattr(pg_ownership.socket, "gethostname", lambda: "h" * 100)
    name = pg_ownership.application_name()
    assert len(name) == 63 and name.startswith(f"cardgames-engine owner pid {os.getpid()} on hhh")


def test_the_lock_connection_has_keepalives_and_its_name_unless_the_url_sets_them(monkeypatch):
    """libpq's keepalives on the lock connection, so that the engine notices a dead server:
    10 s idle, 3 probes 5 s apart, as docs/operations.md says of the lock session (and of
    the pool's connections); those the URL sets are kept (its application_name is not: the
    lock names its process)."""
    from psycopg.conninfo import conninfo_to_dict
    monkeypatch.setattr(pg_ownership, "application_name", lambda: "this engine")
    params = conninfo_to_dict(pg_ownership.AdvisoryOwnership(
        "dbname=cardgames keepalives_idle=60 application_name=mine", "the database")._conninfo)
    assert params == {"dbname": "cardgames", "keepalives": "1", "keepalives_idle": "60",
                      "keepalives_interval": "5", "keepalives_count": "3", "application_name": "this engine"}
    params = conninfo_to_dict(pg_ownership.AdvisoryOwnership("dbname=cardgames", "the database")._conninfo)
    assert params == {"dbname": "cardgames", "keepalives": "1", "keepalives_idle": "10",
                      "keepalives_interval": "5", "keepalives_count": "3", "application_name": "this engine"}


def test_a_server_that_accepts_no_connection_in_time_is_unreachable_and_says_so(monkeypatch):
    """Taking the lock, or asking who holds it, waits timeout_s at most for a connection (a
    server that accepts TCP but does not answer): the attempt is a StoreError saying so, the
    question has no answer (None)."""
    async def hang(*args, **kwargs):
        await asyncio.sleep(60)

    monkeypatch.setattr(pg_ownership.psycopg.AsyncConnection, "connect", hang)

    async def go():
        owner = _advisory(timeout_s=0.05)
        with pytest.raises(StoreError) as refused:
            await owner._try_take()
        return str(refused.value), await owner._holder_row(), owner._sessions

    assert run(go()) == ("cannot connect to the database: no answer within 0.05 s", None, {})


def test_a_server_that_refuses_connections_is_unreachable_in_libpqs_words():
    """A server that refuses the connection (down, restarting): the attempt to take the lock
    is a StoreError that says it cannot connect, quoting libpq (docs/operations.md: "...
    refused: cannot connect to ...", "Connection refused"); the question who holds it has no
    answer (None)."""
    with socket.socket() as free:  # a port nobody listens on
        free.bind(("127.0.0.1", 0))
        port = free.getsockname()[1]

    async def go():
        owner = pg_ownership.AdvisoryOwnership(f"host=127.0.0.1 port={port} dbname=cardgames", "the database")
        with pytest.raises(StoreError) as refused:
            await owner._try_take()
        return str(refused.value), await owner._holder_row(), owner._sessions

    message, row, sessions = run(go())
    assert message.startswith("cannot connect to the database: ") and "Connection refused" in message, message
    assert "\n" not in message and "\t" not in message, message  # one line: reason_of
    assert row is None and sessions == {}


def test_a_bound_cut_early_keeps_its_first_reason_and_severs_once(monkeypatch):
    """cut() severs at once, for the reason given (the call's error quotes it); a second cut,
    or the bound running out after it, neither severs again nor changes that reason."""
    severed: list[object] = []
    monkeypatch.setattr(pg_ownership, "sever", severed.append)
    conn = object()

    async def go():
        bound = pg_ownership.Bound(0.01)
        with bound.on(conn, 10.0):  # the call's own bound, not the default's
            await asyncio.sleep(0.05)
            assert not bound.fired and severed == []
            bound.cut(conn, "the check of the lock got no answer")
            bound.cut(conn, "a later reason")
        return bound

    bound = run(go())
    assert bound.fired and bound.why == "the check of the lock got no answer" and severed == [conn]


def test_a_bound_severs_a_call_still_waiting_when_it_runs_out(monkeypatch):
    severed: list[object] = []
    monkeypatch.setattr(pg_ownership, "sever", severed.append)
    conn = object()

    async def go():
        bound, left = pg_ownership.Bound(0.02), pg_ownership.Bound(0.02)
        with bound.on(conn):
            await asyncio.sleep(0.1)
        with left.on(conn):
            pass
        await asyncio.sleep(0.1)  # left before its bound: never fired
        return bound, left

    bound, left = run(go())
    assert bound.fired and bound.why is None and not left.fired and severed == [conn]


def test_a_doubt_refuses_writes_and_wakes_the_watchdog_unless_nothing_is_watched():
    """A lost connection of the store puts a held lock in doubt at once (held False, the
    watchdog woken, the refusal timed) until a check answers it; a store whose lock is not
    watched (not open) or is lost for good has nothing to doubt."""
    async def go():
        owner = _advisory()
        owner._conn = object()
        owner.doubt()  # not watched: nothing happens
        assert owner.held and owner._since is None and not owner._wake.is_set()
        owner._watchdog = object()
        owner.doubt()
        assert not owner.held and owner._since is not None and owner._wake.is_set()
        assert not owner._verdict.is_set()
        since = owner._since
        owner.doubt()  # the refusal dates from the first doubt
        assert owner._doubts == 2 and owner._since == since
        lost = _advisory()
        lost._conn, lost._watchdog, lost.lost = object(), object(), True
        lost.doubt()
        assert lost._doubts == 0 and lost._verdict.is_set() and not lost._wake.is_set()

    run(go())


def test_writes_resume_after_a_doubt_only_once_the_stores_connections_are_checked():
    """The lock confirmed after a doubt: on_restored (the pool's check) is awaited while writes
    are still refused, a failure of it does not keep them refused, and then writes resume,
    told how long they were refused; a doubt raised meanwhile keeps them refused until the
    next check."""
    async def go():
        seen: list[bool] = []

        async def restored():
            seen.append(owner.held)
            raise psycopg.OperationalError("a dead connection")  # whatever it raises

        owner = _advisory(on_restored=restored)
        owner._conn, owner._watchdog = object(), object()
        loop = asyncio.get_running_loop()
        before = loop.time()  # the owner's clock
        owner.doubt()
        await asyncio.sleep(0.05)
        with structlog.testing.capture_logs() as logs:
            refused_s = await owner._restored(owner._doubts)
        since_before = loop.time() - before
        assert seen == [False] and owner.held and owner._verdict.is_set() and owner._since is None
        assert 0.04 <= refused_s <= since_before + 0.005  # the time since the doubt (in hundredths)
        assert [(e["event"], e["error"], e["db"]) for e in logs] == [
            ("db_pool_check_failed", "a dead connection", "the database")]

        async def doubted_again():
            owner.doubt()

        owner.on_restored = doubted_again
        owner.doubt()
        assert await owner._restored(owner._doubts) is None
        assert not owner.held and not owner._verdict.is_set() and owner._since is not None
        owner.on_restored = None  # nothing to check: writes resume, nothing said
        with structlog.testing.capture_logs() as logs:
            assert await owner._restored(owner._doubts) is not None
        assert owner.held and logs == []

    run(go())


def test_a_verdict_is_waited_for_only_while_one_is_due(monkeypatch):
    timeouts: list[float] = []
    monkeypatch.setattr(pg_ownership, "asyncio", _Timeouts(asyncio, timeouts))

    async def go():
        owner = _advisory()
        none_due = owner.verdict(5.0)
        with pytest.raises(StopIteration):  # none due: at once, without waiting for anything
            none_due.send(None)
        owner._conn, owner._watchdog = object(), object()
        owner.doubt()
        started = time.monotonic()
        await owner.verdict(0.1)  # due, and none comes: the wait ends at its timeout
        waited = time.monotonic() - started
        assert timeouts == [0.1]  # its own timeout (an upper bound on the wall clock was flaky)
        asyncio.get_running_loop().call_later(0.05, owner._unreachable, "the server is down")
        with structlog.testing.capture_logs() as logs:
            await owner.verdict(5.0)  # the server found unreachable: a verdict
            owner._unreachable("still down")
        assert owner.unreachable == "still down"
        assert [(e["event"], e["log_level"], e["error"], e["db"]) for e in logs] == [
            ("db_unreachable", "error", "the server is down", "the database")]  # docs/operations.md
        return waited

    assert run(go()) >= 0.09


def test_release_returns_once_the_watchdog_has_stopped():
    """release() stops the watchdog and waits for it, also when there is no lock session to
    let go (the lock lost, being taken again): once the store is closed nothing of it runs
    on (a watchdog left running took the lock again after close)."""
    async def go():
        owner = _advisory(check_s=60.0)
        watchdog = owner._watchdog = asyncio.get_running_loop().create_task(owner._watch())
        await asyncio.sleep(0)  # it waits for its next attempt
        await owner.release()
        return watchdog.done(), watchdog.cancelled(), owner._watchdog

    assert run(go()) == (True, True, None)


def test_the_watchdog_checks_every_check_s_while_held_and_every_retry_s_otherwise(monkeypatch):
    pauses: list[float] = []
    monkeypatch.setattr(pg_ownership, "asyncio", _Timeouts(asyncio, pauses))

    async def go():
        owner = _advisory(check_s=0.02)
        owner._conn = object()
        await owner._sleep()  # held
        owner._conn = None
        await owner._sleep()  # not held: the shorter of check_s and RETRY_S
        slow = _advisory(check_s=60.0)
        slow._wake.set()  # a doubt: at once, and the next sleep waits again
        await slow._sleep()
        assert not slow._wake.is_set()
        slow._conn = object()
        slow._wake.set()
        await slow._sleep()

    run(go())
    assert pauses == [0.02, 0.02, pg_ownership.RETRY_S, 60.0]


class _Timeouts(_Pauses):
    """As :class:`_Pauses`, for the module's ``asyncio.timeout`` (the seconds asked for)."""

    def timeout(self, seconds):
        self._pauses.append(seconds)
        return self._real.timeout(seconds)


def test_an_old_session_of_the_store_holding_the_lock_is_ended_once_and_said_so(monkeypatch):
    """_end_old asks the server once per old session (by its pid and the start the store
    knows, else the holder's), and says whether it ended it; when the role may not, the
    warning says how long the server may keep it and how to end it."""
    asked: list[tuple[str, dict]] = []
    answers = iter([(True,), (False,), None])

    async def ask(sql, params):
        asked.append((sql, params))
        return next(answers)

    owner = _advisory()
    monkeypatch.setattr(owner, "_ask", ask)
    owner._sessions = {11: "start 11"}

    async def go():
        with structlog.testing.capture_logs() as logs:
            await owner._end_old((11, "this engine", None, "another start", 30.0))
            await owner._end_old((11, "this engine", None, "another start", 32.0))  # asked once
            await owner._end_old((12, "this engine", None, "start 12", 1.0))
            await owner._end_old((13, "this engine", None, "start 13", 2.0))  # no answer
        return logs

    logs = run(go())
    assert asked == [(pg_ownership._END_OLD, {"pid": 11, "start": "start 11"}),
                     (pg_ownership._END_OLD, {"pid": 12, "start": "start 12"}),
                     (pg_ownership._END_OLD, {"pid": 13, "start": "start 13"})]
    assert [(e["event"], e["server_pid"], e["ended"], e["idle_s"]) for e in logs] == [
        ("db_lock_held_by_old_session", 11, True, 30.0), ("db_lock_held_by_old_session", 12, False, 1.0),
        ("db_lock_held_by_old_session", 13, False, 2.0)]
    assert {e["log_level"] for e in logs} == {"warning"}  # docs/operations.md
    assert "action" not in logs[0] and {e["db"] for e in logs} == {"the database"}
    assert logs[1]["action"].endswith("SELECT pg_terminate_backend(12)")
    assert logs[2]["action"].endswith("SELECT pg_terminate_backend(13)")
    assert f"within {pg_ownership.SERVER_WINDOW_S} s" in logs[1]["action"]


class _Unanswered:
    """A lock session whose check gets no answer: the bound runs out at once (severing it)."""

    def __init__(self, seconds: float) -> None:
        self.seconds, self.fired, self.why = seconds, False, None

    @contextlib.contextmanager
    def on(self, conn, seconds=None):
        self.fired = True
        yield


class _SeveredConn:
    async def execute(self, *args):
        raise psycopg.OperationalError("server closed the connection unexpectedly")


def test_a_check_without_an_answer_takes_the_server_for_unreachable_at_once(monkeypatch):
    """A check cut by its bound, max(check_s, 1) s: not held, the server unreachable for that
    reason (an earlier one kept), and the store told (on_silent) to sever its waiting calls; a
    check that failed otherwise (a lost connection) says nothing of the kind."""
    monkeypatch.setattr(pg_ownership, "Bound", _Unanswered)
    silent: list[float] = []

    async def go():
        owner = _advisory(check_s=0.5, on_silent=silent.append)
        owner._conn = _SeveredConn()
        assert not await owner._still_held()
        assert owner.unreachable == owner._silence == (
            "the database gave no answer within 1 s to the check of the lock")
        owner._silence, owner.unreachable = None, "the server is down"
        owner.check_s = 2.5
        assert not await owner._still_held()
        assert owner.unreachable == "the server is down"
        assert owner._silence == "the database gave no answer within 2.5 s to the check of the lock"
        assert not await _advisory()._still_held()  # no lock session (lost): not held
        quiet = _advisory()  # no on_silent
        quiet._conn = _SeveredConn()
        assert not await quiet._still_held()
        monkeypatch.undo()
        lost = _advisory(on_silent=silent.append)
        lost._conn = _SeveredConn()
        assert not await lost._still_held()
        assert lost.unreachable is None and lost._silence is None

    run(go())
    assert silent == [1.0, 2.5]


def test_the_watchdog_keeps_the_documented_intervals(monkeypatch):
    """docs/operations.md (On PostgreSQL): the engine checks its lock every 2 s, a check without
    an answer within 2 s takes the server for unreachable, a lock not held is tried again every
    0.5 s, and an attempt to take it gives up after 10 s; the refusal of a holder says that a
    running engine checks every 2 s."""
    timeouts: list[float] = []
    monkeypatch.setattr(pg_ownership, "asyncio", _Timeouts(asyncio, timeouts))

    async def refused(*args, **kwargs):
        raise psycopg.OperationalError("Connection refused")

    monkeypatch.setattr(pg_ownership.psycopg.AsyncConnection, "connect", refused)

    async def go():
        owner = _advisory()
        owner._conn = object()
        owner._wake.set()  # at once: only the interval asked for matters
        await owner._sleep()  # held: the next check
        owner._conn = None
        owner._wake.set()
        await owner._sleep()  # not held: the next attempt
        with pytest.raises(StoreError):
            await owner._try_take()
        with monkeypatch.context() as patch:
            patch.setattr(pg_ownership, "Bound", _Unanswered)
            owner._conn = _SeveredConn()
            assert not await owner._still_held()
        return owner._silence, owner._refusal((4321, "old-engine", None, None, 3600.0))

    silence, refusal = run(go())
    assert timeouts == [2.0, 0.5, 10.0]
    assert silence == "the database gave no answer within 2 s to the check of the lock"
    assert "(a running engine does every 2 s)" in refusal


def _scripted(owner, monkeypatch, checks, takes, holders) -> list[str]:
    """The watchdog of ``owner`` without a server: each check, attempt to take the lock and
    question who holds it answered from the lists (an exception raised), an old session of
    its own ended by the store (recorded), each pause short; the watchdog stops when a list
    runs out (IndexError)."""
    done: list[str] = []

    def answer(script, what):
        async def fn(*args):
            done.append(what)
            value = script.pop(0)
            if isinstance(value, BaseException):
                raise value
            return value
        return fn

    async def taken():
        done.append("take")
        value = takes.pop(0)
        if isinstance(value, BaseException):
            raise value
        if value:
            owner._conn = object()
        return value

    async def end_old(row):
        done.append(f"end {row[0]}")

    monkeypatch.setattr(owner, "_still_held", answer(checks, "check"))
    monkeypatch.setattr(owner, "_try_take", taken)
    monkeypatch.setattr(owner, "_holder_row", answer(holders, "holder"))
    monkeypatch.setattr(owner, "_end_old", end_old)
    return done


def test_the_watchdog_takes_a_lost_lock_again_and_says_how_long_writes_were_refused(monkeypatch):
    """A doubt confirmed by the next check; a lost session (closed) then the server
    unreachable (said once an outage, writes refused at once), a lock held by nobody by the
    time it is asked (tried again), the server unreachable again (a new outage: said again),
    a lock held by an old session of the store's own (ended, never taken for another engine),
    and taken again: writes resume, told how long they were refused."""
    restored: list[bool] = []

    async def on_restored():
        restored.append(owner.held)

    owner = _advisory(check_s=0.01, on_restored=on_restored)
    owner._sessions = {7: "start 7"}
    monkeypatch.setattr(pg_ownership, "application_name", lambda: "this engine")
    done = _scripted(owner, monkeypatch, checks=[True, True, False, False, False, False, False, True],
                     takes=[StoreError("cannot connect"), False, StoreError("cannot connect"), False, True],
                     holders=[None, (7, "this engine", None, "start 7", 3.0)])

    class Conn:
        closed = False

        async def close(self):
            self.closed = True

    async def go():
        conn = owner._conn = Conn()
        owner._watchdog = object()
        owner.doubt()
        with structlog.testing.capture_logs() as logs:
            with pytest.raises(IndexError):
                await owner._watch()
        return conn, logs

    conn, logs = run(go())
    assert done == ["check", "check", "check", "take", "check", "take", "holder", "check", "take",
                    "check", "take", "holder", "end 7", "check", "take", "check", "check"]
    assert conn.closed and restored == [False, False] and owner.held and not owner.lost
    assert owner.unreachable is None and owner._verdict.is_set()
    events = [(e["event"], e["log_level"], e.get("refused_s") is not None) for e in logs]
    assert events == [("db_ownership_confirmed", "info", True), ("db_ownership_connection_lost", "warning", False),
                      ("db_unreachable", "error", False), ("db_unreachable", "error", False),
                      ("db_ownership_reacquired", "info", True)], logs  # levels: docs/operations.md
    assert {e["db"] for e in logs} == {"the database"}
    assert [e["error"] for e in logs if e["event"] == "db_unreachable"] == ["cannot connect"] * 2


def test_a_doubt_raised_while_a_check_runs_waits_for_the_next_check(monkeypatch):
    """A check answers the doubts raised before it began, not one raised while it ran (a
    connection lost meanwhile: the lock session may have gone after it answered): writes
    stay refused until the next check (doubt(): refused until the watchdog, woken then, has
    found the lock held)."""
    owner = _advisory(check_s=0.01)
    held_at_check: list[bool] = []

    async def check():
        held_at_check.append(owner.held)
        if len(held_at_check) == 1:
            owner.doubt()  # lost while the check runs
        elif len(held_at_check) == 3:
            raise IndexError  # enough
        return True

    monkeypatch.setattr(owner, "_still_held", check)

    async def go():
        owner._conn, owner._watchdog = object(), object()
        owner.doubt()
        with pytest.raises(IndexError):
            await owner._watch()

    run(go())
    assert held_at_check == [False, False, True]
    # the same for a doubt raised while the lock is taken again
    retaken = _advisory(check_s=0.01)
    done = _scripted(retaken, monkeypatch, checks=[False, True], takes=[True], holders=[])
    held_after: list[bool] = []
    take = retaken._try_take

    async def doubted_meanwhile():
        retaken.doubt()
        return await take()

    async def check_again(real=retaken._still_held):
        held_after.append(retaken.held)
        return await real()

    monkeypatch.setattr(retaken, "_try_take", doubted_meanwhile)
    monkeypatch.setattr(retaken, "_still_held", check_again)
    retaken._watchdog = object()
    with pytest.raises(IndexError):
        run(retaken._watch())
    assert done == ["check", "take", "check", "check"] and held_after == [False, False, True]


def test_the_watchdog_stops_for_good_when_another_engine_took_the_lock(monkeypatch):
    told: list[str] = []
    owner = _advisory(check_s=0.01, on_lost=told.append)
    done = _scripted(owner, monkeypatch, checks=[False], takes=[False],
                     holders=[(99, "the-other-engine", None, None, None)])

    async def go():
        owner._watchdog = object()
        with structlog.testing.capture_logs() as logs:
            await owner._watch()  # returns: nothing more to watch
        return logs

    logs = run(go())
    assert done == ["check", "take", "holder"] and owner.lost and owner._verdict.is_set()
    assert told == ["the database is now held by another engine process (the-other-engine; server pid 99); "
                    "this engine stops"]
    assert [(e["event"], e["log_level"], e["db"], e["holder"]) for e in logs] == [
        ("db_ownership_lost", "error", "the database", "another engine process (the-other-engine; server pid 99)")]
    untold = _advisory(check_s=0.01)  # nobody to tell: it stops all the same
    _scripted(untold, monkeypatch, checks=[False], takes=[False], holders=[(99, None, None, None, None)])
    untold._watchdog = object()
    run(untold._watch())
    assert untold.lost


def test_a_check_without_an_answer_is_said_for_that_outage_only(monkeypatch):
    """The server unreachable because a check got no answer; the lock taken again; then the
    lock session lost alone (the server answers): not unreachable, nothing said of the
    earlier silence again (db_unreachable is logged once per outage)."""
    owner = _advisory(check_s=0.01)
    unreachable_at_take: list = []
    checks = [False, False, True, False]  # unanswered; the lock not held; held; lost alone

    class Conn:
        async def close(self):
            pass

    async def check():
        if len(checks) == 4:
            owner._silence = "the database gave no answer within 1 s to the check of the lock"
        return checks.pop(0)

    async def take():
        unreachable_at_take.append(owner.unreachable)
        if len(unreachable_at_take) == 3:
            raise IndexError  # enough
        if len(unreachable_at_take) == 1:
            raise StoreError("cannot connect to the database: no answer within 10 s")
        owner._conn = Conn()
        return True

    monkeypatch.setattr(owner, "_still_held", check)
    monkeypatch.setattr(owner, "_try_take", take)

    async def go():
        owner._watchdog = object()
        with structlog.testing.capture_logs() as logs, pytest.raises(IndexError):
            await owner._watch()
        return [(e["event"], e.get("error")) for e in logs if e["event"] == "db_unreachable"]

    said = run(go())
    assert unreachable_at_take == ["the database gave no answer within 1 s to the check of the lock",
                                   "cannot connect to the database: no answer within 10 s", None]
    assert said == [("db_unreachable", "the database gave no answer within 1 s to the check of the lock")]


def test_a_lock_lost_after_a_doubt_gives_the_waiting_calls_their_verdict(monkeypatch):
    """A doubt (writes refused, a verdict due), the lock session found lost, then the lock
    found taken by another engine: the verdict is in (the lock lost), so that the calls
    waiting for it fail at once (OwnershipLost), not at the end of their wait."""
    class Conn:
        async def close(self):
            pass

    owner = _advisory(check_s=0.01)
    _scripted(owner, monkeypatch, checks=[False], takes=[False], holders=[(99, "the-other-engine", None, None, None)])

    async def go():
        owner._conn, owner._watchdog = Conn(), object()
        owner.doubt()
        due = not owner._verdict.is_set()
        await owner._watch()  # returns: the lock lost
        return due, owner.lost, owner._verdict.is_set()

    assert run(go()) == (True, True, True)


def test_sever_fails_a_waiting_call_at_once_and_leaves_a_closed_connection_alone(pg_url):
    """sever() shuts the socket under a statement waiting for its answer (here pg_sleep; a hung
    server alike): the call fails at once as on a lost connection, which is then broken; a
    connection already closed is no error."""
    async def go():
        conn = await psycopg.AsyncConnection.connect(pg_url, autocommit=True)
        asyncio.get_running_loop().call_later(0.05, pg_ownership.sever, conn)
        started = time.monotonic()
        with pytest.raises(psycopg.OperationalError):
            await conn.execute("SELECT pg_sleep(10)")
        waited = time.monotonic() - started
        assert conn.broken
        await conn.close()
        pg_ownership.sever(conn)
        return waited

    assert run(go()) < 5


def test_sever_shuts_the_socket_both_ways_and_leaves_its_descriptor_to_libpq():
    """sever() shuts the connection's socket (the peer reads its end at once) through a
    duplicate of its descriptor, which it closes; the connection's own descriptor stays open,
    libpq's to close."""
    class Conn:
        class pgconn:
            socket = 0

    ours, peer = socket.socketpair()
    Conn.pgconn.socket = ours.fileno()
    try:
        gc.collect()  # what earlier tests left
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            pg_ownership.sever(Conn())
            gc.collect()
        assert [str(w.message) for w in caught if "socket" in str(w.message)] == []  # unclosed
        peer.settimeout(5)
        assert peer.recv(1) == b""  # shut: end of stream at once
        os.fstat(ours.fileno())  # still open
    finally:
        ours.close()
        peer.close()


def test_a_check_without_an_answer_refuses_calls_before_the_lock_is_tried_again(monkeypatch):
    """The check got no answer (a hang, a partition): the server is said unreachable, for that
    reason, and the calls waiting for a verdict have it, before the attempt to take the lock
    again (which may wait its whole bound for a server that will not answer)."""
    owner = _advisory(check_s=0.01)
    seen: list[tuple] = []

    async def unanswered():
        owner._silence = "the database gave no answer within 1 s to the check of the lock"
        return False

    async def take():
        seen.append((owner.unreachable, owner._verdict.is_set()))
        raise StoreError("cannot connect to the database: no answer within 10 s")

    monkeypatch.setattr(owner, "_still_held", unanswered)
    monkeypatch.setattr(owner, "_try_take", take)

    async def go():
        owner._watchdog = object()
        owner.doubt()
        with structlog.testing.capture_logs() as logs:
            watchdog = asyncio.create_task(owner._watch())
            while not seen:
                await asyncio.sleep(0.01)
            watchdog.cancel()
        return logs

    logs = run(go())
    assert seen[0] == ("the database gave no answer within 1 s to the check of the lock", True)
    assert [(e["event"], e["error"]) for e in logs] == [
        ("db_unreachable", "the database gave no answer within 1 s to the check of the lock")]
