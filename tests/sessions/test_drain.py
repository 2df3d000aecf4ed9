"""Shutdown races of the session layer: calls that were under way when ``drain()`` or
``close()`` began. A watch still loading its match must not register after the streams were
closed; a write accepted just before the drain must finish against an open store (and be
acknowledged), never reach it after the close. Each test names the failure it once showed."""

from __future__ import annotations

import asyncio

from engine_service.sessions.api import Principal, Unavailable
from engine_service.store import MemoryStore

from .helpers import Stream, manager, open_match, run, until

GAME = "klaberjass"


class GatedLoads(MemoryStore):
    """A store whose reads of a match wait for ``gate`` while it is set (a slow database), and
    whose start-up resume finds nothing while ``hide`` is set (the match is read on demand)."""

    hide = False
    gate: asyncio.Event | None = None
    loading = 0

    async def unfinished_match_ids(self):
        return [] if self.hide else await super().unfinished_match_ids()

    async def load_match(self, match_id):
        if self.gate is not None:
            self.loading += 1
            await self.gate.wait()
        return await super().load_match(match_id)


async def _stored_but_not_loaded(store: GatedLoads) -> tuple[str, list[Principal]]:
    """An unfinished match in ``store`` that the next manager reads only when asked for it."""
    async with manager(store=store) as mgr:
        match_id, ps = await open_match(mgr, GAME)
    store.hide = True
    return match_id, ps


def test_a_watch_loading_its_match_during_the_drain_ends_with_draining():
    """A WatchMatch of a match not in memory awaits the store (``_get`` -> ``_load``). The
    drain closed every stream it could see meanwhile; the late watch then registered and
    stayed open (heartbeats) until the gRPC server cancelled it at the end of its grace."""
    store = GatedLoads()

    async def go():
        match_id, ps = await _stored_but_not_loaded(store)
        async with manager(store=store) as mgr:
            store.gate = asyncio.Event()
            spectator = Stream(mgr, match_id, Principal("spectator", match_id))
            await until(lambda: store.loading == 1)  # the watch is reading the match
            await mgr.drain()
            store.gate.set()
            try:
                await until(lambda: spectator.task.done(), timeout=2)
            finally:
                await spectator.close()
            m = mgr._matches[match_id]
            return spectator.events, spectator.error, len(m.watchers), mgr.metrics.value(
                "cardgames_watchers", {"audience": "spectator"})

    events, error, watchers, gauge = run(go())
    assert events == []
    assert isinstance(error, Unavailable) and error.reason == "DRAINING"
    assert watchers == 0 and gauge == 0
