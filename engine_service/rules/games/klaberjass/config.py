"""Klaberjass table options (rulebook section 11) and their compiled, hot-path form.

:data:`OPTION_SPECS` declares every ``kl_*`` option with its allowed values (default first), the
rules it changes and the ambiguity it settles. :class:`Config` turns a validated
:class:`~engine_service.rules.options.Options` into plain attributes (ints and bools) that the
state reads in ``legal_ids`` / ``_apply`` without dictionary lookups.
"""

from __future__ import annotations

from ...options import BOOL, ENUM, INT, Options, OptionSpec
from .tables import VALUES

OPTION_SPECS: tuple[OptionSpec, ...] = (
    OptionSpec("kl_draw_order", ENUM, "plain", ("plain", "natural"),
               help="Card order of the draw for the first deal: plain (A T K Q J 9 8 7) or natural "
                    "(A K Q J T 9 8 7); the lower card deals (KL-A1).", rules=("KL-1.5", "KL-2.1")),
    OptionSpec("kl_draw_tie", ENUM, "redraw", ("redraw", "suit_order"),
               help="Equal ranks at the draw: both draw again, or the suit order S > H > D > C breaks "
                    "the tie (KL-A2).", rules=("KL-2.1",)),
    OptionSpec("kl_deal_first_to", ENUM, "dealer", ("dealer", "elder"),
               help="Who is served first in both deals: the dealer himself (seed) or the elder "
                    "(KL-A3).", rules=("KL-2.4", "KL-2.8")),
    OptionSpec("kl_first_deal_packet", INT, 3, (3, 2),
               help="Packet size of the first deal: two packets of 3 or three packets of 2 (KL-A4).",
               rules=("KL-2.4",)),
    OptionSpec("kl_dealer_rotation", ENUM, "alternate", ("alternate", "same_dealer"),
               help="After a played deal the other player deals (alternate) or the same one "
                    "(KL-A5).", rules=("KL-2.2",)),
    OptionSpec("kl_throw_in_redealer", ENUM, "same", ("same", "other"),
               help="Who deals again after a thrown-in deal: the same dealer (seed) or the other "
                    "player (KL-A6).", rules=("KL-2.2", "KL-3.5")),
    OptionSpec("kl_schmeiss", BOOL, False, (),
               help="Adds the schmeiss call to every auction state; the other player answers accept "
                    "(deal thrown in) or refuse (the caller becomes maker; in round 2 he then names "
                    "a suit) (KL-A7).", rules=("KL-3.6",)),
    OptionSpec("kl_dix_requires_turnup_trump", BOOL, False, (),
               help="The dix may be exchanged only when the turn-up suit became trump (KL-A8).",
               rules=("KL-4.1",)),
    OptionSpec("kl_dix_window", ENUM, "melds_and_play", ("melds_and_play", "before_melds"),
               help="When the dix may be exchanged: in the window before the melds and at the "
                    "holder's trick-play turns, or in the window only (KL-A9).", rules=("KL-4.2",)),
    OptionSpec("kl_split_runs", BOOL, False, (),
               help="A run of 6+ cards may be cut into two sequences of 3+ (the cut that scores "
                    "most) (KL-A10).", rules=("KL-5.2",)),
    OptionSpec("kl_sequence_compare", ENUM, "value", ("value", "length"),
               help="Sequences are compared by value then top card, or by length then top card "
                    "(KL-A11).", rules=("KL-5.4",)),
    OptionSpec("kl_winner_sequences", ENUM, "all", ("all", "best_plus_one"),
               help="The winner of the meld comparison scores all his sequences or only his best "
                    "and one more (KL-A12).", rules=("KL-5.6",)),
    OptionSpec("kl_bella_order", ENUM, "queen_first", ("queen_first", "any", "king_first"),
               help="Order in which the trump queen and king must be played for bella (KL-A13).",
               rules=("KL-7.1",)),
    OptionSpec("kl_trump_kqj_bonus", BOOL, True, (),
               help="A player holding the trump king, queen and jack when he plays his first card "
                    "scores 20 (50 if they are in a trump run of 4 or more) besides any bella, unless "
                    "that run scored as his meld; false: no such bonus (KL-A14).", rules=("KL-7.2",)),
    OptionSpec("kl_must_overtrump", BOOL, True, (),
               help="On a trump lead the follower must play a higher trump if he can (KL-A15).",
               rules=("KL-6.4",)),
    OptionSpec("kl_ten_value", INT, 10, (10, 0),
               help="Card points of a ten won in a trick: 10, or 0 (the seed's list of card values "
                    "leaves the ten out) (KL-A16).",
               rules=("KL-8.1",)),
    OptionSpec("kl_score_scope", ENUM, "deal_total", ("deal_total", "trick_points"),
               help="What the outcome of KL-9.2-9.4 distributes: whole deal totals, or only card "
                    "points (melds and bonuses stay with who earned them) (KL-A17).",
               rules=("KL-9.2", "KL-9.3", "KL-9.4")),
    OptionSpec("kl_target_score", INT, 500, (), minimum=1,
               help="Score that wins the game (KL-A18).", rules=("KL-10.1",)),
    OptionSpec("kl_simultaneous_target", ENUM, "higher_total", ("higher_total", "deal_winner"),
               help="Both players reach the target in one deal: the higher score wins, or the one "
                    "who added more in that deal; equal: play on (KL-A19).", rules=("KL-10.2",)),
    OptionSpec("kl_meld_declaration", ENUM, "automatic", ("automatic", "optional"),
               help="Melds are stated automatically, or each player chooses declare / conceal "
                    "(conceal states value 0) (KL-A20).", rules=("KL-5.8",)),
    OptionSpec("kl_reveal_scored_melds", ENUM, "summary", ("summary", "cards"),
               help="The winner's scores event shows suit, top and length of each sequence, or "
                    "also lists its cards (KL-A21).", rules=("KL-5.5",)),
    OptionSpec("kl_bella_announcement", ENUM, "not_required", ("not_required", "required"),
               help="Bella is credited automatically, or only when the trump king is played as "
                    "play:KX:bella (KL-A23).", rules=("KL-7.1",)),
)

BELLA_QUEEN_FIRST, BELLA_ANY, BELLA_KING_FIRST = 0, 1, 2
_BELLA_ORDER = {"queen_first": BELLA_QUEEN_FIRST, "any": BELLA_ANY, "king_first": BELLA_KING_FIRST}


class Config:
    """The table options as plain attributes for the hot path (immutable by convention)."""

    __slots__ = ("elder_served_first", "packet",
                 "alternate", "throw_in_same", "schmeiss", "dix_needs_turnup_trump", "dix_in_play",
                 "split_runs", "length_compare", "best_plus_one", "bella_order", "kqj_bonus",
                 "must_overtrump", "values", "trick_scope", "target", "deal_winner_breaks_tie",
                 "optional_melds", "reveal_cards", "bella_announce")

    def __init__(self, options: Options) -> None:
        o = options
        self.elder_served_first = o["kl_deal_first_to"] == "elder"
        self.packet = o["kl_first_deal_packet"]
        self.alternate = o["kl_dealer_rotation"] == "alternate"
        self.throw_in_same = o["kl_throw_in_redealer"] == "same"
        self.schmeiss = o["kl_schmeiss"]
        self.dix_needs_turnup_trump = o["kl_dix_requires_turnup_trump"]
        self.dix_in_play = o["kl_dix_window"] == "melds_and_play"
        self.split_runs = o["kl_split_runs"]
        self.length_compare = o["kl_sequence_compare"] == "length"
        self.best_plus_one = o["kl_winner_sequences"] == "best_plus_one"
        self.bella_order = _BELLA_ORDER[o["kl_bella_order"]]
        self.kqj_bonus = o["kl_trump_kqj_bonus"]
        self.must_overtrump = o["kl_must_overtrump"]
        self.values = VALUES[o["kl_ten_value"]]
        self.trick_scope = o["kl_score_scope"] == "trick_points"
        self.target = o["kl_target_score"]
        self.deal_winner_breaks_tie = o["kl_simultaneous_target"] == "deal_winner"
        self.optional_melds = o["kl_meld_declaration"] == "optional"
        self.reveal_cards = o["kl_reveal_scored_melds"] == "cards"
        self.bella_announce = o["kl_bella_announcement"] == "required"
