"""The absence heartbeat's write (``Store.touch_absences``, every ``absence_heartbeat_s``
while a reconnect grace window runs): its time per beat for N seats away, one per match, on
SQLite (a file in a temporary directory) and PostgreSQL (a schema of its own in the database
given, dropped at the end). Five beats each; best and median.

    .venv/bin/python bench/absence_heartbeat.py [--seats 5000] [--db postgresql://postgres@127.0.0.1:5432/postgres] [--no-postgres]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import secrets
import statistics
import sys
import tempfile
import time

import psycopg

from engine_service.command_line import parse_args
from engine_service.store import MatchRecord, SeatRecord, Store
from engine_service.store.postgres import PostgresStore
from engine_service.store.sqlite import SqliteStore


async def _fill(st: Store, n: int) -> None:
    for i in range(n):
        match_id = f"m{i:06d}"
        await st.create_match(MatchRecord(
            match_id=match_id, game="klaberjass", options={}, first_dealer=0,
            seats=(SeatRecord(seat=0), SeatRecord(seat=1)), turn_time_s=30.0, reconnect_grace_s=60.0,
            spectators_allowed=True, name="", takeover_bot="", created_at=1.0, status="waiting"))
        for seat in (0, 1):
            await st.save_seat(match_id, SeatRecord(seat=seat, player_name="p", token_hash=f"t{i}-{seat}",
                                                    joined_at=1.0))
        await st.save_absence(match_id, 0, 100.0)


async def _beats(st: Store, n: int, label: str) -> None:
    seats = [(f"m{i:06d}", 0) for i in range(n)]
    took = []
    for k in range(5):
        started = time.perf_counter()
        await st.touch_absences(seats, 200.0 + k)
        took.append(time.perf_counter() - started)
    seen = (await st.load_match("m000000")).record.seats[0].away_seen
    assert seen == 204.0, seen
    print(f"{label}: {n} seats away: a beat best {min(took) * 1000:.1f} ms, "
          f"median {statistics.median(took) * 1000:.1f} ms")


async def measure(n: int, dsn: str, postgres: bool) -> None:
    with tempfile.TemporaryDirectory() as d:
        st = SqliteStore(os.path.join(d, "bench.sqlite3"))
        await st.open()
        try:
            await _fill(st, n)
            await _beats(st, n, "sqlite")
        finally:
            await st.close()
    if not postgres:
        return
    schema = f"bench_{secrets.token_hex(4)}"
    with psycopg.connect(dsn, autocommit=True) as admin:
        admin.execute(f'CREATE SCHEMA "{schema}"')
    try:
        sep = "&" if "?" in dsn else "?"
        st = PostgresStore(f"{dsn}{sep}options=-csearch_path%3D{schema}")
        await st.open()
        try:
            await _fill(st, n)
            await _beats(st, n, "postgres")
        finally:
            await st.close()
    finally:
        with psycopg.connect(dsn, autocommit=True) as admin:
            admin.execute(f'DROP SCHEMA "{schema}" CASCADE')


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    parser.add_argument("--seats", type=int, default=5000)
    parser.add_argument("--db", default="postgresql://postgres@127.0.0.1:5432/postgres")
    parser.add_argument("--no-postgres", action="store_true")
    args = parse_args(parser, argv)
    asyncio.run(measure(args.seats, args.db, not args.no_postgres))
    return 0


if __name__ == "__main__":
    sys.exit(main())
