"""Klaberjass views: what one seat (or a spectator) may know, as a JSON-ready dict.

Public in Klaberjass (rulebook sections 2-7): the turn-up (and the dix lying in its place after
an exchange), the information card, every call, every dix-window step and exchange, the meld
dialogue (KL-5.5), every card played, the running card points and bella; and the target score
the match is played to (KL-10.1), a table option every player knows, shown whatever its value
so that a client need not know the default to tell how far the match has to go. Private: each hand;
the stock (never revealed, KL-2.10). A seat's view adds its own hand and, when it is to act, its
legal actions. The trump K-Q-J bonus (KL-7.2) depends on a hand and is published with the deal
result only.

Everything here is derived from the state's public record (the current deal's action list) plus
the meld outcome, which the dialogue publishes only in part (:func:`.sequences.dialogue`).
"""

from __future__ import annotations

from typing import Any

from ...cards import CODES
from ...views import ViewMaker, json_copy, views_from, with_seat
from .sequences import dialogue, ranked, value_event
from .state import AUCTION_STATE_NAMES, P_AUCTION, P_CHANCE, P_MELD, P_OVER, P_PLAY, PHASE_NAMES, KlaberjassState
from .tables import ACCEPT, BELLA, NAME, PASS, REFUSE, SCHMEISS, STRENGTH, TAKE, ids_of

_AUCTION_CALLS = frozenset((TAKE, PASS, NAME, NAME + 1, NAME + 2, NAME + 3, SCHMEISS, ACCEPT, REFUSE))


def _codes(mask: int) -> list[str]:
    return [CODES[c] for c in ids_of(mask)]


def _tricks(actions: list[tuple[int, int]], trump: int, strength, vals,
            done: int, complete: list[dict] | None = None) -> tuple[list[dict], dict | None]:
    """The trick in progress and the last completed trick, from public plays (``done``:
    the tricks of the deal completed before the first of them); ``complete``, when given,
    gets every completed trick, oldest first. A completed trick's ``points`` are the card
    points its winner takes with it (KL-8.1, with the ninth trick's 10 of KL-7.3)."""
    current: list[dict] = []
    last = None
    n = done
    for seat, a in actions:
        if a >= TAKE:  # calls, window steps, exchange, declarations
            continue
        card = a - BELLA if a >= BELLA else a
        play = {"seat": seat, "card": CODES[card]}
        if a >= BELLA:
            play["announce"] = "bella"
        current.append((seat, card, play))
        if len(current) == 2:
            (ls, lc, lp), (fs, fc, fp) = current
            if fc // 9 == lc // 9:
                win = fs if strength[fc] > strength[lc] else ls
            else:
                win = fs if fc // 9 == trump else ls
            n += 1
            last = {"number": n, "leader": ls, "plays": [lp, fp], "winner": win,
                    "points": vals[lc] + vals[fc] + (10 if n == 9 else 0)}
            if complete is not None:
                complete.append(last)
            current = []
    return [p for _, _, p in current], last


def previous_deal_trick(st: KlaberjassState) -> dict | None:
    """The final (ninth) trick of the last deal that ended, in ``last_trick``'s shape, with
    that deal's trump (its result); None after a thrown-in deal and before the first deal."""
    prev = st._prev_trick
    if prev is None:
        return None
    trump = "SHDC".index(st._results[-1]["trump"])
    _, last = _tricks([(e >> 8, e & 0xFF) for e in prev], trump, STRENGTH[trump], st._cfg.values[trump], 8)
    return last


def _elder_statement(st: KlaberjassState) -> dict:
    """KL-5.5 step 1 under ``kl_meld_declaration = optional``: the elder's statement is public
    as soon as he has declared or concealed, before the dealer chooses."""
    cfg = st._cfg
    e = st._elder
    seqs = ranked(st._hands[e], st._trump, cfg.split_runs, cfg.length_compare) if st._decl[e] else []
    return value_event(e, "value", seqs[0] if seqs else None, cfg.length_compare)


def build_view(st: KlaberjassState, seat: int | None) -> dict[str, Any]:
    return view_maker(st)(seat)


def view_maker(st: KlaberjassState) -> ViewMaker:
    """:meth:`State.view_maker`: every audience's view shares the public part, built once."""
    return views_from(_common_view(st), lambda common, seat: _seat_view(st, common, seat))


def _seat_view(st: KlaberjassState, common: dict[str, Any], seat: int) -> dict[str, Any]:
    """The public view with the seat's own hand and, on its turn, its legal actions."""
    in_deal = st._phase not in (P_CHANCE, P_OVER)
    return with_seat(common, seat, _codes(st._hands[seat]) if in_deal else None,
                     st.legal_actions() if in_deal and st._to_act == seat else None)


def _common_view(st: KlaberjassState) -> dict[str, Any]:
    """The spectator's view: everything but a hand and legal actions, the same for every
    audience (the seat-dependent keys are in place, empty, so that every view has one key
    order)."""
    ph = st._phase
    in_deal = ph not in (P_CHANCE, P_OVER)
    to_act = st._to_act if st._to_act >= 0 else None
    acts = st.deal_actions() if in_deal else []
    tricks: list[dict] = []  # the deal's completed tricks, with their card points
    trick, last_trick = _tricks(acts, st._trump, st._str, st._vals, 0, tricks) if ph == P_PLAY else ([], None)
    if last_trick is None:  # no complete trick in this deal yet: the previous deal's final one
        last_trick = previous_deal_trick(st)
    cfg = st._cfg
    table: dict[str, Any] = {
        "options": st.options.non_default(),
        "target_score": cfg.target,  # KL-10.1: also at the default, which `options` leaves out
        "first_dealer": st.first_dealer,
        "elder": 1 - st._dealer,
        "auction_state": AUCTION_STATE_NAMES[st._astate] if ph == P_AUCTION else None,
        "auction": [],
        "turn_up": None,
        "info_card": None,
        "trump": None,
        "maker": None,
        "exchange": None,
        "melds": [],
        "meld_points": [0, 0],
        "bella": [0, 0],
        "card_points": [0, 0],
        "trick_number": 0,
        "leader": None,
        "revealed": [[], []],
        "stock_size": 0,
        "deal_actions": [],
        "previous_deal": json_copy(st._details[-1]) if st._details else None,
        "tricks": [],  # docs/games/klaberjass.md: [] outside the play phase, between deals too
    }
    if in_deal:
        calls = []
        for s, a in acts:
            if a not in _AUCTION_CALLS:
                break
            calls.append({"seat": s, "call": st.action_str(a)})
        zones = st.zones()
        table.update({
            "auction": calls,
            "turn_up": CODES[st._turn],
            "info_card": CODES[st._info] if st._info >= 0 else None,
            "trump": "SHDC"[st._trump] if st._trump >= 0 else None,
            "maker": st._maker if st._maker >= 0 else None,
            "bella": st._bella[:],
            "card_points": st._pts[:],
            "trick_number": st._ntricks,
            "leader": st._leader if ph == P_PLAY else None,
            "revealed": [_codes(st.revealed(0)), _codes(st.revealed(1))],
            "stock_size": zones["stock"].bit_count(),
            "deal_actions": [{"seat": s, "action": st.action_str(a)} for s, a in acts],
            "tricks": tricks,  # in table.tricks, as in Jo-Jotte and Georgian Joker
        })
        if st._xseat >= 0:
            table["exchange"] = {"seat": st._xseat, "gives": CODES[st._dix], "takes": CODES[st._turn0],
                                 "trick": None if st._xtrick < 0 else st._xtrick + 1}
        if st._meld is not None:
            table["melds"] = dialogue(st._meld, cfg.reveal_cards)
            table["meld_points"] = list(st._meld.points)
        elif ph == P_MELD and st._to_act != st._elder:
            table["melds"] = [_elder_statement(st)]
    hands = st._hands
    won = st._won
    return {
        "game": "klaberjass",
        "phase": PHASE_NAMES[ph],
        "deal_number": st.deal_number,
        "dealer": st._dealer,
        "to_act": to_act,
        "seat": None,
        "hand": [],
        "hand_sizes": [hands[0].bit_count(), hands[1].bit_count()] if in_deal else [0, 0],
        "legal": [],
        "trick": trick,
        "last_trick": last_trick,
        "tricks_taken": [won[0].bit_count() // 2, won[1].bit_count() // 2] if in_deal else [0, 0],
        "totals": st._totals[:],
        "deal_results": [{k: v[:] if isinstance(v, list) else v for k, v in r.items()} for r in st._results],
        "over": ph == P_OVER,
        "winners": st._winners[:],
        "table": table,
    }
