"""Fair dealing (commit-reveal, docs/api.md "Fair dealing"): every deck the server records has a
fresh secret salt and is committed card by card; summaries carry the commitment of every deal
dealt so far; once the match is over (and only then, to whoever may view it) reveal_deals opens
each commitment for the cards the table saw and for no other (KL-2.10, JJ-2.8, JJK-9.7); the
salts are stored, so a restart changes no commitment; explicit (admin) decks and a deck dealt
on resume are salted too; decks of older schemas keep their commitments and reveal no more."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import random
import re
import subprocess
import sys

import pytest

from clients.cardgames_client import verify_deal
from engine_service.observability.metrics import Metrics
from engine_service.rules.cards import card_code
from engine_service.rules.registry import get_game
from engine_service.sessions.api import (CreateMatchRequest, MatchNotOver, PermissionDenied,
                                         Principal)
from engine_service.sessions.chance import draw_first_dealer, random_deck
from engine_service.sessions.manager import MatchManager
from engine_service.store import MatchRecord, MemoryStore, SeatRecord, SqliteStore
from engine_service.sessions.fairness import deck_commitment, shown_cards
from engine_service.store.base import SCHEME_PER_CARD, SCHEME_WHOLE_DECK, ActionRecord, DeckRecord
from tests.crash import crash
from tests.shared_paths import ROOT

from .helpers import ADMIN, GAMES, Stream, config, manager, open_match, play_random, run

HEX64 = re.compile(r"[0-9a-f]{64}")
HEX32 = re.compile(r"[0-9a-f]{32}")


def commitment(deck_salt: str, cards) -> str:
    """docs/api.md's formula, written out independently of the engine: per card an HMAC-derived
    salt and a hash, then the hash of the hashes."""
    hashes = []
    for i, card in enumerate(cards):
        salt = hmac.new(bytes.fromhex(deck_salt), str(i).encode(), "sha256").hexdigest()[:32]
        hashes.append(hashlib.sha256(f"{salt}:{card}".encode()).hexdigest())
    return hashlib.sha256(",".join(hashes).encode()).hexdigest()


def opened(reveal) -> str:
    """The commitment a reveal opens to (shown cards hashed with their salts, hidden hashes
    as given), computed here rather than by the client library."""
    hashes = [hashlib.sha256(f"{salt}:{card}".encode()).hexdigest() if card else digest
              for card, salt, digest in zip(reveal.cards, reveal.card_salts, reveal.card_hashes)]
    return hashlib.sha256(",".join(hashes).encode()).hexdigest()


def spectator(match_id: str) -> Principal:
    return Principal("spectator", match_id)


def check_reveals(reveals, commitments) -> None:
    assert [r.deal for r in reveals] == list(range(len(commitments)))
    assert [r.commitment for r in reveals] == list(commitments)
    for r in reveals:
        assert HEX64.fullmatch(r.commitment)
        assert len(r.cards) == len(r.card_salts) == len(r.card_hashes)
        for card, salt, digest in zip(r.cards, r.card_salts, r.card_hashes):
            assert (HEX32.fullmatch(salt) and not digest) if card else (not salt and HEX64.fullmatch(digest))
        assert opened(r) == r.commitment and verify_deal(r)
    salts = [s for r in reveals for s in r.card_salts if s]
    assert len(set(salts)) == len(salts)  # a salt of its own per card and per deck


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
    for r, deal in zip(reveals[0], data["deals"]):  # each shown card at its place in the deck
        assert [c for c in r.cards if c] and all(c in ("", d) for c, d in zip(r.cards, deal["deck"]))


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


@pytest.mark.parametrize("game_id", GAMES)
def test_every_deck_and_first_dealer_draw_is_a_fresh_shuffle(game_id):
    """sessions/chance.py (GJ-3.1, JJK-3.1, KL-2.3, JJ-2.3): every deck is a fresh random
    permutation of the game's whole pack, never the pack's order nor a deck dealt before, and
    the first-dealer draw (KL-2.1, JJ-2.1, GJ-2.2, JJK-A9) is made on such a shuffle: over 200
    draws every seat deals first (an unshuffled pack always names the same seat)."""
    game = get_game(game_id)
    pack = sorted(card_code(c) for c in game.pack)
    decks = [random_deck(game) for _ in range(30)]
    assert all(sorted(deck) == pack for deck in decks)
    assert len(set(decks)) == 30
    options = game.options()
    assert {draw_first_dealer(game, options) for _ in range(200)} == set(range(game.num_seats))


def test_decks_are_not_reproduced_by_another_process():
    """chance.py: nothing is seeded (servers.md section 4, item 1: a seed revealed future
    shuffles); two engine processes deal different decks, where a generator seeded alike in
    each would repeat the first process's decks in the next."""
    code = ("from engine_service.rules.registry import get_game\n"
            "from engine_service.sessions.chance import random_deck\n"
            "print(','.join(random_deck(get_game('georgian_joker'))))")
    runs = [subprocess.Popen([sys.executable, "-c", code], cwd=ROOT, stdout=subprocess.PIPE, text=True)
            for _ in range(2)]  # side by side: the test waits for one start-up, not two
    decks = {proc.communicate(timeout=120)[0] for proc in runs}
    assert [proc.returncode for proc in runs] == [0, 0]
    assert len(decks) == 2 and all(d.count(",") == 35 for d in decks)


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
    assert all(c in ("", d) for c, d in zip(reveals[0].cards, decks[0]))


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
                             seats=(SeatRecord(0), SeatRecord(1)), status="active",
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
    assert stored.decks[0].salt and commitment(stored.decks[0].salt, stored.decks[0].cards) == reveals[0].commitment


def card_codes(value, pack: frozenset[str]) -> set[str]:
    """Every card code in a JSON-like value, and the four cards of every quartet a Jo-Jotte
    meld statement names by its rank ("quartet T", a scoring line's "quartets": JJ-5.9)."""
    if isinstance(value, str):
        if value.startswith("quartet ") and value != "quartet none":
            return {value[8:] + suit for suit in "SHDC"} & pack
        return {value} & pack
    if isinstance(value, dict) and "quartets" in value:
        quartets = {r + suit for r in value["quartets"] for suit in "SHDC"} & pack
        return quartets | card_codes({k: v for k, v in value.items() if k != "quartets"}, pack)
    if isinstance(value, dict):
        return set().union(*(card_codes(v, pack) for v in value.values()))
    if isinstance(value, (list, tuple)):
        return set().union(*(card_codes(v, pack) for v in value))
    return set()


@pytest.mark.parametrize("game_id", GAMES)
@pytest.mark.parametrize("seed", [1, 2])
def test_a_reveal_opens_only_what_the_spectators_saw(game_id, seed):
    """No leak through the reveal (KL-2.10, JJ-2.8, JJK-9.7, GJ-11.3): of a match ended at a
    random point (terminated, or resigned in a two-player game), every revealed card is a card
    the spectators' stream showed in that deal (in a view of it, or named by one of its
    actions), and every card an action of the deal named is revealed."""
    game = get_game(game_id)
    pack = frozenset(card_code(c) for c in game.pack)

    async def go():
        async with manager() as mgr:
            match_id, ps = await open_match(mgr, game_id)
            watcher = Stream(mgr, match_id, spectator(match_id))
            rng = random.Random(seed)
            await play_random(mgr, match_id, ps, rng, max_actions=rng.randrange(40, 160))
            if (await mgr.get_match(match_id)).status == "active":
                if len(ps) == 2 and seed == 1:
                    await mgr.leave_match(match_id, ps[rng.randrange(2)], resign=True)
                else:
                    await mgr.terminate_match(match_id, "test")
            final = await mgr.get_match(match_id)
            while not watcher.events or watcher.events[-1].kind != "match_ended":
                await asyncio.sleep(0.01)
            await watcher.close()
            return final, watcher.events, await mgr.reveal_deals(match_id, ps[0])

    final, events, reveals = run(go())
    check_reveals(reveals, final.deal_commitments)
    seen: dict[int, set[str]] = {}
    named: dict[int, set[str]] = {}
    deal = 0
    for e in events:
        if e.kind == "action":  # the action belongs to the deal of the view before it
            named.setdefault(deal, set()).update(t for t in e.action.split(":") if t in pack)
            if e.action.startswith("play:") and e.action.endswith(":jo"):
                # JJ-7.2: "jo" on the trump king says its player holds the trump queen
                seen.setdefault(deal, set()).add("Q" + e.action.split(":")[1][1])
        if e.view is not None:
            deal = int(e.view.view.get("deal_number") or 0)
            view = {k: v for k, v in e.view.view.items() if k != "deal_results"}
            seen.setdefault(deal, set()).update(card_codes(view, pack))
    for r in reveals:
        shown = {c for c in r.cards if c}
        unseen = shown - seen.get(r.deal, set()) - named.get(r.deal, set())
        assert not unseen, f"deal {r.deal} reveals unseen cards {sorted(unseen)}"
        assert named.get(r.deal, set()) <= shown, f"deal {r.deal} hides a card its actions named"
    if game_id in ("klaberjass", "jojotte"):  # KL-2.10, JJ-2.8: D[19..30] are never revealed
        assert all(not any(r.cards[19:31]) for r in reveals)


def test_a_resigned_japanese_joker_deal_reveals_no_hidden_card():
    """JJK-9.7: "When a match ends early (JJK-10), unplayed hidden cards (hands, down cards) are
    not revealed" (JJK-A13: hidden cards stay hidden); a deal played to its end has shown every
    card."""
    async def go():
        async with manager() as mgr:
            match_id, ps = await open_match(mgr, "japanese_joker")
            rng = random.Random(4)
            while len((await mgr.get_match(match_id)).deal_commitments) < 2:
                assert await play_random(mgr, match_id, ps, rng, max_actions=1) == 1
            await play_random(mgr, match_id, ps, rng, max_actions=5)
            m = mgr._matches[match_id]
            hidden = set(m.state.hand_codes(m.state.secret_cards(None)))
            await mgr.leave_match(match_id, ps[0], resign=True)
            return hidden, await mgr.reveal_deals(match_id, ps[1])

    hidden, reveals = run(go())
    assert len(reveals) == 2 and all(reveals[0].cards), "the finished deal showed all 36 cards"
    unfinished = reveals[1]
    assert hidden and not hidden & set(unfinished.cards)
    assert sum(1 for c in unfinished.cards if not c) == len(hidden)
    assert verify_deal(unfinished)


def test_decks_of_older_schemas_keep_their_commitments_and_reveal_only_shown_cards():
    """A deck committed as a whole (schema 3) keeps its published commitment; one recorded
    before commitments has none. Their reveals carry the shown cards, no salt, no proof."""
    game = get_game("klaberjass")
    decks = [list(random_deck(game)) for _ in range(2)]
    whole_salt = "00112233445566778899aabbccddeeff"
    store = MemoryStore()

    async def go():
        await store.open()
        record = MatchRecord(match_id="old", game="klaberjass", options={}, first_dealer=0,
                             seats=(SeatRecord(0, player_name="a", token_hash="x" * 64),
                                    SeatRecord(1, player_name="b", token_hash="y" * 64)),
                             status="active", created_at=1.0)
        await store.create_match(record, [DeckRecord(0, tuple(decks[0]), whole_salt, SCHEME_WHOLE_DECK),
                                          DeckRecord(1, tuple(decks[1]))])
        for seq, (seat, action) in enumerate([(1, "pass"), (0, "pass"), (1, "pass"), (0, "pass")], 1):
            await store.append_action("old", ActionRecord(seq, seat, action))  # deal 0 thrown in
        async with manager(store=store) as mgr:
            summary = await mgr.terminate_match("old", "test")
            return summary, await mgr.reveal_deals("old", ADMIN)

    summary, reveals = run(go())
    whole = hashlib.sha256(f"{whole_salt}:{','.join(decks[0])}".encode()).hexdigest()
    assert list(summary.deal_commitments) == [whole, ""]
    assert [r.commitment for r in reveals] == [whole, ""]
    for r, deck in zip(reveals, decks):
        # docs/api.md, "Fair dealing": three lists with one entry per deck position, here too
        assert len(r.cards) == len(r.card_salts) == len(r.card_hashes) == len(deck) == 32
        assert not any(r.card_salts) and not any(r.card_hashes) and not verify_deal(r)
        assert [c for c in r.cards if c] and all(c in ("", d) for c, d in zip(r.cards, deck))
        assert not any(r.cards[19:31])


@pytest.mark.parametrize("game_id", GAMES)
def test_a_table_is_dealt_when_its_last_seat_is_taken(game_id):
    """Nobody choosing a seat sees a card of the first deal (a turn-up, a trump indicator:
    with it on show a player could pick the seat it favours): a table with open seats has no
    deck until its last seat is taken; then the deck is dealt, stored and committed to before
    any view shows a card of it."""
    game = get_game(game_id)
    pack = frozenset(card_code(c) for c in game.pack)

    async def go():
        async with manager() as mgr:
            summary = await mgr.create_match(CreateMatchRequest(game=game_id))
            match_id = summary.match_id
            waiting = [await mgr.get_view(match_id, Principal("spectator", match_id))]
            tokens = []
            for seat in range(game.num_seats):
                if tokens:  # a seat's view before the start
                    waiting.append(await mgr.get_view(match_id, mgr.authenticate(match_id, tokens[-1])))
                before = await mgr.get_match(match_id)
                tokens.append((await mgr.join_match(match_id, seat, f"p{seat}")).token)
            started = await mgr.get_match(match_id)
            view = await mgr.get_view(match_id, mgr.authenticate(match_id, tokens[0]))
            stored = await mgr._store.load_match(match_id)
            return summary, before, waiting, started, view, stored

    summary, before, waiting, started, view, stored = run(go())
    assert summary.deal_commitments == () and before.deal_commitments == () and before.status == "waiting"
    assert all(not card_codes({k: v for k, v in w.view.items() if k != "game"}, pack) for w in waiting)
    assert all(w.deal_commitment == "" for w in waiting)
    assert started.status == "active" and len(started.deal_commitments) == 1
    assert [d.deal for d in stored.decks] == [0]
    assert view.deal_commitment == started.deal_commitments[0] == commitment(stored.decks[0].salt, stored.decks[0].cards)
    assert view.view["hand"]


#: Georgian Joker's nine-card schedule (GJ-2.4, GJ-3.5): its first deal has a trump chooser,
#: the forehand, named by the draw; with the admin's decks the deal is dealt at creation.
_NINES = {"deal_schedule": "nines"}


@pytest.mark.parametrize("game_id", GAMES)
def test_a_waiting_match_with_delayed_spectators_shows_them_nothing_of_its_first_deal(game_id):
    """A table created with the admin's decks is dealt at creation, and its waiting view shows
    nobody a card of that deal (nor the first-dealer draw): the same for spectators kept
    behind (``spectator_delay_actions``) as for live ones. Nothing is delayed before the
    first action, so their view is the live one; built from the delayed spectators' replay it
    showed the deal's public cards (Klaberjass's turn-up, KL-2.4; the trump indicator,
    GJ-11.1; Japanese Joker's up cards) to whoever chose a seat."""
    game = get_game(game_id)
    decks = [random_deck(game)]

    async def go():
        async with manager() as mgr:
            views = []
            for delay in (0, 3):
                summary = await mgr.create_match(CreateMatchRequest(
                    game=game_id, decks=decks, first_dealer=0, spectator_delay_actions=delay), admin=True)
                await mgr.join_match(summary.match_id, 0, "early bird")
                env = await mgr.get_view(summary.match_id, Principal("spectator", summary.match_id))
                views.append({k: v for k, v in env.view.items() if k != "match_id"})
            return views

    live, delayed = run(go())
    assert delayed == live and live["dealer"] is None


@pytest.mark.parametrize("game_id,options,dealt", [(g, {}, False) for g in GAMES] + [
    ("georgian_joker", _NINES, False), ("georgian_joker", _NINES, True), ("klaberjass", {}, True)])
def test_a_waiting_match_shows_nothing_of_the_first_dealer_draw(game_id, options, dealt):
    """The first-dealer draw (KL-2.1, JJ-2.1, GJ-2.2, JJK-A9) is made at creation, before the
    seats are taken: its outcome (the view's ``dealer``; the table's first dealer, elder,
    forehand, declarer...) showed in every waiting view, so whoever joined could choose the
    dealer's or the elder's seat and defeat the draw. A waiting view is now the same whatever
    the draw, to a seat and to a spectator; the start's view shows the drawn dealer.
    ``dealt``: the admin's decks, dealt by CreateMatch (the waiting view then shows the
    deal's public cards, never the draw). Georgian Joker's nine-card deals name the forehand
    again as the ``trump_chooser`` (GJ-3.5), which showed the draw to every joiner."""
    game = get_game(game_id)
    decks = [random_deck(game)] if dealt else []

    async def waiting_views(first_dealer):
        async with manager() as mgr:
            summary = await mgr.create_match(CreateMatchRequest(game=game_id, options=options, decks=decks,
                                                                first_dealer=first_dealer), admin=True)
            joined = await mgr.join_match(summary.match_id, 0, "early bird")
            seat = mgr.authenticate(summary.match_id, joined.token)
            views = [dict((await mgr.get_view(summary.match_id, p)).view)
                     for p in (seat, Principal("spectator", summary.match_id))]
            for seat_number in range(1, len(summary.seats)):
                await mgr.join_match(summary.match_id, seat_number, f"p{seat_number}")
            started = (await mgr.get_view(summary.match_id, seat)).view
        return [{key: value for key, value in view.items() if key != "match_id"} for view in views], started

    async def go():
        seen = [await waiting_views(first_dealer) for first_dealer in range(get_game(game_id).num_seats)]
        first = seen[0][0][0]
        for views, _ in seen:
            differ = [key for key, value in views[0]["table"].items() if value != first["table"].get(key)]
            assert views == seen[0][0], (game_id, options, differ)
        assert seen[0][0][0]["dealer"] is None
        for first_dealer, (_, started) in enumerate(seen):
            table = started["table"]
            drawn = table.get("first_dealer", table.get("first_declarer"))
            assert drawn == first_dealer, (game_id, table)
            if table.get("cards_per_player") == 9:  # GJ-3.5: the forehand, left of the dealer, chooses
                assert table["trump_chooser"] == (first_dealer + 1) % 4, table

    run(go())


@pytest.mark.parametrize("game_id", GAMES)
@pytest.mark.parametrize("ending", ["terminated", "expired"])
def test_a_match_that_ends_before_its_start_shows_no_card_of_its_first_deck(game_id, ending):
    """A match with the admin's decks is dealt by CreateMatch, before its seats are taken
    (docs/api.md, "Fair dealing"); its waiting views show nothing private (sessions.views.
    before_start). Ended before it started (the admin's TerminateMatch, or no players within
    ``waiting_timeout_s``), its views were the rules' own again: every joined seat read its
    hand of a deal nobody played, a hand of the admin's deck (which a duplicate tournament
    deals at other tables: GJ-11.3, KL-2.10, JJ-2.8, JJK-9.4), and the first-dealer draw. The
    view after such an end is the waiting view, over. Nor does the waiting view show that
    deal's public cards (the turn-up, the trump indicator: a table with open seats is dealt
    at its start so that nobody choosing a seat sees one), and RevealDeals opens no card of a
    deck nobody played (its commitment stands)."""
    game = get_game(game_id)
    pack = frozenset(card_code(c) for c in game.pack)

    async def go():
        async with manager() as mgr:
            summary = await mgr.create_match(CreateMatchRequest(game=game_id, decks=[random_deck(game)]),
                                             admin=True)
            match_id = summary.match_id
            seat = mgr.authenticate(match_id, (await mgr.join_match(match_id, 0, "early bird")).token)
            audiences = (seat, Principal("spectator", match_id))
            stream = Stream(mgr, match_id, seat)
            before = [(await mgr.get_view(match_id, p)).view for p in audiences]
            if ending == "terminated":
                await mgr.terminate_match(match_id, "no tournament today")
            else:
                m = mgr._matches[match_id]
                m.created_at -= mgr.config.waiting_timeout_s  # waited for players past the timeout
                await mgr._housekeeping.sweep_once()
            await asyncio.wait_for(stream.task, 30)
            after = [(await mgr.get_view(match_id, p)).view for p in audiences]
            ended = [e.view.view for e in stream.events if e.kind == "match_ended"]
            reveals = await mgr.reveal_deals(match_id, seat)
            return summary, before, after, ended, mgr._matches[match_id].status, reveals

    summary, before, after, ended, status, reveals = run(go())
    assert status == ("terminated" if ending == "terminated" else "finished")
    assert len(ended) == 1
    for view in before:
        assert card_codes(view, pack) == set(), (game_id, view)
    for view in after + ended:
        assert view["over"] and view["to_act"] is None and view["legal"] == [] and view["winners"] == []
        assert view["hand"] == [] and view["dealer"] is None
        assert card_codes(view, pack) == set(), (game_id, view)
    assert [r.commitment for r in reveals] == list(summary.deal_commitments)
    assert all(not any(r.cards) for r in reveals), reveals



def test_a_deck_of_an_unknown_scheme_has_no_commitment():
    """A deck recorded under a commitment scheme this server does not know (a newer server's,
    a corrupt row) is refused rather than committed to under scheme 2's formula: a commitment
    nobody could open as the deck was committed would read as a dishonest deal
    (docs/api.md, "Fair dealing")."""
    deck = tuple(random_deck(get_game("klaberjass")))
    salt = "00112233445566778899aabbccddeeff"
    assert deck_commitment(DeckRecord(0, deck, salt, SCHEME_PER_CARD)) == commitment(salt, deck)
    with pytest.raises(ValueError, match="unknown commitment scheme 3"):
        deck_commitment(DeckRecord(0, deck, salt, 3))



def test_a_log_without_a_deck_shows_no_card():
    """The cards shown are counted per deal dealt: a log with actions but no deck (a store
    that lost it) has no deal, so it shows nothing, and its actions are not replayed on a
    table that was never dealt."""
    game = get_game("klaberjass")
    assert shown_cards(game, game.options({}), 0, {}, [ActionRecord(1, 1, "pass")]) == {}


@pytest.mark.parametrize("game_id", GAMES)
def test_the_cards_shown_are_cards_of_the_deals_deck(game_id):
    """``fairness.shown_cards`` answers card codes, each of its deal's deck: the card an action
    names is one of its arguments (``play:KH:bella``), never its verb or an announcement, so
    what it gives the reveal holds nothing else."""
    from .test_fold_checkpoints import long_match

    record, decks, actions = long_match(game_id, 4)
    game = get_game(game_id)
    shown = shown_cards(game, game.options({}), 0, {d.deal: d for d in decks}, actions[:80])
    assert shown and all(cards <= set(decks[deal].cards) for deal, cards in shown.items()), shown


def test_a_card_on_show_at_any_moment_of_a_deal_is_shown():
    """A card is shown when a spectator could know it *at some moment* of the deal (docs/api.md,
    "Fair dealing"), not only as the deal ends: ``fairness.shown_cards`` keeps every card it
    saw face up, also one put out of sight again that no action names (a turn-up taken into a
    hand, were the rules to hide it). A stand-in game: its top card is face up until the
    first of two passes; the rules' own games hide no card they showed, so they cannot tell."""
    from engine_service.rules.cards import card_id, mask_of
    from engine_service.rules.game import CHANCE, TERMINAL

    class Table:
        deck: list[int] = []
        acted = 0

        def to_act(self) -> int:
            return CHANCE if not self.deck else 0 if self.acted < 2 else TERMINAL

        def deal(self, cards) -> None:
            self.deck = [card_id(c) for c in cards]

        def apply(self, action: str, seat: int) -> None:
            self.acted += 1

        def secret_cards(self, seat) -> int:
            return mask_of(self.deck) & ~((1 << self.deck[0]) if self.acted == 0 else 0)

    class StandIn:
        pack = get_game("klaberjass").pack

        def new_state(self, options, first_dealer):
            return Table()

    deck = DeckRecord(0, tuple(card_code(c) for c in StandIn.pack))
    passes = [ActionRecord(1, 0, "pass"), ActionRecord(2, 0, "pass")]
    assert shown_cards(StandIn(), {}, 0, {0: deck}, passes) == {0: frozenset({deck.cards[0]})}


@pytest.mark.parametrize("game_id,first_dealer", [(g, d) for g in GAMES for d in range(get_game(g).num_seats)])
def test_a_match_ended_before_its_first_action_reveals_the_cards_on_show(game_id, first_dealer):
    """The reveal opens every card the table saw (KL-2.10, JJ-2.8, JJK-9.7, GJ-11.3), those on
    show from the deal's start too (a turn-up, a trump indicator): a match terminated once
    its table is dealt, before any action, reveals exactly the cards its spectators' view
    showed, and they open the commitment. (The other tests end matches after actions, whose
    views still show those cards: a reveal that read the table only after actions would pass
    them and hide a turn-up here. Every first dealer, so that each seat is the first to act
    once: the table is read whoever is to act, seat 0 included.)"""
    game = get_game(game_id)
    pack = frozenset(card_code(c) for c in game.pack)

    async def go():
        async with manager() as mgr:
            match_id, ps = await open_match(mgr, game_id, first_dealer=first_dealer)
            view = (await mgr.get_view(match_id, spectator(match_id))).view
            await mgr.terminate_match(match_id, "test")
            final = await mgr.get_match(match_id)
            return view, final, await mgr.reveal_deals(match_id, ps[0])

    view, final, reveals = run(go())
    check_reveals(reveals, final.deal_commitments)
    assert len(reveals) == 1
    assert {c for c in reveals[0].cards if c} == card_codes(view, pack), (game_id, view)
    if game_id == "klaberjass":  # KL-2.5's turn-up is on show before the first bid
        assert card_codes(view, pack)


def test_a_live_match_refuses_to_open_its_decks_until_it_is_over():
    """LiveMatch.shown_cards and .reveals are the only ways to the decks' cards; they refuse
    while the match is played (a caller's forgotten check must not reveal a deck in play),
    and reveals also until ``shown`` is computed, then open every deal dealt."""
    from dataclasses import replace

    from engine_service.sessions.match import LiveMatch

    from .test_fold_checkpoints import long_match

    record, decks, actions = long_match("klaberjass", 11)
    live = LiveMatch(record, decks, actions[:40])
    live.shown = {}  # even with ``shown`` set
    for call in (live.shown_cards, live.reveals):
        with pytest.raises(RuntimeError, match="secret until it is over"):
            call()
    taken = tuple(replace(seat, token_hash=f"h{seat.seat}") for seat in record.seats)  # started
    over = LiveMatch(replace(record, status="terminated", seats=taken), decks, actions[:40])
    with pytest.raises(RuntimeError, match="secret until it is over"):
        over.reveals()  # shown not computed yet
    over.shown = over.shown_cards()
    assert over.shown and [r.deal for r in over.reveals()] == list(range(over.deals_dealt))


def test_a_reveal_replays_the_match_under_its_own_options():
    """The reveal replays the match under its table options: with ``jj_info_card`` "next"
    (JJ-2.7, JJ-A4) the information card turned up is D[19], so a match terminated once it is
    on show reveals D[19] and not the bottom card D[31], which the table never saw (JJ-2.8:
    the unused cards are never revealed)."""
    async def go():
        async with manager() as mgr:
            match_id, ps = await open_match(mgr, "jojotte", options={"jj_info_card": "next"})
            rng = random.Random(5)
            while not (view := (await mgr.get_view(match_id, spectator(match_id))).view)["table"]["info_card"]:
                assert await play_random(mgr, match_id, ps, rng, max_actions=1) == 1
            await mgr.terminate_match(match_id, "test")
            final = await mgr.get_match(match_id)
            return view, final, await mgr.reveal_deals(match_id, ps[0])

    view, final, reveals = run(go())
    check_reveals(reveals, final.deal_commitments)
    deal = reveals[-1]
    assert view["table"]["info_card"] == deal.cards[19] and not deal.cards[31]


def test_a_reveal_replays_the_match_once_and_off_the_event_loop(monkeypatch):
    """The cards a reveal opens come from a replay of the whole match (LiveMatch.shown_cards):
    it runs in a worker thread, so that a long match's replay does not stall every other
    match's calls on the event loop, and once per match (``shown`` keeps it: the match is
    over, the cards the table saw can no longer change), however often the reveal is asked."""
    import threading

    from engine_service.sessions.match import LiveMatch

    replays = []
    replay = LiveMatch.shown_cards

    def counted(self):
        replays.append(threading.current_thread() is threading.main_thread())
        return replay(self)

    monkeypatch.setattr(LiveMatch, "shown_cards", counted)

    async def go():
        async with manager() as mgr:
            match_id, ps = await open_match(mgr, "klaberjass")
            await play_random(mgr, match_id, ps, random.Random(2), max_actions=5)
            await mgr.terminate_match(match_id, "test")
            first = await mgr.reveal_deals(match_id, ps[0])
            return first, await mgr.reveal_deals(match_id, ADMIN), await mgr.get_match(match_id)

    first, again, summary = run(go())
    assert replays == [False]  # one replay, not on the event loop's (main) thread
    assert first == again
    check_reveals(first, summary.deal_commitments)
