"""Klaberjass at the API edge: notation, bad input, options, sample transcripts, the replay
tool, the auto-move policy (NOTATION section 5) and the views' information rules."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from engine_service.rules import (CHANCE, TERMINAL, DealRequired, IllegalAction, InvalidOptions,
                                  MalformedAction, NotYourTurn, get_game, transcript)
from engine_service.rules.cards import card_id
from engine_service.rules.games.klaberjass.notation import ACTION_STRINGS
from tests.shared_paths import options_table, transcripts

from .checks_klaberjass import OPTION_SETS, deck_from_hands, play_out
from .last_trick import check_deal_boundaries
from .playout import random_match

GAME = get_game("klaberjass")
ROOT_DOCS = Path(__file__).resolve().parents[2] / "docs"
ELDER = "AS TS 7S QH AD KD QC JC 9C"
DEALER = "KS 9S JH 9H AH TD 8D 7D 8C"


def fresh(options=None):
    state = GAME.new_state(options or {}, first_dealer=1)
    state.deal(deck_from_hands(DEALER.split(), ELDER.split(), "8H"))
    return state


def mask(cards):
    m = 0
    for c in cards.split():
        m |= 1 << card_id(c)
    return m


# ---- sample transcripts and the replay tool (NOTATION section 3) -----------------------------

@pytest.mark.parametrize("path", transcripts("klaberjass"), ids=lambda p: p.name)
def test_sample_transcripts_check_out(path):
    diff, state = transcript.check(transcript.load(path))
    assert diff is None, str(diff)
    data = json.loads(path.read_text())
    assert state.result() == data["result"]


def test_replay_tool_checks_the_samples():
    files = [str(p) for p in transcripts("klaberjass")]
    proc = subprocess.run([sys.executable, "-m", "engine_service", "replay", "--check", *files],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.count(": ok") == len(files)


def test_sample_legal_lists_are_in_the_engine_order():
    """NOTATION 2.4: transcripts compare sets; the engine's documented order matches the
    samples' order exactly (calls; window; plays in card order, ``exchange`` last)."""
    for path in transcripts("klaberjass"):
        data = transcript.load(path)
        state = GAME.new_state(data.get("options") or {}, first_dealer=data["first_dealer"])
        for deal in data["deals"]:
            state.deal(deal["deck"])
            for step in deal["steps"]:
                assert state.legal_actions() == step["legal"]
                state.apply(step["action"])


# ---- notation ---------------------------------------------------------------------------------

def test_every_action_id_round_trips():
    state = fresh()
    for a, s in enumerate(ACTION_STRINGS):
        if s is not None:
            assert state.parse_action(s) == a and state.action_str(a) == s


def test_action_ids_follow_the_documented_layout_kl_a23():
    """docs/games/klaberjass.md, "Action ids (fast path)": ``0..35`` play the card with that id,
    ``36 + id`` play that king announcing bella (KL-A23), then the calls from ``take 72`` to
    ``conceal 84`` (the ids are a documented contract for bots, not only a round trip)."""
    state = fresh()
    kings = 0
    for c in [r + s for s in "SHDC" for r in "AKQJT987"]:
        assert state.parse_action(f"play:{c}") == card_id(c)
        if c[0] == "K":
            assert state.parse_action(f"play:{c}:bella") == 36 + card_id(c)
            kings += 1
    assert kings == 4
    calls = ["take", "pass", "name:S", "name:H", "name:D", "name:C", "exchange", "keep", "schmeiss",
             "accept", "refuse", "declare", "conceal"]
    assert [state.parse_action(w) for w in calls] == list(range(72, 85))


@pytest.mark.parametrize("text", ["", "PLAY:AS", "Play:AS", "play:6S", "play:X1", "play:AS:bella", "play:KS:jo",
                                  "play:", "play", "name:NT", "name:", "name:s", "take ", " pass", "exchange:7H",
                                  "no_exchange", "bid:1", "trump:H", "double", "keep:7H", "play:KS:bella:x"])
def test_malformed_actions_raise_and_change_nothing(text):
    state = fresh()
    before = json.dumps([state.view(0), state.view(1), state.zones(), len(state.history())])
    with pytest.raises(MalformedAction) as info:
        state.apply(text)
    assert json.dumps([state.view(0), state.view(1), state.zones(), len(state.history())]) == before
    # docs/api.md, Errors: MALFORMED_ACTION carries metadata ``action``, what was sent (State.apply)
    assert info.value.details == {"action": text}


def test_non_string_action_is_malformed():
    """NOTATION sections 1 and 2: an action is one string; anything else is refused naming its
    type (not its value), with what was sent as the ``action`` metadata (docs/api.md)."""
    with pytest.raises(MalformedAction) as info:
        fresh().apply(None)  # type: ignore[arg-type]
    assert (info.value.message, info.value.details) == ("an action is a string, got NoneType", {"action": "None"})
    with pytest.raises(MalformedAction):
        fresh().parse_action(["take"])  # type: ignore[arg-type]


def test_well_formed_but_illegal_actions():
    state = fresh()
    for text in ("play:AS", "name:S", "exchange", "keep", "schmeiss", "declare", "play:KD:bella", "accept"):
        with pytest.raises(IllegalAction) as info:
            state.apply(text)
        assert info.value.details == {"action": text}  # docs/api.md, Errors: ILLEGAL_ACTION's metadata
    play_out(state, ["take", "keep", "keep"])
    with pytest.raises(IllegalAction):
        state.apply("play:KS")  # the dealer's card, the elder to lead


def test_out_of_turn_and_deal_required():
    state = fresh()
    with pytest.raises(NotYourTurn) as info:
        state.apply("pass", seat=1)
    assert info.value.details["to_act"] == 0
    state = GAME.new_state({}, first_dealer=0)
    assert state.to_act() == CHANCE
    with pytest.raises(DealRequired):
        state.apply("pass")


def test_no_seat_to_act_means_no_legal_ids_while_a_deck_is_awaited_and_after_the_match_kl_10_3():
    """The fast path's ``legal_ids()`` lists the ids of the seat to act (rules/game.py). While a
    deck is awaited (CHANCE) and once the match is over (KL-10.3, TERMINAL) nobody acts: the list
    is empty, so a playout loop that asks for it gets nothing to choose from rather than None
    (kills the mutant returning None at the end of ``legal_ids``)."""
    state = GAME.new_state({}, first_dealer=0)
    assert state.to_act() == CHANCE and state.legal_ids() == []
    state = random_match(GAME, 7, {"kl_target_score": 1})
    assert state.to_act() == TERMINAL and state.legal_ids() == []


def test_the_history_holds_the_deal_then_each_action_in_order_and_nobody_to_act_has_no_legal_actions():
    """State.history (rules/game.py, the source of a state's transcript): the deck dealt,
    then every action applied, by ``apply`` or the fast path's ``apply_id``, oldest first.
    ``legal_actions()`` is ``[]`` while a deck is awaited and once the match is over (KL-10.3),
    as ``legal_ids()`` is, never the strings of a stale list."""
    state = GAME.new_state({}, first_dealer=1)
    assert state.to_act() == CHANCE and state.legal_actions() == []
    deck = deck_from_hands(DEALER.split(), ELDER.split(), "8H")
    state.deal(deck)
    first = state.apply("take")
    second = state.legal_ids()[0]
    state.apply_id(second)
    assert state.history() == [("deal", tuple(card_id(c) for c in deck)), first, second]
    assert state.action_str(first) == "take"  # apply returns the id it applied
    done = random_match(GAME, 7, {"kl_target_score": 1})
    assert done.to_act() == TERMINAL and done.legal_actions() == []


# ---- options (section 11) ----------------------------------------------------------------------

def rulebook_options():
    """The option table of klaberjass.md section 11: name -> allowed values, default first."""
    out = {}
    for line in options_table("klaberjass.md"):
        m = re.match(r"\| `(kl_\w+)` \| (.+?) \| KL-", line)
        if m:
            values = re.findall(r"`([^`]+)`", m.group(2))
            out[m.group(1)] = values
    return out


def test_every_rulebook_option_is_an_option_spec_with_its_values():
    book = rulebook_options()
    specs = {s.name: s for s in GAME.option_specs}
    assert set(book) == set(specs) and len(book) == 22
    for name, values in book.items():
        spec = specs[name]
        assert spec.help and spec.rules and all(r.startswith("KL-") for r in spec.rules)
        # The spec's own values, in order: the default must be first among them (a client that
        # names the default explicitly is accepted), not merely put in front of them.
        shown = [json.dumps(v) if not isinstance(v, str) else v for v in spec.values]
        if spec.kind == "bool":
            assert values == [json.dumps(spec.default), json.dumps(not spec.default)]
        elif name == "kl_target_score":
            assert values == ["500"] and spec.default == 500 and spec.minimum == 1
        else:
            assert values == shown and spec.values[0] == spec.default, (name, values, shown)


def test_every_option_spec_names_the_rules_its_rulebook_row_names():
    """klaberjass.md section 11: each option's row names the rules it changes (KL-9.2–9.4 is
    a range); its OptionSpec's ``rules`` (what ListGames shows) name each of them."""
    specs = {s.name: s for s in GAME.option_specs}
    rows = 0
    for line in options_table("klaberjass.md"):
        m = re.match(r"\| `(kl_\w+)` \| .+? \| (KL-[^|]+?) \| KL-A\d+ \|", line)
        if m:
            rows += 1
            named = set()
            for ref in m.group(2).split(", "):
                r = re.fullmatch(r"KL-(\d+)\.(\d+)–(\d+)\.(\d+)", ref)
                if r:
                    named |= {f"KL-{r.group(1)}.{n}" for n in range(int(r.group(2)), int(r.group(4)) + 1)}
                else:
                    named.add(ref)
            assert named <= set(specs[m.group(1)].rules), (m.group(1), named, specs[m.group(1)].rules)
    assert rows == 22


def test_defaults_are_the_rulebook_defaults():
    opts = GAME.options({})
    assert opts["kl_target_score"] == 500 and opts["kl_first_deal_packet"] == 3 and opts["kl_ten_value"] == 10
    assert opts["kl_schmeiss"] is False and opts["kl_trump_kqj_bonus"] is True and opts["kl_must_overtrump"] is True


@pytest.mark.parametrize("raw,option", [
    ({"kl_nonsense": 1}, "kl_nonsense"),
    ({"kl_target_score": 0}, "kl_target_score"),
    ({"kl_target_score": "500"}, "kl_target_score"),
    ({"kl_target_score": True}, "kl_target_score"),
    ({"kl_first_deal_packet": 4}, "kl_first_deal_packet"),
    ({"kl_first_deal_packet": "3"}, "kl_first_deal_packet"),
    ({"kl_ten_value": 5}, "kl_ten_value"),
    ({"kl_schmeiss": "true"}, "kl_schmeiss"),
    ({"kl_bella_order": "queen"}, "kl_bella_order"),
    ({"kl_dix_window": None}, "kl_dix_window"),
])
def test_bad_options_name_the_option_and_the_allowed_values(raw, option):
    with pytest.raises(InvalidOptions) as info:
        GAME.new_state(raw)
    assert option in info.value.message
    assert info.value.details["option"] == option
    if option != "kl_nonsense":
        spec = next(s for s in GAME.option_specs if s.name == option)
        assert spec.allowed_text() in info.value.message
    else:
        assert "kl_target_score" in info.value.message  # the known options are listed


def test_another_games_options_are_refused_as_unknown_options_and_its_own_come_back_as_they_are():
    """Game.options (ARCHITECTURE.md section 3): a complete set of this game's options comes
    back as it is (the same object), another game's validated set is refused as unknown
    options (INVALID_OPTIONS naming the first of them), not taken as Klaberjass's and failing
    later on a missing kl_ option."""
    own = GAME.options({"kl_target_score": 1000})
    assert GAME.options(own) is own
    with pytest.raises(InvalidOptions) as info:
        GAME.options(get_game("japanese_joker").options())
    assert info.value.details["option"] == "reconnect_grace_s"
    with pytest.raises(InvalidOptions):
        GAME.new_state(get_game("jojotte").options())


def test_bad_first_dealer():
    """KL-2.1: seat 0 or 1 deals first; anything else is refused with the option and its
    allowed values (docs/api.md, INVALID_OPTIONS' metadata)."""
    for bad in (2, -1, True, "0"):
        with pytest.raises(InvalidOptions) as err:
            GAME.new_state({}, first_dealer=bad)
        assert err.value.details == {"option": "first_dealer", "allowed": "0, 1"}


# ---- auto-move policy (NOTATION section 5) ------------------------------------------------------

def test_auto_move_auction_window_and_lowest_card():
    state = fresh()
    assert GAME.auto_move(state.view(0)) == "pass"
    play_out(state, ["take"])
    assert GAME.auto_move(state.view(0)) == "keep"
    play_out(state, ["keep", "keep"])
    # the elder leads: his lowest plain card is the 7S (trumps count above every plain card)
    assert GAME.auto_move(state.view(0)) == "play:7S"
    state.apply("play:QH")  # trump lead: dealer must overtrump with 9H, AH or JH
    assert GAME.auto_move(state.view(1)) == "play:AH"  # A is lower than 9 and J in trumps


def test_auto_move_trump_counts_above_plain_and_suit_ties():
    state = GAME.new_state({}, first_dealer=1)
    state.deal(deck_from_hands("KS 9S JH 9H AH TD 8D 7D 8C".split(), "AS 7S QH AD KD QC JC 9C 7C".split(), "8H"))
    play_out(state, ["take", "keep", "keep"])
    assert GAME.auto_move(state.view(0)) == "play:7S"  # 7S and 7C tie: spades first
    state = GAME.new_state({}, first_dealer=1)
    state.deal(deck_from_hands("KS 9S QS JS KH TH 8D TD 8S".split(), "AS TS 7S AD KD QC JC 9C 7D".split(), "8C"))
    play_out(state, ["take", "keep", "keep", "play:9C"])
    assert GAME.auto_move(state.view(1)) == "play:8S"  # void in trumps: lowest card, 8S before 8D


def test_auto_move_under_options():
    state = fresh({"kl_schmeiss": True, "kl_meld_declaration": "optional", "kl_bella_announcement": "required"})
    play_out(state, ["schmeiss"])
    assert GAME.auto_move(state.view(1)) == "accept"
    state = fresh({"kl_schmeiss": True})
    play_out(state, ["pass", "pass", "schmeiss", "refuse"])
    assert GAME.auto_move(state.view(0)) == "name:S"
    state = fresh({"kl_meld_declaration": "optional"})
    play_out(state, ["take", "keep", "keep"])
    assert GAME.auto_move(state.view(0)) == "declare"


def test_auto_move_needs_the_acting_view():
    state = fresh()
    with pytest.raises(ValueError):
        GAME.auto_move(state.view(1))


# ---- views and secrets (information rules) ------------------------------------------------------

COMMON_KEYS = {"game", "phase", "deal_number", "dealer", "to_act", "seat", "hand", "hand_sizes", "legal",
               "trick", "last_trick", "tricks_taken", "totals", "deal_results", "over", "winners", "table"}


def test_view_keys_and_private_parts():
    state = fresh()
    v0, v1, pub = state.view(0), state.view(1), state.public_view()
    for v in (v0, v1, pub):
        assert set(v) == COMMON_KEYS and v["game"] == "klaberjass"
    assert sorted(v0["hand"]) == sorted(ELDER.split()[:6]) and sorted(v1["hand"]) == sorted(DEALER.split()[:6])
    assert v0["legal"] == ["take", "pass"] and v1["legal"] == [] and pub["legal"] == [] and pub["hand"] == []
    assert pub["seat"] is None and v1["seat"] == 1
    assert v0["table"] == v1["table"] == pub["table"]


@pytest.mark.parametrize("first_dealer", [0, 1])
def test_the_table_names_the_first_dealer_and_the_elder(first_dealer):
    """docs/games/klaberjass.md (table keys ``first_dealer``, ``elder``): the match's first
    dealer (KL-2.1) stays in every view; the elder is ``1 - dealer``, and the dealer alternates
    after a deal played out (KL-2.2), already while the next deck is awaited."""
    state = GAME.new_state({}, first_dealer=first_dealer)
    assert state.public_view()["table"]["first_dealer"] == first_dealer
    state.deal(deck_from_hands(DEALER.split(), ELDER.split(), "8H"))
    state.apply("take")
    while state.to_act() != CHANCE:
        state.apply(GAME.auto_move(state.view(state.to_act())))
    # While the next deck is awaited the views name the next deal's dealer and its elder.
    for view in (state.view(0), state.view(1), state.public_view()):
        assert (view["dealer"], view["table"]["elder"]) == (1 - first_dealer, first_dealer) == (
            state.dealer(), 1 - state.dealer())
    state.deal(deck_from_hands(DEALER.split(), ELDER.split(), "8H"))
    for view in (state.view(0), state.view(1), state.public_view()):
        assert view["table"]["first_dealer"] == first_dealer
        assert (view["dealer"], view["table"]["elder"]) == (1 - first_dealer, first_dealer)


def test_the_elders_optional_statement_carries_its_length_under_length_compare_kl_5_5_kl_a20():
    """KL-5.5 step 1 under ``kl_meld_declaration = optional`` (KL-A20): the elder's statement is
    public as soon as he has declared, before the dealer chooses, and it is the dialogue's
    ``value`` event, with ``length`` under ``kl_sequence_compare = length`` (docs/games/
    klaberjass.md, ``melds``)."""
    state = GAME.new_state({"kl_meld_declaration": "optional", "kl_sequence_compare": "length"}, first_dealer=1)
    state.deal(deck_from_hands(DEALER.split(), "AS TS 7S QH AD KD QD JC 9C".split(), "8H"))
    play_out(state, ["pass", "take", "keep", "keep", "declare"])
    assert state.public_view()["phase"] == "meld_declaration" and state.to_act() == 1
    for view in (state.view(0), state.view(1), state.public_view()):
        assert view["table"]["melds"] == [{"seat": 0, "say": "value", "value": 20, "length": 3}]


def test_the_elders_optional_statement_of_a_split_run_is_its_top_piece_kl_a10_kl_a11_kl_a20():
    """KL-A20 with KL-A10 and KL-A11: under ``kl_split_runs`` the elder's 7-card run A-8 of
    spades is cut 4 + 3 (docs/games/klaberjass.md, documented choice 11: the cut with the most
    points, even where keeping it whole would compare longer), so his statement, public before
    the dealer chooses, is the top piece's ``value 50, length 4`` - the same event that opens the
    dialogue once both have chosen."""
    options = {"kl_meld_declaration": "optional", "kl_sequence_compare": "length", "kl_split_runs": True}
    state = GAME.new_state(options, first_dealer=1)
    state.deal(deck_from_hands("JH 9H AH TD 8D 7D 8C 7C KC".split(), "AS KS QS JS TS 9S 8S QH AD".split(), "8H"))
    play_out(state, ["pass", "take", "keep", "keep", "declare"])
    statement = {"seat": 0, "say": "value", "value": 50, "length": 4}
    for view in (state.view(0), state.view(1), state.public_view()):
        assert view["table"]["melds"] == [statement]
    state.apply("declare")
    assert state.public_view()["table"]["melds"][0] == statement


@pytest.mark.parametrize("options, target", [({}, 500), ({"kl_target_score": 300}, 300)])
def test_view_shows_the_target_score_kl_10_1(options, target):
    """KL-10.1: the match is played to ``kl_target_score``, a table option every player knows;
    every view carries it, at the default too (``options`` lists only the non-default ones),
    from the deck wait to the end of the match. It names no card, so no audience learns more."""
    state = GAME.new_state(options, first_dealer=1)
    assert state.public_view()["table"]["target_score"] == target  # before the first deck
    state.deal(deck_from_hands(DEALER.split(), ELDER.split(), "8H"))
    views = [state.view(0), state.view(1), state.public_view()]
    assert [v["table"]["target_score"] for v in views] == [target] * 3
    assert views[0]["table"] == views[1]["table"] == views[2]["table"]
    over = random_match(GAME, 7, options)
    assert over.public_view()["over"] and over.public_view()["table"]["target_score"] == target
    assert max(over.public_view()["totals"]) >= target


def test_the_table_between_deals_carries_no_deal_figures():
    """Between deals (waiting for the next deck, KL-2.2) and after the match, the table's
    per-deal figures are the empty ones (no meld points, bella or card points, KL-5.7, KL-7.1,
    KL-8.2): the finished deal's breakdown is in ``previous_deal`` and ``deal_results``.
    ``table.tricks`` is there too, empty (docs/games/klaberjass.md: "``[]`` outside the play
    phase"), so a client reads the same keys in every phase: every key of a deal's table, the
    deal's cards, calls and stock empty or null (KL-2.5, KL-2.9, KL-3.1, KL-4.2)."""
    state = GAME.new_state({}, first_dealer=1)
    waits = [state.public_view()]
    state.deal(deck_from_hands(DEALER.split(), ELDER.split(), "8H"))
    deal_keys = list(state.public_view()["table"])
    state.apply("take")
    while state.to_act() != CHANCE:
        state.apply(GAME.auto_move(state.view(state.to_act())))
    assert state.deal_results()[-1]["card_points"] != [0, 0]
    waits += [state.view(0), state.view(1), state.public_view(), random_match(GAME, 3).public_view()]
    for view in waits:
        assert view["to_act"] is None  # nobody acts while a deck is awaited or after the match
        t = view["table"]
        assert (t["meld_points"], t["bella"], t["card_points"], t["trick_number"]) == ([0, 0], [0, 0], [0, 0], 0)
        assert (t["melds"], t["deal_actions"], t["tricks"]) == ([], [], [])
        assert list(t) == deal_keys
        assert (t["auction_state"], t["auction"], t["turn_up"], t["info_card"], t["trump"], t["maker"],
                t["exchange"], t["leader"], t["revealed"], t["stock_size"]) == (
            None, [], None, None, None, None, None, None, [[], []], 0)


def test_a_thrown_in_deal_leaves_no_hand_while_the_next_deck_is_awaited():
    """KL-3.5: when both players pass in both rounds the deal is thrown in and the cards are
    dealt afresh (KL-2.3); while the next deck is awaited no seat holds a hand, has a legal
    action or counts cards in ``hand_sizes``, though the thrown-in cards were never played."""
    state = fresh()
    play_out(state, ["pass", "pass", "pass", "pass"])
    assert state.to_act() == CHANCE and state.deal_results() == [{"thrown_in": True}]
    for view in (state.view(0), state.view(1), state.public_view()):
        assert (view["hand"], view["legal"], view["hand_sizes"], view["tricks_taken"]) == ([], [], [0, 0], [0, 0])


def test_after_a_thrown_in_deal_every_card_is_secret_and_the_results_belong_to_the_caller():
    """KL-3.5, KL-2.3: the thrown-in cards are gathered and reshuffled, so while the next deck
    is awaited no seat knows where any card will be: ``secret_cards`` is the whole pack for
    every audience (docs/games/klaberjass.md, Views: "between deals ... it is the whole pack"),
    though the thrown-in hands were never played (kills the state.secret_cards mutant adding
    the seat's hand outside a deal). ``deal_results`` answers a copy: a caller appending to it
    changes nothing (kills the mutant returning the state's own list)."""
    pack = sum(1 << c for c in GAME.pack)
    state = fresh()
    play_out(state, ["pass", "pass", "pass", "pass"])
    assert state.to_act() == CHANCE
    assert [state.secret_cards(s) for s in (None, 0, 1)] == [pack, pack, pack]
    state.deal_results().append({"thrown_in": False})
    state.deal_details().append({"thrown_in": False})
    assert state.deal_results() == state.deal_details() == [{"thrown_in": True}]
    assert state.deal_number == 1


@pytest.mark.parametrize("seat", [2, -1, None])
def test_a_view_for_a_seat_the_game_does_not_have_is_refused(seat):
    """KL-0.3: Klaberjass has seats 0 and 1 only; a view for any other seat is a ValueError
    naming the seats, not a view (kills the state.view mutant accepting seat 2)."""
    with pytest.raises(ValueError, match="klaberjass has seats 0 and 1"):
        fresh().view(seat)


def test_secret_cards_are_exact_before_the_second_deal():
    state = fresh()
    pack = sum(1 << c for c in GAME.pack)
    hand0 = state.zones()["hand0"]
    assert state.secret_cards(0) == pack & ~hand0 & ~mask("8H")
    assert state.secret_cards(None) == pack & ~mask("8H")


def test_out_of_a_deal_every_card_is_secret_and_no_card_has_a_zone():
    """Waiting for the next deck (KL-2.2, KL-2.3: a new shuffle) and after the match, no card
    has a place anyone knows: the finished deal's turn-up and won cards tell nothing about the
    next deal, so ``secret_cards`` is the whole pack for every audience and ``zones()`` is
    empty (game.py: "out of a deal: empty dict")."""
    pack = sum(1 << c for c in GAME.pack)
    state = GAME.new_state({}, first_dealer=1)
    state.deal(deck_from_hands(DEALER.split(), ELDER.split(), "8H"))
    state.apply("take")
    while state.to_act() != CHANCE:
        state.apply(GAME.auto_move(state.view(state.to_act())))
    for waiting in (state, random_match(GAME, 3)):
        assert waiting.to_act() in (CHANCE, TERMINAL)
        assert [waiting.secret_cards(s) for s in (None, 0, 1)] == [pack, pack, pack]
        assert waiting.public_known() == 0 and waiting.revealed(0) == waiting.revealed(1) == 0
        assert waiting.zones() == {}


def test_secret_cards_shrink_with_the_public_record():
    """Played cards, the information card, an exchanged turn-up and the cards the meld dialogue
    identifies are no longer secret; the stock always is (KL-2.10)."""
    state = GAME.new_state({}, first_dealer=1)
    state.deal(deck_from_hands("9S 8S QH TH 9H AD KD QD TC".split(), "AS KS JS KH JH 8H 7H 9C 7C".split(), "QS",
                               info_card="8D"))
    play_out(state, ["pass", "pass", "name:C", "exchange", "keep"])
    t = state.public_view()["table"]
    assert t["revealed"] == [["AS", "KS", "QS", "JS"], []]
    public = state.secret_cards(None)
    for c in ("AS", "KS", "QS", "JS", "7C", "8D"):
        assert not public >> card_id(c) & 1, c
    assert public >> card_id("AD") & 1 and public >> card_id("KH") & 1
    state.apply("play:AS")
    assert not state.secret_cards(None) >> card_id("AS") & 1
    assert state.public_view()["table"]["revealed"][0] == ["KS", "QS", "JS"]


def test_the_ace_of_spades_as_information_card_and_the_dealers_exchanged_turn_up_are_known():
    """KL-2.9: the information card is public, also when it is the ace of spades (card id 0);
    KL-4.3: the turn-up the dealer (seat 1 here) takes by exchanging is known to be in his hand.
    Neither is a secret card for any audience, and seat 0 does not count the dealer's QS among
    the cards he may be holding (kills the state.public_known mutants testing the information
    card with ``> 0`` and dropping seat 1's revealed cards)."""
    state = GAME.new_state({}, first_dealer=1)
    state.deal(deck_from_hands("9S 8S QH TH 9H AD KD 7C TC".split(), "KS JS TS KH JH 8H 7H 9C QD".split(), "QS",
                               info_card="AS"))
    play_out(state, ["pass", "pass", "name:C", "keep", "exchange"])
    assert state.zones()["info_card"] == mask("AS") and state.revealed(1) == mask("QS")
    known = mask("AS QS 7C")
    assert state.public_known() & known == known
    for audience in (None, 0, 1):
        assert not state.secret_cards(audience) & known, audience
    assert state.secret_cards(0) & mask("AD KD") == mask("AD KD")


def test_how_high_dialogue_reveals_the_named_sequences():
    """KL-5.5: ``top 9H`` with value 20 identifies 9H 8H 7H; ``higher AD`` identifies A K Q."""
    from tests.shared_paths import vectors
    vec = dict(vectors("klaberjass"))["klaberjass_deal_alexey_valery.json"]
    state = GAME.new_state({}, first_dealer=1)
    state.deal(vec["deck_top_first"])
    play_out(state, ["pass", "take", "keep", "keep"])
    assert state.public_view()["table"]["revealed"] == [["9H", "8H", "7H"], ["AD", "KD", "QD"]]


def test_hands_and_revealed_cards_are_listed_in_card_order():
    """A view's ``hand`` and ``table.revealed`` list cards in card order, suits S H D C, then
    A K Q J T 9 8 7 (``tables.ids_of``, ``KlaberjassState.hand_of``: "in card order"): the
    elder's three scored sequences (KL-5.6) in spades, hearts and diamonds, clubs trump."""
    elder = "9D 7H QS JD 8H AS TD KS 9H"
    state = GAME.new_state({}, first_dealer=1)
    state.deal(deck_from_hands("QC JC 8C KH QH AD KD 8S 7S".split(), elder.split(), "7C"))
    play_out(state, ["take", "keep", "keep"])
    in_order = ["AS", "KS", "QS", "9H", "8H", "7H", "JD", "TD", "9D"]
    assert state.view(0)["hand"] == in_order == state.hand_of(0)
    assert state.public_view()["table"]["revealed"] == [in_order, []]


def test_view_carries_the_deal_actions_and_auction():
    state = fresh()
    play_out(state, ["pass", "take", "keep", "keep", "play:AS"])
    t = state.view(1)["table"]
    assert t["deal_actions"] == [{"seat": 0, "action": "pass"}, {"seat": 1, "action": "take"},
                                 {"seat": 0, "action": "keep"}, {"seat": 1, "action": "keep"},
                                 {"seat": 0, "action": "play:AS"}]
    assert t["auction"] == [{"seat": 0, "call": "pass"}, {"seat": 1, "call": "take"}]
    assert state.view(1)["trick"] == [{"seat": 0, "card": "AS"}]
    assert state.view(1)["legal"] == ["play:KS", "play:9S"]


@pytest.mark.parametrize("options, turn_up, calls, seats", [
    ({}, "8H", ["pass", "pass", "pass", "name:S"], [0, 1, 0, 1]),
    ({}, "8S", ["pass", "pass", "name:H"], [0, 1, 0]),
    ({}, "8H", ["pass", "pass", "name:D"], [0, 1, 0]),
    ({}, "8H", ["pass", "pass", "pass", "name:C"], [0, 1, 0, 1]),
    ({"kl_schmeiss": True}, "8H", ["schmeiss", "refuse"], [0, 1]),
    ({"kl_schmeiss": True}, "8H", ["pass", "pass", "schmeiss", "refuse", "name:S"], [0, 1, 0, 1, 0]),
])
def test_table_auction_lists_every_call_and_no_window_step(options, turn_up, calls, seats):
    """KL-3.1 (KL-3.3's names of the other suits; KL-A7's schmeiss, its answer and the name
    the caller gives after a refusal in round 2): every call of the auction is public, in
    ``table.auction``; the dix window's step after it is not a call (it is in ``deal_actions``)."""
    state = GAME.new_state(options, first_dealer=1)
    state.deal(deck_from_hands(DEALER.split(), ELDER.split(), turn_up))
    play_out(state, calls + ["keep"])
    want = [{"seat": seat, "call": call} for seat, call in zip(seats, calls)]
    for view in (state.view(0), state.view(1), state.public_view()):
        assert view["table"]["auction"] == want
        assert view["table"]["deal_actions"][-1]["action"] == "keep"


def test_table_names_the_maker_trump_and_leader_only_once_there_are_some():
    """KL-3.1: the trump and its maker exist once a call ends the auction; KL-6.2: a trick
    has a leader only in the play phase (the elder leads the first). Before, every view reads
    null, not a placeholder seat."""
    state = fresh()
    seen = []
    for action in ["pass", "take", "keep", "keep"]:
        t = state.public_view()["table"]
        seen.append((t["maker"], t["trump"], t["leader"]))
        state.apply(action)
    t = state.public_view()["table"]
    seen.append((t["maker"], t["trump"], t["leader"]))
    assert seen == [(None, None, None), (None, None, None), (1, "H", None), (1, "H", None), (1, "H", 0)]


def test_kqj_bonus_is_not_public_before_the_deal_ends():
    state = GAME.new_state({}, first_dealer=1)
    state.deal(deck_from_hands("AC KC QC JC 9S 8S TD 8D 7D".split(), "KH QH JH AS TS 7S AD 8C 7C".split(), "8H"))
    play_out(state, ["take", "keep", "keep", "play:AS", "play:8S"])
    t = state.public_view()["table"]
    assert t["previous_deal"] is None and "kqj" not in json.dumps(t) and t["bella"] == [0, 0]
    assert state.public_view()["table"]["card_points"] == [11, 0]


# ---- last_trick across deals (game.py's view keys; KL-6.2, KL-7.3, KL-3.5) ------------------------

def _kl_play(seat: int, action: str) -> dict:
    play = {"seat": seat, "card": action.split(":")[1]}
    if action.endswith(":bella"):
        play["announce"] = "bella"
    return play


def _kl_no_trick(view: dict) -> bool:
    return view["table"]["trick_number"] == 0 and not any(
        e["action"].startswith("play:") for e in view["table"]["deal_actions"])


def _kl_final(state, before: dict, last: dict) -> None:
    """The ninth trick: its leader, and KL-7.3's 10 for the last trick with its card points
    (KL-8.1) to its winner, from the deal's breakdown and card points against the view before
    the final card."""
    w = last["winner"]
    assert last["number"] == 9 and last["leader"] == last["plays"][0]["seat"]
    assert state.deal_details()[-1]["last_trick"] == [10 if s == w else 0 for s in (0, 1)]
    assert last["points"] == state.deal_results()[-1]["card_points"][w] - before["table"]["card_points"][w]


@pytest.mark.parametrize("options", [{}] + OPTION_SETS)
def test_kl_last_trick_is_the_previous_deals_ninth_until_the_first_trick_kl_6_2_kl_7_3_kl_3_5(options):
    """Every audience's ``last_trick`` after the final card of a deal, while the next deck is
    due, after it is dealt (auction, window, melds: trick_number 0, no play in the log) and in
    the final views of the match is the deal's ninth trick: its plays, its winner (KL-7.3's 10
    in the deal's breakdown), its points; after a thrown-in deal (KL-3.5) it is None, never an
    earlier deal's; the next deal's first complete trick replaces it. Determinization at a deal's
    start restores it (also from the plays alone, as a remote bot rebuilds the view)."""
    seen = Counter()
    for seed in range(8):
        seen += check_deal_boundaries(GAME, 500 + seed, options, play_of=_kl_play,
                                      taken_after=lambda st: st.deal_details()[-1]["tricks"],
                                      deal_has_no_trick=_kl_no_trick, check_final=_kl_final,
                                      determinize_every=3, pass_bias=0.3)
    assert seen["final_tricks"] >= 10 and seen["first_tricks"] >= 10 and seen["thrown_in"] >= 1, seen
    assert seen["determinized"] >= 3


@pytest.mark.parametrize("options", [{}] + OPTION_SETS)
def test_table_tricks_are_the_deals_complete_tricks_with_their_card_points_kl_8_1(options):
    """``table.tricks`` (docs/games/klaberjass.md) lists the current deal's complete tricks,
    oldest first, numbered from 1, the last one being ``last_trick``; their plays followed by
    the trick in progress are the deal's plays in order (KL-6.2); each trick's ``points`` go
    to its winner, so the winners' sums are ``table.card_points`` (KL-8.1) at every step, and
    it counts in its winner's ``tricks_taken``; ``hand_sizes`` are the hands' sizes, one card
    apart while a trick is in progress."""
    checked = Counter()

    def check(state):
        view = state.public_view()
        t = view["table"]
        tricks = t["tricks"]
        if view["phase"] != "play":
            assert tricks == []
            return
        assert [x["number"] for x in tricks] == list(range(1, t["trick_number"] + 1))
        if tricks:
            assert tricks[-1] == view["last_trick"]
            checked["tricks"] += 1
        plays = [_kl_play(e["seat"], e["action"]) for e in t["deal_actions"] if e["action"].startswith("play:")]
        assert [p for x in tricks for p in x["plays"]] + view["trick"] == plays
        won = [0, 0]
        for x in tricks:
            won[x["winner"]] += x["points"]
        assert won == t["card_points"]
        assert view["tricks_taken"] == [sum(x["winner"] == s for x in tricks) for s in (0, 1)]
        assert view["hand_sizes"] == [len(state.view(s)["hand"]) for s in (0, 1)]

    for seed in range(2):
        random_match(GAME, 900 + seed, options, on_step=check)
    assert checked["tricks"] >= 50


def test_kl_last_trick_of_a_deal_skips_an_exchange_before_the_ninth_card_kl_4_2_kl_6_5_kl_7_3():
    """KL-4.2: the dix holder may exchange at any of his trick-play turns, the ninth included,
    and then plays the turn-up he took. Here the dealer keeps the dix 7H to the end; at trick 9
    the elder leads AS, the dealer (no spade, his only card the dix: KL-6.5) exchanges and
    trumps with the turn-up 8H. The previous deal's ninth trick shown while the next deck is
    due is AS / 8H, won by the dealer with KL-7.3's 10: the exchange logged between the two
    cards is not one of them (kills the mutant that drops the skip of that exchange)."""
    elder, dealer = "AC TC KC QC AD TD KD QD AS", "JC 9C 8C 7C JD 9D 8D 7D 7H"
    state = GAME.new_state({}, first_dealer=1)
    state.deal(deck_from_hands(dealer.split(), elder.split(), "8H"))
    play_out(state, ["take", "keep", "keep"])
    for lead, follow in zip("AC TC KC QC AD TD KD QD".split(), "JC 9C 8C 7C JD 9D 8D 7D".split()):
        play_out(state, [f"play:{lead}", f"play:{follow}"])
    state.apply("play:AS")
    assert state.legal_actions() == ["play:7H", "exchange"]
    play_out(state, ["exchange", "play:8H"])
    assert state.to_act() == CHANCE
    assert state.deal_details()[-1]["last_trick"] == [0, 10]
    assert state.public_view()["last_trick"] == {
        "number": 9, "leader": 0, "plays": [{"seat": 0, "card": "AS"}, {"seat": 1, "card": "8H"}],
        "winner": 1, "points": 11 + 10}


@pytest.mark.parametrize("options", [{}, {"kl_sequence_compare": "length", "kl_reveal_scored_melds": "cards"}],
                         ids=["defaults", "length_and_cards"])
def test_the_meld_dialogue_has_the_keys_docs_games_klaberjass_md_lists(options):
    """A frontend draws ``table.melds`` from docs/games/klaberjass.md's row alone (it used to
    say only "vector format", the rulebook's test files): every event of random matches has
    ``seat`` and ``say``, a ``say`` the row names, and only the keys the row gives that ``say``."""
    from tests.rules.playout import random_match

    row = next(line for line in (ROOT_DOCS / "games" / "klaberjass.md").read_text().splitlines()
               if line.startswith("| `melds` |"))
    documented = {  # say -> the keys the row names for it
        "value": {"value", "length"}, "not_good": {"value", "length"}, "good": set(), "how_high": set(),
        "top": {"card"}, "higher": {"card"}, "same": {"card"}, "lower": set(),
        "trump_check": {"seat0_trump", "seat1_trump", "result"}, "scores": {"points", "sequences"}}
    for say, keys in documented.items():
        assert f"`{say}`" in row and all(f'`"{key}"`' in row for key in keys), say
    seen: set[str] = set()

    def check(state):
        for event in state.view(0)["table"]["melds"] or []:
            seen.add(event["say"])
            assert set(event) - {"seat", "say"} <= documented[event["say"]], event
            for seq in event.get("sequences", []):
                assert set(seq) <= {"suit", "top", "length", "cards"}, seq
                assert ("cards" in seq) == (options.get("kl_reveal_scored_melds") == "cards")

    for seed in range(12):
        random_match(GAME, seed, {"kl_target_score": 300, **options}, on_step=check)
    assert {"value", "scores"} <= seen and len(seen) >= 4, seen
