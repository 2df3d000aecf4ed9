"""Japanese Joker knowledge for the generic invariant tests (tests/rules/test_invariants.py)."""

from __future__ import annotations

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
