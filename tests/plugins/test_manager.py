"""Plugin loading policy: entry points, the autoload switch, the allowlist, essential plugins,
and plugins that are broken in every way a plugin can be (each is left out, logged, and the
rest loads)."""

from __future__ import annotations

import contextlib
import functools
import os
import signal
import sys
import threading
import time

import pytest
from structlog.testing import capture_logs

from engine_service.plugins.manager import (ENV_ALLOWLIST, ENV_DISABLE_AUTOLOAD, LOAD_TIMEOUT_S,
                                            PluginNotLoaded, PluginSettings, check_named_plugins,
                                            load_catalog, parse_allowlist, time_limit)
from engine_service.plugins.runner import BotRunner
from engine_service.plugins import BotSpec, hookimpl
from tests.plugins import broken_plugins


def test_entry_point_bots_load_by_default():
    catalog = load_catalog(PluginSettings.resolve(environ={}))
    assert "random" in catalog.names()
    assert catalog.entries["random"].plugin == "random"
    assert catalog.entries["random"].distribution.startswith("cardgames-engine ")
    assert catalog.failures == []


def test_environment_switches():
    s = PluginSettings.resolve(environ={ENV_DISABLE_AUTOLOAD: "1", ENV_ALLOWLIST: "a, b"})
    assert s.autoload is False and s.allowlist == frozenset({"a", "b"})
    s = PluginSettings.resolve(allowlist={"x"}, environ={ENV_ALLOWLIST: "a,b"})
    assert s.allowlist == frozenset({"x"})  # explicit wins over the environment
    s = PluginSettings.resolve(autoload=True, environ={ENV_DISABLE_AUTOLOAD: "0"})
    assert s.autoload is True
    assert parse_allowlist(" , ") is None
    # settings made directly are those of an empty environment: autoload, no allowlist, the limit
    assert PluginSettings() == PluginSettings.resolve(environ={})
    assert PluginSettings().autoload is True and PluginSettings().load_timeout_s == LOAD_TIMEOUT_S


def test_the_switches_are_the_documented_environment_variables_and_the_limit_30_s():
    """docs/bots.md: ``CARDGAMES_DISABLE_PLUGIN_AUTOLOAD=1`` turns autoloading off,
    ``CARDGAMES_BOT_PLUGINS=a,b`` names the plugins to load, and a plugin's import and hook
    have 30 s each by default (``--bot-plugin-load-timeout-s``). The other tests name the
    variables by the module's constants, which a renamed variable would follow silently,
    leaving an operator's switch read by nothing."""
    s = PluginSettings.resolve(environ={"CARDGAMES_DISABLE_PLUGIN_AUTOLOAD": "1",
                                        "CARDGAMES_BOT_PLUGINS": "heuristic, search"})
    assert s.autoload is False and s.allowlist == frozenset({"heuristic", "search"})
    assert PluginSettings().load_timeout_s == PluginSettings.resolve(environ={}).load_timeout_s == 30.0


def test_a_disable_switch_of_no_yes_no_value_is_refused_not_read_as_no():
    """``CARDGAMES_DISABLE_PLUGIN_AUTOLOAD=y`` (or ``=disable``) was read as "no": every installed
    plugin kept autoloading, which the operator had meant to turn off, without a word. A value
    it does not know is a ValueError naming the variable; serve refuses to start on it (exit 2)
    and the arena says so as a usage error."""
    import argparse

    from bot_plugins import arena
    from engine_service import settings as S

    for value, off in (("1", True), (" TRUE ", True), ("yes", True), ("on", True), ("0", False),
                       ("false", False), ("No", False), ("off", False), ("", False)):
        assert PluginSettings.resolve(environ={ENV_DISABLE_AUTOLOAD: value}).autoload is not off
    for value in ("y", "disable", "2"):
        with pytest.raises(ValueError, match=f"{ENV_DISABLE_AUTOLOAD}='{value}': not a yes/no value"):
            PluginSettings.resolve(environ={ENV_DISABLE_AUTOLOAD: value})
    parser = argparse.ArgumentParser()
    S.add_arguments(parser, {})
    with pytest.raises(ValueError, match=f"{ENV_DISABLE_AUTOLOAD}='y'"):
        S.from_namespace(parser.parse_args([]), {ENV_DISABLE_AUTOLOAD: "y"})
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(ENV_DISABLE_AUTOLOAD, "y")
        with pytest.raises(SystemExit) as exit_:
            arena.main(["--game", "klaberjass", "--bots", "random", "--deals", "1", "--no-progress"])
        assert exit_.value.code == 2


def test_autoload_disabled_keeps_only_essential_plugins_and_extras():
    settings = PluginSettings.resolve(extra=["tests.plugins.bad_bots"], environ={ENV_DISABLE_AUTOLOAD: "1"})
    with capture_logs() as logs:
        catalog = load_catalog(settings)
    assert "random" in catalog.names()  # essential: always there for a bot seat or a takeover
    assert "sleeps" in catalog.names()
    assert set(catalog.plugins) == {"random", "tests.plugins.bad_bots"}  # no other entry point
    skipped = {e["plugin"]: e["reason"] for e in logs if e["event"] == "bot_plugin_skipped"}
    assert skipped["heuristic"] == "autoload disabled"


def test_allowlist_excludes_other_entry_points(monkeypatch):
    import importlib.metadata as md

    real = md.entry_points
    fake = md.EntryPoint("other", "tests.plugins.bad_bots", "cardgames.bots")

    def entry_points(**kw):
        eps = list(real(**kw))
        return eps + [fake] if kw.get("group") == "cardgames.bots" else eps

    monkeypatch.setattr(md, "entry_points", entry_points)
    everything = load_catalog(PluginSettings.resolve(environ={}))
    assert {"random", "other"} <= set(everything.plugins) and "sleeps" in everything.names()
    with capture_logs() as logs:
        only_random = load_catalog(PluginSettings.resolve(environ={ENV_ALLOWLIST: "random"}))
    assert set(only_random.plugins) == {"random"} and "sleeps" not in only_random.names()
    skipped = {e["plugin"]: e["reason"] for e in logs if e["event"] == "bot_plugin_skipped"}
    assert skipped["other"] == skipped["heuristic"] == "not in allowlist"


def test_broken_plugins_are_logged_and_left_out():
    extras = ["tests.plugins.import_fails", "no.such.module", broken_plugins.MisspelledHook(),
              broken_plugins.HookRaises(), broken_plugins.ReturnsGarbage(),
              broken_plugins.DuplicateRandom(), broken_plugins.WrongArguments(),
              "tests.plugins.bad_bots"]
    with capture_logs() as logs:
        catalog = load_catalog(PluginSettings.resolve(extra=extras, environ={}))
    stages = {(f.plugin, f.stage) for f in catalog.failures}
    assert ("tests.plugins.import_fails", "import") in stages
    assert ("no.such.module", "import") in stages
    assert ("MisspelledHook", "validate") in stages
    assert ("HookRaises", "hook") in stages
    assert ("WrongArguments", "register") in stages
    # a plugin refused at registration or validation is not among the loaded plugins
    assert not {"WrongArguments", "MisspelledHook"} & set(catalog.plugins)
    assert sum(1 for f in catalog.failures if f.plugin == "ReturnsGarbage" and f.stage == "spec") == 4
    # a bot for no registered game is refused, naming it; unknown ids beside known ones are said
    assert any("'misspelt' plays no registered game: klaberjas" in f.error for f in catalog.failures)
    assert catalog.entries["half-known"].spec.games == ("jojotte", "skat")
    unknown = [e for e in logs if e["event"] == "bot_unknown_games"]
    assert [(e["bot"], e["games"], e["log_level"]) for e in unknown] == [("half-known", ["skat"], "warning")]
    assert any(f.plugin == "DuplicateRandom" and "already registered" in f.error for f in catalog.failures)
    # the good ones still load, and the impostor did not replace the real random bot
    assert {"random", "fine-one", "sleeps"} <= set(catalog.names())
    assert catalog.entries["random"].plugin == "random"
    logged = [e for e in logs if e["event"] == "bot_plugin_failed"]
    assert len(logged) == len(catalog.failures)
    assert all(e["log_level"] == "error" and e["plugin"] and e["error"] for e in logged)
    assert any("not installed" in e["error"] for e in logged)  # the import error says why
    # ListBots says the plugin's own exceptions by type and place, not by their message (which
    # the plugin wrote, and may hold a secret): the log line has it
    summaries = {(f.plugin, f.stage): f.summary for f in catalog.failures}
    assert summaries[("tests.plugins.import_fails", "import")] == "ImportError at import_fails.py:3 in <module>"
    assert summaries[("no.such.module", "import")] == "ModuleNotFoundError: no module named 'no'"
    hook = summaries[("HookRaises", "hook")]
    assert hook.startswith("RuntimeError at broken_plugins.py:") and hook.endswith(" in cardgames_bots"), hook
    assert "plugin bug" in next(f.error for f in catalog.failures if f.plugin == "HookRaises")
    # the engine's and pluggy's refusals are said as logged, but for a host path (a module's repr)
    from engine_service.plugins.manager import _without_paths
    assert all(f.summary == _without_paths(f.error) for f in catalog.failures
               if f.stage in ("register", "validate", "spec"))
    # and so does pluggy's refusal, whose reason is on its message's later lines
    wrong = next(f.error for f in catalog.failures if f.plugin == "WrongArguments")
    assert "nonsense" in wrong and "\n" not in wrong, wrong


def _found_first(monkeypatch, entries: list[tuple[str, str]]) -> None:
    """Make ``entries`` (name, object reference) installed entry points of the bot group,
    found on sys.path ahead of the engine's own (a package installed with --target first)."""
    import importlib.metadata as md

    real = md.entry_points
    first = [md.EntryPoint(name, value, "cardgames.bots") for name, value in entries]

    def entry_points(**kw):
        eps = list(real(**kw))
        return first + eps if kw.get("group") == "cardgames.bots" else eps

    monkeypatch.setattr(md, "entry_points", entry_points)


def test_no_other_plugin_takes_the_engines_heuristic_and_search_bots(monkeypatch):
    """The engine's own ``heuristic`` and ``search`` bots (seats, takeovers, the arena name
    them) stay its own whatever sys.path finds first: a third-party entry point found ahead
    of them offering bots of those names, or an entry point named ``search`` of another
    module, is refused instead of replacing them (as ``random`` always was)."""
    _found_first(monkeypatch, [("aaa-shipped", "tests.plugins.broken_plugins:SHIPPED_IMPOSTOR"),
                               ("search", "tests.plugins.bad_bots"), ("search", "tests.bots.recorder"),
                               ("heuristic", "bot_plugins.heuristic")])  # the engine's own, found twice
    with capture_logs() as logs:
        catalog = load_catalog(PluginSettings.resolve(environ={}))
    assert catalog.entries["heuristic"].plugin == "heuristic"
    assert catalog.entries["search"].plugin == "search"
    assert catalog.entries["search"].spec.factory.__module__.startswith("bot_plugins.search")
    assert "sleeps" not in catalog.names()  # the other module under the name "search" is not loaded
    refused = [f.error for f in catalog.failures if f.plugin == "aaa-shipped" and f.stage == "spec"]
    assert len(refused) == 2 and all("already registered" in e for e in refused)
    # the first impostor is kept over the second until the engine's own comes; the engine's own
    # found twice is no duplicate to warn about
    assert [(e["plugin"], e["kept"], e["ignored"]) for e in logs if e["event"] == "bot_plugin_duplicate"] == [
        ("search", "tests.plugins.bad_bots", "tests.bots.recorder"),
        ("search", "bot_plugins.search", "tests.plugins.bad_bots")]


def test_a_factory_that_makes_no_bot_is_an_exception_failure():
    catalog = load_catalog(PluginSettings.resolve(extra=[broken_plugins.ReturnsGarbage()], environ={}))
    reply = BotRunner(catalog).decide("fine-one", "klaberjass", 0, {}, ["a"], 1, 1.0)
    assert reply.failure == "exception" and reply.detail.startswith("factory: TypeError")
    reply = BotRunner(catalog).decide("fine-one", "jojotte", 0, {}, ["a"], 1, 1.0)
    assert reply.failure == "unknown_bot"  # it does not play that game
    # and the catalog says so to whoever seats it (a bot seat, the arena, remote_bot)
    assert catalog.plays("fine-one", "klaberjass") and catalog.plays("random", "jojotte")
    assert not catalog.plays("fine-one", "jojotte") and not catalog.plays("no-such-bot", "klaberjass")


def test_no_other_plugin_takes_the_essential_random_bot(monkeypatch):
    """The essential ``random`` bot (a bot seat's and the takeover's fallback) stays the engine's
    own whatever sys.path finds first: a third-party entry point offering a bot named ``random``,
    or named ``random`` itself, or a hook marked trylast (first in pluggy's list) is refused
    instead of replacing it. Before, the first entry point found kept the name, so a package
    installed ahead of the engine (``pip install --target DIR``, ``PYTHONPATH=DIR``) made every
    ``random`` seat play its bot, and the real plugin was the one reported as failed."""
    _found_first(monkeypatch, [("aaa-impostor", "tests.plugins.broken_plugins:IMPOSTOR"),
                               ("random", "tests.plugins.bad_bots")])
    with capture_logs() as logs:
        catalog = load_catalog(PluginSettings.resolve(
            extra=[broken_plugins.LastDuplicateRandom()], environ={}))
    assert catalog.entries["random"].plugin == "random"
    assert catalog.entries["random"].spec.factory.__module__ == "bot_plugins.random_bot"
    assert "sleeps" not in catalog.names()  # the impostor module under the name "random" is not loaded
    refused = {f.plugin for f in catalog.failures if f.stage == "spec" and "'random' already" in f.error}
    assert refused == {"aaa-impostor", "LastDuplicateRandom"}
    # each refusal names the plugin that has the name (the first loaded), not the refused one
    assert all(f.error.endswith("bot name 'random' already registered by plugin 'random'")
               for f in catalog.failures if "'random' already" in f.error)
    assert any(e["event"] == "bot_plugin_duplicate" and e["kept"] == "bot_plugins.random_bot"
               for e in logs)


def test_a_bot_name_with_a_trailing_newline_is_refused():
    """docs/bots.md: a name is lower-case letters, digits, - and _. The check used re.match with
    ``$``, which also matches before a final newline, so ``"nl\\n"`` was listed by ListBots."""

    class Newline:
        @hookimpl
        def cardgames_bots(self):
            return [BotSpec("nl\n", lambda g: None), BotSpec("fine", lambda g: None, games=("jojotte\n",))]

    catalog = load_catalog(PluginSettings.resolve(extra=[Newline()], environ={}))
    assert "nl\n" not in catalog.names() and "fine" not in catalog.names()
    assert sum(1 for f in catalog.failures if f.plugin == "Newline" and f.stage == "spec") == 2


def test_a_bot_name_that_is_no_string_is_refused_by_the_naming_rule():
    """docs/bots.md: a name is lower-case letters, digits, - and _. A number or bytes is no
    such name: refused as one, with the rule a bot author needs, not with the regular
    expression's complaint about its argument's type."""

    class Numbered:
        @hookimpl
        def cardgames_bots(self):
            return [BotSpec(7, lambda g: None), BotSpec(b"bytes", lambda g: None), BotSpec("fine", lambda g: None)]

    catalog = load_catalog(PluginSettings.resolve(extra=[Numbered()], environ={}))
    assert catalog.names().count("fine") == 1 and 7 not in catalog.entries and b"bytes" not in catalog.entries
    assert [f.summary for f in catalog.failures] == [
        "ValueError: bad bot name 7 (lower-case letters, digits, - and _)",
        "ValueError: bad bot name b'bytes' (lower-case letters, digits, - and _)"]


def test_a_bots_games_given_as_a_generator_are_read_once():
    """``BotSpec.games`` is any iterable of game ids. A generator was used up by the spec's
    check, and the bot was then listed as playing no game at all (never seated). It is read
    once into a tuple; a list comes out as a tuple too; a non-iterable is refused."""

    class Lazy:
        @hookimpl
        def cardgames_bots(self):
            return [BotSpec("lazy", lambda g: None, games=(g for g in ("klaberjass", "jojotte"))),
                    BotSpec("listed", lambda g: None, games=["japanese_joker"]),
                    BotSpec("broken", lambda g: None, games=7)]

    catalog = load_catalog(PluginSettings.resolve(extra=[Lazy()], environ={}))
    lazy = catalog.entries["lazy"].spec
    assert lazy.games == ("klaberjass", "jojotte") and lazy.plays("jojotte") and not lazy.plays("georgian_joker")
    assert catalog.entries["listed"].spec.games == ("japanese_joker",)
    assert "broken" not in catalog.names()
    assert any(f.plugin == "Lazy" and f.stage == "spec" and "'broken'" in f.error for f in catalog.failures)


def test_a_bots_games_that_are_no_list_of_ids_are_refused_with_the_form_that_works():
    """docs/bots.md: ``games`` is a list of game ids, or ``("*",)`` for every game. A game that
    is no id at all (not a misspelt one, which is kept with a warning) is refused with the bot,
    and so is a bare ``"*"`` (a string, not a list) or a ``games`` that is no iterable at all (a
    number): the reason names the form that works."""

    class Odd:
        @hookimpl
        def cardgames_bots(self):
            return [BotSpec("not-an-id", lambda g: None, games=("klaberjass", "Not An Id")),
                    BotSpec("bare-star", lambda g: None, games="*"),
                    BotSpec("numbered", lambda g: None, games=5),
                    BotSpec("star", lambda g: None, games=("*",))]

    catalog = load_catalog(PluginSettings.resolve(extra=[Odd()], environ={}))
    assert "star" in catalog.names() and not {"not-an-id", "bare-star", "numbered"} & set(catalog.names())
    refused = {f.error for f in catalog.failures if f.plugin == "Odd" and f.stage == "spec"}
    assert refused == {f"ValueError: bot {name!r}: games must be a non-empty list of game ids, or (\"*\",) for every game"
                       for name in ("not-an-id", "bare-star", "numbered")}, refused


def test_two_entry_points_with_one_name_are_one_plugin_the_first_found(monkeypatch):
    """docs/bots.md: two installed entry points with the same (non-essential) name are one
    plugin, the first found on sys.path; the other is left out with a warning."""
    import importlib.metadata as md

    real = md.entry_points
    twins = [md.EntryPoint("twin", "tests.plugins.bad_bots", "cardgames.bots"),
             md.EntryPoint("twin", "tests.bots.recorder", "cardgames.bots"),
             # the same distribution found twice on sys.path: one plugin, no duplicate to warn about
             md.EntryPoint("twin", "tests.plugins.bad_bots", "cardgames.bots")]

    def entry_points(**kw):
        eps = list(real(**kw))
        return eps + twins if kw.get("group") == "cardgames.bots" else eps

    monkeypatch.setattr(md, "entry_points", entry_points)
    with capture_logs() as logs:
        catalog = load_catalog(PluginSettings.resolve(environ={}))
    assert "sleeps" in catalog.names() and "recorder" not in catalog.names()
    assert catalog.entries["sleeps"].plugin == "twin"
    assert catalog.entries["sleeps"].distribution == ""  # an entry point of no known distribution
    assert [(e["kept"], e["ignored"]) for e in logs if e["event"] == "bot_plugin_duplicate"] == [
        ("tests.plugins.bad_bots", "tests.bots.recorder")]


def test_an_allowlisted_name_that_no_entry_point_has_is_warned_about():
    """CARDGAMES_BOT_PLUGINS names plugins (entry points): a misspelt one, or a bot's name
    such as search_random, used to load nothing but random without a word."""
    with capture_logs() as logs:
        catalog = load_catalog(PluginSettings.resolve(environ={ENV_ALLOWLIST: "search_random,heuristic"}))
    assert set(catalog.plugins) == {"random", "heuristic"}
    warned = [e for e in logs if e["event"] == "bot_plugins_not_installed"]
    assert [(e["plugins"], e["log_level"]) for e in warned] == [(["search_random"], "warning")]
    assert {"random", "search", "heuristic"} <= set(warned[0]["installed"])
    with capture_logs() as logs:
        catalog = load_catalog(PluginSettings.resolve(environ={ENV_ALLOWLIST: "search"}))
    assert not [e for e in logs if e["event"] == "bot_plugins_not_installed"]
    assert catalog.failures == []


def test_an_allowlisted_name_that_no_entry_point_has_is_a_load_failure():
    """It was only in the log: ListBots' load_failures (clients.play --list) now says it too,
    one failure per name, stage "allowlist", a reason without anything of the host; the
    bot_plugins_loaded summary counts it among the failed plugins."""
    with capture_logs() as logs:
        catalog = load_catalog(PluginSettings.resolve(
            environ={ENV_ALLOWLIST: "search_random,heuristic,nosuch"}))
    reason = ("not installed: no cardgames.bots entry point or plugin module has this name "
              "(CARDGAMES_BOT_PLUGINS names plugins, not bots)")
    assert [(f.plugin, f.stage, f.error, f.summary) for f in catalog.failures] == [
        ("nosuch", "allowlist", reason, reason), ("search_random", "allowlist", reason, reason)]
    assert not [e for e in logs if e["event"] == "bot_plugin_failed"]  # the warning says it
    [loaded] = [e for e in logs if e["event"] == "bot_plugins_loaded"]
    assert loaded["failed"] == ["nosuch", "search_random"]
    # log_summary=False: the caller (the bot host) logs it once it has its final catalog
    with capture_logs() as logs:
        load_catalog(PluginSettings.resolve(environ={ENV_ALLOWLIST: "nosuch"}), log_summary=False)
    assert not [e for e in logs if e["event"] == "bot_plugins_loaded"]
    # with autoloading off the allowlist selects nothing: nothing to report
    catalog = load_catalog(PluginSettings.resolve(environ={ENV_ALLOWLIST: "nosuch",
                                                           ENV_DISABLE_AUTOLOAD: "1"}))
    assert catalog.failures == []


def test_an_allowlisted_name_that_is_not_utf8_is_a_load_failure_listbots_can_send():
    """A byte of CARDGAMES_BOT_PLUGINS that is not UTF-8 (a Latin-1 environment file) comes
    from os.environ as a lone surrogate; as a load failure's plugin name it made every
    ListBots fail (protobuf sends UTF-8 only): it is said escaped."""
    from engine_service.sessions.api import BotLoadFailure
    from engine_service.transport import codec

    # the byte as it was (\xe9); a lone surrogate that stands for no byte as itself (\ud800)
    for given, shown in (("h\udce9uristic", "h\\xe9uristic"), ("h\ud800", "h\\ud800")):
        catalog = load_catalog(PluginSettings.resolve(environ={ENV_ALLOWLIST: given}))
        assert [(f.plugin, f.stage) for f in catalog.failures] == [(shown, "allowlist")]
        for f in catalog.failures:
            codec.bot_load_failure_message(BotLoadFailure(f.plugin, f.stage, f.summary)).SerializeToString()
    # and a --plugin module name from the command line (argv decodes the same way) that fails
    # to import: every ListBots failed the same way
    catalog = load_catalog(PluginSettings.resolve(autoload=False, extra=["m\udce9"]))
    assert [(f.plugin, f.stage) for f in catalog.failures] == [("m\\xe9", "import")]
    for f in catalog.failures:
        codec.bot_load_failure_message(BotLoadFailure(f.plugin, f.stage, f.summary)).SerializeToString()


def test_an_allowlisted_name_given_as_a_module_to_load_is_not_called_missing():
    """The arena's --plugin mybot beside CARDGAMES_BOT_PLUGINS=mybot (to keep the other
    installed plugins out): mybot loads from its module, it is neither warned about nor a
    load failure."""
    with capture_logs() as logs:
        catalog = load_catalog(PluginSettings.resolve(extra=["tests.plugins.bad_bots"],
                                                      environ={ENV_ALLOWLIST: "tests.plugins.bad_bots"}))
    assert "sleeps" in catalog.names()
    assert not [e for e in logs if e["event"] == "bot_plugins_not_installed"]
    assert catalog.failures == []
    # nor is a plugin given as an object, named as it registers: a module by its __name__,
    # another object by its class's name
    import types

    module = types.ModuleType("object_plugin")
    exec("from engine_service.plugins import BotSpec\n"
         "def cardgames_bots():\n    return [BotSpec('from-module-object', lambda game_id: None)]\n",
         module.__dict__)
    catalog = load_catalog(PluginSettings.resolve(extra=[module, broken_plugins.ReturnsNothing()],
                                                  environ={ENV_ALLOWLIST: "object_plugin,ReturnsNothing"}))
    assert {"object_plugin", "ReturnsNothing"} <= set(catalog.plugins) and catalog.failures == []


def test_a_plugin_whose_import_or_hook_hangs_is_left_out_after_the_time_limit():
    """The load time limit interrupts a sleeping import and a hook waiting on a lock: both are
    failures with a reason that says so, the other plugins load, and the limit's signal
    handler and timer are put back as they were."""
    before = signal.getsignal(signal.SIGALRM)
    started = time.monotonic()
    with capture_logs() as logs:
        catalog = load_catalog(PluginSettings.resolve(
            extra=["tests.plugins.slow_import", broken_plugins.HookHangs(), "tests.plugins.bad_bots"],
            environ={}, load_timeout_s=0.5))
    assert time.monotonic() - started < 60  # a hang guard only: the reasons below say the limit ended them
    failed = {(f.plugin, f.stage): f for f in catalog.failures}
    assert set(failed) == {("tests.plugins.slow_import", "import"), ("HookHangs", "hook")}, failed
    for f in failed.values():
        assert f.error == f.summary and f.error.startswith("timed out: not done within 0.5 s"), f
    assert "tests.plugins.slow_import" not in sys.modules  # unwound as a failed import is
    assert "sleeps" in catalog.names() and "never-here" not in catalog.names()
    assert len([e for e in logs if e["event"] == "bot_plugin_failed"]) == 2
    assert signal.getsignal(signal.SIGALRM) is before


def test_a_timer_the_caller_armed_is_put_back_with_the_time_it_had_left():
    """pytest-timeout arms SIGALRM for every test: the limit runs inside it and re-arms it."""
    fired: list[int] = []
    previous = signal.signal(signal.SIGALRM, lambda *_: fired.append(1))
    try:
        signal.setitimer(signal.ITIMER_REAL, 100.0)
        catalog = load_catalog(PluginSettings.resolve(extra=["tests.plugins.slow_import"], environ={},
                                                      load_timeout_s=0.3))
        assert [f.stage for f in catalog.failures] == ["import"] and not fired
        left = signal.getitimer(signal.ITIMER_REAL)[0]
        assert 90 < left < 100, left
        signal.setitimer(signal.ITIMER_REAL, 0.05)  # and it is the caller's handler again
        time.sleep(0.2)
        assert fired == [1]
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


@contextlib.contextmanager
def _callers_timer(delay: float, handler):
    """SIGALRM handled by ``handler`` and the real timer armed at ``delay`` (0: disarmed) for the
    body; pytest-timeout's own handler and timer (armed for every test) are put back after."""
    outer_handler = signal.signal(signal.SIGALRM, handler)
    outer_delay, outer_interval = signal.setitimer(signal.ITIMER_REAL, delay)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, outer_handler)
        if outer_delay:
            signal.setitimer(signal.ITIMER_REAL, outer_delay, outer_interval)


def test_a_time_limit_expiring_as_it_is_disarmed_interrupts_nothing(monkeypatch):
    """The limit's timer going off while the body's end disarms it (each time the timer is
    stopped, here) comes too late: the body finished in time, so nothing is interrupted, and
    the caller's handler is back afterwards (time_limit: "a late signal raises nothing")."""
    real_setitimer = signal.setitimer
    late = []

    def setitimer(which, seconds, *interval):
        if which == signal.ITIMER_REAL and seconds == 0 and signal.getsignal(signal.SIGALRM) is not before:
            late.append(seconds)
            signal.raise_signal(signal.SIGALRM)  # our handler runs here, before the timer stops
        return real_setitimer(which, seconds, *interval)

    before = signal.getsignal(signal.SIGALRM)
    monkeypatch.setattr(signal, "setitimer", setitimer)
    with time_limit(30.0):
        done = True
    assert done and late and signal.getsignal(signal.SIGALRM) is before


def test_a_time_limit_expiring_as_the_body_ends_interrupts_nothing():
    """The timer going off between the body's end and its disarming (here: as ``disarm`` is
    called) comes too late as well: nothing is interrupted, the timer is stopped and the
    caller's handler is back (time_limit disarms a second time, which then runs through)."""
    before = signal.getsignal(signal.SIGALRM)
    outer_delay = signal.getitimer(signal.ITIMER_REAL)[0]  # pytest-timeout's, if it armed one
    late = []

    def tracer(frame, event, arg):
        if event == "call" and frame.f_code.co_name == "disarm" and not late:
            late.append(frame.f_code.co_name)
            signal.raise_signal(signal.SIGALRM)  # our handler raises here, before disarm runs
        return None

    old_trace = sys.gettrace()
    try:
        with time_limit(30.0):
            sys.settrace(tracer)
            done = True
    finally:
        sys.settrace(old_trace)
    assert done and late == ["disarm"]
    assert signal.getsignal(signal.SIGALRM) is before
    left = signal.getitimer(signal.ITIMER_REAL)[0]
    assert left == 0 if outer_delay == 0 else 0 < left <= outer_delay


def test_the_load_time_limit_applies_when_no_timer_is_armed():
    """The engine arms no timer before it loads its plugins (every test runs under
    pytest-timeout's): a hook that takes too long is interrupted then too."""

    class TooSlow:
        @hookimpl
        def cardgames_bots(self):
            time.sleep(30)  # a hang guard: interrupted long before, as the failure below says
            return [BotSpec("too-slow", lambda game_id: None)]

    with _callers_timer(0, signal.SIG_DFL):
        catalog = load_catalog(PluginSettings.resolve(extra=[TooSlow(), "tests.plugins.bad_bots"], environ={},
                                                      load_timeout_s=0.3))
        assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)  # and none is left armed
    assert [(f.plugin, f.stage) for f in catalog.failures] == [("TooSlow", "hook")]
    assert catalog.failures[0].error.startswith("timed out: not done within 0.3 s")
    assert "sleeps" in catalog.names() and "too-slow" not in catalog.names()


def test_a_timer_the_caller_armed_due_within_the_limit_fires_on_time():
    """A caller's timer due before the load time limit keeps its handler and its time: the
    limit does not apply (its signal is the caller's), rather than postponing the caller's
    alarm to the end of the plugin's hook, or taking it for the limit's."""

    fired: list[float] = []

    class WaitsForTheCallersAlarm:
        @hookimpl
        def cardgames_bots(self):
            guard = time.monotonic() + 30
            while not fired and time.monotonic() < guard:
                time.sleep(0.01)
            return [BotSpec("after-the-alarm", lambda game_id: None)]

    with _callers_timer(0.2, lambda *_: fired.append(time.monotonic())):
        catalog = load_catalog(PluginSettings.resolve(extra=[WaitsForTheCallersAlarm()], environ={},
                                                      load_timeout_s=5.0))
    assert len(fired) == 1 and catalog.failures == [] and "after-the-alarm" in catalog.names()


class _SwallowsTheInterruption:
    """A hook whose bare ``except`` swallows the load time limit's interruption and then goes on
    past the time a caller's timer was due (docs/bots.md: such a hook is not stopped)."""

    __name__ = "SwallowsTheInterruption"

    @hookimpl
    def cardgames_bots(self):
        try:
            time.sleep(30)  # a hang guard: interrupted at the limit
        except BaseException:  # noqa: BLE001 - the plugin's mistake this test is about
            time.sleep(0.5)
        return [BotSpec("swallower", lambda game_id: None)]


@pytest.mark.parametrize("plugin, loads", [(broken_plugins.HookHangs(), False), (_SwallowsTheInterruption(), True)])
def test_a_callers_timer_due_soon_after_the_limit_still_fires(plugin, loads):
    """A caller's timer due under a second from now, but after the load time limit, is put
    back with no more than it had left, and fires, even when it came due during a hook that
    overran the limit: however little time it has left, it is never dropped."""
    fired: list[int] = []
    with _callers_timer(0.5, lambda *_: fired.append(1)):
        catalog = load_catalog(PluginSettings.resolve(extra=[plugin], environ={}, load_timeout_s=0.2))
        assert 0 < signal.getitimer(signal.ITIMER_REAL)[0] <= 0.5 or fired
        guard = time.monotonic() + 30
        while not fired and time.monotonic() < guard:
            time.sleep(0.01)
    assert fired == [1]
    assert ("swallower" in catalog.names()) is loads and bool(catalog.failures) is not loads


def test_the_load_time_limit_leaves_a_plugin_in_time_alone_and_applies_in_the_main_thread_only():
    catalog = load_catalog(PluginSettings.resolve(extra=["tests.plugins.bad_bots"], environ={},
                                                  load_timeout_s=5.0))
    assert "sleeps" in catalog.names() and not catalog.failures
    # only the main thread gets signals: elsewhere there is no limit (and no signal handler
    # set from a thread, which Python refuses)
    out: list = []
    thread = threading.Thread(target=lambda: out.append(load_catalog(PluginSettings.resolve(
        extra=[broken_plugins.SlowHook()], environ={}, load_timeout_s=0.1))))
    thread.start()
    thread.join(30)
    assert out and "slow-hook" in out[0].names() and not out[0].failures


def test_the_hook_may_return_any_iterable_of_bot_specs_but_not_a_string_a_mapping_or_one_spec():
    """docs/bots.md: a list, a tuple or a generator; None is no bots. A string, bytes (a
    ``bytearray`` too) or a mapping (whose items are characters, byte values, keys) and a lone BotSpec are refused whole, saying what was
    returned: before, a string was refused character by character and a lone spec as a
    TypeError in the engine's own code."""

    def plugin(name, returns):
        return type(name, (), {"cardgames_bots": hookimpl(staticmethod(returns))})()

    def generator():
        yield BotSpec("from-generator", lambda g: None)

    def breaks():
        yield BotSpec("before-break", lambda g: None)
        raise RuntimeError("broke after one")

    extras = [plugin("Generator", generator), plugin("Tuple", lambda: (BotSpec("from-tuple", lambda g: None),)),
              plugin("Nothing", lambda: None), plugin("Text", lambda: "random"),
              plugin("Mapping", lambda: {BotSpec("from-dict", lambda g: None): 1}),
              plugin("Lone", lambda: BotSpec("lone", lambda g: None)), plugin("Number", lambda: 5),
              plugin("Breaks", breaks), plugin("Bytes", lambda: b"random"),
              plugin("ByteArray", lambda: bytearray(b"random"))]
    with capture_logs() as logs:
        catalog = load_catalog(PluginSettings.resolve(extra=extras, environ={}))
    # a refused answer is a failure only, not also a plugin "offering no bots" (that is None's)
    assert [e["plugin"] for e in logs if e["event"] == "bot_plugin_offers_no_bots"] == ["Nothing"]
    assert {"from-generator", "from-tuple"} <= set(catalog.names())
    assert not {"from-dict", "lone", "before-break"} & set(catalog.names())
    failed = {f.plugin: (f.stage, f.summary) for f in catalog.failures}
    assert failed == {
        "Text": ("hook", "cardgames_bots returned str, not an iterable of BotSpec"),
        "Mapping": ("hook", "cardgames_bots returned dict, not an iterable of BotSpec"),
        "Lone": ("hook", "cardgames_bots returned a BotSpec, not an iterable of BotSpec (return [spec])"),
        "Number": ("hook", "cardgames_bots returned int, not an iterable of BotSpec"),
        "Breaks": ("hook", failed["Breaks"][1]),
        "Bytes": ("hook", "cardgames_bots returned bytes, not an iterable of BotSpec"),
        "ByteArray": ("hook", "cardgames_bots returned bytearray, not an iterable of BotSpec"),
    }, failed
    assert failed["Breaks"][1].startswith("RuntimeError at test_manager.py:"), failed["Breaks"]


def test_a_signal_handler_python_did_not_install_is_put_back_as_the_default(monkeypatch):
    """signal.signal answers None for a handler set by C code, and refuses None back."""
    real = signal.signal
    calls: list = []

    def from_c_code(signum, handler):
        calls.append(handler)
        previous = real(signum, handler)
        return None if len(calls) == 1 else previous

    monkeypatch.setattr(signal, "signal", from_c_code)
    before = signal.getsignal(signal.SIGALRM)
    try:
        catalog = load_catalog(PluginSettings.resolve(extra=["tests.plugins.bad_bots"], environ={},
                                                      load_timeout_s=5.0))
        assert "sleeps" in catalog.names()
        assert calls[-1] is signal.SIG_DFL
    finally:
        real(signal.SIGALRM, before)


def test_a_spec_whose_games_raise_is_refused_and_a_hook_offering_nothing_is_warned():
    """A spec whose ``games`` generator raises (the plugin's code, run as the engine reads the
    spec) is refused as that spec alone, by type and place in ListBots, and the start goes
    on (it escaped load_catalog and stopped the engine); a hook that returns nothing (a
    forgotten ``return``) gets a ``bot_plugin_offers_no_bots`` warning, not silence."""
    extras = [broken_plugins.GamesRaise(), broken_plugins.ReturnsNothing()]
    with capture_logs() as logs:
        catalog = load_catalog(PluginSettings.resolve(extra=extras, environ={}))
    failure = next(f for f in catalog.failures if f.plugin == "GamesRaise")
    assert failure.stage == "spec" and "listing its games raised KeyError" in failure.summary
    assert "secret" not in failure.summary
    assert "after-games-raise" in catalog.names() and "games-raise" not in catalog.names()
    warned = [e for e in logs if e["event"] == "bot_plugin_offers_no_bots"]
    assert [(e["plugin"], e["returned"], e["log_level"]) for e in warned] == [("ReturnsNothing", "NoneType", "warning")]
    assert not any(f.plugin == "ReturnsNothing" for f in catalog.failures)


def test_listbots_reasons_name_a_plugins_file_not_its_path_on_the_host():
    """pluggy names a refused plugin by its repr: a module's holds the absolute path of its
    file, which ListBots told anyone who asked (the log line keeps it whole)."""
    import types

    module = types.ModuleType("pathplugin")
    module.__file__ = "/srv/private/site-packages/pathplugin.py"
    exec("def cardgames_bot():\n    return []\n", module.__dict__)
    catalog = load_catalog(PluginSettings.resolve(extra=[module, broken_plugins.MisspelledHook()],
                                                  environ={}))
    failed = {f.plugin: f for f in catalog.failures}
    assert set(failed) == {"pathplugin", "MisspelledHook"}, failed
    assert failed["pathplugin"].summary == ("PluginValidationError: unknown hook 'cardgames_bot' in "
                                            "plugin <module 'pathplugin' from 'pathplugin.py'>")
    assert "/srv/private/site-packages/pathplugin.py" in failed["pathplugin"].error  # the log's
    assert " at 0x" not in failed["MisspelledHook"].summary
    # the address goes, the rest of the object's repr stays as it was
    assert failed["MisspelledHook"].summary == ("PluginValidationError: unknown hook 'cardgames_bot' in "
                                                "plugin <tests.plugins.broken_plugins.MisspelledHook object>")


def test_a_hook_that_exits_or_raises_a_base_exception_is_a_failure_not_the_end_of_the_load():
    """A plugin's import that calls sys.exit() was a failure like any other, its hook's ended
    the engine's start (and the workers' zygote)."""

    class Custom(BaseException):
        pass

    def exits():
        raise SystemExit("bye")

    def custom():
        raise Custom()

    def plugin(name, hook):
        return type(name, (), {"cardgames_bots": hookimpl(staticmethod(hook))})()

    catalog = load_catalog(PluginSettings.resolve(extra=[plugin("Exits", exits), plugin("Custom", custom),
                                                         "tests.plugins.bad_bots"], environ={}))
    failed = {f.plugin: (f.stage, f.summary) for f in catalog.failures}
    assert failed["Exits"][0] == "hook" and failed["Exits"][1].startswith("SystemExit at test_manager.py:")
    assert failed["Custom"][0] == "hook" and failed["Custom"][1].startswith("Custom at test_manager.py:")
    assert "sleeps" in catalog.names()


def test_a_spec_whose_games_generator_raises_is_refused_alone():
    """BotSpec.games may be any iterable: one that raised while the engine listed it escaped
    the load (the engine's start ended); its message, the plugin's, is not repeated."""

    def games():
        yield "klaberjass"
        raise RuntimeError("secret-in-message")

    class Plugin:
        @hookimpl
        def cardgames_bots(self):
            return [BotSpec("bad-games", lambda g: None, games=games()),
                    BotSpec("good-one", lambda g: None, games=("klaberjass",))]

    catalog = load_catalog(PluginSettings.resolve(extra=[Plugin()], environ={}))
    assert "good-one" in catalog.names() and "bad-games" not in catalog.names()
    assert [(f.plugin, f.stage, f.summary) for f in catalog.failures] == [
        ("Plugin", "spec", "ValueError: bot 'bad-games': listing its games raised RuntimeError")]


def test_a_spec_whose_description_is_not_a_string_is_refused_alone():
    """ListBots puts the description in a string field: a number there made every ListBots
    call fail (INTERNAL), for every caller."""
    from engine_service.sessions.api import BotInfo
    from engine_service.transport.codec import bot_message  # ListBots' encoding of a bot

    class Plugin:
        @hookimpl
        def cardgames_bots(self):
            return [BotSpec("numbered", lambda g: None, description=5),
                    BotSpec("surrogate", lambda g: None, description="a\ud800b"),
                    BotSpec("worded", lambda g: None, description="plays"),
                    # megabytes: every ListBots reply, larger than the engine sends (4 MiB)
                    BotSpec("wordy", lambda g: None, description="d" * 5_000_000),
                    BotSpec("full", lambda g: None, description="d" * 1000),
                    BotSpec("one-more", lambda g: None, description="d" * 1001)]

    catalog = load_catalog(PluginSettings.resolve(extra=[Plugin()], environ={}))
    assert "worded" in catalog.names() and "full" in catalog.names() and "numbered" not in catalog.names()
    assert [(f.stage, f.summary) for f in catalog.failures] == [
        ("spec", "TypeError: bot 'numbered': description must be a string, not int"),
        ("spec", "ValueError: bot 'surrogate': description is not valid text (a lone surrogate)"),
        ("spec", "ValueError: bot 'wordy': description is 5000000 characters, more than 1000"),
        ("spec", "ValueError: bot 'one-more': description is 1001 characters, more than 1000")]
    for name in catalog.names():  # every listed bot encodes
        spec = catalog.entries[name].spec
        bot_message(BotInfo(name=name, games=(), description=spec.description, plugin=""))


def test_a_spec_whose_factory_is_not_callable_is_refused_alone():
    """``factory(game_id)`` makes the bot (docs/bots.md): one that is no function would fail
    only at the bot's first decision in a match, in a worker, as a bot failure falling back to
    the auto-move, in every match that seats it. It is refused at load instead, naming the bot,
    and the plugin's other bots load."""

    class Plugin:
        @hookimpl
        def cardgames_bots(self):
            return [BotSpec("no-factory", None), BotSpec("a-string", "bot_plugins.random_bot"),
                    BotSpec("callable", lambda g: None)]

    catalog = load_catalog(PluginSettings.resolve(extra=[Plugin()], environ={}))
    assert "callable" in catalog.names()
    assert "no-factory" not in catalog.names() and "a-string" not in catalog.names()
    assert [(f.plugin, f.stage, f.summary) for f in catalog.failures] == [
        ("Plugin", "spec", "TypeError: bot 'no-factory': factory is not callable"),
        ("Plugin", "spec", "TypeError: bot 'a-string': factory is not callable")]


def test_a_hooks_own_options_are_kept_and_a_cardgames_value_that_is_no_function_is_no_hook():
    """A ``cardgames_*`` function is a hook even without ``@hookimpl``; one marked keeps the
    options it was marked with: ``optionalhook`` (a plugin written for a newer engine, with a
    hook this one lacks, still loads) and ``specname`` (a differently named function
    implements ``cardgames_bots``). A ``cardgames_*`` value that is no function (a module's
    constant) is no hook, and no reason to refuse the plugin."""

    class Newer:
        cardgames_plugin_version = 2

        @hookimpl(optionalhook=True)
        def cardgames_hook_of_a_later_engine(self):
            return None

        @hookimpl(specname="cardgames_bots")
        def cardgames_offered_bots(self):
            return [BotSpec("newer", lambda game_id: None)]

    catalog = load_catalog(PluginSettings.resolve(extra=[Newer()], environ={}))
    assert catalog.failures == [] and catalog.entries["newer"].plugin == "Newer"


def test_a_cardgames_hook_served_by_a_property_is_not_silently_ignored():
    """Whatever pluggy makes of a ``cardgames_*`` property that hands out a function (an older
    pluggy calls it, pluggy 1.7 refuses to bind it), the plugin either offers its bot or is a
    load failure: never a plugin that loads offering nothing, without a word."""

    class Property:
        @property
        def cardgames_bots(self):
            return lambda: [BotSpec("from-property", lambda game_id: None)]

    catalog = load_catalog(PluginSettings.resolve(extra=[Property()], environ={}))
    failed = [f.stage for f in catalog.failures if f.plugin == "Property"]
    assert ("from-property" in catalog.names()) != bool(failed), (catalog.names(), catalog.failures)


def test_only_a_named_module_that_did_not_load_is_a_usage_error():
    """``--plugin`` (the arena, ``clients.remote_bot``): a named module that failed to import,
    register, validate or run its hook stops the command (PluginNotLoaded), said by its
    ListBots summary (the plugin's message left out); a named module whose hook ran but one
    of whose specs was refused loaded (its other bots did), and another plugin's failure,
    an installed entry point's, is no usage error of the command."""
    named = ["tests.plugins.bad_bots", "ReturnsGarbage"]
    broken = {"tests.plugins.import_fails": "import", "WrongArguments": "register",
              "MisspelledHook": "validate", "HookRaises": "hook"}
    catalog = load_catalog(PluginSettings.resolve(
        extra=[named[0], broken_plugins.ReturnsGarbage(), "tests.plugins.import_fails",
               broken_plugins.WrongArguments(), broken_plugins.MisspelledHook(), broken_plugins.HookRaises()],
        environ={}))
    assert {(f.plugin, f.stage) for f in catalog.failures} == {("ReturnsGarbage", "spec"), *broken.items()}
    check_named_plugins(named, catalog)  # nothing to say: the spec refusals and the others' failures
    for plugin, stage in broken.items():
        with pytest.raises(PluginNotLoaded) as refused:
            check_named_plugins([*named, plugin], catalog)
        assert str(refused.value).startswith(f"--plugin {plugin} did not load ({stage}): ")
    with pytest.raises(PluginNotLoaded) as refused:
        check_named_plugins(["HookRaises"], catalog)
    assert str(refused.value).startswith("--plugin HookRaises did not load (hook): RuntimeError at broken_plugins.py:")
    assert "plugin bug" not in str(refused.value)


def test_no_load_time_limit_arms_no_timer():
    """``load_timeout_s=None``: no limit, and the SIGALRM handler stays the caller's."""
    before = signal.getsignal(signal.SIGALRM)
    catalog = load_catalog(PluginSettings.resolve(extra=["tests.plugins.bad_bots", broken_plugins.SlowHook()],
                                                  environ={}, load_timeout_s=None))
    assert {"sleeps", "slow-hook"} <= set(catalog.names()) and catalog.failures == []
    assert signal.getsignal(signal.SIGALRM) is before


def test_a_refusals_reason_is_capped_at_500_characters():
    """A refusal's text is logged and sent by ListBots whole up to 500 characters, and cut to
    497 and "..." beyond: a bot name of 100,000 characters, quoted in its reason, would
    otherwise make a log line and every ListBots reply that long."""
    from engine_service.plugins.manager import _describe

    class Long:
        @hookimpl
        def cardgames_bots(self):
            return [BotSpec("x" * 100_000, lambda game_id: None), BotSpec("fine", lambda game_id: None)]

    catalog = load_catalog(PluginSettings.resolve(extra=[Long()], environ={}))
    [failure] = catalog.failures
    assert failure.error == failure.summary == "ValueError: bad bot name '" + "x" * (497 - len("bad bot name '")) + "..."
    assert "fine" in catalog.names()
    assert _describe(ValueError("a" * 500)) == "ValueError: " + "a" * 500  # at the cap: whole
    assert _describe(ValueError("a" * 501)) == "ValueError: " + "a" * 497 + "..."
    assert _describe(RuntimeError()) == "RuntimeError"  # no message: the type alone


def test_a_multi_line_refusal_is_one_line_its_lines_joined_by_a_bar():
    """pluggy says why it refuses a hook on the later lines of its message ("Argument(s)
    {'bogus'} are declared in the hookimpl but can not be found in the hookspec"): the reason
    is logged and sent by ListBots as one line, each line kept and joined by " | ", so that
    neither a log line nor a ListBots reply is cut at its first newline."""

    class AsksTooMuch:
        @hookimpl
        def cardgames_bots(self, bogus):
            return []

    catalog = load_catalog(PluginSettings.resolve(extra=[AsksTooMuch()], environ={}))
    [failure] = catalog.failures
    assert (failure.plugin, failure.stage) == ("AsksTooMuch", "register")
    assert "\n" not in failure.error and failure.error == failure.summary
    head, *lines = failure.error.split(" | ")
    assert head == "PluginValidationError: Plugin 'AsksTooMuch' for hook 'cardgames_bots'"
    assert len(lines) >= 2 and "bogus" in lines[-1] and all(line == line.strip() and line for line in lines)
    from engine_service.plugins.manager import _describe

    assert _describe(ValueError("first\n\n   \n  second  \n")) == "ValueError: first | second"  # no empty line


def test_a_plugin_that_does_not_compile_is_named_by_its_file_and_line_not_its_path(tmp_path, monkeypatch):
    """A SyntaxError's traceback ends in the import machinery: ListBots names the file that did
    not compile and its line (not the host's path to it, not the import system's frame). A
    SyntaxError or a ModuleNotFoundError the plugin's own code raised (with no file, no module
    name) is said by where it was raised, its message left out, as any exception of its."""
    (tmp_path / "uncompiled_plugin.py").write_text("from engine_service.plugins import hookimpl\n\ndef (:\n")
    monkeypatch.syspath_prepend(str(tmp_path))

    def raises(exc):
        def hook():
            raise exc
        return hook

    extras = ["uncompiled_plugin",
              type("Parses", (), {"cardgames_bots": hookimpl(staticmethod(raises(SyntaxError("token=s3cret"))))})(),
              type("Needs", (), {"cardgames_bots": hookimpl(staticmethod(raises(ModuleNotFoundError("s3cret"))))})()]
    catalog = load_catalog(PluginSettings.resolve(extra=extras, environ={}))
    summaries = {f.plugin: (f.stage, f.summary) for f in catalog.failures}
    assert summaries["uncompiled_plugin"] == ("import", "SyntaxError at uncompiled_plugin.py:3")
    assert summaries["Parses"][0] == "hook" and summaries["Parses"][1].startswith("SyntaxError at test_manager.py:")
    assert summaries["Needs"][0] == "hook" and summaries["Needs"][1].startswith("ModuleNotFoundError at test_manager.py:")
    assert not any("s3cret" in summary or str(tmp_path) in summary for _, summary in summaries.values())


def test_a_distribution_whose_metadata_cannot_be_read_still_loads(tmp_path, monkeypatch):
    """The distribution's name and version only label its plugin (``CatalogEntry.distribution``):
    a METADATA file that cannot be read (not UTF-8) leaves the label empty, it does not stop
    the load (the engine's start)."""
    info = tmp_path / "brokenmeta-0.1.dist-info"
    info.mkdir()
    (info / "entry_points.txt").write_text("[cardgames.bots]\nbrokenmeta = tests.plugins.bad_bots\n")
    (info / "METADATA").write_bytes(b"Metadata-Version: 2.1\nName: brokenmeta\nVersion: 0.1\xff\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    catalog = load_catalog(PluginSettings.resolve(environ={}))
    assert catalog.failures == []
    assert catalog.entries["sleeps"].plugin == "brokenmeta" and catalog.entries["sleeps"].distribution == ""
    assert catalog.entries["random"].distribution.startswith("cardgames-engine ")


def test_quiet_keeps_what_a_plugin_prints_off_the_streams_and_counts_it_per_plugin(tmp_path, monkeypatch, capsys):
    """``quiet`` (the engine's process, whose stdout and stderr carry its JSON log lines): what
    a plugin prints at import, in its hook and while its specs' games are read is discarded,
    and one ``bot_plugin_output_discarded`` warning per plugin that printed says how much went
    to each stream. Without ``quiet`` (the arena, remote_bot) it shows where its author looks."""
    (tmp_path / "printing_plugin.py").write_text(
        "import sys\nfrom engine_service.plugins import BotSpec, hookimpl\n"
        "print('import-out')\n\n"
        "def games():\n    print('games')\n    yield 'klaberjass'\n\n"
        "@hookimpl\ndef cardgames_bots():\n    print('hook-err', file=sys.stderr)\n"
        "    return [BotSpec('printer', lambda game_id: None, games=games())]\n")
    (tmp_path / "second_printer.py").write_text(  # a second plugin that prints: its own warning
        "from engine_service.plugins import BotSpec, hookimpl\nprint('second')\n\n"
        "@hookimpl\ndef cardgames_bots():\n    return [BotSpec('second-printer', lambda game_id: None)]\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with capture_logs() as logs:
        catalog = load_catalog(PluginSettings.resolve(
            extra=["printing_plugin", "tests.plugins.bad_bots", "second_printer"], environ={}), quiet=True)
    sys.modules.pop("second_printer")
    assert {"printer", "sleeps", "second-printer"} <= set(catalog.names()) and catalog.failures == []
    assert capsys.readouterr() == ("", "")
    said = [(e["plugin"], e["stdout_chars"], e["stderr_chars"], e["log_level"])
            for e in logs if e["event"] == "bot_plugin_output_discarded"]
    assert said == [("printing_plugin", len("import-out\ngames\n"), len("hook-err\n"), "warning"),
                    ("second_printer", len("second\n"), 0, "warning")]
    sys.modules.pop("printing_plugin")
    with capture_logs() as logs:
        load_catalog(PluginSettings.resolve(extra=["printing_plugin"], environ={}))
    assert capsys.readouterr() == ("import-out\ngames\n", "hook-err\n")
    assert not [e for e in logs if e["event"] == "bot_plugin_output_discarded"]


def test_an_installed_plugin_that_fails_or_hangs_at_import_is_left_out_and_ctrl_c_is_not_swallowed(
        tmp_path, monkeypatch):
    """An entry point's import that raises, or hangs past the load time limit, is a failure
    (stage import) as a --plugin module's is, said in ListBots by type and place, the
    plugin's message left out; the other plugins load. A KeyboardInterrupt during an import
    (Ctrl-C at start-up) is the operator's, not a plugin failure: it ends the load."""
    _found_first(monkeypatch, [("fails", "tests.plugins.import_fails"), ("hangs", "tests.plugins.slow_import")])
    catalog = load_catalog(PluginSettings.resolve(environ={}, load_timeout_s=0.3))
    failed = {f.plugin: (f.stage, f.summary) for f in catalog.failures}
    assert failed == {"fails": ("import", "ImportError at import_fails.py:3 in <module>"),
                      "hangs": ("import", "timed out: not done within 0.3 s, the plugin load time limit "
                                          "(--bot-plugin-load-timeout-s)")}, failed
    assert {"random", "heuristic", "search"} <= set(catalog.plugins)
    (tmp_path / "interrupted_plugin.py").write_text("raise KeyboardInterrupt\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(KeyboardInterrupt):
        load_catalog(PluginSettings.resolve(autoload=False, extra=["interrupted_plugin"], environ={}))
    _found_first(monkeypatch, [("interrupted", "interrupted_plugin")])
    with pytest.raises(KeyboardInterrupt):
        load_catalog(PluginSettings.resolve(environ={}))

    def interrupted():
        raise KeyboardInterrupt

    hook = type("InterruptedHook", (), {"cardgames_bots": hookimpl(staticmethod(interrupted))})()
    with pytest.raises(KeyboardInterrupt):  # and in a hook
        load_catalog(PluginSettings.resolve(autoload=False, extra=[hook], environ={}))


def test_a_plugin_module_given_again_is_loaded_once_without_a_failure():
    """The arena's ``--plugin bot_plugins.heuristic`` names a module an installed entry point
    loads already (or a module named twice): it is one plugin, not a registration failure
    that check_named_plugins would make a usage error."""
    named = ["bot_plugins.heuristic", "tests.plugins.bad_bots", "tests.plugins.bad_bots"]
    catalog = load_catalog(PluginSettings.resolve(extra=named, environ={}))
    assert catalog.failures == [] and catalog.entries["heuristic"].plugin == "heuristic"
    assert "sleeps" in catalog.names()
    check_named_plugins(named, catalog)


def test_a_spec_whose_own_code_raises_as_it_is_read_is_refused_alone_without_its_message():
    """A spec's ``games`` is the plugin's object: one whose comparison raises (a game set
    class of its own) is that spec's failure, said by type and place; the load goes on."""

    class GameSet:
        def __iter__(self):
            return iter(("klaberjass",))

        def __eq__(self, other):
            raise RuntimeError("s3cret")

        __hash__ = None

    class Plugin:
        @hookimpl
        def cardgames_bots(self):
            return [BotSpec("own-games", lambda game_id: None, games=GameSet()),
                    BotSpec("plain-games", lambda game_id: None, games=("klaberjass",))]

    catalog = load_catalog(PluginSettings.resolve(extra=[Plugin()], environ={}))
    assert "plain-games" in catalog.names() and "own-games" not in catalog.names()
    [failure] = catalog.failures
    assert (failure.plugin, failure.stage) == ("Plugin", "spec")
    assert failure.summary.startswith("RuntimeError at test_manager.py:") and failure.summary.endswith(" in __eq__")
    assert "s3cret" in failure.error and "s3cret" not in failure.summary


def test_a_bot_name_is_at_most_64_characters_and_starts_with_a_letter_or_a_digit():
    """docs/bots.md (a spec's ``name``): lower-case letters, digits, ``-``, ``_``, starting with
    a letter or a digit, at most 64 characters. The longest name and one starting with a digit
    are listed; one character more, a leading ``-`` or ``_``, an upper-case letter or another
    character (``.``) is refused alone."""
    longest = "a" * 64

    class Names:
        @hookimpl
        def cardgames_bots(self):
            return [BotSpec(name, lambda game_id: None)
                    for name in (longest, "7-up", longest + "a", "-dash", "_under", "myBot", "my.bot")]

    catalog = load_catalog(PluginSettings.resolve(extra=[Names()], environ={}))
    assert {longest, "7-up"} <= set(catalog.names())
    assert not {longest + "a", "-dash", "_under", "myBot", "my.bot"} & set(catalog.names())
    assert sorted(f.summary.split("'")[1] for f in catalog.failures
                  if f.plugin == "Names" and f.stage == "spec") == sorted(
        ["-dash", "_under", longest + "a", "myBot", "my.bot"])


def test_a_game_id_with_a_trailing_newline_beside_a_known_one_is_no_id():
    """docs/bots.md: ``games`` lists game ids; a misspelt id beside known ones is kept with a
    warning, but one that is no id at all is refused with the bot (see the test above). An id
    followed by a newline is no id, as a bot name followed by one is no name: ``$`` alone
    matches before a final newline, and the bot was kept with the bad id beside the good. An
    empty string is no id either."""

    class Newline:
        @hookimpl
        def cardgames_bots(self):
            return [BotSpec("nl-game", lambda game_id: None, games=("klaberjass", "jojotte\n")),
                    BotSpec("empty-game", lambda game_id: None, games=("klaberjass", ""))]

    catalog = load_catalog(PluginSettings.resolve(extra=[Newline()], environ={}))
    assert "nl-game" not in catalog.names() and "empty-game" not in catalog.names()
    assert [(f.plugin, f.stage) for f in catalog.failures] == [("Newline", "spec")] * 2
    assert all("games must be a non-empty list of game ids" in f.error for f in catalog.failures)


def test_only_a_cardgames_underscore_name_is_a_hook_by_its_name():
    """hookspecs.py / docs/bots.md: a function named ``cardgames_*`` is a hook even without
    ``@hookimpl`` (checked against the hookspecs). A helper whose name only starts with
    ``cardgames`` (no underscore) is the plugin's own function, no reason to refuse it."""

    class Helper:
        def cardgamesutil(self):
            return None

        def cardgames_bots(self):
            return [BotSpec("helped", lambda game_id: None)]

    catalog = load_catalog(PluginSettings.resolve(extra=[Helper()], environ={}))
    assert catalog.failures == [] and catalog.entries["helped"].plugin == "Helper"


def test_a_cardgames_hook_served_by_a_cached_property_is_not_silently_ignored():
    """manager.py: a misspelt hook is a validation error rather than a silently ignored
    function. A ``functools.cached_property`` named ``cardgames_*`` is a descriptor whose value
    (here a list, not a function) is no hook: pluggy refuses the attribute, and the plugin is a
    load failure; read only through ``getattr``, it was skipped, the plugin loading with no bot
    and no word, whether the name was right or misspelt."""
    class Cached:
        @functools.cached_property
        def cardgames_bots(self):
            return [BotSpec("cached", lambda game_id: None)]

    class Misspelt:
        @functools.cached_property
        def cardgames_bot(self):
            return [BotSpec("misspelt", lambda game_id: None)]

    catalog = load_catalog(PluginSettings.resolve(extra=[Cached(), Misspelt()], environ={}))
    assert not {"cached", "misspelt"} & set(catalog.names())
    assert sorted(f.plugin for f in catalog.failures) == ["Cached", "Misspelt"], catalog.failures
    assert "Cached" not in catalog.plugins and "Misspelt" not in catalog.plugins


def test_a_plugin_with_a_refused_spec_is_named_loaded_and_failed_in_the_summary():
    """docs/bots.md: a spec refused alone (stage ``spec``) leaves the plugin's other bots
    loaded, "and ``bot_plugins_loaded`` names the plugin under both ``plugins`` and
    ``failed``"."""

    class HalfGood:
        @hookimpl
        def cardgames_bots(self):
            return [BotSpec("good-half", lambda game_id: None), BotSpec("Bad Half", lambda game_id: None)]

    with capture_logs() as logs:
        catalog = load_catalog(PluginSettings.resolve(autoload=False, extra=[HalfGood()], environ={}))
    assert "good-half" in catalog.names()
    [loaded] = [e for e in logs if e["event"] == "bot_plugins_loaded"]
    assert "HalfGood" in loaded["plugins"] and loaded["failed"] == ["HalfGood"], loaded
    assert "good-half" in loaded["bots"] and "Bad Half" not in loaded["bots"]


def test_a_failure_said_at_a_plugin_file_whose_name_is_not_utf8_is_one_listbots_can_send(tmp_path, monkeypatch):
    """ListBots names a plugin's own exception by type and place: the place's file name is the
    host's, and one with a byte that is not UTF-8 (a Latin-1 file system entry) comes as a lone
    surrogate, which protobuf cannot send: every ListBots failed, as for a plugin's name (the
    test above). The summary is said escaped, as the name is."""
    from engine_service.sessions.api import BotLoadFailure
    from engine_service.transport import codec

    path = os.path.join(os.fsencode(tmp_path), b"caf\xe9_plugin.py")
    with open(path, "wb") as out:
        out.write(b"from engine_service.plugins import hookimpl\n\n\n"
                  b"@hookimpl\ndef cardgames_bots():\n    raise RuntimeError('s3cret')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        catalog = load_catalog(PluginSettings.resolve(autoload=False, extra=["caf\udce9_plugin"], environ={}))
    finally:
        sys.modules.pop("caf\udce9_plugin", None)
    [failure] = catalog.failures
    assert (failure.plugin, failure.stage, failure.summary) == (
        "caf\\xe9_plugin", "hook", "RuntimeError at caf\\xe9_plugin.py:6 in cardgames_bots")
    codec.bot_load_failure_message(BotLoadFailure(failure.plugin, failure.stage, failure.summary)).SerializeToString()


def test_what_an_installed_plugin_prints_at_import_is_kept_off_the_streams_and_said(monkeypatch, tmp_path, capsys):
    """docs/operations.md, ``bot_plugin_output_discarded``: a plugin printed while the engine
    imported it or called its hook; one line per plugin that printed. An installed plugin (an
    entry point) is imported as a ``--plugin`` module is (the test of ``quiet`` above)."""
    (tmp_path / "printing_entry_point.py").write_text(
        "import sys\nprint('import-out')\nprint('import-err', file=sys.stderr)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    _found_first(monkeypatch, [("printing", "printing_entry_point")])
    try:
        with capture_logs() as logs:
            catalog = load_catalog(PluginSettings.resolve(environ={}), quiet=True)
    finally:
        sys.modules.pop("printing_entry_point", None)
    assert "printing" in catalog.plugins and capsys.readouterr() == ("", "")
    said = [(e["plugin"], e["stdout_chars"], e["stderr_chars"])
            for e in logs if e["event"] == "bot_plugin_output_discarded"]
    assert said == [("printing", len("import-out\n"), len("import-err\n"))]


@pytest.mark.parametrize("given", ["entry point", "--plugin module"])
def test_a_plugins_import_and_hook_each_run_under_the_settings_load_time_limit(monkeypatch, given):
    """docs/bots.md: a plugin's import, and then its ``cardgames_bots`` hook, may take at most
    ``--bot-plugin-load-timeout-s``: each runs with the real timer armed at that limit (2 s
    here), not at the 30 s default nor at more, whether the plugin is an installed entry point
    or a module given to load. (A hanging plugin's test would see a wrong limit only by
    waiting for it.)"""
    name = "tests.plugins.reads_its_time_limit"
    monkeypatch.delitem(sys.modules, name, raising=False)
    if given == "entry point":
        _found_first(monkeypatch, [("reads-its-limit", name)])
        settings = PluginSettings.resolve(environ={ENV_ALLOWLIST: "reads-its-limit"}, load_timeout_s=2.0)
    else:
        settings = PluginSettings.resolve(autoload=False, extra=[name], environ={}, load_timeout_s=2.0)
    with _callers_timer(0, signal.SIG_DFL):  # no caller's timer due first (pytest-timeout's)
        catalog = load_catalog(settings)
    module = sys.modules[name]
    assert "reads-its-limit" in catalog.names() and catalog.failures == []
    assert 1.0 < module.IMPORT_LIMIT <= 2.0, module.IMPORT_LIMIT
    assert len(module.HOOK_LIMITS) == 1 and 1.0 < module.HOOK_LIMITS[0] <= 2.0, module.HOOK_LIMITS


def test_a_callers_repeating_timer_is_put_back_with_the_time_it_had_left_and_its_interval():
    """time_limit: a timer the caller armed is put back afterwards with the time it had left,
    not the time it had when the limit began (here at least 0.3 s less), and still repeating at
    its own interval."""
    with _callers_timer(0, lambda *_: None):
        signal.setitimer(signal.ITIMER_REAL, 20.0, 7.0)
        with time_limit(10.0):
            assert 9.0 < signal.getitimer(signal.ITIMER_REAL)[0] <= 10.0  # the limit's, meanwhile
            time.sleep(0.3)
        left, interval = signal.getitimer(signal.ITIMER_REAL)
    assert 15.0 < left <= 19.7 and interval == 7.0, (left, interval)


def test_the_essential_random_plugin_registers_first_and_the_engines_other_plugins_next(monkeypatch):
    """docs/bots.md: "the essential ``random`` plugin is always loaded first and the engine's
    ``heuristic`` and ``search`` next", however sys.path orders their entry points (here the
    engine's own ``search`` and ``heuristic`` found first of all, before a third party's)."""
    _found_first(monkeypatch, [("aaa-plugin", "tests.plugins.klaberjass_only"),
                               ("search", "bot_plugins.search"), ("heuristic", "bot_plugins.heuristic")])
    catalog = load_catalog(PluginSettings.resolve(environ={}))
    order = list(catalog.plugins)
    assert order[0] == "random" and set(order[1:3]) == {"heuristic", "search"}, order
    assert "aaa-plugin" in order[3:]


def test_an_explicit_allowlist_wins_even_empty_and_an_explicit_environment_is_the_only_one(monkeypatch):
    """PluginSettings.resolve: "an explicit allowlist wins over CARDGAMES_BOT_PLUGINS", an empty
    one too (only the essential plugin loads); and ``environ`` given is the environment read,
    an empty one included, not the process's (which names an allowlist and the switch here)."""
    s = PluginSettings.resolve(allowlist=(), environ={ENV_ALLOWLIST: "heuristic"})
    assert s.allowlist == frozenset()
    catalog = load_catalog(s)
    assert set(catalog.plugins) == {"random"}
    monkeypatch.setenv(ENV_ALLOWLIST, "heuristic")
    monkeypatch.setenv(ENV_DISABLE_AUTOLOAD, "1")
    assert PluginSettings.resolve(environ={}) == PluginSettings()
    s = PluginSettings.resolve()  # the process's environment when none is given
    assert s.allowlist == frozenset({"heuristic"}) and s.autoload is False


class _Unprintable(Exception):
    """A plugin's exception whose message cannot be read: its ``__str__`` raises."""

    def __str__(self):
        raise RuntimeError("no message")


def test_a_plugin_exception_whose_message_cannot_be_read_is_a_failure_not_the_end_of_the_load(tmp_path, monkeypatch):
    """plugins.manager: a plugin that raises, at import, in its hook or as its games are read,
    is a ``bot_plugin_failed`` and left out, the others load (load_catalog "never raises for a
    plugin"). An exception whose ``__str__`` raises made reading its message raise out of the
    load, which ended the engine's start; it is said as Python's tracebacks say it."""

    class HookRaises:
        @hookimpl
        def cardgames_bots(self):
            raise _Unprintable()

    def games():
        raise _Unprintable()
        yield "klaberjass"

    class GamesRaise:
        @hookimpl
        def cardgames_bots(self):
            return [BotSpec("unprintable-games", lambda game_id: None, games=games()),
                    BotSpec("fine-games", lambda game_id: None)]

    (tmp_path / "unprintable_at_import.py").write_text(
        "class Unprintable(Exception):\n    def __str__(self):\n        raise RuntimeError('no message')\n\n\n"
        "raise Unprintable()\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with capture_logs() as logs:
        catalog = load_catalog(PluginSettings.resolve(
            autoload=False, extra=["unprintable_at_import", HookRaises(), GamesRaise(), "tests.plugins.bad_bots"],
            environ={}))
    assert {"sleeps", "fine-games"} <= set(catalog.names()) and "unprintable-games" not in catalog.names()
    failed = [(f.plugin, f.stage, f.error, f.summary.split(" at ")[0]) for f in catalog.failures]
    assert failed == [("unprintable_at_import", "import", "Unprintable: <exception str() failed>", "Unprintable"),
                      ("HookRaises", "hook", "_Unprintable: <exception str() failed>", "_Unprintable"),
                      ("GamesRaise", "spec", "ValueError: bot 'unprintable-games': listing its games raised _Unprintable",
                       "ValueError: bot 'unprintable-games': listing its games raised _Unprintable")], failed
    assert [e["error"] for e in logs if e["event"] == "bot_plugin_failed"] == [f.error for f in catalog.failures]


def test_a_time_limit_of_its_own_interruption_expiring_as_the_body_ends_interrupts_nothing():
    """time_limit's ``interruption`` (the runner's, for an in-process bot) is the one a timer
    going off as the body ends comes too late with: "it was in time", so nothing is raised, not
    only when the interruption is the plugin load's own."""
    class Late(BaseException):
        pass

    before = signal.getsignal(signal.SIGALRM)
    late = []

    def tracer(frame, event, arg):
        if event == "call" and frame.f_code.co_name == "disarm" and not late:
            late.append(frame.f_code.co_name)
            signal.raise_signal(signal.SIGALRM)  # our handler raises Late here, before disarm runs
        return None

    old_trace = sys.gettrace()
    try:
        with time_limit(30.0, Late):
            sys.settrace(tracer)
            done = True
    finally:
        sys.settrace(old_trace)
    assert done and late == ["disarm"] and signal.getsignal(signal.SIGALRM) is before


def test_the_catalog_names_its_bots_sorted_whatever_order_they_registered_in():
    """BotHost.bots (ListBots): "Installed bots, sorted by name"; the catalog gives the names
    in that order, though the essential ``random`` plugin registers first."""
    catalog = load_catalog(PluginSettings.resolve(environ={}))
    assert next(iter(catalog.entries)) == "random" and "heuristic" in catalog.entries
    assert catalog.names() == sorted(catalog.entries)


def test_an_installed_plugin_that_exits_at_import_is_left_out_not_the_end_of_the_load(tmp_path, monkeypatch):
    """docs/bots.md: a plugin that fails to import is left out and "the service starts without
    it": an entry point's module body that calls ``sys.exit`` (a SystemExit, no Exception)
    included, as a ``--plugin`` module's is."""
    (tmp_path / "exiting_plugin.py").write_text("import sys\nsys.exit('no token')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    _found_first(monkeypatch, [("exiting", "exiting_plugin")])
    catalog = load_catalog(PluginSettings.resolve(environ={}))
    assert [(f.plugin, f.stage, f.summary) for f in catalog.failures] == [
        ("exiting", "import", "SystemExit at exiting_plugin.py:2 in <module>")], catalog.failures
    assert "random" in catalog.entries and "exiting" not in catalog.plugins
    catalog = load_catalog(PluginSettings.resolve(autoload=False, extra=["exiting_plugin"], environ={}))
    assert [(f.plugin, f.stage) for f in catalog.failures] == [("exiting_plugin", "import")]
    assert "random" in catalog.entries


def test_listbots_reasons_cut_a_path_holding_a_quote_to_its_file_name_too():
    """docs/bots.md: a path pluggy's refusal names is cut to its file name in ListBots. A
    directory whose name holds an apostrophe (repr then quotes the path with double quotes) or
    a double quote was told whole to anyone who asked."""
    import types

    modules = []
    for name, path in (("apostrophe", "/srv/o'brien/site-packages/apostrophe.py"),
                       ("doublequote", '/srv/a"b/c\'d/doublequote.py')):
        module = types.ModuleType(name)
        module.__file__ = path
        exec("def cardgames_bot():\n    return []\n", module.__dict__)
        modules.append(module)
    catalog = load_catalog(PluginSettings.resolve(autoload=False, extra=modules, environ={}))
    summaries = {f.plugin: f.summary for f in catalog.failures}
    assert summaries == {
        "apostrophe": "PluginValidationError: unknown hook 'cardgames_bot' in plugin "
                      "<module 'apostrophe' from \"apostrophe.py\">",
        "doublequote": "PluginValidationError: unknown hook 'cardgames_bot' in plugin "
                       "<module 'doublequote' from 'doublequote.py'>"}, summaries
    assert all("/srv/" in f.error for f in catalog.failures)  # the log's, whole


def test_a_hook_returning_an_empty_list_is_warned_as_offering_no_bots():
    """docs/operations.md: ``bot_plugin_offers_no_bots``, a hook that returned ``None`` "or
    nothing": an empty list or a generator that yields nothing is warned about as ``None`` is."""

    class Empty:
        @hookimpl
        def cardgames_bots(self):
            return []

    class YieldsNothing:
        @hookimpl
        def cardgames_bots(self):
            yield from ()

    with capture_logs() as logs:
        catalog = load_catalog(PluginSettings.resolve(autoload=False, extra=[Empty(), YieldsNothing()], environ={}))
    warned = [(e["plugin"], e["returned"], e["log_level"]) for e in logs if e["event"] == "bot_plugin_offers_no_bots"]
    assert warned == [("Empty", "list", "warning"), ("YieldsNothing", "generator", "warning")], warned
    assert {"Empty", "YieldsNothing"} <= set(catalog.plugins) and catalog.failures == []


def test_quiet_counts_what_a_plugin_printed_before_its_import_failed(tmp_path, monkeypatch, capsys):
    """load_catalog ``quiet``: each plugin that printed is named in a
    ``bot_plugin_output_discarded`` warning with the size of its output, one whose import then
    raised as well (its output is discarded all the same)."""
    (tmp_path / "prints_then_fails.py").write_text("import sys\nprint('out')\nprint('err', file=sys.stderr)\n"
                                                   "raise RuntimeError('broken')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with capture_logs() as logs:
        catalog = load_catalog(PluginSettings.resolve(autoload=False, extra=["prints_then_fails"], environ={}),
                               quiet=True)
    assert [(f.plugin, f.stage) for f in catalog.failures] == [("prints_then_fails", "import")]
    assert capsys.readouterr() == ("", "")
    said = [(e["plugin"], e["stdout_chars"], e["stderr_chars"]) for e in logs
            if e["event"] == "bot_plugin_output_discarded"]
    assert said == [("prints_then_fails", len("out\n"), len("err\n"))], said
