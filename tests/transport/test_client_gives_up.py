"""Clients that give up mid-call, over a real channel against the real session layer: a
WatchMatch the client cancels ends the seat's presence and every gauge it raised; a resign
(its retry answered OK, as a repeat) and a CreateMatch whose deadline passes while their
write is under way are applied once,
the call's log line says DEADLINE_EXCEEDED, and nothing is left behind (no lock, no task, no error
logged). SubmitAction and JoinMatch are covered by test_concurrency_fuzz (the "cancel" race)
and test_join_retry."""

from __future__ import annotations

import asyncio
import os
import uuid

import grpc

from engine_service.transport.generated import card_games_pb2 as pb, match_pb2
from tests.sessions.helpers import capture_logs_with_context

from .harness import bearer, expect_error, run, running
from .test_join_retry import LOST_DEADLINE_S, SlowSeats, given_up_mid_write, served

WATCH = "/cardgames.v1.CardGamesService/WatchMatch"


class SlowWrites(SlowSeats):
    """Seats (and the start) as in SlowSeats; a match's creation and its status (a
    resignation's end) durable at once but answered late (held, or ``delay``) too."""

    async def create_match(self, record, decks=()):
        await super().create_match(record, decks)
        await self.answered()

    async def set_status(self, *args, **kwargs):
        await super().set_status(*args, **kwargs)
        await self.answered()


async def _two_seats(srv) -> tuple[str, list[str]]:
    match_id = (await srv.games.CreateMatch(pb.CreateMatchRequest(game="klaberjass"))).match.match_id
    tokens = []
    for seat in (0, 1):
        joined = await srv.games.JoinMatch(pb.JoinMatchRequest(match_id=match_id, seat=seat,
                                                               client_join_id=str(uuid.uuid4())))
        tokens.append(joined.seat_token)
    return match_id, tokens


async def _until(predicate, timeout: float = 30.0) -> None:
    async def wait() -> None:
        while not predicate():
            await asyncio.sleep(0.01)
    await asyncio.wait_for(wait(), timeout)


def _errors(logs: list[dict]) -> list[dict]:
    return [e for e in logs if e.get("log_level") in ("error", "critical", "warning")
            or e.get("code") in ("INTERNAL", "UNKNOWN")]


@run
async def test_a_watch_the_client_cancels_ends_presence_and_its_gauges():
    with capture_logs_with_context() as logs:
        async with served(SlowWrites()) as srv:
            match_id, tokens = await _two_seats(srv)
            mgr, metrics = srv.server.service, srv.metrics
            seat = srv.games.WatchMatch(pb.WatchMatchRequest(match_id=match_id), metadata=bearer(tokens[0]))
            spectator = srv.games.WatchMatch(pb.WatchMatchRequest(match_id=match_id))
            await seat.read(), await spectator.read()
            await _until(lambda: metrics.value("cardgames_watchers", {"audience": "seat"}) == 1
                         and metrics.value("cardgames_watchers", {"audience": "spectator"}) == 1)
            summary = (await srv.games.GetMatch(pb.GetMatchRequest(match_id=match_id))).match
            assert [s.present for s in summary.seats] == [True, False]
            assert metrics.value("cardgames_rpc_in_flight", {"method": WATCH}) == 2

            seat.cancel()
            spectator.cancel()
            await _until(lambda: metrics.value("cardgames_rpc_in_flight", {"method": WATCH}) == 0)
            await _until(lambda: metrics.value("cardgames_watchers", {"audience": "seat"}) == 0
                         and metrics.value("cardgames_watchers", {"audience": "spectator"}) == 0)
            summary = (await srv.games.GetMatch(pb.GetMatchRequest(match_id=match_id))).match
            assert [s.present for s in summary.seats] == [False, False]
            assert not mgr._matches[match_id].watchers
            assert metrics.value("cardgames_presence_changes_total",
                                 {"game": "klaberjass", "change": "disconnected"}) == 1
            assert metrics.value("cardgames_rpc_requests_total", {"method": WATCH, "code": "CANCELLED"}) == 2
    watch_lines = [e for e in logs if e.get("event") == "rpc" and e.get("method") == WATCH]
    assert [e["code"] for e in watch_lines] == ["CANCELLED", "CANCELLED"]
    assert not _errors(logs), _errors(logs)


@run
async def test_a_resign_whose_deadline_passes_mid_write_is_applied_once():
    store = SlowWrites()

    def leave_lines() -> list[dict]:
        return [e for e in logs if e.get("event") == "rpc" and e.get("method", "").endswith("/LeaveMatch")]

    with capture_logs_with_context() as logs:
        async with served(store) as srv:
            match_id, tokens = await _two_seats(srv)
            mgr = srv.server.service
            await given_up_mid_write(srv, store, "LeaveMatch", lambda: srv.games.LeaveMatch(
                pb.LeaveMatchRequest(match_id=match_id, resign=True), metadata=bearer(tokens[0]),
                timeout=LOST_DEADLINE_S))
            summary = (await srv.games.GetMatch(pb.GetMatchRequest(match_id=match_id))).match
            assert summary.status == match_pb2.MATCH_STATUS_FINISHED
            assert summary.result["outcome"] == "resigned"
            # the retry learns that its resignation took effect (OK, the match as it ended),
            # and the match ended once
            again = (await srv.games.LeaveMatch(
                pb.LeaveMatchRequest(match_id=match_id, resign=True), metadata=bearer(tokens[0]))).match
            assert again == summary
            # the opponent did not resign: its leave is refused, the match is over
            other = await expect_error(srv.games.LeaveMatch(
                pb.LeaveMatchRequest(match_id=match_id, resign=True), metadata=bearer(tokens[1])))
            assert (other.code, other.reason) == (grpc.StatusCode.FAILED_PRECONDITION, "MATCH_NOT_ACTIVE")
            assert srv.metrics.value("cardgames_matches_finished_total",
                                     {"game": "klaberjass", "outcome": "resigned"}) == 1
            assert not mgr._matches[match_id].lock.locked()
            assert not mgr._writes, "the write the client gave up on is over"
            assert not [t for t in asyncio.all_tasks() if t.get_name().startswith("write-")]
            # a call's rpc line is written once its answer is sent: the client may read first
            await _until(lambda: len(leave_lines()) >= 3)
    leave = leave_lines()
    assert [e["code"] for e in leave] == ["DEADLINE_EXCEEDED", "OK", "FAILED_PRECONDITION"]
    assert len([e for e in logs if e.get("event") == "match_ended"]) == 1
    assert [e["seat"] for e in logs if e.get("event") == "leave_repeated"] == [0]
    assert not _errors(logs), _errors(logs)


@run
async def test_a_create_whose_deadline_passes_mid_write_leaves_one_listed_match():
    """CreateMatch has no client key: a create given up on leaves the match created (the
    lobby lists it; it expires like any match waiting for players), once, without an error."""
    store = SlowWrites()
    with capture_logs_with_context() as logs:
        async with served(store) as srv:
            await given_up_mid_write(srv, store, "CreateMatch", lambda: srv.games.CreateMatch(
                pb.CreateMatchRequest(game="klaberjass", listed=True), timeout=LOST_DEADLINE_S))
            lobby = (await srv.games.ListOpenMatches(pb.ListOpenMatchesRequest())).matches
            assert len(lobby) == 1 and lobby[0].status == match_pb2.MATCH_STATUS_WAITING
            assert srv.metrics.value("cardgames_matches_created_total", {"game": "klaberjass"}) == 1
    create = [e for e in logs if e.get("event") == "rpc" and e.get("method", "").endswith("/CreateMatch")]
    assert [e["code"] for e in create] == ["DEADLINE_EXCEEDED"]
    assert not _errors(logs), _errors(logs)


@run
async def test_a_call_whose_deadline_passed_is_logged_and_counted_as_deadline_exceeded():
    """grpc cancels the handler of a call whose deadline passed as it cancels one whose client
    went away; the rpc line and rpc_requests said CANCELLED for both, so an engine too slow for
    its clients looked like impatient clients. They now say what the client saw."""
    from .test_edge import ScriptedService

    class Slow(ScriptedService):
        async def get_match(self, match_id):
            self.calls.append(("get_match", match_id))
            await asyncio.sleep(60)  # never answers: the client's deadline or its cancel ends it
            return await super().get_match(match_id)

    method = "/cardgames.v1.CardGamesService/GetMatch"
    service = Slow()
    with capture_logs_with_context() as logs:
        async with running(service) as srv:
            for _ in range(3):
                err = await expect_error(srv.games.GetMatch(pb.GetMatchRequest(match_id="m1"), timeout=0.2))
                assert err.code == grpc.StatusCode.DEADLINE_EXCEEDED
            served = len(service.calls)
            call = srv.games.GetMatch(pb.GetMatchRequest(match_id="m1"), timeout=30)
            await _until(lambda: len(service.calls) > served)  # being served: the client goes away
            call.cancel()
            watch = srv.games.WatchMatch(pb.WatchMatchRequest(match_id="m1"), timeout=0.3)
            assert (await watch.read()).kind == match_pb2.EVENT_KIND_SNAPSHOT
            assert (await expect_error(watch)).code == grpc.StatusCode.DEADLINE_EXCEEDED
            await _until(lambda: srv.metrics.value("cardgames_rpc_in_flight", {"method": method}) == 0
                         and srv.metrics.value("cardgames_rpc_in_flight", {"method": WATCH}) == 0)
            count = srv.metrics.value
            assert count("cardgames_rpc_requests_total", {"method": method, "code": "DEADLINE_EXCEEDED"}) == 3
            assert count("cardgames_rpc_requests_total", {"method": method, "code": "CANCELLED"}) == 1
            assert count("cardgames_rpc_requests_total", {"method": WATCH, "code": "DEADLINE_EXCEEDED"}) == 1
    codes = [(e["method"], e["code"]) for e in logs if e.get("event") == "rpc"]
    assert codes == [(method, "DEADLINE_EXCEEDED")] * 3 + [(method, "CANCELLED"), (WATCH, "DEADLINE_EXCEEDED")]


@run
async def test_a_call_that_finds_no_file_descriptor_free_is_unavailable_not_internal():
    """Out of file descriptors, a call that needed one failed INTERNAL with a traceback (seen
    for real: a GetView importing its game's views module on first use, EMFILE), which
    clients do not retry and operators read as a bug. It is UNAVAILABLE, reason
    OUT_OF_FILE_DESCRIPTORS, logged as such; the next call is served."""
    import errno

    import structlog

    from .test_edge import SEAT_TOKEN, ScriptedService

    service = ScriptedService()
    async with running(service) as srv:
        for number in (errno.EMFILE, errno.ENFILE):
            service.error = OSError(number, os.strerror(number), "views.py")
            with structlog.testing.capture_logs() as logs:
                err = await expect_error(srv.games.GetView(pb.GetViewRequest(match_id="m1"),
                                                           metadata=bearer(SEAT_TOKEN)))
                await _until(lambda: any(e["event"] == "rpc" for e in logs))
            assert (err.code, err.reason) == (grpc.StatusCode.UNAVAILABLE, "OUT_OF_FILE_DESCRIPTORS")
            assert "file descriptor" in err.message and "views.py" not in err.message
            assert [e["event"] for e in logs] == ["rpc_out_of_file_descriptors", "rpc"]
            assert logs[0]["log_level"] == "warning" and "exc_info" not in logs[0]
            assert logs[0]["method"] == "/cardgames.v1.CardGamesService/GetView"
            assert logs[0]["error"] == str(service.error)  # the errno's words, what ran out
            assert (logs[1]["code"], logs[1]["reason"]) == ("UNAVAILABLE", "OUT_OF_FILE_DESCRIPTORS")
        service.error = OSError(errno.EACCES, "Permission denied")  # any other OSError: a bug
        err = await expect_error(srv.games.GetView(pb.GetViewRequest(match_id="m1"),
                                                   metadata=bearer(SEAT_TOKEN)))
        assert err.code == grpc.StatusCode.INTERNAL
        service.error = None
        view = await srv.games.GetView(pb.GetViewRequest(match_id="m1"), metadata=bearer(SEAT_TOKEN))
        assert view.view.seq == 3
