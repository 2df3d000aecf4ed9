"""card-transcript/1 files written by hand from the rulebooks and NOTATION.md (no engine code:
decks laid out by the dealing rules, every legal set and every score worked out on paper) and
checked through ``python -m engine_service replay --check``, the path the conformance
transcripts take.

* Klaberjass (``kl_target_score`` 100): a thrown-in deal (four passes, KL-3.5: the same dealer
  deals again), then the dealer takes hearts, keeps in the window, exchanges the dix at his
  first card as follower (NOTATION 2.1: listed last, the same seat acts again), so he holds
  trump K-Q-J when he plays it (KL-7.2: 20), plays QH before KH (bella 20, KL-7.1), trumps a
  void (KL-6.5), and reaches the target alone (KL-10.1). Card points: elder 9C AH 8H 7S 9S QS
  KD QD 9H = 35, dealer TC QH KH AS KS TS 8D JH AC = 73, last trick 10 to the elder: 53 / 65;
  totals 53 / 105, the maker has more, each enters his own (KL-9.2).
* Georgian Joker (``khishti_penalty`` "100_per_card"): deal 1 (n = 1) has a joker indicator,
  so no trump (GJ-3.3) and one joker in play; the dealer may bid anything when the first three
  bids pass n (GJ-4.3); a ``low`` joker lead naming S is taken by the highest spade (GJ-6.3);
  khishti costs 100 per card (GJ-7.4), all-bid-all-taken at n = 1 is 100 (GJ-7.1). Deal 2 (n =
  2, diamonds): a ``high`` joker lead naming C forces the highest club (GJ-5.4), beats a later
  ``low`` joker (GJ-6.1); a void must trump (GJ-5.3); misses score 10 per trick (GJ-7.5).
* Jo-Jotte: the non-dealer accepts hearts (the turn-up 9H), the defender alone holds sevens and
  is offered each in suit order (NOTATION 2.2), exchanges 7S, calls nullo; the declarer's
  answer is ``slam:H`` or ``pass`` (JJ-4.4), he passes and leads (JJ-6.1); at no trump the
  nullo player follows low or discards and takes no trick: 200 above to him, trick points
  reported ``[0, 0]``, the auction's multiplier 1 (JJ-9.7, NOTATION 4).
"""

from __future__ import annotations

import json

import pytest

from engine_service.__main__ import main


def _step(seat: int, legal: str, action: str) -> dict:
    return {"seat": seat, "legal": legal.split(), "action": action}


def _plays(cards: str) -> str:
    return " ".join("play:" + c for c in cards.split())


def klaberjass() -> dict:
    # KL-2.4, KL-2.5, KL-2.8, KL-2.9: dealer D0-2, D6-8, D13, D15, D17; elder D3-5, D9-11,
    # D14, D16, D18; turn-up D12; information card D31.
    deck = ("7H KH JH AH 9H 8H AS TS KS QS 9S 7S QH AC KD TC QD 8D 9C JS 8S TH AD JD TD 9D 7D "
            "KC QC JC 8C 7C").split()
    thrown_in = {"deck": deck, "expect": {"dealer": 1}, "steps": [
        _step(0, "take pass", "pass"), _step(1, "take pass", "pass"),
        _step(0, "name:S name:D name:C pass", "pass"), _step(1, "name:S name:D name:C pass", "pass")],
        "result": {"thrown_in": True}}
    played = {"deck": deck, "expect": {"dealer": 1}, "steps": [
        _step(0, "take pass", "pass"), _step(1, "take pass", "take"),
        _step(0, "keep", "keep"), _step(1, "exchange keep", "keep"),
        _step(0, _plays("AH 9H 8H QS 9S 7S KD QD 9C"), "play:9C"),
        _step(1, _plays("AC TC") + " exchange", "exchange"),
        _step(1, _plays("AC TC"), "play:TC"),
        _step(1, _plays("QH KH JH AS TS KS AC 8D"), "play:QH"),
        _step(0, _plays("AH 9H"), "play:AH"),
        _step(0, _plays("9H 8H QS 9S 7S KD QD"), "play:8H"),
        _step(1, _plays("KH JH"), "play:KH"),
        _step(1, _plays("JH AS TS KS AC 8D"), "play:AS"),
        _step(0, _plays("QS 9S 7S"), "play:7S"),
        _step(1, _plays("JH TS KS AC 8D"), "play:KS"),
        _step(0, _plays("QS 9S"), "play:9S"),
        _step(1, _plays("JH TS AC 8D"), "play:TS"),
        _step(0, _plays("QS"), "play:QS"),
        _step(1, _plays("JH AC 8D"), "play:8D"),
        _step(0, _plays("KD QD"), "play:KD"),
        _step(0, _plays("9H QD"), "play:QD"),
        _step(1, _plays("JH"), "play:JH"),
        _step(1, _plays("AC"), "play:AC"),
        _step(0, _plays("9H"), "play:9H")],
        "result": {"thrown_in": False, "trump": "H", "maker": 1, "melds": [0, 0], "card_points": [53, 65],
                   "bonuses": [0, 40], "scored": [53, 105]}}
    return {"schema": "card-transcript/1", "game": "klaberjass", "options": {"kl_target_score": 100},
            "first_dealer": 1, "deals": [thrown_in, played],
            "result": {"totals": [53, 105], "winners": [1], "over": True}}


def georgian_joker() -> dict:
    pack = [r + s for s in "SHDC" for r in "AKQJT9876" if r + s not in ("6S", "6C")] + ["X1", "X2"]

    def deck(top: list[str]) -> list[str]:  # GJ-3.2 / 3.3: deck[k] to seat (F + k) mod 4, then the indicator
        return top + [c for c in pack if c not in top]

    def joker_leads(j: str) -> str:
        return " ".join(f"play:{j}:{m}:{s}" for m in ("high", "low") for s in "SHDC")

    one = {"deck": deck(["X2", "AS", "KS", "6H", "X1"]), "expect": {"dealer": 3}, "steps": [
        _step(0, "bid:0 bid:1", "bid:1"), _step(1, "bid:0 bid:1", "bid:1"), _step(2, "bid:0 bid:1", "bid:0"),
        _step(3, "bid:0 bid:1", "bid:0"),
        _step(0, joker_leads("X2"), "play:X2:low:S"), _step(1, "play:AS", "play:AS"),
        _step(2, "play:KS", "play:KS"), _step(3, "play:6H", "play:6H")],
        "result": {"trump": "NT", "bids": [1, 1, 0, 0], "taken": [0, 1, 0, 0], "scores": [-100, 100, 50, 50]}}
    two = {"deck": deck(["X1", "AC", "KC", "QC", "7C", "9D", "8H", "X2", "6D"]), "expect": {"dealer": 0}, "steps": [
        _step(1, "bid:0 bid:1 bid:2", "bid:2"), _step(2, "bid:0 bid:1 bid:2", "bid:0"),
        _step(3, "bid:0 bid:1 bid:2", "bid:1"), _step(0, "bid:0 bid:1 bid:2", "bid:0"),
        _step(1, joker_leads("X1") + " play:7C", "play:X1:high:C"), _step(2, "play:AC", "play:AC"),
        _step(3, "play:KC", "play:KC"), _step(0, "play:QC play:X2:high play:X2:low", "play:X2:low"),
        _step(1, "play:7C", "play:7C"), _step(2, "play:9D", "play:9D"), _step(3, "play:8H", "play:8H"),
        _step(0, "play:QC", "play:QC")],
        "result": {"trump": "D", "bids": [0, 2, 0, 1], "taken": [0, 1, 1, 0], "scores": [50, 10, 10, -200]}}
    return {"schema": "card-transcript/1", "game": "georgian_joker", "options": {"khishti_penalty": "100_per_card"},
            "first_dealer": 3, "deals": [one, two],
            "result": {"totals": [-50, 110, 60, -150], "winners": [], "over": False}}


def jojotte() -> dict:
    # JJ-2.4, JJ-2.6: non-dealer (seat 1) D0-1, D4-5, D8-9, D13-15; dealer D2-3, D6-7, D10-11,
    # D16-18; turn-up D12.
    pack = [r + s for s in "SHDC" for r in "AKQJT987"]
    top = "AS KS 7S 7H QS AH 7D 7C KH AD 8S 8H 9H KD AC KC 8D 8C 9D".split()
    declarer = "AS KS QS AH KH AD KD AC KC".split()
    follows = [("8S", "8S"), ("9H 8H 7H 9D 8D 7D 8C 7C", "9D"), ("9H 8H 7H 8D 7D 8C 7C", "8D"),
               ("9H 8H 7H", "9H"), ("8H 7H", "8H"), ("7D", "7D"), ("7H 8C 7C", "7H"), ("8C 7C", "8C"),
               ("7C", "7C")]
    steps = [_step(1, "accept name:S name:D name:C pass", "accept"), _step(0, "no_trump double pass", "pass"),
             _step(0, "exchange:7S exchange:7H exchange:7D exchange:7C no_exchange", "exchange:7S"),
             _step(1, "no_exchange", "no_exchange"), _step(0, "nullo pass", "nullo"), _step(1, "slam:H pass", "pass")]
    for i, (legal, card) in enumerate(follows):
        steps += [_step(1, _plays(" ".join(declarer[i:])), "play:" + declarer[i]), _step(0, _plays(legal), "play:" + card)]
    return {"schema": "card-transcript/1", "game": "jojotte", "options": {}, "first_dealer": 0, "deals": [
        {"deck": top + [c for c in pack if c not in top], "expect": {"dealer": 0}, "steps": steps,
         "result": {"thrown_in": False, "contract": {"kind": "nullo", "strain": "NT", "holder": 0, "multiplier": 1},
                    "trick_points": [0, 0], "below": [0, 0], "above": [200, 0], "pot": 0}}],
        "result": {"totals": {"below": [0, 0], "above": [200, 0], "games_won": [0, 0]}, "winners": [], "over": False}}


def test_hand_written_transcripts_check_out(tmp_path, capsys):
    paths = []
    for name, data in (("klaberjass", klaberjass()), ("georgian_joker", georgian_joker()), ("jojotte", jojotte())):
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps(data, indent=1))
        paths.append(path)
    assert main(["replay", "--check", *map(str, paths)]) == 0
    assert capsys.readouterr().out == "".join(f"{p}: ok\n" for p in paths)


def test_a_hand_written_score_off_by_the_kqj_bonus_is_refused(tmp_path, capsys):
    """Without the in-play exchange counted at the dealer's first card the bonus would be 20,
    not 40: the transcript claiming that is refused at the deal's result."""
    data = klaberjass()
    data["deals"][1]["result"]["bonuses"] = [0, 20]
    path = tmp_path / "kl.json"
    path.write_text(json.dumps(data))
    assert main(["replay", "--check", str(path)]) == 1
    assert capsys.readouterr().out == (f"{path}: deal 1 result: result.bonuses differs: expected [0, 20], "
                                       "actual [0, 40]\n")


def test_an_output_that_cannot_be_written_is_one_line_not_a_traceback(tmp_path):
    """``replay ... > FILE`` on a full disk (/dev/full here) was an OSError traceback, and
    ``replay ... | head`` a BrokenPipeError one: one line on stderr (exit status 1), and a
    reader that left ends the command quietly, exit status 1: the files after it were not
    checked (engine_service.command_line.stdout_guarded)."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    path = tmp_path / "kl.json"
    path.write_text(json.dumps(klaberjass()))
    argv = [sys.executable, "-m", "engine_service", "replay", str(path), str(path)]
    root = Path(__file__).resolve().parents[2]
    env = dict(os.environ, PYTHONPATH=str(root))
    env.pop("PYTHONUNBUFFERED", None)  # buffered, as from a shell: the output fails at its flush
    with open("/dev/full", "w") as full:
        result = subprocess.run(argv, stdout=full, stderr=subprocess.PIPE, text=True, timeout=120, cwd=root, env=env)
    assert (result.returncode, result.stderr) == (1, "error: cannot write standard output (No space left on "
                                                      "device)\n"), result.stderr
    read, write = os.pipe()
    os.close(read)  # the reader left before the first line
    try:
        result = subprocess.run(argv, stdout=write, stderr=subprocess.PIPE, text=True, timeout=120, cwd=root,
                                env=env)
    finally:
        os.close(write)
    assert (result.returncode, result.stderr) == (1, ""), result.stderr


def test_show_prints_the_match_result_of_each_file_that_checks_out(tmp_path, capsys):
    """``replay --show``: after a file's ``ok``, the match result the replay reached, as one
    JSON object (the transcript's own "result"); a file that differs shows no result."""
    good, bad = tmp_path / "kl.json", tmp_path / "off.json"
    data = klaberjass()
    good.write_text(json.dumps(data))
    data["deals"][1]["result"]["bonuses"] = [0, 20]
    bad.write_text(json.dumps(data))
    assert main(["replay", "--show", str(good), str(bad)]) == 1
    shown, differs = capsys.readouterr().out.splitlines()
    assert shown.startswith(f"{good}: ok {{")
    assert json.loads(shown.removeprefix(f"{good}: ok ")) == klaberjass()["result"]
    assert differs == f"{bad}: deal 1 result: result.bonuses differs: expected [0, 20], actual [0, 40]"


def test_a_file_whose_name_is_not_utf8_is_named_with_its_byte_escaped(tmp_path, capsys):
    """A path may hold any bytes: ``replay`` printed such a name as a lone surrogate, which a
    UTF-8 locale's stdout refuses, a UnicodeEncodeError traceback once the file was checked
    (command_line.printable): the byte is shown as ``\\xff``, on an ok line and an error's."""
    good, missing = tmp_path / "kl\udcff.json", tmp_path / "gone\udcff.json"
    good.write_text(json.dumps(klaberjass()))
    assert main(["replay", "--check", str(good), str(missing)]) == 1
    out = capsys.readouterr().out
    assert out.startswith(f"{tmp_path}/kl\\xff.json: ok\n{tmp_path}/gone\\xff.json: error: ")
    out.encode("utf-8")  # nothing a UTF-8 standard output refuses


def test_replay_without_a_file_is_a_usage_error(capsys):
    """``python -m engine_service replay [--check] FILE...`` (replay_cli docstring): at least one
    file; none is argparse's usage error (status 2) naming FILE, not a quiet ``0`` that checked
    nothing."""
    with pytest.raises(SystemExit) as exit_:
        main(["replay", "--check"])
    assert exit_.value.code == 2
    assert "the following arguments are required: FILE" in capsys.readouterr().err
