"""A plugin of misbehaving bots, one per failure the bot host must survive (tests only).

Each bot plays every game; the names say what it does wrong. ``AS`` and ``KS`` appear in
exception messages and answers on purpose: the host must never log what a bot says.
"""

from __future__ import annotations

import os
import time

from engine_service.plugins import BotSpec, hookimpl


class Garbage:
    def decide(self, request):
        return {"card": "AS"}


class Illegal:
    def decide(self, request):
        return "play:AS:KS"


class Raises:
    def decide(self, request):
        raise ValueError("my hand is AS KS")


class Sleeps:
    def decide(self, request):
        time.sleep(60)
        return request.legal[0]


class Exits:
    def decide(self, request):
        os._exit(3)


class SysExits:
    def decide(self, request):
        raise SystemExit(0)


class Polite:
    """Uses its whole budget (all but 10 ms), then answers: must never be killed. Appends its
    seat, the budget it was told and the time.monotonic() it answers at to the file
    BAD_BOTS_BUDGETS names, when set: the host's arithmetic is then checked on what the bot
    saw, not on how long a loaded machine took."""

    def decide(self, request):
        while request.time_left() > 0.01:
            time.sleep(0.001)
        if "BAD_BOTS_BUDGETS" in os.environ:
            with open(os.environ["BAD_BOTS_BUDGETS"], "a") as f:
                f.write(f"{request.seat} {request.budget_s!r} {time.monotonic()!r}\n")
        return request.legal[-1]


class Overruns:
    """Answers half a second after its budget ran out (a host that cannot kill it must not wait)."""

    def decide(self, request):
        time.sleep(request.budget_s + 0.5)
        return request.legal[0]


class Wrecks:
    """Empties every list and dict of its view (the view is the bot's own copy, docs/bots.md),
    then raises: the host's auto-move must not read the wrecked view."""

    def decide(self, request):
        def wreck(value):
            if isinstance(value, dict):
                for item in value.values():
                    wreck(item)
                value.clear()
            elif isinstance(value, list):
                for item in value:
                    wreck(item)
                value.clear()
        wreck(request.view)
        raise ValueError("wrecked my view")


class ExitsSaying:
    """sys.exit with a message: Python prints it to stderr when the process ends with it."""

    def decide(self, request):
        raise SystemExit("my hand is AS KS")


class Interrupts:
    def decide(self, request):
        raise KeyboardInterrupt("my hand is AS KS")


class Talks:
    """Tells its hand on every channel a process has for it (print, stderr, the logging
    module, warnings, the file descriptors themselves), then answers a legal action: none of
    it may reach the engine's log."""

    def decide(self, request):
        import logging
        import sys
        import warnings

        said = "my hand is AS KS " + " ".join(request.view.get("hand", []))
        print(said)
        print(said, file=sys.stderr)
        sys.stdout.flush()
        sys.stderr.flush()
        logging.getLogger("talks").warning(said)
        warnings.warn(said)
        os.write(1, (said + "\n").encode())
        os.write(2, (said + "\n").encode())
        return request.legal[0]


class Cancelled(BaseException):
    """A bot's own exception derived from BaseException, as asyncio.CancelledError is."""


class RaisesBase:
    def decide(self, request):
        raise Cancelled("my hand is AS KS")


class Snoop:
    """Looks for the engine's secrets in its environment: answers the last legal action if it
    finds one, the second if the plugin selection did not reach it, else the first."""

    def decide(self, request):
        if any(k in os.environ for k in ("CARDGAMES_ADMIN_TOKEN", "CARDGAMES_DB", "PGPASSWORD")):
            return request.legal[-1]
        if "CARDGAMES_BOT_PLUGINS" not in os.environ:
            return request.legal[1]
        return request.legal[0]


class Everything(str):
    """A string that says it equals every string: ``answer in legal`` believed it."""

    def __eq__(self, other):
        return True

    __hash__ = str.__hash__


class Liar:
    def decide(self, request):
        return Everything("play:AS:KS")


class Action(str):
    """A careless bot's own string type (as numpy.str_ or a str Enum are)."""


class Subclassed:
    """Answers a legal action as a str subclass: legal, and the engine must get a plain str."""

    def decide(self, request):
        return Action(request.legal[-1])


def _start_child():
    """A process outliving the decision, its pid left where the test says (BAD_BOTS_PIDFILE)."""
    import subprocess
    child = subprocess.Popen(["sleep", "300"])
    with open(os.environ["BAD_BOTS_PIDFILE"], "a") as f:
        f.write(f"{child.pid}\n")


class SpawnsAndHangs:
    def decide(self, request):
        _start_child()
        time.sleep(60)


class SpawnsAndAnswers:
    def decide(self, request):
        _start_child()
        return request.legal[0]


class Forks:
    """Forks and forgets to end the child: both processes return from decide() (the child
    with another answer), and both would answer on the worker's socket."""

    def decide(self, request):
        if os.fork() == 0:
            time.sleep(0.2)  # the parent answers first
            return request.legal[1]
        return request.legal[0]


class ForksAHelper:
    """Forks a helper that lives on (as a ``multiprocessing`` pool forked by a bot does), its
    pid left where the test says (BAD_BOTS_PIDFILE): it holds a copy of the worker's socket."""

    def decide(self, request):
        pid = os.fork()
        if pid == 0:
            time.sleep(300)
            os._exit(0)
        with open(os.environ["BAD_BOTS_PIDFILE"], "a") as f:
            f.write(f"{pid}\n")
        return request.legal[0]


def _spec(name, cls):
    return BotSpec(name, lambda game_id: cls(), description=f"misbehaves: {name}")


@hookimpl
def cardgames_bots():
    return [_spec("garbage", Garbage), _spec("illegal", Illegal), _spec("raises", Raises),
            _spec("sleeps", Sleeps), _spec("exits", Exits), _spec("sys-exits", SysExits),
            _spec("polite", Polite), _spec("snoop", Snoop), _spec("overruns", Overruns),
            _spec("wrecks", Wrecks), _spec("raises-base", RaisesBase),
            _spec("exits-saying", ExitsSaying), _spec("interrupts", Interrupts),
            _spec("talks", Talks),
            _spec("liar", Liar), _spec("subclassed", Subclassed),
            _spec("forks", Forks), _spec("forks-a-helper", ForksAHelper),
            _spec("spawns-and-hangs", SpawnsAndHangs), _spec("spawns-and-answers", SpawnsAndAnswers),
            BotSpec("bad-factory", lambda game_id: 1 / 0, description="its factory raises")]
