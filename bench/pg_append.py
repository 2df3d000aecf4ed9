"""The PostgreSQL store's action write: latency of ``append_action`` one after another (the
common case, an action without a deck), p50 / p99 / max over N appends, and the round trips
it costs (counted from libpq's trace of one append). A schema of its own is created in the
database given and dropped at the end.

    .venv/bin/python bench/pg_append.py [--db postgresql://postgres@127.0.0.1:5432/postgres] [-n 2000]
"""

from __future__ import annotations

import argparse
import asyncio
import secrets
import statistics
import sys
import tempfile
import time

import psycopg

from engine_service.command_line import parse_args
from engine_service.store import ActionRecord, MatchRecord, SeatRecord
from engine_service.store.postgres import PostgresStore


def _round_trips(trace: str) -> int:
    """Round trips in a libpq trace: each run of client messages answered by the server."""
    turns, previous = 0, None
    for line in trace.splitlines():
        direction = line.split("\t")[0] if "\t" in line else None
        if direction == "B" and previous == "F":
            turns += 1
        previous = direction or previous
    return turns


async def measure(dsn: str, n: int, matches: int) -> None:
    schema = f"bench_{secrets.token_hex(4)}"
    with psycopg.connect(dsn, autocommit=True) as admin:
        admin.execute(f'CREATE SCHEMA "{schema}"')
    sep = "&" if "?" in dsn else "?"
    st = PostgresStore(f"{dsn}{sep}options=-csearch_path%3D{schema}", pool_size=1)
    try:
        await st.open()
        for m in range(matches):
            await st.create_match(MatchRecord(
                match_id=f"m{m}", game="klaberjass", options={}, first_dealer=0,
                seats=(SeatRecord(seat=0), SeatRecord(seat=1)), turn_time_s=10, reconnect_grace_s=10,
                spectators_allowed=False, name="", takeover_bot="", created_at=time.time(),
                status="active"))
        times = []
        seq = 0
        for i in range(n):
            if i % matches == 0:
                seq += 1
            action = ActionRecord(seq, 0, "pass", client_action_id=f"c{seq}", at=time.time())
            t0 = time.perf_counter()
            await st.append_action(f"m{i % matches}", action)
            times.append(time.perf_counter() - t0)
        assert st._pool is not None  # one connection (pool_size=1): the next call gets it
        with tempfile.TemporaryFile("w+") as f:
            async with st._pool.connection() as conn:
                conn.pgconn.trace(f.fileno())
                conn.pgconn.set_trace_flags(psycopg.pq.Trace.SUPPRESS_TIMESTAMPS)
            await st.append_action("m0", ActionRecord(seq + 1, 0, "pass", at=time.time()))
            async with st._pool.connection() as conn:
                conn.pgconn.untrace()
            f.seek(0)
            trips = _round_trips(f.read())
    finally:
        await st.close()
        with psycopg.connect(dsn, autocommit=True) as admin:
            admin.execute(f'DROP SCHEMA "{schema}" CASCADE')
    times.sort()
    ms = [t * 1000 for t in times]
    print(f"append_action x{n} ({matches} matches): p50 {statistics.median(ms):.3f} ms, "
          f"p99 {ms[int(len(ms) * 0.99) - 1]:.3f} ms, max {ms[-1]:.3f} ms, "
          f"mean {statistics.fmean(ms):.3f} ms; "
          f"round trips per append: {trips}")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    p.add_argument("--db", default="postgresql://postgres@127.0.0.1:5432/postgres")
    p.add_argument("-n", type=int, default=2000)
    p.add_argument("--matches", type=int, default=20)
    args = parse_args(p, argv)
    asyncio.run(measure(args.db, args.n, args.matches))
    return 0


if __name__ == "__main__":
    sys.exit(main())
