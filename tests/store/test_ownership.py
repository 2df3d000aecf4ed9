"""One engine process per database (engine_service.store.ownership / pg_ownership): a second
engine's store is refused, naming the holder, or waits for it to let go; the lock goes with
the holder's process however it ends; the PostgreSQL lock session is watched, taken again
after a lost connection, and a lock another engine took meanwhile stops writes for good."""

from __future__ import annotations

import asyncio
import fcntl
import os
import signal
import socket
import stat
import subprocess
import sys
import threading
import time

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

from .pg import connect, url_with
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


def test_a_refused_wait_ends_after_lock_wait_s(tmp_path):
    path = tmp_path / "db.sqlite3"

    async def go():
        first = SqliteStore(path)
        await first.open()
        started = time.monotonic()
        try:
            with pytest.raises(StoreInUse):
                await SqliteStore(path, lock_wait_s=0.5).open()
            return time.monotonic() - started
        finally:
            await first.close()

    assert 0.45 <= run(go()) < 3


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


# ---- PostgreSQL ----------------------------------------------------------------------------

def _lock_backend(pg_database, schema: str) -> int | None:
    """The server pid of the session holding ``schema``'s ownership lock."""
    rows = pg_database.execute(
        "SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND granted AND classid = %s::oid "
        "AND objid = hashtext(current_schema())::oid AND objsubid = 2", (OWNER_LOCK_CLASS,), schema=schema)
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
            with pytest.raises(StoreInUse) as refused:
                await PostgresStore(url).open()
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


def test_a_waiting_postgres_store_opens_once_the_holder_lets_go(pg_url, monkeypatch):
    waited, attempts, pauses = _waited_for_the_holder(lambda **kw: PostgresStore(pg_url, **kw), 0.5, monkeypatch)
    assert waited >= 0.4
    _took_the_lock_at_once(attempts, pauses, pg_ownership.POLL_S)


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
