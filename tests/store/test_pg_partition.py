"""A network partition between a store and its PostgreSQL server (a private cluster of the
test's own, tests/store/pg_cluster.py), played by a TCP proxy that stops forwarding both ways
and keeps every socket open (tests/store/partition.py): no FIN, no RST, every call without
an answer. While the partition lasts, writes are refused (StoreError: UNAVAILABLE for clients)
and the server is reported unreachable; once it ends, by a reset or by the link coming back,
the store takes its lock again by itself and writes again. Its own lock sessions left on the
server, still holding the lock (the server never learnt that the engine left them: the FIN
lost with the link), are known as its own, ended, and never taken for another engine's: the
engine used to stop (``db_ownership_lost``, exit 1) when the session holding the lock was one
whose answer the partition had swallowed, or when its old session ended between its attempt
to take the lock and its question who held it; and it waited, writes refused, for as long as
the server kept its old session. A new engine process cannot know its predecessor's sessions:
it waits, and its refusal says what the operator can do.

The intervals are short here (call_timeout_s 1.5 s, checks every 0.5 s); in production the
check is every 2 s, its bound 2 s, an attempt to take the lock 10 s (docs/operations.md)."""

from __future__ import annotations

import asyncio
import random
import re
import time

import grpc
import psycopg
import pytest
from structlog.testing import capture_logs

from engine_service.store import StoreError, StoreInUse
from engine_service.store import pg_ownership
from engine_service.store.postgres import PostgresStore
from tests.transport.engine_process import Service
from tests.transport.harness import bearer
from tests.transport.players import create_open_match, export_transcript, play_through_outage
from tests.transport.test_process import _stubs

from .partition import PartitionProxy
from .pg_cluster import PrivateCluster, cluster  # noqa: F401 - the fixture
from .test_pg_server_failures import _action, _until_written
from .test_store import record

BOUND_S = 1.5  # call_timeout_s, and the bound of an attempt to take the lock
CHECK_S = 0.5


def _lock_holders(cluster: PrivateCluster) -> list[int]:
    """The server pids holding the ownership lock, asked directly (not through the proxy)."""
    with psycopg.connect(cluster.url(), autocommit=True) as conn:
        return [pid for (pid,) in conn.execute(
            "SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND granted AND classid = %s::oid "
            "AND objsubid = 2", (pg_ownership.OWNER_LOCK_CLASS,)).fetchall()]


def _alive(cluster: PrivateCluster, pid: int) -> bool:
    with psycopg.connect(cluster.url(), autocommit=True) as conn:
        return conn.execute("SELECT count(*) FROM pg_stat_activity WHERE pid = %s", (pid,)).fetchone()[0] == 1


async def _until(predicate, within_s: float, what: str) -> float:
    """Until ``predicate()``; ``within_s`` guards against a hang only (what ended a wait is
    told by the reasons the store gives, not by its time: a loaded machine)."""
    started = time.monotonic()
    while not predicate():
        assert time.monotonic() - started < within_s, f"{what}: not within {within_s} s"
        await asyncio.sleep(0.05)
    return time.monotonic() - started


async def _opened(proxy: PartitionProxy) -> PostgresStore:
    st = PostgresStore(proxy.url(), call_timeout_s=BOUND_S, ownership_check_s=CHECK_S)
    st.resolve_s = 1.0
    await st.open()
    await st.create_match(record(status="active"))
    await st.append_action("m1", _action(1))
    return st


async def _partitioned(st: PostgresStore, proxy: PartitionProxy) -> None:
    """Blackhole the proxy; writes are refused within the bounds, and the server is reported
    unreachable: every call then fails at once. Which bound fired, and that a call was refused
    before it was sent, is told by the errors' text (not by their time: a loaded machine)."""
    owner = st._owner
    assert owner is not None and owner.held
    proxy.blackhole()
    try:  # the first write waits for its answer until the call's bound, or the lock check's
        await st.append_action("m1", _action(2))
        raise AssertionError("written across the partition")
    except StoreError as exc:
        assert re.fullmatch(
            rf"append_action failed on {re.escape(st.where)}: no answer from the server "
            rf"(within {BOUND_S:g} s|\(nor within {max(CHECK_S, 1.0):g} s to the check of this engine's lock\)) "
            r"\(the connection was closed\)", str(exc)), exc
    await _until(lambda: owner.unreachable is not None, 30, "the server reported unreachable")
    # by a bound, named: the check of the lock's, or the attempt to take it again's
    assert re.fullmatch(rf"{re.escape(st.where)} gave no answer within "
                        rf"({max(CHECK_S, 1.0):g} s to the check of the lock|{BOUND_S:g} s)", owner.unreachable), \
        owner.unreachable
    assert not owner.held
    for _ in range(3):
        with pytest.raises(StoreError) as refused:
            await st.append_action("m1", _action(2))
        # refused by the store before any call (the reason it has, the call would have its bound's)
        assert str(refused.value) == f"append_action refused: {owner.unreachable}"


@pytest.mark.parametrize("heal", ["resumed", "reset", "server_expired"])
def test_after_a_partition_the_store_takes_its_lock_back_and_writes_again(cluster, heal):
    """A partition under an open store with acknowledged writes: writes are refused while it
    lasts (at once, once the server is found unreachable), the lock session is left on the
    server, still holding the lock. Then the link comes back (``resumed``: the held bytes
    delivered, the engine's FIN among them), or every connection is reset (``reset``), or the
    server's keepalives ended its side first (``server_expired``: a partition longer than
    their window, SERVER_WINDOW_S). In each case the store has its lock again within a few
    seconds, without being reopened and without taking its old session for another engine,
    and every acknowledged action is there, each once."""
    async def go():
        with PartitionProxy(("127.0.0.1", cluster.port)) as proxy:
            st = await _opened(proxy)
            try:
                old = st._owner._pid
                with capture_logs() as logs:
                    await _partitioned(st, proxy)
                    assert _lock_holders(cluster) == [old]  # the server does not know
                    if heal == "resumed":
                        proxy.heal()
                    elif heal == "reset":
                        proxy.reset()
                    else:
                        proxy.expire_server_side()
                        await _until(lambda: _lock_holders(cluster) == [], 30, "the old session ended")
                        proxy.heal()
                    took = await _until_written(st, 2, 60)
                assert _lock_holders(cluster) == [st._owner._pid] != [old]
                stored = await st.load_match("m1")
                return took, logs, [a.seq for a in stored.actions]
            finally:
                await st.close()

    took, logs, seqs = asyncio.run(go())
    events = [e["event"] for e in logs]
    assert "db_unreachable" in events and "db_ownership_reacquired" in events, events
    assert "db_ownership_lost" not in events, events
    assert seqs == [1, 2]


def test_a_lock_session_left_behind_by_a_partition_is_ended_not_waited_for(cluster):
    """The partition outlasts the engine's end of its lock session (its kernel gave up, the FIN
    never reached the server) but not the server's (keepalives not yet run out, or answered
    by a proxy in between): once the link is back, the lock is held by the engine's own old
    session. The engine knows it for its own (``db_lock_held_by_old_session``), ends it and
    takes the lock again at once; it used to refuse writes until the server ended the session
    (half a minute by its keepalives, never behind a proxy that keeps it open)."""
    async def go():
        with PartitionProxy(("127.0.0.1", cluster.port)) as proxy:
            st = await _opened(proxy)
            try:
                old = st._owner._pid
                with capture_logs() as logs:
                    await _partitioned(st, proxy)
                    proxy.forget_engine_side()
                    proxy.heal()
                    took = await _until_written(st, 2, 60)
                assert not _alive(cluster, old)
                assert _lock_holders(cluster) == [st._owner._pid]
                return took, logs
            finally:
                await st.close()

    took, logs = asyncio.run(go())
    events = [e["event"] for e in logs]
    assert "db_ownership_lost" not in events, events
    held = [e for e in logs if e["event"] == "db_lock_held_by_old_session"]
    assert len(held) == 1 and held[0]["ended"] is True, held
    assert "db_ownership_reacquired" in events, events


def test_a_lock_granted_as_the_partition_begins_is_known_as_this_engines_own(cluster):
    """The lock session is lost (ended on the server) and the partition begins as the store
    takes the lock again: the server grants it to the new session, whose answer never comes
    back (the attempt gives up: ``db_unreachable``). After the heal that session still holds
    the lock. It was never this store's lock session, and the store took it for another
    engine's and stopped (``db_ownership_lost``: exit 1); every session it opened is known as
    its own now, so it is ended and the lock taken again."""
    async def go():
        with PartitionProxy(("127.0.0.1", cluster.port)) as proxy:
            st = await _opened(proxy)
            try:
                owner = st._owner
                lost: list[str] = []
                st.on_ownership_lost = lost.append
                with capture_logs() as logs:
                    proxy.blackhole_after(b"pg_try_advisory_lock")
                    with psycopg.connect(cluster.url(), autocommit=True) as conn:
                        conn.execute("SELECT pg_terminate_backend(%s)", (owner._pid,))
                    await _until(lambda: not proxy.forwarding, 30, "the lock taken again")
                    await _until(lambda: owner.unreachable is not None, 30, "the attempt given up")
                    # at the attempt's own bound, not the lock's TIMEOUT_S (10 s)
                    assert owner.unreachable == f"{st.where} gave no answer within {BOUND_S:g} s", owner.unreachable
                    granted = _lock_holders(cluster)
                    assert len(granted) == 1 and granted[0] != owner._pid  # the server did grant it
                    proxy.forget_engine_side()
                    proxy.heal()
                    await _until_written(st, 2, 60)
                assert not owner.lost and not lost
                assert not _alive(cluster, granted[0])
                return logs
            finally:
                await st.close()

    logs = asyncio.run(go())
    events = [e["event"] for e in logs]
    assert "db_ownership_lost" not in events, events
    held = [e for e in logs if e["event"] == "db_lock_held_by_old_session"]
    assert [e["ended"] for e in held] == [True], held


def test_an_old_session_gone_when_the_holder_is_asked_is_not_another_engine(cluster, monkeypatch):
    """The store's attempt to take its lock again finds it held (by its own old session, still
    ending), and by the time it asks who holds it nobody does. It used to take that for
    another engine (``db_ownership_lost``, exit 1); it tries again and has its lock."""
    async def go():
        st = PostgresStore(cluster.url(), call_timeout_s=BOUND_S, ownership_check_s=CHECK_S)
        await st.open()
        try:
            owner = st._owner
            await st.create_match(record(status="active"))
            await st.append_action("m1", _action(1))
            real_take = owner._try_take
            holder = owner._pid
            raced: list[bool] = []
            kept: list[psycopg.AsyncConnection] = []

            async def take_and_race() -> bool:
                taken = await real_take()
                if not taken and not raced:  # the holder ends between the two questions
                    raced.append(True)
                    with psycopg.connect(cluster.url(), autocommit=True) as conn:
                        conn.execute("SELECT pg_terminate_backend(%s)", (holder,))
                    await _until(lambda: not _alive(cluster, holder), 30, "the old session ended")
                return taken

            async def close_leaving_the_session() -> None:  # its backend not yet gone
                conn, owner._conn = owner._conn, None
                kept.append(conn)

            monkeypatch.setattr(owner, "_try_take", take_and_race)
            monkeypatch.setattr(owner, "_close", close_leaving_the_session)
            monkeypatch.setattr(owner, "_still_held", _false)  # the check: its connection lost
            with capture_logs() as logs:
                await _until(lambda: raced, 30, "the race played")
                monkeypatch.undo()
                await _until_written(st, 2, 60)
            assert not owner.lost
            return logs
        finally:
            await st.close()
            for conn in kept:
                await conn.close()

    logs = asyncio.run(go())
    events = [e["event"] for e in logs]
    assert "db_ownership_lost" not in events and "db_ownership_reacquired" in events, events


async def _false() -> bool:
    return False


def test_a_new_process_is_told_its_predecessors_session_is_stale_and_how_to_end_it(cluster, monkeypatch):
    """The engine process ends while cut off from the server (its lock session stays, the
    server never told): a new process cannot know that session for its predecessor's. It
    waits ``lock_wait_s`` and is refused (exit 2 under serve), the refusal naming the session,
    how long it has sent no query (a running engine checks every CHECK_S) and the statement
    that ends it, having ended nothing itself; after which the new process opens, holding the
    lock in a session of its own."""
    monkeypatch.setattr(pg_ownership, "CHECK_S", 0.2)  # "stale" after 3 checks: 0.6 s here

    async def go():
        with PartitionProxy(("127.0.0.1", cluster.port)) as proxy:
            old = PostgresStore(proxy.url(), call_timeout_s=BOUND_S)
            await old.open()
            old_pid = old._owner._pid
            old._owner._watchdog.cancel()  # the old process is gone: nobody checks its lock
            proxy.blackhole()
            proxy.forget_engine_side()
            proxy.heal()
            new = PostgresStore(cluster.url(), call_timeout_s=BOUND_S, lock_wait_s=1.0)
            started = time.monotonic()
            with capture_logs() as logs, pytest.raises(StoreInUse) as refused:
                await new.open()
            waited = time.monotonic() - started
            # refused, not cut short: the holder was waited for, and it is still there
            assert [e["event"] for e in logs if e["log_level"] == "warning"] == ["db_lock_waiting"], logs
            assert _lock_holders(cluster) == [old_pid] and _alive(cluster, old_pid)
            message = str(refused.value)
            statement = re.search(r"SELECT pg_terminate_backend\(\d+\)", message)
            assert statement, message
            assert statement.group(0) == f"SELECT pg_terminate_backend({old_pid})", message
            with psycopg.connect(cluster.url(), autocommit=True) as conn:  # the operator's turn
                conn.execute(statement.group(0))
            await _until(lambda: not _alive(cluster, old_pid), 30, "the old session ended")
            await new.open()
            new_pid = new._owner._pid
            assert new_pid != old_pid and _lock_holders(cluster) == [new_pid]
            await new.create_match(record(status="active"))
            await new.close()
            return old_pid, waited, message

    old_pid, waited, message = asyncio.run(go())
    assert waited >= 1.0  # lock_wait_s waited out (no upper bound: a loaded machine waits longer)
    assert f"server pid {old_pid}" in message and "one engine per database" in message
    assert f"pg_terminate_backend({old_pid})" in message
    assert re.search(r"no query for \d+ s", message) and "most likely gone" in message, message


def test_the_engines_sessions_ask_the_server_to_end_them_within_the_window(cluster):
    """The server's keepalives and tcp_user_timeout on the lock session: an engine cut off
    from the server loses its lock SERVER_WINDOW_S (25 s) after the server's last packet from
    it, whether the session was idle (keepalives) or its answer in flight (retransmissions,
    which keepalives do not cover: the kernel's default is some fifteen minutes). The pool's
    sessions too, where the server's configuration and the role leave them unset, and an open
    transaction left idle is ended after 1.5 call bounds: a write cut by a partition before its
    COMMIT held its rows, and every later write of its match waited behind it, for as long as
    the server kept the session (the operating system's two hours of keepalives)."""
    names = ("tcp_keepalives_idle", "tcp_keepalives_interval", "tcp_keepalives_count", "tcp_user_timeout",
             "idle_in_transaction_session_timeout")

    async def show(conn) -> dict[str, str]:
        return {name: (await (await conn.execute(f"SHOW {name}")).fetchone())[0] for name in names}

    async def go():
        st = PostgresStore(cluster.url())
        await st.open()
        try:
            lock = await show(st._owner._conn)
            async with st._pool.connection() as conn:
                pooled = await show(conn)
            return lock, pooled
        finally:
            await st.close()

    with psycopg.connect(cluster.url(), autocommit=True) as conn:  # the role's own, kept
        conn.execute("ALTER ROLE postgres SET tcp_keepalives_idle = 60")
    lock, pooled = asyncio.run(go())
    keepalives = {"tcp_keepalives_idle": "10", "tcp_keepalives_interval": "5", "tcp_keepalives_count": "3",
                  "tcp_user_timeout": "25000"}
    assert lock == {**keepalives, "idle_in_transaction_session_timeout": "0"}
    # the pool's sessions too, unless the server or the role says otherwise
    assert pooled == {**keepalives, "tcp_keepalives_idle": "60", "idle_in_transaction_session_timeout": "30s"}
    assert pg_ownership.SERVER_WINDOW_S == 25


def test_serve_rides_out_a_partition_and_takes_its_lock_back(tmp_path, cluster):
    """The real service, its database behind the proxy, a match in play; the link is cut for
    PARTITION_S (production intervals: the lock checked every 2 s, its check bounded at 2 s,
    an attempt to take it at 10 s) and comes back. Once the check of the lock has gone
    unanswered (4 s at most) the server is taken for unreachable and the calls waiting on it
    are severed: clients that retry see UNAVAILABLE (a call waiting on the server when
    the link went may run out its own deadline first; its match used to stay held, every retry
    running out its deadline too, until the call's own bound, 20 s), the engine
    is the same process throughout (no db_ownership_lost, no exit 1), takes its lock back
    (db_ownership_reacquired) and the match goes on; every acknowledged action is stored once."""
    partition_s = 8.0
    with PartitionProxy(("127.0.0.1", cluster.port)) as proxy:
        engine = Service(tmp_path, proxy.url(), "engine")
        codes: list[tuple[str, float]] = []
        phases: dict[str, float] = {}

        async def call(method, request, token):
            while True:
                started = time.monotonic()
                try:
                    return await method(request, metadata=bearer(token), timeout=3)
                except grpc.aio.AioRpcError as exc:
                    codes.append((exc.code().name, started, time.monotonic() - started))
                    assert exc.code() in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED), (
                        exc.code(), exc.details())
                    await asyncio.sleep(0.1)

        async def partition():
            await asyncio.sleep(1.0)
            proxy.blackhole()
            phases["cut"] = time.monotonic()
            await asyncio.sleep(partition_s)
            proxy.heal()
            phases["healed"] = time.monotonic()

        async def go():
            async with grpc.aio.insecure_channel(engine.target) as ch:
                stub, admin = _stubs(ch)
                match_id, tokens = await create_open_match(stub, "japanese_joker")
                acked: list = []
                cut = asyncio.ensure_future(partition())

                def back() -> bool:  # the match has gone on after the heal (the lock taken back)
                    return "healed" in phases and sum(1 for *_, at in acked if at > phases["healed"]) >= 3
                await play_through_outage(stub, match_id, tokens, call, random.Random(1), acked, back)
                await cut
                return acked, await export_transcript(admin, match_id)

        try:
            acked, transcript = asyncio.run(asyncio.wait_for(go(), 45))
            assert engine.proc.poll() is None  # the same process throughout
        finally:
            status = engine.stop()
    assert status == 0
    assert [s for s, *_ in acked] == list(range(1, len(acked) + 1))
    assert [s["action"] for d in transcript["deals"] for s in d["steps"]] == [a for _, a, *_ in acked]
    assert sum(1 for *_, at in acked if at > phases["healed"]) >= 3, acked  # it went on
    # once the check of the lock got no answer (2 s, checked every 2 s), every call fails
    # with UNAVAILABLE (a retried action within 2 s: the session layer's read-back of its
    # match, tried again after 1 s); only one waiting on the server before that may run out
    # its client's deadline
    during = [(code, round(at - phases["cut"], 1)) for code, at, _ in codes if phases["cut"] <= at < phases["healed"]]
    assert "UNAVAILABLE" in [code for code, _ in during], during  # before: deadlines only
    assert all(code == "UNAVAILABLE" for code, at in during if at >= 4.5), during
    events = [line.get("event") for line in engine.lines()]
    assert "db_ownership_lost" not in events and "db_ownership_reacquired" in events, events
    assert "db_unreachable" in events, events


def test_a_write_cut_before_its_commit_does_not_hold_its_match_after_the_heal(cluster):
    """The partition begins as a write's statement has run on the server, before its COMMIT
    (an action, in a pipeline: no idle_in_transaction_session_timeout applies): the call is
    severed and fails, and its session stays on the server, its transaction open, holding the
    row it wrote (the engine's FIN never arrived). Once the link is back the store ends the
    sessions it severed that still wait for it (``store_sessions_ended``) before writes resume,
    and the client's retry of the action is written at once; it used to wait behind that
    transaction and fail at the call's bound, again and again, for as long as the server kept
    the session (its keepalives' window; for ever behind a proxy)."""
    async def go():
        with PartitionProxy(("127.0.0.1", cluster.port)) as proxy:
            st = await _opened(proxy)
            try:
                with capture_logs() as logs:
                    proxy.blackhole_after(b"INSERT INTO match_actions")
                    with pytest.raises(StoreError):
                        await st.append_action("m1", _action(2))
                    with psycopg.connect(cluster.url(), autocommit=True) as conn:
                        stale = [pid for (pid,) in conn.execute(
                            "SELECT pid FROM pg_stat_activity WHERE wait_event = 'ClientRead' "
                            "AND backend_xid IS NOT NULL").fetchall()]
                    assert len(stale) == 1, stale  # its transaction open, waiting for the engine
                    proxy.forget_engine_side()
                    proxy.heal()
                    took = await _until_written(st, 2, 60)
                stored = await st.load_match("m1")
                assert not _alive(cluster, stale[0])
                return took, logs, stale[0], [a.seq for a in stored.actions]
            finally:
                await st.close()

    took, logs, stale, seqs = asyncio.run(go())
    assert seqs == [1, 2]
    ended = [e for e in logs if e["event"] == "store_sessions_ended"]
    assert len(ended) == 1 and stale in ended[0]["server_pids"], ended
