"""Fair dealing (commit-reveal, docs/api.md "Fair dealing"): every deck the server records has a
fresh secret salt; summaries carry the commitment of every deal dealt so far; the decks and
salts are revealed (reveal_deals) only once the match is over, to whoever may view it; the
salts are stored, so a restart changes no commitment; explicit (admin) decks and a deck dealt
on resume are salted too."""

from __future__ import annotations

import hashlib
import random
import re

import pytest

from engine_service.observability.metrics import Metrics
from engine_service.rules.registry import get_game
from engine_service.sessions.api import (CreateMatchRequest, MatchNotOver, PermissionDenied,
                                         Principal)
from engine_service.sessions.chance import random_deck
from engine_service.sessions.manager import MatchManager
from engine_service.store import MatchRecord, MemoryStore, SeatRecord, SqliteStore
from tests.crash import crash

from .helpers import config, manager, open_match, play_random, run

ADMIN = Principal("admin")
HEX64 = re.compile(r"[0-9a-f]{64}")
HEX32 = re.compile(r"[0-9a-f]{32}")


def commitment(salt: str, cards) -> str:
    """docs/api.md's formula, written out independently of the engine."""
    return hashlib.sha256(f"{salt}:{','.join(cards)}".encode()).hexdigest()


def spectator(match_id: str) -> Principal:
    return Principal("spectator", match_id)


def check_reveals(reveals, commitments) -> None:
    assert [r.deal for r in reveals] == list(range(len(commitments)))
    assert [r.commitment for r in reveals] == list(commitments)
    for r in reveals:
        assert HEX32.fullmatch(r.salt) and HEX64.fullmatch(r.commitment)
        assert commitment(r.salt, r.cards) == r.commitment
    assert len({r.salt for r in reveals}) == len(reveals)  # a fresh salt per deck


def test_commitments_grow_deal_by_deal_and_are_revealed_only_after_the_end():
    async def go():
        async with manager() as mgr:
            match_id, ps = await open_match(mgr, "klaberjass")
            seen = [tuple((await mgr.get_match(match_id)).deal_commitments)]
            assert len(seen[0]) == 1 and HEX64.fullmatch(seen[0][0])
            rng = random.Random(3)
            while (await mgr.get_match(match_id)).status == "active":
                for who in (*ps, spectator(match_id), ADMIN):
                    with pytest.raises(MatchNotOver) as refused:
                        await mgr.reveal_deals(match_id, who)
                    assert refused.value.code == "FAILED_PRECONDITION"
                    assert refused.value.reason == "MATCH_NOT_OVER"
                await play_random(mgr, match_id, ps, rng, max_actions=7)
                seen.append(tuple((await mgr.get_match(match_id)).deal_commitments))
            reveals = {i: await mgr.reveal_deals(match_id, who)
                       for i, who in enumerate((*ps, spectator(match_id), ADMIN))}
            data = await mgr.export_transcript(match_id)
            return seen, reveals, data

    seen, reveals, data = run(go())
    for before, after in zip(seen, seen[1:]):
        assert after[:len(before)] == before  # a published commitment never changes
    final = seen[-1]
    assert len(final) == len(data["deals"]) >= 3
    assert len(set(len(s) for s in seen)) >= 3  # they appeared one deal at a time
    assert all(r == reveals[0] for r in reveals.values())  # the same for every audience
    check_reveals(reveals[0], final)
    assert [list(r.cards) for r in reveals[0]] == [d["deck"] for d in data["deals"]]


def test_only_who_may_view_the_match_gets_the_reveal():
    async def go():
        async with manager() as mgr:
            match_id, ps = await open_match(mgr, "klaberjass", spectators_allowed=False)
            await play_random(mgr, match_id, ps, random.Random(1), max_actions=5)
            await mgr.terminate_match(match_id, "test")
            with pytest.raises(PermissionDenied) as refused:
                await mgr.reveal_deals(match_id, spectator(match_id))
            other, other_ps = await open_match(mgr, "klaberjass")
            with pytest.raises(PermissionDenied) as wrong:
                await mgr.reveal_deals(match_id, other_ps[0])
            summary = await mgr.get_match(match_id)
            return (refused.value.reason, wrong.value.reason, summary,
                    await mgr.reveal_deals(match_id, ps[1]), await mgr.reveal_deals(match_id, ADMIN))

    refused, wrong, summary, by_seat, by_admin = run(go())
    assert (refused, wrong) == ("SPECTATORS_NOT_ALLOWED", "WRONG_MATCH")
    assert summary.status == "terminated" and by_seat == by_admin
    check_reveals(by_seat, summary.deal_commitments)


def test_explicit_decks_are_salted_and_committed_when_dealt():
    game = get_game("klaberjass")
    decks = [list(random_deck(game)) for _ in range(3)]

    async def go():
        async with manager() as mgr:
            match_id, ps = await open_match(mgr, "klaberjass", decks=decks, first_dealer=0)
            first = (await mgr.get_match(match_id)).deal_commitments
            await mgr.terminate_match(match_id, "test")
            return first, await mgr.reveal_deals(match_id, ps[0])

    first, reveals = run(go())
    assert len(first) == 1  # the decks given for later deals are not announced before they are dealt
    check_reveals(reveals, first)
    assert list(reveals[0].cards) == decks[0]


def test_a_restart_keeps_every_salt_and_commitment(tmp_path):
    path = tmp_path / "matches.sqlite3"

    def sqlite_manager() -> MatchManager:
        return MatchManager(config(db_path=str(path)), store=SqliteStore(path), metrics=Metrics(),
                            create_bot_host=False)

    async def first_life():
        mgr = sqlite_manager()
        await mgr.start()
        match_id, ps = await open_match(mgr, "klaberjass")
        rng = random.Random(8)
        while len((await mgr.get_match(match_id)).deal_commitments) < 3:  # 500 points: 6+ deals
            assert await play_random(mgr, match_id, ps, rng, max_actions=1) == 1
        before = (await mgr.get_match(match_id)).deal_commitments
        crash(mgr._store)  # no close(): the process "crashes" here
        return match_id, ps, before

    async def second_life(match_id, ps, before):
        mgr = sqlite_manager()
        await mgr.start()
        try:
            after = (await mgr.get_match(match_id)).deal_commitments
            await play_random(mgr, match_id, ps, random.Random(9))
            final = (await mgr.get_match(match_id)).deal_commitments
            return after, final, await mgr.reveal_deals(match_id, ps[0])
        finally:
            await mgr.close()

    match_id, ps, before = run(first_life())
    after, final, reveals = run(second_life(match_id, ps, before))
    assert len(before) == 3 and tuple(after) == tuple(before)
    assert tuple(final[:3]) == tuple(before)
    check_reveals(reveals, final)


def test_a_deck_dealt_on_resume_is_salted():
    """A deal that was due when the process stopped, its deck never written, is dealt when the
    match is loaded: with a salt of its own, stored, and a commitment."""
    store = MemoryStore()

    async def go():
        await store.open()
        record = MatchRecord(match_id="resumed", game="klaberjass", options={}, first_dealer=0,
                             seats=(SeatRecord(0), SeatRecord(1)), status="waiting",
                             created_at=1.0)
        await store.create_match(record, [])  # deal 0 due, no deck yet
        async with manager(store=store) as mgr:
            summary = await mgr.get_match("resumed")
            await mgr.terminate_match("resumed", "test")
            reveals = await mgr.reveal_deals("resumed", ADMIN)
            stored = await store.load_match("resumed")
            return summary, reveals, stored

    summary, reveals, stored = run(go())
    assert len(summary.deal_commitments) >= 1
    assert list(summary.deal_commitments) == [r.commitment for r in reveals]
    check_reveals(reveals, summary.deal_commitments)
    assert stored.decks[0].salt == reveals[0].salt != ""
