"""Independent rules audit of the Klaberjass engine against ``klaberjass.md`` and NOTATION.md.

Two kinds of tests:

* **differential**: whole random matches replayed in lock-step through the engine and through
  :mod:`.klaberjass_oracle`, a plain model written from the rulebook alone; every step compares
  the seat to act and the legal set (NOTATION 3 compares sets), every deal its NOTATION 4
  result, every match its ``totals`` / ``winners`` / ``over``, and the auto-move policy
  (NOTATION 5), under the defaults and under every table option of section 11;
* **scenarios**: decks written out card by card so that the dealing procedure of KL-2.4 /
  KL-2.8 produces chosen hands, one rule (id in the test name) per test.

Seats are match seats (NOTATION 1). :func:`deck_for` builds decks with its own index
arithmetic (not the shared helper) so that a mistake in dealing cannot hide on both sides.
"""

from __future__ import annotations

import random

import pytest

from engine_service.rules import CHANCE, TERMINAL, get_game, transcript
from engine_service.rules.cards import card_id

from .klaberjass_oracle import PACK, Model

GAME = get_game("klaberjass")


# ---- deck construction (KL-2.4, KL-2.8, KL-2.9) ---------------------------------------------

def deal_positions(packet: int = 3) -> tuple[list[int], list[int]]:
    """Deck indices of the cards of the player served first and of the other player: first deal
    (KL-2.4) then second deal (KL-2.8). D[12] is the turn-up, D[31] the information card."""
    if packet == 3:
        first, second = [0, 1, 2, 6, 7, 8], [3, 4, 5, 9, 10, 11]
    else:
        first, second = [0, 1, 4, 5, 8, 9], [2, 3, 6, 7, 10, 11]
    return first + [13, 15, 17], second + [14, 16, 18]


def deck_for(dealer_hand: str, elder_hand: str, turn_up: str, info: str | None = None,
             packet: int = 3, elder_first: bool = False) -> list[str]:
    """A deck that gives these 9-card hands: the first six cards listed are dealt in the first
    deal, the last three in the second deal (only reached after a take or name)."""
    dealer, elder = dealer_hand.split(), elder_hand.split()
    assert len(dealer) == 9 and len(elder) == 9
    first, second = (elder, dealer) if elder_first else (dealer, elder)
    pos_first, pos_second = deal_positions(packet)
    deck: list[str | None] = [None] * 32
    for i, c in zip(pos_first, first):
        deck[i] = c
    for i, c in zip(pos_second, second):
        deck[i] = c
    deck[12] = turn_up
    used = set(dealer) | set(elder) | {turn_up}
    rest = [c for c in PACK if c not in used and c != info]
    if info is not None:
        deck[31] = info
    for i in range(32):
        if deck[i] is None:
            deck[i] = rest.pop(0)
    assert sorted(deck) == sorted(PACK), deck
    return deck  # type: ignore[return-value]


def start(dealer_hand, elder_hand, turn_up, *, dealer=1, options=None, info=None):
    """Engine state and model after the first deal of a match whose first dealer is ``dealer``."""
    opts = options or {}
    deck = deck_for(dealer_hand, elder_hand, turn_up, info, packet=opts.get("kl_first_deal_packet", 3),
                    elder_first=opts.get("kl_deal_first_to") == "elder")
    state = GAME.new_state(opts, first_dealer=dealer)
    model = Model(opts, first_dealer=dealer)
    state.deal(deck)
    model.deal(deck)
    return state, model


def step(state, model, action, legal=None):
    """Apply one action to both after checking seat and legal set; ``legal`` (a list) also
    checks the engine's documented order."""
    assert state.to_act() == model.to_act
    actual = state.legal_actions()
    assert set(actual) == model.legal(), (actual, sorted(model.legal()))
    if legal is not None:
        assert actual == legal
    state.apply(action)
    model.apply(action)


def run(state, model, actions):
    for a in actions:
        step(state, model, a)


def last_result(state, model):
    r = state.deal_results()[-1]
    assert r == model.results[-1]
    return r


# ---- differential: random matches, engine vs the model ----------------------------------------

OPTION_CASES = [
    {},
    {"kl_deal_first_to": "elder"},
    {"kl_first_deal_packet": 2},
    {"kl_first_deal_packet": 2, "kl_deal_first_to": "elder"},
    {"kl_dealer_rotation": "same_dealer"},
    {"kl_throw_in_redealer": "other"},
    {"kl_schmeiss": True},
    {"kl_dix_requires_turnup_trump": True},
    {"kl_dix_window": "before_melds"},
    {"kl_split_runs": True},
    {"kl_sequence_compare": "length"},
    {"kl_winner_sequences": "best_plus_one"},
    {"kl_bella_order": "any"},
    {"kl_bella_order": "king_first"},
    {"kl_trump_kqj_bonus": False},
    {"kl_must_overtrump": False},
    {"kl_ten_value": 0},
    {"kl_score_scope": "trick_points"},
    {"kl_target_score": 120},
    {"kl_target_score": 120, "kl_simultaneous_target": "deal_winner"},
    {"kl_meld_declaration": "optional"},
    {"kl_reveal_scored_melds": "cards"},
    {"kl_bella_announcement": "required"},
    {"kl_bella_announcement": "required", "kl_bella_order": "king_first"},
    {"kl_bella_announcement": "required", "kl_bella_order": "any"},
    {"kl_split_runs": True, "kl_sequence_compare": "length", "kl_winner_sequences": "best_plus_one",
     "kl_score_scope": "trick_points", "kl_target_score": 250},
]


def random_match(options, seed, pass_bias=0.45):
    """Play a whole match in lock-step; returns (state, model, number of steps)."""
    rng = random.Random(seed)
    first = rng.randrange(2)
    state = GAME.new_state(options, first_dealer=first)
    model = Model(options, first_dealer=first)
    steps = 0
    while True:
        who = state.to_act()
        if who == TERMINAL:
            assert model.over and model.to_act is None
            break
        if who == CHANCE:
            assert model.to_act is None and not model.over
            assert state.dealer() == model.dealer, "expect.dealer"
            deck = PACK[:]
            rng.shuffle(deck)
            state.deal(deck)
            model.deal(deck)
            continue
        assert who == model.to_act
        legal = state.legal_actions()
        assert len(legal) == len(set(legal)), legal
        assert set(legal) == model.legal(), (steps, legal, sorted(model.legal()))
        if steps % 7 == 0:
            assert GAME.auto_move(state.view(who)) == model.auto_move() or not _policy_defined(legal)
        if "pass" in legal and rng.random() < pass_bias:
            action = "pass"
        elif "exchange" in legal and rng.random() < 0.5:
            action = "exchange"
        else:
            action = rng.choice(legal)
        state.apply(action, who)
        model.apply(action)
        steps += 1
        done = len(model.results)
        assert len(state.deal_results()) == done
        if done and model.to_act is None:
            assert state.deal_results()[-1] == model.results[-1]
            assert state.result() == model.result()
    assert state.deal_results() == model.results
    assert state.result() == model.result()
    return state, model, steps


def _policy_defined(legal):
    """NOTATION 5 names the policy for auction, exchange windows and plays only."""
    return any(a in ("pass", "keep") or a.startswith("play:") for a in legal)


@pytest.mark.parametrize("options", OPTION_CASES, ids=lambda o: ",".join(f"{k}={v}" for k, v in o.items()) or "defaults")
def test_differential_random_matches_against_the_rulebook_model(options):
    """Every legal set, deal result and match result of random matches equals the model's."""
    n = 3 if options.get("kl_target_score", 500) >= 250 else 6
    for seed in range(n):
        state, model, _ = random_match(options, seed * 7919 + len(options))
        data = transcript.export(state)
        diff, _ = transcript.check(data)
        assert diff is None, str(diff)


def test_differential_covers_every_outcome_and_simultaneous_target():
    """The random matches above must actually reach KL-9.2, 9.3, 9.4, thrown-in deals and both
    players at the target (KL-10.2): run low-target matches and count what happened."""
    seen = set()
    for seed in range(400):
        opts = {"kl_target_score": 100, "kl_simultaneous_target": ("higher_total", "deal_winner")[seed % 2],
                "kl_score_scope": ("deal_total", "trick_points")[seed // 2 % 2]}
        state, model, _ = random_match(opts, 100000 + seed)
        for r in model.results:
            if r["thrown_in"]:
                seen.add("thrown_in")
                continue
            m = r["maker"]
            tot = [r["melds"][i] + r["bonuses"][i] + r["card_points"][i] for i in (0, 1)]
            seen.add("maker_more" if tot[m] > tot[1 - m] else "equal" if tot[m] == tot[1 - m] else "opponent_more")
        if all(t >= 100 for t in model.totals):
            seen.add("both_reached")
        if len(seen) == 5:
            break
    assert seen == {"thrown_in", "maker_more", "equal", "opponent_more", "both_reached"}, seen


# ---- scenarios: dealing and seats (KL-2, NOTATION 1) ----------------------------------------

@pytest.mark.parametrize("options", [{}, {"kl_first_deal_packet": 2}, {"kl_deal_first_to": "elder"},
                                     {"kl_first_deal_packet": 2, "kl_deal_first_to": "elder"}],
                         ids=["packets_of_3", "packets_of_2", "elder_first", "packets_of_2_elder_first"])
@pytest.mark.parametrize("dealer", [0, 1])
def test_kl_2_4_2_5_2_8_2_9_dealing_by_deck_index(options, dealer):
    """KL-2.4 (packets, who is served first), KL-2.5 turn-up D[12], KL-2.8 second deal one at a
    time, KL-2.9 information card D[31]; match seats (the dealer may be seat 0)."""
    deck = PACK[:]
    random.Random(dealer * 10 + len(options)).shuffle(deck)
    state = GAME.new_state(options, first_dealer=dealer)
    state.deal(deck)
    elder = 1 - dealer
    first = elder if options.get("kl_deal_first_to") == "elder" else dealer
    pos_first, pos_second = deal_positions(options.get("kl_first_deal_packet", 3))
    want = {first: {deck[i] for i in pos_first}, 1 - first: {deck[i] for i in pos_second}}
    for seat in (0, 1):
        assert set(state.view(seat)["hand"]) == {c for c in want[seat] if deck.index(c) < 12}
    assert state.public_view()["table"]["turn_up"] == deck[12]
    assert state.public_view()["table"]["info_card"] is None
    assert state.to_act() == elder and state.legal_actions() == ["take", "pass"]
    state.apply("take")
    for seat in (0, 1):
        assert set(state.view(seat)["hand"]) == want[seat]
    assert state.public_view()["table"]["info_card"] == deck[31]
    assert state.zones()["stock"] == sum(1 << card_id(c) for c in deck[19:31])  # KL-2.10


# ---- scenarios: the auction and thrown-in deals (KL-3, KL-2.2) --------------------------------

def test_kl_3_1_3_5_four_passes_throw_in_same_dealer_deals_again():
    """KL-3.1 legal calls per state (R2 names the three other suits), KL-3.5 the deal is void:
    result exactly ``{"thrown_in": true}``, no score, KL-2.2 the same dealer deals the next deal,
    whose auction starts again with the elder."""
    state, model = start("KS 9S JH 9H AH TD 8D 7D 8C", "AS TS 7S QH AD KD QC JC 9C", "8H", dealer=0)
    step(state, model, "pass", ["take", "pass"])
    step(state, model, "pass", ["take", "pass"])
    step(state, model, "pass", ["name:S", "name:D", "name:C", "pass"])
    assert state.to_act() == 0
    step(state, model, "pass", ["name:S", "name:D", "name:C", "pass"])
    assert state.to_act() == CHANCE and state.deal_results() == [{"thrown_in": True}]
    assert state.result() == {"totals": [0, 0], "winners": [], "over": False}
    assert state.dealer() == 0
    state.deal(PACK)
    assert state.to_act() == 1 and state.view(1)["deal_number"] == 1


def test_kl_a6_throw_in_redealer_other_and_a5_same_dealer_after_a_played_deal():
    """kl_throw_in_redealer = other passes the deal after four passes; kl_dealer_rotation =
    same_dealer keeps it after a played deal (KL-2.2)."""
    state = GAME.new_state({"kl_throw_in_redealer": "other", "kl_dealer_rotation": "same_dealer"}, first_dealer=1)
    state.deal(PACK)
    for _ in range(4):
        state.apply("pass")
    assert state.dealer() == 0
    state.deal(PACK)
    state.apply("take")
    while state.to_act() >= 0:
        state.apply(GAME.auto_move(state.view(state.to_act())))
    assert state.dealer() == 0 and len(state.deal_results()) == 2


# ---- scenarios: the dix (KL-4, NOTATION 2.1) --------------------------------------------------

# Trump hearts after ``take`` of the turn-up 8H. The elder holds the dix 7H.
DIX_ELDER = "7H AS TS 7S AD KD QC JC 9C"
NO_DIX = "KS 9S JH 9H AH TD 8D 7D 8C"


def test_notation_2_1_window_elder_first_holder_exchange_keep_other_keep_only():
    """NOTATION 2.1 / KL-4.2: both players have one window step, the elder first; the holder of
    the dix has ``exchange``, ``keep``; the other only ``keep`` — also when the holder is the
    dealer and acts second."""
    state, model = start(NO_DIX, DIX_ELDER, "8H", dealer=1)
    step(state, model, "take")
    assert state.to_act() == 0
    step(state, model, "keep", ["exchange", "keep"])
    step(state, model, "keep", ["keep"])
    assert state.public_view()["phase"] == "play" and state.to_act() == 0

    state, model = start(DIX_ELDER, NO_DIX, "8H", dealer=0)  # seat 0 deals and holds the dix
    step(state, model, "pass")
    step(state, model, "take")
    assert state.to_act() == 1
    step(state, model, "keep", ["keep"])
    step(state, model, "exchange", ["exchange", "keep"])
    assert "8H" in state.view(0)["hand"] and "7H" not in state.view(0)["hand"]
    assert state.public_view()["table"]["turn_up"] == "7H"  # KL-4.3: the dix lies face up
    assert state.to_act() == 1  # the elder leads (KL-6.1)


@pytest.mark.parametrize("turn_up,info", [("7H", None), ("8H", "7H")], ids=["turn_up_is_dix", "dix_is_info_card"])
def test_kl_4_4_nobody_holds_an_exchangeable_dix_both_steps_keep(turn_up, info):
    """KL-4.4 and NOTATION 2.1: the dix is the turn-up, or it stays in the stock (here it is the
    information card): both window steps are ``keep`` only, and no ``exchange`` in play."""
    elder = {"7H": "8S AS TS 7S AD KD QC JC 9C", "8H": "QS AS TS 7S AD KD QC JC 9C"}[turn_up]
    state, model = start(NO_DIX, elder, turn_up, dealer=1, info=info)
    step(state, model, "take")
    step(state, model, "keep", ["keep"])
    step(state, model, "keep", ["keep"])
    assert "exchange" not in state.legal_actions()


def test_kl_4_2_exchange_in_play_listed_last_does_not_end_the_turn_and_lapses_with_the_dix():
    """KL-4.2 / NOTATION 2.1: during play ``exchange`` is legal at each of the holder's turns,
    listed after his plays; it does not end the turn; it disappears once the dix is played."""
    state, model = start(NO_DIX, DIX_ELDER, "8H", dealer=1)
    run(state, model, ["take", "keep", "keep"])
    legal = state.legal_actions()
    assert legal[-1] == "exchange" and legal[:-1] == ["play:AS", "play:TS", "play:7S", "play:7H", "play:AD",
                                                       "play:KD", "play:QC", "play:JC", "play:9C"]
    step(state, model, "play:7H")  # the holder plays the dix itself
    assert "exchange" not in state.legal_actions()  # the dealer never holds it
    step(state, model, "play:9H")  # 9H (menel) beats 7H
    assert state.to_act() == 1
    step(state, model, "play:KS")
    assert "exchange" not in state.legal_actions()  # the dix is gone: no exchange for anyone


def test_kl_4_2_exchange_as_follower_then_the_turn_up_is_playable():
    """KL-4.2: the follower exchanges at his turn, acts again, and the turn-up he took is part
    of his legal set at once (here it is his only heart, so he must play it on a heart lead)."""
    # Trump named hearts in round 2 (turn-up QD): the dealer holds 9H AH; the elder 7H (dix).
    state, model = start("KS 9S JS 9H AH TD 8D 7D 8C", "7H AS TS 7S AD KD QC JC 9C", "QD", dealer=1)
    run(state, model, ["pass", "pass", "name:H", "keep", "keep"])
    assert state.public_view()["table"]["trump"] == "H"
    step(state, model, "play:AS")
    step(state, model, "play:9S")  # must follow spades
    step(state, model, "play:AD")  # elder won, leads diamonds
    legal = state.legal_actions()
    assert legal == ["play:TD", "play:8D", "play:7D"]  # the dealer does not hold the dix
    step(state, model, "play:TD")
    step(state, model, "play:KD")  # elder leads KD after winning (AD beat TD)
    step(state, model, "play:8D")
    assert state.to_act() == 0
    step(state, model, "play:QC")
    step(state, model, "play:8C")
    step(state, model, "play:JC")
    # dealer void in clubs, holds trumps 9H AH: must trump
    assert state.legal_actions() == ["play:AH", "play:9H"]
    step(state, model, "play:AH")
    step(state, model, "play:9H")  # trump lead; the elder's only heart is the dix 7H
    assert state.legal_actions() == ["play:7H", "exchange"]
    assert GAME.auto_move(state.view(0)) == "play:7H"  # NOTATION 5: never the in-play exchange
    step(state, model, "exchange")  # KL-4.1: trump named, turn-up QD is not a trump
    assert state.to_act() == 0 and state.view(0)["hand"] == ["TS", "7S", "QD", "9C"]
    # no trump now: the elder may play any card (KL-6.6); the QD is among them
    assert GAME.auto_move(state.view(0)) == "play:7S"  # NOTATION 5: lowest trick rank
    step(state, model, "play:QD", ["play:TS", "play:7S", "play:QD", "play:9C"])


def test_kl_a8_dix_requires_turn_up_trump_window_and_play():
    """kl_dix_requires_turnup_trump: trump named in round 2 -> no exchange anywhere; trump taken
    from the turn-up -> exchange offered as usual."""
    opts = {"kl_dix_requires_turnup_trump": True}
    state, model = start(NO_DIX, DIX_ELDER, "QD", dealer=1, options=opts)
    run(state, model, ["pass", "pass", "name:H"])
    step(state, model, "keep", ["keep"])
    step(state, model, "keep", ["keep"])
    assert "exchange" not in state.legal_actions()
    state, model = start(NO_DIX, DIX_ELDER, "8H", dealer=1, options=opts)
    run(state, model, ["take"])
    step(state, model, "keep", ["exchange", "keep"])


def test_kl_a9_before_melds_window_only():
    """kl_dix_window = before_melds: the window steps stay; no ``exchange`` during play."""
    state, model = start(NO_DIX, DIX_ELDER, "8H", dealer=1, options={"kl_dix_window": "before_melds"})
    run(state, model, ["take"])
    step(state, model, "keep", ["exchange", "keep"])
    step(state, model, "keep", ["keep"])
    assert "exchange" not in state.legal_actions() and "play:7H" in state.legal_actions()


def test_kl_4_5_dealer_window_exchange_counts_for_the_melds():
    """KL-4.5: the dealer's window exchange brings the turn-up QS between his KS and JS; the
    meld dialogue is judged on the hands after both window steps."""
    # trump clubs named in round 2; the dix 7C is in the dealer's hand; turn-up QS.
    dealer = "KS JS 7C 9H 8H AD 9D AC 8C"
    elder = "AS TS 7S KH TH KD QD JD 9C"
    state, model = start(dealer, elder, "QS", dealer=1)
    run(state, model, ["pass", "pass", "name:C"])
    step(state, model, "keep", ["keep"])
    step(state, model, "exchange", ["exchange", "keep"])
    melds = state.public_view()["table"]["melds"]
    # elder KD QD JD = 20 (K-high); dealer K Q J S = 20 K-high: same top, neither trump -> nobody
    assert [e["say"] for e in melds] == ["value", "how_high", "top", "same", "trump_check"]
    assert melds[2] == {"seat": 0, "say": "top", "card": "KD"} and melds[3]["card"] == "KS"
    assert state.public_view()["table"]["meld_points"] == [0, 0]


# ---- scenarios: melds (KL-5.5) ------------------------------------------------------------------

def test_kl_5_5_step3_own_tie_names_first_suit_and_same_non_trump_scores_nothing():
    """KL-5.5 step 3 (D): two equal best sequences of one hand (Q-high in S and D) -> the suit
    first in S H D C is named; the dealer's equal non-trump Q-high sequence -> ``same``, then
    ``trump_check`` with neither in trumps: nobody scores."""
    state, model = start("QC JC TC AS KD 9H 7H KH 8D", "QS JS TS QD JD TD AH 7C 8C", "8H", dealer=1)
    run(state, model, ["take", "keep", "keep"])
    assert state.public_view()["table"]["melds"] == [
        {"seat": 0, "say": "value", "value": 20},
        {"seat": 1, "say": "how_high"},
        {"seat": 0, "say": "top", "card": "QS"},
        {"seat": 1, "say": "same", "card": "QC"},
        {"seat": None, "say": "trump_check", "seat0_trump": False, "seat1_trump": False, "result": None},
    ]


def test_kl_5_5_step4_trump_check_dealer_trump_sequence_wins_with_match_seats():
    """KL-5.5 step 4: equal value and top, the dealer's sequence is in trumps -> he scores; the
    dialogue uses match seats (here the dealer is seat 0)."""
    state, model = start("QH JH TH AS KD 9C 7C 8S 8D", "QS JS TS AD 7D AH 9D KC 8C", "7H", dealer=0)
    run(state, model, ["take", "keep", "keep"])
    melds = state.public_view()["table"]["melds"]
    assert melds[3:] == [
        {"seat": 0, "say": "same", "card": "QH"},
        {"seat": None, "say": "trump_check", "seat0_trump": True, "seat1_trump": False, "result": 0},
        {"seat": 0, "say": "scores", "sequences": [{"suit": "H", "top": "Q", "length": 3}], "points": 20},
    ]
    assert melds[2] == {"seat": 1, "say": "top", "card": "QS"}


def test_kl_5_5_step4_trump_check_elder_trump_sequence_wins():
    """KL-5.5 step 4, the other way round: equal value and top, the elder's sequence is the
    trump one -> ``trump_check`` says so for the elder's seat and he scores. Found by mutation
    testing: dropping the elder's side of the check (``trumps[e] = ...``) survived, as every
    trump_check example had the dealer in trumps or nobody."""
    state, model = start("QS JS TS AD 7D AH 9D KC 8C", "QH JH TH AS KD 9C 7C 8S 8D", "7H", dealer=0)
    run(state, model, ["take", "keep", "keep"])
    melds = state.public_view()["table"]["melds"]
    assert melds[2:] == [
        {"seat": 1, "say": "top", "card": "QH"},
        {"seat": 0, "say": "same", "card": "QS"},
        {"seat": None, "say": "trump_check", "seat0_trump": False, "seat1_trump": True, "result": 1},
        {"seat": 1, "say": "scores", "sequences": [{"suit": "H", "top": "Q", "length": 3}], "points": 20},
    ]


# ---- scenarios: a whole deal computed by hand (KL-6 .. KL-9) -----------------------------------

# Trump spades: the elder takes the turn-up 8S. Elder: bella (QS then KS) and 9-high runs in D
# and C (20 each); dealer: J-T-9 of trumps (20, J-high beats 9-high). Tricks as (leader's card,
# follower's card); the dealer wins all but trick 5 (KS trumps TH).
SCORE_ELDER = "KS QS 7D 8D 9D 7C 8C 9C 7H"
SCORE_DEALER = "JS 9S AS TS AH TH KH AD AC"
SCORE_TRICKS = [("QS", "TS"), ("AH", "7H"), ("AD", "7D"), ("AC", "7C"), ("TH", "KS"), ("8D", "AS"),
                ("KH", "8C"), ("9S", "9D"), ("JS", "9C")]


def play_score_deal(state, model, dealer):
    elder = 1 - dealer
    assert state.dealer() == dealer == model.dealer
    deck = deck_for(SCORE_DEALER, SCORE_ELDER, "8S")
    state.deal(deck)
    model.deal(deck)
    run(state, model, ["take", "keep", "keep"])
    for lead, follow in SCORE_TRICKS:
        step(state, model, "play:" + lead)
        if lead == "QS":
            assert state.legal_actions() == ["play:AS", "play:JS", "play:TS", "play:9S"]  # KL-6.4
        if lead == "TH":
            assert state.legal_actions() == ["play:KS"]  # KL-6.5: void in hearts, must trump
        if lead == "8D":
            assert state.legal_actions() == ["play:AS", "play:JS", "play:9S"]  # KL-6.5
        step(state, model, "play:" + follow)
    return elder


@pytest.mark.parametrize("dealer", [0, 1])
@pytest.mark.parametrize("scope,scored", [("deal_total", (0, 159)), ("trick_points", (20, 139))])
def test_kl_9_4_opponent_more_hand_computed_both_scopes(dealer, scope, scored):
    """KL-9.1: elder (maker) 14 card points + bella 20 = 34; dealer 105 (incl. last trick) +
    meld 20 = 125. KL-9.4: the opponent has more -> he adds both totals (159), the maker 0;
    kl_score_scope = trick_points (KL-A17): the maker keeps his bella (20), the opponent adds
    his meld and both card points (20 + 14 + 105 = 139)."""
    state = GAME.new_state({"kl_score_scope": scope}, first_dealer=dealer)
    model = Model({"kl_score_scope": scope}, first_dealer=dealer)
    elder = play_score_deal(state, model, dealer)
    r = last_result(state, model)
    per = lambda e, d: [e, d] if elder == 0 else [d, e]  # noqa: E731 - (elder, dealer) -> per seat
    assert r == {"thrown_in": False, "trump": "S", "maker": elder, "melds": per(0, 20), "card_points": per(14, 105),
                 "bonuses": per(20, 0), "scored": per(*scored)}
    assert state.result() == {"totals": per(*scored), "winners": [], "over": False}
    assert state.deal_details()[-1]["outcome"] == "opponent_more"


def test_kl_10_2_both_reach_equal_play_on_then_higher_total_wins():
    """KL-10.2: the target is tested after each scored deal; both at 159 >= 150 with equal
    scores -> play on (over false, winners []); a thrown-in deal changes nothing; the next
    scored deal decides (higher total). The dealer alternates after played deals and stays
    after the thrown-in one (KL-2.2); the exported transcript checks out (NOTATION 3)."""
    opts = {"kl_score_scope": "trick_points", "kl_target_score": 150}
    state = GAME.new_state(opts, first_dealer=1)
    model = Model(opts, first_dealer=1)
    play_score_deal(state, model, dealer=1)
    assert state.result() == {"totals": [20, 139], "winners": [], "over": False}
    play_score_deal(state, model, dealer=0)
    assert state.result() == model.result() == {"totals": [159, 159], "winners": [], "over": False}
    assert state.to_act() == CHANCE and state.dealer() == 1
    deck = deck_for(SCORE_DEALER, SCORE_ELDER, "8S")
    state.deal(deck)
    model.deal(deck)
    run(state, model, ["pass"] * 4)
    assert state.deal_results()[-1] == {"thrown_in": True} and state.dealer() == 1
    play_score_deal(state, model, dealer=1)
    assert state.result() == model.result() == {"totals": [179, 298], "winners": [1], "over": True}
    assert state.to_act() == TERMINAL and state.legal_actions() == []
    data = transcript.export(state)
    assert [d["expect"]["dealer"] for d in data["deals"]] == [1, 0, 1, 1]
    assert [("result" in d) for d in data["deals"]] == [True] * 4
    assert transcript.check(data)[0] is None


def test_kl_a19_deal_winner_breaks_the_simultaneous_target():
    """kl_simultaneous_target = deal_winner: both at 159 -> seat 0 added 139 in the final deal
    against 20, so seat 0 wins at once."""
    opts = {"kl_score_scope": "trick_points", "kl_target_score": 150, "kl_simultaneous_target": "deal_winner"}
    state = GAME.new_state(opts, first_dealer=1)
    model = Model(opts, first_dealer=1)
    play_score_deal(state, model, dealer=1)
    play_score_deal(state, model, dealer=0)
    assert state.result() == model.result() == {"totals": [159, 159], "winners": [0], "over": True}


def test_kl_10_1_one_player_reaches_the_target():
    """KL-10.1: only the dealer reaches 150 (159) -> he wins; the match is over."""
    state = GAME.new_state({"kl_target_score": 150}, first_dealer=0)
    model = Model({"kl_target_score": 150}, first_dealer=0)
    play_score_deal(state, model, dealer=0)
    assert state.result() == {"totals": [159, 0], "winners": [0], "over": True}


# ---- scenarios: the trump K-Q-J bonus timing (KL-7.2, NOTATION 4) ------------------------------

# Turn-up KH, trump hearts (taken by the dealer in round 1). ``HOLDER`` has Q-J-7 of hearts (the
# dix); an exchange brings the KH in: K-Q-J of trumps, a run of exactly 3 (no AH / TH) -> 20.
HOLDER = "QH JH 7H AS 9S AD 8D TC 8C"
OTHER = "KS QS JS 7S TD 9D 7D QC 7C"


def finish(state, model):
    while state.to_act() >= 0:
        step(state, model, GAME.auto_move(state.view(state.to_act())))


@pytest.mark.parametrize("when,bonus", [("first_turn", 20), ("later_turn", 0)])
def test_kl_7_2_dealer_exchange_at_his_first_card_counts_later_does_not(when, bonus):
    """KL-7.2: the dealer's hand counts when he plays his first card (his follow to trick 1),
    after an exchange made at that turn; an exchange at a later turn does not count. The meld
    phase was judged before (KL-4.5): the elder won it with K-Q-J of spades."""
    state, model = start(HOLDER, OTHER, "KH", dealer=1)
    run(state, model, ["pass", "take", "keep"])
    step(state, model, "keep", ["exchange", "keep"])
    assert state.public_view()["table"]["meld_points"] == [20, 0]
    step(state, model, "play:KS")
    if when == "first_turn":
        step(state, model, "exchange", ["play:AS", "play:9S", "exchange"])
        step(state, model, "play:9S", ["play:AS", "play:9S"])
    else:
        step(state, model, "play:9S", ["play:AS", "play:9S", "exchange"])
        step(state, model, "play:QS")  # the elder won trick 1 and leads again
        step(state, model, "exchange", ["play:AS", "exchange"])
        step(state, model, "play:AS")
    finish(state, model)
    last_result(state, model)
    assert state.deal_details()[-1]["trump_kqj"] == [0, bonus]


@pytest.mark.parametrize("when,bonus", [("first_turn", 20), ("later_turn", 0)])
def test_kl_7_2_elder_exchange_at_his_first_lead_counts_later_does_not(when, bonus):
    """KL-7.2: the elder's first card is his lead to trick 1; an exchange at that turn counts."""
    state, model = start(OTHER, HOLDER, "KH", dealer=1)
    run(state, model, ["take"])
    step(state, model, "keep", ["exchange", "keep"])
    step(state, model, "keep", ["keep"])
    if when == "first_turn":
        step(state, model, "exchange")
        step(state, model, "play:AS")
    else:
        step(state, model, "play:AS")
        step(state, model, "play:7S")
        step(state, model, "exchange")
        step(state, model, "play:9S")
    finish(state, model)
    last_result(state, model)
    assert state.deal_details()[-1]["trump_kqj"] == [bonus, 0]


def test_kl_7_2_window_exchange_makes_a_meld_so_no_separate_bonus_for_the_winner():
    """KL-7.2 with KL-4.5: a window exchange gives the holder K-Q-J of trumps before the melds;
    here the other player's K-Q-J of spades is equal in value and top, so the trump sequence
    wins (KL-5.5 step 4) and is scored as a meld: no separate K-Q-J bonus."""
    state, model = start(HOLDER, OTHER, "KH", dealer=1)
    run(state, model, ["pass", "take", "keep", "exchange"])
    assert state.public_view()["table"]["meld_points"] == [0, 20]
    finish(state, model)
    r = last_result(state, model)
    assert r["melds"] == [0, 20] and state.deal_details()[-1]["trump_kqj"] == [0, 0]


# ---- the draw for the first deal (KL-1.5, KL-2.1) -------------------------------------------

@pytest.mark.parametrize("cards,options,dealer", [
    (["TS", "KH"], {}, 1),  # plain order A T K ...: the king is lower -> seat 1 deals
    (["TS", "KH"], {"kl_draw_order": "natural"}, 0),  # A K Q J T ...: the ten is lower
    (["9C", "JS"], {}, 0),
    (["AS", "AH", "7C", "8D"], {}, 0),  # equal: draw again; 7C is lower -> seat 0
    (["AS", "AH", "7C", "8D"], {"kl_draw_tie": "suit_order"}, 1),  # S > H: the AH is lower
    (["QC", "QD"], {"kl_draw_tie": "suit_order"}, 0),  # D > C: the QC is lower
    (["AH", "AS"], {"kl_draw_tie": "suit_order"}, 0),  # S > H: seat 0's AH is lower
    (["7C", "7D"], {"kl_draw_tie": "suit_order"}, 0),  # D > C: seat 0's 7C is lower
], ids=["plain", "natural", "plain_jack_above_nine", "redraw", "suit_order_H", "suit_order_C",
        "suit_order_seat0_lower", "suit_order_seat0_lower_clubs"])
def test_kl_2_1_lower_card_deals(cards, options, dealer):
    """KL-2.1: seat 0 draws first; the lower card under KL-1.5 (kl_draw_order) deals; equal
    ranks draw again (kl_draw_tie = redraw) or the suit order S > H > D > C decides."""
    rest = [c for c in PACK if c not in cards]
    assert GAME.draw_first_dealer(cards + rest, options) == dealer


def test_kl_7_2_meld_winner_completing_kqj_by_in_play_exchange_gets_the_bonus():
    """KL-7.2, documented choice 6: the dealer wins the melds with A-K-Q of diamonds; the K-Q-J
    of trumps exists only after his exchange at his first card, so "that trump sequence" was
    not scored in the meld phase and the 20 is given."""
    state, model = start("QH JH 7H AD KD QD 9S 8C 7C", "KS QS JS 7S TC 9C 8D 7D AC", "KH", dealer=1)
    run(state, model, ["pass", "take", "keep", "keep"])
    assert state.public_view()["table"]["meld_points"] == [0, 20]
    run(state, model, ["play:KS", "exchange", "play:9S"])
    finish(state, model)
    r = last_result(state, model)
    assert r["melds"] == [0, 20] and state.deal_details()[-1]["trump_kqj"] == [0, 20]
