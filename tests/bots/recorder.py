"""A plugin whose bot records the budget of every decision it is asked, and the views its
match callbacks get (tests only)."""

from engine_service.plugins import BotSpec, hookimpl

BUDGETS: list[float] = []
CALLBACKS: list[tuple] = []  # (callback, phase, deal_number, over, number of deal results)


class Recorder:
    def decide(self, request):
        BUDGETS.append(request.budget_s)
        return request.legal[0]

    def on_deal_end(self, view):
        CALLBACKS.append(("deal_end", view["phase"], view["deal_number"], view["over"],
                          len(view["deal_results"])))

    def on_match_end(self, view):
        CALLBACKS.append(("match_end", view["phase"], view["deal_number"], view["over"],
                          len(view["deal_results"])))


@hookimpl
def cardgames_bots():
    return [BotSpec("recorder", lambda game_id: Recorder(), description="records its budgets")]
