"""Determinization (``KlaberjassGame.determinize(view, rng)``): samples agree with the view,
conserve the pack, play on legally, depend on the view only, and are uniform."""

from __future__ import annotations

import json
import random

import pytest

from engine_service.rules import CHANCE, TERMINAL, InconsistentView, get_game
from engine_service.rules.cards import CODES, card_id
from engine_service.rules.games.klaberjass.sequences import sequences

from .checks_klaberjass import OPTION_SETS, deck_from_hands, play_out
from .playout import iter_states, random_match

GAME = get_game("klaberjass")
PACK_MASK = sum(1 << c for c in GAME.pack)


def hidden(state):
    """The omniscient part of a state: its zones (hands, stock, ...)."""
    return state.zones()


def play_to_deal_end(state, rng):
    done = len(state.deal_results())
    while state.to_act() >= 0:
        state.apply(rng.choice(state.legal_actions()))
    assert len(state.deal_results()) == done + 1


@pytest.mark.parametrize("options", [{}] + OPTION_SETS, ids=lambda o: ",".join(sorted(o)) or "defaults")
def test_samples_have_the_same_view_conserve_the_pack_and_play_on(options):
    rng = random.Random(1)
    checked = 0
    for seed in range(6):
        for i, state in enumerate(iter_states(GAME, 700 + seed, options)):
            if i % 4:
                continue
            for seat in (0, 1):
                view = state.view(seat)
                sample = GAME.determinize(view, rng)
                assert sample.view(seat) == view
                assert sample.result() == state.result() and sample.dealer() == state.dealer()
                zones = sample.zones()
                total = 0
                for m in zones.values():
                    assert total & m == 0
                    total |= m
                assert total == PACK_MASK
                # the seat's own hand and everything public are exactly the original's
                assert zones[f"hand{seat}"] == state.zones()[f"hand{seat}"]
                for z in ("turn_up", "info_card", "won0", "won1", "trick"):
                    assert zones[z] == state.zones()[z], z
                play_to_deal_end(sample, rng)
                checked += 1
    assert checked > 100


def test_samples_depend_on_the_view_only():
    """Two states with equal view(seat) but different hidden cards give identical samples."""
    rng = random.Random(5)
    compared = 0
    for state in iter_states(GAME, 42):
        if state.public_view()["phase"] != "play" or state.public_view()["table"]["trick_number"] < 2:
            continue
        seat = state.to_act()
        view = state.view(seat)
        other = GAME.determinize(view, rng)
        if other.zones() == state.zones():
            continue
        assert other.view(seat) == view
        a = GAME.determinize(state.view(seat), random.Random(99))
        b = GAME.determinize(other.view(seat), random.Random(99))
        assert a.zones() == b.zones() and a.history() == b.history()
        c = GAME.determinize(json.loads(json.dumps(view)), random.Random(99))
        assert c.zones() == a.zones()
        compared += 1
        if compared == 5:
            break
    assert compared == 5


def test_only_a_seat_view_is_accepted_and_between_deals():
    state = random_match(GAME, 3)
    v = state.view(0)
    sample = GAME.determinize(v, random.Random(1))
    assert sample.to_act() == TERMINAL and sample.view(0) == v
    state = GAME.new_state({}, first_dealer=1)
    sample = GAME.determinize(state.view(1), random.Random(1))
    assert sample.to_act() == CHANCE and sample.view(1) == state.view(1)
    with pytest.raises(ValueError):
        GAME.determinize(state.public_view(), random.Random(1))


def chi_square(counts: dict, expected: float) -> float:
    return sum((o - expected) ** 2 / expected for o in counts.values())


#: chi-square critical values at p = 0.001 (degrees of freedom -> value)
CRITICAL = {14: 36.12, 24: 51.18}


def test_unconstrained_unknown_cards_are_uniform_in_the_auction():
    """Before the second deal the elder knows 6 cards and the turn-up: each of the 25 others is
    in the dealer's hand with probability 6/25."""
    rng = random.Random(2024)
    deck = [CODES[c] for c in GAME.pack]
    random.Random(8).shuffle(deck)
    state = GAME.new_state({}, first_dealer=1)
    state.deal(deck)
    view = state.view(0)
    known = set(view["hand"]) | {view["table"]["turn_up"]}
    unknown = [c for c in deck if c not in known]
    counts = {c: 0 for c in unknown}
    n = 2500
    for _ in range(n):
        sample = GAME.determinize(view, rng)
        for c in sample.hand_of(1):
            counts[c] += 1
    assert sum(counts.values()) == 6 * n
    assert chi_square(counts, n * 6 / 25) < CRITICAL[24], counts


def test_void_constraint_and_uniformity_mid_play():
    """The dealer trumped the elder's AS: he holds no spade; the 8 unknown cards of his hand are
    spread uniformly over the 15 unknown non-spades (KL-6.3, KL-6.5)."""
    opts = {"kl_meld_declaration": "optional"}
    elder = "AS TS 7S QH AD KD QC JC 9C"
    dealer = "JH 9H AH TD 8D 7D 8C TC 7C"
    state = GAME.new_state(opts, first_dealer=1)
    state.deal(deck_from_hands(dealer.split(), elder.split(), "8H", info_card="7H"))
    play_out(state, ["take", "keep", "keep", "conceal", "conceal", "play:AS"])
    assert state.legal_actions() == ["play:AH", "play:JH", "play:9H"]
    state.apply("play:9H")
    view = state.view(0)
    known = set(elder.split()) | {"8H", "7H", "9H"}
    unknown = [CODES[c] for c in GAME.pack if CODES[c] not in known]
    spades = [c for c in unknown if c[1] == "S"]
    allowed = [c for c in unknown if c[1] != "S"]
    assert len(allowed) == 15 and len(spades) == 5
    counts = {c: 0 for c in allowed}
    rng = random.Random(77)
    n = 1500
    for _ in range(n):
        sample = GAME.determinize(view, rng)
        hand = sample.hand_of(1)
        assert not any(c[1] == "S" for c in hand)
        for c in hand:
            counts[c] += 1
    assert chi_square(counts, n * 8 / 15) < CRITICAL[14], counts


def test_revealed_and_exchanged_cards_stay_with_their_holder():
    """Cards the dialogue or an exchange identifies are always placed in that hand."""
    state = GAME.new_state({}, first_dealer=1)
    state.deal(deck_from_hands("9S 8S QH TH 9H AD KD QD TC".split(), "AS KS JS KH JH 8H 7H 9C 7C".split(), "QS"))
    play_out(state, ["pass", "pass", "name:C", "exchange", "keep"])
    view = state.view(1)
    assert view["table"]["revealed"][0] == ["AS", "KS", "QS", "JS"]
    rng = random.Random(3)
    for _ in range(200):
        hand = GAME.determinize(view, rng).hand_of(0)
        assert {"AS", "KS", "QS", "JS"} <= set(hand)
        assert "7C" not in hand  # the dix lies face up
        # the elder won the melds with A-K-Q-J of spades and has no other sequence
        m = sum(1 << card_id(c) for c in hand)
        assert len(sequences(m)) == 1


def test_without_kl_6_4_an_under_trump_proves_no_trump_ceiling():
    """With ``kl_must_overtrump`` off (KL-6.4 not in force), following a trump lead with a
    lower trump is legal even holding a higher one: the dealer's 7H under the elder's QH
    proves nothing, so the samples must still give him higher hearts (here JH and AH are in
    his real hand; a sampler that excluded them would drop consistent deals)."""
    opts = {"kl_meld_declaration": "optional", "kl_must_overtrump": False}
    elder = "AS TS 7S QH AD KD QC JC 9C"
    dealer = "JH 7H AH TD 8D 7D 8C TC 7C"
    state = GAME.new_state(opts, first_dealer=1)
    state.deal(deck_from_hands(dealer.split(), elder.split(), "8H", info_card="9H"))
    play_out(state, ["take", "keep", "keep", "conceal", "conceal", "play:QH"])
    assert {"play:AH", "play:JH", "play:7H"} <= set(state.legal_actions())
    state.apply("play:7H")
    view = state.view(0)
    higher = {"JH", "AH", "TH", "KH"}  # the unseen hearts above the queen (KL-1.2)
    rng = random.Random(5)
    hits = sum(bool(higher & set(GAME.determinize(view, rng).hand_of(1))) for _ in range(60))
    assert hits > 30


def test_an_edited_view_whose_opponent_holds_too_many_known_cards_is_inconsistent():
    """``Game.determinize``: InconsistentView for an edited view no deal fits. In the auction
    the opponent holds six cards (KL-2.4); a view claiming seven of his cards revealed fits
    no deal."""
    state = GAME.new_state({}, first_dealer=1)
    state.deal(list(GAME.pack))
    view = json.loads(json.dumps(state.view(0)))
    seen = set(view["hand"]) | {view["table"]["turn_up"]}
    view["table"]["revealed"][1] = [CODES[c] for c in GAME.pack if CODES[c] not in seen][:7]
    with pytest.raises(InconsistentView):
        GAME.determinize(view, random.Random(1))
