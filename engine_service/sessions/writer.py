"""The single writer of a match: every change of a match's log or status goes through here,
under the match's lock (ARCHITECTURE.md section 4), and every change is published to the
match's watchers, redacted per audience.

An action is validated on a copy of the state, written to the store together with the deck
of a deal it makes due, and only then becomes the match's state and gets its sequence number:
nothing a client has seen can be lost by a crash, and a failed write changes nothing.

Rulebook links (Georgian Joker's wording; the other games alike): every event carries the
match's sequence number, which never goes back; each action raises it by one, other events
carry the current value (GJ-10.2). The action that completes a deal is published with
``deal_scored`` and a view holding the result, the next deal already dealt (none past the
server's deal limit: the match ends there, :meth:`MatchWriter.past_deal_limit`): the internal
states take no action of their own (GJ-10.1). A move of the auto-move policy or of a bot is
recorded as the ordinary action it made (``by`` and ``reason`` only annotate it); timeouts,
presence changes and leaving are events, never actions (GJ-12.5).
"""

from __future__ import annotations

import asyncio
import contextvars
import time
from typing import Any, Awaitable, Callable, Mapping

import structlog

from ..observability.metrics import Metrics
from ..rules.errors import RulesError
from ..rules.game import CHANCE
from ..store import DuplicateClientAction, SequenceConflict, Store, StoreError
from ..store.base import FINISHED, ActionRecord, DeckRecord, MatchEnd, StoredMatch
from .api import MatchEvent, MatchNotActive, SessionError, StaleSequence, Unavailable, ViewEnvelope
from .chance import random_deck_record
from .match import LiveMatch, SeatSlot, action_details, loggable_error, play_logged
from .views import SPECTATOR, Audience, public_or_none
from .watchers import Watcher

log = structlog.get_logger("engine_service.sessions")

#: Result keys that say why a match ended early (logged with ``match_ended``).
END_DETAILS = ("resigned", "forfeited", "abandoned", "absent", "reason")


class MatchWriter:
    """Applies actions and ends matches; publishes events. The caller holds ``m.lock``.

    ``schedule(m)`` (set by the manager: the match clock) arms what the next decision needs
    after every accepted action; ``disarm(m)`` drops a turn deadline (an action caught up
    from the store that another follows, or that reaches the deal limit); ``stop(m)``
    disarms everything when a match ends;
    ``settle_soon(m)`` (the manager: :meth:`.seating.Seating.settle_end_soon`) settles an end
    whose write nobody could tell, in the background (:meth:`settle_end`); ``status_soon(m)``
    (:meth:`.seating.Seating.write_status_soon`) writes the status of a match its last action
    ended (completed, or at the deal limit) again;
    ``overflowed(m, watchers)`` (set by the manager: :meth:`.streams.WatchStreams.overflowed`,
    which counts the streams) takes the streams a publication closed because they fell too far
    behind (:meth:`_overflowed`).
    """

    def __init__(self, store: Store, metrics: Metrics, max_deals: int = 0) -> None:
        self.store = store
        self.metrics = metrics
        #: :attr:`.config.SessionConfig.max_match_deals` (0: no limit)
        self.max_deals = max_deals
        self.schedule: Callable[[LiveMatch], None] = lambda m: None
        self.stop: Callable[[LiveMatch], None] = lambda m: None
        self.disarm: Callable[[LiveMatch], None] = lambda m: None
        self.settle_soon: Callable[[LiveMatch], None] = lambda m: None
        self.status_soon: Callable[[LiveMatch], None] = lambda m: None
        self.overflowed: Callable[[LiveMatch, list[Watcher]], None] = lambda m, watchers: None

    async def store_call(self, op: Awaitable[Any], what: str) -> Any:
        """Await a store write; a store failure becomes UNAVAILABLE (retryable: a retry with
        the same client_action_id cannot apply twice)."""
        try:
            return await op
        except StoreError as exc:
            log.error("store_write_failed", operation=what, error=str(exc), error_type=type(exc).__name__)
            raise Unavailable("the match could not be saved; try again", reason="STORE_UNAVAILABLE") from exc

    # ---- actions ------------------------------------------------------------------------

    async def apply(self, m: LiveMatch, seat: int, action: str, *, by: str, reason: str = "",
                    client_action_id: str = "") -> ActionRecord:
        """Validate, persist and publish one action. RulesError or Unavailable: nothing changed.

        An append answered with an error may have been written all the same: the match's log
        is then in doubt (``log_in_doubt``) until it is read back (:meth:`settle_log`), which
        every later write does first. StaleSequence when that read-back finds the action of an
        earlier attempt (the caller, a timeout or a bot move, decides again)."""
        started = time.perf_counter()
        if m.in_doubt and await self._settled(m):
            raise StaleSequence(f"the match moved on to seq {m.seq}; decide again",
                                current=m.envelope(seat), seq=str(m.seq))
        scored = _deals_scored(m)
        state = m.state.clone()
        applied = state.apply(action, seat)
        public = m.state.public_action(applied)
        if public != applied:
            # the rules record this choice as another of the same effect (a ``declare`` that
            # states nothing is a ``conceal``): the string the player sent would tell every
            # audience (events, replays, logs) what that record keeps private
            action = m.state.action_str(public)
        new_decks: list[DeckRecord] = []
        dealt = m.deals_dealt
        # the deal past the deal limit is not dealt: the match ends with this action, whose
        # views would show the seats their hands of it and everyone its turn-up (KL-2.4)
        at_limit = state.to_act() == CHANCE and bool(self.max_deals) and dealt >= self.max_deals
        if state.to_act() == CHANCE and not at_limit:
            deck = m.decks.get(dealt)
            if deck is None:
                deck = random_deck_record(m.game, dealt)
                new_decks.append(deck)
            state.deal(deck.cards)
            dealt += 1
        rec = ActionRecord(seq=m.seq + 1, seat=seat, action=action, by=by,
                           client_action_id=client_action_id, reason=reason, at=time.time())
        # the end at the deal limit is written with the action that reaches it: the log says
        # it only under the limit in force (a restart with a higher one would play on)
        end = self._deal_limit_end(m, state) if at_limit else None
        try:
            await self.store.append_action(m.match_id, rec, new_decks, end)
        except (SequenceConflict, DuplicateClientAction) as exc:
            # another writer (a process that was thought dead, or another replica) appended
            # to this log: the log is the truth, so catch up with it and let the caller decide
            # again on the new state
            m.log.warning("log_conflict", seq=rec.seq, error_type=type(exc).__name__)
            if await self.store_call(self.catch_up(m), "catch_up"):
                await self.end_past_deal_limit(m)
            raise StaleSequence(f"the match moved on to seq {m.seq}; decide again",
                                current=m.envelope(seat), expected_seq=str(rec.seq - 1),
                                seq=str(m.seq)) from exc
        except StoreError as exc:
            log.error("store_write_failed", operation="append_action", error=str(exc),
                      error_type=type(exc).__name__)
            # it may have been written all the same (PostgreSQL: the connection dropped after
            # the COMMIT): the log is read back before anything else is written (settle_log)
            m.log_in_doubt = True
            self.settle_soon(m)
            raise Unavailable("the match could not be saved; try again", reason="STORE_UNAVAILABLE") from exc

        m.state = state
        m.actions.append(rec)
        for d in new_decks:
            m.decks[d.deal] = d
        m.deals_dealt = dealt
        if client_action_id:
            m.client_ids[(seat, client_action_id)] = rec
        self._count_applied(m, rec)
        details = _scored_details(m, state, rec.seq, scored)

        event = dict(seq=rec.seq, seat=seat, action=action, by=by, reason=reason, details=details)
        if state.is_over() or end is not None:
            # over by the rules (the durable log says so), or at the deal limit (written with
            # the action): the action's event shows the match as it ended (no deadline, no
            # next deal)
            if end is None:
                self.mark_over(m, "finished", self.result(m, "completed"), "completed")
            else:
                self._mark_deal_limit(m, end)
            self.publish(m, "action", **event)
            if end is None:
                await self._store_end(m)
            self.announce_end(m)
        else:
            self.schedule(m)  # first: the events carry the new deadline
            self.publish(m, "action", **event)
        self.metrics.child(self.metrics.action_latency, m.game.id).observe(time.perf_counter() - started)
        return rec

    def _count_applied(self, m: LiveMatch, rec: ActionRecord, **found: Any) -> None:
        """Count and log an action that became the match's (:meth:`apply`; or found in the
        store, ``found_in_store``: :meth:`catch_up`): ``actions``, ``action_applied``, and for
        the auto-move policy's ``auto_moves`` and ``auto_move``, which an auto-move found in
        the store used to miss (the timeouts it answered were counted, it was not)."""
        self.metrics.child(self.metrics.actions, m.game.id, rec.by, "accepted").inc()
        m.log.info("action_applied", seat=rec.seat, seq=rec.seq, action=rec.action, by=rec.by, **found,
                   **({"reason": rec.reason} if rec.reason else {}))
        if rec.by == "auto":
            self.metrics.child(self.metrics.auto_moves, m.game.id, rec.reason or "policy").inc()
            m.log.info("auto_move", seat=rec.seat, seq=rec.seq, action=rec.action, reason=rec.reason, **found)

    async def end_at_deal_limit(self, m: LiveMatch) -> None:
        """End a match past the deal limit (:meth:`past_deal_limit`) that is still played: one
        read back so (MatchManager._load: the limit was lowered, or a version before
        2026-12-05 stopped between the action that reached it and the end, a write of its own
        then) or caught up so (:meth:`end_past_deal_limit`: another writer's action, or this
        one's whose append was answered with an error). :meth:`apply` writes the end with such
        an action of its own."""
        self._mark_deal_limit(m, self._deal_limit_end(m, m.state))
        await self._store_end(m)
        self.announce_end(m)

    def _deal_limit_end(self, m: LiveMatch, state: Any) -> MatchEnd:
        """The end of ``m`` at the deal limit, ``state`` being its state at that point (outcome
        ``terminated``, reason ``deal_limit``, SessionConfig.max_match_deals): the deal past it
        is not dealt, so the commitments are those of the deals dealt."""
        return MatchEnd("terminated", self.result(m, "terminated", winners=[], reason="deal_limit", state=state),
                        time.time(), m.deal_commitments())

    def _mark_deal_limit(self, m: LiveMatch, end: MatchEnd) -> None:
        """Mark ``m`` over at the deal limit with ``end``: it has played ``max_deals`` deals.
        It used to deal the next deal with the action that reached the limit (the seats saw
        their hands of it, everyone its turn-up, RevealDeals opened it) and to go on playing it
        when the end could not be written."""
        played = m.deals_dealt if m.state.to_act() == CHANCE else m.deals_dealt - 1
        m.log.warning("match_deal_limit", deals=played, limit=self.max_deals)
        self.mark_over(m, end.status, dict(end.result), "terminated", end.ended_at)

    async def _store_end(self, m: LiveMatch) -> None:
        """Write the status of a match its last action ended (completed by the rules; or past
        the deal limit, read back or caught up so: :meth:`end_at_deal_limit`; :meth:`apply`
        writes an end at the limit with its action). The log is durable already,
        so the match is over whatever this write does; a failed one is written again in the
        background (``status_soon``: :meth:`.seating.Seating.write_status_soon`), the match
        kept in memory until it is. It was only logged: the store held the match active until
        it was read back (a restart, or a call after its eviction, derives the end again), so
        meanwhile the admin's listing showed it active and retention never deleted it."""
        try:
            await self.store.set_status(m.match_id, m.status, m.result, m.ended_at, m.deal_commitments())
        except StoreError as exc:
            m.log.error("store_status_failed", error=str(exc))
            self.status_soon(m)

    async def catch_up(self, m: LiveMatch) -> int:
        """Fold into ``m`` the actions appended to its stored log that it does not hold
        (another writer's, or this one's whose append was answered with an error), publishing
        them as ordinary events (an action that scored a deal with ``deal_scored``, as
        :meth:`apply` publishes it and a resumed stream replays it: they used to come without,
        so that a client following its stream never saw that deal scored; found by the play
        fuzz) and logging them as applied; returns how many there were."""
        stored = await self.store.load_match(m.match_id)
        if stored is None:
            return 0
        for d in stored.decks:
            m.decks.setdefault(d.deal, d)
        new = [a for a in stored.actions if a.seq > m.seq]
        ended = False
        for rec in new:
            scored = _deals_scored(m)
            state = m.state.clone()
            try:
                # the last one deals no deck past the deal limit, as apply() deals none (an
                # admin's deck given ahead for the deal past it was dealt and published)
                most = (self.max_deals or None) if rec is new[-1] else None
                m.deals_dealt = play_logged(state, rec, m.decks, m.deals_dealt, most)
            except RulesError as exc:
                # another writer's record the rules refuse: this log cannot be followed. The
                # rules' message is written for that record's seat ("KC is not in your hand"):
                # it reached this caller, another seat, as its own ILLEGAL_ACTION; now neither
                # the caller nor the log gets it, as when the match is loaded (MATCH_CORRUPT)
                log.error("match_load_failed", match_id=m.match_id,
                          error=f"the stored action at seq {rec.seq} (seat {rec.seat}, {rec.action!r}) "
                                f"is refused: {loggable_error(exc)}")
                raise SessionError("the match cannot be loaded", reason="MATCH_CORRUPT") from None
            m.state = state
            m.actions.append(rec)
            if rec.client_action_id:
                m.client_ids[(rec.seat, rec.client_action_id)] = rec
            self._count_applied(m, rec, found_in_store=True)
            details = _scored_details(m, state, rec.seq, scored)
            # the clock first, as apply() arms it: the last action's event carries the
            # deadline of the decision it hands on (or the end), an earlier one's none (a
            # decision made already, as its replay shows it), never the deadline of the
            # decision these actions answered, which the events used to carry; past the deal
            # limit no decision follows (the caller ends the match: end_past_deal_limit)
            if rec is not new[-1]:
                self.disarm(m)
            elif m.state.is_over() and not m.over:
                self.mark_over(m, "finished", self.result(m, "completed"), "completed")
                ended = True
            elif self.past_deal_limit(m):
                self.disarm(m)
            else:
                self.schedule(m)
            self.publish(m, "action", seq=rec.seq, seat=rec.seat, action=rec.action, by=rec.by,
                         reason=rec.reason, details=details)
        if new:
            m.log.warning("log_caught_up", seq=m.seq, actions=len(new))
        if m.state.is_over() and not m.over:  # over before these actions (or with none)
            self.mark_over(m, "finished", self.result(m, "completed"), "completed")
            ended = True
        if ended:
            await self._store_end(m)
            self.announce_end(m)
        elif new and self.past_deal_limit(m):
            if stored.record.status in FINISHED:
                # the end written with the action that reached the limit (:meth:`apply`), its
                # answer lost: followed as the store has it, not written again
                self.follow_end(m, stored)
            # else the caller ends it (end_past_deal_limit)
        else:
            self.schedule(m)
        return len(new)

    def past_deal_limit(self, m: LiveMatch) -> bool:
        """Whether ``m`` is being played and has played ``max_deals`` deals: the last one scored
        and the next not dealt (:meth:`apply` deals none past the limit), or one more dealt (a
        log written before that, or a limit lowered since)."""
        return bool(self.max_deals) and m.active and (
            m.deals_dealt > self.max_deals
            or (m.deals_dealt == self.max_deals and m.state.to_act() == CHANCE))

    async def end_past_deal_limit(self, m: LiveMatch) -> None:
        """After actions found in the store (:meth:`catch_up`): end the match when they reached
        ``max_deals`` (:meth:`end_at_deal_limit`), as apply() ends it after
        such an action of its own. The catch-up used to arm the next decision instead, and
        the match went on past its limit until its next action (a move of the deal past it)
        had been accepted."""
        if self.past_deal_limit(m):
            await self.end_at_deal_limit(m)

    # ---- the end of a match -------------------------------------------------------------

    @staticmethod
    def result(m: LiveMatch, outcome: str, winners: list[int] | None = None, *, state: Any = None,
               **info: Any) -> dict[str, Any]:
        """The session's result: the rules' totals, the winners (the rules', or the
        opponent after a resignation or forfeit), ``outcome`` and why it ended. ``state``:
        the rules' state it is read from when not ``m.state`` yet (an action not written)."""
        result = dict((m.state if state is None else state).result())
        result["outcome"] = outcome
        result["over"] = True
        if winners is not None:
            result["winners"] = list(winners)
        abandoned = [s.seat for s in m.seats if s.left]
        if abandoned:
            result["abandoned"] = abandoned
        result.update(info)
        return result

    async def end(self, m: LiveMatch, outcome: str, winners: list[int], **info: Any) -> None:
        """End a match for a session reason (resignation, forfeit, abandonment, termination):
        durable first, then announced."""
        if m.in_doubt:
            await self._settled(m)
        result = self.result(m, outcome, winners, **info)
        status = "terminated" if outcome == "terminated" else "finished"
        ended_at = time.time()
        await self.store_call(self._write_end(m, status, result, ended_at), "set_status")
        self.mark_over(m, status, result, outcome, ended_at)
        self.announce_end(m)

    async def _write_end(self, m: LiveMatch, status: str, result: dict[str, Any], ended_at: float) -> None:
        """Write the end; one answered with an error is read back. A write answered with an
        error may have landed all the same (PostgreSQL: the connection dropped after the
        COMMIT), and the match would then run on in memory, refusing nothing, while the store
        held it ended (its read-back after an eviction or a restart not the match served).
        Found with this very end (its status and its ``ended_at``, unique to this call), it
        happened and the match ends as after an answer (logged ``match_end_found_in_store``);
        not found, the StoreError stands. When the read fails too, nobody can tell: the
        StoreError stands and the end is in doubt (:meth:`settle_end`)."""
        try:
            await self.store.set_status(m.match_id, status, result, ended_at, m.deal_commitments())
        except StoreError as failed:
            try:
                stored = await self.store.load_match(m.match_id)
            except StoreError:
                m.end_in_doubt = True
                m.log.error("match_end_in_doubt", status=status)
                self.settle_soon(m)
                raise failed from None
            if stored is None or (stored.record.status, stored.record.ended_at) != (status, ended_at):
                raise failed
            m.log.warning("match_end_found_in_store", status=status)

    async def settle(self, m: LiveMatch) -> None:
        """Settle whatever an earlier write left in doubt (:meth:`settle_end`,
        :meth:`settle_log`; UNAVAILABLE while the store cannot be read): the match is then as
        the store has it, and may be written to."""
        await self.settle_end(m)
        await self.settle_log(m)

    async def _settled(self, m: LiveMatch) -> bool:
        """Before a write (an action, an end): settle what is in doubt (:meth:`settle`);
        MatchNotActive when the match turns out to be over. True when the log moved on."""
        if not m.in_doubt:
            return False
        seq = m.seq
        await self.settle(m)
        if m.over:
            raise MatchNotActive("the match is over")
        return m.seq != seq

    async def settle_log(self, m: LiveMatch) -> None:
        """Settle an action in doubt (:meth:`apply`: its append answered with an error, and may
        have been written all the same) by reading the log back (:meth:`catch_up`): the
        actions found are folded in and published (``log_caught_up``; one that ends the match
        by the rules ends it), none found and it did not happen (``action_not_in_store``).
        Unreadable: UNAVAILABLE / STORE_UNAVAILABLE, still in doubt.

        Until it is settled nothing is written to the match but an action, which the store
        refuses at a seq it holds already (every write settles it first, and a series in the
        background, ``settle_soon``). An end (a resignation, a forfeit, a termination) used to
        be written at once, the memory a seq behind: the store then held an action after the
        end the watchers had been told (a restart served one more action than the match had
        ended with), the end's result missed it, and the retry of that action, which the store
        held, was answered MATCH_NOT_ACTIVE (found by the play fuzz)."""
        if not m.log_in_doubt:
            return
        try:
            found = await self.catch_up(m)
        except StoreError as exc:
            log.error("store_read_failed", operation="settle_log", match_id=m.match_id, error=str(exc),
                      error_type=type(exc).__name__)
            raise Unavailable("the match could not be read; try again", reason="STORE_UNAVAILABLE") from exc
        m.log_in_doubt = False
        if not found:
            m.log.info("action_not_in_store", seq=m.seq)
        else:
            await self.end_past_deal_limit(m)

    async def settle_end(self, m: LiveMatch) -> None:
        """Settle an end in doubt (:meth:`_write_end`: its write and the read-back both failed)
        by reading the match back: ended in the store, the match ends as the store has it
        (``match_end_found_in_store``, watchers get ``match_ended``); not ended, it did not
        happen and the match goes on (``match_end_not_in_store``). Unreadable again:
        UNAVAILABLE / STORE_UNAVAILABLE, still in doubt.

        Until it is settled nothing is written to the match (every write settles it first:
        the requests through the manager's lock, the clock's moves and ends here; and a
        series in the background, ``settle_soon``), because the store may hold the match
        ended: an action accepted meanwhile would be written after the end, a match no
        restart could make sense of. The match used to run on in memory while the store held
        it ended, until a restart, which then served it ended with the actions played since."""
        if not m.end_in_doubt:
            return
        try:
            stored = await self.store.load_match(m.match_id)
        except StoreError as exc:
            log.error("store_read_failed", operation="settle_end", match_id=m.match_id, error=str(exc),
                      error_type=type(exc).__name__)
            raise Unavailable("the match could not be read; try again", reason="STORE_UNAVAILABLE") from exc
        m.end_in_doubt = False
        if stored is not None and stored.record.status in FINISHED:
            self.follow_end(m, stored)
        else:
            m.log.info("match_end_not_in_store")

    def follow_end(self, m: LiveMatch, stored: StoredMatch) -> None:
        """End ``m`` as the store has it ended (an end written but answered with an error):
        its status, result and end time; watchers get ``match_ended``."""
        rec = stored.record
        result = dict(rec.result or {})
        m.log.warning("match_end_found_in_store", status=rec.status)
        self.mark_over(m, rec.status, result, str(result.get("outcome", rec.status)),
                       rec.ended_at if rec.ended_at is not None else time.time())
        self.announce_end(m)

    def mark_over(self, m: LiveMatch, status: str, result: dict[str, Any], outcome: str,
                  ended_at: float | None = None) -> None:
        previous = m.status
        m.status, m.result = status, result  # type: ignore[assignment]
        m.ended_at = ended_at if ended_at is not None else time.time()
        m.finished_mono = asyncio.get_running_loop().time()
        self.stop(m)
        self.metrics.matches_active.labels(m.game.id, previous).dec()
        self.metrics.matches_finished.labels(m.game.id, outcome).inc()
        m.log.info("match_ended", seq=m.seq, outcome=outcome, winners=result.get("winners"),
                   totals=result.get("totals"), **{k: v for k, v in result.items() if k in END_DETAILS})

    # ---- publication --------------------------------------------------------------------

    def publish(self, m: LiveMatch, kind: str, *, seq: int, seat: int | None = None, action: str = "",
                by: str = "", reason: str = "", details: Mapping[str, Any] | None = None) -> None:
        """Queue one event to every watcher, with its audience's view. The event (an immutable
        value) is built once per audience and shared by its watchers, and so is the view: only
        the audiences somebody watches are built. Never waits: a full queue closes that
        watcher's stream.

        Spectators of a delayed match (:mod:`.delay`) get, instead of an action, the actions
        it releases to them, and the other events at their own position."""
        delayed = bool(m.spectator_delay)
        if delayed:
            self.release_to_spectators(m)
        if not m.watchers:
            return
        events: dict[Any, MatchEvent] = {}
        details = dict(details or {})
        offered = 0
        # the closed ones (ended, not yet gone): no view built for them
        targets = [w for w in m.watchers if not w.closed]
        for w in targets:
            event = events.get(w.audience)
            if event is None:
                at = seq
                if delayed and w.audience == SPECTATOR:
                    if kind == "action":
                        continue  # released above
                    at = m.spectators_seen
                event = events[w.audience] = MatchEvent(
                    kind=kind, seq=at, match_id=m.match_id, seat=seat, action=action,  # type: ignore[arg-type]
                    by=by, reason=reason, view=m.envelope(w.audience), details=details)
            offered += w.offer(event)
        if offered:
            self.metrics.child(self.metrics.events_published, kind).inc(offered)
        self._overflowed(m, targets)

    def release_to_spectators(self, m: LiveMatch) -> None:
        """Queue to the spectators of a delayed match every action they may see now and have
        not been shown (:meth:`LiveMatch.spectator_releases`), each once, in order. Called
        wherever the horizon moves: after every accepted action and at the end."""
        spectators = [w for w in m.watchers if w.audience == SPECTATOR and not w.closed]
        for rec, env, details in m.spectator_releases(build=bool(spectators)):
            event = MatchEvent(kind="action", seq=rec.seq, match_id=m.match_id, seat=rec.seat,
                               action=rec.action, by=rec.by, reason=rec.reason, view=env,  # type: ignore[arg-type]
                               details=details)
            offered = sum(w.offer(event) for w in spectators)
            if offered:
                self.metrics.child(self.metrics.events_published, "action").inc(offered)
        self._overflowed(m, spectators)

    def presence(self, m: LiveMatch, slot: SeatSlot, change: str) -> None:
        """A seat's presence changed (joined, connected, disconnected, bot_took_over,
        returned, left): log, count and tell every watcher."""
        self.metrics.presence_changes.labels(m.game.id, change).inc()
        m.log.info("presence_changed", seat=slot.seat, seq=m.seq, change=change, present=slot.present)
        self.publish(m, "presence", seq=m.seq, seat=slot.seat, reason=change,
                     details={"change": change, "seats": m.presence()})

    def announce_end(self, m: LiveMatch) -> None:
        """``match_ended`` to every watcher, then the end of each stream (the spectators of a
        delayed match first get what was withheld from them)."""
        if m.spectator_delay:
            self.release_to_spectators(m)
        cache: dict[Any, ViewEnvelope] = {}
        offered = 0
        targets = [w for w in m.watchers if not w.closed]
        for w in targets:
            if w.audience not in cache:
                cache[w.audience] = m.envelope(w.audience)
            offered += w.offer(ended_event(m, w.audience, cache[w.audience]))
            w.end()
        if offered:
            self.metrics.events_published.labels("match_ended").inc(offered)
        self._overflowed(m, targets)

    def _overflowed(self, m: LiveMatch, offered_to: list[Watcher]) -> None:
        """Hand the watchers of ``offered_to`` (each open when the publication began) that it
        overflowed to ``overflowed``, which stops counting them (a seat's presence, the
        limits), on the event loop's next turn (``call_soon``), not here.

        A publication is part of a change of the match, under its lock: an action is published
        between arming its clock and answering, a caught-up log one action after the other,
        and a presence event may overflow a stream too. Told here that a seat's last stream is
        gone, the clock would re-arm and publish ``disconnected`` in the middle of that change:
        between two actions of a catch-up, at a seq the match is leaving, the clock armed for a
        decision already past; inside the publication of another presence event. On the next
        turn the publication is over and so is what its caller does up to its next await: the
        match is at a point where a stream's close is handled today anyway (a generator's
        ``finally`` runs in its stream's own task, so at an await of the change at the
        earliest). The action event goes first, then ``disconnected``, and nothing comes
        between them that could not come between a stream's last event and its close today.
        Meanwhile the stream is closed and offered nothing, so its seat misses nothing it would
        have had. The handler runs in a context of its own, like the clock's timers: its log
        lines do not carry the fields of the request whose event overflowed another stream."""
        gone = [w for w in offered_to if w.overflowed]
        if gone:
            asyncio.get_running_loop().call_soon(self.overflowed, m, gone, context=contextvars.Context())


def _scored_details(m: LiveMatch, state: Any, seq: int, scored_before: int) -> dict[str, Any]:
    """The details of the action at ``seq`` that led to ``state`` (``m``'s state now), the
    deals scored before it being ``scored_before``: ``deal_scored`` when it completed a deal,
    then logged with the deal's public result."""
    results = state.deal_results()
    m.memo().scored = len(results)
    details = action_details(scored_before, len(results))
    if details:
        m.log.info("deal_scored", seq=seq, deal=len(results) - 1,
                   result=public_or_none(results[-1], state), totals=state.result().get("totals"))
    return details


def _deals_scored(m: LiveMatch) -> int:
    """How many deals the current state has scored (the rules build the list of results on
    every call: counted once per action, after it)."""
    memo = m.memo()
    if memo.scored is None:
        memo.scored = len(m.state.deal_results())
    return memo.scored


def ended_event(m: LiveMatch, audience: Audience, env: ViewEnvelope | None = None) -> MatchEvent:
    result = dict(m.result or {})
    return MatchEvent(kind="match_ended", seq=m.seq, match_id=m.match_id,
                      reason=str(result.get("outcome", "")), view=env or m.envelope(audience),
                      details={"result": result})
