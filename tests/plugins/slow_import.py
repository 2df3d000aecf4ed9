"""A plugin module whose import never ends (tests only): a network call without a timeout, as
the load time limit must interrupt. Its ``except Exception`` does not swallow that."""

import time

from engine_service.plugins import BotSpec, hookimpl

try:
    time.sleep(3600)
except Exception:  # noqa: BLE001 - a plugin's catch-all must not keep it loading
    pass


@hookimpl
def cardgames_bots():
    return [BotSpec("never-here", lambda game_id: None)]
