"""Load benchmark of the gRPC service (a benchmark, not a test): ``python bench/service_load.py``.

Four measurements, each against a fresh server process on a temp SQLite database, with client
processes (spawned) on the same machine:

1. **echo** — a bare grpc.aio server with one bytes-in / bytes-out unary method: the ceiling of
   gRPC-Python on this machine, measured in the same run (design/research/ecosystem.md:
   ~4,000 calls/s at 64 in flight on 2 cores). Reported: calls/s, p50/p99 latency, the echo
   server's CPU time per call.
2. **play** — ``--matches`` concurrent matches played through the API by per-seat clients
   (each seat follows its own WatchMatch stream and submits with expected_seq and a
   client_action_id, as a real frontend does); finished matches are replaced. Reported:
   accepted actions/s, p50/p99 SubmitAction latency, stream messages/s, and CPU time per
   accepted action of the server (all its threads, from /proc: a figure that a busy machine
   disturbs far less than the wall-clock ones) and of the client processes.
3. **idle** — memory per open idle match: ``--idle-matches`` matches created and joined (every
   seat taken, nobody acting) in one server process; RSS growth / matches. Target <= 50 KB.
   Deadlines are scaled away (time_scale) so that no timer fires during the measurement.
4. **watchers** — ``--watchers`` spectator streams on one match played at full speed; every
   watcher must receive every action (a watcher that overflows its queue resumes with
   after_seq, as clients must). Reported: actions, messages delivered/s, delivery lag p50/p99.

On request (``--only floor``): **floor** — the play measurement's clients against a server that
speaks the same messages (views of the real size, already encoded) with no game, session or
store behind them: what gRPC-Python and these clients allow on this machine at best.

The machine is shared: run it on a quiet machine and read the figures as a ceiling for client
and server together on one box. ``--service-dir`` runs the service from another directory (an
older commit unpacked with ``git archive``) to compare two versions in the same conditions
(bench/README.md).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context
from pathlib import Path

import grpc

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from engine_service.command_line import parse_args  # noqa: E402
from engine_service.transport.generated import card_games_pb2 as pb  # noqa: E402
from engine_service.transport.generated import card_games_pb2_grpc, match_pb2  # noqa: E402

#: Where the measured service is run from (``--service-dir``): this checkout, or another one
#: (an older commit unpacked with ``git archive``) to compare two versions on the same machine.
SERVICE_DIR = REPO

ACTION = match_pb2.EVENT_KIND_ACTION
ENDED = match_pb2.EVENT_KIND_MATCH_ENDED
LOCAL_POOL = [("grpc.use_local_subchannel_pool", 1)]


def pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))]


def bearer(token: str):
    return (("authorization", f"Bearer {token}"),)


# ---- servers ---------------------------------------------------------------------------------

class ServiceProcess:
    """``python -m engine_service serve`` on a temp database, port chosen by the OS."""

    def __init__(self, workdir: Path, **env: str) -> None:
        self.log = workdir / f"serve-{time.monotonic_ns()}.log"
        self.port = _free_port()  # known in advance: the "serving" line may be filtered out
        environ = {**os.environ, "CARDGAMES_PORT": str(self.port), "CARDGAMES_METRICS_PORT": "0",
                   "CARDGAMES_HOST": "127.0.0.1", "CARDGAMES_METRICS_HOST": "127.0.0.1",
                   "CARDGAMES_DB": str(workdir / f"bench-{time.monotonic_ns()}.sqlite3"),
                   "CARDGAMES_LOG_FORMAT": "json", "CARDGAMES_BOT_WORKERS": "1", **env}
        if SERVICE_DIR != REPO:
            environ["PYTHONPATH"] = os.pathsep.join(filter(None, (str(SERVICE_DIR), environ.get("PYTHONPATH"))))
        self._out = open(self.log, "w")
        self.proc = subprocess.Popen([sys.executable, "-m", "engine_service", "serve"], cwd=SERVICE_DIR,
                                     env=environ, stdout=self._out, stderr=subprocess.STDOUT)
        self.target = f"127.0.0.1:{self.port}"
        deadline = time.monotonic() + 60
        while not self._healthy():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"serve did not start:\n{self.log.read_text()}")
            time.sleep(0.2)

    def _healthy(self) -> bool:
        from grpc_health.v1 import health_pb2, health_pb2_grpc

        with grpc.insecure_channel(self.target) as ch:
            try:
                reply = health_pb2_grpc.HealthStub(ch).Check(health_pb2.HealthCheckRequest(), timeout=1)
            except grpc.RpcError:
                return False
        return reply.status == health_pb2.HealthCheckResponse.SERVING

    def cpu_s(self) -> float:
        return _cpu_s(self.proc.pid)

    def rss_kb(self) -> int:
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
        raise RuntimeError("no VmRSS")

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(60)
        self._out.close()


def _cpu_s(pid: int) -> float:
    """CPU time (user + system, every thread) process ``pid`` has used so far, in seconds."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _echo_server(port_queue) -> None:
    async def main() -> None:
        async def echo(request: bytes, context) -> bytes:
            return request

        server = grpc.aio.server()
        server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(
            "bench.Echo", {"Echo": grpc.unary_unary_rpc_method_handler(echo)}),))
        port = server.add_insecure_port("127.0.0.1:0")
        await server.start()
        port_queue.put(port)
        await server.wait_for_termination()

    asyncio.run(main())


def _floor_server(port_queue, game: str) -> None:
    """The benchmark's part of CardGamesService with no game, session or store behind it: a
    match is a sequence number and two queues; every action sends each seat a stream message
    and the submitter an answer, of the size the service's views have (a real view of
    ``game`` in the middle of a deal), already encoded. What the play measurement gets from
    gRPC-Python and its own clients on this machine when the service costs nothing."""
    import itertools

    from engine_service.rules.game import CHANCE
    from engine_service.rules.registry import get_game
    from engine_service.sessions.api import ViewEnvelope
    from engine_service.transport import codec

    rules = get_game(game)
    rng, state = random.Random(1), rules.new_state()
    while state.to_act() < 0 or len(state.view(0)["hand"]) > 5:  # mid-deal: a typical view
        if state.to_act() == CHANCE:
            deck = list(rules.pack)
            rng.shuffle(deck)
            state.deal(deck)
        else:
            state.apply(rng.choice(state.legal_actions()), state.to_act())
    template = codec.view_message(ViewEnvelope("m", 0, "active", state.view(0), time.time() + 30, 0))
    seats = rules.num_seats

    async def main() -> None:
        matches: dict[str, list] = {}
        ids = itertools.count()

        def event(match_id: str, seq: int, seat: int) -> bytes:
            msg = pb.WatchMatchResponse(kind=ACTION, seq=seq, match_id=match_id, seat=seat)
            msg.view.CopyFrom(template)
            msg.view.seq, msg.view.seat, msg.view.to_act = seq, seat, seq % seats
            if seq % seats != seat:
                del msg.view.legal_actions[:]
            return msg.SerializeToString()

        async def create(request: bytes, context) -> bytes:
            match_id = f"m{next(ids)}"
            matches[match_id] = [0, [asyncio.Queue() for _ in range(seats)]]
            summary = match_pb2.MatchSummary(match_id=match_id, seats=[match_pb2.SeatInfo(seat=i) for i in range(seats)])
            return pb.CreateMatchResponse(match=summary).SerializeToString()

        async def join(request: bytes, context) -> bytes:
            req = pb.JoinMatchRequest.FromString(request)
            return pb.JoinMatchResponse(match_id=req.match_id, seat=req.seat,
                                        seat_token=f"{req.match_id}:{req.seat}").SerializeToString()

        async def watch(request: bytes, context):
            token = dict(context.invocation_metadata())["authorization"].split()[-1]
            match_id, seat = token.split(":")
            m = matches[match_id]
            yield event(match_id, m[0], int(seat))
            while True:
                yield await m[1][int(seat)].get()

        async def submit(request: bytes, context) -> bytes:
            req = pb.SubmitActionRequest.FromString(request)
            m = matches[req.match_id]
            m[0] += 1
            for seat, queue in enumerate(m[1]):
                queue.put_nowait(event(req.match_id, m[0], seat))
            answer = pb.SubmitActionResponse(seq=m[0], action=codec.action_message(req.action))
            answer.view.CopyFrom(template)
            return answer.SerializeToString()

        server = grpc.aio.server()
        server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler("cardgames.v1.CardGamesService", {
            "CreateMatch": grpc.unary_unary_rpc_method_handler(create),
            "JoinMatch": grpc.unary_unary_rpc_method_handler(join),
            "WatchMatch": grpc.unary_stream_rpc_method_handler(watch),
            "SubmitAction": grpc.unary_unary_rpc_method_handler(submit)}),))
        port = server.add_insecure_port("127.0.0.1:0")
        await server.start()
        port_queue.put(port)
        await server.wait_for_termination()

    try:
        import uvloop
    except ImportError:  # the service's own choice (--event-loop auto)
        asyncio.run(main())
    else:
        with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
            runner.run(main())


# ---- client workers (run in spawned processes) -------------------------------------------------

def echo_worker(target: str, in_flight: int, duration: float) -> dict:
    async def main() -> dict:
        latencies: list[float] = []
        payload = os.urandom(100)
        async with grpc.aio.insecure_channel(target) as ch:
            call = ch.unary_unary("/bench.Echo/Echo")
            await call(payload)
            stop = time.perf_counter() + duration

            async def loop() -> None:
                while time.perf_counter() < stop:
                    t = time.perf_counter()
                    await call(payload)
                    latencies.append(time.perf_counter() - t)

            await asyncio.gather(*(loop() for _ in range(in_flight)))
        return {"calls": len(latencies), "latencies": latencies}

    return asyncio.run(main())


async def _new_match(stub, game: str) -> tuple[str, list[str]]:
    created = await stub.CreateMatch(pb.CreateMatchRequest(game=game))
    match_id = created.match.match_id
    tokens = []
    for seat in range(len(created.match.seats)):
        joined = await stub.JoinMatch(pb.JoinMatchRequest(match_id=match_id, seat=seat))
        tokens.append(joined.seat_token)
    return match_id, tokens


async def _play_seat(stub, match_id: str, seat: int, token: str, rng: random.Random, stop: float,
                     stats: dict) -> None:
    acted = -1
    call = stub.WatchMatch(pb.WatchMatchRequest(match_id=match_id, after_seq=0), metadata=bearer(token))
    try:
        async for ev in call:
            stats["messages"] += 1
            if ev.kind == ENDED or time.perf_counter() > stop:
                return
            v = ev.view
            if not ev.HasField("view") or not v.HasField("to_act") or v.to_act != seat or v.seq <= acted:
                continue
            acted = v.seq
            req = pb.SubmitActionRequest(match_id=match_id, expected_seq=v.seq,
                                         action=rng.choice(list(v.legal_actions)).notation,
                                         client_action_id=f"{seat}-{v.seq}")
            t = time.perf_counter()
            try:
                await stub.SubmitAction(req, metadata=bearer(token))
            except grpc.aio.AioRpcError as exc:
                if exc.code() in (grpc.StatusCode.ABORTED, grpc.StatusCode.FAILED_PRECONDITION):
                    continue
                raise
            stats["latencies"].append((t, time.perf_counter() - t))
    finally:
        call.cancel()


def play_worker(target: str, game: str, matches: int, duration: float, seed: int) -> dict:
    async def main() -> dict:
        stats = {"latencies": [], "messages": 0, "matches": 0, "cpu_s": -time.process_time()}
        rng = random.Random(seed)
        # one connection per 16 tables: the server allows 100 concurrent calls per connection
        # (--max-concurrent-streams) and each table holds one stream per seat
        channels = [grpc.aio.insecure_channel(target, options=LOCAL_POOL)
                    for _ in range((matches + 15) // 16)]
        stop = time.perf_counter() + duration

        async def one_table(i: int) -> None:
            stub = card_games_pb2_grpc.CardGamesServiceStub(channels[i // 16])
            while time.perf_counter() < stop:
                match_id, tokens = await _new_match(stub, game)
                stats["matches"] += 1
                await asyncio.gather(*(_play_seat(stub, match_id, s, t, random.Random(rng.random()),
                                                  stop, stats) for s, t in enumerate(tokens)))

        await asyncio.gather(*(one_table(i) for i in range(matches)))
        for ch in channels:
            await ch.close()
        stats["cpu_s"] += time.process_time()
        return stats

    return asyncio.run(main())


def create_worker(target: str, game: str, count: int, in_flight: int) -> int:
    async def main() -> int:
        made = 0
        async with grpc.aio.insecure_channel(target, options=LOCAL_POOL) as ch:
            stub = card_games_pb2_grpc.CardGamesServiceStub(ch)
            todo = iter(range(count))

            async def loop() -> None:
                nonlocal made
                for _ in todo:
                    await _new_match(stub, game)
                    made += 1

            await asyncio.gather(*(loop() for _ in range(in_flight)))
        return made

    return asyncio.run(main())


def watch_worker(target: str, match_id: str, watchers: int, start_at: float) -> dict:
    """``watchers`` spectator streams (50 per connection); every action's arrival times."""
    async def main() -> dict:
        arrivals: dict[int, list[float]] = {}
        resumes = 0
        channels = [grpc.aio.insecure_channel(target, options=LOCAL_POOL)
                    for _ in range((watchers + 49) // 50)]

        async def one(i: int) -> list[int]:
            nonlocal resumes
            stub = card_games_pb2_grpc.CardGamesServiceStub(channels[i // 50])
            seen: list[int] = []
            after = None
            while True:
                req = pb.WatchMatchRequest(match_id=match_id)
                if after is not None:
                    req.after_seq = after
                try:
                    async for ev in stub.WatchMatch(req):
                        if ev.kind == ACTION:
                            seen.append(ev.seq)
                            after = ev.seq
                            arrivals.setdefault(ev.seq, []).append(time.time())
                        elif ev.kind == match_pb2.EVENT_KIND_SNAPSHOT:
                            after = ev.seq
                        elif ev.kind == ENDED:
                            return seen
                except grpc.aio.AioRpcError as exc:
                    if exc.code() != grpc.StatusCode.UNAVAILABLE:
                        raise
                    resumes += 1  # fell behind (queue overflow): resume where it stopped

        while time.time() < start_at:
            await asyncio.sleep(0.01)
        seen = await asyncio.gather(*(one(i) for i in range(watchers)))
        for ch in channels:
            await ch.close()
        return {"seen": seen, "arrivals": arrivals, "resumes": resumes}

    return asyncio.run(main())


# ---- the four measurements ---------------------------------------------------------------------

def bench_echo(pool, clients: int, in_flight: int, duration: float) -> dict:
    ctx = get_context("spawn")
    ports = ctx.Queue()
    server = ctx.Process(target=_echo_server, args=(ports,), daemon=True)
    server.start()
    try:
        target = f"127.0.0.1:{ports.get(timeout=60)}"
        per = max(1, in_flight // clients)
        cpu0 = _cpu_s(server.pid)
        results = list(pool.map(echo_worker, [target] * clients, [per] * clients, [duration] * clients))
        cpu = _cpu_s(server.pid) - cpu0
    finally:
        server.terminate()
        server.join(10)
    lat = [x for r in results for x in r["latencies"]]
    return {"calls_per_s": sum(r["calls"] for r in results) / duration, "in_flight": per * clients,
            "p50_ms": pct(lat, 0.5) * 1e3, "p99_ms": pct(lat, 0.99) * 1e3,
            "server_cpu_ms_per_call": cpu * 1e3 / max(1, len(lat))}


def bench_floor(pool, clients: int, matches: int, game: str, duration: float) -> dict:
    """The play measurement against :func:`_floor_server` (a service that costs nothing)."""
    ctx = get_context("spawn")
    ports = ctx.Queue()
    server = ctx.Process(target=_floor_server, args=(ports, game), daemon=True)
    server.start()
    try:
        target = f"127.0.0.1:{ports.get(timeout=60)}"
        per = max(1, matches // clients)
        cpu0 = _cpu_s(server.pid)
        results = list(pool.map(play_worker, [target] * clients, [game] * clients,
                                [per] * clients, [duration] * clients, range(clients)))
        cpu = _cpu_s(server.pid) - cpu0
    finally:
        server.terminate()
        server.join(10)
    lat = [d for r in results for _, d in r["latencies"]]
    return {"game": game, "matches_in_play": per * clients, "actions": len(lat),
            "actions_per_s": len(lat) / duration, "p50_ms": pct(lat, 0.5) * 1e3,
            "p99_ms": pct(lat, 0.99) * 1e3,
            "server_cpu_ms_per_action": cpu * 1e3 / max(1, len(lat)),
            "client_cpu_ms_per_action": sum(r["cpu_s"] for r in results) * 1e3 / max(1, len(lat))}


def bench_play(pool, workdir: Path, clients: int, matches: int, game: str, duration: float,
               db: str | None = None) -> dict:
    service = ServiceProcess(workdir, **({"CARDGAMES_DB": db} if db else {}))
    try:
        per = max(1, matches // clients)
        t0, cpu0 = time.perf_counter(), service.cpu_s()
        results = list(pool.map(play_worker, [service.target] * clients, [game] * clients,
                                [per] * clients, [duration] * clients, range(clients)))
        elapsed, cpu = time.perf_counter() - t0, service.cpu_s() - cpu0
    finally:
        service.stop()
    lat = [d for r in results for _, d in r["latencies"]]
    return {"game": game, "db": db or "sqlite", "matches_in_play": per * clients, "actions": len(lat),
            "actions_per_s": len(lat) / duration, "p50_ms": pct(lat, 0.5) * 1e3,
            "p99_ms": pct(lat, 0.99) * 1e3, "matches_started": sum(r["matches"] for r in results),
            "stream_messages_per_s": sum(r["messages"] for r in results) / duration,
            # server CPU per accepted action: everything the server did during the run (joins,
            # streams, creates included) divided by the actions; immune to a busy machine
            "server_cpu_ms_per_action": cpu * 1e3 / max(1, len(lat)),
            "server_cpu_util": cpu / elapsed,
            "client_cpu_ms_per_action": sum(r["cpu_s"] for r in results) * 1e3 / max(1, len(lat)),
            "wall_s": elapsed}


def _full_collections(metrics_port: int) -> tuple[float, float]:
    """(count, sum of pauses) of the server's full garbage collections (its metrics endpoint)."""
    import urllib.request

    text = urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics", timeout=10).read().decode()
    values = {line.rsplit(" ", 1)[0]: float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
              if line.startswith("cardgames_gc_pause_seconds_")}
    return (values['cardgames_gc_pause_seconds_count{generation="2"}'],
            values['cardgames_gc_pause_seconds_sum{generation="2"}'])


def bench_idle(pool, workdir: Path, clients: int, count: int, game: str) -> dict:
    """Memory per open idle match, and the pause of a full garbage collection with them all
    in memory (the server's timed collection, every 3 s here: engine_service.gc_policy)."""
    metrics_port = _free_port()
    service = ServiceProcess(workdir, CARDGAMES_TIME_SCALE="100000",
                             CARDGAMES_MAX_MATCHES=str(count + 1000), CARDGAMES_LOG_LEVEL="warning",
                             CARDGAMES_METRICS_PORT=str(metrics_port),
                             CARDGAMES_GC_FULL_COLLECTION_INTERVAL_S="3")
    try:
        list(pool.map(create_worker, [service.target] * clients, [game] * clients, [100] * clients,
                      [8] * clients))  # warm up: imports, caches, store pages
        time.sleep(1.0)
        before = service.rss_kb()
        t0 = time.perf_counter()
        per = count // clients
        made = sum(pool.map(create_worker, [service.target] * clients, [game] * clients,
                            [per] * clients, [32] * clients))
        elapsed = time.perf_counter() - t0
        time.sleep(2.0)
        after = service.rss_kb()
        collections, paused = _full_collections(metrics_port)
        time.sleep(6.5)  # two timed collections, nothing else running
        collections2, paused2 = _full_collections(metrics_port)
    finally:
        service.stop()
    return {"game": game, "matches": made, "rss_before_mb": before / 1024, "rss_after_mb": after / 1024,
            "kb_per_match": (after - before) / made, "create_and_join_per_s": made / elapsed,
            # None: no timed collection came in the window (the figure would be a false 0)
            "full_gc_pause_ms": (1000 * (paused2 - paused) / (collections2 - collections)
                                 if collections2 > collections else None)}


async def _drain(call) -> None:
    async for ev in call:
        if ev.kind == ENDED:
            return


def bench_watchers(pool, workdir: Path, clients: int, watchers: int, game: str) -> dict:
    service = ServiceProcess(workdir, CARDGAMES_MAX_WATCHERS_PER_MATCH=str(watchers + 10),
                             CARDGAMES_MAX_WATCHERS=str(watchers + 10), CARDGAMES_LOG_LEVEL="warning")
    try:
        async def setup():
            async with grpc.aio.insecure_channel(service.target) as ch:
                return await _new_match(card_games_pb2_grpc.CardGamesServiceStub(ch), game)
        match_id, tokens = asyncio.run(setup())
        start_at = time.time() + 3.0  # every watcher process is up before the first action
        per = watchers // clients
        futures = [pool.submit(watch_worker, service.target, match_id, per, start_at)
                   for _ in range(clients)]

        async def players() -> dict[int, float]:
            acked: dict[int, float] = {}
            while time.time() < start_at + 2.0:  # let every stream open
                await asyncio.sleep(0.05)
            async with grpc.aio.insecure_channel(service.target) as ch:
                stub = card_games_pb2_grpc.CardGamesServiceStub(ch)
                # the players' own streams: their presence (a seat without one is disconnected
                # and, past the grace period, forfeits)
                presence = [stub.WatchMatch(pb.WatchMatchRequest(match_id=match_id), metadata=bearer(t))
                            for t in tokens]
                drains = [asyncio.ensure_future(_drain(call)) for call in presence]
                rng = random.Random(1)
                while True:
                    view = (await stub.GetView(pb.GetViewRequest(match_id=match_id),
                                               metadata=bearer(tokens[0]))).view
                    if view.status != match_pb2.MATCH_STATUS_ACTIVE:
                        await asyncio.gather(*drains)
                        return acked
                    seat = view.to_act
                    mine = (await stub.GetView(pb.GetViewRequest(match_id=match_id),
                                               metadata=bearer(tokens[seat]))).view
                    sent = time.time()
                    res = await stub.SubmitAction(pb.SubmitActionRequest(
                        match_id=match_id, action=rng.choice(list(mine.legal_actions)).notation,
                        expected_seq=mine.seq), metadata=bearer(tokens[seat]))
                    acked[res.seq] = sent  # lag: from sending the action to each delivery

        acked = asyncio.run(players())
        results = [f.result() for f in futures]
    finally:
        service.stop()
    final = max(acked)
    complete = sum(seen == list(range(1, final + 1)) for r in results for seen in r["seen"])
    lags = [arrival - acked[seq] for r in results for seq, times in r["arrivals"].items()
            for arrival in times if seq in acked]
    delivered = sum(len(s) for r in results for s in r["seen"])
    last_arrival = max(t for r in results for times in r["arrivals"].values() for t in times)
    elapsed = last_arrival - min(acked.values())  # first action to last delivery
    return {"game": game, "watchers": per * clients, "actions": final,
            "watchers_with_every_event_once": complete, "resumes_after_overflow": sum(r["resumes"] for r in results),
            "messages_delivered": delivered, "messages_per_s": delivered / elapsed,
            "lag_p50_ms": pct(lags, 0.5) * 1e3, "lag_p99_ms": pct(lags, 0.99) * 1e3}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    ap.add_argument("--clients", type=int, default=2, help="client processes")
    ap.add_argument("--matches", type=int, default=64, help="concurrent matches in play")
    ap.add_argument("--in-flight", type=int, default=64, help="echo calls in flight")
    ap.add_argument("--duration", type=float, default=15.0, help="seconds per throughput run")
    ap.add_argument("--game", default="japanese_joker")
    ap.add_argument("--idle-matches", type=int, default=10_000)
    ap.add_argument("--watchers", type=int, default=1_000)
    ap.add_argument("--db", default=None, help="play run's database (default: a temp SQLite file; "
                    "'memory:' measures the service without durable writes)")
    ap.add_argument("--only", choices=("echo", "play", "floor", "idle", "watchers"), action="append",
                    help="run only these measurements (repeatable); 'floor' (not in the default "
                    "set) is the play measurement against a server with no game behind it")
    ap.add_argument("--service-dir", type=Path, default=REPO,
                    help="run the service from this directory (default: this checkout), e.g. an "
                    "older commit unpacked with 'git archive' to compare versions")
    ap.add_argument("--json", action="store_true", help="print one JSON object")
    args = parse_args(ap, argv)
    global SERVICE_DIR
    SERVICE_DIR = args.service_dir.resolve()
    parts = args.only or ["echo", "play", "idle", "watchers"]
    out: dict[str, dict] = {}
    with tempfile.TemporaryDirectory() as tmp, \
            ProcessPoolExecutor(max_workers=args.clients, mp_context=get_context("spawn")) as pool:
        workdir = Path(tmp)
        if "echo" in parts:
            out["echo"] = _loaded(bench_echo(pool, args.clients, args.in_flight, args.duration))
            print("echo    ", _fmt(out["echo"]), flush=True)
        if "play" in parts:
            out["play"] = _loaded(bench_play(pool, workdir, args.clients, args.matches, args.game,
                                             args.duration, args.db))
            print("play    ", _fmt(out["play"]), flush=True)
        if "floor" in parts:
            out["floor"] = _loaded(bench_floor(pool, args.clients, args.matches, args.game, args.duration))
            print("floor   ", _fmt(out["floor"]), flush=True)
        if "idle" in parts:
            out["idle"] = _loaded(bench_idle(pool, workdir, args.clients, args.idle_matches, args.game))
            print("idle    ", _fmt(out["idle"]), flush=True)
        if "watchers" in parts:
            out["watchers"] = _loaded(bench_watchers(pool, workdir, args.clients, args.watchers, args.game))
            print("watchers", _fmt(out["watchers"]), flush=True)
    for name in ("play", "floor"):
        if "echo" in out and name in out:
            share = out[name]["actions_per_s"] / out["echo"]["calls_per_s"]
            out[name]["share_of_echo"] = share
            met = share >= 0.5 and out[name]["p99_ms"] < 30
            print(f"{name + ' vs echo':16s} {share:.1%} of the echo's calls/s, p99 {out[name]['p99_ms']:.1f} ms "
                  f"(target: >= 50% and p99 < 30 ms at 64 in flight: {'met' if met else 'NOT met'}; "
                  f"the echo's own p99: {out['echo']['p99_ms']:.1f} ms)", flush=True)
            print(f"{name + ' budget':16s} {_budget(out[name], out['echo'], args.matches)}", flush=True)
    if args.json:
        print(json.dumps(out))
    return 0


def _budget(run: dict, echo: dict, in_flight: int) -> str:
    """What the machine allows, from the run's own CPU figures: clients and server share the
    cores, so ``cores / (server + client CPU per action)`` bounds the actions per second
    whatever the scheduling; and with ``in_flight`` actions always in flight the mean latency
    is ``in_flight / throughput`` (Little's law), so a p99 under 30 ms needs at least
    ``in_flight / 30 ms`` actions per second."""
    cores = os.cpu_count() or 1
    per_action_ms = run["server_cpu_ms_per_action"] + run["client_cpu_ms_per_action"]
    ceiling = cores * 1e3 / per_action_ms
    needed = 0.5 * echo["calls_per_s"]
    return (f"{cores} cores / ({run['server_cpu_ms_per_action']:.2f} server + "
            f"{run['client_cpu_ms_per_action']:.2f} client ms of CPU per action) = at most "
            f"{ceiling:,.0f} actions/s on this machine; 50% of the echo ({needed:,.0f}/s) needs "
            f"<= {cores * 1e3 / needed:.2f} ms per action, clients included; p99 < 30 ms at "
            f"{in_flight} in flight needs > {in_flight / 0.030:,.0f} actions/s (Little's law)")


def _loaded(d: dict) -> dict:
    """Adds the 1-minute load average: the machine is shared, a figure taken while other
    processes ran is a floor, not a ceiling."""
    d["loadavg_1m"] = os.getloadavg()[0]
    return d


def _fmt(d: dict) -> str:
    return "  ".join(f"{k}={v:,.1f}" if isinstance(v, float) else f"{k}={v}" for k, v in d.items())


if __name__ == "__main__":
    sys.exit(main())
