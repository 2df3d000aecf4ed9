"""A plugin module whose import hangs in a bot worker started as a fresh interpreter (the
zygote failed) while the environment has ``TEST_HANG_IN_FRESH_WORKER`` set (tests only): that
worker loads the plugins on its own, and its load of this one times out where the engine's and
the zygote's did not."""

import os
import sys
import time

from engine_service.plugins import BotSpec, hookimpl
from tests.plugins.first_legal import FirstLegal

if sys.argv[1:2] == ["--worker"] and os.environ.get("TEST_HANG_IN_FRESH_WORKER"):
    time.sleep(3600)


@hookimpl
def cardgames_bots():
    return [BotSpec("not-in-fresh-workers", lambda game_id: FirstLegal())]
