"""Bid inference for the search's Georgian Joker worlds (``SearchParams.gj_bid_inference``).

``determinize`` draws the hidden cards uniformly among the deals consistent with the view: hand
sizes, proven voids, the played cards (GJ-11). It ignores the bids, which it must, since a bid is
a free decision that proves nothing (GJ-4.2). Yet a bid says a lot about a hand: a player who bid
3 of 3 most likely holds jokers or high trumps. :class:`BidModel` turns that into a weight: how
likely a player with the hand a world gives an opponent *at bid time* (the cards it holds in the
world plus those the view shows it has played since, GJ-11.1) would have bid what it bid. The
search then samples its worlds by importance resampling (:func:`inferred_worlds`): it draws more
candidates than it needs from ``determinize`` and keeps ``worlds`` of them, drawn with
probability proportional to their weights.

The bid model is a rounded normal around a hand-strength estimate: the ``heuristic`` bot's own
expected tricks (:meth:`GeorgianJokerHeuristic.expected_tricks`: jokers, trump honours and
length, plain aces and guarded kings, ruffs), ``mu = BID_SLOPE * est + BID_OFFSET``, spread
``BID_SIGMA``, bid 0 taking the whole lower tail and bid ``n`` the upper one (GJ-4.2), normalised
over the values that bidder could bid (the dealer's forbidden value excluded, GJ-4.3), mixed
with ``BID_FLOOR`` of the uniform so that no world is ever ruled out (a bid is a free choice; a
player may bluff, misjudge or be a random bot). The constants were fitted by maximum likelihood
on 1,000 bids of the ``search`` bot itself on random Georgian Joker deals of every match
position (``bench/gj_bid_inference.py --calibrate``; docs/bots.md). ``SIZE_SHAPES`` holds
constants fitted for each deal size on its own (``SearchParams.inference_per_size``): the bids of
a small deal follow the estimate more sharply than those of a nine-card one.

Only the view enters: the bids (``table.bids``), the cards each seat played (``table.tricks``
and ``trick``), the trump, the deal size and the dealer; the candidate worlds come from
``determinize(view)``.
"""

from __future__ import annotations

import math
import random
import time
from typing import Any, Mapping, NamedTuple

from engine_service.rules import InconsistentView
from engine_service.rules.cards import card_id, codes_of

from .heuristic.georgian_joker import GeorgianJokerHeuristic

#: mu = BID_SLOPE * expected tricks + BID_OFFSET, spread BID_SIGMA, uniform share BID_FLOOR.
BID_SLOPE = 1.2
BID_OFFSET = -0.6
BID_SIGMA = 1.0
BID_FLOOR = 0.05


class BidShape(NamedTuple):
    """One bid model's constants: ``mu = slope * est + offset``, spread ``sigma``, uniform share
    ``floor``."""

    slope: float
    offset: float
    sigma: float
    floor: float


#: The one model of every deal size (``SearchParams.gj_bid_inference``).
SHAPE = BidShape(BID_SLOPE, BID_OFFSET, BID_SIGMA, BID_FLOOR)
#: Constants fitted per deal size ``n`` (``SearchParams.inference_per_size``): maximum likelihood
#: on a grid, per size, on the ``search`` bot's own bids (``bench/gj_bid_inference.py
#: --calibrate 3000 --per-size``; docs/bots.md). The floor's grid stops at 0.02: a bid is a free
#: choice, and no world may be ruled out.
SIZE_SHAPES: dict[int, BidShape] = {
    1: BidShape(2.7, -1.6, 0.8, 0.02),
    2: BidShape(2.4, -1.9, 1.2, 0.02),
    3: BidShape(1.8, -1.6, 1.0, 0.02),
    4: BidShape(2.1, -2.8, 1.0, 0.02),
    5: BidShape(1.5, -1.9, 1.0, 0.02),
    6: BidShape(1.5, -1.6, 1.0, 0.02),
    7: BidShape(1.2, -0.7, 0.8, 0.02),
    8: BidShape(1.2, -0.7, 1.0, 0.02),
    9: BidShape(1.2, -0.4, 1.0, 0.02),
}

_SQRT2 = math.sqrt(2.0)


def _cdf(x: float) -> float:
    return 0.5 * (1.0 + math.erf(x / _SQRT2))


def shape_for(n: int, per_size: bool) -> BidShape:
    """The constants of a deal of ``n`` cards: its own fit when ``per_size`` (and one exists),
    else the one model's."""
    return SIZE_SHAPES.get(n, SHAPE) if per_size else SHAPE


def bid_probabilities(est: float, n: int, values: tuple[int, ...],
                      shape: BidShape = SHAPE) -> dict[int, float]:
    """The model's probability of each bid in ``values`` (the legal ones, GJ-4.2 / GJ-4.3) for a
    hand of ``est`` expected tricks in a deal of ``n`` cards."""
    mu = shape.slope * est + shape.offset
    sigma, floor = shape.sigma, shape.floor
    raw = {}
    for k in values:
        lo = 0.0 if k == 0 else _cdf((k - 0.5 - mu) / sigma)
        hi = 1.0 if k == n else _cdf((k + 0.5 - mu) / sigma)
        raw[k] = max(hi - lo, 0.0)
    z = sum(raw.values())
    u = 1.0 / len(values)
    if z <= 0.0:
        return dict.fromkeys(values, u)
    return {k: (1.0 - floor) * p / z + floor * u for k, p in raw.items()}


class BidModel:
    """The weight of a sampled world by the opponents' bids, built from one seat's view."""

    def __init__(self, view: Mapping[str, Any], per_size: bool = False) -> None:
        table = view["table"]
        me = view["seat"]
        self.n = n = table.get("cards_per_player") or 0
        self.shape = shape_for(n, per_size)
        self.trump = table.get("trump")
        bids = list(table.get("bids") or ())
        forehand = table.get("forehand")
        played: dict[int, int] = {}
        for trick in table.get("tricks") or ():
            for play in trick["plays"]:
                played[play["seat"]] = played.get(play["seat"], 0) | 1 << card_id(play["card"])
        for play in view.get("trick") or ():
            played[play["seat"]] = played.get(play["seat"], 0) | 1 << card_id(play["card"])
        #: (seat, its bid, the values it could bid, the cards it has played this deal)
        self.bidders: list[tuple[int, int, tuple[int, ...], int]] = []
        if not n or forehand is None or len(bids) != 4:
            return
        for i in range(4):
            s = (forehand + i) & 3  # the bidding order, GJ-4.1
            b = bids[s]
            if b is None:
                break
            if s == me:
                continue
            values = tuple(range(n + 1))
            if i == 3:  # the dealer: n - (sum of the first three) is forbidden when >= 0 (GJ-4.3)
                first = sum(bids[(forehand + j) & 3] for j in range(3))
                if first <= n:
                    values = tuple(v for v in values if v != n - first)
            self.bidders.append((s, b, values, played.get(s, 0)))

    def __bool__(self) -> bool:
        return bool(self.bidders)

    def weight(self, world: Any) -> float:
        """The likelihood of the opponents' bids given the hands ``world`` deals them."""
        w = 1.0
        hands = world.zones()
        for s, b, values, played in self.bidders:
            hand = codes_of(hands[f"hand{s}"] | played)
            est = GeorgianJokerHeuristic.expected_tricks(hand, self.trump, self.n)
            w *= bid_probabilities(est, self.n, values, self.shape)[b]
        return w


def inferred_worlds(game: Any, view: Mapping[str, Any], rng: random.Random, count: int,
                    candidates: int, stop_at: float, model: BidModel | None = None) -> list[Any]:
    """``count`` worlds by importance resampling: up to ``candidates`` draws of
    ``game.determinize(view, rng)`` (fewer when ``stop_at`` comes first, at least one), each
    weighted by ``model`` (:class:`BidModel` of ``view``), then ``count`` of them drawn with
    replacement with probability proportional to their weights. The sampler giving up on the
    view (``InconsistentView``) ends the draws: the worlds are drawn from the candidates before
    it, and are none when it gave up at once, as the search's uniform sampling does."""
    model = model if model is not None else BidModel(view)
    pool, weights = [], []
    for i in range(max(1, candidates)):
        if i and time.monotonic() >= stop_at:
            break
        try:
            world = game.determinize(view, rng)
        except InconsistentView:
            break
        pool.append(world)
        weights.append(model.weight(world))
    if not pool:
        return []
    return rng.choices(pool, weights=weights, k=count)
