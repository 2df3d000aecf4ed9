"""Page tokens of the admin's ListMatches and the lobby's ListOpenMatches over a real channel
(docs/api.md, "Paging"): paging through every match gives the unpaged listing, each match
once, in order, whatever the page size and filters; matches created, filled or ended between
pages neither repeat nor hide another; a token that does not decode, or comes with other
filters, or from the other listing, is INVALID_ARGUMENT / BAD_PAGE_TOKEN; limit stays capped
(1000 and 100) with the rest on the next page."""

from __future__ import annotations

import base64
import json

import grpc

from engine_service.sessions.config import SessionConfig
from engine_service.store.base import MatchRecord, SeatRecord
from engine_service.transport.generated import admin_pb2, card_games_pb2 as pb, match_pb2

from .harness import ADMIN_TOKEN, bearer, expect_error, run
from .test_service import served

ADMIN = bearer(ADMIN_TOKEN)
WAITING, TERMINATED = match_pb2.MATCH_STATUS_WAITING, match_pb2.MATCH_STATUS_TERMINATED


def stored(match_id: str, created_at: float, game: str = "klaberjass", status: str = "terminated") -> MatchRecord:
    """A match as the store holds an old one the engine no longer keeps in memory."""
    return MatchRecord(match_id=match_id, game=game, options={}, first_dealer=0,
                       seats=(SeatRecord(seat=0), SeatRecord(seat=1)), created_at=created_at, status=status,
                       result={"outcome": "terminated"} if status == "terminated" else None,
                       ended_at=created_at + 1 if status == "terminated" else None)


async def list_all(srv, limit: int, **filters) -> tuple[list[str], list[int]]:
    """Every page of ListMatches: the ids in order and each page's size."""
    ids, sizes, token = [], [], ""
    while True:
        reply = await srv.admin.ListMatches(admin_pb2.ListMatchesRequest(limit=limit, page_token=token, **filters),
                                            metadata=ADMIN)
        ids += [m.match_id for m in reply.matches]
        sizes.append(len(reply.matches))
        if not reply.next_page_token:
            return ids, sizes
        token = reply.next_page_token


async def lobby_all(srv, limit: int, game: str = "") -> list[str]:
    ids, token = [], ""
    while True:
        reply = await srv.games.ListOpenMatches(pb.ListOpenMatchesRequest(game=game, limit=limit, page_token=token))
        ids += [m.match_id for m in reply.matches]
        if not reply.next_page_token:
            return ids
        token = reply.next_page_token


@run
async def test_list_matches_pages_through_every_match_once():
    async with served() as (mgr, srv):
        created = []
        for i in range(9):
            game = ("klaberjass", "georgian_joker", "jojotte")[i % 3]
            created.append((await srv.games.CreateMatch(pb.CreateMatchRequest(game=game))).match.match_id)
        for match_id in created[::4]:
            await srv.admin.TerminateMatch(admin_pb2.TerminateMatchRequest(match_id=match_id, reason="t"),
                                           metadata=ADMIN)
        # old matches of the database only, three of them created at the same instant: the
        # id orders them, and pages of 1 and 2 cut between them
        for match_id, at in (("old-a", 10.0), ("old-b", 10.0), ("old-c", 10.0), ("old-d", 5.0)):
            await mgr._store.create_match(stored(match_id, at))  # noqa: SLF001
        unpaged = [m.match_id for m in (await srv.admin.ListMatches(
            admin_pb2.ListMatchesRequest(limit=1000), metadata=ADMIN)).matches]
        paged = {n: await list_all(srv, n) for n in (1, 2, 5, 13, 100)}
        filters = [dict(status=WAITING), dict(status=TERMINATED), dict(game="jojotte"),
                   dict(status=TERMINATED, game="klaberjass")]
        filtered = []
        for f in filters:
            whole = [m.match_id for m in (await srv.admin.ListMatches(
                admin_pb2.ListMatchesRequest(limit=1000, **f), metadata=ADMIN)).matches]
            filtered.append((whole, (await list_all(srv, 2, **f))[0]))

        # between pages: a match created (newer than the first page) is on no later page,
        # and a waiting match of a later page that ends is dropped from the WAITING listing
        # without hiding another
        first = await srv.admin.ListMatches(admin_pb2.ListMatchesRequest(limit=2, status=WAITING), metadata=ADMIN)
        waiting_before = [m.match_id for m in first.matches]
        await srv.games.CreateMatch(pb.CreateMatchRequest(game="klaberjass"))
        whole_waiting = filtered[0][0]
        ended = whole_waiting[3]
        await srv.admin.TerminateMatch(admin_pb2.TerminateMatchRequest(match_id=ended, reason="t"), metadata=ADMIN)
        token, after = first.next_page_token, []
        while token:
            reply = await srv.admin.ListMatches(admin_pb2.ListMatchesRequest(limit=2, status=WAITING,
                                                                             page_token=token), metadata=ADMIN)
            after += [m.match_id for m in reply.matches]
            token = reply.next_page_token

    assert len(unpaged) == 13 == len(set(unpaged))
    assert unpaged[-4:] == ["old-c", "old-b", "old-a", "old-d"]  # newest first; ties by id, descending
    assert unpaged[:9] == created[::-1]
    for n, (ids, sizes) in paged.items():
        assert ids == unpaged, n
        assert all(size == n for size in sizes[:-1]) and sizes[-1] <= n, (n, sizes)
    assert paged[13][1] == [13]  # a page of exactly the rest: no empty page after it
    for (whole, by_pages), f in zip(filtered, filters):
        assert whole and by_pages == whole, f
    assert waiting_before == whole_waiting[:2]
    assert after == [m for m in whole_waiting[2:] if m != ended]


@run
async def test_the_lobby_pages_oldest_first():
    async with served() as (mgr, srv):
        ids = []
        for i in range(9):
            game = ("klaberjass", "georgian_joker")[i % 2]
            ids.append((await srv.games.CreateMatch(pb.CreateMatchRequest(game=game, listed=True))).match.match_id)
        await srv.games.CreateMatch(pb.CreateMatchRequest(game="klaberjass"))  # unlisted: never shown
        same = mgr._lobby[ids[3]][1].created_at  # noqa: SLF001
        for match_id in ids[3:6]:  # created at the same instant: the id orders them
            _, m = mgr._lobby[match_id]  # noqa: SLF001
            m.created_at = same
            mgr._lobby[match_id] = ((same, match_id), m)  # noqa: SLF001 (its place, as registered)
        expected = ids[:3] + sorted(ids[3:6]) + ids[6:]
        unpaged = [m.match_id for m in (await srv.games.ListOpenMatches(pb.ListOpenMatchesRequest(limit=100))).matches]
        paged = {n: await lobby_all(srv, n) for n in (1, 2, 4, 9)}
        klaberjass = await lobby_all(srv, 2, game="klaberjass")

        # between pages: a table created meanwhile comes at the end; one of a later page that
        # fills up (it starts) is gone, and no other is skipped
        first = await srv.games.ListOpenMatches(pb.ListOpenMatchesRequest(limit=3))
        newcomer = (await srv.games.CreateMatch(pb.CreateMatchRequest(game="klaberjass", listed=True))).match.match_id
        filled = expected[5]
        for seat in range(len(mgr._lobby[filled][1].seats)):  # noqa: SLF001
            await srv.games.JoinMatch(pb.JoinMatchRequest(match_id=filled, seat=seat))
        token, rest = first.next_page_token, []
        while token:
            reply = await srv.games.ListOpenMatches(pb.ListOpenMatchesRequest(limit=3, page_token=token))
            rest += [m.match_id for m in reply.matches]
            token = reply.next_page_token

    assert unpaged == expected
    assert paged == {1: expected, 2: expected, 4: expected, 9: expected}
    assert klaberjass == [m for m in expected if m in ids[::2]]
    assert [m.match_id for m in first.matches] == expected[:3]
    assert rest == [m for m in expected[3:] if m != filled] + [newcomer]


@run
async def test_a_bad_page_token_is_refused():
    """A token that does not decode, with other filters, or from the other listing:
    INVALID_ARGUMENT, reason BAD_PAGE_TOKEN, field page_token; nothing else leaks."""
    async with served() as (_, srv):
        for game in ("klaberjass", "jojotte", "klaberjass"):
            await srv.games.CreateMatch(pb.CreateMatchRequest(game=game, listed=True))
        admin_token = (await srv.admin.ListMatches(admin_pb2.ListMatchesRequest(limit=1, game="klaberjass"),
                                                   metadata=ADMIN)).next_page_token
        lobby_token = (await srv.games.ListOpenMatches(pb.ListOpenMatchesRequest(limit=1))).next_page_token
        assert admin_token and lobby_token
        body = json.loads(base64.urlsafe_b64decode(admin_token + "=" * (-len(admin_token) % 4)))
        forged = base64.urlsafe_b64encode(json.dumps(dict(body, c="soon")).encode()).decode()

        def admin_call(**fields):
            return expect_error(srv.admin.ListMatches(admin_pb2.ListMatchesRequest(**fields), metadata=ADMIN))

        def lobby_call(**fields):
            return expect_error(srv.games.ListOpenMatches(pb.ListOpenMatchesRequest(**fields)))

        errors = [await admin_call(page_token="not a token"), await admin_call(page_token="e30"),  # "{}"
                  await admin_call(page_token=forged), await admin_call(page_token="A" * 5000),
                  await admin_call(page_token=admin_token),  # the game filter dropped
                  await admin_call(page_token=admin_token, game="jojotte"),
                  await admin_call(page_token=admin_token, game="klaberjass", status=WAITING),
                  await admin_call(page_token=lobby_token),
                  await lobby_call(page_token="%%%"), await lobby_call(page_token=lobby_token, game="klaberjass"),
                  await lobby_call(page_token=admin_token)]
        still = await srv.admin.ListMatches(admin_pb2.ListMatchesRequest(limit=1, game="klaberjass",
                                                                          page_token=admin_token), metadata=ADMIN)
    assert [(e.code, e.reason, e.metadata) for e in errors] == [
        (grpc.StatusCode.INVALID_ARGUMENT, "BAD_PAGE_TOKEN", {"field": "page_token"})] * len(errors)
    assert "other filters" in errors[4].message
    assert len(still.matches) == 1 and not still.next_page_token  # the token works with its filters
    assert set(body) == {"l", "f", "c", "m"} and body["f"] == {"game": "klaberjass", "status": ""}


@run
async def test_limit_is_capped_and_the_rest_is_on_the_next_page():
    """ListMatches gives at most 1000 a page, ListOpenMatches at most 100, whatever the limit
    asked; the next page has the rest."""
    async with served(SessionConfig(db_path="memory:", bot_pace_s=0.0)) as (mgr, srv):
        for i in range(1001):
            await mgr._store.create_match(stored(f"s{i:04d}", 1000.0 + i))  # noqa: SLF001
        for _ in range(101):
            await srv.games.CreateMatch(pb.CreateMatchRequest(game="klaberjass", listed=True))
        admin_first = await srv.admin.ListMatches(admin_pb2.ListMatchesRequest(limit=5000, status=TERMINATED),
                                                  metadata=ADMIN)
        admin_next = await srv.admin.ListMatches(admin_pb2.ListMatchesRequest(
            limit=5000, status=TERMINATED, page_token=admin_first.next_page_token), metadata=ADMIN)
        lobby_first = await srv.games.ListOpenMatches(pb.ListOpenMatchesRequest(limit=500))
        lobby_next = await srv.games.ListOpenMatches(pb.ListOpenMatchesRequest(
            limit=500, page_token=lobby_first.next_page_token))
        default = await srv.games.ListOpenMatches(pb.ListOpenMatchesRequest())
    assert len(admin_first.matches) == 1000 and admin_first.next_page_token
    assert [m.match_id for m in admin_next.matches] == ["s0000"] and not admin_next.next_page_token
    assert len(lobby_first.matches) == 100 and lobby_first.next_page_token
    assert len(lobby_next.matches) == 1 and not lobby_next.next_page_token
    assert len(default.matches) == 50 and default.next_page_token
