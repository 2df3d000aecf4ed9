"""Every Jo-Jotte table option alone, and every pair of options, in random playouts (jojotte.md
section 11; NOTATION.md sections 2 to 4).

``test_jojotte_audit.py`` compares the engine with the literal referee
(:mod:`tests.rules.jojotte_oracle`) under fixed option sets and random mixes; a random mix does
not guarantee that a given option value, or a given pair of values, is ever played. Here each
non-default value of every option of section 11 is played on its own, and every pair of values
of two different options is played together (JJ-A1 to JJ-A37), through:

* the referee, step by step, where it models both options (every legal set as a set, every deal
  result and the match result equal: NOTATION 3, 4);
* the transcript checker: the engine's own ``card-transcript/1`` export of the match must check
  out (NOTATION 3), legal sets, actions, deal results and the match result.

The draw options (``jj_draw_deals``, ``jj_draw_tie``: not part of a transcript, whose
``first_dealer`` fixes the draw) are played through the engine and the checker only.
"""

from __future__ import annotations

import itertools
import json
import random

import pytest

from engine_service.rules import CHANCE, TERMINAL, get_game
from engine_service.rules import transcript as TR
from engine_service.rules.cards import CODES, PACK32
from engine_service.rules.games.jojotte.options import OPTION_SPECS

from .jojotte_oracle import DEFAULTS, OracleMatch
from .test_jojotte_audit import biased_choice

GAME = get_game("jojotte")
ALL_CODES = [CODES[c] for c in PACK32]


def _values() -> list[tuple[str, object]]:
    out: list[tuple[str, object]] = []
    for spec in OPTION_SPECS:
        if spec.name == "jj_match_rubbers":
            alts: list[object] = [2, 3]
        elif spec.name == "jj_game_target":
            alts = [40, 150]
        else:
            alts = [v for v in spec.values if v != spec.default]
        out += [(spec.name, v) for v in alts]
    return out


VALUES = _values()
PAIRS = [(a, b) for a, b in itertools.combinations(VALUES, 2) if a[0] != b[0]]


def play_match(options: dict, seed: int) -> None:
    rng = random.Random(seed)
    first = rng.randrange(2)
    state = GAME.new_state(options, first)
    om = OracleMatch(options, first) if set(options) <= set(DEFAULTS) else None
    steps = 0
    while state.to_act() != TERMINAL:
        if state.to_act() == CHANCE:
            deck = list(ALL_CODES)
            rng.shuffle(deck)
            state.deal(deck)
            if om is not None:
                assert om.needs_deal and om.dealer == state.dealer()  # expect.dealer (JJ-2.2)
                om.deal(deck)
            continue
        legal = state.legal_actions()
        assert len(legal) == len(set(legal)), legal  # NOTATION 2.4: no duplicates
        if om is not None:
            assert state.to_act() == om.to_act, (options, seed, om.phase)
            assert set(legal) == om.legal(), (options, seed, om.phase, legal)
        action = biased_choice(rng, legal)
        state.apply(action)
        if om is not None:
            om.apply(action)
            assert state.deal_results() == om.results, (options, seed)
        steps += 1
        assert steps < 50_000, (options, seed)
    if om is not None:
        assert om.over and state.result() == om.result(), (options, seed)
    data = json.loads(json.dumps(TR.export(state)))
    diff, replayed = TR.check(TR.validate(data))
    assert diff is None, (options, seed, str(diff))
    assert replayed.result() == state.result()


def test_every_option_value_of_section_11_is_listed():
    names = {spec.name for spec in OPTION_SPECS}
    assert {n for n, _ in VALUES} == names
    assert len(PAIRS) > 1000


@pytest.mark.parametrize("name,value", VALUES, ids=lambda x: str(x))
def test_each_option_alone(name, value):
    for seed in range(3):
        play_match({name: value}, seed)


def test_every_pair_of_options():
    for i, (a, b) in enumerate(PAIRS):
        play_match(dict([a, b]), 1000 + i)


# ---- option interplay worked by hand ----------------------------------------------------------

def test_JJ_A10_late_exchange_takes_the_trump_king_turn_up_and_opens_jo_then_jotte():
    """JJ-A10 (``until_first_lead``) with JJ-7.2 and JJ-6.4: the declarer, void in the led suit,
    first must trump with his only trump QH; exchanging 7S for the turn-up KH at that turn (it
    does not end the turn) gives him K and Q of trumps, so ``play:KH:jo`` becomes legal beside
    ``play:KH`` and ``play:QH``; after the jo, ``play:QH:jotte`` is legal and scores 20 below."""
    from .checks_jojotte import act, deal, legal

    state = deal({"jj_exchange_window": "until_first_lead"}, first_dealer=1,
                 nd=("QH", "7S", "AS", "TS", "9D", "8D"), dl=("JS", "9S", "AC", "TC", "KC", "QC"),
                 turn="KH", nd2=("AD", "KD", "QD"), dl2=("JC", "9C", "8C"))
    act(state, "accept", "pass")  # seat 0 (non-dealer) declares hearts, the turn-up suit
    assert state.to_act() == 1 and legal(state) == ["no_exchange"]  # JJ-4.2: defender first
    act(state, "no_exchange")
    assert legal(state) == ["exchange:7S", "no_exchange"]
    act(state, "no_exchange")
    assert state.to_act() == 1 and legal(state) == ["nullo", "pass"]  # not the exchanger
    act(state, "pass", "play:AC")  # JJ-6.1: the defender leads
    assert state.to_act() == 0 and legal(state) == ["play:QH", "exchange:7S"]  # JJ-6.4
    act(state, "exchange:7S")
    assert state.to_act() == 0 and legal(state) == ["play:KH", "play:KH:jo", "play:QH"]
    assert state.public_view()["table"]["turn_up"] == "7S"
    act(state, "play:KH:jo")  # wins the trick: seat 0 leads
    assert state.to_act() == 0 and "play:QH:jotte" in legal(state)
    assert not any(a.startswith("exchange") for a in legal(state))
    act(state, "play:QH:jotte")
    assert state.public_view()["table"]["jo_jotte"] == [20, 0]


@pytest.mark.parametrize("seven", ["any_seven_unless_both", "trump_seven"])
def test_JJ_A10_late_exchange_survives_a_nullo_at_no_trump(seven):
    """docs/games/jojotte.md documented choice 3: the window is decided on the auction's strain
    (JJ-4.2); a nullo played at no-trump (JJ-4.5) does not withdraw the late exchange (JJ-A10:
    "up to his first card")."""
    from .checks_jojotte import act, deal, legal

    state = deal({"jj_exchange_window": "until_first_lead", "jj_seven_exchange": seven},
                 first_dealer=1, nd=("QH", "7H", "AS", "TS", "9D", "8D"),
                 dl=("JS", "9S", "AC", "TC", "KC", "QC"), turn="KH", nd2=("AD", "KD", "QD"),
                 dl2=("JC", "9C", "8C"))
    act(state, "accept", "pass", "no_exchange", "no_exchange", "nullo")
    assert legal(state) == ["slam:H", "pass", "exchange:7H"]  # JJ-4.4 answer, exchange last
    act(state, "pass")  # the nullo stands, at no-trump; the declarer leads (JJ-6.1)
    assert state.public_view()["table"]["contract"]["play_strain"] == "NT"
    assert state.to_act() == 0 and legal(state)[-1] == "exchange:7H"
    act(state, "exchange:7H")
    assert state.to_act() == 0 and "play:KH" in legal(state)
    assert not any(a.startswith("exchange") or a.endswith(":jo") for a in legal(state))  # JJ-9.7
