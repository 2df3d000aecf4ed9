"""The serving process's garbage-collector policy (engine_service.gc_policy) and the pause
histogram ``cardgames_gc_pause_seconds`` (engine_service.observability.gc_pauses)."""

from __future__ import annotations

import asyncio
import dataclasses
import gc
import itertools
import types

import pytest
import structlog
from prometheus_client import CollectorRegistry, generate_latest

from engine_service import gc_policy
from engine_service.gc_policy import GC_THRESHOLDS, collect_full, collect_periodically, tune_gc
from engine_service.observability.gc_pauses import (BUCKETS, GcPauseCollector, PauseRecorder,
                                                    process_recorder)
from engine_service.observability.metrics import Metrics

from .harness import run


@pytest.fixture
def collector_off():
    """No automatic collection during the test: only the code under test collects."""
    was = gc.isenabled()
    gc.disable()
    yield
    if was:
        gc.enable()


def _cycles(n: int) -> None:
    for _ in range(n):
        cycle: list = []
        cycle.append(cycle)


def test_serving_tunes_the_garbage_collector():
    """What start-up built is frozen out of the collector's view and collections wait for
    10,000 net allocations instead of CPython's 700 (docs/operations.md, "Memory and garbage
    collection"; bench/README.md: full collections cost ~15 % of the CPU)."""
    saved = gc.get_threshold()
    try:
        tune_gc()
        assert gc.get_threshold() == GC_THRESHOLDS and GC_THRESHOLDS[0] == 10_000
        assert gc.get_freeze_count() > 0
        _cycles(1)
        assert gc.collect() >= 1  # cycles are still collected
    finally:
        gc.unfreeze()
        gc.set_threshold(*saved)


def test_tune_gc_sets_the_thresholds_it_is_given():
    """``tune_gc(thresholds)``: the caller's thresholds, not the serving defaults."""
    saved = gc.get_threshold()
    try:
        tune_gc((2_000, 20, 30))
        assert gc.get_threshold() == (2_000, 20, 30)
    finally:
        gc.unfreeze()
        gc.set_threshold(*saved)


def test_a_full_collection_is_timed_and_counts_what_it_freed(collector_off):
    gc.collect()
    _cycles(7)
    ticks = iter([10.0, 10.25])
    before = gc_policy.full_collections()
    done = collect_full(clock=lambda: next(ticks))
    assert done.collected == 7 and done.uncollectable == 0
    assert done.pause_s == 0.25
    assert gc_policy.full_collections() == before + 1
    with pytest.raises(dataclasses.FrozenInstanceError):  # a value, as logged
        done.collected = 0


def test_uncollectable_counts_the_objects_this_collection_found(monkeypatch):
    """CPython's count is the process's total so far: the collection reports its own."""
    stats = iter([{"collections": 4, "uncollectable": 5}, {"collections": 5, "uncollectable": 7}])
    monkeypatch.setattr(gc_policy, "gc", types.SimpleNamespace(get_stats=lambda: [{}, {}, next(stats)],
                                                               collect=lambda generation: 3))
    assert collect_full(clock=lambda: 1.0) == gc_policy.FullCollection(collected=3, uncollectable=2, pause_s=0.0)


@run
async def test_the_periodic_collection_frees_old_garbage_and_logs_its_pause(collector_off):
    """With the automatic collector off (as good as CPython's rare full collections under the
    service's thresholds), garbage cycles wait; the timed collection frees them."""
    gc.collect()
    _cycles(5)
    with structlog.testing.capture_logs() as logs:
        task = asyncio.create_task(collect_periodically(0.02))
        for _ in range(1000):
            await asyncio.sleep(0.01)
            if logs:
                break
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    first = logs[0]
    assert first["event"] == "gc_full_collection" and first["log_level"] == "info"
    assert first["collected"] >= 5 and first["uncollectable"] == 0 and first["pause_ms"] >= 0


@run
async def test_a_tick_after_a_full_collection_of_cpythons_own_is_skipped(monkeypatch):
    """The interval is the longest time without a full collection: when CPython ran one
    meanwhile, the tick does not add another pause."""
    counter = itertools.count()
    monkeypatch.setattr(gc_policy, "full_collections", lambda: next(counter))  # one every tick
    calls = []
    monkeypatch.setattr(gc_policy, "collect_full", lambda: calls.append(1))
    task = asyncio.create_task(collect_periodically(0.005))
    await asyncio.sleep(0.1)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert calls == []


def test_the_pause_recorder_buckets_each_generation():
    times = iter([1.0, 1.0003, 5.0, 5.2, 7.0, 7.00005])
    recorder = PauseRecorder(clock=lambda: next(times))
    recorder("start", {"generation": 0})
    recorder("stop", {"generation": 0})       # 0.3 ms
    recorder("start", {"generation": 2})
    recorder("stop", {"generation": 2})       # 200 ms
    recorder("start", {"generation": 0})
    recorder("stop", {"generation": 0})       # 0.05 ms
    counts0, sum0 = recorder.snapshot(0)
    assert counts0[BUCKETS.index(0.0001)] == 1 and counts0[BUCKETS.index(0.0005)] == 1
    assert sum(counts0) == 2 and sum0 == pytest.approx(0.00035)
    counts2, sum2 = recorder.snapshot(2)
    assert counts2[BUCKETS.index(0.25)] == 1 and sum(counts2) == 1 and sum2 == pytest.approx(0.2)
    assert recorder.snapshot(1) == ([0] * (len(BUCKETS) + 1), 0.0)
    recorder("stop", {"generation": 1})       # a stop without its start (installed mid-collection)
    assert sum(recorder.snapshot(1)[0]) == 0
    # a snapshot is a copy (PauseRecorder.snapshot): a collection during a scrape, which
    # may start on any allocation of it, does not change the counts the scrape is adding up
    times = iter([9.0, 9.0003])
    recorder("start", {"generation": 0})
    recorder("stop", {"generation": 0})
    assert sum(counts0) == 2 and sum(recorder.snapshot(0)[0]) == 3


def test_a_pause_is_measured_in_wall_clock_time():
    """The histogram is how long the process stopped (gc_pauses' doc: every call in flight
    waits for the collection), so by default a pause is the wall-clock time from the
    collection's start to its stop, even the part the process spent off the CPU."""
    import time

    recorder = PauseRecorder()
    recorder("start", {"generation": 1})
    time.sleep(0.03)  # off the CPU: no CPU time, but the callers waited all the same
    recorder("stop", {"generation": 1})
    counts, total = recorder.snapshot(1)
    assert sum(counts) == 1 and 0.03 <= total < 5.0


def test_a_pause_equal_to_a_bound_is_counted_under_that_bound():
    """Prometheus' buckets are ``le``: a pause of exactly 1 ms is within ``le="0.001"``, as a
    prometheus_client Histogram would count it, not only in the next bucket. The pause is
    the time from the collection's start to its stop (the clock read at each)."""
    now = [0.0]
    recorder = PauseRecorder(clock=lambda: now[0])
    recorder("start", {"generation": 1})
    now[0] = 0.001
    recorder("stop", {"generation": 1})
    assert recorder.snapshot(1)[1] == 0.001
    registry = CollectorRegistry()
    GcPauseCollector(registry, recorder)
    assert registry.get_sample_value("cardgames_gc_pause_seconds_bucket",
                                     {"generation": "1", "le": "0.001"}) == 1
    assert registry.get_sample_value("cardgames_gc_pause_seconds_bucket",
                                     {"generation": "1", "le": "0.0005"}) == 0


def test_the_histogram_is_exported_cumulatively():
    times = iter([0.0, 3.0])  # longer than every bound: only +Inf holds it
    recorder = PauseRecorder(clock=lambda: next(times))
    recorder("start", {"generation": 2})
    recorder("stop", {"generation": 2})
    registry = CollectorRegistry()
    GcPauseCollector(registry, recorder)
    assert registry.get_sample_value("cardgames_gc_pause_seconds_count", {"generation": "2"}) == 1
    assert registry.get_sample_value("cardgames_gc_pause_seconds_sum", {"generation": "2"}) == 3.0
    assert registry.get_sample_value("cardgames_gc_pause_seconds_bucket",
                                     {"generation": "2", "le": "2.5"}) == 0
    assert registry.get_sample_value("cardgames_gc_pause_seconds_bucket",
                                     {"generation": "2", "le": "+Inf"}) == 1
    assert registry.get_sample_value("cardgames_gc_pause_seconds_count", {"generation": "0"}) == 0
    text = generate_latest(registry).decode()
    assert "# TYPE cardgames_gc_pause_seconds histogram" in text
    assert 'cardgames_gc_pause_seconds_bucket{generation="0",le="0.0001"} 0.0' in text


def test_the_process_metrics_measure_real_collections():
    """The service's registry (process collectors on) sees this process's collections, and
    one hook serves every registry."""
    metrics = Metrics(process_collectors=True)
    Metrics(process_collectors=True)
    assert gc.callbacks.count(process_recorder()) == 1
    assert process_recorder() is process_recorder()
    assert sum(isinstance(hook, PauseRecorder) for hook in gc.callbacks) == 1
    before = metrics.registry.get_sample_value("cardgames_gc_pause_seconds_count", {"generation": "2"})
    gc.collect()
    gc.collect()
    after = metrics.registry.get_sample_value("cardgames_gc_pause_seconds_count", {"generation": "2"})
    assert after == before + 2
    assert metrics.registry.get_sample_value("cardgames_gc_pause_seconds_sum", {"generation": "2"}) > 0


def test_start_up_garbage_is_collected_before_it_is_frozen(collector_off):
    """Frozen objects are never collected: garbage left by start-up is freed first, not kept
    for the process's life."""
    import weakref

    class Node:
        pass

    node = Node()
    node.cycle = node
    ref = weakref.ref(node)
    del node
    saved = gc.get_threshold()
    try:
        tune_gc()
        assert ref() is None
    finally:
        gc.unfreeze()
        gc.set_threshold(*saved)


@run
async def test_every_tick_without_a_full_collection_runs_one_and_logs_it(collector_off, monkeypatch):
    """The process's own timed collection does not count as CPython's: the next tick collects
    again (each interval without a full collection gets one); the log line gives the pause in
    milliseconds, to 0.1 ms."""
    ticks = []

    async def tick(interval_s):
        ticks.append(interval_s)
        if len(ticks) > 3:
            raise asyncio.CancelledError

    collections = []
    real_collect_full = gc_policy.collect_full

    def timed():
        collections.append(real_collect_full())  # a real one: the generation-2 count moves
        return gc_policy.FullCollection(collected=7, uncollectable=2, pause_s=0.01234)

    monkeypatch.setattr(gc_policy, "asyncio", types.SimpleNamespace(sleep=tick))  # this module's sleep only
    monkeypatch.setattr(gc_policy, "collect_full", timed)
    with structlog.testing.capture_logs() as logs:
        with pytest.raises(asyncio.CancelledError):
            await collect_periodically(42.0)
    assert ticks == [42.0] * 4 and len(collections) == 3
    assert logs == [{"event": "gc_full_collection", "log_level": "info", "collected": 7, "uncollectable": 2,
                     "pause_ms": 12.3}] * 3


@run
async def test_the_tick_after_a_skipped_one_collects(monkeypatch):
    """After CPython's own full collection the interval starts again from it: that tick is
    skipped, the next one collects (forgetting CPython's collection skipped every tick after
    it, until CPython ran another: no timed collection again)."""
    full = ticks = 0
    collected = []

    async def tick(interval_s):
        nonlocal full, ticks
        ticks += 1
        if ticks == 1:
            full += 1  # CPython's own, during the first interval
        if ticks > 3:
            raise asyncio.CancelledError

    def timed():
        nonlocal full
        full += 1
        collected.append(ticks)
        return gc_policy.FullCollection(collected=0, uncollectable=0, pause_s=0.0)

    monkeypatch.setattr(gc_policy, "asyncio", types.SimpleNamespace(sleep=tick))
    monkeypatch.setattr(gc_policy, "full_collections", lambda: full)
    monkeypatch.setattr(gc_policy, "collect_full", timed)
    with pytest.raises(asyncio.CancelledError):
        await collect_periodically(1.0)
    assert collected == [2, 3]
