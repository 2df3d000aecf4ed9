"""Jo-Jotte (джоджоти), two players, 32 cards: rules core (shared/rules/jojotte.md).

Modules: :mod:`.tables` (precomputed card tables), :mod:`.actions` (action ids and notation),
:mod:`.options` (table options, compiled config), :mod:`.melds` (JJ-5), :mod:`.scoring` (JJ-9,
JJ-10), :mod:`.state` (the match state machine), :mod:`.views` (what a seat may know),
:mod:`.determinize` (sampling a state from a view). Engine notes: docs/games/jojotte.md.
"""

from __future__ import annotations

import random
from typing import Any, Mapping, Sequence

from ...cards import PACK32, RANK_INDEX, SUIT_INDEX
from ...errors import InvalidDeck, InvalidOptions
from ...game import Game
from ...options import Options
from ...registry import register
from . import tables as T
from .options import OPTION_SPECS
from .state import JojotteState

__all__ = ["GAME", "JojotteGame", "JojotteState"]


class JojotteGame(Game):
    id = "jojotte"
    name = "Jo-Jotte"
    rulebook = "jojotte.md"
    num_seats = 2
    pack = PACK32
    option_specs = OPTION_SPECS
    draw_keys = ("first_dealer", "non_dealer")
    description = ("Culbertson's two-player Klaberjass: two-round auction with no-trump overcall, "
                   "double and redouble; nullo and slam; quartets and sequences; jo-jotte; "
                   "bridge-style scoring above and below the line, games of 80, rubbers.")

    def new_state(self, options: Mapping[str, Any] | Options | None = None, first_dealer: int = 0) -> JojotteState:
        if first_dealer not in (0, 1) or isinstance(first_dealer, bool):
            raise InvalidOptions(f"first_dealer must be seat 0 or 1, got {first_dealer!r}",
                                 option="first_dealer")
        return JojotteState(self, self.options(options), first_dealer)

    def draw_first_dealer(self, shuffled_pack: Sequence[int], options: Options | None = None) -> int:
        """JJ-2.1: seat 0 draws the top card, seat 1 the next; the higher card (JJ-1.6: rank
        ``A K Q J T 9 8 7``, suits ignored) deals, or the lower with ``jj_draw_deals = low``.

        Equal ranks: both draw again from the following cards (``redraw``, JJ-A2) or suit order
        S > H > D > C decides (``suit_order``). Should all sixteen pairs of the pack tie (a
        pack sorted by rank), the last pair is decided by suit order.
        """
        opts = self.options(options)
        cards = list(shuffled_pack)
        if len(cards) < 2:
            raise InvalidDeck("the draw needs at least two cards")
        high = opts["jj_draw_deals"] == "high"
        redraw = opts["jj_draw_tie"] == "redraw"
        for i in range(0, len(cards) - 1, 2):
            a, b = cards[i], cards[i + 1]
            ra, rb = -(a % 9), -(b % 9)  # larger is higher (ace = 0)
            last = i + 3 >= len(cards)
            if ra == rb:
                if redraw and not last:
                    continue
                ra, rb = -(a // 9), -(b // 9)  # S > H > D > C
            if high:
                return 0 if ra > rb else 1
            return 0 if ra < rb else 1
        raise InvalidDeck("the draw could not be decided")  # unreachable with a full pack

    def auto_move(self, view: Mapping[str, Any]) -> str:
        """NOTATION section 5: ``pass`` / ``no_exchange`` for calls and windows; in play the
        legal card of lowest trick rank (a trump above every plain card), ties by suit order
        S H D C; never an announcement. Meld steps (``jj_meld_declaration = optional``, not in
        NOTATION 5): ``declare``, the default behaviour of the game."""
        legal = list(view.get("legal") or [])
        if not legal:
            raise ValueError("auto_move needs the view of the seat to act (its legal list is empty)")
        plays = [a for a in legal if a.startswith("play:") and a.count(":") == 1]
        if plays:
            contract = (view.get("table") or {}).get("contract") or {}
            strain = contract.get("play_strain") or "NT"
            trump = SUIT_INDEX.get(strain, 4)

            def key(action: str) -> tuple[int, int, int]:
                code = action[5:]
                suit = SUIT_INDEX[code[1]]
                rank = RANK_INDEX[code[0]]
                if suit == trump:
                    return (1, T.TRUMP_STRENGTH[rank], suit)
                return (0, T.PLAIN_STRENGTH[rank], suit)

            return min(plays, key=key)
        for choice in ("pass", "no_exchange", "declare"):
            if choice in legal:
                return choice
        return legal[0]

    def determinize(self, view: Mapping[str, Any], rng: random.Random) -> JojotteState:
        """A full state consistent with everything ``view``'s seat may know, the unknown cards
        sampled uniformly among the consistent deals (see :mod:`.determinize`)."""
        from .determinize import determinize

        return determinize(self, view, rng)


GAME = register(JojotteGame())
