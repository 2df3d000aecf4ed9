"""The search bot's decisions by flat playouts (``SearchBot._by_playouts``): the bid of a small
Georgian Joker deal and Jo-Jotte's double, redouble and nullo; every legal action tried in the
same sampled worlds, finished with the heuristic's play.

Why these positions: in a one-card deal a bid of 1 that takes nothing is a khishti, -200
(GJ-7.4), against +50 for a made pass (GJ-7.2), so a bid of 1 pays only on a card that takes
its trick about three times in four; the tree search, whose rollouts play leads and most cards
at random, bid 1 on a small trump that takes its trick well under half the time, and in
Jo-Jotte it passed the declarer's suit with its three top trumps and every side ace.
"""

from __future__ import annotations

import time

from bot_plugins.search import SMALL_DEAL_CARDS, SearchBot
from tests.bots.positions import deal, request


def test_small_trump_alone_in_a_one_card_deal_is_a_pass():
    # deal 1 (one card each), trump clubs (indicator 9C, GJ-3.3); the forehand holds the seven
    # of trumps: six higher trumps (the six of clubs is not in the pack) and both jokers are
    # among the 34 unseen cards, so one of the three other cards beats it more often than not
    # (1 - C(26,3)/C(34,3) = 57%). The tree search bid 1 here.
    state = deal("georgian_joker", {1: ["7C"]}, fixed={4: "9C"}, first_dealer=0)
    assert state.to_act() == 1
    assert SearchBot("georgian_joker").decide(request(state)) == "bid:0"


def test_joker_alone_in_a_one_card_deal_bids_one():
    # only the other joker, played high after it, takes a high joker's trick (GJ-6.1): a
    # made bid of 1 (100, GJ-7.3) at eleven chances in twelve
    state = deal("georgian_joker", {1: ["X1"]}, fixed={4: "9C"}, first_dealer=0)
    assert SearchBot("georgian_joker").decide(request(state)) == "bid:1"


def test_ace_of_trumps_alone_in_a_one_card_deal_bids_one():
    # only a joker beats the ace of trumps (GJ-6.1): the two jokers are among 34 unseen cards,
    # so about five times in six nobody else holds one
    state = deal("georgian_joker", {1: ["AC"]}, fixed={4: "9C"}, first_dealer=0)
    assert SearchBot("georgian_joker").decide(request(state)) == "bid:1"


def test_only_the_bids_of_small_deals_leave_the_tree():
    bot = SearchBot("georgian_joker")
    far = time.monotonic() + 5.0
    small = deal("georgian_joker", {1: ["7C"]}, fixed={4: "9C"}, first_dealer=0)
    assert bot._by_playouts(request(small), far) in request(small).legal
    # deal 4 deals four cards a player (GJ-2.4): more than SMALL_DEAL_CARDS, the tree bids
    assert SMALL_DEAL_CARDS < 4
    large = deal("georgian_joker", {}, first_dealer=0, deal_number=4)
    assert request(large).legal[0].startswith("bid:")
    assert bot._by_playouts(request(large), far) is None
    # the card play of a small deal stays with the tree
    for seat in (1, 2, 3, 0):
        small.apply("bid:1" if seat in (1, 0) else "bid:0", seat)
    assert request(small).legal[0].startswith("play:")
    assert bot._by_playouts(request(small), far) is None
    # and so does every other game
    assert SearchBot("jojotte")._by_playouts(request(small), far) is None


def test_small_deal_bid_keeps_to_the_budget():
    # a deadline already passed still answers, from one sampled world, at once
    state = deal("georgian_joker", {1: ["7C", "AH", "X2"]}, fixed={12: "9C"}, first_dealer=2, deal_number=3)
    assert request(state).view["table"]["cards_per_player"] == 3
    req = request(state)
    started = time.monotonic()
    answer = SearchBot("georgian_joker")._by_playouts(req, time.monotonic())
    assert answer in req.legal
    assert time.monotonic() - started < 0.1


# ---- Jo-Jotte: double, redouble, nullo ----------------------------------------------------------

def _double_window(defender_hand):
    # turn-up 7S, the non-dealer (seat 1) accepts spades; the dealer (seat 0) answers: no-trump
    # overcall, double or pass (JJ-3.3)
    state = deal("jojotte", {0: defender_hand}, fixed={12: "7S"}, first_dealer=0)
    state.apply("accept", 1)
    assert set(state.view(0)["legal"]) == {"no_trump", "double", "pass"}
    return state


def test_jj_top_trumps_and_three_aces_double():
    # the jack, nine and ace of the declarer's trump (JJ-1.2: the three highest trumps, 45
    # premium points, JJ-8.1) and the three side aces: the defender wins the comparison
    # (JJ-9.2) almost always, and a double makes him enter both players' trick points twice
    # over (JJ-9.4). The tree passed here.
    state = _double_window(["JS", "9S", "AS", "AH", "AD", "AC"])
    assert SearchBot("jojotte").decide(request(state)) == "double"


def test_jj_playout_decisions_leave_the_tree_and_keep_to_the_budget():
    state = _double_window(["JS", "9S", "TS", "8H", "7D", "8C"])
    bot = SearchBot("jojotte")
    req = request(state)
    started = time.monotonic()
    answer = bot._by_playouts(req, time.monotonic())  # a deadline already passed: one world
    assert answer in req.legal
    assert time.monotonic() - started < 0.1
    assert bot.decide(request(state)) in req.legal
    assert bot.last_iterations == 0  # answered without the tree
    # the auction's bids and the card play stay with the tree
    opening = deal("jojotte", {}, fixed={12: "7S"}, first_dealer=0)
    assert "accept" in request(opening).legal
    assert bot._by_playouts(request(opening), time.monotonic() + 5.0) is None
