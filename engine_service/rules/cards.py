"""Card codes, card ids, packs and bitmask helpers shared by all four games.

Every rulebook writes a card as rank + suit (``JS``, ``TH``, ``7C``; jokers ``X1`` ``X2``).
Inside the engine a card is a small int and a set of cards is an int bitmask, so that legal-move
generation is a handful of AND/OR operations (ARCHITECTURE.md section 3, "speed matters").
Strings exist only at the edge: :func:`card_id` / :func:`card_code` convert.

Layout: ``id = suit * 9 + rank`` with suits ``S H D C`` (0..3, the order every rulebook uses
for tie-breaks and listing) and ranks in the *natural* order ``A K Q J T 9 8 7 6`` (0..8), so
that the cards of one suit occupy nine consecutive bits and a run of adjacent cards in the
natural order (KL-1.4, JJ-5) is a run of adjacent bits.  The jokers are ids 36 and 37.
Trick-taking orders differ per game and per trump, so they are tables (``rank -> strength``)
built once per game, never a property of the id.
"""

from __future__ import annotations

from typing import Iterable, Iterator, Sequence

from .errors import MalformedAction

SUITS = "SHDC"
RANKS = "AKQJT9876"  # natural order, highest first (index = rank id)
SUIT_INDEX = {s: i for i, s in enumerate(SUITS)}
RANK_INDEX = {r: i for i, r in enumerate(RANKS)}

JOKER1 = 36
JOKER2 = 37
JOKER_MASK = (1 << JOKER1) | (1 << JOKER2)
NO_TRUMP = 4  # strain index for NT, after the four suits
STRAINS = ("S", "H", "D", "C", "NT")

SUIT_MASK = tuple(0x1FF << (9 * s) for s in range(4))


def _build_codes() -> tuple[str, ...]:
    codes = [RANKS[i % 9] + SUITS[i // 9] for i in range(36)]
    codes += ["X1", "X2"]
    return tuple(codes)


CODES: tuple[str, ...] = _build_codes()
_ID_BY_CODE = {c: i for i, c in enumerate(CODES)}


def card_code(card: int) -> str:
    """The rulebook code of a card id (``0 -> 'AS'``, ``36 -> 'X1'``)."""
    return CODES[card]


def card_id(code: str) -> int:
    """The id of a rulebook card code; :class:`MalformedAction` if it is not a card."""
    try:
        return _ID_BY_CODE[code]
    except (KeyError, TypeError):
        raise MalformedAction(f"not a card code: {code!r}") from None


def strain_index(code: str) -> int:
    """``S H D C NT`` -> 0..4; :class:`MalformedAction` otherwise."""
    try:
        return STRAINS.index(code)
    except ValueError:
        raise MalformedAction(f"not a suit or NT: {code!r}") from None


# ---- packs -------------------------------------------------------------------------------

def _pack(ranks: str, jokers: bool = False, drop: Iterable[str] = ()) -> tuple[int, ...]:
    dropped = {card_id(c) for c in drop}
    cards = [s * 9 + RANK_INDEX[r] for s in range(4) for r in ranks]
    cards = [c for c in cards if c not in dropped]
    if jokers:
        cards += [JOKER1, JOKER2]
    return tuple(cards)


#: KL-1.1, JJ-1.1: A K Q J T 9 8 7 in each suit.
PACK32: tuple[int, ...] = _pack("AKQJT987")
#: GJ-1.1, JJK-1.1: 6..A in each suit with 6S and 6C replaced by the two jokers.
PACK36_JOKERS: tuple[int, ...] = _pack("AKQJT9876", jokers=True, drop=("6S", "6C"))


def mask_of(cards: Iterable[int]) -> int:
    m = 0
    for c in cards:
        m |= 1 << c
    return m


PACK32_MASK = mask_of(PACK32)
PACK36_JOKERS_MASK = mask_of(PACK36_JOKERS)


def iter_mask(mask: int) -> Iterator[int]:
    """Card ids in a mask, ascending id (suit order S H D C, then natural rank order)."""
    while mask:
        low = mask & -mask
        yield low.bit_length() - 1
        mask ^= low


def cards_of(mask: int) -> list[int]:
    return list(iter_mask(mask))


def popcount(mask: int) -> int:
    return mask.bit_count()


def codes_of(mask: int) -> list[str]:
    """Card codes of a mask in the canonical listing order (S H D C, then A K Q ... 6)."""
    return [CODES[c] for c in iter_mask(mask)]


def parse_deck(deck: Sequence[str] | Sequence[int], pack: Sequence[int]) -> tuple[int, ...]:
    """Validate that ``deck`` is a permutation of ``pack`` and return it as card ids.

    Accepts card codes or ids. Raises :class:`~engine_service.rules.errors.InvalidDeck`
    naming the problem (wrong length, unknown card, duplicate, card not in this pack).
    """
    from .errors import InvalidDeck

    if isinstance(deck, (str, bytes)) or not hasattr(deck, "__len__"):
        raise InvalidDeck("a deck must be a list of card codes")
    ids: list[int] = []
    for item in deck:
        if isinstance(item, bool):
            raise InvalidDeck(f"not a card: {item!r}")
        if isinstance(item, int):
            if not 0 <= item < len(CODES):
                raise InvalidDeck(f"not a card id: {item!r}")
            ids.append(item)
        else:
            try:
                ids.append(card_id(item))
            except MalformedAction:
                raise InvalidDeck(f"not a card code: {item!r}") from None
    if len(ids) != len(pack):
        raise InvalidDeck(f"a deck for this game has {len(pack)} cards, got {len(ids)}")
    seen: set[int] = set()
    allowed = set(pack)
    for c in ids:
        if c in seen:
            raise InvalidDeck(f"card {CODES[c]} appears twice in the deck")
        if c not in allowed:
            raise InvalidDeck(f"card {CODES[c]} is not in this game's pack")
        seen.add(c)
    return tuple(ids)


def order_table(order: str) -> tuple[int, ...]:
    """Strength per natural rank index for a trick order written highest first.

    ``order_table("J9ATKQ87")`` gives the Klaberjass trump order (KL-1.2): the returned tuple
    maps a natural rank index to a strength where a larger number beats a smaller one; ranks
    absent from ``order`` get -1.
    """
    table = [-1] * 9
    n = len(order)
    for pos, r in enumerate(order):
        table[RANK_INDEX[r]] = n - pos
    return tuple(table)
