"""Views of a Japanese Joker state: what one seat (or a spectator) may know (JJK-9).

Built at the API edge, never in the fast path. A view is a pure function of the public record
(JJK-9.1, 9.2) and the seat's private knowledge (JJK-9.3): its hand, its first three cards, the
identity of each of its former down cards from the moment it reached the hand. Nothing else:
no down card on the table (not even the owner's), no card of the other hand except the up card
moved there by the two-column clearing rule, no phase-B card during the trump choice, no deck
(JJK-9.4). Each moment of JJK-9.8's timeline (trump choice, after the choice, play, deal over)
shows exactly its row. That is what makes :mod:`.determinize` possible: it rebuilds a state
from a view.

The game-specific ``table`` dict:

* ``declarer``, ``first_declarer``, ``options`` (every table option), ``target_score``;
* ``trump``: ``"S"`` ... ``"NT"``, None before the choice;
* ``tricks_played``: completed tricks of this deal;
* ``columns``: per seat, the five columns in table order as dealt, ``{"up": card,
  "on_table": bool}`` (the up card stays listed once its column is gone: it was public);
* ``columns_up``: per seat, the up cards still on the table, in table order;
* ``column_counts``: per seat, 5, 4, 3, 2 or 0 (JJK-4.4);
* ``played_any``: per seat, whether it has played a card in this deal (JJK-5.1);
* ``known_in_hand``: per seat, the cards publicly known to be in that hand (JJK-4.3 moves);
* ``deal_actions``: every action of this deal in order, ``{"seat", "action"}``; plays add
  ``"from"`` (``"hand"`` / ``"table"``), table plays ``"moved_hidden"`` (how many down cards
  went to the hand) and ``"moved_public"`` (the up card moved by JJK-4.3), and for the viewer's
  own table plays ``"moved_cards"`` (the down cards it received: the played column's first);
  the second play of a trick adds ``"winner"``;
* ``first_three``: the viewer's own first three cards (seat views only).
"""

from __future__ import annotations

from typing import Any

from ...cards import CODES, STRAINS, SUITS, codes_of
from ...views import ViewMaker, views_from, with_seat
from .state import OVER, PHASE_NAMES, PLAY, TRUMP, JapaneseJokerState
from .tables import ACTION_CARD, ACTION_LEAD_KEY, ACTION_STR, FOLLOWER_WINS, NUM_LEAD_KEYS, TRUMP_BASE


def _play(seat: int, card: int, lead_key: int, leads: bool = True) -> dict[str, Any]:
    entry: dict[str, Any] = {"seat": seat, "card": CODES[card]}
    if leads and card >= 36 and lead_key >= 36:
        entry["named_suit"] = SUITS[lead_key - 36]
    return entry


def _with_own_moves(public: list[dict[str, Any]], moves: list[tuple[int, list[str]]]) -> list[dict[str, Any]]:
    """The public record with a seat's ``moved_cards`` in its own table plays (``moves``:
    entry index and cards); the other entries are the public ones."""
    if not moves:
        return public
    out = list(public)
    for i, cards in moves:
        entry: dict[str, Any] = {}
        for key, value in out[i].items():
            entry[key] = value
            if key == "moved_public":
                entry["moved_cards"] = cards
        out[i] = entry
    return out


def _deal_record(st: JapaneseJokerState) -> tuple[list[dict[str, Any]], tuple[list, list]]:
    """The public record of the current deal, and per seat the (entry index, down cards it
    received) of its table plays."""
    out: list[dict[str, Any]] = []
    own: tuple[list, list] = ([], [])
    cols = st._columns
    down_of = st._down_of
    ups = [[u for _, u in cols[0]], [u for _, u in cols[1]]]
    to_move, lead_key = st._origin
    tbase = max(st._trump, 0) * NUM_LEAD_KEYS * 38  # a deal's plays follow its trump choice
    for a in st.deal_log():
        if a >= TRUMP_BASE:
            out.append({"seat": st._declarer, "action": ACTION_STR[a]})
            continue
        p = to_move
        c = ACTION_CARD[a]
        entry: dict[str, Any] = {"seat": p, "action": ACTION_STR[a]}
        if c in ups[p]:
            entry["from"] = "table"
            moved = [down_of[c]]
            ups[p].remove(c)
            if len(ups[p]) == 1:  # JJK-4.3: the player had exactly two columns
                other = ups[p].pop()
                moved.append(down_of[other])
                entry["moved_hidden"] = 2
                entry["moved_public"] = [CODES[other]]
            else:
                entry["moved_hidden"] = 1
                entry["moved_public"] = []
            own[p].append((len(out), [CODES[m] for m in moved]))
        else:
            entry["from"] = "hand"
        if lead_key < 0:
            lead_key = ACTION_LEAD_KEY[a]
            to_move = 1 - p
        else:
            w = p if FOLLOWER_WINS[tbase + lead_key * 38 + c] else 1 - p
            entry["winner"] = w
            lead_key = -1
            to_move = w
        out.append(entry)
    return out, own


def build_view(st: JapaneseJokerState, seat: int | None) -> dict[str, Any]:
    return view_maker(st)(seat)


def view_maker(st: JapaneseJokerState) -> ViewMaker:
    """:meth:`State.view_maker`: every audience's view shares the public part, built once."""
    common, own = _common_view(st)
    return views_from(common, lambda common, seat: _seat_view(st, common, own, seat))


def _seat_view(st: JapaneseJokerState, common: dict[str, Any], own: tuple[list, list],
               seat: int) -> dict[str, Any]:
    """The public view with the seat's own hand, legal actions on its turn, first three cards
    and the down cards its table plays brought it (JJK-9.3)."""
    if st._phase not in (TRUMP, PLAY):
        return with_seat(common, seat, None, None)
    view = with_seat(common, seat, codes_of(st._hand[seat]),
                     st.legal_actions() if st._to_act == seat else None)
    table = view["table"] = dict(common["table"])
    table["deal_actions"] = _with_own_moves(table["deal_actions"], own[seat])
    table["first_three"] = codes_of(st._first3[seat])
    return view


def _common_view(st: JapaneseJokerState) -> tuple[dict[str, Any], tuple[list, list]]:
    """The spectator's view (the seat-dependent keys in place, empty: every view has one key
    order), and what :func:`_seat_view` adds to the deal's record per seat."""
    phase = st._phase
    in_deal = phase in (TRUMP, PLAY)
    to_act = st._to_act if st._to_act >= 0 else None
    table: dict[str, Any] = {
        "declarer": st._declarer,
        "first_declarer": st.first_dealer,
        "options": dict(st.options),
        "target_score": st._target,
        "trump": STRAINS[st._trump] if in_deal and st._trump >= 0 else None,  # public, JJK-3.6
        "tricks_played": st._ntricks if in_deal else 0,
    }
    trick: list[dict[str, Any]] = []
    last_trick = None
    if phase == PLAY:
        up = st._up  # the up cards on the table
        table["columns"] = [[{"up": CODES[u], "on_table": up[s] >> u & 1 == 1} for _, u in st._columns[s]]
                            for s in (0, 1)]
        table["columns_up"] = [[CODES[u] for _, u in st._columns[s] if up[s] >> u & 1] for s in (0, 1)]
        table["column_counts"] = [up[0].bit_count(), up[1].bit_count()]
        table["played_any"] = [bool(st._open[0]), bool(st._open[1])]
        table["known_in_hand"] = [codes_of(st.known_in_hand(0)), codes_of(st.known_in_hand(1))]
        if st._lead >= 0:
            trick = [_play(st._leader, st._lead_card, st._lead)]
    else:
        table["columns"] = [[], []]
        table["columns_up"] = [[], []]
        table["column_counts"] = [0, 0]
        table["played_any"] = [False, False]
        table["known_in_hand"] = [[], []]
    if st._last is not None:  # before the deal's first complete trick: the previous deal's final one
        leader, lcard, lkey, fcard, winner = st._last
        last_trick = {"plays": [_play(leader, lcard, lkey), _play(1 - leader, fcard, lkey, False)],
                      "winner": winner}
    own: tuple[list, list] = ([], [])
    if in_deal:
        table["deal_actions"], own = _deal_record(st)
    else:
        table["deal_actions"] = []
    return {
        "game": st.game.id,
        "phase": PHASE_NAMES[phase],
        "deal_number": len(st._results),  # 0-based index of this (or the next) deal
        "dealer": st._declarer,
        "to_act": to_act,
        "seat": None,
        "hand": [],
        "hand_sizes": [st._hand[0].bit_count(), st._hand[1].bit_count()] if in_deal else [0, 0],
        "legal": [],
        "trick": trick,
        "last_trick": last_trick,
        "tricks_taken": list(st._taken) if in_deal else [0, 0],
        "totals": list(st._totals),
        "deal_results": [{"trump": r["trump"], "taken": list(r["taken"]), "scores": list(r["scores"])}
                         for r in st._results],
        "over": phase == OVER,
        "winners": list(st._winners),
        "table": table,
    }, own
