"""Hand-refereed deals for table options that only meet in rare combinations.

Each deal was worked out by hand from the rulebooks (klaberjass.md, jojotte.md) before it was
run: legal sets at the decisions the options change, every trick, and the NOTATION 4 result.
The random differential audits meet these combinations only by chance; here they are pinned.
"""

from __future__ import annotations

from engine_service.rules import get_game

from .checks_jojotte import act, deal, table
from .test_klaberjass_audit import deck_for

KLABERJASS = get_game("klaberjass")


def _play(state, *actions):
    """Apply actions for whoever is to act, checking nothing (the legal sets that matter are
    asserted by the caller)."""
    for a in actions:
        state.apply(a)


def test_kl_a7_round2_schmeiss_refused_a8_no_dix_a13_any_order_a17_trick_scope():
    """KL-A7: a refused round-2 schmeiss obliges its caller to name a suit other than the
    turn-up's (no pass). KL-A8 (``kl_dix_requires_turnup_trump``): trump named, so the elder's
    seven of hearts is no dix to exchange: both window steps are ``keep``. KL-5.5: 20 against
    20, the elder's ace-high spades beat the dealer's king-high trumps (the top card decides
    before the trump, KL-5.4). KL-7.2: the meld loser still collects his trump K-Q-J (20);
    KL-A13 ``any``: king before queen is bella (20). KL-9.4 under KL-A17 ``trick_points``:
    the opponent has more (118 to 67), so he adds his melds and both players' card points
    (40 + 105), the maker keeps only his melds and bonuses (40)."""
    opts = {"kl_schmeiss": True, "kl_dix_requires_turnup_trump": True,
            "kl_score_scope": "trick_points", "kl_bella_order": "any"}
    state = KLABERJASS.new_state(opts, first_dealer=1)  # seat 1 deals, seat 0 is the elder
    state.deal(deck_for("KH QH JH 9S 8S 7S AD 8C 7C", "AH TH 7H AS KS QS AC KC QC", "TS", info="7D"))
    _play(state, "pass", "pass", "pass")
    assert state.legal_actions() == ["name:H", "name:D", "name:C", "pass", "schmeiss"]
    _play(state, "schmeiss")
    assert state.legal_actions() == ["accept", "refuse"]
    _play(state, "refuse")
    assert state.to_act() == 1 and state.legal_actions() == ["name:H", "name:D", "name:C"]
    _play(state, "name:H")
    assert state.to_act() == 0 and state.legal_actions() == ["keep"]  # holds 7H, trump not turned up
    _play(state, "keep")
    assert state.legal_actions() == ["keep"]
    _play(state, "keep")
    says = [(e["seat"], e["say"], e.get("card")) for e in state.public_view()["table"]["melds"]]
    assert says == [(0, "value", None), (1, "how_high", None), (0, "top", "AS"), (1, "lower", None),
                    (0, "scores", None)]
    _play(state, "play:AS", "play:7S", "play:KS", "play:8S", "play:QS", "play:9S", "play:AC", "play:7C",
          "play:KC", "play:8C", "play:QC")
    assert state.legal_actions() == ["play:KH", "play:QH", "play:JH"]  # KL-6.5: void, must trump
    _play(state, "play:KH", "play:JH")
    assert state.legal_actions() == ["play:AH", "play:TH", "play:7H"]  # nothing beats the jass
    _play(state, "play:7H", "play:QH")
    assert state.legal_actions() == ["play:AH", "play:TH"]  # KL-6.4: must beat the queen
    _play(state, "play:TH", "play:AH", "play:AD")
    assert state.deal_results()[-1] == {
        "thrown_in": False, "trump": "H", "maker": 1, "melds": [40, 0], "card_points": [78, 27],
        "bonuses": [0, 40], "scored": [145, 40]}
    detail = state.deal_details()[-1]
    assert detail["bella"] == [0, 20] and detail["trump_kqj"] == [0, 20]
    assert detail["deal_totals"] == [118, 67] and detail["outcome"] == "opponent_more"


def test_jj_a11_slam_switched_to_nt_after_an_exchange_doubled_and_failed():
    """JJ-4.2: spades accepted with the turn-up KS, so the window opens and the defender, the only
    holder of a seven, exchanges 7D for it. JJ-4.4 / JJ-A11 ``suit_or_no_trump``: after nullo
    the declarer may switch the slam to no-trump. JJ-5.1: the final strain counts, so his four
    nines are no quartet at NT and the defender's four queens score 100 (in spades the nines
    would have won, JJ-1.5). JJ-7.1: no jo at NT (the defender holds KS and QS). JJ-8.1: the
    jack of spades is worth 0. JJ-9.4: doubled, the defender wins the comparison (145 to 30)
    and enters (30 + 45) x 2 below; JJ-9.6 / JJ-A13: the failed slam gives him 500 above,
    unmultiplied."""
    state = deal({"jj_slam_strain": "suit_or_no_trump"}, nd=["9S", "9H", "9D", "9C", "JS", "AS"],
                 dl=["QS", "QH", "QD", "QC", "7D", "8D"], turn="KS", nd2=["AH", "AD", "8C"],
                 dl2=["TS", "TH", "TD"], info="7S")
    act(state, "accept", "double", "pass")
    assert state.legal_actions() == ["exchange:7D", "no_exchange"]
    act(state, "exchange:7D")
    assert state.legal_actions() == ["no_exchange"]
    act(state, "no_exchange", "nullo")
    assert state.legal_actions() == ["slam:S", "slam:NT", "pass"]
    act(state, "slam:NT")
    assert table(state)["melds"]["points"] == [0, 100]
    act(state, "play:QC", "play:8C", "play:TS")
    assert state.legal_actions() == ["play:AS"]  # JJ-6.3: must beat a plain lead
    act(state, "play:AS", "play:JS")
    assert state.legal_actions() == ["play:KS", "play:QS"]  # no play:KS:jo at NT
    act(state, "play:QS", "play:KS", "play:9S", "play:TH", "play:AH", "play:AD", "play:8D", "play:9H",
        "play:QH", "play:TD", "play:9D", "play:QD", "play:9C")
    assert state.deal_results()[-1] == {
        "thrown_in": False, "contract": {"kind": "slam", "strain": "NT", "holder": 0, "multiplier": 2},
        "trick_points": [30, 45], "below": [0, 250], "above": [0, 500], "pot": 0}
