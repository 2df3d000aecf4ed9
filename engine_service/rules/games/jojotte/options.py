"""Jo-Jotte table options (jojotte.md section 11) and the compiled configuration.

:data:`OPTION_SPECS` declares every option of the rulebook's table, default first, with the
ambiguity it settles. :class:`Config` compiles a validated option set once into the plain ints,
booleans and tables the state machine reads, so the inner loop never looks an option up by name.
"""

from __future__ import annotations

from ...options import BOOL, ENUM, INT, Options, OptionSpec, compiled
from . import tables as T


def _enum(name: str, values: tuple[str, ...], rules: tuple[str, ...], help: str) -> OptionSpec:
    return OptionSpec(name, ENUM, values[0], values, help=help, rules=rules)


def _bool(name: str, default: bool, rules: tuple[str, ...], help: str) -> OptionSpec:
    return OptionSpec(name, BOOL, default, (default, not default), help=help, rules=rules)


OPTION_SPECS: tuple[OptionSpec, ...] = (
    _enum("jj_draw_deals", ("high", "low"), ("JJ-2.1", "JJ-A1"),
          "Which card of the draw deals first: the higher (seed 000) or the lower."),
    _enum("jj_draw_tie", ("redraw", "suit_order"), ("JJ-2.1", "JJ-A2"),
          "Equal draw ranks: draw again, or break the tie by suit (S > H > D > C)."),
    OptionSpec("jj_first_deal_packet", INT, 2, (2, 1, 3), rules=("JJ-2.4", "JJ-A3"),
               help="Packet size of the first deal of six cards each (non-dealer first)."),
    OptionSpec("jj_second_deal_packet", INT, 3, (3, 1), rules=("JJ-2.6", "JJ-A3"),
               help="Packet size of the second deal of three cards each (non-dealer first)."),
    _enum("jj_info_card", ("bottom", "next"), ("JJ-2.7", "JJ-A4"),
          "Information card: the bottom card of the stock D[31] (seed 000) or the next card D[19]."),
    _enum("jj_throw_in_redealer", ("same", "other"), ("JJ-2.2", "JJ-3.6", "JJ-A5"),
          "Who deals again after a thrown-in deal (all passed twice)."),
    _enum("jj_round1_calls", ("accept_name_pass", "accept_pass"), ("JJ-3.1", "JJ-A6"),
          "Round 1 calls: accept, name another suit or pass (seed 000); or accept or pass only."),
    _enum("jj_round2_turnup_suit", ("allowed", "forbidden"), ("JJ-3.1", "JJ-A7"),
          "Whether round 2 may name the turn-up suit."),
    _enum("jj_double_timing", ("after_bid", "end_of_auction"), ("JJ-3.3", "JJ-A8"),
          "Double only as the immediate answer to a bid, or one double/pass call after the auction."),
    _enum("jj_seven_exchange", ("any_seven_unless_both", "trump_seven", "none"), ("JJ-4.2", "JJ-A9"),
          "Seven exchange for the turn-up: any seven unless both hold one (seed 003), the seven of "
          "trumps only (Klaberjass dix), or no exchange (seed 000)."),
    _enum("jj_exchange_window", ("after_second_deal", "until_first_lead"), ("JJ-4.2", "JJ-A10"),
          "The exchange only in its window after the second deal, or also at the exchanger's "
          "later turns up to his first card."),
    _enum("jj_slam_strain", ("contract", "suit_or_no_trump"), ("JJ-4.4", "JJ-A11"),
          "Slam in the contract's strain, or (after a suit contract) the declarer's choice of "
          "that suit or no-trump."),
    _enum("jj_nullo_strain", ("no_trump", "contract"), ("JJ-4.5", "JJ-A12"),
          "Nullo played at no-trump, or with the auction's trump."),
    _enum("jj_multiplier_scope", ("trick_points", "all"), ("JJ-4.5", "JJ-9.6", "JJ-9.7", "JJ-A13"),
          "A double multiplies trick-point entries only, or the nullo/slam/unbid-slam premiums too."),
    _enum("jj_failed_slam", ("opponent_500", "none"), ("JJ-9.6", "JJ-A14"),
          "A failed slam gives the opponent 500, or nothing."),
    _enum("jj_first_lead", ("contract_opponent", "non_dealer"), ("JJ-6.1", "JJ-A15"),
          "First lead by the contract holder's opponent (seed 000) or by the non-dealer (seed 003)."),
    _bool("jj_must_head_plain", True, ("JJ-6.3", "JJ-A16"),
          "The follower must beat a plain-suit lead when he can (seed 000), not only a trump lead."),
    _enum("jj_trick_value", ("max_card", "sum", "winning_card"), ("JJ-8.2", "JJ-A17"),
          "A trick is worth its single highest-valued card, the sum of its cards, or its winning card."),
    _enum("jj_nt_quartet_order", ("plain", "natural"), ("JJ-1.5", "JJ-A18"),
          "Quartet ranking at no-trump: A T K Q J, or the natural A K Q J T."),
    _enum("jj_winner_sequences", ("all", "best_plus_one"), ("JJ-5.6", "JJ-A19"),
          "The sequence winner scores all his sequences, or his best and one more."),
    _bool("jj_card_in_two_melds", True, ("JJ-5.3", "JJ-A20"),
          "A card may count in a quartet and in a sequence at once."),
    _bool("jj_split_runs", False, ("JJ-5.2", "JJ-A20"),
          "A run of 7 or 8 cards may be split into two sequences when that scores more."),
    _enum("jj_meld_declaration", ("automatic", "optional"), ("JJ-5.9", "JJ-A21"),
          "Melds declared automatically, or each player may conceal a category "
          "(actions declare / conceal)."),
    _enum("jj_jojotte_announcement", ("required", "automatic"), ("JJ-7.2", "JJ-A22"),
          "Jo-jotte scores only when announced (play:KX:jo, play:QX:jotte), or automatically."),
    _enum("jj_outcome_basis", ("all_points", "trick_points"),
          ("JJ-9.2", "JJ-9.3", "JJ-9.4", "JJ-9.5", "JJ-A23"),
          "The deal is decided on melds + jo-jotte + trick points, or on trick points alone."),
    _enum("jj_undoubled_scoring", ("culbertson", "each_scores_own"), ("JJ-9.3", "JJ-A24"),
          "Undoubled deal: only the player who wins the comparison enters trick points (the "
          "declarer his own, the defender as jj_defender_win_award says, a tie as jj_tie_rule "
          "says), as seed 003 has it; or each player enters his own trick points."),
    _enum("jj_defender_win_award", ("two_best_tricks", "both_trick_points", "own_trick_points"),
          ("JJ-9.3", "JJ-A25"),
          "What an undoubled defender who wins the comparison enters below the line: the value of "
          "his two most valuable tricks, both players' trick points, or his own trick points."),
    _enum("jj_tie_rule", ("frozen_pot", "void"), ("JJ-9.3", "JJ-9.5", "JJ-A26"),
          "A tied deal freezes the trick points in a pot, or scores nothing."),
    _enum("jj_pot_at_rubber_end", ("lapse", "carry"), ("JJ-9.5", "JJ-A26"),
          "A frozen pot still pending when the rubber ends lapses, or carries into the next rubber."),
    _enum("jj_scoresheet", ("above_below", "single_column"), ("JJ-9.0", "JJ-A27"),
          "Bridge-style lines (only below counts for game), or one column where every entry counts."),
    _enum("jj_premium_line", ("above", "below"), ("JJ-9.6", "JJ-9.7", "JJ-9.8", "JJ-A28"),
          "Nullo, slam, failed-slam and unbid-slam premiums above the line, or below."),
    _bool("jj_nullo_penalty_negative", False, ("JJ-9.7", "JJ-A29"),
          "A nullo penalty is also subtracted from the nullo player's score."),
    _bool("jj_nullo_melds", False, ("JJ-5.10", "JJ-A30"),
          "Melds are settled and credited in a nullo deal too."),
    _enum("jj_rubber_bonus_condition", ("first_to_two", "two_consecutive"), ("JJ-10.3", "JJ-A31"),
          "The rubber bonus for the first to two games, or only for two consecutive game wins."),
    _enum("jj_simultaneous_game", ("higher_total", "deal_winner"), ("JJ-10.1", "JJ-A32"),
          "Both reach the game target in one deal: the higher game total wins, or the player who "
          "entered more in that deal."),
    _bool("jj_partscore_reset", True, ("JJ-10.2", "JJ-A33"),
          "After a game both part-scores restart at 0 (a new line); false: the loser keeps his."),
    _enum("jj_match_winner", ("rubbers", "points"), ("JJ-10.5", "JJ-A34"),
          "The match winner: more rubbers won (points break ties), or the higher points total."),
    OptionSpec("jj_match_rubbers", INT, 1, minimum=1, rules=("JJ-10.5", "JJ-A34"),
               help="Number of rubbers in a match."),
    _bool("jj_overcall_accepted_turnup", True, ("JJ-3.2", "JJ-A36"),
          "An accepted turn-up suit may be overcalled by no-trump."),
    _bool("jj_unbid_slam_in_nullo", False, ("JJ-7.4", "JJ-9.7", "JJ-A37"),
          "In a nullo deal a player who wins all nine tricks also gets the 100 unbid-slam premium."),
    OptionSpec("jj_game_target", INT, 80, minimum=1, rules=("JJ-10.1",),
               help="Below-the-line points that win a game."),
)

# Dealing positions (JJ-2.4, JJ-2.6, JJ-2.7): D[0..11] first deal, D[12] turn-up, D[13..18]
# second deal, the information card D[31] or D[19], the rest the unused stock.


def first_deal_positions(packet: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """(non-dealer positions, dealer positions) of the first deal, six each, non-dealer first."""
    nd: list[int] = []
    dl: list[int] = []
    pos = 0
    while pos < 12:
        nd.extend(range(pos, pos + packet))
        dl.extend(range(pos + packet, pos + 2 * packet))
        pos += 2 * packet
    return tuple(nd), tuple(dl)


def second_deal_positions(packet: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
    nd: list[int] = []
    dl: list[int] = []
    pos = 13
    while pos < 19:
        nd.extend(range(pos, pos + packet))
        dl.extend(range(pos + packet, pos + 2 * packet))
        pos += 2 * packet
    return tuple(nd), tuple(dl)


SEVEN_ANY, SEVEN_TRUMP, SEVEN_NONE = 0, 1, 2
AWARD_TWO_BEST, AWARD_BOTH, AWARD_OWN = 0, 1, 2


class Config:
    """A validated option set compiled to plain values and tables (immutable by convention;
    shared by a state and all its clones)."""

    __slots__ = (
        "first_nd", "first_dl", "second_nd", "second_dl",
        "info_pos", "stock_positions", "redeal_same", "r1_names", "r2_turnup_ok", "double_after_bid",
        "seven_mode", "late_exchange", "slam_choice", "nullo_nt", "mult_all", "failed_slam_500",
        "lead_contract_opponent", "head_plain", "head", "trick_value", "nt_quartet_natural",
        "winner_all_sequences", "card_in_two_melds", "split_runs", "meld_optional", "jo_required",
        "basis_all", "culbertson", "defender_award", "tie_pot", "pot_carry", "single_column",
        "premium_below", "nullo_negative", "nullo_melds", "rubber_consecutive", "simult_higher",
        "partscore_reset", "winner_rubbers", "match_rubbers", "overcall_accept", "unbid_in_nullo",
        "game_target",
    )

    def __init__(self, options: Options) -> None:
        o = options
        self.first_nd, self.first_dl = first_deal_positions(o["jj_first_deal_packet"])
        self.second_nd, self.second_dl = second_deal_positions(o["jj_second_deal_packet"])
        self.info_pos = 31 if o["jj_info_card"] == "bottom" else 19
        self.stock_positions = tuple(i for i in range(19, 32) if i != self.info_pos)
        self.redeal_same = o["jj_throw_in_redealer"] == "same"
        self.r1_names = o["jj_round1_calls"] == "accept_name_pass"
        self.r2_turnup_ok = o["jj_round2_turnup_suit"] == "allowed"
        self.double_after_bid = o["jj_double_timing"] == "after_bid"
        self.seven_mode = ("any_seven_unless_both", "trump_seven", "none").index(o["jj_seven_exchange"])
        self.late_exchange = o["jj_exchange_window"] == "until_first_lead"
        self.slam_choice = o["jj_slam_strain"] == "suit_or_no_trump"
        self.nullo_nt = o["jj_nullo_strain"] == "no_trump"
        self.mult_all = o["jj_multiplier_scope"] == "all"
        self.failed_slam_500 = o["jj_failed_slam"] == "opponent_500"
        self.lead_contract_opponent = o["jj_first_lead"] == "contract_opponent"
        self.head_plain = o["jj_must_head_plain"]
        self.head = T.HEAD_TABLES[1 if self.head_plain else 0]
        self.trick_value = ("max_card", "sum", "winning_card").index(o["jj_trick_value"])
        self.nt_quartet_natural = o["jj_nt_quartet_order"] == "natural"
        self.winner_all_sequences = o["jj_winner_sequences"] == "all"
        self.card_in_two_melds = o["jj_card_in_two_melds"]
        self.split_runs = o["jj_split_runs"]
        self.meld_optional = o["jj_meld_declaration"] == "optional"
        self.jo_required = o["jj_jojotte_announcement"] == "required"
        self.basis_all = o["jj_outcome_basis"] == "all_points"
        self.culbertson = o["jj_undoubled_scoring"] == "culbertson"
        self.defender_award = ("two_best_tricks", "both_trick_points",
                               "own_trick_points").index(o["jj_defender_win_award"])
        self.tie_pot = o["jj_tie_rule"] == "frozen_pot"
        self.pot_carry = o["jj_pot_at_rubber_end"] == "carry"
        self.single_column = o["jj_scoresheet"] == "single_column"
        self.premium_below = o["jj_premium_line"] == "below"
        self.nullo_negative = o["jj_nullo_penalty_negative"]
        self.nullo_melds = o["jj_nullo_melds"]
        self.rubber_consecutive = o["jj_rubber_bonus_condition"] == "two_consecutive"
        self.simult_higher = o["jj_simultaneous_game"] == "higher_total"
        self.partscore_reset = o["jj_partscore_reset"]
        self.winner_rubbers = o["jj_match_winner"] == "rubbers"
        self.match_rubbers = o["jj_match_rubbers"]
        self.overcall_accept = o["jj_overcall_accepted_turnup"]
        self.unbid_in_nullo = o["jj_unbid_slam_in_nullo"]
        self.game_target = o["jj_game_target"]


def config_for(options: Options) -> Config:
    """The compiled :class:`Config` of a validated option set (shared: matches and their clones
    under the same options use one)."""
    return compiled(options, Config)
