"""Whole matches of every registered game through the MatchManager: per-seat clients that see
only their own view, bots in every seat, and a mix; the log replays as a transcript that
checks out against the rules core."""

from __future__ import annotations

import random

import pytest

from engine_service.plugins.host import BotHost
from engine_service.rules import get_game, transcript
from engine_service.sessions.api import CreateMatchRequest, SeatConfig
from engine_service.store import MemoryStore
from tests.shared_paths import shared_dir

from .helpers import GAMES, collect, manager, open_match, play_random, run


def check_transcript(data: dict, seq: int) -> None:
    diff, state = transcript.check(data)
    assert diff is None, str(diff)
    assert state.is_over()
    assert sum(len(d["steps"]) for d in data["deals"]) == seq


@pytest.mark.parametrize("game_id", GAMES)
def test_whole_match_played_by_seat_clients(game_id):
    async def go():
        async with manager() as mgr:
            match_id, principals = await open_match(mgr, game_id)
            assert (await mgr.get_match(match_id)).status == "active"
            n = await play_random(mgr, match_id, principals, random.Random(7))
            summary = await mgr.get_match(match_id)
            data = await mgr.export_transcript(match_id)
            state = mgr.state_of(match_id)
            return n, summary, data, state

    n, summary, data, state = run(go())
    assert summary.status == "finished" and summary.seq == n
    assert summary.result["outcome"] == "completed" and summary.result["over"] is True
    assert "abandoned" not in summary.result  # nobody left
    assert summary.result["winners"] == state.result()["winners"]
    assert summary.result["totals"] == state.result()["totals"]
    check_transcript(data, n)


def test_a_completed_match_is_stored_with_its_end_time():
    """The action that completes a match ends it (MatchWriter.apply -> mark_over) with the
    time it ended, which the status write stores: the finished-match retention and the
    admin's listing go by it. A match stored finished with no end time was never pruned."""
    store = MemoryStore()

    async def go():
        async with manager(store=store) as mgr:
            match_id, principals = await open_match(mgr, "klaberjass")
            await play_random(mgr, match_id, principals, random.Random(3))
            return await store.load_match(match_id)

    stored = run(go())
    assert stored.record.status == "finished"
    assert stored.record.ended_at is not None and stored.record.ended_at >= stored.record.created_at


@pytest.mark.parametrize("game_id", ["klaberjass", "japanese_joker"])
def test_a_resigned_match_exports_the_play_only(game_id):
    """NOTATION.md section 2 (JJK-10.5): a resignation is a session event, not an action. The
    transcript of a resigned match holds the actions played and the rules' result (the match
    is not over by the rules, nobody won by them) and replays as such; how it ended is the
    summary's (JJK-8.4, JJK-10.1: the resigner's opponent wins)."""
    async def go():
        async with manager() as mgr:
            match_id, principals = await open_match(mgr, game_id)
            n = await play_random(mgr, match_id, principals, random.Random(5), max_actions=15)
            await mgr.leave_match(match_id, principals[0], resign=True)
            return n, await mgr.get_match(match_id), await mgr.export_transcript(match_id)

    n, summary, data = run(go())
    assert summary.status == "finished" and summary.result["outcome"] == "resigned"
    assert summary.result["resigned"] == 0 and summary.result["winners"] == [1]
    # the session's result says the match is over; the rules' own (the transcript's) does not
    assert summary.result["over"] is True
    assert data["result"]["over"] is False and data["result"]["winners"] == []
    assert sum(len(d["steps"]) for d in data["deals"]) == n == summary.seq
    diff, state = transcript.check(data)
    assert diff is None, str(diff)
    assert not state.is_over()


@pytest.mark.parametrize("game_id", GAMES)
def test_whole_match_played_by_bots(game_id):
    """Every seat a bot: the session drives the match to its end on its own; a spectator
    sees every action exactly once, in order, made by a bot."""
    async def go():
        host = BotHost(workers=1, autoload=False)
        try:
            async with manager(host=host) as mgr:
                n = get_game(game_id).num_seats
                summary = await mgr.create_match(CreateMatchRequest(
                    game=game_id, seats=[SeatConfig("bot", "random")] * n))
                assert summary.status == "active"
                events = await collect(mgr.watch(summary.match_id, mgr.authenticate(summary.match_id, None), -1))
                final = await mgr.get_match(summary.match_id)
                data = await mgr.export_transcript(summary.match_id)
                return events, final, data
        finally:
            await host.close()

    events, final, data = run(go(), timeout=600)
    assert final.status == "finished" and final.result["outcome"] == "completed"
    assert events[0].kind == "snapshot" and events[-1].kind == "match_ended"
    actions = [e for e in events if e.kind == "action"]
    assert [e.seq for e in actions] == list(range(events[0].seq + 1, final.seq + 1))
    assert {e.by for e in actions} == {"bot"}
    # match.proto SeatInfo: a bot seat is always present, and not `taken` (an open seat that
    # a player has joined); so say the snapshot's seats (docs/api.md, SNAPSHOT)
    assert all(s.present and s.kind == "bot" and not s.taken for s in final.seats)
    assert all(s["present"] and not s["taken"] for s in events[0].details["seats"])
    check_transcript(data, final.seq)


@pytest.mark.parametrize("game_id", GAMES)
def test_a_player_against_bots(game_id):
    async def go():
        host = BotHost(workers=1, autoload=False)
        try:
            async with manager(host=host) as mgr:
                n = get_game(game_id).num_seats
                seats = [SeatConfig()] + [SeatConfig("bot", "random")] * (n - 1)
                summary = await mgr.create_match(CreateMatchRequest(game=game_id, seats=seats))
                assert summary.status == "waiting"
                joined = await mgr.join_match(summary.match_id, None, "ann")
                assert joined.seat == 0
                me = mgr.authenticate(summary.match_id, joined.token)
                played = await play_random(mgr, summary.match_id, [me] + [None] * (n - 1), random.Random(3))
                final = await mgr.get_match(summary.match_id)
                data = await mgr.export_transcript(summary.match_id)
                return played, final, data
        finally:
            await host.close()

    played, final, data = run(go(), timeout=600)
    assert final.status == "finished" and 0 < played < final.seq
    check_transcript(data, final.seq)


def test_games_and_bots_are_listed():
    async def go():
        host = BotHost(workers=1, autoload=False)
        try:
            async with manager(host=host) as mgr:
                return mgr.list_games(), mgr.list_bots()
        finally:
            await host.close()

    games, bots = run(go())
    assert [g.id for g in games] == GAMES
    for g in games:
        assert g.num_seats == get_game(g.id).num_seats and g.options == tuple(get_game(g.id).option_specs)
        # match.proto GameInfo: every game carries its own name and short description (never a default "")
        assert g.name and g.name == get_game(g.id).name
        assert g.description and g.description == get_game(g.id).description
        # and the rulebook file it follows, one of the shared rulebooks, each game its own
        assert g.rulebook == get_game(g.id).rulebook and (shared_dir() / "rules" / g.rulebook).is_file()
    assert len({g.rulebook for g in games}) == len(games)
    random_bot = next(b for b in bots if b.name == "random")
    assert set(GAMES) <= set(random_bot.games)
