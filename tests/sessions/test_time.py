"""Time and absence (GJ-12, JJK-10, NOTATION.md section 5): turn deadlines and the auto-move
policy, disconnection grace periods, forfeits in two-player games, bot takeover and return in
Georgian Joker, resignation."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import random
import time

import pytest

from structlog.testing import capture_logs

from engine_service.observability.metrics import Metrics
from engine_service.rules import get_game
from engine_service.sessions.api import CreateMatchRequest, PermissionDenied, Principal, SessionError
from engine_service.sessions import clock as clock_module
from engine_service.store import MemoryStore, StoreError

from .helpers import GAMES, Stream, collect, config, manager, open_match, run, to_act, until


async def connect_all(mgr, match_id, ps):
    streams = [Stream(mgr, match_id, p) for p in ps]
    await until(lambda: all(s.present for s in mgr._matches[match_id].seats))
    return streams


async def close_all(streams):
    for s in streams:
        await s.close()


@pytest.mark.parametrize("game_id", GAMES)
def test_an_expired_deadline_plays_the_auto_move(game_id):
    """GJ-12.1 / JJK-10.3: one move by the rulebook's policy per expired deadline; the next
    decision gets a fresh deadline; timeouts never end the match."""
    async def go():
        async with manager(config(time_scale=0.01)) as mgr:  # 30 s -> 0.3 s
            before = time.time()  # the deadline is armed in between: the turn time from then
            match_id, ps = await open_match(mgr, game_id)
            m = mgr._matches[match_id]
            state0 = m.state.clone()
            # Georgian Joker arms it as the match starts (its timers run while players are away,
            # GJ-12.3), and a loaded machine can let it pass while the players connect: read it
            # now, and have the spectator replay the actions from the first
            first_deadline = m.deadline
            spectator = Stream(mgr, match_id, Principal("spectator", match_id), after_seq=0)
            streams = await connect_all(mgr, match_id, ps)
            after = time.time()
            first_deadline = first_deadline or m.deadline  # two players: armed once both are connected
            await until(lambda: len(spectator.actions()) >= 2)
            await close_all(streams + [spectator])
            return state0, first_deadline, (before, after), spectator.actions()[:2], mgr.metrics, m

    state0, deadline, (before, after), (a1, a2), metrics, m = run(go())
    game = get_game(game_id)
    seat = state0.to_act()
    assert before + 0.3 - 1e-6 <= deadline <= after + 0.3 + 1e-6, (before, deadline, after)
    assert (a1.seq, a1.seat, a1.by, a1.reason) == (1, seat, "auto", "timeout")
    assert a1.action == game.auto_move(state0.view(seat))
    state0.apply(a1.action, seat)
    assert (a2.seq, a2.by, a2.reason) == (2, "auto", "timeout")
    assert a2.action == game.auto_move(state0.view(a2.seat))
    assert a1.view.deadline is not None and a1.view.deadline > deadline  # a fresh deadline
    assert metrics.value("cardgames_turn_timeouts_total", {"game": game_id}) >= 2
    assert metrics.value("cardgames_auto_moves_total", {"game": game_id, "reason": "timeout"}) >= 2
    assert m.status == "active", m.result


class _GatedStore:
    """A MemoryStore whose action appends wait for ``gate`` while ``closed``."""

    def __init__(self) -> None:
        self.inner = MemoryStore()
        self.gate = asyncio.Event()
        self.closed = False
        self.waiting = False

    def __getattr__(self, name):
        return getattr(self.inner, name)

    async def append_action(self, *args, **kwargs):
        if self.closed:
            self.waiting = True
            await self.gate.wait()
        return await self.inner.append_action(*args, **kwargs)


def test_a_timed_out_decision_keeps_its_deadline_while_its_auto_move_is_written():
    """GJ-12.1 / JJK-10.3: from the deadline until the auto-move is written, the decision is
    still the one to make. It used to lose its deadline for that write, so a heartbeat sent
    meanwhile said ``"deadline": null`` at the same seq (and GetView the same): with the
    default 30 s turn and 5 s heartbeats, an idle stream's heartbeat falls due just then, and
    a table's countdown vanished before the move it announced."""
    async def go():
        store = _GatedStore()
        async with manager(config(time_scale=0.01, heartbeat_interval_s=0.02), store=store) as mgr:
            match_id, ps = await open_match(mgr, "klaberjass")
            m = mgr._matches[match_id]
            streams = await connect_all(mgr, match_id, ps)
            deadline = m.deadline
            store.closed = True
            await until(lambda: store.waiting)  # the deadline passed; its auto-move is being written
            spectator = Stream(mgr, match_id, Principal("spectator", match_id), after_seq=0)
            await until(lambda: sum(e.kind == "heartbeat" for e in spectator.events) >= 3)
            during = (m.seq, m.deadline, [e.details["deadline"] for e in spectator.events if e.kind == "heartbeat"])
            store.closed = False
            store.gate.set()
            await until(lambda: m.seq == 1)
            after = m.deadline
            await close_all(streams + [spectator])
            return deadline, during, after

    deadline, (seq, held, beats), after = run(go())
    assert deadline is not None and seq == 0
    assert held == deadline and beats == [deadline] * len(beats)
    assert after is not None and after > deadline  # the next decision's own


def test_a_presence_change_during_a_timed_out_moves_write_keeps_its_passed_deadline():
    """GJ-12.1: while the auto-move of a decision whose deadline passed is being written, a
    seat connecting or going away (Georgian Joker: timers run while a player is away) changes
    nothing of that decision. It used to be disarmed for the write, so the presence change
    re-armed it with a whole new turn: the presence events (and heartbeats, GetView) announced
    a fresh deadline for the move being made, and a turn timer ran for it."""
    async def go():
        store = _GatedStore()
        async with manager(config(time_scale=0.01), store=store) as mgr:
            match_id, ps = await open_match(mgr, "georgian_joker")
            m = mgr._matches[match_id]
            # armed as the match starts (GJ-12.3): its move held before the players connect,
            # which a loaded machine can make last longer than the 0.3 s turn
            deadline, seat = m.deadline, m.state.to_act()
            store.closed = True
            streams = await connect_all(mgr, match_id, ps)
            await until(lambda: store.waiting)  # the deadline passed; its auto-move is being written
            other = (seat + 1) % 4
            await streams[other].close()  # disconnected
            streams[other] = Stream(mgr, match_id, ps[other], after_seq=0)  # connected
            await until(lambda: m.seats[other].present)
            during = (m.seq, m.deadline, m.timer_handle,
                      [(e.reason, e.view.deadline) for e in streams[seat].events if e.kind == "presence"][-2:])
            store.closed = False
            store.gate.set()
            await until(lambda: m.seq == 1)
            first = [e for e in streams[seat].actions()][0]
            await close_all(streams)
            return deadline, during, first

    deadline, (seq, held, handle, presence), first = run(go())
    assert seq == 0 and held == deadline and handle is None
    assert presence == [("disconnected", deadline), ("connected", deadline)]
    assert (first.by, first.reason) == ("auto", "timeout")
    assert first.view.deadline is not None and first.view.deadline > deadline  # the next decision's own


class _FailingGatedAppend(MemoryStore):
    """A store whose next append (``fail_next``) waits for ``gate``, then fails before
    anything is written (``failed``: it did)."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = asyncio.Event()
        self.fail_next = False
        self.waiting = self.failed = False

    async def append_action(self, match_id, action, decks=(), end=None):
        if self.fail_next:
            self.fail_next, self.waiting = False, True
            await self.gate.wait()
            self.failed = True
            raise StoreError("the database is unreachable")
        return await super().append_action(match_id, action, decks, end)


def test_a_wait_that_ends_during_a_failing_timed_out_move_keeps_the_deadline_it_announced(monkeypatch):
    """JJK-10.2 / JJK-10.3: the auto-move of a timed-out decision is being written when the
    opponent goes away (no turn timer runs during the wait: the decision is disarmed) and comes
    back (the decision is armed afresh, its "connected" event announcing the new deadline);
    then the write fails. The move must wait for the deadline announced, on the one timer
    armed for it. The failure used to arm its retry over that timer (uncancelled: two timers
    for one decision), and the retry played the auto-move RETRY_AFTER_STORE_FAILURE_S after
    the failure, long before the deadline the players had been shown."""
    monkeypatch.setattr(clock_module, "RETRY_AFTER_STORE_FAILURE_S", 0.02)

    async def go():
        store = _FailingGatedAppend()
        # a 1 s turn (10 s scaled): the fresh deadline must not pass before the failure is
        # looked at (a few steps of the event loop)
        async with manager(config(time_scale=0.1), store=store) as mgr:
            match_id, ps = await open_match(mgr, "japanese_joker", turn_time_s=10)
            m = mgr._matches[match_id]
            streams = await connect_all(mgr, match_id, ps)
            seat = m.state.to_act()
            other = 1 - seat
            store.fail_next = True
            await until(lambda: store.waiting)  # the deadline passed; its auto-move is being written
            await streams[other].close()
            await until(lambda: not m.seats[other].present)
            paused = m.deadline
            streams[other] = Stream(mgr, match_id, ps[other], after_seq=0)
            await until(lambda: m.seats[other].present)
            armed, announced = m.timer_handle, m.deadline
            shown = [e.view.deadline for e in streams[seat].events
                     if e.kind == "presence" and e.reason == "connected"][-1]
            store.gate.set()
            await until(lambda: store.failed and not m.lock.locked())  # the failure handled
            kept = (m.timer_handle is armed, armed.cancelled(), m.deadline)
            await until(lambda: m.seq == 1)
            move = m.actions[0]
            await close_all(streams)
            return paused, announced, shown, kept, move

    paused, announced, shown, (same, cancelled, deadline), move = run(go())
    assert paused is None  # JJK-10.2: no timer during the wait
    assert announced is not None and shown == announced
    assert same and not cancelled and deadline == announced  # the one timer, the one deadline
    assert (move.by, move.reason) == ("auto", "timeout")
    assert move.at >= announced - 0.01  # not before the deadline the players were shown


def test_a_move_made_in_time_cancels_its_decisions_timer():
    """GJ-12.1 / JJK-10.3: the next decision's deadline replaces the one answered, whose timer
    is cancelled, not left to fire for nothing a turn later (one stale timer per move, each
    holding its match, on the event loop for the whole turn time)."""
    async def go():
        async with manager(config()) as mgr:  # 30 s turns: none expires here
            match_id, ps = await open_match(mgr, "klaberjass")
            m = mgr._matches[match_id]
            streams = await connect_all(mgr, match_id, ps)
            answered = m.timer_handle
            seat, p, env = await to_act(mgr, match_id, ps)
            await mgr.submit_action(match_id, p, env.view["legal"][0], env.seq)
            after = (answered.cancelled(), m.timer_handle is not None and m.timer_handle is not answered)
            await close_all(streams)
            return answered, after

    answered, (cancelled, rearmed) = run(go())
    assert answered is not None and rearmed
    assert cancelled


def test_a_player_leaving_the_stream_of_a_waiting_match_gets_no_grace_window():
    """JJK-10.2 / GJ-12.3: the grace window is for a match being played. A player who joined a
    table still waiting for players and closed their stream is announced ``disconnected``, but
    no window starts (its expiry would have nothing to forfeit) and no absence is recorded
    (a restart would count the wait for the other players as time away)."""
    async def go():
        async with manager() as mgr:
            summary = await mgr.create_match(CreateMatchRequest(game="klaberjass"), admin=True)
            joined = await mgr.join_match(summary.match_id, 0, "p0")
            m = mgr._matches[summary.match_id]
            stream = Stream(mgr, summary.match_id, mgr.authenticate(summary.match_id, joined.token))
            await until(lambda: m.seats[0].present)
            await stream.close()
            slot = m.seats[0]
            return m.status, slot.present, (slot.grace_handle, slot.grace_deadline, slot.away_since)

    status, present, window = run(go())
    assert status == "waiting" and not present
    assert window == (None, None, None)


def test_no_deadline_when_the_table_has_none():
    async def go():
        async with manager(config(default_turn_time_s=0)) as mgr:
            match_id, ps = await open_match(mgr, "klaberjass")
            streams = await connect_all(mgr, match_id, ps)
            env = await mgr.get_view(match_id, ps[0])
            await close_all(streams)
            return env
    assert run(go()).deadline is None


def test_two_player_absence_pauses_the_clock_then_forfeits():
    """JJK-10.2 (and Klaberjass by NOTATION 5): while the absent player is to act no timer
    runs; when the grace period ends the absent player loses the match."""
    async def go():
        # turn time 10 s and grace 50 s, both x 0.02: the timer would fire five times in the grace
        with capture_logs() as logs:
            async with manager(config(reconnect_grace_s=50, time_scale=0.02)) as mgr:
                match_id, ps = await open_match(mgr, "klaberjass", turn_time_s=10)
                m = mgr._matches[match_id]
                streams = await connect_all(mgr, match_id, ps)
                spectator = Stream(mgr, match_id, Principal("spectator", match_id))
                absent = m.state.to_act()
                t0 = asyncio.get_running_loop().time()
                await streams[absent].close()
                await until(lambda: any(e.reason == "disconnected" for e in spectator.events))
                paused_deadline = m.deadline
                await until(lambda: m.over, timeout=30)  # against a hang only: the grace is 1 s
                elapsed = asyncio.get_running_loop().time() - t0
                await close_all(streams + [spectator])
                summary = await mgr.get_match(match_id)
        ended = [e for e in logs if e["event"] == "match_ended"]
        return absent, paused_deadline, elapsed, spectator.events, summary, mgr.metrics, ended

    absent, paused_deadline, elapsed, events, summary, metrics, ended = run(go())
    assert paused_deadline is None
    assert elapsed > 0.9  # not before the grace period ended (the paused turn timer: 0.2 s)
    assert not [e for e in events if e.kind == "action"], "no move was played for the absent player"
    assert events[-1].kind == "match_ended" and events[-1].reason == "forfeit"
    assert summary.result["winners"] == [1 - absent] and summary.result["forfeited"] == absent
    assert summary.status == "finished"
    # the log line names the seat that forfeited (docs/operations.md, match_ended)
    assert [(e["outcome"], e["forfeited"]) for e in ended] == [("forfeit", absent)]
    assert metrics.value("cardgames_grace_expired_total", {"game": "klaberjass", "policy": "forfeit"}) == 1
    assert metrics.value("cardgames_matches_finished_total", {"game": "klaberjass", "outcome": "forfeit"}) == 1


def test_a_grace_expiry_that_waited_for_the_lock_spares_a_player_who_came_back_and_left_again():
    """JJK-10.2: the absent player forfeits when *their* grace period ends. An expiry that
    fired while the match's lock was held (a write under way) and meanwhile saw its player
    come back and go again belongs to a window that no longer runs: the new window stands,
    and the player does not forfeit at the old one's end."""
    async def go():
        async with manager(config(reconnect_grace_s=5, time_scale=0.02)) as mgr:
            match_id, ps = await open_match(mgr, "klaberjass")
            m = mgr._matches[match_id]
            streams = await connect_all(mgr, match_id, ps)
            slot, loop = m.seats[0], asyncio.get_running_loop()
            async with m.lock:
                await streams[0].close()
                first = slot.grace_deadline
                await until(lambda: loop.time() > first + 0.05)  # fired: its expiry waits for the lock
                m.reconnect_grace_s = 500  # the new window: 10 s
                back = Stream(mgr, match_id, ps[0])
                await until(lambda: slot.present)
                await back.close()
                second = slot.grace_deadline
            await asyncio.sleep(0.2)
            over, deadline = m.over, slot.grace_deadline
            await close_all(streams[1:])
        return first, second, over, deadline

    first, second, over, deadline = run(go())
    assert second is not None and second > first + 5
    assert not over and deadline == second


def test_two_player_reconnection_in_time_gets_a_fresh_deadline():
    async def go():
        async with manager(config(reconnect_grace_s=5.0)) as mgr:
            match_id, ps = await open_match(mgr, "japanese_joker", turn_time_s=10)
            m = mgr._matches[match_id]
            streams = await connect_all(mgr, match_id, ps)
            absent = m.state.to_act()
            await streams[absent].close()
            await until(lambda: not m.seats[absent].present)
            assert m.deadline is None
            await asyncio.sleep(0.2)
            before = time.time()  # the reconnection re-arms the deadline in between
            back = Stream(mgr, match_id, ps[absent])
            await until(lambda: m.seats[absent].present)
            rearmed = m.deadline
            after = time.time()
            grace_cancelled = m.seats[absent].grace_handle is None
            await close_all(streams + [back])
            return rearmed, (before, after), grace_cancelled, back.events, m.status

    rearmed, (before, after), cancelled, events, status = run(go())
    assert rearmed is not None and before + 10 - 1e-6 <= rearmed <= after + 10 + 1e-6, (before, rearmed, after)
    assert cancelled and status == "active"
    assert events[0].kind == "snapshot" and events[0].view.deadline == rearmed


class GatedAppends(MemoryStore):
    """A store whose appends wait for ``gate`` while it is set (``waiting``: one does)."""

    gate: asyncio.Event | None = None
    waiting = False

    async def append_action(self, match_id, action, decks=(), end=None):
        if self.gate is not None:
            self.waiting = True
            await self.gate.wait()
        return await super().append_action(match_id, action, decks, end)


def test_a_deadline_passing_while_the_players_move_is_written_plays_nothing():
    """GJ-12.1 / JJK-10.3: the auto-move is for a decision whose deadline passed. The
    player's own move, written while the deadline passes, decides it: the timeout's task,
    waiting for the match meanwhile, must find its decision gone and play nothing (no auto-move
    for the next decision, no ``timeout_move_failed`` for a move the rules refuse)."""
    store = GatedAppends()

    async def go():
        cfg = config(reconnect_grace_s=3600.0, time_scale=0.2)  # turn 2 s: the move reaches the store first, under load too
        async with manager(cfg, store=store) as mgr:
            match_id, ps = await open_match(mgr, "japanese_joker", turn_time_s=10)
            m = mgr._matches[match_id]
            streams = await connect_all(mgr, match_id, ps)
            seat, seq = m.state.to_act(), m.seq
            await until(lambda: m.timer_handle is not None)
            store.gate = gate = asyncio.Event()
            legal = (await mgr.get_view(match_id, ps[seat])).view["legal"]
            move = asyncio.ensure_future(mgr.submit_action(match_id, ps[seat], legal[0], seq))
            await until(lambda: store.waiting)  # the player's move holds the match
            await until(lambda: m.timer_handle is None)  # its deadline passed meanwhile
            # the opponent goes away: no deadline for the decisions after it (JJK-10.2)
            await streams[1 - seat].close()
            with capture_logs() as logs:
                store.gate = None
                gate.set()
                await move
                await until(lambda: not any(t.get_name().startswith("timeout-")
                                            for t in asyncio.all_tasks()))
            actions = list(m.actions)
            await close_all([streams[seat]])
            return seq, actions, logs

    seq, actions, logs = run(go())
    assert len(actions) == seq + 1 and actions[-1].by != "auto"
    assert "timeout_move_failed" not in [e["event"] for e in logs]


def test_a_paused_deadline_never_fires_after_the_player_returns():
    """JJK-10.2: the player to act goes away (the clock stops) and comes back within the
    grace window: the decision gets a fresh deadline, the same (seq, seat) as the one the
    absence stopped. The stopped deadline's timer must be cancelled with it (MatchClock.disarm):
    left running, it still matched the decision and played the auto-move at the old
    deadline, before the one the player had just been shown."""
    async def go():
        async with manager(config(reconnect_grace_s=60.0, time_scale=0.2)) as mgr:  # turn 2 s, a stall-proof margin
            match_id, ps = await open_match(mgr, "japanese_joker", turn_time_s=10)
            m = mgr._matches[match_id]
            streams = await connect_all(mgr, match_id, ps)
            absent, seq = m.state.to_act(), m.seq
            await until(lambda: m.timer_handle is not None)
            stopped = m.timer_handle
            await streams[absent].close()
            await until(lambda: not m.seats[absent].present)
            await asyncio.sleep(0.3)  # a gap: the fresh deadline comes well after the stopped one
            back = Stream(mgr, match_id, ps[absent])
            await until(lambda: m.seats[absent].present)
            fresh = m.deadline
            await until(lambda: m.seq > seq)  # the auto-move of the fresh deadline
            played_by = time.time()
            await close_all(streams + [back])
            return stopped, fresh, played_by

    stopped, fresh, played_by = run(go())
    assert stopped.cancelled()
    assert fresh is not None and played_by >= fresh - 1e-3, "the auto-move came before the deadline shown"


@pytest.mark.parametrize("game_id", ["japanese_joker", "klaberjass"])
def test_two_player_no_timer_runs_for_the_connected_player_during_the_wait(game_id):
    """JJK-10.2 (D), NOTATION 5: "During the wait no turn timer runs; the connected player may
    still make a decision that is theirs": the opponent's disconnection stops the deadline of
    the player to act, who may still move; the reconnection re-arms a fresh one."""
    async def go():
        # time_scale: 10 s of turn time last 0.3 s (the Joker options take whole seconds)
        async with manager(config(reconnect_grace_s=100.0, time_scale=0.03)) as mgr:
            match_id, ps = await open_match(mgr, game_id, turn_time_s=10)
            m = mgr._matches[match_id]
            streams = await connect_all(mgr, match_id, ps)
            actor = m.state.to_act()
            armed = m.deadline
            await streams[1 - actor].close()
            await until(lambda: not m.seats[1 - actor].present)
            paused = m.deadline
            seq = m.seq
            await asyncio.sleep(0.6)  # twice the turn time: no auto-move may happen
            auto_moved = m.seq != seq
            view = await mgr.get_view(match_id, ps[actor])
            moved = await mgr.submit_action(match_id, ps[actor], view.view["legal"][0], view.seq)
            deadline_after_move = m.deadline
            before = time.time()  # the reconnection re-arms the deadline in between
            back = Stream(mgr, match_id, ps[1 - actor])
            await until(lambda: m.seats[1 - actor].present)
            rearmed, after = m.deadline, time.time()
            await close_all(streams + [back])
            return armed, paused, auto_moved, moved, deadline_after_move, rearmed, (before, after)

    armed, paused, auto_moved, moved, after_move, rearmed, (before, after) = run(go())
    assert armed is not None and paused is None and not auto_moved
    assert moved.seq >= 1 and after_move is None, "the connected player moves; still no timer"
    # a fresh turn time (10 s x 0.03) from the reconnection
    assert rearmed is not None and before + 0.3 - 1e-6 <= rearmed <= after + 0.3 + 1e-6, (before, rearmed, after)


@pytest.mark.parametrize("game_id", ["japanese_joker", "georgian_joker"])
def test_the_windows_a_start_opens_for_its_absent_players_expire_together(game_id):
    """The join that takes the last seat starts the match; every player not watching it then
    gets a grace window, all started at one instant (Seating.activate): they expire at the
    same instant and are recorded away since the same time (JJK-10.2, GJ-12.4:
    ``reconnect_grace_s`` from the start), not one after the other as armed."""
    async def go():
        async with manager() as mgr:
            match_id, _ = await open_match(mgr, game_id)  # nobody watches: every seat away
            m = mgr._matches[match_id]
            return [(slot.grace_deadline, slot.away_since) for slot in m.seats]

    windows = run(go())
    assert len(windows) > 1 and windows[0][0] is not None and windows[0][1] is not None
    assert len(set(windows)) == 1


def test_a_start_opens_a_grace_window_only_for_the_players_not_watching():
    """The join that takes the last seat starts the match: the players not watching it get a
    grace window (JJK-10.2), a player watching it gets none (Seating.activate)."""
    async def go():
        async with manager() as mgr:
            s = await mgr.create_match(CreateMatchRequest(game="japanese_joker"))
            first = await mgr.join_match(s.match_id, 0, "a")
            stream = Stream(mgr, s.match_id, mgr.authenticate(s.match_id, first.token))
            await until(lambda: stream.events)
            await mgr.join_match(s.match_id, 1, "b")
            m = mgr._matches[s.match_id]
            windows = [slot.grace_handle is not None for slot in m.seats]
            await stream.close()
            return m.status, windows

    status, windows = run(go())
    assert status == "active" and windows == [False, True]


def test_two_player_first_grace_window_to_expire_decides():
    async def go():
        async with manager(config(reconnect_grace_s=0.4)) as mgr:
            match_id, ps = await open_match(mgr, "klaberjass")
            m = mgr._matches[match_id]
            streams = await connect_all(mgr, match_id, ps)
            await streams[1].close()
            await asyncio.sleep(0.1)
            await streams[0].close()
            await until(lambda: m.over, timeout=30)
            return m.result

    result = run(go())
    assert result["outcome"] == "forfeit" and result["forfeited"] == 1 and result["winners"] == [0]


def test_resigning_a_two_player_match_hands_it_to_the_opponent():
    async def go():
        async with manager() as mgr:
            match_id, ps = await open_match(mgr, "japanese_joker")
            spectator = Stream(mgr, match_id, Principal("spectator", match_id))
            await asyncio.sleep(0)
            summary = await mgr.leave_match(match_id, ps[1], resign=True)
            await until(lambda: spectator.events and spectator.events[-1].kind == "match_ended")
            return summary, spectator.events[-1]

    summary, ended = run(go())
    assert summary.status == "finished" and summary.result["winners"] == [0]
    assert summary.result["outcome"] == "resigned" and summary.result["resigned"] == 1
    assert ended.reason == "resigned" and ended.details["result"] == summary.result


# ---- Georgian Joker: timers during the grace period, bot takeover, return, leaving ------------

def gj_request(**options):
    return dict(options=options)


def test_georgian_joker_timers_run_while_a_player_is_away():
    """GJ-12.3: the absent player's turns are handled by the turn timer during the grace period."""
    async def go():
        async with manager(config(time_scale=0.01)) as mgr:  # turn 10 s -> 0.1 s, grace 600 s -> 6 s
            match_id, ps = await open_match(mgr, "georgian_joker",
                                            **gj_request(turn_time_s=10, reconnect_grace_s=600))
            m = mgr._matches[match_id]
            streams = await connect_all(mgr, match_id, ps)
            spectator = Stream(mgr, match_id, Principal("spectator", match_id))
            away = m.state.to_act()
            await streams[away].close()
            await until(lambda: any(e.seat == away for e in spectator.actions()))
            takeover = m.seats[away].taken_over
            await close_all(streams + [spectator])
            return away, spectator.actions(), takeover

    away, actions, takeover = run(go())
    mine = next(e for e in actions if e.seat == away)
    assert (mine.by, mine.reason) == ("auto", "timeout")
    assert not takeover


def test_georgian_joker_bot_takes_an_absent_seat_and_the_player_takes_it_back():
    """GJ-12.4: after the grace period a bot plays the seat at once (default: the auto-move
    policy); when the player's stream returns the seat is theirs again at once."""
    async def go():
        async with manager(config(time_scale=0.01)) as mgr:  # grace 15 s -> 0.15 s, turn 120 s -> 1.2 s
            match_id, ps = await open_match(mgr, "georgian_joker",
                                            **gj_request(turn_time_s=120, reconnect_grace_s=15))
            m = mgr._matches[match_id]
            streams = await connect_all(mgr, match_id, ps)
            spectator = Stream(mgr, match_id, Principal("spectator", match_id))
            away = m.state.to_act()
            await streams[away].close()
            await until(lambda: any(e.seat == away for e in spectator.actions()))
            summary_away = await mgr.get_match(match_id)
            back = Stream(mgr, match_id, ps[away])
            await until(lambda: any(e.reason == "returned" for e in spectator.events))
            returned_bot_driven = m.seats[away].bot_driven
            summary_back = await mgr.get_match(match_id)
            # counted before the streams close: every seat's 0.15 s window then starts, and
            # on a loaded machine they expired before the manager closed (counted 5, not 1)
            takeovers = mgr.metrics.value("cardgames_grace_expired_total",
                                          {"game": "georgian_joker", "policy": "bot_takeover"})
            await close_all(streams + [spectator, back])
            return away, spectator.events, summary_away, summary_back, returned_bot_driven, takeovers

    away, events, s_away, s_back, bot_driven, takeovers = run(go())
    presence = [(e.seat, e.reason) for e in events if e.kind == "presence"]
    assert presence[:2] == [(away, "disconnected"), (away, "bot_took_over")]
    assert (away, "returned") in presence
    move = next(e for e in events if e.kind == "action" and e.seat == away)
    # the bot played at once, not the turn's deadline (1.2 s) timing the seat out: that move
    # would say "timeout"
    assert (move.by, move.reason) == ("auto", "takeover")
    assert s_away.seats[away].replaced_by_bot and not s_back.seats[away].replaced_by_bot
    assert not s_away.seats[away].left  # absent, not gone: the player may come back (GJ-12.4)
    assert not bot_driven
    assert takeovers == 1


class _FirstLegalHost:
    """A bot host whose only bot, ``first``, plays the first legal action."""

    def __init__(self):
        self.calls = []

    def bots(self):
        from engine_service.sessions.api import BotInfo
        return [BotInfo("first", tuple(GAMES), "first legal action")]

    def plays(self, bot, game_id):
        return bot == "first"

    async def decide(self, bot, game_id, seat, view, legal, seed, deadline_s):
        from types import SimpleNamespace
        self.calls.append((seat, view))
        return SimpleNamespace(action=legal[0], failure=None, elapsed_s=0.001)

    async def close(self):
        pass


def test_a_georgian_joker_leaver_sees_the_public_view_after_a_termination_mid_deal():
    """GJ-12.4, GJ-11.3: after the end a player who left sees the result as a spectator does,
    not the seat's hand: a match terminated mid-deal would have shown them the unplayed cards
    the bot was dealt after they left, which stay hidden from everyone."""
    async def go():
        async with manager(host=_FirstLegalHost()) as mgr:
            match_id, ps = await open_match(mgr, "georgian_joker", takeover_bot="first")
            m = mgr._matches[match_id]
            leaver = 0
            await mgr.leave_match(match_id, ps[leaver], resign=False)
            rng = random.Random(4)
            while not (m.deals_dealt >= 2 and m.state.view(leaver)["hand"]):
                seat = m.state.to_act()
                if seat == leaver or seat < 0:
                    await asyncio.sleep(0.001)  # the bot's move
                    continue
                env = await mgr.get_view(match_id, ps[seat])
                await mgr.submit_action(match_id, ps[seat], rng.choice(env.view["legal"]), env.seq)
            hidden = m.state.view(leaver)["hand"]
            # a card of this deal's hidden hand may have been played in an earlier deal (each
            # deal has a new deck): there its code is public (the trick history)
            played = {a.action.split(":")[1] for a in m.actions if a.action.startswith("play:")}
            await mgr.terminate_match(match_id, "test")
            mine = (await mgr.get_view(match_id, ps[leaver])).view
            public = (await mgr.get_view(match_id, Principal("spectator", match_id))).view
            return hidden, played, mine, public

    hidden, played, mine, public = run(go())
    assert hidden and mine == public and not mine["hand"]
    # unplayed: nowhere
    assert not [code for code in hidden if code not in played and f'"{code}"' in json.dumps(mine)]


def test_the_takeover_bot_says_it_plays_for_an_absent_player():
    """GJ-12.4: the table's takeover bot playing for a player absent past the grace period
    makes its moves ``by`` bot with the reason ``takeover`` (docs/api.md's table), so that a
    table tells them from a bot seat's own moves (reason empty) and shows "played for you"."""
    async def go():
        async with manager(config(time_scale=0.01), host=_FirstLegalHost()) as mgr:
            match_id, ps = await open_match(mgr, "georgian_joker", takeover_bot="first",
                                            **gj_request(turn_time_s=120, reconnect_grace_s=15))
            m = mgr._matches[match_id]
            streams = await connect_all(mgr, match_id, ps)
            spectator = Stream(mgr, match_id, Principal("spectator", match_id))
            away = m.state.to_act()
            await streams[away].close()
            await until(lambda: any(e.seat == away for e in spectator.actions()), timeout=30)
            moves = [(e.by, e.reason) for e in spectator.actions() if e.seat == away]
            summary = await mgr.get_match(match_id)
            await close_all(streams + [spectator])
            return away, moves, summary

    away, moves, summary = run(go())
    assert moves and set(moves) == {("bot", "takeover")}
    assert summary.seats[away].bot == "first" and not summary.seats[away].left


class _TakeoverWritesGated(MemoryStore):
    """A MemoryStore whose appends of takeover moves wait for ``gate`` (``waiting``: one does);
    with ``fail``, the gated append then fails (before the write)."""

    def __init__(self, fail: bool = False) -> None:
        super().__init__()
        self.gate = asyncio.Event()
        self.waiting = False
        self.fail = fail

    async def append_action(self, match_id, action, decks=(), end=None):
        if action.reason == "takeover" and not self.gate.is_set():
            self.waiting = True
            await self.gate.wait()
            if self.fail:
                raise StoreError("the database is unreachable")
        return await super().append_action(match_id, action, decks, end)


async def _back_while_the_takeover_move_is_written(mgr, store):
    """A Georgian Joker match whose player to act goes away and, once the takeover bot's move
    for them is being written (held by ``store``'s gate), comes back (GJ-12.4): the match,
    the seats' tokens, every stream (the returned player's last), the absent seat and the seq
    of the decision."""
    match_id, ps = await open_match(mgr, "georgian_joker", **gj_request(turn_time_s=120, reconnect_grace_s=15))
    m = mgr._matches[match_id]
    streams = await connect_all(mgr, match_id, ps)
    spectator = Stream(mgr, match_id, Principal("spectator", match_id))
    away = m.state.to_act()
    seq = m.seq
    await streams[away].close()
    await until(lambda: store.waiting, timeout=30)  # taken over: its move is being written
    back = Stream(mgr, match_id, ps[away])
    await until(lambda: any(e.reason == "returned" for e in spectator.events))
    return m, ps, spectator, streams + [spectator, back], away, seq


def test_a_player_returning_while_the_takeover_move_is_written_is_shown_no_deadline_for_it():
    """GJ-12.4 and docs/api.md (``deadline``: unset while a bot plays the seat to act): the
    player comes back while the move the takeover bot decided for them is being written. That
    decision is the bot's (it is written, and recorded ``takeover``), so the ``returned``
    event and the view meanwhile show no deadline; the next decision gets its own. The clock
    used to arm a whole turn for the decision being written, and the ``returned`` event
    showed that deadline to every watcher until the move landed."""
    async def go():
        store = _TakeoverWritesGated()
        async with manager(config(time_scale=0.01), store=store) as mgr:  # grace 15 s -> 0.15 s
            m, ps, spectator, streams, away, seq = await _back_while_the_takeover_move_is_written(mgr, store)
            during = (m.deadline, (await mgr.get_view(m.match_id, ps[away])).deadline)
            store.gate.set()
            await until(lambda: m.seq > seq)
            after = (m.state.to_act(), m.deadline)
            await close_all(streams)
            return away, seq, spectator.events, during, after, m.actions[seq]

    away, seq, events, during, after, move = run(go())
    returned = next(e for e in events if e.kind == "presence" and e.reason == "returned")
    assert (returned.seat, returned.view.seq) == (away, seq)
    assert returned.view.deadline is None
    assert during == (None, None)
    assert (move.seat, move.by, move.reason) == (away, "auto", "takeover")
    assert after[0] != away and after[1] is not None  # the next decision has its own deadline


def test_a_takeover_move_failing_after_the_player_returned_tells_the_watchers_their_deadline(monkeypatch):
    """GJ-12.4 and GJ-12.1: the player comes back while the takeover bot's move is being
    written, and that write fails. The decision is the player's again: the retry
    (RETRY_AFTER_STORE_FAILURE_S later) arms their turn, and every stream gets a heartbeat
    with that deadline at once; they used to learn it only at their next heartbeat, up to
    ``heartbeat_interval_s`` later (60 s here), the player's time running meanwhile."""
    monkeypatch.setattr(clock_module, "RETRY_AFTER_STORE_FAILURE_S", 0.05)

    async def go():
        store = _TakeoverWritesGated(fail=True)
        async with manager(config(time_scale=0.01, heartbeat_interval_s=60.0), store=store) as mgr:
            m, _ps, spectator, streams, away, seq = await _back_while_the_takeover_move_is_written(mgr, store)
            store.gate.set()
            await until(lambda: m.deadline is not None, timeout=30)  # the retry armed their turn
            await until(lambda: spectator.events[-1].kind == "heartbeat", timeout=30)
            beat = spectator.events[-1]
            state = (m.seq, m.state.to_act(), m.deadline)
            await close_all(streams)
            return away, seq, beat, state

    away, seq, beat, (now_seq, to_act, deadline) = run(go())
    assert (now_seq, to_act) == (seq, away)  # the move was not written: still their decision
    assert (beat.seq, beat.details["deadline"]) == (seq, deadline)


def test_a_takeover_move_retried_after_the_match_ended_asks_no_bot(monkeypatch):
    """GJ-12.4: the takeover bot's move failed (the store refused it) and is to be tried again
    shortly; the match is terminated meanwhile. The retry finds the match over and arms
    nothing: no bot asked to decide for a match that ended, no deadline on it."""
    monkeypatch.setattr(clock_module, "RETRY_AFTER_STORE_FAILURE_S", 0.3)

    async def go():
        store = _TakeoverWritesGated(fail=True)
        host = _FirstLegalHost()
        async with manager(config(time_scale=0.01), store=store, host=host) as mgr:  # grace 0.15 s
            match_id, ps = await open_match(mgr, "georgian_joker", takeover_bot="first",
                                            **gj_request(turn_time_s=120, reconnect_grace_s=15))
            m = mgr._matches[match_id]
            streams = await connect_all(mgr, match_id, ps)
            await streams[m.state.to_act()].close()
            await until(lambda: store.waiting, timeout=30)  # taken over: its move is being written
            store.gate.set()  # and fails
            await until(lambda: m.retry_handle is not None)
            await mgr.terminate_match(match_id, "test")
            asked = len(host.calls)
            await until(lambda: m.retry_handle is None)  # the retry came
            await asyncio.sleep(0.05)  # what it would have started
            after = (len(host.calls), m.bot_key, m.deadline, m.timer_handle)
            await close_all(streams)
            return m.status, asked, after

    status, asked, (calls, bot_key, deadline, timer) = run(go())
    assert status == "terminated"
    assert calls == asked and bot_key is None
    assert deadline is None and timer is None


def test_the_events_seats_name_the_takeover_bot_as_getmatch_does():
    """GJ-12.4 and docs/api.md (the events' ``seats`` are the facts of ``SeatInfo``): the
    ``bot_took_over`` event and a later snapshot name the bot that now plays the absent
    player's seat, as ``GetMatch`` does; they named none (``bot`` empty) while ``GetMatch``
    said ``first``."""
    async def go():
        async with manager(config(time_scale=0.01), host=_FirstLegalHost()) as mgr:
            match_id, ps = await open_match(mgr, "georgian_joker", takeover_bot="first",
                                            **gj_request(turn_time_s=120, reconnect_grace_s=15))
            m = mgr._matches[match_id]
            streams = await connect_all(mgr, match_id, ps)
            spectator = Stream(mgr, match_id, Principal("spectator", match_id))
            away = m.state.to_act()
            await streams[away].close()
            await until(lambda: any(e.reason == "bot_took_over" for e in spectator.events), timeout=30)
            took_over = next(e for e in spectator.events if e.reason == "bot_took_over")
            late = Stream(mgr, match_id, Principal("spectator", match_id))
            await until(lambda: late.events)
            summary = await mgr.get_match(match_id)
            await close_all(streams + [spectator, late])
            return away, took_over, late.events[0], summary

    away, took_over, snapshot, summary = run(go())
    assert snapshot.kind == "snapshot"
    for seats in (took_over.details["seats"], snapshot.details["seats"]):
        assert seats[away]["replaced_by_bot"] and seats[away]["bot"] == "first"
        assert [s["bot"] for s in seats] == [s.bot for s in summary.seats]
        assert [s["replaced_by_bot"] for s in seats] == [s.replaced_by_bot for s in summary.seats]
        # every fact of SeatInfo, under its name (SeatSlot.public)
        assert seats == [dataclasses.asdict(s) for s in summary.seats]


def test_watching_a_finished_match_changes_no_seat_and_announces_no_presence():
    """GJ-12.4: a seat the bot played to the end stays "replaced by a bot" in the finished
    match's summary when its player comes back to look at the result: watching it made the
    seat "returned" (and its close "disconnected"), presence events, log lines and counts
    of a match that has no presence left to follow."""
    async def go():
        metrics = Metrics()
        async with manager(config(time_scale=0.01), metrics=metrics) as mgr:
            match_id, ps = await open_match(mgr, "georgian_joker",
                                            **gj_request(turn_time_s=120, reconnect_grace_s=15))
            m = mgr._matches[match_id]
            streams = await connect_all(mgr, match_id, ps)
            away = m.state.to_act()
            await streams[away].close()
            await until(lambda: m.seats[away].taken_over, timeout=30)
            await mgr.terminate_match(match_id, "closing time")
            await close_all([s for i, s in enumerate(streams) if i != away])
            counts = {c: metrics.value("cardgames_presence_changes_total",
                                       {"game": "georgian_joker", "change": c})
                      for c in ("returned", "connected", "disconnected")}
            events = await collect(mgr.watch(match_id, ps[away], -1))
            after = {c: metrics.value("cardgames_presence_changes_total",
                                      {"game": "georgian_joker", "change": c}) for c in counts}
            return away, events, counts, after, await mgr.get_match(match_id)

    away, events, counts, after, summary = run(go())
    assert [e.kind for e in events] == ["snapshot", "match_ended"]
    assert after == counts, "no presence change after the end"
    assert summary.seats[away].replaced_by_bot and not summary.seats[away].present


def test_georgian_joker_leaving_hands_the_seat_to_the_named_bot_for_good():
    """GJ-12.4: a player who leaves is replaced by the table's bot for the rest of the match;
    the result lists the seat as abandoned; the seat's token can no longer act."""
    host = _FirstLegalHost()

    async def go():
        async with manager(host=host) as mgr:
            match_id, ps = await open_match(mgr, "georgian_joker", takeover_bot="first")
            m = mgr._matches[match_id]
            leaver = m.state.to_act()
            stream = Stream(mgr, match_id, ps[leaver])
            spectator = Stream(mgr, match_id, Principal("spectator", match_id))
            await until(lambda: stream.events and spectator.events)
            summary = await mgr.leave_match(match_id, ps[leaver], resign=False)
            await until(lambda: m.seq >= 1)
            with pytest.raises(PermissionDenied):
                await mgr.submit_action(match_id, ps[leaver], "bid:0", None)
            # the leaver no longer follows the hand the bot plays, nor counts as present
            await until(lambda: stream.task.done())
            refused = [stream.error]
            for call in (mgr.get_view(match_id, ps[leaver]), mgr.watch(match_id, ps[leaver], -1).__anext__(),
                         mgr.reveal_deals(match_id, ps[leaver])):  # docs/api.md lists all of these
                with pytest.raises(PermissionDenied) as info:
                    await call
                refused.append(info.value)
            assert [e.reason for e in refused] == ["SEAT_LEFT"] * 4
            assert not (await mgr.get_match(match_id)).seats[leaver].present
            # watchers learn it once: "left" (the seat is the bot's now), no "disconnected" after
            await until(lambda: any(e.kind == "action" for e in spectator.events))
            changes = [(e.details["change"], [s["present"] for s in e.details["seats"]][leaver])
                       for e in spectator.events if e.kind == "presence" and e.seat == leaver]
            assert changes == [("left", False)], changes
            await spectator.close()
            # the others leave too: the bots finish the match
            for seat in range(4):
                if seat != leaver:
                    await mgr.leave_match(match_id, ps[seat], resign=True)
            await until(lambda: m.over, timeout=60)
            after_end = await mgr.get_view(match_id, ps[leaver])  # the result is theirs to see
            assert after_end.view["over"] and after_end.view["winners"]  # as a spectator sees it
            return leaver, summary, m.actions, await mgr.get_match(match_id)

    leaver, summary, actions, final = run(go(), timeout=120)
    assert summary.seats[leaver].replaced_by_bot and summary.status == "active"
    assert [s.left for s in summary.seats] == [s == leaver for s in range(4)]  # GJ-12.4: for good
    # SeatInfo.bot names the takeover bot playing the seat (match.proto), only there
    assert [s.bot for s in summary.seats] == ["first" if s == leaver else "" for s in range(4)]
    assert actions[0].seat == leaver and actions[0].by == "bot"
    # the takeover bot's moves say why it plays (every seat left in the end): a table shows
    # "played for you", not a bot seat's own move
    assert {(a.by, a.reason) for a in actions} == {("bot", "abandoned")}
    assert final.status == "finished" and final.result["outcome"] == "completed"
    assert final.result["abandoned"] == [0, 1, 2, 3]
    # a bot only ever saw its own seat's view (GJ-11.7)
    for seat, view in host.calls:
        assert view["seat"] == seat


class _GatedFirstLegalHost(_FirstLegalHost):
    """:class:`_FirstLegalHost` whose decisions wait for ``gate`` (``asked``: one does;
    ``answered``: it returned)."""

    def __init__(self):
        super().__init__()
        self.gate = asyncio.Event()
        self.asked = self.answered = False

    async def decide(self, bot, game_id, seat, view, legal, seed, deadline_s):
        self.asked = True
        await self.gate.wait()
        decision = await super().decide(bot, game_id, seat, view, legal, seed, deadline_s)
        self.answered = True
        return decision


def test_a_takeover_move_decided_while_its_player_leaves_says_abandoned():
    """GJ-12.4: the takeover bot's move for a seat whose player left says ``abandoned``, for an
    absent player ``takeover``. A move the bot was deciding for an absent player when that
    player left was still recorded ``takeover``: the reason was fixed when the decision came
    up, not when its move was made."""
    host = _GatedFirstLegalHost()

    async def go():
        async with manager(config(time_scale=0.01), host=host) as mgr:  # grace 15 s -> 0.15 s
            match_id, ps = await open_match(mgr, "georgian_joker", takeover_bot="first",
                                            **gj_request(turn_time_s=120, reconnect_grace_s=15))
            m = mgr._matches[match_id]
            streams = await connect_all(mgr, match_id, ps)
            away = m.state.to_act()
            await streams[away].close()
            await until(lambda: host.asked)  # the grace expired: the bot decides for the absent player
            await mgr.leave_match(match_id, ps[away], resign=False)
            host.gate.set()
            await until(lambda: m.seq >= 1)
            await close_all(streams)
            return away, m.actions[0]

    away, move = run(go())
    assert (move.seat, move.by, move.reason) == (away, "bot", "abandoned")


def test_a_player_returning_while_the_takeover_bot_decides_makes_the_move_themselves():
    """GJ-12.4: "the seat is theirs again at once". The player comes back while the takeover
    bot is still deciding their move: that decision is dropped (its answer plays nothing) and
    the move is the player's, on their own turn (GJ-12.1: with its deadline)."""
    async def go():
        host = _GatedFirstLegalHost()
        async with manager(config(time_scale=0.01), host=host) as mgr:  # grace 15 s -> 0.15 s
            match_id, ps = await open_match(mgr, "georgian_joker", takeover_bot="first",
                                            **gj_request(turn_time_s=120, reconnect_grace_s=15))
            m = mgr._matches[match_id]
            streams = await connect_all(mgr, match_id, ps)
            away, seq = m.state.to_act(), m.seq
            await streams[away].close()
            await until(lambda: host.asked, timeout=30)  # taken over: the bot decides
            streams[away] = Stream(mgr, match_id, ps[away])
            await until(lambda: m.seats[away].present)
            armed = m.deadline
            legal = (await mgr.get_view(match_id, ps[away])).view["legal"]
            host.gate.set()
            await until(lambda: host.answered)
            try:
                result = await mgr.submit_action(match_id, ps[away], legal[-1], seq, "mine")
            except SessionError as exc:  # the bot's answer played: the seq moved on
                result = exc
            await close_all(streams)
            return away, seq, armed, result, m.actions[seq]

    away, seq, armed, result, move = run(go())
    assert armed is not None  # their turn, with its deadline
    assert (move.seat, move.by, move.client_action_id) == (away, "player", "mine")
    assert result.seq == seq + 1 and not result.duplicate


def test_a_refused_timed_out_move_is_logged_without_what_the_rules_said_of_the_hand(monkeypatch):
    """A timed-out move the rules refuse (an auto-move policy at odds with the rules) is tried
    again every second, and each failure was logged with the rules' message, written for the
    seat: "KC is not in your hand" in the operator's log, once a second. It is logged with the
    error's type and reason only."""
    from engine_service.rules.errors import IllegalAction
    from engine_service.sessions.writer import MatchWriter

    from .helpers import capture_logs_with_context

    async def refuse(self, m, seat, action, **kwargs):
        raise IllegalAction("play:KC: KC is not in your hand", action="play:KC")

    async def go():
        with capture_logs_with_context() as logs:
            async with manager(config(time_scale=0.01)) as mgr:  # 30 s -> 0.3 s
                match_id, ps = await open_match(mgr, "klaberjass")
                streams = await connect_all(mgr, match_id, ps)  # both present: the clock runs
                monkeypatch.setattr(MatchWriter, "apply", refuse)
                await until(lambda: any(e["event"] == "timeout_move_failed" for e in logs), timeout=30)
                await close_all(streams)
        return match_id, logs

    match_id, logs = run(go())
    failed = [e for e in logs if e["event"] == "timeout_move_failed"]
    assert failed[0]["match_id"] == match_id and failed[0]["error_type"] == "IllegalAction"
    assert "ILLEGAL_ACTION" in failed[0]["error"]
    assert "KC" not in repr(failed), failed


def test_a_timeout_that_waited_for_the_lock_plays_nothing_once_a_wait_stopped_its_deadline(monkeypatch):
    """JJK-10.2: no turn timer runs while a player of a two-player match is away, and once both
    are back the decision gets a fresh deadline (docs/api.md, WatchMatch), the one the
    ``connected`` event announces. A deadline can pass while a write of the match holds its
    lock (here the test holds it): its auto-move waits for the lock, and meanwhile the player
    to act goes away. On a virtual clock: the move must not be played while they are away, nor
    when they come back before the lock is free (the decision's fresh deadline stands, on its
    own timer); it is played at that fresh deadline. The stale move was played as soon as the
    lock was free, whether the player was still away or back and shown a whole new turn."""
    from .virtual_clock import advance_to, run_virtual, settle

    async def go():
        async with manager(config(reconnect_grace_s=60.0)) as mgr:
            match_id, ps = await open_match(mgr, "japanese_joker", turn_time_s=10)
            m = mgr._matches[match_id]
            streams = [Stream(mgr, match_id, p) for p in ps]
            await settle()
            seat = m.state.to_act()
            async with m.lock:  # a write under way: the timed-out move waits for it
                await advance_to(m.deadline)
                await streams[seat].close()  # away: the clock stops (JJK-10.2)
                await settle()
            await settle()
            away = (m.seq, m.deadline)
            streams[seat] = Stream(mgr, match_id, ps[seat])  # back: a fresh deadline
            await settle()
            fresh = m.deadline
            async with m.lock:
                await advance_to(fresh)  # it passes too, its move waiting for the lock
                await streams[seat].close()
                await settle()
                streams[seat] = Stream(mgr, match_id, ps[seat])  # away and back before the lock is free
                await settle()
                announced = [e.view.deadline for e in streams[1 - seat].events
                             if e.kind == "presence" and e.details.get("change") == "connected"][-1]
            await settle()
            early = (m.seq, m.deadline)
            await advance_to(announced)
            played = m.actions[0] if m.actions else None
            await close_all(streams)
            return seat, away, fresh, announced, early, played

    seat, away, fresh, announced, early, played = run_virtual(go, monkeypatch)
    assert away == (0, None), "no move and no deadline while the player to act is away"
    assert fresh is not None and announced > fresh
    assert early == (0, announced), "the deadline announced stands: no move before it"
    assert played is not None and (played.seat, played.by, played.reason) == (seat, "auto", "timeout")
    assert played.at == announced


def test_a_seat_the_takeover_bot_plays_is_no_window_for_the_absence_heartbeat(monkeypatch):
    """GJ-12.4: once a grace window ran out the takeover bot plays the seat, and no window runs
    for it any more. The absence heartbeat records that the engine still serves only while a
    window runs (docs/operations.md, Restarts: the writes happen "only when a player's presence
    changes or while a grace period runs"): the clock's index of running windows
    (MatchClock.running) holds the seat while its window runs and drops it once the takeover is
    stored, so that a beat then writes nothing. On a virtual clock."""
    from .virtual_clock import START, advance_to, run_virtual, settle

    async def go():
        async with manager(config(absence_heartbeat_s=3600.0)) as mgr:  # beats called by hand
            match_id, ps = await open_match(mgr, "georgian_joker",
                                            **gj_request(turn_time_s=120, reconnect_grace_s=15))
            m = mgr._matches[match_id]
            streams = [Stream(mgr, match_id, p) for p in ps]
            await settle()
            away = (m.state.to_act() + 1) % 4
            await streams[away].close()
            await settle()
            during = sorted(mgr._clock.running)
            await advance_to(START + 15)  # the window runs out: the takeover bot plays the seat
            touched = []
            touch = mgr._store.touch_absences

            async def recorded(seats, at):
                touched.append(list(seats))
                await touch(seats, at)
            mgr._store.touch_absences = recorded
            await mgr._touch_absences()
            stored = m.seats[away].absence_stored
            after, beat = sorted(mgr._clock.running), list(touched)  # (the close records its own)
            await close_all(streams)
            return match_id, away, during, stored, after, beat

    match_id, away, during, stored, after, touched = run_virtual(go, monkeypatch)
    assert during == [(match_id, away)]
    assert stored == (START, True)  # away since the window began, taken over
    assert after == [] and touched == []
