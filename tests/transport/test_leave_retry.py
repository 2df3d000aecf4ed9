"""A retried LeaveMatch of a waiting match, over a real channel against the real session layer:
the leave frees the seat and voids its token, and a retry with that token (the first answer
was lost: a deadline, a dropped connection) is answered OK with the first answer, unchanged
by what happened since and changing nothing; a retry that raced the leave (authenticated
before the token was voided) gets that answer too. Every other call with the void token, and
every made-up token, keeps the error it had before (UNAUTHENTICATED / MISSING_OR_BAD_TOKEN)."""

from __future__ import annotations

import asyncio
import secrets
import uuid

import grpc

from engine_service.sessions import match as match_module
from engine_service.transport.generated import card_games_pb2 as pb, match_pb2
from tests.sessions.helpers import capture_logs_with_context

from .harness import bearer, expect_error, run
from .test_join_retry import LOST_DEADLINE_S, SlowSeats, served, until


async def _waiting_seat(srv) -> tuple[str, str]:
    """A waiting Klaberjass match with seat 0 joined: its id and the seat's token."""
    match_id = (await srv.games.CreateMatch(pb.CreateMatchRequest(game="klaberjass"))).match.match_id
    joined = await srv.games.JoinMatch(pb.JoinMatchRequest(match_id=match_id, seat=0, player_name="ada",
                                                           client_join_id=str(uuid.uuid4())))
    return match_id, joined.seat_token


def _leave(srv, match_id: str, token: str, **kwargs):
    return srv.games.LeaveMatch(pb.LeaveMatchRequest(match_id=match_id), metadata=bearer(token), **kwargs)


def _refusal(err) -> tuple:
    return err.code, err.reason, err.message, err.metadata


@run
async def test_a_retried_leave_of_a_waiting_match_gets_the_first_answer_and_a_made_up_token_does_not():
    with capture_logs_with_context() as logs:
        async with served(SlowSeats()) as srv:
            match_id, token = await _waiting_seat(srv)
            made_up = secrets.token_urlsafe(32)
            before = _refusal(await expect_error(_leave(srv, match_id, made_up)))
            assert before[:2] == (grpc.StatusCode.UNAUTHENTICATED, "MISSING_OR_BAD_TOKEN")

            first = (await _leave(srv, match_id, token)).match
            assert first.status == match_pb2.MATCH_STATUS_WAITING and not first.seats[0].taken
            again = (await _leave(srv, match_id, token)).match
            assert again == first

            # the retry changed nothing; someone else takes the seat and the match starts:
            # the void token's retry still gets the first answer, not the match as it is now
            assert (await srv.games.GetMatch(pb.GetMatchRequest(match_id=match_id))).match == first
            for seat in (0, 1):
                await srv.games.JoinMatch(pb.JoinMatchRequest(match_id=match_id, seat=seat, player_name="bo"))
            now = (await srv.games.GetMatch(pb.GetMatchRequest(match_id=match_id))).match
            assert now.status == match_pb2.MATCH_STATUS_ACTIVE
            assert (await _leave(srv, match_id, token)).match == first
            assert (await srv.games.GetMatch(pb.GetMatchRequest(match_id=match_id))).match == now

            # only LeaveMatch answers it: the void token opens nothing else
            for call in (srv.games.GetView(pb.GetViewRequest(match_id=match_id), metadata=bearer(token)),
                         srv.games.SubmitAction(pb.SubmitActionRequest(match_id=match_id, action="pass"),
                                                metadata=bearer(token)),
                         srv.games.WatchMatch(pb.WatchMatchRequest(match_id=match_id), metadata=bearer(token))):
                err = await expect_error(call)
                assert (err.code, err.reason) == (grpc.StatusCode.UNAUTHENTICATED, "MISSING_OR_BAD_TOKEN")
            # a made-up token's error is what it was; so is the void token's on another match
            assert _refusal(await expect_error(_leave(srv, match_id, made_up))) == before
            other, _ = await _waiting_seat(srv)
            assert _refusal(await expect_error(_leave(srv, other, token))) == before
    repeats = [e for e in logs if e.get("event") == "leave_repeated"]
    assert [(e["seat"], e["freed"]) for e in repeats] == [(0, True), (0, True)]
    assert not any(token in str(e) for e in logs), "the token is never logged"


@run
async def test_a_leave_whose_answer_was_lost_is_retried_into_ok():
    """The first leave's deadline passes while its write is under way (the write completes):
    one retry sent while it is still under way (authenticated before the token was voided)
    and one after both get the answer the first leave would have had."""
    store = SlowSeats()
    async with served(store) as srv:
        match_id, token = await _waiting_seat(srv)
        lock = srv.server.service._matches[match_id].lock
        store.hold()
        try:
            err = await expect_error(_leave(srv, match_id, token, timeout=LOST_DEADLINE_S))
            assert err.code == grpc.StatusCode.DEADLINE_EXCEEDED
            assert store.held, "the deadline passed before the write began"
            racing_call = asyncio.ensure_future(_leave(srv, match_id, token))
            await until(lambda: lock._waiters, "the retry waiting for the lock")  # authenticated
        finally:
            store.release()
        racing = (await racing_call).match
        await until(lambda: not srv.server.service._writes, "the first leave's write")
        after = (await _leave(srv, match_id, token)).match
        assert racing == after and after.status == match_pb2.MATCH_STATUS_WAITING
        assert not after.seats[0].taken
        assert (await srv.games.GetMatch(pb.GetMatchRequest(match_id=match_id))).match == after


@run
async def test_a_match_remembers_only_its_latest_freed_tokens():
    """Join-and-leave cycles cannot grow a waiting match without bound: past FREED_TOKENS_KEPT
    the oldest freed token is forgotten (its retry is UNAUTHENTICATED as before the change)."""
    kept = match_module.FREED_TOKENS_KEPT
    async with served(SlowSeats()) as srv:
        match_id = (await srv.games.CreateMatch(pb.CreateMatchRequest(game="klaberjass"))).match.match_id
        tokens = []
        for _ in range(kept + 1):
            joined = await srv.games.JoinMatch(pb.JoinMatchRequest(match_id=match_id, seat=0))
            await _leave(srv, match_id, joined.seat_token)
            tokens.append(joined.seat_token)
        assert len(srv.server.service._matches[match_id].freed_tokens) == kept
        err = await expect_error(_leave(srv, match_id, tokens[0]))
        assert (err.code, err.reason) == (grpc.StatusCode.UNAUTHENTICATED, "MISSING_OR_BAD_TOKEN")
        assert (await _leave(srv, match_id, tokens[1])).match.match_id == match_id



@run
async def test_a_closed_manager_answers_no_repeated_leave_and_raises_nothing():
    """The transport asks only after a token was refused: the refusal must stand as it is, also
    while the server shuts down (no UNAVAILABLE in its place)."""
    async with served(SlowSeats()) as srv:
        match_id, token = await _waiting_seat(srv)
        await _leave(srv, match_id, token)
        mgr = srv.server.service
        assert mgr.repeated_leave(match_id, token) is not None
    assert mgr.repeated_leave(match_id, secrets.token_urlsafe(32)) is None  # not UNAVAILABLE
