"""The terms of a new match: :func:`match_terms` turns a CreateMatchRequest into
:class:`MatchTerms` (the game and its options, the turn time and the reconnect grace, the
seats and their bots, the takeover bot, the name, the spectators' delay, the first dealer and
the decks known at creation), and :meth:`MatchTerms.record` makes the match's record of them.

Why a module of its own: what a match is made of is settled here, from the request and the
rules that complete it (the game's options, the rulebooks' times and first-dealer draw, the
operator's defaults and floors in SessionConfig, the admin-only fields), before
:meth:`~.manager.MatchManager.create_match` counts the match against the server's limits and
writes it. A request is refused for what it asks here or not at all.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..rules.cards import card_code, parse_deck
from ..rules.game import Game
from ..rules.options import Options, check_new_options
from ..rules.registry import get_game
from ..store.base import DeckRecord, MatchRecord, SeatRecord
from .api import BadRequest, CreateMatchRequest, PermissionDenied, SeatConfig
from .chance import draw_first_dealer, random_deck_record, salted_deck
from .config import SessionConfig
from .delay import MAX_SPECTATOR_DELAY
from .policy import merge_turn_time, reconnect_grace, turn_time
from .validation import check_bot, clean_name, seat_configs

if TYPE_CHECKING:
    from .manager import BotHostLike


@dataclass(frozen=True)
class MatchTerms:
    """A CreateMatchRequest, checked and completed (:func:`match_terms`)."""

    game: Game
    options: Options
    turn_time_s: float
    reconnect_grace_s: float
    seats: list[SeatConfig]
    takeover_bot: str
    name: str
    spectator_delay_actions: int
    decks: list[DeckRecord]  # the first deck of a table without open seats, or the admin's
    first_dealer: int
    has_open: bool  # a seat for a player: the match waits for players until all are taken
    spectators_allowed: bool
    listed: bool

    def record(self, match_id: str, created_at: float, create_hash: str = "",
               create_digest: str = "") -> MatchRecord:
        return MatchRecord(
            match_id=match_id, game=self.game.id, options=self.options.non_default(),
            first_dealer=self.first_dealer,
            seats=tuple(SeatRecord(i, s.kind, s.bot if s.kind == "bot" else "")
                        for i, s in enumerate(self.seats)),
            turn_time_s=self.turn_time_s, reconnect_grace_s=self.reconnect_grace_s,
            spectators_allowed=self.spectators_allowed, name=self.name, takeover_bot=self.takeover_bot,
            listed=self.listed, created_at=created_at, status="waiting" if self.has_open else "active",
            spectator_delay_actions=self.spectator_delay_actions, create_hash=create_hash,
            create_digest=create_digest)


def request_digest(request: CreateMatchRequest) -> str:
    """The SHA-256 (hex) of what ``request`` asks for, its ``client_create_id`` left out: a
    CreateMatch retried with the id of a match is answered with that match only when this is
    the digest it was created by (MatchRecord.create_digest), else CLIENT_CREATE_ID_IN_USE.

    Canonical: the request's own fields as sent (before any default, floor or check of this
    server is applied, so that a retry after a restart with other settings still matches),
    in one JSON text with sorted keys; the seats as (kind, bot) pairs, a bot's name only
    for a bot seat; each deck as a list of what was sent (card codes over the API; a
    Python caller's card ids stay ids, so its retry must send the deck in the same form).
    Values that JSON cannot hold are their ``repr`` (a malformed request digests too; it is
    refused when checked)."""
    seats = [[getattr(s, "kind", repr(s)), getattr(s, "bot", "") if getattr(s, "kind", "") == "bot" else ""]
             for s in (request.seats or ())]
    fields: dict[str, Any] = {
        "game": request.game, "options": dict(request.options or {}), "seats": seats,
        "turn_time_s": float(request.turn_time_s or 0) if isinstance(request.turn_time_s, (int, float))
        else request.turn_time_s,
        "spectators_allowed": request.spectators_allowed, "name": request.name, "listed": request.listed,
        "spectator_delay_actions": request.spectator_delay_actions,
        "decks": [list(d) if not isinstance(d, str) else d for d in (request.decks or ())],
        "first_dealer": request.first_dealer, "takeover_bot": getattr(request, "takeover_bot", "") or "",
    }
    text = json.dumps(fields, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=repr)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def match_terms(request: CreateMatchRequest, *, admin: bool, config: SessionConfig,
                host: BotHostLike | None) -> MatchTerms:
    """The terms ``request`` asks for (``admin``: made with the admin token, which alone may
    give the decks and the first dealer), or the error that refuses it."""
    game = get_game(request.game)
    if not admin and (request.decks or request.first_dealer is not None):
        raise PermissionDenied("explicit decks and first_dealer need the admin token",
                               reason="ADMIN_ONLY")
    raw = merge_turn_time(game, request.options or {}, float(request.turn_time_s or 0))
    options = game.options(raw)
    check_new_options(game.option_specs, raw)  # JSON-safe integers, for new matches only
    turn = turn_time(game, options, float(request.turn_time_s or 0), config)
    grace = reconnect_grace(game, options, config)
    seats = seat_configs(game, request.seats, host)
    requested_takeover = getattr(request, "takeover_bot", "") or ""
    if requested_takeover:
        check_bot(requested_takeover, game.id, host)
    # the session default is checked when used: a bot that does not play this game fails
    # over to the auto-move policy like any failing bot
    takeover = requested_takeover or config.takeover_bot
    name = clean_name(request.name or "", config.max_name_length, "the match name", field="name")
    delay = request.spectator_delay_actions
    if isinstance(delay, bool) or not isinstance(delay, int) or not 0 <= delay <= MAX_SPECTATOR_DELAY:
        raise BadRequest(f"spectator_delay_actions must be 0..{MAX_SPECTATOR_DELAY} actions",
                         reason="BAD_SPECTATOR_DELAY", field="spectator_delay_actions")
    delay = max(delay, config.min_spectator_delay_actions)  # the operator's floor

    decks = [salted_deck(i, [card_code(c) for c in parse_deck(d, game.pack)])
             for i, d in enumerate(request.decks or ())]
    if request.first_dealer is not None:
        fd = request.first_dealer
        if isinstance(fd, bool) or not isinstance(fd, int) or not 0 <= fd < game.num_seats:
            raise BadRequest(f"first_dealer must be a seat number 0..{game.num_seats - 1}",
                             reason="BAD_FIRST_DEALER", field="first_dealer")
    else:
        fd = draw_first_dealer(game, options)
    # A table with open seats is dealt when its last seat is taken (Seating.activate): the first
    # deal's public cards (a turn-up, a trump indicator) must not be on show to a player
    # still choosing a seat. The commitment is published then, before anyone sees a card.
    has_open = any(s.kind == "open" for s in seats)
    if not decks and not has_open:
        decks = [random_deck_record(game, 0)]
    return MatchTerms(game, options, turn, grace, seats, takeover, name, delay, decks, fd, has_open,
                      spectators_allowed=bool(request.spectators_allowed), listed=bool(request.listed))
