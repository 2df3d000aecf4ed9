"""Retention on SQLite: how long one prune batch holds the store's single writer, and what the
action path sees meanwhile (docs/operations.md, Retention).

A database of N ended matches of realistic size (~35 KB each, as bench/soak.py measured) and a
few active ones is built directly; then actions are appended to the active matches, one after
another per match (the engine's pace is far lower), first alone, then while a prune pass deletes
every ended match in batches of ``--batch`` with the engine's pause between them. Printed: the
bytes per match, each phase's action-write latency (p50 / p99 / max), the batch durations and
the pass's rate, and the file size before and after VACUUM.

    .venv/bin/python bench/prune_batches.py [--matches 3000] [--batch 10] [--writers 4]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import sqlite3
import statistics
import tempfile
import time
from pathlib import Path

from engine_service.command_line import parse_args
from engine_service.sessions.config import SessionConfig
from engine_service.sessions.housekeeping import PRUNE_PAUSE_S
from engine_service.store import ActionRecord, SqliteStore
from engine_service.store.base import new_salt

DAY = 86400.0
CARDS = [f"{r}{s}" for r in "6789TJQKA" for s in "SHDC"]  # 36 cards, as Georgian Joker's pack
DEALS, ACTIONS = 10, 180  # per ended match: ~35 KB in the file, as bench/soak.py measured


def build(path: Path, matches: int, active: int) -> None:
    """The ended matches (ended 40 days ago: DEALS deals, ACTIONS actions, 4 seats each) and ``active``
    active matches, written in one transaction through sqlite3 (the schema from the store)."""
    async def schema():
        st = SqliteStore(path)
        await st.open()
        await st.close()
    asyncio.run(schema())
    rng = random.Random(1)
    now = time.time()
    conn = sqlite3.connect(path)
    conn.execute("BEGIN")
    for i in range(matches + active):
        mid = f"{'a' if i >= matches else 'e'}{i:07d}-{rng.getrandbits(64):016x}"
        ended = i < matches
        conn.execute(
            "INSERT INTO matches (match_id, game, options, first_dealer, turn_time_s, reconnect_grace_s, "
            "spectators_allowed, name, takeover_bot, created_at, status, result, ended_at, listed, "
            "deal_commitments) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            (mid, "georgian_joker", "{}", 0, 30.0, 60.0, 1, "bench table", "", now - 41 * DAY,
             "finished" if ended else "active",
             json.dumps({"outcome": "completed", "winners": [0], "totals": [512, 230, -100, 75]}) if ended else None,
             now - 40 * DAY if ended else None,
             0, json.dumps([f"{rng.getrandbits(256):064x}" for _ in range(DEALS)]) if ended else None))
        conn.executemany(
            "INSERT INTO seats (match_id, seat, kind, bot, player_name, token_hash, joined_at, left_match) "
            "VALUES (?,?,?,?,?,?,?,?)",
            [(mid, s, "open", "", f"player {s}", f"{rng.getrandbits(256):064x}", now - 41 * DAY, 0)
             for s in range(4)])
        conn.executemany("INSERT INTO decks (match_id, deal, cards, salt, scheme) VALUES (?,?,?,?,?)",
                         [(mid, d, json.dumps(rng.sample(CARDS, 36)), new_salt(), 2) for d in range(DEALS if ended else 1)])
        conn.executemany(
            "INSERT INTO match_actions (match_id, seq, seat, action, by_whom, client_action_id, reason, at) "
            "VALUES (?,?,?,?,?,?,?,?)",
            [(mid, q, q % 4, f"play:{rng.choice(CARDS)}", "player", f"c{q}-{rng.getrandbits(32):08x}", "",
              now - 40 * DAY) for q in range(1, (ACTIONS if ended else 0) + 1)])
    conn.execute("COMMIT")
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()


async def measure(path: Path, batch: int, writers: int) -> dict:
    st = SqliteStore(path)
    await st.open()
    active = [li.record.match_id for li in await st.list_matches(statuses=["active"], limit=writers)]
    seqs = dict.fromkeys(active, 0)
    stop = asyncio.Event()

    async def writer(mid: str, out: list[float]) -> None:
        while not stop.is_set():
            seqs[mid] += 1
            started = time.perf_counter()
            await st.append_action(mid, ActionRecord(seqs[mid], 0, "pass", "player", f"w{seqs[mid]}", "", time.time()))
            out.append(time.perf_counter() - started)
            await asyncio.sleep(0.002)  # a client's round trip

    async def phase(seconds: float | None, prune: bool) -> tuple[list[float], list[float], float]:
        stop.clear()
        latencies: list[float] = []
        tasks = [asyncio.ensure_future(writer(mid, latencies)) for mid in active]
        batches: list[float] = []
        started = time.perf_counter()
        if prune:
            cutoff = time.time() - 30 * DAY
            while True:
                t0 = time.perf_counter()
                done = await st.prune_finished(cutoff, batch)
                batches.append(time.perf_counter() - t0)
                if len(done.match_ids) < batch:
                    break
                await asyncio.sleep(max(PRUNE_PAUSE_S, batches[-1]))  # as the engine does
        else:
            await asyncio.sleep(seconds or 5.0)
        took = time.perf_counter() - started
        stop.set()
        await asyncio.gather(*tasks)
        return latencies, batches, took

    alone, _, _ = await phase(5.0, prune=False)
    during, batches, took = await phase(None, prune=True)
    before = os.path.getsize(path) + os.path.getsize(f"{path}-wal")
    t0 = time.perf_counter()
    await st.vacuum()
    vacuum_s = time.perf_counter() - t0
    after = os.path.getsize(path)
    await st.close()
    return {"alone": alone, "during": during, "batches": batches, "pass_s": took,
            "before": before, "after": after, "vacuum_s": vacuum_s}


def pct(values: list[float], q: float) -> float:
    return statistics.quantiles(values, n=1000)[int(q * 1000) - 1] if len(values) > 1 else values[0]


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], allow_abbrev=False)
    ap.add_argument("--matches", type=int, default=3000, help="ended matches to prune")
    ap.add_argument("--batch", type=int, default=SessionConfig().prune_batch, help="matches per prune transaction (the engine's default)")
    ap.add_argument("--writers", type=int, default=4, help="active matches appending actions meanwhile")
    ap.add_argument("--dir", default=None, help="where the database goes (default: a temporary directory)")
    args = parse_args(ap, argv)
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        path = Path(tmp) / "bench.sqlite3"
        build(path, args.matches, args.writers)
        size = os.path.getsize(path)
        print(f"database: {args.matches} ended matches, {size / 1e6:.1f} MB ({size / args.matches / 1e3:.1f} KB per match)")
        r = asyncio.run(measure(path, args.batch, args.writers))
    ms = 1000
    for name in ("alone", "during"):
        lat = r[name]
        print(f"action writes {name:>6}: n={len(lat)} p50 {pct(lat, 0.5) * ms:.2f} ms  p99 {pct(lat, 0.99) * ms:.2f} ms  "
              f"max {max(lat) * ms:.2f} ms  over 50 ms: {sum(x > 0.05 for x in lat)}")
    b = r["batches"]
    print(f"prune batches of {args.batch}: n={len(b)} p50 {statistics.median(b) * ms:.1f} ms  "
          f"p99 {pct(b, 0.99) * ms:.1f} ms  max {max(b) * ms:.1f} ms; "
          f"pass {r['pass_s']:.1f} s = {args.matches / r['pass_s']:.0f} matches/s")
    print(f"VACUUM: {r['before'] / 1e6:.1f} MB -> {r['after'] / 1e6:.2f} MB in {r['vacuum_s']:.2f} s")


if __name__ == "__main__":
    main()
