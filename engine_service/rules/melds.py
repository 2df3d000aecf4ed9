"""Meld detection shared by Klaberjass and Jo-Jotte: sequences and quartets.

Cards of a suit occupy nine adjacent bits in natural order ``A K Q J T 9 8 7 6`` (see
:mod:`.cards`), so a run of cards adjacent in the natural order (KL-1.4, JJ-5) is a run of
adjacent set bits inside one suit's nine bits.
"""

from __future__ import annotations

from typing import NamedTuple

from .cards import RANKS, SUITS


class Run(NamedTuple):
    """A maximal run of adjacent cards of one suit: ``top`` is the natural rank index of its
    highest card (0 = ace), ``length`` its number of cards."""

    suit: int
    top: int
    length: int

    def cards(self) -> list[int]:
        base = self.suit * 9 + self.top
        return list(range(base, base + self.length))

    def top_code(self) -> str:
        return RANKS[self.top] + SUITS[self.suit]


def runs(hand: int, min_length: int = 3) -> list[Run]:
    """Maximal runs of ``min_length`` or more adjacent cards in each suit (KL-5.2: a run is
    never split), suits in the order S H D C, higher runs first within a suit."""
    out: list[Run] = []
    for suit in range(4):
        bits = (hand >> (9 * suit)) & 0x1FF
        r = 0
        while bits:
            if bits & 1:
                start = r
                while bits & 1:
                    bits >>= 1
                    r += 1
                if r - start >= min_length:
                    out.append(Run(suit, start, r - start))
            else:
                bits >>= 1
                r += 1
    return out


def quartets(hand: int) -> list[int]:
    """Natural rank indices held in all four suits (four of a kind), highest first."""
    out = []
    for r in range(9):
        if all(hand >> (9 * s + r) & 1 for s in range(4)):
            out.append(r)
    return out
