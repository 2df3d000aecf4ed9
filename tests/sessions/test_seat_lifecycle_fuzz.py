"""The seat lifecycle of waiting matches under races and store faults: a seeded fuzz at the
session level, on the memory store and on SQLite.

Many waiting matches of every game (two and four seats, some seats bots) are filled at once
by more clients than they have seats. Each client, one request at a time, joins (with or
without a ``client_join_id``, with or without a seat number, now and then the same join sent
twice at once; clients race each other for seats), leaves (resigning, once the match has
started), has the operator reissue its token, retries its join as if its answer had been
lost, or opens and closes a watch stream of its seat; spectators come and go; the admin
terminates some matches. Meanwhile a store wrapper fails chosen writes (``save_seat``,
``start_match``, ``set_status``, ``append_decks``): before the write (nothing written) or
after it (written but answered with an error: the commit whose answer was lost), and now
and then the reads that follow fail too (nobody can tell what happened). A client answered
UNAVAILABLE retries (a join with its id and seat number, a leave, a reissue); a join without
an id is given up (the client joins anew), as a real client would.

Once the faults stop, the clients' retries, the start retries and seat rewrites and the
sweeper settle every match, and then:

* memory and store agree on every match (status, each seat's player / token hash / join
  hash / left flag, the decks, the log; a last action whose status write failed is the one
  tolerated difference: a restart derives that end), and a fresh MatchManager on the same
  store rebuilds the same matches, with the same tokens working;
* every token a client was last given reaches its seat (and is the seat's), every token
  replaced or given up by leaving a waiting match is refused; no two tokens reach one seat;
  no two clients hold one seat; a join id holds at most one seat, and a client refused
  (SEAT_TAKEN) holds none; a join answered OK for a seat number got that seat; of two racing
  joins with one id, one was a first join and one token works;
* a match that started did so once (one ``match_started``, a deck for deal 0), with every
  seat taken; three of them are played to the end with random legal actions (the operator
  reissues the seats' tokens: some players were never given theirs);
* every watch stream saw each action once and in order, and a seat's ``joined`` never twice
  without a ``left`` between (one per occupancy), never more than the joins of that seat;
* nothing was logged as a failed task or an unexpected write error.

The requests follow the seed (``pause`` yields event-loop steps, not time); the timers of the
start retries and seat rewrites do not, so a failing seed may not fail again: the failure
lists each match's problems and the first one's requests.
"""

from __future__ import annotations

import asyncio
import collections
import random
import uuid
from dataclasses import dataclass, field

import pytest
from structlog.testing import capture_logs

from engine_service.observability.metrics import Metrics
from engine_service.sessions import seating as seating_module
from engine_service.sessions.api import CreateMatchRequest, JoinResult, Principal, SeatConfig, SessionError
from engine_service.sessions.manager import MatchManager
from engine_service.sessions.tokens import join_id_hash, token_hash
from engine_service.store import MemoryStore, SqliteStore

from .faults import FaultyStore, FuzzBase, RandomBots, faults_by_write
from .helpers import GAMES, Stream, config, play_random, run, until

SEATS = {"klaberjass": 2, "jojotte": 2, "japanese_joker": 2, "georgian_joker": 4}
assert set(SEATS) == set(GAMES)

#: Answers a seat-lifecycle request may get besides success (code, reason).
CLEAR = {("ALREADY_EXISTS", "SEAT_TAKEN"), ("FAILED_PRECONDITION", "MATCH_NOT_ACTIVE")}
UNAVAILABLE = ("UNAVAILABLE", "STORE_UNAVAILABLE")


@dataclass
class Client:
    """One player's client. ``tokens``: its current token (two right after a racing
    duplicate join, until told apart); ``revoked``: tokens replaced or given up;
    ``pending``: a request answered UNAVAILABLE that it retries."""

    name: str
    join_id: str
    seat: int | None = None
    left: bool = False  # left a started match (the seat stays its, the token too)
    tokens: list[str] = field(default_factory=list)
    revoked: set[str] = field(default_factory=set)
    pending: str = ""
    want: int | None = None  # the seat number of the pending join
    via_join: bool = True  # its token came from a join (not from the operator)


@dataclass
class Table:
    match_id: str
    game: str
    bots: set[int]
    clients: list[Client]
    streams: list[Stream] = field(default_factory=list)
    fresh_joins: collections.Counter = field(default_factory=collections.Counter)  # seat -> OK first joins
    unavailable_joins: int = 0
    issued: list[str] = field(default_factory=list)  # every token handed out
    trace: list[str] = field(default_factory=list)  # what each client was answered (a failure's story)


class Fuzz(FuzzBase):
    def __init__(self, mgr: MatchManager, store: FaultyStore, rng: random.Random) -> None:
        super().__init__(mgr, store, rng)
        self.logs: list[dict] = []

    def answer(self, t: Table, what: str, exc: BaseException) -> tuple[str, str]:
        if not isinstance(exc, SessionError):
            self.problem(t, f"{what}: unexpected {exc!r}")
            return ("", "")
        self.ops[what, exc.reason] += 1
        return (exc.code, exc.reason)

    # ---- the requests ---------------------------------------------------------------------

    async def join(self, t: Table, c: Client, seat: int | None, twice: bool = False) -> None:
        retrying = c.pending == "join"
        calls = [self.mgr.join_match(t.match_id, seat, c.name, c.join_id) for _ in range(2 if twice else 1)]
        results = await asyncio.gather(*calls, return_exceptions=True)
        oks = [r for r in results if isinstance(r, JoinResult)]
        errors = [self.answer(t, "join", r) for r in results if not isinstance(r, JoinResult)]
        t.trace.append(f"{c.name} join seat={seat} x{len(calls)}: "
                       f"{[(r.seat, r.retry, token_hash(r.token)[:6]) for r in oks]} {errors}")
        for code in errors:
            if code != UNAVAILABLE and code not in CLEAR:
                self.problem(t, f"join answered {code}")
        if UNAVAILABLE in errors:
            t.unavailable_joins += errors.count(UNAVAILABLE)
        for r in oks:
            self.ops["join", "retry" if r.retry else "ok"] += 1
            t.issued.append(r.token)
            if seat is not None and (retrying or not r.retry) and r.seat != seat:
                # a first join, or the retry of one answered UNAVAILABLE: that id can have
                # taken no other seat than the one asked for
                self.problem(t, f"a join for seat {seat} got seat {r.seat}")
            if not r.retry:
                t.fresh_joins[r.seat] += 1
        if sum(not r.retry for r in oks) > 1:
            self.problem(t, "one client_join_id was answered two first joins")
        if len({r.seat for r in oks}) > 1:
            self.problem(t, f"one client_join_id got seats {sorted({r.seat for r in oks})}")
        if oks:
            if c.seat is not None and c.seat != oks[0].seat:
                self.problem(t, f"{c.name} held seat {c.seat} and was given seat {oks[0].seat}")
            c.revoked.update(c.tokens)
            c.seat, c.tokens, c.via_join = oks[0].seat, [r.token for r in oks], True
            if len(oks) == 2:  # a racing duplicate: the one answered last is the seat's
                working = [tok for tok in c.tokens if self.seat_of(t, tok) == c.seat]
                if len(working) != 1:
                    self.problem(t, f"{len(working)} of a duplicate join's two tokens work")
                c.revoked.update(tok for tok in c.tokens if tok not in working)
                c.tokens = working[:1]
        if UNAVAILABLE in errors and c.join_id:
            c.pending, c.want = "join", seat  # retried with its id (and its seat number)
        elif c.pending == "join" and (oks or errors):
            c.pending = ""
        if retrying and not oks and not errors:
            self.problem(t, "a retried join got no answer")

    def seat_of(self, t: Table, token: str) -> int | None:
        try:
            p = self.mgr.authenticate(t.match_id, token)
        except SessionError:
            return None
        return p.seat

    async def leave(self, t: Table, c: Client) -> None:
        token = c.tokens[0]
        try:
            p = self.mgr.authenticate(t.match_id, token)
            summary = await self.mgr.leave_match(t.match_id, p, resign=self.rng.random() < 0.5)
        except Exception as exc:  # noqa: BLE001 - classified
            code = self.answer(t, "leave", exc)
            t.trace.append(f"{c.name} leave seat {c.seat} ({token_hash(token)[:6]}): {code}")
            if code == UNAVAILABLE:
                c.pending = "leave"
            elif code in CLEAR:
                c.pending = ""
            else:
                self.problem(t, f"{c.name}'s leave (seat {c.seat}) answered {code}")
                c.pending = ""
            return
        self.ops["leave", summary.status] += 1
        t.trace.append(f"{c.name} leave seat {c.seat}: OK {summary.status}")
        c.pending = ""
        if summary.seats[c.seat].taken and summary.status != "waiting":
            c.left = True  # left a started match: its token still reads the match
        else:
            c.revoked.update(c.tokens)
            c.seat, c.tokens = None, []

    async def reissue(self, t: Table, c: Client) -> None:
        try:
            result, _ = await self.mgr.reissue_seat_token(t.match_id, c.seat)
        except Exception as exc:  # noqa: BLE001 - classified
            code = self.answer(t, "reissue", exc)
            t.trace.append(f"{c.name} reissue seat {c.seat}: {code}")
            if code == UNAVAILABLE:
                c.pending = "reissue"
            elif code in CLEAR:
                c.pending = ""
            else:
                self.problem(t, f"reissue of seat {c.seat} answered {code}")
                c.pending = ""
            return
        self.ops["reissue", "ok"] += 1
        t.trace.append(f"{c.name} reissue seat {c.seat}: OK {token_hash(result.token)[:6]}")
        t.issued.append(result.token)
        if result.seat != c.seat:
            self.problem(t, f"reissue of seat {c.seat} answered seat {result.seat}")
        c.revoked.update(c.tokens)
        c.tokens, c.pending, c.via_join = [result.token], "", False

    async def watch(self, t: Table, c: Client | None) -> None:
        try:
            p = (self.mgr.authenticate(t.match_id, c.tokens[0]) if c is not None
                 else Principal("spectator", t.match_id))
        except SessionError:
            return
        t.streams.append(Stream(self.mgr, t.match_id, p, after_seq=self.rng.choice((-1, 0))))
        self.ops["watch", "seat" if c else "spectator"] += 1

    async def close_a_stream(self, t: Table) -> None:
        open_streams = [s for s in t.streams if not s.task.done()]
        if open_streams:
            await self.rng.choice(open_streams).close()

    async def step(self, t: Table, c: Client) -> bool:
        """One request of ``c``; False once the match is over and nothing is pending."""
        status = (await self.mgr.get_match(t.match_id)).status
        if status not in ("waiting", "active") and not c.pending:
            return False
        # leaving a started match resigns it (two players: it ends), so mostly while waiting
        leaving = 0.25 if status == "waiting" else 0.02
        r = self.rng.random()
        if c.pending == "join":
            await self.join(t, c, c.want)
        elif c.pending == "leave":
            await self.leave(t, c)
        elif c.pending == "reissue":
            await self.reissue(t, c)
        elif c.seat is None:
            seat = self.rng.randrange(SEATS[t.game]) if self.rng.random() < 0.4 else None
            await self.join(t, c, seat, twice=bool(c.join_id) and self.rng.random() < 0.2)
        elif c.left:
            return False
        elif r < leaving:
            await self.leave(t, c)
        elif r < leaving + 0.15:
            await self.reissue(t, c)
        elif r < leaving + 0.3 and c.join_id and c.via_join:
            await self.join(t, c, c.seat if self.rng.random() < 0.5 else None)  # a retry, answer lost
        elif r < leaving + 0.5:
            await self.watch(t, c)
        elif r < leaving + 0.6:
            await self.close_a_stream(t)
        return True

    async def admin_loop(self, t: Table) -> None:
        await self.pause(300)
        for _ in range(20):
            try:
                await self.mgr.terminate_match(t.match_id, "fuzz")
                self.ops["terminate", "ok"] += 1
                return
            except Exception as exc:  # noqa: BLE001 - classified
                code = self.answer(t, "terminate", exc)
                if code != UNAVAILABLE:
                    if code not in CLEAR:
                        self.problem(t, f"terminate answered {code}")
                    return
            await self.pause(10)

    async def spectator_loop(self, t: Table) -> None:
        for _ in range(4):
            await self.pause(60)
            if self.rng.random() < 0.6:
                await self.watch(t, None)
            else:
                await self.close_a_stream(t)

    # ---- the run --------------------------------------------------------------------------

    async def create(self, game: str) -> Table:
        n = SEATS[game]
        bots = set()
        if self.rng.random() < 0.4:
            bots = set(self.rng.sample(range(n), self.rng.randint(1, n // 2)))
        seats = [SeatConfig("bot", "rnd") if i in bots else SeatConfig() for i in range(n)]
        summary = await self.mgr.create_match(CreateMatchRequest(game=game, seats=seats, listed=True,
                                                                 name=f"fuzz {game}"))
        clients = [Client(f"{game[:3]}-{i}", str(uuid.uuid4()) if self.rng.random() < 0.7 else "")
                   for i in range(n - len(bots) + self.rng.randint(0, 2))]
        t = Table(summary.match_id, game, bots, clients)
        self.tables.append(t)
        return t

    async def race(self, matches: int, steps: int) -> None:
        games = [list(SEATS)[i % len(SEATS)] for i in range(matches)]
        tables = [await self.create(g) for g in games]
        self.store.active = True
        loops = []
        for t in tables:
            loops += [self.client_loop(t, c, steps) for c in t.clients]
            loops.append(self.spectator_loop(t))
            if self.rng.random() < 0.2:
                loops.append(self.admin_loop(t))
        await asyncio.gather(*loops)
        self.store.active, self.store.unreadable = False, 0

    async def settle(self) -> None:
        """The faults are over: every pending request is retried until it is answered, and
        the starts in doubt are settled (their retries, or the sweeper)."""
        for _ in range(10):
            pending = [(t, c) for t in self.tables for c in t.clients if c.pending]
            if not pending:
                break
            await asyncio.gather(*(self.step(t, c) for t, c in pending))
        else:
            self.problems.append(f"requests still failing after the faults: {pending}")
        stalled = lambda: [m for m in self.mgr._matches.values()  # noqa: E731
                           if m.status == "waiting" and not m.open_seats()]
        try:
            await until(lambda: (not stalled() and not self.mgr._seating.start_retries
                                 and not self.mgr._seating.seat_resyncs), timeout=30.0)
        except AssertionError:
            self.problems.append(f"starts never settled: {[m.match_id for m in stalled()]}")
        await asyncio.sleep(0.05)  # bot moves and events of the starts


# ---- the checks ----------------------------------------------------------------------------

async def check_agreement(fz: Fuzz, inner) -> None:
    for t in fz.tables:
        m = fz.mgr._matches[t.match_id]
        # under the match's lock: its bots play on, and a move's write may be under way (the
        # store ahead of the memory for a moment); no await from here to the next match
        async with m.lock:
            stored = await inner.load_match(t.match_id)
        if (stored.record.status, m.status) == ("active", "finished") and m.result["outcome"] == "completed" \
                and len(stored.actions) == m.seq:
            pass  # the last action's status write failed: a restart derives the end (writer.apply)
        elif stored.record.status != m.status:
            fz.problem(t, f"status: memory {m.status}, store {stored.record.status}")
        for mine, theirs in zip((s.record() for s in m.seats), stored.record.seats):
            if mine != theirs:
                differ = {k: (getattr(mine, k), getattr(theirs, k)) for k in mine.__dataclass_fields__
                          if getattr(mine, k) != getattr(theirs, k)}
                fz.problem(t, f"{m.status}, seat {mine.seat} (memory, store): {differ}")
        if {d.deal: d for d in stored.decks} != m.decks:
            fz.problem(t, f"decks: memory deals {sorted(m.decks)}, store deals "
                          f"{sorted(d.deal for d in stored.decks)}")
        if len(stored.actions) != m.seq:
            fz.problem(t, f"actions: memory {m.seq}, store {len(stored.actions)}")


def check_tokens(fz: Fuzz, mgr: MatchManager) -> None:
    for t in fz.tables:
        m = mgr._matches[t.match_id]
        owners: dict[int, str] = {}
        for c in t.clients:
            for tok in c.revoked:
                if fz_seat(mgr, t, tok) is not None:
                    fz.problem(t, f"{c.name}'s replaced token still reaches seat {fz_seat(mgr, t, tok)}")
            if c.seat is None:
                continue
            if len(c.tokens) != 1:
                fz.problem(t, f"{c.name} holds {len(c.tokens)} tokens")
                continue
            if c.seat in owners:
                fz.problem(t, f"seat {c.seat} is held by {owners[c.seat]} and {c.name}")
            owners[c.seat] = c.name
            reached = fz_seat(mgr, t, c.tokens[0])
            if reached != c.seat:
                fz.problem(t, f"{c.name}'s token reaches seat {reached}, not its seat {c.seat}")
            slot = m.seats[c.seat]
            if slot.token_hash != token_hash(c.tokens[0]):
                fz.problem(t, f"seat {c.seat} holds another token than {c.name}'s")
            if c.join_id and c.via_join and slot.join_hash != join_id_hash(t.match_id, c.join_id):
                fz.problem(t, f"seat {c.seat} lost {c.name}'s client join id")
        reach = collections.Counter(fz_seat(mgr, t, tok) for tok in t.issued)
        for seat, n in reach.items():
            if seat is not None and n > 1:
                fz.problem(t, f"{n} tokens reach seat {seat}")
        hashes = [s.join_hash for s in m.seats if s.join_hash and not s.left]
        if len(hashes) != len(set(hashes)):
            fz.problem(t, "one client join id holds two seats")
        for c in t.clients:
            if c.join_id and c.seat is None and not m.over \
                    and join_id_hash(t.match_id, c.join_id) in hashes:
                fz.problem(t, f"{c.name} was refused, and a seat holds its client join id")


def fz_seat(mgr: MatchManager, t: Table, token: str) -> int | None:
    try:
        return mgr.authenticate(t.match_id, token).seat
    except SessionError:
        return None


def check_starts(fz: Fuzz, logs: list[dict]) -> list[Table]:
    started = collections.Counter(e["match_id"] for e in logs if e.get("event") == "match_started")
    playable = []
    for t in fz.tables:
        m = fz.mgr._matches[t.match_id]
        if started[t.match_id] > 1:
            fz.problem(t, f"started {started[t.match_id]} times")
        if m.status in ("active", "finished") or m.deals_dealt:
            if started[t.match_id] != 1:
                fz.problem(t, f"{m.status} with {started[t.match_id]} match_started")
            if 0 not in m.decks:
                fz.problem(t, "started without a deck for deal 0")
            free = [s.seat for s in m.seats if s.kind == "open" and not s.taken]
            if free:
                fz.problem(t, f"started with seats {free} free")
        if m.status == "active":
            playable.append(t)
    return playable


def check_streams(fz: Fuzz) -> None:
    for t in fz.tables:
        for s in t.streams:
            seqs = [e.seq for e in s.actions()]
            if seqs != sorted(set(seqs)) or any(b != a + 1 for a, b in zip(seqs, seqs[1:])):
                fz.problem(t, f"a stream saw the actions {seqs}")
            last: dict[int, str] = {}
            joined = collections.Counter()
            for e in s.events:
                if e.kind != "presence" or e.details["change"] not in ("joined", "left"):
                    continue
                change = e.details["change"]
                if last.get(e.seat) == change:
                    fz.problem(t, f"a stream saw seat {e.seat} {change} twice in a row")
                last[e.seat] = change
                joined[e.seat] += change == "joined"
            for seat, n in joined.items():
                if n > t.fresh_joins[seat] + t.unavailable_joins:
                    fz.problem(t, f"a stream saw seat {seat} joined {n} times "
                                  f"({t.fresh_joins[seat]} joins answered OK, {t.unavailable_joins} UNAVAILABLE)")


async def play_out(fz: Fuzz, tables: list[Table]) -> int:
    """Play a few started matches to the end with random legal actions (each open seat by a
    token the operator reissues: some seats' tokens nobody was given)."""
    played = 0
    for t in tables:
        m = fz.mgr._matches[t.match_id]
        principals = []
        for slot in m.seats:
            if slot.kind == "bot" or slot.left:
                principals.append(None)
                continue
            result, _ = await fz.mgr.reissue_seat_token(t.match_id, slot.seat)
            principals.append(fz.mgr.authenticate(t.match_id, result.token))
            t.issued.append(result.token)
            for c in t.clients:
                if c.seat == slot.seat and c.tokens:
                    c.revoked.update(c.tokens)
                    c.tokens, c.via_join = [result.token], False
        await play_random(fz.mgr, t.match_id, principals, fz.rng, max_actions=2000)
        summary = await fz.mgr.get_match(t.match_id)
        if summary.status != "finished":
            fz.problem(t, f"not played to its end: {summary.status} at seq {summary.seq}")
        played += 1
    return played


async def reload_and_compare(fz: Fuzz, inner, cfg) -> None:
    """A fresh manager on the same store rebuilds every match as the first one held it when it
    closed (a match whose seats bots play goes on until then)."""
    await fz.mgr.close()
    snapshot = {}
    for t in fz.tables:
        m = fz.mgr._matches[t.match_id]
        snapshot[t.match_id] = (m.status, tuple(s.record() for s in m.seats), dict(m.decks), m.seq)
    again = MatchManager(cfg, store=inner, bot_host=RandomBots(0), metrics=Metrics())
    await again.start()
    try:
        for t in fz.tables:
            m = await again._get(t.match_id)  # (its bots play on from here)
            status, seats, decks, seq = snapshot[t.match_id]
            if (tuple(s.record() for s in m.seats) != seats or m.seq < seq
                    or any(m.decks.get(deal) != deck for deal, deck in decks.items())
                    or (m.status != status and (status, m.status) != ("active", "finished"))):
                fz.problem(t, f"reloaded as {m.status} seq {m.seq}, held as {status} seq {seq}")
        check_tokens(fz, again)  # the tokens are as durable as the seats
    finally:
        await again.close()


async def fuzz(seed: int, inner, matches: int, steps: int) -> tuple[Fuzz, dict]:
    rng = random.Random(seed)
    store = FaultyStore(inner, random.Random(seed + 1))
    cfg = config(max_streams_per_seat=4)
    mgr = MatchManager(cfg, store=store, bot_host=RandomBots(seed), metrics=Metrics())
    await mgr.start()
    mgr._sweep_interval = 0.1  # the start retries back off up to this
    fz = Fuzz(mgr, store, rng)
    with capture_logs() as logs:
        fz.logs = logs
        try:
            await fz.race(matches, steps)
            await fz.settle()
            await check_agreement(fz, inner)
            check_tokens(fz, mgr)
            playable = check_starts(fz, logs)
            for t in fz.tables:
                for s in t.streams:
                    await s.close()
            check_streams(fz)
            played = await play_out(fz, playable[:3])
            await check_agreement(fz, inner)
        finally:
            await reload_and_compare(fz, inner, cfg)
    failures = [e for e in logs if e.get("event") in ("session_task_failed", "session_write_failed",
                                                      "sweep_failed")]
    for e in failures:
        fz.problems.append(f"logged {e}")
    stats = dict(faults=dict(store.faults), ops=dict(fz.ops), played=played)
    return fz, stats


@pytest.mark.parametrize("kind, seed", [("memory", 1), ("memory", 2), ("memory", 3), ("memory", 4),
                                        ("memory", 5), ("memory", 6), ("sqlite", 7), ("sqlite", 8)])
def test_racing_joins_leaves_and_reissues_under_store_faults_leave_every_match_consistent(
        kind, seed, tmp_path, monkeypatch):
    # the start retries and seat rewrites come before or after the next requests, as the seed says
    monkeypatch.setattr(seating_module, "START_RETRY_FIRST_S", (0.002, 0.01, 0.05)[seed % 3])
    inner = MemoryStore() if kind == "memory" else SqliteStore(tmp_path / "fuzz.sqlite3")
    fz, stats = run(fuzz(seed, inner, matches=16, steps=30), timeout=60)
    fz.fail_on_problems(stats)
    # the fuzz did what it is for
    faults = faults_by_write(stats)
    assert faults["start_match", "after"] + faults["start_match", "before"], stats
    assert faults["save_seat", "after"] and faults["save_seat", "before"], stats
    assert stats["ops"].get(("join", "retry")), stats
