"""Random play checked against a literal, slow transcription of the rulebook's play rules
(JJ-6.8 legal set, JJ-6.6 trick winner, JJ-8.1/8.2 trick value, JJ-7.2 announcements), written
here from the text and independent of the engine's precomputed tables."""

from __future__ import annotations

import pytest

from .checks_jojotte import GAME, OPTION_SETS
from .playout import iter_states

TRUMP_ORDER = "J9ATKQ87"
PLAIN_ORDER = "ATKQJ987"


def beats(card: str, lead: str, trump: str | None) -> bool:
    """JJ-6.6: does ``card``, played second, win over ``lead``?"""
    if card[1] == lead[1]:
        order = TRUMP_ORDER if lead[1] == trump else PLAIN_ORDER
        return order.index(card[0]) < order.index(lead[0])
    return card[1] == trump


def legal_set(hand: list[str], lead: str | None, trump: str | None, head_plain: bool) -> set[str]:
    """JJ-6.8 word for word."""
    if lead is None:
        return set(hand)
    same = [c for c in hand if c[1] == lead[1]]
    if same:
        better = [c for c in same if beats(c, lead, trump)]
        if better and (lead[1] == trump or head_plain):
            return set(better)
        return set(same)
    trumps = [c for c in hand if c[1] == trump]
    return set(trumps) if trump and trumps else set(hand)


def value(card: str, trump: str | None) -> int:
    """JJ-8.1."""
    if card[1] == trump and card[0] == "J":
        return 20
    if card[1] == trump and card[0] == "9":
        return 15
    return {"A": 10, "T": 10, "K": 5, "Q": 5}.get(card[0], 0)


@pytest.mark.parametrize("options", [{}] + OPTION_SETS + [{"jj_must_head_plain": False}],
                         ids=lambda o: str(sorted(o))[:40])
def test_play_matches_the_rulebook_text(options):
    opts = GAME.options(options)
    head_plain = opts["jj_must_head_plain"]
    mode = opts["jj_trick_value"]
    required = opts["jj_jojotte_announcement"] == "required"
    checked = 0
    for seed in range(10):
        for state in iter_states(GAME, 8000 + seed, options):
            view = state.view(state.to_act())
            if view["phase"] != "play":
                continue
            contract = view["table"]["contract"]
            strain = contract["play_strain"]
            trump = None if strain == "NT" else strain
            lead = view["trick"][0]["card"] if view["trick"] else None
            expect = legal_set(view["hand"], lead, trump, head_plain)
            plain = {a[5:] for a in view["legal"] if a.startswith("play:") and a.count(":") == 1}
            assert plain == expect, (view["hand"], lead, strain)
            # JJ-7.2: jo on the trump king while holding the trump queen; jotte after one's jo
            jo = {a[5:7] for a in view["legal"] if a.endswith(":jo")}
            jotte = {a[5:7] for a in view["legal"] if a.endswith(":jotte")}
            can = required and trump is not None and contract["kind"] != "nullo"
            want_jo = {"K" + trump} & plain if can and "Q" + trump in view["hand"] else set()
            assert jo == want_jo
            seat = view["seat"]
            want_jotte = {"Q" + trump} & plain if can and seat in view["table"]["jo"] else set()
            assert jotte == want_jotte
            # finished tricks: JJ-6.6 winner, JJ-8.2 value (+10 for the ninth, not in nullo)
            for n, t in enumerate(view["table"]["tricks"]):
                (s1, c1), (s2, c2) = [(p["seat"], p["card"]) for p in t["plays"]]
                w = s2 if beats(c2, c1, trump) else s1
                assert t["winner"] == w
                v1, v2 = value(c1, trump), value(c2, trump)
                v = {"max_card": max(v1, v2), "sum": v1 + v2,
                     "winning_card": v2 if w == s2 else v1}[mode]
                assert t["value"] == v + (10 if n == 8 and contract["kind"] != "nullo" else 0)
            checked += 1
    assert checked > 300
