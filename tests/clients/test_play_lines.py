"""What clients/play.py writes from a view without a screen or an engine: the deals scored
since the last event (the screen's log, --autoplay and clients.watch --plain), pinned by
helper 3's mutants of play.py."""

from __future__ import annotations

import io

from google.protobuf import json_format
from rich.console import Console

from clients import play, render
from engine_service.transport.generated import match_pb2

#: Three scored Japanese Joker deals (JJK-8: the tricks taken, the points scored).
DEALS = [{"trump": "S", "taken": [10, 8], "scores": [2, 0]}, {"trump": "H", "taken": [7, 11], "scores": [0, 1]},
         {"trump": "D", "taken": [9, 9], "scores": [0, 0]}]


def _view(results):
    view = match_pb2.View(game="japanese_joker", seat=0, hand_sizes=[0, 0])
    json_format.ParseDict(results, view.scores.deal_results)
    return view


class _Log:
    """The screen's RichLog as far as log_scored_deals writes to it."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def write(self, line) -> None:
        self.lines.append(line.plain.strip())


def test_every_deal_scored_since_the_last_view_is_logged():
    """A view may arrive with two deals scored since the one before (the screen catching up
    after its stream resumed): each goes on the log, not the last one alone."""
    log = _Log()
    assert play.log_scored_deals(log, _view(DEALS), None, 1) == 3
    assert log.lines == ["deal 2 scored: you 0 (7 tricks), seat 1 1 (11 tricks)",
                         "deal 3 scored: you 0 (9 tricks), seat 1 0 (9 tricks)"], log.lines


def _printed(**kwargs) -> list[str]:
    out = io.StringIO()
    console = Console(file=out, width=200, force_terminal=False)
    assert play.print_scored_deals(console, _view(DEALS), None, 1, **kwargs) == 3
    return [line.strip() for line in out.getvalue().splitlines() if line.strip()]


def test_every_deal_scored_since_the_last_event_is_printed():
    """--autoplay and clients.watch --plain print each deal scored since the last event, as
    lines or as the deal results table (numbered as the match numbers them)."""
    assert _printed() == ["deal 2 scored: you 0 (7 tricks), seat 1 1 (11 tricks)",
                          "deal 3 scored: you 0 (9 tricks), seat 1 0 (9 tricks)"]
    rows = [line.split()[0] for line in _printed(table=True)[2:]]
    assert rows == ["2", "3"], rows


def test_the_deals_scored_before_the_first_view_are_not_printed_again():
    """The first view (``seen`` None: --autoplay's start, clients.watch --plain joining late)
    prints none of the deals scored before it; it only counts them."""
    out = io.StringIO()
    console = Console(file=out, width=200, force_terminal=False)
    assert play.print_scored_deals(console, _view(DEALS), None, None) == 3
    assert out.getvalue() == ""


def _rows(renderable) -> int:
    out = io.StringIO()
    Console(file=out, width=120, force_terminal=False).print(renderable)
    return len(out.getvalue().splitlines())


def test_a_board_one_row_too_tall_loses_its_blank_lines_first():
    """fitted_board: a board taller than the room by a single row gives up its blank lines,
    and keeps every line of the table and the hand (the play screen cuts what is still too
    tall at the bottom, where the hand is)."""
    view = match_pb2.View(game="klaberjass", seat=0, hand_sizes=[6, 6], status=match_pb2.MATCH_STATUS_ACTIVE)
    view.table.update({"trump": "S", "turn_up": "9S"})
    view.hand.add(code="AS")
    full = render.board(view, None, 0.0)
    compact = render.board(view, None, 0.0, compact=True)
    assert _rows(compact) < _rows(full) - 1
    fitted = play.fitted_board(view, None, 0.0, _rows, _rows(full) - 1)
    assert _rows(fitted) == _rows(compact)


def test_a_short_terminal_keeps_the_auction_in_progress():
    """The auction is among the lines a short terminal drops once a contract or maker line says
    how it ended; while it goes on it is what the player answers (JJ-3.1), and it stays."""
    view = match_pb2.View(game="jojotte", seat=0, hand_sizes=[6, 6], status=match_pb2.MATCH_STATUS_ACTIVE)
    view.table.update({"turn_up": "9S", "info_card": "7D",
                       "auction": [{"seat": 1, "call": "pass"}, {"seat": 0, "call": "name:H"}]})
    view.hand.add(code="AS")
    compact = render.board(view, None, 0.0, compact=True)
    fitted = play.fitted_board(view, None, 0.0, _rows, _rows(compact) - 2)
    text = "".join(part.plain + "\n" for part in fitted.renderables if hasattr(part, "plain"))
    assert "auction: seat 1 pass, you name ♥" in text and "information card" not in text, text


def test_a_short_terminal_drops_the_meld_talk_before_this_deals_last_trick():
    """SPARE_LINES' order: the meld dialogue (its scores are on the melds line) goes before
    the last trick of the deal being played."""
    view = match_pb2.View(game="klaberjass", seat=0, hand_sizes=[7, 7], status=match_pb2.MATCH_STATUS_ACTIVE)
    view.table.update({"trump": "D", "meld_points": [0, 0], "melds": [
        {"seat": 0, "say": "value", "value": 20}, {"seat": 1, "say": "how_high"}]})
    view.last_trick.plays.add(seat=0, card={"code": "AS"})
    view.last_trick.plays.add(seat=1, card={"code": "7S"})
    view.trick_history.append(view.last_trick)
    view.hand.add(code="KD")
    compact = render.board(view, None, 0.0, compact=True)
    fitted = play.fitted_board(view, None, 0.0, _rows, _rows(compact) - 1)
    labels = [part.plain.split(":")[0] for part in fitted.renderables if hasattr(part, "plain")]
    assert "meld talk" not in labels and "last trick" in labels and "your hand" in labels, labels


def test_the_deal_results_show_the_last_six_deals_that_fit():
    """fitted_deals: the last six scored deals when there is room, fewer (the latest) when
    there is not, none when not even the last one fits."""
    view = _view(DEALS * 3)  # nine deals

    def numbers(table):
        out = io.StringIO()
        Console(file=out, width=120, force_terminal=False).print(table)
        return [line.split()[0] for line in out.getvalue().splitlines()[2:]]

    assert numbers(play.fitted_deals(view, None, _rows, 50)) == ["4", "5", "6", "7", "8", "9"]
    assert numbers(play.fitted_deals(view, None, _rows, 4)) == ["8", "9"]
    assert play.fitted_deals(view, None, _rows, 2) is None


class _Session:
    """A seat session whose stream brings ``events`` (default: one snapshot of ``view``), then
    the end; it records what the policy chose, each move answered with a view of seq ``reply``."""

    seat = 0

    def __init__(self, view, events=None, reply: int = 0) -> None:
        from engine_service.transport.generated import card_games_pb2

        snapshot = card_games_pb2.WatchMatchResponse(kind=match_pb2.EVENT_KIND_SNAPSHOT, seq=view.seq, view=view)
        self.events = list(events or [snapshot]) + [
            card_games_pb2.WatchMatchResponse(kind=match_pb2.EVENT_KIND_MATCH_ENDED, seq=99, reason="rules")]
        self.reply = reply
        self.chosen: list[str] = []

    async def watch(self, after_seq=None, on_connection=None):
        for event in self.events:
            yield event

    async def act(self, decide, view):
        self.chosen.append(decide(view))
        return match_pb2.View(seq=self.reply) if self.reply else None

    async def summary(self):
        return match_pb2.MatchSummary()


def test_autoplay_first_plays_the_first_legal_action():
    """--autoplay first: the first legal action, every time (a script's repeatable run), where
    ``random`` chooses among them."""
    import asyncio

    from engine_service.transport.codec import action_message

    view = match_pb2.View(game="japanese_joker", seat=0, to_act=0, hand_sizes=[6, 6], seq=1,
                          status=match_pb2.MATCH_STATUS_ACTIVE)
    view.legal_actions.extend(action_message(n) for n in ("trump:S", "trump:H", "trump:D", "trump:C", "trump:NT"))
    console = Console(file=io.StringIO(), width=200)
    for seed in range(5):
        session = _Session(view)
        asyncio.run(play.autoplay(session, "first", console, seed=seed))
        assert session.chosen == ["trump:S"], session.chosen


def test_autoplay_plays_on_a_match_restored_to_an_earlier_seq():
    """A snapshot whose seq is below the last move's (the match restored from a backup, it
    went back: docs/api.md) is the match as it stands: autoplay acts on it, where an older
    event's view is otherwise out of date."""
    import asyncio

    from engine_service.transport.codec import action_message
    from engine_service.transport.generated import card_games_pb2

    def turn(seq):
        view = match_pb2.View(game="japanese_joker", seat=0, to_act=0, hand_sizes=[6, 6], seq=seq,
                              status=match_pb2.MATCH_STATUS_ACTIVE)
        view.legal_actions.append(action_message("trump:S"))
        return view

    events = [card_games_pb2.WatchMatchResponse(kind=match_pb2.EVENT_KIND_ACTION, seq=20, view=turn(20)),
              card_games_pb2.WatchMatchResponse(kind=match_pb2.EVENT_KIND_SNAPSHOT, seq=5, view=turn(5))]
    session = _Session(turn(20), events, reply=21)
    asyncio.run(play.autoplay(session, "first", Console(file=io.StringIO(), width=200)))
    assert session.chosen == ["trump:S", "trump:S"], session.chosen


def test_a_dropped_connection_is_one_line_however_many_tries(capsys):
    """--autoplay and clients.watch --plain: the drop (its first try, with the error) and the
    return, one line each on stderr, not a line per reopening."""
    import grpc

    from clients import cardgames_client as cg

    notice = play.stderr_notices()
    error = cg.Unavailable(grpc.StatusCode.UNAVAILABLE, "Socket closed")
    for state in (cg.StreamState(cg.RECONNECTING, 1, None, error), cg.StreamState(cg.RECONNECTING, 2, None, error),
                  cg.StreamState(cg.RESUMED, 2, None), cg.StreamState(cg.RECONNECTING, 1, None, error),
                  cg.StreamState(cg.RESUMED, 1, None)):
        notice(state)
    assert capsys.readouterr().err.splitlines() == [
        "connection lost (UNAVAILABLE: Socket closed): reconnecting", "connection back after 2 tries: catching up",
        "connection lost (UNAVAILABLE: Socket closed): reconnecting", "connection back after 1 try: catching up"]


def test_a_boolean_option_takes_true_or_false_in_any_case():
    """``--option NAME=VALUE`` typed by the game's OptionSpec: a boolean is true or false,
    ``True`` and ``FALSE`` included (read as false, ``True`` would silently set the opposite)."""
    import pytest

    game = match_pb2.GameInfo(id="georgian_joker", options=[match_pb2.OptionSpec(
        name="high_joker_lead_trumpable", type=match_pb2.OPTION_TYPE_BOOL, allowed_text="true or false")])
    assert play.parse_option("high_joker_lead_trumpable=True", game) == ("high_joker_lead_trumpable", True)
    assert play.parse_option("high_joker_lead_trumpable=FALSE", game) == ("high_joker_lead_trumpable", False)
    with pytest.raises(SystemExit, match="high_joker_lead_trumpable is true or false"):
        play.parse_option("high_joker_lead_trumpable=yes", game)


def test_a_seat_off_the_table_is_refused_before_a_match_is_created():
    """``--seat`` beyond the game's seats is one line naming them, before any match is made
    (a two-player game has seats 0 and 1: seat 2 made a match, then failed to join it)."""
    import argparse
    import asyncio

    import pytest

    class Client:
        created = False

        async def list_games(self):
            return [match_pb2.GameInfo(id="klaberjass", name="Klaberjass", num_seats=2)]

        async def create_match(self, *args, **kwargs):
            Client.created = True
            raise AssertionError("a match was created")

    args = argparse.Namespace(match=None, token_file=None, game="klaberjass", seat=2, bots=None, option=None,
                              name="ada", turn_time=None, listed=False)
    with pytest.raises(SystemExit, match="klaberjass has seats 0 to 1"):
        asyncio.run(play.open_seat(Client(), args, Console(file=io.StringIO())))
    assert not Client.created


def test_an_empty_lobby_says_so():
    """``--lobby`` with no match waiting prints that, not nothing."""
    out = io.StringIO()
    play.print_lobby([], "127.0.0.1:50051", Console(file=out, width=200))
    assert out.getvalue().strip() == "no match is waiting for players in the lobby"


def test_a_token_file_whose_token_holds_no_seat_is_refused():
    """``--match ID --token-file PATH`` whose token the server answers with a spectator's view
    (no ``seat``): one line saying the file holds no seat token of that match, where the
    screen showed the spectator's view as seat 0's, "you" and all."""
    import argparse
    import asyncio
    from types import SimpleNamespace

    import pytest

    class Session:
        seat = -1

        async def view(self):
            return match_pb2.View(game="klaberjass", hand_sizes=[9, 9])

    class Client:
        def seat_session(self, match_id, seat, token):
            return Session()

    args = argparse.Namespace(match="M1", token_file=SimpleNamespace(path="/tmp/seat.token"), seat_token="t0ken")
    with pytest.raises(SystemExit, match="the seat token file .* holds no seat token of match M1"):
        asyncio.run(play.open_seat(Client(), args, Console(file=io.StringIO())))


def test_watch_plain_prints_each_deal_once_as_the_table_and_the_drops_on_stderr(capsys):
    """clients.watch --plain: the deals scored before it joined are not printed again; the
    deals scored since are printed once, as the deal results table (numbered as the match
    numbers them; --autoplay prints lines), however many later events carry the same view; a
    spectator's view has no seat, so no column is "you". A drop and the return are one line
    each on stderr (module docstring: "a dropped connection and its return are a line each on
    stderr"), stdout keeps the events. The stream opens at the ``after_seq`` given."""
    import asyncio

    import grpc

    from clients import cardgames_client as cg
    from clients import watch
    from engine_service.transport.generated import card_games_pb2, cards_pb2

    def public(results):  # the spectator's view: no seat
        view = _view(results)
        view.ClearField("seat")
        return view

    def event(kind, seq, view=None, **fields):
        out = card_games_pb2.WatchMatchResponse(kind=kind, seq=seq, **fields)
        if view is not None:
            out.view.CopyFrom(view)
        return out

    error = cg.Unavailable(grpc.StatusCode.UNAVAILABLE, "Socket closed")
    passes = cards_pb2.Action(notation="pass")

    class Spectator:
        def __init__(self) -> None:
            self.opened: list[int | None] = []

        async def watch(self, after_seq=None, on_connection=None):
            self.opened.append(after_seq)
            yield event(match_pb2.EVENT_KIND_SNAPSHOT, 1, public(DEALS[:1]))
            on_connection(cg.StreamState(cg.RECONNECTING, 1, None, error))
            on_connection(cg.StreamState(cg.RESUMED, 1, None))
            yield event(match_pb2.EVENT_KIND_ACTION, 2, public(DEALS), seat=1, action=passes)
            yield event(match_pb2.EVENT_KIND_ACTION, 3, public(DEALS), seat=0, action=passes)
            yield event(match_pb2.EVENT_KIND_MATCH_ENDED, 4, reason="rules")

        async def summary(self):
            return match_pb2.MatchSummary(match_id="m1", game="japanese_joker")

    spectator = Spectator()
    out = io.StringIO()
    asyncio.run(watch.follow_plain(spectator, Console(file=out, width=200, force_terminal=False), 3))
    assert [line.rstrip() for line in out.getvalue().splitlines()] == [
        "   1 joined the table", "   2 seat 1: pass",
        "             deals", " #  seat 0        seat 1", " 2  0 (7 tricks)  1 (11 tricks)",
        " 3  0 (9 tricks)  0 (9 tricks)", "   3 seat 0: pass", "   4 match ended (rules)"], out.getvalue()
    assert spectator.opened == [3]
    assert capsys.readouterr().err.splitlines() == [
        "connection lost (UNAVAILABLE: Socket closed): reconnecting", "connection back after 1 try: catching up"]


def _turn(seq: int, to_act: int = 0):
    """A Japanese Joker view of seat 0 at ``seq``, ``to_act`` to choose trump."""
    from engine_service.transport.codec import action_message

    view = match_pb2.View(game="japanese_joker", seat=0, to_act=to_act, hand_sizes=[6, 6], seq=seq,
                          status=match_pb2.MATCH_STATUS_ACTIVE)
    view.legal_actions.extend(action_message(n) for n in ("trump:S", "trump:H"))
    return view


def test_autoplay_does_not_act_on_another_seats_turn():
    """--autoplay plays its own seat: a view whose turn is another seat's sends no action (one
    the player never had to make)."""
    import asyncio

    session = _Session(_turn(3, to_act=1))
    asyncio.run(play.autoplay(session, "first", Console(file=io.StringIO(), width=200)))
    assert session.chosen == [], session.chosen


def test_autoplay_acts_once_on_a_view_older_than_its_move():
    """An event whose view is older than the seat's last move (the stream behind the move's
    answer) is out of date: the turn it shows was played, and acting on it again sent a
    second move the policy never chose for that position."""
    import asyncio

    from engine_service.transport.generated import card_games_pb2

    events = [card_games_pb2.WatchMatchResponse(kind=match_pb2.EVENT_KIND_ACTION, seq=19, view=_turn(19)),
              card_games_pb2.WatchMatchResponse(kind=match_pb2.EVENT_KIND_ACTION, seq=19, view=_turn(19))]
    session = _Session(_turn(19), events, reply=20)
    asyncio.run(play.autoplay(session, "first", Console(file=io.StringIO(), width=200)))
    assert session.chosen == ["trump:S"], session.chosen


def test_autoplay_ends_on_a_refused_move():
    """A move the engine refuses (FAILED_PRECONDITION with its reason) ends --autoplay with the
    error (main prints it, exit status 1), not skipped as if it were a dropped connection."""
    import asyncio

    import grpc
    import pytest

    from clients import cardgames_client as cg

    class Refused(_Session):
        async def act(self, decide, view):
            self.chosen.append(decide(view))
            raise cg.FailedPrecondition(grpc.StatusCode.FAILED_PRECONDITION, "not your turn", "NOT_YOUR_TURN")

    session = Refused(_turn(4))
    with pytest.raises(cg.CardGamesError, match="NOT_YOUR_TURN"):
        asyncio.run(play.autoplay(session, "first", Console(file=io.StringIO(), width=200)))


def test_autoplay_decides_again_after_a_move_lost_with_the_connection():
    """A move the engine never answered (UNAVAILABLE, no reason: an engine restarting) does not
    end --autoplay: the next heartbeat asks for the view, and the turn still its seat's is
    played then; once played, later heartbeats send nothing more."""
    import asyncio

    import grpc

    from clients import cardgames_client as cg
    from engine_service.transport.generated import card_games_pb2

    heartbeat = card_games_pb2.WatchMatchResponse(kind=match_pb2.EVENT_KIND_HEARTBEAT, seq=4)

    class Restarting(_Session):
        async def act(self, decide, view):
            self.chosen.append(decide(view))
            if len(self.chosen) == 1:
                raise cg.Unavailable(grpc.StatusCode.UNAVAILABLE, "Socket closed")
            return match_pb2.View(seq=5)

        async def view(self):
            return _turn(4)

    snapshot = card_games_pb2.WatchMatchResponse(kind=match_pb2.EVENT_KIND_SNAPSHOT, seq=4, view=_turn(4))
    session = Restarting(_turn(4), [snapshot, heartbeat, heartbeat])
    asyncio.run(play.autoplay(session, "first", Console(file=io.StringIO(), width=200)))
    assert session.chosen == ["trump:S", "trump:S"], session.chosen


def test_the_way_back_names_a_private_token_file_never_the_token(tmp_path):
    """The way back to a seat (module docstring: ``--match ID --token-file PATH``, "the seat token
    saved to a file only you can read") repeats the connection flags, names a new 0600 file
    holding the token and never the token itself; a token that came from ``--token-file`` is
    that file's; without ``--target`` there is none (the match ends with the program's engine)."""
    import argparse
    import os
    import shlex
    import stat
    from types import SimpleNamespace

    session = SimpleNamespace(match_id="M1", seat=1, token="s3cr3t-seat-token")
    args = argparse.Namespace(target="h:1", tls=True, ca=SimpleNamespace(path="/ca.pem"), server_name="engine",
                              token_file=None)
    line = play.way_back(session, args, "h:1")
    assert "s3cr3t" not in line, line
    command = shlex.split(line.removeprefix("to return to your seat: "))
    path = command[-1]
    try:
        assert command[:-1] == ["python", "-m", "clients.play", "--target", "h:1", "--tls", "--ca", "/ca.pem",
                                "--server-name", "engine", "--match", "M1", "--token-file"], command
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
        with open(path, encoding="utf-8") as saved:
            assert saved.read().strip() == "s3cr3t-seat-token"
    finally:
        os.unlink(path)
    given = argparse.Namespace(target="h:1", tls=False, ca=None, server_name=None,
                               token_file=SimpleNamespace(path=str(tmp_path / "seat.token")))
    assert play.way_back(session, given, "h:1").endswith(
        f"--target h:1 --match M1 --token-file {tmp_path / 'seat.token'}")
    assert play.way_back(session, argparse.Namespace(target=None), "127.0.0.1:5") == play.OWN_ENGINE_ENDS


def test_the_flags_that_do_not_go_together_are_usage_errors(tmp_path, capsys):
    """Module docstring and --help: each combination below is a usage error (exit status 2,
    argparse's), refused before any engine is started or reached."""
    import pytest

    token = tmp_path / "seat.token"
    token.write_text("t0ken\n", encoding="utf-8")
    t = str(token)
    for argv in ([], ["--game", "klaberjass", "--token-file", t], ["--match", "M1", "--token-file", t, "--seat", "1"],
                 ["--match", "M1", "--token-file", t, "--name", "ada"], ["--match", "M1", "--lobby"],
                 ["--match", "M1", "--list"], ["--match", "M1", "--game", "klaberjass"],
                 ["--match", "M1", "--listed"], ["--match", "M1", "--turn-time", "30"],
                 ["--game", "klaberjass", "--target", "h:1", "--db", "x.db"],
                 ["--game", "klaberjass", "--seed", "3"], ["--game", "klaberjass", "--autoplay", "first", "--seed", "3"],
                 ["--game", "klaberjass", "--reconnect-tries", "0"], ["--game", "klaberjass", "--reconnect-tries", "x"]):
        with pytest.raises(SystemExit) as exit_:
            play.main(argv)
        assert exit_.value.code == 2, argv
    capsys.readouterr()


class _Table:
    """A client as far as open_seat uses it: one Klaberjass-like game of ``seats`` seats; it
    records the match created and the joins."""

    target = "127.0.0.1:5"

    def __init__(self, seats: int = 3) -> None:
        self.seats = seats
        self.created: dict | None = None
        self.joined: list[tuple] = []

    async def list_games(self):
        return [match_pb2.GameInfo(id="georgian_joker", name="Georgian Joker", num_seats=self.seats)]

    async def create_match(self, game, **kwargs):
        self.created = dict(kwargs, game=game)
        return match_pb2.MatchSummary(match_id="M1")

    async def join(self, match_id, seat=None, player_name=None):
        self.joined.append((match_id, seat, player_name))
        class Session:
            async def summary(self):
                return match_pb2.MatchSummary(match_id=match_id)

        return Session()


def _new_table(**fields):
    import argparse

    values = dict(match=None, token_file=None, game="georgian_joker", seat=None, bots=None, option=None,
                  name="ada", turn_time=None, listed=False)
    values.update(fields)
    return argparse.Namespace(**values)


def test_a_new_match_seats_the_player_where_asked_among_the_bots_in_order():
    """``--bots`` fill the other seats in seat order and ``--seat`` is the player's (module
    docstring, --help); the table's ``--turn-time`` and ``--listed`` go to the match created,
    and the player joins under ``--name``."""
    import asyncio

    client = _Table()
    args = _new_table(seat=1, bots="heuristic,search", turn_time=30.0, listed=True)
    asyncio.run(play.open_seat(client, args, Console(file=io.StringIO(), width=200)))
    assert client.created["seats"] == ["heuristic", None, "search"], client.created
    assert client.created["turn_time_s"] == 30.0 and client.created["listed"] is True, client.created
    assert client.joined == [("M1", 1, "ada")], client.joined


def test_too_few_bots_for_the_table_is_refused():
    """One bot short of the other seats is an error naming how many to give, before any match is made."""
    import asyncio

    import pytest

    client = _Table()
    with pytest.raises(SystemExit, match="give 2 bots"):
        asyncio.run(play.open_seat(client, _new_table(bots="heuristic"), Console(file=io.StringIO())))
    assert client.created is None


def test_joining_a_match_takes_the_seat_asked_for():
    """``--match ID --seat N`` joins seat N (--help: the first open one without --seat)."""
    import asyncio

    client = _Table()
    asyncio.run(play.open_seat(client, _new_table(match="M7", game=None, seat=2), Console(file=io.StringIO())))
    assert client.joined == [("M7", 2, "ada")], client.joined


def test_a_token_file_returns_to_the_seat_its_token_holds():
    """``--match ID --token-file PATH``: the session's seat is the one the server's view names."""
    import argparse
    import asyncio
    from types import SimpleNamespace

    class Session:
        seat = -1

        async def view(self):
            return match_pb2.View(game="klaberjass", seat=1, hand_sizes=[9, 9])

        async def summary(self):
            return match_pb2.MatchSummary(match_id="M1")

    class Client:
        def seat_session(self, match_id, seat, token):
            return Session()

    args = argparse.Namespace(match="M1", token_file=SimpleNamespace(path="/tmp/seat.token"), seat_token="t0ken")
    session, _ = asyncio.run(play.open_seat(Client(), args, Console(file=io.StringIO())))
    assert session.seat == 1


def test_a_seat_token_file_holds_one_header_safe_token(tmp_path):
    """read_seat_token: the token without its newline; an empty file, or one with spaces or
    control characters, holds no seat token (a ValueError naming the file)."""
    import pytest

    path = tmp_path / "seat.token"
    path.write_text("t0ken\n", encoding="utf-8")
    assert play.read_seat_token(str(path)) == "t0ken"
    for text in ("\n", "t0 ken\n", "t0\x01ken"):
        path.write_text(text, encoding="utf-8")
        with pytest.raises(ValueError, match="the seat token file"):
            play.read_seat_token(str(path))


def test_a_lobby_seat_says_bot_open_or_who_sits_there_and_whether_away():
    """lobby_seat_text (its docstring): ``search (bot)``, ``open``, ``ada``, ``ada (away)``."""
    assert play.lobby_seat_text(match_pb2.SeatInfo(kind=match_pb2.SEAT_KIND_BOT, bot="search", taken=True)) == \
        "search (bot)"
    assert play.lobby_seat_text(match_pb2.SeatInfo(kind=match_pb2.SEAT_KIND_OPEN)) == "open"
    assert play.lobby_seat_text(match_pb2.SeatInfo(kind=match_pb2.SEAT_KIND_OPEN, taken=True, player_name="ada",
                                                   present=True)) == "ada"
    assert play.lobby_seat_text(match_pb2.SeatInfo(kind=match_pb2.SEAT_KIND_OPEN, taken=True,
                                                   player_name="ada")) == "ada (away)"


def test_an_option_is_name_equals_value_typed_by_the_game():
    """``--option NAME=VALUE`` (--help): without ``=`` it is refused; a boolean is true or
    false (``false`` is not true); an integer is within the API's int64."""
    import pytest

    game = match_pb2.GameInfo(id="japanese_joker", options=[
        match_pb2.OptionSpec(name="flag", type=match_pb2.OPTION_TYPE_BOOL, allowed_text="true or false"),
        match_pb2.OptionSpec(name="target_score", type=match_pb2.OPTION_TYPE_INT, allowed_text="1 to 99")])
    assert play.parse_option("flag=false", game) == ("flag", False)
    with pytest.raises(SystemExit, match="--option wants name=value"):
        play.parse_option("flag", game)
    assert play.parse_option("target_score=11", game) == ("target_score", 11)
    with pytest.raises(SystemExit, match="target_score is an integer"):
        play.parse_option(f"target_score={2 ** 63}", game)


def test_the_default_name_is_guest_and_four_hex_digits():
    """Without ``--name`` (module docstring): ``guest-`` and four random hex digits."""
    import re

    assert re.fullmatch(r"guest-[0-9a-f]{4}", play.default_name())


def test_autoplay_random_is_repeatable_with_a_seed():
    """``--seed`` seeds the choices of ``--autoplay random``: the same seed, the same choices;
    across seeds it is not always the first legal action."""
    import asyncio

    from engine_service.transport.codec import action_message

    view = match_pb2.View(game="japanese_joker", seat=0, to_act=0, hand_sizes=[6, 6], seq=1,
                          status=match_pb2.MATCH_STATUS_ACTIVE)
    view.legal_actions.extend(action_message(n) for n in ("trump:S", "trump:H", "trump:D", "trump:C", "trump:NT"))
    console = Console(file=io.StringIO(), width=200)

    def chosen(seed):
        session = _Session(view)
        asyncio.run(play.autoplay(session, "random", console, seed=seed))
        return session.chosen

    runs = [chosen(seed) for seed in range(8)]
    assert runs == [chosen(seed) for seed in range(8)]
    assert {tuple(run) for run in runs} != {("trump:S",)}, runs


def test_quitting_a_match_on_the_programs_own_engine_says_it_ends_with_it():
    """q mid-match without ``--target``: the last line says the match ends with the program's
    engine, and offers no way back (there is none)."""
    out = io.StringIO()
    summary = match_pb2.MatchSummary(match_id="M1", status=match_pb2.MATCH_STATUS_ACTIVE, seq=7)
    play.print_result(summary, 0, Console(file=out, width=300), way_back=play.OWN_ENGINE_ENDS)
    assert out.getvalue().strip() == f"match M1 is still active (seq 7): you quit without resigning; " \
        f"{play.OWN_ENGINE_ENDS}", out.getvalue()
