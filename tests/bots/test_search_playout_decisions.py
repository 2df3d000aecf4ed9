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

import random
import time

import pytest

from bot_plugins.heuristic import make as make_heuristic
from bot_plugins.search import SMALL_DEAL_CARDS, SearchBot, SearchParams
from engine_service.plugins import DecisionRequest
from engine_service.rules import CHANCE, InconsistentView, get_game
from tests.rules.playout import shuffled
from tests.bots.positions import deal, request


def sampled_worlds(monkeypatch, bot):
    """The worlds ``bot`` samples from now on (one entry per ``determinize`` call): a decision
    whose deadline has passed samples one, whatever the machine's speed."""
    calls = []
    real = bot.game.determinize

    def counted(*args, **kwargs):
        calls.append(args)
        return real(*args, **kwargs)

    monkeypatch.setattr(bot.game, "determinize", counted)
    return calls


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
    far = time.monotonic() + 60.0
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


def test_small_deal_bid_keeps_to_the_budget(monkeypatch):
    # a deadline already passed still answers, from one sampled world
    state = deal("georgian_joker", {1: ["7C", "AH", "X2"]}, fixed={12: "9C"}, first_dealer=2, deal_number=3)
    assert request(state).view["table"]["cards_per_player"] == 3
    req = request(state)
    bot = SearchBot("georgian_joker")
    worlds = sampled_worlds(monkeypatch, bot)
    assert bot._by_playouts(req, time.monotonic()) in req.legal
    assert len(worlds) == 1
    worlds.clear()  # and a budget samples up to params.worlds
    assert bot._by_playouts(req, time.monotonic() + 60.0) in req.legal
    assert len(worlds) == bot.params.worlds > 1


def test_a_small_deal_bid_with_no_sampled_world_is_answered_by_the_heuristic(monkeypatch):
    # a sampler that gives up on the view (InconsistentView) costs the decision its search, not
    # the decision: with no world for the flat playouts nor for the tree the heuristic answers
    # (SearchBot.fallbacks), not the first legal bid
    state = deal("georgian_joker", {1: ["X1"]}, fixed={4: "9C"}, first_dealer=0)
    bot = SearchBot("georgian_joker", SearchParams())

    def gives_up(*args):
        raise InconsistentView("no deal")

    monkeypatch.setattr(bot.game, "determinize", gives_up)
    answer = bot.decide(request(state))
    assert bot.fallbacks == 1
    assert answer == make_heuristic("georgian_joker").decide(request(state)) == "bid:1"


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


def test_jj_playout_decisions_leave_the_tree_and_keep_to_the_budget(monkeypatch):
    state = _double_window(["JS", "9S", "TS", "8H", "7D", "8C"])
    bot = SearchBot("jojotte")
    req = request(state)
    worlds = sampled_worlds(monkeypatch, bot)
    answer = bot._by_playouts(req, time.monotonic())  # a deadline already passed: one world
    assert answer in req.legal
    assert len(worlds) == 1
    assert bot.decide(request(state)) in req.legal
    assert bot.last_iterations == 0  # answered without the tree
    # the auction's bids and the card play stay with the tree
    opening = deal("jojotte", {}, fixed={12: "7S"}, first_dealer=0)
    assert "accept" in request(opening).legal
    assert bot._by_playouts(request(opening), time.monotonic() + 60.0) is None


def _nullo_window():
    """The first nullo window (JJ-4.3: ``nullo`` or ``pass``) of seeded random Jo-Jotte play."""
    game, rng = get_game("jojotte"), random.Random(1)
    state = game.new_state({}, first_dealer=0)
    while True:
        who = state.to_act()
        if who == CHANCE:
            state.deal(shuffled(game, rng))
            continue
        legal = state.view(who)["legal"]
        if "nullo" in legal:
            return state, who
        state.apply_id(rng.choice(state.legal_ids()))


def test_jj_nullo_window_leaves_the_tree(monkeypatch):
    # docs/bots.md, "Decisions by flat playouts": the search does not call nullo with its tree
    # (JJ-4.3, JJ-9.7: 200 staked on winning no trick); the flat playouts answer it
    state, who = _nullo_window()
    view = state.view(who)
    assert set(view["legal"]) == {"nullo", "pass"}
    bot = SearchBot("jojotte")
    req = DecisionRequest("jojotte", who, view, tuple(view["legal"]), random.Random(1), 30.0)
    worlds = sampled_worlds(monkeypatch, bot)
    assert bot._by_playouts(req, time.monotonic()) in req.legal  # a deadline already passed: one world
    assert len(worlds) == 1


# ---- Klaberjass: the auction (take / name / schmeiss / pass) ------------------------------------
# By flat playouts only with SearchParams(kl_flat_auction=True) (the bench bot search_kl_flat):
# measured no better than the tree's auction, which the shipped search keeps (docs/bots.md).

def _kl_flat():
    return SearchBot("klaberjass", SearchParams(kl_flat_auction=True))


def _kl_opening(**kw):
    # turn-up 8S, the elder (seat 0, the dealer is seat 1) to take or pass (KL-3.1)
    return deal("klaberjass", {0: ["JS", "9S", "AS", "7D", "8D", "7C"]}, fixed={12: "8S"}, first_dealer=1, **kw)


def test_kl_auction_leaves_the_tree_for_the_flat_playouts_when_asked(monkeypatch):
    state = _kl_opening()
    req = request(state)
    assert req.legal == ("take", "pass")
    bot = _kl_flat()
    assert bot._by_playouts(req, time.monotonic() + 60.0) in req.legal
    bot.last_iterations = -1
    assert bot.decide(request(state)) in req.legal
    assert bot.last_iterations == 0  # answered without the tree
    # round 2: naming a trump (KL-3.3) goes the same way
    state.apply("pass", 0)
    state.apply("pass", 1)
    req2 = request(state)
    assert "name:H" in req2.legal and "pass" in req2.legal
    assert bot._by_playouts(req2, time.monotonic() + 60.0) in req2.legal
    # a deadline already passed still answers, from one sampled world
    worlds = sampled_worlds(monkeypatch, bot)
    assert bot._by_playouts(req2, time.monotonic()) in req2.legal
    assert len(worlds) == 1


def test_kl_auction_stays_with_the_tree_by_default():
    state = _kl_opening()
    bot = SearchBot("klaberjass")
    assert bot._by_playouts(request(state), time.monotonic() + 60.0) is None
    assert bot.decide(request(state)) in ("take", "pass")
    assert bot.last_iterations > 0  # the tree searched it


def test_kl_auction_with_schmeiss_goes_through_the_flat_playouts():
    state = _kl_opening(options={"kl_schmeiss": True})
    req = request(state)
    assert "schmeiss" in req.legal
    bot = _kl_flat()
    assert bot._by_playouts(req, time.monotonic() + 60.0) in req.legal
    # the answer to a schmeiss: accept (thrown in) or refuse (KL-A7)
    state.apply("schmeiss", 0)
    req2 = request(state)
    assert set(req2.legal) == {"accept", "refuse"}
    assert bot._by_playouts(req2, time.monotonic() + 60.0) in req2.legal


def test_kl_card_play_and_dix_stay_with_the_tree():
    state = _kl_opening()
    state.apply("take", 0)
    bot = _kl_flat()
    while not any(a.startswith("play:") for a in state.view(state.to_act())["legal"]):
        req = request(state)
        assert bot._by_playouts(req, time.monotonic() + 60.0) is None
        state.apply(req.legal[-1], state.to_act())
    assert bot._by_playouts(request(state), time.monotonic() + 60.0) is None


@pytest.mark.parametrize("flat", [True, False], ids=["flat", "tree"])
def test_kl_jass_menel_and_ace_of_the_turn_up_suit_take(flat):
    # the jack (jass) and nine (menel) of the turn-up suit are its two top trumps, 34 card
    # points (KL-1.2, KL-8.1), and its ace the third: the maker wins the comparison (KL-9.2)
    # nearly always
    bot = _kl_flat() if flat else SearchBot("klaberjass")
    assert bot.decide(request(_kl_opening())) == "take"


@pytest.mark.parametrize("flat", [True, False], ids=["flat", "tree"])
def test_kl_a_hand_of_nothing_passes(flat):
    # no card of the turn-up suit, no ace or ten, no jack or nine: as maker it loses the
    # comparison and the opponent enters both deal totals (KL-9.4)
    state = deal("klaberjass", {0: ["7D", "8D", "7C", "8C", "7H", "8H"]}, fixed={12: "AS"}, first_dealer=1)
    bot = _kl_flat() if flat else SearchBot("klaberjass")
    assert bot.decide(request(state)) == "pass"


def test_the_flat_playouts_choose_by_the_score_relative_to_the_other_seats(monkeypatch):
    """bot_plugins/search.py, ``_by_playouts``: "the action with the best mean score relative
    to the other seats (the tree's own objective) is chosen", not the best score of its own.
    Deal scores made up by the bid of seat 1 (the forehand of a one-card deal, holding a
    joker): a bid of 1 would enter 100 for it and 300 for everyone else, a pass 50 and 0, so
    the pass is worth +50 relative to the others and the bid -200, although 100 > 50. Found by
    mutation testing: summing the seat's own score survived."""
    from bot_plugins import search

    def made_up(game_id, result, n):
        return [0.0, 100.0, 300.0, 300.0] if result["bids"][1] == 1 else [0.0, 50.0, 0.0, 0.0]

    monkeypatch.setattr(search, "deal_scores", made_up)
    state = deal("georgian_joker", {1: ["X1"]}, fixed={4: "9C"}, first_dealer=0)
    req = request(state)
    assert set(req.legal) == {"bid:0", "bid:1"}
    assert SearchBot("georgian_joker", SearchParams(worlds=4))._by_playouts(req, time.monotonic() + 60.0) == "bid:0"


def test_a_flat_decision_with_a_spent_budget_samples_one_world(monkeypatch):
    """``SearchBot.decide`` hands the flat playouts its own deadline (85% of what is left of
    the budget, docs/bots.md "Decisions by flat playouts"): a Jo-Jotte double window, and a
    small Georgian Joker bid with the ``search`` bot's bid inference (whose candidates get a
    quarter of that time), asked with a spent budget sample one world (one candidate). Found
    by mutation testing: the flat playouts, or their inferred pool, given a deadline of their
    own survived."""
    from bot_plugins import search
    jj = _double_window(["JS", "9S", "TS", "8H", "7D", "8C"])
    gj = deal("georgian_joker", {}, fixed={12: "9C"}, first_dealer=0, deal_number=3)
    gj.apply("bid:1", gj.to_act())  # the forehand has bid: the inference has a bid to read
    for bot, state in ((SearchBot("jojotte"), jj), (search.make("georgian_joker"), gj)):
        worlds = sampled_worlds(monkeypatch, bot)
        req = request(state)
        req = DecisionRequest(req.game_id, req.seat, req.view, req.legal, random.Random(1), 0.0)
        assert (bot._inference(req.view) is not None) == (bot.game_id == "georgian_joker")
        assert bot.decide(req) in req.legal
        assert bot.last_iterations == 0 and bot.fallbacks == 0  # the flat playouts answered
        assert len(worlds) == 1, bot.game_id


def test_the_flat_playouts_sample_different_worlds_from_the_requests_rng(monkeypatch):
    """``_by_playouts``: "Every legal action is tried in the same sampled worlds": worlds
    sampled one after another from the request's rng, not one world over and over. Found by
    mutation testing: sampling each world with a fixed seed survived."""
    state = _double_window(["JS", "9S", "TS", "8H", "7D", "8C"])
    bot = SearchBot("jojotte", SearchParams(worlds=6))
    seen = []
    real = bot.game.determinize

    def counted(*args):
        seen.append(real(*args))
        return seen[-1]

    monkeypatch.setattr(bot.game, "determinize", counted)
    req = request(state)
    assert bot._by_playouts(req, time.monotonic() + 60.0) in req.legal
    assert len(seen) == 6
    assert len({repr(sorted(w.zones().items())) for w in seen}) > 1
