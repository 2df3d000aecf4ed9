"""The PostgreSQL store resolves a commit whose answer was lost with its connection: each write
learns its transaction id before it commits, and asks a fresh connection ``pg_xact_status``.

The connection is lost for real (its socket shut down under libpq: the next read sees the
server close it, as when the network or the server goes). "Committed, answer lost": a
deferred constraint trigger of the test's schema makes the COMMIT wait on an advisory lock that
the test holds, the socket is shut while it waits, then the lock is let go and the server
commits. "Not committed": the socket is shut (or the session terminated) before the COMMIT is
sent, and the server rolls the open transaction back."""

from __future__ import annotations

import asyncio
import itertools
import logging
import os
import socket
import time

import psycopg
import pytest
from structlog.testing import capture_logs

from engine_service.observability.metrics import Metrics
from engine_service.store import ActionRecord, DeckRecord, SeatRecord, StoreError
from engine_service.store import postgres
from engine_service.store.postgres import PostgresStore

from .test_store import DECK0, record

LOCK = 4242  # the advisory lock the trigger waits on at COMMIT
TABLES = ("matches", "seats", "match_actions")


def _trigger_sql(schema: str) -> list[str]:
    """A deferred constraint trigger on the tables the writes touch: at COMMIT, each row
    written waits for the shared advisory lock LOCK (free unless the test holds it)."""
    sql = [f'CREATE FUNCTION "{schema}".wait_at_commit() RETURNS trigger LANGUAGE plpgsql AS '
           f"$$BEGIN PERFORM pg_advisory_xact_lock_shared({LOCK}); RETURN NULL; END$$"]
    for table in TABLES:
        sql.append(f'CREATE CONSTRAINT TRIGGER wait_at_commit AFTER INSERT OR UPDATE ON "{schema}".{table} '
                   f'DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION "{schema}".wait_at_commit()')
    return sql


def _shut(conn: psycopg.AsyncConnection) -> None:
    """Lose the connection: its socket shut down both ways under libpq."""
    s = socket.socket(fileno=os.dup(conn.pgconn.socket))
    try:
        s.shutdown(socket.SHUT_RDWR)
    finally:
        s.close()


class _Harness:
    """A store of the test's schema (open, with the trigger), an admin connection, and the
    ``_Transaction.commit`` wrapped so that a test can act on the connection of the next
    write's commit (``on_commit``: ``before``, ``during`` or None)."""

    def __init__(self, pg_database, pg_schema, monkeypatch, **store_options) -> None:
        self.db, (self.schema, self.url) = pg_database, pg_schema
        self.store_options = {"metrics": Metrics(), **store_options}
        self.monkeypatch = monkeypatch
        self.on_commit: str | None = None
        self.pid: int | None = None
        self.commits: list[int] = []

    async def __aenter__(self) -> "_Harness":
        self.store = PostgresStore(self.url, **self.store_options)
        self.store.resolve_s = 2.0
        await self.store.open()
        self.admin = await psycopg.AsyncConnection.connect(self.db.url, autocommit=True)
        for statement in _trigger_sql(self.schema):
            await self.admin.execute(statement)
        original = postgres._Transaction.commit
        harness = self

        async def commit(tx):
            how, harness.on_commit = harness.on_commit, None
            harness.commits.append(tx.conn.info.backend_pid)
            if how == "before":
                _shut(tx.conn)
            elif how == "terminate":
                await harness.admin.execute("SELECT pg_terminate_backend(%s, 5000)",
                                            (tx.conn.info.backend_pid,))
            elif how == "wait":  # the test watches the COMMIT wait
                harness.pid = tx.conn.info.backend_pid
            elif how == "during":
                harness.pid = tx.conn.info.backend_pid
                watcher = asyncio.create_task(harness._shut_when_waiting(tx.conn))
                try:
                    return await original(tx)
                finally:
                    await watcher
            return await original(tx)

        self.monkeypatch.setattr(postgres._Transaction, "commit", commit)
        return self

    async def _shut_when_waiting(self, conn: psycopg.AsyncConnection) -> None:
        """Shut ``conn`` once its session waits for LOCK inside its COMMIT."""
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            row = await (await self.admin.execute(
                "SELECT wait_event FROM pg_stat_activity WHERE pid = %s", (self.pid,))).fetchone()
            if row and row[0] == "advisory":
                _shut(conn)
                return
            await asyncio.sleep(0.01)
        raise AssertionError("the COMMIT never waited for the lock")

    async def __aexit__(self, *exc) -> None:
        await self.admin.close()
        await self.store.close()

    async def hold(self) -> None:
        await self.admin.execute("SELECT pg_advisory_lock(%s)", (LOCK,))

    async def release(self) -> None:
        await self.admin.execute("SELECT pg_advisory_unlock(%s)", (LOCK,))

    async def session_gone(self) -> None:
        """Wait until the write's server session has ended (it committed or rolled back)."""
        for _ in range(500):
            row = await (await self.admin.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE pid = %s", (self.commits[-1],))).fetchone()
            if row[0] == 0:
                return
            await asyncio.sleep(0.01)
        raise AssertionError("the write's session did not end")

    def rows(self, sql: str, *params) -> list[tuple]:
        return self.db.execute(sql, params, schema=self.schema)


SEAT = SeatRecord(seat=1, player_name="ann", token_hash="t1", joined_at=2.0)


async def _committing(h: _Harness, write: asyncio.Task) -> None:
    """Wait until ``write`` is committing (its COMMIT sent, the harness watching it); a write
    that ended before it fails the test here instead of leaving it waiting for ever."""
    async with asyncio.timeout(30):  # against a hang only
        while h.pid is None or not h.commits:
            if write.done():
                await write  # its error, if any
                raise AssertionError("the write ended without committing")
            await asyncio.sleep(0.01)


async def _setup(h: _Harness, operation: str) -> None:
    """The match each operation writes to: waiting, active for an action."""
    if operation == "create_match":
        return
    await h.store.create_match(record(status="active" if operation == "append_action" else "waiting"))


async def _write(h: _Harness, operation: str) -> None:
    st = h.store
    if operation == "create_match":
        await st.create_match(record(), [DECK0])
    elif operation == "append_action":
        await st.append_action("m1", ActionRecord(1, 0, "pass", client_action_id="c1"))
    elif operation == "append_action_with_deck":
        await st.append_action("m1", ActionRecord(1, 0, "pass", client_action_id="c1"),
                               [DeckRecord(1, ("7H",))])
    elif operation == "start_match":
        await st.start_match("m1", [SEAT], [DECK0])
    elif operation == "save_seat":
        await st.save_seat("m1", SEAT)
    elif operation == "set_status":
        await st.set_status("m1", "terminated", {"outcome": "terminated"}, 3.0)


def _written(h: _Harness, operation: str) -> bool:
    """Whether the write landed, checking it landed once (the key's rows)."""
    if operation == "create_match":
        matches = h.rows("SELECT count(*) FROM matches")[0][0]
        assert (h.rows("SELECT count(*) FROM seats")[0][0], h.rows("SELECT count(*) FROM decks")[0][0]) == (
            2 * matches, matches)
        return matches == 1
    if operation.startswith("append_action"):
        rows = h.rows("SELECT seq, client_action_id FROM match_actions WHERE match_id = 'm1'")
        assert rows in ([], [(1, "c1")]), rows
        if operation == "append_action_with_deck":
            assert len(h.rows("SELECT deal FROM decks WHERE match_id = 'm1'")) == len(rows)
        return bool(rows)
    if operation == "start_match":
        status = h.rows("SELECT status FROM matches WHERE match_id = 'm1'")[0][0]
        seat = h.rows("SELECT token_hash FROM seats WHERE match_id = 'm1' AND seat = 1")
        decks = h.rows("SELECT deal FROM decks WHERE match_id = 'm1'")
        started = status == "active"
        assert (seat == [("t1",)] and decks == [(0,)]) == started, (status, seat, decks)
        return started
    if operation == "save_seat":
        return h.rows("SELECT token_hash FROM seats WHERE match_id = 'm1' AND seat = 1") == [("t1",)]
    status = h.rows("SELECT status, ended_at FROM matches WHERE match_id = 'm1'")
    assert status in ([("waiting", None)], [("terminated", 3.0)]), status
    return status[0][0] == "terminated"


OPERATIONS = ["create_match", "append_action", "append_action_with_deck", "start_match", "save_seat",
              "set_status"]


def _resolved_metric(h: _Harness, operation: str, outcome: str) -> float:
    """cardgames_store_commits_resolved_total{operation, outcome}, as the metrics port shows it."""
    metrics = h.store._timer.metrics
    return metrics.value("cardgames_store_commits_resolved_total",
                         {"operation": operation.removesuffix("_with_deck"), "outcome": outcome})


@pytest.mark.parametrize("operation", OPERATIONS)
def test_a_commit_that_happened_but_whose_answer_was_lost_returns_normally(
        operation, pg_database, pg_schema, monkeypatch):
    """The COMMIT waits (the trigger), the connection is lost meanwhile, then the server
    commits: the store asks, sees 'in progress' then 'committed', and the write returns."""
    async def go():
        async with _Harness(pg_database, pg_schema, monkeypatch) as h:
            await _setup(h, operation)
            await h.hold()
            h.on_commit = "during"
            write = asyncio.create_task(_write(h, operation))
            await _committing(h, write)
            await asyncio.sleep(0.3)  # the store is polling: 'in progress'
            assert not write.done()
            with capture_logs() as logs:
                await h.release()
                await asyncio.wait_for(write, 30)  # no StoreError: it committed (a hang guard)
            await h.session_gone()
            return h, logs
    h, logs = asyncio.run(go())
    assert _written(h, operation)
    assert h.store.commits_resolved == {(operation.removesuffix("_with_deck"), "committed"): 1}
    assert _resolved_metric(h, operation, "committed") == 1
    resolved = [e for e in logs if e["event"] == "store_commit_resolved"]
    assert len(resolved) == 1 and resolved[0]["log_level"] == "warning"
    assert resolved[0]["operation"] == operation.removesuffix("_with_deck")
    assert resolved[0]["outcome"] == "committed"


@pytest.mark.parametrize("operation", OPERATIONS)
@pytest.mark.parametrize("how", ["before", "terminate"])
def test_a_commit_that_did_not_happen_is_a_store_error_with_nothing_written(
        operation, how, pg_database, pg_schema, monkeypatch):
    """The connection is lost (shut, or its session terminated) with the transaction open,
    before the COMMIT: the server rolls it back, the store learns 'aborted' and raises. The
    lost connection puts the lock in doubt, as any lost connection does (the server may have
    restarted: writes wait for the lock to be checked)."""
    async def go():
        async with _Harness(pg_database, pg_schema, monkeypatch) as h:
            await _setup(h, operation)
            losses = []
            monkeypatch.setattr(h.store, "_connection_lost", lambda: losses.append(1))
            h.on_commit = how
            with pytest.raises(StoreError, match="not committed"):
                await _write(h, operation)
            await h.session_gone()
            return h, losses
    h, losses = asyncio.run(go())
    assert losses == [1]
    assert not _written(h, operation)
    assert h.store.commits_resolved == {(operation.removesuffix("_with_deck"), "aborted"): 1}
    assert _resolved_metric(h, operation, "aborted") == 1


def test_a_commit_still_in_progress_is_polled_for_a_bounded_time(pg_database, pg_schema, monkeypatch):
    """The COMMIT waits longer than the store asks: after ``resolve_s`` the write is a
    StoreError (in doubt, as before), and the commit may still land later (it does here)."""
    async def go():
        async with _Harness(pg_database, pg_schema, monkeypatch) as h:
            h.store.resolve_s = 0.5
            await _setup(h, "append_action")
            await h.hold()
            h.on_commit = "during"
            started = time.monotonic()
            with pytest.raises(StoreError) as failed:
                async with asyncio.timeout(10):  # against a hang only: the commit is held until released
                    await _write(h, "append_action")
            elapsed = time.monotonic() - started
            landed_before = _written(h, "append_action")
            await h.release()
            await h.session_gone()
            return h, elapsed, failed.value, landed_before
    h, elapsed, failed, landed_before = asyncio.run(go())
    assert elapsed >= 0.5, elapsed  # polled for resolve_s, not given up at the first 'in progress'
    assert "not committed" not in str(failed)
    assert not landed_before and _written(h, "append_action")  # in doubt indeed: it landed after
    assert h.store.commits_resolved == {("append_action", "unknown"): 1}


def test_a_commit_in_progress_is_asked_again_after_each_of_the_waits_of_RESOLVE_POLL_S(
        pg_database, pg_schema, monkeypatch):
    """While the commit stays 'in progress' the store waits between its questions as
    RESOLVE_POLL_S says (the last wait repeated), so that a commit held for all of
    ``resolve_s`` costs a handful of questions, not one per round trip. Counted, not timed:
    a wait only starts before ``resolve_s`` has run out, and the waits before it add up to
    less than that, whatever the machine's pace."""
    taken: list[float] = []
    waits = postgres.RESOLVE_POLL_S

    class _Recorded:
        def __iter__(self):
            for wait in itertools.chain(waits, itertools.repeat(waits[-1])):
                taken.append(wait)
                yield wait
    monkeypatch.setattr(postgres, "RESOLVE_POLL_S", _Recorded())
    resolve_s = 2.0

    async def go():
        async with _Harness(pg_database, pg_schema, monkeypatch) as h:
            h.store.resolve_s = resolve_s
            await _setup(h, "append_action")
            await h.hold()
            h.on_commit = "during"
            with pytest.raises(StoreError):
                async with asyncio.timeout(30):  # against a hang only: the commit is held until released
                    await _write(h, "append_action")
            await h.release()
            await h.session_gone()
            return h
    h = asyncio.run(go())
    assert h.store.commits_resolved == {("append_action", "unknown"): 1}
    # a wait starts only while the waits before it add up to less than resolve_s: 9 here
    # (0.01, 0.02, 0.05, 0.1, 0.2, then 0.5 each)
    schedule = list(itertools.islice(itertools.chain(waits, itertools.repeat(waits[-1])), 100))
    most = next(n for n in itertools.count(1) if sum(schedule[:n]) >= resolve_s)
    assert 1 <= len(taken) <= most, taken


def test_a_store_without_an_ownership_lock_or_metrics_resolves_a_lost_commit(pg_database, pg_schema, monkeypatch):
    """A store opened without the lock (``exclusive=False``: the tools beside an engine) and
    without metrics resolves a lost commit as the engine's does: nobody to ask whether the
    server is unreachable, nothing to count in, the server asked all the same."""
    async def go():
        async with _Harness(pg_database, pg_schema, monkeypatch, metrics=None, exclusive=False) as h:
            assert h.store._owner is None and h.store._timer.metrics is None
            await _setup(h, "set_status")
            h.on_commit = "before"
            with pytest.raises(StoreError, match=r"(?s)set_status failed .*\(not committed\)$"):
                async with asyncio.timeout(30):  # against a hang only
                    await _write(h, "set_status")
            await h.session_gone()
            return h
    h = asyncio.run(go())
    assert not _written(h, "set_status")
    assert h.store.commits_resolved == {("set_status", "aborted"): 1}


def test_a_transaction_its_function_let_fail_is_rolled_back_and_a_store_error(pg_database, pg_schema, monkeypatch):
    """A write function that catches a statement's error and returns (a bug: the transaction
    has failed, so its COMMIT answers ROLLBACK) is a StoreError saying so, never acknowledged
    as written; nothing of it is stored, and nothing is resolved (the answer was not lost)."""
    async def go():
        async with _Harness(pg_database, pg_schema, monkeypatch) as h:
            await _setup(h, "set_status")

            async def fn(tx):
                await tx.begin()
                await tx.conn.execute("UPDATE matches SET status = 'terminated', ended_at = 3.0 "
                                      "WHERE match_id = 'm1'")
                with pytest.raises(psycopg.errors.DivisionByZero):
                    await tx.conn.execute("SELECT 1 / 0")
            with pytest.raises(StoreError, match="set_status failed on .*: the transaction was rolled back"):
                await h.store._write("set_status", fn)
            await h.store.save_seat("m1", SEAT)  # the connection still serves
            return h
    h = asyncio.run(go())
    assert not _written(h, "set_status") and _written(h, "save_seat")
    assert h.store.commits_resolved == {}
    assert h.store._timer.metrics.value("cardgames_store_errors_total", {"operation": "set_status"}) == 1


def test_a_status_question_that_fails_leaves_the_store_error(pg_database, pg_schema, monkeypatch):
    """The fresh connection cannot be made (the server is unreachable): StoreError, as before
    the store resolved anything."""
    async def go():
        async with _Harness(pg_database, pg_schema, monkeypatch) as h:
            await _setup(h, "set_status")
            h.on_commit = "before"
            h.store.resolve_s = 60.0  # a question asked again until then would outlast the guard
            asked: list[str] = []
            unreachable = "host=127.0.0.1 port=1 connect_timeout=2"
            monkeypatch.setattr(h.store, "_conninfo", lambda: asked.append(unreachable) or unreachable)
            with pytest.raises(StoreError, match="set_status failed"):
                async with asyncio.timeout(10):  # against a hang only
                    await _write(h, "set_status")
            return h, asked
    h, asked = asyncio.run(go())
    assert len(asked) == 1, asked  # asked once: a failed question is not asked again
    assert h.store.commits_resolved == {("set_status", "unknown"): 1}
    assert not _written(h, "set_status")


def test_a_status_question_whose_connection_gets_no_answer_within_resolve_s_leaves_the_store_error(
        pg_database, pg_schema, monkeypatch):
    """PostgresStore._resolve: a question that fails, here its connection unanswered until
    ``resolve_s`` ran out (a server that accepts and never replies), leaves the write a
    StoreError, its outcome unknown: not a TimeoutError out of the store."""
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen()  # never accepted: the start-up packet is never answered
        unanswered = f"host=127.0.0.1 port={silent.getsockname()[1]} connect_timeout=30"

        async def go():
            async with _Harness(pg_database, pg_schema, monkeypatch) as h:
                await _setup(h, "set_status")
                h.store.resolve_s = 0.3
                monkeypatch.setattr(h.store, "_conninfo", lambda: unanswered)
                h.on_commit = "before"
                with pytest.raises(StoreError, match="set_status failed"):
                    async with asyncio.timeout(10):  # against a hang only
                        await _write(h, "set_status")
                return h
        h = asyncio.run(go())
    assert h.store.commits_resolved == {("set_status", "unknown"): 1}
    assert not _written(h, "set_status")


def test_a_status_question_the_server_stops_answering_once_connected_ends_at_resolve_s(
        pg_database, pg_schema, monkeypatch):
    """The question's connection is made, then its answer never comes (a partition after the
    connection, here a proxy that holds the answer to pg_xact_status): the question's
    connection is severed once ``resolve_s`` has run out, and the write is a StoreError (its
    outcome unknown), not a call hanging on a server that does not answer."""
    from urllib.parse import urlsplit

    from .partition import PartitionProxy

    upstream = urlsplit(pg_database.url)
    with PartitionProxy((upstream.hostname or "127.0.0.1", upstream.port or 5432)) as proxy:
        proxy.blackhole_after(b"pg_xact_status")
        asked = proxy.url(dbname=upstream.path.lstrip("/"))

        async def go():
            async with _Harness(pg_database, pg_schema, monkeypatch) as h:
                h.store.resolve_s = 1.0
                await _setup(h, "set_status")
                monkeypatch.setattr(h.store, "_conninfo", lambda: asked)
                h.on_commit = "before"
                with pytest.raises(StoreError) as failed:
                    async with asyncio.timeout(30):  # against a hang only
                        await _write(h, "set_status")
                assert not proxy.forwarding  # the question was sent, and its answer held
                return h, failed.value
        h, failed = asyncio.run(go())
    assert "not committed" not in str(failed)
    assert h.store.commits_resolved == {("set_status", "unknown"): 1}
    assert not _written(h, "set_status")


def test_a_lost_commit_is_not_asked_about_while_the_server_is_known_unreachable(
        pg_database, pg_schema, monkeypatch):
    """A commit lost while the server is taken for unreachable (the lock's check went
    unanswered: a partition, whose calls are then cut) is not asked about: nobody could
    answer, and the question would hold its match ``resolve_s`` more. The write is a
    StoreError at once, its outcome unknown (the client's retry settles it)."""
    async def go():
        async with _Harness(pg_database, pg_schema, monkeypatch, ownership_check_s=60.0) as h:
            await _setup(h, "set_status")
            asked = []
            monkeypatch.setattr(h.store, "_conninfo", lambda: asked.append(1) or "host=127.0.0.1 port=1")
            owner = h.store._owner
            assert owner is not None and owner.held
            owner.unreachable = "the server gave no answer (as the watchdog would say)"
            h.on_commit = "before"
            with pytest.raises(StoreError) as failed:
                async with asyncio.timeout(30):  # against a hang only
                    await _write(h, "set_status")
            owner.unreachable = None
            await h.session_gone()
            return h, failed.value, asked
    h, failed, asked = asyncio.run(go())
    assert asked == []
    assert "not committed" not in str(failed)
    assert h.store.commits_resolved == {("set_status", "unknown"): 1}
    assert not _written(h, "set_status")


def test_refusals_are_not_resolved(pg_database, pg_schema, monkeypatch, caplog):
    """A write the server refuses (a key taken, no such match) raises as before, without
    asking anything: its connection is fine and the refusal definite, and it is kept (rolled
    back, not closed for the pool to discard and replace)."""
    from engine_service.store import DuplicateClientAction, MatchNotWaiting, SequenceConflict, UnknownMatch

    async def go():
        async with _Harness(pg_database, pg_schema, monkeypatch) as h:
            st = h.store
            await st.create_match(record(status="active"))
            await st.append_action("m1", ActionRecord(1, 0, "pass", client_action_id="c1"))
            with pytest.raises(DuplicateClientAction):
                await st.append_action("m1", ActionRecord(2, 0, "pass", client_action_id="c1"))
            with pytest.raises(SequenceConflict):
                await st.append_action("m1", ActionRecord(1, 0, "take"))
            with pytest.raises(UnknownMatch):
                await st.set_status("nope", "finished")
            with pytest.raises(UnknownMatch):
                await st.save_seat("nope", SEAT)
            with pytest.raises(MatchNotWaiting):
                await st.start_match("m1", [SEAT])
            await st.append_action("m1", ActionRecord(2, 0, "take"))  # the connection still serves
            return h
    caplog.set_level(logging.WARNING, logger="psycopg")
    h = asyncio.run(go())
    assert not [r.getMessage() for r in caplog.records if "discarding closed connection" in r.getMessage()]
    assert h.store.commits_resolved == {}
    assert h.rows("SELECT seq FROM match_actions ORDER BY seq") == [(1,), (2,)]


def test_without_pipeline_mode_a_lost_commit_is_resolved_the_same(pg_database, pg_schema, monkeypatch):
    """With a libpq older than 14 (no pipeline mode) a one-statement write is an explicit
    transaction: its lost commit is resolved the same way."""
    monkeypatch.setattr(postgres, "PIPELINE", False)
    test_a_commit_that_happened_but_whose_answer_was_lost_returns_normally(
        "set_status", pg_database, pg_schema, monkeypatch)


def test_a_write_failing_after_its_statement_wrote_is_rolled_back(pg_database, pg_schema, monkeypatch):
    """A one-statement write whose function fails after the statement wrote (a bug; the
    Sync alone would commit the implicit transaction) is rolled back."""
    original = postgres._Transaction._xid

    def failing(tx, rows):
        original(tx, rows)
        raise RuntimeError("after the statement")

    async def go():
        async with _Harness(pg_database, pg_schema, monkeypatch) as h:
            await _setup(h, "set_status")
            monkeypatch.setattr(postgres._Transaction, "_xid", failing)
            with pytest.raises(StoreError, match="after the statement"):
                await _write(h, "set_status")
            monkeypatch.setattr(postgres._Transaction, "_xid", original)
            await h.store.save_seat("m1", SEAT)  # the connection still serves
            return h
    h = asyncio.run(go())
    assert not _written(h, "set_status") and _written(h, "save_seat")



def test_a_write_whose_first_statement_returned_no_id_asks_for_it_before_committing(
        pg_database, pg_schema, monkeypatch):
    """A transaction whose first statement returned no row (so no id) and whose later
    statements wrote: the id is asked before the COMMIT, so that a commit whose answer was
    lost is resolved (here: committed, the write returns what its function returned, as a
    retention batch returns what it deleted) instead of left unknown."""
    async def go():
        async with _Harness(pg_database, pg_schema, monkeypatch) as h:
            await _setup(h, "set_status")

            async def fn(tx):
                assert await tx.begin(f"SELECT {postgres.XID} WHERE false") == []
                await tx.conn.execute("UPDATE matches SET status = 'terminated', ended_at = 3.0 "
                                      "WHERE match_id = 'm1'")
                return "the function's result"
            await h.hold()
            h.on_commit = "during"
            write = asyncio.create_task(h.store._write("set_status", fn))
            await _committing(h, write)
            await asyncio.sleep(0.3)  # the store is polling: 'in progress'
            await h.release()
            # no StoreError: it committed
            assert await asyncio.wait_for(write, 30) == "the function's result"  # 30: against a hang only
            await h.session_gone()
            return h
    h = asyncio.run(go())
    assert _written(h, "set_status")
    assert h.store.commits_resolved == {("set_status", "committed"): 1}


def test_a_sync_whose_answer_psycopg_lost_count_of_is_resolved_on_a_closed_connection(
        pg_database, pg_schema, monkeypatch):
    """psycopg now and then raises an IndexError ("pop from an empty deque") at the Sync that
    ends a one-statement write's pipeline, the connection not lost: the store closes that
    connection (so the server rolls back whatever was not committed) and resolves the commit,
    which did not happen: a StoreError, nothing written, the next write goes through."""
    async def go():
        async with _Harness(pg_database, pg_schema, monkeypatch) as h:
            await _setup(h, "set_status")
            h.store.resolve_s = 2.0
            conns = []

            class _LostCount:
                """The pipeline's exit as psycopg's miscount raises it (the pipeline kept open)."""
                def __init__(self, pipeline):
                    self.pipeline = pipeline

                async def aclose(self):
                    raise IndexError("pop from an empty deque")

            async def fn(tx):
                rows = await tx.write(f"{PostgresStore._SET_STATUS} RETURNING {postgres.XID}",
                                      ("terminated", None, 3.0, None, "m1"))
                assert rows == [()]
                conns.append(tx.conn)
                tx._pipeline = _LostCount(tx._pipeline)
            with pytest.raises(StoreError, match=r"could not be read \(IndexError.*\(not committed\)"):
                async with asyncio.timeout(10):  # against a hang only
                    await h.store._write("set_status", fn)
            assert conns[0].closed
            await h.store.save_seat("m1", SEAT)
            return h
    h = asyncio.run(go())
    assert not _written(h, "set_status") and _written(h, "save_seat")
    assert h.store.commits_resolved == {("set_status", "aborted"): 1}


def test_psycopg_losing_count_on_a_lost_connection_is_a_lost_connection(pg_database, pg_schema, monkeypatch):
    """psycopg's IndexError at the Sync with the connection lost under it: the store treats
    the loss as any lost connection (:meth:`PostgresStore._connection_lost`: the lock is
    doubted), which closing the connection itself would hide (a closed connection is not
    ``broken``), and resolves the commit, which did not happen."""
    async def go():
        async with _Harness(pg_database, pg_schema, monkeypatch) as h:
            await _setup(h, "set_status")
            losses = []
            monkeypatch.setattr(h.store, "_connection_lost", lambda: losses.append(1))

            class _LostCountOnALostConnection:
                def __init__(self, tx):
                    self.tx, self.pipeline = tx, tx._pipeline

                async def aclose(self):
                    _shut(self.tx.conn)
                    with pytest.raises(psycopg.OperationalError):
                        await self.pipeline.aclose()
                    assert self.tx.conn.broken
                    raise IndexError("pop from an empty deque")

            async def fn(tx):
                await tx.write(f"{PostgresStore._SET_STATUS} RETURNING {postgres.XID}",
                               ("terminated", None, 3.0, None, "m1"))
                h.commits.append(tx.conn.info.backend_pid)
                tx._pipeline = _LostCountOnALostConnection(tx)
            with pytest.raises(StoreError, match=r"IndexError: pop from an empty deque \(not committed\)"):
                async with asyncio.timeout(10):  # against a hang only
                    await h.store._write("set_status", fn)
            await h.session_gone()
            return h, losses
    h, losses = asyncio.run(go())
    assert losses == [1]
    assert not _written(h, "set_status")
    assert h.store.commits_resolved == {("set_status", "aborted"): 1}


def test_a_write_cancelled_while_its_statement_waits_ends_at_once_and_writes_nothing(
        pg_database, pg_schema, monkeypatch):
    """A one-statement write cancelled while its statement waits for a row lock: its
    connection is closed (the sure rollback), so the cancellation ends at once rather than
    waiting out the lock for the pipeline's Sync, which would then commit the write."""
    async def go():
        async with _Harness(pg_database, pg_schema, monkeypatch) as h:
            await _setup(h, "set_status")
            locker = await psycopg.AsyncConnection.connect(h.url)
            try:
                await locker.execute("SELECT 1 FROM matches WHERE match_id = 'm1' FOR UPDATE")
                write = asyncio.create_task(_write(h, "set_status"))
                for _ in range(1000):
                    row = await (await h.admin.execute(
                        "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
                        "AND datname = current_database()")).fetchone()
                    if row[0]:
                        break
                    await asyncio.sleep(0.01)
                else:
                    raise AssertionError("the write never waited for the lock")
                write.cancel()
                done, _ = await asyncio.wait({write}, timeout=30)  # against a hang only
                assert done and write.cancelled()
            finally:
                await locker.rollback()
                await locker.close()
            await h.store.save_seat("m1", SEAT)  # the store serves on
            return h
    h = asyncio.run(go())
    assert not _written(h, "set_status") and _written(h, "save_seat")


@pytest.mark.parametrize("pipeline", [True, False])
def test_a_write_cancelled_while_its_commit_waits_stays_cancelled(pipeline, pg_database, pg_schema, monkeypatch):
    """A write cancelled while its COMMIT waits (a caller gone, a drain) is cancelled: never
    reported written (its outcome is in doubt, and nobody is left to resolve it), nothing
    counted as resolved; the store serves on. A one-statement write's pipeline, cancelled
    while its Sync waited, used to end in a StoreError instead ("cannot exit pipeline mode
    while busy", as psycopg reports that cancellation), the cancellation swallowed."""
    monkeypatch.setattr(postgres, "PIPELINE", pipeline)

    async def go():
        async with _Harness(pg_database, pg_schema, monkeypatch) as h:
            await _setup(h, "set_status")
            await h.hold()
            h.on_commit = "wait"
            write = asyncio.create_task(_write(h, "set_status"))
            await _committing(h, write)
            async with asyncio.timeout(30):  # against a hang only
                while True:  # the COMMIT waits for LOCK
                    row = await (await h.admin.execute(
                        "SELECT wait_event FROM pg_stat_activity WHERE pid = %s", (h.pid,))).fetchone()
                    if row and row[0] == "advisory":
                        break
                    await asyncio.sleep(0.01)
            write.cancel()
            done, _ = await asyncio.wait({write}, timeout=30)  # against a hang only
            assert done and write.cancelled(), write
            await h.release()
            await h.session_gone()
            await h.store.save_seat("m1", SEAT)  # the store serves on
            return h
    h = asyncio.run(go())
    assert h.store.commits_resolved == {}
    assert _written(h, "save_seat")

