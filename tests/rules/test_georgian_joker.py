"""Georgian Joker through the match state, section by section of the rulebook (GJ-x.y in
every test name or docstring): seed example, schedules and whole matches, dealing and trump,
bidding, joker play, trick winners, scoring, pulka settlement, match end, table options,
notation, bad input, the first-dealer draw and the auto-move policy."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from engine_service.rules import (CHANCE, TERMINAL, DealRequired, IllegalAction, InvalidOptions,
                                  MalformedAction, MatchOver, NotYourTurn)
from engine_service.rules.cards import CODES, PACK36_JOKERS, card_id
from engine_service.rules.games.georgian_joker import actions as A
from engine_service.rules.games.georgian_joker import rules as R
from engine_service.rules.games.georgian_joker.definition import auto_trump

from .checks_georgian_joker import (GAME, STANDARD_N, check_scores, deck_for, fill_hands, snapshot,
                                    state_at_deal)
from .playout import cards_in, current_deal_cards_in, random_match, shuffled

# ---- fixtures ----------------------------------------------------------------------------------

SEED_HANDS = [["AS", "KH", "7C"], ["8S", "9H", "JC"], ["X1", "QS", "6H"], ["TS", "8C", "9D"]]


def seed_deal(options: dict | None = None):
    """Deal 3 of pulka I from the seed (GJ-15.1): dealer Nika (3), indicator TD."""
    state = state_at_deal(3, options, first_dealer=1)
    assert state.dealer() == 3
    state.deal(deck_for(SEED_HANDS, 3, "TD"))
    return state


def nines_deal(hands, trump: str, options: dict | None = None, dealer: int = 3, bids=(1, 1, 1, 1)):
    """Deal 1 of a ``nines`` match with ``hands``, ``trump`` chosen and ``bids`` made."""
    state = GAME.new_state({"deal_schedule": "nines", **(options or {})}, first_dealer=dealer)
    state.deal(deck_for(hands, dealer))
    state.apply(f"trump:{trump}")
    for b in bids:
        state.apply(f"bid:{b}")
    return state


def play_all(state, actions: str) -> None:
    for a in actions.split():
        state.apply(a if ":" in a else f"play:{a}")


def legal_cards(state) -> list[str]:
    return [a[5:] for a in state.legal_actions()]


# ---- GJ-15.1 the seed example --------------------------------------------------------------------

def test_seed_three_card_deal_gj_15_1():
    """GJ-3.3 indicator TD -> trump D; GJ-4.3 Nika may not bid 1; GJ-5.3 forced 9D; GJ-6.1 the
    high joker beats the trump; GJ-6.5 discards never win; GJ-7 scores 100, 50, 20, 50."""
    state = seed_deal()
    view = state.public_view()
    assert view["table"]["trump"] == "D" and view["table"]["trump_indicator"] == "TD"
    assert view["table"]["pulka"] == 1 and view["table"]["deal"] == 3 and view["table"]["forehand"] == 0
    play_all(state, "bid:1 bid:0 bid:1")
    assert state.legal_actions() == ["bid:0", "bid:2", "bid:3"]
    assert state.public_view()["table"]["forbidden_bid"] == 1
    state.apply("bid:0", seat=3)
    play_all(state, "AS 8S QS TS")
    assert state.public_view()["last_trick"]["winner"] == 0
    play_all(state, "KH 9H")
    assert state.legal_actions() == ["play:6H", "play:X1:high", "play:X1:low"]
    state.apply("play:X1:high")
    assert state.legal_actions() == ["play:9D"]  # no hearts, holds a trump (GJ-5.3 step 3)
    state.apply("play:9D")
    assert state.public_view()["last_trick"]["winner"] == 2
    play_all(state, "6H 8C 7C JC")
    res = state.deal_results()[-1]
    assert res == {"trump": "D", "bids": [1, 0, 1, 0], "taken": [1, 0, 2, 0], "scores": [100, 50, 20, 50]}


@pytest.mark.parametrize("levan", ["play:6H", "play:X1:low"])
def test_seed_counterfactual_nika_trump_wins_gj_6_2(levan):
    """GJ-15.2: had Levan played 6H or the joker low, Nika's forced 9D wins trick 2."""
    state = seed_deal()
    play_all(state, "bid:1 bid:0 bid:1 bid:0 AS 8S QS TS KH 9H")
    state.apply(levan)
    assert state.legal_actions() == ["play:9D"]
    state.apply("play:9D")
    assert state.public_view()["last_trick"]["winner"] == 3
    assert state.to_act() == 3


# ---- GJ-1 deck -----------------------------------------------------------------------------------

def test_four_players_each_for_themselves_gj_2_1():
    """GJ-2.1: four seats, one score each (the session layer sizes tables by ``num_seats``)."""
    assert GAME.num_seats == 4
    assert len(random_match(GAME, 3, {"deal_schedule": "nines"}).result()["totals"]) == GAME.num_seats


def test_pack_gj_1_1():
    codes = [CODES[c] for c in GAME.pack]
    assert len(codes) == 36 and "6S" not in codes and "6C" not in codes
    assert {"6H", "6D", "X1", "X2"} <= set(codes)
    with pytest.raises(MalformedAction, match="not in the Georgian Joker pack"):
        A.parse_action("play:6S")


def test_x1_and_x2_behave_identically_gj_1_4():
    """GJ-1.4: the same two joker plays with the labels swapped leave the same position."""
    hands = fill_hands({0: "X1 AS", 1: "X2 KS"}, 9)
    a = nines_deal(hands, "H")
    swapped = [[{"X1": "X2", "X2": "X1"}.get(c, c) for c in h] for h in hands]
    b = nines_deal(swapped, "H")
    play_all(a, "play:X1:high:C play:X2:high")
    play_all(b, "play:X2:high:C play:X1:high")
    assert a.to_act() == b.to_act() and a.legal_actions() == b.legal_actions()


# ---- GJ-2 seating, rotation, schedule ------------------------------------------------------------

@pytest.mark.parametrize("schedule,deals", [("standard", 24), ("nines", 16)])
def test_whole_match_schedule_rotation_and_pulkas_gj_2(schedule, deals):
    """GJ-2.3 .. GJ-2.7, GJ-8, GJ-9.1: random legal play of whole matches; every deal's n,
    pulka, dealer (continuous rotation), forehand; each seat deals 6 (4) times; premium and
    moshla exactly after the last deal of each pulka; totals add up."""
    ns = STANDARD_N if schedule == "standard" else [9] * 16
    for seed in range(6):
        rng = random.Random(seed)
        first = seed % 4
        state = GAME.new_state({"deal_schedule": schedule}, first_dealer=first)
        dealers = []
        while state.to_act() != TERMINAL:
            if state.to_act() == CHANCE:
                k = len(state.deal_results())
                assert state.dealer() == (first + k) % 4
                dealers.append(state.dealer())
                state.deal(shuffled(GAME, rng))
                view = state.public_view()
                n = ns[k]
                assert view["table"]["cards_per_player"] == n and view["table"]["deal"] == k + 1
                assert view["table"]["pulka"] == (k // 4 + 1 if schedule == "nines" else
                                                 1 + (k >= 8) + (k >= 12) + (k >= 20))
                assert view["table"]["forehand"] == (state.dealer() + 1) % 4 == state.to_act()
                assert view["hand_sizes"] == [3 if n == 9 else n] * 4
                continue
            state.apply_id(rng.choice(state.legal_ids()))
        assert len(state.deal_results()) == deals
        assert Counter(dealers) == {s: deals // 4 for s in range(4)}
        assert state.result()["over"] is True
        # docs/games/georgian_joker.md: after the match, dealer() is the last deal's dealer (the
        # rotation of GJ-2.3 passes the deal on only to a next deal), in the views too
        assert state.dealer() == dealers[-1] == state.public_view()["dealer"] == state.view(first)["dealer"]
        check_scores(state)
        pulka_ends = [k for k, r in enumerate(state.deal_results()) if "premium" in r]
        assert pulka_ends == ([7, 11, 19, 23] if schedule == "standard" else [3, 7, 11, 15])


def test_forehand_bids_first_and_leads_gj_2_7():
    state = state_at_deal(5, {}, first_dealer=2)  # deal 5: dealer 2, forehand 3
    state.deal(shuffled(GAME, random.Random(1)))
    order = []
    for _ in range(4):
        order.append(state.to_act())
        state.apply("bid:5" if state.to_act() != 2 else state.legal_actions()[-1])
    assert order == [3, 0, 1, 2]
    assert state.to_act() == 3 and state.public_view()["phase"] == "playing"


# ---- GJ-3 dealing and trump ----------------------------------------------------------------------

def test_one_at_a_time_dealing_indicator_and_stock_gj_3_2_gj_3_4():
    state = state_at_deal(4, {}, first_dealer=0)  # deal 4: n = 4, dealer 3, forehand 0
    deck = shuffled(GAME, random.Random(9))
    state.deal(deck)
    for k in range(16):
        assert state.zones()[f"hand{k % 4}"] >> deck[k] & 1
    assert state.zones()["turn_up"] == 1 << deck[16]
    stock = sum(1 << c for c in deck[17:])
    assert state.zones()["stock"] == stock and len(deck[17:]) == 35 - 16
    assert state.public_view()["table"]["trump_indicator"] == CODES[deck[16]]
    for audience in [state.public_view()] + [state.view(s) for s in range(4)]:
        # (last_trick is the previous deal's final trick until this deal's first is complete)
        assert not current_deal_cards_in(audience) & {c for c in deck[17:]}, \
            "GJ-3.4: the stock is never shown"


def test_joker_indicator_means_no_trump_gj_3_3_gj_3_8():
    state = GAME.new_state({}, first_dealer=3)
    state.deal(deck_for([["AS"], ["KH"], ["X2"], ["QD"]], 3, "X1"))
    view = state.public_view()
    assert view["table"]["trump"] == "NT" and view["table"]["trump_indicator"] == "X1"
    held = sum(state.zones()[f"hand{s}"] for s in range(4))
    assert not held >> card_id("X1") & 1 and held >> card_id("X2") & 1
    play_all(state, "bid:0 bid:0 bid:1 bid:1 AS KH play:X2:low QD")
    assert state.deal_results()[-1]["trump"] == "NT"
    assert state.deal_results()[-1]["taken"] == [1, 0, 0, 0]


def test_nine_card_deal_two_phases_gj_3_5_gj_3_6():
    """Phase A: deck[0..11], three cards each from the forehand; the forehand chooses the trump
    having seen three cards; phase B deck[12..35] continues the rotation; no phase-B card is in
    any hand or view before the choice (GJ-3.6, GJ-11.3)."""
    state = GAME.new_state({"deal_schedule": "nines"}, first_dealer=1)
    deck = shuffled(GAME, random.Random(4))
    state.deal(deck)
    f = 2
    assert state.to_act() == f and state.legal_actions() == ["trump:S", "trump:H", "trump:D", "trump:C", "trump:NT"]
    phase_b = set(deck[12:])
    for s in range(4):
        assert state.zones()[f"hand{s}"] == sum(1 << deck[k] for k in range(12) if (f + k) % 4 == s)
        v = state.view(s)
        assert len(v["hand"]) == 3 and not cards_in(v) & phase_b
        assert v["table"]["trump"] is None and v["table"]["trump_chooser"] == f
    assert state.zones()["undealt"] == sum(1 << c for c in phase_b)
    assert not cards_in(state.public_view()) & phase_b
    state.apply("trump:NT")
    for s in range(4):
        assert state.zones()[f"hand{s}"] == sum(1 << deck[k] for k in range(36) if (f + k) % 4 == s)
    assert "undealt" not in state.zones()
    assert state.public_view()["table"]["trump"] == "NT" and state.public_view()["phase"] == "bidding"
    assert state.to_act() == f


# ---- GJ-4 bidding --------------------------------------------------------------------------------

def test_bids_are_public_and_once_each_gj_4_1_gj_4_6():
    """GJ-4.6: a bid is public at once; GJ-4.1: each seat bids once."""
    state = state_at_deal(3, {}, first_dealer=0)  # deal 3: dealer 2, forehand 3
    state.deal(shuffled(GAME, random.Random(2)))
    state.apply("bid:2", seat=3)
    for s in range(4):
        assert state.view(s)["table"]["bids"] == [None, None, None, 2]
    assert state.public_view()["table"]["bids"] == [None, None, None, 2]
    assert state.to_act() == 0
    with pytest.raises(NotYourTurn):
        state.apply("bid:1", seat=3)  # a bid is never changed (GJ-4.1)


@pytest.mark.parametrize("bids,forbidden", [((2, 2, 3), 2), ((0, 0, 0), 9), ((3, 3, 3), 0), ((4, 3, 3), None)])
def test_dealer_forbidden_bid_nine_cards_gj_4_3(bids, forbidden):
    state = nines_deal(fill_hands({}, 9), "S", bids=bids)
    legal = [int(a[4:]) for a in state.legal_actions()]
    assert legal == [b for b in range(10) if b != forbidden]
    assert state.public_view()["table"]["forbidden_bid"] == forbidden
    assert state.view(0)["table"]["forbidden_bid"] == forbidden


# ---- GJ-5 / GJ-6 joker play and trick winners ----------------------------------------------------

LEAD_HANDS = fill_hands({0: "X1 X2 AS QS", 1: "7S KS AH", 2: "9S 8D", 3: "AD 6H"}, 9,
                        avoid={1: "S", 2: "S", 3: "S"})


def test_joker_lead_actions_and_order_gj_5_1_gj_5_2():
    state = nines_deal(LEAD_HANDS, "H")
    legal = state.legal_actions()
    normal = [a for a in legal if not a.startswith("play:X")]
    assert normal == [f"play:{c}" for c in sorted(LEAD_HANDS[0], key=card_id) if not c.startswith("X")]
    assert legal[len(normal):] == [f"play:{j}:{m}:{s}" for j in ("X1", "X2") for m in ("high", "low") for s in "SHDC"]


@pytest.mark.parametrize("trumpable,winner", [(False, 0), (True, 3)])
def test_high_joker_lead_highest_card_and_trump_obligation_gj_5_4_gj_5_8_gj_6_6(trumpable, winner):
    """Maghali naming S: spade holders give their highest spade; a player without spades must
    trump (GJ-5.8); the joker wins unless option GJ-6.6 lets the trump beat it."""
    state = nines_deal(LEAD_HANDS, "H", {"high_joker_lead_trumpable": trumpable})
    state.apply("play:X1:high:S")
    assert legal_cards(state) == ["KS"]
    state.apply("play:KS")
    assert legal_cards(state) == ["9S"]
    state.apply("play:9S")
    hearts3 = [c for c in sorted(LEAD_HANDS[3], key=card_id) if c[1] == "H"]
    assert legal_cards(state) == hearts3
    state.apply("play:6H")
    assert state.public_view()["last_trick"]["winner"] == winner
    assert state.public_view()["last_trick"]["plays"][0] == {"seat": 0, "card": "X1", "joker_mode": "high",
                                                             "named_suit": "S"}


def test_high_joker_lead_naming_trump_wins_even_with_option_gj_6_6():
    state = nines_deal(LEAD_HANDS, "S", {"high_joker_lead_trumpable": True})
    play_all(state, "play:X1:high:S KS 9S")
    state.apply(state.legal_actions()[0])
    assert state.public_view()["last_trick"]["winner"] == 0


def test_high_joker_lead_leaves_the_followers_joker_legal_gj_5_3_gj_5_4():
    """GJ-5.4 step 2: after a maghali naming S, a spade holder may give its single highest
    spade *plus the jokers of its hand* (GJ-5.3 step 1: a joker is always legal, either mode)."""
    hands = ["X1 AH QH", "X2 KS 7S", "QS JH TH", "9S 8H 7H"]
    state = state_at_deal(3, {}, first_dealer=1)  # deal 3: dealer 3, forehand 0, n = 3
    state.deal(deck_for(dict(enumerate(hands)), 3, "TD"))
    play_all(state, "bid:0 bid:0 bid:0 bid:0 play:X1:high:S")
    assert state.legal_actions() == ["play:KS", "play:X2:high", "play:X2:low"]
    assert R.follow_mask(1 << card_id("KS") | 1 << card_id("7S") | 1 << card_id("X2"), 0,
                         R.HIGH_JOKER_LEAD, _SUIT["D"]) == 1 << card_id("KS") | 1 << card_id("X2")


def test_low_joker_lead_any_card_of_named_suit_gj_5_5_gj_6_3():
    state = nines_deal(LEAD_HANDS, "H")
    state.apply("play:X1:low:S")
    assert legal_cards(state) == ["KS", "7S"]
    play_all(state, "7S 9S")
    state.apply(state.legal_actions()[0])  # seat 3 must trump
    assert state.public_view()["last_trick"]["winner"] == 3


def test_low_joker_lead_nobody_follows_leader_keeps_gj_6_4():
    hands = fill_hands({0: "X1 AS", 1: "KH", 2: "QH", 3: "JH"}, 2, avoid={1: "S", 2: "S", 3: "S"})
    state = state_at_deal(2, {}, first_dealer=2)  # deal 2: dealer 3, forehand 0, n = 2
    state.deal(deck_for(hands, 3, "7D"))  # trump D: nobody holds one
    play_all(state, "bid:0 bid:0 bid:0 bid:0")
    state.apply("play:X1:low:C")
    assert state.legal_actions() == [f"play:{c}" for c in sorted(hands[1], key=card_id)]
    play_all(state, "KH QH JH")
    assert state.public_view()["last_trick"]["winner"] == 0


def test_joker_follow_always_legal_in_both_modes_gj_5_3_gj_5_7():
    hands = fill_hands({0: "AS KS", 1: "QS X2", 2: "JS TS", 3: "9S 8S"}, 2)
    state = state_at_deal(2, {}, first_dealer=2)
    state.deal(deck_for(hands, 3, "AH"))
    play_all(state, "bid:0 bid:0 bid:0 bid:0 AS")
    assert state.legal_actions() == ["play:QS", "play:X2:high", "play:X2:low"]
    play_all(state, "play:X2:low JS 9S")
    assert state.public_view()["last_trick"]["winner"] == 0  # a low joker is ignored (GJ-6.2)
    play_all(state, "KS QS TS 8S")
    assert state.deal_results()[-1]["taken"] == [2, 0, 0, 0]


def test_a_follower_bound_to_trump_may_give_its_joker_instead_gj_5_3():
    """GJ-5.3 step 3: without a card of the led suit, the legal cards are exactly the trumps of
    the hand *plus the jokers* (step 1: a joker is always legal, in either mode)."""
    hands = ["AS KS", "X2 9H", "QS JS", "TS 8S"]
    state = state_at_deal(2, {}, first_dealer=2)  # deal 2: dealer 3, forehand 0, n = 2
    state.deal(deck_for(dict(enumerate(hands)), 3, "AH"))  # trump H
    play_all(state, "bid:0 bid:0 bid:0 bid:0 AS")
    assert state.legal_actions() == ["play:9H", "play:X2:high", "play:X2:low"]


def test_a_hand_holding_all_nine_cards_of_a_suit_gj_5_1_gj_5_3():
    """GJ-1.1: hearts and diamonds have nine cards each, and a nine-card deal may give one
    player all nine: leading, every heart is legal (GJ-5.1); holding all nine diamonds and
    neither the led suit nor a trump, every diamond is (GJ-5.3 step 4)."""
    hearts = "AH KH QH JH TH 9H 8H 7H 6H".split()
    diamonds = "AD KD QD JD TD 9D 8D 7D 6D".split()
    state = nines_deal(fill_hands({0: " ".join(hearts), 1: " ".join(diamonds)}, 9), "S")
    assert legal_cards(state) == hearts
    state.apply("play:AH")
    assert legal_cards(state) == diamonds


def test_two_high_jokers_later_wins_gj_6_1():
    hands = fill_hands({0: "AS", 1: "X1", 2: "AH", 3: "X2"}, 1)
    state = GAME.new_state({}, first_dealer=3)
    state.deal(deck_for(hands, 3, "KH"))
    play_all(state, "bid:0 bid:0 bid:0 bid:0 AS play:X1:high AH play:X2:high")
    assert state.deal_results()[-1]["taken"] == [0, 0, 0, 1]


# ---- GJ-7 scoring through a real deal ------------------------------------------------------------

@pytest.mark.parametrize("khishti,penalty", [("200", -200), ("500", -500), ("100_per_card", -100)])
def test_khishti_options_in_a_deal_gj_7_4(khishti, penalty):
    state = GAME.new_state({"khishti_penalty": khishti}, first_dealer=3)
    state.deal(deck_for([["AS"], ["KS"], ["QS"], ["JS"]], 3, "AH"))
    play_all(state, "bid:0 bid:1 bid:0")
    assert state.legal_actions() == ["bid:1"]  # sum 1 = n - 0: the pass is forbidden
    play_all(state, "bid:1 AS KS QS JS")
    assert state.deal_results()[-1]["scores"] == [10, penalty, 50, penalty]
    assert state.result()["totals"] == [10, penalty, 50, penalty]


def test_all_bid_and_taken_gj_7_1_and_exact_bid_gj_7_3():
    state = state_at_deal(2, {}, first_dealer=2)
    hands = fill_hands({0: "AS KS", 1: "QS JS", 2: "TS 9S", 3: "8S 7S"}, 2)
    state.deal(deck_for(hands, 3, "AH"))
    base = state.result()["totals"]
    play_all(state, "bid:2 bid:0 bid:1")
    play_all(state, "bid:0 AS QS TS 8S KS JS 9S 7S")
    assert state.deal_results()[-1]["scores"] == [200, 50, -200, 50]
    assert state.result()["totals"] == [t + s for t, s in zip(base, [200, 50, -200, 50])]


# ---- GJ-8 pulka settlement in real matches ----------------------------------------------------------

def auto_play_deal(state) -> None:
    while state.to_act() >= 0:
        state.apply(GAME.auto_move(state.view(state.to_act())))


def match_where_seat_makes_every_bid(options: dict, seat: int = 0, seed: int = 0):
    """A whole match played by the auto-move policy in which, deal after deal, the deck is
    picked (among random ones) so that ``seat`` makes its bid: it qualifies in every pulka."""
    rng = random.Random(seed)
    state = GAME.new_state(options, first_dealer=seed % 4)
    while state.to_act() != TERMINAL:
        for _ in range(500):
            deck = shuffled(GAME, rng)
            trial = state.clone()
            trial.deal(deck)
            auto_play_deal(trial)
            r = trial.deal_results()[-1]
            if r["bids"][seat] == r["taken"][seat]:
                break
        else:
            raise AssertionError("no deck found")
        state.deal(deck)
        auto_play_deal(state)
    return state


@pytest.mark.parametrize("options", [
    {"deal_schedule": "nines"},
    {"deal_schedule": "nines", "moshla": "single_premium_only"},
    {"deal_schedule": "nines", "moshla": "off"},
    {"deal_schedule": "nines", "pulka_premium": False},
    {},
])
def test_pulka_premium_and_moshla_in_real_matches_gj_8(options):
    """GJ-8.1 .. GJ-8.6 in play: seat 0 qualifies in every pulka and gets its best deal again;
    the others lose their best (floored at 0) as the ``moshla`` option says; nothing with
    ``pulka_premium = false``. An independent recomputation agrees (check_scores)."""
    state = match_where_seat_makes_every_bid(options)
    check_scores(state)
    opts = GAME.options(options)
    ends = [r for r in state.deal_results() if "premium" in r]
    assert len(ends) == 4
    starts = [0, 8, 12, 20] if opts["deal_schedule"] == "standard" else [0, 4, 8, 12]
    results = state.deal_results()
    for p, r in enumerate(ends):
        deals = results[starts[p]:(starts + [len(results)])[p + 1]]
        best0 = max(d["scores"][0] for d in deals)
        qualified = [all(d["bids"][s] == d["taken"][s] for d in deals) for s in range(4)]
        assert qualified[0]
        if not opts["pulka_premium"]:
            assert r["premium"] == [0, 0, 0, 0] and r["moshla"] == [0, 0, 0, 0]
            continue
        assert r["premium"][0] == best0 > 0
        others = [s for s in range(1, 4) if not qualified[s]]
        apply = opts["moshla"] == "all_others" or (opts["moshla"] == "single_premium_only" and sum(qualified) == 1)
        for s in others:
            best = max(d["scores"][s] for d in deals)
            assert r["moshla"][s] == (-max(0, best) if apply else 0)


# ---- GJ-9 match end --------------------------------------------------------------------------------

def test_match_end_and_shared_places_gj_9():
    state = random_match(GAME, 11, {"deal_schedule": "nines"})
    res = state.result()
    assert res["over"] and res["winners"] == [p for p in range(4) if res["totals"][p] == max(res["totals"])]
    assert state.public_view()["phase"] == "match_over" and state.to_act() == TERMINAL
    with pytest.raises(MatchOver):
        state.apply("bid:0")
    with pytest.raises(MatchOver):
        state.deal(list(GAME.pack))
    assert R.final_winners([300, 500, 500, -20]) == [1, 2]
    assert R.standing([300, 500, 500, -20]) == [3, 1, 1, 4]


# ---- GJ-13 options ---------------------------------------------------------------------------------

def test_option_specs_gj_13():
    specs = {s.name: s for s in GAME.option_specs}
    assert list(specs) == ["deal_schedule", "khishti_penalty", "pulka_premium", "moshla",
                           "high_joker_lead_trumpable", "turn_time_s", "reconnect_grace_s"]
    defaults = GAME.options({})
    assert dict(defaults) == {"deal_schedule": "standard", "khishti_penalty": "200", "pulka_premium": True,
                              "moshla": "all_others", "high_joker_lead_trumpable": False,
                              "turn_time_s": 30, "reconnect_grace_s": 60}
    for spec in specs.values():
        assert spec.help and spec.rules and all(r.startswith("GJ-") for r in spec.rules)
        if spec.values:
            assert spec.values[0] == spec.default
    assert specs["khishti_penalty"].values == ("200", "500", "100_per_card")
    assert specs["moshla"].values == ("all_others", "single_premium_only", "off")


def test_option_specs_cite_and_match_the_rulebook_table_gj_13():
    """GJ-13: each option's rule ids are those of its row in the rulebook table (a spec may cite
    a numbered rule under a section the table names, e.g. GJ-8.1 under GJ-8), and every row's
    default and integer range are the spec's."""
    from tests.shared_paths import shared_dir

    text = (shared_dir() / "rules" / "georgian_joker.md").read_text()
    rows = [line for line in text.split("## 13. Table options")[1].split("## 14.")[0].splitlines()
            if line.startswith("| `")]
    specs = {s.name: s for s in GAME.option_specs}
    assert len(rows) == len(specs)
    for row in rows:
        name, allowed, default, rules = [c.strip() for c in row.strip("|").split("|")][:4]
        spec = specs[name.strip("`")]
        book = [r.strip() for r in rules.split(",")]
        assert all(any(r == b or r.startswith(b + ".") for b in book) for r in spec.rules), name
        assert all(any(r == b or r.startswith(b + ".") for r in spec.rules) for b in book), name
        assert default.strip('`"') == str(spec.default).lower(), name
        if allowed.startswith("integer"):
            assert allowed == f"integer {spec.minimum}\u2013{spec.maximum}", name


@pytest.mark.parametrize("raw,option", [
    ({"khishti_penalty": 200}, "khishti_penalty"),  # JSON string, not a number
    ({"khishti_penalty": "300"}, "khishti_penalty"),
    ({"deal_schedule": "sixes"}, "deal_schedule"),
    ({"pulka_premium": "yes"}, "pulka_premium"),
    ({"moshla": "never"}, "moshla"),
    ({"high_joker_lead_trumpable": 1}, "high_joker_lead_trumpable"),
    ({"turn_time_s": 9}, "turn_time_s"),
    ({"turn_time_s": 121}, "turn_time_s"),
    ({"reconnect_grace_s": 14}, "reconnect_grace_s"),
    ({"reconnect_grace_s": 601}, "reconnect_grace_s"),
    ({"reconnect_grace_s": True}, "reconnect_grace_s"),
    ({"kl_target_score": 500}, "kl_target_score"),
])
def test_bad_options_name_the_option_and_allowed_values_gj_13(raw, option):
    with pytest.raises(InvalidOptions) as info:
        GAME.new_state(raw)
    assert option in info.value.message
    if option != "kl_target_score":
        assert "allowed" in info.value.message
    else:
        assert "deal_schedule" in info.value.message  # the known options are listed


def test_operational_options_accept_their_range_gj_12():
    for t in (10, 120):
        assert GAME.options({"turn_time_s": t})["turn_time_s"] == t
    for g in (15, 600):
        assert GAME.options({"reconnect_grace_s": g})["reconnect_grace_s"] == g
    with pytest.raises(InvalidOptions):
        GAME.new_state({}, first_dealer=4)


def test_the_first_dealer_is_one_of_the_four_seats_gj_2_1_gj_2_2():
    """The first dealer is a seat 0..3 (GJ-2.1, GJ-2.2), as in the other games: not a bool
    (True == 1 for Python), nor a string, nor a seat outside the table."""
    for bad in (4, -1, True, False, "1", 1.0):
        with pytest.raises(InvalidOptions) as info:
            GAME.new_state({}, first_dealer=bad)
        assert info.value.message == f"first_dealer must be a seat 0..3, got {bad!r}"


def test_new_state_without_a_first_dealer_is_dealt_by_seat_0_gj_2_2():
    """Game.new_state's contract (``first_dealer=0``): the session draws the first dealer
    (GJ-2.2) and passes it in; a state made without one is dealt by seat 0 (forehand 1)."""
    state = GAME.new_state({})
    assert state.dealer() == 0 and state.public_view()["table"]["forehand"] == 1

# ---- notation --------------------------------------------------------------------------------------

def test_every_action_id_round_trips_through_notation():
    ids = [c for c in PACK36_JOKERS if c < 36] + list(range(36, 56)) + list(range(60, 65)) + [100 + b for b in range(10)]
    strings = [A.action_str(a) for a in ids]
    assert len(set(strings)) == len(strings)
    assert [A.parse_action(s) for s in strings] == ids
    assert A.action_str(37) == "play:X1:low" and A.action_str(51) == "play:X2:high:C"
    assert A.action_str(64) == "trump:NT" and A.action_str(100) == "bid:0"


@pytest.mark.parametrize("action", [56, 59, 65, 99, -1])
def test_ids_between_the_notation_ranges_name_no_action(action):
    """NOTATION.md section 2: the ids just past the joker plays (56 ..) and the trump choices
    (65 ..) name no action: action_str refuses them rather than printing a card or a strain."""
    with pytest.raises(MalformedAction, match="not a Georgian Joker action id"):
        A.action_str(action)


@pytest.mark.parametrize("action", [True, False, 1.0, "1", None])
def test_action_str_refuses_what_is_no_int_action_id(action):
    """NOTATION.md section 2: only an int names an action; a bool (an int subclass: True
    would print as ``play:KS``), a float or a string is refused, not printed as a card."""
    with pytest.raises(MalformedAction, match="not a Georgian Joker action id"):
        A.action_str(action)


def test_the_largest_bid_notation_round_trips_and_the_next_id_names_nothing():
    """NOTATION.md section 2 (``bid:3``): the notation reads bids of up to six digits, so
    action_str prints every such bid (``bid:999999``, its parse round-trips) and refuses the
    next id, which no notation string parses to."""
    top = A.BID_BASE + 999_999
    assert A.action_str(top) == "bid:999999" and A.parse_action("bid:999999") == top
    with pytest.raises(MalformedAction, match="a bid is"):
        A.parse_action("bid:1000000")
    with pytest.raises(MalformedAction, match="not a Georgian Joker action id"):
        A.action_str(top + 1)


@pytest.mark.parametrize("text,fragment", [
    ("play:X1", "needs a mode"), ("play:X2:up", "mode"), ("play:X1:high:NT", "names one suit"),
    ("play:X1:high:S:x", "names one suit"), ("play:X1:high:SH", "names one suit"),
    ("play:X2:low:", "names one suit"), ("play:X1:high:s", "names one suit"),
    ("play:X2:low:Z", "names one suit"), ("play:AS:high", "only a joker"), ("play:ZZ", "not a card"),
    ("play:", "not a card"), ("bid:-1", "a bid is"), ("bid:03", "a bid is"), ("bid:", "a bid is"),
    ("bid:1.5", "a bid is"), ("trump:N", "trump is one of"), ("trump:s", "trump is one of"),
    ("PLAY:AS", "not a Georgian Joker action"), ("pass", "not a Georgian Joker action"), ("", "not a Georgian"),
    ("play:6C", "not in the Georgian Joker pack"),
])
def test_malformed_actions(text, fragment):
    """NOTATION.md section 2: a malformed string is refused with its reason; a joker lead names
    exactly one suit letter S, H, D or C in upper case (GJ-5.2): a lower-case or unknown letter
    is malformed, and so are ``SH`` and an empty suit, although the string of suit letters
    ``SHDC`` contains both."""
    with pytest.raises(MalformedAction, match=fragment):
        A.parse_action(text)


# ---- bad input: specific errors, state unchanged (GJ-4.5, GJ-5.10) ---------------------------------

def test_bad_input_errors_leave_the_state_unchanged():
    state = seed_deal()
    before = snapshot(state)
    cases = [
        ("bid:4", IllegalAction, "a bid is 0 .. 3"),
        ("play:AS", IllegalAction, "time to bid"),
        ("trump:S", IllegalAction, "time to bid"),
        ("bid:x", MalformedAction, "a bid is"),
    ]
    for text, error, fragment in cases:
        with pytest.raises(error, match=fragment):
            state.apply(text)
        assert snapshot(state) == before, text
    with pytest.raises(NotYourTurn):
        state.apply("bid:0", seat=2)
    play_all(state, "bid:1 bid:0 bid:1")
    before = snapshot(state)
    with pytest.raises(IllegalAction, match="may not bid 1.*GJ-4.3"):
        state.apply("bid:1")
    assert snapshot(state) == before
    play_all(state, "bid:0 AS 8S QS TS KH 9H")
    before = snapshot(state)
    for text, error, fragment in [
        ("play:X1", MalformedAction, "needs a mode"),
        ("play:X1:high:S", IllegalAction, "follows names no suit"),
        ("play:QS", IllegalAction, "not in your hand"),
        ("play:X2:high", IllegalAction, "X2 is not in your hand"),
        ("bid:1", IllegalAction, "time to play"),
        ("trump:S", IllegalAction, "time to play"),  # no trump choice while playing (GJ-3.5, GJ-4.5)
    ]:
        with pytest.raises(error, match=fragment):
            state.apply(text)
        assert snapshot(state) == before, text
    state.apply("play:X1:high")
    before = snapshot(state)
    with pytest.raises(IllegalAction, match="must play a trump D"):
        state.apply("play:8C")
    assert snapshot(state) == before


def test_a_forbidden_bid_of_all_the_tricks_is_refused_by_gj_4_3_not_as_out_of_range():
    """GJ-4.2 / GJ-4.3 / GJ-4.5: after three passes in a three-card deal the dealer may not bid
    3 (the bids would add up to n); 3 is within 0 .. n, so the refusal names GJ-4.3, and only
    a bid above n is out of range (GJ-4.2)."""
    state = seed_deal()
    play_all(state, "bid:0 bid:0 bid:0")
    assert state.legal_actions() == ["bid:0", "bid:1", "bid:2"]
    before = snapshot(state)
    with pytest.raises(IllegalAction, match=r"^bid:3: the dealer may not bid 3: .*\(GJ-4\.3\)$"):
        state.apply("bid:3")
    with pytest.raises(IllegalAction, match=r"^bid:4: a bid is 0 \.\. 3 in this 3-card deal \(GJ-4\.2\)$"):
        state.apply("bid:4")
    assert snapshot(state) == before


def test_before_the_trump_is_declared_only_a_trump_choice_is_accepted_gj_3_5():
    """GJ-3.5 / GJ-4.5: in a nine-card deal the forehand first declares the trump; a bid or
    a card (even one of the three in hand) is refused saying so, and changes nothing."""
    state = GAME.new_state({"deal_schedule": "nines"}, first_dealer=3)
    state.deal(deck_for(fill_hands({0: "AS KH 7C"}, 9), 3))
    before = snapshot(state)
    for text in ("bid:1", "play:AS", "play:X1:high:S"):
        with pytest.raises(IllegalAction, match=r"the forehand must choose the trump now .*\(GJ-3\.5\)"):
            state.apply(text)
        assert snapshot(state) == before, text

def test_follow_suit_and_joker_lead_messages():
    state = nines_deal(LEAD_HANDS, "H")
    before = snapshot(state)
    with pytest.raises(IllegalAction, match="joker lead names a suit"):
        state.apply("play:X1:high")
    assert snapshot(state) == before
    state.apply("play:X1:high:S")
    with pytest.raises(IllegalAction, match="highest S.*GJ-5.4"):
        state.apply("play:7S")
    state.apply("play:KS")
    state.apply("play:9S")
    with pytest.raises(IllegalAction, match="must play a trump H"):
        state.apply("play:AD")
    state2 = nines_deal(LEAD_HANDS, "H")
    state2.apply("play:AS")
    with pytest.raises(IllegalAction, match="must follow suit S"):
        state2.apply("play:AH")


def test_refusals_name_the_card_as_written_gj_5_10():
    """GJ-5.10 (GJ-4.5: a rejected action is explained): a refused play names its card by its
    code, ``X1`` / ``X2`` for a joker (never the joker action's mode), a normal card by its own
    code; the joker lead's hint spells the accepted form with that joker."""
    state = nines_deal(LEAD_HANDS, "H")
    with pytest.raises(IllegalAction, match=r"play:X1:high: a joker lead names a suit: "
                                            r"play:X1:high:S \(or H, D, C\)"):
        state.apply("play:X1:high")
    with pytest.raises(IllegalAction, match=r"play:X2:low: a joker lead names a suit: play:X2:low:S "):
        state.apply("play:X2:low")
    state.apply("play:AS")
    before = snapshot(state)
    for text, code in (("play:X1:high", "X1"), ("play:X2:low", "X2"), ("play:QS", "QS")):
        with pytest.raises(IllegalAction, match=rf"^{text}: {code} is not in your hand$"):
            state.apply(text)
        assert snapshot(state) == before, text


def test_deal_required_and_bad_deck():
    state = GAME.new_state({})
    with pytest.raises(DealRequired):
        state.apply("bid:0")
    from engine_service.rules import InvalidDeck
    deck = [CODES[c] for c in PACK36_JOKERS]
    with pytest.raises(InvalidDeck):
        state.deal(deck[:-1] + ["6S"])
    state.deal(deck)
    with pytest.raises(InvalidDeck):
        state.deal(deck)


# ---- draw for the first dealer (GJ-2.2, GJ-A10) -----------------------------------------------------

def test_draw_first_dealer_is_the_seat_receiving_x1():
    deck = [CODES[c] for c in PACK36_JOKERS]
    for pos in range(36):
        d = [c for c in deck if c != "X1"]
        d.insert(pos, "X1")
        assert GAME.draw_first_dealer([card_id(c) for c in d]) == pos % 4
        assert GAME.draw_first_dealer(d) == pos % 4
    counts = Counter(GAME.draw_first_dealer(shuffled(GAME, random.Random(s))) for s in range(4000))
    assert all(900 < counts[s] < 1100 for s in range(4))


# ---- GJ-12.2 auto-move policy -------------------------------------------------------------------------

@pytest.mark.parametrize("hand,trump", [
    (["AS", "KH", "QH"], "H"),  # most cards
    (["KS", "AH", "7D"], "H"),  # tie 1-1-1: the highest card
    (["AS", "AH", "7D"], "S"),  # still tied: S before H
    (["X1", "X2", "6D"], "D"),  # jokers do not count
    (["9C", "TC", "AS"], "C"),
    (["X1", "8C", "8D"], "D"),
])
def test_auto_trump_gj_12_2(hand, trump):
    assert auto_trump(hand) == trump


def test_the_pure_scoring_functions_refuse_an_unknown_option_gj_7_4_gj_8_3():
    """GJ-7.4 (``khishti_penalty``) and GJ-8.3 (``moshla``): the pure rules take the option's
    value as a string; one outside the rulebook's list is an explicit error, never a silent
    penalty of ``None`` or a pulka settled without moshla."""
    assert [R.khishti_penalty(o, 3) for o in R.KHISHTI_PENALTIES] == [200, 500, 300]
    with pytest.raises(ValueError, match="khishti_penalty"):
        R.khishti_penalty("300", 3)
    with pytest.raises(ValueError, match="moshla"):
        R.settle_pulka([[50, 60, 70, 80]], [[True, False, False, False]], True, "sometimes")


def test_settle_pulka_defaults_to_the_rulebooks_premium_and_moshla_gj_8_1_gj_8_3():
    """GJ-8.1 .. GJ-8.3 with the defaults of ``pulka_premium`` (on) and ``moshla``
    (all_others): called without those arguments, the pure settlement pays the premium (the
    qualifier's best deal score) and cancels every other seat's best positive deal."""
    scores = [[100, 20, -200, 50], [150, 60, 30, 40]]
    made = [[True, False, False, True], [True, False, True, False]]
    assert R.settle_pulka(scores, made) == ([0], [150, 0, 0, 0], [0, -60, -30, -50])


def test_an_auto_move_failure_names_no_card():
    """GJ-12.2 always has an answer; were the view ever to offer none of its candidates, the
    error (which the session layer logs as ``session_task_failed``) must not list the seat's
    cards, which no log line may hold."""
    with pytest.raises(ValueError) as err:
        GAME.auto_move({"legal": ["play:X1:high:S", "play:X2:high:H"], "hand": ["X1", "X2"]})
    assert "X1" not in str(err.value) and "2 legal actions" in str(err.value)


def test_an_auto_move_needs_the_view_of_the_seat_to_act_gj_11_7():
    """GJ-11.7 / GJ-12.2: the auto-move reads the acting seat's view; a view without legal
    actions (a spectator's, another seat's) is refused by name, not indexed blindly."""
    state = seed_deal()
    for view in (state.public_view(), state.view(1)):
        with pytest.raises(ValueError, match="needs the view of the seat to act"):
            GAME.auto_move(view)

def test_auto_move_bid_and_cards_gj_12_2():
    state = seed_deal()
    assert GAME.auto_move(state.view(0)) == "bid:0"
    play_all(state, "bid:1 bid:1 bid:1")
    assert GAME.auto_move(state.view(3)) == "bid:1"  # 0 is forbidden (sum 3 = n)
    state.apply("bid:1")
    assert GAME.auto_move(state.view(0)) == "play:7C"  # lowest rank
    play_all(state, "AS")
    assert GAME.auto_move(state.view(1)) == "play:8S"
    play_all(state, "8S")
    assert GAME.auto_move(state.view(2)) == "play:QS"  # a normal card before the joker
    # jokers only: X1 low, naming S when leading
    hands = fill_hands({0: "X1 X2", 1: "AS KS", 2: "QS JS", 3: "TS 9S"}, 2)
    s2 = state_at_deal(2, {}, first_dealer=2)
    s2.deal(deck_for(hands, 3, "AH"))
    play_all(s2, "bid:0 bid:0 bid:0 bid:0")
    assert GAME.auto_move(s2.view(0)) == "play:X1:low:S"
    play_all(s2, "play:X1:high:S AS QS TS")
    assert GAME.auto_move(s2.view(0)) == "play:X2:low:S"
    nines = GAME.new_state({"deal_schedule": "nines"}, first_dealer=3)
    nines.deal(deck_for(fill_hands({0: "KS AH 7D"}, 9), 3))
    assert GAME.auto_move(nines.view(0)) == "trump:H"


def test_auto_move_ties_break_by_suit_order():
    hands = fill_hands({0: "9S 9H 9D 9C AS"}, 5, exclude="7D")
    state = state_at_deal(5, {}, first_dealer=3)  # deal 5: dealer 3, forehand 0
    state.deal(deck_for(hands, 3, "7D"))
    play_all(state, "bid:0 bid:0 bid:0 bid:0")
    assert GAME.auto_move(state.view(0)) == "play:9S"


# ---- GJ-6.7: the joker-case summary, row by row (trump diamonds, seat 0 leads) ------------------

_SUIT = {"S": 0, "H": 1, "D": 2, "C": 3}


def _trick(plays: str):
    """``(seat, card, mode, named)`` tuples of R.trick_winner from "7S X1:high X2:low:H ..."."""
    out = []
    for seat, p in enumerate(plays.split()):
        card, *rest = p.split(":")
        mode = {"high": 0, "low": 1}[rest[0]] if rest else -1
        named = _SUIT[rest[1]] if len(rest) > 1 else -1
        out.append((seat, card_id(card), mode, named))
    return out


# row of the GJ-6.7 table -> (plays, winner by default, winner with high_joker_lead_trumpable)
GJ_6_7_ROWS = [
    ("normal lead, no joker: highest trump", "7S 8S 9D AS", 2, 2),
    ("normal lead, no joker, no trump: highest of the lead suit", "7S AS 8S 9H", 1, 1),
    ("normal lead, one high joker", "7S X1:high AS 9D", 1, 1),
    ("normal lead, two high jokers: the later", "7S X1:high X2:high 9D", 2, 2),
    ("normal lead, high then low joker: the high one", "7S X1:high X2:low AD", 1, 1),
    ("normal lead, low then high joker: the high one", "7S X1:low X2:high AD", 2, 2),
    ("normal lead, low joker only: as if absent, trump", "7S X1:low AS 9D", 3, 3),
    ("normal lead, low joker only: as if absent, lead suit", "7S X1:low AS 8H", 2, 2),
    ("high joker lead naming Q != T, nothing else: the joker (option: the trump)", "X1:high:S AS 9D 8S", 0, 2),
    ("high joker lead naming the trump: the joker either way", "X1:high:D AD 9D 8S", 0, 0),
    ("high joker lead, second joker high: the second", "X1:high:S X2:high AS 9D", 1, 1),
    ("high joker lead naming Q, second low, a trump: the leader (option: the trump)", "X1:high:S X2:low AS 9D", 0, 3),
    ("high joker lead naming Q, second low, no trump: the leader", "X1:high:S X2:low AS 8H", 0, 0),
    ("low joker lead naming Q: highest trump", "X1:low:S AS 9D 8S", 2, 2),
    ("low joker lead naming Q: else highest Q", "X1:low:S 8S AS 7H", 2, 2),
    ("low joker lead naming Q: else the leader", "X1:low:S 7H 8H 9C", 0, 0),
    ("low joker lead, second joker high: the second", "X1:low:S X2:high AS 9D", 1, 1),
    ("low joker lead, second low: highest trump", "X1:low:S X2:low AS 9D", 3, 3),
    ("low joker lead, second low: else highest Q", "X1:low:S X2:low 8S AS", 3, 3),
    ("low joker lead, second low: else the leader", "X1:low:S X2:low 7H 8C", 0, 0),
]


@pytest.mark.parametrize("row,plays,default,trumpable", GJ_6_7_ROWS, ids=[r[0] for r in GJ_6_7_ROWS])
def test_gj_6_7_joker_cases_summary(row, plays, default, trumpable):
    """GJ-6.7 (the summary of GJ-6.1 to GJ-6.6): every row of the joker-case table, trump D,
    under both values of ``high_joker_lead_trumpable``."""
    trump = _SUIT["D"]
    assert R.trick_winner(_trick(plays), trump) == default
    assert R.trick_winner(_trick(plays), trump, False) == default
    assert R.trick_winner(_trick(plays), trump, True) == trumpable


def test_gj_6_7_joker_cases_in_a_played_trick():
    """GJ-6.7, last row of the high-joker lead: in a real deal (deal 4, trump D) a high joker
    lead naming hearts followed by a low joker keeps the trick although a trump was played —
    unless high_joker_lead_trumpable (GJ-6.6)."""
    for trumpable, winner in ((False, 0), (True, 2)):
        state = state_at_deal(4, {"high_joker_lead_trumpable": trumpable})
        assert state.dealer() == 3
        hands = ["X1 7S 8S 9S", "X2 AS KS QS", "9D 8D 7C 9C", "8H 7H 6H JS"]
        state.deal(deck_for(dict(enumerate(hands)), dealer=3, indicator="TD"))
        for _ in range(4):
            state.apply(GAME.auto_move(state.view(state.to_act())))
        assert state.to_act() == 0
        for action in ("play:X1:high:H", "play:X2:low", "play:9D", "play:8H"):
            state.apply(action)
        assert state.public_view()["last_trick"]["winner"] == winner, trumpable


def test_gj_0_2_card_codes_jokers_X1_X2_and_NT():
    """GJ-0.2: normal cards are rank + suit (A K Q J T 9 8 7 6; S H D C), the jokers X1 and X2;
    "no trump" is NT. The pack is these 36 codes without 6S and 6C (GJ-1)."""
    from engine_service.rules.cards import card_code
    codes = sorted(card_code(c) for c in GAME.pack)
    assert codes == sorted([r + s for r in "AKQJT9876" for s in "SHDC" if r + s not in ("6S", "6C")] + ["X1", "X2"])
    state = GAME.new_state({"deal_schedule": "nines"}, first_dealer=0)
    state.deal([CODES[c] for c in GAME.pack])
    assert "trump:NT" in state.legal_actions()
    state.apply("trump:NT")
    assert state.public_view()["table"]["trump"] == "NT"


@pytest.mark.parametrize("options", [{}, {"deal_schedule": "nines"}])
def test_the_states_follower_legal_cards_are_rules_follow_mask_gj_5_3_to_gj_5_5(options):
    """The state computes a follower's legal cards on its own fast path; rules.follow_mask
    (which the vector files check) states GJ-5.3 .. GJ-5.5 and must give the same cards at
    every follower decision of whole random matches."""
    from engine_service.rules.games.georgian_joker.state import PLAYING
    checked = []

    def check(state):
        if state.to_act() >= 0 and state.phase == PLAYING and state.nplayed:
            hand = state.hands[state.cur]
            legal = 0
            for a in state.legal_ids():
                legal |= 1 << A.ACTION_CARD[a]
            assert legal == R.follow_mask(hand, state.demand, state.lead_kind, state.trump)
            checked.append(state.lead_kind)

    for seed in range(3):
        random_match(GAME, seed, options, on_step=check)
    assert set(checked) == {R.NORMAL_LEAD, R.HIGH_JOKER_LEAD, R.LOW_JOKER_LEAD}


def test_every_action_is_recorded_as_itself_there_is_no_private_choice_to_hide():
    """State.public_action (rules/game.py): the id the session publishes and stores for an
    action. Georgian Joker has no choice the rules keep private (its bids, trump and plays are
    all public, GJ-3.5, GJ-4, GJ-5), so every legal action of a deal is recorded as it is."""
    state = seed_deal()
    while state.to_act() >= 0:
        legal = state.legal_ids()
        assert [state.public_action(a) for a in legal] == legal
        state.apply_id(legal[-1])
    assert state.to_act() == CHANCE
