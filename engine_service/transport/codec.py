"""Protobuf messages <-> the session layer's values (engine_service/sessions/api.py).

Everything that crosses the wire is converted here and nowhere else, so the servicers stay a
thin list of calls. Two directions:

* **requests -> api values**: table options from their ``OptionValue`` oneof, seat specs,
  durations; malformed fields raise :class:`~engine_service.sessions.api.BadRequest`;
* **api values -> messages**: games, bots, match summaries, views, events.

The **one parser of action notation** (NOTATION.md section 2) into structured fields lives here
(:func:`action_message`): a frontend renders ``play:X1:high:S`` from ``kind``, ``card``,
``joker_mode`` and ``named_suit`` without parsing. It parses strings the *server* produced
(legal actions, accepted actions), so it is total: an argument it does not recognise stays in
``args`` (NOTATION 2.3 lets table options add verbs). Validating a client's action string is
the rules core's job (``MalformedAction``), not this parser's.

A view is converted from the rules core's JSON view (game.py's common keys), which the session
layer has already redacted for its audience: the codec copies, it never adds information.
"""

from __future__ import annotations

import collections
import functools
import marshal
import math
import weakref
from collections.abc import Iterable, Mapping, Sequence  # abc: fast isinstance checks
from typing import Any

from google.protobuf import struct_pb2

from ..rules.cards import CODES, codes_of
from ..rules.options import BOOL, ENUM, INT, OptionSpec
from ..sessions import api
from . import wire
from .generated import admin_pb2, card_games_pb2 as pb, cards_pb2, match_pb2

# ---- cards and action notation --------------------------------------------------------------

_SUIT = {"S": cards_pb2.SUIT_SPADES, "H": cards_pb2.SUIT_HEARTS, "D": cards_pb2.SUIT_DIAMONDS,
         "C": cards_pb2.SUIT_CLUBS}
_STRAIN = {**_SUIT, "NT": cards_pb2.SUIT_NO_TRUMP}
_RANK = {"A": cards_pb2.RANK_ACE, "K": cards_pb2.RANK_KING, "Q": cards_pb2.RANK_QUEEN,
         "J": cards_pb2.RANK_JACK, "T": cards_pb2.RANK_TEN, "9": cards_pb2.RANK_NINE,
         "8": cards_pb2.RANK_EIGHT, "7": cards_pb2.RANK_SEVEN, "6": cards_pb2.RANK_SIX}
_JOKER_MODE = {"high": cards_pb2.JOKER_MODE_HIGH, "low": cards_pb2.JOKER_MODE_LOW}
_ANNOUNCEMENT = {"jo": cards_pb2.ANNOUNCEMENT_JO, "jotte": cards_pb2.ANNOUNCEMENT_JOTTE,
                 "bella": cards_pb2.ANNOUNCEMENT_BELLA}
_KIND = {
    "play": cards_pb2.ACTION_KIND_PLAY, "pass": cards_pb2.ACTION_KIND_PASS,
    "take": cards_pb2.ACTION_KIND_TAKE, "accept": cards_pb2.ACTION_KIND_ACCEPT,
    "name": cards_pb2.ACTION_KIND_NAME, "no_trump": cards_pb2.ACTION_KIND_NO_TRUMP,
    "double": cards_pb2.ACTION_KIND_DOUBLE, "redouble": cards_pb2.ACTION_KIND_REDOUBLE,
    "exchange": cards_pb2.ACTION_KIND_EXCHANGE, "no_exchange": cards_pb2.ACTION_KIND_NO_EXCHANGE,
    "keep": cards_pb2.ACTION_KIND_KEEP, "nullo": cards_pb2.ACTION_KIND_NULLO,
    "slam": cards_pb2.ACTION_KIND_SLAM, "trump": cards_pb2.ACTION_KIND_TRUMP,
    "bid": cards_pb2.ACTION_KIND_BID,
}
#: Verbs whose first argument is a suit or strain (``name:S``, ``trump:NT``, ``slam:NT``).
_STRAIN_VERBS = frozenset({"name", "trump", "slam"})
_CARD_CODES = frozenset(CODES)


def card_fields(code: str) -> dict[str, Any]:
    """Keyword arguments of a ``Card`` message for a rulebook card code."""
    if code in ("X1", "X2"):
        return {"code": code, "rank": cards_pb2.RANK_JOKER}
    return {"code": code, "suit": _SUIT.get(code[1:], cards_pb2.SUIT_UNSPECIFIED),
            "rank": _RANK.get(code[:1], cards_pb2.RANK_UNSPECIFIED)}


def card_message(code: str) -> cards_pb2.Card:
    return cards_pb2.Card(**card_fields(code))


def cards_messages(codes: Iterable[str]) -> list[cards_pb2.Card]:
    return [card_message(c) for c in codes]


@functools.lru_cache(maxsize=4096)
def action_fields(notation: str) -> tuple[tuple[str, Any], ...]:
    """The structured fields of an action notation string (NOTATION.md section 2), cached:
    legal-action lists repeat the same few hundred strings in every view."""
    verb, *args = notation.split(":")
    out: dict[str, Any] = {"notation": notation, "verb": verb, "args": tuple(args),
                           "kind": _KIND.get(verb, cards_pb2.ACTION_KIND_OTHER)}
    if verb in ("play", "exchange") and args and args[0] in _CARD_CODES:
        out["card"] = card_fields(args[0])
        for extra in args[1:]:  # play:X1:high:S, play:X1:S, play:KS:jo
            if extra in _JOKER_MODE:
                out["joker_mode"] = _JOKER_MODE[extra]
            elif extra in _ANNOUNCEMENT:
                out["announcement"] = _ANNOUNCEMENT[extra]
            elif extra in _SUIT:
                out["named_suit"] = _SUIT[extra]
    elif verb in _STRAIN_VERBS and args and args[0] in _STRAIN:
        out["suit"] = _STRAIN[args[0]]
    elif verb == "bid" and len(args) == 1 and args[0].isdigit():
        out["number"] = int(args[0])
    return tuple(out.items())


def action_message(notation: str) -> cards_pb2.Action:
    """An ``Action`` message: the notation string and its structured fields."""
    fields = dict(action_fields(notation))
    card = fields.pop("card", None)
    msg = cards_pb2.Action(**fields)
    if card is not None:
        msg.card.CopyFrom(cards_pb2.Card(**card))
    return msg


# ---- JSON-ish values -> google.protobuf.Struct / ListValue -------------------------------------


def jsonable(value: Any) -> Any:
    """``value`` with JSON types only (what Struct can hold): mapping keys become the strings
    ``json.dumps`` writes (as in the tables, :mod:`.wire`: ``True`` -> ``"true"``), tuples and
    sets lists; a non-finite float or an unknown object is an error, never dropped."""
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"non-finite number in a view: {value!r}")
        return value
    if isinstance(value, Mapping):
        return {wire.json_key(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if isinstance(value, (set, frozenset)):
        return sorted(jsonable(v) for v in value)
    raise TypeError(f"not a JSON value: {type(value).__name__}")


def struct_message(data: Mapping[str, Any] | None) -> struct_pb2.Struct:
    if not data:
        return struct_pb2.Struct()
    return struct_pb2.Struct.FromString(wire.struct_body(jsonable(data)))


# ---- table options -----------------------------------------------------------------------------

_OPTION_TYPE = {ENUM: match_pb2.OPTION_TYPE_ENUM, BOOL: match_pb2.OPTION_TYPE_BOOL,
                INT: match_pb2.OPTION_TYPE_INT}


def option_value(value: Any) -> match_pb2.OptionValue:
    """The oneof for a Python option value (bool is checked before int: ``True`` is an int)."""
    if isinstance(value, bool):
        return match_pb2.OptionValue(bool_value=value)
    if isinstance(value, int):
        return match_pb2.OptionValue(int_value=value)
    if isinstance(value, str):
        return match_pb2.OptionValue(string_value=value)
    raise TypeError(f"option value of type {type(value).__name__}")


def option_from_message(name: str, msg: match_pb2.OptionValue) -> Any:
    _check_text("options", name, MAX_ID_CHARS, "an option name")
    which = msg.WhichOneof("value")
    if which is None:
        raise api.BadRequest(f"option {name!r} has no value", reason="BAD_OPTION_VALUE",
                             option=name)
    value = getattr(msg, which)
    if isinstance(value, str):  # no option value is longer; the message repeats it
        _check_text(f"options[{name}]", value, MAX_ID_CHARS, f"option {name!r}")
    return value


def options_from_message(options: Mapping[str, match_pb2.OptionValue]) -> dict[str, Any]:
    """Request options as the JSON-typed mapping the rules validate (InvalidOptions there)."""
    return {name: option_from_message(name, value) for name, value in sorted(options.items())}


def option_spec_message(spec: OptionSpec) -> match_pb2.OptionSpec:
    msg = match_pb2.OptionSpec(
        name=spec.name, type=_OPTION_TYPE.get(spec.kind, match_pb2.OPTION_TYPE_UNSPECIFIED),
        default_value=option_value(spec.default),
        # a bool's values go without saying (match.proto): the same for every game
        allowed_values=[] if spec.kind == BOOL else [option_value(v) for v in spec.values],
        help=spec.help, rule_ids=list(spec.rules), allowed_text=spec.allowed_text())
    if spec.minimum is not None:
        msg.minimum = spec.minimum
    if spec.maximum is not None:
        msg.maximum = spec.maximum
    return msg


# ---- catalogue ---------------------------------------------------------------------------------


def game_message(info: api.GameInfo) -> match_pb2.GameInfo:
    return match_pb2.GameInfo(id=info.id, name=info.name, num_seats=info.num_seats,
                              description=info.description, rulebook=info.rulebook,
                              options=[option_spec_message(s) for s in info.options])


def bot_message(info: api.BotInfo) -> match_pb2.BotInfo:
    return match_pb2.BotInfo(name=info.name, games=list(info.games),
                             description=info.description, plugin=info.plugin)


def bot_load_failure_message(failure: api.BotLoadFailure) -> pb.BotLoadFailure:
    return pb.BotLoadFailure(plugin=failure.plugin, stage=failure.stage, reason=failure.reason)


# ---- matches -----------------------------------------------------------------------------------

_STATUS = {"waiting": match_pb2.MATCH_STATUS_WAITING, "active": match_pb2.MATCH_STATUS_ACTIVE,
           "finished": match_pb2.MATCH_STATUS_FINISHED,
           "terminated": match_pb2.MATCH_STATUS_TERMINATED}
STATUS_NAMES = {v: k for k, v in _STATUS.items()}
_SEAT_KIND = {"open": match_pb2.SEAT_KIND_OPEN, "bot": match_pb2.SEAT_KIND_BOT}

#: Longest accepted free-text request fields (names, reasons); bigger is INVALID_ARGUMENT.
MAX_NAME_CHARS = 64
MAX_ID_CHARS = 128
#: google.protobuf.Duration's largest seconds (duration.proto: about 10,000 years).
MAX_DURATION_SECONDS = 315_576_000_000


def status_enum(status: str) -> int:
    return _STATUS.get(status, match_pb2.MATCH_STATUS_UNSPECIFIED)


def _set_duration(field, seconds: float) -> None:
    # from whole nanoseconds: rounding the fraction alone could give nanos = 1e9 (invalid)
    whole, nanos = divmod(int(round(seconds * 1e9)), 1_000_000_000)
    field.seconds, field.nanos = whole, nanos


def _set_timestamp(field, unix: float) -> None:
    whole = math.floor(unix)
    field.seconds = whole
    field.nanos = min(int(round((unix - whole) * 1e9)), 999_999_999)


def seat_info_message(seat: api.SeatInfo) -> match_pb2.SeatInfo:
    return match_pb2.SeatInfo(seat=seat.seat, kind=_SEAT_KIND.get(seat.kind, 0), bot=seat.bot,
                              player_name=seat.player_name, taken=seat.taken,
                              present=seat.present, replaced_by_bot=seat.replaced_by_bot,
                              left=seat.left)


def summary_message(s: api.MatchSummary) -> match_pb2.MatchSummary:
    msg = match_pb2.MatchSummary(
        match_id=s.match_id, game=s.game, status=status_enum(s.status), seq=s.seq,
        seats=[seat_info_message(x) for x in s.seats], spectators_allowed=s.spectators_allowed,
        name=s.name, listed=s.listed, deal_commitments=list(s.deal_commitments),
        spectator_delay_actions=s.spectator_delay_actions)
    for name, value in s.options.items():
        msg.options[name].CopyFrom(option_value(value))
    _set_duration(msg.turn_time, s.turn_time_s)
    _set_timestamp(msg.created_at, s.created_at)
    if s.result is not None:
        msg.result.CopyFrom(struct_message(s.result))
    return msg


def _check_text(field: str, value: str, limit: int, what: str = "") -> str:
    """``value`` of the request field ``field`` (FIELD_TOO_LONG's metadata), at most ``limit``
    characters; ``what``: how the message names it, when not by the field's path."""
    if len(value) > limit:
        raise api.BadRequest(f"{what or field} is longer than {limit} characters", reason="FIELD_TOO_LONG",
                             field=field)
    return value


def game_filter(game: str) -> str:
    """The optional ``game`` filter of the listing calls (ListBots, ListOpenMatches, ListMatches)."""
    return _check_text("game", game, MAX_ID_CHARS)


def require_match_id(match_id: str) -> str:
    if not match_id:
        raise api.BadRequest("match_id is required", reason="MISSING_FIELD", field="match_id")
    return _check_text("match_id", match_id, MAX_ID_CHARS)


def create_request(msg: pb.CreateMatchRequest) -> api.CreateMatchRequest:
    """A CreateMatchRequest value; the admin-only fields are copied, the servicer checks who
    may set them."""
    if not msg.game:
        raise api.BadRequest("game is required", reason="MISSING_FIELD", field="game")
    seats = []
    for i, spec in enumerate(msg.seats):
        if spec.WhichOneof("kind") == "bot":
            if not spec.bot.name:
                raise api.BadRequest(f"seat {i}: a bot seat needs the bot's name",
                                     reason="MISSING_FIELD", field=f"seats[{i}].bot.name")
            _check_text(f"seats[{i}].bot.name", spec.bot.name, MAX_ID_CHARS)
            seats.append(api.SeatConfig(kind="bot", bot=spec.bot.name))
        else:
            seats.append(api.SeatConfig(kind="open"))
    seconds, nanos = msg.turn_time.seconds, msg.turn_time.nanos
    if seconds < 0 or (seconds == 0 and nanos < 0):
        if seconds < -MAX_DURATION_SECONDS or not -999_999_999 <= nanos <= 0:
            # duration.proto: a negative Duration's nanos are of the seconds' sign
            raise api.BadRequest(f"turn_time is no google.protobuf.Duration (a negative one has nanos "
                                 f"-999999999 to 0, seconds at least -{MAX_DURATION_SECONDS})",
                                 reason="BAD_DURATION", field="turn_time")
        # a Duration, but negative: BAD_TURN_TIME in every game (docs/api.md, CreateMatch)
        raise api.BadRequest("turn_time must not be negative", reason="BAD_TURN_TIME", field="turn_time")
    if not 0 <= nanos <= 999_999_999:  # google.protobuf.Duration: the fraction of a second,
        # of the seconds' sign (a positive time with negative nanos is no Duration)
        raise api.BadRequest("turn_time.nanos must be 0 to 999999999 (the fraction of a second)",
                             reason="BAD_DURATION", field="turn_time")
    if seconds > MAX_DURATION_SECONDS:
        # not a Duration at all (duration.proto's range), as the proto comment promises
        # BAD_DURATION for: it was answered BAD_TURN_TIME or INVALID_OPTIONS as a time out of range
        raise api.BadRequest(f"turn_time is beyond google.protobuf.Duration's range (at most "
                             f"{MAX_DURATION_SECONDS} s)", reason="BAD_DURATION", field="turn_time")
    turn = seconds + nanos / 1e9
    return api.CreateMatchRequest(
        game=_check_text("game", msg.game, MAX_ID_CHARS),
        options=options_from_message(msg.options),
        seats=tuple(seats),
        turn_time_s=turn,
        spectators_allowed=msg.spectators_allowed if msg.HasField("spectators_allowed") else True,
        name=_check_text("name", msg.name, MAX_NAME_CHARS),
        listed=msg.listed,
        spectator_delay_actions=msg.spectator_delay_actions,
        decks=tuple(tuple(d.cards) for d in msg.decks),
        first_dealer=msg.first_dealer if msg.HasField("first_dealer") else None,
        client_create_id=msg.client_create_id,
    )


# ---- views -------------------------------------------------------------------------------------
#
# A view goes to every stream of its audience and into SubmitAction answers, so it is encoded
# once per envelope, straight into its wire bytes. The fields of a message are independent on
# the wire (a message is the concatenation of its fields' encodings), so the View is assembled
# from parts: the scalar fields through protobuf, the Struct parts (``table``, deal results)
# through :mod:`.wire`, and the parts that recur from view to view (cards, actions, complete
# tricks) encoded once per content and reused as bytes.

_PLAY_KEYS = frozenset({"seat", "card", "joker_mode", "mode", "named_suit", "announce",
                        "announcement"})

# tags of the length-delimited fields assembled as bytes (field number << 3 | 2)
_VIEW_HAND, _VIEW_LEGAL, _VIEW_TRICK, _VIEW_LAST_TRICK = 11 << 3 | 2, 13 << 3 | 2, 14 << 3 | 2, 15 << 3 | 2
_VIEW_TRICK_HISTORY, _VIEW_SCORES, _VIEW_TABLE = 16 << 3 | 2, 17 << 3 | 2, 20 << 3 | 2
_VIEW_DEAL_COMMITMENT = 21 << 3 | 2
_SCORES_DEAL_RESULTS = 3 << 3 | 2
_EVENT_ACTION, _EVENT_VIEW, _EVENT_DETAILS = 5 << 3 | 2, 8 << 3 | 2, 9 << 3 | 2
_SUBMIT_ACTION, _SUBMIT_VIEW = 2 << 3 | 2, 3 << 3 | 2


@functools.lru_cache(maxsize=4096)
def action_bytes(notation: str) -> bytes:
    """The serialized ``Action`` of a notation string (the same few hundred recur)."""
    return action_message(notation).SerializeToString()


@functools.lru_cache(maxsize=256)
def _hand_card_field(code: str) -> bytes:
    return wire.field(_VIEW_HAND, card_message(code).SerializeToString())


@functools.lru_cache(maxsize=4096)
def _legal_action_field(notation: str) -> bytes:
    return wire.field(_VIEW_LEGAL, action_bytes(notation))


def trick_play_message(play: Mapping[str, Any]) -> match_pb2.TrickPlay:
    msg = match_pb2.TrickPlay(seat=int(play.get("seat", 0)))
    card = play.get("card")
    if isinstance(card, str):
        msg.card.CopyFrom(card_message(card))
    mode = play.get("joker_mode", play.get("mode"))
    if mode in _JOKER_MODE:
        msg.joker_mode = _JOKER_MODE[mode]
    if play.get("named_suit") in _SUIT:
        msg.named_suit = _SUIT[play["named_suit"]]
    announce = play.get("announce", play.get("announcement"))
    if announce in _ANNOUNCEMENT:
        msg.announcement = _ANNOUNCEMENT[announce]
    extra = {k: v for k, v in play.items() if k not in _PLAY_KEYS}
    if extra:
        msg.details.CopyFrom(struct_message(extra))
    return msg


def trick_message(trick: Any) -> match_pb2.Trick:
    """A trick from a list of plays, or a mapping with ``plays`` and ``winner``."""
    return match_pb2.Trick.FromString(trick_bytes(trick))


def trick_bytes(trick: Any) -> bytes:
    """The serialized ``Trick`` (see :func:`trick_message`).

    A complete trick never changes while it is shown again in every later view of its deal,
    so it is encoded once per content (keyed by its ``marshal`` serialization: exact, types
    included, see :mod:`.wire`)."""
    try:
        key = marshal.dumps(trick)
    except ValueError:  # not made of the core types
        return _build_trick(trick).SerializeToString()
    data = wire.lru_get(_TRICKS, key)
    if data is None:
        data = wire.lru_put(_TRICKS, key, _build_trick(trick).SerializeToString(), _TRICKS_MAX)
    return data


_TRICKS: "collections.OrderedDict[bytes, bytes]" = collections.OrderedDict()
_TRICKS_MAX = 4096


def _build_trick(trick: Any) -> match_pb2.Trick:
    msg = match_pb2.Trick()
    if not trick:
        return msg
    if isinstance(trick, Mapping):
        plays = trick.get("plays") or ()
        if trick.get("winner") is not None:
            msg.winner = int(trick["winner"])
        if trick.get("points") is not None:  # the rules' card points of the trick
            msg.points = int(trick["points"])
    else:
        plays = trick
    msg.plays.extend(trick_play_message(p) for p in plays)
    return msg


def _play_from_action(seat: Any, notation: str) -> dict[str, Any]:
    """A trick play ``{"seat", "card", ...}`` from a ``play:`` action of a deal's log."""
    fields = dict(action_fields(notation))
    play: dict[str, Any] = {"seat": seat, "card": fields["card"]["code"]}
    for extra in fields["args"][1:]:
        if extra in _JOKER_MODE:
            play["joker_mode"] = extra
        elif extra in _ANNOUNCEMENT:
            play["announce"] = extra
        elif extra in _SUIT:
            play["named_suit"] = extra
    return play


def _build_logged_trick(plays: tuple[tuple[Any, str], ...], winner: Any) -> bytes:
    return _build_trick({"plays": [_play_from_action(s, a) for s, a in plays],
                         "winner": winner}).SerializeToString()


_cached_logged_trick = functools.lru_cache(maxsize=4096)(_build_logged_trick)


def _is_card_play(action: str) -> bool:
    """Whether an action plays a card (``play:`` and a card code), memoized in ``_CARD_PLAYS``
    (a log is walked for every audience of every action: one dict lookup an entry)."""
    known = _CARD_PLAYS.get(action)
    if known is None:
        known = action[:5] == "play:" and action.split(":")[1] in _CARD_CODES
        if len(_CARD_PLAYS) < 4096:
            _CARD_PLAYS[action] = known
    return known


def trick_history(view: Mapping[str, Any]) -> list[match_pb2.Trick]:
    """The complete tricks of the current deal, oldest first (see :func:`trick_history_bytes`)."""
    return [match_pb2.Trick.FromString(b) for b in trick_history_bytes(view)]


def trick_history_bytes(view: Mapping[str, Any]) -> list[bytes]:
    """The complete tricks of the current deal, oldest first, from what the view already holds,
    serialized.

    Games publish them in one of two ways: a list of tricks (``table.tricks``: Klaberjass,
    Jo-Jotte, Georgian Joker), or only the deal's public action log
    (``table.deal_actions``: ``{"seat", "action"}`` entries, Japanese Joker). From
    a log, the ``play:`` actions are cut into tricks of one card per seat; a trick's winner is
    the entry's own ``winner`` where the game records it, else the leader of the next trick
    (the winner of a trick leads the next one in all four games), else ``last_trick.winner``.
    A view with no log gives ``last_trick`` alone. Both only while ``tricks_taken`` counts a
    trick in the deal: until the deal's first trick is complete, ``last_trick`` is the previous
    deal's final trick (engine_service/rules/game.py), never one of this deal's. Nothing is
    inferred that the view does not already say.
    """
    table = view.get("table") or {}
    tricks = table.get("tricks") if isinstance(table, Mapping) else None
    if isinstance(tricks, (list, tuple)) and all(isinstance(t, Mapping) and "plays" in t for t in tricks):
        return [trick_bytes(t) for t in tricks]
    log = table.get("deal_actions") if isinstance(table, Mapping) else None
    seats = len(view.get("hand_sizes") or ())
    if not isinstance(log, (list, tuple)) or not seats:
        last = _deal_last_trick(view)
        return [trick_bytes(last)] if last else []
    plays = []  # the card plays' entries
    pairs = []  # (seat, play action)
    known = _CARD_PLAYS
    for e in log:  # one pass: a view's log is walked for every audience of every action
        if type(e) is not dict and not isinstance(e, Mapping):
            continue
        a = e.get("action")
        if type(a) is not str and not isinstance(a, str):
            continue
        card = known.get(a)
        if card or (card is None and _is_card_play(a)):
            plays.append(e)
            pairs.append((e.get("seat"), a))
    complete = len(plays) // seats
    out = []
    for i in range(complete):
        end = (i + 1) * seats
        winner = plays[end - 1].get("winner")
        if winner is None and end < len(plays):
            winner = pairs[end][0]
        if winner is None and i == complete - 1:
            winner = (_deal_last_trick(view) or {}).get("winner")
        trick = tuple(pairs[end - seats:end])
        try:
            out.append(_cached_logged_trick(trick, winner))
        except TypeError:  # an unhashable seat or winner: not from a rules view, build it as is
            out.append(_build_logged_trick(trick, winner))
    return out


def _deal_last_trick(view: Mapping[str, Any]) -> Any:
    """``last_trick`` when it is a trick of the view's deal (``tricks_taken`` counts one), else
    None: before the deal's first complete trick it is the previous deal's final trick."""
    taken = view.get("tricks_taken")
    if not isinstance(taken, (list, tuple)) or not any(taken):
        return None
    return view.get("last_trick")


#: play action -> whether it plays a card (:func:`_is_card_play`), at most 4,096 entries
_CARD_PLAYS: dict[str, bool] = {}


def scores_bytes(view: Mapping[str, Any]) -> bytes:
    """The serialized ``Scores`` of a view: tricks taken, totals (one row, or Jo-Jotte's named
    rows) and the deal results."""
    msg = match_pb2.Scores(tricks_taken=[int(t) for t in view.get("tricks_taken") or ()])
    totals = view.get("totals")
    if isinstance(totals, Mapping):  # Jo-Jotte: {"below": [...], "above": [...], ...}
        for name, values in totals.items():
            if isinstance(values, (list, tuple)):
                msg.totals.add(name=str(name), values=[int(v) for v in values])
    elif totals:
        msg.totals.add(name="total", values=[int(v) for v in totals])
    out = msg.SerializeToString()
    results = view.get("deal_results")
    if results:
        out += _deal_results_field(results)
    return out


def _deal_results_field(results: Any) -> bytes:
    """The ``deal_results`` field. The results of the finished deals are the same in every view
    until the next deal ends: encoded once per content (:func:`wire.memo_value_bytes`)."""
    if type(results) is not list:
        return wire.field(_SCORES_DEAL_RESULTS, wire.list_body(results))
    value = wire.memo_value_bytes(results)  # a Value holding a list_value: its payload is ours
    return wire.field(_SCORES_DEAL_RESULTS, wire.list_value_payload(value))


class _Encoded:
    """The encodings of one envelope: its View, and the stream messages that carry it."""

    __slots__ = ("ref", "view", "events")

    def __init__(self, ref: "weakref.ref[api.ViewEnvelope]", view: bytes) -> None:
        self.ref, self.view = ref, view
        self.events: dict[tuple, bytes] = {}


#: Encodings by envelope identity, for as long as the envelope lives (a weak reference: the
#: cache never keeps a view alive; an entry goes when its envelope does, so an id is never
#: mistaken for a later object's). The session layer hands one envelope to every watcher of
#: an audience and to the SubmitAction answer: a thousand spectators of one match cost one
#: encoding per event.
_ENCODED: dict[int, _Encoded] = {}


def _forget(key: int, ref: "weakref.ref[api.ViewEnvelope]") -> None:
    entry = _ENCODED.get(key)
    if entry is not None and entry.ref is ref:
        del _ENCODED[key]


def _encoded(env: api.ViewEnvelope) -> _Encoded:
    key = id(env)
    entry = _ENCODED.get(key)
    if entry is None or entry.ref() is not env:
        data = _encode_view(env)
        entry = _ENCODED[key] = _Encoded(weakref.ref(env, functools.partial(_forget, key)), data)
    return entry


def view_message(env: api.ViewEnvelope) -> match_pb2.View:
    """The View message of an envelope (the session layer's view for one audience)."""
    return match_pb2.View.FromString(view_bytes(env))


def view_bytes(env: api.ViewEnvelope) -> bytes:
    """The serialized View of an envelope, encoded once per envelope (see above)."""
    return _encoded(env).view


def _encode_view(env: api.ViewEnvelope) -> bytes:
    v = env.view
    scope = env.encodings
    if scope is not None:
        return _encode_scoped_view(env, v, scope)
    head = match_pb2.View(
        match_id=env.match_id, seq=env.seq, status=status_enum(env.status),
        game=str(v.get("game") or ""), phase=str(v.get("phase") or ""),
        deal_number=int(v.get("deal_number") or 0), dealer=int(v.get("dealer") or 0),
        hand_sizes=[int(n) for n in v.get("hand_sizes") or ()],
        over=bool(v.get("over")), winners=[int(w) for w in v.get("winners") or ()])
    if v.get("to_act") is not None:
        head.to_act = int(v["to_act"])
    seat = env.seat if env.seat is not None else v.get("seat")
    if seat is not None:
        head.seat = int(seat)
    if env.deadline is not None:
        _set_timestamp(head.deadline, env.deadline)
    middle, table = _shared_parts(v)
    return _assemble(env, v, head.SerializeToString(), middle, table)


def _assemble(env: api.ViewEnvelope, v: Mapping[str, Any], head: bytes, middle: bytes, table: bytes) -> bytes:
    parts = [head, middle]
    parts.extend(_hand_card_field(code) for code in v.get("hand") or ())
    parts.extend(_legal_action_field(a) for a in v.get("legal") or ())
    parts.append(table)
    if env.deal_commitment:
        parts.append(wire.field(_VIEW_DEAL_COMMITMENT, env.deal_commitment.encode()))
    return b"".join(parts)


def _encode_scoped_view(env: api.ViewEnvelope, v: Mapping[str, Any], scope: dict[Any, Any]) -> bytes:
    """:func:`_encode_view` of an envelope with its state's ``encodings``: the View's scalar
    fields but the seat (5) are those of every audience of the state with the same values, so
    they are serialized once, split around the seat, and the seat's own field put between."""
    sizes, winners = v.get("hand_sizes"), v.get("winners")
    game, phase, deal, dealer = v.get("game"), v.get("phase"), v.get("deal_number"), v.get("dealer")
    over, to_act, deadline = v.get("over"), v.get("to_act"), env.deadline
    key = (_SCOPE_HEAD, env.match_id, env.seq, env.status, id(sizes), id(winners),
           game, type(game), phase, type(phase), deal, type(deal), dealer, type(dealer),
           over, type(over), to_act, type(to_act), deadline, type(deadline))
    hit = scope.get(key)
    if hit is None:
        head = match_pb2.View(
            match_id=env.match_id, seq=env.seq, status=status_enum(env.status),
            game=str(game or ""), phase=str(phase or ""), deal_number=int(deal or 0),
            dealer=int(dealer or 0), hand_sizes=[int(n) for n in sizes or ()], over=bool(over),
            winners=[int(w) for w in winners or ()])
        if to_act is not None:
            head.to_act = int(to_act)
        if deadline is not None:
            _set_timestamp(head.deadline, deadline)
        full = head.SerializeToString()
        before = match_pb2.View(match_id=head.match_id, seq=head.seq, status=head.status,
                                game=head.game).SerializeToString()
        split = (before, full[len(before):]) if _SEAT_SPLITS and full.startswith(before) else None
        hit = scope[key] = (sizes, winners, split, head)
    seat = env.seat if env.seat is not None else v.get("seat")
    split = hit[2]
    if split is None:  # not in field order: the whole head for this audience
        head = match_pb2.View()
        head.CopyFrom(hit[3])
        if seat is not None:
            head.seat = int(seat)
        data = head.SerializeToString()
    elif seat is None:
        data = split[0] + split[1]
    else:
        data = split[0] + _seat_field(int(seat)) + split[1]
    middle, table = _scoped_shared_parts(v, scope)
    return _assemble(env, v, data, middle, table)


@functools.lru_cache(maxsize=64)
def _seat_field(seat: int) -> bytes:
    return match_pb2.View(seat=seat).SerializeToString()


def _seat_splits() -> bool:
    """Whether this protobuf runtime writes a View's scalar fields in field-number order (upb
    does), so that a head without its seat can be split around it (checked once)."""
    fields = dict(match_id="m", seq=7, status=1, game="g", phase="p", deal_number=2, dealer=1,
                  to_act=0, hand_sizes=[3, 4], over=True, winners=[1])
    full = match_pb2.View(**fields).SerializeToString()
    before = match_pb2.View(match_id="m", seq=7, status=1, game="g").SerializeToString()
    if not full.startswith(before):
        return False
    return all(before + _seat_field(s) + full[len(before):] == match_pb2.View(**fields, seat=s).SerializeToString()
               for s in (0, 3, -1))


_SEAT_SPLITS = _seat_splits()


#: The fields of a view that are not the audience's own (trick, last trick, trick history,
#: scores, table), by content: in most games every audience of an action sees the same ones
#: (only the hand and the legal actions differ), so all but the first are a lookup. The key
#: is the ``marshal`` serialization of every view key those fields are computed from (exact,
#: see :mod:`.wire`): equal content, so nothing crosses from one audience to another.
_SHARED: "collections.OrderedDict[bytes, tuple[bytes, bytes]]" = collections.OrderedDict()
#: The audiences of one action are encoded within a few loop turns of each other: a short
#: memory is enough, and bounds the bytes kept (entries of long deals are several KB).
_SHARED_MAX = 256
#: Per game, [lookups, hits] of the current window. Where audiences (almost) never share these
#: fields (Japanese Joker: a seat's table lists the cards it took from its columns), the key
#: costs more than it saves: the memo is bypassed for a while, then probed again.
_SHARED_STATS: dict[str, list[int]] = {}
_SHARED_PROBE, _SHARED_BYPASS = 512, 8192


def _shared_parts(v: Mapping[str, Any], scope: dict[Any, Any] | None = None) -> tuple[bytes, bytes]:
    """The shared fields by content; ``scope``: the state's encodings by identity (see
    :func:`_scoped_shared_parts`), for the parts of a miss."""
    def encode() -> tuple[bytes, bytes]:
        return _encode_shared(v) if scope is None else _encode_scoped(v, scope)

    stats = _SHARED_STATS.setdefault(str(v.get("game")), [0, 0])
    stats[0] += 1
    if stats[0] > _SHARED_PROBE and stats[1] * 8 < stats[0]:
        if stats[0] < _SHARED_BYPASS:
            return encode()
        stats[0] = stats[1] = 0
    try:
        key = marshal.dumps((v.get("trick"), v.get("last_trick"),
                             len(v.get("hand_sizes") or ()), v.get("tricks_taken"), v.get("totals"),
                             v.get("deal_results"), v.get("table")), 2)
    except ValueError:  # not made of the core types: encoded without the memo
        return encode()
    parts = wire.lru_get(_SHARED, key)
    if parts is None:
        return wire.lru_put(_SHARED, key, encode(), _SHARED_MAX)
    stats[1] += 1
    return parts


def _encode_shared(v: Mapping[str, Any]) -> tuple[bytes, bytes]:
    """The trick, last trick, trick history and scores fields; the table field."""
    parts = [wire.field(_VIEW_TRICK, trick_bytes(v.get("trick")))]
    last = v.get("last_trick")
    if last:
        parts.append(wire.field(_VIEW_LAST_TRICK, trick_bytes(last)))
    parts.extend(wire.field(_VIEW_TRICK_HISTORY, t) for t in trick_history_bytes(v))
    parts.append(wire.field(_VIEW_SCORES, scores_bytes(v)))
    table = v.get("table")
    return b"".join(parts), wire.field(_VIEW_TABLE, wire.memo_struct_body(table)) if table else b""


# ---- the audiences of one state --------------------------------------------------------------
#
# The session layer builds every audience's view of a state from one public part
# (``State.view_maker``): the views share most of their objects (the trick, the scores, the
# table's columns...), and neither the state nor those views change while the state is current.
# Their envelopes carry one dict for that state (``ViewEnvelope.encodings``), where what was
# encoded of an object is kept by the object's identity: the next audience finds it with a
# dict lookup instead of a content key. Each entry holds the objects it was computed from, so
# an id cannot be reused by another object while the entry lives; the dict goes with the state.
# Identity, not content: an entry serves the very objects it was computed from, which are in
# the views of every audience that has them, so nothing crosses from one audience to another.

(_SCOPE_SHARED, _SCOPE_TRICK, _SCOPE_LAST, _SCOPE_HISTORY, _SCOPE_SCORES, _SCOPE_VALUES, _SCOPE_HEAD, _SCOPE_EVENT,
 _SCOPE_LOG) = range(9)


def _scoped_shared_parts(v: Mapping[str, Any], scope: dict[Any, Any]) -> tuple[bytes, bytes]:
    objs = (v.get("trick"), v.get("last_trick"), v.get("hand_sizes"),
            v.get("tricks_taken"), v.get("totals"), v.get("deal_results"), v.get("table"))
    key = (_SCOPE_SHARED, *map(id, objs))
    hit = scope.get(key)
    if hit is not None:
        return hit[1]
    parts = _shared_parts(v, scope)
    scope[key] = (objs, parts)
    return parts


def _encode_scoped(v: Mapping[str, Any], scope: dict[Any, Any]) -> tuple[bytes, bytes]:
    """:func:`_encode_shared`, each part looked up by the identity of what it is computed from
    first (audiences whose views differ in a few table values share the others)."""
    trick = v.get("trick")
    key = (_SCOPE_TRICK, id(trick))
    hit = scope.get(key)
    if hit is None:
        hit = scope[key] = (trick, wire.field(_VIEW_TRICK, trick_bytes(trick)))
    parts = [hit[1]]
    last = v.get("last_trick")
    if last:
        key = (_SCOPE_LAST, id(last))
        hit = scope.get(key)
        if hit is None:
            hit = scope[key] = (last, wire.field(_VIEW_LAST_TRICK, trick_bytes(last)))
        parts.append(hit[1])
    table = v.get("table")
    is_map = isinstance(table, Mapping)
    objs = (table.get("tricks") if is_map else None,
            table.get("deal_actions") if is_map else None, v.get("hand_sizes"), last,
            v.get("tricks_taken"))  # trick_history_bytes reads it (_deal_last_trick)
    key = (_SCOPE_HISTORY, *map(id, objs))
    hit = scope.get(key)
    if hit is None:
        hit = scope[key] = (objs, _scoped_history(v, objs, scope))
    parts.append(hit[1])
    objs = (v.get("tricks_taken"), v.get("totals"), v.get("deal_results"))
    key = (_SCOPE_SCORES, *map(id, objs))
    hit = scope.get(key)
    if hit is None:
        hit = scope[key] = (objs, wire.field(_VIEW_SCORES, scores_bytes(v)))
    parts.append(hit[1])
    if not table:
        return b"".join(parts), b""
    if type(table) is not dict:
        return b"".join(parts), wire.field(_VIEW_TABLE, wire.memo_struct_body(table))
    entries = []
    for k, value in table.items():
        t = type(value)
        if t is dict or t is list:
            key = (_SCOPE_VALUES, id(value))
            hit = scope.get(key)
            if hit is None:
                hit = scope[key] = (value, wire.memo_value_bytes(value))
            entries.append(wire.map_entry(k, hit[1]))
        else:
            entries.append(wire.scalar_entry(k, value))
    return b"".join(parts), wire.field(_VIEW_TABLE, b"".join(entries))


def _scoped_history(v: Mapping[str, Any], objs: tuple, scope: dict[Any, Any]) -> bytes:
    """The trick history fields of a view (``objs``: what :func:`trick_history_bytes` reads,
    the table's ``tricks`` and ``deal_actions``, ``hand_sizes``, ``last_trick`` and
    ``tricks_taken``). The seats of a state whose deal logs are different lists (Japanese
    Joker: a seat's own table plays name the cards they brought it) but agree on every entry
    the history is cut from share one walk: the log walked first is kept with its history, and
    a later log of the state is compared with it entry by entry (the same object, or equal
    ``seat``, ``action`` and ``winner``), a fraction of the walk's cost."""
    log, peer = objs[1], None
    if type(log) is list:
        key = (_SCOPE_LOG, id(objs[0]), *map(id, objs[2:]))
        peer = scope.get(key)
        if peer is not None and _same_plays(peer[1], log):
            return peer[2]
    history = b"".join([wire.field(_VIEW_TRICK_HISTORY, t) for t in trick_history_bytes(v)])
    if type(log) is list and peer is None:
        scope[key] = (objs, log, history)
    return history


def _same_plays(walked: list[Any], log: list[Any]) -> bool:
    """Whether :func:`trick_history_bytes` cuts the same tricks from ``log`` as from ``walked``:
    the same length, and each entry the same object or a dict with equal ``action``, ``seat``
    and ``winner`` (the only keys it reads; the tricks hold them as ints, and its memo of
    tricks takes equal keys for one: 1, 1.0 and True give one trick there too)."""
    if len(walked) != len(log):
        return False
    for a, b in zip(walked, log):
        if a is b:
            continue
        if type(a) is not dict or type(b) is not dict:
            return False
        for name in ("action", "seat", "winner"):
            x, y = a.get(name), b.get(name)
            if x is not y and x != y:
                return False
    return True


def _cards_of(value: Any) -> list[str]:
    """Card codes from a list of codes or a bitmask of card ids."""
    if isinstance(value, int) and not isinstance(value, bool):
        return codes_of(value)
    return [str(c) for c in value or ()]


def inspect_message(inspection: api.Inspection) -> admin_pb2.InspectMatchResponse:
    """The admin's omniscient answer: the view plus every hand, every zone and the decks. The
    session layer's admin view carries ``hands`` (per seat), ``zones`` (name -> codes or
    bitmask), ``first_dealer`` and ``decks``."""
    env = inspection.envelope
    v = env.view
    msg = admin_pb2.InspectMatchResponse(match=summary_message(inspection.summary), view=view_message(env))
    for seat, cards in enumerate(v.get("hands") or ()):  # a list by seat (sessions/views.py)
        msg.hands.add(seat=seat, cards=cards_messages(_cards_of(cards)))
    for name, cards in sorted((v.get("zones") or {}).items()):
        msg.zones.add(name=str(name), cards=cards_messages(_cards_of(cards)))
    if v.get("first_dealer") is not None:
        msg.first_dealer = int(v["first_dealer"])
    for deck in v.get("decks") or ():
        msg.decks.add(cards=[str(c) for c in deck])
    return msg


# ---- events ------------------------------------------------------------------------------------

_EVENT_KIND = {"snapshot": match_pb2.EVENT_KIND_SNAPSHOT, "action": match_pb2.EVENT_KIND_ACTION,
               "match_ended": match_pb2.EVENT_KIND_MATCH_ENDED,
               "presence": match_pb2.EVENT_KIND_PRESENCE,
               "heartbeat": match_pb2.EVENT_KIND_HEARTBEAT}
_ACTOR = {"player": match_pb2.ACTOR_PLAYER, "bot": match_pb2.ACTOR_BOT,
          "auto": match_pb2.ACTOR_AUTO}


def event_message(ev: api.MatchEvent) -> pb.WatchMatchResponse:
    """The stream message of an event (see :func:`event_bytes`)."""
    return pb.WatchMatchResponse.FromString(event_bytes(ev))


def event_bytes(ev: api.MatchEvent) -> bytes:
    """The serialized stream message of an event. The session layer publishes one event to
    every watcher of an audience with the same envelope: the message is encoded once, kept
    with the envelope's encodings (keyed by the event's fields)."""
    if ev.view is None or ev.details:
        return _encode_event(ev)
    events = _encoded(ev.view).events
    key = (ev.kind, ev.seq, ev.seat, ev.action, ev.by, ev.reason, ev.match_id)
    data = events.get(key)
    if data is None:
        data = events[key] = _encode_event(ev)
    return data


def _encode_event(ev: api.MatchEvent) -> bytes:
    env = ev.view
    scope = env.encodings if env is not None else None
    if scope is None:
        parts = [_event_head(ev)]
    else:
        # every audience of a state gets the event with the same fields (only its view
        # differs): the head is encoded once, keyed by every field it is made of
        key = (_SCOPE_EVENT, ev.kind, ev.seq, ev.match_id, ev.reason, ev.by, ev.seat, ev.action)
        head = scope.get(key)
        if head is None:
            head = scope[key] = _event_head(ev)
        parts = [head]
    if env is not None:
        view = view_bytes(env)  # its tag and length put before it: the view copied once
        parts += (_EVENT_VIEW_TAG, wire.varint(len(view)), view)
    if ev.details:
        parts.append(wire.field(_EVENT_DETAILS, wire.struct_body(jsonable(ev.details))))
    return b"".join(parts)


def _event_head(ev: api.MatchEvent) -> bytes:
    """A WatchMatchResponse's fields but the view and the details, serialized."""
    head = pb.WatchMatchResponse(kind=_EVENT_KIND.get(ev.kind, match_pb2.EVENT_KIND_UNSPECIFIED),
                                 seq=ev.seq, match_id=ev.match_id, reason=ev.reason,
                                 by=_ACTOR.get(ev.by, match_pb2.ACTOR_UNSPECIFIED))
    if ev.seat is not None:
        head.seat = ev.seat
    out = head.SerializeToString()
    if ev.action:
        out += wire.field(_EVENT_ACTION, action_bytes(ev.action))
    return out


_EVENT_VIEW_TAG = wire.varint(_EVENT_VIEW)


def submit_response(res: api.SubmitResult) -> pb.SubmitActionResponse:
    return pb.SubmitActionResponse.FromString(submit_response_bytes(res))


def submit_response_bytes(res: api.SubmitResult) -> bytes:
    """The serialized SubmitActionResponse (its view encoded once, shared with the streams)."""
    head = pb.SubmitActionResponse(seq=res.seq, duplicate=res.duplicate).SerializeToString()
    view = view_bytes(res.view)  # its tag and length put before it: the view copied once
    return b"".join((head, wire.field(_SUBMIT_ACTION, action_bytes(res.action)), _SUBMIT_VIEW_TAG,
                     wire.varint(len(view)), view))


_SUBMIT_VIEW_TAG = wire.varint(_SUBMIT_VIEW)


def reveal_deals_response(reveals: Sequence[api.DealReveal]) -> pb.RevealDealsResponse:
    """RevealDeals' answer: every deal's commitment opened for the cards shown (a match that
    is over)."""
    return pb.RevealDealsResponse(deals=[
        pb.DealReveal(deal=r.deal, cards=list(r.cards), commitment=r.commitment,
                      card_salts=list(r.card_salts), card_hashes=list(r.card_hashes))
        for r in reveals])
