"""CreateMatch retried with its client_create_id over a real channel: the client gives up on a
create whose answer is late (DEADLINE_EXCEEDED) while the server writes the match anyway; the
retry with the same id gets that match instead of a second one, also when two calls with the
id arrive at once and after a restart on the same SQLite database; the same id with another
request is ALREADY_EXISTS / CLIENT_CREATE_ID_IN_USE. A malformed id is INVALID_ARGUMENT /
BAD_CLIENT_CREATE_ID naming the field, and creates nothing. The id never reaches a log line."""

from __future__ import annotations

import asyncio
import os
import tempfile
import uuid

import grpc
from structlog.testing import capture_logs

from engine_service.sessions.tokens import create_id_hash
from engine_service.store import MemoryStore, SqliteStore
from engine_service.transport.generated import card_games_pb2 as pb, match_pb2

from .harness import error_of, expect_error, run
from .test_join_retry import LOST_DEADLINE_S, SlowSeats, served, until


class SlowCreates(SlowSeats):
    """A store whose creations (and seats) are durable at once but answer late: once released
    while held (SlowSeats.hold), then ``delay`` seconds late."""

    async def create_match(self, record, decks=()):
        await super().create_match(record, decks)
        await self.answered()


CREATE = {"method": "/cardgames.v1.CardGamesService/CreateMatch"}


def create(srv, key: str, timeout: float | None = None, **fields):
    req = pb.CreateMatchRequest(**{"game": "klaberjass", "name": "table", "client_create_id": key, **fields})
    return srv.games.CreateMatch(req, timeout=timeout)


@run
async def test_a_create_whose_answer_was_lost_is_retried_into_the_same_match():
    store = SlowCreates()
    with capture_logs() as logs:
        async with served(store) as srv:
            key = str(uuid.uuid4())
            await srv.channel.channel_ready()  # the deadline below is the call's way, not a connection's set-up
            store.hold()
            try:
                err = await expect_error(create(srv, key, timeout=LOST_DEADLINE_S))
                assert err.code == grpc.StatusCode.DEADLINE_EXCEEDED
                assert store.held, "the deadline passed before the write began"
                await until(lambda: srv.metrics.value("cardgames_rpc_in_flight", CREATE) == 0, "the call's end")
                # a retry sent while the first write is still under way waits for it
                retry = asyncio.ensure_future(create(srv, key))
                await until(lambda: srv.metrics.value("cardgames_rpc_in_flight", CREATE) == 1 or retry.done(),
                            "the retry served")
                await asyncio.sleep(0.05)  # time for a retry that would not wait to answer
                assert not retry.done(), "the retry did not wait for the write under way"
            finally:
                store.release()
            first = (await retry).match
            again = (await create(srv, key)).match
            assert first.match_id == again.match_id and first.status == match_pb2.MATCH_STATUS_WAITING
            assert [li.record.match_id for li in await store.list_matches()] == [first.match_id]
            # two at once: one match, both answers name it
            other = str(uuid.uuid4())
            store.hold()
            try:
                both = asyncio.gather(create(srv, other), create(srv, other))
                await until(lambda: srv.metrics.value("cardgames_rpc_in_flight", CREATE) == 2, "both served")
            finally:
                store.release()
            both = await both
            assert both[0].match.match_id == both[1].match.match_id != first.match_id
            assert len(await store.list_matches()) == 2
            err = await expect_error(create(srv, key, name="another table"))
            assert (err.code, err.reason) == (grpc.StatusCode.ALREADY_EXISTS, "CLIENT_CREATE_ID_IN_USE")
            assert first.match_id not in err.message
            err = await expect_error(create(srv, key, listed=True))
            assert (err.code, err.reason) == (grpc.StatusCode.ALREADY_EXISTS, "CLIENT_CREATE_ID_IN_USE")
            assert len(await store.list_matches()) == 2
    text = repr(logs)
    events = [e["event"] for e in logs]
    assert "rpc" in events and "match_created" in events and "match_create_retried" in events
    for k in (key, other):
        assert k not in text and create_id_hash(k) not in text


@run
async def test_a_retry_gets_the_match_back_after_a_restart():
    path = os.path.join(tempfile.mkdtemp(), "create.db")
    key = str(uuid.uuid4())
    async with served(SqliteStore(path)) as srv:
        lost = (await create(srv, key, game="japanese_joker")).match
    async with served(SqliteStore(path)) as srv:
        again = (await create(srv, key, game="japanese_joker")).match
        assert again.match_id == lost.match_id and again.status == match_pb2.MATCH_STATUS_WAITING
        listed = await srv.games.ListOpenMatches(pb.ListOpenMatchesRequest())
        assert list(listed.matches) == []  # not listed: one match, none new
    with open(path, "rb") as f:
        assert key.encode() not in f.read()


@run
async def test_a_malformed_client_create_id_is_refused_and_creates_nothing():
    store = MemoryStore()
    async with served(store) as srv:
        for bad in ("short", "x" * 129, "0123456789abcdef\t", "0123456789abcdef\u200b", "\x7f" * 20):
            try:
                await create(srv, bad)
            except grpc.aio.AioRpcError as exc:
                err = error_of(exc)
            else:
                raise AssertionError(f"{bad!r} was accepted")
            assert (err.code, err.reason) == (grpc.StatusCode.INVALID_ARGUMENT, "BAD_CLIENT_CREATE_ID"), bad
            assert err.metadata == {"field": "client_create_id"}
        assert await store.list_matches() == []
        a, b = (await create(srv, "-" * 16)).match, (await create(srv, "\u00e9" * 128)).match
        assert a.match_id != b.match_id
