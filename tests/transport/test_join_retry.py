"""JoinMatch retried with its client_join_id over a real channel: the client gives up on a
join whose answer is late (DEADLINE_EXCEEDED) while the server writes the seat anyway (a write
under way finishes as if the client had stayed); the retry with the same id gets that seat
with a new token instead of SEAT_TAKEN or a second seat, while the match waits or once that
join started it, and after a restart on the same SQLite database; the match then plays to its
end with the new token. A malformed id is INVALID_ARGUMENT / BAD_CLIENT_JOIN_ID naming the
field, and changes nothing."""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
import tempfile
import time
import uuid
from typing import Any, AsyncIterator, Callable

import grpc

from engine_service.observability.metrics import Metrics
from engine_service.sessions.config import SessionConfig
from engine_service.sessions.manager import MatchManager
from engine_service.store import MemoryStore, SqliteStore
from engine_service.transport.generated import card_games_pb2 as pb, match_pb2

from .harness import bearer, error_of, expect_error, run, running
from .players import Inbox, RandomPlayer, watch


class SlowSeats(MemoryStore):
    """A store whose seat writes (a seat alone, or the last seat with the match's start) are
    durable at once but answer ``delay`` seconds late, or, while :meth:`hold` holds them, once
    :meth:`release` lets them answer (a client's deadline that passes mid-write, whatever
    the machine's pace; ``held`` counts the writes that waited)."""

    delay = 0.0

    def __init__(self) -> None:
        super().__init__()
        self._answer = asyncio.Event()
        self._answer.set()
        self.held = 0

    def hold(self) -> None:
        self._answer.clear()
        self.held = 0

    def release(self) -> None:
        self._answer.set()

    async def answered(self) -> None:
        """A durable write's answer: when released, then ``delay`` seconds late."""
        if not self._answer.is_set():
            self.held += 1
            await self._answer.wait()
        await asyncio.sleep(self.delay)

    async def save_seat(self, match_id, seat):
        await super().save_seat(match_id, seat)
        await self.answered()

    async def start_match(self, match_id, seats=(), decks=()):
        await super().start_match(match_id, seats, decks)
        await self.answered()


@contextlib.asynccontextmanager
async def served(store: Any) -> AsyncIterator[Any]:
    metrics = Metrics()
    mgr = MatchManager(SessionConfig(db_path="memory:", bot_pace_s=0.0), store=store, metrics=metrics,
                       create_bot_host=False)
    await mgr.start()
    try:
        async with running(mgr, metrics=metrics) as srv:
            yield srv
    finally:
        await mgr.close()


def join(srv: Any, match_id: str, key: str, seat: int | None = None, timeout: float | None = None) -> Any:
    req = pb.JoinMatchRequest(match_id=match_id, player_name="ada", client_join_id=key)
    if seat is not None:
        req.seat = seat
    return srv.games.JoinMatch(req, timeout=timeout)


async def until(condition: Callable[[], bool], what: str = "the condition", timeout_s: float = 30.0) -> None:
    """Until ``condition()`` holds (a hang guard of ``timeout_s``, not a speed bound)."""
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, f"{what}: not within {timeout_s:g} s"
        await asyncio.sleep(0.01)


#: The deadline of a call given up on mid-write: its write is held until the server has ended
#: the call, so this need only cover the call's way to the store on a connected channel (0.1 s
#: did not always on a loaded machine: the call then ended before its write began; at a load
#: average of 16 on 2 cores the way took up to 0.44 s), and is all the test waits.
LOST_DEADLINE_S = 0.75


async def given_up_mid_write(srv: Any, store: SlowSeats, method: str, call: Callable[[], Any]) -> None:
    """``call`` (a unary call of CardGamesService's ``method`` made with ``timeout=LOST_DEADLINE_S``)
    fails with DEADLINE_EXCEEDED while its write waits, held, for its answer; once the server
    has ended the call too (released earlier, the handler could answer OK before it noticed
    the deadline), the write finishes as if the client had stayed. The channel is connected
    first: the deadline covers the call's way, not a connection's set-up as well."""
    await srv.channel.channel_ready()
    store.hold()
    try:
        err = await expect_error(call())
        assert err.code == grpc.StatusCode.DEADLINE_EXCEEDED
        assert store.held, "the deadline passed before the write began: nothing was given up mid-write"
        in_flight = {"method": f"/cardgames.v1.CardGamesService/{method}"}
        await until(lambda: srv.metrics.value("cardgames_rpc_in_flight", in_flight) == 0, "the server ending the call")
    finally:
        store.release()
    await until(lambda: not srv.server.service._writes, "the write's end")


async def lost_join(srv: Any, store: SlowSeats, match_id: str, key: str, seat: int | None = None) -> None:
    """A join whose answer does not come back in time: the seat is written all the same."""
    await given_up_mid_write(srv, store, "JoinMatch", lambda: join(srv, match_id, key, seat, timeout=LOST_DEADLINE_S))


async def summary_of(srv: Any, match_id: str) -> Any:
    return (await srv.games.GetMatch(pb.GetMatchRequest(match_id=match_id))).match


async def play_to_the_end(srv: Any, match_id: str, tokens: list[str]) -> Any:
    inboxes = [Inbox(seat) for seat in range(len(tokens))]
    players = [RandomPlayer(srv.games, match_id, seat, token, random.Random(seat), inboxes[seat])
               for seat, token in enumerate(tokens)]
    await asyncio.gather(*(watch(srv.games, match_id, inboxes[seat], token, seat=seat, act=players[seat].act,
                                 start_after=None) for seat, token in enumerate(tokens)))
    return await summary_of(srv, match_id)


@run
async def test_a_join_whose_answer_was_lost_is_retried_into_the_same_seat():
    store = SlowSeats()
    async with served(store) as srv:
        match_id = (await srv.games.CreateMatch(pb.CreateMatchRequest(game="klaberjass"))).match.match_id
        key = str(uuid.uuid4())
        await lost_join(srv, store, match_id, key)
        waiting = await summary_of(srv, match_id)
        assert [s.taken for s in waiting.seats] == [True, False]  # taken by a token nobody has
        # without the id the seat is lost: a plain retry would take the other seat
        again = await join(srv, match_id, key)
        assert again.seat == 0 and again.seat_token
        assert [s.taken for s in (await summary_of(srv, match_id)).seats] == [True, False]
        view = (await srv.games.GetView(pb.GetViewRequest(match_id=match_id), metadata=bearer(again.seat_token))).view
        assert view.seat == 0
        # the last seat: its join starts the match, and its answer is lost too
        other = str(uuid.uuid4())
        await lost_join(srv, store, match_id, other, seat=1)
        started = await summary_of(srv, match_id)
        assert started.status == match_pb2.MATCH_STATUS_ACTIVE
        second = await join(srv, match_id, other, seat=0)  # whatever seat says: its own seat
        assert second.seat == 1
        third = await join(srv, match_id, other)
        assert third.seat == 1 and third.seat_token != second.seat_token
        err = await expect_error(srv.games.GetView(pb.GetViewRequest(match_id=match_id),
                                                   metadata=bearer(second.seat_token)))
        assert err.code == grpc.StatusCode.UNAUTHENTICATED
        err = await expect_error(join(srv, match_id, str(uuid.uuid4())))
        assert (err.code, err.reason) == (grpc.StatusCode.ALREADY_EXISTS, "SEAT_TAKEN")
        final = await play_to_the_end(srv, match_id, [again.seat_token, third.seat_token])
        assert final.status == match_pb2.MATCH_STATUS_FINISHED and final.result["outcome"] == "completed"


@run
async def test_a_retry_gets_the_seat_back_after_a_restart():
    path = os.path.join(tempfile.mkdtemp(), "join.db")
    key = str(uuid.uuid4())
    async with served(SqliteStore(path)) as srv:
        match_id = (await srv.games.CreateMatch(pb.CreateMatchRequest(game="japanese_joker"))).match.match_id
        first = await join(srv, match_id, str(uuid.uuid4()))
        lost = await join(srv, match_id, key)
        assert (first.seat, lost.seat) == (0, 1)
    async with served(SqliteStore(path)) as srv:
        again = await join(srv, match_id, key)
        assert again.seat == 1 and again.seat_token != lost.seat_token
        err = await expect_error(srv.games.GetView(pb.GetViewRequest(match_id=match_id),
                                                   metadata=bearer(lost.seat_token)))
        assert err.code == grpc.StatusCode.UNAUTHENTICATED
        final = await play_to_the_end(srv, match_id, [first.seat_token, again.seat_token])
        assert final.status == match_pb2.MATCH_STATUS_FINISHED


@run
async def test_a_malformed_client_join_id_is_refused_and_changes_nothing():
    async with served(MemoryStore()) as srv:
        match_id = (await srv.games.CreateMatch(pb.CreateMatchRequest(game="klaberjass"))).match.match_id
        for bad in ("short", "x" * 129, "0123456789abcdef\t", "0123456789abcdef\u200b", "\x7f" * 20):
            try:
                await join(srv, match_id, bad)
            except grpc.aio.AioRpcError as exc:
                err = error_of(exc)
            else:
                raise AssertionError(f"{bad!r} was accepted")
            assert (err.code, err.reason) == (grpc.StatusCode.INVALID_ARGUMENT, "BAD_CLIENT_JOIN_ID"), bad
            assert err.metadata == {"field": "client_join_id"}
        assert not any(s.taken for s in (await summary_of(srv, match_id)).seats)
        assert (await join(srv, match_id, "-" * 16)).seat == 0
        assert (await join(srv, match_id, "\u00e9" * 128)).seat == 1
