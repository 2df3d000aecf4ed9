"""An illegal action is refused with the reason, computed from what the acting seat knows (its
own hand, the table): Klaberjass and Jo-Jotte said only "play:AS is not a legal action now",
where the Joker games name the rule (a card not held, the duty to follow suit, to beat, to
trump; an exchange without the dix). Any other refusal lists the seat's own legal actions. The
state is unchanged after every refusal."""

from __future__ import annotations

import json

import pytest

from engine_service.rules import IllegalAction, get_game
from tests.shared_paths import shared_dir

#: A Klaberjass deal written by hand (KL-2.4, KL-2.8: dealer seat 1 gets D0-2, D6-8, D13, D15,
#: D17): the dealer holds 7H KH JH AS TS KS AC TC 8D, the elder AH 9H 8H QS 9S 7S KD QD 9C,
#: turn-up QH; the dealer takes hearts and exchanges the dix at his first card.
KL_DECK = ("7H KH JH AH 9H 8H AS TS KS QS 9S 7S QH AC KD TC QD 8D 9C JS 8S TH AD JD TD 9D 7D "
           "KC QC JC 8C 7C").split()
KL_PLAY = ["pass", "take", "keep", "keep", "play:9C", "exchange", "play:TC", "play:QH", "play:AH", "play:8H",
           "play:KH", "play:AS", "play:7S", "play:KS", "play:9S", "play:TS", "play:QS", "play:8D", "play:KD",
           "play:QD"]


def _refused(state, action: str) -> str:
    """The refusal's message; the state must not change."""
    before = (state.to_act(), state.legal_actions(), json.dumps(state.public_view(), sort_keys=True))
    with pytest.raises(IllegalAction) as info:
        state.apply(action)
    assert (state.to_act(), state.legal_actions(), json.dumps(state.public_view(), sort_keys=True)) == before
    return info.value.message


def _klaberjass(upto: int):
    state = get_game("klaberjass").new_state({}, first_dealer=1)
    state.deal(KL_DECK)
    for action in KL_PLAY[:upto]:
        state.apply(action)
    return state


def test_klaberjass_refusals_name_the_rule():
    state = _klaberjass(0)
    assert _refused(state, "play:AS") == "play:AS is not a legal action now; legal now: take, pass"
    state = _klaberjass(4)  # the elder leads trick 1
    assert _refused(state, "play:AS") == "play:AS: AS is not in your hand"
    assert _refused(state, "exchange") == "exchange: you hold no exchangeable dix, the seven of trumps (KL-4.1, KL-4.4)"
    state = _klaberjass(5)  # 9C led; the dealer holds AC TC and the dix
    assert _refused(state, "play:AS") == "play:AS: you must follow suit C (KL-6.3)"
    state = _klaberjass(6)  # he exchanged 7H for QH
    assert _refused(state, "exchange") == "exchange: the dix has already been exchanged in this deal (KL-4.2)"
    state = _klaberjass(8)  # QH led; the elder holds AH 9H 8H
    assert _refused(state, "play:8H") == "play:8H: you must beat the trump QH with a higher trump (KL-6.4)"
    state = _klaberjass(20)  # QD led; the dealer holds JH AC
    assert _refused(state, "play:AC") == "play:AC: you have no D and must play a trump H (KL-6.5)"


def _jojotte(sample: str, deal: int, step: int):
    data = json.loads((shared_dir() / "rules" / "transcripts" / sample).read_text())
    state = get_game("jojotte").new_state(data["options"], first_dealer=data["first_dealer"])
    for d in data["deals"][:deal + 1]:
        state.deal(d["deck"])
        steps = d["steps"] if d is not data["deals"][deal] else d["steps"][:step]
        for s in steps:
            state.apply(s["action"], s["seat"])
    return state


def test_jojotte_refusals_name_the_rule():
    state = _jojotte("jojotte_sample_single.json", 0, 0)
    assert _refused(state, "play:KS") == (
        "play:KS is not a legal action now; legal now: accept, name:S, name:H, name:C, pass")
    state = _jojotte("jojotte_sample_single.json", 0, 8)  # AH led
    assert _refused(state, "play:AH") == "play:AH: AH is not in your hand"
    assert _refused(state, "play:KS") == "play:KS: you must follow suit H (JJ-6.3)"
    state = _jojotte("jojotte_sample_single.json", 0, 18)  # clubs led, diamonds trump
    assert _refused(state, "play:QS") == "play:QS: you have no C and must play a trump D (JJ-6.4)"
    state = _jojotte("jojotte_sample_partial.json", 2, 8)  # KC led; the follower holds TC and 8C
    assert _refused(state, "play:8C") == "play:8C: you must beat KC with a higher C (JJ-6.3)"


def test_jojotte_a_call_the_table_leaves_out_names_its_option_and_only_then():
    """A ``declare`` / ``conceal`` (JJ-A21), a jo / jotte announcement (JJ-A22) or a seven
    exchange (JJ-A9) refused at a table whose options leave it out names that option; the same
    call refused at a table that has it, and every other refusal at such a table, read as
    usual (the rule broken, JJ-6.4, or the legal actions). Seat 0 holds KS QS JS AH KH QH AD KD
    QD, spades trump (the turn-up 7D: no exchange window); seat 1 leads AC."""
    from .checks_jojotte import deal, to_play
    from .test_jojotte_rules import JO_DEAL

    def seat0_to_follow(options):
        state = to_play(deal(options, **JO_DEAL), "name:S", "pass")
        state.apply("play:AC", 1)
        assert state.to_act() == 0
        return state

    no_trump = "play:AH: you have no C and must play a trump S (JJ-6.4)"
    state = seat0_to_follow({"jj_jojotte_announcement": "automatic"})
    assert _refused(state, "play:KS:jo") == (
        "play:KS:jo: jo-jotte scores without announcements at this table (option "
        "jj_jojotte_announcement, JJ-7.2, JJ-A22)")
    assert _refused(state, "play:AH") == no_trump
    assert _refused(state, "accept").startswith("accept is not a legal action now; legal now: ")
    state = seat0_to_follow({"jj_seven_exchange": "none"})
    assert _refused(state, "exchange:7S") == (
        "exchange:7S: this table plays without the seven exchange (option jj_seven_exchange, "
        "JJ-4.2, JJ-A9)")
    assert _refused(state, "no_exchange") == (  # declining an exchange the table does not have
        "no_exchange: this table plays without the seven exchange (option jj_seven_exchange, "
        "JJ-4.2, JJ-A9)")
    assert _refused(state, "play:AH") == no_trump
    state = seat0_to_follow({"jj_meld_declaration": "optional"})
    assert _refused(state, "declare").startswith("declare is not a legal action now; legal now: ")
    state = seat0_to_follow({})
    assert _refused(state, "declare") == (  # the default table settles melds itself
        "declare: melds are declared automatically at this table (option jj_meld_declaration, "
        "JJ-5.9, JJ-A21)")
    assert _refused(state, "play:KH:jo") == "play:KH:jo: you have no C and must play a trump S (JJ-6.4)"
    assert _refused(state, "exchange:7S").startswith("exchange:7S is not a legal action now; legal now: ")
    assert _refused(state, "no_exchange").startswith("no_exchange is not a legal action now; legal now: ")


def test_jojotte_refusals_after_the_ace_of_spades_led_name_the_rule():
    """The ace of spades is card id 0: led, it is a card on the table like any other, and a
    follower's refusals name JJ-6.3. Spades trump; seat 1 leads AS; seat 0 holds KS QS JS and
    must beat it with the jack (trump order J 9 A, JJ-1.2). The king announced as jo (JJ-7.2) is
    the same card play: it read "not a legal action now" with the legal actions, as if the
    announcement were what is wrong."""
    from .checks_jojotte import deal, to_play
    from .test_jojotte_rules import JO_DEAL

    state = to_play(deal({}, **JO_DEAL), "name:S", "pass")
    state.apply("play:AS", 1)
    assert _refused(state, "play:AH") == "play:AH: you must follow suit S (JJ-6.3)"
    assert _refused(state, "play:KS") == "play:KS: you must beat AS with a higher S (JJ-6.3)"
    # the queen, next to the jack in card order but below the ace in trump order, does not beat
    assert _refused(state, "play:QS") == "play:QS: you must beat AS with a higher S (JJ-6.3)"
    assert _refused(state, "play:KS:jo") == "play:KS:jo: you must beat AS with a higher S (JJ-6.3)"


def test_jojotte_a_refused_announcement_on_a_playable_card_lists_the_legal_actions():
    """A ``jo`` that is not legal on a card the follower may play is refused by listing his
    legal actions, not with a card-play rule he did not break: a jo on the plain king of the
    led suit (JJ-7.2: jo belongs to the trump king; he followed suit, JJ-6.3), on the trump
    king without the trump queen while void in the led suit (he did play a trump, JJ-6.4), or
    at no-trump (no trump to play, JJ-6.7), or on a plain king he leads (JJ-6.2: any card may be
    led). Seat 0 holds JS 9S KS KH 7H AD KD QD JD (no QS);
    seat 1 leads AH, then AC."""
    from .checks_jojotte import deal, to_play

    cards = dict(nd=("JS", "9S", "KS", "KH", "7H", "AD"), nd2=("KD", "QD", "JD"),
                 dl=("AH", "TH", "QH", "AC", "KC", "QC"), dl2=("JC", "TC", "9C"), turn="7D", info="8C")
    state = to_play(deal({}, **cards), "name:S", "pass")
    state.apply("play:AH", 1)
    assert _refused(state, "play:KH:jo") == "play:KH:jo is not a legal action now; legal now: play:KH, play:7H"
    state.apply("play:7H", 0)
    state.apply("play:AC", 1)
    assert _refused(state, "play:KS:jo") == (
        "play:KS:jo is not a legal action now; legal now: play:KS, play:JS, play:9S")
    state.apply("play:9S", 0)  # he trumps and leads next: no card on the table, nothing to follow
    assert _refused(state, "play:KH:jo").startswith("play:KH:jo is not a legal action now; legal now: ")
    state = to_play(deal({}, **cards), "pass", "pass", "no_trump", "pass")
    state.apply("play:AC", 1)
    assert _refused(state, "play:KH:jo").startswith("play:KH:jo is not a legal action now; legal now: ")


def test_jojotte_a_refused_announcement_on_a_card_that_beats_lists_the_legal_actions():
    """A ``jotte`` without a jo (JJ-7.2) on a queen that follows suit and beats the led card, as
    JJ-6.3 asks, breaks no card-play rule: it is refused by listing the legal actions, not with
    "you must beat" (the card does beat). Spades trump; seat 1 leads KH, seat 0 wins it with AH
    and leads 7H; seat 1 holds QH JH TH, each higher than the 7."""
    from .checks_jojotte import deal, to_play
    from .test_jojotte_rules import PLAY_DEAL

    state = to_play(deal({}, **PLAY_DEAL), "accept", "pass")
    for card, seat in (("KH", 1), ("AH", 0), ("7H", 0)):
        state.apply("play:" + card, seat)
    assert state.to_act() == 1
    assert _refused(state, "play:QH:jotte") == (
        "play:QH:jotte is not a legal action now; legal now: play:QH, play:JH, play:TH")
