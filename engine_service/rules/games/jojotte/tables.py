"""Precomputed Jo-Jotte tables: trick strength, who beats whom, card values, meld shapes.

Everything the inner loop needs is a tuple lookup by card id or by an 8-bit suit pattern, built
once at import (ARCHITECTURE.md section 3, "speed matters"). Card ids are those of
:mod:`engine_service.rules.cards` (``suit * 9 + natural rank``, ranks ``A K Q J T 9 8 7`` = 0..7;
rank 8, the six, is not in the Jo-Jotte pack), so the ranks of one suit are bits 0..7 of that
suit's nine-bit field.

Strains are 0..3 for the suits ``S H D C`` and 4 (:data:`NT`) for no-trump.
"""

from __future__ import annotations

from ...cards import PACK32, PACK32_MASK, RANKS, SUIT_MASK, order_table
from ...melds import RUNS  # noqa: F401  (re-exported: JJ-5.2 maximal runs)

NT = 4

#: JJ-1.2: trump suit, highest first.
TRUMP_ORDER = "J9ATKQ87"
#: JJ-1.3: other suits, and every suit at no-trump.
PLAIN_ORDER = "ATKQJ987"
TRUMP_STRENGTH = order_table(TRUMP_ORDER)
PLAIN_STRENGTH = order_table(PLAIN_ORDER)

JACK, NINE, ACE, TEN, KING, QUEEN, SEVEN = (RANKS.index(r) for r in "J9ATKQ7")
SEVENS_MASK = sum(1 << (s * 9 + SEVEN) for s in range(4))


def _trump_mask(strain: int) -> int:
    return SUIT_MASK[strain] & PACK32_MASK if strain < NT else 0


#: Cards of the trump suit per strain (0 at no-trump).
TRUMP_MASK = tuple(_trump_mask(s) for s in range(5))
#: Cards of the suit of each card id (the "led suit" mask of JJ-6.8).
SUIT_MASK_OF = tuple(SUIT_MASK[c // 9] & PACK32_MASK for c in range(36))


def _strength(card: int, strain: int) -> int:
    table = TRUMP_STRENGTH if card // 9 == strain else PLAIN_STRENGTH
    return table[card % 9]


def _build_beaters(strain: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """Per led card: (cards of the led suit that beat it, every card that wins over it)."""
    better_same = [0] * 36
    wins_over = [0] * 36
    trumps = TRUMP_MASK[strain]
    for lead in PACK32:
        ls = lead // 9
        m = 0
        for c in PACK32:
            if c // 9 == ls and _strength(c, strain) > _strength(lead, strain):
                m |= 1 << c
        better_same[lead] = m
        wins_over[lead] = m | (trumps if ls != strain else 0)
    return tuple(better_same), tuple(wins_over)


_BEATERS = tuple(_build_beaters(s) for s in range(5))
#: BETTER_SAME[strain][lead]: cards of the led suit that beat ``lead`` (JJ-6.3's "must beat").
BETTER_SAME = tuple(b[0] for b in _BEATERS)
#: WINS_OVER[strain][lead]: cards that win the trick when played second on ``lead`` (JJ-6.6).
WINS_OVER = tuple(b[1] for b in _BEATERS)


def must_beat_tables(head_plain: bool) -> tuple[tuple[int, ...], ...]:
    """HEAD[strain][lead]: the cards the follower must choose from when he holds any (JJ-6.8).

    The led suit's better cards when the lead is a trump, or for every lead when
    ``jj_must_head_plain`` (JJ-A16) is on; otherwise 0 (no obligation to beat).
    """
    out = []
    for strain in range(5):
        row = []
        for c in range(36):
            if not PACK32_MASK >> c & 1:
                row.append(0)
            elif head_plain or c // 9 == strain:
                row.append(BETTER_SAME[strain][c])
            else:
                row.append(0)
        out.append(tuple(row))
    return tuple(out)


#: HEAD_TABLES[jj_must_head_plain]: :func:`must_beat_tables` for both option values.
HEAD_TABLES = (must_beat_tables(False), must_beat_tables(True))


def _value(card: int, strain: int) -> int:
    """JJ-8.1: premium value of a card."""
    r = card % 9
    if card // 9 == strain:
        if r == JACK:
            return 20
        if r == NINE:
            return 15
    if r in (ACE, TEN):
        return 10
    if r in (KING, QUEEN):
        return 5
    return 0


#: CARD_VALUE[strain][card] (JJ-8.1).
CARD_VALUE = tuple(tuple(_value(c, s) for c in range(36)) for s in range(5))


def _suit_lists() -> tuple[tuple[list[int], ...], ...]:
    out = []
    for s in range(4):
        row = []
        for byte in range(256):
            row.append([s * 9 + r for r in range(8) if byte >> r & 1])
        out.append(tuple(row))
    return tuple(out)


#: SUIT_LISTS[suit][8-bit rank pattern]: the card ids, ascending (S H D C, then A K Q ... 7).
SUIT_LISTS = _suit_lists()


#: JJ-1.5 quartet strength per natural rank (larger wins); ranks that cannot form a quartet get
#: -1: suit contracts ``J 9 A T K Q`` (no eights, sevens), no-trump ``A T K Q J`` (no nines),
#: option ``jj_nt_quartet_order = natural``: ``A K Q J T``.
QUARTET_ORDER_SUIT = order_table("J9ATKQ")
QUARTET_ORDER_NT_PLAIN = order_table("ATKQJ")
QUARTET_ORDER_NT_NATURAL = order_table("AKQJT")


def sequence_points(length: int) -> int:
    """JJ-5.2: 3 cards 20, 4 cards 40, 5 or more 50."""
    if length >= 5:
        return 50
    if length == 4:
        return 40
    if length == 3:
        return 20
    return 0
