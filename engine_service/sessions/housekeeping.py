"""The housekeeping of the live matches: :class:`Housekeeping`, a collaborator that
:class:`~.manager.MatchManager` builds and wires in its ``__init__`` (as it does
:class:`~.seating.Seating` and :class:`~.streams.WatchStreams`). The manager runs its passes
on two loops, the sweeper and the pruner, from :meth:`~.manager.MatchManager.start` to its
drain.

It owns what a pass does: the sweeper's (:meth:`Housekeeping.sweep_once`: a start in doubt
settled, a table that waited too long abandoned, a finished match evicted from memory) and
retention's (:meth:`Housekeeping.prune_finished`: ended matches deleted from the store in
short batches).

Why a module of its own: none of this answers a request. It runs on timers, against every
match the manager holds, and must outlive its own failures (a failed pass is logged and the
next one runs). It changes a match only as a request would, under the match's lock
(``exclusive``), and a prune batch handed to the store is a write the drain waits for
(``writes``), like a request's.
"""

from __future__ import annotations

import asyncio
import time
from datetime import datetime, timezone
from typing import Any, Awaitable, Callable

import structlog

from ..observability.metrics import Metrics
from ..store import Store
from ..store.base import MAX_PRUNE_BATCH, PruneCounts
from .api import SessionError
from .config import SessionConfig
from .match import LiveMatch
from .seating import Seating
from .writer import MatchWriter

log = structlog.get_logger("engine_service.sessions")

#: Retention: the pause after each batch of a prune pass (other writes go first).
PRUNE_PAUSE_S = 0.05


class Housekeeping:
    """The sweeper's pass and retention over the matches the manager holds. See the module
    docstring.

    From the manager: ``config`` (the waiting timeout, the finished matches' retention in
    memory and in the store), ``metrics``, ``store``, ``writer`` (a waiting match's end),
    ``seating`` (a start in doubt; whether a retry series of a match is under way),
    ``matches`` (the manager's registry, match id -> match, read in place), ``exclusive`` (run
    a function under a match's lock, as an accepted write the drain waits for),
    ``unregister`` (forget a match held in memory), ``writes`` (the accepted writes the drain
    waits for: a prune batch joins them), ``loading`` (the lock under which a match is read
    from the store and registered) and ``draining`` (whether the service is shutting down:
    no prune batch starts then).
    """

    def __init__(self, config: SessionConfig, metrics: Metrics, store: Store, writer: MatchWriter,
                 seating: Seating, matches: dict[str, LiveMatch], *,
                 exclusive: Callable[[LiveMatch, Callable[[], Awaitable[Any]]], Awaitable[Any]],
                 unregister: Callable[[LiveMatch], None], writes: set[asyncio.Task],
                 loading: asyncio.Lock, draining: Callable[[], bool]) -> None:
        self._config = config
        self._metrics = metrics
        self._store = store
        self._writer = writer
        self._seating = seating
        self._matches = matches
        self._exclusive = exclusive
        self._unregister = unregister
        self._writes = writes
        self._loading = loading
        self._draining = draining

    async def sweep_once(self) -> None:
        """One pass of the sweeper: start the matches whose every seat is taken but whose start
        is in doubt (:meth:`.seating.Seating.retry_stalled`; their own retries,
        :meth:`.seating.Seating._retry_start`, usually come first), end the matches that waited
        for players longer than ``waiting_timeout_s`` (outcome ``abandoned``: a lobby must not
        fill up with tables that will never start), and evict finished matches from memory
        after ``finished_retention_s`` (the store keeps them; they are read back on demand),
        unless a retry series of theirs is under way (:meth:`.seating.Seating.busy`)."""
        now, wall = asyncio.get_running_loop().time(), time.time()
        timeout = self._config.waiting_timeout_s
        for m in list(self._matches.values()):
            if m.status == "waiting" and not m.open_seats():  # first: such a match is not stale
                try:
                    await self._exclusive(m, lambda m=m: self._seating.retry_stalled(m, by="sweeper"))
                except SessionError as exc:  # the store still fails: the next pass tries again
                    log.error("match_start_failed", match_id=m.match_id, error=str(exc))
            elif timeout and m.status == "waiting" and wall - m.created_at >= timeout:
                try:
                    await self._exclusive(m, lambda m=m: self._expire_waiting(m))
                except SessionError as exc:
                    log.error("waiting_expiry_failed", match_id=m.match_id, error=str(exc))
            elif (m.over and not m.watchers and m.finished_mono is not None
                    and now - m.finished_mono >= self._config.finished_retention_s
                    and not self._seating.busy(m.match_id)):  # its rewrites end with it
                self._unregister(m)

    async def _expire_waiting(self, m: LiveMatch) -> None:
        """End a table that waited past ``waiting_timeout_s`` (under its lock). Its last seat
        may have been taken while the pass waited for the lock, by a join whose start nobody
        could tell (every seat taken, still waiting: :meth:`.seating.Seating.activate`): the
        store may hold it started and dealt, so that start is settled instead, as the pass
        does for such a table (the match starts, or follows the store). Ending it used to
        write an end that said nobody came over a start in the store."""
        if m.status != "waiting":
            return
        if not m.open_seats():
            await self._seating.retry_stalled(m, by="sweeper")
            return
        await self._writer.end(m, "abandoned", winners=[], reason="waiting_timeout")

    async def prune_finished(self, ended_before: float | None = None) -> PruneCounts:
        """Delete from the store the matches that ended before ``ended_before`` (Unix time;
        default: ``keep_finished_days`` ago) with everything stored for them, in batches of
        ``prune_batch`` matches, each one short transaction followed by a pause at least as
        long (the action path writes between batches), and forget those still held in
        memory. Afterwards every call about a pruned match, seat tokens included, finds no
        such match. Returns what was deleted; one ``matches_pruned`` log line per batch."""
        if ended_before is None:
            ended_before = time.time() - self._config.keep_finished_days * 86400.0
        total, limit = PruneCounts(), min(self._config.prune_batch, MAX_PRUNE_BATCH)
        while not self._draining():
            started = time.perf_counter()
            # a batch handed to the store finishes even if the pass is cancelled: the drain
            # waits for it among the writes before the store closes
            task = asyncio.get_running_loop().create_task(
                self._store.prune_finished(ended_before, limit), name="prune-batch")
            self._writes.add(task)
            task.add_done_callback(_prune_batch_done)
            task.add_done_callback(self._writes.discard)
            batch = await asyncio.shield(task)
            if not batch.match_ids:
                break
            async with self._loading:  # a load under way registers first, then is forgotten
                for match_id in batch.match_ids:
                    m = self._matches.get(match_id)
                    if m is not None and m.over:
                        self._unregister(m)
            total += batch.counts
            self._metrics.matches_pruned.inc(len(batch.match_ids))
            log.info("matches_pruned", matches=batch.counts.matches, actions=batch.counts.actions,
                     decks=batch.counts.decks, seats=batch.counts.seats,
                     ended_before=_iso(ended_before),
                     duration_ms=round((time.perf_counter() - started) * 1000, 1))
            if len(batch.match_ids) < limit:
                break
            # at most half of the store's time while a backlog is cleared
            await asyncio.sleep(max(PRUNE_PAUSE_S, time.perf_counter() - started))
        return total

    def evict_finished(self) -> int:
        """Evict every finished match without watchers and without a retry series under way
        (:meth:`.seating.Seating.busy`) now (operations, tests). Returns how many were
        evicted."""
        victims = [m for m in self._matches.values()
                   if m.over and not m.watchers and not self._seating.busy(m.match_id)]
        for m in victims:
            self._unregister(m)
        return len(victims)


def _prune_batch_done(task: asyncio.Task) -> None:
    """A prune batch's failure is its pass's to report (``prune_failed``); once the pass is
    cancelled (the drain), nobody's: retrieved here so that asyncio does not report it."""
    if not task.cancelled():
        task.exception()


def _iso(unix_time: float) -> str:
    return datetime.fromtimestamp(unix_time, timezone.utc).isoformat(timespec="seconds")
