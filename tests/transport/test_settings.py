"""Settings: flag > CARDGAMES_* environment > embedded default; bad values name their source."""

from __future__ import annotations

import argparse

import pytest

from engine_service import settings as S
from engine_service.sessions.config import SessionConfig


def _parse(argv: list[str], env: dict[str, str]) -> S.Settings:
    parser = argparse.ArgumentParser()
    S.add_arguments(parser, env)
    return S.from_namespace(parser.parse_args(argv))


def test_embedded_defaults():
    s = _parse([], {})
    assert (s.port, s.metrics_port, s.session.db_path, s.log_format, s.admin_token) == \
        (50051, 9464, "./cardgames.sqlite3", "auto", None)
    defaults = SessionConfig()
    assert s.session.reconnect_grace_s == defaults.reconnect_grace_s
    assert s.session.max_matches == defaults.max_matches


def test_environment_then_flags():
    env = {"CARDGAMES_PORT": "6000", "CARDGAMES_DB": "/tmp/x.db", "CARDGAMES_LOG_LEVEL": "DEBUG",
           "CARDGAMES_RECONNECT_GRACE_S": "5", "CARDGAMES_ADMIN_TOKEN": "tok"}
    s = _parse([], env)
    assert (s.port, s.session.db_path, s.log_level, s.session.reconnect_grace_s, s.admin_token) == \
        (6000, "/tmp/x.db", "debug", 5.0, "tok")
    s = _parse(["--port", "7000", "--reconnect-grace-s", "9", "--log-format", "console"], env)
    assert (s.port, s.session.reconnect_grace_s, s.log_format) == (7000, 9.0, "console")
    assert "tok" not in repr(s), "the admin token is never printed"


def test_every_setting_has_a_flag_and_an_environment_name():
    names = {s.env for s in S.SETTINGS}
    assert len(names) == len(S.SETTINGS)
    assert all(n.startswith("CARDGAMES_") for n in names)
    settable = {s.name for s in S.SETTINGS if not s.session_field}
    assert settable == {f for f in S.Settings.__dataclass_fields__ if f != "session"}


def test_bad_values_are_errors():
    with pytest.raises(SystemExit, match="CARDGAMES_PORT"):
        _parse([], {"CARDGAMES_PORT": "99999"})
    with pytest.raises(SystemExit):
        _parse(["--log-format", "xml"], {})
    with pytest.raises(ValueError, match="tls"):
        _parse(["--tls-cert", "c.pem"], {})
    with pytest.raises(ValueError):
        _parse(["--max-matches", "0"], {})  # SessionConfig refuses it


def test_bot_pace_defaults_to_the_bot_deadline_and_is_never_negative():
    """GJ-11.8: by default a bot move is played no earlier than the bot deadline, so that no
    move's timing shows it was forced; 0 turns the pacing off; a negative pace is refused."""
    s = _parse([], {})
    assert s.session.bot_pace_s == s.session.bot_deadline_s == 2.0
    assert _parse([], {"CARDGAMES_BOT_PACE_S": "0"}).session.bot_pace_s == 0.0
    assert _parse(["--bot-pace-s", "5"], {"CARDGAMES_BOT_PACE_S": "0"}).session.bot_pace_s == 5.0
    with pytest.raises(SystemExit, match="CARDGAMES_BOT_PACE_S"):
        _parse([], {"CARDGAMES_BOT_PACE_S": "-1"})


def test_event_loop_choice():
    """--event-loop: uvloop by default where installed (a dependency off Windows), asyncio on
    request; an unknown loop is an error naming the variable."""
    import asyncio

    from engine_service.serve_cli import event_loop_factory

    assert _parse([], {}).event_loop == "auto"
    assert _parse([], {"CARDGAMES_EVENT_LOOP": "asyncio"}).event_loop == "asyncio"
    assert _parse(["--event-loop", "uvloop"], {"CARDGAMES_EVENT_LOOP": "asyncio"}).event_loop == "uvloop"
    with pytest.raises(SystemExit, match="CARDGAMES_EVENT_LOOP"):
        _parse([], {"CARDGAMES_EVENT_LOOP": "trio"})
    assert event_loop_factory("asyncio") == (None, "asyncio")
    for choice in ("auto", "uvloop"):
        factory, name = event_loop_factory(choice)
        assert name == "uvloop"
        with asyncio.Runner(loop_factory=factory) as runner:
            assert runner.run(asyncio.sleep(0, "ran")) == "ran"
            assert type(runner.get_loop()).__module__.startswith("uvloop")


def test_serving_tunes_the_garbage_collector():
    """What start-up built is frozen out of the collector's view and collections wait for
    10,000 net allocations (bench/README.md: full collections cost ~15 % of the CPU)."""
    import gc

    from engine_service.serve_cli import GC_THRESHOLDS, tune_gc

    saved = gc.get_threshold()
    try:
        tune_gc()
        assert gc.get_threshold() == GC_THRESHOLDS
        assert gc.get_freeze_count() > 0
        cycle: list = []
        cycle.append(cycle)
        del cycle
        assert gc.collect() >= 1  # cycles are still collected
    finally:
        gc.unfreeze()
        gc.set_threshold(*saved)
