"""``cardgames_gc_pause_seconds{generation}``: how long the cyclic garbage collector stopped
the process, as a histogram per generation.

A collection holds the GIL: every call in flight waits for it, so its length lands in the
latency of whatever was being served (full collections paused the server for up to 170 ms
before the service tuned its collector; engine_service.gc_policy). prometheus_client's
``GCCollector`` counts collections and collected objects but not their length.

The pauses are measured by one ``gc.callbacks`` hook per process, installed when the first
collector is made, and kept in plain lists: a collection can start on any allocation, even
inside a prometheus_client metric's (non-reentrant) lock, so the hook takes no lock and
calls no metric. Each registry's collector reads the lists when it is scraped.
"""

from __future__ import annotations

import bisect
import gc
import threading
import time
from typing import Any, Callable, Iterator, Sequence

from prometheus_client.core import HistogramMetricFamily
from prometheus_client.registry import Collector, CollectorRegistry
from prometheus_client.utils import floatToGoString

NAME = "cardgames_gc_pause_seconds"
#: From 0.1 ms (a young collection of the tuned collector) to a full collection of a large heap.
BUCKETS = (0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5,
           1.0, 2.5)


class PauseRecorder:
    """The ``gc.callbacks`` hook: per generation, the count of pauses in each bucket (the last
    one: above every bound) and their sum."""

    def __init__(self, buckets: Sequence[float] = BUCKETS,
                 clock: Callable[[], float] = time.perf_counter) -> None:
        self.buckets = tuple(buckets)
        self._clock = clock
        self._counts = [[0] * (len(self.buckets) + 1) for _ in range(3)]
        self._sums = [0.0, 0.0, 0.0]
        self._started: float | None = None

    def __call__(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self._started = self._clock()
            return
        if self._started is None:  # installed during a collection
            return
        pause = self._clock() - self._started
        self._started = None
        generation = info["generation"]
        self._counts[generation][bisect.bisect_left(self.buckets, pause)] += 1
        self._sums[generation] += pause

    def snapshot(self, generation: int) -> tuple[list[int], float]:
        """(counts per bucket, sum of the pauses) of one generation, copied."""
        return list(self._counts[generation]), self._sums[generation]


_recorder: PauseRecorder | None = None
_install_lock = threading.Lock()


def process_recorder() -> PauseRecorder:
    """The process's hook, installed in ``gc.callbacks`` on the first call."""
    global _recorder
    with _install_lock:
        if _recorder is None:
            _recorder = PauseRecorder()
            gc.callbacks.append(_recorder)
        return _recorder


class GcPauseCollector(Collector):
    """Exports a :class:`PauseRecorder` (the process's unless one is given) on a registry."""

    def __init__(self, registry: CollectorRegistry | None = None,
                 recorder: PauseRecorder | None = None) -> None:
        self._recorder = recorder if recorder is not None else process_recorder()
        if registry is not None:
            registry.register(self)

    def collect(self) -> Iterator[HistogramMetricFamily]:
        family = HistogramMetricFamily(
            NAME, "Pauses of the cyclic garbage collector (the process stops for them), by "
            "generation (2: a full collection).", labels=["generation"])
        bounds = [floatToGoString(b) for b in self._recorder.buckets] + ["+Inf"]
        for generation in range(3):
            counts, total = self._recorder.snapshot(generation)
            cumulative, running = [], 0
            for bound, count in zip(bounds, counts):
                running += count
                cumulative.append((bound, running))
            family.add_metric([str(generation)], cumulative, total)
        yield family
