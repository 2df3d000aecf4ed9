"""Helpers for the Georgian Joker tests: readable decks, states at a chosen deal, snapshots."""

from __future__ import annotations

import json
import random

from engine_service.rules import CHANCE, get_game
from engine_service.rules.cards import CODES, PACK36_JOKERS, card_id

GAME = get_game("georgian_joker")
STANDARD_N = [1, 2, 3, 4, 5, 6, 7, 8, 9, 9, 9, 9, 8, 7, 6, 5, 4, 3, 2, 1, 9, 9, 9, 9]


def ids(codes):
    return [card_id(c) for c in (codes.split() if isinstance(codes, str) else codes)]


def deck_for(hands: dict[int, list[str]] | list[list[str]], dealer: int, indicator: str | None = None) -> list[str]:
    """The deck (top card first) that deals ``hands`` by GJ-3.2 / GJ-3.5 for ``dealer``, with
    ``indicator`` turned (n <= 8) and the remaining cards as the stock in pack order."""
    hands = {s: (h.split() if isinstance(h, str) else list(h)) for s, h in
             (hands.items() if isinstance(hands, dict) else enumerate(hands))}
    n = len(hands[0])
    assert all(len(h) == n for h in hands.values())
    f = (dealer + 1) % 4
    deck = [None] * (4 * n)
    for i in range(4):
        for r, c in enumerate(hands[(f + i) % 4]):
            deck[4 * r + i] = c
    used = set(deck)
    if indicator is not None:
        deck.append(indicator)
        used.add(indicator)
    deck += [CODES[c] for c in PACK36_JOKERS if CODES[c] not in used]
    assert len(deck) == 36 and len(set(deck)) == 36, deck
    return deck


def fill_hands(fixed: dict[int, str], n: int, avoid: dict[int, str] | None = None,
               exclude: str = "") -> list[list[str]]:
    """Complete partial hands to ``n`` cards from the rest of the pack (pack order), never giving
    a seat a card of the suits in ``avoid[seat]``; cards in ``exclude`` are kept out."""
    avoid = avoid or {}
    hands = [list(fixed.get(s, "").split()) for s in range(4)]
    used = {c for h in hands for c in h} | set(exclude.split())
    pool = [CODES[c] for c in PACK36_JOKERS if CODES[c] not in used]
    for s in range(4):
        for c in list(pool):
            if len(hands[s]) == n:
                break
            if c[0] == "X" or c[1] not in avoid.get(s, ""):
                hands[s].append(c)
                pool.remove(c)
        assert len(hands[s]) == n, f"cannot fill seat {s}"
    return hands


def state_at_deal(deal_number: int, options: dict | None = None, first_dealer: int = 0, seed: int = 0):
    """A match waiting for the deck of deal ``deal_number`` (1-based); earlier deals are played
    with random decks by the auto-move policy (GJ-12.2), through the public API only."""
    rng = random.Random(seed)
    state = GAME.new_state(options or {}, first_dealer=first_dealer)
    while len(state.deal_results()) < deal_number - 1:
        if state.to_act() == CHANCE:
            deck = list(GAME.pack)
            rng.shuffle(deck)
            state.deal(deck)
        else:
            state.apply(GAME.auto_move(state.view(state.to_act())))
    assert state.to_act() == CHANCE
    return state


def snapshot(state) -> str:
    return json.dumps([state.to_act(), state.legal_actions(), state.zones(), state.result(),
                       state.deal_results(), state.public_view(), [state.view(s) for s in range(4)],
                       len(state.history())], sort_keys=True)
