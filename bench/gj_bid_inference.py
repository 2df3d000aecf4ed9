"""Measure the search's Georgian Joker worlds resampled by the opponents' bids
(``SearchParams.gj_bid_inference``, :mod:`bot_plugins.bid_inference`) against today's uniform
worlds; the figures are in docs/bots.md ("Bid inference in Georgian Joker").

As a plugin module (``--plugin bench.gj_bid_inference``, with the checkout on ``PYTHONPATH``) it
offers, for measurement only:

* ``search_gj_infer``: ``search`` with ``SearchParams(gj_bid_inference=True)``::

    PYTHONPATH=. python -m bot_plugins.arena --game georgian_joker --bots search_gj_infer,search \\
        --deals 300 --workers 1 --seed 1 --plugin bench.gj_bid_inference

As a script, ``--calibrate N`` collects the bids of the ``search`` bot on N random deals (a
random match position each, the earlier deals played by the auto-move; the nine-card trump chosen
by the heuristic; every seat's bid answered by ``search``, 200 ms) and fits the bid model's
constants (``BID_SLOPE``, ``BID_OFFSET``, ``BID_SIGMA``, ``BID_FLOOR``) by maximum likelihood on
a grid, printing the fit and the log-likelihood per bid of the shipped constants and of a
uniform guess::

    PYTHONPATH=. python bench/gj_bid_inference.py --calibrate 250
"""

from __future__ import annotations

import argparse
import itertools
import math
import random

from bot_plugins.search import SearchBot, SearchParams
from engine_service.plugins import BotSpec, hookimpl


def search_gj_infer(game_id):
    """The search with its Georgian Joker worlds resampled by the opponents' bids."""
    return SearchBot(game_id, SearchParams(gj_bid_inference=True))


@hookimpl
def cardgames_bots():
    return [BotSpec("search_gj_infer", search_gj_infer, games=("georgian_joker",),
                    description="search with worlds resampled by the opponents' bids (bench only)")]


def collect_bids(deals: int, seed: int, budget_s: float) -> list[dict]:
    """``{"n", "est", "bid", "legal"}`` of every bid ``search`` makes on ``deals`` random deals."""
    from bot_plugins.heuristic.georgian_joker import GeorgianJokerHeuristic
    from engine_service.plugins import DecisionRequest
    from engine_service.rules import get_game

    game = get_game("georgian_joker")
    bot = SearchBot("georgian_joker")
    heuristic = GeorgianJokerHeuristic()
    rng = random.Random(seed)
    state = game.new_state({}, first_dealer=0)
    setups = []  # the state at each match position's deal_setup
    while len(setups) < 24:
        setups.append(state.clone())
        state.deal(list(game.pack))
        while state.to_act() >= 0:
            state.apply(game.auto_move(state.view(state.to_act())))
    rows = []
    for _ in range(deals):
        s = setups[rng.randrange(24)].clone()
        deck = list(game.pack)
        rng.shuffle(deck)
        s.deal(deck)
        while True:
            who = s.to_act()
            view = s.view(who)
            legal = tuple(view["legal"])
            req = DecisionRequest("georgian_joker", who, view, legal, random.Random(rng.random()), budget_s)
            if legal[0].startswith("trump:"):
                s.apply(heuristic.decide(req), who)
                continue
            if not legal[0].startswith("bid:"):
                break
            answer = bot.decide(req)
            table = view["table"]
            rows.append({"n": table["cards_per_player"], "bid": int(answer[4:]),
                         "legal": [int(a[4:]) for a in legal],
                         "est": GeorgianJokerHeuristic.expected_tricks(list(view["hand"]), table["trump"],
                                                                       table["cards_per_player"])})
            s.apply(answer, who)
    return rows


def log_likelihood(rows: list[dict], slope: float, offset: float, sigma: float, floor: float) -> float:
    from bot_plugins import bid_inference as B

    saved = B.BID_SLOPE, B.BID_OFFSET, B.BID_SIGMA, B.BID_FLOOR
    B.BID_SLOPE, B.BID_OFFSET, B.BID_SIGMA, B.BID_FLOOR = slope, offset, sigma, floor
    try:
        return sum(math.log(B.bid_probabilities(r["est"], r["n"], tuple(r["legal"]))[r["bid"]]) for r in rows)
    finally:
        B.BID_SLOPE, B.BID_OFFSET, B.BID_SIGMA, B.BID_FLOOR = saved


def main() -> None:
    from bot_plugins import bid_inference as B

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--calibrate", type=int, default=250, metavar="N", help="random deals to collect bids from")
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--time-ms", type=float, default=200.0)
    args = p.parse_args()
    rows = collect_bids(args.calibrate, args.seed, args.time_ms / 1000)
    grid = itertools.product((0.8, 1.0, 1.2, 1.4), (-1.0, -0.8, -0.6, -0.4, -0.2, 0.0),
                             (0.6, 0.8, 1.0, 1.2), (0.02, 0.05, 0.1))
    best = max(grid, key=lambda g: log_likelihood(rows, *g))
    shipped = (B.BID_SLOPE, B.BID_OFFSET, B.BID_SIGMA, B.BID_FLOOR)
    uniform = sum(-math.log(len(r["legal"])) for r in rows)
    print(f"{len(rows)} bids; log-likelihood per bid: uniform {uniform / len(rows):.3f}, "
          f"shipped {shipped} {log_likelihood(rows, *shipped) / len(rows):.3f}, "
          f"best (slope, offset, sigma, floor) {best} {log_likelihood(rows, *best) / len(rows):.3f}")


if __name__ == "__main__":
    main()
