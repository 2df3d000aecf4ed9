"""One open watch stream: a bounded queue between the match's single writer and one reader.

The writer never waits for a reader (slow watchers must not block a match): it offers each
event with ``put_nowait``; when the queue is full the watcher is *overflowed*: its pending
events are dropped and the stream ends with an error telling the client to resume with the
last ``seq`` it received (``watch(after_seq)`` replays from the durable log, so nothing is
lost). An overflowed stream stops counting at once (its seat's presence, the limits:
:meth:`.streams.WatchStreams.overflowed`), however late its generator closes.
"""

from __future__ import annotations

import asyncio
import time
from typing import Union

from .api import MatchEvent, SessionError, Unavailable
from .views import Audience


class _End:
    """Sentinel: the stream ends normally (match over) or with ``error``."""

    __slots__ = ("error",)

    def __init__(self, error: SessionError | None) -> None:
        self.error = error


class _Beat:
    """Sentinel: a heartbeat now (:meth:`Watcher.beat`)."""

    __slots__ = ()


BEAT = _Beat()


class _Idle:
    """Sentinel: the stream's wait for an event lasted its idle limit (:meth:`Watcher.wait`)."""

    __slots__ = ()


IDLE = _Idle()

Item = Union[MatchEvent, _End, _Beat, _Idle]


class Watcher:
    __slots__ = ("audience", "queue", "closed", "cut", "overflowed", "opened", "counted", "limit",
                 "_idle_at", "_timer", "_timer_at", "_idle_queued")

    def __init__(self, audience: Audience, maxsize: int) -> None:
        self.audience = audience
        self.opened = time.monotonic()  # the oldest of a seat's streams gives way first
        #: events queued at most; the queue has room for two more: the end marker and IDLE
        self.limit = maxsize
        self.queue: asyncio.Queue[Item] = asyncio.Queue(maxsize + 2)
        # the wait's idle limit (loop time; None: not waiting), the timer that checks it and
        # the time it was armed for, and whether IDLE is queued (it counts against no limit)
        self._idle_at: float | None = None
        self._timer: asyncio.TimerHandle | None = None
        self._timer_at = 0.0
        self._idle_queued = False
        self.closed = False
        #: closed with its pending events dropped (its token replaced, its seat left, it gave
        #: way or fell behind): its stream ends with the error at once, even mid-replay
        self.cut = False
        self.overflowed = False
        #: among the match's streams (its limits, a seat's presence): from its registration
        #: until its generator closes, or until the server ends it for its seat (it gave way to
        #: a newer stream of the seat, the player left, the seat's token was replaced) or it
        #: overflows
        self.counted = True

    def _queued(self) -> int:
        """Events and heartbeats queued (IDLE, if queued, counts against no limit)."""
        return self.queue.qsize() - self._idle_queued

    def beat(self) -> None:
        """Have the stream send a heartbeat after the events queued: the clock changed without
        an event of its own to say so. Its deadline is the match's when the reader reaches it,
        none if an event queued after it has moved the match on by then (the decision at the
        seq it reports is taken: :meth:`.streams.WatchStreams._heartbeat`). Nothing on a
        closed stream, nor on one whose queue is full: it is behind, and never closed for a
        heartbeat (events only overflow it)."""
        if not self.closed and self._queued() < self.limit:
            self.queue.put_nowait(BEAT)

    async def wait(self, idle_s: float) -> Item:
        """The next item, waiting for it at most ``idle_s`` seconds: IDLE when that long went
        by with nothing queued (an item queued in the same step as the limit comes after
        IDLE: the caller checks whether the queue is still empty).

        What a timeout around every wait did (``asyncio.timeout``: a timer armed and cancelled
        for every event a stream waits for, for each of a match's watchers) with one timer a
        watcher, armed when a wait finds none, and moved on only when it fires: each wait
        only notes its own limit, and a stream that receives an event every few seconds arms
        one timer per ``idle_s``. A limit counts the time spent waiting, as before: a stream
        busy sending (its reader slow) is not idle."""
        loop = asyncio.get_running_loop()
        self._idle_at = at = loop.time() + idle_s
        if self._timer is None:
            self._timer_at = at
            self._timer = loop.call_at(at, self._idle_check)
        try:
            return await self.queue.get()
        finally:
            self._idle_at = None

    def idle_taken(self) -> None:
        """The reader took IDLE off the queue."""
        self._idle_queued = False

    def _idle_check(self) -> None:
        """The timer: the wait's limit is passed (queue IDLE, which ends the wait), or was
        moved on by later waits (armed again for it), or nobody waits (the next wait arms it)."""
        self._timer = None
        at = self._idle_at
        if at is None or self.closed:
            return
        if at > self._timer_at:
            self._timer_at = at
            self._timer = asyncio.get_running_loop().call_at(at, self._idle_check)
        elif self.queue.empty():  # else an item came in this step: the wait ends with it
            self._idle_queued = True
            self.queue.put_nowait(IDLE)

    def stop(self) -> None:
        """The stream is over: its timer goes (it would keep the watcher until it fires)."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def offer(self, event: MatchEvent) -> bool:
        """Queue an event; False (and the stream is closed) if the watcher is too far behind."""
        if self.closed:
            return False
        if self._queued() >= self.limit:
            self.overflowed = True
            self._close(_End(Unavailable(
                "this watch stream fell too far behind and was closed; watch again with "
                "after_seq set to the last seq received", reason="WATCH_OVERFLOW")), drop_pending=True)
            return False
        self.queue.put_nowait(event)
        return True

    def end(self, error: SessionError | None = None, *, drop_pending: bool = False) -> None:
        """End the stream after the queued events (or at once with ``drop_pending``)."""
        if not self.closed:
            self._close(_End(error), drop_pending=drop_pending)

    def _close(self, marker: _End, drop_pending: bool) -> None:
        self.closed = True
        if drop_pending:
            self.cut = True
            while not self.queue.empty():
                self.queue.get_nowait()
            self._idle_queued = False
        self.queue.put_nowait(marker)
