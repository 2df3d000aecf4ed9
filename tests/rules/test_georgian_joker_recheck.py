"""A second, fresh-eyes pass over the Georgian Joker rulebook (``georgian_joker.md``).

Two kinds of tests:

* targeted tests for behaviour no other test pinned down (each names its rule id): the match is
  not over while its last deal is being played (GJ-9.1), the trump chooser is public only in
  nine-card deals (GJ-2.7, GJ-3.5, GJ-11.1, GJ-11.4);
* a second reference written from the rulebook text alone (independently of the engine and of
  ``RefMatch`` in ``test_georgian_joker_audit.py``): whole matches under each table option alone
  and under sensible pairs (GJ-13), written as ``card-transcript/1`` transcripts with every legal
  set and every result (NOTATION.md sections 2-4) and replayed through ``transcript.check``, the
  path the hidden transcripts take. Bids are *planned* on a dry run of the deal (the card play
  does not look at the bids), so that pulkas with zero, one and several qualifiers occur and the
  premium and moshla (GJ-8) are exercised, not only the deal scores.
"""

from __future__ import annotations

import random
from collections import Counter
from typing import Any

import pytest

from engine_service.rules import TERMINAL, transcript

from .checks_georgian_joker import GAME, deck_for, state_at_deal

# ---- GJ-9.1: the match ends only after the last scheduled deal is scored ----------------------------


@pytest.mark.parametrize("options,deals", [({}, 24), ({"deal_schedule": "nines"}, 16)])
def test_match_is_not_over_while_its_last_deal_is_played_gj_9_1(options, deals):
    """GJ-9.1: the match ends after the last scheduled deal (24 or 16) *has been scored* and
    pulka IV settled. While that deal is being played (trump choice, bids, every card but the
    last) ``result()`` says ``over: false`` with no winners, and so does every view; a transcript
    stopped inside the last deal reports ``over: false`` (NOTATION.md section 3). Only the last
    card ends the match."""
    state = state_at_deal(deals, options, first_dealer=2, seed=91)
    assert len(state.deal_results()) == deals - 1
    deck = list(GAME.pack)
    random.Random(91).shuffle(deck)
    state.deal(deck)
    steps = 0
    while True:
        who = state.to_act()
        assert who >= 0
        res = state.result()
        assert res["over"] is False and res["winners"] == [], (steps, res)
        for view in [state.public_view()] + [state.view(s) for s in range(4)]:
            assert view["over"] is False and view["winners"] == [] and view["phase"] != "match_over"
        if steps == 5:  # a transcript stopped inside the last deal: not over, checks out
            data = transcript.export(state)
            assert data["result"]["over"] is False and data["result"]["winners"] == []
            assert "result" not in data["deals"][-1]
            assert transcript.check(data)[0] is None
        state.apply(GAME.auto_move(state.view(who)))
        steps += 1
        if state.to_act() == TERMINAL:
            break
    assert steps == 1 + 4 + 4 * 9  # the last deal has n = 9 in both schedules: trump, bids, cards
    res = state.result()
    assert res["over"] is True and res["winners"]
    assert len(state.deal_results()) == deals and "premium" in state.deal_results()[-1]


# ---- GJ-11.1 / GJ-11.4: who chooses the trump ----------------------------------------------------


def test_trump_chooser_is_public_only_in_nine_card_deals_gj_11_1_gj_11_4():
    """GJ-2.7 / GJ-3.5: the forehand chooses the trump only in nine-card deals; GJ-11.4 makes the
    chooser public at ``TRUMP_CHOICE``. In an ``n <= 8`` deal the trump comes from the indicator
    and nobody chooses it: ``table.trump_chooser`` is None there (as ``trump_chooser`` is ``null``
    in the deal vectors, GJ-0.4), and the forehand in a nine-card deal, for every audience."""
    state = state_at_deal(3, {}, first_dealer=1)  # n = 3, dealer 3, forehand 0
    state.deal(deck_for([["AS", "KH", "7C"], ["8S", "9H", "JC"], ["X1", "QS", "6H"], ["TS", "8C", "9D"]], 3, "TD"))
    for view in [state.public_view()] + [state.view(s) for s in range(4)]:
        assert view["table"]["cards_per_player"] == 3
        assert view["table"]["trump_chooser"] is None
        assert view["table"]["trump_indicator"] == "TD" and view["table"]["trump"] == "D"

    nines = GAME.new_state({"deal_schedule": "nines"}, first_dealer=2)  # forehand 3
    deck = list(GAME.pack)
    random.Random(7).shuffle(deck)
    nines.deal(deck)
    assert nines.to_act() == 3
    for view in [nines.public_view()] + [nines.view(s) for s in range(4)]:
        assert view["phase"] == "trump_choice"
        assert view["table"]["trump_chooser"] == 3 and view["table"]["forehand"] == 3
        assert view["table"]["trump"] is None and view["table"]["trump_indicator"] is None


# ---- a second reference, from the rulebook text only ---------------------------------------------

RANKS = "AKQJT9876"  # GJ-1.2, high to low
SUITS = "SHDC"
PACK = [r + s for s in SUITS for r in RANKS if r + s not in ("6S", "6C")] + ["X1", "X2"]  # GJ-1.1
STANDARD = [1, 2, 3, 4, 5, 6, 7, 8, 9, 9, 9, 9, 8, 7, 6, 5, 4, 3, 2, 1, 9, 9, 9, 9]  # GJ-2.4


def _joker(card: str) -> bool:
    return card[0] == "X"


def _rank(card: str) -> int:
    return 8 - RANKS.index(card[0])


def ref_legal_cards(hand: list[str], lead: tuple[str, str | None, str | None], trump: str) -> list[str]:
    """GJ-5.3 .. GJ-5.5 for a follower; ``lead`` = (card, mode, named suit)."""
    card, mode, named = lead
    demand = named if _joker(card) else card[1]
    jokers = [c for c in hand if _joker(c)]  # step 1: always legal
    suit = [c for c in hand if not _joker(c) and c[1] == demand]
    if suit:  # step 2 (GJ-5.4: only the highest after a high joker lead)
        return ([max(suit, key=_rank)] if _joker(card) and mode == "high" else suit) + jokers
    trumps = [c for c in hand if not _joker(c) and trump != "NT" and c[1] == trump]
    if trumps:  # step 3: any trump (GJ-5.8)
        return trumps + jokers
    return list(hand)  # step 4


def ref_winner(plays: list[tuple[int, str, str | None, str | None]], trump: str, trumpable: bool) -> int:
    """GJ-6.1 .. GJ-6.6 in the rulebook's order; ``plays`` = (seat, card, mode, named)."""
    lead = plays[0]
    demand = lead[3] if _joker(lead[1]) else lead[1][1]
    highs = [p for p in plays if _joker(p[1]) and p[2] == "high"]
    trumps = [p for p in plays if not _joker(p[1]) and trump != "NT" and p[1][1] == trump]
    if (trumpable and highs == [lead] and trump != "NT" and demand != trump and trumps):  # GJ-6.6
        return max(trumps, key=lambda p: _rank(p[1]))[0]
    if highs:  # GJ-6.1: the last high joker
        return highs[-1][0]
    if trumps:  # GJ-6.2
        return max(trumps, key=lambda p: _rank(p[1]))[0]
    suit = [p for p in plays if not _joker(p[1]) and p[1][1] == demand]
    if suit:  # GJ-6.3
        return max(suit, key=lambda p: _rank(p[1]))[0]
    return lead[0]  # GJ-6.4


def ref_score(bid: int, taken: int, n: int, khishti: str) -> int:
    """GJ-7.1 .. GJ-7.5, first matching line."""
    if taken == bid == n:
        return 100 * n
    if taken == bid == 0:
        return 50
    if taken == bid:
        return 50 * (bid + 1)
    if bid >= 1 and taken == 0:
        return -{"200": 200, "500": 500, "100_per_card": 100 * n}[khishti]
    return 10 * taken


def _card_actions(cards: list[str], leading: bool) -> list[str]:
    out = []
    for c in cards:
        if not _joker(c):
            out.append(f"play:{c}")
        elif leading:
            out += [f"play:{c}:{m}:{s}" for m in ("high", "low") for s in SUITS]
        else:
            out += [f"play:{c}:high", f"play:{c}:low"]
    return out


def ref_match(options: dict[str, Any], seed: int, seen: Counter) -> dict[str, Any]:
    """A whole match written as a card-transcript/1 object, from the rulebook alone."""
    rng = random.Random(seed)
    ns = STANDARD if options.get("deal_schedule", "standard") == "standard" else [9] * 16  # GJ-2.5
    per_pulka = [8, 4, 8, 4] if len(ns) == 24 else [4, 4, 4, 4]
    pulka_of = [p for p, k in enumerate(per_pulka) for _ in range(k)]
    khishti = options.get("khishti_penalty", "200")
    premium_on = options.get("pulka_premium", True)
    moshla = options.get("moshla", "all_others")
    trumpable = options.get("high_joker_lead_trumpable", False)
    first_dealer = dealer = rng.randrange(4)
    totals = [0] * 4
    deals: list[dict[str, Any]] = []
    pulka_scores: list[list[int]] = []
    pulka_made: list[list[bool]] = []
    for index, n in enumerate(ns):
        deck = PACK[:]
        rng.shuffle(deck)
        forehand = (dealer + 1) % 4  # GJ-0.3
        hands: list[list[str]] = [[] for _ in range(4)]
        steps: list[dict[str, Any]] = []
        dealt = 4 * n if n <= 8 else 12
        for k in range(dealt):  # GJ-3.2 / GJ-3.5 phase A
            hands[(forehand + k) % 4].append(deck[k])
        if n <= 8:  # GJ-3.3
            trump = "NT" if _joker(deck[4 * n]) else deck[4 * n][1]
        else:
            legal = [f"trump:{t}" for t in ("S", "H", "D", "C", "NT")]
            action = rng.choice(legal)
            steps.append({"seat": forehand, "legal": legal, "action": action})
            trump = action[6:]
            for k in range(12, 36):  # GJ-3.5 phase B
                hands[(forehand + k) % 4].append(deck[k])
        play_seed = rng.random()

        def play_deal(hs: list[list[str]], record: bool) -> list[int]:
            prng = random.Random(play_seed)
            taken = [0] * 4
            leader = forehand
            for _ in range(n):
                plays: list[tuple[int, str, str | None, str | None]] = []
                for i in range(4):
                    seat = (leader + i) % 4
                    cards = hs[seat] if i == 0 else ref_legal_cards(hs[seat], plays[0][1:], trump)
                    card = prng.choice(cards)
                    mode = named = None
                    if _joker(card):
                        mode = prng.choice(["high", "low"])
                        named = prng.choice(SUITS) if i == 0 else None
                    action = ":".join(["play", card] + [x for x in (mode, named) if x])
                    if record:
                        steps.append({"seat": seat, "legal": _card_actions(cards, i == 0), "action": action})
                    hs[seat].remove(card)
                    plays.append((seat, card, mode, named))
                leader = ref_winner(plays, trump, trumpable)
                taken[leader] += 1
            return taken

        # plan the bids: a dry run gives the tricks; most seats bid them exactly, the others not
        planned = play_deal([h[:] for h in hands], False)
        makers = {p for p in range(4) if rng.random() < 0.8}
        bids = [0] * 4
        total = 0
        for i in range(4):  # GJ-4.1: forehand first, dealer last
            seat = (forehand + i) % 4
            values = list(range(n + 1))
            if i == 3 and total <= n:  # GJ-4.3
                values.remove(n - total)
            legal = [f"bid:{v}" for v in values]
            want = planned[seat] if seat in makers else (planned[seat] + 1) % (n + 1)
            bid = want if want in values else rng.choice(values)
            steps.append({"seat": seat, "legal": legal, "action": f"bid:{bid}"})
            bids[seat] = bid
            total += bid
        taken = play_deal(hands, True)
        assert taken == planned
        scores = [ref_score(bids[p], taken[p], n, khishti) for p in range(4)]
        result: dict[str, Any] = {"trump": trump, "bids": bids, "taken": taken, "scores": scores}
        totals = [t + s for t, s in zip(totals, scores)]
        pulka_scores.append(scores)
        pulka_made.append([bids[p] == taken[p] for p in range(4)])
        if index == len(ns) - 1 or pulka_of[index + 1] != pulka_of[index]:  # GJ-8
            prem, mosh = [0] * 4, [0] * 4
            qualifiers = [p for p in range(4) if all(m[p] for m in pulka_made)]
            if premium_on:  # GJ-8.4
                best = [max(s[p] for s in pulka_scores) for p in range(4)]
                for p in qualifiers:
                    prem[p] = best[p]
                if {"all_others": len(qualifiers) >= 1, "single_premium_only": len(qualifiers) == 1,
                        "off": False}[moshla]:
                    for p in range(4):
                        if p not in qualifiers:
                            mosh[p] = -max(0, best[p])
            seen[f"qualifiers={min(len(qualifiers), 2)}"] += 1
            seen["moshla"] += any(mosh)
            result["premium"], result["moshla"] = prem, mosh
            totals = [t + a + b for t, a, b in zip(totals, prem, mosh)]
            pulka_scores, pulka_made = [], []
        seen["khishti"] += any(s < 0 for s in scores)
        seen["NT"] += trump == "NT"
        deals.append({"deck": deck, "expect": {"dealer": dealer}, "steps": steps, "result": result})
        dealer = (dealer + 1) % 4  # GJ-2.3
    top = max(totals)
    return {"schema": "card-transcript/1", "game": "georgian_joker", "options": options,
            "first_dealer": first_dealer, "deals": deals,
            "result": {"totals": totals, "winners": [p for p in range(4) if totals[p] == top], "over": True}}


SINGLE_OPTIONS = [
    {},
    {"deal_schedule": "nines"},
    {"khishti_penalty": "500"},
    {"khishti_penalty": "100_per_card"},
    {"pulka_premium": False},
    {"moshla": "single_premium_only"},
    {"moshla": "off"},
    {"high_joker_lead_trumpable": True},
]
PAIRED_OPTIONS = [
    {"deal_schedule": "nines", "khishti_penalty": "100_per_card"},
    {"deal_schedule": "nines", "moshla": "single_premium_only"},
    {"deal_schedule": "nines", "high_joker_lead_trumpable": True},
    {"pulka_premium": False, "moshla": "single_premium_only"},
    {"pulka_premium": False, "moshla": "off"},
    {"khishti_penalty": "500", "high_joker_lead_trumpable": True},
    {"moshla": "off", "khishti_penalty": "100_per_card"},
    {"deal_schedule": "nines", "pulka_premium": False, "high_joker_lead_trumpable": True},
]


@pytest.mark.parametrize("options", SINGLE_OPTIONS + PAIRED_OPTIONS, ids=lambda o: ",".join(
    f"{k}={v}" for k, v in o.items()) or "defaults")
def test_second_reference_matches_check_out_gj_13(options):
    """GJ-13 (each option alone and sensible pairs) with GJ-2 .. GJ-9: whole matches written by
    the second reference check out through ``transcript.check`` (every legal set compared as a
    set, every deal result key by key, the match result); the planned bids make pulkas with and
    without qualifiers, so premium and moshla are exercised."""
    seen: Counter = Counter()
    for seed in range(3):
        data = ref_match(dict(options), 1000 * len(options) + seed, seen)
        diff, state = transcript.check(transcript.validate(data))
        assert diff is None, str(diff)
        assert state is not None and state.to_act() == TERMINAL
    assert seen["qualifiers=1"] + seen["qualifiers=2"] > 0
    if options.get("pulka_premium", True) and options.get("moshla", "all_others") != "off":
        assert seen["moshla"] > 0


def test_second_reference_detects_a_wrong_engine_answer():
    """The comparison above is not vacuous: one changed legal set, one changed score, one changed
    moshla entry each make ``transcript.check`` report a difference."""
    seen: Counter = Counter()
    data = ref_match({"deal_schedule": "nines"}, 5, seen)
    step = next(s for s in data["deals"][0]["steps"] if len(s["legal"]) > 1)
    step["legal"] = step["legal"][1:]
    assert transcript.check(data)[0].what == "legal"
    data = ref_match({"deal_schedule": "nines"}, 5, seen)
    data["deals"][2]["result"]["scores"][1] += 10
    assert transcript.check(data)[0].what == "result.scores"
    data = ref_match({"deal_schedule": "nines"}, 5, seen)
    data["deals"][3]["result"]["moshla"][0] -= 1
    assert transcript.check(data)[0].what == "result.moshla"
