"""What each seat (and a spectator) may know, as JSON-ready dicts (GJ-11).

The state keeps only ints and masks; this module rebuilds the public story of the current deal
(trump choice, bids, tricks with their winners) from the deal's action list with the same
rules (:func:`.rules.trick_winner`), and assembles the common view keys of
:mod:`engine_service.rules.game` plus a Georgian Joker ``table``:

* public (GJ-11.1): options, first dealer, schedule, deal and pulka numbers, ``n``, dealer,
  forehand, the trump indicator (``n <= 8``) or the declared trump (``n = 9``) once fixed, the
  trump chooser, every bid as soon as it is made (GJ-4.6), the dealer's forbidden bid while the
  dealer is to bid, every played card with its player, mode and named suit, the winners of
  completed tricks (GJ-11.5), tricks won, hand sizes, all results and totals, and
  ``deal_actions`` (the deal's public actions in notation, from which a search bot rebuilds
  the deal: :mod:`.determinize`);
* private (GJ-11.2): the seat's own hand (only its three phase-A cards during the trump
  choice, GJ-3.6) and, on its turn, its legal actions;
* never (GJ-11.3): other hands, the stock, phase-B cards before the trump is chosen, other
  seats' legal actions.

``trump`` and ``trump_indicator`` are shown from the moment the trump is fixed to the deal's
last card (GJ-3.7); moment by moment a seat sees what GJ-11.4's timeline says.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ...cards import CODES, STRAINS, SUITS, codes_of
from ...views import ViewMaker, views_from, with_seat
from . import actions as A
from . import rules as R
from .state import BIDDING, DEAL_SETUP, MATCH_OVER, PHASE_NAMES


@dataclass(frozen=True)
class Play:
    """One card played: ``mode`` 0 high / 1 low for a joker (else -1), ``named`` suit of a
    joker lead (else -1)."""

    seat: int
    card: int
    mode: int
    named: int
    action: int

    def as_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"seat": self.seat, "card": CODES[self.card]}
        if self.mode >= 0:
            out["joker_mode"] = A.MODES[self.mode]
        if self.named >= 0:
            out["named_suit"] = SUITS[self.named]
        return out


@dataclass(frozen=True)
class Trick:
    leader: int
    plays: tuple[Play, ...]
    winner: int

    def as_json(self) -> dict[str, Any]:
        return {"leader": self.leader, "plays": [p.as_json() for p in self.plays], "winner": self.winner}


@dataclass(frozen=True)
class DealRecord:
    """The public story of the current deal (between deals: of the last deal). A nine-card
    deal's trump choice (GJ-3.5) is not in it: the view shows the trump from ``state.trump``
    and the choice among the deal's actions (GJ-11.1)."""

    bids: tuple[int | None, ...]
    tricks: tuple[Trick, ...]
    current: tuple[Play, ...]
    leader: int  # leader of the trick in progress (or of the next trick)


def deal_record(state: Any) -> DealRecord:
    """Rebuild the deal's public story from ``state.log`` (pure, no hidden information)."""
    log = state.log
    f = state.forehand
    # a nine-card deal opens with the forehand's trump choice (GJ-3.5)
    i = 1 if log and A.TRUMP_BASE <= log[0] < A.TRUMP_BASE + 5 else 0
    bids: list[int | None] = [None] * 4
    seat = f
    while i < len(log) and log[i] >= A.BID_BASE:
        bids[seat] = log[i] - A.BID_BASE
        seat = (seat + 1) & 3
        i += 1
    tricks: list[Trick] = []
    current: list[tuple[int, int, int, int]] = []
    plays: list[Play] = []
    leader = seat = f
    trump = state.trump
    for a in log[i:]:
        card, mode, named = A.ACTION_CARD[a], A.ACTION_MODE[a], A.ACTION_SUIT[a]
        plays.append(Play(seat, card, mode, named, a))
        current.append((seat, card, mode, named))
        seat = (seat + 1) & 3
        if len(current) == 4:
            winner = R.trick_winner(current, trump, state.cfg.trumpable)
            tricks.append(Trick(leader, tuple(plays), winner))
            current, plays = [], []
            leader = seat = winner
    return DealRecord(tuple(bids), tuple(tricks), tuple(plays), leader)


def previous_deal_trick(state: Any) -> dict[str, Any] | None:
    """The final trick of the last deal that ended, in ``last_trick``'s shape, its winner by
    that deal's trump (its result, GJ-6); None before the first deal ends."""
    prev = state.prev_trick
    if prev is None:
        return None
    leader, actions = prev
    trump = STRAINS.index(state.results[-1]["trump"])
    plays = tuple(Play((leader + i) & 3, A.ACTION_CARD[a], A.ACTION_MODE[a], A.ACTION_SUIT[a], a)
                  for i, a in enumerate(actions))
    winner = R.trick_winner([(p.seat, p.card, p.mode, p.named) for p in plays], trump, state.cfg.trumpable)
    return Trick(leader, plays, winner).as_json()


def build_view(state: Any, seat: int | None) -> dict[str, Any]:
    """``state.view(seat)`` (``seat`` None: ``public_view()``)."""
    return view_maker(state)(seat)


def view_maker(state: Any) -> ViewMaker:
    """:meth:`State.view_maker`: every audience's view shares the public part, built once."""
    return views_from(_common_view(state), lambda common, seat: _seat_view(state, common, seat))


def _seat_view(state: Any, common: dict[str, Any], seat: int) -> dict[str, Any]:
    """The public view with the seat's own hand and, on its turn, its legal actions."""
    in_deal = state.phase not in (DEAL_SETUP, MATCH_OVER)
    return with_seat(common, seat, codes_of(state.hands[seat]) if in_deal else None,
                     state.legal_actions() if in_deal and state.cur == seat else None)


def _common_view(state: Any) -> dict[str, Any]:
    """The spectator's view: everything but a hand and legal actions, the same for every
    audience (the seat-dependent keys in place, empty: every view has one key order)."""
    cfg = state.cfg
    phase = state.phase
    in_deal = phase not in (DEAL_SETUP, MATCH_OVER)
    rec = deal_record(state)
    index = state.started if phase == DEAL_SETUP else state.started - 1
    n = cfg.cards[index]
    forehand = (state.dealer_seat + 1) & 3
    to_act = state.cur if state.cur >= 0 else None
    if in_deal:
        hand_sizes = [h.bit_count() for h in state.hands]
        trick = [p.as_json() for p in rec.current]
        tricks_taken = list(state.taken)
        bids = list(rec.bids)
        trump = STRAINS[state.trump] if state.trump >= 0 else None
        indicator = CODES[state.indicator] if state.indicator >= 0 else None
        tricks = [t.as_json() for t in rec.tricks]
        actions = [A.action_str(a) for a in state.log]
        leader = rec.leader
    else:
        hand_sizes, trick = [0, 0, 0, 0], []
        tricks_taken, bids = [0, 0, 0, 0], [None] * 4
        trump = indicator = None
        tricks, actions, leader = [], [], forehand
    # no complete trick in this deal yet (or between deals): the previous deal's final one
    last = rec.tricks[-1].as_json() if in_deal and rec.tricks else previous_deal_trick(state)
    forbidden = None
    if phase == BIDDING and state.nbids == 3:
        forbidden = R.forbidden_bid(n, [b for b in rec.bids if b is not None])
    over = phase == MATCH_OVER
    table = {
        "options": dict(cfg.options),
        "first_dealer": state.first_dealer,
        "schedule": cfg.schedule,
        "deals_in_match": cfg.deals,
        "deal": index + 1,
        "pulka": cfg.pulka[index],
        "cards_per_player": n,
        "forehand": forehand,
        "trump_chooser": forehand if n == 9 else None,
        "trump_indicator": indicator,
        "trump": trump,
        "bids": bids,
        "forbidden_bid": forbidden,
        "leader": leader,
        "tricks": tricks,
        "deal_actions": actions,
        "standing": R.standing(state.totals),
    }
    return {
        "game": state.game.id,
        "phase": PHASE_NAMES[phase],
        "deal_number": index,  # 0-based index of the current deal (of the next one at deal_setup)
        "dealer": state.dealer_seat,
        "to_act": to_act,
        "seat": None,
        "hand": [],
        "hand_sizes": hand_sizes,
        "legal": [],
        "trick": trick,
        "last_trick": last,
        "tricks_taken": tricks_taken,
        "totals": list(state.totals),
        "deal_results": [{k: list(v) if isinstance(v, list) else v for k, v in r.items()}
                         for r in state.results],
        "over": over,
        "winners": state.result()["winners"],
        "table": table,
    }


__all__ = ["Play", "Trick", "DealRecord", "deal_record", "previous_deal_trick", "build_view", "view_maker"]
