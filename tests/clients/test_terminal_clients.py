"""The terminal clients against a real engine: ``python -m clients.play`` (through textual's
test harness, and headless with --autoplay, with and without its own engine) and
``python -m clients.watch`` following a match that someone else plays."""

from __future__ import annotations

import asyncio
import json
import os
import random
import re
import subprocess
import sys
import threading
import time

import grpc
import pytest

from clients import cardgames_client as cg
from clients import render
from clients import play
from clients.play_screen import PlayApp
from clients.watch_screen import WatchApp
from engine_service.transport.generated import card_games_pb2, cards_pb2, match_pb2

from .conftest import ADMIN_TOKEN, run

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


def seconds_left(app, label: str) -> int:
    """The countdown after ``label`` ("your turn", "bob to act") in the screen's header line."""
    header = screen_text(app).splitlines()[0]
    left = re.search(re.escape(label) + r"\s+(\d+) s", header)
    assert left, header
    return int(left[1])


#: A first deck (JJK-3.2 - 3.4: even positions to the declarer, odd ones to the other seat)
#: that gives the declarer both jokers, every spade and the four best hearts and diamonds:
#: with spades trump (the first choice, JJK-3.3) no card of the other seat wins a trick, so
#: the declarer takes all 18 (JJK-6) and the match to 11 ends with its first deal (JJK-8.2).
_ROUT = [card for pair in zip(
    ["X1", "X2", "AS", "KS", "QS", "JS", "TS", "9S", "8S", "7S", "AH", "KH", "QH", "JH", "AD", "KD", "QD", "JD"],
    ["TH", "9H", "8H", "7H", "6H", "TD", "9D", "8D", "7D", "6D", "AC", "KC", "QC", "JC", "TC", "9C", "8C", "7C"])
    for card in pair]


def test_play_screen_plays_a_whole_japanese_joker_match(engine):
    """Through textual's harness: the screen shows the hand, the columns, the trick, the
    deadline and the legal actions; pressing 1 / Enter plays until the match is over.

    The player declares the first deal, dealt from :data:`_ROUT` (admin decks): one deal of
    18 tricks is the whole match. A random deck made it some seven deals against the random
    bot, over a hundred presses (about 25 s)."""

    async def scenario():
        async with cg.connect(engine.target, admin_token=ADMIN_TOKEN) as client:
            match = await client.create_match("japanese_joker", seats=[None, "random"], turn_time_s=0,
                                              options={"target_score": 11, "turn_time_s": 120},
                                              decks=[_ROUT], first_dealer=0)
            me = await client.join(match.match_id, player_name="ada")
            assert me.seat == 0
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
            assert app.result is not None, "the screen never showed the result"
            assert presses == 19  # the trump, then a card in each of the deal's 18 tricks
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
    # ("0 joined the table": the stream's first snapshot, when it opened before the first action)
    numbered = [int(line.split()[0]) for line in lines
                if line.split() and line.split()[0].isdigit() and "match ended" not in line
                and "joined the table" not in line]
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


def test_the_lobby_lists_every_page(engine):
    """--lobby lists every table waiting, not only the server's first page of 100 (the lobby
    answers by pages: docs/api.md, "Paging"); one line per table, oldest first."""
    async def tables():
        async with cg.connect(engine.target) as client:
            return [(await client.create_match("jojotte", listed=True, name=f"t{n}")).match_id for n in range(103)]

    created = run(tables())
    lobby = cli("clients.play", "--target", engine.target, "--lobby", "--game", "jojotte")
    assert lobby.returncode == 0, lobby.stderr
    listed = [line.split()[0] for line in lobby.stdout.splitlines() if line.split()[0] in created]
    assert listed == created


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


class _Spectator:
    """A spectator whose stream brings ``events`` and whose summary names the players seated
    so far (``names``, which a test changes as someone sits down)."""

    def __init__(self, events, names) -> None:
        self.events, self.names, self.after_seqs = events, names, []

    async def watch(self, after_seq=None, on_connection=None, **_):
        self.after_seqs.append(after_seq)
        for event in self.events:
            yield event

    async def summary(self):
        summary = match_pb2.MatchSummary(match_id="m1", game="klaberjass", status=match_pb2.MATCH_STATUS_ACTIVE)
        for seat, name in enumerate(self.names):
            summary.seats.add(seat=seat, kind=match_pb2.SEAT_KIND_OPEN, taken=bool(name), player_name=name)
        return summary


def test_watch_plain_names_a_late_player_and_prints_the_meld_talk_once():
    """clients.watch --plain: a player who sat down after the watcher started is named from the
    presence event on (it stayed "seat 1" to the end), and the meld dialogue (KL-5.5; README:
    "meld talk", which clients.watch --plain prints as it grows) is printed once, not again
    with every event whose view says the same."""
    import io

    from google.protobuf import json_format
    from rich.console import Console

    from clients import watch
    from engine_service.transport.generated import card_games_pb2, cards_pb2

    view = match_pb2.View(game="klaberjass", seat=-1, hand_sizes=[9, 9], status=match_pb2.MATCH_STATUS_ACTIVE)
    json_format.ParseDict({"trump": "D", "melds": [{"seat": 0, "say": "value", "value": 20},
                                                   {"seat": 1, "say": "how_high"}]}, view.table)
    action = cards_pb2.Action(notation="play:AS", kind=cards_pb2.ACTION_KIND_PLAY)
    action.card.code = "AS"
    spectator = _Spectator([
        card_games_pb2.WatchMatchResponse(kind=match_pb2.EVENT_KIND_SNAPSHOT, seq=4, view=view),
        card_games_pb2.WatchMatchResponse(kind=match_pb2.EVENT_KIND_ACTION, seq=5, seat=0, action=action, view=view),
        card_games_pb2.WatchMatchResponse(kind=match_pb2.EVENT_KIND_PRESENCE, seq=5, seat=1, reason="connected"),
        card_games_pb2.WatchMatchResponse(kind=match_pb2.EVENT_KIND_ACTION, seq=6, seat=1, action=action),
        card_games_pb2.WatchMatchResponse(kind=match_pb2.EVENT_KIND_MATCH_ENDED, seq=7, reason="rules")],
        ["ada", "bot"])
    original = spectator.watch

    async def sits_down(**kwargs):
        spectator.names[1] = "bob"  # bob takes seat 1 once the watcher has its first summary
        async for event in original(**kwargs):
            yield event

    spectator.watch = sits_down
    out = io.StringIO()
    run(watch.follow_plain(spectator, Console(file=out, width=200), None))
    lines = [line.strip() for line in out.getvalue().splitlines()]
    assert [line for line in lines if line.startswith("meld talk")] == ["meld talk: ada 20, bot how high?"], lines
    assert "bob: connected" in lines and "6 bob: play A♠" in lines, lines


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
    """R asks and R again resigns: in a two-player game the opponent wins at once (JJK-10.1)
    and the screen says so. A single R (a stray key) only asks: the match goes on."""

    async def scenario():
        async with cg.connect(engine.target) as client:
            match = await client.create_match("japanese_joker", seats=[None, "random"])
            me = await client.join(match.match_id)
            app = PlayApp(me, await me.summary())
            async with app.run_test(size=(160, 50)) as pilot:
                await pilot.pause(0.5)
                await pilot.press("R")
                await pilot.pause(0.5)
                assert "press R again" in str(app.query_one("#status").content)
                assert app.result is None
                assert (await me.summary()).status == match_pb2.MATCH_STATUS_ACTIVE
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
    terminated = line({"winners": [], "totals": [0, 0], "outcome": "terminated", "reason": "stuck"})
    assert terminated.endswith("(terminated: stuck)") and "winners none;" in terminated, terminated
    assert line({"winners": [0], "totals": [21, 3], "outcome": "completed"}).endswith("totals [21, 3]")


def test_the_spectators_last_line_says_the_status_who_won_and_how_it_ended():
    """clients.watch's last line: the match's status in lower case and its winners, "none"
    for a match that ended with nobody winning (docs/api.md, View ``winners``: nobody after an
    abandonment or a termination), totals as JSON for scripts and how a match that was not
    played out ended, as clients.play's last line says it (a spectator's line read "winners
    bob" after ada resigned, as if the match had been played out); the match and its status
    alone while it has no result."""
    from google.protobuf import json_format
    from rich.console import Console

    from clients.watch import print_final

    def line(status, result=None) -> str:
        summary = match_pb2.MatchSummary(match_id="m1", status=status)
        summary.seats.add(seat=0, player_name="ada")
        summary.seats.add(seat=1, player_name="[b]bob[/b]")
        if result is not None:
            json_format.ParseDict(result, summary.result)
        console = Console(record=True, width=200)
        print_final(summary, console)
        return console.export_text().strip()

    assert line(match_pb2.MATCH_STATUS_TERMINATED, {"winners": [], "totals": [0, 0], "outcome": "terminated",
                                                    "reason": "stuck"}) == \
        "match m1 terminated: winners none; totals [0, 0] (terminated: stuck)"
    assert line(match_pb2.MATCH_STATUS_FINISHED, {"winners": [1], "totals": [0, 3], "outcome": "resigned",
                                                  "resigned": 0}) == \
        "match m1 finished: winners [b]bob[/b]; totals [0, 3] (resigned)"
    assert line(match_pb2.MATCH_STATUS_FINISHED, {"winners": [0], "totals": [21, 3], "outcome": "completed"}) == \
        "match m1 finished: winners ada; totals [21, 3]"
    assert line(match_pb2.MATCH_STATUS_ACTIVE) == "match m1 active"


def screen_rows(app) -> list[str]:
    """The terminal's rows as the app draws them (its whole screen), as plain text without
    trailing blanks."""
    import io

    from rich.console import Console

    console = Console(width=app.size.width, height=app.size.height, file=io.StringIO(), record=True,
                      color_system=None)
    console.print(app.screen._compositor.render_update(full=True, screen_stack=app._background_screens))
    return [row.rstrip() for row in console.export_text().splitlines()]


def board_text_rows(app) -> list[str]:
    """The rows of the board the play screen last drew (``app.board``), as :func:`screen_rows`
    shows them: in the screen's width less the board's padding, one column in."""
    options = app.console.options.update_width(app.size.width - 2)
    return [(" " + "".join(segment.text for segment in line)).rstrip()
            for line in app.console.render_lines(app.board, options, pad=False)]


def test_play_screen_keeps_the_legal_actions_in_view_on_a_small_terminal(engine):
    """On an 80x24 terminal, late in a Georgian Joker match (four seats, a trick and the last
    trick wrapping, six scored deals), the legal actions stay on screen: the deal results give
    way to them (the actions were pushed below the bottom edge, where no key reached them).
    The connection line takes the top row from the board, which is fitted again to the rows
    left (the admin's decks: a board that does not fit without that refit, whatever the deal)."""
    from engine_service.rules.cards import card_code
    from engine_service.rules.registry import get_game

    pack = [card_code(card) for card in get_game("georgian_joker").pack]
    deck = random.Random(0).sample(pack, len(pack))

    async def scenario():
        async with cg.connect(engine.target, admin_token=ADMIN_TOKEN) as client:
            match = await client.create_match("georgian_joker", seats=[None, None, None, None],
                                              decks=[deck] * 7, first_dealer=0)
            seats = [await client.join(match.match_id, player_name=f"player {n}") for n in range(4)]
            rng = random.Random(3)
            view = await seats[0].view()
            while True:
                if not cg.is_my_turn(view):  # the next seat's own view (its legal actions)
                    view = await seats[view.to_act].view()
                if (view.seat == 0 and len(view.scores.deal_results.values) >= 6
                        and view.phase == "playing" and len(view.legal_actions) >= 2):
                    break
                view = (await seats[view.seat].act(lambda v: rng.choice(cg.legal_notations(v)), view)).view
            app = PlayApp(seats[0], await seats[0].summary())
            async with app.run_test(size=(80, 24)) as pilot:
                for _ in range(40):
                    await pilot.pause(0.05)
                    if app._shown_actions:
                        break
                await pilot.pause()  # their layout
                actions = app.query_one("#actions")
                shown = actions.content_region  # the options' rows on screen, borders excluded
                assert app._shown_actions, "the legal actions never showed"
                assert shown.y + shown.height <= 24 - 2, f"the actions end below the screen: {shown}"
                assert shown.height >= min(3, len(app._shown_actions)), f"too few rows for the actions: {shown}"
                status = app.query_one("#status").region  # the refusals and "match over" are shown there
                assert status.y + status.height <= 24 - 1, f"the status line is off the screen: {status}"
                lost = cg.StreamState(cg.RECONNECTING, 1, 30)
                app.on_connection(lost)  # the connection line takes a row
                await pilot.pause()
                # as shown: the line on the top row, then the whole board the screen drew for
                # the rows left (its last row the hand), then the actions' box
                screen = screen_rows(app)
                board = board_text_rows(app)
                assert screen[0].strip() == render.connection_text(lost), screen
                assert screen[1:1 + len(board)] == board, screen
                assert board[-1].lstrip().startswith("your hand:"), board
                assert screen[1 + len(board)].startswith("╭─ your actions"), screen
                assert len(board) <= 24 - 2 - 1 - app.MIN_ACTION_ROWS, board
                shown = actions.content_region
                assert shown.y + shown.height <= 24 - 2 and shown.height >= min(3, len(app._shown_actions)), shown
                status = app.query_one("#status").region
                assert status.y + status.height <= 24 - 1, f"the status line is off the screen: {status}"
                app.on_connection(cg.StreamState(cg.RESUMED, 1, 30))
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
                await wait_for(pilot, lambda: app.board is not None, "the board")  # on_mount wrote the log before it
                await pilot.pause()  # the log's layout
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
    # on the program's own engine there is no grace period to speak of: the match ends with it
    console = Console(record=True, width=300)
    print_result(summary, 0, console, way_back=play.OWN_ENGINE_ENDS)
    assert console.export_text().strip() == ("match m1 is still active (seq 12): you quit without resigning; "
                                             "the match was on this program's own engine and ends with it")


def usage_error(stderr: str, module: str) -> str:
    """The message of argparse's usage error on ``stderr`` (after ``prog: error: ``; clients.admin's
    --ca is also spelt --ca-file)."""
    last = stderr.strip().splitlines()[-1]
    assert last.startswith(f"python -m {module}") and ": error: " in last, stderr
    return last.split(": error: ", 1)[1].replace("--ca/--ca-file", "--ca")


#: Every client's command line with a --ca, and what it needs besides.
CA_CLIENTS = (["clients.play", "--game", "klaberjass", "--autoplay", "first"],
              ["clients.watch", "m1", "--plain"], ["clients.health"], ["clients.remote_bot", "--game", "klaberjass"],
              ["clients.admin", "list"])


def test_an_unreadable_ca_file_is_a_usage_error(engine, tmp_path):
    """--ca names a file that cannot be read: a usage error naming it (exit status 2, as for
    any argument the command cannot take), no traceback, before any engine is reached or
    started. clients.play, clients.watch, clients.health and clients.remote_bot exited 1, which
    a script or the image's HEALTHCHECK reads as an engine that failed or is unhealthy;
    clients.admin and the Node client said 2; clients.play without --target started an engine
    first."""
    missing = str(tmp_path / "missing.pem")
    # the last: clients.play without --target, which starts an engine of its own
    for args in [[*a, "--target", engine.target] for a in CA_CLIENTS] + [CA_CLIENTS[0]]:
        result = cli(*args, "--tls", "--ca", missing, timeout=60)
        assert result.returncode == 2, (args, result.stdout, result.stderr)
        assert "Traceback" not in result.stderr
        assert usage_error(result.stderr, args[0]) == (f"argument --ca: cannot read the CA file {missing}: "
                                                       "No such file or directory"), result.stderr


def test_a_ca_file_without_a_certificate_is_one_line_naming_it(engine, tmp_path):
    """--ca names a file that holds no PEM certificate (garbage, a key, a PEM block with a
    broken body): gRPC took its bytes as root certificates, wrote its core's "Update handshaker
    factory failed" lines on stderr, and the call failed as UNAVAILABLE naming the engine. Now
    every client says what is wrong with the file before it connects; a certificate with a
    comment line before it (openssl pkcs12's "Bag Attributes") is still one."""
    from .conftest import self_signed_certificate

    files = {"garbage.pem": bytes(range(256)) * 4, "empty.pem": b"",
             "key.pem": b"-----BEGIN PRIVATE KEY-----\nMIIE\n-----END PRIVATE KEY-----\n",
             "broken.pem": b"-----BEGIN CERTIFICATE-----\nnot base64\n-----END CERTIFICATE-----\n"}
    for name, content in files.items():
        (tmp_path / name).write_bytes(content)
        with pytest.raises(ValueError) as info:
            cg.read_root_certificates(str(tmp_path / name))
        assert str(info.value) == (f"the CA file {tmp_path / name} holds no usable PEM certificate "
                                   "('-----BEGIN CERTIFICATE-----' blocks)")
    cert, _ = self_signed_certificate(tmp_path)
    commented = tmp_path / "commented.pem"
    commented.write_bytes("Bag Attributes: caf\u00e9\n".encode() + cert.read_bytes())
    assert cg.read_root_certificates(str(commented)) == commented.read_bytes()
    huge = tmp_path / "huge.pem"  # read to its end, as /dev/zero was until memory ran out
    with open(huge, "wb") as f:  # sparse: no disk written
        f.truncate(1024 * 1024 + 1)
    for path, why in (("/dev/null", "a device, not a regular file"), (str(huge), "larger than 1 MiB")):
        with pytest.raises(ValueError) as info:
            cg.read_root_certificates(path)
        assert str(info.value) == f"the CA file {path}: {why}"
    garbage = str(tmp_path / "garbage.pem")
    for args in CA_CLIENTS:
        result = cli(*args, "--target", engine.target, "--tls", "--ca", garbage, timeout=60)
        assert result.returncode == 2, (args[0], result.stdout, result.stderr)
        assert usage_error(result.stderr, args[0]) == (f"argument --ca: the CA file {garbage} holds no usable "
                                                       "PEM certificate ('-----BEGIN CERTIFICATE-----' blocks)"), args[0]


def test_a_ca_file_or_a_token_file_that_is_a_pipe_is_read_once(tmp_path):
    """``--ca <(kubectl get secret ...)``, ``--token-file <(pass show seat)``: a pipe gives its
    content to one reader only. The file is read as the command line is parsed (the check that
    makes a bad one a usage error) and that content is used: a second read when the channel was
    made got nothing, and refused a good CA file as holding no certificate."""
    from clients import health
    from clients.local_service import LocalService

    from .conftest import self_signed_certificate

    def pipe(content: bytes) -> str:
        read, write = os.pipe()
        os.write(write, content)
        os.close(write)
        return f"/dev/fd/{read}"

    cert, key = self_signed_certificate(tmp_path)
    with LocalService(args=["--tls-cert", str(cert), "--tls-key", str(key)]) as service:
        assert health.main(["--target", service.target, "--ca", pipe(cert.read_bytes()),
                            "--server-name", "localhost"]) == 0
    args = play.build_parser().parse_args(["--match", "M", "--token-file", pipe(b"t0ken\n")])
    assert args.token_file.value == "t0ken"


def test_the_way_back_names_the_ca_file_and_the_token_file(tmp_path):
    """The command that returns to the seat, or watches again, names the files given (their
    paths, not what was read from them as the command line was parsed)."""
    from types import SimpleNamespace

    from clients import watch

    from .conftest import self_signed_certificate

    cert, _ = self_signed_certificate(tmp_path)
    token = tmp_path / "seat.token"
    token.write_text("t0ken\n")
    args = play.build_parser().parse_args(["--target", "h:1", "--tls", "--ca", str(cert), "--match", "M1",
                                           "--token-file", str(token)])
    line = play.way_back(SimpleNamespace(match_id="M1", seat=1, token="t0ken"), args, "h:1")
    assert line == f"to return to your seat: python -m clients.play --target h:1 --tls --ca {cert} --match M1 " \
                   f"--token-file {token}", line
    # the TLS name verified instead of the target's host goes with it, or the way back fails the handshake
    args = play.build_parser().parse_args(["--target", "10.0.0.5:1", "--server-name", "cards.example", "--match",
                                           "M1", "--token-file", str(token)])
    line = play.way_back(SimpleNamespace(match_id="M1", seat=1, token="t0ken"), args, "10.0.0.5:1")
    assert line == ("to return to your seat: python -m clients.play --target 10.0.0.5:1 --server-name cards.example "
                    f"--match M1 --token-file {token}"), line
    args = watch.build_parser().parse_args(["M1", "--target", "h:1", "--ca", str(cert)])
    app = SimpleNamespace(connection=SimpleNamespace(state=cg.GAVE_UP, error=None, attempt=1), lost=True)
    assert watch.connection_lost_line(app, args).endswith(f"to watch again: python -m clients.watch M1 --target h:1 "
                                                          f"--ca {cert}")
    # and so do --tls and the TLS name verified: without them the command reached no engine
    args = watch.build_parser().parse_args(["M1", "--target", "10.0.0.5:1", "--tls", "--server-name", "cards.example"])
    assert watch.connection_lost_line(app, args).endswith(
        "to watch again: python -m clients.watch M1 --target 10.0.0.5:1 --tls --server-name cards.example")


GRPC_VERBOSITY_AT_IMPORT = """
import importlib.abc, os, runpy, sys
seen = []
class Spy(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name == "grpc" and not seen:
            seen.append(os.environ.get("GRPC_VERBOSITY"))
sys.meta_path.insert(0, Spy())
module, sys.argv = sys.argv[1], [sys.argv[1], "--help"]
try:
    runpy.run_module(module, run_name="__main__")
except SystemExit:
    pass
print("GRPC_VERBOSITY when grpc was imported:", seen)
"""


def test_the_commands_quiet_grpc_core_before_importing_grpc():
    """clients.watch, clients.play and clients.remote_bot left gRPC core's verbosity at its
    default: --tls to an engine without TLS (or a CA that is not the engine's) wrote a plain
    "Handshake failed" INFO line per attempt before the one error line, as clients.admin and
    clients.health no longer do. Each sets GRPC_VERBOSITY=ERROR, unless the environment has
    one, before grpc is first imported (gRPC core reads it then): GRPC_VERBOSITY=INFO brings the
    lines back (clients/admin.py, docs/operations.md)."""
    env = {k: v for k, v in os.environ.items() if k != "GRPC_VERBOSITY"}
    modules = ("clients.watch", "clients.play", "clients.remote_bot", "clients.health", "clients.admin")
    for given, expected in ((None, "ERROR"), ("INFO", "INFO")):
        run_env = env if given is None else dict(env, GRPC_VERBOSITY=given)
        runs = {module: subprocess.Popen([sys.executable, "-c", GRPC_VERBOSITY_AT_IMPORT, module], cwd=ROOT,
                                         env=run_env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
                for module in modules}
        for module, process in runs.items():
            out, _ = process.communicate(timeout=120)
            assert out.strip().splitlines()[-1] == f"GRPC_VERBOSITY when grpc was imported: ['{expected}']", \
                (module, given, out)


def test_a_run_without_a_screen_does_not_import_textual():
    """The screens live in clients.play_screen and clients.watch_screen, imported only when a
    screen is shown: a usage error, --autoplay, --plain, --lobby or --list paid about 0.15 s of
    a 0.5 s run for textual, which they never use."""
    code = ("import sys, clients.play, clients.watch\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] == 'textual'))\n"
            "import clients.play_screen, clients.watch_screen\n"
            "print('textual.app' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.stdout.splitlines() == ["[]", "True"], done.stdout + done.stderr


def test_ctrl_c_quits_the_screens(engine):
    """Ctrl-C ends clients.play and clients.watch as it ends any terminal program (textual's
    default binding only showed "press ctrl+q to quit the app")."""

    async def scenario():
        async with cg.connect(engine.target) as client:
            match = await client.create_match("japanese_joker", seats=[None, "random"])
            me = await client.join(match.match_id)
            for app in (PlayApp(me, await me.summary()), WatchApp(client.spectate(match.match_id))):
                async with app.run_test(size=(120, 40)) as pilot:
                    await wait_for(pilot, lambda: app.board is not None, "the board")
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
    # a --db the engine refuses before it logs anything (argparse's plain line): that line,
    # not "the engine exited with status 2:" and nothing else
    result = cli("clients.play", "--game", "klaberjass", "--db", "sqlite:///x.sqlite3", "--autoplay", "first",
                 timeout=60)
    assert result.returncode == 1, result.stdout + result.stderr
    assert result.stderr.splitlines() == [
        "error: the engine did not start: argument --db: must be a SQLite file's path, a postgresql:// URL "
        "or 'memory:', not a sqlite:// URL (value not shown: it may hold a password)"]


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
    a started match has none free); a --token-file without --match is a usage error. (One
    deal is the match: the seat declares it, dealt from :data:`_ROUT`.)"""
    from .conftest import ADMIN_TOKEN

    async def create():
        async with cg.connect(engine.target, admin_token=ADMIN_TOKEN) as client:
            match = await client.create_match("japanese_joker", seats=[None, "random"],
                                              options={"target_score": 11}, decks=[_ROUT], first_dealer=0)
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


# ---- a lost connection -----------------------------------------------------------------------


def log_lines(app) -> list[str]:
    return [strip.text for strip in app.query_one("#log").lines]


def action_seqs(lines: list[str]) -> list[int]:
    """The seq numbers of the action lines of the event log, in the order shown."""
    return [int(line.split()[0]) for line in lines if line.split() and line.split()[0].isdigit()
            and ": " in line and "joined" not in line and "ended" not in line]


def banner(app) -> tuple[bool, str]:
    widget = app.query_one("#connection")
    return bool(widget.display), str(widget.content)


async def wait_for(pilot, condition, what: str, timeout_s: float = 30.0) -> None:
    """Until ``condition()`` holds on the screen (a hang guard of ``timeout_s``)."""
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, f"{what}: not within {timeout_s:g} s"
        await pilot.pause(0.02)


async def refitted(pilot, app) -> None:
    """Until the play screen has fitted its board and deal results to the terminal's new size
    (its tick notices a resize, every 0.5 s: PlayApp.tick), and laid them out."""
    await wait_for(pilot, lambda: app._fitted_size == app.size, "the screen fitted to the new size")
    await pilot.pause()


def own_presence_shown(app) -> bool:
    """Whether the play screen has taken in its seat's own ``PRESENCE`` event (``connected``:
    a seat whose stream is its only one gets it, docs/api.md). The screen asks for the match's
    summary on a presence event, for up to ``SUMMARY_WAIT_S`` (2 s), before it reads on: a
    cut while that call was on its way was noticed once the wait was over, and a test that
    cut before the event came in saw its connection-lost line at once or 2 s later, from run
    to run. The line is written once the summary is in."""
    return any(line.strip() == "you: connected" for line in log_lines(app))


async def first_action_shown(pilot, app, seat: cg.SeatSession) -> None:
    """An action played (by ``seat``, on its own connection, if it is its turn) and shown on
    the screen, and the screen's own presence taken in (:func:`own_presence_shown`): its event
    stream is open, delivering and idle (the screen's first view comes from a GetView, and its
    stream may not be open yet), so that a cut then is a stream that fails, noticed at once."""
    view = await seat.view()
    if view.seq == 0 and cg.is_my_turn(view):
        await seat.act(lambda v: v.legal_actions[0].notation)
    await wait_for(pilot, lambda: action_seqs(log_lines(app)) and own_presence_shown(app),
                   "the first action and the screen's presence on screen")


def test_play_screen_says_the_connection_is_lost_and_catches_up(engine):
    """The player's stream is cut (the proxy holds the reconnection): a red line at the top
    says "connection lost — reconnecting (try 1 of 30)…", the actions are greyed out and a
    move chosen then is not sent; the match goes on meanwhile (the player's own seat acts on
    another connection, then the opponent). Restored: the line goes, the missed actions are
    shown, each once and in order, and the table is the server's."""
    from .conftest import CuttableProxy, two_seats

    async def scenario():
        async with cg.connect(engine.target) as direct, CuttableProxy(engine.target) as proxy, \
                cg.connect(proxy.target) as via_proxy:
            match, sessions, mover = await two_seats(direct)
            mine = sessions[0]
            me = via_proxy.seat_session(match.match_id, mine.seat, mine.token)
            app = PlayApp(me, await me.summary())
            banners = []
            original = app.on_connection

            def recording(state):
                original(state)
                banners.append(banner(app))

            app.on_connection = recording
            async with app.run_test(size=(160, 50)) as pilot:
                rng = random.Random(5)
                while True:  # an action or more (the stream has delivered something), then my turn
                    view = await mine.view()
                    if view.seq >= 1 and cg.is_my_turn(view):
                        break
                    await sessions[view.to_act].act(lambda v: rng.choice(cg.legal_notations(v)))
                seq = view.seq
                await wait_for(pilot, lambda: app.view_msg.seq == seq and app._shown_actions
                               and own_presence_shown(app), "my turn and my presence on screen")
                assert banner(app) == (False, "")

                proxy.hold()
                proxy.cut()
                await wait_for(pilot, lambda: banner(app)[0], "the connection-lost line")
                assert banner(app) == (True, "connection lost — reconnecting (try 1 of 30)…")
                actions = app.query_one("#actions")
                assert actions.disabled and "wait for the connection" in str(actions.border_title)
                await pilot.press("1")
                await wait_for(pilot, lambda: str(app.query_one("#status").content) == (
                    "not sent: the connection is lost — choose again once it is back"), "the 'not sent' line")
                assert (await mine.view()).seq == seq, "a move was sent while the connection was lost"
                assert any(line.strip().startswith("connection lost (") for line in log_lines(app))

                while True:  # my seat (on another connection) and the opponent play on
                    view = await mine.view()
                    if view.seq >= seq + 2 and cg.is_my_turn(view):
                        break
                    await sessions[view.to_act].act(lambda v: rng.choice(cg.legal_notations(v)))
                missed = view.seq
                await pilot.pause(0.3)
                assert app.view_msg.seq == seq and banner(app)[0], "the screen moved while cut"

                proxy.release()
                await wait_for(pilot, lambda: not banner(app)[0] and app.view_msg.seq == missed, "catching up")
                assert banner(app) == (False, "")
                assert not actions.disabled and app._shown_actions
                assert str(app.query_one("#status").content) == "", "the 'not sent' line outlived the outage"
                lines = log_lines(app)
                assert action_seqs(lines) == list(range(1, missed + 1)), lines
                assert any(line.strip().startswith("connection back after 1 try") for line in lines), lines
                assert banners[0] == (True, "connection lost — reconnecting (try 1 of 30)…")
                assert banners[-1] == (False, "")

                await pilot.press("1")  # and a move goes through again
                await wait_for(pilot, lambda: app.view_msg.seq == missed + 1, "my move after the restore")
                assert (await mine.view()).seq == missed + 1

    run(scenario(), timeout_s=60)


def test_watch_plain_keeps_each_line_whole_and_ctrl_c_ends_it_quietly(monkeypatch, capsys):
    """clients.watch --plain, "for logs and pipes": one line per event however long, in a pipe
    of the default 80 columns too (the console folded them), and Ctrl-C ends it as it ends
    clients.play, status 130 and no traceback or error line."""
    from clients import watch

    long_line = " ".join(f"word{n}" for n in range(40))  # 300 columns

    async def prints(args, console):
        console.print(long_line)
        return 0

    async def interrupted(args, console):
        raise KeyboardInterrupt

    monkeypatch.delenv("COLUMNS", raising=False)
    monkeypatch.setattr(watch, "run", prints)
    assert watch.main(["M1", "--target", "h:1", "--plain"]) == 0
    assert capsys.readouterr().out.splitlines() == [long_line]
    monkeypatch.setattr(watch, "run", interrupted)
    assert watch.main(["M1", "--target", "h:1", "--plain"]) == 130
    assert capsys.readouterr() == ("", "")


def test_watch_colours_no_number_of_its_own_on_a_terminal(monkeypatch, capsys):
    """clients.watch's console does not highlight: on a terminal (FORCE_COLOR, as rich reads
    it) the last line's totals are written as render.result_line gives them, not with rich's
    colours around each number and bracket (a terminal logged to a file got them too)."""
    from clients import watch

    final = match_pb2.MatchSummary(match_id="m1", status=match_pb2.MATCH_STATUS_FINISHED)
    final.seats.add(seat=0, player_name="ada")
    final.result.update({"winners": [0], "totals": [21, 3]})

    async def ends(args, console):
        watch.print_final(final, console)
        return 0

    monkeypatch.setenv("FORCE_COLOR", "1")
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setattr(watch, "run", ends)
    assert watch.main(["M1", "--target", "h:1", "--plain"]) == 0
    assert capsys.readouterr().out == "match m1 finished: winners ada; totals [21, 3]\n"


@pytest.mark.parametrize("tries", ["0", "-1"])
def test_watch_takes_one_reconnect_try_or_more(tries, capsys):
    """--reconnect-tries N: the screen gives up after N reopenings in a row (its help), so N is
    a whole number of 1 or more, as clients.play's; 0 or less is a usage error (exit status 2)
    before any engine is reached, not a screen that gives up at the first drop."""
    from clients import watch

    with pytest.raises(SystemExit) as info:
        watch.main(["M1", "--target", "h:1", "--reconnect-tries", tries])
    assert info.value.code == 2
    assert f"argument --reconnect-tries: a whole number of 1 or more, not '{tries}'" in capsys.readouterr().err


def test_watch_says_a_long_error_in_one_line(monkeypatch, capsys):
    """An error the API answers is one ``error:`` line on stderr however long (README: one
    line; a log reads one line per error), not folded at a pipe's 80 columns, exit status 1."""
    from clients import watch

    message = "no match " + "x" * 150

    async def refused(args, console):
        raise cg.CardGamesError(grpc.StatusCode.NOT_FOUND, message, reason="MATCH_NOT_FOUND")

    monkeypatch.delenv("COLUMNS", raising=False)
    monkeypatch.setattr(watch, "run", refused)
    assert watch.main(["M1", "--target", "h:1", "--plain"]) == 1
    assert capsys.readouterr() == ("", f"error: NOT_FOUND MATCH_NOT_FOUND: {message}\n")


def test_watch_plain_whose_reader_left_ends_quietly_with_status_1(monkeypatch, capsys):
    """``clients.watch --plain | head``: the reader left while the match went on, so the
    following stopped unfinished: exit status 1, quietly (command_line.stdout_guarded: 1 where
    the work stopped unfinished, as clients.play and clients.remote_bot; 0 is for a listing)."""
    from clients import watch
    from engine_service import command_line

    async def reader_left(args, console):
        raise BrokenPipeError

    monkeypatch.setattr(watch, "run", reader_left)
    monkeypatch.setattr(command_line, "drop_stdout", lambda: None)  # capsys's stdout has no descriptor
    assert watch.main(["M1", "--target", "h:1", "--plain"]) == 1
    assert capsys.readouterr() == ("", "")


def test_the_command_that_watches_again_is_quoted_for_the_shell(tmp_path):
    """The line of a connection given up ends with a command to paste into a shell (module
    docstring: "one line on stderr saying how to watch again"): a --ca path with a space is
    quoted, or the command would name two files."""
    from types import SimpleNamespace

    from clients import watch

    from .conftest import self_signed_certificate

    folder = tmp_path / "my certs"
    folder.mkdir()
    cert, _ = self_signed_certificate(folder)
    args = watch.build_parser().parse_args(["M1", "--target", "h:1", "--ca", str(cert)])
    app = SimpleNamespace(connection=cg.StreamState(cg.GAVE_UP, 2, 2, None), lost=True)
    assert watch.connection_lost_line(app, args) == (
        "error: the connection to the engine is lost for good (the stream ended, 2 tries in a row); "
        f"to watch again: python -m clients.watch M1 --target h:1 --ca '{cert}'")


def test_watch_says_a_match_it_cannot_follow_in_one_line_before_the_screen_opens(monkeypatch, capsys):
    """No such match (or no engine): the screen's clients.watch asks for the match before the
    screen opens, so the refusal is the one ``error:`` line, status 1 (README: "Exit status 1
    is the engine's or the connection's failure"); asked from the open screen it came with
    textual's traceback."""
    import contextlib

    from clients import watch, watch_screen

    class Spectator:
        async def summary(self):
            raise cg.CardGamesError(grpc.StatusCode.NOT_FOUND, "no match M1", reason="MATCH_NOT_FOUND")

    class Client:
        def spectate(self, match_id):
            return Spectator()

    @contextlib.asynccontextmanager
    async def connect(target, **_):
        yield Client()

    def screen(*args, **kwargs):
        raise AssertionError("the screen opened for a match that cannot be followed")

    monkeypatch.setattr(watch, "connect", connect)
    monkeypatch.setattr(watch_screen, "WatchApp", screen)
    assert watch.main(["M1", "--target", "h:1"]) == 1
    assert capsys.readouterr().err.splitlines() == ["error: NOT_FOUND MATCH_NOT_FOUND: no match M1"]


class _EndingSpectator(_Spectator):
    """A :class:`_Spectator` whose match ends with its stream: its summary says finished once
    the stream has ended (or once the screen has closed, ``ended`` set by the test)."""

    def __init__(self) -> None:
        super().__init__([card_games_pb2.WatchMatchResponse(kind=match_pb2.EVENT_KIND_MATCH_ENDED, seq=7,
                                                            reason="rules")], ["ada", "bob"])
        self.ended = False

    async def watch(self, after_seq=None, on_connection=None, **_):
        async for event in super().watch(after_seq=after_seq):
            yield event
        self.ended = True

    async def summary(self):
        summary = await super().summary()
        if self.ended:
            summary.status = match_pb2.MATCH_STATUS_FINISHED
        return summary


def _fake_engine(monkeypatch, spectator):
    """clients.watch's ``connect`` replaced: the keywords of each connection, and ``spectator``
    for every match."""
    import contextlib

    from clients import watch

    connections = []

    class Client:
        def spectate(self, match_id):
            assert match_id == "M1"
            return spectator

    @contextlib.asynccontextmanager
    async def connect(target, **kwargs):
        connections.append((target, kwargs))
        yield Client()

    monkeypatch.setattr(watch, "connect", connect)
    return connections


def test_watch_connects_as_told_and_ends_with_the_summary_of_the_ended_match(monkeypatch, capsys, tmp_path):
    """clients.watch --plain: the connection takes the command's --tls, --ca (the file's
    certificates, as read when the command line was parsed) and --server-name (docs/api.md,
    Connecting: "The sample clients take --tls, --ca FILE ... and --server-name NAME");
    --from-start opens the stream at ``after_seq`` 0, without it from now (None: module
    docstring); and the last line is the match's summary asked once the stream has ended
    ("finished"), not the one asked before it began."""
    from clients import watch

    from .conftest import self_signed_certificate

    cert, _ = self_signed_certificate(tmp_path)
    spectator = _EndingSpectator()
    connections = _fake_engine(monkeypatch, spectator)
    assert watch.main(["M1", "--target", "h:1", "--plain", "--from-start", "--tls", "--server-name", "cards.test"]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == "match m1 finished"
    spectator.ended = False
    assert watch.main(["M1", "--target", "h:2", "--plain", "--ca", str(cert)]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == "match m1 finished"
    assert spectator.after_seqs == [0, None]
    assert connections == [
        ("h:1", {"tls": True, "root_certificates": None, "server_name": "cards.test"}),
        ("h:2", {"tls": False, "root_certificates": cert.read_bytes(), "server_name": None})]


def test_watch_opens_the_screen_as_told_and_says_a_lost_connection_on_stderr(monkeypatch, capsys):
    """The screen's clients.watch: the screen gets the ``after_seq`` --from-start asks for (0,
    else None), --reconnect-tries and the summary asked before it opened; closed with the match
    over, the last line is the summary asked then; closed with the connection lost for good,
    nothing on stdout, one line on stderr with the command that watches again and exit status
    3 (module docstring: "it closes with one line on stderr saying how to watch again, exit
    status 3"; README: 1 is the engine's answer)."""
    from clients import watch, watch_screen

    spectator = _EndingSpectator()
    _fake_engine(monkeypatch, spectator)
    screens = []
    lost = cg.StreamState(cg.GAVE_UP, 4, 4, cg.Unavailable(grpc.StatusCode.UNAVAILABLE, "Socket closed"))

    class Screen:
        def __init__(self, audience, after_seq, *, summary, reconnect_tries):
            assert audience is spectator
            screens.append((after_seq, match_pb2.MatchStatus.Name(summary.status), reconnect_tries))
            self.connection, self.lost = None, False

        async def run_async(self):
            if len(screens) == 1:
                spectator.ended = True  # the match ended while it was on screen
            else:
                self.connection, self.lost = lost, True

    monkeypatch.setattr(watch_screen, "WatchApp", Screen)
    assert watch.main(["M1", "--target", "h:1", "--from-start", "--reconnect-tries", "4"]) == 0
    assert capsys.readouterr() == ("match m1 finished\n", "")
    spectator.ended = False
    assert watch.main(["M1", "--target", "h:1"]) == 3
    out, err = capsys.readouterr()
    assert out == "" and err == ("error: the connection to the engine is lost for good (UNAVAILABLE: Socket closed, "
                                 "4 tries in a row); to watch again: python -m clients.watch M1 --target h:1\n"), err
    assert screens == [(0, "MATCH_STATUS_ACTIVE", 4), (None, "MATCH_STATUS_ACTIVE", watch.RECONNECT_TRIES)]
    assert watch.RECONNECT_TRIES == 30  # module docstring: "(try 3 of 30)"


class _ScreenSpectator(_Spectator):
    """A :class:`_Spectator` for the screen: it records how its stream was opened, and may end
    it with ``error`` after saying the connection dropped (``drop``)."""

    def __init__(self, events, names, error=None, drop=None) -> None:
        super().__init__(events, names)
        self.error, self.drop, self.opened = error, drop, []

    async def watch(self, after_seq=None, max_failures=None, on_connection=None):
        self.opened.append((after_seq, max_failures))
        for event in self.events:
            yield event
        if self.drop is not None:
            on_connection(self.drop)
            yield card_games_pb2.WatchMatchResponse(kind=match_pb2.EVENT_KIND_HEARTBEAT, seq=1)
        if self.error is not None:
            raise self.error
        await asyncio.Event().wait()  # the stream stays open, as on a match nobody moves


def test_watch_screen_names_a_late_player_and_opens_the_stream_as_told():
    """The spectator's screen opens the stream from the ``after_seq`` it was given (0:
    --from-start) with --reconnect-tries as its limit, and names a player who sat down after
    it opened from the presence event on (docs/api.md: PRESENCE; the screen asks for the
    summary then)."""
    action = cards_pb2.Action(notation="play:AS", kind=cards_pb2.ACTION_KIND_PLAY)
    action.card.code = "AS"
    spectator = _ScreenSpectator([
        card_games_pb2.WatchMatchResponse(kind=match_pb2.EVENT_KIND_PRESENCE, seq=0, seat=1, reason="connected"),
        card_games_pb2.WatchMatchResponse(kind=match_pb2.EVENT_KIND_ACTION, seq=1, seat=1, action=action)],
        ["ada", ""])

    async def scenario():
        app = WatchApp(spectator, 0, summary=await spectator.summary(), reconnect_tries=7)
        spectator.names[1] = "bob"
        async with app.run_test(size=(120, 30)) as pilot:
            await wait_for(pilot, lambda: any("play" in line for line in log_lines(app)), "the action in the log")
            lines = [line.strip() for line in log_lines(app)]
            assert "bob: connected" in lines and "1 bob: play A♠" in lines, lines
        assert spectator.opened == [(0, 7)]

    run(scenario(), timeout_s=60)


def test_watch_screen_counts_the_turn_down_on_the_servers_clock():
    """A view's deadline is on the server's clock (docs/api.md, HEARTBEAT ``server_time``: "a
    countdown on a device whose clock is off adds server_time minus the time the heartbeat
    arrived"): the spectator's countdown on a machine whose clock is 1000 s behind the
    server's shows the minute left, not 1060 s."""
    from google.protobuf import struct_pb2, timestamp_pb2

    ahead_s = 1000.0
    details = struct_pb2.Struct()
    details.update({"server_time": time.time() + ahead_s})
    view = match_pb2.View(game="klaberjass", hand_sizes=[9, 9], to_act=1, status=match_pb2.MATCH_STATUS_ACTIVE,
                          phase="playing", seq=3)
    view.deadline.CopyFrom(timestamp_pb2.Timestamp(seconds=int(time.time() + ahead_s + 60)))
    spectator = _ScreenSpectator([
        card_games_pb2.WatchMatchResponse(kind=match_pb2.EVENT_KIND_HEARTBEAT, seq=3, details=details),
        card_games_pb2.WatchMatchResponse(kind=match_pb2.EVENT_KIND_SNAPSHOT, seq=3, view=view)], ["ada", "bob"])

    async def scenario():
        app = WatchApp(spectator, None, summary=await spectator.summary())
        async with app.run_test(size=(120, 30)) as pilot:
            await wait_for(pilot, lambda: app.board is not None, "the board")
            header = screen_text(app).splitlines()[0]
            left = re.search(r"bob to act\s+(\d+) s", header)
            assert left and 0 < int(left[1]) <= 60, header

    run(scenario(), timeout_s=60)


def test_watch_screen_says_why_its_stream_failed_for_an_error_reconnecting_cannot_fix():
    """The stream dropped ("reconnecting" at the top), and its reopening was refused for good
    (no such match: the library raises it without giving up, StreamState): the red line goes,
    since nothing reconnects, the log says why the stream failed and the screen stays open
    with the match as it was, as the player's screen does; exit status 3 and the "watch
    again" line are for a connection given up (README, clients.watch)."""
    # the match id as typed, brackets and all: the line is text, never read as markup
    error = cg.CardGamesError(grpc.StatusCode.NOT_FOUND, "no match [b]m1", reason="MATCH_NOT_FOUND")
    drop = cg.StreamState(cg.RECONNECTING, 1, 30, cg.Unavailable(grpc.StatusCode.UNAVAILABLE, "Socket closed"))
    spectator = _ScreenSpectator([], ["ada", "bob"], error=error, drop=drop)

    async def scenario():
        app = WatchApp(spectator, None, summary=await spectator.summary())
        async with app.run_test(size=(120, 30)) as pilot:
            await wait_for(pilot, lambda: app.return_code is not None or any(
                "stream failed" in line for line in log_lines(app)), "the failure")
            assert "the stream failed: NOT_FOUND MATCH_NOT_FOUND: no match [b]m1" in [
                line.strip() for line in log_lines(app)], log_lines(app)
            assert banner(app) == (False, "") and app.connection is None
            await pilot.pause()
            assert app.is_running and app.return_code is None

    run(scenario(), timeout_s=60)


def test_watch_screen_counts_its_tries_and_catches_up(engine):
    """The spectator's engine refuses connections for a while (the proxy's port closed, as
    during a restart): the line counts the reopenings (try 1, 2, ... of 30); opened again,
    the line goes and the actions played meanwhile are shown, each once."""
    from .conftest import CuttableProxy, two_seats

    async def scenario():
        async with cg.connect(engine.target) as direct:
            match, sessions, _ = await two_seats(direct)
            rng = random.Random(8)

            async def play(n: int) -> int:
                for _ in range(n):
                    view = await sessions[0].view()
                    await sessions[view.to_act].act(lambda v: rng.choice(cg.legal_notations(v)))
                return (await sessions[0].view()).seq

            proxy = CuttableProxy(engine.target)
            await proxy.__aenter__()
            port = proxy.port
            client = cg.connect(proxy.target)
            try:
                app = WatchApp(client.spectate(match.match_id), after_seq=0)
                shown = []
                original = app.on_connection

                def recording(state):
                    original(state)
                    shown.append(banner(app))

                app.on_connection = recording
                async with app.run_test(size=(160, 50)) as pilot:
                    seq = await play(2)
                    await wait_for(pilot, lambda: app.view_msg is not None and app.view_msg.seq == seq,
                                   "the first actions")
                    await proxy.__aexit__(None, None, None)  # the port refuses, the stream is cut
                    await wait_for(pilot, lambda: len(shown) >= 3, "three tries")
                    seq = await play(3)
                    assert shown[:3] == [(True, f"connection lost — reconnecting (try {n} of 30)…")
                                         for n in (1, 2, 3)]
                    proxy = CuttableProxy(engine.target, port=port)
                    await proxy.__aenter__()
                    await wait_for(pilot, lambda: not banner(app)[0] and app.view_msg.seq == seq,
                                   "catching up")
                    assert shown[-1] == (False, "")
                    lines = log_lines(app)
                    assert action_seqs(lines) == list(range(1, seq + 1)), lines
                    assert sum(line.strip().startswith("connection lost") for line in lines) == 1, lines
                    assert "connection back after" in "\n".join(lines)
                    assert "Japanese Joker" in screen_text(app)
            finally:
                await client.close()
                await proxy.__aexit__(None, None, None)

    run(scenario(), timeout_s=60)


HEADLESS = "textual.drivers.headless_driver:HeadlessDriver"  # the real screen, without a terminal


async def screen_cli(*args: str) -> asyncio.subprocess.Process:
    env = dict(os.environ, COLUMNS="160", PYTHONUNBUFFERED="1", TEXTUAL_DRIVER=HEADLESS)
    return await asyncio.create_subprocess_exec(sys.executable, "-m", *args, cwd=ROOT, env=env,
                                                stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE,
                                                stderr=asyncio.subprocess.PIPE)


def test_play_screen_gives_up_a_lost_connection_with_the_way_back(engine, tmp_path):
    """The engine stays unreachable past --reconnect-tries: clients.play closes its screen
    and prints one line on stderr, no traceback, exit status 3, naming the way back to the
    seat with its token saved to a file only the user can read; that very command (the engine
    reachable again) returns to the seat and plays the match to its end (one deal: the seat
    declares it, dealt from :data:`_ROUT`)."""
    from .conftest import CuttableProxy

    async def scenario():
        async with cg.connect(engine.target, admin_token=ADMIN_TOKEN) as direct, CuttableProxy(engine.target) as proxy:
            match = await direct.create_match("japanese_joker", seats=[None, "random"], options={"target_score": 11},
                                              decks=[_ROUT], first_dealer=0)
            port = proxy.port
            player = await screen_cli("clients.play", "--target", proxy.target, "--match", match.match_id,
                                      "--reconnect-tries", "3")
            try:
                deadline = time.monotonic() + 30
                while not (await direct.get_match(match.match_id)).seats[0].present:  # its stream is open
                    assert time.monotonic() < deadline and player.returncode is None, "the screen never connected"
                    await asyncio.sleep(0.05)
                proxy.server.close()  # the engine refuses connections from now on
                proxy.cut()
                out, err = await asyncio.wait_for(player.communicate(), 30)
            finally:
                if player.returncode is None:
                    player.kill()
                    await player.wait()
            assert player.returncode == 3, (out, err)
            lines = err.decode().splitlines()
            assert len(lines) == 1 and "Traceback" not in err.decode(), lines
            assert lines[0].startswith("error: the connection to the engine is lost for good (UNAVAILABLE: "), lines
            why, _, back = lines[0].partition("; to return to your seat: ")
            assert why.endswith(", 3 tries in a row)"), lines
            command = back.split()
            assert command[:5] == ["python", "-m", "clients.play", "--target", f"127.0.0.1:{port}"], command
            assert command[5:7] == ["--match", match.match_id] and command[7] == "--token-file", command
            token_file = command[8]
            assert os.stat(token_file).st_mode & 0o777 == 0o600
            try:
                token = open(token_file, encoding="utf-8").read().strip()
                assert (await direct.seat_session(match.match_id, 0, token).view()).seat == 0

                async with CuttableProxy(engine.target, port=port):  # the engine is back at that address
                    back = await asyncio.create_subprocess_exec(
                        sys.executable, *command[1:], "--autoplay", "first", cwd=ROOT,
                        stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE,
                        stderr=asyncio.subprocess.PIPE)
                    out, err = await asyncio.wait_for(back.communicate(), 60)
            finally:
                os.unlink(token_file)
            assert back.returncode == 0, (out, err)
            assert "finished: winners" in out.decode().splitlines()[-1]

    run(scenario(), timeout_s=90)


def test_watch_screen_gives_up_a_lost_connection_with_the_way_back(engine):
    """clients.watch past --reconnect-tries: one line on stderr with the command that watches
    again, no traceback, exit status 3."""
    from .conftest import CuttableProxy, two_seats

    async def scenario():
        async with cg.connect(engine.target) as direct, CuttableProxy(engine.target) as proxy:
            match, _, _ = await two_seats(direct)
            watcher = await screen_cli("clients.watch", match.match_id, "--target", proxy.target,
                                       "--reconnect-tries", "2")
            try:
                deadline = time.monotonic() + 30
                # the match asked for before the screen opens (then its stream opens, or fails
                # and is retried: a spectator has no presence to wait for)
                while not [line for line in engine.find_log("rpc") if line.get("match_id") == match.match_id
                           and line.get("method", "").endswith("/GetMatch")]:
                    assert time.monotonic() < deadline and watcher.returncode is None, "the screen never connected"
                    await asyncio.sleep(0.05)
                proxy.server.close()
                proxy.cut()
                out, err = await asyncio.wait_for(watcher.communicate(), 30)
            finally:
                if watcher.returncode is None:
                    watcher.kill()
                    await watcher.wait()
            assert watcher.returncode == 3, (out, err)
            lines = err.decode().splitlines()
            assert len(lines) == 1 and "Traceback" not in err.decode(), lines
            assert lines[0].startswith("error: the connection to the engine is lost for good (UNAVAILABLE: "), lines
            assert lines[0].endswith(f", 2 tries in a row); to watch again: python -m clients.watch "
                                     f"{match.match_id} --target {proxy.target}"), lines

    run(scenario(), timeout_s=60)


def test_quitting_a_screen_while_the_connection_is_lost(engine, tmp_path, monkeypatch, capsys):
    """q while the stream is down: no final result asked of an engine that cannot be reached
    (its retries held the terminal for seconds, then an UNAVAILABLE line), but at once the one
    line with the way back to the seat (the player) or the command that watches again (the
    spectator), exit status 3."""
    import argparse
    import io

    from rich.console import Console

    from clients import play, watch

    from .conftest import CuttableProxy

    async def quit_once_cut(app, proxy, seat):
        async with app.run_test(size=(160, 50)) as pilot:
            if isinstance(app, WatchApp):  # its stream starts with a snapshot
                await wait_for(pilot, lambda: app.view_msg is not None, "the snapshot on screen")
            else:
                await first_action_shown(pilot, app, seat)
            proxy.hold()
            proxy.cut()
            await wait_for(pilot, lambda: banner(app)[0], "the connection-lost line")
            await pilot.press("q")

    async def scenario():
        async with cg.connect(engine.target) as direct, CuttableProxy(engine.target) as proxy:
            match = await direct.create_match("japanese_joker", seats=[None, "random"], options={"target_score": 11})
            token_file = tmp_path / "seat.token"
            mine = await direct.join(match.match_id)
            token_file.write_text(mine.token)
            console = Console(file=io.StringIO())

            async def player_run_async(app):
                await quit_once_cut(app, proxy, mine)

            monkeypatch.setattr(PlayApp, "run_async", player_run_async)
            args = play.build_parser().parse_args(["--target", proxy.target, "--match", match.match_id,
                                                   "--token-file", str(token_file)])
            started = time.monotonic()
            assert await play.run(args, proxy.target, console) == 3
            assert time.monotonic() - started < 30  # a hang guard: its 30 reconnect tries would take minutes
            err = capsys.readouterr().err.splitlines()
            assert len(err) == 1 and err[0].startswith(
                "error: you quit while the connection to the engine was lost (UNAVAILABLE: "), err
            assert err[0].endswith(f"); to return to your seat: python -m clients.play --target {proxy.target} "
                                   f"--match {match.match_id} --token-file {token_file}"), err

            proxy.release()

            async def spectator_run_async(app):
                await quit_once_cut(app, proxy, mine)

            monkeypatch.setattr(WatchApp, "run_async", spectator_run_async)
            args = argparse.Namespace(match_id=match.match_id, target=proxy.target, tls=False, ca=None,
                                      server_name=None, plain=False, from_start=False, reconnect_tries=30)
            started = time.monotonic()
            assert await watch.run(args, console) == 3
            assert time.monotonic() - started < 30  # a hang guard: its 30 reconnect tries would take minutes
            err = capsys.readouterr().err.splitlines()
            assert len(err) == 1 and err[0].startswith(
                "error: you quit while the connection to the engine was lost (UNAVAILABLE: "), err
            assert err[0].endswith(f"); to watch again: python -m clients.watch {match.match_id} "
                                   f"--target {proxy.target}"), err

    run(scenario(), timeout_s=60)


def test_watch_plain_notes_a_dropped_connection_on_stderr(engine):
    """clients.watch --plain (for logs and pipes) keeps trying, and says why the events paused:
    one line on stderr when the stream drops, one when it is back; stdout stays the events',
    each action once."""
    from .conftest import ADMIN_TOKEN, CuttableProxy, two_seats

    async def scenario():
        async with cg.connect(engine.target, admin_token=ADMIN_TOKEN) as direct, \
                CuttableProxy(engine.target) as proxy:
            match, sessions, _ = await two_seats(direct)
            watcher = await asyncio.create_subprocess_exec(
                sys.executable, "-m", "clients.watch", match.match_id, "--target", proxy.target, "--plain",
                cwd=ROOT, env=dict(os.environ, COLUMNS="160", PYTHONUNBUFFERED="1"),
                stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
            try:
                first = await asyncio.wait_for(watcher.stdout.readline(), 30)
                assert b"joined the table" in first, first
                proxy.hold()
                proxy.cut()
                lost = await asyncio.wait_for(watcher.stderr.readline(), 30)  # said while it is down
                for _ in range(3):
                    view = await sessions[0].view()
                    await sessions[view.to_act].act(lambda v: v.legal_actions[0].notation)
                proxy.release()
                back = await asyncio.wait_for(watcher.stderr.readline(), 30)
                shown = [first]
                while 3 not in action_seqs([line.decode() for line in shown]):  # caught up
                    shown.append(await asyncio.wait_for(watcher.stdout.readline(), 30))
                await direct.admin.terminate(match.match_id, "test over")
                out, err = await asyncio.wait_for(watcher.communicate(), 30)
            finally:
                if watcher.returncode is None:
                    watcher.kill()
                    await watcher.wait()
            assert watcher.returncode == 0, (out, err)
            notes = (lost + back + err).decode().splitlines()
            assert len(notes) == 2 and notes[0].startswith("connection lost ("), notes
            assert notes[0].endswith("): reconnecting") and notes[1] == "connection back after 1 try: catching up", notes
            assert action_seqs((b"".join(shown) + out).decode().splitlines()) == [1, 2, 3]

    run(scenario(), timeout_s=60)


def test_play_autoplay_notes_a_dropped_connection_on_stderr(engine):
    """clients.play --autoplay (no screen) keeps playing across a drop, and says why it paused:
    one line on stderr when its stream drops, one when it is back (the same hook as watch
    --plain); stdout stays the events', each action once, and its moves go on after it."""
    from .conftest import ADMIN_TOKEN, CuttableProxy

    async def scenario():
        async with cg.connect(engine.target, admin_token=ADMIN_TOKEN) as direct, \
                CuttableProxy(engine.target) as proxy:
            match = await direct.create_match("japanese_joker", seats=[None, None], options={"target_score": 11})
            mine = await direct.join(match.match_id)
            player = await asyncio.create_subprocess_exec(
                sys.executable, "-m", "clients.play", "--target", proxy.target, "--match", match.match_id,
                "--autoplay", "first", cwd=ROOT, env=dict(os.environ, COLUMNS="160", PYTHONUNBUFFERED="1"),
                stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
            try:
                await asyncio.wait_for(player.stdout.readline(), 30)
                # the autoplay's seat has moved or must move: wait until the direct seat is to act
                while (view := await mine.view()).to_act != mine.seat:
                    await asyncio.sleep(0.05)
                proxy.hold()
                proxy.cut()
                await mine.act(lambda v: v.legal_actions[0].notation)
                await asyncio.sleep(0.5)
                proxy.release()
                moved_at = view.seq + 1
                # the autoplay answers once it is back: the match goes past the direct seat's move
                for _ in range(200):
                    if (await mine.view()).seq > moved_at + 1:
                        break
                    current = await mine.view()
                    if current.to_act == mine.seat:
                        await mine.act(lambda v: v.legal_actions[0].notation)
                    await asyncio.sleep(0.05)
                await direct.admin.terminate(match.match_id, "test over")
                out, err = await asyncio.wait_for(player.communicate(), 30)
            finally:
                if player.returncode is None:
                    player.kill()
                    await player.wait()
            assert player.returncode == 0, (out, err)
            notes = err.decode().splitlines()
            assert len(notes) == 2 and notes[0].startswith("connection lost ("), notes
            assert notes[0].endswith("): reconnecting") and notes[1].startswith("connection back after "), notes
            seqs = action_seqs(out.decode().splitlines())
            assert seqs == list(range(1, len(seqs) + 1)) and len(seqs) > moved_at + 1, seqs

    run(scenario(), timeout_s=60)


def test_play_screen_drops_the_reconnecting_line_for_an_error_it_cannot_fix(engine):
    """The seat's token is reissued by the operator while the stream is down: the reopened
    stream is refused (UNAUTHENTICATED / TOKEN_REVOKED), which no reconnection fixes, so the
    line stops saying "reconnecting" and the status line says why the stream failed."""
    from .conftest import ADMIN_TOKEN, CuttableProxy

    async def scenario():
        async with cg.connect(engine.target, admin_token=ADMIN_TOKEN) as direct, \
                CuttableProxy(engine.target) as proxy, cg.connect(proxy.target) as via_proxy:
            match = await direct.create_match("japanese_joker", seats=[None, "random"])
            mine = await direct.join(match.match_id)
            me = via_proxy.seat_session(match.match_id, mine.seat, mine.token)
            app = PlayApp(me, await me.summary())
            async with app.run_test(size=(160, 50)) as pilot:
                await first_action_shown(pilot, app, mine)
                proxy.hold()
                proxy.cut()
                await wait_for(pilot, lambda: banner(app)[0], "the connection-lost line")
                await direct.admin.reissue_seat_token(match.match_id, mine.seat)
                proxy.release()
                await wait_for(pilot, lambda: not banner(app)[0], "the line gone")
                status = str(app.query_one("#status").content)
                assert status.startswith("the stream failed: UNAUTHENTICATED"), status
                assert not app.query_one("#actions").disabled and app.connection is None

    run(scenario(), timeout_s=60)


def test_play_screen_notices_a_drop_while_it_asks_for_the_summary(engine, monkeypatch):
    """A presence event makes the screen ask for the match's summary (names, who is away);
    the connection drops while that call is on its way. The screen still says "connection
    lost" within seconds: the event stream waited for the call, which held it through a
    minute of retries before the stream's own failure could be noticed. (The stream now
    waits ``SUMMARY_WAIT_S`` for it, here a fraction of its 2 s: the bound is the point, not
    its length.)"""
    from .conftest import CuttableProxy, two_seats

    monkeypatch.setattr(play, "SUMMARY_WAIT_S", 0.3)

    async def scenario():
        async with cg.connect(engine.target) as direct, CuttableProxy(engine.target) as proxy, \
                cg.connect(proxy.target) as via_proxy:
            match, sessions, mover = await two_seats(direct)
            me = via_proxy.seat_session(match.match_id, sessions[0].seat, sessions[0].token)
            app = PlayApp(me, await me.summary())
            asked = asyncio.Event()
            real_summary = me.summary

            async def summary_cut_on_its_way():
                asked.set()
                proxy.hold()
                proxy.cut()
                return await real_summary()

            async def opponent_present():
                async for _ in sessions[1].watch():
                    pass

            async with app.run_test(size=(160, 50)) as pilot:
                await first_action_shown(pilot, app, mover)  # whoever's turn: no bot here
                me.summary = summary_cut_on_its_way
                opponent = asyncio.create_task(opponent_present())  # a presence event on my stream
                try:
                    await wait_for(pilot, asked.is_set, "the summary asked for")
                    # held by the summary call's retries, it took 25 s to a minute
                    await wait_for(pilot, lambda: banner(app)[0], "the connection-lost line", timeout_s=5)
                    me.summary = real_summary
                    proxy.release()
                    await wait_for(pilot, lambda: not banner(app)[0], "the connection back")
                finally:
                    opponent.cancel()
                    await asyncio.gather(opponent, return_exceptions=True)

    run(scenario(), timeout_s=60)


def test_names_reach_the_terminal_as_written():
    """Match and player names are anyone's to choose and may read as rich markup: clients.play
    --lobby, clients.play's and clients.watch's last line print them as text. A listed match
    named "[/]" made every --lobby fail (MarkupError), and "[link=URL]...[/link]" wrote a
    hyperlink escape sequence to the terminal."""
    import io

    from google.protobuf import json_format
    from rich.console import Console

    from clients.play import print_lobby, print_result
    from clients.watch import print_final

    from .test_render import MARKUP_NAMES

    for name in MARKUP_NAMES:
        seats = [match_pb2.SeatInfo(seat=0, kind=match_pb2.SEAT_KIND_OPEN, taken=True, player_name=name),
                 match_pb2.SeatInfo(seat=1, kind=match_pb2.SEAT_KIND_OPEN)]
        waiting = match_pb2.MatchSummary(match_id="m1", game="klaberjass", name=name, seats=seats,
                                         status=match_pb2.MATCH_STATUS_WAITING)
        ended = match_pb2.MatchSummary(match_id="m1", game="klaberjass", seats=seats,
                                       status=match_pb2.MATCH_STATUS_FINISHED)
        json_format.ParseDict({"winners": [0], "totals": [21, 3], "outcome": "completed"}, ended.result)
        for show in (lambda c: print_lobby([waiting], "localhost:1", c), lambda c: print_result(ended, 1, c),
                     lambda c: print_final(ended, c)):
            out = io.StringIO()
            console = Console(file=out, width=300, force_terminal=True, record=True)
            show(console)
            assert name in console.export_text() and "\x1b]8;" not in out.getvalue()


def test_the_lobby_says_which_host_is_away():
    """A listed table whose host quit (no stream open) read like one whose host waits at it:
    its seat now says ``(away)``."""
    from clients.play import lobby_seat_text

    assert lobby_seat_text(match_pb2.SeatInfo(kind=match_pb2.SEAT_KIND_OPEN, taken=True, player_name="ada",
                                              present=True)) == "ada"
    assert lobby_seat_text(match_pb2.SeatInfo(kind=match_pb2.SEAT_KIND_OPEN, taken=True,
                                              player_name="ada")) == "ada (away)"
    assert lobby_seat_text(match_pb2.SeatInfo(kind=match_pb2.SEAT_KIND_OPEN)) == "open"
    assert lobby_seat_text(match_pb2.SeatInfo(kind=match_pb2.SEAT_KIND_BOT, bot="search", present=True)) \
        == "search (bot)"


def test_quitting_mid_match_says_how_to_return_to_the_seat(engine, monkeypatch):
    """q mid-match, the connection up: the last line says the match goes on and gives the way
    back (``--match ID --token-file PATH``, the token saved for it), as a lost connection's
    line does; it had none, and the seat token went with the screen (a join takes another
    seat, and a started match has none). That command takes the seat again."""
    import io

    from rich.console import Console

    from clients import play

    async def quit_after_a_move(app):
        async with app.run_test(size=(80, 24)) as pilot:
            await wait_for(pilot, lambda: app._shown_actions and not app.submitting, "my first turn", 30)
            await pilot.press("enter")
            await wait_for(pilot, lambda: app.view_msg.seq >= 1, "my move on the screen", 30)
            await pilot.press("q")

    monkeypatch.setattr(PlayApp, "run_async", quit_after_a_move)
    args = play.build_parser().parse_args(["--target", engine.target, "--game", "japanese_joker", "--bots", "random",
                                           "--option", "target_score=11", "--turn-time", "60", "--name", "ada"])
    out = io.StringIO()
    console = Console(file=out, width=80, soft_wrap=True, highlight=False)
    assert run(play.run(args, engine.target, console), timeout_s=60) == 0
    last = out.getvalue().splitlines()[-1]
    assert "is still active" in last and "you quit without resigning" in last, last
    prefix = f"to return to your seat: python -m clients.play --target {engine.target} --match "
    assert prefix in last, last
    command = last.split("to return to your seat: python -m ", 1)[1].split()
    token_file = command[command.index("--token-file") + 1]
    assert os.stat(token_file).st_mode & 0o077 == 0  # the user's only
    back = cli(*command, "--autoplay", "first")
    os.unlink(token_file)
    assert back.returncode == 0, back.stdout + back.stderr
    assert any(" you: " in line for line in back.stdout.splitlines())
    assert "finished: winners" in back.stdout.splitlines()[-1]


def test_an_empty_token_file_is_one_line(engine, tmp_path):
    """--token-file naming an empty file (or one not text): a usage error naming it, exit status 2. An empty
    one played on: the server answers a request without a token with the public view, and the
    screen showed it as seat 0's ("you", no hand, no actions) and --autoplay "played" a
    finished match to a result, exit status 0."""
    async def create():
        async with cg.connect(engine.target) as client:
            match = await client.create_match("japanese_joker", seats=[None, "random"], options={"target_score": 11})
            await client.join(match.match_id, player_name="ada")
            return match.match_id

    match_id = run(create())
    empty, binary = tmp_path / "empty.token", tmp_path / "binary.token"
    empty.write_text("\n")
    binary.write_bytes(b"\xff\xfe\x00")
    for path, says in ((empty, "is empty"), (binary, "is not text")):
        result = cli("clients.play", "--target", engine.target, "--match", match_id, "--token-file", str(path),
                     "--autoplay", "first")
        assert result.returncode == 2, result.stdout + result.stderr
        assert usage_error(result.stderr, "clients.play") == (f"argument --token-file: the seat token file {path} "
                                                              f"{says}" + (": no seat token" if path == binary else ""))
        assert "Traceback" not in result.stderr and result.stdout == ""


def test_a_token_file_that_holds_no_token_is_refused_before_the_engine_is_reached(tmp_path, monkeypatch, capsys):
    """--token-file was read whole once the engine answered: /dev/zero filled the memory, a
    named pipe no one writes to waited for ever, and a file of megabytes went to the engine as
    the seat's header (one with a character no header carries was gRPC's ExecuteBatchError
    traceback). Read with a limit now (read_bounded), before any connection: a usage error
    naming the file, exit status 2, never the token."""
    def no_engine(*args, **kwargs):
        raise AssertionError("the engine was reached")

    monkeypatch.setattr(play, "connect", no_engine)
    large, pipe = tmp_path / "large.token", tmp_path / "pipe.token"
    large.write_text("a" * (64 * 1024 + 1))
    os.mkfifo(pipe)
    odd = tmp_path / "odd.token"
    odd.write_text("s3cret-t\u00f6ken-line-one\nline-two\n")
    for path, says in ((large, f"the seat token file {large}: larger than 65536 bytes"),
                       ("/dev/zero", "the seat token file /dev/zero: a device, not a regular file"),
                       (tmp_path, f"the seat token file {tmp_path}: a directory, not a regular file"),
                       (pipe, f"the seat token file {pipe} is empty"),  # no writer: nothing in it
                       # gRPC refused the header in this process: an ExecuteBatchError traceback
                       (odd, f"the seat token file {odd} has characters a seat token never has (spaces, "
                        "control or non-ASCII characters): no seat token")):
        with pytest.raises(SystemExit) as refused:
            play.main(["--target", "127.0.0.1:1", "--match", "M", "--token-file", str(path), "--autoplay", "first"])
        err = capsys.readouterr().err
        assert refused.value.code == 2 and usage_error(err, "clients.play") == f"argument --token-file: {says}", err
        assert "s3cret" not in err


def test_the_way_back_survives_a_seat_token_file_that_cannot_be_written(tmp_path, monkeypatch):
    """The seat token of a screen that lost its connection (or quit) is saved to a file for the
    way back; a full disk or a missing temporary folder made that an OSError traceback, and the
    token, held by the screen only, was lost with the seat. The line gives the token itself
    then, on the player's own terminal, and leaves no empty or half-written file."""
    import errno
    import tempfile
    from types import SimpleNamespace

    session = SimpleNamespace(match_id="M1", seat=1, token="t0ken-of-seat-1")
    args = play.build_parser().parse_args(["--target", "engine.test:50051", "--match", "M1"])
    real_fdopen = os.fdopen

    class FullDisk:
        def __init__(self, fd, *args, **kwargs):
            self.file = real_fdopen(fd, *args, **kwargs)

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.file.close()

        def write(self, text):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    with monkeypatch.context() as m:
        m.setattr(os, "fdopen", FullDisk)
        line = play.way_back(session, args, "engine.test:50051")
    assert line == ("to return to your seat: your seat token could not be saved to a file (No space left on "
                    "device): it is t0ken-of-seat-1; put it in a file only you can read, then python -m "
                    "clients.play --target engine.test:50051 --match M1 --token-file FILE"), line
    assert list(tmp_path.iterdir()) == []
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "gone"))
    assert "could not be saved to a file (No such file or directory): it is t0ken-of-seat-1;" in \
        play.way_back(session, args, "engine.test:50051")
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    saved = play.way_back(session, args, "engine.test:50051")  # as before when the file is written
    token_file = saved.rsplit(" ", 1)[-1]
    assert "t0ken" not in saved and open(token_file).read() == "t0ken-of-seat-1\n"


def _resigned_match(engine) -> str:
    """The id of a Japanese Joker match its player resigned (over, with a log to replay)."""
    async def finished():
        async with cg.connect(engine.target) as client:
            match = await client.create_match("japanese_joker", seats=[None, "random"], options={"target_score": 11})
            me = await client.join(match.match_id, player_name="ada")
            await me.leave(resign=True)
            return match.match_id

    return run(finished())


def test_an_output_on_a_full_disk_is_one_line_not_a_traceback(engine):
    """``clients.play --list > FILE`` or ``clients.watch --plain ... > FILE`` on a full disk
    (/dev/full here): rich's OSError traceback; one line on stderr now, exit status 1
    (engine_service.command_line.stdout_guarded, as clients.admin and replay)."""
    match_id = _resigned_match(engine)
    for unbuffered in (True, False):  # each print fails, or (as from a shell) the flush at the end
        env = dict(os.environ, COLUMNS="160", PYTHONUNBUFFERED="1")
        if not unbuffered:
            del env["PYTHONUNBUFFERED"]
        for argv in (["clients.play", "--target", engine.target, "--list"],
                     ["clients.watch", match_id, "--target", engine.target, "--plain", "--from-start"]):
            with open("/dev/full", "w") as full:
                result = subprocess.run([sys.executable, "-m", *argv], stdout=full, stderr=subprocess.PIPE,
                                        text=True, timeout=120, cwd=ROOT, env=env, stdin=subprocess.DEVNULL)
            assert (result.returncode, result.stderr) == (1, "error: cannot write standard output (No space left "
                                                              "on device)\n"), (unbuffered, argv, result.stderr)


def test_joining_a_finished_match_says_how_to_watch_it(engine):
    """--match naming a match that is over: one line that says so and gives the command that
    replays it (clients.watch --from-start), exit status 1; it said only MATCH_NOT_ACTIVE."""
    match_id = _resigned_match(engine)
    result = cli("clients.play", "--target", engine.target, "--match", match_id, "--autoplay", "first")
    assert result.returncode == 1, result.stdout + result.stderr
    (line,) = result.stderr.strip().splitlines()
    assert "MATCH_NOT_ACTIVE" in line and "Traceback" not in result.stderr
    assert line.endswith(f"replay it with: python -m clients.watch {match_id} --target {engine.target} --from-start")


def test_autoplay_lines_are_not_folded_in_a_pipe(engine):
    """--autoplay for scripts: each line whole in a pipe of a default width (80 columns), the
    spectator command and the result included; the console folded them, and a script read
    ``python -m`` on one line and ``clients.watch ID`` on the next."""
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    env.pop("COLUMNS", None)
    result = subprocess.run([sys.executable, "-m", "clients.play", "--target", engine.target, "--game", "jojotte",
                             "--bots", "random", "--name", "ada", "--autoplay", "first"], capture_output=True,
                            text=True, timeout=180, cwd=ROOT, env=env, stdin=subprocess.DEVNULL)
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith("match ") and lines[0].endswith(f"--target {engine.target}"), lines[:2]
    assert lines[1].split()[0].isdigit(), lines[:2]
    assert lines[-1].startswith("match ") and "finished: winners" in lines[-1] and lines[-1].endswith("}"), lines[-2:]
    # the totals as JSON, which a script reads (Python's repr was {'below': [...], ...})
    assert set(json.loads(lines[-1].split("; totals ", 1)[1])) == {"below", "above", "games_won"}, lines[-1]


def test_play_screen_keeps_the_legal_actions_in_view_late_in_a_jo_jotte_match(engine):
    """On 80x24, a Jo-Jotte board with everything on it (a four-call auction over two lines,
    a redoubled contract, melds, the trick and the last trick, large scores) pushed the
    actions' box below the bottom edge; the board now drops its blank lines, and is cut if
    need be, so that the actions keep their rows (and the resize back gives them back)."""
    from google.protobuf import json_format

    async def scenario():
        async with cg.connect(engine.target) as client:
            match = await client.create_match("jojotte", seats=[None, "random"], turn_time_s=0)
            me = await client.join(match.match_id, player_name="ada")
            app = PlayApp(me, await me.summary())
            async with app.run_test(size=(80, 24)) as pilot:
                await wait_for(pilot, lambda: app._shown_actions and not app.submitting, "my first turn", 30)
                view = match_pb2.View()
                view.CopyFrom(app.view_msg)
                table = render.struct_dict(view.table)
                table.update({
                    "auction": [{"seat": 0, "call": "name:C"}, {"seat": 1, "call": "no_trump"},
                                {"seat": 0, "call": "double"}, {"seat": 1, "call": "redouble"}],
                    "contract": {"kind": "slam", "strain": "NT", "play_strain": "NT", "multiplier": 4,
                                 "holder": 1, "declarer": 1},
                    "melds": {"points": [70, 0]}, "info_card": "KS", "turn_up": "7S",
                    "match": dict(table.get("match") or {}, game_points=[55, 0], game_target=80)})
                view.table.Clear()
                json_format.ParseDict(table, view.table)
                del view.scores.totals[:]
                for name, values in (("below", [55, 345]), ("above", [400, 12700]), ("games_won", [0, 1])):
                    view.scores.totals.add(name=name, values=values)
                view.trick.plays.add(seat=1).card.code = "TC"
                for seat, code in ((1, "9C"), (0, "8C")):
                    view.last_trick.plays.add(seat=seat).card.code = code
                view.last_trick.winner = 1
                view.trick_history.add().CopyFrom(view.last_trick)
                view.seq += 1000  # no event of the match (a presence change) replaces it
                app.view_msg = view
                app.redraw()
                await pilot.pause()  # its layout
                text = "\n".join(str(line) for line in app.board.renderables)  # the board's parts
                assert app._shown_actions and "contract" in text
                shown = app.query_one("#actions").content_region
                assert shown.y + shown.height <= 24 - 2, f"the actions end below the screen: {shown}"
                assert shown.height >= min(3, len(app._shown_actions)), f"too few rows for the actions: {shown}"
                await pilot.resize_terminal(80, 18)  # shorter still: the board is cut, not the actions
                await refitted(pilot, app)
                shown = app.query_one("#actions").content_region
                assert shown.y + shown.height <= 18 - 2 and shown.height >= min(3, len(app._shown_actions)), shown
                await pilot.resize_terminal(80, 14)  # the fitted board is still too tall: cut to its room
                await refitted(pilot, app)
                board = app.query_one("#board").region
                assert board.height == 14 - 2 - app.MIN_ACTION_ROWS, (board, app.board.renderables)
                shown = app.query_one("#actions").content_region
                assert shown.y + shown.height <= 14 - 2 and shown.height >= min(3, len(app._shown_actions)), shown
                await pilot.resize_terminal(120, 45)  # room again: the blank lines are back
                await refitted(pilot, app)
                assert any(str(part) == "" for part in app.board.renderables)

    run(scenario(), timeout_s=60)


def test_autoplay_prints_each_deal_result_and_a_name_of_its_own(engine):
    """--autoplay printed who played what and the final totals, never what a deal scored
    (clients.watch --plain prints it); now one line per scored deal, the totals its sum. And
    without --name the player was called "you" (the name every screen gives its own seat), so
    the other players, the spectators and the lobby saw a player "you": it is a guest name, never
    the login name (an account name shown to strangers)."""
    env = dict(os.environ, COLUMNS="160", PYTHONUNBUFFERED="1", LOGNAME="ada-login", USER="ada-login")
    result = subprocess.run([sys.executable, "-m", "clients.play", "--target", engine.target, "--game",
                             "japanese_joker", "--bots", "random", "--option", "target_score=11",
                             "--autoplay", "first"], capture_output=True, text=True, timeout=180, cwd=ROOT,
                            env=env, stdin=subprocess.DEVNULL)
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    deals = [line.strip() for line in lines if " scored: " in line]
    assert deals and deals[0].startswith("deal 1 scored: you "), deals
    assert [int(d.split()[1]) for d in deals] == list(range(1, len(deals) + 1))
    mine = sum(int(d.split(": you ", 1)[1].split()[0]) for d in deals)  # "you 8 (13 tricks), ..."
    totals = lines[-1].rsplit("totals ", 1)[1]
    assert totals.startswith(f"[{mine}, "), (deals, lines[-1])
    match_id = lines[0].split()[1].rstrip(":")

    async def names():
        async with cg.connect(engine.target) as client:
            return [s.player_name for s in (await client.get_match(match_id)).seats]

    assert re.fullmatch(r"guest-[0-9a-f]{4}", run(names())[0])


def test_watch_screen_keeps_the_event_log_in_view_on_a_small_terminal(engine):
    """The spectator on 80x24, six Georgian Joker deals scored: the deal results took every
    row below the board, the event log kept its top border only and the screen scrolled; they
    now give way to the log (as the player's screen gives way to the actions), and come back
    on a taller terminal."""

    async def scenario():
        async with cg.connect(engine.target) as client:
            match = await client.create_match("georgian_joker", seats=[None] * 4)
            seats = [await client.join(match.match_id, player_name=f"player {n}") for n in range(4)]
            rng = random.Random(3)
            while True:
                view = await seats[0].view()
                if len(view.scores.deal_results.values) >= 6 and view.phase == "playing":
                    break
                await seats[view.to_act].act(lambda v: rng.choice(cg.legal_notations(v)))
            app = WatchApp(client.spectate(match.match_id), None, summary=await client.get_match(match.match_id))
            async with app.run_test(size=(80, 24)) as pilot:
                await wait_for(pilot, lambda: app.view_msg is not None, "the snapshot on screen")
                await pilot.pause()  # its layout (the screen redraws with each event)
                log = app.query_one("#log").region
                assert log.y + log.height <= 24 - 1 and log.height >= 5, f"the event log is squeezed out: {log}"
                await pilot.resize_terminal(120, 45)
                await wait_for(pilot, lambda: app.query_one("#deals").display, "the deal results back")
                assert "deals" in screen_text(app)

    run(scenario(), timeout_s=120)


def test_autoplay_keeps_playing_when_a_move_goes_unanswered(monkeypatch):
    """--autoplay while the engine restarts: a move whose sending found no engine (UNAVAILABLE
    after the library's retries) ended the program with "error: UNAVAILABLE" and status 1,
    though its stream reconnects by itself (README: "it keeps trying"); it now decides again on
    the next event. And a player who joined after the start is named from the presence event
    (it stayed "seat 1 (open)" to the end)."""
    import io

    from rich.console import Console

    from clients import play
    from engine_service.transport.generated import card_games_pb2, cards_pb2

    def view(seq, to_act):
        v = match_pb2.View(match_id="m1", seat=0, seq=seq, to_act=to_act, status=match_pb2.MATCH_STATUS_ACTIVE,
                           hand_sizes=[1, 1])
        v.legal_actions.add(notation="play:AS", kind=cards_pb2.ACTION_KIND_PLAY).card.code = "AS"
        return v

    def summary(second_name):
        s = match_pb2.MatchSummary(match_id="m1", status=match_pb2.MATCH_STATUS_ACTIVE)
        s.seats.add(seat=0, kind=match_pb2.SEAT_KIND_OPEN, taken=True, player_name="ada")
        s.seats.add(seat=1, kind=match_pb2.SEAT_KIND_OPEN, taken=bool(second_name), player_name=second_name)
        return s

    class Session:
        seat, match_id = 0, "m1"

        def __init__(self):
            self.sent = []
            self.joined = False

        async def watch(self, **_):
            yield card_games_pb2.WatchMatchResponse(kind=match_pb2.EVENT_KIND_PRESENCE, seq=0, seat=1,
                                                    reason="connected")
            action = cards_pb2.Action(notation="play:KS", kind=cards_pb2.ACTION_KIND_PLAY)
            action.card.code = "KS"
            yield card_games_pb2.WatchMatchResponse(kind=match_pb2.EVENT_KIND_ACTION, seq=1, seat=1, action=action,
                                                    view=view(1, 0))
            yield card_games_pb2.WatchMatchResponse(kind=match_pb2.EVENT_KIND_HEARTBEAT, seq=1)
            yield card_games_pb2.WatchMatchResponse(kind=match_pb2.EVENT_KIND_MATCH_ENDED, seq=2, reason="completed")

        async def act(self, decide, v):
            self.sent.append(decide(v))
            if len(self.sent) == 1:
                raise cg.CardGamesError(grpc.StatusCode.UNAVAILABLE, "failed to connect to all addresses")
            return card_games_pb2.SubmitActionResponse(seq=2)

        async def view(self):
            return view(1, 0)

        async def summary(self):
            return summary("bob")

    session = Session()
    out = io.StringIO()
    final = run(play.autoplay(session, "first", Console(file=out, width=200), summary(""), None))
    assert session.sent == ["play:AS", "play:AS"], session.sent  # decided again on the heartbeat
    assert final.match_id == "m1"
    assert "   1 bob: play K♠" in out.getvalue().splitlines(), out.getvalue()


def test_play_screen_says_it_waits_for_a_player_and_how_they_join(engine):
    """A table with an open seat (--bots open) showed "phase dealing" and nothing else until
    someone came: no word that it waits, nor the command the other player needs. The header
    says it waits for seat 1, the log gives the --match command; both go once the match starts."""

    async def scenario():
        async with cg.connect(engine.target) as client:
            match = await client.create_match("klaberjass", seats=[None, None])
            me = await client.join(match.match_id, seat=0, player_name="ada")
            app = PlayApp(me, await me.summary())
            async with app.run_test(size=(80, 24)) as pilot:
                await wait_for(pilot, lambda: app.board is not None, "the board")
                await pilot.pause()  # the log's layout
                assert "waiting for a player in seat 1" in screen_text(app).splitlines()[0]
                joined = " ".join(" ".join(log_lines(app)).split())  # the log wraps its lines
                assert f"python -m clients.play --target {engine.target} --match {match.match_id}" in joined, joined
                await client.join(match.match_id, seat=1, player_name="bob")
                await wait_for(pilot, lambda: app.view_msg.status == match_pb2.MATCH_STATUS_ACTIVE, "the start")
                assert "waiting" not in screen_text(app).splitlines()[0]  # redrawn with the view that started it

    run(scenario(), timeout_s=60)


def test_the_errors_found_before_the_engine_is_asked_say_error_too(engine):
    """A wrong --option, --bots count or --seat: one line on stderr, status 1, starting
    "error:" as the engine's refusals do (they had no prefix, so a script telling an error
    line by it missed them)."""
    for args, says in ((["--game", "klaberjass", "--option", "target_score=11"], "klaberjass has no option"),
                       (["--game", "klaberjass", "--option", "kl_schmeiss=yes"], "kl_schmeiss is true or false"),
                       (["--game", "klaberjass", "--bots", "random,random"], "Klaberjass has 2 seats: give 1 bot (or"),
                       (["--game", "klaberjass", "--seat", "5"], "klaberjass has seats 0 to 1"),
                       (["--game", "poker"], "unknown game 'poker'"),
                       (["--game", "klaberjass", "--bots", "smart"], "INVALID_ARGUMENT UNKNOWN_BOT")):
        result = cli("clients.play", "--target", engine.target, *args, "--autoplay", "first")
        assert result.returncode == 1 and result.stdout == "", (args, result)
        lines = result.stderr.splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: ") and says in lines[0], (args, lines)


def test_play_screen_keeps_the_last_deals_results_on_a_small_terminal(engine):
    """On 80x24 the deal results gave way whole to the actions once they were taller than the
    room left, after three Japanese Joker deals, and no deal's result was on screen again: as
    many of the last deals as fit are shown (the last one at least), the actions keep their rows."""

    async def four_deals_in(client, rng):
        """Seats of a match with four deals scored and seat 0 to play; None when the match
        ended before (a player can reach 31 in three deals: the decks are the server's)."""
        match = await client.create_match("japanese_joker", seats=[None, None], options={"target_score": 31})
        seats = [await client.join(match.match_id, player_name=f"p{n}") for n in range(2)]
        while True:
            view = await seats[0].view()
            if cg.is_finished(view.status):
                return None, view
            if (len(view.scores.deal_results.values) >= 4 and cg.is_my_turn(view)
                    and view.phase == "playing" and len(view.legal_actions) >= 2):
                return seats, view
            await seats[view.to_act].act(lambda v: rng.choice(cg.legal_notations(v)))

    async def scenario():
        async with cg.connect(engine.target) as client:
            rng = random.Random(5)
            for _ in range(5):
                seats, view = await four_deals_in(client, rng)
                if seats is not None:
                    break
            assert seats is not None, "five matches ended within three deals"
            scored = len(view.scores.deal_results.values)
            app = PlayApp(seats[0], await seats[0].summary())
            async with app.run_test(size=(80, 24)) as pilot:
                await wait_for(pilot, lambda: app._shown_actions, "the legal actions")
                await pilot.pause(0.3)
                shown = app.query_one("#actions").content_region
                assert shown.y + shown.height <= 24 - 2 and shown.height >= min(3, len(app._shown_actions)), shown
                assert app.query_one("#deals").display, "no deal result on screen"
                rows = [line.split() for line in screen_text(app).splitlines()]
                assert any(row and row[0] == str(scored) for row in rows), "the last deal is not shown"
                lost = cg.StreamState(cg.RECONNECTING, 1, 30)
                app.on_connection(lost)  # the connection line's row comes from the deal results
                await pilot.pause()
                screen = screen_rows(app)
                assert screen[0].strip() == render.connection_text(lost), screen
                box = next(i for i, row in enumerate(screen) if row.startswith("╭─ your actions"))
                assert box + app.MIN_ACTION_ROWS <= 24 - 2, screen  # the actions keep their rows
                shown = app.query_one("#actions").content_region
                assert shown.y + shown.height <= 24 - 2 and shown.height >= min(3, len(app._shown_actions)), shown

    run(scenario(), timeout_s=120)


def test_play_screen_names_the_cards_of_a_dix_exchange(engine):
    """The dix holder's actions read "1. exchange  2. keep" (Klaberjass's ``exchange`` names no
    card): the screen now says which seven goes and which turn-up comes in (KL-4.1)."""
    from google.protobuf import json_format

    from engine_service.transport.codec import action_message

    async def scenario():
        async with cg.connect(engine.target) as client:
            match = await client.create_match("klaberjass", seats=[None, "random"], turn_time_s=0)
            me = await client.join(match.match_id, player_name="ada")
            app = PlayApp(me, await me.summary())
            async with app.run_test(size=(80, 24)) as pilot:
                await wait_for(pilot, lambda: app._shown_actions and not app.submitting, "my first turn", 30)
                view = match_pb2.View()
                view.CopyFrom(app.view_msg)
                table = render.struct_dict(view.table)
                table.update({"trump": "S", "turn_up": "KS", "exchange": None, "auction_state": None})
                view.table.Clear()
                json_format.ParseDict(table, view.table)
                del view.legal_actions[:]
                view.legal_actions.extend([action_message("exchange"), action_message("keep")])
                view.seq += 1000  # no event of the match replaces it
                app.view_msg = view
                app.redraw()
                await pilot.pause(0.3)
                options = app.query_one("#actions")
                labels = [str(options.get_option_at_index(i).prompt) for i in range(options.option_count)]
                assert labels == ["1. exchange 7♠ for the turn-up K♠", "2. keep (no exchange)"], labels

    run(scenario(), timeout_s=60)


def full_jojotte_board(base):
    """``base`` (a Jo-Jotte view) with everything a deal's board can show at once: an
    exchange, a four-call auction, a redoubled contract, melds, jo-jotte, a frozen pot, large
    totals, the trick and the last trick."""
    from google.protobuf import json_format

    view = match_pb2.View()
    view.CopyFrom(base)
    table = render.struct_dict(view.table)
    table.update({
        "auction": [{"seat": 0, "call": "name:C"}, {"seat": 1, "call": "no_trump"},
                    {"seat": 0, "call": "double"}, {"seat": 1, "call": "redouble"}],
        "auction_state": None,
        "contract": {"kind": "normal", "strain": "NT", "play_strain": "NT", "multiplier": 4,
                     "holder": 1, "declarer": 1},
        "melds": {"points": [0, 160], "dialogue": [
            {"seat": 1, "say": "scores", "quartets": ["A"], "points": 100},
            {"seat": 1, "say": "scores", "points": 60, "sequences": [
                {"suit": "S", "top": "K", "length": 3}, {"suit": "H", "top": "Q", "length": 4}]}]},
        "info_card": "KS", "turn_up": "7S", "exchange": {"seat": 1, "seven": "7S", "turn_up": "QS"},
        "jo_jotte": [0, 20],
        "match": dict(table.get("match") or {}, game_points=[55, 0], game_target=80, pot=70)})
    view.table.Clear()
    json_format.ParseDict(table, view.table)
    del view.scores.totals[:]
    for name, values in (("below", [55, 345]), ("above", [400, 12700]), ("games_won", [0, 1])):
        view.scores.totals.add(name=name, values=values)
    view.trick.plays.add(seat=1).card.code = "TC"
    for seat, code in ((1, "9C"), (0, "8C")):
        view.last_trick.plays.add(seat=seat).card.code = code
    view.last_trick.winner = 1
    view.trick_history.add().CopyFrom(view.last_trick)
    view.seq += 1000  # no event of the match replaces it
    return view


def test_play_screen_keeps_the_hand_on_a_full_jo_jotte_board(engine):
    """On a short terminal (80x22; 80x24 while the connection line shows) the board is cut at
    its bottom to leave the actions their rows, and its bottom row is the hand: a Jo-Jotte
    board with an exchange, a four-call auction, a redoubled contract, melds, jo-jotte, a pot
    and both tricks lost "your hand". Lines that repeat what another says (the information
    card, the auction once the contract line stands, the last trick) now give way first."""
    async def scenario():
        async with cg.connect(engine.target) as client:
            match = await client.create_match("jojotte", seats=[None, "heuristic"], turn_time_s=0)
            me = await client.join(match.match_id, player_name="ada")
            app = PlayApp(me, await me.summary())
            async with app.run_test(size=(80, 22)) as pilot:
                await wait_for(pilot, lambda: app._shown_actions and not app.submitting, "my first turn", 30)
                view = full_jojotte_board(app.view_msg)
                for _ in range(20):
                    app.view_msg = view
                    app.redraw()
                    await pilot.pause(0.3)
                    if app.view_msg is view:
                        break  # else an event of the real match (a presence change) came in: again
                assert app.view_msg is view
                screen = "\n".join(screen_rows(app))
                assert "your hand:" in screen and "trick: " in screen and "contract:" in screen, screen
                shown = app.query_one("#actions").content_region
                assert shown.y + shown.height <= 22 - 2 and shown.height >= min(3, len(app._shown_actions)), shown

    run(scenario(), timeout_s=60)


def test_autoplay_says_how_each_klaberjass_deal_came_to_its_score(engine):
    """--autoplay printed "deal 1 scored: you 0, bot 169" and no more: not the deal totals
    compared (KL-9.1), what they were made of, nor that the maker had less. Each scored deal
    is now followed by its breakdown, whose totals give the entries of KL-9.2 to 9.4."""
    result = cli("clients.play", "--target", engine.target, "--game", "klaberjass", "--bots", "heuristic",
                 "--option", "kl_target_score=150", "--autoplay", "random", "--seed", "4", "--name", "ada")
    assert result.returncode == 0, result.stdout + result.stderr
    lines = [line.strip() for line in result.stdout.splitlines()]
    scored = [i for i, line in enumerate(lines) if re.match(r"deal \d+ scored: ", line)]
    assert scored, lines
    for i in scored:
        number = lines[i].split()[1]
        why = lines[i + 1]
        assert why.startswith(f"deal {number}: "), (lines[i], why)
        if why.endswith("thrown in, nobody scores"):
            continue
        entries = [int(x) for x in re.findall(r"(?:you|\)) (\d+)", lines[i])]
        totals = [int(x) for x in re.findall(r"(?:you|\)) (\d+)(?: \(|,| —)", why)]
        assert len(entries) == len(totals) == 2, (lines[i], why)
        maker = 0 if "maker you" in why else 1
        if why.endswith("the maker has more"):  # KL-9.2
            assert entries == totals, (lines[i], why)
        elif why.endswith("the opponent has more"):  # KL-9.4
            assert entries[maker] == 0 and entries[1 - maker] == sum(totals), (lines[i], why)
        else:  # KL-9.3
            assert why.endswith("equal totals: the maker scores nothing") and entries[maker] == 0, why


def test_watch_screen_keeps_the_event_log_beside_a_full_jo_jotte_board(engine):
    """The spectator's board was never compacted: a full Jo-Jotte board on 80x24 took the
    event log's rows. It now gives up its blank lines and spare lines as the player's does."""

    async def scenario():
        async with cg.connect(engine.target) as client:
            match = await client.create_match("jojotte", seats=[None, "heuristic"], turn_time_s=0)
            await client.join(match.match_id, player_name="ada")
            app = WatchApp(client.spectate(match.match_id), None, summary=await client.get_match(match.match_id))
            async with app.run_test(size=(80, 24)) as pilot:
                await wait_for(pilot, lambda: app.view_msg is not None, "the snapshot on screen")
                view = full_jojotte_board(app.view_msg)
                view.ClearField("seat")
                del view.hand[:]
                for _ in range(20):
                    app.view_msg = view
                    app.redraw()
                    await pilot.pause(0.3)
                    if app.view_msg is view:
                        break  # else an event of the real match came in: again
                assert app.view_msg is view
                log = app.query_one("#log").region
                assert log.y + log.height <= 24 - 1 and log.height >= 5, f"the event log is squeezed out: {log}"
                assert "contract:" in screen_text(app) and "trick: " in screen_text(app)

    run(scenario(), timeout_s=60)


def test_watch_screens_red_line_takes_its_row_from_the_board_not_the_log():
    """The connection-lost line at the top of the spectator's screen (README, clients.watch)
    takes its row from the board, which is fitted again to the rows left: on 80x20, where a
    full Jo-Jotte board is cut to fit, the event log keeps its rows (WatchApp.MIN_LOG_ROWS)
    and stays on screen."""
    base = match_pb2.View(game="jojotte", hand_sizes=[8, 8], to_act=0, phase="playing", seq=9,
                          status=match_pb2.MATCH_STATUS_ACTIVE)
    spectator = _ScreenSpectator([card_games_pb2.WatchMatchResponse(
        kind=match_pb2.EVENT_KIND_SNAPSHOT, seq=9, view=full_jojotte_board(base))], ["ada", "bob"])

    async def scenario():
        app = WatchApp(spectator, None, summary=await spectator.summary())
        async with app.run_test(size=(80, 20)) as pilot:
            await wait_for(pilot, lambda: app.board is not None, "the board")
            lost = cg.StreamState(cg.RECONNECTING, 1, 30)
            app.on_connection(lost)
            app.redraw()  # as its half-second tick does
            await pilot.pause()
            assert screen_rows(app)[0].strip() == render.connection_text(lost)
            log = app.query_one("#log").region
            assert log.y + log.height <= 20 - 1 and log.height >= app.MIN_LOG_ROWS, f"the event log is squeezed: {log}"

    run(scenario(), timeout_s=60)


def test_the_connection_sign_logs_each_change_and_shows_the_red_line_while_down():
    """ConnectionSign (clients.play and clients.watch): a log line where the stream drops (its
    first try only, with the error) and where it comes back, none for the later tries or the
    end; the red ``#connection`` line shown while the stream is down or given up, hidden once it
    is back; ``lost`` only once it is given up (the screen then closes, "lost for good")."""
    from types import SimpleNamespace

    from textual.css.query import NoMatches

    from clients.connection_sign import ConnectionSign

    class Widget(SimpleNamespace):
        def write(self, line):
            self.lines.append(str(line))

        def update(self, text):
            self.text = text

    class Screen(ConnectionSign):
        def __init__(self, widgets):
            self.widgets = widgets

        def query_one(self, selector, kind):
            if selector not in self.widgets:
                raise NoMatches(selector)
            return self.widgets[selector]

    log, banner = Widget(lines=[]), Widget(text=None, display=False)
    screen = Screen({"#log": log, "#connection": banner})
    error = cg.CardGamesError(grpc.StatusCode.UNAVAILABLE, "the engine went away")
    dropped, again = cg.StreamState(cg.RECONNECTING, 1, 3, error), cg.StreamState(cg.RECONNECTING, 2, 3, error)
    assert screen.connection is None and not screen.lost
    screen.on_connection(dropped)
    assert log.lines == ["     connection lost (UNAVAILABLE: the engine went away): reconnecting"]
    assert banner.display and banner.text == render.connection_text(dropped) and not screen.lost
    screen.on_connection(again)
    assert len(log.lines) == 1 and banner.display and banner.text == render.connection_text(again)
    screen.on_connection(cg.StreamState(cg.RESUMED, 2, 3))
    assert log.lines[1:] == ["     connection back after 2 tries: catching up"]
    assert screen.connection is None and not banner.display and banner.text == "" and not screen.lost
    screen.on_connection(dropped)
    gave_up = cg.StreamState(cg.GAVE_UP, 3, 3, error)
    screen.on_connection(gave_up)
    assert len(log.lines) == 3 and screen.lost and screen.connection is gave_up
    assert banner.display and banner.text == "connection lost for good after 3 tries"
    bare = Screen({})  # a screen without the widgets (not mounted yet, or closing) is no error
    bare.on_connection(dropped)
    assert bare.connection is dropped and not bare.lost


def test_watch_plain_says_how_a_klaberjass_deal_came_to_its_score(engine):
    """The spectator's --plain output printed each deal's entries alone; like --autoplay it now
    adds the deal's breakdown (KL-9.1 totals, who had more)."""

    async def scenario():
        async with cg.connect(engine.target) as client:
            match = await client.create_match("klaberjass", seats=[None, None], options={"kl_target_score": 1})
            sessions = [await client.join(match.match_id, seat=n) for n in range(2)]
            watcher = await asyncio.create_subprocess_exec(
                sys.executable, "-m", "clients.watch", match.match_id, "--target", engine.target, "--plain",
                "--from-start", cwd=ROOT, env=dict(os.environ, COLUMNS="160"),
                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
            rng = random.Random(2)
            while not (view := await sessions[0].view()).over:
                await sessions[view.to_act].act(lambda v: rng.choice(cg.legal_notations(v)))
            out, err = await asyncio.wait_for(watcher.communicate(), 60)
            return watcher.returncode, out.decode(), err.decode()

    code, out, err = run(scenario(), timeout_s=120)
    assert code == 0, err
    lines = [line.strip() for line in out.splitlines()]
    played = [line for line in lines if re.match(r"deal \d+: trump ", line)]
    assert played and re.search(r"maker seat \d: seat 0 \d+.*, seat 1 \d+.* — the (maker|opponent) has more"
                                r"|equal totals", played[-1]), lines


def deal_table_rows(lines: list[str]) -> list[tuple[int, list[str]]]:
    """The rows of the deal results tables in ``lines`` (``--plain`` output): each row's deal
    number and its cells ("points (taken/bid)", one per seat), in the order printed. A table
    is its title, ``deals: points (tricks taken/bid)``, the ``#`` header, then one row per deal."""
    rows: list[tuple[int, list[str]]] = []
    state = "outside"
    for line in lines:
        if line.strip() == "deals: points (tricks taken/bid)":
            state = "title"
        elif state == "title" and line.split()[:1] == ["#"]:
            state = "rows"
        elif state == "rows" and (row := re.fullmatch(r"\s*(\d+)((?:\s+-?\d+ \(\d+/\d+\))+)\s*", line)):
            rows.append((int(row[1]), re.findall(r"-?\d+ \(\d+/\d+\)", row[2])))
        else:
            state = "outside"
    return rows


def test_plain_output_on_a_stream_without_the_suit_symbols(engine):
    """Under a non-UTF-8 locale (here PYTHONIOENCODING=ascii, as a latin-1 terminal or a log
    opened in another encoding) ``clients.watch --plain`` (and ``clients.play --autoplay``,
    the same consoles) ended with UnicodeEncodeError at the first suit symbol: the suits are
    written in the rulebook's letters (``10H``, ``trump S``) and the output goes on.

    The output is read until the second deal's row of the deal results table, the last thing
    the two deals played make the watcher print (the match then waits for its players: the
    next line came only when the engine's reconnect grace ran out and a bot took a seat)."""

    async def play_two_deals():
        async with cg.connect(engine.target) as client:
            match = await client.create_match("georgian_joker", seats=[None] * 4)
            seats = [await client.join(match.match_id, player_name=f"p{n}") for n in range(4)]
            rng = random.Random(2)
            while len((view := await seats[0].view()).scores.deal_results.values) < 2:
                await seats[view.to_act].act(lambda v: rng.choice(cg.legal_notations(v)))
            return match.match_id

    match_id = run(play_two_deals())
    watcher = subprocess.Popen([sys.executable, "-m", "clients.watch", match_id, "--target", engine.target,
                                "--plain", "--from-start"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               cwd=ROOT, env=dict(os.environ, COLUMNS="160", PYTHONIOENCODING="ascii"))
    hang_guard = threading.Timer(120, watcher.kill)  # a watcher that never prints deal 2: EOF, not a hang
    hang_guard.start()
    lines: list[str] = []
    try:
        while not any(number == 2 for number, _ in deal_table_rows(lines)):
            raw = watcher.stdout.readline()
            if not raw:
                break
            lines.append(raw.decode("ascii"))  # every byte ASCII: the decode itself is the check
    finally:
        hang_guard.cancel()
        watcher.kill()
        err = watcher.stderr.read().decode("ascii", errors="replace")
    assert "UnicodeEncodeError" not in err, err
    plays = [line for line in lines if ": play " in line]
    assert plays and all(re.search(r"play (Joker[12]|(10|[2-9AKQJ])[SHDC])", line) for line in plays), lines
    assert any("trump" in line or "bid" in line for line in lines)
    rows = deal_table_rows(lines)
    assert [number for number, _ in rows] == [1, 2], lines  # each deal once, as it was scored
    assert all(len(cells) == 4 for _, cells in rows), lines  # one "points (taken/bid)" per seat


def test_the_fallback_console_writes_suits_as_letters(monkeypatch):
    """The console the outputs without a screen use: suits, arrows and dashes in ASCII where
    the stream cannot encode them, untouched where it can."""
    import io

    from clients import terminal_text

    raw = io.BytesIO()
    monkeypatch.setattr(sys, "stdout", io.TextIOWrapper(raw, encoding="ascii", write_through=True))
    console = terminal_text.console(highlight=False, soft_wrap=True)
    console.print(render.card_text("TH").append(" → ").append_text(render.card_text("AS")).append(" — ✓"))
    assert raw.getvalue().decode("ascii").strip() == "10H -> AS - ?"
    utf8 = io.BytesIO()
    monkeypatch.setattr(sys, "stdout", io.TextIOWrapper(utf8, encoding="utf-8", write_through=True))
    terminal_text.console(highlight=False, soft_wrap=True).print(render.card_text("TH"))
    assert utf8.getvalue().decode("utf-8").strip() == "10♥"
    errors = io.BytesIO()  # the one-line errors go to stderr there too, not among the output
    monkeypatch.setattr(sys, "stderr", io.TextIOWrapper(errors, encoding="utf-8", write_through=True))
    terminal_text.console(stderr=True, highlight=False, soft_wrap=True).print("error: 10♥ is not yours")
    assert errors.getvalue().decode("utf-8") == "error: 10♥ is not yours\n"
    assert utf8.getvalue().decode("utf-8").strip() == "10♥"


def test_the_fallback_console_of_the_error_lines_writes_to_stderr_at_once(monkeypatch):
    """terminal_text.console: the one-line errors go to stderr under a non-UTF-8 locale too
    (a script reading stdout gets no error among it), each line written as it is printed (a
    log or a pipe following clients.watch --plain sees every event as it happens, not a buffer
    full at a time), and a terminal stays a terminal to rich."""
    import io

    from clients import terminal_text

    class Terminal(io.TextIOWrapper):
        def isatty(self):
            return True

    out, err = io.BytesIO(), io.BytesIO()
    monkeypatch.setattr(sys, "stdout", io.TextIOWrapper(out, encoding="latin-1"))
    monkeypatch.setattr(sys, "stderr", Terminal(err, encoding="ascii"))
    terminal_text.console(highlight=False, soft_wrap=True).print(render.card_text("QS"))
    assert out.getvalue() == b"QS\n"  # there already: flushed with the line
    console = terminal_text.console(stderr=True, highlight=False, soft_wrap=True)
    assert console.is_terminal
    console.print("error: 10♥ is not yours")
    assert err.getvalue().decode("ascii").strip().endswith("error: 10H is not yours"), err.getvalue()


def test_a_stream_that_holds_some_suits_but_not_all_gets_the_letters(monkeypatch):
    """terminal_text.console checks every suit: a Korean locale's EUC-KR (and cp949) holds
    ♠ ♥ ♣ but not ♦, so the first diamond ended the program with UnicodeEncodeError there had
    the check been the spade alone; it is written in the rulebooks' letter (JJK-0.2, GJ-0.2:
    ``10D``), module docstring."""
    import io

    from clients import terminal_text

    raw = io.BytesIO()
    monkeypatch.setattr(sys, "stdout", io.TextIOWrapper(raw, encoding="euc_kr", write_through=True))
    assert not terminal_text.can_encode(sys.stdout)
    terminal_text.console(highlight=False, soft_wrap=True).print(render.card_text("TD"))
    assert raw.getvalue().decode("euc_kr").strip() == "10D"


def test_a_stream_that_holds_the_suits_but_not_the_dashes_gets_the_fallback(monkeypatch):
    """terminal_text.console: ``shift_jis_2004`` (a Japanese JIS X 0213 locale) holds ♠ ♥ ♦ ♣
    but not the em dash of a Klaberjass deal's line (render.last_deal_line, "... — made"),
    which --autoplay and clients.watch --plain print after each deal: the console checked the
    suits alone and that line ended the program with UnicodeEncodeError. Module docstring: what
    the stream cannot hold is written in ASCII, the output stays readable and the program goes
    on; a line it holds is written as it is."""
    import io

    from rich.text import Text

    from clients import terminal_text

    raw = io.BytesIO()
    monkeypatch.setattr(sys, "stdout", io.TextIOWrapper(raw, encoding="shift_jis_2004", write_through=True))
    assert terminal_text.can_encode(sys.stdout, "♠♥♦♣") and not terminal_text.can_encode(sys.stdout)
    console = terminal_text.console(highlight=False, soft_wrap=True)
    console.print(Text("deal 3: trump ").append_text(render.card_text("TS")).append(", ada 90 — made"))
    console.print(render.card_text("TH"))
    assert raw.getvalue().decode("shift_jis_2004").splitlines() == ["deal 3: trump 10S, ada 90 - made", "10♥"]


def test_the_fallback_writer_has_its_streams_file_descriptor(tmp_path):
    """FallbackWriter is a text stream over ``stream``: it gives the stream's file descriptor
    (rich reads it to tell a standard stream on Windows; io.TextIOBase's own fileno() raises
    UnsupportedOperation), and what it writes reaches the file."""
    from clients import terminal_text

    with open(tmp_path / "out.txt", "w", encoding="ascii") as stream:
        writer = terminal_text.FallbackWriter(stream)
        assert writer.fileno() == stream.fileno()
        writer.write("10♥\n")
        writer.flush()
        assert (tmp_path / "out.txt").read_text(encoding="ascii") == "10H\n"


def test_a_stream_whose_encoding_is_unknown_gets_ascii():
    """can_encode: a stream that names no encoding is taken as UTF-8 (as rich takes it); one
    whose encoding Python does not know holds no suit symbol, and the fallback writer then
    writes ASCII to it (module docstring: the program goes on; the first line raised
    LookupError)."""
    import io

    from clients import terminal_text

    class Unnamed(io.StringIO):
        encoding = None

    class Unknown(io.StringIO):
        encoding = "x-unknown-8bit"

    assert terminal_text.can_encode(Unnamed())
    stream = Unknown()
    assert not terminal_text.can_encode(stream)
    terminal_text.FallbackWriter(stream).write("10♥ → A♠ ✓\n")
    assert stream.getvalue() == "10H -> AS ?\n"


def test_every_symbol_the_renderers_write_has_an_ascii_fallback():
    """terminal_text: under a non-UTF-8 locale the suits are the rulebooks' letters (GJ-0.2,
    JJK-0.2: S H D C) and every other symbol the renderers write (the arrows, dashes, the
    ellipsis, the face-down card) something readable in ASCII, never a ``?`` where the output
    could say what it is. A stream that names no encoding gets ASCII, and what it can hold of a
    line is written unchanged."""
    import io
    from pathlib import Path

    from clients import terminal_text

    written = {c for module in ("render", "play", "watch")
               for c in (Path(ROOT) / "clients" / f"{module}.py").read_text(encoding="utf-8") if ord(c) > 127}
    assert written <= set(map(chr, terminal_text.ASCII_FALLBACKS)), written

    class Unnamed(io.StringIO):
        encoding = None

    stream = Unnamed()
    writer = terminal_text.FallbackWriter(stream)
    assert writer.encoding == "ascii"
    writer.write("A♠ K♥ Q♦ J♣ ▒ → ▶ — – … ·\n")
    assert writer.write("10\u00b7\u00e9\n") == 5  # the characters written, as a text stream says
    assert stream.getvalue() == "AS KH QD JC # -> > - - ... .\n10.?\n"
    class Latin(io.StringIO):
        encoding = "latin-1"

    latin = Latin()
    terminal_text.FallbackWriter(latin).write("caf\u00e9 \u00b7 10\n")
    assert latin.getvalue() == "caf\u00e9 \u00b7 10\n"


def test_play_screen_logs_each_deal_and_what_a_pulka_settled(engine):
    """On 80x24 the deal results below the board give way to the actions, so a Georgian Joker
    pulka's premium and moshla (GJ-8), which go on the totals and not on any deal's score,
    were on no line of the screen: the event log now says each deal's result as it is scored
    and what the pulka's end settled (here the first pulka of a ``nines`` match, four deals)."""

    async def scenario():
        async with cg.connect(engine.target) as client:
            match = await client.create_match("georgian_joker", seats=[None] * 4, options={"deal_schedule": "nines"})
            seats = [await client.join(match.match_id, player_name=f"p{n}") for n in range(4)]
            rng = random.Random(4)
            while not ((view := await seats[0].view()).phase == "playing"
                       and len(view.scores.deal_results.values) == 3 and sum(view.hand_sizes) == 4):
                await seats[view.to_act].act(lambda v: rng.choice(cg.legal_notations(v)))
            app = PlayApp(seats[0], await seats[0].summary())
            async with app.run_test(size=(80, 24)) as pilot:
                # the stream's first event (a snapshot, the match too far along to replay): the
                # deals it says were scored are written, if ever, with it
                await wait_for(pilot, lambda: any("joined the table" in line for line in log_lines(app)),
                               "the stream's snapshot")
                assert not any("scored" in line for line in log_lines(app))  # earlier deals: not repeated
                while len((view := await seats[0].view()).scores.deal_results.values) == 3:
                    await seats[view.to_act].act(lambda v: rng.choice(cg.legal_notations(v)))
                await wait_for(pilot, lambda: any("pulka 1 settled:" in line for line in log_lines(app)),
                               "the pulka's settlement in the log")
                text = " ".join(line.strip() for line in log_lines(app))
                assert "deal 4 scored, points (tricks taken/bid): you " in text, text
                assert "premium" in text or "nobody made every bid" in text, text

    run(scenario(), timeout_s=120)


def test_play_screen_shows_each_joker_lead_on_one_row_at_80x24(engine):
    """Leading with a joker offers eight leads per joker (two modes, four named suits); at
    80x24 each read "play Joker2 high (takes), asks ♠" over two rows of the actions' box, so
    that four of them filled it. Each is one row, and says what the joker demands."""

    async def scenario():
        async with cg.connect(engine.target) as client:
            match = await client.create_match("georgian_joker", seats=[None] * 4)
            seats = [await client.join(match.match_id, player_name=f"p{n}") for n in range(4)]
            rng = random.Random(8)
            # the first joker lead of any seat beside another card (the decks are the server's:
            # seat 0 alone may lead no joker in a whole match; a one-card hand holding a joker
            # has its eight leads alone: the one-card deals of GJ-2.4)
            while True:
                view = await seats[(await seats[0].view()).to_act].view()
                assert not view.over, "no joker lead in the whole match"
                if (view.phase == "playing" and cg.is_my_turn(view) and len(view.legal_actions) >= 9
                        and any(a.notation.count(":") == 3 for a in view.legal_actions)):
                    break
                await seats[view.to_act].act(lambda v: rng.choice(cg.legal_notations(v)))
            app = PlayApp(seats[view.seat], await seats[view.seat].summary())
            async with app.run_test(size=(80, 24)) as pilot:
                await wait_for(pilot, lambda: app._shown_actions, "the legal actions")
                await pilot.pause(0.3)
                actions = app.query_one("#actions")
                assert actions.option_count == len(view.legal_actions) >= 9
                assert actions.virtual_size.height == actions.option_count, "an action takes two rows"
                labels = [str(actions.get_option_at_index(i).prompt) for i in range(actions.option_count)]
                assert any(label.endswith("due") and "takes: top" in label for label in labels), labels
                assert any("under: any" in label for label in labels), labels

    run(scenario(), timeout_s=120)


def test_watch_screen_logs_who_took_each_trick_and_each_deal(engine):
    """The spectator's log, as the player's: who took each trick and each deal's result (on
    80x24 the deal results below the board give way to the log)."""

    async def scenario():
        async with cg.connect(engine.target) as client:
            match = await client.create_match("georgian_joker", seats=[None] * 4)
            seats = [await client.join(match.match_id, player_name=f"p{n}") for n in range(4)]
            rng = random.Random(6)
            while not (await seats[0].view()).scores.deal_results.values:
                view = await seats[0].view()
                await seats[view.to_act].act(lambda v: rng.choice(cg.legal_notations(v)))
            app = WatchApp(client.spectate(match.match_id), 0)
            async with app.run_test(size=(80, 24)) as pilot:
                await wait_for(pilot, lambda: any("scored" in line for line in log_lines(app)), "the deal's result")
                text = " ".join(line.strip() for line in log_lines(app))
                assert "→ trick to p" in text, text
                assert "deal 1 scored, points (tricks taken/bid): p0 " in text, text

    run(scenario(), timeout_s=60)


class _ScreenSeat:
    """A seat session for the player's screen, without an engine: seat 0 of match ``m1`` whose
    view is ``view``, whose stream brings ``events`` and then stays open, and which records the
    moves it was asked to send (``submitted``: notation and expected seq) and its leaves
    (``left``: the ``resign`` of each). ``error``: what a submit raises (else it answers with
    ``view`` one seq on)."""

    def __init__(self, view, events=(), *, game="klaberjass", error=None) -> None:
        from types import SimpleNamespace

        self.match_id, self.seat, self.client = "m1", 0, SimpleNamespace(target="h:1")
        self._view, self.events, self.game, self.error = view, list(events), game, error
        self.submitted, self.left, self.opened = [], [], []
        self.names = ["ada", "bob"]  # the players seated, as the summary names them
        self.more: asyncio.Queue = asyncio.Queue()  # events a test sends once the stream is open

    async def view(self):
        return self._view

    async def summary(self):
        summary = match_pb2.MatchSummary(match_id="m1", game=self.game, status=match_pb2.MATCH_STATUS_ACTIVE)
        for seat, name in enumerate(self.names):
            summary.seats.add(seat=seat, kind=match_pb2.SEAT_KIND_OPEN, taken=bool(name), player_name=name)
        return summary

    async def watch(self, after_seq=None, max_failures=None, on_connection=None):
        self.opened.append((after_seq, max_failures))
        for event in self.events:
            yield event
        while True:  # the stream stays open, as on a table where nobody moves
            yield await self.more.get()

    async def submit(self, notation, expected_seq=None):
        self.submitted.append((notation, expected_seq))
        if self.error is not None:
            raise self.error
        reply = card_games_pb2.SubmitActionResponse()
        reply.view.CopyFrom(self._view)
        reply.view.seq += 1
        reply.view.ClearField("to_act")
        return reply

    async def leave(self, resign=False):
        self.left.append(resign)


def my_turn_view(cards: list[str], game: str = "klaberjass"):
    """Seat 0's view of a two-seat table in play, its turn, ``cards`` in hand and each legal."""
    from engine_service.transport.codec import action_message

    view = match_pb2.View(game=game, seat=0, to_act=0, hand_sizes=[len(cards), len(cards)], phase="playing",
                          status=match_pb2.MATCH_STATUS_ACTIVE, seq=5)
    for card in cards:
        view.hand.add().code = card
    view.legal_actions.extend([action_message(f"play:{card}") for card in cards])
    return view


def test_q_quits_the_screens_and_so_does_ctrl_c_with_text_selected():
    """README: ``q`` quits the player's screen (before the end it leaves the seat away, not
    resigned: no leave is sent) and the spectator's, as the footer says. Ctrl-C quits them too
    while text of the event log is selected, as in any terminal program (textual's screen
    copied the selection instead)."""
    from textual.selection import Selection

    seat = _ScreenSeat(my_turn_view(["AS", "KS"]))
    spectator = _ScreenSpectator([], ["ada", "bob"])

    async def scenario():
        for key in ("q", "ctrl+c"):
            for app in (PlayApp(seat, await seat.summary()),
                        WatchApp(spectator, None, summary=await spectator.summary())):
                async with app.run_test(size=(120, 40)) as pilot:
                    await pilot.pause()
                    app.screen.selections = {app.query_one("#log"): Selection(None, None)}
                    await pilot.press(key)
                    await wait_for(pilot, lambda: app._exit, f"{type(app).__name__} quitting on {key}", 5)
        assert seat.left == [] and seat.submitted == []

    run(scenario(), timeout_s=60)


def test_play_screen_says_what_became_of_a_move_it_could_not_send():
    """A move sent without an answer (UNAVAILABLE or a deadline, no reason: the engine may have
    played it) says so, where a move the engine refused names the reason, or the status when
    there is none, and its message; either way the next move can be sent. Digit keys choose
    the action of that number, sent with the seq of the view it was chosen on."""
    from clients.play import SENDING_LOST

    cases = [
        (cg.Unavailable(grpc.StatusCode.UNAVAILABLE, "Socket closed"), SENDING_LOST),
        (cg.CardGamesError(grpc.StatusCode.DEADLINE_EXCEEDED, "Deadline Exceeded"), SENDING_LOST),
        (cg.CardGamesError(grpc.StatusCode.UNAVAILABLE, "the store is down", reason="STORE_UNAVAILABLE"),
         "refused: STORE_UNAVAILABLE: the store is down"),
        (cg.CardGamesError(grpc.StatusCode.FAILED_PRECONDITION, "not your turn", reason="NOT_YOUR_TURN"),
         "refused: NOT_YOUR_TURN: not your turn"),
        (cg.CardGamesError(grpc.StatusCode.INTERNAL, "boom"), "refused: INTERNAL: boom"),
    ]

    async def scenario():
        seat = _ScreenSeat(my_turn_view(["AS", "KS", "QS"]))
        app = PlayApp(seat, await seat.summary())
        async with app.run_test(size=(120, 40)) as pilot:
            await wait_for(pilot, lambda: app._shown_actions, "the actions", 5)
            for n, (error, said) in enumerate(cases):
                seat.error = error
                await pilot.press("2")
                await wait_for(pilot, lambda: len(seat.submitted) == n + 1 and not app.submitting, "the move sent", 5)
                assert str(app.query_one("#status").content) == said
            assert seat.submitted == [("play:KS", 5)] * len(cases)
            seat.error = None
            await pilot.press("3")
            await wait_for(pilot, lambda: app.view_msg.seq == 6, "the move's answer", 5)
            assert seat.submitted[-1] == ("play:QS", 5) and str(app.query_one("#status").content) == ""
            await pilot.pause()
            assert app._shown_actions == [] and app.query_one("#actions").option_count == 0  # not my turn now

    run(scenario(), timeout_s=60)


def test_play_screen_resigns_a_georgian_joker_seat_for_good_and_nothing_once_the_match_is_over():
    """Georgian Joker: R asks whether to leave for good, since a bot plays the seat to the end
    and there is no way back (GJ-12.4); R again within the 5 s sends the resignation and the
    screen says so; a third R asks again. Once the match is over (MATCH_ENDED) R sends nothing
    and asks nothing."""
    ended = card_games_pb2.WatchMatchResponse(kind=match_pb2.EVENT_KIND_MATCH_ENDED, seq=6, reason="rules")

    async def scenario():
        seat = _ScreenSeat(my_turn_view(["AS", "KS"], "georgian_joker"), game="georgian_joker")
        app = PlayApp(seat, await seat.summary())
        async with app.run_test(size=(120, 40)) as pilot:
            await wait_for(pilot, lambda: app._shown_actions, "the actions", 5)
            await pilot.press("R")
            assert str(app.query_one("#status").content) == (
                "press R again within 5 s to leave the match for good (a bot plays your seat to the end)")
            assert seat.left == []
            await pilot.press("R")
            await wait_for(pilot, lambda: seat.left, "the resignation", 5)
            assert seat.left == [True] and str(app.query_one("#status").content) == "you resigned"
            await pilot.press("R")  # a third R asks again, as a first one does
            await pilot.pause()
            assert seat.left == [True] and str(app.query_one("#status").content).startswith("press R again")

        seat = _ScreenSeat(my_turn_view(["AS", "KS"]), [ended])
        app = PlayApp(seat, await seat.summary())
        async with app.run_test(size=(120, 40)) as pilot:
            await wait_for(pilot, lambda: app.result is not None, "the match's end", 5)
            await pilot.press("R", "R")
            await pilot.pause()
            assert seat.left == [] and str(app.query_one("#status").content) == "match over — press q to quit"

    run(scenario(), timeout_s=60)


def test_play_screen_after_a_two_player_resignation_and_a_refused_one():
    """Two players: the resignation ends the match and the opponent wins (JJK-10.1); its
    MATCH_ENDED may come in before the leave's answer, and "match over" stays. A leave that
    raises (after the library's own retries) does not close the screen, and the status says
    it was refused or not answered (it said "you resigned")."""
    ended = card_games_pb2.WatchMatchResponse(kind=match_pb2.EVENT_KIND_MATCH_ENDED, seq=6, reason="resigned")

    async def scenario():
        seat = _ScreenSeat(my_turn_view(["AS", "KS"], "japanese_joker"), game="japanese_joker")
        app = PlayApp(seat, await seat.summary())

        async def leave_ending_the_match(resign=False):
            seat.left.append(resign)
            await seat.more.put(ended)
            for _ in range(250):  # the stream takes the event in before the answer comes
                if app.result is not None:
                    break
                await asyncio.sleep(0.02)

        seat.leave = leave_ending_the_match
        async with app.run_test(size=(120, 40)) as pilot:
            await wait_for(pilot, lambda: app._shown_actions, "the actions", 5)
            await pilot.press("R")
            assert str(app.query_one("#status").content).endswith("to resign (your opponent wins the match)")
            await pilot.press("R")
            await wait_for(pilot, lambda: seat.left, "the resignation", 5)
            await pilot.pause()
            assert seat.left == [True] and str(app.query_one("#status").content) == "match over — press q to quit"

        # refused, the refusal is said, not "you resigned": the engine did not take it; not
        # answered, it may have been taken: the events will say
        for error, status in (
                (cg.CardGamesError(grpc.StatusCode.FAILED_PRECONDITION, "over", reason="MATCH_NOT_ACTIVE"),
                 "resignation refused: MATCH_NOT_ACTIVE: over"),
                (cg.CardGamesError(grpc.StatusCode.UNAVAILABLE, "connection refused"), PlayApp.RESIGN_LOST)):
            seat = _ScreenSeat(my_turn_view(["AS", "KS"], "japanese_joker"), game="japanese_joker")
            app = PlayApp(seat, await seat.summary())

            async def leave_failing(resign=False, seat=seat, error=error):
                seat.left.append(resign)
                raise error

            seat.leave = leave_failing
            async with app.run_test(size=(120, 40)) as pilot:
                await wait_for(pilot, lambda: app._shown_actions, "the actions", 5)
                await pilot.press("R", "R")
                await wait_for(pilot, lambda: seat.left, "the resignation", 5)
                await pilot.pause()
                assert app.is_running and app.return_code is None
                assert str(app.query_one("#status").content) == status

    run(scenario(), timeout_s=60)


def test_play_screen_numbers_the_first_nine_actions_for_the_digit_keys():
    """A Japanese Joker hand of 18 cards (JJK-3.4) may have more legal actions than digit keys:
    the first nine are numbered 1-9 and their key chooses them (9 the ninth), the others are
    chosen with the arrows and Enter."""
    cards = ["AS", "KS", "QS", "JS", "TS", "9S", "8S", "7S", "6S", "AH", "KH"]

    async def scenario():
        seat = _ScreenSeat(my_turn_view(cards, "japanese_joker"), game="japanese_joker")
        app = PlayApp(seat, await seat.summary())
        async with app.run_test(size=(120, 40)) as pilot:
            await wait_for(pilot, lambda: app._shown_actions, "the actions", 5)
            options = app.query_one("#actions")
            labels = [str(options.get_option_at_index(i).prompt) for i in range(options.option_count)]
            assert [label[:3] for label in labels] == [f"{n}. " for n in range(1, 10)] + ["   ", "   "], labels
            await pilot.press("9")
            await wait_for(pilot, lambda: seat.submitted, "the ninth action sent", 5)
            assert seat.submitted == [("play:6S", 5)]

    run(scenario(), timeout_s=60)


def test_watch_screen_counts_down_between_events_and_calls_no_seat_you():
    """The spectator's countdown runs on while no event comes (the screen redraws itself every
    half second, as it refits to a resized terminal), and its log ("events") names every seat,
    seat 0 too: a spectator is nobody's "you". No connection line while the stream is up, and
    no row for the deal results before a deal is scored: the log's box follows the board."""
    from google.protobuf import timestamp_pb2

    action = cards_pb2.Action(notation="play:AS", kind=cards_pb2.ACTION_KIND_PLAY)
    action.card.code = "AS"
    view = match_pb2.View(game="klaberjass", hand_sizes=[8, 8], to_act=1, status=match_pb2.MATCH_STATUS_ACTIVE,
                          phase="playing", seq=3)
    view.deadline.CopyFrom(timestamp_pb2.Timestamp(seconds=int(time.time() + 60)))
    spectator = _ScreenSpectator([
        card_games_pb2.WatchMatchResponse(kind=match_pb2.EVENT_KIND_ACTION, seq=3, seat=0, action=action, view=view)],
        ["ada", "bob"])

    async def scenario():
        app = WatchApp(spectator, None, summary=await spectator.summary())
        async with app.run_test(size=(120, 30)) as pilot:
            await wait_for(pilot, lambda: app.board is not None, "the board", 5)
            assert "3 ada: play A♠" in [line.strip() for line in log_lines(app)], log_lines(app)
            assert app.query_one("#log").border_title == "events" and banner(app) == (False, "")
            await pilot.pause()  # the layout: no deal scored, no row for the deal results
            board = app.query_one("#board").region
            assert screen_rows(app)[board.bottom].startswith("╭─ events"), screen_rows(app)
            first = seconds_left(app, "bob to act")
            await wait_for(pilot, lambda: seconds_left(app, "bob to act") < first, "the countdown running on", 3)

    run(scenario(), timeout_s=60)


def test_the_deal_results_take_every_row_but_the_five_of_the_log_or_the_actions():
    """On a short terminal the deal results give way, a deal at a time, to the spectator's
    event log and to the player's actions, which keep five rows (their box and three lines:
    WatchApp.MIN_LOG_ROWS, PlayApp.MIN_ACTION_ROWS) and no more: as many of the last deals as
    fit are shown; the connection line's row comes from them at once."""
    from google.protobuf import json_format

    def with_deals(view):
        json_format.ParseDict([{"scores": [10 * n, 162 - 10 * n]} for n in range(6)], view.scores.deal_results)
        return view

    seen = with_deals(match_pb2.View(game="klaberjass", hand_sizes=[8, 8], to_act=1, phase="playing", seq=9,
                                     status=match_pb2.MATCH_STATUS_ACTIVE))
    spectator = _ScreenSpectator([card_games_pb2.WatchMatchResponse(kind=match_pb2.EVENT_KIND_SNAPSHOT, seq=9,
                                                                     view=seen)], ["ada", "bob"])
    seat = _ScreenSeat(with_deals(my_turn_view(["AS", "KS", "QS", "JS"])))

    def deals_shown(app) -> int:
        return sum(1 for line in screen_text(app).splitlines() if line.split() and line.split()[0].isdigit())

    async def scenario():
        app = WatchApp(spectator, None, summary=await spectator.summary())
        async with app.run_test(size=(80, 18)) as pilot:
            await wait_for(pilot, lambda: app.board is not None, "the board", 5)
            await pilot.pause()
            log = app.query_one("#log").region
            assert 0 < deals_shown(app) < 6 and log.height == 5 and log.y + log.height == 18 - 1, screen_rows(app)
        app = PlayApp(seat, await seat.summary())
        async with app.run_test(size=(80, 21)) as pilot:
            await wait_for(pilot, lambda: app._shown_actions, "the actions", 5)
            await pilot.pause()
            actions, status = app.query_one("#actions").region, app.query_one("#status").region
            assert 0 < deals_shown(app) < 6 and actions.height == 5, screen_rows(app)
            assert actions.y + actions.height == status.y == 21 - 2, screen_rows(app)  # the footer below
            shown = deals_shown(app)
            app.on_connection(cg.StreamState(cg.RECONNECTING, 1, 30))  # its row comes from the deals
            await pilot.pause()
            actions, status = app.query_one("#actions").region, app.query_one("#status").region
            assert deals_shown(app) == shown - 1 and actions.height == 5 and status.y == 21 - 2, screen_rows(app)

    run(scenario(), timeout_s=60)


def test_the_screens_name_the_seats_as_the_match_ended():
    """At MATCH_ENDED both screens ask for the match's summary again: the board left on screen
    names the seats as the match ended (a player who sat down since the summary was read, with
    no presence event on this stream), and the player's screen has its result."""
    ended = card_games_pb2.WatchMatchResponse(kind=match_pb2.EVENT_KIND_MATCH_ENDED, seq=7, reason="rules")
    view = match_pb2.View(game="klaberjass", hand_sizes=[8, 8], to_act=1, phase="playing", seq=6,
                          status=match_pb2.MATCH_STATUS_ACTIVE)
    spectator = _ScreenSpectator([card_games_pb2.WatchMatchResponse(kind=match_pb2.EVENT_KIND_SNAPSHOT, seq=6,
                                                                     view=view), ended], ["ada", ""])
    seat = _ScreenSeat(my_turn_view(["AS", "KS"]), [ended])
    seat.names = ["ada", ""]

    async def scenario():
        for app, audience in ((WatchApp(spectator, None, summary=await spectator.summary()), spectator),
                              (PlayApp(seat, await seat.summary()), seat)):
            audience.names[1] = "bob"
            async with app.run_test(size=(120, 40)) as pilot:
                await wait_for(pilot, lambda: app.board is not None and "bob" in screen_text(app),
                               f"{type(app).__name__}: bob on the board", 5)
                assert "seat 1" not in screen_text(app)
                if isinstance(app, PlayApp):
                    assert app.result is not None and app.result.seats[1].player_name == "bob"

    run(scenario(), timeout_s=60)


def test_play_screen_shows_the_newest_view_and_a_later_snapshot():
    """The player's screen shows the newest view it has (docs/api.md: "act on the newest
    view"): the stream's first SNAPSHOT (after a heartbeat), older than the view the screen asked for, and a
    replayed action's view older than it, are not shown; a view of the same seq replaces it
    (a stream opened with after_seq 0 starts with the started view at seq 0, which replaces a
    WAITING view: docs/api.md, Reconnecting), and so does a later SNAPSHOT, whatever its seq
    (the match as it now stands, a backup restored)."""
    def other_to_act(seq: int):
        view = my_turn_view(["AS", "KS"])
        view.seq, view.to_act = seq, 1
        return view

    waiting = match_pb2.View(game="klaberjass", seat=0, hand_sizes=[0, 0], status=match_pb2.MATCH_STATUS_WAITING)
    started = my_turn_view(["AS", "KS"])
    started.seq = 0

    def event(kind, view):
        return card_games_pb2.WatchMatchResponse(kind=kind, seq=view.seq, view=view)

    async def scenario():
        seat = _ScreenSeat(waiting)
        app = PlayApp(seat, await seat.summary())
        async with app.run_test(size=(120, 40)) as pilot:
            await wait_for(pilot, lambda: app.board is not None, "the board", 5)
            await seat.more.put(event(match_pb2.EVENT_KIND_SNAPSHOT, started))
            await wait_for(pilot, lambda: app._shown_actions == ["play:AS", "play:KS"], "the started view", 5)

        seat = _ScreenSeat(my_turn_view(["AS", "KS"]))  # seq 5
        app = PlayApp(seat, await seat.summary())
        async with app.run_test(size=(120, 40)) as pilot:
            await wait_for(pilot, lambda: app._shown_actions, "the actions", 5)
            heartbeat = card_games_pb2.WatchMatchResponse(kind=match_pb2.EVENT_KIND_HEARTBEAT, seq=5)
            for old in (heartbeat, event(match_pb2.EVENT_KIND_SNAPSHOT, other_to_act(3)),
                        event(match_pb2.EVENT_KIND_ACTION, other_to_act(4))):
                await seat.more.put(old)
                await wait_for(pilot, lambda: seat.more.empty(), "the event read", 5)
                await pilot.pause(0.1)
                assert app.view_msg.seq == 5 and app._shown_actions == ["play:AS", "play:KS"]
            await seat.more.put(event(match_pb2.EVENT_KIND_SNAPSHOT, other_to_act(2)))
            await wait_for(pilot, lambda: app.view_msg.seq == 2 and not app._shown_actions, "the later snapshot", 5)

    run(scenario(), timeout_s=60)


def test_play_screen_counts_the_turn_down_on_the_servers_clock_and_names_a_late_player():
    """The player's countdown is on the server's clock (docs/api.md, HEARTBEAT ``server_time``):
    1000 s behind the server, the machine shows the minute left, not 1060 s, and the countdown
    runs on between events (the screen's half-second tick). A player who sat down after the
    screen read the summary is named from the presence event on (the screen asks again). No
    deal scored yet: the actions' box follows the board, no row left for the deal results."""
    from google.protobuf import struct_pb2, timestamp_pb2

    ahead_s = 1000.0
    details = struct_pb2.Struct()
    details.update({"server_time": time.time() + ahead_s})
    view = my_turn_view(["AS", "KS"])
    view.deadline.CopyFrom(timestamp_pb2.Timestamp(seconds=int(time.time() + ahead_s + 60)))
    seat = _ScreenSeat(view, [
        card_games_pb2.WatchMatchResponse(kind=match_pb2.EVENT_KIND_HEARTBEAT, seq=5, details=details)])
    seat.names = ["ada", ""]

    async def scenario():
        app = PlayApp(seat, await seat.summary())
        async with app.run_test(size=(120, 40)) as pilot:
            await wait_for(pilot, lambda: app.server_clock.offset_s is not None and app.board is not None,
                           "the heartbeat", 5)
            app.redraw()
            first = seconds_left(app, "your turn")
            assert 0 < first <= 60
            await pilot.pause()  # the layout: no deal scored, no row for the deal results
            board = app.query_one("#board").region
            assert screen_rows(app)[board.bottom].startswith("╭─ your actions"), screen_rows(app)
            await wait_for(pilot, lambda: seconds_left(app, "your turn") < first, "the countdown running on", 3)
            seat.names[1] = "bob"
            await seat.more.put(card_games_pb2.WatchMatchResponse(kind=match_pb2.EVENT_KIND_PRESENCE, seq=5, seat=1,
                                                                  reason="connected"))
            await wait_for(pilot, lambda: "bob: connected" in [line.strip() for line in log_lines(app)],
                           "the late player named", 5)

    run(scenario(), timeout_s=60)


def test_play_screen_keeps_what_it_said_about_a_move_through_a_lost_connection():
    """While the stream is down the actions are greyed out and a move chosen is not sent (the
    status says so, and goes on saying so at each further try); once it is back the actions
    can be chosen again, focused, and the lines that said a move could not be sent go, where
    a refusal of the engine stays."""
    from clients.play import NOT_SENT, SENDING_LOST

    def status(app) -> str:
        return str(app.query_one("#status").content)

    async def scenario():
        seat = _ScreenSeat(my_turn_view(["AS", "KS"]))
        app = PlayApp(seat, await seat.summary())
        async with app.run_test(size=(120, 40)) as pilot:
            await wait_for(pilot, lambda: app._shown_actions, "the actions", 5)
            actions = app.query_one("#actions")
            assert str(actions.border_title) == "your actions" and banner(app) == (False, "")
            for said in (NOT_SENT, SENDING_LOST, "refused: ILLEGAL_ACTION: no"):
                app.on_connection(cg.StreamState(cg.RECONNECTING, 1, 30))
                assert actions.disabled and str(actions.border_title) == "your actions: wait for the connection"
                assert banner(app) == (True, "connection lost — reconnecting (try 1 of 30)…")
                if said == NOT_SENT:
                    await pilot.press("1")
                    await pilot.pause()
                    assert seat.submitted == [] and status(app) == NOT_SENT
                else:
                    app.status(said)
                app.on_connection(cg.StreamState(cg.RECONNECTING, 2, 30))
                assert status(app) == said
                app.on_connection(cg.StreamState(cg.RESUMED, 2, 30))
                await pilot.pause()
                assert not actions.disabled and str(actions.border_title) == "your actions" and actions.has_focus
                assert banner(app) == (False, "")
                assert status(app) == ("" if said in (NOT_SENT, SENDING_LOST) else said)

    run(scenario(), timeout_s=60)


def test_play_screen_relabels_the_same_actions_and_keeps_the_highlight_where_it_was_moved():
    """The same legal actions read otherwise in another view: the dix exchange of the next
    deal names that deal's seven and turn-up (KL-4.1), "exchange 7♥ for the turn-up K♥" after
    "... 7♠ ... K♠". While the actions and their labels stay the same, a redraw (an event, an
    answer) leaves the highlight where the player moved it with the arrows; new ones are
    highlighted from the first and focused, for Enter and the arrows, wherever the focus was."""
    from google.protobuf import json_format

    from engine_service.transport.codec import action_message

    def dix_view(seq: int, suit: str):
        view = match_pb2.View(game="klaberjass", seat=0, to_act=0, hand_sizes=[6, 6], phase="exchange",
                              status=match_pb2.MATCH_STATUS_ACTIVE, seq=seq)
        view.hand.add().code = f"7{suit}"
        json_format.ParseDict({"trump": suit, "turn_up": f"K{suit}"}, view.table)
        view.legal_actions.extend([action_message("exchange"), action_message("keep")])
        return view

    def labels(app) -> list[str]:
        options = app.query_one("#actions")
        return [str(options.get_option_at_index(i).prompt) for i in range(options.option_count)]

    async def scenario():
        seat = _ScreenSeat(dix_view(5, "S"))
        app = PlayApp(seat, await seat.summary())
        async with app.run_test(size=(120, 40)) as pilot:
            await wait_for(pilot, lambda: app._shown_actions, "the actions", 5)
            assert labels(app)[0] == "1. exchange 7♠ for the turn-up K♠", labels(app)
            await pilot.press("down")
            assert app.query_one("#actions").highlighted == 1
            app.redraw()
            await pilot.pause()
            assert app.query_one("#actions").highlighted == 1
            app.query_one("#log").focus()  # the player tabbed to the log meanwhile
            await seat.more.put(card_games_pb2.WatchMatchResponse(kind=match_pb2.EVENT_KIND_ACTION, seq=6,
                                                                  view=dix_view(6, "H")))
            await wait_for(pilot, lambda: app.view_msg.seq == 6, "the next deal's view", 5)
            assert labels(app)[0] == "1. exchange 7♥ for the turn-up K♥", labels(app)
            await pilot.pause()
            assert app.query_one("#actions").has_focus and app.query_one("#actions").highlighted == 0

    run(scenario(), timeout_s=60)


def test_play_screen_sends_no_move_once_its_turn_has_passed():
    """A choice that reaches the screen once its turn has passed is not sent: an Enter on an
    option queued while an event took the turn away (the event stream is a worker of its own,
    the option's message still names the move)."""
    async def scenario():
        seat = _ScreenSeat(my_turn_view(["AS", "KS"]))
        app = PlayApp(seat, await seat.summary())
        async with app.run_test(size=(120, 40)) as pilot:
            await wait_for(pilot, lambda: app._shown_actions, "the actions", 5)
            passed = my_turn_view(["AS", "KS"])
            passed.seq, passed.to_act = 6, 1
            await seat.more.put(card_games_pb2.WatchMatchResponse(kind=match_pb2.EVENT_KIND_ACTION, seq=6,
                                                                  view=passed))
            await wait_for(pilot, lambda: app.view_msg.seq == 6, "the turn passed", 5)
            await app.submit("play:KS")
            assert seat.submitted == [] and not app.submitting

    run(scenario(), timeout_s=60)


def test_play_screen_takes_the_view_a_stale_answer_carries_and_only_a_real_one():
    """STALE_SEQUENCE carries the current view (docs/api.md: "show it and let the player
    decide again"): the screen shows it and asks to choose again. An ABORTED answer without a
    view, or with an empty one, leaves the view shown as it was."""
    newer = my_turn_view(["KS"])
    newer.seq, newer.match_id = 7, "m1"

    async def scenario():
        seat = _ScreenSeat(my_turn_view(["AS", "KS"]))
        app = PlayApp(seat, await seat.summary())
        async with app.run_test(size=(120, 40)) as pilot:
            await wait_for(pilot, lambda: app._shown_actions, "the actions", 5)
            for n, view in enumerate((None, match_pb2.View(), newer)):
                seat.error = cg.StaleSequence(grpc.StatusCode.ABORTED, "stale", "STALE_SEQUENCE", view=view)
                await pilot.press("1")
                await wait_for(pilot, lambda: not app.submitting and len(seat.submitted) == n + 1, "the answer", 5)
                assert str(app.query_one("#status").content) == (
                    "the table moved on before your action arrived: choose again")
                assert app.view_msg.seq == (7 if view is newer else 5)
            assert app._shown_actions == ["play:KS"]

    run(scenario(), timeout_s=60)


def test_play_screens_red_line_takes_its_row_from_the_board_at_once():
    """The connection-lost line takes a row from the board, which is fitted again to the rows
    left at once, with no countdown to tick (a table without a turn timer): on 80x22 a full
    Jo-Jotte board is cut to leave the actions their rows, and with the red line too; back,
    the row returns to the board. On 80x16 no fitting is short enough: the board is cut at
    its bottom, the actions keep their rows."""
    base = my_turn_view(["AS", "KS", "QS", "JS", "TS", "9S", "8S", "7S"], "jojotte")

    async def scenario():
        seat = _ScreenSeat(full_jojotte_board(base), game="jojotte")
        app = PlayApp(seat, await seat.summary())
        async with app.run_test(size=(80, 22)) as pilot:
            await wait_for(pilot, lambda: app._shown_actions, "the actions", 5)
            full = len(board_text_rows(app))
            assert full == 22 - 2 - app.MIN_ACTION_ROWS
            for state, rows in ((cg.StreamState(cg.RECONNECTING, 1, 30), full - 1), (cg.StreamState(cg.RESUMED, 1, 30), full)):
                app.on_connection(state)
                await pilot.pause()
                assert len(board_text_rows(app)) == rows and board_text_rows(app)[-1].lstrip().startswith("your hand:")
                shown = app.query_one("#actions").content_region
                assert shown.y + shown.height <= 22 - 2 and shown.height >= 3, shown
            await pilot.resize_terminal(80, 16)  # too short for the board, however fitted: cut at its bottom
            await refitted(pilot, app)
            assert app.query_one("#board").region.height == 16 - 2 - app.MIN_ACTION_ROWS
            shown = app.query_one("#actions").content_region
            assert shown.y + shown.height <= 16 - 2 and shown.height >= 3, shown

    run(scenario(), timeout_s=60)


def test_play_screen_reads_a_trumpable_high_joker_lead_from_the_table_options():
    """Under the table option ``high_joker_lead_trumpable`` a trump may beat a Georgian Joker
    high lead naming another suit (GJ-6.6): its label reads "high: top ♠ due", not "takes",
    which promised the trick. The option is the match summary's (the view has none)."""
    from google.protobuf import json_format

    from engine_service.transport.codec import action_message

    view = my_turn_view(["X1", "7H"], "georgian_joker")
    view.hand_sizes[:] = [2, 2, 2, 2]
    del view.legal_actions[:]
    view.legal_actions.extend([action_message("play:X1:high:S"), action_message("play:7H")])
    json_format.ParseDict({"trump": "H"}, view.table)

    async def scenario():
        seat = _ScreenSeat(view, game="georgian_joker")
        summary = await seat.summary()
        summary.options["high_joker_lead_trumpable"].bool_value = True
        app = PlayApp(seat, summary)
        async with app.run_test(size=(120, 40)) as pilot:
            await wait_for(pilot, lambda: app._shown_actions, "the actions", 5)
            options = app.query_one("#actions")
            assert str(options.get_option_at_index(0).prompt) == "1. Joker1 high: top ♠ due"

    run(scenario(), timeout_s=60)
