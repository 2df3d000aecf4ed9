"""The Georgian Joker game definition: options, the state factory, the first-dealer draw and
the auto-move policy (GJ-12.2)."""

from __future__ import annotations

import random
from typing import Any, Mapping, Sequence

from ...cards import JOKER1, PACK36_JOKERS, RANK_INDEX, SUIT_INDEX, parse_deck
from ...errors import InvalidOptions
from ...game import Game
from ...options import BOOL, ENUM, INT, Options, OptionSpec, compiled
from . import rules as R
from .state import Config, GeorgianJokerState

OPTION_SPECS: tuple[OptionSpec, ...] = (
    OptionSpec("deal_schedule", ENUM, "standard", ("standard", "nines"),
               help="standard: 24 deals in four pulkas (1..8, 4x9, 8..1, 4x9 cards); "
                    "nines: 16 nine-card deals in four pulkas of four",
               rules=("GJ-2.4", "GJ-2.5")),
    OptionSpec("khishti_penalty", ENUM, "200", R.KHISHTI_PENALTIES,
               help="penalty for a bid of 1 or more that takes no trick: -200, -500, or -100 per "
                    "card dealt to each player",
               rules=("GJ-7.4",)),
    OptionSpec("pulka_premium", BOOL, True, (True, False),
               help="end of a pulka: whoever made every bid gets their best deal again "
                    "(and moshla applies); false: neither premium nor moshla",
               rules=("GJ-8.1", "GJ-8.2", "GJ-8.4")),
    OptionSpec("moshla", ENUM, "all_others", R.MOSHLA_MODES,
               help="cancel the non-qualifiers' best deal of the pulka when at least one player "
                    "qualified (all_others), only when exactly one did (single_premium_only), or never",
               rules=("GJ-8.3",)),
    OptionSpec("high_joker_lead_trumpable", BOOL, False, (False, True),
               help="house variant: a trump beats a leading high joker that named a non-trump suit",
               rules=("GJ-6.6",)),
    OptionSpec("turn_time_s", INT, 30, minimum=10, maximum=120,
               help="seconds per decision before the auto-move policy acts", rules=("GJ-12.1",)),
    OptionSpec("reconnect_grace_s", INT, 60, minimum=15, maximum=600,
               help="seconds a disconnected player keeps the seat before a bot takes it",
               rules=("GJ-12.4",)),
)


class GeorgianJokerGame(Game):
    """Georgian Joker (ჯოკერი): four players, exact-bid trick taking with two jokers."""

    id = "georgian_joker"
    name = "Georgian Joker"
    rulebook = "georgian_joker.md"
    num_seats = 4  # GJ-2.1: four players, each scoring for themselves (per-seat results)
    pack = PACK36_JOKERS
    option_specs = OPTION_SPECS
    # the forehand again as ``trump_chooser`` in a nine-card first deal (GJ-3.5, schedule nines)
    draw_keys = ("first_dealer", "forehand", "leader", "trump_chooser")
    description = ("Four players each for themselves bid the exact number of tricks over a 24-deal "
                   "(or 16-deal) match in four pulkas; two jokers win or duck on demand.")

    def new_state(self, options: Mapping[str, Any] | Options | None = None,
                  first_dealer: int = 0) -> GeorgianJokerState:
        if isinstance(first_dealer, bool) or not isinstance(first_dealer, int) or not 0 <= first_dealer < 4:
            raise InvalidOptions(f"first_dealer must be a seat 0..3, got {first_dealer!r}", option="first_dealer")
        return GeorgianJokerState(self, compiled(self.options(options), Config), first_dealer)

    def draw_first_dealer(self, shuffled_pack: Sequence[int], options: Options | None = None) -> int:
        """GJ-2.2 / GJ-A10: the first dealer is uniformly random. From a shuffled pack, deal
        the whole pack one card at a time clockwise from seat 0; the seat that receives ``X1``
        deals first (its position mod 4: uniform, since 36 is a multiple of 4)."""
        deck = parse_deck(shuffled_pack, self.pack)
        return deck.index(JOKER1) % 4

    def auto_move(self, view: Mapping[str, Any]) -> str:
        """GJ-12.2, from the seat's view only:

        * trump: the suit with most normal cards among the three; ties: the tied suit holding
          the highest card; then S, H, D, C order; never NT;
        * bid: the smallest legal bid;
        * card: the legal normal card of lowest rank, ties by suit S, H, D, C; with only
          jokers, X1 before X2, ``low``, naming S when leading.
        """
        legal: list[str] = list(view["legal"])
        if not legal:
            raise ValueError("auto_move needs the view of the seat to act (its 'legal' is empty)")
        if legal[0].startswith("trump:"):
            return f"trump:{auto_trump(view['hand'])}"
        if legal[0].startswith("bid:"):
            return min(legal, key=lambda a: int(a[4:]))
        normal = [a for a in legal if not a.startswith("play:X")]
        if normal:
            return min(normal, key=lambda a: (-RANK_INDEX[a[5]], SUIT_INDEX[a[6]]))
        for joker in ("X1", "X2"):
            for candidate in (f"play:{joker}:low", f"play:{joker}:low:S"):
                if candidate in legal:
                    return candidate
        # the count only: the actions name the seat's cards, and a caller logs this message
        raise ValueError(f"no auto-move among the {len(legal)} legal actions")

    def determinize(self, view: Mapping[str, Any], rng: random.Random) -> GeorgianJokerState:
        """A full state drawn uniformly among those consistent with ``view`` (see
        :mod:`.determinize`)."""
        from .determinize import determinize
        return determinize(self, view, rng)


def auto_trump(hand: Sequence[str]) -> str:
    """GJ-12.2 trump choice from the chooser's (three) cards."""
    best: tuple[int, int, int] | None = None
    choice = "S"
    for s, suit in enumerate("SHDC"):
        ranks = [RANK_INDEX[c[0]] for c in hand if c[1] == suit and not c.startswith("X")]
        if not ranks:
            continue
        key = (len(ranks), -min(ranks), -s)
        if best is None or key > best:
            best, choice = key, suit
    return choice


GAME = GeorgianJokerGame()
