"""The durable seat-and-start writes of a match and their recovery: :class:`Seating`, a
collaborator that :class:`~.manager.MatchManager` builds and wires in its ``__init__`` (as it
does :class:`~.clock.MatchClock` and :class:`~.writer.MatchWriter`).

It owns writing one seat (a join, a leave, a new token: :meth:`Seating.save_seat`), starting
a match whose last seat is taken in one write of its seats, its first deck and its status
(:meth:`Seating.activate`, :meth:`Seating.start`), dealing a deck that is due, and recovering
from the writes whose outcome is not known, a match's creation among them
(:meth:`Seating.create`).

Why a module of its own: the in-doubt write model. A write answered with an error may have
landed all the same (PostgreSQL: the connection dropped after the COMMIT reached the server),
so an error is never taken at its word: the match is read back from the store, and the
memory follows what the store holds (the write happened; it did not; or an earlier write, or
an end, landed whose answer was lost: :meth:`Seating._follow_start`,
:meth:`Seating._follow_end`). When the read-back fails too, nobody can tell: a seat's row is
written again as the memory holds it until it is (:meth:`Seating._resync_seat`), and a start
in doubt (:class:`_StartInDoubt`) keeps the match waiting with every seat taken and is
retried (:meth:`Seating._retry_start`, the manager's sweeper, a retried join, a leave or a
TerminateMatch: :meth:`Seating.start_stalled`) until a start settles it. An end in doubt
(:meth:`~.writer.MatchWriter.settle_end`, the writer's) is settled by the same kind of
series (:meth:`Seating.settle_end_soon`), and so is an action whose append was answered with
an error (:meth:`~.writer.MatchWriter.settle_log`).

Every method that changes a match runs under the match's lock (the manager's requests, or
its ``exclusive`` for the retries). The public entry points (JoinMatch, LeaveMatch,
TerminateMatch, ReissueSeatToken, loading a match, the sweeper) stay in the manager and call
in here.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any, Awaitable, Callable, Sequence

import structlog

from ..observability.metrics import Metrics
from ..rules.game import CHANCE
from ..store import Store, StoreError
from ..store.base import FINISHED, DeckRecord, MatchRecord, SeatRecord, StoredMatch
from .api import MatchNotActive, SessionError, Unavailable
from .chance import random_deck_record
from .clock import MatchClock
from .match import LiveMatch, SeatSlot
from .writer import MatchWriter

log = structlog.get_logger("engine_service.sessions")

#: A start whose outcome is not known (:class:`_StartInDoubt`) is tried again after this
#: long, then after twice as long each time, up to the sweeper's interval.
START_RETRY_FIRST_S = 0.5


class _StartInDoubt(StoreError):
    """A start's write failed and reading the match back failed too: the store may hold the
    match started or not (:meth:`Seating.activate` says what is done meanwhile)."""


class Seating:
    """Seats and starts a match durably, and recovers the writes whose outcome is not known.
    See the module docstring.

    It gets what it needs from the manager explicitly rather than the manager itself:
    ``store``, ``metrics``, ``writer`` (store calls, presence events, the end of a match),
    ``clock`` (grace windows and turn timers once a match starts), ``tokens`` (the manager's
    map of seat token hash to (match id, seat), shared and changed in place), ``spawn`` (a
    background task of the sessions), ``exclusive`` (run a function under a match's lock, as
    an accepted write the drain waits for), ``held`` (the match registered under an id, None
    if none: a retry ends when its match is no longer held), ``loading`` (the lock under which
    a match is read from the store and registered), ``draining`` (whether the
    service is shutting down: no retry starts or goes on then) and ``sweep_interval`` (the
    sweeper's interval, set when the manager starts: the retries back off up to it).

    ``start_retries`` (match id -> its retries: :meth:`_retry_start`), ``seat_resyncs``
    ((match id, seat) -> its rewrites: :meth:`_resync_seat`), ``end_settlements`` (match id
    -> :meth:`settle_end_soon`), ``status_writes`` (match id -> :meth:`write_status_soon`)
    and ``create_checks`` (match id -> its read-backs: :meth:`_abandon_unacknowledged`) are
    the series under way."""

    def __init__(self, store: Store, metrics: Metrics, writer: MatchWriter, clock: MatchClock,
                 tokens: dict[str, tuple[str, int]], *,
                 spawn: Callable[[Awaitable[Any], str], asyncio.Task],
                 exclusive: Callable[[LiveMatch, Callable[[], Awaitable[Any]]], Awaitable[Any]],
                 held: Callable[[str], LiveMatch | None], loading: asyncio.Lock,
                 draining: Callable[[], bool], sweep_interval: Callable[[], float]) -> None:
        self._store = store
        self._metrics = metrics
        self._writer = writer
        self._clock = clock
        self._tokens = tokens
        self._spawn = spawn
        self._exclusive = exclusive
        self._held = held
        self._loading = loading
        self._draining = draining
        self._sweep_interval = sweep_interval
        self.start_retries: dict[str, asyncio.Task] = {}  # match id -> its retries (_retry_start)
        self.seat_resyncs: dict[tuple[str, int], asyncio.Task] = {}  # (match id, seat) -> _resync_seat
        self.end_settlements: dict[str, asyncio.Task] = {}  # match id -> settle_end_soon
        self.status_writes: dict[str, asyncio.Task] = {}  # match id -> write_status_soon
        self.create_checks: dict[str, asyncio.Task] = {}  # match id -> _abandon_unacknowledged

    async def create(self, m: LiveMatch, record: MatchRecord, decks: Sequence[DeckRecord]) -> None:
        """Write the new match ``m`` (``record`` and its first ``decks``); the caller registers
        it once this returns. A StoreError means the match was not created, or may have been.

        A create answered with an error may be durable all the same, so the match is read
        back: found with this ``created_at`` (unique to this call), it was created and the
        caller goes on as after an answer (logged ``match_create_found_in_store``); not found,
        the StoreError stands. Without the read-back, a creation that landed lived on in the
        store, unknown to this process, while its creator was told it had failed and never
        learned its id: resumed at the next start, waiting for players nobody sent, or played
        by its bots for nobody. When the read fails too, nobody can tell: the StoreError
        stands, and the match is read back later until the store answers, then ended if it is
        there (:meth:`_abandon_unacknowledged`)."""
        try:
            await self._store.create_match(record, decks)
            return
        except StoreError as failed:
            try:
                stored = await self._store.load_match(record.match_id)
            except StoreError:
                self._abandon_unacknowledged(m)
                raise failed from None
            if stored is None or stored.record.created_at != record.created_at:
                raise failed
            m.log.warning("match_create_found_in_store", status=record.status)

    def _abandon_unacknowledged(self, m: LiveMatch) -> None:
        """Read back the match ``m`` whose creation nobody could tell (:meth:`create`), after
        :data:`START_RETRY_FIRST_S`, doubling up to the sweeper's interval, until the store
        answers; not there, nothing was created; there, it ends (status ``finished``, outcome
        ``abandoned``, reason ``create_unacknowledged``, logged ``match_create_abandoned``) as
        the waiting timeout ends a table: its creator was answered UNAVAILABLE. The series
        stops with the drain. It also stops when the match is held by then: read by its id
        (the admin's ListMatches lists it), it is a match of this server like any other.

        If the process stops first, the next start resumes the match from the store like any
        unfinished one and nothing ends it for being unacknowledged: a table waiting for
        players is ended by the waiting timeout (``waiting_timeout_s``; never when 0) unless
        players fill it (a ``listed`` one is in the lobby), a table of bots plays to its end."""
        async def check() -> None:
            async with self._loading:  # no read of the match by its id registers it meanwhile
                if self._held(m.match_id) is not None:
                    return
                stored = await self._store.load_match(m.match_id)
                if stored is None or stored.record.created_at != m.created_at:
                    return
                if stored.record.status not in FINISHED:  # else: this series' own write landed
                    result = self._writer.result(m, "abandoned", [], reason="create_unacknowledged")
                    await self._store.set_status(m.match_id, "finished", result, time.time(),
                                                 m.deal_commitments())
                m.log.warning("match_create_abandoned", status=stored.record.status)

        self._retry(self.create_checks, m.match_id, m, check, f"create-check-{m.match_id}",
                    lambda error, delay: log.error("match_create_check_failed", match_id=m.match_id,
                                                   error=error, retry_in_s=delay),
                    going_on=lambda: True)  # the match is not held: check() sees to that

    async def save_seat(self, m: LiveMatch, rec: SeatRecord) -> None:
        """Write one seat of ``m`` (under its lock: a join, a leave, a new token); the caller
        changes the seat in memory once this returns. A StoreError means the write did not
        happen, or may not have.

        A write answered with an error may be durable all the same (PostgreSQL: the
        connection dropped after the COMMIT), so the seat is read back, as a start is
        (:meth:`start`): the store holds ``rec``, it happened (logged
        ``seat_write_found_in_store``) and the caller goes on as after an answer; the store
        holds the seat as before, it did not and the StoreError stands. When the read fails
        too, nobody can tell: the StoreError stands (the seat stays in memory as it was) and
        the seat's row is written again as the memory holds it (:meth:`_resync_seat`). A
        seat written but answered with an error used to stay so in the store while the memory
        kept the seat as before: a new token nobody had been given (ReissueSeatToken, a
        retried join) in place of the one its player held, a player who left still seated, a
        seat taken by a join answered UNAVAILABLE; unless a later write of the seat (a retry,
        another join, the start) replaced it, the match read back after its end or a restart
        was not the one served (found by the seat lifecycle fuzz)."""
        try:
            await self._store.save_seat(m.match_id, rec)
            return
        except StoreError as failed:
            try:
                stored = await self._store.load_match(m.match_id)
            except StoreError:
                self._resync_seat(m, rec.seat)
                raise failed
            held = stored.record.seats[rec.seat] if stored is not None else None
            if held == rec:
                m.log.warning("seat_write_found_in_store", seat=rec.seat)
                return
            if held is not None and held != m.seats[rec.seat].record():
                self._resync_seat(m, rec.seat)  # neither: an earlier write's in doubt
            raise failed

    def _resync_seat(self, m: LiveMatch, seat: int) -> None:
        """Write ``seat``'s row again as the memory holds it, soon and until it is written
        (:meth:`_retry`): a write of it whose outcome nobody could tell (:meth:`save_seat`)
        may have changed it in the store. One series per seat."""
        async def write() -> None:
            await self._writer.store_call(self._store.save_seat(m.match_id, m.seats[seat].record()),
                                          "save_seat")
            m.log.info("seat_resynced", seat=seat)

        self._retry(self.seat_resyncs, (m.match_id, seat), m, write, f"seat-resync-{m.match_id}-{seat}",
                    lambda error, delay: log.error("seat_resync_failed", match_id=m.match_id, seat=seat,
                                                   error=error, retry_in_s=delay))

    def _resyncing(self, m: LiveMatch, seat: int) -> bool:
        """Whether ``seat``'s row is to be written again as the memory holds it
        (:meth:`_resync_seat`): what the store holds of it may be a write whose request was
        answered UNAVAILABLE (a new token never given, a seat taken by a join that failed), so
        a start or an end found in the store (:meth:`_follow_start`, :meth:`_follow_end`) does
        not take it from there: it did so, and a player lost the token it held to one nobody
        was given (found by the seat lifecycle fuzz)."""
        return (m.match_id, seat) in self.seat_resyncs

    def busy(self, match_id: str) -> bool:
        """Whether a series of the match is under way (its end or an action in doubt, its
        status to write, a seat's row to write again): an ended match stays in memory until it
        is over (:meth:`~.housekeeping.Housekeeping.sweep_once`), since a series ends with its
        match's eviction. It did not: an ended match was evicted with a seat write in doubt (a
        token reissued nobody was given), its rewrite stopped, and the store kept that token
        while the player's own was refused once the match was read back (found by the play
        fuzz). A start retry series (:meth:`_retry_start`) does not count: it has work only
        while its match waits, and only ended matches are asked about (the sweeper's and
        ``evict_finished``'s evictions); it used to keep an ended match from eviction until
        it woke from its backoff, up to the sweeper's interval later."""
        return (match_id in self.end_settlements or match_id in self.status_writes
                or any(key[0] == match_id for key in self.seat_resyncs))

    def write_status_soon(self, m: LiveMatch) -> None:
        """Write the status (finished, or terminated at the deal limit; its result and end
        time) of a match its last action ended, whose status write failed
        (:meth:`.writer.MatchWriter._store_end`),
        soon and until it is written (:meth:`_retry`; ``match_status_written`` once done,
        ``match_status_write_failed`` while the store fails). One series per match."""
        async def write() -> None:
            await self._writer.store_call(self._store.set_status(
                m.match_id, m.status, m.result, m.ended_at, m.deal_commitments()), "set_status")
            m.log.info("match_status_written", status=m.status)

        self._retry(self.status_writes, m.match_id, m, write, f"status-write-{m.match_id}",
                    lambda error, delay: log.error("match_status_write_failed", match_id=m.match_id,
                                                   error=error, retry_in_s=delay))

    def settle_end_soon(self, m: LiveMatch) -> None:
        """Settle what a write left in doubt, an end (:meth:`.writer.MatchWriter.settle_end`)
        or an action (:meth:`.writer.MatchWriter.settle_log`), soon and until it is
        (:meth:`_retry`): a match nobody writes to (no turn timer, nobody playing) would
        otherwise stay in doubt, and served as running (or a seq behind the store), until its
        next request. One series per match (``end_settlements``); while it fails it logs
        ``match_end_settle_failed`` for an end, ``action_settle_failed`` for an action."""
        def failed(error: str, delay: float) -> None:
            if m.end_in_doubt:
                log.error("match_end_settle_failed", match_id=m.match_id, error=error, retry_in_s=delay)
            else:
                log.error("action_settle_failed", match_id=m.match_id, error=error, retry_in_s=delay)

        self._retry(self.end_settlements, m.match_id, m, lambda: self._writer.settle(m),
                    f"end-settle-{m.match_id}", failed)

    def _retry(self, series: dict[Any, asyncio.Task], key: Any, m: LiveMatch,
               attempt: Callable[[], Awaitable[Any]], name: str,
               failed: Callable[[str, float], None], going_on: Callable[[], bool] | None = None) -> None:
        """Run ``attempt`` under the match's lock (an accepted write: the drain waits for it)
        after :data:`START_RETRY_FIRST_S`, then after twice as long each time it fails (a
        SessionError or a StoreError, told to ``failed`` with the next delay) up to the
        sweeper's interval, until it succeeds, ``going_on`` says no (default: while the match
        is held) or the service drains. ``series`` holds the one series under way per ``key``."""
        if key in series or self._draining():
            return
        held = going_on or (lambda: self._held(m.match_id) is m)
        series[key] = self._spawn(self._retry_until_done(series, key, m, attempt, failed, held), name)

    async def _retry_until_done(self, series: dict[Any, asyncio.Task], key: Any, m: LiveMatch,
                                attempt: Callable[[], Awaitable[Any]],
                                failed: Callable[[str, float], None], going_on: Callable[[], bool]) -> None:
        """The series of :meth:`_retry`. It leaves ``series`` when an attempt succeeds, under
        the match's lock: a write that needs the series again from then on (a new doubt)
        starts a new one. It used to leave only once its task had resumed after the lock, and
        a write in between (a request waiting for the lock behind the attempt) found it still
        there and started none: an action in doubt was then left to the match's next write
        (found looking into a failure of the play fuzz that did not repeat)."""
        me = asyncio.current_task()

        def leave() -> None:
            if series.get(key) is me:
                del series[key]

        async def settle() -> None:
            await attempt()
            leave()

        delay = START_RETRY_FIRST_S
        try:
            while going_on():
                await asyncio.sleep(delay)
                try:
                    await self._exclusive(m, settle)
                except (SessionError, StoreError) as exc:  # the store still fails: tried again later
                    if self._draining():
                        return
                    delay = min(delay * 2, self._sweep_interval())
                    failed(str(exc), delay)
                    continue
                return
        finally:
            leave()

    def take_seat(self, m: LiveMatch, slot: SeatSlot, rec: SeatRecord) -> None:
        """``slot`` holds what ``rec`` says (written, or found in the store): its player, token
        and client join id."""
        if slot.token_hash and slot.token_hash != rec.token_hash:
            self._tokens.pop(slot.token_hash, None)
        slot.player_name, slot.token_hash, slot.joined_at = rec.player_name, rec.token_hash, rec.joined_at
        slot.left, slot.join_hash = rec.left, rec.join_hash
        if rec.token_hash:
            self._tokens[rec.token_hash] = (m.match_id, slot.seat)

    async def activate(self, m: LiveMatch, seats: Sequence[SeatRecord]) -> None:
        """The last seat is taken: write ``seats`` (every player's seat, the last one's
        included), deal the first deck (see :meth:`~.manager.MatchManager.create_match`) and
        start, by one write (:meth:`start`). A store failure is UNAVAILABLE / STORE_UNAVAILABLE.
        When the store says the start did not happen, the match is as it was (the last seat
        open: the join may be retried, or the seat taken by another player). When nobody can
        tell (the write and the read-back both failed: :class:`_StartInDoubt`), the seats are
        taken in memory as written, because the store may hold them, and the match waits with
        every seat taken until a start settles it: retried at once with a short backoff
        (:meth:`_retry_start`), by the sweeper, or by a retried join (:meth:`start_stalled`).
        Nobody else gets such a seat meanwhile, and nobody leaves such a match before it has
        started (:meth:`~.manager.MatchManager.leave_match`): a freed seat in a match the store
        holds as started would be a store no restart could make sense of. Nor does the admin end
        it before (:meth:`~.manager.MatchManager.terminate_match`): the store might hold it
        started and dealt."""
        try:
            await self._writer.store_call(self.start(m, seats), "start_match")
        except Unavailable as exc:
            if isinstance(exc.__cause__, _StartInDoubt):
                for rec in seats:
                    self.take_seat(m, m.seats[rec.seat], rec)
                self._retry_start(m)
            raise
        self._metrics.matches_active.labels(m.game.id, "waiting").dec()
        self._metrics.matches_active.labels(m.game.id, "active").inc()
        now = asyncio.get_running_loop().time()
        for slot in m.seats:
            if slot.absent:
                self._clock.arm_grace(m, slot, start=now)
        self._clock.schedule(m)

    async def start(self, m: LiveMatch, seats: Sequence[SeatRecord] = ()) -> None:
        """Start a waiting match whose every seat is taken (in memory, or with ``seats``):
        ``seats``, its first deck (unless known already) and its status are written in one
        transaction (:meth:`Store.start_match`), and only then do the seats, the deal and the
        status change in memory.

        A start used to be three writes (the seat, the deck, the status), and a failure
        between them left a match waiting with every seat taken in the store. A failed write
        now leaves nothing, but its error may hide a commit (PostgreSQL: the connection
        dropped after the COMMIT reached the server), so the match is read back, as
        :meth:`_due_deck` reads back a deck: still waiting, the write did not happen (all or
        nothing) and the StoreError stands, the match in memory unchanged (the deal's deck, if
        the store holds one, is the one to deal later: it refuses a second); active, it did
        (this write or an earlier one whose answer was lost, which MatchNotWaiting reports)
        and the match follows the store (:meth:`_follow_start`); ended, it ended before this
        start (a TerminateMatch whose answer was lost) and the match follows that end
        (:meth:`_follow_end`: MatchNotActive). The read failing too is :class:`_StartInDoubt`.

        The join that takes the last seat starts the match (:meth:`activate`); so does the
        recovery of a start that did not happen for sure: :meth:`~.manager.MatchManager._load`
        (a match whose last seat an older version wrote before it stopped), and on a running
        engine the retries, the sweeper or a retried join (:meth:`start_stalled`)."""
        deck, new = None, []
        if m.state.to_act() == CHANCE:
            deck = m.decks.get(m.deals_dealt)
            if deck is None:
                deck = random_deck_record(m.game, m.deals_dealt)
                new = [deck]
        try:
            await self._store.start_match(m.match_id, seats, new)
        except StoreError as failed:
            try:
                stored = await self._store.load_match(m.match_id)
            except StoreError as unread:
                raise _StartInDoubt(f"{failed} (and reading the match back: {unread})") from failed
            if stored is not None and stored.record.status in FINISHED:
                await self._follow_end(m, stored)
                raise MatchNotActive("the match is over") from failed
            if stored is None or stored.record.status != "active":
                held = next((d for d in stored.decks if d.deal == m.deals_dealt), None) if stored else None
                if held is not None and deck is not None:
                    m.decks[held.deal] = held
                raise failed
            await self._follow_start(m, stored, seats)
            return
        for rec in seats:
            self.take_seat(m, m.seats[rec.seat], rec)
        if deck is not None:
            self._deal(m, deck)
        m.status = "active"
        m.log.info("match_started", seq=m.seq)

    async def _follow_start(self, m: LiveMatch, stored: StoredMatch,
                            written: Sequence[SeatRecord] = ()) -> None:
        """The store holds this waiting match as started: a start whose error hid its commit.
        Who holds each player's seat is the store's word then (the seats that start wrote:
        this process's own, or, after an earlier lost answer, that join's), and so is the
        deal's deck (one missing, which no version writes, is written first: :meth:`_due_deck`).
        Not of a seat whose last write nobody could tell (:meth:`_resyncing`): that request was
        answered UNAVAILABLE and the memory kept the seat as it was, which is written again;
        unless the store holds that seat as this start wrote it (``written``): then the start
        is what landed, after that write (a seat left open in memory in a match followed as
        started was taken again by the next join, its "joined" published twice)."""
        mine = {rec.seat: rec for rec in written}
        deck = None
        if m.state.to_act() == CHANCE:
            deck = next((d for d in stored.decks if d.deal == m.deals_dealt), None) or await self._due_deck(m)
        for rec in stored.record.seats:
            slot = m.seats[rec.seat]
            if slot.kind == "open" and slot.record() != rec and (
                    mine.get(rec.seat) == rec or not self._resyncing(m, rec.seat)):
                self.take_seat(m, slot, rec)
        if deck is not None:
            self._deal(m, deck)
        m.status = "active"
        m.log.info("match_started", seq=m.seq, found_in_store=True)

    async def _follow_end(self, m: LiveMatch, stored: StoredMatch) -> None:
        """The store holds this waiting match as ended: an end written but answered with an
        error (TerminateMatch, the waiting timeout; the caller was answered UNAVAILABLE and
        has not retried yet). The match ends in memory as the store has it: its seats, the
        first deck if a start landed before the end, the status and the result; its watchers
        get ``match_ended`` (a seat whose last write nobody could tell stays as the memory
        holds it, as in :meth:`_follow_start`). Its start used to be refused for good instead
        (the store said "not waiting", the read-back "not active": the error stood), so that
        a match whose start was in doubt waited with every seat taken, each retry, sweep,
        leave and TerminateMatch answered UNAVAILABLE, until a restart (found by the seat
        lifecycle fuzz)."""
        rec = stored.record
        for seat in rec.seats:
            slot = m.seats[seat.seat]
            if slot.kind == "open" and slot.record() != seat and not self._resyncing(m, seat.seat):
                self.take_seat(m, slot, seat)
        deck = next((d for d in stored.decks if d.deal == m.deals_dealt), None)
        if deck is not None and m.state.to_act() == CHANCE:
            self._deal(m, deck)
        self._writer.follow_end(m, stored)

    async def deal_due(self, m: LiveMatch) -> None:
        """Deal a fresh deck if the match waits for one (CHANCE), storing it first."""
        deck = await self._due_deck(m)
        if deck is not None:
            self._deal(m, deck)

    async def _due_deck(self, m: LiveMatch) -> DeckRecord | None:
        """The deck of the deal the match waits for (CHANCE; None if it waits for none), stored:
        the match's own, else a fresh one, written here. When that write fails, the store may
        hold the deal's deck all the same (this write's or an earlier attempt's, durable though
        answered with an error: the store refuses a second deck for a deal), and that one is the
        deal's; else the write's StoreError stands."""
        if m.state.to_act() != CHANCE:
            return None
        deck = m.decks.get(m.deals_dealt)
        if deck is None:
            deck = random_deck_record(m.game, m.deals_dealt)
            try:
                await self._store.append_decks(m.match_id, [deck])
            except StoreError as failed:
                try:
                    stored = await self._store.load_match(m.match_id)
                except StoreError:
                    raise failed from None
                deck = next((d for d in stored.decks if d.deal == m.deals_dealt), None) if stored else None
                if deck is None:
                    raise failed
        return deck

    @staticmethod
    def _deal(m: LiveMatch, deck: DeckRecord) -> None:
        state = m.state.clone()  # a new state object: what was derived from the old one goes
        state.deal(deck.cards)
        m.decks[deck.deal] = deck
        m.state, m.deals_dealt = state, m.deals_dealt + 1

    async def start_stalled(self, m: LiveMatch, *, by: str) -> None:
        """Start a match (under its lock) that waits with every seat taken: the start by the
        join that took the last seat failed and nobody could tell whether the store holds it
        (:meth:`activate`; that join was answered UNAVAILABLE / STORE_UNAVAILABLE), which would
        otherwise leave the match waiting until a restart (:meth:`~.manager.MatchManager._load`
        starts it then) or the waiting timeout. It starts as that join would have started it
        (one write of every player's seat as held in memory, the deck unless the store holds
        one, and the status; or, when the store says the earlier start happened, as the store
        has it), and its watchers get the ``joined`` event that the failed join did not publish,
        with the started views: of the seat taken last, the failed join's (not of the seat whose
        player's retried join starts it: that may be another seat, whose ``joined`` its watchers
        saw when it was taken). ``by``: who starts it (logged: ``retry``, ``sweeper``,
        ``join_retry``, ``leave``, ``terminate``). Nothing happens when there is nothing to
        start (the match is not waiting, or a seat is open)."""
        if m.status != "waiting" or m.open_seats():
            return
        await self.activate(m, [s.record() for s in m.seats if s.kind == "open"])
        m.log.warning("match_start_recovered", by=by)
        joined = max((s for s in m.seats if s.kind == "open"), key=lambda s: s.joined_at or 0.0)
        self._writer.presence(m, joined, "joined")

    async def retry_stalled(self, m: LiveMatch, *, by: str) -> None:
        """:meth:`start_stalled` for a retry nobody waits on (``by``: ``retry``, ``sweeper``):
        a start that finds the match ended in the store (:meth:`start`: MatchNotActive, the
        match following that end) is no failure but the match's news, logged
        ``match_start_found_ended`` at info. It used to reach the retry's error handler and
        log ``match_start_failed`` at error level, paging an operator for a table that had
        been closed. A request (a retried join, a leave, a TerminateMatch) still gets the
        MatchNotActive: its caller is told the match is over."""
        try:
            await self.start_stalled(m, by=by)
        except MatchNotActive:
            m.log.info("match_start_found_ended", by=by, status=m.status)

    def _retry_start(self, m: LiveMatch) -> None:
        """Retry the start of a match left waiting with every seat taken (:meth:`activate`)
        soon and until it starts (:meth:`_retry`), a retried join or the sweeper starts it,
        or it ends: its players (the last one's retried join aside) would otherwise wait for
        the sweeper, up to its interval (60 s at most), to see it start once the store works
        again. The sweeper stays the backstop. One series per match."""
        self._retry(self.start_retries, m.match_id, m, lambda: self.retry_stalled(m, by="retry"),
                    f"start-retry-{m.match_id}",
                    lambda error, delay: log.error("match_start_failed", match_id=m.match_id,
                                                   error=error, retry_in_s=delay),
                    going_on=lambda: self._held(m.match_id) is m and m.status == "waiting")
