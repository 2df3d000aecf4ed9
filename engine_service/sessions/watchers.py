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

Item = Union[MatchEvent, _End, _Beat]


class Watcher:
    __slots__ = ("audience", "queue", "closed", "cut", "overflowed", "opened", "counted")

    def __init__(self, audience: Audience, maxsize: int) -> None:
        self.audience = audience
        self.opened = time.monotonic()  # the oldest of a seat's streams gives way first
        self.queue: asyncio.Queue[Item] = asyncio.Queue(maxsize + 1)  # +1: room for the end marker
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

    @property
    def limit(self) -> int:
        return self.queue.maxsize - 1

    def beat(self) -> None:
        """Have the stream send a heartbeat after the events queued: the clock changed without
        an event of its own to say so. Its deadline is the match's when the reader reaches it,
        none if an event queued after it has moved the match on by then (the decision at the
        seq it reports is taken: :meth:`.streams.WatchStreams._heartbeat`). Nothing on a
        closed stream, nor on one whose queue is full: it is behind, and never closed for a
        heartbeat (events only overflow it)."""
        if not self.closed and self.queue.qsize() < self.limit:
            self.queue.put_nowait(BEAT)

    def offer(self, event: MatchEvent) -> bool:
        """Queue an event; False (and the stream is closed) if the watcher is too far behind."""
        if self.closed:
            return False
        if self.queue.qsize() >= self.limit:
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
        self.queue.put_nowait(marker)
