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
``floor`` measures it) and the network. The domain log lines are rendered as in the service
and written to ``/dev/null``. With ``--servicers`` the calls go through the real servicers
(``CardGamesServicer.SubmitAction`` / ``WatchMatch``) behind the observability interceptor,
each call in a task of its own as grpc.aio runs it, requests parsed from their wire bytes: the
per-RPC log line, metrics and contextvars are then measured too (a seat reads its turn from
the match's current envelope instead of decoding the stream's bytes, which is a client's work).

``--actions N`` measures a fixed number of accepted actions instead of ``--seconds``, with
seeded decks and choices (``--seed``), the memory store, and no timer firing (heartbeats and
turn deadlines pushed out of reach): a deterministic workload for instruction counts, e.g.
``valgrind --tool=callgrind`` over two runs whose action counts differ; the difference of
their totals divided by the difference of the counts is the instructions per action (start-up
and warm-up cancel out).
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
from typing import NamedTuple

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from engine_service.command_line import parse_args  # noqa: E402
from engine_service.observability.logging import configure_logging  # noqa: E402
from engine_service.observability.metrics import Metrics  # noqa: E402
from engine_service.gc_policy import tune_gc  # noqa: E402
from engine_service.sessions import chance  # noqa: E402
from engine_service.sessions.api import CreateMatchRequest, MatchNotActive, StaleSequence  # noqa: E402
from engine_service.sessions.config import SessionConfig  # noqa: E402
from engine_service.sessions.manager import MatchManager  # noqa: E402
from engine_service.transport import codec  # noqa: E402


class Countdown:
    """With ``--actions``: resolves ``reached`` when ``left`` accepted actions have been played."""

    def __init__(self) -> None:
        self.left = 0
        self.reached: asyncio.Future | None = None

    def start(self, actions: int) -> asyncio.Future:
        self.left = actions
        self.reached = asyncio.get_running_loop().create_future()
        return self.reached

    def count(self) -> None:
        self.left -= 1
        if self.left == 0 and self.reached is not None:
            self.reached.set_result(None)


class _Context:
    """The part of ``grpc.aio.ServicerContext`` the servicers and the interceptor use."""

    def __init__(self, token: str | None) -> None:
        self._metadata = (("authorization", f"Bearer {token}"),) if token else ()

    def invocation_metadata(self):
        return self._metadata

    def code(self):
        return None

    async def abort_with_status(self, status) -> None:
        raise RuntimeError(f"the call was aborted: {status.code} {status.details}")


class _CallDetails(NamedTuple):
    """``grpc.HandlerCallDetails`` (a protocol there) as grpc.aio fills it."""

    method: str
    invocation_metadata: tuple


class Rpc:
    """SubmitAction and WatchMatch as grpc.aio calls them: the interceptor resolves the handler
    of each call, the request is parsed from its bytes, the answer is the servicer's bytes."""

    def __init__(self, mgr: MatchManager, metrics: Metrics) -> None:
        from engine_service.transport.auth import AdminGate
        from engine_service.transport.generated import card_games_pb2 as pb, card_games_pb2_grpc
        from engine_service.transport.interceptors import ObservabilityInterceptor
        from engine_service.transport.server import _Registrar, _encoded_or
        from engine_service.transport.servicers import CardGamesServicer

        self.pb = pb
        registrar = _Registrar()
        card_games_pb2_grpc.add_CardGamesServiceServicer_to_server(
            CardGamesServicer(mgr, AdminGate(None)), registrar)
        (handlers,) = registrar.handlers.values()
        self._handlers = {h: handlers[h]._replace(response_serializer=_encoded_or(handlers[h].response_serializer))
                          for h in ("SubmitAction", "WatchMatch")}
        self._interceptor = ObservabilityInterceptor(metrics)

    async def _handler(self, name: str, context: _Context):
        handler = self._handlers[name]

        async def continuation(details):
            return handler

        return await self._interceptor.intercept_service(
            continuation, _CallDetails(f"/cardgames.v1.CardGamesService/{name}", context.invocation_metadata()))

    async def watch(self, match_id: str, token: str):
        context = _Context(token)
        handler = await self._handler("WatchMatch", context)
        request = handler.request_deserializer(self.pb.WatchMatchRequest(match_id=match_id, after_seq=0)
                                               .SerializeToString())
        async for message in handler.unary_stream(request, context):
            yield handler.response_serializer(message)

    async def submit(self, match_id: str, token: str, action: str, expected_seq: int,
                     client_action_id: str) -> bytes:
        context = _Context(token)
        handler = await self._handler("SubmitAction", context)
        request = handler.request_deserializer(self.pb.SubmitActionRequest(
            match_id=match_id, action=action, expected_seq=expected_seq,
            client_action_id=client_action_id).SerializeToString())
        return handler.response_serializer(await handler.unary_unary(request, context))


class Table:
    """One match played to its end by per-seat clients driven by their own watch streams."""

    def __init__(self, mgr: MatchManager, rng: random.Random, rpc: Rpc | None = None,
                 countdown: Countdown | None = None) -> None:
        self.mgr, self.rng, self.rpc = mgr, rng, rpc
        self.actions = 0
        self.countdown = countdown

    async def play(self, game: str) -> None:
        summary = await self.mgr.create_match(CreateMatchRequest(game=game))
        match_id = summary.match_id
        principals, tokens = [], []
        for seat in range(len(summary.seats)):
            joined = await self.mgr.join_match(match_id, seat, f"player {seat}")
            principals.append(self.mgr.authenticate(match_id, joined.token))
            tokens.append(joined.token)
        if self.rpc is not None:
            seats = (self._rpc_seat(match_id, seat, t) for seat, t in enumerate(tokens))
        else:
            seats = (self._seat(match_id, seat, p) for seat, p in enumerate(principals))
        await asyncio.gather(*seats)

    def _accepted(self) -> None:
        self.actions += 1
        if self.countdown is not None:
            self.countdown.count()

    async def _rpc_seat(self, match_id: str, seat: int, token: str) -> None:
        acted_at = -1
        m = self.mgr._matches[match_id]  # the seat's turn, as its client reads it from the view
        async for _ in self.rpc.watch(match_id, token):  # ends after match_ended
            if m.over:
                continue
            env = m.envelope(seat)
            if env.seq <= acted_at or env.view.get("to_act") != seat or not env.view.get("legal"):
                continue
            acted_at = env.seq
            action = self.rng.choice(list(env.view["legal"]))
            try:  # a task per call, as grpc.aio runs it (its own contextvars)
                await asyncio.ensure_future(self.rpc.submit(match_id, token, action, env.seq,
                                                            f"{seat}-{env.seq}"))
            except RuntimeError:  # aborted: stale or over (the interceptor logged it)
                continue
            self._accepted()

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
            self._accepted()


async def run(game: str, matches: int, seconds: float, db: str, profile: str | None,
              warmup: float = 2.0, servicers: bool = False, actions: int = 0,
              warmup_actions: int = 0) -> dict:
    if actions:  # deterministic: no timer fires, whatever the speed (valgrind)
        config = SessionConfig(db_path=db, snapshot_threshold=100_000, heartbeat_interval_s=1e6,
                               time_scale=1e4, reconnect_grace_s=1e6)
    else:
        config = SessionConfig(db_path=db, snapshot_threshold=100_000)
    metrics = Metrics()
    mgr = MatchManager(config, metrics=metrics, create_bot_host=False)
    await mgr.start()
    rpc = Rpc(mgr, metrics) if servicers else None
    countdown = Countdown() if actions else None
    tables = [Table(mgr, random.Random(i), rpc, countdown) for i in range(matches)]
    playing = True

    async def keep_playing(table: Table) -> None:
        try:
            while playing:
                await table.play(game)
        except Exception as exc:  # a broken run must end, not wait for its count forever
            if countdown is not None and countdown.reached is not None and not countdown.reached.done():
                countdown.reached.set_exception(exc)
            raise

    def counted() -> int:
        return sum(t.actions for t in tables)

    profiler = cProfile.Profile() if profile else None
    players = [asyncio.ensure_future(keep_playing(t)) for t in tables]
    try:
        if countdown is not None:
            if warmup_actions:
                await countdown.start(warmup_actions)
        else:
            await asyncio.sleep(warmup)  # caches filled, matches at every stage of play
        actions0, cpu0, loop0, wall0 = counted(), time.process_time(), time.thread_time(), time.monotonic()
        if profiler:
            profiler.enable()
        if countdown is not None:
            await countdown.start(actions)
        else:
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
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    ap.add_argument("--game", action="append", help="game id (repeatable; default: all four)")
    ap.add_argument("--matches", type=int, default=64, help="concurrent matches")
    ap.add_argument("--seconds", type=float, default=10.0, help="measured seconds per game")
    ap.add_argument("--db", default=None, help="'memory:' or a SQLite path (default: a temp SQLite file)")
    ap.add_argument("--servicers", action="store_true",
                    help="call the servicers behind the observability interceptor (see above)")
    ap.add_argument("--actions", type=int, default=0,
                    help="measure this many accepted actions, deterministically (see above)")
    ap.add_argument("--warmup-actions", type=int, default=500,
                    help="with --actions: actions played before the measurement")
    ap.add_argument("--seed", type=int, default=1, help="with --actions: the decks' seed")
    ap.add_argument("--profile", nargs="?", const="tottime", choices=("tottime", "cumulative"),
                    help="print the 40 functions with the most own (or cumulative) time under cProfile "
                    "(which inflates the cost of small calls: compare like with like)")
    args = parse_args(ap, argv)
    # the service's JSON log lines (domain events such as action_applied), written to nowhere
    configure_logging("json", "info", stream=open(os.devnull, "w"))
    tune_gc()  # the service's collector settings (gc_policy): collections are part of the cost
    games = args.game or ["klaberjass", "jojotte", "georgian_joker", "japanese_joker"]
    if args.actions:
        args.db = args.db or "memory:"  # no store thread: one deterministic schedule
    with tempfile.TemporaryDirectory() as tmp:
        for game in games:
            db = args.db or str(Path(tmp) / f"{game}.sqlite3")
            if args.actions:  # the same decks in every run (the service's are a CSPRNG's)
                chance._csprng = random.Random(args.seed)
            res = asyncio.run(run(game, args.matches, args.seconds, db, args.profile,
                                  servicers=args.servicers, actions=args.actions,
                                  warmup_actions=args.warmup_actions))
            print(f"{game:15s} cpu_us_per_action={res['cpu_us_per_action']:,.0f}  "
                  f"loop_us_per_action={res['loop_us_per_action']:,.0f}  "
                  f"actions_per_cpu_s={res['actions_per_cpu_s']:,.0f}  actions={res['actions']:,}  "
                  f"matches={res['matches']}  db={'memory' if db == 'memory:' else 'sqlite'}", flush=True)
            if args.profile:
                print(res["profile"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
