"""Independent rules audit of the Jo-Jotte engine against shared/rules/jojotte.md and NOTATION.md.

Two kinds of checks:

* **Scenarios** with readable card codes. Decks are built here from the rulebook's dealing
  procedure itself (JJ-2.4 to JJ-2.8: pairs non-dealer first, ``D[12]`` turn-up, ``D[13..15]`` /
  ``D[16..18]`` second deal, ``D[31]`` information card), not from the engine's position tables;
  every expected legal set and result below was worked out by hand from the rulebook and is
  written in NOTATION 4's exact JSON.
* **A differential referee**: :mod:`tests.rules.jojotte_oracle`, a slow literal transcription of
  the rulebook sharing no code with the engine, replays the sample transcripts and random
  matches side by side with the engine under many option sets; every legal set (as a set,
  NOTATION 3), every deal result and the match result must be equal.
"""

from __future__ import annotations

import json
import random

import pytest

from engine_service.rules import CHANCE, TERMINAL, get_game
from engine_service.rules.cards import CODES, PACK32

from .jojotte_oracle import PLAIN_ORDER, SUITS, TRUMP_ORDER, OracleMatch
from tests.shared_paths import transcripts

GAME = get_game("jojotte")
ALL_CODES = [CODES[c] for c in PACK32]


# ---- decks by the rulebook's own dealing procedure ------------------------------------------

def rulebook_deck(dealer, first, turn, second, info="7C", stock=()):
    """The deck (top card first) that deals ``first[seat]`` (six cards) and ``second[seat]``
    (three cards) under the default procedure: D[0..1] non-dealer, D[2..3] dealer, D[4..5]
    non-dealer, D[6..7] dealer, D[8..9] non-dealer, D[10..11] dealer (JJ-2.4); D[12] turn-up
    (JJ-2.5); D[13..15] non-dealer, D[16..18] dealer (JJ-2.6); D[31] information card (JJ-2.7);
    ``stock`` then the unused cards fill D[19..30] (JJ-2.8)."""
    nd, dl = 1 - dealer, dealer
    deck = [None] * 32
    for k in range(3):
        deck[4 * k:4 * k + 2] = first[nd][2 * k:2 * k + 2]
        deck[4 * k + 2:4 * k + 4] = first[dl][2 * k:2 * k + 2]
    deck[12] = turn
    deck[13:16] = second[nd]
    deck[16:19] = second[dl]
    deck[31] = info
    placed = [c for c in deck if c is not None] + list(stock)
    assert len(set(placed)) == len(placed), "a card is placed twice"
    rest = list(stock) + [c for c in ALL_CODES if c not in placed]
    for i in range(19, 31):
        deck[i] = rest.pop(0)
    assert sorted(deck) == sorted(ALL_CODES)
    return deck


# Seat 0 holds every spade and the ace of hearts; seat 1 K-Q-J-T-9 of hearts and A-K-Q-J of
# diamonds. Turn-up 7D.
STRONG = {0: ("JS", "9S", "AS", "TS", "KS", "QS"), 1: ("KH", "QH", "JH", "TH", "9H", "AD")}
STRONG2 = {0: ("8S", "7S", "AH"), 1: ("KD", "QD", "JD")}


def strong_deck(dealer):
    return rulebook_deck(dealer, STRONG, "7D", STRONG2)


# A no-trump deal without melds that ends 35-35 (found by search, checked by hand): seat 0
# (non-dealer, declarer at NT) holds KH KC AH QD 8D KS + AD 9S TS, seat 1 QS JC 7D AC JD TH +
# 8H 8S TD; seat 1 leads. Tricks: 8S-9S (0, seat 0), AH-TH (10, 0), TS-QS (10, 0), QD-TD
# (10, seat 1: must beat), AC-KC (10, 1), 7D-AD (10, 0), KS-8H (5, 0), 8D-JD (0, 1), JC-KH
# (5 + 10 last, 1): seat 0 5 tricks 35, seat 1 4 tricks 35.
TIE_DECK = ("KH KC QS JC AH QD 7D AC 8D KS JD TH TC AD 9S TS 8H 8S TD KD AS JS 9C 9D 7C JH QH "
            "7S QC 9H 7H 8C").split()
TIE_PLAYS = ["8S", "9S", "AH", "TH", "TS", "QS", "QD", "TD", "AC", "KC", "7D", "AD", "KS", "8H",
             "8D", "JD", "JC", "KH"]

# Deal A play (seat 0 declarer in spades, seat 1 leads): 10+20+15+10+10+10+5+5+(0+10) = 95.
STRONG_SPADES_PLAY = [(1, "KH"), (0, "AH"), (0, "JS"), (1, "9H"), (0, "9S"), (1, "QH"), (0, "AS"),
                      (1, "JH"), (0, "TS"), (1, "TH"), (0, "KS:jo"), (1, "AD"), (0, "QS:jotte"),
                      (1, "KD"), (0, "8S"), (1, "QD"), (0, "7S"), (1, "JD")]
# Seat 1 declares clubs (he holds none), seat 0 leads every spade then AH: 75, all nine tricks.
STRONG_CLUBS_PLAY = [(0, "AS"), (1, "JD"), (0, "KS"), (1, "QD"), (0, "QS"), (1, "KD"), (0, "JS"),
                     (1, "AD"), (0, "TS"), (1, "9H"), (0, "9S"), (1, "JH"), (0, "8S"), (1, "TH"),
                     (0, "7S"), (1, "QH"), (0, "AH"), (1, "KH")]


def play(state, script):
    for seat, card in script:
        state.apply("play:" + card, seat)


def steps(state, *pairs):
    """Apply (seat, action, expected legal set or None) triples."""
    for seat, action, legal in pairs:
        assert state.to_act() == seat, (action, state.to_act())
        if legal is not None:
            got = state.legal_actions()
            assert len(got) == len(set(got))
            assert set(got) == set(legal), (action, got)
        state.apply(action, seat)


def new(options=None, first_dealer=1):
    return GAME.new_state(options or {}, first_dealer=first_dealer)


R1_TURN_D = ["accept", "name:S", "name:H", "name:C", "pass"]
R2_ALL = ["name:S", "name:H", "name:D", "name:C", "no_trump", "pass"]


# ---- JJ-2: dealing ---------------------------------------------------------------------------

def test_JJ_2_4_to_2_7_default_dealing_positions_seat_1_non_dealer():
    """first_dealer = 0: seat 1 is the non-dealer and gets D[0..1], D[4..5], D[8..9] and
    D[13..15]; the information card is the bottom card D[31]."""
    deck = list(ALL_CODES)  # AS KS QS JS TS 9S 8S 7S AH KH ...
    state = new(first_dealer=0)
    state.deal(deck)
    view1, view0 = state.view(1), state.view(0)
    assert set(view1["hand"]) == {deck[i] for i in (0, 1, 4, 5, 8, 9)}
    assert set(view0["hand"]) == {deck[i] for i in (2, 3, 6, 7, 10, 11)}
    t = state.public_view()["table"]
    assert t["turn_up"] == deck[12] and t["info_card"] is None
    assert state.to_act() == 1  # R1_ND: the non-dealer
    steps(state, (1, "accept", None), (0, "pass", None))
    assert set(state.view(1)["hand"]) == {deck[i] for i in (0, 1, 4, 5, 8, 9, 13, 14, 15)}
    assert set(state.view(0)["hand"]) == {deck[i] for i in (2, 3, 6, 7, 10, 11, 16, 17, 18)}
    assert state.public_view()["table"]["info_card"] == deck[31]


@pytest.mark.parametrize("first, second, info, nd_pos, dl_pos, info_pos", [
    (1, 1, "next", (0, 2, 4, 6, 8, 10, 13, 15, 17), (1, 3, 5, 7, 9, 11, 14, 16, 18), 19),
    (3, 3, "bottom", (0, 1, 2, 6, 7, 8, 13, 14, 15), (3, 4, 5, 9, 10, 11, 16, 17, 18), 31),
])
def test_JJ_A3_A4_packet_and_information_card_options(first, second, info, nd_pos, dl_pos, info_pos):
    opts = {"jj_first_deal_packet": first, "jj_second_deal_packet": second, "jj_info_card": info}
    deck = list(ALL_CODES)
    state = new(opts, first_dealer=1)
    state.deal(deck)
    steps(state, (0, "accept", None), (1, "pass", None))
    assert set(state.view(0)["hand"]) == {deck[i] for i in nd_pos}
    assert set(state.view(1)["hand"]) == {deck[i] for i in dl_pos}
    assert state.public_view()["table"]["info_card"] == deck[info_pos]


def test_JJ_3_6_and_JJ_2_2_thrown_in_deal_same_dealer_then_alternation():
    state = new(first_dealer=0)
    assert state.dealer() == 0
    state.deal(strong_deck(0))
    steps(state, (1, "pass", R1_TURN_D), (0, "pass", R1_TURN_D), (1, "pass", R2_ALL),
          (0, "pass", R2_ALL))
    assert state.deal_results() == [{"thrown_in": True}]
    assert state.to_act() == CHANCE and state.dealer() == 0  # JJ-A5: the same dealer
    state.deal(strong_deck(0))
    assert state.to_act() == 1  # the auction restarts at R1_ND
    state2 = new({"jj_throw_in_redealer": "other"}, first_dealer=0)
    state2.deal(strong_deck(0))
    for seat in (1, 0, 1, 0):
        state2.apply("pass", seat)
    assert state2.dealer() == 1


# ---- JJ-3: the auction state machine ----------------------------------------------------------

def test_JJ_3_1_round_one_excludes_the_turn_up_suit_round_two_allows_every_suit():
    state = new()
    state.deal(strong_deck(1))  # turn-up 7D
    steps(state, (0, "pass", R1_TURN_D), (1, "pass", R1_TURN_D), (0, "pass", R2_ALL),
          (1, "name:D", R2_ALL), (0, "pass", ["no_trump", "double", "pass"]))
    # named turn-up suit, but the turn-up is a seven: no exchange window -> nullo window
    assert state.to_act() == 0 and set(state.legal_actions()) == {"nullo", "pass"}


def test_JJ_3_2_no_trump_overcall_then_double_then_redouble_ends_the_auction():
    state = new()
    state.deal(strong_deck(1))
    steps(state, (0, "accept", R1_TURN_D),
          (1, "no_trump", ["no_trump", "double", "pass"]),  # JJ-3.2 / JJ-A36: accept overcallable
          (0, "double", ["double", "pass"]),  # NT is never overcalled
          (1, "redouble", ["redouble", "pass"]))
    t = state.public_view()["table"]
    assert t["contract"]["strain"] == "NT" and t["contract"]["multiplier"] == 4
    assert t["contract"]["declarer"] == 1
    assert state.to_act() == 0 and set(state.legal_actions()) == {"nullo", "pass"}


def test_JJ_3_3_pass_after_double_keeps_two():
    state = new()
    state.deal(strong_deck(1))
    steps(state, (0, "name:S", None), (1, "double", ["no_trump", "double", "pass"]),
          (0, "pass", ["redouble", "pass"]))
    assert state.public_view()["table"]["contract"]["multiplier"] == 2


@pytest.mark.parametrize("options, r1, r2, resp_after_accept", [
    ({"jj_round1_calls": "accept_pass"}, ["accept", "pass"], R2_ALL, ["no_trump", "double", "pass"]),
    ({"jj_round2_turnup_suit": "forbidden"}, R1_TURN_D, ["name:S", "name:H", "name:C", "no_trump", "pass"],
     ["no_trump", "double", "pass"]),
    ({"jj_overcall_accepted_turnup": False}, R1_TURN_D, R2_ALL, ["double", "pass"]),
    ({"jj_double_timing": "end_of_auction"}, R1_TURN_D, R2_ALL, ["no_trump", "pass"]),
])
def test_JJ_A6_A7_A8_A36_auction_options_change_the_legal_sets(options, r1, r2, resp_after_accept):
    state = new(options)
    state.deal(strong_deck(1))
    steps(state, (0, "pass", r1), (1, "pass", r1), (0, "pass", r2), (1, "pass", r2))
    state.deal(strong_deck(1))
    steps(state, (0, "accept", r1), (1, "pass", resp_after_accept))


def test_JJ_A8_end_of_auction_double_comes_after_the_last_bid():
    state = new({"jj_double_timing": "end_of_auction"})
    state.deal(strong_deck(1))
    steps(state, (0, "name:S", None), (1, "no_trump", ["no_trump", "pass"]),
          (0, "pass", ["pass"]),  # NT: nothing but pass in RESP
          (0, "double", ["double", "pass"]),  # the defender's one late double call
          (1, "redouble", ["redouble", "pass"]))
    t = state.public_view()["table"]
    assert t["contract"]["multiplier"] == 4 and t["info_card"] == "7C"


# ---- JJ-4.2 / NOTATION 2.2: the seven-exchange window -------------------------------------------

def exchange_deck(seat0_first, seat1_first, seat0_second, seat1_second, turn="8H"):
    return rulebook_deck(1, {0: seat0_first, 1: seat1_first}, turn, {0: seat0_second, 1: seat1_second},
                         info="9C")


# seat 0 (non-dealer): 7S and (second deal) 7C; seat 1: no seven; 7H and 7D in the stock
ONE_HOLDER = exchange_deck(("7S", "AS", "KS", "QS", "AH", "KH"), ("JS", "TS", "QH", "JH", "AD", "KD"),
                           ("7C", "AC", "KC"), ("QC", "JC", "TC"))


def test_JJ_4_2_only_holder_of_sevens_offers_each_in_suit_order_defender_first():
    state = new()
    state.deal(ONE_HOLDER)
    steps(state, (0, "accept", None), (1, "pass", None),
          (1, "no_exchange", ["no_exchange"]),  # the defender first
          (0, "exchange:7C", ["exchange:7S", "exchange:7C", "no_exchange"]))
    assert state.legal_actions() == ["nullo", "pass"] and state.to_act() == 1
    assert "8H" in state.view(0)["hand"] and "7C" not in state.view(0)["hand"]
    t = state.public_view()["table"]
    assert t["turn_up"] == "7C" and t["exchange"] == {"seat": 0, "seven": "7C", "turn_up": "8H"}


def test_JJ_4_2_the_defender_may_be_the_exchanger_and_round_two_naming_opens_the_window():
    state = new()
    state.deal(ONE_HOLDER)
    steps(state, (0, "pass", None), (1, "pass", None), (0, "pass", None), (1, "name:H", R2_ALL),
          (0, "pass", None),
          (0, "exchange:7S", ["exchange:7S", "exchange:7C", "no_exchange"]),
          (1, "no_exchange", ["no_exchange"]))
    assert "8H" in state.view(0)["hand"]


@pytest.mark.parametrize("seat1_second", [("QC", "JC", "7D"), ("QC", "JC", "TC")],
                         ids=["both_hold", "neither_holds_after_swap"])
def test_JJ_4_2_both_hold_sevens_or_neither_both_steps_no_exchange(seat1_second):
    first0 = ("7S", "AS", "KS", "QS", "AH", "KH")
    second0 = ("7C", "AC", "KC")
    if seat1_second[2] == "TC":  # neither: seat 0 gets no seven either
        first0 = ("8S", "AS", "KS", "QS", "AH", "KH")
        second0 = ("8C", "AC", "KC")
    deck = exchange_deck(first0, ("JS", "TS", "QH", "JH", "AD", "KD"), second0, seat1_second)
    state = new()
    state.deal(deck)
    steps(state, (0, "accept", None), (1, "pass", None),
          (1, "no_exchange", ["no_exchange"]))
    # the window exists (turn-up suit is trump, the turn-up no seven) though nobody may exchange
    assert state.public_view()["table"]["exchange_window"] is True
    assert state.view(1)["table"]["exchange_offer"] == ["no_exchange"]  # his step's legal set
    steps(state, (0, "no_exchange", ["no_exchange"]))
    assert state.legal_actions() == ["nullo", "pass"]


def test_JJ_4_2_no_window_for_another_suit_no_trump_or_a_seven_turn_up():
    for calls in (("name:S", "pass"), ("pass", "pass", "no_trump", "pass")):
        state = new()
        state.deal(ONE_HOLDER)
        for a in calls:
            state.apply(a)
        assert set(state.legal_actions()) == {"nullo", "pass"}
    seven_turn = exchange_deck(("8S", "AS", "KS", "QS", "AH", "KH"), ("JS", "TS", "QH", "JH", "AD", "KD"),
                               ("7C", "AC", "KC"), ("QC", "JC", "TC"), turn="7H")
    state = new()
    state.deal(seven_turn)
    steps(state, (0, "accept", None), (1, "pass", None), (1, "pass", ["nullo", "pass"]))


def test_JJ_4_2_option_trump_seven_and_none():
    # seat 1 holds 7H (trump) and seat 0 7S and 7C: only the trump seven counts, no both-clause
    deck = exchange_deck(("7S", "AS", "KS", "QS", "AH", "KH"), ("JS", "TS", "QH", "JH", "AD", "7H"),
                         ("7C", "AC", "KC"), ("QC", "JC", "TC"), turn="8H")
    state = new({"jj_seven_exchange": "trump_seven"})
    state.deal(deck)
    steps(state, (0, "accept", None), (1, "pass", None),
          (1, "exchange:7H", ["exchange:7H", "no_exchange"]), (0, "no_exchange", ["no_exchange"]))
    assert "8H" in state.view(1)["hand"]
    state = new({"jj_seven_exchange": "none"})
    state.deal(ONE_HOLDER)
    steps(state, (0, "accept", None), (1, "pass", None), (1, "pass", ["nullo", "pass"]))


def test_JJ_A10_until_first_lead_exchange_at_later_turns_without_ending_them():
    state = new({"jj_exchange_window": "until_first_lead"})
    state.deal(ONE_HOLDER)
    steps(state, (0, "pass", None), (1, "pass", None), (0, "pass", None), (1, "name:H", None),
          (0, "pass", None), (0, "no_exchange", None), (1, "no_exchange", None))
    # seat 0 is the defender: his nullo-window turn also offers the late exchange
    assert set(state.legal_actions()) == {"nullo", "pass", "exchange:7S", "exchange:7C"}
    steps(state, (0, "exchange:7S", None))
    assert state.to_act() == 0 and set(state.legal_actions()) == {"nullo", "pass"}
    assert state.public_view()["table"]["turn_up"] == "7S"


# ---- JJ-4.3 to 4.5: nullo and slam ----------------------------------------------------------------

@pytest.mark.parametrize("options, calls, answer", [
    ({}, ("name:S", "pass"), ["slam:S", "pass"]),
    ({}, ("pass", "pass", "no_trump", "pass"), ["slam:NT", "pass"]),
    ({"jj_slam_strain": "suit_or_no_trump"}, ("name:S", "pass"), ["slam:S", "slam:NT", "pass"]),
    ({"jj_slam_strain": "suit_or_no_trump"}, ("pass", "pass", "no_trump", "pass"), ["slam:NT", "pass"]),
])
def test_JJ_4_4_slam_answer_legal_sets(options, calls, answer):
    state = new(options)
    state.deal(strong_deck(1))
    for a in calls:
        state.apply(a)
    declarer = state.public_view()["table"]["contract"]["declarer"]
    steps(state, (1 - declarer, "nullo", ["nullo", "pass"]), (declarer, answer[0], answer))
    assert state.public_view()["table"]["contract"]["kind"] == "slam"


# ---- full deals: results exactly as NOTATION 4 -------------------------------------------------------

def test_JJ_7_2_jo_jotte_legality_and_JJ_9_3a_declarer_made_with_unbid_slam():
    state = new()
    state.deal(strong_deck(1))
    steps(state, (0, "name:S", R1_TURN_D), (1, "pass", ["no_trump", "double", "pass"]),
          (1, "pass", ["nullo", "pass"]))
    assert state.to_act() == 1  # JJ-6.1: the defender leads
    play(state, STRONG_SPADES_PLAY[:10])
    # trick 6: seat 0 leads; KS with or without jo (he holds QS), no jotte before a jo
    assert set(state.legal_actions()) == {"play:KS", "play:KS:jo", "play:QS", "play:8S", "play:7S"}
    play(state, STRONG_SPADES_PLAY[10:12])
    assert set(state.legal_actions()) == {"play:QS", "play:QS:jotte", "play:8S", "play:7S"}
    play(state, STRONG_SPADES_PLAY[12:])
    # melds: seat 0's eight-card spade run (50) beats seat 1's K-Q-J-T-9 of hearts; jo-jotte 20;
    # trick points 95; all nine tricks without a slam bid: 100 above (JJ-7.4)
    assert state.deal_results() == [{
        "thrown_in": False, "contract": {"kind": "normal", "strain": "S", "holder": 0, "multiplier": 1},
        "trick_points": [95, 0], "below": [165, 0], "above": [100, 0], "pot": 0}]
    assert state.result() == {"totals": {"below": [165, 0], "above": [100, 0], "games_won": [1, 0]},
                              "winners": [], "over": False}


def test_JJ_9_4_redoubled_declarer_enters_both_trick_points_times_four():
    state = new()
    state.deal(strong_deck(1))
    steps(state, (0, "name:S", None), (1, "double", None), (0, "redouble", None), (1, "pass", None))
    play(state, STRONG_SPADES_PLAY)
    assert state.deal_results()[-1] == {
        "thrown_in": False, "contract": {"kind": "normal", "strain": "S", "holder": 0, "multiplier": 4},
        "trick_points": [95, 0], "below": [50 + 20 + 95 * 4, 0], "above": [100, 0], "pot": 0}


def test_JJ_9_6_slam_made_500_above_no_unbid_premium():
    state = new()
    state.deal(strong_deck(1))
    steps(state, (0, "name:S", None), (1, "pass", None), (1, "nullo", ["nullo", "pass"]),
          (0, "slam:S", ["slam:S", "pass"]))
    assert state.to_act() == 1  # the slam player's opponent leads
    play(state, STRONG_SPADES_PLAY)
    assert state.deal_results()[-1] == {
        "thrown_in": False, "contract": {"kind": "slam", "strain": "S", "holder": 0, "multiplier": 1},
        "trick_points": [95, 0], "below": [165, 0], "above": [500, 0], "pot": 0}


def test_JJ_9_6_failed_slam_500_to_the_opponent_deal_scored_normally():
    """Seat 1 (dealer) names hearts; seat 0 calls nullo; seat 1 answers slam:H and loses the
    second trick to seat 0's AH (a trump, forced: void in diamonds). Trick points 10 / 90;
    seat 0's spade run (50) beats seat 1's trump K-Q-J-T-9 on length; 60 < 90: declarer more."""
    state = new()
    state.deal(strong_deck(1))
    steps(state, (0, "pass", None), (1, "name:H", R1_TURN_D), (0, "pass", None),
          (0, "nullo", ["nullo", "pass"]), (1, "slam:H", ["slam:H", "pass"]))
    assert state.to_act() == 0
    state.apply("play:JS", 0)
    # JJ-6.4: void in spades, any trump; KH may carry "jo" (he holds QH, JJ-7.2)
    assert set(state.legal_actions()) == {"play:KH", "play:KH:jo", "play:QH", "play:JH", "play:TH",
                                          "play:9H"}
    state.apply("play:9H", 1)
    state.apply("play:KD", 1)
    assert state.legal_actions() == ["play:AH"]
    play(state, [(0, "AH"), (0, "9S"), (1, "TH"), (1, "AD"), (0, "7S"), (1, "QD"), (0, "8S"),
                 (1, "JD"), (0, "QS"), (1, "KH"), (0, "KS"), (1, "QH"), (0, "TS"), (1, "JH"), (0, "AS")])
    assert state.deal_results()[-1] == {
        "thrown_in": False, "contract": {"kind": "slam", "strain": "H", "holder": 1, "multiplier": 1},
        "trick_points": [10, 90], "below": [50, 90], "above": [500, 0], "pot": 0}
    assert state.result()["totals"]["games_won"] == [0, 1]


def test_JJ_9_7_nullo_made_200_above_multiplier_reported_trick_points_zero():
    state = new()
    state.deal(strong_deck(1))
    steps(state, (0, "name:S", None), (1, "double", None), (0, "pass", None),
          (1, "nullo", None), (0, "pass", ["slam:S", "pass"]))
    assert state.to_act() == 0  # JJ-6.1: the declarer leads against the nullo player
    # no trump at nullo (JJ-4.5 default NT): seat 1, void in spades, may discard anything
    state.apply("play:AS", 0)
    assert len(state.legal_actions()) == 9
    play(state, [(1, "KH"), (0, "KS"), (1, "QH"), (0, "QS"), (1, "JH"), (0, "JS"), (1, "TH"),
                 (0, "TS"), (1, "AD"), (0, "9S"), (1, "KD"), (0, "8S"), (1, "QD"), (0, "7S"),
                 (1, "JD"), (0, "AH")])
    assert state.legal_actions() == ["play:9H"]
    state.apply("play:9H", 1)
    assert state.deal_results()[-1] == {
        "thrown_in": False, "contract": {"kind": "nullo", "strain": "NT", "holder": 1, "multiplier": 2},
        "trick_points": [0, 0], "below": [0, 0], "above": [0, 200], "pot": 0}


def test_JJ_9_7_nullo_failed_five_tricks_600_to_the_opponent():
    state = new()
    state.deal(strong_deck(1))
    steps(state, (0, "pass", None), (1, "name:H", None), (0, "pass", None), (0, "nullo", None),
          (1, "pass", ["slam:H", "pass"]))
    assert state.to_act() == 1
    play(state, [(1, "AD"), (0, "7S"), (1, "KD"), (0, "8S"), (1, "QD"), (0, "9S"), (1, "JD"), (0, "TS"),
                 (1, "KH")])
    assert state.legal_actions() == ["play:AH"]  # must follow and beat (JJ-6.3)
    play(state, [(0, "AH"), (0, "AS"), (1, "QH"), (0, "KS"), (1, "JH"), (0, "QS"), (1, "TH"),
                 (0, "JS"), (1, "9H")])
    assert state.deal_results()[-1] == {
        "thrown_in": False, "contract": {"kind": "nullo", "strain": "NT", "holder": 0, "multiplier": 1},
        "trick_points": [0, 0], "below": [0, 0], "above": [0, 200 + 100 * 4], "pot": 0}


def test_whole_match_tie_pot_thrown_in_pot_settled_two_best_tricks_rubber_bonus_and_end():
    """Deal 1 (dealer 1): a 35-35 no-trump tie, 70 frozen (JJ-9.3c). Deal 2 (dealer 0): thrown
    in, same dealer. Deal 3 (dealer 0): seat 0 wins the comparison and enters the pot (JJ-9.5)
    with melds 50, jo-jotte 20, trick points 95: 235, first game. Deal 4 (dealer 1): seat 1
    names clubs, seat 0 takes all nine (75): the defender enters his two best tricks 20 + 10
    plus his 50 of melds = 80, the second game: the 300 rubber bonus goes in this deal's
    ``above`` with the unbid slam 100, and the one-rubber match is over (JJ-10.3, JJ-10.5)."""
    state = new(first_dealer=1)
    expect = []
    # deal 1: the tie
    assert state.dealer() == 1
    state.deal(TIE_DECK)
    steps(state, (0, "pass", ["accept", "name:S", "name:H", "name:D", "pass"]), (1, "pass", None),
          (0, "no_trump", None), (1, "pass", ["double", "pass"]), (1, "pass", ["nullo", "pass"]))
    for card in TIE_PLAYS:
        state.apply("play:" + card)
    expect.append({"thrown_in": False, "contract": {"kind": "normal", "strain": "NT", "holder": 0,
                                                   "multiplier": 1},
                   "trick_points": [35, 35], "below": [0, 0], "above": [0, 0], "pot": 70})
    assert state.deal_results() == expect
    # deal 2: thrown in
    assert state.dealer() == 0
    state.deal(strong_deck(0))
    for s in (1, 0, 1, 0):
        state.apply("pass", s)
    expect.append({"thrown_in": True})
    assert state.deal_results() == expect
    assert state.result()["totals"] == {"below": [0, 0], "above": [0, 0], "games_won": [0, 0]}
    # deal 3: seat 0 deals, seat 1 leads
    assert state.dealer() == 0
    state.deal(strong_deck(0))
    steps(state, (1, "pass", R1_TURN_D), (0, "name:S", R1_TURN_D), (1, "pass", None), (1, "pass", None))
    play(state, STRONG_SPADES_PLAY)
    expect.append({"thrown_in": False, "contract": {"kind": "normal", "strain": "S", "holder": 0,
                                                   "multiplier": 1},
                   "trick_points": [95, 0], "below": [50 + 20 + 95 + 70, 0], "above": [100, 0], "pot": 0})
    assert state.deal_results() == expect
    assert state.result()["totals"]["games_won"] == [1, 0]
    # deal 4
    assert state.dealer() == 1
    state.deal(strong_deck(1))
    steps(state, (0, "pass", None), (1, "name:C", R1_TURN_D), (0, "pass", None), (0, "pass", None))
    play(state, STRONG_CLUBS_PLAY)
    expect.append({"thrown_in": False, "contract": {"kind": "normal", "strain": "C", "holder": 1,
                                                   "multiplier": 1},
                   "trick_points": [75, 0], "below": [80, 0], "above": [100 + 300, 0], "pot": 0})
    assert state.deal_results() == expect
    assert state.result() == {"totals": {"below": [315, 0], "above": [500, 0], "games_won": [2, 0]},
                              "winners": [0], "over": True}
    assert state.to_act() == TERMINAL


def test_JJ_9_4_doubled_tie_freezes_twice_the_trick_points():
    state = new()
    state.deal(TIE_DECK)
    steps(state, (0, "pass", None), (1, "pass", None), (0, "no_trump", None), (1, "double", None),
          (0, "pass", ["redouble", "pass"]), (1, "pass", None))
    for card in TIE_PLAYS:
        state.apply("play:" + card)
    r = state.deal_results()[-1]
    assert r["trick_points"] == [35, 35] and r["pot"] == 140 and r["below"] == [0, 0]


def test_JJ_9_4_doubled_defender_enters_both_trick_points_times_two():
    state = new()
    state.deal(strong_deck(1))
    steps(state, (0, "pass", None), (1, "name:C", None), (0, "double", ["no_trump", "double", "pass"]),
          (1, "pass", ["redouble", "pass"]), (0, "pass", None))
    play(state, STRONG_CLUBS_PLAY)
    assert state.deal_results()[-1] == {
        "thrown_in": False, "contract": {"kind": "normal", "strain": "C", "holder": 1, "multiplier": 2},
        "trick_points": [75, 0], "below": [50 + 150, 0], "above": [100, 0], "pot": 0}


def test_JJ_10_1_both_reach_the_target_equal_play_on_then_higher_wins():
    """JJ-A32 default: both at or above 80 after one deal with equal game totals: no game; the
    next deal that leaves them unequal gives the game to the higher."""
    state = new()
    state._gpts = (70, 30)  # fixture: part-scores from earlier deals of this game
    state.deal(strong_deck(1))
    steps(state, (0, "pass", None), (1, "name:H", None), (0, "pass", None), (0, "nullo", None),
          (1, "slam:H", None))
    play(state, [(0, "JS"), (1, "9H"), (1, "KD"), (0, "AH"), (0, "9S"), (1, "TH"), (1, "AD"), (0, "7S"),
                 (1, "QD"), (0, "8S"), (1, "JD"), (0, "QS"), (1, "KH"), (0, "KS"), (1, "QH"), (0, "TS"),
                 (1, "JH"), (0, "AS")])
    assert state.deal_results()[-1]["below"] == [50, 90]
    m = state.public_view()["table"]["match"]
    assert m["game_points"] == [120, 120] and state.result()["totals"]["games_won"] == [0, 0]
    state.deal(strong_deck(0))
    steps(state, (1, "pass", None), (0, "name:S", None), (1, "pass", None), (1, "pass", None))
    play(state, STRONG_SPADES_PLAY)
    assert state.result()["totals"]["games_won"] == [1, 0]
    assert state.public_view()["table"]["match"]["game_points"] == [0, 0]  # JJ-10.2


# ---- NOTATION 5: the auto-move policy ---------------------------------------------------------

def oracle_auto_move(strain, legal):
    plays = [a for a in legal if a.startswith("play:") and a.count(":") == 1]
    if not plays:
        return "pass" if "pass" in legal else "no_exchange"

    def key(a):
        c = a[5:]
        if c[1] == strain:
            return (1, -TRUMP_ORDER.index(c[0]), SUITS.index(c[1]))
        return (0, -PLAIN_ORDER.index(c[0]), SUITS.index(c[1]))

    return min(plays, key=key)


def test_NOTATION_5_auto_move_matches_the_policy_in_random_matches():
    rng = random.Random(5)
    checked = 0
    for seed in range(6):
        state = new({"jj_exchange_window": "until_first_lead"}, first_dealer=seed % 2)
        while state.to_act() != TERMINAL and checked < 3000:
            if state.to_act() == CHANCE:
                deck = list(ALL_CODES)
                rng.shuffle(deck)
                state.deal(deck)
                continue
            view = state.view(state.to_act())
            strain = (view["table"]["contract"] or {}).get("play_strain")
            move = GAME.auto_move(view)
            assert move == oracle_auto_move(strain, view["legal"]), view["legal"]
            checked += 1
            state.apply(move if rng.random() < 0.5 else rng.choice(view["legal"]))
    assert checked > 500


# ---- the differential referee ----------------------------------------------------------------------

@pytest.mark.parametrize("path", transcripts("jojotte"), ids=lambda p: p.name)
def test_oracle_reproduces_the_sample_transcripts(path):
    """The referee itself is checked against the published samples."""
    data = json.loads(path.read_text())
    om = OracleMatch(data.get("options") or {}, data["first_dealer"])
    for deal in data["deals"]:
        assert om.needs_deal and (deal.get("expect") or {}).get("dealer", om.dealer) == om.dealer
        om.deal(deal["deck"])
        done = len(om.results)
        for step in deal["steps"]:
            assert step["seat"] == om.to_act
            assert set(step["legal"]) == om.legal()
            om.apply(step["action"])
        if "result" in deal:
            assert om.results[done] == deal["result"]
    assert om.result() == data["result"]


def biased_choice(rng, legal):
    """Random play that reaches contracts, doubles, exchanges, nullo, slam and jo-jotte often."""
    bids = [a for a in legal if a in ("accept", "no_trump") or a.startswith("name:")]
    if bids and rng.random() < 0.5:
        return rng.choice(bids)
    for prefix, p in (("double", 0.3), ("redouble", 0.4), ("nullo", 0.25), ("exchange:", 0.5),
                      ("slam:", 0.5)):
        options = [a for a in legal if a.startswith(prefix)]
        if options and rng.random() < p:
            return rng.choice(options)
    announced = [a for a in legal if a.endswith(":jo") or a.endswith(":jotte")]
    if announced and rng.random() < 0.7:
        return rng.choice(announced)
    return rng.choice(legal)


ORACLE_OPTION_SETS = [
    {},
    {"jj_match_rubbers": 2, "jj_game_target": 150},
    {"jj_seven_exchange": "trump_seven", "jj_exchange_window": "until_first_lead"},
    {"jj_exchange_window": "until_first_lead", "jj_nullo_strain": "contract"},
    {"jj_double_timing": "end_of_auction", "jj_overcall_accepted_turnup": False},
    {"jj_round1_calls": "accept_pass", "jj_round2_turnup_suit": "forbidden", "jj_throw_in_redealer": "other"},
    {"jj_slam_strain": "suit_or_no_trump", "jj_first_lead": "non_dealer", "jj_seven_exchange": "none"},
    {"jj_must_head_plain": False, "jj_trick_value": "sum", "jj_first_deal_packet": 3,
     "jj_second_deal_packet": 1, "jj_info_card": "next"},
    {"jj_trick_value": "winning_card", "jj_first_deal_packet": 1, "jj_outcome_basis": "trick_points",
     "jj_defender_win_award": "both_trick_points"},
    {"jj_defender_win_award": "own_trick_points", "jj_tie_rule": "void", "jj_failed_slam": "none",
     "jj_multiplier_scope": "all"},
    {"jj_premium_line": "below", "jj_nullo_penalty_negative": True, "jj_unbid_slam_in_nullo": True,
     "jj_rubber_bonus_condition": "two_consecutive", "jj_pot_at_rubber_end": "carry",
     "jj_match_rubbers": 3, "jj_match_winner": "points"},
    {"jj_nt_quartet_order": "natural", "jj_winner_sequences": "best_plus_one",
     "jj_card_in_two_melds": False, "jj_split_runs": True},
    {"jj_jojotte_announcement": "automatic", "jj_undoubled_scoring": "each_scores_own"},
    {"jj_scoresheet": "single_column", "jj_nullo_melds": True, "jj_nullo_penalty_negative": True},
    {"jj_simultaneous_game": "deal_winner", "jj_partscore_reset": False, "jj_match_rubbers": 2,
     "jj_game_target": 200},
]


@pytest.mark.parametrize("options", ORACLE_OPTION_SETS, ids=lambda o: ",".join(sorted(o))[:60] or "defaults")
def test_engine_matches_the_literal_referee_step_by_step(options):
    for seed in range(6):
        rng = random.Random(seed)
        first = rng.randrange(2)
        state, om = new(options, first), OracleMatch(options, first)
        while state.to_act() != TERMINAL:
            if state.to_act() == CHANCE:
                assert om.needs_deal and state.dealer() == om.dealer  # expect.dealer
                deck = list(ALL_CODES)
                rng.shuffle(deck)
                state.deal(deck)
                om.deal(deck)
                continue
            assert state.to_act() == om.to_act, om.phase
            legal = state.legal_actions()
            assert len(legal) == len(set(legal)) and set(legal) == om.legal(), (seed, om.phase, legal)
            action = biased_choice(rng, legal)
            state.apply(action)
            om.apply(action)
            assert state.deal_results() == om.results, seed
        assert om.over and state.result() == om.result()


def _random_option_mix(rng):
    """A random mix of section 11's options (each changed with probability 0.35), so that
    options meet in combinations the fixed sets above do not list (JJ-A8 with JJ-A10, JJ-A13
    with JJ-A28 and JJ-A29, JJ-A27 with JJ-A32, ...)."""
    from engine_service.rules.games.jojotte.options import OPTION_SPECS

    from .jojotte_oracle import DEFAULTS

    out = {}
    for spec in OPTION_SPECS:
        if spec.name not in DEFAULTS or rng.random() >= 0.35:
            continue
        if spec.name == "jj_match_rubbers":
            out[spec.name] = rng.choice([1, 2, 3])
        elif spec.name == "jj_game_target":
            out[spec.name] = rng.choice([30, 80, 150])
        else:
            out[spec.name] = rng.choice(list(spec.values))
    return out


def test_engine_matches_the_literal_referee_under_random_option_mixes():
    """Every option the referee models, mixed at random per match (seeded): every legal set,
    deal result and match result agree (JJ-3 to JJ-10, NOTATION 3 and 4)."""
    for seed in range(60):
        rng = random.Random(10_000 + seed)
        options = _random_option_mix(rng)
        first = rng.randrange(2)
        state, om = new(options, first), OracleMatch(options, first)
        while state.to_act() != TERMINAL:
            if state.to_act() == CHANCE:
                assert om.needs_deal and state.dealer() == om.dealer, (seed, options)
                deck = list(ALL_CODES)
                rng.shuffle(deck)
                state.deal(deck)
                om.deal(deck)
                continue
            assert state.to_act() == om.to_act, (seed, options, om.phase)
            legal = state.legal_actions()
            assert set(legal) == om.legal(), (seed, options, om.phase, legal)
            action = biased_choice(rng, legal)
            state.apply(action)
            om.apply(action)
            assert state.deal_results() == om.results, (seed, options)
        assert om.over and state.result() == om.result(), (seed, options)


def _biased_meld_hands(rng):
    """Two nine-card hands rich in quartets and long runs (random deals rarely have them)."""
    from .jojotte_oracle import NATURAL

    h0: list[str] = []
    h1: list[str] = []
    if rng.random() < 0.6:
        h0 += [r + s for r in rng.choice(NATURAL) for s in SUITS]
    if rng.random() < 0.6:
        q = [r + s for r in rng.choice(NATURAL) for s in SUITS]
        if not set(q) & set(h0):
            h1 += q
    if rng.random() < 0.5:
        s, n = rng.choice(SUITS), rng.randint(5, 8)
        top = rng.randint(0, 8 - n)
        target = h0 if rng.random() < 0.5 else h1
        for c in (NATURAL[top + i] + s for i in range(n)):
            if c not in h0 and c not in h1 and len(target) < 9:
                target.append(c)
    rest = [c for c in ALL_CODES if c not in h0 and c not in h1]
    rng.shuffle(rest)
    while len(h0) < 9:
        h0.append(rest.pop())
    while len(h1) < 9:
        h1.append(rest.pop())
    return h0, h1


def test_JJ_5_meld_settlement_matches_the_literal_referee_on_meld_rich_hands():
    """JJ-1.5, JJ-5.1 to JJ-5.7 and the meld options (JJ-A18 to JJ-A20), engine vs referee."""
    from engine_service.rules.cards import card_id
    from engine_service.rules.games.jojotte import melds as M

    from .jojotte_oracle import DEFAULTS, settle_melds

    rng = random.Random(11)
    quartet_cases = 0
    for _ in range(6000):
        h0, h1 = _biased_meld_hands(rng)
        strain = rng.choice(["S", "H", "D", "C", "NT"])
        o = dict(DEFAULTS, jj_nt_quartet_order=rng.choice(["plain", "natural"]),
                 jj_winner_sequences=rng.choice(["all", "best_plus_one"]),
                 jj_card_in_two_melds=rng.choice([True, False]), jj_split_runs=rng.choice([True, False]))
        masks = tuple(sum(1 << card_id(c) for c in h) for h in (h0, h1))
        st = M.settle(masks, (SUITS + "N").index(strain[0]) if strain != "NT" else 4, rng.randrange(2),
                      nt_natural=o["jj_nt_quartet_order"] == "natural",
                      card_in_two_melds=o["jj_card_in_two_melds"], split_runs=o["jj_split_runs"],
                      winner_all_sequences=o["jj_winner_sequences"] == "all")
        assert list(st.points) == settle_melds((h0, h1), strain, o), (h0, h1, strain, o)
        quartet_cases += st.quartet_winner is not None
    assert quartet_cases > 2000


def oracle_transcript(options, seed):
    """A card-transcript/1 match written by the referee alone (legal sets, deal results, match
    result), the way the hidden conformance transcripts are written from the rulebook."""
    rng = random.Random(seed)
    first = rng.randrange(2)
    om = OracleMatch(options, first)
    deals = []
    while not om.over:
        deck = list(ALL_CODES)
        rng.shuffle(deck)
        deal = {"deck": deck, "expect": {"dealer": om.dealer}, "steps": []}
        done = len(om.results)
        om.deal(deck)
        while len(om.results) == done:
            legal = sorted(om.legal())
            action = biased_choice(rng, legal)
            deal["steps"].append({"seat": om.to_act, "legal": legal, "action": action})
            om.apply(action)
        deal["result"] = om.results[done]
        deals.append(deal)
    return {"schema": "card-transcript/1", "game": "jojotte", "options": options, "first_dealer": first,
            "deals": deals, "result": om.result()}


@pytest.mark.parametrize("options", [{}, {"jj_match_rubbers": 2, "jj_seven_exchange": "trump_seven"},
                                     {"jj_double_timing": "end_of_auction", "jj_premium_line": "below"}],
                         ids=["defaults", "two_rubbers_trump_seven", "late_double_premiums_below"])
def test_NOTATION_3_referee_written_transcripts_check_out_on_the_engine(options):
    from engine_service.rules import transcript

    for seed in range(4):
        data = json.loads(json.dumps(oracle_transcript(options, seed)))
        diff, state = transcript.check(transcript.validate(data))
        assert diff is None, str(diff)
        assert state.result()["over"] is True
