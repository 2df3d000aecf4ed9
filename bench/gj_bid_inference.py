"""Measure the search's Georgian Joker worlds resampled by the opponents' bids
(``SearchParams.gj_bid_inference``, :mod:`bot_plugins.bid_inference`) against today's uniform
worlds; the figures are in docs/bots.md ("Bid inference in Georgian Joker").

As a plugin module (``--plugin bench.gj_bid_inference``, with the checkout on ``PYTHONPATH``) it
offers, for measurement only:

* ``search_gj_infer``: ``search`` with ``SearchParams(gj_bid_inference=True)``::

    PYTHONPATH=. python -m bot_plugins.arena --game georgian_joker --bots search_gj_infer,search \\
        --deals 300 --workers 1 --seed 1 --plugin bench.gj_bid_inference

* ``search_gj_infer_size``: the same with ``inference_per_size=True`` (the constants of each deal
  size, ``bid_inference.SIZE_SHAPES``);
* ``search_gj_infer_size8``: ``search_gj_infer_size`` with ``inference_candidates=8``, what the
  ``search`` bot plays in Georgian Joker since 2026-12-05 (``search.GAME_PARAMS``);
* ``search_gj_uniform``: ``search`` with uniform worlds (``SearchParams()``), the reference the
  variants were measured against (it was ``search`` then)::

    PYTHONPATH=. python -m bot_plugins.arena --game georgian_joker --bots search,search_gj_uniform \\
        --deals 1500 --workers 1 --seed 1 --plugin bench.gj_bid_inference

As a script, ``--calibrate N`` collects the bids of the uniform search (``SearchParams()``, the
``search`` bot before 2026-12-05) on N random deals (a random match position each, the earlier
deals played by the auto-move; the nine-card trump chosen by the heuristic; every seat's bid
answered by that search, 200 ms) and fits the bid model's
constants (``BID_SLOPE``, ``BID_OFFSET``, ``BID_SIGMA``, ``BID_FLOOR``) by maximum likelihood on
a grid, printing the fit and the log-likelihood per bid of the shipped constants and of a
uniform guess; ``--per-size`` fits each deal size's constants as well (``SIZE_SHAPES``), and
``--bids FILE`` keeps the collected bids to fit again::

    PYTHONPATH=. python bench/gj_bid_inference.py --calibrate 250
    PYTHONPATH=. python bench/gj_bid_inference.py --calibrate 3000 --per-size --bids bids.json
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import os
import random

from bot_plugins.search import SearchBot, SearchParams
from engine_service.command_line import parse_args
from engine_service.plugins import BotSpec, hookimpl


def search_gj_infer(game_id):
    """The search with its Georgian Joker worlds resampled by the opponents' bids."""
    return SearchBot(game_id, SearchParams(gj_bid_inference=True))


def search_gj_infer_size(game_id):
    """The same, the bid model's constants fitted per deal size."""
    return SearchBot(game_id, SearchParams(gj_bid_inference=True, inference_per_size=True))


def search_gj_infer_size8(game_id):
    """The same with twice the candidates (8 per world kept, 192): a sharper model keeps fewer
    distinct candidates, more of them keep the worlds varied."""
    return SearchBot(game_id, SearchParams(gj_bid_inference=True, inference_per_size=True,
                                           inference_candidates=8))


def search_gj_uniform(game_id):
    """The search with uniform worlds (``SearchParams()``): ``search`` before its Georgian Joker
    worlds read the bids (2026-12-05), the reference the variants were measured against."""
    return SearchBot(game_id)


@hookimpl
def cardgames_bots():
    return [BotSpec("search_gj_uniform", search_gj_uniform, games=("georgian_joker",),
                    description="search with uniform worlds, the bids not read (bench only)"),
            BotSpec("search_gj_infer", search_gj_infer, games=("georgian_joker",),
                    description="search with worlds resampled by the opponents' bids (bench only)"),
            BotSpec("search_gj_infer_size", search_gj_infer_size, games=("georgian_joker",),
                    description="search_gj_infer with the bid model fitted per deal size (bench only)"),
            BotSpec("search_gj_infer_size8", search_gj_infer_size8, games=("georgian_joker",),
                    description="search_gj_infer_size with 8 candidates per world (bench only)")]


#: The calibration grids: (slope, offset, sigma, floor), of the one model and of each deal size's.
GRID = ((0.8, 1.0, 1.2, 1.4), (-1.0, -0.8, -0.6, -0.4, -0.2, 0.0), (0.6, 0.8, 1.0, 1.2), (0.02, 0.05, 0.1))
SIZE_GRID = ((0.6, 0.9, 1.2, 1.5, 1.8, 2.1, 2.4, 2.7, 3.0),
             (-3.1, -2.8, -2.5, -2.2, -1.9, -1.6, -1.3, -1.0, -0.7, -0.4, -0.1, 0.2),
             (0.4, 0.5, 0.6, 0.8, 1.0, 1.2), (0.02, 0.05, 0.1))


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


def log_likelihood(rows: list[dict], shape) -> float:
    """The log-likelihood of ``rows``' bids under the bid model of constants ``shape``."""
    from bot_plugins.bid_inference import bid_probabilities

    return sum(math.log(bid_probabilities(r["est"], r["n"], tuple(r["legal"]), shape)[r["bid"]]) for r in rows)


def fit(rows: list[dict], grid) -> tuple:
    """The grid's constants of the highest log-likelihood on ``rows``."""
    from bot_plugins.bid_inference import BidShape

    return max((BidShape(*g) for g in grid), key=lambda g: log_likelihood(rows, g))


def main(argv: list[str] | None = None) -> None:
    from bot_plugins import bid_inference as B

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], allow_abbrev=False)
    p.add_argument("--calibrate", type=int, default=250, metavar="N", help="random deals to collect bids from")
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--time-ms", type=float, default=200.0)
    p.add_argument("--per-size", action="store_true", help="also fit the constants of each deal size")
    p.add_argument("--bids", metavar="FILE", help="read the bids from FILE (JSON) if it exists, else collect and "
                                                  "write them there")
    args = parse_args(p, argv)
    if args.bids and os.path.exists(args.bids):
        with open(args.bids) as f:
            rows = json.load(f)
    else:
        rows = collect_bids(args.calibrate, args.seed, args.time_ms / 1000)
        if args.bids:
            with open(args.bids, "w") as f:
                json.dump(rows, f)
    best = fit(rows, itertools.product(*GRID))
    uniform = sum(-math.log(len(r["legal"])) for r in rows)
    print(f"{len(rows)} bids; log-likelihood per bid: uniform {uniform / len(rows):.3f}, "
          f"shipped {tuple(B.SHAPE)} {log_likelihood(rows, B.SHAPE) / len(rows):.3f}, "
          f"best (slope, offset, sigma, floor) {tuple(best)} {log_likelihood(rows, best) / len(rows):.3f}")
    if not args.per_size:
        return
    total = {"uniform": 0.0, "one model": 0.0, "per size": 0.0, "shipped per size": 0.0}
    for n in sorted({r["n"] for r in rows}):
        sized = [r for r in rows if r["n"] == n]
        own = fit(sized, itertools.product(*SIZE_GRID))
        shipped = B.shape_for(n, True)
        figures = {"uniform": sum(-math.log(len(r["legal"])) for r in sized),
                   "one model": log_likelihood(sized, B.SHAPE), "per size": log_likelihood(sized, own),
                   "shipped per size": log_likelihood(sized, shipped)}
        for k, v in figures.items():
            total[k] += v
        print(f"n={n}: {len(sized)} bids; per bid " + ", ".join(f"{k} {v / len(sized):.3f}" for k, v in figures.items())
              + f"; fit {tuple(own)}, shipped {tuple(shipped)}")
    print("all sizes, per bid: " + ", ".join(f"{k} {v / len(rows):.3f}" for k, v in total.items()))


if __name__ == "__main__":
    main()
