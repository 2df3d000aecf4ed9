"""The PostgreSQL store's specifics (the contract itself runs in test_store.py): durability
across a crash, synchronous commits, the single-writer guarantee coming from the database's
keys, refusing a schema that is not ours or is newer, and no secret (a deck, the DSN's
password) in an error message."""

from __future__ import annotations

import asyncio
import secrets
import threading
import time
from dataclasses import replace
from urllib.parse import urlsplit, urlunsplit

import psycopg
import pytest

from engine_service.store import (ActionRecord, DatabaseReadOnly, DeckRecord, DuplicateClientAction, NotADatabase,
                                  SeatRecord, SequenceConflict, StoreError, UnknownMatch, describe_location)
from engine_service.store import postgres
from engine_service.store.pg_ownership import reason_of
from engine_service.store.postgres import SCHEMA_VERSION, PostgresStore, redact
from tests.crash import crash

from .pg import connect, url_with
from .test_store import DECK0, record, run

TABLES = {"engine_meta", "matches", "seats", "decks", "match_actions"}


def test_acknowledged_writes_survive_a_crash(pg_url):
    async def write():
        st = PostgresStore(pg_url)
        await st.open()
        await st.create_match(record(), [DECK0])
        await st.append_action("m1", ActionRecord(1, 0, "pass", client_action_id="c"))
        crash(st)  # no close(): the process dies right after the acknowledgement

    async def read():
        # a restarted engine waits for the dead one's lock session to end (--db-lock-wait-s):
        # the server may not have ended it yet when the socket closed a moment ago (the test
        # failed under load with StoreInUse, waiting 0 s)
        st = PostgresStore(pg_url, lock_wait_s=5)
        await st.open()
        try:
            got = await st.load_match("m1")
            with pytest.raises(DuplicateClientAction):  # idempotency survives the restart
                await st.append_action("m1", ActionRecord(2, 0, "take", client_action_id="c"))
            return got
        finally:
            await st.close()

    run(write())
    got = run(read())
    assert [a.action for a in got.actions] == ["pass"] and got.decks == (DECK0,)


def test_a_crash_while_the_pool_opens_a_connection_lets_the_event_loop_end(pg_url):
    """tests/crash.py: the crashed store's pool is growing (its worker opening a connection
    that does not come) when the test's loop ends. psycopg_pool's worker catches the loop's
    cancel there and waits for its next task: unless the crash ended the pool's tasks,
    ``asyncio.run`` never returned (a test hung so for its 300 s timeout)."""
    connecting = threading.Event()

    async def go():
        st = PostgresStore(pg_url)
        await st.open()
        pool = st._pool

        async def connect_that_hangs(timeout=None):
            connecting.set()
            await asyncio.Event().wait()

        pool._connect = connect_that_hangs
        async with pool.connection():  # the pool's one connection (min_size 1) is held
            waiter = asyncio.ensure_future(pool.getconn())  # so the pool grows
            while not connecting.is_set():
                await asyncio.sleep(0.01)
            crash(st)
            waiter.cancel()

    ended = threading.Thread(target=run, args=(go(),), daemon=True)
    ended.start()
    ended.join(15)
    assert connecting.is_set() and not ended.is_alive()


def test_values_round_trip_exactly(pg_url):
    """Unix times keep every bit of the float; JSON options and results keep their types; the
    spectator delay and a seat's join hash are read back as they were written."""
    at = 1764452345.1234567
    options = {"kl_target_score": 300, "ratio": 2.5, "flags": [True, None, "x"], "nested": {"k": [1]}}
    result = {"winners": [0], "totals": [162, 0], "outcome": "completed"}

    async def go():
        st = PostgresStore(pg_url)
        await st.open()
        try:
            await st.create_match(replace(record(), options=options, created_at=at, spectator_delay_actions=7))
            await st.save_seat("m1", SeatRecord(seat=0, kind="bot", bot="search", joined_at=at, left=True))
            await st.save_seat("m1", SeatRecord(seat=1, player_name="ann", token_hash="t1", joined_at=at,
                                                join_hash="ab" * 32))
            await st.append_action("m1", ActionRecord(1, 0, "pass", at=at))
            await st.set_status("m1", "finished", result, at + 1)
            return await st.load_match("m1"), await st.list_matches()
        finally:
            await st.close()

    got, listed = run(go())
    assert got.record.created_at == at and got.actions[0].at == at and got.record.ended_at == at + 1
    assert dict(got.record.options) == options and dict(got.record.result) == result
    assert got.record.seats[0] == SeatRecord(seat=0, kind="bot", bot="search", joined_at=at, left=True)
    assert got.record.seats[1] == SeatRecord(seat=1, player_name="ann", token_hash="t1", joined_at=at,
                                             join_hash="ab" * 32)
    assert got.record.spectator_delay_actions == 7
    assert listed[0].record == got.record and listed[0].seq == 1


def test_listing_gives_each_match_its_own_seats(pg_url):
    async def go():
        st = PostgresStore(pg_url)
        await st.open()
        try:
            for i, name in enumerate(["ann", "bob", "cy"]):
                await st.create_match(record(f"m{i}", created_at=float(i)))
                await st.save_seat(f"m{i}", SeatRecord(seat=1, player_name=name, token_hash=f"h{i}"))
            return await st.list_matches()
        finally:
            await st.close()

    listed = run(go())
    assert [(m.record.match_id, m.record.seats[1].player_name, m.record.seats[1].token_hash)
            for m in listed] == [("m2", "cy", "h2"), ("m1", "bob", "h1"), ("m0", "ann", "h0")]


@pytest.mark.parametrize("setting", ["off", "local"])
def test_commits_are_synchronous_even_when_the_server_says_off(pg_database, pg_schema, setting):
    """A role or server default of ``synchronous_commit=off`` would acknowledge writes that a
    crash of the database loses (``local``: that a failover to a standby loses): the store's
    connections raise either to ``on`` (docs/operations.md, PostgreSQL: Durability)."""
    schema, _ = pg_schema
    url = url_with(pg_database.url, options=f"-csearch_path%3D{schema}%20-csynchronous_commit%3D{setting}")
    assert pg_database.execute("SHOW synchronous_commit") != [(setting,)]
    with connect(url) as conn:  # the URL does turn it off for an ordinary connection
        assert conn.execute("SHOW synchronous_commit").fetchone() == (setting,)

    async def go():
        st = PostgresStore(url)
        await st.open()
        try:
            await st.create_match(record())
            settings = []
            for _ in range(3):
                async with st._connection("test") as conn:
                    settings.append(await (await conn.execute("SHOW synchronous_commit")).fetchone())
            return settings
        finally:
            await st.close()
    assert run(go()) == [("on",)] * 3


def test_two_writers_at_the_same_seq_one_wins(pg_url):
    """Two processes appending to one match (ARCHITECTURE.md section 7): the primary key on
    (match_id, seq) lets exactly one action in, the other writer gets SequenceConflict. (An
    engine never shares its database: the second store is opened without the ownership lock
    to show what the database guarantees by itself.)"""
    async def go():
        a, b = PostgresStore(pg_url), PostgresStore(pg_url, exclusive=False)
        await a.open()
        await b.open()
        try:
            outcomes = []
            for i in range(20):
                await a.create_match(record(f"m{i}", created_at=float(i)))
                results = await asyncio.gather(a.append_action(f"m{i}", ActionRecord(1, 0, "pass")),
                                               b.append_action(f"m{i}", ActionRecord(1, 1, "take")),
                                               return_exceptions=True)
                outcomes.append(results)
            stored = [await a.load_match(f"m{i}") for i in range(20)]
            return outcomes, stored
        finally:
            await a.close()
            await b.close()

    outcomes, stored = run(go())
    for results, match in zip(outcomes, stored):
        winners = [r for r in results if r is None]
        losers = [r for r in results if isinstance(r, SequenceConflict)]
        assert len(winners) == 1 and len(losers) == 1, results
        assert len(match.actions) == 1 and match.actions[0].seq == 1


def test_concurrent_writes_of_many_matches(pg_url):
    """Writes of different matches proceed in parallel on the pool; a failing one fails alone;
    everything acknowledged is there after a reopen."""
    async def go():
        st = PostgresStore(pg_url)
        await st.open()
        await asyncio.gather(*(st.create_match(record(f"m{i}", created_at=float(i))) for i in range(40)))
        writes = [st.append_action(f"m{i}", ActionRecord(1, 0, "pass"), [DeckRecord(0, ("JS",))])
                  for i in range(40)]
        writes.append(st.append_action("m0", ActionRecord(1, 1, "take")))
        results = await asyncio.gather(*writes, return_exceptions=True)
        await st.close()
        st2 = PostgresStore(pg_url)
        await st2.open()
        loaded = [await st2.load_match(f"m{i}") for i in range(40)]
        await st2.close()
        return results, loaded

    results, loaded = run(go())
    assert sum(r is None for r in results) == 40
    assert sum(isinstance(r, SequenceConflict) for r in results) == 1
    assert all([a.action for a in m.actions] == ["pass"] for m in loaded[1:])
    assert all(m.decks == (DeckRecord(0, ("JS",)),) for m in loaded[1:])
    # m0: whichever came second is refused whole (the action and its deck)
    expected_m0 = (["pass"], 1) if results[0] is None else (["take"], 0)
    assert ([a.action for a in loaded[0].actions], len(loaded[0].decks)) == expected_m0


def test_errors_never_quote_a_deck(pg_url):
    """The server's DETAIL can quote a row; a deck's cards must not reach a log line."""
    secret = ("QS", "KH", "9D")

    async def go():
        st = PostgresStore(pg_url)
        await st.open()
        try:
            with pytest.raises(StoreError) as info:
                await st.create_match(record(), [DeckRecord(0, secret), DeckRecord(0, secret)])
            with pytest.raises(StoreError) as info2:
                await st.create_match(record("m2"), [DeckRecord(0, ("QS\x00",))])
            return str(info.value), str(info2.value), await st.load_match("m1")
        finally:
            await st.close()

    message, message2, stored = run(go())
    assert not any(card in message or card in message2 for card in secret)
    assert "deck for deal" in message and stored is None  # and nothing was written


def test_the_tables_are_created_in_the_schema_of_the_search_path(pg_database, pg_schema):
    schema, url = pg_schema

    async def go():
        st = PostgresStore(url)
        await st.open()
        await st.close()
    run(go())
    tables = {t for (t,) in pg_database.execute(
        "SELECT table_name FROM information_schema.tables WHERE table_schema = %s", (schema,))}
    assert tables == TABLES
    assert pg_database.execute("SELECT table_name FROM information_schema.tables "
                               "WHERE table_schema = 'public' AND table_name = 'matches'") == []
    meta = dict(pg_database.execute("SELECT key, value FROM engine_meta", schema=schema))
    assert meta == {"application": "cardgames-engine", "schema_version": str(SCHEMA_VERSION)}
    seat_columns = {c for (c,) in pg_database.execute(
        "SELECT column_name FROM information_schema.columns WHERE table_schema = %s "
        "AND table_name = 'seats'", (schema,))}
    assert "token_hash" in seat_columns and "token" not in seat_columns


def test_concurrent_first_opens_create_the_schema_once(pg_database, pg_schema):
    schema, url = pg_schema

    async def go():
        stores = [PostgresStore(url, exclusive=i == 0) for i in range(3)]  # one engine, two tools
        await asyncio.gather(*(s.open() for s in stores))
        await stores[0].create_match(record())
        got = await stores[2].load_match("m1")
        for s in stores:
            await s.close()
        return got
    assert run(go()).record.match_id == "m1"
    assert pg_database.execute("SELECT count(*) FROM engine_meta", schema=schema) == [(2,)]


def test_a_schema_without_the_tables_is_refused_and_left_without_them_when_not_to_be_created(
        pg_database, pg_schema):
    """``create=False`` (the offline prune: docs/operations.md, Retention): a schema without the
    engine's tables (a mistyped URL) is refused, NotADatabase, and left without them."""
    schema, url = pg_schema

    async def go():
        st = PostgresStore(url, create=False)
        try:
            await st.open()
        finally:
            await st.close()
    with pytest.raises(NotADatabase, match="holds no tables of this service"):
        run(go())
    assert pg_database.execute("SELECT table_name FROM information_schema.tables WHERE table_schema = %s",
                               (schema,)) == []


@pytest.mark.parametrize("kind", ["TABLE notes (body TEXT)", "VIEW notes AS SELECT 1 AS body"])
def test_another_applications_schema_is_refused(pg_database, pg_schema, kind):
    """docs/operations.md, PostgreSQL: a schema that holds something else, a table or a view
    (listed among its tables), is refused and left as it was."""
    schema, url = pg_schema
    pg_database.execute(f"CREATE {kind}", schema=schema)

    async def go():
        await PostgresStore(url).open()
    with pytest.raises(NotADatabase, match="another application"):
        run(go())
    tables = {t for (t,) in pg_database.execute(
        "SELECT table_name FROM information_schema.tables WHERE table_schema = %s", (schema,))}
    assert tables == {"notes"}  # untouched


@pytest.mark.parametrize("key, value, message", [("schema_version", "99", "newer"),
                                                 ("schema_version", str(SCHEMA_VERSION + 1), "newer"),
                                                 ("schema_version", "0", "no valid schema version"),
                                                 ("application", "something-else", "another application")])
def test_a_newer_or_foreign_meta_is_refused(pg_database, pg_schema, key, value, message):
    """docs/operations.md, PostgreSQL: a newer schema version than the program's is refused,
    the very next one included, and so is a version no schema ever had (0):
    nothing is migrated from it."""
    schema, url = pg_schema

    async def create():
        st = PostgresStore(url)
        await st.open()
        await st.close()
    run(create())
    pg_database.execute("UPDATE engine_meta SET value = %s WHERE key = %s", (value, key), schema=schema)
    with pytest.raises(NotADatabase, match=message):
        run(create())


def test_a_role_or_server_that_cannot_write_is_refused_at_open(pg_database, pg_schema):
    """A role granted SELECT only on the engine's tables (a reporting role put in the URL by
    mistake), or sessions whose transactions are read-only (a standby server,
    default_transaction_read_only): the store opened, the engine resumed every match and
    served, and every action, join and new match failed UNAVAILABLE ("permission denied for
    table match_actions"). It is refused at open, naming the missing privileges; a dry run
    of prune (migrate=False), which only reads, still opens with SELECT."""
    schema, url = pg_schema
    role = f"cg_ro_{secrets.token_hex(4)}"

    async def create():
        st = PostgresStore(url)
        await st.open()
        await st.create_match(record())
        await st.close()
    run(create())
    pg_database.execute(f'CREATE ROLE "{role}" LOGIN')
    try:
        pg_database.execute(f'GRANT USAGE ON SCHEMA "{schema}" TO "{role}"')
        pg_database.execute(f'GRANT SELECT ON ALL TABLES IN SCHEMA "{schema}" TO "{role}"')
        parts = urlsplit(url)
        role_url = urlunsplit((parts.scheme, f"{role}@{parts.hostname}:{parts.port}", parts.path,
                               parts.query, ""))

        async def open_close(store):
            await store.open()
            try:
                return (await store.load_match("m1")).record.match_id
            finally:
                await store.close()
        with pytest.raises(DatabaseReadOnly) as refused:
            run(open_close(PostgresStore(role_url)))
        message = str(refused.value)
        assert f"schema {schema!r}" in message and "INSERT on match_actions" in message, message
        assert "UPDATE on matches" in message and "SELECT on" not in message, message
        # every privilege the store's statements need, and only those (the log and the decks
        # are appended to, never updated)
        assert ("(it lacks INSERT on matches, UPDATE on matches, INSERT on seats, UPDATE on seats, "
                "INSERT on decks, INSERT on match_actions)") in message, message
        assert run(open_close(PostgresStore(role_url, exclusive=False, create=False, migrate=False))) == "m1"

        pg_database.execute(f'GRANT INSERT, UPDATE ON ALL TABLES IN SCHEMA "{schema}" TO "{role}"')
        pg_database.execute(f'REVOKE INSERT ON "{schema}".decks FROM "{role}"')
        with pytest.raises(DatabaseReadOnly, match=r"\(it lacks INSERT on decks\)"):  # one is enough
            run(open_close(PostgresStore(role_url)))
        pg_database.execute(f'GRANT INSERT ON "{schema}".decks TO "{role}"')
        assert run(open_close(PostgresStore(role_url))) == "m1"
        pg_database.execute(f'ALTER ROLE "{role}" SET default_transaction_read_only = on')
        with pytest.raises(DatabaseReadOnly, match="read-only"):
            run(open_close(PostgresStore(role_url)))
    finally:
        pg_database.execute(f'DROP OWNED BY "{role}"')
        pg_database.execute(f'DROP ROLE "{role}"')


def test_a_reason_is_one_line_without_the_servers_detail(pg_url):
    """reason_of (every StoreError quoting the server or libpq): the server's message without
    its DETAIL, which may quote a row (here a key; a deck alike), and libpq's own text, whose
    hint stands on a line of its own, joined into one line; never empty."""
    with connect(pg_url) as conn:
        conn.execute("CREATE TABLE t (k text PRIMARY KEY)")
        conn.execute("INSERT INTO t VALUES ('QS KH 9D')")
        with pytest.raises(psycopg.Error) as duplicate:
            conn.execute("INSERT INTO t VALUES ('QS KH 9D')")
    with pytest.raises(psycopg.Error) as refused:
        psycopg.connect("host=127.0.0.1 port=1 dbname=cards", connect_timeout=10)
    assert "\n" in str(duplicate.value) and "\n" in str(refused.value)  # what reason_of is given
    assert reason_of(duplicate.value) == 'duplicate key value violates unique constraint "t_pkey"'
    reason = reason_of(refused.value)
    assert "Connection refused" in reason and "Is the server running" in reason, reason
    assert "\n" not in reason and "\t" not in reason and "  " not in reason, reason
    assert reason_of(psycopg.OperationalError(" \n\t")).strip()


def test_a_missing_schema_is_a_clear_error(pg_database):
    async def go():
        await PostgresStore(url_with(pg_database.url, schema="no_such_schema")).open()
    with pytest.raises(StoreError, match="create it first"):
        run(go())


def test_an_unreachable_server_fails_fast_without_the_password():
    url = "postgresql://cards:s3cret-pw@127.0.0.1:1/cards"  # nothing listens on port 1

    async def go():
        await PostgresStore(url).open()
    started = time.monotonic()
    with pytest.raises(StoreError) as info:
        run(go())
    assert time.monotonic() - started < 60  # a hang guard: the refusal itself is the reason below
    assert "Connection refused" in str(info.value), info.value
    assert "s3cret-pw" not in str(info.value) and "127.0.0.1:1/cards" in str(info.value)


def test_passwords_are_redacted_for_logs():
    assert redact("postgresql://u:pw@h:5432/db?sslmode=require") == "postgresql://u:***@h:5432/db?sslmode=require"
    assert redact("postgres://h/db?password=pw&user=u") == "postgres://h/db?password=***&user=u"
    assert redact("host=h password='p w' dbname=d") == "host=h password=*** dbname=d"
    assert redact("postgresql://u@h/db") == "postgresql://u@h/db"
    assert describe_location("postgresql://u:pw@h/db") == "postgresql://u:***@h/db"
    assert describe_location("./cards:pw@x.sqlite3") == "./cards:pw@x.sqlite3"  # a file name


@pytest.mark.parametrize("dsn", [
    "postgresql://u:pa?ss-s3cret@h/db",     # libpq ends the user info at the first "@" or "/"
    "postgresql://u:pa#ss-s3cret@h/db",     # only, not at "?" or "#"
    "postgresql://u:a?b#c&s3cret=x@h/db?sslmode=require",
    "postgresql://h/db?pass%77ord=s3cret",  # libpq decodes a parameter's name too
    "postgresql://h/db?user=u&%70assword=s3cret&sslmode=require",
])
def test_passwords_libpq_accepts_are_redacted(dsn):
    from psycopg.conninfo import conninfo_to_dict
    assert "s3cret" in conninfo_to_dict(dsn)["password"]  # what libpq connects with
    assert "s3cret" not in redact(dsn) and "s3cret" not in describe_location(dsn)
    assert "h/db" in redact(dsn)


@pytest.mark.parametrize("dsn", [
    "postgresql://cardgames:Ab/s3cret+x@h/db",   # base64 passwords hold an unencoded "/"
    "postgresql://cardgames:/s3cret@h/db",
    "postgresql://cardgames:12ab/s3cret@h/db",
    "postgresql://cardgames:7/s3cret+Qx=@h/db?sslmode=require",  # digits then "/": not a port
    "postgresql://cardgames:12/s3cret@h/db",
    "postgresql://u@h/db?sslpassword=s3cret",    # the passphrase of the client's key
    "postgresql://u@h/db?sslmode=verify-full&SSLPASSWORD=s3cret",
    "postgresql://u@h/db?sslpass%77ord=s3cret",  # its name percent-encoded, as libpq decodes it
])
def test_passwords_libpq_misreads_or_names_otherwise_are_redacted(dsn):
    """A password with an unencoded "/" ends the user info there for libpq, which then reads
    ``user:pass`` as a host and a port: the password rule did not see it, and the whole URL
    reached the start-up line, store_unavailable and prune's error. ``sslpassword`` (the client
    key's passphrase) is as secret as ``password``. A port, a host list and an "@" in a
    parameter are left as they are."""
    assert "s3cret" not in redact(dsn) and "s3cret" not in describe_location(dsn)
    assert "h/db" in redact(dsn)
    for kept in ("postgresql://h:5432/db?application_name=a@b",
                 "postgresql://h1:5432,h2:5433/db?application_name=a@b",
                 "postgresql://[::1]:5432/db?application_name=a@b",
                 "postgresql://h:5432/db#a@b"):
        assert redact(kept) == kept


@pytest.mark.parametrize("dsn", [
    "postgresql://u:1,s3cret?x@h/db",          # digits then "," or "?": not a port, no "/" in it
    "postgresql://cardgames:,s3cret/x@h/db",   # no digit before the "/": not a port
    "host=h sslpassword=s3cret dbname=db",     # libpq's key=value form
    "host=h password='p\\' s3cret' dbname=db",  # a quoted value, its quote escaped
])
def test_passwords_of_more_forms_are_redacted(dsn):
    """redact's docstring: ``user:password@``, one libpq misreads, and a ``password=`` or
    ``sslpassword=`` parameter of a URL or of a ``key=value`` string are all left out."""
    assert "s3cret" not in redact(dsn)


@pytest.mark.parametrize("dsn", [
    "host=h PASSWORD=s3cret dbname=db",
    "postgresql://h/db?password%20=s3cret",
    "postgresql://h/db?%20password=s3cret",
    "postgresql://h/db?PASSWORD%20=s3cret",
])
def test_a_dsn_libpq_refuses_is_refused_without_its_password(dsn):
    """The DSN's password never appears in a message (the module's docstring), not even in
    the refusal of a DSN libpq cannot read."""
    with pytest.raises(StoreError, match="not a valid PostgreSQL connection URL") as info:
        PostgresStore(dsn)._conninfo()
    assert "s3cret" not in str(info.value)


def test_the_urls_connection_parameters_are_kept_and_the_stores_defaults_fill_the_others(pg_url):
    """docs/operations.md, PostgreSQL: every libpq parameter works in the URL's query
    (``connect_timeout``, ``application_name``...): the store's own defaults (a connect
    timeout, its application name, keepalives and ``tcp_user_timeout``) apply only where the
    URL sets none."""
    from psycopg.conninfo import conninfo_to_dict
    given = conninfo_to_dict(PostgresStore(url_with(pg_url, connect_timeout="3", application_name="mine",
                                                    tcp_user_timeout="5000", keepalives_idle="7"))._conninfo())
    defaults = conninfo_to_dict(PostgresStore(pg_url)._conninfo())
    names = ("connect_timeout", "application_name", "tcp_user_timeout", "keepalives_idle")
    assert [str(given[n]) for n in names] == ["3", "mine", "5000", "7"]
    assert [str(defaults[n]) for n in names[:3]] == [str(postgres.CONNECT_TIMEOUT_S), postgres.APPLICATION,
                                                     str(postgres.TCP_USER_TIMEOUT_MS)]


def test_a_closed_store_refuses_work(pg_url):
    async def go():
        st = PostgresStore(pg_url)
        await st.open()
        await st.close()
        await st.close()  # idempotent
        for call in (st.create_match(record()), st.load_match("m1"), st.list_matches()):
            with pytest.raises(StoreError, match="^the store is closed$"):
                await call
    run(go())


def test_connections_lost_with_a_database_restart_are_replaced(pg_database, pg_url):
    """The server restarts (here: every connection of the store is terminated): a call on a
    dead connection fails as a StoreError (the session layer answers UNAVAILABLE, retryable),
    and the store then works again without being reopened."""
    async def go():
        st = PostgresStore(pg_url)
        await st.open()
        try:
            await st.create_match(record())
            killed = pg_database.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                "WHERE datname = current_database() AND application_name = 'cardgames-engine'")
            outcomes = []
            for seq in (1, 2, 3):
                try:
                    await st.append_action("m1", ActionRecord(seq, 0, "pass"))
                    outcomes.append("ok")
                except StoreError as exc:
                    assert not isinstance(exc, SequenceConflict)
                    outcomes.append("failed")
                    await asyncio.sleep(0.2)  # the pool replaces the connection in the background
                    await st.append_action("m1", ActionRecord(seq, 0, "pass"))
            return killed, outcomes, await st.load_match("m1")
        finally:
            await st.close()

    killed, outcomes, stored = run(go())
    assert killed and outcomes[1:] == ["ok", "ok"], outcomes  # (the first call may fail)
    assert [a.seq for a in stored.actions] == [1, 2, 3]


def test_the_absence_heartbeat_is_one_statement_whatever_the_number_of_seats(pg_schema):
    """touch_absences (every absence_heartbeat_s while some player is away) updates all the
    seats it is given in one statement: as an executemany of one UPDATE per seat it took
    180-250 ms for 5,000 away seats, a pooled connection held for it every beat. Counted
    by a statement-level trigger; the seats not recorded away and the unknown ones are still
    left alone."""
    schema, url = pg_schema

    async def go():
        st = PostgresStore(url)
        await st.open()
        try:
            for i in range(40):
                await st.create_match(record(f"m{i}"))
                for seat in (0, 1):
                    await st.save_seat(f"m{i}", SeatRecord(seat=seat, player_name="p", token_hash=f"t{i}-{seat}",
                                                           joined_at=1.0))
                await st.save_absence(f"m{i}", 0, 100.0)
            with connect(url) as c:
                c.execute(f"CREATE TABLE {schema}.seat_updates (n integer NOT NULL)")
                c.execute(f"CREATE FUNCTION {schema}.count_seat_updates() RETURNS trigger LANGUAGE plpgsql AS "
                          f"$$ BEGIN INSERT INTO {schema}.seat_updates VALUES (1); RETURN NULL; END $$")
                c.execute(f"CREATE TRIGGER count_seat_updates AFTER UPDATE ON {schema}.seats "
                          f"FOR EACH STATEMENT EXECUTE FUNCTION {schema}.count_seat_updates()")
            seats = [(f"m{i}", seat) for i in range(40) for seat in (0, 1)] + [("nope", 0)]
            await st.touch_absences(seats, 130.0)
            with connect(url) as c:
                statements = c.execute(f"SELECT count(*) FROM {schema}.seat_updates").fetchone()[0]
            return statements, [await st.load_match(f"m{i}") for i in (0, 39)]
        finally:
            await st.close()

    statements, stored = run(go())
    assert statements == 1
    for m in stored:
        assert [(s.away_since, s.away_seen) for s in m.record.seats] == [(100.0, 130.0), (None, None)]


def test_a_ping_is_refused_whenever_a_write_would_be_for_the_ownership(pg_url):
    """Store.ping (the heartbeat's probe during an outage) makes a write's first check: while
    this engine does not hold its database (here: the lock taken again, its restoration under
    way), a write is refused, and so is the ping, though a connection would answer: an
    outage is not said over (absence_heartbeat_recovered) while writes are still refused."""
    async def go():
        st = PostgresStore(pg_url)
        await st.open()
        try:
            await st.create_match(record())
            st._owner._restoring = True  # held is False; the server answers all along
            errors = []
            for call in (lambda: st.append_action("m1", ActionRecord(1, 0, "pass")), st.ping):
                try:
                    await call()
                except StoreError as exc:
                    errors.append(str(exc))
            st._owner._restoring = False
            await st.ping()
            return errors
        finally:
            await st.close()

    errors = run(go())
    assert len(errors) == 2 and "ping refused" in errors[1], errors


@pytest.mark.parametrize("pipeline", [True, False])
def test_a_refused_append_decks_writes_none_of_its_decks_with_or_without_pipeline_mode(pg_url, monkeypatch,
                                                                                      pipeline):
    """append_decks' decks go in one transaction of their own: without it, psycopg's
    executemany on a libpq older than 14 (no pipeline mode) runs one autocommitted INSERT per
    deck, and a deck refused (its deal has one) would leave the decks before it written."""
    monkeypatch.setattr(postgres, "PIPELINE", pipeline)
    monkeypatch.setattr(psycopg.AsyncPipeline, "is_supported", classmethod(lambda cls: pipeline))

    async def go():
        st = PostgresStore(pg_url)
        await st.open()
        try:
            await st.create_match(record(), [DECK0])
            with pytest.raises(StoreError):
                await st.append_decks("m1", [DeckRecord(1, ("7H", "JS")), DeckRecord(0, ("AS",))])
            return await st.load_match("m1")
        finally:
            await st.close()

    assert run(go()).decks == (DECK0,)


def test_a_match_and_a_listing_are_read_in_one_statement_each(pg_url, monkeypatch):
    """A read is one statement in autocommit, one round trip (PostgresStore._read): a read-only
    transaction of a match's four reads took seven, and the start reads every unfinished match
    before it serves (docs/operations.md, start-up step 6). One statement also reads one
    snapshot, so the match, its seats, decks and actions agree without a transaction."""
    statements: list[str] = []
    transactions: list[object] = []
    execute, transaction = psycopg.AsyncCursor.execute, psycopg.AsyncConnection.transaction

    def counted_execute(self, query, *args, **kwargs):
        statements.append(str(query))
        return execute(self, query, *args, **kwargs)

    def counted_transaction(self, *args, **kwargs):
        transactions.append(self)
        return transaction(self, *args, **kwargs)

    async def go():
        st = PostgresStore(pg_url)
        await st.open()
        try:
            await st.create_match(record(), [DECK0])
            await st.save_seat("m1", SeatRecord(seat=1, player_name="ann", token_hash="h1"))
            await st.append_action("m1", ActionRecord(1, 0, "pass", at=2.0))
            await st.append_action("m1", ActionRecord(2, 1, "take", at=3.0), [replace(DECK0, deal=1)])
            await st.create_match(record("m2", created_at=2.0))
            expected = await st.load_match("m1"), await st.list_matches()  # the pool's connection made
            monkeypatch.setattr(psycopg.AsyncCursor, "execute", counted_execute)
            monkeypatch.setattr(psycopg.AsyncConnection, "transaction", counted_transaction)
            got = await st.load_match("m1")
            loaded = list(statements)
            listed = await st.list_matches()
            return expected, got, listed, loaded, list(statements)
        finally:
            await st.close()

    (match, listing), got, listed, loaded, both = run(go())
    assert len(loaded) == 1 and len(both) == 2 and transactions == []
    assert got == match and listed == listing
    assert len(got.actions) == 2 and len(got.decks) == 2 and got.record.seats[1].player_name == "ann"
    assert [(li.record.match_id, li.seq, len(li.record.seats)) for li in listed] == [("m2", 0, 2), ("m1", 2, 2)]


def test_a_write_that_opens_no_transaction_sends_nothing_more(pg_url, monkeypatch):
    """PostgresStore._write: a function that opens no transaction ran in autocommit, nothing
    to commit (append_decks without decks: only its match's check, one statement)."""
    statements: list[str] = []
    execute = psycopg.AsyncCursor.execute

    def counted_execute(self, query, *args, **kwargs):
        statements.append(str(query))
        return execute(self, query, *args, **kwargs)

    async def go():
        st = PostgresStore(pg_url)
        await st.open()
        try:
            await st.create_match(record())
            monkeypatch.setattr(psycopg.AsyncCursor, "execute", counted_execute)
            await st.append_decks("m1", [])
            with pytest.raises(UnknownMatch):
                await st.append_decks("m9", [])
            return list(statements)
        finally:
            await st.close()

    sent = run(go())
    assert len(sent) == 2 and all(s.startswith("SELECT 1 FROM matches") for s in sent), sent


def test_a_lock_check_without_an_answer_severs_every_waiting_call_at_once(pg_url):
    """PostgresStore._silent (docs/operations.md, The server hangs): the check of the lock got
    no answer, so every call waiting on the server is ended at once, not at its own bound,
    quoting ``no answer from the server (nor within 2 s to the check of this engine's lock)``."""
    async def go():
        st = PostgresStore(pg_url, exclusive=False)
        await st.open()
        admin = await psycopg.AsyncConnection.connect(pg_url)
        try:
            await st.create_match(record())
            await admin.execute("SELECT 1 FROM matches WHERE match_id = 'm1' FOR UPDATE")  # held
            calls = [asyncio.create_task(st.set_status("m1", "terminated", {"outcome": "x"}, 3.0)),
                     asyncio.create_task(st.set_status("m1", "finished", {"outcome": "y"}, 4.0))]
            for _ in range(500):  # both waiting on the row's lock
                if len(st._calls) == 2:
                    break
                await asyncio.sleep(0.01)
            await asyncio.sleep(0.1)
            started = time.monotonic()
            st._silent(2.0)
            errors = await asyncio.wait_for(asyncio.gather(*calls, return_exceptions=True), 5)
            return errors, time.monotonic() - started
        finally:
            await admin.close()
            await st.close()

    errors, elapsed = run(go())
    assert elapsed < 2, elapsed  # at once, not at the call's bound (20 s)
    for error in errors:
        assert isinstance(error, StoreError), error
        assert "no answer from the server (nor within 2 s to the check of this engine's lock)" in str(error), error


def test_taking_the_lock_again_gives_up_after_10_s_or_the_calls_bound_if_shorter(pg_url):
    """docs/operations.md, The server hangs: taking the engine's lock again gives up after
    10 s (not the calls' bound, 20 s); a shorter call bound bounds the ownership's waits too."""
    async def go():
        bounds = []
        for options in ({}, {"call_timeout_s": 1.0}):
            st = PostgresStore(pg_url, **options)
            await st.open()
            try:
                # and a check without an answer severs the waiting calls (the module's docstring)
                bounds.append((st._owner.timeout_s, st._owner.on_silent == st._silent))
            finally:
                await st.close()
        return bounds

    assert run(go()) == [(10.0, True), (1.0, True)]


def test_a_value_that_cannot_be_stored_is_a_store_error(pg_url):
    """PostgresStore._connection: a value that cannot be adapted (here a result that is not
    JSON) is a StoreError naming why, as the SQLite store does; not an exception of psycopg's
    or of json's reaching the caller."""
    async def go():
        st = PostgresStore(pg_url)
        await st.open()
        try:
            await st.create_match(record())
            with pytest.raises(StoreError, match="set_status failed: TypeError") as info:
                await st.set_status("m1", "finished", {"outcome": object()}, 3.0)
            return info.value, await st.load_match("m1")
        finally:
            await st.close()

    error, stored = run(go())
    assert type(error) is StoreError and stored.record.status == "waiting"


def test_the_pool_holds_one_to_pool_size_connections(pg_url):
    """docs/operations.md, PostgreSQL: "Each process holds a pool of 1 to 8 connections"
    (``pool_size``, 8 by default): concurrent reads never take more than that."""
    async def go():
        sizes = []
        for kwargs in ({}, {"pool_size": 2}):
            st = PostgresStore(pg_url, **kwargs)
            await st.open()
            try:
                if not sizes:
                    await st.create_match(record())
                await asyncio.gather(*(st.load_match("m1") for _ in range(40)))
                stats = st._pool.get_stats()
                sizes.append((st._pool.min_size, st._pool.max_size, stats["pool_size"] <= st._pool.max_size))
            finally:
                await st.close()
        return sizes

    assert run(go()) == [(1, 8, True), (1, 2, True)]


def test_a_server_that_does_not_answer_the_connection_of_the_preparation_fails_the_open_in_time(
        pg_url, monkeypatch):
    """docs/operations.md, When the database fails: the start's preparation of the schema,
    its connection included, gives up after ``call_timeout_s`` (``cannot connect to ...: no
    answer from the server within ...``); it used to wait for ever."""
    async def connect_that_hangs(*args, **kwargs):
        await asyncio.Event().wait()

    monkeypatch.setattr(psycopg.AsyncConnection, "connect", connect_that_hangs)

    async def go():
        st = PostgresStore(pg_url, exclusive=False, call_timeout_s=0.3)
        async with asyncio.timeout(10):  # the test's own guard, against a hang only
            await st.open()
    started = time.monotonic()
    with pytest.raises(StoreError) as refused:
        run(go())
    assert time.monotonic() - started < 5
    assert str(refused.value).startswith("cannot connect to ") and "no answer from the server within 0.3 s" in str(
        refused.value), refused.value


def test_a_server_older_than_postgresql_13_is_refused_at_open(pg_url, monkeypatch):
    """docs/operations.md, PostgreSQL: "An older server is refused at start" (the engine needs
    pg_current_xact_id() and pg_xact_status(), which PostgreSQL 13 introduced); 13 itself is not."""
    def opened(version):
        monkeypatch.setattr(psycopg.ConnectionInfo, "server_version", property(lambda self: version))

        async def go():
            st = PostgresStore(pg_url, exclusive=False)
            await st.open()
            await st.close()
        run(go())

    with pytest.raises(StoreError, match=r"is PostgreSQL 12; the engine needs PostgreSQL 13 or newer"):
        opened(120022)
    opened(130000)


def test_a_role_that_may_not_create_the_tables_is_a_store_error_naming_the_reason(pg_database, pg_schema):
    """docs/operations.md, PostgreSQL: at its first start the engine needs CREATE on the schema;
    without it the open fails as a StoreError (store_unavailable, exit status 2) saying why,
    not with the driver's own exception, and leaves the schema empty."""
    schema, url = pg_schema
    role = f"cg_nc_{secrets.token_hex(4)}"
    pg_database.execute(f'CREATE ROLE "{role}" LOGIN')
    try:
        pg_database.execute(f'GRANT USAGE ON SCHEMA "{schema}" TO "{role}"')
        parts = urlsplit(url)
        role_url = urlunsplit((parts.scheme, f"{role}@{parts.hostname}:{parts.port}", parts.path,
                               parts.query, ""))

        async def go():
            await PostgresStore(role_url, exclusive=False).open()
        with pytest.raises(StoreError) as refused:
            run(go())
        assert type(refused.value) is StoreError, refused.value
        assert str(refused.value).startswith("cannot prepare ") and "permission denied" in str(refused.value)
        assert pg_database.execute("SELECT table_name FROM information_schema.tables WHERE table_schema = %s",
                                   (schema,)) == []
    finally:
        pg_database.execute(f'DROP OWNED BY "{role}"')
        pg_database.execute(f'DROP ROLE "{role}"')


def test_an_unreachable_server_is_cannot_connect_without_the_ownership_lock_too():
    """The open's own connection (exclusive=False: the offline prune's, no lock session before
    it) says so in the words of docs/operations.md (``cannot connect to ...``), libpq's reason
    after it, the password redacted."""
    async def go():
        await PostgresStore("postgresql://cards:s3cret-pw@127.0.0.1:1/cards", exclusive=False).open()
    with pytest.raises(StoreError) as refused:
        run(go())
    message = str(refused.value)
    assert message.startswith("cannot connect to ") and "Connection refused" in message, message
    assert "s3cret-pw" not in message and "127.0.0.1:1/cards" in message, message
