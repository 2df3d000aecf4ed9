"""Sample clients of the card-game engine: they speak only the wire contract (cardgames.v1).

* :mod:`clients.cardgames_client` — a Python client library over the generated stubs;
* ``python -m clients.play`` — a terminal client for people;
* ``python -m clients.watch`` — a live spectator;
* ``python -m clients.admin`` — the operator's command line over the admin API (list, inspect,
  terminate, export matches);
* ``python -m clients.health`` — the gRPC health check used by the container image;
* ``clients/node/`` — a Node.js client that plays a match against a bot.
"""
