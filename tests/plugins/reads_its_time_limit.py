"""A plugin module that reads the time limit it runs under (tests only): its import the real
timer's delay as the module body starts, its hook the delay as the hook is called."""

import signal

from engine_service.plugins import BotSpec, hookimpl

IMPORT_LIMIT = signal.getitimer(signal.ITIMER_REAL)[0]
HOOK_LIMITS: list[float] = []


@hookimpl
def cardgames_bots():
    HOOK_LIMITS.append(signal.getitimer(signal.ITIMER_REAL)[0])
    return [BotSpec("reads-its-limit", lambda game_id: None)]
