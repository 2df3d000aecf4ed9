"""A plugin module whose hook offers one bot fewer in the bot workers than in the engine
(tests only): the workers lack that bot without any load failure of the plugin."""

import sys

from engine_service.plugins import BotSpec, hookimpl
from tests.plugins.first_legal import FirstLegal


@hookimpl
def cardgames_bots():
    specs = [BotSpec("everywhere", lambda game_id: FirstLegal())]
    if sys.argv[1:2] not in (["--zygote"], ["--worker"]):
        specs.append(BotSpec("engine-hook-only", lambda game_id: FirstLegal()))
    return specs
