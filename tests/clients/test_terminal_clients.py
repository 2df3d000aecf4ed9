"""The terminal clients against a real engine: ``python -m clients.play`` (through textual's
test harness, and headless with --autoplay, with and without its own engine) and
``python -m clients.watch`` following a match that someone else plays."""

from __future__ import annotations

import asyncio
import os
import random
import subprocess
import sys
import time

from clients import cardgames_client as cg
from clients.play import PlayApp
from clients.watch import WatchApp
from engine_service.transport.generated import match_pb2

from .conftest import run

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def cli(*args: str, timeout: float = 180) -> subprocess.CompletedProcess:
    env = dict(os.environ, COLUMNS="160", PYTHONUNBUFFERED="1")
    return subprocess.run([sys.executable, "-m", *args], capture_output=True, text=True, timeout=timeout,
                          cwd=ROOT, env=env, stdin=subprocess.DEVNULL)


def screen_text(app) -> str:
    """The board and deal table the app shows, as plain text."""
    from rich.console import Console

    console = Console(width=160, record=True, color_system=None, file=open(os.devnull, "w"))
    for renderable in (app.board, app.deals):
        if renderable is not None:
            console.print(renderable)
    return console.export_text()


def test_play_screen_plays_a_whole_japanese_joker_match(engine):
    """Through textual's harness: the screen shows the hand, the columns, the trick, the
    deadline and the legal actions; pressing 1 / Enter plays until the match is over."""

    async def scenario():
        async with cg.connect(engine.target) as client:
            match = await client.create_match("japanese_joker", seats=[None, "random"], turn_time_s=0,
                                              options={"target_score": 11, "turn_time_s": 120})
            me = await client.join(match.match_id, player_name="ada")
            app = PlayApp(me, await me.summary())
            seen_columns = seen_hand = seen_countdown = False
            presses = 0
            async with app.run_test(size=(160, 50)) as pilot:
                started = time.monotonic()
                while time.monotonic() - started < 150:
                    await pilot.pause(0.05)
                    view = app.view_msg
                    if view is not None and (view.over or cg.is_finished(view.status)) and app.result is not None:
                        break
                    if app._shown_actions and not app.submitting:
                        text = screen_text(app)
                        seen_columns |= "columns:" in text and "[" in text
                        seen_hand |= "your hand:" in text
                        seen_countdown |= " s" in text.splitlines()[0] and "your turn" in text
                        await pilot.press("1" if presses % 2 else "enter")
                        presses += 1
                final = await me.summary()
            assert final.status == match_pb2.MATCH_STATUS_FINISHED, "the match did not end in time"
            assert presses >= 18  # a match to 11 may end after one deal: a card in each of its 18 tricks
            assert seen_hand and seen_columns and seen_countdown

    run(scenario(), timeout_s=200)


def test_play_screen_reports_a_stale_choice(engine):
    """A choice made on a view the match has left is refused; the screen shows the fresh view."""

    async def scenario():
        async with cg.connect(engine.target) as client:
            match = await client.create_match("klaberjass", seats=[None, None])
            me = await client.join(match.match_id, seat=0)
            other = await client.join(match.match_id, seat=1)
            app = PlayApp(me, await me.summary())
            async with app.run_test(size=(160, 50)) as pilot:
                await pilot.pause(0.3)
                for _ in range(10):  # seat 1 moves until it is seat 0's turn
                    if cg.is_my_turn(await me.view()):
                        break
                    await other.act(lambda v: v.legal_actions[0].notation)
                await pilot.pause(0.3)
                old = await me.view()
                assert cg.is_my_turn(old)
                app.view_msg = old
                await me.submit(old.legal_actions[0].notation, old.seq)  # "someone" acts first
                app.view_msg = old
                app._shown_actions = [a.notation for a in old.legal_actions]
                await app.submit(old.legal_actions[-1].notation)
                status = str(app.query_one("#status").content)
                assert "moved on" in status or "refused" in status
                assert app.view_msg.seq > old.seq

    run(scenario())


def test_play_autoplay_against_a_running_engine(engine):
    result = cli("clients.play", "--target", engine.target, "--game", "japanese_joker", "--bots", "random",
                 "--option", "target_score=11", "--autoplay", "random", "--seed", "7", "--name", "ada")
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    # every action from the first is printed, the ones made before the stream opened included
    # (the bot may choose trump the instant the client's join starts the match)
    numbered = [int(line.split()[0]) for line in lines
                if line.split() and line.split()[0].isdigit() and "match ended" not in line]
    assert numbered == list(range(1, len(numbered) + 1))
    assert any("you: trump" in line or "random bot (seat 1): trump" in line for line in lines)
    assert "finished: winners" in lines[-1]
    assert any("match ended" in line for line in lines)


def test_play_starts_its_own_engine_when_no_target_is_given():
    """Without --target the client starts an engine, plays, and stops it again."""
    result = cli("clients.play", "--game", "klaberjass", "--bots", "random", "--autoplay", "first")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "finished: winners" in result.stdout.splitlines()[-1]


def test_two_people_meet_through_the_lobby(engine):
    """One player creates a listed table with an open seat (``--listed``); another finds it with
    ``--lobby`` and joins it with ``--match``; both play it to the end."""
    env = dict(os.environ, COLUMNS="160", PYTHONUNBUFFERED="1")
    host = subprocess.Popen([sys.executable, "-m", "clients.play", "--target", engine.target, "--game",
                             "japanese_joker", "--bots", "open", "--option", "target_score=11", "--listed",
                             "--name", "ada", "--autoplay", "first"], cwd=ROOT, env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
    try:
        match_id, deadline = None, time.monotonic() + 60
        while match_id is None:
            assert time.monotonic() < deadline and host.poll() is None, "the table never reached the lobby"
            lobby = cli("clients.play", "--target", engine.target, "--lobby", "--game", "japanese_joker")
            assert lobby.returncode == 0, lobby.stderr
            # listed from its creation; "0: ada" once the host has also joined its seat
            mine = [line for line in lobby.stdout.splitlines()
                    if "ada's table" in line and "seats 0: ada, 1: open" in line]
            if mine:
                assert "target_score=11" in mine[0]
                match_id = mine[0].split()[0]
            else:
                time.sleep(0.3)
        guest = cli("clients.play", "--target", engine.target, "--match", match_id, "--name", "bob",
                    "--autoplay", "first")
        out, err = host.communicate(timeout=180)
    finally:
        if host.poll() is None:
            host.kill()
    assert guest.returncode == 0 and host.returncode == 0, guest.stderr + err
    assert "finished: winners" in guest.stdout.splitlines()[-1] and "finished: winners" in out.splitlines()[-1]
    after = cli("clients.play", "--target", engine.target, "--lobby", "--game", "japanese_joker")
    assert match_id not in after.stdout


def test_play_refuses_a_wrong_seat_count(engine):
    result = cli("clients.play", "--target", engine.target, "--game", "georgian_joker", "--bots", "random")
    assert result.returncode != 0
    assert "4 seats" in result.stderr + result.stdout


def test_watch_plain_follows_a_match_live(engine):
    """The spectator CLI, started before the first move, prints every action exactly once,
    each deal's result, and the match's end."""

    async def create():
        async with cg.connect(engine.target) as client:
            match = await client.create_match("japanese_joker", seats=[None, None], options={"target_score": 11})
            return match.match_id, [(s.seat, s.token) for s in
                                    [await client.join(match.match_id) for _ in range(2)]]

    match_id, tokens = run(create())
    watcher = subprocess.Popen([sys.executable, "-m", "clients.watch", match_id, "--target", engine.target,
                                "--plain"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               cwd=ROOT, env=dict(os.environ, COLUMNS="160"))
    try:
        # The watcher's first line is its snapshot ("0 joined the table"): it is connected.
        # (A fixed sleep was not enough on a loaded machine: the match ended before it joined.)
        first = watcher.stdout.readline()
        assert "joined the table" in first, first + watcher.stderr.read()

        async def play():
            async with cg.connect(engine.target) as client:
                sessions = [client.seat_session(match_id, seat, token) for seat, token in tokens]
                rng = random.Random(11)
                while True:
                    view = await sessions[0].view()
                    if view.over:
                        return view.seq
                    await sessions[view.to_act].act(lambda v: rng.choice(cg.legal_notations(v)))

        final_seq = run(play(), timeout_s=150)
        out, err = watcher.communicate(timeout=60)
    finally:
        watcher.kill()
    assert watcher.returncode == 0, err
    lines = [first.rstrip("\n"), *out.splitlines()]
    seqs = [int(line.split()[0]) for line in lines if line.strip() and line.split()[0].isdigit()
            and ": " in line and "joined" not in line and "ended" not in line]
    assert seqs == list(range(1, final_seq + 1)) or seqs == list(range(seqs[0], final_seq + 1))
    assert any("match ended" in line for line in lines)
    assert "finished: winners" in lines[-1]
    assert sum("deals" in line for line in lines) >= 1


def test_watch_screen_shows_the_public_view_only(engine):
    async def scenario():
        async with cg.connect(engine.target) as client:
            match = await client.create_match("georgian_joker", seats=[None, "random", "random", "random"])
            me = await client.join(match.match_id)
            app = WatchApp(client.spectate(match.match_id))
            async with app.run_test(size=(160, 50)) as pilot:
                for _ in range(40):
                    await pilot.pause(0.05)
                    if app.view_msg is not None:
                        break
                assert app.view_msg is not None and not app.view_msg.HasField("seat")
                assert not app.view_msg.hand and not app.view_msg.legal_actions
                text = screen_text(app)
                assert "your hand" not in text and "Georgian Joker" in text
                my_view = await me.view()
                assert "trump indicator" in text or my_view.phase != "bidding"

    run(scenario())


def test_play_screen_resigns_with_shift_r(engine):
    """R resigns: in a two-player game the opponent wins at once (JJK-10.1) and the screen says so."""

    async def scenario():
        async with cg.connect(engine.target) as client:
            match = await client.create_match("japanese_joker", seats=[None, "random"])
            me = await client.join(match.match_id)
            app = PlayApp(me, await me.summary())
            async with app.run_test(size=(160, 50)) as pilot:
                await pilot.pause(0.5)
                await pilot.press("R")
                for _ in range(100):
                    await pilot.pause(0.05)
                    if app.result is not None:
                        break
                assert app.result is not None, "no MATCH_ENDED event reached the screen"
                assert "match over" in str(app.query_one("#status").content)
            final = await me.summary()
            assert final.status == match_pb2.MATCH_STATUS_FINISHED
            assert list(render_result(final)["winners"]) == [1]

    run(scenario())


def render_result(summary):
    from clients.render import struct_dict

    return struct_dict(summary.result)


def test_the_result_line_says_how_the_match_ended():
    """clients.play's last line names the outcome of a match that did not end by the rules
    (resigned, forfeit, terminated with its reason), and nothing extra for a completed one."""
    from google.protobuf import json_format
    from rich.console import Console

    from clients.play import print_result

    def line(result):
        summary = match_pb2.MatchSummary(match_id="m1", status=match_pb2.MATCH_STATUS_FINISHED)
        json_format.ParseDict(result, summary.result)
        console = Console(record=True, width=200)
        print_result(summary, 0, console)
        return console.export_text().strip()

    assert line({"winners": [1], "totals": [0, 3], "outcome": "resigned", "resigned": 0}).endswith("(resigned)")
    assert line({"winners": [], "totals": [0, 0], "outcome": "terminated", "reason": "stuck"}).endswith(
        "(terminated: stuck)")
    assert line({"winners": [0], "totals": [21, 3], "outcome": "completed"}).endswith("totals [21, 3]")


def test_play_screen_keeps_the_legal_actions_in_view_on_a_small_terminal(engine):
    """On an 80x24 terminal, late in a Georgian Joker match (four seats, a trick and the last
    trick wrapping, six scored deals), the legal actions stay on screen: the deal results give
    way to them (the actions were pushed below the bottom edge, where no key reached them)."""

    async def scenario():
        async with cg.connect(engine.target) as client:
            match = await client.create_match("georgian_joker", seats=[None, None, None, None])
            seats = [await client.join(match.match_id, player_name=f"player {n}") for n in range(4)]
            rng = random.Random(3)
            while True:
                view = await seats[0].view()
                if (len(view.scores.deal_results.values) >= 6 and cg.is_my_turn(view)
                        and view.phase == "playing" and len(view.legal_actions) >= 2):
                    break
                await seats[view.to_act].act(lambda v: rng.choice(cg.legal_notations(v)))
            app = PlayApp(seats[0], await seats[0].summary())
            async with app.run_test(size=(80, 24)) as pilot:
                for _ in range(40):
                    await pilot.pause(0.05)
                    if app._shown_actions:
                        break
                await pilot.pause(0.2)
                actions = app.query_one("#actions")
                shown = actions.content_region  # the options' rows on screen, borders excluded
                assert app._shown_actions, "the legal actions never showed"
                assert shown.y + shown.height <= 24 - 2, f"the actions end below the screen: {shown}"
                assert shown.height >= min(3, len(app._shown_actions)), f"too few rows for the actions: {shown}"
                status = app.query_one("#status").region  # the refusals and "match over" are shown there
                assert status.y + status.height <= 24 - 1, f"the status line is off the screen: {status}"
                await pilot.resize_terminal(120, 45)  # room enough: the deal results are back
                for _ in range(40):
                    await pilot.pause(0.05)
                    if app.query_one("#deals").display:
                        break
                assert app.query_one("#deals").display and "deals" in screen_text(app)

    run(scenario(), timeout_s=120)


def test_play_screen_shows_the_match_id_for_spectators(engine):
    """README: clients.play "prints the match id, which a spectator passes to clients.watch"
    to follow the match live; the line printed before the screen opened stays hidden behind it
    until the player quits, so the screen shows the id and the command."""

    async def scenario():
        async with cg.connect(engine.target) as client:
            match = await client.create_match("klaberjass", seats=[None, "random"])
            me = await client.join(match.match_id)
            app = PlayApp(me, await me.summary())
            async with app.run_test(size=(160, 50)) as pilot:
                await pilot.pause(0.3)
                log = app.query_one("#log")
                lines = [strip.text for strip in log.lines]
                assert match.match_id in str(log.border_subtitle)
                assert any(f"python -m clients.watch {match.match_id} --target {engine.target}" in line
                           for line in lines), lines

    run(scenario())


def test_the_result_line_of_a_match_quit_before_its_end():
    """Quitting the screen (q) before the end: the last line says the match goes on and what
    the absence means, not "active: winners none; totals None"."""
    from rich.console import Console

    from clients.play import print_result

    summary = match_pb2.MatchSummary(match_id="m1", status=match_pb2.MATCH_STATUS_ACTIVE, seq=12)
    console = Console(record=True, width=300)
    print_result(summary, 0, console)
    text = console.export_text().strip()
    assert text.startswith("match m1 is still active (seq 12): you quit without resigning")
    assert "forfeit" in text and "None" not in text and "winners" not in text


def test_an_unreadable_ca_file_is_one_line(engine, tmp_path):
    """--ca names a file that cannot be read: one line naming it, exit status 1, no traceback
    (clients.play, clients.watch and clients.health; clients.admin already did so)."""
    missing = str(tmp_path / "missing.pem")
    for args in (["clients.play", "--target", engine.target, "--game", "klaberjass", "--autoplay", "first"],
                 ["clients.watch", "m1", "--target", engine.target, "--plain"],
                 ["clients.health", "--target", engine.target]):
        result = cli(*args, "--tls", "--ca", missing, timeout=60)
        assert result.returncode == 1, (args[0], result.stdout, result.stderr)
        assert "Traceback" not in result.stderr
        assert result.stderr.strip() == f"cannot read the CA file {missing}: No such file or directory", args[0]


def test_ctrl_c_quits_the_screens(engine):
    """Ctrl-C ends clients.play and clients.watch as it ends any terminal program (textual's
    default binding only showed "press ctrl+q to quit the app")."""

    async def scenario():
        async with cg.connect(engine.target) as client:
            match = await client.create_match("japanese_joker", seats=[None, "random"])
            me = await client.join(match.match_id)
            for app in (PlayApp(me, await me.summary()), WatchApp(client.spectate(match.match_id))):
                async with app.run_test(size=(120, 40)) as pilot:
                    await pilot.pause(0.3)
                    await pilot.press("ctrl+c")
                    for _ in range(40):
                        await pilot.pause(0.05)
                        if app._exit:
                            break
                    assert app._exit, f"{type(app).__name__} did not quit on ctrl+c"

    run(scenario())


def test_an_engine_of_its_own_that_cannot_start_is_one_line(tmp_path):
    """Without --target clients.play starts an engine; one that cannot start (a --db in a
    folder that does not exist) is one line saying why, exit status 1, not a traceback."""
    db = tmp_path / "missing" / "x.sqlite3"
    result = cli("clients.play", "--game", "klaberjass", "--db", str(db), "--autoplay", "first", timeout=60)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "Traceback" not in result.stderr
    assert result.stderr.splitlines() == [f"error: the engine did not start: cannot open database {db}: "
                                          f"directory {db.parent} does not exist"]


def test_api_errors_are_one_line_on_stderr(engine):
    """An error the API answers is one line on stderr (it went to stdout among a script's
    output, folded at 80 columns in a pipe), exit status 1."""
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    env.pop("COLUMNS", None)
    for args, start in ((["clients.play", "--target", engine.target, "--game", "klaberjass", "--bots",
                          "no_such_bot_with_a_long_name", "--autoplay", "first"], "error: INVALID_ARGUMENT UNKNOWN_BOT: "),
                        (["clients.watch", "no_such_match", "--target", engine.target, "--plain"],
                         "error: NOT_FOUND MATCH_NOT_FOUND: ")):
        result = subprocess.run([sys.executable, "-m", *args], capture_output=True, text=True, timeout=60,
                                cwd=ROOT, env=env, stdin=subprocess.DEVNULL)
        assert result.returncode == 1, result.stdout + result.stderr
        assert "error" not in result.stdout, result.stdout
        assert len(result.stderr.splitlines()) == 1 and result.stderr.startswith(start), result.stderr


def test_play_returns_to_a_seat_with_a_reissued_token(engine, tmp_path):
    """docs/operations.md, "A player lost their seat token": the operator reissues it
    (clients.admin reissue-token -o FILE) and the player returns to the seat with
    ``--match ID --token-file FILE`` (there was no way back: --match joins another seat, and
    a started match has none free); a --token-file without --match is a usage error."""
    from .conftest import ADMIN_TOKEN

    async def create():
        async with cg.connect(engine.target, admin_token=ADMIN_TOKEN) as client:
            match = await client.create_match("japanese_joker", seats=[None, "random"],
                                              options={"target_score": 11})
            await client.join(match.match_id, player_name="ada")  # the token is lost
            reply = await client.admin.reissue_seat_token(match.match_id, 0)
            return match.match_id, reply.seat_token

    match_id, token = run(create())
    token_file = tmp_path / "seat.token"
    token_file.write_text(token + "\n")
    result = cli("clients.play", "--target", engine.target, "--match", match_id, "--token-file", str(token_file),
                 "--autoplay", "first")
    assert result.returncode == 0, result.stdout + result.stderr
    assert any(" you: " in line for line in result.stdout.splitlines())
    assert "finished: winners" in result.stdout.splitlines()[-1]
    usage = cli("clients.play", "--target", engine.target, "--token-file", str(token_file), "--list")
    assert usage.returncode == 2 and "--token-file" in usage.stderr
