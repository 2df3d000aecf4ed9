"""clients/remote_bot.py: a bot plugin plays a seat over gRPC against a real engine, and the
protobuf View it receives turns back into exactly the view the rules core gives that seat."""

from __future__ import annotations

import asyncio
import json
import random
import time

import pytest

from bot_plugins.search import SearchBot, SearchParams
from clients import remote_bot
from clients.cardgames_client import connect
from clients.local_service import LocalService
from engine_service.plugins import DecisionRequest
from engine_service.plugins.manager import PluginSettings, load_catalog
from engine_service.plugins.runner import BotRunner
from engine_service.rules import all_game_ids, get_game
from engine_service.sessions.api import ViewEnvelope
from engine_service.transport.codec import view_message
from engine_service.transport.generated import match_pb2
from tests.rules.playout import iter_states

COMMON = ("game", "phase", "deal_number", "dealer", "to_act", "seat", "hand", "hand_sizes", "legal",
          "trick", "tricks_taken", "totals", "deal_results", "over", "winners", "table")


def normalized(value):
    return json.loads(json.dumps(value))


@pytest.mark.parametrize("game_id", all_game_ids())
def test_the_wire_view_is_the_rules_view(game_id):
    game = get_game(game_id)
    checked = 0
    for i, state in enumerate(iter_states(game, 21)):
        if i % 7:
            continue
        seat = state.to_act()
        original = state.view(seat)
        msg = view_message(ViewEnvelope(match_id="m", seq=i, status="active", view=original, seat=seat))
        back = remote_bot.view_dict(msg)
        want = normalized(original)
        for key in COMMON:
            assert back[key] == want[key], (game_id, i, key)
        if want.get("last_trick"):
            assert back["last_trick"]["plays"] == [
                {k: v for k, v in p.items() if k != "announce" or v in ("jo", "jotte", "bella")}
                for p in want["last_trick"]["plays"]]
            assert back["last_trick"].get("winner") == want["last_trick"].get("winner")
            assert back["last_trick"].get("points") == want["last_trick"].get("points"), game_id
        # every game's sampler works from the rebuilt view (what it does not carry, such as a
        # trick's points, does not constrain the sample), so remote search bots really search
        sample = game.determinize(back, random.Random(i))
        assert sample.view(seat) == original
        if checked % 5 == 0:
            bot = SearchBot(game_id, SearchParams(iterations=20, worlds=2))
            answer = bot.decide(DecisionRequest(game_id, seat, back, tuple(back["legal"]), random.Random(i), 5.0))
            assert answer in original["legal"]
        checked += 1
        if checked >= 40:
            break
    assert checked >= 10


@pytest.fixture(scope="module")
def engine(tmp_path_factory):
    # heartbeats every second (5 s by default): a remote bot whose move found no engine asks
    # for the current view again at its stream's next heartbeat
    service = LocalService(log_path=tmp_path_factory.mktemp("engine") / "engine.log",
                           args=["--bot-deadline-s", "5", "--heartbeat-interval-s", "1"])
    service.start()
    yield service
    service.stop()
    service.cleanup()


@pytest.mark.parametrize("game_id, options", [
    ("klaberjass", {"kl_target_score": 150}),
    ("japanese_joker", {"target_score": 11}),
])
def test_a_remote_heuristic_bot_plays_a_whole_match(engine, game_id, options):
    runner = BotRunner(load_catalog(PluginSettings.resolve(environ={})))

    async def go():
        async with connect(engine.target) as client:
            await client.wait_ready()
            summary = await client.create_match(game_id, options=options, seats=[None, "random"])
            session = await client.join(summary.match_id, seat=0, player_name="remote")
            return await remote_bot.play_seat(session, runner, "heuristic", game_id, budget_s=2.0, seed=3)

    final, stats = asyncio.run(asyncio.wait_for(go(), 300))
    assert final.status == remote_bot.match_pb2.MATCH_STATUS_FINISHED
    # a finished match has the seat play at least one deal's nine cards; "> 10" failed now and
    # then: a Klaberjass match to 150 can end with its first deal, 10 decisions of the seat
    assert stats.decisions >= 9 and stats.failures == {}


def test_a_remote_bot_decides_again_through_an_outage_longer_than_its_submit_retries(engine, capsys):
    """A move the engine did not answer (UNAVAILABLE after the client library's tries: ten,
    ~5 s, by default) ended the remote bot with "error: UNAVAILABLE" while its stream would
    have come back. Refused submits hitting its third decision, for an outage longer than its
    client's tries (a quick RetryPolicy: its four tries take about a tenth of a second, the
    outage a second): it decides again on the current view once the engine answers (asked at
    each heartbeat of its stream, every second from this module's engine), and plays the
    match to its end long before the match's turn timer (120 s, the longest) would have moved
    for it."""
    from clients.cardgames_client import RetryPolicy
    from tests.clients.conftest import SubmitOutageProxy

    runner = BotRunner(load_catalog(PluginSettings.resolve(environ={})))
    policy = RetryPolicy(attempts=4, initial_backoff_s=0.02, max_backoff_s=0.05)

    async def go():
        async with SubmitOutageProxy(engine.target, after=3, outage_s=1.0) as proxy:
            async with connect(proxy.target, retry=policy) as client:
                await client.wait_ready()
                summary = await client.create_match("japanese_joker", seats=[None, "random"],
                                                    options={"target_score": 11, "turn_time_s": 120})
                session = await client.join(summary.match_id, seat=0, player_name="remote")
                final, stats = await remote_bot.play_seat(session, runner, "heuristic", "japanese_joker",
                                                          budget_s=0.5, seed=3)
            return final, stats, proxy.refused

    final, stats, refused = asyncio.run(asyncio.wait_for(go(), 60))  # far within the turn timer
    assert final.status == remote_bot.match_pb2.MATCH_STATUS_FINISHED
    # every try of the first refused submit was refused: the client's own retries ran out
    assert refused >= policy.attempts and stats.unanswered >= 1
    assert "deciding again once it is back" in capsys.readouterr().err


def test_command_line_creates_a_match_and_plays_it(engine, capsys, monkeypatch):
    """The whole command against an engine; its seat token, the seat's secret, is on no line
    it prints (--verbose's included)."""
    from clients.cardgames_client import SeatSession

    tokens: list[str] = []
    joined = SeatSession.__init__

    def recorded(self, client, match_id, seat, token):
        tokens.append(token)
        joined(self, client, match_id, seat, token)

    monkeypatch.setattr(SeatSession, "__init__", recorded)
    code = remote_bot.main(["--target", engine.target, "--bot", "heuristic", "--game", "klaberjass",
                            "--opponents", "random", "--option", "kl_target_score=100", "--seed", "1", "--verbose"])
    assert code == 0
    out, err = capsys.readouterr()
    assert "finished" in out and "(heuristic)" in out and "failures none" in out
    assert out.startswith("seq ") and "\nmatch " in "\n" + err
    [token] = tokens
    assert len(token) >= 16 and token not in out + err


def test_a_result_line_it_cannot_write_is_one_line_not_a_traceback(engine):
    """The result line to a full disk (``> FILE``; /dev/full here) was an OSError traceback at
    the match's end; one line on stderr now, exit status 1 (stdout_guarded, as the other
    clients)."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    env = dict(os.environ, PYTHONPATH=str(root))
    env.pop("PYTHONUNBUFFERED", None)  # buffered, as from a shell: the output fails at its flush
    with open("/dev/full", "w") as full:
        result = subprocess.run([sys.executable, "-m", "clients.remote_bot", "--target", engine.target, "--bot",
                                 "heuristic", "--game", "klaberjass", "--opponents", "random", "--option",
                                 "kl_target_score=100", "--seed", "1"], stdout=full, stderr=subprocess.PIPE,
                                text=True, timeout=300, cwd=root, env=env, stdin=subprocess.DEVNULL)
    assert result.returncode == 1 and result.stderr.splitlines()[-1:] == [
        "error: cannot write standard output (No space left on device)"], result.stderr
    assert "Traceback" not in result.stderr


def test_a_reader_that_left_ends_it_quietly_with_exit_status_1(engine):
    """docs/bots.md: the reader of its output gone (``| head``) ends it quietly with exit
    status 1 (the match was not seen to its end), no ``error:`` line and no traceback."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    env = dict(os.environ, PYTHONPATH=str(root))
    env.pop("PYTHONUNBUFFERED", None)
    proc = subprocess.Popen([sys.executable, "-m", "clients.remote_bot", "--target", engine.target, "--bot",
                             "heuristic", "--game", "klaberjass", "--opponents", "random", "--option",
                             "kl_target_score=100", "--seed", "1", "--verbose"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, cwd=root, env=env, stdin=subprocess.DEVNULL)
    proc.stdout.close()  # the reader left before the first line
    err = proc.stderr.read()
    assert proc.wait(timeout=300) == 1, err
    assert "Traceback" not in err and "error:" not in err, err


@pytest.mark.parametrize("bot, failure", [("sys-exits", "crash"), ("overruns", "timeout"),
                                          ("wrecks", "exception")])
def test_a_failing_remote_bot_falls_back_to_the_auto_move(engine, bot, failure):
    """As in the service: a bot's sys.exit is a crash and a bot past its budget a timeout; the
    seat plays the auto-move and the client goes on (sys.exit ended it; an overrunning bot
    made it miss the turn timer)."""
    runner = BotRunner(load_catalog(PluginSettings.resolve(extra=["tests.plugins.bad_bots"], environ={})))

    async def go():
        async with connect(engine.target) as client:
            await client.wait_ready()
            summary = await client.create_match("klaberjass", options={"kl_target_score": 1},
                                                seats=[None, "random"])
            session = await client.join(summary.match_id, seat=0, player_name="failing")
            # an overrunning bot runs past a short budget; the others fail at once, and get a
            # budget a loaded machine cannot turn into a timeout
            budget_s = 0.05 if failure == "timeout" else 5.0
            return await remote_bot.play_seat(session, runner, bot, "klaberjass", budget_s=budget_s)

    final, stats = asyncio.run(asyncio.wait_for(go(), 300))
    assert final.status == remote_bot.match_pb2.MATCH_STATUS_FINISHED
    assert stats.decisions > 0 and stats.failures == {failure: stats.decisions}


def test_a_turn_timer_shortens_the_budget(engine):
    """With a 10 s turn timer (the Japanese Joker minimum) the bot is told at most 9.75 s,
    whatever its own budget, and plays every decision in time."""
    from tests.bots import recorder

    runner = BotRunner(load_catalog(PluginSettings.resolve(extra=["tests.bots.recorder"], environ={})))
    recorder.BUDGETS.clear()

    async def go():
        async with connect(engine.target) as client:
            await client.wait_ready()
            summary = await client.create_match("japanese_joker", options={"target_score": 11},
                                                seats=[None, "random"], turn_time_s=10.0)
            session = await client.join(summary.match_id, seat=0, player_name="timed")
            return await remote_bot.play_seat(session, runner, "recorder", "japanese_joker", budget_s=60.0)

    final, stats = asyncio.run(asyncio.wait_for(go(), 300))
    assert final.status == remote_bot.match_pb2.MATCH_STATUS_FINISHED
    assert stats.decisions == len(recorder.BUDGETS) > 10 and stats.failures == {}
    assert max(recorder.BUDGETS) <= 10.0 - remote_bot.NETWORK_MARGIN_S + 0.05
    assert min(recorder.BUDGETS) > 5.0  # the timer restarts for every decision


def test_its_own_engine_plays_bots_unpaced(monkeypatch):
    """Without --target remote_bot starts an engine where every player is a program: bot moves
    are not paced there (a local Japanese Joker match took minutes at the 2 s pace)."""
    started = []

    class Recorder:
        def __init__(self, **kwargs):
            started.append(kwargs)

        def start(self):
            raise KeyboardInterrupt  # stop before anything runs

        def stop(self):
            pass

        def cleanup(self):
            pass

    monkeypatch.setattr(remote_bot, "LocalService", Recorder)
    remote_bot.main(["--bot", "random", "--game", "klaberjass"])
    assert started and list(started[0]["args"]) == ["--bot-pace-s", "0"]


@pytest.mark.parametrize("opponents, seats", [("heuristic", ["heuristic"] * 3),
                                              ("random,open,heuristic", ["random", "", "heuristic"])])
def test_one_opponent_name_plays_every_other_seat(engine, opponents, seats):
    """`--opponents NAME` fills every other seat of a four-seat game with that bot (it used to
    be refused with "give 3 opponents"); a list names them seat by seat ('open': a player's)."""
    args = remote_bot.build_parser().parse_args(["--target", engine.target, "--bot", "heuristic",
                                                 "--game", "georgian_joker", "--opponents", opponents])

    async def go():
        async with connect(engine.target) as client:
            await client.wait_ready()
            session = await remote_bot.open_seat(client, args, get_game("georgian_joker"))
            summary = await client.get_match(session.match_id)
            return session.seat, [s.bot for s in summary.seats]

    seat, bots = asyncio.run(asyncio.wait_for(go(), 60))
    assert seat == 0 and bots == [""] + seats


def test_a_wrong_number_of_opponents_is_refused():
    args = remote_bot.build_parser().parse_args(["--bot", "heuristic", "--game", "georgian_joker",
                                                 "--opponents", "random,random"])
    with pytest.raises(SystemExit, match=r"--opponents: georgian_joker has 4 seats: "
                                         r"give one bot name \(it plays every other seat\) or 3,"):
        asyncio.run(remote_bot.open_seat(None, args, get_game("georgian_joker")))


@pytest.mark.parametrize("seat", ["7", "-1"])
def test_a_seat_off_the_table_is_refused_before_a_match_is_created(seat):
    """--seat past the game's seats created the match anyway (the bot's seat put last, or first
    but one for -1), then failed the join with BAD_SEAT: a match left waiting for nobody."""
    args = remote_bot.build_parser().parse_args(["--bot", "random", "--game", "japanese_joker",
                                                 f"--seat={seat}"])

    class NoCreate:
        async def create_match(self, *args, **kwargs):
            raise AssertionError("a match was created for a seat it does not have")

    with pytest.raises(SystemExit, match=f"--seat {seat}: japanese_joker has seats 0 to 1"):
        asyncio.run(remote_bot.open_seat(NoCreate(), args, get_game("japanese_joker")))


@pytest.mark.parametrize("target", [["--target", "127.0.0.1:1"], []])
def test_a_plugin_module_that_does_not_load_is_a_usage_error_before_any_engine(target, monkeypatch, capsys):
    """``--plugin`` naming a module that fails to import: the client went on without it, started
    or reached an engine and then said "no installed bot", the module unnamed (or played with
    another bot of that name). A usage error now, naming the module and the error's type, as the
    arena's (check_named_plugins), before any engine is started or connected to."""

    def no_engine(*args, **kwargs):
        raise AssertionError("an engine was started or connected to")

    monkeypatch.setattr(remote_bot, "LocalService", no_engine)
    monkeypatch.setattr(remote_bot, "connect", no_engine)
    for module, says in (("tests.plugins.import_fails", "(import): ImportError at import_fails.py:3"),
                         ("tests.plugins.no_such_module",
                          "(import): ModuleNotFoundError: no module named 'tests.plugins.no_such_module'")):
        with pytest.raises(SystemExit) as exit_:
            remote_bot.main([*target, "--bot", "random", "--game", "klaberjass", "--plugin", module])
        err = capsys.readouterr().err
        assert exit_.value.code == 2 and f"error: --plugin {module} did not load {says}" in err, err


def test_a_game_the_rules_core_does_not_have_is_one_line_not_a_traceback(monkeypatch, capsys):
    """``--game nope`` started an engine of its own (or reached --target) and then died with an
    UnknownGame traceback; it is a usage error before any engine now. A match (``--match``) of
    a game this client's rules core lacks (a newer engine's) is one line too."""
    import contextlib

    def no_engine(*args, **kwargs):
        raise AssertionError("an engine was started or connected to")

    monkeypatch.setattr(remote_bot, "LocalService", no_engine)
    monkeypatch.setattr(remote_bot, "connect", no_engine)
    with pytest.raises(SystemExit) as exit_:
        remote_bot.main(["--bot", "random", "--game", "nope"])
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and "error: --game: unknown game 'nope'; known games: klaberjass" in err, err

    class NewerEngine:
        async def wait_ready(self):
            pass

        async def get_match(self, match_id):
            return match_pb2.MatchSummary(match_id=match_id, game="skat")

    @contextlib.asynccontextmanager
    async def newer_engine(*args, **kwargs):
        yield NewerEngine()

    monkeypatch.setattr(remote_bot, "connect", newer_engine)
    with pytest.raises(SystemExit) as exit_:
        remote_bot.main(["--bot", "random", "--target", "127.0.0.1:1", "--match", "M1"])
    assert exit_.value.code == ("error: match M1 is a game of 'skat', which this client's rules do not have: "
                                "the bot cannot play it here")


@pytest.mark.parametrize("flags, says", [
    (["--game", "japanese_joker", "--seat", "2"], "--seat 2: japanese_joker has seats 0 to 1"),
    (["--game", "georgian_joker", "--opponents", "random,random"],
     "--opponents: georgian_joker has 4 seats: give one bot name (it plays every other seat) or 3, comma-separated"),
    (["--game", "klaberjass", "--option", "kl_target_score"], "--option wants name=value, not 'kl_target_score'"),
    (["--game", "klaberjass", "--option", "=300"], "--option wants name=value, not '=300'"),
    (["--game", "klaberjass", "--option", f"kl_target_score={2**63}"],
     f"--option option 'kl_target_score': invalid value {2**63}; allowed: an integer >= 1"),
    (["--game", "klaberjass", "--option", "nosuch=5"], "--option nosuch: klaberjass has no such option (options: "),
    (["--game", "japanese_joker", "--option", "target_score=12"],
     "--option option 'target_score': invalid value 12; allowed: 21, 11, 15, 31"),
    (["--game", "georgian_joker", "--plugin", "tests.plugins.klaberjass_only", "--bot", "klaberjass-only"],
     "--bot 'klaberjass-only' does not play georgian_joker"),
    (["--match", "M1", "--bot", "nosuch"], "--bot 'nosuch': no installed bot has this name (installed: heuristic, "),
])
def test_a_new_match_it_cannot_make_is_a_usage_error_before_any_engine(flags, says, monkeypatch, capsys):
    """--seat off the table, the wrong number of --opponents, a malformed --option or a bot
    that does not play the game were refused once an engine of its own had been started (or
    --target reached), exit status 1; the rules core knows the game's seats and the catalog the
    bot's games, so they are usage errors before any engine now."""
    def no_engine(*args, **kwargs):
        raise AssertionError("an engine was started or connected to")

    monkeypatch.setattr(remote_bot, "LocalService", no_engine)
    monkeypatch.setattr(remote_bot, "connect", no_engine)
    with pytest.raises(SystemExit) as exit_:
        remote_bot.main(["--bot", "random", *flags])
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and f"python -m clients.remote_bot: error: {says}" in err, err


def test_an_engine_of_its_own_that_cannot_start_is_one_line(tmp_path, capsys, monkeypatch):
    """Without --target remote_bot starts an engine; one that could not start (a --db in a
    folder that does not exist) was a ServiceFailed traceback with the engine's whole log, and
    its log file was left behind. One line saying why now, exit status 1, as clients.play
    (LocalService.failure), the log file removed."""
    import tempfile

    db = tmp_path / "missing" / "x.sqlite3"
    (tmp_path / "tmp").mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))  # where the engine's log goes
    assert remote_bot.main(["--bot", "random", "--game", "klaberjass", "--db", str(db)]) == 1
    err = capsys.readouterr().err
    assert err.splitlines()[-1] == (f"error: the engine did not start: cannot open database {db}: "
                                    f"directory {db.parent} does not exist"), err
    assert "Traceback" not in err and list((tmp_path / "tmp").iterdir()) == []


@pytest.mark.parametrize("budget", ["-1", "0", "nan", "inf", "fast", "1e13", "86400000.5"])
def test_a_budget_that_is_not_a_positive_number_of_milliseconds_is_a_usage_error(budget, capsys):
    """--budget-ms -1 or nan was taken and gave the bot a budget of 0 for every decision; at
    most a day (docs/bots.md)."""
    with pytest.raises(SystemExit) as exit_:
        remote_bot.build_parser().parse_args(["--bot", "random", "--game", "klaberjass", f"--budget-ms={budget}"])
    assert exit_.value.code == 2 and "--budget-ms" in capsys.readouterr().err
    assert remote_bot.build_parser().parse_args(["--bot", "random", "--budget-ms", "250"]).budget_ms == 250.0
    assert remote_bot.build_parser().parse_args(["--bot", "random", "--budget-ms", "86400000"]).budget_ms == 86_400_000


HUNG_DECISION = """
import asyncio, random, sys
from clients import remote_bot
from engine_service.plugins.manager import PluginSettings, load_catalog
from engine_service.plugins.runner import BotRunner
from engine_service.rules import get_game
from tests.rules.playout import iter_states

state = next(iter_states(get_game("klaberjass"), 1))
view = state.view(state.to_act())
runner = BotRunner(load_catalog(PluginSettings.resolve(extra=["tests.plugins.bad_bots"], environ={})))
reply = asyncio.run(remote_bot._decide(runner, "sleeps", "klaberjass", view["seat"], view, 1, 0.1))
print(reply.failure, flush=True)
"""


def test_a_bot_that_never_answers_does_not_keep_the_client_alive():
    """The thread of a timed-out decision runs on (a thread cannot be killed), but it must not
    hold the process at its end: ``asyncio.run`` waits for its executor's threads, which made
    ``remote_bot`` hang after the match until the bot returned (``sleeps``: 60 s; never, for a
    bot in an endless loop)."""
    import os
    import subprocess
    import sys
    import time

    from tests.shared_paths import ROOT

    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    started = time.monotonic()
    proc = subprocess.run([sys.executable, "-c", HUNG_DECISION], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=45)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[-1] == "timeout"  # after the plugin loading log lines
    assert time.monotonic() - started < 30


def test_a_decisions_budget_follows_the_servers_clock_read_from_heartbeats():
    """The view's deadline is on the server's clock. A machine a minute behind the server
    gave its bot a minute too long (the server's timer played first), one a minute ahead
    gave it nothing. The HEARTBEAT's server_time gives the offset (the largest reading: each
    falls short of it by the transit time); without one the clocks are taken to agree."""
    from google.protobuf import struct_pb2

    from engine_service.transport.generated import match_pb2

    def heartbeat(server_time: float) -> struct_pb2.Struct:
        details = struct_pb2.Struct()
        details.update({"deadline": None, "interval_s": 5, "server_time": server_time})
        return details

    now = time.time()
    view = match_pb2.View()
    view.deadline.FromNanoseconds(int((now + 60 + 10) * 1e9))  # 10 s left by a server 60 s ahead
    behind = remote_bot.ServerClock()
    assert remote_bot.decision_budget(view, 100.0, 0.0, behind) > 60  # clocks taken to agree: too long
    behind.heard(heartbeat(now + 59.8), now)  # 0.2 s in transit
    behind.heard(heartbeat(now + 59.5), now)  # a slower one does not lower the estimate
    assert 9.0 < remote_bot.decision_budget(view, 30.0, 0.0, behind) < 10.0
    ahead = remote_bot.ServerClock()
    ahead.heard(heartbeat(now - 60), now)
    early = match_pb2.View()
    early.deadline.FromNanoseconds(int((now - 60 + 10) * 1e9))  # 10 s left by a server 60 s behind
    assert 9.0 < remote_bot.decision_budget(early, 30.0, 0.0, ahead) < 10.0
    old_server = remote_bot.ServerClock()
    old_server.heard(struct_pb2.Struct(), now)  # no server_time: nothing learnt
    assert old_server.offset_s is None
    assert remote_bot.decision_budget(match_pb2.View(), 30.0, 8.0, old_server) == 8.0 - remote_bot.NETWORK_MARGIN_S


def test_an_engine_behind_a_private_ca_is_reached_with_ca_and_server_name(tmp_path, capsys):
    """remote_bot had only --tls (the system's roots): an engine whose certificate a private
    CA signed, which the other clients reach with --ca / --server-name, was out of its reach.
    An unreadable CA file is one error line."""
    from tests.clients.conftest import self_signed_certificate

    cert, key = self_signed_certificate(tmp_path)
    with LocalService(args=["--tls-cert", str(cert), "--tls-key", str(key), "--bot-pace-s", "0"]) as service:
        code = remote_bot.main(["--target", service.target, "--tls", "--ca", str(cert), "--server-name", "localhost",
                                "--bot", "random", "--game", "japanese_joker", "--opponents", "random",
                                "--option", "target_score=11", "--seed", "2"])
        assert code == 0 and "finished" in capsys.readouterr().out
        with pytest.raises(SystemExit) as refused:  # a usage error, as in every client
            remote_bot.main(["--target", service.target, "--tls", "--ca", str(tmp_path / "missing.pem"),
                             "--bot", "random", "--game", "japanese_joker"])
        assert refused.value.code == 2
        assert "error: argument --ca: cannot read the CA file" in capsys.readouterr().err


def test_the_last_trick_fields_a_rebuilt_view_lacks_are_the_ones_docs_bots_md_names():
    """docs/bots.md, "Remote bots": the page named Klaberjass ``number`` and Jo-Jotte ``value``
    and ``leader`` as what a rebuilt ``last_trick`` lacks, missing Klaberjass's and Georgian
    Joker's ``leader``, and said Klaberjass's ``table.tricks`` is not rebuilt while the wire's
    ``table`` carries it. Each game's missing fields are read off the page and compared."""
    from pathlib import Path
    import re

    doc = (Path(__file__).resolve().parents[2] / "docs" / "bots.md").read_text()
    start = doc.index("lacks the other fields some games")
    listed = doc[doc.index("(", start) + 1:doc.index(")", start)]
    names = {get_game(g).name: g for g in all_game_ids()}
    documented = {g: set() for g in all_game_ids()}
    for part in listed.split(", "):
        name = next(n for n in names if part.startswith(n + " "))
        documented[names[name]] = set(re.findall(r"`([a-z_]+)`", part))
    assert "is not rebuilt" not in doc[start:doc.index("A move the engine did not answer", start)]
    for game_id in all_game_ids():
        game = get_game(game_id)
        missing: set[str] = set()
        tricks = 0
        for i, state in enumerate(iter_states(game, 5)):
            if i > 300:
                break
            seat = state.to_act()
            if seat < 0:
                continue
            original = state.view(seat)
            back = remote_bot.view_dict(view_message(
                ViewEnvelope(match_id="m", seq=i, status="active", view=original, seat=seat)))
            if original["last_trick"]:
                missing |= set(original["last_trick"]) - set(back["last_trick"])
            assert back["table"] == normalized(original["table"]), (game_id, i)
            tricks += bool(original["table"].get("tricks"))
        assert missing == documented[game_id], game_id
        assert tricks or game_id == "japanese_joker", game_id
