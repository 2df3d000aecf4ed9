"""Determinization: a full Jo-Jotte state sampled from one seat's view (for search bots).

The function sees only ``view`` (``state.view(seat)``) and a ``random.Random``. It rebuilds the
match context from the view, then proposes decks that agree with everything the seat knows and
replays the deal's public actions (``table["deal_actions"]``) on each, accepting the first whose
``view(seat)`` is exactly the given one. Proposals are uniform among the decks that satisfy the
per-card facts known up front, and acceptance is by exact equality of the view, so the accepted
sample is uniform among all consistent deals:

* the seat's own cards (its hand now, its plays, a seven it exchanged), the turn-up, the
  information card;
* the opponent's known cards: his plays, the seven he exchanged, the cards his meld statements
  pinned down (JJ-5.9);
* voids and "could not beat" facts from his follows (JJ-6.3, JJ-6.4, JJ-6.8): a card he would
  have had to play cannot be among his unknown cards;
* under ``any_seven_unless_both`` a seat that was offered an exchange knows the opponent held no
  seven (JJ-4.2).

Everything else (the meld dialogue's "length n" / "top R" answers, "both hold sevens") is
checked by the replay and the final view comparison (rejection sampling).
"""

from __future__ import annotations

import random
from typing import Any, Mapping

from ...cards import PACK32, card_id
from ...errors import InconsistentView
from ...views import view_agrees
from . import actions as A
from . import tables as T
from .state import PH_CHANCE, PH_OVER, JojotteState

MAX_TRIES = 20000


#: The view admits no consistent deal (it was not produced by this engine, or was edited).
DeterminizeError = InconsistentView


def _mask(codes) -> int:
    m = 0
    for c in codes:
        m |= 1 << card_id(c)
    return m


def _restore_match(game: Any, view: Mapping[str, Any]) -> JojotteState:
    """A state at the view's match context, waiting for the current deal's deck."""
    table = view["table"]
    m = table["match"]
    st = game.new_state(table["options"], first_dealer=table["first_dealer"])
    st._dealer = view["dealer"]
    st._results = tuple(_copy(r) for r in view["deal_results"])
    st._below = tuple(m["below"])
    st._above = tuple(m["above"])
    st._games = tuple(m["games_won"])
    st._gpts = tuple(m["game_points"])
    st._rgames = tuple(m["rubber_games"])
    st._rseq = tuple(m["rubber_game_winners"])
    st._rsum = tuple(m["rubber_points"])
    st._rubbers = tuple(m["rubbers_won"])
    st._rtotals = tuple(tuple(t) for t in m["rubber_totals"])
    st._pot = m["pot"]
    st._last_detail = _copy(table["last_deal"]) if table["last_deal"] else None
    st._prev_trick = _previous_deal_trick(view)
    if view["over"]:
        st._winners = tuple(view["winners"])
        st._phase = PH_OVER
        st._to_act = -2
    return st


_ANNOUNCE = {"jo": A.JO, "jotte": A.JOTTE}


def _previous_deal_trick(view: Mapping[str, Any]) -> tuple[int, ...] | None:
    """The state's record of the previous deal's final trick, from ``last_trick`` while the
    view's deal has no complete trick (then ``last_trick`` is that trick, or None after a
    thrown-in deal). Its plays only: the winner and value follow from that deal's contract.
    Its cards say nothing about the current deal, whose replay never sees them."""
    last = view.get("last_trick")
    if not last or any(view["tricks_taken"]):
        return None
    return tuple(p["seat"] << 8 | (card_id(p["card"]) + _ANNOUNCE.get(p.get("announce"), 0))
                 for p in last["plays"])


def _copy(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {k: _copy(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_copy(v) for v in obj]
    return obj


def determinize(game: Any, view: Mapping[str, Any], rng: random.Random) -> JojotteState:
    if view.get("game") != game.id:  # another game's view failed deeper (KeyError) or as a spectator's
        raise DeterminizeError(f"not a {game.id} view")
    seat = view.get("seat")
    if seat not in (0, 1):
        raise DeterminizeError("determinize needs a seat's view, not a spectator's")
    base = _restore_match(game, view)
    table = view["table"]
    if view["phase"] in ("deal", "over"):
        return base
    cfg = base.cfg
    opp = 1 - seat
    dealer = view["dealer"]
    nd = 1 - dealer
    turn0 = card_id(table["original_turn_up"])
    info = card_id(table["info_card"]) if table["info_card"] else -1
    actions = [(e["seat"], base.parse_action(e["action"])) for e in table["deal_actions"]]
    exchange = table["exchange"]

    my_plays = 0
    opp_plays = 0
    opp_jo_queen = -1
    for s, a in actions:
        if a < A.ACCEPT:
            if s == seat:
                my_plays |= 1 << A.card_of_play(a)
            else:
                opp_plays |= 1 << A.card_of_play(a)
                if A.JO <= a < A.JOTTE:
                    # JJ-7.2: "jo" is legal only while the announcer holds the trump queen
                    opp_jo_queen = a - A.JO - T.KING + T.QUEEN
    hand = _mask(view["hand"])
    own = hand | my_plays
    opp_known = opp_plays
    if opp_jo_queen >= 0:
        opp_known |= 1 << opp_jo_queen
    if exchange is not None:
        seven = card_id(exchange["seven"])
        if exchange["seat"] == seat:
            own = (own | 1 << seven) & ~(1 << turn0)
        else:
            opp_known |= 1 << seven
    melds = table["melds"]
    if melds is not None:
        from .melds import revealed_by

        opp_known |= revealed_by([line for line in melds["dialogue"] if line["seat"] == opp])
        opp_known &= ~own
    if exchange is not None and exchange["seat"] == opp:
        opp_known &= ~(1 << turn0)
    second_done = info >= 0
    opp_size = 9 if second_done else 6
    fixed = own | opp_known | (1 << turn0) | ((1 << info) if info >= 0 else 0)
    unknown = [c for c in PACK32 if not fixed >> c & 1]
    excluded = _excluded(cfg, table, actions, seat, opp, own)
    allowed = [c for c in unknown if not excluded >> c & 1]
    k = opp_size - opp_known.bit_count()
    if k < 0 or k > len(allowed):
        raise DeterminizeError("no deal is consistent with this view")

    own_first, own_second, opp_first, opp_second = (
        (cfg.first_nd, cfg.second_nd, cfg.first_dl, cfg.second_dl) if seat == nd
        else (cfg.first_dl, cfg.second_dl, cfg.first_nd, cfg.second_nd))
    meld_ok = _meld_precheck(cfg, view, actions, seat, own, turn0)
    own_cards = [c for c in PACK32 if own >> c & 1]
    opp_fixed = [c for c in PACK32 if opp_known >> c & 1]
    for _ in range(MAX_TRIES):
        chosen = rng.sample(allowed, k)
        chosen_mask = 0
        for c in chosen:
            chosen_mask |= 1 << c
        if meld_ok is not None and not meld_ok(opp_known | chosen_mask):
            continue
        rest = [c for c in unknown if not chosen_mask >> c & 1]
        rng.shuffle(rest)
        deck = [-1] * 32
        deck[12] = turn0
        mine = own_cards[:]
        rng.shuffle(mine)
        theirs = opp_fixed + chosen
        rng.shuffle(theirs)
        if second_done:
            deck[cfg.info_pos] = info
            for pos, c in zip(own_first + own_second, mine):
                deck[pos] = c
            for pos, c in zip(opp_first + opp_second, theirs):
                deck[pos] = c
        else:
            for pos, c in zip(own_first, mine):
                deck[pos] = c
            for pos, c in zip(opp_first, theirs):
                deck[pos] = c
        it = iter(rest)
        for pos in range(32):
            if deck[pos] < 0:
                deck[pos] = next(it)
        st = base.clone()
        st._phase = PH_CHANCE
        st._to_act = -1
        st._deal(tuple(deck))
        if _replay(st, actions) and view_agrees(st.view(seat), view):
            return st
    raise DeterminizeError(f"no consistent deal found in {MAX_TRIES} proposals")


def _meld_precheck(cfg: Any, view: Mapping[str, Any], actions: list[tuple[int, int]], seat: int,
                   own: int, turn0: int):
    """A cheap test of a proposal against the complete meld dialogue (JJ-5.9), or None.

    The dialogue is a function of both hands when trick play started; recomputing it from the
    proposed opponent hand rejects most inconsistent proposals before the costlier replay.
    (The replay and the final view comparison remain the authority.)"""
    table = view["table"]
    melds = table["melds"]
    if melds is None or view["phase"] == "melds":
        return None
    contract = table["contract"]
    strain = ("S", "H", "D", "C", "NT").index(contract["play_strain"])
    defender = contract["defender"]
    first_play = next((i for i, (_, a) in enumerate(actions) if a < A.ACCEPT), len(actions))
    swap = None  # an exchange made before play: (seat, seven, turn-up)
    swap_after_quartets = False
    meld_steps = 0
    flags = [True, True, True, True]
    for s, a in actions[:first_play]:
        if A.EXCHANGE <= a < A.NO_EXCHANGE:
            swap = (s, (a - A.EXCHANGE) * 9 + T.SEVEN, turn0)
            swap_after_quartets = meld_steps >= 2
        elif a in (A.DECLARE, A.CONCEAL):
            flags[2 * s + (meld_steps >> 1)] = a == A.DECLARE
            meld_steps += 1
    declared = ((flags[0], flags[1]), (flags[2], flags[3]))
    expected = melds["dialogue"]
    from .melds import dialogue, settle

    def check(opp_original: int) -> bool:
        hands = [0, 0]
        hands[seat] = own
        hands[1 - seat] = opp_original
        quartet_hands = None
        if swap is not None:
            if swap_after_quartets:
                quartet_hands = (hands[0], hands[1])
            hands[swap[0]] = (hands[swap[0]] & ~(1 << swap[1])) | (1 << swap[2])
        st = settle(hands, strain, defender, nt_natural=cfg.nt_quartet_natural,
                    card_in_two_melds=cfg.card_in_two_melds, split_runs=cfg.split_runs,
                    winner_all_sequences=cfg.winner_all_sequences, declared=declared,
                    quartet_hands=quartet_hands)
        return dialogue(st) == expected

    return check


def _replay(st: JojotteState, actions: list[tuple[int, int]]) -> bool:
    for s, a in actions:
        if st.to_act() != s or a not in st.legal_ids():
            return False
        st._apply(a)
    return True


def _excluded(cfg: Any, table: Mapping[str, Any], actions: list[tuple[int, int]], seat: int, opp: int,
              own: int) -> int:
    """Cards that cannot be among the opponent's unknown cards (facts of the information rules)."""
    out = 0
    offer = table.get("exchange_offer")
    if offer and len(offer) > 1 and cfg.seven_mode == 0:
        out |= T.SEVENS_MASK  # JJ-4.2: I was offered the exchange, so he holds no seven
    contract = table["contract"]
    if not contract or contract["play_strain"] is None:
        return out & ~own
    ps = ("S", "H", "D", "C", "NT").index(contract["play_strain"])
    head = cfg.head[ps]
    trumps = T.TRUMP_MASK[ps]
    plays = [(s, A.card_of_play(a)) for s, a in actions if a < A.ACCEPT]
    for i in range(0, len(plays) - 1, 2):
        (_, lead), (follower, card) = plays[i], plays[i + 1]
        if follower != opp:
            continue
        suit = T.SUIT_MASK_OF[lead]
        if not (1 << card) & suit:  # JJ-6.4: void in the led suit ...
            out |= suit
            if not (1 << card) & trumps:  # ... and, not trumping, void in trumps
                out |= trumps
        elif not (1 << card) & head[lead]:  # JJ-6.3: followed without beating when obliged
            out |= head[lead]
    return out & ~own
