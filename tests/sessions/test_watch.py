"""Watch streams: replay from the log, live events, resume without loss or duplication,
snapshots for late or far-behind watchers, heartbeats, presence, slow watchers."""

from __future__ import annotations

import asyncio
import random
import time

import pytest

from engine_service.plugins.host import BotHost
from engine_service.sessions.api import (BadRequest, CreateMatchRequest, LimitExceeded, MatchEvent, Principal,
                                         SessionError, Unavailable)
from engine_service.sessions.views import ADMIN as ADMIN_AUDIENCE, SPECTATOR

from .helpers import (ADMIN, GAMES, Stream, capture_logs_with_context, collect, config, manager, open_match, play_random,
                      run, to_act, until)
from .virtual_clock import advance_to, run_virtual


def actions_of(events):
    return [e for e in events if e.kind == "action"]


@pytest.mark.parametrize("game_id", GAMES)
def test_resume_loses_and_duplicates_nothing(game_id):
    """A seat's stream is cut twice; each time it resumes from the last seq it received. The
    union is exactly the continuous stream of the same seat: every action once, in order,
    with the same views."""
    async def go():
        async with manager(config(snapshot_threshold=10_000)) as mgr:
            match_id, ps = await open_match(mgr, game_id)
            me = ps[0]
            continuous = asyncio.ensure_future(collect(mgr.watch(match_id, me, 0)))
            await asyncio.sleep(0)
            pieces, last = [], 0
            for cut in (5, 40):
                part = asyncio.ensure_future(collect(mgr.watch(match_id, me, last),
                                                     until=lambda e, c=cut: e.seq >= c and e.kind == "action"))
                await play_random(mgr, match_id, ps, random.Random(cut), max_actions=cut - last + 7)
                got = await part
                pieces.append(got)
                last = actions_of(got)[-1].seq
            rest = asyncio.ensure_future(collect(mgr.watch(match_id, me, last)))
            await play_random(mgr, match_id, ps, random.Random(99))
            pieces.append(await rest)
            return pieces, await continuous, (await mgr.get_match(match_id)).seq

    pieces, continuous, final_seq = run(go(), timeout=300)
    resumed = [e for piece in pieces for e in actions_of(piece)]
    assert [e.seq for e in resumed] == list(range(1, final_seq + 1))
    reference = actions_of(continuous)
    assert [e.seq for e in reference] == list(range(1, final_seq + 1))
    for a, b in zip(resumed, reference):
        assert (a.seq, a.seat, a.action, a.by) == (b.seq, b.seat, b.action, b.by)
        assert a.view.view == b.view.view, f"view differs at seq {a.seq}"
    assert continuous[-1].kind == "match_ended" and pieces[-1][-1].kind == "match_ended"


def test_a_players_action_has_no_reason_and_a_presence_event_no_action_nor_actor():
    """docs/api.md, events: an action the seat's player sent is ``by`` the player with an
    empty ``reason`` (a reason is for a move the server made); an event that is no action (a
    presence change) carries no action and no ``by`` (``WatchMatchResponse.action`` unset,
    ``by`` unspecified), its ``reason`` the change."""
    async def go():
        async with manager() as mgr:
            match_id, ps = await open_match(mgr, "klaberjass")
            spectator = Stream(mgr, match_id, Principal("spectator", match_id))
            await until(lambda: spectator.events)
            seat, p, env = await to_act(mgr, match_id, ps)
            await mgr.submit_action(match_id, p, env.view["legal"][0], env.seq)
            player = Stream(mgr, match_id, ps[0])
            await until(lambda: any(e.kind == "presence" for e in spectator.events))
            await player.close()
            await spectator.close()
            return seat, spectator.events

    seat, events = run(go())
    [action] = [e for e in events if e.kind == "action"]
    assert (action.seat, action.by, action.reason) == (seat, "player", "")
    presence = [e for e in events if e.kind == "presence"][0]
    assert (presence.seat, presence.action, presence.by, presence.reason) == (0, "", "", "connected")


def test_late_spectator_gets_a_snapshot_then_live_events():
    async def go():
        async with manager(config(snapshot_threshold=5)) as mgr:
            match_id, ps = await open_match(mgr, "klaberjass")
            await play_random(mgr, match_id, ps, random.Random(1), max_actions=12)
            spectator = Principal("spectator", match_id)
            near = asyncio.ensure_future(collect(mgr.watch(match_id, spectator, 9), until=lambda e: e.seq >= 14))
            far = asyncio.ensure_future(collect(mgr.watch(match_id, spectator, 0), until=lambda e: e.seq >= 14))
            fresh = asyncio.ensure_future(collect(mgr.watch(match_id, spectator, -1), until=lambda e: e.seq >= 14))
            # the threshold's edge: a gap of exactly 5 is replayed, one of 6 is a snapshot
            edge = asyncio.ensure_future(collect(mgr.watch(match_id, spectator, 7), until=lambda e: e.seq >= 14))
            past = asyncio.ensure_future(collect(mgr.watch(match_id, spectator, 6), until=lambda e: e.seq >= 14))
            await asyncio.sleep(0)
            await play_random(mgr, match_id, ps, random.Random(2), max_actions=2)
            state = mgr.state_of(match_id)
            results = await near, await far, await fresh, state.public_view(), await edge, await past
            return (*results, mgr.metrics.value("cardgames_watch_snapshots_total"))

    near, far, fresh, public, edge, past, snapshots = run(go())
    assert snapshots == 3  # far, fresh and past started from one; near and edge were replayed
    assert [(e.kind, e.seq) for e in near] == [("action", s) for s in (10, 11, 12, 13, 14)]
    assert [(e.kind, e.seq) for e in edge] == [("action", s) for s in range(8, 15)]
    assert [(e.kind, e.seq) for e in past] == [("snapshot", 12), ("action", 13), ("action", 14)]
    for events in (far, fresh):
        assert events[0].kind == "snapshot" and events[0].seq == 12
        assert events[0].view.seat is None and events[0].view.view["hand"] == []
        # a snapshot is about no seat and no action, and has no why (card_games.proto,
        # WatchMatchResponse: seat "unset otherwise", reason only for MATCH_ENDED, PRESENCE and
        # ACTION; docs/api.md, the events)
        assert (events[0].seat, events[0].action, events[0].by, events[0].reason) == (None, "", "", "")
        assert [(e.kind, e.seq) for e in events[1:]] == [("action", 13), ("action", 14)]
        assert events[-1].view.view == public
        assert {d["seat"] for d in events[0].details["seats"]} == {0, 1}


def test_replayed_views_are_the_views_of_that_moment():
    async def go():
        async with manager() as mgr:
            match_id, ps = await open_match(mgr, "georgian_joker")
            live = asyncio.ensure_future(collect(mgr.watch(match_id, ps[2], 0), until=lambda e: e.seq >= 30))
            await asyncio.sleep(0)
            await play_random(mgr, match_id, ps, random.Random(4), max_actions=30)
            replay = await collect(mgr.watch(match_id, ps[2], 0), until=lambda e: e.seq >= 30)
            return await live, replay

    live, replay = run(go())
    live, replay = actions_of(live), actions_of(replay)
    assert [e.seq for e in live] == [e.seq for e in replay] == list(range(1, 31))
    assert [e.view.view for e in live] == [e.view.view for e in replay]


async def _next_or_error(stream):
    """The stream's next event, or the error it ends with (what the tests read)."""
    try:
        return await stream.__anext__()
    except Exception as exc:  # noqa: BLE001 - the error is the answer
        return exc


@pytest.mark.parametrize("ending", ["token_reissued", "seat_left"])
def test_a_stream_ended_by_the_server_mid_replay_ends_at_once(ending):
    """A stream the server ends (its seat's token replaced, the seat left) ends with that error
    at its next message, even in the middle of its replay: it went on replaying the seat's
    views to the end first, which the holder of a revoked token could stretch by reading
    slowly. Nothing is skipped for an honest client: it resumes from the last seq it got."""
    async def go():
        async with manager() as mgr:
            match_id, ps = await open_match(mgr, "georgian_joker")
            await play_random(mgr, match_id, ps, random.Random(4), max_actions=12)
            stream = mgr.watch(match_id, ps[2], 2)
            first = await stream.__anext__()
            if ending == "token_reissued":
                await mgr.reissue_seat_token(match_id, 2)
            else:
                await mgr.leave_match(match_id, ps[2], resign=False)
            try:
                return first, await _next_or_error(stream)
            finally:
                await stream.aclose()

    first, after = run(go())
    assert first.kind == "action" and first.seq == 3
    assert not isinstance(after, MatchEvent) and after.reason == (
        "TOKEN_REVOKED" if ending == "token_reissued" else "SEAT_LEFT"), after


def test_a_stream_of_a_finished_match_ended_mid_replay_ends_with_its_error_not_the_end():
    """A stream replaying a finished match that the server ends meanwhile (here: a newer
    stream of its seat, MAX_SEAT_STREAMS) ends with that error, as on a live match, not with
    ``match_ended``: the end marks a stream that delivered everything, and this one did not
    (docs/api.md, Reconnecting: the client resumes from the last seq it got)."""
    async def go():
        async with manager(config(max_streams_per_seat=1)) as mgr:
            match_id, ps = await open_match(mgr, "georgian_joker")
            await play_random(mgr, match_id, ps, random.Random(4), max_actions=12)
            await mgr.terminate_match(match_id, "test")
            stream = mgr.watch(match_id, ps[2], 2)
            first = await stream.__anext__()
            newer = mgr.watch(match_id, ps[2], 2)
            await newer.__anext__()
            try:
                return first, await _next_or_error(stream)
            finally:
                await stream.aclose()
                await newer.aclose()

    first, after = run(go())
    assert first.kind == "action" and first.seq == 3
    assert isinstance(after, LimitExceeded) and after.reason == "MAX_SEAT_STREAMS", after


def test_a_stream_of_a_finished_match_the_drain_ends_mid_replay_still_delivers_everything():
    """The drain ends each stream after what it has to deliver (``Watcher.end`` without
    dropping: not cut, unlike the server's ends above): a stream replaying a finished match
    when the drain begins delivers the rest of the replay and ``match_ended``, the mark of a
    stream that delivered everything, not DRAINING after it, which would send its client to
    another server for a match it has already seen end (docs/api.md, Reconnecting; docs/operations.md, the drain)."""
    async def go():
        async with manager() as mgr:
            match_id, ps = await open_match(mgr, "georgian_joker")
            await play_random(mgr, match_id, ps, random.Random(4), max_actions=12)
            await mgr.terminate_match(match_id, "test")
            final = mgr._matches[match_id].seq
            stream = mgr.watch(match_id, ps[2], 2)
            first = await stream.__anext__()
            await mgr.drain()
            rest = []
            try:
                while not rest or isinstance(rest[-1], MatchEvent):
                    rest.append(await _next_or_error(stream))
            finally:
                await stream.aclose()
            return final, first, rest

    final, first, rest = run(go())
    assert first.kind == "action" and first.seq == 3
    assert [(e.kind, e.seq) for e in rest[:-2]] == [("action", s) for s in range(4, final + 1)]
    assert (rest[-2].kind, rest[-2].seq) == ("match_ended", final)
    assert isinstance(rest[-1], StopAsyncIteration), rest[-1]


def test_heartbeats_on_an_idle_stream():
    async def go():
        async with manager(config(heartbeat_interval_s=0.02)) as mgr:
            match_id, ps = await open_match(mgr, "klaberjass")
            other = mgr.watch(match_id, ps[1], -1)
            await other.__anext__()  # both seats present: the turn clock runs (JJK-10.2)
            try:
                return await collect(mgr.watch(match_id, ps[0], -1), until=lambda e: e.kind == "heartbeat",
                                     skip_heartbeats=False)
            finally:
                await other.aclose()

    events = run(go())
    assert events[0].kind == "snapshot" and events[-1].kind == "heartbeat"
    assert events[-1].seq == 0 and events[-1].view is None
    assert events[-1].details["deadline"] is not None  # klaberjass: the session's 30 s default


def test_a_quiet_stream_beats_once_every_heartbeat_interval(monkeypatch):
    """``heartbeat_interval_s`` is the longest a stream stays silent (docs/api.md, heartbeats:
    a client that hears nothing for a few of them knows its stream is dead): on a virtual
    clock, a quiet spectator stream's heartbeats come exactly one interval after its snapshot
    and one after each other, each saying the interval."""
    async def go():
        async with manager(config(heartbeat_interval_s=10.0, reconnect_grace_s=600)) as mgr:
            match_id, ps = await open_match(mgr, "klaberjass")
            loop = asyncio.get_running_loop()
            stream = mgr.watch(match_id, Principal("spectator", match_id), -1)
            assert (await stream.__anext__()).kind == "snapshot"
            start, got = loop.time(), []

            async def read():
                for _ in range(2):
                    e = await stream.__anext__()
                    got.append((e.kind, loop.time() - start, e.details["interval_s"]))

            reader = asyncio.ensure_future(read())
            await advance_to(start + 25.0)
            reader.cancel()  # done by now, unless a heartbeat is late
            await asyncio.gather(reader, return_exceptions=True)
            await stream.aclose()
            return got

    assert run_virtual(go, monkeypatch) == [("heartbeat", 10.0, 10.0), ("heartbeat", 20.0, 10.0)]


def test_a_quiet_spectator_stream_beats_on_and_an_idle_marker_taken_frees_its_place():
    """A spectator stream on a match where nothing happens (no action, no presence event for
    it) gets heartbeats at the seq of its snapshot, one per idle interval, not an error: the
    stream's position is its snapshot's until an event moves it. Each IDLE marker the stream
    takes off its queue stops counting there (``Watcher.idle_taken``): after two heartbeats,
    the stalled stream still holds exactly ``watcher_queue_size`` events and overflows on the
    next one, not one event later (the watcher's room is its queue less a marker still
    queued), and its overflow logged. The interval is short only to be quick; nothing is
    timed."""
    async def go():
        async with manager(config(heartbeat_interval_s=0.01, watcher_queue_size=3)) as mgr:
            match_id, ps = await open_match(mgr, "klaberjass")
            m = mgr._matches[match_id]
            stream = mgr.watch(match_id, Principal("spectator", match_id), -1)
            try:
                first = [await stream.__anext__() for _ in range(3)]  # the snapshot, two heartbeats
                w = _watcher_of(m, SPECTATOR)
                held = []
                for _ in range(50):  # the reader stalls now: actions pile up in its queue
                    await play_random(mgr, match_id, ps, random.Random(len(held)), max_actions=1)
                    if w.overflowed:
                        break
                    held.append(m.seq)
                return first, held, w.overflowed
            finally:
                await stream.aclose()

    with capture_logs_with_context() as logs:
        first, held, overflowed = run(go())
    assert [e.kind for e in first] == ["snapshot", "heartbeat", "heartbeat"]
    assert [e.seq for e in first] == [0, 0, 0]
    assert overflowed and len(held) == 3, held
    # the overflow is logged when it happens, as a spectator's (no seat)
    assert [(e["log_level"], e["audience"], e["seat"]) for e in logs if e["event"] == "watch_overflow"] \
        == [("warning", "spectator", None)]


def test_a_stream_arms_no_timer_per_event():
    """A stream's idle limit (the heartbeat) is one timer per watcher, moved on when it fires
    (:meth:`.watchers.Watcher.wait`), not a timer armed and cancelled around every wait for an
    event: with a thousand spectators, a thousand timers per action. 40 actions delivered to
    three streams well within one heartbeat interval arm a few timers (the clock's turn
    deadlines among them), not one per event."""
    async def go():
        async with manager(config(heartbeat_interval_s=30)) as mgr:
            match_id, ps = await open_match(mgr, "klaberjass")
            streams = [Stream(mgr, match_id, p) for p in (*ps, Principal("spectator", match_id))]
            await until(lambda: all(s.events for s in streams))  # the snapshots: every stream waits
            loop = asyncio.get_running_loop()
            armed = []
            call_at = loop.call_at

            def counting(when, callback, *args, **kwargs):
                armed.append(getattr(callback, "__qualname__", repr(callback)))
                return call_at(when, callback, *args, **kwargs)

            loop.call_at = counting
            try:
                await play_random(mgr, match_id, ps, random.Random(5), max_actions=40)
                await until(lambda: all(len(s.actions()) >= 40 for s in streams))
            finally:
                del loop.call_at
                for s in streams:
                    await s.close()
            return armed

    armed = run(go())
    stream_timers = [a for a in armed if "Watcher" in a or "Timeout" in a]
    assert len(stream_timers) <= 3, stream_timers  # at most one per stream, 120 events delivered


def test_the_idle_marker_counts_against_no_limit():
    """A wait that reaches its idle limit ends with IDLE queued; events offered in the same step
    (a busy loop) go after it and still get the whole queue: the stream overflows at its limit
    of events, not one event earlier."""
    from engine_service.sessions.watchers import IDLE, Watcher

    w = Watcher(SPECTATOR, 3)
    w._idle_at = w._timer_at = 1.0  # waiting, and the timer armed for that limit has fired
    w._idle_check()
    assert w.queue.qsize() == 1
    events = [MatchEvent(kind="action", seq=i, match_id="m") for i in (1, 2, 3)]
    assert all(w.offer(e) for e in events) and not w.overflowed
    assert w.queue._queue[0] is IDLE and [e.seq for e in list(w.queue._queue)[1:]] == [1, 2, 3]
    assert not w.offer(MatchEvent(kind="action", seq=4, match_id="m")) and w.overflowed
    (end,) = [w.queue.get_nowait() for _ in range(w.queue.qsize())]  # dropped, IDLE too
    assert end.error.reason == "WATCH_OVERFLOW"


def test_the_idle_timer_queues_idle_only_for_a_wait_at_its_limit_with_nothing_queued():
    """``Watcher._idle_check``, a watcher's one timer: firing while the stream is busy
    sending (nobody waits) it does nothing; when a later wait moved the limit on, it is armed
    again for that limit; at the limit with an event queued, the wait ends with the event;
    at the limit with nothing queued, IDLE ends the wait."""
    from engine_service.sessions.watchers import IDLE, Watcher

    async def go():
        busy = Watcher(SPECTATOR, 2)
        busy._idle_check()
        later = asyncio.get_running_loop().time() + 600
        moved = Watcher(SPECTATOR, 2)
        moved._idle_at, moved._timer_at = later, later - 1
        moved._idle_check()
        rearmed = (moved._timer is not None and moved._timer.when(), moved._timer_at, moved.queue.qsize())
        moved.stop()
        event = MatchEvent(kind="action", seq=1, match_id="m")
        came_in = Watcher(SPECTATOR, 2)
        came_in.offer(event)
        came_in._idle_at = came_in._timer_at = later
        came_in._idle_check()
        quiet = Watcher(SPECTATOR, 2)
        quiet._idle_at = quiet._timer_at = later
        quiet._idle_check()
        return (busy.queue.qsize(), busy._timer), rearmed, later, list(came_in.queue._queue), quiet

    busy, rearmed, later, came_in, quiet = run(go())
    assert busy == (0, None)
    assert rearmed == (later, later, 0)  # armed again for that very limit, not later
    assert came_in[0].seq == 1 and len(came_in) == 1
    assert list(quiet.queue._queue) == [IDLE] and quiet._idle_queued


def test_a_wait_arms_one_timer_for_its_limit_and_its_end_leaves_the_timer_nothing_to_do():
    """``Watcher.wait``: a wait that reaches its limit ends with IDLE when the one timer armed
    for that limit (``idle_s`` from the wait's start) fires (not a second one armed for the same limit); a wait that ended with
    an event is over, so its timer firing later, the reader busy with the event, queues
    nothing."""
    from engine_service.sessions.watchers import IDLE, Watcher

    async def go():
        loop = asyncio.get_running_loop()
        armed = []
        call_at = loop.call_at

        def counting(when, callback, *args, **kwargs):
            armed.append(when)
            return call_at(when, callback, *args, **kwargs)

        loop.call_at = counting
        started = loop.time()
        try:
            idle = await Watcher(SPECTATOR, 2).wait(0.01)
        finally:
            del loop.call_at
        # the one timer is armed for the wait's own limit (the heartbeat interval: the longest a
        # stream goes without a message, docs/api.md), not a later one
        assert started + 0.01 <= armed[0] < started + 0.015, armed[0] - started
        busy = Watcher(SPECTATOR, 2)
        pending = asyncio.ensure_future(busy.wait(600))
        await asyncio.sleep(0)
        busy.offer(MatchEvent(kind="action", seq=1, match_id="m"))
        got = await pending
        busy._timer.cancel()
        busy._idle_check()  # the timer fires while the reader is busy with the event
        return idle, len(armed), got.seq, busy.queue.qsize()

    assert run(go()) == (IDLE, 1, 1, 0)


def test_a_full_queue_with_the_idle_marker_still_takes_the_end():
    """The queue has room for the watcher's limit of events, IDLE and the end marker: a
    stream whose last event (``match_ended``) filled it while IDLE was queued still ends
    after its events, as ``announce_end`` ends every stream, with no error."""
    from engine_service.sessions.watchers import IDLE, Watcher, _End

    w = Watcher(SPECTATOR, 2)
    w._idle_at = w._timer_at = 1.0
    w._idle_check()
    assert w.offer(MatchEvent(kind="action", seq=1, match_id="m"))
    assert w.offer(MatchEvent(kind="match_ended", seq=1, match_id="m"))
    w.end()
    items = [w.queue.get_nowait() for _ in range(w.queue.qsize())]
    assert items[0] is IDLE and [e.kind for e in items[1:3]] == ["action", "match_ended"]
    assert isinstance(items[3], _End) and items[3].error is None and not w.overflowed


def test_a_slow_watcher_is_cut_off_without_blocking_the_match_and_resumes():
    async def go():
        async with manager(config(watcher_queue_size=3)) as mgr:
            match_id, ps = await open_match(mgr, "klaberjass")
            spectator = Principal("spectator", match_id)
            slow = mgr.watch(match_id, spectator, -1)
            first = await slow.__anext__()  # registered; now it stops reading
            await play_random(mgr, match_id, ps, random.Random(3), max_actions=10)
            assert (await mgr.get_match(match_id)).seq == 10  # the writer never waited
            # queued: the 3 actions that fit; none was offered to it once it was closed
            queued = mgr.metrics.value("cardgames_events_published_total", {"kind": "action"})
            with pytest.raises(Unavailable) as info:
                async for _ in slow:
                    pass
            resumed = await collect(mgr.watch(match_id, spectator, 0), until=lambda e: e.seq >= 10)
            return first, info.value, resumed, mgr.metrics.value("cardgames_watch_overflows_total"), queued

    first, error, resumed, overflows, queued = run(go())
    assert first.kind == "snapshot" and first.seq == 0
    assert error.reason == "WATCH_OVERFLOW"
    assert [e.seq for e in actions_of(resumed)] == list(range(1, 11))
    assert overflows == 1 and queued == 3


def test_presence_follows_open_streams():
    async def go():
        async with manager() as mgr:
            match_id, ps = await open_match(mgr, "klaberjass")
            spectator = mgr.watch(match_id, Principal("spectator", match_id), -1)
            assert (await spectator.__anext__()).kind == "snapshot"
            seat0 = mgr.watch(match_id, ps[0], -1)
            await seat0.__anext__()
            connected = await spectator.__anext__()
            present_while_open = (await mgr.get_match(match_id)).seats[0].present
            await seat0.aclose()
            disconnected = await spectator.__anext__()
            present_after = (await mgr.get_match(match_id)).seats[0].present
            await spectator.aclose()
            return connected, present_while_open, disconnected, present_after

    connected, while_open, disconnected, after = run(go())
    assert (connected.kind, connected.seat, connected.reason) == ("presence", 0, "connected")
    assert connected.details["seats"][0]["present"] is True
    assert (disconnected.kind, disconnected.seat, disconnected.reason) == ("presence", 0, "disconnected")
    assert while_open is True and after is False


def test_a_seat_stays_present_while_any_of_its_streams_is_open():
    """docs/api.md, WatchMatch: "A seat without an open stream counts as disconnected": a
    seat watching from two devices that closes one is still present, with no grace window
    and no ``disconnected`` event; closing the other disconnects it."""
    async def go():
        async with manager() as mgr:
            match_id, ps = await open_match(mgr, "klaberjass")
            other = Stream(mgr, match_id, ps[1])
            phone, laptop = Stream(mgr, match_id, ps[0]), Stream(mgr, match_id, ps[0])
            await until(lambda: other.events and phone.events and laptop.events)
            slot = mgr._matches[match_id].seats[0]
            await phone.close()
            await asyncio.sleep(0)
            one_open = (slot.grace_deadline, (await mgr.get_match(match_id)).seats[0].present)
            await laptop.close()
            await until(lambda: any(e.kind == "presence" and e.reason == "disconnected" for e in other.events))
            seat0 = [e.reason for e in other.events if e.kind == "presence" and e.seat == 0]
            assert slot.grace_deadline is not None
            await other.close()
            return one_open, seat0

    one_open, seat0 = run(go())
    assert one_open == (None, True)
    assert seat0 == ["connected", "disconnected"], seat0


def test_a_replaced_token_disconnects_a_seat_with_one_stream_and_not_one_with_none():
    """The admin replaces a seat token (ReissueSeatToken): the old token's only stream ends
    (TOKEN_REVOKED) and the seat, present until then, is ``disconnected`` with its grace
    window running (JJK-10.2); a seat that had no stream open was absent already and gets no
    second ``disconnected``. (One stream, not two: a seat with two streams told the same.)"""
    async def go():
        async with manager(config(reconnect_grace_s=60)) as mgr:
            match_id, ps = await open_match(mgr, "klaberjass")
            m = mgr._matches[match_id]
            watched = Stream(mgr, match_id, ps[0])
            spectator = Stream(mgr, match_id, Principal("spectator", match_id))
            await until(lambda: m.seats[0].present and spectator.events)
            await mgr.reissue_seat_token(match_id, 1)  # no stream: absent already
            await mgr.reissue_seat_token(match_id, 0)
            await until(lambda: watched.task.done())
            await asyncio.sleep(0)
            state = dict(streams=m.seats[0].streams, present=m.seats[0].present,
                         grace=m.seats[0].grace_deadline is not None)
            presence = [(e.seat, e.reason) for e in spectator.events if e.kind == "presence"]
            await spectator.close()
            return watched.error, state, presence

    error, state, presence = run(go())
    assert error.reason == "TOKEN_REVOKED"
    assert state == dict(streams=0, present=False, grace=True)
    assert presence == [(0, "disconnected")], presence


def test_a_closed_stream_leaves_no_idle_timer_behind():
    """A stream's idle timer (one per watcher, :meth:`.watchers.Watcher.wait`) is cancelled
    when the stream ends: it would otherwise keep the watcher, its queue and its match alive
    until it fires, a heartbeat interval later, for every stream a client dropped."""
    async def go():
        async with manager(config(heartbeat_interval_s=30)) as mgr:
            match_id, ps = await open_match(mgr, "klaberjass")
            m = mgr._matches[match_id]
            stream = Stream(mgr, match_id, Principal("spectator", match_id))
            await until(lambda: stream.events)
            w = _watcher_of(m, SPECTATOR)
            await until(lambda: w._timer is not None)  # waiting for its next event
            timer = w._timer
            await stream.close()
            return w._timer, timer.cancelled()

    assert run(go()) == (None, True), "the timer forgotten but still armed"


def test_leaving_a_waiting_match_while_watching_it_is_one_left_event():
    """A player who leaves a waiting match with its watch stream open (a lobby's "leave
    table" button) is announced once, ``left``; the stream's end adds no ``disconnected``
    of the seat it freed, which nobody holds any more (it followed ``left`` with the seat
    already empty)."""
    async def go():
        async with manager() as mgr:
            summary = await mgr.create_match(CreateMatchRequest(game="georgian_joker"), admin=True)
            match_id = summary.match_id
            ps = [mgr.authenticate(match_id, (await mgr.join_match(match_id, seat, name)).token)
                  for seat, name in ((0, "ann"), (1, "bob"))]
            streams = [Stream(mgr, match_id, p) for p in ps]
            await until(lambda: all(len(s.events) >= 1 for s in streams))
            await until(lambda: all(mgr._matches[match_id].seats[i].present for i in (0, 1)))
            await mgr.leave_match(match_id, ps[1], resign=False)
            await until(lambda: streams[1].error is not None)
            later = await mgr.join_match(match_id, 2, "cat")  # an event after the leave's
            await until(lambda: streams[0].events[-1].reason == "joined")
            ended = streams[1].error
            await asyncio.gather(*(s.close() for s in streams))
            return streams[0].events, later, ended

    events, _, ended = run(go())
    # the leaver's own stream ends PERMISSION_DENIED / SEAT_LEFT (docs/api.md), not as a failure
    assert (ended.code, ended.reason) == ("PERMISSION_DENIED", "SEAT_LEFT")
    about_bob = [e.reason for e in events if e.kind == "presence" and e.seat == 1]
    assert about_bob == ["connected", "left"]
    left = next(e for e in events if e.reason == "left")
    assert left.details["seats"][1]["taken"] is False


def test_the_seats_of_presence_events_and_snapshots_say_who_left_for_good():
    """docs/api.md (the events): the ``seats`` of a ``PRESENCE`` and of a ``SNAPSHOT`` carry
    ``left``, "the seat's player left the match for good, GJ-12.4, and cannot come back,
    unlike a disconnected player whose seat a bot plays meanwhile: both are
    ``replaced_by_bot``". A Georgian Joker player who leaves is so in the ``left`` event the
    table gets and in a snapshot taken later. (Mutant: LiveMatch.presence's ``left`` false.)
    The bot that plays the seat is named there as in GetMatch (match.proto SeatInfo.bot: "the
    bot playing for an absent player"; SeatSlot.public)."""
    async def go():
        host = BotHost(workers=1, autoload=False)
        try:
            async with manager(host=host) as mgr:
                match_id, ps = await open_match(mgr, "georgian_joker", takeover_bot="random")
                stream = Stream(mgr, match_id, ps[0])
                await until(lambda: bool(stream.events))
                await mgr.leave_match(match_id, ps[3], resign=False)
                await until(lambda: any(e.reason == "left" for e in stream.events))
                [snapshot] = await collect(mgr.watch(match_id, Principal("spectator", match_id), -1),
                                           until=lambda e: True)
                summary = await mgr.get_match(match_id)
                await stream.close()
                return next(e for e in stream.events if e.reason == "left"), snapshot, summary
        finally:
            await host.close()

    left, snapshot, summary = run(go())
    assert snapshot.kind == "snapshot"
    for seats in (left.details["seats"], snapshot.details["seats"]):
        assert [(x["left"], x["replaced_by_bot"]) for x in seats] == [(False, False)] * 3 + [(True, True)]
        assert [x["bot"] for x in seats] == [""] * 3 + ["random"]
    assert [s.bot for s in summary.seats] == [""] * 3 + ["random"]


def test_stream_ends_with_the_match_and_a_finished_match_can_be_watched():
    async def go():
        async with manager() as mgr:
            match_id, ps = await open_match(mgr, "japanese_joker")
            live = asyncio.ensure_future(collect(mgr.watch(match_id, ps[1], 0), until=lambda e: False))
            await asyncio.sleep(0)
            await play_random(mgr, match_id, ps, random.Random(8))
            after_end = await collect(mgr.watch(match_id, Principal("spectator", match_id), -1),
                                      until=lambda e: False)
            summary = await mgr.get_match(match_id)
            # resumed at the final seq: nothing to replay, and no heartbeat before the end
            at_end = await collect(mgr.watch(match_id, ps[1], summary.seq), until=lambda e: False,
                                   skip_heartbeats=False)
            return await live, after_end, summary, at_end

    live, after_end, summary, at_end = run(go())
    assert live[-1].kind == "match_ended" and live[-1].details["result"] == summary.result
    assert [e.seq for e in actions_of(live)] == list(range(1, summary.seq + 1))
    assert [e.kind for e in after_end] == ["snapshot", "match_ended"]
    assert after_end[-1].view.status == "finished"
    assert [(e.kind, e.seq) for e in at_end] == [("match_ended", summary.seq)]


def test_after_seq_ahead_of_the_match_is_a_bad_request():
    async def go():
        async with manager() as mgr:
            match_id, ps = await open_match(mgr, "klaberjass")
            with pytest.raises(BadRequest) as info:
                await collect(mgr.watch(match_id, ps[0], 5))
            return info.value

    error = run(go())
    # a seat follows the match itself: its limit is the match's seq, not the spectators'
    assert error.reason == "BAD_AFTER_SEQ" and error.message == "after_seq 5 is ahead of the match (seq 0)"
    assert error.metadata == {"field": "after_seq"}


@pytest.mark.parametrize("after_seq", ["0", 0.0, None, False])
def test_after_seq_that_is_no_integer_is_a_bad_request(after_seq):
    """A resume position that is no integer is refused as BAD_AFTER_SEQ on the after_seq
    field (INVALID_ARGUMENT through the transport), before anything is compared with it or
    registered: "0" and None would otherwise fail the comparison with the match's seq (a
    TypeError, INTERNAL), 0.0 would open a stream whose events it cannot number, and False
    (a bool is an int to Python) would pass for seq 0."""
    async def go():
        async with manager() as mgr:
            match_id, ps = await open_match(mgr, "klaberjass")
            with pytest.raises(BadRequest) as info:
                await collect(mgr.watch(match_id, ps[0], after_seq))
            return info.value, mgr._matches[match_id].seats[0].streams

    error, streams = run(go())
    assert error.reason == "BAD_AFTER_SEQ" and error.metadata == {"field": "after_seq"}
    assert streams == 0


def test_watchers_of_a_waiting_match_see_it_start():
    async def go():
        async with manager() as mgr:
            s = await mgr.create_match(CreateMatchRequest(game="klaberjass"))
            watching = asyncio.ensure_future(collect(mgr.watch(s.match_id, Principal("spectator", s.match_id), -1),
                                                     until=lambda e: e.kind == "presence" and e.view.status == "active"))
            await asyncio.sleep(0)
            await mgr.join_match(s.match_id, 0, "a")
            await mgr.join_match(s.match_id, 1, "b")
            return await watching

    events = run(go())
    assert events[0].kind == "snapshot" and events[0].view.status == "waiting"
    assert [(e.kind, e.reason, e.seat) for e in events[1:]] == [("presence", "joined", 0), ("presence", "joined", 1)]
    assert events[-1].view.status == "active"


def test_a_stream_resumed_at_zero_after_the_start_begins_with_a_snapshot():
    """The start is no action (seq 0 before and after it): a watcher that held the waiting
    match's view and resumes with after_seq 0 gets the started view at once, not only at the
    first action. A match still waiting, or one past its first action, replays as before."""
    async def go():
        async with manager() as mgr:
            s = await mgr.create_match(CreateMatchRequest(game="klaberjass"))
            spectator = Principal("spectator", s.match_id)
            waiting = asyncio.ensure_future(collect(mgr.watch(s.match_id, spectator, 0),
                                                    until=lambda e: e.kind == "presence"))
            await asyncio.sleep(0)
            joined = [await mgr.join_match(s.match_id, 0, "a")]
            before = await waiting
            joined.append(await mgr.join_match(s.match_id, 1, "b"))
            ps = [mgr.authenticate(s.match_id, j.token) for j in joined]
            started = [await collect(mgr.watch(s.match_id, who, 0), until=lambda e: True)
                       for who in (spectator, ps[0])]
            await play_random(mgr, s.match_id, ps, random.Random(1), max_actions=1)
            after_first = await collect(mgr.watch(s.match_id, spectator, 0), until=lambda e: True)
            return before, started, after_first

    before, started, after_first = run(go())
    assert [(e.kind, e.reason) for e in before] == [("presence", "joined")]  # still waiting: no snapshot
    for events, has_hand in zip(started, (False, True)):
        assert (events[0].kind, events[0].seq, events[0].view.status) == ("snapshot", 0, "active")
        assert bool(events[0].view.view.get("hand")) == has_hand
    assert (after_first[0].kind, after_first[0].seq) == ("action", 1)


def test_a_match_that_ended_before_its_first_action_resumed_at_zero_begins_with_a_snapshot():
    """A match that started and ended with no action (its seat resigned at once, JJK-10.1) is
    at seq 0, as it was before the start: a stream resumed at 0 still gets the snapshot of the
    started match, then ``match_ended``, not ``match_ended`` alone over the view of a table
    still waiting for players."""
    async def go():
        async with manager() as mgr:
            match_id, ps = await open_match(mgr, "klaberjass")
            await mgr.leave_match(match_id, ps[1], resign=True)
            summary = await mgr.get_match(match_id)
            return summary, await collect(mgr.watch(match_id, ps[0], 0))

    summary, events = run(go())
    assert (summary.status, summary.seq) == ("finished", 0)
    assert [(e.kind, e.seq) for e in events] == [("snapshot", 0), ("match_ended", 0)]


def test_a_stream_with_nothing_to_replay_starts_with_a_heartbeat_at_once():
    """A stream resumed at the match's seq (a client back after a drop on a quiet match) gets a
    heartbeat at once, at that seq with the decision's deadline: the client knows the stream
    is open without waiting a heartbeat interval. A stream with actions to replay starts with
    them, and a live action after the heartbeat comes as usual."""
    async def go():
        async with manager(config(heartbeat_interval_s=600)) as mgr:
            match_id, ps = await open_match(mgr, "japanese_joker", turn_time_s=60)
            await play_random(mgr, match_id, ps, random.Random(3), max_actions=3)
            seq = (await mgr.get_match(match_id)).seq
            deadline = mgr._matches[match_id].deadline
            started, opened = time.monotonic(), time.time()
            first = await collect(mgr.watch(match_id, ps[0], seq), until=lambda e: True,
                                  skip_heartbeats=False)
            waited = time.monotonic() - started
            server_time = first[0].details.pop("server_time")
            assert opened <= server_time <= time.time()  # the server's clock, for a client's offset
            behind = await collect(mgr.watch(match_id, ps[0], seq - 2), until=lambda e: True,
                                   skip_heartbeats=False)
            live = asyncio.ensure_future(collect(mgr.watch(match_id, ps[1], seq),
                                                 until=lambda e: e.kind == "action",
                                                 skip_heartbeats=False))
            await asyncio.sleep(0.05)
            await play_random(mgr, match_id, ps, random.Random(4), max_actions=1)
            return seq, deadline, first, waited, behind, await live

    seq, deadline, first, waited, behind, live = run(go())
    assert [(e.kind, e.seq, e.details) for e in first] == [
        ("heartbeat", seq, {"deadline": deadline, "interval_s": 600})]
    # nor is a heartbeat about a seat or an action, nor has it a why (as a snapshot above)
    assert (first[0].seat, first[0].action, first[0].by, first[0].reason) == (None, "", "", "")
    assert waited < 60  # a hang guard only: at once, not after the 600 s interval
    assert [(e.kind, e.seq) for e in behind] == [("action", seq - 1)]
    assert [(e.kind, e.seq) for e in live if e.kind != "presence"] == [("heartbeat", seq), ("action", seq + 1)]


def test_a_replay_ends_with_the_current_view_and_its_deadline():
    """Replayed actions show the match as it was at their seq (no deadline: those decisions are
    taken); the last one, at the match's seq, is the current view, with the deadline running
    now."""
    async def go():
        async with manager() as mgr:
            match_id, ps = await open_match(mgr, "klaberjass")
            m = mgr._matches[match_id]
            present = [Stream(mgr, match_id, p) for p in ps]  # both seats present: the turn clock runs (JJK-10.2)
            await until(lambda: all(s.present for s in m.seats))
            await play_random(mgr, match_id, ps, random.Random(3), max_actions=3)
            replay = await collect(mgr.watch(match_id, ps[0], m.seq - 2), until=lambda e: e.seq == m.seq)
            seq, deadline = m.seq, m.deadline
            for stream in present:
                await stream.close()
            return replay, seq, deadline

    replay, seq, deadline = run(go())
    assert deadline is not None
    assert [(e.kind, e.seq, e.view.seq, e.view.deadline) for e in replay] == [
        ("action", seq - 1, seq - 1, None), ("action", seq, seq, deadline)]


def test_a_heartbeat_queued_before_an_action_carries_no_deadline_of_the_next_decision():
    """A heartbeat the clock asks for (``LiveMatch.beat``: a deadline changed with no event to
    carry it) is queued behind the stream's events and made when the reader reaches it. An
    action queued after it has moved the match on by then: the heartbeat reports the seq the
    stream delivered, whose decision is taken, and used to carry the deadline of the next one
    (the current one), which the client applied to the decision it still showed. It carries
    none now; the action behind it brings the new deadline in its view."""
    async def go():
        async with manager(config(heartbeat_interval_s=600)) as mgr:
            match_id, ps = await open_match(mgr, "japanese_joker", turn_time_s=60)
            m = mgr._matches[match_id]
            other = Stream(mgr, match_id, ps[1])
            stream = mgr.watch(match_id, ps[0], -1)
            assert (await stream.__anext__()).kind == "snapshot"
            await until(lambda: m.seats[1].present and m.deadline is not None)
            seq, before = m.seq, m.deadline
            m.beat()  # as the clock does (MatchClock._retry_now)
            await play_random(mgr, match_id, ps, random.Random(2), max_actions=1)
            after = m.deadline
            events = []
            while not events or events[-1].kind != "action":
                events.append(await stream.__anext__())
            idle = m.beat() or await stream.__anext__()  # the stream at the match's seq again
            await stream.aclose()
            await other.close()
            return seq, before, after, events, idle

    seq, before, after, events, idle = run(go())
    assert after is not None and after != before
    beats = [e for e in events if e.kind == "heartbeat"]
    assert [(b.seq, b.details["deadline"]) for b in beats] == [(seq, None)]
    assert (events[-1].seq, events[-1].view.deadline) == (seq + 1, after)
    assert (idle.kind, idle.seq, idle.details["deadline"]) == ("heartbeat", seq + 1, after)


def test_a_stream_cancelled_as_an_event_arrives_still_ends():
    """The transport cancels a stream when its client goes away. If an event reaches the
    stream's queue in the same instant, the cancellation must still win (presence ends),
    not be swallowed until some later event."""
    from .helpers import Stream, until

    async def go():
        async with manager() as mgr:
            match_id, ps = await open_match(mgr, "klaberjass")
            m = mgr._matches[match_id]
            a, b = Stream(mgr, match_id, ps[0]), Stream(mgr, match_id, ps[1])
            await until(lambda: m.seats[0].present and m.seats[1].present)
            a.task.cancel()
            await asyncio.gather(a.task, return_exceptions=True)  # publishes "disconnected" to b
            b.task.cancel()  # in the same instant as that event
            await asyncio.gather(b.task, return_exceptions=True)
            return m.seats[0].present, m.seats[1].present, b.task.cancelled()

    assert run(go()) == (False, False, True)


def test_replayed_actions_carry_the_details_of_the_live_events():
    """A resumed stream replays each missed ACTION exactly as it was sent live, including its
    event details (WatchMatchResponse.details: "a scored deal's result"). Replayed actions
    that scored a deal used to come without ``deal_scored``."""
    async def go():
        async with manager(config(snapshot_threshold=100_000)) as mgr:
            match_id, ps = await open_match(mgr, "klaberjass", turn_time_s=0)
            spectator = Principal("spectator", match_id)
            live = Stream(mgr, match_id, spectator, 0)
            # up to 120 actions: a match of random decks may end by the rules before
            n = await play_random(mgr, match_id, ps, random.Random(1), max_actions=120)
            await until(lambda: len(live.actions()) == n)
            replayed = await collect(mgr.watch(match_id, spectator, 0),
                                     until=lambda e: e.kind == "action" and e.seq == n)
            replayed_late = await collect(mgr.watch(match_id, spectator, 30),
                                          until=lambda e: e.kind == "action" and e.seq == n)
            await live.close()
            return live.actions(), replayed, replayed_late

    live, replayed, replayed_late = run(go())
    live_details = {e.seq: dict(e.details) for e in live}
    assert sum(1 for d in live_details.values() if "deal_scored" in d) >= 2
    for stream in (replayed, replayed_late):
        for e in stream:
            if e.kind == "action":
                assert dict(e.details) == live_details[e.seq], f"seq {e.seq}"


def test_replayed_auto_moves_carry_who_played_them_and_why():
    """A replayed ACTION says who played it and why, as the live one did: the auto moves of
    expired deadlines come back ``by`` auto with reason ``timeout``, not as the
    player's own moves."""
    async def go():
        async with manager(config(time_scale=0.001, snapshot_threshold=100_000)) as mgr:  # 30 s -> 0.03 s
            match_id, ps = await open_match(mgr, "klaberjass")
            seats = [Stream(mgr, match_id, p) for p in ps]
            live = Stream(mgr, match_id, Principal("spectator", match_id), 0)
            await until(lambda: len(live.actions()) >= 2)
            replayed = await collect(mgr.watch(match_id, Principal("spectator", match_id), 0),
                                     until=lambda e: e.kind == "action" and e.seq == 2)
            for stream in (*seats, live):
                await stream.close()
            return live.actions()[:2], actions_of(replayed)

    live, replayed = run(go())
    assert [(e.by, e.reason) for e in live] == [("auto", "timeout")] * 2
    assert [(e.seq, e.seat, e.action, e.by, e.reason) for e in replayed] \
        == [(e.seq, e.seat, e.action, e.by, e.reason) for e in live]


def test_a_heartbeat_is_never_ahead_of_the_events_the_stream_delivered():
    """A heartbeat's seq must not pass an action still queued for the stream. When the loop
    was busy past the heartbeat's deadline, the write and the deadline came due in one step:
    the action was queued and the stream's wait timed out anyway, and the heartbeat reported
    the match's new seq (1) before the action with that seq was delivered."""
    async def go():
        async with manager(config(heartbeat_interval_s=0.05)) as mgr:
            match_id, ps = await open_match(mgr, "klaberjass", turn_time_s=0)
            seat, p, env = await to_act(mgr, match_id, ps)
            stream = mgr.watch(match_id, Principal("spectator", match_id), -1)
            events = [await stream.__anext__()]  # the snapshot (seq 0)
            waiting = asyncio.ensure_future(stream.__anext__())
            await asyncio.sleep(0)  # the stream waits for an event, its heartbeat timer armed
            submit = asyncio.ensure_future(mgr.submit_action(match_id, p, env.view["legal"][0], env.seq))
            time.sleep(0.1)  # the loop is busy past the deadline: both come due together
            events.append(await waiting)
            await submit
            while events[-1].kind != "action":
                events.append(await stream.__anext__())
            await stream.aclose()
            return events

    events = run(go())
    assert events[0].kind == "snapshot" and events[-1].kind == "action" and events[-1].seq == 1
    delivered = 0
    for e in events:
        if e.kind == "heartbeat":
            assert e.seq <= delivered, f"heartbeat at seq {e.seq} before the event of seq {e.seq}"
        else:
            delivered = e.seq


def test_an_event_queued_with_the_idle_marker_goes_out_with_no_heartbeat_first():
    """A stream whose wait reached its idle limit in the step an event was queued (IDLE first,
    the event after it) is not idle: the event goes out next, no heartbeat before it."""
    async def go():
        async with manager(config(heartbeat_interval_s=600)) as mgr:
            match_id, ps = await open_match(mgr, "klaberjass")
            m = mgr._matches[match_id]
            stream = Stream(mgr, match_id, Principal("spectator", match_id))
            await until(lambda: stream.events)
            w = _watcher_of(m, SPECTATOR)
            await until(lambda: w._idle_at is not None)  # waiting for its next event
            w._timer_at = w._idle_at  # its limit is reached: IDLE queued
            w._idle_check()
            assert w.offer(MatchEvent(kind="presence", seq=0, match_id=match_id))
            await until(lambda: len(stream.events) >= 2)
            await stream.close()
            return [e.kind for e in stream.events]

    assert run(go()) == ["snapshot", "presence"]


# ---- an overflowed stream stops counting at once ----------------------------------------------
# A stream overflows because its connection is slow or dead; the generator of a dead one closes
# only when keepalive notices. Until then it used to keep its seat present (receiving nothing,
# its grace window not started) and to hold its place under the stream limits.

def _watcher_of(m, audience):
    """The newest open watcher of ``audience`` (registered by the stream just opened)."""
    return max((w for w in m.watchers if w.audience == audience and not w.closed), key=lambda w: w.opened)


async def _stall(mgr, match_id, principal):
    """A stream that delivered its snapshot and is never read again (a consumer stalled)."""
    stream = mgr.watch(match_id, principal, -1)
    assert (await stream.__anext__()).kind == "snapshot"
    audience = {"seat": principal.seat, "admin": ADMIN_AUDIENCE}.get(principal.kind, SPECTATOR)
    return stream, _watcher_of(mgr._matches[match_id], audience)


async def _play_until_overflowed(mgr, match_id, ps, watcher, rng):
    """Play one action at a time until ``watcher`` overflows; the seq of the action that did."""
    m = mgr._matches[match_id]
    for _ in range(50):
        await play_random(mgr, match_id, ps, rng, max_actions=1)
        if watcher.overflowed:
            return m.seq
    raise AssertionError("the stalled stream never overflowed")


def _disconnections(events, seat):
    return [i for i, e in enumerate(events)
            if e.kind == "presence" and e.seat == seat and e.reason == "disconnected"]


def test_a_seat_whose_only_stream_overflows_is_absent_at_once_and_forfeits_after_the_grace():
    """The action that overflowed the stalled seat's only stream is followed at once by its
    ``disconnected`` event; the seat counts no stream, its grace window runs, and the
    two-player match is forfeited when it ends (JJK-10.2), the stalled generator still open.
    The overflow is counted once and logged naming the seat; the ``watchers`` gauge drops
    when the generator closes."""
    async def go():
        async with manager(config(watcher_queue_size=3, reconnect_grace_s=0.5)) as mgr:
            match_id, ps = await open_match(mgr, "klaberjass")
            m = mgr._matches[match_id]
            stalled, w = await _stall(mgr, match_id, ps[0])
            other = Stream(mgr, match_id, ps[1])
            await until(lambda: m.seats[1].present)
            seq = await _play_until_overflowed(mgr, match_id, ps, w, random.Random(5))
            t0 = asyncio.get_running_loop().time()
            await until(lambda: _disconnections(other.events, 0))
            at_once = dict(streams=m.seats[0].streams, present=m.seats[0].present,
                           grace=m.seats[0].grace_handle is not None, deadline=m.deadline,
                           overflows=mgr.metrics.value("cardgames_watch_overflows_total"),
                           gauge=mgr.metrics.value("cardgames_watchers", {"audience": "seat"}))
            await until(lambda: m.over, timeout=60)  # a bound for a hung test, not a check
            elapsed = asyncio.get_running_loop().time() - t0
            await until(lambda: other.task.done())  # ended with the match: only the stalled one is open
            open_ = mgr.metrics.value("cardgames_watchers", {"audience": "seat"})
            with pytest.raises(Unavailable) as info:  # read again at last: the overflow, nothing else
                await stalled.__anext__()
            after_close = dict(streams=m.seats[0].streams, open=open_,
                               overflows=mgr.metrics.value("cardgames_watch_overflows_total"),
                               gauge=mgr.metrics.value("cardgames_watchers", {"audience": "seat"}))
            return seq, other.events, at_once, elapsed, info.value, after_close, m.result

    with capture_logs_with_context() as logs:
        seq, events, at_once, elapsed, error, after_close, result = run(go())
    # logged when it happens, naming the seat whose stream it was
    assert [(e["log_level"], e["audience"], e["seat"]) for e in logs if e["event"] == "watch_overflow"] \
        == [("warning", "seat", 0)]
    first = _disconnections(events, 0)[0]
    assert (events[first - 1].kind, events[first - 1].seq) == ("action", seq), "right after the action"
    assert events[first].seq == seq and events[first].details["seats"][0]["present"] is False
    assert at_once == dict(streams=0, present=False, grace=True, deadline=None, overflows=1, gauge=2)
    assert elapsed > 0.4, "forfeited when the 0.5 s grace ran out, not at once"  # no upper bound: load only delays
    assert result["outcome"] == "forfeit" and result["forfeited"] == 0 and result["winners"] == [1]
    assert error.reason == "WATCH_OVERFLOW"
    assert after_close == dict(streams=0, open=1, overflows=1, gauge=0), "uncounted and counted once"


def test_a_seat_back_after_its_stream_overflowed_is_connected_again():
    """The overflowed stream no longer counts: the seat's next stream is its first one again,
    so it gets ``connected`` and its grace window ends, the stalled generator still open."""
    async def go():
        async with manager(config(watcher_queue_size=3, reconnect_grace_s=60)) as mgr:
            match_id, ps = await open_match(mgr, "japanese_joker")
            m = mgr._matches[match_id]
            stalled, w = await _stall(mgr, match_id, ps[0])
            other = Stream(mgr, match_id, ps[1])
            await until(lambda: m.seats[1].present)
            await _play_until_overflowed(mgr, match_id, ps, w, random.Random(6))
            await until(lambda: _disconnections(other.events, 0))
            back = Stream(mgr, match_id, ps[0])
            await until(lambda: m.seats[0].present)
            connected = [e for e in other.events[_disconnections(other.events, 0)[0]:]
                         if e.kind == "presence" and e.seat == 0 and e.reason == "connected"]
            state = dict(streams=m.seats[0].streams, grace=m.seats[0].grace_handle)
            await stalled.aclose()
            closed = m.seats[0].streams, m.seats[0].present
            await back.close()
            await other.close()
            return connected, state, closed

    connected, state, closed = run(go())
    assert len(connected) == 1
    assert state == dict(streams=1, grace=None)
    assert closed == (1, True), "the stalled generator's close uncounts nothing more"


def test_a_seat_with_another_live_stream_stays_present_when_one_overflows():
    """Another stream of the seat still delivers its events: the seat stays present, no
    ``disconnected`` event, no grace window; the overflowed stream no longer counts."""
    async def go():
        async with manager(config(watcher_queue_size=3, reconnect_grace_s=0.2)) as mgr:
            match_id, ps = await open_match(mgr, "klaberjass")
            m = mgr._matches[match_id]
            stalled, w = await _stall(mgr, match_id, ps[0])
            live = Stream(mgr, match_id, ps[0])
            other = Stream(mgr, match_id, ps[1])
            await until(lambda: m.seats[0].streams == 2 and m.seats[1].present)
            seq = await _play_until_overflowed(mgr, match_id, ps, w, random.Random(7))
            await until(lambda: any(e.seq == seq for e in live.actions()) and not w.counted)
            await asyncio.sleep(0.3)  # past the grace window, were one armed
            state = dict(streams=m.seats[0].streams, present=m.seats[0].present,
                         grace=m.seats[0].grace_handle, status=m.status)
            disconnections = _disconnections(other.events, 0)
            await stalled.aclose()
            for s in (live, other):
                await s.close()
            return state, disconnections

    state, disconnections = run(go())
    assert state == dict(streams=1, present=True, grace=None, status="active")
    assert disconnections == []


@pytest.mark.parametrize("limit", ["max_watchers_per_match", "max_watchers"])
def test_an_overflowed_spectator_stream_frees_its_slot(limit):
    """A stalled spectator stream that overflowed gives its place under the spectator limits
    back at once, not when its generator closes: the next spectator gets in."""
    async def go():
        async with manager(config(watcher_queue_size=3, **{limit: 1})) as mgr:
            match_id, ps = await open_match(mgr, "klaberjass")
            spectator = Principal("spectator", match_id)
            stalled, w = await _stall(mgr, match_id, spectator)
            await _play_until_overflowed(mgr, match_id, ps, w, random.Random(8))
            await until(lambda: not w.counted)
            spectators = mgr._streams.spectators
            first = await collect(mgr.watch(match_id, spectator, -1), until=lambda e: True)
            await stalled.aclose()
            return spectators, first, mgr._streams.spectators

    spectators, first, after = run(go())
    assert spectators == 0 and after == 0
    assert [e.kind for e in first] == ["snapshot"]


def test_a_delayed_spectator_stream_overflowed_by_a_released_action_frees_its_slot():
    """A match with ``spectator_delay_actions``: its spectators get each action when the delay
    releases it (MatchWriter.release_to_spectators), not with the action's own publication,
    which skips them. A stalled spectator stream that such a release overflows is handed to
    ``overflowed`` on the loop's next turn like any other (docs/operations.md,
    ``watch_overflow``): logged as a spectator's, and its place under the spectator limit
    given back at once, not when its generator closes: the next spectator gets in."""
    async def go():
        with capture_logs_with_context() as logs:
            async with manager(config(watcher_queue_size=3, max_watchers_per_match=1)) as mgr:
                match_id, ps = await open_match(mgr, "klaberjass", spectator_delay_actions=2)
                m = mgr._matches[match_id]
                spectator = Principal("spectator", match_id)
                stalled, w = await _stall(mgr, match_id, spectator)
                seq = await _play_until_overflowed(mgr, match_id, ps, w, random.Random(8))
                for _ in range(3):  # the handler runs on the loop's next turn
                    await asyncio.sleep(0)
                state = dict(counted=w.counted, spectators=mgr._streams.spectators, seen=m.spectators_seen)
                first = await collect(mgr.watch(match_id, spectator, -1), until=lambda e: True)
                await stalled.aclose()
        return seq, state, first, logs

    seq, state, first, logs = run(go())
    assert state == dict(counted=False, spectators=0, seen=seq - 2), state
    assert [e.kind for e in first] == ["snapshot"] and first[0].seq == seq - 2
    assert [(e["audience"], e["seat"]) for e in logs if e["event"] == "watch_overflow"] == [("spectator", None)]


def test_a_seat_and_a_spectator_stream_overflowed_by_one_event_both_stop_counting():
    """One event overflows a stalled seat stream and a stalled spectator stream: the writer
    hands both to ``overflowed`` in one call, which uncounts each (the seat's streams, the
    server's spectators) and tells the seat's absence, in whichever order the match's set of
    watchers gives them. Neither stream's handling may fail: an error in that handler is no
    caller's to see (the event loop only logs it), and a spectator handled first would leave
    the seat counted and present, with no grace window."""
    async def go():
        reported = []
        asyncio.get_running_loop().set_exception_handler(lambda loop, ctx: reported.append(ctx))
        async with manager(config(watcher_queue_size=3, reconnect_grace_s=60)) as mgr:
            match_id, ps = await open_match(mgr, "klaberjass")
            m = mgr._matches[match_id]
            other = Stream(mgr, match_id, ps[1])
            await until(lambda: m.seats[1].present)
            stalled_seat, ws = await _stall(mgr, match_id, ps[0])
            stalled_spectator, wp = await _stall(mgr, match_id, Principal("spectator", match_id))
            seq = await _play_until_overflowed(mgr, match_id, ps, ws, random.Random(5))
            overflowed_together = wp.overflowed
            await until(lambda: _disconnections(other.events, 0))
            state = dict(seat=m.seats[0].streams, present=m.seats[0].present,
                         grace=m.seats[0].grace_handle is not None, spectators=mgr._streams.spectators,
                         counted=(ws.counted, wp.counted),
                         overflows=mgr.metrics.value("cardgames_watch_overflows_total"))
            for stream in (stalled_seat, stalled_spectator):
                await stream.aclose()
            await other.close()
            return overflowed_together, seq, state, reported

    overflowed_together, seq, state, reported = run(go())
    assert overflowed_together, "the spectator's stream overflowed with the seat's"
    assert reported == [], "the overflow handler failed"
    assert state == dict(seat=0, present=False, grace=True, spectators=0, counted=(False, False), overflows=2)


def test_a_stream_opened_in_the_turn_its_seat_overflowed_evicts_no_live_stream():
    """The overflow of a stream is handled on the event loop's next turn (the writer's
    ``_overflowed``), but from that moment it counts no more under the seat's stream limit:
    a stream of the seat opened in the same turn (here by a client that opens another as its
    live stream delivers the event that overflowed the stalled one) takes the overflowed
    stream's place. It used to count it, find the seat at its limit and close the seat's
    oldest *live* stream (MAX_SEAT_STREAMS) instead. The seat stays present throughout: no
    presence event for it, no grace window."""
    async def go():
        async with manager(config(watcher_queue_size=3, max_streams_per_seat=2, reconnect_grace_s=60)) as mgr:
            match_id, ps = await open_match(mgr, "klaberjass")
            m = mgr._matches[match_id]
            stalled, w = await _stall(mgr, match_id, ps[0])
            other = Stream(mgr, match_id, ps[1])
            live_events, opened, errors = [], [], []

            async def live_client():
                try:
                    async for ev in mgr.watch(match_id, ps[0], -1):
                        live_events.append(ev)
                        if w.overflowed and not opened:  # in the turn of the overflow
                            counted, stream = w.counted, mgr.watch(match_id, ps[0], -1)
                            opened.append((stream, await stream.__anext__(), counted))
                except Exception as exc:  # noqa: BLE001 - kept for the test to inspect
                    errors.append(exc)

            task = asyncio.ensure_future(live_client())
            await until(lambda: m.seats[0].streams == 2 and m.seats[1].present)
            seq = await _play_until_overflowed(mgr, match_id, ps, w, random.Random(9))
            await until(lambda: bool(opened) and not w.counted)
            await play_random(mgr, match_id, ps, random.Random(10), max_actions=1)
            await until(lambda: task.done() or any(e.kind == "action" and e.seq == seq + 1 for e in live_events))
            state = dict(streams=m.seats[0].streams, present=m.seats[0].present, grace=m.seats[0].grace_handle,
                         live=[w2.opened for w2 in m.watchers if w2.audience == 0 and not w2.closed])
            seat0 = [(e.kind, e.reason) for e in other.events if e.kind == "presence" and e.seat == 0]
            new_stream, first, counted_then = opened[0]
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
            await new_stream.aclose()
            await stalled.aclose()
            await other.close()
            return state, seat0, first, counted_then, errors

    state, seat0, first, counted_then, errors = run(go())
    assert counted_then, "opened before the overflow was handled"
    assert errors == [], "the live stream was closed"
    assert first.kind == "snapshot"
    assert (state["streams"], state["present"], state["grace"], len(state["live"])) == (2, True, None, 2)
    assert seat0 == [], "no disconnected, no connected: present throughout"


def test_a_seat_stream_opened_in_the_turn_a_spectator_overflowed_leaves_the_spectator_to_its_handler():
    """A stream of a seat opened in the turn a spectator stream overflowed (before the writer
    hands it to ``overflowed``) takes the place of no stream of another audience: the seat
    counts its new stream (present), and the spectator's stream stops counting for the
    server's spectator limit (``max_watchers``), not against the seat."""
    async def go():
        async with manager(config(watcher_queue_size=3, reconnect_grace_s=60)) as mgr:
            match_id, ps = await open_match(mgr, "klaberjass")
            m = mgr._matches[match_id]
            stalled, w = await _stall(mgr, match_id, Principal("spectator", match_id))
            opened, errors = [], []

            async def live_client():
                try:
                    async for _ in mgr.watch(match_id, ps[0], -1):
                        if w.overflowed and not opened:  # in the turn of the overflow
                            counted, stream = w.counted, mgr.watch(match_id, ps[1], -1)
                            opened.append((stream, await stream.__anext__(), counted))
                except Exception as exc:  # noqa: BLE001 - kept for the test to inspect
                    errors.append(exc)

            task = asyncio.ensure_future(live_client())
            await until(lambda: m.seats[0].streams == 1)
            await _play_until_overflowed(mgr, match_id, ps, w, random.Random(9))
            await until(lambda: bool(opened) and not w.counted)
            await asyncio.sleep(0.01)
            state = dict(streams=[s.streams for s in m.seats], present=[s.present for s in m.seats],
                         spectators=mgr._streams.spectators)
            new_stream, first, counted_then = opened[0]
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
            await new_stream.aclose()
            await stalled.aclose()
            return state, first, counted_then, errors

    state, first, counted_then, errors = run(go())
    assert counted_then, "opened before the overflow was handled"
    assert errors == [] and first.kind == "snapshot"
    assert state == dict(streams=[1, 1], present=[True, True], spectators=0)


def test_a_spectator_opened_in_the_turn_a_seat_stream_overflowed_leaves_the_seat_to_its_handler():
    """The converse: a spectator stream opened in the turn a seat's only stream overflowed
    gets its snapshot and counts among the spectators; the seat's stream is left to the
    overflow's handler, which finds the seat without a stream: ``disconnected``, its grace
    window running (JJK-10.2)."""
    async def go():
        async with manager(config(watcher_queue_size=3, reconnect_grace_s=60)) as mgr:
            match_id, ps = await open_match(mgr, "klaberjass")
            m = mgr._matches[match_id]
            stalled, w = await _stall(mgr, match_id, ps[0])
            opened, errors, events = [], [], []

            async def live_client():
                try:
                    async for ev in mgr.watch(match_id, ps[1], -1):
                        events.append(ev)
                        if w.overflowed and not opened:  # in the turn of the overflow
                            counted = w.counted
                            stream = mgr.watch(match_id, Principal("spectator", match_id), -1)
                            opened.append((stream, await stream.__anext__(), counted))
                except Exception as exc:  # noqa: BLE001 - kept for the test to inspect
                    errors.append(exc)

            task = asyncio.ensure_future(live_client())
            await until(lambda: m.seats[1].present)
            await _play_until_overflowed(mgr, match_id, ps, w, random.Random(9))
            await until(lambda: (bool(opened) and not w.counted) or bool(errors))
            await until(lambda: bool(_disconnections(events, 0)) or bool(errors))
            state = dict(streams=m.seats[0].streams, grace=m.seats[0].grace_handle is not None,
                         spectators=mgr._streams.spectators)
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
            for stream, *_ in opened:
                await stream.aclose()
            await stalled.aclose()
            return state, opened, errors

    state, opened, errors = run(go())
    assert errors == []
    [(_, first, counted_then)] = opened
    assert counted_then, "opened before the overflow was handled"
    assert first.kind == "snapshot"
    assert state == dict(streams=0, grace=True, spectators=1)


@pytest.mark.parametrize("uncounted_first", [True, False])
def test_an_overflow_handled_after_one_of_its_streams_closed_still_handles_the_others(uncounted_first):
    """One event overflows a stalled seat stream and a stalled spectator stream; the
    spectator's generator closes (its client dropped) before the handler runs, which
    uncounts it (``WatchStreams.overflowed``: "the stream's generator may have closed first").
    The handler skips that one and still handles the seat's, in whichever order the match's
    set of watchers gives them: the seat counts no stream, is announced ``disconnected`` and
    its grace window runs (JJK-10.2)."""
    async def go():
        async with manager(config(watcher_queue_size=3, reconnect_grace_s=60)) as mgr:
            match_id, ps = await open_match(mgr, "klaberjass")
            m = mgr._matches[match_id]
            other = Stream(mgr, match_id, ps[1])
            await until(lambda: m.seats[1].present)
            # the spectator's first: it gets seat 0's ``connected``, as much as the seat's stream
            stalled_spectator, wp = await _stall(mgr, match_id, Principal("spectator", match_id))
            stalled_seat, ws = await _stall(mgr, match_id, ps[0])
            handle, handled = mgr._writer.overflowed, []

            async def closed_first(m, watchers):
                await stalled_spectator.aclose()
                handle(m, sorted(watchers, key=lambda w: w.counted != uncounted_first))
                handled.append([w.audience for w in watchers])

            mgr._writer.overflowed = lambda m, watchers: asyncio.ensure_future(closed_first(m, watchers))
            await _play_until_overflowed(mgr, match_id, ps, ws, random.Random(5))
            await until(lambda: bool(handled))
            await until(lambda: bool(_disconnections(other.events, 0)))
            state = dict(streams=m.seats[0].streams, present=m.seats[0].present,
                         grace=m.seats[0].grace_handle is not None, spectators=mgr._streams.spectators,
                         counted=(ws.counted, wp.counted))
            await stalled_seat.aclose()
            await other.close()
            return handled, state

    handled, state = run(go())
    assert sorted(map(str, handled[0])) == ["0", "spectator"], "overflowed by one event"
    assert state == dict(streams=0, present=False, grace=True, spectators=0, counted=(False, False))


def test_a_seat_whose_only_stream_overflowed_and_reopened_in_that_turn_stays_present():
    """The seat's only stream overflows and a new stream of the seat opens in the same turn of
    the event loop (before the writer handles the overflow): the new stream takes the
    overflowed one's place (``_overflowed_now`` says so), the seat present throughout: no
    ``disconnected`` (the handler on the next turn finds the stream uncounted already) and no
    ``connected`` either, which would announce a return from an absence nobody was told of."""
    async def go():
        async with manager(config(watcher_queue_size=3, reconnect_grace_s=60)) as mgr:
            match_id, ps = await open_match(mgr, "klaberjass")
            m = mgr._matches[match_id]
            stalled, w = await _stall(mgr, match_id, ps[0])
            events, opened = [], []

            async def other_client():  # seat 1's client, which opens seat 0's new stream
                async for ev in mgr.watch(match_id, ps[1], -1):
                    events.append(ev)
                    if w.overflowed and not opened:  # in the turn of the overflow
                        counted, stream = w.counted, mgr.watch(match_id, ps[0], -1)
                        opened.append((stream, await stream.__anext__(), counted))

            task = asyncio.ensure_future(other_client())
            await until(lambda: m.seats[1].present)
            seq = await _play_until_overflowed(mgr, match_id, ps, w, random.Random(9))
            await until(lambda: bool(opened) and not w.counted)
            await play_random(mgr, match_id, ps, random.Random(10), max_actions=1)
            await until(lambda: task.done() or any(e.kind == "action" and e.seq == seq + 1 for e in events))
            state = dict(streams=m.seats[0].streams, present=m.seats[0].present, grace=m.seats[0].grace_handle)
            seat0 = [(e.kind, e.reason) for e in events if e.kind == "presence" and e.seat == 0]
            new_stream, first, counted_then = opened[0]
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
            await new_stream.aclose()
            await stalled.aclose()
            return state, seat0, first, counted_then

    state, seat0, first, counted_then = run(go())
    assert counted_then, "opened before the overflow was handled"
    assert first.kind == "snapshot"
    assert state == dict(streams=1, present=True, grace=None)
    assert seat0 == [], "no disconnected, no connected: present throughout"


@pytest.mark.parametrize("stalled_kind", ["spectator", "admin"])
def test_a_spectator_opened_in_the_turn_another_overflowed_gets_its_slot(stalled_kind):
    """The spectators' side of the test above: with ``max_watchers_per_match`` spectators
    watching, one of them stalled, a spectator stream opened in the turn the stalled one
    overflowed (by a client that opens it as its live stream delivers that event) gets the
    overflowed stream's slot. It was refused MAX_WATCHERS until the next turn. The admin's
    streams share the spectators' slots: an overflowed admin stream gives its slot up too."""
    async def go():
        async with manager(config(watcher_queue_size=3, max_watchers_per_match=2)) as mgr:
            match_id, ps = await open_match(mgr, "klaberjass")
            spectator = Principal("spectator", match_id)
            stalled, w = await _stall(mgr, match_id, spectator if stalled_kind == "spectator" else ADMIN)
            opened, errors = [], []

            async def live_client():
                try:
                    async for _ in mgr.watch(match_id, spectator, -1):
                        if w.overflowed and not opened:  # in the turn of the overflow
                            counted, stream = w.counted, mgr.watch(match_id, spectator, -1)
                            opened.append((stream, counted))
                            opened.append(await stream.__anext__())
                except Exception as exc:  # noqa: BLE001 - kept for the test to inspect
                    errors.append(exc)

            task = asyncio.ensure_future(live_client())
            await until(lambda: len(mgr._matches[match_id].watchers) == 2)
            await _play_until_overflowed(mgr, match_id, ps, w, random.Random(11))
            await until(lambda: len(opened) == 2 or bool(errors))
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
            if opened:
                await opened[0][0].aclose()
            await stalled.aclose()
            return opened, errors, mgr._streams.spectators

    opened, errors, spectators = run(go())
    assert errors == [], "refused"
    assert opened[0][1], "opened before the overflow was handled"
    assert opened[1].kind == "snapshot"
    assert spectators == 0


def test_a_spectator_of_another_match_opened_in_the_turn_one_overflowed_gets_its_server_slot():
    """The server-wide side of the test above (``max_watchers``): the stalled spectator that
    overflows watches one match, the spectator stream opened in that turn (by match A's seat 1
    client, as its live stream delivers the event) watches another. The overflowed stream of
    match A no longer counts on the server either: the new one gets its slot. It was refused
    MAX_WATCHERS until the next turn (only the new stream's own match was looked at)."""
    async def go():
        async with manager(config(watcher_queue_size=3, max_watchers=1)) as mgr:
            match_a, ps = await open_match(mgr, "klaberjass")
            match_b, _ = await open_match(mgr, "klaberjass")
            stalled, w = await _stall(mgr, match_a, Principal("spectator", match_a))
            opened, errors = [], []

            async def seat_client():  # match A's seat 1, which opens a spectator stream of match B
                try:
                    async for _ in mgr.watch(match_a, ps[1], -1):
                        if w.overflowed and not opened:  # in the turn of the overflow
                            counted, stream = w.counted, mgr.watch(match_b, Principal("spectator", match_b), -1)
                            opened.append((stream, counted))
                            opened.append(await stream.__anext__())
                except Exception as exc:  # noqa: BLE001 - kept for the test to inspect
                    errors.append(exc)

            task = asyncio.ensure_future(seat_client())
            await until(lambda: mgr._matches[match_a].seats[1].present)
            await _play_until_overflowed(mgr, match_a, ps, w, random.Random(11))
            await until(lambda: len(opened) == 2 or bool(errors))
            during = mgr._streams.spectators
            await asyncio.sleep(0)  # the writer's handler of the overflow: it uncounts nothing more
            after_handler = mgr._streams.spectators
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
            if opened:
                await opened[0][0].aclose()
            await stalled.aclose()
            return opened, errors, (during, after_handler, mgr._streams.spectators)

    opened, errors, counts = run(go())
    assert errors == [], "refused"
    assert opened[0][1], "opened before the overflow was handled"
    assert opened[1].kind == "snapshot"
    assert counts == (1, 1, 0), "the new stream counts, the overflowed one once: uncounted, not twice"


def test_a_resumed_stream_replays_no_presence_change_getmatch_and_the_seats_own_return_tell():
    """docs/api.md "Watching": only actions are replayed. A spectator back with after_seq gets
    the actions it missed but not the other seat's disconnection meanwhile: GetMatch's seats
    tell it. A seat back from its own absence gets its own "connected" event, whose seats
    are every seat's state."""
    async def go():
        async with manager(config(reconnect_grace_s=60)) as mgr:
            match_id, ps = await open_match(mgr, "klaberjass")
            rng = random.Random(3)
            spectator = Principal("spectator", match_id)
            seat1, watching = Stream(mgr, match_id, ps[1]), Stream(mgr, match_id, spectator)
            await play_random(mgr, match_id, ps, rng, max_actions=2)
            await until(lambda: len(watching.actions()) == 2 and len(seat1.actions()) == 2)
            await watching.close()
            await seat1.close()  # seat 1 is away while the spectator is
            await play_random(mgr, match_id, ps, rng, max_actions=2)
            back = Stream(mgr, match_id, spectator, after_seq=2)
            await until(lambda: len(back.actions()) == 2)
            await asyncio.sleep(0.05)
            summary, missed = await mgr.get_match(match_id), list(back.events)
            seat1_back = Stream(mgr, match_id, ps[1], after_seq=2)
            await until(lambda: any(e.kind == "presence" for e in seat1_back.events))
            for stream in (back, seat1_back):
                await stream.close()
            return missed, summary, seat1_back.events

    spectator_events, summary, seat_events = run(go())
    assert [e.kind for e in spectator_events if e.kind != "heartbeat"] == ["action", "action"]
    assert summary.seats[1].present is False
    own = [e for e in seat_events if e.kind == "presence"]
    assert [(e.seat, e.reason) for e in own] == [(1, "connected")]
    assert [s["present"] for s in own[0].details["seats"]] == [False, True]


def test_a_closed_or_full_watcher_takes_no_more_events_nor_heartbeats():
    """watchers.Watcher: once ended, a stream takes nothing more (``offer`` answers False, a
    heartbeat is not queued) and ends once; a full queue takes no heartbeat (it is behind,
    and a heartbeat never overflows it) and the next event overflows it (WATCH_OVERFLOW)."""
    from engine_service.sessions.watchers import BEAT, Watcher, _End

    def drained(w):
        items = []
        while not w.queue.empty():
            items.append(w.queue.get_nowait())
        return items

    async def go():
        event = MatchEvent(kind="action", seq=1, match_id="m")
        ended = Watcher(SPECTATOR, 4)
        assert ended.offer(event)
        ended.end()
        assert ended.closed and ended.offer(event) is False
        ended.beat()
        ended.end(Unavailable("again"))
        items = drained(ended)
        assert items[0] is event and len(items) == 2 and isinstance(items[1], _End) and items[1].error is None

        full = Watcher(SPECTATOR, 2)
        assert full.offer(event) and full.offer(event)
        full.beat()  # no room: no heartbeat, no error
        assert full.queue.qsize() == 2 and not full.closed
        assert not full.offer(event) and full.overflowed and full.cut
        items = drained(full)
        assert len(items) == 1 and items[0].error.reason == "WATCH_OVERFLOW"
        # the error tells the client how to lose nothing: watch again after the last seq it got
        assert isinstance(items[0].error, Unavailable) and "after_seq" in str(items[0].error)

        quiet = Watcher(SPECTATOR, 2)
        quiet.beat()
        assert drained(quiet) == [BEAT]

    run(go())


def test_the_per_match_spectator_limit_counts_no_seat_stream():
    """``max_watchers_per_match`` limits a match's spectator and admin streams, not its seats'
    streams: with both seats watching, two spectators get in under a limit of 2, a third is
    refused (RESOURCE_EXHAUSTED, MAX_WATCHERS)."""
    async def go():
        async with manager(config(max_watchers_per_match=2)) as mgr:
            match_id, ps = await open_match(mgr, "klaberjass")
            seats = [Stream(mgr, match_id, p) for p in ps]
            spectators = [Stream(mgr, match_id, Principal("spectator", match_id)) for _ in range(2)]
            await until(lambda: all(s.events for s in seats + spectators))
            third = Stream(mgr, match_id, Principal("spectator", match_id))
            await until(lambda: third.task.done())
            errors = [s.error for s in seats + spectators]
            for s in seats + spectators + [third]:
                await s.close()
            return errors, third.error

    errors, refused = run(go())
    assert errors == [None] * 4
    assert refused.reason == "MAX_WATCHERS"


def test_a_seat_limited_to_one_stream_that_reconnects_stays_present():
    """With ``max_streams_per_seat`` = 1, a seat's new stream closes its old one
    (MAX_SEAT_STREAMS) and takes its place: the seat is present throughout, so neither
    ``disconnected`` nor ``connected`` is announced for it."""
    async def go():
        async with manager(config(max_streams_per_seat=1)) as mgr:
            match_id, ps = await open_match(mgr, "klaberjass")
            old = Stream(mgr, match_id, ps[0])
            other = Stream(mgr, match_id, ps[1])
            await until(lambda: old.events and other.events)
            new = Stream(mgr, match_id, ps[0])
            await until(lambda: old.task.done() and new.events)
            await play_random(mgr, match_id, ps, random.Random(1), max_actions=1)
            await until(lambda: other.actions() and new.actions())
            seat0 = [(e.kind, e.reason) for e in other.events[1:] if e.kind == "presence" and e.seat == 0]
            for s in (old, new, other):
                await s.close()
            return old.error, seat0

    error, seat0 = run(go())
    assert error.reason == "MAX_SEAT_STREAMS"
    assert seat0 == [], seat0


def test_a_seat_over_its_stream_limit_closes_its_own_oldest_stream_at_once():
    """With ``max_streams_per_seat`` = 2, a seat's third stream closes that seat's oldest one
    (MAX_SEAT_STREAMS), not its newer one nor an older stream of another seat; its first
    stream alone announced it ``connected``. The closed one
    was stalled (its connection dead, its generator still open): it stops counting at once,
    so the seat counts its two live streams, and its next read is the error, its queued
    events dropped."""
    async def go():
        async with manager(config(max_streams_per_seat=2)) as mgr:
            match_id, ps = await open_match(mgr, "klaberjass")
            m = mgr._matches[match_id]
            other = Stream(mgr, match_id, ps[1])
            await until(lambda: other.events)
            stalled, _ = await _stall(mgr, match_id, ps[0])
            newer = Stream(mgr, match_id, ps[0])
            await until(lambda: newer.events)
            newest = Stream(mgr, match_id, ps[0])
            await until(lambda: newest.events)
            streams = m.seats[0].streams
            await play_random(mgr, match_id, ps, random.Random(1), max_actions=1)
            await until(lambda: all(s.actions() or s.task.done() for s in (other, newer, newest)))
            errors = [s.error for s in (other, newer, newest)]
            seat0 = [e.reason for e in other.events if e.kind == "presence" and e.seat == 0]
            with pytest.raises(LimitExceeded) as info:
                await stalled.__anext__()
            for s in (other, newer, newest):
                await s.close()
            return streams, errors, seat0, info.value

    streams, errors, seat0, error = run(go())
    assert streams == 2
    assert errors == [None] * 3
    assert seat0 == ["connected"], "connected by its first stream only, present throughout"
    assert error.reason == "MAX_SEAT_STREAMS"


def test_a_replaced_token_disconnects_its_seat_at_once_though_its_stream_is_stalled():
    """The old token's stream ends for its seat when the token is replaced, not when its
    generator closes: a stalled one (its connection dead) closes only when keepalive notices,
    and meanwhile the seat would stay present with its grace window not started (JJK-10.2)."""
    async def go():
        async with manager(config(reconnect_grace_s=60)) as mgr:
            match_id, ps = await open_match(mgr, "klaberjass")
            m = mgr._matches[match_id]
            stalled, _ = await _stall(mgr, match_id, ps[0])
            other = Stream(mgr, match_id, ps[1])
            await until(lambda: m.seats[1].present)
            await mgr.reissue_seat_token(match_id, 0)
            await until(lambda: _disconnections(other.events, 0))
            state = dict(streams=m.seats[0].streams, present=m.seats[0].present,
                         grace=m.seats[0].grace_deadline is not None)
            with pytest.raises(SessionError) as info:
                await stalled.__anext__()
            await other.close()
            return state, info.value

    state, error = run(go())
    assert state == dict(streams=0, present=False, grace=True)
    assert error.reason == "TOKEN_REVOKED"


def test_a_seat_at_its_stream_limit_watches_its_finished_match_though_its_ended_stream_is_unread():
    """A stream the match's end closed (``match_ended`` queued, its reader stalled) has no
    place to give way: the seat's new stream, at the seat's limit, still gets the finished
    match, and the old one its end. The old one was not ended for the new one, so it counts
    until its generator closes: the seat shows present until then (its open streams are its
    presence), not from the new stream's end."""
    async def go():
        async with manager(config(max_streams_per_seat=1)) as mgr:
            match_id, ps = await open_match(mgr, "klaberjass")
            m = mgr._matches[match_id]
            stalled, w = await _stall(mgr, match_id, ps[0])
            await mgr.leave_match(match_id, ps[1], resign=True)
            await until(lambda: m.over and w.closed)
            again = await collect(mgr.watch(match_id, ps[0], -1))
            present_while_unread = (await mgr.get_match(match_id)).seats[0].present
            rest = await collect(stalled)
            present_after = (await mgr.get_match(match_id)).seats[0].present
            return again, rest, present_while_unread, present_after

    again, rest, present_while_unread, present_after = run(go())
    assert [e.kind for e in again] == ["snapshot", "match_ended"]
    assert rest[-1].kind == "match_ended"
    assert (present_while_unread, present_after) == (True, False)


class _NewestFirst(set):
    """A match's streams listed newest first (a set's order is its own): whoever picks a
    stream by when it was opened must read ``Watcher.opened``, not the order of the set."""

    def __init__(self) -> None:
        super().__init__()
        self.order: list = []

    def add(self, w) -> None:
        if w not in self:
            self.order.append(w)
        super().add(w)

    def discard(self, w) -> None:
        if w in self:
            self.order.remove(w)
        super().discard(w)

    def __iter__(self):
        return iter(list(reversed(self.order)))


def test_the_stream_that_gives_way_is_the_one_opened_first_not_the_first_listed():
    """A seat over ``max_streams_per_seat`` closes its *oldest* stream (MAX_SEAT_STREAMS;
    ``Watcher.opened``): with the match's streams listed newest first, the seat's third
    stream still closes its first one, then its fourth the second, never a newer one."""
    async def go():
        async with manager(config(max_streams_per_seat=2)) as mgr:
            match_id, ps = await open_match(mgr, "klaberjass")
            mgr._matches[match_id].watchers = _NewestFirst()
            streams = []
            for _ in range(4):
                streams.append(Stream(mgr, match_id, ps[0]))
                await until(lambda: streams[-1].events)
                await asyncio.sleep(0.002)  # a later Watcher.opened on a coarse monotonic clock
            await until(lambda: streams[0].task.done() and streams[1].task.done())
            errors = [s.error for s in streams]
            for s in streams:
                await s.close()
            return errors

    errors = run(go())
    assert [getattr(e, "reason", None) for e in errors] == ["MAX_SEAT_STREAMS", "MAX_SEAT_STREAMS", None, None]


def test_a_heartbeat_takes_the_last_place_of_a_queue_and_idle_takes_none():
    """``Watcher.beat``: only a *full* queue (its limit of events and heartbeats) refuses a
    heartbeat; one with a place left takes it there, and IDLE queued (the wait reached its
    limit) counts against no limit, so it does not take that place."""
    from engine_service.sessions.watchers import BEAT, IDLE, Watcher

    event = MatchEvent(kind="action", seq=1, match_id="m")
    w = Watcher(SPECTATOR, 3)
    w._idle_at = w._timer_at = 1.0
    w._idle_check()  # IDLE queued
    assert w.offer(event) and w.offer(event)
    w.beat()  # the last place: taken
    w.beat()  # full: refused, not an overflow
    items = list(w.queue._queue)
    assert items[0] is IDLE and items[1:] == [event, event, BEAT] and not w.closed
