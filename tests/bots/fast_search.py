"""A plugin offering the search bot with a small iteration budget, so tests can run whole deals
in seconds (tests only; the production budget is measured by the arena commands in
docs/bots.md)."""

from engine_service.plugins import BotSpec, hookimpl

from bot_plugins.search import SearchBot, SearchParams

FAST = SearchParams(iterations=80, worlds=8)


@hookimpl
def cardgames_bots():
    return [BotSpec("search-fast", lambda game_id: SearchBot(game_id, FAST),
                    games=("klaberjass", "jojotte", "georgian_joker", "japanese_joker"),
                    description="search with 80 iterations (tests)")]
