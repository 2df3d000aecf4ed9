"""A plugin whose bot records the budget of every decision it is asked, and the views its
match callbacks get (tests only)."""

from engine_service.plugins import BotSpec, hookimpl

BUDGETS: list[float] = []
CALLBACKS: list[tuple] = []  # (callback, phase, deal_number, over, number of deal results)
DRAWS: list[int] = []  # the first 64 bits each decision's rng gave
STARTS: list[tuple] = []  # (game_id, seat, view's seat, phase, deal_number, the bot object's id)
VIEWS: list[tuple] = []  # (callback or "decide", the seat on_match_start named, the view's seat)
LEGAL: list[bool] = []  # whether a decision's legal actions were its view's


class Recorder:
    def decide(self, request):
        BUDGETS.append(request.budget_s)
        DRAWS.append(request.rng.getrandbits(64))
        VIEWS.append(("decide", getattr(self, "seat", None), request.view["seat"]))
        LEGAL.append(list(request.legal) == list(request.view["legal"]))
        return request.legal[0]

    def on_match_start(self, game_id, seat, view):
        STARTS.append((game_id, seat, view["seat"], view["phase"], view["deal_number"], id(self)))
        self.seat = seat

    def on_deal_end(self, view):
        VIEWS.append(("deal_end", getattr(self, "seat", None), view["seat"]))
        CALLBACKS.append(("deal_end", view["phase"], view["deal_number"], view["over"],
                          len(view["deal_results"])))

    def on_match_end(self, view):
        VIEWS.append(("match_end", getattr(self, "seat", None), view["seat"]))
        CALLBACKS.append(("match_end", view["phase"], view["deal_number"], view["over"],
                          len(view["deal_results"])))


class RaisingCallbacks:
    """Plays the first legal action; every optional callback raises (docs/bots.md: a
    callback's failure never stops the match)."""

    def decide(self, request):
        return request.legal[0]

    def on_match_start(self, game_id, seat, view):
        raise ValueError("on_match_start")

    def on_deal_end(self, view):
        raise SystemExit(3)  # a sys.exit is ignored in a callback too (docs/bots.md)

    def on_match_end(self, view):
        raise ValueError("on_match_end")


@hookimpl
def cardgames_bots():
    return [BotSpec("recorder", lambda game_id: Recorder(), description="records its budgets"),
            BotSpec("raising_callbacks", lambda game_id: RaisingCallbacks(),
                    description="its callbacks raise")]
