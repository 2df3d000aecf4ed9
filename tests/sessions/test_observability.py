"""Logs and metrics of the session layer: domain events with their bound fields and nothing
secret (no token, hand, deck or view); Prometheus values after a known scenario, on a fresh
registry; the JSON log format."""

from __future__ import annotations

import asyncio
import io
import json
import logging
import random
import sys
import threading
import time

import pytest
import structlog
from structlog.testing import capture_logs

from engine_service.observability.logging import LEVELS, configure_logging
from engine_service.observability.metrics import Metrics, get_metrics
from engine_service.sessions.api import CreateMatchRequest, Principal
from engine_service.sessions.views import public_or_none
from engine_service.store import MemoryStore

from .helpers import Stream, config, configured_logging, manager, open_match, play_random, run, until

DOMAIN_FIELDS = {
    "match_created": {"match_id", "game", "status", "seats", "options", "turn_time_s"},
    "seat_joined": {"match_id", "game", "seat"},
    "match_started": {"match_id", "game", "seq"},
    "action_applied": {"match_id", "game", "seat", "seq", "action", "by"},
    "deal_scored": {"match_id", "game", "seq", "deal", "totals"},
    "match_ended": {"match_id", "game", "seq", "outcome", "winners", "totals"},
    "presence_changed": {"match_id", "game", "seat", "seq", "change"},
    "auto_move": {"match_id", "game", "seat", "seq", "action", "reason"},
}


def test_match_ended_says_who_resigned_and_why_a_match_was_terminated():
    """docs/operations.md, ``match_ended``: an early end's line names its cause, the seat that
    resigned (resigning ends a two-player match for the opponent), the admin's reason for a
    termination and the seats that had left the match (GJ-12.4: a Georgian Joker seat that
    leaves is recorded `abandoned`), as the match's result has them."""
    async def go():
        with capture_logs() as logs:
            async with manager() as mgr:
                resigned, ps = await open_match(mgr, "klaberjass")
                await mgr.leave_match(resigned, ps[1], resign=True)
                terminated, ps = await open_match(mgr, "georgian_joker")
                await mgr.leave_match(terminated, ps[2], resign=False)
                await mgr.terminate_match(terminated, "cheating")
        return logs, resigned, terminated

    logs, resigned, terminated = run(go())
    ended = {e["match_id"]: e for e in logs if e["event"] == "match_ended"}
    assert ended[resigned]["outcome"] == "resigned" and ended[resigned]["resigned"] == 1
    assert ended[resigned]["winners"] == [0]
    assert ended[terminated]["outcome"] == "terminated" and ended[terminated]["reason"] == "cheating"
    assert ended[terminated]["abandoned"] == [2] and "abandoned" not in ended[resigned]


def test_domain_events_carry_their_fields_and_nothing_secret():
    async def go():
        with capture_logs() as logs:
            async with manager(config(time_scale=0.01)) as mgr:
                s = await mgr.create_match(CreateMatchRequest(game="japanese_joker"))
                tokens = [(await mgr.join_match(s.match_id, i, f"name{i}")).token for i in range(2)]
                ps = [mgr.authenticate(s.match_id, t) for t in tokens]
                streams = [Stream(mgr, s.match_id, p) for p in ps]
                m = mgr._matches[s.match_id]
                await until(lambda: any(a.by == "auto" for a in m.actions))  # one timeout
                # a drop and a return while the match is played (after its end a stream's
                # close is no presence change: the match has none left to follow)
                await streams[0].close()
                await until(lambda: not m.seats[0].present)
                streams[0] = Stream(mgr, s.match_id, ps[0])
                await until(lambda: m.seats[0].present)
                await play_random(mgr, s.match_id, ps, random.Random(2), timed=True)  # 0.3 s turns
                for st in streams:
                    await st.close()
                state = mgr.state_of(s.match_id)
                return (logs, tokens, s.match_id, [public_or_none(r, state) for r in state.deal_results()],
                        state.result())

    logs, tokens, match_id, results, final = run(go())
    by_event: dict[str, list[dict]] = {}
    for entry in logs:
        by_event.setdefault(entry["event"], []).append(entry)
    for event, fields in DOMAIN_FIELDS.items():
        assert event in by_event, f"no {event} logged"
        for entry in by_event[event]:
            missing = fields - set(entry)
            assert not missing, f"{event} lacks {missing}"
            assert entry["match_id"] == match_id and entry["game"] == "japanese_joker"
    assert len(by_event["action_applied"]) == by_event["match_ended"][0]["seq"]
    # one deal_scored line per deal, in order, with that deal's public result (JJK-7.1, JJK-7.2)
    assert [(e["deal"], e["result"]) for e in by_event["deal_scored"]] == list(enumerate(results))
    # a match played to its end: outcome ``completed``, the rules' winners and totals, which the
    # last deal_scored line gave already (each gives the running totals after its deal)
    (ended,) = by_event["match_ended"]
    assert (ended["outcome"], ended["winners"], ended["totals"]) == ("completed", final["winners"], final["totals"])
    assert by_event["deal_scored"][-1]["totals"] == final["totals"]
    assert {e["change"] for e in by_event["presence_changed"]} >= {"joined", "connected", "disconnected"}
    text = json.dumps(logs, default=str)
    for token in tokens:
        assert token not in text
    for forbidden in ('"hand"', '"hands"', '"deck"', '"decks"', '"view"', '"legal"', "name0"):
        assert forbidden not in text, forbidden


def test_metrics_after_a_known_scenario():
    metrics = Metrics()

    async def go():
        async with manager(store=MemoryStore(metrics), metrics=metrics) as mgr:
            s = await mgr.create_match(CreateMatchRequest(game="klaberjass"))
            g = {"game": "klaberjass"}
            snap = {"created": metrics.value("cardgames_matches_created_total", g),
                    "waiting": metrics.value("cardgames_matches_active", {**g, "status": "waiting"})}
            ps = [mgr.authenticate(s.match_id, (await mgr.join_match(s.match_id, i, "x")).token) for i in range(2)]
            snap["active"] = metrics.value("cardgames_matches_active", {**g, "status": "active"})
            snap["waiting_after"] = metrics.value("cardgames_matches_active", {**g, "status": "waiting"})
            watcher = Stream(mgr, s.match_id, Principal("spectator", s.match_id))
            await until(lambda: mgr._matches[s.match_id].watchers)
            snap["watchers"] = metrics.value("cardgames_watchers", {"audience": "spectator"})
            n = await play_random(mgr, s.match_id, ps, random.Random(4), max_actions=10)
            to_act = mgr.state_of(s.match_id).to_act()
            try:
                await mgr.submit_action(s.match_id, ps[to_act], "dance", None)
            except Exception:
                pass
            await mgr.terminate_match(s.match_id, "test")
            await until(lambda: watcher.task.done())
            snap["watchers_after"] = metrics.value("cardgames_watchers", {"audience": "spectator"})
            return n, snap

    started = time.perf_counter()
    n, snap = run(go())
    wall = time.perf_counter() - started
    g = {"game": "klaberjass"}
    assert snap == {"created": 1, "waiting": 1, "active": 1, "waiting_after": 0, "watchers": 1,
                    "watchers_after": 0}
    assert metrics.value("cardgames_matches_active", {**g, "status": "active"}) == 0
    assert metrics.value("cardgames_matches_finished_total", {**g, "outcome": "terminated"}) == 1
    assert metrics.value("cardgames_actions_total", {**g, "by": "player", "result": "accepted"}) == n == 10
    assert sum(s.value for f in metrics.registry.collect() if f.name == "cardgames_auto_moves"
               for s in f.samples if s.name == "cardgames_auto_moves_total") == 0  # players' moves only
    assert metrics.value("cardgames_actions_total", {**g, "by": "player", "result": "malformed_action"}) == 1
    assert metrics.value("cardgames_action_latency_seconds_count", g) == 10
    # each observation is the time the action took, within the run's own
    assert 0 < metrics.value("cardgames_action_latency_seconds_sum", g) < wall
    assert metrics.value("cardgames_events_published_total", {"kind": "action"}) == 10
    assert metrics.value("cardgames_events_published_total", {"kind": "match_ended"}) == 1
    assert metrics.value("cardgames_store_write_seconds_count", {"operation": "append_action"}) == 10
    assert 0 < metrics.value("cardgames_store_write_seconds_sum", {"operation": "append_action"}) < wall
    assert metrics.value("cardgames_store_write_seconds_count", {"operation": "create_match"}) == 1
    assert metrics.value("cardgames_presence_changes_total", {**g, "change": "joined"}) == 2


def test_each_watch_counts_under_its_audience():
    """docs/operations.md: ``cardgames_watchers{audience}`` counts the open WatchMatch streams
    by audience, ``seat``, ``spectator`` or ``admin`` (the operator's own streams apart from
    the public's)."""
    metrics = Metrics()

    async def go():
        async with manager(store=MemoryStore(metrics), metrics=metrics) as mgr:
            s = await mgr.create_match(CreateMatchRequest(game="klaberjass"))
            ps = [mgr.authenticate(s.match_id, (await mgr.join_match(s.match_id, i, "x")).token) for i in range(2)]
            streams = [Stream(mgr, s.match_id, p) for p in (ps[0], ps[1], Principal("spectator", s.match_id),
                                                             Principal("admin", s.match_id))]
            await until(lambda: len(mgr._matches[s.match_id].watchers) == 4)
            open_ = {a: metrics.value("cardgames_watchers", {"audience": a}) for a in ("seat", "spectator", "admin")}
            await mgr.terminate_match(s.match_id, "test")
            await until(lambda: all(w.task.done() for w in streams))
            closed = {a: metrics.value("cardgames_watchers", {"audience": a}) for a in ("seat", "spectator", "admin")}
            return open_, closed

    open_, closed = run(go())
    assert open_ == {"seat": 2, "spectator": 1, "admin": 1}
    assert closed == {"seat": 0, "spectator": 0, "admin": 0}


def test_metric_labels_never_hold_a_match_id():
    """docs/operations.md, Metrics: labels are bounded sets, "never a match id or player";
    nor a seat's token (hidden information) or the name its player gave, whatever the series."""
    metrics = Metrics()

    async def go():
        async with manager(metrics=metrics) as mgr:
            s = await mgr.create_match(CreateMatchRequest(game="jojotte"))
            joined = [await mgr.join_match(s.match_id, i, f"Player{i}Name") for i in range(2)]
            ps = [mgr.authenticate(s.match_id, j.token) for j in joined]
            await play_random(mgr, s.match_id, ps, random.Random(1), max_actions=5)
            return s.match_id, [j.token for j in joined]

    from engine_service.observability import metrics as M
    from engine_service.rules.registry import all_game_ids

    match_id, tokens = run(go())
    secrets = [match_id, *tokens, "Player0Name", "Player1Name"]
    closed = {"game": set(all_game_ids()), "status": M.ACTIVE_STATUSES, "outcome": M.OUTCOMES, "by": M.ACTORS,
              "audience": M.AUDIENCES, "kind": M.EVENT_KINDS, "change": M.PRESENCE_CHANGES,
              "policy": M.GRACE_POLICIES, "operation": M.STORE_OPERATIONS}
    for family in metrics.registry.collect():
        for sample in family.samples:
            assert not [s for s in secrets if s in json.dumps(sample.labels)], sample
            assert all(v in closed[k] for k, v in sample.labels.items() if k in closed), sample
            assert set(sample.labels) <= {"game", "status", "outcome", "by", "result", "audience", "kind",
                                          "change", "reason", "policy", "bot", "operation", "method", "code",
                                          "le"}


def test_rpc_metrics_for_the_transport_and_a_process_wide_instance():
    metrics = Metrics()
    metrics.rpc_requests.labels("/cardgames.v1.CardGamesService/GetView", "OK").inc()
    metrics.rpc_duration.labels("/cardgames.v1.CardGamesService/GetView").observe(0.002)
    metrics.rpc_stream_messages.labels("/cardgames.v1.CardGamesService/WatchMatch").inc(3)
    assert metrics.value("cardgames_rpc_requests_total",
                         {"method": "/cardgames.v1.CardGamesService/GetView", "code": "OK"}) == 1
    assert metrics.value("cardgames_rpc_duration_seconds_count",
                         {"method": "/cardgames.v1.CardGamesService/GetView"}) == 1
    assert Metrics().value("cardgames_rpc_requests_total",
                           {"method": "/cardgames.v1.CardGamesService/GetView", "code": "OK"}) == 0
    assert get_metrics() is get_metrics()
    names = {f.name for f in get_metrics().registry.collect()}
    assert "process_cpu_seconds" in names or "process_virtual_memory_bytes" in names


def test_a_memoized_child_is_the_series_of_its_own_metric():
    """``Metrics.child`` memoizes ``labels()`` per metric and label values: two metrics with
    the same label values (a game's created matches and its turn timeouts) are two series."""
    metrics = Metrics()
    created = metrics.child(metrics.matches_created, "klaberjass")
    assert metrics.child(metrics.matches_created, "klaberjass") is created
    metrics.child(metrics.turn_timeouts, "klaberjass").inc()
    created.inc(2)
    assert metrics.value("cardgames_matches_created_total", {"game": "klaberjass"}) == 2
    assert metrics.value("cardgames_turn_timeouts_total", {"game": "klaberjass"}) == 1


def test_a_memoized_child_is_looked_up_through_labels_once():
    """What ``Metrics.child`` is for (its docstring): the per-action and per-RPC paths do not
    pay prometheus_client's ``labels()`` (validation, conversion, a lock) on every call; a
    series is looked up through it once, then from the memo."""
    metrics = Metrics()
    real, calls = metrics.actions.labels, []
    metrics.actions.labels = lambda *labels: calls.append(labels) or real(*labels)
    for _ in range(3):
        metrics.child(metrics.actions, "klaberjass", "player", "accepted").inc()
    metrics.child(metrics.actions, "klaberjass", "bot", "accepted").inc()
    assert calls == [("klaberjass", "player", "accepted"), ("klaberjass", "bot", "accepted")]
    assert metrics.value("cardgames_actions_total", {"game": "klaberjass", "by": "player", "result": "accepted"}) == 3


def test_json_log_lines():
    with configured_logging("json", "info") as stream:
        structlog.get_logger("engine_service.sessions").bind(match_id="m1", game="klaberjass").info(
            "action_applied", seat=1, seq=3, action="pass", by="player")
        structlog.get_logger("engine_service.sessions").debug("hidden_below_level")
        logging.getLogger("grpc").warning("from the standard library")
        lines = [json.loads(line) for line in stream.getvalue().splitlines()]
    assert len(lines) == 2
    first = lines[0]
    assert {k: first[k] for k in ("event", "match_id", "game", "seat", "seq", "action", "by", "level", "logger")} == {
        "event": "action_applied", "match_id": "m1", "game": "klaberjass", "seat": 1, "seq": 3,
        "action": "pass", "by": "player", "level": "info", "logger": "engine_service.sessions"}
    assert first["timestamp"].endswith("Z")
    assert lines[1]["event"] == "from the standard library" and lines[1]["level"] == "warning"


def test_json_lines_are_json_dumps_of_the_event():
    """The JSON renderer reuses one encoder (engine_service.observability.logging._JsonDumps):
    each line is still exactly ``json.dumps(event_dict, default=...)``: key order, escapes,
    non-ASCII, numbers, and objects JSON cannot hold through structlog's fallback (repr)."""
    class Opaque:
        def __repr__(self) -> str:
            return "<opaque \u00e9>"

    fields = dict(seat=2, seq=10**20, ratio=0.1, flag=True, none=None, name="Zo\u00eb \"q\"\n\t",
                  nested={"b": [1, 2.5, "x"], "a": {}}, thing=Opaque(), items=("t", 1))
    with configured_logging("json", "info") as stream:
        structlog.get_logger("engine_service.sessions").info("action_applied", **fields)
        structlog.get_logger("engine_service.sessions").info("again", thing=Opaque())
        lines = stream.getvalue().splitlines()
    first = json.loads(lines[0])
    expected = {**fields, "event": "action_applied", "level": "info", "logger": "engine_service.sessions",
                "timestamp": first["timestamp"]}
    assert lines[0] == json.dumps(expected, default=repr)
    assert first["thing"] == "<opaque \u00e9>" and json.loads(lines[1])["thing"] == "<opaque \u00e9>"


def test_a_log_line_that_cannot_be_written_fails_nobody():
    """The service's lines go through structlog's native path (one JSON object per line, named
    logger); a closed stream drops the line instead of failing the RPC that logs it."""
    with configured_logging("json", "info") as stream:
        log = structlog.get_logger("cardgames.rpc")
        log.info("rpc", method="/m", code="OK")
        (line,) = [json.loads(x) for x in stream.getvalue().splitlines()]
        assert (line["event"], line["logger"], line["level"], line["code"]) == ("rpc", "cardgames.rpc", "info", "OK")
        stream.close()
        log.info("rpc", method="/m", code="OK")  # no exception


def test_json_lines_of_both_paths_carry_the_request_context_and_the_stack_asked_for():
    """The transport binds an RPC's fields (``rpc``, ``request_id``, ``match_id``...) to
    structlog's contextvars, not to each logger: every line written while the call is served,
    the service's own and the standard library's (grpc, asyncio), carries them; and a line
    logged with ``stack_info`` holds the caller's stack."""
    with configured_logging("json", "info") as stream:
        with structlog.contextvars.bound_contextvars(rpc="GetView", request_id="r-7", match_id="m1"):
            structlog.get_logger("cardgames.rpc").info("rpc", code="OK", stack_info=True)
            logging.getLogger("asyncio").warning("from the standard library")
        structlog.get_logger("cardgames.rpc").info("after")
        lines = [json.loads(line) for line in stream.getvalue().splitlines()]
    context = {"rpc": "GetView", "request_id": "r-7", "match_id": "m1"}
    assert [{k: line.get(k) for k in context} for line in lines] == [
        context, context, {"rpc": None, "request_id": None, "match_id": None}]
    # the stdlib record's own fields, nothing of the formatter's bookkeeping (_record...)
    assert set(lines[1]) == {"event", "level", "logger", "timestamp", *context}
    assert "test_json_lines_of_both_paths_carry_the_request_context" in lines[0]["stack"]
    assert "stack" not in lines[2]


def test_an_exception_logged_through_the_standard_library_is_data_without_locals():
    """A standard-library record with an exception (asyncio's "Task exception was never
    retrieved", grpc's own errors) goes through the same exception renderer as the service's
    lines: its traceback as data in ``exception``, the frames without their locals (a frame of
    a call holds its seat token)."""
    secret = "seat-token-that-must-never-be-logged-0123456789"
    with configured_logging("json", "info") as stream:
        try:
            _fail_with(secret)
        except RuntimeError:
            logging.getLogger("asyncio").exception("Task exception was never retrieved")
        (line,) = [json.loads(x) for x in stream.getvalue().splitlines()]
    (error,) = line["exception"]
    assert (error["exc_type"], error["exc_value"]) == ("RuntimeError", "the stored log does not replay")
    assert [frame["name"] for frame in error["frames"]][-1] == "_fail_with"
    assert all("locals" not in frame or not frame["locals"] for frame in error["frames"])
    assert secret not in stream.getvalue()


def test_a_logger_asked_for_without_a_name_is_named_after_its_module():
    """``structlog.get_logger()`` (or a name of None, as ``logging.getLogger(None)``) names its
    lines' ``logger`` after the calling module, as the standard library's factory does."""
    with configured_logging("json", "info") as stream:
        structlog.get_logger().info("unnamed")
        structlog.get_logger(None).info("none")
        lines = [json.loads(line) for line in stream.getvalue().splitlines()]
    assert [(line["event"], line["logger"]) for line in lines] == [("unnamed", __name__), ("none", __name__)]


def _free_for_another_thread(lock) -> bool:
    free = []

    def probe():
        if lock.acquire(blocking=False):
            lock.release()
            free.append(True)

    other = threading.Thread(target=probe)
    other.start()
    other.join(30)
    return bool(free)


def test_a_line_is_written_whole_and_flushed_under_the_lock_the_stdlib_handler_takes():
    """Lines of the service's own path and of the standard library's never interleave: each is
    written under the one lock per stream both share, and flushed at once, under it too (a line
    left in a buffer is late in ``docker logs`` and lost when the process is killed). A broken stream
    (EPIPE: the reader of a pipe went away) drops the line and fails nobody."""
    class Recording(io.StringIO):
        def __init__(self):
            super().__init__()
            self.taken_during_write: list[bool] = []
            self.taken_during_flush: list[bool] = []
            self.unflushed = 0

        def write(self, text):
            self.taken_during_write.append(not _free_for_another_thread(lock))
            self.unflushed += 1
            return super().write(text)

        def flush(self):
            if self.unflushed:
                self.taken_during_flush.append(not _free_for_another_thread(lock))
            self.unflushed = 0

    stream = Recording()
    with configured_logging("json", "info", stream):
        (handler,) = [h for h in logging.getLogger().handlers if getattr(h, "_cardgames", False)]
        lock = handler.lock
        structlog.get_logger("cardgames.rpc").info("rpc", code="OK")
        assert stream.unflushed == 0
        logging.getLogger("grpc").warning("from the standard library")
        assert stream.unflushed == 0
        lines = [json.loads(line)["event"] for line in stream.getvalue().splitlines()]

        def broken(text):
            raise BrokenPipeError(32, "Broken pipe")

        stream.write = broken
        structlog.get_logger("cardgames.rpc").info("rpc", code="OK")  # no exception
    assert lines == ["rpc", "from the standard library"]
    assert stream.taken_during_write == [True, True]
    assert stream.taken_during_flush == [True, True]


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def _fail_with(secret: str) -> None:
    token = secret  # noqa: F841  (a local a traceback must not show)
    raise RuntimeError("the stored log does not replay")


def _log_a_failure(secret: str) -> None:
    try:
        _fail_with(secret)
    except RuntimeError:
        structlog.get_logger("cardgames.rpc").exception("rpc_internal_error")


def test_the_format_and_level_are_checked_and_auto_means_console_on_a_terminal_only():
    """An unknown level or format is refused (serve's own flags check them first) before
    anything changes; a level in capitals is the level; ``auto`` writes colored console lines
    to a terminal and JSON to anything else (a file, a pipe, journald)."""
    root = logging.getLogger()
    handlers = list(root.handlers)
    with pytest.raises(ValueError, match="unknown log level 'verbose'; allowed: debug, info, warning, error, critical"):
        configure_logging("json", "verbose", io.StringIO())
    with pytest.raises(ValueError, match="unknown log format 'xml'; allowed: json, console, auto"):
        configure_logging("xml", "info", io.StringIO())
    with pytest.raises(ValueError, match="unknown log level 'notset'; allowed: debug, info, warning, error, critical$"):
        configure_logging("json", "notset", io.StringIO())  # the stdlib's level 0: not one of serve's
    assert root.handlers == handlers
    for stream, colored in ((_Terminal(), True), (io.StringIO(), False)):
        with configured_logging("auto", "WARNING", stream):
            structlog.get_logger("cardgames.server").warning("open_files_exhausted", port=9464)
            structlog.get_logger("cardgames.server").info("below_the_level")
        text = stream.getvalue()
        assert "below_the_level" not in text
        assert text.startswith("{") is not colored and ("\x1b[" in text) is colored, text
        assert "open_files_exhausted" in text and "9464" in text


def test_each_level_is_the_lowest_written_on_both_paths():
    """``--log-level`` (docs/operations.md: "lowest level logged") filters the service's own
    lines and the standard library's (grpc, asyncio) alike, and a line of each of the five
    levels, ``critical`` included, is written under its own ``level``."""
    for lowest in LEVELS:
        with configured_logging("json", lowest) as stream:
            for level in LEVELS:
                getattr(structlog.get_logger("cardgames.server"), level)("native", said=level)
                getattr(logging.getLogger("grpc"), level)("stdlib %s", level)
            lines = [json.loads(line) for line in stream.getvalue().splitlines()]
        kept = list(LEVELS[LEVELS.index(lowest):])
        assert [(line["level"], line["said"]) for line in lines if line["event"] == "native"] == \
            [(level, level) for level in kept], lowest
        assert [(line["level"], line["event"]) for line in lines if line["logger"] == "grpc"] == \
            [(level, f"stdlib {level}") for level in kept], lowest


def test_without_arguments_the_format_is_auto_the_level_info_and_the_stream_stderr(monkeypatch):
    """``configure_logging()`` alone is what ``serve`` does by default (``--log-format auto``,
    ``--log-level info``, stderr): on a terminal, console lines from ``info`` up."""
    terminal = _Terminal()
    with configured_logging("json", "info"):
        monkeypatch.setattr(sys, "stderr", terminal)
        assert configure_logging() == "console"
        structlog.get_logger("cardgames.server").debug("below_the_level")
        structlog.get_logger("cardgames.server").info("listening", port=50051)
    text = terminal.getvalue()
    assert "listening" in text and "50051" in text and "below_the_level" not in text
    assert not text.startswith("{") and "\x1b[" in text


def test_the_console_format_colors_tracebacks_on_a_terminal_only_and_never_shows_locals(monkeypatch):
    """A traceback on the console format is rich's, in colors only when the lines are (to a
    file, console lines with escape codes in their tracebacks alone were unreadable), and
    without the frames' locals; without rich installed, the plain one (no locals either)."""
    secret = "seat-token-that-must-never-be-logged-0123456789"
    texts = {}
    for name, stream in (("terminal", _Terminal()), ("file", io.StringIO())):
        with configured_logging("console", "info", stream):
            _log_a_failure(secret)
        texts[name] = stream.getvalue()
    monkeypatch.setitem(sys.modules, "rich", None)  # import rich: ImportError
    with configured_logging("console", "info") as stream:
        _log_a_failure(secret)
    texts["no rich"] = stream.getvalue()
    for name, text in texts.items():
        assert "the stored log does not replay" in text and "_fail_with" in text, name
        assert secret not in text, name
        assert ("\x1b[" in text) is (name == "terminal"), name
        traceback = text.split("\n", 1)[1]  # the lines after the event's own
        assert ("\x1b[" in traceback) is (name == "terminal"), name
        assert ("Traceback (most recent call last):" in text) is (name == "no rich"), name


def test_a_rich_that_fails_to_import_leaves_the_console_format_its_plain_tracebacks(monkeypatch):
    """Rich is used "when installed" (engine_service.observability.logging._console_tracebacks);
    one that is there but cannot be imported (a broken install, a dependency of the wrong
    version: ImportError, not ModuleNotFoundError) is as if it were not: the plain traceback,
    without locals, and the service starts all the same."""
    import builtins

    real_import = builtins.__import__

    def broken_rich(name, *args, **kwargs):
        if name == "rich" or name.startswith("rich."):
            raise ImportError("cannot import name 'Segment' from partially initialized module 'rich'")
        return real_import(name, *args, **kwargs)

    secret = "seat-token-that-must-never-be-logged-0123456789"
    with configured_logging("json", "info"):
        monkeypatch.setattr(builtins, "__import__", broken_rich)
        stream = io.StringIO()
        assert configure_logging("console", "info", stream) == "console"
        monkeypatch.setattr(builtins, "__import__", real_import)
        _log_a_failure(secret)
    text = stream.getvalue()
    assert "Traceback (most recent call last):" in text and "the stored log does not replay" in text
    assert secret not in text


def test_a_standard_library_exception_on_the_console_format_is_rendered_as_the_services():
    """A standard-library record with an exception (asyncio's "Task exception was never
    retrieved") on the console format gets the service's own traceback: rich's, in colors only
    on a terminal, never the frames' locals (a frame of a call holds its seat token)."""
    secret = "seat-token-that-must-never-be-logged-0123456789"
    for stream, colored in ((_Terminal(), True), (io.StringIO(), False)):
        with configured_logging("console", "info", stream):
            try:
                _fail_with(secret)
            except RuntimeError:
                logging.getLogger("asyncio").exception("Task exception was never retrieved")
        text = stream.getvalue()
        assert "Task exception was never retrieved" in text and "_fail_with" in text, text
        assert "the stored log does not replay" in text and secret not in text, text
        traceback = text.split("\n", 1)[1]
        assert ("\x1b[" in traceback) is colored, text
        assert "Traceback (most recent call last):" not in text, text  # rich's, not the plain one


def test_auto_is_json_on_a_stream_that_cannot_say_it_is_a_terminal():
    """``fmt="auto"`` picks ``console`` when the stream is a terminal, ``json`` otherwise
    (configure_logging): a stream without ``isatty`` (a bare writer object) is no terminal."""
    class Writer:
        def __init__(self):
            self.text = ""

        def write(self, text):
            self.text += text

        def flush(self):
            pass

    with configured_logging("auto", "info", Writer()) as stream:
        structlog.get_logger("cardgames.rpc").info("rpc", code="OK")
    assert json.loads(stream.text)["event"] == "rpc"


def test_a_second_configuration_with_the_same_arguments_changes_nothing(monkeypatch):
    """``configure_logging`` once per process: called again with the same arguments it keeps
    its handler; with others (or ``force``) it replaces it, never adding a second one (each line
    written twice) nor removing another's; without a stream it writes to stderr."""
    def ours():
        return [h for h in logging.getLogger().handlers if getattr(h, "_cardgames", False)]

    with configured_logging("json", "info") as stream:
        (first,) = ours()
        foreign = logging.NullHandler()  # another library's or the test runner's
        logging.getLogger().addHandler(foreign)
        assert configure_logging("json", "info", stream) == "json"
        assert ours() == [first]
        configure_logging("json", "debug", stream)
        (second,) = ours()
        configure_logging("json", "debug", stream, force=True)
        (third,) = ours()
        assert foreign in logging.getLogger().handlers
        structlog.get_logger("cardgames.rpc").debug("rpc", code="OK")
        logging.getLogger("grpc").debug("from the standard library")
        err = io.StringIO()
        monkeypatch.setattr(sys, "stderr", err)
        configure_logging("json", "debug")  # another stream
        structlog.get_logger("cardgames.rpc").info("to_stderr")
        configure_logging("console", "debug")  # another format
        structlog.get_logger("cardgames.rpc").info("in_console_format")
    assert len({id(first), id(second), id(third)}) == 3
    assert [json.loads(line)["event"] for line in stream.getvalue().splitlines()] == [
        "rpc", "from the standard library"]
    first_line, second_line = err.getvalue().splitlines()
    assert json.loads(first_line)["event"] == "to_stderr"
    assert "in_console_format" in second_line and not second_line.startswith("{")


def test_a_database_path_that_cannot_be_read_reads_nan_and_the_scrape_still_works(tmp_path):
    """The SQLite database's size and its volume's space are read at each scrape: a path that
    cannot be read (under a regular file: NotADirectoryError, not FileNotFoundError; a
    permission error alike; a directory gone: its volume too) reads NaN, not 0 (a free space
    of 0 fires the volume alerts) and not an exception (which failed the whole scrape, every
    other metric with it). A database file missing from a directory that is there (deleted,
    moved away) reads NaN, its volume is still measured: the directory's, which the
    CardgamesStoreVolume* alerts watch."""
    import math
    import os

    from prometheus_client import generate_latest

    (tmp_path / "not-a-directory").write_text("")
    database = ("cardgames_store_database_bytes",)
    volume = ("cardgames_store_volume_free_bytes", "cardgames_store_volume_size_bytes")
    size = os.statvfs(tmp_path).f_blocks * os.statvfs(tmp_path).f_frsize
    for where, nan in (("not-a-directory", database), ("not-a-directory/below", database + volume),
                       ("gone", database + volume), (".", database)):
        metrics = Metrics()
        metrics.watch_database_file(str(tmp_path / where / "db.sqlite3"))
        text = generate_latest(metrics.registry).decode()
        for name in nan:
            assert f"{name} NaN" in text, (where, name)
        assert "cardgames_matches_pruned_total 0.0" in text
        if where == ".":
            measured = [metrics.value(name) for name in volume]
            assert not any(math.isnan(v) for v in measured), measured
            assert 0 < measured[0] <= measured[1] == size, measured


def test_the_volume_is_measured_in_fragments_of_f_frsize(monkeypatch, tmp_path):
    """docs/operations.md: ``cardgames_store_volume_free_bytes`` is ``statvfs`` ``f_bavail``,
    and both volume gauges count blocks of ``f_frsize`` bytes (POSIX: f_bavail and f_blocks
    are in those units), not of ``f_bsize``, the preferred I/O size, which is larger on
    some filesystems (the gauges then over-stated the space)."""
    import os

    class Vfs:
        f_bsize, f_frsize, f_bavail, f_bfree, f_blocks = 65536, 1024, 10, 12, 100

    monkeypatch.setattr(os, "statvfs", lambda path: Vfs())
    metrics = Metrics()
    metrics.watch_database_file(str(tmp_path / "db.sqlite3"))
    assert (metrics.value("cardgames_store_volume_free_bytes"),
            metrics.value("cardgames_store_volume_size_bytes")) == (10 * 1024, 100 * 1024)


def test_every_store_operation_that_counts_its_errors_is_declared():
    """The stores count failures under their operation's name (``_read``, ``_write``,
    ``write``, ``_timer.error``); ``count_finished`` and ``prune_finished`` were counted but not
    declared, so their series did not exist at 0 (see the test below)."""
    import re
    from pathlib import Path

    from engine_service import store
    from engine_service.observability import metrics as M

    pattern = re.compile(r'(?:\._read|\._write|\.write|_timer\.error)\("([a-z_]+)"')
    counted = {name for path in Path(store.__file__).parent.glob("*.py")
               for name in pattern.findall(path.read_text())}
    assert {"append_action", "count_finished", "prune_finished"} <= counted
    assert counted <= set(M.STORE_OPERATIONS), counted - set(M.STORE_OPERATIONS)


def test_every_timed_store_write_and_every_published_event_kind_is_declared():
    """As for the store's errors above: the write-latency histogram's series exist at 0 for
    every write a store times (``_timer.write``; ``_write`` unless ``timed=False``, retention's
    prune), so that the dashboard's latency panels show a quiet store; and ``events_published``
    for every kind the session layer publishes (``publish(m, "presence", ...)``)."""
    import re
    from pathlib import Path

    from engine_service import sessions, store
    from engine_service.observability import metrics as M

    timed = set()
    for path in Path(store.__file__).parent.glob("*.py"):
        text = path.read_text()
        timed |= set(re.findall(r'_timer\.write\("([a-z_]+)"\)', text))
        timed |= {name for name, rest in re.findall(r'\._write\("([a-z_]+)",([^\n]*)', text)
                  if "timed=False" not in rest}
    assert {"append_action", "touch_absences", "create_match"} <= timed
    assert timed == set(M.STORE_WRITE_OPERATIONS), timed ^ set(M.STORE_WRITE_OPERATIONS)
    source = "\n".join(p.read_text() for p in Path(sessions.__file__).parent.glob("*.py"))
    kinds = set(re.findall(r'\.publish\(m, "([a-z_]+)"', source))
    kinds |= set(re.findall(r'events_published(?:\.labels\(|, )"([a-z_]+)"', source))
    assert kinds == set(M.EVENT_KINDS) == {"action", "presence", "match_ended"}, kinds


def test_the_closed_label_sets_exist_at_0_once_the_manager_has_started():
    """A labelled counter used to appear only at its first increment, so Prometheus first saw
    it at 1 or 2 and ``increase()`` (CardgamesStoreErrors, CardgamesBotWorkerCrashed) never
    fired on the first failure. Every store operation, every installed game and bot, with
    their closed label sets, now has its series at 0 from the start."""
    from engine_service.observability import metrics as M
    from engine_service.rules import all_game_ids

    from .test_bots import CatalogHost

    metrics = Metrics()
    assert metrics.registry.get_sample_value("cardgames_store_errors_total", {"operation": "append_action"}) == 0
    host = CatalogHost({"random": tuple(all_game_ids()), "duel": ("klaberjass",)})

    async def go():
        async with manager(host=host, metrics=metrics):
            pass
    run(go())

    def zero(name, **labels):
        return metrics.registry.get_sample_value(name, labels) == 0.0

    for operation in M.STORE_OPERATIONS:
        assert zero("cardgames_store_errors_total", operation=operation), operation
    # the write-latency histogram too: the dashboard showed "No data" until the first write
    for operation in M.STORE_WRITE_OPERATIONS:
        assert zero("cardgames_store_write_seconds_count", operation=operation), operation
    for bot in ("random", "duel"):
        for reason in M.BOT_FAILURE_REASONS:
            assert zero("cardgames_bot_failures_total", bot=bot, reason=reason), (bot, reason)
        for reason in M.WORKER_RESTART_REASONS:
            assert zero("cardgames_bot_worker_restarts_total", bot=bot, reason=reason), (bot, reason)
        assert zero("cardgames_bot_decision_seconds_count", bot=bot)
    for game in all_game_ids():
        assert zero("cardgames_matches_created_total", game=game)
        assert zero("cardgames_matches_resumed_total", game=game)
        assert zero("cardgames_turn_timeouts_total", game=game)
        for status in M.ACTIVE_STATUSES:
            assert zero("cardgames_matches_active", game=game, status=status)
        for result in ("duplicate", "stale"):  # a player's only
            assert zero("cardgames_actions_total", game=game, by="player", result=result)
        for outcome in M.OUTCOMES:
            assert zero("cardgames_matches_finished_total", game=game, outcome=outcome)
        for change in M.PRESENCE_CHANGES:
            assert zero("cardgames_presence_changes_total", game=game, change=change)
        for reason in M.AUTO_MOVE_REASONS:
            assert zero("cardgames_auto_moves_total", game=game, reason=reason)
        for policy in M.GRACE_POLICIES:
            assert zero("cardgames_grace_expired_total", game=game, policy=policy)
        for by in M.ACTORS:
            assert zero("cardgames_actions_total", game=game, by=by, result="accepted")
    for audience in M.AUDIENCES:
        assert zero("cardgames_watchers", audience=audience)
    for kind in M.EVENT_KINDS:
        assert zero("cardgames_events_published_total", kind=kind), kind


def test_a_session_task_that_fails_is_logged_and_every_task_is_forgotten_when_it_ends():
    """A background task of the sessions (MatchManager._spawn: a bot move, a timeout) that
    raises is logged ``session_task_failed`` with its name and error; one that is cancelled
    (disarmed) or returns logs nothing; each leaves the manager's task set when it ends, and
    one still pending is cancelled by the drain (close())."""
    async def go():
        async with manager() as mgr:
            async def fails():
                raise RuntimeError("a bug in a timer")

            with capture_logs() as logs:
                failing = mgr._spawn(fails(), "timer-x")
                fine = mgr._spawn(asyncio.sleep(0), "timer-y")
                cancelled = mgr._spawn(asyncio.sleep(60), "timer-z")
                await asyncio.sleep(0)
                cancelled.cancel()
                await asyncio.wait([failing, fine, cancelled])
                await asyncio.sleep(0)  # the done callbacks have run
                left = {failing, fine, cancelled} & mgr._tasks
                pending = mgr._spawn(asyncio.sleep(60), "timer-w")
        return logs, left, pending.cancelled()  # by close(), before the loop's own shutdown

    logs, left, pending_cancelled = run(go())
    failed = [(e["log_level"], e["task"], e["error"], e["error_type"]) for e in logs
              if e["event"] == "session_task_failed"]
    assert failed == [("error", "timer-x", "a bug in a timer", "RuntimeError")]
    assert left == set()
    assert pending_cancelled


def test_a_finished_match_read_back_from_the_store_is_not_counted_active():
    """``matches_active`` counts unfinished matches: a finished one read back after its
    eviction (GetMatch of an old match) is held again but not counted under any status."""
    metrics = Metrics()

    async def go():
        async with manager(metrics=metrics) as mgr:
            s = await mgr.create_match(CreateMatchRequest(game="klaberjass"))
            await mgr.terminate_match(s.match_id, "test")
            assert mgr.evict_finished() == 1
            read_back = await mgr.get_match(s.match_id)
            return read_back.status, s.match_id in mgr.match_ids()

    assert run(go()) == ("terminated", True)
    assert {status: metrics.value("cardgames_matches_active", {"game": "klaberjass", "status": status})
            for status in ("waiting", "active", "terminated")} == {"waiting": 0, "active": 0, "terminated": 0}


def test_a_write_whose_caller_went_away_logs_a_failure_and_no_normal_answer():
    """A write runs to its end when its caller goes away (manager._uninterrupted); what it
    ends with is then nobody's to read. A failure (a bug, here a RuntimeError) is logged
    ``session_write_failed`` with its error and type (docs/operations.md, the error events);
    a session or a rules error is a normal answer (UNAVAILABLE, ILLEGAL_ACTION) and logs
    nothing, or every client that gave up on an illegal move would raise an error line."""
    from engine_service.rules.errors import IllegalAction
    from engine_service.sessions.api import Unavailable
    from engine_service.sessions.manager import _uninterrupted

    async def go():
        writes: set[asyncio.Task] = set()
        with capture_logs() as logs:
            for error in (Unavailable("try again", reason="STORE_UNAVAILABLE"),
                          IllegalAction("not a legal action"), RuntimeError("a bug in the write")):
                gate = asyncio.Event()

                async def write(gate=gate, error=error):
                    await gate.wait()
                    raise error

                caller = asyncio.ensure_future(_uninterrupted(write(), "write-m", writes))
                await until(lambda: writes)  # the write runs
                caller.cancel()  # the client went away
                with pytest.raises(asyncio.CancelledError):
                    await caller
                gate.set()
                await until(lambda: not writes)  # the write ended, its outcome consumed
        return logs

    logs = run(go())
    assert [(e["event"], e["log_level"], e["error"], e["error_type"]) for e in logs] == [
        ("session_write_failed", "error", "a bug in the write", "RuntimeError")]
