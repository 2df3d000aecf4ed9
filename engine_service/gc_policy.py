"""How the serving process runs CPython's cyclic garbage collector.

Two measures, both applied by ``serve`` (engine_service.serve_cli) and nowhere else (tests
and tools keep CPython's defaults):

* :func:`tune_gc`: what start-up built is frozen out of the collector's view, and young
  collections wait for 10,000 net allocations. Every action allocates thousands of container
  objects, nearly all freed by reference counting; with CPython's defaults they still
  triggered a young collection every few actions and full collections took ~15 % of the
  server's CPU, with pauses up to 170 ms (bench/README.md, "Service").
* :func:`collect_periodically`: a full collection at least every
  ``--gc-full-collection-interval-s``. Some cyclic garbage reaches the old generation: grpc.aio
  leaves a reference cycle per call (its method lookup's closure, six objects with the call's
  metadata), which outlives a young collection when the call does (watch streams, mostly);
  soaks found 17,000-33,000 calls' worth there after 12-14 minutes and no full collection in
  40 minutes under the thresholds above (CPython also waits until the objects promoted since
  the last full collection exceed a quarter of those it kept), so RSS kept rising for an hour
  and more. A timed collection bounds it; its pause grows with the live heap (~20 us per
  open match: 211 ms with 10,000 open idle matches; bench/README.md, "Service" and "Soak"),
  which is why the interval is an operator's setting and 0 leaves the old generation to
  CPython.
"""

from __future__ import annotations

import asyncio
import gc
import time
from dataclasses import dataclass
from typing import Callable

import structlog

log = structlog.get_logger("cardgames.gc")

#: Garbage-collector thresholds while serving (CPython's defaults: 700, 10, 10).
GC_THRESHOLDS = (10_000, 50, 100)


def tune_gc(thresholds: tuple[int, int, int] = GC_THRESHOLDS) -> None:
    """Freeze what start-up built and make young collections rare (see the module's doc).
    Cycles are still collected; they just wait a little longer."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(*thresholds)


def full_collections() -> int:
    """Full (generation 2) collections run in this process so far, by anyone."""
    return gc.get_stats()[2]["collections"]


@dataclass(frozen=True, slots=True)
class FullCollection:
    """What one timed full collection did (also its ``gc_full_collection`` log line)."""

    collected: int  # unreachable objects found (freed, or uncollectable)
    uncollectable: int
    pause_s: float


def collect_full(clock: Callable[[], float] = time.perf_counter) -> FullCollection:
    """One full collection, timed. The process stops for its length (the collector holds the
    GIL): this is the pause the log line reports."""
    uncollectable_before = gc.get_stats()[2]["uncollectable"]
    started = clock()
    collected = gc.collect(2)
    pause = clock() - started
    return FullCollection(collected=collected,
                          uncollectable=gc.get_stats()[2]["uncollectable"] - uncollectable_before,
                          pause_s=pause)


async def collect_periodically(interval_s: float) -> None:
    """Run a full collection when ``interval_s`` went by without one (CPython's own full
    collections count: a tick after one is skipped), logging each; until cancelled."""
    seen = full_collections()
    while True:
        await asyncio.sleep(interval_s)
        now = full_collections()
        if now != seen:  # CPython ran one meanwhile: the interval starts again
            seen = now
            continue
        done = collect_full()
        seen = full_collections()
        log.info("gc_full_collection", collected=done.collected, uncollectable=done.uncollectable,
                 pause_ms=round(done.pause_s * 1000, 1))
