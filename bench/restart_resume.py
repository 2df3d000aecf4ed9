"""How long a restart takes to rebuild the unfinished matches (a benchmark, not a test).

At start-up the engine rebuilds every unfinished match from the database before it serves
(docs/operations.md, "Health, start-up and shutdown", step 6): each match's record, decks and
action log are read and its actions replayed through the rules. Health answers ``SERVING`` only
after that, so this time, with the database's own start, is what a start-up probe must allow
(deploy/k8s: 120 s) and how long players wait after a restart.

This fills a database through the session layer with ``--matches`` unfinished matches of
``--actions`` actions each (random legal actions, as players would send), closes it, and
times what a restart does with it: the database's open alone (SQLite's integrity check, the
schema check), then ``MatchManager.start()`` (the open again and the rebuild), printing the
rebuild's time per match and per action, the CPU the process spent (the proxy's included) and
the CPU of the event loop's thread (the engine's, bar the SQLite store's thread).

    .venv/bin/python bench/restart_resume.py [--game georgian_joker] [--matches 1000] [--actions 100]
        [--db postgresql://postgres@127.0.0.1:5432/postgres [--round-trip-ms 0.5]]
        [--resume-concurrency 8]

``--db`` a PostgreSQL URL measures PostgreSQL (a schema of its own, dropped at the end);
without it, a SQLite file in a temporary directory. A production database is a network round
trip away, a local one is not: ``--round-trip-ms`` puts a proxy in front of the server that
holds every chunk of bytes for half of it each way. ``--resume-concurrency`` sets how many
matches the start reads at once (the engine's ``RESUME_CONCURRENCY``; 1: one after another,
as before 2026-12-06), to compare.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import secrets
import sys
import tempfile
import threading
import time
import urllib.parse
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from engine_service.command_line import parse_args  # noqa: E402
from engine_service.observability.logging import configure_logging  # noqa: E402
from engine_service.rules.registry import all_games  # noqa: E402
from engine_service.sessions.api import CreateMatchRequest  # noqa: E402
from engine_service.sessions.config import SessionConfig  # noqa: E402
from engine_service.sessions import manager as manager_module  # noqa: E402
from engine_service.sessions.manager import MatchManager  # noqa: E402
from engine_service.store import POSTGRES_SCHEMES, open_store  # noqa: E402

#: Matches filled at once (each its own task): enough to keep the store's writes batched.
FILL_CONCURRENCY = 50


def _config(db: str) -> SessionConfig:
    # no timer of the filled matches fires during the fill or the measured start (turn
    # deadlines and grace periods 10,000 times their length): a turn or grace timeout would
    # add actions and writes of its own to what is measured
    return SessionConfig(db_path=db, time_scale=1e4)


async def _play(mgr: MatchManager, game: str, actions: int, rng: random.Random) -> int:
    """One match created, its seats taken and up to ``actions`` random legal actions played
    (fewer when it ends first: a finished match is not rebuilt). Returns the actions played."""
    summary = await mgr.create_match(CreateMatchRequest(game=game))
    match_id = summary.match_id
    principals = []
    for seat in range(len(summary.seats)):
        joined = await mgr.join_match(match_id, seat, f"player {seat}")
        principals.append(mgr.authenticate(match_id, joined.token))
    played = 0
    while played < actions:
        match = await mgr.get_match(match_id)
        if match.status != "active":
            break
        for seat, principal in enumerate(principals):
            env = await mgr.get_view(match_id, principal)
            legal = env.view.get("legal")
            if env.view.get("to_act") == seat and legal:
                await mgr.submit_action(match_id, principal, rng.choice(list(legal)), env.seq, f"a{played}")
                played += 1
                break
        else:
            raise RuntimeError(f"{match_id}: no seat may act in an active match")
    return played


async def fill(db: str, game: str, matches: int, actions: int, seed: int) -> None:
    mgr = MatchManager(_config(db), create_bot_host=False)
    await mgr.start()
    try:
        rng = random.Random(seed)
        left = matches
        while left:
            batch = min(FILL_CONCURRENCY, left)
            await asyncio.gather(*(_play(mgr, game, actions, random.Random(rng.random())) for _ in range(batch)))
            left -= batch
    finally:
        await mgr.close()


async def restart(db: str) -> dict:
    started = time.perf_counter()
    store = open_store(db)
    await store.open()
    opened_s = time.perf_counter() - started
    await store.close()
    mgr = MatchManager(_config(db), create_bot_host=False)
    cpu0, loop0, started = time.process_time(), time.thread_time(), time.perf_counter()
    await mgr.start()
    wall_s, cpu_s = time.perf_counter() - started, time.process_time() - cpu0
    loop_cpu_s = time.thread_time() - loop0
    try:
        resumed = [m for m in mgr._matches.values() if not m.over]
        return {"open_s": opened_s, "start_s": wall_s, "cpu_s": cpu_s, "loop_cpu_s": loop_cpu_s,
                "matches": len(resumed),
                "actions": sum(len(m.actions) for m in resumed)}
    finally:
        await mgr.close()


async def _delayed(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, delay_s: float) -> None:
    loop = asyncio.get_running_loop()
    try:
        while data := await reader.read(65536):
            loop.call_later(delay_s, writer.write, data)  # one delay for all: order kept
    finally:
        await asyncio.sleep(2 * delay_s)
        writer.close()


class RoundTripProxy:
    """A TCP proxy to ``host:port`` on a local port (``port``) whose every chunk of bytes
    arrives half of ``round_trip_s`` late, each way. It runs its own event loop in a thread
    of its own, as the network is not the engine's loop's work."""

    def __init__(self, host: str, port: int, round_trip_s: float) -> None:
        self._upstream, self._delay_s = (host, port), round_trip_s / 2
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="round-trip-proxy", daemon=True)
        self._thread.start()
        self._server = asyncio.run_coroutine_threadsafe(
            asyncio.start_server(self._handle, "127.0.0.1", 0), self._loop).result(timeout=10)
        self.port = self._server.sockets[0].getsockname()[1]

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        up_reader, up_writer = await asyncio.open_connection(*self._upstream)
        await asyncio.gather(_delayed(reader, up_writer, self._delay_s),
                             _delayed(up_reader, writer, self._delay_s), return_exceptions=True)

    def close(self) -> None:
        async def stop() -> None:
            self._server.close()
            tasks = asyncio.all_tasks() - {asyncio.current_task()}
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
        asyncio.run_coroutine_threadsafe(stop(), self._loop).result(timeout=10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=5)
        self._loop.close()


async def _postgres_schema(dsn: str, body, round_trip_s: float = 0.0):
    import psycopg

    schema = f"bench_{secrets.token_hex(4)}"
    with psycopg.connect(dsn, autocommit=True) as admin:
        admin.execute(f'CREATE SCHEMA "{schema}"')
    proxy = None
    try:
        sep = "&" if "?" in dsn else "?"
        url = f"{dsn}{sep}options=-csearch_path%3D{schema}"
        if round_trip_s > 0:  # the same URL, to the proxy's port
            parts = urllib.parse.urlsplit(url)
            proxy = RoundTripProxy(parts.hostname or "127.0.0.1", parts.port or 5432, round_trip_s)
            login = parts.netloc.rpartition("@")[0]
            url = parts._replace(netloc=f"{login}@127.0.0.1:{proxy.port}" if login else f"127.0.0.1:{proxy.port}").geturl()
        return await body(url)
    finally:
        if proxy is not None:
            proxy.close()
        with psycopg.connect(dsn, autocommit=True) as admin:
            admin.execute(f'DROP SCHEMA "{schema}" CASCADE')


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    ap.add_argument("--game", default="georgian_joker", choices=[g.id for g in all_games()])
    ap.add_argument("--matches", type=int, default=1000, help="unfinished matches in the database")
    ap.add_argument("--actions", type=int, default=100, help="actions played in each (fewer if it ends)")
    ap.add_argument("--db", default=None, help="a PostgreSQL URL (default: a SQLite file in a temporary directory)")
    ap.add_argument("--round-trip-ms", type=float, default=0.0,
                    help="with a PostgreSQL --db: the network round trip a proxy adds (see above)")
    ap.add_argument("--resume-concurrency", type=int, default=manager_module.RESUME_CONCURRENCY,
                    help="matches the start reads at once (default: the engine's)")
    ap.add_argument("--seed", type=int, default=1, help="the random actions' seed")
    args = parse_args(ap, argv)
    if args.matches < 1 or args.actions < 1:
        ap.error("--matches and --actions must be at least 1")
    if args.db is not None and not args.db.startswith(POSTGRES_SCHEMES):
        ap.error("--db must be a PostgreSQL URL (postgresql://...); SQLite is the default")
    if args.round_trip_ms < 0 or (args.round_trip_ms and args.db is None):
        ap.error("--round-trip-ms takes a PostgreSQL --db and a time of 0 or more")
    if args.resume_concurrency < 1:
        ap.error("--resume-concurrency must be at least 1")
    manager_module.RESUME_CONCURRENCY = args.resume_concurrency
    configure_logging("json", "warning", stream=open(os.devnull, "w"))

    async def measure(db: str) -> dict:
        started = time.perf_counter()
        await fill(db, args.game, args.matches, args.actions, args.seed)
        filled_s = time.perf_counter() - started
        return {"filled_s": filled_s, **await restart(db)}

    with tempfile.TemporaryDirectory() as tmp:
        if args.db is None:
            kind, res = "sqlite", asyncio.run(measure(str(Path(tmp) / "restart.sqlite3")))
        else:
            kind = f"postgresql (round trip +{args.round_trip_ms:g} ms)" if args.round_trip_ms else "postgresql"
            res = asyncio.run(_postgres_schema(args.db, measure, args.round_trip_ms / 1000))
    rebuild_s = res["start_s"] - res["open_s"]
    print(f"{args.game} db={kind} resume_concurrency={args.resume_concurrency} unfinished_matches={res['matches']:,} actions={res['actions']:,} "
          f"(filled in {res['filled_s']:.1f} s)")
    print(f"restart  open_s={res['open_s']:.2f}  start_s={res['start_s']:.2f}  cpu_s={res['cpu_s']:.2f}  "
          f"loop_cpu_s={res['loop_cpu_s']:.2f}  "
          f"rebuild_ms_per_match={rebuild_s * 1000 / max(1, res['matches']):.2f}  "
          f"rebuild_us_per_action={rebuild_s * 1e6 / max(1, res['actions']):.1f}  "
          f"matches_per_s={res['matches'] / max(rebuild_s, 1e-9):,.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
