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
* **Idempotent and ordered**: ``client_action_id`` (per seat) makes a retry return the first
  result with ``duplicate=True``; the ids are rebuilt from the durable log after a restart.
  ``expected_seq`` rejects a decision taken on a stale view (StaleSequence carries the
  current one).
* **Redacted at the source**: every view and event is built for its audience by
  :mod:`.views` from the rules core's own views.
* **Time and absence** follow the rulebooks (:mod:`.policy`); timers are armed on the event
  loop and re-armed from scratch after a restart.
* **Bots** are called through the bot host off the event loop with only their seat's view;
  any failure falls back to the auto-move policy.
"""

from __future__ import annotations

import asyncio
import secrets
import time
import unicodedata
from typing import Any, AsyncIterator, Awaitable, Mapping, Protocol, Sequence

import structlog

from ..observability.metrics import Metrics, get_metrics
from ..rules import transcript
from ..rules.cards import card_code, parse_deck
from ..rules.errors import RulesError
from ..rules.game import CHANCE
from ..rules.registry import all_games, get_game
from ..store import MatchListing, Store, StoreError, open_store
from ..store.base import STATUSES, ActionRecord, DeckRecord, MatchRecord, SeatRecord, StoredMatch
from .api import (BadRequest, BotInfo, CreateMatchRequest, GameInfo, JoinResult, LimitExceeded,
                  MatchEvent, MatchNotActive, MatchNotFound, MatchSummary, PermissionDenied,
                  Principal, SeatConfig, SeatInfo, SeatTaken, SessionError, StaleSequence, SubmitResult,
                  Unauthenticated, Unavailable, ViewEnvelope)
from .chance import draw_first_dealer, random_deck
from .config import SessionConfig
from .match import CorruptLog, LiveMatch, SeatSlot
from .policy import FORFEIT, merge_turn_time, reconnect_grace, turn_time
from .tokens import new_match_id, new_token, token_hash
from .views import ADMIN, SPECTATOR, Audience, audience_kind, public_or_none
from .watchers import Watcher, _End

log = structlog.get_logger("engine_service.sessions")

MAX_ACTION_LENGTH = 64
MAX_CLIENT_ACTION_ID_LENGTH = 128
MAX_MATCH_ID_LENGTH = 64
RETRY_AFTER_STORE_FAILURE_S = 1.0


class BotHostLike(Protocol):
    """What the manager needs of :class:`engine_service.plugins.host.BotHost`."""

    def bots(self) -> list[BotInfo]: ...

    def plays(self, bot: str, game_id: str) -> bool: ...

    async def decide(self, bot: str, game_id: str, seat: int, view: dict, legal: list[str],
                     seed: int, deadline_s: float) -> Any: ...

    async def close(self) -> None: ...


def _clean_name(text: str, limit: int, what: str) -> str:
    """A display name: trimmed, printable, at most ``limit`` characters."""
    if not isinstance(text, str):
        raise BadRequest(f"{what} must be a string", reason="BAD_NAME")
    text = " ".join(text.split())
    if len(text) > limit:
        raise BadRequest(f"{what} is longer than {limit} characters", reason="BAD_NAME")
    if any(unicodedata.category(ch).startswith("C") for ch in text):
        raise BadRequest(f"{what} contains control characters", reason="BAD_NAME")
    return text


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
        self._store = store if store is not None else open_store(self.config.db_path, self.metrics)
        self._host = bot_host
        self._create_host = bot_host is None and create_bot_host
        self._owns_host = False
        self._matches: dict[str, LiveMatch] = {}
        self._tokens: dict[str, tuple[str, int]] = {}  # token hash -> (match id, seat)
        self._load_lock = asyncio.Lock()
        self._tasks: set[asyncio.Task] = set()
        self._sweeper: asyncio.Task | None = None
        self._started = False
        self._draining = False
        self._closed = False

    # ---- lifecycle ------------------------------------------------------------------------

    async def start(self) -> None:
        """Open the store, rebuild every unfinished match from its log, re-arm its timers."""
        if self._started:
            return
        await self._store.open()
        if self._create_host and self._host is None:
            from ..plugins.host import BotHost

            self._host = BotHost(workers=self.config.bot_workers, metrics=self.metrics)
            self._owns_host = True
        resumed: list[LiveMatch] = []
        for match_id in await self._store.unfinished_match_ids():
            try:
                m = await self._load(match_id)
            except (CorruptLog, StoreError, RulesError) as exc:
                log.error("match_resume_failed", match_id=match_id, error=str(exc))
                continue
            if m is not None and not m.over:
                resumed.append(m)
                self.metrics.matches_resumed.labels(m.game.id).inc()
                m.log.info("match_resumed", seq=m.seq, status=m.status)
        self._started = True
        now = asyncio.get_running_loop().time()
        for m in resumed:
            if m.active:
                for slot in m.seats:
                    if slot.absent:  # nobody is connected after a restart
                        self._arm_grace(m, slot, start=now)
                self._schedule(m)
        interval = max(1.0, min(60.0, self.config.finished_retention_s / 4 or 1.0))
        self._sweeper = asyncio.create_task(self._sweep(interval), name="sessions-sweeper")

    async def drain(self) -> None:
        """Refuse new work (Unavailable), let in-flight actions finish, close every stream."""
        if self._draining:
            return
        self._draining = True
        if self._sweeper is not None:
            self._sweeper.cancel()
        for m in self._matches.values():
            self._disarm(m)
            for slot in m.seats:
                self._cancel_grace(slot)
            if m.bot_task is not None:
                m.bot_task.cancel()
            m.bot_key = None
        for m in list(self._matches.values()):
            async with m.lock:  # the writer in flight, if any, finishes first
                pass
        for m in self._matches.values():
            for w in list(m.watchers):
                w.end(Unavailable("the service is shutting down; watch again later",
                                  reason="DRAINING"))
        pending = [t for t in self._tasks if t is not asyncio.current_task()]
        for t in pending:
            t.cancel()
        await asyncio.gather(*pending, return_exceptions=True)
        if self._sweeper is not None:
            await asyncio.gather(self._sweeper, return_exceptions=True)
        log.info("sessions_drained", matches=len(self._matches))

    async def close(self) -> None:
        if self._closed:
            return
        await self.drain()
        self._closed = True
        await self._store.close()
        if self._owns_host and self._host is not None:
            await self._host.close()

    # ---- catalog --------------------------------------------------------------------------

    def list_games(self) -> list[GameInfo]:
        return [GameInfo(id=g.id, name=g.name, num_seats=g.num_seats, description=g.description,
                         rulebook=g.rulebook, options=tuple(g.option_specs)) for g in all_games()]

    def list_bots(self) -> list[BotInfo]:
        return list(self._host.bots()) if self._host is not None else []

    # ---- authentication -------------------------------------------------------------------

    def authenticate(self, match_id: str, token: str | None, *, admin: bool = False) -> Principal:
        """Resolve a bearer token for ``match_id`` (see api.MatchService.authenticate).

        ``admin``: the transport has verified the admin token. No token: a spectator. A seat
        token is valid while its match is held in memory (unfinished, or finished less than
        ``finished_retention_s`` ago).
        """
        if admin:
            return Principal(kind="admin", match_id=match_id)
        if not token:
            return Principal(kind="spectator", match_id=match_id)
        entry = self._tokens.get(token_hash(token))
        if entry is None:
            raise Unauthenticated("unknown or expired seat token")
        owner, seat = entry
        if match_id and owner != match_id:
            raise PermissionDenied("this seat token belongs to another match", reason="WRONG_MATCH")
        return Principal(kind="seat", match_id=owner, seat=seat)

    # ---- creating and joining -------------------------------------------------------------

    async def create_match(self, request: CreateMatchRequest, *, admin: bool = False) -> MatchSummary:
        self._require_running()
        game = get_game(request.game)
        if not admin and (request.decks or request.first_dealer is not None):
            raise PermissionDenied("explicit decks and first_dealer need the admin token",
                                   reason="ADMIN_ONLY")
        raw = merge_turn_time(game, request.options or {}, float(request.turn_time_s or 0))
        options = game.options(raw)
        turn = turn_time(game, options, float(request.turn_time_s or 0), self.config)
        grace = reconnect_grace(game, options, self.config)
        seats = self._seat_configs(game, request.seats)
        requested_takeover = getattr(request, "takeover_bot", "") or ""
        if requested_takeover:
            self._check_bot(requested_takeover, game.id)
        # the session default is checked when used: a bot that does not play this game fails
        # over to the auto-move policy like any failing bot
        takeover = requested_takeover or self.config.takeover_bot
        name = _clean_name(request.name or "", self.config.max_name_length, "the match name")

        decks = [DeckRecord(i, tuple(card_code(c) for c in parse_deck(d, game.pack)))
                 for i, d in enumerate(request.decks or ())]
        if request.first_dealer is not None:
            fd = request.first_dealer
            if isinstance(fd, bool) or not isinstance(fd, int) or not 0 <= fd < game.num_seats:
                raise BadRequest(f"first_dealer must be a seat number 0..{game.num_seats - 1}",
                                 reason="BAD_FIRST_DEALER")
        else:
            fd = draw_first_dealer(game, options)
        if not decks:
            decks = [DeckRecord(0, random_deck(game))]

        unfinished = [m for m in self._matches.values() if not m.over]
        if len(unfinished) >= self.config.max_matches:
            raise LimitExceeded(f"this server holds its maximum of {self.config.max_matches} matches",
                                reason="MAX_MATCHES")
        has_open = any(s.kind == "open" for s in seats)
        if has_open and sum(m.status == "waiting" for m in unfinished) >= self.config.max_waiting_matches:
            raise LimitExceeded("too many matches are waiting for players", reason="MAX_WAITING_MATCHES")

        record = MatchRecord(
            match_id=new_match_id(), game=game.id, options=options.non_default(), first_dealer=fd,
            seats=tuple(SeatRecord(i, s.kind, s.bot if s.kind == "bot" else "") for i, s in enumerate(seats)),
            turn_time_s=turn, reconnect_grace_s=grace, spectators_allowed=bool(request.spectators_allowed),
            name=name, takeover_bot=takeover, created_at=time.time(),
            status="waiting" if has_open else "active")
        m = LiveMatch(record, decks, [])
        await self._store_call(self._store.create_match(record, decks), "create_match")
        self._register(m)
        self.metrics.matches_created.labels(game.id).inc()
        m.log.info("match_created", status=m.status, seats=[s.kind for s in m.seats],
                   bots=[s.bot for s in m.seats if s.bot], options=dict(options.non_default()),
                   turn_time_s=turn, reconnect_grace_s=grace, spectators_allowed=m.spectators_allowed,
                   admin_decks=len(request.decks or ()))
        if m.active:
            self._schedule(m)
        return m.summary()

    def _seat_configs(self, game: Any, seats: Sequence[SeatConfig]) -> list[SeatConfig]:
        seats = list(seats or [])
        if not seats:
            return [SeatConfig()] * game.num_seats
        if len(seats) != game.num_seats:
            raise BadRequest(f"{game.id} has {game.num_seats} seats, {len(seats)} were configured",
                             reason="BAD_SEATS")
        for i, s in enumerate(seats):
            if s.kind not in ("open", "bot"):
                raise BadRequest(f"seat {i}: kind must be open or bot", reason="BAD_SEATS")
            if s.kind == "bot":
                self._check_bot(s.bot, game.id)
        return seats

    def _check_bot(self, bot: str, game_id: str) -> None:
        if not bot:
            raise BadRequest("a bot seat needs a bot name", reason="UNKNOWN_BOT")
        if self._host is None or not self._host.plays(bot, game_id):
            known = sorted(b.name for b in self.list_bots() if game_id in b.games)
            raise BadRequest(f"no bot {bot!r} plays {game_id}; available: {', '.join(known) or 'none'}",
                             reason="UNKNOWN_BOT", bot=bot)

    async def join_match(self, match_id: str, seat: int | None, player_name: str) -> JoinResult:
        self._require_running()
        m = await self._get(match_id)
        name = _clean_name(player_name or "", self.config.max_name_length, "the player name")
        async with m.lock:
            if m.over:
                raise MatchNotActive("the match is over")
            if seat is None:
                free = m.open_seats()
                if not free:
                    raise SeatTaken("no open seat is left in this match")
                slot = free[0]
            else:
                if isinstance(seat, bool) or not isinstance(seat, int) or not 0 <= seat < m.num_seats:
                    raise BadRequest(f"seat must be 0..{m.num_seats - 1}", reason="BAD_SEAT")
                slot = m.seats[seat]
                if slot.kind == "bot":
                    raise SeatTaken(f"seat {seat} is played by a bot")
                if slot.taken:
                    raise SeatTaken(f"seat {seat} is taken")
            token = new_token()
            digest = token_hash(token)
            rec = SeatRecord(slot.seat, "open", "", name, digest, time.time(), False)
            await self._store_call(self._store.save_seat(m.match_id, rec), "save_seat")
            slot.player_name, slot.token_hash, slot.joined_at, slot.left = name, digest, rec.joined_at, False
            self._tokens[digest] = (m.match_id, slot.seat)
            m.log.info("seat_joined", seat=slot.seat)
            if m.status == "waiting" and not m.open_seats():
                await self._activate(m)
            self._presence(m, slot, "joined")
            return JoinResult(match_id=m.match_id, seat=slot.seat, token=token)

    async def _activate(self, m: LiveMatch) -> None:
        await self._store_call(self._store.set_status(m.match_id, "active"), "set_status")
        self.metrics.matches_active.labels(m.game.id, "waiting").dec()
        self.metrics.matches_active.labels(m.game.id, "active").inc()
        m.status = "active"
        m.log.info("match_started", seq=m.seq)
        now = asyncio.get_running_loop().time()
        for slot in m.seats:
            if slot.absent:
                self._arm_grace(m, slot, start=now)
        self._schedule(m)

    # ---- reading --------------------------------------------------------------------------

    async def get_view(self, match_id: str, principal: Principal) -> ViewEnvelope:
        self._require_open()
        m = await self._get(match_id)
        return m.envelope(self._audience(m, principal))

    async def get_match(self, match_id: str) -> MatchSummary:
        self._require_open()
        return (await self._get(match_id)).summary()

    async def list_matches(self, status: str = "", game: str = "", limit: int = 100) -> list[MatchSummary]:
        self._require_open()
        if status and status not in STATUSES:
            raise BadRequest(f"unknown status {status!r}; allowed: {', '.join(STATUSES)}", reason="BAD_STATUS")
        if game:
            get_game(game)
        limit = max(0, min(int(limit or 100), 1000))
        listings = await self._store.list_matches([status] if status else (), game, limit)
        return [self._matches[li.record.match_id].summary() if li.record.match_id in self._matches
                else _summary_of(li) for li in listings]

    async def inspect_match(self, match_id: str) -> ViewEnvelope:
        """Omniscient view: every hand and zone, the first dealer and every deck."""
        self._require_open()
        m = await self._get(match_id)
        env = m.envelope(ADMIN)
        view = dict(env.view)
        view["first_dealer"] = m.first_dealer
        view["decks"] = [list(m.decks[d].cards) for d in sorted(m.decks)]
        view["seats"] = m.presence()
        return ViewEnvelope(env.match_id, env.seq, env.status, view, env.deadline, None)

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
        seat = self._acting_seat(principal, match_id)
        m = await self._get(match_id)
        game = m.game.id
        try:
            if not isinstance(action, str) or not action or len(action) > MAX_ACTION_LENGTH:
                raise BadRequest(f"an action is a notation string of 1..{MAX_ACTION_LENGTH} characters",
                                 reason="BAD_ACTION")
            client_action_id = client_action_id or ""
            if not isinstance(client_action_id, str) or len(client_action_id) > MAX_CLIENT_ACTION_ID_LENGTH:
                raise BadRequest(f"client_action_id is at most {MAX_CLIENT_ACTION_ID_LENGTH} characters",
                                 reason="BAD_CLIENT_ACTION_ID")
            async with m.lock:
                if client_action_id:
                    first = m.client_ids.get((seat, client_action_id))
                    if first is not None:
                        if first.action != action:
                            raise BadRequest("client_action_id was already used for another action",
                                             reason="CLIENT_ACTION_ID_REUSED")
                        self.metrics.actions.labels(game, "player", "duplicate").inc()
                        return SubmitResult(seq=first.seq, action=first.action,
                                            view=self._view_at(m, seat, first.seq), duplicate=True)
                if m.over:
                    raise MatchNotActive("the match is over")
                if m.status == "waiting":
                    raise MatchNotActive("the match is waiting for players", reason="MATCH_WAITING")
                if m.seats[seat].left:
                    raise PermissionDenied("you have left this match", reason="SEAT_LEFT")
                if expected_seq is not None and expected_seq != m.seq:
                    raise StaleSequence(f"expected_seq {expected_seq} is stale: the match is at seq {m.seq}",
                                        current=m.envelope(seat))
                rec = await self._apply(m, seat, action, by="player", client_action_id=client_action_id)
                return SubmitResult(seq=rec.seq, action=rec.action, view=m.envelope(seat))
        except StaleSequence:
            self.metrics.actions.labels(game, "player", "stale").inc()
            raise
        except (SessionError, RulesError) as exc:
            self.metrics.actions.labels(game, "player", exc.reason.lower()).inc()
            raise

    async def leave_match(self, match_id: str, principal: Principal, resign: bool) -> MatchSummary:
        """Leave a seat. While the match waits for players the seat becomes free again (the
        token stops working). Once it has started, leaving counts as resigning whatever
        ``resign`` says (JJK-10.1, GJ-12.4): a two-player match ends and the opponent wins;
        in a four-player match a bot plays the seat to the end and the result lists it under
        ``abandoned``."""
        self._require_running()
        seat = self._acting_seat(principal, match_id)
        m = await self._get(match_id)
        async with m.lock:
            slot = m.seats[seat]
            if m.over:
                raise MatchNotActive("the match is over")
            if slot.left:
                raise PermissionDenied("you have left this match", reason="SEAT_LEFT")
            if m.status == "waiting":
                await self._store_call(self._store.save_seat(m.match_id, SeatRecord(seat)), "save_seat")
                self._tokens.pop(slot.token_hash, None)
                slot.player_name, slot.token_hash, slot.joined_at = "", "", None
                for w in list(m.watchers):
                    if w.audience == seat:
                        w.end(PermissionDenied("you left this match", reason="SEAT_LEFT"), drop_pending=True)
                m.log.info("seat_left", seat=seat, resign=resign)
                self._presence(m, slot, "left")
            elif m.policy == FORFEIT:
                m.log.info("seat_resigned", seat=seat)
                await self._end(m, "resigned", winners=[s.seat for s in m.seats if s.seat != seat],
                                resigned=seat)
            else:
                rec = slot.record()
                await self._store_call(self._store.save_seat(
                    m.match_id, SeatRecord(rec.seat, rec.kind, rec.bot, rec.player_name,
                                           rec.token_hash, rec.joined_at, True)), "save_seat")
                slot.left = True
                self._cancel_grace(slot)
                m.log.info("seat_resigned", seat=seat)
                self._presence(m, slot, "left")
                self._schedule(m)
            return m.summary()

    async def terminate_match(self, match_id: str, reason: str) -> MatchSummary:
        self._require_running()
        m = await self._get(match_id)
        reason = _clean_name(reason or "", 200, "the reason")
        async with m.lock:
            if m.over:
                raise MatchNotActive("the match is over")
            await self._end(m, "terminated", winners=[], reason=reason)
            return m.summary()

    # ---- watching -------------------------------------------------------------------------

    async def watch(self, match_id: str, principal: Principal, after_seq: int) -> AsyncIterator[MatchEvent]:
        """Events after ``after_seq``: the missed actions replayed from the log (or one
        snapshot when ``after_seq`` < 0 or the gap exceeds ``snapshot_threshold``), then live
        events, heartbeats while idle, and ``match_ended`` last. A seat's open streams are its
        presence. Consume it with ``contextlib.aclosing`` so that presence ends with the stream.
        """
        self._require_running()
        m = await self._get(match_id)
        audience = self._audience(m, principal)
        if isinstance(after_seq, bool) or not isinstance(after_seq, int):
            raise BadRequest("after_seq must be an integer", reason="BAD_AFTER_SEQ")
        if after_seq > m.seq:
            raise BadRequest(f"after_seq {after_seq} is ahead of the match (seq {m.seq})",
                             reason="BAD_AFTER_SEQ")
        if len(m.watchers) >= self.config.max_watchers_per_match:
            raise LimitExceeded("too many watchers on this match", reason="MAX_WATCHERS")

        # Registration and the replay boundary are read together, without an await between:
        # every action after ``live_from`` reaches the queue, every one up to it the replay.
        w = Watcher(audience, self.config.watcher_queue_size)
        live_from, ended = m.seq, m.over
        m.watchers.add(w)
        kind = audience_kind(audience)
        self.metrics.watchers.labels(kind).inc()
        slot = m.seats[audience] if isinstance(audience, int) else None
        if slot is not None:
            slot.streams += 1
            if slot.streams == 1:
                self._connected(m, slot)
        try:
            if after_seq < 0 or live_from - after_seq > self.config.snapshot_threshold:
                self.metrics.watch_snapshots.inc()
                yield MatchEvent(kind="snapshot", seq=live_from, match_id=m.match_id,
                                 view=self._view_at(m, audience, live_from),
                                 details={"seats": m.presence()})
            else:
                for rec, state in m.states(after_seq, live_from):
                    current = rec.seq == m.seq
                    env = (m.envelope(audience) if current
                           else m.envelope(audience, state, rec.seq))
                    yield MatchEvent(kind="action", seq=rec.seq, match_id=m.match_id, seat=rec.seat,
                                     action=rec.action, by=rec.by, reason=rec.reason, view=env)
            if ended:
                yield self._ended_event(m, audience)
                return
            while True:
                try:
                    item = w.queue.get_nowait()  # drain without a scheduling round per event
                except asyncio.QueueEmpty:
                    try:
                        # not asyncio.wait_for: before Python 3.12 it can swallow the
                        # cancellation of a stream whose event arrives at the same moment
                        async with asyncio.timeout(self.config.heartbeat_interval_s):
                            item = await w.queue.get()
                    except TimeoutError:
                        yield MatchEvent(kind="heartbeat", seq=m.seq, match_id=m.match_id,
                                         details={"deadline": m.deadline})
                        continue
                if isinstance(item, _End):
                    if item.error is not None:
                        raise item.error
                    return
                yield item
        finally:
            m.watchers.discard(w)
            self.metrics.watchers.labels(kind).dec()
            if w.overflowed:
                self.metrics.watch_overflows.inc()
                m.log.warning("watch_overflow", audience=kind, seat=audience if slot else None)
            if slot is not None:
                slot.streams -= 1
                if slot.streams == 0:
                    self._disconnected(m, slot)

    # ---- internals: the writer ------------------------------------------------------------

    async def _apply(self, m: LiveMatch, seat: int, action: str, *, by: str, reason: str = "",
                     client_action_id: str = "") -> ActionRecord:
        """Validate, persist and publish one action (the match lock is held)."""
        started = time.perf_counter()
        state = m.state.clone()
        scored = len(state.deal_results())
        state.apply(action, seat)  # RulesError: nothing changed
        new_decks: list[DeckRecord] = []
        dealt = m.deals_dealt
        if state.to_act() == CHANCE:
            deck = m.decks.get(dealt)
            if deck is None:
                deck = DeckRecord(dealt, random_deck(m.game))
                new_decks.append(deck)
            state.deal(deck.cards)
            dealt += 1
        rec = ActionRecord(seq=m.seq + 1, seat=seat, action=action, by=by,
                           client_action_id=client_action_id, reason=reason, at=time.time())
        await self._store_call(self._store.append_action(m.match_id, rec, new_decks), "append_action")

        m.state = state
        m.actions.append(rec)
        for d in new_decks:
            m.decks[d.deal] = d
        m.deals_dealt = dealt
        if client_action_id:
            m.client_ids[(seat, client_action_id)] = rec
        self.metrics.actions.labels(m.game.id, by, "accepted").inc()
        m.log.info("action_applied", seat=seat, seq=rec.seq, action=action, by=by,
                   **({"reason": reason} if reason else {}))
        if by == "auto":
            self.metrics.auto_moves.labels(m.game.id, reason or "policy").inc()
            m.log.info("auto_move", seat=seat, seq=rec.seq, action=action, reason=reason)
        details: dict[str, Any] = {}
        results = state.deal_results()
        if len(results) > scored:
            details["deal_scored"] = len(results) - 1
            m.log.info("deal_scored", seq=rec.seq, deal=len(results) - 1,
                       result=public_or_none(results[-1], state), totals=state.result().get("totals"))

        if state.is_over():
            result = self._result(m, "completed")
            self._mark_over(m, "finished", result, "completed")
            self._publish(m, "action", seq=rec.seq, seat=seat, action=action, by=by, reason=reason,
                          details=details)
            try:
                await self._store.set_status(m.match_id, "finished", result, m.ended_at)
            except StoreError as exc:  # the log is durable: a restart derives the end again
                m.log.error("store_status_failed", error=str(exc))
            self._announce_end(m)
        else:
            self._schedule(m)
            self._publish(m, "action", seq=rec.seq, seat=seat, action=action, by=by, reason=reason,
                          details=details)
        self.metrics.action_latency.labels(m.game.id).observe(time.perf_counter() - started)
        return rec

    def _result(self, m: LiveMatch, outcome: str, winners: list[int] | None = None,
                **info: Any) -> dict[str, Any]:
        result = dict(m.state.result())
        result["outcome"] = outcome
        result["over"] = True
        if winners is not None:
            result["winners"] = list(winners)
        abandoned = [s.seat for s in m.seats if s.left]
        if abandoned:
            result["abandoned"] = abandoned
        result.update(info)
        return result

    async def _end(self, m: LiveMatch, outcome: str, winners: list[int], **info: Any) -> None:
        """End a match for a session reason (resignation, forfeit, abandonment, termination):
        durable first, then announced."""
        result = self._result(m, outcome, winners, **info)
        status = "terminated" if outcome == "terminated" else "finished"
        ended_at = time.time()
        await self._store_call(self._store.set_status(m.match_id, status, result, ended_at), "set_status")
        self._mark_over(m, status, result, outcome, ended_at)
        self._announce_end(m)

    def _mark_over(self, m: LiveMatch, status: str, result: dict[str, Any], outcome: str,
                   ended_at: float | None = None) -> None:
        previous = m.status
        m.status, m.result = status, result  # type: ignore[assignment]
        m.ended_at = ended_at if ended_at is not None else time.time()
        m.finished_mono = asyncio.get_running_loop().time()
        self._disarm(m)
        m.bot_key = None
        for slot in m.seats:
            self._cancel_grace(slot)
        self.metrics.matches_active.labels(m.game.id, previous).dec()
        self.metrics.matches_finished.labels(m.game.id, outcome).inc()
        m.log.info("match_ended", seq=m.seq, outcome=outcome, winners=result.get("winners"),
                   totals=result.get("totals"),
                   **{k: v for k, v in result.items() if k in ("resigned", "forfeited", "abandoned", "reason")})

    def _announce_end(self, m: LiveMatch) -> None:
        cache: dict[Any, ViewEnvelope] = {}
        for w in list(m.watchers):
            if w.audience not in cache:
                cache[w.audience] = m.envelope(w.audience)
            w.offer(self._ended_event(m, w.audience, cache[w.audience]))
            w.end()
        if cache:
            self.metrics.events_published.labels("match_ended").inc(len(cache))

    def _ended_event(self, m: LiveMatch, audience: Audience, env: ViewEnvelope | None = None) -> MatchEvent:
        result = dict(m.result or {})
        return MatchEvent(kind="match_ended", seq=m.seq, match_id=m.match_id,
                          reason=str(result.get("outcome", "")), view=env or m.envelope(audience),
                          details={"result": result})

    def _publish(self, m: LiveMatch, kind: str, *, seq: int, seat: int | None = None, action: str = "",
                 by: str = "", reason: str = "", details: Mapping[str, Any] | None = None) -> None:
        """Queue one event to every watcher, with its audience's view (computed once per
        audience). Never waits: a full queue closes that watcher's stream."""
        if not m.watchers:
            return
        cache: dict[Any, ViewEnvelope] = {}
        for w in list(m.watchers):
            env = cache.get(w.audience)
            if env is None:
                env = cache[w.audience] = m.envelope(w.audience)
            w.offer(MatchEvent(kind=kind, seq=seq, match_id=m.match_id, seat=seat, action=action,  # type: ignore[arg-type]
                               by=by, reason=reason, view=env, details=dict(details or {})))
        self.metrics.events_published.labels(kind).inc(len(m.watchers))

    # ---- internals: timers, bots, presence ------------------------------------------------

    def _schedule(self, m: LiveMatch) -> None:
        """Arm what the current decision needs: a bot move, a turn deadline, or nothing (the
        two-player rule JJK-10.2 pauses the clock of an absent player). Idempotent: a timer or
        bot already armed for this (seq, seat) is kept."""
        if not m.active or self._draining:
            self._disarm(m)
            return
        who = m.state.to_act()
        if who < 0:
            self._disarm(m)
            return
        key = (m.seq, who)
        slot = m.seats[who]
        if slot.bot_driven:
            self._disarm(m)
            if m.bot_key != key:
                bot = slot.bot if slot.kind == "bot" else m.takeover_bot
                reason = "abandoned" if slot.left else "takeover"
                view = m.state.view(who)
                m.bot_key = key
                m.bot_task = self._spawn(self._bot_move(m, key, bot, view, reason),
                                         f"bot-{m.match_id}-{key[0]}")
            return
        m.bot_key = None
        if m.policy == FORFEIT and slot.absent:
            self._disarm(m)
            return
        delay = m.turn_time_s * self.config.time_scale
        if delay <= 0:
            self._disarm(m)
            return
        if m.timer_key == key and m.timer_handle is not None:
            return
        self._disarm(m)
        loop = asyncio.get_running_loop()
        m.timer_key = key
        m.deadline = time.time() + delay
        m.timer_handle = loop.call_later(delay, self._on_deadline, m, key)

    def _disarm(self, m: LiveMatch) -> None:
        if m.timer_handle is not None:
            m.timer_handle.cancel()
        m.timer_handle = None
        m.timer_key = None
        m.deadline = None

    def _on_deadline(self, m: LiveMatch, key: tuple[int, int]) -> None:
        if m.timer_key == key:
            m.timer_handle = None
            self._spawn(self._timeout_move(m, key), f"timeout-{m.match_id}-{key[0]}")

    async def _timeout_move(self, m: LiveMatch, key: tuple[int, int]) -> None:
        """GJ-12.1 / JJK-10.3: the deadline passed; play one move by the auto-move policy."""
        async with m.lock:
            if m.timer_key != key or m.seq != key[0] or not m.active:
                return
            seat = key[1]
            self._disarm(m)
            self.metrics.turn_timeouts.labels(m.game.id).inc()
            action = m.game.auto_move(m.state.view(seat))
            try:
                await self._apply(m, seat, action, by="auto", reason="timeout")
            except Exception as exc:
                self._retry_later(m, "timeout_move_failed", exc)

    async def _bot_move(self, m: LiveMatch, key: tuple[int, int], bot: str, view: dict[str, Any],
                        reason: str) -> None:
        """One decision for a bot-driven seat, from that seat's view only (GJ-11.7)."""
        seat = key[1]
        legal = list(view.get("legal") or [])
        by, why = "bot", ""
        action: str | None = None
        if bot:
            failure = None
            if self._host is None:
                failure = "unknown_bot"
            else:
                try:
                    decision = await self._host.decide(bot, m.game.id, seat, view, legal,
                                                       secrets.randbits(63), self.config.bot_deadline_s)
                except asyncio.CancelledError:
                    raise
                except Exception as exc:  # the host's contract is not to raise; be safe anyway
                    m.log.error("bot_host_error", seat=seat, bot=bot, error=type(exc).__name__)
                    decision = None
                if decision is None:
                    failure = "crash"
                else:
                    self.metrics.bot_decision_seconds.labels(bot).observe(max(0.0, decision.elapsed_s))
                    failure = decision.failure
                    if failure is None and decision.action not in legal:
                        failure = "illegal"
                    if failure is None:
                        action = decision.action
            if failure is not None:
                self.metrics.bot_failures.labels(bot, failure).inc()
                m.log.warning("bot_failed", seat=seat, seq=key[0], bot=bot, reason=failure)
                by, why = "auto", "bot_failed"
        else:
            by, why = "auto", reason
        async with m.lock:
            if m.bot_key != key or m.seq != key[0] or not m.active:
                return
            m.bot_key = None
            if action is None:
                action = m.game.auto_move(view)
            try:
                await self._apply(m, seat, action, by=by, reason=why)
            except Exception as exc:
                self._retry_later(m, "bot_move_failed", exc)

    def _retry_later(self, m: LiveMatch, event: str, exc: Exception) -> None:
        """A timed or bot move could not be applied (a store failure): try again shortly."""
        m.log.error(event, error=str(exc), error_type=type(exc).__name__)
        if not self._draining:
            asyncio.get_running_loop().call_later(RETRY_AFTER_STORE_FAILURE_S, self._schedule, m)

    def _connected(self, m: LiveMatch, slot: SeatSlot) -> None:
        self._cancel_grace(slot)
        change = "connected"
        if slot.taken_over:
            slot.taken_over = False  # GJ-12.4: the player takes the seat back at once
            change = "returned"
        self._presence(m, slot, change)
        self._schedule(m)

    def _disconnected(self, m: LiveMatch, slot: SeatSlot) -> None:
        if self._draining or self._closed:
            return
        self._presence(m, slot, "disconnected")
        if m.active and slot.absent:
            self._arm_grace(m, slot)
        self._schedule(m)

    def _arm_grace(self, m: LiveMatch, slot: SeatSlot, start: float | None = None) -> None:
        self._cancel_grace(slot)
        loop = asyncio.get_running_loop()
        at = (loop.time() if start is None else start) + m.reconnect_grace_s * self.config.time_scale
        slot.grace_deadline = at
        slot.grace_handle = loop.call_at(at, self._on_grace, m, slot.seat, at)

    @staticmethod
    def _cancel_grace(slot: SeatSlot) -> None:
        if slot.grace_handle is not None:
            slot.grace_handle.cancel()
        slot.grace_handle = None
        slot.grace_deadline = None

    def _on_grace(self, m: LiveMatch, seat: int, at: float) -> None:
        self._spawn(self._grace_expired(m, seat, at), f"grace-{m.match_id}-{seat}")

    async def _grace_expired(self, m: LiveMatch, seat: int, at: float) -> None:
        """The absent player's grace period is over: the rulebook's policy applies."""
        async with m.lock:
            slot = m.seats[seat]
            if not m.active or not slot.absent or slot.grace_deadline != at:
                return
            slot.grace_handle = None
            if m.policy == FORFEIT:
                others = [s for s in m.seats if s.seat != seat]
                if all(o.absent and o.grace_deadline == at for o in others):
                    self.metrics.grace_expired.labels(m.game.id, "abandoned").inc()
                    try:
                        await self._end(m, "abandoned", winners=[], absent=[s.seat for s in m.seats])
                    except Exception as exc:
                        self._retry_grace(m, slot, exc)
                    return
                self.metrics.grace_expired.labels(m.game.id, "forfeit").inc()
                try:
                    await self._end(m, "forfeit", winners=[o.seat for o in others], forfeited=seat)
                except Exception as exc:
                    self._retry_grace(m, slot, exc)
                return
            slot.grace_deadline = None
            slot.taken_over = True
            self.metrics.grace_expired.labels(m.game.id, "bot_takeover").inc()
            self._presence(m, slot, "bot_took_over")
            self._schedule(m)

    def _retry_grace(self, m: LiveMatch, slot: SeatSlot, exc: Exception) -> None:
        m.log.error("grace_policy_failed", seat=slot.seat, error=str(exc))
        if not self._draining:
            slot.grace_deadline = None
            self._arm_grace(m, slot, start=asyncio.get_running_loop().time()
                            - m.reconnect_grace_s * self.config.time_scale + RETRY_AFTER_STORE_FAILURE_S)

    def _presence(self, m: LiveMatch, slot: SeatSlot, change: str) -> None:
        self.metrics.presence_changes.labels(m.game.id, change).inc()
        m.log.info("presence_changed", seat=slot.seat, seq=m.seq, change=change, present=slot.present)
        self._publish(m, "presence", seq=m.seq, seat=slot.seat, reason=change,
                      details={"change": change, "seats": m.presence()})

    # ---- internals: bookkeeping -----------------------------------------------------------

    def _spawn(self, coro: Awaitable[Any], name: str) -> asyncio.Task:
        task = asyncio.get_running_loop().create_task(coro, name=name)  # type: ignore[arg-type]
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
        for slot in m.seats:
            if slot.token_hash:
                self._tokens[slot.token_hash] = (m.match_id, slot.seat)
        if not m.over:
            self.metrics.matches_active.labels(m.game.id, m.status).inc()

    def _unregister(self, m: LiveMatch) -> None:
        self._matches.pop(m.match_id, None)
        for slot in m.seats:
            if slot.token_hash and self._tokens.get(slot.token_hash, (None,))[0] == m.match_id:
                del self._tokens[slot.token_hash]

    async def _get(self, match_id: str) -> LiveMatch:
        m = self._matches.get(match_id)
        if m is not None:
            return m
        if not isinstance(match_id, str) or not match_id or len(match_id) > MAX_MATCH_ID_LENGTH:
            raise MatchNotFound("no such match")
        async with self._load_lock:
            m = self._matches.get(match_id)
            if m is None:
                try:
                    m = await self._load(match_id)
                except CorruptLog as exc:
                    log.error("match_load_failed", match_id=match_id, error=str(exc))
                    raise SessionError("the match cannot be loaded", reason="MATCH_CORRUPT") from exc
        if m is None:
            raise MatchNotFound("no such match")
        return m

    async def _load(self, match_id: str) -> LiveMatch | None:
        """Rebuild a match from the store and register it (None: unknown)."""
        stored: StoredMatch | None = await self._store.load_match(match_id)
        if stored is None:
            return None
        m = LiveMatch(stored.record, list(stored.decks), list(stored.actions))
        if not m.over and m.state.to_act() == CHANCE:
            # a deal was due when the process stopped and its deck was never written
            deck = DeckRecord(m.deals_dealt, random_deck(m.game))
            await self._store.append_decks(m.match_id, [deck])
            m.decks[deck.deal] = deck
            m.state.deal(deck.cards)
            m.deals_dealt += 1
        if not m.over and m.state.is_over():
            # the last action was written but not the status: derive the end again
            result = self._result(m, "completed")
            await self._store.set_status(m.match_id, "finished", result, time.time())
            m.status, m.result, m.ended_at = "finished", result, time.time()
            self.metrics.matches_finished.labels(m.game.id, "completed").inc()
        if m.over:
            m.finished_mono = asyncio.get_running_loop().time()
        self._register(m)
        return m

    async def _sweep(self, interval: float) -> None:
        """Evict finished matches from memory after ``finished_retention_s`` (the store keeps
        them; they are read back on demand)."""
        while True:
            await asyncio.sleep(interval)
            now = asyncio.get_running_loop().time()
            for m in list(self._matches.values()):
                if (m.over and not m.watchers and m.finished_mono is not None
                        and now - m.finished_mono >= self.config.finished_retention_s):
                    self._unregister(m)

    def evict_finished(self) -> int:
        """Evict every finished match without watchers now (operations, tests). Returns how
        many were evicted."""
        victims = [m for m in self._matches.values() if m.over and not m.watchers]
        for m in victims:
            self._unregister(m)
        return len(victims)

    async def _store_call(self, op: Awaitable[Any], what: str) -> Any:
        try:
            return await op
        except StoreError as exc:
            log.error("store_write_failed", operation=what, error=str(exc), error_type=type(exc).__name__)
            raise Unavailable("the match could not be saved; try again", reason="STORE_UNAVAILABLE") from exc

    def _view_at(self, m: LiveMatch, audience: Audience, seq: int) -> ViewEnvelope:
        if seq == m.seq:
            return m.envelope(audience)
        state, _ = m.fold(seq)
        return m.envelope(audience, state, seq)

    def _audience(self, m: LiveMatch, principal: Principal) -> Audience:
        if principal.kind == "admin":
            return ADMIN
        if principal.kind == "seat":
            if principal.match_id != m.match_id or principal.seat is None:
                raise PermissionDenied("this seat token belongs to another match", reason="WRONG_MATCH")
            if m.seats[principal.seat].token_hash == "":
                raise Unauthenticated("unknown or expired seat token")
            return principal.seat
        if not m.spectators_allowed:
            raise PermissionDenied("this match does not allow spectators", reason="SPECTATORS_NOT_ALLOWED")
        return SPECTATOR

    @staticmethod
    def _acting_seat(principal: Principal, match_id: str) -> int:
        if principal.kind == "spectator":
            raise Unauthenticated("a seat token is required")
        if principal.kind != "seat" or principal.seat is None:
            raise PermissionDenied("only a seat's player may do this", reason="NOT_A_SEAT")
        if principal.match_id != match_id:
            raise PermissionDenied("this seat token belongs to another match", reason="WRONG_MATCH")
        return principal.seat

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


def _summary_of(listing: MatchListing) -> MatchSummary:
    r = listing.record
    return MatchSummary(
        match_id=r.match_id, game=r.game, options=dict(r.options), status=r.status,  # type: ignore[arg-type]
        seq=listing.seq,
        seats=tuple(SeatInfo(seat=s.seat, kind=s.kind, bot=s.bot, player_name=s.player_name,  # type: ignore[arg-type]
                             taken=bool(s.token_hash), present=s.kind == "bot",
                             replaced_by_bot=s.kind == "open" and s.left) for s in r.seats),
        turn_time_s=r.turn_time_s, spectators_allowed=r.spectators_allowed, created_at=r.created_at,
        name=r.name, result=dict(r.result) if r.result is not None else None)

