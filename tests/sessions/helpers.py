"""Helpers for the session-layer tests: a manager on a memory (or given) store, per-seat
clients that play random legal actions, and event collection from watch streams."""

from __future__ import annotations

import asyncio
import random
from contextlib import aclosing, asynccontextmanager, contextmanager
from typing import Any, AsyncIterator, Iterator

import structlog
from structlog.testing import LogCapture

from engine_service.observability.metrics import Metrics
from engine_service.rules import all_game_ids
from engine_service.sessions.api import (CreateMatchRequest, MatchEvent, MatchNotActive, Principal, SeatConfig,
                                         StaleSequence)
from engine_service.sessions.config import SessionConfig
from engine_service.sessions.manager import MatchManager
from engine_service.store import MemoryStore, Store

GAMES = all_game_ids()


#: The admin's principal (an admin-token call).
ADMIN = Principal("admin")


def run(coro, timeout: float = 120.0):
    """Run a coroutine on a fresh event loop with an overall timeout."""
    async def bounded():
        return await asyncio.wait_for(coro, timeout)
    return asyncio.run(bounded())


async def absences_written(mgr: MatchManager, match_id: str | None = None) -> None:
    """Until the absence writes under way (MatchClock.record_absence: a seat's grace window
    started or ended, recorded in the background) of ``match_id`` (default: every match held)
    have landed, and the PostgreSQL store's pool has opened the connections they asked for.
    Before a simulated crash (tests/crash.py) on PostgreSQL: one cut while the pool was
    opening a connection for those writes left psycopg_pool's worker deaf to the cancellation
    that closing the test's event loop sends (asyncio.run then waited for ever); a real crash
    has no event loop left to close."""
    matches = [mgr._matches[match_id]] if match_id is not None else list(mgr._matches.values())
    for m in matches:
        for slot in m.seats:
            if slot.absence_task is not None:
                await asyncio.wait([slot.absence_task])
    pool = getattr(mgr._store, "_pool", None)  # PostgresStore: a connection it opens for them
    while pool is not None and getattr(pool, "_growing", False):
        await asyncio.sleep(0.01)


def config(**overrides: Any) -> SessionConfig:
    values = dict(db_path="memory:", heartbeat_interval_s=5.0, bot_pace_s=0.0)  # bots at once
    values.update(overrides)
    return SessionConfig(**values)


@asynccontextmanager
async def manager(cfg: SessionConfig | None = None, *, store: Store | None = None, host: Any = None,
                  metrics: Metrics | None = None) -> AsyncIterator[MatchManager]:
    mgr = MatchManager(cfg or config(), store=store if store is not None else MemoryStore(),
                       bot_host=host, metrics=metrics if metrics is not None else Metrics(),
                       create_bot_host=False)
    await mgr.start()
    try:
        yield mgr
    finally:
        await mgr.close()


async def open_match(mgr: MatchManager, game: str, **request: Any) -> tuple[str, list[Principal]]:
    """Create a match with every seat open, join them all; return the id and seat principals."""
    summary = await mgr.create_match(CreateMatchRequest(game=game, **request), admin=True)
    principals = []
    for seat in range(len(summary.seats)):
        if summary.seats[seat].kind != "open":
            principals.append(None)
            continue
        joined = await mgr.join_match(summary.match_id, seat, f"player {seat}")
        principals.append(mgr.authenticate(summary.match_id, joined.token))
    return summary.match_id, principals


async def join_all(mgr: MatchManager, match_id: str) -> tuple[list[str], list[Principal]]:
    summary = await mgr.get_match(match_id)
    tokens, principals = [], []
    for s in summary.seats:
        if s.kind == "open":
            j = await mgr.join_match(match_id, s.seat, f"p{s.seat}")
            tokens.append(j.token)
            principals.append(mgr.authenticate(match_id, j.token))
        else:
            tokens.append("")
            principals.append(None)
    return tokens, principals


async def play_random(mgr: MatchManager, match_id: str, principals: list[Principal], rng: random.Random,
                      max_actions: int | None = None, timed: bool = False) -> int:
    """Per-seat clients: each looks at its own view and acts when it is its turn (with
    expected_seq and a client_action_id). Returns the number of actions submitted.
    ``timed``: the turns have a deadline short enough that a loaded machine can let it pass
    before a client's action, whose StaleSequence (MatchNotActive after the last move) then
    means the auto-move came first."""
    done = 0
    while max_actions is None or done < max_actions:
        summary = await mgr.get_match(match_id)
        if summary.status != "active":
            return done
        acted = False
        for seat, p in enumerate(principals):
            if p is None:
                continue
            env = await mgr.get_view(match_id, p)
            if env.view["to_act"] == seat and env.view["legal"]:
                action = rng.choice(list(env.view["legal"]))
                try:
                    res = await mgr.submit_action(match_id, p, action, env.seq, f"c{seat}-{env.seq}")
                except (StaleSequence, MatchNotActive):
                    if not timed:
                        raise
                    made = mgr._matches[match_id].actions[env.seq:env.seq + 1]  # the move made instead
                    assert [(a.seat, a.by, a.reason) for a in made] == [(seat, "auto", "timeout")], made
                    break  # look at the match again
                assert res.seq == env.seq + 1 and not res.duplicate
                done += 1
                acted = True
                await asyncio.sleep(0)  # let watchers read, as a network round trip would
                break
        if not acted:
            await asyncio.sleep(0.001)  # a bot or the timer is to act
    return done


async def collect(stream: AsyncIterator[MatchEvent], until=lambda e: e.kind == "match_ended",
                  limit: int = 100_000, skip_heartbeats: bool = True) -> list[MatchEvent]:
    """Read a watch stream until ``until(event)`` (included) or its end."""
    out: list[MatchEvent] = []
    async with aclosing(stream) as s:
        async for ev in s:
            if skip_heartbeats and ev.kind == "heartbeat":
                continue
            out.append(ev)
            if until(ev) or len(out) >= limit:
                break
    return out


def all_open(n: int) -> list[SeatConfig]:
    return [SeatConfig()] * n


class Stream:
    """A watch stream consumed in the background (a connected client): its events pile up in
    ``events``; :meth:`close` drops the connection."""

    def __init__(self, mgr: MatchManager, match_id: str, principal: Principal, after_seq: int = -1) -> None:
        self.events: list[MatchEvent] = []
        self.error: BaseException | None = None
        self._gen = mgr.watch(match_id, principal, after_seq)
        self.task = asyncio.ensure_future(self._run())

    async def _run(self) -> None:
        try:
            async for ev in self._gen:
                self.events.append(ev)
        except Exception as exc:  # noqa: BLE001 - kept for the test to inspect
            self.error = exc

    async def close(self) -> None:
        self.task.cancel()
        await asyncio.gather(self.task, return_exceptions=True)
        await self._gen.aclose()

    def actions(self) -> list[MatchEvent]:
        return [e for e in self.events if e.kind == "action"]


async def until(predicate, timeout: float = 30.0, step: float = 0.005) -> None:
    """Wait until ``predicate()`` is true (AssertionError after ``timeout`` seconds: a hang
    guard, long enough for a loaded machine)."""
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while not predicate():
        if loop.time() > end:
            raise AssertionError("condition not reached in time")
        await asyncio.sleep(step)


async def to_act(mgr: MatchManager, match_id: str, principals: list[Principal]):
    """(seat, principal, envelope) of the seat to act."""
    for seat, p in enumerate(principals):
        env = await mgr.get_view(match_id, p)
        if env.view["to_act"] == seat:
            return seat, p, env
    raise AssertionError("nobody to act")


@contextmanager
def configured_logging(fmt: str = "json", level: str = "info",
                       stream: Any = None) -> Iterator[Any]:
    """The service's own logging (engine_service.observability.logging.configure_logging)
    writing to ``stream`` (a fresh StringIO unless given), which is yielded; the root logger's
    handlers and level and structlog's configuration are put back afterwards. ``fmt="auto"``
    is left to the stream to decide."""
    import io
    import logging

    from engine_service.observability.logging import configure_logging

    stream = io.StringIO() if stream is None else stream
    root = logging.getLogger()
    saved = (list(root.handlers), root.level)
    try:
        chosen = configure_logging(fmt, level, stream, force=True)
        assert fmt in ("auto", chosen)
        yield stream
    finally:
        root.handlers[:] = saved[0]
        root.setLevel(saved[1])
        structlog.reset_defaults()


@contextmanager
def capture_logs_with_context() -> Iterator[list[dict[str, Any]]]:
    """Like ``structlog.testing.capture_logs``, with the fields bound to structlog's
    contextvars merged in as the service's logging does (the rpc and match fields)."""
    capture = LogCapture()
    previous = structlog.get_config()
    structlog.configure(processors=[structlog.contextvars.merge_contextvars, capture])
    try:
        yield capture.entries
    finally:
        structlog.configure(**previous)
