"""Time, absence and bots of live matches (GJ-12, JJK-10, ARCHITECTURE.md section 4).

For the decision at hand the clock arms exactly one of:

* a **bot move** when the seat to act is a bot seat, or a seat a bot plays for an absent or
  departed player (GJ-12.4): the bot host decides from that seat's view only, off the event
  loop, under a deadline; any failure falls back to the auto-move policy;
* a **turn deadline** (GJ-12.1, JJK-10.3) for a player: on expiry one move by the game's
  auto-move policy, recorded as an ordinary action with ``by="auto"``;
* nothing, when the table has no deadline or a player of a two-player game is away (JJK-10.2:
  no turn timer runs during the wait, not even for the connected player, who may still make
  the decisions that are theirs).

Absence: a joined seat whose last watch stream closed gets a grace window
(``reconnect_grace_s``); when it expires the rulebook's policy applies (:mod:`.policy`).
Timers live on the event loop only: after a restart they are armed afresh. The absence itself
is durable (schema 8): the Unix time its window started and whether the takeover bot plays the
seat are written to the store (:meth:`MatchClock.record_absence`), and while a window runs the
engine records every ``absence_heartbeat_s`` that it still serves, so that a restart gives a
player who was away only what was left of the window (MatchManager._rearm), never a new one.
"""

from __future__ import annotations

import asyncio
import contextvars
import secrets
import time
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable

import structlog

from ..observability.metrics import Metrics
from ..store.base import UnknownMatch
from .api import StaleSequence
from .config import SessionConfig
from .match import LiveMatch, SeatSlot, loggable_error
from .policy import FORFEIT
from .writer import MatchWriter

RETRY_AFTER_STORE_FAILURE_S = 1.0
#: While absence writes keep failing, how often a summary says how many are still being
#: tried again (``absence_writes_still_failing``): the first failure is said at once
ABSENCE_OUTAGE_SUMMARY_S = 60.0

log = structlog.get_logger("engine_service.sessions")


@dataclass
class _AbsenceOutage:
    """Absence writes failing and being tried again (:meth:`MatchClock._write_absence_until_stored`).

    Why: during a database outage every away seat's writer retries every second, and each
    failure was a warning: 200 players away made 200 warning lines a second, burying the
    outage's first line and everything else. The outage is now said once (its first failure,
    with the error type), then every ``ABSENCE_OUTAGE_SUMMARY_S`` as a count of the writes
    still pending, and once more when writes land again; the retries themselves are as before.
    """

    started: float  # event-loop time of the first failure
    error_type: str  # of the latest failure
    last_summary: float  # event-loop time of the first failure or of the latest summary
    #: the seats whose write is being tried again, by (match id, seat)
    pending: set[tuple[str, int]] = field(default_factory=set)
    failures: int = 0  # failed attempts since the outage began
    last_failure: float = 0.0  # event-loop time of the latest failure
    failures_since_summary: int = 0
    landed: int = 0  # writes that landed since the outage began


class MatchClock:
    def __init__(self, config: SessionConfig, metrics: Metrics, writer: MatchWriter,
                 spawn: Callable[[Awaitable[Any], str], asyncio.Task], host: Callable[[], Any]) -> None:
        self.config = config
        self.metrics = metrics
        self.writer = writer
        self._spawn = spawn
        self._host = host
        self.stopped = False  # draining: arm nothing more
        #: Wall-clock Unix time of the absences recorded (tests replace it)
        self.wall: Callable[[], float] = time.time
        # (event-loop start, Unix time) of the last window armed: windows armed with the same
        # start get the same away_since, so that they still expire together after a restart
        self._last_start: tuple[float, float] | None = None
        #: The seats whose stored absence is a window running (away, not taken over), by
        #: (match id, seat): what the heartbeat touches (MatchManager._touch_absences). Kept as
        #: the records change (:meth:`stored`) so that a beat costs the away seats, not a scan
        #: of every seat of every match held (about 17 ms of the event loop for 10,000 matches
        #: every absence_heartbeat_s, with nobody away)
        self.running: dict[tuple[str, int], tuple[LiveMatch, SeatSlot]] = {}
        #: absence writes failing and tried again, None when none is (:class:`_AbsenceOutage`)
        self._absence_outage: _AbsenceOutage | None = None

    # ---- the decision at hand -----------------------------------------------------------

    def schedule(self, m: LiveMatch) -> None:
        """Arm what the current decision needs. Idempotent: a timer or bot move already armed
        for this (seq, seat) is kept, so presence changes never reset a running deadline."""
        if not m.active or self.stopped:
            self.disarm(m)
            return
        who = m.state.to_act()
        if who < 0:
            self.disarm(m)
            return
        key = (m.seq, who)
        slot = m.seats[who]
        if m.bot_writing == key:
            # its bot's move is being written: the decision is the bot's even if the player came
            # back meanwhile (GJ-12.4: "returned"; the seat is theirs from the next decision),
            # so no deadline (docs/api.md: none while a bot plays the seat to act). A whole turn
            # used to be armed for it, shown by the "returned" event until the move landed
            self.disarm(m)
            return
        if slot.bot_driven:
            self.disarm(m)
            if m.bot_key != key:
                bot = slot.bot if slot.kind == "bot" else m.takeover_bot
                reason = "abandoned" if slot.left else "takeover"
                view = m.state.view(who)  # computed now: the state cannot change before the move
                m.bot_key = key
                self._spawn(self._bot_move(m, key, bot, view, reason), f"bot-{m.match_id}-{key[0]}")
            return
        m.bot_key = None
        if m.policy == FORFEIT and any(s.absent for s in m.seats):  # JJK-10.2 (D)
            self.disarm(m)  # no turn timer during the wait, whoever is to act
            return
        delay = m.turn_time_s * self.config.time_scale
        if delay <= 0:
            self.disarm(m)
            return
        if m.timer_key == key:
            # armed, or its deadline passed and its auto-move is under way (_timeout_move):
            # kept, so that a presence change meanwhile gives the decision no new turn
            return
        self.disarm(m)
        m.timer_key = key
        m.deadline = time.time() + delay
        m.timer_handle = asyncio.get_running_loop().call_later(delay, self._on_deadline, m, key,
                                                                 context=contextvars.Context())

    def disarm(self, m: LiveMatch) -> None:
        if m.timer_handle is not None:
            m.timer_handle.cancel()
        m.timer_handle = None
        m.timer_key = None
        m.deadline = None

    def stop(self, m: LiveMatch) -> None:
        """Disarm everything of a match (it ended, or the service drains)."""
        self.disarm(m)
        m.bot_key = None
        for slot in m.seats:
            self.cancel_grace(slot)

    def _on_deadline(self, m: LiveMatch, key: tuple[int, int], retry: bool = False) -> None:
        if m.timer_key == key:
            m.timer_handle = None
            self._spawn(self._timeout_move(m, key, retry), f"timeout-{m.match_id}-{key[0]}")

    async def _timeout_move(self, m: LiveMatch, key: tuple[int, int], retry: bool = False) -> None:
        """GJ-12.1 / JJK-10.3: the deadline passed; play one move by the auto-move policy,
        recorded as the ordinary action it made (JJK-10.5: the timeout itself is no action).
        ``retry``: the move of this timeout is tried again after a failed write; the timeout
        is counted once (``turn_timeouts``: decisions whose deadline expired), not once per
        attempt (a store outage of a minute counted one timeout sixty times)."""
        async with m.lock:
            if m.timer_key != key or m.seq != key[0] or not m.active:
                return
            if m.timer_handle is not None:
                # a timer armed for the decision while this waited for the lock (a write held
                # it): a JJK-10.2 wait began and ended meanwhile, and the fresh deadline that
                # the "connected" event announced stands on that timer. This move used to be
                # played as soon as the lock was free, a whole turn before that deadline
                return
            seat = key[1]
            # The decision stays armed (its key and its passed deadline) until its move is
            # written: heartbeats, views and GetView meanwhile show that deadline, and a
            # presence change meanwhile (schedule()) keeps it. It used to be disarmed for the
            # write, and a seat connecting or leaving then re-armed the timed-out decision with
            # a whole new turn: its presence event and heartbeats announced a fresh deadline
            # for a move being made. apply() arms the next decision, an end disarms.
            if not retry:
                self.metrics.turn_timeouts.labels(m.game.id).inc()
            action = m.game.auto_move(m.state.view(seat))
            passed = m.deadline
            try:
                await self.writer.apply(m, seat, action, by="auto", reason="timeout")
            except Exception as exc:
                if not (isinstance(exc, StaleSequence) or m.over):
                    # else: the match caught up with another writer, or an end in doubt was
                    # found in the store (MatchWriter.settle_end)
                    m.log.error("timeout_move_failed", error=loggable_error(exc), error_type=type(exc).__name__)
                if self.stopped or m.timer_key != key or m.seq != key[0] or not m.active:
                    return  # moved on (and re-armed), ended, paused (JJK-10.2) or draining
                if m.deadline != passed:
                    # paused and armed afresh meanwhile (JJK-10.2: a wait began and ended
                    # during the write): the new deadline, announced by the presence event,
                    # stands on its own timer. The retry used to replace that timer (which
                    # still ran: two for the decision) and played the move a second after
                    # the failure, long before the deadline the players were shown
                    return
                # the deadline has passed: the move is tried again shortly, the seat gets no
                # new turn (re-arming through schedule() would give it a whole turn time)
                m.timer_handle = asyncio.get_running_loop().call_later(
                    RETRY_AFTER_STORE_FAILURE_S, self._on_deadline, m, key, True, context=contextvars.Context())

    async def _bot_move(self, m: LiveMatch, key: tuple[int, int], bot: str, view: dict[str, Any],
                        reason: str) -> None:
        """One decision for a bot-driven seat, from that seat's view only (GJ-11.7), played
        ``bot_pace_s`` after the decision came up whatever the bot took, so that a forced move
        looks like any other (GJ-11.8, JJK-9.7). The auto-move policy standing in for an absent
        player (no bot named) plays at once: it costs the same for every decision."""
        seat = key[1]
        # this task's own context (MatchManager._spawn): the bot host's lines name the decision
        structlog.contextvars.bind_contextvars(match_id=m.match_id, seat=seat)
        loop = asyncio.get_running_loop()
        due = loop.time() + self.config.bot_pace_s * self.config.time_scale
        legal = list(view.get("legal") or [])
        action: str | None = None
        if not bot:  # the table's takeover "bot" is the rulebook's auto-move policy
            by, why = "auto", reason
        else:
            # a bot seat's own move says no reason; the takeover bot playing for an absent or
            # departed player says why, as the auto-move does, so a table can show "played for you"
            by, why = "bot", ("" if m.seats[seat].kind == "bot" else reason)
            action, failure = await self._ask(m, bot, seat, view, legal)
            if failure is not None:
                self.metrics.bot_failures.labels(bot, failure).inc()
                m.log.warning("bot_failed", seat=seat, seq=key[0], bot=bot, reason=failure)
                by, why = "auto", "bot_failed"
            if due > loop.time():
                await asyncio.sleep(due - loop.time())
        async with m.lock:
            if m.bot_key != key or m.seq != key[0] or not m.active:
                return  # the seat's player came back, or the match moved on or ended
            if action is None:
                action = m.game.auto_move(view)
            if why in ("takeover", "abandoned"):
                # as the seat stands when its move is made: its absent player may have left
                # while the move was decided (GJ-12.4), which used to be recorded "takeover"
                why = "abandoned" if m.seats[seat].left else "takeover"
            # The decision stays armed (``bot_key``) while its move is written, so that a
            # presence change meanwhile (schedule()) keeps it: it used to be disarmed first,
            # and a seat connecting or leaving during the write asked the bot for the same
            # decision again (a worker's time, a bot_failed logged for a move never played).
            # apply() arms the next decision, an end disarms; a failure disarms it below.
            m.bot_writing = key
            try:
                await self.writer.apply(m, seat, action, by=by, reason=why)
            except Exception as exc:
                m.bot_writing = None  # first: _retry_later may arm the decision again
                if m.bot_key == key:
                    m.bot_key = None  # decided again: after a store failure, or at once
                self._retry_later(m, "bot_move_failed", exc)
            finally:
                m.bot_writing = None

    async def _ask(self, m: LiveMatch, bot: str, seat: int, view: dict[str, Any],
                   legal: list[str]) -> tuple[str | None, str | None]:
        """``(legal action, None)`` or ``(None, failure category)``; never raises for a bot."""
        host = self._host()
        if host is None:
            return None, "unknown_bot"
        try:
            decision = await host.decide(bot, m.game.id, seat, view, legal, secrets.randbits(63),
                                         self.config.bot_deadline_s)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # the host's contract is not to raise; be safe anyway
            m.log.error("bot_host_error", seat=seat, bot=bot, error_type=type(exc).__name__)
            return None, "crash"
        self.metrics.bot_decision_seconds.labels(bot).observe(max(0.0, decision.elapsed_s))
        if decision.failure is not None:
            return None, str(decision.failure)
        if decision.action not in legal:
            return None, "illegal"
        return decision.action, None

    def _retry_later(self, m: LiveMatch, event: str, exc: Exception) -> None:
        """A bot move could not be applied (its decision disarmed by the caller): the match
        ended (an end in doubt found in the store): nothing; after a conflict with another
        writer the match has caught up, and what it now waits for is armed (schedule() keeps
        a decision the catch-up armed already); after a store failure, try again shortly."""
        if m.over:
            return
        if isinstance(exc, StaleSequence):
            self.schedule(m)
            return
        m.log.error(event, error=loggable_error(exc), error_type=type(exc).__name__)
        # One pending retry per match: the move fails again while one is pending whenever
        # something else arms it (the read-back of its log, settle_soon, does every time), and
        # each failure used to add a timer beside the others; they never merged, so the
        # failing writes of one match grew from 2 a second to 30 in minutes of an outage.
        if not self.stopped and m.retry_handle is None:
            m.retry_handle = asyncio.get_running_loop().call_later(
                RETRY_AFTER_STORE_FAILURE_S, self._retry_now, m, context=contextvars.Context())

    def _retry_now(self, m: LiveMatch) -> None:
        m.retry_handle = None
        shown = m.deadline
        self.schedule(m)
        if m.deadline != shown:
            # no event carries it: the player came back while the failed bot move was being
            # written (GJ-12.4), so the retry arms their turn (GJ-12.1), whose deadline the
            # streams would otherwise learn only at their next heartbeat
            m.beat()

    # ---- presence and absence -----------------------------------------------------------

    def connected(self, m: LiveMatch, slot: SeatSlot) -> None:
        """The seat's first open stream: the grace window ends; a player whose seat a bot
        was playing takes it back at once (GJ-12.4). Not once the match is over: there is no
        seat to take back, and a player looking at the result would otherwise turn the final
        table's "replaced by a bot" into "returned" (a presence event, a log line and a count
        after the end)."""
        if m.over:
            return
        self.cancel_grace(slot)
        change = "connected"
        if slot.taken_over:
            slot.taken_over = False
            change = "returned"
        if slot.away_since is not None:
            self.record_absence(m, slot, None)  # back: a restart gives a whole new window
        self.schedule(m)  # first: the event carries the deadline the clock now runs to
        self.writer.presence(m, slot, change)

    def disconnected(self, m: LiveMatch, slot: SeatSlot) -> None:
        """The seat's last stream closed: the grace window starts (for a joined player). A
        seat whose player left has nothing to announce: its "left" already said the player is
        gone, whether the takeover bot plays it now (GJ-12.4) or the waiting match freed it
        (nobody holds it: a "disconnected" after "left" showed a player vanishing twice). Nor
        once the match is over: it has no presence left to follow (every stream closes after
        ``match_ended``)."""
        if self.stopped or slot.left or not slot.taken or m.over:
            return
        if m.active and slot.absent:
            self.arm_grace(m, slot)
        self.schedule(m)  # first: the event carries the deadline (none while JJK-10.2 waits)
        self.writer.presence(m, slot, "disconnected")

    def arm_grace(self, m: LiveMatch, slot: SeatSlot, start: float | None = None) -> None:
        """Start ``slot``'s grace window at ``start`` (event-loop time; default now; in the
        past for a window resumed after a restart, as if the engine had never stopped).
        Windows started with the same ``start`` expire at the same instant (JJK-10.2). None
        once the clock is stopped (draining): a match started by a write the drain waits for
        (a join that took the last seat) armed windows whose timers outlived the close.

        The Unix time of ``start`` is recorded as the window's start (:meth:`record_absence`),
        the same for every window of that ``start``, so that they expire together after a
        restart too. Of ``start``, not of the arming: a start re-arms its resumed matches one
        after the other from one ``start`` (MatchManager._rearm), and the window of one armed
        late was recorded as starting that much later (``_rearm`` gave the Unix time it armed
        it at): a crash then gave its player that time again."""
        self.cancel_grace(slot)
        if self.stopped:
            return
        loop = asyncio.get_running_loop()
        begin = loop.time() if start is None else start
        at = begin + m.reconnect_grace_s * self.config.time_scale
        slot.grace_deadline = at
        slot.grace_handle = loop.call_at(at, self._on_grace, m, slot.seat, at, context=contextvars.Context())
        if self._last_start is None or self._last_start[0] != begin:
            self._last_start = (begin, self.wall() - max(0.0, loop.time() - begin))
        self.record_absence(m, slot, self._last_start[1])

    def record_absence(self, m: LiveMatch, slot: SeatSlot, away_since: float | None) -> None:
        """Make the store's record of ``slot``'s absence follow ``away_since`` (None: the
        player is back) and ``slot.taken_over``, in the background: presence changes are not
        writes of the match and do not wait for the store. One task per seat writes the
        newest state until the store holds it, so writes land in order; a failed write is
        tried again shortly (a write missed before a crash would give the player a window too
        long or too short after the restart), except while draining (MatchManager.drain
        waits for the writes under way)."""
        slot.away_since = away_since
        if slot.absence_task is None or slot.absence_task.done():
            slot.absence_task = self._spawn(self._write_absence(m, slot), f"absence-{m.match_id}-{slot.seat}")

    async def _write_absence(self, m: LiveMatch, slot: SeatSlot) -> None:
        """The seat's writer task (:meth:`record_absence`). Let go once done: every seat of a
        match that starts with nobody watching gets a window, and each seat kept its finished
        task (with its coroutine and context) as long as the match was held, 2.1 KB more per
        idle two-player match (bench/service_load.py --only idle: 6.9 KB before schema 8,
        9.1 KB with it, 7.5 KB now)."""
        try:
            await self._write_absence_until_stored(m, slot)
        finally:
            if slot.absence_task is asyncio.current_task():
                slot.absence_task = None
            self._absence_retry_ended(m, slot)

    async def _write_absence_until_stored(self, m: LiveMatch, slot: SeatSlot) -> None:
        while True:
            want = (slot.away_since, slot.taken_over and slot.away_since is not None)
            if want == slot.absence_stored or m.over:
                return
            try:
                # away_seen: the engine serves as this is written (a window resumed after a
                # restart: a crash before the first heartbeat loses none of its time before)
                await self.writer.store.save_absence(m.match_id, slot.seat, *want, away_seen=self.wall())
            except Exception as exc:
                if self.stopped or isinstance(exc, UnknownMatch):
                    # UnknownMatch: the match's rows are gone (deleted outside the engine):
                    # no retry will find them, and one warning a second for ever said nothing
                    # more. Draining: not tried again either. Said once each, for this seat
                    m.log.warning("absence_write_failed", seat=slot.seat, error=loggable_error(exc),
                                  error_type=type(exc).__name__)
                    return
                self._absence_write_failed(m, slot, exc)
                await asyncio.sleep(RETRY_AFTER_STORE_FAILURE_S)
                continue
            self.stored(m, slot, want)
            self._absence_write_landed(m, slot)

    def _absence_write_failed(self, m: LiveMatch, slot: SeatSlot, exc: Exception) -> None:
        """A seat's absence write failed and will be tried again: the first such failure
        starts an outage and is said (``absence_writes_failing``); later ones are counted and
        said as a summary at most every ``ABSENCE_OUTAGE_SUMMARY_S``
        (``absence_writes_still_failing``). See :class:`_AbsenceOutage`."""
        now = asyncio.get_running_loop().time()
        outage = self._absence_outage
        if outage is not None and not outage.pending and now - outage.last_failure >= ABSENCE_OUTAGE_SUMMARY_S:
            # left open by writes that ended unwritten (:meth:`_absence_retry_ended`) and
            # nothing tried again since: this failure is a new outage, said as one (it was
            # counted into the old one, its first line and error never said, and summed up at
            # once with the whole quiet time as outage_s)
            outage = self._absence_outage = None
        if outage is None:
            outage = self._absence_outage = _AbsenceOutage(started=now, error_type=type(exc).__name__,
                                                           last_summary=now)
            m.log.warning("absence_writes_failing", seat=slot.seat, error=loggable_error(exc),
                          error_type=type(exc).__name__, retry_every_s=RETRY_AFTER_STORE_FAILURE_S)
        else:
            outage.error_type = type(exc).__name__
            outage.failures_since_summary += 1
        outage.failures += 1
        outage.last_failure = now
        outage.pending.add((m.match_id, slot.seat))
        if now - outage.last_summary >= ABSENCE_OUTAGE_SUMMARY_S:
            log.warning("absence_writes_still_failing", pending=len(outage.pending),
                        failed_writes=outage.failures_since_summary, error_type=outage.error_type,
                        outage_s=round(now - outage.started, 1))
            outage.last_summary = now
            outage.failures_since_summary = 0

    def _absence_write_landed(self, m: LiveMatch, slot: SeatSlot) -> None:
        """A seat's absence write landed: during an outage, one that was being tried again
        is no longer pending, and once none is, writes land again (``absence_writes_recovered``)."""
        outage = self._absence_outage
        if outage is None:
            return
        outage.pending.discard((m.match_id, slot.seat))
        outage.landed += 1  # one that never failed too: the store takes writes again
        self._end_absence_outage_if_over(outage)

    def _absence_retry_ended(self, m: LiveMatch, slot: SeatSlot) -> None:
        """A seat's writer stopped without landing its write (the match ended, the engine
        drains, its rows are gone): it is no longer pending, and the outage ends if a write
        landed meanwhile and no other is pending; else it stays open, quiet, so that the next
        failure (within ``ABSENCE_OUTAGE_SUMMARY_S``: :meth:`_absence_write_failed`) is not
        said as a new outage, and the next write that lands, or the heartbeat's first write or
        probe that the database answers (:meth:`database_answered`), says it is over."""
        outage = self._absence_outage
        if outage is not None and (m.match_id, slot.seat) in outage.pending:
            outage.pending.discard((m.match_id, slot.seat))
            self._end_absence_outage_if_over(outage)

    def _end_absence_outage_if_over(self, outage: _AbsenceOutage) -> None:
        """``outage``, the open one, is over once none of its writes is pending and one landed."""
        if not outage.pending and outage.landed:
            self._end_absence_outage()

    def _end_absence_outage(self) -> None:
        outage = self._absence_outage
        assert outage is not None
        self._absence_outage = None
        log.info("absence_writes_recovered", outage_s=round(asyncio.get_running_loop().time() - outage.started, 1),
                 failed_writes=outage.failures, landed=outage.landed)

    @property
    def absence_outage_quiet(self) -> bool:
        """An outage of the absence writes is open with none of them being tried again (they
        ended unwritten: :meth:`_absence_retry_ended`): no write of its own will say when the
        database is back, the heartbeat does (:meth:`database_answered`)."""
        return self._absence_outage is not None and not self._absence_outage.pending

    def database_answered(self) -> None:
        """The database took a write or a probe (the heartbeat's, MatchManager._touch_absences):
        a quiet outage of the absence writes is over now (``absence_writes_recovered``, its
        ``outage_s`` ending here). It used to stay open until the next absence write landed,
        perhaps hours later, its quiet time counted as outage; and a failure a minute later
        dropped it unsaid. An outage with writes pending ends when they land, as before."""
        if self.absence_outage_quiet:
            self._end_absence_outage()

    def database_failed(self) -> None:
        """The heartbeat's write or probe failed: a quiet outage of the absence writes goes
        on (the next write that fails continues it, however long after: not a new outage)."""
        if self._absence_outage is not None:
            self._absence_outage.last_failure = asyncio.get_running_loop().time()

    def stored(self, m: LiveMatch, slot: SeatSlot, record: tuple[float | None, bool]) -> None:
        """The store holds ``record`` (away_since, taken_over) for ``slot``: written, or read
        back with the match (MatchManager._rearm); :attr:`running` follows it, and holds no
        match that ended (MatchManager._unregister lets a finished match go)."""
        slot.absence_stored = record
        if record[0] is not None and not record[1] and not m.over:
            self.running[(m.match_id, slot.seat)] = (m, slot)
        else:
            self.running.pop((m.match_id, slot.seat), None)

    @staticmethod
    def cancel_grace(slot: SeatSlot) -> None:
        if slot.grace_handle is not None:
            slot.grace_handle.cancel()
        slot.grace_handle = None
        slot.grace_deadline = None

    def _on_grace(self, m: LiveMatch, seat: int, at: float) -> None:
        self._spawn(self._grace_expired(m, seat, at), f"grace-{m.match_id}-{seat}")

    async def _grace_expired(self, m: LiveMatch, seat: int, at: float) -> None:
        """The absent player's grace window is over: the rulebook's policy applies (two
        players: a disconnection forfeit ends the match, JJK-10.2, JJK-8.4). The expiry is
        counted (``grace_expired``) once it took effect: an end the store refused is tried
        again and counted when written, once, not once per attempt; one that found the match
        already ended (an end in doubt that had landed, MatchWriter.settle_end) is not counted."""
        async with m.lock:
            slot = m.seats[seat]
            if not m.active or not slot.absent or slot.grace_deadline != at:
                return
            slot.grace_handle = None
            if m.policy == FORFEIT:
                others = [s for s in m.seats if s.seat != seat]
                if all(o.absent and o.grace_deadline == at for o in others):
                    outcome, winners, info = "abandoned", [], {"absent": [s.seat for s in m.seats]}
                else:
                    outcome, winners, info = "forfeit", [o.seat for o in others], {"forfeited": seat}
                try:
                    await self.writer.end(m, outcome, winners, **info)
                except Exception as exc:
                    if m.over:  # an end in doubt was found in the store (MatchWriter.settle_end)
                        return
                    m.log.error("grace_policy_failed", seat=seat, error=loggable_error(exc))
                    # try again shortly while it is still the same window (the player came
                    # back meanwhile: nothing; went away again: the new window has its handle)
                    if not self.stopped and slot.grace_deadline == at:
                        slot.grace_handle = asyncio.get_running_loop().call_later(
                            RETRY_AFTER_STORE_FAILURE_S, self._on_grace, m, seat, at,
                            context=contextvars.Context())
                    return
                self.metrics.grace_expired.labels(m.game.id, outcome).inc()
                return
            slot.grace_deadline = None
            slot.taken_over = True
            self.record_absence(m, slot, slot.away_since)  # taken over, after a restart too
            self.metrics.grace_expired.labels(m.game.id, "bot_takeover").inc()
            self.schedule(m)
            self.writer.presence(m, slot, "bot_took_over")
