"""The Python client library (clients/cardgames_client.py), offline: what the second half of the
module (the watch's reopenings, the sessions, the admin client, the command-line helpers)
promises and no other test held it to (found by mutation testing)."""

from __future__ import annotations

import grpc

from clients import cardgames_client as cg
from engine_service.transport.generated import match_pb2

from .conftest import run
from .test_cardgames_client import _Dropped, _event, _ScriptedStreams


def _watch_states(scripts, monkeypatch, **policy) -> tuple[list, list[cg.StreamState]]:
    """The events a spectator's watch delivers over the scripted streams and the states its
    hook hears, the backoff's jitter at its bound (``random.uniform`` answers its high end)."""
    monkeypatch.setattr(cg.random, "uniform", lambda low, high: high)

    async def scenario():
        client = cg.Client(grpc.aio.insecure_channel("127.0.0.1:9"), retry=cg.RetryPolicy(**policy))
        try:
            client.stub = _ScriptedStreams(scripts)
            heard: list[cg.StreamState] = []
            seen = [(e.kind, e.seq) async for e in client.spectate("m1").watch(on_connection=heard.append)]
            return seen, heard
        finally:
            await client.close()

    return run(scenario(), timeout_s=30)


def test_a_watchs_reopenings_back_off_exponentially_from_the_policys_initial_backoff(monkeypatch):
    """RetryPolicy: "exponential backoff with full jitter between initial_backoff_s and
    max_backoff_s", which the watch's reopenings after a drop use too (its docstring: "after a
    jittered backoff"): the bound doubles with each reopening in a row (1, 2, 4, 8, 16 ms) and
    starts again from the initial backoff once an event came."""
    action, ended = match_pb2.EVENT_KIND_ACTION, match_pb2.EVENT_KIND_MATCH_ENDED
    cut = _Dropped(grpc.StatusCode.CANCELLED)  # resumable; waited in full (no channel to wait on)
    seen, heard = _watch_states([([_event(action, 1)], cut)] + [([], cut)] * 4 + [([_event(action, 2)], cut),
                                                                                     ([_event(ended, 2)], None)],
                                monkeypatch, initial_backoff_s=0.001, max_backoff_s=1.0)
    assert seen == [(action, 1), (action, 2), (ended, 2)]
    assert [(h.state, h.attempt, h.delay_s) for h in heard] == [
        (cg.RECONNECTING, 1, 0.001), (cg.RECONNECTING, 2, 0.002), (cg.RECONNECTING, 3, 0.004),
        (cg.RECONNECTING, 4, 0.008), (cg.RECONNECTING, 5, 0.016), (cg.RESUMED, 5, 0.0),
        (cg.RECONNECTING, 1, 0.001), (cg.RESUMED, 1, 0.0)]


def test_a_watch_keeps_reopening_however_long_the_engine_stays_unreachable(monkeypatch):
    """``max_failures=None``: "keep trying while the server is unreachable". The 1,100th
    reopening in a row is waited as the others and the stream comes back: the backoff's
    exponent is capped (``2 ** 1100`` times a float is an OverflowError, which ended the
    watch)."""
    action, ended = match_pb2.EVENT_KIND_ACTION, match_pb2.EVENT_KIND_MATCH_ENDED
    cut = _Dropped(grpc.StatusCode.CANCELLED)
    seen, heard = _watch_states([([_event(action, 1)], cut)] + [([], cut)] * 1100 + [([_event(ended, 1)], None)],
                                monkeypatch, initial_backoff_s=0.0, max_backoff_s=0.0)
    assert seen == [(action, 1), (ended, 1)]
    assert len(heard) == 1102 and heard[-2].attempt == 1101 and heard[-1].state == cg.RESUMED
