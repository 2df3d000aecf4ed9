"""The search bot's bid in small Georgian Joker deals (``SearchBot._small_deal_bid``): every legal
bid tried in the same sampled worlds, finished with the heuristic's play.

Why these positions: in a one-card deal a bid of 1 that takes nothing is a khishti, -200
(GJ-7.4), against +50 for a made pass (GJ-7.2), so a bid of 1 pays only on a card that takes
its trick about three times in four; the tree search, whose rollouts play leads and most cards
at random, bid 1 on a small trump that takes its trick well under half the time.
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
    assert bot._small_deal_bid(request(small), far) in request(small).legal
    # deal 4 deals four cards a player (GJ-2.4): more than SMALL_DEAL_CARDS, the tree bids
    assert SMALL_DEAL_CARDS < 4
    large = deal("georgian_joker", {}, first_dealer=0, deal_number=4)
    assert request(large).legal[0].startswith("bid:")
    assert bot._small_deal_bid(request(large), far) is None
    # the card play of a small deal stays with the tree
    for seat in (1, 2, 3, 0):
        small.apply("bid:1" if seat in (1, 0) else "bid:0", seat)
    assert request(small).legal[0].startswith("play:")
    assert bot._small_deal_bid(request(small), far) is None
    # and so does every other game
    assert SearchBot("jojotte")._small_deal_bid(request(small), far) is None


def test_small_deal_bid_keeps_to_the_budget():
    # a deadline already passed still answers, from one sampled world, at once
    state = deal("georgian_joker", {1: ["7C", "AH", "X2"]}, fixed={12: "9C"}, first_dealer=2, deal_number=3)
    assert request(state).view["table"]["cards_per_player"] == 3
    req = request(state)
    started = time.monotonic()
    answer = SearchBot("georgian_joker")._small_deal_bid(req, time.monotonic())
    assert answer in req.legal
    assert time.monotonic() - started < 0.1
