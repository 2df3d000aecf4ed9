"""Determinization of Japanese Joker views (``GAME.determinize(view, rng)``): every sample is a
legal state with exactly the seat's view, built from the view alone, and the unknown cards are
spread uniformly over the consistent deals."""

from __future__ import annotations

import itertools
import math
import random
from collections import Counter

import pytest

from engine_service.rules import CHANCE, TERMINAL
from engine_service.rules.cards import CODES, card_id
from engine_service.rules.games.japanese_joker import GAME
from engine_service.rules.games.japanese_joker.determinize import (INFINITY, InconsistentView,
                                                                   _sample_groups, consistency_model)

from .checks_japanese_joker import check_scores, deck_for
from .playout import iter_states, shuffled


def chi2_limit(dof: int, z: float = 3.72) -> float:
    """Upper chi-square quantile (p ~ 1e-4 with z = 3.72), Wilson-Hilferty approximation."""
    return dof * (1 - 2 / (9 * dof) + z * math.sqrt(2 / (9 * dof))) ** 3


def chi2(observed: Counter, expected: dict) -> float:
    assert set(observed) <= set(expected), set(observed) - set(expected)
    return sum((observed.get(k, 0) - e) ** 2 / e for k, e in expected.items())


def sample_states(seeds=range(8), every=3):
    for seed in seeds:
        for i, st in enumerate(iter_states(GAME, 6000 + seed)):
            if i % every == 0:
                yield seed, i, st


def check_pack(st) -> None:
    z = st.zones()
    total = 0
    for mask in z.values():
        assert total & mask == 0
        total |= mask
    assert not z or total == GAME.pack_mask


def test_samples_have_the_same_view_conserve_the_pack_and_play_on():
    rng = random.Random(1)
    n = 0
    for seed, i, st in sample_states():
        for seat in (0, 1):
            view = st.view(seat)
            for _ in range(2):
                s = GAME.determinize(view, rng)
                assert s.view(seat) == view, (seed, i, seat)
                assert s.to_act() == st.to_act()
                if st.to_act() == seat:
                    assert s.legal_actions() == st.legal_actions() == view["legal"]
                assert s.result() == st.result() and s.deal_results() == st.deal_results()
                check_pack(s)
                while s.to_act() != TERMINAL:  # on to the end of the match
                    if s.to_act() == CHANCE:
                        s.deal(shuffled(GAME, rng))
                    else:
                        s.apply_id(rng.choice(s.legal_ids()))
                    check_pack(s)
                check_scores(s)
                n += 1
    assert n > 500


def test_between_deals_and_at_the_end():
    from .playout import random_match
    st = random_match(GAME, 17, {"target_score": 11})
    s = GAME.determinize(st.view(0), random.Random(0))
    assert s.view(0) == st.view(0) and s.to_act() == TERMINAL
    st = GAME.new_state({"target_score": 15}, first_dealer=1)
    rng = random.Random(4)
    st.deal(shuffled(GAME, rng))
    while st.to_act() >= 0:
        st.apply_id(rng.choice(st.legal_ids()))
    for seat in (0, 1):
        s = GAME.determinize(st.view(seat), random.Random(seat))
        assert s.view(seat) == st.view(seat) and s.to_act() == CHANCE and s.dealer() == 0
        s.deal(shuffled(GAME, rng))
        assert s.to_act() == 0


def test_editing_the_view_afterwards_leaves_the_sample_alone():
    """The sample shares no list with the view it came from: a bot that edits the view after
    sampling (a deal's ``taken`` and ``scores``, the totals, the winners) does not change the
    sample, here a finished match (JJK-8.2)."""
    from .playout import random_match
    st = random_match(GAME, 17, {"target_score": 11})
    view = st.view(0)
    sample = GAME.determinize(view, random.Random(0))
    view["deal_results"][0]["taken"][0] += 1
    view["deal_results"][0]["scores"][0] += 1
    view["totals"][0] += 1
    view["winners"].append(1 - view["winners"][0])
    assert sample.view(0) == st.view(0) and sample.deal_results() == st.deal_results()


def test_trump_choice_samples():
    st = GAME.new_state(first_dealer=1)
    st.deal(shuffled(GAME, random.Random(2)))
    for seat in (0, 1):
        view = st.view(seat)
        s = GAME.determinize(view, random.Random(seat))
        assert s.view(seat) == view and s.zones()[f"hand{seat}"] == st.zones()[f"hand{seat}"]


def test_trump_choice_deals_the_other_three_uniformly():
    """JJK-3.7: during the trump choice a seat knows its own three cards only; each of the
    33 others is among the other player's three with probability 3/33."""
    st = GAME.new_state(first_dealer=0)
    st.deal(shuffled(GAME, random.Random(12)))
    view = st.view(1)
    mine = {card_id(c) for c in view["table"]["first_three"]}
    others = [c for c in GAME.pack if c not in mine]
    rng = random.Random(13)
    n = 660
    held = Counter()
    for _ in range(n):
        deck = GAME.determinize(view, rng)._deck
        held.update(deck[k] for k in (0, 2, 4))  # the declarer's (seat 0's) three
    assert chi2(held, {c: n * 3 / 33 for c in others}) < chi2_limit(32)


def test_only_the_view_is_used():
    """Two states with equal views but different hidden cards give identical samples: for
    seat s, a card of the other hand is swapped with one of s's own down cards (unknown to s
    too, JJK-9.4); both states then take the same actions while s's views stay equal."""
    rng = random.Random(3)
    for seat in (0, 1):
        deck = shuffled(GAME, random.Random(9 + seat))
        other = list(deck)
        hand_pos, down_pos = 7 - seat, 16 + seat  # declarer 0: seat 1 at odd, seat 0 at even
        other[hand_pos], other[down_pos] = other[down_pos], other[hand_pos]
        a, b = GAME.new_state(first_dealer=0), GAME.new_state(first_dealer=0)
        a.deal(deck)
        b.deal(other)
        steps = 0
        while steps < 12:
            common = sorted(set(a.legal_actions()) & set(b.legal_actions()))
            trial_a, trial_b = a.clone(), b.clone()
            act = rng.choice(common)
            trial_a.apply(act)
            trial_b.apply(act)
            if trial_a.view(seat) != trial_b.view(seat):
                break
            a, b = trial_a, trial_b
            steps += 1
        assert steps >= 3 and a.zones() != b.zones() and a.view(seat) == b.view(seat)
        sa = GAME.determinize(a.view(seat), random.Random(77))
        sb = GAME.determinize(b.view(seat), random.Random(77))
        assert sa.zones() == sb.zones() and sa.history() == sb.history()


def test_the_true_deal_is_always_possible():
    """The model never excludes the real deal: every hidden card's true place is within the
    interval of groups the view allows it (not too strict), and known places are right."""
    for seed, i, st in sample_states(range(10), every=2):
        if st.public_view()["phase"] != "playing":
            continue
        for seat in (0, 1):
            model = consistency_model(GAME, st.view(seat))
            true_deck = st._deck
            k = 0 if seat == st.dealer() else 1
            own_hand = [range(k, 6, 2), range(6 + k, 16, 2)]  # the order inside is free
            for positions in own_hand:
                assert {model.deck[p] for p in positions} == {true_deck[p] for p in positions}
            for pos, c in enumerate(model.deck):
                if not any(pos in r for r in own_hand):
                    assert c is None or c == true_deck[pos]
            where = {pos: g for g, (_, slots) in enumerate(model.groups) for pos in slots}
            for c, lo, hi in model.cards:
                assert lo <= where[true_deck.index(c)] <= hi, (seed, i, seat, CODES[c])


def _replays_to(view, seat, deck) -> bool:
    st = GAME.new_state(view["table"]["options"], first_dealer=view["table"]["first_declarer"])
    st._declarer = view["dealer"]
    st.deal(deck)
    for e in view["table"]["deal_actions"]:
        a = st.parse_action(e["action"])
        if st.to_act() != e["seat"] or a not in st.legal_ids():
            return False
        st.apply_id(a)
    v = st.view(seat)
    return v["hand"] == view["hand"] and v["table"] == view["table"] and v["legal"] == view["legal"]


def test_model_admits_exactly_the_deals_that_replay():
    """Deals near the true one (two unknown places swapped): the model allows a swap exactly
    when the swapped deal replays to the same view (neither too strict nor too loose)."""
    rng = random.Random(5)
    agree = Counter()
    for seed, i, st in sample_states(range(12), every=4):
        if st.public_view()["phase"] != "playing":
            continue
        for seat in (0, 1):
            view = st.view(seat)
            model = consistency_model(GAME, view)
            where = {pos: g for g, (_, slots) in enumerate(model.groups) for pos in slots}
            interval = {c: (lo, hi) for c, lo, hi in model.cards}
            free = sorted(where)
            for _ in range(6):
                p, q = rng.sample(free, 2)
                deck = list(st._deck)
                deck[p], deck[q] = deck[q], deck[p]
                allowed = all(interval[deck[pos]][0] <= where[pos] <= interval[deck[pos]][1]
                              for pos in (p, q))
                assert allowed == _replays_to(view, seat, deck), (seed, i, seat, CODES[deck[p]], CODES[deck[q]])
                agree[allowed] += 1
    assert agree[True] > 50 and agree[False] > 50, agree


def _enumerate(caps, cards):
    """Every assignment of cards to groups (as a tuple of group indices per card) that fills
    the groups exactly and keeps each card within its interval."""
    out = []
    for groups in itertools.product(*[range(lo, hi + 1) for _, lo, hi in cards]):
        if all(groups.count(g) == cap for g, cap in enumerate(caps)):
            out.append(groups)
    return out


@pytest.mark.parametrize("caps,cards", [
    ([3, 1, 2, 3], [(0, 0, 3), (1, 0, 3), (2, 1, 3), (3, 1, 3), (4, 2, 3), (5, 0, 0),
                    (6, 0, 1), (7, 3, 3), (8, 1, 2)]),
    ([4, 1, 2, 2], [(0, 0, 0), (1, 0, 1), (2, 0, 2), (3, 1, 3), (4, 2, 3), (5, 2, 3),
                    (6, 0, 3), (7, 0, 3), (8, 3, 3)]),
    # three later classes at group 0, the last of them left empty by some choices
    ([3, 2, 1, 1], [(0, 0, 2), (1, 0, 1), (2, 0, 2), (3, 0, 2), (4, 1, 3), (5, 3, 3), (6, 0, 3)]),
])
def test_group_sampler_is_uniform(caps, cards):
    """The dynamic programme draws every admissible assignment with equal probability."""
    support = _enumerate(caps, cards)
    assert len(support) > 5
    rng = random.Random(2)
    index = {c: k for k, (c, _, _) in enumerate(cards)}
    counts = Counter()
    n = 300 * len(support)
    for _ in range(n):
        chosen = _sample_groups(caps, list(cards), rng)
        groups = [0] * len(cards)
        for g, group in enumerate(chosen):
            for c in group:
                groups[index[c]] = g
        counts[tuple(groups)] += 1
    expected = {a: n / len(support) for a in support}
    assert chi2(counts, expected) < chi2_limit(len(support) - 1)


def test_group_sampler_refuses_intervals_no_assignment_fills():
    """Each card fits some group, but no assignment fills every group exactly (three cards
    only fit the first two groups of one place each): InconsistentView, the view's deal
    does not exist."""
    with pytest.raises(InconsistentView):
        _sample_groups([1, 1, 2], [(0, 0, 1), (1, 0, 1), (2, 0, 1), (3, 2, 2)], random.Random(0))
    assert sorted(map(sorted, _sample_groups([1, 1, 2], [(0, 0, 1), (1, 0, 2), (2, 2, 2), (3, 2, 2)],
                                               random.Random(0)))) == [[0], [1], [2, 3]]


def _first_play_state():
    """Seat 0 declares NT and leads AH; seat 1 holds no heart in hand and discards 7C. Five
    hearts lie face down, one under each of five columns (three of seat 0, two of seat 1)."""
    hands = [["AH", "KH", "QH", "JH", "AS", "KS", "QS", "JS"],
             ["AD", "KD", "QD", "JD", "7C", "8C", "9C", "TC"]]
    cols = [[["TH", "TS"], ["9H", "9S"], ["8H", "8S"], ["AC", "7S"], ["KC", "X1"]],
            [["7H", "TD"], ["6H", "9D"], ["QC", "8D"], ["JC", "7D"], ["X2", "6D"]]]
    deck = deck_for(0, ["AH", "AS", "KS"], hands, cols, other_first_three=["7C", "AD", "KD"])
    st = GAME.new_state(first_dealer=0)
    st.deal(deck)
    st.apply("trump:NT")
    st.apply("play:AH")
    st.apply("play:7C")
    return st


def test_unconstrained_card_lands_anywhere_uniformly():
    """Seat 0 at the start of play: an unknown card is in seat 1's hand with probability
    8/18 and in each of the ten down places with probability 1/18."""
    deck = shuffled(GAME, random.Random(21))
    st = GAME.new_state(first_dealer=0)
    st.deal(deck)
    st.apply("trump:S")
    view = st.view(0)
    card = next(c for c in deck[16:26])  # some down card, unknown to seat 0
    places = {"hand1": 8 / 18, **{f"down{p}": 1 / 18 for p in range(16, 26)}}
    rng = random.Random(8)
    n = 3600
    counts = Counter()
    for _ in range(n):
        s = GAME.determinize(view, rng)
        pos = s._deck.index(card)
        counts["hand1" if pos < 16 else f"down{pos}"] += 1
    assert chi2(counts, {k: p * n for k, p in places.items()}) < chi2_limit(len(places) - 1)


def test_a_revealed_void_is_respected_and_the_rest_stays_uniform():
    """JJK-5.3: seat 1 failed to follow hearts with its first card (from the hand), so no
    unknown heart was in its hand: each of the five unknown hearts is in one of the ten down
    places with probability 1/10; an unknown club is in seat 1's hand with probability 7/N."""
    st = _first_play_state()
    view = st.view(0)
    assert view["table"]["deal_actions"][-1]["action"] == "play:7C"
    unknown = [c for c in GAME.pack if st.secret_cards(0) >> c & 1]
    hearts = [c for c in unknown if 9 <= c < 18]
    assert sorted(CODES[c] for c in hearts) == sorted(["TH", "9H", "8H", "7H", "6H"])
    others = [c for c in unknown if c not in hearts]
    rng = random.Random(6)
    n = 3000
    heart_counts, club_counts = Counter(), Counter()
    club = card_id("QC")
    for _ in range(n):
        s = GAME.determinize(view, rng)
        assert not s.zones()["hand1"] & sum(1 << c for c in hearts)
        heart_counts[s._deck.index(card_id("7H"))] += 1
        pos = s._deck.index(club)
        club_counts["hand1" if pos < 16 else pos] += 1
    downs = range(16, 26)
    assert chi2(heart_counts, {p: n / 10 for p in downs}) < chi2_limit(9)
    # 7 free places in seat 1's hand (all for non-hearts); 5 non-heart places among the downs
    k = len(others)
    expected = {"hand1": n * 7 / k, **{p: n * 5 / (10 * k) for p in downs}}
    assert chi2(club_counts, expected) < chi2_limit(len(expected) - 1)


def test_a_card_played_from_the_other_hand_lies_on_any_of_its_dealt_places():
    """JJK-3.2, JJK-3.4: seat 1 played 7C from its hand; seat 0 cannot tell whether 7C was
    among seat 1's first three (deck 1, 3, 5) or its phase-B five (deck 7 ... 15), so the
    samples put it on each of those eight places alike (every consistent deal equally)."""
    st = _first_play_state()
    view = st.view(0)
    rng = random.Random(14)
    n = 800
    places = Counter(GAME.determinize(view, rng)._deck.index(card_id("7C")) for _ in range(n))
    expected = {p: n / 8 for p in (1, 3, 5, 7, 9, 11, 13, 15)}
    assert chi2(places, expected) < chi2_limit(7)


def test_a_discard_on_a_joker_lead_shows_no_named_suit_and_no_trump_in_hand():
    """JJK-5.4 steps 2-4: seat 0 leads X1 naming hearts in a spade deal and seat 1 discards
    7C with its first card (from the hand, JJK-5.1): it held no heart and no spade, so every
    unknown heart and spade lies among the down cards, the other unknown cards anywhere."""
    hands = [["X1", "AS", "KS", "QS", "JS", "AH", "KH", "QH"],
             ["AD", "KD", "QD", "JD", "7C", "8C", "9C", "TC"]]
    cols = [[["TS", "TD"], ["9S", "9D"], ["JH", "8D"], ["TH", "7D"], ["9H", "6D"]],
            [["8S", "AC"], ["7S", "KC"], ["8H", "QC"], ["7H", "JC"], ["6H", "X2"]]]
    st = GAME.new_state(first_dealer=0)
    st.deal(deck_for(0, ["X1", "AS", "KS"], hands, cols, other_first_three=["7C", "AD", "KD"]))
    for action in ("trump:S", "play:X1:H", "play:7C"):
        st.apply(action)
    model = consistency_model(GAME, st.view(0))
    last = len(model.groups) - 1
    where = {CODES[c]: (lo, hi) for c, lo, hi in model.cards}
    assert sorted(where) == sorted(["TS", "9S", "8S", "7S", "JH", "TH", "9H", "8H", "7H", "6H",
                                    "AD", "KD", "QD", "JD", "8C", "9C", "TC", "7C"]) and last == 1
    assert {c for c, place in where.items() if place == (last, last)} == {
        "TS", "9S", "8S", "7S", "JH", "TH", "9H", "8H", "7H", "6H"}


def test_a_joker_led_final_trick_of_the_previous_deal_keeps_its_named_suit():
    """JJK-9.1 (a leading joker's named suit is public): while the next deal has no complete
    trick, ``last_trick`` is the previous deal's 18th; when a joker naming a suit led it, a
    sample shows that trick as it was, also from a view rebuilt without its winner (then
    JJK-6 by that deal's trump)."""
    found = 0
    for seed in range(700):
        rng = random.Random(seed)
        st = GAME.new_state(first_dealer=seed % 2)
        st.deal(shuffled(GAME, rng))
        while st.to_act() != CHANCE:
            st.apply_id(rng.choice(st.legal_ids()))
        if "named_suit" not in st.view(0)["last_trick"]["plays"][0]:
            continue
        for step in range(2):  # between the deals, then at the next deal's trump choice
            if step:
                st.deal(shuffled(GAME, rng))
            for seat in (0, 1):
                view = st.view(seat)
                assert GAME.determinize(view, rng).view(seat) == view
                bare = {**view, "last_trick": {"plays": view["last_trick"]["plays"]}}
                assert GAME.determinize(bare, rng).view(seat) == view
        found += 1
        if found == 3:
            break
    assert found == 3


def test_a_joker_led_final_trick_is_judged_by_its_named_suit_not_by_the_joker():
    """JJK-6.3: a joker naming Q loses to a normal trump only when Q is not the trump. In this
    spade deal X1 led the 18th trick naming hearts and the follower gave KS: the follower won.
    A view rebuilt without that winner samples it again (by the named suit H, not by X1's
    place among the joker lead keys, which would read as naming spades, the trump)."""
    rng = random.Random(2773)
    st = GAME.new_state(first_dealer=1)
    st.deal(shuffled(GAME, rng))
    while st.to_act() != CHANCE:
        st.apply_id(rng.choice(st.legal_ids()))
    last = st.view(0)["last_trick"]
    assert st.view(0)["deal_results"][-1]["trump"] == "S"
    assert last == {"plays": [{"seat": 1, "card": "X1", "named_suit": "H"}, {"seat": 0, "card": "KS"}],
                    "winner": 0}, last
    for step in range(2):  # between the deals, then at the next deal's trump choice
        if step:
            st.deal(shuffled(GAME, rng))
        for seat in (0, 1):
            view = st.view(seat)
            bare = {**view, "last_trick": {"plays": view["last_trick"]["plays"]}}
            assert GAME.determinize(bare, rng).view(seat) == view


def test_a_previous_deal_final_trick_the_follower_won_keeps_its_winner():
    """JJK-6.1, JJK-6.2 (JJK-9.1: the last trick is public): while the next deal has no
    complete trick, ``last_trick`` is the previous deal's 18th; when its follower won it, a
    sample of a view rebuilt without the winner shows the follower as the winner again, for a
    trick led by either seat, and by the trump of that deal (JJK-3.6), not of an earlier one:
    also after a later deal whose follower won by a trump the first deal did not have."""
    cases = set()
    for seed in range(400):
        rng = random.Random(seed)
        st = GAME.new_state(first_dealer=seed % 2)
        for _ in range(1 + seed % 3):
            st.deal(shuffled(GAME, rng))
            while st.to_act() not in (CHANCE, TERMINAL):
                st.apply_id(rng.choice(st.legal_ids()))
            if st.to_act() == TERMINAL:
                break
        view = st.view(0)
        last, trumps = view["last_trick"], [r["trump"] for r in view["deal_results"]]
        leader = last["plays"][0]["seat"]
        lead, follow = (p["card"] for p in last["plays"])
        ruffed = (trumps[-1] != trumps[0] and "X" not in (lead[0], follow[0])
                  and follow[1] == trumps[-1] != lead[1])
        if last["winner"] != 1 - leader or (leader, ruffed) in cases:
            continue
        for step in range(2):  # between the deals, then at the next deal's trump choice
            if step:
                if st.to_act() == TERMINAL:
                    break
                st.deal(shuffled(GAME, rng))
            for seat in (0, 1):
                view = st.view(seat)
                assert view["last_trick"]["winner"] == 1 - leader
                bare = {**view, "last_trick": {"plays": view["last_trick"]["plays"]}}
                assert GAME.determinize(bare, rng).view(seat) == view
        cases.add((leader, ruffed))
        if len(cases) == 4:
            break
    assert cases == {(0, False), (1, False), (0, True), (1, True)}


def test_a_first_deal_trick_without_its_winner_still_samples():
    """JJK-9.1: once the deal has a complete trick, ``last_trick`` is that trick, which the
    replay of the deal's actions rebuilds; a view rebuilt without its winner (a wire view may
    say less) samples in the match's first deal too, where no earlier deal's trump exists to
    judge it by."""
    st = _first_play_state()
    view = st.view(0)
    assert view["deal_results"] == [] and view["last_trick"]["winner"] == 0
    bare = {**view, "last_trick": {"plays": view["last_trick"]["plays"]}}
    assert GAME.determinize(bare, random.Random(0)).view(0) == view


def test_spectator_and_forged_views_are_refused():
    st = _first_play_state()
    with pytest.raises(InconsistentView):
        GAME.determinize(st.public_view(), random.Random(0))
    forged = st.view(0)
    forged["table"]["deal_actions"][-1]["action"] = "play:KH"  # seat 1 never held KH
    with pytest.raises(InconsistentView):
        GAME.determinize(forged, random.Random(0))
    assert INFINITY > 36


def test_a_trump_choice_by_the_wrong_seat_is_refused():
    """JJK-3.3: the declarer (seat 0, ``dealer``) chooses the trump; a view whose record says
    seat 1 chose it does not replay: InconsistentView."""
    for seat in (0, 1):
        view = _first_play_state().view(seat)
        assert view["dealer"] == 0 and view["table"]["deal_actions"][0] == {"seat": 0, "action": "trump:NT"}
        view["table"]["deal_actions"][0]["seat"] = 1
        with pytest.raises(InconsistentView):
            GAME.determinize(view, random.Random(0))


def test_an_own_follow_the_rules_forbid_is_refused():
    """JJK-5.4 step 2: after X1 led naming diamonds, seat 1 had to give its highest diamond,
    AD. A view of seat 1 edited to say it gave KD (and still holds AD) has the same cards, but
    no deal replays it: InconsistentView (``Game.determinize``), not a sample whose history
    holds an illegal play. The seat's own plays meet the legality check of the replay only."""
    st = _first_play_state()
    st.apply("play:X1:D")
    assert st.legal_actions() == ["play:AD"]
    st.apply("play:AD")
    view = st.view(1)
    assert GAME.determinize(view, random.Random(0)).view(1) == view
    view["table"]["deal_actions"][-1]["action"] = "play:KD"
    view["hand"] = ["AD" if c == "KD" else c for c in view["hand"]]
    with pytest.raises(InconsistentView):
        GAME.determinize(view, random.Random(0))


def test_a_seat_the_game_does_not_have_is_refused():
    """``Game.determinize``: a view of seat 2 (JJK-2.1, JJK-0.3: two players, seats 0 and 1)
    is one no state can show: InconsistentView, not an error of a missing column or hand."""
    view = _first_play_state().view(0)
    for seat in (2, -1):
        with pytest.raises(InconsistentView):
            GAME.determinize({**view, "seat": seat}, random.Random(0))


def test_a_hand_without_an_unplayed_first_three_card_is_refused():
    """JJK-3.2: the seat's first three cards (``first_three``, JJK-9.3) were dealt into its
    hand; a view whose hand lacks one it has not played is edited: InconsistentView, not a
    sample that puts the card back."""
    st = _first_play_state()
    view = st.view(0)
    assert sorted(view["table"]["first_three"]) == ["AH", "AS", "KS"] and "AS" in view["hand"]
    GAME.determinize(view, random.Random(0))
    view["hand"].remove("AS")
    with pytest.raises(InconsistentView):
        GAME.determinize(view, random.Random(0))


def test_a_hand_without_a_card_moved_into_it_is_refused():
    """JJK-4.2, JJK-9.3: playing the up card TS moves its down card TH into seat 0's hand,
    which its view lists (``moved_cards``); a view whose hand lacks TH, or holds a card twice,
    is edited: InconsistentView (``Game.determinize``), not a sample with another hand."""
    st = _first_play_state()
    st.apply("play:TS")
    view = st.view(0)
    assert view["table"]["deal_actions"][-1]["moved_cards"] == ["TH"] and "TH" in view["hand"]
    assert GAME.determinize(view, random.Random(0)).view(0) == view
    for hand in ([c for c in view["hand"] if c != "TH"], view["hand"] + ["TH"]):
        with pytest.raises(InconsistentView):
            GAME.determinize({**view, "hand": hand}, random.Random(0))
