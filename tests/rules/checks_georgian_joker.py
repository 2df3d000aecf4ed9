"""Georgian Joker knowledge for the generic invariant tests (tests/rules/test_invariants.py),
and the helpers of the Georgian Joker tests (readable decks, states at a chosen deal).

``check_scores`` re-derives every number of a finished (or unfinished) match from the deal
results with an independent transcription of the rulebook's arithmetic (GJ-7, GJ-8, GJ-9), so a
wrong engine formula cannot agree with itself here.
"""

from __future__ import annotations

import json
import random

from engine_service.rules import CHANCE, get_game
from engine_service.rules.cards import CODES, PACK36_JOKERS, card_id

STANDARD = STANDARD_N = [1, 2, 3, 4, 5, 6, 7, 8, 9, 9, 9, 9, 8, 7, 6, 5, 4, 3, 2, 1, 9, 9, 9, 9]
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


# ---- helpers for the Georgian Joker tests ------------------------------------------------------

GAME = get_game("georgian_joker")


def ids(codes):
    return [card_id(c) for c in (codes.split() if isinstance(codes, str) else codes)]


def deck_for(hands: dict[int, list[str]] | list[list[str]], dealer: int, indicator: str | None = None) -> list[str]:
    """The deck (top card first) that deals ``hands`` by GJ-3.2 / GJ-3.5 for ``dealer``, with
    ``indicator`` turned (n <= 8) and the remaining cards as the stock in pack order."""
    hands = {s: (h.split() if isinstance(h, str) else list(h)) for s, h in
             (hands.items() if isinstance(hands, dict) else enumerate(hands))}
    n = len(hands[0])
    assert all(len(h) == n for h in hands.values())
    f = (dealer + 1) % 4
    deck = [None] * (4 * n)
    for i in range(4):
        for r, c in enumerate(hands[(f + i) % 4]):
            deck[4 * r + i] = c
    used = set(deck)
    if indicator is not None:
        deck.append(indicator)
        used.add(indicator)
    deck += [CODES[c] for c in PACK36_JOKERS if CODES[c] not in used]
    assert len(deck) == 36 and len(set(deck)) == 36, deck
    return deck


def fill_hands(fixed: dict[int, str], n: int, avoid: dict[int, str] | None = None,
               exclude: str = "") -> list[list[str]]:
    """Complete partial hands to ``n`` cards from the rest of the pack (pack order), never giving
    a seat a card of the suits in ``avoid[seat]``; cards in ``exclude`` are kept out."""
    avoid = avoid or {}
    hands = [list(fixed.get(s, "").split()) for s in range(4)]
    used = {c for h in hands for c in h} | set(exclude.split())
    pool = [CODES[c] for c in PACK36_JOKERS if CODES[c] not in used]
    for s in range(4):
        for c in list(pool):
            if len(hands[s]) == n:
                break
            if c[0] == "X" or c[1] not in avoid.get(s, ""):
                hands[s].append(c)
                pool.remove(c)
        assert len(hands[s]) == n, f"cannot fill seat {s}"
    return hands


def state_at_deal(deal_number: int, options: dict | None = None, first_dealer: int = 0, seed: int = 0):
    """A match waiting for the deck of deal ``deal_number`` (1-based); earlier deals are played
    with random decks by the auto-move policy (GJ-12.2), through the public API only."""
    rng = random.Random(seed)
    state = GAME.new_state(options or {}, first_dealer=first_dealer)
    while len(state.deal_results()) < deal_number - 1:
        if state.to_act() == CHANCE:
            deck = list(GAME.pack)
            rng.shuffle(deck)
            state.deal(deck)
        else:
            state.apply(GAME.auto_move(state.view(state.to_act())))
    assert state.to_act() == CHANCE
    return state


def snapshot(state) -> str:
    return json.dumps([state.to_act(), state.legal_actions(), state.zones(), state.result(),
                       state.deal_results(), state.public_view(), [state.view(s) for s in range(4)],
                       len(state.history())], sort_keys=True)
