"""Misbehaving bots in real matches (MatchManager + BotHost): a bot that sleeps past its
deadline, raises, answers garbage or kills its worker process never stops the match. Every
one of its decisions falls back to the rulebook's auto-move, is logged and counted by bot and
reason, and the match log stays complete (its transcript replays).

Each bad bot faces the ``random`` bot: with the auto-move policy on both seats every
Klaberjass auction is passed out and thrown in forever. ``kl_target_score = 1`` ends the match
after its first played deal. Two matches run at once on one bot host of two workers, so a
hung bot also shows it does not stop the other match. The ``random`` bot has a deadline of its
own, longer than the bad bots' (HEALTHY_DEADLINE_S): its decisions must never time out, and on
a loaded machine one waiting for a replaced worker could at the bad bots' short deadline. That
a hung decision holds up no other is proved by order in test_host.py
(test_a_hung_bot_blocks_neither_the_event_loop_nor_other_matches)."""

from __future__ import annotations

import asyncio
import re

from engine_service.observability.metrics import Metrics
from engine_service.plugins.host import BENCH_AFTER, BotHost
from engine_service.rules import transcript
from engine_service.sessions.api import CreateMatchRequest, SeatConfig
from tests.sessions.helpers import capture_logs_with_context, collect, config, manager, run


HEALTHY_DEADLINE_S = 30.0  # a hang guard: the healthy bot answers in milliseconds


class BadBotsDeadlineHost(BotHost):
    """A bot host that gives the misbehaving bots the table's deadline, and the ``random`` bot
    facing them HEALTHY_DEADLINE_S: a hung bot is still cut off at the short deadline, while
    the healthy bot's decisions (waiting, on a loaded machine, for a worker that replaces a
    killed one) cannot time out for want of CPU."""

    async def decide(self, bot, game_id, seat, view, legal, seed, deadline_s):
        if bot == "random":
            deadline_s = max(deadline_s, HEALTHY_DEADLINE_S)
        return await super().decide(bot, game_id, seat, view, legal, seed, deadline_s)


def play_bot_matches(seatings: list[list[str]], deadline: float):
    """``deadline``: the bad bots' (the ``random`` bot has HEALTHY_DEADLINE_S)."""
    metrics = Metrics()

    async def one(mgr, bots):
        summary = await mgr.create_match(CreateMatchRequest(
            game="klaberjass", options={"kl_target_score": 1}, seats=[SeatConfig("bot", b) for b in bots]))
        events = await collect(mgr.watch(summary.match_id, mgr.authenticate(summary.match_id, None), -1))
        return events, await mgr.get_match(summary.match_id), await mgr.export_transcript(summary.match_id)

    async def go():
        host = BadBotsDeadlineHost(workers=2, plugins=["tests.plugins.bad_bots"], metrics=metrics)
        try:
            assert await host.start()
            async with manager(config(bot_deadline_s=deadline), host=host, metrics=metrics) as mgr:
                return await asyncio.gather(*(one(mgr, bots) for bots in seatings))
        finally:
            await host.close()

    with capture_logs_with_context() as logs:
        matches = run(go(), timeout=280)
    return matches, metrics, logs


def check_match(events, final, data, bad_seat: int) -> int:
    """The match ended by the rules, every action is in the log once and in order, the bad
    seat's moves were all auto-moves; returns how many decisions the bad seat had."""
    assert final.status == "finished" and final.result["outcome"] == "completed"
    actions = [e for e in events if e.kind == "action"]
    assert [e.seq for e in actions] == list(range(events[0].seq + 1, final.seq + 1))
    bad = [e for e in actions if e.seat == bad_seat]
    assert bad and all(e.by == "auto" for e in bad)
    assert all(e.by == "bot" for e in actions if e.seat != bad_seat)
    assert transcript.check(transcript.validate(data))[0] is None
    return len(bad)


def test_hung_and_crashing_bots_cannot_stop_a_match():
    (m1, m2), metrics, logs = play_bot_matches([["sleeps", "random"], ["random", "exits"]], deadline=0.4)
    hung = check_match(*m1, bad_seat=0)
    crashed = check_match(*m2, bad_seat=1)
    value = metrics.value
    assert value("cardgames_bot_failures_total", {"bot": "sleeps", "reason": "timeout"}) == hung
    assert value("cardgames_bot_failures_total", {"bot": "exits", "reason": "crash"}) == crashed
    # the first failures each cost a worker, then the bot is benched (host.BENCH_AFTER)
    assert value("cardgames_bot_worker_restarts_total", {"bot": "sleeps", "reason": "timeout"}) == min(hung, BENCH_AFTER)
    assert value("cardgames_bot_worker_restarts_total", {"bot": "exits", "reason": "crash"}) == min(crashed, BENCH_AFTER)
    assert value("cardgames_bot_failures_total", {"bot": "random", "reason": "timeout"}) == 0
    failed = [e for e in logs if e["event"] == "bot_failed"]
    assert {(e["bot"], e["reason"]) for e in failed} == {("sleeps", "timeout"), ("exits", "crash")}


def test_raising_and_garbage_bots_fall_back_and_are_counted():
    (m1, m2), metrics, logs = play_bot_matches([["raises", "random"], ["random", "garbage"]], deadline=2.0)
    raised = check_match(*m1, bad_seat=0)
    garbage = check_match(*m2, bad_seat=1)
    assert metrics.value("cardgames_bot_failures_total", {"bot": "raises", "reason": "exception"}) == raised
    assert metrics.value("cardgames_bot_failures_total", {"bot": "garbage", "reason": "illegal"}) == garbage
    assert metrics.value("cardgames_bot_worker_restarts_total", {"bot": "raises", "reason": "exception"}) == 0
    decided = [e for e in logs if e["event"] == "bot_decision_failed"]
    # what the bot said is never logged (a card code as a word: a match id such as
    # "8ASvPMWEtaJgTvmM" holds the letters AS by chance)
    assert decided and not re.search(r"(?<![A-Za-z0-9])(AS|KS)(?![A-Za-z0-9])", repr(decided)), decided
    # the host's line names the decision: its match and seat (bound by the bot move's task)
    matches = {m1[1].match_id: 0, m2[1].match_id: 1}
    assert all(matches[e["match_id"]] == e["seat"] for e in decided)
