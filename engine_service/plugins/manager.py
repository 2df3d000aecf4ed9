"""Loading bot plugins and the catalog of the bots they offer.

This is where the plugin *policy* lives (pytest's model, aesthetics.md section 2):

* the entry-point group ``cardgames.bots`` is loaded unless autoloading is disabled
  (``autoload=False`` or ``CARDGAMES_DISABLE_PLUGIN_AUTOLOAD=1``);
* an allowlist (``allowlist=`` or ``CARDGAMES_BOT_PLUGINS=a,b``) restricts which entry points
  load, by entry-point name;
* *essential* plugins (:data:`ESSENTIAL_PLUGINS`: the ``random`` bot, always there for a bot
  seat or ``--takeover-bot random``) are loaded from their entry point even when autoloading
  is off or the allowlist leaves them out;
* ``extra`` names modules (or passes objects) to register directly: the ``--plugin`` flag of
  the arena and ``clients/remote_bot.py``, and tests;
* every plugin is loaded, validated (``check_pending`` per plugin, so that a misspelled hook is
  caught and blamed on its plugin) and asked for its bots on its own: one that fails to
  import, fails validation, raises, or returns something that is not an iterable of
  :class:`BotSpec` is logged as ``bot_plugin_failed`` and left out; the others load;
* a plugin's import and its hook each have a time limit (``load_timeout_s``): one that hangs
  (a network call without a timeout) is interrupted and fails like the others, so that the
  service starts without it.

Functions named ``cardgames_*`` are hook implementations even without ``@hookimpl`` (as
``pytest_*`` functions are for pytest), so a misspelled hook name is a validation error rather
than a silently ignored function.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.metadata
import inspect
import io
import os
import re
import signal
import threading
import time
from dataclasses import dataclass, field, replace
from typing import Any, Iterable, Iterator, Mapping, Sequence

import pluggy
import structlog

from ..rules import all_game_ids
from . import hookspecs
from .hookspecs import ENTRY_POINT_GROUP, PROJECT
from .protocol import ALL_GAMES, BotSpec

log = structlog.get_logger("engine_service.plugins")

ENV_DISABLE_AUTOLOAD = "CARDGAMES_DISABLE_PLUGIN_AUTOLOAD"
ENV_ALLOWLIST = "CARDGAMES_BOT_PLUGINS"
ESSENTIAL_PLUGINS = frozenset({"random"})
"""Entry-point names loaded even when autoloading is disabled or not allowlisted."""
SHIPPED_MODULES = {"random": "bot_plugins.random_bot", "heuristic": "bot_plugins.heuristic",
                   "search": "bot_plugins.search"}
"""The module each of the engine's own entry points names in its package: an entry point of
another distribution under one of these names never replaces it, whatever ``sys.path`` finds
first, and the engine's plugins register before any other, so that their bots' names are
theirs (a bot seat, a takeover or an arena naming ``random``, ``heuristic`` or ``search``
must get the real one, not a package that happened to be found first)."""

LOAD_TIMEOUT_S = 30.0
"""How long one plugin's import, and then its ``cardgames_bots`` hook, may take by default
(``SessionConfig.bot_plugin_load_timeout_s``, ``--bot-plugin-load-timeout-s``)."""

BOT_NAME_RE = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$")
#: The longest bot description accepted (ListBots sends them all in one reply).
MAX_DESCRIPTION_CHARS = 1000
GAME_ID_RE = re.compile(r"^[a-z0-9_]+$")


_YES, _NO = ("1", "true", "yes", "on"), ("", "0", "false", "no", "off")


def _env_flag(value: str | None, name: str) -> bool:
    """A yes/no environment variable; any other value is a ValueError naming it. A switch that
    turns third-party code off must not stay on for a value it does not know: ``=y`` or
    ``=disable`` left every installed plugin autoloading, without a word."""
    text = (value or "").strip().lower()
    if text not in _YES + _NO:
        raise ValueError(f"environment variable {name}={value!r}: not a yes/no value "
                         f"(yes: {', '.join(_YES)}; no: 0, false, no, off, or empty)")
    return text in _YES


def parse_allowlist(text: str | None) -> frozenset[str] | None:
    """``"a, b"`` -> ``{"a", "b"}``; empty or missing -> None (no allowlist)."""
    names = frozenset(n.strip() for n in (text or "").split(",") if n.strip())
    return names or None


@dataclass(frozen=True)
class PluginSettings:
    """How to load plugins; picklable, so that worker processes load exactly the same set.

    ``extra`` holds module names (imported in every process) or plugin objects (registered in
    this process; worker processes receive them pickled, so they must be importable module
    level objects).
    """

    autoload: bool = True
    allowlist: frozenset[str] | None = None
    extra: tuple[Any, ...] = ()
    #: seconds one plugin's import, and then its hook, may take (:func:`time_limit`); None:
    #: no limit. Every process that loads the plugins applies the same limit, so that the
    #: service's catalog and its workers' leave out the same plugin that hangs.
    load_timeout_s: float | None = LOAD_TIMEOUT_S

    @classmethod
    def resolve(cls, *, autoload: bool = True, allowlist: Iterable[str] | None = None,
                extra: Sequence[Any] = (), environ: Mapping[str, str] | None = None,
                load_timeout_s: float | None = LOAD_TIMEOUT_S) -> "PluginSettings":
        """Combine explicit arguments with the environment: the disable switch always wins;
        an explicit allowlist wins over ``CARDGAMES_BOT_PLUGINS``. ValueError: the disable
        switch holds no yes/no value (``serve`` refuses to start on it, exit 2)."""
        env = os.environ if environ is None else environ
        if _env_flag(env.get(ENV_DISABLE_AUTOLOAD), ENV_DISABLE_AUTOLOAD):
            autoload = False
        allowed = frozenset(allowlist) if allowlist is not None else parse_allowlist(env.get(ENV_ALLOWLIST))
        return cls(autoload=autoload, allowlist=allowed, extra=tuple(extra), load_timeout_s=load_timeout_s)


class BotPluginManager(pluggy.PluginManager):
    """pluggy's manager with the ``cardgames_`` prefix convention."""

    def __init__(self) -> None:
        super().__init__(PROJECT)
        self.add_hookspecs(hookspecs)

    def parse_hookimpl_opts(self, plugin: Any, name: str):  # type: ignore[override]
        opts = super().parse_hookimpl_opts(plugin, name)
        if opts is None and name.startswith(PROJECT + "_"):
            if inspect.isroutine(inspect.getattr_static(plugin, name, None)) or inspect.isroutine(
                    getattr(plugin, name, None)):
                return {}  # type: ignore[return-value]
        return opts


@dataclass(frozen=True)
class CatalogEntry:
    spec: BotSpec
    plugin: str  # the plugin (entry point) name that registered the bot
    distribution: str = ""  # "name version" of the installed package, when known


NOT_INSTALLED_STAGE = "allowlist"
"""The stage of a plugin the allowlist (``CARDGAMES_BOT_PLUGINS``) names but no installed entry
point has: it failed before any import, at the allowlist's lookup."""
NOT_INSTALLED = (f"not installed: no {ENTRY_POINT_GROUP} entry point or plugin module has this "
                 f"name ({ENV_ALLOWLIST} names plugins, not bots)")
"""Its reason: the same for every name, with nothing of the host (no path, no list of what
else is installed), since ``ListBots`` answers anyone."""


@dataclass(frozen=True)
class PluginFailure:
    plugin: str
    stage: str  # "allowlist" | "import" | "register" | "validate" | "hook" | "spec"
    error: str  # as logged (``bot_plugin_failed``), an exception's message included
    #: what ``ListBots`` tells every caller: ``error``, except that an exception raised by the
    #: plugin's own code (its import, its hook) is named by type and place, without its message
    summary: str = ""


@dataclass
class BotCatalog:
    """The bots offered by the loaded plugins, by name."""

    entries: dict[str, CatalogEntry] = field(default_factory=dict)
    plugins: dict[str, str] = field(default_factory=dict)  # plugin name -> distribution
    failures: list[PluginFailure] = field(default_factory=list)
    manager: BotPluginManager | None = None

    def get(self, name: str) -> CatalogEntry | None:
        return self.entries.get(name)

    def names(self) -> list[str]:
        return sorted(self.entries)

    def plays(self, name: str, game_id: str) -> bool:
        entry = self.entries.get(name)
        return entry is not None and entry.spec.plays(game_id)


class PluginNotLoaded(ValueError):
    """A module named by ``--plugin`` did not load: a usage error of the command that was asked
    for it (the arena, ``clients.remote_bot``), not a run without it."""


def check_named_plugins(named: Sequence[str], catalog: BotCatalog) -> None:
    """PluginNotLoaded, naming the module and the error's type, when a module of ``named`` (the
    ``--plugin`` modules) failed to import, register, validate or run its hook. Such a failure
    was only a ``bot_plugin_failed`` line, and the command went on without the module: the
    arena played a comparison without its bots and exited 0; ``clients.remote_bot`` said "no
    installed bot", the module unnamed, once an engine was started and reached. A refused spec
    is not a plugin that failed to load (its other bots did); a bot asked for and missing is
    refused by the command anyway."""
    for failure in catalog.failures:
        if failure.plugin in named and failure.stage in ("import", "register", "validate", "hook"):
            raise PluginNotLoaded(f"--plugin {failure.plugin} did not load ({failure.stage}): "
                                  f"{failure.summary or failure.error}")


class _LoadTimedOut(BaseException):
    """Raised in a plugin's import or hook that overran the load time limit (BaseException: a
    plugin's ``except Exception`` around a network call must not swallow it)."""


@contextlib.contextmanager
def time_limit(seconds: float | None,
                interruption: type[BaseException] = _LoadTimedOut) -> Iterator[None]:
    """Interrupt the body with ``interruption`` after ``seconds`` (SIGALRM; the runner uses it
    for an in-process bot that overruns its budget).

    Why a signal and not a thread: an import cannot be stopped from another thread, and one
    left running for ever would hold its module's import lock and the GIL's time in the
    service, and in the workers' zygote, which must run no thread for its forks to be safe
    (a fork inherits a lock such a thread holds, locked for good). The signal's handler raises
    in the import itself, which then unwinds as any failed import does: the half-made module
    leaves ``sys.modules``, its locks are released. Python handles signals between
    instructions, and a sleep, a socket read or a lock's wait returns to do so, so a plugin
    waiting on the network or a lock is interrupted; one stuck inside a single long C call
    (a C extension's loop) is not, nor one whose bare ``except:`` swallows the interruption.

    No limit outside the main thread (only it receives signals: a caller's case, not the
    service's). A timer a caller armed already (pytest-timeout's) is put back afterwards with
    the time it had left; one due before ours is left alone, and no limit of ours applies."""
    if (seconds is None or not hasattr(signal, "setitimer")
            or threading.current_thread() is not threading.main_thread()):
        yield
        return
    outer_delay, outer_interval = signal.getitimer(signal.ITIMER_REAL)
    if 0 < outer_delay <= seconds:
        yield
        return
    started = time.monotonic()
    armed = [True]

    def expired(signum: int, frame: Any) -> None:
        if armed[0]:
            armed[0] = False
            raise interruption()

    previous = signal.signal(signal.SIGALRM, expired)
    if previous is None:  # a handler C code installed: Python can only put back the default
        previous = signal.SIG_DFL

    def disarm() -> None:
        armed[0] = False  # from here on a late signal raises nothing
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        if outer_delay > 0:
            left = outer_delay - (time.monotonic() - started)
            signal.setitimer(signal.ITIMER_REAL, max(left, 1e-6), outer_interval)

    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        try:
            disarm()
        except interruption:  # the timer fired as the body ended, before disarm(): it was in
            disarm()  # time, and it fires once, so this second call runs through


def _describe(exc: BaseException) -> str:
    """Exception type and message for plugin *loading* failures (no game data involved): the
    whole message on one line, capped (pluggy says *why* a hook is refused on its later
    lines: "Argument(s) {'x'} are declared in the hookimpl but can not be found...").
    A plugin's exception whose ``__str__`` raises is said as Python's tracebacks say it
    (``<exception str() failed>``): reading its message raised out of the load, which ended
    the engine's start."""
    try:
        message = str(exc)
    except Exception:  # noqa: BLE001 - the plugin's __str__, whatever it raises
        message = "<exception str() failed>"
    text = " | ".join(line.strip() for line in message.strip().splitlines() if line.strip())
    if len(text) > 500:
        text = text[:497] + "..."
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


# a segment holds any character but "/" and the quote that opened the path (repr quotes a path
# holding an apostrophe with double quotes, and escapes a quote it cannot avoid with "\\")
_QUOTED_PATH = re.compile(r"""(['"])/(?:(?:\\.|(?!\1)[^/\\])*/)*((?:\\.|(?!\1)[^/\\])*)\1""")
_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+>")


def _without_paths(text: str) -> str:
    """A refusal's text as ``ListBots`` says it: each quoted absolute path cut to its file
    name, and no object address. pluggy names a plugin by its ``repr``, which for a module is
    ``<module 'mybot' from '/srv/venv/lib/python3.11/site-packages/mybot.py'>``: a layout of
    the engine's host that anyone may call ``ListBots`` to read (the log line keeps it whole).
    The file name is what a bot author needs, as :func:`_summarize` and the runner say it."""
    return _ADDRESS.sub(">", _QUOTED_PATH.sub(r"\1\2\1", text))


def _summarize(exc: BaseException) -> str:
    """A failure of the plugin's own code as ``ListBots`` says it to anyone who asks, without
    the exception's message: the plugin wrote it, and it may hold what only the operator may
    read (an ``int(os.environ["TOKEN"])`` says the value in its ``ValueError``; the engine's
    process imports plugins with its whole environment, admin token and database URL
    included). Its type and where it was raised tell a bot author where to look; the log line
    has the message. A missing module is named, by the import system, not by the plugin."""
    if isinstance(exc, ModuleNotFoundError) and isinstance(exc.name, str):
        return f"ModuleNotFoundError: no module named {exc.name!r}"
    if isinstance(exc, SyntaxError) and isinstance(exc.filename, str):
        # its traceback ends in the import machinery: the place is the file that did not compile
        return f"{type(exc).__name__} at {exc.filename.rsplit('/', 1)[-1]}:{exc.lineno}"
    from .runner import describe_exception  # the runner imports this module

    return describe_exception(exc)


def _entry_points() -> list[importlib.metadata.EntryPoint]:
    """The group's entry points, one per name: the first found on ``sys.path`` wins (logged as
    ``bot_plugin_duplicate``), except that the engine's own names keep its modules."""
    seen: dict[str, importlib.metadata.EntryPoint] = {}
    for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
        own = SHIPPED_MODULES.get(ep.name)
        if own is not None and ep.name in seen and seen[ep.name].value != own and ep.value == own:
            log.warning("bot_plugin_duplicate", plugin=ep.name, kept=ep.value, ignored=seen[ep.name].value)
            seen[ep.name] = ep  # the engine's own plugin, wherever it was found
            continue
        if ep.name in seen:
            if seen[ep.name].value != ep.value:
                log.warning("bot_plugin_duplicate", plugin=ep.name, kept=seen[ep.name].value,
                            ignored=ep.value)
            continue
        seen[ep.name] = ep
    return list(seen.values())


def _dist_label(ep: importlib.metadata.EntryPoint) -> str:
    dist = getattr(ep, "dist", None)
    if dist is None:
        return ""
    try:
        return f"{dist.metadata['Name']} {dist.version}"
    except Exception:  # a broken metadata file must not stop loading
        return ""


def _not_bot_specs(returned: Any) -> str:
    """Why what a ``cardgames_bots`` hook returned is not an iterable of BotSpec ("" when it
    is: a list, a tuple, a generator...; None counts as no bots). The hook's contract is any
    iterable, not only a list, because a generator (``yield BotSpec(...)``) is as natural a way
    to write it; but a string, bytes or a mapping are iterables whose items are characters or
    keys, which would be refused one by one as specs, and a lone BotSpec is not iterable at
    all: each is refused whole, with a reason that says what was returned."""
    if returned is None:
        return ""
    if isinstance(returned, BotSpec):
        return "cardgames_bots returned a BotSpec, not an iterable of BotSpec (return [spec])"
    if isinstance(returned, (str, bytes, bytearray, Mapping)) or not isinstance(returned, Iterable):
        return f"cardgames_bots returned {type(returned).__name__}, not an iterable of BotSpec"
    return ""


def _validate_spec(spec: Any, plugin: str) -> BotSpec:
    if not isinstance(spec, BotSpec):
        raise TypeError(f"expected BotSpec, got {type(spec).__name__}")
    if not isinstance(spec.name, str) or not BOT_NAME_RE.fullmatch(spec.name):
        raise ValueError(f"bad bot name {spec.name!r} (lower-case letters, digits, - and _)")
    if not callable(spec.factory):
        raise TypeError(f"bot {spec.name!r}: factory is not callable")
    if not isinstance(spec.description, str):
        # ListBots sends it in a string field: a number or bytes there failed every ListBots
        # call, for every caller and every bot, with INTERNAL
        raise TypeError(f"bot {spec.name!r}: description must be a string, not "
                        f"{type(spec.description).__name__}")
    try:  # and one protobuf can send: a lone surrogate ('\ud800') is no UTF-8, the same failure
        spec.description.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError(f"bot {spec.name!r}: description is not valid text (a lone surrogate)") from None
    if len(spec.description) > MAX_DESCRIPTION_CHARS:
        # every ListBots reply carries every description: one of megabytes made the reply
        # larger than the engine sends (--max-send-message-bytes), and ListBots failed for
        # every caller and every bot, as a description that was no string did
        raise ValueError(f"bot {spec.name!r}: description is {len(spec.description)} characters, "
                         f"more than {MAX_DESCRIPTION_CHARS}")
    games = spec.games
    if not isinstance(games, str):
        try:
            # once: a generator (or any one-shot iterable) was used up by the check below, and
            # the bot then played no game at all
            games = tuple(games)
        except TypeError:
            raise ValueError(f'bot {spec.name!r}: games must be a non-empty list of game ids, or ("*",) for every game') from None
        except Exception as exc:  # a generator of the plugin's raised: the load goes on (it
            # escaped load_catalog and ended the engine's start), its message stays out
            # (the plugin's own, for ListBots to repeat)
            raise ValueError(f"bot {spec.name!r}: listing its games raised {type(exc).__name__}") from None
    if isinstance(games, str) or not all(isinstance(g, str) and (g == ALL_GAMES or GAME_ID_RE.fullmatch(g))
                                         for g in games) or not games:
        raise ValueError(f'bot {spec.name!r}: games must be a non-empty list of game ids, or ("*",) for every game')
    return spec if games == spec.games else replace(spec, games=games)


def _sendable(text: str) -> str:
    """``text`` as UTF-8 that protobuf can send (ListBots' load_failures). A name from the
    environment or the command line (``CARDGAMES_BOT_PLUGINS``, ``--plugin``) with a byte that
    is not UTF-8 holds it as a lone surrogate, which failed every ListBots call: the byte is
    shown as it was (``\\xe9``), any other lone surrogate escaped (``\\ud800``)."""
    try:
        return text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    except UnicodeEncodeError:
        return text.encode("utf-8", "backslashreplace").decode("utf-8")


def load_catalog(settings: PluginSettings, *, log_summary: bool = True, quiet: bool = False) -> BotCatalog:
    """Load plugins as ``settings`` says and collect their bots (never raises for a plugin).

    ``log_summary`` False: the caller logs ``bot_plugins_loaded`` itself (:func:`log_loaded`)
    once it has finished with the catalog: the engine first leaves out the bots its workers'
    zygote did not load, and a summary logged before that named them among the loaded bots.

    ``quiet``: what a plugin's code prints (stdout, stderr, warnings) while it is imported, its
    hook runs or its specs are read is kept off the process's streams, and each plugin that
    printed is named in a ``bot_plugin_output_discarded`` warning with the size of its output
    (the engine's process, whose stdout and stderr carry the JSON log lines). Without it the
    output shows (the arena, ``remote_bot``: where a bot author debugs)."""
    pm = BotPluginManager()
    catalog = BotCatalog(manager=pm)
    output: dict[str, list[int]] = {}  # plugin -> [stdout chars, stderr chars] (quiet only)

    @contextlib.contextmanager
    def said_by(plugin: str) -> Iterator[None]:
        if not quiet:
            yield
            return
        out, err = io.StringIO(), io.StringIO()
        try:
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                yield
        finally:
            if out.tell() or err.tell():
                counts = output.setdefault(plugin, [0, 0])
                counts[0] += out.tell()
                counts[1] += err.tell()

    def fail(plugin: str, stage: str, exc: BaseException | str, *, plugin_code: bool = False) -> None:
        """Log and record a failure. ``plugin_code``: ``exc`` was raised by the plugin's own
        code, whose message is logged but not shown by ``ListBots`` (:func:`_summarize`); the
        engine's and pluggy's refusals are said the same way in both places."""
        error = exc if isinstance(exc, str) else _describe(exc)
        summary = _summarize(exc) if plugin_code and not isinstance(exc, str) else _without_paths(error)
        catalog.failures.append(PluginFailure(_sendable(plugin), stage, error, _sendable(summary)))
        log.error("bot_plugin_failed", plugin=plugin, stage=stage, error=error)

    timed_out = (f"timed out: not done within {settings.load_timeout_s or 0:g} s, the plugin load "
                 f"time limit (--bot-plugin-load-timeout-s)")

    def register(plugin_obj: Any, name: str, dist: str) -> None:
        try:
            pm.register(plugin_obj, name=name)
        except Exception as exc:  # PluginValidationError, ValueError (registered twice)
            fail(name, "register", exc)
            return
        try:
            pm.check_pending()
        except pluggy.PluginValidationError as exc:
            pm.unregister(name=name)
            fail(name, "validate", exc)
            return
        catalog.plugins[name] = dist

    # the essential plugin first, then the engine's other own ones, then the rest in the order
    # found: the engine's bots' names are always theirs whatever else is installed
    entry_points = sorted(_entry_points(), key=lambda ep: (ep.name not in ESSENTIAL_PLUGINS,
                                                          SHIPPED_MODULES.get(ep.name) != ep.value))
    if settings.autoload and settings.allowlist is not None:
        # a misspelt name, or a bot's name where the plugin's is meant (search_random), would
        # otherwise load nothing but random without a word
        # less the modules given to load as well (the arena's --plugin mybot beside
        # CARDGAMES_BOT_PLUGINS=mybot, to keep the other installed plugins out): they are there
        given = {item if isinstance(item, str) else getattr(item, "__name__", None) or type(item).__name__
                 for item in settings.extra}
        unknown = settings.allowlist - {ep.name for ep in entry_points} - given
        if unknown:
            log.warning("bot_plugins_not_installed", plugins=sorted(unknown),
                        installed=sorted(ep.name for ep in entry_points))
            for name in sorted(unknown):
                # and in ListBots' load_failures, where whoever misses the plugin's bots
                # looks (clients.play --list): the log line alone reached only whoever read
                # the log. No bot_plugin_failed line: the warning says it for all the names.
                catalog.failures.append(PluginFailure(_sendable(name), NOT_INSTALLED_STAGE,
                                                      NOT_INSTALLED, NOT_INSTALLED))
    for ep in entry_points:
        wanted = settings.autoload and (settings.allowlist is None or ep.name in settings.allowlist)
        if not wanted and ep.name not in ESSENTIAL_PLUGINS:
            log.debug("bot_plugin_skipped", plugin=ep.name,
                      reason="autoload disabled" if not settings.autoload else "not in allowlist")
            continue
        try:
            with said_by(ep.name), time_limit(settings.load_timeout_s):
                obj = ep.load()
        except _LoadTimedOut:
            fail(ep.name, "import", timed_out)
            continue
        except BaseException as exc:  # noqa: BLE001 - SystemExit in a module body too
            if isinstance(exc, KeyboardInterrupt):
                raise
            fail(ep.name, "import", exc, plugin_code=True)
            continue
        register(obj, ep.name, _dist_label(ep))

    for item in settings.extra:
        if isinstance(item, str):
            name = item
            try:
                with said_by(name), time_limit(settings.load_timeout_s):
                    obj: Any = importlib.import_module(item)
            except _LoadTimedOut:
                fail(name, "import", timed_out)
                continue
            except BaseException as exc:  # noqa: BLE001
                if isinstance(exc, KeyboardInterrupt):
                    raise
                fail(name, "import", exc, plugin_code=True)
                continue
        else:
            obj = item
            name = getattr(item, "__name__", None) or type(item).__name__
        if pm.is_registered(obj):
            continue
        register(obj, name, "")

    pm.check_pending()  # every registered plugin passed it individually; keeps the invariant

    registered = all_game_ids()
    # in registration order (pluggy's own order follows tryfirst / trylast): "a taken name
    # stays with the bot loaded first" must not be a plugin's choice
    loaded = {name: i for i, name in enumerate(catalog.plugins)}
    impls = sorted(pm.hook.cardgames_bots.get_hookimpls(),
                   key=lambda impl: loaded.get(impl.plugin_name, len(loaded)))
    for impl in impls:
        plugin = impl.plugin_name
        try:
            with said_by(plugin), time_limit(settings.load_timeout_s):
                returned = impl.function()
                refused = _not_bot_specs(returned)
                # a generator's body runs here: its exceptions are the plugin's, as the hook's
                specs = [] if refused or returned is None else list(returned)
        except _LoadTimedOut:
            fail(plugin, "hook", timed_out)
            continue
        except BaseException as exc:  # noqa: BLE001 - as at import: a sys.exit() in the hook
            # (or its own BaseException subclass) ended the engine's start, or the zygote
            if isinstance(exc, KeyboardInterrupt):
                raise
            fail(plugin, "hook", exc, plugin_code=True)
            continue
        if refused:
            fail(plugin, "hook", refused)
            continue
        if not specs:  # a forgotten `return` (None) or an empty list: loaded, yet no bot
            log.warning("bot_plugin_offers_no_bots", plugin=plugin, returned=type(returned).__name__)
        for spec in specs:
            try:
                with said_by(plugin):  # a `games` generator is the plugin's code
                    spec = _validate_spec(spec, plugin)
            except (TypeError, ValueError) as exc:
                fail(plugin, "spec", exc)
                continue
            except Exception as exc:  # noqa: BLE001 - the plugin's code (a `games` generator) raised
                fail(plugin, "spec", exc, plugin_code=True)
                continue
            if spec.name in catalog.entries:
                fail(plugin, "spec", f"bot name {spec.name!r} already registered by plugin "
                                     f"{catalog.entries[spec.name].plugin!r}")
                continue
            unknown = [g for g in spec.games if g != ALL_GAMES and g not in registered]
            if unknown and len(unknown) == len(spec.games):  # a bot for no game at all: a typo
                fail(plugin, "spec", f"bot {spec.name!r} plays no registered game: "
                                     f"{', '.join(unknown)} (registered: {', '.join(registered)})")
                continue
            if unknown:
                log.warning("bot_unknown_games", plugin=plugin, bot=spec.name, games=unknown,
                            registered=list(registered))
            catalog.entries[spec.name] = CatalogEntry(spec, plugin, catalog.plugins.get(plugin, ""))
    for plugin, (stdout_chars, stderr_chars) in output.items():
        log.warning("bot_plugin_output_discarded", plugin=plugin, stdout_chars=stdout_chars,
                    stderr_chars=stderr_chars)
    if log_summary:
        log_loaded(catalog)
    return catalog


def log_loaded(catalog: BotCatalog) -> None:
    """Log the ``bot_plugins_loaded`` summary: the plugins, the bots and the plugins that failed."""
    log.info("bot_plugins_loaded", plugins=sorted(catalog.plugins), bots=catalog.names(),
             failed=sorted({f.plugin for f in catalog.failures}))

