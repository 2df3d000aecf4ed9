"""Delayed spectators (engine_service/sessions/delay.py; ARCHITECTURE.md section 4): a match
created with ``spectator_delay_actions`` = D shows spectators, while it is played, exactly the
match as it was D actions ago (events, views, snapshots, resumes), each action once and in
order; everything withheld arrives before ``match_ended``; seats are never delayed; the delay
survives a restart; a delay out of range is refused."""

from __future__ import annotations

import asyncio
import random

import pytest

from engine_service.sessions.api import BadRequest, CreateMatchRequest, Principal
from engine_service.sessions.delay import MAX_SPECTATOR_DELAY, cursor_at
from engine_service.store import MemoryStore, SqliteStore

from .helpers import GAMES, Stream, config, manager, open_match, run, to_act, until

DELAY = 5


def public_at(mgr, match_id: str, seq: int) -> dict:
    """The rules' public view after the first ``seq`` actions (a fold of the log)."""
    state, _ = mgr._matches[match_id].fold(seq)
    return state.public_view()


async def act_once(mgr, match_id, ps, rng) -> int:
    seat, p, env = await to_act(mgr, match_id, ps)
    res = await mgr.submit_action(match_id, p, rng.choice(list(env.view["legal"])), env.seq)
    return res.seq


async def settle() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


@pytest.mark.parametrize("game_id", GAMES)
def test_spectators_follow_the_match_delay_actions_late(game_id):
    """After every action the spectator's stream holds exactly the actions up to seq - D, each
    with the public view of that moment and no deadline, while a seat's stream holds them all;
    the spectator's GetView is the same position; at the end the withheld actions arrive in
    order before match_ended, and the last view is the match's final one."""
    async def go():
        async with manager(config(heartbeat_interval_s=60)) as mgr:
            match_id, ps = await open_match(mgr, game_id, spectator_delay_actions=DELAY, turn_time_s=60)
            spectator = Principal("spectator", match_id)
            spec, seat = Stream(mgr, match_id, spectator, 0), Stream(mgr, match_id, ps[0], 0)
            rng = random.Random(game_id)
            checks = 0
            while (await mgr.get_match(match_id)).status == "active":
                seq = await act_once(mgr, match_id, ps, rng)
                await settle()
                if (await mgr.get_match(match_id)).status != "active":
                    break
                horizon = max(0, seq - DELAY)
                assert [e.seq for e in spec.actions()] == list(range(1, horizon + 1)), seq
                assert [e.seq for e in seat.actions()] == list(range(1, seq + 1))
                env = await mgr.get_view(match_id, spectator)
                assert (env.seq, env.status, env.deadline, env.seat) == (horizon, "active", None, None)
                assert env.view == public_at(mgr, match_id, horizon)
                if spec.actions():
                    assert spec.actions()[-1].view == env
                checks += 1
            await until(lambda: spec.task.done() and seat.task.done())
            final = await mgr.get_view(match_id, spectator)
            live_final = mgr._matches[match_id].envelope(0)
            views = {e.seq: public_at(mgr, match_id, e.seq) for e in spec.actions()[:-1]}
            return spec, seat, final, live_final, views, checks

    spec, seat, final, live_final, views, checks = run(go(), timeout=300)
    assert checks > 20 and spec.error is None and seat.error is None
    final_seq = final.seq
    assert final_seq == live_final.seq and final.status == "finished"
    assert [e.seq for e in spec.actions()] == list(range(1, final_seq + 1))
    assert [(e.seat, e.action, e.by) for e in spec.actions()] == [(e.seat, e.action, e.by) for e in seat.actions()]
    # the deals scored are announced where they happened
    assert [e.details for e in spec.actions()] == [e.details for e in seat.actions()]
    for e in spec.actions()[:-1]:
        assert e.view.view == views[e.seq] and e.view.deadline is None and e.view.status == "active"
    assert spec.actions()[-1].view.view == final.view and final.view["over"]
    assert spec.events[-1].kind == "match_ended" and spec.events[-1].seq == final_seq
    # watched from after_seq 0 on a started match: the start's snapshot, then only actions
    assert [(e.kind, e.seq) for e in spec.events if e.kind == "snapshot"] == [("snapshot", 0)]
    assert spec.events[0].kind == "snapshot"
    presence = [e for e in spec.events if e.kind == "presence"]  # seat 0 connecting, at seq 0
    assert presence and all(e.seq == 0 for e in presence)


def test_snapshots_resumes_and_presence_of_a_delayed_spectator():
    """A late spectator gets a snapshot at the horizon; one resuming from the horizon gets
    the rest without a gap or a repeat; after_seq beyond the horizon is refused; presence
    events and heartbeats carry the spectator's position and no deadline."""
    async def go():
        async with manager(config(heartbeat_interval_s=0.05, snapshot_threshold=3)) as mgr:
            match_id, ps = await open_match(mgr, "klaberjass", spectator_delay_actions=DELAY,
                                            turn_time_s=60)
            spectator = Principal("spectator", match_id)
            rng = random.Random(3)
            for _ in range(12):
                await act_once(mgr, match_id, ps, rng)
            assert (await mgr.get_match(match_id)).seq == 12
            late = Stream(mgr, match_id, spectator, -1)
            resumed = Stream(mgr, match_id, spectator, 5)
            await settle()
            with pytest.raises(BadRequest) as ahead:
                agen = mgr.watch(match_id, spectator, 8)
                await agen.__anext__()
            seat_stream = Stream(mgr, match_id, ps[1], -1)  # a presence change of seat 1
            await until(lambda: any(e.kind == "presence" for e in late.events))
            await until(lambda: any(e.kind == "heartbeat" for e in late.events))
            for _ in range(4):
                await act_once(mgr, match_id, ps, rng)
            await settle()
            await seat_stream.close()
            for s in (late, resumed):
                await s.close()
            return late, resumed, ahead.value, public_at(mgr, match_id, 7)

    late, resumed, ahead, view7 = run(go())
    assert ahead.reason == "BAD_AFTER_SEQ" and "for spectators" in ahead.message
    assert late.events[0].kind == "snapshot" and late.events[0].seq == 7
    assert late.events[0].view.view == view7 and late.events[0].view.deadline is None
    assert [e.seq for e in late.actions()] == [8, 9, 10, 11]
    presence = next(e for e in late.events if e.kind == "presence")
    assert presence.seq == 7 and presence.view.seq == 7 and presence.view.view == view7
    beats = [e for e in late.events if e.kind == "heartbeat"]
    assert beats and all(b.details["deadline"] is None for b in beats)
    assert [e.seq for e in resumed.actions()] == [6, 7, 8, 9, 10, 11]


def test_a_resignation_releases_what_was_withheld():
    """A two-player match ended by a resignation (JJK-10.1): the spectator gets every withheld
    action, then match_ended, nothing twice. The view of an action released to spectators is
    the one envelope of that position, GetView's too (LiveMatch._delayed_envelope: built once
    per position for every spectator); the last one released at the end, the match's final
    view as it ended, the current one."""
    async def go():
        async with manager() as mgr:
            match_id, ps = await open_match(mgr, "japanese_joker", spectator_delay_actions=DELAY)
            spectator = Principal("spectator", match_id)
            spec = Stream(mgr, match_id, spectator, 0)
            rng = random.Random(5)
            for _ in range(9):
                await act_once(mgr, match_id, ps, rng)
            await settle()
            withheld = [e.seq for e in spec.actions()]
            assert (await mgr.get_view(match_id, spectator)) is spec.actions()[-1].view
            await mgr.leave_match(match_id, ps[1], resign=True)
            await until(lambda: spec.task.done())
            assert (await mgr.get_view(match_id, spectator)) is spec.actions()[-1].view
            return withheld, spec, mgr.metrics

    withheld, spec, metrics = run(go())
    assert withheld == [1, 2, 3, 4]
    assert [e.seq for e in spec.actions()] == list(range(1, 10))
    # docs/operations.md: each action delivered to the one (delayed) stream is counted once
    assert metrics.value("cardgames_events_published_total", {"kind": "action"}) == 9
    assert spec.events[-1].kind == "match_ended" and spec.events[-1].view.view["over"]
    assert spec.actions()[-1].view.view["over"]  # the last action's view: the match as it ended


def test_the_delay_survives_a_restart(tmp_path):
    """The delay is part of the stored match: after a restart the spectator is still D
    actions behind, and the summary says so."""
    db = str(tmp_path / "m.db")

    async def first():
        async with manager(store=SqliteStore(db)) as mgr:
            match_id, ps = await open_match(mgr, "georgian_joker", spectator_delay_actions=DELAY)
            rng = random.Random(8)
            for _ in range(11):
                await act_once(mgr, match_id, ps, rng)
            return match_id

    async def second(match_id):
        async with manager(store=SqliteStore(db)) as mgr:
            summary = await mgr.get_match(match_id)
            env = await mgr.get_view(match_id, Principal("spectator", match_id))
            return summary, env, public_at(mgr, match_id, 11 - DELAY)

    match_id = run(first())
    summary, env, expected = run(second(match_id))
    assert summary.spectator_delay_actions == DELAY and summary.seq == 11
    assert env.seq == 11 - DELAY and env.view == expected


def test_a_spectator_of_a_match_resumed_after_a_restart_gets_each_action_once():
    """Each action reaches the spectators once and in order (module docstring), after a
    restart too: the match read back knows that its spectators were shown everything up to
    the horizon, so the first action after the restart releases only the action it brings
    within reach, not the whole log again. (Mutant: LiveMatch's spectators_seen started at 0
    when read back: a spectator who had the snapshot at the horizon got actions 1..6 again.)"""
    store = MemoryStore()  # kept by the manager that stops and read back by the next one

    async def first():
        async with manager(store=store) as mgr:
            match_id, ps = await open_match(mgr, "klaberjass", spectator_delay_actions=DELAY)
            rng = random.Random(8)
            for _ in range(11):
                await act_once(mgr, match_id, ps, rng)
            return match_id, ps

    async def second(match_id, ps):
        async with manager(store=store) as mgr:
            spec = Stream(mgr, match_id, Principal("spectator", match_id), -1)
            await until(lambda: bool(spec.events))
            await act_once(mgr, match_id, ps, random.Random(9))
            await until(lambda: bool(spec.actions()))
            await settle()
            await spec.close()
            return spec

    spec = run(second(*run(first())))
    assert spec.events[0].kind == "snapshot" and spec.events[0].seq == 11 - DELAY
    assert [e.seq for e in spec.actions()] == [12 - DELAY]


@pytest.mark.parametrize("delay", [-1, MAX_SPECTATOR_DELAY + 1, True, 2.5])
def test_a_delay_out_of_range_is_refused(delay):
    """docs/api.md "Errors": INVALID_ARGUMENT / BAD_SPECTATOR_DELAY names its ``field``."""
    async def go():
        async with manager() as mgr:
            with pytest.raises(BadRequest) as err:
                await mgr.create_match(CreateMatchRequest(game="klaberjass", spectator_delay_actions=delay))
            return err.value, mgr.match_ids()

    err, held = run(go())
    assert err.reason == "BAD_SPECTATOR_DELAY" and held == []
    assert err.metadata == {"field": "spectator_delay_actions"}


def test_a_floor_raised_at_a_restart_leaves_the_running_matches_their_delay(tmp_path):
    """The floor is applied when a match is created and stored with it (docs/operations.md,
    --min-spectator-delay-actions): a restart with a higher floor does not delay the matches
    already running, whose spectators may be past the new horizon already (their resumes
    with after_seq would be refused); the matches created afterwards get it."""
    db = str(tmp_path / "m.db")

    async def first():
        async with manager(store=SqliteStore(db)) as mgr:
            match_id, ps = await open_match(mgr, "japanese_joker")
            rng = random.Random(3)
            for _ in range(6):
                await act_once(mgr, match_id, ps, rng)
            return match_id

    async def second(match_id):
        async with manager(config(min_spectator_delay_actions=4), store=SqliteStore(db)) as mgr:
            env = await mgr.get_view(match_id, Principal("spectator", match_id))
            later = await mgr.create_match(CreateMatchRequest(game="japanese_joker"))
            return (await mgr.get_match(match_id)).spectator_delay_actions, env.seq, later.spectator_delay_actions

    assert run(second(run(first()))) == (0, 6, 4)


def test_the_operator_floor_raises_every_delay():
    """--min-spectator-delay-actions: a match asking for less (or nothing) gets the floor, one
    asking for more keeps its own; the spectator's view follows the effective delay."""
    async def go():
        async with manager(config(min_spectator_delay_actions=4)) as mgr:
            live_id, ps = await open_match(mgr, "japanese_joker")
            longer = await mgr.create_match(CreateMatchRequest(game="japanese_joker",
                                                               spectator_delay_actions=9))
            rng = random.Random(1)
            for _ in range(6):
                await act_once(mgr, live_id, ps, rng)
            env = await mgr.get_view(live_id, Principal("spectator", live_id))
            return (await mgr.get_match(live_id)).spectator_delay_actions, longer.spectator_delay_actions, env.seq

    floor, longer, seen = run(go())
    assert (floor, longer, seen) == (4, 9, 2)


def test_get_match_announces_a_deal_to_delayed_spectators_when_their_view_shows_it():
    """``GetMatch`` needs no token, so its ``deal_commitments`` are what a spectator may know:
    those of the deals dealt by the spectators' horizon. Counted live, a new commitment told
    a spectator kept D actions behind that a deal had ended (here thrown in after four
    passes, KL-3.5) before its view showed it. The admin's summaries (InspectMatch,
    ListMatches, ReissueSeatToken's answer) stay live, and at the end every deal is announced."""
    async def go():
        async with manager(config(heartbeat_interval_s=60)) as mgr:
            match_id, ps = await open_match(mgr, "klaberjass", spectator_delay_actions=DELAY)
            spectator = Principal("spectator", match_id)
            for _ in range(4):
                seat, p, env = await to_act(mgr, match_id, ps)
                assert "pass" in env.view["legal"]
                await mgr.submit_action(match_id, p, "pass", env.seq)
            thrown_in = (await mgr.get_match(match_id), await mgr.get_view(match_id, spectator),
                         await mgr.inspect_match(match_id), await mgr.list_matches())
            reissued, admin_summary = await mgr.reissue_seat_token(match_id, 0)
            ps[0] = mgr.authenticate(match_id, reissued.token)
            rng = random.Random(4)
            while (await mgr.get_match(match_id)).seq < 4 + DELAY:
                await act_once(mgr, match_id, ps, rng)
            shown = (await mgr.get_match(match_id), await mgr.get_view(match_id, spectator))
            await mgr.terminate_match(match_id, "enough")
            ended = await mgr.get_match(match_id)
            return thrown_in, admin_summary, shown, ended, mgr._matches[match_id].deal_commitments()

    (summary, env, inspection, listed), admin_summary, (later, later_env), ended, every = run(go())
    assert summary.seq == 4 and len(every) >= 2
    assert env.seq == 0 and env.view["deal_number"] == 0
    assert summary.deal_commitments == (env.deal_commitment,) == every[:1]
    assert inspection.summary.deal_commitments == every[:2] == listed[0].deal_commitments
    assert admin_summary.deal_commitments == every[:2]
    assert later_env.seq == 4 and later_env.view["deal_number"] == 1
    assert later.deal_commitments == every[:2] and later.deal_commitments[-1] == later_env.deal_commitment
    assert ended.deal_commitments == every


def test_the_longest_delay_is_200_actions():
    """docs/api.md: ``spectator_delay_actions`` is 0 to 200; 201 is BAD_SPECTATOR_DELAY."""
    async def go():
        async with manager() as mgr:
            longest = await mgr.create_match(CreateMatchRequest(game="klaberjass", spectator_delay_actions=200))
            with pytest.raises(BadRequest) as err:
                await mgr.create_match(CreateMatchRequest(game="klaberjass", spectator_delay_actions=201))
            return longest, err.value

    longest, err = run(go())
    assert longest.spectator_delay_actions == 200 and err.reason == "BAD_SPECTATOR_DELAY"


def test_a_spectator_get_view_without_a_spectator_stream_is_at_the_horizon():
    """With no spectator stream open the writer moves no spectator position (delay.cursor_at
    is asked only by GetView): each GetView must step the spectators' position forward to
    the horizon, seq - D, and show the public view there, not the position of the last ask."""
    async def go():
        async with manager(config(heartbeat_interval_s=60)) as mgr:
            match_id, ps = await open_match(mgr, "klaberjass", spectator_delay_actions=2, turn_time_s=60)
            spectator = Principal("spectator", match_id)
            rng = random.Random(7)
            seen = []
            for _ in range(12):
                seq = await act_once(mgr, match_id, ps, rng)
                if (await mgr.get_match(match_id)).status != "active":
                    break
                env = await mgr.get_view(match_id, spectator)
                seen.append((env.seq, max(0, seq - 2), env.view == public_at(mgr, match_id, max(0, seq - 2))))
            return seen

    seen = run(go())
    assert len(seen) > 5 and all(got == horizon and same for got, horizon, same in seen), seen


def test_the_spectators_view_of_a_position_is_built_once_for_all_of_them():
    """Every spectator of a delayed match at one horizon gets the same envelope object (built
    once per position, then encoded once by the transport, like the live views), and a new
    one once the horizon moves; a spectator's snapshot at the horizon is that envelope too
    (LiveMatch.view_at: the current one where it is that seq's)."""
    async def go():
        async with manager(config(heartbeat_interval_s=60)) as mgr:
            match_id, ps = await open_match(mgr, "klaberjass", spectator_delay_actions=2, turn_time_s=60)
            spectator = Principal("spectator", match_id)
            rng = random.Random(7)
            for _ in range(4):
                await act_once(mgr, match_id, ps, rng)
            first, again = [await mgr.get_view(match_id, spectator) for _ in range(2)]
            stream = Stream(mgr, match_id, spectator)
            await until(lambda: stream.events)
            await stream.close()
            await act_once(mgr, match_id, ps, rng)
            moved = await mgr.get_view(match_id, spectator)
            return first, again, moved, stream.events[0]

    first, again, moved, snapshot = run(go())
    assert first.seq == 2 and first is again
    assert snapshot.kind == "snapshot" and snapshot.seq == 2 and snapshot.view is first
    assert moved.seq == 3 and moved is not first


def test_a_retried_action_of_a_delayed_match_answers_with_the_seats_view_after_it():
    """A seat's action retried (its client_action_id) once the match has moved on answers with
    that seat's view just after the action, never the current one: also when the action's
    seq is the spectators' horizon (the view at the horizon is the spectators' only)."""
    async def go():
        async with manager(config(heartbeat_interval_s=60)) as mgr:
            match_id, ps = await open_match(mgr, "klaberjass", spectator_delay_actions=2, turn_time_s=60)
            rng = random.Random(7)
            seat, p, env = await to_act(mgr, match_id, ps)
            action = rng.choice(list(env.view["legal"]))
            first = await mgr.submit_action(match_id, p, action, env.seq, client_action_id="a1")
            for _ in range(2):
                await act_once(mgr, match_id, ps, rng)
            m = mgr._matches[match_id]
            assert m.spectator_horizon() == first.seq  # the retry's seq is the horizon now
            again = await mgr.submit_action(match_id, p, action, env.seq, client_action_id="a1")
            return first, again, m.seq

    first, again, now = run(go())
    assert again.duplicate and again.seq == first.seq < now
    assert again.view.seq == first.seq and again.view.view == first.view.view


def test_a_seat_and_the_admin_watch_a_delayed_match_live():
    """Seats are never delayed (ARCHITECTURE.md section 4): on a match whose spectators are
    ``DELAY`` actions late, a seat's and the admin's new streams start at the match's seq (a
    snapshot of now), and a seat may resume at the match's seq, which is ahead of the
    spectators' horizon (a spectator resuming there is refused: BAD_AFTER_SEQ)."""
    async def go():
        async with manager() as mgr:
            match_id, ps = await open_match(mgr, "klaberjass", spectator_delay_actions=DELAY)
            rng = random.Random(3)
            for _ in range(DELAY + 2):
                seq = await act_once(mgr, match_id, ps, rng)
            seat = mgr.watch(match_id, ps[0], -1)
            admin = mgr.watch(match_id, Principal("admin"), -1)
            resumed = mgr.watch(match_id, ps[1], seq)
            try:
                firsts = [await seat.__anext__(), await admin.__anext__(), await resumed.__anext__()]
            finally:
                for s in (seat, admin, resumed):
                    await s.aclose()
            with pytest.raises(BadRequest) as refused:
                spectator = mgr.watch(match_id, Principal("spectator", match_id), seq)
                await spectator.__anext__()
            return seq, firsts, refused.value

    seq, firsts, refused = run(go())
    assert seq == DELAY + 2
    assert [(e.kind, e.seq) for e in firsts] == [("snapshot", seq), ("snapshot", seq), ("heartbeat", seq)]
    assert refused.reason == "BAD_AFTER_SEQ"


def test_a_delayed_spectators_heartbeats_are_at_its_horizon_without_the_live_deadline():
    """A delayed spectator's heartbeats report its own position, the spectators' horizon, with
    no deadline (the decision there is taken), never the match's live seq and deadline, which
    would tell it how far ahead the match is (ARCHITECTURE.md section 4: spectators see the
    match as it was D actions ago): the one at once of a stream resumed at the horizon
    (nothing to replay), and the idle ones of a stream that began with a snapshot."""
    async def go():
        async with manager(config(heartbeat_interval_s=0.05)) as mgr:
            match_id, ps = await open_match(mgr, "klaberjass", spectator_delay_actions=DELAY,
                                            turn_time_s=60)
            m = mgr._matches[match_id]
            present = [Stream(mgr, match_id, p) for p in ps]  # the turn clock runs (JJK-10.2)
            await until(lambda: all(s.present for s in m.seats))
            rng = random.Random(3)
            for _ in range(DELAY + 3):
                await act_once(mgr, match_id, ps, rng)
            spectator = Principal("spectator", match_id)
            resumed, fresh = mgr.watch(match_id, spectator, 3), mgr.watch(match_id, spectator, -1)
            try:
                firsts = [await resumed.__anext__()] + [await fresh.__anext__() for _ in range(2)]
            finally:
                await resumed.aclose()
                await fresh.aclose()
            live = m.seq, m.deadline
            for s in present:
                await s.close()
            return *live, firsts

    seq, deadline, firsts = run(go())
    assert seq == DELAY + 3 and deadline is not None
    assert [(e.kind, e.seq) for e in firsts] == [("heartbeat", 3), ("snapshot", 3), ("heartbeat", 3)]
    assert [firsts[0].details["deadline"], firsts[2].details["deadline"]] == [None, None]


def test_the_admins_summaries_are_live_and_everyone_elses_delayed():
    """The spectators' delay (docs/api.md, "Spectator delay") holds back from GetMatch, which
    anyone may call, the commitment of a deal its delayed spectators have not seen dealt; the
    admin's summaries (InspectMatch, ListMatches, ReissueSeatToken's answer) are live: every
    deal dealt so far. Four passes throw the first Klaberjass deal in and deal the next one
    (KL-3.5): its commitment is news that the delayed view shows DELAY actions later."""
    async def go():
        async with manager() as mgr:
            match_id, ps = await open_match(mgr, "klaberjass", spectator_delay_actions=DELAY)
            for _ in range(4):
                seat, p, env = await to_act(mgr, match_id, ps)
                await mgr.submit_action(match_id, p, "pass", env.seq)
            public = await mgr.get_match(match_id)
            admin = [(await mgr.inspect_match(match_id)).summary, (await mgr.list_matches())[0],
                     (await mgr.reissue_seat_token(match_id, 0))[1]]
            return public, admin, mgr._matches[match_id].deal_commitments()

    public, admin, live = run(go())
    assert len(live) == 2 and public.deal_commitments == live[:1]
    assert [s.deal_commitments for s in admin] == [live] * 3


def test_a_spectator_cursor_moves_only_to_the_position_asked_for():
    """``delay.cursor_at`` is where every delayed view comes from: moved forwards it steps
    through the log, and asked for a position behind it (no flow moves the horizon back today:
    seq only grows and a match never becomes active again) it folds that position afresh
    rather than keep its later one, which would show spectators more than the delay allows.
    Each position's public view is the log's fold there; the match's own state is untouched."""
    async def go():
        async with manager() as mgr:
            match_id, ps = await open_match(mgr, "klaberjass", spectator_delay_actions=DELAY)
            rng = random.Random(7)
            for _ in range(10):
                await act_once(mgr, match_id, ps, rng)
            m = mgr._matches[match_id]
            before = m.state.public_view()
            seen = []
            c = None
            for seq in (3, 8, 4, 4, 0, 9):
                c = cursor_at(m, c, seq)
                seen.append((seq, c.seq, c.state.public_view() == public_at(mgr, match_id, seq)))
            return seen, before, m.state.public_view()

    seen, before, after = run(go())
    assert seen == [(s, s, True) for s in (3, 8, 4, 4, 0, 9)]
    assert after == before


def test_a_cursor_folded_mid_match_announces_only_the_deals_its_steps_score():
    """A spectator cursor made by a fold (the first delayed view after a restart or a reload,
    a position behind the cursor) already counts the deals scored by its position: each step
    from it carries ``deal_scored`` exactly when that action scores a deal, as a cursor
    stepped from the start does (docs/api.md: each action reaches delayed spectators as an
    ordinary ACTION event), never a deal scored before it began."""
    async def go():
        async with manager() as mgr:
            match_id, ps = await open_match(mgr, "klaberjass", spectator_delay_actions=DELAY)
            m = mgr._matches[match_id]
            rng = random.Random(3)
            while len(m.state.deal_results()) < 2:
                await act_once(mgr, match_id, ps, rng)
            walked, c = [], cursor_at(m, None, 0)
            for rec in m.actions:
                walked.append(c.step(m, rec))
            folded = [cursor_at(m, None, rec.seq - 1).step(m, rec) for rec in m.actions]
            return walked, folded

    walked, folded = run(go())
    assert sum("deal_scored" in d for d in walked) == 2
    assert folded == walked


def test_the_admins_stream_of_a_delayed_match_gets_each_action_once_live_and_no_spectators_release():
    """The delay is the spectators' alone (ARCHITECTURE.md section 4): a stream gets the events
    of its own audience only. The admin's stream of a delayed match holds every action once,
    live and in order; the actions released to the spectators ``DELAY`` actions later (with
    the spectators' view) are not queued to it again."""
    async def go():
        async with manager(config(heartbeat_interval_s=60)) as mgr:
            match_id, ps = await open_match(mgr, "klaberjass", spectator_delay_actions=DELAY)
            admin = Stream(mgr, match_id, Principal("admin"), 0)
            spec = Stream(mgr, match_id, Principal("spectator", match_id), 0)
            rng = random.Random(4)
            for _ in range(DELAY + 3):
                seq = await act_once(mgr, match_id, ps, rng)
            await until(lambda: len(admin.actions()) >= seq and len(spec.actions()) >= seq - DELAY)
            await settle()
            for s in (admin, spec):
                await s.close()
            return seq, admin.actions(), spec.actions()

    seq, admin, spec = run(go())
    assert [e.seq for e in admin] == list(range(1, seq + 1))
    assert [e.seq for e in spec] == list(range(1, seq - DELAY + 1))


def test_a_watched_delayed_match_is_folded_once_and_then_stepped(monkeypatch):
    """The spectators' position (delay.SpectatorCursor) is "advanced one action at a time as
    the horizon moves (a fold from the nearest checkpoint only when it is first needed)": each
    release steps on from where the last one stopped, never a fold of the log per action,
    which would replay the whole match (from its last checkpoint) for every accepted action."""
    from engine_service.sessions.match import LiveMatch

    folds = []
    fold = LiveMatch.fold

    def counted(self, seq, *args, **kwargs):
        folds.append(seq)
        return fold(self, seq, *args, **kwargs)

    monkeypatch.setattr(LiveMatch, "fold", counted)

    async def go():
        async with manager(config(heartbeat_interval_s=60)) as mgr:
            match_id, ps = await open_match(mgr, "klaberjass", spectator_delay_actions=2, turn_time_s=60)
            spec = Stream(mgr, match_id, Principal("spectator", match_id), 0)
            rng = random.Random(7)
            for _ in range(10):
                seq = await act_once(mgr, match_id, ps, rng)
            await until(lambda: len(spec.actions()) >= seq - 2)
            await spec.close()
            return seq, [e.seq for e in spec.actions()]

    seq, released = run(go())
    assert seq == 10 and released == list(range(1, 9))
    assert len(folds) <= 1, folds
