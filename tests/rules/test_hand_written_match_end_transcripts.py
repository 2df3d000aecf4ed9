"""card-transcript/1 files written by hand from the rulebooks and NOTATION.md alone (decks laid
out by the dealing rules under the non-default options, every legal set given and every score
worked out on paper before the engine was run), each a whole match that ends by its game's
match-end rule, checked through ``python -m engine_service replay --check``.

* Japanese Joker (``target_score`` 11, JJK-8.1): seat 0 declares hearts on ``AH KH QH``
  (JJK-3.3) and holds every heart, both jokers and ``AS``..``8S``; seat 1 holds ``7S``, the
  diamonds and the clubs. Trick 1 comes from the hands only (JJK-5.1: seat 1's only legal card
  is ``7S``); from trick 2 the up cards are available; columns empty 5 -> 4 -> 3 -> 2 -> 0
  (JJK-4.2, JJK-4.3), bringing ``X1``, ``X2``, ``9S``, ``8S``, ``JH``, ``6H`` and seat 1's down
  cards into the hands; jokers lead naming the trump (JJK-5.2, JJK-6.3). 18:0 scores 18 / 0
  (JJK-7.1); 18 >= 11 ends the match after the first deal (JJK-8.2), winner seat 0.
* Klaberjass (``kl_schmeiss``, ``kl_deal_first_to`` elder, ``kl_first_deal_packet`` 2,
  ``kl_target_score`` 150): the elder's schmeiss is accepted, so the deal is thrown in and the
  same dealer deals again (KL-A7, KL-3.5, KL-2.2); in the next deal both pass round 1, the
  elder's round-2 schmeiss is refused and he must name a suit, no ``pass`` (KL-A7): hearts. The
  dix 7H is in the stock: both window steps ``keep`` (NOTATION 2.1). The elder's A-K-Q-J-T-9 of
  hearts is one sequence, 50 (KL-5.2, KL-5.3), against nothing; his K-Q-J of trumps was scored
  in it, so no K-Q-J bonus (KL-7.2); QH before KH: bella 20 (KL-7.1). He takes all nine
  tricks: 3 + 6 + 24 + 11 + 12 + 18 + 11 + 13 + 15 + 10 (last) = 123 (KL-8). Maker 193 against
  0: each enters his own (KL-9.2); 193 >= 150 wins (KL-10.1).
* Jo-Jotte (``jj_first_deal_packet`` 3, ``jj_second_deal_packet`` 1, ``jj_double_timing``
  end_of_auction, ``jj_seven_exchange`` trump_seven, ``jj_game_target`` 20): deal 1, seat 1
  accepts hearts; ``RESP`` offers ``no_trump``/``pass`` only, then the defender's one ``double``
  call after the auction, then the declarer's ``redouble``/``pass`` (JJ-A8). The defender holds
  7C, the declarer 7H: by default both hold sevens and nobody exchanges, under trump_seven the
  declarer alone may exchange 7H (JJ-4.2, NOTATION 2.2). His A..8 of hearts (with the turn-up
  8H) is a 7-card sequence, 50 (JJ-5.2); ``play:KH:jo`` then ``play:QH:jotte``, 20 (JJ-7.2);
  he takes all nine tricks, 10 + 5 + 5 + 20 + 15 + 10 + 10 + 10 + 20 = 105 (JJ-8.2, max card),
  doubled: (105 + 0) x 2 = 210 (JJ-9.4); below 50 + 20 + 210 = 280; unbid slam 100 above, not
  multiplied (JJ-7.4, JJ-9.8, JJ-A13). 280 >= 20: game 1 (JJ-10.1), part-scores restart
  (JJ-10.2). Deal 2, the other dealer (JJ-2.2): seat 1 accepts spades in round 1, undoubled,
  7S in the stock; his A-K-Q-J-T-9 of spades 50; ``KS`` played without ``jo``: no bonus; the
  defender's forced AC takes the last trick (JJ-6.3): 20 against 90; the declarer enters his 90
  (JJ-9.3a), below 140: game 2 and the rubber, 300 above in that deal (JJ-10.3); one rubber is
  the match (JJ-10.5), winner seat 1.
* Georgian Joker (``deal_schedule`` nines, ``high_joker_lead_trumpable``, ``khishti_penalty``
  "500"): 16 nine-card deals, the same deck each time, dealt from the forehand, who moves left
  with the dealer (GJ-2.3, GJ-3.5), so the play repeats rotated. The forehand, with ``X1 AS KS``,
  names hearts (GJ-3.5); bids 1, 8, 0, and the dealer may not bid 0 (GJ-4.3): 1. The forehand's
  ``high`` joker lead naming spades: the void must trump (GJ-5.8), the spade holder gives his
  highest (GJ-5.4), and the trump wins under the option (GJ-6.6); a following ``high`` joker
  beats the trump ace (GJ-6.1); a void trumps with any trump (GJ-5.3); the trump holder takes
  the rest. Scores 100, 450, 50 and the dealer's khishti -500 (GJ-7.2 to GJ-7.4). The dealer
  misses every deal, so nobody qualifies: premium and moshla zeros after each pulka (GJ-8.5,
  NOTATION 4); 400 each, all four winners (GJ-9.3) after the 16th deal (GJ-9.1).

Around them: a deal or a step after the match end is refused at its place; the Klaberjass deals
replayed under ``kl_dealer_rotation`` same_dealer and ``kl_throw_in_redealer`` other; a
transcript stopped inside a deal totals the scored deals only (NOTATION 3).
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from engine_service.__main__ import main
from engine_service.rules import transcript


def _step(seat: int, legal: str | None, action: str) -> dict:
    st = {"seat": seat, "action": action}
    if legal is not None:
        st["legal"] = legal.split()
    return st


def _plays(cards: str) -> str:
    return " ".join("play:" + c for c in cards.split())


def japanese_joker() -> dict:
    # JJK-3.2/3.4: declarer (seat 0) deck[0,2,4] then hand deck[6..14 even], column downs deck[16..24
    # even], ups deck[26..34 even]; the opponent the odd positions.
    d_first, o_first = "AH KH QH".split(), "7S AD KD".split()
    d_hand, o_hand = "AS KS QS JS TS".split(), "QD JD TD 9D 8D".split()
    d_down, o_down = "X1 X2 9S 8S JH".split(), "7D 6D AC KC QC".split()
    d_up, o_up = "TH 9H 8H 7H 6H".split(), "JC TC 9C 8C 7C".split()
    deck = []
    for a, b in ((d_first, o_first), (d_hand, o_hand), (d_down, o_down), (d_up, o_up)):
        for x, y in zip(a, b):
            deck += [x, y]
    leads = "AS AH KH QH KS QS JS TS TH 9H 8H 7H X1:H X2:H 9S 8S JH 6H".split()
    discards = "7S AD KD QD JD TD 9D 8D JC TC 9C 8C 7D 6D AC KC QC 7C".split()
    legal = {
        0: ("trump:S trump:H trump:D trump:C trump:NT", None),
        1: (_plays("AH KH QH AS KS QS JS TS"), "play:7S"),  # first cards: hand only (JJK-5.1)
        2: (_plays("AH KH QH KS QS JS TS TH 9H 8H 7H 6H"),
            _plays("AD KD QD JD TD 9D 8D JC TC 9C 8C 7C")),
        13: (" ".join(f"play:{j}:{s}" for j in ("X1", "X2") for s in "SHDC") + " " + _plays("9S 8S JH 6H"),
             _plays("7D 6D AC KC QC 7C")),
    }
    steps = [_step(0, legal[0][0], "trump:H")]
    for t, (lead, disc) in enumerate(zip(leads, discards), start=1):
        lg = legal.get(t, (None, None))
        steps.append(_step(0, lg[0], "play:" + lead))
        steps.append(_step(1, lg[1], "play:" + disc))
    return {"schema": "card-transcript/1", "game": "japanese_joker", "options": {"target_score": 11},
            "first_dealer": 0,
            "deals": [{"deck": deck, "expect": {"dealer": 0}, "steps": steps,
                       "result": {"trump": "H", "taken": [18, 0], "scores": [18, 0]}}],
            "result": {"totals": [18, 0], "winners": [0], "over": True}}


def klaberjass() -> dict:
    # kl_deal_first_to = elder, kl_first_deal_packet = 2 (KL-2.4, KL-A3, KL-A4): elder (seat 0)
    # D0-1, D4-5, D8-9, D13, D15, D17; dealer (seat 1) D2-3, D6-7, D10-11, D14, D16, D18;
    # turn-up D12, information card D31.
    deck = ("AH KH KS JS QH JH 9S KD TH 9H JD 9D 8S AS KC AD JC AC 9C "
            "8H 7H QS TS 7S QD TD 8D 7D QC TC 8C 7C").split()
    r1 = "take pass schmeiss"
    accepted = {"deck": deck, "expect": {"dealer": 1}, "steps": [
        _step(0, r1, "schmeiss"), _step(1, "accept refuse", "accept")],
        "result": {"thrown_in": True}}
    steps = [_step(0, r1, "pass"), _step(1, r1, "pass"),
             _step(0, "name:H name:D name:C pass schmeiss", "schmeiss"), _step(1, "accept refuse", "refuse"),
             _step(0, "name:H name:D name:C", "name:H"),
             _step(0, "keep", "keep"), _step(1, "keep", "keep")]  # the dix 7H is in the stock
    tricks = [("QH", "9D"), ("KH", "JD"), ("JH", "KD"), ("AH", "9C"), ("TH", "JC"), ("9H", "KC"),
              ("AS", "9S"), ("AD", "JS"), ("AC", "KS")]
    legal = {0: (_plays("AH KH QH JH TH 9H AS AD AC"), _plays("KS JS 9S KD JD 9D KC JC 9C")),
             6: (None, _plays("KS JS 9S")), 7: (None, _plays("KS JS"))}
    for t, (lead, follow) in enumerate(tricks):
        lg = legal.get(t, (None, None))
        steps += [_step(0, lg[0], "play:" + lead), _step(1, lg[1], "play:" + follow)]
    played = {"deck": deck, "expect": {"dealer": 1}, "steps": steps,
              "result": {"thrown_in": False, "trump": "H", "maker": 0, "melds": [50, 0],
                         "card_points": [123, 0], "bonuses": [20, 0], "scored": [193, 0]}}
    return {"schema": "card-transcript/1", "game": "klaberjass",
            "options": {"kl_schmeiss": True, "kl_deal_first_to": "elder", "kl_first_deal_packet": 2,
                        "kl_target_score": 150},
            "first_dealer": 1, "deals": [accepted, played],
            "result": {"totals": [193, 0], "winners": [0], "over": True}}


def jojotte() -> dict:
    # jj_first_deal_packet = 3, jj_second_deal_packet = 1 (JJ-2.4, JJ-2.6, JJ-A3): non-dealer
    # D0-2, D6-8, D13, D15, D17; dealer D3-5, D9-11, D14, D16, D18; turn-up D12.
    deck_a = ("JH 9H AH KS JS 9S TH KH QH KD JD 9D 8H 7H AC AS QC AD 7C "
              "QS TS 8S 7S QD TD 8D 7D KC JC 9C 8C TC").split()
    deck_b = ("KH JH 9H JS 9S AS KD JD 9D TS KS QS 8S AC AH QC AD TC KC "
              "7S QH TH 8H 7H QD TD 8D 7D JC 9C 8C 7C").split()
    a = [_step(1, "accept name:S name:D name:C pass", "accept"),
         _step(0, "no_trump pass", "pass"),            # JJ-A8 end_of_auction: no double in RESP
         _step(0, "double pass", "double"),            # ... but one double call after END
         _step(1, "redouble pass", "pass"),
         _step(0, "no_exchange", "no_exchange"),       # trump_seven: only the 7H holder
         _step(1, "exchange:7H no_exchange", "exchange:7H"),
         _step(0, "nullo pass", "pass"),
         _step(0, _plays("KS JS 9S KD JD 9D AC QC 7C"), "play:KS"),
         _step(1, "play:AS", "play:AS"),               # JJ-6.3: follow and beat
         _step(1, _plays("AH KH") + " play:KH:jo " + _plays("QH JH TH 9H 8H AD"), "play:KH:jo"),
         _step(0, None, "play:9S"),
         _step(1, _plays("AH QH") + " play:QH:jotte " + _plays("JH TH 9H 8H AD"), "play:QH:jotte"),
         _step(0, None, "play:9D")]
    for lead, follow in (("JH", "JS"), ("9H", "JD"), ("AH", "7C"), ("TH", "QC"), ("8H", "AC"), ("AD", "KD")):
        a += [_step(1, None, "play:" + lead), _step(0, None, "play:" + follow)]
    a[-1]["legal"] = ["play:KD"]
    b = [_step(0, "accept name:H name:D name:C pass", "pass"),
         _step(1, "accept name:H name:D name:C pass", "accept"),
         _step(0, "no_trump pass", "pass"), _step(0, "double pass", "pass"),
         _step(0, "no_exchange", "no_exchange"), _step(1, "no_exchange", "no_exchange"),  # 7S in the stock
         _step(0, "nullo pass", "pass"),
         _step(0, None, "play:KH"), _step(1, "play:AH", "play:AH")]
    for lead, follow in (("JS", "9H"), ("9S", "JH"), ("AS", "9D"), ("TS", "JD"), ("KS", "QC"), ("QS", "TC"),
                         ("AD", "KD"), ("KC", "AC")):
        b += [_step(1, None, "play:" + lead), _step(0, None, "play:" + follow)]
    b[-1]["legal"] = ["play:AC"]
    return {"schema": "card-transcript/1", "game": "jojotte",
            "options": {"jj_first_deal_packet": 3, "jj_second_deal_packet": 1, "jj_double_timing": "end_of_auction",
                        "jj_seven_exchange": "trump_seven", "jj_game_target": 20},
            "first_dealer": 0, "deals": [
                {"deck": deck_a, "expect": {"dealer": 0}, "steps": a,
                 "result": {"thrown_in": False, "contract": {"kind": "normal", "strain": "H", "holder": 1, "multiplier": 2},
                            "trick_points": [0, 105], "below": [0, 280], "above": [0, 100], "pot": 0}},
                {"deck": deck_b, "expect": {"dealer": 1}, "steps": b,
                 "result": {"thrown_in": False, "contract": {"kind": "normal", "strain": "S", "holder": 1, "multiplier": 1},
                            "trick_points": [20, 90], "below": [0, 140], "above": [0, 300], "pot": 0}}],
            "result": {"totals": {"below": [0, 420], "above": [0, 400], "games_won": [0, 2]}, "winners": [1], "over": True}}


def _rot(by_role: list[int], f: int) -> list[int]:
    """Per-seat values from per-role ones (role 0 the forehand ``f``)."""
    return [by_role[(seat - f) % 4] for seat in range(4)]


def _gj_deal(f: int) -> dict:
    # deal_schedule nines: deck[k] goes to seat (f + k) mod 4, f the forehand, the first twelve
    # before the trump choice (GJ-3.5); hands are by role, counted from the forehand, so every deal
    # uses the same deck and the same play, rotated.
    hands = ["X1 AS KS X2 QS JS TS 9S 8S", "AH KH QH JH TH 9H 8H 7H 6H",
             "AD KD QD JD TD 9D 8D 7D 6D", "7S AC KC QC JC TC 9C 8C 7C"]
    cards = [h.split() for h in hands]
    deck = [cards[k % 4][k // 4] for k in range(36)]
    bids = " ".join(f"bid:{b}" for b in range(10))
    jokers = " ".join(f"play:{j}:{m}:{s}" for j in ("X1", "X2") for m in ("high", "low") for s in "SHDC")
    def step(role: int, legal: str | None, action: str) -> dict:
        return _step((f + role) % 4, legal, action)

    steps = [step(0, "trump:S trump:H trump:D trump:C trump:NT", "trump:H"),
             step(0, bids, "bid:1"), step(1, bids, "bid:8"), step(2, bids, "bid:0"),
             step(3, bids.replace("bid:0 ", ""), "bid:1"),   # 1 + 8 + 0 = 9 = n: 0 forbidden (GJ-4.3)
             # trick 1: a high joker naming spades; a void must trump (GJ-5.8), the holder of a spade
             # gives his highest (GJ-5.4); the trump wins under the option (GJ-6.6)
             step(0, jokers + " " + _plays("AS KS QS JS TS 9S 8S"), "play:X1:high:S"),
             step(1, _plays("AH KH QH JH TH 9H 8H 7H 6H"), "play:6H"),
             step(2, _plays("AD KD QD JD TD 9D 8D 7D 6D"), "play:6D"),
             step(3, "play:7S", "play:7S"),
             # trick 2: a following high joker beats the trump ace (GJ-6.1)
             step(1, None, "play:AH"), step(2, None, "play:7D"), step(3, None, "play:7C"),
             step(0, "play:X2:high play:X2:low " + _plays("AS KS QS JS TS 9S 8S"), "play:X2:high"),
             # trick 3: a void with trumps must trump, any trump (GJ-5.3)
             step(0, None, "play:AS"), step(1, _plays("KH QH JH TH 9H 8H 7H"), "play:7H"),
             step(2, None, "play:8D"), step(3, None, "play:8C")]
    for lead, d, c, s in zip("KH QH JH TH 9H 8H".split(), "9D TD JD QD KD AD".split(),
                             "9C TC JC QC KC AC".split(), "KS QS JS TS 9S 8S".split()):
        steps += [step(1, None, "play:" + lead), step(2, None, "play:" + d), step(3, None, "play:" + c),
                  step(0, None, "play:" + s)]
    # GJ-7.3: 1 of 1 -> 100, 8 of 8 -> 450; GJ-7.2: pass made -> 50; GJ-7.4: khishti -500
    scores = [100, 450, 50, -500]
    return {"deck": deck, "expect": {"dealer": (f + 3) % 4}, "steps": steps,
            "result": {"trump": "H", "bids": _rot([1, 8, 0, 1], f), "taken": _rot([1, 8, 0, 0], f),
                       "scores": _rot(scores, f)}}


def georgian_joker() -> dict:
    """The 16 deals of the nines schedule (GJ-2.5), the dealer moving left each deal (GJ-2.3):
    each seat plays each role once per pulka, and the dealer's khishti means nobody qualifies,
    so premium and moshla are zeros (GJ-8.5, NOTATION 4); each seat 4 x 100 = 400, all four share
    first place (GJ-9.3), the match over after the 16th deal (GJ-9.1)."""
    deals = [_gj_deal(k % 4) for k in range(16)]
    for k in (3, 7, 11, 15):
        deals[k]["result"].update(premium=[0, 0, 0, 0], moshla=[0, 0, 0, 0])
    return {"schema": "card-transcript/1", "game": "georgian_joker",
            "options": {"deal_schedule": "nines", "high_joker_lead_trumpable": True, "khishti_penalty": "500"},
            "first_dealer": 3, "deals": deals,
            "result": {"totals": [400, 400, 400, 400], "winners": [0, 1, 2, 3], "over": True}}


TRANSCRIPTS = {"japanese_joker": japanese_joker, "klaberjass": klaberjass, "jojotte": jojotte,
               "georgian_joker": georgian_joker}


def _replay(data: dict, path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    path.write_text(json.dumps(data, indent=1))
    status = main(["replay", "--check", str(path)])
    return status, capsys.readouterr().out


def _checks_out(data: dict) -> str | None:
    diff, _ = transcript.check(transcript.loads(json.dumps(data)))
    return None if diff is None else str(diff)


@pytest.mark.parametrize("game", TRANSCRIPTS)
def test_a_hand_written_match_checks_out_to_its_end(game, tmp_path, capsys):
    path = tmp_path / f"{game}.json"
    assert _replay(TRANSCRIPTS[game](), path, capsys) == (0, f"{path}: ok\n")


@pytest.mark.parametrize("game", TRANSCRIPTS)
def test_every_non_default_option_is_needed(game):
    """Each option of the file changes what the replay sees: dropped (its default back), the
    transcript no longer checks out. ``jj_game_target`` 20 is not needed for these two deals
    (280 and 140 below reach the default 80 too); a target above 280 shows it is applied."""
    data = TRANSCRIPTS[game]()
    for name in data["options"]:
        if name == "jj_game_target":
            continue
        changed = copy.deepcopy(data)
        del changed["options"][name]
        assert _checks_out(changed) is not None, name
    if game == "jojotte":
        changed = copy.deepcopy(data)
        changed["options"]["jj_game_target"] = 281
        assert _checks_out(changed) == (
            'deal 1 result: result.above differs: expected [0, 300], actual [0, 0]')


def test_tied_winners_in_any_order_check_out_but_not_a_subset():
    """GJ-9.3: all four seats share first place; ``winners`` names a set of seats (NOTATION.md
    section 3, docs/rules.md "compared as sets"), so the four listed in another order are the
    same winners, while three of them, or a seat twice, are not."""
    data = georgian_joker()
    for winners in ([3, 2, 1, 0], [1, 3, 0, 2]):
        data["result"]["winners"] = winners
        assert _checks_out(data) is None, winners
    data["result"]["winners"] = [2, 1, 0]
    assert _checks_out(data) == ("match result: result.winners differs: expected [2, 1, 0], "
                                 "actual [0, 1, 2, 3]")
    data["result"]["winners"] = [3, 2, 1, 0, 0]
    assert _checks_out(data) is not None


def test_at_the_default_target_the_japanese_joker_match_goes_on():
    """JJK-8.1: 18 points do not reach the default 21; the match goes on with the other
    declarer (JJK-2.3), and a transcript claiming it over is refused at the match result."""
    data = japanese_joker()
    data["options"] = {}
    assert _checks_out(data) == ('match result: result.winners differs: expected [0], actual []')
    data["result"].update(winners=[], over=False)
    assert _checks_out(data) is None
    later = copy.deepcopy(data)
    later["deals"].append({"deck": data["deals"][0]["deck"], "expect": {"dealer": 1}, "steps": []})
    assert _checks_out(later) is None


@pytest.mark.parametrize("game", TRANSCRIPTS)
def test_a_deal_after_the_match_end_is_refused_at_that_deal(game, tmp_path, capsys):
    data = TRANSCRIPTS[game]()
    extra = len(data["deals"])
    data["deals"].append(copy.deepcopy(data["deals"][-1]))
    path = tmp_path / "after.json"
    assert _replay(data, path, capsys) == (
        1, f'{path}: deal {extra}: deal differs: expected "a new deal", actual "match over"\n')


@pytest.mark.parametrize("game", TRANSCRIPTS)
def test_a_step_after_the_match_end_is_refused_at_that_step(game, tmp_path, capsys):
    data = TRANSCRIPTS[game]()
    last = data["deals"][-1]
    last["steps"].append(copy.deepcopy(last["steps"][-1]))
    seat = last["steps"][-1]["seat"]
    path = tmp_path / "after.json"
    assert _replay(data, path, capsys) == (
        1, f'{path}: deal {len(data["deals"]) - 1} step {len(last["steps"]) - 1}: seat differs: '
           f'expected {seat}, actual "match over"\n')


def test_a_refused_round_two_schmeiss_leaves_no_pass_and_no_turn_up_suit():
    """KL-A7: after a refused round-2 schmeiss the caller "must now name a suit" (KL-3.3: not
    the turn-up suit, spades here); ``pass`` and ``name:S`` are refused at that step."""
    for action in ("pass", "name:S"):
        data = klaberjass()
        data["deals"][1]["steps"][4]["action"] = action
        assert _checks_out(data) == (
            f'deal 1 step 4: action differs: expected "{action}", actual "rejected: {action} is not a '
            'legal action now; legal now: name:H, name:D, name:C"')


def _mirrored(deal: dict) -> dict:
    """The same Klaberjass deal with the seats' roles swapped: the deck is dealt by role (dealer,
    elder), so only the seats of the steps and of the result change."""
    mirrored = copy.deepcopy(deal)
    mirrored["expect"]["dealer"] = 1 - deal["expect"]["dealer"]
    for step in mirrored["steps"]:
        step["seat"] = 1 - step["seat"]
    result = mirrored["result"]
    if not result["thrown_in"]:
        result["maker"] = 1 - result["maker"]
        for key in ("melds", "card_points", "bonuses", "scored"):
            result[key] = result[key][::-1]
    return mirrored


def test_same_dealer_after_a_played_deal_and_the_other_after_a_throw_in():
    """``kl_dealer_rotation`` same_dealer and ``kl_throw_in_redealer`` other (KL-2.2, KL-A5,
    KL-A6): dealers 1 (schmeiss accepted: thrown in), 0 (played), 0 again, four passes (thrown
    in, KL-3.5), 1 (played), 1 again. 193 each stays under 400: the match goes on."""
    base = klaberjass()
    accepted, played = base["deals"]
    r1, r2 = "take pass schmeiss", "name:H name:D name:C pass schmeiss"
    passes = {"deck": accepted["deck"], "expect": {"dealer": 0}, "steps": [
        _step(1, r1, "pass"), _step(0, r1, "pass"), _step(1, r2, "pass"), _step(0, r2, "pass")],
        "result": {"thrown_in": True}}
    data = {**base, "options": {**base["options"], "kl_target_score": 400, "kl_dealer_rotation": "same_dealer",
                                "kl_throw_in_redealer": "other"},
            "deals": [accepted, _mirrored(played), passes, played,
                      {"deck": accepted["deck"], "expect": {"dealer": 1}, "steps": []}],
            "result": {"totals": [193, 193], "winners": [], "over": False}}
    assert _checks_out(data) is None
    del data["options"]["kl_throw_in_redealer"]
    assert _checks_out(data) == "deal 1: expect.dealer differs: expected 0, actual 1"


@pytest.mark.parametrize("game", TRANSCRIPTS)
def test_a_transcript_stopped_inside_a_deal_totals_the_scored_deals_only(game):
    """NOTATION 3: "when the transcript stops inside a deal, the totals of the deals already
    scored", although the melds of the deal under way are already settled (KL-5.7, JJ-5.8)."""
    data = TRANSCRIPTS[game]()
    last = data["deals"][-1]
    last["steps"] = last["steps"][:12]
    del last["result"]
    data["result"] = {"klaberjass": {"totals": [0, 0], "winners": [], "over": False},
                      "japanese_joker": {"totals": [0, 0], "winners": [], "over": False},
                      # three pulkas of 100 each, then deals 13 to 15 (forehands 0, 1, 2)
                      "georgian_joker": {"totals": [300 + 100 - 500 + 50, 300 + 450 + 100 - 500,
                                                    300 + 50 + 450 + 100, 300 - 500 + 50 + 450],
                                         "winners": [], "over": False},
                      "jojotte": {"totals": {"below": [0, 280], "above": [0, 100], "games_won": [0, 1]},
                                  "winners": [], "over": False}}[game]
    assert _checks_out(data) is None


@pytest.mark.parametrize("game", TRANSCRIPTS)
def test_timer_options_belong_to_the_joker_tables_only(game):
    """NOTATION 3: option names are the rulebooks' own. ``turn_time_s`` is in the Joker tables
    (GJ-13, JJK-11), not in Klaberjass's or Jo-Jotte's (KL-11, JJ-11; docs/rules.md)."""
    data = TRANSCRIPTS[game]()
    data["options"]["turn_time_s"] = 45
    diff = _checks_out(data)
    if game in ("georgian_joker", "japanese_joker"):
        assert diff is None
    else:
        assert diff is not None and diff.startswith(
            "transcript: setup differs: expected \"a valid game and options\", actual \"unknown option 'turn_time_s'")


def jojotte_slam() -> dict:
    """Jo-Jotte (``jj_slam_strain`` suit_or_no_trump, ``jj_multiplier_scope`` all), one deal: seat 1
    accepts hearts (turn-up QH), seat 0 doubles; only seat 0 holds sevens and keeps them (JJ-4.2);
    he calls nullo and seat 1 answers ``slam:NT`` (JJ-4.4, JJ-A11). The strain is now no-trump, so
    seat 0's four nines are no quartet (JJ-5.1: the final strain) and seat 1's aces and kings score
    200 (JJ-5.5), his A-K-Q of spades 20; no jo-jotte at no-trump (JJ-7.1). Seat 0 leads (JJ-6.1),
    seat 1 must beat JS (JJ-6.3) and takes all nine: 5 + 10 + 5 + 10 + 5 + 10 + 5 + 10 + 15 = 75
    (JJ-8.2 at no-trump: jacks and nines 0). Scored as a doubled no-trump contract, (75 + 0) x 2 =
    150 below (JJ-9.6, JJ-9.4), 220 melds below; the slam 500 doubled too, 1000 above (JJ-A13)."""

    pack = [r + s for s in "SHDC" for r in "AKQJT987"]
    top = "AS KS 9S 9H QS AH 9D 9C KH AD 8H 8D QH KD AC KC 7S 7C JS".split()
    deck = top + [c for c in pack if c not in top]
    steps = [_step(1, "accept name:S name:D name:C pass", "accept"),
             _step(0, "no_trump double pass", "double"), _step(1, "redouble pass", "pass"),
             _step(0, "exchange:7S exchange:7C no_exchange", "no_exchange"), _step(1, "no_exchange", "no_exchange"),
             _step(0, "nullo pass", "nullo"), _step(1, "slam:H slam:NT pass", "slam:NT"),
             _step(0, _plays("9S 9H 9D 9C 8H 8D 7S 7C JS"), "play:JS"), _step(1, _plays("AS KS QS"), "play:QS")]
    for lead, follow in (("AS", "9S"), ("KS", "7S"), ("AH", "9H"), ("KH", "8H"), ("AD", "9D"), ("KD", "8D"),
                         ("AC", "9C"), ("KC", "7C")):
        steps += [_step(1, None, "play:" + lead), _step(0, None, "play:" + follow)]
    return {"schema": "card-transcript/1", "game": "jojotte",
            "options": {"jj_slam_strain": "suit_or_no_trump", "jj_multiplier_scope": "all"},
            "first_dealer": 0,
            "deals": [{"deck": deck, "expect": {"dealer": 0}, "steps": steps,
                       "result": {"thrown_in": False,
                                  "contract": {"kind": "slam", "strain": "NT", "holder": 1, "multiplier": 2},
                                  "trick_points": [0, 75], "below": [0, 370], "above": [0, 1000], "pot": 0}}],
            "result": {"totals": {"below": [0, 370], "above": [0, 1000], "games_won": [0, 1]},
                       "winners": [], "over": False}}


def test_a_doubled_slam_switched_to_no_trump():
    data = jojotte_slam()
    assert _checks_out(data) is None
    del data["options"]["jj_multiplier_scope"]
    assert _checks_out(data) == "deal 0 result: result.above differs: expected [0, 1000], actual [0, 500]"
    del data["options"]["jj_slam_strain"]
    assert _checks_out(data) == ('deal 0 step 6: legal differs: expected ["slam:H", "slam:NT", "pass"], '
                                 'actual ["slam:H", "pass"]')


def klaberjass_scoring() -> dict:
    """Klaberjass (``kl_must_overtrump`` false, ``kl_bella_order`` king_first, ``kl_score_scope``
    trick_points, ``kl_ten_value`` 0, ``kl_dix_window`` before_melds), one deal: the elder (seat
    0) takes spades; the dealer holds the dix 7S and keeps it in the window, and is offered no
    ``exchange`` in play (KL-4.2, KL-A9). The dealer's A-K-Q-J of clubs (50) beats the elder's
    K-Q-J of trumps (20): melds 0 / 50 (KL-5.4, KL-5.6), so the elder's K-Q-J bonus stands, 20
    (KL-7.2), and KS before QS is bella under king_first, 20 (KL-A13). On the elder's trump leads
    the dealer may play any trump, 7S under KS (KL-A15); a void trumps (KL-6.5). Card points with
    tens at 0 (KL-A16): elder 4 + 23 = 27, dealer 17 + 11 + 4 + 22 + 2 + 11 + 10 = 77. Totals
    67 / 127: the opponent has more (KL-9.4); under trick_points the maker keeps his 40 of
    bonuses and the opponent enters his 50 and both players' card points, 154 (KL-A17)."""

    deck = ("AS 9S 7S KS QS JS AC KC QC AH 9H 8C 8S JC 7C AD 8D TD 7D "
            "TS KH QH JH TH 8H 7H KD QD JD 9D TC 9C").split()
    steps = [_step(0, "take pass", "take"), _step(0, "keep", "keep"), _step(1, "exchange keep", "keep"),
             _step(0, _plays("KS QS JS AH 9H 8C 7C 8D 7D"), "play:KS"),
             _step(1, _plays("AS 9S 7S"), "play:7S"),
             _step(0, None, "play:QS"), _step(1, _plays("AS 9S"), "play:9S")]
    for lead, follow, legal in (("AC", "8C", "8C 7C"), ("KC", "7C", "7C"), ("QC", "JS", "JS")):
        steps += [_step(1, None, "play:" + lead), _step(0, _plays(legal), "play:" + follow)]
    steps += [_step(0, _plays("AH 9H 8D 7D"), "play:AH"), _step(1, "play:AS", "play:AS")]
    for lead, follow in (("JC", "9H"), ("AD", "8D"), ("TD", "7D")):
        steps += [_step(1, None, "play:" + lead), _step(0, None, "play:" + follow)]
    return {"schema": "card-transcript/1", "game": "klaberjass",
            "options": {"kl_must_overtrump": False, "kl_bella_order": "king_first", "kl_score_scope": "trick_points",
                        "kl_ten_value": 0, "kl_dix_window": "before_melds"},
            "first_dealer": 1,
            "deals": [{"deck": deck, "expect": {"dealer": 1}, "steps": steps,
                       "result": {"thrown_in": False, "trump": "S", "maker": 0, "melds": [0, 50],
                                  "card_points": [27, 77], "bonuses": [40, 0], "scored": [40, 154]}}],
            "result": {"totals": [40, 154], "winners": [], "over": False}}


def test_klaberjass_scoring_options_on_one_deal():
    data = klaberjass_scoring()
    assert _checks_out(data) is None
    for name in data["options"]:
        changed = copy.deepcopy(data)
        del changed["options"][name]
        assert _checks_out(changed) is not None, name
    changed = copy.deepcopy(data)
    del changed["options"]["kl_score_scope"]
    assert _checks_out(changed) == "deal 0 result: result.scored differs: expected [40, 154], actual [0, 194]"


def test_japanese_joker_declarers_alternate_to_a_target_of_31():
    """JJK-2.3: the declarer alternates; dealing starts with the declarer (JJK-3.2, JJK-3.4), so
    the same deck played with the seats swapped is the same deal the other way round. 18:0,
    0:18, 18:0 with ``target_score`` 31 (JJK-8.1): 18 / 0, 18 / 18, then 36 >= 31 ends the match
    (JJK-8.2)."""
    base = japanese_joker()
    deal = base["deals"][0]
    swapped = copy.deepcopy(deal)
    swapped["expect"]["dealer"] = 1
    for step in swapped["steps"]:
        step["seat"] = 1 - step["seat"]
    swapped["result"] = {"trump": "H", "taken": [0, 18], "scores": [0, 18]}
    data = {**base, "options": {"target_score": 31}, "deals": [deal, swapped, copy.deepcopy(deal)],
            "result": {"totals": [36, 18], "winners": [0], "over": True}}
    assert _checks_out(data) is None
    data["deals"][1]["expect"]["dealer"] = 0
    assert _checks_out(data) == "deal 1: expect.dealer differs: expected 0, actual 1"


def test_klaberjass_both_at_the_target_with_equal_scores_play_on():
    """KL-10.2: the one-deal scoring transcript (40 / 154), then the same deal with the seats
    swapped (the dealer alternates, KL-2.2: 154 / 40): 194 / 194, both past ``kl_target_score``
    190 and equal, so another deal is played, which seat 1 wins with 348 against 234. Under
    ``kl_simultaneous_target`` deal_winner (KL-A19) seat 0, who added 154 to 40 in the second
    deal, wins there, and a third deal is refused."""
    deal = klaberjass_scoring()["deals"][0]
    options = {**klaberjass_scoring()["options"], "kl_target_score": 190}
    data = {**klaberjass_scoring(), "options": options, "deals": [deal, _mirrored(deal), copy.deepcopy(deal)],
            "result": {"totals": [234, 348], "winners": [1], "over": True}}
    assert _checks_out(data) is None
    two = {**data, "deals": data["deals"][:2], "result": {"totals": [194, 194], "winners": [], "over": False}}
    assert _checks_out(two) is None
    by_deal = {**two, "options": {**options, "kl_simultaneous_target": "deal_winner"},
               "result": {"totals": [194, 194], "winners": [0], "over": True}}
    assert _checks_out(by_deal) is None
    by_deal["deals"] = data["deals"]
    assert _checks_out(by_deal) == 'deal 2: deal differs: expected "a new deal", actual "match over"'
