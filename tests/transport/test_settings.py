"""Settings: flag > CARDGAMES_* environment > embedded default; every setting has a range; bad
values name their source and why, and stop only ``serve`` (exit 2)."""

from __future__ import annotations

import argparse
import dataclasses
import math
import os
import re
import subprocess
from pathlib import Path

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
    s = _parse(["--db", "postgresql://cards:s3cretpw@db.example/cards"], env)
    assert s.session.db_path.endswith("@db.example/cards")
    assert "s3cretpw" not in repr(s) and "s3cretpw" not in repr(s.session), "nor the database's password"


def test_the_handshake_timeout_from_the_environment_or_a_flag():
    assert _parse([], {}).handshake_timeout_s == 20.0
    assert _parse([], {"CARDGAMES_HANDSHAKE_TIMEOUT_S": "5"}).handshake_timeout_s == 5.0
    assert _parse(["--handshake-timeout-s", "2.5"], {"CARDGAMES_HANDSHAKE_TIMEOUT_S": "5"}).handshake_timeout_s == 2.5


def test_the_max_connection_idle_from_the_environment_or_a_flag():
    assert _parse([], {}).max_connection_idle_s == 0.0  # off, as in gRPC
    assert _parse([], {"CARDGAMES_MAX_CONNECTION_IDLE_S": "300"}).max_connection_idle_s == 300.0
    assert _parse(["--max-connection-idle-s", "1.5"],
                  {"CARDGAMES_MAX_CONNECTION_IDLE_S": "300"}).max_connection_idle_s == 1.5
    assert _parse(["--max-connection-idle-s", "0"],
                  {"CARDGAMES_MAX_CONNECTION_IDLE_S": "300"}).max_connection_idle_s == 0.0
    assert S.BY_FIELD["max_connection_idle_s"].allowed == "0 (off), or 1 to 86400 seconds"
    with pytest.raises(ValueError) as refused:  # the reason names 0 too, not only the range
        _parse([], {"CARDGAMES_MAX_CONNECTION_IDLE_S": "0.5"})
    assert str(refused.value).endswith(": must be 0 (off), or 1 to 86400 seconds, not '0.5'")


def test_every_setting_has_a_flag_and_an_environment_name():
    names = {s.env for s in S.SETTINGS}
    assert len(names) == len(S.SETTINGS)
    assert all(n.startswith("CARDGAMES_") for n in names)
    settable = {s.name for s in S.SETTINGS if not s.session_field}
    assert settable == {f for f in S.Settings.__dataclass_fields__ if f != "session"}


#: For the settings that are not a number: a value other than the default.
OTHER_VALUES = {"host": "127.0.0.1", "metrics_host": "127.0.0.1", "log_format": "json", "log_level": "debug",
                "event_loop": "asyncio", "admin_token": "0123456789abcdef0123456789abcdef",
                "trusted_proxies": "10.0.0.0/8", "db": "memory:", "takeover_bot": "heuristic"}


@pytest.mark.parametrize("setting", [s for s in S.SETTINGS if s.name not in ("tls_cert", "tls_key")],
                         ids=lambda s: s.name)
def test_each_flag_and_variable_sets_the_field_it_names_and_no_other(setting):
    """docs/operations.md's table: ``--snapshot-threshold`` / ``CARDGAMES_SNAPSHOT_THRESHOLD``
    sets the snapshot threshold, ``--db`` the database (db_path), and nothing else; a row read
    into another field of the same range and default (--snapshot-threshold into
    max_bot_matches, --db-lock-wait-s into the default turn time, --trusted-proxies dropped)
    passed every other test. A number setting is given the top of its range. (The TLS pair:
    test_the_tls_certificate_and_key_must_belong_together.)"""
    text = OTHER_VALUES.get(setting.name) or re.findall(rf"(?:to|at most) {_NUMBER}", setting.allowed)[-1]
    field = "db_path" if setting.name == "db" else setting.name  # by its name, not by the table's row
    defaults = S.Settings()
    value = setting.parse(text)
    assert value != setting.default(defaults), setting.name
    if field in S.Settings.__dataclass_fields__:
        expected = dataclasses.replace(defaults, **{field: value})
    else:
        expected = dataclasses.replace(defaults, session=dataclasses.replace(defaults.session, **{field: value}))
    assert _parse([f"{setting.flag}={text}"], {}) == expected
    assert _parse([], {f"CARDGAMES_{setting.name.upper()}": text}) == expected


def test_bad_values_are_errors():
    with pytest.raises(ValueError, match="CARDGAMES_PORT"):
        _parse([], {"CARDGAMES_PORT": "99999"})
    with pytest.raises(SystemExit):
        _parse(["--log-format", "xml"], {})
    with pytest.raises(ValueError, match="tls"):
        _parse(["--tls-cert", "c.pem"], {})
    with pytest.raises(SystemExit):
        _parse(["--max-matches", "0"], {})


def _flag_error(capsys, argv: list[str]) -> str:
    with pytest.raises(SystemExit) as exited:
        _parse(argv, {})
    assert exited.value.code == 2
    return capsys.readouterr().err.strip().splitlines()[-1]


def test_a_bad_flag_says_why(capsys):
    """argparse used to hide the reason ("invalid float value: '-1'", "invalid _port value");
    a flag now gets the same reason as its environment variable."""
    assert _flag_error(capsys, ["--drain-grace-s", "-1"]).endswith(
        "error: argument --drain-grace-s: must be 0 to 3600 seconds, not '-1'")
    assert _flag_error(capsys, ["--port", "70000"]).endswith(
        "error: argument --port: must be 0 to 65535, not '70000'")
    assert _flag_error(capsys, ["--port", "http"]).endswith("error: argument --port: not a whole number: 'http'")
    assert _flag_error(capsys, ["--log-format", "xml"]).endswith(
        "error: argument --log-format: must be one of auto, json, console, not 'xml'")
    assert _flag_error(capsys, ["--default-turn-time-s", "5"]).endswith(
        "error: argument --default-turn-time-s: must be 0 (none) or 10 to 120 seconds, not '5'")
    with pytest.raises(ValueError) as env_error:
        _parse([], {"CARDGAMES_DRAIN_GRACE_S": "-1"})
    assert str(env_error.value) == ("environment variable CARDGAMES_DRAIN_GRACE_S (--drain-grace-s): "
                                    "must be 0 to 3600 seconds, not '-1'")


@pytest.mark.parametrize("setting", [s for s in S.SETTINGS if s.parse.__name__ in ("int", "float", "_turn_time")],
                         ids=lambda s: s.name)
def test_every_number_setting_says_a_word_is_not_a_number(setting):
    """``CARDGAMES_PORT=http`` (the module docstring's example) gets the same plain reason
    for every number setting, the turn time's included, not Python's "could not convert
    string to float: 'http'"."""
    whole = "whole " if setting.parse.__name__ == "int" else ""
    with pytest.raises(ValueError) as refused:
        _parse([], {setting.env: "http"})
    assert str(refused.value) == f"environment variable {setting.env} ({setting.flag}): not a {whole}number: 'http'"


#: Values refused for every setting of a kind: not finite, or beyond the setting's range.
NOT_FINITE = ("nan", "inf", "-inf", "NaN", "1e999")


@pytest.mark.parametrize("setting", [s for s in S.SETTINGS if s.parse.__name__ == "float"], ids=lambda s: s.name)
def test_every_number_setting_refuses_nan_and_infinity(setting, capsys):
    """``--drain-grace-s nan`` crashed the shutdown, ``--default-turn-time-s nan`` /
    ``--reconnect-grace-s nan`` made every CreateMatch INTERNAL, ``--keepalive-time-s inf``
    crashed the start with a traceback (exit 1)."""
    for bad in NOT_FINITE:
        with pytest.raises(ValueError, match=f"environment variable {setting.env} \\({setting.flag}\\): must be"):
            _parse([], {setting.env: bad})
        assert f"argument {setting.flag}: must be" in _flag_error(capsys, [f"{setting.flag}={bad}"])


@pytest.mark.parametrize("setting", S.SETTINGS, ids=lambda s: s.name)
def test_every_setting_has_a_range_that_holds_its_default(setting):
    """Every setting says what it accepts (--help, docs/operations.md), and its embedded
    default is within it."""
    assert setting.allowed, setting.name
    default = setting.default(S.Settings())
    if default is not None:  # a list (--trusted-proxies) is written comma-separated
        text = ",".join(map(str, default)) if isinstance(default, tuple) else str(default)
        assert setting.parse(text) == default


_NUMBER = r"(-?\d+(?:\.\d+)?)"


@pytest.mark.parametrize("setting", [s for s in S.SETTINGS if s.parse.__name__ in ("int", "float", "_turn_time")],
                         ids=lambda s: s.name)
def test_the_bounds_a_setting_names_are_taken_and_the_values_past_them_refused(setting):
    """The range in --help and docs/operations.md ("0 to 65535", "more than 0 and at most
    3600") is the one enforced, its ends included: --port 65535 or --drain-grace-s 3600 is
    taken, --port 65536 refused."""
    step = 1 if setting.parse.__name__ == "int" else 1e-6
    bounds = re.findall(f"{_NUMBER} to {_NUMBER}", setting.allowed)
    bounds += [(None, hi) for hi in re.findall(f"at most {_NUMBER}", setting.allowed)]
    assert bounds, setting.allowed
    for lo, hi in bounds:
        for inside in (lo, hi):
            if inside is not None:
                assert setting.parse(inside) == float(inside), (setting.name, inside)
        for outside in ([float(lo) - step] if lo is not None else []) + [float(hi) + step]:
            text = str(int(outside)) if step == 1 else repr(outside)
            with pytest.raises(ValueError, match="must be"):
                setting.parse(text)
    if setting.allowed.startswith("0,") or setting.allowed.startswith("0 ("):  # 0: none, off
        assert setting.parse("0") == 0
    for above in re.findall(f"more than {_NUMBER}", setting.allowed):
        with pytest.raises(ValueError, match="must be"):
            setting.parse(above)
        assert setting.parse(repr(float(above) + step)) == float(above) + step


def test_settings_are_a_value_object():
    """The server and the session layer share one Settings: none of them can change it."""
    import dataclasses

    with pytest.raises(dataclasses.FrozenInstanceError):
        _parse([], {}).port = 1
    with pytest.raises(dataclasses.FrozenInstanceError):  # nor the table's rows
        S.SETTINGS[0].parse = str


def test_settings_from_a_namespace_of_another_parser_read_the_process_environment(monkeypatch):
    """from_namespace without an environment, given flags not parsed by add_arguments'
    parser (a flag left out is the environment's, then the default), reads os.environ."""
    monkeypatch.setenv("CARDGAMES_PORT", "6000")
    assert S.from_namespace(argparse.Namespace(log_level="debug")).port == 6000
    assert S.from_namespace(argparse.Namespace(log_level="debug")).log_level == "debug"
    # such a flag was not checked by its parser: SessionConfig's own checks refuse it, the
    # message naming the flag and the variable as a flag's own check does
    with pytest.raises(ValueError) as refused:
        S.from_namespace(argparse.Namespace(time_scale=0.0, max_matches=0), {})
    assert str(refused.value) == ("invalid session settings: --time-scale / CARDGAMES_TIME_SCALE must be > 0; "
                                  "--max-matches / CARDGAMES_MAX_MATCHES must be >= 1")


def test_an_empty_variable_is_an_unset_one():
    """``CARDGAMES_PORT=`` (an env file's line left empty, a Compose ``${VAR}`` of an unset
    VAR) leaves the default in force instead of failing as a bad value."""
    s = _parse([], {"CARDGAMES_PORT": "", "CARDGAMES_DB": "", "CARDGAMES_ADMIN_TOKEN": "", "CARDGAMES_TLS_CERT": ""})
    assert (s.port, s.session.db_path, s.admin_token, s.tls_cert) == (50051, "./cardgames.sqlite3", None, None)


@pytest.mark.parametrize("flag, bad", [
    ("--max-receive-message-bytes", "99999999999"), ("--max-send-message-bytes", str(2**31)),
    ("--max-concurrent-streams", str(2**31)), ("--max-pending-requests", str(2**30)),
    ("--keepalive-time-s", "86401"), ("--keepalive-timeout-s", "0"), ("--max-concurrent-streams", "0"),
    ("--handshake-timeout-s", "0"), ("--handshake-timeout-s", "3601"),
    ("--max-connection-idle-s", "-1"), ("--max-connection-idle-s", "0.5"),
    ("--max-connection-idle-s", "86401"), ("--max-connection-idle-s", "nan"),
    ("--max-connection-idle-s", "inf"), ("--max-connection-idle-s", "soon"),
    ("--time-scale", "0"), ("--heartbeat-interval-s", "0"), ("--bot-deadline-s", "0"),
    ("--snapshot-threshold", "0"), ("--watcher-queue-size", "-1"), ("--bot-workers", "0"),
    ("--bot-workers", "1000"), ("--bot-plugin-load-timeout-s", "0"), ("--bot-plugin-load-timeout-s", "3601"),
    ("--max-matches", "1.5"), ("--rate-limit-seat-burst", "-1"),
    ("--finished-retention-s", "-5"), ("--default-turn-time-s", "1e9"), ("--default-turn-time-s", "5"),
    ("--default-turn-time-s", "121"), ("--default-turn-time-s", "nan"), ("--host", ""),
    ("--admin-token", ""), ("--db", " "), ("--tls-cert", " "), ("--tls-key", ""),
])
def test_out_of_range_values_are_refused(flag, bad, capsys):
    """gRPC's channel arguments are C ints (99999999999 bytes was an OverflowError traceback
    at start), and the session settings that used to take any int or float have ranges."""
    assert f"argument {flag}: " in _flag_error(capsys, [f"{flag}={bad}"])
    setting = next(s for s in S.SETTINGS if s.flag == flag)
    if bad:  # an empty variable is an unset one
        with pytest.raises(ValueError, match=setting.env):
            _parse([], {setting.env: bad})


@pytest.mark.parametrize("flag", ["--host", "--metrics-host"])
@pytest.mark.parametrize("bad, says", [
    ("\udcff", "a byte that is not UTF-8"), ("\udc80", "a byte that is not UTF-8"), ("a..b", "label empty or too long"),
    ("x" * 64 + ".example", "label empty or too long"),
    # gRPC binds no name nor IPv4 address in brackets: the database was created, then "Failed to bind"
    ("[a..b]", "only an IPv6 address goes in brackets"), ("[127.0.0.1]", "only an IPv6 address goes in brackets"),
    ("[localhost]", "only an IPv6 address goes in brackets"), ("[]", "only an IPv6 address goes in brackets"),
    ("[ ]", "only an IPv6 address goes in brackets"),
])
def test_a_host_the_resolver_cannot_be_asked_about_is_a_usage_error(flag, bad, says, capsys):
    """``--host`` with a byte that is not UTF-8, an empty label or one over 63 characters: the
    IDNA encoding of getaddrinfo failed with a UnicodeError once the engine bound its ports,
    logged as ``store_unavailable`` (the database blamed); refused as the flag's error now. A
    name that is only unknown stays the bind's error (grpc_port_unavailable), an IPv6 address
    in brackets and a wildcard are taken; brackets around anything else are refused (gRPC
    binds none, and refused it only after the database was created or migrated)."""
    assert f"argument {flag}: not a host name or address: {says}" in _flag_error(capsys, [flag, bad])
    setting = next(s for s in S.SETTINGS if s.flag == flag)
    with pytest.raises(ValueError, match=f"{setting.env}.*not a host name or address: {says}"):
        _parse([], {setting.env: bad})
    for good in ("[::]", "::", "0.0.0.0", "localhost", "h\u00e9.example", "no-such-host.invalid", "[fe80::1%eth0]",
                 "[::1]"):
        assert getattr(_parse([flag, good], {}), setting.name) == good


@pytest.mark.parametrize("token", [
    "s3cret-admin-tökén-accented", "x" * 513, "s3cret\tadmin-tab-zq7x",
    "s3cret admin passphrase of words", "s3cret-bell\x07-zq7x", "s3cret-delete\x7f-zq7x",
])
def test_an_admin_token_no_call_could_send_is_refused_without_showing_it(token, capsys):
    """gRPC metadata is printable ASCII, a bearer token is one word (white space inside is
    MALFORMED_TOKEN) and a bearer token over 512 characters is refused unread: such an
    admin token (surrounding white space aside, which is dropped) was accepted at start, and then every admin call was refused (NOT_ADMIN, MALFORMED_TOKEN).
    Refused at start now, by flag and by variable, and the message never shows the secret."""
    error = _flag_error(capsys, [f"--admin-token={token}"])
    assert "argument --admin-token: " in error and not _shows_part_of(token, error), error
    with pytest.raises(ValueError, match="CARDGAMES_ADMIN_TOKEN") as info:
        _parse([], {"CARDGAMES_ADMIN_TOKEN": token})
    assert not _shows_part_of(token, str(info.value)), info.value


def _shows_part_of(secret: str, text: str) -> bool:
    """Whether ``text`` quotes any 4 characters in a row of ``secret`` (its head, its tail or
    any piece), the setting's names and the message's own word "secret" aside."""
    for word in ("--admin-token", "CARDGAMES_ADMIN_TOKEN", "secret"):
        text = text.replace(word, "")
    return any(secret[i:i + 4] in text for i in range(len(secret) - 3))


def test_an_admin_token_a_call_can_send_is_the_admin_token():
    """The tokens the new check lets through are the ones a bearer header matches."""
    from engine_service.transport.auth import AdminGate, bearer_token

    for token in ["0123456789abcdef0123456789abcdef", "a" * 512, "no-spaces-but-~!$%^&*()"]:
        assert _parse([], {"CARDGAMES_ADMIN_TOKEN": token}).admin_token == token
        assert AdminGate(token).is_admin(bearer_token([("authorization", f"Bearer {token}")]))


def test_environment_errors_name_the_flag_and_the_variable(tmp_path):
    """Messages that named only the flag while the value came from the environment
    (CARDGAMES_TLS_CERT alone: "--tls-cert and --tls-key go together") name both."""
    with pytest.raises(ValueError) as info:
        _parse([], {"CARDGAMES_TLS_CERT": str(tmp_path / "c.pem")})
    assert str(info.value) == ("--tls-cert / CARDGAMES_TLS_CERT and --tls-key / CARDGAMES_TLS_KEY "
                               "go together: give both, or neither")
    with pytest.raises(ValueError) as info:  # the key alone: not a server without TLS
        _parse(["--tls-key", str(tmp_path / "k.pem")], {})
    assert str(info.value) == ("--tls-cert / CARDGAMES_TLS_CERT and --tls-key / CARDGAMES_TLS_KEY "
                               "go together: give both, or neither")
    with pytest.raises(ValueError) as info:
        _parse([], {"CARDGAMES_TLS_CERT": str(tmp_path / "c.pem"), "CARDGAMES_TLS_KEY": str(tmp_path / "k.pem")})
    assert str(info.value) == (f"--tls-cert / CARDGAMES_TLS_CERT {tmp_path / 'c.pem'}: cannot read it "
                               "(No such file or directory)")  # why, as the system says it
    # read to its end: /dev/zero as the certificate filled the memory
    huge = tmp_path / "huge.pem"
    with open(huge, "wb") as f:  # sparse: no disk written
        f.truncate(1024 * 1024 + 1)
    with pytest.raises(ValueError) as info:
        _parse(["--tls-cert", "/dev/null", "--tls-key", str(huge)], {})
    assert str(info.value) == "--tls-cert / CARDGAMES_TLS_CERT /dev/null: a device, not a regular file"
    with pytest.raises(ValueError) as info:
        _parse([], {"CARDGAMES_TLS_CERT": str(huge), "CARDGAMES_TLS_KEY": str(huge)})
    assert str(info.value) == f"--tls-cert / CARDGAMES_TLS_CERT {huge}: larger than 1 MiB"
    with pytest.raises(ValueError) as info:
        _parse(["--tls-cert", str(tmp_path), "--tls-key", str(huge)], {})
    assert str(info.value) == f"--tls-cert / CARDGAMES_TLS_CERT {tmp_path}: a directory, not a regular file"
    # a named pipe (gRPC reads the pair again by name, for each new connection: one that
    # was read once is empty the next time), and a file that holds no PEM at all
    fifo, not_pem = tmp_path / "cert.fifo", tmp_path / "cert.txt"
    os.mkfifo(fifo)
    not_pem.write_text("hello\n")
    with pytest.raises(ValueError) as info:
        _parse(["--tls-cert", str(fifo), "--tls-key", str(huge)], {})
    assert str(info.value) == f"--tls-cert / CARDGAMES_TLS_CERT {fifo}: a pipe, not a regular file"
    with pytest.raises(ValueError) as info:
        _parse(["--tls-cert", str(not_pem), "--tls-key", str(huge)], {})
    assert str(info.value) == f"--tls-cert / CARDGAMES_TLS_CERT {not_pem}: not a PEM file"
    with pytest.raises(ValueError, match=r"CARDGAMES_TIME_SCALE \(--time-scale\): must be more than 0"):
        _parse([], {"CARDGAMES_TIME_SCALE": "0"})
    assert S._name_fields("invalid session settings: time_scale must be > 0; db_path must be set") == (
        "invalid session settings: --time-scale / CARDGAMES_TIME_SCALE must be > 0; "
        "--db / CARDGAMES_DB must be set")


def test_a_tls_file_the_system_cannot_open_for_any_reason_is_named_with_that_reason(tmp_path):
    """Not only a missing file: any reason the system gives for not opening a TLS file (a
    path through a regular file, a symbolic link that loops) is a setting error naming the
    flag and the variable with that reason (_check_pem's docstring), not a traceback."""
    plain = tmp_path / "plain.pem"
    plain.write_text("-----BEGIN CERTIFICATE-----\n")
    loop = tmp_path / "loop.pem"
    loop.symlink_to(loop)
    for path, reason in ((plain / "cert.pem", "Not a directory"),
                         (loop, "Too many levels of symbolic links")):
        with pytest.raises(ValueError) as info:
            _parse(["--tls-cert", str(path), "--tls-key", str(plain)], {})
        assert str(info.value) == f"--tls-cert / CARDGAMES_TLS_CERT {path}: cannot read it ({reason})"


def test_a_bad_environment_value_exits_2_and_only_stops_serve(monkeypatch, capsys):
    """A bad CARDGAMES_* value exited 1 (SystemExit with a message) while a bad flag exits 2;
    and it broke every command, replay included, because the serve flags read the environment
    when the parser was built. Now serve exits 2 and the other commands never read it."""
    from engine_service.__main__ import main
    from tests.shared_paths import transcripts

    monkeypatch.setenv("CARDGAMES_PORT", "http")
    assert main(["serve"]) == 2
    assert capsys.readouterr().err.strip() == (
        "error: environment variable CARDGAMES_PORT (--port): not a whole number: 'http'")
    sample = str(transcripts("klaberjass")[0])
    assert main(["replay", "--check", sample]) == 0
    assert capsys.readouterr().out.strip() == f"{sample}: ok"
    with pytest.raises(SystemExit) as helped:
        main(["serve", "--help"])  # --help still shows what is in force, without failing
    assert helped.value.code == 0
    assert "default: invalid CARDGAMES_PORT" in " ".join(capsys.readouterr().out.split())


def test_the_bot_plugin_load_time_limit_reaches_the_session_config_with_the_plugins_default():
    from engine_service.plugins.manager import LOAD_TIMEOUT_S

    assert S.Settings().session.bot_plugin_load_timeout_s == LOAD_TIMEOUT_S
    parser = argparse.ArgumentParser()
    S.add_arguments(parser, env={"CARDGAMES_BOT_PLUGIN_LOAD_TIMEOUT_S": "90"})
    assert S.from_namespace(parser.parse_args([])).session.bot_plugin_load_timeout_s == 90.0
    assert S.from_namespace(parser.parse_args(["--bot-plugin-load-timeout-s", "2.5"])).session.bot_plugin_load_timeout_s == 2.5


def test_bot_pace_defaults_to_the_bot_deadline_and_is_never_negative():
    """GJ-11.8: by default a bot move is played no earlier than the bot deadline, so that no
    move's timing shows it was forced; 0 turns the pacing off; a negative pace is refused."""
    s = _parse([], {})
    assert s.session.bot_pace_s == s.session.bot_deadline_s == 2.0
    assert _parse([], {"CARDGAMES_BOT_PACE_S": "0"}).session.bot_pace_s == 0.0
    assert _parse(["--bot-pace-s", "5"], {"CARDGAMES_BOT_PACE_S": "0"}).session.bot_pace_s == 5.0
    with pytest.raises(ValueError, match="CARDGAMES_BOT_PACE_S"):
        _parse([], {"CARDGAMES_BOT_PACE_S": "-1"})


def test_event_loop_choice():
    """--event-loop: uvloop by default where installed (a dependency off Windows), asyncio on
    request; an unknown loop is an error naming the variable."""
    import asyncio

    from engine_service.serve_cli import event_loop_factory

    assert _parse([], {}).event_loop == "auto"
    assert _parse([], {"CARDGAMES_EVENT_LOOP": "asyncio"}).event_loop == "asyncio"
    assert _parse(["--event-loop", "uvloop"], {"CARDGAMES_EVENT_LOOP": "asyncio"}).event_loop == "uvloop"
    with pytest.raises(ValueError, match="CARDGAMES_EVENT_LOOP"):
        _parse([], {"CARDGAMES_EVENT_LOOP": "trio"})
    assert event_loop_factory("asyncio") == (None, "asyncio")
    for choice in ("auto", "uvloop"):
        factory, name = event_loop_factory(choice)
        assert name == "uvloop"
        with asyncio.Runner(loop_factory=factory) as runner:
            assert runner.run(asyncio.sleep(0, "ran")) == "ran"
            assert type(runner.get_loop()).__module__.startswith("uvloop")


def _certificate(folder, name: str, *extra: str):
    """A throw-away self-signed certificate and its key (PEM): (cert, key)."""
    cert, key = folder / f"{name}-cert.pem", folder / f"{name}-key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-days", "1", "-subj", "/CN=localhost",
                    "-keyout", str(key), "-out", str(cert), *(extra or ("-nodes",))],
                   check=True, capture_output=True, timeout=60)
    return cert, key


def test_the_tls_certificate_and_key_must_belong_together(tmp_path):
    """A key of another certificate, or the certificate given as the key, passed the PEM check
    and the server then failed to bind with only grpc_port_unavailable in the log (the cause
    was a line of gRPC core on stderr). The pair is now loaded as a TLS server would at
    start, and the error names both flags and both variables."""
    cert, key = _certificate(tmp_path, "a")
    other_cert, other_key = _certificate(tmp_path, "b")
    _, locked_key = _certificate(tmp_path, "c", "-passout", "pass:secret")
    good = _parse(["--tls-cert", str(cert), "--tls-key", str(key)], {})
    assert (good.tls_cert, good.tls_key) == (cert, key)

    def refused(cert_file, key_file) -> str:
        with pytest.raises(ValueError) as info:
            _parse([], {"CARDGAMES_TLS_CERT": str(cert_file), "CARDGAMES_TLS_KEY": str(key_file)})
        return str(info.value)

    assert refused(cert, other_key) == (
        f"--tls-key / CARDGAMES_TLS_KEY {other_key} is not the private key of the certificate of "
        f"--tls-cert / CARDGAMES_TLS_CERT {cert} (the key does not match it)")
    assert refused(cert, cert) == (f"--tls-key / CARDGAMES_TLS_KEY {cert}: holds no private key "
                                   "(no '-----BEGIN ... PRIVATE KEY-----' block)")
    assert refused(key, key) == (f"--tls-cert / CARDGAMES_TLS_CERT {key}: holds no certificate "
                                 "(no '-----BEGIN CERTIFICATE-----' block)")
    public_key = tmp_path / "a-public-key.pem"  # the public half given for the private key
    subprocess.run(["openssl", "pkey", "-in", str(key), "-pubout", "-out", str(public_key)],
                   check=True, capture_output=True, timeout=60)
    assert refused(cert, public_key) == (f"--tls-key / CARDGAMES_TLS_KEY {public_key}: holds no private key "
                                         "(no '-----BEGIN ... PRIVATE KEY-----' block)")
    damaged = tmp_path / "damaged-cert.pem"  # the PEM block is there, its content is not a certificate
    damaged.write_text("-----BEGIN CERTIFICATE-----\nbm90IGEgY2VydGlmaWNhdGU=\n-----END CERTIFICATE-----\n")
    assert refused(damaged, key).startswith(
        f"--tls-cert / CARDGAMES_TLS_CERT {damaged} and --tls-key / CARDGAMES_TLS_KEY {key}: not a usable "
        "certificate and private key (")
    assert refused(cert, locked_key) == (  # with the command that makes the key gRPC can use
        f"--tls-key / CARDGAMES_TLS_KEY {locked_key}: the private key is encrypted; gRPC needs it "
        "unencrypted (openssl pkey -in KEY -out PLAIN_KEY)")
    # the traditional format's encrypted key ("Proc-Type: 4,ENCRYPTED" in its headers) alike
    old_locked_key = tmp_path / "old-locked-key.pem"
    subprocess.run(["openssl", "rsa", "-in", str(key), "-traditional", "-aes128", "-passout", "pass:secret",
                    "-out", str(old_locked_key)], check=True, capture_output=True, timeout=60)
    assert b"Proc-Type: 4,ENCRYPTED\n" in old_locked_key.read_bytes()
    assert refused(cert, old_locked_key) == (
        f"--tls-key / CARDGAMES_TLS_KEY {old_locked_key}: the private key is encrypted; gRPC needs it "
        "unencrypted (openssl pkey -in KEY -out PLAIN_KEY)")
    assert other_cert.exists()


def test_help_never_shows_the_admin_token():
    """--help shows the values in force, the admin token as 'set' only, whatever its text (a
    token beginning with 'invalid' must not be taken for the marker of a bad variable)."""
    for token in ("s3cret", "invalid-looking-s3cret"):
        parser = argparse.ArgumentParser()
        S.add_arguments(parser, {"CARDGAMES_ADMIN_TOKEN": token})
        text = " ".join(parser.format_help().split())
        assert token not in text and "CARDGAMES_ADMIN_TOKEN; default: set;" in text


def test_the_admin_token_is_what_a_client_can_send(capsys):
    """A token from a file or a Secret (``openssl rand -hex 32 > token``) ends with a newline,
    which the engine used to keep: no client can send it (a header's value is read without it;
    clients.admin strips its token as well), so every admin call was PERMISSION_DENIED /
    NOT_ADMIN with the right token. Surrounding whitespace is now dropped, and a token no header
    can carry, or longer than the engine reads, stops serve (exit 2) without being quoted."""
    from engine_service.transport.auth import MAX_TOKEN_CHARS, AdminGate

    token = "0123456789abcdef0123456789abcdef"
    for raw in (token + "\n", " " + token + "\r\n", "\t" + token):
        parsed = _parse([], {"CARDGAMES_ADMIN_TOKEN": raw}).admin_token
        assert parsed == token
        assert AdminGate(parsed).is_admin(token)  # what clients.admin sends
        assert _parse([f"--admin-token={raw}"], {}).admin_token == token
    for bad in ("two words", "tab\tinside", "caf\u00e9-token", "x" * (MAX_TOKEN_CHARS + 1)):
        with pytest.raises(ValueError, match="CARDGAMES_ADMIN_TOKEN") as refused:
            _parse([], {"CARDGAMES_ADMIN_TOKEN": bad})
        assert bad not in str(refused.value)
        line = _flag_error(capsys, [f"--admin-token={bad}"])
        assert line.startswith("usage:") is False and "argument --admin-token: must be" in line
        assert bad not in line
    assert _parse([], {"CARDGAMES_ADMIN_TOKEN": "x" * MAX_TOKEN_CHARS}).admin_token == "x" * MAX_TOKEN_CHARS


def test_a_value_from_a_file_loses_its_newline_and_help_hides_a_database_password(tmp_path):
    """Text settings drop surrounding whitespace: CARDGAMES_DB from a file (a Secret or
    ConfigMap made with --from-file) ends with a newline, and the engine opened a new, empty
    SQLite file named with it, every match gone from view. --help shows a postgresql:// URL as
    the logs do, its password as ***, as it shows the admin token as "set"."""
    db = tmp_path / "cards.sqlite3"
    s = _parse([], {"CARDGAMES_DB": f"{db}\n", "CARDGAMES_HOST": " 127.0.0.1\n",
                    "CARDGAMES_METRICS_HOST": "::\r\n"})
    assert (str(s.session.db_path), s.host, s.metrics_host) == (str(db), "127.0.0.1", "::")
    # the choices and the takeover bot's name alike: "debug\n" is debug, "heuristic\n" the
    # installed bot (kept, it stopped the start as a bot that is not installed)
    s = _parse([], {"CARDGAMES_LOG_LEVEL": "debug\n", "CARDGAMES_LOG_FORMAT": " JSON\r\n",
                    "CARDGAMES_EVENT_LOOP": "asyncio\n", "CARDGAMES_TAKEOVER_BOT": "heuristic\n"})
    assert (s.log_level, s.log_format, s.event_loop, s.session.takeover_bot) == ("debug", "json", "asyncio",
                                                                                "heuristic")
    tls_cert = next(x for x in S.SETTINGS if x.name == "tls_cert")
    assert tls_cert.parse(f"{tmp_path}/cert.pem\n") == tmp_path / "cert.pem"
    assert str(_parse([f"--db={db} "], {}).session.db_path) == str(db)
    parser = argparse.ArgumentParser()
    S.add_arguments(parser, {"CARDGAMES_DB": "postgresql://cardgames:s3cret-pw@db.internal/cardgames"})
    text = " ".join(parser.format_help().split())
    assert "s3cret" not in text and "postgresql://cardgames:***@db.internal/cardgames" in text


@pytest.mark.parametrize("url", ["postgresq://cardgames:s3cret-pw@db.internal/cardgames",
                                 "sqlite:///var/lib/cardgames/cardgames.sqlite3", "MySQL://u:s3cret-pw@h/x",
                                 # SQLAlchemy's URL: a scheme may hold + . - (RFC 3986), named whole
                                 "postgresql+psycopg://cardgames:s3cret-pw@db.internal/cardgames"])
def test_a_db_url_of_another_scheme_is_refused_without_showing_it(url, capsys):
    """Only postgresql:// and postgres:// URLs are databases: any other scheme:// was taken for
    a relative SQLite path, and the start failed later with "directory .../postgresq:/cardgames:
    s3cret-pw@db.internal does not exist", the password in the starting and store_unavailable
    lines (only a PostgreSQL URL's is hidden). Refused with the settings now, naming the
    scheme only, by flag, by variable and in --help."""
    scheme = url.split("://")[0]
    error = _db_refused_unshown(capsys, url)
    assert f"not a {scheme}:// URL" in error and "/var/lib" not in error
    for good in ("postgresql://u@h/x", "POSTGRES://u@h/x", "memory:", "./cardgames.sqlite3",
                 "/var/lib/cardgames/a:b.sqlite3", "relative/dir/x.db"):
        assert _parse([f"--db={good}"], {}).session.db_path == good


def test_a_postgres_url_with_a_byte_that_is_not_utf8_is_refused_without_showing_it(capsys):
    """A PostgreSQL URL with a byte that is not UTF-8 (a terminal in Latin-1): libpq's
    connection string is UTF-8, and ``prune`` died with a UnicodeEncodeError traceback while
    ``serve`` logged it as store_unavailable. Refused with the settings now, by flag and by
    variable, its password never shown; a SQLite path may hold any bytes."""
    from engine_service.__main__ import main

    url = "postgresql://cardgames:s3cret-pw@db.internal/card\udce9s"
    error = _flag_error(capsys, [f"--db={url}"])
    assert "argument --db: a postgresql:// URL with a byte that is not UTF-8 (value not shown" in error
    for byte in ("\udc80", "\udcff"):  # the ends of the range Python keeps such a byte in
        assert "a byte that is not UTF-8" in _flag_error(capsys, [f"--db=postgresql://u@h/x{byte}"])
    assert "s3cret" not in error
    with pytest.raises(ValueError, match=r"CARDGAMES_DB \(--db\): a postgresql:// URL with a byte") as info:
        _parse([], {"CARDGAMES_DB": url})
    assert "s3cret" not in str(info.value)
    assert main(["prune", "--db", url, "--older-than-days", "1"]) == 2
    err = capsys.readouterr().err
    assert "a postgresql:// URL with a byte that is not UTF-8" in err and "s3cret" not in err, err
    assert _parse(["--db=/var/lib/card\udce9s/x.sqlite3"], {}).session.db_path == "/var/lib/card\udce9s/x.sqlite3"


def _db_refused_unshown(capsys, url: str) -> str:
    """``url`` as --db is refused by flag, by variable and in --help, its password never shown;
    the flag's error line."""
    error = _flag_error(capsys, [f"--db={url}"])
    assert "argument --db: must be a SQLite file's path" in error and "s3cret" not in error
    with pytest.raises(ValueError, match=r"CARDGAMES_DB \(--db\): must be a SQLite file's path") as info:
        _parse([], {"CARDGAMES_DB": url})
    assert "s3cret" not in str(info.value)
    parser = argparse.ArgumentParser()
    S.add_arguments(parser, {"CARDGAMES_DB": url})
    assert "s3cret" not in parser.format_help()
    return error


@pytest.mark.parametrize("url", ['"postgresql://cardgames:s3cret-pw@db.internal/cardgames"',
                                 "jdbc:postgresql://db.internal/cardgames?user=u&password=s3cret-pw",
                                 "postgresql:/cardgames:s3cret-pw@db.internal/cardgames",
                                 "postgresql//cardgames:s3cret-pw@db.internal/cardgames",
                                 "cardgames:s3cret-pw@db.internal:5432/cardgames",
                                 "cardgames:pa:s3cret-pw@db.internal/cardgames",  # a colon in the password
                                 "Postgres:cardgames:s3cret-pw@db.internal",
                                 # a URL without its scheme ("postgresql:" lost: //user:password@host)
                                 "//cardgames:s3cret-pw@db.internal/cardgames",
                                 "host=db.internal user=cardgames password=s3cret-pw dbname=cardgames",
                                 "host=db.internal sslpassword=s3cret-pw dbname=cardgames",
                                 # libpq takes spaces around its '=', and a keyword in capitals is still one
                                 "host=db.internal user=cardgames password = s3cret-pw dbname=cardgames",
                                 "HOST=db.internal PASSWORD=s3cret-pw",
                                 # no user:password@ nor password= to give them away
                                 '"postgresql://db.internal/cardgames"', "postgresql:/db.internal/cardgames",
                                 # a scheme is read in any case (POSTGRES://u@h/x is taken): so is its misspelling
                                 "POSTGRESQL:/db.internal/cardgames", "Postgres//db.internal/cardgames"])
def test_a_db_url_not_at_the_start_or_without_its_slashes_is_refused_without_showing_it(url, capsys):
    """A URL with the quotes an env file kept, a jdbc: URL, a postgresql: missing a slash: none
    starts with a scheme://, so they were taken for relative SQLite paths and the start failed
    with "directory ...s3cret-pw@db.internal does not exist", the password in its log lines
    (and prune's "no database file at ..."); libpq's key=value form was made a SQLite file of
    that name, logged. Refused as another scheme's URL is, unshown."""
    assert "not a URL that does not start with postgresql://" in _db_refused_unshown(capsys, url)
    for good in ("postgres.sqlite3", "postgresql-backup/cards.db", "./a:b//c.sqlite3", "C:/x",
                 "data/run=1/cards.sqlite3", "passwords.db"):
        assert _parse([f"--db={good}"], {}).session.db_path == good


def test_help_shows_an_empty_default_as_the_docs_do():
    """docs/operations.md's default column says `empty` for --takeover-bot and
    --trusted-proxies (`unset` for --tls-cert, --admin-token), and --help prints the same
    table: it showed "default: ;" and "default: none"."""
    parser = argparse.ArgumentParser()
    S.add_arguments(parser, {})
    text = " ".join(parser.format_help().split())
    assert "CARDGAMES_TAKEOVER_BOT; default: empty;" in text
    assert "CARDGAMES_TRUSTED_PROXIES; default: empty;" in text
    assert "CARDGAMES_TLS_CERT; default: unset;" in text and "CARDGAMES_ADMIN_TOKEN; default: unset;" in text
    assert "--db PATH " in text and "--port PORT " in text  # each flag's value named as the docs do
    parser = argparse.ArgumentParser()
    S.add_arguments(parser, {"CARDGAMES_TRUSTED_PROXIES": "10.0.0.0/8", "CARDGAMES_TAKEOVER_BOT": "heuristic"})
    text = " ".join(parser.format_help().split())
    assert "CARDGAMES_TRUSTED_PROXIES; default: 10.0.0.0/8;" in text
    assert "CARDGAMES_TAKEOVER_BOT; default: heuristic;" in text


def test_the_grpc_and_metrics_ports_must_differ_where_their_addresses_meet():
    """--port and --metrics-port the same (a copy-paste in a ConfigMap) failed only once the
    database was held, as grpc_port_unavailable "Address already in use": the engine's own
    metrics endpoint held the port. It is a setting error now, naming both; ports 0 (any
    free port), or two different specific addresses, are fine."""
    with pytest.raises(ValueError) as info:
        _parse(["--metrics-port", "50051"], {})
    assert str(info.value) == ("--port / CARDGAMES_PORT and --metrics-port / CARDGAMES_METRICS_PORT are both "
                               "50051: the gRPC API and the metrics endpoint need a port each")
    with pytest.raises(ValueError):
        _parse(["--host", "127.0.0.1", "--metrics-host", "127.0.0.1"], {"CARDGAMES_PORT": "9464"})
    for host, metrics_host in (("[::1]", "::1"), ("127.0.0.1", "[::]"), ("::", "127.0.0.1"),
                               ("127.0.0.1", "0.0.0.0")):  # the same address, or either every address
        with pytest.raises(ValueError, match="need a port each"):
            _parse(["--host", host, "--metrics-host", metrics_host, "--port", "9000", "--metrics-port", "9000"], {})
    assert _parse(["--port", "0", "--metrics-port", "0"], {}).port == 0
    assert _parse(["--host", "10.0.0.5", "--metrics-host", "127.0.0.1", "--port", "9000",
                   "--metrics-port", "9000"], {}).metrics_port == 9000
    assert _parse(["--host", "[::1]", "--metrics-host", "[fe80::1]", "--port", "9000",
                   "--metrics-port", "9000"], {}).metrics_port == 9000


def test_an_option_before_the_command_is_refused_without_echoing_its_value(capsys):
    """``python -m engine_service --db URL`` (``serve`` forgotten): argparse took the URL for the
    command and printed it, password included ("invalid choice: 'postgresql://u:pw@...'"). Now it
    asks for the command first and shows no value."""
    from engine_service.__main__ import main

    with pytest.raises(SystemExit) as refused:
        main(["--db", "postgresql://cardgames:s3cret-pw@db.internal/cardgames", "--port", "50051"])
    assert refused.value.code == 2
    err = capsys.readouterr().err
    assert "name the command first: {serve,replay,prune" in err and "s3cret" not in err
    with pytest.raises(SystemExit) as helped:
        main(["--help"])
    assert helped.value.code == 0 and "serve" in capsys.readouterr().out


def test_a_misspelt_flag_is_refused_without_echoing_its_value(capsys):
    """``serve --admin_token TOKEN`` or ``--database postgresql://u:pw@...`` (a misspelt flag):
    argparse printed every unrecognized argument, the token or the password with it, on the
    engine's stderr. The flags are named, their values only counted. Flags are not abbreviated
    (an ambiguous one echoed its value too)."""
    from engine_service.__main__ import main

    for argv, says in (
            (["serve", "--admin_token", "s3cret-token"], "unrecognized arguments: --admin_token (1 value not shown"),
            (["serve", "--port", "1", "--admin-tokn=s3cret-token"], "unrecognized arguments: --admin-tokn (1 value"),
            (["prune", "--database", "postgresql://u:s3cret-pw@h/db", "--older-than-days", "1"],
             "unrecognized arguments: --database (1 value not shown: it may hold a secret)"),
            (["serve", "s3cret-a", "s3cret-b"], "unrecognized arguments: (2 values not shown: they may"),
            (["serve", "-as3cret-token"], "unrecognized arguments: -a (1 value not shown"),
            # an abbreviation: "ambiguous option: --d=VALUE could match --db, ..." echoed it,
            # and --admin=TOKEN was taken as --admin-token
            (["serve", "--d=postgresql://u:s3cret-pw@h/db"], "unrecognized arguments: --d (1 value"),
            (["prune", "--older-than-days", "1", "--d=postgresql://u:s3cret@h/db"], "arguments: --d (1"),
            (["serve", "--port", "1", "--admin=s3cret-token"], "unrecognized arguments: --admin (1 value")):
        with pytest.raises(SystemExit) as refused:
            main(argv)
        assert refused.value.code == 2
        err = capsys.readouterr().err
        assert says in err and "s3cret" not in err, err


def test_no_variable_the_project_reads_is_warned_about_as_unknown():
    """``unknown_environment_variable`` is for a misspelt setting: every ``CARDGAMES_*`` name
    the repository uses (the tests', the bench's, the Node client's, besides the settings) is
    either read by the engine or known not to be its own; the only names it flags are the
    misspellings the tests and docs give as examples, each near a setting it names."""
    from engine_service.serve_cli import unknown_variables

    root = Path(__file__).resolve().parents[2]
    skipped = {".git", ".venv", "node_modules", "__pycache__", ".pytest_cache", "generated"}
    names = set()
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d not in skipped]
        for name in files:
            if name.endswith((".py", ".js", ".ts", ".go", ".sh", ".md", ".yml", ".yaml", ".toml", ".json",
                              ".env", ".example")) or name in ("Makefile", "Dockerfile"):
                text = Path(folder, name).read_text(errors="replace")
                names |= set(re.findall(r"CARDGAMES_[A-Z0-9_]*[A-Z0-9]", text))
    assert {"CARDGAMES_TEST_PG", "CARDGAMES_SOAK_PROBE_S", "CARDGAMES_PROTO_DIR"} <= names  # the scan found them
    flagged = unknown_variables({name: "x" for name in names})
    assert flagged and all(suggestion for _, suggestion in flagged), flagged


#: SessionConfig's own ranges (sessions/config.py; docs/operations.md's table, whose flags
#: check the same ranges first): per field, a value it refuses and the nearest it takes.
SESSION_BOUNDS = [
    *[(name, bad, 0.0) for name in ("default_turn_time_s", "reconnect_grace_s", "finished_retention_s",
                                     "waiting_timeout_s", "bot_pace_s") for bad in (-0.5, math.nan)],
    *[(name, math.nan, 0.001) for name in ("time_scale", "heartbeat_interval_s")],
    *[(name, 0.0, 0.001) for name in ("time_scale", "heartbeat_interval_s", "bot_deadline_s",
                                      "absence_heartbeat_s", "bot_plugin_load_timeout_s")],
    *[(name, 0, 1) for name in ("snapshot_threshold", "watcher_queue_size", "max_matches",
                                "max_waiting_matches", "max_bot_matches", "max_match_deals",
                                "max_watchers_per_match", "max_streams_per_seat", "max_watchers",
                                "bot_workers", "max_name_length", "prune_batch")],
    ("min_spectator_delay_actions", -1, 0),
    ("min_spectator_delay_actions", 201, 200),
    ("prune_interval_s", float("inf"), 0.001),
    ("prune_interval_s", 0.0, 0.001),
    *[("keep_finished_days", bad, 0.0) for bad in (-0.5, math.nan, float("inf"))],
]


@pytest.mark.parametrize("name, bad, good", SESSION_BOUNDS)
def test_session_config_refuses_a_value_out_of_its_range_and_names_the_field(name, bad, good):
    """A SessionConfig built directly (tests, an embedding program) checks its fields as the
    flags do: a value just out of range is a ValueError naming the field; the nearest value in
    range is taken (0 where it means "none" or "never", 200 the longest spectator delay)."""
    with pytest.raises(ValueError) as refused:
        SessionConfig(**{name: bad})
    assert f"{name} must be" in str(refused.value)
    assert getattr(SessionConfig(**{name: good}), name) == good


def test_session_config_names_the_spectator_delay_range_it_enforces():
    """A spectator delay past the longest (docs/operations.md: 0 to 200 actions) is refused
    with that range in the message, as the flag's own refusal gives it."""
    with pytest.raises(ValueError) as refused:
        SessionConfig(min_spectator_delay_actions=201)
    assert str(refused.value) == "invalid session settings: min_spectator_delay_actions must be 0..200"


def test_session_config_names_every_bad_field_at_once():
    """Every problem is in the one error, so that a bad configuration is fixed in one go."""
    with pytest.raises(ValueError) as refused:
        SessionConfig(time_scale=0, max_matches=0, reconnect_grace_s=-1)
    assert str(refused.value) == ("invalid session settings: reconnect_grace_s must be >= 0; "
                                  "time_scale must be > 0; max_matches must be >= 1")


def test_session_defaults_without_a_flag_are_the_documented_ones():
    """The defaults no row of docs/operations.md's settings table shows (they have no flag),
    as its prose and docs/api.md give them: a waiting table is ended an hour after its
    creation (operations.md, match_create_abandoned), an absent player's window is recorded
    every 5 s (Restarts), retention runs every 10 minutes in transactions of 10 matches
    (Retention; retention_enabled's interval_s 600), and a name is at most 64 characters
    (api.md, CreateMatch)."""
    c = SessionConfig()
    assert (c.waiting_timeout_s, c.absence_heartbeat_s, c.prune_interval_s, c.prune_batch,
            c.max_name_length) == (3600.0, 5.0, 600.0, 10, 64)
