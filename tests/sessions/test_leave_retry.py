"""A retried LeaveMatch (its first answer lost: UNAVAILABLE, a deadline) is not an error when
the seat's own leave already took effect: it is answered OK with the match's summary as it
stands and changes nothing (no event, no seq, no metric; logged ``leave_repeated``). That is
a two-player match ended by this seat's resignation, or a Georgian Joker seat that left (the
match went on, and may have ended since). Anything else stays refused: another seat's
resignation, an end by the rules, a forfeit or a termination (MATCH_NOT_ACTIVE), and a seat
freed in a waiting match, whose token is void (UNAUTHENTICATED). The answer is derived from
the match's durable record, so it is the same after a restart (SQLite) and after an eviction,
and a retry of a resignation whose end was left in doubt by the store settles it first."""

from __future__ import annotations

from typing import Callable

import pytest
from structlog.testing import capture_logs

from engine_service.observability.metrics import Metrics
from engine_service.sessions.api import (CreateMatchRequest, MatchNotActive, Principal, SessionError,
                                         Unauthenticated)
from engine_service.sessions.manager import MatchManager
from engine_service.store import SqliteStore

from tests.crash import crash

from .helpers import Stream, absences_written, config, manager, open_match, run, until
from .test_store_failures import EndsInDoubt


def _finished(metrics: Metrics, game: str, outcome: str) -> float:
    return metrics.value("cardgames_matches_finished_total", {"game": game, "outcome": outcome})


async def _seated(mgr: MatchManager, game: str) -> tuple[str, list[str]]:
    """A started match with every seat a player's: its id and the seat tokens."""
    s = await mgr.create_match(CreateMatchRequest(game=game))
    return s.match_id, [(await mgr.join_match(s.match_id, i, f"p{i}")).token for i in range(len(s.seats))]


def test_a_repeated_resignation_answers_ok_and_changes_nothing():
    metrics = Metrics()

    async def go():
        with capture_logs() as logs:
            async with manager(metrics=metrics) as mgr:
                match_id, tokens = await _seated(mgr, "klaberjass")
                ps = [mgr.authenticate(match_id, t) for t in tokens]
                spectator = Stream(mgr, match_id, Principal("spectator", match_id))
                await until(lambda: spectator.events)
                first = await mgr.leave_match(match_id, ps[0], resign=True)
                await until(lambda: spectator.events[-1].kind == "match_ended")
                seen = len(spectator.events)
                again = await mgr.leave_match(match_id, ps[0], resign=False)
                # the opponent did not resign: its leave is refused as before
                with pytest.raises(MatchNotActive):
                    await mgr.leave_match(match_id, ps[1], resign=True)
                # evicted, then read back from the store for the token: the same answer
                assert mgr.evict_finished() == 1
                assert await mgr.recall(match_id)
                later = await mgr.leave_match(match_id, mgr.authenticate(match_id, tokens[0]), resign=True)
                await spectator.close()
                return first, again, later, seen, spectator.events, logs

    first, again, later, seen, events, logs = run(go())
    assert first.status == "finished" and first.result["outcome"] == "resigned"
    assert first.result["resigned"] == 0 and first.result["winners"] == [1]
    assert again == first and later == first
    assert len(events) == seen  # no event for the repeats
    assert _finished(metrics, "klaberjass", "resigned") == 1
    names = [e["event"] for e in logs]
    assert names.count("match_ended") == 1 and names.count("seat_resigned") == 1
    assert [e["seat"] for e in logs if e["event"] == "leave_repeated"] == [0, 0]


@pytest.mark.parametrize("end", ["terminate", "forfeit"])
def test_a_leave_after_another_end_stays_match_not_active(end):
    async def go():
        async with manager() as mgr:
            match_id, ps = await open_match(mgr, "klaberjass")
            if end == "terminate":
                await mgr.terminate_match(match_id, "test")
            else:
                m = mgr._matches[match_id]
                await mgr._writer.end(m, "forfeit", winners=[1], forfeited=0)
            for p in ps:
                with pytest.raises(MatchNotActive):
                    await mgr.leave_match(match_id, p, resign=True)
    run(go())


def test_a_georgian_joker_seat_that_left_gets_ok_again_while_the_match_goes_on_and_after_it():
    metrics = Metrics()

    async def go():
        with capture_logs() as logs:
            async with manager(metrics=metrics) as mgr:
                match_id, tokens = await _seated(mgr, "georgian_joker")
                ps = [mgr.authenticate(match_id, t) for t in tokens]
                m = mgr._matches[match_id]
                first = await mgr.leave_match(match_id, ps[2], resign=True)
                spectator = Stream(mgr, match_id, Principal("spectator", match_id))
                await until(lambda: spectator.events)
                seq = m.seq
                again = await mgr.leave_match(match_id, ps[2], resign=False)
                presence = [e for e in spectator.events if e.kind == "presence"]
                await mgr.terminate_match(match_id, "test")
                after_end = await mgr.leave_match(match_id, ps[2], resign=True)
                with pytest.raises(MatchNotActive):  # another seat: the match is over
                    await mgr.leave_match(match_id, ps[1], resign=True)
                await spectator.close()
                return first, again, seq, presence, after_end, logs

    first, again, seq, presence, after_end, logs = run(go())
    assert first.status == again.status == "active"
    assert first.seats[2].replaced_by_bot and again.seats[2].replaced_by_bot
    assert again.seq >= seq and not presence  # no presence event for the repeat
    assert after_end.status == "terminated"
    names = [e["event"] for e in logs]
    assert names.count("seat_resigned") == 1
    assert [e["seat"] for e in logs if e["event"] == "leave_repeated"] == [2, 2]
    assert _finished(metrics, "georgian_joker", "terminated") == 1
    assert metrics.value("cardgames_presence_changes_total", {"game": "georgian_joker", "change": "left"}) == 1


def test_a_retried_leave_of_a_waiting_match_gets_the_first_answer():
    """Leaving a waiting match frees the seat and voids the token: any other call with it is
    UNAUTHENTICATED. A retry of the leave itself (its first answer lost) gets the first
    answer again and frees nothing more, both when it was authenticated before the leave
    voided the token (a retry racing it: MatchManager.leave_match) and when it comes after
    (MatchManager.repeated_leave, which the transport asks for an unknown token); another
    token gets no answer from it (its UNAUTHENTICATED stands)."""
    async def go():
        with capture_logs() as logs:
            async with manager() as mgr:
                s = await mgr.create_match(CreateMatchRequest(game="klaberjass"))
                token = (await mgr.join_match(s.match_id, 0, "a")).token
                p = mgr.authenticate(s.match_id, token)
                left = await mgr.leave_match(s.match_id, p, resign=False)
                with pytest.raises(Unauthenticated) as void:
                    mgr.authenticate(s.match_id, token)
                racing = await mgr.leave_match(s.match_id, p, resign=False)
                later = mgr.repeated_leave(s.match_id, token)
                other = mgr.repeated_leave(s.match_id, token + "x")
                return left, void.value, racing, later, other, await mgr.get_match(s.match_id), logs

    left, void, racing, later, other, now, logs = run(go())
    # both repeats are logged as such, for the seat the first leave freed
    assert [(e["seat"], e["freed"]) for e in logs if e["event"] == "leave_repeated"] == [(0, True), (0, True)]
    assert left.status == "waiting" and not left.seats[0].taken
    assert void.reason == "MISSING_OR_BAD_TOKEN"  # as a made-up token: nothing said of it
    assert racing == left and later == left and other is None
    assert now == left


def test_a_retried_leave_of_a_waiting_match_is_answered_as_the_match_stood_then():
    """docs/api.md (LeaveMatch): a retry of a waiting match's leave gets "the first leave's
    answer as it was (the match as your leave left it, your seat free), not the match as it
    is now", whether it was authenticated before the leave voided the token or comes after:
    a player who took the freed seat meanwhile is not shown to the void token. (Mutants: the
    answer rebuilt from the match now, in leave_match's racing path or in repeated_leave.)"""
    async def go():
        async with manager() as mgr:
            s = await mgr.create_match(CreateMatchRequest(game="klaberjass"))
            token = (await mgr.join_match(s.match_id, 0, "a")).token
            p = mgr.authenticate(s.match_id, token)
            left = await mgr.leave_match(s.match_id, p, resign=False)
            await mgr.join_match(s.match_id, 0, "b")
            racing = await mgr.leave_match(s.match_id, p, resign=False)
            later = mgr.repeated_leave(s.match_id, token)
            return left, racing, later, await mgr.get_match(s.match_id)

    left, racing, later, now = run(go())
    assert now.seats[0].taken and now.seats[0].player_name == "b"  # the seat was taken again
    assert not left.seats[0].taken
    assert racing == left and later == left


def repeated_leaves_after_a_restart(make_manager: Callable[[Metrics], MatchManager]) -> None:
    """A resignation that ended a two-player match and a Georgian Joker seat's leave, their
    answers lost with the process (a crash): against a new manager on the same store, each
    retry is answered OK from the stored match (its result, the seat's ``left``), without an
    end or a leave of its own; the opponent's leave is still MATCH_NOT_ACTIVE. Shared with the
    PostgreSQL store's tests (tests/store/test_postgres_service.py)."""
    async def before():
        mgr = make_manager(Metrics())
        await mgr.start()
        two_id, two_tokens = await _seated(mgr, "japanese_joker")
        four_id, four_tokens = await _seated(mgr, "georgian_joker")
        ended = await mgr.leave_match(two_id, mgr.authenticate(two_id, two_tokens[1]), True)
        await mgr.leave_match(four_id, mgr.authenticate(four_id, four_tokens[3]), False)
        await absences_written(mgr)  # tests/sessions/helpers.py: before a crash on PostgreSQL
        crash(mgr._store)  # the answers were lost with the process
        return two_id, two_tokens, ended, four_id, four_tokens

    two_id, two_tokens, ended, four_id, four_tokens = run(before())
    metrics = Metrics()

    async def after():
        mgr = make_manager(metrics)
        await mgr.start()
        try:
            with capture_logs() as logs:
                # a finished match is not resumed: the transport recalls it for an unknown token
                with pytest.raises(Unauthenticated):
                    mgr.authenticate(two_id, two_tokens[1])
                assert await mgr.recall(two_id)
                assert not await mgr.recall(two_id)  # held now: nothing brought back (api.MatchService.recall)
                again = await mgr.leave_match(two_id, mgr.authenticate(two_id, two_tokens[1]), True)
                with pytest.raises(MatchNotActive):
                    await mgr.leave_match(two_id, mgr.authenticate(two_id, two_tokens[0]), True)
                left = await mgr.leave_match(four_id, mgr.authenticate(four_id, four_tokens[3]), True)
                stored = await mgr._store.load_match(two_id)
            return again, left, stored, logs
        finally:
            await mgr.close()

    again, left, stored, logs = run(after())
    assert again == ended and again.result["resigned"] == 1
    assert stored.record.result == ended.result and len(stored.actions) == ended.seq
    assert left.status == "active" and left.seats[3].replaced_by_bot
    assert [(e["match_id"], e["seat"]) for e in logs if e["event"] == "leave_repeated"] == [
        (two_id, 1), (four_id, 3)]
    assert not [e for e in logs if e["event"] in ("match_ended", "seat_resigned")]
    assert _finished(metrics, "japanese_joker", "resigned") == 0


def test_a_repeated_leave_after_a_restart_answers_ok_on_sqlite(tmp_path):
    path = tmp_path / "m.sqlite3"
    repeated_leaves_after_a_restart(lambda metrics: MatchManager(
        config(db_path=str(path)), store=SqliteStore(path), metrics=metrics, create_bot_host=False))


def test_a_retried_resignation_whose_end_was_in_doubt_settles_it_and_answers_ok():
    """The resignation's status write landed but was answered with an error, and the read-back
    failed too (UNAVAILABLE, the end in doubt): the retry reads the match back first, finds
    its own end, and answers OK; the match ended once."""
    store = EndsInDoubt()
    metrics = Metrics()

    async def go():
        with capture_logs() as logs:
            async with manager(store=store, metrics=metrics) as mgr:
                match_id, ps = await open_match(mgr, "klaberjass")
                store.fail_next, store.landed, store.unreadable = True, True, 1
                with pytest.raises(SessionError) as failed:
                    await mgr.leave_match(match_id, ps[0], resign=True)
                again = await mgr.leave_match(match_id, ps[0], resign=True)
                return failed.value, again, logs

    failed, again, logs = run(go())
    assert failed.reason == "STORE_UNAVAILABLE"
    assert again.status == "finished" and again.result["resigned"] == 0
    names = [e["event"] for e in logs]
    assert names.count("match_end_in_doubt") == 1 and names.count("match_end_found_in_store") == 1
    assert names.count("match_ended") == 1 and names.count("leave_repeated") == 1
    assert _finished(metrics, "klaberjass", "resigned") == 1


@pytest.mark.parametrize("game,start", [("klaberjass", False), ("klaberjass", True), ("georgian_joker", True)])
def test_a_leave_with_a_token_the_operator_replaced_is_revoked_and_changes_nothing(game, start):
    """A LeaveMatch authenticated before the operator replaced the seat's token
    (ReissueSeatToken, while the call waited for the match) is UNAUTHENTICATED /
    TOKEN_REVOKED and neither frees the seat (waiting), nor resigns it (two seats:
    the match would end; GJ-12.4: a bot would take the seat over): the old player no longer
    holds the seat, and the new token's holder keeps it. Not a repeated leave either (the
    seat never left), and the new token still leaves."""
    async def go():
        async with manager() as mgr:
            s = await mgr.create_match(CreateMatchRequest(game=game))
            seats = len(s.seats) if start else 1
            tokens = [(await mgr.join_match(s.match_id, i, f"p{i}")).token for i in range(seats)]
            old = mgr.authenticate(s.match_id, tokens[0])
            before = await mgr.get_match(s.match_id)
            reissued, _ = await mgr.reissue_seat_token(s.match_id, 0)
            with pytest.raises(Unauthenticated) as revoked:
                await mgr.leave_match(s.match_id, old, resign=True)
            after = await mgr.get_match(s.match_id)
            assert mgr.repeated_leave(s.match_id, tokens[0]) is None
            left = await mgr.leave_match(s.match_id, mgr.authenticate(s.match_id, reissued.token), resign=True)
            return before, revoked.value, after, left

    before, revoked, after, left = run(go())
    assert revoked.reason == "TOKEN_REVOKED"
    assert after.status == before.status == ("active" if start else "waiting")
    assert after == before  # nothing changed: the seat is held, not left, nobody resigned
    # the current token's leave took effect
    if not start:
        assert left.status == "waiting" and not left.seats[0].taken
    elif game == "klaberjass":
        assert left.status == "finished" and left.result["outcome"] == "resigned"
    else:
        assert left.status == "active" and left.seats[0].left


def test_a_repeated_leave_of_a_match_not_held_or_without_a_token_has_no_answer():
    """MatchManager.repeated_leave answers None (the call's own error stands) for a match
    this manager does not hold and for an empty token; it raises nothing of its own."""
    async def go():
        async with manager() as mgr:
            s = await mgr.create_match(CreateMatchRequest(game="klaberjass"))
            token = (await mgr.join_match(s.match_id, 0, "a")).token
            await mgr.leave_match(s.match_id, mgr.authenticate(s.match_id, token), resign=False)
            return (mgr.repeated_leave("no-such-match", token), mgr.repeated_leave(s.match_id, ""),
                    mgr.repeated_leave(s.match_id, token) is not None)

    assert run(go()) == (None, None, True)


def test_a_waiting_match_answers_the_retried_leaves_of_its_latest_32_freed_tokens():
    """docs/api.md (LeaveMatch): the server remembers a freed seat's void token "for the
    latest 32 tokens freed in each match": after 33 leaves of a waiting match, the retry of
    the first is UNAUTHENTICATED again (None: the call's own error stands) while each of the
    latest 32 still gets its own first answer. (Mutants: FREED_TOKENS_KEPT smaller, larger,
    or the newest token dropped instead of the oldest.)"""
    async def go():
        async with manager() as mgr:
            s = await mgr.create_match(CreateMatchRequest(game="klaberjass"))
            freed = []
            for i in range(33):
                token = (await mgr.join_match(s.match_id, 0, f"p{i}")).token
                answer = await mgr.leave_match(s.match_id, mgr.authenticate(s.match_id, token), resign=False)
                freed.append((token, answer))
            return [mgr.repeated_leave(s.match_id, token) for token, _ in freed], [a for _, a in freed]

    retried, answers = run(go())
    assert retried[0] is None  # the oldest of 33 is forgotten
    assert retried[1:] == answers[1:]
