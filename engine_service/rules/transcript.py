"""Match transcripts, ``card-transcript/1`` (NOTATION.md section 3): load, replay, check, export.

A transcript is a replay file and a conformance test at once: the decks that were dealt, every
decision with the full legal set at that moment, and what the engine must report after each
deal and at the end. :func:`check` replays one through the engine and reports the **first**
difference (step or result, with expected and actual values); :func:`export` writes any match
state, finished or not, as a transcript that checks out. What is a set is compared as a set
(a step's legal actions, the match's winners); everything else exactly, key by key, an extra
key included.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from ..bounded_read import TRANSCRIPT_LIMIT, UnreadableFile, read_named
from .cards import card_code
from .errors import RulesError, TranscriptError
from .game import CHANCE, TERMINAL, State
from .registry import get_game

SCHEMA = "card-transcript/1"


@dataclass(frozen=True)
class Difference:
    """The first place where the engine disagrees with a transcript."""

    where: str  # "deal 2 step 14", "deal 2 result", "deal 2", "match result" or "transcript";
    # deals and steps counted from 0, as their indices in the file (docs/rules.md)
    what: str  # "legal", "action", "seat", "result.scored", ...
    expected: Any
    actual: Any

    def __str__(self) -> str:
        return (f"{self.where}: {self.what} differs: expected {json.dumps(self.expected)}, "
                f"actual {json.dumps(self.actual)}")


# ---- loading -----------------------------------------------------------------------------

def _no_constant(name: str) -> Any:
    """Python's json module reads ``NaN``, ``Infinity`` and ``-Infinity``, which JSON (RFC
    8259) does not have: a transcript holding one is not JSON."""
    raise ValueError(f"{name} is not a JSON value")


def _number(text: str) -> int | float:
    """A JSON number written with a fraction or an exponent (``500.0``, ``5e2``). JSON has one
    number type (docs/rules.md), and results already compare by value, yet ``"first_dealer":
    1.0`` or ``"kl_target_score": 500.0`` were refused as not integers: a whole value is read as
    that integer; any other stays a float (and is refused where an integer is needed)."""
    value = float(text)
    return int(value) if math.isfinite(value) and value.is_integer() else value


def _unique_names(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """An object whose names are unique. RFC 8259 leaves an object with a repeated name
    unpredictable (section 4), and Python's json module silently keeps the last value: a step
    ``{"action": "take", "action": "pass"}`` replayed ``pass`` and checked out, whatever the
    writer meant. A transcript is a conformance test, so such an object is refused."""
    obj: dict[str, Any] = {}
    for name, value in pairs:
        if name in obj:
            raise ValueError(f"the name {json.dumps(name)} appears twice in one object")
        obj[name] = value
    return obj


def loads(text: str | bytes) -> dict[str, Any]:
    """Parse and structurally validate a transcript; TranscriptError naming the problem."""
    try:
        data = json.loads(text, parse_constant=_no_constant, parse_float=_number,
                          object_pairs_hook=_unique_names)
    except (ValueError, UnicodeDecodeError) as exc:
        raise TranscriptError(f"not valid JSON: {exc}") from None
    except RecursionError:
        # arrays or objects nested past the parser's recursion limit (about 1,000 levels): a
        # transcript is 5 levels deep; without this the replay command died with a traceback
        # and checked none of the files after it
        raise TranscriptError("not valid JSON: arrays or objects nested too deeply") from None
    return validate(data)


def load(path: str | Path) -> dict[str, Any]:
    """A transcript file, read up to :data:`TRANSCRIPT_LIMIT` (an endless or huge file given
    by mistake is refused, not read until memory runs out)."""
    try:
        raw = read_named(path, TRANSCRIPT_LIMIT)
    except UnreadableFile as exc:
        raise TranscriptError(str(exc)) from None
    return loads(raw)


def _require(cond: bool, msg: str) -> None:
    if not cond:
        raise TranscriptError(msg)


def validate(data: Any) -> dict[str, Any]:
    """Check the shape of a transcript object (not its content against the rules)."""
    _require(isinstance(data, dict), "a transcript is a JSON object")
    _require(data.get("schema") == SCHEMA, f"schema must be {SCHEMA!r}, got {data.get('schema')!r}")
    _require(isinstance(data.get("game"), str), "missing 'game'")
    opts = data.get("options", {})
    _require(opts is None or isinstance(opts, dict), "'options' must be an object")
    fd = data.get("first_dealer")
    _require(isinstance(fd, int) and not isinstance(fd, bool), "'first_dealer' must be a seat number")
    deals = data.get("deals")
    _require(isinstance(deals, list), "'deals' must be a list")
    for i, deal in enumerate(deals):
        _require(isinstance(deal, dict), f"deal {i} must be an object")
        _require(isinstance(deal.get("deck"), list), f"deal {i}: 'deck' must be a list of cards")
        for k, card in enumerate(deal["deck"]):
            # NOTATION.md section 3: the deck is card codes ("AS", "X1"); the engine also deals
            # internal card ids, so a number here would be dealt as some card, not refused
            _require(isinstance(card, str),
                     f"deal {i}: deck card {k} must be a card code string, got {json.dumps(card)}")
        # NOTATION.md section 3: each deal has "the steps taken in it" (``[]``: none yet); a
        # deal without the key (a misspelt "step") was replayed as a deal with no steps
        steps = deal.get("steps")
        _require(isinstance(steps, list), f"deal {i}: 'steps' must be a list")
        for j, st in enumerate(steps):
            _require(isinstance(st, dict) and isinstance(st.get("action"), str),
                     f"deal {i} step {j}: a step is an object with an 'action' string")
            _require("seat" not in st or (isinstance(st["seat"], int) and not isinstance(st["seat"], bool)),
                     f"deal {i} step {j}: 'seat' must be a seat number")
            _require("legal" not in st or (isinstance(st["legal"], list)
                                           and all(isinstance(a, str) for a in st["legal"])),
                     f"deal {i} step {j}: 'legal' must be a list of action strings")
        _require("expect" not in deal or isinstance(deal["expect"], dict), f"deal {i}: 'expect' must be an object")
        _require("result" not in deal or isinstance(deal["result"], dict), f"deal {i}: 'result' must be an object")
    res = data.get("result")
    _require(res is None or isinstance(res, dict), "'result' must be an object")
    return data


# ---- replay and check --------------------------------------------------------------------

def same_json(expected: Any, actual: Any) -> bool:
    """Equal as JSON values: ``true``/``false`` are not the numbers 1/0 (Python's ``True == 1``
    would let ``"over": 0`` or ``"thrown_in": 1`` check out against the booleans NOTATION.md
    section 3 and 4 name); numbers compare by value (JSON has one number type), arrays item by
    item, objects key by key."""
    if isinstance(expected, bool) or isinstance(actual, bool):
        return isinstance(expected, bool) and isinstance(actual, bool) and expected == actual
    if isinstance(expected, (list, tuple)) and isinstance(actual, (list, tuple)):
        return len(expected) == len(actual) and all(map(same_json, expected, actual))
    if isinstance(expected, Mapping) and isinstance(actual, Mapping):
        return (expected.keys() == actual.keys()
                and all(same_json(expected[k], actual[k]) for k in expected))
    if isinstance(expected, (int, float)) and isinstance(actual, (int, float)):
        return expected == actual
    return type(expected) is type(actual) and expected == actual


def _same_winners(expected: Any, actual: Any) -> bool:
    """``winners`` names a set of seats (NOTATION.md section 3): the engine lists them in seat
    order, and a transcript listing tied winners in another order says the same thing."""
    if (isinstance(expected, list) and isinstance(actual, list)
            and all(isinstance(s, int) and not isinstance(s, bool) for s in expected + actual)):
        return sorted(expected) == sorted(actual) and len(set(expected)) == len(expected)
    return same_json(expected, actual)  # not a list of seats: compared as it is


def _first_result_difference(where: str, expected: Mapping[str, Any], actual: Mapping[str, Any],
                             match: bool = False) -> Difference | None:
    for key in list(expected) + [k for k in actual if k not in expected]:
        if key not in actual:
            return Difference(where, f"result.{key}", expected[key], None)
        if key not in expected:
            return Difference(where, f"result.{key}", None, actual[key])
        if match and key == "winners" and _same_winners(expected[key], actual[key]):
            continue
        if not same_json(expected[key], actual[key]):
            return Difference(where, f"result.{key}", expected[key], actual[key])
    return None


def check(data: Mapping[str, Any]) -> tuple[Difference | None, State | None]:
    """Replay a (validated) transcript; return the first difference (None: it checks out)
    and the state reached."""
    try:
        game = get_game(data["game"])
        state = game.new_state(data.get("options") or {}, first_dealer=data["first_dealer"])
    except RulesError as exc:
        return Difference("transcript", "setup", "a valid game and options", exc.message), None

    for di, deal in enumerate(data["deals"]):
        where = f"deal {di}"
        who = state.to_act()
        if who != CHANCE:
            actual = "match over" if who == TERMINAL else f"seat {who} to act"
            return Difference(where, "deal", "a new deal", actual), state
        exp_dealer = (deal.get("expect") or {}).get("dealer")
        if exp_dealer is not None and not same_json(exp_dealer, state.dealer()):
            return Difference(where, "expect.dealer", exp_dealer, state.dealer()), state
        try:
            state.deal(deal["deck"])
        except RulesError as exc:
            return Difference(where, "deck", "a valid deck", exc.message), state
        done = len(state.deal_results())
        for si, step in enumerate(deal["steps"]):
            who = state.to_act()
            swhere = f"{where} step {si}"
            if who < 0:
                actual = "deal over" if who == CHANCE else "match over"
                return Difference(swhere, "seat", step.get("seat"), actual), state
            if "seat" in step and step["seat"] != who:
                return Difference(swhere, "seat", step["seat"], who), state
            if "legal" in step:
                actual_legal = state.legal_actions()
                if set(step["legal"]) != set(actual_legal):  # NOTATION.md: "compare legal actions as sets"
                    return Difference(swhere, "legal", step["legal"], actual_legal), state
            try:
                state.apply(step["action"], who)
            except RulesError as exc:
                return Difference(swhere, "action", step["action"], f"rejected: {exc.message}"), state
        results = state.deal_results()
        if "result" in deal:
            if len(results) <= done:
                return Difference(f"{where} result", "result", deal["result"], "deal not finished"), state
            diff = _first_result_difference(f"{where} result", deal["result"], results[done])
            if diff:
                return diff, state
        elif len(results) > done and di != len(data["deals"]) - 1:
            return Difference(f"{where} result", "result", None, results[done]), state
    if data.get("result") is not None:
        diff = _first_result_difference("match result", data["result"], state.result(), match=True)
        if diff:
            return diff, state
    return None, state


def replay(data: Mapping[str, Any]) -> State:
    """Replay a transcript and return the state reached; TranscriptError on any difference."""
    diff, state = check(data)
    if diff is not None:
        raise TranscriptError(str(diff))
    assert state is not None
    return state


# ---- export ------------------------------------------------------------------------------

NOT_FROM_THE_START = ("this state's history does not start at the beginning of its match "
                      "(a determinized or laid-out position): it has no transcript")


def export(state: State, with_legal: bool = True) -> dict[str, Any]:
    """The transcript of a match state, finished or not (re-derived from its history).

    Only a state played from the start of its match has a transcript: one drawn by a game's
    ``determinize`` or laid out by ``position`` holds the history of its current deal alone,
    and replaying that from a new match gave wrong seats, dealers and legal sets without a
    word. Such a state is refused (TranscriptError): its history replays a deal or an action
    where none or another is due, or the replay does not end where the state stands (a history
    with fewer deals than the state has results, one that is empty or starts with an action,
    among others)."""
    game = state.game
    first_dealer = state.first_dealer  # type: ignore[attr-defined]
    replayed = game.new_state(state.options, first_dealer=first_dealer)
    deals: list[dict[str, Any]] = []
    current: dict[str, Any] | None = None
    done = 0
    for item in state.history():
        if isinstance(item, tuple) and item and item[0] == "deal":
            if replayed.to_act() != CHANCE:  # a deal where the replay has none due
                raise TranscriptError(NOT_FROM_THE_START)
            current = {"deck": [card_code(c) for c in item[1]],
                       "expect": {"dealer": replayed.dealer()}, "steps": []}
            deals.append(current)
            replayed.deal(item[1])
            continue
        # an action the replay has no seat to act for (one before any deal: a new match's
        # first decision is its deal), or that is not legal where the replay stands: apply_id
        # does not check (a Georgian Joker sample after one deal raised RuntimeError: the
        # second deal's actions replayed on the first, shorter, deal)
        ids = replayed.legal_ids() if replayed.to_act() >= 0 else ()
        if item not in ids:
            raise TranscriptError(NOT_FROM_THE_START)
        assert current is not None
        step: dict[str, Any] = {"seat": replayed.to_act()}
        if with_legal:
            step["legal"] = [replayed.action_str(a) for a in ids]
        step["action"] = replayed.action_str(item)
        current["steps"].append(step)
        replayed.apply_id(item)
        results = replayed.deal_results()
        if len(results) > done:
            current["result"] = results[done]
            done = len(results)
    if (replayed.to_act(), replayed.dealer(), replayed.deal_results(), replayed.result()) != (
            state.to_act(), state.dealer(), state.deal_results(), state.result()):
        raise TranscriptError(NOT_FROM_THE_START)
    return {
        "schema": SCHEMA,
        "game": game.id,
        "options": state.options.non_default(),
        "first_dealer": first_dealer,
        "deals": deals,
        "result": state.result(),
    }


def dumps(data: Mapping[str, Any]) -> str:
    return json.dumps(data, indent=1, ensure_ascii=False)
