"""The Klaberjass game definition: options, state factory, draw for deal, auto-move policy and
determinization (the engine side of rulebook ``klaberjass.md``)."""

from __future__ import annotations

import random
from typing import Any, Mapping, Sequence

from ...cards import SUITS, card_id
from ...errors import InvalidDeck, InvalidOptions
from ...game import Game
from ...options import Options
from .config import OPTION_SPECS
from .state import KlaberjassState
from .tables import DRAW_ORDER, PACK, PLAIN_ORDER, TRUMP_ORDER


class KlaberjassGame(Game):
    """Klaberjass (клоббер): two players, 32 cards, two-round auction on a turned-up card."""

    id = "klaberjass"
    name = "Klaberjass"
    rulebook = "klaberjass.md"
    num_seats = 2
    pack = PACK
    option_specs = OPTION_SPECS
    draw_keys = ("first_dealer", "elder")
    description = ("Two players, 32 cards; trump fixed by a two-round auction on a turned-up card, "
                   "sequence melds, bella, nine tricks, first to 500.")

    def new_state(self, options: Mapping[str, Any] | Options | None = None,
                  first_dealer: int = 0) -> KlaberjassState:
        if first_dealer not in (0, 1) or isinstance(first_dealer, bool):
            raise InvalidOptions(f"first_dealer must be seat 0 or 1, got {first_dealer!r}",
                                 option="first_dealer", allowed="0, 1")
        return KlaberjassState(self, self.options(options), first_dealer)

    def draw_first_dealer(self, shuffled_pack: Sequence[int] | Sequence[str],
                          options: Options | Mapping[str, Any] | None = None) -> int:
        """KL-2.1: seat 0 draws the top card, seat 1 the next; the **lower** card under KL-1.5
        (``kl_draw_order``) deals. Equal ranks: with ``kl_draw_tie = redraw`` both draw again,
        which from one shuffled pack means the next two cards (the same distribution as
        returning and reshuffling); with ``suit_order`` the suit order S > H > D > C breaks the
        tie (the lower suit deals). Should every pair of the pack tie (a redraw that never ends
        within one pack), the suit order decides the last pair."""
        opts = self.options(options)
        order = DRAW_ORDER[opts["kl_draw_order"]]
        cards = [card_id(c) if isinstance(c, str) else c for c in shuffled_pack]
        if len(cards) < 2:
            raise InvalidDeck("the draw needs at least two cards")
        suit_tie = opts["kl_draw_tie"] == "suit_order"
        i = 0
        while True:  # the pair that has no whole pair after it always decides
            a, b = cards[i], cards[i + 1]
            ra, rb = order[a % 9], order[b % 9]
            if ra != rb:
                return 0 if ra < rb else 1
            if suit_tie or i + 3 >= len(cards):
                return 0 if a // 9 > b // 9 else 1
            i += 2

    def auto_move(self, view: Mapping[str, Any]) -> str:
        """NOTATION section 5: auction ``pass``, dix window ``keep``; play the legal card of
        lowest trick rank (trumps above every plain card, ties by suit order S H D C), never
        announcing bella and never exchanging during play. Decisions NOTATION 5 does not name
        (documented in docs/games/klaberjass.md): a schmeiss is answered ``accept``, a forced
        name after a refused schmeiss names the first legal suit, a meld step is ``declare``."""
        legal = list(view["legal"])
        if not legal:
            raise ValueError("auto_move needs the view of the seat to act (its legal list is empty)")
        for word in ("pass", "keep", "accept", "declare"):
            if word in legal:
                return word
        names = [a for a in legal if a.startswith("name:")]
        if names:
            return names[0]
        trump = view["table"]["trump"]

        def rank(action: str) -> tuple[int, int, int]:
            code = action.split(":")[1]
            r = card_id(code) % 9
            is_trump = code[1] == trump
            return (is_trump, (TRUMP_ORDER if is_trump else PLAIN_ORDER)[r], SUITS.index(code[1]))

        plays = [a for a in legal if a.startswith("play:") and not a.endswith(":bella")]
        return min(plays, key=rank)

    def determinize(self, view: Mapping[str, Any], rng: random.Random) -> KlaberjassState:
        """A full state consistent with ``view`` (see :mod:`.determinize`)."""
        from .determinize import determinize
        return determinize(self, view, rng)


GAME = KlaberjassGame()
