"""Bot worker processes: decisions run off the event loop, under a hard deadline.

Why not ``concurrent.futures.ProcessPoolExecutor``: it cannot stop one hung task, and one dead
worker breaks the whole executor (``BrokenProcessPool``) and with it the decisions of every
other match. Here each worker is a process with its own pipe; the pool hands a decision to an
idle worker and waits for the answer until the deadline, in a thread, so the event loop never
blocks. A worker that misses the deadline is killed (SIGKILL); one that dies (a bot called
``os._exit``, a segfault, the OOM killer) is noticed by end-of-file on its pipe. Either way
that decision is a failure (``timeout`` / ``crash``), a fresh worker replaces the old one in
the background, and no other match is affected.

Workers are fresh interpreters (``python -m engine_service.plugins.pool``), never forks: forking
a process that runs gRPC's threads is unsafe. Each worker loads the plugins itself (from the
same :class:`~engine_service.plugins.manager.PluginSettings` and ``sys.path``), so only the
request and the reply cross the pipe.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from multiprocessing.connection import Connection
from typing import Any, Callable

import structlog

from .manager import PluginSettings, load_catalog
from .runner import CRASH, TIMEOUT, BotRunner, Reply

log = structlog.get_logger("engine_service.plugins")

READY_TIMEOUT_S = 120.0  # importing the plugins in a fresh worker; generous on a loaded machine
RESTART_BACKOFF_S = 0.5
MAX_BACKOFF_S = 30.0
SHUTDOWN_GRACE_S = 2.0


class WorkerLost(Exception):
    """The worker died while idle: no decision was lost; the pool retries on another."""


def _worker_main() -> None:
    """Entry point of a worker process (``python -m engine_service.plugins.pool``): read the
    settings, load the plugins, then answer requests until told to stop (``None``) or the
    parent goes away (end-of-file on stdin).

    Requests arrive on stdin and replies leave on the original stdout, both as
    ``multiprocessing.connection`` messages; file descriptor 1 is then pointed at stderr so that
    a bot's ``print`` cannot corrupt the channel.
    """
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent decides when workers stop
    reply_fd = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    inbox = Connection(0, writable=False)
    outbox = Connection(reply_fd, readable=False)
    settings, path = inbox.recv()
    sys.path[:] = path
    # The parent already logged the plugin load; a worker reports only what is critical, as
    # JSON on stderr.
    structlog.configure(
        processors=[structlog.processors.add_log_level, structlog.processors.TimeStamper(fmt="iso"),
                    structlog.processors.JSONRenderer()],
        wrapper_class=structlog.make_filtering_bound_logger(logging.CRITICAL),
        logger_factory=structlog.PrintLoggerFactory(sys.stderr),
    )
    runner = BotRunner(load_catalog(settings))
    outbox.send(("ready", os.getpid()))
    while True:
        try:
            msg = inbox.recv()
        except (EOFError, OSError):
            return
        if msg is None:
            return
        name, game_id, seat, view, legal, seed, budget_s = msg
        reply = runner.decide(name, game_id, seat, view, legal, seed, budget_s)
        try:
            outbox.send(reply)
        except (BrokenPipeError, OSError):
            return


class WorkerProcess:
    """One worker process and the parent's ends of its pipes. Used from one thread at a time.

    A plain subprocess (not ``multiprocessing.Process``): nothing of the parent is re-imported
    or inherited (no ``__main__`` re-execution, no forked gRPC threads), and the worker is
    exactly as isolated as an external bot program would be.
    """

    def __init__(self, settings: PluginSettings) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "engine_service.plugins.pool"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, close_fds=True,
            env={**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)},
            start_new_session=True)  # a terminal's Ctrl-C goes to the parent only
        assert self.process.stdin is not None and self.process.stdout is not None
        self._to = Connection(os.dup(self.process.stdin.fileno()), readable=False)
        self._from = Connection(os.dup(self.process.stdout.fileno()), writable=False)
        self.process.stdin.close()
        self.process.stdout.close()
        self.ready = False
        self.broken = False  # killed or dead: must be replaced
        try:
            self._to.send((settings, list(sys.path)))
        except (BrokenPipeError, OSError):
            self.kill()

    @property
    def pid(self) -> int | None:
        return self.process.pid

    def alive(self) -> bool:
        return self.process.poll() is None

    def wait_ready(self, timeout: float) -> bool:
        """Block until the worker has loaded its plugins (False: it died or took too long)."""
        try:
            if not self.broken and self._from.poll(timeout):
                msg = self._from.recv()
                self.ready = isinstance(msg, tuple) and msg[:1] == ("ready",)
        except (EOFError, OSError):
            self.ready = False
        if not self.ready:
            self.kill()
        return self.ready

    def call(self, request: tuple, deadline: float) -> Reply:
        """Send one request and wait for the reply until ``deadline`` (``time.monotonic``).

        Raises :class:`WorkerLost` when the worker was already dead before the request was
        sent. Kills the worker on a timeout.
        """
        if not self.alive():
            self.kill()
            raise WorkerLost()
        try:
            self._to.send(request)
        except (BrokenPipeError, OSError):
            self.kill()
            raise WorkerLost() from None
        try:
            if self._from.poll(max(0.0, deadline - time.monotonic())):
                reply = self._from.recv()
                if isinstance(reply, Reply):
                    return reply
                self.kill()
                return Reply(None, CRASH, "the worker sent an unexpected message")
        except (EOFError, OSError):
            try:
                code = self.process.wait(1.0)
            except subprocess.TimeoutExpired:
                code = None
            self.kill()
            return Reply(None, CRASH, f"the worker process exited (code {code})")
        self.kill()
        return Reply(None, TIMEOUT, "no answer before the deadline; the worker was killed")

    def stop(self) -> None:
        """Ask the worker to exit; kill it if it does not."""
        try:
            self._to.send(None)
        except (BrokenPipeError, OSError):
            pass
        try:
            self.process.wait(SHUTDOWN_GRACE_S)
        except subprocess.TimeoutExpired:
            pass
        self.kill()

    def kill(self) -> None:
        self.broken = True
        if self.process.poll() is None:
            self.process.kill()
        try:
            self.process.wait(5.0)
        except subprocess.TimeoutExpired:  # pragma: no cover - SIGKILL is not ignorable
            pass
        for conn in (self._to, self._from):
            try:
                conn.close()
            except OSError:
                pass


class WorkerPool:
    """A fixed number of worker processes shared by every match, with replacement.

    The processes start when the pool is made (their imports overlap the service's start);
    the asyncio side is set up on first use and belongs to that event loop.
    """

    def __init__(self, settings: PluginSettings, size: int,
                 on_replace: Callable[[str, str], None] | None = None) -> None:
        """``on_replace(bot, reason)`` is called when a decision of ``bot`` cost its worker
        (``reason``: ``timeout`` or ``crash``)."""
        if size < 1:
            raise ValueError("a bot worker pool needs at least one worker")
        self.settings = settings
        self.size = size
        self._threads = ThreadPoolExecutor(max_workers=2 * size + 2, thread_name_prefix="bot-pool")
        self._lock = threading.Lock()
        self._workers: set[WorkerProcess] = set()
        self._pending = [self._new_worker() for _ in range(size)]
        self._idle: asyncio.Queue[WorkerProcess] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._tasks: set[asyncio.Task] = set()
        self._closed = False
        self.replacements = 0  # workers replaced after a timeout or crash
        self._on_replace = on_replace

    def _new_worker(self) -> WorkerProcess:
        worker = WorkerProcess(self.settings)
        with self._lock:
            self._workers.add(worker)
        return worker

    def _forget(self, worker: WorkerProcess) -> None:
        with self._lock:
            self._workers.discard(worker)

    def _ensure_started(self) -> asyncio.Queue[WorkerProcess]:
        if self._closed:
            raise RuntimeError("the bot worker pool is closed")
        if self._idle is None:
            self._loop = asyncio.get_running_loop()
            self._idle = asyncio.Queue()
            pending, self._pending = self._pending, []
            for worker in pending:
                self._spawn_task(self._admit(worker))
        return self._idle

    def _spawn_task(self, coro: Any) -> None:
        assert self._loop is not None
        task = self._loop.create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _admit(self, worker: WorkerProcess | None) -> None:
        """Wait (in a thread) until ``worker`` is ready, then make it available; a worker
        that fails to start is replaced after a pause, so a broken environment cannot spin."""
        loop = asyncio.get_running_loop()
        backoff = RESTART_BACKOFF_S
        while not self._closed:
            if worker is None:
                worker = await loop.run_in_executor(self._threads, self._new_worker)
            ok = await loop.run_in_executor(self._threads, worker.wait_ready, READY_TIMEOUT_S)
            if self._closed:
                await loop.run_in_executor(self._threads, worker.stop)
                return
            if ok:
                assert self._idle is not None
                self._idle.put_nowait(worker)
                return
            log.error("bot_worker_start_failed", exitcode=worker.process.returncode,
                      retry_in_s=backoff)
            self._forget(worker)
            worker = None
            await asyncio.sleep(backoff)
            backoff = min(MAX_BACKOFF_S, backoff * 2)

    async def wait_ready(self, timeout: float = READY_TIMEOUT_S) -> bool:
        """Wait until every worker is ready (tests, and a service that wants warm workers)."""
        idle = self._ensure_started()
        deadline = time.monotonic() + timeout
        while idle.qsize() < self.size:
            if time.monotonic() > deadline:
                return False
            await asyncio.sleep(0.02)
        return True

    async def run(self, request: tuple, deadline: float) -> Reply:
        """Run one request on an idle worker; a ``timeout`` Reply if none frees up in time."""
        idle = self._ensure_started()
        loop = asyncio.get_running_loop()
        while True:
            try:
                async with asyncio.timeout(max(0.0, deadline - time.monotonic())):
                    worker = await idle.get()
            except TimeoutError:
                return Reply(None, TIMEOUT, "no bot worker was free before the deadline")
            done = self._threads.submit(worker.call, request, deadline)
            # Release when the *thread* is done, not when this coroutine is: a cancelled
            # decision must not hand out a worker that is still busy.
            done.add_done_callback(lambda _f, w=worker: loop.call_soon_threadsafe(self._release, w))
            try:
                reply = await asyncio.wrap_future(done)
            except WorkerLost:
                log.warning("bot_worker_lost", pid=worker.pid)
                continue
            if worker.broken and self._on_replace is not None and reply.failure:
                self._on_replace(request[0], reply.failure)
            return reply

    def _release(self, worker: WorkerProcess) -> None:
        if self._closed:
            self._threads.submit(worker.stop)
            return
        if not worker.broken and worker.alive():
            assert self._idle is not None
            self._idle.put_nowait(worker)
            return
        self._forget(worker)
        self.replacements += 1
        self._spawn_task(self._admit(None))

    def pids(self) -> list[int]:
        with self._lock:
            return [w.pid for w in self._workers if w.alive()]

    async def close(self) -> None:
        """Stop every worker (killing busy ones) and wait for them."""
        if self._closed:
            return
        self._closed = True
        for task in list(self._tasks):
            task.cancel()
        with self._lock:
            workers = list(self._workers)
            self._workers.clear()
        loop = asyncio.get_running_loop()
        if workers:
            await asyncio.gather(*(loop.run_in_executor(self._threads, w.stop) for w in workers),
                                 return_exceptions=True)
        self._threads.shutdown(wait=False, cancel_futures=True)

    def close_sync(self) -> None:
        """Stop every worker without an event loop (used at interpreter exit)."""
        self._closed = True
        with self._lock:
            workers = list(self._workers)
            self._workers.clear()
        for w in workers:
            w.kill()
        self._threads.shutdown(wait=False, cancel_futures=True)


if __name__ == "__main__":
    _worker_main()
