"""A plugin module whose import hangs in the engine's process only (tests only), not in the bot
workers' zygote or a fresh worker: its bot is loaded by the workers but left out by the engine,
the reverse of :mod:`tests.plugins.slow_in_workers`."""

import sys
import time

from engine_service.plugins import BotSpec, hookimpl
from tests.plugins.first_legal import FirstLegal

if sys.argv[1:2] not in (["--zygote"], ["--worker"]):
    time.sleep(3600)


@hookimpl
def cardgames_bots():
    return [BotSpec("workers-only", lambda game_id: FirstLegal())]
