"""One authoritative match held in memory: its configuration, seats, action log, decks, the
current state (the fold of the log), open watch streams and armed timers.

This module owns the *data* of a match and the pure computations on it (folding the log,
views per audience, summaries). The :class:`~engine_service.sessions.manager.MatchManager`
owns the *behaviour*: locking, persistence, timers, bots and publication.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

import structlog

from ..rules.errors import RulesError
from ..rules.game import CHANCE, Game, State
from ..rules.registry import get_game
from ..rules.views import ViewMaker
from ..store.base import ActionRecord, DeckRecord, MatchRecord, SeatRecord
from .api import DealReveal, MatchStatus, MatchSummary, SeatInfo, ViewEnvelope
from .delay import SpectatorCursor, cursor_at, horizon, released
from .fairness import deck_commitment, reveal, shown_cards
from .policy import absence_policy
from .views import ADMIN, SPECTATOR, Audience, after_end, before_start, view_for
from .watchers import Watcher


def action_details(scored_before: int, scored_after: int) -> dict[str, Any]:
    """The details of an ``action`` event, live or replayed: ``deal_scored`` (the index of the
    deal it scored) when the action scored a deal."""
    return {"deal_scored": scored_after - 1} if scored_after > scored_before else {}


def play_logged(state: State, rec: ActionRecord, decks: dict[int, DeckRecord], dealt: int,
                most: int | None = None) -> int:
    """Apply a logged action to ``state`` and deal the deck it makes due, when that deck is
    known and fewer than ``most`` decks are dealt (None: no bound), as the writer did; returns
    how many decks are dealt now. ``most``: :meth:`LiveMatch.dealt_at_most`."""
    state.apply(rec.action, rec.seat)
    if state.to_act() == CHANCE and dealt in decks and (most is None or dealt < most):
        state.deal(decks[dealt].cards)
        dealt += 1
    return dealt


class CorruptLog(Exception):
    """A stored log does not replay through the rules (a deck or an action is refused)."""


def loggable_error(exc: BaseException) -> str:
    """``exc`` as a log line's ``error``: a rules error by its type and reason only. Its
    message is written for the acting seat and tells what it holds ("KC is not in your hand",
    "you must follow suit C", "legal now: play:7S, ..."), an InvalidDeck's names the deck's
    cards: none of it belongs in the operator's log while others may still play the match."""
    if isinstance(exc, RulesError):
        return f"{type(exc).__name__} ({exc.reason})"
    return str(exc)


@dataclass
class SeatSlot:
    """A seat: its stored part (kind, holder) and its volatile part (presence, takeover).

    Built only from its record (:meth:`from_record`): the stored facts have no defaults, so
    that a seat is never made with one of them silently made up (a player who left as one
    who did not, a bot seat as an open one)."""

    seat: int
    kind: str
    bot: str
    player_name: str
    token_hash: str
    joined_at: float | None
    left: bool
    join_hash: str  # of the client_join_id its player joined with (tokens.join_id_hash)
    # volatile: rebuilt from nothing after a restart
    streams: int = 0
    taken_over: bool = False  # absent past the grace period: a bot plays it (GJ-12.4)
    grace_handle: asyncio.TimerHandle | None = field(default=None, repr=False)
    grace_deadline: float | None = None  # event-loop time at which the grace period ends
    # The absence as the store keeps it (schema 8; MatchClock writes it, MatchManager._rearm
    # reads it back): ``away_since``, the Unix time the player's grace window started (None:
    # not away); ``away_seen`` and ``away_taken_over`` as read back from the store, which say
    # until when the engine served during that absence and whether the takeover bot played the
    # seat when it stopped; ``absence_stored``, the (away_since, taken_over) last written or
    # read, and ``absence_task``, the write under way (one per seat: they land in order)
    away_since: float | None = field(kw_only=True)
    away_seen: float | None = field(kw_only=True)
    away_taken_over: bool = field(kw_only=True)
    absence_stored: tuple[float | None, bool] = field(kw_only=True)
    absence_task: asyncio.Task | None = field(default=None, repr=False)

    @classmethod
    def from_record(cls, r: SeatRecord) -> "SeatSlot":
        return cls(r.seat, r.kind, r.bot, r.player_name, r.token_hash, r.joined_at, r.left, r.join_hash,
                   away_since=r.away_since, away_seen=r.away_seen, away_taken_over=r.taken_over,
                   absence_stored=(r.away_since, r.taken_over))

    def record(self) -> SeatRecord:
        return SeatRecord(self.seat, self.kind, self.bot, self.player_name, self.token_hash,
                          self.joined_at, self.left, self.join_hash)

    @property
    def taken(self) -> bool:
        return bool(self.token_hash)

    @property
    def present(self) -> bool:
        return self.kind == "bot" or self.streams > 0

    @property
    def absent(self) -> bool:
        """A player who joined, has not left, and has no open stream."""
        return self.kind == "open" and self.taken and not self.left and self.streams == 0

    @property
    def bot_driven(self) -> bool:
        return self.kind == "bot" or self.left or self.taken_over

    @property
    def replaced_by_bot(self) -> bool:
        """A player's seat that a bot plays: absent past the grace period, or left (GJ-12.4)."""
        return self.kind == "open" and (self.left or self.taken_over)

    def info(self, takeover_bot: str) -> SeatInfo:
        """The public seat; ``takeover_bot``: the match's bot for absent players (GJ-12.4),
        named as the seat's bot while it plays the seat ("": the auto-move policy)."""
        return SeatInfo(seat=self.seat, kind=self.kind,  # type: ignore[arg-type]
                        bot=self.bot or (takeover_bot if self.replaced_by_bot else ""),
                        player_name=self.player_name, taken=self.taken, present=self.present,
                        replaced_by_bot=self.replaced_by_bot, left=self.left)

    def public(self, takeover_bot: str) -> dict[str, Any]:
        """Seat facts every audience may know (GJ-11.1: names, connection status): the facts
        of :meth:`info`, the bot that plays a replaced seat included. The events' ``seats``
        once named no bot there while ``GetMatch`` named the takeover bot, so a table that
        drew "played by ..." from a ``bot_took_over`` event showed nobody."""
        info = self.info(takeover_bot)
        return {"seat": info.seat, "kind": info.kind, "bot": info.bot, "player_name": info.player_name,
                "taken": info.taken, "present": info.present, "left": info.left,
                "replaced_by_bot": info.replaced_by_bot}


#: A fold of a past position leaves a copy of the state every this many actions (LiveMatch.fold).
CHECKPOINT_EVERY = 256


class StateMemo:
    """Values derived from one state object, kept while it is its match's state (a state is
    never changed once it is a match's state: the writer applies actions to a clone)."""

    __slots__ = ("state", "views_at", "views", "scored", "encodings", "_make_view")

    def __init__(self, state: State) -> None:
        self.state = state
        # what the transport encoded of the state's views, by object (ViewEnvelope.encodings)
        self.encodings: dict[Any, Any] = {}
        self.views_at: tuple[Any, ...] | None = None  # (seq, status, deadline) of ``views``
        self.views: dict[Audience, ViewEnvelope] = {}  # the envelope of each audience
        self.scored: int | None = None  # len(state.deal_results())
        self._make_view: ViewMaker | None = None

    def view(self, audience: Audience) -> dict[str, Any]:
        """The rules' view of the state for ``audience``: the audiences of one state share
        what their views have in common (``State.view_maker``)."""
        if self._make_view is None:
            self._make_view = self.state.view_maker()
        return view_for(self.state, audience, self._make_view)


#: How many voided seat tokens a match remembers for retried leaves (LiveMatch.freed_tokens):
#: a retry comes within seconds of its leave, while a waiting match can see any number of
#: joins and leaves (each a new token); the oldest is forgotten first.
FREED_TOKENS_KEPT = 32


class LiveMatch:
    """A match in memory. ``state`` is always the fold of ``actions`` over ``decks``.

    Slotted: a server holds thousands of idle matches, and an instance dict past CPython's
    compact (key-sharing) size would cost 1.3 KB more per match."""

    __slots__ = ("match_id", "game", "options", "first_dealer", "turn_time_s", "reconnect_grace_s",
                 "spectators_allowed", "name", "takeover_bot", "listed", "created_at", "status", "result",
                 "ended_at", "seats", "decks", "actions", "client_ids", "state", "deals_dealt",
                 "policy", "lock", "watchers", "timer_key", "timer_handle", "deadline", "bot_key",
                 "bot_writing", "retry_handle", "finished_mono", "_memo", "_commitments", "shown", "log",
                 "_checkpoints",
                 "spectator_delay", "spectators_seen", "_cursor", "end_in_doubt", "log_in_doubt",
                 "create_hash", "create_digest", "freed_tokens")

    def __init__(self, record: MatchRecord, decks: list[DeckRecord], actions: list[ActionRecord],
                 deal_limit: int = 0) -> None:
        """``deal_limit``: the server's ``--max-match-deals`` (0: none), which a match read back
        active is folded under (see below)."""
        self.match_id = record.match_id
        try:
            self.game: Game = get_game(record.game)
            self.options = self.game.options(record.options)
        except RulesError as exc:  # a record this program cannot have written (or no longer knows)
            raise CorruptLog(f"match {record.match_id}: {exc}") from exc
        self.first_dealer = record.first_dealer
        self.turn_time_s = record.turn_time_s
        self.reconnect_grace_s = record.reconnect_grace_s
        self.spectators_allowed = record.spectators_allowed
        self.spectator_delay = record.spectator_delay_actions
        # CreateMatch's client_create_id, hashed, and the request's digest ("": none)
        self.create_hash = record.create_hash
        self.create_digest = record.create_digest
        self.name = record.name
        self.takeover_bot = record.takeover_bot
        self.listed = record.listed
        self.created_at = record.created_at
        self.status: MatchStatus = record.status  # type: ignore[assignment]
        self.result = dict(record.result) if record.result is not None else None
        self.ended_at = record.ended_at
        self.seats = [SeatSlot.from_record(s) for s in record.seats]
        self.decks: dict[int, DeckRecord] = {d.deal: d for d in decks}
        self.actions: list[ActionRecord] = list(actions)
        self.client_ids: dict[tuple[int, str], ActionRecord] = {
            (a.seat, a.client_action_id): a for a in self.actions if a.client_action_id}
        # seq -> (the state after that many actions, decks dealt), every CHECKPOINT_EVERY
        # actions, taken by the folds of past positions (a resumed watch, a retried action)
        self._checkpoints: dict[int, tuple[State, int]] = {}
        # The last action deals no deck past those the match had dealt. Ended: recorded with its
        # end as their commitments (none recorded: schema < 4, or no deal dealt; no bound then).
        # Active: none past the deal limit, as MatchWriter.apply would deal none. A log that
        # reached the limit without its end (written apart by a version before 2026-12-05, or
        # a limit lowered since) is ended when it is loaded; an admin's deck given ahead for
        # the deal past the limit was dealt by the fold first, and the ended match showed each
        # seat its hand of it, named its commitment (also in the end written) and revealed it
        if self.over:
            most = len(record.deal_commitments) or None
        else:
            most = deal_limit or None
        self.state, self.deals_dealt = self._fold(len(self.actions), False, most)
        self.policy = absence_policy(self.game)
        # delayed spectators (.delay): the last seq released to them, and their position
        self.spectators_seen = self.spectator_horizon()
        self._cursor: SpectatorCursor | None = None

        self.lock = asyncio.Lock()
        self.watchers: set[Watcher] = set()
        # the armed decision: (seq, seat) it belongs to, its timer and its unix deadline
        self.timer_key: tuple[int, int] | None = None
        self.timer_handle: asyncio.TimerHandle | None = None
        self.deadline: float | None = None
        self.bot_key: tuple[int, int] | None = None
        self.bot_writing: tuple[int, int] | None = None  # the bot move being written (Clock._bot_move)
        # the pending retry of a bot or policy move the store refused (Clock._retry_later)
        self.retry_handle: asyncio.TimerHandle | None = None
        self.finished_mono: float | None = None  # event-loop time of the end (eviction)
        self.end_in_doubt = False  # an end's write and its read-back failed (MatchWriter.settle_end)
        self.log_in_doubt = False  # an append answered with an error, not read back (MatchWriter.settle_log)
        # what was derived from the current state (envelopes, deals scored), made on first use
        self._memo: StateMemo | None = None
        self._commitments: dict[int, str] = {}  # deal -> its deck's commitment, once computed
        # deal -> the cards the table saw (fairness.shown_cards), once the match is over
        self.shown: dict[int, frozenset[str]] | None = None
        # token hash -> (seat, the answer) of each seat token a LeaveMatch of the waiting match
        # voided, the latest FREED_TOKENS_KEPT: a retry of that leave whose first answer was lost
        # gets the same answer (MatchManager.repeated_leave). In memory only, like the map of
        # live tokens: the store keeps nothing of a void token
        self.freed_tokens: dict[str, tuple[int, MatchSummary]] = {}
        self.log = structlog.get_logger("engine_service.sessions").bind(
            match_id=self.match_id, game=self.game.id)

    # ---- the log ------------------------------------------------------------------------

    @property
    def seq(self) -> int:
        return len(self.actions)

    @property
    def num_seats(self) -> int:
        return self.game.num_seats

    @property
    def active(self) -> bool:
        return self.status == "active"

    @property
    def over(self) -> bool:
        return self.status in ("finished", "terminated")

    @property
    def unstarted(self) -> bool:
        """Whether the match never started: it waits for players, or it ended while it waited
        (TerminateMatch, the waiting timeout) with a seat still free. A match starts once
        every seat is taken, and a seat stays taken for good from then on (a player who
        leaves a started match keeps it, GJ-12.4), so this holds after a restart too."""
        return self.status == "waiting" or (self.over and bool(self.open_seats()))

    def beat(self) -> None:
        """Every stream sends a heartbeat now (:meth:`.watchers.Watcher.beat`): the clock
        changed with no event of its own to carry the new deadline."""
        for w in self.watchers:
            w.beat()

    def dealt_at_most(self) -> int | None:
        """How many decks a replay of the log may deal: an ended match's, those it had dealt
        (None: no bound while it is played). The action that reaches ``--max-match-deals``
        ends the match with the next deal due and not dealt (MatchWriter.apply); an admin may
        have given that deal's deck ahead, and a replay dealt it: the match read back (after
        its eviction or a restart) showed the seats their hands of a deal never dealt, named
        its commitment and revealed its deck (RevealDeals), and an export showed it dealt."""
        return self.deals_dealt if self.over else None

    def fold(self, seq: int, checkpoints: bool = True) -> tuple[State, int]:
        """The state after the first ``seq`` actions, and how many decks it has dealt.

        A deal that is due after the last folded action is dealt when its deck is known (and
        :meth:`dealt_at_most` allows); otherwise the state is left waiting for it (CHANCE) and
        the caller supplies one.

        Starts from the nearest checkpoint at or before ``seq`` and, with ``checkpoints``,
        leaves one every :data:`CHECKPOINT_EVERY` actions it passes: a fold of a late position
        replayed the whole match (43 ms at seq 6,000) for every resumed watch or retried
        action, which a client could repeat at will. Loading a match takes none (an idle match
        keeps no copies).
        """
        return self._fold(seq, checkpoints, self.dealt_at_most())

    def _fold(self, seq: int, checkpoints: bool, most: int | None) -> tuple[State, int]:
        """:meth:`fold`, the last folded action dealing no deck past ``most`` (None: no
        bound). A deal that the log goes on to play was dealt whatever ``most`` says: a limit
        lowered below the deals a match has played ends it where its log stops."""
        start = max((k for k in self._checkpoints if k <= seq), default=0)
        if start:
            saved, dealt = self._checkpoints[start]
            state = saved.clone()
        else:
            state = self.game.new_state(self.options, first_dealer=self.first_dealer)
            dealt = 0
        at = "the first deck"  # what failed, for the error: the deck or the record being replayed
        try:
            if not start and state.to_act() == CHANCE and 0 in self.decks:
                state.deal(self.decks[0].cards)
                dealt = 1
            folded = self.actions[start:seq]
            last = folded[-1] if folded else None
            for rec in folded:
                at = f"the action at seq {rec.seq} (seat {rec.seat}, {rec.action!r})"
                if state.to_act() == CHANCE:
                    raise CorruptLog(f"no deck for deal {dealt} before seq {rec.seq}")
                dealt = play_logged(state, rec, self.decks, dealt, most if rec is last else None)
                # not while a deal waits for its deck: the deck may be known later
                if (checkpoints and rec.seq % CHECKPOINT_EVERY == 0 and rec.seq not in self._checkpoints
                        and state.to_act() != CHANCE):
                    self._checkpoints[rec.seq] = (state.clone(), dealt)
        except CorruptLog:
            raise
        except Exception as exc:  # a rules error: the stored log does not replay
            # Named by the record and the error's type and reason, never the rules' message: it
            # is written for the acting seat and tells what it holds ("KC is not in your hand",
            # "you must follow suit C", "legal now: play:7S, ..."), and an InvalidDeck's names
            # the deck's cards; this error goes into the operator's log (match_resume_failed,
            # match_load_failed) while the match may still be played by others.
            raise CorruptLog(f"match {self.match_id}: the log does not replay: {at} is refused: "
                             f"{loggable_error(exc) if isinstance(exc, RulesError) else type(exc).__name__}") from exc
        return state, dealt

    def states(self, after_seq: int, upto_seq: int):
        """Yield ``(action record, state after it)`` for seq in (after_seq, upto_seq]; the
        same state object is advanced in place (copy what you keep)."""
        for rec, state, _ in self.replay(after_seq, upto_seq, details=False):
            yield rec, state

    def replay(self, after_seq: int, upto_seq: int, details: bool = True):
        """:meth:`states` with, third, the details its live ``action`` event carried
        (:func:`action_details`; ``{}`` when ``details`` is False)."""
        state, dealt = self.fold(after_seq)
        scored = len(state.deal_results()) if details else 0
        most = self.dealt_at_most()
        for rec in self.actions[after_seq:upto_seq]:
            dealt = play_logged(state, rec, self.decks, dealt, most)
            extra: dict[str, Any] = {}
            if details:
                now = len(state.deal_results())
                extra, scored = action_details(scored, now), now
            yield rec, state, extra

    # ---- views --------------------------------------------------------------------------

    def envelope(self, audience: Audience, state: State | None = None, seq: int | None = None,
                 deadline: float | None = None) -> ViewEnvelope:
        """A view of the current state (or of ``state`` at ``seq``, without a deadline).

        The current state's envelope of an audience is built once and shared until the state,
        the sequence number, the status or the deadline changes: every watcher of that audience
        and the SubmitAction answer get the same immutable envelope, which the transport then
        encodes once. Its ``view`` is shared too: readers must not mutate it (copy it first).
        """
        if state is None:
            if audience == SPECTATOR and self.spectator_delay and self.spectator_horizon() < self.seq:
                return self._delayed_envelope()
            memo = self.memo()
            at = (self.seq, self.status, self.deadline)
            if memo.views_at != at:
                memo.views = {}
                memo.views_at = at
            else:
                env = memo.views.get(audience)
                if env is not None:
                    return env
            if audience != ADMIN and self.unstarted:
                view = self._as_ended(before_start(self._undealt_view(), audience, self.game.draw_keys))
            else:
                view = self._as_ended(memo.view(audience))
            env = memo.views[audience] = self._envelope_of(audience, view, self.seq, self.deadline,
                                                           encodings=memo.encodings)
            return env
        # a view of the past: the match was active then (actions happen only in an active
        # match); at the last seq of a match that is over, as it ended
        seq = self.seq if seq is None else seq
        view = view_for(state, audience)
        if seq < self.seq:
            return self._envelope_of(audience, view, seq, deadline, "active")
        return self._envelope_of(audience, self._as_ended(view), seq, deadline)

    def _undealt_view(self) -> dict[str, Any]:
        """The public view of the match before its first deal, which the waiting views are
        built from (:func:`.views.before_start`). A table with open seats is dealt when its
        last seat is taken, so that nobody choosing a seat sees a card of the first deal; one
        given the admin's decks is dealt at creation, and the public view of that deal shows
        its turn-up, trump indicator or Japanese Joker's up cards (each seat's own columns, a
        reason to pick one seat over another), cards that a duplicate tournament deals at
        other tables. Ended while it waited, the match never shows them either."""
        return view_for(self.game.new_state(self.options, first_dealer=self.first_dealer), SPECTATOR)

    def view_at(self, audience: Audience, seq: int) -> ViewEnvelope:
        """``audience``'s envelope at ``seq``: the current one (shared) where it is that seq's,
        else a fold of the log up to ``seq``."""
        if seq == self.seq or (audience == SPECTATOR and seq == self.spectator_horizon()):
            return self.envelope(audience)
        state, _ = self.fold(seq)
        return self.envelope(audience, state, seq)

    # ---- delayed spectators (.delay) -----------------------------------------------------

    def spectator_horizon(self) -> int:
        """The last seq spectators may see now (:func:`.delay.horizon`)."""
        return horizon(self.seq, self.spectator_delay, self.active)

    def _delayed_envelope(self) -> ViewEnvelope:
        """The spectators' view of a delayed match: the public view at the horizon, built
        once per position for every spectator."""
        seq = self.spectator_horizon()
        c = self._cursor = cursor_at(self, self._cursor, seq)
        if c.envelope is None:
            c.envelope = self.envelope(SPECTATOR, c.state, seq)
        return c.envelope

    def spectator_releases(self, build: bool = True) -> list[tuple[ActionRecord, ViewEnvelope, dict[str, Any]]]:
        """The actions spectators may see now and have not been shown (seq in
        (``spectators_seen``, horizon]), in order, each with the spectators' view after it and
        its event's details; marks them shown. ``build`` False (nobody watches as a
        spectator): only marked."""
        upto, after = self.spectator_horizon(), self.spectators_seen
        if upto <= after:
            return []
        self.spectators_seen = upto
        if not build:
            return []
        out: list[tuple[ActionRecord, ViewEnvelope, dict[str, Any]]] = []
        for rec, c, details in released(self, self._cursor, after, upto):
            self._cursor = c
            if rec.seq == self.seq:  # the match is over: its last view, as it ended
                env = self.envelope(SPECTATOR)
            else:
                env = c.envelope = self.envelope(SPECTATOR, c.state, rec.seq)
            out.append((rec, env, details))
        if self.over:
            self._cursor = None  # nothing is delayed any more
        return out

    def _as_ended(self, view: dict[str, Any]) -> dict[str, Any]:
        """``view`` of the current seq; once the match is over, over with its winners and
        nobody to act in it, however the match ended (:func:`.views.after_end`)."""
        if not self.over or (view.get("over") and view.get("to_act") is None):
            return view  # not over, or over by the rules: the rules' view says it all
        return after_end(view, (self.result or {}).get("winners") or ())

    @property
    def in_doubt(self) -> bool:
        """Whether a write of this match left its outcome unknown (an end, an action): settled
        by MatchWriter.settle before anything else is written."""
        return self.end_in_doubt or self.log_in_doubt

    def memo(self) -> "StateMemo":
        """The values derived from the current state object (replaced with it)."""
        memo = self._memo
        if memo is None or memo.state is not self.state:
            memo = self._memo = StateMemo(self.state)
        return memo

    def _envelope_of(self, audience: Audience, view: dict[str, Any], seq: int,
                     deadline: float | None, status: MatchStatus | None = None,
                     encodings: dict[Any, Any] | None = None) -> ViewEnvelope:
        return ViewEnvelope(match_id=self.match_id, seq=seq, status=status or self.status, view=view,
                            deadline=deadline, seat=audience if isinstance(audience, int) else None,
                            deal_commitment=self.commitment_of(int(view.get("deal_number") or 0)),
                            encodings=encodings)

    def commitment_of(self, deal: int) -> str:
        """The public commitment to the deck of ``deal``: "" for a deal not dealt yet (an
        admin's deck given ahead stays unannounced; a finished match's view may name the deal
        after its last) or for a deck recorded before commitments existed."""
        if deal >= self.deals_dealt:
            return ""
        known = self._commitments.get(deal)
        if known is None:
            # every deal dealt has its deck: a fold deals only the decks it holds, and the
            # writer, a start and a catch-up add a deck before they count it dealt
            known = self._commitments[deal] = deck_commitment(self.decks[deal])
        return known

    def presence(self) -> list[dict[str, Any]]:
        return [s.public(self.takeover_bot) for s in self.seats]

    # ---- summaries ----------------------------------------------------------------------

    def summary(self, live: bool = False) -> MatchSummary:
        """The match's summary for anybody (GetMatch needs no token): its ``deal_commitments``
        stop at the deals dealt by the spectators' horizon (:meth:`spectator_deal_commitments`),
        as their views do. ``live``: the admin's (never delayed), every deal dealt so far."""
        return MatchSummary(
            match_id=self.match_id, game=self.game.id, options=self.options.non_default(),
            status=self.status, seq=self.seq, seats=tuple(s.info(self.takeover_bot) for s in self.seats),
            turn_time_s=self.turn_time_s, spectators_allowed=self.spectators_allowed,
            created_at=self.created_at, name=self.name,
            result=dict(self.result) if self.result is not None else None, listed=self.listed,
            deal_commitments=self.deal_commitments() if live else self.spectator_deal_commitments(),
            spectator_delay_actions=self.spectator_delay)

    def deal_commitments(self) -> tuple[str, ...]:
        """The public commitment of every deal dealt so far, in deal order (decks given ahead,
        by the admin, stay unannounced until dealt)."""
        return tuple(self.commitment_of(d) for d in range(self.deals_dealt))

    def spectator_deal_commitments(self) -> tuple[str, ...]:
        """:meth:`deal_commitments` as delayed spectators may know them: those of the deals
        dealt by their horizon. A new commitment says that a deal ended (a Klaberjass deal
        thrown in after four passes, KL-3.5, is two actions long or eight), which their views
        show only D actions later; counted live, it told them first."""
        seq = self.spectator_horizon()
        if seq >= self.seq:
            return self.deal_commitments()
        c = self._cursor = cursor_at(self, self._cursor, seq)
        return tuple(self.commitment_of(d) for d in range(c.dealt))

    def shown_cards(self) -> dict[int, frozenset[str]]:
        """Per deal dealt, the cards the table saw (:func:`.fairness.shown_cards`): a replay of
        the whole match, for a match that is over (its log no longer changes)."""
        if not self.over:
            raise RuntimeError("the decks of a match are secret until it is over")
        if self.unstarted:  # dealt at creation (the admin's decks), never shown (_undealt_view)
            return {}
        return shown_cards(self.game, self.options, self.first_dealer, self.decks, self.actions)

    def reveals(self) -> list[DealReveal]:
        """Every deal dealt, its commitment opened for the cards the table saw (``shown``,
        computed first): only for a match that is over."""
        if not self.over or self.shown is None:
            raise RuntimeError("the decks of a match are secret until it is over")
        decks, shown = self.decks, self.shown
        return [reveal(decks[d], shown.get(d, frozenset()), self.commitment_of(d))
                for d in range(self.deals_dealt) if d in decks]

    def open_seats(self) -> list[SeatSlot]:
        return [s for s in self.seats if s.kind == "open" and not s.taken]
