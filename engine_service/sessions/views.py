"""Views per audience, redacted at the source (ARCHITECTURE.md section 4).

An *audience* is a seat number (that seat's player, or a bot playing it), :data:`SPECTATOR`
(public information only: GJ-11.6, JJK-9.5) or :data:`ADMIN` (omniscient, authenticated).
Every view the session layer sends is built here from the rules core's own ``view(seat)`` /
``public_view()``, so what an audience may know is decided in one place: the game's
information rules. The admin view adds the omniscient card locations (``zones()``).
"""

from __future__ import annotations

import re
from typing import Any, Mapping, Sequence, Union

from ..rules.cards import CODES, codes_of
from ..rules.game import State
from ..rules.views import ViewMaker

SPECTATOR = "spectator"
ADMIN = "admin"
Audience = Union[int, str]


def audience_kind(audience: Audience) -> str:
    """``seat``, ``spectator`` or ``admin`` (a metrics label)."""
    return "seat" if isinstance(audience, int) else str(audience)


def admin_view(state: State) -> dict[str, Any]:
    """The public view plus the legal actions of the seat to act (as admin.proto promises) and
    every card's location: ``hands`` (per seat) and ``zones`` (every zone of
    ``State.zones()``: stock, turn-up, tricks...). Never sent to a player."""
    view = dict(state.public_view())
    view["legal"] = state.legal_actions() if not state.is_over() else []
    zones = state.zones()
    view["zones"] = {name: codes_of(mask) for name, mask in zones.items()}
    view["hands"] = [codes_of(zones.get(f"hand{s}", 0)) for s in range(state.game.num_seats)]
    return view


def view_for(state: State, audience: Audience, make: ViewMaker | None = None) -> dict[str, Any]:
    """The view of ``audience``; ``make``: the state's ``view_maker()``, for several audiences
    of one state. A seat is one of the game's (a bool or a seat out of range is no audience:
    the rules core's views would read ``-1`` as the last seat and show its hand)."""
    if isinstance(audience, int) and not isinstance(audience, bool):
        if not 0 <= audience < state.game.num_seats:
            raise ValueError(f"unknown audience {audience!r}: {state.game.id} has seats 0..{state.game.num_seats - 1}")
        return make(audience) if make is not None else state.view(audience)
    if audience == SPECTATOR:
        return make(None) if make is not None else state.public_view()
    if audience == ADMIN:
        return admin_view(state)
    raise ValueError(f"unknown audience {audience!r}")


def before_start(public: Mapping[str, Any], audience: Audience, draw_keys: Sequence[str] = ()) -> dict[str, Any]:
    """The view of ``audience`` (a seat or a spectator) while the match waits for players: the
    public view, with nobody to act and the first-dealer draw withheld.

    The draw is made when the match is created (KL-2.1, JJ-2.1, GJ-2.2, JJK-A9), before the
    seats are taken: shown in the waiting view (``dealer`` and the game's ``draw_keys``:
    the first dealer, the elder hand, the forehand...), it let whoever joined choose the
    dealer's or the elder's seat, which defeats the draw. They are None until the start's view
    shows them (on the wire ``dealer`` then reads 0, docs/api.md, the table's keys null).

    Nothing private is shown before the start. A seat may be left and joined again while the
    match waits (its token then stops working), so with its hand on show one player could look
    at every hand in turn (join a seat, look, leave, join the next) and then play knowing them
    all. And nobody may act yet (SubmitAction answers MATCH_WAITING), so there is no ``to_act``
    and no legal action: a client that acts when ``to_act`` is its seat waits for the start.
    """
    view = dict(public)  # its hand and legal actions are empty: the public view's
    view["to_act"] = None
    view["dealer"] = None
    if draw_keys and isinstance(view.get("table"), Mapping):
        view["table"] = {**view["table"], **{key: None for key in draw_keys if key in view["table"]}}
    if isinstance(audience, int):
        view["seat"] = audience
    return view


def after_end(view: Mapping[str, Any], winners: Sequence[int]) -> dict[str, Any]:
    """The view of a match ended by the session (a resignation, a forfeit, an abandonment, a
    termination) before the rules ended it: nobody may act any more (SubmitAction answers
    MATCH_NOT_ACTIVE), so no ``to_act`` and no legal action, and the match is ``over`` with
    the session's ``winners`` (the result's), as at an end by the rules: a frontend reads the
    end and the winner from the view's typed fields however the match ended."""
    view = dict(view)
    view["to_act"] = None
    view["legal"] = []
    view["over"] = True
    view["winners"] = list(winners)
    return view


_CARD_RE = re.compile(r"(?<![A-Za-z0-9])([AKQJT9876][SHDC]|X[12])(?![A-Za-z0-9])")


def secret_codes(obj: Any, secret_mask: int) -> set[str]:
    """Card codes of ``secret_mask`` mentioned anywhere in a JSON-like object (keys, values,
    inside strings such as ``play:AS``). Keeps hidden cards out of the logs."""
    if not secret_mask:
        return set()
    found: set[str] = set()
    stack: list[Any] = [obj]
    while stack:
        o = stack.pop()
        if isinstance(o, str):
            for m in _CARD_RE.finditer(o):
                if secret_mask >> CODES.index(m.group(1)) & 1:
                    found.add(m.group(1))
        elif isinstance(o, Mapping):
            stack.extend(o.keys())
            stack.extend(o.values())
        elif isinstance(o, (list, tuple, set, frozenset)):
            stack.extend(o)
    return found


def public_or_none(obj: Any, state: State) -> Any:
    """``obj`` if it names no card a spectator may not know now, else None (for logs)."""
    return None if secret_codes(obj, state.secret_cards(None)) else obj
