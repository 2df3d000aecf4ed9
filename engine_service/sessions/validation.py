"""The checks of what a caller or the operator names, made before any match is read or
locked: display names (:func:`clean_name`), JoinMatch's ``client_join_id``
(:func:`check_client_join_id`), CreateMatch's ``client_create_id``
(:func:`check_client_create_id`), a new match's seats and bots (:func:`seat_configs`,
:func:`check_bot`) and, at start, the session's takeover bot (:func:`check_takeover_bot`,
:class:`TakeoverBotUnavailable`).

Why a module of its own: each check decides an INVALID_ARGUMENT (its ErrorInfo reason and
field, docs/api.md "Errors") from the request alone, so it can be read, tested and changed
without the session's state; they need at most the bot host, which the caller passes in.
"""

from __future__ import annotations

import re
import unicodedata
from typing import TYPE_CHECKING, Any, Sequence

from ..rules.registry import all_games
from .api import BadRequest, BotInfo, SeatConfig
from .policy import BOT_TAKEOVER, absence_policy
from .tokens import MAX_CLIENT_ID_LENGTH, MIN_CLIENT_ID_LENGTH

if TYPE_CHECKING:
    from .manager import BotHostLike


class TakeoverBotUnavailable(ValueError):
    """``SessionConfig.takeover_bot`` names a bot that is not installed, or that plays none
    of the games where a bot takes an absent player's seat (GJ-12.4). Refused at start: it
    used to show only later, as ``unknown_bot`` bot failures in every such match."""

    def __init__(self, bot: str, installed: Sequence[BotInfo], games: Sequence[str]) -> None:
        self.bot = bot
        self.installed = [b.name for b in installed]
        able = [b.name for b in installed if any(g in b.games for g in games)]
        if bot not in self.installed:
            problem = "is not an installed bot"
        else:
            problem = f"plays none of the games where a bot takes an absent seat ({', '.join(games)})"
        super().__init__(f"{bot!r} {problem}; installed bots: {', '.join(self.installed) or 'none'}"
                         f"; able to take a seat over: {', '.join(able) or 'none'}")


def clean_name(text: str, limit: int, what: str, code: str = "BAD_NAME", field: str = "") -> str:
    """A display name: trimmed, printable, at most ``limit`` characters; refused as
    INVALID_ARGUMENT with the ErrorInfo reason ``code`` naming the request's ``field``.

    Runs of whitespace count as one space (``" ".join(text.split())``), so the raw length
    alone cannot refuse a name. The split stops after ``limit`` words, though: a name with
    more words than that is longer than ``limit`` whatever they are, and an enormous input
    (the session API has no size limit of its own; the gRPC edge caps the raw field) costs
    one scan and one copy, not a string per word (a 4 MB name took 0.2 s of event-loop CPU
    and 90 MB before its refusal)."""
    meta = {"field": field} if field else {}
    if not isinstance(text, str):
        raise BadRequest(f"{what} must be a string", reason=code, **meta)
    words = text.split(None, limit)  # the whole split unless there are more than ``limit`` words
    if len(words) > limit:  # limit + 1 words or more: at least 2 * limit + 1 characters
        raise BadRequest(f"{what} is longer than {limit} characters", reason=code, **meta)
    text = " ".join(words)
    if len(text) > limit:
        raise BadRequest(f"{what} is longer than {limit} characters", reason=code, **meta)
    refused = _refused_character(text)
    if refused is not None:
        raise BadRequest(f"{what} contains U+{ord(refused):04X}, {_KINDS[unicodedata.category(refused)]}, "
                         "which is not allowed", reason=code, **meta)
    return text


#: What a refused character is, by its category (all C*), for the message: "control
#: characters" alone misled a client whose name held a private-use character or a letter
#: newer than the server's Unicode database, which it had not thought of as controls.
_KINDS = {
    "Cc": "a control character",
    "Cf": "an invisible format character",
    "Co": "a private-use character",
    "Cs": "a surrogate",
    "Cn": f"a noncharacter or a character unassigned in Unicode {unicodedata.unidata_version} (the server's)",
}


#: The zero-width joiner and non-joiner: format characters (category Cf) that emoji ZWJ
#: sequences (👩‍💻, 🏳️‍🌈, 👨‍👩‍👧) and scripts such as Persian, Kurdish and the Indic ones
#: need inside words, so a name may hold them between two visible characters.
_JOINERS = frozenset("\u200c\u200d")
#: An emoji tag sequence (UTS #51): the black flag, tag letters, the cancel tag: the flags of
#: England, Scotland and Wales (🏴󠁧󠁢󠁥󠁮󠁧󠁿); its tags are format characters too.
_FLAG_TAG_SEQUENCE = re.compile("\U0001F3F4[\U000E0020-\U000E007E]+\U000E007F")


def _future_pictograph(ch: str) -> bool:
    """An emoji code point newer than this Python's Unicode database: unassigned (category
    Cn) but in the blocks Unicode keeps for pictographs (Extended_Pictographic, UTS #51), where
    every recent emoji went (🩷 U+1FA77 is Unicode 15; Python 3.11, the image's, knows 14)."""
    return ("\U0001F000" <= ch <= "\U0001FAFF" or "\U0001FC00" <= ch <= "\U0001FFFD") \
        and unicodedata.category(ch) == "Cn"


def _visible(ch: str) -> bool:
    return not ch.isspace() and (not unicodedata.category(ch).startswith("C") or _future_pictograph(ch))


def _refused_character(text: str) -> str | None:
    """The first character of ``text`` of a category C* (controls, format characters,
    surrogates, private use, unassigned) other than those a name typed on a phone or in a
    script that needs them holds: a joiner between two visible characters, a flag's tag
    sequence, an emoji newer than the Unicode database; None when there is none. The others
    stay refused (bidi overrides, zero-width spaces, soft hyphens...): they hide or reorder
    what a name shows."""
    tagged = {i for m in _FLAG_TAG_SEQUENCE.finditer(text) for i in range(m.start() + 1, m.end())}
    for i, ch in enumerate(text):
        if not unicodedata.category(ch).startswith("C") or i in tagged or _future_pictograph(ch):
            continue
        if ch in _JOINERS and 0 < i < len(text) - 1 and _visible(text[i - 1]) and _visible(text[i + 1]):
            continue
        return ch
    return None


def check_client_join_id(client_join_id: Any) -> str:
    """JoinMatch's ``client_join_id``: "" (none), or 16..128 printable characters (a secret
    the client chose: shorter is too easy to guess; printable: every store keeps it)."""
    return _check_client_id(client_join_id, "client_join_id", "BAD_CLIENT_JOIN_ID")


def check_client_create_id(client_create_id: Any) -> str:
    """CreateMatch's ``client_create_id``: as a ``client_join_id``."""
    return _check_client_id(client_create_id, "client_create_id", "BAD_CLIENT_CREATE_ID")


def _check_client_id(value: Any, name: str, reason: str) -> str:
    value = value or ""
    if not isinstance(value, str) or (value and not (
            MIN_CLIENT_ID_LENGTH <= len(value) <= MAX_CLIENT_ID_LENGTH and value.isprintable())):
        raise BadRequest(f"{name} is {MIN_CLIENT_ID_LENGTH} to {MAX_CLIENT_ID_LENGTH} printable characters "
                         "(a random UUID, say)", reason=reason, field=name)
    return value


def check_takeover_bot(bot: str, host: BotHostLike | None) -> None:
    """The session's takeover bot (GJ-12.4) must be installed and play a game where a
    bot takes an absent seat (the four-player games: policy BOT_TAKEOVER). Without a bot
    host there are no bots to check (bot seats are refused then)."""
    if not bot or host is None:
        return
    games = [g.id for g in all_games() if absence_policy(g) == BOT_TAKEOVER]
    if not any(host.plays(bot, g) for g in games):
        raise TakeoverBotUnavailable(bot, _installed(host), games)


def seat_configs(game: Any, seats: Sequence[SeatConfig], host: BotHostLike | None) -> list[SeatConfig]:
    """A new match's seats: one per seat of ``game``, each open or a bot that plays it (none
    configured: every seat open)."""
    seats = list(seats or [])
    if not seats:
        return [SeatConfig()] * game.num_seats
    if len(seats) != game.num_seats:
        raise BadRequest(f"{game.id} has {game.num_seats} seats, {len(seats)} were configured",
                         reason="BAD_SEATS", field="seats")
    for i, s in enumerate(seats):
        if s.kind not in ("open", "bot"):
            raise BadRequest(f"seat {i}: kind must be open or bot", reason="BAD_SEATS", field=f"seats[{i}]")
        if s.kind == "bot":
            if not s.bot:  # as the API's own check refuses it (codec), so both paths agree
                raise BadRequest(f"seat {i}: a bot seat needs the bot's name",
                                 reason="MISSING_FIELD", field=f"seats[{i}].bot.name")
            check_bot(s.bot, game.id, host)
    return seats


def check_bot(bot: str, game_id: str, host: BotHostLike | None) -> None:
    """``bot`` is installed and plays ``game_id`` (a bot seat, a match's takeover bot)."""
    if host is None or not host.plays(bot, game_id):
        known = sorted(b.name for b in _installed(host) if game_id in b.games)
        raise BadRequest(f"no bot {bot!r} plays {game_id}; available: {', '.join(known) or 'none'}",
                         reason="UNKNOWN_BOT", bot=bot)


def _installed(host: BotHostLike | None) -> list[BotInfo]:
    return list(host.bots()) if host is not None else []
