"""Every sample transcript (shared/rules/transcripts/*.json) checks out, and each changed in
ways NOTATION.md says are wrong is refused by ``python -m engine_service replay --check``
with exit status 1 and a line naming the place: a wrong legal set, action, seat, dealer, deck,
deal or match result, a value of the wrong JSON type (``"over": 0``, ``"thrown_in": 0``: the
booleans of NOTATION.md sections 3 and 4), a deck card that is not a card code, an unknown
game or option, a wrong schema, or text that is not JSON.

The replay command runs in this process (``engine_service.__main__.main``), one sample and
one change at a time, so that the output is the command's own.
"""

from __future__ import annotations

import copy
import json
import os
from pathlib import Path
from typing import Any, Callable

import pytest

from engine_service.__main__ import main
from engine_service.rules import transcript
from tests.shared_paths import shared_dir

SAMPLES = sorted((shared_dir() / "rules" / "transcripts").glob("*.json"))


def _players(data: dict[str, Any]) -> int:
    return 4 if data["game"] == "georgian_joker" else 2


def _bump_first_list(value: Any) -> Any:
    """A result value changed by one point (the first number found, depth first)."""
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return value + 1
    if isinstance(value, list):
        return [_bump_first_list(value[0])] + value[1:]
    if isinstance(value, dict):
        key = next(iter(value))
        return {**value, key: _bump_first_list(value[key])}
    return value + "x"


def _last_played(data: dict[str, Any]) -> dict[str, Any]:
    return next(d for d in reversed(data["deals"]) if "result" in d)


def _swap_cards(data: dict[str, Any]) -> None:
    deck = data["deals"][0]["deck"]
    deck[0], deck[-1] = deck[-1], deck[0]


def _contract_holder_as_a_boolean(data: dict[str, Any]) -> None:
    contract = next(d["result"]["contract"] for d in data["deals"] if "contract" in d.get("result", {}))
    contract["holder"] = contract["holder"] == 1


def _another_trump(data: dict[str, Any]) -> None:
    """NOTATION.md section 4: deal 0's trump (Jo-Jotte: its contract's strain) named as another
    suit, a text value of the result that differs from the engine's."""
    result = data["deals"][0]["result"]
    where = result["contract"] if "contract" in result else result
    key = "strain" if "contract" in result else "trump"
    where[key] = "C" if where[key] != "C" else "D"


def _first_bool_in_deal_results(data: dict[str, Any]) -> None:
    deal = next(d for d in data["deals"] if "thrown_in" in d.get("result", {}))
    deal["result"]["thrown_in"] = int(deal["result"]["thrown_in"])


#: name -> (change made to a copy of the sample, text the report must contain)
MUTATIONS: dict[str, tuple[Callable[[dict[str, Any]], Any], str]] = {
    "legal set missing an action": (
        lambda d: d["deals"][0]["steps"][0].__setitem__("legal", d["deals"][0]["steps"][0]["legal"] + ["pass:x"]),
        "deal 0 step 0: legal differs"),
    "legal set in upper case": (
        lambda d: d["deals"][0]["steps"][1].__setitem__("legal", [a.upper() for a in d["deals"][0]["steps"][1]["legal"]]),
        "deal 0 step 1: legal differs"),
    "action not in the notation": (
        lambda d: d["deals"][0]["steps"][0].__setitem__("action", d["deals"][0]["steps"][0]["action"] + " "),
        "deal 0 step 0: action differs"),
    "wrong seat": (
        lambda d: d["deals"][0]["steps"][0].__setitem__("seat", (d["deals"][0]["steps"][0]["seat"] + 1) % _players(d)),
        "deal 0 step 0: seat differs"),
    "two cards swapped in the deck": (_swap_cards, "deal 0"),
    "a card twice in the deck": (
        lambda d: d["deals"][0]["deck"].__setitem__(1, d["deals"][0]["deck"][0]),
        "deal 0: deck differs"),
    "a deck card that is a number": (
        lambda d: d["deals"][0]["deck"].__setitem__(0, 5),
        "error: deal 0: deck card 0 must be a card code string, got 5"),
    # the engine's reason is the actual value (NOTATION.md section 3: "with both values")
    "a card twice in the deck, the engine's side": (
        lambda d: d["deals"][0]["deck"].__setitem__(1, d["deals"][0]["deck"][0]),
        'deal 0: deck differs: expected "a valid deck", actual "'),
    "wrong dealer": (
        lambda d: d["deals"][0]["expect"].__setitem__("dealer", (d["deals"][0]["expect"]["dealer"] + 1) % _players(d)),
        "deal 0: expect.dealer differs"),
    "dealer as a boolean": (
        lambda d: d["deals"][0]["expect"].__setitem__("dealer", d["deals"][0]["expect"]["dealer"] == 1),
        "deal 0: expect.dealer differs"),
    "wrong deal result": (
        lambda d: _last_played(d).__setitem__("result", {
            k: (_bump_first_list(v) if k == list(_last_played(d)["result"])[-1] else v)
            for k, v in _last_played(d)["result"].items()}),
        " result: result."),
    "another trump in a deal result": (_another_trump, "deal 0 result: result."),
    "deal result with an extra key": (
        lambda d: d["deals"][0]["result"].__setitem__("extra", 0), "deal 0 result: result.extra differs"),
    # the module's "key by key, an extra key included", the other way: a key the engine
    # reports and the transcript does not list
    "deal result without its last key": (
        lambda d: d["deals"][0]["result"].pop(list(d["deals"][0]["result"])[-1]),
        "deal 0 result: result."),
    "thrown_in as a number": (_first_bool_in_deal_results, "result.thrown_in differs"),
    # NOTATION.md section 4: a Jo-Jotte contract's holder is a seat, an object compared key by key
    "contract holder as a boolean": (_contract_holder_as_a_boolean, " result: result.contract differs"),
    "wrong totals": (
        lambda d: d["result"].__setitem__("totals", _bump_first_list(d["result"]["totals"])),
        "match result: result.totals differs"),
    "wrong winners": (lambda d: d["result"].__setitem__("winners", [0]), "match result: result.winners differs"),
    "over true while the match goes on": (
        lambda d: d["result"].__setitem__("over", True), "match result: result.over differs"),
    "over as the number 0": (
        lambda d: d["result"].__setitem__("over", 0), "match result: result.over differs"),
    # an empty object is a result all the same (NOTATION.md section 3: totals, winners, over)
    "an empty match result": (lambda d: d.__setitem__("result", {}), "match result: result.totals differs"),
    "a step after the deal's end": (
        lambda d: d["deals"][-1]["steps"].append(copy.deepcopy(d["deals"][-1]["steps"][-1])),
        "seat differs"),
    # NOTATION.md section 3: a deal whose steps stop before its end has no result
    "the last step of a deal with a result dropped": (
        lambda d: d["deals"][0]["steps"].pop(),
        'deal 0 result: result differs'),
    # NOTATION.md section 3: "A replay tool reports the first step or result that differs,
    # with both values": the engine's side of a result it has not reached, or did reach
    "the last step of a deal with a result dropped, the engine's side": (
        lambda d: d["deals"][0]["steps"].pop(),
        ', actual "deal not finished"\n'),
    "a deal's result dropped before the next deal, the engine's side": (
        lambda d: d["deals"][0].pop("result"),
        'deal 0 result: result differs: expected null, actual {"'),
    # an empty object is a deal result all the same, not an absent one (NOTATION.md section 4)
    "an empty deal result": (lambda d: d["deals"][0].__setitem__("result", {}), "deal 0 result: result."),
    "a step after a deal's end, before the next deal": (
        lambda d: d["deals"][0]["steps"].append(copy.deepcopy(d["deals"][0]["steps"][-1])),
        ', actual "deal over"'),
    "a deal cut short, without its result, before the next deal": (
        lambda d: (d["deals"][0]["steps"].pop(), d["deals"][0].pop("result")),
        'deal 1: deal differs: expected "a new deal", actual "seat '),
    "a deal's result dropped before the next deal": (
        lambda d: d["deals"][0].pop("result"),
        "deal 0 result: result differs"),
    "unknown game": (lambda d: d.__setitem__("game", "klaberjas"), "setup differs"),
    "unknown option": (lambda d: d.__setitem__("options", {"no_such_option": 1}), "unknown option 'no_such_option'"),
    "wrong schema": (lambda d: d.__setitem__("schema", "card-transcript/2"), "error: schema must be"),
    "a legal set that is one string": (
        lambda d: d["deals"][0]["steps"][0].__setitem__("legal", " ".join(d["deals"][0]["steps"][0]["legal"])),
        "error: deal 0 step 0: 'legal' must be a list of action strings"),
    "a deal result that is a list": (
        lambda d: d["deals"][0].__setitem__("result", list(d["deals"][0].get("result", {}).values())),
        "error: deal 0: 'result' must be an object"),
}


#: mutations that only some samples can carry: name -> does this sample have what it changes?
APPLIES: dict[str, Callable[[dict[str, Any]], bool]] = {
    "dealer as a boolean": lambda d: d["deals"][0]["expect"]["dealer"] in (0, 1),
    "thrown_in as a number": lambda d: any("thrown_in" in x.get("result", {}) for x in d["deals"]),
    "contract holder as a boolean": lambda d: any("contract" in x.get("result", {}) for x in d["deals"]),
    "the last step of a deal with a result dropped": lambda d: "result" in d["deals"][0],
    "a step after a deal's end, before the next deal": lambda d: len(d["deals"]) > 1,
    "a deal cut short, without its result, before the next deal": lambda d: len(d["deals"]) > 1,
    "a deal's result dropped before the next deal": lambda d: len(d["deals"]) > 1,
    "the last step of a deal with a result dropped, the engine's side": lambda d: "result" in d["deals"][0],
    "a deal's result dropped before the next deal, the engine's side": lambda d: len(d["deals"]) > 1,
    "an empty deal result": lambda d: "result" in d["deals"][0],
}

CASES = [pytest.param(sample, name, id=f"{sample.name}-{name}")
         for sample in SAMPLES for name in MUTATIONS
         if APPLIES.get(name, lambda d: True)(json.loads(sample.read_text()))]


def _replay(path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    status = main(["replay", "--check", str(path)])
    return status, capsys.readouterr().out


@pytest.mark.parametrize("sample", SAMPLES, ids=lambda p: p.name)
def test_every_sample_checks_out(sample, capsys):
    assert _replay(sample, capsys) == (0, f"{sample}: ok\n")


@pytest.mark.parametrize(("sample", "name"), CASES)
def test_a_changed_sample_is_refused_at_its_place(sample, name, tmp_path, capsys):
    change, where = MUTATIONS[name]
    data = json.loads(sample.read_text())
    change(data)
    bad = tmp_path / sample.name
    bad.write_text(json.dumps(data))
    status, out = _replay(bad, capsys)
    assert status == 1, out
    assert out.startswith(f"{bad}: ") and out.count("\n") == 1, out
    assert where in out, out


def test_text_that_is_not_json_is_refused(tmp_path, capsys):
    bad = tmp_path / "garbage.json"
    bad.write_text('{"schema": "card-transcript/1", "game": ')
    status, out = _replay(bad, capsys)
    assert status == 1 and out.startswith(f"{bad}: error: not valid JSON"), out


def test_json_values_compare_by_json_type():
    """true/false are not 1/0; 1 and 1.0 are the same JSON number; objects key by key."""
    assert not transcript.same_json(0, False) and not transcript.same_json(True, 1)
    assert not transcript.same_json([1, 0], [True, False])
    assert transcript.same_json([1.0, 2], (1, 2)) and transcript.same_json({"a": [True]}, {"a": [True]})
    assert not transcript.same_json({"a": 1}, {"a": 1, "b": 2}) and not transcript.same_json("1", 1)
    assert not transcript.same_json(None, 0) and transcript.same_json(None, None)
    # inside an object (a Jo-Jotte contract, NOTATION.md section 4) as well; and a value of
    # another kind is no match, however Python would compare it: an array is not its item, an
    # object not an array of its names
    assert not transcript.same_json({"holder": False}, {"holder": 0})
    assert not transcript.same_json(["1"], "1") and not transcript.same_json([1], 1)
    assert not transcript.same_json({"a": 1}, ["a"]) and not transcript.same_json("a", {"a": 1})
    # strings of the same type compare by value: a trump "H" is not "S" (NOTATION.md section 4)
    assert not transcript.same_json("H", "S") and not transcript.same_json({"strain": "H"}, {"strain": "NT"})
    assert transcript.same_json("NT", "NT")


def test_json_nested_too_deeply_is_refused_and_the_next_file_still_checked(tmp_path, capsys):
    """A file of arrays nested past the JSON parser's recursion limit is one error line, not
    a traceback that ends the command before the files after it are checked."""
    bad = tmp_path / "deep.json"
    bad.write_text("[" * 100_000 + "]" * 100_000)
    status = main(["replay", "--check", str(bad), str(SAMPLES[0])])
    out = capsys.readouterr().out
    assert status == 1
    assert out == (f"{bad}: error: not valid JSON: arrays or objects nested too deeply\n"
                   f"{SAMPLES[0]}: ok\n")


def test_nan_and_infinity_are_not_json(tmp_path, capsys):
    """Python's json module reads NaN and Infinity; JSON has neither, so a transcript holding
    one is refused as not JSON (NOTATION.md section 3: one JSON object)."""
    data = json.loads(SAMPLES[0].read_text())
    text = json.dumps(data).replace('"totals": [', '"totals": [NaN, ', 1)
    bad = tmp_path / "nan.json"
    bad.write_text(text)
    status, out = _replay(bad, capsys)
    assert status == 1 and out == f"{bad}: error: not valid JSON: NaN is not a JSON value\n", out
    bad.write_text(json.dumps(data).replace('"first_dealer": ', '"first_dealer": -Infinity, "x": ', 1))
    status, out = _replay(bad, capsys)
    assert status == 1 and out == f"{bad}: error: not valid JSON: -Infinity is not a JSON value\n", out


def _checks_out(data: dict[str, Any]) -> bool:
    diff, _ = transcript.check(transcript.loads(json.dumps(data)))
    return diff is None


@pytest.mark.parametrize("sample", SAMPLES[:1] + SAMPLES[-1:], ids=lambda p: p.name)
def test_the_documented_readings_of_what_notation_leaves_open(sample):
    """docs/rules.md, "Transcripts": what the checker accepts where NOTATION.md is silent."""
    data = json.loads(sample.read_text())
    lenient: list[Callable[[dict[str, Any]], Any]] = [
        lambda d: d["deals"][0]["steps"][0]["legal"].append(d["deals"][0]["steps"][0]["legal"][0]),
        lambda d: [(s.pop("seat"), s.pop("legal")) for s in d["deals"][0]["steps"]],
        lambda d: d["deals"][0].pop("expect"),
        lambda d: d.__setitem__("options", None),
        lambda d: d.pop("options"),
        lambda d: d.pop("result"),
        lambda d: d["deals"][-1].pop("result") if "result" in d["deals"][-1] else None,
        lambda d: d.__setitem__("comment", "not a NOTATION.md key"),
        lambda d: d["result"].__setitem__("winners", list(d["result"]["winners"])),
        lambda d: d["deals"][0]["expect"].__setitem__("dealer", float(d["deals"][0]["expect"]["dealer"])),
        # JSON has one number type: 1.0 is the seat 1, 500.0 the integer option value 500
        lambda d: d.__setitem__("first_dealer", float(d["first_dealer"])),
        lambda d: d["deals"][0]["steps"][0].__setitem__("seat", float(d["deals"][0]["steps"][0]["seat"])),
        lambda d: d.__setitem__("options", {"kl_target_score": 500.0} if d["game"] == "klaberjass"
                                else {"turn_time_s": 30.0}),
    ]
    for change in lenient:
        changed = copy.deepcopy(data)
        change(changed)
        assert _checks_out(changed), change
    options = copy.deepcopy(data)
    options["options"] = {"kl_first_deal_packet": "2"} if data["game"] == "klaberjass" else {"khishti_penalty": 500}
    assert not _checks_out(options)
    options["options"] = {"kl_target_score": 500.5} if data["game"] == "klaberjass" else {"turn_time_s": 30.5}
    assert not _checks_out(options)


def test_an_object_repeating_a_name_is_refused(tmp_path, capsys):
    """RFC 8259 leaves an object with a repeated name unpredictable; Python's json module kept
    the last value, so a step ``{"action": "take", "action": "pass"}`` replayed ``pass`` and
    the file checked out. It is refused, naming the name."""
    text = SAMPLES[0].read_text()
    data = json.loads(text)
    first = data["deals"][0]["steps"][0]["action"]
    other = next(a for a in data["deals"][0]["steps"][0]["legal"] if a != first)
    bad = tmp_path / "twice.json"
    bad.write_text(json.dumps(data).replace(f'"action": "{first}"', f'"action": "{other}", "action": "{first}"', 1))
    status, out = _replay(bad, capsys)
    assert status == 1
    assert out == f'{bad}: error: not valid JSON: the name "action" appears twice in one object\n', out


def test_a_device_or_a_file_past_the_limit_is_refused_and_the_next_file_still_checked(tmp_path, capsys):
    """The file was read to its end: ``replay /dev/zero`` (or a huge file given by mistake)
    grew the process until memory ran out. A device is refused before it is read, a file past
    TRANSCRIPT_LIMIT once that much has been read; a pipe (``<(gunzip -c FILE)``) is still
    read, up to the limit."""
    from engine_service.bounded_read import TRANSCRIPT_LIMIT

    huge = tmp_path / "huge.json"
    with open(huge, "wb") as f:  # sparse: no disk written
        f.truncate(TRANSCRIPT_LIMIT + 1)
    status = main(["replay", "--check", "/dev/null", str(huge), str(SAMPLES[0])])
    assert status == 1
    assert capsys.readouterr().out == ("/dev/null: error: /dev/null: a device, not a regular file\n"
                                       f"{huge}: error: {huge}: larger than 64 MiB\n"
                                       f"{SAMPLES[0]}: ok\n")
    read, write = os.pipe()
    os.write(write, SAMPLES[0].read_bytes())
    os.close(write)
    try:
        assert main(["replay", "--check", f"/dev/fd/{read}"]) == 0
    finally:
        os.close(read)
    assert capsys.readouterr().out == f"/dev/fd/{read}: ok\n"


def test_winners_compare_as_seat_numbers_not_truth_values():
    """NOTATION section 3: ``winners`` is a set of seats, compared as a set (any order) but of
    numbers: a finished match whose transcript lists its winner as ``true`` / ``false``
    (equal to 1 / 0 in Python), or twice, does not check out."""
    from engine_service.rules import get_game

    from .playout import random_match

    state = random_match(get_game("klaberjass"), 7)
    data = transcript.export(state)
    assert transcript.check(data)[0] is None and data["result"]["winners"] in ([0], [1])
    winners = data["result"]["winners"]
    data["result"]["winners"] = [w == 1 for w in winners]
    diff, _ = transcript.check(data)
    assert diff is not None and (diff.where, diff.what) == ("match result", "result.winners")
    # a set names each seat once: the winner listed twice is not the engine's one winner
    data["result"]["winners"] = winners * 2
    diff, _ = transcript.check(data)
    assert diff is not None and (diff.where, diff.what) == ("match result", "result.winners")


def _put(data: Any, path: tuple[Any, ...], value: Any) -> Any:
    """``data`` with the item at ``path`` set to ``value`` (changed in place and returned)."""
    node = data
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    return data


#: a transcript of the wrong shape (NOTATION.md section 3 fixes it): name -> (the changed
#: transcript, the error the replay command prints for it)
SHAPES: dict[str, tuple[Callable[[dict[str, Any]], Any], str]] = {
    "an array, not an object": (lambda d: [d], "a transcript is a JSON object"),
    "no game": (lambda d: {k: v for k, v in d.items() if k != "game"}, "missing 'game'"),
    "a game that is a number": (lambda d: _put(d, ("game",), 1), "missing 'game'"),
    "options an array": (lambda d: _put(d, ("options",), []), "'options' must be an object"),
    "first_dealer true": (lambda d: _put(d, ("first_dealer",), True), "'first_dealer' must be a seat number"),
    "first_dealer a string": (lambda d: _put(d, ("first_dealer",), "1"), "'first_dealer' must be a seat number"),
    "first_dealer not whole": (lambda d: _put(d, ("first_dealer",), 0.5), "'first_dealer' must be a seat number"),
    "first_dealer absent": (lambda d: {k: v for k, v in d.items() if k != "first_dealer"},
                            "'first_dealer' must be a seat number"),
    "deals an object": (lambda d: _put(d, ("deals",), {}), "'deals' must be a list"),
    "a deal that is an array": (lambda d: _put(d, ("deals", 0), []), "deal 0 must be an object"),
    "a deck that is one string": (lambda d: _put(d, ("deals", 0, "deck"), " ".join(d["deals"][0]["deck"])),
                                  "deal 0: 'deck' must be a list of cards"),
    "steps an object": (lambda d: _put(d, ("deals", 0, "steps"), {}), "deal 0: 'steps' must be a list"),
    # NOTATION.md section 3: each deal has its steps (docs/rules.md: not among the optional keys)
    "a deal without steps": (lambda d: _put(d, ("deals", 0), {k: v for k, v in d["deals"][0].items() if k != "steps"}),
                             "deal 0: 'steps' must be a list"),
    "a step without an action": (lambda d: _put(d, ("deals", 0, "steps", 0), {"seat": 1}),
                                 "deal 0 step 0: a step is an object with an 'action' string"),
    "a step's seat true": (lambda d: _put(d, ("deals", 0, "steps", 0, "seat"), True),
                           "deal 0 step 0: 'seat' must be a seat number"),
    "expect an array": (lambda d: _put(d, ("deals", 0, "expect"), []), "deal 0: 'expect' must be an object"),
    "the match result an array": (lambda d: _put(d, ("result",), []), "'result' must be an object"),
    "a legal action that is a number": (lambda d: _put(d, ("deals", 0, "steps", 0, "legal"),
                                                     d["deals"][0]["steps"][0]["legal"] + [5]),
                                        "deal 0 step 0: 'legal' must be a list of action strings"),
}


@pytest.mark.parametrize("name", SHAPES)
def test_a_transcript_of_the_wrong_shape_is_refused_naming_the_field(name, tmp_path, capsys):
    """NOTATION.md section 3 fixes the transcript's shape: one JSON object whose ``options``,
    deal, step, ``expect`` and ``result`` are objects, ``deals``, ``deck`` and ``steps`` lists,
    ``first_dealer`` and a step's ``seat`` seat numbers (not ``true``: Python's ``True == 1``
    would act for seat 1), a step's ``action`` a string. Each is an error line naming the field,
    not a traceback, nor a file that checks out (``"options": []`` read as the defaults,
    ``"expect": []`` as no check, ``"steps": {}`` as no steps)."""
    change, message = SHAPES[name]
    bad = tmp_path / "shape.json"
    bad.write_text(json.dumps(change(json.loads(SAMPLES[0].read_text()))))
    assert _replay(bad, capsys) == (1, f"{bad}: error: {message}\n")


def test_replay_raises_naming_the_first_difference():
    """``transcript.replay`` (the library form of ``replay --check``, NOTATION.md section 3)
    returns the state a transcript that checks out reaches, and raises TranscriptError naming
    the first difference of one that does not: it is no quiet replay of a wrong file."""
    from engine_service.rules.errors import TranscriptError

    data = transcript.loads(SAMPLES[0].read_text())
    assert transcript.replay(data).result() == data["result"]
    step = data["deals"][0]["steps"][0]
    step["seat"] = (step["seat"] + 1) % _players(data)
    with pytest.raises(TranscriptError) as info:
        transcript.replay(data)
    assert str(info.value).startswith("deal 0 step 0: seat differs")


def test_a_missing_or_an_extra_result_key_reports_both_values():
    """NOTATION.md section 3: the replay reports the first result that differs "with both
    values". A key the transcript lists and the engine does not report is expected with its
    value, actual ``null``; a key the engine reports and the transcript leaves out is expected
    ``null``, actual the engine's value."""
    data = transcript.loads(SAMPLES[0].read_text())
    engine = copy.deepcopy(data["deals"][0]["result"])
    last = list(engine)[-1]
    extra = copy.deepcopy(data)
    extra["deals"][0]["result"]["extra"] = [1, 2]
    diff, _ = transcript.check(extra)
    assert diff == transcript.Difference("deal 0 result", "result.extra", [1, 2], None)
    assert str(diff) == "deal 0 result: result.extra differs: expected [1, 2], actual null"
    missing = copy.deepcopy(data)
    del missing["deals"][0]["result"][last]
    diff, _ = transcript.check(missing)
    assert diff == transcript.Difference("deal 0 result", f"result.{last}", None, engine[last])


def test_an_export_names_each_deals_dealer_and_its_legal_sets_on_request():
    """``transcript.export`` writes what NOTATION.md section 3 lets a transcript say: each
    deal's ``expect.dealer`` (docs/operations.md compares boards by ``deals[i].expect.dealer``;
    GJ-2.3: the deal passes to the left, so the dealer of deal i is first_dealer + i), every
    step's seat and legal set, and with ``with_legal=False`` the steps without their legal sets
    (then only the action is replayed); both check out."""
    from engine_service.rules import get_game

    from .playout import random_match

    state = random_match(get_game("georgian_joker"), 3)
    data = transcript.export(state)
    first = data["first_dealer"]
    assert [d["expect"] for d in data["deals"]] == [{"dealer": (first + i) % 4} for i in range(len(data["deals"]))]
    assert all(set(s) == {"seat", "legal", "action"} and s["action"] in s["legal"]
               for d in data["deals"] for s in d["steps"])
    assert transcript.check(data)[0] is None
    short = transcript.export(state, with_legal=False)
    assert all(set(s) == {"seat", "action"} for d in short["deals"] for s in d["steps"])
    for deal in data["deals"]:
        for step in deal["steps"]:
            del step["legal"]
    assert short == data and transcript.check(short)[0] is None


def test_a_number_past_the_float_range_is_an_error_line_not_a_traceback(tmp_path, capsys):
    """``1e400`` is JSON (RFC 8259 section 6) that Python reads as infinity, which is no whole
    number: as ``first_dealer`` it is refused as no seat number (docs/rules.md: a number that is
    not an integer is refused), in a result it is a value that differs; never a traceback."""
    data = json.loads(SAMPLES[0].read_text())
    bad = tmp_path / "huge_number.json"
    bad.write_text(json.dumps(data).replace('"first_dealer": ', '"first_dealer": 1e400, "x": ', 1))
    assert _replay(bad, capsys) == (1, f"{bad}: error: 'first_dealer' must be a seat number\n")
    bad.write_text(json.dumps(data).replace('"totals": [', '"totals": [1e400, ', 1))
    status, out = _replay(bad, capsys)
    assert status == 1 and out.startswith(f"{bad}: match result: result.totals differs: expected [Infinity, "), out


def test_a_difference_gives_the_transcripts_value_the_engines_and_the_state_reached():
    """``transcript.check`` returns the first difference, expected (the transcript's) and
    actual (the engine's) values in that order (NOTATION.md section 3), and the state reached
    there: at a wrong seat or legal set, the state before that step; at a deal given where the
    deal goes on, the state inside the unfinished deal."""
    data = transcript.loads(SAMPLES[-1].read_text())
    step = data["deals"][0]["steps"][2]
    seat = step["seat"]
    wrong = copy.deepcopy(data)
    wrong["deals"][0]["steps"][2]["seat"] = 1 - seat
    diff, state = transcript.check(wrong)
    assert diff == transcript.Difference("deal 0 step 2", "seat", 1 - seat, seat)
    assert state is not None and state.to_act() == seat
    wrong = copy.deepcopy(data)
    wrong["deals"][0]["steps"][2]["legal"] = step["legal"][1:]
    diff, state = transcript.check(wrong)
    assert diff is not None and (diff.what, diff.expected) == ("legal", step["legal"][1:])
    assert state is not None and state.to_act() == seat and sorted(state.legal_actions()) == sorted(step["legal"])
    wrong = copy.deepcopy(data)
    wrong["deals"][0]["steps"].pop()
    del wrong["deals"][0]["result"]
    wrong["deals"].append(copy.deepcopy(data["deals"][0]))
    diff, state = transcript.check(wrong)
    assert diff is not None and (diff.where, diff.what) == ("deal 1", "deal")
    assert diff.actual == f"seat {state.to_act()} to act" and state.deal_results() == []
