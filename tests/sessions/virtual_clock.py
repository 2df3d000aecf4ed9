"""An event loop whose clock is virtual: its ``time()`` and (under :func:`run_virtual`)
``time.time()`` read one number that only the test moves. A test can then advance the clock
by any amount, exactly to a deadline, and assert the instants things happened at exactly:
a loaded machine delays none of them, since no wall clock is read."""

from __future__ import annotations

import asyncio
import selectors
import time
from typing import Any, Callable

START = 1_700_000_000.0  # the virtual clock's start, in Unix seconds (exact in binary floats)


class _PollingSelector(selectors.DefaultSelector):  # type: ignore[misc, valid-type]
    """Never blocks: a wait for the next timer is the test's to end (by moving the clock)."""

    def select(self, timeout=None):
        return super().select(0)


class VirtualClockLoop(asyncio.SelectorEventLoop):
    """An event loop whose clock stands still until :meth:`set_time` moves it."""

    def __init__(self) -> None:
        super().__init__(_PollingSelector())
        self.now = START
        # a timer fires once its time is below now + the resolution: above the spacing of
        # floats near START (2.4e-7), so that one due exactly now fires
        self._clock_resolution = 1e-6

    def time(self) -> float:
        return self.now

    def set_time(self, t: float) -> None:
        assert t >= self.now
        self.now = t

    def next_timer(self) -> float | None:
        live = [h.when() for h in self._scheduled if not h.cancelled()]
        return min(live) if live else None


async def settle() -> None:
    """Run every callback that is ready, and what they make ready, until the loop is idle at
    the current instant (nothing ready, no timer due)."""
    loop = asyncio.get_running_loop()
    quiet = 0
    for _ in range(200_000):
        await asyncio.sleep(0)
        due = loop.next_timer()
        if not loop._ready and (due is None or due > loop.time()):
            quiet += 1
            if quiet >= 3:
                return
        else:
            quiet = 0
    raise AssertionError("the event loop did not settle")


async def advance_to(target: float) -> None:
    """Move the clock to ``target``, stopping at each timer due meanwhile (in time order) so
    that every one fires at its own instant."""
    loop = asyncio.get_running_loop()
    await settle()
    while True:
        due = loop.next_timer()
        if due is None or due > target:
            break
        loop.set_time(max(loop.time(), due))
        await settle()
    loop.set_time(target)
    await settle()


def run_virtual(coro_fn: Callable[[], Any], monkeypatch) -> Any:
    loop = VirtualClockLoop()
    monkeypatch.setattr(time, "time", loop.time)  # the Unix clock reads the same virtual time
    try:
        return loop.run_until_complete(coro_fn())
    finally:
        loop.run_until_complete(loop.shutdown_asyncgens())
        loop.close()
