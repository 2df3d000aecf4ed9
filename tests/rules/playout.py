"""Random playouts shared by the invariant, no-leak, transcript and benchmark code."""

from __future__ import annotations

import random
import re
from typing import Any, Callable, Iterator

from engine_service.rules import CHANCE, TERMINAL, Game, State
from engine_service.rules.cards import CODES, card_id

CARD_RE = re.compile(r"(?<![A-Za-z0-9])([AKQJT9876][SHDC]|X[12])(?![A-Za-z0-9])")


def shuffled(game: Game, rng: random.Random) -> list[int]:
    deck = list(game.pack)
    rng.shuffle(deck)
    return deck


def random_match(game: Game, seed: int, options: dict | None = None, max_steps: int = 100_000,
                 on_step: Callable[[State], None] | None = None) -> State:
    """Play a whole match with random decks and random legal actions."""
    rng = random.Random(seed)
    state = game.new_state(options or {}, first_dealer=rng.randrange(game.num_seats))
    for _ in range(max_steps):
        who = state.to_act()
        if who == TERMINAL:
            return state
        if on_step is not None:
            on_step(state)
        if who == CHANCE:
            state.deal(shuffled(game, rng))
        else:
            state.apply_id(rng.choice(state.legal_ids()))
    raise AssertionError(f"{game.id}: match did not end within {max_steps} steps (seed {seed})")


# Keys whose values are random url-safe identifiers: "KM-OYF4MYKODk_TC" names no ten of clubs.
IDENTIFIER_KEYS = frozenset({"match_id", "client_action_id", "seat_token", "token"})


_SCANNED: dict[str, tuple[int, ...]] = {}  # a string's card codes, scanned once (views repeat theirs)
_NO_CARDS = frozenset({int, bool, float, type(None)})  # values that name no card: not visited


def codes_in_string(s: str) -> tuple[int, ...]:
    """The ids of the card codes in one string (CARD_RE), each string scanned once."""
    hit = _SCANNED.get(s)
    if hit is None:
        if len(_SCANNED) > 200_000:
            _SCANNED.clear()
        hit = _SCANNED[s] = tuple(card_id(m.group(1)) for m in CARD_RE.finditer(s))
    return hit


def _collect(o: Any, found: set[int], current_deal: bool) -> None:
    """Add the card codes of every string in ``o`` (dict keys included) to ``found``, but
    for the values of IDENTIFIER_KEYS and, when ``current_deal``, a ``last_trick`` that
    :func:`without_previous_deal_trick` deletes (decided, as it does, on the converted
    values of the keys it reads)."""
    if isinstance(o, str):
        found.update(codes_in_string(o))
    elif isinstance(o, dict):
        previous = False
        if current_deal and o.get("last_trick") and without_previous_deal_trick(o["last_trick"]):
            taken = without_previous_deal_trick(o.get("tricks_taken"))
            previous = (not any(taken) if isinstance(taken, list)
                        else not without_previous_deal_trick(o.get("trick_history")))
        for key, value in o.items():
            if key not in IDENTIFIER_KEYS and not (previous and key == "last_trick"):
                if type(key) is str:  # (inline: most strings here are keys, naming no card)
                    codes = _SCANNED.get(key)
                    if codes is None:
                        codes = codes_in_string(key)
                    if codes:
                        found.update(codes)
                else:
                    _collect(key, found, current_deal)
                if type(value) not in _NO_CARDS:
                    _collect(value, found, current_deal)
    elif isinstance(o, (list, tuple)):
        for v in o:
            if type(v) not in _NO_CARDS:
                _collect(v, found, current_deal)


def cards_in(obj: Any) -> set[int]:
    """Every card code mentioned anywhere in a JSON-like object (strings scanned for codes),
    except in the values of IDENTIFIER_KEYS."""
    found: set[int] = set()
    _collect(obj, found, False)
    return found


def current_deal_cards_in(obj: Any) -> set[int]:
    """``cards_in(without_previous_deal_trick(obj))``, found in one walk of ``obj`` with no
    copy of it (the no-leak checks ask it of every view of whole matches)."""
    found: set[int] = set()
    _collect(obj, found, True)
    return found


def without_previous_deal_trick(obj: Any) -> Any:
    """``obj`` (a JSON-like object: a rules view, or a protobuf message as a dict) without
    the ``last_trick`` of every view in it that is the previous deal's final trick: the view's
    deal has no complete trick (a rules view's ``tricks_taken`` are all 0; a View message's
    ``trick_history`` is empty, docs/api.md). Its cards were played face up in a deal that
    is over, and may lie in a hidden hand of the current one: naming them there says nothing
    about where they are now, so the no-leak checks of the current deal's secrets skip it (the
    rules tests check that it is exactly that trick). Everything else is kept as it is."""
    if isinstance(obj, dict):
        out = {k: without_previous_deal_trick(v) for k, v in obj.items()}
        if out.get("last_trick"):
            taken = out.get("tricks_taken")
            previous = not any(taken) if isinstance(taken, list) else not out.get("trick_history")
            if previous:
                del out["last_trick"]
        return out
    if isinstance(obj, (list, tuple)):
        return [without_previous_deal_trick(v) for v in obj]
    return obj


def mask_codes(mask: int) -> list[str]:
    return [CODES[i] for i in range(len(CODES)) if mask >> i & 1]


def iter_states(game: Game, seed: int, options: dict | None = None) -> Iterator[State]:
    """Every decision state of one random match (the live state: do not keep references)."""
    rng = random.Random(seed)
    state = game.new_state(options or {}, first_dealer=rng.randrange(game.num_seats))
    while True:
        who = state.to_act()
        if who == TERMINAL:
            return
        if who == CHANCE:
            state.deal(shuffled(game, rng))
            continue
        yield state
        state.apply_id(rng.choice(state.legal_ids()))
