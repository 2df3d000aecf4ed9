"""``python -m engine_service prune --db PATH --older-than-days N [--dry-run] [--no-vacuum]``:
delete from a database the matches that ended more than N days ago, with everything stored
for them (actions, decks, seats and their token hashes), for a stopped engine or a one-off
cleanup (docs/operations.md, Retention). A running engine does the same by itself with
``--keep-finished-days``.

* **One engine per database**: the command takes the database's ownership lock as an engine
  does (:mod:`.store.ownership`, :mod:`.store.pg_ownership`), without waiting: while an
  engine holds the database it changes nothing and exits 2 with the holder's name. The dry
  run too, so that what it counts is what a real run would delete.
* **What it prints**: the cutoff, then the matches, actions, decks and seats deleted (or, with
  ``--dry-run``, that would be); unfinished matches are never touched.
* **Space** (SQLite): deleting frees pages inside the file, which new matches reuse, but does
  not shrink the file. Afterwards the command runs ``VACUUM`` (a rewrite of the file without
  its free pages) whenever the file has free pages, pruned now or earlier by the engine. Not
  ``PRAGMA incremental_vacuum``: it only works on a database created with
  ``auto_vacuum=INCREMENTAL``, which the engine's are not (switching takes a VACUUM anyway),
  and an offline command with the file to itself can afford the full rewrite. VACUUM writes the
  remaining data once more through the WAL (and a temporary copy in SQLite's temporary
  directory), so it is skipped, with a message, when the volume has less free space than
  that; ``--no-vacuum`` skips it always. PostgreSQL: autovacuum makes the space reusable.

Exit status: 0 done (nothing to delete included); 1 the database failed during the run (what
was deleted before stays deleted: each batch is one transaction), or the output could not be
written (a full disk behind ``>``: one line, not a traceback); 2 a usage error, no such
database, a database that cannot be opened (a PostgreSQL server not reached, as ``serve``
stops at its start), not a database of this service, or a database an engine holds.
"""

from __future__ import annotations

import argparse
import asyncio
import math
import os
import shutil
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

from .command_line import printable, stdout_guarded

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2
DAY_S = 86400.0


#: The most days ``--older-than-days`` takes, as the engine's ``--keep-finished-days``: a
#: century. 1e20 made the cutoff a time before any calendar date, an OverflowError traceback
#: after the database had been opened (and, in a real run, migrated).
MAX_DAYS = 100 * 365.0


def _days(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of days: {text!r}") from None
    if not (math.isfinite(value) and 0 <= value <= MAX_DAYS):
        raise argparse.ArgumentTypeError(f"must be a finite number of days from 0 to {MAX_DAYS:g}: {text!r}")
    return value + 0.0  # -0 is 0: shown as "more than 0 days ago", not "-0"


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "prune", help="delete ended matches older than N days from a database no engine is serving",
        description="Delete the matches that ended more than N days ago, with everything stored for "
                    "them, from a database no engine is serving from (it refuses, exit status 2, "
                    "while one holds it), then give the space back (SQLite: VACUUM). A running "
                    "engine does the same by itself with --keep-finished-days.")
    from .settings import _db_location
    from .store import describe_location

    env_db = os.environ.get("CARDGAMES_DB") or None
    try:
        shown_db = describe_location(_db_location(env_db)) if env_db else "none, required"
    except ValueError:  # another scheme's URL: maybe with a password, never shown
        shown_db = "invalid CARDGAMES_DB"
    # --help shows the URL as the logs do: its password, if it has one, as ***
    p.add_argument("--db", default=env_db, metavar="PATH",
                   help="SQLite file or postgresql:// URL, as the engine's --db "
                        f"[env CARDGAMES_DB; default: {shown_db}]")
    p.add_argument("--older-than-days", type=_days, required=True, metavar="N",
                   help="delete the matches that ended more than N days ago (fractions allowed; "
                        "0: every ended match)")
    p.add_argument("--dry-run", action="store_true", help="count what would be deleted; change nothing")
    p.add_argument("--no-vacuum", action="store_true",
                   help="SQLite: do not VACUUM afterwards (the free pages stay in the file, for new matches)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from .store import MEMORY, _is_postgres

    from .settings import _db_location

    db = (args.db or "").strip()  # as serve reads --db: a file's newline is not part of it
    if not db:
        return _usage("--db is required (or set CARDGAMES_DB)")
    try:  # as serve checks --db: a sqlite:// or misspelt postgresql:// URL, never echoed
        db = _db_location(db)
    except ValueError as exc:
        return _usage(f"--db: {exc}")
    if str(db) == MEMORY:
        return _usage("'memory:' keeps nothing to prune")
    if not _is_postgres(db) and not Path(db).is_file():
        return _usage(f"no database file at {db}")
    # a full disk behind `>` (or a reader that left): not a traceback mid-way through the batches
    return stdout_guarded(lambda: asyncio.run(_prune(db, args.older_than_days, dry_run=args.dry_run,
                                                     vacuum=not args.no_vacuum)), reader_left=1)


def _usage(message: str) -> int:
    print(f"error: {message}", file=sys.stderr)
    return EXIT_USAGE


async def _prune(db: str, days: float, *, dry_run: bool, vacuum: bool) -> int:
    from .observability.metrics import Metrics
    from .store import PruneCounts, StoreError, StoreInUse, describe_location, open_store
    from .store.base import MAX_PRUNE_BATCH
    from .store.sqlite import SqliteStore

    where = printable(describe_location(db))  # a file name that is not UTF-8: see printable
    # never give the tables to a database that has none (a mistyped URL or path); the dry run
    # does not migrate an older schema either (a real run does, as the engine would)
    store = open_store(db, Metrics(), lock_wait_s=0.0, create=False, migrate=not dry_run)
    try:
        await store.open()
    except StoreInUse as exc:
        print(f"error: {exc}. Nothing was changed: stop the engine first, or let it prune by "
              "itself (--keep-finished-days).", file=sys.stderr)
        return EXIT_USAGE
    except (StoreError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    cutoff = time.time() - days * DAY_S
    total, batches = PruneCounts(), 0
    try:
        shown = f"{days:g}"  # as printed: 1.0000001 is "1" too, and said "1 day"
        print(f"{where}: matches that ended before {_iso(cutoff)} (more than {shown} day{'' if shown == '1' else 's'} ago)")
        if dry_run:
            print(f"dry run: would delete {_describe(await store.count_finished(cutoff))}; nothing changed")
            outdated = getattr(store, "outdated_from", None)
            if outdated is not None:
                current = sys.modules[type(store).__module__].SCHEMA_VERSION
                print(f"schema version {outdated}, older than this program's {current}, left as it was: "
                      "a real run migrates it first, as the engine would (take a backup first: "
                      "docs/operations.md, Upgrades)")
            if isinstance(store, SqliteStore):
                space = await store.space()
                print(f"file: {_bytes(space.file_bytes + space.wal_bytes)}, of which {_bytes(space.free_bytes)} "
                      "free pages now (VACUUM gives back those and the pages of the deleted matches)")
            return EXIT_OK
        while True:
            batch = await store.prune_finished(cutoff, MAX_PRUNE_BATCH)
            if batch.match_ids:
                total, batches = total + batch.counts, batches + 1
            if len(batch.match_ids) < MAX_PRUNE_BATCH:
                break
        print(f"deleted {_describe(total)} ({batches} transaction{'s' if batches != 1 else ''})")
        if isinstance(store, SqliteStore):
            await _reclaim(store, vacuum)
        else:
            print("PostgreSQL: autovacuum makes the space reusable; VACUUM FULL (which locks the "
                  "tables) gives it back to the filesystem")
        return EXIT_OK
    except StoreError as exc:
        print(f"error: {exc} (deleted before the failure: {_describe(total)})", file=sys.stderr)
        return EXIT_FAILED
    finally:
        await store.close()


async def _reclaim(store, vacuum: bool) -> None:
    """VACUUM when the file has free pages and the volume has room for it (module docstring)."""
    before = await store.space()
    size = before.file_bytes + before.wal_bytes
    if before.free_bytes == 0:
        print(f"space: {_bytes(size)}, no free pages: nothing to VACUUM")
        return
    if not vacuum:
        print(f"space: {_bytes(size)}, of which {_bytes(before.free_bytes)} free pages, kept for new "
              "matches (--no-vacuum)")
        return
    free_on_volume = shutil.disk_usage(Path(store.path).resolve().parent).free
    if free_on_volume < before.live_bytes:
        print(f"VACUUM skipped: it needs about {_bytes(before.live_bytes)} free on the volume, which has "
              f"{_bytes(free_on_volume)}; the {_bytes(before.free_bytes)} of free pages are reused by new "
              "matches. Make room and run the command again to shrink the file.")
        return
    started = time.perf_counter()
    await store.vacuum()
    after = await store.space()
    print(f"VACUUM: {_bytes(size)} -> {_bytes(after.file_bytes + after.wal_bytes)} "
          f"in {time.perf_counter() - started:.1f} s")


def _describe(c) -> str:
    return f"{c.matches} matches ({c.actions} actions, {c.decks} decks, {c.seats} seats)"


def _bytes(n: int) -> str:
    """``n`` bytes for a person: 1000 bytes, 48.0 KiB, 1.2 MiB, 3.4 GiB."""
    if n < 1024:
        return f"{n} bytes"
    for unit in ("KiB", "MiB", "GiB"):
        n /= 1024
        if n < 1024 or unit == "GiB":
            break
    return f"{n:.1f} {unit}"


def _iso(unix_time: float) -> str:
    return datetime.fromtimestamp(unix_time, timezone.utc).isoformat(timespec="seconds")
