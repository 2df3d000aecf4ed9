"""Views of the current state are built once per audience and shared (LiveMatch.envelope):
the SubmitAction answer and every watcher of an audience get the same envelope, which changes
with the sequence number, the status and the deadline, and is never shared across audiences."""

from __future__ import annotations

import asyncio
import copy
import random

import pytest

from engine_service.sessions.api import Principal
from engine_service.sessions.views import SPECTATOR, after_end, before_start, public_or_none, secret_codes, view_for

from .helpers import Stream, collect, config, manager, open_match, play_random, run, until


def test_one_envelope_per_audience_and_state():
    async def go():
        async with manager(config(default_turn_time_s=30.0)) as mgr:
            match_id, ps = await open_match(mgr, "klaberjass")
            m = mgr._matches[match_id]
            spectators = [Stream(mgr, match_id, Principal(kind="spectator", match_id=match_id))
                          for _ in range(3)]
            seats = [Stream(mgr, match_id, p) for p in ps]
            await asyncio.sleep(0)
            seat = m.state.to_act()
            before = m.envelope(seat)
            assert m.envelope(seat) is before and before.deadline is not None
            assert m.envelope(1 - seat) is not before and m.envelope(1 - seat).view != before.view
            legal = before.view["legal"]
            res = await mgr.submit_action(match_id, ps[seat], random.Random(1).choice(legal), before.seq)
            await until(lambda: all(s.events and s.events[-1].seq == res.seq for s in spectators + seats))
            # the answer and the submitter's stream carry the same envelope; so do all spectators
            assert seats[seat].events[-1].view is res.view
            assert len({id(s.events[-1].view) for s in spectators}) == 1
            assert len({id(s.events[-1]) for s in spectators}) == 1  # one event per audience
            assert spectators[0].events[-1].view.view == view_for(m.state, SPECTATOR)
            for s, stream in enumerate(seats):  # each seat its own view, redacted for it
                assert stream.events[-1].view.view == m.state.view(s)
                assert stream.events[-1].view.seat == s
            assert res.view.seq == before.seq + 1 and res.view is not before
            # a new deadline (the clock re-armed) is a new envelope, not a stale one
            current = m.envelope(SPECTATOR)
            m.deadline = (m.deadline or 0) + 5
            changed = m.envelope(SPECTATOR)
            assert changed is not current and changed.deadline == m.deadline
            # every audience's envelope of one state shares that state's encodings (what the
            # transport encoded of its views, by object: the common parts are encoded once)
            shared = m.memo().encodings
            assert all(m.envelope(a).encodings is shared for a in (SPECTATOR, 0, 1))
            # a view of a past state is built from that state, never from the cache
            old_state, _ = m.fold(0)
            assert m.envelope(SPECTATOR, old_state, 0).view == view_for(old_state, SPECTATOR)
            for stream in spectators + seats:
                await stream.close()

    run(go())


def test_a_match_ended_early_names_nobody_to_act_and_its_past_views_were_active():
    """After a resignation or a termination nobody may act (SubmitAction answers
    MATCH_NOT_ACTIVE), so no view names a seat to act or offers a legal action, although the
    rules' state still has a player to act, and every view says the match is over, with the
    session's winners (a frontend used to see over=false, winners=[]); a view replayed from before the end has the status
    the match had then (active), not today's; one built from the state at the last seq, as
    it ended."""

    async def go():
        async with manager() as mgr:
            out = {}
            for how in ("resign", "terminate"):
                match_id, ps = await open_match(mgr, "japanese_joker")
                m = mgr._matches[match_id]
                await play_random(mgr, match_id, ps, random.Random(2), max_actions=6)
                assert m.state.to_act() >= 0
                if how == "resign":
                    await mgr.leave_match(match_id, ps[0], resign=True)
                else:
                    await mgr.terminate_match(match_id, "test")
                spectator = Principal(kind="spectator", match_id=match_id)
                views = [await mgr.get_view(match_id, p) for p in (*ps, spectator)]
                replayed = await collect(mgr.watch(match_id, ps[1], 0))
                # a view built from a fold of the last seq (no seq given: the current one)
                # is the match as it ended (LiveMatch.envelope), like the current view
                ended_state, _ = m.fold(m.seq)
                views += [m.envelope(a, ended_state) for a in (0, SPECTATOR)]
                out[how] = views, replayed, m.seq
            return out

    for how, (views, replayed, last) in run(go()).items():
        assert all(v.view["to_act"] is None and not v.view["legal"] for v in views), how
        # over, with the session's winners: the resigner's opponent, nobody after a termination
        assert all(v.view["over"] is True for v in views), how
        assert {tuple(v.view["winners"]) for v in views} == {(1,) if how == "resign" else ()}, how
        assert all(e.view.view["over"] is False for e in replayed if e.kind == "action" and e.seq < last)
        assert {v.status for v in views} == {"finished" if how == "resign" else "terminated"}
        actions = [e for e in replayed if e.kind == "action"]
        assert [e.seq for e in actions] == list(range(1, last + 1))
        assert {e.view.status for e in actions if e.seq < last} == {"active"}
        assert replayed[-1].kind == "match_ended" and replayed[-1].view.view["to_act"] is None


def test_an_unknown_audience_gets_no_view():
    """views.view_for knows three audiences (a seat, SPECTATOR, ADMIN, ARCHITECTURE.md section
    4): any other is a bug, refused with ValueError rather than answered with some view."""
    from engine_service.rules import get_game

    state = get_game("klaberjass").new_state(first_dealer=0)
    for audience in ("seat", "Spectator", None):
        with pytest.raises(ValueError):
            view_for(state, audience)


def test_the_waiting_view_names_its_seat_and_withholds_the_draw_without_touching_the_public_view():
    """views.before_start (KL-2.1: the first-dealer draw is withheld until the start): a
    seat's waiting view says which seat it is, a spectator's names none; the draw's keys
    read null (Klaberjass's first dealer and elder hand: either one names the draw's outcome);
    the public view it is built from is shared, so it is never changed."""
    from engine_service.rules import get_game

    game = get_game("klaberjass")
    public = game.new_state(first_dealer=1).public_view()
    kept = copy.deepcopy(public)
    seat = before_start(public, 1, game.draw_keys)
    spectator = before_start(public, SPECTATOR, game.draw_keys)
    assert seat["seat"] == 1 and spectator.get("seat") is None
    for view in (seat, spectator):
        assert view["to_act"] is None and view["dealer"] is None
        assert view["table"]["first_dealer"] is None and view["table"]["elder"] is None
    assert public == kept and public["table"]["first_dealer"] == 1


def test_the_waiting_view_has_nobody_to_act_whatever_public_view_it_is_built_from():
    """views.before_start: nobody may act while the match waits (SubmitAction answers
    MATCH_WAITING, docs/api.md), so its view names nobody to act and no legal action, and no
    hand, even built from the public view of a dealt deal (KL-3.1: the elder acts first)."""
    from engine_service.rules import get_game
    from engine_service.rules.cards import codes_of

    game = get_game("klaberjass")
    state = game.new_state(first_dealer=1)
    deck = list(game.pack)
    random.Random(5).shuffle(deck)
    state.deal([codes_of(1 << c)[0] for c in deck])
    public = state.public_view()
    assert public["to_act"] == 0
    for audience in (0, 1, SPECTATOR):
        view = before_start(public, audience, game.draw_keys)
        assert view["to_act"] is None and view["dealer"] is None
        assert view["legal"] == [] and view["hand"] == []


def test_the_admin_view_of_an_undealt_table_has_every_hand_empty():
    """views.admin_view: ``hands`` holds one list per seat, each seat's cards; a table not
    dealt yet (it waits for players: KL-2.1's draw is made, no card dealt) has no zone at
    all, and every hand reads empty, not some card."""
    from engine_service.rules import get_game
    from engine_service.sessions.views import ADMIN

    for game_id in ("klaberjass", "georgian_joker"):
        game = get_game(game_id)
        state = game.new_state(first_dealer=1)
        view = view_for(state, ADMIN)
        assert view["zones"] == {}
        assert view["hands"] == [[] for _ in range(game.num_seats)]


def test_the_admin_view_lists_every_zone_of_the_deal_empty_ones_too():
    """views.admin_view: ``zones`` holds every zone of ``State.zones()`` (admin.proto
    InspectMatch: every card's location), an empty one as an empty list: just dealt, nobody has
    played to the trick or won one, and those zones are there, empty, beside the hands."""
    from engine_service.rules import get_game
    from engine_service.rules.cards import codes_of
    from engine_service.sessions.views import ADMIN

    for game_id in ("klaberjass", "georgian_joker"):
        state = get_game(game_id).new_state(first_dealer=1)
        deck = list(state.game.pack)
        random.Random(4).shuffle(deck)
        state.deal([codes_of(1 << c)[0] for c in deck])
        view = view_for(state, ADMIN)
        assert view["zones"] == {name: codes_of(mask) for name, mask in state.zones().items()}
        assert view["zones"]["trick"] == [], game_id


def test_an_ended_view_is_a_copy():
    """views.after_end returns a new view: the one it is given may be an envelope's, shared
    by every watcher of an audience (LiveMatch.envelope)."""
    view = {"to_act": 1, "legal": ["pass"], "over": False, "winners": [], "hand": ["AS"]}
    kept = copy.deepcopy(view)
    ended = after_end(view, (0,))
    assert ended == {"to_act": None, "legal": [], "over": True, "winners": [0], "hand": ["AS"]}
    assert view == kept


def test_secret_codes_finds_hidden_cards_anywhere_and_public_or_none_keeps_them_out_of_logs():
    """views.secret_codes looks through keys, values, lists, tuples, sets and inside strings
    (``play:AS``) for the codes of a secret mask, and only whole codes (``XASY`` names no
    card); public_or_none gives a log line None instead of an object naming a card a
    spectator may not know now (GJ-11.6, JJK-9.5)."""
    from engine_service.rules import all_game_ids, get_game
    from engine_service.rules.cards import card_code, card_id, codes_of

    secret = (1 << card_id("AS")) | (1 << card_id("KH")) | (1 << card_id("X1"))
    obj = {"KH": [("play:AS",)], "n": 3, "s": {"X1"}, "other": ["QD", "XASY", "7C"]}
    assert secret_codes(obj, secret) == {"AS", "KH", "X1"}
    assert secret_codes({"other": ["QD", "XASY", "play:7C"]}, secret) == set()
    # every card of every game's pack is found: a hidden six of Georgian Joker, a joker...
    for game_id in all_game_ids():
        for card in get_game(game_id).pack:
            code = card_code(card)
            assert secret_codes({"action": f"play:{code}"}, 1 << card) == {code}, (game_id, code)
    # a code glued to a letter or a digit on either side is part of another word
    assert secret_codes(["XAS", "ASY", "9KH", "KH0", "AX1", "X1b"], secret) == set()
    assert secret_codes(obj, 0) == set()

    state = get_game("klaberjass").new_state(first_dealer=0)
    deck = list(state.game.pack)
    random.Random(3).shuffle(deck)
    state.deal([codes_of(1 << c)[0] for c in deck])
    hidden = codes_of(state.secret_cards(None))
    hand_of_seat_0 = codes_of(state.zones()["hand0"])
    public = {"totals": [0, 0], "seen": [c for c in codes_of(state.zones().get("turn_up", 0))]}
    assert hidden and public_or_none(public, state) is public
    assert public_or_none({"hand": hidden[:1]}, state) is None
    # hidden from a spectator: every seat's hand, seat 0's too, and the stock
    assert hand_of_seat_0 and set(hand_of_seat_0) <= set(hidden)
    assert all(public_or_none({"hand": [code]}, state) is None for code in hidden)


def _dealt(game_id, seed=7):
    from engine_service.rules import get_game
    from engine_service.rules.cards import codes_of

    state = get_game(game_id).new_state(first_dealer=1)
    deck = list(state.game.pack)
    random.Random(seed).shuffle(deck)
    state.deal([codes_of(1 << c)[0] for c in deck])
    return state


@pytest.mark.parametrize("with_maker", [False, True])
def test_a_seat_out_of_range_or_a_bool_is_no_audience_and_gets_no_hand(with_maker):
    """views.view_for: a seat is one of the game's (ARCHITECTURE.md section 4: a seat, SPECTATOR
    or ADMIN, anything else refused with ValueError). The rules core reads seat -1 as the last
    seat (a list index), so a -1 answered with ``view(-1)`` would show the last seat's hand to
    whoever is not that seat (GJ-11.1, JJK-9.5); True is no seat either."""
    from engine_service.rules import all_game_ids

    for game_id in all_game_ids():
        state = _dealt(game_id)
        make = state.view_maker() if with_maker else None
        for audience in (-1, -state.game.num_seats, state.game.num_seats, True, False):
            with pytest.raises(ValueError):
                view_for(state, audience, make)


def test_a_seats_view_is_its_own_with_or_without_the_states_view_maker():
    """views.view_for gives seat ``s`` the rules core's ``view(s)`` (its own hand and legal
    actions only, GJ-11.1/11.2), built by the ``make`` it is given when there is one (the
    shared views of one state, ``State.view_maker``) and by ``state.view(s)`` otherwise (a past
    state's view, LiveMatch.envelope)."""
    from engine_service.rules import all_game_ids

    for game_id in all_game_ids():
        state = _dealt(game_id)
        asked = []

        def make(seat, _make=state.view_maker()):
            asked.append(seat)
            return _make(seat)

        for seat in range(state.game.num_seats):
            assert view_for(state, seat) == state.view(seat), (game_id, seat)
            assert sorted(view_for(state, seat)["hand"]) == codes_of_hand(state, seat), (game_id, seat)
            assert view_for(state, seat, make) == state.view(seat), (game_id, seat)
        assert view_for(state, SPECTATOR, make) == state.public_view()
        assert asked == [*range(state.game.num_seats), None], game_id


def codes_of_hand(state, seat):
    from engine_service.rules.cards import codes_of

    return sorted(codes_of(state.zones().get(f"hand{seat}", 0)))


def test_the_admin_view_is_the_public_view_plus_legal_zones_and_hands():
    """views.admin_view (admin.proto InspectMatch): the public view, not a seat's (no seat, no
    hand of its own), plus ``legal``, ``zones`` and ``hands``, each seat's hand at its index."""
    from engine_service.rules import all_game_ids
    from engine_service.sessions.views import ADMIN

    for game_id in all_game_ids():
        state = _dealt(game_id)
        view = view_for(state, ADMIN)
        public = state.public_view()
        assert {k: v for k, v in view.items() if k not in ("legal", "zones", "hands")} == {
            k: v for k, v in public.items() if k != "legal"}, game_id
        assert view["legal"] == state.legal_actions() != []
        assert [sorted(h) for h in view["hands"]] == [codes_of_hand(state, s) for s in range(state.game.num_seats)]


def test_the_waiting_view_of_every_game_withholds_each_of_its_draw_keys_and_adds_none():
    """views.before_start for every game (KL-2.1, JJ-2.1, GJ-2.2, JJK-A9: the draw is made at
    the creation): each of the game's ``draw_keys`` reads null in the table, every other key of
    the table is the public view's, and a draw key the table does not have is not added."""
    from engine_service.rules import all_game_ids, get_game

    for game_id in all_game_ids():
        game = get_game(game_id)
        public = game.new_state(first_dealer=1).public_view()
        for audience in (0, SPECTATOR):
            table = before_start(public, audience, game.draw_keys)["table"]
            assert set(table) == set(public["table"]), game_id
            assert {k: v for k, v in table.items() if v is not None or k in game.draw_keys} == {
                **{k: v for k, v in public["table"].items() if v is not None}, **dict.fromkeys(game.draw_keys)}, game_id
    assert before_start({"table": {"first_dealer": 1, "trump": "H"}}, SPECTATOR, ("first_dealer", "elder"))["table"] == {
        "first_dealer": None, "trump": "H"}


def test_the_waiting_view_of_a_nines_georgian_match_withholds_the_trump_chooser_gj_2_2_gj_3_5():
    """GJ-2.2, GJ-3.5: with ``deal_schedule = nines`` the first deal's trump chooser (the
    forehand) is set at the creation, and it tells the drawn first dealer: the waiting view
    nulls it like the other draw keys."""
    from engine_service.rules import get_game

    game = get_game("georgian_joker")
    public = game.new_state({"deal_schedule": "nines"}, first_dealer=1).public_view()
    assert public["table"]["trump_chooser"] == 2
    for audience in (0, SPECTATOR):
        table = before_start(public, audience, game.draw_keys)["table"]
        assert table["trump_chooser"] is None and table["forehand"] is None and table["first_dealer"] is None


def test_secret_codes_finds_every_hidden_card_of_a_string_not_only_its_first():
    """views.secret_codes keeps hidden cards out of the logs (GJ-11.6, JJK-9.5): a string naming
    a public card before a hidden one (``QD then AS``), or two hidden ones, names them all."""
    from engine_service.rules.cards import card_id

    secret = (1 << card_id("AS")) | (1 << card_id("KH"))
    assert secret_codes({"said": "play:QD then play:AS"}, secret) == {"AS"}
    assert secret_codes(["AS,KH"], secret) == {"AS", "KH"}
