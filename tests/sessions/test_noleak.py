"""No leaks: in random matches of every game, everything each seat and a spectator receive
(watch events, replays, snapshots, views, submit results, stale-sequence answers, error
messages) holds no card of ``state.secret_cards(audience)`` at that moment (but for a previous
deal's final trick in ``last_trick``: :func:`tests.rules.playout.without_previous_deal_trick`),
and every view is exactly the rules core's view for that audience. The logs of the whole match name no card a
spectator may not know at that moment."""

from __future__ import annotations

import asyncio
import dataclasses
import random

import pytest
from structlog.testing import capture_logs

from engine_service.rules.errors import RulesError
from engine_service.sessions.api import Principal, StaleSequence
from tests.rules.playout import cards_in, current_deal_cards_in, mask_codes

from .helpers import GAMES, collect, config, manager, open_match, run

SPECTATOR = "spectator"


_LEAVES = frozenset({str, int, float, bool, type(None)})


def as_data(obj):
    """``obj`` with every dataclass in it a dict of its fields, as ``dataclasses.asdict`` has
    them, but sharing what holds no dataclass instead of deep-copying it (asdict's copies of
    whole-match views took most of a Georgian Joker test): the checks only read it."""
    if type(obj) in _LEAVES:
        return obj
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: as_data(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
    if isinstance(obj, (list, tuple)):
        items = [as_data(v) for v in obj]
        return obj if all(a is b for a, b in zip(items, obj)) else items
    if isinstance(obj, dict):
        pairs = [(as_data(k), as_data(v)) for k, v in obj.items()]
        return obj if all(a is k and b is v for (a, b), (k, v) in zip(pairs, obj.items())) else dict(pairs)
    return obj


def secret_set(mask: int) -> set[int]:
    return {i for i in range(38) if mask >> i & 1}


async def play_and_watch(mgr, game_id, seed, delay=0):
    rng = random.Random(seed)
    match_id, ps = await open_match(mgr, game_id, spectator_delay_actions=delay)
    audiences = list(range(len(ps))) + [SPECTATOR]
    principals = {a: (ps[a] if a != SPECTATOR else Principal("spectator", match_id)) for a in audiences}
    received = {a: [] for a in audiences}     # watch events
    answers = {a: [] for a in audiences}      # (seq, envelope view) from get_view / submit / stale
    messages = {a: [] for a in audiences}     # (seq, error message)

    async def watcher(aud):
        last, cut_rng = -1, random.Random(f"{seed}-{aud}")
        while True:
            events = await collect(mgr.watch(match_id, principals[aud], last),
                                   until=lambda e: e.kind == "match_ended"
                                   or (e.kind == "action" and cut_rng.random() < 0.03))
            received[aud].extend(events)
            if not events or events[-1].kind == "match_ended":
                return
            seqs = [e.seq for e in events if e.kind in ("action", "snapshot")]
            if seqs:
                last = max(seqs)

    tasks = [asyncio.ensure_future(watcher(a)) for a in audiences]
    await asyncio.sleep(0)
    while (summary := await mgr.get_match(match_id)).status == "active":
        for aud in audiences:
            env = await mgr.get_view(match_id, principals[aud])
            answers[aud].append((env.seq, env))
        # a delayed spectator sees the match ``delay`` actions late (sessions/delay.py)
        assert answers[SPECTATOR][-1][0] == max(0, summary.seq - delay)
        seat = next(s for s in range(len(ps)) if answers[s][-1][1].view["to_act"] == s)
        env = answers[seat][-1][1]
        p = ps[seat]
        if env.seq and rng.random() < 0.05:
            try:
                await mgr.submit_action(match_id, p, env.view["legal"][0], env.seq - 1)
            except StaleSequence as exc:
                answers[seat].append((exc.current.seq, exc.current))
        if rng.random() < 0.05:
            other = (seat + 1) % len(ps)
            try:  # out of turn, with an action string naming one of the sender's own cards
                own = env.view["hand"]
                await mgr.submit_action(match_id, ps[other], f"play:{own[0]}" if own else "pass", None)
            except RulesError as exc:
                messages[other].append((env.seq, exc.message))
            try:  # illegal: a card the sender holds but may not play, or nonsense
                await mgr.submit_action(match_id, p, "play:X9", None)
            except RulesError as exc:
                messages[seat].append((env.seq, exc.message))
        result = await mgr.submit_action(match_id, p, rng.choice(env.view["legal"]), env.seq,
                                         f"{seat}-{env.seq}")
        answers[seat].append((result.seq, result.view))
        await asyncio.sleep(0)
    await asyncio.gather(*tasks)
    return match_id, received, answers, messages


@pytest.mark.parametrize("game_id", GAMES)
@pytest.mark.parametrize("seed,delay", [(1, 0), (2, 0), (3, 6)])
def test_no_audience_ever_receives_a_hidden_card(game_id, seed, delay):
    """``delay``: spectators kept that many actions behind (their events and views are then
    checked against the moment they show)."""
    async def go():
        with capture_logs() as logs:
            async with manager(config(snapshot_threshold=15)) as mgr:
                match_id, received, answers, messages = await play_and_watch(mgr, game_id, seed, delay)
                m = mgr._matches[match_id]
                truth = {}
                state, _ = m.fold(0)
                audiences = list(received)

                def record(seq, st):
                    truth[seq] = {a: ((st.view(a) if a != SPECTATOR else st.public_view()),
                                      secret_set(st.secret_cards(a if a != SPECTATOR else None)))
                                  for a in audiences}
                record(0, state)
                for rec, st in m.states(0, m.seq):
                    record(rec.seq, st)
                return received, answers, messages, truth, logs

    received, answers, messages, truth, logs = run(go(), timeout=600)
    checked = 0
    for aud, events in received.items():
        assert events[-1].kind == "match_ended"
        for e in events:
            if e.kind == "heartbeat":
                continue
            expected_view, secret = truth[e.seq][aud]
            assert e.view.view == expected_view, f"{aud} seq {e.seq}: view is not the rules' view"
            data = as_data(e)
            data.pop("action")  # actions are public the moment they are made (NOTATION 2, GJ-11.1)
            leaked = current_deal_cards_in(data) & secret
            assert not leaked, f"{aud} received hidden {mask_codes(sum(1 << c for c in leaked))} at seq {e.seq} ({e.kind})"
            checked += 1
    for aud, items in answers.items():
        for seq, env in items:
            expected_view, secret = truth[seq][aud]
            assert env.view == expected_view
            assert not current_deal_cards_in(as_data(env)) & secret
            checked += 1
    for aud, items in messages.items():
        for seq, text in items:
            assert not cards_in(text) & truth[seq][aud][1], text
    assert checked > 100
    # logs: a line with a seq names only cards public at that seq; other lines name none
    for entry in logs:
        found = cards_in({k: v for k, v in entry.items() if k not in ("match_id", "action")})
        if "seq" in entry and entry["seq"] in truth:
            assert not found & truth[entry["seq"]][SPECTATOR][1], entry
        else:
            assert not found, entry
