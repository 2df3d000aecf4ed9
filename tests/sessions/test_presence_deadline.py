"""Presence events carry the deadline the clock runs to after the change (JJK-10.2: a
two-player table stops the clock while the player to act is away and restarts it when the
player connects), never the one before it: a client that decides on such an event must see
its real time budget."""

from __future__ import annotations

import asyncio

from .helpers import Stream, config, manager, open_match, run, until


def test_connecting_and_disconnecting_player_sees_the_clock_it_gets():
    async def go():
        async with manager(config()) as mgr:
            match_id, ps = await open_match(mgr, "japanese_joker", options={"turn_time_s": 10})
            m = mgr._matches[match_id]
            seat = m.state.to_act()
            other = Stream(mgr, match_id, ps[1 - seat])
            await asyncio.sleep(0)
            assert m.deadline is None  # the player to act is away: no clock (JJK-10.2)
            mine = Stream(mgr, match_id, ps[seat])
            await until(lambda: any(e.kind == "presence" for e in mine.events))
            assert m.deadline is not None
            for stream in (mine, other):
                connected = [e for e in stream.events if e.kind == "presence"
                             and e.details.get("change") == "connected" and e.seat == seat]
                assert connected and connected[-1].view.deadline == m.deadline
            assert mine.events[0].kind == "snapshot" and mine.events[0].view.deadline == m.deadline
            await mine.close()
            await until(lambda: any(e.kind == "presence" and e.details.get("change") == "disconnected"
                                    for e in other.events))
            gone = [e for e in other.events if e.kind == "presence"][-1]
            assert m.deadline is None and gone.view.deadline is None
            await other.close()

    run(go())


def test_a_player_leaving_on_their_turn_is_announced_without_their_deadline():
    """GJ-12.4: a player who leaves a four-player match is replaced by the takeover bot at
    once, and a bot-driven decision runs on no turn clock. The ``left`` event is the first
    thing the table hears of it: it carried the deadline of the decision the player had
    left behind (the clock was disarmed only after it was published), so that a client
    showed a countdown for a seat no player holds any more until the bot's move came."""
    async def go():
        async with manager(config()) as mgr:
            match_id, ps = await open_match(mgr, "georgian_joker", turn_time_s=60)
            m = mgr._matches[match_id]
            streams = [Stream(mgr, match_id, p) for p in ps]
            await until(lambda: all(s.events for s in streams))
            seat = m.state.to_act()
            assert m.deadline is not None  # a player's decision, on the clock
            await mgr.leave_match(match_id, ps[seat], resign=True)
            others = [s for i, s in enumerate(streams) if i != seat]
            await until(lambda: all(any(e.kind == "presence" and e.details.get("change") == "left"
                                        for e in s.events) for s in others))
            for stream in others:
                left = next(e for e in stream.events
                            if e.kind == "presence" and e.details.get("change") == "left")
                assert left.seat == seat and left.view.view["to_act"] == seat
                assert left.view.deadline is None, "the left seat's decision is the bot's, on no clock"
            for stream in streams:
                await stream.close()

    run(go())
