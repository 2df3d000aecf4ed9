"""Whole matches on the PostgreSQL store, above the store: the session layer and the real
``serve`` process (``CARDGAMES_DB=postgresql://...``) crash and come back on the same database,
resume every match at the same sequence number, recognise retried actions, and play on to the
end; seat tokens are stored as hashes only, and the DSN's password never reaches a log line."""

from __future__ import annotations

import random

import grpc
import pytest

from engine_service.observability.metrics import Metrics
from engine_service.sessions.manager import MatchManager
from engine_service.sessions.tokens import token_hash
from engine_service.store.postgres import PostgresStore
from engine_service.transport.generated import card_games_pb2 as pb, match_pb2
from tests.sessions.helpers import GAMES, config
from tests.sessions.helpers import run as run_session
from tests.sessions.test_leave_retry import repeated_leaves_after_a_restart
from tests.sessions.test_restart import assert_resumed_exactly, away_before_a_drain, first_life, second_life
from tests.transport.harness import bearer
from tests.transport.harness import run as run_grpc
from tests.transport.players import create_open_match, export_transcript
from tests.transport.engine_process import Service
from tests.transport.test_process import _play, _stubs

from .pg import url_with
from .test_ownership import take_over


def pg_manager(url: str) -> MatchManager:
    """A manager whose store comes from its configuration, as the service builds it."""
    return MatchManager(config(db_path=url), metrics=Metrics(), create_bot_host=False)


@pytest.mark.parametrize("game_id", GAMES)
def test_a_crashed_manager_resumes_exactly_on_postgres(game_id, pg_database, pg_schema):
    schema, url = pg_schema
    half = {"georgian_joker": 150}.get(game_id, 60)
    first = pg_manager(url)
    assert isinstance(first._store, PostgresStore)
    lived = run_session(first_life(first, game_id, half))
    match_id, tokens, views, _, last = lived
    assert views[0].seq == half
    resumed = run_session(second_life(pg_manager(url), match_id, tokens, last))
    assert_resumed_exactly(lived, resumed, half)
    final = resumed[3]
    rows = pg_database.execute("SELECT token_hash FROM seats WHERE match_id = %s ORDER BY seat",
                               (match_id,), schema=schema)
    assert [h for (h,) in rows] == [token_hash(t) for t in tokens]  # hashes, never the tokens
    (count,) = pg_database.execute("SELECT count(*) FROM match_actions WHERE match_id = %s",
                                   (match_id,), schema=schema)[0]
    assert count == final.seq


def test_a_repeated_leave_after_a_restart_answers_ok_on_postgres(pg_schema):
    """tests/sessions/test_leave_retry.py: a resignation's and a Georgian Joker leave's
    retries after a crash are answered OK from what the PostgreSQL store kept."""
    _, url = pg_schema
    repeated_leaves_after_a_restart(
        lambda metrics: MatchManager(config(db_path=url), metrics=metrics, create_bot_host=False))


def test_a_player_away_before_a_drain_gets_only_the_rest_of_the_grace_window_on_postgres(pg_schema):
    """tests/sessions/test_restart.py: the absence recorded in the PostgreSQL store (schema 8)
    and the drain's last record give an away player only the rest of the window."""
    _, url = pg_schema
    away_before_a_drain(lambda: MatchManager(config(db_path=url, time_scale=0.01), metrics=Metrics(),
                                             create_bot_host=False))


def test_serve_on_postgres_survives_kill_9(tmp_path, pg_database, pg_schema):
    """``python -m engine_service serve`` with ``CARDGAMES_DB=postgresql://...``: killed with
    SIGKILL mid-match, a new process on the same database resumes at the same seq."""
    schema, _ = pg_schema
    password = "pw-never-logged"  # the test server trusts local connections: never checked
    url = url_with(pg_database.url.replace("://postgres@", f"://postgres:{password}@"), schema=schema)
    assert password in url
    first = Service(tmp_path, url, "first")
    acked: list[tuple[int, str, int]] = []
    try:
        async def before_crash():
            async with grpc.aio.insecure_channel(first.target) as ch:
                stub, _ = _stubs(ch)
                match_id, tokens = await create_open_match(stub, "japanese_joker")
                await _play(stub, match_id, tokens, random.Random(7), 40, acked)
                views = [(await stub.GetView(pb.GetViewRequest(match_id=match_id), metadata=bearer(t))).view
                         for t in tokens]
                return match_id, tokens, views
        match_id, tokens, views_before = run_grpc(before_crash)()
    finally:
        first.proc.kill()  # kill -9: no drain, no close of the pool
        first.proc.wait(10)
        first._log.close()
    assert acked[-1][0] == 40

    second = Service(tmp_path, url, "second")
    try:
        async def after_restart():
            async with grpc.aio.insecure_channel(second.target) as ch:
                stub, admin = _stubs(ch)
                for token, before in zip(tokens, views_before):
                    after = (await stub.GetView(pb.GetViewRequest(match_id=match_id), metadata=bearer(token))).view
                    assert after.seq == before.seq == 40
                    assert [c.code for c in after.hand] == [c.code for c in before.hand]
                    assert [a.notation for a in after.legal_actions] == [a.notation for a in before.legal_actions]
                seq, action, seat = acked[-1]
                retry = await stub.SubmitAction(pb.SubmitActionRequest(
                    match_id=match_id, action=action, expected_seq=seq - 1,
                    client_action_id=f"{seat}-{seq - 1}"), metadata=bearer(tokens[seat]))
                assert (retry.duplicate, retry.seq) == (True, seq)
                final = await _play(stub, match_id, tokens, random.Random(8), None, acked)
                assert final.over and final.status == match_pb2.MATCH_STATUS_FINISHED
                return await export_transcript(admin, match_id)
        data = run_grpc(after_restart)()
    finally:
        assert second.stop() == 0
    steps = [s["action"] for d in data["deals"] for s in d["steps"]]
    assert [a for _, a, _ in acked] == steps
    assert any(line.get("event") == "match_resumed" for line in second.lines())
    started = [line for line in first.lines() + second.lines() if line.get("event") == "starting"]
    assert len(started) == 2 and all(line["db"].startswith("postgresql://postgres:***@") for line in started)
    for log in (first.log_path, second.log_path):
        assert password not in log.read_text()
    assert pg_database.execute("SELECT status FROM matches WHERE match_id = %s", (match_id,),
                               schema=schema) == [("finished",)]


def test_serve_stops_with_status_1_when_another_engine_takes_its_database(tmp_path, pg_database, pg_schema):
    """The engine's lock session ends (here: terminated by an operator) and another engine takes
    the lock before this one could take it again: it logs why, drains and exits 1, so that its
    orchestrator restarts it into waiting for the lock (engine_service.store.pg_ownership)."""
    schema, url = pg_schema
    engine = Service(tmp_path, url, "engine")
    other = None
    try:
        other = take_over(pg_database, schema)
        status = engine.proc.wait(30)
    finally:
        if engine.proc.poll() is None:
            engine.proc.kill()
            engine.proc.wait(10)
        engine._log.close()
        if other is not None:
            other.close()
    events = [line.get("event") for line in engine.lines()]
    assert status == 1
    assert "db_ownership_lost" in events and "stopping_ownership_lost" in events
    assert events.index("stopping_ownership_lost") < events.index("sessions_drained") < events.index("exit")
    assert engine.lines()[-1] == {**engine.lines()[-1], "event": "exit", "status": 1}


def test_a_create_retried_after_a_crash_gets_its_match_on_postgres(pg_database, pg_schema):
    """CreateMatch's client_create_id on PostgreSQL: the engine died after the commit (the
    answer was lost with it); the retry against the restarted engine gets the same match, two
    calls with a new id at once make one match, the same id with another request is refused;
    the table holds the id's hash, never the id."""
    import asyncio
    import uuid

    from tests.crash import crash
    from engine_service.sessions.api import CreateMatchRequest, SessionError
    from engine_service.sessions.tokens import create_id_hash

    schema, url = pg_schema
    key, other = str(uuid.uuid4()), str(uuid.uuid4())

    def req(k, **fields):
        return CreateMatchRequest(**{"game": "klaberjass", "name": "table", "client_create_id": k, **fields})

    async def first_life():
        mgr = pg_manager(url)
        await mgr.start()
        summary = await mgr.create_match(req(key))
        crash(mgr._store)
        return summary.match_id

    async def second_life():
        mgr = pg_manager(url)
        await mgr.start()
        try:
            again = await mgr.create_match(req(key))
            both = await asyncio.gather(mgr.create_match(req(other)), mgr.create_match(req(other)))
            try:
                await mgr.create_match(req(key, listed=True))
                error = None
            except SessionError as exc:
                error = exc
            return again, both, error
        finally:
            await mgr.close()

    match_id = run_session(first_life())
    again, both, error = run_session(second_life())
    assert again.match_id == match_id and again.status == "waiting"
    assert both[0].match_id == both[1].match_id != match_id
    assert (error.code, error.reason) == ("ALREADY_EXISTS", "CLIENT_CREATE_ID_IN_USE")
    rows = pg_database.execute("SELECT match_id, create_hash FROM matches ORDER BY created_at", schema=schema)
    assert rows == [(match_id, create_id_hash(key)), (both[0].match_id, create_id_hash(other))]
    dump = repr(pg_database.execute("SELECT * FROM matches", schema=schema))
    assert key not in dump and other not in dump


def test_a_match_id_no_match_can_have_is_not_found_on_postgres(pg_schema):
    """A match id holding a NUL (protobuf strings may): PostgreSQL refuses it as a text
    parameter, and the call was UNAVAILABLE / STORE_UNAVAILABLE (which a client retries) with
    a store failure logged; it is NOT_FOUND, as on SQLite, and the store is not asked."""
    from engine_service.sessions.api import Principal, SessionError

    _, url = pg_schema

    async def scenario():
        mgr = pg_manager(url)
        await mgr.start()
        errors = []
        try:
            for call in (lambda i: mgr.get_match(i), lambda i: mgr.inspect_match(i),
                         lambda i: mgr.export_transcript(i), lambda i: mgr.reveal_deals(i, Principal("admin"))):
                for match_id in ("m\x00atch", "\x00", "match\n"):
                    try:
                        await call(match_id)
                    except SessionError as exc:
                        errors.append((exc.code, exc.reason))
        finally:
            await mgr.close()
        return errors

    assert run_session(scenario()) == [("NOT_FOUND", "MATCH_NOT_FOUND")] * 12
