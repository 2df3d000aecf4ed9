"""``python -m clients.admin`` against a real engine (tests/clients/conftest.py): matches are
created and played a little through the client library, then the operator's command line
lists, inspects, terminates and exports them as a subprocess, the way an operator runs it.
Every run is checked for the admin token: it must never appear in the output."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import secrets
import stat
import subprocess
import sys
import time
from pathlib import Path

import grpc
import pytest

from clients import cardgames_client as cg
from clients import admin as admin_cli
from clients import render
from clients.local_service import LocalService, free_port
from engine_service.transport.generated import admin_pb2, cards_pb2, match_pb2

from .conftest import ADMIN_TOKEN, run, self_signed_certificate

ROOT = Path(__file__).resolve().parents[2]
#: The keys of `list --json`: MatchSummary's field names, every one, in the proto's order.
SUMMARY_KEYS = [f.name for f in match_pb2.MatchSummary.DESCRIPTOR.fields]
SEAT_KEYS = [f.name for f in match_pb2.SeatInfo.DESCRIPTOR.fields]
#: A well-formed match id that no match has.
UNKNOWN_ID = "AAAAAAAAAAAAAAAA"


#: clients.admin where rich cannot be imported (the container image installs no clients extra).
WITHOUT_RICH = ["-c", "import sys; sys.modules['rich'] = None; from clients.admin import main; sys.exit(main())"]


def admin(target: str | None, *args: str, token: str | None = ADMIN_TOKEN, stdin: str | None = None,
          timeout: float = 60, without_rich: bool = False) -> subprocess.CompletedProcess:
    """``python -m clients.admin [--target T] ARGS`` with the token in CARDGAMES_ADMIN_TOKEN
    (``None``: none); fails the test if the real admin token shows up in its output."""
    env = dict(os.environ, COLUMNS="250", PYTHONUNBUFFERED="1")
    env.pop("CARDGAMES_ADMIN_TOKEN", None)
    env.pop("GRPC_VERBOSITY", None)  # as an operator's shell has it
    if token is not None:
        env["CARDGAMES_ADMIN_TOKEN"] = token
    module = WITHOUT_RICH if without_rich else ["-m", "clients.admin"]
    argv = [sys.executable, *module, *(["--target", target] if target else []), *args]
    result = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, cwd=ROOT, env=env,
                            input=stdin, stdin=None if stdin is not None else subprocess.DEVNULL)
    assert ADMIN_TOKEN not in result.stdout + result.stderr, "the admin token was printed"
    if token is not None:
        assert token not in result.stdout + result.stderr, "the token was printed"
    return result


def ok(result: subprocess.CompletedProcess) -> str:
    assert result.returncode == 0, f"exit {result.returncode}\nstdout: {result.stdout}\nstderr: {result.stderr}"
    return result.stdout


def refused(result: subprocess.CompletedProcess) -> str:
    """An API error: exit 1, nothing on stdout, one line on stderr (returned)."""
    assert result.returncode == 1, f"exit {result.returncode}\nstdout: {result.stdout}\nstderr: {result.stderr}"
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    return lines[0]


async def play_a_little(client: cg.Client, actions: int = 3, name: str = "",
                        spectator_delay_actions: int = 0) -> tuple[str, list[cg.SeatSession]]:
    """A Klaberjass match of two players (ada, bob) with ``actions`` actions played; no bot and
    a long turn time, so its seq stays where the test left it."""
    match = await client.create_match("klaberjass", seats=[None, None], turn_time_s=120, name=name,
                                      spectator_delay_actions=spectator_delay_actions)
    seats = [await client.join(match.match_id, player_name=n) for n in ("ada", "bob")]
    for _ in range(actions):
        view = await seats[0].view()
        mover = seats[view.to_act]
        view = await mover.view()
        await mover.submit(view.legal_actions[0].notation, expected_seq=view.seq)
    return match.match_id, seats


def table_row(stdout: str, match_id: str) -> str:
    (line,) = [line for line in stdout.splitlines() if match_id in line]
    return " ".join(cell.strip() for cell in line.strip("│ ").split("│"))


def test_list_shows_played_and_waiting_matches(engine):
    async def scenario():
        async with cg.connect(engine.target) as client:
            active, seats = await play_a_little(client, 3, name="table one")
            waiting = (await client.create_match("georgian_joker", seats=[None, "random", "random", None],
                                                 name="lobby")).match_id
            # ada's watch stream is her presence: the listing shows her present, bob away
            async with contextlib.aclosing(seats[0].watch()) as stream:
                await anext(stream)
                deadline = time.monotonic() + 30
                while not (await client.get_match(active)).seats[0].present:
                    assert time.monotonic() < deadline, "ada never became present"
                    await asyncio.sleep(0.05)
                table = ok(await asyncio.to_thread(admin, engine.target, "list"))
                lines = ok(await asyncio.to_thread(admin, engine.target, "list", "--json"))
        return active, waiting, table, lines

    active, waiting, table, lines = run(scenario())

    row = table_row(table, active)
    assert re.match(rf"{active} klaberjass active 3 0 ada \(present\) \d{{4}}-\d\d-\d\d \d\d:\d\d:\d\dZ table one$",
                    row), row
    assert "1 bob (away)" in table
    row = table_row(table, waiting)
    assert re.match(rf"{waiting} georgian_joker waiting 0 0 free .* lobby$", row), row
    for seat in ("1 bot random", "2 bot random", "3 free"):
        assert seat in table
    assert re.search(r"^\d+ match(es)?$", table.strip().splitlines()[-1])

    listed = {m["match_id"]: m for m in map(json.loads, lines.splitlines())}
    for m in listed.values():
        assert list(m) == SUMMARY_KEYS, "every field, in the proto's order"
        assert all(list(s) == SEAT_KEYS for s in m["seats"])
    a, w = listed[active], listed[waiting]
    assert (a["game"], a["status"], a["seq"], a["name"], a["turn_time"]) == ("klaberjass", "active", 3, "table one", 120)
    assert [(s["seat"], s["kind"], s["player_name"], s["taken"], s["present"]) for s in a["seats"]] == [
        (0, "open", "ada", True, True), (1, "open", "bob", True, False)]
    assert a["created_at"].endswith("Z") and a["result"] is None
    assert (w["status"], w["seq"]) == ("waiting", 0)
    assert [(s["kind"], s["bot"], s["taken"]) for s in w["seats"]] == [
        ("open", "", False), ("bot", "random", False), ("bot", "random", False), ("open", "", False)]

    # the filters, with the options before or after the sub-command
    only_waiting = [json.loads(x) for x in ok(admin(None, "list", "--status", "waiting", "--json",
                                                    "--target", engine.target)).splitlines()]
    ids = {m["match_id"] for m in only_waiting}
    assert waiting in ids and active not in ids and {m["status"] for m in only_waiting} == {"waiting"}
    only_klaberjass = [json.loads(x) for x in ok(admin(engine.target, "list", "--game", "klaberjass",
                                                       "--json")).splitlines()]
    assert active in {m["match_id"] for m in only_klaberjass}
    assert {m["game"] for m in only_klaberjass} == {"klaberjass"}
    newest = ok(admin(engine.target, "list", "--limit", "1", "--json")).splitlines()
    assert len(newest) == 1
    # no test of this module creates a Japanese Joker match
    assert ok(admin(engine.target, "list", "--game", "japanese_joker")).strip() == "no matches"
    assert ok(admin(engine.target, "list", "--game", "japanese_joker", "--json")) == ""
    line = refused(admin(engine.target, "list", "--game", "no_such_game"))
    assert line.startswith("error: INVALID_ARGUMENT (UNKNOWN_GAME)"), line


def test_list_pages_with_page_token_and_all(engine):
    """``list`` shows one page (--limit) and the token of the next (on stderr with --json);
    ``--page-token`` lists that page; ``--all`` lists every page: the unpaged listing."""
    async def scenario():
        async with cg.connect(engine.target) as client:
            for _ in range(5):
                await client.create_match("klaberjass", seats=[None, None], turn_time_s=120)

    run(scenario())
    whole = [json.loads(x)["match_id"] for x in ok(admin(engine.target, "list", "--limit", "1000", "--json")).splitlines()]
    first = admin(engine.target, "list", "--limit", "2", "--json")
    ids = [json.loads(x)["match_id"] for x in ok(first).splitlines()]
    (line,) = first.stderr.strip().splitlines()
    assert ids == whole[:2] and line.startswith("next page: --page-token ")
    token = line.split()[-1]
    second = [json.loads(x)["match_id"] for x in ok(admin(engine.target, "list", "--limit", "2", "--json",
                                                            "--page-token", token)).splitlines()]
    assert second == whole[2:4]
    every = admin(engine.target, "list", "--all", "--limit", "2", "--json")
    assert [json.loads(x)["match_id"] for x in ok(every).splitlines()] == whole and every.stderr == ""
    assert len(whole) >= 5
    table = ok(admin(engine.target, "list", "--limit", "2"))
    assert all(m in table for m in whole[:2]) and whole[2] not in table
    assert re.search(r"^2 matches; more: --page-token \S+ \(or --all\)$", table.strip().splitlines()[-1], re.M)
    table = ok(admin(engine.target, "list", "--all", "--limit", "2"))
    assert all(m in table for m in whole) and table.strip().splitlines()[-1] == f"{len(whole)} matches"
    line = refused(admin(engine.target, "list", "--status", "active", "--page-token", token))
    assert line.startswith("error: INVALID_ARGUMENT (BAD_PAGE_TOKEN)"), line


def test_inspect_shows_every_hand(engine):
    async def scenario():
        async with cg.connect(engine.target) as client:
            match_id, seats = await play_a_little(client, 3, spectator_delay_actions=2)
            hands = [[c.code for c in (await s.view()).hand] for s in seats]
            return match_id, hands

    match_id, hands = run(scenario())
    assert all(len(h) > 0 for h in hands)

    text = ok(admin(engine.target, "inspect", match_id))
    assert text.startswith(f"match {match_id}") and "active  seq 3" in text
    assert "spectators allowed (2 actions late)" in text  # the admin is never delayed: seq 3
    assert "hands (hidden cards)" in text
    for seat, (name, hand) in enumerate(zip(("ada", "bob"), hands)):
        assert f"{name} [{len(hand)}]: {render.cards_text(hand).plain}" in text, (seat, text)
    assert "stock [" in text and "to act:" in text

    full = json.loads(ok(admin(engine.target, "inspect", match_id, "--json")))
    assert set(full) == {"match", "view", "hands", "zones", "first_dealer", "decks"}
    assert [(h["seat"], h["cards"]) for h in full["hands"]] == [(0, hands[0]), (1, hands[1])]
    assert full["match"]["seq"] == full["view"]["seq"] == 3
    assert full["view"]["seat"] is None and full["view"]["phase"]
    assert len(full["decks"]) == 1 and len(full["decks"][0]["cards"]) == 32
    zones = {z["name"]: z["cards"] for z in full["zones"]}
    assert zones["hand0"] == hands[0] and "stock" in zones

    assert "HIDDEN" in ok(admin(None, "inspect", "--help"))
    assert "hidden card" in ok(admin(None, "--help")).lower()


def test_terminate_ends_the_match_once(engine):
    async def scenario():
        async with cg.connect(engine.target) as client:
            match_id, _ = await play_a_little(client, 2)
            result = await asyncio.to_thread(admin, engine.target, "terminate", match_id,
                                             "--reason", "stuck since the outage")
            return match_id, result, await client.get_match(match_id)

    match_id, result, after = run(scenario())
    text = ok(result)
    assert text.startswith(f"match {match_id}") and "terminated  seq 2" in text
    assert "result: terminated (stuck since the outage)" in text
    assert after.status == match_pb2.MATCH_STATUS_TERMINATED
    assert render.struct_dict(after.result)["reason"] == "stuck since the outage"

    # a reason that starts with a dash is text, as argparse reads it, not an unknown option
    again = refused(admin(engine.target, "terminate", match_id, "--reason", "-- again, by mistake"))
    assert again.startswith("error: FAILED_PRECONDITION (MATCH_NOT_ACTIVE)"), again

    listed = [json.loads(x) for x in ok(admin(engine.target, "list", "--status", "terminated", "--json")).splitlines()]
    assert match_id in {m["match_id"] for m in listed}


def test_export_round_trips_through_replay_check(engine, tmp_path):
    async def scenario():
        async with cg.connect(engine.target) as client:
            return (await play_a_little(client, 5))[0]

    match_id = run(scenario())
    out = tmp_path / "match.json"
    out.write_text("an older file, world-readable\n")
    out.chmod(0o644)
    text = ok(admin(engine.target, "export", match_id, "-o", str(out)))
    assert str(out) in text and "5 action(s)" in text
    assert stat.S_IMODE(out.stat().st_mode) == 0o600
    assert [p.name for p in tmp_path.iterdir()] == ["match.json"], "no temporary file left behind"

    data = json.loads(out.read_text())
    assert data["schema"] == "card-transcript/1" and data["game"] == "klaberjass"
    assert sum(len(d["steps"]) for d in data["deals"]) == 5 and len(data["deals"][0]["deck"]) == 32
    check = subprocess.run([sys.executable, "-m", "engine_service", "replay", "--check", str(out)],
                           capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert check.returncode == 0 and check.stdout.strip() == f"{out}: ok", check.stdout + check.stderr

    assert json.loads(ok(admin(engine.target, "export", match_id))) == data  # on stdout

    # without rich (the container image): the JSON forms and export work, the table says why not
    assert json.loads(ok(admin(engine.target, "export", match_id, without_rich=True))) == data
    listed = [json.loads(x) for x in ok(admin(engine.target, "list", "--json", without_rich=True)).splitlines()]
    assert match_id in {m["match_id"] for m in listed}
    no_table = admin(engine.target, "list", without_rich=True)
    assert no_table.returncode == 2 and "needs rich" in no_table.stderr and "--json" in no_table.stderr
    refused_line = refused(admin(engine.target, "export", UNKNOWN_ID, "-o", str(tmp_path / "none.json")))
    assert "NOT_FOUND" in refused_line and not (tmp_path / "none.json").exists()


def test_a_reader_that_leaves_early_is_not_an_error(engine):
    """``list | head``: the reader closes the pipe before the output is written. The table
    (rich, which answered a closed pipe with SystemExit(1)) and --json both exit 0 with
    nothing on stderr: exit status 1 means the API refused or failed."""
    async def scenario():
        async with cg.connect(engine.target) as client:
            for _ in range(3):
                await client.create_match("klaberjass", seats=[None, None], turn_time_s=120)

    run(scenario())
    env = dict(os.environ, CARDGAMES_ADMIN_TOKEN=ADMIN_TOKEN, COLUMNS="250")
    for args in (["list"], ["list", "--json"]):
        process = subprocess.Popen([sys.executable, "-m", "clients.admin", "--target", engine.target, *args],
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                                   cwd=ROOT, env=env)
        process.stdout.close()  # the reader is gone before the first line is written
        err = process.stderr.read().decode()
        assert process.wait(timeout=60) == 0 and err == "", (args, process.returncode, err)


def test_unknown_match_is_not_found(engine):
    for args in (["inspect", UNKNOWN_ID], ["terminate", UNKNOWN_ID, "--reason", "-1 point: x"],
                 ["export", UNKNOWN_ID]):
        line = refused(admin(engine.target, *args))
        assert line.startswith("error: NOT_FOUND (MATCH_NOT_FOUND)"), (args, line)


def test_bad_or_missing_token_is_refused_and_never_shown(engine, tmp_path):
    wrong = secrets.token_hex(16)
    line = refused(admin(engine.target, "list", token=wrong))
    assert "PERMISSION_DENIED" in line or "UNAUTHENTICATED" in line
    assert "refused" in line

    token_file = tmp_path / "token"
    token_file.write_text(wrong + "\n")
    line = refused(admin(engine.target, "--admin-token-file", str(token_file), "inspect", UNKNOWN_ID, token=None))
    assert "PERMISSION_DENIED" in line or "UNAUTHENTICATED" in line

    line = refused(admin(engine.target, "list", token=None))
    assert line.startswith("error: UNAUTHENTICATED (ADMIN_TOKEN_REQUIRED)")
    assert "--admin-token-file" in line and "CARDGAMES_ADMIN_TOKEN" in line

    # the right token from a file (its newline ignored) wins over a wrong environment
    token_file.write_text(ADMIN_TOKEN + "\n")
    ok(admin(engine.target, "list", "--admin-token-file", str(token_file), token=wrong))
    ok(admin(engine.target, "list", "--admin-token-file", "-", token=None, stdin=ADMIN_TOKEN + "\n"))


def test_an_engine_without_an_admin_token_is_named_as_the_cause():
    """ADMIN_DISABLED: the engine has no admin token, so no token was refused; the line says
    how to turn the admin API on (it used to say "the admin token was refused", which sent the
    operator looking for a typo in a token the engine never had)."""
    disabled = cg.CardGamesError(grpc.StatusCode.PERMISSION_DENIED, "the admin API is disabled on this server",
                                 reason="ADMIN_DISABLED")
    for token in (ADMIN_TOKEN, None):
        line = admin_cli.error_line(disabled, token)
        assert line.startswith("error: PERMISSION_DENIED (ADMIN_DISABLED): the admin API is disabled")
        assert "refused" not in line and "started without an admin token" in line
        assert "CARDGAMES_ADMIN_TOKEN" in line and "\n" not in line
    wrong = cg.CardGamesError(grpc.StatusCode.PERMISSION_DENIED, "not the admin token", reason="NOT_ADMIN")
    assert admin_cli.error_line(wrong, ADMIN_TOKEN).endswith("(the admin token was refused)")


def in_process(capsys, monkeypatch, *argv: str, token: str | None = None) -> tuple[int, str, str]:
    """``clients.admin.main(argv)`` in this process (for what fails before any call)."""
    monkeypatch.delenv("CARDGAMES_ADMIN_TOKEN", raising=False)
    if token is not None:
        monkeypatch.setenv("CARDGAMES_ADMIN_TOKEN", token)
    try:
        status = admin_cli.main(list(argv))
    except SystemExit as exc:
        status = exc.code
    out, err = capsys.readouterr()
    return status, out, err


def test_usage_errors_exit_2(capsys, monkeypatch, tmp_path):
    for args in ([], ["list", "--status", "paused"], ["list", "--limit", "0"], ["inspect"], ["frobnicate"],
                 ["terminate", UNKNOWN_ID],  # --reason is required
                 # a deadline gRPC would fail at once (DEADLINE_EXCEEDED, exit 1) is a typing error
                 ["list", "--timeout", "0"], ["list", "--timeout", "-1"], ["--timeout", "nan", "list"],
                 ["list", "--timeout", "inf"], ["list", "--timeout", "soon"]):
        status, out, err = in_process(capsys, monkeypatch, *args)
        assert status == 2 and "usage:" in err, (args, out, err)

    # never a token on the command line: refused without being echoed
    secret = secrets.token_hex(16)
    # a misspelt flag before the token: argparse took the token for the COMMAND and echoed it
    # ("invalid choice: '<token>'"); every unknown --option is refused before, unshown
    for flag, args in (("--admin_token", ["--admin_token", secret, "list"]), ("--token", [f"--token={secret}", "list"]),
                       ("--tokn", ["list", "--tokn", secret]), ("-t", ["-t", secret, "list"]),
                       ("-t", [f"-t{secret}", "list"])):
        status, out, err = in_process(capsys, monkeypatch, *args)
        assert status == 2 and f"unrecognized option {flag} (what follows it is not shown" in err, err
        assert secret not in out + err
    for args in (["--admin-token", secret, "list"], ["list", f"--admin-token={secret}"]):
        status, out, err = in_process(capsys, monkeypatch, *args)
        assert status == 2 and "--admin-token-file" in err and secret not in out + err
    # a flag of another command (terminate's --reason, export's -o), or a word no command
    # takes: argparse echoed it with its value ("unrecognized arguments: --reason <secret>");
    # the flag is named, the value only counted
    for args, says in ((["list", "--reason", secret], "unrecognized arguments: --reason (1 value not shown"),
                       (["list", f"--reason={secret}"], "unrecognized arguments: --reason (1 value not shown"),
                       (["list", "-o", secret], "unrecognized arguments: -o (1 value not shown"),
                       (["inspect", UNKNOWN_ID, secret], "unrecognized arguments: (1 value not shown"),
                       (["terminate", UNKNOWN_ID, "--reason", "r", "--status", secret, "--all"],
                        "unrecognized arguments: --status --all (1 value not shown")):
        status, out, err = in_process(capsys, monkeypatch, *args)
        assert status == 2 and says in err and secret not in out + err, (args, err)

    token_file = tmp_path / "token"
    status, _, err = in_process(capsys, monkeypatch, "list", "--admin-token-file", str(token_file))
    assert status == 2 and "cannot read the admin token file" in err
    token_file.write_text("\n")
    status, _, err = in_process(capsys, monkeypatch, "list", "--admin-token-file", str(token_file))
    assert status == 2 and "is empty" in err
    token_file.write_text("two words\n")
    status, _, err = in_process(capsys, monkeypatch, "list", "--admin-token-file", str(token_file))
    assert status == 2 and "cannot carry" in err and "two words" not in err
    status, _, err = in_process(capsys, monkeypatch, "list", token="caf\u00e9-token")
    assert status == 2 and "CARDGAMES_ADMIN_TOKEN" in err and "caf" not in err
    status, _, err = in_process(capsys, monkeypatch, "list", "--ca", str(tmp_path / "none.pem"), token=secret)
    assert status == 2 and "cannot read the CA file" in err and secret not in err
    (tmp_path / "garbage.pem").write_bytes(bytes(range(256)))
    status, _, err = in_process(capsys, monkeypatch, "list", "--ca", str(tmp_path / "garbage.pem"), token=secret)
    assert status == 2 and "garbage.pem holds no usable PEM certificate" in err and secret not in err


def test_an_admin_token_file_that_holds_no_token_is_refused_before_any_call(capsys, monkeypatch, tmp_path):
    """--admin-token-file was read whole: /dev/zero filled the memory, a named pipe no one
    writes to waited for ever, and a file far larger than a token was sent as the header. Read
    with a limit now (read_bounded; standard input likewise): a usage error, never the file's
    content, before any connection."""
    import io

    def no_engine(*args, **kwargs):
        raise AssertionError("the engine was reached")

    monkeypatch.setattr(admin_cli, "connect", no_engine)
    large, pipe = tmp_path / "large.token", tmp_path / "pipe.token"
    large.write_text("a" * (64 * 1024 + 1))
    os.mkfifo(pipe)
    for path, says in ((large, f"the admin token file {large}: larger than 65536 bytes"),
                       ("/dev/zero", "the admin token file /dev/zero: a device, not a regular file"),
                       (pipe, f"the admin token file {pipe} is empty")):  # no writer: nothing in it
        status, out, err = in_process(capsys, monkeypatch, "list", "--admin-token-file", str(path))
        assert status == 2 and f"error: {says}" in err and "aaaa" not in out + err, err
    monkeypatch.setattr(sys, "stdin", io.StringIO("a" * (64 * 1024 + 1)))
    status, out, err = in_process(capsys, monkeypatch, "list", "--admin-token-file", "-")
    assert status == 2 and "error: the admin token file standard input: larger than 65536 bytes" in err, err
    assert "aaaa" not in out + err, err  # not a part of it either
    # the file that cannot be read or is not text: one line naming it, the system's reason
    missing, binary = tmp_path / "missing.token", tmp_path / "binary.token"
    binary.write_bytes(b"\xff\xfe token")
    for path, says in ((missing, f"cannot read the admin token file {missing}: No such file or directory"),
                       (binary, f"cannot read the admin token file {binary}: UnicodeDecodeError")):
        status, out, err = in_process(capsys, monkeypatch, "list", "--admin-token-file", str(path))
        assert status == 2 and err.strip().endswith(f"error: {says}") and "token" not in out, err


def test_standard_output_that_cannot_be_written_is_one_line(engine):
    """Standard output redirected to a full disk (/dev/full here): Python's "Exception ignored
    ... OSError: [Errno 28]" at its exit, status 120; for reissue-token the new token was lost
    without a word while the old one no longer worked. One line now, exit status 1, and
    reissue-token says the token is lost and how to give the seat another."""
    async def seated():
        async with cg.connect(engine.target) as client:
            match_id, seats = await play_a_little(client, 0)
            return match_id, seats[1].token

    match_id, bob = run(seated())
    env = dict(os.environ, CARDGAMES_ADMIN_TOKEN=ADMIN_TOKEN)
    env.pop("GRPC_VERBOSITY", None)

    def to_full_disk(*args: str, unbuffered: bool = True) -> subprocess.CompletedProcess:
        # unbuffered, each write fails; buffered (as from a shell), the flush at the end does
        run_env = dict(env, PYTHONUNBUFFERED="1")
        if not unbuffered:
            del run_env["PYTHONUNBUFFERED"]
        with open("/dev/full", "w") as full:
            return subprocess.run([sys.executable, "-m", "clients.admin", "--target", engine.target, *args],
                                  stdout=full, stderr=subprocess.PIPE, text=True, timeout=60, cwd=ROOT, env=run_env)

    for args in (["list", "--json"], ["export", match_id], ["inspect", match_id]):
        for unbuffered in (True, False):
            result = to_full_disk(*args, unbuffered=unbuffered)
            assert (result.returncode, result.stderr) == (1, "error: cannot write standard output (No space left "
                                                              "on device)\n"), (args, unbuffered, result.stderr)
    for unbuffered in (True, False):  # buffered, the token's failed write was tried again at exit
        result = to_full_disk("reissue-token", match_id, "1", unbuffered=unbuffered)
        assert (result.returncode, result.stderr) == (1, (
            "error: cannot write the new seat token to standard output (No space left on device): it is lost, and "
            "the old one no longer works; run reissue-token again (-o FILE writes it to a file) to give the seat "
            "another\n")), (unbuffered, result.stderr)

    async def old_token_refused():
        async with cg.connect(engine.target) as client:
            with pytest.raises(cg.Unauthenticated):
                await client.seat_session(match_id, 1, bob).view()

    run(old_token_refused())


def test_unreachable_engine(engine):
    line = refused(admin(f"127.0.0.1:{free_port()}", "list", "--timeout", "3"))
    assert line.startswith("error: UNAVAILABLE"), line


def test_tls(tmp_path):
    (tmp_path / "other").mkdir()
    cert, key = self_signed_certificate(tmp_path)
    with LocalService(admin_token=ADMIN_TOKEN, args=["--tls-cert", str(cert), "--tls-key", str(key)]) as service:
        assert ok(admin(service.target, "list", "--tls", "--ca-file", str(cert), "--server-name", "localhost",
                        "--json")) == ""
        assert "no matches" in ok(admin(service.target, "list", "--tls", "--ca", str(cert)))
        # a CA that is not the server's: the one error line, without the gRPC core's plain
        # "Handshake failed" INFO line per attempt before it (the commands left its verbosity
        # at the default; serve sets ERROR)
        other, _ = self_signed_certificate(tmp_path / "other")
        line = refused(admin(service.target, "list", "--tls", "--ca", str(other), "--timeout", "3"))
        assert line.startswith("error: UNAVAILABLE") and "CERTIFICATE_VERIFY_FAILED" in line, line
        health = subprocess.run([sys.executable, "-m", "clients.health", "--target", service.target, "--tls",
                                 "--ca", str(other)], capture_output=True, text=True, timeout=60, cwd=ROOT,
                                env={k: v for k, v in os.environ.items() if k != "GRPC_VERBOSITY"})
        assert health.returncode == 1 and len(health.stderr.strip().splitlines()) == 1, health.stderr


def admin_target(argv: list[str], environ: dict[str, str]) -> str:
    """The target clients.admin calls with ``argv`` in ``environ``."""
    called: list[str] = []

    def connect(target: str, **kwargs):
        called.append(target)
        raise cg.CardGamesError(grpc.StatusCode.UNAVAILABLE, "not called")

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(admin_cli, "connect", connect)
        assert admin_cli.main(argv, environ=environ) == 1
    return called[0]


def test_the_default_target_is_the_port_the_engine_beside_it_listens_on():
    """Run in the engine's pod or shell, the command finds the engine on CARDGAMES_PORT (the
    ConfigMap may change it), as the health check does; 50051 when unset."""
    assert admin_target(["list"], {"CARDGAMES_PORT": "50099"}) == "127.0.0.1:50099"
    assert admin_target(["list", "--target", "h:1"], {"CARDGAMES_PORT": "50099"}) == "h:1"
    assert admin_target(["--target", "h:2", "list"], {"CARDGAMES_PORT": "50099"}) == "h:2"
    assert admin_target(["list"], {}) == "127.0.0.1:50051"
    for port in ("1", "65535"):  # the engine's range, 0 aside (a free port only its log names)
        assert cg.default_target({"CARDGAMES_PORT": port}) == f"127.0.0.1:{port}"


@pytest.mark.parametrize("value, port", [("", "50051"), (" 50099\n", "50099")])
def test_the_default_target_reads_cardgames_port_as_the_engine_does(monkeypatch, value, port):
    """The engine takes an empty CARDGAMES_PORT for unset (50051) and drops whitespace around
    it; the health check (the image's HEALTHCHECK) and the admin command must find it there,
    not fail with the usage error '127.0.0.1:' has no port (exit 2)."""
    monkeypatch.setenv("CARDGAMES_PORT", value)
    assert admin_target(["list"], {"CARDGAMES_PORT": value}) == f"127.0.0.1:{port}"
    assert cg.default_target() == f"127.0.0.1:{port}"
    health_run = subprocess.run([sys.executable, "-m", "clients.health", "--timeout", "0.2"],
                                capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert health_run.returncode != 2 and "usage" not in health_run.stderr, health_run.stderr  # 0 or 1: asked


def settings_namespace():
    """``serve``'s flags, none given: the settings come from the environment."""
    import argparse

    from engine_service import settings

    parser = argparse.ArgumentParser()
    settings.add_arguments(parser, env={})
    return parser.parse_args([])


@pytest.mark.parametrize("value", ["http", "70000", "65536", "-1", " ", "5 0", "0x50"])
def test_a_cardgames_port_the_engine_refuses_is_refused_with_its_message(value):
    """CARDGAMES_PORT=http went into the default target unchecked: gRPC dialled port 80 (``-1``:
    65535; `` ``: 50051), and the health check asked another port than the one the engine refused
    to start with. Both refuse it with the engine's message (engine_service/settings.py, which
    the clients do not import: it doubled the health check's run time)."""
    from engine_service import settings

    with pytest.raises(ValueError) as engine:
        settings.from_namespace(settings_namespace(), env={"CARDGAMES_PORT": value})
    with pytest.raises(ValueError) as client:
        cg.default_target({"CARDGAMES_PORT": value})
    assert str(client.value) == str(engine.value)


@pytest.mark.parametrize("module, argv", [("clients.health", []), ("clients.admin", ["list"])])
@pytest.mark.parametrize("value, says", [
    ("http", "environment variable CARDGAMES_PORT (--port): not a whole number: 'http'"),
    ("70000", "environment variable CARDGAMES_PORT (--port): must be 0 to 65535, not '70000'"),
    ("0", "environment variable CARDGAMES_PORT (--port) is 0: the engine listens on a free port then, which only "
          "its log names"),
])
def test_a_bad_cardgames_port_is_a_usage_error_unless_a_target_is_given(module, argv, value, says, capsys):
    """Without --target the clients that reach the engine beside them (the health check, the
    admin command) refuse a CARDGAMES_PORT the engine refuses, or 0 (a free port of the engine's
    choosing), as a usage error (exit 2) before any call; with --target it is not read."""
    import importlib

    main = importlib.import_module(module).main
    env = {**os.environ, "CARDGAMES_PORT": value, "CARDGAMES_ADMIN_TOKEN": "t0ken"}
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(os, "environ", env)
        with pytest.raises(SystemExit) as refused:
            main(argv)
        err = capsys.readouterr().err
        assert refused.value.code == 2, err
        assert err.splitlines()[-1] == (f"python -m {module}: error: the default --target is 127.0.0.1:$CARDGAMES_PORT, "
                                        f"and {says} (or give --target HOST:PORT)"), err
        assert main(["--target", "127.0.0.1:1", "--timeout", "0.5", *argv]) == 1  # asked, and nothing answers


def test_list_shows_names_as_written():
    """The list table prints match and player names as text, not as rich markup (a match
    named "[/]" made `list` fail; a name could write a hyperlink to the operator's terminal)."""
    import io

    from rich.console import Console

    from .test_render import MARKUP_NAMES

    for name in MARKUP_NAMES:
        m = match_pb2.MatchSummary(match_id="m1", game="klaberjass", name=name, seats=[
            match_pb2.SeatInfo(seat=0, kind=match_pb2.SEAT_KIND_OPEN, taken=True, player_name=name)])
        out = io.StringIO()
        console = Console(file=out, width=300, force_terminal=True, record=True)
        console.print(admin_cli.matches_table([m]))
        assert console.export_text().count(name) == 2 and "\x1b]8;" not in out.getvalue()


def test_seat_text_says_a_player_left_for_good_apart_from_one_who_is_away():
    """GJ-12.4: a player who left cannot come back, one who is away may: the operator's seat
    line says which (SeatInfo.left), and names the bot playing either seat."""
    from clients.admin import seat_text

    away = match_pb2.SeatInfo(seat=1, kind=match_pb2.SEAT_KIND_OPEN, player_name="bob", taken=True,
                              replaced_by_bot=True, bot="heuristic")
    gone = match_pb2.SeatInfo(seat=2, kind=match_pb2.SEAT_KIND_OPEN, player_name="cy", taken=True,
                              replaced_by_bot=True, left=True)
    assert seat_text(away) == "1 bob (away, bot heuristic plays)"
    assert seat_text(gone) == "2 cy (left, a bot plays)"


def test_the_result_line_names_who_resigned_forfeited_was_absent_or_left():
    """inspect's and terminate's result line: the seats the result names besides the winners
    (``resigned``/``forfeited`` a seat number, seat 0 included; ``absent``/``abandoned``
    lists), by name: an organizer deciding standings or prizes needs them (a Georgian Joker
    seat whose player left may win, GJ-12.4), and the line gave only winners and totals."""
    from google.protobuf import struct_pb2

    def line(result: dict) -> str:
        s = struct_pb2.Struct()
        s.update(result)
        m = match_pb2.MatchSummary(match_id="m1", game="georgian_joker", result=s, seats=[
            match_pb2.SeatInfo(seat=i, kind=match_pb2.SEAT_KIND_OPEN, taken=True, player_name=n)
            for i, n in enumerate(["ada", "bob", "cy", "dee"])])
        (last,) = [t.plain for t in admin_cli.summary_lines(m) if t.plain.startswith("result:")]
        return last

    assert line({"outcome": "completed", "winners": [1], "totals": [1, 2, 3, 4], "over": True,
                 "abandoned": [1, 3]}).endswith("; winners bob; totals [1, 2, 3, 4]; abandoned bob, dee")
    assert line({"outcome": "resigned", "winners": [1], "totals": [0, 0], "over": True,
                 "resigned": 0}).endswith("; resigned ada")
    assert line({"outcome": "forfeit", "winners": [0], "totals": [0, 0], "over": True,
                 "forfeited": 1}).endswith("; forfeited bob")
    assert line({"outcome": "abandoned", "winners": [], "totals": [0, 0, 0, 0], "over": True,
                 "absent": [0, 1, 2, 3]}).endswith("; absent ada, bob, cy, dee")
    assert line({"outcome": "terminated", "reason": "late", "winners": [], "totals": [0, 0, 0, 0],
                 "over": True}) == "result: terminated (late); winners none; totals [0, 0, 0, 0]"
    # an empty list names no seat: nothing is added
    assert line({"outcome": "completed", "winners": [0], "totals": [1, 2, 3, 4], "over": True,
                 "abandoned": []}) == "result: completed; winners ada; totals [1, 2, 3, 4]"


# ---- the commands against a stand-in for the engine (fast, in this process) -----------------


class StandInAdmin:
    """The AdminClient ``clients.admin`` calls, answering with the replies it was given and
    recording each call: what a command asks for and how it prints the answer, without an
    engine."""

    def __init__(self, **replies) -> None:
        self.replies = replies
        self.calls: list[tuple] = []
        self.made_with: dict = {}

    def __call__(self, channel, token, timeout_s):  # as clients.admin makes its AdminClient
        self.made_with = {"token": token, "timeout_s": timeout_s}
        return self

    async def matches_page(self, status=0, game="", limit=0, page_token=""):
        self.calls.append(("matches_page", status, game, limit, page_token))
        return self.replies["pages"][page_token]

    async def inspect(self, match_id):
        self.calls.append(("inspect", match_id))
        return self.replies["inspect"]

    async def terminate(self, match_id, reason):
        self.calls.append(("terminate", match_id, reason))
        return self.replies["terminate"]

    async def export_transcript(self, match_id):
        self.calls.append(("export", match_id))
        return self.replies["export"]

    async def reissue_seat_token(self, match_id, seat):
        self.calls.append(("reissue", match_id, seat))
        return self.replies["reissue"]


def stand_in(monkeypatch, **replies) -> tuple[StandInAdmin, dict]:
    """clients.admin with :class:`StandInAdmin` for its AdminClient; the second value gets
    the keyword arguments of its ``connect``."""
    engine = StandInAdmin(**replies)
    connected: dict = {}

    @contextlib.asynccontextmanager
    async def connect(target, **kwargs):
        connected.update(kwargs, target=target)
        yield type("Client", (), {"channel": None})()

    monkeypatch.setattr(admin_cli, "connect", connect)
    monkeypatch.setattr(admin_cli, "AdminClient", engine)
    monkeypatch.delenv("COLUMNS", raising=False)
    return engine, connected


def a_summary(**fields) -> match_pb2.MatchSummary:
    """A Klaberjass match of ada and bob, created 2026-01-02 03:04:05.678 UTC."""
    seats = [match_pb2.SeatInfo(seat=0, kind=match_pb2.SEAT_KIND_OPEN, taken=True, player_name="ada", present=True),
             match_pb2.SeatInfo(seat=1, kind=match_pb2.SEAT_KIND_OPEN, taken=True, player_name="bob")]
    fields = {"match_id": "M1", "game": "klaberjass", "status": match_pb2.MATCH_STATUS_ACTIVE, "seq": 7,
              "seats": seats, **fields}
    summary = match_pb2.MatchSummary(**fields)
    summary.created_at.FromMilliseconds(1767323045678)
    return summary


def test_list_asks_for_its_filters_and_leaves_the_page_size_to_the_server(capsys, monkeypatch):
    """``list``'s request (admin.proto ListMatchesRequest): ``--status``, ``--game``,
    ``--page-token`` as given; no ``--limit``: 0, the server's page size ("default: the
    server's, 100", its help); ``--all`` follows next_page_token to the last page."""
    pages = {"": cg.MatchPage([a_summary(match_id="M1")], "P2"), "P2": cg.MatchPage([a_summary(match_id="M2")], "")}
    engine, _ = stand_in(monkeypatch, pages=pages)
    status, out, _ = in_process(capsys, monkeypatch, "--target", "h:1", "list", "--status", "finished", "--game",
                                "georgian_joker", "--json")
    assert status == 0 and [json.loads(x)["match_id"] for x in out.splitlines()] == ["M1"]
    assert engine.calls == [("matches_page", match_pb2.MATCH_STATUS_FINISHED, "georgian_joker", 0, "")]
    engine.calls.clear()
    status, out, _ = in_process(capsys, monkeypatch, "--target", "h:1", "list", "--limit", "20", "--all", "--json")
    assert status == 0 and [json.loads(x)["match_id"] for x in out.splitlines()] == ["M1", "M2"]
    assert engine.calls == [("matches_page", 0, "", 20, ""), ("matches_page", 0, "", 20, "P2")]
    engine.calls.clear()
    status, out, _ = in_process(capsys, monkeypatch, "--target", "h:1", "list", "--page-token", "P2", "--json")
    assert status == 0 and engine.calls == [("matches_page", 0, "", 0, "P2")]


def test_a_table_row_written_to_a_pipe_is_one_line(capsys, monkeypatch):
    """The table sent to a pipe or a file, where no terminal gives a width (no COLUMNS):
    each match's row is one line (PIPE_WIDTH), not folded at rich's 80 columns, so that
    ``list | grep NAME`` finds the row and its id."""
    name = "the long-running friday evening table of the regulars, back room"
    engine, _ = stand_in(monkeypatch, pages={"": cg.MatchPage([a_summary(name=name, seats=[])], "")})
    status, out, _ = in_process(capsys, monkeypatch, "--target", "h:1", "list")
    assert status == 0
    (row,) = [line for line in out.splitlines() if "M1" in line]
    assert name in row and "2026-01-02 03:04:05Z" in row, out


def test_json_values_follow_the_documented_mapping():
    """clients/admin.py's ``--json`` mapping: an enum's unspecified value is ``null``, one
    newer than these stubs its number (not ``null``: it is set); a duration is its seconds,
    fractions included (a turn time of 1.5 s); a timestamp ISO 8601 UTC."""
    seat = admin_cli.jsonable(match_pb2.SeatInfo(seat=2))
    assert (seat["seat"], seat["kind"]) == (2, None)
    assert admin_cli.jsonable(match_pb2.SeatInfo(kind=99))["kind"] == 99
    summary = a_summary()
    summary.turn_time.FromMilliseconds(1500)
    listed = admin_cli.jsonable(summary)
    assert (listed["turn_time"], listed["created_at"], listed["status"]) == (1.5, "2026-01-02T03:04:05.678Z", "active")


def an_inspection() -> admin_pb2.InspectMatchResponse:
    """ada and bob in Klaberjass's play, ada led K♦, bob to act; seat 1 dealt first; three decks dealt."""
    def cards(*codes: str) -> list:
        return [cards_pb2.Card(code=c) for c in codes]

    view = match_pb2.View(match_id="M1", seq=7, status=match_pb2.MATCH_STATUS_ACTIVE, game="klaberjass",
                          phase="play", dealer=0, to_act=1, legal_actions=[
                              cards_pb2.Action(notation="play:AD", kind=cards_pb2.ACTION_KIND_PLAY,
                                               card=cards_pb2.Card(code="AD"))])
    view.deadline.FromMilliseconds(1767323105678)
    view.scores.totals.add(name="points", values=[10, 20])
    view.scores.tricks_taken.extend([1, 0])
    view.trick.plays.add(seat=0, card=cards_pb2.Card(code="KD"))
    return admin_pb2.InspectMatchResponse(
        match=a_summary(), view=view, first_dealer=1, decks=[{"cards": ["TH"]}, {"cards": ["AD"]}, {"cards": ["7S"]}],
        hands=[admin_pb2.SeatCards(seat=0, cards=cards("TH", "7S")), admin_pb2.SeatCards(seat=1)],
        zones=[match_pb2.Zone(name="hand0", cards=cards("TH", "7S")), match_pb2.Zone(name="stock", cards=cards("AD"))])


def test_inspect_shows_the_state_of_play_every_hand_and_zone(capsys, monkeypatch):
    """docs/operations.md, "Finding a stuck match": ``inspect`` shows the phase, whose turn it
    is and its deadline, the scores (the tricks taken this deal, match.proto Scores) and every
    hand; its help adds the state of play (the trick on the table), the legal actions of the
    seat to act, the stock and other zones (the hands once: zone ``hand0`` is ada's hand). The
    first dealer (InspectMatchResponse.first_dealer) and the number of decks dealt are named."""
    engine, _ = stand_in(monkeypatch, inspect=an_inspection())
    status, out, _ = in_process(capsys, monkeypatch, "--target", "h:1", "inspect", "M1")
    assert status == 0 and engine.calls == [("inspect", "M1")]
    lines = out.splitlines()
    assert ("phase play, dealer ada, first dealer bob, to act: bob (deadline 2026-01-02T03:05:05.678Z)"
            in lines[3]), out
    assert lines[4:8] == ["legal actions: play A♦ [play:AD]", "scores points: [10, 20]",
                          "tricks taken this deal: [1, 0]", "trick: ada: K♦"], out
    assert lines[-6:] == ["hands (hidden cards):", "  ada [2]: 10♥ 7♠", "  bob [0]: —", "zones:", "  stock [1]: A♦",
                          "decks dealt: 3 (inspect --json or export for the cards)"], out
    # the deal in play is the one after those scored (none yet: the first); a match ended (its
    # view's status, terminated here) names the deals scored and no tricks of a deal in play;
    # a match not over (waiting for its players here) has no result line
    assert lines[3].startswith("deal 1, phase play, "), out
    waiting = an_inspection()
    waiting.match.status = match_pb2.MATCH_STATUS_WAITING
    assert not any(t.plain.startswith("result:") for t in admin_cli.inspect_lines(waiting))
    ended = an_inspection()
    ended.view.status = match_pb2.MATCH_STATUS_TERMINATED
    text = [t.plain for t in admin_cli.inspect_lines(ended)]
    assert text[3].startswith("0 deal(s) scored, phase play, ") and not any("tricks taken" in t for t in text), text


def test_inspect_and_terminate_json(capsys, monkeypatch):
    """``inspect --json``: everything as pretty JSON (indented, its help); ``terminate
    --json``: the final summary, one JSON object (module docstring: table options as their
    values, the result Struct as its JSON), the reason sent."""
    terminated = a_summary(status=match_pb2.MATCH_STATUS_TERMINATED,
                           options={"kl_target_score": match_pb2.OptionValue(int_value=301)})
    terminated.result.update({"outcome": "terminated", "reason": "stuck", "over": True})
    engine, _ = stand_in(monkeypatch, inspect=an_inspection(), terminate=terminated)
    status, out, _ = in_process(capsys, monkeypatch, "--target", "h:1", "inspect", "M1", "--json")
    assert status == 0 and out.startswith('{\n  "match": {\n    "match_id": "M1",\n'), out
    assert json.loads(out)["first_dealer"] == 1
    status, out, _ = in_process(capsys, monkeypatch, "--target", "h:1", "terminate", "M1", "--reason", "stuck", "--json")
    assert status == 0 and engine.calls[-1] == ("terminate", "M1", "stuck")
    (line,) = out.splitlines()
    summary = json.loads(line)
    assert list(summary) == SUMMARY_KEYS and summary["status"] == "terminated"
    assert summary["result"] == {"outcome": "terminated", "reason": "stuck", "over": True}
    assert summary["options"] == {"kl_target_score": 301}  # table options as their values


def test_output_dash_is_standard_output_and_the_connection_options_reach_the_call(capsys, monkeypatch, tmp_path):
    """``-o -`` is standard output (docs/operations.md: "`-o -` is stdout"), for ``export``
    and ``reissue-token``: no file named ``-``; the token alone on stdout, the note naming the
    seat on stderr. ``--timeout`` is the calls' deadline (default 10 s, its help), ``--tls``
    connects with TLS (the system's roots without ``--ca``), ``--server-name`` the TLS name."""
    transcript = '{"schema": "card-transcript/1", "deals": []}'
    engine, connected = stand_in(monkeypatch, export=transcript,
                                 reissue=admin_pb2.ReissueSeatTokenResponse(seat=1, seat_token="n3w-t0ken"))
    monkeypatch.chdir(tmp_path)
    status, out, _ = in_process(capsys, monkeypatch, "--target", "h:1", "export", "M1", "-o", "-")
    assert (status, out) == (0, transcript + "\n") and engine.calls == [("export", "M1")]
    # no --timeout: its help's "default 10", for the connection and the call; no --tls: plain
    assert (connected["timeout_s"], engine.made_with["timeout_s"], connected["tls"]) == (10.0, 10.0, False)
    status, _, err = in_process(capsys, monkeypatch, "--target", "h:1", "export", "M1", "--tls")
    assert status == 0 and (connected["tls"], connected["root_certificates"]) == (True, None), err  # the system's roots
    status, out, err = in_process(capsys, monkeypatch, "--target", "h:1", "--timeout", "3", "--server-name",
                                  "engine.example", "reissue-token", "M1", "1", "-o", "-", token="adm1n")
    assert (status, out) == (0, "n3w-t0ken\n") and engine.calls[-1] == ("reissue", "M1", 1)
    assert err.startswith("match M1, seat 1: new seat token; the old one no longer works."), err
    assert list(tmp_path.iterdir()) == []
    assert engine.made_with == {"token": "adm1n", "timeout_s": 3.0}
    assert (connected["target"], connected["server_name"], connected["timeout_s"]) == ("h:1", "engine.example", 3.0)


def test_an_error_line_is_one_line_naming_status_reason_and_message():
    """Exit status 1 (module docstring, docs/operations.md): one line on stderr, ``error:
    STATUS (REASON): message``, no parentheses without a reason, a message of several lines
    joined, the token never shown; "no admin token" only when none was given: a token the
    engine answers UNAUTHENTICATED to was refused."""
    unavailable = cg.CardGamesError(grpc.StatusCode.UNAVAILABLE, "failed to connect\n  to all addresses")
    assert admin_cli.error_line(unavailable, None) == "error: UNAVAILABLE: failed to connect to all addresses"
    leaked = cg.CardGamesError(grpc.StatusCode.INTERNAL, "bad token s3cr3t", reason="X")
    assert admin_cli.error_line(leaked, "s3cr3t") == "error: INTERNAL (X): bad token ***"
    unauthenticated = cg.CardGamesError(grpc.StatusCode.UNAUTHENTICATED, "bad token", reason="BAD_TOKEN")
    assert admin_cli.error_line(unauthenticated, "t0ken").endswith(": bad token (the admin token was refused)")
    assert "(no admin token: give --admin-token-file PATH" in admin_cli.error_line(unauthenticated, None)


def test_the_command_masks_the_token_it_sent_in_a_refusal(capsys, monkeypatch):
    """The command's own error line (main, not only error_line): the admin token it sent is
    never printed (module docstring: "it is never printed"; docs/operations.md Admin tasks),
    even when the engine's message quotes it, and a token the engine answers UNAUTHENTICATED
    to is said to be refused, not missing."""
    engine, _ = stand_in(monkeypatch)

    async def refuse(match_id):
        raise cg.CardGamesError(grpc.StatusCode.UNAUTHENTICATED, "unknown token s3cr3t-adm1n", reason="BAD_TOKEN")

    monkeypatch.setattr(engine, "inspect", refuse, raising=False)
    status, out, err = in_process(capsys, monkeypatch, "--target", "h:1", "inspect", "M1", token="s3cr3t-adm1n")
    assert (status, out) == (1, "")
    assert err == "error: UNAUTHENTICATED (BAD_TOKEN): unknown token *** (the admin token was refused)\n", err


def test_the_admin_token_loses_its_surrounding_whitespace(capsys, monkeypatch, tmp_path):
    """docs/operations.md (``--admin-token``): a token read from a file or a Secret may end
    with a newline, or hold spaces around it: it is dropped, "as `clients.admin` drops it",
    from the environment variable as from --admin-token-file."""
    engine, _ = stand_in(monkeypatch, pages={"": cg.MatchPage([], "")})
    status, _, err = in_process(capsys, monkeypatch, "--target", "h:1", "list", "--json", token=" adm1n\n")
    assert (status, engine.made_with["token"]) == (0, "adm1n"), err
    token_file = tmp_path / "admin.token"
    token_file.write_text("  adm1n-fr0m-f1le \r\n")
    status, _, err = in_process(capsys, monkeypatch, "--target", "h:1", "list", "--json", "--admin-token-file",
                                str(token_file))
    assert (status, engine.made_with["token"]) == (0, "adm1n-fr0m-f1le"), err


def test_the_summary_reads_turn_time_spectators_and_options_as_the_proto_means_them():
    """match.proto MatchSummary: a zero turn_time is no deadline ("no turn time", not "turn
    time 0 s"); spectators_allowed false: none may watch; ``options``: the table options that
    differ from the game's defaults, named with their values."""
    def details(summary: match_pb2.MatchSummary) -> str:
        return admin_cli.summary_lines(summary)[1].plain

    assert details(a_summary()) == "created 2026-01-02 03:04:05Z, no turn time, no spectators"
    # a delay is no spectator's when none may watch
    assert details(a_summary(spectator_delay_actions=3)) == "created 2026-01-02 03:04:05Z, no turn time, no spectators"
    timed = a_summary(spectators_allowed=True, options={"kl_target_score": match_pb2.OptionValue(int_value=301),
                                                         "kl_schmeiss": match_pb2.OptionValue(bool_value=True)})
    timed.turn_time.FromSeconds(30)
    assert details(timed) == ("created 2026-01-02 03:04:05Z, turn time 30 s, spectators allowed, "
                              "options kl_schmeiss=True, kl_target_score=301")


def test_a_refused_call_leaves_no_file_behind(capsys, monkeypatch, tmp_path):
    """``-o FILE`` is made before the call (clients/admin.py PrivateFile: "written whole or
    not at all"; docs/operations.md: "never half written"): when the engine refuses the call,
    ``export`` and ``reissue-token`` leave neither FILE nor the new file beside it."""
    engine, _ = stand_in(monkeypatch)
    not_found = cg.CardGamesError(grpc.StatusCode.NOT_FOUND, "no such match", reason="MATCH_NOT_FOUND")

    async def refuse(*args):
        raise not_found

    monkeypatch.setattr(engine, "export_transcript", refuse, raising=False)
    monkeypatch.setattr(engine, "reissue_seat_token", refuse, raising=False)
    for args in (["export", "M1"], ["reissue-token", "M1", "0"]):
        status, out, err = in_process(capsys, monkeypatch, "--target", "h:1", *args, "-o", str(tmp_path / "out"))
        assert (status, out) == (1, "") and err == "error: NOT_FOUND (MATCH_NOT_FOUND): no such match\n", (args, err)
        assert list(tmp_path.iterdir()) == [], args


def test_an_export_file_that_fails_after_the_call_is_named_and_not_left_half_written(capsys, monkeypatch, tmp_path):
    """``export -o FILE`` whose write fails after the call (a full disk at fsync): one line
    naming FILE and the system's reason, exit status 2 as for a path that cannot be written,
    and neither FILE nor the new file beside it (PrivateFile.commit: "``path`` is as it was and
    the new file is gone"; docs/operations.md: "never half written"). It is not the standard
    output that failed."""
    import errno

    engine, _ = stand_in(monkeypatch, export='{"schema": "card-transcript/1", "deals": []}')

    def no_space(fd):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "fsync", no_space)
    out = tmp_path / "match.json"
    status, printed, err = in_process(capsys, monkeypatch, "--target", "h:1", "export", "M1", "-o", str(out))
    assert (status, printed) == (2, "") and engine.calls == [("export", "M1")], err
    assert err.strip().endswith(f"error: cannot write {out}: No space left on device"), err
    assert list(tmp_path.iterdir()) == []


def test_the_token_file_is_written_whole_where_no_space_can_be_set_aside(capsys, monkeypatch, tmp_path):
    """``reissue-token -o FILE`` sets the file's space aside before the call; a file system
    that cannot (posix_fallocate: EOPNOTSUPP, EINVAL, ENOSYS) still gets the file (PrivateFile,
    "a file system that sets no space aside"), and a write the system takes in parts is
    finished: the file holds the token and a newline, nothing of the space set aside."""
    import errno

    engine, _ = stand_in(monkeypatch, reissue=admin_pb2.ReissueSeatTokenResponse(seat=0, seat_token="n3w-t0ken"))
    write = os.write

    def a_byte_at_a_time(fd, data):
        return write(fd, bytes(data[:1]))

    out = tmp_path / "seat.token"
    for unsupported in (errno.EOPNOTSUPP, errno.EINVAL, errno.ENOSYS):
        def no_fallocate(fd, offset, length, unsupported=unsupported):
            raise OSError(unsupported, os.strerror(unsupported))

        monkeypatch.setattr(os, "posix_fallocate", no_fallocate, raising=False)
        monkeypatch.setattr(os, "write", a_byte_at_a_time)
        status, _, err = in_process(capsys, monkeypatch, "--target", "h:1", "reissue-token", "M1", "0", "-o", str(out))
        monkeypatch.setattr(os, "write", write)
        assert status == 0 and out.read_bytes() == b"n3w-t0ken\n", (unsupported, err)
        assert stat.S_IMODE(out.stat().st_mode) == 0o600 and [p.name for p in tmp_path.iterdir()] == ["seat.token"]
        out.unlink()


def test_a_page_size_is_refused_from_the_first_number_an_int32_cannot_hold(capsys):
    """admin.proto ListMatchesRequest.limit is an int32: 2147483647 is parsed, 2147483648 is
    a usage error naming the flag (not protobuf's "Value out of range" traceback)."""
    parser = admin_cli.build_parser()
    assert parser.parse_args(["list", "--limit", "2147483647"]).limit == 2**31 - 1
    with pytest.raises(SystemExit) as refused:
        parser.parse_args(["list", "--limit", "2147483648"])
    err = capsys.readouterr().err
    assert refused.value.code == 2 and "argument --limit: 2147483648 is beyond the API's 32-bit integers" in err, err


def test_a_standard_input_without_end_is_read_up_to_the_token_limit(capsys, monkeypatch, tmp_path):
    """``--admin-token-file -`` reads standard input up to the token limit (read_token: "the
    file is read up to TOKEN_LIMIT"), so ``< /dev/zero`` or a stream that never ends is a
    usage error, not a read that fills the memory or never returns; a token as long as the
    limit is read ("larger than 65536 bytes" is refused)."""
    class Endless:
        def read(self, size: int = -1) -> str:
            assert size >= 0, "standard input was read to its end"
            return "a" * size

    monkeypatch.setattr(sys, "stdin", Endless())
    status, out, err = in_process(capsys, monkeypatch, "--target", "h:1", "list", "--admin-token-file", "-")
    assert status == 2 and "error: the admin token file standard input: larger than 65536 bytes" in err, err
    # "larger than": a token of the limit itself is read, from standard input as from a file
    import io

    engine, _ = stand_in(monkeypatch, pages={"": cg.MatchPage([], "")})
    longest = "a" * admin_cli.TOKEN_LIMIT
    monkeypatch.setattr(sys, "stdin", io.StringIO(longest))
    status, out, err = in_process(capsys, monkeypatch, "--target", "h:1", "list", "--json", "--admin-token-file", "-")
    assert (status, engine.made_with["token"]) == (0, longest), err
    token_file = tmp_path / "admin.token"
    token_file.write_text(longest)
    status, out, err = in_process(capsys, monkeypatch, "--target", "h:1", "list", "--json", "--admin-token-file",
                                  str(token_file))
    assert (status, engine.made_with["token"]) == (0, longest), err


def test_what_follows_a_double_dash_is_an_argument_not_an_option(capsys, monkeypatch):
    """``--`` ends the options, as argparse reads it (the unknown-option check stops there,
    clients/admin.py _unknown_option): ``terminate --reason R -- -M1`` ends the match ``-M1``
    rather than refusing ``-M`` as an unrecognized option. A negative number is a value too, as
    argparse reads it (_unknown_option: "argparse reads these as values, not options: a negative
    number"), a decimal one included: ``--reason -0.5`` is the reason, not option ``-0``."""
    engine, _ = stand_in(monkeypatch, terminate=a_summary(match_id="-M1", status=match_pb2.MATCH_STATUS_TERMINATED))
    status, out, err = in_process(capsys, monkeypatch, "--target", "h:1", "terminate", "--reason", "r", "--json",
                                  "--", "-M1")
    assert status == 0 and engine.calls == [("terminate", "-M1", "r")], err
    for reason in ("-2", "-0.5", "-.5"):
        engine.calls.clear()
        status, out, err = in_process(capsys, monkeypatch, "--target", "h:1", "terminate", "M1", "--reason", reason,
                                      "--json")
        assert status == 0 and engine.calls == [("terminate", "M1", reason)], (reason, err)


def test_a_path_may_hold_bytes_that_are_not_utf8(capsys, monkeypatch, tmp_path):
    """check_text's ``paths`` (engine_service/command_line.py: "a path may hold any bytes"):
    the --admin-token-file and -o paths are exempt from the UTF-8 check of the arguments that
    go into a request; a file so named is read, or written, and the line naming it shows the
    byte as ``\\xff`` (it was printed as a lone surrogate: with a UTF-8 locale the file was
    written, and the command died with a UnicodeEncodeError traceback, exit status 1)."""
    engine, _ = stand_in(monkeypatch, export='{"schema": "card-transcript/1", "deals": []}',
                         reissue=admin_pb2.ReissueSeatTokenResponse(seat=0, seat_token="n3w-t0ken"))
    token_file, out = tmp_path / "admin\udcff.token", tmp_path / "match\udcff.json"
    token_file.write_text("adm1n\n")
    status, printed, err = in_process(capsys, monkeypatch, "--target", "h:1", "--admin-token-file", str(token_file),
                                      "export", "M1", "-o", str(out))
    assert status == 0 and engine.made_with["token"] == "adm1n", err
    assert json.loads(out.read_text())["schema"] == "card-transcript/1"
    assert f"match M1: 0 deal(s), 0 action(s) written to {tmp_path}/match\\xff.json (mode 0600" in printed, printed
    status, printed, err = in_process(capsys, monkeypatch, "--target", "h:1", "reissue-token", "M1", "0", "-o",
                                      str(tmp_path / "seat\udcff.token"), token="adm1n")
    assert status == 0 and (tmp_path / "seat\udcff.token").read_text() == "n3w-t0ken\n", err
    assert printed.endswith(f"Written to {tmp_path}/seat\\xff.token (mode 0600).\n"), printed


def test_ctrl_c_exits_130_without_a_traceback(capsys, monkeypatch):
    """The module's docstring and --help: exit status 130 when interrupted (Ctrl-C), as a
    shell reports a command SIGINT ended, and nothing printed (no traceback)."""
    engine, _ = stand_in(monkeypatch)

    async def interrupted(match_id):
        raise KeyboardInterrupt

    monkeypatch.setattr(engine, "inspect", interrupted, raising=False)
    assert in_process(capsys, monkeypatch, "--target", "h:1", "inspect", "M1", token="adm1n") == (130, "", "")
    status, out, _ = in_process(capsys, monkeypatch, "--help")
    assert status == 0 and "130 interrupted (Ctrl-C)" in " ".join(out.split())
