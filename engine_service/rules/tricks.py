"""Trick mechanics shared by the games: suit masks, strength tables, trick winners.

A game describes its trick order by two strength tables (natural rank index -> strength, built
with :func:`engine_service.rules.cards.order_table`): one for the trump suit and one for plain
suits. Jokers are handled by the Joker games themselves (GJ-6, JJK-6); these helpers cover
normal cards.
"""

from __future__ import annotations

from typing import Sequence

from .cards import SUIT_MASK


def suit_cards(hand: int, suit: int) -> int:
    """The cards of ``hand`` (a mask) in ``suit``."""
    return hand & SUIT_MASK[suit]


def strength(card: int, led_suit: int, trump: int, trump_table: Sequence[int], plain_table: Sequence[int]) -> int:
    """Comparable strength of a normal card in a trick led in ``led_suit``.

    Trumps beat every plain card, cards of the led suit beat off-suit discards (which can never
    win). ``trump`` may be 4 (no trump).
    """
    s, r = divmod(card, 9)
    if s == trump:
        return 200 + trump_table[r]
    if s == led_suit:
        return 100 + plain_table[r]
    return 0


def trick_winner(plays: Sequence[tuple[int, int]], trump: int, trump_table: Sequence[int],
                 plain_table: Sequence[int]) -> int:
    """Seat that wins a trick of normal cards given ``(seat, card)`` plays, the lead first."""
    led_suit = plays[0][1] // 9
    best_seat, best = plays[0][0], -1
    for seat, card in plays:
        v = strength(card, led_suit, trump, trump_table, plain_table)
        if v > best:
            best_seat, best = seat, v
    return best_seat


def higher_in_suit(hand_suit: int, card: int, table: Sequence[int]) -> int:
    """The cards of ``hand_suit`` (mask, one suit: that of ``card``) that beat ``card``."""
    base = (card // 9) * 9
    limit = table[card - base]
    out = 0
    m = hand_suit
    while m:
        low = m & -m
        c = low.bit_length() - 1
        if table[c - base] > limit:
            out |= low
        m ^= low
    return out
