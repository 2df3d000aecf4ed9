"""``python -m engine_service prune`` (docs/operations.md, Retention): the dry run counts and
changes nothing, the real run deletes what the dry run counted and VACUUMs a SQLite file (or
says why not), on SQLite and PostgreSQL; it refuses, exit status 2 and nothing changed, while
an engine holds the database; and an engine started with CARDGAMES_KEEP_FINISHED_DAYS prunes
by itself at start-up."""

from __future__ import annotations

import argparse
import asyncio
import errno
import os
import re
import subprocess
import sys
import time
from collections import namedtuple

import grpc
import pytest

from engine_service import prune_cli
from engine_service.__main__ import main
from engine_service.store import ActionRecord, DeckRecord, PruneCounts, SeatRecord, SqliteStore
from engine_service.store.postgres import PostgresStore
from engine_service.store.postgres import SCHEMA_VERSION as POSTGRES_SCHEMA
from engine_service.store.sqlite import SCHEMA_VERSION as SQLITE_SCHEMA
from engine_service.store.sqlite import SqliteSpace
from engine_service.transport.generated import card_games_pb2 as pb, card_games_pb2_grpc
from tests.transport.engine_process import Service

from .test_store import record

DAY = 86400.0
OLD = ("old-1", "old-2", "old-3", "old-terminated")  # ended 40 days ago
KEPT = ("recent", "active")  # ended a day ago; unfinished since 50 days
ACTIONS = 300  # per match: with its decks, ~30 KB in SQLite, as a real match


async def populate(st, actions: int = ACTIONS) -> None:
    """Four matches that ended 40 days ago, one that ended yesterday, one still active; each
    with 8 decks of 32 cards, ``actions`` actions and two joined seats."""
    now = time.time()
    for i, mid in enumerate(OLD + KEPT):
        await st.create_match(record(mid, created_at=now - 50 * DAY + i),
                              [DeckRecord(d, ("JS", "7H", "AD", "KC") * 8) for d in range(8)])
        for seat in range(2):
            await st.save_seat(mid, SeatRecord(seat=seat, player_name=f"p{seat}", token_hash=f"{mid}-{seat}",
                                               joined_at=now - 50 * DAY))
        for seq in range(1, actions + 1):
            await st.append_action(mid, ActionRecord(seq, seq % 2, "play:JS", "player", f"c{seq}", "", now - 45 * DAY))
        if mid == "active":
            await st.set_status(mid, "active")
        else:
            ended = now - (DAY if mid == "recent" else 40 * DAY)
            await st.set_status(mid, "terminated" if mid == "old-terminated" else "finished",
                                {"winners": [0]}, ended)


def populate_sqlite(path, actions: int = ACTIONS) -> None:
    async def go():
        st = SqliteStore(path)
        await st.open()
        await populate(st, actions)
        await st.close()
    asyncio.run(go())


def stored(location) -> tuple[set[str], PruneCounts]:
    """The match ids a store holds, and what would be pruned after 30 days."""
    async def go():
        st = SqliteStore(location, exclusive=False) if not str(location).startswith("postgresql") \
            else PostgresStore(str(location), exclusive=False)
        await st.open()
        try:
            return ({li.record.match_id for li in await st.list_matches(limit=1000)},
                    await st.count_finished(time.time() - 30 * DAY))
        finally:
            await st.close()
    return asyncio.run(go())


def prune(capsys, *args: str) -> tuple[int, str, str]:
    status = main(["prune", *args])
    out = capsys.readouterr()
    return status, out.out, out.err


def file_size(path) -> int:
    return sum(os.path.getsize(p) for p in (str(path), f"{path}-wal") if os.path.exists(p))


EVERYTHING_OLD = f"4 matches ({4 * ACTIONS} actions, 32 decks, 8 seats)"


def test_dry_run_then_real_run_on_sqlite(tmp_path, capsys):
    db = tmp_path / "cards.sqlite3"
    populate_sqlite(db)
    size = file_size(db)

    status, out, err = prune(capsys, "--db", str(db), "--older-than-days", "30", "--dry-run")
    assert status == 0 and err == ""
    assert re.match(rf"{re.escape(str(db))}: matches that ended before \d{{4}}-\d\d-\d\dT\S+ "
                    r"\(more than 30 days ago\)\n", out)
    assert f"dry run: would delete {EVERYTHING_OLD}; nothing changed" in out
    # the cutoff, the counts, the file: no "schema version ..., older than" line for a current one
    assert len(out.splitlines()) == 3 and "schema version" not in out
    assert stored(db) == (set(OLD + KEPT), PruneCounts(4, 4 * ACTIONS, 32, 8))  # nothing changed

    status, out, err = prune(capsys, "--db", str(db), "--older-than-days", "30")
    assert status == 0 and err == ""
    assert f"deleted {EVERYTHING_OLD} (1 transaction)" in out
    assert len(out.splitlines()) == 3  # the cutoff, the counts, the space: plain lines for scripts
    assert re.search(r"VACUUM: [\d.]+ [KMG]iB -> [\d.]+ [KMG]iB in [\d.]+ s", out), out
    assert stored(db) == (set(KEPT), PruneCounts())
    assert file_size(db) < size * 0.6  # two matches of six are left

    # again: nothing to delete, no free pages, nothing to VACUUM
    status, out, _ = prune(capsys, "--db", str(db), "--older-than-days", "30")
    assert status == 0 and "deleted 0 matches (0 actions, 0 decks, 0 seats) (0 transactions)" in out
    assert "no free pages: nothing to VACUUM" in out and "VACUUM: " not in out  # no rewrite for nothing
    # 0 days: every ended match, never the active one
    status, out, _ = prune(capsys, "--db", str(db), "--older-than-days", "0")
    assert status == 0 and "deleted 1 matches" in out and stored(db)[0] == {"active"}


def test_vacuum_is_skipped_without_room_on_the_volume_or_on_request(tmp_path, capsys, monkeypatch):
    db = tmp_path / "cards.sqlite3"
    populate_sqlite(db)
    size = file_size(db)
    Usage = namedtuple("Usage", "total used free")
    monkeypatch.setattr(prune_cli.shutil, "disk_usage", lambda path: Usage(10**9, 10**9 - 1000, 1000))
    status, out, _ = prune(capsys, "--db", str(db), "--older-than-days", "30")
    assert status == 0 and f"deleted {EVERYTHING_OLD}" in out
    assert re.search(r"VACUUM skipped: it needs about [\d.]+ [KMG]iB free on the volume, which has 1000 bytes", out), out
    assert "Make room and run the command again" in out
    assert file_size(db) >= size * 0.9  # the pages are free inside the file, not given back
    monkeypatch.undo()
    status, out, _ = prune(capsys, "--db", str(db), "--older-than-days", "30", "--no-vacuum")
    assert status == 0 and re.search(r"of which [\d.]+ [KMG]iB free pages, kept for new matches \(--no-vacuum\)", out)
    status, out, _ = prune(capsys, "--db", str(db), "--older-than-days", "30", "--dry-run")
    assert re.search(r"file: [\d.]+ [KMG]iB, of which [1-9][\d.]* [KMG]iB free pages now", out), out
    status, out, _ = prune(capsys, "--db", str(db), "--older-than-days", "30")  # room now
    assert "VACUUM: " in out and file_size(db) < size * 0.6


def test_an_output_that_cannot_be_written_is_one_line_not_a_traceback(tmp_path):
    """``prune ... > FILE`` on a full disk (/dev/full here) was an OSError traceback after the
    database had been opened: one line on stderr now, exit status 1."""
    db = tmp_path / "engine.sqlite3"
    populate_sqlite(db)
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = dict(os.environ, PYTHONPATH=root)
    env.pop("CARDGAMES_DB", None)
    env.pop("PYTHONUNBUFFERED", None)  # buffered, as from a shell: the output fails at its flush
    with open("/dev/full", "w") as full:
        result = subprocess.run([sys.executable, "-m", "engine_service", "prune", "--db", str(db),
                                 "--older-than-days", "0", "--dry-run"], stdout=full, stderr=subprocess.PIPE,
                                text=True, timeout=120, cwd=root, env=env)
    assert (result.returncode, result.stderr) == (1, "error: cannot write standard output (No space left on "
                                                      "device)\n"), result.stderr


def test_usage_errors_exit_2_and_touch_nothing(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("CARDGAMES_DB", raising=False)
    missing = tmp_path / "nope.sqlite3"
    assert prune(capsys, "--db", str(missing), "--older-than-days", "1") == \
        (2, "", f"error: no database file at {missing}\n")
    assert not missing.exists() and not (tmp_path / "nope.sqlite3.lock").exists()
    # said as such, not "no database file at memory:" (the embedded default keeps nothing)
    assert prune(capsys, "--db", "memory:", "--older-than-days", "1") == \
        (2, "", "error: 'memory:' keeps nothing to prune\n")
    assert prune(capsys, "--older-than-days", "1")[2] == "error: --db is required (or set CARDGAMES_DB)\n"
    assert prune(capsys, "--db", " \n", "--older-than-days", "1")[2] == "error: --db is required (or set CARDGAMES_DB)\n"
    # a folder is no database file either: said as such, before anything is opened in it
    assert prune(capsys, "--db", str(tmp_path), "--older-than-days", "1") == \
        (2, "", f"error: no database file at {tmp_path}\n")
    garbage = tmp_path / "garbage.db"
    garbage.write_bytes(b"not a database " * 100)
    status, _, err = prune(capsys, "--db", str(garbage), "--older-than-days", "1")
    assert status == 2 and "not a SQLite database" in err
    # refused before the lock file was made beside it (it stayed, garbage.db.lock)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["garbage.db"]
    with pytest.raises(SystemExit) as exc:  # the age is required: no default deletes anything
        main(["prune", "--db", str(garbage)])
    assert exc.value.code == 2
    assert "the following arguments are required: --older-than-days" in capsys.readouterr().err
    for bad in ("-1", "nan", "inf", "soon", "1e20", "36501"):
        with pytest.raises(SystemExit) as exc:
            main(["prune", "--db", str(garbage), "--older-than-days", bad])
        assert exc.value.code == 2
        assert "argument --older-than-days" in capsys.readouterr().err, bad
    # a century at most, as --keep-finished-days: more was an OverflowError traceback (the
    # cutoff before any date) once the database was open
    db = tmp_path / "cards.sqlite3"
    populate_sqlite(db, actions=1)
    with pytest.raises(SystemExit):
        main(["prune", "--db", str(db), "--older-than-days", "1e20", "--dry-run"])
    assert "from 0 to 36500: '1e20'" in capsys.readouterr().err


@pytest.mark.parametrize("url", ["postgresq://cardgames:s3cret-pw@db.internal/cardgames",
                                 "sqlite:///var/lib/cardgames/cardgames.sqlite3", "mysql://u:s3cret-pw@h/x"])
def test_a_url_of_another_scheme_is_refused_without_showing_it(url, tmp_path, capsys, monkeypatch):
    """A URL that is not postgresql:// was taken for a relative SQLite path: "no database file
    at postgresq://cardgames:s3cret-pw@...", the password on the terminal. Refused as serve
    refuses it, naming the scheme only, by flag, by CARDGAMES_DB and in --help."""
    monkeypatch.chdir(tmp_path)
    status, out, err = prune(capsys, "--db", url, "--older-than-days", "1")
    scheme = url.split("://")[0]
    assert (status, out) == (2, "") and err.startswith("error: --db: must be a SQLite file's path")
    assert f"not a {scheme}:// URL" in err and "s3cret" not in err and "/var/lib" not in err
    monkeypatch.setenv("CARDGAMES_DB", url)
    status, _, err = prune(capsys, "--older-than-days", "1")
    assert status == 2 and f"not a {scheme}:// URL" in err and "s3cret" not in err
    with pytest.raises(SystemExit):
        main(["prune", "--help"])
    text = capsys.readouterr().out
    assert "s3cret" not in text and "invalid CARDGAMES_DB" in " ".join(text.split())
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("url", ['"postgresql://cardgames:s3cret-pw@db.internal/cardgames"',
                                 "jdbc:postgresql://db.internal/cardgames?password=s3cret-pw",
                                 "postgresql:/cardgames:s3cret-pw@db.internal/cardgames",
                                 "postgresql//cardgames:s3cret-pw@db.internal/cardgames",
                                 "cardgames:s3cret-pw@db.internal:5432/cardgames",
                                 "host=db.internal password=s3cret-pw dbname=cardgames"])
def test_a_url_not_at_the_start_is_refused_without_showing_it(url, tmp_path, capsys, monkeypatch):
    """Kept quotes, a jdbc: prefix, a missing slash: "no database file at
    "postgresql://cardgames:s3cret-pw@...", the password on the terminal. Refused as serve
    refuses it, by flag and by CARDGAMES_DB, never shown."""
    monkeypatch.chdir(tmp_path)
    status, out, err = prune(capsys, "--db", url, "--older-than-days", "1")
    assert (status, out) == (2, "") and err.startswith("error: --db: must be a SQLite file's path")
    assert "s3cret" not in err
    monkeypatch.setenv("CARDGAMES_DB", url)
    status, _, err = prune(capsys, "--older-than-days", "1")
    assert status == 2 and "s3cret" not in err
    with pytest.raises(SystemExit):
        main(["prune", "--help"])
    text = capsys.readouterr().out
    assert "s3cret" not in text and "invalid CARDGAMES_DB" in " ".join(text.split())
    assert list(tmp_path.iterdir()) == []


def test_the_database_from_cardgames_db(tmp_path, capsys, monkeypatch):
    db = tmp_path / "cards.sqlite3"
    populate_sqlite(db, actions=2)
    monkeypatch.setenv("CARDGAMES_DB", str(db))
    status, out, _ = prune(capsys, "--older-than-days", "30", "--dry-run")
    assert status == 0 and out.startswith(f"{db}: ")
    # read as serve reads --db: the newline a file or a shell's $(cat ...) leaves is not part of it
    status, out, _ = prune(capsys, "--db", f" {db}\n", "--older-than-days", "30", "--dry-run")
    assert status == 0 and out.startswith(f"{db}: ")


def test_cardgames_db_from_a_file_and_with_a_password(tmp_path, capsys, monkeypatch):
    """CARDGAMES_DB read from a file (a Secret or ConfigMap made with --from-file) ends with a
    newline, which is not part of the path (it was: "no database file at ..."); and --help
    shows a URL's password as the logs do, ***, never as written."""
    db = tmp_path / "cards.sqlite3"
    populate_sqlite(db)
    monkeypatch.setenv("CARDGAMES_DB", f"{db}\n")
    status, out, _ = prune(capsys, "--older-than-days", "30", "--dry-run")
    assert status == 0 and out.startswith(f"{db}: ")
    monkeypatch.setenv("CARDGAMES_DB", "postgresql://cardgames:s3cret-pw@db.internal/cardgames?password=s3cret2")
    with pytest.raises(SystemExit):
        main(["prune", "--help"])
    text = capsys.readouterr().out
    assert "s3cret" not in text and "postgresql://cardgames:***@" in " ".join(text.split()).replace(" ", "")


def test_an_engine_prunes_by_itself_and_the_command_refuses_its_database(tmp_path, capsys):
    """The engine, started with CARDGAMES_KEEP_FINISHED_DAYS=30 on a database holding matches
    that ended 40 days ago, deletes them in its first pass at start-up (a log line per batch;
    the API then answers NOT_FOUND); meanwhile the offline command refuses the database (exit 2,
    naming the engine's pid) and changes nothing. Once the engine has stopped, the command
    runs: nothing is left to delete, and VACUUM gives back the pages the engine freed."""
    db = tmp_path / "cards.sqlite3"
    populate_sqlite(db)
    size = file_size(db)
    engine = Service(tmp_path, db, "engine", CARDGAMES_KEEP_FINISHED_DAYS="30")
    try:
        deadline = time.monotonic() + 30
        while not [e for e in engine.lines() if e.get("event") == "matches_pruned"]:
            assert time.monotonic() < deadline, engine.log_path.read_text()
            time.sleep(0.05)
        status, out, err = prune(capsys, "--db", str(db), "--older-than-days", "0")
        assert status == 2 and out == ""
        assert f"in use by another engine process (pid {engine.proc.pid} " in err
        assert "Nothing was changed: stop the engine first" in err

        async def get_match(match_id):
            async with grpc.aio.insecure_channel(engine.target) as ch:
                stub = card_games_pb2_grpc.CardGamesServiceStub(ch)
                try:
                    await stub.GetMatch(pb.GetMatchRequest(match_id=match_id))
                except grpc.aio.AioRpcError as exc:
                    return exc.code()
        assert asyncio.run(get_match("old-1")) == grpc.StatusCode.NOT_FOUND
    finally:
        assert engine.stop() == 0
    lines = engine.lines()
    enabled = [e for e in lines if e["event"] == "retention_enabled"]
    pruned = [e for e in lines if e["event"] == "matches_pruned"]
    assert len(enabled) == 1 and enabled[0]["keep_finished_days"] == 30
    assert len(pruned) == 1 and {k: pruned[0][k] for k in ("matches", "actions", "decks", "seats")} == \
        {"matches": 4, "actions": 4 * ACTIONS, "decks": 32, "seats": 8}
    assert stored(db)[0] == set(KEPT)  # the engine also closed the file cleanly

    status, out, _ = prune(capsys, "--db", str(db), "--older-than-days", "30")
    assert status == 0 and "deleted 0 matches" in out and "VACUUM: " in out
    assert file_size(db) < size * 0.6


def test_postgres_dry_run_real_run_and_refusal(pg_url, capsys):
    async def setup_and_refuse():
        st = PostgresStore(pg_url)  # holds the schema, as an engine does
        await st.open()
        await populate(st)
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "engine_service", "prune", "--db", pg_url, "--older-than-days", "30",
            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        out, err = await proc.communicate()
        await st.close()
        return proc.returncode, out.decode(), err.decode()

    status, out, err = asyncio.run(setup_and_refuse())
    assert status == 2 and out == "" and "is in use by another engine process" in err, err
    assert stored(pg_url) == (set(OLD + KEPT), PruneCounts(4, 4 * ACTIONS, 32, 8))

    status, out, _ = prune(capsys, "--db", pg_url, "--older-than-days", "30", "--dry-run")
    assert status == 0 and f"dry run: would delete {EVERYTHING_OLD}; nothing changed" in out
    assert stored(pg_url)[0] == set(OLD + KEPT)
    status, out, _ = prune(capsys, "--db", pg_url, "--older-than-days", "30")
    assert status == 0 and f"deleted {EVERYTHING_OLD} (1 transaction)" in out and "autovacuum" in out
    assert stored(pg_url) == (set(KEPT), PruneCounts())



# ---- what the command never changes ---------------------------------------------------------

def test_the_dry_run_leaves_an_older_sqlite_schema_as_it_was(tmp_path, capsys):
    """The dry run "changes nothing": it used to migrate a database of an older schema on
    opening it (as an engine does), so that the release it came from could no longer open it.
    It counts on the schema as it is and says that a real run migrates it; the real run does."""
    from .test_migrations import _columns, _sqlite_v6, _user_version

    path = tmp_path / "v6.sqlite3"
    _sqlite_v6(path)
    before = _columns(path)
    status, out, _ = prune(capsys, "--db", str(path), "--older-than-days", "30", "--dry-run")
    assert status == 0 and "dry run: would delete 1 matches (0 actions, 0 decks, 0 seats); nothing changed" in out
    assert f"schema version 6, older than this program's {SQLITE_SCHEMA}, left as it was" in out
    assert _user_version(path) == 6 and _columns(path) == before
    status, out, _ = prune(capsys, "--db", str(path), "--older-than-days", "30")
    assert status == 0 and "deleted 1 matches" in out and "older than" not in out
    assert _user_version(path) == SQLITE_SCHEMA


def test_the_dry_run_leaves_an_older_postgres_schema_as_it_was(pg_database, pg_schema, capsys):
    from .test_migrations import _meta_version, _postgres_v6

    schema, url = pg_schema
    _postgres_v6(pg_database, schema)
    status, out, _ = prune(capsys, "--db", url, "--older-than-days", "30", "--dry-run")
    assert status == 0 and "dry run: would delete 1 matches" in out
    assert f"schema version 6, older than this program's {POSTGRES_SCHEMA}, left as it was" in out
    assert _meta_version(pg_database, schema) == "6"
    status, out, _ = prune(capsys, "--db", url, "--older-than-days", "30")
    assert status == 0 and "deleted 1 matches" in out
    assert _meta_version(pg_database, schema) == str(POSTGRES_SCHEMA)


def test_a_database_without_the_engines_tables_is_refused_not_given_them(tmp_path, pg_database, pg_schema,
                                                                        capsys):
    """A mistyped path or URL (an empty file, an empty database or schema) is "not a database
    of this service" (exit status 2): the command used to create the engine's tables in it."""
    empty = tmp_path / "empty.sqlite3"
    empty.touch()
    for args in ((), ("--dry-run",)):
        status, out, err = prune(capsys, "--db", str(empty), "--older-than-days", "30", *args)
        assert (status, out, err) == (2, "", f"error: {empty} holds no tables of this service\n")
        assert empty.stat().st_size == 0
    schema, url = pg_schema
    for args in ((), ("--dry-run",)):
        status, out, err = prune(capsys, "--db", url, "--older-than-days", "30", *args)
        assert status == 2 and out == "" and "holds no tables of this service" in err, err
        assert pg_database.execute("SELECT tablename FROM pg_tables WHERE schemaname = %s", (schema,)) == []


def test_a_database_whose_name_is_not_utf8_is_named_with_its_byte_escaped(tmp_path, capsys):
    """A path may hold any bytes: the first line printed such a name as a lone surrogate,
    which a UTF-8 locale's stdout refuses, a UnicodeEncodeError traceback with the database open
    (command_line.printable): the byte is shown as ``\\xff``."""
    db = tmp_path / "cards\udcff.sqlite3"
    populate_sqlite(db, actions=1)
    status, out, err = prune(capsys, "--db", str(db), "--older-than-days", "30")
    assert status == 0 and out.startswith(f"{tmp_path}/cards\\xff.sqlite3: matches that ended before "), err
    assert "deleted 4 matches" in out
    out.encode("utf-8")  # nothing a UTF-8 standard output refuses


def test_one_day_is_said_in_the_singular(tmp_path, capsys):
    db = tmp_path / "cards.sqlite3"
    populate_sqlite(db)
    status, out, _ = prune(capsys, "--db", str(db), "--older-than-days", "1", "--dry-run")
    assert status == 0 and "(more than 1 day ago)" in out
    # a number printed as 1 is said as 1 is ("1 days" for 1.0000001), others in the plural
    for days, said in (("1.0000001", "1 day"), ("0.5", "0.5 days"), ("0", "0 days"), ("2", "2 days")):
        status, out, _ = prune(capsys, "--db", str(db), "--older-than-days", days, "--dry-run")
        assert status == 0 and f"(more than {said} ago)" in out, out


def test_the_cutoff_is_n_days_of_86400_seconds_before_now(tmp_path, capsys):
    """docs/operations.md, Retention: the matches that ended more than N days ago; the first
    line says the cutoff, now less N days, in UTC."""
    db = tmp_path / "cards.sqlite3"
    populate_sqlite(db, actions=1)
    before = time.time()
    status, out, _ = prune(capsys, "--db", str(db), "--older-than-days", "2.5", "--dry-run")
    after = time.time()
    said = re.search(r"matches that ended before (\S+) \(more than 2.5 days ago\)", out)
    assert status == 0 and said, out
    assert prune_cli._iso(before - 2.5 * DAY) <= said.group(1) <= prune_cli._iso(after - 2.5 * DAY)
    assert said.group(1).endswith("+00:00")


def test_vacuum_runs_when_the_volume_has_just_the_room_the_live_pages_need(tmp_path, capsys, monkeypatch):
    """The module's docstring: VACUUM is skipped when the volume has less free space than the
    data that remains (its rewrite), not less than the free pages, on the volume of the file
    itself (a symbolic link's target); the sizes it says are the file's with its WAL."""
    (tmp_path / "volume").mkdir()
    (tmp_path / "volume" / "cards.sqlite3").write_bytes(b"")
    (tmp_path / "cards.sqlite3").symlink_to(tmp_path / "volume" / "cards.sqlite3")
    asked = []

    class Store:
        path = str(tmp_path / "cards.sqlite3")
        vacuumed = False

        async def space(self):
            if self.vacuumed:
                return SqliteSpace(30 * 1024, 10 * 1024, 40 * 1024, 0)  # its WAL not checkpointed yet
            return SqliteSpace(100 * 1024, 50 * 1024, 130 * 1024, 90 * 1024)  # 40 KiB live

        async def vacuum(self):
            self.vacuumed = True

    Usage = namedtuple("Usage", "total used free")
    monkeypatch.setattr(prune_cli.shutil, "disk_usage",
                        lambda path: asked.append(path) or Usage(10**9, 10**9 - 40 * 1024, 40 * 1024))
    store = Store()
    asyncio.run(prune_cli._reclaim(store, vacuum=True))
    assert store.vacuumed and asked == [(tmp_path / "volume").resolve()]
    assert capsys.readouterr().out.startswith("VACUUM: 150.0 KiB -> 40.0 KiB in ")
    monkeypatch.setattr(prune_cli.shutil, "disk_usage", lambda path: Usage(10**9, 10**9, 40 * 1024 - 1))
    store = Store()
    asyncio.run(prune_cli._reclaim(store, vacuum=True))
    assert not store.vacuumed and "VACUUM skipped: it needs about 40.0 KiB free" in capsys.readouterr().out


# ---- batches, a failure mid-way, what the command says --------------------------------------

def test_every_batch_is_deleted_up_to_the_last_one(tmp_path, capsys, monkeypatch):
    """A run deletes batch after batch (each its own transaction) until one comes back short:
    a full batch is not the last (the matches after it were left), an empty one is not a
    transaction."""
    monkeypatch.setattr("engine_service.store.base.MAX_PRUNE_BATCH", 2)
    db = tmp_path / "cards.sqlite3"
    populate_sqlite(db, actions=1)
    status, out, err = prune(capsys, "--db", str(db), "--older-than-days", "30", "--no-vacuum")
    assert (status, err) == (0, "")
    assert "deleted 4 matches (4 actions, 32 decks, 8 seats) (2 transactions)" in out
    assert stored(db)[0] == set(KEPT)


@pytest.mark.parametrize("batch,calls", [(2, 3), (3, 2), (4, 2), (5, 1)])
def test_a_short_batch_is_the_last_one_asked_for(batch, calls, tmp_path, capsys, monkeypatch):
    """Four old matches in batches of ``batch``: a batch that comes back short (fewer than
    asked, none included) ends the run, with no further transaction; a full one does not."""
    monkeypatch.setattr("engine_service.store.base.MAX_PRUNE_BATCH", batch)
    db = tmp_path / "cards.sqlite3"
    populate_sqlite(db, actions=1)
    asked = []
    real = SqliteStore.prune_finished

    async def counted(self, ended_before, limit=100):
        asked.append(limit)
        return await real(self, ended_before, limit)

    monkeypatch.setattr(SqliteStore, "prune_finished", counted)
    status, out, _ = prune(capsys, "--db", str(db), "--older-than-days", "30", "--no-vacuum")
    assert status == 0 and "deleted 4 matches" in out and asked == [batch] * calls


def test_a_database_failing_mid_run_keeps_what_was_deleted_and_exits_1(tmp_path, capsys, monkeypatch):
    """Exit status 1 (module docstring): the error on stderr with what was deleted before it,
    which stays deleted (each batch is one transaction); the file is closed (the next run
    opens it)."""
    from engine_service.store import StoreError

    monkeypatch.setattr("engine_service.store.base.MAX_PRUNE_BATCH", 2)
    db = tmp_path / "cards.sqlite3"
    populate_sqlite(db, actions=1)
    batches = []
    real = SqliteStore.prune_finished

    async def fails_second(self, ended_before, limit=100):
        batches.append(limit)
        if len(batches) == 2:
            raise StoreError("disk I/O error")
        return await real(self, ended_before, limit)

    monkeypatch.setattr(SqliteStore, "prune_finished", fails_second)
    status, out, err = prune(capsys, "--db", str(db), "--older-than-days", "30")
    assert status == 1 and "deleted" not in out
    assert err == "error: disk I/O error (deleted before the failure: 2 matches (2 actions, 16 decks, 4 seats))\n"
    monkeypatch.undo()
    ids, left = stored(db)
    assert ids >= set(KEPT) and len(ids & set(OLD)) == 2 and left == PruneCounts(2, 2, 16, 4)


def test_days_and_sizes_as_given_and_shown():
    assert prune_cli._days("0") == 0.0 and prune_cli._days("36500") == prune_cli.MAX_DAYS == 36500.0
    assert prune_cli._days(" 1.5 ") == 1.5
    assert f"{prune_cli._days('-0'):g}" == "0"  # not "more than -0 days ago"
    assert [prune_cli._bytes(n) for n in (0, 1023, 1024, 1536, 1024**2, 5 * 1024**3, 3 * 1024**4)] == \
        ["0 bytes", "1023 bytes", "1.0 KiB", "1.5 KiB", "1.0 MiB", "5.0 GiB", "3072.0 GiB"]
    with pytest.raises(argparse.ArgumentTypeError, match=r"^not a number of days: 'soon'$"):
        prune_cli._days("soon")
    assert prune_cli._iso(0.5) == "1970-01-01T00:00:00+00:00"  # to the second


def test_a_reader_that_left_stops_the_run_with_status_1(tmp_path, monkeypatch):
    """``prune ... | head -0``: the run stops where its output did, unfinished (status 1, not
    0: a script must not take it for done), the file closed."""
    db = tmp_path / "cards.sqlite3"
    populate_sqlite(db, actions=1)

    class Gone:
        def write(self, text):
            raise BrokenPipeError(errno.EPIPE, "Broken pipe")

        def flush(self):
            pass

    monkeypatch.setattr("engine_service.command_line.drop_stdout", lambda: None)  # not this process's
    monkeypatch.setattr(sys, "stdout", Gone())
    assert main(["prune", "--db", str(db), "--older-than-days", "30"]) == 1
    monkeypatch.undo()
    assert stored(db)[0] == set(OLD + KEPT)  # stopped at its first line, the cutoff


def test_a_postgres_urls_password_is_never_printed(pg_url, capsys):
    """The first line names the database as the logs do (store.describe_location): a password
    in the URL is shown as ***, never as written (it is printed to a terminal or a job's log)."""
    async def create():
        st = PostgresStore(pg_url)
        await st.open()
        await st.close()
    asyncio.run(create())
    url = pg_url + ("&" if "?" in pg_url else "?") + "password=s3cret-pw"  # the test server trusts
    status, out, err = prune(capsys, "--db", url, "--older-than-days", "30", "--dry-run")
    assert status == 0 and "dry run: would delete 0 matches" in out, err
    assert "s3cret" not in out + err and "password=***" in out.splitlines()[0]


def test_a_database_that_cannot_be_opened_is_one_line_and_exit_2(tmp_path, capsys, monkeypatch):
    """An OSError while opening (a folder the lock file cannot be made in, a file without
    permission) is one line on stderr, exit status 2 and nothing printed, not a traceback."""
    db = tmp_path / "cards.sqlite3"
    populate_sqlite(db, actions=1)

    async def refused(self):
        raise PermissionError(errno.EACCES, "Permission denied", str(db))

    monkeypatch.setattr(SqliteStore, "open", refused)
    status, out, err = prune(capsys, "--db", str(db), "--older-than-days", "30")
    assert (status, out) == (2, "") and err == f"error: [Errno 13] Permission denied: '{db}'\n"
    monkeypatch.undo()
    assert stored(db)[0] == set(OLD + KEPT)


def test_the_dry_run_says_the_files_size_with_its_wal_and_its_free_pages(tmp_path, capsys, monkeypatch):
    """The dry run's last line: the space on disk, the file with its WAL (as the VACUUM line
    says it), and of it the free pages, which a VACUUM would give back."""
    db = tmp_path / "cards.sqlite3"
    populate_sqlite(db, actions=1)

    async def space(self):
        return SqliteSpace(100 * 1024, 50 * 1024, 130 * 1024, 30 * 1024)

    monkeypatch.setattr(SqliteStore, "space", space)
    status, out, _ = prune(capsys, "--db", str(db), "--older-than-days", "30", "--dry-run")
    assert status == 0 and out.splitlines()[-1].startswith("file: 150.0 KiB, of which 30.0 KiB free pages now"), out


def test_a_postgres_server_not_reached_is_one_line_and_exit_2(capsys):
    """docs/operations.md (prune): a database that cannot be opened, a PostgreSQL server not
    reached, exits 2 with one line (as ``serve`` stops at its start), its password never
    shown; nothing on standard output."""
    status, out, err = prune(capsys, "--db", "postgresql://cards:s3cret-pw@127.0.0.1:1/cards",
                             "--older-than-days", "30")
    assert (status, out) == (2, ""), err
    assert len(err.splitlines()) == 1 and err.startswith("error: ") and "s3cret" not in err, err
