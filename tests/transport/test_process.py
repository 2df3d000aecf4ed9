"""``python -m engine_service serve`` as a real process: crash recovery after kill -9 on the
same SQLite database, health and reflection, settings from CARDGAMES_* variables, the metrics
endpoint, JSON logs (fields present, no token, no hidden card) and the SIGTERM drain (exit 0)."""

from __future__ import annotations

import asyncio
import json
import os
import random
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

from engine_service.store import SqliteStore
from engine_service.transport.generated import (admin_pb2_grpc, card_games_pb2 as pb,
                                                card_games_pb2_grpc, match_pb2)
from tests.rules.playout import cards_in

from .engine_process import Service
from .harness import ADMIN_TOKEN, bearer, expect_error, run
from .players import SPECTATOR, create_open_match, export_transcript, truth_by_seq

REPO = Path(__file__).resolve().parents[2]


def _stubs(channel):
    return card_games_pb2_grpc.CardGamesServiceStub(channel), admin_pb2_grpc.AdminServiceStub(channel)


async def _play(stub, match_id: str, tokens: list[str], rng: random.Random, limit: int | None,
                acked: list[tuple[int, str, int]]) -> match_pb2.View:
    """Per-seat clients take turns until ``limit`` actions or the end; returns the last view."""
    while limit is None or limit > 0:
        view = (await stub.GetView(pb.GetViewRequest(match_id=match_id), metadata=bearer(tokens[0]))).view
        if view.status != match_pb2.MATCH_STATUS_ACTIVE:
            return view
        seat = view.to_act
        mine = (await stub.GetView(pb.GetViewRequest(match_id=match_id), metadata=bearer(tokens[seat]))).view
        action = rng.choice(list(mine.legal_actions)).notation
        res = await stub.SubmitAction(pb.SubmitActionRequest(
            match_id=match_id, action=action, expected_seq=mine.seq, client_action_id=f"{seat}-{mine.seq}"),
            metadata=bearer(tokens[seat]))
        acked.append((res.seq, action, seat))
        if limit is not None:
            limit -= 1
    return (await stub.GetView(pb.GetViewRequest(match_id=match_id), metadata=bearer(tokens[0]))).view


def test_kill_9_then_restart_on_the_same_database_loses_nothing(tmp_path):
    db = tmp_path / "matches.sqlite3"
    first = Service(tmp_path, db, "first")
    acked: list[tuple[int, str, int]] = []
    try:
        async def before_crash():
            async with grpc.aio.insecure_channel(first.target) as ch:
                stub, _ = _stubs(ch)
                match_id, tokens = await create_open_match(stub, "klaberjass")
                await _play(stub, match_id, tokens, random.Random(4), 80, acked)
                views = [(await stub.GetView(pb.GetViewRequest(match_id=match_id), metadata=bearer(t))).view
                         for t in tokens]
                return match_id, tokens, views
        match_id, tokens, views_before = run(before_crash)()
    finally:
        first.proc.kill()  # kill -9: no drain, no flush
        first.proc.wait(10)
        first._log.close()
    assert acked and acked[-1][0] == 80

    second = Service(tmp_path, db, "second")
    try:
        async def after_restart():
            async with grpc.aio.insecure_channel(second.target) as ch:
                stub, admin = _stubs(ch)
                views = [(await stub.GetView(pb.GetViewRequest(match_id=match_id), metadata=bearer(t))).view
                         for t in tokens]
                for before, after in zip(views_before, views):
                    assert after.seq == before.seq == 80
                    assert [c.code for c in after.hand] == [c.code for c in before.hand]
                    assert [a.notation for a in after.legal_actions] == [a.notation for a in before.legal_actions]
                    assert after.phase == before.phase and after.to_act == before.to_act
                # a client whose answer was lost in the crash retries: the durable
                # client_action_id makes it a duplicate, never a second action
                seq, action, seat = acked[-1]
                retry = await stub.SubmitAction(pb.SubmitActionRequest(
                    match_id=match_id, action=action, expected_seq=seq - 1,
                    client_action_id=f"{seat}-{seq - 1}"), metadata=bearer(tokens[seat]))
                assert (retry.duplicate, retry.seq) == (True, seq)
                final = await _play(stub, match_id, tokens, random.Random(5), None, acked)
                assert final.over and final.status == match_pb2.MATCH_STATUS_FINISHED
                return await export_transcript(admin, match_id)
        transcript = run(after_restart)()
    finally:
        assert second.stop() == 0
    steps = [s["action"] for d in transcript["deals"] for s in d["steps"]]
    assert [a for _, a, _ in acked] == steps, "every acknowledged action is in the log, in order"
    assert [s for s, _, _ in acked] == list(range(1, len(steps) + 1))
    assert any(line.get("event") == "match_resumed" for line in second.lines())


def test_lifecycle_health_reflection_metrics_logs_and_sigterm(tmp_path):
    service = Service(tmp_path, tmp_path / "db.sqlite3", "svc", CARDGAMES_MAX_MATCHES="50",
                      CARDGAMES_BOT_PACE_S="0.5",  # below the 2 s bot deadline: a warning
                      CARDGAMES_GC_FULL_COLLECTION_INTERVAL_S="0.3",
                      # a misspelt variable (the field is db_path): ignored without a word
                      CARDGAMES_DB_PATH="/elsewhere/s3cret-path.sqlite3")
    seat_tokens: list[str] = []
    try:
        async def session():
            async with grpc.aio.insecure_channel(service.target) as ch:
                health = health_pb2_grpc.HealthStub(ch)
                for name in ("", "cardgames.v1.CardGamesService", "cardgames.v1.AdminService"):
                    assert (await health.Check(health_pb2.HealthCheckRequest(service=name))).status == \
                        health_pb2.HealthCheckResponse.SERVING
                refl = reflection_pb2_grpc.ServerReflectionStub(ch)
                answers = [a async for a in refl.ServerReflectionInfo(
                    iter([reflection_pb2.ServerReflectionRequest(list_services=""),
                          reflection_pb2.ServerReflectionRequest(file_containing_symbol="cardgames.v1.CardGamesService")]))]
                names = {s.name for s in answers[0].list_services_response.service}
                assert {"cardgames.v1.CardGamesService", "cardgames.v1.AdminService",
                        "grpc.health.v1.Health", "grpc.reflection.v1alpha.ServerReflection"} <= names
                assert answers[1].file_descriptor_response.file_descriptor_proto
                stub, admin = _stubs(ch)
                match_id, tokens = await create_open_match(stub, "japanese_joker")
                seat_tokens.extend(tokens)
                acked: list[tuple[int, str, int]] = []
                await _play(stub, match_id, tokens, random.Random(9), 40, acked)
                err = await expect_error(stub.GetView(pb.GetViewRequest(match_id="nope")))
                assert err.code == grpc.StatusCode.NOT_FOUND
                transcript = await export_transcript(admin, match_id)
                # a watcher and a health watch are open when SIGTERM arrives
                watch = stub.WatchMatch(pb.WatchMatchRequest(match_id=match_id), metadata=bearer(tokens[0]))
                assert (await watch.read()).kind == match_pb2.EVENT_KIND_SNAPSHOT
                hw = health.Watch(health_pb2.HealthCheckRequest(service="cardgames.v1.CardGamesService"))
                assert (await hw.read()).status == health_pb2.HealthCheckResponse.SERVING
                for _ in range(100):  # the timed full collection (gc_policy), every 0.3 s here
                    if '"gc_full_collection"' in service.log_path.read_text():
                        break
                    await asyncio.sleep(0.1)
                metrics = urllib.request.urlopen(f"http://127.0.0.1:{service.metrics_port}/metrics", timeout=30).read().decode()
                service.proc.send_signal(signal.SIGTERM)
                assert (await hw.read()).status == health_pb2.HealthCheckResponse.NOT_SERVING
                err = await expect_error(watch)
                assert (err.code, err.reason) == (grpc.StatusCode.UNAVAILABLE, "DRAINING")
                hw.cancel()
                return match_id, acked, transcript, metrics
        match_id, acked, transcript, metrics = run(session)()
        assert service.proc.wait(30) == 0
    finally:
        if service.proc.poll() is None:
            service.proc.kill()
        service._log.close()

    samples = {line.split(" ")[0]: float(line.split(" ")[1]) for line in metrics.splitlines()
               if line and not line.startswith("#")}
    submit = 'cardgames_rpc_requests_total{code="OK",method="/cardgames.v1.CardGamesService/SubmitAction"}'
    assert samples[submit] == len(acked) == 40
    assert samples['cardgames_rpc_requests_total{code="NOT_FOUND",method="/cardgames.v1.CardGamesService/GetView"}'] == 1
    assert samples['cardgames_matches_created_total{game="japanese_joker"}'] == 1
    assert samples['cardgames_rpc_duration_seconds_count{method="/cardgames.v1.CardGamesService/SubmitAction"}'] == 40
    assert "process_resident_memory_bytes" in samples
    assert samples["cardgames_serving"] == 1
    # tune_gc's collection at start-up and the timed ones: full collections, timed
    assert samples['cardgames_gc_pause_seconds_count{generation="2"}'] >= 2
    assert samples['cardgames_gc_pause_seconds_sum{generation="2"}'] > 0

    lines = service.lines()
    events = [line["event"] for line in lines]
    for needed in ("starting", "serving", "gc_full_collection", "signal_received", "draining",
                   "stopped", "exit"):
        assert needed in events, needed
    # --event-loop auto: uvloop where installed (it is, but on Windows, a dependency)
    assert [line["event_loop"] for line in lines if line["event"] == "starting"] == ["uvloop"]
    collections = [line for line in lines if line["event"] == "gc_full_collection"]
    assert all(line["level"] == "info" and line["pause_ms"] >= 0 and line["collected"] >= 0
               and line["uncollectable"] == 0 for line in collections)
    paced = [line for line in lines if line["event"] == "bot_pace_below_deadline"]
    assert [(w["level"], w["bot_pace_s"], w["bot_deadline_s"]) for w in paced] == [("warning", 0.5, 2.0)]
    unknown = [line for line in lines if line["event"] == "unknown_environment_variable"
               and line["variable"] == "CARDGAMES_DB_PATH"]
    assert [(w["level"], w["did_you_mean"]) for w in unknown] == [("warning", "CARDGAMES_DB")]
    assert not any("s3cret-path" in json.dumps(line) for line in lines)
    assert all({"timestamp", "level", "event"} <= line.keys() for line in lines)
    rpcs = [line for line in lines if line["event"] == "rpc"]
    submits = [line for line in rpcs if line["method"].endswith("/SubmitAction")]
    assert len(submits) == 40
    assert all(line["code"] == "OK" and line["match_id"] == match_id and "seat" in line and "seq" in line
               and line["duration_ms"] >= 0 for line in submits)
    assert sorted(line["seq"] for line in submits) == list(range(1, 41))
    text = service.log_path.read_text()
    for secret in (ADMIN_TOKEN, *seat_tokens):
        assert secret not in text, "a token reached the log"
    truth = truth_by_seq(transcript, [SPECTATOR])
    for line in lines:
        named = cards_in({k: v for k, v in line.items() if k != "action"})
        if "seq" in line and line.get("match_id") == match_id and line["seq"] in truth:
            assert not named & truth[line["seq"]][SPECTATOR][1], line
        else:
            assert not named, line


def test_bad_settings_and_busy_port_fail_clearly(tmp_path):
    env = {**os.environ, "CARDGAMES_PORT": "not-a-port"}
    done = subprocess.run([sys.executable, "-m", "engine_service", "serve"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode != 0 and "CARDGAMES_PORT" in done.stderr
    not_pem = tmp_path / "key.txt"
    not_pem.write_text("hello\n")
    for cert, key, named in ((tmp_path / "missing.pem", not_pem, "--tls-cert"), (not_pem, not_pem, "--tls-cert")):
        done = subprocess.run([sys.executable, "-m", "engine_service", "serve", "--port", "0",
                               "--tls-cert", str(cert), "--tls-key", str(key)], cwd=tmp_path,
                              capture_output=True, text=True, timeout=60)
        assert done.returncode != 0 and named in done.stderr and str(cert) in done.stderr, done.stderr
    from .test_settings import _certificate

    cert, _ = _certificate(tmp_path, "one")
    _, other_key = _certificate(tmp_path, "two")
    done = subprocess.run([sys.executable, "-m", "engine_service", "serve", "--port", "0", "--metrics-port", "0",
                           "--tls-cert", str(cert), "--tls-key", str(other_key)], cwd=tmp_path,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2, done.stderr  # a key of another certificate: refused before the bind
    assert done.stderr.strip() == (f"error: --tls-key / CARDGAMES_TLS_KEY {other_key} is not the private key "
                                   f"of the certificate of --tls-cert / CARDGAMES_TLS_CERT {cert} "
                                   "(the key does not match it)")
    garbage = tmp_path / "garbage.sqlite3"
    garbage.write_text("this is not a database\n" * 100)
    done = subprocess.run([sys.executable, "-m", "engine_service", "serve", "--port", "0",
                           "--metrics-port", "0", "--db", str(garbage), "--log-format", "json"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert any(json.loads(l).get("event") == "store_unavailable" for l in done.stderr.splitlines() if l.startswith("{"))
    help_text = subprocess.run([sys.executable, "-m", "engine_service", "serve", "--help"], cwd=REPO,
                               capture_output=True, text=True, timeout=60, env={**os.environ, "CARDGAMES_ADMIN_TOKEN": "s3cret"})
    assert "CARDGAMES_ADMIN_TOKEN" in help_text.stdout and "s3cret" not in help_text.stdout
    assert "--port" in help_text.stdout and "default: 50051" in help_text.stdout


def serve_refused(cwd, **settings: str) -> tuple[list[dict], list[dict]]:
    """Run ``serve`` (JSON logs, ports 0 on 127.0.0.1) with ``settings`` as environment
    variables, expecting it to refuse the start: its log lines and its error lines."""
    env = {**os.environ, "CARDGAMES_PORT": "0", "CARDGAMES_METRICS_PORT": "0", "CARDGAMES_HOST": "127.0.0.1",
           "CARDGAMES_METRICS_HOST": "127.0.0.1", "CARDGAMES_LOG_FORMAT": "json", "CARDGAMES_BOT_WORKERS": "1",
           **settings}
    done = subprocess.run([sys.executable, "-m", "engine_service", "serve"], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2, done.stderr
    lines = [json.loads(raw) for raw in done.stderr.splitlines() if raw.startswith("{")]
    return lines, [line for line in lines if line["level"] == "error"]


def test_a_corrupt_database_stops_the_start_with_exit_2(tmp_path):
    """A database of ours with a damaged page (3: an index's root, as a failing disk leaves
    it) used to be accepted: the match's resume failed (match_resume_failed), health said
    SERVING and every write failed UNAVAILABLE. Now the engine refuses to start: exit 2 and
    one store_unavailable line naming the file and SQLite's report, and it never serves."""
    from tests.store.test_store import overwrite_page, sqlite_with_matches

    db = tmp_path / "cards.sqlite3"
    sqlite_with_matches(db)
    overwrite_page(db, 3)
    lines, errors = serve_refused(tmp_path, CARDGAMES_DB=str(db))
    assert [e["event"] for e in errors] == ["store_unavailable"], errors
    assert errors[0]["db"] == str(db)
    assert "is corrupt" in errors[0]["error"] and "Page 3" in errors[0]["error"], errors[0]
    assert not any(line["event"] in ("serving", "match_resume_failed") for line in lines)


def test_a_takeover_bot_that_is_not_installed_stops_the_start_with_exit_2(tmp_path):
    """--takeover-bot naming a bot that is not installed started without a word; it now
    exits 2 with one error line naming the flag, the variable and the installed bots."""
    lines, errors = serve_refused(tmp_path, CARDGAMES_DB="memory:", CARDGAMES_TAKEOVER_BOT="nosuch")
    assert [e["event"] for e in errors] == ["takeover_bot_unavailable"], errors
    assert errors[0]["error"].startswith("--takeover-bot / CARDGAMES_TAKEOVER_BOT 'nosuch' is not an installed "
                                         "bot; installed bots: "), errors[0]
    assert "random" in errors[0]["installed"]
    assert not any(line["event"] == "serving" for line in lines)
    # checked before the database is opened: an older schema is not migrated by a start
    # that cannot serve (the release before could not open it any more)
    from tests.store.test_migrations import _sqlite_v1, _user_version

    old = tmp_path / "old.sqlite3"
    _sqlite_v1(old)
    lines, errors = serve_refused(tmp_path, CARDGAMES_DB=str(old), CARDGAMES_TAKEOVER_BOT="nosuch")
    assert [e["event"] for e in errors] == ["takeover_bot_unavailable"], errors
    assert _user_version(old) == 1 and "db_migrated" not in [line["event"] for line in lines]


def _listening(host: str = "127.0.0.1"):
    """A socket listening on a free port of ``host`` (the port another program holds)."""
    import socket

    sock = socket.socket()
    sock.bind((host, 0))
    sock.listen()
    return sock


def test_a_port_in_use_stops_the_start_before_the_database_is_migrated_or_made(tmp_path):
    """The gRPC port was bound only after the store had opened the database, and opening it
    migrates an older schema in place: a start that then failed on a port in use (another
    program on it, a forgotten engine on another database) had already upgraded a database
    that no engine of this release ever served, which an operator rolling back then had to
    restore. The ports are now bound (metrics) and checked (gRPC) as soon as the database is
    held, before anything in it changes: exit 2, one grpc_port_unavailable line saying why
    (gRPC's own message said only "set GRPC_VERBOSITY=debug"), the file at its old schema; and
    a database path that does not exist yet is not created."""
    from tests.store.test_migrations import _sqlite_v1, _user_version

    old = tmp_path / "old.sqlite3"
    _sqlite_v1(old)
    with _listening() as busy:
        port = busy.getsockname()[1]
        lines, errors = serve_refused(tmp_path, CARDGAMES_DB=str(old), CARDGAMES_PORT=str(port))
        assert [(e["event"], e["port"], e["error"]) for e in errors] == \
            [("grpc_port_unavailable", port, f"cannot bind 127.0.0.1:{port}: Address already in use")]
        assert not any(line["event"] in ("db_migrated", "serving") for line in lines)
        assert _user_version(old) == 1
        new = tmp_path / "new.sqlite3"
        serve_refused(tmp_path, CARDGAMES_DB=str(new), CARDGAMES_PORT=str(port))
        # as docs/operations.md says: no database file, only the lock file of step 3, which stays
        assert not new.exists() and (tmp_path / "new.sqlite3.lock").is_file()
        assert not any(p.name.startswith("new.sqlite3") and p.name != "new.sqlite3.lock"
                       for p in tmp_path.iterdir())
        lines, errors = serve_refused(tmp_path, CARDGAMES_DB=str(old), CARDGAMES_METRICS_PORT=str(port))
        assert [(e["event"], e["port"]) for e in errors] == [("metrics_port_unavailable", port)]
        assert "Address already in use" in errors[0]["error"]
        assert _user_version(old) == 1



def test_health_turns_serving_only_once_a_bot_can_play(tmp_path):
    """The bot workers start with the engine, and the start waited for them only when a
    resumed match had a bot: on a fresh database health said SERVING while they were still
    starting, and a bot match created at once spent its first decisions' deadline waiting for
    them (bot_failed, timeout: the auto-move instead of the bot's). SERVING now means a bot
    can be asked: bot workers slowed at their start (a sitecustomize: 1.5 s after their fork,
    as on a loaded machine) and a deadline far below that show it."""
    service = Service(tmp_path, tmp_path / "db.sqlite3", "svc", CARDGAMES_BOT_PACE_S="0",
                      CARDGAMES_BOT_DEADLINE_S="0.3", CARDGAMES_BOT_PLUGINS="random",
                      PYTHONPATH=_slow_bot_processes(tmp_path, 0, fork_s=1.5))
    try:
        async def session():
            async with grpc.aio.insecure_channel(service.target) as ch:
                stub, _ = _stubs(ch)
                bots = [match_pb2.SeatSpec(bot=match_pb2.BotSeat(name="random"))] * 2
                created = await stub.CreateMatch(pb.CreateMatchRequest(game="japanese_joker", seats=bots),
                                                 metadata=bearer(ADMIN_TOKEN))
                match_id = created.match.match_id
                for _ in range(300):
                    view = (await stub.GetView(pb.GetViewRequest(match_id=match_id))).view
                    if view.seq >= 6:
                        return
                    await asyncio.sleep(0.05)
                raise AssertionError("the bots did not play")
        run(session)()
        assert service.stop() == 0
    finally:
        if service.proc.poll() is None:
            service.proc.kill()
        service._log.close()
    events = [line["event"] for line in service.lines()]
    assert "bot_failed" not in events and "bot_decision_failed" not in events, events
    assert "bot_workers_not_ready" not in events



def _slow_bot_processes(tmp_path, seconds: float, fork_s: float = 0.0) -> str:
    """A PYTHONPATH whose sitecustomize holds every bot process's start ``seconds`` (a slow
    plugin import on a loaded machine), and each worker the zygote forks ``fork_s`` before it
    says it is ready (the zygote's own start is over before the engine opens its database)."""
    slow = tmp_path / "slow"
    slow.mkdir(exist_ok=True)
    (slow / "sitecustomize.py").write_text(
        "import os, sys, time\n"
        "if 'engine_service.plugins.pool' in sys.orig_argv:\n"
        f"    time.sleep({seconds})\n"
        f"    os.register_at_fork(after_in_child=lambda: time.sleep({fork_s}))\n")
    return os.pathsep.join(p for p in (str(slow), os.environ.get("PYTHONPATH", "")) if p)


def _ended_after_serving(service: Service) -> tuple[list[dict], float]:
    """Wait (30 s at most) for ``service`` to end a match, stop it (exit 0), and return its
    ``match_ended`` log lines and how many seconds after ``serving`` the first was logged."""
    try:
        deadline = time.monotonic() + 30
        while '"match_ended"' not in service.log_path.read_text():
            assert time.monotonic() < deadline
            time.sleep(0.1)
    finally:
        assert service.stop() == 0
    when = {line["event"]: line for line in service.lines() if line["event"] in ("serving", "match_ended")}
    ended = [line for line in service.lines() if line["event"] == "match_ended"]
    return ended, _seconds_between(when["serving"], when["match_ended"])


def _seconds_between(first: dict, then: dict) -> float:
    """Seconds from one log line's timestamp to another's."""
    from datetime import datetime

    def at(line):
        return datetime.fromisoformat(line["timestamp"].replace("Z", "+00:00"))
    return (at(then) - at(first)).total_seconds()


def test_the_grace_periods_of_resumed_players_start_when_the_engine_serves(tmp_path):
    """After a restart every player of a resumed match is away, and one who was connected when
    the engine stopped gets a whole grace period to come back. Waiting for the bot workers
    before SERVING came after the resumed matches' timers were armed: the grace periods ran
    while the engine could not be reached yet (up to 15 s), and players lost that much of
    their time to reconnect. The wait now comes first: a two-player match nobody returns to
    is abandoned a whole grace period (1.5 s) after `serving`, though the bot workers took 2 s
    to start."""
    db = tmp_path / "db.sqlite3"
    first = Service(tmp_path, db, "first", CARDGAMES_RECONNECT_GRACE_S="1.5")
    try:
        async def create():
            async with grpc.aio.insecure_channel(first.target) as ch:
                stub, _ = _stubs(ch)
                match_id, tokens = await create_open_match(stub, "klaberjass")
                # both players connected when the engine drains (away since the match began,
                # each would get only the rest of the period after the restart)
                watches = [stub.WatchMatch(pb.WatchMatchRequest(match_id=match_id), metadata=bearer(t))
                           for t in tokens]
                for w in watches:
                    assert (await w.read()).kind == match_pb2.EVENT_KIND_SNAPSHOT
                first.proc.send_signal(signal.SIGTERM)
                for w in watches:
                    assert (await expect_error(w)).reason == "DRAINING"
                return match_id
        match_id = run(create)()
    finally:
        assert first.stop() == 0
    second = Service(tmp_path, db, "second", CARDGAMES_RECONNECT_GRACE_S="1.5",
                     PYTHONPATH=_slow_bot_processes(tmp_path, 0, fork_s=2))
    ended, after_serving = _ended_after_serving(second)
    assert [(e["match_id"], e["outcome"]) for e in ended] == [(match_id, "abandoned")]
    # the windows start as the manager resumes, a moment before `serving` is logged (the port
    # opens, the GC is tuned: tens of ms, more on a loaded machine: the bound leaves a whole
    # second for it); before the fix the workers' 2 s start-up came after the windows were
    # armed, and they ended before `serving` was logged
    assert after_serving >= 0.5


async def _seconds_recorded_away(store: SqliteStore, match_id: str, seat: int) -> float | None:
    """How long the stored record says ``seat`` has been away while the engine served
    (``away_seen - away_since``), read through ``store``, a store opened beside the running
    engine; None while away is not recorded."""
    stored = await store.load_match(match_id)
    record = None if stored is None else stored.record.seats[seat]
    if record is None or record.away_since is None or record.away_seen is None:
        return None
    return record.away_seen - record.away_since


def test_a_player_away_before_a_kill_9_gets_only_the_rest_of_the_grace_period(tmp_path):
    """Seat 0's player went away in a match with an 8 s grace period; the engine records that
    it still serves every 5 s while a period runs, and was killed (kill -9: no drain) as soon
    as such a record was half a second or more past the departure; seat 1's player was still
    connected. After the restart seat 0 gets only the rest of its period: the time away counts
    up to the engine's last record that it served, so 0.5 to 5.5 s of it, never the downtime:
    at most the time it was away while the first engine ran, as its `grace_resumed` line says. Its
    period ends first, that line's `left_s` after it: a disconnection forfeit, seat 1 wins
    (JJK-10.2). Before schema 8 both periods started over at the restart and ended together
    8 s after it, the match abandoned; an engine killed every 8 s never ended it."""
    db = tmp_path / "db.sqlite3"
    first = Service(tmp_path, db, "first", CARDGAMES_RECONNECT_GRACE_S="8")
    try:
        async def away():
            async with grpc.aio.insecure_channel(first.target) as ch:
                stub, _ = _stubs(ch)
                match_id, tokens = await create_open_match(stub, "klaberjass")
                watches = [stub.WatchMatch(pb.WatchMatchRequest(match_id=match_id), metadata=bearer(t))
                           for t in tokens]
                for w in watches:
                    assert (await w.read()).kind == match_pb2.EVENT_KIND_SNAPSHOT
                # the store as the tools beside an engine open it: no lock, nothing created
                # or migrated (it reads the record as the engine's own store reads it back)
                reader = SqliteStore(db, exclusive=False, create=False, migrate=False)
                await reader.open()
                try:
                    left = time.monotonic()
                    watches[0].cancel()  # seat 0 goes away; seat 1 stays until the crash
                    # the heartbeat's record of the time away, apart from the window's start by
                    # enough that seat 0's period ends clearly before seat 1's after the restart
                    while (recorded := await _seconds_recorded_away(reader, match_id, 0)) is None \
                            or recorded < 0.5:
                        assert time.monotonic() - left < 15, "no heartbeat recorded the time away"
                        await asyncio.sleep(0.05)
                finally:
                    await reader.close()
                first.proc.kill()  # kill -9: no drain, no flush
                first.proc.wait(10)
                return match_id, time.monotonic() - left
        match_id, away_while_served = run(away)()
    finally:
        if first.proc.poll() is None:
            first.proc.kill()
            first.proc.wait(10)
        first._log.close()
    second = Service(tmp_path, db, "second", CARDGAMES_RECONNECT_GRACE_S="8")
    ended, _ = _ended_after_serving(second)
    assert [(e["match_id"], e["outcome"], e["winners"], e["forfeited"]) for e in ended] == [
        (match_id, "forfeit", [1], 0)]
    # seat 1, connected at the crash, gets a whole period (no line); seat 0 the rest of its own:
    # time away counted (a fresh period would end with seat 1's: abandoned), the downtime not
    # (the test's own count of the time away ends at the kill, before the restart)
    resumed = [line for line in second.lines() if line["event"] == "grace_resumed"]
    assert [(r["seat"], r["taken_over"]) for r in resumed] == [(0, False)]
    assert 0.5 <= resumed[0]["away_s"] <= away_while_served, (resumed[0], away_while_served)
    assert abs(resumed[0]["left_s"] + resumed[0]["away_s"] - 8) <= 0.002, resumed[0]
    # the rest runs from the restart: the forfeit comes no sooner (the line is written a moment
    # after the window is armed, tens of ms on a loaded machine)
    assert _seconds_between(resumed[0], ended[0]) >= resumed[0]["left_s"] - 0.5


def test_sighup_drains_like_sigterm(tmp_path):
    """SIGHUP kept its default action: the process ended at once, without the drain (the
    terminal of a `make run` closed, an ssh session dropped, a supervisor's reload): watch
    streams cut without DRAINING, no exit line. It now drains as SIGTERM does, exit 0; a
    second signal during the drain is ignored.

    A grpc.health.v1 Watch stream open meanwhile gets NOT_SERVING and then ends: it stayed
    open, and the server's stop waited the whole --drain-grace-s for it, so one
    client watching health made every restart that much longer. The grace here (600 s) is far
    past the waits' guards: a drain that waited for it fails them, however slow the machine."""
    service = Service(tmp_path, tmp_path / "db.sqlite3", "svc", CARDGAMES_DRAIN_GRACE_S="600")
    try:
        async def session():
            async with grpc.aio.insecure_channel(service.target) as ch:
                stub, _ = _stubs(ch)
                match_id, tokens = await create_open_match(stub, "japanese_joker")
                watch = stub.WatchMatch(pb.WatchMatchRequest(match_id=match_id), metadata=bearer(tokens[0]))
                assert (await watch.read()).kind == match_pb2.EVENT_KIND_SNAPSHOT
                hw = health_pb2_grpc.HealthStub(ch).Watch(health_pb2.HealthCheckRequest(service=""))
                assert (await hw.read()).status == health_pb2.HealthCheckResponse.SERVING
                service.proc.send_signal(signal.SIGHUP)
                err = await expect_error(watch)
                assert (err.code, err.reason) == (grpc.StatusCode.UNAVAILABLE, "DRAINING")
                assert (await hw.read()).status == health_pb2.HealthCheckResponse.NOT_SERVING
                assert await asyncio.wait_for(hw.read(), 60) == grpc.aio.EOF  # ended, not left to the grace
                service.proc.send_signal(signal.SIGHUP)
                # the channel (and the health call) still open while the process exits
                return await asyncio.get_running_loop().run_in_executor(None, service.proc.wait, 60)
        assert run(session)() == 0
    finally:
        if service.proc.poll() is None:
            service.proc.kill()
        service._log.close()
    lines = service.lines()
    assert [line.get("signal") for line in lines if line["event"] == "signal_received"] == ["SIGHUP"]
    assert [(line["event"], line["status"]) for line in lines if line["event"] == "exit"] == [("exit", 0)]


def _descendants(pid: int) -> list[int]:
    """Every process below ``pid`` (from /proc)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(entry.name))
    out, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return out


def _alive(pid: int) -> bool:
    """Whether ``pid`` runs (not gone, not a zombie awaiting its parent)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def test_bot_processes_outlive_a_sigterm_sent_to_the_whole_service(tmp_path):
    """systemd stops a service by sending SIGTERM to every process of its cgroup at once
    (KillMode=control-group, the default), the bot workers and their zygote included: they
    died of it while the engine was only beginning its drain, a decision in flight counted as
    a crash (bot_failed, the auto-move written for the bot) and the idle workers as lost. They
    now ignore SIGTERM (as SIGINT): the engine stops them when it closes."""
    service = Service(tmp_path, tmp_path / "db.sqlite3", "svc", CARDGAMES_BOT_PACE_S="0",
                      CARDGAMES_BOT_PLUGINS="random")
    try:
        bots = _descendants(service.proc.pid)
        assert bots
        for pid in bots:
            os.kill(pid, signal.SIGTERM)
        time.sleep(0.3)  # SIGTERM's default action ends a process (a zombie here) as it is delivered
        assert all(_alive(pid) for pid in bots)

        async def play():
            async with grpc.aio.insecure_channel(service.target) as ch:
                stub, _ = _stubs(ch)
                seats = [match_pb2.SeatSpec(bot=match_pb2.BotSeat(name="random"))] * 2
                created = await stub.CreateMatch(pb.CreateMatchRequest(game="japanese_joker", seats=seats),
                                                 metadata=bearer(ADMIN_TOKEN))
                for _ in range(300):
                    view = (await stub.GetView(pb.GetViewRequest(match_id=created.match.match_id))).view
                    if view.seq >= 6:
                        return
                    await asyncio.sleep(0.05)
                raise AssertionError("the bots did not play")
        run(play)()
        assert service.stop() == 0
    finally:
        if service.proc.poll() is None:
            service.proc.kill()
        service._log.close()
    events = [line["event"] for line in service.lines()]
    assert not {"bot_worker_lost", "bot_failed", "bot_worker_replaced"} & set(events), events
    time.sleep(0.5)
    assert not any(_alive(pid) for pid in bots)  # the engine stopped them when it closed
