"""A PostgreSQL write failing in the middle of its transaction, for real: its statement killed
while it waits (``statement_timeout``, ``pg_terminate_backend``), or its connection dropped.
PostgreSQL aborts the whole transaction on any error (the store uses no savepoints), so the
write is a StoreError and leaves nothing: not the statements before the failing one (a start's
seat), not itself. Each write is a transaction of its own (no group commit, unlike SQLite's
store): the writes of other matches committed meanwhile on other connections are acknowledged
and stay, and the store goes on serving without being reopened."""

from __future__ import annotations

import asyncio
import logging
import time

import psycopg
import pytest

from engine_service.store import ActionRecord, SeatRecord, StoreError
from engine_service.store import postgres
from engine_service.store.postgres import PostgresStore

from .pg import url_with
from .test_pg_commit import _shut
from .test_store import DECK0, record

LAST = SeatRecord(seat=1, player_name="bob", token_hash="t-last", joined_at=6.0)
#: A statement of the store waits for a lock at most this long (the ``statement_timeout`` case).
TIMEOUT_MS = 400


async def _blocked_pid(admin: psycopg.AsyncConnection, relation: str) -> int:
    """The store's session waiting for a lock on ``relation`` (the test holds it)."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        row = await (await admin.execute(
            "SELECT a.pid FROM pg_stat_activity a JOIN pg_locks l ON l.pid = a.pid AND NOT l.granted "
            "WHERE a.application_name = 'cardgames-engine' AND l.relation = to_regclass(%s)",
            (relation,))).fetchone()
        if row:
            return row[0]
        await asyncio.sleep(0.01)
    raise AssertionError(f"no write waited for {relation}")


@pytest.mark.parametrize("how", ["statement_timeout", "terminate", "drop"])
@pytest.mark.parametrize("write", ["start_match", "append_action"])
def test_a_write_killed_mid_transaction_leaves_nothing_and_other_writes_stand(
        write, how, pg_database, pg_schema, monkeypatch):
    """``start_match`` (several statements: the seat, the deck, the status) is stopped at its
    deck, the seat written before it in the same transaction; ``append_action`` (one pipelined
    statement, committed by the Sync that never comes) at its insert. Meanwhile another
    match's action commits on another connection. The stopped write is a StoreError (the
    session layer's UNAVAILABLE), nothing of it is stored once its session has ended, the
    other action is, and the same write then succeeds on the same store."""
    schema, url = pg_schema
    if how == "statement_timeout":
        url = url_with(pg_database.url, schema=schema).replace(
            "options=-csearch_path%3D", f"options=-cstatement_timeout%3D{TIMEOUT_MS}%20-csearch_path%3D")
    transactions: list = []
    init = postgres._Transaction.__init__

    def remember(tx, conn):
        init(tx, conn)
        transactions.append(tx)

    monkeypatch.setattr(postgres._Transaction, "__init__", remember)
    blocked = "decks" if write == "start_match" else "match_actions"

    async def go():
        st = PostgresStore(url)
        await st.open()
        admin_url = url_with(pg_database.url, schema=schema)
        admin = await psycopg.AsyncConnection.connect(admin_url, autocommit=True)
        try:
            await st.create_match(record(status="waiting" if write == "start_match" else "active"))
            await st.create_match(record("m2", status="active"))
            def call():
                if write == "start_match":
                    return st.start_match("m1", [LAST], [DECK0])
                return st.append_action("m1", ActionRecord(1, 0, "pass", client_action_id="c1"))
            async with admin.transaction():
                await admin.execute(f"LOCK TABLE {blocked} IN SHARE MODE")  # inserts wait
                stopped = asyncio.create_task(call())
                pid = await _blocked_pid(admin, blocked)
                if write == "start_match":  # another match's action meanwhile (no deck: not blocked)
                    await st.append_action("m2", ActionRecord(1, 0, "pass", client_action_id="other"))
                if how == "terminate":
                    await admin.execute("SELECT pg_terminate_backend(%s)", (pid,))
                elif how == "drop":
                    _shut(next(tx for tx in transactions if tx.conn.info.backend_pid == pid).conn)
                with pytest.raises(StoreError) as failed:
                    await asyncio.wait_for(stopped, 30)
            # the lock is let go: a dropped session's statement runs on, then finds no client
            # (a cancelled statement's session serves on, its transaction rolled back)
            deadline = time.monotonic() + 10
            while how != "statement_timeout" and (await (await admin.execute(
                    "SELECT count(*) FROM pg_stat_activity WHERE pid = %s", (pid,))).fetchone())[0]:
                assert time.monotonic() < deadline, "the stopped write's session did not end"
                await asyncio.sleep(0.01)
            after = await st.load_match("m1")
            other = await st.load_match("m2")
            while True:  # the store serves on (a lost connection is checked first: a moment)
                try:
                    await call()
                    break
                except StoreError:
                    assert time.monotonic() < deadline, "the store did not serve again"
                    await asyncio.sleep(0.05)
            again = await st.load_match("m1")
            return failed.value, after, other, again
        finally:
            await admin.close()
            await st.close()

    failed, after, other, again = asyncio.run(go())
    assert type(failed) is StoreError, failed
    if how == "statement_timeout":
        assert "canceling statement due to statement timeout" in str(failed)
    if write == "start_match":
        assert after.record.status == "waiting" and after.decks == ()
        assert after.record.seats[1] == SeatRecord(seat=1)  # the seat written before the deck: undone
        assert [a.client_action_id for a in other.actions] == ["other"]  # acknowledged, and it stands
        assert again.record.status == "active" and again.decks == (DECK0,) and again.record.seats[1] == LAST
    else:
        assert after.actions == ()
        assert [a.client_action_id for a in again.actions] == ["c1"]


def _refuse_at_commit(pg_database, schema: str, table: str, errcode: str = "") -> None:
    """A deferred trigger on ``table`` that refuses every write to it at COMMIT ('refused at
    commit', with ``errcode``'s SQLSTATE if given, else plpgsql's raise_exception)."""
    using = f" USING ERRCODE = '{errcode}'" if errcode else ""
    pg_database.execute("CREATE FUNCTION refuse() RETURNS trigger LANGUAGE plpgsql AS "
                        f"$$BEGIN RAISE EXCEPTION 'refused at commit'{using}; END$$", schema=schema)
    pg_database.execute(f"CREATE CONSTRAINT TRIGGER refuse AFTER INSERT OR UPDATE ON {table} "
                        "DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION refuse()", schema=schema)


@pytest.mark.parametrize("pipeline", [True, False])
@pytest.mark.parametrize("write", ["set_status", "save_seat", "append_action"])
def test_a_commit_the_server_refuses_is_a_store_error_saying_why(write, pipeline, pg_database, pg_schema,
                                                                  monkeypatch, caplog):
    """The server refuses the COMMIT itself, on a live connection (here a deferred constraint
    trigger of the test's, run at commit): the write is a StoreError with the server's reason,
    not resolved (the refusal is definite), nothing is stored, and the next write goes through
    at once. A one-statement write, committed by the Sync that ends its pipeline, used to fail
    with psycopg's "cannot exit pipeline mode while busy" (its connection left stuck in the
    pipeline, the reason lost), or now and then with an IndexError of psycopg's; that one is
    now resolved as a commit whose answer was lost (the server says 'aborted')."""
    monkeypatch.setattr(postgres, "PIPELINE", pipeline)
    schema, url = pg_schema
    table = {"set_status": "matches", "save_seat": "seats", "append_action": "match_actions"}[write]

    async def go():
        st = PostgresStore(url)
        await st.open()
        try:
            await st.create_match(record(status="active"))
            _refuse_at_commit(pg_database, schema, table)
            call = {"set_status": lambda: st.set_status("m1", "terminated", {"outcome": "terminated"}, 3.0),
                    "save_seat": lambda: st.save_seat("m1", LAST),
                    "append_action": lambda: st.append_action("m1", ActionRecord(1, 0, "pass"))}[write]
            with pytest.raises(StoreError) as refused:
                await call()
            refused_stored = await st.load_match("m1")
            pg_database.execute(f"DROP TRIGGER refuse ON {table}", schema=schema)
            await call()  # at once: no lost connection to look into
            return refused.value, refused_stored, await st.load_match("m1"), st.commits_resolved
        finally:
            await st.close()

    caplog.set_level(logging.WARNING, logger="psycopg")
    refused, refused_stored, stored, resolved = asyncio.run(go())
    assert type(refused) is StoreError
    # the store closed the refused connection itself: not handed back to the pool still in its
    # pipeline, for the pool to fail to roll back and close
    assert not [r.getMessage() for r in caplog.records
                if "closing returned connection" in r.getMessage() or "error ignored in rollback" in r.getMessage()]
    if resolved:  # psycopg lost count of the Sync's answer (now and then): the server was asked
        assert resolved == {(write, "aborted"): 1} and str(refused).endswith("(not committed)"), refused
        assert pipeline and "the commit's answer could not be read (IndexError" in str(refused), refused
    else:
        assert str(refused).endswith(": refused at commit"), refused
    assert (refused_stored.record.status, refused_stored.record.seats[1], refused_stored.actions) == (
        "active", SeatRecord(seat=1), ())
    assert (stored.record.status, stored.record.seats[1], len(stored.actions)) == {
        "set_status": ("terminated", SeatRecord(seat=1), 0), "save_seat": ("active", LAST, 0),
        "append_action": ("active", SeatRecord(seat=1), 1)}[write]


@pytest.mark.parametrize("pipeline", [True, False])
@pytest.mark.parametrize("write", ["set_status", "append_action"])
def test_a_commit_refused_with_an_operational_error_is_resolved_on_a_connection_of_no_further_use(
        write, pipeline, pg_database, pg_schema, monkeypatch, caplog):
    """The server answers the COMMIT with an error of an operational class (here 57014, what
    a ``statement_timeout`` or a cancel at commit raises; a serialization failure, 40001, is
    one too): taken as possibly in doubt, the commit is resolved (the server says 'aborted':
    a StoreError with the server's reason, nothing stored), on both kinds of write. A
    one-statement write's pipeline, left busy by the refusal, used to go back to the pool
    unresolved, the write failing with psycopg's "cannot exit pipeline mode while busy" (the
    pool then closing the connection it could not reset)."""
    monkeypatch.setattr(postgres, "PIPELINE", pipeline)
    schema, url = pg_schema
    table = {"set_status": "matches", "append_action": "match_actions"}[write]

    async def go():
        st = PostgresStore(url)
        await st.open()
        try:
            await st.create_match(record(status="active"))
            _refuse_at_commit(pg_database, schema, table, errcode="query_canceled")
            call = {"set_status": lambda: st.set_status("m1", "terminated", {"outcome": "terminated"}, 3.0),
                    "append_action": lambda: st.append_action("m1", ActionRecord(1, 0, "pass"))}[write]
            with pytest.raises(StoreError) as refused:
                async with asyncio.timeout(30):  # against a hang only
                    await call()
            refused_stored = await st.load_match("m1")
            pg_database.execute(f"DROP TRIGGER refuse ON {table}", schema=schema)
            await call()
            return refused.value, refused_stored, await st.load_match("m1"), st.commits_resolved
        finally:
            await st.close()

    caplog.set_level(logging.WARNING, logger="psycopg")
    refused, refused_stored, stored, resolved = asyncio.run(go())
    assert resolved == {(write, "aborted"): 1}
    assert str(refused).endswith((": refused at commit (not committed)",  # psycopg's miscount, now and then:
                                  "(IndexError: pop from an empty deque) (not committed)")), refused
    assert not [r.getMessage() for r in caplog.records
                if "closing returned connection" in r.getMessage() or "error ignored in rollback" in r.getMessage()]
    assert (refused_stored.record.status, refused_stored.actions) == ("active", ())
    assert (stored.record.status, len(stored.actions)) == {
        "set_status": ("terminated", 0), "append_action": ("active", 1)}[write]
