"""Shutdown races of the session layer: calls that were under way when ``drain()`` or
``close()`` began. A watch still loading its match must not register after the streams were
closed; a write accepted just before the drain must finish against an open store (and be
acknowledged), never reach it after the close. Each test names the failure it once showed."""

from __future__ import annotations

import asyncio

from engine_service.sessions.api import CreateMatchRequest, Principal, Unavailable
from engine_service.store import MemoryStore

from .helpers import Stream, manager, open_match, run, to_act, until

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
