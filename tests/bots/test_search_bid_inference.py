"""The search's Georgian Joker worlds resampled by the opponents' bids
(``SearchParams.gj_bid_inference``, :mod:`bot_plugins.bid_inference`).

The position: deal 3 (three cards a player, GJ-2.4), trump clubs (indicator 9C, GJ-3.3), dealer
seat 0, forehand seat 1 (GJ-4.1). Seat 1 bids 3 of 3, seats 2 and 3 pass; the dealer, seat 0,
is to bid, 0 forbidden (GJ-4.3: 3 - (3 + 0 + 0)). A bid of 3 of 3 says seat 1 holds jokers or
high trumps; the uniform sampler gives it none of the jokers, the ace or the king of clubs most
of the time.
"""

from __future__ import annotations

import json
import random
import time
from dataclasses import replace
from statistics import NormalDist

import pytest

from bot_plugins import bid_inference as B
from bot_plugins.heuristic import make as make_heuristic
from bot_plugins.heuristic.georgian_joker import GeorgianJokerHeuristic
from bot_plugins import search
from bot_plugins.search import SearchBot, SearchParams
from engine_service.plugins import protocol
from engine_service.rules import InconsistentView, get_game
from engine_service.rules.cards import codes_of
from tests.bots.positions import deal, request

STRONG = {"X1", "X2", "AC", "KC"}


def _position(seat1_hand):
    state = deal("georgian_joker", {0: ["QS", "9S", "KH"], 1: seat1_hand}, fixed={12: "9C"},
                 first_dealer=2, deal_number=3)
    for seat, bid in ((1, "bid:3"), (2, "bid:0"), (3, "bid:0")):
        state.apply(bid, seat)
    assert state.to_act() == 0
    return state


def _hands(world):
    zones = world.zones()
    return [sorted(codes_of(zones[f"hand{s}"])) for s in range(4)]


def test_bid_probabilities_are_a_distribution_over_the_legal_bids():
    p = B.bid_probabilities(2.8, 3, (0, 1, 2, 3))
    assert sum(p.values()) == pytest.approx(1.0)
    assert min(p.values()) >= B.BID_FLOOR / 4  # no bid is ever ruled out
    assert B.bid_probabilities(2.8, 3, (0, 1, 2, 3))[3] > 3 * B.bid_probabilities(0.2, 3, (0, 1, 2, 3))[3]
    assert B.bid_probabilities(0.2, 3, (0, 1, 2, 3))[0] > B.bid_probabilities(2.8, 3, (0, 1, 2, 3))[0]
    dealer = B.bid_probabilities(1.0, 3, (1, 2, 3))  # the dealer's 0 forbidden (GJ-4.3)
    assert set(dealer) == {1, 2, 3} and sum(dealer.values()) == pytest.approx(1.0)


def test_bid_probabilities_follow_the_given_constants():
    # mu = 2.0 * 1.0 - 1.0 = 1, spread 0.5: bid 1 within one spread of mu, bids 0 and 3 the
    # tails (GJ-4.2), then 2% of the uniform mixed in
    shape = B.BidShape(slope=2.0, offset=-1.0, sigma=0.5, floor=0.02)
    cdf = NormalDist(1.0, 0.5).cdf
    raw = {0: cdf(0.5), 1: cdf(1.5) - cdf(0.5), 2: cdf(2.5) - cdf(1.5), 3: 1 - cdf(2.5)}
    p = B.bid_probabilities(1.0, 3, (0, 1, 2, 3), shape)
    assert p == pytest.approx({k: 0.98 * v + 0.02 / 4 for k, v in raw.items()})


def test_the_model_reads_the_bids_and_plays_from_the_view():
    state = _position(["X1", "AC", "7D"])
    model = B.BidModel(request(state).view)
    # the bidding order from the forehand (GJ-4.1), our own seat and the unbid left out
    assert [(s, b, values) for s, b, values, _ in model.bidders] == [(1, 3, (0, 1, 2, 3)), (2, 0, (0, 1, 2, 3)),
                                                                     (3, 0, (0, 1, 2, 3))]
    state.apply("bid:1", 0)
    # seat 1 leads the joker: in every world the joker is back in its bid-time hand
    state.apply("play:X1:high:C", 1)
    view = request(state, 2).view
    model = B.BidModel(view)
    assert [(s, b, values) for s, b, values, _ in model.bidders] == [(1, 3, (0, 1, 2, 3)), (3, 0, (0, 1, 2, 3)),
                                                                     (0, 1, (1, 2, 3))]
    assert codes_of(dict((s, m) for s, _, _, m in model.bidders)[1]) == ["X1"]
    world = get_game("georgian_joker").determinize(view, random.Random(1))
    # a joker is worth most of a trick (0.95): the world weighs as if seat 1 still held it
    strong = B.bid_probabilities(0.95, 3, (0, 1, 2, 3))[3]
    assert model.weight(world) <= strong
    # exactly: each opponent's estimate is of its bid-time hand, the played joker back in it (GJ-11.1)
    hands = world.zones()
    expected = 1.0
    for s, b, values, played in model.bidders:
        est = GeorgianJokerHeuristic.expected_tricks(codes_of(hands[f"hand{s}"] | played), "C", 3)
        expected *= B.bid_probabilities(est, 3, values)[b]
    assert model.weight(world) == pytest.approx(expected)
    # the opening view, before any bid, has nothing to infer from
    fresh = deal("georgian_joker", {}, fixed={12: "9C"}, first_dealer=2, deal_number=3)
    assert not B.BidModel(request(fresh).view)
    assert SearchBot("georgian_joker", SearchParams(gj_bid_inference=True))._inference(request(fresh).view) is None


@pytest.mark.parametrize("params", [SearchParams(gj_bid_inference=True),
                                    SearchParams(gj_bid_inference=True, inference_per_size=True),
                                    SearchParams(gj_bid_inference=True, inference_per_size=True,
                                                 inference_candidates=8)])
def test_inference_uses_only_the_view(params):
    # seat 1 holds the jokers and the ace of clubs in one deal, three small cards in the other:
    # seat 0's views are the same, and so are the worlds it samples for a seed
    strong, weak = _position(["X1", "X2", "AC"]), _position(["6H", "7D", "8S"])
    assert json.dumps(strong.view(0), sort_keys=True) == json.dumps(weak.view(0), sort_keys=True)
    bot = SearchBot("georgian_joker", params)
    far = time.monotonic() + 60.0
    for seed in range(3):
        a = bot._worlds(request(strong).view, random.Random(seed), far)
        b = bot._worlds(request(weak).view, random.Random(seed), far)
        assert [_hands(w) for w in a] == [_hands(w) for w in b]
        assert len(a) == bot.params.worlds


def test_the_one_model_has_the_documented_constants():
    # docs/bots.md, "Bid inference in Georgian Joker": mu = 1.2 * est - 0.6, spread 1.0, mixed
    # with 5% of the uniform; the per-size fit of the four-card deals: slope 2.1, offset -2.8
    assert B.SHAPE == B.BidShape(slope=1.2, offset=-0.6, sigma=1.0, floor=0.05)
    assert B.SIZE_SHAPES[4][:2] == (2.1, -2.8)


def test_each_deal_size_has_its_own_fitted_model():
    # the per-size constants (inference_per_size) cover every deal size of the schedule (GJ-2.4)
    # and keep a floor, so that no bid rules a world out
    assert set(B.SIZE_SHAPES) == set(range(1, 10))
    for n, shape in B.SIZE_SHAPES.items():
        assert B.shape_for(n, True) == shape and B.shape_for(n, False) == B.SHAPE
        assert shape.floor >= 0.02 and shape.sigma > 0 and shape.slope > 0
    assert B.shape_for(3, True) != B.SHAPE  # the fit differs from the one model where it is tried below


def test_the_per_size_model_weighs_the_worlds_by_its_own_constants():
    view = request(_position(["6H", "7D", "8S"])).view
    one, sized = B.BidModel(view), B.BidModel(view, per_size=True)
    assert one.shape == B.SHAPE and sized.shape == B.SIZE_SHAPES[3]
    assert SearchBot("georgian_joker", SearchParams(gj_bid_inference=True, inference_per_size=True)
                     )._inference(view).shape == B.SIZE_SHAPES[3]
    world = get_game("georgian_joker").determinize(view, random.Random(2))
    hands = world.zones()
    expected = 1.0
    for s, b, values, played in sized.bidders:  # the product over the opponents' bids, by the n=3 fit
        est = GeorgianJokerHeuristic.expected_tricks(codes_of(hands[f"hand{s}"] | played), "C", 3)
        expected *= B.bid_probabilities(est, 3, values, B.SIZE_SHAPES[3])[b]
    assert sized.weight(world) == pytest.approx(expected)
    assert sized.weight(world) != pytest.approx(one.weight(world))
    # the option alone, without gj_bid_inference, leaves the worlds uniform
    assert SearchBot("georgian_joker", SearchParams(inference_per_size=True))._inference(view) is None


def _weak_rate(params, view, runs=40):
    bot = SearchBot("georgian_joker", params)
    weak = total = 0
    for seed in range(runs):
        for world in bot._worlds(view, random.Random(seed), time.monotonic() + 60.0):
            total += 1
            weak += not STRONG & set(_hands(world)[1])
    return weak / total


def test_a_world_inconsistent_with_a_bid_is_rarer_under_inference():
    # worlds where seat 1 bid 3 of 3 holding no joker, no ace and no king of trumps: uniform
    # sampling gives it such a hand about 62% of the time (C(29,3)/C(33,3), 960 worlds: the 33
    # cards seat 0 does not see, 4 of them strong); resampled by the bids about a third
    view = request(_position(["6H", "7D", "8S"])).view
    uniform = _weak_rate(SearchParams(), view)
    inferred = _weak_rate(SearchParams(gj_bid_inference=True), view)
    assert 0.55 < uniform < 0.70
    assert inferred < 0.45
    assert _weak_rate(SearchParams(gj_bid_inference=True, inference_per_size=True), view) < 0.45
    # without the flag the worlds are today's uniform ones, draw for draw
    bot = SearchBot("georgian_joker")
    game = get_game("georgian_joker")
    rng = random.Random(5)
    expected = [_hands(game.determinize(view, rng)) for _ in range(bot.params.worlds)]
    assert [_hands(w) for w in bot._worlds(view, random.Random(5), time.monotonic() + 60.0)] == expected


def test_bid_probabilities_stay_a_distribution_when_no_legal_bid_is_within_reach():
    # an estimate far above every value the dealer may bid (3 forbidden, GJ-4.3): the normal
    # gives each a probability of 0 in floating point; the model falls back to the uniform, so
    # that no world is ruled out, rather than divide by zero
    p = B.bid_probabilities(40.0, 3, (0, 1, 2))
    assert p == pytest.approx(dict.fromkeys((0, 1, 2), 1 / 3))


def test_the_model_reads_completed_tricks_and_the_dealers_forbidden_value():
    # bids 1, 0, 1 from the forehand (seat 1): the dealer (seat 0) may not bid 1, 3 - 2 (GJ-4.3)
    state = deal("georgian_joker", {0: ["QS", "9S", "KH"], 1: ["X1", "AC", "7D"]}, fixed={12: "9C"},
                 first_dealer=2, deal_number=3)
    for seat, bid in ((1, "bid:1"), (2, "bid:0"), (3, "bid:1")):
        state.apply(bid, seat)
    assert "bid:1" not in request(state).legal
    state.apply("bid:0", 0)
    # the first trick, complete: each seat's card is back in its bid-time hand (GJ-11.1)
    cards = {}
    for _ in range(4):
        req = request(state)
        cards[req.seat] = req.legal[0].split(":")[1]
        state.apply(req.legal[0], req.seat)
    view = request(state, 2).view
    assert len(view["table"]["tricks"]) == 1 and not view["trick"] and len(view["hand"]) == 2
    model = B.BidModel(view)
    assert model.n == 3
    assert [(s, b, values) for s, b, values, _ in model.bidders] == [(1, 1, (0, 1, 2, 3)), (3, 1, (0, 1, 2, 3)),
                                                                     (0, 0, (0, 2, 3))]
    assert {s: codes_of(m) for s, _, _, m in model.bidders} == {s: [cards[s]] for s in (1, 3, 0)}


def test_inferred_worlds_draw_at_least_one_candidate_and_weigh_by_the_given_model(monkeypatch):
    view = request(_position(["6H", "7D", "8S"])).view
    game = get_game("georgian_joker")
    far = time.monotonic() + 60.0
    # "at least one" candidate (the docstring), even when none is asked for
    assert len(B.inferred_worlds(game, view, random.Random(1), 5, 0, far)) == 5

    class FirstOnly:
        """A model that gives the first candidate all the weight."""

        def __init__(self):
            self.seen = []

        def weight(self, world):
            self.seen.append(world)
            return 1.0 if len(self.seen) == 1 else 0.0

    model = FirstOnly()
    worlds = B.inferred_worlds(game, view, random.Random(1), 6, 4, far, model=model)
    assert len(model.seen) == 4 and worlds == [model.seen[0]] * 6

    def gives_up(v, rng):
        raise InconsistentView("no deal fits")

    monkeypatch.setattr(game, "determinize", gives_up)
    assert B.inferred_worlds(game, view, random.Random(1), 6, 4, far) == []


def test_the_candidates_are_bounded_by_count_and_time(monkeypatch):
    view = request(_position(["6H", "7D", "8S"])).view
    game = get_game("georgian_joker")
    calls = []
    real = game.determinize

    def counting(v, rng):
        calls.append(1)
        return real(v, rng)

    monkeypatch.setattr(game, "determinize", counting)
    bot = SearchBot("georgian_joker", SearchParams(gj_bid_inference=True, worlds=10, inference_candidates=3))
    assert len(bot._worlds(view, random.Random(1), time.monotonic() + 60.0)) == 10
    assert len(calls) == 30
    calls.clear()
    # a deadline already passed: one candidate, resampled into the worlds the search cycles through
    worlds = bot._worlds(view, random.Random(1), time.monotonic())
    assert len(calls) == 1 and len(worlds) == 10


def test_the_small_deal_flat_bid_samples_the_inferred_worlds(monkeypatch):
    state = _position(["6H", "7D", "8S"])
    seen = []
    real = B.inferred_worlds

    def spy(*args, **kwargs):
        worlds = real(*args, **kwargs)
        seen.append(len(worlds))
        return worlds

    monkeypatch.setattr(B, "inferred_worlds", spy)
    req = request(state)
    assert SearchBot("georgian_joker", SearchParams(gj_bid_inference=True)).decide(req) in req.legal
    assert seen == [SearchParams().worlds]
    seen.clear()
    assert SearchBot("georgian_joker").decide(request(state)) in req.legal
    assert seen == []


class SteppingClock:
    """A ``time`` stand-in whose ``monotonic()`` moves on by ``tick`` at every read: the
    decision's budget is then counted in its own clock checks, not in a machine's speed."""

    def __init__(self, tick: float) -> None:
        self.now = 1000.0
        self.tick = tick

    def monotonic(self) -> float:
        self.now += self.tick
        return self.now


def test_a_nine_card_decision_with_inference_keeps_to_the_budget(monkeypatch):
    # deal 9 (nine cards, trump chosen) mid-play: the four bids known, a 100 ms budget
    game = get_game("georgian_joker")
    state = deal("georgian_joker", {}, first_dealer=0, deal_number=9)
    rng = random.Random(3)
    while not request(state).legal[0].startswith("play:"):
        state.apply(game.auto_move(state.view(state.to_act())))
    for _ in range(6):
        state.apply(request(state).legal[rng.randrange(len(request(state).legal))])
    req = request(state)
    assert req.view["table"]["cards_per_player"] == 9 and None not in req.view["table"]["bids"]
    bot = SearchBot("georgian_joker", SearchParams(gj_bid_inference=True, iterations=100_000))
    assert bot._inference(req.view) is not None
    clock = SteppingClock(tick=0.001)
    for module in (search, B, protocol):
        monkeypatch.setattr(module, "time", clock)
    req = type(req)(req.game_id, req.seat, req.view, req.legal, req.rng, 0.1, started=clock.monotonic())
    drawn = []
    real = bot.game.determinize
    monkeypatch.setattr(bot.game, "determinize", lambda *a: drawn.append(1) or real(*a))
    assert bot.decide(req) in req.legal
    params = bot.params
    # the candidates stopped at their share of the budget (inference_time: about 21 of 85 ms)
    assert 1 < len(drawn) < params.worlds * params.inference_candidates
    assert len(drawn) <= 0.1 * params.time_fraction * params.inference_time / clock.tick + 2
    # the tree stopped at the budget, not at the iteration cap
    assert 0 < bot.last_iterations <= 0.1 * params.time_fraction / clock.tick
    assert clock.now <= req.started + 0.1 + clock.tick  # no clock check after the deadline but the last


def test_the_bench_plugin_offers_the_inference_bot():
    from bench import gj_bid_inference

    specs = {spec.name: spec for spec in gj_bid_inference.cardgames_bots()}
    assert set(specs) == {"search_gj_uniform", "search_gj_infer", "search_gj_infer_size", "search_gj_infer_size8"}
    assert all(tuple(spec.games) == ("georgian_joker",) for spec in specs.values())
    params = {name: spec.factory("georgian_joker").params for name, spec in specs.items()}
    assert params.pop("search_gj_uniform") == SearchParams()
    assert all(p.gj_bid_inference for p in params.values())
    assert not params["search_gj_infer"].inference_per_size
    assert params["search_gj_infer_size"].inference_per_size and params["search_gj_infer_size"].inference_candidates == 4
    assert params["search_gj_infer_size8"].inference_per_size and params["search_gj_infer_size8"].inference_candidates == 8
    assert not SearchParams().gj_bid_inference and not SearchParams().inference_per_size


def test_the_search_bot_reads_the_bids_in_georgian_joker_only():
    # the plugin's ``search`` plays the measured variant in Georgian Joker (docs/bots.md): the
    # bid model fitted per deal size, 8 candidates per world; every other game keeps SearchParams()
    assert search.make("georgian_joker").params == SearchParams(gj_bid_inference=True, inference_per_size=True,
                                                                inference_candidates=8)
    for game_id in ("klaberjass", "jojotte", "japanese_joker"):
        assert search.make(game_id).params == SearchParams()
    (spec,) = [s for s in search.cardgames_bots() if s.name == "search"]
    view = request(_position(["6H", "7D", "8S"])).view
    bot = spec.factory("georgian_joker")
    assert bot._inference(view).shape == B.SIZE_SHAPES[3]
    assert len(bot._worlds(view, random.Random(1), time.monotonic() + 60.0)) == bot.params.worlds


def test_search_random_is_search_with_random_rollouts_in_every_game():
    # docs/bots.md: `search` with uniformly random rollouts, kept for arena comparisons; it read
    # no bids in Georgian Joker (SearchParams(rollout="random")), so a comparison with `search`
    # there measured the bid inference along with the rollouts
    (spec,) = [s for s in search.cardgames_bots() if s.name == "search_random"]
    for game_id in ("klaberjass", "jojotte", "georgian_joker", "japanese_joker"):
        assert spec.factory(game_id).params == replace(search.make(game_id).params, rollout="random")


def test_search_and_search_random_offer_every_game():
    """docs/bots.md, the first-party bots' table: ``search`` and ``search_random`` play "all
    four" games. Found by mutation testing: either spec leaving a game out survived."""
    from engine_service.rules import all_game_ids
    specs = {s.name: s for s in search.cardgames_bots()}
    for name in ("search", "search_random"):
        assert set(specs[name].games) == set(all_game_ids()), name


def test_the_flat_playout_bench_bots_differ_from_search_in_their_one_change():
    # bench/search_playouts.py's bots are `search` minus its flat playouts (or plus the flat
    # Klaberjass auction): they searched with SearchParams(), so in Georgian Joker they also
    # lacked the bid inference `search` has there, and docs/bots.md's `--bots search,search_tree`
    # measured both changes at once
    from bench import search_playouts as bench

    specs = {s.name: s for s in bench.cardgames_bots()}
    for game_id in ("klaberjass", "jojotte", "georgian_joker"):
        for name in ("search_tree", "search_gj_flat"):
            assert specs[name].factory(game_id).params == search.make(game_id).params, (name, game_id)
        assert specs["search_kl_flat"].factory(game_id).params == replace(search.make(game_id).params,
                                                                          kl_flat_auction=True)


class _CountedWorld:
    """A sampled world that counts the playouts started from it (``clone``)."""

    def __init__(self, world) -> None:
        self.world, self.clones = world, 0

    def clone(self):
        self.clones += 1
        return self.world.clone()


def test_the_small_deal_flat_bid_plays_every_bid_in_every_inferred_world(monkeypatch):
    """bot_plugins/search.py, ``_by_playouts``: "Every legal action is tried in the same sampled
    worlds", with the bid inference the worlds it resampled (docs/bots.md: "the tree's and the
    small deals' flat bids' alike"): each of the pool's worlds starts one playout per legal bid.
    Found by mutation testing: playing every playout in the pool's first world survived."""
    state = _position(["6H", "7D", "8S"])
    pool = []
    real = B.inferred_worlds

    def counted(*args, **kwargs):
        pool[:] = [_CountedWorld(w) for w in real(*args, **kwargs)]
        return list(pool)

    monkeypatch.setattr(B, "inferred_worlds", counted)
    req = request(state)
    bot = SearchBot("georgian_joker", SearchParams(gj_bid_inference=True, worlds=5))
    assert bot._by_playouts(req, time.monotonic() + 60.0) in req.legal
    assert len(pool) == 5
    assert [w.clones for w in pool] == [len(req.legal)] * 5


def test_a_small_deal_bid_with_inference_and_no_sampled_world_is_answered_by_the_heuristic(monkeypatch):
    """As without the inference (test_search_playout_decisions.py): a sampler that gives up on
    the view leaves no candidate to resample, and the heuristic answers the bid
    (``SearchBot.fallbacks``), rather than the search failing. Found by mutation testing:
    indexing the empty pool (no ``i >= len(pool)`` check) survived."""
    state = _position(["6H", "7D", "8S"])
    bot = SearchBot("georgian_joker", SearchParams(gj_bid_inference=True))
    assert bot._inference(request(state).view) is not None

    def gives_up(*args):
        raise InconsistentView("no deal")

    monkeypatch.setattr(bot.game, "determinize", gives_up)
    assert bot.decide(request(state)) == make_heuristic("georgian_joker").decide(request(state))
    assert bot.fallbacks == 1


def test_the_model_puts_back_a_seats_cards_of_the_finished_tricks_and_the_trick_in_progress():
    """GJ-11.1 (every played card is public, with its player): a bidder's bid-time hand is the
    world's hand plus every card the view shows it played, from the finished tricks
    (``table.tricks``) and from the trick in progress (``trick``) alike. Found by mutation
    testing: a card of the trick in progress, or of a later finished trick, replacing the seat's
    earlier cards survived."""
    state = deal("georgian_joker", {0: ["QS", "9S", "KH"], 1: ["X1", "AC", "7D"]}, fixed={12: "9C"},
                 first_dealer=2, deal_number=3)
    for seat, bid in ((1, "bid:1"), (2, "bid:0"), (3, "bid:1"), (0, "bid:0")):
        state.apply(bid, seat)
    cards: dict[int, list[str]] = {s: [] for s in range(4)}
    for _ in range(6):  # the first trick and two cards of the second
        req = request(state)
        cards[req.seat].append(req.legal[0].split(":")[1])
        state.apply(req.legal[0], req.seat)
    view = request(state).view
    assert len(view["table"]["tricks"]) == 1 and len(view["trick"]) == 2
    twice = [s for s in range(4) if len(cards[s]) == 2 and s != view["seat"]]
    assert len(twice) == 2  # the second trick's leader and the seat after it
    played = {s: sorted(codes_of(m)) for s, _, _, m in B.BidModel(view).bidders}
    assert played == {s: sorted(cards[s]) for s in range(4) if s != view["seat"]}
    # two finished tricks and two cards of the third: each seat's cards of both tricks kept
    for _ in range(4):
        req = request(state)
        cards[req.seat].append(req.legal[0].split(":")[1])
        state.apply(req.legal[0], req.seat)
    view = request(state).view
    assert len(view["table"]["tricks"]) == 2 and len(view["trick"]) == 2
    played = {s: sorted(codes_of(m)) for s, _, _, m in B.BidModel(view).bidders}
    assert played == {s: sorted(cards[s]) for s in range(4) if s != view["seat"]}
    assert sorted(len(m) for m in played.values()) == [2, 3, 3]


def test_a_view_without_the_deal_size_the_forehand_or_the_four_bids_has_nothing_to_infer():
    """The model reads the deal size (``cards_per_player``), the forehand and the four bid
    slots (``table.bids``, in seat order) from the view; a view that lacks one of them gives no
    bidder (a falsy model: the search keeps its uniform worlds), rather than guessing a deal
    size or failing. Found by mutation testing: each of the three guards dropped, and a deal
    size of 3 assumed when none is given, survived."""
    view = request(_position(["6H", "7D", "8S"])).view
    assert B.BidModel(view)  # the complete view: three opponents' bids
    for key, value in (("cards_per_player", None), ("forehand", None), ("bids", [3, 0, 0])):
        table = dict(view["table"], **{key: value})
        assert not B.BidModel(dict(view, table=table)), key
    table = dict(view["table"])
    del table["cards_per_player"]
    assert not B.BidModel(dict(view, table=table))


def test_inferred_worlds_weigh_by_the_views_one_model_when_none_is_given():
    """``inferred_worlds``' docstring: each candidate weighted by ``model`` (:class:`BidModel`
    of ``view``), the one model of every deal size unless the caller passes another. Found by
    mutation testing: the per-size model as the default survived."""
    view = request(_position(["6H", "7D", "8S"])).view
    game = get_game("georgian_joker")
    far = time.monotonic() + 60.0

    def draw(seed, model=None):
        return [_hands(w) for w in B.inferred_worlds(game, view, random.Random(seed), 24, 96, far, model=model)]

    for seed in range(3):
        assert draw(seed) == draw(seed, B.BidModel(view))
    # the per-size model resamples other worlds from the same candidates
    assert any(draw(seed) != draw(seed, B.BidModel(view, per_size=True)) for seed in range(3))


class _FrozenClock:
    def __init__(self, now: float) -> None:
        self.now = now

    def monotonic(self) -> float:
        return self.now


def test_inferred_worlds_stop_drawing_once_the_clock_reaches_stop_at(monkeypatch):
    """``inferred_worlds``' docstring: fewer than ``candidates`` draws "when ``stop_at`` comes
    first, at least one": a clock that reads ``stop_at`` itself has reached it. Found by
    mutation testing: stopping only once the clock was past ``stop_at`` survived."""
    view = request(_position(["6H", "7D", "8S"])).view
    game = get_game("georgian_joker")
    monkeypatch.setattr(B, "time", _FrozenClock(500.0))
    weighed = []
    model = B.BidModel(view)

    class Counting:
        def weight(self, world):
            weighed.append(world)
            return model.weight(world)

    worlds = B.inferred_worlds(game, view, random.Random(1), 6, 4, 500.0, model=Counting())
    assert len(weighed) == 1 and worlds == weighed * 6
    weighed.clear()
    assert len(B.inferred_worlds(game, view, random.Random(1), 6, 4, 500.001, model=Counting())) == 6
    assert len(weighed) == 4


def test_inferred_worlds_stop_at_the_samplers_first_give_up(monkeypatch):
    """``inferred_worlds``' docstring: the sampler giving up on the view (``InconsistentView``)
    ends the drawing "as the search's uniform sampling" (``SearchBot._worlds`` stops at the
    first give-up and keeps the worlds drawn before it): no further draws, and the worlds are
    resampled from the candidates already drawn. Found by mutation testing: drawing on after a
    give-up survived."""
    view = request(_position(["6H", "7D", "8S"])).view
    game = get_game("georgian_joker")
    real = game.determinize
    drawn = []

    def third_gives_up(v, rng):
        if len(drawn) == 2:
            drawn.append(None)
            raise InconsistentView("no deal fits")
        drawn.append(real(v, rng))
        return drawn[-1]

    monkeypatch.setattr(game, "determinize", third_gives_up)
    worlds = B.inferred_worlds(game, view, random.Random(1), 6, 5, time.monotonic() + 60.0)
    assert len(drawn) == 3 and len(worlds) == 6
    assert all(any(w is d for d in drawn[:2]) for w in worlds)


def test_a_deal_size_without_its_own_fit_takes_the_one_model():
    """``shape_for``'s docstring: a deal size's own fit "when ``per_size`` (and one exists),
    else the one model's". Found by mutation testing: looking the size up without a fallback
    (a KeyError for a size with no fit) survived."""
    for n in (0, 10, 36):
        assert B.shape_for(n, True) == B.SHAPE and B.shape_for(n, False) == B.SHAPE
    assert B.BidModel({"seat": 0, "table": {"bids": [None] * 4, "forehand": 1}}, per_size=True).shape == B.SHAPE


def test_the_model_estimates_each_hand_for_the_views_deal_size():
    """The module docstring: the estimate is ``expected_tricks`` of the bid-time hand in a deal
    of the view's size (``cards_per_player``), which values a middling trump or a plain ace
    less in a one- or two-card deal. Deal 2 (two cards each, GJ-2.4): each world's weight is
    the product over the opponents' bids with the estimates of a two-card deal. Found by
    mutation testing: estimating every hand as in a nine-card deal survived."""
    state = deal("georgian_joker", {}, first_dealer=2, deal_number=2)
    while state.to_act() != state.view(0)["dealer"]:
        req = request(state)
        state.apply(req.legal[-1], req.seat)
    view = request(state).view
    model = B.BidModel(view)
    assert model.n == 2 and len(model.bidders) == 3
    trump = view["table"]["trump"]
    game = get_game("georgian_joker")
    differs = False
    for seed in range(8):
        world = game.determinize(view, random.Random(seed))
        hands = world.zones()
        expected = 1.0
        for s, b, values, played in model.bidders:
            hand = codes_of(hands[f"hand{s}"] | played)
            est = GeorgianJokerHeuristic.expected_tricks(hand, trump, 2)
            differs |= est != GeorgianJokerHeuristic.expected_tricks(hand, trump, 9)
            expected *= B.bid_probabilities(est, 2, values)[b]
        assert model.weight(world) == pytest.approx(expected)
    assert differs  # the positions tried are ones where the deal size matters
