"""The codec: notation strings -> structured Action fields (NOTATION.md section 2), views,
options and the request checks, without a server."""

from __future__ import annotations

import pytest
from google.protobuf import struct_pb2

from engine_service.rules.cards import CODES
from engine_service.rules.options import BOOL, ENUM, INT, OptionSpec
from engine_service.sessions import api
from engine_service.transport import codec
from engine_service.transport.generated import card_games_pb2 as pb, cards_pb2 as c, match_pb2 as m


def _fields(notation: str) -> dict:
    msg = codec.action_message(notation)
    out = {"kind": msg.kind, "verb": msg.verb, "args": list(msg.args)}
    if msg.HasField("card"):
        out["card"] = (msg.card.code, msg.card.suit, msg.card.rank)
    for name in ("suit", "joker_mode", "named_suit", "announcement"):
        if getattr(msg, name):
            out[name] = getattr(msg, name)
    if msg.HasField("number"):
        out["number"] = msg.number
    assert msg.notation == notation
    return out


@pytest.mark.parametrize("notation, expected", [
    # klaberjass (NOTATION 2 table, 2.1)
    ("take", {"kind": c.ACTION_KIND_TAKE, "verb": "take", "args": []}),
    ("pass", {"kind": c.ACTION_KIND_PASS, "verb": "pass", "args": []}),
    ("name:S", {"kind": c.ACTION_KIND_NAME, "verb": "name", "args": ["S"], "suit": c.SUIT_SPADES}),
    ("exchange", {"kind": c.ACTION_KIND_EXCHANGE, "verb": "exchange", "args": []}),
    ("keep", {"kind": c.ACTION_KIND_KEEP, "verb": "keep", "args": []}),
    ("play:JS", {"kind": c.ACTION_KIND_PLAY, "verb": "play", "args": ["JS"],
                 "card": ("JS", c.SUIT_SPADES, c.RANK_JACK)}),
    ("play:KD:bella", {"kind": c.ACTION_KIND_PLAY, "verb": "play", "args": ["KD", "bella"],
                       "card": ("KD", c.SUIT_DIAMONDS, c.RANK_KING),
                       "announcement": c.ANNOUNCEMENT_BELLA}),  # KL-A23
    # jojotte (JJ-3.1, JJ-4.2..4.4, JJ-7.2)
    ("accept", {"kind": c.ACTION_KIND_ACCEPT, "verb": "accept", "args": []}),
    ("no_trump", {"kind": c.ACTION_KIND_NO_TRUMP, "verb": "no_trump", "args": []}),
    ("double", {"kind": c.ACTION_KIND_DOUBLE, "verb": "double", "args": []}),
    ("redouble", {"kind": c.ACTION_KIND_REDOUBLE, "verb": "redouble", "args": []}),
    ("exchange:7H", {"kind": c.ACTION_KIND_EXCHANGE, "verb": "exchange", "args": ["7H"],
                     "card": ("7H", c.SUIT_HEARTS, c.RANK_SEVEN)}),
    ("no_exchange", {"kind": c.ACTION_KIND_NO_EXCHANGE, "verb": "no_exchange", "args": []}),
    ("nullo", {"kind": c.ACTION_KIND_NULLO, "verb": "nullo", "args": []}),
    ("slam:NT", {"kind": c.ACTION_KIND_SLAM, "verb": "slam", "args": ["NT"], "suit": c.SUIT_NO_TRUMP}),
    ("slam:D", {"kind": c.ACTION_KIND_SLAM, "verb": "slam", "args": ["D"], "suit": c.SUIT_DIAMONDS}),
    ("play:KS:jo", {"kind": c.ACTION_KIND_PLAY, "verb": "play", "args": ["KS", "jo"],
                    "card": ("KS", c.SUIT_SPADES, c.RANK_KING), "announcement": c.ANNOUNCEMENT_JO}),
    ("play:QS:jotte", {"kind": c.ACTION_KIND_PLAY, "verb": "play", "args": ["QS", "jotte"],
                       "card": ("QS", c.SUIT_SPADES, c.RANK_QUEEN),
                       "announcement": c.ANNOUNCEMENT_JOTTE}),
    # georgian joker (GJ-3.5, GJ-4, GJ-5.2)
    ("trump:H", {"kind": c.ACTION_KIND_TRUMP, "verb": "trump", "args": ["H"], "suit": c.SUIT_HEARTS}),
    ("trump:NT", {"kind": c.ACTION_KIND_TRUMP, "verb": "trump", "args": ["NT"], "suit": c.SUIT_NO_TRUMP}),
    ("bid:0", {"kind": c.ACTION_KIND_BID, "verb": "bid", "args": ["0"], "number": 0}),
    ("bid:9", {"kind": c.ACTION_KIND_BID, "verb": "bid", "args": ["9"], "number": 9}),
    ("play:6D", {"kind": c.ACTION_KIND_PLAY, "verb": "play", "args": ["6D"],
                 "card": ("6D", c.SUIT_DIAMONDS, c.RANK_SIX)}),
    ("play:X1:high", {"kind": c.ACTION_KIND_PLAY, "verb": "play", "args": ["X1", "high"],
                      "card": ("X1", c.SUIT_UNSPECIFIED, c.RANK_JOKER), "joker_mode": c.JOKER_MODE_HIGH}),
    ("play:X2:low:C", {"kind": c.ACTION_KIND_PLAY, "verb": "play", "args": ["X2", "low", "C"],
                       "card": ("X2", c.SUIT_UNSPECIFIED, c.RANK_JOKER), "joker_mode": c.JOKER_MODE_LOW,
                       "named_suit": c.SUIT_CLUBS}),
    # japanese joker
    ("play:X1", {"kind": c.ACTION_KIND_PLAY, "verb": "play", "args": ["X1"],
                 "card": ("X1", c.SUIT_UNSPECIFIED, c.RANK_JOKER)}),
    ("play:X2:S", {"kind": c.ACTION_KIND_PLAY, "verb": "play", "args": ["X2", "S"],
                   "card": ("X2", c.SUIT_UNSPECIFIED, c.RANK_JOKER), "named_suit": c.SUIT_SPADES}),
    # a verb added by a table option (NOTATION 2.3)
    ("schmeiss", {"kind": c.ACTION_KIND_OTHER, "verb": "schmeiss", "args": []}),
    ("declare:seq3", {"kind": c.ACTION_KIND_OTHER, "verb": "declare", "args": ["seq3"]}),
    # ... or an argument: it stays in args, the card or the suit still parsed
    ("play:AS:schmeiss", {"kind": c.ACTION_KIND_PLAY, "verb": "play", "args": ["AS", "schmeiss"],
                          "card": ("AS", c.SUIT_SPADES, c.RANK_ACE)}),
    ("name:S:schmeiss", {"kind": c.ACTION_KIND_NAME, "verb": "name", "args": ["S", "schmeiss"],
                         "suit": c.SUIT_SPADES}),
])
def test_notation_parses_into_structured_fields(notation, expected):
    assert _fields(notation) == expected


def test_every_card_code_has_suit_and_rank():
    for code in CODES:
        card = codec.card_message(code)
        assert card.code == code
        assert card.rank != c.RANK_UNSPECIFIED
        assert (card.suit == c.SUIT_UNSPECIFIED) == (code in ("X1", "X2"))
    assert c.Suit.Name(codec.card_message("TC").suit) == "SUIT_CLUBS"
    assert c.Rank.Name(codec.card_message("TC").rank) == "RANK_TEN"


def test_option_values_keep_their_json_type():
    assert codec.option_value(True).WhichOneof("value") == "bool_value"
    assert codec.option_value(500).WhichOneof("value") == "int_value"
    assert codec.option_value("500").WhichOneof("value") == "string_value"
    with pytest.raises(TypeError, match="option value of type float"):  # no OptionValue member holds it
        codec.option_value(0.5)
    req = pb.CreateMatchRequest(game="g")
    req.options["a"].bool_value = False
    req.options["b"].int_value = 1000
    req.options["c"].string_value = "nines"
    assert codec.options_from_message(req.options) == {"a": False, "b": 1000, "c": "nines"}
    req.options["d"].SetInParent()  # a value with no member set
    with pytest.raises(api.BadRequest) as err:
        codec.options_from_message(req.options)
    assert err.value.metadata == {"option": "d"}
    assert (err.value.reason, err.value.message) == ("BAD_OPTION_VALUE", "option 'd' has no value")  # docs/api.md


def test_option_spec_message():
    spec = OptionSpec("kl_target_score", INT, 500, values=(500, 1000), help="Target.", rules=("KL-10.1",))
    msg = codec.option_spec_message(spec)
    assert msg.type == m.OPTION_TYPE_INT and msg.default_value.int_value == 500
    assert [v.int_value for v in msg.allowed_values] == [500, 1000]
    assert list(msg.rule_ids) == ["KL-10.1"] and msg.help == "Target."
    assert not msg.HasField("minimum")
    rng = codec.option_spec_message(OptionSpec("n", INT, 3, minimum=1, maximum=9))
    assert (rng.minimum, rng.maximum) == (1, 9)
    assert codec.option_spec_message(OptionSpec("b", BOOL, False)).type == m.OPTION_TYPE_BOOL
    # a bool has no allowed_values (match.proto), whether its spec lists both values or not
    listed = codec.option_spec_message(OptionSpec("b", BOOL, True, values=(True, False)))
    assert listed.type == m.OPTION_TYPE_BOOL and not listed.allowed_values and listed.default_value.bool_value
    e = codec.option_spec_message(OptionSpec("e", ENUM, "x", values=("x", "y")))
    assert [v.string_value for v in e.allowed_values] == ["x", "y"]


def test_catalogue_messages_copy_every_field():
    """GameInfo, BotInfo and BotLoadFailure (ListGames, ListBots) field by field, the game's
    options as OptionSpecs with their range text."""
    spec = OptionSpec("n", INT, 3, minimum=1, maximum=9)
    game = codec.game_message(api.GameInfo("gj", "Georgian Joker", 4, "About.", "GEORGIAN_JOKER.md", (spec,)))
    assert (game.id, game.name, game.num_seats, game.description, game.rulebook) == (
        "gj", "Georgian Joker", 4, "About.", "GEORGIAN_JOKER.md")
    assert [(o.name, o.allowed_text) for o in game.options] == [("n", "an integer in [1, 9]")]
    bot = codec.bot_message(api.BotInfo("random", ("klaberjass", "jojotte"), "Plays at random.", "builtin"))
    assert (bot.name, list(bot.games), bot.description, bot.plugin) == (
        "random", ["klaberjass", "jojotte"], "Plays at random.", "builtin")
    failure = codec.bot_load_failure_message(api.BotLoadFailure("broken", "import", "ImportError"))
    assert (failure.plugin, failure.stage, failure.reason) == ("broken", "import", "ImportError")


def test_create_request_conversion_and_checks():
    req = pb.CreateMatchRequest(game="klaberjass", name="t")
    req.seats.add().open.SetInParent()
    req.seats.add().bot.name = "random"
    req.turn_time.seconds, req.turn_time.nanos = 2, 500_000_000
    out = codec.create_request(req)
    assert out.seats == (api.SeatConfig("open"), api.SeatConfig("bot", "random"))
    assert out.turn_time_s == 2.5 and out.spectators_allowed is True and out.first_dealer is None
    req.spectators_allowed = False
    req.first_dealer = 0
    out = codec.create_request(req)
    assert out.spectators_allowed is False and out.first_dealer == 0
    for bad in (pb.CreateMatchRequest(), pb.CreateMatchRequest(game="g", name="x" * 65)):
        with pytest.raises(api.BadRequest):
            codec.create_request(bad)
    nameless = pb.CreateMatchRequest(game="g")
    nameless.seats.add().bot.SetInParent()
    with pytest.raises(api.BadRequest, match="bot's name"):
        codec.create_request(nameless)
    # a Duration's nanos is a fraction of a second, of the seconds' sign
    # and its seconds at most 315,576,000,000 (duration.proto): beyond is no Duration, not a
    # turn time out of range (it was BAD_TURN_TIME, INVALID_OPTIONS in the Joker games)
    for seconds, nanos in ((9, 2_000_000_000), (-1, 1), (0, -1_000_000_000), (11, -1), (315_576_000_001, 0),
                           (2 ** 62, 0), (-315_576_000_001, 0), (-(2 ** 62), 0)):
        bad = pb.CreateMatchRequest(game="klaberjass")
        bad.turn_time.seconds, bad.turn_time.nanos = seconds, nanos
        with pytest.raises(api.BadRequest) as info:
            codec.create_request(bad)
        assert info.value.reason == "BAD_DURATION", (seconds, nanos)


def test_create_request_copies_every_field():
    """Every CreateMatchRequest field reaches the session layer's value as sent (the admin-only
    decks and first dealer too: the servicer checks who may set them)."""
    req = pb.CreateMatchRequest(game="jojotte", name="t", listed=True, spectator_delay_actions=2,
                                client_create_id="c" * 16, spectators_allowed=True, first_dealer=1)
    req.seats.add().bot.name = "random"
    req.seats.add().open.SetInParent()
    req.options["jj_target"].int_value = 151
    req.decks.add().cards.extend(["AS", "KS"])
    req.decks.add().cards.extend(["7H"])
    req.turn_time.seconds, req.turn_time.nanos = 10, 999_999_999  # the largest fraction is a Duration's
    assert codec.create_request(req) == api.CreateMatchRequest(
        game="jojotte", options={"jj_target": 151},
        seats=(api.SeatConfig("bot", "random"), api.SeatConfig("open")), turn_time_s=10.999999999,
        spectators_allowed=True, name="t", listed=True, spectator_delay_actions=2,
        decks=(("AS", "KS"), ("7H",)), first_dealer=1, client_create_id="c" * 16)


def _bad_duration(seconds: int, nanos: int) -> pb.CreateMatchRequest:
    req = pb.CreateMatchRequest(game="g")
    req.turn_time.seconds, req.turn_time.nanos = seconds, nanos
    return req


@pytest.mark.parametrize("req, reason, field, says", [
    (pb.CreateMatchRequest(), "MISSING_FIELD", "game", "game is required"),  # card_games.proto: an empty game
    (pb.CreateMatchRequest(game="g", seats=[m.SeatSpec(open=m.OpenSeat()), m.SeatSpec(bot=m.BotSeat())]),
     "MISSING_FIELD", "seats[1].bot.name", "seat 1: a bot seat needs the bot's name"),  # a bot seat without a name
    (pb.CreateMatchRequest(game="g", seats=[m.SeatSpec(open=m.OpenSeat()), m.SeatSpec(bot=m.BotSeat(name="b" * 129))]),
     "FIELD_TOO_LONG", "seats[1].bot.name", "seats[1].bot.name is longer than 128 characters"),
    (pb.CreateMatchRequest(game="g" * 129), "FIELD_TOO_LONG", "game", "game is longer than 128 characters"),
    (pb.CreateMatchRequest(game="g", name="n" * 65), "FIELD_TOO_LONG", "name", "name is longer than 64 characters"),
    (_bad_duration(-1, 0), "BAD_TURN_TIME", "turn_time", "turn_time must not be negative"),  # docs/api.md
    (_bad_duration(-1, 5), "BAD_DURATION", "turn_time",  # a negative Duration's nanos are of its sign
     "turn_time is no google.protobuf.Duration"),
    (_bad_duration(1, 1_000_000_000), "BAD_DURATION", "turn_time",  # nanos is a fraction of a second
     "turn_time.nanos must be 0 to 999999999"),
    (_bad_duration(codec.MAX_DURATION_SECONDS + 1, 0), "BAD_DURATION", "turn_time",
     "turn_time is beyond google.protobuf.Duration's range"),
])
def test_create_request_refusals_name_their_field(req, reason, field, says):
    """docs/api.md, Errors: MISSING_FIELD, FIELD_TOO_LONG and BAD_DURATION carry the request
    field in their metadata (``seats[1].bot.name``: the seat's index), and the message says
    what is wrong with it (a clear error, not only a reason code)."""
    with pytest.raises(api.BadRequest) as info:
        codec.create_request(req)
    assert (info.value.reason, info.value.metadata) == (reason, {"field": field})
    assert info.value.message.startswith(says), info.value.message


def test_request_limits_include_the_limit_itself():
    """card_games.proto: a match id (and the other ids: game, bot, option) "longer than 128
    characters" is FIELD_TOO_LONG, a name "at most 64 characters", a turn time at most
    google.protobuf.Duration's 315,576,000,000 s: exactly the limit is accepted."""
    req = pb.CreateMatchRequest(game="g" * 128, name="n" * 64)
    req.seats.add().bot.name = "b" * 128
    req.options["o" * 128].string_value = "v" * 128
    req.turn_time.seconds = codec.MAX_DURATION_SECONDS
    out = codec.create_request(req)
    assert (out.game, out.name, out.seats[0].bot) == ("g" * 128, "n" * 64, "b" * 128)
    assert out.options == {"o" * 128: "v" * 128} and out.turn_time_s == 315_576_000_000
    assert codec.require_match_id("m" * 128) == "m" * 128 and codec.game_filter("g" * 128) == "g" * 128
    too_long = [pb.CreateMatchRequest(game="g" * 129), pb.CreateMatchRequest(game="g", name="n" * 65),
                pb.CreateMatchRequest(game="g", seats=[_bot_seat("b" * 129)])]
    too_long.append(pb.CreateMatchRequest(game="g"))
    too_long[-1].options["o" * 129].bool_value = True
    too_long.append(pb.CreateMatchRequest(game="g"))
    too_long[-1].options["o"].string_value = "v" * 129
    for bad in too_long:
        with pytest.raises(api.BadRequest) as info:
            codec.create_request(bad)
        assert info.value.reason == "FIELD_TOO_LONG", bad
    for call in (codec.require_match_id, codec.game_filter):
        with pytest.raises(api.BadRequest) as info:
            call("m" * 129)
        assert info.value.reason == "FIELD_TOO_LONG"
    late = pb.CreateMatchRequest(game="g")
    late.turn_time.seconds = codec.MAX_DURATION_SECONDS + 1
    with pytest.raises(api.BadRequest) as info:
        codec.create_request(late)
    assert info.value.reason == "BAD_DURATION" and codec.MAX_DURATION_SECONDS == 315_576_000_000


def test_field_too_long_names_the_field():
    """FIELD_TOO_LONG's ``field`` metadata is the request field (docs/api.md: ``options`` for
    an option's name, ``options[<name>]`` for its value), and its message names it too."""
    cases = [(lambda: codec.require_match_id("m" * 129), "match_id", "match_id is longer"),
             (lambda: codec.game_filter("g" * 129), "game", "game is longer")]
    for options, field, text in ((("o" * 129, "v"), "options", "an option name is longer"),
                                 (("o", "v" * 129), "options[o]", "option 'o' is longer")):
        req = pb.CreateMatchRequest(game="g")
        req.options[options[0]].string_value = options[1]
        cases.append((lambda req=req: codec.create_request(req), field, text))
    for call, field, text in cases:
        with pytest.raises(api.BadRequest, match=f"^{text} than 128 characters$") as info:
            call()
        assert (info.value.reason, info.value.metadata) == ("FIELD_TOO_LONG", {"field": field})


def test_a_missing_match_id_is_missing_field():
    with pytest.raises(api.BadRequest, match="match_id is required") as info:
        codec.require_match_id("")
    assert (info.value.reason, info.value.metadata) == ("MISSING_FIELD", {"field": "match_id"})


def test_a_duration_takes_every_fraction_of_a_second():
    """google.protobuf.Duration's nanos run from 0 to 999,999,999 (duration.proto): both ends
    are a valid turn time."""
    for nanos in (0, 999_999_999):
        req = pb.CreateMatchRequest(game="g")
        req.turn_time.seconds, req.turn_time.nanos = 3, nanos
        assert codec.create_request(req).turn_time_s == 3 + nanos / 1e9


@pytest.mark.parametrize("seconds, nanos", [(-1, 0), (0, -5), (-1, -999_999_999), (-315_576_000_000, 0)])
def test_a_negative_turn_time_is_bad_turn_time(seconds, nanos):
    """docs/api.md, CreateMatch: "A negative turn_time is BAD_TURN_TIME in every game". A
    negative Duration is a Duration (duration.proto: seconds from -315,576,000,000, nanos of
    the seconds' sign), so it is refused as a turn time, not as BAD_DURATION (an invalid
    Duration, card_games.proto)."""
    with pytest.raises(api.BadRequest) as info:
        codec.create_request(_bad_duration(seconds, nanos))
    assert (info.value.reason, info.value.metadata) == ("BAD_TURN_TIME", {"field": "turn_time"})
    assert info.value.message == "turn_time must not be negative"


_RANK_NAMES = {"A": "ACE", "K": "KING", "Q": "QUEEN", "J": "JACK", "T": "TEN", "9": "NINE", "8": "EIGHT",
               "7": "SEVEN", "6": "SIX"}
_SUIT_NAMES = {"S": "SPADES", "H": "HEARTS", "D": "DIAMONDS", "C": "CLUBS"}


def test_every_card_code_has_the_rank_and_suit_it_names():
    """cards.proto Card: the rulebook code is rank then suit ("AS", "TH", "7C"), and ``rank`` /
    ``suit`` are those of the code, for every card of every pack (not only some ranks)."""
    for code in CODES:
        card = codec.card_message(code)
        if code in ("X1", "X2"):
            assert (card.rank, card.suit) == (c.RANK_JOKER, c.SUIT_UNSPECIFIED)
            continue
        assert c.Rank.Name(card.rank) == "RANK_" + _RANK_NAMES[code[0]], code
        assert c.Suit.Name(card.suit) == "SUIT_" + _SUIT_NAMES[code[1]], code


@pytest.mark.parametrize("notation, expected", [
    # cards.proto Action.card: "the card played or exchanged; unset otherwise"
    ("play:schmeiss", {"kind": c.ACTION_KIND_PLAY, "verb": "play", "args": ["schmeiss"]}),
    # Action.suit of "name:", "trump:", "slam:" only for a suit or NT; the parser is total
    ("trump:schmeiss", {"kind": c.ACTION_KIND_TRUMP, "verb": "trump", "args": ["schmeiss"]}),
    # Action.number: the number of "bid:<n>"; another argument raises nothing and sets none
    ("bid:all", {"kind": c.ACTION_KIND_BID, "verb": "bid", "args": ["all"]}),
    # Action.named_suit: the suit a led joker names; NT is no suit (NOTATION 2: suits S H D C)
    ("play:X1:NT", {"kind": c.ACTION_KIND_PLAY, "verb": "play", "args": ["X1", "NT"],
                    "card": ("X1", c.SUIT_UNSPECIFIED, c.RANK_JOKER)}),
])
def test_an_argument_the_parser_does_not_know_sets_no_field(notation, expected):
    """The notation parser is total (codec docstring: an argument it does not recognise stays
    in ``args``, NOTATION 2.3): it never raises, and a word that is not a card, a suit, a
    strain or a number leaves the structured field it stands in unset."""
    assert _fields(notation) == expected


def test_option_specs_keep_their_type_and_every_bound():
    """match.proto OptionSpec: ``type`` follows the option's kind (docs/api.md: ``string_value``
    for OPTION_TYPE_ENUM), ``minimum`` / ``maximum`` are set whenever the range has them, 0
    too (presence, not the value); a value goes out as it is (docs/api.md: a default or an
    allowed value "can be sent back as it is"); GameInfo.num_seats is the game's."""
    e = codec.option_spec_message(OptionSpec("e", ENUM, "Nines", values=("Nines", "x")))
    assert e.type == m.OPTION_TYPE_ENUM
    assert [v.string_value for v in e.allowed_values] == ["Nines", "x"] and e.default_value.string_value == "Nines"
    low = codec.option_spec_message(OptionSpec("n", INT, 0, minimum=0))
    assert low.HasField("minimum") and low.minimum == 0 and not low.HasField("maximum")
    high = codec.option_spec_message(OptionSpec("n", INT, -1, minimum=-5, maximum=0))
    assert high.HasField("maximum") and (high.minimum, high.maximum) == (-5, 0)
    game = codec.game_message(api.GameInfo("japanese_joker", "Japanese Joker", 2, "", "", ()))
    assert game.num_seats == 2


def test_summary_seats_tell_a_replaced_player_from_one_who_left():
    """match.proto SeatInfo: a disconnected player whose seat a bot plays is ``replaced_by_bot``
    but not ``left``; a player who left is ``left`` (without a takeover bot outside Georgian
    Joker). MatchSummary.listed is the match's, false too; created_at is a Timestamp
    (timestamp.proto: whole seconds rounded down, nanos 0 to 999,999,999 counting forward)."""
    seats = (api.SeatInfo(0, "open", player_name="ann", taken=True, replaced_by_bot=True),
             api.SeatInfo(1, "open", player_name="bob", taken=True, left=True))
    msg = codec.summary_message(api.MatchSummary("m", "klaberjass", {}, "active", 3, seats, 0.0, True, 1_764_000_000.0))
    assert [(x.replaced_by_bot, x.left) for x in msg.seats] == [(True, False), (False, True)]
    assert msg.listed is False
    assert (msg.created_at.seconds, msg.created_at.nanos) == (1_764_000_000, 0)
    early = codec.summary_message(api.MatchSummary("m", "klaberjass", {}, "active", 0, (), 0.0, True, -0.25))
    assert (early.created_at.seconds, early.created_at.nanos) == (-1, 750_000_000)


def test_request_ids_and_names_are_taken_as_sent_and_counted_in_code_points():
    """card_games.proto / docs/api.md: ids (game, match id, bot name) are exact, an unknown one
    is UNKNOWN_GAME / NOT_FOUND / UNKNOWN_BOT later, not something the codec rewrites; limits
    count Unicode code points ("at most 64 characters (Unicode code points)"), not bytes; an
    unset SeatSpec is an open seat (match.proto SeatSpec)."""
    req = pb.CreateMatchRequest(game="Klaberjass", name="é" * 64)
    req.seats.add().bot.name = " random "
    req.seats.add()  # neither open nor bot
    req.options["ö" * 128].string_value = "ü" * 128
    out = codec.create_request(req)
    assert (out.game, out.name) == ("Klaberjass", "é" * 64)
    assert out.seats == (api.SeatConfig("bot", " random "), api.SeatConfig("open"))
    assert out.options == {"ö" * 128: "ü" * 128}
    assert codec.require_match_id(" m ") == " m " and codec.game_filter("é" * 128) == "é" * 128


def test_an_event_carries_its_details():
    """card_games.proto WatchMatchResponse.details (field 9): a HEARTBEAT's {"deadline",
    "interval_s", "server_time"} reach the watcher as a Struct."""
    details = {"deadline": None, "interval_s": 15, "server_time": 1_764_000_000.5}
    msg = codec.event_message(api.MatchEvent(kind="heartbeat", seq=4, match_id="m", details=details))
    assert msg.kind == m.EVENT_KIND_HEARTBEAT and msg.seq == 4
    assert dict(msg.details) == details


def _bot_seat(name: str) -> m.SeatSpec:
    spec = m.SeatSpec()
    spec.bot.name = name
    return spec


def test_view_message_copies_the_common_keys():
    view = {
        "game": "georgian_joker", "phase": "play", "deal_number": 3, "dealer": 2, "to_act": 1,
        "seat": 1, "hand": ["AS", "X1"], "hand_sizes": [3, 2, 3, 3], "legal": ["play:AS", "play:X1:high"],
        "trick": [{"seat": 0, "card": "X2", "joker_mode": "high", "named_suit": "H"}],
        "last_trick": {"plays": [{"seat": 3, "card": "6D"}, {"seat": 0, "card": "7D"}], "winner": 0},
        "tricks_taken": [1, 0, 0, 0], "totals": [100, -50, 0, 0],
        "deal_results": [{"trump": "S", "bids": [1, 0, 0, 0]}], "over": False, "winners": [],
        "table": {"trump": "S", "bids": {1: 2}},
    }
    env = api.ViewEnvelope(match_id="m1", seq=42, status="active", view=view, deadline=1700000000.25, seat=1)
    msg = codec.view_message(env)
    assert (msg.match_id, msg.seq, msg.status, msg.seat, msg.to_act) == ("m1", 42, m.MATCH_STATUS_ACTIVE, 1, 1)
    assert [x.code for x in msg.hand] == ["AS", "X1"]
    assert [a.notation for a in msg.legal_actions] == ["play:AS", "play:X1:high"]
    assert msg.legal_actions[1].joker_mode == c.JOKER_MODE_HIGH
    assert msg.trick.plays[0].named_suit == c.SUIT_HEARTS and not msg.trick.HasField("winner")
    assert msg.last_trick.winner == 0 and len(msg.trick_history) == 1
    assert [(r.name, list(r.values)) for r in msg.scores.totals] == [("total", [100, -50, 0, 0])]
    assert msg.scores.deal_results[0]["trump"] == "S"
    assert msg.table["bids"]["1"] == 2
    assert msg.deadline.seconds == 1700000000 and msg.deadline.nanos == 250_000_000
    late = codec.view_message(api.ViewEnvelope("m1", 42, "active", view, deadline=1.9999999999))
    assert (late.deadline.seconds, late.deadline.nanos) == (1, 999_999_999)  # never 1e9 (timestamp.proto)
    jj = dict(view, totals={"below": [10, 0], "above": [0, 300], "games_won": [1, 0]})
    msg = codec.view_message(api.ViewEnvelope("m", 0, "active", jj))
    assert [r.name for r in msg.scores.totals] == ["below", "above", "games_won"]
    spectator = dict(view, seat=None, to_act=None, hand=[], legal=[])
    msg = codec.view_message(api.ViewEnvelope("m", 0, "finished", spectator))
    assert not msg.HasField("seat") and not msg.HasField("to_act") and not msg.hand


def test_inspect_message_carries_what_only_the_admin_sees():
    """InspectMatchResponse (admin.proto): every seat's hand, in seat order, and every zone,
    sorted by name, from card codes or a bitmask of card ids (rules/cards.py), the first
    dealer and every deck dealt so far."""
    view = {"phase": "play", "hands": [["AS", "X1"], 0b1011], "zones": {"stock": ["7H"], "hand0": 0b1},
            "first_dealer": 1, "decks": [["AS", "KS"], ("7H",)]}
    summary = api.MatchSummary("m", "klaberjass", {}, "active", 5, (), 0.0, True, 0.0)
    msg = codec.inspect_message(api.Inspection(summary, api.ViewEnvelope("m", 5, "active", view)))
    assert (msg.match.match_id, msg.view.seq, msg.view.phase) == ("m", 5, "play")
    assert [(h.seat, [x.code for x in h.cards]) for h in msg.hands] == [(0, ["AS", "X1"]), (1, ["AS", "KS", "JS"])]
    assert msg.hands[0].cards[1].rank == c.RANK_JOKER
    assert [(z.name, [x.code for x in z.cards]) for z in msg.zones] == [("hand0", ["AS"]), ("stock", ["7H"])]
    assert msg.first_dealer == 1 and [list(d.cards) for d in msg.decks] == [["AS", "KS"], ["7H"]]
    empty = codec.inspect_message(api.Inspection(summary, api.ViewEnvelope("m", 5, "active", {"phase": "deal"})))
    assert not empty.hands and not empty.zones and not empty.decks and empty.first_dealer == 0


def test_reveal_deals_response_opens_every_deal():
    """RevealDealsResponse (card_games.proto DealReveal): per deal, the cards shown ("" where
    hidden), the commitment, each shown card's salt and each hidden card's hash, in deal order."""
    reveals = [api.DealReveal(0, ("AS", ""), "c0", ("s1", ""), ("", "h2")), api.DealReveal(1, ("7H",), "", ("",), ("",))]
    msg = codec.reveal_deals_response(reveals)
    assert [(d.deal, list(d.cards), d.commitment, list(d.card_salts), list(d.card_hashes)) for d in msg.deals] == [
        (0, ["AS", ""], "c0", ["s1", ""], ["", "h2"]), (1, ["7H"], "", [""], [""])]


def test_a_view_of_other_containers_encodes_its_content():
    """Views not made of the core types (a dict subclass, tuples: not keys of the memos, which
    ``marshal`` exact types) encode by content, alone and with their state's ``encodings``:
    the trick, the deal results, the table."""

    class Entry(dict):
        pass

    view = {"phase": "play", "hand_sizes": [1, 1], "trick": [Entry(seat=1, card="AS")],
            "last_trick": Entry(plays=[Entry(seat=0, card="KS"), Entry(seat=1, card="QS")], winner=0),
            "tricks_taken": [1, 0], "deal_results": (Entry(points=[10, 0]),), "table": Entry(trump="S")}
    for scope in (None, {}):
        msg = codec.view_message(api.ViewEnvelope("m", 2, "active", view, encodings=scope))
        assert [(p.seat, p.card.code) for p in msg.trick.plays] == [(1, "AS")]
        assert (msg.last_trick.winner, [p.card.code for p in msg.last_trick.plays]) == (0, ["KS", "QS"])
        assert [[p.card.code for p in t.plays] for t in msg.trick_history] == [["KS", "QS"]]
        assert list(msg.scores.deal_results[0]["points"]) == [10, 0] and msg.table["trump"] == "S"
    seat = type("Seat", (int,), {"__hash__": None})  # unhashable: the logged trick built as is
    log = {"hand_sizes": [2, 2], "table": {"deal_actions": [{"seat": seat(1), "action": "play:KH"},
                                                           {"seat": 0, "action": "play:AH", "winner": 0}]}}
    (trick,) = codec.trick_history(log)
    assert [(p.seat, p.card.code) for p in trick.plays] == [(1, "KH"), (0, "AH")] and trick.winner == 0


def test_named_score_rows_are_the_lists_of_the_totals():
    """Scores.totals (match.proto): Jo-Jotte's named rows are the per-seat lists of its totals
    mapping; an entry that is not a list of numbers is no row."""
    view = {"totals": {"below": [10, 0], "target": 1000, "above": (0, 300)}}
    msg = codec.view_message(api.ViewEnvelope("m", 0, "active", view))
    assert [(r.name, list(r.values)) for r in msg.scores.totals] == [("below", [10, 0]), ("above", [0, 300])]


def test_trick_plays_carry_their_structured_fields():
    """TrickPlay (match.proto) from the rules' trick entries: the announcement of Jo-Jotte
    ``announce`` (JJ-7.2) and Klaberjass's bella (KL-A23), Georgian Joker's ``joker_mode`` and
    ``named_suit`` (GJ-5.2; ``mode`` / ``announcement`` are read too), and every other key of
    the entry in ``details``, which is unset when there is none."""
    view = {"phase": "play", "trick": [
        {"seat": 0, "card": "KS", "announce": "bella"}, {"seat": 1, "card": "QS", "announcement": "jotte"},
        {"seat": 2, "card": "X1", "mode": "low", "named_suit": "D", "from": "hand"},
        {"seat": 3, "card": "X2", "joker_mode": "high"}]}
    plays = codec.view_message(api.ViewEnvelope("m", 1, "active", view)).trick.plays
    assert [p.announcement for p in plays] == [c.ANNOUNCEMENT_BELLA, c.ANNOUNCEMENT_JOTTE, 0, 0]
    assert [p.joker_mode for p in plays] == [0, 0, c.JOKER_MODE_LOW, c.JOKER_MODE_HIGH]
    assert [p.named_suit for p in plays] == [0, 0, c.SUIT_DIAMONDS, 0]
    assert [p.HasField("details") for p in plays] == [False, False, True, False]
    assert dict(plays[2].details) == {"from": "hand"}
    assert [(p.seat, p.card.code) for p in plays] == [(0, "KS"), (1, "QS"), (2, "X1"), (3, "X2")]
    cardless = codec.trick_play_message({"seat": 2})  # an entry without a card code has no Card
    assert cardless.seat == 2 and not cardless.HasField("card")
    assert codec.trick_play_message({"card": "AS"}).seat == 0  # an entry without a seat: int32's default


def test_trick_history_from_a_log_keeps_modes_and_announcements():
    """A trick rebuilt from a deal log (codec._play_from_action) has the joker mode, the named
    suit and the announcement of its ``play:`` actions; a log that ends with a complete trick
    whose entries name no winner takes it from ``last_trick`` (the deal's, tricks_taken > 0)."""
    view = {"hand_sizes": [1, 1], "tricks_taken": [0, 1],
            "last_trick": {"plays": [{"seat": 0, "card": "X1"}, {"seat": 1, "card": "KS"}], "winner": 1},
            "table": {"deal_actions": [{"seat": 0, "action": "play:X1:high:S"},
                                       {"seat": 1, "action": "play:KS:bella"}]}}
    (trick,) = codec.trick_history(view)
    lead, follow = trick.plays
    assert (lead.joker_mode, lead.named_suit, lead.announcement) == (c.JOKER_MODE_HIGH, c.SUIT_SPADES, 0)
    assert (follow.joker_mode, follow.named_suit, follow.announcement) == (0, 0, c.ANNOUNCEMENT_BELLA)
    assert trick.winner == 1


def test_jsonable_refuses_what_json_cannot_hold():
    assert codec.jsonable({1: (1, 2), "s": {3, 1}}) == {"1": [1, 2], "s": [1, 3]}
    assert list({10, 2}) == [10, 2]  # a set's own order is not sorted: the sorting is jsonable's
    assert codec.jsonable([{10, 2}, frozenset({33, 1})]) == [[2, 10], [1, 33]]
    for bad in (float("nan"), float("inf"), -float("inf")):
        with pytest.raises(ValueError, match=f"non-finite number in a view: {bad!r}"):
            codec.jsonable({"x": bad})
    with pytest.raises(TypeError, match="not a JSON value: object"):
        codec.jsonable({"x": object()})


def test_event_message():
    ev = api.MatchEvent(kind="action", seq=7, match_id="m", seat=2, action="bid:3", by="bot",
                        view=api.ViewEnvelope("m", 7, "active", {"phase": "bidding"}))
    msg = codec.event_message(ev)
    assert msg.kind == m.EVENT_KIND_ACTION and msg.by == m.ACTOR_BOT and msg.seat == 2
    assert msg.action.number == 3 and msg.view.phase == "bidding"
    hb = codec.event_message(api.MatchEvent(kind="heartbeat", seq=7, match_id="m"))
    assert hb.kind == m.EVENT_KIND_HEARTBEAT and not hb.HasField("view") and not hb.HasField("seat")
    # an event that is not an action has no Action at all (match.proto: "the action of an
    # ACTION event"), not an empty one, with its view encoded alone or with its state's
    for scope in (None, {}):
        env = api.ViewEnvelope("m", 7, "active", {"phase": "play"}, encodings=scope)
        joined = codec.event_message(api.MatchEvent(kind="presence", seq=7, match_id="m", seat=1, reason="joined",
                                                    view=env))
        assert not joined.HasField("action") and not hb.HasField("action") and joined.by == m.ACTOR_UNSPECIFIED
        assert (joined.kind, joined.reason, joined.seat, joined.view.phase) == (m.EVENT_KIND_PRESENCE, "joined", 1, "play")


def test_every_event_kind_and_actor_has_its_enum():
    """WatchMatchResponse.kind and .by (match.proto EventKind, Actor) for every kind and actor
    the session layer publishes; an unknown one is UNSPECIFIED, never another's value."""
    kinds = {"snapshot": m.EVENT_KIND_SNAPSHOT, "action": m.EVENT_KIND_ACTION, "match_ended": m.EVENT_KIND_MATCH_ENDED,
             "presence": m.EVENT_KIND_PRESENCE, "heartbeat": m.EVENT_KIND_HEARTBEAT, "other": m.EVENT_KIND_UNSPECIFIED}
    for kind, want in kinds.items():
        assert codec.event_message(api.MatchEvent(kind=kind, seq=1, match_id="m")).kind == want, kind
    actors = {"player": m.ACTOR_PLAYER, "bot": m.ACTOR_BOT, "auto": m.ACTOR_AUTO, "": m.ACTOR_UNSPECIFIED}
    for by, want in actors.items():
        ev = api.MatchEvent(kind="action", seq=1, match_id="m", seat=0, action="pass", by=by)
        assert codec.event_message(ev).by == want, by


def test_trick_history_from_a_deal_log():
    """Klaberjass / Japanese Joker publish the deal's action log, not a list of tricks."""
    view = {"hand_sizes": [5, 4], "trick": [{"seat": 0, "card": "9D"}],
            "last_trick": {"plays": [{"seat": 1, "card": "9H"}, {"seat": 0, "card": "8H"}], "winner": 0},
            "table": {"deal_actions": [
                {"seat": 1, "action": "take"}, {"seat": 1, "action": "play:TH"},
                {"seat": 0, "action": "exchange"}, {"seat": 0, "action": "play:KH"},
                {"seat": 1, "action": "play:9H"}, {"seat": 0, "action": "play:8H"},
                {"seat": 0, "action": "play:9D"}]}}
    history = codec.trick_history(view)
    assert [[(p.seat, p.card.code) for p in t.plays] for t in history] == [[(1, "TH"), (0, "KH")], [(1, "9H"), (0, "8H")]]
    assert [t.winner for t in history] == [1, 0]
    jjk = {"hand_sizes": [3, 3], "table": {"deal_actions": [
        {"seat": 0, "action": "trump:NT"}, {"seat": 0, "action": "play:X1:S", "from": "hand"},
        {"seat": 1, "action": "play:QS", "from": "table", "winner": 0}]}}
    (trick,) = codec.trick_history(jjk)
    assert trick.winner == 0 and trick.plays[0].named_suit == c.SUIT_SPADES and trick.plays[0].card.rank == c.RANK_JOKER


def test_trick_history_counts_card_plays_only():
    """Only ``play:<card>`` entries make tricks (codec._is_card_play, memoized for every
    action string it sees): not another verb with a card (``exchange:7H``), not ``play`` with
    no card or an unknown one, not a non-string action; a ``str`` subclass counts as its text.
    Asked twice, so that the memoized answers are the ones checked the second time."""

    class Text(str):
        pass

    view = {"hand_sizes": [2, 2], "table": {"deal_actions": [
        {"seat": 0, "action": "exchange:7H"}, {"seat": 0, "action": "play"}, {"seat": 1, "action": "play:"},
        {"seat": 1, "action": "play:ZZ"}, {"seat": 0, "action": None}, {"seat": 0, "action": ["play:KH"]},
        {"seat": 0, "action": Text("play:KH")}, "not an entry", {"seat": 1, "action": "playing:AH"},
        {"seat": 1, "action": "play:AH", "winner": 1}, {"seat": 1, "action": "exchange:7H"}]}}
    for _ in range(2):
        (trick,) = codec.trick_history(view)
        assert [(p.seat, p.card.code) for p in trick.plays] == [(0, "KH"), (1, "AH")] and trick.winner == 1


def test_trick_history_reads_only_what_has_the_shape_of_tricks():
    """``table.tricks`` is a trick list only when every entry is a trick with ``plays``;
    otherwise the deal log gives the history, whose entries may be any mapping (not only a
    dict); a table that is no mapping holds neither. A ``tricks`` at the top of a view is
    not read (no game's view has one)."""
    from types import MappingProxyType

    top = [{"plays": [{"seat": 0, "card": "7S"}, {"seat": 1, "card": "8S"}], "winner": 0}]
    view = {"hand_sizes": [2, 2], "tricks": top, "table": {"tricks": [{"winner": 0}], "deal_actions": [
        MappingProxyType({"seat": 0, "action": "play:KH"}), {"seat": 1, "action": "play:AH", "winner": 1}]}}
    (trick,) = codec.trick_history(view)
    assert [(p.seat, p.card.code) for p in trick.plays] == [(0, "KH"), (1, "AH")] and trick.winner == 1
    assert codec.trick_history({"hand_sizes": [2, 2], "table": ["not", "a", "mapping"]}) == []


def test_the_card_play_memo_stays_within_its_bound(monkeypatch):
    """codec._is_card_play remembers at most 4,096 action strings (a long-running engine meets
    ever new ones) and still answers past that."""
    monkeypatch.setattr(codec, "_CARD_PLAYS", {})
    assert all(codec._is_card_play(f"play:AS:{i}") for i in range(4100))
    assert not codec._is_card_play("bid:4100") and len(codec._CARD_PLAYS) == 4096


def _decision_states(game, seed: int, turns: int):
    """``(state, seat to act)`` at each decision of one random match of ``game``, for at most
    ``turns`` steps (deals included); the live state, advanced by a random legal action once
    the caller is done with it."""
    import random

    from engine_service.rules.game import CHANCE

    rng = random.Random(seed)
    state = game.new_state()
    for _ in range(turns):
        who = state.to_act()
        if who == CHANCE:
            deck = list(game.pack)
            rng.shuffle(deck)
            state.deal(deck)
            continue
        if who < 0:
            return
        yield state, who
        state.apply(rng.choice(state.legal_actions()), who)


def test_trick_history_agrees_with_the_rules_views_of_every_game():
    """Over random play of every registered game: one history entry per trick taken this deal,
    the last one equal to ``last_trick``, every card a card the view has shown publicly."""
    from engine_service.rules.registry import all_games

    games = all_games()
    assert games, "no game is registered"
    for game in games:
        checked = 0
        for state, who in _decision_states(game, seed=7, turns=600):
            view = state.view(who)
            history = codec.trick_history(view)
            if view["phase"] in ("play", "playing") and view.get("tricks_taken") is not None:
                assert len(history) == sum(view["tricks_taken"]), (game.id, view["phase"])
                if history and view.get("last_trick"):
                    last = codec.trick_message(view["last_trick"])
                    assert history[-1].winner == last.winner
                    assert [(p.seat, p.card.code) for p in history[-1].plays] == \
                        [(p.seat, p.card.code) for p in last.plays], game.id
                checked += 1
        assert checked > 10, game.id


def test_tricks_are_the_same_from_the_cache():
    trick = {"leader": 1, "plays": [{"seat": 1, "card": "X1", "joker_mode": "low", "named_suit": "D"},
                                    {"seat": 2, "card": "6D"}], "winner": 2}
    a, b = codec.trick_message(trick), codec.trick_message(dict(trick))
    assert a == b and a.winner == 2 and a.plays[0].joker_mode == c.JOKER_MODE_LOW
    a.plays[0].seat = 3  # a caller mutating its copy does not change the cache
    assert codec.trick_message(trick).plays[0].seat == 1


def test_a_trick_in_progress_has_no_winner_nor_points():
    """match.proto Trick: ``winner`` and ``points`` are unset while the trick is in progress,
    also when the rules' mapping names them as None."""
    trick = codec.trick_message({"plays": [{"seat": 0, "card": "AS"}], "winner": None, "points": None})
    assert [p.card.code for p in trick.plays] == ["AS"]
    assert not trick.HasField("winner") and not trick.HasField("points")


def test_shared_envelopes_convert_once_and_stay_independent():
    env = api.ViewEnvelope("m", 3, "active", {"phase": "play", "hand": ["AS"], "legal": ["play:AS"], "seat": 0}, seat=0)
    a = codec.event_message(api.MatchEvent(kind="action", seq=3, match_id="m", seat=1, action="pass", by="player", view=env))
    b = codec.event_message(api.MatchEvent(kind="action", seq=3, match_id="m", seat=1, action="pass", by="player", view=env))
    assert a == b and a.view.hand[0].code == "AS"
    a.view.hand[0].code = "KS"  # messages handed out are copies
    assert codec.event_message(api.MatchEvent(kind="action", seq=3, match_id="m", seat=1, action="pass",
                                              by="player", view=env)).view.hand[0].code == "AS"
    other = api.ViewEnvelope("m", 3, "active", {"phase": "play", "hand": ["KH"], "legal": [], "seat": 1}, seat=1)
    c_ = codec.event_message(api.MatchEvent(kind="action", seq=3, match_id="m", seat=1, action="pass", by="player", view=other))
    assert [x.code for x in c_.view.hand] == ["KH"] and c_.view.seat == 1


class _Forgetful(dict):
    """A stand-in for codec._SHARED that keeps nothing: every view's shared fields are encoded."""

    def __setitem__(self, key, value):
        pass


def test_the_audiences_of_one_state_encode_as_on_their_own(monkeypatch):
    """Envelopes that share a state's ``encodings`` (the session layer's, one dict per state):
    every audience's bytes are those of its envelope encoded alone, over random play of every
    game; the audiences' views share objects, never an encoding of another audience's. The
    content memo of the shared fields is off: with it, the scoped encoding (_encode_scoped)
    of a view was kept and handed to the same view encoded alone, so the two always agreed
    (a scoped view without its trick history, last trick or scores passed)."""
    from engine_service.rules.registry import all_games
    from engine_service.sessions.views import ADMIN, SPECTATOR, view_for

    monkeypatch.setattr(codec, "_SHARED", _Forgetful())
    statuses = ("active", "finished", "waiting", "terminated")
    for game in all_games():
        for seq, (state, _) in enumerate(_decision_states(game, seed=11, turns=300)):
            make, scope = state.view_maker(), {}
            # the envelope's own fields vary as the session layer's do (GetView, a finished match)
            status, commitment = statuses[seq % 4], "c0ffee" * 8 if seq % 2 else ""
            deadline = None if seq % 3 == 0 else 1_764_000_000.25 + seq
            for audience in [*range(game.num_seats), SPECTATOR, ADMIN]:
                view = view_for(state, audience, make)
                seat = audience if isinstance(audience, int) else None
                shared = codec.view_bytes(api.ViewEnvelope("m", seq, status, view, deadline, seat, commitment,
                                                           encodings=scope))
                alone = codec.view_bytes(api.ViewEnvelope("m", seq, status, view_for(state, audience),
                                                          deadline, seat, commitment))
                assert shared == alone, (game.id, seq, audience)
                msg = m.View.FromString(shared)
                assert (msg.status, msg.deal_commitment) == (codec.status_enum(status), commitment)
                assert msg.HasField("deadline") == (deadline is not None)
                assert (msg.deadline.seconds, msg.deadline.nanos) == ((int(deadline), 250_000_000) if deadline else (0, 0))
                assert msg.HasField("seat") == (seat is not None) and msg.seat == (seat or 0)


def test_a_scoped_view_of_an_ended_match_keeps_its_fields(monkeypatch):
    """The scoped head (codec._encode_scoped_view) of views the decision states above never
    give: nobody to act, the match over with its winners, the seat named by the view alone
    (no envelope seat), a deadline's largest fraction (a Timestamp's nanos stay below 1e9)."""
    monkeypatch.setattr(codec, "_SHARED", _Forgetful())
    view = {"game": "klaberjass", "phase": "over", "deal_number": 4, "dealer": 1, "to_act": None,
            "seat": 1, "hand_sizes": [0, 0], "over": True, "winners": [1], "hand": [], "legal": []}
    for deadline in (None, 1.9999999999):  # rounded alone, the fraction would be 1e9 nanos
        scope = {}
        for _ in range(2):  # encoded, then from the scope
            env = api.ViewEnvelope("m", 9, "finished", view, deadline, encodings=scope)
            msg = m.View.FromString(codec.view_bytes(env))
            assert msg == m.View.FromString(codec.view_bytes(api.ViewEnvelope("m", 9, "finished", view, deadline)))
            assert not msg.HasField("to_act") and msg.over and list(msg.winners) == [1]
            assert msg.HasField("seat") and msg.seat == 1 and (msg.deal_number, msg.dealer) == (4, 1)
            assert (msg.deadline.seconds, msg.deadline.nanos) == ((1, 999_999_999) if deadline else (0, 0))


def test_a_scoped_view_without_the_seat_split_has_the_whole_head(monkeypatch):
    """Where the protobuf runtime does not write a View's fields in field-number order
    (codec._SEAT_SPLITS false), the scoped head is copied whole for each audience, its own
    seat set: the same bytes as the view encoded alone, the seat only where there is one."""
    monkeypatch.setattr(codec, "_SEAT_SPLITS", False)
    view = {"game": "klaberjass", "phase": "play", "to_act": 0, "hand_sizes": [8, 8], "hand": [], "legal": []}
    scope: dict = {}
    for seat in (None, 1, 0, None):
        msg = m.View.FromString(codec.view_bytes(api.ViewEnvelope("m", 3, "active", view, seat=seat, encodings=scope)))
        assert msg == m.View.FromString(codec.view_bytes(api.ViewEnvelope("m", 3, "active", view, seat=seat)))
        assert msg.HasField("seat") == (seat is not None) and msg.seat == (seat or 0) and msg.game == "klaberjass"


def test_the_events_of_one_state_encode_as_on_their_own():
    """The stream message's fields but the view are encoded once for the audiences of one
    state (keyed by every one of them in its ``encodings``): events that differ in any field,
    one audience after another, are each what their envelope alone gives, and each parses
    back to its own fields."""
    view = {"game": "klaberjass", "phase": "play", "hand_sizes": [8, 8], "to_act": 1, "table": {}}
    base = dict(kind="action", seq=7, match_id="m1", seat=0, action="play:KS", by="player", reason="")
    variants = [base, dict(base, seat=1), dict(base, by="bot"), dict(base, reason="timeout", by="auto"),
                dict(base, action="play:AS"), dict(base, action=""), dict(base, seq=8), dict(base, kind="snapshot"),
                dict(base, match_id="m2"), dict(base, seat=None), base]
    scope: dict = {}
    for seat in (0, 1):
        for fields in variants:
            env = api.ViewEnvelope("m1", 7, "active", view, seat=seat, encodings=scope)
            shared = codec.event_bytes(api.MatchEvent(**fields, view=env))
            alone = codec.event_bytes(api.MatchEvent(**fields, view=api.ViewEnvelope("m1", 7, "active", view,
                                                                                    seat=seat)))
            assert shared == alone, (seat, fields)
            msg = pb.WatchMatchResponse.FromString(shared)
            assert (msg.seq, msg.match_id, msg.action.notation, msg.reason, msg.view.seat) == (
                fields["seq"], fields["match_id"], fields["action"], fields["reason"], seat)
            assert msg.HasField("seat") == (fields["seat"] is not None)
    result = api.SubmitResult(seq=7, action="play:KS", view=api.ViewEnvelope("m1", 7, "active", view, seat=1))
    answer = pb.SubmitActionResponse.FromString(codec.submit_response_bytes(result))
    assert (answer.seq, answer.action.notation, answer.view.seat, answer.view.to_act) == (7, "play:KS", 1, 1)


def test_summary_message_fills_every_field():
    """MatchSummary (match.proto) field by field: its seats' kinds and flags, the non-default
    options with their JSON types, the turn time as a Duration, the creation time as a
    Timestamp, the result once the match has ended, the commitments and the lobby fields."""
    seats = (api.SeatInfo(0, "open", player_name="ann", taken=True, present=True),
             api.SeatInfo(1, "bot", bot="random", present=True),
             api.SeatInfo(2, "open", bot="cautious", player_name="bob", taken=True, replaced_by_bot=True, left=True))
    summary = api.MatchSummary(
        match_id="m7", game="georgian_joker", options={"gj_khishti_penalty": "500", "gj_bots": True, "n": 3},
        status="terminated", seq=12, seats=seats, turn_time_s=2.5, spectators_allowed=False,
        created_at=1_764_000_000.75, name="table", result={"over": True, "winners": [1], "outcome": "terminated"},
        listed=True, deal_commitments=("ab" * 32, ""), spectator_delay_actions=3)
    msg = codec.summary_message(summary)
    assert (msg.match_id, msg.game, msg.status, msg.seq, msg.name) == ("m7", "georgian_joker", m.MATCH_STATUS_TERMINATED, 12, "table")
    assert (msg.spectators_allowed, msg.listed, msg.spectator_delay_actions) == (False, True, 3)
    assert {k: v.WhichOneof("value") for k, v in msg.options.items()} == {
        "gj_khishti_penalty": "string_value", "gj_bots": "bool_value", "n": "int_value"}
    assert (msg.options["gj_khishti_penalty"].string_value, msg.options["n"].int_value) == ("500", 3)
    assert (msg.turn_time.seconds, msg.turn_time.nanos) == (2, 500_000_000)
    assert (msg.created_at.seconds, msg.created_at.nanos) == (1_764_000_000, 750_000_000)
    assert msg.result["outcome"] == "terminated" and list(msg.result["winners"]) == [1] and msg.result["over"] is True
    assert list(msg.deal_commitments) == ["ab" * 32, ""]
    assert [(x.seat, x.kind, x.bot, x.player_name) for x in msg.seats] == [
        (0, m.SEAT_KIND_OPEN, "", "ann"), (1, m.SEAT_KIND_BOT, "random", ""), (2, m.SEAT_KIND_OPEN, "cautious", "bob")]
    assert [(x.taken, x.present, x.replaced_by_bot, x.left) for x in msg.seats] == [
        (True, True, False, False), (False, True, False, False), (True, False, True, True)]
    going = codec.summary_message(api.MatchSummary("m8", "klaberjass", {}, "waiting", 0, (), 0.0, True, 0.0))
    assert not going.HasField("result") and not going.options and going.status == m.MATCH_STATUS_WAITING
    assert going.spectators_allowed is True  # not only the proto default (False) of the field
    assert [codec.status_enum(x) for x in ("active", "finished", "unknown")] == [
        m.MATCH_STATUS_ACTIVE, m.MATCH_STATUS_FINISHED, m.MATCH_STATUS_UNSPECIFIED]


def test_an_unknown_seat_kind_is_unspecified():
    """SeatInfo.kind (match.proto SeatKind) of a kind the codec does not know is
    SEAT_KIND_UNSPECIFIED, never another kind's value, as for an unknown status or event kind."""
    assert codec.seat_info_message(api.SeatInfo(0, "other")).kind == m.SEAT_KIND_UNSPECIFIED  # type: ignore[arg-type]


def test_no_struct_or_an_empty_one_is_an_empty_struct():
    """struct_message takes None (no details, no result) as it takes an empty mapping."""
    assert codec.struct_message(None) == codec.struct_message({}) == struct_pb2.Struct()


@pytest.mark.parametrize("seconds, expected", [
    (30.0, (30, 0)), (1.5, (1, 500_000_000)), (0.0, (0, 0)),
    (29.9999999999, (30, 0)),  # the fraction alone rounds up to a whole second
    (10.000000001, (10, 1)),
])
def test_a_turn_time_is_a_valid_duration(seconds, expected):
    summary = api.MatchSummary(match_id="m", game="klaberjass", options={}, status="active", seq=0,
                               seats=(), turn_time_s=seconds, spectators_allowed=True, created_at=0.0)
    duration = codec.summary_message(summary).turn_time
    assert (duration.seconds, duration.nanos) == expected and 0 <= duration.nanos < 1_000_000_000


def test_trick_history_never_counts_the_previous_deals_trick():
    """Until a deal's first trick is complete, ``last_trick`` is the previous deal's final trick
    (game.py): ``trick_history`` (the deal's tricks) stays empty, with or without a deal log,
    and View.last_trick carries it with its winner. Over random matches of every game, at every
    view: one history entry per trick taken this deal."""
    import random

    from engine_service.rules.game import CHANCE, TERMINAL
    from engine_service.rules.registry import all_games

    previous = {"plays": [{"seat": 1, "card": "9H"}, {"seat": 0, "card": "8H"}], "winner": 0}
    no_log = {"hand_sizes": [9, 9], "tricks_taken": [0, 0], "trick": [], "last_trick": previous}
    assert codec.trick_history(no_log) == []
    (only,) = codec.trick_history(dict(no_log, tricks_taken=[0, 1]))  # a trick of this deal
    assert only.winner == 0
    msg = codec.view_message(api.ViewEnvelope("m", 3, "active", no_log))
    assert not msg.trick_history and msg.last_trick.winner == 0 and len(msg.last_trick.plays) == 2
    for game in all_games():
        rng = random.Random(11)
        state = game.new_state()
        boundaries = 0
        while state.to_act() != TERMINAL:
            if state.to_act() == CHANCE:
                deck = list(game.pack)
                rng.shuffle(deck)
                state.deal(deck)
            else:
                state.apply(rng.choice(state.legal_actions()), state.to_act())
            view = state.public_view()
            history = codec.trick_history(view)
            assert len(history) == sum(view["tricks_taken"]), (game.id, view["phase"])
            if view["last_trick"] and not history:
                boundaries += 1
        assert boundaries > 10, game.id


def test_complete_tricks_carry_the_rules_card_points():
    """``Trick.points``: in Klaberjass and Jo-Jotte every complete trick of the view (history
    and ``last_trick``) has the card points the rules credit its winner with, and the deal's
    tricks add up to the running total of the table (Klaberjass ``card_points``, Jo-Jotte
    ``trick_points``; nothing in a nullo deal); a trick in progress has none, nor does any
    trick of the Joker games, which count tricks."""
    from engine_service.rules.registry import all_games

    running = {"klaberjass": "card_points", "jojotte": "trick_points"}
    for game in all_games():
        checked = 0
        for seed in (3, 5):
            for state, who in _decision_states(game, seed=seed, turns=1500):
                view = state.view(who)
                msg = codec.view_message(api.ViewEnvelope("m", 0, "active", view))
                assert not msg.trick.HasField("points"), game.id
                tricks = [*msg.trick_history, *([msg.last_trick] if msg.HasField("last_trick") else [])]
                if game.id not in running:
                    assert not any(t.HasField("points") for t in tricks), game.id
                    continue
                nullo = game.id == "jojotte" and (view["table"]["contract"] or {}).get("kind") == "nullo"
                if msg.HasField("last_trick") and not nullo and msg.trick_history:
                    assert msg.last_trick.HasField("points") and msg.last_trick == msg.trick_history[-1]
                if nullo:
                    assert not any(t.HasField("points") for t in msg.trick_history)
                    continue
                assert all(t.HasField("points") and t.points >= 0 for t in msg.trick_history), game.id
                if msg.phase == "play" and msg.trick_history:
                    totals = [0] * len(msg.scores.tricks_taken)
                    for t in msg.trick_history:
                        totals[t.winner] += t.points
                    assert totals == view["table"][running[game.id]], (game.id, seed)
                    checked += 1
        if game.id in running:
            assert checked > 50, game.id


def test_a_view_without_a_commitment_has_no_commitment_field():
    """View.deal_commitment (match.proto) is empty for a deal not dealt: no field is written,
    so the bytes are protobuf's own, alone and with the state's ``encodings``."""
    for scope in (None, {}):
        data = codec.view_bytes(api.ViewEnvelope("m", 1, "active", {"phase": "play"}, encodings=scope))
        assert data == m.View.FromString(data).SerializeToString()
        with_it = codec.view_bytes(api.ViewEnvelope("m", 1, "active", {"phase": "play"}, deal_commitment="ab",
                                                    encodings=scope))
        assert m.View.FromString(with_it).deal_commitment == "ab"


def test_audiences_whose_tables_differ_get_their_own_trick_history():
    """The trick history of an audience (match.proto View.trick_history) comes from its own
    table's ``tricks`` or ``deal_actions``, also where the audiences of one state share every
    other object the history is read from (the scoped encodings key it by all of them)."""
    sizes, taken = [1, 1], [1, 0]

    def trick(a, b):
        return {"tricks": [{"plays": [{"seat": 0, "card": a}, {"seat": 1, "card": b}], "winner": 0}]}

    def log(a, b):
        return {"deal_actions": [{"seat": 0, "action": f"play:{a}"}, {"seat": 1, "action": f"play:{b}", "winner": 0}]}

    for table_of in (trick, log):
        scope: dict = {}
        for cards in (["AS", "KS"], ["7H", "8H"]):
            view = {"phase": "play", "hand_sizes": sizes, "tricks_taken": taken, "table": table_of(*cards)}
            shared = m.View.FromString(codec.view_bytes(api.ViewEnvelope("m", 4, "active", view, encodings=scope)))
            assert [[p.card.code for p in t.plays] for t in shared.trick_history] == [cards]


def test_audiences_whose_logs_agree_on_the_plays_share_one_walk(monkeypatch):
    """The seats of one state whose deal logs are different lists (Japanese Joker: a seat's own
    table plays carry ``moved_cards``) share the trick history of the log walked first when
    every entry agrees on what the history is cut from (codec._scoped_history); a log that
    differs in an entry's ``action``, ``seat`` or ``winner``, in its length, or in an entry
    that is no dict gets its own, each the history the view alone gives."""
    sizes, taken = [1, 1], [1, 0]
    lead = {"seat": 0, "action": "play:AS", "from": "table", "moved_public": []}
    follow = {"seat": 1, "action": "play:KS", "winner": 0}
    walks = []
    real = codec.trick_history_bytes
    monkeypatch.setattr(codec, "trick_history_bytes", lambda v: walks.append(1) or real(v))
    monkeypatch.setattr(codec, "_SHARED", _Forgetful())  # every view's fields encoded

    def history(view, scope):
        env = api.ViewEnvelope("m", 4, "active", view, encodings=scope)
        return [[(p.seat, p.card.code) for p in t.plays] + [t.winner] for t in m.View.FromString(codec.view_bytes(env)).trick_history]

    def view_of(log):
        return {"phase": "play", "hand_sizes": sizes, "tricks_taken": taken, "table": {"deal_actions": log}}

    scope: dict = {}
    assert history(view_of([lead, follow]), scope) == [[(0, "AS"), (1, "KS"), 0]]
    own = dict(lead, moved_cards=["QH"])  # the other seat's copy of its own table play
    assert history(view_of([own, follow]), scope) == [[(0, "AS"), (1, "KS"), 0]]
    assert len(walks) == 1
    for other in ([dict(lead, action="play:AH"), follow], [dict(lead, seat=1), follow],
                  [lead, dict(follow, winner=1)], [lead, follow, {"seat": 0, "action": "play:QS"}, follow],
                  ["not an entry", follow]):
        walks.clear()
        alone = history(view_of(other), None)
        assert history(view_of(other), scope) == alone, other
        assert len(walks) == 2, other


def test_audiences_whose_scores_differ_get_their_own_scores():
    """Scores (match.proto View.scores) come from the audience's own totals and deal results,
    also where the audiences of one state share the objects the trick history is read from."""
    sizes, taken, scope = [1, 1], [1, 0], {}
    for totals, results in (([10, 0], [{"points": [10, 0]}]), ([0, 20], [{"points": [0, 20]}])):
        view = {"phase": "play", "hand_sizes": sizes, "tricks_taken": taken, "totals": totals, "deal_results": results}
        msg = m.View.FromString(codec.view_bytes(api.ViewEnvelope("m", 4, "active", view, encodings=scope)))
        assert list(msg.scores.totals[0].values) == totals
        assert list(msg.scores.deal_results[0]["points"]) == results[0]["points"]


def test_a_scoped_head_serves_only_envelopes_with_all_its_fields(monkeypatch):
    """The scoped head (codec._encode_scoped_view) is serialized once for the audiences of a
    state and reused only where every field it is made of has the same value: envelopes of one
    ``encodings`` that differ in any one of them (the envelope's match id, seq, status or
    deadline, 0.0 being a deadline too; the view's game, phase, deal, dealer, to_act, over,
    winners or hand sizes; a game or a phase equal in Python but written differently: 1 and
    1.0, True and 1) each get the bytes of their envelope alone, for every seat."""
    monkeypatch.setattr(codec, "_SHARED", _Forgetful())
    base = {"game": "klaberjass", "phase": "play", "deal_number": 2, "dealer": 1, "to_act": 0, "over": False,
            "winners": [], "hand_sizes": [8, 8], "hand": [], "legal": []}
    own = dict(match_id="m", seq=3, status="active", deadline=None)
    variants = [({}, {}), ({"match_id": "m2"}, {}), ({"seq": 4}, {}), ({"status": "finished"}, {}),
                ({"deadline": 5.5}, {}), ({"deadline": 0.0}, {}), ({}, {"game": "jojotte"}), ({}, {"phase": "auction"}),
                ({}, {"deal_number": 3}), ({}, {"dealer": 0}), ({}, {"to_act": 1}), ({}, {"to_act": None}),
                ({}, {"over": True}), ({}, {"winners": [1]}), ({}, {"hand_sizes": [7, 8]}),
                ({}, {"game": 1}), ({}, {"game": 1.0}), ({}, {"phase": True}), ({}, {"phase": 1}), ({}, {})]
    scope: dict = {}
    for env_fields, view_fields in variants:
        view = dict(base, **view_fields)
        for seat in (None, 0, 1):
            fields = dict(own, **env_fields, view=view, seat=seat)
            shared = codec.view_bytes(api.ViewEnvelope(**fields, encodings=scope))
            assert shared == codec.view_bytes(api.ViewEnvelope(**fields)), (env_fields, view_fields, seat)
            assert m.View.FromString(shared).HasField("deadline") == (fields["deadline"] is not None)


def test_scoped_parts_serve_only_the_objects_they_were_encoded_from(monkeypatch):
    """_encode_scoped and _scoped_history keep each part of a state's views by the identity of
    every object it is read from: an audience whose view differs from an earlier one's in one
    of them (its trick, last trick, tricks taken, totals, deal results, hand sizes, a table
    value, the table's tricks) gets the bytes of its view encoded alone, its own table values
    included (Jo-Jotte's exchange offer, Japanese Joker's first three are one seat's alone)."""
    monkeypatch.setattr(codec, "_SHARED", _Forgetful())
    log = [{"seat": 0, "action": "play:AS"}, {"seat": 1, "action": "play:KS"}]  # its winner: last_trick's
    last = {"plays": [{"seat": 0, "card": "AS"}, {"seat": 1, "card": "KS"}], "winner": 1}
    table = {"deal_actions": log, "bids": [1, 2], "contract": {"kind": "x"}, "trump": "S", "offer": None}
    base = {"phase": "play", "hand_sizes": [1, 1], "trick": [{"seat": 0, "card": "QS"}], "last_trick": last,
            "tricks_taken": [1, 0], "totals": [10, 0], "deal_results": [{"points": [10, 0]}], "table": table}
    variants = [{}, {"trick": [{"seat": 0, "card": "JS"}]}, {"last_trick": dict(last, winner=0)},
                {"tricks_taken": [0, 0]}, {"totals": [20, 0]}, {"deal_results": [{"points": [0, 5]}]},
                {"hand_sizes": [1, 1, 1, 1]}, {"table": dict(table, bids=[2, 1])},
                {"table": dict(table, contract={"kind": "y"})}, {"table": dict(table, offer=["7H"])},
                {"table": dict(table, tricks=[{"plays": [{"seat": 1, "card": "7H"}, {"seat": 0, "card": "8H"}],
                                              "winner": 0}])},
                {"table": dict(table, deal_actions=[log[0], dict(log[1], winner=0)])}, {}]
    scope: dict = {}
    for changes in variants:
        view = dict(base, **changes)
        shared = codec.view_bytes(api.ViewEnvelope("m", 5, "active", view, encodings=scope))
        assert shared == codec.view_bytes(api.ViewEnvelope("m", 5, "active", view)), changes


def test_the_events_of_one_envelope_are_each_their_own(monkeypatch):
    """An envelope keeps the stream messages encoded with it (codec.event_bytes), keyed by the
    event's fields: events of one envelope that differ in any field (kind, seq, seat, action,
    by, reason, match id) or in their details are each what they give with an envelope of their
    own, alone and with a state's ``encodings``, their details with the view (match.proto:
    an ACTION event's ``deal_scored`` beside its view)."""
    view = {"game": "klaberjass", "phase": "play", "hand_sizes": [8, 8], "to_act": 1}
    base = dict(kind="action", seq=7, match_id="m1", seat=0, action="play:KS", by="player", reason="")
    variants = [{}, {"kind": "snapshot"}, {"seq": 8}, {"seat": 1}, {"seat": None}, {"action": "play:AS"},
                {"action": ""}, {"by": "bot"}, {"reason": "timeout"}, {"match_id": "m2"},
                {"details": {"deal_scored": 0}}, {"details": {"deal_scored": 1}}, {}]
    for scope in (None, {}):
        env = api.ViewEnvelope("m1", 7, "active", view, seat=1, encodings=scope)
        for changes in variants:
            fields = dict(base, **changes)
            got = codec.event_bytes(api.MatchEvent(**fields, view=env))
            assert got == codec.event_bytes(api.MatchEvent(**fields, view=api.ViewEnvelope("m1", 7, "active", view,
                                                                                           seat=1))), changes
            assert dict(pb.WatchMatchResponse.FromString(got).details) == fields.get("details", {}), changes


def test_a_trick_won_by_seat_0_names_its_winner():
    """match.proto Trick.winner is unset only while the trick is in progress: a complete trick
    won by seat 0 has it set (0 is a seat, not "no winner"), from a trick mapping and from a
    deal log alike."""
    trick = codec.trick_message({"plays": [{"seat": 1, "card": "7S"}, {"seat": 0, "card": "AS"}], "winner": 0})
    assert trick.HasField("winner") and trick.winner == 0
    log = {"hand_sizes": [1, 1], "table": {"deal_actions": [{"seat": 1, "action": "play:7S"},
                                                           {"seat": 0, "action": "play:AS", "winner": 0}]}}
    (logged,) = codec.trick_history(log)
    assert logged.HasField("winner") and logged.winner == 0


def test_a_tricks_list_with_one_entry_not_a_trick_is_not_read():
    """``table.tricks`` gives the history only when every entry is a trick with ``plays``
    (codec.trick_history_bytes): one entry that is not, among tricks, and the deal log gives it."""
    good = {"plays": [{"seat": 0, "card": "7S"}, {"seat": 1, "card": "8S"}], "winner": 1}
    view = {"hand_sizes": [2, 2], "table": {"tricks": [good, {"winner": 0}], "deal_actions": [
        {"seat": 0, "action": "play:KH"}, {"seat": 1, "action": "play:AH", "winner": 1}]}}
    assert [[p.card.code for p in t.plays] for t in codec.trick_history(view)] == [["KH", "AH"]]


def test_a_logged_tricks_winner_is_only_what_the_view_says():
    """codec.trick_history_bytes: a trick cut from a deal log whose entries name no winner
    takes the leader of the next trick when one has played, else ``last_trick``'s winner only
    while ``tricks_taken`` counts a trick in the deal (before that ``last_trick`` is the
    previous deal's): nothing is inferred that the view does not say, and no winner is unset."""
    plays = [{"seat": 0, "action": "play:7S"}, {"seat": 1, "action": "play:AS"}]
    led = {"hand_sizes": [2, 2], "table": {"deal_actions": [*plays, {"seat": 1, "action": "play:KH"}]}}
    (trick,) = codec.trick_history(led)
    assert trick.HasField("winner") and trick.winner == 1
    previous = {"plays": [{"seat": 0, "card": "9H"}, {"seat": 1, "card": "8H"}], "winner": 1}
    ended = {"hand_sizes": [1, 1], "tricks_taken": [0, 0], "last_trick": previous, "table": {"deal_actions": plays}}
    (trick,) = codec.trick_history(ended)
    assert not trick.HasField("winner")
    (trick,) = codec.trick_history(dict(ended, tricks_taken=[0, 1]))
    assert trick.winner == 1


def test_every_winner_and_every_deal_result_is_copied():
    """View.winners holds every winner (match.proto: several where the rules let players share
    first place) and Scores.deal_results every deal scored, also from a tuple of results (a view
    not made of the core types), alone and with a state's ``encodings``."""
    view = {"phase": "over", "over": True, "winners": [0, 2], "deal_results": ({"points": [1]}, {"points": [2]})}
    for scope in (None, {}):
        msg = codec.view_message(api.ViewEnvelope("m", 9, "finished", view, encodings=scope))
        assert list(msg.winners) == [0, 2]
        assert [list(r["points"]) for r in msg.scores.deal_results] == [[1], [2]]


def test_stream_and_submit_messages_carry_a_long_view_whole():
    """codec.event_bytes and codec.submit_response_bytes put the view's encoding after its tag
    and length: a view longer than one length byte holds (over 127 bytes) parses back whole,
    the message equal to the one protobuf builds from the same fields, alone and with a
    state's ``encodings``."""
    view = {"game": "klaberjass", "phase": "play", "seat": 0, "to_act": 0, "hand_sizes": [8, 8],
            "hand": ["AS", "KS", "QS", "JS", "TS", "9S", "8S", "7S"],
            "legal": ["play:AS", "play:KS", "play:QS", "play:JS", "play:TS", "play:9S", "play:8S", "play:7S"],
            "trick": [{"seat": 1, "card": "AH"}], "tricks_taken": [0, 0], "totals": [0, 0]}
    for scope in (None, {}):
        env = api.ViewEnvelope("m1", 7, "active", view, deadline=1_764_000_000.5, seat=0, encodings=scope)
        assert len(codec.view_bytes(env)) > 200
        whole = m.View.FromString(codec.view_bytes(env))
        assert [x.code for x in whole.hand] == view["hand"] and len(whole.legal_actions) == 8
        ev = api.MatchEvent(kind="action", seq=7, match_id="m1", seat=1, action="play:AH", by="player", view=env)
        assert pb.WatchMatchResponse.FromString(codec.event_bytes(ev)) == pb.WatchMatchResponse(
            kind=m.EVENT_KIND_ACTION, seq=7, match_id="m1", seat=1, action=codec.action_message("play:AH"),
            by=m.ACTOR_PLAYER, view=whole)
        res = api.SubmitResult(seq=7, action="play:AS", view=env, duplicate=True)
        assert pb.SubmitActionResponse.FromString(codec.submit_response_bytes(res)) == pb.SubmitActionResponse(
            seq=7, action=codec.action_message("play:AS"), view=whole, duplicate=True)


def test_a_scoped_entry_keeps_what_it_was_encoded_from(monkeypatch):
    """A state's ``encodings`` are keyed by the identity of the objects they were computed
    from, and each entry holds those objects (codec.py, "the audiences of one state"), so no
    id is reused by another object while the entry lives: views made and dropped one after
    another in one scope (the next view's lists taking the freed ids) each get their own
    winners and table values."""
    monkeypatch.setattr(codec, "_SHARED", _Forgetful())
    scope: dict = {}
    for i in range(50):
        view = {"phase": "over", "over": True, "winners": [i % 2], "table": {"offer": [str(i)]}}
        msg = m.View.FromString(codec.view_bytes(api.ViewEnvelope("m", 9, "finished", view, encodings=scope)))
        assert list(msg.winners) == [i % 2] and list(msg.table["offer"]) == [str(i)], i
        del view, msg  # before the next view is made: its lists may take these ids
