"""The SQLite store when SQLite itself fails underneath it (tests/store/sqlite_faults.py): a
full disk (SQLITE_FULL at a statement, ENOSPC at the commit), a commit refused after every
write of its batch succeeded. What is acknowledged is durable, what failed changed nothing,
and the store's one writer thread goes on (docs/operations.md, "When the database fails")."""

from __future__ import annotations

import asyncio
import os
import shutil
import socket
import sqlite3
import stat
import subprocess
import threading
import time
from dataclasses import replace

import pytest
from structlog.testing import capture_logs

from engine_service.observability.metrics import Metrics
from engine_service.store import sqlite as sqlite_store
from engine_service.store import (ActionRecord, DatabaseReadOnly, DeckRecord, NotADatabase, SeatRecord, SqliteStore,
                                  StoreError)

from .sqlite_faults import LimitedSqliteStore, fill_volume, held, small_volume, until_queued, without_shared_memory
from ..crash import crash
from .test_store import _open_close, record, sqlite_with_matches

FULL = "database or disk is full (SQLITE_FULL)"
BIG = 20_000  # characters: a value that needs pages the file does not have


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, 60))


async def stored(path, *match_ids):
    """What a new store on ``path`` reads: each match's (status, seat names, decks, actions)."""
    st = SqliteStore(path, exclusive=False)
    await st.open()
    try:
        out = {}
        for match_id in match_ids:
            m = await st.load_match(match_id)
            out[match_id] = None if m is None else (
                m.record.status, [s.player_name for s in m.record.seats], [d.deal for d in m.decks],
                [(a.seq, a.action) for a in m.actions])
        return out
    finally:
        await st.close()


async def _opened_with_matches(path, count: int) -> LimitedSqliteStore:
    """A LimitedSqliteStore opened on ``path`` holding matches m1..m``count`` (created in
    that order), each with nothing written yet."""
    st = LimitedSqliteStore(path)
    await st.open()
    for i in range(1, count + 1):
        await st.create_match(record(f"m{i}", created_at=float(i)))
    return st


def test_a_full_disk_refuses_each_kind_of_write_and_changes_nothing(tmp_path):
    """Every write that needs room the file cannot get fails with SQLite's SQLITE_FULL named
    in its error (the operator's log says "disk is full"), is counted in
    cardgames_store_errors_total and leaves the database as it was; the same writes succeed
    once there is room, and a write that fits succeeds meanwhile (nothing is wedged)."""
    path = tmp_path / "db.sqlite3"
    metrics = Metrics()
    big_deck = DeckRecord(1, tuple(f"C{i}" for i in range(4000)))

    async def go():
        st = LimitedSqliteStore(path, metrics)
        await st.open()
        await st.create_match(record("m1"))
        await st.create_match(record("m2", created_at=2.0))
        await st.start_match("m2", [SeatRecord(0, player_name="ann", token_hash="a" * 64)],
                             [DeckRecord(0, ("JS", "7H"))])
        await st.append_action("m2", ActionRecord(1, 0, "pass"))
        before = await stored(path, "m1", "m2", "m3")
        await st.fill_up()
        writes = {
            "create_match": lambda: st.create_match(replace(record("m3", created_at=3.0), name="n" * BIG)),
            "save_seat": lambda: st.save_seat("m1", SeatRecord(0, player_name="p" * BIG, token_hash="b" * 64)),
            "start_match": lambda: st.start_match("m1", [SeatRecord(1, player_name="q" * BIG)], [DeckRecord(0, ("JS",))]),
            "append_action": lambda: st.append_action("m2", ActionRecord(2, 0, "x" * BIG)),
            "append_decks": lambda: st.append_decks("m2", [big_deck]),
        }
        errors = {}
        for operation, write in writes.items():
            with pytest.raises(StoreError) as failed:
                await write()
            errors[operation] = str(failed.value)
        # a write that fits in the pages the file has is written (the writer thread lives on)
        await st.set_status("m1", "waiting")
        during = await stored(path, "m1", "m2", "m3")
        await st.make_room()
        for write in writes.values():
            await write()
        await st.close()
        return before, errors, during, await stored(path, "m1", "m2", "m3")

    before, errors, during, after = run(go())
    for operation, error in errors.items():
        assert FULL in error, (operation, error)
        assert metrics.value("cardgames_store_errors_total", {"operation": operation}) == 1, operation
    assert during == before
    assert after["m3"] is not None and after["m1"][0] == "active" and len(after["m1"][1][0]) == BIG
    assert after["m2"][2] == [0, 1] and after["m2"][3] == [(1, "pass"), (2, "x" * BIG)]


def test_a_write_that_fills_the_disk_fails_the_writes_committed_with_it(tmp_path):
    """SQLITE_FULL in the middle of a statement may make SQLite roll back the whole
    transaction, not only the failing write's savepoint: the writes of the same group commit
    before it are gone too. They used to be acknowledged all the same (the commit found no
    transaction and failed nothing): m1's action was answered as written and was not in
    the database. Now each of them is answered with the error, the writes after the failing
    one go on in a new transaction, and every acknowledged write is durable."""
    path = tmp_path / "db.sqlite3"

    async def go():
        st = await _opened_with_matches(path, 3)
        await st.fill_up()
        async with held(st):
            first = asyncio.ensure_future(st.append_action("m1", ActionRecord(1, 0, "pass")))
            filling = asyncio.ensure_future(st.append_action("m2", ActionRecord(1, 0, "x" * BIG)))
            after = asyncio.ensure_future(st.append_action("m3", ActionRecord(1, 0, "take")))
            await asyncio.sleep(0.05)
        results = await asyncio.gather(first, filling, after, return_exceptions=True)
        acknowledged = await stored(path, "m1", "m2", "m3")
        # the retry of the refused write: it fits, so it is written now
        await st.append_action("m1", ActionRecord(1, 0, "pass"))
        await st.close()
        return results, acknowledged, await stored(path, "m1", "m2", "m3")

    (first, filling, after), acknowledged, final = run(go())
    assert isinstance(filling, StoreError) and FULL in str(filling)
    assert isinstance(first, StoreError), "acknowledged, but rolled back with the write that filled the disk"
    assert "rolled back with its transaction" in str(first) and FULL in str(first)
    assert after is None
    assert [acknowledged[m][3] for m in ("m1", "m2", "m3")] == [[], [], [(1, "take")]]
    assert [final[m][3] for m in ("m1", "m2", "m3")] == [[(1, "pass")], [], [(1, "take")]]


def test_a_commit_that_fails_after_every_write_of_its_batch_succeeded_fails_them_all(tmp_path):
    """Three writes of one group commit, each released from its savepoint, and then SQLite
    refuses the COMMIT (here a deferred foreign key that the third broke: a real refusal of
    the commit by SQLite, as ENOSPC writing the WAL is, test below): each of the three is
    answered with the commit's error, none is in the database, and the next writes commit."""
    path = tmp_path / "db.sqlite3"
    metrics = Metrics()

    def orphan(conn):  # checked at the COMMIT, not at the statement
        conn.execute("PRAGMA defer_foreign_keys=ON")
        conn.execute("INSERT INTO decks (match_id, deal, cards) VALUES ('nobody', 0, '[]')")

    async def go():
        st = LimitedSqliteStore(path, metrics)
        await st.open()
        await st.create_match(record("m1"))
        await st.create_match(record("m2", created_at=2.0))
        commits = st.commits
        async with held(st):
            writes = [asyncio.ensure_future(st.append_action("m1", ActionRecord(1, 0, "pass"))),
                      asyncio.ensure_future(st.append_action("m2", ActionRecord(1, 0, "take"))),
                      asyncio.ensure_future(st._submit(orphan, write=True))]
            await asyncio.sleep(0.05)
        results = await asyncio.gather(*writes, return_exceptions=True)
        failed_commits = st.commits - commits
        await st.append_action("m1", ActionRecord(1, 0, "take"))
        await st.close()
        return results, failed_commits, await stored(path, "m1", "m2")

    results, failed_commits, final = run(go())
    assert failed_commits == 0
    for result in results:
        assert isinstance(result, StoreError) and "commit failed: FOREIGN KEY constraint failed" in str(result)
    assert final["m1"][3] == [(1, "take")] and final["m2"][3] == []
    assert metrics.value("cardgames_store_errors_total", {"operation": "append_action"}) == 2


def test_a_failed_write_whose_savepoint_cannot_be_undone_rolls_back_its_whole_batch(tmp_path):
    """A write fails and SQLite then refuses ``ROLLBACK TO`` its savepoint (here the write
    released the savepoint itself before failing, so that SQLite has none of that name; in
    life an I/O error at the rollback): what the write did cannot be told apart from the
    batch's other writes, so the whole transaction is rolled back (_abandon). Its row is not
    committed with the others, the write before it in the batch is answered with the error
    (rolled back with it) and nothing of it is stored, the write after it commits in a new
    transaction, and the writer thread goes on."""
    path = tmp_path / "db.sqlite3"

    def half_done(conn):
        conn.execute("INSERT INTO decks (match_id, deal, cards) VALUES ('m2', 5, '[]')")
        conn.execute("RELEASE write")  # its savepoint gone: ROLLBACK TO write fails
        raise StoreError("the write failed half-way")

    async def go():
        st = await _opened_with_matches(path, 3)
        commits = st.commits
        async with held(st):
            writes = [asyncio.ensure_future(st.append_action("m1", ActionRecord(1, 0, "pass"))),
                      asyncio.ensure_future(st._submit(half_done, write=True)),
                      asyncio.ensure_future(st.append_action("m3", ActionRecord(1, 0, "take")))]
            await asyncio.sleep(0.05)
        results = await asyncio.gather(*writes, return_exceptions=True)
        committed = st.commits - commits
        await st.append_action("m1", ActionRecord(1, 0, "take"))  # the writer goes on
        decks = await st._run(lambda: st._db().execute("SELECT match_id, deal FROM decks").fetchall())
        await st.close()
        return results, committed, decks, await stored(path, "m1", "m2", "m3")

    (before, failed, after), committed, decks, final = run(go())
    assert str(failed) == "the write failed half-way"
    assert isinstance(before, StoreError) and "rolled back with its transaction" in str(before)
    assert after is None and committed == 1  # in a transaction of its own (BEGIN IMMEDIATE), committed
    assert decks == []
    assert [final[m][3] for m in ("m1", "m2", "m3")] == [[(1, "take")], [], [(1, "take")]]


def test_writes_queued_behind_a_read_share_one_transaction_after_it(tmp_path):
    """A read in the middle of a batch commits the writes before it (it sees only committed
    writes), and the writes after it open a new transaction of their own, which they share:
    two commits for four writes, not one per write after the read (each in a transaction
    SQLite opens and commits at its savepoint's release, deferred, with its own fsync)."""
    path = tmp_path / "db.sqlite3"

    async def go():
        st = await _opened_with_matches(path, 4)
        commits = st.commits
        async with held(st):
            first = asyncio.ensure_future(st.append_action("m1", ActionRecord(1, 0, "pass")))
            read = asyncio.ensure_future(st.load_match("m1"))
            later = [asyncio.ensure_future(st.append_action(f"m{i}", ActionRecord(1, 0, "take"))) for i in (2, 3, 4)]
            await until_queued(st, 5)
        results = await asyncio.gather(first, *later)
        seen = await read
        shared = st.commits - commits
        await st.close()
        return results, seen, shared, await stored(path, "m1", "m2", "m3", "m4")

    results, seen, shared, final = run(go())
    assert results == [None] * 4 and [a.action for a in seen.actions] == ["pass"]
    assert shared == 2
    assert [final[m][3] for m in ("m1", "m2", "m3", "m4")] == [[(1, "pass")]] + [[(1, "take")]] * 3


def test_a_transaction_takes_at_most_max_batch_of_the_queued_writes(tmp_path):
    """Writes queued while the thread is busy share one transaction up to MAX_BATCH of them;
    the one after those waits for the next transaction (a batch without bound would grow one
    transaction, and the wait of its first write, with the queue)."""
    async def go():
        st = await _opened_with_matches(tmp_path / "db.sqlite3", 0)
        commits = st.commits
        async with held(st):
            writes = [asyncio.ensure_future(st.ping()) for _ in range(sqlite_store.MAX_BATCH + 1)]
            await until_queued(st, sqlite_store.MAX_BATCH + 1)
        await asyncio.gather(*writes)
        shared = st.commits - commits
        await st.close()
        return shared

    assert run(go()) == 2


def test_a_write_whose_caller_gave_up_does_not_keep_the_writes_committed_with_it_unanswered(tmp_path):
    """Writes of one commit are answered together: one whose caller was cancelled meanwhile
    (a client gone) is skipped, and the others of that commit are still answered, the
    failed one with its error (they used to wait for ever behind it)."""
    async def go():
        st = await _opened_with_matches(tmp_path / "db.sqlite3", 2)
        async with held(st):
            gone = asyncio.ensure_future(st.append_action("m1", ActionRecord(1, 0, "pass")))
            ok = asyncio.ensure_future(st.append_action("m2", ActionRecord(1, 0, "pass")))
            bad = asyncio.ensure_future(st.append_action("m2", ActionRecord(5, 0, "pass")))
            await until_queued(st, 3)
            gone.cancel()
        answers = await asyncio.gather(ok, bad, return_exceptions=True)
        await st.close()
        return gone.cancelled(), answers, await stored(tmp_path / "db.sqlite3", "m1", "m2")

    cancelled, (ok, bad), final = run(go())
    assert cancelled and ok is None and isinstance(bad, StoreError) and "is not the next one" in str(bad)
    assert final["m1"][3] == [(1, "pass")] and final["m2"][3] == [(1, "pass")]  # written all the same


def test_the_writer_thread_ends_cleanly_and_answers_the_writes_queued_before_its_stop(tmp_path):
    """The stop of the writer thread queued behind writes (taken into their batch) ends the
    thread once they are committed and answered, and a stop that finds nothing queued ends it
    at once; neither dies with an exception (the stop taken for a write), which left the
    writes of that batch unanswered, their callers waiting for ever."""
    path = tmp_path / "db.sqlite3"
    died: list[BaseException] = []

    async def go():
        st = LimitedSqliteStore(path, exclusive=False)
        await st.open()
        await st.create_match(record("m1"))
        thread, jobs = st._thread, st._jobs
        async with held(st):
            write = asyncio.ensure_future(st.append_action("m1", ActionRecord(1, 0, "pass")))
            await until_queued(st, 1)
            stopping = asyncio.ensure_future(st._stop())  # the stop, queued behind the write
            while jobs.qsize() < 2:
                await asyncio.sleep(0.002)
        await asyncio.wait_for(write, 30)
        await stopping
        alive = thread.is_alive()
        again = LimitedSqliteStore(tmp_path / "again.sqlite3")
        await again.open()
        await again.close()  # its stop finds nothing queued
        return alive, again._thread, await stored(path, "m1")

    hook = threading.excepthook
    threading.excepthook = lambda args: died.append(args.exc_value)
    try:
        alive, gone, final = run(go())
    finally:
        threading.excepthook = hook
    assert not alive and gone is None and died == []
    assert final["m1"][3] == [(1, "pass")]


def test_a_write_the_database_will_not_begin_is_refused_alone_and_the_writer_goes_on(tmp_path):
    """SQLite refusing the transaction itself (BEGIN IMMEDIATE; here the connection made
    query-only, in life a lock another process will not let go or a file made read-only) is
    the write's StoreError, saying that no transaction could be started, counted, with
    nothing written; the writer thread goes on and the same write succeeds once SQLite
    accepts writes again."""
    path = tmp_path / "db.sqlite3"
    metrics = Metrics()

    async def go():
        st = LimitedSqliteStore(path, metrics)
        await st.open()
        await st.create_match(record("m1"))
        await st.read_only()
        with pytest.raises(StoreError) as refused:
            await st.append_action("m1", ActionRecord(1, 0, "pass"))
        await st.read_only(False)
        await st.append_action("m1", ActionRecord(1, 0, "take"))
        await st.close()
        return str(refused.value), await stored(path, "m1")

    error, final = run(go())
    assert "cannot start a transaction" in error and "readonly" in error
    assert final["m1"][3] == [(1, "take")]
    assert metrics.value("cardgames_store_errors_total", {"operation": "append_action"}) == 1


def test_no_space_left_on_the_volume_fails_the_commit_and_loses_nothing(tmp_path):
    """A real full volume (a tmpfs filled with a ballast file): SQLite cannot append the batch
    to its WAL, so the COMMIT fails with SQLITE_FULL; both writes of the batch are answered
    with it and neither is written; reads go on; once the ballast is deleted the same writes
    are written, and the file holds exactly what was acknowledged."""
    with small_volume(tmp_path / "volume") as volume:
        path = volume / "db.sqlite3"

        async def go():
            st = SqliteStore(path)
            await st.open()
            await st.create_match(record("m1"))
            await st.create_match(record("m2", created_at=2.0))
            for seq in range(1, 4):
                await st.append_action("m1", ActionRecord(seq, seq % 2, "pass"))
            ballast = fill_volume(volume)
            async with held(st):
                writes = [asyncio.ensure_future(st.append_action("m1", ActionRecord(4, 0, "take"))),
                          asyncio.ensure_future(st.append_action("m2", ActionRecord(1, 0, "take")))]
                await asyncio.sleep(0.05)
            refused = await asyncio.gather(*writes, return_exceptions=True)
            read = [a.seq for a in (await st.load_match("m1")).actions]
            again = await asyncio.gather(st.append_action("m1", ActionRecord(4, 0, "take")), return_exceptions=True)
            os.remove(ballast)
            await st.append_action("m1", ActionRecord(4, 0, "take"))
            await st.append_action("m2", ActionRecord(1, 0, "take"))
            await st.close()
            return refused, read, again, await stored(path, "m1", "m2")

        refused, read, again, final = run(go())
    for result in [*refused, *again]:
        assert isinstance(result, StoreError) and FULL in str(result), result
    assert read == [1, 2, 3]
    assert [a for a, _ in final["m1"][3]] == [1, 2, 3, 4] and final["m2"][3] == [(1, "take")]


@pytest.mark.parametrize("new_file", [False, True])
def test_a_full_volume_at_open_is_said_so_not_a_file_that_is_no_database(tmp_path, new_file):
    """The engine started on a volume already full: SQLite could not size the WAL index of
    a sound database (SQLITE_IOERR_SHMSIZE), nor write a new one's schema (SQLITE_FULL), and
    the store refused it as "not a SQLite database" / "not a usable SQLite database": an
    operator told so may delete or restore over a good file. Now it is a StoreError naming
    SQLite's reason and the volume to check, the file is left as it was, and it opens with
    every match once there is room."""
    with small_volume(tmp_path / "volume") as volume:
        path = volume / "db.sqlite3"

        async def go():
            if not new_file:
                st = SqliteStore(path)
                await st.open()
                await st.create_match(record("m1"))
                await st.close()
            before = path.read_bytes() if path.exists() else None
            ballast = fill_volume(volume)
            with pytest.raises(StoreError) as refused:
                await SqliteStore(path).open()
            after = path.read_bytes() if path.exists() else None
            os.remove(ballast)
            return refused.value, before, after, await stored(path, "m1")

        refused, before, after, final = run(go())
    message = str(refused)
    assert not isinstance(refused, NotADatabase), message
    assert str(path) in message and "not a" not in message, message
    assert ("(SQLITE_FULL)" if new_file else "(SQLITE_IOERR_SHMSIZE)") in message, message
    assert "free space of its volume" in message, message
    if not new_file:
        assert after == before and final["m1"] is not None
    else:
        assert final == {"m1": None}


@pytest.mark.parametrize("new_file", [False, True])
def test_a_database_this_process_cannot_write_is_refused_at_open(tmp_path, new_file):
    """SQLite opens a file it may not write read-only, without a word (a database restored as
    root and left root's, a file made read-only: here PRAGMA query_only, since as root no
    permission stops SQLite). The store used to open it, and the engine served with every
    write failing UNAVAILABLE; a new file that could not be written was refused as "not a
    usable SQLite database". Now both are DatabaseReadOnly naming the file, SQLite's reason
    and what to check, and the store lets go of the file (its ownership lock too)."""
    path = tmp_path / "db.sqlite3"

    async def go():
        if not new_file:
            st = SqliteStore(path)
            await st.open()
            await st.create_match(record("m1"))
            await st.close()
        with pytest.raises(DatabaseReadOnly) as refused:
            await LimitedSqliteStore(path, read_only=True).open()
        st = SqliteStore(path)  # nothing held, nothing changed
        await st.open()
        held_match = await st.load_match("m1")
        await st.close()
        return str(refused.value), held_match

    error, held_match = run(go())
    assert error == (  # which user to give it to, SQLite's reason, what to check, where it is documented
        f"{path} cannot be written by this process (uid {os.getuid()}): attempt to write a readonly database "
        "(SQLITE_READONLY); refusing to serve from it: make the file and its directory writable by the "
        "engine's user, and check that the filesystem is not mounted read-only (docs/operations.md, When the "
        "database fails)")
    assert (held_match is None) == new_file


def test_a_database_another_writer_holds_at_open_is_refused_naming_sqlites_reason(tmp_path):
    """The write check at open finding the file locked by another writer (an operator's
    sqlite3 shell left in a write transaction: no engine, so no ``.lock``) waits SQLite's busy
    timeout (5 s; none here, to be quick), then refuses: a StoreError naming the file and
    SQLite's reason, not a read-only or foreign file, and the store lets go of the lock; once
    the other writer is done the store opens."""
    path = tmp_path / "db.sqlite3"
    sqlite_with_matches(path, count=1)

    class Impatient(SqliteStore):
        def _check_writable(self, conn):
            conn.execute("PRAGMA busy_timeout=0")
            super()._check_writable(conn)

    shell = sqlite3.connect(path, isolation_level=None)
    try:
        shell.execute("BEGIN IMMEDIATE")
        with pytest.raises(StoreError) as refused:
            run(Impatient(path).open())
        shell.execute("ROLLBACK")
    finally:
        shell.close()
    assert not isinstance(refused.value, (DatabaseReadOnly, NotADatabase)), refused.value
    assert str(refused.value) == f"cannot write to {path}: database is locked (SQLITE_BUSY)"

    _open_close(path)  # the lock was let go: an engine's store takes it (lock_wait_s 0)


@pytest.mark.parametrize("what", ["new_file", "index_to_add"])
def test_a_full_volume_at_open_is_a_full_volume_not_a_bad_database(tmp_path, what):
    """A start that must write to a volume with no room left: a new database (its tables) or
    an index the engine adds to a database of its own schema (docs/operations.md, Upgrades).
    The store said "... is not a usable SQLite database (database or disk is full)", which
    sends the operator after a damaged file (or to restore a backup) when the volume only
    needs room. Now it says that the database cannot be written, SQLite's reason with its
    code, and to free space; the file is left as it was, and the store lets go of it."""
    path = tmp_path / "db.sqlite3"

    async def go():
        if what == "index_to_add":
            st = SqliteStore(path)
            await st.open()
            await st.create_match(record("m1"))
            await st.close()
            conn = sqlite3.connect(path, isolation_level=None)
            conn.execute("DROP INDEX matches_by_creation")
            conn.execute("VACUUM")  # no free page left in the file for the index
            conn.close()
        with pytest.raises(StoreError) as refused:
            await LimitedSqliteStore(path, full=True).open()
        st = SqliteStore(path)  # nothing held; once there is room it opens
        await st.open()
        held_match = await st.load_match("m1")
        await st.close()
        return refused.value, held_match

    error, held_match = run(go())
    assert not isinstance(error, NotADatabase), error
    assert str(error) == (f"cannot prepare database {path}: {FULL}; the file was left as it was: check the free "
                          "space of its volume (df) and its storage, then start again (docs/operations.md, When "
                          "the database fails)")
    assert (held_match is None) == (what == "new_file")


def test_a_read_only_filesystem_is_a_clear_error_at_open(tmp_path):
    """The database on a filesystem mounted read-only (a tmpfs remounted so): the engine's
    store cannot take its ownership lock and says so; a store without the lock (a tool)
    says it cannot open the database (SQLITE_CANTOPEN), not that the file is no database, and
    that it cannot create a new one there."""
    with small_volume(tmp_path / "volume") as volume:
        path = volume / "db.sqlite3"

        async def create():
            st = SqliteStore(path)
            await st.open()
            await st.create_match(record("m1"))
            await st.close()
        run(create())
        remounted = subprocess.run(["mount", "-o", "remount,ro", str(volume)], capture_output=True, text=True)
        if remounted.returncode != 0:
            pytest.skip(f"cannot remount read-only: {remounted.stderr.strip()}")

        async def refusals():
            errors = []
            for exclusive, at in ((True, path), (False, path), (False, volume / "new.sqlite3")):
                with pytest.raises(StoreError) as refused:
                    await SqliteStore(at, exclusive=exclusive).open()
                errors.append(refused.value)
            return errors

        engine, tool, new = run(refusals())
    assert "cannot open the lock file" in str(engine) and "Read-only file system" in str(engine)
    assert not isinstance(tool, NotADatabase)
    assert str(tool) == f"cannot open database {path}: unable to open database file (SQLITE_CANTOPEN)"
    # a new file there cannot be made (owner-only, before SQLite opens it): said so
    assert str(new) == f"cannot create database {volume / 'new.sqlite3'}: Read-only file system"


def test_a_new_database_sqlite_cannot_put_in_wal_mode_is_refused_before_its_tables_are_made(tmp_path, monkeypatch):
    """Without shared memory for the WAL's index (here SQLite's ``unix-none`` VFS) SQLite
    answers ``PRAGMA journal_mode=WAL`` with the rollback journal it stays in, and a store
    without its WAL is not the one documented (durable, readers beside the writer). Open
    refuses it naming the mode it got, as a StoreError (the file is not to blame), before the
    tables are written, and lets go of the file: once SQLite can, the store creates it."""
    path = tmp_path / "db.sqlite3"
    without_shared_memory(monkeypatch)
    with pytest.raises(StoreError) as refused:
        run(SqliteStore(path).open())
    monkeypatch.undo()
    assert not isinstance(refused.value, NotADatabase), refused.value
    assert str(refused.value) == f"{path}: cannot switch to WAL journal mode (got delete)"
    assert path.read_bytes() == b""  # made owner-only, nothing written in it

    _open_close(path)  # the lock was let go: an engine's store takes it (lock_wait_s 0)
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert conn.execute("PRAGMA user_version").fetchone()[0] == sqlite_store.SCHEMA_VERSION
    conn.close()


@pytest.mark.parametrize("taken", ["-wal", "-shm", "-journal"])
def test_a_database_whose_wal_cannot_be_made_at_open_is_refused_as_sqlite_says_and_left_as_it_was(tmp_path, taken):
    """A sound database closed cleanly (no ``-wal`` nor ``-shm`` left), whose WAL or WAL index
    SQLite cannot make again at open (here its name taken by a directory: a stray mount, a bad
    restore). Without the WAL SQLite cannot open the file (SQLITE_CANTOPEN), and a rollback
    journal's name taken reads as an I/O error (SQLITE_IOERR_READ): a StoreError naming the
    file, SQLite's reason and the directory in the way (not the free-space advice SQLite's I/O
    errors get); without the index it reads the file but will not write it (SQLITE_READONLY):
    DatabaseReadOnly, naming the directory too (not the advice about permissions). None is
    "not a SQLite database" (which
    sends the operator to restore over a good file); the file is left as it was and the store
    lets go of it: with the name free it opens, every match there."""
    path = tmp_path / "db.sqlite3"
    sqlite_with_matches(path, count=1)
    before = path.read_bytes()
    os.mkdir(f"{path}{taken}")

    with pytest.raises(StoreError) as refused:
        run(SqliteStore(path).open())
    assert not isinstance(refused.value, NotADatabase), refused.value
    if taken == "-wal":
        assert str(refused.value) == (f"cannot open database {path}: unable to open database file (SQLITE_CANTOPEN); "
                                      f"the file was left as it was: {path}-wal is a directory, where SQLite makes "
                                      "its own file: move it away, then start again")
    elif taken == "-journal":  # looked for as a hot journal: read as a file, an I/O error
        assert str(refused.value) == (f"cannot open database {path}: disk I/O error (SQLITE_IOERR_READ); "
                                      f"the file was left as it was: {path}-journal is a directory, where SQLite "
                                      "makes its own file: move it away, then start again")
    else:
        assert isinstance(refused.value, DatabaseReadOnly), refused.value
        assert str(refused.value) == (f"{path} cannot be written by this process (uid {os.getuid()}): "
                                      "attempt to write a readonly database (SQLITE_READONLY); "
                                      f"refusing to serve from it: {path}-shm is a directory, where SQLite "
                                      "makes its own file: move it away, then start again"), refused.value
    assert path.read_bytes() == before

    os.rmdir(f"{path}{taken}")
    _open_close(path)  # the lock was let go: an engine's store takes it (lock_wait_s 0)
    assert run(stored(path, "m0"))["m0"][0] == "waiting"


@pytest.mark.parametrize("taken", ["-wal", "-shm", "-journal"])
@pytest.mark.parametrize("kind", ["a pipe", "a socket"])
def test_a_database_whose_wal_name_is_taken_by_a_pipe_or_socket_is_refused_before_sqlite_opens_it(tmp_path, taken, kind):
    """A name SQLite makes its own files under taken by a pipe or a socket (a bad restore, a
    mistyped ``mkfifo``): SQLite opens a pipe named as the WAL without a word and its commits
    would block the writer once the pipe's buffer is full, so the store refuses it before SQLite
    opens the file, naming it as the directory case is named (docs/operations.md, The database
    cannot be written): a StoreError, not "not a SQLite database", the file left as it was;
    with the name free it opens, every match there."""
    path = tmp_path / "db.sqlite3"
    sqlite_with_matches(path, count=1)
    before = path.read_bytes()
    special = f"{path}{taken}"
    if kind == "a pipe":
        os.mkfifo(special)
    else:
        server = socket.socket(socket.AF_UNIX)
        server.bind(special)
        server.close()

    with pytest.raises(StoreError) as refused:
        run(SqliteStore(path).open())
    assert not isinstance(refused.value, NotADatabase), refused.value
    assert str(refused.value) == (f"cannot open database {path}: the file was left as it was: {special} is not "
                                  "a regular file, where SQLite makes its own file: move it away, then start again")
    assert path.read_bytes() == before

    os.remove(special)
    _open_close(path)  # the lock was let go (or never taken): an engine's store takes it
    assert run(stored(path, "m0"))["m0"][0] == "waiting"


def test_a_new_database_file_that_cannot_be_made_is_refused_and_its_lock_let_go(tmp_path, monkeypatch):
    """The engine's store takes ``<file>.lock`` before it makes a new file owner-only; when the
    file cannot be made (here ENOSPC: a lock file left by an earlier start, and no inode free
    for the database), open is refused naming the path and why, and the lock is let go, so
    that the engine started again once there is room is not refused as "in use"."""
    path = tmp_path / "db.sqlite3"
    real_open = os.open

    def no_inode_left(name, flags, *args, **kwargs):
        if flags & os.O_EXCL and os.fspath(name) == os.path.realpath(path):
            raise OSError(28, os.strerror(28), os.fspath(name))
        return real_open(name, flags, *args, **kwargs)
    monkeypatch.setattr(os, "open", no_inode_left)
    with pytest.raises(StoreError) as refused:
        run(SqliteStore(path).open())
    monkeypatch.undo()
    assert str(refused.value) == f"cannot create database {path}: No space left on device"
    assert not path.exists()

    _open_close(path)  # the lock was let go: an engine's store takes it (lock_wait_s 0)
    assert run(stored(path, "m1")) == {"m1": None}


def test_a_database_sqlite_cannot_open_is_refused_and_its_lock_let_go(tmp_path, monkeypatch):
    """SQLite refusing to open the file at all (a file the engine's user may not read, left
    root's by a restore: SQLITE_CANTOPEN; staged here, root reads any file): open is refused
    naming the path and SQLite's reason, after the engine's lock was taken, and lets go of it."""
    path = tmp_path / "db.sqlite3"
    sqlite_with_matches(path, count=1)

    def cannot_open(name, *args, **kwargs):
        raise sqlite3.OperationalError("unable to open database file")
    monkeypatch.setattr(sqlite3, "connect", cannot_open)
    with pytest.raises(StoreError) as refused:
        run(SqliteStore(path).open())
    monkeypatch.undo()
    assert not isinstance(refused.value, NotADatabase), refused.value
    assert str(refused.value) == f"cannot open database {path}: unable to open database file"

    _open_close(path)  # the lock was let go: an engine's store takes it (lock_wait_s 0)


def _copy_as_a_crash_leaves_it(path, into):
    """The database file, its WAL and WAL index as they are on disk now (the store still
    open): what a restart after a kill -9 or a power cut would find."""
    into.mkdir()
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(f"{path}{suffix}"):
            shutil.copyfile(f"{path}{suffix}", into / f"db.sqlite3{suffix}")
    return into / "db.sqlite3"


@pytest.mark.parametrize("change", ["deleted", "replaced"])
def test_a_database_file_deleted_or_replaced_under_the_store_is_refused_and_rescued(tmp_path, change):
    """The database file deleted (rm by mistake) or replaced (a backup restored without
    stopping the engine) under an open store. The store writes through the file it opened,
    so every write went on being acknowledged into a file no restart reads: after the
    restart the matches were gone (deleted), or the engine's WAL, left at the path by
    SQLite, was replayed onto the restored file. Now the next commit is refused, everything
    the store held is copied to ``<path>.rescued-<time>`` (owner-only; ``db_file_moved``
    says where), reads go on, and the store's own WAL does not outlive it at the path."""
    path = tmp_path / "db.sqlite3"

    async def go():
        st = SqliteStore(path)
        await st.open()
        await st.create_match(record("m1"))
        await st.append_action("m1", ActionRecord(1, 0, "pass"))
        backup = tmp_path / "backup.sqlite3"
        with sqlite3.connect(path) as src, sqlite3.connect(backup) as dst:
            src.backup(dst)
        await st.append_action("m1", ActionRecord(2, 1, "pass"))  # in the engine's WAL only
        if change == "deleted":
            os.remove(path)
        else:
            os.replace(backup, path)
        with capture_logs() as logs:
            refused = await asyncio.gather(st.append_action("m1", ActionRecord(3, 0, "take")),
                                           st.create_match(record("m2", created_at=2.0)), return_exceptions=True)
        again = await asyncio.gather(st.append_action("m1", ActionRecord(3, 0, "take")), return_exceptions=True)
        read = [a.seq for a in (await st.load_match("m1")).actions]
        await st.close()
        rescued = [e["rescued"] for e in logs if e["event"] == "db_file_moved"]
        return refused + again, logs, read, rescued, await stored(rescued[0], "m1", "m2"), \
            await stored(path, "m1") if path.exists() else None, sorted(p.name for p in tmp_path.iterdir())

    refused, logs, read, rescued, in_rescue, at_path, left = run(go())
    for error in refused:
        assert isinstance(error, StoreError) and f"was {change} while the engine had it open" in str(error)
    assert [(e["event"], e["change"]) for e in logs if e["event"] == "db_file_moved"] == [("db_file_moved", change)]
    moved, = [e for e in logs if e["event"] == "db_file_moved"]
    assert moved["db"] == str(path) and "put the rescued copy in place of the database" in moved["hint"]
    assert read == [1, 2]
    assert stat.S_IMODE(os.stat(rescued[0]).st_mode) == 0o600
    assert in_rescue == {"m1": ("waiting", ["", ""], [], [(1, "pass"), (2, "pass")]), "m2": None}
    if change == "deleted":
        assert at_path is None and "db.sqlite3-wal" not in left and "db.sqlite3-shm" not in left
    else:  # the file put in its place, as it was: no frame of the engine's WAL replayed onto it
        assert at_path == {"m1": ("waiting", ["", ""], [], [(1, "pass")])}


def test_a_database_file_put_back_is_written_to_again_and_a_second_move_is_reported_again(tmp_path):
    """The file moved away from its path (refused, rescued, db_file_moved), then put back
    (the same file at the path again): writes commit to it again. Moved away once more, that
    is a new incident: refused and reported (db_file_moved) again, not taken for the first
    one still going on."""
    path, aside = tmp_path / "db.sqlite3", tmp_path / "aside.sqlite3"

    async def go():
        st = SqliteStore(path)
        await st.open()
        await st.create_match(record("m1"))
        outcomes = []
        with capture_logs() as logs:
            for seq in (1, 2):
                os.rename(path, aside)
                outcomes += await asyncio.gather(st.append_action("m1", ActionRecord(seq, 0, "pass")),
                                                 return_exceptions=True)
                os.rename(aside, path)
                outcomes.append(await st.append_action("m1", ActionRecord(seq, 0, "pass")))
        await st.close()
        return outcomes, [e["change"] for e in logs if e["event"] == "db_file_moved"], await stored(path, "m1")

    outcomes, moves, final = run(go())
    assert [type(o).__name__ for o in outcomes] == ["StoreError", "NoneType", "StoreError", "NoneType"]
    assert moves == ["deleted", "deleted"]
    assert final["m1"][3] == [(1, "pass"), (2, "pass")]


def test_a_ping_is_refused_as_a_write_is_when_the_database_file_was_deleted(tmp_path):
    """The heartbeat's probe (Store.ping) takes the path a write takes (its transaction, the
    check that the file is still the one opened, the commit), not a read's: a database whose
    writes are refused must not be said back (absence_heartbeat_recovered) by a probe that a
    read on the file still held open would answer."""
    path = tmp_path / "db.sqlite3"

    async def go():
        st = SqliteStore(path)
        await st.open()
        await st.create_match(record("m1"))
        await st.ping()
        os.remove(path)
        with capture_logs():
            try:
                await st.ping()
            except StoreError as exc:
                refused = exc
            else:
                refused = None
        read = await st.load_match("m1")  # reads go on
        await st.close()
        return refused, read

    refused, read = run(go())
    assert isinstance(refused, StoreError) and "was deleted while the engine had it open" in str(refused)
    assert read is not None


def test_a_database_file_deleted_before_the_first_write_is_refused_as_well(tmp_path):
    """The file may be gone before the store has written anything (deleted right after the
    start): the first write is refused as any later one would be, and the writer goes on. The
    store_write_failed line's error is as docs/operations.md quotes it (When the database
    fails): the database file, by its path, was deleted while the engine had it open, and
    writes are refused."""
    path = tmp_path / "db.sqlite3"

    async def go():
        st = SqliteStore(path)
        await st.open()
        os.remove(path)
        with capture_logs():
            refused = await asyncio.gather(st.ping(), st.ping(), return_exceptions=True)
        await st.close()
        return refused

    refused = run(go())
    assert [(type(e), str(e)) for e in refused] == 2 * [(
        StoreError, f"the database file {path} was deleted while the engine had it open: writes are "
                    "refused (they would go to a file no restart reads)")]


@pytest.mark.parametrize("through_a_link", [False, True])
def test_a_deleted_wal_is_made_again_and_what_was_acknowledged_survives_a_crash(tmp_path, through_a_link):
    """The WAL and its index deleted under an open store ("temporary files"): SQLite goes on
    appending commits to the WAL it holds open, which a restart after a crash cannot read,
    so the writes acknowledged since were lost by a kill -9. Now the first commit after it
    copies them into the database file and makes a new WAL at the path (db_wal_made_again),
    and a crash keeps every acknowledged write. Also for a database opened through a
    symbolic link, whose WAL SQLite keeps beside the file the link names (the store looked
    for it beside the link, found none, and did not check it)."""
    path = tmp_path / "db.sqlite3"
    opened = path
    if through_a_link:
        opened = tmp_path / "link" / "db.sqlite3"
        opened.parent.mkdir()
        opened.symlink_to(path)

    async def go():
        st = SqliteStore(opened)
        await st.open()
        await st.create_match(record("m1"))
        await st.append_action("m1", ActionRecord(1, 0, "pass"))
        os.link(f"{path}-wal", tmp_path / "held")  # its inode number is not reused by the new WAL
        os.remove(f"{path}-wal")
        os.remove(f"{path}-shm")
        with capture_logs() as logs:  # made again once, not at every commit after
            await st.append_action("m1", ActionRecord(2, 1, "pass"))
            await st.append_action("m1", ActionRecord(3, 0, "take"))
        crashed = _copy_as_a_crash_leaves_it(path, tmp_path / "crashed")
        crash(st)
        return [(e["event"], e["db"]) for e in logs], os.path.exists(f"{path}-wal"), await stored(crashed, "m1")

    events, wal_back, after_crash = run(go())
    assert events == [("db_wal_made_again", str(opened))] and wal_back
    assert after_crash["m1"][3] == [(1, "pass"), (2, "pass"), (3, "take")]


def test_a_rescue_that_could_not_be_written_is_tried_again(tmp_path):
    """The database's whole directory deleted under the store: the rescued copy cannot be
    written there (db_file_moved with rescue_error, said once however often it is tried);
    once the directory is back, the next refused write makes it (db_file_moved with
    rescued)."""
    data = tmp_path / "data"
    data.mkdir()
    path = data / "db.sqlite3"

    async def go():
        st = SqliteStore(path)
        await st.open()
        await st.create_match(record("m1"))
        shutil.rmtree(data)
        with capture_logs() as logs:
            first = await asyncio.gather(st.append_action("m1", ActionRecord(1, 0, "pass")), return_exceptions=True)
            first += await asyncio.gather(st.append_action("m1", ActionRecord(1, 0, "pass")), return_exceptions=True)
            data.mkdir()
            second = await asyncio.gather(st.append_action("m1", ActionRecord(1, 0, "pass")), return_exceptions=True)
            third = await asyncio.gather(st.append_action("m1", ActionRecord(1, 0, "pass")), return_exceptions=True)
        await st.close()
        moved = [e for e in logs if e["event"] == "db_file_moved"]
        return first + second + third, moved, await stored(moved[-1]["rescued"], "m1")

    refused, moved, rescued = run(go())
    assert all(isinstance(e, StoreError) and "was deleted" in str(e) for e in refused)
    assert [bool(e["rescued"]) for e in moved] == [False, True] and "rescue_error" in moved[0]
    assert rescued["m1"] is not None


def test_a_rescue_that_fills_the_volume_leaves_no_partial_copy_behind(tmp_path):
    """The database file deleted under the store on a volume with no space left: the rescued
    copy is begun (its name taken) but cannot be written whole (SQLITE_FULL). That copy is
    removed, not left beside the database looking like a rescue, and the refusal says why."""
    with small_volume(tmp_path / "volume") as volume:
        path = volume / "db.sqlite3"

        async def go():
            st = SqliteStore(path)
            await st.open()
            await st.create_match(record("m1"))
            os.remove(path)
            ballast = fill_volume(volume)
            with capture_logs() as logs:
                refused = await asyncio.gather(st.append_action("m1", ActionRecord(1, 0, "pass")),
                                               return_exceptions=True)
            os.remove(ballast)
            await st.close()
            return refused, [e for e in logs if e["event"] == "db_file_moved"]

        refused, moved = run(go())
        left = sorted(p.name for p in volume.iterdir())
    assert isinstance(refused[0], StoreError) and "was deleted" in str(refused[0])
    assert len(moved) == 1 and moved[0]["rescued"] == "" and "(SQLITE_FULL)" in moved[0]["rescue_error"], moved
    assert not [name for name in left if ".rescued-" in name], left


async def _moved_away_twice(path, aside) -> list[dict]:
    """Two incidents: twice a write finds the database file moved away (to ``aside``), then
    the file is put back and the write made again; the ``db_file_moved`` lines said."""
    st = SqliteStore(path)
    await st.open()
    await st.create_match(record("m1"))
    with capture_logs() as logs:
        for seq in (1, 2):
            os.rename(path, aside)
            await asyncio.gather(st.append_action("m1", ActionRecord(seq, 0, "pass")), return_exceptions=True)
            os.rename(aside, path)
            await st.append_action("m1", ActionRecord(seq, 0, "pass"))
    await st.close()
    return [e for e in logs if e["event"] == "db_file_moved"]


def test_two_rescues_in_one_second_each_get_a_copy_of_their_own(tmp_path, monkeypatch):
    """The file moved away, put back, and moved away again within one second: two incidents,
    two rescued copies. Their names are the UTC time to the second, and each copy is created
    O_EXCL (never written over): the second used to find the first's name taken and was not
    made (db_file_moved with rescue_error "File exists"), though it alone held what was
    acknowledged between the two. It now takes the next free name (``-2`` after the time)."""
    path, aside = tmp_path / "db.sqlite3", tmp_path / "aside.sqlite3"
    second = time.gmtime()
    monkeypatch.setattr(time, "gmtime", lambda *_: second)  # both incidents in the same second
    monkeypatch.setattr(sqlite_store, "_RESCUES_A_SECOND", 2)  # no more names than the two copies

    async def go():
        moved = await _moved_away_twice(path, aside)
        return moved, [await stored(e["rescued"], "m1") if e["rescued"] else None for e in moved]

    moved, copies = run(go())
    stamp = f"{path}.rescued-{time.strftime('%Y%m%dT%H%M%SZ', second)}"
    assert [(e["rescued"], e.get("rescue_error")) for e in moved] == [(stamp, None), (f"{stamp}-2", None)]
    assert [c["m1"][3] for c in copies] == [[], [(1, "pass")]]  # each incident's state
    assert stat.S_IMODE(os.stat(f"{stamp}-2").st_mode) == 0o600


def test_a_rescue_refused_for_want_of_a_free_name_leaves_the_earlier_copies_alone(tmp_path, monkeypatch):
    """Every name for this second taken (here one name a second): the rescue is not made
    (rescue_error) and the copy already there, an earlier incident's, stays. The failed
    rescue removed "its" file, which O_EXCL had refused because it was the earlier copy."""
    path, aside = tmp_path / "db.sqlite3", tmp_path / "aside.sqlite3"
    second = time.gmtime()
    monkeypatch.setattr(time, "gmtime", lambda *_: second)
    monkeypatch.setattr(sqlite_store, "_RESCUES_A_SECOND", 1)

    async def go():
        moved = await _moved_away_twice(path, aside)
        return moved, await stored(moved[0]["rescued"], "m1")

    moved, first = run(go())
    stamp = f"{path}.rescued-{time.strftime('%Y%m%dT%H%M%SZ', second)}"
    assert [e["rescued"] for e in moved] == [stamp, ""]
    assert moved[1]["rescue_error"] == f"{stamp}: File exists"
    assert first["m1"][3] == []

_READS = {
    "load_match": lambda st: st.load_match("m1"),
    "find_created": lambda st: st.find_created("a" * 64),
    "list_matches": lambda st: st.list_matches(),
    "unfinished_match_ids": lambda st: st.unfinished_match_ids(),
    "count_finished": lambda st: st.count_finished(1e12),
}


@pytest.mark.parametrize("read", sorted(_READS))
def test_a_read_sqlite_refuses_is_a_store_error(tmp_path, read):
    """A read that SQLite refuses (here SQLITE_AUTH from an authorizer; an I/O error or a
    damaged page of the table alike) is a StoreError naming SQLite's reason and counted, as
    a write's failure is and as every read of the PostgreSQL store is, and the store reads
    again once SQLite does. The listing and the resume raised SQLite's own error instead:
    the admin's ListMatches was answered INTERNAL, where a store that cannot be read now is
    UNAVAILABLE / STORE_UNAVAILABLE (manager._store_unavailable), as on PostgreSQL."""
    metrics = Metrics()

    async def go():
        st = SqliteStore(tmp_path / "db.sqlite3", metrics)
        await st.open()
        await st.create_match(record("m1"))
        deny = sqlite3.SQLITE_DENY
        await st._run(lambda: st._conn.set_authorizer(
            lambda action, *_: deny if action in (sqlite3.SQLITE_READ, sqlite3.SQLITE_SELECT) else sqlite3.SQLITE_OK))
        try:
            await _READS[read](st)
        except Exception as exc:  # noqa: BLE001 - the kind of exception is what is checked
            refused = exc
        else:
            refused = None
        await st._run(lambda: st._conn.set_authorizer(None))
        await _READS[read](st)  # reads again, without an error
        await st.close()
        return refused

    refused = run(go())
    assert type(refused) is StoreError and "(SQLITE_AUTH)" in str(refused), repr(refused)
    assert metrics.store_errors.labels(read)._value.get() == 1


def test_the_wal_of_a_database_put_in_place_of_the_stores_is_not_deleted_at_close(tmp_path):
    """The store's file and WAL deleted under it, and a new database made at the path by
    another program (a restore done without stopping the engine) whose writes are still in
    its own WAL: the store's close deletes only the WAL it wrote (by its inode number), so
    the other program's writes are not lost with it."""
    path = tmp_path / "db.sqlite3"
    wal = tmp_path / "db.sqlite3-wal"

    async def go():
        st = SqliteStore(path)
        await st.open()
        await st.create_match(record("m1"))
        for name in ("db.sqlite3", "db.sqlite3-wal", "db.sqlite3-shm"):
            os.remove(tmp_path / name)
        other = sqlite3.connect(path, isolation_level=None)
        try:
            other.execute("PRAGMA journal_mode=WAL")
            other.execute("CREATE TABLE theirs (row INTEGER)")
            other.execute("INSERT INTO theirs VALUES (1)")
            theirs = os.stat(wal).st_ino
            await st.close()
            return theirs, os.stat(wal).st_ino if wal.exists() else None
        finally:
            other.close()

    theirs, after = run(go())
    assert after == theirs
    conn = sqlite3.connect(path)
    try:
        assert conn.execute("SELECT row FROM theirs").fetchall() == [(1,)]
    finally:
        conn.close()


def test_a_symbolic_link_removed_under_the_store_leaves_the_file_and_its_wal_alone(tmp_path):
    """The database opened through a symbolic link, and the link removed while the engine
    runs: writes are refused (the path names no file), but the file the link named is still
    the database, with its WAL beside it. At close its WAL must stay (a reader holding a
    snapshot kept SQLite from folding it into the file): it holds acknowledged writes, and
    deleting it (as the WAL of a file gone) would lose them."""
    path = tmp_path / "db.sqlite3"
    link = tmp_path / "link.sqlite3"
    link.symlink_to(path)

    async def go():
        st = SqliteStore(link)
        await st.open()
        await st.create_match(record("m1"))
        await st.append_action("m1", ActionRecord(1, 0, "pass"))
        reader = sqlite3.connect(path, isolation_level=None)
        reader.execute("BEGIN")
        reader.execute("SELECT count(*) FROM match_actions").fetchone()  # a snapshot held
        await st.append_action("m1", ActionRecord(2, 1, "pass"))
        os.remove(link)
        with capture_logs():
            refused = await asyncio.gather(st.append_action("m1", ActionRecord(3, 0, "take")),
                                           return_exceptions=True)
            await st.close()
        crashed = _copy_as_a_crash_leaves_it(path, tmp_path / "crashed")  # the reader then dies
        reader.execute("COMMIT")
        reader.close()
        return refused, await stored(crashed, "m1"), await stored(path, "m1")

    refused, after_crash, after = run(go())
    assert isinstance(refused[0], StoreError) and "was deleted" in str(refused[0])
    assert after_crash["m1"][3] == after["m1"][3] == [(1, "pass"), (2, "pass")]


def test_a_vacuum_sqlite_refuses_is_a_store_error_naming_the_file(tmp_path):
    """The offline prune's VACUUM refused (here by a query-only connection; a full volume
    alike) is a StoreError naming the file and SQLite's reason, which the prune command
    reports, not SQLite's own exception."""
    path = tmp_path / "db.sqlite3"

    async def go():
        st = LimitedSqliteStore(path)
        await st.open()
        await st.read_only()
        try:
            await st.vacuum()
        finally:
            await st.read_only(False)
            await st.close()

    with pytest.raises(StoreError) as info:
        run(go())
    assert type(info.value) is StoreError
    assert str(info.value) == f"VACUUM of {path} failed: attempt to write a readonly database (SQLITE_READONLY)"


def test_a_database_path_that_cannot_be_examined_is_not_called_moved(tmp_path, monkeypatch):
    """The commit's check that the file is still the one opened cannot tell when ``stat``
    of the path fails for another reason than its absence (its directory unreadable, an
    NFS hiccup): that is no reason to refuse the writes, which go on being committed."""
    path = tmp_path / "db.sqlite3"
    real_stat = os.stat

    def stat(target, *args, **kwargs):
        if os.fspath(target) == str(path):
            raise PermissionError(13, "Permission denied", str(target))
        return real_stat(target, *args, **kwargs)

    async def go():
        st = SqliteStore(path)
        await st.open()
        await st.create_match(record("m1"))
        monkeypatch.setattr(os, "stat", stat)
        try:
            await st.append_action("m1", ActionRecord(1, 0, "pass"))
        finally:
            monkeypatch.undo()
        await st.close()
        return await stored(path, "m1")

    assert run(go())["m1"][3] == [(1, "pass")]


def test_a_file_the_header_check_cannot_read_is_left_for_sqlite_to_judge(tmp_path, monkeypatch):
    """The header check reads the file without the lock, as a backup would; when it cannot
    (refused, a transient error), SQLite opens the file and says what is wrong with it, if
    anything: a sound database is not refused as "not a SQLite database"."""
    path = tmp_path / "db.sqlite3"
    sqlite_with_matches(path, count=1)

    def refused(name, *args, **kwargs):
        raise PermissionError(13, "Permission denied", str(name))
    monkeypatch.setattr(sqlite_store, "open", refused, raising=False)

    async def go():
        st = SqliteStore(path)
        await st.open()
        got = await st.load_match("m0")
        await st.close()
        return got

    assert run(go()).record.match_id == "m0"


def test_a_schema_script_is_split_into_whole_statements():
    """Semicolons inside comments do not end a statement; a script whose last statement is
    cut short is an error, not a statement quietly dropped."""
    assert sqlite_store._statements("CREATE TABLE a (\n    x  -- one; two\n);\nCREATE TABLE b (y);\n") == [
        "CREATE TABLE a (\n    x  -- one; two\n);", "CREATE TABLE b (y);"]
    with pytest.raises(ValueError, match="incomplete SQL statement"):
        sqlite_store._statements("CREATE TABLE a (x);\nCREATE TABLE b (y)\n")


def test_a_read_queued_behind_an_open_that_fails_is_refused_as_the_store_closed(tmp_path):
    """A read asked for while the store is still opening waits behind the open; when the open
    fails (here: a file that is no database), the read finds no connection. It is refused
    with a StoreError (UNAVAILABLE, counted in store_errors), not an AttributeError on a
    connection that is None (INTERNAL)."""
    path = tmp_path / "db.sqlite3"
    path.write_bytes(b"not a database, " * 64)
    metrics = Metrics()

    async def go():
        st = SqliteStore(path, metrics=metrics)
        return await asyncio.gather(st.open(), st.load_match("m1"), return_exceptions=True)

    opened, read = run(go())
    assert isinstance(opened, NotADatabase)
    assert isinstance(read, StoreError) and str(read) == "the store is closed"
    assert metrics.value("cardgames_store_errors_total", {"operation": "load_match"}) == 1


def test_a_deleted_wal_that_cannot_be_made_again_fails_the_write_and_says_why(tmp_path):
    """The WAL deleted under an open store, and SQLite refusing to leave WAL mode and enter it
    again (here SQLITE_AUTH from an authorizer; a busy reader or a full volume alike): the
    batch just committed may be lost in a crash, so its write is answered with an error
    naming SQLite's reason (which the session layer reads back) and ``db_wal_lost`` is logged
    with it. Once SQLite lets it, the next commit makes the WAL again."""
    path = tmp_path / "db.sqlite3"

    def refuse_journal_mode(action, arg1, *_):
        return sqlite3.SQLITE_DENY if action == sqlite3.SQLITE_PRAGMA and arg1 == "journal_mode" else sqlite3.SQLITE_OK

    async def go():
        st = SqliteStore(path)
        await st.open()
        await st.create_match(record("m1"))
        os.remove(f"{path}-wal")
        os.remove(f"{path}-shm")
        await st._run(lambda: st._conn.set_authorizer(refuse_journal_mode))
        with capture_logs() as logs:
            refused = await asyncio.gather(st.append_action("m1", ActionRecord(1, 0, "pass")),
                                           return_exceptions=True)
        await st._run(lambda: st._conn.set_authorizer(None))
        with capture_logs() as again:
            await st.append_action("m1", ActionRecord(2, 1, "pass"))
        await st.close()
        return refused[0], logs, [(e["event"], e["log_level"]) for e in again]

    refused, logs, again = run(go())
    assert isinstance(refused, StoreError) and "was deleted and cannot be made again" in str(refused)
    assert "(SQLITE_AUTH)" in str(refused)
    lost, = [e for e in logs if e["event"] == "db_wal_lost"]
    assert lost["db"] == str(path) and "(SQLITE_AUTH)" in lost["error"]
    assert lost["log_level"] == "error"  # docs/operations.md, the log's events: an error, a warning
    assert again == [("db_wal_made_again", "warning")]


def test_a_directory_at_the_database_path_is_refused_as_a_directory(tmp_path):
    """A path naming a directory (a volume mounted where the file was expected) is refused
    saying so, not as some other kind of file, and nothing is made in it."""
    with pytest.raises(NotADatabase, match="is a directory, not a SQLite database"):
        run(SqliteStore(tmp_path).open())
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("then", ["commit_refused", "transaction_rolled_back"])
def test_a_write_refused_on_its_own_keeps_its_own_error_when_its_batch_then_fails(tmp_path, then):
    """A write of a group commit refused on its own (here a SequenceConflict: its seq is taken),
    its savepoint undone alone, and then the batch fails for everyone: its COMMIT refused
    (commit_refused), or SQLite rolling back the whole transaction at a later write that
    fills the disk (transaction_rolled_back). The refused write is answered with its own
    error, which says what happened to it (the session layer settles a SequenceConflict by
    reading the match back), not the batch's (_rolled_back: "each with its error"); the
    others get the batch's error."""
    path = tmp_path / "db.sqlite3"

    def orphan(conn):  # checked at the COMMIT, not at the statement
        conn.execute("PRAGMA defer_foreign_keys=ON")
        conn.execute("INSERT INTO decks (match_id, deal, cards) VALUES ('nobody', 0, '[]')")

    async def go():
        st = await _opened_with_matches(path, 2)
        await st.append_action("m1", ActionRecord(1, 0, "pass"))
        if then == "transaction_rolled_back":
            await st.fill_up()
        async with held(st):
            taken = asyncio.ensure_future(st.append_action("m1", ActionRecord(1, 1, "take")))
            if then == "commit_refused":
                failing = asyncio.ensure_future(st._submit(orphan, write=True))
            else:
                failing = asyncio.ensure_future(st.append_action("m2", ActionRecord(1, 0, "x" * BIG)))
            await until_queued(st, 2)
        results = await asyncio.gather(taken, failing, return_exceptions=True)
        await st.close()
        return results, await stored(path, "m1", "m2")

    (taken, failing), final = run(go())
    assert type(taken) is sqlite_store.SequenceConflict, repr(taken)
    assert "has an action at seq 1" in str(taken)
    assert isinstance(failing, StoreError) and type(failing) is not sqlite_store.SequenceConflict
    assert ("commit failed" if then == "commit_refused" else FULL) in str(failing)
    assert final["m1"][3] == [(1, "pass")] and final["m2"][3] == []


def test_three_rescues_in_one_second_are_named_dash_2_and_dash_3(tmp_path, monkeypatch):
    """docs/operations.md (When the database fails): the rescued copy is named for the UTC
    second, ``-2``, ``-3``... after it for a later incident in the same second, never over an
    earlier copy. Three incidents in one second (without narrowing the names a second may
    have, _RESCUES_A_SECOND) make three copies, each holding its own incident's state."""
    path, aside = tmp_path / "db.sqlite3", tmp_path / "aside.sqlite3"
    second = time.gmtime()
    monkeypatch.setattr(time, "gmtime", lambda *_: second)

    async def go():
        st = SqliteStore(path)
        await st.open()
        await st.create_match(record("m1"))
        with capture_logs() as logs:
            for seq in (1, 2, 3):
                os.rename(path, aside)
                await asyncio.gather(st.append_action("m1", ActionRecord(seq, 0, "pass")), return_exceptions=True)
                os.rename(aside, path)
                await st.append_action("m1", ActionRecord(seq, 0, "pass"))
        await st.close()
        moved = [e for e in logs if e["event"] == "db_file_moved"]
        return moved, [await stored(e["rescued"], "m1") for e in moved]

    moved, copies = run(go())
    stamp = f"{path}.rescued-{time.strftime('%Y%m%dT%H%M%SZ', second)}"
    assert [(e["rescued"], e["log_level"]) for e in moved] == [
        (stamp, "error"), (f"{stamp}-2", "error"), (f"{stamp}-3", "error")]
    assert [c["m1"][3] for c in copies] == [[], [(1, "pass")], [(1, "pass"), (2, "pass")]]


def test_a_schema_script_may_end_with_blank_lines():
    """Blank lines after the last statement are no statement cut short (_statements)."""
    assert sqlite_store._statements("CREATE TABLE a (x);\n\n  \n") == ["CREATE TABLE a (x);"]


class _NotAnException(BaseException):
    """Raised by a call on the store's thread: a BaseException that is no Exception."""


def test_a_call_that_raises_a_base_exception_is_answered_and_the_stores_thread_goes_on(tmp_path):
    """Whatever a call run on the store's thread raises, an exception of no Exception class
    included, is delivered to its caller (a read's as it is, a write's as the write's
    StoreError), and the thread goes on serving (the writer thread must outlive any one
    call: a thread ended by it left every later call waiting for ever)."""
    def abort(*_):
        raise _NotAnException("stop")

    async def go():
        st = SqliteStore(tmp_path / "db.sqlite3")
        await st.open()
        await st.create_match(record("m1"))
        answers = []
        for call in (lambda: st._run(abort), lambda: st._submit(abort, write=True)):
            try:
                await asyncio.wait_for(call(), 5)
            except BaseException as exc:  # noqa: BLE001 - what reaches the caller is checked
                answers.append(exc)
            if not st._thread.is_alive():
                return answers, None  # (no close: it would wait for ever)
        await st.append_action("m1", ActionRecord(1, 0, "pass"))
        got = await st.load_match("m1")
        await st.close()
        return answers, [a.seq for a in got.actions]

    answers, seqs = run(go())
    assert seqs is not None, f"the store's thread ended: {answers!r}"
    read, write = answers
    assert type(read) is _NotAnException
    assert type(write) is StoreError and str(write).startswith("write failed: stop")
    assert seqs == [1]


def test_the_wal_of_a_deleted_file_is_deleted_at_close_even_when_its_index_is_gone_already(tmp_path):
    """docs/operations.md (When the database fails): a stopping engine deletes its own
    ``-wal`` and ``-shm`` once its file was deleted, so that the next start does not read them
    as those of the file then at the path. The WAL is what holds the frames; that its index
    (``-shm``) was deleted with the file already does not keep the WAL there."""
    path = tmp_path / "db.sqlite3"

    async def go():
        st = SqliteStore(path)
        await st.open()
        await st.create_match(record("m1"))
        os.remove(path)
        os.remove(f"{path}-shm")
        with capture_logs():
            await asyncio.gather(st.ping(), return_exceptions=True)
            await st.close()
        return sorted(p.name for p in tmp_path.iterdir())

    left = run(go())
    assert "db.sqlite3-wal" not in left and "db.sqlite3-shm" not in left, left


def test_a_write_of_an_event_loop_that_is_gone_does_not_keep_the_other_writes_of_its_commit_unanswered(tmp_path):
    """A group commit's writes are handed to their callers' event loops, one wake-up per loop
    (_deliver); a loop that is gone (closed while its write was queued: here a caller that gave
    up and ended its loop) is skipped, and the writes of the other loops are still answered."""
    path = tmp_path / "db.sqlite3"

    async def go():
        st = await _opened_with_matches(path, 2)
        async with held(st):
            def other_loop() -> None:
                async def gives_up() -> None:
                    try:
                        await asyncio.wait_for(st.append_action("m1", ActionRecord(1, 0, "pass")), 0.05)
                    except asyncio.TimeoutError:
                        pass
                asyncio.run(gives_up())  # its loop closed, its write still queued
            await asyncio.to_thread(other_loop)
            ours = asyncio.ensure_future(st.append_action("m2", ActionRecord(1, 0, "take")))
            await until_queued(st, 2)
        answered, _ = await asyncio.wait([ours], timeout=5)
        if not answered:
            return False, None
        await st.close()
        return True, await stored(path, "m1", "m2")

    answered, final = run(go())
    assert answered, "the write of a loop that is still there was never answered"
    assert final["m2"][3] == [(1, "take")]


def test_a_write_whose_savepoint_cannot_be_released_fails_naming_sqlites_error_code(tmp_path):
    """The release of a write's savepoint refused by SQLite (here the write released it itself;
    in life an I/O error): the write fails, and its error ends with SQLite's error code as
    every SQLite store_write_failed error does (docs/operations.md, the log's events);
    nothing of it is written, and the writer goes on."""
    path = tmp_path / "db.sqlite3"

    def released(conn):
        conn.execute("INSERT INTO decks (match_id, deal, cards) VALUES ('m1', 5, '[]')")
        conn.execute("RELEASE write")

    async def go():
        st = await _opened_with_matches(path, 1)
        refused = await asyncio.gather(st._submit(released, write=True), return_exceptions=True)
        await st.append_action("m1", ActionRecord(1, 0, "pass"))
        decks = await st._run(lambda: st._db().execute("SELECT match_id, deal FROM decks").fetchall())
        await st.close()
        return refused[0], decks, await stored(path, "m1")

    refused, decks, final = run(go())
    assert type(refused) is StoreError
    assert str(refused) == "write failed: no such savepoint: write (SQLITE_ERROR)"
    assert decks == [] and final["m1"][3] == [(1, "pass")]


def test_a_store_whose_open_was_refused_is_not_open_and_opens_once_the_file_is_fixed(tmp_path):
    """Opening an open store does nothing (Store.open), but a store whose open was refused
    (here a file that is no database) is not open: its calls are refused as a closed store's,
    and a later open() of the same store opens the database (it used to keep its thread and
    take the store for open, so that the second open did nothing and every call failed)."""
    path = tmp_path / "db.sqlite3"
    path.write_bytes(b"not a database, " * 64)

    async def go():
        st = SqliteStore(path)
        with pytest.raises(NotADatabase):
            await st.open()
        refused = await asyncio.gather(st.load_match("m1"), return_exceptions=True)
        os.remove(path)
        await st.open()
        await st.create_match(record("m1"))
        got = await st.load_match("m1")
        await st.close()
        return refused[0], got

    refused, got = run(go())
    assert type(refused) is StoreError and str(refused) == "the store is closed"
    assert got is not None and got.record.match_id == "m1"
