"""Shutdown races of the session layer: calls that were under way when ``drain()`` or
``close()`` began. A watch still loading its match must not register after the streams were
closed; a write accepted just before the drain must finish against an open store (and be
acknowledged), never reach it after the close. Each test names the failure it once showed."""

from __future__ import annotations

import asyncio
import time

import pytest

from engine_service.sessions.api import CreateMatchRequest, Principal, Unavailable
from engine_service.store import MemoryStore

from .helpers import Stream, absences_written, config, manager, open_match, run, to_act, until

GAME = "klaberjass"


class GatedLoads(MemoryStore):
    """A store whose reads of a match wait for ``gate`` while it is set (a slow database), and
    whose start-up resume finds nothing while ``hide`` is set (the match is read on demand)."""

    hide = False
    gate: asyncio.Event | None = None
    loading = 0

    async def unfinished_match_ids(self):
        return [] if self.hide else await super().unfinished_match_ids()

    async def load_match(self, match_id):
        if self.gate is not None:
            self.loading += 1
            await self.gate.wait()
        return await super().load_match(match_id)


class GatedAppends(MemoryStore):
    """A store whose appends wait for ``gate`` while it is set, and that records any call
    made while it is closed."""

    gate: asyncio.Event | None = None
    used_while_closed: list[str] = []

    async def close(self) -> None:
        self.used_while_closed = []
        await super().close()

    async def append_action(self, match_id, action, decks=(), end=None):
        if self.gate is not None:
            await self.gate.wait()
        if not self._open:
            self.used_while_closed.append("append_action")
        return await super().append_action(match_id, action, decks, end)


async def _an_action_waiting_for_the_store(mgr, store: GatedAppends, match_id, ps):
    """A write in flight: the player to act submits a legal action, accepted, whose append
    waits at ``store``'s gate (closed here); (the submission's future, that player)."""
    seat, p, env = await to_act(mgr, match_id, ps)
    store.gate = asyncio.Event()
    submit = asyncio.ensure_future(mgr.submit_action(match_id, p, env.view["legal"][0], env.seq, "in-flight"))
    await asyncio.sleep(0)  # accepted: its write task is created
    return submit, p


async def _a_timeout_move_waiting_for_the_store(mgr, store: GatedAppends):
    """A watched match (the turn timer runs) whose turn deadline passed (JJK-10.3): its
    auto-move's append waits at ``store``'s gate (closed here); (its id, its streams)."""
    match_id, ps = await open_match(mgr, GAME)
    m = mgr._matches[match_id]
    streams = [Stream(mgr, match_id, p) for p in ps]  # present: the turn timer runs
    await until(lambda: all(s.present for s in m.seats))
    store.gate = asyncio.Event()
    await until(lambda: m.lock.locked())  # the deadline passed: its move is being written
    return match_id, streams


async def _stored_but_not_loaded(store: GatedLoads) -> tuple[str, list[Principal]]:
    """An unfinished match in ``store`` that the next manager reads only when asked for it."""
    async with manager(store=store) as mgr:
        match_id, ps = await open_match(mgr, GAME)
    store.hide = True
    return match_id, ps


def test_a_watch_loading_its_match_during_the_drain_ends_with_draining():
    """A WatchMatch of a match not in memory awaits the store (``_get`` -> ``_load``). The
    drain closed every stream it could see meanwhile; the late watch then registered and
    stayed open (heartbeats) until the gRPC server cancelled it at the end of its grace."""
    store = GatedLoads()

    async def go():
        match_id, ps = await _stored_but_not_loaded(store)
        async with manager(store=store) as mgr:
            store.gate = asyncio.Event()
            spectator = Stream(mgr, match_id, Principal("spectator", match_id))
            await until(lambda: store.loading == 1)  # the watch is reading the match
            await mgr.drain()
            store.gate.set()
            try:
                await until(lambda: spectator.task.done())
            finally:
                await spectator.close()
            m = mgr._matches[match_id]
            return spectator.events, spectator.error, len(m.watchers), mgr.metrics.value(
                "cardgames_watchers", {"audience": "spectator"})

    events, error, watchers, gauge = run(go())
    assert events == []
    assert isinstance(error, Unavailable) and error.reason == "DRAINING"
    assert watchers == 0 and gauge == 0


def test_a_write_accepted_just_before_the_drain_finishes_before_the_store_closes():
    """A SubmitAction whose write task exists but does not hold the match's lock yet when the
    drain begins: drain() passed the free lock, did not wait for it, and close() closed the
    store under it; the write then reached the closed store and answered UNAVAILABLE."""
    store = GatedAppends()

    async def go():
        async with manager(store=store) as mgr:
            match_id, ps = await open_match(mgr, GAME)
            m = mgr._matches[match_id]
            # every seat watched: the next decision would have a turn timer (KL: two players,
            # none while one is away)
            streams = [Stream(mgr, match_id, p) for p in ps]
            await until(lambda: all(s.present for s in m.seats))
            seat, p, env = await to_act(mgr, match_id, ps)
            store.gate = asyncio.Event()
            submit = asyncio.ensure_future(
                mgr.submit_action(match_id, p, env.view["legal"][0], env.seq, "late"))
            await asyncio.sleep(0)  # accepted: its write task is created, not yet running
            assert not m.lock.locked()
            asyncio.get_running_loop().call_later(0.05, store.gate.set)  # the store answers later
            await mgr.drain()  # begins before the write task takes the lock
            drained_first = m.seq == 0
            armed = (m.timer_handle, m.deadline)
            await mgr.close()
            for s in streams:
                await s.close()
            result = (await asyncio.gather(submit, return_exceptions=True))[0]
            await store.open()
            stored = await store.load_match(match_id)
            return drained_first, armed, result, list(store.used_while_closed), stored.actions, m.seq

    drained_first, armed, result, used_while_closed, stored, seq = run(go())
    assert not drained_first  # the drain waited for the accepted write
    # the move landed on a stopped clock: the next decision gets no turn timer, which would
    # outlive the close (its auto-move written against a closed store)
    assert armed == (None, None)
    assert used_while_closed == []
    assert result.seq == 1 and not result.duplicate
    assert [(a.seq, a.client_action_id) for a in stored] == [(1, "late")] and seq == 1


def test_a_write_that_reaches_the_manager_after_the_drain_began_is_refused_cleanly():
    """A JoinMatch whose match was being read from the store when the drain began: its write
    must be refused with DRAINING before it touches the store, and nothing is written."""
    store = GatedLoads()

    async def go():
        async with manager(store=store) as mgr:
            waiting = await mgr.create_match(CreateMatchRequest(game=GAME))
        store.hide = True
        async with manager(store=store) as mgr:
            store.gate = asyncio.Event()
            join = asyncio.ensure_future(mgr.join_match(waiting.match_id, 0, "late"))
            await until(lambda: store.loading == 1)
            draining = asyncio.ensure_future(mgr.drain())
            await asyncio.sleep(0.01)
            store.gate.set()
            await draining
            outcome = (await asyncio.gather(join, return_exceptions=True))[0]
            store.gate = None
            stored = await store.load_match(waiting.match_id)
            return outcome, stored.record.seats[0].token_hash

    outcome, token_hash = run(go())
    assert isinstance(outcome, Unavailable) and outcome.reason == "DRAINING"
    assert token_hash == ""


def test_a_submit_after_the_drain_began_is_refused_before_it_reads_anything():
    """docs/operations.md, the drain: a new SubmitAction gets UNAVAILABLE / DRAINING. It is
    refused before its match is read: a match not in memory is not loaded from a store about
    to close, and the refusal is DRAINING whoever asks (a spectator's call too, not the
    Unauthenticated its principal would get from a running service)."""
    store = GatedLoads()

    async def go():
        match_id, ps = await _stored_but_not_loaded(store)
        async with manager(store=store) as mgr:
            await mgr.drain()
            store.gate = asyncio.Event()  # counts the reads from here (none may wait at it)
            store.gate.set()
            outcomes = [(await asyncio.gather(mgr.submit_action(match_id, who, "pass", None),
                                              return_exceptions=True))[0]
                        for who in (ps[0], Principal("spectator", match_id))]
            return outcomes, store.loading, match_id in mgr.match_ids()

    outcomes, loads, held = run(go())
    assert [(type(o), getattr(o, "reason", None)) for o in outcomes] == [(Unavailable, "DRAINING")] * 2
    assert loads == 0 and not held


def test_a_match_being_read_when_the_service_closes_is_read_before_the_store_closes():
    """Reads go on while draining. A GetView of a match not in memory was reading it (a load
    may also write the deck of a deal that was due, or the end of a finished log) when
    close() closed the store under it: the read failed with STORE_UNAVAILABLE."""
    store = GatedLoads()

    async def go():
        match_id, ps = await _stored_but_not_loaded(store)
        async with manager(store=store) as mgr:
            store.gate = asyncio.Event()
            read = asyncio.ensure_future(mgr.get_view(match_id, Principal("spectator", match_id)))
            await until(lambda: store.loading == 1)
            asyncio.get_running_loop().call_later(0.05, store.gate.set)
            await mgr.close()
            return (await asyncio.gather(read, return_exceptions=True))[0]

    env = run(go())
    assert not isinstance(env, BaseException), env
    assert env.seq == 0 and env.seat is None


class GatedStarts(MemoryStore):
    """A store whose match starts wait for ``gate`` while it is set."""

    gate: asyncio.Event | None = None

    async def start_match(self, match_id, seats=(), decks=()):
        if self.gate is not None:
            await self.gate.wait()
        return await super().start_match(match_id, seats, decks)


def test_a_join_that_starts_its_match_during_the_drain_arms_no_grace_window():
    """A JoinMatch that took the last seat just before the drain began starts the match while
    the drain waits for it: the start armed a grace window for every seat without a stream,
    although the drain had disarmed the clock, and each window's timer outlived the close (its
    forfeit or takeover would then run on a closed service, against a closed store)."""
    store = GatedStarts()

    async def go():
        async with manager(store=store) as mgr:
            summary = await mgr.create_match(CreateMatchRequest(game=GAME), admin=True)
            await mgr.join_match(summary.match_id, 0, "p0")
            m = mgr._matches[summary.match_id]
            store.gate = asyncio.Event()
            join = asyncio.ensure_future(mgr.join_match(summary.match_id, 1, "p1"))
            await asyncio.sleep(0)  # accepted: its write task is created
            asyncio.get_running_loop().call_later(0.05, store.gate.set)  # the store answers later
            await mgr.drain()
            await join
            return m.status, [s.grace_handle for s in m.seats], m.timer_handle

    status, graces, timer = run(go())
    assert status == "active"
    assert graces == [None, None] and timer is None


def test_the_drain_cancels_the_grace_windows_running():
    """The seats of a match nobody watches each have a grace window (JJK-10.2) when the drain
    begins: their timers are cancelled with the rest of the clock (MatchClock.stop), else a
    window expiring after the drain would write its forfeit, or its takeover in a four-player
    match (GJ-12.4), on a service that was shut down, against a closed store."""
    async def go():
        async with manager() as mgr:
            match_id, _ = await open_match(mgr, GAME)  # no stream: every seat is away
            m = mgr._matches[match_id]
            handles = [s.grace_handle for s in m.seats]
            await mgr.drain()
            return m.status, handles, [(s.grace_handle, s.grace_deadline) for s in m.seats]

    status, handles, after = run(go())
    assert status == "active"
    assert len(handles) == 2 and all(h is not None for h in handles)  # the windows ran
    assert all(h.cancelled() for h in handles)
    assert after == [(None, None), (None, None)]


class GatedCreateLookups(MemoryStore):
    """A store whose look-ups of a client_create_id wait for ``gate`` while it is set, and
    that records the matches created while it is closed."""

    gate: asyncio.Event | None = None
    looking = 0
    created: list[str] = []

    async def find_created(self, create_hash):
        if self.gate is not None:
            self.looking += 1
            await self.gate.wait()
        return await super().find_created(create_hash)

    async def create_match(self, record, decks=()):
        self.created = [*self.created, record.match_id]
        return await super().create_match(record, decks)


def test_a_keyed_create_looking_up_its_id_when_the_drain_began_is_refused_cleanly():
    """A CreateMatch with a client_create_id first looks the id up in the store. One that was
    looking it up when the drain began went on to write its match once the look-up answered,
    whether or not the drain (which waits only for the writes under way) was over, and with
    close() after it, against the store being closed: UNAVAILABLE / STORE_UNAVAILABLE and a
    ``store_write_failed`` error logged for a shutdown, or a match created, registered and
    answered by a service that had drained. It is refused with DRAINING, as every write that
    reaches the manager once the drain has begun, and nothing is written."""
    store = GatedCreateLookups()

    async def go():
        async with manager(store=store) as mgr:
            store.gate = asyncio.Event()
            create = asyncio.ensure_future(mgr.create_match(
                CreateMatchRequest(game=GAME, client_create_id="drain-race-0123456789")))
            await until(lambda: store.looking == 1)
            await mgr.drain()
            store.gate.set()
            outcome = (await asyncio.gather(create, return_exceptions=True))[0]
            return outcome, list(store.created), mgr.match_ids()

    outcome, created, held = run(go())
    assert isinstance(outcome, Unavailable) and outcome.reason == "DRAINING", outcome
    assert created == [] and held == []


def test_a_watch_of_a_match_unknown_here_during_the_drain_ends_with_draining():
    """A draining server answers a new WatchMatch with UNAVAILABLE (DRAINING) before it
    looks the match up: a match this replica does not know may be another's, or this one's
    after its restart, and a client told NOT_FOUND would give up following it, where
    UNAVAILABLE tells it to retry elsewhere or later."""
    async def go():
        async with manager() as mgr:
            await mgr.drain()
            spectator = Stream(mgr, "no-such-match", Principal("spectator", "no-such-match"))
            try:
                await until(lambda: spectator.task.done())
            finally:
                await spectator.close()
            return spectator.events, spectator.error

    events, error = run(go())
    assert events == []
    assert isinstance(error, Unavailable) and error.reason == "DRAINING", error


def test_the_streams_the_drain_closes_announce_no_disconnection():
    """The drain ends every watch stream (DRAINING): the players did not go away, the service
    did. Their seats are not announced ``disconnected`` (a presence event, its count and log
    line for every watched seat of every match at each shutdown) and no window starts."""
    from structlog.testing import capture_logs

    async def go():
        async with manager() as mgr:
            match_id, ps = await open_match(mgr, GAME)
            m = mgr._matches[match_id]
            streams = [Stream(mgr, match_id, p) for p in ps]
            await until(lambda: all(s.present for s in m.seats))
            with capture_logs() as logs:
                await mgr.drain()
                for s in streams:
                    await s.close()
            changes = mgr.metrics.value("cardgames_presence_changes_total",
                                        {"game": GAME, "change": "disconnected"})
            return changes, logs, [(s.grace_handle, s.away_since) for s in m.seats]

    changes, logs, seats = run(go())
    assert changes == 0
    assert [e for e in logs if e["event"] == "presence_changed"] == []
    assert seats == [(None, None), (None, None)]


def test_a_timeout_move_being_written_when_the_drain_begins_is_written_before_the_store_closes():
    """A turn's deadline passed (JJK-10.3) and its auto-move is being written when the drain
    begins. That write runs in a clock task, not in a request's write (``_writes``): the drain
    waits for it through the match's lock before it cancels the clock's tasks. Cancelled
    instead, the move the timeout made was lost mid-write (or, its cancellation missed, written
    against the store that close() had shut)."""
    store = GatedAppends()

    async def go():
        async with manager(config(time_scale=0.01), store=store) as mgr:  # a 30 s turn: 0.3 s
            match_id, streams = await _a_timeout_move_waiting_for_the_store(mgr, store)
            m = mgr._matches[match_id]
            asyncio.get_running_loop().call_later(0.05, store.gate.set)  # the store answers later
            await mgr.close()
            for s in streams:
                await s.close()
            await store.open()
            stored = await store.load_match(match_id)
            return m.seq, list(store.used_while_closed), [(a.seq, a.by, a.reason) for a in stored.actions]

    seq, used_while_closed, stored = run(go())
    assert used_while_closed == []
    assert stored == [(1, "auto", "timeout")] and seq == 1


def test_a_deadline_that_passes_while_the_drain_waits_for_a_write_plays_no_move():
    """The drain disarms every match's clock before it waits for the writes in flight: a
    turn deadline (JJK-10.3) of another match that passes during that wait plays no move on
    a service that is shutting down (the players get their turn back after the restart)."""
    store = GatedAppends()

    async def go():
        # the turn: 30 s -> 1.5 s; the reconnect grace of the unwatched match far beyond the test
        async with manager(config(time_scale=0.05, reconnect_grace_s=3600.0), store=store) as mgr:
            writing_id, writing_ps = await open_match(mgr, GAME)  # unwatched: no turn timer
            timed_id, timed_ps = await open_match(mgr, GAME)
            timed = mgr._matches[timed_id]
            submit, _ = await _an_action_waiting_for_the_store(mgr, store, writing_id, writing_ps)
            streams = [Stream(mgr, timed_id, q) for q in timed_ps]  # the turn timer starts
            await until(lambda: timed.deadline is not None)
            deadline = timed.deadline
            drain = asyncio.ensure_future(mgr.drain())
            await until(lambda: time.time() > deadline + 0.2)  # the timed match's deadline passed
            store.gate.set()
            await drain
            for s in streams:
                await s.close()
            written = await submit
            stored = await store.load_match(timed_id)
            return written.seq, timed.seq, list(stored.actions)

    written, timed_seq, timed_stored = run(go())
    assert written == 1  # the write in flight was waited for
    assert timed_seq == 0 and timed_stored == []


async def _a_match_everyone_is_away_from(mgr, wall: list[float]) -> str:
    """A match opened on ``mgr``, whose clock reads the Unix time ``wall[0]``, with no stream
    (every seat is away), once its seats' absences are written."""
    mgr._clock.wall = lambda: wall[0]
    match_id, _ = await open_match(mgr, GAME)
    await absences_written(mgr, match_id)
    return match_id


def test_the_close_after_a_drain_leaves_the_absences_recorded_as_of_the_drain():
    """The drain records until when the engine served for every grace window running (the
    seats' ``away_seen``): a restart counts the time away up to there (JJK-10.2), not the
    downtime. The close that follows the drain, after the gRPC server's stop grace, drains
    no more and records nothing: recorded again then, the players' windows were charged the
    seconds of that grace, in which nobody could reconnect (the watches were refused)."""
    store = MemoryStore()
    wall = [1_000_000.0]

    async def go():
        async with manager(store=store) as mgr:
            match_id = await _a_match_everyone_is_away_from(mgr, wall)
            wall[0] += 5.0
            await mgr.drain()
            drained_at = wall[0]
            wall[0] += 10.0  # the stop grace; then the close
        await store.open()
        stored = await store.load_match(match_id)
        return drained_at, [s.away_seen for s in stored.record.seats], [s.away_since for s in stored.record.seats]

    drained_at, seen, since = run(go())
    assert seen == [drained_at, drained_at]
    assert since == [pytest.approx(drained_at - 5.0, abs=0.5)] * 2  # away since the match began


class GatedAbsences(MemoryStore):
    """A store whose absence writes (a seat's grace window recorded) wait for ``gate`` while
    it is set."""

    gate: asyncio.Event | None = None
    saving = 0

    async def save_absence(self, match_id, seat, *args, **kwargs):
        if self.gate is not None:
            self.saving += 1
            await self.gate.wait()
        return await super().save_absence(match_id, seat, *args, **kwargs)


def test_an_absence_being_written_when_the_drain_begins_lands_before_the_store_closes():
    """A player went away just before the drain: the write recording their grace window
    (JJK-10.2) is under way, in a clock task. The drain lets it land, then records until when
    the engine served, before it cancels the clock's tasks: cancelled, the absence was never
    stored, and the restart gave that player a whole new window instead of its rest."""
    store = GatedAbsences()
    wall = [1_000_000.0]

    async def go():
        async with manager(store=store) as mgr:
            mgr._clock.wall = lambda: wall[0]
            match_id, ps = await open_match(mgr, GAME)
            m = mgr._matches[match_id]
            streams = [Stream(mgr, match_id, p) for p in ps]
            await until(lambda: all(s.present for s in m.seats))
            await absences_written(mgr, match_id)
            store.gate = asyncio.Event()
            await streams[0].close()  # seat 0 goes away
            await until(lambda: store.saving == 1)
            asyncio.get_running_loop().call_later(0.05, store.gate.set)  # the store answers later
            wall[0] += 5.0
            await mgr.drain()
            await streams[1].close()
        store.gate = None
        await store.open()
        stored = await store.load_match(match_id)
        return [(s.away_since, s.away_seen) for s in stored.record.seats]

    seats = run(go())
    assert seats[0] == (pytest.approx(1_000_000.0, abs=0.5), 1_000_005.0)
    assert seats[1] == (None, None)  # connected at the drain


def test_reads_are_answered_while_the_close_drains():
    """close() drains first: while it waits for a write in flight, the service still
    answers reads (GetMatch, GetView), as a drain does; only once drained is it shut (reads
    refused with DRAINING), before the store closes."""
    store = GatedAppends()

    async def go():
        async with manager(store=store) as mgr:
            match_id, ps = await open_match(mgr, GAME)
            submit, p = await _an_action_waiting_for_the_store(mgr, store, match_id, ps)
            closing = asyncio.ensure_future(mgr.close())
            await until(lambda: mgr._draining)
            during = (await mgr.get_match(match_id)).seq, (await mgr.get_view(match_id, p)).seq
            store.gate.set()
            await closing
            after = (await asyncio.gather(mgr.get_match(match_id), return_exceptions=True))[0]
            return during, (await submit).seq, after

    during, written, after = run(go())
    assert during == (0, 0) and written == 1
    assert isinstance(after, Unavailable) and after.reason == "DRAINING", after


def test_the_drain_says_sessions_drained_once_with_the_matches_held():
    """docs/operations.md's shutdown line: ``sessions_drained`` (info) with ``matches``, the
    matches held in memory, once the drain is over; the close that follows says it no more."""
    from structlog.testing import capture_logs

    async def go():
        async with manager() as mgr:
            for _ in range(2):
                await open_match(mgr, GAME)
            with capture_logs() as logs:
                await mgr.drain()
                drained = [e for e in logs if e["event"] == "sessions_drained"]
                await mgr.close()
        return drained, [e for e in logs if e["event"] == "sessions_drained"]

    drained, said = run(go())
    assert drained == said == [{"event": "sessions_drained", "log_level": "info", "matches": 2}]


class HiddenGatedAppends(GatedAppends):
    """GatedAppends whose start-up resume finds nothing while ``hide`` is set (the matches
    are read on demand)."""

    hide = False

    async def unfinished_match_ids(self):
        return [] if self.hide else await super().unfinished_match_ids()


def test_a_match_read_while_the_drain_waits_for_a_timeout_move_does_not_upset_the_drain():
    """Reads go on while draining, and one that reads a match from the store registers it.
    The drain, waiting on another match's lock for the timeout move being written there
    (JJK-10.3), must not be walking the live registry then (a dict changed during the walk)."""
    store = HiddenGatedAppends()

    async def go():
        async with manager(store=store) as mgr:
            stored_id, _ = await open_match(mgr, GAME)
        store.hide = True
        async with manager(config(time_scale=0.01), store=store) as mgr:
            match_id, streams = await _a_timeout_move_waiting_for_the_store(mgr, store)
            m = mgr._matches[match_id]
            drain = asyncio.ensure_future(mgr.drain())
            for _ in range(5):
                await asyncio.sleep(0)  # the drain waits for that match's lock
            view = await mgr.get_view(stored_id, Principal("spectator", stored_id))
            held = sorted(mgr.match_ids())
            store.gate.set()
            outcome = (await asyncio.gather(drain, return_exceptions=True))[0]
            for s in streams:
                await s.close()
            return view.seq, held == sorted([stored_id, match_id]), outcome, m.seq

    read_seq, both_held, outcome, seq = run(go())
    assert read_seq == 0 and both_held
    assert outcome is None and seq == 1


def test_a_match_read_while_the_drain_waits_is_not_recorded_as_served_by_it():
    """A match this engine did not hold (not resumed at the start: read on demand) read while
    the drain waits for a write in flight: its players were away at the last stop, and the
    engine never served it (the read came after its clock stopped: no window re-armed, no
    watch allowed). Its absences stay as the last stop recorded them. The drain used to find
    them in the heartbeat's index had the read indexed them, and recorded the engine serving
    them until the drain (``away_seen``): the next restart charged their windows the whole
    downtime before this run and this run too, and they forfeited at once."""
    store = HiddenGatedAppends()
    wall = [1_000_000.0]

    async def go():
        async with manager(store=store) as mgr:
            stored_id = await _a_match_everyone_is_away_from(mgr, wall)
            wall[0] += 5.0  # the drain records that it served until then
        await store.open()
        before = [(s.away_since, s.away_seen) for s in (await store.load_match(stored_id)).record.seats]
        store.hide = True
        wall[0] += 600.0  # down
        async with manager(store=store) as mgr:
            mgr._clock.wall = lambda: wall[0]
            match_id, ps = await open_match(mgr, GAME)
            submit, _ = await _an_action_waiting_for_the_store(mgr, store, match_id, ps)
            drain = asyncio.ensure_future(mgr.drain())
            await until(lambda: mgr._draining)
            read = await mgr.get_match(stored_id)
            wall[0] += 5.0
            store.gate.set()
            await drain
            await submit
        await store.open()
        after = [(s.away_since, s.away_seen) for s in (await store.load_match(stored_id)).record.seats]
        return before, read.status, after

    before, status, after = run(go())
    assert status == "active" and before[0][1] == 1_000_005.0
    assert after == before


class SilentBots:
    """A bot host whose bot ``silent`` never answers; it notes each decision's cancellation
    once it has handled it."""

    def __init__(self) -> None:
        self.asked = 0
        self.cancelled = 0

    def bots(self):
        from engine_service.sessions.api import BotInfo
        return [BotInfo("silent", (GAME,), "never answers")]

    def plays(self, bot, game_id):
        return bot == "silent"

    async def decide(self, bot, game_id, seat, view, legal, seed, deadline_s):
        self.asked += 1
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            await asyncio.sleep(0.01)  # its own clean-up (a real host tells its worker)
            self.cancelled += 1
            raise

    async def close(self):
        pass


def test_the_drain_returns_once_the_tasks_it_cancelled_have_ended():
    """The drain cancels the clock's tasks still under way (here a bot's decision that never
    comes) and returns only once they have ended: close() then closes the store and the bot
    host, which none of them uses any more."""
    from engine_service.sessions.api import SeatConfig

    host = SilentBots()

    async def go():
        async with manager(config(bot_deadline_s=3600.0), host=host) as mgr:
            s = await mgr.create_match(CreateMatchRequest(game=GAME, seats=[SeatConfig("bot", "silent")] * 2))
            await until(lambda: host.asked == 1)
            tasks = set(mgr._tasks)
            await mgr.drain()
            return s.match_id, len(tasks), all(t.done() for t in tasks), host.cancelled, mgr._matches[s.match_id].seq

    match_id, tasks, ended, cancelled, seq = run(go())
    assert tasks >= 1 and ended
    assert cancelled == 1 and seq == 0


def test_the_store_closes_only_after_the_absence_heartbeat_the_drain_cancelled_has_ended():
    """A beat of the absence heartbeat (a grace window running: the record that the engine
    still serves) is in the store when the drain begins. The drain cancels the heartbeat and
    waits for it to end before close() closes the store: a SQLite write never sees its
    connection closed under it."""
    entered = asyncio.Event()
    order: list[str] = []

    class SlowToCancelBeats(MemoryStore):
        hold = True

        async def touch_absences(self, seats, seen):
            if not self.hold:
                return await super().touch_absences(seats, seen)
            self.hold = False
            entered.set()
            try:
                await asyncio.Event().wait()
            except asyncio.CancelledError:
                await asyncio.sleep(0.05)  # the write in its thread ends first
                order.append("beat ended")
                raise

        async def close(self):
            order.append("store closed")
            await super().close()

    async def go():
        async with manager(config(absence_heartbeat_s=0.01), store=SlowToCancelBeats()) as mgr:
            await open_match(mgr, GAME)  # no stream: every seat is away, a beat is due
            await asyncio.wait_for(entered.wait(), 30)
            await mgr.close()

    run(go())
    assert order == ["beat ended", "store closed"]


class FailsToResume(MemoryStore):
    """A store whose listing of the unfinished matches fails (the start's resume)."""

    async def unfinished_match_ids(self):
        from engine_service.store import StoreError
        raise StoreError("the database is unreachable")


def test_a_manager_that_never_started_or_failed_to_start_closes_quietly():
    """``try: await mgr.start() ... finally: await mgr.close()``: a manager whose start
    failed (its housekeeping never started, the store already closed by the failed start),
    or that never started, is closed without an error of its own, and refuses calls after."""
    from engine_service.observability.metrics import Metrics
    from engine_service.sessions.manager import MatchManager
    from engine_service.store import StoreError

    async def go():
        outcomes = []
        for store, starts in ((FailsToResume(), True), (MemoryStore(), False)):
            mgr = MatchManager(config(), store=store, metrics=Metrics(), create_bot_host=False)
            if starts:
                try:
                    await mgr.start()
                except StoreError:
                    pass
            await mgr.close()
            refused = (await asyncio.gather(mgr.get_match("m"), return_exceptions=True))[0]
            outcomes.append((store._open, refused.reason if isinstance(refused, Unavailable) else refused))
        return outcomes

    assert run(go()) == [(False, "DRAINING"), (False, "DRAINING")]


def test_a_read_that_comes_while_the_close_waits_for_a_read_under_way_is_refused_with_draining():
    """close() waits for a match being read from the store (the load lock) before it closes
    the store; it is shut from before that wait. A read that comes meanwhile is refused with
    DRAINING (retry elsewhere, or later), not let in after the one under way to find the
    store being closed (STORE_UNAVAILABLE, a ``store_read_failed`` error line per shutdown)."""
    store = GatedLoads()

    async def go():
        async with manager(store=store) as mgr:
            first = (await open_match(mgr, GAME))[0]
            second = (await open_match(mgr, GAME))[0]
        store.hide = True
        async with manager(store=store) as mgr:
            store.gate = asyncio.Event()
            under_way = asyncio.ensure_future(mgr.get_view(first, Principal("spectator", first)))
            await until(lambda: store.loading == 1)
            closing = asyncio.ensure_future(mgr.close())
            # set in the step in which the close starts waiting for the read under way (load lock)
            await until(lambda: mgr._closed)
            late = asyncio.ensure_future(mgr.get_view(second, Principal("spectator", second)))
            await asyncio.sleep(0)
            store.gate.set()
            await closing
            return await asyncio.gather(under_way, late, return_exceptions=True)

    answered, refused = run(go())
    assert not isinstance(answered, BaseException) and answered.seq == 0, answered
    assert isinstance(refused, Unavailable) and refused.reason == "DRAINING", refused


def test_a_watch_the_drain_ends_tells_its_client_to_watch_again_later():
    """The error that ends a watch stream at the drain is what the client is shown (the gRPC
    status details): UNAVAILABLE, DRAINING, and a message saying to watch again later."""
    async def go():
        async with manager() as mgr:
            match_id, ps = await open_match(mgr, GAME)
            stream = Stream(mgr, match_id, ps[0])
            await until(lambda: mgr._matches[match_id].seats[0].present)
            await mgr.drain()
            try:
                await until(lambda: stream.task.done())
            finally:
                await stream.close()
            return stream.error

    error = run(go())
    assert isinstance(error, Unavailable) and error.reason == "DRAINING"
    assert str(error) == "the service is shutting down; watch again later"


def test_a_close_after_a_cancelled_drain_still_waits_for_the_writes_in_flight():
    """A caller that bounds its drain (``asyncio.wait_for(mgr.drain(), t)``) and then closes:
    the drain it gave up on goes on, and close() waits for it, so the writes in flight still
    finish against the open store. The second drain used to return at once (already
    draining), and close() shut the store under the write."""
    store = GatedAppends()

    async def go():
        async with manager(store=store) as mgr:
            match_id, ps = await open_match(mgr, GAME)
            submit, _ = await _an_action_waiting_for_the_store(mgr, store, match_id, ps)
            with pytest.raises(asyncio.TimeoutError):
                await asyncio.wait_for(mgr.drain(), 0.05)  # the write is still waiting
            asyncio.get_running_loop().call_later(0.05, store.gate.set)  # the store answers later
            await mgr.close()
            result = (await asyncio.gather(submit, return_exceptions=True))[0]
            return result, list(store.used_while_closed)

    result, used_while_closed = run(go())
    assert used_while_closed == []
    assert not isinstance(result, BaseException) and result.seq == 1, result


def test_a_creation_being_written_when_the_close_begins_is_written_before_the_store_closes():
    """A CreateMatch whose write is in the store when close() begins holds no match's lock
    (the match is not registered yet): the drain waits for it among the writes in flight, so
    it lands, and is answered, before the store closes."""
    entered = asyncio.Event()

    class GatedCreates(MemoryStore):
        gate: asyncio.Event | None = None
        used_while_closed: list[str] = []

        async def create_match(self, record, decks=()):
            if self.gate is not None:
                entered.set()
                await self.gate.wait()
            if not self._open:
                self.used_while_closed = [*self.used_while_closed, "create_match"]
            return await super().create_match(record, decks)

    store = GatedCreates()

    async def go():
        async with manager(store=store) as mgr:
            store.gate = asyncio.Event()
            create = asyncio.ensure_future(mgr.create_match(CreateMatchRequest(game=GAME)))
            await asyncio.wait_for(entered.wait(), 30)
            asyncio.get_running_loop().call_later(0.05, store.gate.set)  # the store answers later
            await mgr.close()
            created = (await asyncio.gather(create, return_exceptions=True))[0]
        store.gate = None
        await store.open()
        return created, list(store.used_while_closed), [r.record.match_id for r in await store.list_matches()]

    created, used_while_closed, stored = run(go())
    assert used_while_closed == []
    assert not isinstance(created, BaseException), created
    assert stored == [created.match_id]


def test_after_the_close_every_request_is_refused_and_the_closed_store_is_not_read():
    """Once ``close()`` has returned, reads are refused too (UNAVAILABLE / DRAINING), not only
    writes: a match held in memory is not answered from it, and one that is not held is not
    looked up in the closed store (which would answer STORE_UNAVAILABLE, a retry's cue)."""
    class Records(MemoryStore):
        closed = False
        used_after_close: list[str] = []

        async def close(self):
            self.closed = True
            await super().close()

        async def load_match(self, match_id):
            if self.closed:
                self.used_after_close.append("load_match")
            return await super().load_match(match_id)

        async def list_matches(self, *args, **kwargs):
            if self.closed:
                self.used_after_close.append("list_matches")
            return await super().list_matches(*args, **kwargs)

    store = Records()

    async def go():
        async with manager(store=store) as mgr:
            held = (await mgr.create_match(CreateMatchRequest(game=GAME, listed=True))).match_id
        spectator = Principal("spectator", held)
        calls = {"match": mgr.get_match(held), "view": mgr.get_view(held, spectator),
                 "unheld": mgr.get_match("m" + "0" * 20), "list": mgr.matches_page(),
                 "inspect": mgr.inspect_match(held)}
        reasons = {}
        for name, call in calls.items():
            try:
                await call
                reasons[name] = "answered"
            except Unavailable as exc:
                reasons[name] = exc.reason
        try:
            mgr.open_matches_page()
            reasons["lobby"] = "answered"
        except Unavailable as exc:
            reasons["lobby"] = exc.reason
        return reasons

    reasons = run(go())
    assert reasons == dict.fromkeys(("match", "view", "unheld", "list", "inspect", "lobby"), "DRAINING")
    assert store.used_after_close == []
