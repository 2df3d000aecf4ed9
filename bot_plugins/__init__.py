"""First-party bots, packaged exactly as a third party would package its own: each module here
is a pluggy plugin registered under the ``cardgames.bots`` entry-point group in
pyproject.toml, and uses nothing but :mod:`engine_service.plugins` and the public rules API.

* ``random`` (:mod:`bot_plugins.random_bot`): a uniformly random legal action, every game;
* ``heuristic`` (:mod:`bot_plugins.heuristic`): hand-written strategy per game, from the view;
* ``search`` (:mod:`bot_plugins.search`): Information Set MCTS over determinizations; the
  same plugin offers ``search_random``, the search with uniformly random rollouts (the policy
  before ``greedy``), to compare the two in the arena.

:mod:`bot_plugins.arena` plays bots against each other in duplicate deals.
"""
