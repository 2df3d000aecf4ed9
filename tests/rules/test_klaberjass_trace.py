"""Rule-id trace tests for Klaberjass: one focused test per rule id that no other test names
(KL-2.6, KL-2.7, KL-3.4, KL-3.7, KL-5.7, KL-8.3, KL-10.3), each failing if the rule broke.

Hands are laid out as in :mod:`.test_klaberjass_rules`: (elder's 9 cards, dealer's 9 cards),
the first six of each dealt in the first deal (KL-2.4), the last three in the second (KL-2.8).
"""

from __future__ import annotations

import random

import pytest

from engine_service.rules import CHANCE, TERMINAL, MatchOver, RulesError, get_game

from .checks_klaberjass import PACK_CODES, deck_from_hands, play_out

GAME = get_game("klaberjass")

ELDER = "AS TS 7S QH AD KD QC JC 9C"
DEALER = "KS 9S JH 9H AH TD 8D 7D 8C"


def deal(elder, dealer, turn_up, *, first_dealer=1, options=None, info=None):
    state = GAME.new_state(options or {}, first_dealer=first_dealer)
    state.deal(deck_from_hands(dealer.split(), elder.split(), turn_up, info_card=info))
    return state


def table(state):
    return state.public_view()["table"]


def auto_play(state):
    """Play the rest of the current deal by the auto-move policy; return the cards played."""
    played = []
    deals = len(state.deal_results())
    while state.to_act() >= 0 and len(state.deal_results()) == deals:
        a = GAME.auto_move(state.view(state.to_act()))
        if a.startswith("play:"):
            played.append(a.split(":")[1])
        state.apply(a)
    return played


# ---- KL-2.6: the dealer is the younger hand, the non-dealer the elder --------------------------

@pytest.mark.parametrize("dealer", [0, 1])
def test_kl_2_6_non_dealer_is_elder_and_acts_first_in_every_phase(dealer):
    """KL-2.6 (with KL-0.3): the non-dealer is the elder. He calls first in both auction rounds
    (KL-3.1), has the first dix-window step (KL-4.2) and leads to trick 1 (KL-6.1) although the
    dealer is the maker; the roles swap with the deal (KL-2.2)."""
    elder = 1 - dealer
    state = deal(ELDER, DEALER, "8H", first_dealer=dealer)
    assert table(state)["elder"] == elder and state.dealer() == dealer
    assert state.to_act() == elder  # R1_ELDER
    state.apply("pass")
    assert state.to_act() == dealer  # R1_DEALER
    state.apply("pass")
    assert state.to_act() == elder and table(state)["auction_state"] == "R2_ELDER"
    state.apply("pass")
    assert state.to_act() == dealer
    state.apply("name:S")  # the dealer is the maker
    assert table(state)["maker"] == dealer
    assert state.public_view()["phase"] == "dix_window" and state.to_act() == elder
    play_out(state, ["keep", "keep"])
    assert state.to_act() == elder and table(state)["leader"] == elder
    # the elder's hand is the one dealt second (KL-2.4: the dealer serves himself first)
    assert sorted(state.hand_of(elder)) == sorted(ELDER.split())
    auto_play(state)
    assert state.dealer() == elder  # the next deal: the other player deals, roles swap
    state.deal(PACK_CODES)
    assert table(state)["elder"] == dealer and state.to_act() == dealer


# ---- KL-2.7: no second deal before a trump is fixed, none in a thrown-in deal -----------------

def test_kl_2_7_second_deal_only_after_the_auction_fixes_trump():
    """KL-2.7: through both auction rounds each player holds the six cards of the first deal,
    no information card is turned and D[13..18] stay in the stock; the call that fixes trump
    brings the second deal (nine cards each) and the information card D[31] (KL-2.8, KL-2.9)."""
    state = deal(ELDER, DEALER, "8H", info="7H")
    for call in ("pass", "pass", "pass"):
        v = state.public_view()
        assert v["hand_sizes"] == [6, 6] and v["table"]["info_card"] is None
        assert v["table"]["stock_size"] == 32 - 12 - 1  # D[13..31] all still in the stock
        state.apply(call)
    assert sorted(state.hand_of(0)) == sorted(ELDER.split()[:6])
    state.apply("name:C")
    v = state.public_view()
    assert v["hand_sizes"] == [9, 9] and v["table"]["info_card"] == "7H"
    assert sorted(state.hand_of(0)) == sorted(ELDER.split())
    assert sorted(state.hand_of(1)) == sorted(DEALER.split())


def test_kl_2_7_thrown_in_deal_has_no_second_deal():
    """KL-2.7 with KL-3.5: after four passes there is no second deal: the hands still hold six
    cards at the fourth pass, no information card was shown, and the result is just
    ``{"thrown_in": true}`` (NOTATION 4); the same dealer deals a fresh deck."""
    state = deal(ELDER, DEALER, "8H", info="7H")
    play_out(state, ["pass", "pass", "pass"])
    v = state.public_view()
    assert v["hand_sizes"] == [6, 6] and v["table"]["info_card"] is None
    assert "7H" not in state.hand_of(0) + state.hand_of(1)
    state.apply("pass")
    assert state.to_act() == CHANCE and state.deal_results() == [{"thrown_in": True}]
    assert state.public_view()["hand_sizes"] == [0, 0] and state.dealer() == 1


# ---- KL-3.4: no other calls -------------------------------------------------------------------

NOT_KLABERJASS = ("no_trump", "name:NT", "double", "redouble", "nullo", "slam:S", "slam:NT", "accept")


@pytest.mark.parametrize("calls_before", [(), ("pass",), ("pass", "pass"), ("pass", "pass", "pass")])
def test_kl_3_4_no_no_trump_overcall_double_nullo_or_slam_in_any_auction_state(calls_before):
    """KL-3.4: in every state of KL-3.1 the legal calls are only ``take`` / ``name:X`` (a suit)
    / ``pass``; no-trump, double, redouble, nullo and slam calls are refused and leave the state
    unchanged."""
    state = deal(ELDER, DEALER, "8H")
    play_out(state, calls_before)
    legal = state.legal_actions()
    assert set(legal) <= {"take", "pass", "name:S", "name:D", "name:C"}
    seq = len(state.deal_actions())
    for bad in NOT_KLABERJASS:
        with pytest.raises(RulesError):
            state.apply(bad)
    assert len(state.deal_actions()) == seq and state.legal_actions() == legal


@pytest.mark.parametrize("calls", [("take",), ("pass", "take"), ("pass", "pass", "name:S"),
                                   ("pass", "pass", "pass", "name:D")])
def test_kl_3_4_no_overcall_or_double_after_the_contract_call(calls):
    """KL-3.4 (no overcall, no double) with KL-3.2: the call that fixes trump ends the auction
    at once; the other player gets no answer of any kind, the next step is the elder's dix-window
    step and the multiplier concept does not exist (the result has no multiplier)."""
    state = deal(ELDER, DEALER, "8H")
    play_out(state, calls)
    assert state.public_view()["phase"] == "dix_window" and state.to_act() == 0
    assert set(state.legal_actions()) <= {"exchange", "keep"}  # the window, no auction call
    for bad in NOT_KLABERJASS + ("pass", "take"):
        with pytest.raises(RulesError):
            state.apply(bad)
    play_out(state, ["keep", "keep"])
    auto_play(state)
    assert set(state.deal_results()[-1]) == {"thrown_in", "trump", "maker", "melds", "card_points",
                                            "bonuses", "scored"}


# ---- KL-3.7: after END, second deal -> information card -> meld phase -> trick play ----------

def test_kl_3_7_order_after_the_auction_second_deal_window_melds_play():
    """KL-3.7: right after the auction the second deal and the information card are done
    (nine cards, ``info_card`` shown); the dix window comes next, before any meld statement
    (no meld event, no meld points yet); the melds are then stated (KL-5.5 dialogue, elder
    first) before the first card of trick play, which the elder leads (KL-6.1)."""
    # The dealer holds the dix 7H; the elder has A-K-Q of diamonds (20), the dealer nothing.
    state = deal("AS TS 7S QH AD KD QD JC 9C", "KS 9S JH 9H AH TD 8D 7H 8C", "8H", info="7D")
    state.apply("take")
    v = state.public_view()
    assert v["phase"] == "dix_window" and v["hand_sizes"] == [9, 9]
    assert v["table"]["info_card"] == "7D" and v["table"]["melds"] == [] and v["table"]["meld_points"] == [0, 0]
    assert state.legal_actions() == ["keep"]  # the elder's step, before any statement
    state.apply("keep")
    assert state.public_view()["phase"] == "dix_window" and state.legal_actions() == ["exchange", "keep"]
    assert table(state)["melds"] == []
    state.apply("keep")
    v = state.public_view()
    assert v["phase"] == "play" and v["tricks_taken"] == [0, 0] and v["trick"] == []
    assert v["table"]["melds"][0] == {"seat": 0, "say": "value", "value": 20}
    assert v["table"]["meld_points"] == [20, 0]
    assert state.to_act() == 0 and all(a.startswith("play:") for a in state.legal_actions())


def test_kl_3_7_optional_declaration_steps_come_after_the_window():
    """KL-3.7 under ``kl_meld_declaration = optional`` (KL-A20): window steps, then the two
    declaration steps, then play."""
    state = deal(ELDER, DEALER, "8H", options={"kl_meld_declaration": "optional"})
    state.apply("take")
    phases = []
    for a in ("keep", "keep", "declare", "declare"):
        phases.append(state.public_view()["phase"])
        state.apply(a)
    assert phases == ["dix_window", "dix_window", "meld_declaration", "meld_declaration"]
    assert state.public_view()["phase"] == "play"


# ---- KL-5.7: meld points credited at once and counted in the deal total ------------------------

MELD_DEAL = ("AS KS QS JS 9H 8H KD 9C 7C", "9S 8S QH TH AH AD QD TC 8C", "7D")
MELD_PLAYS = ["7C", "8C", "8S", "JS", "8H", "QH", "9S", "QS", "9H", "TH", "TC", "9C", "AH", "KD",
              "KS", "QD", "AD", "AS"]


def test_kl_5_7_meld_points_credited_before_the_first_card_and_kept_through_play():
    """KL-5.7: the meld winner's 50 (A-K-Q-J of spades) is on the table from the end of the meld
    dialogue, before trick 1, and stays there unchanged trick after trick."""
    state = deal(*MELD_DEAL)
    play_out(state, ["take", "keep", "keep"])
    assert table(state)["meld_points"] == [50, 0] and state.public_view()["tricks_taken"] == [0, 0]
    for card in MELD_PLAYS[:-1]:
        state.apply(f"play:{card}")
        assert table(state)["meld_points"] == [50, 0]


def test_kl_5_7_meld_points_count_in_the_deal_total_and_decide_the_deal():
    """KL-5.7 with KL-9.1/KL-9.2: the maker (elder, diamonds) wins only 20 card points against
    62, but his 50 meld points make his deal total 70 > 62: each enters his own total. Were the
    melds not in the total the opponent would have more and take both (82)."""
    state = deal(*MELD_DEAL)
    play_out(state, ["take", "keep", "keep"])
    play_out(state, [f"play:{c}" for c in MELD_PLAYS])
    assert state.deal_results()[-1] == {
        "thrown_in": False, "trump": "D", "maker": 0, "melds": [50, 0], "card_points": [20, 62],
        "bonuses": [0, 0], "scored": [70, 62]}
    d = state.deal_details()[-1]
    assert d["deal_totals"] == [70, 62] and d["outcome"] == "maker_more"
    assert state.result()["totals"] == [70, 62]


# ---- KL-8.3: 152 card points in the pack, 162 per deal with the last trick --------------------

KL_VALUES_TRUMP = {"J": 20, "9": 14, "A": 11, "T": 10, "K": 4, "Q": 3, "8": 0, "7": 0}
KL_VALUES_PLAIN = {"J": 2, "9": 0, "A": 11, "T": 10, "K": 4, "Q": 3, "8": 0, "7": 0}


def card_value(card, trump):
    return (KL_VALUES_TRUMP if card[1] == trump else KL_VALUES_PLAIN)[card[0]]


@pytest.mark.parametrize("trump", "SHDC")
def test_kl_8_3_the_pack_holds_152_card_points_in_every_trump(trump):
    """KL-8.3: under every trump the 32 cards are worth 152 (KL-8.1)."""
    assert sum(card_value(c, trump) for c in PACK_CODES) == 152


@pytest.mark.parametrize("seed", range(12))
def test_kl_8_3_card_points_plus_the_unplayed_cards_make_162(seed):
    """KL-8.3: the card points won in a deal (``card_points``, last trick included) plus the
    value of the 14 cards never played (stock, turn-up or dix, information card) is 162 = 152 +
    the last-trick 10: no card point is lost or counted twice."""
    rng = random.Random(seed)
    deck = PACK_CODES[:]
    rng.shuffle(deck)
    state = GAME.new_state({}, first_dealer=seed % 2)
    state.deal(deck)
    state.apply("take")
    trump = table(state)["trump"]
    played = auto_play(state)
    r = state.deal_results()[-1]
    assert len(played) == 18 and len(set(played)) == 18
    unplayed = [c for c in PACK_CODES if c not in played]
    assert sum(r["card_points"]) + sum(card_value(c, trump) for c in unplayed) == 162


# ---- KL-10.3: a match is one game, over when that game is won --------------------------------

def test_kl_10_3_the_match_is_one_game_and_ends_with_it():
    """KL-10.3: deals follow one another (totals never reset) until one player's total reaches
    the target after a deal (KL-10.1/10.2); then the match is over: no next deal, no action,
    ``over`` with that single winner, and the result has no notion of further games."""
    rng = random.Random(7)
    state = GAME.new_state({"kl_target_score": 200}, first_dealer=0)
    running = [0, 0]
    while not state.is_over():
        assert state.to_act() == CHANCE and state.result() == {"totals": running, "winners": [], "over": False}
        deck = PACK_CODES[:]
        rng.shuffle(deck)
        state.deal(deck)
        state.apply("take")
        auto_play(state)
        r = state.deal_results()[-1]
        running = [running[0] + r["scored"][0], running[1] + r["scored"][1]]
        assert state.result()["totals"] == running  # one running score across the deals
    res = state.result()
    assert res["over"] and len(res["winners"]) == 1 and max(res["totals"]) >= 200
    assert res["totals"][res["winners"][0]] == max(res["totals"])
    assert set(res) == {"totals", "winners", "over"}
    assert len(state.deal_results()) >= 2  # one game spanning several deals
    assert state.to_act() == TERMINAL and state.legal_actions() == []
    with pytest.raises(MatchOver):
        state.deal(PACK_CODES)
