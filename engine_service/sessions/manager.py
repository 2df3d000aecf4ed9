"""The authoritative session layer: :class:`MatchManager` implements
:class:`~engine_service.sessions.api.MatchService` (ARCHITECTURE.md section 4).

How a match runs:

* **Event-sourced.** A match is its record, the decks dealt and the ordered log of accepted
  actions; ``LiveMatch.state`` is the fold of that log. An action is validated on a copy of
  the state, written to the store (with the deck of a deal it makes due) and only then
  becomes the match's state, gets its sequence number and is acknowledged: nothing a client
  has seen can be lost by a crash, and a failed write changes nothing.
* **One writer per match**: every change of a match (player actions, timeouts, bot moves,
  joins, leaving, forfeits, termination) runs under the match's ``asyncio.Lock``. Readers
  (views, watchers) never take it.
* **Idempotent and ordered**: ``client_action_id`` (per seat) makes a retry return the seq
  and action of its one application with ``duplicate=True`` (and the seat's view at that seq
  as the match stands now, see docs/api.md "Acting"); the ids are rebuilt from the durable
  log after a restart. ``expected_seq`` rejects a decision taken on a stale view
  (StaleSequence carries the current one). A join is idempotent by its ``client_join_id``
  (its hash is stored with the seat): a retry gets the seat it took, with a new token. A
  creation is idempotent by its ``client_create_id`` (its hash is stored with the match,
  unique): a retry gets the match it created.
* **Redacted at the source**: every view and event is built for its audience by
  :mod:`.views` from the rules core's own views.
* **Time and absence** follow the rulebooks (:mod:`.policy`, :mod:`.clock`); timers are
  armed on the event loop and re-armed from scratch after a restart.
* **Bots** are called through the bot host off the event loop with only their seat's view;
  any failure falls back to the auto-move policy (:mod:`.clock`).

This module is the service's facade: the registry of live matches, the requests of
MatchService and the lifecycle. Its collaborators own the rest:

* :class:`~.writer.MatchWriter`: every change of a match's log or status, published;
* :class:`~.actions.PlayerActions`: a player's action (its checks, the answer to a retry);
* :class:`~.clock.MatchClock`: what happens with time (deadlines, absence, bot moves);
* :class:`~.seating.Seating`: the durable writes of a match's creation, of a seat and of a
  match's start, and their recovery when a write's outcome is not known;
* :class:`~.streams.WatchStreams`: the watch streams (opened, counted as a seat's presence,
  ended);
* :class:`~.housekeeping.Housekeeping`: the sweeper's pass and retention;
* :mod:`.terms`: what a new match is made of (a CreateMatchRequest, checked and completed);
* :mod:`.access`: who may do what (a token's principal, the audience it sees a match as, the
  seat it acts for);
* :mod:`.validation`: whether what a caller names is acceptable (display names, join ids,
  seats and bots).
"""

from __future__ import annotations

import asyncio
import contextvars
import math
import time
from dataclasses import replace
from typing import Any, AsyncIterator, Awaitable, Callable, Protocol, TypeVar

import structlog

from ..observability.metrics import Metrics, get_metrics
from ..rules import transcript
from ..rules.errors import RulesError
from ..rules.registry import all_games, get_game
from ..store import MatchListing, Store, StoreError, open_store
from ..store.base import STATUSES, CreateIdTaken, PruneCounts, SeatRecord, StoredMatch
from .access import acting_seat, audience_of, authenticate, left_already, require_current_token
from .actions import PlayerActions
from .api import (BadRequest, BotInfo, BotLoadFailure, CreateIdInUse, CreateMatchRequest, DealReveal,
                  FailedPrecondition, GameInfo, Inspection, JoinResult, LimitExceeded, MatchEvent, MatchNotActive, MatchNotFound,
                  MatchNotOver, MatchSummary, Page, PermissionDenied, Principal, SeatTaken, SessionError,
                  SubmitResult, Unauthenticated, Unavailable, ViewEnvelope)
from .clock import ABSENCE_OUTAGE_SUMMARY_S, MatchClock
from .config import SessionConfig
from .housekeeping import Housekeeping
from .match import FREED_TOKENS_KEPT, CorruptLog, LiveMatch, SeatSlot, loggable_error
from .paging import decode_page_token, encode_page_token
from .policy import FORFEIT
from .seating import Seating
from .streams import WatchStreams
from .terms import MatchTerms, match_terms, request_digest
from .tokens import create_id_hash, join_id_hash, new_match_id, new_token, token_hash
from .validation import TakeoverBotUnavailable  # noqa: F401 (raised by start(); imported from here)
from .validation import check_client_create_id, check_client_join_id, check_takeover_bot, clean_name
from .views import ADMIN
from .writer import MatchWriter

log = structlog.get_logger("engine_service.sessions")
T = TypeVar("T")

MAX_MATCH_ID_LENGTH = 64
#: The longest a start waits for its bot workers before it arms the resumed matches' bots
#: (:meth:`MatchManager._await_bot_workers`): well within the orchestrator's start-up probe.
BOT_WORKERS_WAIT_S = 15.0
#: Unfinished matches read back at once at start-up (:meth:`MatchManager._resume_unfinished`).
#: A PostgreSQL read of a match was a transaction of seven round trips: one after another,
#: with the database 1 ms away, 18 ms a match: 10,000 matches would have taken three minutes,
#: past the start-up probe's two (bench/restart_resume.py; 41 s eight at once). It is one
#: round trip now: eight at once, the replay's CPU is most of a start again. The store's pool (8
#: connections) serves several at once and one match's replay overlaps the others' reads (on
#: SQLite too, whose reads run in the store's thread); more reads than connections would only queue.
RESUME_CONCURRENCY = 8


class BotHostLike(Protocol):
    """What the manager needs of :class:`engine_service.plugins.host.BotHost`."""

    def bots(self) -> list[BotInfo]: ...

    def plays(self, bot: str, game_id: str) -> bool: ...

    # optional: ``load_failures() -> list[BotLoadFailure]``, the plugins that did not load

    async def decide(self, bot: str, game_id: str, seat: int, view: dict, legal: list[str],
                     seed: int, deadline_s: float) -> Any: ...

    async def close(self) -> None: ...


class BotHostUnavailable(RuntimeError):
    """The bot worker processes cannot be started (the interpreter cannot be run, no process
    can be made): raised by :meth:`MatchManager.start`, before the store opens."""


class MatchManager:
    """Holds every live match of this process. See the module docstring.

    ``store``: where matches are persisted (default: opened from ``config.db_path``).
    ``bot_host``: the bot plugin host; None creates an
    :class:`engine_service.plugins.host.BotHost` at :meth:`start` (owned and closed by the
    manager) unless ``create_bot_host`` is False (then bot seats are refused and absent seats
    use the auto-move policy). ``metrics``: default, the process-wide metrics.
    """

    def __init__(self, config: SessionConfig | None = None, *, store: Store | None = None,
                 bot_host: BotHostLike | None = None, metrics: Metrics | None = None,
                 create_bot_host: bool = True) -> None:
        self.config = config or SessionConfig()
        self.metrics = metrics if metrics is not None else get_metrics()
        self._store = store if store is not None else open_store(self.config.db_path, self.metrics,
                                                                 lock_wait_s=self.config.db_lock_wait_s)
        self._host = bot_host
        self._create_host = bot_host is None and create_bot_host
        self._owns_host = False
        self._workers_ready: bool | None = None  # wait_for_bot_workers's answer, once asked
        self._matches: dict[str, LiveMatch] = {}
        self._tokens: dict[str, tuple[str, int]] = {}  # token hash -> (match id, seat)
        # client_create_id hash -> the id of the held match it created (the store knows the rest)
        self._created_ids: dict[str, str] = {}
        self._creating_ids: dict[str, asyncio.Event] = {}  # ids whose create_match is under way
        # listed matches registered while waiting (list_open_matches drops those that started),
        # each with its place in the lobby's order (_lobby_key); the greatest place given
        self._lobby: dict[str, tuple[tuple[float, str], LiveMatch]] = {}
        self._lobby_last = -math.inf
        self._load_lock = asyncio.Lock()
        self._creating = {"waiting": 0, "active": 0}  # create_match calls awaiting the store
        self._tasks: set[asyncio.Task] = set()
        self._writes: set[asyncio.Task] = set()  # accepted writes (_exclusive, creations) under way
        self._sweeper: asyncio.Task | None = None
        self._sweep_interval = 60.0  # set by start(): the retries of a start wait at most that
        self._pruner: asyncio.Task | None = None
        self._absence_heartbeat: asyncio.Task | None = None
        #: while beats fail in the store: (loop time of the first failure, of the latest
        #: line said, failed beats since it); None while they land (_touch_absences)
        self._heartbeat_outage: tuple[float, float, int] | None = None
        self._started = False
        self._draining = False
        self._drained: asyncio.Task | None = None  # the drain's task, once drain() began (drain)
        self._closed = False
        self._writer = MatchWriter(self._store, self.metrics, max_deals=self.config.max_match_deals)
        self._clock = MatchClock(self.config, self.metrics, self._writer, self._spawn, lambda: self._host)
        self._writer.schedule = self._clock.schedule
        self._writer.stop = self._clock.stop
        self._writer.disarm = self._clock.disarm
        self._streams = WatchStreams(self.config, self.metrics, self._clock, get=self._get,
                                     running=self._require_running)
        self._writer.overflowed = self._streams.overflowed
        self._seating = Seating(self._store, self.metrics, self._writer, self._clock, self._tokens,
                                spawn=self._spawn, exclusive=self._exclusive,
                                held=lambda match_id: self._matches.get(match_id),
                                loading=self._load_lock, draining=lambda: self._draining,
                                sweep_interval=lambda: self._sweep_interval)
        self._writer.settle_soon = self._seating.settle_end_soon
        self._writer.status_soon = self._seating.write_status_soon
        self._actions = PlayerActions(self._writer, self.metrics)
        self._housekeeping = Housekeeping(self.config, self.metrics, self._store, self._writer,
                                          self._seating, self._matches, exclusive=self._exclusive,
                                          unregister=self._unregister, writes=self._writes,
                                          loading=self._load_lock, draining=lambda: self._draining)

    # ---- lifecycle ------------------------------------------------------------------------

    async def start(self, *, wait_for_bot_workers: bool = False) -> None:
        """Open the store, rebuild every unfinished match from its log, re-arm its timers.

        ``wait_for_bot_workers``: wait for the bot workers (:meth:`wait_for_bot_workers`)
        even when no resumed match has a bot, before the timers are armed (the service, which
        reports SERVING right after: the resumed players' grace periods must not run while it
        waits, before they can reconnect).

        A match this program cannot replay (an unknown game, options or a log the rules
        refuse: CorruptLog, RulesError) is skipped with ``match_resume_failed`` and answered
        MATCH_CORRUPT when asked for: the other matches go on. A **store** error while
        resuming (I/O, a damaged file) is not the match's fault and would hit every later
        read and write too, so it fails the start (StoreError; the service exits 2) instead
        of serving with health SERVING while every write fails UNAVAILABLE. A failed start
        closes what it opened (the store and its lock, the bot workers).

        The bot host is made, and ``takeover_bot`` checked against it, before the store opens:
        a takeover bot that is not installed (TakeoverBotUnavailable) stops the start before
        an older schema was migrated, which the release before could no longer open."""
        if self._started:
            return
        try:
            self._prepare_bot_host()
            await self._store.open()
        except BaseException:
            await self._close_owned_host()
            raise
        try:
            await self._start_opened(wait_for_bot_workers)
        except BaseException:
            await self._abort_start()
            raise

    def _prepare_bot_host(self) -> None:
        if self._create_host and self._host is None:
            from ..plugins.host import BotHost

            try:
                self._host = BotHost(workers=self.config.bot_workers, metrics=self.metrics,
                                     load_timeout_s=self.config.bot_plugin_load_timeout_s)
            except OSError as exc:
                # was reported as the database's fault (store_unavailable), naming the --db
                raise BotHostUnavailable(f"cannot start the bot worker processes: {exc}") from exc
            self._owns_host = True
            # the workers start now, not at the first decision, which would otherwise spend
            # its deadline on their start-up (a timeout counted against the bot)
            self._host.warm()
        check_takeover_bot(self.config.takeover_bot, self._host)

    async def _close_owned_host(self) -> None:
        if self._owns_host and self._host is not None:
            host, self._host, self._owns_host = self._host, None, False
            await host.close()

    async def _start_opened(self, wait_for_bot_workers: bool) -> None:
        # every game's and bot's series at 0 from the start: alerts on increase() see the
        # first failure (observability.metrics)
        self.metrics.declare(games=[g.id for g in all_games()], bots=[b.name for b in self.list_bots()])
        resumed = await self._resume_unfinished()
        if wait_for_bot_workers:
            await self.wait_for_bot_workers()
        else:
            await self._await_bot_workers(resumed)
        self._started = True
        now = asyncio.get_running_loop().time()
        for m in resumed:
            self._rearm(m, now)
        periods = [p / 4 for p in (self.config.finished_retention_s, self.config.waiting_timeout_s) if p > 0]
        interval = self._sweep_interval = max(0.01, min([60.0, *periods]))
        self._sweeper = asyncio.create_task(self._sweep(interval), name="sessions-sweeper")
        self._absence_heartbeat = asyncio.create_task(self._touch_absences_periodically(),
                                                      name="sessions-absence-heartbeat")
        if self.config.keep_finished_days > 0:
            log.info("retention_enabled", keep_finished_days=self.config.keep_finished_days,
                     interval_s=self.config.prune_interval_s, batch=self.config.prune_batch)
            self._pruner = asyncio.create_task(self._prune_periodically(), name="sessions-pruner")

    async def _resume_unfinished(self) -> list[LiveMatch]:
        """Every unfinished match rebuilt from the store, :data:`RESUME_CONCURRENCY` of them
        read at once; the ones still unfinished, in the store's order (creation). A match
        whose log does not replay is logged and skipped. Any other error fails the start:
        no further match is begun, the loads under way are let finish (one may be writing: a
        deal that was due, a start, an end), then the first error is raised, a store's as
        "resuming the unfinished matches failed: ..."."""
        ids = await self._store.unfinished_match_ids()
        loaded: list[LiveMatch | None] = [None] * len(ids)
        pending = iter(enumerate(ids))  # shared: each id is taken by one loader
        failed: list[Exception] = []

        async def loader() -> None:
            for i, match_id in pending:
                if failed:
                    return
                try:
                    m = await self._load(match_id)
                except (CorruptLog, RulesError) as exc:
                    log.error("match_resume_failed", match_id=match_id, error=str(exc))
                    continue
                except Exception as exc:
                    failed.append(exc)
                    return
                if m is not None and not m.over:
                    loaded[i] = m
                    self.metrics.matches_resumed.labels(m.game.id).inc()
                    m.log.info("match_resumed", seq=m.seq, status=m.status)

        await asyncio.gather(*(loader() for _ in range(min(RESUME_CONCURRENCY, len(ids)))))
        if failed:
            exc = failed[0]
            if isinstance(exc, StoreError):
                raise type(exc)(f"resuming the unfinished matches failed: {exc}") from exc
            raise exc
        return [m for m in loaded if m is not None]

    async def _await_bot_workers(self, resumed: list[LiveMatch]) -> None:
        """Before the resumed matches' bots are asked (at once, by :meth:`_rearm`), wait for
        the bot workers this start launched (``warm``) to be up, at most
        ``BOT_WORKERS_WAIT_S``: their start-up (a fresh interpreter importing the plugins,
        about a second on a loaded machine) would otherwise eat those first decisions'
        deadline, and every bot of a resumed match timed out after a restart (the auto-move
        played instead, counted as a bot failure). Not ready by then (a plugin that hangs
        on import), the start goes on, and those decisions fail as they would have."""
        if not self._owns_host or self._host is None:
            return
        # a bot seat, or a table whose takeover bot may play a seat at once (one its player
        # left for good, or with no reconnect grace)
        if not any(m.takeover_bot or any(slot.kind == "bot" for slot in m.seats)
                   for m in resumed if m.active):
            return
        await self.wait_for_bot_workers()

    async def wait_for_bot_workers(self, timeout_s: float = BOT_WORKERS_WAIT_S) -> bool:
        """Wait until the bot workers this manager started (``warm``) are up, at most
        ``timeout_s`` (once: a later call answers at once); False, logged as
        ``bot_workers_not_ready``, when they were not. The service waits for them before it
        reports SERVING, so that a bot match created at once does not spend its first
        decision's deadline on their start-up. True without a bot host of its own."""
        if not self._owns_host or self._host is None:
            return True
        if self._workers_ready is None:
            self._workers_ready = await self._host.start(timeout_s)
            if not self._workers_ready:
                log.warning("bot_workers_not_ready", waited_s=timeout_s)
        return self._workers_ready

    async def _abort_start(self) -> None:
        """Undo a start that failed after the store opened: the matches registered so far
        are dropped, what the start set off cancelled (its housekeeping, and what the resumed
        matches set off in the background: the absence writes of the players' grace windows,
        a bot move; left running, each failed against the closed store, an
        ``absence_write_failed`` warning per absent seat of every match resumed, after the
        real error), and the store (with its ownership lock) and an owned bot host closed.
        The clock, stopped meanwhile, is the next start's again: it stayed stopped, and the
        matches of a start tried again had no deadline, grace window or bot move."""
        self._started = False
        self._clock.stopped = True  # nothing is armed while the start is undone
        for m in list(self._matches.values()):
            self._clock.stop(m)
        self._matches.clear()
        self._tokens.clear()
        self._created_ids.clear()
        self._lobby.clear()
        set_off = [t for t in (self._sweeper, self._absence_heartbeat) if t is not None] + list(self._tasks)
        for task in set_off:
            task.cancel()
        try:
            await asyncio.gather(*set_off, return_exceptions=True)
            await self._store.close()
        finally:
            self._clock.stopped = False
            await self._close_owned_host()

    def _rearm(self, m: LiveMatch, now: float) -> None:
        """Arm what a match read back from the store needs: nobody is connected to it, so
        every joined player is absent (then the decision at hand: a turn deadline or a bot
        move). The store says which of them were away already when the engine stopped
        (schema 8):

        * a player who was connected then gets a whole grace window from ``now`` (event-loop
          time: when the engine serves again; nobody could reconnect before);
        * a player who was away gets what was left of the window: the time away before the
          stop counts, the downtime does not (a player cannot reconnect to a stopped engine).
          The stop is the newest time the engine is known to have served: the seats'
          ``away_seen`` (written at a drain, and every ``absence_heartbeat_s`` while a window
          runs, so after a crash at most that much before it) or the match's last action,
          whichever is newer; a window used up expires at once;
        * a Georgian Joker seat that the takeover bot played (GJ-12.4) stays the bot's until
          its player connects (GJ-12.3: "returned")."""
        if not m.active or self._clock.stopped:
            return
        for slot in m.seats:  # the heartbeat's index (before the writes below change them)
            self._clock.stored(m, slot, slot.absence_stored)
        stopped = max([s.away_seen for s in m.seats if s.away_seen is not None]
                      + [m.actions[-1].at if m.actions else 0.0])
        for slot in m.seats:
            if not slot.absent:
                continue
            if slot.away_since is None:
                self._clock.arm_grace(m, slot, start=now)
            elif slot.away_taken_over and m.policy != FORFEIT:
                slot.taken_over = True
                m.log.info("grace_resumed", seat=slot.seat, taken_over=True)
            else:
                # the window goes on from where it stood: it started ``elapsed`` before now,
                # and is recorded so (arm_grace), as if the engine had never stopped, so that
                # the next restart counts this run's time away and no downtime either. Not
                # capped at the window: windows used up expire at once, in the order they
                # ended (the first decides, JJK-10.2); capped, every one used up ended at the
                # same instant, and two players away since different times ended "abandoned"
                # instead of a forfeit of the first
                elapsed = max(0.0, stopped - slot.away_since)
                self._clock.arm_grace(m, slot, start=now - elapsed)
                # what an operator asked "why did they forfeit at once after the restart" needs
                window = m.reconnect_grace_s * self.config.time_scale
                m.log.info("grace_resumed", seat=slot.seat, taken_over=False, away_s=round(elapsed, 3),
                           left_s=round(max(0.0, window - elapsed), 3))
        self._clock.schedule(m)

    async def _touch_absences_periodically(self) -> None:
        """Every ``absence_heartbeat_s`` while some player's grace window runs, record that
        the engine still serves (Store.touch_absences): what a restart after a crash takes
        as the time the engine stopped (:meth:`_rearm`). Nothing is written while nobody is
        away (only asked, while an outage is open: :meth:`_touch_absences`). A failure is
        logged and tried again at the next beat; so is a beat that raises something else
        than a StoreError (a bug), as the sweeper does: it used to end the
        heartbeat for good, silently, and a crash afterwards counted the time away only up
        to that beat (the players got the rest of the engine's run as a longer window).
        Failures are said as :meth:`_heartbeat_failed` says them, a bug's as a database's."""
        while True:
            await asyncio.sleep(self.config.absence_heartbeat_s)
            try:
                await self._touch_absences()
            except Exception as exc:  # the heartbeat must outlive a bug in one beat
                self._heartbeat_failed(exc, seats=0)

    async def _touch_absences(self) -> None:
        # the windows running (recorded away, not taken over; not cleared by the drain's stop),
        # from the clock's index: a match that ended or a seat whose player left is dropped
        running = self._clock.running
        for key, (m, slot) in list(running.items()):
            if m.over or slot.left:
                del running[key]
        # and whose player is away now: one back whose return is still being written (a slow
        # store) is not recorded away meanwhile, which a crash before that write landed counted
        seats = [key for key, (m, slot) in running.items() if m.active and slot.away_since is not None]
        # with nobody away, nothing is written; but while an outage is open (this heartbeat's,
        # or the absence writes' with none of them left to land) the beat asks the database
        # whether it answers (Store.ping): the outage is said over when it is back, not at the
        # next write that happens to come, with all the quiet time in between as outage_s
        if not seats and self._heartbeat_outage is None and not self._clock.absence_outage_quiet:
            return
        now = asyncio.get_running_loop().time()
        try:
            if seats:
                await self._store.touch_absences(seats, self._clock.wall())
            else:
                await self._store.ping()
        except Exception as exc:
            if isinstance(exc, StoreError):  # (a bug in the beat says nothing of the database)
                self._clock.database_failed()
            if seats or self._heartbeat_outage is not None:
                self._heartbeat_failed(exc, seats=len(seats))
            return
        self._clock.database_answered()
        if self._heartbeat_outage is not None:
            log.info("absence_heartbeat_recovered", seats=len(seats),
                     outage_s=round(now - self._heartbeat_outage[0], 1))
            self._heartbeat_outage = None

    def _heartbeat_failed(self, exc: Exception, *, seats: int) -> None:
        """A beat failed; the next one runs all the same. A database outage fails every beat
        (every absence_heartbeat_s), and so does a bug: said at the first failure, then at
        most every ABSENCE_OUTAGE_SUMMARY_S with the beats failed since, as the absence writes
        are (MatchClock), and once when a beat lands again, or finds the database answering
        with nobody away (:meth:`_touch_absences`). A StoreError is a warning; anything else is a bug, said at error (it was an error line
        every beat, 720 an hour, for as long as the bug lasted)."""
        now = asyncio.get_running_loop().time()
        outage = self._heartbeat_outage
        if outage is None or now - outage[1] >= ABSENCE_OUTAGE_SUMMARY_S:
            said = dict(seats=seats, error=loggable_error(exc), error_type=type(exc).__name__,
                        failed_beats=1 if outage is None else outage[2] + 1,
                        outage_s=0.0 if outage is None else round(now - outage[0], 1))
            if isinstance(exc, StoreError):
                log.warning("absence_heartbeat_failed", **said)
            else:
                log.error("absence_heartbeat_failed", **said)
            self._heartbeat_outage = (now if outage is None else outage[0], now, 0)
        else:
            self._heartbeat_outage = (outage[0], outage[1], outage[2] + 1)

    async def _flush_absences(self) -> None:
        """At a drain: let the absence writes under way land (MatchClock.record_absence), then
        record that the engine served until now for every window that was running (the clock
        is stopped: no window starts or ends any more), so that a restart counts the time
        away up to the drain and not beyond it."""
        pending = [slot.absence_task for m in self._matches.values() for slot in m.seats
                   if slot.absence_task is not None and not slot.absence_task.done()]
        if pending:
            await asyncio.gather(*pending, return_exceptions=True)
        await self._touch_absences()

    async def drain(self) -> None:
        """Refuse new work (Unavailable), let in-flight actions finish, close every stream.

        In flight are the writes already accepted (:meth:`_exclusive`, a creation): each was
        answered or will be, so each finishes against the open store, even one whose task has
        not taken its match's lock yet (the lock alone would let the drain pass before it and
        the close() that follows shut the store under it). A write that reaches
        :meth:`_exclusive` from now on is refused (DRAINING) before it touches the store.

        The drain runs in a task of its own: a caller that stops waiting for it (a bounded
        ``wait_for``) does not stop it, and every later drain() or close() waits for it to
        end (a second drain used to return at once, and the close after it shut the store
        under the writes still in flight)."""
        if self._drained is None:
            self._draining = True
            self._clock.stopped = True
            for housekeeping in (self._sweeper, self._pruner):
                if housekeeping is not None:
                    housekeeping.cancel()
            for m in self._matches.values():
                self._clock.stop(m)  # a timer or bot move that fires now finds itself disarmed
            self._drained = asyncio.get_running_loop().create_task(self._drain(), name="sessions-drain")
        await asyncio.shield(self._drained)

    async def _drain(self) -> None:
        """What :meth:`drain` waits for, once every clock is stopped."""
        while self._writes:  # asyncio.wait: a cancelled drain does not cancel the writes
            await asyncio.wait(list(self._writes))
        for m in list(self._matches.values()):
            async with m.lock:  # the write in flight, if any, finishes and is acknowledged
                pass
        if self._absence_heartbeat is not None:
            self._absence_heartbeat.cancel()
        await self._flush_absences()
        for m in self._matches.values():
            for w in list(m.watchers):
                w.end(Unavailable("the service is shutting down; watch again later",
                                  reason="DRAINING"))
        pending = [t for t in self._tasks if t is not asyncio.current_task()]
        for t in pending:
            t.cancel()
        await asyncio.gather(*pending, return_exceptions=True)
        await asyncio.gather(*(t for t in (self._sweeper, self._pruner, self._absence_heartbeat) if t is not None),
                             return_exceptions=True)
        log.info("sessions_drained", matches=len(self._matches))

    async def close(self) -> None:
        if self._closed:
            return
        await self.drain()
        self._closed = True  # no read starts now (_require_open)
        # reads go on while draining: a match being read from the store may write its due
        # deck or its derived end (_load), and must finish before the store closes
        async with self._load_lock:
            pass
        try:
            await self._store.close()
        finally:  # a store that fails to close leaves no bot workers running
            await self._close_owned_host()

    # ---- catalog --------------------------------------------------------------------------

    def list_games(self) -> list[GameInfo]:
        return [GameInfo(id=g.id, name=g.name, num_seats=g.num_seats, description=g.description,
                         rulebook=g.rulebook, options=tuple(g.option_specs)) for g in all_games()]

    def list_bots(self) -> list[BotInfo]:
        return list(self._host.bots()) if self._host is not None else []

    def list_bot_load_failures(self) -> list[BotLoadFailure]:
        # optional in a host (BotHostLike): a stand-in that loads no plugins has none
        failures = getattr(self._host, "load_failures", None)
        return list(failures()) if failures is not None else []

    # ---- authentication -------------------------------------------------------------------

    def authenticate(self, match_id: str, token: str | None, *, admin: bool = False) -> Principal:
        """Resolve a bearer token for ``match_id`` (see api.MatchService.authenticate).

        ``admin``: the transport has verified the admin token. No token: a spectator. A seat
        token is known while its match is held in memory (unfinished, or finished less than
        ``finished_retention_s`` ago); for a token it does not know the transport recalls an
        ended match from the store (:meth:`recall`), so a seat token works for as long as the
        match is stored (``keep_finished_days``; then the match is not found).
        """
        return authenticate(self._tokens, match_id, token, admin=admin)

    async def recall(self, match_id: str) -> bool:
        """See api.MatchService.recall: True when ``match_id`` was stored but not held;
        MatchNotFound when no match has this id (never created, or deleted by retention)."""
        self._require_open()
        if match_id in self._matches:
            return False
        await self._get(match_id)
        return True

    # ---- creating and joining -------------------------------------------------------------

    async def create_match(self, request: CreateMatchRequest, *, admin: bool = False) -> MatchSummary:
        """Create a match (api.MatchService.create_match). With a ``client_create_id`` the
        match keeps the id's hash and the request's digest (durable with the match, so both
        survive a restart; unique across the stored matches), and a create whose answer was
        lost (UNAVAILABLE, a timeout, a crash after the match was written) is retried safely:
        a create with that id returns the match it created as it stands now, whatever its
        status, as long as the store keeps the match (until retention prunes it). The same id
        with a request that differs otherwise is CreateIdInUse (ALREADY_EXISTS). The request
        is checked first, as without an id (a retry asks what was accepted once)."""
        self._require_running()
        client_create_id = check_client_create_id(getattr(request, "client_create_id", ""))
        terms = match_terms(request, admin=admin, config=self.config, host=self._host)
        if not client_create_id:
            return await self._create(request, terms, admin=admin)
        create_hash, digest = create_id_hash(client_create_id), request_digest(request)

        # one call per id at a time in this process (a second waits for the first's
        # outcome); the store's unique index keeps one match per id whatever happens
        while (busy := self._creating_ids.get(create_hash)) is not None:
            await busy.wait()
        done = self._creating_ids[create_hash] = asyncio.Event()

        def release() -> None:
            del self._creating_ids[create_hash]
            done.set()

        async def write() -> MatchSummary:
            try:
                try:
                    return await self._create(request, terms, create_hash, digest, admin=admin)
                except Unavailable as exc:
                    if not isinstance(exc.__cause__, CreateIdTaken):
                        raise
                    # stored meanwhile by a call this process did not see (another writer of
                    # the database): that match is the id's
                    found = await self._created_with(create_hash, digest)
                    if found is None:
                        raise
                    return found.summary()
            finally:
                release()

        try:
            # a caller that goes away during the look-up stops here: nothing was written
            found = await self._created_with(create_hash, digest)
        except BaseException:
            release()
            raise
        if found is not None:
            release()
            found.log.info("match_create_retried", status=found.status)
            return found.summary()
        # as a creation (_create): a caller that goes away while its match is written leaves
        # the id busy until the write's outcome is known, so that a retry sent meanwhile finds
        # the match instead of making another
        return await _uninterrupted(write(), "create-keyed", self._writes)

    async def _created_with(self, create_hash: str, digest: str) -> LiveMatch | None:
        """The match created with ``create_hash`` (held, or read from the store and held from
        now on), or None; CreateIdInUse when it was created by a request of another digest."""
        m = self._matches.get(self._created_ids.get(create_hash, ""))
        if m is None or m.create_hash != create_hash:
            try:
                found = await self._store.find_created(create_hash)
            except StoreError as exc:
                raise _store_unavailable("find_created", exc) from exc
            if found is None:
                return None
            try:
                m = await self._get(found[0])
            except MatchNotFound:  # pruned since
                return None
        if m.create_digest != digest:
            raise CreateIdInUse("this client_create_id was used for another request; use a fresh one")
        return m

    async def _create(self, request: CreateMatchRequest, terms: MatchTerms, create_hash: str = "",
                      digest: str = "", *, admin: bool = False) -> MatchSummary:
        """Count the new match of ``terms`` against the limits, write it and register it. A
        match of bots only is refused past ``max_bot_matches`` unless the admin creates it
        (tournaments, tests; the admin's count all the same), and so are unfinished matches every
        player of which has left (the takeover bot plays them on, GJ-12.4).

        Refused while draining, as :meth:`_exclusive` refuses a write: a create with a
        client_create_id awaited its id's look-up (and another call's create of that id) since
        create_match checked, and one that got here once the drain had begun wrote its match
        after the drain (answered as created by a service that had drained), or against the
        store close() was closing. From this check to the write's registration in ``_writes``
        there is no await."""
        self._require_running()
        # the limits count the matches being created too (their store write is in flight)
        unfinished = [m for m in self._matches.values() if not m.over]
        if len(unfinished) + sum(self._creating.values()) >= self.config.max_matches:
            raise LimitExceeded(f"this server holds its maximum of {self.config.max_matches} matches",
                                reason="MAX_MATCHES")
        if terms.has_open and (sum(m.status == "waiting" for m in unfinished) + self._creating["waiting"]
                               >= self.config.max_waiting_matches):
            raise LimitExceeded("too many matches are waiting for players", reason="MAX_WAITING_MATCHES")
        # a match created without an open seat is one of bots only (it starts active at once); so
        # is one every player of which has left for the takeover bot (GJ-12.4: it plays on to the
        # end), or joining and leaving Georgian Joker tables would get round the limit
        if not terms.has_open and not admin and (
                sum(all(s.kind == "bot" or s.left for s in m.seats) for m in unfinished)
                + self._creating["active"] >= self.config.max_bot_matches):
            raise LimitExceeded(f"this server plays at most {self.config.max_bot_matches} matches of bots only "
                                "at once", reason="MAX_BOT_MATCHES")

        record = terms.record(new_match_id(), time.time(), create_hash, digest)
        m = LiveMatch(record, terms.decks, [])
        self._creating[m.status] += 1  # with the limit check above: no await in between

        async def create() -> None:
            try:
                await self._writer.store_call(self._seating.create(m, record, terms.decks), "create_match")
            finally:
                self._creating[m.status] -= 1
            self._register(m)
            self.metrics.matches_created.labels(terms.game.id).inc()
            m.log.info("match_created", status=m.status, seats=[s.kind for s in m.seats],
                       bots=[s.bot for s in m.seats if s.bot], options=dict(terms.options.non_default()),
                       turn_time_s=terms.turn_time_s, reconnect_grace_s=terms.reconnect_grace_s,
                       spectators_allowed=m.spectators_allowed, listed=m.listed,
                       spectator_delay_actions=terms.spectator_delay_actions,
                       admin_decks=len(request.decks or ()), with_create_id=bool(create_hash))
            if m.active:
                self._clock.schedule(m)

        # a caller that goes away while the match is being written leaves it a match of this
        # server (registered, expired by the sweeper, counted by the limits), not a stored
        # orphan that only a restart would find
        await _uninterrupted(create(), f"create-{m.match_id}", self._writes)
        return m.summary()

    async def join_match(self, match_id: str, seat: int | None, player_name: str,
                         client_join_id: str = "") -> JoinResult:
        """Take a seat (api.MatchService.join_match). With a ``client_join_id`` the seat keeps
        the id's hash (durable with the seat, so it survives a restart), and a join whose
        answer was lost (UNAVAILABLE, a timeout, a crash after the seat was written) is retried
        safely: a join with that id gets the same seat back (:meth:`_join_again`)."""
        self._require_running()
        client_join_id = check_client_join_id(client_join_id)
        m = await self._get(match_id)
        name = clean_name(player_name or "", self.config.max_name_length, "the player name",
                           field="player_name")
        join_hash = join_id_hash(m.match_id, client_join_id) if client_join_id else ""

        async def locked() -> JoinResult:
            if m.over:
                raise MatchNotActive("the match is over")
            if seat is not None and (isinstance(seat, bool) or not isinstance(seat, int)
                                     or not 0 <= seat < m.num_seats):
                raise BadRequest(f"seat must be 0..{m.num_seats - 1}", reason="BAD_SEAT", field="seat")
            if join_hash:
                mine = next((s for s in m.seats if s.join_hash == join_hash and s.taken and not s.left), None)
                if mine is not None:
                    return await self._join_again(m, mine)
            if seat is None:
                free = m.open_seats()
                if not free:
                    raise SeatTaken("no open seat is left in this match")
                slot = free[0]
            else:
                slot = m.seats[seat]
                if slot.kind == "bot":
                    raise SeatTaken(f"seat {seat} is played by a bot")
                if slot.taken:
                    raise SeatTaken(f"seat {seat} is taken")
            token = new_token()
            digest = token_hash(token)
            rec = SeatRecord(slot.seat, "open", "", name, digest, time.time(), False, join_hash)
            if m.status == "waiting" and m.open_seats() == [slot]:
                # the last seat: taken and the match started by one write (Seating.activate)
                await self._seating.activate(
                    m, [rec if s is slot else s.record() for s in m.seats if s.kind == "open"])
                if slot.token_hash != digest:
                    # the store held a start of this match whose answer was lost (MatchNotWaiting):
                    # the match follows it, and this seat is that earlier join's
                    self._writer.presence(m, slot, "joined")
                    raise SeatTaken(f"seat {slot.seat} is taken")
            else:
                await self._writer.store_call(self._seating.save_seat(m, rec), "save_seat")
                self._seating.take_seat(m, slot, rec)
            m.log.info("seat_joined", seat=slot.seat, retry=False)
            self._writer.presence(m, slot, "joined")
            return JoinResult(match_id=m.match_id, seat=slot.seat, token=token)

        return await self._exclusive(m, locked)

    async def _join_again(self, m: LiveMatch, slot: SeatSlot) -> JoinResult:
        """A retried join (under the match's lock): its ``client_join_id`` took ``slot``, whose
        player has not left. The answer of that join was lost, and with it the token: the seat
        gets a new one exactly as ReissueSeatToken gives it (:meth:`_replace_token`: durable
        first, the previous token refused from now on, its streams ended with TOKEN_REVOKED),
        keeping its player, name and id. A match whose start is in doubt (every seat taken,
        still waiting: :meth:`.seating.Seating.activate`) is started first
        (:meth:`.seating.Seating.start_stalled`), whichever seat's player retried: the one
        whose join took the last seat, or any other. When it
        cannot be yet, the retry is UNAVAILABLE with nothing changed: the token was replaced
        before the start used to be tried, so that a retry answered UNAVAILABLE had revoked
        the token its player held for one it was never given (found by the seat lifecycle
        fuzz), and a player whose match then ended had no token for it."""
        key = slot.join_hash
        await self._seating.start_stalled(m, by="join_retry")
        if slot.join_hash != key or not slot.taken or slot.left:
            # the start followed the store, which holds the seat otherwise (Seating._follow_start)
            raise SeatTaken(f"seat {slot.seat} is taken")
        token = await self._replace_token(m, slot, slot.join_hash, "a retried JoinMatch of this seat")
        m.log.info("seat_joined", seat=slot.seat, retry=True)
        return JoinResult(match_id=m.match_id, seat=slot.seat, token=token, retry=True)

    async def _replace_token(self, m: LiveMatch, slot: SeatSlot, join_hash: str, by: str) -> str:
        """Give ``slot``'s player a new seat token (under the match's lock) and return it: the
        new hash is durable before the answer, so the new token survives a restart and the old
        one never works again; the old token's streams end with TOKEN_REVOKED (the seat is
        then absent until the player connects with the new token: the usual grace applies).
        ``join_hash``: the client join id the seat keeps ("": none from now on); ``by``: who
        replaced it, for the old token's streams."""
        token = new_token()
        digest = token_hash(token)
        await self._writer.store_call(
            self._seating.save_seat(m, replace(slot.record(), token_hash=digest, join_hash=join_hash)),
            "save_seat")
        self._tokens.pop(slot.token_hash, None)
        slot.token_hash, slot.join_hash = digest, join_hash
        self._tokens[digest] = (m.match_id, slot.seat)
        if self._streams.end_seat(m, slot, Unauthenticated(f"this seat token was replaced by {by}",
                                                           reason="TOKEN_REVOKED")):
            self._clock.disconnected(m, slot)  # absent until the player connects with the new token
        return token

    # ---- reading --------------------------------------------------------------------------

    async def get_view(self, match_id: str, principal: Principal) -> ViewEnvelope:
        self._require_open()
        m = await self._get(match_id)
        return m.envelope(audience_of(m, principal))

    async def get_match(self, match_id: str) -> MatchSummary:
        self._require_open()
        return (await self._get(match_id)).summary()

    def list_open_matches(self, game: str = "", limit: int = 50) -> list[MatchSummary]:
        """The first page of the lobby (:meth:`open_matches_page`)."""
        return list(self.open_matches_page(game, limit).matches)

    def open_matches_page(self, game: str = "", limit: int = 50, page_token: str = "") -> Page:
        """The lobby: matches created ``listed`` that wait for players and have a seat free,
        oldest first (the table waiting longest fills first; by each table's place,
        :meth:`_lobby_key`), at most ``limit`` (1..100) a page, after the place ``page_token``
        ends at (paging.py: keyset, so a match created meanwhile comes on a later page and
        none is listed twice or skipped).
        Every waiting match is held in memory (start() resumes them), so this reads no store,
        and only the listed ones are looked at (``_lobby``); a summary holds only what any
        caller may know (GetMatch gives the same)."""
        self._require_open()
        if game:
            get_game(game)
        after = decode_page_token(page_token, "lobby", {"game": game})
        limit = max(1, min(int(limit or 50), 100))
        for match_id in [i for i, (_, m) in self._lobby.items() if m.status != "waiting"]:
            del self._lobby[match_id]  # a match never waits again once it has started or ended
        open_tables = [(key, m) for key, m in self._lobby.values()
                       if (not game or m.game.id == game) and m.open_seats() and (after is None or key > after)]
        open_tables.sort(key=lambda table: table[0])
        page = open_tables[:limit]
        token = encode_page_token("lobby", {"game": game}, *page[-1][0]) if len(open_tables) > limit else ""
        return Page([m.summary() for _, m in page], token)

    async def list_matches(self, status: str = "", game: str = "", limit: int = 100) -> list[MatchSummary]:
        """The first page of the admin's listing (:meth:`matches_page`)."""
        return list((await self.matches_page(status, game, limit)).matches)

    async def matches_page(self, status: str = "", game: str = "", limit: int = 100, page_token: str = "") -> Page:
        """The admin's listing, newest first, ``limit`` (1..1000) store rows a page, after the
        match ``page_token`` ends at (paging.py). One row more than the page is read to know
        whether another page follows; the next token is the page's last store row, so a
        match dropped by the status check below still moves the listing on (no row is read
        twice nor skipped when nothing changes; a page may then hold fewer than ``limit``)."""
        self._require_open()
        if status and status not in STATUSES:
            raise BadRequest(f"unknown status {status!r}; allowed: {', '.join(STATUSES)}", reason="BAD_STATUS")
        if game:
            get_game(game)
        filters = {"status": status, "game": game}
        after = decode_page_token(page_token, "matches", filters)
        limit = max(1, min(int(limit or 100), 1000))
        try:
            listings = await self._store.list_matches([status] if status else (), game, limit + 1, after=after)
        except StoreError as exc:
            raise _store_unavailable("list_matches", exc) from exc
        more, listings = len(listings) > limit, listings[:limit]
        token = ""
        if more and listings:
            last = listings[-1].record
            token = encode_page_token("matches", filters, last.created_at, last.match_id)
        summaries = [self._matches[li.record.match_id].summary(live=True) if li.record.match_id in self._matches
                     else _summary_of(li) for li in listings]
        # The store filtered its rows, but a match held in memory is summarised as it is now:
        # one that changed state since (it started, ended or was terminated while the store
        # was read) would be listed under a status it no longer has. The summary is what the
        # caller sees, so the filter applies to it.
        return Page([s for s in summaries if not status or s.status == status], token)

    async def reveal_deals(self, match_id: str, principal: Principal) -> list[DealReveal]:
        """Every deal's commitment opened for the cards the table saw (never the others:
        KL-2.10, JJ-2.8, JJK-9.7), for whoever may view the match (a seat, a spectator where
        allowed, the admin), once it is over: before that MatchNotOver, so that nobody learns
        a card early (docs/api.md, "Fair dealing")."""
        self._require_open()
        m = await self._get(match_id)
        audience_of(m, principal)  # who may not view the match may not see its decks
        if not m.over:
            raise MatchNotOver("the decks are revealed once the match is over")
        if m.shown is None:  # a replay of the match: off the event loop, once
            m.shown = await asyncio.to_thread(m.shown_cards)
        return m.reveals()

    async def inspect_match(self, match_id: str) -> Inspection:
        """The summary and the omniscient view (every hand and zone, the first dealer and
        every deck), read together: nothing awaits between them, so both show one seq."""
        self._require_open()
        m = await self._get(match_id)
        env = m.envelope(ADMIN)
        view = dict(env.view)
        view["first_dealer"] = m.first_dealer
        view["decks"] = [list(m.decks[d].cards) for d in sorted(m.decks)]
        view["seats"] = m.presence()
        return Inspection(m.summary(live=True), replace(env, view=view))

    async def export_transcript(self, match_id: str) -> dict[str, Any]:
        """The match as a card-transcript/1 object (decks included: admin only)."""
        self._require_open()
        m = await self._get(match_id)
        state, _ = m.fold(m.seq)
        return transcript.export(state)

    # ---- acting ---------------------------------------------------------------------------

    async def submit_action(self, match_id: str, principal: Principal, action: str,
                            expected_seq: int | None, client_action_id: str = "") -> SubmitResult:
        self._require_running()
        seat = acting_seat(principal, match_id)
        m = await self._get(match_id)

        async def locked() -> SubmitResult:
            require_current_token(m, principal)
            return await self._actions.submit(m, seat, action, expected_seq, client_action_id)

        return await self._exclusive(m, locked)

    async def leave_match(self, match_id: str, principal: Principal, resign: bool) -> MatchSummary:
        """Leave a seat. While the match waits for players the seat becomes free again (the
        token stops working). Once it has started, leaving counts as resigning whatever
        ``resign`` says (JJK-10.1, JJK-8.4, GJ-12.4): a two-player match ends and the opponent wins;
        in a four-player match a bot plays the seat to the end and the result lists it under
        ``abandoned``.

        A repeated leave (a retry whose first answer was lost) is answered as the first was:
        when the seat's own leave already took effect (:func:`left_already`: the match ended
        by this seat's resignation, or the seat left a four-player match, which went on), the
        answer is the match's summary as it stands now and nothing changes (no event, no seq,
        no metric; logged ``leave_repeated``). Derived from the match's durable record (its
        result, the seat's ``left``), so a retry after a restart is answered so too. A leave
        of a waiting match frees the seat and voids its token; the match remembers the
        token's hash with the answer (``LiveMatch.freed_tokens``), so that a retry with that
        token gets the same answer (:meth:`repeated_leave`; here, for a retry that was
        authenticated before the first leave voided the token and waited for the lock)."""
        self._require_running()
        seat = acting_seat(principal, match_id)
        m = await self._get(match_id)

        async def locked() -> MatchSummary:
            freed = m.freed_tokens.get(principal.token_hash or "")
            if freed is not None:
                m.log.info("leave_repeated", seat=freed[0], resign=resign, status=m.status, freed=True)
                return freed[1]
            require_current_token(m, principal)
            slot = m.seats[seat]
            # the end of an earlier leave (a resignation) answered with an error, if it was in
            # doubt, is settled already (_exclusive): a retry of that leave sees its end here
            if left_already(m, seat):
                m.log.info("leave_repeated", seat=seat, resign=resign, status=m.status,
                           outcome=(m.result or {}).get("outcome"))
                return m.summary()
            if m.over:
                raise MatchNotActive("the match is over")
            # (a seat that left, slot.left, was answered above: left_already)
            # Every seat taken and still waiting: the last join's start may be in the store
            # (Seating.activate). Freeing a seat of a match stored as started would leave the store
            # inconsistent, so the start is settled first (UNAVAILABLE while it cannot be),
            # and leaving the started match is resigning, as it would be a moment later.
            await self._seating.start_stalled(m, by="leave")
            if m.status == "waiting":
                await self._writer.store_call(self._seating.save_seat(m, SeatRecord(seat)), "save_seat")
                self._tokens.pop(slot.token_hash, None)
                freed_hash = slot.token_hash
                # free again: its client join id no longer matches (a retry would take it again)
                slot.player_name, slot.token_hash, slot.joined_at, slot.join_hash = "", "", None, ""
                # its streams end; no "disconnected" after the "left": the freed seat has no
                # player whose grace could start (MatchClock.disconnected)
                self._streams.end_seat(m, slot, PermissionDenied("you left this match", reason="SEAT_LEFT"))
                m.log.info("seat_left", seat=seat, resign=resign)
                self._writer.presence(m, slot, "left")
                answer = m.summary()
                m.freed_tokens[freed_hash] = (seat, answer)
                while len(m.freed_tokens) > FREED_TOKENS_KEPT:
                    del m.freed_tokens[next(iter(m.freed_tokens))]
                return answer
            elif m.policy == FORFEIT:
                m.log.info("seat_resigned", seat=seat)
                await self._writer.end(m, "resigned", winners=[s.seat for s in m.seats if s.seat != seat],
                                       resigned=seat)
            else:
                await self._writer.store_call(self._seating.save_seat(m, replace(slot.record(), left=True)),
                                              "save_seat")
                slot.left = True
                self._clock.cancel_grace(slot)
                # its streams end; no "disconnected" after the "left": the takeover bot plays
                # the seat now (GJ-12.4; MatchClock.disconnected ignores a seat that left)
                self._streams.end_seat(m, slot, PermissionDenied("you left this match", reason="SEAT_LEFT"))
                m.log.info("seat_resigned", seat=seat)
                # first: the event carries the clock of the takeover bot's seat (none), not
                # the deadline of the decision the player left behind (test_presence_deadline)
                self._clock.schedule(m)
                self._writer.presence(m, slot, "left")
            return m.summary()

        return await self._exclusive(m, locked)

    def repeated_leave(self, match_id: str, token: str) -> MatchSummary | None:
        """The answer to a LeaveMatch whose seat token is unknown because a leave with it
        already freed its seat in the waiting match ``match_id``: the summary that first leave
        answered, or None (then the call's own UNAUTHENTICATED stands, unchanged).

        Why: a leave whose answer was lost (a dropped connection, a deadline) is retried with
        the same token, which the leave voided; refused as unknown, the retry told a player who
        had left that the leave failed. The first answer is given again, as it was: the token
        no longer opens the match, so it learns nothing that happened since (who joined, the
        start). Only a token that held a seat of this match and was voided by its own leave
        gets it; any other token (made up, another match's, one the operator or a retried join
        replaced) gets None, so its error is the one it got before. In memory, kept while the
        match is held (``LiveMatch.freed_tokens``: the latest few); after a restart the retry
        is UNAUTHENTICATED again, as the seat's own leave answers it nowhere in the store.
        Changes nothing; logged ``leave_repeated`` (``freed``) as the other repeats. Never an
        error of its own, not even once the manager is closed (a read of memory): a made-up
        token's error must stay the one it would have had, not become UNAVAILABLE."""
        m = self._matches.get(match_id)
        if m is None or not token:
            return None
        freed = m.freed_tokens.get(token_hash(token))
        if freed is None:
            return None
        m.log.info("leave_repeated", seat=freed[0], status=m.status, freed=True)
        return freed[1]

    async def terminate_match(self, match_id: str, reason: str) -> MatchSummary:
        self._require_running()
        m = await self._get(match_id)
        reason = (clean_name(reason or "", 200, "the reason", "BAD_TERMINATE_REASON", "reason")
                  or "terminated by the admin")  # blank: the default, not an empty reason

        async def locked() -> MatchSummary:
            if m.over:
                raise MatchNotActive("the match is over")
            # Every seat taken and still waiting: the last join's start may be in the store
            # (Seating.activate), with the first deck. Ended as it stands in memory, the match would
            # stay unstarted there and started in the store (the deck, the status before the
            # end), so the start is settled first, as leave_match settles it.
            await self._seating.start_stalled(m, by="terminate")
            await self._writer.end(m, "terminated", winners=[], reason=reason)
            return m.summary()

        return await self._exclusive(m, locked)

    async def reissue_seat_token(self, match_id: str, seat: int) -> tuple[JoinResult, MatchSummary]:
        """Admin: replace a player's seat token (api.MatchService.reissue_seat_token,
        :meth:`_replace_token`). The seat's client join id stops matching: the operator's new
        token is its only proof from now on (a leaked token may have leaked with its id)."""
        self._require_running()
        m = await self._get(match_id)

        async def locked() -> tuple[JoinResult, MatchSummary]:
            if m.over:
                raise MatchNotActive("the match is over")
            if isinstance(seat, bool) or not isinstance(seat, int) or not 0 <= seat < m.num_seats:
                raise BadRequest(f"seat must be 0..{m.num_seats - 1}", reason="BAD_SEAT", field="seat")
            slot = m.seats[seat]
            if slot.kind == "bot":
                raise FailedPrecondition(f"seat {seat} is played by a bot: it has no token",
                                         reason="BOT_SEAT")
            if not slot.taken:
                raise FailedPrecondition(f"seat {seat} is open: a player takes it with JoinMatch",
                                         reason="SEAT_OPEN")
            if slot.left:
                raise FailedPrecondition(f"the player of seat {seat} left the match",
                                         reason="SEAT_LEFT")
            token = await self._replace_token(m, slot, "", "the operator")
            m.log.info("seat_token_reissued", seat=seat)
            return JoinResult(match_id=m.match_id, seat=seat, token=token), m.summary(live=True)

        return await self._exclusive(m, locked)

    # ---- watching -------------------------------------------------------------------------

    def watch(self, match_id: str, principal: Principal, after_seq: int) -> AsyncIterator[MatchEvent]:
        """Events after ``after_seq``, then live ones (:meth:`.streams.WatchStreams.watch`).
        Consume it with ``contextlib.aclosing`` so that presence ends with the stream."""
        return self._streams.watch(match_id, principal, after_seq)

    # ---- housekeeping ---------------------------------------------------------------------

    async def _sweep(self, interval: float) -> None:
        """The sweeper: a pass of :meth:`.housekeeping.Housekeeping.sweep_once` every
        ``interval`` seconds. The loop is the manager's, whose task it is (and bench/soak.py's
        probe finds the manager as this coroutine's ``self``)."""
        while True:
            await asyncio.sleep(interval)
            try:
                await self._housekeeping.sweep_once()  # its locals (the last match looked at) end with it
            except Exception as exc:  # housekeeping must outlive a bug in one pass
                log.error("sweep_failed", error=str(exc), error_type=type(exc).__name__)

    async def _prune_periodically(self) -> None:
        """Retention: a pass of :meth:`prune_finished` at start-up, then every
        ``prune_interval_s``; a failed pass is logged and the next one runs as planned."""
        while True:
            try:
                await self.prune_finished()
            except Exception as exc:  # StoreError, or a bug: housekeeping outlives it
                log.error("prune_failed", error=str(exc), error_type=type(exc).__name__)
            await asyncio.sleep(self.config.prune_interval_s)

    async def prune_finished(self, ended_before: float | None = None) -> PruneCounts:
        """Delete from the store the matches that ended before ``ended_before`` (Unix time;
        default: ``keep_finished_days`` ago), in batches, and forget those still held in
        memory (:meth:`.housekeeping.Housekeeping.prune_finished`). Returns what was deleted."""
        return await self._housekeeping.prune_finished(ended_before)

    def evict_finished(self) -> int:
        """Evict every finished match without watchers and without a retry series under way
        now (operations, tests: :meth:`.housekeeping.Housekeeping.evict_finished`). Returns
        how many were evicted."""
        return self._housekeeping.evict_finished()

    # ---- internals: bookkeeping -----------------------------------------------------------

    def _spawn(self, coro: Awaitable[Any], name: str) -> asyncio.Task:
        """A background task of the sessions (a bot move, a timeout, a grace expiry): it runs in
        a context of its own, so its log lines never carry the fields (rpc, seat...) of the
        request that happened to arm it."""
        task = asyncio.get_running_loop().create_task(coro, name=name,  # type: ignore[arg-type]
                                                      context=contextvars.Context())
        self._tasks.add(task)
        task.add_done_callback(self._task_done)
        return task

    def _task_done(self, task: asyncio.Task) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            exc = task.exception()
            log.error("session_task_failed", task=task.get_name(), error=str(exc),
                      error_type=type(exc).__name__)

    def _register(self, m: LiveMatch) -> None:
        self._matches[m.match_id] = m
        if m.create_hash:
            self._created_ids[m.create_hash] = m.match_id
        if m.listed and m.status == "waiting":
            self._lobby[m.match_id] = (self._lobby_key(m), m)
        for slot in m.seats:
            if slot.token_hash:
                self._tokens[slot.token_hash] = (m.match_id, slot.seat)
        if not m.over:
            self.metrics.matches_active.labels(m.game.id, m.status).inc()

    def _lobby_key(self, m: LiveMatch) -> tuple[float, str]:
        """The place of a table joining the lobby: its order and its page cursor. Its creation
        time, unless a table already there has that time or a later one: then just after the
        latest. A creation's time is taken before its store write, and writes may return in
        any order (a PostgreSQL pool): a table written after a newer one would join the lobby
        behind a cursor already past it and be listed on no later page. Placed last, it comes
        on a later page, as docs/api.md says ("it is the newest"). Resumed tables join in
        creation order, so their places are their creation times."""
        at = max(m.created_at, math.nextafter(self._lobby_last, math.inf))
        self._lobby_last = at
        return at, m.match_id

    def _unregister(self, m: LiveMatch) -> None:
        self._matches.pop(m.match_id, None)
        for slot in m.seats:  # the heartbeat's index must not keep it alive
            self._clock.running.pop((m.match_id, slot.seat), None)
        if m.create_hash and self._created_ids.get(m.create_hash) == m.match_id:
            del self._created_ids[m.create_hash]
        self._lobby.pop(m.match_id, None)
        for slot in m.seats:
            if slot.token_hash and self._tokens.get(slot.token_hash, (None,))[0] == m.match_id:
                del self._tokens[slot.token_hash]

    async def _get(self, match_id: str) -> LiveMatch:
        m = self._matches.get(match_id)
        if m is not None:
            return m
        # An id no match can have is not looked up: PostgreSQL refuses a NUL in a text
        # parameter, and GetMatch("a\x00b") was UNAVAILABLE / STORE_UNAVAILABLE (a client
        # retries that) and logged a store failure, where SQLite says NOT_FOUND.
        if (not isinstance(match_id, str) or not match_id or len(match_id) > MAX_MATCH_ID_LENGTH
                or not match_id.isprintable()):
            raise MatchNotFound("no such match")
        async with self._load_lock:
            m = self._matches.get(match_id)
            if m is None:
                try:
                    m = await self._load(match_id)
                except CorruptLog as exc:
                    log.error("match_load_failed", match_id=match_id, error=str(exc))
                    raise SessionError("the match cannot be loaded", reason="MATCH_CORRUPT") from exc
                except StoreError as exc:
                    raise _store_unavailable("load_match", exc) from exc
                if m is not None and not m.over:
                    # unfinished but not resumed by start() (the store could not be read then)
                    self.metrics.matches_resumed.labels(m.game.id).inc()
                    m.log.info("match_resumed", seq=m.seq, status=m.status)
                    self._rearm(m, asyncio.get_running_loop().time())
        if m is None:
            raise MatchNotFound("no such match")
        return m

    async def _load(self, match_id: str) -> LiveMatch | None:
        """Rebuild a match from the store and register it (None: unknown)."""
        stored: StoredMatch | None = await self._store.load_match(match_id)
        if stored is None:
            return None
        m = LiveMatch(stored.record, list(stored.decks), list(stored.actions), self.config.max_match_deals)
        if m.status == "waiting" and not m.open_seats():
            # the last seat was written and the match not started: an older version, which
            # wrote a start in three writes, stopped between them (this one writes it in one).
            # Start it as the join would have, or it would wait with no open seat until the
            # waiting timeout abandoned it
            await self._seating.start(m)
        if m.active and not self._writer.past_deal_limit(m):
            # a deal was due when the process stopped and its deck was never written (or the
            # last seat was taken just before: Seating.activate); not the deal past the deal
            # limit, which is never dealt (the match ends below)
            await self._seating.deal_due(m)
        if not m.over and m.state.is_over():
            # the last action was written but not the status: derive the end again
            result = self._writer.result(m, "completed")
            await self._store.set_status(m.match_id, "finished", result, time.time(), m.deal_commitments())
            m.status, m.result, m.ended_at = "finished", result, time.time()
            m.spectators_seen = m.seq  # nothing is withheld from spectators after the end
            self.metrics.matches_finished.labels(m.game.id, "completed").inc()
        if m.over:
            m.finished_mono = asyncio.get_running_loop().time()
        self._register(m)
        if self._writer.past_deal_limit(m):
            # the limit was lowered, or a version before 2026-12-05 (which wrote the end apart
            # from the action that reached max_match_deals) stopped between the two writes:
            # end it now, as it would have been, rather than let the deal past the limit be played.
            # This version writes that end with the action (MatchWriter.apply): a higher limit
            # does not let such a match go on
            async with m.lock:
                await self._writer.end_at_deal_limit(m)
        return m

    async def _exclusive(self, m: LiveMatch, fn: Callable[[], Awaitable[T]]) -> T:
        """Run ``fn`` under the match's lock in a task of its own that the caller's
        cancellation cannot interrupt: a client that goes away while its action is being
        written leaves the match exactly as if it had stayed (the write completes, the
        match's state follows it, watchers see it; a retry with the same client_action_id
        gets the result).

        Refused while draining: a caller that passed its own check before the drain began and
        then awaited (reading the match from the store) must not write now (see :meth:`drain`).
        From the check to the task's registration in ``_writes`` there is no await.

        What an earlier write left in doubt (an end, an action) is settled first
        (:meth:`.writer.MatchWriter.settle`; UNAVAILABLE while it cannot be): ``fn`` then
        sees the match as the store has it."""
        if self._draining:
            raise Unavailable("the service is shutting down", reason="DRAINING")

        async def run() -> T:
            async with m.lock:
                if m.in_doubt:
                    await self._writer.settle(m)
                return await fn()
        return await _uninterrupted(run(), f"write-{m.match_id}", self._writes)

    def _require_open(self) -> None:
        if self._closed:
            raise Unavailable("the service is shut down", reason="DRAINING")
        if not self._started:
            raise Unavailable("the service is starting", reason="NOT_STARTED")

    def _require_running(self) -> None:
        self._require_open()
        if self._draining:
            raise Unavailable("the service is shutting down", reason="DRAINING")

    # ---- diagnostics ----------------------------------------------------------------------

    def match_ids(self) -> list[str]:
        """Ids of the matches held in memory."""
        return list(self._matches)

    def state_of(self, match_id: str):
        """The live rules state of a match held in memory (tests and admin tools only: it is
        omniscient)."""
        return self._matches[match_id].state


async def _uninterrupted(coro: Awaitable[T], name: str, track: set[asyncio.Task] | None = None) -> T:
    """Await ``coro`` in a task of its own that the caller's cancellation cannot interrupt
    (the caller still gets CancelledError; the task runs to its end). ``track``: a set that
    holds the task until it ends (the manager's drain waits for them)."""
    task = asyncio.get_running_loop().create_task(coro, name=name)  # type: ignore[arg-type]
    task.add_done_callback(_consume_result)
    if track is not None:
        track.add(task)
        task.add_done_callback(track.discard)
    return await asyncio.shield(task)


def _consume_result(task: asyncio.Task) -> None:
    """The outcome of a write whose caller went away is nobody's to read: retrieve it so that
    asyncio does not report it as lost (rules and session errors are normal answers)."""
    if not task.cancelled():
        exc = task.exception()
        if exc is not None and not isinstance(exc, (SessionError, RulesError)):
            log.error("session_write_failed", error=str(exc), error_type=type(exc).__name__)


def _store_unavailable(operation: str, exc: StoreError) -> Unavailable:
    """A failed store read, as the caller sees it: retryable, like a failed write (the store's
    own message stays in the log)."""
    log.error("store_read_failed", operation=operation, error=str(exc), error_type=type(exc).__name__)
    return Unavailable("the match store cannot be read now; try again", reason="STORE_UNAVAILABLE")


def _summary_of(listing: MatchListing) -> MatchSummary:
    r = listing.record
    return MatchSummary(
        match_id=r.match_id, game=r.game, options=dict(r.options), status=r.status,  # type: ignore[arg-type]
        seq=listing.seq,
        seats=tuple(SeatSlot.from_record(s).info(r.takeover_bot) for s in r.seats),  # no stream open
        turn_time_s=r.turn_time_s, spectators_allowed=r.spectators_allowed, created_at=r.created_at,
        name=r.name, result=dict(r.result) if r.result is not None else None, listed=r.listed,
        deal_commitments=r.deal_commitments, spectator_delay_actions=r.spectator_delay_actions)

