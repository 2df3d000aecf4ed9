"""Determinization: a full state drawn uniformly among the deals consistent with one seat's view.

The search bots see only ``state.view(seat)``. :func:`determinize` rebuilds the match context
from it (options, first declarer, deal number, declarer, totals, finished deals), places every
card the seat knows at its place in the deck (its first three, the rest of its original hand,
all up cards, its own former down cards under the columns they came from), draws the unknown
cards, deals that deck and replays the deal's public actions (which must all be legal again).

Which deals are consistent? Every unknown card lies in one of these slot *groups*:

* the other player's original hand (8 deck positions: its first three and its phase-B five);
* per column play of the other player, the down card(s) it moved to its hand (1, or 2 by the
  clearing rule JJK-4.3), entering the hand at that action;
* the down cards still on the table, both players' (the seat does not know its own, JJK-9.4).

Cards the other player played from its hand (known cards, unknown origin) also lie in its hand
groups. The rules constrain only the other player's *hand* at the moments it followed (JJK-5.3,
5.4; JJK-5.1: down cards never count): following a normal lead of suit L with another suit
shows it had no L (and, discarding, no trump); following a joker lead naming Q with a lower Q
shows it had no higher Q. A card c therefore fits a hand group entered at action e iff it was
not excluded at any following action t with e < t < x(c), where x(c) is when c was played
(infinity if not yet): with ``L(c)`` the last such t before x(c), iff ``L(c) <= e < x(c)``.
Groups ordered by entry time make each card's allowed groups an interval, the table group
last (open to the unplayed cards only). Counting the assignments of cards to groups with these
intervals and the group sizes is a tiny dynamic programme over "open cards by the last group
they may use"; drawing group by group with probabilities proportional to the completion
counts, and the cards of one class uniformly, samples every consistent deal with equal
probability (the within-group order is a uniform shuffle: positions in a group are
indistinguishable to the view). The replay then re-checks every action's legality.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from functools import lru_cache
from math import comb
from typing import Any, Iterator, Mapping

from ...cards import CODES, STRAINS, SUIT_MASK, card_id
from ...errors import InconsistentView
from ...game import TERMINAL
from .state import OVER, JapaneseJokerState
from .tables import FOLLOWER_WINS, NUM_LEAD_KEYS

INFINITY = 10 ** 9




def determinize(game, view: Mapping[str, Any], rng: random.Random) -> JapaneseJokerState:
    if view.get("game") != game.id:  # another game's view failed deeper (KeyError) or as a spectator's
        raise InconsistentView(f"not a {game.id} view")
    seat = view.get("seat")
    if seat not in (0, 1):
        raise InconsistentView("determinize needs a seat's view (a spectator view has no seat)")
    table = view["table"]
    st = game.new_state(table["options"], first_dealer=table["first_declarer"])
    st._declarer = view["dealer"]
    st._totals = list(view["totals"])
    st._results = tuple({"trump": r["trump"], "taken": list(r["taken"]), "scores": list(r["scores"])}
                        for r in view["deal_results"])
    st._last = _previous_deal_trick(view)
    phase = view["phase"]
    if phase not in ("trump_choice", "playing"):
        if phase == "over":
            st._phase = OVER
            st._to_act = TERMINAL
            st._winners = tuple(view["winners"])
        return st
    st.deal(_sample_deck(game, view, seat, rng))
    for entry in table["deal_actions"]:
        a = st.parse_action(entry["action"])
        if st.to_act() != entry["seat"] or a not in st.legal_ids():
            raise InconsistentView(f"action {entry['action']} of seat {entry['seat']} does not replay")
        st.apply_id(a)
    held = 0
    for c in view["hand"]:
        held |= 1 << card_id(c)
    if held != st.zones()[f"hand{seat}"] or held.bit_count() != len(view["hand"]):
        raise InconsistentView("the seat's hand is not what its dealt cards and the actions leave")
    return st


def _previous_deal_trick(view: Mapping[str, Any]) -> tuple[int, int, int, int, int] | None:
    """The state's record of the previous deal's final trick, from ``last_trick`` while the
    view's deal has no complete trick (then ``last_trick`` is that trick; a complete trick of
    the deal replaces it in the replay). Its cards say nothing about the current deal, whose
    replay never sees them. A view rebuilt without the winner: JJK-6 by that deal's trump."""
    last = view.get("last_trick")
    if not last or any(view["tricks_taken"]):
        return None
    lead, follow = last["plays"]
    leader, lcard, fcard = lead["seat"], card_id(lead["card"]), card_id(follow["card"])
    named = lead.get("named_suit")
    lkey = 36 + "SHDC".index(named) if named else lcard
    winner = last.get("winner")
    if winner is None:
        trump = STRAINS.index(view["deal_results"][-1]["trump"])
        winner = 1 - leader if FOLLOWER_WINS[(trump * NUM_LEAD_KEYS + lkey) * 38 + fcard] else leader
    return leader, lcard, lkey, fcard, winner


def _sample_deck(game, view: Mapping[str, Any], seat: int, rng: random.Random) -> list[int]:
    if view["phase"] == "trump_choice":
        deck = [None] * 36
        k = 0 if seat == view["dealer"] else 1
        mine = [card_id(c) for c in view["table"]["first_three"]]
        for i, c in enumerate(mine):
            deck[2 * i + k] = c
        rest = [c for c in game.pack if c not in mine]
        rng.shuffle(rest)
        free = [i for i in range(36) if deck[i] is None]
        for pos, c in zip(free, rest):
            deck[pos] = c
        return deck  # type: ignore[return-value]
    model = consistency_model(game, view)
    deck = list(model.deck)
    chosen = _sample_groups([len(slots) for _, slots in model.groups], model.cards, rng)
    for (_, slots), group_cards in zip(model.groups, chosen):
        rng.shuffle(group_cards)
        for pos, c in zip(slots, group_cards):
            deck[pos] = c
    return deck  # type: ignore[return-value]


@dataclass(frozen=True)
class Model:
    """What a seat's view says about the deck of the deal in play.

    ``deck``: the cards the seat knows the place of (None elsewhere); ``groups``: the slot
    groups ``(entry action index, deck positions)``, the other player's original hand first
    (entry -1), its moved down cards by the action that moved them, the down cards on the table
    last (entry ``INFINITY``); ``cards``: every card not in ``deck`` with the interval ``(lo,
    hi)`` of groups it may occupy."""

    deck: tuple[int | None, ...]
    groups: tuple[tuple[int, tuple[int, ...]], ...]
    cards: tuple[tuple[int, int, int], ...]


def consistency_model(game, view: Mapping[str, Any]) -> Model:
    """The :class:`Model` of a seat's view during play (see the module docstring)."""
    seat = view["seat"]
    table = view["table"]
    declarer = view["dealer"]
    k_me = 0 if seat == declarer else 1
    k_op = 1 - k_me
    deck: list[int | None] = [None] * 36
    known: set[int] = set()

    def put(pos: int, card: int) -> None:
        if deck[pos] is not None or card in known:
            raise InconsistentView(f"card {CODES[card]} placed twice")
        deck[pos] = card
        known.add(card)

    first_three = [card_id(c) for c in table["first_three"]]
    for i, c in enumerate(first_three):
        put(2 * i + k_me, c)
    op = 1 - seat
    cols = table["columns"]
    up_index = [{card_id(col["up"]): i for i, col in enumerate(cols[s])} for s in (0, 1)]
    for i, col in enumerate(cols[seat]):
        put(26 + 2 * i + k_me, card_id(col["up"]))
    for i, col in enumerate(cols[op]):
        put(26 + 2 * i + k_op, card_id(col["up"]))

    trump = -1
    my_from_hand: list[int] = []
    my_moved: set[int] = set()
    op_from_hand: list[tuple[int, int]] = []  # (card, action index)
    op_public_moved: set[int] = set()
    groups: list[tuple[int, list[int]]] = [(-1, [2 * i + k_op for i in range(3)]
                                            + [6 + 2 * i + k_op for i in range(5)])]
    forbidden: list[tuple[int, int]] = []  # (action index, mask) when the other player followed
    plays = 0
    lead: tuple[int, int] = (-1, -1)
    for t, e in enumerate(table["deal_actions"]):
        parts = e["action"].split(":")
        if parts[0] == "trump":
            trump = ("S", "H", "D", "C", "NT").index(parts[1])
            continue
        card = card_id(parts[1])
        who = e["seat"]
        if e.get("from") == "table":
            col = up_index[who][card]
            other = [up_index[who][card_id(c)] for c in e["moved_public"]]
            if who == seat:
                moved = [card_id(c) for c in e["moved_cards"]]
                for c, i in zip(moved, [col] + other):
                    put(16 + 2 * i + k_me, c)
                my_moved.update(moved)
            else:
                groups.append((t, [16 + 2 * i + k_op for i in [col] + other]))
                op_public_moved.update(card_id(c) for c in e["moved_public"])
        elif who == seat:
            my_from_hand.append(card)
        else:
            op_from_hand.append((card, t))
        if plays % 2 == 0:
            lead = (card, ("S", "H", "D", "C").index(parts[2]) if len(parts) == 3 else -1)
        elif who == op:
            mask = _excluded(lead, card, trump)
            if mask:
                forbidden.append((t, mask))
        plays += 1

    # the seat's own original hand: what it holds or played from the hand, minus what reached it
    my_cols_up = {card_id(col["up"]) for col in cols[seat]}
    original = ({card_id(c) for c in view["hand"]} | set(my_from_hand)) - my_moved - my_cols_up
    five = sorted(original - set(first_three))
    if len(five) != 5 or not set(first_three) <= original:
        raise InconsistentView("the seat's hand does not add up to its dealt cards")
    for i, c in enumerate(five):
        put(6 + 2 * i + k_me, c)

    table_slots = [16 + 2 * i + k_me for i, col in enumerate(cols[seat]) if col["on_table"]]
    table_slots += [16 + 2 * i + k_op for i, col in enumerate(cols[op]) if col["on_table"]]
    groups.append((INFINITY, table_slots))
    played_from_hand = [(c, t) for c, t in op_from_hand if c not in op_public_moved]
    for c, _ in played_from_hand:
        known.add(c)
    unknown = [c for c in game.pack if c not in known]
    candidates = played_from_hand + [(c, INFINITY) for c in unknown]
    if len(candidates) != sum(len(slots) for _, slots in groups):
        raise InconsistentView("the number of unknown cards does not match the free places")

    cards = []
    last = len(groups) - 1
    for c, x in candidates:
        bit = 1 << c
        excluded_at = max((t for t, m in forbidden if m & bit and t < x), default=-1)
        lo = next(g for g, (entry, _) in enumerate(groups) if entry >= excluded_at)
        hi = last if x == INFINITY else max((g for g, (entry, _) in enumerate(groups[:last]) if entry < x),
                                            default=-1)
        if lo > hi:
            raise InconsistentView(f"no place fits {CODES[c]}")
        cards.append((c, lo, hi))
    return Model(tuple(deck), tuple((e, tuple(slots)) for e, slots in groups), tuple(cards))


def _excluded(lead: tuple[int, int], card: int, trump: int) -> int:
    """Cards the follower cannot have held in hand, given its legal follow ``card``."""
    lead_card, named = lead
    if card >= 36:
        return 0  # a joker is always legal (JJK-5.3.1, 5.4.1)
    suit = card // 9
    trump_mask = SUIT_MASK[trump] if 0 <= trump < 4 else 0
    if lead_card < 36:
        led = lead_card // 9
        if suit == led:
            return 0
        return SUIT_MASK[led] if suit == trump else SUIT_MASK[led] | trump_mask
    if suit == named:  # the highest available card of the named suit (JJK-5.4.2)
        return SUIT_MASK[named] & ((1 << card) - 1)
    return SUIT_MASK[named] if suit == trump else SUIT_MASK[named] | trump_mask


def _choices(counts: tuple[int, ...], g: int, cap: int) -> Iterator[tuple[int, ...]]:
    """Ways to take ``cap`` open cards at group ``g``: all those that must go by ``g``, the
    rest from later classes (as counts per class)."""
    if any(counts[:g]):
        return
    need = cap - counts[g]
    later = [h for h in range(g + 1, len(counts)) if counts[h]]
    room = [0] * (len(later) + 1)  # open cards in later[i:], to prune early
    for i in range(len(later) - 1, -1, -1):
        room[i] = room[i + 1] + counts[later[i]]
    if need < 0 or room[0] < need:
        return
    acc = [0] * len(counts)
    acc[g] = counts[g]

    def rec(i: int, left: int) -> Iterator[tuple[int, ...]]:
        if left == 0:
            yield tuple(acc)
            return
        if i == len(later) or room[i] < left:
            return
        h = later[i]
        for k in range(min(left, counts[h]), -1, -1):
            acc[h] = k
            yield from rec(i + 1, left - k)
        acc[h] = 0

    yield from rec(0, need)


Options = tuple[tuple[int, tuple[int, ...], tuple[int, ...]], ...]


@lru_cache(maxsize=1 << 16)
def _options(caps: tuple[int, ...], new_counts: tuple[tuple[int, ...], ...], g: int,
             counts: tuple[int, ...]) -> Options:
    """The choices at group ``g`` given the open cards by class (new cards included), each
    with its weight: the ways to pick those cards times the completions after them."""
    n = len(caps)
    out = []
    for k in _choices(counts, g, caps[g]):
        ways = 1
        for h in range(g, n):
            if k[h]:
                ways *= comb(counts[h], k[h])
        rest = tuple(counts[h] - k[h] for h in range(n))
        w = ways * _completions(caps, new_counts, g + 1, rest)
        if w:
            out.append((w, k, rest))
    return tuple(out)


@lru_cache(maxsize=1 << 16)
def _completions(caps: tuple[int, ...], new_counts: tuple[tuple[int, ...], ...], g: int,
                 open_counts: tuple[int, ...]) -> int:
    """Assignments of the open cards and the cards of groups >= g to groups g, g+1, ..."""
    if g == len(caps):
        return 0 if any(open_counts) else 1
    counts = tuple(a + b for a, b in zip(open_counts, new_counts[g]))
    return sum(w for w, _, _ in _options(caps, new_counts, g, counts))


def _sample_groups(caps: list[int], cards: list[tuple[int, int, int]],
                   rng: random.Random) -> list[list[int]]:
    """Uniform assignment of cards (with allowed group intervals [lo, hi]) to groups of sizes
    ``caps``; returns the cards of each group. The counting tables are cached by shape, so
    repeated samples of one view only draw."""
    n = len(caps)
    new: list[list[list[int]]] = [[[] for _ in range(n)] for _ in range(n)]
    for c, lo, hi in cards:
        new[lo][hi].append(c)
    shape = tuple(caps)
    new_counts = tuple(tuple(len(new[g][h]) for h in range(n)) for g in range(n))
    if _completions(shape, new_counts, 0, (0,) * n) == 0:
        raise InconsistentView("no deal is consistent with this view")
    open_cards: list[list[int]] = [[] for _ in range(n)]
    counts = (0,) * n
    out: list[list[int]] = []
    for g in range(n):
        for h in range(n):
            open_cards[h].extend(new[g][h])
        counts = tuple(a + b for a, b in zip(counts, new_counts[g]))
        options = _options(shape, new_counts, g, counts)
        r = rng.randrange(sum(w for w, _, _ in options))
        for w, k, rest in options:
            if r < w:
                break
            r -= w
        group: list[int] = []
        for h in range(g, n):
            if k[h]:
                picked = rng.sample(open_cards[h], k[h])
                group.extend(picked)
                open_cards[h] = [c for c in open_cards[h] if c not in picked]
        out.append(group)
        counts = rest
    return out
