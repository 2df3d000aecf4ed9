"""Georgian Joker knowledge for the generic invariant tests (tests/rules/test_invariants.py).

``check_scores`` re-derives every number of a finished (or unfinished) match from the deal
results with an independent transcription of the rulebook's arithmetic (GJ-7, GJ-8, GJ-9), so a
wrong engine formula cannot agree with itself here.
"""

from __future__ import annotations

STANDARD = [1, 2, 3, 4, 5, 6, 7, 8, 9, 9, 9, 9, 8, 7, 6, 5, 4, 3, 2, 1, 9, 9, 9, 9]
STANDARD_PULKAS = [(0, 8), (8, 12), (12, 20), (20, 24)]
NINES_PULKAS = [(0, 4), (4, 8), (8, 12), (12, 16)]

OPTION_SETS = [
    {"deal_schedule": "nines"},
    {"khishti_penalty": "500", "moshla": "single_premium_only"},
    {"khishti_penalty": "100_per_card", "moshla": "off", "high_joker_lead_trumpable": True},
    {"pulka_premium": False, "deal_schedule": "nines", "khishti_penalty": "100_per_card"},
    {"high_joker_lead_trumpable": True, "deal_schedule": "nines", "moshla": "single_premium_only",
     "turn_time_s": 10, "reconnect_grace_s": 600},
]


def expected_score(bid: int, taken: int, n: int, khishti: str) -> int:
    """GJ-7.1 .. GJ-7.5, written out independently of the engine."""
    if bid == taken == n:
        return 100 * n
    if bid == taken == 0:
        return 50
    if bid == taken:
        return 50 * bid + 50
    if taken == 0:
        return {"200": -200, "500": -500, "100_per_card": -100 * n}[khishti]
    return 10 * taken


def check_scores(state) -> None:
    opts = state.options
    nines = opts["deal_schedule"] == "nines"
    schedule = [9] * 16 if nines else STANDARD
    pulkas = NINES_PULKAS if nines else STANDARD_PULKAS
    results = state.deal_results()
    assert len(results) <= len(schedule)
    totals = [0, 0, 0, 0]
    for k, r in enumerate(results):
        n = schedule[k]
        assert sum(r["taken"]) == n, f"deal {k + 1}: {r['taken']} tricks for n = {n}"
        assert sum(r["bids"]) != n, "GJ-4.4: the bids never add up to n"
        assert all(0 <= b <= n for b in r["bids"])
        assert r["trump"] in ("S", "H", "D", "C", "NT")
        assert r["scores"] == [expected_score(b, t, n, opts["khishti_penalty"])
                               for b, t in zip(r["bids"], r["taken"])], r
        last_of_pulka = any(k == end - 1 for _, end in pulkas)
        assert ("premium" in r) == last_of_pulka and ("moshla" in r) == last_of_pulka, (k, r)
        for p in range(4):
            totals[p] += r["scores"][p] + r.get("premium", [0] * 4)[p] + r.get("moshla", [0] * 4)[p]
    for start, end in pulkas:
        if len(results) < end:
            break
        deals = results[start:end]
        premium, moshla = deals[-1]["premium"], deals[-1]["moshla"]
        if not opts["pulka_premium"]:
            assert premium == [0] * 4 and moshla == [0] * 4
            continue
        made_all = [all(d["bids"][p] == d["taken"][p] for d in deals) for p in range(4)]
        best = [max(d["scores"][p] for d in deals) for p in range(4)]
        count = sum(made_all)
        cancel = {"all_others": count >= 1, "single_premium_only": count == 1, "off": False}[opts["moshla"]]
        for p in range(4):
            assert premium[p] == (best[p] if made_all[p] else 0), (p, deals)
            assert moshla[p] == (-max(0, best[p]) if cancel and not made_all[p] else 0), (p, deals)
    res = state.result()
    assert res["totals"] == totals
    if res["over"]:
        assert len(results) == len(schedule)
        assert res["winners"] == [p for p in range(4) if totals[p] == max(totals)]
    else:
        assert res["winners"] == []
