"""Determinization (GJ-11.7): full states sampled from one seat's view only, consistent with
everything the seat may know, hidden cards uniform among the consistent deals."""

from __future__ import annotations

import inspect
import itertools
import math
import random
from collections import Counter

import pytest

from engine_service.rules import CHANCE, TERMINAL, InconsistentView
from engine_service.rules.cards import PACK36_JOKERS_MASK, cards_of
from engine_service.rules.games.georgian_joker import determinize as D

from .checks_georgian_joker import GAME, check_scores
from .playout import iter_states

OPTION_SETS = [{}, {"deal_schedule": "nines"}, {"deal_schedule": "nines", "high_joker_lead_trumpable": True},
               {"khishti_penalty": "100_per_card", "moshla": "off"}]


def sampled_states(options, seed, every=7):
    for i, state in enumerate(iter_states(GAME, seed, options)):
        if i % every == 0:
            yield state


def hidden_signature(state) -> tuple:
    z = state.zones()
    return tuple(sorted(z.items()))


def test_signature_takes_only_a_view_and_an_rng():
    assert list(inspect.signature(GAME.determinize).parameters) == ["view", "rng"]


@pytest.mark.parametrize("options", OPTION_SETS)
def test_samples_have_the_same_view_conserve_the_pack_and_play_on(options):
    """Every sample shows the seat exactly the same view (legal actions included), holds the
    whole pack, and plays on by random legal actions to the end of the deal."""
    rng = random.Random(1)
    for seed in range(2):
        for state in sampled_states(options, 300 + seed):
            for seat in range(4):
                view = state.view(seat)
                sample = GAME.determinize(view, rng)
                assert sample.view(seat) == view
                assert sample.public_view() == state.public_view()
                zones = sample.zones()
                total = 0
                for m in zones.values():
                    assert total & m == 0
                    total |= m
                assert total == PACK36_JOKERS_MASK
                assert zones[f"hand{seat}"] == state.zones()[f"hand{seat}"]
                done = len(sample.deal_results())
                while sample.to_act() >= 0 and len(sample.deal_results()) == done:
                    sample.apply_id(rng.choice(sample.legal_ids()))
                assert len(sample.deal_results()) == done + 1
                check_scores(sample)


def test_between_deals_and_after_the_match_the_state_is_rebuilt_exactly():
    rng = random.Random(2)
    state = GAME.new_state({"deal_schedule": "nines"}, first_dealer=2)
    while state.to_act() != TERMINAL:
        if state.to_act() == CHANCE:
            for seat in range(4):
                sample = GAME.determinize(state.view(seat), rng)
                assert sample.view(seat) == state.view(seat)
                assert sample.result() == state.result() and sample.dealer() == state.dealer()
            deck = list(GAME.pack)
            rng.shuffle(deck)
            state.deal(deck)
        else:
            state.apply_id(rng.choice(state.legal_ids()))
    sample = GAME.determinize(state.view(0), rng)
    assert sample.to_act() == TERMINAL and sample.result() == state.result()
    assert sample.view(0) == state.view(0)


def test_hidden_cards_never_influence_the_sample():
    """Two states with the same view for a seat but different hidden cards give identical
    samples for the same random seed: the function sees the view only."""
    checked = 0
    for state in sampled_states({"deal_schedule": "nines"}, 410, every=5):
        seat = (state.to_act() + 1) % 4
        view = state.view(seat)
        a, b = GAME.determinize(view, random.Random(10)), GAME.determinize(view, random.Random(11))
        if hidden_signature(a) == hidden_signature(b):
            continue
        assert a.view(seat) == b.view(seat) == view
        sa = GAME.determinize(a.view(seat), random.Random(99))
        sb = GAME.determinize(b.view(seat), random.Random(99))
        assert hidden_signature(sa) == hidden_signature(sb)
        checked += 1
    assert checked > 10


def chi2_critical(df: int, z: float = 3.09) -> float:
    """Upper 0.1 % point of chi-square (Wilson-Hilferty)."""
    return df * (1 - 2 / (9 * df) + z * math.sqrt(2 / (9 * df))) ** 3


def test_an_unconstrained_card_lands_everywhere_with_the_expected_frequency():
    """At the start of a four-card deal, a card the seat does not see is in each other hand
    with probability 4/31 and in the stock with probability 19/31."""
    from .checks_georgian_joker import deck_for, state_at_deal
    state = state_at_deal(4, {}, first_dealer=0)
    deck = deck_for([["AS", "KS", "QS", "JS"], ["AH", "KH", "QH", "JH"], ["AD", "KD", "QD", "JD"],
                     ["AC", "KC", "QC", "JC"]], 3, "TS")
    state.deal(deck)
    view = state.view(0)
    rng = random.Random(4)
    counts = Counter()
    n = 6200
    for _ in range(n):
        z = GAME.determinize(view, rng).zones()
        where = next(k for k, m in z.items() if m >> 37 & 1)  # X2: unknown to seat 0
        counts[where] += 1
    expected = {"hand1": 4 / 31, "hand2": 4 / 31, "hand3": 4 / 31, "stock": 19 / 31}
    assert set(counts) == set(expected)
    chi2 = sum((counts[k] - n * p) ** 2 / (n * p) for k, p in expected.items())
    assert chi2 < chi2_critical(3), (chi2, counts)


def consistent_assignments(state, seat):
    """Brute force: every way to give the other seats' unknown cards that replays the deal's
    public actions legally, found with the engine itself (no constraint reasoning)."""
    view = state.view(seat)
    sizes = view["hand_sizes"]
    others = [s for s in range(4) if s != seat]
    z = state.zones()
    unknown = cards_of(sum(z[f"hand{s}"] for s in others))  # nine-card deal: no stock
    found = []
    k1, k2 = sizes[others[0]], sizes[others[1]]
    for first in itertools.combinations(unknown, k1):
        rest = [c for c in unknown if c not in first]
        for second in itertools.combinations(rest, k2):
            third = tuple(c for c in rest if c not in second)
            hands = {others[0]: set(first), others[1]: set(second), others[2]: set(third)}
            if _replays(view, seat, hands):
                found.append(tuple(frozenset(hands[s]) for s in others))
    return found


def _replays(view, seat, hands) -> bool:
    from engine_service.rules.cards import card_id
    f = view["table"]["forehand"]
    original = {s: set(h) for s, h in hands.items()}
    original[seat] = {card_id(c) for c in view["hand"]}
    for t in view["table"]["tricks"] + [{"plays": view["trick"]}]:
        for p in t["plays"]:
            original[p["seat"]].add(card_id(p["card"]))
    deck = [None] * 36
    for i in range(4):
        for r, c in enumerate(sorted(original[(f + i) % 4])):
            deck[4 * r + i] = c
    # legality within a nine-card deal depends only on the dealer: replay as deal 1 of a match
    trial = GAME.new_state({"deal_schedule": "nines"}, first_dealer=view["dealer"])
    trial.deal(deck)
    for a in view["table"]["deal_actions"]:
        a_id = trial.parse_action(a)
        if a_id not in trial.legal_ids():
            return False
        trial.apply_id(a_id)
    return True


def late_nine_card_states():
    """States of nine-card deals with three cards left in the seat-to-act's hand or fewer and
    at least one revealed void."""
    for seed in range(400):
        for state in iter_states(GAME, 500 + seed, {"deal_schedule": "nines"}):
            v = state.public_view()
            if v["phase"] == "playing" and v["hand_sizes"][state.to_act()] <= 3 and v["trick"] == []:
                seat = state.to_act()
                actions = [state.parse_action(a) for a in v["table"]["deal_actions"]]
                trump = "SHDC".index(v["table"]["trump"]) if v["table"]["trump"] != "NT" else 4
                _, forbid = D.constraints(actions, v["table"]["forehand"], trump, False)
                if any(forbid[s] & state.secret_cards(seat) for s in range(4) if s != seat):
                    yield state.clone()
                    break


def test_samples_are_uniform_over_the_consistent_deals_found_by_brute_force():
    """Late in nine-card deals, with voids revealed: the set of hands the sampler produces is
    exactly the brute-force set of consistent deals, each about equally often."""
    rng = random.Random(5)
    checked = 0
    for state in late_nine_card_states():
        seat = state.to_act()
        others = [s for s in range(4) if s != seat]
        truth = set(consistent_assignments(state, seat))
        if not 2 <= len(truth) <= 300:
            continue
        checked += 1
        n = 50 * len(truth)
        counts = Counter()
        view = state.view(seat)
        for _ in range(n):
            z = GAME.determinize(view, rng).zones()
            counts[tuple(frozenset(cards_of(z[f"hand{s}"])) for s in others)] += 1
        assert set(counts) == truth
        chi2 = sum((counts[k] - n / len(truth)) ** 2 / (n / len(truth)) for k in truth)
        assert chi2 < chi2_critical(len(truth) - 1), (chi2, len(truth))
        if checked == 4:
            break
    assert checked == 4


@pytest.mark.parametrize("tries", [0, D.REJECTION_TRIES])
def test_location_sampler_is_uniform_with_and_without_rejection(tries, monkeypatch):
    """Six cards into three places of two, with forbidden places: both the rejection and the
    exact counting sampler hit each of the valid assignments equally often."""
    monkeypatch.setattr(D, "REJECTION_TRIES", tries)
    cards = [0, 1, 2, 9, 10, 18]  # AS KS QS AH KH AD
    forbid = [1 << 0 | 1 << 1 | 1 << 2, 1 << 9, 0]  # place 0: no spades; place 1: no AH
    caps = [2, 2, 2]
    valid = []
    for perm in itertools.permutations(cards):
        parts = [frozenset(perm[0:2]), frozenset(perm[2:4]), frozenset(perm[4:6])]
        if all(not any(forbid[l] >> c & 1 for c in parts[l]) for l in range(3)):
            valid.append(tuple(parts))
    valid = set(valid)
    rng = random.Random(6)
    n = 100 * len(valid)
    counts = Counter(tuple(frozenset(p) for p in D.sample_locations(cards, forbid, caps, rng)) for _ in range(n))
    assert set(counts) == valid
    chi2 = sum((counts[k] - n / len(valid)) ** 2 / (n / len(valid)) for k in valid)
    assert chi2 < chi2_critical(len(valid) - 1)


@pytest.mark.parametrize("tries", [0, D.REJECTION_TRIES])
def test_location_sampler_refuses_constraints_no_assignment_fits(tries, monkeypatch):
    """``Game.determinize``: a view no deal fits raises InconsistentView. Here proven voids
    leave the two spades only one place of one card: the exact counting sampler finds no
    completion and says so (not a bare ValueError from drawing among zero weights)."""
    monkeypatch.setattr(D, "REJECTION_TRIES", tries)
    cards = [0, 1, 9]  # AS KS AH
    forbid = [1 << 0 | 1 << 1, 1 << 0 | 1 << 1, 0]  # places 0 and 1: void in spades
    with pytest.raises(InconsistentView):
        D.sample_locations(cards, forbid, [1, 1, 1], random.Random(1))
    with pytest.raises(InconsistentView):  # hand sizes that do not add up to the unseen cards
        D.sample_locations(cards, [0, 0, 0], [1, 1, 2], random.Random(1))


def test_constraints_read_voids_and_the_highest_card_rule():
    """GJ-5.3 .. GJ-5.5 as evidence: discarding shows a void in the demand suit and in trumps;
    trumping only a void in the demand suit; following a high joker lead caps the suit."""
    from engine_service.rules.games.georgian_joker import actions as A
    from engine_service.rules.cards import SUIT_MASK, card_id
    acts = [A.parse_action(a) for a in ("bid:0", "bid:0", "bid:0", "bid:1",
                                        "play:AS", "play:7D", "play:9H", "play:KS",  # trump H
                                        "play:X1:high:C", "play:QC", "play:AH", "play:8D")]
    played, forbid = D.constraints(acts, 0, 1, False)
    # trick 1: 7D shows seat 1 void in S and in trumps H; 9H shows seat 2 void in S; 9H wins
    # trick 2 (seat 2 leads X1 high naming C): QC caps seat 3's clubs; AH shows seat 0 void
    # in C; 8D shows seat 1 void in C and H
    assert forbid[1] == SUIT_MASK[0] | SUIT_MASK[1] | SUIT_MASK[3]
    assert forbid[2] == SUIT_MASK[0]
    assert forbid[3] == (1 << card_id("AC")) | (1 << card_id("KC"))
    assert forbid[0] == SUIT_MASK[3]
    assert played[2] == (1 << card_id("9H")) | (1 << 36)


def test_an_edited_view_with_shifted_hand_sizes_is_inconsistent():
    """``Game.determinize``: InconsistentView for an edited view no deal fits. Every hand of a
    deal holds the same number of cards (GJ-3.2) less its plays; a view that moves one unseen
    card from one opponent's hand size to another's keeps the total but fits no deal."""
    import json

    for state in iter_states(GAME, 3, {}):
        v = state.public_view()
        if v["phase"] == "playing" and v["table"]["cards_per_player"] >= 4 and not v["trick"]:
            break
    seat = state.to_act()
    view = json.loads(json.dumps(state.view(seat)))
    others = [s for s in range(4) if s != seat]
    view["hand_sizes"][others[0]] += 1
    view["hand_sizes"][others[1]] -= 1
    with pytest.raises(InconsistentView):
        GAME.determinize(view, random.Random(1))


def test_a_heavily_constrained_view_is_still_sampled():
    """A consistent view always yields a sample (``Game.determinize``), even when the proven
    voids (GJ-5.3) leave only 21 of the 756,756 ways to share the unseen cards among the
    other hands: the voids steer the sampler (exact counting), not blind replay rejection."""
    options = {"deal_schedule": "nines"}
    state = next(itertools.islice(iter_states(GAME, 32, options), 513, None))
    seat = state.to_act()
    view = state.view(seat)
    assert view["phase"] == "playing" and view["table"]["cards_per_player"] == 9
    rng = random.Random(2)
    for _ in range(3):
        sample = GAME.determinize(view, rng)
        assert sample.view(seat) == view
