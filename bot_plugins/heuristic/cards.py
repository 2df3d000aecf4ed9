"""Card arithmetic on rulebook codes (``JS``, ``TH``, ``X1``) for the view-based heuristics.

The heuristic bots see only a seat's view, where cards are codes; these helpers keep the
per-game modules about strategy rather than string handling.
"""

from __future__ import annotations

from typing import Iterable, Mapping, Sequence

SUITS = "SHDC"


def suit(code: str) -> str:
    return code[1]


def rank(code: str) -> str:
    return code[0]


def is_joker(code: str) -> bool:
    return code[0] == "X"


def order_index(order: str) -> dict[str, int]:
    """``"J9ATKQ87"`` -> strength per rank letter, larger is stronger."""
    return {r: len(order) - i for i, r in enumerate(order)}


def play_card(action: str) -> str | None:
    """The card code of a ``play:...`` action (None for other actions)."""
    if not action.startswith("play:"):
        return None
    return action.split(":")[1]


def plays_by_card(legal: Iterable[str]) -> dict[str, list[str]]:
    """Legal play actions grouped by card (a card may have several variants)."""
    out: dict[str, list[str]] = {}
    for a in legal:
        c = play_card(a)
        if c is not None:
            out.setdefault(c, []).append(a)
    return out


def played_cards(deal_actions: Sequence[Mapping[str, str]]) -> list[tuple[int, str]]:
    """``(seat, card)`` of every card played in the deal so far, from the public actions."""
    out = []
    for entry in deal_actions:
        c = play_card(entry.get("action", ""))
        if c is not None:
            out.append((entry["seat"], c))
    return out


def by_suit(cards: Iterable[str]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {s: [] for s in SUITS}
    for c in cards:
        if not is_joker(c):
            out[suit(c)].append(c)
    return out


#: For decisions a heuristic has no opinion on (steps that table options add), in this order.
NEUTRAL = ("declare", "keep", "no_exchange", "accept", "pass")


def neutral_choice(legal: Sequence[str]) -> str:
    """A safe answer to a decision the strategy does not model: declare melds, keep cards,
    accept, pass; else the first legal action."""
    for word in NEUTRAL:
        if word in legal:
            return word
    return legal[0]
