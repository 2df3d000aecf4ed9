"""The lobby (MatchManager.list_open_matches): a match created ``listed`` is shown while it
waits for players with a seat free, oldest first, and leaves the lobby when it fills up,
starts, is abandoned or terminated; unlisted matches are never shown; the flag survives a
restart (it is part of the stored record)."""

from __future__ import annotations

import pytest

from engine_service.rules.errors import RulesError
from engine_service.sessions.api import CreateMatchRequest
from engine_service.store import MemoryStore, SeatRecord, SqliteStore

from .helpers import config, manager, run


def _ids(summaries) -> list[str]:
    return [s.match_id for s in summaries]


def test_listed_waiting_matches_with_a_free_seat_oldest_first():
    async def go():
        async with manager() as mgr:
            first = await mgr.create_match(CreateMatchRequest(game="klaberjass", listed=True, name="one"))
            hidden = await mgr.create_match(CreateMatchRequest(game="klaberjass"))
            second = await mgr.create_match(CreateMatchRequest(game="georgian_joker", listed=True))
            lobby = mgr.list_open_matches()
            only_gj = mgr.list_open_matches(game="georgian_joker")
            limited = mgr.list_open_matches(limit=1)
            return first, hidden, second, lobby, only_gj, limited

    first, hidden, second, lobby, only_gj, limited = run(go())
    assert _ids(lobby) == [first.match_id, second.match_id]  # created in that order
    assert hidden.match_id not in _ids(lobby) and not hidden.listed
    assert lobby[0].listed and lobby[0].name == "one" and lobby[0].status == "waiting"
    assert _ids(only_gj) == [second.match_id]
    assert _ids(limited) == [first.match_id]


def test_a_match_leaves_the_lobby_when_it_fills_up_or_ends():
    async def go():
        async with manager() as mgr:
            filled = await mgr.create_match(CreateMatchRequest(game="japanese_joker", listed=True))
            abandoned = await mgr.create_match(CreateMatchRequest(game="klaberjass", listed=True))
            ended = await mgr.create_match(CreateMatchRequest(game="georgian_joker", listed=True))
            await mgr.join_match(filled.match_id, 0, "ann")
            half = _ids(mgr.list_open_matches())  # one seat still free: still listed
            await mgr.join_match(filled.match_id, 1, "bob")  # full: the match starts
            await mgr.terminate_match(ended.match_id, "closed by the operator")
            return filled, abandoned, half, _ids(mgr.list_open_matches()), await mgr.get_match(filled.match_id)

    filled, abandoned, half, after, started = run(go())
    assert filled.match_id in half
    assert after == [abandoned.match_id]
    assert started.status == "active" and started.listed  # the flag stays; the lobby shows waiting tables only


def test_a_seat_left_before_the_start_is_free_again_in_the_lobby():
    async def waiting_leave():
        async with manager() as mgr:
            s = await mgr.create_match(CreateMatchRequest(game="georgian_joker", listed=True))
            tokens = [(await mgr.join_match(s.match_id, i, f"p{i}")).token for i in range(3)]
            full_but_one = _ids(mgr.list_open_matches())
            await mgr.leave_match(s.match_id, mgr.authenticate(s.match_id, tokens[0]), resign=False)
            summary = (mgr.list_open_matches())[0]
            return s.match_id, full_but_one, summary

    match_id, before, summary = run(waiting_leave())
    assert before == [match_id]
    assert summary.match_id == match_id and not summary.seats[0].taken


def test_a_seat_left_before_the_start_is_stored_free_and_open_and_joined_after_a_restart():
    """The seat a leave frees before the start is written back as it was created (an open seat,
    SeatRecord's defaults: kind "open", no holder), so a restarted engine shows it free in the
    lobby and lets a player take it: the freeing write leans on SeatRecord's default kind, and
    a default of "bot" made the freed seat a bot seat without a bot after the restart."""
    store = MemoryStore()

    async def go():
        async with manager(store=store) as mgr:
            s = await mgr.create_match(CreateMatchRequest(game="georgian_joker", listed=True))
            tokens = [(await mgr.join_match(s.match_id, i, f"p{i}")).token for i in range(3)]
            await mgr.leave_match(s.match_id, mgr.authenticate(s.match_id, tokens[0]), resign=False)
        async with manager(store=store) as mgr:
            stored = (await store.load_match(s.match_id)).record.seats[0]
            summary = mgr.list_open_matches()[0]
            joined = await mgr.join_match(s.match_id, 0, "q0")
            return stored, summary, joined, await mgr.get_match(s.match_id)

    stored, summary, joined, after = run(go())
    assert stored == SeatRecord(seat=0) and stored.kind == "open"
    assert (summary.seats[0].kind, summary.seats[0].taken) == ("open", False)
    assert joined.token and after.seats[0].taken and after.status == "waiting"


def test_an_unknown_game_is_refused():
    async def go():
        async with manager() as mgr:
            mgr.list_open_matches(game="poker")
    with pytest.raises(RulesError):
        run(go())


def test_the_listed_flag_survives_a_restart(tmp_path):
    path = tmp_path / "lobby.sqlite3"

    async def before():
        async with manager(config(db_path=str(path)), store=SqliteStore(path)) as mgr:
            listed = await mgr.create_match(CreateMatchRequest(game="klaberjass", listed=True))
            hidden = await mgr.create_match(CreateMatchRequest(game="klaberjass"))
            return listed.match_id, hidden.match_id

    async def after():
        async with manager(config(db_path=str(path)), store=SqliteStore(path)) as mgr:
            return _ids(mgr.list_open_matches())

    listed, hidden = run(before())
    assert run(after()) == [listed]


def test_nothing_private_is_shown_before_the_start_and_nobody_is_to_act():
    """While the match waits, a seat's view is the public one (plus its seat number): a player
    who joins a seat, looks, leaves and joins the next never sees a hand; no to_act, no legal
    action (SubmitAction would answer MATCH_WAITING). At the start the hand and the turn come."""
    from engine_service.sessions.api import Principal

    async def go():
        async with manager() as mgr:
            s = await mgr.create_match(CreateMatchRequest(game="klaberjass", listed=True))
            seen = []
            for seat in (0, 1):  # the cherry-picker: each seat in turn
                token = (await mgr.join_match(s.match_id, seat, "peeker")).token
                principal = mgr.authenticate(s.match_id, token)
                seen.append((await mgr.get_view(s.match_id, principal)).view)
                await mgr.leave_match(s.match_id, principal, resign=False)
            public = (await mgr.get_view(s.match_id, Principal("spectator", s.match_id))).view
            tokens = [(await mgr.join_match(s.match_id, seat, f"p{seat}")).token for seat in (0, 1)]
            started = (await mgr.get_view(s.match_id, mgr.authenticate(s.match_id, tokens[0]))).view
            hands = [mgr.state_of(s.match_id).view(seat)["hand"] for seat in (0, 1)]
            return seen, public, started, hands

    seen, public, started, hands = run(go())
    for seat, view in enumerate(seen):
        assert view["hand"] == [] and view["legal"] == [] and view["to_act"] is None
        assert view["seat"] == seat
        assert {**view, "seat": None} == public
        text = repr(view)
        assert not any(card in text for hand in hands for card in hand)
    assert started["hand"] == hands[0] and started["to_act"] is not None


@pytest.mark.parametrize("first_id", ["0" * 16, "9" * 16])
def test_a_table_whose_creation_is_written_last_comes_on_a_later_page(first_id, monkeypatch):
    """A creation's time is taken before its store write, and writes may return in any order
    (a PostgreSQL pool): a table created first and written last joined the lobby behind the
    cursor of a page read meanwhile, and paging on never listed it. It comes on a later page
    (docs/api.md, Paging: "it is the newest"); every table is listed once. It comes after
    the newest table whatever the ids (``first_id``: the table written last has the lowest
    or the highest id): placed at the newest table's time, not just after it, it came before
    that table when its id sorted first (the mutant of MatchManager._lobby_key without
    math.nextafter)."""
    import asyncio
    import itertools

    from engine_service.sessions import manager as manager_module

    ids = itertools.chain([first_id], (f"{'5' * 15}{i}" for i in range(10)))
    monkeypatch.setattr(manager_module, "new_match_id", lambda: next(ids))

    from engine_service.store.memory import MemoryStore

    class FirstWriteLast(MemoryStore):
        """The first match's create_match returns once ``release`` is set."""

        def __init__(self) -> None:
            super().__init__()
            self.release: asyncio.Event | None = None

        async def create_match(self, record, decks=()):
            if self.release is None:
                self.release = asyncio.Event()
                await self.release.wait()
            return await super().create_match(record, decks)

    async def go():
        store = FirstWriteLast()
        async with manager(store=store) as mgr:
            listed = CreateMatchRequest(game="klaberjass", listed=True)
            slow = asyncio.ensure_future(mgr.create_match(listed))
            await asyncio.sleep(0.01)  # its time is taken, its write waits
            later = [await mgr.create_match(listed) for _ in range(2)]
            first = mgr.open_matches_page(limit=1)
            store.release.set()
            written_last = await slow
            seen, token = _ids(first.matches), first.next_page_token
            while token:
                page = mgr.open_matches_page(limit=1, page_token=token)
                seen, token = seen + _ids(page.matches), page.next_page_token
            return written_last, later, seen, _ids(mgr.list_open_matches())

    written_last, later, seen, whole = run(go())
    assert written_last.created_at < later[0].created_at  # created first
    assert seen == [later[0].match_id, later[1].match_id, written_last.match_id] == whole


def test_both_listings_read_a_limit_of_zero_as_the_default_and_below_it_as_a_page_of_one():
    """docs/api.md: ``limit`` 0 (unset) is the default page size; the transport refuses a
    negative one (BAD_LIMIT), and a caller of the session layer that sends one anyway gets the
    smallest page, one match and a token to the rest, from the lobby and the admin's listing
    alike: never an empty page whose empty token would say nothing more is listed."""
    async def go():
        async with manager() as mgr:
            made = [await mgr.create_match(CreateMatchRequest(game="klaberjass", listed=True)) for _ in range(3)]
            pages = {}
            for limit in (0, -1, -100):
                lobby = mgr.open_matches_page(limit=limit)
                admin = await mgr.matches_page(limit=limit)
                pages[limit] = (_ids(lobby.matches), bool(lobby.next_page_token),
                                _ids(admin.matches), bool(admin.next_page_token))
            return [m.match_id for m in made], pages

    made, pages = run(go())
    lobby, lobby_more, newest_first, admin_more = pages[0]
    assert (lobby, lobby_more, sorted(newest_first), admin_more) == (made, False, sorted(made), False)  # defaults hold all
    for limit in (-1, -100):
        assert pages[limit] == (made[:1], True, newest_first[:1], True), limit


def test_the_lobbys_page_is_50_tables_by_default_and_100_at_most():
    """docs/api.md: ListOpenMatches's ``limit`` defaults to 50 (unset or 0, and a session-layer
    caller that gives none) and larger values are capped at 100; a page short of the tables
    left gets a token to the rest. The admin's ListMatches pages 100 by default (admin.proto:
    "0: the server's default, 100"; mutant: its default 50)."""
    async def go():
        async with manager() as mgr:
            made = [(await mgr.create_match(CreateMatchRequest(game="klaberjass", listed=True))).match_id
                    for _ in range(101)]
            pages = {"unset": mgr.open_matches_page(), "zero": mgr.open_matches_page(limit=0),
                     "first": mgr.open_matches_page(limit=50), "capped": mgr.open_matches_page(limit=101)}
            summary = {name: (_ids(page.matches), bool(page.next_page_token)) for name, page in pages.items()}
            admin = {name: await mgr.matches_page(**limit) for name, limit in (("unset", {}), ("zero", {"limit": 0}))}
            admin_summary = {name: (len(page.matches), bool(page.next_page_token)) for name, page in admin.items()}
            return made, summary, _ids(mgr.list_open_matches()), admin_summary, len(await mgr.list_matches())

    made, pages, listed, admin, admin_listed = run(go())
    assert pages["unset"] == pages["zero"] == pages["first"] == (made[:50], True)
    assert listed == made[:50]
    assert pages["capped"] == (made[:100], True)
    assert admin == {"unset": (100, True), "zero": (100, True)} and admin_listed == 100


def test_a_lobby_page_that_holds_every_table_left_has_no_token():
    """An empty ``next_page_token`` means there is no more (docs/api.md, "Paging"): a page of
    exactly the tables left says so, and does not send the client to an empty page."""
    async def go():
        async with manager() as mgr:
            made = [(await mgr.create_match(CreateMatchRequest(game="klaberjass", listed=True))).match_id
                    for _ in range(3)]
            whole = mgr.open_matches_page(limit=3)
            first = mgr.open_matches_page(limit=2)
            rest = mgr.open_matches_page(limit=1, page_token=first.next_page_token)
            return made, whole, first, rest

    made, whole, first, rest = run(go())
    assert (_ids(whole.matches), whole.next_page_token) == (made, "")
    assert _ids(first.matches) == made[:2] and first.next_page_token
    assert (_ids(rest.matches), rest.next_page_token) == (made[2:], "")


def test_the_admins_listing_refuses_an_unknown_status():
    """ListMatches filters by one of the stored statuses (store.STATUSES); another is
    INVALID_ARGUMENT / BAD_STATUS naming the allowed ones, not an empty page that says no
    match has it. (Mutant: the status check dropped.)"""
    from engine_service.sessions.api import BadRequest

    async def go():
        async with manager() as mgr:
            await mgr.create_match(CreateMatchRequest(game="klaberjass"))
            with pytest.raises(BadRequest) as refused:
                await mgr.matches_page(status="over")
            return refused.value, len((await mgr.matches_page(status="waiting")).matches)

    refused, waiting = run(go())
    assert refused.reason == "BAD_STATUS" and "waiting" in refused.message and waiting == 1
