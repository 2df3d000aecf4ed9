"""The watch streams of the matches: :class:`WatchStreams`, a collaborator that
:class:`~.manager.MatchManager` builds and wires in its ``__init__`` (as it does
:class:`~.clock.MatchClock`, :class:`~.writer.MatchWriter` and :class:`~.seating.Seating`).

It owns opening a stream (the limits per seat, per match and per server; the replay of the
missed actions or a snapshot; live events, heartbeats and the end), counting the open streams
(a seat's presence, the limits) and ending them when the server must: a seat's streams when
its player left or its token was replaced (:meth:`WatchStreams.end_seat`), a stream that fell
too far behind (:meth:`WatchStreams.overflowed`, called by the writer).

Why a module of its own: a seat's open streams *are* its presence (the clock's grace windows
start and stop with them), so the count must be right however a stream ends: its generator
closing, the server ending it, or its queue overflowing, whichever comes first, and exactly
once (:attr:`.watchers.Watcher.counted`). One class holds every way in and out. A stream
never takes the match's lock: the writer publishes to its queue (:mod:`.watchers`).
"""

from __future__ import annotations

import asyncio
import time
from typing import AsyncIterator, Awaitable, Callable

from ..observability.metrics import Metrics
from .access import audience_of
from .api import BadRequest, LimitExceeded, MatchEvent, Principal, SessionError
from .clock import MatchClock
from .config import SessionConfig
from .match import LiveMatch, SeatSlot
from .views import SPECTATOR, audience_kind
from .watchers import IDLE, Watcher, _Beat, _End
from .writer import ended_event


class WatchStreams:
    """Opens, counts and ends the watch streams of every match. See the module docstring.

    From the manager: ``config`` (the limits, the queue size, the snapshot threshold, the
    heartbeat interval), ``metrics``, ``clock`` (told when a seat's first stream opens and its
    last one goes), ``get`` (the match of an id, read from the store if it is not held) and
    ``running`` (raises Unavailable unless the service takes new work).

    ``spectators``: how many spectator and admin streams of the server count
    (``config.max_watchers``); ``_spectating`` holds them, each with its match.
    """

    def __init__(self, config: SessionConfig, metrics: Metrics, clock: MatchClock, *,
                 get: Callable[[str], Awaitable[LiveMatch]], running: Callable[[], None]) -> None:
        self._config = config
        self._metrics = metrics
        self._clock = clock
        self._get = get
        self._running = running
        # the counted spectator and admin streams of every match (config.max_watchers)
        self._spectating: dict[Watcher, LiveMatch] = {}

    @property
    def spectators(self) -> int:
        """The spectator and admin streams the server counts (``config.max_watchers``)."""
        return len(self._spectating)

    async def watch(self, match_id: str, principal: Principal, after_seq: int) -> AsyncIterator[MatchEvent]:
        """Events after ``after_seq``: the missed actions replayed from the log (or one
        snapshot when ``after_seq`` < 0, when the gap exceeds ``snapshot_threshold``, or when
        ``after_seq`` is 0 on a match that has started with no action yet; a heartbeat at once
        when there is nothing to replay), then live events, heartbeats while idle, and
        ``match_ended`` last. A seat's open streams are its
        presence; a seat reconnecting with ``after_seq`` < 0 gets its complete private view
        again in the snapshot and play continues from the same position (JJK-9.6). Consume it
        with ``contextlib.aclosing`` so that presence ends with the stream."""
        self._running()
        m = await self._get(match_id)
        # Again: reading the match may have awaited the store while the manager's drain()
        # ended every stream it could see; a watcher registered now would stay open until the
        # server cancelled it. From here to the registration below there is no await, so none
        # registers once the drain has begun.
        self._running()
        audience = audience_of(m, principal)
        if isinstance(after_seq, bool) or not isinstance(after_seq, int):
            raise BadRequest("after_seq must be an integer", reason="BAD_AFTER_SEQ", field="after_seq")
        # a spectator of a delayed match follows it at the spectators' horizon (.delay)
        live = m.seq if audience != SPECTATOR else m.spectator_horizon()
        if after_seq > live:
            raise BadRequest(f"after_seq {after_seq} is ahead of the match (seq {live}"
                             f"{' for spectators' if live < m.seq else ''})", reason="BAD_AFTER_SEQ",
                             field="after_seq")
        slot = m.seats[audience] if isinstance(audience, int) else None
        # a stream of this seat (or a spectator's) that overflowed in this turn of the event
        # loop stops counting now, before the limits are checked: the new stream takes its place
        evicted = self._overflowed_now(m, audience, slot)
        if slot is not None:
            if slot.streams >= self._config.max_streams_per_seat:
                # the newest stream wins: a client reconnecting over connections the server
                # has not seen die yet (keepalive) must get through, or its player would be
                # absent and lose; the seat's oldest open stream ends instead
                oldest = min((w for w in m.watchers if w.audience == audience and not w.closed),
                             key=lambda w: w.opened, default=None)
                if oldest is not None:
                    oldest.end(LimitExceeded(f"this seat opened more than {self._config.max_streams_per_seat} "
                                             "watch streams: the oldest one was closed",
                                             reason="MAX_SEAT_STREAMS"), drop_pending=True)
                    # It stops counting now, not when its generator closes: that may be much
                    # later (its last write stuck on a dead connection), and meanwhile it kept
                    # the seat at its limit, so that the seat's next stream evicted a live one
                    # (RESOURCE_EXHAUSTED) with fewer than the limit open. The stream
                    # registered below takes its place: the seat stays present throughout.
                    self._uncount(m, oldest, slot)
                    evicted = True
        elif len(m.watchers) - sum(s.streams for s in m.seats) >= self._config.max_watchers_per_match:
            raise LimitExceeded("too many spectators on this match", reason="MAX_WATCHERS")
        elif self._server_full():
            raise LimitExceeded("too many spectators on this server", reason="MAX_WATCHERS")

        # Registration and the replay boundary are read together, without an await between:
        # every action after ``live_from`` reaches the queue, every one up to it the replay.
        w = Watcher(audience, self._config.watcher_queue_size)
        live_from, ended = live, m.over
        m.watchers.add(w)
        kind = audience_kind(audience)
        self._metrics.watchers.labels(kind).inc()
        if slot is not None:
            slot.streams += 1
            if slot.streams == 1 and not evicted:
                self._clock.connected(m, slot)
        else:
            self._spectating[w] = m
        try:
            # The start of a match is no action (seq 0 before and after it): a stream resumed
            # at 0 on a match that has started would otherwise show its watcher nothing until
            # the first action, holding the view of a match still waiting for players.
            started_unseen = after_seq == 0 == live_from and m.status != "waiting"
            if (after_seq < 0 or started_unseen
                    or live_from - after_seq > self._config.snapshot_threshold):
                self._metrics.watch_snapshots.inc()
                yield MatchEvent(kind="snapshot", seq=live_from, match_id=m.match_id,
                                 view=m.view_at(audience, live_from),
                                 details={"seats": m.presence()})
            else:
                if after_seq == live_from and not ended:
                    # Nothing to replay: a heartbeat at once says the stream is open and where
                    # it stands. A client reopening a dropped stream on a quiet match would
                    # otherwise learn that it is back only from the next event, up to a
                    # heartbeat interval later (its "reconnecting" sign stayed up meanwhile).
                    yield self._heartbeat(m, audience, live_from)
                for rec, state, details in m.replay(after_seq, live_from):
                    if w.cut:
                        # ended by the server meanwhile (a replaced token, a seat left, a newer
                        # stream, an overflow): its error now, not the seat's views until the
                        # replay's end, which a slow reader (the holder of a revoked token)
                        # could stretch; the queue holds only the end, so nothing is skipped
                        break
                    current = rec.seq == m.seq
                    env = (m.envelope(audience) if current
                           else m.envelope(audience, state, rec.seq))
                    yield MatchEvent(kind="action", seq=rec.seq, match_id=m.match_id, seat=rec.seat,
                                     action=rec.action, by=rec.by, reason=rec.reason, view=env,
                                     details=details)
            if ended and not w.cut:
                yield ended_event(m, audience)
                return
            # A heartbeat reports the seq of the last event this stream delivered, never the
            # match's: an action of a higher seq may still be queued for it (a client that took
            # the heartbeat for the stream's position and resumed after it would skip it).
            delivered = live_from
            while True:
                try:
                    item = w.queue.get_nowait()  # drain without a scheduling round per event
                except asyncio.QueueEmpty:
                    item = await w.wait(self._config.heartbeat_interval_s)
                if item is IDLE:
                    w.idle_taken()
                    # an event queued in the step the wait timed out (a busy loop): the
                    # stream is not idle, the event goes first (and the heartbeat's
                    # deadline is then that of the seq it reports)
                    if w.queue.empty():
                        yield self._heartbeat(m, audience, delivered)
                    continue
                if isinstance(item, _End):
                    if item.error is not None:
                        raise item.error
                    return
                if isinstance(item, _Beat):
                    yield self._heartbeat(m, audience, delivered)
                    continue
                delivered = item.seq
                yield item
        finally:
            w.stop()
            self._metrics.watchers.labels(kind).dec()
            if w.counted:  # else the server that ended it (or its overflow) uncounted it already
                self._uncount(m, w, slot)
                if slot is not None and slot.streams == 0:
                    self._clock.disconnected(m, slot)

    def end_seat(self, m: LiveMatch, slot: SeatSlot, error: SessionError) -> bool:
        """End every open stream of ``slot``'s seat with ``error`` (its player left, its token
        was replaced). They stop counting now (the seat's presence and stream limit), not when
        their generators close: the generator of a dead connection's stream closes only when
        keepalive notices, and meanwhile the seat would stay present and its new player's
        streams would count the old ones against the limit. Whether the seat had streams and
        has none now: the caller tells the clock (``disconnected``) after its own events."""
        had = slot.streams > 0
        for w in [w for w in m.watchers if w.audience == slot.seat]:
            w.end(error, drop_pending=True)
            self._uncount(m, w, slot)
        return had and slot.streams == 0

    def overflowed(self, m: LiveMatch, watchers: list[Watcher]) -> None:
        """Streams that fell too far behind (:meth:`Watcher.offer` closed them with
        WATCH_OVERFLOW) stop counting now (a seat's presence, the seat's and the spectators'
        limits), as :meth:`end_seat` does, not when their generators close: a stream
        overflows because its connection is slow or dead, and a dead one's generator closes
        only when keepalive notices. Meanwhile its seat received nothing yet showed present,
        and its grace window did not start. A seat left without a stream is ``disconnected``
        (its grace starts); not once the match is over, which has no presence left to follow
        (the final action's overflow would put a ``disconnected`` between that action and
        ``match_ended``). Called by the writer on the loop's next turn
        (:meth:`.writer.MatchWriter._overflowed`): the stream's generator may have closed first and
        uncounted it.

        Counted (``watch_overflows``) and logged here, when it happens. The ``watchers`` gauge
        (open streams) still drops only when the generator closes, as after
        :meth:`end_seat`: until then the stream holds its call and its buffers."""
        for w in watchers:
            slot = m.seats[w.audience] if isinstance(w.audience, int) else None
            self._metrics.watch_overflows.inc()
            m.log.warning("watch_overflow", audience=audience_kind(w.audience),
                          seat=w.audience if slot is not None else None)
            if not w.counted:
                continue
            self._uncount(m, w, slot)
            if slot is not None and slot.streams == 0 and not m.over:
                self._clock.disconnected(m, slot)

    def _overflowed_now(self, m: LiveMatch, audience, slot: SeatSlot | None) -> bool:
        """Uncount the streams of ``slot``'s seat (None: the spectators' and the admin's) that
        overflowed and still count: :meth:`overflowed` uncounts them on the loop's next turn,
        and a stream opened before that (in the same turn) found the seat at its limit because
        of them and closed the seat's oldest live stream instead. Whether one of the seat's was
        uncounted: the new stream then takes its place, the seat present throughout (the
        handler on the next turn finds it uncounted and tells the clock nothing)."""
        gone = [w for w in m.watchers if w.overflowed and w.counted
                and (w.audience == audience if slot is not None else not isinstance(w.audience, int))]
        for w in gone:
            self._uncount(m, w, slot)
        return slot is not None and bool(gone)

    def _server_full(self) -> bool:
        """Whether the server's spectator and admin streams are at ``max_watchers``, those of
        any match that overflowed in this turn of the event loop not counted:
        :meth:`_overflowed_now` uncounts only the new stream's own match's, and a stream of
        another match found the server full because of them until :meth:`overflowed` ran on
        the next turn. They are looked for only when the count is at the limit."""
        if self.spectators < self._config.max_watchers:
            return False
        for w, m in [(w, m) for w, m in self._spectating.items() if w.overflowed]:
            self._uncount(m, w, None)
        return self.spectators >= self._config.max_watchers

    def _heartbeat(self, m: LiveMatch, audience, delivered: int) -> MatchEvent:
        """A heartbeat at ``delivered``, the seq of the last event the stream delivered, with
        the deadline of that seq's decision: the match's current one while the stream is at
        the match's seq, else none. Behind it (an action queued after the heartbeat the clock
        asked for, :meth:`.watchers.Watcher.beat`; a delayed spectator's position, asked now:
        a stream opened before the first action was not behind then), that decision is taken:
        the current deadline is the next decision's, which the heartbeat used to carry to a
        client that applied it to the decision it still showed. ``interval_s`` is the longest this stream stays
        silent: a client that hears nothing for a few of them knows its stream is dead end to
        end, where keepalive pings only test the hop to the nearest proxy, and later.
        ``server_time`` is the server's clock as the heartbeat is made (unix seconds): a client
        whose clock is off measures its offset with it, since ``deadline`` is on the server's
        clock (a countdown, a remote bot's budget)."""
        return MatchEvent(kind="heartbeat", seq=delivered, match_id=m.match_id,
                          details={"deadline": m.deadline if delivered == m.seq else None,
                                   "interval_s": self._config.heartbeat_interval_s,
                                   "server_time": time.time()})

    def _uncount(self, m: LiveMatch, w: Watcher, slot: SeatSlot | None) -> None:
        """``w`` no longer counts among the match's streams (its limits, the seat's presence);
        the caller tells the clock when a seat's last stream is gone."""
        w.counted = False
        m.watchers.discard(w)
        if slot is not None:
            slot.streams -= 1
        else:
            del self._spectating[w]
