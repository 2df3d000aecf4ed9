"""The heuristic bot on fixed positions: decisions a club player would call blunders.

Each test rigs a deal (``tests/bots/positions.py``), asks the bot for the seat to act and
states what it must (or must not) choose, with the rule that makes the other choice a blunder.
"""

from __future__ import annotations

from bot_plugins.heuristic import make
from tests.bots.positions import deal, request


def decide(game_id: str, state) -> str:
    return make(game_id).decide(request(state))


# ---- Georgian Joker --------------------------------------------------------------------------

def test_gj_one_small_trump_in_a_one_card_deal_is_a_pass():
    # deal 1 (one card each), trump hearts (indicator TH, GJ-3.3); the forehand holds the six
    # of trumps: seven higher trumps and both jokers are out, so it wins well under half the
    # time, and a bid of 1 that takes nothing is a khishti, -200 (GJ-7.4), against +50 for a
    # made pass (GJ-7.2). Its "voids" in three suits are no ruffing chances with one card.
    state = deal("georgian_joker", {1: ["6H"]}, fixed={4: "TH"}, first_dealer=0)
    assert state.to_act() == 1
    assert decide("georgian_joker", state) == "bid:0"


def test_gj_two_small_trumps_in_a_two_card_deal_are_not_two_tricks():
    # deal 2, trump diamonds (indicator 9D); the 7 and 8 of trumps, five higher trumps and both
    # jokers out. Each trump ruffs at most once: bidding 2 (both tricks, GJ-7.1) is hopeless.
    state = deal("georgian_joker", {0: ["7D", "8D"]}, fixed={8: "9D"}, first_dealer=2, deal_number=2)
    assert state.to_act() == 0 and state.view(0)["hand"] == ["8D", "7D"]
    assert decide("georgian_joker", state) in ("bid:0", "bid:1")


def test_gj_the_queen_of_trumps_alone_is_a_pass_in_a_one_card_deal():
    # trump clubs (indicator 9C): the ace, the king of clubs and both jokers beat the queen, so
    # she takes the trick about two times in three. A bid of 1 then scores 100p - 200(1-p)
    # (GJ-7.3, GJ-7.4), about 0; a pass 50(1-p) + 10p (GJ-7.2, GJ-7.5), about 23.
    state = deal("georgian_joker", {1: ["QC"]}, fixed={4: "9C"}, first_dealer=0)
    assert decide("georgian_joker", state) == "bid:0"


def test_gj_the_ace_of_trumps_alone_is_a_bid_in_a_one_card_deal():
    # only a joker beats it (GJ-6.1, GJ-6.2): the bid of 1 is the made bid about 80% of the time
    state = deal("georgian_joker", {1: ["AC"]}, fixed={4: "9C"}, first_dealer=0)
    assert decide("georgian_joker", state) == "bid:1"
