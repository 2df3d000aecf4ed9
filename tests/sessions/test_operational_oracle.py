"""Differential tests of the session layer's operational rules against
:mod:`.operational_oracle`, a model written from JJK-10, GJ-12 and NOTATION.md section 5 alone.

The engine runs on an event loop whose clock is virtual (:class:`.virtual_clock.VirtualClockLoop`: its
``time()`` and ``time.time()`` read one number that only the test moves), so a schedule can
advance the clock by any amount, exactly to a turn deadline or a grace window's end, and
disconnect two seats at one instant (equal windows) -- without waiting for any of it.

* Seeded random schedules for all four games: act, let the turn time out, disconnect,
  reconnect, both (or several) away at once, resign, leave, advance the clock (a second, just
  short of a deadline, exactly to it, a turn, a grace period, ...), each applied to the engine
  and to the model; after each event the seat to act, the decision's deadline, every action
  recorded since (seat, action, by whom, why: the auto-moves' policy), whether the match is
  over and how (outcome, winners, forfeited / resigned / absent / abandoned seats, totals),
  each seat's presence, Georgian Joker's bot takeover and departures.
* Planned scenarios for the edges JJK-10.1 .. 10.5, GJ-12.1 .. 12.5 and NOTATION 5 name.
"""

from __future__ import annotations

import asyncio
import math
import random
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, AsyncIterator

import pytest
from structlog.testing import capture_logs

from engine_service.observability.metrics import Metrics
from engine_service.rules import get_game
from engine_service.rules.cards import codes_of
from engine_service.sessions.api import CreateMatchRequest, Principal
from engine_service.sessions.manager import MatchManager
from engine_service.store import MemoryStore

from .helpers import GAMES, Stream, config
from .operational_oracle import TWO_PLAYER_GAMES, OperationalOracle
from .virtual_clock import START, advance_to, run_virtual, settle


# ---- one match driven on both sides ----------------------------------------------------------

def _decks(game_id: str, rng: random.Random, count: int) -> list[list[str]]:
    pack = codes_of(sum(1 << c for c in get_game(game_id).pack))
    out = []
    for _ in range(count):
        d = list(pack)
        rng.shuffle(d)
        out.append(d)
    return out


@dataclass
class Table:
    """The engine's match and the model's, side by side; every event goes to both."""

    mgr: Any
    game_id: str
    match_id: str
    principals: list[Principal]
    streams: list[Stream | None]
    oracle: OperationalOracle
    tokens: list[str] = field(default_factory=list)
    log: list[str] = field(default_factory=list)
    seen: int = 0  # engine actions already compared

    @property
    def now(self) -> float:
        return asyncio.get_running_loop().time()

    @property
    def n(self) -> int:
        return len(self.principals)

    # -- events --

    async def act(self, action: str | None = None, rng: random.Random | None = None) -> None:
        seat = self.oracle.to_act()
        legal = self.oracle.legal()
        if action is None:
            action = (rng or random).choice(legal)
        self.log.append(f"t+{self.now - START:g} act seat {seat} {action}")
        env = await self.mgr.get_view(self.match_id, self.principals[seat])
        await self.mgr.submit_action(self.match_id, self.principals[seat], action, env.seq)
        self.oracle.act(seat, action)
        await settle()

    async def disconnect(self, *seats: int) -> None:
        """Close the seats' watch streams at the current instant (several: the same instant)."""
        self.log.append(f"t+{self.now - START:g} disconnect {seats}")
        for seat in seats:
            stream, self.streams[seat] = self.streams[seat], None
            await stream.close()
        for seat in seats:
            self.oracle.disconnect(seat)
        await settle()

    async def reconnect(self, seat: int) -> None:
        self.log.append(f"t+{self.now - START:g} reconnect {seat}")
        self.streams[seat] = Stream(self.mgr, self.match_id, self.principals[seat])
        self.oracle.reconnect(seat)
        await settle()

    async def leave(self, seat: int, resign: bool) -> None:
        self.log.append(f"t+{self.now - START:g} leave {seat} resign={resign}")
        await self.mgr.leave_match(self.match_id, self.principals[seat], resign=resign)
        self.oracle.leave(seat, resign)
        if self.streams[seat] is not None and not self.oracle.two_player:
            stream, self.streams[seat] = self.streams[seat], None
            await stream.close()  # the engine ends it (SEAT_LEFT)
        elif self.streams[seat] is not None and self.oracle.over:
            pass  # a finished match: the stream ends by itself
        await settle()

    async def restart(self, downtime: float) -> None:
        """The engine drains and a new one serves the same store ``downtime`` seconds later
        (docs/api.md, "Restarts"); every stream ends with the old engine."""
        self.log.append(f"t+{self.now - START:g} restart after {downtime:g} s down")
        for i, stream in enumerate(self.streams):
            if stream is not None:
                self.streams[i] = None
                await stream.close()
        store, cfg = self.mgr._store, self.mgr.config
        await self.mgr.close()
        await advance_to(self.now + downtime)
        self.mgr = MatchManager(cfg, store=store, bot_host=None, metrics=Metrics(), create_bot_host=False)
        await self.mgr.start()
        self.principals = [self.mgr.authenticate(self.match_id, token) for token in self.tokens]
        self.oracle.restart(downtime)
        await settle()

    async def advance(self, dt: float) -> None:
        target = self.now + dt
        self.log.append(f"t+{self.now - START:g} advance {dt:g}")
        await advance_to(target)
        self.oracle.advance(target)

    # -- comparison --

    async def engine_snapshot(self) -> dict[str, Any]:
        summary = await self.mgr.get_match(self.match_id)
        env = await self.mgr.get_view(self.match_id, Principal("spectator", self.match_id))
        over = summary.status == "finished"
        result = None
        if over:
            r = summary.result or {}
            result = {k: r.get(k) for k in ("outcome", "winners", "forfeited", "resigned", "absent",
                                             "abandoned", "totals")}
        return {
            "over": over,
            "to_act": None if over else env.view.get("to_act"),
            "deadline": None if over else env.deadline,
            "present": [s.present for s in summary.seats],
            "replaced_by_bot": [s.replaced_by_bot for s in summary.seats],
            "left": [s.left for s in summary.seats],
            "result": result,
        }

    def model_snapshot(self) -> dict[str, Any]:
        snap = self.oracle.snapshot()
        if snap["result"] is not None:
            r = snap["result"]
            snap["result"] = {k: r.get(k) for k in ("outcome", "winners", "forfeited", "resigned", "absent",
                                                   "abandoned", "totals")}
        return snap

    async def compare(self) -> None:
        engine, model = await self.engine_snapshot(), self.model_snapshot()
        for snap in (engine, model):
            if snap["result"] is not None:
                for key in ("absent", "abandoned"):  # a list; absent and empty say the same
                    snap["result"][key] = snap["result"][key] or None
                snap["result"]["winners"] = sorted(snap["result"]["winners"] or [])
        moves = self.mgr._matches[self.match_id].actions
        got = [(a.seat, a.action, a.by, a.reason) for a in moves[self.seen:]]
        want = self.oracle.moves[self.seen:]
        where = "\n".join(self.log[-12:])
        assert len(got) == len(want), f"actions {got} != model {want}\n{where}"
        for g, w in zip(got, want):
            assert g[:3] == (w.seat, w.action, w.by) and (w.by == "player" or g[3] in w.reasons), \
                f"action {g} != model {w}\n{where}"
        self.seen = len(moves)
        e_deadline, m_deadline = engine.pop("deadline"), model.pop("deadline")
        if engine["over"]:  # the match's streams end with it: presence is no longer followed
            engine.pop("present"), model.pop("present")
        assert engine == model, f"engine {engine}\n model {model}\n{where}"
        assert (e_deadline is None) == (m_deadline is None) and (
            e_deadline is None or math.isclose(e_deadline, m_deadline, abs_tol=1e-6)), \
            f"deadline {e_deadline and e_deadline - START} != model {m_deadline and m_deadline - START}\n{where}"


async def open_table(mgr, game_id: str, *, turn_time_s: int, grace_s: int, seed: int,
                     options: dict[str, Any] | None = None, watching: bool = True) -> Table:
    """A match of ``game_id`` with every seat joined (and watched, unless ``watching`` is
    false), at the current instant, and its model."""
    rng = random.Random(seed)
    game = get_game(game_id)
    decks = _decks(game_id, rng, 60 if game_id == "georgian_joker" else 120)
    first = rng.randrange(game.num_seats)
    options = dict(options or {})
    request: dict[str, Any] = {}
    if game_id in ("japanese_joker", "georgian_joker"):
        options.update(turn_time_s=turn_time_s, reconnect_grace_s=grace_s)
    else:
        request["turn_time_s"] = float(turn_time_s)  # the grace is the manager's (config)
    summary = await mgr.create_match(CreateMatchRequest(game=game_id, options=options, decks=decks,
                                                        first_dealer=first, **request), admin=True)
    principals, tokens = [], []
    for seat in range(game.num_seats):
        joined = await mgr.join_match(summary.match_id, seat, f"player {seat}")
        principals.append(mgr.authenticate(summary.match_id, joined.token))
        tokens.append(joined.token)
    streams: list[Stream | None] = [Stream(mgr, summary.match_id, p) if watching else None for p in principals]
    await settle()
    oracle = OperationalOracle(game_id, options, first, decks, float(turn_time_s), float(grace_s),
                               now=asyncio.get_running_loop().time(), connected=watching)
    table = Table(mgr, game_id, summary.match_id, principals, streams, oracle, tokens)
    await table.compare()
    return table


def session_config(grace_s: int):
    # time_scale 1 on the virtual clock; grace for the games without the table option
    return config(reconnect_grace_s=float(grace_s), heartbeat_interval_s=5.0)


@asynccontextmanager
async def table_of(game_id: str, *, turn_time_s: int, grace_s: int, seed: int,
                   options: dict[str, Any] | None = None, watching: bool = True) -> AsyncIterator[Table]:
    """A :class:`Table` on a fresh engine (memory store), closed at the end (whichever engine
    serves it then: :meth:`Table.restart` replaces it)."""
    mgr = MatchManager(session_config(grace_s), store=MemoryStore(), bot_host=None, metrics=Metrics(),
                       create_bot_host=False)
    await mgr.start()
    t = None
    try:
        t = await open_table(mgr, game_id, turn_time_s=turn_time_s, grace_s=grace_s, seed=seed, options=options,
                             watching=watching)
        yield t
    finally:
        if t is not None:
            for s in t.streams:
                if s is not None:
                    await s.close()
            mgr = t.mgr
        await mgr.close()


# ---- seeded random schedules -------------------------------------------------------------

TIMES = [(10, 15), (15, 15), (10, 30), (30, 60), (20, 45)]  # (turn_time_s, reconnect_grace_s)


async def random_schedule(t: Table, rng: random.Random, events: int) -> None:
    o = t.oracle
    T, G = o.turn_time_s, o.reconnect_grace_s
    for _ in range(events):
        if o.over:
            return
        who = o.to_act()
        connected = [i for i, s in enumerate(o.seats) if s.connected and not s.left]
        away = [i for i, s in enumerate(o.seats) if not s.connected and not s.left]
        two = o.two_player
        choices: list[tuple[float, str]] = []
        if who is not None and o.seats[who].connected and not o.bot_driven(who):
            choices.append((6, "act"))
        if o.deadline is not None:
            choices += [(3, "to_deadline"), (1, "before_deadline")]
            if two:
                choices.append((0.7, "autoplay"))  # many timeouts in a row (JJK-10.3)
        if any(s.grace_end is not None for s in o.seats):
            choices += [(0.7, "to_grace"), (1, "before_grace")]
        if connected:
            choices.append((1.5, "disconnect"))
        if len(connected) >= 2:
            choices.append((0.4, "several_away"))
        if away:
            choices.append((4, "reconnect"))
        choices += [(1.5, "advance"), (0.1, "resign"), (0.1, "leave"), (0.25, "restart")]
        kind = rng.choices([c[1] for c in choices], [c[0] for c in choices])[0]
        if kind == "act":
            burst = rng.choice([1, 1, 1, 3, 8, 60])
            for _ in range(burst):
                who = o.to_act()
                if o.over or who is None or not o.seats[who].connected or o.bot_driven(who):
                    break
                await t.act(rng=rng)
        elif kind == "to_deadline":
            await t.advance(o.deadline - t.now)
        elif kind == "autoplay":
            await t.advance(T * rng.randint(5, 40))
        elif kind == "before_deadline":
            await t.advance(max(0.0, o.deadline - t.now - rng.choice([0.5, 1.0])))
        elif kind in ("to_grace", "before_grace"):
            end = min(s.grace_end for s in o.seats if s.grace_end is not None)
            await t.advance(max(0.0, end - t.now - (0 if kind == "to_grace" else rng.choice([0.25, 1.0]))))
        elif kind == "disconnect":
            await t.disconnect(rng.choice(connected))
        elif kind == "several_away":
            k = 2 if o.two_player else rng.choice([2, 2, 3, 4])
            await t.disconnect(*rng.sample(connected, min(k, len(connected))))
        elif kind == "reconnect":
            await t.reconnect(rng.choice(away))
        elif kind == "advance":
            await t.advance(rng.choice([1.0, 2.5, T - 1, T, T + 1, G - 1, G, G + 1, 2 * T, 3 * T]))
        elif kind == "restart":
            await t.restart(rng.choice([0.5, 5.0, 3600.0]))
        elif kind in ("resign", "leave"):
            candidates = [i for i, s in enumerate(o.seats) if not s.left]
            await t.leave(rng.choice(candidates), resign=(kind == "resign"))
        await t.compare()


SEEDS_PER_GAME = 30


def random_options(game_id: str, rng: random.Random) -> dict[str, Any]:
    """Shorter matches now and then, so that schedules also reach the rules' own end."""
    if game_id == "japanese_joker":
        return rng.choice([{}, {"target_score": 11}])
    if game_id == "georgian_joker":
        return rng.choice([{}, {"deal_schedule": "nines"}])
    return {}


@pytest.mark.parametrize("game_id", GAMES)
def test_random_schedules_match_the_model(game_id, monkeypatch):
    async def go():
        for seed in range(SEEDS_PER_GAME):
            rng = random.Random(f"{game_id}-{seed}")
            turn, grace = rng.choice(TIMES)
            async with table_of(game_id, turn_time_s=turn, grace_s=grace, seed=seed,
                                options=random_options(game_id, rng)) as t:
                try:
                    await random_schedule(t, rng, events=45)
                except AssertionError as exc:
                    raise AssertionError(f"seed {seed} (turn {turn}, grace {grace}): {exc}") from None

    run_virtual(go, monkeypatch)


# ---- planned scenarios -------------------------------------------------------------------

def scenario(game_id: str, monkeypatch, body, *, turn: int = 10, grace: int = 30, seed: int = 1,
             options: dict[str, Any] | None = None, watching: bool = True):
    """Run ``body(table)`` on a fresh match (compared with the model after every event)."""
    async def go():
        async with table_of(game_id, turn_time_s=turn, grace_s=grace, seed=seed, options=options,
                            watching=watching) as t:
            return await body(t)

    return run_virtual(go, monkeypatch)


async def step(t: Table, event, *args, **kwargs) -> None:
    await event(*args, **kwargs)
    await t.compare()


TWO = list(TWO_PLAYER_GAMES)


@pytest.mark.parametrize("game_id", TWO)
@pytest.mark.parametrize("resign", [True, False])
def test_resigning_or_leaving_mid_deal_ends_the_match_for_the_opponent(game_id, resign, monkeypatch):
    """JJK-10.1 (NOTATION 5 for the 32-card games): resigning at any moment, or leaving, ends
    the match at once and the opponent wins; the unfinished deal scores nothing: the totals are
    those of the deals already scored (JJK-A13)."""
    async def body(t: Table):
        rng = random.Random(7)
        while len(t.oracle.state.deal_results()) < 1:  # one whole deal, then into the next
            await step(t, t.act, rng=rng)
        scored = t.oracle.totals()
        for _ in range(5):
            await step(t, t.act, rng=rng)
        leaver = 1 - t.oracle.to_act()  # not the seat to act: "at any moment"
        await step(t, t.leave, leaver, resign)
        result = (await t.mgr.get_match(t.match_id)).result
        return leaver, scored, result

    leaver, scored, result = scenario(game_id, monkeypatch, body,
                                      options={"target_score": 31} if game_id == "japanese_joker" else None)
    assert result["outcome"] == "resigned" and result["resigned"] == leaver
    assert result["winners"] == [1 - leaver] and result["totals"] == scored


@pytest.mark.parametrize("game_id", TWO)
def test_a_two_player_table_waits_at_the_absent_players_decision(game_id, monkeypatch):
    """JJK-10.2 (D): while a player is away no turn timer runs; the connected player may still
    make a decision that is theirs; the match stops at the absent player's next decision (no
    auto-move however long, within the grace); on reconnection that decision gets a fresh
    ``turn_time_s``, not what was left of a turn (JJK-A11: the match pauses during the wait)."""
    async def body(t: Table):
        o = t.oracle
        actor = o.to_act()
        await step(t, t.advance, 6)  # 6 s of the 10 s turn spent
        await step(t, t.disconnect, 1 - actor)
        assert o.deadline is None
        await step(t, t.advance, 25)  # past any turn time: no auto-move
        assert not o.moves
        rng = random.Random(3)
        while o.to_act() == actor:  # the connected player's own decisions, without a deadline
            await step(t, t.act, rng=rng)
            assert o.deadline is None
        moved = len(o.moves)
        assert moved >= 1 and o.to_act() == 1 - actor
        await step(t, t.advance, 4.5)  # 29.5 s of the 30 s window: still waiting
        assert len(o.moves) == moved and not o.over
        await step(t, t.reconnect, 1 - actor)
        assert o.deadline == t.now + 10  # a fresh turn
        await step(t, t.advance, 10)
        assert o.moves[-1].by == "auto" and o.moves[-1].reasons == {"timeout"} and not o.over

    scenario(game_id, monkeypatch, body, turn=10, grace=30)


@pytest.mark.parametrize("game_id", TWO)
def test_both_away_the_first_window_to_expire_decides(game_id, monkeypatch):
    """JJK-10.2 (D), JJK-A11: each absent player has their own window; the first to expire
    decides."""
    async def body(t: Table):
        await step(t, t.disconnect, 1)
        await step(t, t.advance, 3)
        await step(t, t.disconnect, 0)
        await step(t, t.advance, 26.5)  # seat 1's window has 0.5 s left
        assert not t.oracle.over
        await step(t, t.advance, 0.5)  # exactly its end
        return (await t.mgr.get_match(t.match_id)).result

    result = scenario(game_id, monkeypatch, body, turn=10, grace=30)
    assert result["outcome"] == "forfeit" and result["forfeited"] == 1 and result["winners"] == [0]


@pytest.mark.parametrize("game_id", TWO)
def test_both_windows_expiring_at_one_instant_abandon_the_match(game_id, monkeypatch):
    """JJK-10.2 (D), JJK-A11: both players away, both windows expire at the same server
    instant: the match ends without a winner (``abandoned``)."""
    async def body(t: Table):
        await step(t, t.advance, 4)
        await step(t, t.disconnect, 0, 1)
        await step(t, t.reconnect, 0)
        await step(t, t.advance, 2)
        await step(t, t.disconnect, 0)  # seat 0's new window ends 2 s after seat 1's
        await step(t, t.advance, 5)
        await step(t, t.reconnect, 0)
        await step(t, t.reconnect, 1)
        await step(t, t.advance, 3)
        await step(t, t.disconnect, 1, 0)  # together again
        await step(t, t.advance, 30)
        return (await t.mgr.get_match(t.match_id)).result

    with capture_logs() as logs:
        result = scenario(game_id, monkeypatch, body, turn=10, grace=30)
    assert result["outcome"] == "abandoned" and result["winners"] == [] and sorted(result["absent"]) == [0, 1]
    # docs/operations.md: the ``match_ended`` line names the seats both away (``absent``)
    ended = [(e["outcome"], e["winners"], sorted(e["absent"])) for e in logs if e["event"] == "match_ended"]
    assert ended == [("abandoned", [], [0, 1])]


@pytest.mark.parametrize("game_id", GAMES)
def test_a_deadline_fires_exactly_at_its_time_and_the_next_decision_gets_a_fresh_one(game_id, monkeypatch):
    """JJK-10.3, GJ-12.1: nothing before the deadline; at it exactly one move by the policy;
    the following decision has a whole ``turn_time_s`` (JJK-A12, GJ-A16: one auto-move per
    timeout)."""
    async def body(t: Table):
        o = t.oracle
        first = o.deadline
        await step(t, t.advance, first - t.now - 0.001)
        assert not o.moves
        await step(t, t.advance, 0.001)
        assert len(o.moves) == 1 and o.moves[0].by == "auto" and o.deadline == first + 20

    scenario(game_id, monkeypatch, body, turn=20, grace=60)


@pytest.mark.parametrize("game_id", ["japanese_joker", "georgian_joker"])
def test_timeouts_alone_play_a_whole_match_to_its_end(game_id, monkeypatch):
    """JJK-10.3 / GJ-12.1: timeouts, even repeated, never end the match by themselves (JJK-A12:
    no forfeit for repeated timeouts; GJ-A16); every decision, the trump choice included, is a
    move like any other (never ``NT``, JJK-10.4 and GJ-12.2); the match ends by the rules with
    the rules' winners."""
    async def body(t: Table):
        while not t.oracle.over:
            await step(t, t.advance, 10 * 50)
        return (await t.mgr.get_match(t.match_id)).result

    options = {"target_score": 11} if game_id == "japanese_joker" else {"deal_schedule": "nines"}
    o_result = scenario(game_id, monkeypatch, body, turn=10, grace=60, options=options)
    assert o_result["outcome"] == "completed" and o_result["winners"]


def test_georgian_joker_absence_timeouts_takeover_return_and_leaving(monkeypatch):
    """GJ-12.3: an absent player's turns are handled by the turn timer during the grace;
    GJ-12.4: after the grace the bot (the auto-move policy) takes the seat and moves at once;
    the player who comes back takes the seat back at once; a player who leaves is replaced for
    the rest of the match and the result lists the seat as abandoned (GJ-A16)."""
    async def body(t: Table):
        o = t.oracle
        away = o.to_act()
        await step(t, t.disconnect, away)
        await step(t, t.advance, 15)  # the turn times out: the timer's move, not the bot's
        assert [(m.seat, m.by, set(m.reasons)) for m in o.moves] == [(away, "auto", {"timeout"})]
        while not o.seats[away].taken_over:
            await step(t, t.advance, min(15, o.seats[away].grace_end - t.now))
        assert all(m.reasons == {"timeout"} for m in o.moves if m.seat != away)
        rng = random.Random(5)
        for _ in range(12):  # the others play; the bot answers for the absent player at once
            if o.to_act() is None:
                break
            await step(t, t.act, rng=rng)
        assert any(m.seat == away and m.reasons == {"takeover"} for m in o.moves)
        await step(t, t.reconnect, away)
        assert not o.bot_driven(away)
        leaver = (away + 1) % 4
        await step(t, t.leave, leaver, False)
        for _ in range(20):
            if o.over:
                break
            if o.to_act() is not None and o.seats[o.to_act()].connected:
                await step(t, t.act, rng=rng)
            else:
                await step(t, t.advance, 15)
        assert any(m.seat == leaver and m.reasons == {"abandoned"} for m in o.moves)
        for seat in range(4):  # everybody leaves: the bots finish the match (GJ-9.4)
            if not o.seats[seat].left:
                await step(t, t.leave, seat, True)
        return leaver, (await t.mgr.get_match(t.match_id)).result

    leaver, result = scenario("georgian_joker", monkeypatch, body, turn=15, grace=60,
                              options={"deal_schedule": "nines"})
    assert result["outcome"] == "completed" and sorted(result["abandoned"]) == [0, 1, 2, 3]


def test_georgian_joker_grace_and_turn_ending_at_one_instant(monkeypatch):
    """GJ-12.1 with GJ-12.4: the absent player's turn and grace window end at the same instant
    (turn_time_s = reconnect_grace_s, away from the decision's start): one move, by the policy
    either way; the seat is the bot's from then on and moves at once."""
    async def body(t: Table):
        o = t.oracle
        away = o.to_act()
        await step(t, t.disconnect, away)
        await step(t, t.advance, 15)
        assert len([m for m in o.moves if m.seat == away]) >= 1 and o.seats[away].taken_over
        assert o.moves[0].reasons == {"timeout", "takeover"}

    scenario("georgian_joker", monkeypatch, body, turn=15, grace=15)


@pytest.mark.parametrize("game_id", GAMES)
def test_a_match_nobody_watches_from_its_start(game_id, monkeypatch):
    """A seat without a watch stream counts as disconnected (docs/api.md), from the start of
    the match: two players' windows start together and end together, so nobody showing up
    abandons the match (JJK-10.2 (D)); in Georgian Joker the timers play the absent players'
    turns during the grace (GJ-12.3), then the bot takes every seat and finishes the match at
    once (GJ-12.4, GJ-9.4)."""
    async def body(t: Table):
        o = t.oracle
        assert o.deadline is None if o.two_player else o.deadline == t.now + 10
        await step(t, t.advance, 15)
        if not o.two_player:
            assert o.moves and {m.reasons for m in o.moves} == {frozenset({"timeout"})}
        await step(t, t.advance, 15)
        assert o.over
        return (await t.mgr.get_match(t.match_id)).result

    options = {"deal_schedule": "nines"} if game_id == "georgian_joker" else None
    result = scenario(game_id, monkeypatch, body, turn=10, grace=30, options=options, watching=False)
    if game_id == "georgian_joker":
        assert result["outcome"] == "completed" and result["winners"]
    else:
        assert result["outcome"] == "abandoned" and sorted(result["absent"]) == [0, 1]


@pytest.mark.parametrize("game_id", TWO)
def test_a_restart_gives_the_connected_a_whole_window_and_the_away_the_rest(game_id, monkeypatch):
    """docs/api.md "Restarts" (the engine's reading; the rulebooks have no restarts): seat 0,
    away for 10 s of its 30 s window at a drain, gets the 20 s left from the restart (the
    hour down does not count); seat 1, connected at the stop, a whole window: with nobody
    back seat 0's window ends first, a disconnection forfeit (JJK-10.2)."""
    async def body(t: Table):
        await step(t, t.disconnect, 0)
        await step(t, t.advance, 10)
        await step(t, t.restart, 3600)
        assert t.oracle.deadline is None  # nobody is back: no turn timer (JJK-10.2)
        await step(t, t.advance, 19.5)
        assert not t.oracle.over
        await step(t, t.advance, 0.5)
        return (await t.mgr.get_match(t.match_id)).result

    result = scenario(game_id, monkeypatch, body, turn=10, grace=30)
    assert result["outcome"] == "forfeit" and result["forfeited"] == 0 and result["winners"] == [1]


def test_a_restart_keeps_a_georgian_joker_seat_with_the_bot_and_restarts_the_turn(monkeypatch):
    """docs/api.md "Restarts": a seat the bot played for an absent player stays the bot's until
    the player connects again (GJ-12.4); the decision at hand gets the full turn time."""
    async def body(t: Table):
        o = t.oracle
        away = (o.to_act() + 1) % 4
        await step(t, t.disconnect, away)
        await step(t, t.advance, 15)
        await step(t, t.advance, 15)
        assert o.seats[away].taken_over
        await step(t, t.advance, 4)
        await step(t, t.restart, 60)
        assert o.bot_driven(away) and o.deadline == t.now + 10
        for seat in range(4):
            if seat != away:
                await step(t, t.reconnect, seat)
        await step(t, t.advance, 10)
        await step(t, t.reconnect, away)
        assert not o.bot_driven(away)

    scenario("georgian_joker", monkeypatch, body, turn=10, grace=30)


# ---- the comparison catches seeded faults -------------------------------------------------

def test_the_differential_catches_a_wrong_auto_move(monkeypatch):
    """An engine whose auto-move policy is not the rulebook's fails the comparison."""
    game = get_game("japanese_joker")
    monkeypatch.setattr(type(game), "auto_move", lambda self, view: view["legal"][-1])

    async def body(t: Table):
        await step(t, t.advance, 10)
        await step(t, t.advance, 10)

    with pytest.raises(AssertionError, match="action"):
        scenario("japanese_joker", monkeypatch, body, turn=10, grace=30)


def test_the_differential_catches_a_turn_timer_running_during_the_wait(monkeypatch):
    """An engine that lets the turn timer run while a two-player table waits for an absent
    player (against JJK-10.2) fails the comparison."""
    from engine_service.sessions import clock as clock_module

    real = clock_module.MatchClock.schedule

    def schedule(self, m):
        policy, m.policy = m.policy, "bot_takeover"  # as if timers ran during absences
        try:
            real(self, m)
        finally:
            m.policy = policy

    monkeypatch.setattr(clock_module.MatchClock, "schedule", schedule)

    async def body(t: Table):
        await step(t, t.disconnect, 1 - t.oracle.to_act())

    with pytest.raises(AssertionError, match="deadline"):
        scenario("klaberjass", monkeypatch, body, turn=10, grace=30)
