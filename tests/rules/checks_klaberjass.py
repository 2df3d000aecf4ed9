"""Klaberjass knowledge for the generic invariant tests (tests/rules/test_invariants.py).

``check_scores`` re-derives every deal's entries from the reported melds, card points and
bonuses with the arithmetic of KL-9.1-9.4 (both ``kl_score_scope`` readings, KL-A17), checks
that the running totals are the sums of the entries (KL-9.5) and that the match ended exactly
as KL-10 says. ``OPTION_SETS`` together switch every table option of section 11 away from its
default at least once.
"""

from __future__ import annotations

OPTION_SETS = [
    {"kl_schmeiss": True, "kl_dix_window": "before_melds", "kl_bella_order": "any",
     "kl_must_overtrump": False, "kl_target_score": 300, "kl_draw_order": "natural"},
    {"kl_meld_declaration": "optional", "kl_bella_announcement": "required", "kl_split_runs": True,
     "kl_sequence_compare": "length", "kl_winner_sequences": "best_plus_one",
     "kl_reveal_scored_melds": "cards", "kl_draw_tie": "suit_order"},
    {"kl_deal_first_to": "elder", "kl_first_deal_packet": 2, "kl_dealer_rotation": "same_dealer",
     "kl_throw_in_redealer": "other", "kl_dix_requires_turnup_trump": True,
     "kl_bella_order": "king_first", "kl_trump_kqj_bonus": False, "kl_ten_value": 0,
     "kl_score_scope": "trick_points", "kl_simultaneous_target": "deal_winner", "kl_target_score": 200},
]


def expected_entries(result: dict, trick_scope: bool) -> list[int]:
    """What each seat enters for one played deal (KL-9.1-9.4, KL-A17)."""
    m = result["maker"]
    o = 1 - m
    own = [result["melds"][i] + result["bonuses"][i] for i in (0, 1)]
    cp = result["card_points"]
    total = [own[i] + cp[i] for i in (0, 1)]
    entries = [0, 0]
    if total[m] > total[o]:
        entries = total[:]
    elif total[m] == total[o]:
        entries[o] = total[o]
        if trick_scope:
            entries[m] = own[m]
    else:
        if trick_scope:
            entries[m] = own[m]
            entries[o] = own[o] + cp[0] + cp[1]
        else:
            entries[o] = total[0] + total[1]
    return entries


def check_scores(state) -> None:
    opts = state.options
    trick_scope = opts["kl_score_scope"] == "trick_points"
    target = opts["kl_target_score"]
    totals = [0, 0]
    results = state.deal_results()
    for i, r in enumerate(results):
        if r["thrown_in"]:
            assert r == {"thrown_in": True}
            continue
        assert set(r) == {"thrown_in", "trump", "maker", "melds", "card_points", "bonuses", "scored"}
        assert r["trump"] in ("S", "H", "D", "C") and r["maker"] in (0, 1)
        assert r["scored"] == expected_entries(r, trick_scope), (i, r)
        assert all(v % 10 == 0 for v in r["melds"]) and 0 in r["melds"], "only one player scores melds"
        assert sum(r["card_points"]) >= 10, "the last trick is worth 10"
        totals = [totals[0] + r["scored"][0], totals[1] + r["scored"][1]]
        if i < len(results) - 1:  # KL-10.2: the match would have ended here
            reached = [t >= target for t in totals]
            if reached[0] != reached[1]:
                raise AssertionError(f"match should have ended after deal {i}: {totals}")
            if all(reached):
                a, b = (r["scored"] if opts["kl_simultaneous_target"] == "deal_winner" else totals)
                assert a == b, f"match should have ended after deal {i}"
    res = state.result()
    assert res["totals"] == totals, (res["totals"], totals)
    if res["over"]:
        (w,) = res["winners"]
        assert totals[w] >= target
        last = results[-1]
        if totals[1 - w] >= target:
            a, b = (last["scored"] if opts["kl_simultaneous_target"] == "deal_winner" else totals)
            assert (a > b) == (w == 0) and a != b
    else:
        assert res["winners"] == []


# ---- helpers for the Klaberjass test modules ------------------------------------------------

PACK_CODES = [r + s for s in "SHDC" for r in "AKQJT987"]


def deck_from_hands(dealer_cards, elder_cards, turn_up, info_card=None, rest=None, packet=3,
                    dealer_first=True):
    """A deck (top card first) that deals the given 9-card hands under KL-2.4 / KL-2.8: the
    first six cards of each list in the first deal, the last three in the second deal."""
    dealer_cards, elder_cards = list(dealer_cards), list(elder_cards)
    assert len(dealer_cards) == 9 and len(elder_cards) == 9
    first, second = (dealer_cards, elder_cards) if dealer_first else (elder_cards, dealer_cards)
    deck = []
    if packet == 3:
        deck += first[0:3] + second[0:3] + first[3:6] + second[3:6]
    else:
        for i in range(0, 6, 2):
            deck += first[i:i + 2] + second[i:i + 2]
    deck.append(turn_up)
    for i in range(6, 9):
        deck += [first[i], second[i]]
    used = set(deck) | ({info_card} if info_card else set())
    remaining = [c for c in (rest or PACK_CODES) if c not in used]
    if info_card is None:
        info_card = remaining.pop()
    deck += [c for c in remaining if c != info_card]
    deck.append(info_card)
    assert sorted(deck) == sorted(PACK_CODES), deck
    return deck


def play_out(state, actions):
    """Apply notation strings for whoever is to act; returns the state."""
    for a in actions:
        state.apply(a)
    return state
