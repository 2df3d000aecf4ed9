"""Helpers on views shared by the games: building the views of several audiences of one state,
and comparing views (the determinizers)."""

from __future__ import annotations

from typing import Any, Callable

#: ``State.view_maker()``'s answer: seat (None: a spectator) -> that audience's view.
ViewMaker = Callable[["int | None"], dict[str, Any]]


def json_copy(value: Any) -> Any:
    """A copy of a JSON-like value (dicts, lists, tuples as lists, scalars) that shares no
    container with it: a view is its reader's to change, and the state's own records (deal
    results, which ``deal_results()`` shares read-only) must not be handed out inside one."""
    if isinstance(value, dict):
        return {k: json_copy(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_copy(v) for v in value]
    return value


def views_from(common: dict[str, Any], seat_view: Callable[[dict[str, Any], int], dict[str, Any]]) -> ViewMaker:
    """A ``State.view_maker()`` over the public view ``common`` (what a spectator sees, the
    seat-dependent keys empty) and ``seat_view(common, seat)``, which adds a seat's own records
    to a copy of it: every view shares ``common``'s values (views are read-only).

    A viewer that is no seat of the game (``common``'s ``hand_sizes`` count them) is a
    ValueError: the states index their hands Python-style, so a seat -1 was the last seat and
    ``True`` seat 1, each handed that seat's hand."""
    seats = range(len(common["hand_sizes"]))

    def view(seat: int | None) -> dict[str, Any]:
        if seat is None:
            return common
        if type(seat) is not int or seat not in seats:
            raise ValueError(f"a view is for a seat 0..{len(seats) - 1} or None (a spectator), not {seat!r}")
        return seat_view(common, seat)

    return view


def with_seat(common: dict[str, Any], seat: int, hand: list[str] | None,
              legal: list[str] | None) -> dict[str, Any]:
    """A copy of the public view ``common`` naming ``seat``, with its hand and legal actions
    where given (None: the public view's empty ones)."""
    view = dict(common)
    view["seat"] = seat
    if hand is not None:
        view["hand"] = hand
    if legal is not None:
        view["legal"] = legal
    return view


def view_agrees(sample: Any, given: Any) -> bool:
    """True when ``sample`` (a view the engine just produced) says everything ``given`` says.

    Dicts agree when every key of ``given`` agrees in ``sample``; lists and tuples element by
    element with equal lengths; anything else by equality. A view rebuilt from the wire (a
    remote bot's) may lack derived fields such as a trick's points: what it does not say does
    not constrain the sample, what it says must hold exactly.
    """
    if isinstance(given, dict):
        if not isinstance(sample, dict):
            return False
        for key, value in given.items():
            if key not in sample or not view_agrees(sample[key], value):
                return False
        return True
    if isinstance(given, (list, tuple)):
        if not isinstance(sample, (list, tuple)) or len(sample) != len(given):
            return False
        return all(view_agrees(s, g) for s, g in zip(sample, given))
    return sample == given
