"""The join that takes the last seat starts the match with one store write (the seat, the
first deck, the status: Store.start_match). These tests hold what a failure of that write
leaves: a start that did not happen leaves the seat open in memory and in the store; one
whose outcome nobody can tell holds the seat and is retried within a second, not at the
sweeper's next pass; and players leaving and joining around a failed start end with the
store and the memory agreeing, the match started once, every seat's token working and every
watcher seeing each change once."""

from __future__ import annotations

import asyncio
import random
import uuid
from dataclasses import replace

import pytest
from structlog.testing import capture_logs

from engine_service.observability.metrics import Metrics
from engine_service.sessions import seating as seating_module
from engine_service.sessions.api import CreateMatchRequest, Principal, SessionError
from engine_service.sessions.chance import random_deck_record
from engine_service.sessions.tokens import token_hash
from engine_service.store import StoreError

from .helpers import Stream, manager, play_random, run, until
from .test_store_failures import FailingStart


def join_id() -> str:
    return str(uuid.uuid4())


async def refused(call) -> SessionError:
    with pytest.raises(SessionError) as info:
        await call
    return info.value


async def agree(mgr, store, match_id: str) -> None:
    """The store holds the match as the memory does: status, every seat, every deck."""
    m = mgr._matches[match_id]
    stored = await store.load_match(match_id)
    assert stored.record.status == m.status
    assert stored.record.seats == tuple(s.record() for s in m.seats)
    assert {d.deal: d for d in stored.decks} == m.decks


def presence(events) -> list[tuple[str, int]]:
    return [(e.details["change"], e.seat) for e in events if e.kind == "presence"]


def test_a_start_that_did_not_happen_leaves_the_last_seat_open_in_memory_and_in_the_store():
    """The start's write failed and the store, read back, holds the match waiting: nothing of
    it was written (one transaction). The join is UNAVAILABLE / STORE_UNAVAILABLE and the match
    is exactly as before it, in memory and in the store: the seat open (in the lobby again),
    no deck, no token, no "joined" event, no retries scheduled. The join retried with its id
    takes the seat as a first join would and starts the match."""
    store = FailingStart()

    async def go():
        async with manager(store=store) as mgr:
            s = await mgr.create_match(CreateMatchRequest(game="klaberjass", listed=True, name="t"))
            first = await mgr.join_match(s.match_id, 0, "a", join_id())
            spectator = Stream(mgr, s.match_id, Principal("spectator", s.match_id))
            await until(lambda: spectator.events)
            store.fail, key = True, join_id()
            failed = await refused(mgr.join_match(s.match_id, 1, "b", key))
            m = mgr._matches[s.match_id]
            before = (m.seats[1].record(), m.status, dict(m.decks), len(mgr._tokens),
                      [t.match_id for t in mgr.list_open_matches()], dict(mgr._seating.start_retries))
            await agree(mgr, store, s.match_id)
            stored = await store.load_match(s.match_id)
            again = await mgr.join_match(s.match_id, 1, "b", key)
            await agree(mgr, store, s.match_id)
            views = [await mgr.get_view(s.match_id, mgr.authenticate(s.match_id, t))
                     for t in (first.token, again.token)]
            await until(lambda: ("joined", 1) in presence(spectator.events))
            await spectator.close()
            return s, failed, before, stored, again, views, spectator.events

    s, failed, before, stored, again, views, events = run(go())
    assert (failed.code, failed.reason) == ("UNAVAILABLE", "STORE_UNAVAILABLE")
    seat, status, decks, tokens, lobby, retries = before
    assert (seat.token_hash, seat.player_name, seat.join_hash, status, decks) == ("", "", "", "waiting", {})
    assert tokens == 1 and lobby == [s.match_id] and retries == {}
    assert stored.record.status == "waiting" and stored.decks == () and not stored.record.seats[1].token_hash
    assert (again.seat, again.retry) == (1, False)
    assert [v.seat for v in views] == [0, 1] and all(v.view["hand"] for v in views)
    assert presence(events) == [("joined", 1)]  # the retried join's only (the stream opened after seat 0's)


@pytest.mark.parametrize("ack_lost", [False, True])
def test_a_start_in_doubt_is_retried_soon_with_a_doubling_backoff(ack_lost, monkeypatch):
    """The start's write failed and so did reading the match back: the seat is held (the
    store may hold it) and the start is tried again after START_RETRY_FIRST_S, then after
    twice as long each time, capped at the sweeper's interval, without waiting for the
    sweeper: each failure logs match_start_failed with the next delay, the success
    match_start_recovered by=retry. A start that had landed (``ack_lost``) is found at the
    first retry and followed. The seat's stream gets its "joined" event once."""
    monkeypatch.setattr(seating_module, "START_RETRY_FIRST_S", 0.05)
    store = FailingStart()

    async def go():
        with capture_logs() as logs:
            async with manager(store=store) as mgr:
                mgr._sweep_interval = 0.15
                s = await mgr.create_match(CreateMatchRequest(game="japanese_joker"))
                first = mgr.authenticate(s.match_id, (await mgr.join_match(s.match_id, 0, "a")).token)
                stream = Stream(mgr, s.match_id, first)
                await until(lambda: stream.events)
                store.fail, store.times, store.ack_lost, store.unreadable = True, 3, ack_lost, 1
                failed = await refused(mgr.join_match(s.match_id, 1, "b"))
                m = mgr._matches[s.match_id]
                held = (m.status, [slot.taken for slot in m.seats], s.match_id in mgr._seating.start_retries)
                await until(lambda: m.status == "active", timeout=30)
                await until(lambda: ("joined", 1) in presence(stream.events))
                await until(lambda: s.match_id not in mgr._seating.start_retries)
                await agree(mgr, store, s.match_id)
                await stream.close()
                return failed, held, logs, stream.events

    failed, held, logs, events = run(go())
    assert (failed.code, failed.reason) == ("UNAVAILABLE", "STORE_UNAVAILABLE")
    assert held == ("waiting", [True, True], True)
    # the failure logged says both: the write's error and the read-back's (_StartInDoubt)
    assert [e["error"] for e in logs if e["event"] == "store_write_failed"][0] == (
        "the database is unreachable (and reading the match back: the database is unreachable)")
    delays = [e["retry_in_s"] for e in logs if e["event"] == "match_start_failed"]
    assert delays == ([] if ack_lost else [0.1, 0.15])
    assert all(e["match_id"] and e["error"] for e in logs if e["event"] == "match_start_failed")
    assert [e["seq"] for e in logs if e["event"] == "match_started"] == [0]
    assert [e["by"] for e in logs if e["event"] == "match_start_recovered"] == ["retry"]
    assert len([e for e in logs if e["event"] == "match_started"]) == 1
    joined = [e for e in events if e.kind == "presence" and e.details["change"] == "joined"]
    assert [e.seat for e in joined] == [1] and joined[0].view.view["hand"]


def test_leaving_and_joining_again_after_a_failed_start():
    """The last seat's join failed (nothing written); then a seated player leaves (the match
    waits: the seat is free again), the failed join is retried and another player takes the
    freed seat, which starts the match. The store and the memory agree at every step, the
    match starts once (one write, one match_started), every seat's token works (the one who
    left has none), the watchers see each join and the leave once and nothing of the failed
    join, and the match is played to its end."""
    store = FailingStart()
    metrics = Metrics()

    async def go():
        with capture_logs() as logs:
            async with manager(store=store, metrics=metrics) as mgr:
                s = await mgr.create_match(CreateMatchRequest(game="klaberjass"))
                spectator = Stream(mgr, s.match_id, Principal("spectator", s.match_id))
                await until(lambda: spectator.events)
                leaver = await mgr.join_match(s.match_id, 0, "leaver", join_id())
                store.fail, key = True, join_id()
                await refused(mgr.join_match(s.match_id, 1, "b", key))
                await agree(mgr, store, s.match_id)
                await mgr.leave_match(s.match_id, mgr.authenticate(s.match_id, leaver.token), resign=False)
                await agree(mgr, store, s.match_id)
                gone = await refused(mgr.get_view(s.match_id, Principal("seat", s.match_id, 0,
                                                                        token_hash(leaver.token))))
                retried = await mgr.join_match(s.match_id, 1, "b", key)
                await agree(mgr, store, s.match_id)
                waiting = await mgr.get_match(s.match_id)
                newcomer = await mgr.join_match(s.match_id, None, "c", join_id())
                await agree(mgr, store, s.match_id)
                started = await mgr.get_match(s.match_id)
                ps = [mgr.authenticate(s.match_id, t) for t in (newcomer.token, retried.token)]
                unknown = None
                try:
                    mgr.authenticate(s.match_id, leaver.token)
                except SessionError as exc:
                    unknown = exc
                await play_random(mgr, s.match_id, ps, random.Random(7))
                await until(lambda: any(e.kind == "match_ended" for e in spectator.events))
                await agree(mgr, store, s.match_id)
                await spectator.close()
                return (gone, retried, waiting, newcomer, started, unknown, await mgr.get_match(s.match_id),
                        spectator.events, logs)

    gone, retried, waiting, newcomer, started, unknown, final, events, logs = run(go())
    assert gone.code == "UNAUTHENTICATED" and unknown is not None
    assert (retried.seat, retried.retry, newcomer.seat) == (1, False, 0)
    assert waiting.status == "waiting" and [x.taken for x in waiting.seats] == [False, True]
    assert started.status == "active" and len(started.deal_commitments) == 1
    assert presence(events) == [("joined", 0), ("left", 0), ("joined", 1), ("joined", 0)]
    assert len([e for e in logs if e["event"] == "match_started"]) == 1
    assert not [e for e in logs if e["event"] in ("match_start_recovered", "match_start_failed")]
    seqs = [e.seq for e in events if e.kind == "action"]
    assert seqs == list(range(1, len(seqs) + 1))  # every action once, in order
    assert final.status == "finished" and final.result["outcome"] == "completed"
    assert metrics.value("cardgames_matches_active", {"game": "klaberjass", "status": "waiting"}) == 0


@pytest.mark.parametrize("ack_lost", [False, True])
def test_leaving_a_match_whose_start_is_in_doubt_starts_it_first(ack_lost):
    """The last seat's start failed and nobody could tell whether the store holds it (``ack_lost``:
    it does): the match waits with every seat taken. A seated player who leaves then would
    free a seat of a match the store may hold as started, so the leave settles the start first
    (match_start_recovered by=leave, the held seat's "joined" event) and is then a leave of the
    started match (Georgian Joker: a bot plays the seat). The failed join's retry gets its seat
    back with a working token; the store and the memory agree; the match started once."""
    store = FailingStart()

    async def go():
        with capture_logs() as logs:
            async with manager(store=store) as mgr:
                s = await mgr.create_match(CreateMatchRequest(game="georgian_joker"))
                spectator = Stream(mgr, s.match_id, Principal("spectator", s.match_id))
                await until(lambda: spectator.events)
                tokens = [(await mgr.join_match(s.match_id, seat, f"p{seat}", join_id())).token for seat in range(3)]
                store.fail, store.ack_lost, store.unreadable, key = True, ack_lost, 1, join_id()
                await refused(mgr.join_match(s.match_id, 3, "p3", key))
                stalled = await mgr.get_match(s.match_id)
                left = await mgr.leave_match(s.match_id, mgr.authenticate(s.match_id, tokens[1]), resign=False)
                await agree(mgr, store, s.match_id)
                retried = await mgr.join_match(s.match_id, None, "p3", key)
                await agree(mgr, store, s.match_id)
                tokens.append(retried.token)
                views = {}
                for seat, token in enumerate(tokens):
                    try:
                        views[seat] = (await mgr.get_view(s.match_id, mgr.authenticate(s.match_id, token))).seat
                    except SessionError as exc:
                        views[seat] = exc.reason
                await until(lambda: ("left", 1) in presence(spectator.events))
                await spectator.close()
                return stalled, left, retried, views, spectator.events, logs

    stalled, left, retried, views, events, logs = run(go())
    assert stalled.status == "waiting" and all(x.taken for x in stalled.seats)
    assert left.status == "active" and left.seats[1].replaced_by_bot
    assert (retried.seat, retried.retry) == (3, True)
    assert views == {0: 0, 1: "SEAT_LEFT", 2: 2, 3: 3}
    assert [e["by"] for e in logs if e["event"] == "match_start_recovered"] == ["leave"]
    assert len([e for e in logs if e["event"] == "match_started"]) == 1
    assert presence(events) == [("joined", 0), ("joined", 1), ("joined", 2), ("joined", 3), ("left", 1)]


@pytest.mark.parametrize("ack_lost", [False, True])
def test_terminating_a_match_whose_start_is_in_doubt_starts_it_first(ack_lost):
    """The admin terminates a match whose start is in doubt (``ack_lost``: the store holds it,
    dealt). It used to be ended as the memory held it, never started: the store kept the
    start's deck (and had it active before the end) while the memory had none, so the match
    read back later (evicted, a restart) was dealt and the one served until then was not
    (found by the seat lifecycle fuzz). The termination settles the start first, as a leave
    does: the store and the memory agree, the match started once."""
    store = FailingStart()

    async def go():
        with capture_logs() as logs:
            async with manager(store=store) as mgr:
                s = await mgr.create_match(CreateMatchRequest(game="japanese_joker"))
                await mgr.join_match(s.match_id, 0, "a", join_id())
                store.fail, store.ack_lost, store.unreadable = True, ack_lost, 1
                await refused(mgr.join_match(s.match_id, 1, "b", join_id()))
                ended = await mgr.terminate_match(s.match_id, "test")
                await agree(mgr, store, s.match_id)
                return ended, mgr._matches[s.match_id].deals_dealt, logs

    ended, dealt, logs = run(go())
    assert ended.status == "terminated" and dealt == 1
    assert [e["by"] for e in logs if e["event"] == "match_start_recovered"] == ["terminate"]
    assert len([e for e in logs if e["event"] == "match_started"]) == 1


class LosesTheEnd(FailingStart):
    """FailingStart whose next set_status is durable but answers with an error (``lose_end``)."""

    lose_end = False

    async def set_status(self, match_id, status, result=None, ended_at=None, deal_commitments=()):
        await super().set_status(match_id, status, result, ended_at, deal_commitments)
        if self.lose_end:
            self.lose_end = False
            raise StoreError("connection lost after the commit")


@pytest.mark.parametrize("in_doubt", [False, True])
def test_a_start_that_finds_the_match_ended_in_the_store_follows_the_end(in_doubt):
    """The admin's TerminateMatch of a waiting match was written but answered UNAVAILABLE (its
    read-back failed too, or the end would have been found and followed at once); before its
    retry, a join takes the last seat: its start finds the match ended in the store
    (MatchNotWaiting, read back: terminated). The match follows that end (MATCH_NOT_ACTIVE,
    ``match_ended`` to its watchers, the memory as the store has it), and the admin's retry is
    MATCH_NOT_ACTIVE. With the read-back failing too (``in_doubt``) the seat is held and the
    start retried: the retry finds the end. It used to treat "not active" as "did not
    happen": the join was UNAVAILABLE again and again, and a match whose start was in doubt
    waited with every seat taken, every retry, sweep, leave and TerminateMatch answered
    UNAVAILABLE, until a restart (found by the seat lifecycle fuzz)."""
    store = LosesTheEnd()

    async def go():
        async with manager(store=store) as mgr:
            mgr._sweep_interval = 0.05
            s = await mgr.create_match(CreateMatchRequest(game="georgian_joker"))
            spectator = Stream(mgr, s.match_id, Principal("spectator", s.match_id))
            await until(lambda: spectator.events)
            for seat in range(3):
                await mgr.join_match(s.match_id, seat, f"p{seat}", join_id())
            store.lose_end, store.unreadable = True, 1  # its read-back fails: the end in doubt
            lost = await refused(mgr.terminate_match(s.match_id, "closing the table"))
            store.unreadable = 1 if in_doubt else 0
            join = await refused(mgr.join_match(s.match_id, 3, "p3", join_id()))
            m = mgr._matches[s.match_id]
            await until(lambda: m.over)
            again = await refused(mgr.terminate_match(s.match_id, "closing the table"))
            await agree(mgr, store, s.match_id)
            await until(lambda: spectator.task.done())
            return lost, join, again, m, spectator.events

    lost, join, again, m, events = run(go())
    assert lost.code == "UNAVAILABLE"
    assert join.reason == ("STORE_UNAVAILABLE" if in_doubt else "MATCH_NOT_ACTIVE")
    assert again.reason == "MATCH_NOT_ACTIVE"
    assert m.status == "terminated" and m.result["reason"] == "closing the table" and m.deals_dealt == 0
    assert [e.kind for e in events][-1] == "match_ended"
    assert presence(events) == [("joined", 0), ("joined", 1), ("joined", 2)]


@pytest.mark.parametrize("by", ["retry", "sweeper"])
def test_a_retried_start_that_finds_the_match_ended_is_no_error(by, monkeypatch):
    """A start in doubt is retried (its own retries, or the sweeper's pass: ``by``) and finds
    the match ended in the store (a TerminateMatch judged not to have happened, then
    committed: PostgreSQL can report a COMMIT lost before it is applied). The match follows
    that end, and the retry logs ``match_start_found_ended`` at info, once, naming who
    retried. Nothing failed: the end is what the store holds. It used to log
    ``match_start_failed`` at error level, and an operator alerting on error lines was paged
    for a table that had simply been closed. A start that does fail stays an error (the
    doubling backoff test)."""
    monkeypatch.setattr(seating_module, "START_RETRY_FIRST_S", 0.05 if by == "retry" else 3600.0)
    store = FailingStart()

    async def go():
        with capture_logs() as logs:
            async with manager(store=store) as mgr:
                s = await mgr.create_match(CreateMatchRequest(game="georgian_joker"))
                for seat in range(3):
                    await mgr.join_match(s.match_id, seat, f"p{seat}", join_id())
                store.fail, store.unreadable = True, 1  # the last join's start in doubt: the seat held
                await refused(mgr.join_match(s.match_id, 3, "p3", join_id()))
                m = mgr._matches[s.match_id]
                await store.set_status(s.match_id, "terminated", {"outcome": "terminated", "winners": [],
                                                                  "reason": "closing the table"}, 1.0)
                if by == "sweeper":
                    await mgr._housekeeping.sweep_once()
                await until(lambda: m.over)
                if by == "retry":
                    await until(lambda: s.match_id not in mgr._seating.start_retries)
                return m, logs

    m, logs = run(go())
    assert m.status == "terminated" and m.result["reason"] == "closing the table"
    assert m.ended_at == 1.0  # when the store has it ended, not when the end was found
    found = [e for e in logs if e["event"] == "match_start_found_ended"]
    assert [(e["log_level"], e["by"], e["status"]) for e in found] == [("info", by, "terminated")]
    assert not [e for e in logs if e["event"] == "match_start_failed"]


def test_a_retried_start_that_finds_a_started_match_ended_deals_its_first_deck(monkeypatch):
    """The last join's start landed but was answered with an error, its read-back failing too
    (the start in doubt: the seats held, the start retried); then an end commits (a
    TerminateMatch judged not to have happened). The retry finds the match ended in the store
    and follows it as the store has it, its first deal dealt with the deck the start wrote
    (Seating._follow_end): the memory and the store agree on the decks, and the ended match's
    views show the deal that was played (none). Without the deal the memory held a started
    match with no deal while the store held its deck."""
    monkeypatch.setattr(seating_module, "START_RETRY_FIRST_S", 0.05)
    store = FailingStart()

    async def go():
        async with manager(store=store) as mgr:
            s = await mgr.create_match(CreateMatchRequest(game="georgian_joker"))
            for seat in range(3):
                await mgr.join_match(s.match_id, seat, f"p{seat}", join_id())
            store.fail, store.ack_lost, store.unreadable = True, True, 1
            await refused(mgr.join_match(s.match_id, 3, "p3", join_id()))
            m = mgr._matches[s.match_id]
            await store.set_status(s.match_id, "terminated", {"outcome": "terminated", "winners": [],
                                                              "reason": "closing the table"}, 1.0)
            await until(lambda: m.over)
            await until(lambda: s.match_id not in mgr._seating.start_retries)
            await agree(mgr, store, s.match_id)
            return m

    m = run(go())
    assert m.status == "terminated" and m.deals_dealt == 1 and list(m.decks) == [0]


async def the_last_join_and_seat_1(mgr, store, match_id, token_1, *join_id):
    """The join of seat 3 (refused: the match ended), the seat ``token_1`` names, once the seat
    rows are written again, and the match's status (memory and store agreeing)."""
    joined = await refused(mgr.join_match(match_id, 3, "p3", *join_id))
    held = mgr.authenticate(match_id, token_1).seat
    await until(lambda: not mgr._seating.seat_resyncs)
    await agree(mgr, store, match_id)
    return joined, held, mgr._matches[match_id].status


def test_an_end_found_in_the_store_keeps_a_seat_whose_write_nobody_could_tell(monkeypatch):
    """A TerminateMatch was written but answered UNAVAILABLE (its read-back failing too); then
    the operator's new token for seat 1 was written but answered UNAVAILABLE with the
    read-back failing (nobody can tell:
    the seat keeps its token in memory, its row is to be written again). The join of the last
    seat finds the end in the store and the match follows it, but not that seat's row: seat 1
    keeps the token its player holds, and the store gets it back. The end took the seat from
    the store, the new token nobody was given (found by the seat lifecycle fuzz)."""
    monkeypatch.setattr(seating_module, "START_RETRY_FIRST_S", 0.2)

    store = LosesTheEnd()

    async def go():
        async with manager(store=store) as mgr:
            s = await mgr.create_match(CreateMatchRequest(game="georgian_joker"))
            tokens = [(await mgr.join_match(s.match_id, seat, f"p{seat}")).token for seat in range(3)]
            store.lose_end, store.unreadable = True, 1  # its read-back fails: the end in doubt
            await refused(mgr.terminate_match(s.match_id, "closing the table"))
            store.lose_seat, store.unreadable = True, 1
            await refused(mgr.reissue_seat_token(s.match_id, 1))
            return await the_last_join_and_seat_1(mgr, store, s.match_id, tokens[1])

    joined, held, status = run(go())
    assert joined.reason == "MATCH_NOT_ACTIVE" and status == "terminated"
    assert held == 1


def test_a_start_that_finds_the_match_ended_keeps_a_seat_whose_write_nobody_could_tell(monkeypatch):
    """The operator's new token for seat 1 was written but answered UNAVAILABLE, the read-back
    failing too (the seat keeps its token in memory, its row is to be written again); then an
    end nobody was told of commits (a TerminateMatch judged not to have happened: PostgreSQL
    can report a COMMIT lost before it is applied). The join of the last seat finds the end in
    the store and the match follows it (Seating._follow_end), but not seat 1's row: its player
    keeps the token it holds, and the store gets that one back. The test above reaches the
    end through the writer's settlement (the end in doubt is settled before the reissue), so
    this one is what holds Seating._resyncing to its word."""
    monkeypatch.setattr(seating_module, "START_RETRY_FIRST_S", 0.2)
    store = FailingStart()

    async def go():
        async with manager(store=store) as mgr:
            s = await mgr.create_match(CreateMatchRequest(game="georgian_joker"))
            tokens = [(await mgr.join_match(s.match_id, seat, f"p{seat}", join_id())).token for seat in range(3)]
            store.lose_seat, store.unreadable = True, 1  # its read-back fails: nobody can tell
            await refused(mgr.reissue_seat_token(s.match_id, 1))
            await store.set_status(s.match_id, "terminated", {"outcome": "terminated", "winners": [],
                                                              "reason": "closing the table"}, 1.0)
            return await the_last_join_and_seat_1(mgr, store, s.match_id, tokens[1], join_id())

    joined, held, status = run(go())
    assert joined.reason == "MATCH_NOT_ACTIVE" and status == "terminated"
    assert held == 1


def test_a_start_found_in_the_store_takes_the_last_seat_even_while_its_earlier_write_is_in_doubt(monkeypatch):
    """An earlier join of seat 0 was written but answered UNAVAILABLE with the read-back failing
    (the seat stays open in memory, its row to be written again). Another player's join then
    takes it as the last seat, and that start is durable but answered with an error: the
    match follows the store, where seat 0 is as this start wrote it, so the join gets it. The
    start followed the store for every seat but that one, the match went on active with seat
    0 open in memory, the join was SEAT_TAKEN with a "joined" event, and the next join took
    the seat in the started match, a second "joined" (found by the seat lifecycle fuzz)."""
    monkeypatch.setattr(seating_module, "START_RETRY_FIRST_S", 0.2)

    store = FailingStart()

    async def go():
        async with manager(store=store) as mgr:
            s = await mgr.create_match(CreateMatchRequest(game="klaberjass"))
            spectator = Stream(mgr, s.match_id, Principal("spectator", s.match_id))
            await until(lambda: spectator.events)
            store.lose_seat, store.unreadable = True, 1
            await refused(mgr.join_match(s.match_id, 0, "a"))
            await mgr.join_match(s.match_id, 1, "b")
            store.fail, store.ack_lost = True, True
            joined = await mgr.join_match(s.match_id, 0, "c")
            await until(lambda: not mgr._seating.seat_resyncs)
            await agree(mgr, store, s.match_id)
            await until(lambda: len(presence(spectator.events)) == 2)
            await spectator.close()
            return joined, mgr.authenticate(s.match_id, joined.token).seat, mgr._matches[s.match_id], \
                spectator.events

    joined, seat, m, events = run(go())
    assert joined.seat == seat == 0 and m.status == "active" and not m.open_seats()
    assert m.seats[0].player_name == "c"
    assert presence(events) == [("joined", 1), ("joined", 0)]


def test_a_join_that_finds_an_earlier_start_in_the_store_follows_it():
    """The store holds the match started with another player in the last seat (an earlier
    start whose write was judged not to have happened, then committed: PostgreSQL can report
    a COMMIT lost before it is applied). The last seat's next join is refused by the store
    (MatchNotWaiting), reads the match back and follows it: the match is active with the
    stored seat and deck, the join is ALREADY_EXISTS / SEAT_TAKEN, the watchers see the stored
    player join, and the store and the memory agree."""
    store = FailingStart()

    async def go():
        async with manager(store=store) as mgr:
            s = await mgr.create_match(CreateMatchRequest(game="klaberjass"))
            first = mgr.authenticate(s.match_id, (await mgr.join_match(s.match_id, 0, "a")).token)
            stream = Stream(mgr, s.match_id, first)
            await until(lambda: stream.events)
            m = mgr._matches[s.match_id]
            earlier = replace(m.seats[1].record(), player_name="earlier", token_hash=token_hash("lost"),
                              joined_at=1.0)
            deck = random_deck_record(m.game, 0)
            await store.start_match(s.match_id, [m.seats[0].record(), earlier], [deck])
            taken = await refused(mgr.join_match(s.match_id, 1, "b"))
            await agree(mgr, store, s.match_id)
            view = await mgr.get_view(s.match_id, first)
            await until(lambda: ("joined", 1) in presence(stream.events))
            await stream.close()
            return taken, m, deck, view, stream.events

    taken, m, deck, view, events = run(go())
    assert (taken.code, taken.reason) == ("ALREADY_EXISTS", "SEAT_TAKEN")
    assert m.status == "active" and m.decks == {0: deck} and m.seats[1].player_name == "earlier"
    assert view.view["hand"] and [p for p in presence(events) if p[0] == "joined"] == [("joined", 1)]


def test_a_retried_join_whose_start_finds_another_player_in_its_seat_is_seat_taken(monkeypatch):
    """The join of the last seat was answered UNAVAILABLE with its start in doubt (the seat
    held for it in memory), and the store holds the match started with another player in that
    seat (an earlier start whose COMMIT was reported lost before it was applied, as above).
    The join retried with its client_join_id starts the match, follows the store and is
    ALREADY_EXISTS / SEAT_TAKEN: the seat is the stored player's, whose token stays the only
    one (the retry used to be given a new token for it, taking the seat from that player)."""
    monkeypatch.setattr(seating_module, "START_RETRY_FIRST_S", 60.0)  # the retry's own start only
    store = FailingStart()

    async def go():
        async with manager(store=store) as mgr:
            s = await mgr.create_match(CreateMatchRequest(game="klaberjass"))
            await mgr.join_match(s.match_id, 0, "a")
            key = str(uuid.uuid4())
            store.fail, store.unreadable = True, 1
            failed = await refused(mgr.join_match(s.match_id, 1, "b", key))
            m = mgr._matches[s.match_id]
            earlier = replace(m.seats[1].record(), player_name="earlier", token_hash=token_hash("lost"),
                              joined_at=1.0, join_hash="")
            await store.start_match(s.match_id, [m.seats[0].record(), earlier], [random_deck_record(m.game, 0)])
            taken = await refused(mgr.join_match(s.match_id, 1, "b", key))
            await agree(mgr, store, s.match_id)
            return failed, taken, m, mgr.authenticate(s.match_id, "lost")

    failed, taken, m, earlier = run(go())
    assert (failed.code, failed.reason) == ("UNAVAILABLE", "STORE_UNAVAILABLE")
    assert (taken.code, taken.reason) == ("ALREADY_EXISTS", "SEAT_TAKEN")
    assert m.status == "active" and m.seats[1].player_name == "earlier"
    assert m.seats[1].token_hash == token_hash("lost") and earlier.seat == 1


async def a_last_join_in_doubt(mgr, store, **failing):
    """A Klaberjass table whose seat 0 joined and whose last join (seat 1, "b") was refused
    UNAVAILABLE, its start in doubt: the store fails its writes (and ``failing``'s settings of
    FailingStart) and its first read-back. The table's summary."""
    s = await mgr.create_match(CreateMatchRequest(game="klaberjass"))
    await mgr.join_match(s.match_id, 0, "a")
    store.fail, store.unreadable = True, 1
    for name, value in failing.items():
        setattr(store, name, value)
    await refused(mgr.join_match(s.match_id, 1, "b"))
    return s


def test_a_server_closes_while_a_start_in_doubt_is_retried(monkeypatch):
    """The store keeps failing: the start's retries go on (match_start_failed each time) until
    the drain, which ends them without a hang or a failed task."""
    monkeypatch.setattr(seating_module, "START_RETRY_FIRST_S", 0.01)
    store = FailingStart()

    async def go():
        with capture_logs() as logs:
            async with manager(store=store) as mgr:
                s = await a_last_join_in_doubt(mgr, store, times=10**6)
                await until(lambda: len([e for e in logs if e["event"] == "match_start_failed"]) >= 3)
                m = mgr._matches[s.match_id]
            return logs, m, dict(mgr._seating.start_retries)

    logs, m, retries = run(go())
    assert m.status == "waiting" and retries == {}
    assert not [e for e in logs if e["event"] in ("session_task_failed", "session_write_failed")]


def test_the_sweeper_logs_a_start_it_could_not_settle_and_starts_the_match_once_it_can(monkeypatch):
    """A start in doubt whose own retry sleeps (a long backoff here): the sweeper's pass tries
    it; the store still failing, the pass logs ``match_start_failed`` (error level, the match,
    the error; no ``retry_in_s``: the next pass is the retry) and the match still waits; once
    the store works, the next pass starts it."""
    monkeypatch.setattr(seating_module, "START_RETRY_FIRST_S", 3600.0)
    store = FailingStart()

    async def go():
        async with manager(store=store) as mgr:
            s = await a_last_join_in_doubt(mgr, store, times=10**6)
            m = mgr._matches[s.match_id]
            with capture_logs() as logs:
                await mgr._housekeeping.sweep_once()
            failing = m.status
            store.fail = False
            with capture_logs() as later:
                await mgr._housekeeping.sweep_once()
            return s.match_id, logs, failing, later, m.status

    match_id, logs, failing, later, status = run(go())
    failed = [e for e in logs if e["event"] == "match_start_failed"]
    assert len(failed) == 1 and failed[0]["log_level"] == "error" and failed[0]["match_id"] == match_id
    assert failed[0]["error"] and "retry_in_s" not in failed[0] and failing == "waiting"
    assert status == "active"
    assert [e.get("by") for e in later if e["event"] == "match_start_recovered"] == ["sweeper"]


def test_a_match_that_ended_is_evicted_while_its_start_retry_still_sleeps(monkeypatch):
    """A start in doubt is retried after a backoff (up to the sweeper's interval); a retried
    join started the match meanwhile, and it was played to its end (here terminated). The
    retry has nothing left to do (a match starts once), yet while it slept it kept the ended
    match from eviction (``Seating.busy``) until it woke. It no longer counts once the match
    has left ``waiting``: the match is evicted at once, and the retry, when it wakes, ends."""
    monkeypatch.setattr(seating_module, "START_RETRY_FIRST_S", 3600.0)  # asleep for the whole test
    store = FailingStart()

    async def go():
        async with manager(store=store) as mgr:
            s = await mgr.create_match(CreateMatchRequest(game="japanese_joker"))
            await mgr.join_match(s.match_id, 0, "a", join_id())
            store.fail, store.unreadable, key = True, 1, join_id()
            failed = await refused(mgr.join_match(s.match_id, 1, "b", key))
            sleeping = s.match_id in mgr._seating.start_retries
            await mgr.join_match(s.match_id, 1, "b", key)  # the retried join starts it
            started = mgr._matches[s.match_id].status
            await mgr.terminate_match(s.match_id, "closed")
            evicted, gone = mgr.evict_finished(), s.match_id not in mgr.match_ids()
            again = await mgr.get_match(s.match_id)  # read back from the store
            return failed, sleeping, started, evicted, gone, again

    failed, sleeping, started, evicted, gone, again = run(go())
    assert failed.reason == "STORE_UNAVAILABLE" and sleeping and started == "active"
    assert (evicted, gone) == (1, True)
    assert again.status == "terminated"


def test_a_token_held_for_a_start_in_doubt_is_forgotten_when_the_store_holds_another_join(monkeypatch):
    """The last seat's join wrote a start that nobody could tell (the write and the read-back
    failed): the seat is held in memory with that join's token, which its player never got
    (the join was UNAVAILABLE). The store holds instead a start of an earlier join of that
    seat (one whose answer was lost). The start's retry follows the store: the seat is the
    earlier join's, and the held token is no longer known to the manager (Seating.take_seat:
    it was kept in the token map for as long as the match stayed in memory, a token of
    nobody's pointing at a seat someone else holds), while the earlier join's token works."""
    monkeypatch.setattr(seating_module, "START_RETRY_FIRST_S", 0.05)
    store = FailingStart()

    async def go():
        async with manager(store=store) as mgr:
            s = await a_last_join_in_doubt(mgr, store)
            m = mgr._matches[s.match_id]
            held = m.seats[1].token_hash
            registered = mgr._tokens.get(held)
            earlier = replace(m.seats[1].record(), player_name="earlier", token_hash=token_hash("lost"),
                              joined_at=1.0, join_hash="")
            await store.start_match(s.match_id, [m.seats[0].record(), earlier], [random_deck_record(m.game, 0)])
            await until(lambda: m.status == "active")
            unknown = await refused(mgr.get_view(s.match_id, Principal("seat", s.match_id, 1, held)))
            view = await mgr.get_view(s.match_id, mgr.authenticate(s.match_id, "lost"))
            return held, registered, dict(mgr._tokens), unknown, view, m

    held, registered, tokens, unknown, view, m = run(go())
    assert registered == (m.match_id, 1)  # held while the start was in doubt
    assert held not in tokens and tokens[token_hash("lost")] == (m.match_id, 1)
    assert unknown.code == "UNAUTHENTICATED"
    assert view.seat == 1 and m.seats[1].player_name == "earlier"


def test_the_sweepers_start_of_a_match_in_doubt_waits_for_a_request_holding_the_match(monkeypatch):
    """The sweeper changes a match only as a request would, under the match's lock
    (housekeeping.py): its pass finds a start in doubt (every seat taken, still waiting)
    while a request holds the match, and starts it only once that request is done."""
    monkeypatch.setattr(seating_module, "START_RETRY_FIRST_S", 3600.0)  # no retries of its own
    store = FailingStart()

    async def go():
        async with manager(store=store) as mgr:
            s = await mgr.create_match(CreateMatchRequest(game="georgian_joker"))
            for seat in range(3):
                await mgr.join_match(s.match_id, seat, f"p{seat}", join_id())
            store.fail, store.unreadable = True, 1  # the last join's start in doubt: the seat held
            await refused(mgr.join_match(s.match_id, 3, "p3", join_id()))
            m = mgr._matches[s.match_id]
            async with m.lock:  # a request under way
                sweep = asyncio.ensure_future(mgr._housekeeping.sweep_once())
                for _ in range(20):
                    await asyncio.sleep(0)
                during = (m.status, sweep.done())
            await sweep
            return during, m.status, (await store.load_match(s.match_id)).record.status
    during, after, stored = run(go())
    assert during == ("waiting", False) and after == stored == "active"
