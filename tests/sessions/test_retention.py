"""Retention in the session layer (``keep_finished_days``): the engine deletes, periodically and
in small batches, the matches that ended long enough ago, forgets those it still holds, and
afterwards every call about one finds no such match. Days are tiny fractions here (0.3 s), and
the pass interval is 50 ms."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import json
import time
import weakref
from datetime import datetime, timezone

import pytest
from structlog.testing import capture_logs

from engine_service.observability.metrics import Metrics
from engine_service.sessions import housekeeping
from engine_service.sessions.api import (CreateMatchRequest, MatchNotFound, Principal,
                                         Unauthenticated)
from engine_service.sessions.config import SessionConfig
from engine_service.store import MemoryStore, SqliteStore, StoreError

from .helpers import config, configured_logging, manager, run, to_act, until

SECOND_IN_DAYS = 1 / 86400
PRUNED = "cardgames_matches_pruned_total"


async def ended_match(mgr, game="klaberjass") -> tuple[str, list[str]]:
    """A match that two players joined, played one action of and ended when the first
    resigned: its id and the seat tokens."""
    s = await mgr.create_match(CreateMatchRequest(game=game))
    tokens = [(await mgr.join_match(s.match_id, seat, f"p{seat}")).token for seat in range(2)]
    principals = [mgr.authenticate(s.match_id, t) for t in tokens]
    seat, p, env = await to_act(mgr, s.match_id, principals)
    await mgr.submit_action(s.match_id, p, env.view["legal"][0], env.seq)
    await mgr.leave_match(s.match_id, principals[0], resign=True)
    assert (await mgr.get_match(s.match_id)).status == "finished"
    return s.match_id, tokens


def store_of(kind, tmp_path):
    return MemoryStore() if kind == "memory" else SqliteStore(tmp_path / "db.sqlite3")


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
def test_ended_matches_are_pruned_periodically_and_are_not_found_afterwards(kind, tmp_path):
    store, metrics = store_of(kind, tmp_path), Metrics()
    cfg = config(keep_finished_days=0.3 * SECOND_IN_DAYS, prune_interval_s=0.05)

    async def go():
        async with manager(cfg, store=store, metrics=metrics) as mgr:
            with capture_logs() as logs:
                ended, tokens = await ended_match(mgr)
                waiting = (await mgr.create_match(CreateMatchRequest(game="klaberjass"))).match_id
                active, _ = await ended_match(mgr)  # ends later: pruned later
                assert ended in mgr.match_ids()  # held (finished_retention_s is an hour)
                await until(lambda: ended not in mgr.match_ids(), timeout=30)
                assert await store.load_match(ended) is None
                spectator = Principal("spectator", ended)
                for call in (mgr.get_match(ended), mgr.recall(ended),
                             mgr.get_view(ended, spectator), mgr.reveal_deals(ended, spectator),
                             mgr.inspect_match(ended), mgr.export_transcript(ended),
                             mgr.join_match(ended, None, "late")):
                    with pytest.raises(MatchNotFound):
                        await call
                with pytest.raises(Unauthenticated):  # the token is unknown; recall says why
                    mgr.authenticate(ended, tokens[1])
                listed = [m.match_id for m in await mgr.list_matches()]
                assert ended not in listed and waiting in listed
                assert (await mgr.get_match(waiting)).status == "waiting"  # never pruned
                await until(lambda: active not in mgr.match_ids(), timeout=30)
            pruned_lines = [e for e in logs if e["event"] == "matches_pruned"]
            return pruned_lines

    lines = run(go())
    assert sum(e["matches"] for e in lines) == 2 and metrics.value(PRUNED) == 2
    for e in lines:  # one line per batch: counts, the cutoff and the time; never a match id
        assert e["log_level"] == "info" and e["actions"] >= 1 and e["seats"] == 2 * e["matches"]
        assert e["decks"] >= 1 and "ended_before" in e and "duration_ms" in e
        assert not any("match" in k and k != "matches" for k in e)


def test_no_retention_by_default_keeps_every_ended_match():
    store, metrics = MemoryStore(), Metrics()
    assert SessionConfig().keep_finished_days == 0

    async def go():
        async with manager(config(prune_interval_s=0.01), store=store, metrics=metrics) as mgr:
            with capture_logs() as logs:
                ended, _ = await ended_match(mgr)
                await asyncio.sleep(0.1)
                assert mgr.evict_finished() == 1
                assert (await mgr.get_match(ended)).status == "finished"
            return logs
    logs = run(go())
    assert not [e for e in logs if e["event"] in ("matches_pruned", "retention_enabled")]
    assert metrics.value(PRUNED) == 0


def test_a_pass_without_a_cutoff_prunes_what_ended_keep_finished_days_ago():
    """The default cutoff is ``keep_finished_days`` before now: a match that just ended is
    kept (in the store and in memory), and the store is asked for those that ended before
    exactly that many days ago."""
    asked = []

    class Recording(MemoryStore):
        async def prune_finished(self, ended_before, limit=100):
            asked.append(ended_before)
            return await super().prune_finished(ended_before, limit)

    store = Recording()

    async def go():
        async with manager(config(keep_finished_days=2.0), store=store) as mgr:
            ended, _ = await ended_match(mgr)
            asked.clear()  # the start-up pass
            before = time.time()
            total = await mgr.prune_finished()
            after = time.time()
            return ended, total, before, after, mgr.match_ids(), await store.load_match(ended)
    ended, total, before, after, held, stored = run(go())
    assert total.matches == 0 and ended in held and stored is not None
    assert asked and before - 2 * 86400 <= asked[-1] <= after - 2 * 86400  # [-1]: this pass


def test_a_pass_deletes_in_batches_of_prune_batch():
    """An explicit pass (the cutoff given) deletes everything that ended before it, in
    transactions of ``prune_batch`` matches each, a log line each."""
    store, metrics = MemoryStore(), Metrics()
    batches = []

    class Recording(MemoryStore):
        async def prune_finished(self, ended_before, limit=100):
            batch = await super().prune_finished(ended_before, limit)
            batches.append(len(batch.match_ids))
            await asyncio.sleep(0.01)  # a batch takes the store 10 ms at least
            return batch

    store = Recording()

    pauses = []

    class Asyncio:  # the housekeeping module's asyncio, its pauses recorded
        def __getattr__(self, name):
            return getattr(asyncio, name)

        async def sleep(self, delay):
            pauses.append(delay)
            await asyncio.sleep(delay)

    async def go():
        async with manager(config(prune_batch=2), store=store, metrics=metrics) as mgr:
            ids = [(await ended_match(mgr))[0] for _ in range(5)]
            kept = (await mgr.create_match(CreateMatchRequest(game="klaberjass"))).match_id
            cutoff = time.time() + 1
            with capture_logs() as logs, pytest.MonkeyPatch.context() as mp:
                mp.setattr(housekeeping, "asyncio", Asyncio())
                began = time.perf_counter()
                total = await mgr.prune_finished(ended_before=cutoff)
                took_ms = (time.perf_counter() - began) * 1000
            assert [m for m in mgr.match_ids()] == [kept]
            left = [m.match_id for m in await mgr.list_matches()]
            return ids, total, logs, left, kept, cutoff, took_ms
    ids, total, logs, left, kept, cutoff, took_ms = run(go())
    assert batches == [2, 2, 1]  # the last one is short: no further batch is asked for
    assert total.matches == 5 and total.seats == 10 and metrics.value(PRUNED) == 5
    lines = [e for e in logs if e["event"] == "matches_pruned"]
    assert [e["matches"] for e in lines] == [2, 2, 1]
    # each line counts its own batch (the totals add up) and names the cutoff, to the second
    assert [sum(e[k] for e in lines) for k in ("actions", "decks", "seats")] == [
        total.actions, total.decks, total.seats] and total.actions >= 5 and total.decks >= 5
    iso = datetime.fromtimestamp(cutoff, timezone.utc).isoformat(timespec="seconds")
    assert [e["ended_before"] for e in lines] == [iso] * 3
    assert all(e["duration_ms"] >= 10 and e["duration_ms"] == round(e["duration_ms"], 1) for e in lines)
    assert sum(e["duration_ms"] for e in lines) <= took_ms + 0.15  # within the pass's own time
    # a pause after each full batch, at least PRUNE_PAUSE_S; none after the short last one
    assert len(pauses) == 2 and all(p >= housekeeping.PRUNE_PAUSE_S for p in pauses)
    assert left == [kept]


def test_a_prune_line_is_a_session_line_without_a_match_id():
    """docs/operations.md, retention: one ``matches_pruned`` line per batch, under the session
    layer's logger like its other lines, and never a match id."""
    async def go():
        with configured_logging("json", "info") as stream:
            async with manager(config()) as mgr:
                match_id, _ = await ended_match(mgr)
                await mgr.prune_finished(ended_before=time.time() + 1)
        return match_id, [json.loads(line) for line in stream.getvalue().splitlines()]
    match_id, lines = run(go())
    (pruned,) = [line for line in lines if line["event"] == "matches_pruned"]
    assert (pruned["logger"], pruned["matches"]) == ("engine_service.sessions", 1)
    assert match_id not in json.dumps(pruned)

def test_a_prune_line_gives_its_batchs_duration_in_milliseconds_to_a_tenth():
    """``duration_ms`` of a ``matches_pruned`` line is its batch's time in milliseconds,
    rounded to a tenth (the pass's clock scripted: no timing here)."""
    class Clock:  # the housekeeping module's time, perf_counter scripted: 123.44 ms
        ticks = iter([10.0, 10.12344])

        def __getattr__(self, name):
            return getattr(time, name)

        def perf_counter(self):
            return next(self.ticks)

    async def go():
        async with manager(config()) as mgr:
            await ended_match(mgr)
            with capture_logs() as logs, pytest.MonkeyPatch.context() as mp:
                mp.setattr(housekeeping, "time", Clock())
                await mgr.prune_finished(ended_before=time.time() + 1)
        return logs
    (line,) = [e for e in run(go()) if e["event"] == "matches_pruned"]
    assert line["duration_ms"] == 123.4 and line["matches"] == 1

def test_a_prune_line_names_each_count_of_its_batch_as_the_store_gave_it():
    """docs/operations.md, Retention: ``matches``, ``actions``, ``decks`` and ``seats`` of a
    ``matches_pruned`` line are the store's counts for its batch, each under its own name."""
    from engine_service.store.base import PruneCounts, PrunedBatch

    class Counts(MemoryStore):
        async def prune_finished(self, ended_before, limit=100):
            batch = await super().prune_finished(ended_before, limit)
            return PrunedBatch(batch.match_ids, PruneCounts(len(batch.match_ids), 7, 3, 2)) if batch.match_ids else batch

    async def go():
        async with manager(config(), store=Counts()) as mgr:
            await ended_match(mgr)
            with capture_logs() as logs:
                total = await mgr.prune_finished(ended_before=time.time() + 1)
        return total, logs
    total, logs = run(go())
    (line,) = [e for e in logs if e["event"] == "matches_pruned"]
    assert [line[k] for k in ("matches", "actions", "decks", "seats")] == [1, 7, 3, 2]
    assert (total.matches, total.actions, total.decks, total.seats) == (1, 7, 3, 2)


@pytest.mark.parametrize("batch_s", [0.2, 0.001])
def test_a_pause_after_a_batch_is_at_least_as_long_as_the_batch_and_short_after_a_quick_one(batch_s):
    """docs/operations.md, Retention: each batch is "followed by a pause at least as long, so
    actions keep being written during it", and a backlog of quick batches (10 matches in
    ~10 ms) "goes at over 100 matches a second": a quick batch's pause is PRUNE_PAUSE_S, well
    under a tenth of a second. The pass's clocks are scripted: every reading of its
    perf_counter is ``batch_s`` later than the one before, and its pauses are recorded."""
    pauses = []

    class Clock:
        now = 10.0

        def __getattr__(self, name):
            return getattr(time, name)

        def perf_counter(self):
            self.now += batch_s
            return self.now

    class Asyncio:
        def __getattr__(self, name):
            return getattr(asyncio, name)

        async def sleep(self, delay):
            pauses.append(delay)

    async def go():
        async with manager(config(prune_batch=1)) as mgr:
            for _ in range(2):
                await ended_match(mgr)
            with capture_logs() as logs, pytest.MonkeyPatch.context() as mp:
                mp.setattr(housekeeping, "time", Clock())
                mp.setattr(housekeeping, "asyncio", Asyncio())
                total = await mgr.prune_finished(ended_before=time.time() + 1)
        return total, [e["duration_ms"] for e in logs if e["event"] == "matches_pruned"]
    total, durations = run(go())
    assert total.matches == 2 and len(durations) == 2 and len(pauses) == 2
    assert all(p >= d / 1000 for p, d in zip(pauses, durations)), (pauses, durations)
    if batch_s < housekeeping.PRUNE_PAUSE_S:
        assert all(p == housekeeping.PRUNE_PAUSE_S for p in pauses) and housekeeping.PRUNE_PAUSE_S <= 0.09


def test_an_explicit_pass_keeps_the_matches_that_ended_after_its_cutoff():
    """The cutoff given to a pass is the one it prunes by, not ``keep_finished_days`` (here 0:
    every ended match would go): a match that ended after it stays, in the store and in
    memory, and one that ended before it goes."""
    store = MemoryStore()

    async def go():
        async with manager(config(keep_finished_days=0), store=store) as mgr:
            old, _ = await ended_match(mgr)
            cutoff = time.time() + 0.001
            await asyncio.sleep(0.01)
            recent, _ = await ended_match(mgr)
            total = await mgr.prune_finished(ended_before=cutoff)
            return old, recent, total, mgr.match_ids(), await store.load_match(old), await store.load_match(recent)

    old, recent, total, held, old_stored, recent_stored = run(go())
    assert total.matches == 1 and old_stored is None
    assert recent_stored is not None and recent_stored.record.status == "finished" and recent in held


def test_a_prune_batch_above_the_stores_maximum_still_clears_the_backlog_in_one_pass(monkeypatch):
    """``prune_batch`` is capped at the store's MAX_PRUNE_BATCH (config.py): a batch the store
    filled to its maximum is a full one, and the pass goes on. Read as short (under an
    uncapped ``prune_batch``), it ended the pass with the backlog still in the store. The
    maximum is 2 here (500 in the store)."""
    from engine_service.store import memory

    monkeypatch.setattr(memory, "MAX_PRUNE_BATCH", 2)
    monkeypatch.setattr(housekeeping, "MAX_PRUNE_BATCH", 2)
    store = MemoryStore()

    async def go():
        async with manager(config(prune_batch=10), store=store) as mgr:
            ids = [(await ended_match(mgr))[0] for _ in range(5)]
            total = await mgr.prune_finished(ended_before=time.time() + 1)
            return ids, total, [await store.load_match(i) for i in ids]
    ids, total, stored = run(go())
    assert total.matches == 5 and stored == [None] * 5


def test_a_match_being_loaded_while_a_batch_prunes_it_is_forgotten_once_registered():
    """A read of an evicted match loads it from the store; a prune batch that deletes it
    meanwhile waits for that load to register it, then forgets it: afterwards the match is
    not held in memory and every call about it finds no such match."""
    reading, gate, pruned = asyncio.Event(), asyncio.Event(), asyncio.Event()

    class SlowLoads(MemoryStore):
        held_back: str | None = None

        async def load_match(self, match_id):
            stored = await super().load_match(match_id)
            if match_id == self.held_back:
                reading.set()
                await gate.wait()
            return stored

        async def prune_finished(self, ended_before, limit=100):
            batch = await super().prune_finished(ended_before, limit)
            pruned.set()
            return batch

    store = SlowLoads()

    async def go():
        async with manager(config(), store=store) as mgr:
            match_id, _ = await ended_match(mgr)
            assert mgr.evict_finished() == 1
            store.held_back = match_id
            load = asyncio.ensure_future(mgr.get_match(match_id))
            await asyncio.wait_for(reading.wait(), 10)
            prune = asyncio.ensure_future(mgr.prune_finished(ended_before=time.time() + 1))
            await asyncio.wait_for(pruned.wait(), 10)
            await asyncio.sleep(0.02)  # the pass, past its batch, forgets what it holds
            gate.set()
            loaded = await load
            total = await prune
            held = list(mgr.match_ids())
            with pytest.raises(MatchNotFound):
                await mgr.get_match(match_id)
            return match_id, loaded, total, held
    match_id, loaded, total, held = run(go())
    assert loaded.match_id == match_id and total.matches == 1 and held == []


def test_a_pruned_match_is_forgotten_even_while_a_stream_still_watches_it():
    """Unlike eviction (which waits for a slow stream to finish reading), a prune forgets a
    match it deleted even while a stream is open on it: the store holds nothing of it any
    more, and every call about it finds no such match."""
    async def go():
        async with manager(config()) as mgr:
            s = await mgr.create_match(CreateMatchRequest(game="klaberjass"))
            tokens = [(await mgr.join_match(s.match_id, i, f"p{i}")).token for i in range(2)]
            me = mgr.authenticate(s.match_id, tokens[0])
            async with contextlib.aclosing(mgr.watch(s.match_id, me, -1)) as stream:
                assert (await anext(stream)).kind == "snapshot"
                await mgr.terminate_match(s.match_id, "done")
                total = await mgr.prune_finished(ended_before=time.time() + 1)
                held = list(mgr.match_ids())
                with pytest.raises(MatchNotFound):
                    await mgr.get_match(s.match_id)
            return total, held
    total, held = run(go())
    assert total.matches == 1 and held == []


@pytest.mark.parametrize("error", [StoreError, RuntimeError])
def test_a_failed_pass_is_logged_and_the_next_one_runs(error):
    """docs/operations.md, ``prune_failed``: a failed retention pass is logged and the next one
    runs as planned, whatever failed it: the database (StoreError) or a bug (RuntimeError),
    after which a loop catching StoreError alone would prune no more."""
    class FailsOnce(MemoryStore):
        failures = 0

        async def prune_finished(self, ended_before, limit=100):
            if not self.failures:
                self.failures += 1
                raise error("the database is unreachable")
            return await super().prune_finished(ended_before, limit)

    store, metrics = FailsOnce(), Metrics()

    async def go():
        cfg = config(keep_finished_days=0.1 * SECOND_IN_DAYS, prune_interval_s=0.05)
        with capture_logs() as logs:
            async with manager(cfg, store=store, metrics=metrics) as mgr:
                ended, _ = await ended_match(mgr)
                await until(lambda: ended not in mgr.match_ids(), timeout=30)
        return logs
    logs = run(go())
    failed = [e for e in logs if e["event"] == "prune_failed"]
    assert len(failed) == 1 and failed[0]["log_level"] == "error"
    assert [e["event"] for e in logs if e["log_level"] == "error"] == ["prune_failed"]  # once
    assert "unreachable" in failed[0]["error"] and failed[0]["error_type"] == error.__name__
    assert metrics.value(PRUNED) == 1


def test_the_drain_waits_for_a_batch_in_flight_before_the_store_closes():
    """A batch already handed to the store is not abandoned by the drain: the store closes
    after it (a SQLite transaction never sees its connection closed under it)."""
    entered, release = asyncio.Event(), asyncio.Event()
    order = []

    class SlowPrunes(MemoryStore):
        async def prune_finished(self, ended_before, limit=100):
            entered.set()
            await release.wait()
            order.append("prune done")
            return await super().prune_finished(ended_before, limit)

        async def close(self):
            order.append("store closed")
            await super().close()

    async def go():
        store = SlowPrunes()
        cfg = config(keep_finished_days=1.0, prune_interval_s=0.05)
        async with manager(cfg, store=store) as mgr:
            await asyncio.wait_for(entered.wait(), 30)
            closing = asyncio.ensure_future(mgr.close())
            await asyncio.sleep(0.05)
            release.set()
            await closing
    run(go())
    assert order == ["prune done", "store closed"]


def test_a_batch_that_fails_after_the_drain_cancelled_its_pass_is_not_reported_by_asyncio():
    """The drain cancels the pass while its batch is in the store; the batch then fails.
    Nobody awaits it any more (the pass's shield stops listening once cancelled, the drain
    only waits for it), so its exception is retrieved by its own done callback: otherwise
    asyncio reported "Task exception was never retrieved" with the store's error when the
    task was collected, an error line in the operator's log for a pass that nobody runs."""
    entered, release = asyncio.Event(), asyncio.Event()
    reported: list[dict] = []

    class FailsInFlight(MemoryStore):
        async def prune_finished(self, ended_before, limit=100):
            entered.set()
            await release.wait()
            failed.append(True)
            raise StoreError("the database went away mid-batch")

    failed: list[bool] = []

    async def session() -> weakref.ref:
        cfg = config(keep_finished_days=1.0, prune_interval_s=0.05)
        async with manager(cfg, store=FailsInFlight()) as mgr:
            await asyncio.wait_for(entered.wait(), 30)
            batch = next(t for t in mgr._writes if t.get_name() == "prune-batch")
            closing = asyncio.ensure_future(mgr.close())
            await asyncio.sleep(0.05)
            release.set()
            await closing
            assert batch.done() and not batch.cancelled() and failed  # failed; nobody asked why
        return weakref.ref(batch)

    async def go():
        asyncio.get_running_loop().set_exception_handler(lambda loop, ctx: reported.append(ctx))
        gone = await session()
        gc.collect()  # the batch, the manager and its cancelled pass are garbage now
        assert gone() is None
        await asyncio.sleep(0)
    run(go())
    assert [c for c in reported if isinstance(c.get("exception"), StoreError)] == []


def test_a_batch_cancelled_under_its_pass_is_not_reported_by_asyncio():
    """A batch task cancelled itself (as ``asyncio.run`` cancels the tasks left at its end)
    ends its pass with the cancellation, and asyncio reports nothing about it: no "Exception
    in callback" from the batch's own bookkeeping."""
    entered = asyncio.Event()

    class Hangs(MemoryStore):
        async def prune_finished(self, ended_before, limit=100):
            entered.set()
            await asyncio.Event().wait()

    async def go():
        reported = []
        asyncio.get_running_loop().set_exception_handler(lambda loop, context: reported.append(context))
        async with manager(config(), store=Hangs()) as mgr:
            await ended_match(mgr)
            pass_ = asyncio.ensure_future(mgr.prune_finished(ended_before=time.time() + 1))
            await asyncio.wait_for(entered.wait(), 10)
            (batch,) = [t for t in asyncio.all_tasks() if t.get_name() == "prune-batch"]
            batch.cancel()
            with pytest.raises(asyncio.CancelledError):
                await pass_
            for _ in range(3):
                await asyncio.sleep(0)
        return batch.cancelled(), reported
    cancelled, reported = run(go())
    assert cancelled and reported == []


def test_a_pass_under_way_starts_no_batch_once_the_drain_has_begun():
    """A pass (here an explicit one, as an operator's) pausing between batches when the drain
    begins stops there: it hands the store no further batch (the store closes after the
    drain) and returns what it deleted so far."""
    batches, first = [], asyncio.Event()

    class Recording(MemoryStore):
        async def prune_finished(self, ended_before, limit=100):
            batch = await super().prune_finished(ended_before, limit)
            batches.append(len(batch.match_ids))
            first.set()
            return batch

    async def go():
        async with manager(config(prune_batch=1), store=Recording()) as mgr:
            for _ in range(3):
                await ended_match(mgr)
            batches.clear()  # the start-up pass (nothing had ended)
            pruning = asyncio.ensure_future(mgr.prune_finished(ended_before=time.time() + 1))
            await asyncio.wait_for(first.wait(), 30)
            await mgr.drain()  # during the pause after the first batch
            return await pruning

    total = run(go())
    assert batches == [1] and total.matches == 1


def test_bad_retention_settings_are_refused():
    for bad in (-1.0, float("nan"), float("inf")):
        with pytest.raises(ValueError, match="keep_finished_days"):
            SessionConfig(keep_finished_days=bad)
    with pytest.raises(ValueError, match="prune_interval_s"):
        SessionConfig(prune_interval_s=0)
    with pytest.raises(ValueError, match="prune_batch"):
        SessionConfig(prune_batch=0)


def test_the_setting_is_a_flag_and_an_environment_variable():
    import argparse

    from engine_service import settings as S

    def parse(argv, env):
        parser = argparse.ArgumentParser()
        S.add_arguments(parser, env)
        return S.from_namespace(parser.parse_args(argv))

    assert parse([], {}).session.keep_finished_days == 0
    assert parse([], {"CARDGAMES_KEEP_FINISHED_DAYS": "30"}).session.keep_finished_days == 30.0
    assert parse(["--keep-finished-days", "0.5"], {"CARDGAMES_KEEP_FINISHED_DAYS": "30"}).session.keep_finished_days == 0.5
    with pytest.raises(ValueError, match="CARDGAMES_KEEP_FINISHED_DAYS"):
        parse([], {"CARDGAMES_KEEP_FINISHED_DAYS": "-1"})
    with pytest.raises(SystemExit):  # argparse: "must be 0 to 36500 days, not 'inf'"
        parse(["--keep-finished-days", "inf"], {})


def test_an_evicted_match_leaves_nothing_of_it_in_memory():
    """Eviction (finished_retention_s, or evict_finished) exists to free the memory of ended
    matches: an evicted match must not stay reachable from the manager's indexes (the lobby,
    the absence heartbeat's index of the grace windows running, the create ids, the seat
    tokens), or a long-running engine would hold every match it ever played. The match is read
    back from the store when asked for, as it ended."""
    async def go():
        async with manager(config(heartbeat_interval_s=5.0, reconnect_grace_s=30.0)) as mgr:
            s = await mgr.create_match(CreateMatchRequest(game="klaberjass", listed=True, name="t",
                                                          client_create_id="evicted-match-key-1"))
            tokens = [(await mgr.join_match(s.match_id, seat, f"p{seat}")).token for seat in range(2)]
            principals = [mgr.authenticate(s.match_id, t) for t in tokens]
            await until(lambda: any(key[0] == s.match_id for key in mgr._clock.running))  # both away
            await mgr.leave_match(s.match_id, principals[0], resign=True)
            ended = await mgr.get_match(s.match_id)
            assert mgr.evict_finished() == 1
            left = dict(held=s.match_id in mgr.match_ids(), created_ids=s.match_id in mgr._created_ids.values(),
                        tokens=any(v[0] == s.match_id for v in mgr._tokens.values()),
                        lobby=s.match_id in mgr._lobby,
                        heartbeat=any(key[0] == s.match_id for key in mgr._clock.running))
            with pytest.raises(Unauthenticated):
                mgr.authenticate(s.match_id, tokens[1])
            assert await mgr.recall(s.match_id)
            return left, ended, await mgr.get_match(s.match_id), mgr.authenticate(s.match_id, tokens[1]).seat

    left, ended, again, seat = run(go())
    assert not any(left.values()), left
    assert again == ended and again.status == "finished" and seat == 1


def test_an_ended_match_read_back_from_the_store_is_evicted_again_after_the_retention():
    """An ended match read back after its eviction (a seat token's call, the admin) is held
    for ``finished_retention_s`` from that read, then evicted again by the sweeper: without
    its end's time in memory it stayed held for good."""
    async def go():
        async with manager(config(finished_retention_s=0.2)) as mgr:
            match_id, _ = await ended_match(mgr)
            await until(lambda: match_id not in mgr.match_ids())
            assert await mgr.recall(match_id)
            held = match_id in mgr.match_ids()
            await until(lambda: match_id not in mgr.match_ids())
            return held, await mgr.get_match(match_id)

    held, summary = run(go())
    assert held and summary.status == "finished"


def test_a_sweep_pass_that_fails_is_logged_and_the_sweeper_goes_on():
    """Housekeeping outlives a bug in one pass (MatchManager._sweep): the pass's exception
    is logged ``sweep_failed`` (error and type) and the next pass runs an interval later."""
    passes: list[str] = []

    async def go():
        # the sweeper's interval: a quarter of the retention, at least 0.01 s
        async with manager(config(finished_retention_s=0.04)) as mgr:
            async def sweep_once():
                passes.append("pass")
                if len(passes) == 1:
                    raise RuntimeError("a bug in one pass")

            with capture_logs() as logs:
                mgr._housekeeping.sweep_once = sweep_once
                await until(lambda: len(passes) >= 3)
        return logs

    logs = run(go())
    failed = [e for e in logs if e["event"] == "sweep_failed"]
    assert [(e["log_level"], e["error"], e["error_type"]) for e in failed] == [
        ("error", "a bug in one pass", "RuntimeError")]


class _CountingPasses(MemoryStore):
    """A store that counts the pruner's passes."""

    passes = 0

    async def prune_finished(self, ended_before, limit=100):
        self.passes += 1
        return await super().prune_finished(ended_before, limit)


def test_retention_runs_one_pass_at_start_up_and_the_next_after_prune_interval_s():
    """The pruner runs a pass when the service starts, then waits ``prune_interval_s``
    between passes: an hour's interval means no second pass while the service runs briefly
    (a pruner that did not wait would query the store back to back)."""
    store = _CountingPasses()

    async def go():
        async with manager(config(keep_finished_days=1.0, prune_interval_s=3600.0), store=store):
            await until(lambda: store.passes >= 1)
            for _ in range(50):
                await asyncio.sleep(0.002)
        return store.passes

    assert run(go()) == 1


def test_no_retention_keeps_every_ended_match_forever():
    """docs/operations.md, ``--keep-finished-days``: the default 0 keeps the ended matches
    forever. No pruner runs (no ``sessions-pruner`` task, no ``retention_enabled`` line): a
    pruner started for 0 deleted, at start-up and at every pass, every match ended before
    the moment of the pass (0 days ago)."""
    store = _CountingPasses()

    async def go():
        async with manager(config(keep_finished_days=0), store=store) as mgr:
            ended, _ = await ended_match(mgr)
        with capture_logs() as logs:
            async with manager(config(keep_finished_days=0, prune_interval_s=0.01), store=store):
                tasks = {t.get_name() for t in asyncio.all_tasks()}
                for _ in range(20):  # a pruner's passes would have run meanwhile
                    await asyncio.sleep(0.002)
                stored = await store.load_match(ended)
        return tasks, logs, stored

    tasks, logs, stored = run(go())
    assert "sessions-sweeper" in tasks and "sessions-pruner" not in tasks
    assert not [e for e in logs if e["event"] == "retention_enabled"]
    assert store.passes == 0 and stored is not None and stored.record.status == "finished"
