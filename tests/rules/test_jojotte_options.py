"""Every Jo-Jotte table option (jojotte.md section 11) changes play or scoring as its ambiguity
(section 12) says, end to end through the engine. The pure scoring arithmetic of the scoring
options is also covered case by case in test_jojotte_scoring."""

from __future__ import annotations

import json
import re

import pytest

from engine_service.rules import IllegalAction
from engine_service.rules.cards import card_id
from engine_service.rules.games.jojotte import melds as M
from engine_service.rules.games.jojotte.options import OPTION_SPECS
from tests.shared_paths import options_table, vectors

from .checks_jojotte import GAME, act, auto_finish_deal, deal, hand, legal, make_deck, plays, table
from .test_jojotte_rules import (EXCH_DEAL, FAIL_NULLO_DEAL, JO_DEAL, MELD_LOSER_DEAL, PACK_ORDER, PLAY_DEAL,
                                 SLAM_FAIL_DEAL, STRONG_DEAL, mask, set_match, to_play)


def test_every_rulebook_option_is_declared_with_its_default_first():
    names = [s.name for s in OPTION_SPECS]
    assert len(names) == len(set(names)) == 41
    for s in OPTION_SPECS:
        assert s.name.startswith("jj_") and s.help and s.rules
        if s.values:
            assert s.values[0] == s.default


def rulebook_options():
    """The option table of jojotte.md section 11: name -> (values with the default first, the
    ambiguity's id). Parenthesised notes in a cell are not values."""
    out = {}
    for line in options_table("jojotte.md"):
        m = re.match(r"\| `(jj_\w+)` \| (.+?) \| JJ-[^|]* \| ([^|]*) \|", line)
        if m:
            out[m.group(1)] = (re.findall(r"`([^`]+)`", re.sub(r"\([^)]*\)", "", m.group(2))), m.group(3).strip())
    return out


def test_every_option_spec_has_the_rulebook_values_default_first_and_its_ambiguity():
    """Section 11's table fixes each option's values and default (JJ-A1 .. JJ-A37): the specs
    must say the same, an integer option without a list taking any positive integer."""
    book = rulebook_options()
    assert set(book) == {s.name for s in OPTION_SPECS}
    for spec in OPTION_SPECS:
        values, ambiguity = book[spec.name]
        if spec.kind == "bool":
            assert values == [json.dumps(spec.default), json.dumps(not spec.default)], spec.name
        elif spec.kind == "int" and not spec.values:
            assert values == [str(spec.default)] and spec.minimum == 1, spec.name
        else:
            assert values == [str(v) for v in spec.values] and spec.values[0] == spec.default, spec.name
        assert not ambiguity.startswith("JJ-A") or ambiguity in spec.rules, spec.name


def test_every_option_spec_names_exactly_the_rules_of_its_rulebook_row():
    """jojotte.md section 11: each option's row names the rules it changes (``JJ-9.2–JJ-9.5`` is
    a range, ``JJ-9.3b`` an item of JJ-9.3) and its ambiguity; its OptionSpec's ``rules`` (what
    ListGames shows) name exactly those."""
    specs = {s.name: s for s in OPTION_SPECS}
    rows = 0
    for line in options_table("jojotte.md"):
        m = re.match(r"\| `(jj_\w+)` \| .+? \| (JJ-[^|]+?) \| ([^|]*?) \|", line)
        if not m:
            continue
        rows += 1
        named = set()
        for ref in m.group(2).split(", "):
            r = re.fullmatch(r"JJ-(\d+)\.(\d+)–JJ-(\d+)\.(\d+)", ref)
            if r:
                assert r.group(1) == r.group(3), ref
                named |= {f"JJ-{r.group(1)}.{n}" for n in range(int(r.group(2)), int(r.group(4)) + 1)}
            else:
                named.add(re.fullmatch(r"(JJ-\d+\.\d+)[a-z]?", ref).group(1))
        named |= set(re.findall(r"JJ-A\d+", m.group(3)))  # jj_game_target's cell: "— (both seeds say 80)"
        assert set(specs[m.group(1)].rules) == named, (m.group(1), named, specs[m.group(1)].rules)
        assert len(specs[m.group(1)].rules) == len(named), m.group(1)
    assert rows == len(OPTION_SPECS) == 41


# ---- JJ-A1, JJ-A2: the draw ------------------------------------------------------------------

def ids(*codes):
    return [card_id(c) for c in codes]


def test_jj_draw_deals_low():
    assert GAME.draw_first_dealer(ids("AS", "KH"), GAME.options({"jj_draw_deals": "low"})) == 1
    assert GAME.draw_first_dealer(ids("7S", "KH"), GAME.options({"jj_draw_deals": "low"})) == 0


def test_jj_draw_tie_suit_order():
    opts = GAME.options({"jj_draw_tie": "suit_order"})
    assert GAME.draw_first_dealer(ids("AH", "AS", "7C", "KD"), opts) == 1  # S beats H
    low = GAME.options({"jj_draw_tie": "suit_order", "jj_draw_deals": "low"})
    assert GAME.draw_first_dealer(ids("AH", "AS"), low) == 0
    # default: redraw from the next two cards
    assert GAME.draw_first_dealer(ids("AH", "AS", "7C", "KD")) == 1


# ---- JJ-A3, JJ-A4, JJ-A5: dealing ---------------------------------------------------------------

def first_hands(options):
    state = GAME.new_state(options, first_dealer=1)
    state.deal(PACK_ORDER)
    return sorted(hand(state, 0)), sorted(hand(state, 1)), state


def test_jj_first_deal_packet_one_and_three():
    nd, dl, _ = first_hands({"jj_first_deal_packet": 1})
    assert nd == sorted(["AS", "QS", "TS", "8S", "AH", "QH"])
    assert dl == sorted(["KS", "JS", "9S", "7S", "KH", "JH"])
    nd, dl, _ = first_hands({"jj_first_deal_packet": 3})
    assert nd == sorted(["AS", "KS", "QS", "8S", "7S", "AH"])
    assert dl == sorted(["JS", "TS", "9S", "KH", "QH", "JH"])


def test_jj_second_deal_packet_one():
    _, _, state = first_hands({"jj_second_deal_packet": 1})
    act(state, "accept", "pass")
    assert {"9H", "7H", "KD"} <= set(hand(state, 0)) and {"8H", "AD", "QD"} <= set(hand(state, 1))


def test_jj_info_card_next():
    _, _, state = first_hands({"jj_info_card": "next"})
    act(state, "accept", "pass")
    assert table(state)["info_card"] == "JD"  # D[19]
    assert "7C" not in table(state)["info_card"]


def test_jj_throw_in_redealer_other():
    state = deal({"jj_throw_in_redealer": "other"})
    act(state, "pass", "pass", "pass", "pass")
    assert state.dealer() == 0


# ---- JJ-A6, JJ-A7, JJ-A8, JJ-A36: auction ---------------------------------------------------------

def test_jj_round1_calls_accept_pass():
    state = deal({"jj_round1_calls": "accept_pass"}, turn="AD")
    assert legal(state) == ["accept", "pass"]
    with pytest.raises(IllegalAction):
        state.apply("name:S")


def test_jj_round2_turnup_suit_forbidden():
    state = deal({"jj_round2_turnup_suit": "forbidden"}, turn="AD")
    act(state, "pass", "pass")
    assert legal(state) == ["name:S", "name:H", "name:C", "no_trump", "pass"]


def test_jj_double_timing_end_of_auction():
    state = deal({"jj_double_timing": "end_of_auction"}, turn="AD")
    act(state, "name:S")
    assert legal(state) == ["no_trump", "pass"]
    act(state, "no_trump")
    assert legal(state) == ["pass"]
    act(state, "pass")
    # after the auction the defender has one double call, then the redouble
    assert table(state)["auction_state"] == "LATE_DBL"
    assert state.to_act() == 0 and legal(state) == ["double", "pass"]
    act(state, "double")
    assert state.to_act() == 1 and legal(state) == ["redouble", "pass"]
    act(state, "redouble")
    assert table(state)["contract"]["multiplier"] == 4 and legal(state) == ["nullo", "pass"]


def test_jj_overcall_accepted_turnup_false():
    state = deal({"jj_overcall_accepted_turnup": False}, turn="AD")
    act(state, "accept")
    assert legal(state) == ["double", "pass"]
    state = deal({"jj_overcall_accepted_turnup": False}, turn="AD")
    act(state, "name:S")
    assert legal(state) == ["no_trump", "double", "pass"]
    state = deal({"jj_overcall_accepted_turnup": False}, turn="AD")
    act(state, "pass", "pass", "name:D")  # naming the turn-up suit is not accepting it
    assert legal(state) == ["no_trump", "double", "pass"]


# ---- JJ-A9, JJ-A10: the seven exchange ------------------------------------------------------------

def test_jj_seven_exchange_trump_seven():
    opts = {"jj_seven_exchange": "trump_seven"}
    state = deal(opts, **EXCH_DEAL)  # seat 0 holds 7S only; 7H in the stock
    act(state, "accept", "pass")
    assert legal(state) == ["no_exchange"]
    act(state, "no_exchange")
    assert legal(state) == ["no_exchange"]
    layout = dict(EXCH_DEAL, dl2=("QC", "JC", "7H"))  # seat 1 now holds the trump seven
    state = deal(opts, **layout)
    act(state, "accept", "pass")
    assert state.to_act() == 1 and legal(state) == ["exchange:7H", "no_exchange"]  # both hold sevens
    act(state, "exchange:7H")
    assert table(state)["turn_up"] == "7H" and "QH" in hand(state, 1)
    assert legal(state) == ["no_exchange"]


def test_jj_seven_exchange_none():
    state = deal({"jj_seven_exchange": "none"}, **EXCH_DEAL)
    act(state, "accept", "pass")
    assert table(state)["exchange_window"] is False and legal(state) == ["nullo", "pass"]


def test_jj_exchange_window_until_first_lead():
    opts = {"jj_exchange_window": "until_first_lead"}
    state = deal(opts, **EXCH_DEAL)
    act(state, "accept", "pass", "no_exchange", "no_exchange")
    assert state.to_act() == 1 and legal(state) == ["nullo", "pass"]  # not the exchanger
    act(state, "pass")
    # seat 1 leads; seat 0 may still exchange at his turn, listed last, without ending it
    act(state, "play:AH")
    assert legal(state)[-1] == "exchange:7S"
    act(state, "exchange:7S")
    assert state.to_act() == 0 and "QH" in hand(state, 0)
    assert plays(state) == ["QH"]  # the queen of hearts is now his only heart (must follow)
    act(state, "play:QH")
    assert not any(a.startswith("exchange") for a in legal(state) + state.view(0)["legal"])


def test_jj_exchange_window_until_first_lead_closes_with_the_first_card():
    opts = {"jj_exchange_window": "until_first_lead"}
    state = deal(opts, **EXCH_DEAL)
    act(state, "accept", "pass", "no_exchange", "no_exchange", "pass", "play:AC", "play:7S")
    act(state, "play:KC")
    assert state.to_act() == 0 and not any(a.startswith("exchange") for a in legal(state))


def test_jj_exchange_window_until_first_lead_closes_with_his_first_card_though_he_keeps_the_seven():
    """JJ-A10: the late window closes with the exchanger's first card, whichever card it is:
    seat 0 discards AS on the led AC keeping 7S, and at his next turn is offered no exchange
    (a window left open there survived mutation testing: the other test plays the seven)."""
    opts = {"jj_exchange_window": "until_first_lead"}
    state = deal(opts, **EXCH_DEAL)
    act(state, "accept", "pass", "no_exchange", "no_exchange", "pass", "play:AC")
    assert legal(state)[-1] == "exchange:7S"
    act(state, "play:AS", "play:KC")
    assert state.to_act() == 0 and "7S" in hand(state, 0)
    assert not any(a.startswith("exchange") for a in legal(state))


def test_jj_exchange_window_until_first_lead_closes_with_seat_1s_first_card_too():
    """JJ-A10, the same deal with the seats swapped: seat 1 holds the seven; after his first
    card (AS on the led AC, keeping 7S) his next turn offers no exchange."""
    opts = {"jj_exchange_window": "until_first_lead"}
    state = deal(opts, first_dealer=0, **EXCH_DEAL)
    act(state, "accept", "pass", "no_exchange", "no_exchange", "pass", "play:AC")
    assert state.to_act() == 1 and legal(state)[-1] == "exchange:7S"
    act(state, "play:AS", "play:KC")
    assert state.to_act() == 1 and "7S" in hand(state, 1)
    assert not any(a.startswith("exchange") for a in legal(state))


# ---- JJ-A11, JJ-A12, JJ-A13, JJ-A14, JJ-A15, JJ-A16, JJ-A17 -------------------------------------------

def test_jj_slam_strain_suit_or_no_trump():
    opts = {"jj_slam_strain": "suit_or_no_trump"}
    state = deal(opts, **STRONG_DEAL)
    act(state, "name:S", "pass", "nullo")
    assert legal(state) == ["slam:S", "slam:NT", "pass"]
    to_play(state, "slam:NT")
    assert table(state)["contract"]["play_strain"] == "NT"
    act(state, "play:AD")
    assert sorted(plays(state)) == sorted(hand(state, 0))  # no trumps at NT
    state = deal(opts, **STRONG_DEAL)
    act(state, "pass", "pass", "no_trump", "pass", "nullo")
    assert legal(state) == ["slam:NT", "pass"]


def test_jj_nullo_strain_contract():
    state = to_play(deal({"jj_nullo_strain": "contract"}, **FAIL_NULLO_DEAL), "name:H", "pass", "nullo", "pass")
    assert table(state)["contract"]["play_strain"] == "H"
    act(state, "play:AD")
    assert plays(state) == ["AH"]  # void in diamonds: must trump
    state = to_play(deal({}, **FAIL_NULLO_DEAL), "name:H", "pass", "nullo", "pass")
    act(state, "play:AD")
    assert len(plays(state)) == 9


def test_jj_nullo_strain_contract_offers_no_jo_jotte_jj_7_1():
    """JJ-7.1: jo-jotte belongs to a contract with a trump suit, normal or slam, never to a
    nullo (JJ-9.7: no jo-jotte in a nullo deal), even one played in the contract's hearts
    (``jj_nullo_strain = contract``): seat 0 leads holding KH and QH and is offered no jo."""
    state = to_play(deal({"jj_nullo_strain": "contract"}, **FAIL_NULLO_DEAL), "name:H", "pass", "nullo", "pass")
    assert table(state)["contract"]["play_strain"] == "H" and state.to_act() == 0
    assert "play:KH" in legal(state) and "play:KH:jo" not in legal(state)


def test_jj_multiplier_scope_all():
    opts = {"jj_multiplier_scope": "all"}
    state = to_play(deal(opts, **STRONG_DEAL), "name:S", "double", "pass", "nullo", "pass")
    r = auto_finish_deal(state)
    assert r["above"] == [0, 400] and r["contract"]["multiplier"] == 2
    state = to_play(deal({}, **STRONG_DEAL), "name:S", "double", "pass", "nullo", "pass")
    assert auto_finish_deal(state)["above"] == [0, 200]


def test_jj_failed_slam_none():
    state = to_play(deal({"jj_failed_slam": "none"}, **SLAM_FAIL_DEAL), "name:S", "pass", "nullo", "slam:S")
    act(state, "play:AH", "play:KH")
    assert auto_finish_deal(state)["above"] == [0, 0]


def test_jj_first_lead_non_dealer():
    state = to_play(deal({"jj_first_lead": "non_dealer"}, **STRONG_DEAL), "name:S", "pass")
    assert state.to_act() == 0
    state = to_play(deal({"jj_first_lead": "non_dealer"}, **STRONG_DEAL), "pass", "name:S", "pass")
    assert state.to_act() == 0  # seat 1 declares; the non-dealer still leads


def test_jj_must_head_plain_false():
    state = to_play(deal({"jj_must_head_plain": False}, **PLAY_DEAL), "accept", "pass")
    act(state, "play:KH")
    assert plays(state) == ["AH", "7H"]
    act(state, "play:7H", "play:TS")  # a trump lead must still be beaten
    assert plays(state) == ["JS", "9S"]


@pytest.mark.parametrize("mode,value", [("max_card", 10), ("sum", 15), ("winning_card", 10)])
def test_jj_trick_value(mode, value):
    state = to_play(deal({"jj_trick_value": mode}, **PLAY_DEAL), "accept", "pass")
    act(state, "play:KH", "play:AH")
    assert table(state)["tricks"][-1]["value"] == value
    state = to_play(deal({"jj_trick_value": mode}, **PLAY_DEAL), "accept", "pass")
    act(state, "play:AC", "play:7S")  # the trump seven (0) wins over the ace (10)
    assert table(state)["tricks"][-1]["value"] == {"max_card": 10, "sum": 10, "winning_card": 0}[mode]


# ---- JJ-A18 to JJ-A22: melds and jo-jotte --------------------------------------------------------------

QUARTET_NT_DEAL = dict(nd=("TS", "TH", "TD", "TC", "AS", "9H"), nd2=("8D", "7C", "JS"),
                       dl=("KS", "KH", "KD", "KC", "QS", "8S"), dl2=("9D", "JH", "7H"), turn="AC", info="QC")


def quartet_scorer(state):
    return [d["seat"] for d in table(state)["melds"]["dialogue"] if d["say"] == "scores" and "quartets" in d]


def test_jj_nt_quartet_order_natural():
    state = to_play(deal({}, **QUARTET_NT_DEAL), "pass", "pass", "no_trump", "pass")
    assert quartet_scorer(state) == [0]  # plain order: T over K
    state = to_play(deal({"jj_nt_quartet_order": "natural"}, **QUARTET_NT_DEAL), "pass", "pass", "no_trump", "pass")
    assert quartet_scorer(state) == [1]


THREE_RUNS_DEAL = dict(nd=("AS", "KS", "QS", "AH", "KH", "QH"), nd2=("AD", "KD", "QD"),
                       dl=("JS", "9S", "7S", "JH", "9H", "7H"), dl2=("JD", "9D", "7D"), turn="8C", info="7C")


def test_jj_winner_sequences_best_plus_one():
    state = to_play(deal({}, **THREE_RUNS_DEAL), "name:S", "pass")
    assert table(state)["melds"]["points"] == [60, 0]
    state = to_play(deal({"jj_winner_sequences": "best_plus_one"}, **THREE_RUNS_DEAL), "name:S", "pass")
    assert table(state)["melds"]["points"] == [40, 0]


TWO_MELDS_DEAL = dict(nd=("AS", "AH", "AD", "AC", "KC", "QC"), nd2=("7S", "8H", "9D"),
                      dl=("JS", "9S", "TH", "9H", "JD", "TD"), dl2=("8D", "7D", "7H"), turn="QS", info="8C")


def test_jj_card_in_two_melds_false():
    state = to_play(deal({}, **TWO_MELDS_DEAL), "accept", "pass")
    assert table(state)["melds"]["points"] == [120, 0]
    state = to_play(deal({"jj_card_in_two_melds": False}, **TWO_MELDS_DEAL), "accept", "pass")
    assert table(state)["melds"]["points"] == [100, 0]


SPADE_RUN_DEAL = dict(nd=("AS", "AH", "AD", "AC", "KS", "QS"), nd2=("8H", "9D", "7C"),
                      dl=("JS", "9S", "TH", "9H", "JD", "TD"), dl2=("8D", "7D", "7H"), turn="QC", info="8C")


def test_jj_card_in_two_melds_false_removes_every_suit_of_the_quartet():
    """JJ-A20 ``jj_card_in_two_melds = false``: all four cards of a scored quartet leave the
    sequences, the spade as well as the club: A-K-Q of spades beside four aces scores 20 by
    default and nothing with the option."""
    state = to_play(deal({}, **SPADE_RUN_DEAL), "accept", "pass")
    assert table(state)["melds"]["points"] == [120, 0]
    state = to_play(deal({"jj_card_in_two_melds": False}, **SPADE_RUN_DEAL), "accept", "pass")
    assert table(state)["melds"]["points"] == [100, 0]


SPLIT_DEAL = dict(nd=("AH", "KH", "QH", "JH", "TH", "9H"), nd2=("8H", "7S", "8C"),
                  dl=("JS", "9S", "JD", "9D", "JC", "9C"), dl2=("7C", "7D", "KC"), turn="QS", info="AC")


def test_jj_split_runs():
    state = to_play(deal({}, **SPLIT_DEAL), "name:H", "pass")
    assert table(state)["melds"]["points"] == [50, 0]
    state = to_play(deal({"jj_split_runs": True}, **SPLIT_DEAL), "name:H", "pass")
    assert table(state)["melds"]["points"] == [60, 0]
    # JJ-A20: the seven-card run A..8 of hearts is cut into A-K-Q-J and T-9-8, the longer on top
    scores = table(state)["melds"]["dialogue"][-1]
    assert scores["say"] == "scores"
    assert [q["cards"] for q in scores["sequences"]] == [["AH", "KH", "QH", "JH"], ["TH", "9H", "8H"]]


def test_jj_meld_declaration_optional_a_concealed_category_counts_as_none():
    """JJ-A21: a player who conceals his quartets is treated as holding none, the defender (seat
    0) as well as the declarer: the opponent's lower quartet then scores."""
    jacks, nines = mask("JS", "JH", "JD", "JC"), mask("9S", "9H", "9D", "9C")
    assert M.settle((jacks, nines), 0, 0).quartet_points == (100, 0)
    st = M.settle((jacks, nines), 0, 0, declared=((False, True), (True, True)))
    assert st.quartets == ((), (M.T.NINE,)) and st.quartet_winner == 1 and st.quartet_points == (0, 100)


def test_jj_meld_declaration_optional():
    state = deal({"jj_meld_declaration": "optional"}, **MELD_LOSER_DEAL)
    act(state, "name:S", "pass", "pass")
    assert table(state)["contract"]["kind"] == "normal"
    assert state.public_view()["phase"] == "melds" and state.to_act() == 1
    assert legal(state) == ["declare", "conceal"]
    # JJ-A21: nothing is stated before the first statement: no dialogue for any audience yet
    assert all(v["table"]["melds"] is None for v in (state.view(0), state.view(1), state.public_view()))
    # JJ-A21: the view says which category each step is about (quartets twice, then sequences)
    assert table(state)["meld_category"] == "quartets"
    act(state, "declare")  # seat 1 has no quartet: the public sees "quartet none"
    assert [d["say"] for d in table(state)["melds"]["dialogue"]] == ["quartet none"]
    assert table(state)["meld_category"] == "quartets"
    act(state, "declare")
    assert table(state)["meld_category"] == "sequences"
    act(state, "conceal")  # seat 1 conceals his K-Q-J-T-9 of hearts
    assert [d["say"] for d in table(state)["melds"]["dialogue"]][-1] == "length 0"
    assert table(state)["meld_category"] == "sequences" and state.view(0)["table"]["meld_category"] == "sequences"
    act(state, "declare")
    assert state.public_view()["phase"] == "play" and table(state)["meld_category"] is None
    assert table(state)["melds"]["points"] == [0, 0]
    steps = [(e["seat"], e["action"]) for e in table(state)["deal_actions"][-4:]]
    assert steps == [(1, "conceal"), (0, "conceal"), (1, "conceal"), (0, "conceal")]


def test_jj_meld_declaration_optional_points_once_the_dialogue_ends_and_the_winner_in_last_deal():
    """JJ-5.9 / JJ-A21: while the four statements run, the melds' ``points`` are null (nothing is
    settled yet, docs/games/jojotte.md ``melds``); after the last one the settlement shows: seat
    1's K-Q-J-T-9 of hearts scores 50. The deal's breakdown names him the sequence winner and
    nobody the quartet winner (no quartet)."""
    state = deal({"jj_meld_declaration": "optional"}, **MELD_LOSER_DEAL)
    act(state, "name:S", "pass", "pass")
    for _ in range(3):
        act(state, "declare")
        assert table(state)["melds"]["points"] is None
    act(state, "declare")
    assert table(state)["melds"]["points"] == [0, 50]
    auto_finish_deal(state)
    last = table(state)["last_deal"]
    assert last["melds"] == [0, 50] and last["sequence_winner"] == 1 and last["quartet_winner"] is None

def test_jj_meld_declaration_optional_public_action_is_the_form_the_log_keeps_jj_a21():
    """JJ-A21, JJ-5.9: ``public_action`` (what the public log records) of a ``declare`` that
    states no more than ``conceal`` would (seat 1 has no quartet: "quartet none" either way) is
    ``conceal``; a ``declare`` that changes the dialogue (seat 1's K-Q-J-T-9 of hearts) stays
    ``declare``; ``conceal`` is itself."""
    state = deal({"jj_meld_declaration": "optional"}, **MELD_LOSER_DEAL)
    act(state, "name:S", "pass", "pass")
    declare, conceal = state.parse_action("declare"), state.parse_action("conceal")
    assert state.to_act() == 1
    assert state.action_str(state.public_action(declare)) == "conceal"
    assert state.action_str(state.public_action(conceal)) == "conceal"
    act(state, "declare", "declare")
    assert state.to_act() == 1 and table(state)["meld_category"] == "sequences"
    assert state.action_str(state.public_action(declare)) == "declare"
    assert state.action_str(state.public_action(conceal)) == "conceal"


def test_jj_jojotte_announcement_automatic():
    state = to_play(deal({"jj_jojotte_announcement": "automatic"}, **JO_DEAL), "name:S", "pass")
    act(state, "play:AC")
    assert legal(state) == ["play:KS", "play:QS", "play:JS"]
    act(state, "play:KS")
    assert table(state)["jo"] == []  # nothing shown before it scores
    # JJ-7.2, JJ-A22: no "jo" was said, so the king tells seat 1 nothing about the queen
    assert state.secret_cards(1) >> card_id("QS") & 1 == 1
    act(state, "play:QS")
    assert table(state)["jo_jotte"] == [20, 0] and table(state)["jo"] == [0]


def test_jj_jojotte_announcement_automatic_with_clubs_trump_and_the_queen_last_in_pack_order():
    """JJ-7.1 / JJ-A22 (``automatic``): K then Q of trumps by one player scores 20 with
    any trump suit; here clubs, and after the king the queen of clubs is the last card of his
    hand in pack order (he holds no club below it)."""
    layout = dict(nd=("KC", "QC", "AC", "AH", "KH", "QH"), nd2=("AD", "KD", "QD"),
                  dl=("AS", "KS", "QS", "JS", "TS", "9S"), dl2=("JC", "TC", "9C"), turn="7D", info="8C")
    state = to_play(deal({"jj_jojotte_announcement": "automatic"}, **layout), "name:C", "pass")
    act(state, "play:AS", "play:KC")  # no spade: he trumps with the king and wins the trick
    assert state.to_act() == 0 and table(state)["jo_jotte"] == [0, 0]
    act(state, "play:QC")
    assert table(state)["jo_jotte"] == [20, 0] and table(state)["jo"] == [0]


# ---- JJ-A23 to JJ-A37: scoring options end to end -----------------------------------------------------

def seed_deal_state(options):
    v = dict(vectors("jojotte"))["jojotte_deal_andrey_maxim.json"]
    state = GAME.new_state(options, first_dealer=1)
    state.deal(v["deck_top_first"])
    act(state, "pass", "name:D", "pass", "pass")
    for trick in v["tricks"]:
        for p in trick["plays"]:
            state.apply("play:" + p["card"], p["seat"])
    return state


def test_jj_tie_rule_void():
    state = seed_deal_state({"jj_outcome_basis": "trick_points", "jj_tie_rule": "void"})
    r = state.deal_results()[-1]
    assert r["pot"] == 0 and r["below"] == [0, 20]


@pytest.mark.parametrize("carry", [False, True])
def test_jj_pot_at_rubber_end(carry):
    """A nullo made with premiums below the line ends the rubber while 70 is frozen."""
    opts = {"jj_premium_line": "below", "jj_match_rubbers": 2}
    if carry:
        opts["jj_pot_at_rubber_end"] = "carry"
    state = deal(opts, **STRONG_DEAL)
    set_match(state, pot=70, rgames=(0, 1), rseq=(1,), games=(0, 1))
    to_play(state, "name:S", "pass", "nullo", "pass")
    r = auto_finish_deal(state)
    assert r["below"] == [0, 200] and r["above"] == [0, 300]
    assert table(state)["match"]["rubbers_won"] == [0, 1]
    assert r["pot"] == (70 if carry else 0)
    assert not state.result()["over"]


def test_jj_scoresheet_single_column():
    state = to_play(deal({"jj_scoresheet": "single_column"}, **STRONG_DEAL), "name:S", "pass")
    r = auto_finish_deal(state)
    assert r["above"] == [0, 0] and r["below"][0] == table(state)["last_deal"]["trick_points"][0] + 50 + 100


def test_jj_premium_line_below_ends_the_game():
    state = to_play(deal({"jj_premium_line": "below"}, **STRONG_DEAL), "name:S", "pass", "nullo", "pass")
    r = auto_finish_deal(state)
    assert r["below"] == [0, 200] and state.result()["totals"]["games_won"] == [0, 1]


def test_jj_nullo_penalty_negative():
    state = to_play(deal({"jj_nullo_penalty_negative": True}, **FAIL_NULLO_DEAL), "name:H", "pass", "nullo", "pass")
    assert auto_finish_deal(state)["above"] == [1000, -1000]


def test_jj_nullo_melds():
    state = to_play(deal({"jj_nullo_melds": True}, **STRONG_DEAL), "name:S", "pass", "nullo", "pass")
    assert table(state)["melds"]["points"] == [50, 0]  # eight spades, no trump at NT
    r = auto_finish_deal(state)
    assert r["below"] == [50, 0] and r["above"] == [0, 200]


def test_jj_rubber_bonus_condition_two_consecutive():
    opts = {"jj_rubber_bonus_condition": "two_consecutive"}
    state = deal(opts, **STRONG_DEAL)
    set_match(state, rgames=(1, 1), rseq=(0, 1), games=(1, 1))
    to_play(state, "name:S", "pass")
    r = auto_finish_deal(state)
    assert r["above"] == [100, 0] and state.result()["winners"] == [0]  # no bonus for W-L-W
    state = deal({}, **STRONG_DEAL)
    set_match(state, rgames=(1, 1), rseq=(0, 1), games=(1, 1))
    to_play(state, "name:S", "pass")
    assert auto_finish_deal(state)["above"] == [400, 0]


def test_jj_partscore_reset_false():
    state = deal({"jj_partscore_reset": False}, **MELD_LOSER_DEAL)
    set_match(state, gpts=(70, 30))
    to_play(state, "name:S", "pass")
    auto_finish_deal(state)
    m = table(state)["match"]
    assert m["games_won"] == [1, 0] and m["game_points"] == [0, 30 + 50]
    state = deal({}, **MELD_LOSER_DEAL)
    set_match(state, gpts=(70, 30))
    to_play(state, "name:S", "pass")
    auto_finish_deal(state)
    assert table(state)["match"]["game_points"] == [0, 0]


def test_jj_match_rubbers_and_match_winner_points():
    opts = {"jj_match_rubbers": 2, "jj_match_winner": "points"}
    state = deal(opts, **STRONG_DEAL)
    set_match(state, rgames=(1, 1), rseq=(1, 0), games=(1, 1))
    to_play(state, "name:S", "pass")
    auto_finish_deal(state)
    assert not state.result()["over"] and state.to_act() == -1
    m = table(state)["match"]
    assert m["rubber_number"] == 1 and m["rubbers_won"] == [1, 0] and m["rubber_games"] == [0, 0]
    # the second rubber: seat 1 wins it with the strong hand, and has more points overall
    state.deal(make_deck(**STRONG_DEAL))
    set_match(state, rgames=(0, 1), rseq=(1,), rsum=(0, 5000), below=(state._below[0], state._below[1] + 5000))
    to_play(state, "name:S", "pass")
    auto_finish_deal(state)
    res = state.result()
    assert res["over"] and res["winners"] == [1]


def test_jj_unbid_slam_in_nullo():
    state = to_play(deal({"jj_unbid_slam_in_nullo": True}, **STRONG_DEAL), "name:S", "pass", "nullo", "pass")
    assert auto_finish_deal(state)["above"] == [100, 200]


def test_jj_game_target():
    state = to_play(deal({"jj_game_target": 1000}, **STRONG_DEAL), "name:S", "pass")
    auto_finish_deal(state)
    assert state.result()["totals"]["games_won"] == [0, 0]
    assert table(state)["match"]["game_target"] == 1000


def test_matches_at_equal_options_share_one_compiled_config():
    """jojotte/options.py config_for: an option set is compiled once, and matches under the same
    options and all their clones read that one Config; other options get their own."""
    a = GAME.new_state({"jj_game_target": 120}, first_dealer=0)
    b = GAME.new_state({"jj_game_target": 120}, first_dealer=1)
    assert a.cfg is b.cfg and a.clone().cfg is a.cfg and a.cfg.game_target == 120
    assert GAME.new_state({}, first_dealer=0).cfg is not a.cfg


LATE_QUEEN_DEAL = dict(nd=("AS", "KS", "JS", "AH", "KH", "JH"), nd2=("AD", "KD", "JD"),
                       dl=("QS", "QD", "QC", "7S", "AC", "KC"), dl2=("JC", "TC", "9C"), turn="QH", info="8C")


def test_optional_melds_with_late_exchange_keep_stated_quartets():
    """JJ-A10 + JJ-A21: seat 1 states "quartet none", then exchanges his seven for the turn-up
    QH at his sequence step: the four queens he now holds were not stated and do not score."""
    opts = {"jj_meld_declaration": "optional", "jj_exchange_window": "until_first_lead"}
    state = deal(opts, **LATE_QUEEN_DEAL)
    act(state, "accept", "pass", "no_exchange", "no_exchange", "pass")
    act(state, "declare", "declare")
    assert [d["say"] for d in table(state)["melds"]["dialogue"]] == ["quartet none", "good"]
    assert state.to_act() == 1 and legal(state) == ["declare", "conceal", "exchange:7S"]
    act(state, "exchange:7S")
    assert state.to_act() == 1 and {"QS", "QH", "QD", "QC"} <= set(hand(state, 1))
    act(state, "declare", "declare")
    says = [d["say"] for d in table(state)["melds"]["dialogue"]]
    assert says[:2] == ["quartet none", "good"] and "quartet Q" not in says
    assert table(state)["melds"]["points"] == [0, 50]  # A-K-Q-J-T-9 of clubs only
    # a bot's determinization of this view is still consistent
    import random
    view = state.view(0)
    assert GAME.determinize(view, random.Random(0)).view(0) == view


def test_optional_melds_a_late_exchange_after_a_stated_quartet_adds_no_quartet():
    """JJ-A10 + JJ-A21 + JJ-5.5: seat 1 (the defender) states his quartet of jacks, then, at his
    sequence step, exchanges 7S for the turn-up KH, completing four kings. The quartets were
    settled on the hands held when they were stated, so he scores his jacks (100) only, not
    100 for each of two quartets."""
    opts = {"jj_meld_declaration": "optional", "jj_exchange_window": "until_first_lead"}
    state = deal(opts, nd=("AS", "TS", "9S", "AH", "TH", "9H"), nd2=("AD", "TD", "9D"),
                 dl=("JS", "JH", "JD", "JC", "KS", "KD"), dl2=("KC", "7S", "9C"), turn="KH", info="8C")
    act(state, "accept", "pass", "no_exchange", "no_exchange", "pass")
    act(state, "declare", "declare")
    assert [d["say"] for d in table(state)["melds"]["dialogue"]][:1] == ["quartet J"]
    act(state, "exchange:7S")
    assert {"KS", "KH", "KD", "KC"} <= set(hand(state, 1))
    act(state, "declare", "declare")
    assert table(state)["melds"]["points"] == [0, 100]
    assert "quartet K" not in [d["say"] for d in table(state)["melds"]["dialogue"]]


def test_optional_melds_the_declarer_states_quartets_after_his_late_exchange():
    """JJ-A10 + JJ-A21 + JJ-5.9: the declarer (seat 0) may exchange at his quartet step
    without ending it; his statement then speaks for the hand he holds. Here 7S for the turn-up
    KH completes four kings: his "not_good K" and the 100 stand, and the quartets are settled
    on the hands as both statements found them (not on his hand before the exchange)."""
    opts = {"jj_meld_declaration": "optional", "jj_exchange_window": "until_first_lead"}
    state = deal(opts, nd=("KS", "KD", "KC", "7S", "AS", "AH"), nd2=("AD", "TS", "TH"),
                 dl=("QS", "JH", "9D", "8C", "JS", "8H"), dl2=("TD", "TC", "9C"), turn="KH", info="8D")
    act(state, "accept", "pass", "no_exchange", "no_exchange", "pass", "declare")
    assert state.to_act() == 0 and legal(state) == ["declare", "conceal", "exchange:7S"]
    act(state, "exchange:7S", "declare", "declare", "declare")
    says = [d["say"] for d in table(state)["melds"]["dialogue"]]
    assert says[:3] == ["quartet none", "not_good K", "scores"]
    assert table(state)["melds"]["points"] == [100, 20]  # seat 1: T-9-8 of clubs
    # the defender's bot, who saw the exchange and the statement, can still determinize
    import random
    view = state.view(1)
    assert GAME.determinize(view, random.Random(0)).view(1) == view

# ---- scoring options end to end that test_jojotte_scoring covers only on the pure functions ----

@pytest.mark.parametrize("options,below", [
    ({}, [45, 50]),  # JJ-9.3b: the defender's two most valuable tricks (30 + 15)
    ({"jj_defender_win_award": "both_trick_points"}, [75 + 15, 50]),
    ({"jj_defender_win_award": "own_trick_points"}, [75, 50]),
    ({"jj_undoubled_scoring": "each_scores_own"}, [75, 15 + 50]),
])
def test_jj_defender_win_award_and_undoubled_scoring_in_a_deal(options, below):
    """JJ-A25 / JJ-A24 end to end: the dealer (seat 1) names spades; seat 0 defends, wins 6
    tricks worth 75 against 15 + 50 melds and so wins the comparison (JJ-9.2). What each enters
    below the line depends on ``jj_defender_win_award`` and ``jj_undoubled_scoring``."""
    state = to_play(deal(options, **MELD_LOSER_DEAL), "pass", "name:S", "pass")
    r = auto_finish_deal(state)
    detail = table(state)["last_deal"]
    assert detail["outcome"] == "defender_more" and detail["trick_points"] == [75, 15]
    assert detail["melds"] == [0, 50]
    assert r["below"] == below and r["pot"] == 0


@pytest.mark.parametrize("options,winner", [({}, 1), ({"jj_simultaneous_game": "deal_winner"}, 0)])
def test_jj_simultaneous_game_in_a_deal(options, winner):
    """JJ-A32 end to end: both players reach 80 below the line in one deal. Seat 0 (the
    declarer) enters 80 this deal and ends on 80; seat 1 enters his 50 melds and ends on 129.
    ``higher_total`` gives the game to seat 1, ``deal_winner`` to seat 0, who added more."""
    state = deal(options, **MELD_LOSER_DEAL)
    set_match(state, gpts=(0, 79))
    to_play(state, "name:S", "pass")
    r = auto_finish_deal(state)
    assert r["below"] == [80, 50]
    m = table(state)["match"]
    assert m["rubber_game_winners"] == [winner] and m["games_won"] == [1 - winner, winner]


def test_refusals_that_only_the_table_options_explain_name_the_option():
    """A call the table's house rules leave out is refused naming the option (JJ-A9, JJ-A21,
    JJ-A22): it read "declare is not a legal action now", as if it could become legal later.
    Other refusals keep the generic message, and a refusal changes nothing."""
    def refusal(state, action):
        with pytest.raises(IllegalAction) as info:
            state.apply(action)
        return info.value.message

    state = to_play(deal({}, **JO_DEAL), "name:S", "pass")
    before = state.view(state.to_act())
    assert "jj_meld_declaration" in refusal(state, "declare")
    assert refusal(state, "redouble").startswith("redouble is not a legal action now; legal now: ")  # no option
    assert state.view(state.to_act()) == before
    state = to_play(deal({"jj_jojotte_announcement": "automatic"}, **JO_DEAL), "name:S", "pass")
    act(state, "play:AC")
    assert "jj_jojotte_announcement" in refusal(state, "play:KS:jo")
    state = deal({"jj_seven_exchange": "none"}, **JO_DEAL)
    assert "jj_seven_exchange" in refusal(state, "exchange:7S")
