"""The ``rpc`` line of every API method says which match, seat and seq the call concerned
(docs/operations.md: ``match_id``, ``seat``, ``seq`` when known) and never a token: an
operator follows one match or one player through the log by these fields alone."""

from __future__ import annotations

import asyncio
import json

import grpc
import structlog

from engine_service.transport.generated import admin_pb2, card_games_pb2 as pb

from ..sessions.helpers import capture_logs_with_context

from .harness import ADMIN_TOKEN, bearer, expect_error, run
from .players import create_open_match
from .test_service import served

GAMES = "/cardgames.v1.CardGamesService/"
ADMIN = "/cardgames.v1.AdminService/"


async def _lines(logs: list, n: int) -> list[dict]:
    """The first ``n`` rpc lines, once written (the interceptor writes a line after the
    status is sent: up to 10 s on a loaded machine)."""
    for _ in range(1000):
        lines = [e for e in logs if e["event"] == "rpc"]
        if len(lines) >= n:
            return lines
        await asyncio.sleep(0.01)
    raise AssertionError(f"{n} rpc lines expected, got {len(lines)}")


def _where(line: dict) -> tuple:
    return (line["method"], line["code"], line.get("match_id"), line.get("seat"), line.get("seq"))


@run
async def test_every_method_logs_the_match_seat_and_seq_it_concerned_and_no_token():
    async with served() as (_, srv):
        g, admin = srv.games, bearer(ADMIN_TOKEN)
        # with the fields bound to structlog's contextvars, as the service writes its lines:
        # a token bound there would ride on every event logged on the call's behalf
        with capture_logs_with_context() as logs:
            created = (await g.CreateMatch(pb.CreateMatchRequest(game="klaberjass"))).match
            match_id = created.match_id
            got = (await g.GetMatch(pb.GetMatchRequest(match_id=match_id))).match
            tokens = [(await g.JoinMatch(pb.JoinMatchRequest(match_id=match_id, seat=seat))).seat_token
                      for seat in (1, 0)][::-1]
            views = [(await g.GetView(pb.GetViewRequest(match_id=match_id), metadata=bearer(t))).view
                     for t in tokens]
            actor = next(s for s, v in enumerate(views) if v.legal_actions)
            submitted = await g.SubmitAction(pb.SubmitActionRequest(
                match_id=match_id, action=views[actor].legal_actions[0].notation), metadata=bearer(tokens[actor]))
            watch = g.WatchMatch(pb.WatchMatchRequest(match_id=match_id), metadata=bearer(tokens[1]))
            snapshot = await watch.read()
            watch.cancel()
            inspected = await srv.admin.InspectMatch(admin_pb2.InspectMatchRequest(match_id=match_id),
                                                     metadata=admin)
            await expect_error(srv.admin.ReissueSeatToken(
                admin_pb2.ReissueSeatTokenRequest(match_id=match_id, seat=7), metadata=admin))
            reissued = await srv.admin.ReissueSeatToken(
                admin_pb2.ReissueSeatTokenRequest(match_id=match_id, seat=1), metadata=admin)
            terminated = (await srv.admin.TerminateMatch(
                admin_pb2.TerminateMatchRequest(match_id=match_id, reason="test"), metadata=admin)).match
            await g.RevealDeals(pb.RevealDealsRequest(match_id=match_id), metadata=bearer(tokens[0]))
            await srv.admin.ExportTranscript(admin_pb2.ExportTranscriptRequest(match_id=match_id),
                                             metadata=admin)
            waiting = (await g.CreateMatch(pb.CreateMatchRequest(game="klaberjass"))).match
            leaver = (await g.JoinMatch(pb.JoinMatchRequest(match_id=waiting.match_id, seat=1))).seat_token
            left = (await g.LeaveMatch(pb.LeaveMatchRequest(match_id=waiting.match_id),
                                       metadata=bearer(leaver))).match
            lines = await _lines(logs, 17)
    assert {line["log_level"] for line in lines} == {"info"}  # only health checks log at debug
    watched = [line for line in lines if line["method"] == GAMES + "WatchMatch"]
    assert [_where(line) for line in lines if line is not watched[0]] == [
        (GAMES + "CreateMatch", "OK", match_id, None, created.seq),
        (GAMES + "GetMatch", "OK", match_id, None, got.seq),
        (GAMES + "JoinMatch", "OK", match_id, 1, None),
        (GAMES + "JoinMatch", "OK", match_id, 0, None),
        (GAMES + "GetView", "OK", match_id, 0, views[0].seq),
        (GAMES + "GetView", "OK", match_id, 1, views[1].seq),
        (GAMES + "SubmitAction", "OK", match_id, actor, submitted.seq),
        (ADMIN + "InspectMatch", "OK", match_id, None, inspected.view.seq),
        # the seat the operator named, refused or not: the audit trail of reissued tokens
        (ADMIN + "ReissueSeatToken", "INVALID_ARGUMENT", match_id, 7, None),
        (ADMIN + "ReissueSeatToken", "OK", match_id, 1, None),
        (ADMIN + "TerminateMatch", "OK", match_id, None, terminated.seq),
        (GAMES + "RevealDeals", "OK", match_id, 0, None),
        (ADMIN + "ExportTranscript", "OK", match_id, None, None),
        (GAMES + "CreateMatch", "OK", waiting.match_id, None, waiting.seq),
        (GAMES + "JoinMatch", "OK", waiting.match_id, 1, None),
        (GAMES + "LeaveMatch", "OK", waiting.match_id, 1, left.seq),
    ]
    [line] = watched
    # the stream may have sent the seat's own presence event before the cancel reached it
    assert _where(line)[:4] == (GAMES + "WatchMatch", "CANCELLED", match_id, 1)
    assert line["seq"] >= snapshot.seq and line["messages"] >= 1
    assert line["messages"] == srv.metrics.value("cardgames_rpc_stream_messages_sent_total",
                                                 {"method": GAMES + "WatchMatch"})
    assert not [line for line in lines if "messages" in line and line is not watched[0]]  # streams only
    text = json.dumps(logs, default=str)
    for secret in (*tokens, leaver, reissued.seat_token, ADMIN_TOKEN):
        assert secret not in text


@run
async def test_a_refused_watch_is_logged_with_its_match_and_code():
    """A stream refused before its first message is logged with the status the client got."""
    async with served() as (_, srv):
        match_id, _ = await create_open_match(srv.games, "klaberjass")
        with structlog.testing.capture_logs() as logs:
            err = await expect_error(srv.games.WatchMatch(
                pb.WatchMatchRequest(match_id=match_id, after_seq=-1)))
            [line] = await _lines(logs, 1)
    assert (err.code, err.reason) == (grpc.StatusCode.INVALID_ARGUMENT, "BAD_AFTER_SEQ")
    assert _where(line) == (GAMES + "WatchMatch", "INVALID_ARGUMENT", match_id, None, None)
    assert line["reason"] == "BAD_AFTER_SEQ" and "messages" not in line


@run
async def test_the_duration_logged_is_the_one_measured():
    """The rpc line's ``duration_ms`` and ``rpc_duration_seconds`` are one measurement: an
    operator comparing the log with the dashboards must find the same call time in both."""
    async with served() as (_, srv):
        with structlog.testing.capture_logs() as logs:
            await srv.games.ListGames(pb.ListGamesRequest())
            [line] = await _lines(logs, 1)
        seconds = srv.metrics.value("cardgames_rpc_duration_seconds_sum", {"method": GAMES + "ListGames"})
    assert line["duration_ms"] == round(seconds * 1000, 3)
    assert 0 < line["duration_ms"] < 120_000  # a hang guard, not a speed bound


@run
async def test_an_unknown_method_is_unimplemented_and_makes_no_metric_label():
    """A made-up method name must not grow rpc_requests' label set (one series per name a
    scanner tries) nor reach the wrappers: grpc answers UNIMPLEMENTED."""
    async with served() as (_, srv):
        call = srv.channel.unary_unary(GAMES + "NoSuchMethod")
        with structlog.testing.capture_logs() as logs:
            err = await expect_error(call(b""))
        assert err.code == grpc.StatusCode.UNIMPLEMENTED
        assert not [e for e in logs if e["event"] == "rpc"]
        names = {s.labels.get("method") for m in srv.metrics.registry.collect() for s in m.samples}
        assert GAMES + "NoSuchMethod" not in names
