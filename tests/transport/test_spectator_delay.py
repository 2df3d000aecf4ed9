"""Delayed spectators over a real channel (docs/api.md, "Spectators"): CreateMatch's
``spectator_delay_actions`` is in the summary; a spectator's GetView and WatchMatch stop that
many actions short of the match (no deadline), a seat's do not; a resume beyond the
spectators' position and a delay out of range are INVALID_ARGUMENT."""

from __future__ import annotations

import asyncio
import random

import grpc
import pytest

from engine_service.sessions.config import SessionConfig
from engine_service.sessions.delay import MAX_SPECTATOR_DELAY
from engine_service.transport.generated import card_games_pb2 as pb, match_pb2

from .harness import bearer, expect_error, run
from .players import create_open_match
from .test_service import served

DELAY = 3


@run
async def test_a_spectator_sees_the_match_delay_actions_late():
    async with served() as (mgr, srv):
        stub = srv.games
        match_id, tokens = await create_open_match(stub, "japanese_joker", spectator_delay_actions=DELAY)
        summary = (await stub.GetMatch(pb.GetMatchRequest(match_id=match_id))).match
        assert summary.spectator_delay_actions == DELAY

        received: list[match_pb2.MatchEvent] = []

        async def spectate() -> None:
            async for ev in stub.WatchMatch(pb.WatchMatchRequest(match_id=match_id, after_seq=0)):
                if ev.kind == match_pb2.EVENT_KIND_ACTION:
                    received.append(ev)

        spectator = asyncio.ensure_future(spectate())
        rng = random.Random(4)
        for n in range(1, 13):
            views = [(await stub.GetView(pb.GetViewRequest(match_id=match_id), metadata=bearer(t))).view
                     for t in tokens]
            seat = next(v.seat for v in views if v.HasField("to_act") and v.to_act == v.seat)
            action = rng.choice(views[seat].legal_actions).notation
            answer = await stub.SubmitAction(pb.SubmitActionRequest(
                match_id=match_id, action=action, expected_seq=views[seat].seq), metadata=bearer(tokens[seat]))
            assert answer.seq == n and answer.view.seq == n  # the seat is never delayed
            seen = (await stub.GetView(pb.GetViewRequest(match_id=match_id))).view
            assert seen.seq == max(0, n - DELAY) and not seen.HasField("deadline") and not seen.hand
        for _ in range(1000):
            if len(received) == 12 - DELAY:
                break
            await asyncio.sleep(0.01)
        assert [e.seq for e in received] == list(range(1, 12 - DELAY + 1))
        assert all(not e.view.HasField("deadline") for e in received)

        ahead = await expect_error(stub.WatchMatch(pb.WatchMatchRequest(match_id=match_id, after_seq=12)))
        assert (ahead.code, ahead.reason) == (grpc.StatusCode.INVALID_ARGUMENT, "BAD_AFTER_SEQ")
        seat_stream = stub.WatchMatch(pb.WatchMatchRequest(match_id=match_id, after_seq=12),
                                      metadata=bearer(tokens[0]))
        first = await seat_stream.read()  # a seat may resume at the match's own seq
        assert first.seq == 12
        seat_stream.cancel()
        spectator.cancel()

        too_long = await expect_error(stub.CreateMatch(pb.CreateMatchRequest(
            game="klaberjass", spectator_delay_actions=MAX_SPECTATOR_DELAY + 1)))
        assert (too_long.code, too_long.reason) == (grpc.StatusCode.INVALID_ARGUMENT, "BAD_SPECTATOR_DELAY")


@run
async def test_a_delayed_spectators_heartbeats_carry_no_deadline():
    """docs/api.md: a delayed spectator's heartbeats carry no deadline, also on a stream opened
    before the first action (when the spectators' position was still the match's): the match's
    deadline is that of a decision the spectator is not shown yet.

    Until the first action the spectators are not behind: a heartbeat made then carries the
    opening decision's deadline, rightly, and is read after the actions (a loaded machine is
    slow to play the first one: seen once). Such a heartbeat is told apart by that deadline,
    which no later decision has (each arms its own, later)."""
    config = SessionConfig(db_path="memory:", bot_pace_s=0.0, heartbeat_interval_s=0.05)
    async with served(config) as (mgr, srv):
        stub = srv.games
        match_id, tokens = await create_open_match(stub, "japanese_joker", spectator_delay_actions=DELAY)
        # both seats present: a two-player game runs its turn timer only then (JJK-10.2)
        seat_streams = [stub.WatchMatch(pb.WatchMatchRequest(match_id=match_id), metadata=bearer(t))
                        for t in tokens]
        spectator = stub.WatchMatch(pb.WatchMatchRequest(match_id=match_id))  # at seq 0: not behind yet
        assert (await spectator.read()).kind == match_pb2.EVENT_KIND_SNAPSHOT
        for _ in range(1000):  # the seats' streams connect: the opening decision's deadline
            opening = (await stub.GetView(pb.GetViewRequest(match_id=match_id), metadata=bearer(tokens[0]))).view
            if opening.HasField("deadline"):
                break
            await asyncio.sleep(0.01)
        assert opening.seq == 0 and opening.HasField("deadline")
        opening_deadline = opening.deadline.ToNanoseconds() / 1e9
        rng = random.Random(5)
        for _ in range(DELAY + 2):
            views = [(await stub.GetView(pb.GetViewRequest(match_id=match_id), metadata=bearer(t))).view
                     for t in tokens]
            seat = next(v.seat for v in views if v.HasField("to_act") and v.to_act == v.seat)
            await stub.SubmitAction(pb.SubmitActionRequest(
                match_id=match_id, action=rng.choice(views[seat].legal_actions).notation,
                expected_seq=views[seat].seq), metadata=bearer(tokens[seat]))
        live = (await stub.GetView(pb.GetViewRequest(match_id=match_id), metadata=bearer(tokens[0]))).view
        assert live.HasField("deadline")  # the match has one: the spectator must not see it
        heartbeats = 0
        while heartbeats < 3:
            ev = await asyncio.wait_for(spectator.read(), 30)
            if ev.kind == match_pb2.EVENT_KIND_ACTION:
                assert not ev.view.HasField("deadline")
            elif ev.kind == match_pb2.EVENT_KIND_HEARTBEAT:
                assert ev.seq <= live.seq - DELAY
                deadline = ev.details["deadline"]
                if deadline is not None:  # made before the first action, or a leak
                    assert ev.seq == 0 and deadline == pytest.approx(opening_deadline, abs=1e-5), ev.details
                    continue
                heartbeats += 1  # three heartbeats made while the spectator was behind
        spectator.cancel()
        for s in seat_streams:
            s.cancel()
