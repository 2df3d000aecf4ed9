"""CPU per action of the service below gRPC (a benchmark, not a test): ``python bench/action_path.py``.

The service benchmark (``service_load.py``) measures everything at once on a shared machine,
where the wall-clock figures move with the machine's other load. This one runs the session
layer and the codec in one process, exactly as the servicers drive them, with no network:
``--matches`` matches, every seat following its own watch stream (each event encoded to its
wire bytes with ``codec.event_bytes``, as ``WatchMatch`` does) and submitting a random legal
action with ``expected_seq`` and a ``client_action_id`` whenever its newest view says it is to
act (the answer encoded with ``codec.submit_response_bytes``, as ``SubmitAction`` does).
Finished matches are replaced; the first two seconds are not measured. It prints the CPU time
per accepted action of the whole process and of the event-loop thread alone (the one that
bounds the service's throughput: the store's thread runs beside it), figures another
process's load disturbs little, and, with ``--profile``, the functions that take it.

What it leaves out: gRPC itself (parsing requests, sending messages: the service benchmark's
``floor`` measures it), the interceptor's per-RPC log line and metrics, and the network. The
domain log lines are rendered as in the service and written to ``/dev/null``.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import io
import os
import pstats
import random
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from engine_service.observability.logging import configure_logging  # noqa: E402
from engine_service.observability.metrics import Metrics  # noqa: E402
from engine_service.sessions.api import CreateMatchRequest, MatchNotActive, StaleSequence  # noqa: E402
from engine_service.sessions.config import SessionConfig  # noqa: E402
from engine_service.sessions.manager import MatchManager  # noqa: E402
from engine_service.transport import codec  # noqa: E402


class Table:
    """One match played to its end by per-seat clients driven by their own watch streams."""

    def __init__(self, mgr: MatchManager, rng: random.Random) -> None:
        self.mgr, self.rng = mgr, rng
        self.actions = 0

    async def play(self, game: str) -> None:
        summary = await self.mgr.create_match(CreateMatchRequest(game=game))
        match_id = summary.match_id
        principals = []
        for seat in range(len(summary.seats)):
            joined = await self.mgr.join_match(match_id, seat, f"player {seat}")
            principals.append(self.mgr.authenticate(match_id, joined.token))
        await asyncio.gather(*(self._seat(match_id, seat, p) for seat, p in enumerate(principals)))

    async def _seat(self, match_id: str, seat: int, principal) -> None:
        acted_at = -1
        async for event in self.mgr.watch(match_id, principal, 0):
            codec.event_bytes(event)
            if event.kind == "match_ended":
                return
            env = event.view
            if env is None or env.seq <= acted_at or env.view.get("to_act") != seat:
                continue
            legal = env.view.get("legal") or ()
            if not legal:
                continue
            acted_at = env.seq
            try:
                result = await self.mgr.submit_action(match_id, principal, self.rng.choice(list(legal)),
                                                      env.seq, f"{seat}-{env.seq}")
            except (StaleSequence, MatchNotActive):
                continue
            codec.submit_response_bytes(result)
            self.actions += 1


async def run(game: str, matches: int, seconds: float, db: str, profile: str | None,
              warmup: float = 2.0) -> dict:
    mgr = MatchManager(SessionConfig(db_path=db, snapshot_threshold=100_000), metrics=Metrics(),
                       create_bot_host=False)
    await mgr.start()
    tables = [Table(mgr, random.Random(i)) for i in range(matches)]
    playing = True

    async def keep_playing(table: Table) -> None:
        while playing:
            await table.play(game)

    def counted() -> int:
        return sum(t.actions for t in tables)

    profiler = cProfile.Profile() if profile else None
    players = [asyncio.ensure_future(keep_playing(t)) for t in tables]
    try:
        await asyncio.sleep(warmup)  # caches filled, matches at every stage of play
        actions0, cpu0, loop0, wall0 = counted(), time.process_time(), time.thread_time(), time.monotonic()
        if profiler:
            profiler.enable()
        await asyncio.sleep(seconds)
        if profiler:
            profiler.disable()
        actions, cpu, wall = counted() - actions0, time.process_time() - cpu0, time.monotonic() - wall0
        loop_cpu = time.thread_time() - loop0
        playing = False
        for task in players:  # the matches in play are left unfinished
            task.cancel()
        await asyncio.gather(*players, return_exceptions=True)
    finally:
        await mgr.close()
    out = {"game": game, "db": db, "matches": matches, "actions": actions,
           "cpu_us_per_action": cpu * 1e6 / max(1, actions), "actions_per_cpu_s": actions / cpu,
           "loop_us_per_action": loop_cpu * 1e6 / max(1, actions),
           "wall_s": wall}
    if profiler:
        text = io.StringIO()
        pstats.Stats(profiler, stream=text).sort_stats(profile).print_stats(40)
        out["profile"] = text.getvalue()
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--game", action="append", help="game id (repeatable; default: all four)")
    ap.add_argument("--matches", type=int, default=64, help="concurrent matches")
    ap.add_argument("--seconds", type=float, default=10.0, help="measured seconds per game")
    ap.add_argument("--db", default=None, help="'memory:' or a SQLite path (default: a temp SQLite file)")
    ap.add_argument("--profile", nargs="?", const="tottime", choices=("tottime", "cumulative"),
                    help="print the 40 functions with the most own (or cumulative) time under cProfile "
                    "(which inflates the cost of small calls: compare like with like)")
    args = ap.parse_args(argv)
    # the service's JSON log lines (domain events such as action_applied), written to nowhere
    configure_logging("json", "info", stream=open(os.devnull, "w"))
    games = args.game or ["klaberjass", "jojotte", "georgian_joker", "japanese_joker"]
    with tempfile.TemporaryDirectory() as tmp:
        for game in games:
            db = args.db or str(Path(tmp) / f"{game}.sqlite3")
            res = asyncio.run(run(game, args.matches, args.seconds, db, args.profile))
            print(f"{game:15s} cpu_us_per_action={res['cpu_us_per_action']:,.0f}  "
                  f"loop_us_per_action={res['loop_us_per_action']:,.0f}  "
                  f"actions_per_cpu_s={res['actions_per_cpu_s']:,.0f}  actions={res['actions']:,}  "
                  f"matches={res['matches']}  db={'memory' if db == 'memory:' else 'sqlite'}", flush=True)
            if args.profile:
                print(res["profile"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
