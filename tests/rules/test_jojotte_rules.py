"""Jo-Jotte scenario tests, one group per section of jojotte.md, with readable card codes.

Seat 0 is the non-dealer of the first deal throughout (``first_dealer=1``), as in the
rulebook's examples. Card layouts name every card that matters; the helpers in
``checks_jojotte`` place them where the rulebook's dealing procedure puts them.
"""

from __future__ import annotations

import pytest

from engine_service.rules import CHANCE, IllegalAction
from engine_service.rules.cards import card_id
from engine_service.rules.games.jojotte import melds as M
from engine_service.rules.games.jojotte import tables as T

from .checks_jojotte import GAME, act, auto_finish_deal, deal, hand, legal, make_deck, plays, table, to_play


def mask(*codes):
    m = 0
    for c in codes:
        m |= 1 << card_id(c)
    return m


PACK_ORDER = ("AS KS QS JS TS 9S 8S 7S AH KH QH JH TH 9H 8H 7H "
              "AD KD QD JD TD 9D 8D 7D AC KC QC JC TC 9C 8C 7C").split()

# Trump spades by the non-dealer's acceptance of the turn-up 8S. Seat 0 (declarer) holds
# JS 9S 7S AH 7H AD KD QD JD; seat 1 (defender, leads) AS TS KH QH JH TH AC KC QC.
PLAY_DEAL = dict(nd=("JS", "9S", "7S", "AH", "7H", "AD"), nd2=("KD", "QD", "JD"),
                 dl=("AS", "TS", "KH", "QH", "JH", "TH"), dl2=("AC", "KC", "QC"), turn="8S",
                 info="7C")

# Seat 0 holds every spade and AH: whoever plays against him, he wins every trick he can lead
# or trump. Turn-up 7D, so naming spades opens no exchange window.
STRONG_DEAL = dict(nd=("JS", "9S", "AS", "TS", "KS", "QS"), nd2=("8S", "7S", "AH"),
                   dl=("KH", "QH", "JH", "TH", "9H", "AD"), dl2=("KD", "QD", "JD"), turn="7D",
                   info="7C")


# ---- 1. Deck and card order ----------------------------------------------------------------

def test_JJ_1_1_the_pack_has_32_cards():
    assert sorted(GAME.pack) == sorted(card_id(c) for c in PACK_ORDER)


def test_JJ_1_2_trump_order_J_9_A_T_K_Q_8_7():
    """The follower beats a trump lead only with a higher trump in J 9 A T K Q 8 7."""
    for lead, beaters in (("AS", {"JS", "9S"}), ("9S", {"JS"}), ("KS", {"JS", "9S", "AS", "TS"}),
                          ("7S", {"JS", "9S", "AS", "TS", "KS", "QS", "8S"})):
        got = {c for c in PACK_ORDER if T.WINS_OVER[0][card_id(lead)] >> card_id(c) & 1}
        assert got == beaters, lead


def test_JJ_1_3_plain_order_A_T_K_Q_J_9_8_7_and_trumps_win_plain_leads():
    got = {c for c in PACK_ORDER if T.WINS_OVER[0][card_id("KH")] >> card_id(c) & 1}
    spades = {c for c in PACK_ORDER if c.endswith("S")}
    assert got == {"AH", "TH"} | spades
    # no-trump: every suit plain, nothing beats off-suit
    got = {c for c in PACK_ORDER if T.WINS_OVER[4][card_id("JS")] >> card_id(c) & 1}
    assert got == {"AS", "TS", "KS", "QS"}


def test_JJ_1_5_quartets_rank_in_trump_order_in_a_suit_contract_and_plain_at_NT():
    nines = mask("9S", "9H", "9D", "9C")
    aces = mask("AS", "AH", "AD", "AC")
    tens = mask("TS", "TH", "TD", "TC")
    kings = mask("KS", "KH", "KD", "KC")
    assert M.settle((nines, aces), 0, 0).quartet_winner == 0  # suit: 9 over A
    assert M.settle((nines, aces), 4, 0).quartets == ((), (0,))  # NT: no quartet of nines
    assert M.settle((tens, kings), 4, 0).quartet_winner == 0  # NT plain: T over K


@pytest.mark.parametrize("strain,nt_natural,order", [
    (0, False, "J9ATKQ"), (2, False, "J9ATKQ"),  # JJ-1.5: suit contract, the trump-suit order
    (4, False, "ATKQJ"),  # JJ-1.5 / JJ-A18: no-trump, plain order (default)
    (4, True, "AKQJT"),  # JJ-A18 option jj_nt_quartet_order = natural
])
def test_JJ_1_5_every_quartet_rank_beats_the_next_one_in_its_order(strain, nt_natural, order):
    """JJ-1.5 / JJ-5.5: of two neighbours in the quartet order, the higher quartet wins, whoever
    defends."""
    for hi, lo in zip(order, order[1:]):
        hands = (mask(*(hi + s for s in "SHDC")), mask(*(lo + s for s in "SHDC")))
        for defender in (0, 1):
            st = M.settle(hands, strain, defender, nt_natural=nt_natural)
            assert st.quartet_winner == 0, (hi, lo, defender)
            st = M.settle(hands[::-1], strain, defender, nt_natural=nt_natural)
            assert st.quartet_winner == 1, (hi, lo, defender)


def test_JJ_1_6_and_JJ_2_1_draw_higher_card_deals():
    ids = [card_id(c) for c in ("AS", "KH")]
    assert GAME.draw_first_dealer(ids) == 0
    assert GAME.draw_first_dealer([card_id("7C"), card_id("8D")]) == 1
    # suits are ignored; equal ranks draw again
    assert GAME.draw_first_dealer([card_id(c) for c in ("AS", "AC", "7H", "9D")]) == 1


# ---- 2. Dealing ----------------------------------------------------------------------------

def test_JJ_2_4_to_2_8_dealing_procedure_from_the_top():
    """Pairs ND, D, ND, D, ND, D; D[12] turn-up; 3 + 3 after the auction; D[31] information
    card; D[19..30] unused and unseen."""
    state = GAME.new_state({}, first_dealer=1)
    state.deal(PACK_ORDER)
    assert sorted(hand(state, 0)) == sorted(["AS", "KS", "TS", "9S", "AH", "KH"])
    assert sorted(hand(state, 1)) == sorted(["QS", "JS", "8S", "7S", "QH", "JH"])
    assert table(state)["turn_up"] == "TH" and table(state)["info_card"] is None
    assert state.zones()["stock"] == mask(*PACK_ORDER[13:])
    act(state, "accept", "pass")
    assert sorted(hand(state, 0)) == sorted(["AS", "KS", "TS", "9S", "AH", "KH", "9H", "8H", "7H"])
    assert sorted(hand(state, 1)) == sorted(["QS", "JS", "8S", "7S", "QH", "JH", "AD", "KD", "QD"])
    assert table(state)["info_card"] == "7C"
    assert state.zones()["stock"] == mask(*PACK_ORDER[19:31])
    assert state.secret_cards(0) & mask(*PACK_ORDER[19:31]) == mask(*PACK_ORDER[19:31])


def test_JJ_2_7_an_ace_of_spades_information_card_is_in_its_zone_not_the_stock():
    """JJ-2.7: the information card lies face up on the stock, seen by both: also the ace of
    spades, card id 0 (it is not a stock card, nor a secret)."""
    state = deal(nd=("JS", "9S", "KS", "KH", "7H", "AD"), nd2=("KD", "QD", "JD"),
                 dl=("AH", "TH", "QH", "AC", "KC", "QC"), dl2=("JC", "TC", "9C"), turn="7D", info="AS")
    act(state, "name:S", "pass")
    assert table(state)["info_card"] == "AS"
    z = state.zones()
    assert z["info_card"] == mask("AS") and not z["stock"] & mask("AS")
    assert not state.secret_cards(0) & mask("AS") and not state.secret_cards(1) & mask("AS")


def test_JJ_2_2_deal_alternates_after_a_played_deal():
    state = deal(**STRONG_DEAL)
    assert state.dealer() == 1
    to_play(state, "name:S", "pass")
    auto_finish_deal(state)
    assert state.dealer() == 0 and state.public_view()["phase"] == "deal"


def test_JJ_3_6_and_JJ_2_2_thrown_in_deal_is_redealt_by_the_same_dealer():
    state = deal()
    act(state, "pass", "pass", "pass", "pass")
    assert state.deal_results() == [{"thrown_in": True}]
    assert state.dealer() == 1
    assert state.result()["totals"] == {"below": [0, 0], "above": [0, 0], "games_won": [0, 0]}
    assert state.zones() == {} and state.secret_cards(0) == 0


# ---- 3. Auction ----------------------------------------------------------------------------

def test_JJ_3_1_round_one_accept_name_other_suit_or_pass():
    state = deal(turn="AD")
    assert state.to_act() == 0 and legal(state) == ["accept", "name:S", "name:H", "name:C", "pass"]
    act(state, "pass")
    assert state.to_act() == 1 and legal(state) == ["accept", "name:S", "name:H", "name:C", "pass"]


def test_JJ_3_1_round_two_any_suit_or_no_trump():
    state = deal(turn="AD")
    act(state, "pass", "pass")
    assert legal(state) == ["name:S", "name:H", "name:D", "name:C", "no_trump", "pass"]
    act(state, "pass")
    assert state.to_act() == 1
    assert legal(state) == ["name:S", "name:H", "name:D", "name:C", "no_trump", "pass"]


def test_JJ_3_1_JJ_3_5_JJ_4_5_the_view_shows_a_contract_only_once_bid_and_its_parts_once_fixed():
    """JJ-3.1: no contract before the first contract bid (at the start of every deal);
    JJ-3.5: the declarer exists only once the auction has ended; JJ-4.5: the kind and play
    strain only once the nullo window has been answered."""
    state = deal(**STRONG_DEAL)
    assert table(state)["contract"] is None
    act(state, "pass")
    assert table(state)["contract"] is None
    act(state, "name:S")
    c = table(state)["contract"]
    assert c["strain"] == "S" and c["bidder"] == 1
    assert c["declarer"] is None and c["defender"] is None and c["play_strain"] is None
    act(state, "pass")
    c = table(state)["contract"]
    assert c["declarer"] == 1 and c["defender"] == 0 and c["play_strain"] is None and c["kind"] is None
    act(state, "pass")
    c = table(state)["contract"]
    assert c["play_strain"] == "S" and c["kind"] == "normal" and c["holder"] == 1


def test_JJ_3_2_suit_contract_overcalled_only_by_no_trump_which_is_never_overcalled():
    state = deal(turn="AD")
    act(state, "name:S")
    assert state.to_act() == 1 and legal(state) == ["no_trump", "double", "pass"]
    act(state, "no_trump")
    c = table(state)["contract"]
    assert (c["strain"], c["bidder"], c["multiplier"]) == ("NT", 1, 1)
    assert state.to_act() == 0 and legal(state) == ["double", "pass"]
    with pytest.raises(IllegalAction):
        state.apply("no_trump")
    act(state, "pass")
    c = table(state)["contract"]
    assert (c["declarer"], c["defender"]) == (1, 0)


def test_JJ_3_2_accepting_the_turn_up_may_be_overcalled():
    state = deal(turn="AD")
    act(state, "accept")
    assert legal(state) == ["no_trump", "double", "pass"]


def test_JJ_3_3_double_then_redouble_ends_the_auction():
    state = deal(turn="AD")
    act(state, "pass", "accept", "double")
    assert state.to_act() == 1 and legal(state) == ["redouble", "pass"]
    act(state, "redouble")
    c = table(state)["contract"]
    assert (c["strain"], c["declarer"], c["multiplier"]) == ("D", 1, 4)
    assert state.public_view()["phase"] != "auction"


def test_JJ_3_3_a_doubled_contract_cannot_be_overcalled():
    state = deal(turn="AD")
    act(state, "name:H", "double")
    assert "no_trump" not in legal(state)
    act(state, "pass")
    assert table(state)["contract"]["multiplier"] == 2


# ---- 4. Second deal, seven exchange, nullo, slam ---------------------------------------------

EXCH_DEAL = dict(nd=("AS", "KS", "7S", "AD", "KD", "QD"), nd2=("JD", "TD", "9D"),
                 dl=("AH", "KH", "JH", "TH", "AC", "KC"), dl2=("QC", "JC", "TC"), turn="QH",
                 info="9C")


def test_JJ_4_2_only_the_holder_of_sevens_may_exchange_defender_first():
    state = deal(**EXCH_DEAL)
    act(state, "accept", "pass")  # seat 0 declares hearts, the turn-up suit
    assert table(state)["exchange_window"] is True
    assert state.to_act() == 1 and legal(state) == ["no_exchange"]
    act(state, "no_exchange")
    assert state.to_act() == 0 and legal(state) == ["exchange:7S", "no_exchange"]
    act(state, "exchange:7S")
    assert "QH" in hand(state, 0) and "7S" not in hand(state, 0)
    t = table(state)
    assert t["turn_up"] == "7S" and t["exchange"] == {"seat": 0, "seven": "7S", "turn_up": "QH"}
    assert state.view(1)["table"]["exchange"] == t["exchange"]  # public (JJ-4.2)
    assert state.secret_cards(1) >> card_id("QH") & 1 == 0
    assert state.to_act() == 1 and legal(state) == ["nullo", "pass"]


def test_JJ_4_2_both_hold_sevens_nobody_exchanges():
    layout = dict(EXCH_DEAL, dl2=("QC", "JC", "7C"))
    state = deal(**layout)
    act(state, "accept", "pass")
    assert legal(state) == ["no_exchange"]
    act(state, "no_exchange")
    assert legal(state) == ["no_exchange"]


def test_JJ_4_2_no_window_for_another_suit_no_trump_or_a_seven_turn_up():
    state = deal(**EXCH_DEAL)
    act(state, "name:S", "pass")
    assert table(state)["exchange_window"] is False and legal(state) == ["nullo", "pass"]
    state = deal(**EXCH_DEAL)
    act(state, "pass", "pass", "no_trump", "pass")
    assert legal(state) == ["nullo", "pass"]
    state = deal(**dict(EXCH_DEAL, turn="7H", stock=("QH",)))
    act(state, "accept", "pass")
    assert legal(state) == ["nullo", "pass"]


def test_JJ_4_3_to_4_5_nullo_answered_by_slam_or_pass():
    state = deal(**STRONG_DEAL)
    act(state, "name:S", "pass", "nullo")
    assert state.to_act() == 0 and legal(state) == ["slam:S", "pass"]
    act(state, "slam:S")
    c = table(state)["contract"]
    assert (c["kind"], c["holder"], c["play_strain"]) == ("slam", 0, "S")
    state = deal(**STRONG_DEAL)
    act(state, "pass", "pass", "no_trump", "pass", "nullo")
    assert legal(state) == ["slam:NT", "pass"]
    act(state, "pass")
    c = table(state)["contract"]
    assert (c["kind"], c["holder"], c["play_strain"]) == ("nullo", 1, "NT")


# ---- 5. Melds ------------------------------------------------------------------------------

def test_JJ_5_1_quartets_exclude_eights_and_sevens_in_suit_and_nines_at_NT():
    eights = mask("8S", "8H", "8D", "8C")
    assert M.settle((eights, 0), 0, 0).quartets == ((), ())
    jacks = mask("JS", "JH", "JD", "JC")
    assert M.settle((jacks, 0), 4, 0).quartet_points == (100, 0)


def test_JJ_5_2_sequence_values_and_maximal_runs():
    st = M.settle((mask("AH", "KH", "QH", "TH", "9H", "8H", "7H"), mask("KC", "QC", "JC", "TC", "9C")), 0, 0)
    assert [(s.length, s.points) for s in st.sequences[0]] == [(4, 40), (3, 20)]  # Q-J gap splits
    assert st.sequences[1][0].points == 50 and st.sequence_winner == 1
    st = M.settle((mask("AH", "KH", "QH", "JH", "TH", "9H", "8H"), 0), 0, 0)
    assert [(s.length, s.points) for s in st.sequences[0]] == [(7, 50)]  # never split (JJ-A20)


def test_JJ_5_3_a_card_may_be_in_a_quartet_and_a_sequence():
    h = mask("AS", "AH", "AD", "AC", "KC", "QC")
    st = M.settle((h, 0), 0, 0)
    assert st.quartet_points == (100, 0) and st.sequence_points == (20, 0)


def test_JJ_5_5_higher_best_quartet_scores_all_of_its_owners_quartets():
    a = mask("JS", "JH", "JD", "JC")
    b = mask("AS", "AH", "AD", "AC", "KS", "KH", "KD", "KC")
    st = M.settle((a, b), 0, 0)
    assert st.quartet_winner == 0 and st.quartet_points == (100, 0)
    st = M.settle((a, b), 4, 0)  # NT: A over K over J
    assert st.quartet_winner == 1 and st.quartet_points == (0, 200)


def test_JJ_5_5_a_hands_best_quartet_is_the_highest_in_quartet_order_not_in_natural_order():
    """JJ-5.5 / JJ-1.5: aces and jacks in a suit contract: the jacks are the best quartet (J 9 A T K
    Q), so they beat the opponent's nines and both quartets score, though the aces come first in
    the natural order; and the opponent's jacks beside queens beat the nines."""
    aces_jacks = mask("AS", "AH", "AD", "AC", "JS", "JH", "JD", "JC")
    st = M.settle((aces_jacks, mask("9S", "9H", "9D", "9C")), 0, 0)
    assert st.quartets[0] == (T.JACK, T.ACE)
    assert st.quartet_winner == 0 and st.quartet_points == (200, 0)
    assert M.dialogue(st)[0] == {"seat": 0, "say": "quartet J"}  # JJ-5.9: the defender states his best
    st = M.settle((mask("9S", "9H", "9D", "9C"), mask("JS", "JH", "JD", "JC", "QS", "QH", "QD", "QC")), 0, 0)
    assert st.quartet_winner == 1 and st.quartet_points == (0, 200)  # jacks beat nines, queens do not


def test_JJ_5_6_sequence_comparison_length_top_trump_then_nobody():
    longer = M.settle((mask("QH", "JH", "TH", "9H"), mask("AS", "KS", "QS")), 3, 0)
    assert longer.sequence_winner == 0 and longer.sequence_points == (40, 0)
    top = M.settle((mask("QH", "JH", "TH"), mask("AS", "KS", "QS", "QC", "JC", "TC")), 3, 0)
    assert top.sequence_winner == 1 and top.sequence_points == (0, 40)  # all his sequences
    trump = M.settle((mask("QH", "JH", "TH"), mask("QC", "JC", "TC")), 3, 0)
    assert trump.sequence_winner == 1
    tie = M.settle((mask("QH", "JH", "TH"), mask("QD", "JD", "TD")), 3, 0)
    assert tie.sequence_winner is None and tie.sequence_points == (0, 0)


def test_JJ_5_6_a_players_best_sequence_is_his_trump_one_among_equals():
    """JJ-5.6 (last sentence): a player's best sequence is his highest by the same ranking, so of
    two K-high runs of three the trump one (hearts) is his best and beats the opponent's K-high
    diamonds; the plain spades run comes second."""
    st = M.settle((mask("KS", "QS", "JS", "KH", "QH", "JH"), mask("KD", "QD", "JD")), 1, 0)
    assert [(s.suit, s.trump) for s in st.sequences[0]] == [(1, True), (0, False)]
    assert st.sequence_winner == 0 and st.sequence_points == (40, 0)


def test_JJ_5_6_equal_sequences_in_suit_order_and_best_plus_one_scores_the_first_two():
    """JJ-5.6 ranking, equal ranks in suit order S H D C (``hand_sequences``' docstring): three
    K-high runs of three at no-trump are listed spades, hearts, diamonds; with JJ-A19
    ``jj_winner_sequences = best_plus_one`` the winner scores and states (JJ-5.9) the first two."""
    h = mask("KD", "QD", "JD", "KH", "QH", "JH", "KS", "QS", "JS")
    assert [s.suit for s in M.hand_sequences(h, 4, False)] == [0, 1, 2]
    st = M.settle((h, mask("QC", "JC", "TC")), 4, 0, winner_all_sequences=False)
    assert [s.suit for s in st.scored_sequences[0]] == [0, 1] and st.sequence_points == (40, 0)
    assert [s["suit"] for s in M.dialogue(st)[-1]["sequences"]] == ["S", "H"]
    # the same for the declarer (seat 1) winning: his third sequence is neither scored nor shown
    st = M.settle((mask("QC", "JC", "TC"), h), 4, 0, winner_all_sequences=False)
    assert st.sequence_winner == 1 and [s.suit for s in st.scored_sequences[1]] == [0, 1]
    assert st.sequence_points == (0, 40)
    assert [s["suit"] for s in M.dialogue(st)[-1]["sequences"]] == ["S", "H"]


def test_JJ_A20_split_runs_leaves_a_six_card_run_whole_and_a_split_trump_run_stays_trump():
    """JJ-A20 ``jj_split_runs``: only a run of 7 or 8 is cut (a 6-card run scores 50 whole, more
    than 4 + 2 could); both pieces of a cut trump run are trump sequences (JJ-5.6 step 3)."""
    six = M.hand_sequences(mask("AH", "KH", "QH", "JH", "TH", "9H"), 1, True)
    assert [(s.top, s.length, s.points) for s in six] == [(0, 6, 50)]
    seven = M.hand_sequences(mask("AH", "KH", "QH", "JH", "TH", "9H", "8H"), 1, True)
    assert [(s.top, s.length, s.trump) for s in seven] == [(0, 4, True), (4, 3, True)]


def test_JJ_A10_quartets_are_those_of_the_hand_held_when_they_were_stated():
    """JJ-A10 / JJ-5.9 (settle's ``quartet_hands``): the defender (seat 0) who completes the nines
    only after the quartet statements (a late exchange brought him 9S) scores no quartet; his
    hand at the statements decides, for seat 0 as for seat 1."""
    then = mask("7S", "9H", "9D", "9C")
    now = mask("9S", "9H", "9D", "9C")
    st = M.settle((now, 0), 0, 0, quartet_hands=(then, 0))
    assert st.quartets == ((), ()) and st.quartet_points == (0, 0)
    assert M.settle((now, 0), 0, 0).quartet_points == (100, 0)


def test_JJ_A20_no_card_in_two_melds_for_the_second_seat_too():
    """JJ-A20 ``jj_card_in_two_melds = false``: seat 1's scored quartet of aces takes AS out of
    his A-K-Q of spades, so seat 0's 9-8-7 of diamonds wins the sequences; by default (JJ-5.3)
    seat 1's run wins."""
    hands = (mask("9D", "8D", "7D"), mask("AS", "AH", "AD", "AC", "KS", "QS"))
    st = M.settle(hands, 0, 0, card_in_two_melds=False)
    assert st.quartet_points == (0, 100) and st.sequence_winner == 0 and st.sequence_points == (20, 0)
    assert M.settle(hands, 0, 0).sequence_winner == 1


def test_JJ_A21_each_seat_conceals_one_category_only():
    """JJ-A21 (``declared[seat] = (quartets, sequences)``): seat 0 concealing his sequences holds
    none, so seat 1's lower run wins; seat 1 concealing only his quartets still has his run."""
    hands = (mask("AH", "KH", "QH", "JH"), mask("KC", "QC", "JC", "9S", "9H", "9D", "9C"))
    st = M.settle(hands, 0, 0, declared=((True, False), (True, True)))
    assert st.sequences[0] == () and st.sequence_winner == 1 and st.points == (0, 120)
    st = M.settle(hands, 0, 0, declared=((True, True), (False, True)))
    assert st.quartets == ((), ()) and st.sequence_winner == 0 and st.points == (40, 0)
    st = M.settle((mask("QH", "JH", "TH"), hands[1]), 0, 0, declared=((True, True), (False, True)))
    assert st.sequence_winner == 1 and st.points == (0, 20)


def test_JJ_5_9_a_declarer_with_a_sequence_answers_length_0_with_not_good():
    """JJ-5.9: against the defender's ``length 0`` the declarer who holds a sequence is longer:
    ``not_good 3``, then he scores it; ``good`` is only for shorter or none."""
    st = M.settle((mask("AS", "9H", "7D"), mask("QC", "JC", "TC")), 0, 0)
    _, seq_lines = M.dialogue_parts(st)
    assert [(d["seat"], d["say"]) for d in seq_lines] == [(0, "length 0"), (1, "not_good 3"), (1, "scores")]


def test_JJ_5_9_trump_check_names_the_winner():
    """JJ-5.9 / JJ-5.6 step 3: equal lengths and tops, the trump check's line names the trump
    sequence's owner (clubs trump: seat 1), and nobody when neither is trump."""
    st = M.settle((mask("QH", "JH", "TH"), mask("QC", "JC", "TC")), 3, 0)
    assert M.dialogue(st)[-2] == {"seat": None, "say": "trump_check", "winner": 1}
    st = M.settle((mask("QH", "JH", "TH"), mask("QD", "JD", "TD")), 3, 0)
    assert M.dialogue(st)[-1] == {"seat": None, "say": "trump_check", "winner": None}


def test_JJ_5_7_categories_are_independent():
    a = mask("9S", "9H", "9D", "9C")
    b = mask("AS", "KS", "QS", "JS")
    st = M.settle((a, b), 0, 0)
    assert st.points == (100, 40)


def test_JJ_5_9_public_dialogue_reveals_only_statements():
    st = M.settle((mask("QS", "QH", "QD", "QC", "9H", "8H", "7H"), mask("JS", "TS", "9S", "KD")), 0, 0)
    says = [(d["seat"], d["say"]) for d in M.dialogue(st)]
    assert says == [(0, "quartet Q"), (1, "good"), (0, "scores"), (0, "length 3"), (1, "how_high"),
                    (0, "top 9"), (1, "higher J"), (1, "scores")]
    shown = M.revealed_by(M.dialogue(st))
    assert shown == mask("QS", "QH", "QD", "QC", "JS", "TS", "9S")
    assert not shown & mask("9H", "8H", "7H")  # the loser's sequence stays hidden


def test_JJ_5_9_a_higher_declarer_quartet_says_not_good_and_both_stated_quartets_are_revealed():
    """JJ-5.9 / JJ-5.5: the declarer (seat 1) answers the defender's ``quartet Q`` with
    ``not_good J`` and scores both his quartets; with no sequence anywhere the defender says
    ``length 0`` and the declarer ``good``. The loser's stated quartet and every quartet of the
    winner's ``scores`` line are public (their cards are pinned down), nothing else."""
    st = M.settle((mask("QS", "QH", "QD", "QC", "8D"), mask("JS", "JH", "JD", "JC", "9S", "9H", "9D", "9C")), 0, 0)
    lines = M.dialogue(st)
    assert [(d["seat"], d["say"]) for d in lines] == [(0, "quartet Q"), (1, "not_good J"), (1, "scores"),
                                                      (0, "length 0"), (1, "good")]
    assert lines[2]["quartets"] == ["J", "9"] and lines[2]["points"] == 200
    assert M.revealed_by(lines) == mask("QS", "QH", "QD", "QC", "JS", "JH", "JD", "JC", "9S", "9H", "9D", "9C")


def test_JJ_5_9_a_lower_declarer_quartet_says_good_and_stays_hidden():
    """JJ-5.9: the declarer answers ``good`` when he holds no quartet *or a lower one*: against
    the defender's jacks (seat 0) his aces (seat 1, J 9 A T K Q, JJ-1.5) say ``good``, not
    ``not_good A``; only the defender's quartets are revealed ("nothing else is revealed")."""
    st = M.settle((mask("JS", "JH", "JD", "JC"), mask("AS", "AH", "AD", "AC")), 0, 0)
    lines = M.dialogue(st)
    assert [(d["seat"], d["say"]) for d in lines][:3] == [(0, "quartet J"), (1, "good"), (0, "scores")]
    assert M.revealed_by(lines) == mask("JS", "JH", "JD", "JC")


def test_JJ_5_9_a_longer_declarer_sequence_says_not_good_with_its_length():
    """JJ-5.9 / JJ-5.6: the declarer (seat 1) answers the defender's ``length 3`` with
    ``not_good 4`` (his length, no top card asked) and scores."""
    st = M.settle((mask("QH", "JH", "TH"), mask("AS", "KS", "QS", "JS")), 3, 0)
    assert [(d["seat"], d["say"]) for d in M.dialogue(st)] == [(0, "quartet none"), (1, "good"), (0, "length 3"),
                                                               (1, "not_good 4"), (1, "scores")]


def test_JJ_5_9_a_lower_top_says_lower_and_the_defender_scores_his_sequence_with_its_points():
    """JJ-5.9 / JJ-5.6: equal lengths, the declarer's top card is lower: after ``how_high`` and
    ``top A`` he says ``lower``; the defender's ``scores`` line names suit, top card and length of
    the sequence and its points."""
    lines = M.dialogue(M.settle((mask("AS", "KS", "QS"), mask("KH", "QH", "JH")), 3, 0))
    assert [(d["seat"], d["say"]) for d in lines][2:] == [(0, "length 3"), (1, "how_high"), (0, "top A"),
                                                          (1, "lower"), (0, "scores")]
    assert lines[-1]["points"] == 20
    assert [(q["suit"], q["top"], q["length"], q["points"]) for q in lines[-1]["sequences"]] == [("S", "A", 3, 20)]


def test_JJ_5_9_the_statements_compare_each_players_best_sequence():
    """JJ-5.9 / JJ-5.6: each player states his best sequence (longest, then highest), not his
    last: K-Q-J-T of hearts beside 9-8-7 of spades is ``length 4`` / ``top K``; A-K-Q-J of diamonds
    beside 9-8-7 of clubs answers ``how_high`` and ``higher A`` and scores both sequences; against
    A-K-Q-J of hearts, K-Q-J-T of diamonds beside A-K-Q of clubs is ``lower``."""
    st = M.settle((mask("KH", "QH", "JH", "TH", "9S", "8S", "7S"), mask("AD", "KD", "QD", "JD", "9C", "8C", "7C")),
                  3, 0)
    lines = M.dialogue(st)
    assert [(d["seat"], d["say"]) for d in lines][2:] == [(0, "length 4"), (1, "how_high"), (0, "top K"),
                                                          (1, "higher A"), (1, "scores")]
    assert lines[-1]["points"] == 60
    st = M.settle((mask("AH", "KH", "QH", "JH", "9S", "8S", "7S"), mask("KD", "QD", "JD", "TD", "AC", "KC", "QC")),
                  3, 0)
    assert [(d["seat"], d["say"]) for d in M.dialogue(st)][2:] == [(0, "length 4"), (1, "how_high"), (0, "top A"),
                                                                   (1, "lower"), (0, "scores")]


def test_JJ_5_9_equal_tops_say_same_then_trump_check():
    """JJ-5.9 / JJ-5.6: equal length and equal top card: the declarer says ``same`` (not
    ``higher``), then the ``trump_check`` event names the trump sequence's owner, or nobody
    when neither is in trumps (and then nobody scores)."""
    says = [(d["seat"], d["say"]) for d in M.dialogue(M.settle((mask("QH", "JH", "TH"), mask("QC", "JC", "TC")), 3, 0))]
    assert says[2:] == [(0, "length 3"), (1, "how_high"), (0, "top Q"), (1, "same"), (None, "trump_check"),
                        (1, "scores")]
    tie = M.dialogue(M.settle((mask("QH", "JH", "TH"), mask("QD", "JD", "TD")), 3, 0))
    assert tie[-2:] == [{"seat": 1, "say": "same"}, {"seat": None, "say": "trump_check", "winner": None}]


MELD_LOSER_DEAL = dict(nd=("JS", "9S", "AS", "KS", "7S", "AH"), nd2=("AD", "8C", "7C"),
                       dl=("TS", "QS", "8S", "KH", "QH", "JH"), dl2=("TH", "9H", "KD"), turn="7D",
                       info="KC")


def test_JJ_5_8_and_JJ_9_1_meld_points_credited_below_whatever_the_outcome():
    """The defender (seat 1) holds K-Q-J-T-9 of hearts (50) and loses the deal; he still enters
    his 50 below the line, and no trick points."""
    state = deal(**MELD_LOSER_DEAL)
    to_play(state, "name:S", "pass")
    assert table(state)["melds"]["points"] == [0, 50]
    r = auto_finish_deal(state)
    detail = table(state)["last_deal"]
    assert detail["outcome"] == "declarer_more"
    assert r["below"][1] == 50
    assert r["below"][0] == detail["trick_points"][0]


def test_JJ_5_10_no_melds_in_nullo():
    state = deal(**STRONG_DEAL)
    to_play(state, "name:S", "pass", "nullo", "pass")
    assert table(state)["melds"] is None
    r = auto_finish_deal(state)
    assert r["below"] == [0, 0]


# ---- 6. Trick play --------------------------------------------------------------------------

def test_JJ_6_1_defender_leads_in_normal_and_slam_declarer_in_nullo():
    state = to_play(deal(**STRONG_DEAL), "name:S", "pass")
    assert state.to_act() == 1
    state = to_play(deal(**STRONG_DEAL), "name:S", "pass", "nullo", "slam:S")
    assert state.to_act() == 1
    state = to_play(deal(**STRONG_DEAL), "name:S", "pass", "nullo", "pass")
    assert state.to_act() == 0


def test_JJ_6_2_leader_leads_any_card():
    state = to_play(deal(**PLAY_DEAL), "accept", "pass")
    assert sorted(plays(state)) == sorted(hand(state, 1))


def test_JJ_6_3_must_follow_and_beat_a_plain_lead():
    state = to_play(deal(**PLAY_DEAL), "accept", "pass")
    act(state, "play:KH")
    assert plays(state) == ["AH"]


def test_JJ_6_3_must_beat_a_trump_lead():
    state = to_play(deal(**PLAY_DEAL), "accept", "pass")
    act(state, "play:TS")
    assert plays(state) == ["JS", "9S"]


def test_JJ_6_3_follow_with_any_card_of_the_suit_when_unable_to_beat():
    state = to_play(deal(**PLAY_DEAL), "accept", "pass")
    act(state, "play:KH", "play:AH", "play:JS")  # seat 0 wins with AH and leads the top trump
    assert plays(state) == ["AS", "TS"]
    act(state, "play:AS", "play:AD")
    assert plays(state) == ["TS"]  # void in diamonds, holds a trump: must trump (JJ-6.4)


def test_JJ_6_2_the_led_ace_of_spades_lies_in_the_trick_zone():
    """JJ-6.2: the led card lies on the table until the trick is complete: also the ace of
    spades, card id 0 (it is neither in the stock nor a secret)."""
    state = to_play(deal(**JO_DEAL), "name:S", "pass")
    act(state, "play:AS")
    z = state.zones()
    assert z["trick"] == mask("AS") and not z["stock"] & mask("AS")
    assert not state.secret_cards(0) & mask("AS")


def test_JJ_6_4_void_in_the_led_suit_must_trump():
    state = to_play(deal(**PLAY_DEAL), "accept", "pass")
    act(state, "play:AC")
    assert plays(state) == ["JS", "9S", "7S"]


def test_JJ_6_3_and_6_4_a_refused_card_names_the_rule_it_breaks_and_changes_nothing():
    """JJ-6.3 / JJ-6.4 (JJ-6.8): a refused card play says why, for the actor's own hand and the
    trick on the table: not held; must follow the led suit; must beat the led card when able;
    void in the led suit, must trump. The state is left as it was."""
    state = to_play(deal(**PLAY_DEAL), "accept", "pass")
    act(state, "play:KH")  # seat 0 holds AH 7H: follow and beat
    before = legal(state)
    for action, reason in (("play:KS", "KS is not in your hand"),
                           ("play:AD", "you must follow suit H (JJ-6.3)"),
                           ("play:7H", "you must beat KH with a higher H (JJ-6.3)")):
        with pytest.raises(IllegalAction) as err:
            state.apply(action)
        assert f"{action}: {reason}" == str(err.value)
        assert legal(state) == before and state.to_act() == 0
    state = to_play(deal(**PLAY_DEAL), "accept", "pass")
    act(state, "play:AC")  # seat 0 has no club and holds trumps
    with pytest.raises(IllegalAction) as err:
        state.apply("play:AD")
    assert str(err.value) == "play:AD: you have no C and must play a trump S (JJ-6.4)"
    assert plays(state) == ["JS", "9S", "7S"]


def test_JJ_6_5_void_without_trumps_plays_anything():
    state = to_play(deal(**PLAY_DEAL), "pass", "pass", "no_trump", "pass")
    assert state.to_act() == 1
    act(state, "play:AC")
    assert sorted(plays(state)) == sorted(hand(state, 0))  # JJ-6.7: no trump at NT


def test_JJ_6_6_trump_wins_a_plain_trick_higher_card_of_led_suit_wins():
    state = to_play(deal(**PLAY_DEAL), "accept", "pass")
    act(state, "play:AC", "play:7S")
    assert table(state)["tricks"][-1]["winner"] == 0
    act(state, "play:AH", "play:KH")  # seat 0 leads AH; seat 1 cannot beat
    assert table(state)["tricks"][-1]["winner"] == 0


# ---- 7. Bonuses ---------------------------------------------------------------------------

JO_DEAL = dict(nd=("KS", "QS", "JS", "AH", "KH", "QH"), nd2=("AD", "KD", "QD"),
               dl=("AS", "TS", "9S", "AC", "KC", "QC"), dl2=("JC", "TC", "9C"), turn="7D", info="8C")


def test_JJ_7_1_and_7_2_jo_on_the_king_then_jotte_on_the_queen_scores_20():
    state = to_play(deal(**JO_DEAL), "name:S", "pass")
    act(state, "play:AC")
    assert legal(state) == ["play:KS", "play:KS:jo", "play:QS", "play:JS"]
    act(state, "play:KS:jo")
    assert table(state)["jo"] == [0]
    assert state.secret_cards(1) >> card_id("QS") & 1 == 0  # "jo" shows the queen
    # NOTATION 2.4 (docs/games/jojotte.md): the announced variant right after its plain play
    assert legal(state) == ["play:QS", "play:QS:jotte", "play:JS", "play:AH", "play:KH", "play:QH",
                            "play:AD", "play:KD", "play:QD"]
    act(state, "play:QS:jotte")
    assert table(state)["jo_jotte"] == [20, 0]
    r = auto_finish_deal(state)
    assert table(state)["last_deal"]["jo_jotte"] == [20, 0]
    assert r["below"][0] >= 20


def test_JJ_7_2_no_announcement_no_bonus_and_queen_first_earns_nothing():
    state = to_play(deal(**JO_DEAL), "name:S", "pass")
    act(state, "play:AC", "play:QS")
    assert not any(a.endswith(":jo") for a in legal(state))
    auto_finish_deal(state)
    assert table(state)["last_deal"]["jo_jotte"] == [0, 0]
    state = to_play(deal(**JO_DEAL), "name:S", "pass")
    act(state, "play:AC", "play:KS")  # the king without "jo"
    assert "play:QS:jotte" not in legal(state)


def test_JJ_7_3_last_trick_is_worth_10_and_JJ_7_4_unbid_slam_100_above():
    state = to_play(deal(**STRONG_DEAL), "name:S", "pass")
    r = auto_finish_deal(state)
    tricks = table(state)["last_deal"]["tricks"]
    assert tricks == [9, 0]
    assert r["above"] == [100, 0]


def test_JJ_7_4_unbid_slam_in_a_slam_contract_goes_to_the_opponent_who_takes_all():
    """The defender's nullo is answered by the declarer's slam; the slam player's opponent
    cannot take all nine here, so only the slam premium is entered."""
    state = to_play(deal(**STRONG_DEAL), "name:S", "pass", "nullo", "slam:S")
    r = auto_finish_deal(state)
    assert r["above"] == [500, 0]
    assert r["contract"] == {"kind": "slam", "strain": "S", "holder": 0, "multiplier": 1}


# ---- 8. Trick values ------------------------------------------------------------------------

def test_JJ_8_1_card_values_per_strain():
    v = T.CARD_VALUE[0]
    assert [v[card_id(c)] for c in ("JS", "9S", "AS", "TS", "KS", "QS", "8S", "7S")] == [20, 15, 10, 10, 5, 5, 0, 0]
    assert [v[card_id(c)] for c in ("JH", "9H", "AH", "TH", "KH", "QH")] == [0, 0, 10, 10, 5, 5]
    assert T.CARD_VALUE[4][card_id("JS")] == 0 and T.CARD_VALUE[4][card_id("9S")] == 0


def test_JJ_8_2_a_trick_is_worth_its_highest_valued_card():
    state = to_play(deal(**PLAY_DEAL), "accept", "pass")
    act(state, "play:KH", "play:AH")
    assert table(state)["tricks"][-1]["value"] == 10  # not 15


def test_JJ_8_4_no_trick_points_in_nullo():
    state = to_play(deal(**STRONG_DEAL), "name:S", "pass", "nullo", "pass")
    r = auto_finish_deal(state)
    assert r["trick_points"] == [0, 0]
    assert r["above"] == [0, 200] and r["below"] == [0, 0]  # JJ-9.7: nullo made


# ---- 9. Deal scoring (end to end; the arithmetic of every case is in test_jojotte_scoring) ----

FAIL_NULLO_DEAL = dict(nd=("KH", "QH", "JH", "TH", "9H", "AD"), nd2=("KD", "QD", "JD"),
                       dl=("JS", "9S", "AS", "TS", "KS", "QS"), dl2=("8S", "7S", "AH"), turn="7D",
                       info="7C")


def test_JJ_9_7_nullo_failed_penalty_to_the_opponent():
    """The nullo player (seat 1) holds every spade and AH: he takes all nine tricks; his
    opponent enters 200 + 8 x 100 above the line."""
    state = to_play(deal(**FAIL_NULLO_DEAL), "name:H", "pass", "nullo", "pass")
    assert state.to_act() == 0  # the declarer leads in nullo
    r = auto_finish_deal(state)
    assert table(state)["last_deal"]["tricks"] == [0, 9]
    assert r["above"] == [1000, 0] and r["below"] == [0, 0]
    assert r["contract"] == {"kind": "nullo", "strain": "NT", "holder": 1, "multiplier": 1}


def test_JJ_9_7_a_nullo_deal_has_no_comparison_no_outcome_no_pot_entry_and_no_meld_winner():
    """JJ-9.7 (only these entries) with JJ-8.4: a nullo deal is not decided by the JJ-9.2
    comparison, so its breakdown (``table.last_deal``) has no compared totals, no outcome and
    nobody entering a pot (all null), and its trick points are not counted; and it has no meld
    phase (JJ-5.10), so no quartet or sequence winner either (null, not seat 0)."""
    state = to_play(deal(**FAIL_NULLO_DEAL), "name:H", "pass", "nullo", "pass")
    auto_finish_deal(state)
    d = table(state)["last_deal"]
    assert d["tricks"] == [0, 9] and d["trick_points"] == [0, 0] and d["melds"] == [0, 0]
    assert d["comparison"] is None and d["outcome"] is None and d["pot_to"] is None
    assert d["quartet_winner"] is None and d["sequence_winner"] is None


SLAM_FAIL_DEAL = dict(nd=("JS", "9S", "AS", "TS", "KS", "QS"), nd2=("8S", "7S", "KH"),
                      dl=("AH", "QH", "JH", "TH", "9H", "AD"), dl2=("KD", "QD", "JD"), turn="7D",
                      info="7C")


def test_JJ_9_6_failed_slam_gives_the_opponent_500():
    state = to_play(deal(**SLAM_FAIL_DEAL), "name:S", "pass", "nullo", "slam:S")
    act(state, "play:AH")
    assert plays(state) == ["KH"]
    act(state, "play:KH")
    r = auto_finish_deal(state)
    assert table(state)["last_deal"]["tricks"][1] >= 1
    assert r["above"] == [0, 500]


# Deals (full decks, seat 0 the non-dealer) in which the defender wins the comparison on his
# melds (JJ-9.2) while taking a single trick worth 0 (a 7 and a plain 9 or 8, not the last), or
# no trick at all (the declarer takes all nine: his unbid slam 100 above, JJ-7.4).
ZERO_TRICK_VALUE_DEALS = [
    (0, "9H 7C 8C 7H AC KS 8S TH QC KH TD AH JS 9S KD KC TS 7S 8H 7D JD JH 9C QS AS QD 8D 9D JC QH AD TC",
     "pass name:D pass pass play:9H play:AH play:TH play:KH play:7S play:9S play:7C play:8C play:TD play:KD "
     "play:TS play:KS play:7H play:KC play:8H play:QC play:8S play:AC", [120, 70], 1, 120, [0, 0]),
    (1, "AS JD 8D 7H KH JS KD QH QS AH 9H 9S QD AC TD 8H 7D 9C 9D AD KC 8S 7S 8C TH 7C QC JC KS JH TS TC",
     "name:S pass pass play:QH play:KH play:JS play:9S play:TD play:7D play:8H play:9H play:9D play:JD "
     "play:AS play:KD play:QS play:9C play:AC play:8D play:AH play:7H", [80, 120], 1, 120, [0, 0]),
    (0, "7H 9S TD JS 8H 9H AH AD 9C 9D AC JC QD KH QH KD AS KS TH TC JD 8C TS JH KC 7C 7D 8D 8S QC 7S QS",
     "pass name:C pass pass play:9S play:AS play:JC play:9C play:AD play:9D play:KS play:9H play:AC play:KD "
     "play:AH play:KH play:JS play:QH play:TD play:8H play:TH play:7H", [120, 100], 0, 120, [0, 100]),
    (1, "AC KH KD QS 9H 7D TC 8H JC AD QC 7C 9S TS TD 7H QD QH 8C 8S 8D KC JH JD 9C 9D 7S KS TH AH JS AS",
     "name:H pass pass play:8C play:JC play:KH play:8H play:TD play:QD play:9H play:QH play:AD play:KD "
     "play:7D play:QC play:AC play:7C play:7H play:QS play:TS play:TC", [80, 100], 0, 100, [100, 0]),
]


@pytest.mark.parametrize("defender,deck,actions,comparison,won,melds,above", ZERO_TRICK_VALUE_DEALS)
def test_JJ_9_3b_a_defender_with_one_trick_worth_0_or_none_enters_0_for_his_tricks(
        defender, deck, actions, comparison, won, melds, above):
    """JJ-9.3b: the defender who wins the comparison enters his two most valuable tricks; with a
    single trick, that trick's value (here 0); with none, 0. So he enters his melds alone
    (JJ-9.1) and the declarer no trick points. Nothing of a trick he did not win may count, as
    either seat."""
    state = GAME.new_state({}, first_dealer=1)
    state.deal(deck.split())
    act(state, *actions.split())
    r = state.deal_results()[-1]
    detail = table(state)["last_deal"]
    assert r["contract"]["holder"] == 1 - defender and r["contract"]["multiplier"] == 1
    assert detail["outcome"] == "defender_more" and detail["comparison"] == comparison
    assert detail["tricks"][defender] == won and detail["trick_points"][defender] == 0
    assert detail["melds"][defender] == melds and detail["melds"][1 - defender] == 0
    below = [0, 0]
    below[defender] = melds
    assert r["below"] == below and r["above"] == above and r["pot"] == 0


def test_JJ_9_3_and_9_5_tie_freezes_the_pot_and_the_next_deal_winner_takes_it():
    """The seed deal under ``jj_outcome_basis = trick_points`` is a 35-35 tie: 70 frozen. In the
    next deal the comparison winner enters the 70 on top of his own entries."""
    from tests.shared_paths import vectors

    v = dict(vectors("jojotte"))["jojotte_deal_andrey_maxim.json"]
    opts = {"jj_outcome_basis": "trick_points"}
    state = GAME.new_state(opts, first_dealer=1)
    state.deal(v["deck_top_first"])
    act(state, "pass", "name:D", "pass", "pass")
    for trick in v["tricks"]:
        for p in trick["plays"]:
            state.apply("play:" + p["card"], p["seat"])
    assert state.deal_results()[-1]["pot"] == 70
    assert state.result()["totals"]["below"] == [0, 20]
    # second deal: seat 0 deals now; seat 1 (non-dealer) gets the strong hand
    state.deal(make_deck(**STRONG_DEAL))
    to_play(state, "name:S", "pass")
    r = auto_finish_deal(state)
    detail = table(state)["last_deal"]
    assert detail["outcome"] == "declarer_more" and detail["pot_to"] == 1
    assert r["below"][1] == detail["trick_points"][1] + detail["melds"][1] + 70
    assert r["pot"] == 0


# ---- 10. Game, rubber, match ------------------------------------------------------------------

def set_match(state, **fields):
    """Test fixture: put the match at a given score position (private fields)."""
    for k, v in fields.items():
        setattr(state, "_" + k, v)
    return state


def test_JJ_10_1_game_at_80_below_and_JJ_10_2_new_line():
    state = deal(**STRONG_DEAL)
    set_match(state, gpts=(30, 70))
    to_play(state, "name:S", "pass")
    auto_finish_deal(state)
    m = table(state)["match"]
    assert m["games_won"] == [1, 0] and m["game_points"] == [0, 0]
    assert m["rubber_game_winners"] == [0]


def test_JJ_10_3_rubber_to_two_games_bonus_300_above_and_match_end():
    state = deal(**STRONG_DEAL)
    set_match(state, gpts=(0, 0), rgames=(1, 1), rseq=(1, 0), games=(1, 1))
    to_play(state, "name:S", "pass")
    r = auto_finish_deal(state)
    assert r["above"] == [100 + 300, 0]  # unbid slam + rubber bonus
    res = state.result()
    assert res["over"] is True and res["winners"] == [0]
    assert res["totals"]["games_won"] == [2, 1]
    assert state.to_act() == -2 and state.legal_actions() == []
    m = table(state)["match"]
    assert m["rubbers_won"] == [1, 0] and m["rubber_totals"] == [[r["below"][0] + 400, r["below"][1]]]


def test_JJ_10_3_a_won_rubber_leaves_a_fresh_rubber_in_a_longer_match_JJ_10_5():
    """JJ-10.3 / JJ-10.5: with ``jj_match_rubbers = 2`` the first rubber's end starts the second:
    the view's current-rubber record (its games, their winners in order, its points, JJ-10.4)
    starts empty again, and the finished rubber moves to ``rubber_totals``."""
    state = deal({"jj_match_rubbers": 2}, **STRONG_DEAL)
    set_match(state, gpts=(0, 0), rgames=(1, 1), rseq=(1, 0), games=(1, 1))
    to_play(state, "name:S", "pass")
    auto_finish_deal(state)
    assert state.to_act() == CHANCE
    m = table(state)["match"]
    assert m["rubbers_won"] == [1, 0] and m["rubber_number"] == 1 and len(m["rubber_totals"]) == 1
    assert m["rubber_games"] == [0, 0] and m["rubber_game_winners"] == [] and m["rubber_points"] == [0, 0]
    assert m["game_points"] == [0, 0]


def test_JJ_A33_a_kept_part_score_does_not_survive_the_rubber_and_A27_one_column_bonus():
    """docs/games/jojotte.md, documented choice 12 (JJ-A33): under ``jj_partscore_reset = false``
    the loser keeps his part-score after a game, but a new rubber always starts at 0 for both;
    and with ``jj_scoresheet = single_column`` (JJ-A27) the rubber bonus is written below."""
    state = deal({"jj_match_rubbers": 2, "jj_partscore_reset": False}, **MELD_LOSER_DEAL)
    set_match(state, gpts=(70, 30), rgames=(1, 0), rseq=(0,), games=(1, 0))
    to_play(state, "name:S", "pass")
    auto_finish_deal(state)
    m = table(state)["match"]
    assert m["rubbers_won"] == [1, 0] and m["game_points"] == [0, 0]
    state = deal({"jj_scoresheet": "single_column"}, **STRONG_DEAL)
    set_match(state, rgames=(1, 1), rseq=(1, 0), games=(1, 1))
    to_play(state, "name:S", "pass")
    r = auto_finish_deal(state)
    assert r["above"] == [0, 0] and r["below"][0] == table(state)["last_deal"]["trick_points"][0] + 50 + 100 + 300


def test_JJ_10_1_and_10_3_last_deal_names_the_game_and_the_rubber_it_decided():
    """JJ-10.1 / JJ-10.3: the last scored deal's breakdown (``table.last_deal``, docs/games/
    jojotte.md) names the seat that won a game in it and the seat that won the rubber with it:
    the game alone first, then a game that also ends a rubber (``jj_match_rubbers = 2``, so the
    match goes on and the breakdown stays on the table)."""
    state = deal(**STRONG_DEAL)
    set_match(state, gpts=(30, 70))
    to_play(state, "name:S", "pass")
    auto_finish_deal(state)
    d = table(state)["last_deal"]
    assert d["game_winner"] == 0 and d["rubber_winner"] is None
    state = deal({"jj_match_rubbers": 2}, **STRONG_DEAL)
    set_match(state, gpts=(0, 0), rgames=(1, 1), rseq=(1, 0), games=(1, 1))
    to_play(state, "name:S", "pass")
    auto_finish_deal(state)
    d = table(state)["last_deal"]
    assert d["game_winner"] == 0 and d["rubber_winner"] == 0


def test_JJ_10_5_one_rubber_winner_wins_even_with_fewer_points():
    state = deal(**STRONG_DEAL)
    set_match(state, gpts=(0, 0), rgames=(1, 1), rseq=(1, 0), games=(1, 1), rsum=(0, 5000),
              below=(0, 5000))
    to_play(state, "name:S", "pass")
    auto_finish_deal(state)
    assert state.result()["winners"] == [0]


# ---- rule ids no other scenario cited literally -------------------------------------------------

def test_JJ_0_2_card_codes_and_the_NT_strain():
    """JJ-0.2: cards are rank + suit (A K Q J T 9 8 7; S H D C), the no-trump strain is ``NT``
    in the contract the views and results report."""
    from engine_service.rules.cards import card_code
    assert sorted(card_code(c) for c in GAME.pack) == sorted(r + s for r in "AKQJT987" for s in "SHDC")
    state = to_play(deal(**PLAY_DEAL), "pass", "pass", "no_trump", "pass")
    assert table(state)["contract"]["strain"] == "NT"
    assert auto_finish_deal(state)["contract"]["strain"] == "NT"


def test_JJ_1_6_draw_uses_the_natural_order_A_K_Q_J_T_9_8_7():
    """JJ-1.6: at the draw the king ranks above the ten and the jack above the nine (the natural
    order, not the plain trick order A T K Q J 9 8 7); suits are ignored. JJ-2.1: the higher card
    deals."""
    ids = lambda *cs: [card_id(c) for c in cs]  # noqa: E731
    assert GAME.draw_first_dealer(ids("TS", "KH")) == 1  # K > T: seat 1 drew higher
    assert GAME.draw_first_dealer(ids("KH", "TS")) == 0
    assert GAME.draw_first_dealer(ids("9C", "JD")) == 1  # J > 9
    assert GAME.draw_first_dealer(ids("JD", "9C")) == 0
    assert GAME.draw_first_dealer(ids("8S", "7S")) == 0
    assert GAME.draw_first_dealer(ids("AC", "KS")) == 0


def test_JJ_2_1_higher_card_deals_equal_ranks_draw_again_until_they_differ():
    """JJ-2.1: the higher card deals; equal ranks (any suits) make both draw again, as often as
    needed, and the first unequal pair decides."""
    ids = lambda *cs: [card_id(c) for c in cs]  # noqa: E731
    assert GAME.draw_first_dealer(ids("QS", "QH", "7D", "8C")) == 1
    assert GAME.draw_first_dealer(ids("QS", "QH", "8D", "8C", "AC", "TD")) == 0
    assert GAME.draw_first_dealer(ids("7S", "7H", "9D", "9C", "TS", "TH", "KD", "JC")) == 0


# Seat 0 (non-dealer) holds four jacks and A-K-Q-J-T-9 of spades; seat 1 two heart runs and
# A-K-Q of diamonds. Turn-up 7D, so naming spades opens no exchange window.
QUARTET_DEAL = dict(nd=("JS", "JH", "JD", "JC", "AS", "KS"), nd2=("QS", "TS", "9S"),
                    dl=("AH", "KH", "QH", "TH", "9H", "8H"), dl2=("AD", "KD", "QD"), turn="7D",
                    info="7C")


def test_JJ_4_6_meld_phase_after_the_nullo_window_and_skipped_in_nullo():
    """JJ-4.6: the meld phase comes after the nullo window and before trick play; in a nullo
    contract it is skipped: seat 0's quartet of jacks and six-card trump run score nothing."""
    state = deal(**QUARTET_DEAL)
    act(state, "name:S", "pass")
    assert state.public_view()["phase"] == "nullo" and table(state)["melds"] is None
    act(state, "pass")
    assert state.public_view()["phase"] == "play" and table(state)["tricks"] == []
    assert table(state)["melds"]["points"] == [150, 0]
    state = deal(**QUARTET_DEAL)
    act(state, "name:S", "pass", "nullo", "pass")
    assert table(state)["contract"]["kind"] == "nullo"
    assert state.public_view()["phase"] == "play" and table(state)["melds"] is None
    r = auto_finish_deal(state)
    assert r["below"] == [0, 0] and table(state)["last_deal"]["melds"] == [0, 0]


def test_JJ_5_4_quartets_first_then_sequences_defender_speaks_first_in_each():
    """JJ-5.4: the quartet statements are all made before the first sequence statement, and in
    each category the defender speaks first, whichever seat deals."""
    def dialogue(*auction):
        state = to_play(deal(**QUARTET_DEAL), *auction)
        return table(state)["contract"]["defender"], table(state)["melds"]["dialogue"]

    for auction in (("name:S", "pass"), ("pass", "name:H", "pass")):
        defender, lines = dialogue(*auction)
        says = [d["say"].split()[0] for d in lines]
        quartet_lines = [i for i, d in enumerate(lines) if d["say"].startswith("quartet")
                         or "quartets" in d]
        first_seq = says.index("length")
        assert quartet_lines and max(quartet_lines) < first_seq, lines
        assert lines[0]["seat"] == defender and lines[0]["say"].startswith("quartet")
        assert lines[first_seq]["seat"] == defender
    assert dialogue("pass", "name:H", "pass")[0] == 0  # the non-dealer defends here
    assert dialogue("name:S", "pass")[0] == 1


# Seat 0 declares spades holding every trump and AC; seat 1 holds only hearts and diamonds.
VOID_DEAL = dict(nd=("JS", "9S", "AS", "TS", "KS", "QS"), nd2=("8S", "7S", "AC"),
                 dl=("KH", "QH", "JH", "TH", "9H", "AD"), dl2=("KD", "QD", "JD"), turn="7D",
                 info="7C")


def test_JJ_6_5_suit_contract_void_in_the_led_suit_and_without_trumps_plays_anything():
    """JJ-6.5: with a trump suit, a follower with no card of the led suit and no trump may play
    any card (no duty to trump or to beat)."""
    state = to_play(deal(**VOID_DEAL), "name:S", "pass")
    act(state, "play:KH")
    assert set(plays(state)) == {"JS", "9S", "AS", "TS", "KS", "QS", "8S", "7S"}  # JJ-6.4: trump
    act(state, "play:7S")  # seat 0 trumps and leads the club
    act(state, "play:AC")
    assert sorted(plays(state)) == sorted(hand(state, 1)) and len(plays(state)) == 8


def test_JJ_7_1_jo_jotte_scores_whoever_wins_the_tricks_and_needs_a_trump_suit():
    """JJ-7.1: king first ("jo"), queen later ("jotte") scores 20 even when the king's trick is
    lost; it exists in any contract with a trump suit (normal or slam) and never at no trump."""
    state = to_play(deal(**JO_DEAL), "name:S", "pass")
    act(state, "play:AC", "play:JS")  # seat 0 trumps and wins, then leads the king
    act(state, "play:KS:jo")
    assert "play:KS:jo" not in legal(state)
    act(state, "play:AS")  # seat 1 must beat the trump king and takes it
    assert table(state)["tricks"][-1]["winner"] == 1 and table(state)["jo_jotte"] == [0, 0]
    act(state, "play:KC")
    assert "play:QS:jotte" in legal(state)
    act(state, "play:QS:jotte")
    assert table(state)["jo_jotte"] == [20, 0]
    # a slam contract keeps its trump suit: jo is offered
    state = to_play(deal(**JO_DEAL), "name:S", "pass", "nullo", "slam:S")
    act(state, "play:AC")
    assert "play:KS:jo" in legal(state)
    # no trump: no jo, no jotte
    state = to_play(deal(**JO_DEAL), "pass", "pass", "no_trump", "pass")
    act(state, "play:AC")
    assert "play:KS" in legal(state) and not any(a.endswith((":jo", ":jotte")) for a in legal(state))
    auto_finish_deal(state)
    assert table(state)["last_deal"]["jo_jotte"] == [0, 0]


def test_JJ_9_0_only_below_the_line_counts_towards_the_game():
    """JJ-9.0: a made nullo enters 200 above the line: more than the game target of 80, yet no
    game is won and the game count stays at 0; the 200 is on the above-the-line sheet."""
    state = to_play(deal(**STRONG_DEAL), "name:S", "pass", "nullo", "pass")
    r = auto_finish_deal(state)
    assert r["above"] == [0, 200] and r["below"] == [0, 0]
    m = table(state)["match"]
    assert m["games_won"] == [0, 0] and m["game_points"] == [0, 0] and m["above"] == [0, 200]
    # the single-column sheet (jj_scoresheet, JJ-A27) is the contrast: the 200 wins a game
    state = to_play(deal({"jj_scoresheet": "single_column"}, **STRONG_DEAL), "name:S", "pass", "nullo", "pass")
    auto_finish_deal(state)
    assert table(state)["match"]["games_won"] == [0, 1]


def _play_strong_deal_for(state, seat):
    """Deal STRONG_DEAL's strong cards to ``seat`` (whoever deals), let it name spades, and play
    the deal out; return the deal's result."""
    if state.dealer() == seat:
        cards = dict(nd=STRONG_DEAL["dl"], nd2=STRONG_DEAL["dl2"], dl=STRONG_DEAL["nd"],
                     dl2=STRONG_DEAL["nd2"], turn="7D", info="7C")
        auction = ("pass", "name:S", "pass")
    else:
        cards, auction = STRONG_DEAL, ("name:S", "pass")
    state.deal(make_deck(**cards))
    to_play(state, *auction)
    return auto_finish_deal(state)


def test_JJ_10_4_and_JJ_10_6_rubber_points_and_the_deal_alternating_across_games_and_rubbers():
    """Two rubbers: seat 0 wins 2-0, then 2-1 (seat 1 wins the middle game). JJ-10.4: each
    rubber's points result is each player's sum of every entry, above and below the line, made in
    that rubber only, reported with the games and rubbers won. JJ-10.6: the dealer alternates
    after every deal, across the game and rubber boundaries."""
    state = GAME.new_state({"jj_match_rubbers": 2}, first_dealer=1)
    dealers, results = [], []
    for strong in (0, 0, 0, 1, 0):
        dealers.append(state.dealer())
        results.append(_play_strong_deal_for(state, strong))
    assert dealers == [1, 0, 1, 0, 1]
    assert state.result()["over"] is True and state.result()["winners"] == [0]

    def rubber_sum(rs):
        return [sum(r["below"][s] + r["above"][s] for r in rs) for s in (0, 1)]

    m = table(state)["match"]
    assert m["rubbers_won"] == [2, 0] and m["games_won"] == [4, 1]
    assert m["rubber_totals"] == [rubber_sum(results[:2]), rubber_sum(results[2:])]
    assert m["rubber_totals"][1][1] > 0  # seat 1's game in the second rubber counts there
    assert m["rubber_totals"][0] != [sum(r["below"][s] for r in results[:2]) for s in (0, 1)]
