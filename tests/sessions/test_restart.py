"""Durability: a manager dropped without closing (a crash) and a new one built on the same
SQLite file resume every unfinished match exactly: same sequence numbers, same views, same
seat tokens, idempotent retries still recognised, timers re-armed; then the matches go on."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import random
import time
from pathlib import Path

import pytest

from engine_service.observability.metrics import Metrics
from engine_service.rules import transcript
from engine_service.sessions.api import CreateMatchRequest, Principal
from engine_service.rules.registry import get_game
from engine_service.sessions.chance import random_deck_record
from engine_service.sessions.manager import MatchManager, _summary_of
from engine_service.sessions.tokens import new_token, token_hash
from engine_service.store import MatchListing, MemoryStore, NotADatabase, SeatRecord, SqliteStore, StoreError

from tests.crash import crash

from .helpers import GAMES, absences_written, collect, config, manager, open_match, play_random, run, until
from .virtual_clock import advance_to, run_virtual


def sqlite_manager(path, **cfg) -> MatchManager:
    return MatchManager(config(db_path=str(path), **cfg), store=SqliteStore(path), metrics=Metrics(),
                        create_bot_host=False)


async def first_life(mgr, game_id, actions):
    """Create, join and play ``actions`` actions; return what the clients hold. The decks are
    random (the CSPRNG's), and a match can end by the rules before ``actions`` actions (a
    Jo-Jotte rubber of two big deals): then another match is played, until one is still
    going at ``actions``."""
    await mgr.start()
    for attempt in range(20):
        summary = await mgr.create_match(CreateMatchRequest(game=game_id))
        tokens = []
        for seat in range(len(summary.seats)):
            tokens.append((await mgr.join_match(summary.match_id, seat, f"p{seat}")).token)
        ps = [mgr.authenticate(summary.match_id, t) for t in tokens]
        await play_random(mgr, summary.match_id, ps, random.Random(11 + attempt), max_actions=actions)
        if (await mgr.get_match(summary.match_id)).status == "active":
            break
    else:
        raise AssertionError(f"20 {game_id} matches all ended before {actions} actions")
    views = [await mgr.get_view(summary.match_id, p) for p in ps]
    public = await mgr.get_view(summary.match_id, Principal("spectator", summary.match_id))
    last = max(mgr._matches[summary.match_id].actions, key=lambda a: a.seq)
    crash(mgr._store)  # no close(): the process "crashes" here
    return summary.match_id, tokens, views, public, last


async def second_life(mgr, match_id, tokens, last):
    """Start ``mgr`` on the crashed manager's store; what the clients see again, a retry of
    the last action, then the match played to its end."""
    await mgr.start()
    try:
        ps = [mgr.authenticate(match_id, t) for t in tokens]
        again = [await mgr.get_view(match_id, p) for p in ps]
        public_again = await mgr.get_view(match_id, Principal("spectator", match_id))
        retry = await mgr.submit_action(match_id, ps[last.seat], last.action, None, last.client_action_id)
        await play_random(mgr, match_id, ps, random.Random(12))
        final = await mgr.get_match(match_id)
        data = await mgr.export_transcript(match_id)
        return again, public_again, retry, final, data, mgr.metrics
    finally:
        await mgr.close()


def assert_resumed_exactly(first, second, half):
    """``first`` = first_life's answer, ``second`` = second_life's: same seq and views for
    every seat and the public, the retry recognised, the match finished by the rules."""
    _, _, views, public, last = first
    again, public_again, retry, final, data, metrics = second
    for before, after in zip(views, again):
        assert (after.seq, after.seat, after.status, after.view) == (before.seq, before.seat, before.status, before.view)
    assert public_again.view == public.view and public_again.seq == half
    assert retry.duplicate and retry.seq == last.seq == half
    assert final.status == "finished" and final.seq > half
    diff, state = transcript.check(data)
    assert diff is None and state.is_over()
    assert metrics.value("cardgames_matches_resumed_total", {"game": final.game}) == 1


@pytest.mark.parametrize("game_id", GAMES)
def test_a_crashed_manager_resumes_exactly_on_sqlite(game_id, tmp_path):
    path = tmp_path / "matches.sqlite3"
    half = {"georgian_joker": 150}.get(game_id, 60)
    first = run(first_life(sqlite_manager(path), game_id, half))
    assert first[2][0].seq == half
    match_id, tokens, _, _, last = first
    assert_resumed_exactly(first, run(second_life(sqlite_manager(path), match_id, tokens, last)), half)


def test_timers_are_rearmed_after_a_restart(tmp_path):
    """A deadline armed before the crash is lost with the process; the new process arms a
    fresh one and the auto-move policy plays when it expires (GJ-12.1 / JJK-10.3)."""
    path = tmp_path / "m.sqlite3"

    async def before():
        mgr = sqlite_manager(path)
        await mgr.start()
        s = await mgr.create_match(CreateMatchRequest(game="klaberjass", turn_time_s=10))  # x 0.025 below: 0.25 s
        tokens = [(await mgr.join_match(s.match_id, i, "x")).token for i in range(2)]
        crash(mgr._store)
        return s.match_id, tokens

    match_id, tokens = run(before())

    async def after():
        mgr = sqlite_manager(path, reconnect_grace_s=2400, time_scale=0.025)
        await mgr.start()
        try:
            ps = [mgr.authenticate(match_id, t) for t in tokens]
            other = mgr.watch(match_id, ps[1], -1)
            await other.__anext__()
            events = await collect(mgr.watch(match_id, ps[0], -1),
                                   until=lambda e: e.kind == "action" and e.by == "auto")
            await other.aclose()
            return events, mgr.metrics
        finally:
            await mgr.close()

    events, metrics = run(after())
    assert events[0].kind == "snapshot" and events[0].view.deadline is not None
    auto = events[-1]
    assert (auto.seq, auto.by, auto.reason) == (1, "auto", "timeout")


def test_absent_players_after_a_restart_share_one_grace_window(tmp_path):
    """After a restart nobody is connected: both players' grace windows start at the same
    instant, so if neither comes back they expire together and the two-player match ends
    without a winner (JJK-10.2)."""
    path = tmp_path / "m.sqlite3"
    match_id, tokens, *_ = run(first_life(sqlite_manager(path), "japanese_joker", 5))

    async def after():
        mgr = sqlite_manager(path, time_scale=0.005)  # 60 s grace -> 0.3 s
        await mgr.start()
        try:
            events = await collect(mgr.watch(match_id, Principal("spectator", match_id), -1))
            return events, await mgr.get_match(match_id)
        finally:
            await mgr.close()

    events, summary = run(after())
    assert events[-1].kind == "match_ended" and events[-1].reason == "abandoned"
    assert summary.status == "finished" and summary.result["winners"] == []
    assert summary.result["outcome"] == "abandoned"


def test_the_players_of_a_waiting_match_get_no_grace_window_after_a_restart(tmp_path):
    """A match waiting for players has no absence (JJK-10.2 and GJ-12.3 apply to a match being
    played): after a restart its joined players are not connected, but no grace window is
    armed for them nor recorded away in the store, and the table waits on, its seat taken,
    well past the window."""
    path = tmp_path / "m.sqlite3"

    async def before():
        mgr = sqlite_manager(path)
        await mgr.start()
        s = await mgr.create_match(CreateMatchRequest(game="japanese_joker"))
        await mgr.join_match(s.match_id, 0, "a")
        crash(mgr._store)
        return s.match_id

    match_id = run(before())

    async def after():
        mgr = sqlite_manager(path, time_scale=0.002)  # 60 s grace -> 0.12 s
        await mgr.start()
        try:
            m = mgr._matches[match_id]
            armed = [slot.grace_handle is not None for slot in m.seats]
            await asyncio.sleep(0.5)
            stored = (await mgr._store.load_match(match_id)).record.seats[0]
            return armed, await mgr.get_match(match_id), stored.away_since
        finally:
            await mgr.close()

    armed, summary, away_since = run(after())
    assert armed == [False, False] and away_since is None
    assert summary.status == "waiting" and [seat.taken for seat in summary.seats] == [True, False]


async def _first_deal_played_deck_1_lost(store):
    """A manager on ``store`` whose Georgian Joker match (four joined players) has played its
    first deal, after which the deck of deal 1 is taken out of the store (the crash: it never
    reached it); the manager, the match's summary and the players' principals."""
    mgr = MatchManager(config(), store=store, metrics=Metrics(), create_bot_host=False)
    await mgr.start()
    s = await mgr.create_match(CreateMatchRequest(game="georgian_joker"))
    ps = [mgr.authenticate(s.match_id, (await mgr.join_match(s.match_id, i, "x")).token) for i in range(4)]
    # the first deal of Georgian Joker has one card each: bids and four plays
    while len(mgr.state_of(s.match_id).deal_results()) == 0:
        await play_random(mgr, s.match_id, ps, random.Random(1), max_actions=1)
    row = store._rows[s.match_id]
    assert 1 in row.decks
    del row.decks[1]
    return mgr, s, ps


def test_a_deal_due_at_the_crash_is_dealt_on_resume():
    """If the process stopped after an action that ended a deal and before the next deck was
    stored, the resumed match deals a fresh deck (nobody has seen it) and goes on."""
    store = MemoryStore()

    async def go():
        mgr, s, ps = await _first_deal_played_deck_1_lost(store)
        seq = mgr._matches[s.match_id].seq
        mgr2 = MatchManager(config(), store=store, metrics=Metrics(), create_bot_host=False)
        await mgr2.start()
        state = mgr2.state_of(s.match_id)
        assert mgr2._matches[s.match_id].seq == seq and state.to_act() >= 0
        assert 1 in store._rows[s.match_id].decks
        await play_random(mgr2, s.match_id, ps, random.Random(2), max_actions=20)
        data = await mgr2.export_transcript(s.match_id)
        await mgr2.close()
        return data

    data = run(go())
    assert transcript.check(data)[0] is None


class _DeckWritesInDoubt(MemoryStore):
    """A store whose deck writes answer with an error while ``failing``: written all the same
    when ``landed`` (PostgreSQL: the connection dropped after the COMMIT); the reads after
    one failing when ``then`` is ``unreadable``, finding no match when it is ``gone``."""

    failing = landed = False
    then = reads = ""

    async def append_decks(self, match_id, decks):
        if self.failing:
            if self.landed:
                await super().append_decks(match_id, decks)
            self.reads = self.then
            raise StoreError("connection lost")
        await super().append_decks(match_id, decks)

    async def load_match(self, match_id):
        if self.reads == "unreadable":
            raise StoreError("the database is unreachable")
        return None if self.reads == "gone" else await super().load_match(match_id)


@pytest.mark.parametrize("outcome", ["landed", "not_written", "unreadable", "gone"])
def test_a_deck_write_on_resume_answered_with_an_error_is_read_back(outcome):
    """The deck of a deal due at the crash (see above), whose write on resume is answered with
    an error, is read back (Seating._due_deck): the store holding it, the write landed and that
    deck is dealt; not holding it (nor the match), or not answering, the resume fails with the
    write's error (the service exits; the next start deals the deal) rather than dealing a deck
    the store does not hold or failing on the read's error."""
    store = _DeckWritesInDoubt()
    store.landed, store.then = outcome == "landed", outcome

    async def go():
        _, s, _ = await _first_deal_played_deck_1_lost(store)
        store.failing = True
        mgr2 = MatchManager(config(), store=store, metrics=Metrics(), create_bot_host=False)
        if outcome != "landed":
            with pytest.raises(StoreError) as failed:
                await mgr2.start()
            return str(failed.value), store._rows[s.match_id].decks.get(1), None
        await mgr2.start()
        try:
            m = mgr2._matches[s.match_id]
            return (m.deals_dealt, m.state.to_act() >= 0), store._rows[s.match_id].decks.get(1), m.decks.get(1)
        finally:
            await mgr2.close()

    resumed, stored, dealt = run(go())
    if outcome == "landed":
        assert resumed == (2, True) and stored is not None and dealt == stored
    else:
        assert resumed == "resuming the unfinished matches failed: connection lost" and stored is None


@pytest.mark.parametrize("written", ["seat", "seat_and_deck"])
def test_a_match_whose_last_seat_was_taken_just_before_a_crash_starts_on_resume(written, tmp_path):
    """An older version's last JoinMatch wrote the seat, then dealt the first deck and marked
    the match active: two more writes (this version writes the three in one transaction:
    Store.start_match). A crash in between left the match waiting after the restart with no
    open seat: it never started (nor showed in the lobby) until the waiting timeout ended it
    an hour later, abandoned. Such a database (the seat written, with or without the deck)
    resumes as the join would have left it: started, dealt (the stored deck if there is one),
    timers and grace windows armed. (The last player's answer, the token, died with the
    process: the operator reissues it, as for any lost token.)"""
    path = tmp_path / "m.sqlite3"

    async def before():
        mgr = sqlite_manager(path)
        await mgr.start()
        s = await mgr.create_match(CreateMatchRequest(game="japanese_joker", listed=True, name="t"))
        first = (await mgr.join_match(s.match_id, 0, "a")).token
        # what the older version had written when it died
        await mgr._store.save_seat(s.match_id, SeatRecord(1, "open", "", "b", token_hash(new_token()), time.time()))
        deck = random_deck_record(get_game("japanese_joker"), 0)
        if written == "seat_and_deck":
            await mgr._store.append_decks(s.match_id, [deck])
        crash(mgr._store)
        return s.match_id, first, deck

    match_id, first, deck = run(before())

    async def after():
        mgr = sqlite_manager(path)
        await mgr.start()
        try:
            summary = await mgr.get_match(match_id)
            assert summary.status == "active" and len(summary.deal_commitments) == 1
            assert all(seat.taken for seat in summary.seats) and not mgr.list_open_matches()
            # nobody is connected after a restart: the players' grace windows run (JJK-10.2)
            assert all(slot.grace_handle is not None for slot in mgr._matches[match_id].seats)
            second = (await mgr.reissue_seat_token(match_id, 1))[0].token
            ps = [mgr.authenticate(match_id, t) for t in (first, second)]
            view = await mgr.get_view(match_id, ps[0])
            assert view.view["hand"] and view.view["to_act"] is not None and view.deadline is None
            assert view.deal_commitment == summary.deal_commitments[0]
            dealt = mgr._matches[match_id].decks[0]
            await play_random(mgr, match_id, ps, random.Random(5))
            return await mgr.get_match(match_id), await mgr.export_transcript(match_id), dealt
        finally:
            await mgr.close()

    final, data, dealt = run(after())
    assert (dealt == deck) == (written == "seat_and_deck")
    assert final.status == "finished" and final.result["outcome"] == "completed"
    diff, state = transcript.check(data)
    assert diff is None and state.is_over()


def test_a_garbage_database_file_is_a_clear_error(tmp_path):
    path = tmp_path / "garbage.db"
    path.write_bytes(b"\x00\x01 definitely not sqlite " * 100)

    async def go():
        mgr = MatchManager(config(db_path=str(path)), metrics=Metrics(), create_bot_host=False)
        await mgr.start()

    with pytest.raises(NotADatabase, match="not a SQLite database"):
        run(go())


def test_finished_matches_are_read_back_after_eviction(tmp_path):
    """An evicted finished match is read back on demand, and the admin's ListMatches summarises
    it from the store's row exactly as GetMatch does once it is held again: its seq, listed,
    spectators_allowed and spectator_delay_actions too (mutants of manager._summary_of: each
    field defaulted)."""
    path = tmp_path / "m.sqlite3"

    async def go():
        mgr = sqlite_manager(path)
        await mgr.start()
        try:
            s = await mgr.create_match(CreateMatchRequest(game="klaberjass", listed=True, name="t",
                                                          spectators_allowed=False, spectator_delay_actions=2))
            ps = [mgr.authenticate(s.match_id, (await mgr.join_match(s.match_id, i, "x")).token) for i in range(2)]
            await play_random(mgr, s.match_id, ps, random.Random(5))
            before = await mgr.get_match(s.match_id)
            view_before = await mgr.get_view(s.match_id, ps[0])  # (closed to spectators)
            assert mgr.evict_finished() == 1 and mgr.match_ids() == []
            listed = await mgr.list_matches(status="finished")  # from the store's rows alone
            after = await mgr.get_match(s.match_id)
            view_after = await mgr.get_view(s.match_id, ps[0])
            return before, after, view_before, view_after, listed
        finally:
            await mgr.close()

    before, after, vb, va, listed = run(go())
    assert after == before and va.view == vb.view
    assert [m.match_id for m in listed] == [before.match_id] and listed[0].result == before.result
    assert before.seq > 0 and before.listed and not before.spectators_allowed
    assert before.spectator_delay_actions == 2 and listed[0] == before
    # the deals' commitments were recorded with the result: the listing has them (schema 4)
    assert len(before.deal_commitments) >= 3 and listed[0].deal_commitments == before.deal_commitments


def test_an_evicted_match_lists_the_takeover_bot_of_a_seat_whose_player_left(tmp_path):
    """GJ-12.4: a seat whose player left a Georgian Joker match is played by the takeover bot,
    which GetMatch names as the seat's bot (SeatSlot.info). The admin's ListMatches of that
    match once evicted (manager._summary_of, from the store's row) names it too, as GetMatch
    does when the match is read back."""
    path = tmp_path / "m.sqlite3"

    async def go():
        mgr = sqlite_manager(path)
        await mgr.start()
        try:
            s = await mgr.create_match(CreateMatchRequest(game="georgian_joker", name="t",
                                                          options={"deal_schedule": "nines"}))
            ps = [mgr.authenticate(s.match_id, (await mgr.join_match(s.match_id, i, f"p{i}")).token)
                  for i in range(4)]
            await mgr.leave_match(s.match_id, ps[1], resign=True)
            await mgr.terminate_match(s.match_id, "")
            before = await mgr.get_match(s.match_id)
            assert mgr.evict_finished() == 1 and mgr.match_ids() == []
            listed = await mgr.list_matches()
            # the same row of a match created with a named takeover bot (a bot host's)
            row = (await mgr._store.list_matches((), "", 1))[0]
            named = _summary_of(MatchListing(dataclasses.replace(row.record, takeover_bot="random"), row.seq))
            return before, listed, await mgr.get_match(s.match_id), named
        finally:
            await mgr.close()

    before, listed, after, named = run(go())
    assert before.seats[1].left and before.seats[1].replaced_by_bot and not before.seats[1].bot
    assert before.options == {"deal_schedule": "nines"} and before.name == "t"
    assert listed == [before] == [after]
    assert [seat.bot for seat in named.seats] == ["", "random", "", ""]


def test_eviction_takes_only_finished_matches():
    """``evict_finished`` (operations, tests; the sweeper alike) forgets the finished matches
    only: an active one keeps its seats, clock and watchers in memory (the store has no
    turn deadline, no presence); the finished one is read back on demand."""

    async def go():
        mgr = MatchManager(config(), store=MemoryStore(), metrics=Metrics(), create_bot_host=False)
        await mgr.start()
        try:
            ids = []
            for _ in range(2):
                s = await mgr.create_match(CreateMatchRequest(game="klaberjass"))
                for i in range(2):
                    await mgr.join_match(s.match_id, i, "x")
                ids.append(s.match_id)
            active, finished = ids
            await mgr.terminate_match(finished, "done")
            return ids, mgr.evict_finished(), mgr.match_ids(), (await mgr.get_match(finished)).status
        finally:
            await mgr.close()

    (active, finished), evicted, held, status = run(go())
    assert (evicted, held, status) == (1, [active], "terminated")


async def _a_terminated_match(mgr):
    """A Klaberjass match created, both seats joined, then terminated: finished, in memory."""
    s = await mgr.create_match(CreateMatchRequest(game="klaberjass"))
    for i in range(2):
        await mgr.join_match(s.match_id, i, f"p{i}")
    await mgr.terminate_match(s.match_id, "done")
    return s


def test_the_sweeper_keeps_a_finished_match_for_finished_retention_s_then_evicts_it():
    """The sweeper's pass evicts a finished match once ``finished_retention_s`` has passed
    since its end (event-loop time), not before: a pass right after the end keeps it, one
    after the retention (its end moved an hour back here) evicts it; the store still has it.
    Created longer ago than ``waiting_timeout_s``, it is no table past its wait either."""

    async def go():
        async with manager(config(finished_retention_s=3600.0)) as mgr:
            s = await _a_terminated_match(mgr)
            m = mgr._matches[s.match_id]
            m.created_at -= 2 * mgr.config.waiting_timeout_s  # a long match: no waiting table
            await mgr._housekeeping.sweep_once()
            kept = list(mgr.match_ids())
            m.finished_mono -= 3599.0  # a second short of the retention
            await mgr._housekeeping.sweep_once()
            still = list(mgr.match_ids())
            m.finished_mono -= 1.0
            await mgr._housekeeping.sweep_once()
            return s.match_id, kept, still, mgr.match_ids(), (await mgr.get_match(s.match_id)).status

    match_id, kept, still, held, status = run(go())
    assert kept == still == [match_id] and held == [] and status == "terminated"


def test_the_sweeper_evicts_a_finished_match_exactly_finished_retention_s_after_its_end(monkeypatch):
    """``--finished-retention-s`` (docs/operations.md: how long a finished match stays in
    memory) is reached, not passed: on a virtual clock, the pass 3599.5 s after the end keeps
    the match and the one exactly 3600 s after evicts it (a ``>`` kept it a pass longer)."""

    async def go():
        loop = asyncio.get_running_loop()
        async with manager(config(finished_retention_s=3600.0)) as mgr:
            s = await _a_terminated_match(mgr)
            ended, held = mgr._matches[s.match_id].finished_mono, []
            for after in (3599.5, 3600.0):
                await advance_to(ended + after)
                await mgr._housekeeping.sweep_once()
                held.append(list(mgr.match_ids()))
            return s.match_id, ended == loop.time() - 3600.0, held

    match_id, exact, held = run_virtual(go, monkeypatch)
    assert exact and held == [[match_id], []]


def test_the_sweeper_keeps_a_finished_match_past_its_retention_while_a_series_of_it_is_under_way():
    """A finished match past ``finished_retention_s`` whose status write is still being tried
    again (``Seating.busy``: such a series ends with its match's eviction) stays in memory
    through the pass; the first pass after the series ended evicts it."""

    async def go():
        async with manager(config(finished_retention_s=0)) as mgr:
            s = await _a_terminated_match(mgr)
            writes = mgr._seating.status_writes
            writes[s.match_id] = asyncio.get_running_loop().create_future()  # a write in doubt
            await mgr._housekeeping.sweep_once()
            kept = list(mgr.match_ids())
            del writes[s.match_id]  # the series ended
            await mgr._housekeeping.sweep_once()
            return s.match_id, kept, mgr.match_ids()

    match_id, kept, held = run(go())
    assert kept == [match_id] and held == []


def test_a_finished_match_is_not_evicted_while_a_stream_still_watches_it():
    """A stream still open on a finished match (its ``match_ended`` not read yet: a slow
    reader) keeps the match in memory: ``evict_finished`` and the sweeper pass it over, and
    evict it once the stream has ended. The stream reads the match it registered with; one
    evicted under it would leave the manager holding a second copy read back from the store."""

    async def go():
        async with manager(config(finished_retention_s=0)) as mgr:
            s = await mgr.create_match(CreateMatchRequest(game="klaberjass"))
            tokens = [(await mgr.join_match(s.match_id, i, f"p{i}")).token for i in range(2)]
            me = mgr.authenticate(s.match_id, tokens[0])
            async with contextlib.aclosing(mgr.watch(s.match_id, me, -1)) as stream:
                assert (await anext(stream)).kind == "snapshot"
                await mgr.terminate_match(s.match_id, "done")
                watched = (mgr.evict_finished(), list(mgr.match_ids()))
                await mgr._housekeeping.sweep_once()
                swept = list(mgr.match_ids())
                rest = [e.kind async for e in stream]
            return s.match_id, watched, swept, rest, mgr.evict_finished(), mgr.match_ids()

    match_id, watched, swept, rest, evicted, held = run(go())
    assert watched == (0, [match_id]) and swept == [match_id] and rest[-1] == "match_ended"
    assert (evicted, held) == (1, [])


class _FirstLegal:
    def bots(self):
        from engine_service.sessions.api import BotInfo
        return [BotInfo("first", tuple(GAMES), "first legal action")]

    def plays(self, bot, game_id):
        return bot == "first"

    async def decide(self, bot, game_id, seat, view, legal, seed, deadline_s):
        from types import SimpleNamespace
        await asyncio.sleep(0.001)
        return SimpleNamespace(action=legal[0], failure=None, elapsed_s=0.001)

    async def close(self):
        pass


def test_a_bot_match_interrupted_by_a_crash_finishes_after_the_restart(tmp_path):
    from engine_service.sessions.api import SeatConfig

    path = tmp_path / "m.sqlite3"

    async def before():
        mgr = MatchManager(config(), store=SqliteStore(path), bot_host=_FirstLegal(), metrics=Metrics())
        await mgr.start()
        s = await mgr.create_match(CreateMatchRequest(game="japanese_joker", seats=[SeatConfig("bot", "first")] * 2))
        m = mgr._matches[s.match_id]
        while m.seq < 20:
            await asyncio.sleep(0.001)
        crash(mgr._store)
        return s.match_id  # the loop ends with a bot decision in flight: the crash

    match_id = run(before())

    async def after():
        mgr = MatchManager(config(), store=SqliteStore(path), bot_host=_FirstLegal(), metrics=Metrics())
        await mgr.start()
        try:
            m = mgr._matches[match_id]
            resumed_at = m.seq
            events = await collect(mgr.watch(match_id, Principal("spectator", match_id), resumed_at))
            return resumed_at, events, await mgr.export_transcript(match_id), await mgr.get_match(match_id)
        finally:
            await mgr.close()

    resumed_at, events, data, summary = run(after())
    assert resumed_at >= 20
    assert [e.seq for e in events if e.kind == "action"] == list(range(resumed_at + 1, summary.seq + 1))
    assert summary.status == "finished"
    assert transcript.check(data)[0] is None


def test_after_a_restart_only_the_joined_players_are_absent_not_the_bots(tmp_path):
    """After a restart nobody is connected, but only a player who joined is absent: a bot
    seat gets no grace window (_rearm used to be able to arm one for every seat unnoticed).
    The player's window expires: the player forfeits and the bot wins (JJK-10.2)."""
    from engine_service.sessions.api import SeatConfig

    path = tmp_path / "m.sqlite3"

    async def before():
        mgr = MatchManager(config(), store=SqliteStore(path), bot_host=_FirstLegal(), metrics=Metrics())
        await mgr.start()
        s = await mgr.create_match(CreateMatchRequest(game="japanese_joker",
                                                      seats=[SeatConfig(), SeatConfig("bot", "first")]))
        await mgr.join_match(s.match_id, 0, "a")
        crash(mgr._store)
        return s.match_id

    match_id = run(before())

    async def after():
        mgr = MatchManager(config(time_scale=0.002), store=SqliteStore(path), bot_host=_FirstLegal(),
                           metrics=Metrics())  # 60 s grace -> 0.12 s
        await mgr.start()
        try:
            armed = [slot.grace_handle is not None for slot in mgr._matches[match_id].seats]
            await collect(mgr.watch(match_id, Principal("spectator", match_id), -1))
            return armed, await mgr.get_match(match_id)
        finally:
            await mgr.close()

    armed, summary = run(after())
    assert armed == [True, False]
    assert summary.status == "finished" and summary.result["outcome"] == "forfeit"
    assert summary.result["winners"] == [1]


class _Silent:
    """A host whose bot ``random`` (the name of the real host's) never answers: a decision is
    in flight when the process dies."""

    def bots(self):
        from engine_service.sessions.api import BotInfo
        return [BotInfo("random", tuple(GAMES), "never answers")]

    def plays(self, bot, game_id):
        return bot == "random"

    async def decide(self, bot, game_id, seat, view, legal, seed, deadline_s):
        await asyncio.Event().wait()

    async def close(self):
        pass


class HeldWorkers:
    """The bot workers of the engine's own host held at their start until :meth:`release`,
    and when that host was asked for decisions (``asked``, monotonic seconds)."""

    #: how long the workers are held once the match is resumed: a start that did not wait
    #: for them asks its resumed bots within milliseconds of that
    HOLD_S = 1.5
    #: the decision deadline these tests give: ample for a ready worker on a loaded machine
    DEADLINE_S = 3.0

    def __init__(self, gate: Path) -> None:
        self.gate = gate
        self.asked: list[float] = []

    def release(self) -> None:
        self.gate.touch()

    async def held_past_resume(self, mgr: MatchManager, match_id: str, starting: asyncio.Task) -> tuple[bool, list]:
        """Hold the workers :data:`HOLD_S` past ``match_id``'s resume, then release them;
        whether ``starting`` (``mgr.start()``) was still waiting for them then, and the
        decisions asked meanwhile."""
        while match_id not in mgr._matches and not starting.done():
            await asyncio.sleep(0.01)
        await asyncio.sleep(self.HOLD_S)
        waiting, asked = not starting.done(), list(self.asked)
        self.release()
        return waiting, asked


@pytest.fixture
def held_workers(monkeypatch, tmp_path):
    """The engine's own bot host with a plugin whose bot workers do not start until the test
    releases them (tests.plugins.held_worker_start), noting when it is asked for decisions:
    a start-up as long as the test wants, whatever the machine's load. They took 4 s against
    the 3 s decision deadline before: a start that asked its resumed bots without waiting
    for the workers, but a second or more into their start-up (a resume slowed by a loaded
    machine), passed; held until the test lets them go, no bot may be asked before."""
    from engine_service.plugins import host as host_module

    from tests.plugins.held_worker_start import GATE_ENV

    held = HeldWorkers(tmp_path / "workers-may-start")
    monkeypatch.setenv(GATE_ENV, str(held.gate))

    class HeldStartHost(host_module.BotHost):
        def __init__(self, **kwargs):
            super().__init__(plugins=("tests.plugins.held_worker_start",), **kwargs)

        async def decide(self, *args, **kwargs):
            held.asked.append(time.monotonic())
            return await super().decide(*args, **kwargs)

    monkeypatch.setattr(host_module, "BotHost", HeldStartHost)
    yield held
    held.release()


async def _started_past_held_workers(mgr: MatchManager, match_id: str, held: HeldWorkers) -> None:
    """``mgr.start()`` with its workers held past ``match_id``'s resume: the start waited for
    them, and no bot was asked meanwhile."""
    starting = asyncio.create_task(mgr.start())  # the real bot host, its worker started by this start
    try:
        waiting, asked = await held.held_past_resume(mgr, match_id, starting)
        assert waiting, "the start did not wait for the bot workers"
        assert asked == [], "a bot was asked before the bot workers were up"
    finally:
        held.release()
        await starting


def test_the_bots_of_resumed_matches_are_not_timed_out_by_the_workers_start_up(tmp_path, held_workers):
    """The bot workers start with the engine (BotHost.warm) so that no decision spends its
    deadline waiting for them; but a resumed match's bot was asked at once, a few
    milliseconds after the workers began to start (a fresh interpreter importing the plugins:
    about a second here), and every bot of a resumed match timed out after a restart on a
    loaded machine (bot_failed, the rulebook's auto-move instead of the bot's move, counted in
    cardgames_bot_failures_total). The start now waits for the workers before it arms the
    resumed matches' bots. Workers held at their start show it."""
    from engine_service.sessions.api import SeatConfig

    path = tmp_path / "m.sqlite3"

    async def before():
        mgr = MatchManager(config(), store=SqliteStore(path), bot_host=_Silent(), metrics=Metrics())
        await mgr.start()
        s = await mgr.create_match(CreateMatchRequest(game="klaberjass", seats=[SeatConfig("bot", "random")] * 2))
        await asyncio.sleep(0.01)  # the first decision is asked, and never answered
        crash(mgr._store)
        return s.match_id

    match_id = run(before())

    async def after():
        metrics = Metrics()
        mgr = MatchManager(config(bot_deadline_s=held_workers.DEADLINE_S, bot_workers=1), store=SqliteStore(path),
                           metrics=metrics)
        try:
            await _started_past_held_workers(mgr, match_id, held_workers)
            m = mgr._matches[match_id]
            while m.seq < 4:
                await asyncio.sleep(0.01)
            return list(m.actions[:4]), metrics.value("cardgames_bot_failures_total",
                                                      {"bot": "random", "reason": "timeout"})
        finally:
            await mgr.close()

    moves, timeouts = run(after(), timeout=60)
    assert [(a.by, a.reason) for a in moves] == [("bot", "")] * 4, moves
    assert timeouts == 0


def test_the_takeover_bot_of_a_departed_seat_is_not_timed_out_by_the_workers_start_up(tmp_path, held_workers):
    """The same for a Georgian Joker seat whose player left: the takeover bot plays it to the
    end (GJ-12.4), and after a restart it is asked at once for that seat's decision."""
    path = tmp_path / "m.sqlite3"

    async def before():
        mgr = MatchManager(config(takeover_bot="random"), store=SqliteStore(path), bot_host=_Silent(),
                           metrics=Metrics())
        await mgr.start()
        s = await mgr.create_match(CreateMatchRequest(game="georgian_joker"))
        ps = [mgr.authenticate(s.match_id, (await mgr.join_match(s.match_id, i, f"p{i}")).token)
              for i in range(4)]
        seat = mgr.state_of(s.match_id).to_act()
        await mgr.leave_match(s.match_id, ps[seat], True)  # the takeover bot's turn, never answered
        await asyncio.sleep(0.01)
        crash(mgr._store)
        return s.match_id, seat

    match_id, seat = run(before())

    async def after():
        metrics = Metrics()
        mgr = MatchManager(config(takeover_bot="random", bot_deadline_s=held_workers.DEADLINE_S, bot_workers=1),
                           store=SqliteStore(path), metrics=metrics)
        try:
            await _started_past_held_workers(mgr, match_id, held_workers)
            m = mgr._matches[match_id]
            while m.seq < 1:
                await asyncio.sleep(0.01)
            return m.actions[0], metrics.value("cardgames_bot_failures_total",
                                               {"bot": "random", "reason": "timeout"})
        finally:
            await mgr.close()

    move, timeouts = run(after(), timeout=60)
    assert move.seat == seat and move.by == "bot", move
    assert timeouts == 0


def write_ends_apart_and_die(mgr):
    """Make ``mgr``'s store write an action that ends its match at the deal limit as a version
    before 2026-12-05 did, without its end, and the process die right after that write
    (CancelledError out of the call)."""
    append = mgr._store.append_action

    async def without_its_end(match_id, action, decks=(), end=None):
        await append(match_id, action, decks)
        if end is not None:
            crash(mgr._store)
            raise asyncio.CancelledError
    mgr._store.append_action = without_its_end


def test_a_match_whose_last_action_was_written_without_its_end_ends_completed_when_resumed(tmp_path):
    """The action that ends a match by the rules is written, then its end (the status and the
    result: two writes), and the process died between them. Resumed, the match is ended as
    the rules say its log ends it (completed, with the rules' totals and winners), in memory
    and in the store, counted finished once, no longer active, and not resumed."""
    path = tmp_path / "m.sqlite3"

    async def before():
        mgr = sqlite_manager(path)
        await mgr.start()

        async def die(*args, **kwargs):
            crash(mgr._store)
            raise asyncio.CancelledError
        mgr._store.set_status = die
        match_id, ps = await open_match(mgr, "japanese_joker")
        with pytest.raises(asyncio.CancelledError):
            await play_random(mgr, match_id, ps, random.Random(3))
        return match_id

    match_id = run(before())

    async def after():
        metrics = Metrics()
        mgr = MatchManager(config(db_path=str(path)), store=SqliteStore(path), metrics=metrics,
                           create_bot_host=False)
        await mgr.start()
        try:
            def counts():
                return [metrics.value(name, labels) for name, labels in (
                    ("cardgames_matches_finished_total", {"game": "japanese_joker", "outcome": "completed"}),
                    ("cardgames_matches_active", {"game": "japanese_joker", "status": "active"}),
                    # ended as it was read back: no match of the engine's goes on from it
                    ("cardgames_matches_resumed_total", {"game": "japanese_joker"}))]
            resumed = counts()
            summary = await mgr.get_match(match_id)
            # read back again once evicted: ended already, it is not ended (nor counted) twice
            assert mgr.evict_finished() == 1 and await mgr.get_match(match_id) == summary
            return (summary, await mgr.export_transcript(match_id), await mgr._store.load_match(match_id),
                    [resumed, counts()], mgr.state_of(match_id).result())
        finally:
            await mgr.close()

    summary, data, stored, counts, rules_result = run(after())
    assert summary.status == "finished" and summary.result["outcome"] == "completed"
    assert stored.record.status == "finished" and stored.record.result == summary.result
    assert stored.record.ended_at is not None
    assert counts == [[1, 0, 0], [1, 0, 0]]
    diff, state = transcript.check(data)
    assert diff is None and state.is_over() and summary.seq == len(stored.actions)
    assert (summary.result["totals"], summary.result["winners"]) == (rules_result["totals"], rules_result["winners"])


@pytest.mark.parametrize("log_form", ["reached", "dealt_past", "played_past"])
def test_a_match_past_its_deal_limit_at_the_crash_ends_when_it_is_resumed(tmp_path, log_form):
    """max_match_deals: versions before 2026-12-05 wrote the action that reaches the limit,
    then the match's end (terminated, deal_limit): two writes. A crash between them left the
    match active after the restart, played on. It is ended when it is resumed under the same
    limit, as it would have been; the action is not undone. ``reached``: the deal past the
    limit not dealt (the action written without its end, as those versions did, and the
    process dies): it is not dealt at the restart either (no deck is written). A log whose
    action dealt it (``dealt_past``: written by a version that dealt it, or before the limit
    was lowered; here without a limit) ends the same way, and so does one that played on into
    that deal (``played_past``: a limit lowered since), where its log stops: the fold of a log
    read back deals no deck past the limit after its last action, but those it goes on to play
    were dealt (it was refused, MATCH_CORRUPT, when the fold bounded every deal)."""
    path = tmp_path / "m.sqlite3"

    async def before():
        mgr = sqlite_manager(path, max_match_deals=1 if log_form == "reached" else 1000)
        await mgr.start()
        write_ends_apart_and_die(mgr)
        s = await mgr.create_match(CreateMatchRequest(game="klaberjass"))
        ps = [mgr.authenticate(s.match_id, (await mgr.join_match(s.match_id, i, f"p{i}")).token)
              for i in range(2)]
        # four passes throw the first deal in (KL-3.5); played_past: the next deal's first pass
        for n in range(5 if log_form == "played_past" else 4):
            m = mgr._matches[s.match_id]
            with pytest.raises(asyncio.CancelledError) if n == 3 and log_form == "reached" else contextlib.nullcontext():
                await mgr.submit_action(s.match_id, ps[m.state.to_act()], "pass", m.seq, f"p{n}")
        if log_form != "reached":
            crash(mgr._store)
        return s.match_id, mgr._matches[s.match_id].deals_dealt

    match_id, dealt = run(before())
    assert dealt == (1 if log_form == "reached" else 2)

    async def after():
        from structlog.testing import capture_logs

        metrics = Metrics()
        mgr = MatchManager(config(db_path=str(path), max_match_deals=1), store=SqliteStore(path),
                           metrics=metrics, create_bot_host=False)
        with capture_logs() as logs:
            await mgr.start()
        try:
            return (await mgr.get_match(match_id), metrics.value(
                "cardgames_matches_active", {"game": "klaberjass", "status": "active"}),
                await mgr._store.load_match(match_id), logs)
        finally:
            await mgr.close()

    summary, active, stored, logs = run(after())
    # docs/operations.md: the line says the deals played, whether the next was dealt or not
    assert [(e["deals"], e["limit"]) for e in logs if e["event"] == "match_deal_limit"] == [(1, 1)]
    assert summary.status == "terminated" and summary.seq == (5 if log_form == "played_past" else 4)
    assert summary.result["outcome"] == "terminated" and summary.result["reason"] == "deal_limit"
    assert active == 0
    assert stored.record.status == "terminated" and len(stored.decks) == dealt


@pytest.mark.parametrize("game_id", GAMES)
def test_a_match_read_back_past_its_deal_limit_does_not_deal_the_deck_the_admin_gave_ahead(tmp_path, game_id):
    """max_match_deals, the admin having given the decks of the first two deals: a version
    before 2026-12-05 wrote the action that reaches the limit of one deal, then the end (two
    writes), and its process died between them. Resumed under that limit, the match is
    ended at once, and the deck given ahead for the deal past the limit is not dealt: the
    replay of the log dealt it before the end, so that every seat was shown its hand of a
    deal never dealt, its commitment was named (views, GetMatch, the end written) and its
    deck revealed (RevealDeals), and the export showed it (KL-2.10, JJ-2.8, JJK-9.7,
    GJ-11.3)."""
    from engine_service.rules.cards import card_code

    path = tmp_path / "m.sqlite3"
    game, rng = get_game(game_id), random.Random(game_id)
    decks = [[card_code(c) for c in rng.sample(list(game.pack), len(game.pack))] for _ in range(2)]

    async def before():
        mgr = sqlite_manager(path, max_match_deals=1)
        await mgr.start()
        write_ends_apart_and_die(mgr)
        s = await mgr.create_match(CreateMatchRequest(game=game_id, decks=decks), admin=True)
        tokens = [(await mgr.join_match(s.match_id, i, f"p{i}")).token for i in range(len(s.seats))]
        with pytest.raises(asyncio.CancelledError):
            await play_random(mgr, s.match_id, [mgr.authenticate(s.match_id, t) for t in tokens],
                              random.Random(game_id))
        return s.match_id, tokens

    match_id, tokens = run(before())

    async def after():
        mgr = sqlite_manager(path, max_match_deals=1)
        await mgr.start()
        try:
            ps = [mgr.authenticate(match_id, t) for t in tokens]
            views = [await mgr.get_view(match_id, p) for p in [*ps, Principal("spectator", match_id)]]
            return (mgr._matches[match_id], await mgr.get_match(match_id), views,
                    await mgr.reveal_deals(match_id, ps[0]), await mgr.export_transcript(match_id),
                    await mgr._store.load_match(match_id))
        finally:
            await mgr.close()

    m, summary, views, reveals, exported, stored = run(after())
    assert (summary.result["outcome"], summary.result["reason"]) == ("terminated", "deal_limit")
    assert m.deals_dealt == 1 and len(summary.deal_commitments) == 1
    assert len(stored.record.deal_commitments) == 1 and len(exported["deals"]) == 1
    assert [r.deal for r in reveals] == [0]
    for env in views:
        assert env.deal_commitment == "" and not env.view.get("hand")
        assert (env.view.get("table") or {}).get("turn_up") is None


def test_a_match_that_reached_its_deal_limit_stays_ended_after_a_restart_with_a_higher_one(tmp_path):
    """max_match_deals: the end at the limit is written in the transaction of the action that
    reaches it. It was a second write: a process that died between the two, restarted with a
    higher ``--max-match-deals``, found the match active and under its limit, dealt the deal
    past the old limit and played on (docs/operations.md said so). Here the process dies as
    soon as that action's write returns, and the restart with a limit of 5 serves the match
    ended as it was (terminated, deal_limit), the next deal never dealt."""
    path = tmp_path / "m.sqlite3"

    async def before():
        mgr = sqlite_manager(path, max_match_deals=1)
        await mgr.start()
        append = mgr._store.append_action

        async def dies_after_the_write(*args, **kwargs):
            await append(*args, **kwargs)
            if mgr._matches[args[0]].seq == 3:  # the fourth pass: it reaches the limit
                crash(mgr._store)
                raise asyncio.CancelledError
        mgr._store.append_action = dies_after_the_write
        match_id, ps = await open_match(mgr, "klaberjass")
        for n in range(4):  # four passes throw the first deal in (KL-3.5)
            m = mgr._matches[match_id]
            with pytest.raises(asyncio.CancelledError) if n == 3 else contextlib.nullcontext():
                await mgr.submit_action(match_id, ps[m.state.to_act()], "pass", m.seq, f"p{n}")
        return match_id

    match_id = run(before())

    async def after():
        mgr = sqlite_manager(path, max_match_deals=5)
        await mgr.start()
        try:
            return await mgr.get_match(match_id), await mgr._store.load_match(match_id)
        finally:
            await mgr.close()

    summary, stored = run(after())
    assert (summary.status, summary.seq) == ("terminated", 4)
    assert (summary.result["outcome"], summary.result["reason"]) == ("terminated", "deal_limit")
    assert stored.record.status == "terminated" and len(stored.decks) == 1, "the next deal not dealt"


def test_a_match_ended_at_its_deal_limit_read_back_under_a_higher_one_deals_no_deck_given_ahead(tmp_path):
    """max_match_deals=1, the admin having given the decks of the first two deals: the match
    ends at the limit, the second deal not dealt. Read back after a restart with a limit of
    5, its replay is bounded by the deals it had dealt (its recorded commitments), not by the
    limit in force: under that limit the deck given ahead would be dealt, and each seat shown
    its hand of a deal never dealt (KL-2.10; KL-3.5: four passes throw the first deal in)."""
    from engine_service.rules.cards import card_code

    path = tmp_path / "m.sqlite3"
    rng = random.Random(5)
    pack = list(get_game("klaberjass").pack)
    decks = [[card_code(c) for c in rng.sample(pack, len(pack))] for _ in range(2)]

    async def before():
        mgr = sqlite_manager(path, max_match_deals=1)
        await mgr.start()
        try:
            s = await mgr.create_match(CreateMatchRequest(game="klaberjass", decks=decks), admin=True)
            tokens = [(await mgr.join_match(s.match_id, i, f"p{i}")).token for i in range(2)]
            ps = [mgr.authenticate(s.match_id, t) for t in tokens]
            for _ in range(4):
                m = mgr._matches[s.match_id]
                await mgr.submit_action(s.match_id, ps[m.state.to_act()], "pass", m.seq)
            return s.match_id, tokens
        finally:
            await mgr.close()

    match_id, tokens = run(before())

    async def after():
        mgr = sqlite_manager(path, max_match_deals=5)
        await mgr.start()
        try:
            await mgr.get_match(match_id)  # read back (an ended match is not resumed)
            ps = [mgr.authenticate(match_id, t) for t in tokens]
            views = [await mgr.get_view(match_id, p) for p in ps]
            return mgr._matches[match_id], views, await mgr.reveal_deals(match_id, ps[0])
        finally:
            await mgr.close()

    m, views, reveals = run(after())
    assert (m.status, m.result["reason"], m.deals_dealt) == ("terminated", "deal_limit", 1)
    assert [r.deal for r in reveals] == [0]
    for env in views:
        assert env.deal_commitment == "" and not env.view.get("hand")
        assert env.view["table"].get("turn_up") is None


async def two_writers(store, *, turn_time_s=0.0, stale=None, **overrides):
    """Two managers on one store (a process thought dead, or a future second replica) that both
    hold a Klaberjass match at seq 0, both seats joined: ``a`` plays on, ``b`` is the stale
    writer (configured with ``stale`` instead of ``overrides`` when given). Returns a, b, the
    match id and each one's principals of the two seats."""
    a = MatchManager(config(**overrides), store=store, metrics=Metrics(), create_bot_host=False)
    await a.start()
    s = await a.create_match(CreateMatchRequest(game="klaberjass", turn_time_s=turn_time_s))
    tokens = [(await a.join_match(s.match_id, i, "x")).token for i in range(2)]
    b = MatchManager(config(**(overrides if stale is None else stale)), store=store, metrics=Metrics(),
                     create_bot_host=False)
    await b.start()  # b loads the match at seq 0
    pa = [a.authenticate(s.match_id, t) for t in tokens]
    pb = [b.authenticate(s.match_id, t) for t in tokens]
    return a, b, s.match_id, pa, pb


async def passes(mgr, match_id, principals, n):
    """``n`` passes in turn on ``mgr`` (KL-3.5: four throw the deal in)."""
    for _ in range(n):
        m = mgr._matches[match_id]
        await mgr.submit_action(match_id, principals[m.state.to_act()], "pass", m.seq)


def test_a_second_writer_on_the_same_log_is_caught_up_not_overwritten():
    """Two managers on one store (a process thought dead, or a future second replica): the
    (match_id, seq) key refuses the stale writer, which folds the other's actions into its
    match, publishes them, and answers StaleSequence with the current view."""
    from engine_service.sessions.api import StaleSequence

    store = MemoryStore()

    async def go():
        a, b, match_id, pa, pb = await two_writers(store)
        watcher = b.watch(match_id, Principal("spectator", match_id), 0)
        reader = asyncio.ensure_future(collect(watcher, until=lambda e: e.kind == "action"))
        await asyncio.sleep(0)
        await play_random(a, match_id, pa, random.Random(1), max_actions=1)
        seat = b._matches[match_id].state.to_act()
        legal = (await b.get_view(match_id, pb[seat])).view["legal"]
        with pytest.raises(StaleSequence) as info:
            await b.submit_action(match_id, pb[seat], legal[0], None)
        caught_up = b._matches[match_id].seq
        seen = await reader
        # b now continues from the shared log
        seat = b._matches[match_id].state.to_act()
        env = await b.get_view(match_id, pb[seat])
        res = await b.submit_action(match_id, pb[seat], env.view["legal"][0], env.seq)
        actions = (await store.load_match(match_id)).actions
        await b.close()
        await a.close()
        return info.value, caught_up, seen, res, actions

    error, caught_up, seen, res, actions = run(go())
    assert caught_up == 1 and error.current.seq == 1
    assert [(e.kind, e.seq) for e in seen] == [("snapshot", 0), ("action", 1)]  # the start's snapshot
    assert res.seq == 2 and [a.seq for a in actions] == [1, 2]


def test_a_retry_sent_to_the_stale_writer_is_answered_with_the_other_writers_result():
    """docs/api.md, "Acting": a retry of a ``client_action_id`` in the log is answered with the
    result of its one application (``duplicate``), also when the writer that gets it finds it
    there only by catching up with the stored log: the action went through writer ``a``, its
    retry reaches the stale writer ``b``, whose append is refused; ``b`` folds ``a``'s action in
    and answers the retry with it (seq 1, ``duplicate``), not ABORTED, and writes nothing."""
    store = MemoryStore()

    async def go():
        a, b, match_id, pa, pb = await two_writers(store)
        seat = a._matches[match_id].state.to_act()
        first = await a.submit_action(match_id, pa[seat], "pass", 0, "once")
        retry = await b.submit_action(match_id, pb[seat], "pass", 0, "once")
        actions = (await store.load_match(match_id)).actions
        await b.close()
        await a.close()
        return first, retry, actions

    first, retry, actions = run(go())
    assert (first.seq, first.duplicate) == (1, False)
    assert (retry.seq, retry.action, retry.duplicate) == (1, "pass", True)
    assert retry.view.seat == first.view.seat and retry.view.seq == 1
    assert [(x.seq, x.client_action_id) for x in actions] == [(1, "once")]


def test_a_refused_append_whose_catch_up_cannot_read_the_log_is_unavailable_and_caught_up_on_retry():
    """The stale writer's append is refused (the other writer's action holds that seq) and
    reading the log back fails too: the request is UNAVAILABLE / STORE_UNAVAILABLE (retry),
    logged ``log_conflict`` then ``store_write_failed`` naming the ``catch_up`` that failed
    (docs/operations.md); nothing was folded in, and the retry catches up and is ABORTED /
    STALE_SEQUENCE at the other writer's seq."""
    from engine_service.sessions.api import SessionError, StaleSequence
    from structlog.testing import capture_logs

    class FailingReads(MemoryStore):
        reads_failing = 0

        async def load_match(self, match_id):
            if self.reads_failing:
                self.reads_failing -= 1
                raise StoreError("the database is unreachable")
            return await super().load_match(match_id)

    store = FailingReads()

    async def go():
        a, b, match_id, pa, pb = await two_writers(store)
        await passes(a, match_id, pa, 1)
        seat = b._matches[match_id].state.to_act()
        store.reads_failing = 1
        with pytest.raises(SessionError) as failed:
            await b.submit_action(match_id, pb[seat], "pass", 0)
        seq_then = b._matches[match_id].seq
        with pytest.raises(StaleSequence) as stale:
            await b.submit_action(match_id, pb[seat], "pass", 0)
        await b.close()
        await a.close()
        return failed.value, seq_then, stale.value

    with capture_logs() as logs:
        failed, seq_then, stale = run(go())
    assert (failed.code, failed.reason) == ("UNAVAILABLE", "STORE_UNAVAILABLE")
    assert seq_then == 0 and stale.metadata["seq"] == "1"
    said = [(e["event"], e.get("operation"), e.get("error")) for e in logs
            if e["event"] in ("log_conflict", "store_write_failed", "log_caught_up")]
    assert said == [("log_conflict", None, None), ("store_write_failed", "catch_up", "the database is unreachable"),
                    ("log_conflict", None, None), ("log_caught_up", None, None)]


def test_a_second_writers_actions_that_reach_the_deal_limit_end_the_stale_writers_match():
    """The stale writer of two on one store catches up with the other's actions when its
    append is refused (MatchWriter.apply); when they reached ``max_match_deals`` its match
    ends there too (terminated, ``deal_limit``: MatchWriter.end_past_deal_limit), as the
    writer that played them ended its own. Without it the stale writer's match stayed active
    past the limit, its next decision armed. KL-3.5: four passes throw the deal in; past the
    limit the next deal is not dealt."""
    from engine_service.sessions.api import StaleSequence

    store = MemoryStore()

    async def go():
        a, b, match_id, pa, pb = await two_writers(store, max_match_deals=1)
        await passes(a, match_id, pa, 4)
        ended_by_a = await a.get_match(match_id)
        watcher = b.watch(match_id, Principal("spectator", match_id), 0)
        reader = asyncio.ensure_future(collect(watcher, until=lambda e: e.kind == "match_ended"))
        await asyncio.sleep(0)
        seat = b._matches[match_id].state.to_act()
        with pytest.raises(StaleSequence):
            await b.submit_action(match_id, pb[seat], "pass", None)
        caught_up = await b.get_match(match_id)
        seen = await asyncio.wait_for(reader, 60)  # against a hang only
        await b.close()
        await a.close()
        return ended_by_a, caught_up, seen

    ended_by_a, caught_up, seen = run(go())
    assert ended_by_a.status == "terminated" and ended_by_a.seq == 4
    assert caught_up.seq == 4 and caught_up.status == "terminated", caught_up
    assert (caught_up.result["outcome"], caught_up.result["reason"]) == ("terminated", "deal_limit")
    # b's watchers saw the four actions and the end
    assert [(e.kind, e.seq) for e in seen][1:] == [("action", 1), ("action", 2), ("action", 3), ("action", 4),
                                                   ("match_ended", 4)]


def test_a_stale_writer_with_a_lower_deal_limit_ends_its_match_at_its_limit_on_catching_up():
    """A rolling restart that lowers ``max_match_deals``: the writer with no such limit threw
    the first deal in and dealt the next (KL-3.5), and wrote no end; the stale writer, limited
    to one deal, is refused, catches up and ends its match at its own limit (terminated,
    ``deal_limit``: MatchWriter.end_past_deal_limit, written to the store), as it would
    after an action of its own. The refusal names the seq the caller sent and the match's
    (docs/api.md, STALE_SEQUENCE)."""
    from engine_service.sessions.api import StaleSequence

    store = MemoryStore()

    async def go():
        a, b, match_id, pa, pb = await two_writers(store, stale={"max_match_deals": 1})
        await passes(a, match_id, pa, 4)
        watcher = b.watch(match_id, Principal("spectator", match_id), 0)
        reader = asyncio.ensure_future(collect(watcher, until=lambda e: e.kind == "match_ended"))
        await asyncio.sleep(0)
        seat = b._matches[match_id].state.to_act()
        with pytest.raises(StaleSequence) as info:
            await b.submit_action(match_id, pb[seat], "pass", 0)
        caught_up = await b.get_match(match_id)
        stored = (await store.load_match(match_id)).record
        on_a = await a.get_match(match_id)
        seen = await asyncio.wait_for(reader, 60)  # against a hang only
        await b.close()
        await a.close()
        return info.value, caught_up, stored, on_a, seen

    from structlog.testing import capture_logs

    with capture_logs() as logs:
        error, caught_up, stored, on_a, seen = run(go())
    assert error.metadata == {"expected_seq": "0", "seq": "4"}
    # b's watchers saw the four actions and the end at b's limit
    assert [(e.kind, e.seq) for e in seen][1:] == [("action", 1), ("action", 2), ("action", 3), ("action", 4),
                                                   ("match_ended", 4)]
    assert seen[-1].reason == "terminated"
    # docs/operations.md: b's refused append is a log_conflict, then a log_caught_up of the
    # four actions, each logged as found in the database
    conflicts = [(e["seq"], e["error_type"]) for e in logs if e["event"] == "log_conflict"]
    assert conflicts == [(1, "SequenceConflict")]
    assert [(e["seq"], e["actions"]) for e in logs if e["event"] == "log_caught_up"] == [(4, 4)]
    applied = [e.get("found_in_store", False) for e in logs if e["event"] == "action_applied"]
    assert applied == [False] * 4 + [True] * 4
    assert on_a.status == "active"  # a plays on: its limit is the default
    assert caught_up.seq == 4 and caught_up.status == "terminated", caught_up
    assert (caught_up.result["outcome"], caught_up.result["reason"]) == ("terminated", "deal_limit")
    assert stored.status == "terminated"
    # the deal a dealt past b's limit is not b's (its commitment is not named): b played one
    assert len(caught_up.deal_commitments) == 1 and len(on_a.deal_commitments) == 2


def test_a_stale_writer_whose_append_failed_ends_its_match_at_its_deal_limit_when_it_reads_the_log_back(
        monkeypatch):
    """The stale writer, limited to one deal, has its append answered with an error (written
    nothing) while the other writer, with no such limit, threw the first deal in (KL-3.5) and
    dealt the next, writing no end. Its log in doubt, the stale writer reads it back before its
    next write (MatchWriter.settle_log): the four actions found reached its limit, so it ends
    its match there (terminated, ``deal_limit``, written to the store; ``match_deal_limit``),
    as after a refused append, and the next action is MATCH_NOT_ACTIVE. Without that end the
    match stayed active at a deal it will never deal. No background read-back here: the next
    request's is the one."""
    from engine_service.sessions import seating as seating_module
    from engine_service.sessions.api import SessionError
    from structlog.testing import capture_logs

    monkeypatch.setattr(seating_module, "START_RETRY_FIRST_S", 3600.0)

    class FailsNextAppend(MemoryStore):
        fail_next = False

        async def append_action(self, match_id, action, decks=(), end=None):
            if self.fail_next:
                self.fail_next = False
                raise StoreError("the database is unreachable")
            return await super().append_action(match_id, action, decks, end)

    store = FailsNextAppend()

    async def go():
        a, b, match_id, pa, pb = await two_writers(store, stale={"max_match_deals": 1})
        await passes(a, match_id, pa, 4)
        seat = b._matches[match_id].state.to_act()
        store.fail_next = True
        with pytest.raises(SessionError) as failed:
            await b.submit_action(match_id, pb[seat], "pass", 0)
        with pytest.raises(SessionError) as refused:  # reads the log back first
            await b.submit_action(match_id, pb[seat], "pass", None)
        ended = await b.get_match(match_id)
        stored = (await store.load_match(match_id)).record
        on_a = await a.get_match(match_id)
        await b.close()
        await a.close()
        return failed.value, refused.value, ended, stored, on_a

    with capture_logs() as logs:
        failed, refused, ended, stored, on_a = run(go())
    assert (failed.code, failed.reason) == ("UNAVAILABLE", "STORE_UNAVAILABLE")
    assert refused.reason == "MATCH_NOT_ACTIVE"
    assert ended.seq == 4 and ended.status == stored.status == "terminated", ended
    assert (ended.result["outcome"], ended.result["reason"]) == ("terminated", "deal_limit")
    assert on_a.status == "active"  # a plays on: its limit is the default
    assert [(e["deals"], e["limit"]) for e in logs if e["event"] == "match_deal_limit"] == [(1, 1)]
    assert [(e["outcome"], e["reason"], e["seq"]) for e in logs if e["event"] == "match_ended"] \
        == [("terminated", "deal_limit", 4)]
    assert [(e["seq"], e["actions"]) for e in logs if e["event"] == "log_caught_up"] == [(4, 4)]


def test_a_stale_writer_catches_up_over_a_deal_the_other_writer_dealt_with_its_deck():
    """The other writer's actions threw the deal in (KL-3.5: four passes) and dealt the next
    one with a deck it stored with the action that made it due. The stale writer, refused,
    folds those actions in with that deck (MatchWriter.catch_up reads the stored decks): each
    seat's hand and the legal actions are the same on both writers. Without the stored deck
    the stale writer could not deal: its match waited for a deal nobody would make."""
    from engine_service.sessions.api import StaleSequence

    store = MemoryStore()

    async def go():
        a, b, match_id, pa, pb = await two_writers(store)
        await passes(a, match_id, pa, 4)
        seat = b._matches[match_id].state.to_act()
        with pytest.raises(StaleSequence):
            await b.submit_action(match_id, pb[seat], "pass", None)
        views = [((await a.get_view(match_id, pa[i])).view, (await b.get_view(match_id, pb[i])).view)
                 for i in range(2)]
        dealt = (a._matches[match_id].deals_dealt, b._matches[match_id].deals_dealt)
        await b.close()
        await a.close()
        return views, dealt

    views, dealt = run(go())
    assert dealt == (2, 2)
    for on_a, on_b in views:
        assert on_a["hand"] and on_b["hand"] == on_a["hand"]
        assert on_b["legal"] == on_a["legal"]


def test_a_stale_writers_caught_up_actions_carry_only_the_last_ones_clock():
    """Several actions of the other writer caught up at once (MatchWriter.catch_up) are
    published one after the other: only the last one's event carries a deadline, that of the
    decision it hands on; each earlier one answered a decision made already, so its event
    carries none (the clock is disarmed between them), as its replay shows it. JJK-10.2: the
    clock runs while the seats are present (their streams on the stale writer)."""
    from engine_service.sessions.api import StaleSequence

    from .helpers import Stream

    store = MemoryStore()

    async def go():
        a, b, match_id, pa, pb = await two_writers(store, turn_time_s=60)
        players = [Stream(b, match_id, p) for p in pb]  # present on b: its clock runs
        spectator = Stream(b, match_id, Principal("spectator", match_id))
        await until(lambda: spectator.events and all(p.events for p in players))
        await passes(a, match_id, pa, 3)
        seat = b._matches[match_id].state.to_act()
        with pytest.raises(StaleSequence):
            await b.submit_action(match_id, pb[seat], "pass", None)
        await until(lambda: len(spectator.actions()) == 3)
        deadline = b._matches[match_id].deadline
        for stream in (spectator, *players):
            await stream.close()
        await b.close()
        await a.close()
        return [(e.seq, e.view.deadline) for e in spectator.actions()], deadline

    events, deadline = run(go())
    assert deadline is not None
    assert events == [(1, None), (2, None), (3, deadline)]


def test_a_stale_writers_timed_out_move_refused_by_the_log_decides_again_without_a_failure():
    """docs/operations.md (``log_conflict``): a timed move that finds another writer's action
    in the log catches up and decides again; it is no failed write (``timeout_move_failed``,
    an error "tried again after 1 s"): the stale writer says the conflict and the catch-up
    only, and runs the next decision's clock (JJK-10.3: the following decision gets a fresh
    timer). The refusal used to be logged as a failed timeout move too."""
    from structlog.testing import capture_logs

    from .helpers import Stream

    store = MemoryStore()

    async def go():
        # 10 s x 0.05: b's deadline passes 0.5 s after its players are present
        a, b, match_id, pa, pb = await two_writers(store, turn_time_s=10, time_scale=0.05)
        players = [Stream(b, match_id, p) for p in pb]  # present on b: its clock runs
        m = b._matches[match_id]
        await until(lambda: all(s.present for s in m.seats))
        timed_out = m.timer_key
        await passes(a, match_id, pa, 1)  # the other writer's action, unknown to b
        await until(lambda: m.seq == 1, timeout=30)
        after = (m.actions[0].by, m.timer_key, m.deadline)
        for stream in players:
            await stream.close()
        await b.close()
        await a.close()
        return timed_out, after

    with capture_logs() as logs:
        timed_out, (by, key, deadline) = run(go())
    assert timed_out == (0, timed_out[1])
    assert by == "player"  # a's pass, caught up: b's auto-move was refused
    assert key is not None and key[0] == 1 and deadline is not None  # the next decision's timer
    said = [e["event"] for e in logs if e["event"] in ("log_conflict", "log_caught_up", "timeout_move_failed")]
    assert said == ["log_conflict", "log_caught_up"], said


class _AnswersOnce(_Silent):
    """As _Silent, but its first decision is answered (the first legal action)."""

    answered = False

    async def decide(self, bot, game_id, seat, view, legal, seed, deadline_s):
        if self.answered:
            await asyncio.Event().wait()
        self.answered = True
        return type("Decision", (), dict(action=legal[0], failure=None, elapsed_s=0.0))


def test_a_stale_writers_bot_move_refused_by_the_log_decides_again_without_a_failure():
    """docs/operations.md (``log_conflict``): a bot move that finds another writer's action in
    the log catches up and decides again (the next decision, armed by the catch-up); it is no
    failed write (``bot_move_failed``, tried again a second later): the stale writer says the
    conflict and the catch-up only."""
    from engine_service.sessions.api import SeatConfig
    from structlog.testing import capture_logs

    store = MemoryStore()
    bots = [SeatConfig("bot", "random")] * 2

    async def go():
        # a's bot plays 0.2 s after the match starts, b's (which loads it at seq 0) 1 s after
        a = MatchManager(config(bot_pace_s=0.2), store=store, bot_host=_AnswersOnce(), metrics=Metrics())
        await a.start()
        s = await a.create_match(CreateMatchRequest(game="klaberjass", seats=bots))
        b = MatchManager(config(bot_pace_s=1.0), store=store, bot_host=_AnswersOnce(), metrics=Metrics())
        await b.start()
        m = b._matches[s.match_id]
        await until(lambda: m.seq == 1, timeout=30)  # a's move, caught up: b's was refused
        key = m.bot_key
        await b.close()
        await a.close()
        return m.actions[0], key

    with capture_logs() as logs:
        first, key = run(go())
    assert (first.seq, first.by) == (1, "bot")
    assert key is not None and key[0] == 1  # the next decision, asked of b's bot
    said = [e["event"] for e in logs if e["event"] in ("log_conflict", "log_caught_up", "bot_move_failed")]
    assert said == ["log_conflict", "log_caught_up"], said


def test_a_departed_georgian_joker_seat_stays_with_the_bot_after_a_restart(tmp_path):
    path = tmp_path / "m.sqlite3"

    async def before():
        mgr = sqlite_manager(path)
        await mgr.start()
        s = await mgr.create_match(CreateMatchRequest(game="georgian_joker"))
        tokens = [(await mgr.join_match(s.match_id, i, "x")).token for i in range(4)]
        await mgr.leave_match(s.match_id, mgr.authenticate(s.match_id, tokens[2]), resign=True)
        crash(mgr._store)
        return s.match_id, tokens

    match_id, tokens = run(before())

    async def after():
        mgr = sqlite_manager(path)
        await mgr.start()
        try:
            ps = [mgr.authenticate(match_id, t) for t in tokens]
            others = [p if i != 2 else None for i, p in enumerate(ps)]
            await play_random(mgr, match_id, others, random.Random(3), max_actions=30)
            m = mgr._matches[match_id]
            return await mgr.get_match(match_id), [a for a in m.actions if a.seat == 2]
        finally:
            await mgr.close()

    summary, seat2 = run(after())
    assert summary.seats[2].replaced_by_bot and summary.status == "active"
    assert summary.seats[2].left  # read back from the store after the restart
    assert seat2 and {(a.by, a.reason) for a in seat2} == {("auto", "abandoned")}


def test_the_sweeper_evicts_a_finished_match_and_lets_it_go():
    """After finished_retention_s the sweeper drops a finished match from memory, and nothing
    of the session layer keeps it alive (the store still answers for it)."""
    import gc

    from engine_service.sessions.match import LiveMatch

    from .helpers import manager, open_match, until

    def alive(match_id):
        return any(isinstance(o, LiveMatch) and o.match_id == match_id for o in gc.get_objects())

    async def go():
        async with manager(config(finished_retention_s=0.2)) as mgr:
            match_id, ps = await open_match(mgr, "japanese_joker")
            await play_random(mgr, match_id, ps, random.Random(3))
            assert alive(match_id)
            await until(lambda: mgr.match_ids() == [], timeout=30)
            await asyncio.sleep(0.1)  # one more sweep: its loop has moved past the match
            gc.collect()
            gone = not alive(match_id)
            summary = await mgr.get_match(match_id)
            return gone, summary.status

    gone, status = run(go())
    assert gone, "an evicted match is still referenced"
    assert status == "finished"


def test_the_sweeper_outlives_a_failing_pass():
    """A housekeeping pass that raises is logged and the next one runs: eviction goes on."""
    from .helpers import manager, open_match, until

    async def go():
        async with manager(config(finished_retention_s=0.2)) as mgr:
            real, calls = mgr._housekeeping.sweep_once, []

            async def failing_once():
                calls.append(1)
                if len(calls) == 1:
                    raise RuntimeError("a bug in one pass")
                await real()

            mgr._housekeeping.sweep_once = failing_once
            match_id, ps = await open_match(mgr, "japanese_joker")
            await play_random(mgr, match_id, ps, random.Random(4))
            await until(lambda: mgr.match_ids() == [], timeout=30)
            return len(calls)

    assert run(go()) >= 2


def _first_beats_fail(mgr, failing: int, error: Exception) -> list[float]:
    """Make the first ``failing`` absence heartbeats of ``mgr`` raise ``error``, the later ones
    write; returns the list that collects every beat's time."""
    real, calls = mgr._store.touch_absences, []

    async def touch(seats, at):
        calls.append(at)
        if len(calls) <= failing:
            raise error
        await real(seats, at)

    mgr._store.touch_absences = touch
    return calls


def test_the_absence_heartbeat_outlives_a_failing_beat(tmp_path):
    """A beat that raises something else than a StoreError is logged and the next one runs
    (it used to end the heartbeat task for good: after a crash a restart counted the time
    away only up to the failed beat)."""
    async def go():
        mgr = sqlite_manager(tmp_path / "m.sqlite3", time_scale=1.0, absence_heartbeat_s=0.02)
        match_id, _, streams = await _join_and_watch(mgr, "klaberjass")
        try:
            calls = _first_beats_fail(mgr, 1, RuntimeError("a bug in one beat"))
            await streams[0].aclose()
            for _ in range(1000):
                if len(calls) >= 3:
                    break
                await asyncio.sleep(0.01)
            return len(calls), mgr._absence_heartbeat.done()
        finally:
            await mgr.close()

    beats, ended = run(go())
    assert beats >= 3 and not ended


@pytest.mark.parametrize("failure, level", [("store", "warning"), ("bug", "error")])
def test_a_heartbeat_outage_is_said_at_its_start_as_a_summary_and_at_its_end(tmp_path, monkeypatch,
                                                                               failure, level):
    """During a database outage every beat fails: absence_heartbeat_failed is said at the
    first failure, then at most every ABSENCE_OUTAGE_SUMMARY_S with the beats failed since
    (it was one warning per beat, every absence_heartbeat_s, for the whole outage), and
    absence_heartbeat_recovered once when a beat lands again. A bug failing every beat is
    said the same way, at error (it was an error line per beat)."""
    from structlog.testing import capture_logs

    from engine_service.sessions import manager as manager_module
    from engine_service.store import StoreError

    error = StoreError if failure == "store" else RuntimeError
    monkeypatch.setattr(manager_module, "ABSENCE_OUTAGE_SUMMARY_S", 0.2)

    async def go():
        mgr = sqlite_manager(tmp_path / "m.sqlite3", time_scale=1.0, absence_heartbeat_s=0.01)
        match_id, _, streams = await _join_and_watch(mgr, "klaberjass")
        try:
            calls = _first_beats_fail(mgr, 60, error("the database is unreachable"))
            with capture_logs() as logs:
                await streams[0].aclose()
                await until(lambda: any(e["event"] == "absence_heartbeat_recovered" for e in logs), timeout=30)
            return len(calls), logs
        finally:
            await mgr.close()

    beats, logs = run(go())
    failed = [e for e in logs if e["event"] == "absence_heartbeat_failed"]
    recovered = [e for e in logs if e["event"] == "absence_heartbeat_recovered"]
    assert beats > 60 and len(recovered) == 1
    assert failed[0]["failed_beats"] == 1 and failed[0]["outage_s"] == 0.0
    assert {e["log_level"] for e in failed} == {level}
    assert {e["error_type"] for e in failed} == {error.__name__}
    # 60 failed beats, said at most every 0.2 s (outage_s is rounded to 0.1 s)
    assert len(failed) < 30, [e.get("failed_beats") for e in failed]
    assert all(b["outage_s"] - a["outage_s"] >= 0.1 for a, b in zip(failed, failed[1:]))
    assert sum(e["failed_beats"] for e in failed) <= 60
    assert recovered[0]["outage_s"] >= failed[-1]["outage_s"]


def test_a_beat_that_fails_with_a_bug_is_said_at_error_and_the_heartbeat_goes_on():
    """MatchManager._touch_absences_periodically: a beat that raises something else than a
    StoreError (a bug) is logged absence_heartbeat_failed at error (docs/operations.md) and
    the next beat runs: it used to end the heartbeat for good, silently, and a crash
    afterwards counted the time away only up to that beat. (Mutant: only StoreError caught.)"""
    from structlog.testing import capture_logs

    async def go():
        async with manager(config(absence_heartbeat_s=0.01)) as mgr:
            beats = []

            async def beat():
                beats.append(len(beats))
                if len(beats) == 1:
                    raise RuntimeError("a bug in the beat")

            mgr._touch_absences = beat
            with capture_logs() as logs:
                await until(lambda: len(beats) >= 3, timeout=10)
            return [(e["log_level"], e["error_type"]) for e in logs if e["event"] == "absence_heartbeat_failed"]

    assert run(go()) == [("error", "RuntimeError")]


def test_a_heartbeat_outage_is_said_once_a_minute_with_the_beats_failed_since(monkeypatch):
    """docs/operations.md (absence_heartbeat_failed): said "at the first failed beat, then at
    most once a minute while beats keep failing", each line with the beats failed since the
    one before (failed_beats, itself included) and the outage so far (outage_s). Beats every
    5 s on a virtual clock, failing for two minutes. (Mutants of
    MatchManager._heartbeat_failed: the minute counted from the latest failure instead of the
    latest line, the suppressed beats not counted, the line's own beat not counted.)"""
    from structlog.testing import capture_logs

    from engine_service.sessions.clock import ABSENCE_OUTAGE_SUMMARY_S

    assert ABSENCE_OUTAGE_SUMMARY_S == 60.0  # "at most once a minute"

    async def go():
        loop = asyncio.get_running_loop()
        mgr = MatchManager(config(), store=MemoryStore(), metrics=Metrics(), create_bot_host=False)
        start = loop.time()
        with capture_logs() as logs:
            for beat in range(25):  # 0, 5, ... 120 s
                await advance_to(start + 5.0 * beat)
                mgr._heartbeat_failed(StoreError("the database is unreachable"), seats=1)
        return [(e["failed_beats"], e["outage_s"]) for e in logs if e["event"] == "absence_heartbeat_failed"]

    assert run_virtual(go, monkeypatch) == [(1, 0.0), (12, 60.0), (12, 120.0)]


def test_a_heartbeat_outage_that_ends_while_nobody_is_away_is_said_over_when_the_database_answers(
        tmp_path, monkeypatch):
    """The player away comes back during the outage, then the database does. A beat with
    nobody away wrote nothing and said nothing, so the outage was said over only at the next
    beat that had someone away, perhaps hours later, its outage_s counting all the quiet time.
    Now a beat with nobody away asks the database (Store.ping) while an outage is open: its
    failures are counted as failed beats (seats 0), and the first answer ends the outage
    (absence_heartbeat_recovered, seats 0, outage_s ending then). Nothing is asked once it is
    over."""
    from structlog.testing import capture_logs

    from engine_service.sessions import manager as manager_module
    from engine_service.store import StoreError

    monkeypatch.setattr(manager_module, "ABSENCE_OUTAGE_SUMMARY_S", 0.1)

    async def go():
        loop = asyncio.get_running_loop()
        mgr = sqlite_manager(tmp_path / "m.sqlite3", time_scale=1.0, absence_heartbeat_s=0.02)
        match_id, tokens, streams = await _join_and_watch(mgr, "klaberjass")
        store = mgr._store
        real_touch, real_ping = store.touch_absences, store.ping
        down, first_failure, pings = [True], [], []

        async def touch(seats, at):
            if down[0]:
                first_failure.append(loop.time())
                raise StoreError("the database is unreachable")
            await real_touch(seats, at)

        async def ping():
            pings.append(down[0])
            if down[0]:
                raise StoreError("the database is unreachable")
            await real_ping()

        store.touch_absences, store.ping = touch, ping
        try:
            with capture_logs() as logs:
                await streams[0].aclose()
                await until(lambda: first_failure, timeout=30)
                assert not pings  # someone is away: the beat writes, it does not ask
                back = mgr.watch(match_id, mgr.authenticate(match_id, tokens[0]), -1)
                await back.__anext__()  # nobody away now
                await until(lambda: any(e["event"] == "absence_heartbeat_failed" and e["seats"] == 0
                                        for e in logs), timeout=30)
                down[0] = False
                up = loop.time()
                await until(lambda: any(e["event"] == "absence_heartbeat_recovered" for e in logs), timeout=30)
                said = loop.time()
                asked = len(pings)
                await asyncio.sleep(0.3)  # 15 beats, nobody away, no outage
                return logs, first_failure[0], up, said, asked, len(pings)
        finally:
            await mgr.close()

    logs, start, up, said, asked, asked_later = run(go())
    [recovered] = [e for e in logs if e["event"] == "absence_heartbeat_recovered"]
    assert recovered["seats"] == 0
    # the quiet downtime is part of the outage; the time after the database answered is not
    assert up - start - 0.1 <= recovered["outage_s"] <= said - start + 0.1, (recovered, up - start, said - start)
    assert asked >= 2 and asked_later == asked
    failed = [e for e in logs if e["event"] == "absence_heartbeat_failed"]
    assert failed[0]["seats"] == 1 and failed[0]["failed_beats"] == 1


@pytest.mark.parametrize("tamper", [{"game": "no_such_game"}, {"options": {"kl_target_score": "many"}}])
def test_a_stored_match_this_program_cannot_read_is_corrupt_not_a_bad_request(tamper):
    """A stored record naming an unknown game or options the game refuses (written by another
    program, or a game since removed) is skipped at start (match_resume_failed) and answered
    INTERNAL / MATCH_CORRUPT when asked for, not as the caller's INVALID_ARGUMENT. The
    CorruptLog that the operator's log says names the match and what the rules refused."""
    import dataclasses

    from engine_service.sessions.api import SessionError
    from engine_service.sessions.match import CorruptLog, LiveMatch

    store = MemoryStore()

    async def go():
        mgr = MatchManager(config(), store=store, metrics=Metrics(), create_bot_host=False)
        await mgr.start()
        s = await mgr.create_match(CreateMatchRequest(game="klaberjass"))
        await mgr.close()
        row = store._rows[s.match_id]
        row.record = dataclasses.replace(row.record, **tamper)
        again = MatchManager(config(), store=store, metrics=Metrics(), create_bot_host=False)
        await again.start()
        try:
            assert again.match_ids() == []
            with pytest.raises(SessionError) as info:
                await again.get_match(s.match_id)
            return info.value, row
        finally:
            await again.close()

    error, row = run(go())
    # docs/api.md (Errors): INTERNAL / MATCH_CORRUPT, the code of a server fault (mutant: the
    # base SessionError's code changed; only its reason was checked)
    assert (error.code, error.reason) == ("INTERNAL", "MATCH_CORRUPT") and type(error) is SessionError
    with pytest.raises(CorruptLog) as corrupt:
        LiveMatch(row.record, list(row.decks.values()), row.actions)
    said = str(corrupt.value)
    assert said.startswith(f"match {row.record.match_id}: ") and len(said) > len(f"match {row.record.match_id}: ")


def test_a_log_whose_deck_is_missing_is_corrupt_and_says_which_deal():
    """A stored log with an action of a deal whose deck is not stored (a database edited by
    hand, a partial restore) does not replay: the match is skipped at start and MATCH_CORRUPT
    when asked for, and the operator's log names the deal whose deck is missing and the
    first action that needed it, not an action the rules refused (KL-3.5: four passes throw
    the first deal in; the fifth pass is the second deal's)."""
    from engine_service.sessions.api import SessionError
    from structlog.testing import capture_logs

    store = MemoryStore()

    async def go():
        mgr = MatchManager(config(), store=store, metrics=Metrics(), create_bot_host=False)
        await mgr.start()
        s = await mgr.create_match(CreateMatchRequest(game="klaberjass"))
        ps = [mgr.authenticate(s.match_id, (await mgr.join_match(s.match_id, i, "x")).token) for i in range(2)]
        for _ in range(5):
            m = mgr._matches[s.match_id]
            await mgr.submit_action(s.match_id, ps[m.state.to_act()], "pass", m.seq)
        await mgr.close()
        del store._rows[s.match_id].decks[1]
        again = MatchManager(config(), store=store, metrics=Metrics(), create_bot_host=False)
        with capture_logs() as logs:
            await again.start()
            try:
                with pytest.raises(SessionError) as info:
                    await again.get_match(s.match_id)
                return info.value, again.match_ids(), logs
            finally:
                await again.close()

    error, held, logs = run(go())
    assert error.reason == "MATCH_CORRUPT" and held == []
    failures = [e for e in logs if e["event"] in ("match_resume_failed", "match_load_failed")]
    assert [e["event"] for e in failures] == ["match_resume_failed", "match_load_failed"]
    assert all(e["error"] == "no deck for deal 1 before seq 5" for e in failures), failures


def _a_stored_klaberjass_match():
    """The memory store's row of a Klaberjass match just opened (its first deck dealt), the
    manager closed: what a replay is given."""
    from .helpers import open_match

    store = MemoryStore()

    async def go():
        mgr = MatchManager(config(), store=store, metrics=Metrics(), create_bot_host=False)
        await mgr.start()
        match_id, _ = await open_match(mgr, "klaberjass")
        await mgr.close()
        return store._rows[match_id]

    return run(go())


def test_an_ended_match_read_back_has_the_deal_its_last_action_dealt():
    """An ended match is folded up to the decks its end recorded (their commitments), and
    with no bound when none is recorded (schema < 4): a match terminated right after the
    action that dealt its next deal is read back with that deal dealt, as it showed when it
    ended (each seat its hand of it), not stopped before the deck."""
    import dataclasses

    from engine_service.rules.game import CHANCE
    from engine_service.sessions.match import LiveMatch

    from .helpers import open_match

    store = MemoryStore()

    async def go():
        mgr = MatchManager(config(), store=store, metrics=Metrics(), create_bot_host=False)
        await mgr.start()
        match_id, principals = await open_match(mgr, "klaberjass")
        rng = random.Random(5)
        while mgr._matches[match_id].deals_dealt < 2:  # the action that needs the next deck deals it
            assert await play_random(mgr, match_id, principals, rng, max_actions=1) == 1
        await mgr.terminate_match(match_id, "test")
        await mgr.close()
        return store._rows[match_id]

    row = run(go())
    assert row.record.status == "terminated" and len(row.record.deal_commitments) == 2
    for record in (row.record, dataclasses.replace(row.record, deal_commitments=())):
        live = LiveMatch(record, list(row.decks.values()), row.actions)
        assert live.deals_dealt == 2 and live.state.to_act() != CHANCE


def test_a_stored_first_deck_the_rules_refuse_is_a_corrupt_log_naming_the_deck_not_its_cards():
    """A stored first deck that is no permutation of the pack (a database edited by hand)
    does not replay: CorruptLog says that the first deck is refused and why (the error's type
    and reason), never which cards it holds, for the operator's log."""
    import dataclasses

    from engine_service.sessions.match import CorruptLog, LiveMatch

    row = _a_stored_klaberjass_match()
    deck = row.decks[0]
    bad = dataclasses.replace(deck, cards=(deck.cards[1],) + deck.cards[1:])  # a card twice
    with pytest.raises(CorruptLog) as info:
        LiveMatch(row.record, [bad], row.actions)
    message = str(info.value)
    assert message == (f"match {row.record.match_id}: the log does not replay: the first deck is "
                       f"refused: InvalidDeck (INVALID_DECK)")
    # (the random match id may hold a card's two letters: 9NRJefvJolkK0QAD did, AD)
    assert deck.cards[1] not in message.replace(row.record.match_id, "")


def test_a_replay_failing_for_another_reason_than_the_rules_names_only_the_errors_type(monkeypatch):
    """A replay that fails on something other than a rules error (a bug) is a CorruptLog naming
    the record and the exception's type only: its message may hold anything (cards)."""
    from engine_service.sessions.match import CorruptLog, LiveMatch

    row = _a_stored_klaberjass_match()
    state_class = type(get_game("klaberjass").new_state(get_game("klaberjass").options({}), first_dealer=0))

    def broken_deal(self, cards):
        raise ValueError(f"cannot deal {cards[0]}")

    monkeypatch.setattr(state_class, "deal", broken_deal)
    with pytest.raises(CorruptLog) as info:
        LiveMatch(row.record, list(row.decks.values()), row.actions)
    assert str(info.value) == (f"match {row.record.match_id}: the log does not replay: the first deck is "
                               f"refused: ValueError")


@pytest.mark.parametrize("game_id", GAMES)
def test_a_log_that_does_not_replay_is_logged_without_what_the_rules_said_of_the_hand(game_id):
    """A stored action the rules refuse on replay (a database edited by hand, a rules change)
    was logged with the rules' message, written for the acting seat: "KC is not in your hand",
    "you must follow suit C", "legal now: play:7S, ...", what a seat of a match others may
    still be playing holds, in the operator's log. match_resume_failed (at start) and
    match_load_failed (when the match is asked for) now name the record (seq, seat, the stored
    action, as public as any action_applied) and the error's type and reason only."""
    import dataclasses

    from engine_service.sessions.api import SessionError
    from engine_service.sessions.match import LiveMatch

    from .helpers import capture_logs_with_context, open_match

    store = MemoryStore()
    candidates = [f"play:{c}" for c in ("7S", "AH", "KC", "8D", "QH", "9C", "TD", "JS")]

    async def go():
        mgr = MatchManager(config(), store=store, metrics=Metrics(), create_bot_host=False)
        await mgr.start()
        match_id, principals = await open_match(mgr, game_id)
        await play_random(mgr, match_id, principals, random.Random(3), max_actions=14)
        await mgr.close()
        row = store._rows[match_id]
        last = row.actions[-1]
        # the refused plays whose rules' message names a card other than the one played
        # (what the seat holds or lacks) or the legal actions
        leaks = []
        for action in candidates:
            if action == last.action:
                continue
            row.actions[-1] = dataclasses.replace(last, action=action)
            live = LiveMatch(row.record, list(row.decks.values()), row.actions[:-1])
            state, _ = live.fold(len(row.actions) - 1, checkpoints=False)
            try:
                state.apply(action, last.seat)
            except Exception as exc:  # noqa: BLE001 - any refusal the rules give
                leaks.append((action, str(exc)))
        assert leaks, "no refused play to test with"
        action, said = leaks[0]
        row.actions[-1] = dataclasses.replace(last, action=action)
        with capture_logs_with_context() as logs:
            again = MatchManager(config(), store=store, metrics=Metrics(), create_bot_host=False)
            await again.start()
            try:
                with pytest.raises(SessionError):
                    await again.get_match(match_id)
            finally:
                await again.close()
        return match_id, last, action, said, logs

    match_id, last, action, said, logs = run(go())
    failed = [e for e in logs if e["event"] in ("match_resume_failed", "match_load_failed")]
    assert {e["event"] for e in failed} == {"match_resume_failed", "match_load_failed"}
    for e in failed:
        assert e["match_id"] == match_id
        error = e["error"]
        assert f"seq {last.seq}" in error and f"seat {last.seat}" in error and action in error
        assert error.startswith(f"match {match_id}: the log does not replay: the action at seq "
                                f"{last.seq} (seat {last.seat}, {action!r}) is refused: "), error
        assert "IllegalAction" in error or "MalformedAction" in error
        assert said not in error, error
        assert "hand" not in error and "legal now" not in error and "follow suit" not in error, error


def test_another_writers_record_the_rules_refuse_is_no_illegal_action_of_the_caller():
    """Catching up with another writer's appends replayed them through the rules; a record
    they refuse raised its IllegalAction into the call that found it: another seat's player
    was answered ILLEGAL_ACTION with the message written for the record's seat (its legal
    actions, "KC is not in your hand"). The call is now MATCH_CORRUPT, as loading such a log
    is, and match_load_failed names the record, not the rules' message."""
    from engine_service.sessions.api import SessionError
    from engine_service.store.base import ActionRecord

    from .helpers import capture_logs_with_context

    store = MemoryStore()

    async def go():
        a = MatchManager(config(), store=store, metrics=Metrics(), create_bot_host=False)
        await a.start()
        s = await a.create_match(CreateMatchRequest(game="klaberjass"))
        tokens = [(await a.join_match(s.match_id, i, "x")).token for i in range(2)]
        m = a._matches[s.match_id]
        seat = m.state.to_act()
        bad = "play:AS"
        try:
            m.state.clone().apply(bad, seat)
        except Exception as exc:  # noqa: BLE001 - the rules' refusal, as the seat would read it
            said = str(exc)
        # another writer's append, refused by the rules, behind this manager's back
        store._rows[s.match_id].actions.append(
            ActionRecord(seq=1, seat=seat, action=bad, by="player", client_action_id="", reason="", at=0.0))
        with capture_logs_with_context() as logs:
            with pytest.raises(SessionError) as info:
                # the seat's own move conflicts with the stored seq 1: the log is caught up
                await a.submit_action(s.match_id, a.authenticate(s.match_id, tokens[seat]), "pass", None)
        await a.close()
        return info.value, said, logs, seat, s.match_id

    error, said, logs, seat, match_id = run(go())
    assert type(error) is SessionError and error.reason == "MATCH_CORRUPT", error
    assert said not in str(error)
    failed = [e for e in logs if e["event"] == "match_load_failed"]
    assert failed and "seq 1" in failed[0]["error"] and "ILLEGAL_ACTION" in failed[0]["error"]
    assert failed[0]["match_id"] == match_id
    # docs/operations.md: named by its refused record (seq, seat, the stored action)
    assert failed[0]["error"].startswith(f"the stored action at seq 1 (seat {seat}, 'play:AS') is refused: ")
    assert said not in repr(logs)


def test_bot_workers_that_cannot_start_stop_the_start_before_the_database_is_opened(tmp_path, monkeypatch):
    """A bot host whose worker processes cannot be started (the interpreter cannot be run:
    a permission, a missing file) ended the start as the database's fault: store_unavailable
    naming the --db. It is now BotHostUnavailable, raised before the store is opened (no file
    made, nothing migrated), and serve answers it with one bot_host_unavailable line, exit 2."""
    import structlog

    from engine_service import serve_cli, settings as settings_mod
    from engine_service.plugins import pool
    from engine_service.sessions.manager import BotHostUnavailable

    def refused(role, settings):
        raise PermissionError(13, "Permission denied", "/usr/bin/python3")

    monkeypatch.setattr(pool, "_spawn_process", refused)
    path = tmp_path / "m.sqlite3"
    mgr = MatchManager(config(db_path=str(path)), store=SqliteStore(path), metrics=Metrics())
    with pytest.raises(BotHostUnavailable, match="cannot start the bot worker processes: .*Permission denied"):
        run(mgr.start())
    assert not path.exists()

    import argparse

    parser = argparse.ArgumentParser()
    settings_mod.add_arguments(parser)
    settings = settings_mod.from_namespace(parser.parse_args(
        ["--db", str(path), "--port", "0", "--metrics-port", "0", "--host", "127.0.0.1",
         "--metrics-host", "127.0.0.1"]))
    with structlog.testing.capture_logs() as logs:
        status = run(serve_cli.serve(settings))
    assert status == serve_cli.EXIT_CONFIG
    errors = [line for line in logs if line["log_level"] == "error"]
    assert [e["event"] for e in errors] == ["bot_host_unavailable"], errors
    assert "cannot start the bot worker processes" in errors[0]["error"] and "Permission denied" in errors[0]["error"]
    assert not path.exists()


# ---- absences that survive a restart (schema 8) ------------------------------------------------

class _Wall:
    """The Unix time the managers' clocks read (MatchClock.wall), moved by hand: a downtime
    of any length without waiting for it."""

    def __init__(self, now: float = 1_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def _walled(path, wall, **cfg) -> MatchManager:
    mgr = sqlite_manager(path, **cfg)
    mgr._clock.wall = wall
    return mgr


async def _join_and_watch(mgr, game_id, **request):
    """A match of ``game_id`` with every seat joined and watched: (match id, tokens, streams)."""
    await mgr.start()
    s = await mgr.create_match(CreateMatchRequest(game=game_id, **request))
    tokens = [(await mgr.join_match(s.match_id, i, f"p{i}")).token for i in range(len(s.seats))]
    streams = []
    for t in tokens:
        stream = mgr.watch(s.match_id, mgr.authenticate(s.match_id, t), -1)
        await stream.__anext__()
        streams.append(stream)
    return s.match_id, tokens, streams


async def _start_and_measure(mgr, match_id) -> list[float | None]:
    """Start ``mgr`` and return each seat's grace window left as the start re-armed it, in
    seconds of the event loop (None: none running): measured from the loop time the start
    re-armed the match at (``_rearm``'s ``now``), not from a reading after the start, which a
    loaded machine can make any later."""
    armed_at: list[float] = []
    rearm = mgr._rearm

    def recording(m, now):
        armed_at.append(now)
        return rearm(m, now)

    mgr._rearm = recording
    try:
        await mgr.start()
    finally:
        del mgr._rearm
    (now,) = set(armed_at)
    return [None if s.grace_deadline is None else s.grace_deadline - now for s in mgr._matches[match_id].seats]


def _remaining_after_a_restart(path, wall, match_id, cfg) -> list[float | None]:
    """Each seat's grace window left (:func:`_start_and_measure`) once an engine on ``path``
    and the wall clock ``wall`` has started again."""
    async def go():
        mgr = _walled(path, wall, **cfg)
        left = await _start_and_measure(mgr, match_id)
        await mgr.close()
        return left

    return run(go())


def test_a_player_away_before_a_drain_gets_only_the_rest_of_the_grace_window(tmp_path):
    away_before_a_drain(lambda: sqlite_manager(tmp_path / "m.sqlite3", time_scale=0.01))


def away_before_a_drain(make_manager) -> None:
    """Seat 0's player went away 40 s into a 60 s grace window (``make_manager()``'s
    time_scale 0.01: 0.4 s of 0.6 s) before the engine drained; the engine came back after a
    long downtime. Seat 0 gets the remaining 20 s (the downtime does not count: nobody can
    reconnect to a stopped engine), seat 1, connected at the drain, a whole window from the
    restart, as before schema 8. With nobody back, seat 0's window ends first: a
    disconnection forfeit, seat 1 wins (JJK-10.2, JJK-8.4). Without the stored absence both
    windows started over and ended together (abandoned). Shared with the PostgreSQL store's
    tests (tests/store/test_postgres_service.py)."""
    wall = _Wall()

    def _walled_manager():
        mgr = make_manager()
        mgr._clock.wall = wall
        return mgr

    async def before():
        mgr = _walled_manager()
        match_id, _, streams = await _join_and_watch(mgr, "klaberjass")
        await streams[0].aclose()  # seat 0 goes away
        wall.now += 0.4
        await mgr.close()  # the drain records until when the engine served
        return match_id

    match_id = run(before())
    wall.now += 3600.0  # an hour down

    async def after():
        mgr = _walled_manager()
        left = await _start_and_measure(mgr, match_id)
        try:
            await absences_written(mgr, match_id)
            stored = [(s.away_since, s.away_seen) for s in (await mgr._store.load_match(match_id)).record.seats]
            events = await collect(mgr.watch(match_id, Principal("spectator", match_id), -1))
            return left, stored, events, await mgr.get_match(match_id)
        finally:
            await mgr.close()

    left, stored, events, summary = run(after())
    assert left[0] == pytest.approx(0.2, abs=0.05) and left[1] == pytest.approx(0.6, abs=0.05)
    # the windows as they now run, recorded as if the engine had never stopped
    assert stored[0][0] == pytest.approx(wall.now - 0.4) and stored[1][0] == pytest.approx(wall.now)
    # seat 0's window ran out first, whatever the machine's pace: the windows ending together
    # would be "abandoned", seat 1's first a forfeit of seat 1
    assert events[-1].kind == "match_ended" and summary.result["outcome"] == "forfeit"
    assert summary.result["winners"] == [1] and summary.result["forfeited"] == 0


def test_a_crash_loop_does_not_postpone_a_forfeit(tmp_path):
    """Every restart after a crash used to give an absent player a whole new window, so an
    engine that crashed over and over never applied the policy. Now each run's time away
    counts, up to the last heartbeat before the crash (``absence_heartbeat_s``): 0.2 s away in
    the first run, 0.2 s more in the second, 0.2 s left of the 0.6 s window in the third; the
    downtimes do not count."""
    path, wall = tmp_path / "m.sqlite3", _Wall()
    cfg = dict(time_scale=0.01, absence_heartbeat_s=0.02)

    async def first():
        mgr = _walled(path, wall, **cfg)
        match_id, _, streams = await _join_and_watch(mgr, "klaberjass")
        await streams[0].aclose()
        wall.now += 0.2
        await asyncio.sleep(0.1)  # heartbeats record that the engine served until then
        crash(mgr._store)
        return match_id

    match_id = run(first())

    async def again(expected):
        mgr = _walled(path, wall, **cfg)
        left = await _start_and_measure(mgr, match_id)
        assert left[0] == pytest.approx(expected, abs=0.05), left
        wall.now += 0.2
        await asyncio.sleep(0.1)
        crash(mgr._store)
        return left

    wall.now += 600.0
    second = run(again(0.4))
    wall.now += 60.0
    third = run(again(0.2))
    # seat 1 never came back either: each restart, nobody being connected, its window runs
    # on from the first restart (connected at the first crash: a whole window from there)
    assert second[1] == pytest.approx(0.6, abs=0.05) and third[1] == pytest.approx(0.4, abs=0.05)


def test_two_windows_used_up_before_a_restart_end_in_the_order_they_ran_out(tmp_path):
    """Both players of a two-player game away, seat 0 since 0.1 s before seat 1, and the
    engine's last record says it served past both windows (0.6 s): here the wall clock
    stepped forward before a crash, or a forfeit that could not be written. After the
    restart seat 0's window, which ran out first, decides: a forfeit, seat 1 wins
    (JJK-10.2). The time away counted used to be capped at the window, so both windows
    ended at the same instant and the match ended "abandoned", without a winner."""
    path, wall = tmp_path / "m.sqlite3", _Wall()
    cfg = dict(time_scale=0.01, absence_heartbeat_s=3600.0)

    async def first():
        mgr = _walled(path, wall, **cfg)
        match_id, _, streams = await _join_and_watch(mgr, "klaberjass")
        await streams[0].aclose()
        wall.now += 0.1
        await streams[1].aclose()
        await absences_written(mgr, match_id)
        wall.now += 5.0  # a clock step: the engine's record of serving is past both windows
        await mgr._touch_absences()
        crash(mgr._store)
        return match_id

    match_id = run(first())
    wall.now += 60.0

    async def second():
        mgr = _walled(path, wall, **cfg)
        await mgr.start()
        try:
            await collect(mgr.watch(match_id, Principal("spectator", match_id), -1))
            return await mgr.get_match(match_id)
        finally:
            await mgr.close()

    summary = run(second())
    assert summary.result["outcome"] == "forfeit", summary.result
    assert summary.result["winners"] == [1] and summary.result["forfeited"] == 0


def test_a_player_back_whose_return_is_not_written_yet_is_not_recorded_away_meanwhile(tmp_path):
    """Seat 0's player was away 0.4 s of a 0.6 s window, then came back; the write of the
    return is slow (here it never lands) and the engine crashes 0.1 s later. The heartbeat
    meanwhile records nothing for that seat, so the restart counts 0.4 s away (the store
    cannot know of the return): 0.2 s left. The heartbeat used to go on recording it away
    until its return was written, and the restart counted the time after the return too."""
    path, wall = tmp_path / "m.sqlite3", _Wall()
    cfg = dict(time_scale=0.01, absence_heartbeat_s=3600.0)  # beats called by hand below

    async def first():
        mgr = _walled(path, wall, **cfg)
        match_id, tokens, streams = await _join_and_watch(mgr, "klaberjass")
        await streams[0].aclose()
        await absences_written(mgr, match_id)
        wall.now += 0.4
        await mgr._touch_absences()
        real = mgr._store.save_absence

        async def slow(match_id, seat, away_since, *args, **kwargs):
            if away_since is None:
                await asyncio.Event().wait()  # never lands before the crash
            await real(match_id, seat, away_since, *args, **kwargs)

        mgr._store.save_absence = slow
        back = mgr.watch(match_id, mgr.authenticate(match_id, tokens[0]), -1)
        await back.__anext__()
        wall.now += 0.1
        await mgr._touch_absences()
        seen = (await mgr._store.load_match(match_id)).record.seats[0].away_seen
        # a real crash runs nothing more: here the loop's end closes seat 1's stream, whose
        # absence would be recorded (and the engine's serving with it) after the crash
        mgr._clock.stopped = True
        crash(mgr._store)
        return match_id, seen

    match_id, seen = run(first())
    assert seen == pytest.approx(wall.now - 0.1)
    wall.now += 60.0

    left = _remaining_after_a_restart(path, wall, match_id, cfg)
    assert left[0] == pytest.approx(0.2, abs=0.05) and left[1] == pytest.approx(0.6, abs=0.05)


def test_the_absence_writes_of_an_idle_match_are_let_go_once_done():
    """A match that starts with nobody watching gives every seat a grace window, each
    recorded by a background write; once written, the seats keep nothing of those writes.
    Each seat used to keep its finished task (its coroutine and context) as long as the
    match was held: 2.1 KB more per idle two-player match."""
    import gc

    from .helpers import manager

    async def go():
        async with manager(config(time_scale=100000.0)) as mgr:
            for _ in range(3):
                s = await mgr.create_match(CreateMatchRequest(game="japanese_joker"))
                for seat in range(2):
                    await mgr.join_match(s.match_id, seat, f"p{seat}")
            await absences_written(mgr)
            recorded = [slot.absence_stored[0] is not None for m in mgr._matches.values() for slot in m.seats]
            kept = [slot.absence_task for m in mgr._matches.values() for slot in m.seats]
            gc.collect()
            finished = [t for t in gc.get_objects()
                        if isinstance(t, asyncio.Task) and t.done() and t.get_name().startswith("absence-")]
            return recorded, kept, finished

    recorded, kept, finished = run(go())
    assert recorded == [True] * 6
    assert kept == [None] * 6 and finished == []


def _seat_0_away_before_a_drain(path, wall: _Wall, cfg: dict) -> str:
    """A Georgian Joker table with its own reconnect_grace_s of 300 s, every seat watching,
    whose seat 0 goes away 100 s (0.1 s at time_scale 0.001) before the engine drains; then
    an hour of downtime. The match's id."""
    async def before():
        mgr = _walled(path, wall, **cfg)
        match_id, _, streams = await _join_and_watch(mgr, "georgian_joker",
                                                     options={"reconnect_grace_s": 300})
        await streams[0].aclose()
        wall.now += 0.1
        await mgr.close()
        return match_id

    match_id = run(before())
    wall.now += 3600.0
    return match_id


def test_a_resumed_window_is_the_rest_of_the_tables_own_grace_period(tmp_path):
    """A Georgian Joker table's own reconnect_grace_s (here 300 s, not the default 60 s) is
    the window a restart continues: seat 0's player away 100 s (0.1 s at time_scale 0.001)
    before a drain gets 200 s more (0.2 s) after it; the seats connected at the drain get
    the table's whole 300 s."""
    path, wall = tmp_path / "m.sqlite3", _Wall()
    cfg = dict(time_scale=0.001)

    match_id = _seat_0_away_before_a_drain(path, wall, cfg)

    left = _remaining_after_a_restart(path, wall, match_id, cfg)
    assert left[0] == pytest.approx(0.2, abs=0.03)
    assert left[1:] == [pytest.approx(0.3, abs=0.03)] * 3


class _CountedMatches(dict):
    """The manager's matches, counting the walks over all of them (values())."""

    walks = 0

    def values(self):
        self.walks += 1
        return super().values()


def test_the_absence_heartbeat_touches_the_away_seats_without_walking_every_match(tmp_path):
    """A beat (every absence_heartbeat_s) records that the engine still serves for the seats
    whose stored absence is a window running, and for those only: the seat away, not the
    connected one, nor a seat read back away after a restart once its player is back. It
    used to find them by walking every seat of every match held, about 17 ms of the event
    loop for 10,000 matches every 5 s even with nobody away; the clock now keeps them
    (MatchClock.running) as the records change."""
    path, wall = tmp_path / "m.sqlite3", _Wall()
    # beats called by hand below; whole 60 s windows: seat 0's, resumed with 0.6 s left at
    # time_scale 0.01, ran out on a loaded machine before its player was back (the match over)
    cfg = dict(absence_heartbeat_s=3600.0)

    async def first():
        mgr = _walled(path, wall, **cfg)
        match_id, _, streams = await _join_and_watch(mgr, "klaberjass")
        for _ in range(3):  # other matches held, nobody away in them
            await mgr.create_match(CreateMatchRequest(game="klaberjass"))
        await streams[0].aclose()
        await absences_written(mgr, match_id)
        mgr._matches = _CountedMatches(mgr._matches)
        wall.now += 0.1
        await mgr._touch_absences()
        seats = [(s.away_since, s.away_seen) for s in (await mgr._store.load_match(match_id)).record.seats]
        walks = mgr._matches.walks
        crash(mgr._store)
        return match_id, seats, walks

    match_id, seats, walks = run(first())
    assert walks == 0
    assert seats == [(pytest.approx(wall.now - 0.1), pytest.approx(wall.now)), (None, None)]
    wall.now += 60.0

    async def second():
        mgr = _walled(path, wall, **cfg)
        await mgr.start()
        try:
            # read back away: seat 0 (rest of its window) and seat 1 (connected at the crash)
            resumed = sorted(mgr._clock.running)
            back = []
            for seat in (0, 1):
                token = (await mgr.reissue_seat_token(match_id, seat))[0].token
                stream = mgr.watch(match_id, mgr.authenticate(match_id, token), -1)
                await stream.__anext__()
                back.append(stream)
            await absences_written(mgr, match_id)
            return resumed, sorted(mgr._clock.running)
        finally:
            await mgr.close()

    resumed, after_return = run(second())
    assert resumed == [(match_id, 0), (match_id, 1)]
    assert after_return == []


def test_a_georgian_joker_seat_taken_over_before_a_restart_stays_taken_over(tmp_path):
    """GJ-12.4: a seat whose grace window ran out is played by the takeover bot until its
    player connects again (GJ-12.3). A restart used to give it back to the absent player for
    a new window; now the seat is still the bot's after it (no window runs for it), and its
    player's return gives it back ("returned") and clears the stored absence."""
    path, wall = tmp_path / "m.sqlite3", _Wall()
    cfg = dict(time_scale=0.001)  # GJ's 60 s default grace -> 0.06 s; its turns of 30 s -> 0.03 s

    async def before():
        mgr = _walled(path, wall, **cfg)
        match_id, tokens, streams = await _join_and_watch(mgr, "georgian_joker")
        await streams[0].aclose()
        m = mgr._matches[match_id]
        while not m.seats[0].taken_over:
            await asyncio.sleep(0.01)
        while m.seats[0].absence_stored != (m.seats[0].away_since, True):
            await asyncio.sleep(0.01)
        crash(mgr._store)
        return match_id, tokens[0]

    match_id, token = run(before())
    wall.now += 120.0

    async def after():
        from structlog.testing import capture_logs

        mgr = _walled(path, wall, **cfg)
        with capture_logs() as logs:
            await mgr.start()
        try:
            slot = mgr._matches[match_id].seats[0]
            # read back as stored, taken over: no window runs for the heartbeat to touch
            # (SeatSlot.absence_stored, MatchClock.running)
            assert slot.absence_stored == (slot.away_since, True) and slot.away_since is not None
            assert (match_id, 0) not in mgr._clock.running
            resumed = (slot.taken_over, slot.grace_deadline, (await mgr.get_match(match_id)).seats[0].replaced_by_bot)
            # docs/operations.md: the takeover bot keeps the seat, said at start-up
            said = [(e["seat"], e["taken_over"]) for e in logs if e["event"] == "grace_resumed"]
            assert [e for e in said if e[0] == 0] == [(0, True)], said
            back = mgr.watch(match_id, mgr.authenticate(match_id, token), -1)
            await back.__anext__()
            await absences_written(mgr, match_id)
            stored = (await mgr._store.load_match(match_id)).record.seats[0]
            returned = (slot.taken_over, (await mgr.get_match(match_id)).seats[0].replaced_by_bot)
            await back.aclose()
            return resumed, returned, (stored.away_since, stored.taken_over)
        finally:
            await mgr.close()

    resumed, returned, stored = run(after())
    assert resumed == (True, None, True)
    assert returned == (False, False)
    assert stored == (None, False)


def test_a_departed_georgian_joker_seat_gets_no_grace_window_after_a_restart(tmp_path):
    """GJ-12.4: a player who left is gone for good. After a restart nobody is connected, so
    every other joined player is absent and gets a grace window (recorded away in the store),
    but the seat that left gets none (SeatSlot.absent: not a player who left): a window for it
    recorded it away and, at its end, announced "bot_took_over" for a player whose "left" had
    already said they were gone."""
    path, wall = tmp_path / "m.sqlite3", _Wall()

    async def before():
        mgr = _walled(path, wall)
        match_id, tokens, streams = await _join_and_watch(mgr, "georgian_joker")
        await mgr.leave_match(match_id, mgr.authenticate(match_id, tokens[2]), resign=True)
        await absences_written(mgr, match_id)
        crash(mgr._store)
        return match_id

    match_id = run(before())

    async def after():
        mgr = _walled(path, wall)
        windows = await _start_and_measure(mgr, match_id)
        try:
            await absences_written(mgr, match_id)
            stored = (await mgr._store.load_match(match_id)).record.seats
            return windows, [(s.left, s.away_since is not None) for s in stored]
        finally:
            await mgr.close()

    windows, stored = run(after())
    assert [w is not None for w in windows] == [True, True, False, True], windows
    assert stored == [(False, True), (False, True), (True, False), (False, True)]


def test_an_absence_write_for_a_match_whose_rows_are_gone_is_not_retried_for_ever():
    """A match's rows deleted outside the engine (an operator's SQL) while it is held: the
    absence write answered UnknownMatch and was tried again every second for as long as the
    match was held, a warning each time; it is said once and given up."""
    from structlog.testing import capture_logs

    from engine_service.sessions import clock as clock_module

    from .helpers import manager

    async def go():
        async with manager(config(time_scale=100000.0)) as mgr:
            s = await mgr.create_match(CreateMatchRequest(game="japanese_joker"))
            for seat in range(2):
                await mgr.join_match(s.match_id, seat, f"p{seat}")
            await absences_written(mgr)
            m = mgr._matches[s.match_id]
            del mgr._store._rows[s.match_id]
            with capture_logs() as logs:
                mgr._clock.record_absence(m, m.seats[0], None)  # the player is back
                task = m.seats[0].absence_task
                await asyncio.sleep(clock_module.RETRY_AFTER_STORE_FAILURE_S * 2.5)
            return [e for e in logs if e["event"] == "absence_write_failed"], task

    failed, task = run(go())
    assert [(e["error_type"], e["log_level"]) for e in failed] == [("UnknownMatch", "warning")]
    assert task.done()


def test_a_resumed_window_is_logged_with_the_time_it_has_left(tmp_path):
    """A restart that continues an away player's grace period says so (`grace_resumed`, with
    the time away before the stop and the time left), so that an operator can tell why a
    player forfeited at once after it; a player connected at the stop gets no such line."""
    from structlog.testing import capture_logs

    path, wall = tmp_path / "m.sqlite3", _Wall()
    cfg = dict(time_scale=0.001)

    match_id = _seat_0_away_before_a_drain(path, wall, cfg)

    async def after():
        mgr = _walled(path, wall, **cfg)
        with capture_logs() as logs:
            await mgr.start()
        await mgr.close()
        return [e for e in logs if e["event"] == "grace_resumed"]

    resumed = run(after())
    assert [(e["match_id"], e["seat"], e["taken_over"]) for e in resumed] == [(match_id, 0, False)]
    assert resumed[0]["away_s"] == pytest.approx(0.1, abs=0.03)
    assert resumed[0]["left_s"] == pytest.approx(0.2, abs=0.03)


def test_a_window_a_slow_start_arms_late_is_recorded_from_when_the_engine_served_again(monkeypatch):
    """A start re-arms its resumed matches one after the other, each from the loop time the
    engine serves again (``_rearm``'s ``now``): with thousands of them the last ones are armed
    a while after it (here 5 s, on a virtual clock). Each window's recorded start (its
    ``away_since``, what the next restart continues) is its deadline less the window: the
    Unix time of ``now`` for a player connected at the stop, ``now`` less the 10 s already
    used for one away before it. A resumed window used to record the Unix time of its
    arming instead, 5 s late: a crash then gave its player those 5 s again. After a crash
    (no drain records until when the engine served) the next start counts the time away up
    to the last absence write, each window's ``away_seen``: 15 s and 5 s."""
    store = MemoryStore()
    cfg = config(absence_heartbeat_s=3600.0)

    async def go():
        loop = asyncio.get_running_loop()
        before = MatchManager(cfg, store=store, metrics=Metrics(), create_bot_host=False)
        match_id, _, streams = await _join_and_watch(before, "klaberjass")
        await streams[0].aclose()  # seat 0 goes away; seat 1 is connected at the stop
        await advance_to(loop.time() + 10.0)
        await before.close()
        await advance_to(loop.time() + 600.0)  # down

        after = MatchManager(cfg, store=store, metrics=Metrics(), create_bot_host=False)
        rearm, served_again = after._rearm, []

        def slow(m, now):
            served_again.append(now)
            loop.set_time(loop.time() + 5.0)  # the matches re-armed before this one
            rearm(m, now)

        after._rearm = slow
        await after.start()
        await absences_written(after, match_id)
        deadlines = [s.grace_deadline for s in after._matches[match_id].seats]
        stored = [s.away_since for s in (await store.load_match(match_id)).record.seats]
        _crash_in_process(after)
        await advance_to(loop.time() + 600.0)  # down

        again = MatchManager(cfg, store=store, metrics=Metrics(), create_bot_host=False)
        await again.start()
        started = loop.time()
        left = [s.grace_deadline - started for s in again._matches[match_id].seats]
        await again.close()
        return served_again, deadlines, stored, left

    (now,), deadlines, stored, left = run_virtual(go, monkeypatch)
    window = cfg.reconnect_grace_s
    # the virtual loop's time and the Unix time are one number
    assert deadlines == [now - 10.0 + window, now + window]
    assert stored == [now - 10.0, now]
    assert left == [window - 15.0, window - 5.0]


def test_after_a_crash_the_time_away_counts_up_to_the_last_action_when_that_is_newer(monkeypatch):
    """``_rearm``: the engine is known to have served until the newest of the seats'
    ``away_seen`` and the match's last action. Seat 0's player went away (the absence written
    at once) and 20 s later a move was made; then the engine crashed (no drain, no heartbeat
    since). After the restart seat 0's window is the grace period less those 20 s, which the
    engine demonstrably served; the downtime does not count (JJK-10.2, GJ-12.4). Counted up to
    the absence's own write only, the player got those 20 s again."""
    store = MemoryStore()
    cfg = config(absence_heartbeat_s=3600.0)

    async def go():
        loop = asyncio.get_running_loop()
        before = MatchManager(cfg, store=store, metrics=Metrics(), create_bot_host=False)
        match_id, tokens, streams = await _join_and_watch(before, "klaberjass")
        await streams[0].aclose()  # seat 0 goes away
        await absences_written(before, match_id)
        seen = (await store.load_match(match_id)).record.seats[0].away_seen
        await advance_to(loop.time() + 20.0)
        seat = before._matches[match_id].state.to_act()
        principal = before.authenticate(match_id, tokens[seat])
        env = await before.get_view(match_id, principal)
        await before.submit_action(match_id, principal, env.view["legal"][0], env.seq)
        moved_at = before._matches[match_id].actions[-1].at
        _crash_in_process(before)
        await advance_to(loop.time() + 600.0)  # down

        after = MatchManager(cfg, store=store, metrics=Metrics(), create_bot_host=False)
        left = await _start_and_measure(after, match_id)
        await after.close()
        return seen, moved_at, left

    seen, moved_at, left = run_virtual(go, monkeypatch)
    assert moved_at - seen == 20.0  # the absence's write is 20 s older than the move
    assert left == [cfg.reconnect_grace_s - 20.0, cfg.reconnect_grace_s]


def test_a_window_resumed_after_the_wall_clock_stepped_back_is_never_longer_than_the_grace_period(monkeypatch):
    """Seat 0's player went away; then the wall clock stepped back 30 s (an NTP correction)
    and the drain 10 s later recorded the engine serving until a Unix time before the
    absence's start. The time away cannot be told: after the restart the window is the
    whole grace period, as for a player connected at the stop, never more (a negative time
    away would lengthen it past the table's reconnect_grace_s)."""
    store = MemoryStore()
    cfg = config(absence_heartbeat_s=3600.0)

    async def go():
        loop = asyncio.get_running_loop()
        skew = [0.0]
        before = MatchManager(cfg, store=store, metrics=Metrics(), create_bot_host=False)
        before._clock.wall = lambda: time.time() + skew[0]
        match_id, _, streams = await _join_and_watch(before, "klaberjass")
        await streams[0].aclose()
        await absences_written(before, match_id)
        skew[0] = -30.0
        await advance_to(loop.time() + 10.0)
        await before.close()
        await store.open()
        seat = (await store.load_match(match_id)).record.seats[0]
        assert seat.away_seen < seat.away_since

        after = MatchManager(cfg, store=store, metrics=Metrics(), create_bot_host=False)
        await after.start()
        started = loop.time()
        left = [s.grace_deadline - started for s in after._matches[match_id].seats]
        await after.close()
        return left

    left = run_virtual(go, monkeypatch)
    assert left == [cfg.reconnect_grace_s] * 2


def _crash_in_process(mgr: MatchManager) -> None:
    """``mgr`` dies on the test's event loop: nothing of it runs any more (its timers, its
    housekeeping), and nothing is drained or recorded."""
    mgr._clock.stopped = True
    for m in mgr._matches.values():
        mgr._clock.stop(m)
    for task in (mgr._sweeper, mgr._absence_heartbeat):
        task.cancel()


def test_the_absence_heartbeat_forgets_the_windows_of_a_match_that_ended():
    """The heartbeat's index of running grace windows (MatchClock.running) drops a window
    whose match ended at the next beat (MatchManager._touch_absences): a terminated match
    with a player away is no longer recorded as served, and the index does not keep every
    match that ended with somebody away for as long as the engine runs."""
    async def go():
        mgr = MatchManager(config(absence_heartbeat_s=3600.0), store=MemoryStore(), metrics=Metrics(),
                           create_bot_host=False)
        try:
            match_id, _, streams = await _join_and_watch(mgr, "klaberjass")
            await streams[0].aclose()
            await absences_written(mgr, match_id)
            before = set(mgr._clock.running)
            await mgr.terminate_match(match_id, "")
            await mgr._touch_absences()
            return match_id, before, set(mgr._clock.running)
        finally:
            await mgr.close()

    match_id, before, after = run(go())
    assert before == {(match_id, 0)}
    assert after == set()


class _HeldAbsenceWrites(MemoryStore):
    """A MemoryStore whose absence writes wait for ``gate`` while ``held`` (``waiting``: how
    many do)."""

    held = False

    def __init__(self):
        super().__init__()
        self.gate = asyncio.Event()
        self.waiting = 0

    async def save_absence(self, *args, **kwargs):
        if self.held:
            self.waiting += 1
            await self.gate.wait()
        return await super().save_absence(*args, **kwargs)


def test_a_window_whose_write_lands_after_its_match_ended_is_not_indexed():
    """MatchClock.stored: the heartbeat's index of running windows holds no match that ended.
    A player's window whose write was under way when the match ended (terminated here) lands
    afterwards; indexed then, the finished match was kept (and recorded as served at the next
    beat's check) until that beat dropped it."""
    store = _HeldAbsenceWrites()

    async def go():
        mgr = MatchManager(config(absence_heartbeat_s=3600.0), store=store, metrics=Metrics(),
                           create_bot_host=False)
        try:
            match_id, _, streams = await _join_and_watch(mgr, "klaberjass")
            await absences_written(mgr, match_id)  # both players are back
            store.held = True
            await streams[0].aclose()  # seat 0's window starts; its write waits
            await until(lambda: store.waiting == 1)
            await mgr.terminate_match(match_id, "")
            store.gate.set()
            await absences_written(mgr, match_id)
            slot = mgr._matches[match_id].seats[0]
            return match_id, slot.absence_stored, set(mgr._clock.running)
        finally:
            await mgr.close()

    match_id, stored, running = run(go())
    assert stored[0] is not None  # the window's write landed, after the end
    assert running == set()


def test_a_manager_given_no_store_opens_its_db_path_and_no_metrics_counts_process_wide(tmp_path):
    """MatchManager's defaults (its docstring): without ``store`` it opens
    ``config.db_path`` (what bench/action_path.py relies on), so a later manager of that path
    finds the match; without ``metrics`` it counts on the process-wide registry."""
    from engine_service.observability.metrics import get_metrics

    path = tmp_path / "matches.db"

    async def go():
        mgr = MatchManager(config(db_path=str(path)), create_bot_host=False)
        await mgr.start()
        try:
            created = await mgr.create_match(CreateMatchRequest(game="klaberjass"))
        finally:
            await mgr.close()
        async with manager(store=SqliteStore(path)) as again:
            return mgr.metrics, created, await again.get_match(created.match_id)

    metrics, created, read_back = run(go())
    assert metrics is get_metrics()
    assert read_back.match_id == created.match_id and read_back.status == "waiting"


def test_a_window_recorded_after_the_engines_last_record_is_resumed_whole_never_longer(tmp_path):
    """docs/operations.md (Restarts): the time away counts up to the engine's last record
    (a heartbeat, a drain, or the match's last action, if newer), and "the remainder is never
    below 0 nor above a whole period". Seat 0's player went away and the engine crashed before
    any heartbeat, the match without an action: nothing says the engine served after the
    absence began, so seat 0 gets a whole window from the restart, as seat 1 does, not more.
    (Mutant: the time away not clamped at 0, a window of the period plus the absence's wall
    time.)"""
    path = tmp_path / "m.sqlite3"
    wall = _Wall()
    cfg = dict(time_scale=0.01)

    async def before():
        mgr = _walled(path, wall, **cfg)
        match_id, _, streams = await _join_and_watch(mgr, "klaberjass")
        await streams[0].aclose()  # seat 0 goes away
        await absences_written(mgr, match_id)
        crash(mgr._store)  # before any heartbeat recorded that the engine still served
        return match_id

    match_id = run(before())
    wall.now += 30.0
    left = _remaining_after_a_restart(path, wall, match_id, cfg)
    assert left == [pytest.approx(0.6, abs=0.05), pytest.approx(0.6, abs=0.05)]
