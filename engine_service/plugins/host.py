"""The bot host the session layer talks to: which bots exist, and one decision at a time.

``BotHost.decide`` never raises for a bot's fault. It returns a :class:`Decision` whose
``failure`` is one of ``timeout``, ``exception``, ``illegal``, ``crash``, ``unknown_bot``; the
session then plays the rulebook's auto-move for that decision (ARCHITECTURE.md section 4) and
records the decision in its metrics (``bot_decision_seconds``, ``bot_failures``): the host
logs failures (``bot_decision_failed``) but does not count them a second time. It counts what
only it sees: worker processes replaced after a timeout or a crash.

Decisions run in a :class:`~engine_service.plugins.pool.WorkerPool` of ``workers`` processes
(CPU-bound search must not hold the event loop or the GIL of the server). The deadline is
wall time from the call: time spent waiting for a free worker counts, and the bot is told its
remaining budget less a safety margin for the round trip, so that a bot that watches
``request.time_left()`` answers in time and one that does not is killed at the deadline.
"""

from __future__ import annotations

import atexit
import contextlib
import io
import time
import weakref
from dataclasses import dataclass
from typing import Any, Sequence

import structlog

from engine_service.rules import all_game_ids
from engine_service.sessions.api import BotInfo, BotLoadFailure

from .manager import LOAD_TIMEOUT_S, BotCatalog, PluginFailure, PluginSettings, load_catalog, log_loaded
from .pool import READY_TIMEOUT_S, WorkerPool
from .protocol import ALL_GAMES
from .runner import CRASH, FAILURES, UNKNOWN_BOT, Reply

log = structlog.get_logger("engine_service.plugins")

BENCH_AFTER = 3  # consecutive decisions that cost a worker (timeout or crash) ...
BENCH_S = 10.0  # ... bench the bot this long (doubling on each new bench, up to BENCH_MAX_S)
BENCH_MAX_S = 300.0
MIN_MARGIN_S = 0.005
MAX_MARGIN_S = 0.1
MARGIN_FRACTION = 0.2


@dataclass(frozen=True)
class Decision:
    """The outcome of one bot decision: ``action`` (a legal action string) or ``failure``."""

    action: str | None
    failure: str | None
    elapsed_s: float
    detail: str = ""  # why it failed, without anything the bot said (no hidden cards)

    def __post_init__(self) -> None:
        if (self.action is None) == (self.failure is None):
            raise ValueError("a Decision has exactly one of action and failure")
        if self.failure is not None and self.failure not in FAILURES:
            raise ValueError(f"unknown bot failure {self.failure!r}")


def bot_budget(remaining_s: float) -> float:
    """The time a bot is told it has, out of ``remaining_s`` before the hard deadline."""
    margin = min(MAX_MARGIN_S, max(MIN_MARGIN_S, remaining_s * MARGIN_FRACTION))
    return max(0.0, remaining_s - margin)


@dataclass
class _Health:
    """Per-bot circuit breaker: a bot whose decisions keep killing workers is benched."""

    strikes: int = 0  # consecutive decisions that cost a worker
    last_failure: str = "crash"
    benched_until: float = 0.0
    bench_s: float = BENCH_S


class BotHost:
    """Loads the bot plugins and runs their decisions in a pool of worker processes.

    ``autoload`` / ``allowlist``: see :mod:`engine_service.plugins.manager` (the environment
    variables ``CARDGAMES_DISABLE_PLUGIN_AUTOLOAD`` and ``CARDGAMES_BOT_PLUGINS`` apply on top).
    ``plugins``: extra plugin module names (or importable objects) to register, for tools and
    tests. ``metrics``: an :class:`engine_service.observability.metrics.Metrics` to count
    worker replacements on (None: the process-wide one). ``load_timeout_s``: how long one
    plugin's import, then its hook, may take here and in the workers (None: no limit).

    The worker processes start at construction; the host belongs to the event loop of its first
    ``decide`` call. Call :meth:`close` when done.
    """

    def __init__(self, *, autoload: bool = True, allowlist: set[str] | None = None, workers: int = 2,
                 plugins: Sequence[Any] = (), metrics: Any = None,
                 load_timeout_s: float | None = LOAD_TIMEOUT_S) -> None:
        self.settings = PluginSettings.resolve(autoload=autoload, allowlist=allowlist, extra=plugins,
                                               load_timeout_s=load_timeout_s)
        # the pool's zygote first: it imports the plugins while this process does the same
        self._pool = WorkerPool(self.settings, workers, on_replace=self._count_replacement)
        # what a plugin prints while this process imports it or calls its hook would land on
        # the engine's stdout, and its stderr writes (warnings too) inside the JSON log lines
        # (the logger holds its own stream, unaffected): kept out, as the workers' output is,
        # and said per plugin (quiet); anything else printed meanwhile (a thread a plugin
        # started) is kept out as well and said without a plugin's name
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            self.catalog: BotCatalog = load_catalog(self.settings, log_summary=False, quiet=True)
        if out.tell() or err.tell():
            log.warning("bot_plugin_output_discarded", plugin=None, stdout_chars=out.tell(),
                        stderr_chars=err.tell())
        self._keep_what_the_workers_loaded(self._pool.loaded(READY_TIMEOUT_S))
        log_loaded(self.catalog)  # after the zygote's verdict: the bots ListBots will list
        self._pool.expected = frozenset(self.catalog.names())
        self._metrics = metrics
        self._health: dict[str, _Health] = {}
        self._closed = False
        # Workers are daemonic and die with the interpreter; this also covers a host that was
        # never closed, without keeping it alive.
        pool_ref = weakref.ref(self._pool)
        atexit.register(lambda: (p := pool_ref()) is not None and p.close_sync())

    def _keep_what_the_workers_loaded(self, report: tuple[list[str], list[PluginFailure]] | None) -> None:
        """Leave out of the catalog every bot the workers' zygote did not load, as a load
        failure of its plugin. The two processes load the plugins independently, each under
        the load time limit: a plugin whose import or hook takes about the limit can load here
        and time out there, and its bots were then listed and seated, but every decision
        failed as ``unknown_bot``. The zygote's own failure for the plugin is the reason
        (``in the bot worker processes: timed out...``); a bot it lacks without one (its hook
        answered otherwise there) is refused alone, stage ``spec``. A bot only the zygote has
        is never asked for. ``report`` None (the zygote died, or did not finish loading within
        READY_TIMEOUT_S): nothing to compare with, the catalog is kept and that is logged."""
        if report is None:
            log.error("bot_worker_catalog_unknown",
                      reason="the bot worker zygote did not report the bots it loaded")
            return
        names, failures = report
        theirs = set(names)
        reasons = {f.plugin: f for f in failures if isinstance(f, PluginFailure)}
        blamed: set[str] = set()
        where = "in the bot worker processes: "
        for name in self.catalog.names():
            if name in theirs:
                continue
            entry = self.catalog.entries.pop(name)
            failure = reasons.get(entry.plugin)
            if failure is not None:
                if entry.plugin in blamed:
                    continue  # one failure for the plugin, whatever number of bots it offers
                blamed.add(entry.plugin)
                failure = PluginFailure(entry.plugin, failure.stage, where + failure.error,
                                        where + (failure.summary or failure.error))
            else:
                text = f"bot {name!r} was not loaded by the bot worker processes"
                failure = PluginFailure(entry.plugin, "spec", text, text)
            self.catalog.failures.append(failure)
            log.error("bot_plugin_failed", plugin=failure.plugin, stage=failure.stage,
                      error=failure.error)

    # ---- what is installed ----------------------------------------------------------------

    def bots(self) -> list[BotInfo]:
        """Installed bots, sorted by name, each with the registered games it plays."""
        games = all_game_ids()
        infos = []
        for name in self.catalog.names():
            entry = self.catalog.entries[name]
            spec = entry.spec
            played = games if ALL_GAMES in spec.games else [g for g in spec.games if g in games]
            infos.append(BotInfo(name=name, games=tuple(played), description=spec.description,
                                 plugin=entry.plugin))
        return infos

    def load_failures(self) -> list[BotLoadFailure]:
        """The plugins and bots left out at load, as ``ListBots`` says them: each failure's
        summary, not its logged error (:class:`~engine_service.plugins.manager.PluginFailure`)."""
        return [BotLoadFailure(f.plugin, f.stage, f.summary or f.error) for f in self.catalog.failures]

    def plays(self, bot: str, game_id: str) -> bool:
        """Whether bot ``bot`` is installed and plays ``game_id``."""
        return self.catalog.plays(bot, game_id)

    # ---- decisions ------------------------------------------------------------------------

    def warm(self) -> None:
        """Start the worker processes now, in the background, on the running event loop (which
        the host then belongs to): the service calls it at start, so that the first decisions
        do not spend their deadline waiting for the workers to fork and for a plugin's slow
        import to finish in the zygote."""
        if not self._closed:
            self._pool.start()

    async def start(self, timeout_s: float | None = None) -> bool:
        """Optional: wait until every worker process has loaded the plugins (the first
        decisions otherwise share their deadline with the workers' start-up); False when they
        have not within ``timeout_s`` (None: the pool's own bound)."""
        if timeout_s is None:
            return await self._pool.wait_ready()
        return await self._pool.wait_ready(timeout_s)

    async def decide(self, bot: str, game_id: str, seat: int, view: dict, legal: list[str],
                     seed: int, deadline_s: float) -> Decision:
        """One decision by ``bot`` for ``seat``, within ``deadline_s`` seconds of wall time.

        Never raises for a bot's fault (see the module docstring); raises RuntimeError after
        :meth:`close`.
        """
        started = time.monotonic()
        if self._closed:
            raise RuntimeError("the bot host is closed")
        if not self.plays(bot, game_id):
            return self._finish(bot, game_id, started, Reply(None, UNKNOWN_BOT,
                                                             f"no bot {bot!r} for game {game_id!r}"))
        health = self._health.get(bot)
        if health is not None and started < health.benched_until:
            return self._finish(bot, game_id, started, Reply(
                None, health.last_failure, f"benched for {health.benched_until - started:.1f}s more after "
                f"{BENCH_AFTER} decisions in a row ended in a {health.last_failure}"))
        deadline = started + max(0.0, deadline_s)
        legal = list(legal)
        request = (bot, game_id, seat, view, legal, int(seed), bot_budget(deadline - time.monotonic()))
        try:
            reply = await self._pool.run(request, deadline, budget=bot_budget)
        except Exception as exc:  # the pool's own fault: still never the caller's problem
            log.exception("bot_host_error", bot=bot, game=game_id)
            reply = Reply(None, CRASH, f"bot host error: {type(exc).__name__}")
        if reply.action is not None and reply.action not in legal:
            reply = Reply(None, "illegal", "the worker returned an action outside the legal list",
                          reply.elapsed_s)
        # looked up again: a decision of the bot that lost a worker while this one ran has
        # made its strikes meanwhile, and this success ends them too
        health = self._health.get(bot)
        if reply.action is not None and health is not None:
            health.strikes = 0
            health.bench_s = BENCH_S
        return self._finish(bot, game_id, started, reply)

    def _finish(self, bot: str, game_id: str, started: float, reply: Reply) -> Decision:
        elapsed = time.monotonic() - started
        if reply.failure is None:
            return Decision(reply.action, None, elapsed)
        log.warning("bot_decision_failed", bot=bot, game=game_id, failure=reply.failure,
                    detail=reply.detail, elapsed_s=round(elapsed, 4))
        return Decision(None, reply.failure, elapsed, reply.detail)

    def _count_replacement(self, bot: str, reason: str, charged: bool = True) -> None:
        """A decision of ``bot`` cost its worker: count it, and bench a bot that keeps doing
        it, so that a crash-looping or hanging bot cannot keep the pool busy starting
        replacements while other matches wait (its decisions then fail at once, with the same
        reason, and the seat plays auto-moves). Not ``charged`` (it got its worker with less
        than a fair share of its time left: the pool's delay), it is counted but is no strike."""
        log.warning("bot_worker_replaced", bot=bot, reason=reason, charged=charged)
        health = self._health.setdefault(bot, _Health())
        if charged:
            health.strikes += 1
            health.last_failure = reason
            if health.strikes >= BENCH_AFTER:
                health.benched_until = time.monotonic() + health.bench_s
                log.error("bot_benched", bot=bot, reason=reason, seconds=health.bench_s)
                health.bench_s = min(BENCH_MAX_S, health.bench_s * 2)
                health.strikes = 0
        metrics = self._metrics
        if metrics is None:
            from engine_service.observability.metrics import get_metrics
            metrics = get_metrics()
        metrics.bot_worker_restarts.labels(bot=bot, reason=reason).inc()

    # ---- lifecycle ------------------------------------------------------------------------

    def worker_pids(self) -> list[int]:
        """Process ids of the live workers (diagnostics and tests)."""
        return self._pool.pids()

    async def close(self) -> None:
        """Stop the workers (a decision in flight ends as a crash). Idempotent."""
        if self._closed:
            return
        self._closed = True
        await self._pool.close()

