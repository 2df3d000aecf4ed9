"""What a Jo-Jotte seat (or a spectator) may know: the views (game.py's common keys + "table").

Information rules (jojotte.md): a seat sees its own hand; the turn-up and the information card
(JJ-2.5, JJ-2.7); every call, exchange (JJ-4.2, "the event is public"), nullo and slam answer;
the meld dialogue of JJ-5.9 and nothing else about the loser's melds; every card played, with
its announcement (JJ-7.2); the score. It never sees the opponent's hand, the stock, or the
opponent's private choices (a concealed meld looks like "none", JJ-A21). The one private
record beside the hand is ``exchange_offer``: the seat's own legal set at its exchange step,
which tells it (under the default ``any_seven_unless_both``) whether the opponent holds a seven.

The view carries the current deal's public action list (``table["deal_actions"]``) and the
whole match context, so that :mod:`.determinize` can rebuild a consistent state from it alone.
"""

from __future__ import annotations

from typing import Any

from ...cards import CODES, STRAINS, codes_of
from ...views import ViewMaker, json_copy, views_from, with_seat
from . import actions as A
from . import melds as M
from . import tables as T
from .scoring import KIND_NAMES, NULLO
from .state import (AUCTION_STATES, PH_CHANCE, PH_EXCH_DEF, PH_LATE_DBL, PH_MELD, PH_PLAY,
                    PHASE_NAMES, JojotteState)


def meld_public(st: JojotteState) -> tuple[list[dict[str, Any]], int] | None:
    """The meld statements made so far and the cards they pin down, or None before any."""
    if st._phase >= PH_CHANCE:
        return None
    if st._settle is not None:
        lines = M.dialogue(st._settle)
        return lines, M.revealed_by(lines)
    if st._phase != PH_MELD or st._meld_step == 0:
        return None
    step = st._meld_step
    q, s = M.dialogue_parts(st._settlement(st._declared))
    lines = q[:1] if step == 1 else (q if step == 2 else q + s[:1])
    return lines, M.revealed_by(lines)


def _play(seat: int, a: int) -> dict[str, Any]:
    card = A.card_of_play(a)
    d: dict[str, Any] = {"seat": seat, "card": CODES[card]}
    if a >= A.JOTTE:
        d["announce"] = "jotte"
    elif a >= A.JO:
        d["announce"] = "jo"
    return d


def completed_tricks(st: JojotteState) -> list[dict[str, Any]]:
    """The finished tricks of the current deal: leader, plays, winner, JJ-8.2 value."""
    if st._phase != PH_PLAY:
        return []
    plays = [(e >> 8, e & 255) for e in st._log if (e & 255) < A.ACCEPT]
    return _tricks(plays, st._wins, st._vals, st._tv, st._kind)


def _tricks(plays: list[tuple[int, int]], wins, vals, tv: int, kind: int, before: int = 0) -> list[dict[str, Any]]:
    """The complete tricks of ``plays`` ((seat, play id), in order; ``before``: the deal's plays
    before them) under a deal's winning and value tables (JJ-6.6, JJ-7.3, JJ-8.2); ``kind``:
    the contract's kind (NULLO: no trick points, JJ-8.4)."""
    out: list[dict[str, Any]] = []
    for i in range(0, len(plays) - 1, 2):
        (s1, a1), (s2, a2) = plays[i], plays[i + 1]
        c1, c2 = A.card_of_play(a1), A.card_of_play(a2)
        w = s2 if wins[c1] >> c2 & 1 else s1
        if tv == 0:
            v = max(vals[c1], vals[c2])
        elif tv == 1:
            v = vals[c1] + vals[c2]
        else:
            v = vals[c2] if w == s2 else vals[c1]
        if before + i == 16 and kind != NULLO:  # the ninth trick
            v += 10
        # ``points``: what the trick adds to its winner's trick points (JJ-8.3), none in nullo
        # (JJ-8.4); ``value`` is the same number in nullo too
        out.append({"leader": s1, "plays": [_play(s1, a1), _play(s2, a2)], "winner": w, "value": v,
                    "points": None if kind == NULLO else v})
    return out


def previous_deal_trick(st: JojotteState) -> dict[str, Any] | None:
    """The final (ninth) trick of the last deal that ended, in ``last_trick``'s shape, under
    that deal's contract (its result); None after a thrown-in deal and before the first deal."""
    prev = st._prev_trick
    if prev is None:
        return None
    contract = st._results[-1]["contract"]
    ps = STRAINS.index(contract["strain"])
    kind = KIND_NAMES.index(contract["kind"])
    plays = [(e >> 8, e & 255) for e in prev]
    return _tricks(plays, T.WINS_OVER[ps], T.CARD_VALUE[ps], st.cfg.trick_value, kind, 16)[0]


def _contract(st: JojotteState) -> dict[str, Any] | None:
    if st._bidder < 0:
        return None
    c: dict[str, Any] = {"strain": STRAINS[st._strain], "bidder": st._bidder, "multiplier": st._mult,
                         "declarer": None, "defender": None, "kind": None, "holder": None,
                         "play_strain": None}
    if st._decl >= 0:
        c["declarer"] = st._decl
        c["defender"] = 1 - st._decl
    if st._pstrain >= 0:
        c["kind"] = KIND_NAMES[st._kind]
        c["holder"] = 1 - st._decl if st._kind == NULLO else st._decl
        c["play_strain"] = STRAINS[st._pstrain]
    return c


def _match(st: JojotteState) -> dict[str, Any]:
    return {
        "below": list(st._below), "above": list(st._above), "games_won": list(st._games),
        "game_points": list(st._gpts), "game_target": st.cfg.game_target,
        "rubber_number": len(st._rtotals), "rubber_games": list(st._rgames),
        "rubber_game_winners": list(st._rseq), "rubber_points": list(st._rsum),
        "rubbers_won": list(st._rubbers), "rubber_totals": [list(t) for t in st._rtotals],
        "match_rubbers": st.cfg.match_rubbers, "pot": st._pot,
    }


def exchange_offer(st: JojotteState, seat: int) -> list[str] | None:
    """The seat's own legal set at its exchange-window step (private; JJ-4.2, NOTATION 2.2),
    once that step has come; None without a window or before the step."""
    if not st._window:
        return None
    step_reached = st._phase > PH_EXCH_DEF if seat == st._decl else True
    if not step_reached:
        return None
    if seat != st._exch_seat:
        return ["no_exchange"]
    m = st._exch_offer
    return [A.ACTION_STRINGS[A.EXCHANGE + s] for s in range(4) if m >> (s * 9 + T.SEVEN) & 1] + ["no_exchange"]


def build_view(st: JojotteState, seat: int | None) -> dict[str, Any]:
    return view_maker(st)(seat)


def view_maker(st: JojotteState) -> ViewMaker:
    """:meth:`State.view_maker`: every audience's view shares the public part, built once."""
    return views_from(_common_view(st), lambda common, seat: _seat_view(st, common, seat))


def _seat_view(st: JojotteState, common: dict[str, Any], seat: int) -> dict[str, Any]:
    """The public view with the seat's own hand, its exchange offer and, on its turn, its
    legal actions."""
    if st._phase >= PH_CHANCE:
        return with_seat(common, seat, None, None)
    view = with_seat(common, seat, codes_of(st._h[seat]),
                     st.legal_actions() if st._to_act == seat else None)
    offer = exchange_offer(st, seat)
    if offer is not None:
        view["table"] = {**common["table"], "exchange_offer": offer}
    return view


def _common_view(st: JojotteState) -> dict[str, Any]:
    """The spectator's view: everything but the seat's own records, the same for every
    audience (the seat-dependent keys in place, empty: every view has one key order)."""
    ph = st._phase
    in_deal = ph < PH_CHANCE
    to_act = st._to_act if st._to_act >= 0 else None
    table: dict[str, Any] = {
        "options": dict(st.options.non_default()),
        "first_dealer": st.first_dealer,
        "non_dealer": 1 - st._dealer,
        "match": _match(st),
        "last_deal": json_copy(st._last_detail) if st._last_detail else None,
    }
    tricks: list[dict[str, Any]] = []
    if in_deal:
        log = st._log
        alen = st._alen if st._alen >= 0 else len(log)
        melds = meld_public(st)
        tricks = completed_tricks(st)
        table.update({
            "auction_state": AUCTION_STATES[ph] if ph <= PH_LATE_DBL else None,
            "turn_up": CODES[st._turn],
            "original_turn_up": CODES[st._turn0],
            "info_card": CODES[st._info] if st._info >= 0 else None,
            "auction": [{"seat": e >> 8, "call": A.ACTION_STRINGS[e & 255]} for e in log[:alen]],
            "contract": _contract(st),
            "exchange_window": st._window,
            "exchange": ({"seat": st._exchange[0], "seven": CODES[st._exchange[1]],
                          "turn_up": CODES[st._exchange[2]]} if st._exchange else None),
            "exchange_offer": None,
            "melds": ({"dialogue": melds[0],
                       "points": list(st._meld_pts) if st._settle is not None else None}
                      if melds is not None else None),
            # JJ-A21: which category the seat to act declares or conceals now (the four steps:
            # quartets twice, then sequences twice); a frontend counted the steps to tell
            "meld_category": ("quartets" if st._meld_step < 2 else "sequences") if ph == PH_MELD else None,
            # required announcements are public when made; automatic jo-jotte only shows when
            # it scores (at the queen), so the king alone reveals nothing
            "jo": [s for s in (0, 1) if (st._jo >> s & 1 if st.cfg.jo_required else st._jj[s])],
            "jo_jotte": list(st._jj),
            "tricks": tricks,
            "trick_points": [0, 0] if st._kind == NULLO else list(st._tp),  # JJ-8.3, JJ-8.4
            "deal_actions": [{"seat": e >> 8, "action": A.ACTION_STRINGS[e & 255]} for e in log],
        })
    else:
        table.update({"auction_state": None, "turn_up": None, "original_turn_up": None,
                      "info_card": None, "auction": [], "contract": None, "exchange_window": None,
                      "exchange": None, "exchange_offer": None, "melds": None, "meld_category": None, "jo": [],
                      "jo_jotte": [0, 0], "tricks": [], "trick_points": [0, 0], "deal_actions": []})
    trick = []
    if in_deal and st._lead >= 0:
        last_play = next(e for e in reversed(st._log) if (e & 255) < A.ACCEPT)
        trick = [_play(last_play >> 8, last_play & 255)]
    return {
        "game": "jojotte",
        "phase": PHASE_NAMES[ph],
        "deal_number": len(st._results),
        "dealer": st._dealer,
        "to_act": to_act,
        "seat": None,
        "hand": [],
        "hand_sizes": [st._h[0].bit_count(), st._h[1].bit_count()] if in_deal else [0, 0],
        "legal": [],
        "trick": trick,
        # no complete trick in this deal yet: the previous deal's final one
        "last_trick": tricks[-1] if tricks else previous_deal_trick(st),
        "tricks_taken": list(st._tricks) if in_deal else [0, 0],
        "totals": {"below": list(st._below), "above": list(st._above), "games_won": list(st._games)},
        "deal_results": [_copy_result(r) for r in st._results],
        "over": st._winners is not None,
        "winners": list(st._winners) if st._winners is not None else [],
        "table": table,
    }


def _copy_result(r: dict[str, Any]) -> dict[str, Any]:
    out = dict(r)
    for k, v in out.items():
        if isinstance(v, list):
            out[k] = list(v)
        elif isinstance(v, dict):
            out[k] = dict(v)
    return out
