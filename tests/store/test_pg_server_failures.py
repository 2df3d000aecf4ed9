"""The PostgreSQL server stopped, restarted or crashed under a running store and under the real
``serve`` process (a private cluster of the test's own, tests/store/pg_cluster.py: the suite's
shared server is never touched). While the server is down every call fails at once (the
session layer answers UNAVAILABLE, never a deadline that ran out), saying why; nothing
acknowledged is lost; the store reconnects by itself once the server is back, at once and not
after a backoff as long as the outage; a lost connection stops writes until the ownership lock
is checked, so that a second engine that took the lock at the restart is not written beside."""

from __future__ import annotations

import asyncio
import random
import threading
import time

import grpc
import pytest
from structlog.testing import capture_logs

from engine_service.observability.metrics import Metrics
from engine_service.store import ActionRecord, OwnershipLost, StoreError
from engine_service.store.postgres import PostgresStore
from engine_service.transport.generated import card_games_pb2 as pb
from tests.transport.engine_process import Service
from tests.transport.harness import bearer
from tests.transport.players import create_open_match, export_transcript, play_through_outage
from tests.transport.test_process import _stubs

from .pg_cluster import cluster  # noqa: F401 - the fixture
from .test_store import record



def _action(seq: int) -> ActionRecord:
    return ActionRecord(seq, 0, "pass", client_action_id=f"c{seq}")


async def _until_written(st: PostgresStore, seq: int, within_s: float) -> float:
    """Append the action at ``seq`` until it is written; how long that took."""
    started = time.monotonic()
    while True:
        try:
            await st.append_action("m1", _action(seq))
            return time.monotonic() - started
        except StoreError:
            assert time.monotonic() - started < within_s, f"not written within {within_s} s"  # a hang guard
            await asyncio.sleep(0.05)


def _pool_gave_up(caplog) -> bool:
    """Whether the store's pool stopped trying to replace its lost connections
    (psycopg_pool's warning at the end of its ``reconnect_timeout``, RECONNECT_S)."""
    return any(r.name == "psycopg.pool" and "reconnection attempt in pool 'cardgames-store' failed after"
               in r.getMessage() for r in caplog.records)


def test_a_stopped_server_fails_calls_at_once_and_the_store_reconnects_when_it_is_back(cluster, caplog):
    """The server stops (fast shutdown) for 3 s or more under an open store. The write on the dead
    connection fails; from then on every call, a read too, fails at once (it used to wait 10 s
    for a connection the pool could not make: a client with a shorter deadline got
    DEADLINE_EXCEEDED), naming the reason. Once the server is back the store writes again
    without being reopened.

    The pool used to wait out its exponential backoff, 1, 2, 4, 8 s... (some 4 s more here,
    minutes after a long outage): it now gives up replacing its connections after
    RECONNECT_S, and the next call that finds none connects at once. Shown by that give-up
    (the server is started again only once the pool has said it), not by how fast the write
    lands on a loaded machine: a pool still backing off never says it (here: not within 30 s)."""
    caplog.set_level("WARNING", logger="psycopg.pool")

    async def go():
        st = PostgresStore(cluster.url(), Metrics())
        await st.open()
        try:
            await st.create_match(record(status="active"))
            await st.append_action("m1", _action(1))
            with capture_logs() as logs:
                await asyncio.to_thread(cluster.stop, "fast")
                stopped = time.monotonic()
                calls = []
                # 3 s, 3 rounds at least, and until the pool stopped backing off
                while time.monotonic() - stopped < 3 or len(calls) < 6 or not _pool_gave_up(caplog):
                    assert time.monotonic() - stopped < 30, "the pool did not stop trying to reconnect"
                    for call in (lambda: st.append_action("m1", _action(2)), lambda: st.load_match("m1")):
                        started = time.monotonic()
                        with pytest.raises(StoreError) as failed:
                            await call()
                        calls.append((time.monotonic() - started, str(failed.value)))
                    await asyncio.sleep(0.2)
                await asyncio.to_thread(cluster.start)
                await _until_written(st, 2, 60)  # a hang guard
            stored = await st.load_match("m1")
            return calls, stored, logs, st.where
        finally:
            await st.close()

    calls, stored, logs, where = asyncio.run(go())
    assert all("127.0.0.1" in m for _, m in calls)
    # at once: once the first two calls have found the server gone, every call is refused by
    # the store for the reason it knows, before it asks the pool for a connection (which waited
    # 10 s for one it could not make)
    why = f"cannot connect to {where}: "
    for _, message in calls[2:]:
        assert message.startswith((f"append_action refused: {why}", f"load_match failed: {why}")), message
    assert "Connection refused" in calls[-1][1], calls[-1]
    assert [a.seq for a in stored.actions] == [1, 2]
    events = [e["event"] for e in logs]
    assert events.count("db_unreachable") == 1 and "db_ownership_reacquired" in events, events
    reacquired = next(e for e in logs if e["event"] == "db_ownership_reacquired")
    assert reacquired["refused_s"] >= 3


def test_a_ping_is_refused_while_the_server_is_down_and_answers_only_once_writes_would_land(cluster):
    """Store.ping, the heartbeat's probe during an outage (MatchManager._touch_absences): a
    StoreError at once while the server is down (a beat does not hang on it); once it
    answers again, a write lands at once too, so that the outage it says over
    (absence_heartbeat_recovered) is over for writes (the ownership's part: test_postgres)."""
    async def go():
        st = PostgresStore(cluster.url(), Metrics())
        await st.open()
        try:
            await st.create_match(record(status="active"))
            await st.ping()
            with capture_logs():
                await asyncio.to_thread(cluster.stop, "fast")
                refused = []
                for _ in range(3):
                    started = time.monotonic()
                    with pytest.raises(StoreError) as failed:
                        await st.ping()
                    refused.append((time.monotonic() - started, str(failed.value)))
                    await asyncio.sleep(0.2)
                await asyncio.to_thread(cluster.start)
                started = time.monotonic()
                while True:
                    try:
                        await st.ping()
                        break
                    except StoreError:
                        assert time.monotonic() - started < 60, "no answer within 60 s"  # a hang guard
                        await asyncio.sleep(0.05)
                await st.append_action("m1", _action(1))  # at once: no StoreError
            return refused, await st.load_match("m1")
        finally:
            await st.close()

    refused, stored = asyncio.run(go())
    # at once: the first ping fails on its dead connection, the next are refused before any
    # call (no wait for a connection the pool cannot make, nor for a bound)
    assert not any(said in refused[0][1] for said in ("no answer", "couldn't get a connection")), refused
    assert all(m.startswith("ping refused: this engine does not hold") for _, m in refused[1:]), refused
    assert [a.seq for a in stored.actions] == [1]


def test_after_a_server_restart_a_second_engine_that_took_the_lock_is_not_written_beside(cluster):
    """The server restarts (every session ends, the ownership lock with them) and a second
    engine, waiting for the lock, takes it first. The first engine's next write fails on its
    dead connection, and every write after it is refused until the lock is checked: it is the
    other engine's, so the first is told to stop (OwnershipLost). It used to write on over the
    pool's new connections until its watchdog's next check (here set to 60 s, 2 s by
    default), beside the engine that now held the database."""
    told: list[str] = []

    async def go():
        first = PostgresStore(cluster.url(), ownership_check_s=60)
        first.on_ownership_lost = told.append
        await first.open()
        second = None
        try:
            await first.create_match(record(status="active"))
            await first.append_action("m1", _action(1))
            await asyncio.to_thread(cluster.restart, "fast")
            second = PostgresStore(cluster.url(), lock_wait_s=10)
            await second.open()  # the restarted server has no lock: it is the second's now
            outcomes = []
            deadline = time.monotonic() + 5
            while not told and time.monotonic() < deadline:
                try:
                    await first.append_action("m1", _action(2))
                    outcomes.append("written")
                except OwnershipLost:
                    outcomes.append("lost")
                except StoreError:
                    outcomes.append("refused")
                await asyncio.sleep(0.05)
            with pytest.raises(OwnershipLost):
                await first.append_action("m1", _action(2))
            stored = await second.load_match("m1")
            return outcomes, stored
        finally:
            await first.close()
            if second is not None:
                await second.close()

    outcomes, stored = asyncio.run(go())
    assert "written" not in outcomes, outcomes
    assert len(told) == 1 and "this engine stops" in told[0]
    assert [a.seq for a in stored.actions] == [1]


@pytest.mark.parametrize("mode", ["fast", "immediate"])
def test_serve_rides_out_a_server_restart(tmp_path, cluster, mode):
    """The real service with two matches in play; the server is stopped (``fast``: sessions
    told; ``immediate``: a crash, recovery at start) for 2 s and started again. Clients that
    retry a failed call as it was (the same client_action_id) get UNAVAILABLE at once while it
    is down, never a deadline run out; no action acknowledged is lost, none applied twice, the
    matches go on from the same seq, and the engine is the same process throughout (it
    reconnected by itself). The DSN's password is in no log line."""
    password = "pw-not-logged"
    engine = Service(tmp_path, cluster.url(password=password), "engine")
    failures: list[tuple[str, float]] = []
    outage: dict[str, float] = {}

    async def call(method, request, token):
        while True:
            started = time.monotonic()
            try:
                return await method(request, metadata=bearer(token), timeout=5)
            except grpc.aio.AioRpcError as exc:
                failures.append((exc.code().name, time.monotonic() - started))
                assert exc.code() == grpc.StatusCode.UNAVAILABLE, (exc.code(), exc.details())
                await asyncio.sleep(0.1)

    def restart():
        time.sleep(0.5)
        cluster.stop(mode)
        outage["down"] = time.monotonic()
        time.sleep(2)
        cluster.start()
        outage["up"] = time.monotonic()

    async def go():
        async with grpc.aio.insecure_channel(engine.target) as ch:
            stub, admin = _stubs(ch)
            matches = [await create_open_match(stub, "japanese_joker") for _ in range(2)]
            acked: dict[str, list] = {m: [] for m, _ in matches}
            server = threading.Thread(target=restart)
            server.start()
            def back(m: str) -> bool:  # the match has gone on after the restart
                return "up" in outage and sum(1 for *_, at in acked[m] if at > outage["up"]) >= 3
            await asyncio.gather(*(play_through_outage(stub, m, t, call, random.Random(i), acked[m],
                                                       lambda m=m: back(m))
                                   for i, (m, t) in enumerate(matches)))
            await asyncio.to_thread(server.join)
            for m, tokens in matches:  # a retry of the last acknowledged action: the same answer
                seq, action, seat, _ = acked[m][-1]
                retry = await call(stub.SubmitAction, pb.SubmitActionRequest(
                    match_id=m, action=action, expected_seq=seq - 1, client_action_id=f"{seat}-{seq - 1}"),
                    tokens[seat])
                assert (retry.duplicate, retry.seq) == (True, seq)
            transcripts = {m: await export_transcript(admin, m) for m, _ in matches}
            return acked, transcripts

    try:
        acked, transcripts = asyncio.run(asyncio.wait_for(go(), 60))
        assert engine.proc.poll() is None  # the same process throughout
    finally:
        status = engine.stop()
    assert status == 0
    for m, steps in acked.items():
        assert [s for s, *_ in steps] == list(range(1, len(steps) + 1)), steps  # no seq skipped or repeated
        stored = [s["action"] for d in transcripts[m]["deals"] for s in d["steps"]]
        assert stored == [a for _, a, _, _ in steps]  # every acknowledged action, each once
    # never a deadline run out: a call that waited for the server past its 5 s timeout would
    # be DEADLINE_EXCEEDED (the store refuses at once for a server it knows unreachable)
    assert failures and all(code == "UNAVAILABLE" for code, _ in failures), failures
    for steps in acked.values():  # the matches went on after the restart
        assert sum(1 for *_, at in steps if at > outage["up"]) >= 3
    events = [line.get("event") for line in engine.lines()]
    assert "db_unreachable" in events and "db_ownership_reacquired" in events
    assert password not in engine.log_path.read_text()
