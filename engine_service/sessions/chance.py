"""Server-side chance: every deck and the draw for the first dealer come from the operating
system's CSPRNG (``secrets.SystemRandom``), one fresh shuffle per deal (GJ-3.1: a fresh,
uniformly random permutation of the pack before each deal, server-only; JJK-3.1; the shuffle of
KL-2.3 / JJ-2.3, whose "seedable generator" is any generator a test or tool hands the rules core:
docs/games/jojotte.md and klaberjass.md, documented choices).

Nothing here is seeded or reproducible on purpose: a deck is unpredictable to anybody who
knows earlier decks (servers.md section 4, item 1: the RNG seed in a filtered state revealed
future shuffles). Reproducibility comes from the log instead: every deck dealt is stored and
a match is replayed from its decks, never from a seed.
"""

from __future__ import annotations

import secrets
from typing import Sequence

from ..rules.cards import card_code
from ..rules.game import Game
from ..rules.options import Options
from ..store.base import DeckRecord, new_salt

_csprng = secrets.SystemRandom()


def shuffled_pack(game: Game) -> list[int]:
    cards = list(game.pack)
    _csprng.shuffle(cards)
    return cards


def random_deck(game: Game) -> tuple[str, ...]:
    """A uniformly random permutation of the game's pack, as card codes (top card first)."""
    return tuple(card_code(c) for c in shuffled_pack(game))


def salted_deck(deal: int, cards: Sequence[str]) -> DeckRecord:
    """The record of a deck the server deals (random or given by the admin), with a fresh
    secret salt from the CSPRNG: its commitment is public from the deal on, the salt and the
    cards only once the match is over (docs/api.md, "Fair dealing")."""
    return DeckRecord(deal, tuple(cards), new_salt())


def random_deck_record(game: Game, deal: int) -> DeckRecord:
    """A fresh CSPRNG deck for deal ``deal``, salted."""
    return salted_deck(deal, random_deck(game))


def draw_first_dealer(game: Game, options: Options) -> int:
    """The rulebook's draw for the first deal (``Game.draw_first_dealer``) on a CSPRNG shuffle."""
    return game.draw_first_dealer(shuffled_pack(game), options)
