"""Determinization: a full Klaberjass state sampled from what one seat may know (its view).

Search bots see only ``state.view(seat)``. :func:`determinize` rebuilds the match context the
view shows (options, first dealer, dealer, deal number, scores, earlier deal results) and
samples the hidden cards **uniformly among the deals consistent with the view**, by rejection:

1. Known cards: the seat's own original hand (its hand now, plus the cards it played, plus the
   dix it gave away, minus the turn-up it took), the turn-up, the information card, and the
   opponent's known cards (played, or identified by the exchange, the meld dialogue or a bella
   announcement made before the queen: ``table["revealed"]``).
2. Static constraints the public plays imply about the opponent's unknown cards, which have
   all been in his hand since the deal (KL-6.9): a failure to follow suit (no card of the led
   suit), a failure to trump (no trump), an under-trump on a trump lead under KL-6.4 (no trump
   that beats the led card). Unknown cards outside these constraints are proposed uniformly.
3. The proposal becomes a deck in the rulebook's dealing order (KL-2.4, KL-2.8); the deal's
   public actions are replayed through the rules (every action must be legal for its seat) and
   the replayed view must equal the given one (meld dialogue, bella, legal actions...);
   otherwise the proposal is rejected and a new one drawn.

Every consistent deck has the same proposal probability and rejection keeps exactly the
consistent ones, so the accepted deck is uniform among them. Only ``view`` and ``rng`` are read.
"""

from __future__ import annotations

import random
from typing import Any, Mapping

from ...cards import card_id
from ...errors import InconsistentView
from ...game import TERMINAL
from ...views import view_agrees
from .state import P_OVER, KlaberjassState
from .tables import BEATS_AS_TRUMP, BELLA, PACK, SEVEN, TAKE

MAX_ATTEMPTS = 20_000

#: No consistent deal was found (a view that no deal can produce, or a pathological one).
DeterminizationError = InconsistentView


def _ids(codes) -> set[int]:
    return {card_id(c) for c in codes}


def _first_deal_slots(packet: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """Deck positions of the first deal: (first-served player's six, the other's six)."""
    if packet == 3:
        return (0, 1, 2, 6, 7, 8), (3, 4, 5, 9, 10, 11)
    return (0, 1, 4, 5, 8, 9), (2, 3, 6, 7, 10, 11)


def _context(game, view: Mapping[str, Any]) -> KlaberjassState:
    """A state at the start of the view's deal: options, seats, scores, earlier results."""
    table = view["table"]
    st = game.new_state(table["options"], first_dealer=table["first_dealer"])
    st._dealer = view["dealer"]
    st._elder = 1 - view["dealer"]
    st._totals = list(view["totals"])
    results = [{k: v[:] if isinstance(v, list) else v for k, v in r.items()} for r in view["deal_results"]]
    st._results = results
    # Earlier deals' breakdowns are not part of a view: only the last one (previous_deal) is.
    details = [{"thrown_in": r["thrown_in"]} for r in results[:-1]]
    if results:
        details.append(dict(table["previous_deal"]))
    st._details = details
    st._winners = list(view["winners"])
    st._prev_trick = _previous_deal_trick(view)
    return st


def _previous_deal_trick(view: Mapping[str, Any]) -> tuple[int, int] | None:
    """The state's record of the previous deal's final trick, from ``last_trick`` while the
    view's deal has no complete trick (then ``last_trick`` is that trick, or None after a
    thrown-in deal). Its plays only: the winner and points follow from that deal's trump. Its
    cards say nothing about the current deal, whose replay never sees them."""
    last = view.get("last_trick")
    if not last or any(view["tricks_taken"]):
        return None
    return tuple(p["seat"] << 8 | (card_id(p["card"]) + (BELLA if p.get("announce") == "bella" else 0))
                 for p in last["plays"])


def determinize(game, view: Mapping[str, Any], rng: random.Random) -> KlaberjassState:
    if view.get("game") != game.id:  # another game's view failed deeper (KeyError) or as a spectator's
        raise InconsistentView(f"not a {game.id} view")
    seat = view.get("seat")
    if seat not in (0, 1):
        raise InconsistentView("determinize needs a seat's view (state.view(seat)), not a public view")
    st = _context(game, view)
    if view["phase"] == "over":
        st._phase = P_OVER
        st._to_act = TERMINAL
        return st
    if view["phase"] == "dealing":
        return st
    table = view["table"]
    cfg = st._cfg
    opp = 1 - seat
    dealer = view["dealer"]
    elder = 1 - dealer
    actions = [(d["seat"], st.parse_action(d["action"])) for d in table["deal_actions"]]

    exchange = table["exchange"]
    turn0 = card_id(exchange["takes"] if exchange else table["turn_up"])
    info = card_id(table["info_card"]) if table["info_card"] else -1
    trump = "SHDC".index(table["trump"]) if table["trump"] else -1
    second_dealt = trump >= 0
    dix = trump * 9 + SEVEN if second_dealt else -1

    # Replay the public plays: who played what, and what the opponent's plays imply.
    played = ([], [])
    excluded = 0  # cards the opponent cannot hold (among his unknown cards)
    lead = -1
    for s, a in actions:
        if a >= TAKE:
            continue
        c = a - BELLA if a >= BELLA else a
        played[s].append(c)
        if lead < 0:
            lead = c
            continue
        if s == opp:
            ls, cs = lead // 9, c // 9
            if cs != ls:
                excluded |= 0x1FF << (9 * ls)  # KL-6.3: void in the led suit
                if cs != trump:
                    excluded |= 0x1FF << (9 * trump)  # KL-6.5: no trump either
            elif ls == trump and cfg.must_overtrump and not BEATS_AS_TRUMP[lead] >> c & 1:
                excluded |= BEATS_AS_TRUMP[lead]  # KL-6.4: no trump beating the lead
        lead = -1

    own_now = _ids(view["hand"])
    own = own_now | set(played[seat])
    opp_known = set(played[opp]) | _ids(table["revealed"][opp])
    if exchange is not None:
        giver = exchange["seat"]
        target = own if giver == seat else opp_known
        target.add(dix)
        target.discard(turn0)
    known = own | opp_known | {turn0} | ({info} if info >= 0 else set())
    unknown = [c for c in PACK if c not in known]
    size = 9 if second_dealt else 6
    k = size - len(opp_known)
    allowed = [c for c in unknown if not excluded >> c & 1]
    if k < 0 or len(allowed) < k:
        raise DeterminizationError("the view is inconsistent: the opponent cannot hold enough cards")

    first = elder if cfg.elder_served_first else dealer
    slots_first, slots_second = _first_deal_slots(cfg.packet)
    first_slots = {first: slots_first, 1 - first: slots_second}
    second_slots = {first: (13, 15, 17), 1 - first: (14, 16, 18)}
    own_list = sorted(own)
    opp_known_list = sorted(opp_known)

    for _ in range(MAX_ATTEMPTS):
        opp_hidden = rng.sample(allowed, k)
        taken = set(opp_hidden)
        stock = [c for c in unknown if c not in taken]
        rng.shuffle(stock)
        hands = {seat: own_list[:], opp: opp_known_list + opp_hidden}
        deck = [-1] * 32
        deck[12] = turn0
        for s in (0, 1):
            cards = hands[s]
            rng.shuffle(cards)
            for pos, c in zip(first_slots[s], cards[:6]):
                deck[pos] = c
            if second_dealt:
                for pos, c in zip(second_slots[s], cards[6:]):
                    deck[pos] = c
        if second_dealt:
            deck[31] = info
            free = list(range(19, 31))
        else:
            free = list(range(13, 32))
        for pos, c in zip(free, stock):
            deck[pos] = c
        sample = _replay(st, tuple(deck), actions)
        if sample is not None and view_agrees(sample.view(seat), view):
            return sample
    raise DeterminizationError(f"no consistent deal found in {MAX_ATTEMPTS} proposals")


def _replay(context: KlaberjassState, deck: tuple[int, ...], actions) -> KlaberjassState | None:
    """The context state dealt ``deck`` with the deal's actions replayed; None if one of them
    is not legal for its seat (the proposal contradicts the public record)."""
    st = context.clone()
    st._deal(deck)
    st._history = (None, ("deal", deck))
    for s, a in actions:
        if st.to_act() != s or a not in st.legal_ids():
            return None
        st.apply_id(a)
    return st
