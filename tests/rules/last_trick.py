"""The ``last_trick`` of the views across deal boundaries, for every game (game.py's view keys).

``last_trick`` is the match's most recent complete trick with its winner: within a deal the
previous complete trick; from the end of a deal until the next deal's first trick is complete
(while waiting for the deck, and in the final views of the match) the final trick of the deal
that just ended; None after a thrown-in deal, never a trick of an earlier deal. A view whose
deal has no complete trick (``tricks_taken`` all 0) shows a previous deal's trick.

:func:`check_deal_boundaries` plays random matches through the rules API and checks that at
every step. The final trick it expects is rebuilt from outside the views that show it: its
plays from the trick in progress before the deal's final card plus that card's action, its
winner from the counts (``taken_after``: the deal's result or breakdown, against the
``tricks_taken`` before the final card); ``check_final`` adds a game's own checks (points,
value, ...).
"""

from __future__ import annotations

import random
from collections import Counter
from typing import Any, Callable

from engine_service.rules import CHANCE, TERMINAL, Game, State

from .playout import shuffled


def audiences(state: State) -> list[dict[str, Any]]:
    """Every audience's view: the spectator's, then each seat's."""
    return [state.public_view()] + [state.view(s) for s in range(state.game.num_seats)]


def action_card(action: str) -> str:
    """The card of a play action (``play:KS:bella``, ``play:X1:high``: ``KS``, ``X1``)."""
    return action.split(":")[1]


def check_deal_boundaries(game: Game, seed: int, options: dict | None, *,
                          play_of: Callable[[int, str], dict[str, Any]],
                          taken_after: Callable[[State], list[int]],
                          deal_has_no_trick: Callable[[dict[str, Any]], bool],
                          check_final: Callable[[State, dict, dict], None] | None = None,
                          determinize_every: int = 0, pass_bias: float = 0.0) -> Counter:
    """One random match (``seed``): ``last_trick`` in every audience's view at every step.

    ``play_of(seat, action)``: the play entry the views give the deal's final card;
    ``taken_after(state)``: per seat, the tricks of the deal that just ended (from its result
    or breakdown); ``deal_has_no_trick(view)``: the view's own record of its deal holds no
    complete trick (trick list, trick count, log); ``check_final(state, before, last)``: the
    game's own checks of the final trick ``last`` against the public view ``before`` its final
    card. Every ``determinize_every``-th deal start (when > 0): the seat's view is restored by
    determinization, previous trick included. ``pass_bias``: how often ``pass`` is chosen
    when legal (more thrown-in deals). Returns counts of what was seen."""
    rng = random.Random(seed)
    state = game.new_state(options or {}, first_dealer=rng.randrange(game.num_seats))
    seen: Counter = Counter()
    expected = None  # what last_trick must show while the deal has no complete trick
    for v in audiences(state):
        assert v["last_trick"] is None, "before the first trick of the match: none"
    while True:
        who = state.to_act()
        if who == TERMINAL:
            break
        if who == CHANCE:
            state.deal(shuffled(game, rng))
            seen["deals"] += 1
            for v in audiences(state):  # the next deck is dealt: still the previous deal's trick
                assert v["last_trick"] == expected, v["phase"]
                assert not any(v["tricks_taken"]) and v["trick"] == [] and deal_has_no_trick(v)
            if determinize_every and seen["deals"] % determinize_every == 0:
                seat = state.to_act()
                view = state.view(seat)
                assert game.determinize(view, random.Random(seed)).view(seat) == view
                if view["last_trick"] is not None:  # as a remote bot rebuilds it: plays only
                    bare = dict(view, last_trick={"plays": view["last_trick"]["plays"]})
                    sample = game.determinize(bare, random.Random(seed))
                    assert sample.view(seat)["last_trick"] == view["last_trick"]
                seen["determinized"] += 1
            continue
        before = state.public_view()
        results = len(state.deal_results())
        legal = state.legal_actions()
        action = "pass" if "pass" in legal and rng.random() < pass_bias else rng.choice(legal)
        state.apply(action, who)
        views = audiences(state)
        last = views[0]["last_trick"]
        assert all(v["last_trick"] == last for v in views), "one last_trick for every audience"
        if len(state.deal_results()) > results:  # this action completed the deal
            for v in views:
                assert not any(v["tricks_taken"]) and v["trick"] == [] and deal_has_no_trick(v)
            if state.deal_results()[-1].get("thrown_in"):
                assert last is None, "a thrown-in deal has no trick: no earlier deal's trick shows"
                seen["thrown_in"] += 1
            else:
                assert last is not None
                assert last["plays"] == before["trick"] + [play_of(who, action)]
                taken = taken_after(state)
                gained = [t - b for t, b in zip(taken, before["tricks_taken"])]
                assert sorted(gained) == [0] * (game.num_seats - 1) + [1]
                assert last["winner"] == gained.index(1), "the final trick's winner"
                if check_final is not None:
                    check_final(state, before, last)
                seen["final_tricks"] += 1
            expected = last
        elif any(views[0]["tricks_taken"]):
            if not any(before["tricks_taken"]):  # the deal's first trick: it replaces the previous
                assert last is not None and last["plays"] == before["trick"] + [play_of(who, action)]
                gained = [t - b for t, b in zip(views[0]["tricks_taken"], before["tricks_taken"])]
                assert last["winner"] == gained.index(1)
                seen["first_tricks"] += 1
            expected = None
        else:  # no complete trick in this deal yet: the previous deal's final trick
            assert last == expected
    for v in audiences(state):
        assert v["over"] and v["last_trick"] == expected and expected is not None, "the match's final trick"
    seen["matches"] += 1
    return seen
