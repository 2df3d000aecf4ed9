"""A plugin whose bot records the budget of every decision it is asked (tests only)."""

from engine_service.plugins import BotSpec, hookimpl

BUDGETS: list[float] = []


class Recorder:
    def decide(self, request):
        BUDGETS.append(request.budget_s)
        return request.legal[0]


@hookimpl
def cardgames_bots():
    return [BotSpec("recorder", lambda game_id: Recorder(), description="records its budgets")]
