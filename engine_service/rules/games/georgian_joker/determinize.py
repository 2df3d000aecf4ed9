"""Determinization: a full match state drawn uniformly among those consistent with one seat's
view (for search bots, which never see the server state, GJ-11.7).

What a seat knows about the hidden cards of the current deal (GJ-11):

* its own hand, the trump indicator, every played card and who played it;
* the number of cards in each hand (and so in the stock, ``35 - 4n``, or in the undealt
  phase-B pile while a nine-card deal waits for its trump);
* what the plays prove (GJ-5.3 .. GJ-5.5): a normal card of another suit than the demand suit
  shows a void in it from then on, and, when it is not a trump either in a trump deal, a void
  in trumps; a card of the named suit given after a ``high`` joker lead was the player's
  highest of that suit, so the player holds none higher. A joker never proves anything (it is
  always legal); bids and the trump choice are free decisions and prove nothing.

The unknown cards are assigned to the other hands and the stock **uniformly** among the
assignments that respect every hand size and every proven void / ceiling: first by plain
rejection (a uniform shuffle, accepted when it breaks no constraint), and when that keeps
failing by exact sampling (count the completions class by class of cards allowed in the same
places, draw each class's split with probability proportional to its count). Each accepted
proposal of either sampler is uniform, so their mixture is too. The deck is then built to deal
exactly those hands (each seat's cards in random order over its positions) and the deal's public
actions are replayed through the engine, which re-checks every play.
"""

from __future__ import annotations

import math
import random
from typing import Any, Mapping

from ...cards import PACK36_JOKERS_MASK, SUIT_MASK, SUITS, card_id, cards_of
from ...errors import InconsistentView
from ...game import TERMINAL
from . import actions as A
from . import rules as R
from .state import MATCH_OVER

REJECTION_TRIES = 24


def _bits(codes: Any) -> int:
    m = 0
    for c in codes:
        m |= 1 << card_id(c)
    return m


def constraints(actions: list[int], forehand: int, trump: int, trumpable: bool) -> tuple[list[int], list[int]]:
    """Per seat: the cards it played this deal, and the cards it is proven not to hold now."""
    i = 0
    if actions and A.TRUMP_BASE <= actions[0] < A.TRUMP_BASE + 5:
        i = 1
    while i < len(actions) and actions[i] >= A.BID_BASE:
        i += 1
    played = [0, 0, 0, 0]
    forbid = [0, 0, 0, 0]
    trick: list[tuple[int, int, int, int]] = []
    seat = forehand
    demand = kind = -1
    trump_mask = R.STRAIN_MASK[trump]
    for a in actions[i:]:
        card, mode, named = A.ACTION_CARD[a], A.ACTION_MODE[a], A.ACTION_SUIT[a]
        played[seat] |= 1 << card
        if not trick:
            if card >= 36:
                demand, kind = named, (R.LOW_JOKER_LEAD if mode else R.HIGH_JOKER_LEAD)
            else:
                demand, kind = card // 9, R.NORMAL_LEAD
        elif card < 36:
            suit = card // 9
            if suit != demand:
                forbid[seat] |= SUIT_MASK[demand]  # void in the demand suit (GJ-5.3 step 2)
                if suit != trump:
                    forbid[seat] |= trump_mask  # and in trumps (GJ-5.3 step 3)
            elif kind == R.HIGH_JOKER_LEAD:
                forbid[seat] |= SUIT_MASK[suit] & ((1 << card) - 1)  # nothing higher (GJ-5.4)
        trick.append((seat, card, mode, named))
        seat = (seat + 1) & 3
        if len(trick) == 4:
            seat = R.trick_winner(trick, trump, trumpable)
            trick = []
    return played, forbid


def _count(classes: list[tuple[int, list[int]]], i: int, caps: tuple[int, ...], memo: dict) -> int:
    """Number of ways to place the cards of ``classes[i:]`` (``(allowed location bits, cards)``)
    into locations with exactly ``caps`` free places."""
    if i == len(classes):
        return 1 if not any(caps) else 0
    key = (i, caps)
    hit = memo.get(key)
    if hit is not None:
        return hit
    allowed, cards = classes[i]
    total = 0
    for split, ways in _splits(len(cards), allowed, caps):
        rest = tuple(c - d for c, d in zip(caps, split))
        total += ways * _count(classes, i + 1, rest, memo)
    memo[key] = total
    return total


def _splits(k: int, allowed: int, caps: tuple[int, ...]):
    """Every way to split ``k`` distinct cards over the allowed locations within ``caps``:
    ``(counts per location, number of card assignments)``."""
    locs = [l for l in range(len(caps)) if allowed >> l & 1]
    counts = [0] * len(caps)
    fact = math.factorial

    def rec(j: int, left: int):
        if j == len(locs) - 1:
            if left <= caps[locs[j]]:
                counts[locs[j]] = left
                ways = fact(k)
                for l in locs:
                    ways //= fact(counts[l])
                yield tuple(counts), ways
                counts[locs[j]] = 0
            return
        for d in range(min(left, caps[locs[j]]) + 1):
            counts[locs[j]] = d
            yield from rec(j + 1, left - d)
        counts[locs[j]] = 0

    if not locs:
        if k == 0:
            yield tuple(counts), 1
        return
    yield from rec(0, k)


def _exact_sample(unknown: list[int], forbid_at: list[int], caps: list[int], rng: random.Random) -> list[list[int]]:
    nloc = len(caps)
    by_class: dict[int, list[int]] = {}
    for c in unknown:
        allowed = 0
        for l in range(nloc):
            if not forbid_at[l] >> c & 1:
                allowed |= 1 << l
        by_class.setdefault(allowed, []).append(c)
    classes = sorted(by_class.items())  # deterministic order
    memo: dict = {}
    cap = tuple(caps)
    if _count(classes, 0, cap, memo) == 0:
        raise InconsistentView("the view admits no consistent deal")
    out: list[list[int]] = [[] for _ in range(nloc)]
    for i, (allowed, cards) in enumerate(classes):
        options = []
        weights = []
        for split, ways in _splits(len(cards), allowed, cap):
            rest = tuple(c - d for c, d in zip(cap, split))
            w = ways * _count(classes, i + 1, rest, memo)
            if w:
                options.append((split, rest))
                weights.append(w)
        r = rng.randrange(sum(weights))
        for (split, rest), w in zip(options, weights):
            if r < w:
                break
            r -= w
        cards = list(cards)
        rng.shuffle(cards)
        pos = 0
        for l, d in enumerate(split):
            out[l].extend(cards[pos:pos + d])
            pos += d
        cap = rest
    return out


def sample_locations(unknown: list[int], forbid_at: list[int], caps: list[int], rng: random.Random) -> list[list[int]]:
    """Assign ``unknown`` cards to locations with exactly ``caps`` places each, never a card to
    a location whose ``forbid_at`` mask holds it, uniformly among all such assignments."""
    if sum(caps) != len(unknown):
        raise InconsistentView("the view's hand sizes disagree with the unseen cards")
    cards = list(unknown)
    if not any(forbid_at[l] & _mask(unknown) for l in range(len(caps))):
        rng.shuffle(cards)
        return _slice(cards, caps)
    for _ in range(REJECTION_TRIES):
        rng.shuffle(cards)
        parts = _slice(cards, caps)
        if all(not forbid_at[l] & _mask(p) for l, p in enumerate(parts)):
            return parts
    return _exact_sample(unknown, forbid_at, caps, rng)


def _mask(cards: list[int]) -> int:
    m = 0
    for c in cards:
        m |= 1 << c
    return m


def _slice(cards: list[int], caps: list[int]) -> list[list[int]]:
    parts, pos = [], 0
    for k in caps:
        parts.append(cards[pos:pos + k])
        pos += k
    return parts


def determinize(game: Any, view: Mapping[str, Any], rng: random.Random):
    """A :class:`~.state.GeorgianJokerState` consistent with ``view`` (a ``state.view(seat)``),
    its hidden cards drawn uniformly (module docstring). Between deals nothing is hidden and
    the state is rebuilt exactly. The returned state's ``history()`` covers the current deal
    only (earlier deals enter as their results)."""
    if view.get("game") != game.id:  # another game's view failed deeper (KeyError) or as a spectator's
        raise InconsistentView(f"not a {game.id} view")
    seat = view.get("seat")
    if seat is None:
        raise InconsistentView("determinize needs a seat's view, not the public view")
    table = view["table"]
    state = game.new_state(table["options"], first_dealer=table["first_dealer"])
    results = [{k: (list(v) if isinstance(v, list) else v) for k, v in r.items()} for r in view["deal_results"]]
    state.results = results
    state.totals = list(view["totals"])
    state.dealer_seat = view["dealer"]
    state.prev_trick = _previous_deal_trick(view)
    phase = view["phase"]
    if phase == "match_over":
        state.started = len(results)
        state.phase, state.cur = MATCH_OVER, TERMINAL
        return state
    state.started = len(results)
    state.forehand = (state.dealer_seat + 1) & 3
    if phase == "deal_setup":
        return state
    n = table["cards_per_player"]
    forehand = table["forehand"]
    actions = [state.parse_action(a) for a in table["deal_actions"]]
    hand = _bits(view["hand"])
    sizes = list(view["hand_sizes"])
    indicator = table["trump_indicator"]
    ind = card_id(indicator) if indicator else -1
    if n <= 8:
        trump = 4 if ind >= 36 else ind // 9
    else:
        trump = -1 if table["trump"] is None else ("S", "H", "D", "C", "NT").index(table["trump"])
    played, forbid = constraints(actions, forehand, max(trump, 0), state.cfg.trumpable)
    known = hand | (1 << ind if ind >= 0 else 0)
    for p in played:
        known |= p
    unknown = cards_of(PACK36_JOKERS_MASK & ~known)
    others = [s for s in range(4) if s != seat]
    caps = [sizes[s] for s in others]
    forbid_at = [forbid[s] for s in others]
    if n <= 8:
        caps.append(35 - 4 * n)  # the stock
    elif phase == "trump_choice":
        caps.append(24)  # phase B, not dealt yet
    if len(caps) > 3:
        forbid_at.append(0)
    for _ in range(1000):
        parts = sample_locations(unknown, forbid_at, caps, rng)
        original = [0, 0, 0, 0]
        original[seat] = hand | played[seat]
        for s, part in zip(others, parts):
            original[s] = _mask(part) | played[s]
        rest = parts[3] if len(parts) > 3 else []
        deck = _build_deck(original, rest, ind, n, forehand, phase == "trump_choice", rng)
        candidate = state.clone()
        candidate.deal(deck)
        if _replay(candidate, actions):
            return candidate
    raise InconsistentView("no consistent deal found for this view")


def _previous_deal_trick(view: Mapping[str, Any]) -> tuple[int, tuple[int, ...]] | None:
    """The state's record of the previous deal's final trick, from ``last_trick`` while the
    view's deal has no complete trick (then ``last_trick`` is that trick). Its leader and plays
    only: the winner follows from that deal's trump. Its cards say nothing about the current
    deal, whose replay never sees them."""
    last = view.get("last_trick")
    if not last or any(view["tricks_taken"]):
        return None
    actions = []
    for p in last["plays"]:
        card = card_id(p["card"])
        if card < 36:
            actions.append(card)
        else:
            mode = A.MODES.index(p["joker_mode"])
            named = p.get("named_suit")
            actions.append(A.follow_joker_id(card, mode) if named is None
                           else A.lead_joker_id(card, mode, SUITS.index(named)))
    return last["plays"][0]["seat"], tuple(actions)


def _build_deck(original: list[int], rest: list[int], ind: int, n: int, forehand: int, before_trump: bool,
                rng: random.Random) -> list[int]:
    """A deck that deals ``original`` hands by GJ-3.2 / GJ-3.5 (each seat's cards in random
    order over its positions), then the indicator and the stock (or, before a nine-card trump
    choice, the undealt phase-B cards)."""
    deck = [-1] * 36
    per_seat = 3 if before_trump else n
    for i in range(4):
        cards = cards_of(original[(forehand + i) & 3])
        if len(cards) != per_seat:
            raise InconsistentView("the view's hand sizes disagree with its deal")
        rng.shuffle(cards)
        for r, c in enumerate(cards):
            deck[4 * r + i] = c
    pos = 4 * per_seat
    if ind >= 0:
        deck[pos] = ind
        pos += 1
    rest = list(rest)
    rng.shuffle(rest)
    deck[pos:] = rest
    return deck


def _replay(state: Any, actions: list[int]) -> bool:
    for a in actions:
        if a not in state.legal_ids():
            return False
        state.apply_id(a)
    return True


__all__ = ["determinize", "constraints", "sample_locations"]
