"""The bot author's manual: every hook a plugin may implement.

A plugin is any Python module or object with functions marked ``@hookimpl`` (from
:mod:`engine_service.plugins`). Third-party plugins are found through the entry-point group
``cardgames.bots``; first-party bots (``bot_plugins``) are installed exactly the same way::

    # pyproject.toml of your package
    [project.entry-points."cardgames.bots"]
    mybot = "mybot_package.plugin"

The entry-point name is the *plugin* name: the one ``CARDGAMES_BOT_PLUGINS=a,b`` (an allowlist)
selects. ``CARDGAMES_DISABLE_PLUGIN_AUTOLOAD=1`` loads no entry point but the essential
``random`` (which the allowlist never leaves out either). A plugin that
fails to import, fails validation or raises from a hook, or whose import or ``cardgames_bots``
takes longer than the load time limit (``--bot-plugin-load-timeout-s``, 30 s), is logged
(``bot_plugin_failed``), listed in ``ListBots``' ``load_failures`` and left out; the service
runs without it.

Hooks are called with keyword arguments; an implementation may accept fewer arguments than
its spec (pluggy's "opt-in arguments"), so hooks can gain arguments without breaking plugins.
Every hook is documented below; ``tests/plugins/test_hookspecs.py`` fails when one is not.
"""

from __future__ import annotations

from typing import Iterable

import pluggy

from .protocol import BotSpec

PROJECT = "cardgames"
ENTRY_POINT_GROUP = "cardgames.bots"

hookspec = pluggy.HookspecMarker(PROJECT)


# ---- registration ------------------------------------------------------------------------

@hookspec
def cardgames_bots() -> Iterable[BotSpec] | None:
    """Register bots: return the :class:`~engine_service.plugins.protocol.BotSpec` values this
    plugin offers (one plugin may offer several bots, or none).

    Called once per host process at start-up: in the service itself (to list the bots: the
    module and this hook run in the engine's process, with its whole environment), in the bot
    workers' zygote (the workers are its forks, or fresh processes that call it again), in each
    arena worker process and in ``clients/remote_bot.py``; so it must return the same bots in
    every process. A spec's ``factory(game_id)`` makes a
    :class:`~engine_service.plugins.protocol.Bot`, an object with
    ``decide(request) -> str``: ``request`` carries one seat's view, its legal actions, a
    seeded ``random.Random`` and a time budget; the answer must be one of the legal action
    strings (NOTATION.md section 2).

    A bot must not: read anything but its request (no access to the full state, other seats'
    views or the network), keep running past its budget (the host kills the worker process at
    the deadline), write to stdout or read stdin, or use the global ``random`` module (use
    ``request.rng`` so that a seed replays a match). A timeout, an exception, an answer that
    is not a legal action string or a crash of the worker all have the same consequence: the
    seat plays the rulebook's auto-move for that decision, and the failure is logged and
    counted under the bot's name; a bot whose decisions keep costing their worker (timeouts,
    crashes) is benched for a while and its decisions fail at once.

    Bot names must be unique across plugins; a duplicate is refused with a log entry, the
    name staying with the plugin loaded first (in the order the entry points are found; the
    engine's own plugins, ``random`` first, always before the others, so their bots' names
    are never another plugin's).

    :return: an iterable of ``BotSpec``: a list, a tuple or a generator (``yield``); empty, or
        None, offers no bot. A string, bytes, a mapping or a lone ``BotSpec`` is refused
        whole (``bot_plugin_failed``, stage ``hook``).
    """
