"""Measure the search bot's decisions by flat playouts (``SearchBot._by_playouts``) against the
tree they replaced; the figures are in docs/bots.md ("Decisions by flat playouts").

As a plugin module (``--plugin bench.search_playouts``, with the checkout on ``PYTHONPATH``) it
offers the former bots, for measurement only (the shipped ``search`` has no switch for them):

* ``search_tree``: the search with its tree deciding everything (before the flat playouts);
* ``search_gj_flat``: flat playouts for the small Georgian Joker bids only (the Jo-Jotte double,
  redouble and nullo by the tree);
* ``search_kl_flat``: the search with the Klaberjass auction (take / name / schmeiss and its
  answer) by flat playouts too (``SearchParams.kl_flat_auction``); measured no better than the
  shipped ``search``, whose auction is the tree's (docs/bots.md).

As a script it plays the arena on the small Georgian Joker deals only, the boards whose match
position deals at most ``--max-cards`` cards a player (``24k + p``; the arena itself plays
every position in turn, where the small deals are a quarter of the boards)::

    python bench/search_playouts.py --bots search,search_tree --per-position 500

With ``--kl-auction N`` it measures instead the CPU time of the Klaberjass auction decisions
(take / pass, then name / pass after a pass, KL-3.1) of ``search_kl_flat`` and ``search`` on N
random deals, each decision with a fresh ``--time-ms`` budget, and prints mean / p50 / p99 / max
and how often each answer was given::

    python bench/search_playouts.py --kl-auction 100
"""

from __future__ import annotations

import argparse
import multiprocessing
import time
from concurrent.futures import ProcessPoolExecutor

from dataclasses import replace

from bot_plugins.search import GAME_PARAMS, SearchBot, SearchParams
from engine_service.command_line import parse_args
from engine_service.plugins import BotSpec, hookimpl


class TreeSearch(SearchBot):
    """The search before the flat playouts: the tree decides everything."""

    def _by_playouts(self, request, stop_at):
        return None


class SmallBidsOnly(SearchBot):
    """Flat playouts for the small Georgian Joker bids only."""

    def _by_playouts(self, request, stop_at):
        return None if self.game_id == "jojotte" else super()._by_playouts(request, stop_at)


def searchs_params(game_id):
    """The ``search`` bot's parameters for the game (its GAME_PARAMS: Georgian Joker's worlds
    read the bids), so that each bench bot differs from ``search`` in its one change only."""
    return GAME_PARAMS.get(game_id, SearchParams())


def tree_search(game_id):
    return TreeSearch(game_id, searchs_params(game_id))


def small_bids_only(game_id):
    return SmallBidsOnly(game_id, searchs_params(game_id))


def kl_flat_auction(game_id):
    """The search with the Klaberjass auction by flat playouts."""
    return SearchBot(game_id, replace(searchs_params(game_id), kl_flat_auction=True))


@hookimpl
def cardgames_bots():
    games = ("georgian_joker", "jojotte", "klaberjass")
    return [BotSpec("search_tree", tree_search, games=games,
                    description="search with the tree deciding everything (bench only)"),
            BotSpec("search_gj_flat", small_bids_only, games=games,
                    description="search with flat playouts for small GJ bids only (bench only)"),
            BotSpec("search_kl_flat", kl_flat_auction, games=games,
                    description="search with the Klaberjass auction by flat playouts (bench only)")]


def kl_auction_cpu(deals: int, seed: int, budget_s: float) -> None:
    import random
    import statistics

    from engine_service.plugins import DecisionRequest
    from engine_service.rules import get_game

    game = get_game("klaberjass")
    for name, bot in (("search_kl_flat", kl_flat_auction("klaberjass")),
                      ("search", SearchBot("klaberjass"))):
        rng = random.Random(seed)
        cpu, answers = [], {}
        for k in range(deals):
            state = game.new_state({}, first_dealer=k % 2)
            deck = list(game.pack)
            rng.shuffle(deck)
            state.deal(deck)
            while True:  # every auction decision of the deal, each answered "pass" to go on
                who = state.to_act()
                if who < 0:  # four passes: thrown in (KL-3.5)
                    break
                view = state.view(who)
                legal = tuple(view["legal"])
                if "pass" not in legal:
                    break
                req = DecisionRequest("klaberjass", who, view, legal, random.Random(seed * 1000 + k), budget_s)
                started = time.process_time()
                answer = bot.decide(req)
                cpu.append(1000 * (time.process_time() - started))
                answers[answer] = answers.get(answer, 0) + 1
                state.apply("pass", who)
        cpu.sort()
        p99 = cpu[min(len(cpu) - 1, int(0.99 * len(cpu)))]
        print(f"{name}: {len(cpu)} auction decisions, cpu ms mean {statistics.mean(cpu):.1f} "
              f"p50 {cpu[len(cpu) // 2]:.1f} p99 {p99:.1f} max {cpu[-1]:.1f}; answers {dict(sorted(answers.items()))}")


def main(argv: list[str] | None = None) -> None:
    from bot_plugins.arena import (ArenaConfig, _init_worker, format_report, match_length, play_board,
                                   summarize)
    from engine_service.rules import get_game

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], allow_abbrev=False)
    p.add_argument("--bots", default="search,search_tree")
    p.add_argument("--per-position", type=int, default=500, help="boards per small match position")
    p.add_argument("--max-cards", type=int, default=3)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--time-ms", type=float, default=200.0)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--kl-auction", type=int, default=0, metavar="N",
                   help="measure the Klaberjass auction decisions' CPU on N deals instead")
    args = parse_args(p, argv)
    if args.kl_auction:
        kl_auction_cpu(args.kl_auction, args.seed, args.time_ms / 1000)
        return
    cfg = ArenaConfig(game="georgian_joker", bots=tuple(args.bots.split(",")), deals=0, seed=args.seed,
                      workers=args.workers, budget_s=args.time_ms / 1000,
                      plugins=("bench.search_playouts",), progress=False)
    cycle = match_length(cfg.game, cfg.options)
    # the cards a player of each match position gets: deal the auto-move match once
    game = get_game(cfg.game)
    state = game.new_state({}, first_dealer=0)
    sizes = []
    while len(sizes) < cycle:
        state.deal(list(game.pack))
        sizes.append(state.view(0)["table"]["cards_per_player"])
        while state.to_act() >= 0:
            state.apply(game.auto_move(state.view(state.to_act())))
    positions = [i for i, n in enumerate(sizes) if n <= args.max_cards]
    boards = [cycle * k + i for k in range(args.per_position) for i in positions]
    cfg = ArenaConfig(**{**vars(cfg), "deals": len(boards)})
    started = time.monotonic()
    ctx = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(args.workers, mp_context=ctx, initializer=_init_worker,
                             initargs=(cfg, cycle)) as pool:
        results = list(pool.map(play_board, boards, chunksize=4))
    print(f"small deals (at most {args.max_cards} cards a player): match positions {positions}")
    print(format_report(summarize(cfg, results, time.monotonic() - started)))


if __name__ == "__main__":
    main()
