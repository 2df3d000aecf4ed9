"""JoinMatch retried with its client_join_id (docs/api.md, "Reconnecting without losing
anything"): a join whose answer was lost (UNAVAILABLE, a timeout, a crash after the seat was
written) used to leave the seat taken with a token nobody had, a retry got SEAT_TAKEN (or a
second seat without ``seat``), and only the admin's ReissueSeatToken recovered it. A retry with
the same id now gets the same seat with a new token, the lost one revoked as ReissueSeatToken
revokes it; whether the match still waits or the join started it, and after a restart. An id
matches only its own seat of its own match, while its player holds it."""

from __future__ import annotations

import asyncio
import random
import time
import uuid

import pytest
from structlog.testing import capture_logs

from engine_service.observability.metrics import Metrics
from engine_service.sessions.api import CreateMatchRequest, Principal, SessionError
from engine_service.sessions.manager import MatchManager
from engine_service.sessions.tokens import join_id_hash, new_token, token_hash
from engine_service.store import SeatRecord, SqliteStore

from tests.crash import crash

from .helpers import Stream, config, manager, play_random, run, until
from .test_store_failures import FailingStart


def join_id() -> str:
    return str(uuid.uuid4())


def sqlite_manager(path) -> MatchManager:
    return MatchManager(config(db_path=str(path)), store=SqliteStore(path), metrics=Metrics(),
                        create_bot_host=False)


async def refused(call) -> SessionError:
    with pytest.raises(SessionError) as info:
        await call
    return info.value


def test_a_retry_while_the_match_waits_gets_the_same_seat_with_a_new_token():
    """The answer of a join was lost: its retry (with its seat, with another seat, without
    one) gets the seat it took with a new token each time; the previous token is refused
    (TOKEN_REVOKED ends its stream, as ReissueSeatToken's would) and the retry takes no other
    seat. The seat keeps its player's name; logged as seat_joined with retry=true, never the
    id or a token; no second "joined" event."""
    metrics = Metrics()

    async def go():
        with capture_logs() as logs:
            async with manager(metrics=metrics) as mgr:
                s = await mgr.create_match(CreateMatchRequest(game="georgian_joker", listed=True, name="t"))
                key = join_id()
                spectator = Stream(mgr, s.match_id, Principal("spectator", s.match_id))
                await until(lambda: spectator.events)
                lost = await mgr.join_match(s.match_id, 2, "ada", key)
                stream = Stream(mgr, s.match_id, mgr.authenticate(s.match_id, lost.token))
                await until(lambda: stream.events)
                retries = [await mgr.join_match(s.match_id, seat, name, key)
                           for seat, name in ((2, "ada"), (0, "someone"), (None, ""))]
                await until(lambda: stream.error is not None)
                summary = await mgr.get_match(s.match_id)
                principal = mgr.authenticate(s.match_id, retries[-1].token)
                view = await mgr.get_view(s.match_id, principal)
                old = [lost.token, *(r.token for r in retries[:-1])]
                olds = []
                for token in old:
                    # a principal resolved before the retry, used after it
                    olds.append(await refused(mgr.get_view(s.match_id, Principal("seat", s.match_id, 2,
                                                                                 token_hash(token)))))
                unknown = []
                for token in old:
                    try:
                        mgr.authenticate(s.match_id, token)
                    except SessionError as exc:
                        unknown.append(exc.reason)
                await spectator.close()
                await stream.close()
                return lost, retries, summary, view, olds, unknown, stream, spectator, logs, key

    lost, retries, summary, view, olds, unknown, stream, spectator, logs, key = run(go())
    assert lost.seat == 2 and not lost.retry
    assert [(r.seat, r.retry) for r in retries] == [(2, True)] * 3
    assert len({lost.token, *(r.token for r in retries)}) == 4
    assert [seat.taken for seat in summary.seats] == [False, False, True, False]
    assert summary.seats[2].player_name == "ada" and summary.status == "waiting"
    assert view.seat == 2
    assert {e.reason for e in olds} == {"TOKEN_REVOKED"} and unknown == ["MISSING_OR_BAD_TOKEN"] * 3
    assert (stream.error.code, stream.error.reason) == ("UNAUTHENTICATED", "TOKEN_REVOKED")
    joined = [e for e in spectator.events if e.kind == "presence" and e.details["change"] == "joined"]
    assert [e.seat for e in joined] == [2]
    assert metrics.value("cardgames_presence_changes_total", {"game": "georgian_joker", "change": "joined"}) == 1
    lines = [e for e in logs if e["event"] == "seat_joined"]
    assert [(e["seat"], e["retry"]) for e in lines] == [(2, False), (2, True), (2, True), (2, True)]
    text = repr(logs)
    assert key not in text and join_id_hash(summary.match_id, key) not in text
    assert not any(t in text for t in [lost.token, *(r.token for r in retries)])


def test_a_retry_of_the_join_that_started_the_match_returns_its_seat_and_plays():
    """The last seat's join started the match (dealt, active) and its answer was lost: the
    retry gets that seat with a new token in the active match (no second start, no second
    deal), and the match is played to its end with it."""
    async def go():
        async with manager() as mgr:
            s = await mgr.create_match(CreateMatchRequest(game="japanese_joker"))
            first = mgr.authenticate(s.match_id, (await mgr.join_match(s.match_id, 0, "a", join_id())).token)
            key = join_id()
            lost = await mgr.join_match(s.match_id, None, "b", key)
            started = await mgr.get_match(s.match_id)
            again = await mgr.join_match(s.match_id, None, "b", key)
            after = await mgr.get_match(s.match_id)
            second = mgr.authenticate(s.match_id, again.token)
            hand = (await mgr.get_view(s.match_id, second)).view["hand"]
            await play_random(mgr, s.match_id, [first, second], random.Random(4))
            return lost, started, again, after, hand, await mgr.get_match(s.match_id)

    lost, started, again, after, hand, final = run(go())
    assert lost.seat == again.seat == 1 and again.retry and again.token != lost.token
    assert started.status == after.status == "active"
    assert after.deal_commitments == started.deal_commitments and len(after.deal_commitments) == 1
    assert hand and final.status == "finished" and final.result["outcome"] == "completed"


def test_a_retry_after_a_restart_gets_the_seat_back(tmp_path):
    """The id's hash is durable with the seat: after a crash a retry still matches, whether
    the match waited, started with that join, or an older version died between the last
    seat's write and the match's start (6502f54: the restart starts it; its last player's
    answer died with the process, and the retry now recovers the token without the
    operator). This version writes the last seat and the start together (Store.start_match):
    the older version's database is written here by hand."""
    path = tmp_path / "m.sqlite3"
    keys = [join_id(), join_id(), join_id()]

    async def first_life():
        mgr = sqlite_manager(path)
        await mgr.start()
        waiting = await mgr.create_match(CreateMatchRequest(game="klaberjass"))
        await mgr.join_match(waiting.match_id, 1, "w", keys[0])
        active = await mgr.create_match(CreateMatchRequest(game="klaberjass"))
        await mgr.join_match(active.match_id, 0, "a0")
        await mgr.join_match(active.match_id, 1, "a1", keys[1])
        died = await mgr.create_match(CreateMatchRequest(game="japanese_joker"))
        await mgr.join_match(died.match_id, 0, "d0")
        await mgr._store.save_seat(died.match_id, SeatRecord(1, "open", "", "d1", token_hash(new_token()),
                                                             time.time(), False, join_id_hash(died.match_id, keys[2])))
        crash(mgr._store)
        return waiting.match_id, active.match_id, died.match_id

    ids = run(first_life())

    async def second_life():
        mgr = sqlite_manager(path)
        await mgr.start()
        try:
            retried = [await mgr.join_match(match_id, None, "", key) for match_id, key in zip(ids, keys)]
            summaries = [await mgr.get_match(match_id) for match_id in ids]
            ps = [mgr.authenticate(ids[2], t) for t in ((await mgr.reissue_seat_token(ids[2], 0))[0].token,
                                                         retried[2].token)]
            await play_random(mgr, ids[2], ps, random.Random(8))
            return retried, summaries, await mgr.get_match(ids[2])
        finally:
            await mgr.close()

    retried, summaries, final = run(second_life())
    assert [(r.seat, r.retry) for r in retried] == [(1, True)] * 3
    assert [s.status for s in summaries] == ["waiting", "active", "active"]
    assert [seat.taken for seat in summaries[0].seats] == [False, True]
    assert final.status == "finished"


def test_an_id_matches_only_its_own_seat_of_its_own_match():
    """Another seat's id gets that other seat, whatever ``seat`` says; an unknown id is a new
    join (a free seat, or SEAT_TAKEN at a full table); an id of another match matches nothing
    here (the hash is salted with the match id); a seat's hash is not another's."""
    async def go():
        async with manager() as mgr:
            s = await mgr.create_match(CreateMatchRequest(game="georgian_joker"))
            other = await mgr.create_match(CreateMatchRequest(game="georgian_joker"))
            keys = [join_id() for _ in range(4)]
            first = [await mgr.join_match(s.match_id, seat, f"p{seat}", keys[seat]) for seat in (0, 1)]
            mine = await mgr.join_match(s.match_id, 0, "p1", keys[1])  # seat 1's id, asking for seat 0
            elsewhere = await mgr.join_match(other.match_id, None, "x", keys[0])  # a new join there
            fresh = await mgr.join_match(s.match_id, None, "p2", keys[2])
            last = await mgr.join_match(s.match_id, None, "p3", keys[3])
            full = await refused(mgr.join_match(s.match_id, None, "late", join_id()))
            taken = await refused(mgr.join_match(s.match_id, 2, "late", join_id()))
            m = mgr._matches[s.match_id]
            return first, mine, elsewhere, fresh, last, full, taken, [slot.join_hash for slot in m.seats]

    first, mine, elsewhere, fresh, last, full, taken, hashes = run(go())
    assert [j.seat for j in first] == [0, 1]
    assert (mine.seat, mine.retry) == (1, True)
    assert (elsewhere.seat, elsewhere.retry) == (0, False)
    assert (fresh.seat, fresh.retry, last.seat, last.retry) == (2, False, 3, False)
    assert (full.code, full.reason) == (taken.code, taken.reason) == ("ALREADY_EXISTS", "SEAT_TAKEN")
    assert len(set(hashes)) == 4 and all(len(h) == 64 for h in hashes)


def test_an_id_no_longer_matches_once_its_player_left_or_the_operator_reissued_the_token():
    """LeaveMatch while the match waits frees the seat and its id with it: a retry is a new
    join (another player's seat is never handed back: SEAT_TAKEN). A player who left an
    active Georgian Joker match (a bot plays the seat) gets no seat back either. After
    ReissueSeatToken the operator's token is the seat's only proof: the id stops matching."""
    async def go():
        async with manager() as mgr:
            s = await mgr.create_match(CreateMatchRequest(game="georgian_joker"))
            keys = [join_id() for _ in range(4)]
            left = await mgr.join_match(s.match_id, 0, "leaver", keys[0])
            await mgr.leave_match(s.match_id, mgr.authenticate(s.match_id, left.token), resign=False)
            await mgr.join_match(s.match_id, 0, "newcomer")
            after_leave = await refused(mgr.join_match(s.match_id, 0, "leaver", keys[0]))
            ps = [mgr.authenticate(s.match_id, (await mgr.join_match(s.match_id, seat, f"p{seat}", keys[seat])).token)
                  for seat in (1, 2, 3)]
            await mgr.leave_match(s.match_id, ps[0], resign=True)  # seat 1 resigns: a bot plays it
            resigned = await refused(mgr.join_match(s.match_id, None, "p1", keys[1]))
            await mgr.reissue_seat_token(s.match_id, 2)
            reissued = await refused(mgr.join_match(s.match_id, 2, "p2", keys[2]))
            still = await mgr.join_match(s.match_id, None, "p3", keys[3])
            summary = await mgr.get_match(s.match_id)
            return after_leave, resigned, reissued, still, summary

    after_leave, resigned, reissued, still, summary = run(go())
    for e in (after_leave, resigned, reissued):
        assert (e.code, e.reason) == ("ALREADY_EXISTS", "SEAT_TAKEN")
    assert (still.seat, still.retry) == (3, True)
    assert summary.seats[0].player_name == "newcomer" and summary.status == "active"


@pytest.mark.parametrize("how", ["join_retry", "reissue"])
def test_a_replaced_token_is_durable_the_new_one_works_after_a_restart_the_old_one_never(how, tmp_path):
    """MatchManager._replace_token: the new token's hash is written before the answer, so a
    token given by a retried join or by ReissueSeatToken still opens its seat after a
    restart, and the token it replaced is refused then too (docs/api.md, Admin API: "the old
    token is refused from then on")."""
    path = tmp_path / "m.sqlite3"
    key = join_id()

    async def first_life():
        mgr = sqlite_manager(path)
        await mgr.start()
        s = await mgr.create_match(CreateMatchRequest(game="klaberjass"))
        old = (await mgr.join_match(s.match_id, 0, "a", key)).token
        if how == "join_retry":
            new = (await mgr.join_match(s.match_id, 0, "a", key)).token
        else:
            new = (await mgr.reissue_seat_token(s.match_id, 0))[0].token
        crash(mgr._store)
        return s.match_id, old, new

    match_id, old, new = run(first_life())

    async def second_life():
        mgr = sqlite_manager(path)
        await mgr.start()
        try:
            p = mgr.authenticate(match_id, new)
            with pytest.raises(SessionError) as info:
                mgr.authenticate(match_id, old)
            return p, info.value
        finally:
            await mgr.close()

    p, refusal = run(second_life())
    assert (p.kind, p.seat) == ("seat", 0)
    assert refusal.code == "UNAUTHENTICATED"


def test_a_client_join_id_is_kept_as_sent_not_trimmed():
    """The id is the client's secret, compared as sent: one that differs by a trailing space
    is another id, so its join takes another seat and is no retry of the first."""
    key = "0123456789abcdef"

    async def go():
        async with manager() as mgr:
            s = await mgr.create_match(CreateMatchRequest(game="klaberjass"))
            return [await mgr.join_match(s.match_id, None, f"p{n}", k) for n, k in enumerate((key + " ", key))]

    first, second = run(go())
    assert [(j.seat, j.retry) for j in (first, second)] == [(0, False), (1, False)]


@pytest.mark.parametrize("bad", ["", None, "x" * 15, "x" * 129, "0123456789abcdef\n", "0123456789abcdef\x00",
                                 "\u200b0123456789abcdef", 12345678901234567])
def test_a_bad_client_join_id_is_refused_and_changes_nothing(bad):
    """16 to 128 printable characters (a UUID), else INVALID_ARGUMENT / BAD_CLIENT_JOIN_ID
    with the field named; "" (or None, in-process) is no id at all. Nothing is taken."""
    async def go():
        async with manager() as mgr:
            s = await mgr.create_match(CreateMatchRequest(game="klaberjass"))
            if bad in ("", None):
                return await mgr.join_match(s.match_id, 0, "a", bad), None
            error = await refused(mgr.join_match(s.match_id, 0, "a", bad))
            edges = [await mgr.join_match(s.match_id, seat, "a", key) for seat, key in ((0, "y" * 16), (1, "é" * 128))]
            return error, edges, await mgr.get_match(s.match_id)

    if bad in ("", None):
        joined, _ = run(go())
        assert joined.seat == 0 and not joined.retry
        return
    error, edges, summary = run(go())
    assert (error.code, error.reason, error.metadata) == ("INVALID_ARGUMENT", "BAD_CLIENT_JOIN_ID",
                                                          {"field": "client_join_id"})
    assert [j.seat for j in edges] == [0, 1] and summary.status == "active"


def test_a_retry_starts_a_match_whose_start_failed():
    """The join that took the last seat was answered UNAVAILABLE / STORE_UNAVAILABLE: its
    start (the seat, the first deck and the status in one write) failed, and so did reading
    the match back, so the seat is held for it (the store might hold it). Its retry with the
    same id gets the seat with a new token and starts the match then and there
    (match_start_recovered, by join_retry), with the "joined" event the failed join did not
    publish; it plays."""
    store = FailingStart()

    async def go():
        with capture_logs() as logs:
            async with manager(store=store) as mgr:
                s = await mgr.create_match(CreateMatchRequest(game="japanese_joker"))
                first = mgr.authenticate(s.match_id, (await mgr.join_match(s.match_id, 0, "a")).token)
                stream = Stream(mgr, s.match_id, first)
                store.fail, store.unreadable, key = True, 1, join_id()
                failed = await refused(mgr.join_match(s.match_id, 1, "b", key))
                waiting = await mgr.get_match(s.match_id)
                again = await mgr.join_match(s.match_id, 1, "b", key)
                second = mgr.authenticate(s.match_id, again.token)
                await play_random(mgr, s.match_id, [first, second], random.Random(2))
                await until(lambda: any(e.kind == "match_ended" for e in stream.events))
                return failed, waiting, again, await mgr.get_match(s.match_id), stream.events, logs

    failed, waiting, again, final, events, logs = run(go())
    assert (failed.code, failed.reason) == ("UNAVAILABLE", "STORE_UNAVAILABLE")
    assert waiting.status == "waiting" and all(seat.taken for seat in waiting.seats)
    assert (again.seat, again.retry) == (1, True)
    assert [e["by"] for e in logs if e["event"] == "match_start_recovered"] == ["join_retry"]
    joined = [e for e in events if e.kind == "presence" and e.details["change"] == "joined"]
    assert [e.seat for e in joined] == [1] and joined[0].view.view["hand"]
    assert final.status == "finished"


def test_a_retry_of_another_seat_starts_a_match_whose_start_failed_with_the_last_seats_joined_event():
    """The start by the join of the last seat (3) is in doubt; the player of seat 1, who
    joined long before (its "joined" published then), retries its join (its answer was lost)
    and so starts the match. The "joined" event the failed join did not publish is seat 3's:
    the fuzz (test_seat_lifecycle_fuzz) found it published for the retrying seat instead, so
    that watchers saw seat 1 join twice and seat 3 never."""
    store = FailingStart()

    async def go():
        async with manager(store=store) as mgr:
            s = await mgr.create_match(CreateMatchRequest(game="georgian_joker"))
            keys = [join_id() for _ in range(4)]
            spectator = Stream(mgr, s.match_id, Principal("spectator", s.match_id))
            await until(lambda: spectator.events)
            for seat in range(3):
                await mgr.join_match(s.match_id, seat, f"p{seat}", keys[seat])
            await until(lambda: len(spectator.events) == 4)
            store.fail, store.unreadable = True, 1
            await refused(mgr.join_match(s.match_id, 3, "p3", keys[3]))
            again = await mgr.join_match(s.match_id, 1, "p1", keys[1])
            await until(lambda: len([e for e in spectator.events if e.kind == "presence"]) == 4)
            await spectator.close()
            return again, await mgr.get_match(s.match_id), spectator.events

    again, summary, events = run(go())
    assert (again.seat, again.retry, summary.status) == (1, True, "active")
    joined = [e.seat for e in events if e.kind == "presence" and e.details["change"] == "joined"]
    assert joined == [0, 1, 2, 3]


def test_a_retry_that_cannot_start_a_match_whose_start_failed_changes_nothing():
    """The start by the last seat's join is in doubt, and the retried join of the other seat
    (its player's answer was lost earlier) cannot start it either (the store still fails): it
    is UNAVAILABLE, and the token its player held still works, in memory and in the store. The
    token used to be replaced before the start was tried: the retry answered UNAVAILABLE had
    revoked the player's token for one nobody was given (found by the seat lifecycle fuzz)."""
    store = FailingStart()

    async def go():
        async with manager(store=store) as mgr:
            s = await mgr.create_match(CreateMatchRequest(game="japanese_joker"))
            key = join_id()
            first = await mgr.join_match(s.match_id, 0, "a", key)
            store.fail, store.times, store.unreadable = True, 2, 2
            await refused(mgr.join_match(s.match_id, 1, "b", join_id()))
            retry = await refused(mgr.join_match(s.match_id, 0, "a", key))
            m = mgr._matches[s.match_id]
            stored = await store.load_match(s.match_id)
            held = mgr.authenticate(s.match_id, first.token).seat
            in_memory = m.seats[0].token_hash
            again = await mgr.join_match(s.match_id, 0, "a", key)  # the store works again
            return retry, held, in_memory, stored.record.seats[0].token_hash, again, m.status

    retry, held, in_memory, in_store, again, status = run(go())
    assert (retry.code, retry.reason) == ("UNAVAILABLE", "STORE_UNAVAILABLE")
    assert held == 0 and in_memory == in_store
    assert (again.seat, again.retry, status) == (0, True, "active")


def test_concurrent_retries_leave_one_valid_token():
    """Two retries of one join at once (a client that gave up waiting on the first) are
    serialised by the match's lock: each gets the seat, the later one's token is the seat's."""
    async def go():
        async with manager() as mgr:
            s = await mgr.create_match(CreateMatchRequest(game="klaberjass"))
            key = join_id()
            await mgr.join_match(s.match_id, 0, "a", key)
            both = await asyncio.gather(*(mgr.join_match(s.match_id, None, "a", key) for _ in range(2)))
            valid = []
            for r in both:
                try:
                    mgr.authenticate(s.match_id, r.token)
                    valid.append(r.token)
                except SessionError:
                    pass
            return both, valid, await mgr.get_match(s.match_id)

    both, valid, summary = run(go())
    assert [(r.seat, r.retry) for r in both] == [(0, True)] * 2 and len(valid) == 1
    assert [seat.taken for seat in summary.seats] == [True, False]
