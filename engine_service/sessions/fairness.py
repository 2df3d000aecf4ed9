"""Fair dealing: the public commitment to every deck, and what may be revealed of it once the
match is over (docs/api.md, "Fair dealing").

The server commits to each deck before anyone sees a card of it, and after the match opens
the commitment for the cards **the table saw** (played, turned up, shown): the rulebooks never
reveal the others (KL-2.10 and JJ-2.8: the unused cards "are never revealed"; JJK-9.7: a match
that ends early reveals no unplayed hidden card; GJ-11.3). So a deck is committed card by card
(scheme 2, :data:`~..store.base.SCHEME_PER_CARD`):

* each card gets its own salt, ``card_salt(deck salt, position)``: the first 32 hex digits of
  HMAC-SHA256 keyed with the deck's 16-byte secret salt over the position in ASCII decimal, so
  that revealing one card's salt tells nothing of another's, and the deck salt stays secret;
* ``card_hash = sha256("<card salt>:<card code>")``, lowercase hex;
* the commitment is ``sha256("<card hash 0>,<card hash 1>,...")`` over the deck top first.

A reveal gives, per position, the card and its salt when the table saw it, else only the card
hash: a client recomputes the hash of every shown card and the commitment from the list. A
hidden card's hash does not give it away (its salt is 128 secret bits).

Decks recorded under schema 3 (:data:`~..store.base.SCHEME_WHOLE_DECK`) were committed as
``sha256("<deck salt>:<card codes comma-separated>")``, which opens only as a whole: their
reveal carries the shown cards and no proof. Decks recorded before schema 3 have no salt and
no commitment.

Pure: no I/O; the replay that finds the shown cards runs off the event loop (the caller's
choice).
"""

from __future__ import annotations

import hashlib
import hmac
from typing import Mapping, Sequence

from ..rules.cards import card_code, codes_of, mask_of
from ..rules.game import CHANCE, Game
from ..rules.options import Options
from ..store.base import SCHEME_PER_CARD, SCHEME_WHOLE_DECK, ActionRecord, DeckRecord
from .api import DealReveal


def card_salt(deck_salt: str, position: int) -> str:
    """The salt of the card at ``position`` (0 = top) of a deck salted with ``deck_salt``."""
    return hmac.new(bytes.fromhex(deck_salt), str(position).encode("ascii"), hashlib.sha256).hexdigest()[:32]


def card_hash(salt: str, card: str) -> str:
    """The lowercase hex SHA-256 of ``"<card salt>:<card code>"``."""
    return hashlib.sha256(f"{salt}:{card}".encode("utf-8")).hexdigest()


def commitment_of_hashes(hashes: Sequence[str]) -> str:
    """The commitment to a deck from its cards' hashes, top first."""
    return hashlib.sha256(",".join(hashes).encode("ascii")).hexdigest()


def deck_commitment(deck: DeckRecord) -> str:
    """The public commitment to ``deck`` under its scheme; "" for a deck without a salt."""
    if not deck.salt:
        return ""
    if deck.scheme == SCHEME_WHOLE_DECK:
        return hashlib.sha256(f"{deck.salt}:{','.join(deck.cards)}".encode("utf-8")).hexdigest()
    if deck.scheme != SCHEME_PER_CARD:
        raise ValueError(f"deal {deck.deal}: unknown commitment scheme {deck.scheme}")
    return commitment_of_hashes([card_hash(card_salt(deck.salt, i), c) for i, c in enumerate(deck.cards)])


def reveal(deck: DeckRecord, shown: frozenset[str], commitment: str) -> DealReveal:
    """What may be revealed of ``deck`` once the match is over: the cards in ``shown`` (with
    their salts, under scheme 2), the hash of every other card; under scheme 1 and without a
    salt the shown cards alone."""
    cards = tuple(c if c in shown else "" for c in deck.cards)
    if not deck.salt or deck.scheme != SCHEME_PER_CARD:
        n = len(cards)
        return DealReveal(deck.deal, cards, commitment, ("",) * n, ("",) * n)
    salts, hashes = [], []
    for i, c in enumerate(deck.cards):
        salt = card_salt(deck.salt, i)
        salts.append(salt if c in shown else "")
        hashes.append("" if c in shown else card_hash(salt, c))
    return DealReveal(deck.deal, cards, commitment, tuple(salts), tuple(hashes))


def shown_cards(game: Game, options: Options, first_dealer: int, decks: Mapping[int, DeckRecord],
                actions: Sequence[ActionRecord]) -> dict[int, frozenset[str]]:
    """Per deal dealt, the card codes the table saw: every card a spectator may know at some
    point of the deal (``State.secret_cards(None)`` is the rules' own account of it) and every
    card an action names (a played card, Jo-Jotte's exchanged seven). Replays the match from
    its decks and actions (the same fold as the session's)."""
    pack_codes = {card_code(c) for c in game.pack}
    pack_mask = mask_of(game.pack)
    state = game.new_state(options, first_dealer=first_dealer)
    known: dict[int, int] = {}
    named: dict[int, set[str]] = {}
    deal = -1

    def deal_next() -> bool:
        nonlocal deal
        if state.to_act() != CHANCE or deal + 1 not in decks:
            return False
        deal += 1
        state.deal(decks[deal].cards)
        known[deal], named[deal] = 0, set()
        return True

    def look() -> None:
        if deal >= 0 and state.to_act() >= 0:  # in a deal (out of one, the games differ)
            known[deal] |= pack_mask & ~state.secret_cards(None)

    deal_next()
    look()
    for rec in actions:
        if deal < 0:
            break
        state.apply(rec.action, rec.seat)
        named[deal].update(t for t in rec.action.split(":")[1:] if t in pack_codes)
        look()
        if deal_next():
            look()
    return {d: frozenset(named[d].union(codes_of(mask))) for d, mask in known.items()}
