"""A PostgreSQL server that hangs under a running store: its processes stopped (SIGSTOP, as a
frozen VM or a host gone without resetting its connections), on a private cluster of the
test's own (tests/store/pg_cluster.py; the suite's shared server is never touched). The kernel
still acknowledges the store's packets, so neither keepalives nor libpq notice: every call is
bounded on the client's side (``call_timeout_s``, short here) and fails within it with a
StoreError, the ownership watchdog too does not hang (writes refused, the server reported
unreachable), nothing acknowledged is missing once the server resumes (SIGCONT), and the store
serves again by itself. Before, a write on a stopped server never returned (40 s and more, and
its cancellation took 10 s more: psycopg's cancel request to a server that does not answer)."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import time

import psycopg
from structlog.testing import capture_logs

from engine_service.observability.metrics import Metrics
from engine_service.store import ActionRecord, DuplicateClientAction, SequenceConflict, StoreError
from engine_service.store import postgres
from engine_service.store.postgres import PostgresStore

from .pg_cluster import PrivateCluster, cluster  # noqa: F401 - the fixture
from .test_store import record

BOUND_S = 1.5  # the store's call_timeout_s in these tests
RESOLVE_S = 1.0



def _server_pids(cluster: PrivateCluster) -> list[int]:
    """The cluster's postmaster (postmaster.pid's first line) and its children, the backends."""
    postmaster = int((cluster.data / "postmaster.pid").read_text().split()[0])
    children = subprocess.run(["pgrep", "-P", str(postmaster)], capture_output=True, text=True).stdout.split()
    return [postmaster, *map(int, children)]


class _Frozen:
    """The server's processes stopped (SIGSTOP) until :meth:`thaw` (SIGCONT), which runs on
    exit in any case: a stopped cluster could not be shut down."""

    def __init__(self, cluster: PrivateCluster) -> None:
        self.pids = _server_pids(cluster)
        for pid in self.pids:
            os.kill(pid, signal.SIGSTOP)

    def thaw(self) -> None:
        pids, self.pids = self.pids, []
        for pid in pids:
            try:
                os.kill(pid, signal.SIGCONT)
            except ProcessLookupError:
                pass

    def __enter__(self) -> "_Frozen":
        return self

    def __exit__(self, *exc: object) -> None:
        self.thaw()


def _action(seq: int) -> ActionRecord:
    return ActionRecord(seq, 0, "pass", client_action_id=f"c{seq}")


async def _timed(call) -> tuple[float, BaseException | None]:
    started = time.monotonic()
    try:
        await call
        return time.monotonic() - started, None
    except BaseException as exc:
        return time.monotonic() - started, exc


def test_a_hung_server_fails_calls_within_the_bound_and_the_store_serves_again_once_it_resumes(cluster):
    """The server's processes are stopped under an open store with acknowledged writes. A write
    and a read started then each fail with a StoreError within the bound (the write's commit
    resolution, bounded too, included), saying the server gave no answer; the watchdog does
    not hang: writes are refused and the server is reported unreachable within a few seconds,
    and calls then fail at once. Once the processes resume, the store writes again by itself
    (no reopening), every acknowledged action is there and the refused ones are not."""
    async def go():
        st = PostgresStore(cluster.url(), Metrics(), call_timeout_s=BOUND_S)
        st.resolve_s = RESOLVE_S
        await st.open()
        try:
            await st.create_match(record(status="active"))
            for seq in (1, 2):
                await st.append_action("m1", _action(seq))
            owner = st._owner
            assert owner is not None and owner.held
            started = time.monotonic()  # two connections in the pool: the read does not wait for one
            while st._pool.get_stats().get("pool_available", 0) < 2:  # type: ignore[union-attr]
                assert time.monotonic() - started < 30  # against a hang only
                await asyncio.gather(*(st.load_match("m1") for _ in range(4)))
            with capture_logs() as logs, _Frozen(cluster) as frozen:
                async with asyncio.timeout(30):  # against a hang only
                    (_, write_err), (_, read_err) = await asyncio.gather(
                        _timed(st.append_action("m1", _action(3))), _timed(st.load_match("m1")))
                assert isinstance(write_err, StoreError), write_err
                assert isinstance(read_err, StoreError), read_err
                for err in (write_err, read_err):  # the bound ended each, nothing else
                    assert "no answer from the server within 1.5 s" in str(err), err
                # the watchdog: writes refused, the server found unreachable, not hung
                started = time.monotonic()
                while owner.unreachable is None:
                    assert time.monotonic() - started < 30, "the watchdog hangs"
                    await asyncio.sleep(0.05)
                assert not owner.held
                # found by the lock's own check, its bound (max(check_s, 1) s) severing it:
                # not by the attempt to take the lock (TIMEOUT_S) nor a cancel request
                assert owner.unreachable.endswith(
                    f"gave no answer within {max(st.ownership_check_s, 1.0):g} s to the check of the lock"), owner.unreachable
                # refused at once for the server known unreachable, not each after its bound
                for call, said in ((st.append_action("m1", _action(3)), "append_action refused"),
                                   (st.load_match("m1"), "load_match failed")):
                    _, err = await _timed(call)
                    assert isinstance(err, StoreError) and str(err) == f"{said}: {owner.unreachable}", err
                frozen.thaw()
                started = time.monotonic()
                while True:  # the store serves again by itself
                    try:
                        await st.append_action("m1", _action(3))
                        break
                    except StoreError:
                        assert time.monotonic() - started < 60, "not written again within 60 s"
                        await asyncio.sleep(0.1)
            stored = await st.load_match("m1")
            assert stored is not None
            assert [a.seq for a in stored.actions] == [1, 2, 3]
            events = [e["event"] for e in logs]
            assert "db_unreachable" in events and "db_ownership_reacquired" in events, events
            assert "db_ownership_lost" not in events, events
        finally:
            await st.close()
    asyncio.run(go())


def test_a_commit_without_an_answer_within_the_bound_is_resolved_not_reported_unwritten(cluster):
    """The COMMIT itself gets no answer within the bound (a deferred trigger sleeping at commit,
    the server otherwise well): the connection is severed and the commit is resolved on a fresh
    connection (``store_commit_resolved``). One that commits while it is asked about is
    acknowledged as usual; one still in progress when the resolution's own bound runs out is a
    StoreError (in doubt: it commits later, and the client's retry with its client_action_id
    finds it), never a write reported done that is not."""
    async def go():
        with psycopg.connect(cluster.url(), autocommit=True) as conn:
            conn.execute("CREATE FUNCTION slow_commit() RETURNS trigger LANGUAGE plpgsql AS $$BEGIN "
                         "PERFORM pg_sleep(CASE NEW.action WHEN 'slow' THEN 1.8 WHEN 'stuck' THEN 4 ELSE 0 END); "
                         "RETURN NULL; END$$")
        st = PostgresStore(cluster.url(), Metrics(), call_timeout_s=1.0)
        st.resolve_s = 2.0
        await st.open()
        try:
            await st.create_match(record(status="active"))
            async with await psycopg.AsyncConnection.connect(cluster.url(), autocommit=True) as conn:
                await conn.execute("CREATE CONSTRAINT TRIGGER slow_commit AFTER INSERT ON match_actions "
                                   "DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION slow_commit()")
            owner = st._owner
            assert owner is not None
            with capture_logs() as logs:
                async with asyncio.timeout(30):  # against a hang only, as below
                    took, err = await _timed(st.append_action("m1", ActionRecord(1, 0, "slow", client_action_id="c1")))
                assert err is None and took >= 1.0, (took, err)  # past the bound: resolved (below)
                started = time.monotonic()
                while not owner.held:  # the lost connection's doubt, answered (the server is well)
                    assert time.monotonic() - started < 30  # against a hang only
                    await asyncio.sleep(0.05)
                async with asyncio.timeout(30):
                    took, err = await _timed(st.append_action("m1", ActionRecord(2, 0, "stuck", client_action_id="c2")))
                # the bound and then the resolution's own: in doubt ("unknown" below), not waited
                # for until the commit (4 s), which would be "committed"
                assert isinstance(err, StoreError) and took >= 2.5, (took, err)
                assert "no answer from the server within 1 s" in str(err)
            outcomes = [e["outcome"] for e in logs if e["event"] == "store_commit_resolved"]
            assert outcomes == ["committed", "unknown"], outcomes
            assert st.commits_resolved[("append_action", "committed")] == 1
            started = time.monotonic()
            while True:  # in doubt: it did commit, later; the client's retry learns so
                try:
                    await st.append_action("m1", ActionRecord(2, 0, "stuck", client_action_id="c2"))
                    raise AssertionError("the retry was written twice")
                except (DuplicateClientAction, SequenceConflict):
                    break
                except StoreError:
                    assert time.monotonic() - started < 60  # against a hang only
                    await asyncio.sleep(0.2)
            stored = await st.load_match("m1")
            assert stored is not None and [a.seq for a in stored.actions] == [1, 2]
        finally:
            await st.close()
    asyncio.run(go())


def test_a_server_that_hangs_as_the_lock_is_taken_back_holds_the_store_no_longer_than_the_bound(
        cluster, monkeypatch):
    """The lock session is lost; the server hangs just as the lock has been taken again, while
    the store checks its idle connections before writes resume. That check ends by the
    ownership's bound: each connection's round trip is bounded by what is left of one deadline
    at most BOUND_S away, and severed (and replaced) when it runs out, not cancelled (the minute
    and more psycopg waited for its cancel request, writes refused and the lock unwatched) nor
    waited for up to the pool's own POOL_TIMEOUT_S; and once the server resumes the store
    serves again with its whole pool (the connections that check had taken out of the pool
    were lost to it for good)."""
    pool_size = 4
    checked: list[postgres.Bound] = []  # the bounds set while the hung server is checked
    checking = [False]

    class Recorded(postgres.Bound):
        def __init__(self, seconds: float) -> None:
            super().__init__(seconds)
            if checking[0]:
                checked.append(self)
    monkeypatch.setattr(postgres, "Bound", Recorded)

    async def go():
        st = PostgresStore(cluster.url(), Metrics(), call_timeout_s=BOUND_S, ownership_check_s=0.5,
                           pool_size=pool_size)
        await st.open()
        try:
            await st.create_match(record(status="active"))
            await st.append_action("m1", _action(1))
            started = time.monotonic()
            while st._pool.get_stats().get("pool_available", 0) < pool_size:  # type: ignore[union-attr]
                assert time.monotonic() - started < 30  # against a hang only
                await asyncio.gather(*(st.load_match("m1") for _ in range(2 * pool_size)))
            owner = st._owner
            assert owner is not None
            check = owner.on_restored
            timed: dict[str, float] = {}

            async def hang_then_check() -> None:  # the first time only
                owner.on_restored = check
                with _Frozen(cluster):
                    checking[0] = True
                    timed["took"], _ = await _timed(check())
                    checking[0] = False
            owner.on_restored = hang_then_check
            with capture_logs() as logs:
                with psycopg.connect(cluster.url(), autocommit=True) as conn:
                    conn.execute("SELECT pg_terminate_backend(%s)", (owner._pid,))
                started = time.monotonic()
                while "took" not in timed:  # bounded by the ownership's bound (<= BOUND_S) itself
                    assert time.monotonic() - started < 60, "the check of the pool hangs"
                    await asyncio.sleep(0.05)
                started = time.monotonic()
                while True:  # the server resumed when the check returned: writes go on
                    try:
                        await st.append_action("m1", _action(2))
                        break
                    except StoreError:
                        assert time.monotonic() - started < 60, "not written again within 60 s"
                        await asyncio.sleep(0.1)
            # the whole pool: pool_size calls at once, each holding its connection a moment
            loads = await asyncio.gather(*(st.load_match("m1") for _ in range(pool_size)))
            stats = st._pool.get_stats()  # type: ignore[union-attr]
            return loads, stats, [e["event"] for e in logs]
        finally:
            await st.close()

    loads, stats, events = asyncio.run(go())
    # the ownership's bound ended the check: every idle connection's round trip bounded by
    # what was left of one deadline (at most BOUND_S away, never the pool's POOL_TIMEOUT_S),
    # and severed when it ran out, the frozen server answering none
    assert checked, "the check bounded no connection"
    assert all(b.seconds <= BOUND_S for b in checked), [b.seconds for b in checked]
    assert all(later.seconds <= earlier.seconds for earlier, later in zip(checked, checked[1:])), \
        [b.seconds for b in checked]
    assert all(b.fired for b in checked), [(b.seconds, b.fired) for b in checked]
    assert all(m is not None and [a.seq for a in m.actions] == [1, 2] for m in loads)
    assert stats["pool_size"] <= pool_size and stats.get("requests_waiting", 0) == 0, stats
    assert "db_ownership_lost" not in events, events


def test_a_server_that_hangs_while_the_schema_is_prepared_fails_the_open_within_the_bound(cluster, monkeypatch):
    """The server hangs once the store has its lock, while the schema is checked: the open
    fails within call_timeout_s, saying the server gave no answer, and lets go of the lock
    (the start used to hang for ever: the statements of the preparation had no bound, only
    its connection, libpq's connect_timeout)."""
    prepare = PostgresStore._prepare_schema
    frozen: list[_Frozen] = []

    async def hang_then_prepare(self, conn):
        frozen.append(_Frozen(cluster))
        return await prepare(self, conn)

    monkeypatch.setattr(PostgresStore, "_prepare_schema", hang_then_prepare)

    async def go():
        st = PostgresStore(cluster.url(), Metrics(), call_timeout_s=BOUND_S)
        try:
            async with asyncio.timeout(30):  # the test's own guard, against a hang only
                return await _timed(st.open())
        finally:
            for f in frozen:
                f.thaw()

    elapsed, err = asyncio.run(go())  # within the test's own guard
    assert isinstance(err, StoreError), err
    assert "cannot prepare" in str(err) and "no answer from the server within 1.5 s" in str(err), err
    assert elapsed < BOUND_S + 2, elapsed  # within the bound, the connection's time included
    monkeypatch.undo()

    async def reopen():  # the lock was let go, the schema prepared on the resumed server
        st = PostgresStore(cluster.url(), Metrics())
        await st.open()
        await st.create_match(record(status="active"))
        await st.close()
    asyncio.run(reopen())
