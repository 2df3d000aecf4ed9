"""Scenario tests for every section of the Klaberjass rulebook, with readable card codes.

Unless a test says otherwise, seat 1 deals, so seat 0 is the elder (as in the rulebook's
examples), and hands are given as (elder's 9 cards, dealer's 9 cards) after the second deal.
"""

from __future__ import annotations

import pytest

from engine_service.rules import CHANCE, TERMINAL, get_game
from engine_service.rules.games.klaberjass.sequences import resolve, sequences, dialogue

from .checks_klaberjass import PACK_CODES, deck_from_hands, play_out

GAME = get_game("klaberjass")


def mask(cards):
    from engine_service.rules.cards import card_id
    m = 0
    for c in cards.split() if isinstance(cards, str) else cards:
        m |= 1 << card_id(c)
    return m


def deal(elder, dealer, turn_up, options=None, info=None, first_dealer=1, totals=None):
    """A match state right after the first deal of the given hands (elder = 1 - dealer)."""
    state = GAME.new_state(options or {}, first_dealer=first_dealer)
    opts = state.options
    deck = deck_from_hands(dealer.split(), elder.split(), turn_up, info_card=info,
                           packet=opts["kl_first_deal_packet"],
                           dealer_first=opts["kl_deal_first_to"] == "dealer")
    if totals is not None:
        state._totals = list(totals)
    state.deal(deck)
    return state


def to_play(elder, dealer, turn_up, calls=("take",), window=("keep", "keep"), options=None, **kw):
    """A state at the first lead: auction ``calls``, then the two window steps."""
    state = deal(elder, dealer, turn_up, options, **kw)
    play_out(state, calls)
    play_out(state, window)
    if state.options["kl_meld_declaration"] == "optional":
        play_out(state, ["declare", "declare"])
    assert state.public_view()["phase"] == "play"
    return state


def legal_cards(state):
    return sorted(a.split(":")[1] for a in state.legal_actions() if a.startswith("play:") and a.count(":") == 1)


def table(state):
    return state.public_view()["table"]


# Two fixed hands used by many tests (trump hearts when the elder takes the turn-up 8H).
ELDER = "AS TS 7S QH AD KD QC JC 9C"
DEALER = "KS 9S JH 9H AH TD 8D 7D 8C"


# ---- section 1: deck and orders ---------------------------------------------------------------

def test_kl_1_1_pack_has_32_cards():
    assert len(GAME.pack) == 32 and sorted(GAME.pack) == sorted(mask_ids(PACK_CODES))


def mask_ids(codes):
    from engine_service.rules.cards import card_id
    return [card_id(c) for c in codes]


def test_kl_1_2_trump_order_jack_nine_ace():
    """KL-1.2: J 9 A T K Q 8 7 in trumps: the jass beats the menel, the menel beats the ace."""
    state = to_play("JH AS TS 7S AD KD QC JC 9C", "9H AH KS 9S TD 8D 7D 8C TH", "8H")
    state.apply("play:JH")
    assert legal_cards(state) == ["9H", "AH", "TH"]  # none beats the jack: any trump (KL-6.4)
    state.apply("play:9H")
    assert state.to_act() == 0  # the jack wins
    assert table(state)["card_points"] == [34, 0]  # 20 + 14 (KL-8.1)


def test_kl_1_2_and_kl_1_3_orders_as_strength_tables():
    """KL-1.2 / KL-1.3 as the engine's tables (cards.order_table, per natural rank A K Q J T 9
    8 7 6): the order written highest first becomes strengths 8 (highest) down to 1, exactly
    one per natural rank, and the six, which the 32-card pack (KL-1.1) has not, is -1 (below
    every card), never a strength a card could have."""
    from engine_service.rules.cards import order_table
    #                           A  K  Q  J  T  9  8  7   6
    assert order_table("J9ATKQ87") == (6, 4, 3, 8, 5, 7, 2, 1, -1)
    assert order_table("ATKQJ987") == (8, 6, 5, 4, 7, 3, 2, 1, -1)


def test_kl_1_3_plain_order_ten_above_king():
    """KL-1.3: A T K Q J 9 8 7 in a plain suit: the ten beats the king."""
    state = to_play(ELDER, DEALER, "8H")
    state.apply("play:TS")
    state.apply("play:KS")
    assert state.to_act() == 0 and table(state)["card_points"] == [14, 0]


def test_kl_1_4_sequences_use_natural_order():
    """KL-1.4: K Q J T is a run in the natural order although the trick order differs."""
    assert [(q.top, q.length) for q in sequences(mask("KH QH JH TH"))] == [(1, 4)]


# ---- section 2: draw, dealing, dealer rotation ------------------------------------------------

def test_kl_2_1_lower_card_deals_plain_order():
    """KL-2.1, KL-1.5: seat 0 draws TS, seat 1 KH; in A T K Q J 9 8 7 the king is lower."""
    assert GAME.draw_first_dealer(["TS", "KH"] + [c for c in PACK_CODES if c not in ("TS", "KH")]) == 1
    assert GAME.draw_first_dealer(mask_ids(["7C", "AS"])) == 0


def test_kl_2_1_draw_order_option_natural():
    """kl_draw_order = natural (KL-A1): A K Q J T 9 8 7, the ten is now lower than the king."""
    assert GAME.draw_first_dealer(["TS", "KH"], {"kl_draw_order": "natural"}) == 0


def test_kl_a1_natural_draw_order_ranks_every_neighbour_pair():
    """KL-1.5, KL-A1: under ``kl_draw_order = natural`` each rank of A K Q J T 9 8 7 is above the
    next one, so whoever draws the next one has the lower card and deals (KL-2.1), whichever
    seat draws it."""
    natural = {"kl_draw_order": "natural"}
    for high, low in zip("AKQJT98", "KQJT987"):
        assert GAME.draw_first_dealer([high + "S", low + "H"], natural) == 1, (high, low)
        assert GAME.draw_first_dealer([low + "S", high + "H"], natural) == 0, (high, low)


def test_kl_2_1_equal_ranks_draw_again():
    """KL-2.1 (X), KL-A2: equal ranks draw again (the next two cards)."""
    assert GAME.draw_first_dealer(["AS", "AH", "KD", "7C"]) == 1
    assert GAME.draw_first_dealer(["9S", "9C", "8D", "QC"]) == 0


def test_kl_2_1_draw_tie_option_suit_order():
    """kl_draw_tie = suit_order: S > H > D > C breaks the tie; the lower card deals."""
    assert GAME.draw_first_dealer(["AS", "AH", "KD", "7C"], {"kl_draw_tie": "suit_order"}) == 1
    assert GAME.draw_first_dealer(["AC", "AD"], {"kl_draw_tie": "suit_order"}) == 0


def test_kl_2_1_the_draw_needs_two_cards():
    """KL-2.1: each player draws one card, so a pack of fewer than two cannot decide the draw:
    InvalidDeck, as for any unusable deck (not an internal error)."""
    from engine_service.rules.errors import InvalidDeck

    for cards in ([], ["AS"]):
        with pytest.raises(InvalidDeck):
            GAME.draw_first_dealer(cards)


def test_kl_2_1_when_every_pair_ties_the_suit_order_decides_the_last_pair():
    """KL-2.1 redraws equal ranks; should all 16 pairs of the pack tie, the suit order decides
    the last pair, the lower suit dealing (docs/games/klaberjass.md, documented choice 1). A
    pack whose last card has no partner ends the same way at its last whole pair."""
    tied = [r + s for r in "AKQJT987" for s in "SHDC"]  # AS AH, AD AC, KS KH ... 7D 7C
    assert GAME.draw_first_dealer(tied) == 1  # 7D above 7C: seat 1 deals
    assert GAME.draw_first_dealer(tied[:30] + ["7C", "7D"]) == 0
    assert GAME.draw_first_dealer(["AD", "AS", "KH"]) == 0  # AS above AD: seat 0 deals
    assert GAME.draw_first_dealer(["AS", "AD", "KH"]) == 1


def test_kl_2_4_first_deal_packets_of_three_dealer_first():
    """KL-2.4: D[0..2] dealer, D[3..5] elder, D[6..8] dealer, D[9..11] elder; KL-2.5 turn-up D[12]."""
    deck = PACK_CODES[:]
    state = GAME.new_state({}, first_dealer=0)
    state.deal(deck)
    assert sorted(state.hand_of(0)) == sorted(deck[0:3] + deck[6:9])
    assert sorted(state.hand_of(1)) == sorted(deck[3:6] + deck[9:12])
    v = state.view(1)
    assert v["table"]["turn_up"] == deck[12] and v["table"]["info_card"] is None
    assert v["hand_sizes"] == [6, 6] and v["table"]["stock_size"] == 19
    assert state.zones()["turn_up"] == 1 << mask_ids([deck[12]])[0]


def test_kl_2_4_packet_option_two():
    """kl_first_deal_packet = 2 (KL-A4): three packets of two, dealer first."""
    deck = PACK_CODES[:]
    state = GAME.new_state({"kl_first_deal_packet": 2}, first_dealer=0)
    state.deal(deck)
    assert sorted(state.hand_of(0)) == sorted(deck[0:2] + deck[4:6] + deck[8:10])
    assert sorted(state.hand_of(1)) == sorted(deck[2:4] + deck[6:8] + deck[10:12])


def test_kl_2_8_second_deal_one_at_a_time_and_kl_2_9_info_card():
    """KL-2.8: D[13] dealer, D[14] elder ... D[18]; KL-2.9: D[31] is the information card;
    KL-2.10: D[19..30] stay in the stock, never revealed."""
    deck = PACK_CODES[:]
    state = GAME.new_state({}, first_dealer=0)
    state.deal(deck)
    state.apply("take")  # seat 1 (elder) takes
    assert sorted(state.hand_of(0)) == sorted(deck[0:3] + deck[6:9] + [deck[13], deck[15], deck[17]])
    assert sorted(state.hand_of(1)) == sorted(deck[3:6] + deck[9:12] + [deck[14], deck[16], deck[18]])
    assert table(state)["info_card"] == deck[31]
    assert state.zones()["stock"] == mask(deck[19:31])
    assert state.secret_cards(None) & mask(deck[19:31]) == mask(deck[19:31])


def test_kl_2_4_deal_first_to_elder_option():
    """kl_deal_first_to = elder (KL-A3) applies to both deals."""
    deck = PACK_CODES[:]
    state = GAME.new_state({"kl_deal_first_to": "elder"}, first_dealer=0)
    state.deal(deck)
    state.apply("take")
    assert sorted(state.hand_of(1)) == sorted(deck[0:3] + deck[6:9] + [deck[13], deck[15], deck[17]])


def _thrown_in(state):
    play_out(state, ["pass", "pass", "pass", "pass"])
    return state


def test_kl_2_2_deal_alternates_after_a_played_deal():
    state = to_play(ELDER, DEALER, "8H")
    while state.to_act() >= 0:
        state.apply(GAME.auto_move(state.view(state.to_act())))
    assert state.to_act() == CHANCE and state.dealer() == 0


def test_kl_2_2_dealer_rotation_option_same_dealer():
    state = to_play(ELDER, DEALER, "8H", options={"kl_dealer_rotation": "same_dealer"})
    while state.to_act() >= 0:
        state.apply(GAME.auto_move(state.view(state.to_act())))
    assert state.dealer() == 1


def test_kl_3_5_thrown_in_same_dealer_deals_again():
    """KL-3.5, KL-2.2: four passes void the deal; the same dealer deals anew."""
    state = _thrown_in(deal(ELDER, DEALER, "8H"))
    assert state.deal_results() == [{"thrown_in": True}]
    assert state.to_act() == CHANCE and state.dealer() == 1 and state.result()["totals"] == [0, 0]
    assert state.public_view()["deal_number"] == 1


def test_kl_3_5_throw_in_redealer_option_other():
    state = _thrown_in(deal(ELDER, DEALER, "8H", options={"kl_throw_in_redealer": "other"}))
    assert state.dealer() == 0


# ---- section 3: auction -----------------------------------------------------------------------

def test_kl_3_1_auction_state_machine_legal_calls():
    state = deal(ELDER, DEALER, "8H")
    assert table(state)["auction_state"] == "R1_ELDER"
    assert state.to_act() == 0 and state.legal_actions() == ["take", "pass"]
    state.apply("pass")
    assert table(state)["auction_state"] == "R1_DEALER"
    assert state.to_act() == 1 and state.legal_actions() == ["take", "pass"]
    state.apply("pass")
    assert state.to_act() == 0 and state.legal_actions() == ["name:S", "name:D", "name:C", "pass"]
    state.apply("pass")
    assert table(state)["auction_state"] == "R2_DEALER"
    assert state.to_act() == 1 and state.legal_actions() == ["name:S", "name:D", "name:C", "pass"]


def test_kl_3_2_take_ends_the_auction_at_once():
    state = deal(ELDER, DEALER, "8H")
    play_out(state, ["pass", "take"])
    t = table(state)
    assert (t["trump"], t["maker"]) == ("H", 1)
    assert t["auction"] == [{"seat": 0, "call": "pass"}, {"seat": 1, "call": "take"}]
    assert state.public_view()["phase"] == "dix_window" and state.to_act() == 0


def test_kl_3_3_name_in_round_two():
    state = deal(ELDER, DEALER, "8H")
    play_out(state, ["pass", "pass", "pass", "name:C"])
    assert (table(state)["trump"], table(state)["maker"]) == ("C", 1)
    from engine_service.rules import IllegalAction
    state2 = deal(ELDER, DEALER, "8H")
    play_out(state2, ["pass", "pass"])
    with pytest.raises(IllegalAction):
        state2.apply("name:H")  # the turn-up suit cannot be named (KL-3.3)


def test_kl_3_4_no_other_calls():
    """KL-3.4: no schmeiss (default), no suit named in round 1, no no-trump or double."""
    from engine_service.rules import IllegalAction, MalformedAction
    state = deal(ELDER, DEALER, "8H")
    for bad in ("schmeiss", "name:S", "accept"):
        with pytest.raises(IllegalAction):
            state.apply(bad)
    for bad in ("double", "name:NT", "no_trump"):
        with pytest.raises(MalformedAction):
            state.apply(bad)


def test_kl_a7_schmeiss_accepted_throws_in():
    state = deal(ELDER, DEALER, "8H", options={"kl_schmeiss": True})
    assert state.legal_actions() == ["take", "pass", "schmeiss"]
    state.apply("schmeiss")
    assert state.to_act() == 1 and state.legal_actions() == ["accept", "refuse"]
    state.apply("accept")
    assert state.deal_results() == [{"thrown_in": True}] and state.dealer() == 1


def test_kl_a7_schmeiss_refused_round_one_caller_takes():
    state = deal(ELDER, DEALER, "8H", options={"kl_schmeiss": True})
    play_out(state, ["pass", "schmeiss", "refuse"])
    assert (table(state)["trump"], table(state)["maker"]) == ("H", 1)


def test_kl_a7_schmeiss_refused_round_two_caller_names():
    state = deal(ELDER, DEALER, "8H", options={"kl_schmeiss": True})
    play_out(state, ["pass", "pass"])
    assert state.legal_actions() == ["name:S", "name:D", "name:C", "pass", "schmeiss"]
    play_out(state, ["schmeiss", "refuse"])
    assert state.to_act() == 0 and state.legal_actions() == ["name:S", "name:D", "name:C"]
    state.apply("name:D")
    assert (table(state)["trump"], table(state)["maker"]) == ("D", 0)


@pytest.mark.parametrize("turn_up,names", [("AH", ["name:S", "name:D", "name:C"]),
                                            ("AC", ["name:S", "name:H", "name:D"])])
def test_kl_a7_kl_3_3_forced_name_after_a_refused_round_two_schmeiss_excludes_the_turn_up_suit(turn_up, names):
    """KL-3.3 with KL-A7 (docs/games/klaberjass.md choice 8): the caller whose round-2 schmeiss
    was refused must name one of the three suits other than the turn-up suit, whatever the
    turn-up's rank (an ace's card id is the first of its suit: kills the state.legal_ids
    mutant deriving the suit as card id // 10)."""
    state = deal(ELDER, DEALER.replace("AH", "7H"), turn_up, options={"kl_schmeiss": True})
    play_out(state, ["pass", "pass", "schmeiss", "refuse"])
    assert state.to_act() == 0 and state.legal_actions() == names


# ---- section 4: the dix -----------------------------------------------------------------------

def test_kl_4_2_window_holder_may_exchange_other_keeps():
    """KL-4.2 / NOTATION 2.1: elder first; the dix holder has exchange+keep, the other keep."""
    state = deal("AS TS 7S QH AD KD QC JC 7H", "KS 9S JH 9H AH TD 8D 7D 8C", "8H")
    state.apply("take")
    assert state.to_act() == 0 and state.legal_actions() == ["exchange", "keep"]
    state.apply("exchange")
    t = table(state)
    assert t["turn_up"] == "7H" and t["exchange"] == {"seat": 0, "gives": "7H", "takes": "8H", "trick": None}
    assert "8H" in state.hand_of(0) and "7H" not in state.hand_of(0)
    assert t["revealed"] == [["8H"], []]
    assert state.to_act() == 1 and state.legal_actions() == ["keep"]


def test_kl_4_2_nobody_holds_the_dix_both_keep():
    state = deal(ELDER, DEALER, "8H")
    state.apply("take")
    assert state.legal_actions() == ["keep"]
    state.apply("keep")
    assert state.legal_actions() == ["keep"]


def test_kl_4_4_turn_up_is_the_dix_no_exchange():
    state = deal(ELDER, DEALER, "7H")
    state.apply("take")
    assert state.legal_actions() == ["keep"]


def test_kl_4_1_exchange_allowed_when_trump_was_named():
    """KL-4.1, KL-A8: trump named in round 2 (clubs), turn-up QS: the 7C still exchanges."""
    state = deal("AS KS JS KH JH 8H 7H 9C 7C", "9S 8S QH TH 9H AD KD QD TC", "QS")
    play_out(state, ["pass", "pass", "name:C"])
    assert state.legal_actions() == ["exchange", "keep"]


def test_kl_a8_option_requires_turn_up_trump():
    state = deal("AS KS JS KH JH 8H 7H 9C 7C", "9S 8S QH TH 9H AD KD QD TC", "QS",
                 options={"kl_dix_requires_turnup_trump": True})
    play_out(state, ["pass", "pass", "name:C"])
    assert state.legal_actions() == ["keep"]


def test_kl_4_2_exchange_during_play_does_not_end_the_turn():
    """KL-4.2: ``exchange`` is listed last beside the plays; the same seat then plays."""
    state = to_play("AS TS 7S QH AD KD QC JC 7H", "KS 9S JH 9H AH TD 8D 7D 8C", "8H")
    legal = state.legal_actions()
    assert legal[-1] == "exchange" and legal[:-1] == [f"play:{c}" for c in
                                                      "AS TS 7S QH 7H AD KD QC JC".split()]
    state.apply("exchange")
    assert state.to_act() == 0 and "exchange" not in state.legal_actions()
    assert table(state)["exchange"]["trick"] == 1
    state.apply("play:8H")
    assert state.to_act() == 1


def test_kl_a9_option_before_melds_no_exchange_in_play():
    state = to_play("AS TS 7S QH AD KD QC JC 7H", "KS 9S JH 9H AH TD 8D 7D 8C", "8H",
                    options={"kl_dix_window": "before_melds"})
    assert "exchange" not in state.legal_actions()


def test_kl_4_5_window_exchange_counts_for_melds_play_exchange_does_not():
    """KL-4.5: meld example 4 of the seed: the QS taken in the window completes A K Q J."""
    elder, dealer = "AS KS JS KH JH 8H 7H 9C 7C", "9S 8S QH TH 9H AD KD QD TC"
    state = to_play(elder, dealer, "QS", calls=("pass", "pass", "name:C"), window=("exchange", "keep"))
    assert table(state)["meld_points"] == [50, 0]
    state = to_play(elder, dealer, "QS", calls=("pass", "pass", "name:C"))
    assert table(state)["meld_points"] == [0, 20]
    state.apply("exchange")  # in play: too late for the melds
    assert table(state)["meld_points"] == [0, 20]


# ---- section 5: melds -------------------------------------------------------------------------

def test_kl_5_2_runs_are_maximal_and_never_split():
    assert [(q.top, q.length) for q in sequences(mask("KD QD JD 9D 8D 7D"))] == [(1, 3), (5, 3)]
    assert [(q.top, q.length) for q in sequences(mask("AH KH QH JH TH 9H 8H 7H"))] == [(0, 8)]
    assert sequences(mask("AS AH AD AC")) == []  # KL-5.1: four of a kind scores nothing


def test_kl_a10_split_runs_option_maximises_points():
    """kl_split_runs: 7 cards -> 4 + 3 (70), 8 -> 4 + 4 (100), 6 stays whole (50 > 20 + 20)."""
    split = lambda cards: [(q.top, q.length) for q in sequences(mask(cards), True)]
    assert split("AH KH QH JH TH 9H 8H") == [(0, 4), (4, 3)]
    assert split("AH KH QH JH TH 9H 8H 7H") == [(0, 4), (4, 4)]
    assert split("AH KH QH JH TH 9H") == [(0, 6)]
    # A run below the ace: the lower piece starts where the upper one stops (K-J... then T-8...).
    assert split("KD QD JD TD 9D 8D 7D") == [(1, 4), (5, 3)]
    assert split("QS JS TS 9S 8S 7S AH KH QH JH TH 9H 8H") == [(2, 6), (0, 4), (4, 3)]


def test_kl_5_4_ranking_value_then_top_then_trump():
    trump = 1  # hearts
    out = resolve([mask("QS JS TS 9S AH KD 7D 8C 7C"), mask("8S 7S KH TH QD JD TD 9D AC")], 0, trump)
    assert out.winner is None  # equal non-trump sequences (seed example 2)
    out = resolve([mask("KD QD JD 7S 8S 9C 8C 7C AH"), mask("KH QH JH AS KS 8H 7H TC AD")], 0, trump)
    assert out.winner == 1  # K-high trump beats K-high plain (KL-5.4 (3))


def test_kl_5_5_a21_the_loser_reveals_only_what_his_statements_name():
    """KL-5.5 steps 1-3, KL-A21: a stated 50 names its top card and the three below it, never
    the fifth card of a 5-card run; elder KH-9H (50, top K) loses to dealer AS-JS (50, top A)."""
    out = resolve([mask("KH QH JH TH 9H 7S 8D 7D 7C"), mask("AS KS QS JS 9S 8S AD 8C TC")], 0, 3)
    assert out.winner == 1
    assert out.revealed_mask == (mask("KH QH JH TH"), mask("AS KS QS JS"))


def test_kl_5_5_a21_a_beaten_value_and_a_lower_top_name_no_card_of_the_loser():
    """KL-5.5 steps 2-3, KL-A21: a value beaten by ``not_good`` names no card of the loser's run
    (the elder's 20 against the dealer's 50), and a dealer who answers ``lower`` names none of his
    (his KS-JS under the elder's AH-QH); only the winner's scored run is revealed."""
    out = resolve([mask("AH KH QH 9S 7S 8D 7D 8C 7C"), mask("AS KS QS JS 9D JD TC 9C TH")], 0, 3)
    assert out.winner == 1
    assert out.revealed_mask == (0, mask("AS KS QS JS"))
    out = resolve([mask("AH KH QH 9S 7S 8D 7D 8C 7C"), mask("KS QS JS 8S 9D JD TC 9C AD")], 0, 3)
    assert out.winner == 0 and [e["say"] for e in dialogue(out)[2:4]] == ["top", "lower"]
    assert out.revealed_mask == (mask("AH KH QH"), 0)


def test_kl_5_5_same_top_names_the_dealer_sequence_with_no_winner():
    """KL-5.5 steps 3-4: QS-TS against QD-TD, hearts trump: ``same QD`` names the dealer's three
    cards although nobody scores (KL-5.6)."""
    out = resolve([mask("QS JS TS 8S AH 9C 8C 7D AD"), mask("QD JD TD 8D KH 9S 7S AC KC")], 0, 1)
    assert out.winner is None and out.points == (0, 0)
    assert out.revealed_mask == (mask("QS JS TS"), mask("QD JD TD"))


@pytest.mark.parametrize("trump, winner", [(1, None), (0, 0)])
def test_kl_5_5_a21_a_dealer_answering_same_names_only_four_cards_of_his_five_card_run(trump, winner):
    """KL-5.5 step 3, KL-A21: the dealer's ``same QD`` after his stated 50 names QD and the
    three cards below it, never the fifth card (8D) of his Q-8 run, when he does not win:
    nobody scores (hearts trump, both plain) or the elder's trump Q-9 wins (spades trump). The
    eight of diamonds stays secret to the elder in the view."""
    elder, dealer = "QS JS TS 9S AH KC 7H 8C 7C", "QD JD TD 9D 8D KH 9H AC TC"
    out = resolve([mask(elder), mask(dealer)], 0, trump)
    assert out.winner == winner
    assert [e["say"] for e in dialogue(out)[:4]] == ["value", "how_high", "top", "same"]
    assert out.revealed_mask[1] == mask("QD JD TD 9D")
    state = to_play(elder, dealer, "8S" if trump == 0 else "8H")
    assert table(state)["revealed"][1] == ["QD", "JD", "TD", "9D"]
    from engine_service.rules.cards import codes_of
    assert "8D" in codes_of(state.secret_cards(0))


def test_kl_5_5_how_high_names_each_players_best_sequence_whichever_seat_is_elder():
    """KL-5.5 step 3: ``top`` and ``same`` name the **best** sequence of each player (KL-5.4),
    not his other ones: QS-9S (50) against QD-9D (50), hearts trump, nobody scores; the elder's
    AH-QH (20) and the dealer's 9C-7C (20) stay hidden. Also with seat 1 as the elder."""
    elder, dealer = mask("QS JS TS 9S AH KH QH 7D AD"), mask("QD JD TD 9D 9C 8C 7C KS 8S")
    out = resolve([elder, dealer], 0, 1)
    assert out.winner is None
    assert out.revealed_mask == (mask("QS JS TS 9S"), mask("QD JD TD 9D"))
    out = resolve([dealer, elder], 1, 1)
    assert out.winner is None
    assert out.revealed_mask == (mask("QD JD TD 9D"), mask("QS JS TS 9S"))
    assert dialogue(out)[2:] == [{"seat": 1, "say": "top", "card": "QS"},
                                 {"seat": 0, "say": "same", "card": "QD"},
                                 {"seat": None, "say": "trump_check", "seat0_trump": False,
                                  "seat1_trump": False, "result": None}]


def test_kl_a11_sequence_compare_length_option():
    """kl_sequence_compare = length: a 5-card run beats a higher 4-card run."""
    hands = [mask("AS KS QS JS 9H 8S 7D 8C 7C"), mask("QD JD TD 9D 8D AH KH 9C TC")]
    by_value = resolve(hands, 0, 2)
    by_length = resolve(hands, 0, 2, length_compare=True)
    assert by_value.winner == 0 and by_length.winner == 1
    events = dialogue(by_length)
    assert events[0] == {"seat": 0, "say": "value", "value": 50, "length": 4}
    assert events[1] == {"seat": 1, "say": "not_good", "value": 50, "length": 5}


def test_kl_a11_a_stated_length_names_that_many_cards_of_the_losers_run():
    """KL-5.5 step 3 with KL-A11: under length comparison the loser's statements (length 5, top
    QS) identify all five cards of his run; by value (50, top QS) only the top and three below."""
    hands = [mask("QS JS TS 9S 8S AH 7D AC 8C"), mask("KD QD JD TD 9D KH 9H KC 7C")]
    by_length = resolve(hands, 0, 1, length_compare=True)
    assert by_length.winner == 1
    assert by_length.revealed_mask == (mask("QS JS TS 9S 8S"), mask("KD QD JD TD 9D"))
    assert resolve(hands, 0, 1).revealed_mask == (mask("QS JS TS 9S"), mask("KD QD JD TD 9D"))


def test_kl_a11_length_compare_value_0_carries_length_0():
    """KL-5.5 step 1 / KL-A11: under length comparison a player without a sequence states
    ``value 0`` with ``length 0`` (docs/games/klaberjass.md: the ``value`` events carry
    ``length``); both players without one, and an elder without one against a 3-card run."""
    none = resolve([mask("AS QS TS 8S AH QH TH 8H AD"), mask("KS JS 9S 7S KH JH 9H 7H KD")], 0, 0,
                   length_compare=True)
    assert dialogue(none) == [{"seat": 0, "say": "value", "value": 0, "length": 0},
                              {"seat": 1, "say": "value", "value": 0, "length": 0}]
    one = resolve([mask("AS QS TS 8S AH QH TH 8H AD"), mask("KC QC JC 9S 7S KH JH 9H 7H")], 0, 0,
                  length_compare=True)
    assert dialogue(one)[:2] == [{"seat": 0, "say": "value", "value": 0, "length": 0},
                                 {"seat": 1, "say": "not_good", "value": 20, "length": 3}]


def test_kl_5_5_dialogue_both_zero_and_not_good():
    out = resolve([mask("AS QS TS 8S AH QH TH 8H AD"), mask("KS JS 9S 7S KH JH 9H 7H KD")], 0, 0)
    assert dialogue(out) == [{"seat": 0, "say": "value", "value": 0}, {"seat": 1, "say": "value", "value": 0}]
    out = resolve([mask("AS QS TS 8S AH QH TH 8H AD"), mask("KC QC JC 9S 7S KH JH 9H 7H")], 0, 0)
    assert dialogue(out) == [{"seat": 0, "say": "value", "value": 0},
                             {"seat": 1, "say": "not_good", "value": 20},
                             {"seat": 1, "say": "scores", "sequences": [{"suit": "C", "top": "K", "length": 3}],
                              "points": 20}]


def test_kl_5_6_winner_scores_all_sequences_and_a12_best_plus_one():
    """KL-5.6: the winner scores all his sequences (three of 20 here), the loser none;
    kl_winner_sequences = best_plus_one keeps the best two."""
    hands = [mask("AS KS QS 9H 8H 7H JD TD 9D"), mask("QC JC 8C KH QH AD KD 8S 7S")]
    assert resolve(hands, 0, 3).points == (60, 0)
    out = resolve(hands, 0, 3, best_plus_one=True)
    assert out.points == (40, 0) and [(q.suit, q.top) for q in out.scored[0]] == [(0, 0), (2, 3)]  # A-high, J-high
    hands = [mask("AS KS QS 9H 8H 7H JD TD 9D"), mask("JS TS 9S 8S KC 8C 7C TH AD")]
    assert resolve(hands, 0, 3).points == (0, 50)  # the dealer's 50 beats three twenties


def test_kl_a21_reveal_scored_melds_cards_option():
    state = to_play("AS KS JS KH JH 8H 7H 9C 7C", "9S 8S QH TH 9H AD KD QD TC", "QS",
                    calls=("pass", "pass", "name:C"), window=("exchange", "keep"),
                    options={"kl_reveal_scored_melds": "cards"})
    scores = table(state)["melds"][-1]
    assert scores["sequences"] == [{"suit": "S", "top": "A", "length": 4, "cards": ["AS", "KS", "QS", "JS"]}]


def test_kl_a20_optional_declaration_conceal():
    """kl_meld_declaration = optional: both players have declare / conceal (so the step reveals
    nothing); a concealed sequence states value 0 and cannot score."""
    elder, dealer = "AS KS JS KH JH 8H 7H 9C 7C", "9S 8S QH TH 9H AD KD QD TC"
    state = deal(elder, dealer, "QS", options={"kl_meld_declaration": "optional"})
    play_out(state, ["pass", "pass", "name:C", "keep", "keep"])
    assert state.public_view()["phase"] == "meld_declaration"
    assert state.to_act() == 0 and state.legal_actions() == ["declare", "conceal"]
    state.apply("declare")
    assert state.to_act() == 1 and state.legal_actions() == ["declare", "conceal"]
    state.apply("conceal")
    t = table(state)
    assert t["melds"] == [{"seat": 0, "say": "value", "value": 0}, {"seat": 1, "say": "value", "value": 0}]
    assert t["meld_points"] == [0, 0]


@pytest.mark.parametrize("choice", ["declare", "conceal"])
def test_kl_a20_a_declare_that_states_nothing_is_recorded_as_conceal(choice):
    """KL-A20 / KL-5.8: with optional declaration the choice itself reveals nothing. An elder
    without any sequence who answers ``declare`` states value 0 exactly as ``conceal`` does, so
    the record every seat sees (``deal_actions``) shows ``conceal`` either way: a recorded
    ``declare`` with value 0 would tell the dealer that the elder holds no sequence at all."""
    elder, dealer = "AS TS 8S QH 9H KD 8D QC 9C", "9S 7S KH JH 7H AD JD TC 8C"
    state = deal(elder, dealer, "JS", options={"kl_meld_declaration": "optional"})
    play_out(state, ["take", "keep", "keep"])
    assert state.to_act() == 0 and state.legal_actions() == ["declare", "conceal"]
    state.apply(choice)
    for view in (state.view(0), state.view(1), state.public_view()):
        assert view["table"]["deal_actions"][-1] == {"seat": 0, "action": "conceal"}


@pytest.mark.parametrize("dealer,recorded", [
    ("9S 8S QH JH TH AD QD TC 8C", "conceal"),  # Q-J-T of hearts (20): "good" either way
    ("9S 8S KH QH JH TH AD QD 8C", "declare"),  # K-Q-J-T of hearts (50): "how_high", not "good"
])
def test_kl_a20_a_dealer_declare_that_changes_nothing_is_recorded_as_conceal(dealer, recorded):
    """KL-A20 / KL-5.5 step 2: after the elder's ``value 50`` a dealer holding only a 20 answers
    ``good`` whether he declares or conceals, so his ``declare`` is recorded as ``conceal``: a
    recorded ``declare`` would tell the elder that the dealer holds a sequence, which the
    dialogue keeps private. A declare that changes the answer is recorded as it is."""
    elder = "AS KS QS JS 9H 8H KD 9C 7C"
    state = deal(elder, dealer, "7D", options={"kl_meld_declaration": "optional"})
    play_out(state, ["take", "keep", "keep", "declare"])
    assert state.to_act() == 1 and state.legal_actions() == ["declare", "conceal"]
    state.apply("declare")
    for view in (state.view(0), state.view(1), state.public_view()):
        assert view["table"]["deal_actions"][-1] == {"seat": 1, "action": recorded}


@pytest.mark.parametrize("first_dealer", [1, 0])
def test_kl_a20_after_the_elder_concealed_the_dealers_lower_sequence_wins(first_dealer):
    """KL-A20 / KL-5.5: an elder who conceals his 50 states ``value 0``; the dealer's
    ``declare`` of a 20 then makes his answer ``not_good`` (KL-5.6: he alone has a sequence),
    so it is recorded as ``declare`` and scores, whichever seat deals: what the dealer's
    choice changes is judged against the elder's actual statement, not his hand."""
    elder, dealer = "AS KS QS JS 9H 8H KD 9C 7C", "9S 8S QH JH TH AD QD TC 8C"
    state = deal(elder, dealer, "7D", options={"kl_meld_declaration": "optional"}, first_dealer=first_dealer)
    play_out(state, ["take", "keep", "keep", "conceal", "declare"])
    assert table(state)["deal_actions"][-1] == {"seat": first_dealer, "action": "declare"}
    points = [0, 0]
    points[first_dealer] = 20
    assert table(state)["meld_points"] == points


@pytest.mark.parametrize("choice, value", [("conceal", 0), ("declare", 50)])
def test_kl_a20_the_elders_statement_is_public_before_the_dealer_chooses(choice, value):
    """KL-5.5 step 1 under KL-A20: once the elder has chosen, every view shows his statement,
    the value of his best sequence (KL-5.4: his 50 over his 20), while the dealer decides; a
    concealed 50 is stated as value 0 (KL-5.8: concealing states nothing), so no audience
    learns the sequences he kept back."""
    elder, dealer = "AS KS QS JS 9H 8H 7H 9C 7C", "9S 8S QH JH TH AD QD TC 8C"
    state = deal(elder, dealer, "7D", options={"kl_meld_declaration": "optional"})
    play_out(state, ["take", "keep", "keep", choice])
    assert state.to_act() == 1 and state.legal_actions() == ["declare", "conceal"]
    for view in (state.view(0), state.view(1), state.public_view()):
        assert view["table"]["melds"] == [{"seat": 0, "say": "value", "value": value}]


def test_kl_5_7_meld_points_count_in_the_deal_total():
    """KL-5.7: meld points count in the deal total (KL-9.1)."""
    state = to_play("AS KS JS KH JH 8H 7H 9C 7C", "9S 8S QH TH 9H AD KD QD TC", "QS",
                    calls=("pass", "pass", "name:C"), window=("exchange", "keep"))
    while state.to_act() >= 0:
        state.apply(GAME.auto_move(state.view(state.to_act())))
    r = state.deal_results()[0]
    d = state.deal_details()[0]
    assert r["melds"] == [50, 0]
    assert d["deal_totals"] == [50 + r["card_points"][0] + r["bonuses"][0], r["card_points"][1] + r["bonuses"][1]]


# ---- section 6: trick play --------------------------------------------------------------------

def test_kl_6_1_elder_leads_whoever_is_maker():
    state = to_play(ELDER, DEALER, "8H", calls=("pass", "take"))
    assert state.to_act() == 0 and table(state)["maker"] == 1


def test_kl_6_3_and_6_7_follow_suit_no_obligation_to_beat():
    state = to_play(ELDER, DEALER, "8H")
    state.apply("play:7S")
    assert legal_cards(state) == ["9S", "KS"]


def test_kl_6_4_must_overtrump_on_a_trump_lead():
    state = to_play(ELDER, DEALER, "8H")
    state.apply("play:QH")
    assert legal_cards(state) == ["9H", "AH", "JH"]  # all beat the queen
    state = to_play("AS TS 7S AH AD KD QC JC 9C", "KS 9S JH QH TH TD 8D 7D 8C", "8H")
    state.apply("play:AH")
    assert legal_cards(state) == ["JH"]  # only the jass beats the ace (J 9 A T K Q 8 7)


def test_kl_1_2_kl_6_4_the_trump_eight_beats_the_trump_seven():
    """KL-1.2: the bottom of the trump order is ... 8 7. On a 7H lead (hearts trump) the 8H is a
    higher trump the follower must play if he can (KL-6.4) and wins the trick; on an 8H lead the
    7H is only a lower trump, and the leader keeps the trick (KL-6.8)."""
    state = to_play("7H AS TS 7S AD KD QC JC 9C", "8H QH KS 9S TD 8D 7D 8C AC", "TH")
    state.apply("play:7H")
    assert legal_cards(state) == ["8H", "QH"]
    state.apply("play:8H")
    assert state.to_act() == 1
    state = to_play("8H AS TS 7S AD KD QC JC 9C", "7H KS 9S TD 8D 7D 8C AC KC", "TH")
    state.apply("play:8H")
    assert legal_cards(state) == ["7H"]
    state.apply("play:7H")
    assert state.to_act() == 0


def test_kl_a15_option_any_trump_on_a_trump_lead():
    state = to_play("AS TS 7S AH AD KD QC JC 9C", "KS 9S JH QH TH TD 8D 7D 8C", "8H",
                    options={"kl_must_overtrump": False})
    state.apply("play:AH")
    assert legal_cards(state) == ["JH", "QH", "TH"]


def test_kl_6_5_must_trump_when_void():
    state = to_play(ELDER, DEALER, "8H")
    state.apply("play:QC")  # dealer holds 8C: must follow
    assert legal_cards(state) == ["8C"]
    state = to_play("AS TS 7S QH AD KD QC JC 9C", "KS 9S JH 9H AH TD 8D 7D 8S", "8H")
    state.apply("play:QC")  # dealer void in clubs, holds trumps: any trump
    assert legal_cards(state) == ["9H", "AH", "JH"]


def test_kl_6_6_void_and_no_trump_any_card():
    state = to_play("AS TS 7S AD KD QC JC 9C 7D", "KS 9S QS JS KH TH 8D TD 8S", "8C")
    state.apply("play:QC")
    assert legal_cards(state) == sorted("KS 9S QS JS KH TH 8D TD 8S".split())


def test_kl_6_8_trump_on_a_plain_lead_wins():
    state = to_play("AS TS 7S QH AD KD QC JC 9C", "KS 9S JH 9H AH TD 8D 7D 8S", "8H")
    state.apply("play:QC")
    state.apply("play:9H")
    assert state.to_act() == 1 and table(state)["card_points"] == [0, 17]
    assert state.public_view()["last_trick"] == {
        "number": 1, "leader": 0, "plays": [{"seat": 0, "card": "QC"}, {"seat": 1, "card": "9H"}],
        "winner": 1, "points": 17}


# ---- section 7: bonuses -----------------------------------------------------------------------

BELLA_ELDER = "KH QH AS AD KD QC JC 9C 8C"
BELLA_DEALER = "KS 9S JH 9H AH TD 8D 7D 7C"


def play_pairs(state, pairs):
    for a, b in pairs:
        state.apply(f"play:{a}")
        state.apply(f"play:{b}")


def test_kl_7_1_bella_queen_then_king():
    state = to_play(BELLA_ELDER, BELLA_DEALER, "8H")
    play_pairs(state, [("QH", "JH")])  # dealer wins with the jass and leads
    assert table(state)["bella"] == [0, 0]
    play_pairs(state, [("KS", "AS")])  # elder wins the spade
    state.apply("play:KH")
    assert table(state)["bella"] == [20, 0]


def test_kl_7_1_king_first_scores_nothing_by_default_and_options():
    for order, expected in (("queen_first", 0), ("any", 20), ("king_first", 20)):
        state = to_play(BELLA_ELDER, BELLA_DEALER, "8H", options={"kl_bella_order": order})
        play_pairs(state, [("KH", "JH"), ("KS", "AS")])
        state.apply("play:QH")
        assert table(state)["bella"] == [expected, 0], order
    state = to_play(BELLA_ELDER, BELLA_DEALER, "8H", options={"kl_bella_order": "king_first"})
    play_pairs(state, [("QH", "JH"), ("KS", "AS")])
    state.apply("play:KH")
    assert table(state)["bella"] == [0, 0]


def test_kl_a23_bella_announcement_required():
    opts = {"kl_bella_announcement": "required"}
    state = to_play(BELLA_ELDER, BELLA_DEALER, "8H", options=opts)
    assert "play:KH:bella" not in state.legal_actions()  # queen not played yet (queen_first)
    play_pairs(state, [("QH", "JH"), ("KS", "AS")])
    legal = state.legal_actions()
    assert legal[legal.index("play:KH") + 1] == "play:KH:bella"
    state.apply("play:KH:bella")
    assert table(state)["bella"] == [20, 0]
    assert state.public_view()["trick"] == [{"seat": 0, "card": "KH", "announce": "bella"}]
    state = to_play(BELLA_ELDER, BELLA_DEALER, "8H", options=opts)
    play_pairs(state, [("QH", "JH"), ("KS", "AS")])
    state.apply("play:KH")
    assert table(state)["bella"] == [0, 0]


def finish(state):
    while state.to_act() >= 0:
        state.apply(GAME.auto_move(state.view(state.to_act())))
    return state


def test_kl_7_2_trump_kqj_bonus_loser_of_melds_still_collects():
    """KL-7.2: the elder holds K Q J of trumps (20) but loses the melds to the dealer's 50, so
    the trump run was not scored in the meld phase: he collects the 20 separately."""
    state = to_play("KH QH JH AS TS 7S AD 8C 7C", "AC KC QC JC 9S 8S TD 8D 7D", "8H")
    assert table(state)["meld_points"] == [0, 50]
    finish(state)
    assert state.deal_details()[0]["trump_kqj"] == [20, 0]


def test_kl_7_2_no_bonus_when_the_trump_run_scored_in_melds():
    state = to_play("KH QH JH TH AS 7S AD 8C 7C", "9S 8S QS TD 8D 7D KC TC 9C", "8H")
    assert table(state)["meld_points"] == [50, 0]
    finish(state)
    assert state.deal_details()[0]["trump_kqj"] == [0, 0]


def test_kl_7_2_bonus_50_for_a_longer_run_and_option_off():
    # the dealer wins the melds with a longer run, so the elder's trump K-Q-J-T is not scored
    state = to_play("KH QH JH TH AS 7S AD 8C 7C", "AC KC QC JC TC 9S 8S TD 8D", "9H")
    assert table(state)["meld_points"] == [0, 50]
    finish(state)
    assert state.deal_details()[0]["trump_kqj"] == [50, 0]
    state = to_play("KH QH JH TH AS 7S AD 8C 7C", "AC KC QC JC TC 9S 8S TD 8D", "9H",
                    options={"kl_trump_kqj_bonus": False})
    finish(state)
    assert state.deal_details()[0]["trump_kqj"] == [0, 0]


def test_kl_7_2_exchange_at_first_turn_counts_later_does_not():
    """KL-7.2 (D): the turn-up KH taken by exchanging at the first turn completes K-Q-J; taken
    after the first card it does not."""
    elder, dealer = "QH JH 7H AS TS AD 8C 7C 9S", "AC KC QC JC TC 8S TD 8D 7D"
    state = to_play(elder, dealer, "KH")
    state.apply("exchange")
    state.apply("play:AS")
    finish(state)
    assert state.deal_details()[0]["trump_kqj"] == [20, 0]
    state = to_play(elder, dealer, "KH")
    state.apply("play:AS")
    state.apply("play:8S")
    state.apply("exchange")
    finish(state)
    assert state.deal_details()[0]["trump_kqj"] == [0, 0]


def test_kl_7_2_meld_scored_q_j_t_then_exchange_brings_the_king_bonus_given():
    """KL-7.2 (D), docs/games/klaberjass.md choice 6: the elder wins the melds with trump
    Q-J-T (20), then exchanges the dix for the turn-up KH at his first turn, before his first
    card. At that card he holds K-Q-J-T of trumps; the K-Q-J were never scored together as a
    meld (the king was not in the meld hand), so the bonus is given, 50 for the 4-card run
    (kills the state._check_kqj mutant that judges "already scored" on the jack alone)."""
    state = to_play("QH JH TH 7H AS 9S AD 8C 7C", "KS TS 8S 9H 8H KD TD 8D AC", "KH")
    assert table(state)["meld_points"] == [20, 0]
    state.apply("exchange")
    state.apply("play:AS")
    finish(state)
    assert state.deal_details()[0]["trump_kqj"] == [50, 0]


def test_kl_7_3_last_trick_is_worth_ten():
    state = to_play(ELDER, DEALER, "8H")
    finish(state)
    d = state.deal_details()[0]
    assert sorted(d["last_trick"]) == [0, 10]


# ---- section 8: card points -------------------------------------------------------------------

def test_kl_8_1_values_and_ten_value_option():
    state = to_play(ELDER, DEALER, "8H")
    play_pairs(state, [("TS", "KS")])
    assert table(state)["card_points"] == [14, 0]
    state = to_play(ELDER, DEALER, "8H", options={"kl_ten_value": 0})
    play_pairs(state, [("TS", "KS")])
    assert table(state)["card_points"] == [4, 0]


# ---- section 9: deal scoring ------------------------------------------------------------------

SAMPLE_DECK = ("AH 7D KS QC JS QS TH AC KH 8C JC JD AD JH 8H TD TC 7H KC QD 8S TS AS QH 7C 8D 9D KD 7S "
               "9C 9S 9H").split()
SAMPLE_ACTIONS = ("pass pass name:S keep keep play:JS play:KS play:QS play:7D play:8C play:AC play:AH "
                  "play:8H play:TH play:JC play:TD play:JD play:KH play:QC play:JH play:KC play:7H "
                  "play:TC").split()


def sample_deal(options=None):
    """The sample transcript's deal: seat 0 deals, seat 1 names spades and loses 77 to 79."""
    state = GAME.new_state(options or {}, first_dealer=0)
    state.deal(SAMPLE_DECK)
    return play_out(state, SAMPLE_ACTIONS)


def test_kl_9_4_opponent_has_more_takes_both_totals():
    state = sample_deal()
    r = state.deal_results()[0]
    assert r == {"thrown_in": False, "trump": "S", "maker": 1, "melds": [0, 50], "card_points": [79, 27],
                 "bonuses": [0, 0], "scored": [156, 0]}
    assert state.deal_details()[0]["outcome"] == "opponent_more"


def test_kl_9_1_deal_details_break_down_a_played_deal_and_mark_a_thrown_in_one():
    """KL-9.1: the sample deal's breakdown (docs/games/klaberjass.md, Results): a played deal,
    dealt by seat 0; seat 0 took 7 tricks, the last one among them (KL-7.3); no bella or K-Q-J
    bonus; deal totals 79 (card points) and 27 + 50 (card points + melds); the opponent has more
    (KL-9.4). The same dict is the next view's ``previous_deal``. A thrown-in deal (KL-3.5) is
    only ``{"thrown_in": true}`` (kills the mutant marking a played deal thrown in)."""
    state = sample_deal()
    expected = {"thrown_in": False, "dealer": 0, "tricks": [7, 2], "last_trick": [10, 0], "bella": [0, 0],
                "trump_kqj": [0, 0], "deal_totals": [79, 77], "outcome": "opponent_more"}
    assert state.deal_details() == [expected]
    assert table(state)["previous_deal"] == expected
    state = _thrown_in(deal(ELDER, DEALER, "8H"))
    assert state.deal_details() == [{"thrown_in": True}] and table(state)["previous_deal"] == {"thrown_in": True}


def test_kl_a17_score_scope_trick_points():
    """kl_score_scope = trick_points: the maker keeps his 50 of melds; card points go by outcome."""
    r = sample_deal({"kl_score_scope": "trick_points"}).deal_results()[0]
    assert r["scored"] == [79 + 27, 50]


def test_kl_9_2_maker_more_each_scores_own():
    from tests.shared_paths import vectors
    vec = dict(vectors("klaberjass"))["klaberjass_deal_alexey_valery.json"]
    state = GAME.new_state({}, first_dealer=1)
    state.deal(vec["deck_top_first"])
    play_out(state, ["pass", "take", "keep", "keep"])
    for t in vec["tricks"]:
        for p in t["plays"]:
            state.apply(f"play:{p['card']}")
    assert state.deal_results()[0]["scored"] == [31, 120]


EQUAL_DECK = ("TC 7H QH AD 9D QC JD 7C KD AH TH JS 7D 9S 9C KS 8S 8C JC QS AC TS KC JH KH AS 7S 9H QD TD "
              "8D 8H").split()
EQUAL_PLAYS = "8S 9S QH TH JC TC KS JS KD AD QC 8C 9D JD 7C 9C AH 7H".split()


def test_kl_9_3_equal_totals_maker_scores_nothing():
    """Seat 1 deals and takes diamonds (turn-up 7D); no melds or bonuses; the tricks give
    0, 13 (elder), 12, 6, 15 (elder), 3 (elder), 34, 0 (elder), 11 + 10 (elder): 52 each."""
    for scope in ("deal_total", "trick_points"):
        state = GAME.new_state({"kl_score_scope": scope}, first_dealer=1)
        state.deal(EQUAL_DECK)
        play_out(state, ["pass", "take", "keep", "keep"] + [f"play:{c}" for c in EQUAL_PLAYS])
        r = state.deal_results()[0]
        assert r == {"thrown_in": False, "trump": "D", "maker": 1, "melds": [0, 0], "card_points": [52, 52],
                     "bonuses": [0, 0], "scored": [52, 0]}
        assert state.deal_details()[0]["outcome"] == "equal"


def test_kl_a17_trick_points_scope_keeps_bonuses_on_equal_totals():
    """kl_score_scope = trick_points, equal totals: the maker keeps only his own melds and
    bonuses, the opponent his own total (the exchange-free variant of the deal above, with the
    maker's bella counted by hand through the KL-9 arithmetic of checks_klaberjass)."""
    from .checks_klaberjass import expected_entries
    r = {"maker": 0, "melds": [0, 0], "bonuses": [20, 0], "card_points": [61, 81]}
    assert expected_entries(r, trick_scope=True) == [20, 81]
    assert expected_entries(r, trick_scope=False) == [0, 81]


def test_kl_a17_trick_points_scope_the_engine_keeps_the_makers_melds_on_equal_totals():
    """KL-9.3 with KL-A17 on a played deal: seat 1 names spades in round 2 and scores a 20
    sequence (KS-QS-JS); totals 52 (elder's cards) against 32 + 20, equal. Under
    ``kl_score_scope = trick_points`` the maker keeps his 20, by default he enters nothing."""
    deck = ("KH AC 8H QD 7H TS 8S 7D QH 9C 9H JC TD AD AH JH TH KC QC KS KD 7C 9D 8C JS 7S TC AS "
            "JD 8D 9S QS").split()
    plays = "7H KH 7D QD TS 8S 9C AC KC JC AD 9H 8H TH QC QH AH JH".split()
    for scope, scored in (("trick_points", [52, 20]), ("deal_total", [52, 0])):
        state = GAME.new_state({"kl_score_scope": scope}, first_dealer=1)
        state.deal(deck)
        play_out(state, ["pass", "pass", "pass", "name:S", "keep", "keep"] + [f"play:{c}" for c in plays])
        r = state.deal_results()[0]
        assert (r["maker"], r["melds"], r["card_points"], r["bonuses"]) == (1, [0, 20], [52, 32], [0, 0])
        assert state.deal_details()[0]["outcome"] == "equal" and r["scored"] == scored


# ---- section 10: end of the game --------------------------------------------------------------

def test_kl_10_1_target_reached_wins():
    state = sample_deal({"kl_target_score": 150})
    assert state.result() == {"totals": [156, 0], "winners": [0], "over": True}
    assert state.to_act() == TERMINAL and state.legal_actions() == []


def with_totals(options, totals):
    """A new match whose running scores are ``totals`` (as after earlier deals), seat 0 to deal."""
    state = GAME.new_state(options, first_dealer=0)
    state._totals = list(totals)
    return state


def test_kl_10_1_one_player_landing_exactly_on_the_target_wins():
    """KL-10.1, KL-10.2: "reaches" includes landing on the target exactly, for either seat alone:
    seat 0 ends the sample deal on 156 with the target 156; seat 1 stands on 300 of 300."""
    state = sample_deal({"kl_target_score": 156})
    assert state.result() == {"totals": [156, 0], "winners": [0], "over": True}
    state = with_totals({"kl_target_score": 300}, [0, 300])
    state.deal(SAMPLE_DECK)
    play_out(state, SAMPLE_ACTIONS)
    assert state.result() == {"totals": [156, 300], "winners": [1], "over": True}


def test_kl_10_2_both_reach_higher_total_wins():
    state = with_totals({}, [400, 499])
    state.deal(SAMPLE_DECK)
    play_out(state, SAMPLE_ACTIONS)
    assert state.result() == {"totals": [556, 499], "winners": [0], "over": True}


def test_kl_10_2_both_reach_equal_scores_play_on():
    state = with_totals({"kl_score_scope": "trick_points"}, [450, 506])
    state.deal(SAMPLE_DECK)
    play_out(state, SAMPLE_ACTIONS)
    assert state.result() == {"totals": [556, 556], "winners": [], "over": False}
    assert state.to_act() == CHANCE and state.dealer() == 1


def test_kl_10_2_both_exactly_at_the_target_with_equal_scores_play_on():
    """KL-10.1, KL-10.2: "reaches" the target includes landing on it exactly; when both land on
    500 with equal scores neither wins and another deal is played (kills the state._check_end
    mutants that test one seat with > instead of >=)."""
    state = with_totals({"kl_score_scope": "trick_points"}, [394, 450])
    state.deal(SAMPLE_DECK)
    play_out(state, SAMPLE_ACTIONS)  # seat 0 adds 106, seat 1 its 50 of melds (KL-A17)
    assert state.result() == {"totals": [500, 500], "winners": [], "over": False}
    assert state.to_act() == CHANCE


def test_kl_a19_simultaneous_target_deal_winner():
    state = with_totals({"kl_simultaneous_target": "deal_winner", "kl_score_scope": "trick_points"}, [400, 530])
    state.deal(SAMPLE_DECK)
    play_out(state, SAMPLE_ACTIONS)
    # seat 0 adds 106, seat 1 adds 50: seat 0 wins although seat 1 has more in total
    assert state.result() == {"totals": [506, 580], "winners": [0], "over": True}


def test_kl_10_3_match_is_over_no_more_deals():
    """KL-10.3: the match is one game: once it is won, no deal and no action is accepted."""
    from engine_service.rules import MatchOver
    state = sample_deal({"kl_target_score": 100})
    with pytest.raises(MatchOver):
        state.deal(SAMPLE_DECK)
    with pytest.raises(MatchOver):
        state.apply("pass")


def test_kl_a20_elder_statement_is_public_before_the_dealer_chooses():
    state = deal("AS KS QS JS 9H 8H KD 9C 7C", "9S 8S QH TH AH AD QD TC 8C", "7D",
                 options={"kl_meld_declaration": "optional"})
    play_out(state, ["take", "keep", "keep"])
    assert table(state)["melds"] == []
    state.apply("declare")
    assert state.view(1)["table"]["melds"] == [{"seat": 0, "say": "value", "value": 50}]
    state.apply("declare")
    assert table(state)["melds"][-1]["say"] == "scores" and table(state)["meld_points"] == [50, 0]


@pytest.mark.parametrize("options,points", [
    ({}, [50, 0]),
    ({"kl_split_runs": True}, [70, 0]),  # A-K-Q-J + T-9-8 of spades (KL-A10)
])
def test_kl_a10_split_runs_in_a_deal(options, points):
    state = to_play("AS KS QS JS TS 9S 8S 7H 8C", "KH QH 9H AD KD TD 8D 9C 7C", "8H", options=options)
    assert table(state)["meld_points"] == points


@pytest.mark.parametrize("options,points", [
    ({}, [50, 0]),  # value, then top card: A-K-Q-J beats Q-J-T-9-8
    ({"kl_sequence_compare": "length"}, [0, 50]),  # five cards beat four (KL-A11)
])
def test_kl_a11_sequence_compare_in_a_deal(options, points):
    state = to_play("AS KS QS JS 9H 8S 7D 8C 7C", "QD JD TD 9D 8D AH KH 9C TC", "7H", options=options)
    assert table(state)["meld_points"] == points


@pytest.mark.parametrize("options,points", [
    ({}, [60, 0]),
    ({"kl_winner_sequences": "best_plus_one"}, [40, 0]),  # KL-A12
])
def test_kl_a12_winner_sequences_in_a_deal(options, points):
    state = to_play("AS KS QS 9H 8H 7H JD TD 9D", "QC JC 8C KH QH AD KD 8S 7S", "TH", options=options)
    assert table(state)["meld_points"] == points
    assert len(table(state)["melds"][-1]["sequences"]) == points[0] // 20


# ---- rule ids no other scenario cited: KL-0.2, KL-1.1, KL-2.3, KL-3.6, KL-5.8, KL-6.7 ------------

def test_KL_0_2_card_codes_rank_then_suit():
    """KL-0.2: a card is rank + suit, ranks A K Q J T 9 8 7 (T = ten), suits S H D C; every
    action and view uses these codes, and nothing else names a card."""
    from engine_service.rules import MalformedAction
    from engine_service.rules.cards import card_id, card_code
    assert sorted(card_code(c) for c in GAME.pack) == sorted(r + s for r in "AKQJT987" for s in "SHDC")
    state = to_play(ELDER, DEALER, "8H")
    assert state.view(0)["hand"] and all(c in PACK_CODES for c in state.view(0)["hand"])
    for bad in ("play:10S", "play:1S", "play:6S", "play:ts"):
        with pytest.raises(MalformedAction):
            state.apply(bad)
    state.apply("play:TS")  # the ten is T
    assert table(state)["turn_up"] == "8H" and card_id("TS") in GAME.pack


def test_KL_1_1_the_pack_is_A_K_Q_J_T_9_8_7_in_four_suits():
    """KL-1.1: 32 cards, A K Q J T 9 8 7 of each suit; a deck missing one or holding a six is
    refused (the chance step takes only a permutation of this pack)."""
    from engine_service.rules.errors import InvalidDeck
    assert sorted(PACK_CODES) == sorted(r + s for r in "AKQJT987" for s in "SHDC")
    assert len(GAME.pack) == 32
    state = GAME.new_state({}, first_dealer=1)
    with pytest.raises(InvalidDeck):
        state.deal(PACK_CODES[:31])
    with pytest.raises(InvalidDeck):
        state.deal(PACK_CODES[:31] + ["6S"])


def test_KL_2_3_a_new_shuffled_and_cut_deck_before_every_deal_including_a_redeal():
    """KL-2.3: before each deal, a re-deal after a throw-in included, the rules wait for a new
    deck (the chance step): a permutation D[0..31] of the 32 cards in which the elder's cut is
    already made; the engine deals it exactly as given, from D[0]. Anything else is refused."""
    from engine_service.rules import DealRequired
    from engine_service.rules.errors import InvalidDeck
    base = deck_from_hands(DEALER.split(), ELDER.split(), "8H", info_card="7C")
    state = GAME.new_state({}, first_dealer=1)
    assert state.to_act() == CHANCE and state.legal_actions() == []
    for bad in (base[:31], base[:31] + [base[0]], base + ["AS"]):
        with pytest.raises(InvalidDeck):
            state.deal(bad)
        assert state.to_act() == CHANCE
    # a cut is a rotation of the shuffled deck: the engine applies no cut of its own
    for k in (0, 7, 19):
        cut = base[k:] + base[:k]
        s = GAME.new_state({}, first_dealer=1)
        s.deal(cut)
        assert table(s)["turn_up"] == cut[12]
        assert sorted(s.hand_of(1)) == sorted(cut[0:3] + cut[6:9])  # dealer served first
        assert sorted(s.hand_of(0)) == sorted(cut[3:6] + cut[9:12])
    # the re-deal after four passes needs a fresh deck, by the same dealer (KL-3.5)
    state.deal(base)
    play_out(state, ["pass", "pass", "pass", "pass"])
    assert state.to_act() == CHANCE and state.dealer() == 1
    with pytest.raises(DealRequired):
        state.apply("take")
    other = base[7:] + base[:7]
    state.deal(other)
    assert table(state)["turn_up"] == other[12] and sorted(state.hand_of(1)) == sorted(other[0:3] + other[6:9])
    # and after a played deal
    play_out(state, ["take", "keep", "keep"])
    while state.to_act() >= 0:
        state.apply(GAME.auto_move(state.view(state.to_act())))
    assert state.to_act() == CHANCE and state.dealer() == 0


def test_KL_3_6_no_schmeiss_in_any_auction_state_by_default():
    """KL-3.6: the default game has no schmeiss: in none of the four states of KL-3.1 is it a
    legal call (it is refused as illegal); kl_schmeiss = true adds it to every state (KL-A7)."""
    from engine_service.rules import IllegalAction
    for opts, offered in (({}, False), ({"kl_schmeiss": True}, True)):
        state = deal(ELDER, DEALER, "8H", options=opts)
        for expected_state in ("R1_ELDER", "R1_DEALER", "R2_ELDER", "R2_DEALER"):
            assert table(state)["auction_state"] == expected_state
            assert ("schmeiss" in state.legal_actions()) is offered, (opts, expected_state)
            if not offered:
                with pytest.raises(IllegalAction):
                    state.apply("schmeiss")
            state.apply("pass")
        assert state.to_act() == CHANCE  # thrown in (KL-3.5)


# The elder holds A-K-Q of diamonds (20); the dealer holds no sequence. Trump hearts (take 8H).
MELD_ELDER = "AD KD QD AS TS 7S QH 8C 9C"
MELD_DEALER = "KS 9S JH 9H AH TD 8D 7D JC"


def test_KL_5_8_meld_statements_are_automatic_a_sequence_cannot_be_concealed():
    """KL-5.8: by default the engine states the melds from the hands: after the dix window the
    phase goes straight to trick play, nobody has a declare / conceal choice, and the elder's
    A-K-Q scores 20 (KL-5.5 dialogue). With kl_meld_declaration = optional (KL-A20) the same
    hand may be concealed and then scores nothing."""
    state = deal(MELD_ELDER, MELD_DEALER, "8H", info="7C")
    play_out(state, ["take", "keep", "keep"])
    assert state.public_view()["phase"] == "play" and state.to_act() == 0
    assert not {"declare", "conceal"} & set(state.legal_actions())
    t = table(state)
    assert t["melds"][:2] == [{"seat": 0, "say": "value", "value": 20}, {"seat": 1, "say": "good"}]
    assert t["melds"][-1]["say"] == "scores" and t["meld_points"] == [20, 0]
    optional = deal(MELD_ELDER, MELD_DEALER, "8H", info="7C", options={"kl_meld_declaration": "optional"})
    play_out(optional, ["take", "keep", "keep"])
    assert optional.legal_actions() == ["declare", "conceal"]
    play_out(optional, ["conceal", "declare"])
    assert table(optional)["meld_points"] == [0, 0]


def test_KL_6_7_no_obligation_to_beat_a_plain_lead():
    """KL-6.7: on a plain-suit lead any card of the led suit is legal: the dealer, holding the
    ace (which beats the king) and the nine (which does not), may play either; the nine loses."""
    elder, dealer = "KS 7S QH AD KD QD QC JC 9C", "AS 9S JH 9H AH TD 8D 7D 8C"
    state = to_play(elder, dealer, "8H", info="7C")
    state.apply("play:KS")
    assert legal_cards(state) == ["9S", "AS"]
    state.apply("play:9S")
    assert state.to_act() == 0 and table(state)["card_points"] == [4, 0]  # the leader's king wins
    # a trump lead, by contrast, must be beaten when possible (KL-6.4)
    state = to_play(elder, dealer, "8H", info="7C")
    state.apply("play:QH")
    assert legal_cards(state) == ["9H", "AH", "JH"]


def test_refusals_that_only_the_table_options_explain_name_the_option():
    """An action the table's house rules leave out is refused naming the option (KL-A7, KL-A8,
    KL-A9, KL-A20, KL-A23): it read "schmeiss is not a legal action now", as if it could become
    legal later. Refusals the options do not explain keep the generic message."""
    from engine_service.rules import IllegalAction

    def refusal(state, action):
        with pytest.raises(IllegalAction) as info:
            state.apply(action)
        return info.value.message

    state = deal(ELDER, DEALER, "8H")
    assert "kl_schmeiss" in refusal(state, "schmeiss") and "kl_schmeiss" in refusal(state, "refuse")
    assert "kl_meld_declaration" in refusal(state, "conceal")
    assert refusal(state, "name:S") == "name:S is not a legal action now; legal now: take, pass"  # KL-3.1, no option
    state = to_play(ELDER, DEALER, "8H", info="7C")
    assert "kl_bella_announcement" in refusal(state, "play:KD:bella")
    assert "kl_meld_declaration" in refusal(state, "declare")
    # the elder holds the dix 7H (hearts taken): exchanged in the window only
    dix_elder = "7H TS 7S QH AD KD QC JC 9C"
    state = to_play(dix_elder, DEALER, "8H", options={"kl_dix_window": "before_melds"}, info="7C")
    assert state.to_act() == 0 and "exchange" not in state.legal_actions()
    assert "kl_dix_window" in refusal(state, "exchange")
    # spades named in round 2: the elder's 7S is no dix to exchange under KL-A8's option
    state = deal(dix_elder, DEALER, "8H", options={"kl_dix_requires_turnup_trump": True}, info="7C")
    play_out(state, ["pass", "pass", "name:S"])
    assert state.legal_actions() == ["keep"]
    assert "kl_dix_requires_turnup_trump" in refusal(state, "exchange")
    assert state.legal_actions() == ["keep"]  # nothing changed
    # clubs named (the last suit): the option explains the refusal in every suit, not only spades
    state = deal(ELDER, DEALER, "8H", options={"kl_dix_requires_turnup_trump": True}, info="KC")
    play_out(state, ["pass", "pass", "name:C"])
    assert "kl_dix_requires_turnup_trump" in refusal(state, "exchange")


def test_refusals_at_a_table_that_has_the_option_list_the_legal_actions():
    """The option messages (KL-A7, KL-A20) are for tables that leave the call out: at a table
    with ``kl_schmeiss`` an ``accept`` with no schmeiss to answer, and at a table with
    optional declarations a ``declare`` during the play, are just not legal now (KL-3.1,
    KL-6.1); so is an ``exchange`` in the auction, before any trump makes a dix (KL-4.1)."""
    from engine_service.rules import IllegalAction

    def refusal(state, action):
        with pytest.raises(IllegalAction) as info:
            state.apply(action)
        return info.value.message

    state = deal(ELDER, DEALER, "8H", options={"kl_schmeiss": True})
    assert refusal(state, "accept") == "accept is not a legal action now; legal now: take, pass, schmeiss"
    assert refusal(state, "exchange") == "exchange is not a legal action now; legal now: take, pass, schmeiss"
    state = to_play(ELDER, DEALER, "8H", options={"kl_meld_declaration": "optional"}, info="7C")
    assert refusal(state, "declare").startswith("declare is not a legal action now; legal now: play:")


def test_a_leader_announcing_bella_before_the_queen_is_not_told_to_follow_suit_kl_6_2():
    """KL-6.2: the leader may lead any card, so the refusal of a leader's ``play:KH:bella``
    before the trump queen is played (KL-A23, KL-A13 queen first), or of his ``play:KD:bella``
    (no bella in a plain suit, KL-7.1), names no suit to follow and no duty to trump: it lists
    the legal actions."""
    from engine_service.rules import IllegalAction

    state = to_play(BELLA_ELDER, BELLA_DEALER, "8H", options={"kl_bella_announcement": "required"})
    assert state.to_act() == 0 and "play:KH:bella" not in state.legal_actions()
    for action in ("play:KH:bella", "play:KD:bella"):
        with pytest.raises(IllegalAction) as info:
            state.apply(action)
        assert info.value.message.startswith(f"{action} is not a legal action now; legal now: play:AS, ")


def test_a_follower_without_suit_or_trump_announcing_a_plain_king_is_not_told_to_trump_kl_6_6():
    """KL-6.6: a follower with neither the led suit nor a trump may play any card, so his
    refused ``play:KD:bella`` (no bella in a plain suit, KL-7.1, KL-A23) names no duty to
    trump (KL-6.5): it lists the legal actions."""
    from engine_service.rules import IllegalAction

    state = to_play("AS KS QS JS TS 9S 8S 7S AH", "KD QD JD TD AC KC QC JC TC", "8H",
                    options={"kl_bella_announcement": "required"})
    state.apply("play:AS")
    with pytest.raises(IllegalAction) as info:
        state.apply("play:KD:bella")
    assert info.value.message.startswith("play:KD:bella is not a legal action now; legal now: play:KD, ")


@pytest.mark.parametrize("options,calls", [
    ({}, ("pass", "pass", "name:S", "keep")),  # named spades, the elder kept his 7S; the dealer (KL-A8)
    ({"kl_dix_window": "before_melds"}, ("take",)),  # in the window itself (KL-A9)
])
def test_exchange_without_the_dix_is_refused_as_such_when_no_option_forbids_it_kl_4_1(options, calls):
    """Without ``kl_dix_requires_turnup_trump`` the trump need not be the turn-up suit, and
    with ``kl_dix_window = before_melds`` the window is where the exchange belongs: neither
    option explains the refusal of a seat without the dix, which holds no exchangeable dix
    (KL-4.1, KL-4.4)."""
    from engine_service.rules import IllegalAction

    state = deal(ELDER, DEALER, "8H", options=options, info="7C")
    play_out(state, calls)
    assert state.public_view()["phase"] == "dix_window" and state.legal_actions() == ["keep"]
    with pytest.raises(IllegalAction) as info:
        state.apply("exchange")
    assert info.value.message == "exchange: you hold no exchangeable dix, the seven of trumps (KL-4.1, KL-4.4)"


def test_take_in_the_play_phase_is_no_bella_refusal_kl_3_1_kl_a23():
    """``take`` belongs to the auction (KL-3.1): refused during the play at a table without the
    bella announcement (KL-A23), it gets the generic refusal listing the legal actions, not the
    bella option's message (the action just after the ``play:<king>:bella`` range)."""
    from engine_service.rules import IllegalAction

    state = to_play(ELDER, DEALER, "8H", info="7C")
    with pytest.raises(IllegalAction) as info:
        state.apply("take")
    assert "kl_bella_announcement" not in info.value.message
    assert info.value.message.startswith("take is not a legal action now; legal now: ")


def test_second_exchange_by_seat_0_is_refused_as_already_exchanged_kl_4_2():
    """The dix is exchanged once per deal (KL-4.2). When seat 0 made the exchange, a second
    ``exchange`` must still be refused with that reason (the exchanging seat is 0, a valid
    seat), not as "you hold no exchangeable dix"."""
    from engine_service.rules import IllegalAction

    dix_elder = "7H TS 7S QH AD KD QC JC 9C"
    state = to_play(dix_elder, DEALER, "8H", info="7C")
    assert state.to_act() == 0 and "exchange" in state.legal_actions()
    state.apply("exchange")
    with pytest.raises(IllegalAction) as info:
        state.apply("exchange")
    assert info.value.message == "exchange: the dix has already been exchanged in this deal (KL-4.2)"


def test_follow_suit_refusal_when_the_ace_of_spades_is_led_kl_6_3():
    """KL-6.3: the follower must follow the led suit. The led card may be AS (card id 0): the
    dealer, holding KS and 9S, is refused 8C with the follow-suit reason; after KD, KS is
    refused naming D (the suit of the led card, whatever its rank)."""
    from engine_service.rules import IllegalAction

    state = to_play(ELDER, DEALER, "8H", info="7C")
    state.apply("play:AS")
    with pytest.raises(IllegalAction) as info:
        state.apply("play:8C")
    assert info.value.message == "play:8C: you must follow suit S (KL-6.3)"
    state = to_play(ELDER, DEALER, "8H", info="7C")
    state.apply("play:KD")  # the suit is named from the led card whatever its rank
    with pytest.raises(IllegalAction) as info:
        state.apply("play:KS")
    assert info.value.message == "play:KS: you must follow suit D (KL-6.3)"


def test_bella_play_of_a_king_not_held_names_the_card_kl_a23():
    """At a table with the bella announcement (KL-A23), ``play:KC:bella`` by a seat without KC
    is a card play: its refusal says the card is not in the hand, like ``play:KC`` would."""
    from engine_service.rules import IllegalAction

    state = to_play(ELDER, DEALER, "8H", options={"kl_bella_announcement": "required"}, info="7C")
    with pytest.raises(IllegalAction) as info:
        state.apply("play:KC:bella")
    assert info.value.message == "play:KC:bella: KC is not in your hand"


def test_bella_announcement_on_a_king_that_follows_suit_lists_the_legal_actions_kl_a23():
    """KL-A23 with the default queen first (KL-A13): ``play:KH:bella`` before the trump queen
    is played is refused although KH follows the trump lead (KL-6.3) and no higher trump is
    held (KL-6.4); so is ``play:KD:bella`` (no bella in a plain suit, KL-7.1) although KD
    follows a diamond lead. No card rule forbids either, so the refusal lists the legal
    actions; it must not claim that the player has no heart or diamond and must trump (KL-6.5),
    nor, when he is out of the led suit, that he must trump with KH, itself a trump."""
    from engine_service.rules import IllegalAction

    cases = [
        # the dealer wins with the ten and leads a trump
        ([("KD", "TD")], "9H", "play:KH:bella", "play:KH, play:QH"),
        # the dealer trumps the second club and leads
        ([("8C", "7C"), ("QC", "JH")], "TD", "play:KD:bella", "play:AD, play:KD"),
        # KL-6.5: out of spades the elder must trump, and KH is a trump: still no card rule forbids it
        ([("AS", "9S"), ("KD", "TD")], "KS", "play:KH:bella", "play:KH, play:QH"),
    ]
    for pairs, lead, action, legal in cases:
        state = to_play(BELLA_ELDER, BELLA_DEALER, "8H", options={"kl_bella_announcement": "required"})
        play_pairs(state, pairs)
        state.apply(f"play:{lead}")
        with pytest.raises(IllegalAction) as info:
            state.apply(action)
        assert info.value.message == f"{action} is not a legal action now; legal now: {legal}"


@pytest.mark.parametrize("turn_up", ["8H", "KC", "7C"])
def test_with_the_turnup_suit_trump_a_missing_dix_is_the_reason_not_the_option_kl_a8(turn_up):
    """KL-A8's ``kl_dix_requires_turnup_trump`` explains a refused ``exchange`` only when the
    trump is not the turn-up suit. With the turn-up suit taken (whatever the turn-up's rank;
    7C is the dix itself, KL-4.4) the option allows the exchange, so a seat without the dix is
    told it holds none (KL-4.1, KL-4.4)."""
    from engine_service.rules import IllegalAction

    state = deal(ELDER, DEALER, turn_up, options={"kl_dix_requires_turnup_trump": True}, info="TC")
    play_out(state, ["take"])
    assert state.to_act() == 0 and state.legal_actions() == ["keep"]
    with pytest.raises(IllegalAction) as info:
        state.apply("exchange")
    assert info.value.message == "exchange: you hold no exchangeable dix, the seven of trumps (KL-4.1, KL-4.4)"


def test_bella_announcement_on_a_king_that_does_not_overtrump_names_kl_6_4():
    """KL-6.4 over KL-A23: ``play:KH:bella`` on a trump lead the king cannot beat, by a player
    holding a trump that does, is refused for its card, as ``play:KH`` is: it read "not a
    legal action now" with the legal actions, as if the announcement were what is wrong. The
    elder holds KH QH AH (hearts trump); the dealer wins KD with TD and leads TH, which only AH
    beats (J 9 A T K Q 8 7, KL-1.2)."""
    from engine_service.rules import IllegalAction

    state = to_play("KH QH AH AS KD QC JC 9C 8C", "KS 9S JH 9H TH TD 8D 7D 7C", "8H",
                    options={"kl_bella_announcement": "required"})
    play_pairs(state, [("KD", "TD")])
    state.apply("play:TH")
    assert state.legal_actions() == ["play:AH"]
    for action in ("play:KH", "play:KH:bella"):
        with pytest.raises(IllegalAction) as info:
            state.apply(action)
        assert info.value.message == f"{action}: you must beat the trump TH with a higher trump (KL-6.4)"
