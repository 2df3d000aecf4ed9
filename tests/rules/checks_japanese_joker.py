"""Japanese Joker knowledge for the tests: ``check_scores`` and ``OPTION_SETS`` for the generic
invariant tests (tests/rules/test_invariants.py), and helpers for the JJK tests: decks from
readable cards, play-by-card, and a search that plays a deal to an exact trick split (for the
match vectors)."""

from __future__ import annotations

import random
from typing import Sequence

from engine_service.rules import CHANCE
from engine_service.rules.games.japanese_joker import GAME
from engine_service.rules.cards import card_id


def deck_for(declarer: int, first_three: Sequence[str], hands: Sequence[Sequence[str]],
             columns: Sequence[Sequence[Sequence[str]]], other_first_three: Sequence[str] | None = None) -> list[str]:
    """The deck that deals these hands and columns by JJK-3.2 / 3.4 (deck[0] = top card).

    ``hands`` are the eight cards each seat holds after dealing; ``columns`` per seat
    ``[down, up]`` in table order; the declarer's first three are ``first_three``; the other
    seat's are ``other_first_three`` (default: the first three of its listed hand)."""
    d, o = declarer, 1 - declarer
    f3 = {d: list(first_three), o: list(other_first_three or hands[o][:3])}
    rest = {s: [c for c in hands[s] if c not in f3[s]] for s in (0, 1)}
    assert all(len(f3[s]) == 3 and len(rest[s]) == 5 for s in (0, 1)), (f3, rest)
    deck: list[str] = []
    for i in range(3):
        deck += [f3[d][i], f3[o][i]]
    for i in range(5):
        deck += [rest[d][i], rest[o][i]]
    for k in (0, 1):
        for i in range(5):
            deck += [columns[d][i][k], columns[o][i][k]]
    assert sorted(card_id(c) for c in deck) == sorted(GAME.pack), deck
    return deck


def legal_cards(state) -> set[str]:
    """The legal actions as card codes (a leading joker's four named forms count once)."""
    return {a.split(":")[1] for a in state.legal_actions()}


def play(state, card: str, named: str | None = None) -> None:
    state.apply(f"play:{card}" + (f":{named}" if named else ""))


def play_to_split(state, want: tuple[int, int], rng: random.Random, node_limit: int = 20000) -> bool:
    """Play the current deal (trump already chosen) to exactly ``want`` tricks by depth-first
    search over legal actions; True when found (the state is then at the deal's end)."""
    nodes = 0
    start_results = len(state.deal_results())

    def done(st) -> bool:
        return len(st.deal_results()) > start_results

    def search(st) -> list[int] | None:
        nonlocal nodes
        nodes += 1
        if nodes > node_limit:
            return None
        if done(st):
            return [] if tuple(st.deal_results()[-1]["taken"]) == want else None
        taken = st._taken
        if taken[0] > want[0] or taken[1] > want[1]:
            return None
        p = st.to_act()
        need_p = want[p] - taken[p]
        need_o = want[1 - p] - taken[1 - p]
        moves = st.legal_ids()
        rng.shuffle(moves)
        if st._lead >= 0:  # following: winning moves first when p needs more than the other
            def wins(a: int) -> bool:
                c = st.clone()
                c._apply(a)
                return c._taken[p] > taken[p] if not done(c) else c.deal_results()[-1]["taken"][p] > taken[p]
            moves.sort(key=lambda a: wins(a) != (need_p >= need_o))
        for a in moves:
            c = st.clone()
            c.apply_id(a)
            rest = search(c)
            if rest is not None:
                return [a] + rest
        return None

    line = search(state.clone())
    if line is None:
        return False
    for a in line:
        state.apply_id(a)
    return True


def play_match_deal(state, want: tuple[int, int], seed: int):
    """Deal fresh decks (the declarer choosing trump by the auto-move policy) until one can
    be played to the split ``want``; returns the new match state (``state`` is not changed)."""
    rng = random.Random(seed)
    for _ in range(200):
        assert state.to_act() == CHANCE
        deck = list(GAME.pack)
        rng.shuffle(deck)
        trial = state.clone()
        trial.deal(deck)
        trial.apply(GAME.auto_move(trial.view(trial.to_act())))
        if play_to_split(trial, want, rng):
            return trial
    raise AssertionError(f"no deal found for the split {want}")


def ids(cards: Sequence[str]) -> list[int]:
    return [card_id(c) for c in cards]


OPTION_SETS = [
    {"target_score": 11},
    {"target_score": 15, "turn_time_s": 10, "reconnect_grace_s": 600},
    {"target_score": 31, "turn_time_s": 120, "reconnect_grace_s": 15},
]


def check_scores(state) -> None:
    """JJK-7.1, 7.2, 8.2, 2.3: every deal has 18 tricks and scores the trick difference for the
    player with more tricks only; totals are the sums of the deal scores; the match ends at the
    first deal after which a player reaches the target, and that player alone wins."""
    target = state.options["target_score"]
    results = state.deal_results()
    totals = [0, 0]
    for i, r in enumerate(results):
        assert set(r) == {"trump", "taken", "scores"}, r
        assert r["trump"] in ("S", "H", "D", "C", "NT")
        a, b = r["taken"]
        assert a + b == 18
        assert r["scores"] == [max(a - b, 0), max(b - a, 0)]
        assert max(totals) < target, f"the match went on after deal {i - 1} reached the target"
        totals = [totals[0] + r["scores"][0], totals[1] + r["scores"][1]]
    res = state.result()
    assert res["totals"] == totals
    if res["over"]:
        assert max(totals) >= target
        assert res["winners"] == [totals.index(max(totals))]
        assert min(totals) < target
    else:
        assert max(totals) < target and res["winners"] == []
    # the declarer alternates after every deal, draws included (JJK-2.3)
    assert state.dealer() == state.first_dealer ^ (len(results) % 2)
