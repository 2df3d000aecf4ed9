"""Rigged deals for the bots' fixed-position tests: a deck that gives chosen seats chosen cards.

The rules core deals a deck in an order of its own (one card at a time in Georgian Joker,
packets in Klaberjass, ...). Rather than restate each order, :func:`rigged_deck` deals the pack
once in pack order, reads from the seats' views which deck position went to which seat, and
puts the wanted cards at positions of their seat (``fixed`` pins a position outright: a turn-up
or a trump indicator). Every other card keeps its pack order.
"""

from __future__ import annotations

import json
import random
from typing import Mapping, Sequence

from engine_service.plugins import DecisionRequest
from engine_service.rules import get_game
from engine_service.rules.cards import card_code


def _pack_codes(game) -> list[str]:
    return [card_code(c) for c in game.pack]


def rigged_deck(state, hands: Mapping[int, Sequence[str]],
                fixed: Mapping[int, str] | None = None) -> list[str]:
    """A deck for ``state``'s next deal (``state`` waits for one) that gives each seat of
    ``hands`` those cards (more cards of the seat come from the rest of the pack) and puts
    ``fixed[i]`` at deck position ``i``."""
    game = get_game(state.view(0)["game"])
    pack = _pack_codes(game)
    probe = state.clone()
    probe.deal(pack)
    owner = {}
    for seat in range(game.num_seats):
        for code in probe.view(seat)["hand"]:
            owner[pack.index(code)] = seat
    deck: list[str | None] = [None] * len(pack)
    for i, code in (fixed or {}).items():
        deck[i] = code
    for seat, cards in hands.items():
        slots = [i for i in sorted(owner) if owner[i] == seat and deck[i] is None]
        assert len(slots) >= len(cards), (seat, cards)
        for i, code in zip(slots, cards):
            deck[i] = code
    placed = [c for c in deck if c is not None]
    assert len(placed) == len(set(placed)), f"a card asked for twice: {placed}"
    rest = [c for c in pack if c not in placed]
    return [c if c is not None else rest.pop(0) for c in deck]


def deal(game_id: str, hands: Mapping[int, Sequence[str]], fixed: Mapping[int, str] | None = None,
         first_dealer: int = 0, deal_number: int = 1, options: Mapping | None = None):
    """A new match's state at deal ``deal_number`` (earlier deals played by the auto-move
    policy on pack-order decks), dealt with :func:`rigged_deck`."""
    game = get_game(game_id)
    state = game.new_state(options or {}, first_dealer=first_dealer)
    for _ in range(deal_number - 1):
        state.deal(_pack_codes(game))
        while state.to_act() >= 0:
            state.apply(game.auto_move(state.view(state.to_act())))
    state.deal(rigged_deck(state, hands, fixed))
    return state


def played(game_id: str, deck: Sequence[str], actions: Sequence[tuple[int, str]], first_dealer: int = 0):
    """A new match dealt ``deck`` (rulebook codes in deck order), then ``actions`` (seat, action)."""
    state = get_game(game_id).new_state({}, first_dealer=first_dealer)
    state.deal(list(deck))
    for seat, action in actions:
        state.apply(action, seat)
    return state


def request(state, seat: int | None = None) -> DecisionRequest:
    """The decision request a host would send for the seat to act (a JSON copy of its view)."""
    seat = state.to_act() if seat is None else seat
    view = json.loads(json.dumps(state.view(seat)))
    return DecisionRequest(view["game"], seat, view, tuple(view["legal"]), random.Random(1), 1.0)
