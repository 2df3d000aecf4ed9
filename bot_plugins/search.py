"""The ``search`` bot: single-observer Information Set Monte Carlo Tree Search (Cowling, Powley
and Whitehouse 2012) over determinizations of the seat's view, for every game.

Why ISMCTS: it needs no perfect-information solver (there is none for these games in Python
that is fast enough), searches the bidding, trump and exchange decisions with the same code as
the card play, and, unlike plain PIMC, shares one tree across all sampled worlds, so opponents'
replies are chosen by their own statistics rather than with knowledge of our hand.

One decision:

1. ``game.determinize(view, rng)`` samples ``worlds`` full states consistent with what the seat
   knows (each game's own sampler: hand sizes, proven voids, public plays);
2. each iteration clones the next world, descends the tree by UCB1 with availability counts
   among the actions legal *in that world* (opponents' legal sets differ between worlds),
   expands one action, and finishes the deal with the rollout policy;
3. the deal's score for every seat (:mod:`bot_plugins.scoring`) is backed up, each node
   counting the score of the seat that chose its action relative to the other seats;
4. the answer is the most visited legal root action.

The rollout policy (``SearchParams.rollout``) runs on the fast path only (``legal_ids`` /
``apply_id``, plus the rules core's pure rollout helpers ``last_to_trick``, ``winning_ids``,
``trick_rank`` and, in Georgian Joker and Jo-Jotte, ``wants_trick``):

* ``greedy`` (:func:`greedy_playout`): every action is uniformly random except the last card
  to a trick, which (but for an ``epsilon`` = 10% of random choices) follows a rule: a seat
  that wants the trick never declines it when it can take it, and takes it with its cheapest
  winning card; when nothing wins it throws its cheapest card. Only a seat that has already
  taken its bid in Georgian Joker (GJ-7), or either player of a Jo-Jotte nullo (JJ-4.3,
  JJ-9.7: the nullo player's opponent scores for the tricks the nullo player wins), does not
  want the trick: it plays its dearest losing card instead. Bidding, trump choice and leads
  stay random. It costs 10-20% more CPU per iteration than ``random``.
* ``random``: uniformly random legal actions (the policy before ``greedy``; the bot
  ``search_random`` plays it, for comparison in the arena).

Exceptions, chosen by flat Monte Carlo instead (:meth:`SearchBot._by_playouts`): the bid of a
Georgian Joker deal of at most ``SMALL_DEAL_CARDS`` cards per player, and Jo-Jotte's double,
redouble and nullo decisions (``PLAYOUT_DECISIONS``). Every legal action is tried in the same
sampled worlds, the deal is finished with the ``heuristic`` bot's play for every seat, and the
action with the best mean relative score wins.
The Klaberjass auction can go the same way (``SearchParams.kl_flat_auction``, ``KL_AUCTION``),
but measured no better than the tree's and is off by default (docs/bots.md).

``SearchParams.gj_bid_inference`` (off in ``SearchParams()``; on in the ``search`` bot's Georgian
Joker, ``GAME_PARAMS``) samples the Georgian Joker worlds, of the tree
and of the flat bids alike, by importance resampling on the opponents' bids
(:mod:`bot_plugins.bid_inference`): ``worlds * inference_candidates`` candidates from
``determinize``, drawn within ``inference_time`` of the decision's time, each weighted by how
likely a bid model would have bid what each opponent bid with the bid-time hand the world gives
it, and ``worlds`` of them kept by weight; ``inference_per_size`` takes the bid model's constants
fitted for the deal's size instead of the one model's.

``DEFAULT_ROLLOUT`` holds each game's default, chosen by arena measurement (docs/bots.md). The
search stops after ``iterations`` iterations or when the request's budget is nearly spent,
whichever comes first, so with enough time it is deterministic for a given seed. A decision
with one legal action is answered at once.
"""

from __future__ import annotations

import math
import random
import time
from dataclasses import dataclass, replace
from typing import Any

from engine_service.plugins import BotSpec, DecisionRequest, hookimpl
from engine_service.rules import InconsistentView, get_game

from .scoring import deal_scores, relative

#: Score scale per game, so that UCB's exploration constant means the same everywhere: about
#: the spread of one deal's relative score.
SCALE = {"klaberjass": 160.0, "jojotte": 160.0, "georgian_joker": 300.0, "japanese_joker": 2.0}


#: Games whose deal score depends on *which* tricks a seat takes (an exact bid in Georgian
#: Joker, a nullo undertaking in Jo-Jotte): their states answer ``wants_trick(seat)``.
WANTS_TRICK = frozenset({"georgian_joker", "jojotte"})
#: The rollout policy each game searches with unless ``SearchParams.rollout`` says otherwise:
#: ``greedy`` where the arena did not find it weaker than ``random`` head-to-head: every game
#: (docs/bots.md; Jo-Jotte once the nullo declarer ducked as he should).
DEFAULT_ROLLOUT = {"klaberjass": "greedy", "jojotte": "greedy", "georgian_joker": "greedy",
                   "japanese_joker": "greedy"}
ROLLOUTS = ("greedy", "random")
#: Georgian Joker deals of at most this many cards per player (GJ-2.4: deals 1-3 and 18-20 of
#: the standard schedule) bid by :meth:`SearchBot._by_playouts` rather than by the tree. Not 4:
#: the four-card deals' flat bids lost to the tree's (arena, 1,200 boards of deals 4 and 17,
#: seed 1: -3.41 [-6.32, -0.49] a board) and took up to 178 ms of CPU, the whole budget.
SMALL_DEAL_CARDS = 3
#: Jo-Jotte decisions chosen by :meth:`SearchBot._by_playouts`: a legal list holding one of these
#: (the answer to a bid: double or no-trump overcall, JJ-3.3; the redouble; the nullo window,
#: JJ-4.3).
PLAYOUT_DECISIONS = frozenset({"double", "redouble", "nullo"})
#: Klaberjass auction decisions chosen by :meth:`SearchBot._by_playouts` when
#: ``SearchParams.kl_flat_auction`` is set (not by default): a legal list holding ``take``
#: (round 1, KL-3.1), a ``name:`` call (round 2), ``schmeiss`` or the answer to it, ``accept`` /
#: ``refuse`` (option ``kl_schmeiss``, KL-A7). Off because it measured no better than the
#: tree's auction (arena, 2,000 boards, 2026-12-04: -0.28 a board, 95% CI about [-1.7, +1.2];
#: docs/bots.md, "Decisions by flat playouts").
KL_AUCTION = frozenset({"take", "schmeiss", "accept", "refuse"})


def kl_auction(legal: Any) -> bool:
    """Whether ``legal`` is a Klaberjass auction decision (take / name / schmeiss / accept /
    refuse / pass)."""
    return any(a in KL_AUCTION or a.startswith("name:") for a in legal)


@dataclass(frozen=True)
class SearchParams:
    """The search's knobs (docs/bots.md, "The first-party bots"). ``iterations`` and ``worlds`` bound
    the tree (worlds sampled once a decision, iterations cycling through them);
    ``exploration`` is UCB's constant ``c`` in ``mean + c * sqrt(ln(avail) / visits)``, the
    mean a relative deal score divided by the game's :data:`SCALE`; ``time_fraction`` of the
    request's remaining budget stops the tree early."""

    iterations: int = 600
    worlds: int = 24
    exploration: float = 0.7
    time_fraction: float = 0.85  # of the request's remaining budget
    rollout: str | None = None  # "greedy", "random"; None: the game's DEFAULT_ROLLOUT
    epsilon: float = 0.1  # greedy: chance that the last card to a trick is random anyway
    kl_flat_auction: bool = False  # Klaberjass auction by flat playouts (KL_AUCTION; measured, not better)
    # Georgian Joker worlds resampled by the opponents' bids (bot_plugins.bid_inference). Off
    # here: the one model measured +1.15 a board, 95% CI [-0.30, +2.60] (arena, 5,000 boards,
    # seeds 1-4, 2026-12-04); the ``search`` bot turns it on with the per-size model and 8
    # candidates (GAME_PARAMS; docs/bots.md, "Bid inference in Georgian Joker")
    gj_bid_inference: bool = False
    inference_candidates: int = 4  # candidate worlds drawn per world kept
    inference_time: float = 0.25  # at most this share of the decision's time for drawing them
    # The bid model's constants fitted per deal size (bid_inference.SIZE_SHAPES) rather than one
    # model for every size; only with gj_bid_inference
    inference_per_size: bool = False


class _Node:
    __slots__ = ("children", "visits", "avail", "total", "player")

    def __init__(self, player: int) -> None:
        self.children: dict[int, _Node] = {}
        self.visits = 0
        self.avail = 0
        self.total = 0.0
        self.player = player


class SearchBot:
    def __init__(self, game_id: str, params: SearchParams = SearchParams()) -> None:
        self.game_id = game_id
        self.game = get_game(game_id)
        self.params = params
        self.scale = SCALE.get(game_id, 100.0)
        rollout = params.rollout or DEFAULT_ROLLOUT.get(game_id, "random")
        if rollout not in ROLLOUTS:
            raise ValueError(f"unknown rollout policy {rollout!r} (one of {', '.join(ROLLOUTS)})")
        self.rollout = rollout
        self._wants = game_id in WANTS_TRICK
        self.last_iterations = 0  # of the last decision's tree search, 0 without one (for tests and tuning)
        self.fallbacks = 0  # decisions answered by the heuristic because no world was sampled

    def decide(self, request: DecisionRequest) -> str:
        legal = request.legal
        if len(legal) == 1:
            return legal[0]
        rng = request.rng
        stop_at = time.monotonic() + max(0.0, request.time_left()) * self.params.time_fraction
        flat = self._by_playouts(request, stop_at)
        if flat is not None:
            self.last_iterations = 0  # no tree was searched
            return flat
        worlds = self._worlds(request.view, rng, stop_at)
        if not worlds:  # the view admits no sampled deal (see _worlds): play by hand instead
            self.fallbacks += 1
            from .heuristic import make as make_heuristic
            return make_heuristic(self.game_id).decide(request)
        seat = request.seat
        n = self.game.num_seats
        root = _Node(seat)
        done_before = len(request.view.get("deal_results") or ())
        legal_set = set(legal)
        c = self.params.exploration
        greedy = self.rollout == "greedy"
        eps = self.params.epsilon
        wants = self._wants
        it = 0
        while it < self.params.iterations:
            if it and time.monotonic() >= stop_at:
                break
            state = worlds[it % len(worlds)].clone()
            it += 1
            node = root
            path = [root]
            while True:
                who = state.to_act()
                if who < 0:
                    break
                ids = state.legal_ids()
                children = node.children
                untried = [a for a in ids if a not in children]
                if untried:
                    a = untried[rng.randrange(len(untried))] if len(untried) > 1 else untried[0]
                    child = _Node(who)
                    children[a] = child
                    for b in ids:
                        ch = children.get(b)
                        if ch is not None:
                            ch.avail += 1
                    state.apply_id(a)
                    path.append(child)
                    break
                best_a, best_v = ids[0], -math.inf
                for b in ids:
                    ch = children[b]
                    ch.avail += 1
                    v = ch.total / ch.visits + c * math.sqrt(math.log(ch.avail) / ch.visits)
                    if v > best_v:
                        best_a, best_v = b, v
                state.apply_id(best_a)
                node = children[best_a]
                path.append(node)
            if greedy:
                greedy_playout(state, rng, eps, wants)
            else:
                while state.to_act() >= 0:
                    ids = state.legal_ids()
                    state.apply_id(ids[rng.randrange(len(ids))] if len(ids) > 1 else ids[0])
            results = state.deal_results()
            if len(results) <= done_before:
                continue  # cannot happen for a consistent world; never learn from it
            scores = deal_scores(self.game_id, results[done_before], n)
            rel = [relative(scores, s) / self.scale for s in range(n)]
            for nd in path[1:]:
                nd.visits += 1
                nd.total += rel[nd.player]
        self.last_iterations = it
        probe = worlds[0]
        best, best_visits = None, -1
        for a, child in root.children.items():
            text = probe.action_str(a)
            if text in legal_set and child.visits > best_visits:
                best, best_visits = text, child.visits
        return best if best is not None else legal[0]

    def _by_playouts(self, request: DecisionRequest, stop_at: float) -> str | None:
        """The answer of a decision the tree is known to get wrong, by flat Monte Carlo, or None
        when the decision is not one of them (the tree search answers):

        * the bid of a small Georgian Joker deal (at most ``SMALL_DEAL_CARDS`` cards per
          player). With one to three cards a bid is decided by whether one or two cards take
          their trick, and the scores around it are lopsided: a made bid of 1 scores 100
          (GJ-7.3), one that takes nothing -200 (khishti, GJ-7.4), a made pass 50 (GJ-7.2),
          any other miss 10 a trick (GJ-7.5). The tree's rollouts play every lead and every
          card but the last to a trick at random (a joker ``low`` half the time, GJ-5.2; an
          opponent's ace thrown under a trick it should take), so a middling card takes its
          trick more often there than against players who try to make their own bids, and a
          bid on it looks better than it is (it bid 1 on the seven of trumps alone);
        * Jo-Jotte's double or no-trump overcall, redouble and nullo (``PLAYOUT_DECISIONS``):
          the double multiplies both players' trick points (JJ-9.4), the nullo stakes 200
          above the line on winning no trick (JJ-9.7); both are decided by how the nine tricks
          are played, which random leads misjudge in the same way.

        Every legal action is tried in the same sampled worlds (the differences between
        actions are then not blurred by the deal), each world finished with the ``heuristic``
        bot's play for every seat (it plays to make its bid or to duck once made, GJ-7; in a
        nullo the nullo player ducks, JJ-4.3), and the action with the best mean score relative
        to the other seats (the tree's own objective) is chosen. A Georgian Joker small deal is
        a handful of decisions, a Jo-Jotte playout about a millisecond, so up to
        ``params.worlds`` worlds fit in the budget; the search stops at ``stop_at`` after at
        least one world, like the tree.
        """
        legal = request.legal
        view = request.view
        if self.game_id == "georgian_joker":
            if not legal[0].startswith("bid:"):
                return None
            if (view["table"].get("cards_per_player") or len(view["hand"])) > SMALL_DEAL_CARDS:
                return None
        elif self.game_id == "klaberjass":
            if not self.params.kl_flat_auction or not kl_auction(legal):
                return None
        elif self.game_id != "jojotte" or PLAYOUT_DECISIONS.isdisjoint(legal):
            return None
        from .heuristic import make as make_heuristic
        player = make_heuristic(self.game_id)
        seat = request.seat
        n = self.game.num_seats
        done_before = len(view.get("deal_results") or ())
        totals = dict.fromkeys(legal, 0.0)
        sampled = 0
        model = self._inference(view)
        pool = self._worlds(view, request.rng, stop_at, model) if model is not None else None
        for i in range(self.params.worlds):
            if i and time.monotonic() >= stop_at:
                break
            if pool is not None:  # resampled by the bids (params.gj_bid_inference)
                if i >= len(pool):
                    break
                world = pool[i]
            else:
                try:
                    world = self.game.determinize(view, request.rng)
                except InconsistentView:
                    break
            sampled += 1
            for action in legal:
                state = world.clone()
                state.apply(action, seat)
                while state.to_act() >= 0:
                    who = state.to_act()
                    seen = state.view(who)
                    state.apply(player.decide(DecisionRequest(
                        self.game_id, who, seen, tuple(seen["legal"]), request.rng, 0.0)), who)
                results = state.deal_results()
                totals[action] += relative(deal_scores(self.game_id, results[done_before], n), seat)
        if not sampled:
            return None
        return max(legal, key=lambda a: totals[a])

    def _inference(self, view: Any) -> Any:
        """The opponents' bid model of ``view`` when ``params.gj_bid_inference`` applies to it
        (Georgian Joker, at least one opponent has bid), else None."""
        if not self.params.gj_bid_inference or self.game_id != "georgian_joker":
            return None
        from .bid_inference import BidModel
        model = BidModel(view, self.params.inference_per_size)
        return model if model else None

    def _worlds(self, view: Any, rng: random.Random, stop_at: float, model: Any = None) -> list[Any]:
        """The decision's sampled worlds: by the bids when ``model`` (or, not given, this view's
        :meth:`_inference`) applies, else uniform."""
        model = model if model is not None else self._inference(view)
        if model is not None:
            from .bid_inference import inferred_worlds
            now = time.monotonic()
            until = now + max(0.0, stop_at - now) * self.params.inference_time
            return inferred_worlds(self.game, view, rng, self.params.worlds,
                                   self.params.worlds * self.params.inference_candidates, until, model)
        worlds = []
        for i in range(self.params.worlds):
            if i and time.monotonic() >= stop_at:
                break
            try:
                worlds.append(self.game.determinize(view, rng))
            except InconsistentView:  # a sampler that gives up on this view costs the
                # decision its search (the heuristic answers), not the decision itself
                break
        return worlds


def greedy_playout(state: Any, rng: random.Random, epsilon: float, wants: bool) -> None:
    """Finish ``state``'s deal with the ``greedy`` rollout policy.

    Plays ``state`` (fast path only) until no seat is to act. Every step is a uniformly random
    legal action, except the last card to a trick (``state.last_to_trick()``), which with
    probability ``1 - epsilon`` follows a rule: a seat that wants the trick (always, unless
    ``wants`` and ``state.wants_trick(seat)`` says no) takes it with its cheapest winning play
    (``winning_ids``, ``trick_rank``) or, when nothing wins, throws its cheapest play; a seat
    that does not want it plays its dearest losing play or, when everything wins, its cheapest
    winning one. Why: random playouts give tricks away that no player would give away, which
    makes the searched values of the bidding and trump decisions and of the card play noisy
    and biased; this is the cheapest rule that removes the worst of it (one test of a few
    cards per trick), and the epsilon keeps some variety in the sampled continuations.
    """
    rand = rng.random
    randrange = rng.randrange
    apply_id = state.apply_id
    legal_ids = state.legal_ids
    to_act = state.to_act
    last = state.last_to_trick
    while True:
        who = to_act()
        if who < 0:
            return
        ids = legal_ids()
        n = len(ids)
        if n == 1:
            apply_id(ids[0])
        elif last() and rand() >= epsilon:
            rank = state.trick_rank
            wins = state.winning_ids(ids)
            if not wants or state.wants_trick(who):
                apply_id(min(wins or ids, key=rank))
            else:
                losers = [a for a in ids if a not in wins] if wins else ids
                apply_id(max(losers, key=rank) if losers else min(wins, key=rank))
        else:
            apply_id(ids[randrange(n)])


#: The ``search`` bot's parameters where they differ from ``SearchParams()``, by arena measurement
#: (docs/bots.md, "Bid inference in Georgian Joker"): Georgian Joker's worlds resampled by the
#: opponents' bids, the bid model fitted per deal size, 8 candidates per world kept: against the
#: uniform worlds +2.93 a board, 95% CI [+0.82, +5.04] (arena, 2,383 boards, seeds 1-2,
#: 2026-12-05), CPU at most 108.6 ms a decision.
GAME_PARAMS = {"georgian_joker": SearchParams(gj_bid_inference=True, inference_per_size=True,
                                              inference_candidates=8)}


def make(game_id: str) -> SearchBot:
    return SearchBot(game_id, GAME_PARAMS.get(game_id, SearchParams()))


def make_random_rollout(game_id: str) -> SearchBot:
    """``search`` with uniformly random rollouts and nothing else changed (its GAME_PARAMS kept:
    Georgian Joker's worlds still read the bids), so that the arena compares the rollouts alone."""
    return SearchBot(game_id, replace(GAME_PARAMS.get(game_id, SearchParams()), rollout="random"))


@hookimpl
def cardgames_bots() -> list[BotSpec]:
    return [BotSpec("search", make, games=("klaberjass", "jojotte", "georgian_joker", "japanese_joker"),
                    description="Information Set MCTS over sampled deals (determinization), "
                                "greedy rollouts (the last card to a trick takes it cheaply); "
                                "600 iterations or the time budget."),
            BotSpec("search_random", make_random_rollout,
                    games=("klaberjass", "jojotte", "georgian_joker", "japanese_joker"),
                    description="search with uniformly random rollouts (the former policy, "
                                "for comparison).")]
