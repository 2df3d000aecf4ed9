"""Views of the current state are built once per audience and shared (LiveMatch.envelope):
the SubmitAction answer and every watcher of an audience get the same envelope, which changes
with the sequence number, the status and the deadline, and is never shared across audiences."""

from __future__ import annotations

import asyncio
import random

from engine_service.sessions.api import Principal
from engine_service.sessions.views import SPECTATOR, view_for

from .helpers import Stream, config, manager, open_match, run, until


def test_one_envelope_per_audience_and_state():
    async def go():
        async with manager(config(default_turn_time_s=30.0)) as mgr:
            match_id, ps = await open_match(mgr, "klaberjass")
            m = mgr._matches[match_id]
            spectators = [Stream(mgr, match_id, Principal(kind="spectator", match_id=match_id))
                          for _ in range(3)]
            seats = [Stream(mgr, match_id, p) for p in ps]
            await asyncio.sleep(0)
            seat = m.state.to_act()
            before = m.envelope(seat)
            assert m.envelope(seat) is before and before.deadline is not None
            assert m.envelope(1 - seat) is not before and m.envelope(1 - seat).view != before.view
            legal = before.view["legal"]
            res = await mgr.submit_action(match_id, ps[seat], random.Random(1).choice(legal), before.seq)
            await until(lambda: all(s.events and s.events[-1].seq == res.seq for s in spectators + seats))
            # the answer and the submitter's stream carry the same envelope; so do all spectators
            assert seats[seat].events[-1].view is res.view
            assert len({id(s.events[-1].view) for s in spectators}) == 1
            assert len({id(s.events[-1]) for s in spectators}) == 1  # one event per audience
            assert spectators[0].events[-1].view.view == view_for(m.state, SPECTATOR)
            for s, stream in enumerate(seats):  # each seat its own view, redacted for it
                assert stream.events[-1].view.view == m.state.view(s)
                assert stream.events[-1].view.seat == s
            assert res.view.seq == before.seq + 1 and res.view is not before
            # a new deadline (the clock re-armed) is a new envelope, not a stale one
            current = m.envelope(SPECTATOR)
            m.deadline = (m.deadline or 0) + 5
            changed = m.envelope(SPECTATOR)
            assert changed is not current and changed.deadline == m.deadline
            # a view of a past state is built from that state, never from the cache
            old_state, _ = m.fold(0)
            assert m.envelope(SPECTATOR, old_state, 0).view == view_for(old_state, SPECTATOR)
            for stream in spectators + seats:
                await stream.close()

    run(go())
