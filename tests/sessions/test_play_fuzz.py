"""Matches being played under races and store faults: a seeded fuzz of the ACTIVE phase at the
session level, on the memory store and on SQLite (the WAITING phase has its own,
tests/sessions/test_seat_lifecycle_fuzz.py, whose store wrapper this one shares:
tests/sessions/faults.py).

Many matches of every game (short ones: a one-deal Klaberjass, a short Jo-Jotte or Japanese
Joker, Georgian Joker's nines; some seats bots, Georgian Joker's absent seats taken over by
the auto-move policy or a bot; some matches shown to spectators a few actions late) are
started, then played at once by their clients, one request at a time each, as the seed
says: SubmitAction with a fresh ``client_action_id`` and the ``expected_seq`` of the
client's last view (from its answers and its watch streams), now and then the same submit
sent twice at once, or sent again as if its answer had been lost; resigning (LeaveMatch);
the operator's new token for a player who lost its own (ReissueSeatToken: its streams end,
it watches again with the new one); the admin's TerminateMatch; watch streams opened,
closed and resumed with ``after_seq`` set to the last seq seen; spectators doing the same.
Turn times are short (10 s of turn time last 30 ms), so timeouts auto-move while a client
idles, and a client that closes all its streams and wanders off past its grace window
forfeits (two players) or has its seat taken over (Georgian Joker) until it comes back.
Every request resolves the client's token as the transport does; on odd seeds a match that
ended is evicted at once, so that the next request about it (a token, a retry, a stream)
reads it back from the store.

Meanwhile a store wrapper fails chosen writes (``append_action`` above all, ``set_status``,
``save_seat``; ``append_decks`` too, which play reaches only when a match is read back with
a deal due): before the write (nothing written) or after it (durable, answered with an
error), and now and then the reads after it (``load_match``: a read-back, a catch-up) fail
too. A client answered UNAVAILABLE retries with the same ``client_action_id`` (a leave or a
reissue: the same request); ABORTED / STALE_SEQUENCE takes the view it carries;
FAILED_PRECONDITION / MATCH_NOT_ACTIVE stops.

Once the faults stop, the clients' retries, the settle series and the clock's retries finish,
each client sends one of its acknowledged actions again, the manager drains, and then:

* memory and store agree on every match (status, outcome, the log seq by seq, the decks, the
  seats), and a fresh MatchManager on the same store rebuilds the same matches (seq, status,
  outcome, the view of every seat and of a spectator); in both, every client's last token
  reaches its seat and every token the operator replaced is refused;
* every action acknowledged to a client is in the log at its seq with its
  ``client_action_id``, exactly once; no ``client_action_id`` appears twice in a log; every
  answer for one id names the same seq, and only the first is not ``duplicate``; an id sent
  again after its acknowledgement gets that result whatever happened since (the match
  ended, moved on); an id answered with an error other than UNAVAILABLE (STALE_SEQUENCE,
  MATCH_NOT_ACTIVE) is not in the log; every player action in the log is one a client sent;
* nothing is stored after a match's end (the store's log ends where the memory's did);
* every watch stream saw each action at most once, in order and without a gap (a resume
  with ``after_seq`` gets exactly the missed ones, a snapshot only past the threshold),
  each as the log has it, with the view of its seq and the details a replay gives it
  (``deal_scored``), and a stream of a match that ended ends with one ``match_ended`` at
  the last seq;
* each match ended at most once (one ``match_ended`` log line, at its last seq), as its
  result says (completed iff the rules ended it; a termination answered OK is a
  termination; a two-player resignation answered OK is that resignation; a forfeit's loser
  had wandered off);
* nothing was logged as a failed task, a failed write or a failed sweep, and no request was
  answered INTERNAL (or with a rules error: a client acts only on a current view).

The requests follow the seed, but the timers (turn deadlines, grace windows, retries) run on
the event loop's clock, so a failing seed may not fail again: the failure lists each match's
problems and the first one's requests (tests/sessions/test_play_fuzz.py's ``fuzz`` runs one
seed: a soak calls it for many).
"""

from __future__ import annotations

import asyncio
import collections
import itertools
import random
from dataclasses import dataclass, field, replace

import pytest
from structlog.testing import capture_logs

from engine_service.observability.metrics import Metrics
from engine_service.rules.errors import RulesError
from engine_service.sessions import clock as clock_module
from engine_service.sessions import seating as seating_module
from engine_service.sessions.api import (CreateMatchRequest, Principal, SeatConfig, SessionError,
                                         SubmitResult, ViewEnvelope)
from engine_service.sessions.manager import MatchManager
from engine_service.sessions.match import LiveMatch
from engine_service.sessions.views import SPECTATOR
from engine_service.store import MemoryStore, SqliteStore

from .faults import FaultyStore, FuzzBase, RandomBots, faults_by_write
from .helpers import GAMES, Stream, config, run, until

SEATS = {"klaberjass": 2, "jojotte": 2, "japanese_joker": 2, "georgian_joker": 4}
assert set(SEATS) == set(GAMES)

#: Short matches: they end by the rules while the clients play, not only by a session reason.
OPTIONS = {
    "klaberjass": ({"kl_target_score": 1}, {"kl_target_score": 150}),
    "jojotte": ({"jj_game_target": 1}, {"jj_game_target": 10}),
    "japanese_joker": ({"target_score": 11},),
    "georgian_joker": ({"deal_schedule": "nines"},),
}
#: 10 s of turn time last 30 ms, 15 s of grace 45 ms.
TIME_SCALE = 0.003
TURN_TIMES = (10, 20, 40)
GRACES = (15, 30)

UNAVAILABLE = ("UNAVAILABLE", "STORE_UNAVAILABLE")
NOT_ACTIVE = ("FAILED_PRECONDITION", "MATCH_NOT_ACTIVE")
STALE = ("ABORTED", "STALE_SEQUENCE")
SEAT_LEFT = ("PERMISSION_DENIED", "SEAT_LEFT")
#: How a watch stream may end besides the match's end: the player left, its seat opened one
#: stream too many (the oldest gives way), it fell behind, the service drained, its token was
#: replaced.
STREAM_ENDS = {"SEAT_LEFT", "MAX_SEAT_STREAMS", "WATCH_OVERFLOW", "DRAINING", "TOKEN_REVOKED"}
#: ... or, opened on a match evicted after its end, the store could not be read.
STREAM_FAILS = {"STORE_UNAVAILABLE"}
ORDER = {"waiting": 0, "active": 1, "finished": 2, "terminated": 2}


@dataclass
class Watch:
    """One watch stream: its client (None: a spectator), where it resumed from, and whether
    its client closed it."""

    stream: Stream
    after_seq: int
    owner: str
    closed: bool = False

    @property
    def open(self) -> bool:
        return not self.stream.task.done()


@dataclass
class Sent:
    """One ``client_action_id``: its action, its ``expected_seq``, the seq its answers gave
    (all must agree) and its last answer (``ok``, ``unavailable`` or an error's reason)."""

    cid: str
    action: str
    expected_seq: int
    seq: int | None = None
    last: str = ""
    answers: list[str] = field(default_factory=list)


@dataclass
class Client:
    name: str
    seat: int
    token: str
    view: ViewEnvelope | None = None
    watches: list[Watch] = field(default_factory=list)
    sent: dict[str, Sent] = field(default_factory=dict)
    pending: Sent | None = None  # answered UNAVAILABLE: retried with the same id
    pending_leave: bool = False
    pending_reissue: bool = False
    revoked: list[str] = field(default_factory=list)  # its tokens the operator replaced
    leaves: int = 0
    left: bool = False  # its leave was answered OK
    done: bool = False
    wandered: bool = False  # had no open stream for a while (a grace window may have run out)


@dataclass
class Table:
    match_id: str
    game: str
    bots: set[int]
    clients: list[Client]
    turn_s: float  # the turn time and the grace window, as timed (scaled)
    grace_s: float
    spectators: list[Watch] = field(default_factory=list)
    terminated: bool = False  # a TerminateMatch answered OK
    trace: list[str] = field(default_factory=list)

    def watches(self) -> list[Watch]:
        return self.spectators + [w for c in self.clients for w in c.watches]


def newer(a: ViewEnvelope | None, b: ViewEnvelope | None) -> ViewEnvelope | None:
    """The later of two views of a match (by seq, then status: the end's view comes last)."""
    if a is None or b is None:
        return a or b
    return b if (b.seq, ORDER[b.status]) > (a.seq, ORDER[a.status]) else a


class Fuzz(FuzzBase):
    def __init__(self, mgr: MatchManager, store: FaultyStore, rng: random.Random) -> None:
        super().__init__(mgr, store, rng)
        self.ids = itertools.count(1)
        self.final: dict[str, LiveMatch] = {}  # each match as the drained manager holds it

    def answer(self, t: Table, what: str, exc: BaseException) -> tuple[str, str]:
        if isinstance(exc, RulesError):
            self.problem(t, f"{what}: a rules error on a current view: {exc!r}")
            return ("RULES", exc.reason)
        if not isinstance(exc, SessionError) or exc.code == "INTERNAL":
            self.problem(t, f"{what}: unexpected {exc!r}")
            return ("", "")
        self.ops[what, exc.reason] += 1
        return (exc.code, exc.reason)

    # ---- the requests ---------------------------------------------------------------------

    async def submit(self, t: Table, c: Client, s: Sent, twice: bool = False, why: str = "") -> bool:
        """Send ``s`` (twice at once with ``twice``); True when it was answered with a result."""
        acked = s.seq is not None

        async def call() -> SubmitResult:
            p = await self.principal(t, c)
            return await self.mgr.submit_action(t.match_id, p, s.action, s.expected_seq, s.cid)

        calls = [call() for _ in range(2 if twice else 1)]
        results = await asyncio.gather(*calls, return_exceptions=True)
        # the first application first (two racing calls are answered in any order)
        oks = sorted((r for r in results if isinstance(r, SubmitResult)), key=lambda r: r.duplicate)
        errors = [self.answer(t, "submit", r) for r in results if not isinstance(r, SubmitResult)]
        t.trace.append(f"{c.name} submit {s.cid} {s.action!r} at {s.expected_seq}{' ' + why if why else ''}"
                       f" x{len(calls)}: {[(r.seq, r.duplicate) for r in oks]} {errors}")
        for r in oks:
            self.ops["submit", "duplicate" if r.duplicate else "ok"] += 1
            s.answers.append(f"ok {r.seq}")
            if r.action != s.action:
                self.problem(t, f"{s.cid} ({s.action}) was answered for the action {r.action}")
            if s.seq is not None and r.seq != s.seq:
                self.problem(t, f"{s.cid} was answered seq {s.seq}, then seq {r.seq}")
            if s.seq is not None and not r.duplicate:
                self.problem(t, f"{s.cid} was applied again (seq {r.seq})")
            s.seq = s.seq if s.seq is not None else r.seq
            if r.view.seq == r.seq:  # a retry's view is of its seq: not the client's newest
                c.view = newer(c.view, r.view)
        for code, reason in errors:
            s.answers.append(reason)
            if acked and (code, reason) != UNAVAILABLE:  # its retry gets its result, whatever came since
                self.problem(t, f"{s.cid}, acknowledged at seq {s.seq}, sent again: {code} {reason}")
            elif (code, reason) == STALE:
                pass
            elif (code, reason) == NOT_ACTIVE:
                c.done = True
            elif (code, reason) == SEAT_LEFT and c.left:
                c.done = True
            elif (code, reason) != UNAVAILABLE:
                self.problem(t, f"{c.name}'s submit {s.cid} answered {code} {reason}")
        for r in results:
            if getattr(r, "reason", "") == "STALE_SEQUENCE":
                c.view = newer(c.view, r.current)
        if oks:
            s.last = "ok"
        elif errors:
            s.last = "unavailable" if UNAVAILABLE in errors else errors[-1][1]
        c.pending = s if s.last == "unavailable" else (None if c.pending is s else c.pending)
        return bool(oks)

    async def leave(self, t: Table, c: Client) -> None:
        c.leaves += 1
        resign = self.rng.random() < 0.5
        try:
            summary = await self.mgr.leave_match(t.match_id, await self.principal(t, c), resign=resign)
        except Exception as exc:  # noqa: BLE001 - classified
            code = self.answer(t, "leave", exc)
            t.trace.append(f"{c.name} leave: {code}")
            c.pending_leave = code == UNAVAILABLE
            if code == NOT_ACTIVE:
                c.done = True
            elif code != UNAVAILABLE:
                self.problem(t, f"{c.name}'s leave answered {code}")
            return
        self.ops["leave", "ok"] += 1
        t.trace.append(f"{c.name} leave: OK {summary.status} {summary.result}")
        c.pending_leave, c.left, c.done = False, True, True
        if SEATS[t.game] == 2:
            result = summary.result or {}
            ended = (summary.status, result.get("outcome"), result.get("resigned"))
            if ended != ("finished", "resigned", c.seat):
                self.problem(t, f"{c.name}'s resignation answered OK with {summary.status} {result}")
        elif not summary.seats[c.seat].replaced_by_bot and summary.status == "active":
            self.problem(t, f"{c.name} left, and a bot does not play its seat")

    async def reissue(self, t: Table, c: Client) -> None:
        """The player lost its token: the operator gives its seat a new one (its streams end,
        TOKEN_REVOKED: absent until it watches again with the new token, at once)."""
        try:
            result, _ = await self.mgr.reissue_seat_token(t.match_id, c.seat)
        except Exception as exc:  # noqa: BLE001 - classified
            code = self.answer(t, "reissue", exc)
            t.trace.append(f"{c.name} reissue: {code}")
            c.pending_reissue = code == UNAVAILABLE
            if code == NOT_ACTIVE:
                c.done = True
            elif code != UNAVAILABLE:
                self.problem(t, f"{c.name}'s reissue answered {code}")
            return
        self.ops["reissue", "ok"] += 1
        t.trace.append(f"{c.name} reissue: OK")
        if result.seat != c.seat:
            self.problem(t, f"{c.name}'s seat {c.seat} reissued as seat {result.seat}")
        c.revoked.append(c.token)
        c.token, c.pending_reissue, c.wandered = result.token, False, True
        await self.watch(t, c)

    async def get_view(self, t: Table, c: Client) -> None:
        try:
            c.view = newer(c.view, await self.mgr.get_view(t.match_id, await self.principal(t, c)))
        except Exception as exc:  # noqa: BLE001 - classified
            code = self.answer(t, "view", exc)
            if code == UNAVAILABLE:  # a match evicted after its end, read back: tried again
                return
            if code != SEAT_LEFT or not c.left:
                self.problem(t, f"{c.name}'s view answered {code}")
            c.done = True

    def seen(self, c: Client) -> int:
        """The last seq the client's streams gave it (-1: none)."""
        seqs = [e.seq for w in c.watches for e in w.stream.events if e.kind in ("action", "snapshot")]
        return max(seqs, default=-1)

    async def principal(self, t: Table, c: Client) -> Principal:
        """The client's principal, resolved from its token as the transport does: a token the
        manager does not know may be of a match evicted after its end, which is recalled from
        the store (UNAVAILABLE while it cannot be read) and the token asked again."""
        try:
            return self.mgr.authenticate(t.match_id, c.token)
        except SessionError as exc:
            if exc.code != "UNAUTHENTICATED" or not await self.mgr.recall(t.match_id):
                raise
            self.ops["recall", "ok"] += 1
            return self.mgr.authenticate(t.match_id, c.token)

    async def watch(self, t: Table, c: Client | None) -> None:
        """Open a stream: from a snapshot, or resumed after the last seq this client saw."""
        last = self.seen(c) if c is not None else max(
            (e.seq for w in t.spectators for e in w.stream.events if e.kind in ("action", "snapshot")),
            default=-1)
        after = last if last >= 0 and self.rng.random() < 0.7 else -1
        try:
            p = await self.principal(t, c) if c is not None else Principal("spectator", t.match_id)
        except Exception as exc:  # noqa: BLE001 - classified
            code = self.answer(t, "watch", exc)
            if code != UNAVAILABLE:
                self.problem(t, f"{c.name} cannot watch: {code}")
            return
        w = Watch(Stream(self.mgr, t.match_id, p, after_seq=after), after, c.name if c else "spectator")
        (c.watches if c is not None else t.spectators).append(w)
        t.trace.append(f"{w.owner} watch after {after}")
        self.ops["watch", "resume" if after >= 0 else "snapshot"] += 1

    async def close(self, t: Table, w: Watch) -> None:
        t.trace.append(f"{w.owner} closes a stream after {w.after_seq}"
                       f"{f' (ended: {w.stream.error!r})' if w.stream.task.done() else ''}")
        w.closed = True
        await w.stream.close()

    async def wander(self, t: Table, c: Client) -> None:
        """Close every stream, stay away for about a grace window, come back."""
        for w in c.watches:
            if w.open:
                await self.close(t, w)
        c.wandered = True
        away = self.rng.uniform(0.3, 2.0) * t.grace_s
        t.trace.append(f"{c.name} away for {away * 1000:.0f} ms")
        self.ops["wander", "away"] += 1
        await asyncio.sleep(away)
        await self.watch(t, c)

    def catch_up(self, c: Client) -> None:
        """The client's view is the newest its streams gave it."""
        for w in c.watches:
            for e in reversed(w.stream.events):
                if e.view is not None and e.kind in ("action", "snapshot", "match_ended"):
                    c.view = newer(c.view, e.view)
                    break

    async def step(self, t: Table, c: Client) -> bool:
        """One request of ``c``; False once it has nothing more to do."""
        if c.pending_leave:
            await self.leave(t, c)
            return True
        if c.pending_reissue:
            await self.reissue(t, c)
            return True
        if c.pending is not None:
            await self.submit(t, c, c.pending, why="(retry: UNAVAILABLE)")
            return True
        if c.done:
            return False
        self.catch_up(c)
        if c.view is None or self.rng.random() < 0.1:
            await self.get_view(t, c)
            if c.done or c.view is None:
                return not c.done
        v = c.view
        if v.status in ("finished", "terminated"):
            c.done = True
            return False
        mine = v.status == "active" and v.view.get("to_act") == c.seat and v.view.get("legal")
        acked = [s for s in c.sent.values() if s.seq is not None]
        r = self.rng.random()
        if r < 0.005:
            await self.leave(t, c)
        elif r < 0.015:
            await self.wander(t, c)
        elif r < 0.02:
            await self.reissue(t, c)
        elif r < 0.06 and acked:
            await self.submit(t, c, self.rng.choice(acked), why="(again: its answer lost)")
        elif r < 0.1:
            await self.watch(t, c)
        elif r < 0.14:
            open_watches = [w for w in c.watches if w.open]
            if len(open_watches) > 1:  # the last one stays: the player stays present
                await self.close(t, self.rng.choice(open_watches))
        elif r < 0.18:
            await asyncio.sleep(self.rng.uniform(0.5, 2.0) * t.turn_s)  # the deadline may pass
        elif mine:
            s = Sent(f"{c.name}-{next(self.ids)}", self.rng.choice(list(v.view["legal"])), v.seq)
            c.sent[s.cid] = s
            if await self.submit(t, c, s, twice=self.rng.random() < 0.1) and self.rng.random() < 0.1:
                await self.submit(t, c, s, why="(again: its answer lost)")
        else:
            await asyncio.sleep(self.rng.uniform(0, 0.004))  # waits for the others
        return True

    async def admin_loop(self, t: Table, within: float) -> None:
        await asyncio.sleep(self.rng.uniform(0.05, within))
        while True:
            try:
                summary = await self.mgr.terminate_match(t.match_id, "fuzz")
            except Exception as exc:  # noqa: BLE001 - classified
                code = self.answer(t, "terminate", exc)
                t.trace.append(f"admin terminate: {code}")
                if code != UNAVAILABLE:
                    if code != NOT_ACTIVE:
                        self.problem(t, f"terminate answered {code}")
                    return
                await asyncio.sleep(0.01)  # retried until the store answers (after the faults too)
                continue
            self.ops["terminate", "ok"] += 1
            t.trace.append(f"admin terminate: OK {summary.status}")
            t.terminated = True
            if summary.status != "terminated":
                self.problem(t, f"a termination answered OK with {summary.status}")
            return

    async def spectator_loop(self, t: Table, within: float) -> None:
        loop = asyncio.get_running_loop()
        end = loop.time() + within
        while loop.time() < end:
            await asyncio.sleep(self.rng.uniform(0, within / 4))
            open_watches = [w for w in t.spectators if w.open]
            if open_watches and self.rng.random() < 0.4:
                await self.close(t, self.rng.choice(open_watches))
            else:
                await self.watch(t, None)

    # ---- the run --------------------------------------------------------------------------

    async def create(self, game: str) -> Table:
        n = SEATS[game]
        bots = set(self.rng.sample(range(n), self.rng.randint(0, n // 2))) if self.rng.random() < 0.5 else set()
        seats = [SeatConfig("bot", "rnd") if i in bots else SeatConfig() for i in range(n)]
        options = dict(self.rng.choice(OPTIONS[game]))
        turn = self.rng.choice(TURN_TIMES)
        request = dict(game=game, seats=seats, name=f"fuzz {game}", spectators_allowed=True,
                       spectator_delay_actions=self.rng.choice((0, 0, 0, 1, 3)))
        if game in ("japanese_joker", "georgian_joker"):
            options.update(turn_time_s=turn, reconnect_grace_s=self.rng.choice(GRACES))
        else:
            request["turn_time_s"] = turn
        if game == "georgian_joker" and self.rng.random() < 0.5:
            request["takeover_bot"] = "rnd"
        summary = await self.mgr.create_match(CreateMatchRequest(options=options, **request))
        clients = []
        m = self.mgr._matches[summary.match_id]
        t = Table(summary.match_id, game, bots, clients, m.turn_time_s * TIME_SCALE,
                  m.reconnect_grace_s * TIME_SCALE)
        for seat in range(n):
            if seat in bots:
                continue
            joined = await self.mgr.join_match(summary.match_id, seat, f"p{seat}")
            c = Client(f"{game[:3]}{len(self.tables)}-{seat}", seat, joined.token)
            clients.append(c)
            await self.watch(t, c)  # present from the start
            await asyncio.sleep(0)
        self.tables.append(t)
        return t

    async def play(self, matches: int, steps: int, within: float) -> None:
        games = [list(SEATS)[i % len(SEATS)] for i in range(matches)]
        # The matches are set up at the real pace of time: the join that takes a match's last
        # seat starts it, with that seat absent until its stream opens a moment later, and a
        # busy machine's pause longer than a scaled grace window (45 ms) would end it by a
        # forfeit nobody asked for. Then time shrinks, and the first decisions are timed anew.
        clock = self.mgr._clock
        scaled, clock.config = clock.config, replace(clock.config, time_scale=1.0)
        tables = [await self.create(g) for g in games]
        await until(lambda: all(c.watches[0].stream.events for t in tables for c in t.clients))
        clock.config = scaled
        for t in tables:
            m = self.mgr._matches[t.match_id]
            if not all(s.present for s in m.seats) or not m.active:
                self.problem(t, f"set up {m.status}, present {[s.present for s in m.seats]}")
            clock.disarm(m)
            clock.schedule(m)
        self.store.active = True
        loops = []
        for t in tables:
            loops += [self.client_loop(t, c, steps) for c in t.clients]
            loops.append(self.spectator_loop(t, within))
            if self.rng.random() < 0.25:
                loops.append(self.admin_loop(t, within))
        await asyncio.gather(*loops)
        self.store.active, self.store.unreadable = False, 0

    async def settle(self) -> None:
        """The faults are over: every request answered UNAVAILABLE is retried until it gets
        another answer, the settle series and the clock's retries finish."""
        for _ in range(50):
            pending = [(t, c) for t in self.tables for c in t.clients
                       if c.pending or c.pending_leave or c.pending_reissue]
            if not pending:
                break
            await asyncio.gather(*(self.step(t, c) for t, c in pending))
            await asyncio.sleep(0.01)
        else:
            self.problems.append(f"requests still failing after the faults: {[c.name for _, c in pending]}")
        seating = self.mgr._seating
        try:
            await until(lambda: not (seating.end_settlements or seating.seat_resyncs or seating.start_retries
                                     or seating.create_checks), timeout=30.0)
        except AssertionError:
            self.problems.append(f"settle series still running: {list(seating.end_settlements)} "
                                 f"{list(seating.seat_resyncs)} {list(seating.start_retries)}")
        for t in self.tables:  # a retry whose answer was lost, once the match is over or moved on
            for c in t.clients:
                acked = [s for s in c.sent.values() if s.seq is not None]
                if acked:
                    await self.submit(t, c, self.rng.choice(acked), why="(again, after the faults)")
        # the clock's retries (RETRY_AFTER_STORE_FAILURE_S) catch the matches up with an action
        # stored whose answer was lost
        await asyncio.sleep(0.2)


# ---- the checks ----------------------------------------------------------------------------

async def check_agreement(fz: Fuzz, inner, logs: list[dict]) -> dict:
    """Memory and store agree on every match; returns the stored matches."""
    stored_matches = {}
    unwritten = {e["match_id"] for e in logs if e.get("event") == "store_status_failed"}
    for t in fz.tables:
        m = fz.final[t.match_id]
        stored = stored_matches[t.match_id] = await inner.load_match(t.match_id)
        rec = stored.record
        if (rec.status, m.status) == ("active", "finished") and m.result["outcome"] == "completed" \
                and len(stored.actions) == m.seq and t.match_id in unwritten:
            # the status write after the last action failed (store_status_failed): the log is
            # durable and whoever reads the match back derives that end (MatchWriter.apply,
            # MatchManager._load), so this is the one difference the design allows
            pass
        elif rec.status != m.status:
            fz.problem(t, f"status: memory {m.status}, store {rec.status}")
        elif m.over and (rec.result or {}).get("outcome") != (m.result or {}).get("outcome"):
            fz.problem(t, f"outcome: memory {m.result}, store {rec.result}")
        mine = [(a.seq, a.seat, a.action, a.by, a.client_action_id) for a in m.actions]
        theirs = [(a.seq, a.seat, a.action, a.by, a.client_action_id) for a in stored.actions]
        if mine != theirs:
            first = next((i for i, (a, b) in enumerate(zip(mine, theirs)) if a != b), min(len(mine), len(theirs)))
            fz.problem(t, f"{m.status} match, log: memory {len(mine)} actions, store {len(theirs)}, "
                          f"first difference at seq {first + 1}: "
                          f"{mine[first:first + 1]} / {theirs[first:first + 1]}")
        if {d.deal: d for d in stored.decks} != m.decks:
            fz.problem(t, f"decks: memory deals {sorted(m.decks)}, "
                          f"store deals {sorted(d.deal for d in stored.decks)}")
        for a, b in zip((s.record() for s in m.seats), rec.seats):
            if a != b:
                fz.problem(t, f"seat {a.seat}: memory {a}, store {b}")
    return stored_matches


def check_actions(fz: Fuzz, stored_matches: dict) -> None:
    """What the clients were answered is what the log holds."""
    for t in fz.tables:
        log = stored_matches[t.match_id].actions
        ids = collections.Counter(a.client_action_id for a in log if a.client_action_id)
        for cid, n in ids.items():
            if n > 1:
                fz.problem(t, f"client_action_id {cid} is {n} times in the log")
        logged = {a.client_action_id: a for a in log if a.client_action_id}
        sent = {s.cid: (c, s) for c in t.clients for s in c.sent.values()}
        for a in log:
            if a.by == "player":
                c, s = sent.get(a.client_action_id, (None, None))
                if s is None or (c.seat, s.action) != (a.seat, a.action):
                    fz.problem(t, f"seq {a.seq}: a player action nobody sent: {a}")
        for cid, (c, s) in sent.items():
            a = logged.get(cid)
            if s.seq is not None:
                if a is None or a.seq != s.seq or len(log) < s.seq or log[s.seq - 1].client_action_id != cid:
                    fz.problem(t, f"{cid} was acknowledged at seq {s.seq}, the log has it at "
                                  f"{a.seq if a else None} ({s.answers})")
            elif s.last == "unavailable":
                fz.problem(t, f"{cid} still unanswered after the faults ({s.answers})")
            elif a is not None:
                fz.problem(t, f"{cid} is in the log at seq {a.seq}, and was answered {s.answers}")


def overflowed(c: Client) -> bool:
    """Whether one of the client's streams fell behind and was closed (absent meanwhile)."""
    return any(getattr(w.stream.error, "reason", "") == "WATCH_OVERFLOW" for w in c.watches)


def check_ends(fz: Fuzz, logs: list[dict]) -> None:
    ends = collections.defaultdict(list)
    for e in logs:
        if e.get("event") == "match_ended":
            ends[e["match_id"]].append(e)
    for t in fz.tables:
        m = fz.final[t.match_id]
        mine = ends[t.match_id]
        if len(mine) > 1:
            fz.problem(t, f"ended {len(mine)} times: {[(e['outcome'], e['seq']) for e in mine]}")
        if not m.over:
            if mine:
                fz.problem(t, f"{m.status} after a match_ended: {mine}")
            if t.terminated:
                fz.problem(t, f"{m.status} after a termination answered OK")
            continue
        result = m.result or {}
        outcome = result.get("outcome")
        if len(mine) == 1 and (mine[0]["seq"], mine[0]["outcome"]) != (m.seq, outcome):
            fz.problem(t, f"logged match_ended at seq {mine[0]['seq']} ({mine[0]['outcome']}), "
                          f"ended at seq {m.seq} ({outcome})")
        if not mine:
            fz.problem(t, f"{m.status} ({outcome}) without a match_ended")
        if (m.status == "terminated") != (outcome == "terminated"):
            fz.problem(t, f"status {m.status} with outcome {outcome}")
        if (outcome == "completed") != m.state.is_over():
            fz.problem(t, f"outcome {outcome}, and the rules say over={m.state.is_over()}")
        if t.terminated and m.status != "terminated":
            fz.problem(t, f"a termination answered OK, and the match is {m.status} ({outcome})")
        others = lambda seat: [s for s in range(SEATS[t.game]) if s != seat]  # noqa: E731
        by_seat = {c.seat: c for c in t.clients}
        if outcome == "resigned":
            c = by_seat.get(result.get("resigned"))
            if c is None or not c.leaves or result.get("winners") != others(c.seat):
                fz.problem(t, f"resigned: {result}, and nobody of that seat left")
        if outcome == "forfeit":
            c = by_seat.get(result.get("forfeited"))
            if c is None or not (c.wandered or overflowed(c)) or result.get("winners") != others(c.seat):
                fz.problem(t, f"forfeit: {result}, and that seat's player never wandered off")
        absent = result.get("absent", [])
        if outcome == "abandoned" and not all(by_seat.get(s) and by_seat[s].wandered for s in absent):
            fz.problem(t, f"abandoned: {result}")
        if SEATS[t.game] == 2:
            for c in t.clients:
                if c.left and (outcome, result.get("resigned")) != ("resigned", c.seat):
                    fz.problem(t, f"{c.name}'s resignation was answered OK, and the match ended {result}")


def check_streams(fz: Fuzz, stored_matches: dict) -> None:
    for t in fz.tables:
        m = fz.final[t.match_id]
        log = stored_matches[t.match_id].actions
        details = {rec.seq: extra for rec, _, extra in m.replay(0, m.seq)}  # as a resume gives them
        for w in t.watches():
            s = w.stream
            err = s.error
            if err is not None and getattr(err, "reason", "") not in STREAM_ENDS | STREAM_FAILS:
                fz.problem(t, f"{w.owner}'s stream ended with {err!r}")
            events = [e for e in s.events if e.kind != "heartbeat"]
            pos = w.after_seq if w.after_seq >= 0 else None
            ended = 0
            story = f"{w.owner}'s stream after {w.after_seq}"
            for i, e in enumerate(events):
                if ended and e.kind != "presence":
                    fz.problem(t, f"{story}: {e.kind} {e.seq} after match_ended")
                if e.kind == "snapshot":
                    if i:
                        fz.problem(t, f"{story}: a snapshot as its event {i}")
                    elif w.after_seq == 0 == e.seq:  # the start's: a started match, no action yet
                        if e.view is None or e.view.status == "waiting":
                            fz.problem(t, f"{story}: a snapshot at 0 of a match not started")
                    elif 0 <= w.after_seq and e.seq - w.after_seq <= fz.mgr.config.snapshot_threshold:
                        fz.problem(t, f"{story}: a snapshot at {e.seq}, not the missed actions")
                    pos = e.seq
                elif e.kind == "action":
                    if pos is None or e.seq != pos + 1:
                        fz.problem(t, f"{story}: action {e.seq} after {pos}")
                    pos = e.seq
                    rec = log[e.seq - 1] if 0 < e.seq <= len(log) else None
                    if rec is None or (rec.seat, rec.action, rec.by) != (e.seat, e.action, e.by):
                        fz.problem(t, f"{story}: action {e.seq} {e.seat} {e.action!r}, the log has {rec}")
                    if e.view is not None and e.view.seq != e.seq:
                        fz.problem(t, f"{story}: action {e.seq} carries the view of seq {e.view.seq}")
                    if dict(e.details) != details.get(e.seq):
                        fz.problem(t, f"{story}: action {e.seq} with details {dict(e.details)}, "
                                      f"replayed with {details.get(e.seq)}")
                elif e.kind == "match_ended":
                    ended += 1
                    if e.seq != m.seq or pos != m.seq:
                        fz.problem(t, f"{story}: match_ended at {e.seq}, after {pos}; the match ended at {m.seq}")
            if ended > 1:
                fz.problem(t, f"{story}: {ended} match_ended")
            if not w.closed and err is None and s.task.done() and not ended:
                fz.problem(t, f"{story} ended without match_ended")
            if m.over and not w.closed and getattr(err, "reason", "") == "DRAINING" and not ended:
                fz.problem(t, f"{story}: still open at the drain, the match had ended ({m.status})")


def check_tokens(fz: Fuzz, mgr: MatchManager) -> None:
    """Every client's last token reaches its seat; every token the operator replaced is
    refused. (Every match is held: read back if it was evicted.)"""
    for t in fz.tables:
        for c in t.clients:
            try:
                seat = mgr.authenticate(t.match_id, c.token).seat
            except SessionError as exc:
                seat = exc
            if seat != c.seat:
                fz.problem(t, f"{c.name}'s token (seat {c.seat}) reaches {seat!r}")
            for token in c.revoked:
                try:
                    mgr.authenticate(t.match_id, token)
                except SessionError:
                    continue
                fz.problem(t, f"{c.name}'s replaced token still works")


def check_logs(fz: Fuzz, logs: list[dict]) -> None:
    for e in logs:
        if e.get("event") in ("session_task_failed", "session_write_failed", "sweep_failed"):
            fz.problems.append(f"logged {e}")


def snapshot(m) -> tuple:
    views = {a: m.envelope(a).view for a in [*range(m.num_seats), SPECTATOR]}
    return m.status, m.seq, (m.result or {}).get("outcome"), views


async def reload_and_compare(fz: Fuzz, inner, cfg) -> None:
    """A fresh manager on the same store rebuilds every match as the first one held it when it
    drained: compared as soon as it has started (its timers and bots have not run yet), the
    ended matches then, read back one by one."""
    held = {t.match_id: snapshot(fz.final[t.match_id]) for t in fz.tables}
    # keeps what it reads back (its sweeper would evict an ended match while the next is read)
    again = MatchManager(replace(cfg, finished_retention_s=3600.0), store=inner, bot_host=RandomBots(0),
                         metrics=Metrics())
    await again.start()
    try:
        def compare(t, m) -> None:
            status, seq, outcome, views = held[t.match_id]
            now = snapshot(m)
            if (status, now[0]) == ("finished", "active") or now[1:3] != (seq, outcome) \
                    or (now[0] != status and (status, now[0]) != ("active", "finished")):
                fz.problem(t, f"reloaded as {now[:3]}, held as {(status, seq, outcome)}")
            for audience, view in views.items():
                if now[3][audience] != view:
                    fz.problem(t, f"reloaded, the view of {audience} differs")
        unfinished = [t for t in fz.tables if t.match_id in again._matches]
        for t in unfinished:  # no await: nothing moves meanwhile
            compare(t, again._matches[t.match_id])
        for t in fz.tables:
            if t not in unfinished:
                compare(t, await again._get(t.match_id))
        check_tokens(fz, again)  # as durable as the seats
    finally:
        await again.close()


async def fuzz(seed: int, inner, matches: int, steps: int, within: float) -> tuple[Fuzz, dict]:
    rng = random.Random(seed)
    store = FaultyStore(inner, random.Random(seed + 1), p=0.12 + 0.1 * (seed % 3),
                        weights={"append_action": 1.5, "set_status": 2.5, "save_seat": 2.0, "start_match": 0.0},
                        first_fails=("set_status",))  # a match's end is written a few times a run
    # odd seeds evict the matches that ended at once: read back by the next request about them
    cfg = config(time_scale=TIME_SCALE, reconnect_grace_s=15, max_streams_per_seat=3,
                 finished_retention_s=0.05 if seed % 2 else 3600.0)
    mgr = MatchManager(cfg, store=store, bot_host=RandomBots(seed), metrics=Metrics())
    await mgr.start()
    mgr._sweep_interval = 0.1  # the settle series back off up to this
    fz = Fuzz(mgr, store, rng)
    with capture_logs() as logs:
        try:
            await fz.play(matches, steps, within)
            await fz.settle()
        finally:
            await mgr.drain()  # quiet: nothing moves while memory and store are compared
        for t in fz.tables:  # a match evicted after its end is read back
            fz.final[t.match_id] = mgr._matches.get(t.match_id) or await mgr._get(t.match_id)
        for t in fz.tables:
            for w in t.watches():
                await asyncio.wait([w.stream.task], timeout=30.0)
        stored = await check_agreement(fz, inner, logs)
        check_actions(fz, stored)
        check_ends(fz, logs)
        check_streams(fz, stored)
        check_logs(fz, logs)
        check_tokens(fz, mgr)
        await mgr.close()
        await reload_and_compare(fz, inner, cfg)
    auto = collections.Counter((e.get("by"), e.get("reason")) for e in logs if e.get("event") == "action_applied")
    ended = collections.Counter(e.get("outcome") for e in logs if e.get("event") == "match_ended")
    stats = dict(faults=dict(store.faults), ops=dict(fz.ops), moves=dict(auto), ended=dict(ended),
                 events=dict(collections.Counter(e["event"] for e in logs
                                                 if e.get("log_level") in ("warning", "error"))),
                 takeovers=sum(e.get("change") == "bot_took_over" for e in logs
                               if e.get("event") == "presence_changed"))
    return fz, stats


@pytest.mark.parametrize("kind, seed", [("memory", 1), ("memory", 2), ("memory", 3), ("memory", 4),
                                        ("memory", 5), ("memory", 6), ("sqlite", 7), ("sqlite", 8)])
def test_matches_played_under_store_faults_stay_consistent(kind, seed, tmp_path, monkeypatch):
    # the settle series and the clock's retries come soon, before or after the next requests
    monkeypatch.setattr(seating_module, "START_RETRY_FIRST_S", (0.005, 0.02, 0.05)[seed % 3])
    monkeypatch.setattr(clock_module, "RETRY_AFTER_STORE_FAILURE_S", 0.02)
    inner = MemoryStore() if kind == "memory" else SqliteStore(tmp_path / "fuzz.sqlite3")
    fz, stats = run(fuzz(seed, inner, matches=16, steps=120, within=1.5), timeout=60)
    fz.fail_on_problems(stats)
    # the fuzz did what it is for
    faults = faults_by_write(stats)
    assert faults["append_action", "after"] and faults["append_action", "before"], stats
    assert faults["set_status", "after"] + faults["set_status", "before"], stats
    assert stats["events"].get("log_caught_up"), stats  # actions found written after an error
    assert stats["ops"].get(("submit", "duplicate")), stats
    assert stats["moves"].get(("auto", "timeout")), stats
    assert len(stats["ended"]) >= 2, stats  # matches ended in more than one way
