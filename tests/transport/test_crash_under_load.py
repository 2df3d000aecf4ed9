"""kill -9 of ``python -m engine_service serve`` under concurrent load, then a restart on the
same database, SQLite or PostgreSQL (docs/operations.md: "a crash loses nothing that was
acknowledged"; docs/api.md, Reconnecting without losing anything).

One match of each game plus a Klaberjass match with a short turn time (its timer is armed at
the crash) are played at once by one client per seat: each acts on its own WatchMatch stream
with ``expected_seq`` and a fresh ``client_action_id``, sometimes twice at once (a second tab
on the same view) or sends its request again before the answer came (a hasty retry), so
that many submits are in flight. After a seeded amount of play a killer process watches the
database and sends SIGKILL the instant the next commit becomes visible there: an action is
then durable while its answer, and the submits queued behind it, are still on their way.

Every submit is recorded as acknowledged (an answer came) or in doubt (none came). The database
as the kill left it is the ground truth of what was durable: on SQLite a copy of the file and its
WAL; on PostgreSQL its tables, read once the server has ended every session of the dead engine
(a statement it had sent may still commit after the kill: that action is durable, in doubt).
Then:

* every acknowledged action and every action a watch stream saw is in it at its seq, the log
  is contiguous from 1, and a refused submit is not in it;
* after the restart the admin's transcript export is that log, and every seat's view equals
  the view of an in-process replay of the transcript;
* every in-doubt submit is retried with the same client_action_id and expected_seq: a durable
  one answers ``duplicate`` with the seq it got before the crash; one that was not durable is
  applied now (seq expected + 1) or refused ABORTED / STALE_SEQUENCE (FAILED_PRECONDITION /
  MATCH_NOT_ACTIVE when the action that took its seq ended the match); never applied twice;
* each seat's stream resumed with after_seq = the last seq it saw gets every later action
  once, in order, with the replayed views; so does a spectator's, resumed only after its
  table has played on for a while;
* the timed match's deadline is a whole turn counted from its players' return after the
  restart, and its idle seat is moved by the timer (``reason`` timeout), not earlier;
* the matches play to their end; the final log holds each applied client_action_id exactly
  once and every player action in it is one of the clients' submits.

Crash rounds repeat (restart, play, kill again) until both kinds of in-doubt submit were seen.
"""

from __future__ import annotations

import asyncio
import json
import random
import shutil
import sqlite3
import sys
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc
import pytest
from google.protobuf import duration_pb2

from engine_service.rules import transcript as rules_transcript
from engine_service.rules.game import CHANCE
from engine_service.rules.registry import get_game
from engine_service.sessions.api import ViewEnvelope
from engine_service.transport.codec import view_message
from engine_service.transport.generated import (admin_pb2_grpc, card_games_pb2 as pb,
                                                card_games_pb2_grpc, match_pb2)

from tests.store import pg

from .engine_process import Service
from .harness import CHANNEL_OPTIONS, bearer, error_of
from .players import export_transcript

SEED = 20250611
TIME_SCALE = 0.1  # every turn time and grace period of the engines, scaled
TIMED_TURN_S = 10  # the timed match's turn time: one second of real time
LONG_TURN_S = 120  # the Joker games' timers are armed but never expire here (12 s)
GRACE_S = 600  # a minute of real time: nobody forfeits while the engine is down
MAX_CRASHES = 3
ENV = {"CARDGAMES_TIME_SCALE": str(TIME_SCALE), "CARDGAMES_DEFAULT_TURN_TIME_S": "0",
       "CARDGAMES_RECONNECT_GRACE_S": str(GRACE_S), "CARDGAMES_DISABLE_PLUGIN_AUTOLOAD": "1"}

ACTION, SNAPSHOT = match_pb2.EVENT_KIND_ACTION, match_pb2.EVENT_KIND_SNAPSHOT
ENDED, HEARTBEAT = match_pb2.EVENT_KIND_MATCH_ENDED, match_pb2.EVENT_KIND_HEARTBEAT

#: Sends SIGKILL to the engine (argv[2]) the instant a new action is committed in its database
#: (argv[1]: a SQLite file URI or a PostgreSQL URL) after "go" on stdin: a reader sees a commit
#: only once it is synced (PostgreSQL: flushed, the store asks for synchronous_commit), and the
#: engine answers only after that, so the kill lands between durability and the answer (or,
#: with a bug that answers first, after answers whose actions were never written).
KILLER = r"""
import os, signal, sys, time
if sys.argv[1].startswith("postgresql:"):
    import psycopg  # autocommit: every poll is a statement of its own, seeing the newest commits
    conn = psycopg.connect(sys.argv[1], autocommit=True)
    query = "SELECT count(*) FROM match_actions"  # rows are only appended here
else:
    import sqlite3
    conn = sqlite3.connect(sys.argv[1] + "?mode=ro", uri=True, isolation_level=None)
    query = "SELECT coalesce(max(rowid), 0) FROM match_actions"
newest = lambda: conn.execute(query).fetchone()[0]
print("ready", flush=True)
if sys.stdin.readline().strip() != "go":
    sys.exit()
base, give_up = newest(), time.monotonic() + 5
while newest() == base:
    if time.monotonic() > give_up:
        sys.exit("no commit")
os.kill(int(sys.argv[2]), signal.SIGKILL)
print(base, newest(), flush=True)
"""


@dataclass(frozen=True)
class Row:
    """One stored action (match_actions)."""

    seq: int
    seat: int
    action: str
    by: str
    cid: str | None
    reason: str
    at: float  # unix time of the write


@dataclass
class Event:
    seq: int
    seat: int
    action: str
    by: int
    reason: str
    view: match_pb2.View
    life: int  # the engine process that sent it (0: the first)
    at: float  # unix time of arrival


@dataclass
class Stream:
    """One seat's WatchMatch stream, reopened after every restart (``seat`` None: a
    spectator's)."""

    seat: int | None
    events: list[Event] = field(default_factory=list)  # ACTION events, in arrival order
    last_seen: int = -1  # seq of the last ACTION or SNAPSHOT event
    view: match_pb2.View | None = None  # the newest view it delivered
    ended: bool = False
    task: asyncio.Task | None = None


@dataclass
class Table:
    game: str
    match_id: str
    tokens: list[str]
    timed: bool
    streams: list[Stream]
    acted_at: list[int]  # per seat: the seq of the view it last acted on
    spectator: Stream = field(default_factory=lambda: Stream(None))  # comes back late after a restart
    playing: bool = False

    @property
    def name(self) -> str:
        return f"{self.game}{' (timed)' if self.timed else ''}"


@dataclass
class Submit:
    table: Table
    seat: int
    cid: str
    action: str
    expected: int
    life: int
    outcome: str = "pending"  # "acked", "refused", "in_doubt" (no answer), "failed"
    seq: int = 0
    duplicate: bool = False
    reason: str = ""
    retry: tuple[Any, ...] | None = None  # after the restart: ("acked", seq, duplicate) | ("refused", code, reason)

    @property
    def key(self) -> tuple[str, int, str]:
        return self.table.match_id, self.seat, self.cid


class Load:
    """The clients of every seat of every table, across the engine's lives."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.tables: list[Table] = []
        self.submits: list[Submit] = []
        self.tasks: set[asyncio.Task] = set()  # submits
        self.late: list[asyncio.Task] = []  # spectators coming back after a restart
        self.returns: list[tuple[int, float]] = []  # per restart: the timed match's seq, when its players came back
        self.failures: list[str] = []
        self.pending = 0  # submits sent and not answered
        self.acked_in_life = 0  # player actions acknowledged by the current engine
        self.doomed = False  # the killer was told to go: a call failing without an answer is in doubt
        self.killed = False  # the kill was sent: no new submits
        self.life = 0
        self.deadline_before_crash: float | None = None  # the timed match's, seen by its clients
        self.channel: grpc.aio.Channel | None = None
        self.stub: card_games_pb2_grpc.CardGamesServiceStub
        self.admin: admin_pb2_grpc.AdminServiceStub

    async def connect(self, service: Service) -> None:
        if self.channel is not None:
            await self.channel.close()
        self.channel = grpc.aio.insecure_channel(service.target, options=CHANNEL_OPTIONS)
        self.stub = card_games_pb2_grpc.CardGamesServiceStub(self.channel)
        self.admin = admin_pb2_grpc.AdminServiceStub(self.channel)

    def spawn(self, coro) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    def new_cid(self) -> str:
        return f"{self.rng.getrandbits(128):032x}"

    # ---- the seats' clients ---------------------------------------------------------------

    async def follow(self, t: Table, st: Stream, after: int | None) -> None:
        req = pb.WatchMatchRequest(match_id=t.match_id)
        if after is not None:
            req.after_seq = after
        who = "spectator" if st.seat is None else f"seat {st.seat}"
        call = self.stub.WatchMatch(req, metadata=None if st.seat is None else bearer(t.tokens[st.seat]))
        try:
            async for ev in call:
                if ev.kind == HEARTBEAT:
                    continue
                if ev.kind == ACTION:
                    st.events.append(Event(ev.seq, ev.seat, ev.action.notation, ev.by, ev.reason, ev.view,
                                           self.life, time.time()))
                if ev.kind in (ACTION, SNAPSHOT):
                    st.last_seen = ev.seq
                if ev.HasField("view"):
                    st.view = ev.view
                if ev.kind == ENDED:
                    st.ended = True
                    return
                if ev.HasField("view") and st.seat is not None:
                    self.on_view(t, st.seat, ev.view)
        except grpc.aio.AioRpcError as exc:
            if not self.doomed:
                self.failures.append(f"{t.name} {who}: stream failed: {exc.code()} {exc.details()}")
        except Exception as exc:
            self.failures.append(f"{t.name} {who}: {exc!r}")
            raise
        else:
            self.failures.append(f"{t.name} {who}: stream ended without MATCH_ENDED")
        finally:
            call.cancel()

    def on_view(self, t: Table, seat: int, view: match_pb2.View) -> None:
        """The seat acts on a view where it is to act, once per seq: one submit, sometimes a
        second one from another tab (another id, maybe another action) or the same request
        again before its answer came."""
        if not t.playing or self.killed or view.status != match_pb2.MATCH_STATUS_ACTIVE:
            return
        if not (view.HasField("to_act") and view.to_act == seat and view.legal_actions):
            return
        if view.seq <= t.acted_at[seat]:
            return
        t.acted_at[seat] = view.seq
        legal = [a.notation for a in view.legal_actions]
        action, cid = self.rng.choice(legal), self.new_cid()
        self.spawn(self.submit(t, seat, action, view.seq, cid))
        roll = self.rng.random()
        if roll < 0.25:
            self.spawn(self.submit(t, seat, self.rng.choice(legal), view.seq, self.new_cid()))
        elif roll < 0.4:
            self.spawn(self.submit(t, seat, action, view.seq, cid))

    def request(self, s: Submit) -> pb.SubmitActionRequest:
        return pb.SubmitActionRequest(match_id=s.table.match_id, action=s.action, expected_seq=s.expected,
                                      client_action_id=s.cid)

    async def submit(self, t: Table, seat: int, action: str, expected: int, cid: str) -> None:
        s = Submit(t, seat, cid, action, expected, self.life)
        self.submits.append(s)
        self.pending += 1
        try:
            res = await self.stub.SubmitAction(self.request(s), metadata=bearer(t.tokens[seat]))
        except grpc.aio.AioRpcError as exc:
            err = error_of(exc)
            if err.reason:  # the service answered
                s.outcome, s.reason = "refused", err.reason
                if err.reason not in ("STALE_SEQUENCE", "MATCH_NOT_ACTIVE"):
                    self.failures.append(f"{t.name} seat {seat}: {action} refused {err.code} {err.reason}")
            elif self.doomed:
                s.outcome = "in_doubt"
            else:
                s.outcome = "failed"
                self.failures.append(f"{t.name} seat {seat}: {action} failed {err.code} {err.message}")
        else:
            s.outcome, s.seq, s.duplicate = "acked", res.seq, res.duplicate
            if res.action.notation != action or res.seq != expected + 1:
                self.failures.append(f"{t.name}: {action} at {expected} answered {res.action.notation} {res.seq}")
            if not res.duplicate:
                self.acked_in_life += 1
        finally:
            self.pending -= 1

    async def answer(self, s: Submit) -> tuple[Any, ...]:
        """Send a submit again, as it was: ("acked", seq, duplicate) or ("refused", code, reason)."""
        try:
            res = await self.stub.SubmitAction(self.request(s), metadata=bearer(s.table.tokens[s.seat]))
        except grpc.aio.AioRpcError as exc:
            err = error_of(exc)
            return "refused", err.code.name, err.reason or err.message
        assert res.action.notation == s.action
        return "acked", res.seq, res.duplicate

    async def retry(self, s: Submit) -> None:
        s.retry = await self.answer(s)

    async def view_of(self, t: Table, seat: int) -> match_pb2.View:
        return (await self.stub.GetView(pb.GetViewRequest(match_id=t.match_id),
                                        metadata=bearer(t.tokens[seat]))).view

    async def kick(self, t: Table) -> None:
        """Start (or resume) a table's play: each seat acts on its current view."""
        t.playing = True
        for seat in range(len(t.tokens)):
            self.on_view(t, seat, await self.view_of(t, seat))

    def open_stream(self, t: Table, st: Stream) -> None:
        after = None if st.last_seen < 0 else st.last_seen
        st.task = asyncio.get_running_loop().create_task(self.follow(t, st, after))

    def open_streams(self, t: Table) -> None:
        for st in t.streams:
            if not st.ended:
                self.open_stream(t, st)

    async def come_back_late(self, t: Table, lag: int) -> None:
        """The spectator resumes once the table played ``lag`` more actions (or ended): its
        stream replays them all."""
        st = t.spectator
        try:
            await until(self, lambda: all(s.ended for s in t.streams)
                        or max(s.last_seen for s in t.streams) >= st.last_seen + lag, 30, f"{t.name} to play on")
        except AssertionError as exc:
            self.failures.append(f"{t.name} spectator: {exc}")
            return
        self.open_stream(t, st)


# ---- the databases -------------------------------------------------------------------------

ACTIONS = ("SELECT match_id, seq, seat, action, by_whom, client_action_id, reason, at "
           "FROM match_actions ORDER BY match_id, seq")


def rows_by_match(rows: list[tuple]) -> dict[str, list[Row]]:
    out: dict[str, list[Row]] = defaultdict(list)
    for match_id, *rest in rows:
        out[match_id].append(Row(*rest))
    return out


class SqliteDatabase:
    """The engines' SQLite file."""

    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.path = tmp / "matches.sqlite3"
        self.location = str(self.path)  # CARDGAMES_DB
        self.killer_target = self.path.as_uri()

    def sessions(self, pid: int) -> int | None:
        """The engine's connections are not counted."""
        return None

    def settle(self, dead_pid: int) -> None:
        """Nothing of a dead engine writes to its file any more."""

    def stored_actions(self) -> dict[str, list[Row]]:
        """Every match's stored log, read from a copy of the database and its WAL (the engine's
        own recovery on restart is then the one that touches the file first)."""
        db, copy = self.path, self.tmp / "copy"
        shutil.rmtree(copy, ignore_errors=True)
        copy.mkdir()
        for suffix in ("", "-wal"):
            if Path(f"{db}{suffix}").exists():
                shutil.copy(f"{db}{suffix}", copy / f"{db.name}{suffix}")
        conn = sqlite3.connect(copy / db.name)
        try:
            return rows_by_match(conn.execute(ACTIONS).fetchall())
        finally:
            conn.close()


class PostgresDatabase:
    """The engines' PostgreSQL schema (tests/store/pg.py): ``url`` selects it by its search_path.
    The engines' pooled sessions carry ``application_name`` TAG (their URL's), their ownership
    lock session names their pid (engine_service.store.pg_ownership); the test's own do not."""

    TAG = "cardgames-crash-test-engine"

    def __init__(self, url: str) -> None:
        self.url = self.killer_target = url
        self.location = pg.url_with(url, application_name=self.TAG)

    def sessions(self, pid: int) -> int:
        """How many sessions the engine (the only one running) has open on the server."""
        with pg.connect(self.url) as conn:
            (count,) = conn.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                "AND (application_name = %s OR application_name LIKE %s)",
                (self.TAG, f"cardgames-engine owner pid {pid} %")).fetchone()
        return count

    def settle(self, dead_pid: int, timeout: float = 30.0) -> None:
        """Wait until the server has ended every session of the dead engine (each ends when its
        backend sees the connection closed, after finishing a statement already sent, maybe a
        commit): then nobody writes, and the ownership lock is free for the restart."""
        end = time.monotonic() + timeout
        while left := self.sessions(dead_pid):
            assert time.monotonic() < end, f"{left} sessions of the killed engine are still open"
            time.sleep(0.01)

    def stored_actions(self) -> dict[str, list[Row]]:
        with pg.connect(self.url) as conn:
            return rows_by_match(conn.execute(ACTIONS).fetchall())


Database = SqliteDatabase | PostgresDatabase


# ---- helpers -------------------------------------------------------------------------------


def comparable(view: match_pb2.View) -> match_pb2.View:
    """A view without what a replay of the transcript cannot know: the deadline (a timer) and
    the deal commitment (a salt that is never exported)."""
    copy = match_pb2.View()
    copy.CopyFrom(view)
    copy.ClearField("deadline")
    copy.ClearField("deal_commitment")
    return copy


def replayed_view(match_id: str, state, seat: int | None, seq: int) -> match_pb2.View:
    """The view the engine sends ``seat`` (None: a spectator) at ``seq`` (a match ended by the
    rules: as it ended)."""
    status = "finished" if state.is_over() else "active"
    view = state.public_view() if seat is None else state.view(seat)
    return view_message(ViewEnvelope(match_id=match_id, seq=seq, status=status, view=view, seat=seat))


def states_at(transcript: dict, wanted: set[int]) -> dict[int, Any]:
    """The rules state after each ``wanted`` seq, replayed from the transcript as the engine
    plays a log (the next deck dealt at once)."""
    game = get_game(transcript["game"])
    state = game.new_state(transcript.get("options") or {}, first_dealer=transcript["first_dealer"])
    decks = iter([d["deck"] for d in transcript["deals"]])
    steps = [s for d in transcript["deals"] for s in d["steps"]]

    def deal_due() -> None:
        if state.to_act() == CHANCE:
            deck = next(decks, None)
            if deck is not None:
                state.deal(deck)

    deal_due()
    out = {0: state.clone()} if 0 in wanted else {}
    for seq, step in enumerate(steps, start=1):
        state.apply(step["action"], step["seat"])
        deal_due()
        if seq in wanted:
            out[seq] = state.clone()
    return out


def steps_of(transcript: dict) -> list[tuple[int, str]]:
    return [(s["seat"], s["action"]) for d in transcript["deals"] for s in d["steps"]]


def log_lines(path: Path) -> list[dict]:
    """A log's JSON lines (a process killed while writing may leave half a last line)."""
    out = []
    for raw in path.read_text().splitlines():
        try:
            out.append(json.loads(raw))
        except ValueError:
            pass
    return out


async def until(load: Load, cond, timeout: float, what: str) -> None:
    end = time.monotonic() + timeout
    while not cond():
        assert not load.failures, load.failures
        if time.monotonic() > end:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.002)


# ---- the test ------------------------------------------------------------------------------

@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_kill_9_under_concurrent_load_loses_nothing_acknowledged_and_applies_nothing_twice(
        tmp_path, backend, request):
    if backend == "sqlite":
        db: Database = SqliteDatabase(tmp_path)
    else:
        db = PostgresDatabase(request.getfixturevalue("pg_url"))
    asyncio.run(asyncio.wait_for(scenario(tmp_path, db), timeout=120))


async def scenario(tmp: Path, db: Database) -> None:
    rng = random.Random(SEED)
    load = Load(rng)
    service = await asyncio.to_thread(Service, tmp, db.location, "engine-0", **ENV)
    logs = [service.log_path]
    try:
        await load.connect(service)
        games = (await load.stub.ListGames(pb.ListGamesRequest())).games
        assert sorted(g.id for g in games) == ["georgian_joker", "japanese_joker", "jojotte", "klaberjass"]
        for g in games:
            options = {}
            if any(o.name == "turn_time_s" for o in g.options):
                options = {"turn_time_s": match_pb2.OptionValue(int_value=LONG_TURN_S),
                           "reconnect_grace_s": match_pb2.OptionValue(int_value=GRACE_S)}
            if g.id == "japanese_joker":
                options["target_score"] = match_pb2.OptionValue(int_value=11)
            await create_table(load, g.id, g.num_seats, False, pb.CreateMatchRequest(game=g.id, options=options))
        await create_table(load, "klaberjass", 2, True, pb.CreateMatchRequest(
            game="klaberjass", turn_time=duration_pb2.Duration(seconds=TIMED_TURN_S)))
        for t in load.tables:
            load.open_streams(t)
            load.open_stream(t, t.spectator)
        await until(load, lambda: all(st.last_seen == 0 for t in load.tables for st in (*t.streams, t.spectator)),
                    30, "snapshots")
        for t in load.tables:
            await load.kick(t)

        durable_doubts = lost_doubts = 0
        for crash in range(MAX_CRASHES):
            at_crash, durable, lost = await crash_and_check(load, service, db, rng)
            durable_doubts += durable
            lost_doubts += lost
            service = await asyncio.to_thread(Service, tmp, db.location, f"engine-{crash + 1}", **ENV)
            logs.append(service.log_path)
            await restart_and_check(load, service, at_crash, idle_check=crash == 0)
            if durable_doubts and lost_doubts:
                break
        assert durable_doubts and lost_doubts, (
            f"{MAX_CRASHES} kills never caught both an unanswered durable action ({durable_doubts}) and an "
            f"unanswered action that was not written ({lost_doubts})")

        await until(load, lambda: all(st.ended for t in load.tables for st in (*t.streams, t.spectator)), 60,
                    "the ends of the matches")
        assert not load.failures, load.failures
        finals = {}
        for t in load.tables:
            summary = (await load.stub.GetMatch(pb.GetMatchRequest(match_id=t.match_id))).match
            assert summary.status == match_pb2.MATCH_STATUS_FINISHED, t.name
            assert summary.result.fields["outcome"].string_value == "completed", t.name
            finals[t.match_id] = await export_transcript(load.admin, t.match_id)
        await asyncio.wait([st.task for t in load.tables for st in (*t.streams, t.spectator)], timeout=30)
        for task in load.late:
            task.result()
        await repeat_at_the_end(load)
        await load.channel.close()
    finally:
        stopped = service.stop() if service.proc.poll() is None else None
    assert stopped == 0, "the last engine did not drain and exit 0 on SIGTERM"
    check_the_end(load, finals, db.stored_actions())
    for path in logs:
        errors = [line for line in log_lines(path) if line.get("level") in ("error", "critical")]
        assert not errors, (path.name, errors[:3])
    for path in logs[1:]:
        assert sum(line.get("event") == "match_resumed" for line in log_lines(path)) >= 1, path.name


async def repeat_at_the_end(load: Load) -> None:
    """Once the matches are over, the submits in doubt and a sample of the acknowledged ones
    are sent once more: the first result, duplicate, at the seq the id got however much
    happened since (MATCH_NOT_ACTIVE for an id that was never applied)."""
    applied: dict[tuple[str, int, str], int] = {}
    for s in load.submits:
        if s.outcome == "acked":
            applied[s.key] = s.seq
        if s.retry and s.retry[0] == "acked":
            applied[s.key] = s.retry[1]
    doubted = [s for s in load.submits if s.outcome == "in_doubt"]
    acked = [s for s in load.submits if s.outcome == "acked"]
    again = doubted + load.rng.sample(acked, min(20, len(acked)))
    answers = await asyncio.gather(*(load.answer(s) for s in again))
    for s, answer in zip(again, answers):
        expected = (("acked", applied[s.key], True) if s.key in applied
                    else ("refused", "FAILED_PRECONDITION", "MATCH_NOT_ACTIVE"))
        assert answer == expected, f"{s.table.name}: {s.action} sent again at the end answered {answer}"


async def create_table(load: Load, game: str, seats: int, timed: bool, request: pb.CreateMatchRequest) -> None:
    created = (await load.stub.CreateMatch(request)).match
    tokens = []
    for seat in range(seats):
        joined = await load.stub.JoinMatch(pb.JoinMatchRequest(match_id=created.match_id, seat=seat,
                                                              player_name=f"player {seat}"))
        tokens.append(joined.seat_token)
    load.tables.append(Table(game, created.match_id, tokens, timed, [Stream(s) for s in range(seats)],
                             [-1] * seats))


async def crash_and_check(load: Load, service: Service, db: Database,
                          rng: random.Random) -> tuple[dict[str, list[Row]], int, int]:
    """Play on until a seeded number of actions is acknowledged, kill the engine at its next
    commit with submits in flight, check the database against what the clients were told.
    Returns the stored logs and how many submits in doubt were durable and not."""
    threshold = rng.randint(40, 100)
    killer = await asyncio.create_subprocess_exec(sys.executable, "-c", KILLER, db.killer_target,
                                                  str(service.proc.pid), stdin=asyncio.subprocess.PIPE,
                                                  stdout=asyncio.subprocess.PIPE)
    try:
        assert (await killer.stdout.readline()).strip() == b"ready"
        assert db.sessions(service.proc.pid) != 0, "the engine's sessions are not told apart: nothing to settle"
        await until(load, lambda: load.acked_in_life >= threshold and all(task.done() for task in load.late), 30,
                    "play before the crash")
        await until(load, lambda: load.pending >= 2, 30, "submits in flight")
        load.doomed = True
        killer.stdin.write(b"go\n")
        await killer.stdin.drain()
        await killer.stdout.readline()
        load.killed = True
        assert await asyncio.wait_for(killer.wait(), 30) == 0, "the killer saw no commit"
    finally:
        if killer.returncode is None:
            killer.kill()
            await killer.wait()
    assert await asyncio.to_thread(service.proc.wait, 30) == -9
    service._log.close()
    await asyncio.to_thread(db.settle, service.proc.pid)
    deadlines = {t.match_id: max((st.view.deadline.ToNanoseconds() / 1e9 for st in t.streams
                                  if st.view is not None and st.view.HasField("deadline")), default=None)
                 for t in load.tables}
    await asyncio.wait(list(load.tasks) + [st.task for t in load.tables for st in (*t.streams, t.spectator)],
                       timeout=30)
    assert not load.tasks, "a submit still waits for an engine that is dead"
    assert not load.failures, load.failures

    stored = db.stored_actions()
    life = load.life
    keys = {s.key for s in load.submits}
    for t in load.tables:
        rows = stored[t.match_id]
        assert [r.seq for r in rows] == list(range(1, len(rows) + 1)), f"{t.name}: the log has a gap"
        for r in rows:
            assert r.by in ("player", "auto"), r
            assert r.by == "auto" or (t.match_id, r.seat, r.cid) in keys, f"{t.name}: {r} is nobody's submit"
        for st in (*t.streams, t.spectator):
            for ev in st.events:
                r = rows[ev.seq - 1] if ev.seq <= len(rows) else None
                assert r is not None and (r.seat, r.action) == (ev.seat, ev.action), (
                    f"{t.name}: seat {st.seat}'s stream saw seq {ev.seq} {ev.action}, which is not durable: {r}")
    durable_at = {(m, r.seat, r.cid): r for m, rows in stored.items() for r in rows if r.cid}
    doubts = durable = 0
    for s in load.submits:
        if s.life != life:
            continue
        r = durable_at.get(s.key)
        if s.outcome == "acked":
            assert r is not None and r.seq == s.seq and r.action == s.action, (
                f"{s.table.name}: {s.action} was acknowledged at seq {s.seq} but is not durable: {r}")
        elif s.outcome == "refused":
            assert r is None, f"{s.table.name}: {s.action} was refused ({s.reason}) but is stored: {r}"
        else:
            assert s.outcome == "in_doubt", s
            doubts += 1
            durable += r is not None
    # the timed match's timer was armed when the engine died (it may have ended in a later round)
    timed = next(t for t in load.tables if t.timed)
    load.deadline_before_crash = deadlines[timed.match_id]
    assert load.deadline_before_crash is not None or life > 0, "the timed match had no deadline at the crash"
    return stored, durable, doubts - durable


async def restart_and_check(load: Load, service: Service, at_crash: dict[str, list[Row]], idle_check: bool) -> None:
    """On the restarted engine: the transcripts and every seat's view against the stored log,
    the streams resumed, the submits in doubt retried, the timed match's timer re-armed."""
    dead_life = load.life
    load.life += 1
    load.doomed = load.killed = False
    load.acked_in_life = 0
    for t in load.tables:
        t.playing = False
    await load.connect(service)

    to_act = {}
    over = set()  # the matches over when their submits in doubt are retried
    for t in load.tables:
        rows = at_crash[t.match_id]
        exported = await export_transcript(load.admin, t.match_id)
        assert steps_of(exported) == [(r.seat, r.action) for r in rows], f"{t.name}: the export is not the stored log"
        state = rules_transcript.replay(exported)  # raises on any difference (legal sets, results)
        to_act[t.match_id] = state.to_act()
        if state.is_over():
            over.add(t.match_id)
        for st in t.streams:
            view = await load.view_of(t, st.seat)
            assert view.seq == len(rows)
            assert comparable(view) == replayed_view(t.match_id, state, st.seat, len(rows)), (
                f"{t.name} seat {st.seat}: the view after the restart is not the replayed one")
            before = st.view
            if before is not None and before.deal_number == view.deal_number and before.deal_commitment:
                assert view.deal_commitment == before.deal_commitment, "a published commitment changed"

    back = time.time()
    for t in load.tables:
        load.open_streams(t)
        if not t.spectator.ended:
            load.late.append(asyncio.get_running_loop().create_task(load.come_back_late(t, load.rng.randint(5, 40))))

    timed = next(t for t in load.tables if t.timed)
    turn = TIMED_TURN_S * TIME_SCALE
    crash_seq = len(at_crash[timed.match_id])
    load.returns.append((crash_seq, back))
    doubts = [s for s in load.submits if s.life == dead_life and s.outcome == "in_doubt"]
    # the timed match's own come after its timer was checked: nothing else may move it first
    await asyncio.gather(*(load.retry(s) for s in doubts if not s.table.timed))
    assert load.deadline_before_crash is not None or not idle_check
    if load.deadline_before_crash is not None:  # the timed match was still on at the crash
        view, deadline = await deadline_of(load, timed)
        # a whole turn counted from the players' return, not the deadline armed before the crash
        assert deadline > load.deadline_before_crash
        assert back + turn - 0.05 <= deadline <= time.time() + turn + 0.05, (back, deadline, time.time())
    for t in load.tables:
        if not (t.timed and idle_check):
            await load.kick(t)
    if idle_check:
        # nobody acts in the timed match: at its deadline the timer moves the seat to act
        await until(load, lambda: any(ev.seq == crash_seq + 1 for ev in timed.streams[0].events), turn + 30,
                    "the timed match's timeout")
        ev = next(ev for ev in timed.streams[0].events if ev.seq == crash_seq + 1)
        assert (ev.seat, ev.by, ev.reason) == (to_act[timed.match_id], match_pb2.ACTOR_AUTO, "timeout"), ev
        assert ev.at >= back + turn - 0.05, (
            f"the timer fired {back + turn - ev.at:.3f} s before a whole turn from the players' return")
        if view.seq == crash_seq:
            assert ev.at >= deadline - 0.05, f"the timeout came {deadline - ev.at:.3f} s before its deadline"
        if ev.view.status == match_pb2.MATCH_STATUS_FINISHED:  # that timeout was the match's last move
            over.add(timed.match_id)
    await asyncio.gather(*(load.retry(s) for s in doubts if s.table.timed))
    judge_retries(doubts, at_crash, over)
    if idle_check:
        await load.kick(timed)


async def deadline_of(load: Load, t: Table) -> tuple[match_pb2.View, float]:
    """The table's view with a deadline, once its timer is armed (the players are back)."""
    end = time.monotonic() + 5
    while True:
        view = await load.view_of(t, 0)
        if view.HasField("deadline"):
            return view, view.deadline.ToNanoseconds() / 1e9
        assert time.monotonic() < end, f"{t.name} has no deadline after the restart"
        await asyncio.sleep(0.01)


def judge_retries(doubts: list[Submit], at_crash: dict[str, list[Row]], over: set[str]) -> None:
    """A durable submit in doubt is retried as its duplicate, at the seq it got before the
    crash; one that was not durable is applied now, once (the others of its id answer as its
    duplicates), or refused STALE_SEQUENCE, all of its id alike; MATCH_NOT_ACTIVE instead when
    the action that took its seq ended the match (``over``: the matches over at the retries)."""
    durable_at = {(m, r.seat, r.cid): r for m, rows in at_crash.items() for r in rows if r.cid}
    groups: dict[tuple[str, int, str], list[Submit]] = defaultdict(list)
    for s in doubts:
        groups[s.key].append(s)
    for key, group in groups.items():
        name = group[0].table.name
        r = durable_at.get(key)
        if r is not None:
            for s in group:
                assert s.retry == ("acked", r.seq, True), (
                    f"{name}: {s.action} was durable at seq {r.seq}; its retry answered {s.retry}")
            continue
        answers = {s.retry[0] for s in group}
        assert len(answers) == 1, f"{name}: retries of one client_action_id answered {[s.retry for s in group]}"
        if answers == {"refused"}:  # another action took its seq (checked at the end)
            refusal = (("refused", "FAILED_PRECONDITION", "MATCH_NOT_ACTIVE") if key[0] in over
                       else ("refused", "ABORTED", "STALE_SEQUENCE"))
            for s in group:
                assert s.retry == refusal, f"{name}: {s.action} retried: {s.retry}"
        else:
            assert key[0] not in over, f"{name}: {group[0].action} applied {group[0].retry} after the end"
            assert sorted(s.retry[2] for s in group) == [False] + [True] * (len(group) - 1), (
                f"{name}: {group[0].action} applied {[s.retry for s in group]}")
            for s in group:  # its seq was free at the crash
                assert s.retry[1] == s.expected + 1 == len(at_crash[s.table.match_id]) + 1, (
                    f"{name}: {s.action} at {s.expected} retried: {s.retry}")


def check_the_end(load: Load, finals: dict[str, dict], stored: dict[str, list[Row]]) -> None:
    """Every stream saw every action once, in order, and the replayed views; the final log
    accounts for every answer; nothing was applied twice."""
    for t in load.tables:
        steps = steps_of(finals[t.match_id])
        rows = stored[t.match_id]
        assert [(r.seat, r.action) for r in rows] == steps, f"{t.name}: the export is not the stored log"
        assert [r.seq for r in rows] == list(range(1, len(rows) + 1))
        resumed = {}  # seq -> the first events each restarted engine sent: replays and a few live ones
        for st in (*t.streams, t.spectator):
            assert st.ended, f"{t.name} seat {st.seat}: no MATCH_ENDED"
            assert [ev.seq for ev in st.events] == list(range(1, len(steps) + 1)), (
                f"{t.name} seat {st.seat}: the stream has a gap or a duplicate across the restarts")
            assert [(ev.seat, ev.action) for ev in st.events] == steps
            for life in range(1, load.life + 1):
                first = [ev for ev in st.events if ev.life == life][:4 if st.seat is not None else 45]
                for ev in first:
                    resumed.setdefault(ev.seq, []).append((st.seat, ev))
        states = states_at(finals[t.match_id], set(resumed))
        for seq, seen in resumed.items():
            for seat, ev in seen:
                assert comparable(ev.view) == replayed_view(t.match_id, states[seq], seat, seq), (
                    f"{t.name} seat {seat}: the resumed stream's view at seq {seq} is not the replayed one")

    # the timed match's timer after each restart: no move before a whole turn from the return
    timed = next(t for t in load.tables if t.timed)
    turn = TIMED_TURN_S * TIME_SCALE
    bounds = [seq for seq, _ in load.returns[1:]] + [len(stored[timed.match_id])]
    for (since, back), upto in zip(load.returns, bounds):
        for r in stored[timed.match_id][since:upto]:
            if r.by == "auto":
                assert r.at >= back + turn - 0.05, f"a timeout {back + turn - r.at:.3f} s early after a restart: {r}"

    by_key: dict[tuple[str, int, str], list[Submit]] = defaultdict(list)
    for s in load.submits:
        by_key[s.key].append(s)
    for t in load.tables:
        for r in stored[t.match_id]:
            if r.by == "auto":
                assert r.reason == "timeout", r
                continue
            assert r.by == "player" and (t.match_id, r.seat, r.cid) in by_key, f"{t.name}: {r} is nobody's submit"
    at = {(m, r.seat, r.cid): r for m, rows in stored.items() for r in rows if r.cid}
    assert len(at) == sum(r.cid is not None for rows in stored.values() for r in rows)
    for key, group in by_key.items():
        r = at.get(key)
        answers = [(s.seq, s.duplicate) for s in group if s.outcome == "acked"]
        answers += [(s.retry[1], s.retry[2]) for s in group if s.retry and s.retry[0] == "acked"]
        name = group[0].table.name
        assert sum(not dup for _, dup in answers) <= 1, f"{name}: {group[0].action} applied twice: {answers}"
        if answers:
            assert r is not None and all(seq == r.seq for seq, _ in answers), (name, answers, r)
            assert r.action == group[0].action
        else:  # every stored action's client learned its seq, before the crash or by retrying
            assert r is None, f"{name}: {r} was stored and never answered"
        for s in group:
            if s.outcome == "refused":  # a refused id is never applied later
                assert r is None, f"{name}: refused {s.action} ({s.reason}) is stored: {r}"
            if s.retry and s.retry[0] == "refused":  # another action took its seq
                taken = stored[s.table.match_id][s.expected]
                assert taken.cid != s.cid, f"{name}: {s.action} refused on retry, yet stored at {taken.seq}"
