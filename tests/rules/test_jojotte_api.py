"""The Jo-Jotte Game/State API: notation, bad input, options validation, views and secrets,
zones, clone, auto-move (NOTATION sections 2, 4, 5; game.py)."""

from __future__ import annotations

import json
import random
from collections import Counter

import pytest

from engine_service.rules import (CHANCE, TERMINAL, DealRequired, IllegalAction, InvalidDeck, InvalidOptions,
                                  MalformedAction, MatchOver, NotYourTurn, get_game)
from engine_service.rules.cards import PACK32, card_id
from engine_service.rules.games.jojotte import actions as A

from .checks_jojotte import GAME, OPTION_SETS, act, auto_finish_deal, deal, legal, make_deck, table
from .last_trick import check_deal_boundaries
from .playout import cards_in, iter_states, random_match
from .test_jojotte_rules import EXCH_DEAL, FAIL_NULLO_DEAL, JO_DEAL, MELD_LOSER_DEAL, PLAY_DEAL, STRONG_DEAL, to_play

COMMON_KEYS = {"game", "phase", "deal_number", "dealer", "to_act", "seat", "hand", "hand_sizes", "legal",
               "trick", "last_trick", "tricks_taken", "totals", "deal_results", "over", "winners", "table"}


def test_registered_under_its_id():
    assert get_game("jojotte") is GAME and GAME.num_seats == 2 and len(GAME.pack) == 32


# ---- notation (NOTATION section 2) ---------------------------------------------------------------

def test_every_action_string_round_trips():
    state = GAME.new_state()
    for text, a in A.ACTION_IDS.items():
        assert state.parse_action(text) == a and state.action_str(a) == text
    assert len(A.ACTION_IDS) == 32 + 4 + 4 + 6 + 4 + 4 + 2 + 5 + 2 + 1 + 2 - 4  # plays, jo, jotte, calls...


@pytest.mark.parametrize("bad", ["", "PASS", "pass:", "play", "play:", "play:ZZ", "play:6S", "play:AS:",
                                 "play:AS:jo", "play:KS:jotte", "play:QS:jo", "play:KS:JO", "name:NT", "name:X",
                                 "name", "slam", "slam:X", "exchange:AS", "exchange:7", "exchange", "double:2",
                                 "take", "keep", " pass", "play:as", None, 3])
def test_malformed_actions_are_rejected_and_change_nothing(bad):
    state = deal(**PLAY_DEAL)
    before = json.dumps(state.view(0), sort_keys=True)
    with pytest.raises(MalformedAction):
        state.parse_action(bad)
    with pytest.raises(MalformedAction):
        state.apply(bad)
    assert json.dumps(state.view(0), sort_keys=True) == before


def test_well_formed_but_illegal_actions_parse_and_are_refused():
    state = deal(**PLAY_DEAL)
    for text in ("redouble", "nullo", "play:AS", "slam:NT", "exchange:7S", "declare", "play:KS:jo"):
        assert isinstance(state.parse_action(text), int)
        with pytest.raises(IllegalAction):
            state.apply(text)
    assert state.to_act() == 0 and len(state.history()) == 1


def test_out_of_turn_deal_required_match_over():
    state = GAME.new_state({}, first_dealer=1)
    with pytest.raises(DealRequired):
        state.apply("pass")
    state = deal(**PLAY_DEAL)
    with pytest.raises(NotYourTurn) as info:
        state.apply("pass", seat=1)
    assert info.value.details["to_act"] == 0
    with pytest.raises(InvalidDeck):
        state.deal(list(PACK32))  # no deal is due
    finished = random_match(GAME, 3)
    with pytest.raises(MatchOver):
        finished.apply("pass")
    with pytest.raises(MatchOver):
        finished.deal(list(PACK32))


def test_no_seat_to_act_means_no_legal_ids_while_a_deck_is_awaited_and_after_the_match_jj_10_5():
    """The fast path's ``legal_ids()`` lists the ids of the seat to act (rules/game.py). While a
    deck is awaited (CHANCE: before the first deal, after a thrown-in deal, JJ-3.6) and once the
    match is over (TERMINAL) nobody acts: the list is empty, so a playout loop that asks for it
    gets nothing to choose from rather than None (kills the mutant returning None there)."""
    state = GAME.new_state({}, first_dealer=1)
    assert state.to_act() == CHANCE and state.legal_ids() == []
    state = deal(**PLAY_DEAL)
    act(state, "pass", "pass", "pass", "pass")
    assert state.to_act() == CHANCE and state.legal_ids() == []
    finished = random_match(GAME, 3)
    assert finished.to_act() == TERMINAL and finished.legal_ids() == []


# ---- options -------------------------------------------------------------------------------------

def test_unknown_option_is_named():
    with pytest.raises(InvalidOptions) as info:
        GAME.new_state({"jj_no_such_thing": True})
    assert "jj_no_such_thing" in info.value.message and "jj_game_target" in info.value.message


@pytest.mark.parametrize("name,value,allowed", [
    ("jj_trick_value", "median", '"max_card", "sum", "winning_card"'),
    ("jj_first_deal_packet", 4, "2, 1, 3"),
    ("jj_first_deal_packet", "2", "2, 1, 3"),
    ("jj_must_head_plain", "true", "true, false"),
    ("jj_match_rubbers", 0, "an integer >= 1"),
    ("jj_game_target", 80.5, "an integer >= 1"),
    ("jj_seven_exchange", "any", '"any_seven_unless_both", "trump_seven", "none"'),
])
def test_bad_option_values_name_the_option_and_the_allowed_values(name, value, allowed):
    with pytest.raises(InvalidOptions) as info:
        GAME.options({name: value})
    assert name in info.value.message and allowed in info.value.message


@pytest.mark.parametrize("bad", [2, -1, True, "0", None])
def test_first_dealer_must_be_a_seat(bad):
    with pytest.raises(InvalidOptions) as info:
        GAME.new_state({}, first_dealer=bad)
    assert "first_dealer" in info.value.message


def test_options_default_and_non_default():
    opts = GAME.options({"jj_game_target": 100})
    assert opts["jj_trick_value"] == "max_card" and opts.non_default() == {"jj_game_target": 100}


# ---- views and secrets ------------------------------------------------------------------------------

def test_view_has_the_common_keys_and_only_own_hand():
    state = deal(**PLAY_DEAL)
    v0, v1, pub = state.view(0), state.view(1), state.public_view()
    for v in (v0, v1, pub):
        assert COMMON_KEYS <= set(v) and v["game"] == "jojotte"
    assert sorted(v0["hand"]) == sorted(PLAY_DEAL["nd"]) and v0["legal"] and v1["legal"] == []
    assert pub["hand"] == [] and pub["legal"] == [] and pub["seat"] is None
    assert v0["hand_sizes"] == [6, 6] and v0["phase"] == "auction" and v0["to_act"] == 0
    assert not cards_in(v0) & {card_id(c) for c in PLAY_DEAL["dl"]}
    json.dumps(v0)  # JSON-ready


def test_view_table_options_are_the_non_default_ones_only():
    """docs/games/jojotte.md (Views) and docs/api.md (``table.options``): Jo-Jotte's views list
    only the options that differ from the defaults, in every audience's view."""
    state = deal({"jj_game_target": 100, "jj_trick_value": "max_card"}, **PLAY_DEAL)
    for v in (state.public_view(), state.view(0), state.view(1)):
        assert v["table"]["options"] == {"jj_game_target": 100}
    assert deal(**PLAY_DEAL).public_view()["table"]["options"] == {}


TABLE_KEYS = {"options", "first_dealer", "non_dealer", "match", "last_deal", "auction_state", "turn_up",
              "original_turn_up", "info_card", "auction", "contract", "exchange_window", "exchange",
              "exchange_offer", "melds", "meld_category", "jo", "jo_jotte", "tricks", "trick_points",
              "deal_actions"}


def test_every_views_table_has_exactly_the_documented_keys_in_every_phase():
    """docs/games/jojotte.md (Views): the ``table`` keys, the same in every phase (between deals
    and after the match too) and for every audience; nothing else rides along in it."""
    rng = random.Random(11)
    state = GAME.new_state({"jj_meld_declaration": "optional", "jj_match_rubbers": 1}, first_dealer=0)
    phases = set()
    while True:
        for v in (state.public_view(), state.view(0), state.view(1)):
            assert set(v["table"]) == TABLE_KEYS, (v["phase"], set(v["table"]) ^ TABLE_KEYS)
        phases.add(state.public_view()["phase"])
        if state.to_act() == TERMINAL:
            break
        if state.to_act() == CHANCE:
            state.deal(rng.sample(PACK32, 32))
        else:
            state.apply_id(rng.choice(state.legal_ids()))
    assert {"auction", "exchange", "melds", "play", "deal", "over"} <= phases, phases


def test_view_phase_and_auction_state_name_every_step():
    """The view's ``phase`` and ``table.auction_state`` at every step of a deal that visits each
    phase (docs/games/jojotte.md, Phases): the seven auction states of JJ-3.1 (``LATE_DBL`` with
    ``jj_double_timing = end_of_auction``, JJ-A8) all read ``auction``; then the two exchange
    steps (JJ-4.2), the nullo window (JJ-4.3), the slam answer (JJ-4.4), the optional meld
    statements (JJ-A21), play, and ``deal`` while the next deck is awaited (JJ-2.2)."""
    options = {"jj_double_timing": "end_of_auction", "jj_meld_declaration": "optional"}
    state = deal(options, **EXCH_DEAL)  # turn-up QH; seat 0 (non-dealer) holds 7S
    seen = []
    for call in ("pass", "pass", "pass", "name:H", "pass", "double", "pass", "no_exchange", "no_exchange",
                 "nullo", "slam:H", "declare", "declare", "declare", "declare"):
        v = state.public_view()
        seen.append((v["phase"], v["table"]["auction_state"], state.view(state.to_act())["phase"]))
        state.apply(call)
    assert [(p, s) for p, s, _ in seen] == [
        ("auction", "R1_ND"), ("auction", "R1_D"), ("auction", "R2_ND"), ("auction", "R2_D"),
        ("auction", "RESP"), ("auction", "LATE_DBL"), ("auction", "REDBL"),
        ("exchange", None), ("exchange", None), ("nullo", None), ("slam", None),
        ("melds", None), ("melds", None), ("melds", None), ("melds", None)]
    assert all(seat_phase == p for p, _, seat_phase in seen)  # the player's view says the same
    v = state.public_view()
    assert v["phase"] == "play" and v["table"]["auction_state"] is None
    auto_finish_deal(state)
    assert state.public_view()["phase"] == "deal" and state.to_act() == CHANCE


def test_view_table_tracks_the_public_deal():
    state = deal(**PLAY_DEAL)
    act(state, "accept", "pass")
    t = state.view(1)["table"]
    assert t["turn_up"] == "8S" and t["info_card"] == "7C"
    assert t["auction"] == [{"seat": 0, "call": "accept"}, {"seat": 1, "call": "pass"}]
    assert t["contract"]["declarer"] == 0 and t["exchange_window"] is True
    assert t["exchange_offer"] == ["no_exchange"]  # seat 1 holds no seven
    assert state.view(0)["table"]["exchange_offer"] is None  # seat 0's step has not come yet
    to_play(state)
    act(state, "play:KH")
    v = state.view(0)
    assert v["trick"] == [{"seat": 1, "card": "KH"}] and v["legal"] == ["play:AH"]
    assert v["hand_sizes"] == [9, 8]  # seat 1 led: one card fewer, public
    act(state, "play:AH")
    v = state.public_view()
    assert v["last_trick"]["winner"] == 0 and v["tricks_taken"] == [1, 0]
    assert [e["action"] for e in v["table"]["deal_actions"]][-2:] == ["play:KH", "play:AH"]


def test_view_auction_lists_every_call_while_the_auction_runs_jj_3_1():
    """JJ-3.1: the auction is public; while it runs, ``table.auction`` lists every call so far
    (the log's length at the auction's end cuts it only once the second deal is out)."""
    state = deal(**PLAY_DEAL)
    assert table(state)["auction"] == []
    act(state, "pass", "pass")
    assert table(state)["auction"] == [{"seat": 0, "call": "pass"}, {"seat": 1, "call": "pass"}]
    act(state, "name:D")
    assert [e["call"] for e in state.view(1)["table"]["auction"]] == ["pass", "pass", "name:D"]
    act(state, "pass")
    to_play(state)
    act(state, "play:KH")
    assert [e["call"] for e in table(state)["auction"]] == ["pass", "pass", "name:D", "pass"]

def test_views_show_each_card_with_its_announcement_jj_7_2():
    """JJ-7.2: "jo" and "jotte" are public when made: the trick on the table, the finished tricks and
    ``last_trick`` show the card with its ``announce`` (a plain play has none), for every
    audience."""
    state = to_play(deal(**JO_DEAL), "name:S", "pass")
    act(state, "play:AC", "play:KS:jo")
    first = [{"seat": 1, "card": "AC"}, {"seat": 0, "card": "KS", "announce": "jo"}]
    for v in (state.view(0), state.view(1), state.public_view()):
        assert v["last_trick"]["plays"] == first and v["table"]["tricks"][0]["plays"] == first
    act(state, "play:QS:jotte")
    for v in (state.view(0), state.view(1), state.public_view()):
        assert v["trick"] == [{"seat": 0, "card": "QS", "announce": "jotte"}]
    act(state, "play:AS")  # seat 1 beats the queen (JJ-1.2): last_trick is this, the latest, trick
    second = [{"seat": 0, "card": "QS", "announce": "jotte"}, {"seat": 1, "card": "AS"}]
    assert state.public_view()["last_trick"]["plays"] == second
    assert [t["plays"] for t in table(state)["tricks"]] == [first, second]

def test_finished_tricks_score_their_value_as_points_except_in_nullo_jj_8_4():
    """``table.tricks``: each finished trick's ``points`` is what it adds to its winner's trick
    points (JJ-8.3), its ``value`` (JJ-8.2); in nullo there are no trick points (JJ-8.4):
    ``points`` is null while ``value`` is still shown."""
    state = to_play(deal(**PLAY_DEAL), "accept", "pass")
    act(state, "play:KH", "play:AH")
    assert table(state)["tricks"] == [{"leader": 1, "plays": [{"seat": 1, "card": "KH"}, {"seat": 0, "card": "AH"}],
                                       "winner": 0, "value": 10, "points": 10}]
    assert table(state)["trick_points"] == [10, 0]
    state = to_play(deal(**FAIL_NULLO_DEAL), "name:H", "pass", "nullo", "pass")
    act(state, "play:9H", "play:AH")
    assert table(state)["tricks"] == [{"leader": 0, "plays": [{"seat": 0, "card": "9H"}, {"seat": 1, "card": "AH"}],
                                       "winner": 1, "value": 10, "points": None}]
    assert table(state)["trick_points"] == [0, 0]


def test_previous_nullo_deals_last_trick_keeps_no_trick_points_jj_7_3_jj_8_4():
    """After a nullo deal ends, ``last_trick`` (its ninth trick, shown until the next deal's
    first trick is complete) is valued under that deal's contract: no last-trick 10 (JJ-7.3:
    "except in nullo") and no ``points`` (JJ-8.4), the card alone at no-trump (JJ-4.5, JJ-8.1,
    JJ-8.2: the highest of A/T 10, K/Q 5, any other 0)."""
    state = to_play(deal(**FAIL_NULLO_DEAL), "name:H", "pass", "nullo", "pass")
    auto_finish_deal(state)
    nt_value = {"A": 10, "T": 10, "K": 5, "Q": 5}
    last = state.public_view()["last_trick"]
    assert last["winner"] == 1 and last["points"] is None
    assert last["value"] == max(nt_value.get(p["card"][0], 0) for p in last["plays"])
    state.deal(make_deck(**PLAY_DEAL))  # the next deck: still the nullo deal's trick
    assert state.public_view()["last_trick"] == last


def test_no_exchange_offer_without_an_exchange_window_jj_4_2():
    """JJ-4.2: another suit named than the turn-up's (PLAY_DEAL turns up 8S; diamonds named)
    opens no window: neither seat's view has an ``exchange_offer`` (NOTATION 2.2: it is the
    seat's own legal set at its window step, and there is no step)."""
    state = deal(**PLAY_DEAL)
    act(state, "pass", "pass", "name:D", "pass")
    assert table(state)["exchange_window"] is False and state.public_view()["phase"] == "nullo"
    assert state.view(0)["table"]["exchange_offer"] is None and state.view(1)["table"]["exchange_offer"] is None

def test_exchange_offer_lists_each_seven_held_in_suit_order_jj_4_2():
    """JJ-4.2 / NOTATION 2.2: the exchanging seat's private ``exchange_offer`` is its legal set at
    the window step: one ``exchange:7X`` per seven it holds, suit order, then ``no_exchange`` (seat
    0 holds 7D and 7C, seat 1 no seven); the opponent sees none."""
    state = deal(**dict(EXCH_DEAL, nd=("AS", "KS", "7D", "AD", "KD", "7C")))
    act(state, "accept", "pass", "no_exchange")
    offer = ["exchange:7D", "exchange:7C", "no_exchange"]
    assert legal(state) == offer and state.view(0)["table"]["exchange_offer"] == offer
    assert state.view(1)["table"]["exchange_offer"] == ["no_exchange"]
    assert state.public_view()["table"]["exchange_offer"] is None
    act(state, "exchange:7D")  # docs/games/jojotte.md: the step's legal set "from that step on"
    assert state.view(0)["table"]["exchange_offer"] == offer and "7D" not in state.view(0)["hand"]

def test_view_names_the_non_dealer_and_nobody_to_act_between_deals_jj_2_2():
    """JJ-2.2: the deal alternates, and ``table.non_dealer`` is the other seat than ``dealer``
    (seat 1 deals first here, then seat 0); while the next deck is awaited nobody is to act:
    ``to_act`` is None (docs/api.md: unset while nobody can), not the CHANCE marker."""
    state = deal(**STRONG_DEAL)
    v = state.public_view()
    assert v["dealer"] == 1 and v["table"]["non_dealer"] == 0 and v["to_act"] == 0
    to_play(state, "name:S", "pass")
    auto_finish_deal(state)
    assert state.to_act() == CHANCE
    v = state.public_view()
    assert v["dealer"] == 0 and v["table"]["non_dealer"] == 1 and v["to_act"] is None

def test_view_contract_holder_of_a_nullo_is_the_defender_who_called_it_jj_4_3():
    """JJ-4.3 / JJ-4.5: the defender's nullo, not answered by a slam, makes him the holder of
    the contract; here seat 1 is declarer (he accepted the turn-up) and seat 0 holds the nullo."""
    state = deal(**PLAY_DEAL)
    act(state, "pass", "accept", "pass", "no_exchange", "no_exchange", "nullo", "pass")
    c = table(state)["contract"]
    assert (c["declarer"], c["defender"], c["kind"], c["holder"]) == (1, 0, "nullo", 0)

def test_secret_cards_hands_stock_and_what_is_revealed():
    state = deal(**EXCH_DEAL)
    z = state.zones()
    assert state.secret_cards(0) == z["hand1"] | z["stock"]
    assert state.secret_cards(None) == z["hand0"] | z["hand1"] | z["stock"]
    act(state, "accept", "pass", "no_exchange", "exchange:7S")
    z = state.zones()
    assert state.secret_cards(1) == (z["hand0"] & ~(1 << card_id("QH"))) | z["stock"]
    assert z["turn_up"] == 1 << card_id("7S") and z["info_card"] == 1 << card_id("9C")


def test_secret_cards_jo_shows_the_queen_of_the_trump_suit_only():
    """JJ-7.2: "jo" is legal only while its player holds the trump queen, so after it that queen
    is known to both; with hearts trump it is QH, and his other queens (QS, QD) stay secret
    (his sequences lose to seat 1's clubs, JJ-5.6: no card of his is shown by the melds)."""
    state = to_play(deal(**JO_DEAL), "name:H", "pass")  # seat 0 declares hearts
    act(state, "play:AC", "play:KH:jo")  # no club: he must trump (JJ-6.4)
    assert table(state)["jo"] == [0] and table(state)["melds"]["points"] == [0, 50]
    z = state.zones()
    assert {"QS", "QH", "QD"} <= set(state.view(0)["hand"])
    assert state.secret_cards(1) == (z["hand0"] & ~(1 << card_id("QH"))) | z["stock"]
    # the finished trick (game.py zones: card locations): both its cards in the winner's won
    # zone, neither in the stock nor among the secrets
    trick = (1 << card_id("AC")) | (1 << card_id("KH"))
    assert z["won0"] == trick and z["won1"] == 0 and not (z["stock"] | state.secret_cards(None)) & trick


def test_secret_cards_the_exchanged_turn_up_queen_stays_known_after_jo():
    """JJ-4.2 and JJ-7.2: seat 0 takes the turn-up QH (trump) by the exchange, a public event,
    then says "jo" with KH, which also shows he holds the trump queen: two reasons to know the
    same card. QH stays out of seat 1's secrets (it is no scored meld card here)."""
    layout = dict(EXCH_DEAL, nd=("AS", "KH", "7S", "AD", "KD", "QD"), dl=("AH", "KS", "JH", "TH", "AC", "KC"))
    state = deal(**layout)
    act(state, "accept", "pass", "no_exchange", "exchange:7S")
    to_play(state)
    act(state, "play:AC", "play:KH:jo")  # no club: he must trump (JJ-6.4)
    assert "QH" in state.view(0)["hand"] and table(state)["jo"] == [0]
    assert state.secret_cards(1) >> card_id("QH") & 1 == 0
    assert state.secret_cards(None) >> card_id("QH") & 1 == 0


def test_secret_cards_a_quartet_stated_in_the_meld_phase_is_known_at_once_jj_5_9_jj_a21():
    """docs/games/jojotte.md (secret_cards): the cards of a stated quartet ("quartet R" names all
    four) are no secret from the moment the statement is made (JJ-5.9), while the optional
    meld declarations of JJ-A21 still run, not only once the melds are settled."""
    state = deal({"jj_meld_declaration": "optional"}, nd=("KS", "KH", "KD", "KC", "AS", "AH"),
                 nd2=("7D", "8D", "9D"), dl=("JS", "TS", "9S", "QH", "JH", "TH"), dl2=("QC", "JC", "TC"),
                 turn="7C", info="8C")
    act(state, "pass", "accept")  # seat 1 declares: seat 0, the defender, states first
    while state.public_view()["phase"] != "melds":
        state.apply(GAME.auto_move(state.view(state.to_act())))
    kings = sum(1 << card_id(c) for c in ("KS", "KH", "KD", "KC"))
    assert state.secret_cards(1) & kings == kings and state.secret_cards(None) & kings == kings
    act(state, "declare")
    assert table(state)["melds"]["dialogue"] == [{"seat": 0, "say": "quartet K"}]
    assert state.public_view()["phase"] == "melds"
    assert state.secret_cards(1) & kings == 0 and state.secret_cards(None) & kings == 0


def test_melds_scored_are_public_loser_statements_only():
    state = to_play(deal(**MELD_LOSER_DEAL), "name:S", "pass")
    melds = table(state)["melds"]
    scored = [d for d in melds["dialogue"] if d["say"] == "scores"]
    assert scored == [{"seat": 1, "say": "scores", "points": 50, "sequences": [
        {"suit": "H", "top": "K", "length": 5, "cards": ["KH", "QH", "JH", "TH", "9H"], "is_trump": False,
         "points": 50}]}]
    assert state.secret_cards(0) & (1 << card_id("KH")) == 0


def test_no_view_ever_leaks_under_every_option_set():
    from .checks_jojotte import OPTION_SETS

    for opts in [{}] + OPTION_SETS:
        for state in iter_states(GAME, 42, opts):
            for seat in (0, 1):
                secret = state.secret_cards(seat)
                assert not {c for c in cards_in(state.view(seat)) if secret >> c & 1}
            break


def test_zones_cover_the_pack_and_are_empty_between_deals():
    state = deal(**PLAY_DEAL)
    z = state.zones()
    assert sum(bin(m).count("1") for m in z.values()) == 32
    act(state, "pass", "pass", "pass", "pass")
    assert state.to_act() == CHANCE and state.zones() == {}
    # JJ-3.6: the thrown-in hands are gone with the deal: no cards counted in any hand
    assert state.public_view()["hand_sizes"] == [0, 0] and state.view(0)["hand"] == []
    # and the running records of a deal are empty between deals (the keys stay)
    t = table(state)
    assert t["jo_jotte"] == [0, 0] and t["trick_points"] == [0, 0] and t["tricks"] == []
    assert state.public_view()["tricks_taken"] == [0, 0]


def test_the_final_views_name_the_match_winners_jj_10_5():
    """JJ-10.5: once the match is over every audience's view is ``over`` (phase ``over`` too,
    docs/games/jojotte.md, Phases) and names the winners that ``result()`` names."""
    finished = random_match(GAME, 3)
    winners = finished.result()["winners"]
    assert winners
    for v in (finished.view(0), finished.view(1), finished.public_view()):
        assert v["over"] is True and v["phase"] == "over" and v["winners"] == winners


def test_every_views_totals_are_the_match_score_columns_below_and_above():
    """game.py (``totals``: the match score as in NOTATION section 4) and docs/games/jojotte.md
    (``result()["totals"]``: ``{"below", "above", "games_won"}``): a view's totals are the
    result's, column by column, the same as ``table.match`` shows, during and after the match."""
    state = deal(**STRONG_DEAL)
    to_play(state, "name:S", "pass")
    auto_finish_deal(state)
    for st in (state, random_match(GAME, 3)):
        totals = st.result()["totals"]
        assert totals["below"] != totals["above"]  # a swapped column would show
        for v in (st.view(0), st.view(1), st.public_view()):
            m = v["table"]["match"]
            assert v["totals"] == totals == {"below": m["below"], "above": m["above"], "games_won": m["games_won"]}


def test_clone_is_independent():
    state = to_play(deal(**PLAY_DEAL), "accept", "pass")
    c = state.clone()
    c.apply("play:KH")
    assert state.view(1)["trick"] == [] and c.view(1)["trick"] != []
    assert state.legal_actions() != c.legal_actions()
    assert c.clone().view(0) == c.view(0)


def test_deal_number_and_results_grow():
    state = deal(**STRONG_DEAL)
    assert state.view(0)["deal_number"] == 0
    to_play(state, "name:S", "pass")
    auto_finish_deal(state)
    assert state.view(0)["deal_number"] == 1 and len(state.view(0)["deal_results"]) == 1
    assert state.view(0)["phase"] == "deal" and state.view(0)["hand"] == []


# ---- auto-move (NOTATION section 5) -------------------------------------------------------------------

def test_auto_move_passes_and_declines():
    state = deal(**EXCH_DEAL)
    assert GAME.auto_move(state.view(0)) == "pass"
    act(state, "accept")
    assert GAME.auto_move(state.view(1)) == "pass"
    act(state, "pass", "no_exchange")
    assert GAME.auto_move(state.view(0)) == "no_exchange"
    act(state, "no_exchange")
    assert GAME.auto_move(state.view(1)) == "pass"
    act(state, "nullo")
    assert GAME.auto_move(state.view(0)) == "pass"


def test_auto_move_plays_the_lowest_trick_rank_trump_above_plain_suit_order_ties():
    state = to_play(deal(**JO_DEAL), "name:S", "pass")
    # seat 1: AS TS 9S AC KC QC JC TC 9C: the lowest plain card is the 9C
    assert GAME.auto_move(state.view(1)) == "play:9C"
    act(state, "play:AC")
    # seat 0 must trump with KS QS JS: the lowest trump is the queen, never "jo"
    assert GAME.auto_move(state.view(0)) == "play:QS"
    state = to_play(deal(**STRONG_DEAL), "pass", "pass", "no_trump", "pass")
    # NT: seat 1 KH QH JH TH 9H AD KD QD JD: the nines and jacks tie at the bottom -> 9H
    assert GAME.auto_move(state.view(1)) == "play:9H"


def test_auto_move_needs_the_acting_seat():
    state = deal(**PLAY_DEAL)
    with pytest.raises(ValueError):
        GAME.auto_move(state.view(1))


def test_auto_move_finishes_deals_after_any_auction():
    """Auto-moves are legal everywhere; mixed with random calls they finish whole matches (an
    all-auto auction passes four times: a thrown-in deal, JJ-3.6)."""
    rng = random.Random(1)
    state = GAME.new_state({}, first_dealer=0)
    while not state.is_over():
        if state.to_act() == CHANCE:
            deck = list(PACK32)
            rng.shuffle(deck)
            state.deal(deck)
            continue
        seat = state.to_act()
        view = state.view(seat)
        move = GAME.auto_move(view) if view["phase"] == "play" else rng.choice(view["legal"])
        assert move in view["legal"]
        state.apply(move, seat)
    assert state.result()["winners"]
    state = deal(**PLAY_DEAL)
    for _ in range(4):
        state.apply(GAME.auto_move(state.view(state.to_act())))
    assert state.deal_results() == [{"thrown_in": True}]


# ---- last_trick across deals (game.py's view keys; JJ-6.6, JJ-7.3, JJ-8.2, JJ-3.6) -----------------

def _jj_play(seat: int, action: str) -> dict:
    play = {"seat": seat, "card": action.split(":")[1]}
    if action.count(":") == 2:
        play["announce"] = action.split(":")[2]
    return play


def _jj_final(state, before: dict, last: dict) -> None:
    """The ninth trick: its leader, and its value (JJ-8.2, with JJ-7.3's 10 for the last
    trick) in the winner's trick points of the deal's breakdown against the view before the
    final card (a nullo deal scores no trick points)."""
    w = last["winner"]
    assert last["leader"] == last["plays"][0]["seat"]
    after = state.public_view()["table"]["last_deal"]["trick_points"]
    if before["table"]["contract"]["kind"] != "nullo":
        assert last["value"] == after[w] - before["table"]["trick_points"][w]
        assert last["value"] >= 10


@pytest.mark.parametrize("options", [{}] + OPTION_SETS)
def test_JJ_7_3_last_trick_is_the_previous_deals_ninth_until_the_first_trick_and_none_after_JJ_3_6(options):
    """Every audience's ``last_trick`` after the final card of a deal, while the next deck is
    due, after it is dealt (auction, windows, melds: no trick in ``table.tricks``) and in the
    final views of the match is the deal's ninth trick: its plays, its winner (JJ-6.6: from the
    deal's trick counts), its value; after a thrown-in deal (JJ-3.6) it is None, never an
    earlier deal's; the next deal's first complete trick replaces it. Determinization at a
    deal's start restores it (also from the plays alone, as a remote bot rebuilds the view)."""
    seen = Counter()
    for seed in range(4):
        seen += check_deal_boundaries(GAME, 600 + seed, options, play_of=_jj_play,
                                      taken_after=lambda st: st.public_view()["table"]["last_deal"]["tricks"],
                                      deal_has_no_trick=lambda v: v["table"]["tricks"] == [],
                                      check_final=_jj_final, determinize_every=3, pass_bias=0.5)
    assert seen["final_tricks"] >= 10 and seen["first_tricks"] >= 10 and seen["thrown_in"] >= 1, seen
    assert seen["determinized"] >= 3
