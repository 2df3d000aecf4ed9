"""Every Prometheus metric of the service, in one place (ARCHITECTURE.md section 6).

Metrics live on a :class:`Metrics` object bound to its own
:class:`~prometheus_client.CollectorRegistry`, never on prometheus_client's global default
registry: tests create a fresh ``Metrics()`` and read exact values from it, and two servers in
one process (tests again) do not collide. The service uses the process-wide instance
:func:`get_metrics`, whose registry the transport exposes on the metrics port.

Labels are low-cardinality by construction: a game id, a bot name, an RPC method, a status
code, an outcome or reason from a closed set. Never a match id, a seat token, a player name
or anything else that grows with traffic.

Who records what:

* the session layer (engine_service.sessions): matches, actions, watchers, timeouts and
  auto-moves, presence, bot decisions (from the host's ``Decision``: one observation per
  decision, so the bot host itself should not record them again);
* the store (engine_service.store): write latency and errors;
* the transport (engine_service.transport): ``rpc_requests`` and ``rpc_duration`` from its
  interceptor, ``rpc_stream_messages`` per message sent on a server stream, ``rate_limited``
  per call refused by a request-rate limit.
"""

from __future__ import annotations

import math
import os
import threading
from typing import Any, Iterable

from prometheus_client import (CollectorRegistry, Counter, Gauge, GCCollector, Histogram,
                               PlatformCollector, ProcessCollector)

from .gc_pauses import GcPauseCollector

NAMESPACE = "cardgames"

#: Match outcomes (``matches_finished_total{outcome}``).
OUTCOMES = ("completed", "resigned", "forfeit", "abandoned", "terminated")

#: Results of a submitted action (``actions_total{result}``): ``accepted``, ``duplicate`` (an
#: idempotent retry), ``stale`` (expected_seq), or the rules/session error's reason in lower
#: case (``illegal_action``, ``not_your_turn``, ``malformed_action``, ``match_not_active``...).
ACTION_RESULTS = ("accepted", "duplicate", "stale")

# The closed label sets below are created at 0 when the metrics are (or, for games and bots,
# when :meth:`Metrics.declare` is told them at start-up): a labelled series that only appears
# at its first increment has no earlier sample, so ``increase(...[5m])`` over it sees nothing
# and an alert on the first failure (CardgamesStoreErrors, CardgamesBotWorkerCrashed) misses
# it. Label values outside these sets (an action's rejection reason, an RPC method) still
# appear at their first use.

#: Who made an action (``actions_total{by}``).
ACTORS = ("player", "bot", "auto")
#: ``matches_active{status}``: the statuses of an unfinished match.
ACTIVE_STATUSES = ("waiting", "active")
#: ``watchers{audience}``.
AUDIENCES = ("seat", "spectator", "admin")
#: ``events_published{kind}``: the events queued to watchers.
EVENT_KINDS = ("action", "presence", "match_ended")
#: ``presence_changes{change}``.
PRESENCE_CHANGES = ("joined", "connected", "disconnected", "bot_took_over", "returned", "left")
#: ``auto_moves{reason}``: a turn timeout, a bot that failed, the rulebook's policy playing a
#: seat taken over (absent player) or abandoned (a player who left).
AUTO_MOVE_REASONS = ("timeout", "bot_failed", "takeover", "abandoned")
#: ``grace_expired{policy}``.
GRACE_POLICIES = ("forfeit", "bot_takeover", "abandoned")
#: ``bot_failures{reason}`` (engine_service.plugins.runner and the session's own checks).
BOT_FAILURE_REASONS = ("timeout", "exception", "illegal", "crash", "unknown_bot")
#: ``bot_worker_restarts{reason}``.
WORKER_RESTART_REASONS = ("timeout", "crash")
#: ``store_errors{operation}``: every operation of the store interface (engine_service.store)
#: that counts its failures.
STORE_OPERATIONS = ("create_match", "save_seat", "start_match", "set_status", "append_action",
                    "append_decks", "load_match", "list_matches", "unfinished_match_ids", "find_created",
                    "count_finished", "prune_finished", "save_absence", "touch_absences")
#: ``store_write_seconds{operation}``: the timed writes among them (Store.write), created at 0 so
#: that the dashboard's write-latency panels show a quiet engine's store, not "No data".
STORE_WRITE_OPERATIONS = ("create_match", "save_seat", "start_match", "set_status", "append_action",
                          "append_decks", "save_absence", "touch_absences")

#: ``rpc_requests{code}``: every gRPC status code name, created at 0 for every method of the
#: service's own API and health service when the server starts (:meth:`Metrics.declare_rpcs`).
RPC_CODES = ("OK", "CANCELLED", "UNKNOWN", "INVALID_ARGUMENT", "DEADLINE_EXCEEDED", "NOT_FOUND",
             "ALREADY_EXISTS", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION",
             "ABORTED", "OUT_OF_RANGE", "UNIMPLEMENTED", "INTERNAL", "UNAVAILABLE", "DATA_LOSS",
             "UNAUTHENTICATED")

# Latency buckets: actions and store writes are sub-millisecond to tens of milliseconds (an
# fsync); RPCs add the network; bot decisions go up to the bot deadline (seconds).
_FAST_BUCKETS = (0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25,
                 0.5, 1.0, 2.5)
_RPC_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0,
                10.0)
_BOT_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0)


class Metrics:
    """The service's metrics on a fresh registry of their own."""

    def __init__(self, *, process_collectors: bool = False) -> None:
        self.registry = CollectorRegistry()
        self._children: dict[tuple[Any, tuple[str, ...]], Any] = {}
        r, ns = self.registry, NAMESPACE
        if process_collectors:
            ProcessCollector(registry=r)
            PlatformCollector(registry=r)
            GCCollector(registry=r)
            GcPauseCollector(registry=r)  # cardgames_gc_pause_seconds{generation}

        # ---- the process --------------------------------------------------------------
        self.serving = Gauge(
            "serving", "1 while the gRPC health service answers SERVING; 0 while the engine "
            "starts (its metrics are up once it holds its database) and while it drains.",
            namespace=ns, registry=r)

        # ---- matches ------------------------------------------------------------------
        self.matches_active = Gauge(
            "matches_active", "Matches not yet finished (waiting for players or in play).",
            ["game", "status"], namespace=ns, registry=r)
        self.matches_created = Counter(
            "matches_created", "Matches created.", ["game"], namespace=ns, registry=r)
        self.matches_finished = Counter(
            "matches_finished", "Matches ended, by outcome: completed (by the rules), resigned, "
            "forfeit (absence past the grace period), abandoned (no winner), terminated (admin).",
            ["game", "outcome"], namespace=ns, registry=r)
        self.matches_resumed = Counter(
            "matches_resumed", "Unfinished matches rebuilt from the store at start-up.",
            ["game"], namespace=ns, registry=r)
        self.matches_pruned = Counter(
            "matches_pruned", "Ended matches deleted from the store by retention "
            "(--keep-finished-days), with everything stored for them.", namespace=ns, registry=r)

        # ---- actions ------------------------------------------------------------------
        self.actions = Counter(
            "actions", "Submitted actions by result (accepted, duplicate, stale, or the error "
            "reason in lower case) and by who made them (player, bot, auto).",
            ["game", "by", "result"], namespace=ns, registry=r)
        self.action_latency = Histogram(
            "action_latency_seconds", "Time to validate, persist and publish one accepted "
            "action (the store write included).", ["game"], buckets=_FAST_BUCKETS,
            namespace=ns, registry=r)

        # ---- watchers and presence ----------------------------------------------------
        self.watchers = Gauge(
            "watchers", "Open watch streams by audience (seat, spectator, admin).",
            ["audience"], namespace=ns, registry=r)
        self.watch_overflows = Counter(
            "watch_overflows", "Watch streams closed because the watcher fell behind "
            "(bounded queue full); the client resumes with after_seq.",
            namespace=ns, registry=r)
        self.watch_snapshots = Counter(
            "watch_snapshots", "Watch streams that started from a snapshot (after_seq < 0 or "
            "too far behind).", namespace=ns, registry=r)
        self.events_published = Counter(
            "events_published", "Events queued to watchers, by kind.", ["kind"],
            namespace=ns, registry=r)
        self.presence_changes = Counter(
            "presence_changes", "Seat presence changes (joined, connected, disconnected, "
            "bot_took_over, returned, left).", ["game", "change"], namespace=ns, registry=r)

        # ---- time and absence -----------------------------------------------------------
        self.turn_timeouts = Counter(
            "turn_timeouts", "Decisions whose deadline (turn_time_s) expired.", ["game"],
            namespace=ns, registry=r)
        self.auto_moves = Counter(
            "auto_moves", "Moves made by the rulebook's auto-move policy, by reason (timeout, "
            "bot_failed, takeover, abandoned).", ["game", "reason"], namespace=ns, registry=r)
        self.grace_expired = Counter(
            "grace_expired", "Disconnections that outlasted the grace period, by the policy "
            "applied (forfeit, bot_takeover, abandoned).", ["game", "policy"],
            namespace=ns, registry=r)

        # ---- bots -----------------------------------------------------------------------
        self.bot_decision_seconds = Histogram(
            "bot_decision_seconds", "Wall time of one bot decision (as measured by the bot host).",
            ["bot"], buckets=_BOT_BUCKETS, namespace=ns, registry=r)
        self.bot_failures = Counter(
            "bot_failures", "Bot decisions replaced by the auto-move policy, by reason "
            "(timeout, exception, illegal, crash, unknown_bot).", ["bot", "reason"],
            namespace=ns, registry=r)
        self.bot_worker_restarts = Counter(
            "bot_worker_restarts", "Bot worker processes replaced after a decision killed them "
            "(reason: timeout, the host killed it at the deadline; crash, it died).",
            ["bot", "reason"], namespace=ns, registry=r)

        # ---- store ----------------------------------------------------------------------
        self.store_write_seconds = Histogram(
            "store_write_seconds", "Latency of one durable store write (commit included).",
            ["operation"], buckets=_FAST_BUCKETS, namespace=ns, registry=r)
        self.store_errors = Counter(
            "store_errors", "Store operations that failed.", ["operation"], namespace=ns,
            registry=r)
        self.store_commits_resolved = Counter(
            "store_commits_resolved", "PostgreSQL writes whose COMMIT answer was lost with the "
            "connection, by what asking the server afterwards found (committed: the write "
            "stood; aborted: it did not; unknown: no answer, counted in store_errors too).",
            ["operation", "outcome"], namespace=ns, registry=r)
        # registered by watch_database_file (a SQLite store): a store without a file of its
        # own (memory, PostgreSQL) exports none rather than a free space of 0
        self.store_database_bytes = Gauge(
            "store_database_bytes", "Size of the SQLite database file and its write-ahead log.",
            namespace=ns, registry=None)
        self.store_volume_free_bytes = Gauge(
            "store_volume_free_bytes", "Bytes the engine may still write on the filesystem "
            "holding the SQLite database (statvfs f_bavail).", namespace=ns, registry=None)
        self.store_volume_size_bytes = Gauge(
            "store_volume_size_bytes", "Size of the filesystem holding the SQLite database.",
            namespace=ns, registry=None)
        self._database_file: str | None = None

        # ---- RPCs (recorded by the transport's interceptor) -----------------------------
        self.rpc_requests = Counter(
            "rpc_requests", "RPCs handled, by full method name and gRPC status code name.",
            ["method", "code"], namespace=ns, registry=r)
        self.rpc_duration = Histogram(
            "rpc_duration_seconds", "RPC duration (for a server stream: until it ends).",
            ["method"], buckets=_RPC_BUCKETS, namespace=ns, registry=r)
        self.rpc_stream_messages = Counter(
            "rpc_stream_messages_sent", "Messages sent on server streams.", ["method"],
            namespace=ns, registry=r)
        self.rpc_in_flight = Gauge(
            "rpc_in_flight", "RPCs in progress (streams included).", ["method"],
            namespace=ns, registry=r)
        self.rate_limited = Counter(
            "rate_limited", "Calls refused by a request-rate limit (RESOURCE_EXHAUSTED, reason "
            "RATE_LIMITED), by full method name and the bucket's key kind (seat: a seat token; "
            "peer: a client address).", ["method", "key_kind"], namespace=ns, registry=r)

        for operation in STORE_OPERATIONS:
            self.store_errors.labels(operation)
        for operation in STORE_WRITE_OPERATIONS:
            self.store_write_seconds.labels(operation)
        for audience in AUDIENCES:
            self.watchers.labels(audience)
        for kind in EVENT_KINDS:
            self.events_published.labels(kind)

    def declare(self, games: Iterable[str] = (), bots: Iterable[str] = ()) -> None:
        """Create at 0 every series of the installed games and bots with a closed label set
        (the start-up calls it once the bot plugins are loaded; see the note above
        ACTORS). Idempotent: a series that exists keeps its value."""
        for game in games:
            for metric in (self.matches_created, self.matches_resumed, self.turn_timeouts):
                metric.labels(game)
            for status in ACTIVE_STATUSES:
                self.matches_active.labels(game, status)
            for outcome in OUTCOMES:
                self.matches_finished.labels(game, outcome)
            for by in ACTORS:
                self.actions.labels(game, by, "accepted")
            for result in ACTION_RESULTS[1:]:  # duplicate, stale: only a player's
                self.actions.labels(game, "player", result)
            for change in PRESENCE_CHANGES:
                self.presence_changes.labels(game, change)
            for reason in AUTO_MOVE_REASONS:
                self.auto_moves.labels(game, reason)
            for policy in GRACE_POLICIES:
                self.grace_expired.labels(game, policy)
        for bot in bots:
            self.bot_decision_seconds.labels(bot)  # the denominator of CardgamesBotFailures
            for reason in BOT_FAILURE_REASONS:
                self.bot_failures.labels(bot, reason)
            for reason in WORKER_RESTART_REASONS:
                self.bot_worker_restarts.labels(bot, reason)

    def declare_rpcs(self, methods: Iterable[str], streaming: Iterable[str] = (),
                     rate_limited: Iterable[tuple[str, str]] = ()) -> None:
        """Create at 0 the RPC series of the server's methods (full names), as
        :meth:`declare` does for games: ``rpc_requests`` for every status code, the duration
        histogram and the in-flight gauge; ``rpc_stream_messages`` for the ``streaming``
        ones; ``rate_limited`` for each ``(method, key_kind)`` a rate limit may refuse. A
        dashboard or an alert on the first ``RESOURCE_EXHAUSTED`` of a method then has an
        earlier sample to compare with. Idempotent."""
        for method in methods:
            for code in RPC_CODES:
                self.rpc_requests.labels(method, code)
            self.rpc_duration.labels(method)
            self.rpc_in_flight.labels(method)
        for method in streaming:
            self.rpc_stream_messages.labels(method)
        for method, key_kind in rate_limited:
            self.rate_limited.labels(method, key_kind)

    def watch_database_file(self, path: str) -> None:
        """Export the size of the database at ``path`` and the free space of its filesystem,
        read at each scrape (``os.stat`` / ``os.statvfs``: microseconds, off the event loop on
        the metrics server's thread). The SQLite store calls it when it opens a file; a later
        call moves the gauges to the new path. A file that cannot be read then reads NaN
        rather than failing the scrape."""
        first = self._database_file is None
        self._database_file = path
        if not first:
            return
        self.store_database_bytes.set_function(self._database_bytes)
        self.store_volume_free_bytes.set_function(lambda: self._volume(free=True))
        self.store_volume_size_bytes.set_function(lambda: self._volume(free=False))
        for gauge in (self.store_database_bytes, self.store_volume_free_bytes,
                      self.store_volume_size_bytes):
            self.registry.register(gauge)

    def _database_bytes(self) -> float:
        path = self._database_file or ""
        total = 0
        for name in (path, path + "-wal"):
            try:
                total += os.stat(name).st_size
            except FileNotFoundError:
                if name == path:
                    return math.nan
            except OSError:
                return math.nan
        return float(total)

    def _volume(self, *, free: bool) -> float:
        try:
            st = os.statvfs(os.path.dirname(os.path.abspath(self._database_file or ".")))
        except OSError:
            return math.nan
        return float((st.f_bavail if free else st.f_blocks) * st.f_frsize)

    def child(self, metric: Any, *labels: str) -> Any:
        """``metric.labels(*labels)``, memoized: prometheus_client validates, converts and
        takes a lock on every ``labels()`` call, which the per-action and per-RPC paths would
        pay several times over. The label sets are few by construction (see above)."""
        key = (metric, labels)
        try:
            return self._children[key]
        except KeyError:
            child = self._children[key] = metric.labels(*labels)
            return child

    def value(self, name: str, labels: dict[str, str] | None = None) -> float:
        """A sample's current value (0.0 if absent): for tests and diagnostics.

        ``name`` is the full sample name, e.g. ``cardgames_actions_total``.
        """
        v = self.registry.get_sample_value(name, labels or {})
        return 0.0 if v is None else v


_default: Metrics | None = None
_default_lock = threading.Lock()


def get_metrics() -> Metrics:
    """The process-wide metrics (created on first use, with process and GC collectors)."""
    global _default
    with _default_lock:
        if _default is None:
            _default = Metrics(process_collectors=True)
        return _default
