"""No view tells apart two deals its audience cannot tell apart by the rules.

``test_invariants.test_no_view_leaks_a_secret_card`` looks for secret card codes in a view; a
view can also leak without naming a card (a statement, a count, a flag, a list that depends on
a hidden card) or name a card the game's own ``secret_cards`` wrongly calls known. This module
checks the views against the rulebooks' information rules (GJ-11, JJK-9, KL-5.5 / KL-A21,
JJ-5.9) by swapping cards instead:

take a random match and, at a decision, two cards of the current deal that the audience has
never held in it; deal the same deal with those two cards exchanged and replay the same actions.
When every action is still legal, the audience's own legal sets are the same (a seat knows what
it was offered: JJ-4.2's exchange step tells a holder of sevens whether the other player holds
one) and the public record is the same (for a seat: the whole public view; for a spectator: the
automatic meld statements and the face-up cards, which the rulebooks publish as they are), the
audience has no way to know which of the two deals is being played: its view must be identical.
Nothing here uses ``secret_cards``: the cards swapped are every card the audience never held.
"""

from __future__ import annotations

import random
from typing import Any

import pytest

from engine_service.rules import CHANCE, TERMINAL, all_game_ids, get_game

from .test_invariants import option_sets

GAMES = all_game_ids()

# face-up cards and automatic statements: the public record a spectator is compared on
_PUBLIC_RECORD = ("turn_up", "original_turn_up", "info_card", "exchange", "trump_indicator", "columns", "melds")


def _public_record(view: dict[str, Any]) -> list[Any]:
    table = view.get("table") or {}
    return [table.get(k) for k in _PUBLIC_RECORD]


def _held(state, seats: int) -> list[int]:
    zones = state.zones()
    return [zones.get(f"hand{s}", 0) for s in range(seats)]


def _replay(start, deck: list[int], actions: list[tuple[int, int, list[str]]], viewer: int | None):
    """The deal from ``start`` (a clone waiting for its deck) with ``deck`` and the same actions,
    or None when an action is illegal there or the viewer was offered another legal set."""
    alt = start.clone()
    alt.deal(deck)
    for action, seat, legal in actions:
        if alt.to_act() != seat or action not in alt.legal_ids():
            return None
        if seat == viewer and alt.legal_actions() != legal:
            return None
        alt.apply_id(action)
    return alt


def _compare_swaps(game_id: str, seed: int, options: dict, every: int, pairs: int) -> list[int]:
    """Play one match; return [seat comparisons, spectator comparisons] made (asserting each)."""
    game = get_game(game_id)
    n = game.num_seats
    rng = random.Random(seed)
    state = game.new_state(options, first_dealer=rng.randrange(n))
    compared = [0, 0]
    step = 0
    while state.to_act() != TERMINAL:
        if state.to_act() == CHANCE:
            start = state.clone()
            deck = list(game.pack)
            rng.shuffle(deck)
            state.deal(deck)
            actions: list[tuple[int, int, list[str]]] = []
            held = [0] * n
            continue
        held = [h | now for h, now in zip(held, _held(state, n))]
        step += 1
        if step % every == 0:
            public = state.public_view()
            for viewer in [*range(n), None]:
                never = [c for c in game.pack if viewer is None or not held[viewer] >> c & 1]
                for _ in range(pairs):
                    a, b = rng.sample(never, 2)
                    alt = _replay(start, [b if c == a else a if c == b else c for c in deck], actions, viewer)
                    if alt is None:
                        continue
                    alt_public = alt.public_view()
                    if viewer is None:
                        if _public_record(alt_public) != _public_record(public):
                            continue
                        assert alt_public == public, (game_id, options, seed, step, "spectator", a, b)
                        compared[1] += 1
                        continue
                    if alt_public != public:
                        continue
                    if alt.to_act() == viewer and alt.legal_actions() != state.legal_actions():
                        continue
                    assert alt.view(viewer) == state.view(viewer), (game_id, options, seed, step, viewer, a, b)
                    compared[0] += 1
        who = state.to_act()
        legal = state.legal_actions()
        action = rng.choice(state.legal_ids())
        actions.append((action, who, legal))
        state.apply_id(action)
    return compared


@pytest.mark.parametrize("game_id", GAMES)
def test_views_do_not_tell_apart_deals_their_audience_cannot(game_id):
    """GJ-11.3, JJK-9.4, KL-5.5, JJ-5.9: swapping two cards an audience never held, in a deal
    played the same way, changes nothing in that audience's view (see the module docstring)."""
    four = get_game(game_id).num_seats == 4
    totals = [0, 0]
    for i, options in enumerate(option_sets(game_id)):
        if four:  # 24 (16) deals of four hands: one nines match per option set, fewer stops
            options = {**options, "deal_schedule": "nines"}
        got = _compare_swaps(game_id, 50 + i, options, every=13 if four else 5, pairs=4)
        totals = [t + g for t, g in zip(totals, got)]
    # the check has power: many swaps were indistinguishable publicly and were compared
    assert totals[0] >= 100 and totals[1] >= 50, totals
