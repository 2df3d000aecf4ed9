"""A plugin module whose import hangs in a bot workers' zygote started while the environment
has ``TEST_HANG_IN_ZYGOTE`` set (tests only): a zygote restarted after the first died, whose
load of a plugin times out where the first's did not."""

import os
import sys
import time

from engine_service.plugins import BotSpec, hookimpl
from tests.plugins.first_legal import FirstLegal

if sys.argv[1:2] == ["--zygote"] and os.environ.get("TEST_HANG_IN_ZYGOTE"):
    time.sleep(3600)


@hookimpl
def cardgames_bots():
    return [BotSpec("first-zygote-only", lambda game_id: FirstLegal())]
