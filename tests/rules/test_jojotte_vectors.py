"""Every Jo-Jotte rule vector (shared/rules/vectors/jojotte_*.json, schema of jojotte.md
section JJ-0.4) replayed through the engine, defaults and ``variant_results`` alike."""

from __future__ import annotations

import pytest

from engine_service.rules import get_game
from engine_service.rules.cards import CODES, card_id
from engine_service.rules.games.jojotte import melds as M
from engine_service.rules.games.jojotte.options import Config
from tests.shared_paths import vectors

GAME = get_game("jojotte")
VECTORS = vectors("jojotte")
STRAIN = {"S": 0, "H": 1, "D": 2, "C": 3}


def _mask(codes):
    m = 0
    for c in codes:
        m |= 1 << card_id(c)
    return m


def _strain(contract):
    return 4 if contract["kind"] == "no_trump" else STRAIN[contract["trump"]]


def _seqs(seqs):
    """Sequences as JSON, in a canonical order (the vectors list them in suit order)."""
    return sorted((q.to_json() if hasattr(q, "to_json") else q for q in seqs),
                  key=lambda j: ("SHDC".index(j["suit"]), j["cards"]))


def _call(entry):
    call = entry["call"]
    return f"name:{entry['suit']}" if call == "name" else call


def test_every_vector_kind_is_covered():
    kinds = {v["kind"] for _, v in VECTORS}
    assert kinds == {"meld_comparison", "deal"}
    for name, v in VECTORS:
        assert v["schema"] == "card-rules-vector/1" and v["game"] == "jojotte", name
        assert name == f"jojotte_{v['name']}.json"


# ---- meld comparisons (JJ-1.5, JJ-5) -----------------------------------------------------

def _check_melds(v, options):
    cfg = Config(GAME.options(options))
    defender = 1 - v["contract"]["declarer"]
    hands = (_mask(v["hands"]["0"]), _mask(v["hands"]["1"]))
    st = M.settle(hands, _strain(v["contract"]), defender, nt_natural=cfg.nt_quartet_natural,
                  card_in_two_melds=cfg.card_in_two_melds, split_runs=cfg.split_runs,
                  winner_all_sequences=cfg.winner_all_sequences)
    for seat in ("0", "1"):
        s = int(seat)
        assert [CODES[r][0] for r in st.quartets[s]] == v["expected_quartets"][seat]
        assert _seqs(st.sequences[s]) == _seqs(v["expected_sequences"][seat])
    return st


@pytest.mark.parametrize("name,v", [x for x in VECTORS if x[1]["kind"] == "meld_comparison"],
                         ids=lambda x: x if isinstance(x, str) else "")
def test_meld_comparison_vector(name, v):
    """JJ-1.5, JJ-5.1 to JJ-5.8 on the rulebook's meld examples."""
    st = _check_melds(v, v["table_options"])
    assert st.quartet_winner == v["expected_quartet_winner"]
    assert st.sequence_winner == v["expected_sequence_winner"]
    for seat, award in v["expected_awards"].items():
        s = int(seat)
        assert st.quartet_points[s] == award["quartets"]
        assert st.sequence_points[s] == award["sequences"]
        assert st.points[s] == award["total"]
    for variant in v.get("variant_results", []):
        if "table_options" in variant:
            _check_melds(v, {**v["table_options"], **variant["table_options"]})


# ---- whole deals -------------------------------------------------------------------------

def _replay_deal(v, options):
    """Replay a deal vector; return (state, facts) with every checked quantity."""
    assert v["dealer"] == 1, "deal vectors number the non-dealer 0 and the dealer 1 (JJ-0.3)"
    state = GAME.new_state(options, first_dealer=v["dealer"])
    state.deal(v["deck_top_first"])
    view = state.public_view()
    assert view["table"]["turn_up"] == v["turn_up"]
    for entry in v["bidding"]:
        assert state.to_act() == entry["seat"]
        state.apply(_call(entry), entry["seat"])
    t = state.public_view()["table"]
    assert t["info_card"] == v["info_card"]
    contract = t["contract"]
    assert contract["strain"] == ("NT" if v["contract"]["kind"] == "no_trump" else v["contract"]["trump"])
    assert contract["declarer"] == v["contract"]["declarer"]
    assert contract["multiplier"] == v["contract"]["multiplier"]
    hands = v.get("hands")
    for seat in ("0", "1"):
        assert sorted(state.view(int(seat))["hand"]) == sorted(hands[seat]), seat
    assert not t["exchange_window"]  # the vector's trump is not the turn-up suit
    for entry in v["nullo_window"]:
        assert state.to_act() == entry["seat"]
        state.apply(entry["call"], entry["seat"])
    assert state.to_act() == v["first_leader"]
    facts = {"settlement": state._settle, "legal": []}
    for trick in v["tricks"]:
        assert state.to_act() == trick["leader"], trick["number"]
        for play in trick["plays"]:
            seat = play["seat"]
            exp = trick.get("expected_legal", {}).get(str(seat))
            if exp is not None:
                legal = [a[5:] for a in state.legal_actions() if a.count(":") == 1]
                facts["legal"].append((trick["number"], seat, legal))
            state.apply("play:" + play["card"], seat)
        done = state.public_view()["table"]["tricks"] if trick["number"] < 9 else None
        if done is not None:
            last = done[-1]
            facts.setdefault("tricks", []).append((last["winner"], last["value"]))
    return state, facts


def _check_deal(v, options, expect, facts_only=False):
    state, facts = _replay_deal(v, options)
    st = facts["settlement"]
    result = state.deal_results()[-1]
    detail = state.public_view()["table"]["last_deal"]
    for number, seat, legal in facts["legal"]:
        trick = v["tricks"][number - 1]
        assert sorted(legal) == sorted(trick["expected_legal"][str(seat)]), (number, seat)
    for (winner, value), trick in zip(facts.get("tricks", []), v["tricks"][:8]):
        assert winner == trick["expected_winner"], trick["number"]
        if options.get("jj_trick_value", "max_card") == "max_card":
            assert value == trick["expected_value"], trick["number"]
        elif options.get("jj_trick_value") == "sum":
            assert value == trick["value_if_sum"], trick["number"]
    if "expected_quartets" in expect:
        for seat in ("0", "1"):
            assert [CODES[r][0] for r in st.quartets[int(seat)]] == expect["expected_quartets"][seat]
            assert _seqs(st.sequences[int(seat)]) == _seqs(expect["expected_sequences"][seat])
    checks = {
        "expected_meld_awards": lambda s: st.points[s],
        "expected_jo_jotte": lambda s: detail["jo_jotte"][s],
        "expected_trick_counts": lambda s: detail["tricks"][s],
        "expected_trick_points": lambda s: result["trick_points"][s],
        "comparison_totals": lambda s: detail["comparison"][s],
        "expected_scored_below": lambda s: result["below"][s],
        "expected_scored_above": lambda s: result["above"][s],
    }
    for key, get in checks.items():
        if key in expect:
            for seat, value in expect[key].items():
                assert get(int(seat)) == value, (key, seat)
    if "expected_outcome" in expect:
        assert detail["outcome"] == expect["expected_outcome"]
    if "expected_frozen_pot" in expect:
        # the pot is empty before this single deal: what is pending after it was frozen in it
        assert result["pot"] == expect["expected_frozen_pot"]
    if "expected_pending_pot_after_deal" in expect:
        assert result["pot"] == expect["expected_pending_pot_after_deal"]
    return state


DEALS = [x for x in VECTORS if x[1]["kind"] == "deal"]


@pytest.mark.parametrize("name,v", DEALS, ids=lambda x: x if isinstance(x, str) else "")
def test_deal_vector_defaults(name, v):
    """The worked deal under the vector's own options: every legal set, winner, value and entry."""
    state = _check_deal(v, v["table_options"], v)
    # the trick counts given explicitly in the vector add up (JJ-6.2: nine tricks)
    assert sum(v["expected_trick_counts"].values()) == 9
    assert state.deal_results()[-1]["thrown_in"] is False


@pytest.mark.parametrize("name,v", DEALS, ids=lambda x: x if isinstance(x, str) else "")
def test_deal_vector_variants(name, v):
    """``variant_results`` under their ``table_options`` (JJ-A16, JJ-A17, JJ-A23, JJ-A24): every
    value a variant restates is checked; a variant that restates nothing ("same result") is
    checked against the whole default expectation. Legal sets and trick winners are always
    checked."""
    ran = 0
    for variant in v.get("variant_results", []):
        if "table_options" not in variant:
            continue
        opts = {**v["table_options"], **variant["table_options"]}
        restated = {k: val for k, val in variant.items()
                    if k.startswith("expected_") or k == "comparison_totals"}
        expect = restated or {k: val for k, val in v.items()
                              if k.startswith("expected_") or k == "comparison_totals"}
        _check_deal(v, opts, expect)
        ran += 1
    assert ran == 6


def test_deal_vector_printed_hand_is_impossible():
    """JJ-A35: with the printed TS instead of TH the seed's play is illegal under both readings
    of JJ-6.3 (the vector's ``hands_as_printed_replay``). The engine cannot apply an illegal
    play, so the replay stops at the first problem, which must be the vector's first."""
    name, v = DEALS[0]
    replay = next(x["hands_as_printed_replay"] for x in v["variant_results"] if "hands_as_printed_replay" in x)
    deck = ["TS" if c == "TH" else "TH" if c == "TS" else c for c in v["deck_top_first"]]
    for head_plain, expected in ((True, replay["must_head_plain_true"]), (False, replay["must_head_plain_false"])):
        state = GAME.new_state({"jj_must_head_plain": head_plain}, first_dealer=1)
        state.deal(deck)
        for entry in v["bidding"] + v["nullo_window"]:
            state.apply(_call(entry), entry["seat"])
        assert sorted(state.view(1)["hand"]) == sorted(v["hands_as_printed"]["1"])
        problem = None
        for trick in v["tricks"]:
            for play in trick["plays"]:
                seat, card = play["seat"], play["card"]
                legal = [a[5:] for a in state.legal_actions()]
                if card not in state.view(seat)["hand"]:
                    problem = f"T{trick['number']}: {seat} does not hold {card}"
                elif card not in legal:
                    problem = f"T{trick['number']}: {seat} plays {card} but legal set is {legal}"
                if problem:
                    break
                state.apply("play:" + card, seat)
            if problem:
                break
        assert problem == expected[0], (head_plain, problem)
