"""BotRunner in this process (as the arena and remote_bot use it, and each bot worker): every
bot fault is a Reply, never an exception and never what the bot said; the budget is enforced
on request; an in-process bot that overruns is interrupted by an alarm that is put back after."""

from __future__ import annotations

import random
import re
import signal
import sys
import threading

import pytest

from engine_service.plugins import BotSpec, hookimpl
from engine_service.plugins import runner as runner_module
from engine_service.plugins.manager import PluginSettings, load_catalog
from engine_service.plugins.runner import BotRunner

LEGAL = ["play:7S", "play:8S", "play:9S"]
VIEW = {"seat": 0, "hand": ["7S", "8S", "9S"], "legal": LEGAL}
HIDDEN = re.compile(r"(?<![A-Za-z0-9])(AS|KS)(?![A-Za-z0-9])")  # bad_bots' cards


class _Clock:
    """The runner's clock (``runner.time``), moved only by the bots below: an answer's
    elapsed and CPU time, and so the budget check, are then exact whatever the load."""

    def __init__(self) -> None:
        self.now = 100.0
        self.cpu = 5.0

    def monotonic(self) -> float:
        return self.now

    def thread_time(self) -> float:
        return self.cpu


class _Takes:
    """Spends ``wall`` seconds (``cpu`` of them computing) on the runner's clock, then answers."""

    def __init__(self, clock: _Clock, wall: float, cpu: float) -> None:
        self.clock, self.wall, self.cpu = clock, wall, cpu

    def decide(self, request):
        self.clock.now += self.wall
        self.clock.cpu += self.cpu
        return request.legal[1]


class _Records:
    """Keeps each request it gets, and what the SIGALRM handler and timer were meanwhile."""

    def __init__(self) -> None:
        self.seen: list = []

    def decide(self, request):
        self.seen.append((request, signal.getsignal(signal.SIGALRM), signal.getitimer(signal.ITIMER_REAL)[0],
                          request.rng.random()))
        return request.legal[0]


class _Plugin:
    """Bots made here, per test: ``bots`` maps a name to its factory."""

    __name__ = "runner_test_bots"

    def __init__(self, bots: dict) -> None:
        self.bots = bots

    @hookimpl
    def cardgames_bots(self):
        return [BotSpec(name, factory, games=("klaberjass",)) for name, factory in self.bots.items()]


def _runner(**bots) -> BotRunner:
    return BotRunner(load_catalog(PluginSettings.resolve(extra=[_Plugin(bots)], environ={})))


@pytest.fixture(scope="module")
def bad() -> BotRunner:
    return BotRunner(load_catalog(PluginSettings.resolve(extra=["tests.plugins.bad_bots"], environ={})))


@pytest.mark.parametrize("bot, failure, detail", [
    ("garbage", "illegal", r"a dict, not an action string"),
    ("illegal", "illegal", r"a string of 10 characters that is not a legal action"),
    ("liar", "illegal", r"a string of 10 characters that is not a legal action"),
    ("raises", "exception", r"ValueError at bad_bots\.py:\d+ in decide"),
    ("raises-base", "exception", r"Cancelled at bad_bots\.py:\d+ in decide"),
    ("wrecks", "exception", r"ValueError at bad_bots\.py:\d+ in decide"),
    ("bad-factory", "exception", r"factory: ZeroDivisionError at bad_bots\.py:\d+ in <lambda>"),
    ("no-such-bot", "unknown_bot", r"no bot 'no-such-bot' for game 'klaberjass'"),
])
def test_a_bot_fault_is_a_reply_that_says_what_and_where_never_what_the_bot_said(bad, bot, failure, detail):
    reply = bad.decide(bot, "klaberjass", 0, {"hand": ["AS", "KS"]}, LEGAL, 1, 5.0)
    assert (reply.action, reply.failure) == (None, failure), reply
    assert re.fullmatch(detail, reply.detail), reply
    assert not HIDDEN.search(reply.detail), reply



class _EqualToEverything:
    """Not a string, but equal to any: ``in`` the legal list, were that the only check."""

    __hash__ = None

    def __eq__(self, other):
        return True


def test_an_answer_that_is_no_string_is_illegal_even_if_it_equals_a_legal_action():
    class Claims:
        def decide(self, request):
            return _EqualToEverything()
    reply = _runner(claims=lambda game_id: Claims()).decide("claims", "klaberjass", 0, VIEW, LEGAL, 1, 5.0)
    assert (reply.action, reply.failure, reply.detail) == (
        None, "illegal", "a _EqualToEverything, not an action string"), reply


def test_a_sys_exit_ends_a_worker_but_is_a_crash_in_process_and_a_ctrl_c_ends_both(bad):
    """A worker that ends is reported as a crash by the pool; in the arena (no worker to lose)
    the SystemExit is the crash answer. The user's Ctrl-C is not the bot's to swallow."""
    with pytest.raises(SystemExit):
        bad.decide("sys-exits", "klaberjass", 0, VIEW, LEGAL, 1, 5.0)
    reply = bad.decide("sys-exits", "klaberjass", 0, VIEW, LEGAL, 1, 5.0, in_process=True)
    assert (reply.action, reply.failure, reply.detail) == (None, "crash", "SystemExit(0)"), reply
    for in_process in (False, True):
        with pytest.raises(KeyboardInterrupt):
            bad.decide("interrupts", "klaberjass", 0, VIEW, LEGAL, 1, 5.0, in_process=in_process)



def test_a_spec_written_for_every_game_with_a_star_plays_each_registered_game():
    """docs/bots.md: a plugin writes ``games=("*",)`` itself for every registered game (the
    default); any other list names its games."""
    from engine_service.rules import all_game_ids

    every, one = BotSpec("every", _Records, games=("*",)), BotSpec("one", _Records, games=("klaberjass",))
    assert all(every.plays(g) for g in all_game_ids()) and BotSpec("default", _Records).plays("jojotte")
    assert one.plays("klaberjass") and not one.plays("jojotte")


def test_a_factory_is_called_once_per_game_and_its_exit_or_ctrl_c_is_not_swallowed():
    made: list[str] = []

    def factory(game_id):
        made.append(game_id)
        return _Records()

    def exits(game_id):
        raise SystemExit(2)

    def interrupted(game_id):
        raise KeyboardInterrupt

    runner = _runner(recorder=factory, exits=exits, interrupted=interrupted)
    for _ in range(3):
        assert runner.decide("recorder", "klaberjass", 0, VIEW, LEGAL, 1, 5.0).action == LEGAL[0]
    assert made == ["klaberjass"] and runner.bot("recorder", "klaberjass") is runner.bot("recorder", "klaberjass")
    assert runner.bot("recorder", "jojotte") is None and made == ["klaberjass"]  # it plays Klaberjass only
    with pytest.raises(SystemExit):
        runner.decide("exits", "klaberjass", 0, VIEW, LEGAL, 1, 5.0)
    with pytest.raises(KeyboardInterrupt):
        runner.decide("interrupted", "klaberjass", 0, VIEW, LEGAL, 1, 5.0)
    with pytest.raises(KeyboardInterrupt):  # the arena's Ctrl-C ends the arena
        runner.decide("interrupted", "klaberjass", 0, VIEW, LEGAL, 1, 5.0, in_process=True)


def test_in_process_a_factorys_exit_is_the_bots_crash_said_without_its_message():
    """docs/bots.md: in the arena "a ``sys.exit`` in a bot counts as a ``crash``"; its factory
    is the bot's code, so its exit is the same answer (it ended the whole arena run), described
    by its status or type only, as the bot's own (a message is the bot speaking)."""
    def says(game_id):
        raise SystemExit("my hand is AS KS")

    runner = _runner(exits=lambda game_id: sys.exit(3), says=says)
    reply = runner.decide("exits", "klaberjass", 0, VIEW, LEGAL, 1, 5.0, in_process=True)
    assert (reply.action, reply.failure, reply.detail) == (None, "crash", "factory: SystemExit(3)"), reply
    reply = runner.decide("says", "klaberjass", 0, VIEW, LEGAL, 1, 5.0, in_process=True)
    assert (reply.failure, reply.detail) == ("crash", "factory: SystemExit with a str"), reply


def test_the_bot_gets_its_seats_request_with_a_seeded_rng():
    bot = _Records()
    runner = _runner(recorder=lambda game_id: bot)
    reply = runner.decide("recorder", "klaberjass", 2, VIEW, iter(LEGAL), 42, 1.5)
    assert (reply.action, reply.failure, reply.detail) == (LEGAL[0], None, ""), reply
    [(request, _, _, drawn)] = bot.seen
    assert (request.game_id, request.seat, request.view, request.legal, request.budget_s) == (
        "klaberjass", 2, VIEW, tuple(LEGAL), 1.5)
    assert drawn == random.Random(42).random()


def test_a_factory_failure_says_how_long_the_factory_took(monkeypatch):
    clock = _Clock()
    monkeypatch.setattr(runner_module, "time", clock)

    def slow_and_broken(game_id):
        clock.now += 0.5
        raise RuntimeError("AS")
    reply = _runner(broken=slow_and_broken).decide("broken", "klaberjass", 0, VIEW, LEGAL, 1, 5.0)
    assert (reply.failure, reply.elapsed_s) == ("exception", 0.5), reply
    assert reply.detail.startswith("factory: RuntimeError at test_runner.py:"), reply


@pytest.mark.parametrize("ending, failure", [
    (lambda: runner_module._Interrupted(), "timeout"),  # the in-process alarm's interruption
    (lambda: SystemExit(3), "crash"),  # in process: a crash answer, not the end of the arena
    (lambda: ValueError("AS"), "exception"),
])
def test_a_bot_that_fails_is_charged_the_wall_and_cpu_time_it_spent(monkeypatch, ending, failure):
    """A failed answer carries what the bot cost as a good one does (``bot_decision_seconds``
    and the arena's time columns): the wall and CPU time its decide() ran before it failed."""
    clock = _Clock()
    monkeypatch.setattr(runner_module, "time", clock)

    class Fails:
        def decide(self, request):
            clock.now += 0.75
            clock.cpu += 0.5
            raise ending()
    reply = _runner(fails=lambda game_id: Fails()).decide("fails", "klaberjass", 0, VIEW, LEGAL, 1, 5.0,
                                                          in_process=True)
    assert (reply.action, reply.failure) == (None, failure), reply
    assert (reply.elapsed_s, reply.cpu_s) == (pytest.approx(0.75), pytest.approx(0.5)), reply


@pytest.mark.parametrize("wall, enforce, failure", [
    (0.25, True, None),  # exactly its budget: in time
    (0.2500001, True, "timeout"),
    (3.0, False, None),  # a host that does not enforce the budget (the pool kills at the deadline)
    (3.0, None, None),  # nor by default
])
def test_an_answer_is_a_timeout_only_past_its_budget_when_the_budget_is_enforced(monkeypatch, wall, enforce, failure):
    clock = _Clock()
    monkeypatch.setattr(runner_module, "time", clock)
    runner = _runner(takes=lambda game_id: _Takes(clock, wall, 0.125))
    enforcing = {} if enforce is None else {"enforce_budget": enforce}
    reply = runner.decide("takes", "klaberjass", 0, VIEW, LEGAL, 1, 0.25, **enforcing)
    assert reply.failure == failure, reply
    assert (reply.elapsed_s, reply.cpu_s) == (pytest.approx(wall), pytest.approx(0.125)), reply
    if failure is None:
        assert reply.action == LEGAL[1], reply
    else:
        assert reply.action is None and reply.detail == "answered after 0.250s, budget 0.250s", reply


@pytest.fixture
def no_outer_alarm():
    """No SIGALRM timer armed by the caller (pytest-timeout's for this test, put back after)."""
    delay, interval = signal.getitimer(signal.ITIMER_REAL)
    handler = signal.getsignal(signal.SIGALRM)
    signal.setitimer(signal.ITIMER_REAL, 0)
    yield
    signal.signal(signal.SIGALRM, handler)
    signal.setitimer(signal.ITIMER_REAL, delay, interval)


_REAL_SETITIMER = signal.setitimer


def _recorded_alarms(monkeypatch) -> list[float]:
    """The seconds of every ``signal.setitimer`` call from now on (each still made; a test
    disarms its own with ``_REAL_SETITIMER``, unrecorded)."""
    armed: list[float] = []
    monkeypatch.setattr(signal, "setitimer", lambda which, seconds, *rest: (
        armed.append(seconds), _REAL_SETITIMER(which, seconds, *rest))[1])
    return armed


@pytest.mark.parametrize("enforce, in_process, budget, alarm", [
    (True, True, 10.0, 30.0), (True, True, 0.0, 20.001), (True, False, 10.0, None), (False, True, 10.0, None)])
def test_only_an_in_process_runner_enforcing_the_budget_arms_an_alarm_and_it_puts_the_old_handler_back(
        monkeypatch, no_outer_alarm, enforce, in_process, budget, alarm):
    """The alarm is armed for the budget (at least a millisecond) plus INTERRUPT_AFTER, and
    afterwards the process's own SIGALRM handler is as it was and no timer is left armed."""
    monkeypatch.setattr(runner_module, "INTERRUPT_AFTER", 20.0)
    bot = _Records()
    runner = _runner(recorder=lambda game_id: bot)
    armed = _recorded_alarms(monkeypatch)

    def mine(signum, frame):
        raise AssertionError("the caller's handler ran")
    previous = signal.signal(signal.SIGALRM, mine)
    try:
        reply = runner.decide("recorder", "klaberjass", 0, VIEW, LEGAL, 1, budget,
                              enforce_budget=enforce, in_process=in_process)
        after = signal.getsignal(signal.SIGALRM), signal.getitimer(signal.ITIMER_REAL)[0]
    finally:
        _REAL_SETITIMER(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    assert reply.action == LEGAL[0] or budget == 0.0, reply  # no answer is in time with no budget
    [(_, handler, timer, _)] = bot.seen
    if alarm is not None:
        assert handler is not mine and timer > 0 and armed == [pytest.approx(alarm), 0], (handler, timer, armed)
    else:
        assert handler is mine and timer == 0.0 and armed == [], (handler, timer, armed)
    assert after == (mine, 0.0)


def test_a_timer_the_caller_armed_is_put_back_after_an_in_process_decision(no_outer_alarm):
    """pytest-timeout arms SIGALRM for every test (the arena's tests' hang guard under
    --strict-time): the runner's own alarm used to cancel it for good, and the caller's handler
    then never ran. It now runs inside the caller's timer and re-arms it."""
    fired: list[int] = []
    bot = _Records()
    runner = _runner(recorder=lambda game_id: bot)
    previous = signal.signal(signal.SIGALRM, lambda *_: fired.append(1))
    try:
        signal.setitimer(signal.ITIMER_REAL, 100.0)
        reply = runner.decide("recorder", "klaberjass", 0, VIEW, LEGAL, 1, 5.0, enforce_budget=True,
                              in_process=True)
        assert reply.action == LEGAL[0] and not fired, reply
        assert bot.seen[0][2] <= 5.0 + runner_module.INTERRUPT_AFTER  # its own alarm was armed meanwhile
        assert 0 < signal.getitimer(signal.ITIMER_REAL)[0] <= 100.0
        signal.setitimer(signal.ITIMER_REAL, 0.05)  # and it is the caller's handler again
        while not fired:
            signal.pause()
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def test_an_in_process_bot_still_running_past_its_budget_is_interrupted(monkeypatch, no_outer_alarm, bad):
    monkeypatch.setattr(runner_module, "INTERRUPT_AFTER", 0.05)
    reply = bad.decide("sleeps", "klaberjass", 0, VIEW, LEGAL, 1, 0.01, enforce_budget=True, in_process=True)
    assert (reply.action, reply.failure) == (None, "timeout"), reply
    assert reply.detail == "still running 0.1s past its budget (0.010s): interrupted", reply
    assert signal.getitimer(signal.ITIMER_REAL)[0] == 0.0


def test_no_alarm_outside_the_main_thread(no_outer_alarm):
    """SIGALRM can only be handled in the main thread: a runner in another one (remote_bot's
    daemon thread) lets the bot answer instead of failing on the signal call."""
    bot = _Records()
    runner = _runner(recorder=lambda game_id: bot)
    replies = []
    thread = threading.Thread(target=lambda: replies.append(runner.decide(
        "recorder", "klaberjass", 0, VIEW, LEGAL, 1, 10.0, enforce_budget=True, in_process=True)))
    thread.start()
    thread.join(30)
    assert [r.action for r in replies] == [LEGAL[0]], replies
    assert bot.seen[0][2] == 0.0  # no timer


def test_the_budget_counts_from_the_decisions_start_the_factorys_time_included(monkeypatch):
    """docs/bots.md, "Time limits": a factory runs at a worker's first decision for its game,
    "inside that decision's budget", so ``request.time_left()`` counts from the decision's
    start, not from after the factory; and it goes negative once the budget is spent
    (protocol.DecisionRequest.time_left), so a search loop's ``> 0`` check stops."""
    from engine_service.plugins import protocol as protocol_module

    clock = _Clock()
    monkeypatch.setattr(runner_module, "time", clock)
    monkeypatch.setattr(protocol_module, "time", clock)
    left: list[float] = []

    class Reads:
        def decide(self, request):
            left.append(request.time_left())
            clock.now += 2.5
            left.append(request.time_left())
            return request.legal[0]

    def slow_factory(game_id):
        clock.now += 0.5
        return Reads()

    reply = _runner(reads=slow_factory).decide("reads", "klaberjass", 0, VIEW, LEGAL, 1, 2.0)
    assert reply.action == LEGAL[0], reply
    assert left == [pytest.approx(1.5), pytest.approx(-1.0)], left


def test_an_in_process_bot_is_interrupted_one_second_past_its_budget(monkeypatch, no_outer_alarm):
    """docs/bots.md (the arena's ``--strict-time``): "a bot still running a second past its
    budget is interrupted": the alarm is armed for the budget plus one second."""
    bot = _Records()
    runner = _runner(recorder=lambda game_id: bot)
    armed = _recorded_alarms(monkeypatch)
    try:
        reply = runner.decide("recorder", "klaberjass", 0, VIEW, LEGAL, 1, 0.5, enforce_budget=True,
                              in_process=True)
    finally:
        _REAL_SETITIMER(signal.ITIMER_REAL, 0)
    assert reply.action == LEGAL[0], reply
    assert armed == [pytest.approx(1.5), 0], armed


class Undecided:
    """A bot's own answer type whose name starts with a capital vowel."""


@pytest.mark.parametrize("answer, detail", [
    (None, "a NoneType, not an action string"),
    (7, "an int, not an action string"),
    (Undecided(), "an Undecided, not an action string"),
    (["play:7S"], "a list, not an action string"),
])
def test_an_answer_that_is_no_string_is_described_by_its_type_with_its_article(answer, detail):
    """docs/bots.md: ``bot_decision_failed``'s ``detail`` is "the kind of answer", never the
    answer: its type's name, after "an" when the name starts with a vowel (in either case)."""
    assert runner_module.describe_answer(answer) == detail


def test_an_exception_never_raised_is_described_by_its_type_alone():
    """describe_exception: "the innermost frame, never the message"; an exception without a
    traceback (built, not raised: no frame to name) is its type, and still not its message,
    which may name cards of the bot's hand."""
    assert runner_module.describe_exception(ValueError("AS KS")) == "ValueError"


def test_a_factory_that_makes_no_bot_is_a_factory_exception_and_is_asked_again():
    """docs/bots.md: "a bot is any object with ``decide(request)``". A factory that made
    something else (a forgotten ``return``, a ``decide`` that is not a method) is the
    factory's fault, said before anything is asked of the object, and what it made is not
    kept: the next decision asks the factory again."""
    made: list[object] = []

    class NotCallable:
        decide = "play:7S"

    def factory(game_id):
        made.append(NotCallable())
        return made[-1]

    runner = _runner(careless=factory)
    for _ in range(2):
        reply = runner.decide("careless", "klaberjass", 0, VIEW, LEGAL, 1, 5.0)
        assert (reply.action, reply.failure) == (None, "exception"), reply
        assert re.fullmatch(r"factory: TypeError at runner\.py:\d+ in bot", reply.detail), reply
    assert len(made) == 2
    with pytest.raises(TypeError, match=r"^the factory of bot 'careless' made a NotCallable, which has no "
                                        r"decide\(\) method$"):
        runner.bot("careless", "klaberjass")


def test_a_factory_raising_a_base_exception_of_its_own_is_a_factory_exception():
    """docs/bots.md: a bot's raise is an ``exception`` "whatever it raises, a ``BaseException``
    subclass such as ``asyncio.CancelledError`` included"; its factory's too (the factory runs
    inside the first decision), never the end of the arena or of a worker."""
    class Cancelled(BaseException):
        pass

    def factory(game_id):
        raise Cancelled("AS")

    reply = _runner(cancelled=factory).decide("cancelled", "klaberjass", 0, VIEW, LEGAL, 1, 5.0)
    assert (reply.action, reply.failure) == (None, "exception"), reply
    assert re.fullmatch(r"factory: Cancelled at test_runner\.py:\d+ in factory", reply.detail), reply


@pytest.mark.parametrize("code, detail", [
    (0, "SystemExit(0)"), (None, "SystemExit(None)"), (3, "SystemExit(3)"),
    ("my hand is AS KS", "SystemExit with a str"), (["AS"], "SystemExit with a list"),
])
def test_an_in_process_sys_exit_is_described_by_its_status_never_by_its_message(code, detail):
    """runner.py: "nothing a bot says is logged verbatim". ``sys.exit("my hand is AS KS")``
    in an in-process bot (the arena, remote_bot, which prints the detail) is a crash whose
    detail gives an exit status, and of a message only its type: it said
    ``SystemExit('my hand is AS KS')``."""
    class Exits:
        def decide(self, request):
            raise SystemExit(code)
    reply = _runner(exits=lambda game_id: Exits()).decide("exits", "klaberjass", 0, VIEW, LEGAL, 1, 5.0,
                                                          in_process=True)
    assert (reply.action, reply.failure, reply.detail) == (None, "crash", detail), reply
    assert not HIDDEN.search(reply.detail), reply


def test_an_in_process_bot_cannot_swallow_its_interruption_with_except_exception(monkeypatch, no_outer_alarm):
    """runner._Interrupted is a BaseException: a bot whose ``except Exception`` wraps its
    search (the usual guard) is still interrupted a second past its budget, not handed the
    interruption as one more error to catch and go on from."""
    import time as real_time

    monkeypatch.setattr(runner_module, "INTERRUPT_AFTER", 0.05)

    class Guarded:
        def decide(self, request):
            try:
                real_time.sleep(30)
            except Exception:
                return request.legal[0]
            return request.legal[1]
    reply = _runner(guarded=lambda game_id: Guarded()).decide("guarded", "klaberjass", 0, VIEW, LEGAL, 1, 0.01,
                                                              enforce_budget=True, in_process=True)
    assert (reply.action, reply.failure) == (None, "timeout"), reply
    assert reply.detail == "still running 0.1s past its budget (0.010s): interrupted", reply
