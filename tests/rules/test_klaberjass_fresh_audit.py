"""Fresh-eyes audit of the Klaberjass engine against ``klaberjass.md`` and NOTATION.md: deals
built card by card for rules whose engine code no existing test pinned down (a mutation of the
code survived the other Klaberjass tests). Each test names its rule ids and checks the engine
against hand-computed values and against the plain rulebook model of
:mod:`.klaberjass_oracle`.
"""

from __future__ import annotations

import pytest

from engine_service.rules import CHANCE, get_game

from .klaberjass_oracle import Model

GAME = get_game("klaberjass")


def both(options, first_dealer, deck, actions):
    """Engine state and rulebook model after ``actions`` from ``deck`` (legal sets compared at
    every step)."""
    state = GAME.new_state(options, first_dealer=first_dealer)
    model = Model(options, first_dealer=first_dealer)
    state.deal(deck)
    model.deal(deck)
    for a in actions:
        assert set(state.legal_actions()) == model.legal(), a
        state.apply(a)
        model.apply(a)
    return state, model


# Seat 1 deals (seat 0 is the elder). KL-2.4 / KL-2.8: elder QC TD 7D JD 7C 9D + TH 9S KD
# (J-T-9 of diamonds: one sequence, 20), dealer AD 8C QS AH 9H 7H + 9C 7S JC (none); turn-up TS,
# the elder takes spades (maker seat 0). Tricks (trump S): 9D/AD -> 1 (11); QS/9S -> 0 (17, the
# nine heads the queen, KL-6.4); 7D/7S -> 1 (0, KL-6.5); 9H/TH -> 0 (10); QC/9C -> 0 (3);
# 7C/8C -> 1 (0); 7H/JD -> 1 (2); AH/TD -> 1 (21); JC/KD -> 1 (6 + 10 last trick, KL-7.3).
# Card points: seat 0 30, seat 1 50. Deal totals: maker 20 + 30 = 50, opponent 50: equal.
EQUAL_DECK = ("AD 8C QS QC TD 7D AH 9H 7H JD 7C 9D TS 9C TH 7S 9S JC KD QD JS JH 8H AS 8D KS 8S AC KH "
              "KC QH TC").split()
EQUAL_ACTIONS = ["take", "keep", "keep"] + [f"play:{c}" for c in (
    "9D AD QS 9S 7D 7S 9H TH QC 9C 7C 8C 7H JD AH TD JC KD").split()]


@pytest.mark.parametrize("scope, scored", [("deal_total", [0, 50]), ("trick_points", [20, 50])])
def test_kl_9_3_kl_a17_equal_totals_with_a_maker_meld(scope, scored):
    """KL-9.3: equal deal totals, the maker scores nothing and the opponent his own total.
    KL-A17 (``kl_score_scope = trick_points``): only card points follow the outcome; the
    maker's 20 of melds stays credited to him (a maker with melds on a tie: the branch that
    enters ``own[maker]``, which no other test reached with a non-zero meld or bonus)."""
    state, model = both({"kl_score_scope": scope}, 1, EQUAL_DECK, EQUAL_ACTIONS)
    r = state.deal_results()[0]
    assert r == {"thrown_in": False, "trump": "S", "maker": 0, "melds": [20, 0], "card_points": [30, 50],
                 "bonuses": [0, 0], "scored": scored}
    assert r == model.results[0]
    assert state.deal_details()[0]["deal_totals"] == [50, 50]
    assert state.deal_details()[0]["outcome"] == "equal"
    assert state.result() == {"totals": scored, "winners": [], "over": False}
    assert state.to_act() == CHANCE and state.dealer() == 0  # KL-2.2: the deal alternates


def test_kl_5_5_step3_kl_a21_a_dealer_answering_lower_reveals_nothing():
    """KL-5.5 step 3: after ``top QH`` the dealer with the lower J-high sequence says only
    ``lower``; KL-A21: the loser reveals nothing beyond his statements, so none of his cards is
    ``revealed`` and every one of them stays secret to the elder, while the winner's scored
    Q-J-T of hearts is public."""
    from .test_klaberjass_audit import deck_for
    deck = deck_for("JS TS 9S 7H 8D 7D AC 8C 7C", "QH JH TH AS 8S 7S 9D KC 9C", "KD")
    state, _ = both({}, 1, deck, ["take", "keep", "keep"])
    t = state.public_view()["table"]
    assert t["melds"] == [
        {"seat": 0, "say": "value", "value": 20}, {"seat": 1, "say": "how_high"},
        {"seat": 0, "say": "top", "card": "QH"}, {"seat": 1, "say": "lower"},
        {"seat": 0, "say": "scores", "sequences": [{"suit": "H", "top": "Q", "length": 3}], "points": 20}]
    assert t["revealed"] == [["QH", "JH", "TH"], []]
    from engine_service.rules.cards import codes_of
    assert {"JS", "TS", "9S"} <= set(codes_of(state.secret_cards(0)))


# Seat 1 deals. Elder (seat 0): 9H KH QH AS TS AD TD AC TC; dealer: 8H 7H KS 9S 8D 7D KC 9C 8C;
# turn-up TH, the elder takes hearts. No sequences, no trump J (no K-Q-J bonus). The elder plays
# the trump king to trick 1 and the trump queen to trick 2 and wins all nine tricks:
# 4 + 3 + 15 + 10 + 14 + 11 + 14 + 11 + (10 + 10 last trick) = 102 card points.
KING_FIRST_REST = ("play:8H play:QH play:7H play:AS play:KS play:TS play:9S play:9H play:8D play:AD play:7D "
                   "play:TD play:KC play:AC play:9C play:TC play:8C").split()


@pytest.mark.parametrize("options, king_play, bella", [
    ({"kl_bella_order": "king_first", "kl_bella_announcement": "required"}, "play:KH:bella", 20),
    ({"kl_bella_order": "any", "kl_bella_announcement": "required"}, "play:KH:bella", 20),
    ({"kl_bella_order": "king_first", "kl_bella_announcement": "required"}, "play:KH", 0),
    ({"kl_bella_order": "king_first"}, "play:KH", 20),
    ({}, "play:KH", 0),
])
def test_kl_7_1_kl_a13_kl_a23_king_first_then_queen_with_and_without_the_announcement(options, king_play, bella):
    """KL-7.1 / KL-A13: with ``kl_bella_order = king_first`` (or ``any``) the trump king played
    before the queen scores 20 when the queen follows (the default queen_first: nothing);
    KL-A23: under ``kl_bella_announcement = required`` only if the king's play carried the
    announcement, which the engine credits when the queen completes the pair."""
    from .test_klaberjass_audit import deck_for
    deck = deck_for("8H 7H KS 9S 8D 7D KC 9C 8C", "9H KH QH AS TS AD TD AC TC", "TH")
    state, model = both(options, 1, deck, ["take", "keep", "keep"])
    legal = state.legal_actions()
    assert ("play:KH:bella" in legal) == (options.get("kl_bella_announcement") == "required"
                                          and options.get("kl_bella_order", "queen_first") != "queen_first")
    for a in [king_play] + KING_FIRST_REST:
        assert set(state.legal_actions()) == model.legal(), a
        state.apply(a)
        model.apply(a)
    r = state.deal_results()[0]
    assert r == {"thrown_in": False, "trump": "H", "maker": 0, "melds": [0, 0], "card_points": [102, 0],
                 "bonuses": [bella, 0], "scored": [102 + bella, 0]}
    assert r == model.results[0]
    assert state.deal_details()[0]["bella"] == [bella, 0]


@pytest.mark.parametrize("elder", [0, 1])
def test_kl_10_1_reaching_the_target_exactly_wins(elder):
    """KL-10.1: the first player whose score *reaches* the target wins: 102 + 20 = 122 entered
    in one deal wins a match played to exactly 122 (and not one played to 123), for either
    seat (match seats, NOTATION 1: the elder is seat 1 when seat 0 deals)."""
    from .test_klaberjass_audit import deck_for
    deck = deck_for("8H 7H KS 9S 8D 7D KC 9C 8C", "9H KH QH AS TS AD TD AC TC", "TH")
    totals = [0, 0]
    totals[elder] = 122
    for target, over in ((122, True), (123, False)):
        opts = {"kl_bella_order": "king_first", "kl_target_score": target}
        state, _ = both(opts, 1 - elder, deck, ["take", "keep", "keep", "play:KH"] + KING_FIRST_REST)
        assert state.result() == {"totals": totals, "winners": [elder] if over else [], "over": over}


def test_notation_5_auto_move_never_announces_bella_whatever_the_list_order():
    """NOTATION 5: the auto-move plays the legal card of lowest trick rank and never carries an
    announcement; with ``play:KH:bella`` listed before ``play:KH`` (transcripts compare legal
    sets, so no order may be relied on) it still plays the bare king."""
    view = {"legal": ["play:KH:bella", "play:KH", "play:AH"], "table": {"trump": "H"}}
    assert GAME.auto_move(view) == "play:KH"  # trump order J 9 A T K Q 8 7: the king is below the ace
    view = {"legal": ["play:KH:bella", "play:KH", "play:8H", "exchange"], "table": {"trump": "H"}}
    assert GAME.auto_move(view) == "play:8H"



@pytest.mark.parametrize("order", ["king_first", "any"])
def test_kl_a23_a_bella_announcement_before_the_queen_reveals_the_trump_queen(order):
    """KL-A23 (``kl_bella_announcement = required``) with KL-A13 ``king_first`` / ``any``:
    ``play:KH:bella`` is legal only to a player who can still complete the marriage, so a
    king announced before the queen tells everybody that the queen is in that hand (as a "jo"
    does in Jo-Jotte, JJ-7.2). The public record identifies it: ``table.revealed`` lists it
    and it is no longer one of the opponent's secret cards, until it is played."""
    from engine_service.rules.cards import codes_of

    from .test_klaberjass_audit import deck_for
    deck = deck_for("8H 7H KS 9S 8D 7D KC 9C 8C", "9H KH QH AS TS AD TD AC TC", "TH")
    options = {"kl_bella_order": order, "kl_bella_announcement": "required"}
    state, _ = both(options, 1, deck, ["take", "keep", "keep"])
    assert "QH" in codes_of(state.secret_cards(1))
    state, _ = both(options, 1, deck, ["take", "keep", "keep", "play:KH:bella"])
    assert state.public_view()["table"]["revealed"] == [["QH"], []]
    assert state.view(1)["table"]["revealed"] == [["QH"], []]
    assert "QH" not in codes_of(state.secret_cards(1))
    assert "QH" not in codes_of(state.secret_cards(None))
    for a in KING_FIRST_REST[:3]:  # 8H, then the elder plays the queen to trick 2
        state.apply(a)
    assert state.public_view()["table"]["revealed"] == [[], []]


# Seat 1 deals. Elder (seat 0): KH QH JH 8H AD TS 9S 7S TD (trump K-Q-J of hearts, 20, his only
# sequence); dealer: AS KS JS 8D 7D 8C 7C AC TC (none); turn-up 9H, the elder takes hearts.
# The elder plays the trump queen (trick 7) before the king (trick 8): bella 20 (KL-7.1).
KQJ_DECK_HANDS = ("AS KS JS 8D 7D 8C 7C AC TC", "KH QH JH 8H AD TS 9S 7S TD", "9H")
KQJ_PLAYS = [f"play:{c}" for c in "7S JS 7D TD 9S KS 7C 8H TS AS 8D AD QH 8C KH TC JH AC".split()]


@pytest.mark.parametrize("choice, melds, kqj", [("declare", 20, 0), ("conceal", 0, 20)])
def test_kl_7_2_kl_a20_a_concealed_trump_kqj_sequence_still_earns_the_kqj_bonus(choice, melds, kqj):
    """KL-7.2: the trump K-Q-J bonus is withheld only when "that trump sequence was already
    scored in the meld phase". Under ``kl_meld_declaration = optional`` (KL-A20) a player who
    conceals it states value 0 and "cannot score it" as a meld, so it was not scored: he gets
    the separate bonus (20, a run of exactly 3) at the end of the deal. Declared, it wins the
    comparison and scores 20 as a meld, and the bonus is withheld (docs/games/klaberjass.md,
    documented choice 6)."""
    from .test_klaberjass_audit import deck_for
    deck = deck_for(*KQJ_DECK_HANDS)
    state, _ = both({"kl_meld_declaration": "optional"}, 1, deck,
                    ["take", "keep", "keep", choice, "declare"] + KQJ_PLAYS)
    r = state.deal_results()[0]
    assert r["melds"] == [melds, 0]
    assert r["bonuses"] == [20 + kqj, 0]  # bella 20 + the K-Q-J bonus
    assert state.deal_details()[0]["trump_kqj"] == [kqj, 0]
    assert r["scored"][0] == r["card_points"][0] + 40  # 20 either way, as a meld or as the bonus


@pytest.mark.parametrize("options", [{}, {"kl_bella_order": "any"},
                                     {"kl_bella_order": "any", "kl_bella_announcement": "required"}])
def test_kl_a23_a_king_played_without_the_announcement_reveals_nothing(options):
    """KL-7.1, KL-A23: only ``play:KX:bella`` is a public statement that the player can still
    complete the marriage (docs/games/klaberjass.md, ``revealed``: "the trump queen after a
    ``play:KX:bella`` made before it"). A trump king played bare - at the default table, where
    nothing is announced, or at a ``required`` table without the flag - says nothing about the
    queen: it stays out of ``table.revealed`` and secret to the opponent."""
    from engine_service.rules.cards import codes_of

    from .test_klaberjass_audit import deck_for
    deck = deck_for("8H 7H KS 9S 8D 7D KC 9C 8C", "9H KH QH AS TS AD TD AC TC", "TH")
    state, _ = both(options, 1, deck, ["take", "keep", "keep", "play:KH"])
    assert state.public_view()["table"]["revealed"] == [[], []]
    assert state.view(1)["table"]["revealed"] == [[], []]
    assert "QH" in codes_of(state.secret_cards(1))


def test_kl_a20_a_clone_declaring_otherwise_leaves_the_original_meld_choice_alone():
    """KL-A20 (``kl_meld_declaration = optional``): each player's declare / conceal decides
    what he can score (KL-5.6). ``clone`` (search bots try both choices on copies) must not
    share that choice: a clone whose elder conceals leaves the original, whose elder
    declared his trump K-Q-J (20, KL-5.3), scoring it - and the clone scores nothing."""
    from .test_klaberjass_audit import deck_for
    state, _ = both({"kl_meld_declaration": "optional"}, 1, deck_for(*KQJ_DECK_HANDS), ["take", "keep", "keep"])
    copy = state.clone()
    state.apply("declare")
    copy.apply("conceal")
    state.apply("declare")
    copy.apply("declare")
    assert state.public_view()["table"]["meld_points"] == [20, 0]
    assert copy.public_view()["table"]["meld_points"] == [0, 0]
