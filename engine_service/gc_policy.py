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
  open match: 211 ms with 10,000 open idle matches; bench/README.md, "Soak"), which is
  why the interval is an operator's setting and 0 leaves the old generation to CPython.
  After it, glibc's ``malloc_trim(0)`` gives the C heap's free pages back (:func:`collect_full`).
"""

from __future__ import annotations

import asyncio
import ctypes
import gc
import os
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
    trim_s: float | None = None  # malloc_trim's own pause; None: not glibc
    rss_released_kb: int | None = None  # resident memory given back (None: unknown)


def _malloc_trim() -> Callable[[int], int] | None:
    """glibc's ``malloc_trim``, or None elsewhere (musl, macOS)."""
    try:
        trim = ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError):
        return None
    trim.argtypes = [ctypes.c_size_t]
    trim.restype = ctypes.c_int
    return trim


_TRIM = _malloc_trim()
_PAGE_KB = os.sysconf("SC_PAGE_SIZE") // 1024 if hasattr(os, "sysconf") else 4


def resident_kb() -> int | None:
    """This process's resident memory (Linux ``/proc/self/statm``), or None."""
    try:
        with open("/proc/self/statm", "rb") as f:
            return int(f.read().split()[1]) * _PAGE_KB
    except (OSError, ValueError, IndexError):
        return None


def collect_full(clock: Callable[[], float] = time.perf_counter,
                 trim: Callable[[int], int] | None = _TRIM) -> FullCollection:
    """One full collection, timed, then (glibc) ``malloc_trim(0)``. The process stops for the
    collection (the collector holds the GIL): the pause the log line reports.

    The trim is for the C heap: what a soak's RSS kept gaining with the collections on was
    memory glibc's allocator had free but kept (its ``mallinfo2`` free bytes grew ~11 MB in
    ten minutes while the memory in use stayed flat: variable-size encoded messages and
    the store's and gRPC's threads, each with a malloc arena of its own), and ``malloc_trim``
    gives free pages back to the system, inside the arenas as well as at their top."""
    uncollectable_before = gc.get_stats()[2]["uncollectable"]
    started = clock()
    collected = gc.collect(2)
    pause = clock() - started
    trim_s = released = None
    if trim is not None:
        before = resident_kb()
        started = clock()
        trim(0)
        trim_s = clock() - started
        after = resident_kb()
        if before is not None and after is not None:
            released = max(0, before - after)
    return FullCollection(collected=collected,
                          uncollectable=gc.get_stats()[2]["uncollectable"] - uncollectable_before,
                          pause_s=pause, trim_s=trim_s, rss_released_kb=released)


async def collect_periodically(interval_s: float) -> None:
    """Run a full collection when ``interval_s`` went by without one (CPython's own full
    collections count: a tick after one is skipped), logging each; until cancelled."""
    seen = full_collections()
    while True:
        await asyncio.sleep(interval_s)
        if full_collections() != seen:  # CPython ran one meanwhile: the interval starts again
            seen = full_collections()
            continue
        done = collect_full()
        seen = full_collections()
        log.info("gc_full_collection", collected=done.collected, uncollectable=done.uncollectable,
                 pause_ms=round(done.pause_s * 1000, 1),
                 trim_ms=None if done.trim_s is None else round(done.trim_s * 1000, 1),
                 rss_released_kb=done.rss_released_kb)
