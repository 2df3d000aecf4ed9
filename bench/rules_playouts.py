"""Random-playout speed of the rules core, per game, on one core.

    python bench/rules_playouts.py [--game ID ...] [--seconds 5]

For each game: complete random deals per second (from dealing a shuffled deck to the scored
deal, random legal actions through the fast path ``legal_ids`` / ``apply_id``; thrown-in
deals count as deals and are reported separately), actions per second, and the memory of one
state (mid-deal, measured with tracemalloc over many clones). Decks come from a pre-shuffled
pool so that the figure measures the engine, not ``random.shuffle``. The process pins itself to
one CPU where the OS allows it.

Targets on the reference machine (issues #2, #3): klaberjass >= 10,000 deals/s, jojotte >=
7,000, georgian_joker >= 8,000 nine-card deals/s, japanese_joker >= 5,000.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import time
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from engine_service.command_line import parse_args  # noqa: E402
from engine_service.rules import CHANCE, TERMINAL, all_game_ids, get_game  # noqa: E402

TARGETS = {"klaberjass": 10_000, "jojotte": 7_000, "georgian_joker": 8_000, "japanese_joker": 5_000}
#: Options under which the target is defined (Georgian Joker: nine-card deals only).
BENCH_OPTIONS = {"georgian_joker": {"deal_schedule": "nines"}}


def measure_speed(game_id: str, seconds: float, seed: int = 1) -> dict:
    game = get_game(game_id)
    options = BENCH_OPTIONS.get(game_id, {})
    try:
        game.options(options)
    except Exception:  # an option name the game does not have: measure under defaults
        options = {}
    rng = random.Random(seed)
    pool = []
    for _ in range(512):
        deck = list(game.pack)
        rng.shuffle(deck)
        pool.append(tuple(deck))
    rnd = rng.random
    deals = thrown = actions = 0
    state = game.new_state(options, first_dealer=0)
    start = time.perf_counter()
    deadline = start + seconds
    while True:
        who = state.to_act()
        if who == CHANCE:
            state._deal(pool[deals & 511])  # the pool is pre-validated: skip parse_deck
            done = len(state.deal_results())
            while True:
                who = state.to_act()
                if who < 0:
                    break
                legal = state.legal_ids()
                state._apply(legal[int(rnd() * len(legal))])
                actions += 1
                if len(state.deal_results()) > done:
                    break
            deals += 1
            res = state.deal_results()
            if res and res[-1].get("thrown_in"):
                thrown += 1
            if time.perf_counter() > deadline:
                break
        elif who == TERMINAL:
            state = game.new_state(options, first_dealer=0)
        else:  # a match continues past a deal result only through CHANCE
            legal = state.legal_ids()
            state._apply(legal[int(rnd() * len(legal))])
            actions += 1
    elapsed = time.perf_counter() - start
    return {"deals_per_s": deals / elapsed, "thrown_in_share": thrown / max(deals, 1),
            "actions_per_s": actions / elapsed, "deals": deals}


def state_memory(game_id: str, copies: int = 2000) -> float:
    """Bytes per state, mid-deal (after the deal and a few actions), over many clones."""
    game = get_game(game_id)
    rng = random.Random(3)
    state = game.new_state(BENCH_OPTIONS.get(game_id, {}), first_dealer=0)
    deck = list(game.pack)
    rng.shuffle(deck)
    state.deal(deck)
    for _ in range(6):
        if state.to_act() < 0:
            break
        state.apply_id(state.legal_ids()[0])
    tracemalloc.start()
    before = tracemalloc.take_snapshot()
    keep = [state.clone() for _ in range(copies)]
    after = tracemalloc.take_snapshot()
    tracemalloc.stop()
    size = sum(s.size_diff for s in after.compare_to(before, "filename"))
    del keep
    return size / copies


def determinize_ms(game_id: str, views: int = 60, samples: int = 5, seed: int = 901) -> float:
    """Milliseconds per ``game.determinize(view, rng)`` sample, over the views of the seat to
    act at every fifth decision of random matches (every phase of the match), ``samples``
    each. Jo-Jotte's target is 20 ms a sample (the search draws a world per iteration)."""
    game = get_game(game_id)
    rng = random.Random(seed)
    picked: list = []
    state = game.new_state(BENCH_OPTIONS.get(game_id, {}), first_dealer=0)
    step = 0
    while len(picked) < views:
        who = state.to_act()
        if who == TERMINAL:
            state = game.new_state(BENCH_OPTIONS.get(game_id, {}), first_dealer=0)
        elif who == CHANCE:
            deck = list(game.pack)
            rng.shuffle(deck)
            state.deal(deck)
        else:
            if step % 5 == 0:
                picked.append(state.view(who))
            step += 1
            state.apply_id(rng.choice(state.legal_ids()))
    sampler = random.Random(0)
    start = time.perf_counter()
    for view in picked:
        for _ in range(samples):
            game.determinize(view, sampler)
    return 1000 * (time.perf_counter() - start) / (views * samples)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], allow_abbrev=False)
    parser.add_argument("--game", action="append", help="game id (repeatable; default: all)")
    parser.add_argument("--seconds", type=float, default=5.0)
    args = parse_args(parser, argv)
    if hasattr(os, "sched_setaffinity"):
        try:
            os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
        except OSError:
            pass
    games = args.game or all_game_ids()
    print(f"{'game':<16}{'deals/s':>10}{'target':>9}{'actions/s':>12}{'thrown-in':>11}{'state bytes':>13}"
          f"{'determinize ms':>16}")
    for g in games:
        r = measure_speed(g, args.seconds)
        mem = state_memory(g)
        sample_ms = determinize_ms(g)
        target = TARGETS.get(g, 0)
        mark = "ok" if r["deals_per_s"] >= target else "BELOW"
        print(f"{g:<16}{r['deals_per_s']:>10,.0f}{target:>9,}{r['actions_per_s']:>12,.0f}"
              f"{r['thrown_in_share']:>10.1%}{mem:>13,.0f}{sample_ms:>16.2f}  {mark}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
