"""clients/remote_bot.py's seat loop (play_seat) and its decision thread, against a scripted
session and bot runner: no engine, so each documented behaviour (docs/bots.md, "Remote bots";
docs/api.md) is pinned by a test that takes milliseconds, where the end-to-end tests of
test_remote_bot.py play whole matches and see only their outcome."""

from __future__ import annotations

import asyncio
import contextvars
import copy
import threading
from typing import Any

import grpc
import pytest

from clients import remote_bot
from clients.cardgames_client import CardGamesError, FailedPrecondition, StaleSequence
from engine_service.plugins.runner import Reply
from engine_service.rules import get_game
from engine_service.sessions.api import ViewEnvelope
from engine_service.transport.codec import view_message
from engine_service.transport.generated import card_games_pb2, match_pb2
from tests.rules.playout import iter_states

GAME = "klaberjass"
TOKEN = "seat-token-7f3a9c"  # a seat token: a secret, never on stdout or stderr


def _views() -> tuple[dict, dict]:
    """Seat 0's view of a Klaberjass state where it is to act, and of one where seat 1 is (the
    playout advances one state object: each view is taken as it comes)."""
    mine = theirs = None
    for state in iter_states(get_game(GAME), 1):
        if state.to_act() == 0 and mine is None:
            mine = copy.deepcopy(state.view(0))
        elif state.to_act() == 1 and theirs is None:
            theirs = copy.deepcopy(state.view(0))
        if mine is not None and theirs is not None:
            return mine, theirs
    raise AssertionError("no state for each seat")


MINE, THEIRS = _views()


def wire_view(seq: int, *, my_turn: bool = True, status: str = "active", deadline: float | None = None,
              deals_scored: int = 0) -> match_pb2.View:
    """Seat 0's protobuf View at ``seq``: its turn or seat 1's; ``deals_scored`` entries in
    ``deal_results`` (what tells the loop a deal ended)."""
    view = dict(MINE if my_turn else THEIRS)
    view["deal_results"] = [{"deal": d} for d in range(deals_scored)]
    return view_message(ViewEnvelope(match_id="M", seq=seq, status=status, view=view, seat=0, deadline=deadline))


def event(kind: int, seq: int, view: match_pb2.View | None = None, details: dict | None = None
          ) -> card_games_pb2.WatchMatchResponse:
    msg = card_games_pb2.WatchMatchResponse(kind=kind, seq=seq, match_id="M")
    if view is not None:
        msg.view.CopyFrom(view)
    if details is not None:
        msg.details.update(details)
    return msg


def action(seq: int, **kwargs: Any) -> card_games_pb2.WatchMatchResponse:
    return event(match_pb2.EVENT_KIND_ACTION, seq, wire_view(seq, **kwargs))


def snapshot(seq: int, **kwargs: Any) -> card_games_pb2.WatchMatchResponse:
    """The event a seat's stream opens with (docs/api.md, WatchMatch: first a SNAPSHOT)."""
    return event(match_pb2.EVENT_KIND_SNAPSHOT, seq, wire_view(seq, **kwargs))


def heartbeat(**details: Any) -> card_games_pb2.WatchMatchResponse:
    return event(match_pb2.EVENT_KIND_HEARTBEAT, 0, details={"interval_s": 1, **details})


def ended(seq: int) -> card_games_pb2.WatchMatchResponse:
    return event(match_pb2.EVENT_KIND_MATCH_ENDED, seq, wire_view(seq, my_turn=False, status="finished"))


def unavailable(code: grpc.StatusCode = grpc.StatusCode.UNAVAILABLE) -> CardGamesError:
    return CardGamesError(code, "no engine")


class ScriptedSession:
    """Seat 0 of match M: ``events`` is its stream (a SNAPSHOT first, ending with MATCH_ENDED, as
    the library's watch); ``submits`` the answers to its submits
    in turn (a seq, or an exception to raise; the expected seq + 1 once they run out);
    ``views`` likewise for GetView."""

    seat = 0
    match_id = "M"
    token = TOKEN

    def __init__(self, events: list, submits: list | None = None, views: list | None = None,
                 turn_time_s: float | None = None) -> None:
        self.events = events
        self.submits = list(submits or ())
        self.views = list(views or ())
        self.turn_time_s = turn_time_s
        self.submitted: list[tuple[str, int | None]] = []
        self.view_calls = 0
        self.summaries = 0

    async def summary(self) -> match_pb2.MatchSummary:
        self.summaries += 1
        summary = match_pb2.MatchSummary(match_id="M", game=GAME, status=match_pb2.MATCH_STATUS_ACTIVE)
        if self.summaries > 1:  # the one asked at the end: the match as it ended
            summary.status = match_pb2.MATCH_STATUS_FINISHED
        if self.turn_time_s is not None:
            summary.turn_time.FromNanoseconds(int(self.turn_time_s * 1e9))
        return summary

    async def watch(self, after_seq: int | None = None):
        # docs/bots.md: on_match_start gets "the view when its stream opens": a stream opened
        # with an after_seq replays the actions after it, each with the view of its moment
        # (docs/api.md, Watching); one opened without starts with a SNAPSHOT of the current view
        assert after_seq is None, "the stream is opened without after_seq"
        assert self.events[0].kind == match_pb2.EVENT_KIND_SNAPSHOT, "a stream opens with a SNAPSHOT"
        for item in self.events:
            yield item
            if item.kind == match_pb2.EVENT_KIND_MATCH_ENDED:
                return  # the library's watch ends there (stop_when_ended)

    async def view(self) -> match_pb2.View:
        self.view_calls += 1
        answer = self.views.pop(0)
        if isinstance(answer, BaseException):
            raise answer
        return answer

    async def submit(self, action: str, expected_seq: int | None = None) -> card_games_pb2.SubmitActionResponse:
        self.submitted.append((action, expected_seq))
        answer = self.submits.pop(0) if self.submits else expected_seq + 1
        if isinstance(answer, BaseException):
            raise answer
        return card_games_pb2.SubmitActionResponse(seq=answer)


class Recorder:
    """A bot whose callbacks record what they get, then wreck the view they were given (the
    bot's copy is its own to change, docs/bots.md)."""

    def __init__(self) -> None:
        self.calls: list[tuple] = []

    def decide(self, request: Any) -> str:  # not called: the runner below answers
        raise AssertionError

    def _wreck(self, view: dict) -> None:
        view["legal"].clear()
        view["hand"].clear()

    def on_match_start(self, game_id: str, seat: int, view: dict) -> None:
        self.calls.append(("on_match_start", game_id, seat, view["deal_results"], len(view["legal"])))
        self._wreck(view)

    def on_deal_end(self, view: dict) -> None:
        self.calls.append(("on_deal_end", len(view["deal_results"]), len(view["legal"])))
        self._wreck(view)

    def on_match_end(self, view: dict) -> None:
        self.calls.append(("on_match_end", view["phase"]))


class ScriptedRunner:
    """A BotRunner whose bot answers each decision with ``replies`` in turn (the first legal
    action once they run out), recording what it was asked."""

    def __init__(self, bot: Any = None, replies: list | None = None) -> None:
        self._bot = bot if bot is not None else Recorder()
        self.replies = list(replies or ())
        self.asked: list[dict] = []

    def bot(self, name: str, game_id: str) -> Any:
        return self._bot

    def decide(self, name: str, game_id: str, seat: int, view: dict, legal: Any, seed: int, budget_s: float, *,
               in_process: bool = False) -> Reply:
        self.asked.append({"seat": seat, "legal": list(legal), "hand": list(view["hand"]), "seed": seed,
                           "budget_s": budget_s, "in_process": in_process})
        if self.replies:
            reply = self.replies.pop(0)
            if reply.failure == "exception":  # a failed bot may have wrecked its copy
                view["legal"].clear()
            return reply
        return Reply(legal[0], None, elapsed_s=0.5)


def play(session: ScriptedSession, runner: ScriptedRunner | None = None, **kwargs: Any) -> tuple[Any, Any]:
    runner = runner or ScriptedRunner()
    kwargs.setdefault("budget_s", 5.0)
    return asyncio.run(asyncio.wait_for(remote_bot.play_seat(session, runner, "recorder", GAME, **kwargs), 30))


LEGAL = list(MINE["legal"])


def test_each_view_of_its_turn_is_decided_and_submitted_with_its_seq():
    """docs/bots.md: it "submits with expected_seq"; only a view of its own turn in a match
    that goes on is decided."""
    session = ScriptedSession([snapshot(3, my_turn=False), action(5), action(9, status="finished"), ended(12)])
    runner = ScriptedRunner()
    final, stats = play(session, runner)
    assert session.submitted == [(LEGAL[0], 5)]
    assert [a["legal"] for a in runner.asked] == [LEGAL] and runner.asked[0]["in_process"]
    assert stats.decisions == 1 and stats.think_s == 0.5 and stats.failures == {}
    # the summary returned is the one asked at the end, not the one of the start
    assert final.status == match_pb2.MATCH_STATUS_FINISHED and session.summaries == 2


def test_an_older_view_than_its_own_last_action_is_not_decided():
    """After its action at seq 6 a view of seq 5 (an event delivered late) is out of date,
    while the view of seq 6 itself (the seat acts again, e.g. it took the trick) is decided."""
    session = ScriptedSession([snapshot(4), action(5), action(6), action(7, my_turn=False), ended(8)],
                              submits=[6, 8])
    _, stats = play(session)
    assert session.submitted == [(LEGAL[0], 4), (LEGAL[0], 6)]
    # the result line's "thinking" is the decisions' time added up (0.5 s each here)
    assert stats.decisions == 2 and stats.think_s == 1.0


def test_a_snapshot_behind_its_last_action_is_the_match_as_it_stands():
    """A SNAPSHOT at a seq below the seat's last action: the match was restored from a backup
    (docs/api.md, Watching) and went back; its view is current and decided."""
    session = ScriptedSession([snapshot(9), snapshot(4), ended(6)],
                              submits=[10])
    play(session)
    assert session.submitted == [(LEGAL[0], 9), (LEGAL[0], 4)]


def test_the_callbacks_get_views_of_their_own_at_the_start_each_deal_end_and_the_end():
    """docs/bots.md: on_match_start(game_id, seat, view) with the view when the stream opens
    (here mid-match, two deals already scored: no on_deal_end for those), on_deal_end(view)
    once per deal scored after, on_match_end(view) with the final view. Every call gets a
    view of its own: the callbacks wreck theirs, and the decisions' views are whole."""
    bot = Recorder()
    runner = ScriptedRunner(bot)
    session = ScriptedSession([snapshot(2, deals_scored=2), action(3, deals_scored=3),
                               action(5, deals_scored=3, my_turn=False), action(6, deals_scored=4, my_turn=False),
                               ended(9)])
    play(session, runner)
    assert bot.calls == [("on_match_start", GAME, 0, [{"deal": 0}, {"deal": 1}], len(LEGAL)),
                         ("on_deal_end", 3, len(LEGAL)),
                         ("on_deal_end", 4, 0),
                         ("on_match_end", THEIRS["phase"])]
    assert [a["legal"] for a in runner.asked] == [LEGAL, LEGAL]
    assert all(a["hand"] for a in runner.asked)


def test_a_snapshot_restored_to_fewer_scored_deals_is_no_deal_end_and_the_deal_dealt_again_ends():
    """docs/bots.md: on_deal_end gets "the view right after the deal's last action". A SNAPSHOT
    of a match restored from a backup (docs/api.md, Watching: the match as it now stands) with
    fewer deals scored than the seat saw ended no deal: no on_deal_end for it. The deal it
    takes up again is dealt again (docs/api.md, Fair dealing) and its end is a deal's end like
    any other: it was not reported, the loop counting from the most deals it had ever seen. A
    SNAPSHOT with more deals scored (a stream resumed more than --snapshot-threshold actions
    behind, docs/api.md) is a deal's end, as an ACTION's view would be."""
    bot = Recorder()
    session = ScriptedSession([snapshot(5, deals_scored=3, my_turn=False), snapshot(2, deals_scored=2, my_turn=False),
                               action(3, deals_scored=3, my_turn=False), snapshot(200, deals_scored=5, my_turn=False),
                               ended(201)])
    play(session, ScriptedRunner(bot))
    assert [c[:2] for c in bot.calls] == [("on_match_start", GAME), ("on_deal_end", 3), ("on_deal_end", 5),
                                          ("on_match_end", THEIRS["phase"])]


def test_the_bot_plays_the_seat_the_session_took():
    """on_match_start(game_id, seat, view) and each decision get the seat taken (seat 1 here,
    its own views), not seat 0."""
    state = next(s for s in iter_states(get_game(GAME), 1) if s.to_act() == 1)
    view = view_message(ViewEnvelope(match_id="M", seq=1, status="active", view=copy.deepcopy(state.view(1)), seat=1))
    session = ScriptedSession([event(match_pb2.EVENT_KIND_SNAPSHOT, 1, view), ended(3)])
    session.seat = 1
    bot = Recorder()
    runner = ScriptedRunner(bot)
    play(session, runner)
    assert bot.calls[0][:3] == ("on_match_start", GAME, 1)
    assert [a["seat"] for a in runner.asked] == [1] and session.submitted == [(state.view(1)["legal"][0], 1)]


def test_a_callback_that_raises_or_is_missing_does_not_stop_the_match(capsys):
    """docs/bots.md: a callback "that raises is ignored" (the name of its exception on
    stderr); a bot without callbacks is called for none."""

    class Raises:
        def on_match_start(self, game_id, seat, view):
            raise ValueError("secret")

        def on_deal_end(self, view):
            raise RuntimeError("secret")  # whatever it raises

        on_match_end = 7  # not callable: not a callback

    session = ScriptedSession([snapshot(1), action(2, deals_scored=1, my_turn=False), ended(3)])
    play(session, ScriptedRunner(Raises()))
    assert session.submitted == [(LEGAL[0], 1)]
    assert capsys.readouterr().err.splitlines() == ["remote_bot: on_match_start raised ValueError",
                                                    "remote_bot: on_deal_end raised RuntimeError"]


def test_a_callback_that_calls_sys_exit_is_ignored_too(capsys):
    """docs/bots.md: a callback "that raises is ignored", a ``sys.exit`` in it too: it ended
    the client in the middle of the match."""

    class Exits:
        def on_deal_end(self, view):
            raise SystemExit(3)

    session = ScriptedSession([snapshot(1), action(2, deals_scored=1, my_turn=True), ended(3)])
    play(session, ScriptedRunner(Exits()))
    assert session.submitted == [(LEGAL[0], 1), (LEGAL[0], 2)]
    assert capsys.readouterr().err.splitlines() == ["remote_bot: on_deal_end raised SystemExit"]


def test_a_failed_decision_plays_the_auto_move_of_a_fresh_view(capsys):
    """docs/bots.md: a bot failure is replaced by the rulebook's auto-move, computed from the
    event's view rebuilt (the failed bot wrecked its copy); each failure is counted by reason."""
    replies = [Reply(None, "exception", "ValueError at bot.py:1 in decide"), Reply(None, "exception", "again")]
    session = ScriptedSession([snapshot(1), action(3), ended(5)])
    _, stats = play(session, ScriptedRunner(replies=replies))
    auto = get_game(GAME).auto_move(remote_bot.view_dict(wire_view(1)))
    assert session.submitted == [(auto, 1), (auto, 3)]
    assert stats.failures == {"exception": 2} and stats.decisions == 2
    err = capsys.readouterr().err
    assert "remote_bot: recorder failed (exception: ValueError at bot.py:1 in decide); auto-move" in err


def test_the_auto_move_is_the_matchs_games():
    """docs/bots.md: a failure is replaced by "the rulebook's auto-move": the rulebook of the
    match's game (Japanese Joker here, JJK-10.3), not Klaberjass's."""
    jj = get_game("japanese_joker")
    state = next(s for s in iter_states(jj, 2) if s.to_act() == 0 and len(s.view(0)["legal"]) > 1)
    view = copy.deepcopy(state.view(0))
    message = view_message(ViewEnvelope(match_id="M", seq=1, status="active", view=view, seat=0))
    session = ScriptedSession([event(match_pb2.EVENT_KIND_SNAPSHOT, 1, message), ended(3)])
    runner = ScriptedRunner(replies=[Reply(None, "illegal", "str")])
    asyncio.run(asyncio.wait_for(remote_bot.play_seat(session, runner, "recorder", "japanese_joker", budget_s=5.0), 30))
    assert session.submitted == [(jj.auto_move(view), 1)]


def test_a_stale_action_or_a_match_that_ended_meanwhile_is_decided_again_at_the_next_event():
    """docs/bots.md: an action decided on a view no longer current is refused by the server
    and the bot decides again on the next event; so is an action that found the match ended."""
    session = ScriptedSession([snapshot(1), action(2), ended(3)],
                              submits=[StaleSequence(grpc.StatusCode.ABORTED, "stale", "STALE_SEQUENCE"),
                                       FailedPrecondition(grpc.StatusCode.FAILED_PRECONDITION, "over",
                                                          "MATCH_NOT_ACTIVE")])
    _, stats = play(session)
    assert session.submitted == [(LEGAL[0], 1), (LEGAL[0], 2)] and stats.stale == 2


@pytest.mark.parametrize("error", [
    FailedPrecondition(grpc.StatusCode.FAILED_PRECONDITION, "illegal", "ILLEGAL_ACTION"),
    CardGamesError(grpc.StatusCode.PERMISSION_DENIED, "not your seat"),
])
def test_any_other_refusal_ends_the_program(error):
    with pytest.raises(type(error)):
        play(ScriptedSession([snapshot(1), ended(3)], submits=[error]))


@pytest.mark.parametrize("code", [grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED])
def test_a_move_the_engine_did_not_answer_is_decided_again_on_the_view_read_at_a_heartbeat(code, capsys):
    """docs/bots.md: "A move the engine did not answer (an outage longer than the library's
    ~5 s of retries) is decided again on the current view once the stream is back"; docs/api.md:
    the view is read (GetView) at the stream's next event. A GetView the engine does not answer
    either waits for the heartbeat after; once a move went out, heartbeats read nothing."""
    session = ScriptedSession([snapshot(0, my_turn=False), heartbeat(), action(1), heartbeat(), heartbeat(),
                               heartbeat(), heartbeat(), ended(5)],
                              submits=[unavailable(code), 4], views=[unavailable(), wire_view(3)])
    _, stats = play(session)
    assert session.submitted == [(LEGAL[0], 1), (LEGAL[0], 3)]
    assert session.view_calls == 2 and stats.unanswered == 1
    assert f"the engine did not answer {LEGAL[0]} ({code.name}); deciding again" in capsys.readouterr().err


def test_no_line_it_prints_while_playing_names_the_seat_token(capsys):
    """The seat token is the seat's secret (docs/bots.md: a remote bot "gets a seat token and
    nothing more"): every line the loop prints (--verbose's, a callback's failure, a bot's
    failure, a move the engine did not answer) leaves it out."""

    class Raises:
        def on_match_start(self, game_id, seat, view):
            raise ValueError("boom")

        def on_match_end(self, view):
            raise ValueError("boom")

    session = ScriptedSession([snapshot(1), heartbeat(), action(3), ended(5)],
                              submits=[unavailable(), 3, 4], views=[wire_view(2)])
    runner = ScriptedRunner(Raises(), replies=[Reply(None, "illegal", "str")])
    _, stats = play(session, runner, verbose=True)
    assert stats.unanswered == 1 and stats.failures == {"illegal": 1} and len(session.submitted) == 3
    out, err = capsys.readouterr()
    assert out and err.count("remote_bot: ") == 4, err
    assert TOKEN not in out + err


def test_a_view_the_engine_refuses_after_an_unanswered_move_ends_the_program():
    error = CardGamesError(grpc.StatusCode.PERMISSION_DENIED, "token revoked")
    session = ScriptedSession([snapshot(1), heartbeat(), ended(5)], submits=[unavailable()], views=[error])
    with pytest.raises(CardGamesError) as raised:
        play(session)
    assert raised.value is error


def test_the_budget_is_the_servers_deadline_on_the_servers_clock_read_from_a_heartbeat():
    """docs/bots.md: the budget is shortened to the server's turn deadline, a time of the
    server's clock read off each HEARTBEAT's server_time (here the server is a minute ahead):
    10 s left on the server's clock is 10 s less the 0.25 s margin, not 70 s."""
    import time

    server_now = time.time() + 60
    session = ScriptedSession([snapshot(0, my_turn=False), heartbeat(server_time=server_now),
                               action(1, deadline=server_now + 10), ended(3)])
    runner = ScriptedRunner()
    play(session, runner, budget_s=100.0)
    assert 9.0 < runner.asked[0]["budget_s"] <= 10.0 - remote_bot.NETWORK_MARGIN_S


def test_the_matchs_turn_timer_bounds_a_view_without_a_deadline():
    session = ScriptedSession([snapshot(1), ended(3)], turn_time_s=8.0)
    runner = ScriptedRunner()
    play(session, runner, budget_s=100.0)
    assert runner.asked[0]["budget_s"] == 8.0 - remote_bot.NETWORK_MARGIN_S


def test_the_seed_seeds_each_decision_differently_and_replays():
    """docs/bots.md: remote_bot's --seed seeds the bot's choices (``rng``: a seed replays a
    match): each decision's seed is --seed times 1,000,003 plus the view's seq, so the same seed
    gives the same seeds, another seed others, each decision its own."""

    def seeds(seed: int) -> list[int]:
        runner = ScriptedRunner()
        play(ScriptedSession([snapshot(1), action(3), ended(5)]), runner, seed=seed)
        return [a["seed"] for a in runner.asked]

    assert seeds(7) == [7 * 1_000_003 + 1, 7 * 1_000_003 + 3]
    assert seeds(0) == [1, 3] and set(seeds(7)).isdisjoint(seeds(8))


@pytest.mark.parametrize("verbose", [False, True])
def test_verbose_prints_every_action_submitted(verbose, capsys):
    play(ScriptedSession([snapshot(1), ended(3)]), verbose=verbose)
    assert capsys.readouterr().out == (f"seq 1: {LEGAL[0]}\n" if verbose else "")


def test_the_network_margin_is_the_documented_quarter_second():
    """docs/bots.md: "no answer by the budget plus half the 0.25 s network margin"."""
    assert remote_bot.NETWORK_MARGIN_S == 0.25


def test_a_decision_times_out_half_the_margin_after_its_budget(monkeypatch):
    """docs/bots.md: a bot with no answer by the budget plus half the 0.25 s network margin is
    a ``timeout`` (the auto-move goes out in time); its thread runs on."""
    waited = []
    release = threading.Event()

    async def no_answer(awaitable, timeout):
        waited.append(timeout)
        awaitable.cancel()  # the shield: the bot's own future is left alone
        raise TimeoutError

    class Thinks:
        def decide(self, *args, **kwargs):
            release.wait(10)
            return Reply("late", None)

    class Asyncio:  # remote_bot's asyncio, but for wait_for
        wait_for = staticmethod(no_answer)

        def __getattr__(self, name: str) -> Any:
            return getattr(asyncio, name)

    monkeypatch.setattr(remote_bot, "asyncio", Asyncio())
    reply = asyncio.run(remote_bot._decide(Thinks(), "bot", GAME, 0, {"legal": ["x"]}, 1, 0.5))
    release.set()
    assert waited == [0.5 + 0.125]
    assert (reply.action, reply.failure, reply.elapsed_s) == (None, "timeout", 0.5)
    assert reply.detail == "no answer within its budget (0.50s)"


class TestDecisionThread:
    """_in_daemon_thread: the thread a decision runs in."""

    def test_its_result_its_exception_and_its_context_reach_the_awaiting_coroutine(self):
        var: contextvars.ContextVar[str] = contextvars.ContextVar("var")

        def fails() -> None:
            raise ValueError("in the thread")

        async def go() -> tuple[Any, ...]:
            var.set("caller's")
            result = await remote_bot._in_daemon_thread(lambda: (var.get(), threading.current_thread().daemon))
            with pytest.raises(ValueError, match="in the thread"):
                await remote_bot._in_daemon_thread(fails)
            with pytest.raises(SystemExit):  # a BaseException too: the future is settled
                await asyncio.wait_for(remote_bot._in_daemon_thread(lambda: exec("raise SystemExit(3)")), 5)
            return result

        assert asyncio.run(go()) == ("caller's", True)

    def test_an_answer_wakes_the_waiting_loop_at_once(self):
        """The answer is handed to the loop thread-safely (call_soon_threadsafe): set from the
        thread itself, the future's callbacks waited for something else to wake the loop (here
        the 3 s timeout), and so did the decision's auto-move."""
        import time

        async def go() -> float:
            started = time.monotonic()
            assert await asyncio.wait_for(remote_bot._in_daemon_thread(lambda: time.sleep(0.1) or "e2"), 3) == "e2"
            return time.monotonic() - started

        assert asyncio.run(go()) < 1.5

    def test_an_answer_after_its_future_was_cancelled_or_its_loop_closed_is_dropped(self, monkeypatch):
        """A cancelled future (nobody waits) is not set; a loop closed meanwhile is not an
        exception in the thread."""
        release = threading.Event()
        threads: list[threading.Thread] = []
        errors: list[Any] = []
        monkeypatch.setattr(threading, "excepthook", errors.append)

        def slow() -> str:
            threads.append(threading.current_thread())
            release.wait(10)
            return "late"

        async def go() -> None:
            loop = asyncio.get_running_loop()
            loop.set_exception_handler(lambda loop, context: errors.append(context))
            cancelled = remote_bot._in_daemon_thread(slow)
            cancelled.cancel()
            release.set()
            while not threads or threads[0].is_alive():
                await asyncio.sleep(0.01)
            await asyncio.sleep(0.05)  # the thread's settle() runs on the loop
            release.clear()
            remote_bot._in_daemon_thread(slow)  # left running when the loop closes
            while len(threads) < 2:
                await asyncio.sleep(0.01)

        asyncio.run(go())
        release.set()
        threads[1].join(10)
        assert errors == []


# ---- the view dict of a protobuf View ----------------------------------------------------------

def round_trip(view: dict, seat: int | None = 0) -> dict:
    return remote_bot.view_dict(view_message(ViewEnvelope(match_id="M", seq=1, status="active", view=view,
                                                          seat=seat)))


def test_every_part_of_a_play_comes_back():
    """docs/api.md: a play's seat, card, joker mode, named suit and announcement are typed
    fields and its other keys go in TrickPlay.details: the rebuilt view has them all, under
    the rules core's keys (``announce``: Klaberjass's bella, Jo-Jotte's jo and jotte)."""
    plays = [{"seat": 0, "card": "QS", "announce": "bella"}, {"seat": 1, "card": "KS", "announce": "jo"},
             {"seat": 0, "card": "QH", "announce": "jotte"},
             {"seat": 1, "card": "X1", "joker_mode": "high", "named_suit": "D"},
             {"seat": 0, "card": "X2", "joker_mode": "low", "named_suit": "C", "takes": True, "rank": 3}]
    view = dict(MINE, trick=plays, last_trick={"plays": plays, "winner": 1, "points": 20})
    back = round_trip(view)
    assert back["trick"] == plays and back["last_trick"] == {"plays": plays, "winner": 1, "points": 20}


@pytest.mark.parametrize("totals", [[], [3, 4], {"game": [1, 2]}, {"game": [1, 2], "bonus": [0, 5]}])
def test_totals_last_trick_to_act_seat_and_table_come_back_as_the_rules_core_has_them(totals):
    """The rules core's view (engine_service/rules/game.py): ``totals`` a list, one named list
    per row, or empty; ``last_trick`` None before a trick; ``to_act`` None when nobody is to act
    (a finished match), ``seat`` None in a spectator's view; ``table`` {} when none was sent."""
    view = dict(MINE, totals=totals, last_trick=None, to_act=None, seat=None, table={})
    back = round_trip(view, seat=None)
    assert back["totals"] == totals and back["last_trick"] is None
    assert back["to_act"] is None and back["seat"] is None and back["table"] == {}


def test_a_finished_matchs_over_and_winners_come_back():
    """docs/bots.md: after the match's last deal the view's ``over`` is true (docs/api.md: the
    final view has ``over`` and ``winners``), as on_match_end sees it."""
    back = round_trip(dict(THEIRS, over=True, winners=[0, 2], to_act=None))
    assert back["over"] is True and back["winners"] == [0, 2]
    assert round_trip(MINE)["over"] is False and round_trip(MINE)["winners"] == []


def test_each_view_is_a_copy_of_its_own():
    """docs/bots.md: the bot may change its view; the loop rebuilds another one from the same
    message for the auto-move and the callbacks, so no list of a rebuilt view is the message's
    own (a protobuf repeated field changed in place would change the message)."""
    message = view_message(ViewEnvelope(match_id="M", seq=1, status="active", view=MINE, seat=0))
    first = remote_bot.view_dict(message)
    want = copy.deepcopy(first)
    for key, value in first.items():
        if key in ("hand", "hand_sizes", "legal", "trick", "tricks_taken", "totals", "winners"):
            assert type(value) is list, key
            value.append(99)
    assert remote_bot.view_dict(message) == want


def test_a_view_without_table_has_an_empty_table():
    view = view_message(ViewEnvelope(match_id="M", seq=1, status="active", view=MINE, seat=0))
    view.ClearField("table")
    assert remote_bot.view_dict(view)["table"] == {}


class FixedClock:
    """The server's clock, read as ``now``."""

    def __init__(self, now: float) -> None:
        self._now = now

    def now(self) -> float:
        return self._now


def test_a_turn_timer_never_lengthens_the_budget():
    """docs/bots.md: --budget-ms is *shortened* to the turn timer: a budget shorter than the
    match's turn time less the margin stays as it is."""
    assert remote_bot.decision_budget(match_pb2.View(), 2.0, 8.0, FixedClock(990.0)) == 2.0


@pytest.mark.parametrize("deadline, turn_time_s, budget", [
    (1000.5, 0.0, 10.25),  # the deadline less the margin, to the nanosecond: 10.5 s left
    (1000.5, 5.0, 10.25),  # a view's deadline is what counts, not the match's timer
    (985.0, 0.0, 0.0),  # past the deadline: nothing, never a negative budget
    (None, 0.0, 30.0),  # no deadline, no turn timer: the bot's own budget
    (None, 8.0, 7.75),  # no deadline: the match's turn timer less the margin
])
def test_decision_budget(deadline, turn_time_s, budget):
    """docs/bots.md: --budget-ms, shortened to the server's turn deadline (less the 0.25 s
    network margin) when the match has one."""
    view = match_pb2.View()
    if deadline is not None:
        view.deadline.FromNanoseconds(int(deadline * 1e9))
    assert remote_bot.decision_budget(view, 30.0, turn_time_s, FixedClock(990.0)) == pytest.approx(budget, abs=1e-6)


# ---- the command line: a new match's table, the seat taken, the result line ---------------------

def parsed(*argv: str):
    return remote_bot.build_parser().parse_args(["--bot", "heuristic", *argv])


@pytest.mark.parametrize("argv, me, seats", [
    ([], 0, [None, "random", "random", "random"]),  # docs/bots.md: "by default they are random"
    (["--seat", "2", "--opponents", " search , open,heuristic "], 2, ["search", "open", None, "heuristic"]),
    (["--seat", "3", "--opponents", "search"], 3, ["search", "search", "search", None]),
])
def test_a_new_matchs_seats(argv, me, seats):
    """docs/bots.md: --opponents names the other seats' bots, one for all of them or one per
    seat in seat order; the bot takes --seat (0 by default)."""
    got_me, got_seats, options = remote_bot.new_table(parsed("--game", "georgian_joker", *argv), get_game("georgian_joker"))
    assert (got_me, got_seats, options) == (me, seats, {})


def test_a_new_matchs_options_are_typed():
    """By the game's table options in this client's rules core, as clients.play types them by
    ListGames: a bool in any case, an int option's value an int, an enum's the string."""
    args = parsed("--game", "klaberjass", "--option", "kl_schmeiss=True", "--option", "kl_must_overtrump=false",
                  "--option", "kl_target_score=300", "--option", "kl_bella_order=any")
    assert remote_bot.new_table(args, get_game("klaberjass"))[2] == {
        "kl_schmeiss": True, "kl_must_overtrump": False, "kl_target_score": 300, "kl_bella_order": "any"}


@pytest.mark.parametrize("option, says", [
    ("nosuch=5", "--option nosuch: klaberjass has no such option (options: kl_bella_announcement, kl_bella_order, "),
    ("kl_schmeiss=yes", "--option option 'kl_schmeiss': invalid value \"yes\"; allowed: true, false"),
    # true/false is a bool option's value only: not an int option's (a bool is an int in Python)
    ("kl_target_score=true", "--option option 'kl_target_score': invalid value \"true\"; allowed: an integer >= 1"),
    ("kl_target_score=0", "--option option 'kl_target_score': invalid value 0; allowed: an integer >= 1"),
    ("kl_target_score=soon", "--option option 'kl_target_score': invalid value \"soon\"; allowed: an integer >= 1"),
    (f"kl_target_score={2**63}", f"--option option 'kl_target_score': invalid value {2**63}; allowed: an integer >= 1"),
    ("kl_bella_order=never", "--option option 'kl_bella_order': invalid value \"never\"; allowed: \"queen_first\""),
    ("=300", "--option wants name=value, not '=300'"),
])
def test_an_option_the_game_does_not_allow_is_refused_by_name(option, says):
    """An option the game has not, or a value it does not allow, was sent to the engine and
    refused there (exit 1, after an engine was started or reached): a usage error now, named
    with what the option allows (the rules core's own wording)."""
    args = parsed("--game", "klaberjass", "--option", option)
    with pytest.raises(remote_bot.TableRefused) as info:
        remote_bot.new_table(args, get_game("klaberjass"))
    assert str(info.value).startswith(says), str(info.value)


class Lobby:
    """A Client that records the match it is asked to create and the seat it is asked to join."""

    def __init__(self) -> None:
        self.calls: list[tuple] = []

    async def create_match(self, game: str, **kwargs: Any) -> match_pb2.MatchSummary:
        self.calls.append(("create_match", game, kwargs))
        return match_pb2.MatchSummary(match_id="NEW", game=game)

    async def join(self, match_id: str, **kwargs: Any) -> ScriptedSession:
        self.calls.append(("join", match_id, kwargs))
        self.session = ScriptedSession([])
        return self.session


def test_it_creates_the_table_asked_for_and_takes_its_seat(capsys):
    lobby = Lobby()
    args = parsed("--game", "japanese_joker", "--seat", "1", "--opponents", "search", "--option", "target_score=11",
                  "--turn-time", "30", "--name", "ada")
    assert asyncio.run(remote_bot.open_seat(lobby, args, get_game("japanese_joker"))) is lobby.session
    assert lobby.calls == [
        ("create_match", "japanese_joker", {"options": {"target_score": 11}, "seats": ["search", None],
                                            "turn_time_s": 30.0, "name": "heuristic (remote)"}),
        ("join", "NEW", {"seat": 1, "player_name": "ada"})]
    assert capsys.readouterr() == ("", "match NEW: japanese_joker, heuristic in seat 1\n")  # no seat token


def test_a_new_match_without_seat_takes_seat_0(capsys):
    """--seat's help: "default: the first open one / 0": seat 0 of a match it creates (whose
    other open seats, --opponents open, come after it or not at all)."""
    lobby = Lobby()
    args = parsed("--game", "georgian_joker", "--opponents", "open")
    asyncio.run(remote_bot.open_seat(lobby, args, get_game("georgian_joker")))
    assert lobby.calls[-1] == ("join", "NEW", {"seat": 0, "player_name": "remote bot"})


@pytest.mark.parametrize("argv, seat", [(["--seat", "1"], 1), ([], None)])
def test_it_joins_the_match_asked_for_in_the_seat_asked_for(argv, seat, capsys):
    """--match joins that match, in --seat or the first open one, under --name (default
    "remote bot"), saying nothing (the seat token above all)."""
    lobby = Lobby()
    asyncio.run(remote_bot.open_seat(lobby, parsed("--match", "M7", *argv), get_game("japanese_joker")))
    assert lobby.calls == [("join", "M7", {"seat": seat, "player_name": "remote bot"})]
    assert capsys.readouterr() == ("", "")


class Engine:
    """A connected Client for run(): match M7 is a Klaberjass match."""

    def __init__(self) -> None:
        self.ready = False

    async def wait_ready(self) -> None:
        self.ready = True

    async def get_match(self, match_id: str) -> match_pb2.MatchSummary:
        return match_pb2.MatchSummary(match_id=match_id, game=GAME)

    async def join(self, match_id: str, **kwargs: Any) -> ScriptedSession:
        return ScriptedSession([])


def test_run_plays_the_joined_match_with_the_flags_asked_and_prints_the_result(monkeypatch, capsys):
    """run(): the match's game from the engine, --budget-ms in milliseconds, --seed and
    --verbose passed on, and one result line on stdout, with the seat taken (no --seat: the
    first open one, seat 0 here)."""
    import contextlib

    from clients.cardgames_client import FileArgument
    from engine_service.plugins.manager import PluginSettings, load_catalog

    engine = Engine()
    connected: list[tuple] = []
    played: list[tuple] = []

    @contextlib.asynccontextmanager
    async def connect(target, **kwargs):
        connected.append((target, kwargs))
        yield engine

    async def play_seat(session, runner, bot_name, game_id, **kwargs):
        played.append((bot_name, game_id, kwargs))
        final = match_pb2.MatchSummary(match_id="M7", status=match_pb2.MATCH_STATUS_FINISHED)
        final.result.update({"winners": [1], "totals": [82.0, 162.0]})
        return final, remote_bot.SeatStats(decisions=12, think_s=3.04, failures={"timeout": 1})

    monkeypatch.setattr(remote_bot, "connect", connect)
    monkeypatch.setattr(remote_bot, "play_seat", play_seat)
    args = parsed("--match", "M7", "--budget-ms", "250", "--seed", "9", "--verbose",
                  "--tls", "--server-name", "engine.example")
    args.ca = FileArgument("ca.pem", b"PEM")  # as --ca reads it
    catalog = load_catalog(PluginSettings.resolve(environ={}))
    capsys.readouterr()  # the plugins' loading log
    assert asyncio.run(remote_bot.run(args, "host:1", catalog)) == 0
    assert connected == [("host:1", {"tls": True, "root_certificates": b"PEM", "server_name": "engine.example"})]
    assert engine.ready
    assert played == [("heuristic", GAME, {"budget_s": 0.25, "seed": 9, "verbose": True})]
    assert capsys.readouterr().out == ("match M7 finished: seat 0 (heuristic); winners [1]; totals [82, 162]; "
                                       "12 decisions, 3.0s thinking, failures {'timeout': 1}\n")


def test_run_refuses_a_joined_match_of_a_game_its_bot_does_not_play(monkeypatch):
    """docs/bots.md: a --bot that does not play the game is refused; with --match the game is
    the engine's word, known once connected."""
    import contextlib

    from engine_service.plugins.manager import PluginSettings, load_catalog

    class JojotteMatch(Engine):
        async def get_match(self, match_id: str) -> match_pb2.MatchSummary:
            return match_pb2.MatchSummary(match_id=match_id, game="jojotte")

        async def join(self, match_id: str, **kwargs: Any) -> ScriptedSession:
            raise AssertionError("a seat was taken")

    @contextlib.asynccontextmanager
    async def connect(target, **kwargs):
        yield JojotteMatch()

    monkeypatch.setattr(remote_bot, "connect", connect)
    catalog = load_catalog(PluginSettings.resolve(extra=["tests.plugins.klaberjass_only"], environ={}))
    args = remote_bot.build_parser().parse_args(["--bot", "klaberjass-only", "--match", "M7"])
    with pytest.raises(SystemExit) as refused:
        asyncio.run(remote_bot.run(args, "host:1", catalog))
    assert refused.value.code == "bot 'klaberjass-only' does not play jojotte"


@pytest.mark.parametrize("failure, code, err", [
    (CardGamesError(grpc.StatusCode.UNAVAILABLE, "gone"), 1, "error: UNAVAILABLE: gone\n"),
    (KeyboardInterrupt(), 130, ""),  # Ctrl-C: as the other clients (clients.play, clients.watch)
])
def test_its_own_engine_is_in_memory_and_stopped_whatever_ends_the_match(failure, code, err, monkeypatch, capsys):
    """Without --target an engine of its own is started (database in memory: the module's
    docstring; README: --db is that engine's database) and stopped and removed at the end,
    also when the engine fails (exit status 1, README: "Exit status 1 is the engine's or the
    connection's failure") or the user interrupts."""
    engines: list[Any] = []

    class Service:
        target = "127.0.0.1:1"

        def __init__(self, **kwargs: Any) -> None:
            self.kwargs = kwargs
            self.done: list[str] = []
            engines.append(self)

        def start(self) -> None:
            self.done.append("start")

        def stop(self) -> None:
            self.done.append("stop")

        def cleanup(self) -> None:
            self.done.append("cleanup")

    async def run(args, target, catalog):
        assert target == Service.target
        raise failure

    monkeypatch.setattr(remote_bot, "LocalService", Service)
    monkeypatch.setattr(remote_bot, "run", run)
    assert remote_bot.main(["--bot", "random", "--game", GAME]) == code
    assert capsys.readouterr().err.endswith(err)
    [engine] = engines
    assert engine.kwargs["db"] == "memory:" and engine.done == ["start", "stop", "cleanup"]


@pytest.fixture
def structlog_restored():
    """bot_catalog configures structlog for the process (as a command does): put it back."""
    import structlog

    saved = structlog.get_config()
    yield
    structlog.configure(**saved)


def test_plugin_loading_logs_warnings_and_up_on_stderr(structlog_restored, capsys):
    """stdout carries the result line only (a script reads it): the plugins' loading log goes
    to stderr, and only its warnings and errors (here a --plugin that fails to import)."""
    from engine_service.plugins.manager import PluginNotLoaded

    with pytest.raises(PluginNotLoaded):
        remote_bot.bot_catalog(parsed("--game", GAME, "--plugin", "tests.plugins.import_fails"))
    out, err = capsys.readouterr()
    assert out == "" and "bot_plugin_failed" in err and "bot_plugins_loaded" not in err, (out, err)


def test_a_plugin_switch_that_is_no_yes_or_no_is_one_line(structlog_restored, monkeypatch):
    monkeypatch.setenv("CARDGAMES_DISABLE_PLUGIN_AUTOLOAD", "perhaps")
    with pytest.raises(SystemExit) as refused:
        remote_bot.bot_catalog(parsed("--game", GAME))
    assert str(refused.value.code).startswith("error: ") and "CARDGAMES_DISABLE_PLUGIN_AUTOLOAD" in str(
        refused.value.code)


def test_the_defaults_of_a_decision():
    """--budget-ms: "default 1000" (its help); --seed 0."""
    args = parsed("--game", GAME)
    assert (args.budget_ms, args.seed, args.verbose) == (1000.0, 0, False)


def test_a_bot_is_required(capsys):
    """Every usage of the module's docstring names --bot: without it nothing says which bot to
    play (it is no default bot), a usage error."""
    with pytest.raises(SystemExit) as refused:
        remote_bot.main(["--game", GAME])
    assert refused.value.code == 2
    assert "error: the following arguments are required: --bot" in capsys.readouterr().err


def test_an_empty_db_with_a_target_is_a_usage_error_too(capsys):
    """README: --db "given with --target" is a usage error: ``--db=`` too (an unset variable in a
    script), the flag given whatever its value."""
    with pytest.raises(SystemExit) as refused:
        remote_bot.main(["--bot", "random", "--game", GAME, "--target", "127.0.0.1:1", "--db="])
    assert refused.value.code == 2
    assert "error: --db is the database of the engine started without --target" in capsys.readouterr().err


def test_neither_a_match_nor_a_game_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as refused:
        remote_bot.main(["--bot", "random"])
    assert refused.value.code == 2
    assert "error: give --match ID (join) or --game (create a match)" in capsys.readouterr().err


def test_a_db_path_that_is_not_utf8_is_taken(monkeypatch):
    """README: an argument with a byte that is not UTF-8 is a usage error, "a file's path
    excepted" (--db and --ca are paths)."""
    started: list[dict] = []

    class Service:
        target = "127.0.0.1:1"

        def __init__(self, **kwargs: Any) -> None:
            started.append(kwargs)

        def start(self) -> None:
            raise KeyboardInterrupt  # stop before anything runs

        def stop(self) -> None:
            pass

        def cleanup(self) -> None:
            pass

    monkeypatch.setattr(remote_bot, "LocalService", Service)
    db = "/tmp/caf\udce9.sqlite3"  # a Latin-1 é, as a POSIX file name reaches Python
    assert remote_bot.main(["--bot", "random", "--game", GAME, "--db", db]) == 130
    assert started[0]["db"] == db


def test_a_last_trick_sent_without_plays_is_none():
    """A View whose last_trick is present but holds no play (this engine leaves the field unset
    then; docs/api.md: message fields are read by presence, and a server may set an empty one)
    is the rules core's ``None``, not a trick without plays."""
    view = view_message(ViewEnvelope(match_id="M", seq=1, status="active", view=dict(MINE, last_trick=None), seat=0))
    view.last_trick.SetInParent()
    assert view.HasField("last_trick") and remote_bot.view_dict(view)["last_trick"] is None
