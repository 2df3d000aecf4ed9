"""Soak benchmark of the gRPC service (a command, not a test): ``python bench/soak.py``.

The service must run for days, so what it holds must not grow with the matches it has played.
This starts the real service (``python -m engine_service serve``, via
``bench.service_load.ServiceProcess``) on a temp SQLite database with a short
``--finished-retention-s`` (finished matches leave memory seconds after they end) and drives it
for ``--minutes`` with client processes that keep ``--tables`` tables busy. Each table plays
one match after another, cycling through the four games (short and default table options):

* every seat is a client that follows its own WatchMatch stream and submits random legal
  actions with ``expected_seq`` and a ``client_action_id`` (now and then the same request
  twice: the second must come back ``duplicate``);
* in some matches a seat lets a few of its turns time out (the per-match turn time is
  ``--turn-time-s`` times ``--time-scale``: the server's auto-move plays), a seat leaves
  (LeaveMatch resign: a two-player match ends, a Georgian Joker seat is played by the
  auto-move policy to the end) or a seat's client vanishes (its stream closes; after the
  reconnect grace the match is forfeited or its seat taken over);
* some matches keep their spectators a few actions behind (``spectator_delay_actions``);
* some matches have spectators that drop their stream mid-match and resume with
  ``after_seq``; every stream is checked for gaps and repeats.

Every ``--sample-s`` seconds it samples the server: RSS, open fds and threads (/proc), the
metrics endpoint (``cardgames_matches_active``, ``cardgames_watchers``, finished matches,
accepted actions, ``process_*``), the database file sizes, and, from a probe thread injected
into the server (a ``sitecustomize`` on its PYTHONPATH; ``--no-probe`` leaves the server
untouched), live asyncio tasks, gc-tracked objects, live instances of the service's own
classes and the sizes of the module-level caches and of the session manager's tables. After
the run the clients vanish and the server is sampled ``--cooldown-s`` longer: everything must
go back to idle.

Verdict: each figure is fitted (least squares) against matches finished over the second half
of the run (the first half is warm-up: caches fill, the allocator settles) and reported as
growth per 1,000 finished matches; a figure is flagged GROWING when the fit explains most of
its variation (r^2 >= 0.5) and projects more than a noise floor over the window. The
gc-tracked objects are judged only when the window holds two or more of the server's timed full
collections: between two of them cyclic garbage only accumulates.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import sys
import tempfile
import textwrap
import time
import urllib.request
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context
from pathlib import Path

import grpc
from google.protobuf import duration_pb2

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.service_load import (ACTION, ENDED, LOCAL_POOL, ServiceProcess, _cpu_s,  # noqa: E402
                                _free_port, bearer)
from engine_service.command_line import parse_args  # noqa: E402
from engine_service.transport.generated import card_games_pb2 as pb  # noqa: E402
from engine_service.transport.generated import card_games_pb2_grpc, match_pb2  # noqa: E402

SNAPSHOT = match_pb2.EVENT_KIND_SNAPSHOT

#: Table options per game: the rulebook's defaults and shorter matches (more matches finish
#: per minute; every variant is a table a real lobby offers). Georgian Joker has no short form.
VARIANTS: dict[str, list[dict]] = {
    "klaberjass": [{}, {"kl_target_score": 150}, {"kl_target_score": 150}],
    "jojotte": [{}, {"jj_game_target": 30}],
    "georgian_joker": [{"reconnect_grace_s": 15}, {"reconnect_grace_s": 15, "deal_schedule": "nines"}],
    "japanese_joker": [{"reconnect_grace_s": 15}, {"reconnect_grace_s": 15, "target_score": 11}],
}
GAMES = list(VARIANTS)

#: The probe's heap figures: shown with their growth to explain RSS, never flagged themselves.
DIAGNOSTICS = ("py_blocks", "malloc_in_use_kb", "malloc_free_kb")
#: Noise floors of the verdict: growth projected over the fitted window below these is noise.
FLOORS = {"rss_kb": 4096, "fds": 3, "threads": 2, "tasks": 20, "watchers": 20,
          "matches_in_memory": 20, "gc_objects": 20_000, "wal_kb": 4096}


# ---- the probe: a thread in the server process ---------------------------------------------

PROBE = textwrap.dedent('''
    """Soak probe (bench/soak.py): active only in the process that finds CARDGAMES_SOAK_PROBE,
    which it removes so that the server's own child processes do not run it."""
    import os
    _OUT = os.environ.pop("CARDGAMES_SOAK_PROBE", None)
    if _OUT:
        import threading

        def _containers(prefix, namespace, out, caps):
            import collections, sys, weakref
            kinds = (dict, set, list, collections.deque, weakref.WeakSet,
                     weakref.WeakValueDictionary, weakref.WeakKeyDictionary)
            for name, obj in list(namespace.items()):
                if name.startswith("__"):
                    continue
                if isinstance(obj, kinds):
                    out[prefix + name] = len(obj)
                    if isinstance(obj, dict) and len(obj) > 100:  # what a large table holds
                        items = list(obj.items())
                        out[prefix + name + ".kb"] = sum(
                            sys.getsizeof(k) + sum(map(sys.getsizeof, v)) if type(v) is tuple
                            else sys.getsizeof(k) + sys.getsizeof(v) for k, v in items) // 1024
                elif hasattr(obj, "cache_info"):
                    out[prefix + name] = obj.cache_info().currsize
                    caps[prefix + name] = obj.cache_parameters()["maxsize"]
                else:
                    continue
                # the codec's bounded memos: NAME and NAME_MAX, or wire's NAME_CACHE and _CACHE_MAX
                cap = namespace.get(name + "_MAX", namespace.get("_CACHE_MAX") if name.endswith("_CACHE") else None)
                if isinstance(cap, int):
                    caps[prefix + name] = cap

        def _heap():
            # where RSS goes: Python's small-object allocator (blocks in use) and the C heap
            # (glibc's mallinfo2 over all its arenas: in use, and free but kept by malloc)
            import ctypes, sys
            out = {"py_blocks": sys.getallocatedblocks()}
            try:
                class _Mallinfo2(ctypes.Structure):
                    _fields_ = [(n, ctypes.c_size_t) for n in (
                        "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks",
                        "uordblks", "fordblks", "keepcost")]
                mallinfo2 = ctypes.CDLL(None).mallinfo2
                mallinfo2.restype = _Mallinfo2
                m = mallinfo2()
            except (AttributeError, OSError):  # not glibc >= 2.33
                return out
            out.update(malloc_in_use_kb=(m.uordblks + m.hblkhd) // 1024, malloc_free_kb=m.fordblks // 1024)
            return out

        def _sample(state):
            import asyncio, collections, gc, json, sys, time
            tasks = [t for t in list(asyncio.tasks._all_tasks) if not t.done()]
            collected, garbage = None, None
            if os.path.exists(_OUT + ".garbage"):
                # the cooldown of --gc-garbage: what the server's own collections left, by type
                # (the young generations first: their garbage would go at the next collection)
                gc.collect(1)
                gc.set_debug(gc.DEBUG_SAVEALL)
                try:
                    collected = gc.collect()
                    garbage = dict(collections.Counter(
                        f"{type(o).__module__}.{type(o).__qualname__}" for o in gc.garbage).most_common(20))
                finally:
                    gc.set_debug(0)
                    gc.garbage.clear()
            elif os.environ.get("CARDGAMES_SOAK_PROBE_COLLECT"):
                collected = gc.collect()
            objs = gc.get_objects()
            types = collections.Counter(type(o).__qualname__ for o in objs
                                        if type(o).__module__.startswith("engine_service"))
            if state.get("manager") is None:  # the MatchManager, from its sweeper task (the
                # manager itself predates gc.freeze(), so gc.get_objects() does not list it)
                sweeper = next((t for t in tasks if t.get_name() == "sessions-sweeper"), None)
                frame = sweeper.get_coro().cr_frame if sweeper is not None else None
                state["manager"] = frame.f_locals.get("self") if frame is not None else None
            sizes, caps = {}, {}
            for name, module in list(sys.modules.items()):
                if name.startswith("engine_service") and module is not None:
                    _containers(name.replace("engine_service.", "") + ".", vars(module), sizes, caps)
            if state["manager"] is not None:
                _containers("MatchManager.", vars(state["manager"]), sizes, caps)
            out = {"t": time.time(), "tasks": len(tasks), "gc_objects": len(objs), **_heap(),
                   "gc_collections": [g["collections"] for g in gc.get_stats()],
                   "gc_collected_now": collected, "gc_garbage": garbage,
                   "types": dict(types), "sizes": sizes, "caps": caps,
                   "task_names": dict(collections.Counter(t.get_name().split("-")[0] for t in tasks))}
            del objs
            tmp = _OUT + ".tmp"
            with open(tmp, "w") as f:
                json.dump(out, f)
            os.replace(tmp, _OUT)

        def _run():
            import time
            interval = float(os.environ.get("CARDGAMES_SOAK_PROBE_S", "10"))
            state = {}
            while True:
                time.sleep(interval)
                try:
                    _sample(state)
                except Exception as exc:  # a probe never takes the server down
                    with open(_OUT + ".err", "a") as f:
                        f.write(repr(exc) + "\\n")

        threading.Thread(target=_run, name="soak-probe", daemon=True).start()
''')


# ---- client processes ------------------------------------------------------------------------

def _new_stats() -> dict:
    return {"matches": 0, "ended": {}, "submitted": 0, "stale": 0, "not_active": 0, "duplicates": 0,
            "duplicate_mismatch": 0, "timeouts_let": 0, "leaves": 0, "vanished": 0,
            "spectators": 0, "delayed_matches": 0, "spectator_resumes": 0, "overflow_resumes": 0, "gaps": 0,
            "errors": {}, "error_samples": []}


def _error(stats: dict, where: str, exc: grpc.aio.AioRpcError) -> None:
    key = f"{where}:{exc.code().name}"
    stats["errors"][key] = stats["errors"].get(key, 0) + 1
    if len(stats["error_samples"]) < 5:
        stats["error_samples"].append(f"{key}: {exc.details()}")


def _continuity(stats: dict, last: int | None, ev) -> int | None:
    """The stream's last seq after ``ev``; counts a gap or a repeat (an ACTION that does not
    follow the previous one): a stream, resumed or not, delivers every action exactly once."""
    if ev.kind == SNAPSHOT:
        return ev.seq
    if ev.kind == ACTION:
        if last is not None and ev.seq != last + 1:
            stats["gaps"] += 1
        return ev.seq
    return last


async def _create(stub, game: str, options: dict, turn_time_s: float,
                  spectator_delay: int = 0) -> tuple[str, list[str]]:
    req = pb.CreateMatchRequest(game=game, name="soak", turn_time=duration_pb2.Duration(seconds=int(turn_time_s)),
                                spectator_delay_actions=spectator_delay)
    for name, value in options.items():
        if isinstance(value, bool):
            req.options[name].bool_value = value
        elif isinstance(value, int):
            req.options[name].int_value = value
        else:
            req.options[name].string_value = value
    created = await stub.CreateMatch(req)
    match_id = created.match.match_id
    tokens = []
    for seat in range(len(created.match.seats)):
        joined = await stub.JoinMatch(pb.JoinMatchRequest(match_id=match_id, seat=seat, player_name=f"p{seat}"))
        tokens.append(joined.seat_token)
    return match_id, tokens


async def _seat(stub, match_id: str, seat: int, token: str, plan: dict, rng: random.Random,
                stop: float, stats: dict) -> None:
    """One seat's client until the match ends (or ``plan`` makes it leave or vanish)."""
    last: int | None = None
    acted, decisions, left = -1, 0, False
    while True:
        req = pb.WatchMatchRequest(match_id=match_id)
        if last is not None:
            req.after_seq = last
        call = stub.WatchMatch(req, metadata=bearer(token))
        try:
            async for ev in call:
                last = _continuity(stats, last, ev)
                if ev.kind == ENDED:
                    if not plan["shared"].get("ended"):  # once per match
                        plan["shared"]["ended"] = True
                        stats["ended"][ev.reason] = stats["ended"].get(ev.reason, 0) + 1
                    return
                if time.time() > stop:
                    return  # the run is over: the client vanishes, the server cleans up
                if not ev.HasField("view"):
                    continue
                v = ev.view
                if plan.get("vanish_at") is not None and v.seq >= plan["vanish_at"]:
                    stats["vanished"] += 1
                    return
                if plan.get("leave_at") is not None and v.seq >= plan["leave_at"] and not left:
                    left = True
                    stats["leaves"] += 1
                    try:
                        await stub.LeaveMatch(pb.LeaveMatchRequest(match_id=match_id, resign=True),
                                              metadata=bearer(token))
                    except grpc.aio.AioRpcError as exc:
                        if exc.code() != grpc.StatusCode.FAILED_PRECONDITION:  # already over
                            _error(stats, "leave", exc)
                    continue  # a departed Georgian Joker seat's stream ends (GJ-12.4: SEAT_LEFT)
                if left or not v.HasField("to_act") or v.to_act != seat or v.seq <= acted:
                    continue
                acted = v.seq
                decisions += 1
                if decisions in plan.get("timeouts", ()):
                    stats["timeouts_let"] += 1  # the turn deadline expires: the auto-move plays
                    continue
                sub = pb.SubmitActionRequest(match_id=match_id, expected_seq=v.seq,
                                             action=rng.choice(list(v.legal_actions)).notation,
                                             client_action_id=f"{seat}-{v.seq}")
                try:
                    first = await stub.SubmitAction(sub, metadata=bearer(token))
                    stats["submitted"] += 1
                    if rng.random() < plan.get("retry_p", 0.0):
                        again = await stub.SubmitAction(sub, metadata=bearer(token))
                        stats["duplicates"] += 1
                        if not again.duplicate or again.seq != first.seq:
                            stats["duplicate_mismatch"] += 1
                except grpc.aio.AioRpcError as exc:
                    if exc.code() == grpc.StatusCode.ABORTED:
                        stats["stale"] += 1  # an auto-move got there first
                    elif exc.code() == grpc.StatusCode.FAILED_PRECONDITION:
                        stats["not_active"] += 1  # the match ended meanwhile
                    else:
                        _error(stats, "submit", exc)
            return  # the stream ended without MATCH_ENDED (the server is stopping)
        except grpc.aio.AioRpcError as exc:
            if left and exc.code() == grpc.StatusCode.PERMISSION_DENIED:
                return  # the seat it left is the bot's now: its stream ends (SEAT_LEFT)
            if exc.code() != grpc.StatusCode.UNAVAILABLE:
                _error(stats, "seat_watch", exc)
                return
            stats["overflow_resumes"] += 1
            if time.time() > stop:
                return  # the server went away at the end of the run (or was stopped)
            await asyncio.sleep(rng.uniform(0.05, 0.2))  # never a tight loop of failing calls
        finally:
            call.cancel()


async def _spectator(stub, match_id: str, drops: list[int], rng: random.Random, stop: float,
                     stats: dict) -> None:
    """A spectator that drops its stream at each seq in ``drops`` and resumes with after_seq
    a moment later (sometimes after the match has ended and left memory)."""
    last: int | None = None
    stats["spectators"] += 1
    while time.time() < stop:
        req = pb.WatchMatchRequest(match_id=match_id)
        if last is not None:
            req.after_seq = last
        call = stub.WatchMatch(req)
        dropped = False
        try:
            async for ev in call:
                last = _continuity(stats, last, ev)
                if ev.kind == ENDED:
                    return
                if drops and last is not None and last >= drops[0]:
                    drops.pop(0)
                    dropped = True
                    break
        except grpc.aio.AioRpcError as exc:
            if exc.code() != grpc.StatusCode.UNAVAILABLE:
                _error(stats, "spectator_watch", exc)
                return
            stats["overflow_resumes"] += 1
        finally:
            call.cancel()
        if not dropped:
            return
        stats["spectator_resumes"] += 1
        await asyncio.sleep(rng.uniform(0.2, 4.0))


def _plan(rng: random.Random, game: str, seats: int, cfg: dict) -> tuple[list[dict], list[list[int]]]:
    """What each seat and spectator of one match does (which seats misbehave, and when)."""
    shared: dict = {}
    plans = [{"retry_p": cfg["retry_share"], "shared": shared} for _ in range(seats)]
    horizon = 40  # early enough that even the shortest matches get there
    r = rng.random()
    if r < cfg["abandon_share"]:
        if game == "georgian_joker":  # GJ-12.4: the auto-move policy plays for each leaver
            for seat in rng.sample(range(seats), rng.randint(1, seats)):
                plans[seat]["leave_at"] = rng.randint(1, horizon)
        else:  # JJK-10.1: leaving is resigning
            plans[rng.randrange(seats)]["leave_at"] = rng.randint(1, horizon)
    elif r < cfg["abandon_share"] + cfg["vanish_share"]:  # JJK-10.2 / GJ-12.4 after the grace
        plans[rng.randrange(seats)]["vanish_at"] = rng.randint(1, horizon)
    if rng.random() < cfg["timeout_share"]:
        plans[rng.randrange(seats)]["timeouts"] = set(rng.sample(range(1, 30), rng.randint(1, 3)))
    spectators = []
    if rng.random() < cfg["watch_share"]:
        for _ in range(rng.randint(1, 2)):
            spectators.append(sorted(rng.sample(range(1, 60), rng.randint(1, 2))))
    return plans, spectators


def soak_worker(target: str, tables: int, stop: float, seed: int, cfg: dict) -> dict:
    async def main() -> dict:
        stats = _new_stats()
        stats["cpu_s"] = -time.process_time()
        rng = random.Random(seed)
        # one connection per 8 tables: up to 4 seat and 2 spectator streams each, under the
        # server's 100 concurrent calls per connection
        channels = [grpc.aio.insecure_channel(target, options=LOCAL_POOL) for _ in range((tables + 7) // 8)]

        async def table(i: int) -> None:
            stub = card_games_pb2_grpc.CardGamesServiceStub(channels[i // 8])
            n = seed + i
            while time.time() < stop:
                game = GAMES[n % len(GAMES)]
                n += 1
                delay = rng.randint(1, 8) if rng.random() < cfg["delay_share"] else 0
                try:
                    match_id, tokens = await _create(stub, game, rng.choice(VARIANTS[game]), cfg["turn_time_s"],
                                                     delay)
                except grpc.aio.AioRpcError as exc:
                    _error(stats, "create", exc)
                    await asyncio.sleep(1.0)
                    continue
                stats["matches"] += 1
                stats["delayed_matches"] += bool(delay)
                plans, spectators = _plan(rng, game, len(tokens), cfg)
                await asyncio.gather(
                    *(_seat(stub, match_id, s, t, plans[s], random.Random(rng.random()), stop, stats)
                      for s, t in enumerate(tokens)),
                    *(_spectator(stub, match_id, drops, random.Random(rng.random()), stop, stats)
                      for drops in spectators))

        await asyncio.gather(*(table(i) for i in range(tables)))
        for ch in channels:
            await ch.close()
        stats["cpu_s"] += time.process_time()
        return stats

    return asyncio.run(main())


# ---- sampling ---------------------------------------------------------------------------------

def _metrics(url: str) -> dict[str, float]:
    """The metrics endpoint's samples summed over their labels, plus ``name{label=value}``
    sums for the labels the table shows."""
    from prometheus_client.parser import text_string_to_metric_families

    with urllib.request.urlopen(url, timeout=10) as reply:
        text = reply.read().decode()
    out: dict[str, float] = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out[s.name] = out.get(s.name, 0.0) + s.value
            for label in ("result", "audience", "status", "generation"):
                if label in s.labels:
                    key = f"{s.name}{{{label}={s.labels[label]}}}"
                    out[key] = out.get(key, 0.0) + s.value
    return out


def _proc(pid: int) -> dict:
    status = dict(line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines())
    return {"rss_kb": int(status["VmRSS"].split()[0]), "hwm_kb": int(status["VmHWM"].split()[0]),
            "threads": int(status["Threads"]), "fds": len(os.listdir(f"/proc/{pid}/fd"))}


def _size_kb(path: Path) -> float:
    return path.stat().st_size / 1024 if path.exists() else 0.0


def sample(service: ServiceProcess, metrics_url: str, db: Path, probe: Path | None, t0: float,
           phase: str) -> dict:
    s = {"t_s": round(time.time() - t0, 1), "phase": phase, **_proc(service.proc.pid),
         "cpu_s": round(_cpu_s(service.proc.pid), 2),
         "db_kb": round(_size_kb(db)), "wal_kb": round(_size_kb(Path(f"{db}-wal"))),
         "loadavg_1m": os.getloadavg()[0]}
    m = _metrics(metrics_url)
    s.update({
        "finished": int(m.get("cardgames_matches_finished_total", 0)),
        "created": int(m.get("cardgames_matches_created_total", 0)),
        "active": int(m.get("cardgames_matches_active", 0)),
        "watchers": int(m.get("cardgames_watchers", 0)),
        "watchers_spectator": int(m.get("cardgames_watchers{audience=spectator}", 0)),
        "accepted": int(m.get("cardgames_actions_total{result=accepted}", 0)),
        "timeouts": int(m.get("cardgames_turn_timeouts_total", 0)),
        "auto_moves": int(m.get("cardgames_auto_moves_total", 0)),
        "overflows": int(m.get("cardgames_watch_overflows_total", 0)),
        "process_rss_kb": round(m.get("process_resident_memory_bytes", 0) / 1024),
        "process_open_fds": int(m.get("process_open_fds", 0)),
        # full garbage collections (the server's timed ones and CPython's) and their pauses
        "gc_full": int(m.get("cardgames_gc_pause_seconds_count{generation=2}", 0)),
        "gc_full_pause_s": m.get("cardgames_gc_pause_seconds_sum{generation=2}", 0.0),
    })
    if probe is not None and probe.exists():
        p = json.loads(probe.read_text())
        s.update({k: p[k] for k in ("py_blocks", "malloc_in_use_kb", "malloc_free_kb") if k in p})
        s.update({"probe_age_s": round(time.time() - p["t"], 1), "tasks": p["tasks"],
                  "gc_objects": p["gc_objects"], "gc_collections": p["gc_collections"],
                  "gc_collected_now": p["gc_collected_now"], "gc_garbage": p.get("gc_garbage"),
                  "task_names": p["task_names"],
                  "types": p["types"], "sizes": p["sizes"], "caps": p["caps"],
                  "matches_in_memory": p["sizes"].get("MatchManager._matches")})
    return s


COLUMNS = [("t_s", "t(s)", 6), ("phase", "phase", 5), ("finished", "done", 6), ("active", "active", 6),
           ("watchers", "watch", 5), ("actions_per_s", "act/s", 6), ("rss_kb", "RSS(MB)", 7),
           ("fds", "fds", 4), ("threads", "thr", 4), ("tasks", "tasks", 5),
           ("matches_in_memory", "inmem", 5), ("gc_objects", "gc_objs", 8), ("gc_full", "fullgc", 6),
           ("db_kb", "db(MB)", 7),
           ("wal_kb", "wal(MB)", 7), ("loadavg_1m", "load", 5)]


def _cell(key: str, value) -> str:
    if value is None:
        return "-"
    if key in ("rss_kb", "db_kb", "wal_kb"):
        return f"{value / 1024:.1f}"
    if isinstance(value, float):
        return f"{value:.1f}"
    return str(value)


def print_row(s: dict | None) -> None:
    if s is None:
        print(" ".join(f"{title:>{w}}" for _, title, w in COLUMNS), flush=True)
    else:
        print(" ".join(f"{_cell(k, s.get(k)):>{w}}" for k, _, w in COLUMNS), flush=True)


# ---- verdict ----------------------------------------------------------------------------------

def fit(xs: list[float], ys: list[float]) -> tuple[float, float]:
    """Least-squares slope of ys over xs and the fit's r^2 (1.0 for a flat series)."""
    n = len(xs)
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    syy = sum((y - my) ** 2 for y in ys)
    sxy = sum((x - mx) * (y - my) for x, y in zip(xs, ys))
    if sxx == 0:
        return 0.0, 0.0
    slope = sxy / sxx
    return slope, (sxy * sxy / (sxx * syy) if syy else 1.0)


def _logged_errors(log: Path | None) -> int:
    """Lines of the server's JSON log at level error or above (``rpc_internal_error`` with its
    traceback, a store failure...)."""
    if log is None or not log.exists():
        return 0
    count = 0
    with log.open(encoding="utf-8", errors="replace") as f:
        for line in f:
            if '"level": "error"' in line or '"level": "critical"' in line:
                count += 1
    return count


def verdict(samples: list[dict]) -> dict:
    """Growth per 1,000 finished matches over the second half of the run, per figure."""
    run = [s for s in samples if s["phase"] == "run"]
    half = run[len(run) // 2:]
    out: dict = {"window_samples": len(half)}
    if len(half) < 3 or half[-1]["finished"] == half[0]["finished"]:
        out["error"] = "too few samples or no match finished in the second half: run longer"
        return out
    xs = [s["finished"] for s in half]
    span = xs[-1] - xs[0]
    collections = half[-1].get("gc_full", 0) - half[0].get("gc_full", 0)
    out["window_matches_finished"] = span
    figures = {}
    series = {k: [s.get(k) for s in half] for k in ("rss_kb", "fds", "threads", "tasks", "watchers",
                                                      "matches_in_memory", "gc_objects", "db_kb", "wal_kb",
                                                      *DIAGNOSTICS)}
    for key in sorted({k for s in half for k in s.get("types", {})}):
        series[f"types.{key}"] = [s.get("types", {}).get(key, 0) for s in half]
    for key in sorted({k for s in half for k in s.get("sizes", {})}):
        series[f"sizes.{key}"] = [s.get("sizes", {}).get(key, 0) for s in half]
    for key, ys in series.items():
        if any(y is None for y in ys):
            continue
        slope, r2 = fit(xs, ys)
        growth = slope * span
        floor = FLOORS.get(key, max(20.0, 0.02 * max(ys)))
        entry = {"per_1000_matches": round(slope * 1000, 2), "r2": round(r2, 2),
                 "first": ys[0], "last": ys[-1], "max": max(ys)}
        # a table's cap counts entries; its ".kb" (bytes held) is bounded by the same cap
        name = key[len("sizes."):].removesuffix(".kb") if key.startswith("sizes.") else None
        cap = half[-1].get("caps", {}).get(name) if name else None
        count = series.get(f"sizes.{name}") if name else None
        if key in DIAGNOSTICS:
            entry["note"] = "where RSS goes (not judged)"
        elif key == "gc_objects" and collections < 2:
            # cyclic garbage waits in the old generation for the server's timed full collection
            # (--gc-full-collection-interval-s): between two of them it only rises
            entry["note"] = (f"not judged: {collections} full collection(s) in the window (the "
                             "run's second half); run longer (the server collects every "
                             "--gc-full-collection-interval-s, 300 s by default)")
        elif key == "db_kb":
            entry["note"] = "the store keeps every match (by design): KB per match = per_1000/1000"
        elif r2 >= 0.5 and growth > floor:
            if cap is not None and count is not None and max(count) <= cap:
                entry["note"] = f"filling a bounded cache (cap {cap} entries)"
            else:
                entry["flag"] = "GROWING"
        figures[key] = entry
    out["figures"] = figures
    out["growing"] = sorted(k for k, e in figures.items() if e.get("flag"))
    return out


def _full_collections(run: list[dict]) -> dict:
    """The server's full garbage collections during the run (the first sample's count
    includes start-up's) and their mean pause; the longest mean pause between two samples."""
    if len(run) < 2:
        return {}
    pairs = [(b["gc_full"] - a["gc_full"], b["gc_full_pause_s"] - a["gc_full_pause_s"])
             for a, b in zip(run, run[1:])]
    count = sum(n for n, _ in pairs)
    return {"full_collections": count,
            "full_collection_mean_pause_ms": round(1000 * sum(p for _, p in pairs) / count, 1) if count else None,
            "full_collection_longest_mean_pause_ms":
                round(max(1000 * p / n for n, p in pairs if n), 1) if count else None}


def _print_verdict(v: dict, cooldown: dict | None, baseline: dict | None) -> None:
    print()
    if "error" in v:
        print("verdict:", v["error"])
        return
    print(f"growth per 1,000 finished matches over the second half "
          f"({v['window_matches_finished']} matches, {v['window_samples']} samples):")
    keys = ["rss_kb", *DIAGNOSTICS, "fds", "threads", "tasks", "watchers", "matches_in_memory",
            "gc_objects", "db_kb", "wal_kb"]
    shown = [k for k in keys if k in v["figures"]] + [
        k for k, e in v["figures"].items() if k not in keys and (e.get("flag") or e.get("note"))]
    for k in shown:
        e = v["figures"][k]
        print(f"  {k:<40} {e['per_1000_matches']:>12,.1f}  r2={e['r2']:.2f}  "
              f"{e['first']} -> {e['last']}  {e.get('flag', '')}{e.get('note', '')}")
    if cooldown is not None and baseline is not None:
        print("after the clients left (cooldown) vs the first sample of the run:")
        for k in ("active", "watchers", "tasks", "matches_in_memory", "fds", "threads", "rss_kb", *DIAGNOSTICS):
            print(f"  {k:<20} {baseline.get(k)} -> {cooldown.get(k)}")
    print("VERDICT:", "GROWING: " + ", ".join(v["growing"]) if v["growing"] else
          "bounded (no figure keeps growing with finished matches)")


# ---- main -------------------------------------------------------------------------------------

def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    ap.add_argument("--minutes", type=float, default=10.0, help="length of the run")
    ap.add_argument("--clients", type=int, default=2, help="client processes")
    ap.add_argument("--tables", type=int, default=24, help="tables kept busy (all processes together)")
    ap.add_argument("--sample-s", type=float, default=15.0, help="seconds between samples")
    ap.add_argument("--retention-s", type=float, default=5.0, help="server --finished-retention-s")
    ap.add_argument("--turn-time-s", type=float, default=10.0,
                    help="turn time of every match (seconds; 10-120 for the Joker games)")
    ap.add_argument("--time-scale", type=float, default=0.2,
                    help="server --time-scale: the real turn time is turn-time-s x this, the "
                    "reconnect grace 15 s x this")
    ap.add_argument("--timeout-share", type=float, default=0.15, help="matches where a seat lets turns time out")
    ap.add_argument("--abandon-share", type=float, default=0.1, help="matches a seat leaves (resigns)")
    ap.add_argument("--vanish-share", type=float, default=0.05, help="matches a seat's client vanishes from")
    ap.add_argument("--watch-share", type=float, default=0.3, help="matches with spectators that drop and resume")
    ap.add_argument("--delay-share", type=float, default=0.3,
                    help="matches whose spectators are 1-8 actions behind (spectator_delay_actions)")
    ap.add_argument("--retry-share", type=float, default=0.02, help="submits sent twice (client_action_id)")
    ap.add_argument("--cooldown-s", type=float, default=30.0, help="sampling after the clients left")
    ap.add_argument("--log-level", default="warning", help="server log level (the log stays in the temp dir)")
    ap.add_argument("--no-probe", action="store_true", help="no probe thread in the server "
                    "(no task, object and cache counts)")
    ap.add_argument("--gc-collect", action="store_true", help="the probe runs a full gc.collect() "
                    "before counting: live objects only, not cyclic garbage that the server's gc "
                    "thresholds let wait (changes the server's gc behaviour: for investigations)")
    ap.add_argument("--gc-garbage", action="store_true", help="in the cooldown, the probe "
                    "collects the whole heap and reports the types of the cyclic garbage the "
                    "server's own collections had left (printed at the end)")
    ap.add_argument("--keep", type=Path, default=None,
                    help="copy the server log and database here, and write soak.json (every sample)")
    ap.add_argument("--json", action="store_true", help="print one JSON object at the end")
    args = parse_args(ap, argv)
    cfg = {k: getattr(args, k) for k in ("timeout_share", "abandon_share", "vanish_share", "watch_share", "delay_share",
                                         "retry_share", "turn_time_s")}

    with tempfile.TemporaryDirectory() as tmp, \
            ProcessPoolExecutor(max_workers=args.clients, mp_context=get_context("spawn")) as pool:
        workdir = Path(tmp)
        db = workdir / "soak.sqlite3"
        probe = None if args.no_probe else workdir / "probe.json"
        env = {"CARDGAMES_DB": str(db), "CARDGAMES_FINISHED_RETENTION_S": str(args.retention_s),
               "CARDGAMES_TIME_SCALE": str(args.time_scale), "CARDGAMES_RECONNECT_GRACE_S": "15",
               "CARDGAMES_LOG_LEVEL": args.log_level, "CARDGAMES_METRICS_PORT": str(_free_port())}
        if probe is not None:
            (workdir / "probe").mkdir()
            (workdir / "probe" / "sitecustomize.py").write_text(PROBE)
            if args.gc_collect:
                env["CARDGAMES_SOAK_PROBE_COLLECT"] = "1"
            env.update(CARDGAMES_SOAK_PROBE=str(probe), CARDGAMES_SOAK_PROBE_S=str(max(1.0, args.sample_s / 2)),
                       PYTHONPATH=os.pathsep.join(filter(None, (str(workdir / "probe"), os.environ.get("PYTHONPATH")))))
        service = ServiceProcess(workdir, **env)
        metrics_url = f"http://127.0.0.1:{env['CARDGAMES_METRICS_PORT']}/metrics"
        samples: list[dict] = []
        died: int | None = None  # the server's exit status when it exited during the run
        try:
            t0 = time.time()
            stop = t0 + args.minutes * 60
            per = [args.tables // args.clients + (i < args.tables % args.clients) for i in range(args.clients)]
            futures = [pool.submit(soak_worker, service.target, n, stop, 1000 * i, cfg)
                       for i, n in enumerate(per) if n]
            if not args.json:
                print(f"soak: {args.tables} tables, {args.clients} client processes, {args.minutes} min, "
                      f"server pid {service.proc.pid}, log {service.log}", flush=True)
                print_row(None)

            def take(phase: str) -> None:
                s = sample(service, metrics_url, db, probe, t0, phase)
                if samples:
                    prev = samples[-1]
                    s["actions_per_s"] = (s["accepted"] - prev["accepted"]) / max(1e-9, s["t_s"] - prev["t_s"])
                samples.append(s)
                if not args.json:
                    print_row(s)

            next_at = time.time() + args.sample_s
            while not all(f.done() for f in futures):
                time.sleep(min(1.0, max(0.0, next_at - time.time())))
                if service.proc.poll() is not None:  # nothing left to sample: say so, keep its log
                    died = service.proc.returncode
                    print(f"the server exited with status {died} during the run "
                          "(its clients stop at the end of the run)", file=sys.stderr, flush=True)
                    break
                if time.time() >= next_at and time.time() < stop + args.sample_s:
                    take("run")
                    next_at += args.sample_s
            results = [f.result() for f in futures]
            if args.gc_garbage and probe is not None:
                Path(str(probe) + ".garbage").touch()
            cool_end = time.time() + (args.cooldown_s if died is None else 0)
            while time.time() < cool_end:
                time.sleep(min(args.sample_s, max(0.0, cool_end - time.time())))
                take("cool")
        finally:
            service.stop()
            keep = args.keep
            if keep is None and (died is not None or _logged_errors(service.log)):
                # a server error (an INTERNAL's traceback) must outlive the temp dir
                keep = Path(tempfile.mkdtemp(prefix="cardgames-soak-"))
                why = "exited during the run" if died is not None else "logged errors"
                print(f"the server {why}: its log and database are kept in {keep}",
                      file=sys.stderr)
            if keep is not None:
                import shutil

                keep.mkdir(parents=True, exist_ok=True)
                for path in (service.log, db, Path(f"{probe}.err") if probe else None):
                    if path is not None and path.exists():
                        shutil.copy(path, keep / path.name)

    clients = _new_stats()
    for r in results:
        for k, v in r.items():
            if isinstance(v, dict):
                for kk, vv in v.items():
                    clients[k][kk] = clients[k].get(kk, 0) + vv
            elif isinstance(v, list):
                clients[k].extend(v)
            else:
                clients[k] = clients.get(k, 0) + v
    v = verdict(samples)
    run = [s for s in samples if s["phase"] == "run"]
    cool = [s for s in samples if s["phase"] == "cool"]
    summary = {"minutes": args.minutes, "tables": args.tables,
               "matches_finished": run[-1]["finished"] if run else 0,
               "actions_accepted": run[-1]["accepted"] if run else 0,
               "actions_per_s": (run[-1]["accepted"] / run[-1]["t_s"]) if run else 0.0,
               "turn_timeouts": run[-1]["timeouts"] if run else 0,
               "server_cpu_s": run[-1]["cpu_s"] if run else 0.0,
               **_full_collections(run)}
    report = {"summary": summary, "clients": clients, "verdict": v, "samples": samples}
    if args.keep is not None:
        (args.keep / "soak.json").write_text(json.dumps(report))
    if args.json:
        print(json.dumps(report))
    else:
        print()
        print("summary:", "  ".join(f"{k}={x:,.1f}" if isinstance(x, float) else f"{k}={x}"
                                    for k, x in summary.items()))
        print("clients:", json.dumps(clients))
        garbage = next((x["gc_garbage"] for x in cool if x.get("gc_garbage")), None)
        if garbage:
            first = next(x for x in cool if x.get("gc_garbage"))
            print(f"garbage the server's collections left ({first['gc_collected_now']} objects), "
                  "by type:", json.dumps(garbage))
        _print_verdict(v, cool[-1] if cool else None, run[0] if run else None)
    bad = clients["gaps"] or clients["duplicate_mismatch"] or clients["errors"]
    if died is not None:
        print(f"FAILED: the server exited with status {died} during the run")
    return 1 if bad or v.get("growing") or died is not None else 0


if __name__ == "__main__":
    sys.exit(main())
