"""The terminal rendering (clients/render.py): cards, actions from their structured fields, and
each game's table drawn from real views sent by a real engine."""

from __future__ import annotations

import os
import random

from rich.console import Console

from clients import cardgames_client as cg
from clients import render
from engine_service.transport.generated import cards_pb2, match_pb2

from .conftest import run


def plain(renderable) -> str:
    console = Console(width=200, record=True, color_system=None, file=open("/dev/null", "w"))
    console.print(renderable)
    return console.export_text()


def test_cards():
    assert render.card_text("TH").plain == "10♥" and "red" in str(render.card_text("TH").style)
    assert render.card_text("AS").plain == "A♠"
    assert render.card_text("X2").plain == "Joker2"
    assert render.card_text(None).plain == render.HIDDEN_CARD


def test_actions_are_labelled_from_their_structured_fields():
    joker = cards_pb2.Action(notation="play:X1:high:S", kind=cards_pb2.ACTION_KIND_PLAY, verb="play",
                             card=cards_pb2.Card(code="X1", rank=cards_pb2.RANK_JOKER),
                             joker_mode=cards_pb2.JOKER_MODE_HIGH, named_suit=cards_pb2.SUIT_SPADES)
    assert render.action_text(joker).plain == "Joker1 takes: top ♠ due"  # GJ-5.4: the highest spade
    under = cards_pb2.Action(notation="play:X2:low", kind=cards_pb2.ACTION_KIND_PLAY, verb="play",
                             card=cards_pb2.Card(code="X2"), joker_mode=cards_pb2.JOKER_MODE_LOW)
    assert render.action_text(under).plain == "play Joker2 low (under)"
    assert render.action_text(cards_pb2.Action(notation="bid:0", kind=cards_pb2.ACTION_KIND_BID, number=0)).plain \
        == "bid 0 (pass)"
    trump = cards_pb2.Action(notation="trump:NT", kind=cards_pb2.ACTION_KIND_TRUMP, verb="trump",
                             suit=cards_pb2.SUIT_NO_TRUMP)
    assert render.action_text(trump).plain == "trump NT"
    jo = cards_pb2.Action(notation="play:KS:jo", kind=cards_pb2.ACTION_KIND_PLAY, verb="play",
                          card=cards_pb2.Card(code="KS"), announcement=cards_pb2.ANNOUNCEMENT_JO)
    assert render.action_text(jo).plain == "play K♠ + jo"
    assert render.action_text(cards_pb2.Action(notation="no_exchange", kind=cards_pb2.ACTION_KIND_NO_EXCHANGE)).plain \
        == "no exchange"


def test_a_previous_deals_final_trick_is_labelled_so():
    """docs/api.md: last_trick is the previous deal's final trick exactly when trick_history is
    empty (the server has dealt the next deck already)."""
    trick = match_pb2.Trick(winner=1)
    trick.plays.add(seat=0, card=cards_pb2.Card(code="AS"))
    trick.plays.add(seat=1, card=cards_pb2.Card(code="JS"))
    view = match_pb2.View(game="klaberjass", hand_sizes=[6, 6], last_trick=trick)
    assert "last trick (previous deal)" in plain(render.board(view, None, 0.0))
    over = match_pb2.View(game="klaberjass", hand_sizes=[0, 0], last_trick=trick, over=True)
    text = plain(render.board(over, None, 0.0))  # the final deal's, not a "previous" one
    assert "last trick: " in text and "previous deal" not in text, text
    view.trick_history.append(trick)
    text = plain(render.board(view, None, 0.0))
    assert "last trick" in text and "previous deal" not in text


def test_a_delayed_spectator_is_told_so():
    """A spectator of a match with spectator_delay_actions sees how far behind it is while
    the match is played; a seat (never delayed) and a finished match say nothing."""
    summary = match_pb2.MatchSummary(spectator_delay_actions=4)
    view = match_pb2.View(game="klaberjass", hand_sizes=[6, 6], status=match_pb2.MATCH_STATUS_ACTIVE)
    assert "(4 actions behind the table)" in plain(render.board(view, summary, 0.0))
    assert "behind" not in plain(render.board(view, match_pb2.MatchSummary(), 0.0))
    view.seat = 0
    assert "behind" not in plain(render.board(view, summary, 0.0))
    view.ClearField("seat")
    view.status = match_pb2.MATCH_STATUS_FINISHED
    assert "behind" not in plain(render.board(view, summary, 0.0))


def test_every_legal_action_of_real_matches_has_a_label(engine):
    """Random play through every game: each legal action the server sends gets a label that
    mentions its card (if any), and each view renders without error."""

    async def scenario():
        async with cg.connect(engine.target) as client:
            for game in await client.list_games():
                match = await client.create_match(game.id)
                seats = [await client.join(match.match_id) for _ in range(game.num_seats)]
                rng = random.Random(game.id)
                for _ in range(60):
                    view = await seats[0].view()
                    if view.over:
                        break
                    seat = seats[view.to_act]
                    mine = await seat.view()
                    text = plain(render.board(mine, None, 0.0))
                    assert "your hand" in text and render.GAME_NAMES[game.id] in text
                    for action in mine.legal_actions:
                        label = render.action_text(action).plain
                        assert label
                        if action.card.code:
                            assert render.card_text(action.card.code).plain in label, (action.notation, label)
                    await seat.act(lambda v: rng.choice(cg.legal_notations(v)), mine)

    run(scenario(), timeout_s=180)


def test_japanese_joker_columns_and_georgian_joker_bids(engine):
    async def scenario():
        async with cg.connect(engine.target) as client:
            jjk = await client.create_match("japanese_joker", seats=[None, None])
            a, b = [await client.join(jjk.match_id) for _ in range(2)]
            view = await a.view()
            mover = a if view.to_act == a.seat else b
            await mover.act(lambda v: v.legal_actions[0].notation)  # the declarer chooses trump
            view = await a.view()
            table = render.struct_dict(view.table)
            lines = [line.plain for line in render.columns_lines(view, await a.summary())]
            assert lines[0].startswith("your columns:") and lines[1].startswith("seat 1's columns:")
            for seat, line in enumerate(lines):
                shown = [c for c in table["columns"][seat] if c.get("on_table")]
                assert line.count("[") == len(shown) == table["column_counts"][seat] == 5
                for column in shown:
                    assert render.card_text(column["up"]).plain in line
                assert line.count(render.HIDDEN_CARD) == 5

            gj = await client.create_match("georgian_joker")
            seats = [await client.join(gj.match_id, player_name=f"p{i}") for i in range(4)]
            for _ in range(3):  # bids (or the nine-card trump choice) come first
                view = await seats[0].view()
                await seats[view.to_act].act(lambda v: v.legal_actions[-1].notation)
            view = await seats[0].view()
            table = render.struct_dict(view.table)
            text = plain(render.board(view, await seats[0].summary(), 0.0))
            assert "trump indicator" in text or table.get("trump_indicator") is None
            forehand = "you" if table["forehand"] == 0 else f"p{table['forehand']}"
            assert f"card(s) each, forehand {forehand}\n" in text  # GJ-11.1
            bids = [b for b in table["bids"] if b is not None]
            assert len(bids) >= 1
            seats_text = plain(render.seats_table(view, await seats[0].summary(), 0.0))
            assert "bid" in seats_text.splitlines()[0]

    run(scenario())


def test_event_lines():
    from engine_service.transport.generated import card_games_pb2

    heartbeat = card_games_pb2.WatchMatchResponse(kind=match_pb2.EVENT_KIND_HEARTBEAT, seq=3)
    assert render.event_text(heartbeat, None, 0) is None
    action = card_games_pb2.WatchMatchResponse(
        kind=match_pb2.EVENT_KIND_ACTION, seq=12, seat=1, by=match_pb2.ACTOR_AUTO,
        action=cards_pb2.Action(notation="bid:2", kind=cards_pb2.ACTION_KIND_BID, number=2))
    assert render.event_text(action, None, 0).plain == "  12 seat 1 (auto): bid 2"
    ended = card_games_pb2.WatchMatchResponse(kind=match_pb2.EVENT_KIND_MATCH_ENDED, seq=40, reason="resigned")
    assert "match ended (resigned)" in render.event_text(ended, None, None).plain


def test_jojotte_contract_names_the_strain_played_and_its_holder():
    """A Jo-Jotte nullo is the defender's and is played at no trump (jj_nullo_strain): the
    board named the auction's strain and declarer ("nullo H doubled, declarer <bot>") and no
    trump at all (docs/games/jojotte.md: play_strain, holder)."""
    from google.protobuf import json_format

    view = match_pb2.View(game="jojotte", seat=0, hand_sizes=[9, 9])
    json_format.ParseDict({"contract": {"strain": "H", "bidder": 1, "multiplier": 2, "declarer": 1,
                                        "defender": 0, "kind": "nullo", "holder": 0, "play_strain": "NT"}},
                          view.table)
    text = plain(render.board(view, None, 0.0))
    assert "trump: no trump" in text
    assert "contract: nullo no trump doubled, nullo player you" in text
    json_format.ParseDict({"contract": {"strain": "S", "bidder": 1, "multiplier": 1, "declarer": 1,
                                        "defender": 0, "kind": "normal", "holder": 1, "play_strain": "S"}},
                          view.table)
    text = plain(render.board(view, None, 0.0))
    assert "trump: ♠" in text and "contract: normal ♠, declarer seat 1" in text


def test_jojotte_deal_results_show_the_points_above_the_line():
    """The deal results showed Jo-Jotte's points below the line only, so a deal scored above
    (a nullo, a slam, the rubber bonus) read 0 for both players."""
    from google.protobuf import json_format

    view = match_pb2.View(game="jojotte", seat=0, hand_sizes=[9, 9])
    json_format.ParseDict([{"thrown_in": False, "below": [20, 170], "above": [0, 0]},
                           {"thrown_in": False, "below": [0, 0], "above": [0, 700]}], view.scores.deal_results)
    rows = [line.split() for line in plain(render.deal_results_table(view, None)).splitlines()]
    assert ["1", "20", "170"] in rows and ["2", "0", "0", "(+700", "above)"] in rows


def test_the_header_names_no_deal_after_the_end():
    """The deal in progress is the one after those scored; once the match is over there is
    none (a 24-deal Georgian Joker match ended on "deal 25")."""
    from google.protobuf import json_format

    view = match_pb2.View(game="georgian_joker", seat=0, hand_sizes=[0, 0, 0, 0], phase="match_over",
                          status=match_pb2.MATCH_STATUS_FINISHED, over=True, winners=[1])
    json_format.ParseDict([{"scores": [0, 0, 0, 0]}] * 24, view.scores.deal_results)
    header = render.header_text(view, None, 0.0).plain
    assert "24 deal(s) scored" in header and "deal 25" not in header and "match over" in header
    view.over, view.status, view.phase = False, match_pb2.MATCH_STATUS_ACTIVE, "playing"
    assert "deal 25" in render.header_text(view, None, 0.0).plain


def test_the_viewer_is_never_away_on_its_own_screen():
    """A seat whose player has no stream open is "(away)"; the viewer's own seat is not (once
    the match was over its stream had ended, and the player read "you (away)")."""
    summary = match_pb2.MatchSummary()
    for seat in range(2):
        summary.seats.add(seat=seat, kind=match_pb2.SEAT_KIND_OPEN, player_name=f"p{seat}", taken=True,
                          present=False)
    view = match_pb2.View(game="klaberjass", seat=0, hand_sizes=[0, 0], status=match_pb2.MATCH_STATUS_FINISHED)
    lines = plain(render.seats_table(view, summary, 0.0)).splitlines()
    assert any("you" in line and "(away)" not in line for line in lines)
    assert any("p1 (away)" in line for line in lines)


def test_georgian_joker_deal_results_say_which_number_is_the_bid():
    """A Georgian Joker deal reads "points (a/b)": the table's title says a is the tricks
    taken and b the bid (a player who bid 3 and took 1 read "10 (1/3)", which way round?)."""
    from google.protobuf import json_format

    view = match_pb2.View(game="georgian_joker", seat=0, hand_sizes=[1, 1, 1, 1])
    json_format.ParseDict([{"trump": "S", "bids": [3, 1, 0, 0], "taken": [1, 0, 0, 0],
                            "scores": [10, -200, 50, 50]}], view.scores.deal_results)
    text = plain(render.deal_results_table(view, None))
    assert "deals: points (tricks taken/bid)" in text and "10 (1/3)" in text
    view = match_pb2.View(game="japanese_joker", seat=0, hand_sizes=[0, 0])
    json_format.ParseDict([{"trump": "D", "taken": [8, 10], "scores": [0, 2]}], view.scores.deal_results)
    text = plain(render.deal_results_table(view, None))
    assert "taken/bid" not in text and "8 tricks" in text


def test_the_connection_line_of_the_screens():
    """The red line while the watch stream is down: the try of max_failures (or alone when
    there is no limit), then given up; nothing while the stream is up or back."""
    assert render.connection_text(None) == ""
    assert render.connection_text(cg.StreamState(cg.RECONNECTING, 3, 30)) == \
        "connection lost — reconnecting (try 3 of 30)…"
    assert render.connection_text(cg.StreamState(cg.RECONNECTING, 4, None)) == "connection lost — reconnecting (try 4)…"
    assert render.connection_text(cg.StreamState(cg.RESUMED, 2, 30)) == ""
    assert render.connection_text(cg.StreamState(cg.GAVE_UP, 30, 30)) == "connection lost for good after 30 tries"


def test_the_reason_a_screen_closed_without_its_stream():
    """The error and, once given up, the tries; a stream the server ended has no error."""
    error = cg.Unavailable(cg.grpc.StatusCode.UNAVAILABLE, "Socket closed")
    assert render.connection_lost_reason(cg.StreamState(cg.GAVE_UP, 30, 30, error)) == \
        "UNAVAILABLE: Socket closed, 30 tries in a row"
    assert render.connection_lost_reason(cg.StreamState(cg.RECONNECTING, 4, 30, error)) == "UNAVAILABLE: Socket closed"
    assert render.connection_lost_reason(cg.StreamState(cg.RECONNECTING, 1, 30)) == "the stream ended"


#: Names any player or match creator may choose (printable, so the server takes them) that
#: read as rich markup: a closing tag with nothing to close (a MarkupError), a hyperlink to a
#: site of the namer's choice (an OSC 8 escape sequence written to the terminal), a style.
MARKUP_NAMES = ("[/]", "[link=https://evil.example]free chips[/link]", "[conceal]x[/conceal]")


def rendered(renderable) -> tuple[str, str]:
    """(plain text, what a terminal is sent) of ``renderable``."""
    import io

    from rich.console import Console

    out = io.StringIO()
    console = Console(file=out, width=200, force_terminal=True, color_system="truecolor", record=True)
    console.print(renderable)
    return console.export_text(), out.getvalue()


def test_the_deal_results_show_player_names_as_they_are():
    """A player's name heads their column of the deal results as written: read as markup, a
    name "[/]" made the screen of every other player and spectator fail once a deal was
    scored (a two-player opponent's client gone: absent, then forfeit), and a name could write
    a hyperlink to the terminal. A replaced seat's "[bot NAME]" note was dropped as a style."""
    from google.protobuf import json_format

    for name in MARKUP_NAMES:
        view = match_pb2.View(game="klaberjass", seat=1, hand_sizes=[0, 0])
        json_format.ParseDict([{"points": [10, 20]}], view.scores.deal_results)
        summary = match_pb2.MatchSummary(seats=[
            match_pb2.SeatInfo(seat=0, kind=match_pb2.SEAT_KIND_OPEN, taken=True, player_name=name),
            match_pb2.SeatInfo(seat=1, kind=match_pb2.SEAT_KIND_OPEN, taken=True, player_name="me")])
        text, sent = rendered(render.deal_results_table(view, summary))
        assert name in text and "\x1b]8;" not in sent
    summary.seats[0].player_name, summary.seats[0].replaced_by_bot, summary.seats[0].bot = "ada", True, "search"
    text, _ = rendered(render.deal_results_table(view, summary))
    assert "ada [bot search]" in text


def test_a_seat_the_auto_move_policy_plays_says_auto_play():
    """GJ-12.4 with a server without a takeover bot (the default): the rulebook's auto-move
    policy (GJ-12.2) plays for the absent or departed player and ``SeatInfo.bot`` is empty;
    the seat read "ada [bot ]", naming a bot that is none."""
    summary = match_pb2.MatchSummary(seats=[
        match_pb2.SeatInfo(seat=0, kind=match_pb2.SEAT_KIND_OPEN, taken=True, player_name="ada",
                           replaced_by_bot=True),
        match_pb2.SeatInfo(seat=1, kind=match_pb2.SEAT_KIND_OPEN, taken=True, player_name="bob",
                           replaced_by_bot=True, left=True, bot="search"),
        match_pb2.SeatInfo(seat=2, kind=match_pb2.SEAT_KIND_OPEN, taken=True, player_name="cat")])
    assert render.seat_name(summary, 0) == "ada [auto-play]"
    assert render.seat_name(summary, 1) == "bob [bot search]"
    assert render.seat_name(summary, 2) == "cat"


def test_the_score_column_says_what_the_match_is_played_to():
    """The target a player plays to was on no screen: Klaberjass's and Japanese Joker's
    ``table.target_score`` (KL-10.1, JJK-8.1) and the Jo-Jotte game of 80 (JJ-10.1), whose
    progress is the points below the line in the game in progress (``table.match.game_points``),
    not the match's "below" total shown alone. The empty bid column of games without bids goes,
    so that Jo-Jotte's scores keep one row per seat on 80 columns."""
    from google.protobuf import json_format
    from rich.console import Console

    def rows(view, width=78):
        console = Console(width=width, record=True, color_system=None, file=open(os.devnull, "w"))
        console.print(render.seats_table(view, None, 0.0))
        return [line.rstrip() for line in console.export_text().splitlines()]

    for game, target in (("klaberjass", 500), ("japanese_joker", 21)):
        view = match_pb2.View(game=game, seat=0, hand_sizes=[9, 9])
        json_format.ParseDict({"target_score": target}, view.table)
        view.scores.totals.add(name="total", values=[120, 30])
        header, *seats = rows(view)
        assert header.split()[-3:] == ["score", "(to", f"{target})"] and "bid" not in header, header
        assert seats[0].split()[-1] == "120" and seats[1].split()[-1] == "30", seats

    view = match_pb2.View(game="jojotte", seat=0, hand_sizes=[9, 9])
    json_format.ParseDict({"match": {"game_target": 80, "game_points": [40, 0]}}, view.table)
    for name, values in (("below", [220, 1000]), ("above", [1300, 500]), ("games_won", [1, 0])):
        view.scores.totals.add(name=name, values=values)
    header, *seats = rows(view)
    assert header.split()[-6:] == ["game", "(to", "80)", "below", "above", "games"] and "bid" not in header, header
    assert len(seats) == 2, seats  # one row per seat: the score did not wrap
    assert seats[0].split()[-4:] == ["40", "220", "1300", "1"], seats
    assert seats[1].split()[-4:] == ["0", "1000", "500", "0"], seats
    # beside a bot's name, with an above-the-line total of five digits: one row per seat still
    # (the four totals in one cell, "game 0  below 345  above 12700  games 1", wrapped on 80)
    summary = match_pb2.MatchSummary()
    summary.seats.add(seat=0, kind=match_pb2.SEAT_KIND_OPEN, taken=True, player_name="ada")
    summary.seats.add(seat=1, kind=match_pb2.SEAT_KIND_BOT, bot="heuristic")
    view.to_act, view.dealer = 0, 1
    del view.scores.totals[:]
    for name, values in (("below", [55, 345]), ("above", [400, 12700]), ("games_won", [0, 1])):
        view.scores.totals.add(name=name, values=values)
    console = Console(width=78, record=True, color_system=None, file=open(os.devnull, "w"))
    console.print(render.seats_table(view, summary, 0.0))
    lines = console.export_text().splitlines()
    assert len(lines) == 3 and lines[2].split()[-4:] == ["0", "345", "12700", "1"], lines
    json_format.ParseDict({"match": {"game_target": 80, "game_points": [40, 0], "pot": 36}}, view.table)
    # on nobody's score yet (JJ-9.5)
    assert "pot: 36 (frozen: the winner of the next decided deal enters it)" in plain(render.board(view, None, 0.0))


def test_the_auction_reads_as_the_actions_do():
    """An auction call showed its notation ("name S", "no_trump") where the action that made
    it reads "name ♠" / "no trump"."""
    from google.protobuf import json_format

    view = match_pb2.View(game="jojotte", seat=0, hand_sizes=[6, 6])
    json_format.ParseDict({"auction": [{"seat": 1, "call": "name:S"}, {"seat": 0, "call": "no_trump"},
                                       {"seat": 1, "call": "pass"}]}, view.table)
    text = plain(render.board(view, None, 0.0))
    assert "auction: seat 1 name ♠, you no trump, seat 1 pass" in text, text


def test_the_melds_line_says_what_was_scored():
    """The meld dialogue's ``scores`` statement is public (KL-5.5 step 5: suit, top card and
    length of each sequence scored; JJ-5.9: quartets and sequences), and a player plays the
    deal knowing those cards are in that hand: the board showed the points only."""
    from google.protobuf import json_format

    view = match_pb2.View(game="klaberjass", seat=0, hand_sizes=[8, 8])
    json_format.ParseDict({"meld_points": [0, 70], "melds": [
        {"seat": 0, "say": "value", "value": 50}, {"seat": 1, "say": "how_high"},
        {"seat": 1, "say": "scores", "points": 70,
         "sequences": [{"suit": "H", "top": "Q", "length": 4}, {"suit": "S", "top": "T", "length": 3}]}]},
        view.table)
    assert "melds: seat 1 70 (run of 4 to Q♥, run of 3 to 10♠)" in plain(render.board(view, None, 0.0))

    view = match_pb2.View(game="jojotte", seat=0, hand_sizes=[8, 8])
    json_format.ParseDict({"melds": {"points": [120, 20], "dialogue": [
        {"seat": 0, "say": "scores", "quartets": ["J"], "points": 100},
        {"seat": 1, "say": "scores", "points": 20,
         "sequences": [{"suit": "S", "top": "9", "length": 3, "cards": ["9S", "8S", "7S"]}]}]}},
        view.table)
    assert "melds: you 120 (four J), seat 1 20 (run of 3 to 9♠)" in plain(render.board(view, None, 0.0))


def test_japanese_joker_shows_the_up_card_a_cleared_table_moved_into_a_hand():
    """JJK-4.3: playing from the last two columns moves the other column's up card into the
    hand, and it stays public (JJK-9.2, ``known_in_hand``) until played; the columns line said
    "none" and the card was gone from the board."""
    from google.protobuf import json_format

    view = match_pb2.View(game="japanese_joker", seat=0, hand_sizes=[6, 9])
    json_format.ParseDict({"declarer": 0, "columns": [[{"up": "9H", "on_table": True}], [
        {"up": "JS", "on_table": False}, {"up": "QH", "on_table": False}]],
        "known_in_hand": [["AH"], ["QH"]]}, view.table)
    lines = [line.plain for line in render.columns_lines(view, None)]
    assert lines == ["your columns: [9♥/▒▒]", "seat 1's columns: none  in hand: Q♥"], lines


def _view(game, table, results=(), **fields):
    from google.protobuf import json_format

    view = match_pb2.View(game=game, seat=0, **{"hand_sizes": [9, 9], **fields})
    json_format.ParseDict(table, view.table)
    if results:
        json_format.ParseDict(list(results), view.scores.deal_results)
    return view


def test_an_exchange_names_the_seven_it_gives_and_the_turn_up_it_takes():
    """Klaberjass's ``exchange`` read "exchange", naming neither the dix nor the turn-up, and
    Jo-Jotte's ``exchange:7H`` "exchange 7♥ for the turn-up" without the card taken; the
    event of the opponent's exchange said "exchange" too, and the board only showed a new
    turn-up. The label names both cards (KL-4.1, JJ-4.2), and the board who took the turn-up."""
    kl = cards_pb2.Action(notation="exchange", kind=cards_pb2.ACTION_KIND_EXCHANGE, verb="exchange")
    before = _view("klaberjass", {"trump": "D", "turn_up": "TD", "exchange": None})
    assert render.action_text(kl, before).plain == "exchange 7♦ for the turn-up 10♦"
    # a trump named in round 2: the dix is the seven of trumps, the turn-up another suit's (KL-A8)
    assert render.action_text(kl, _view("klaberjass", {"trump": "C", "turn_up": "QS"})).plain \
        == "exchange 7♣ for the turn-up Q♠"
    jj = cards_pb2.Action(notation="exchange:7H", kind=cards_pb2.ACTION_KIND_EXCHANGE, verb="exchange",
                          card=cards_pb2.Card(code="7H"))
    assert render.action_text(jj, _view("jojotte", {"turn_up": "AD", "exchange": None})).plain \
        == "exchange 7♥ for the turn-up A♦"

    # the event carries the view after the exchange: the seven lies in the turn-up place
    from engine_service.transport.generated import card_games_pb2

    after = _view("klaberjass", {"trump": "D", "turn_up": "7D",
                                 "exchange": {"seat": 1, "gives": "7D", "takes": "TD", "trick": None}})
    event = card_games_pb2.WatchMatchResponse(kind=match_pb2.EVENT_KIND_ACTION, seq=3, seat=1, action=kl,
                                              view=after)
    assert render.event_text(event, None, 0).plain == "   3 seat 1: exchange 7♦ for the turn-up 10♦"
    assert "turn-up: 7♦ (seat 1 took 10♦ for it)" in plain(render.board(after, None, 0.0))
    jj_after = _view("jojotte", {"turn_up": "7H", "exchange": {"seat": 0, "seven": "7H", "turn_up": "AD"}})
    event = card_games_pb2.WatchMatchResponse(kind=match_pb2.EVENT_KIND_ACTION, seq=5, seat=0, action=jj,
                                              view=jj_after)
    assert render.event_text(event, None, 0).plain == "   5 you: exchange 7♥ for the turn-up A♦"
    assert "turn-up: 7♥ (you took A♦ for it)" in plain(render.board(jj_after, None, 0.0))


def test_a_jojotte_contract_shows_between_the_auction_and_the_nullo_window():
    """After the auction, in the exchange and the nullo window (the contract's kind not yet
    known), the board showed neither trump nor contract: a player answering the nullo call
    did not see what was bid, by whom, nor that it was doubled."""
    contract = {"strain": "D", "bidder": 0, "multiplier": 2, "declarer": 0, "defender": 1,
                "kind": None, "holder": None, "play_strain": None}
    text = plain(render.board(_view("jojotte", {"contract": contract, "auction_state": None}), None, 0.0))
    assert "contract: ♦ doubled, declarer you" in text, text
    # the nullo call the declarer answers (slam or pass, JJ-4.4) is on the board, not only in the log
    actions = [{"seat": 0, "action": "accept"}, {"seat": 1, "action": "pass"}, {"seat": 1, "action": "nullo"}]
    text = plain(render.board(_view("jojotte", {"contract": contract, "auction_state": None,
                                                "deal_actions": actions}), None, 0.0))
    assert "contract: ♦ doubled, declarer you; seat 1 called nullo" in text, text
    # during the auction the calls say it (the bid may still be overcalled)
    text = plain(render.board(_view("jojotte", {"contract": contract, "auction_state": "REDBL"}), None, 0.0))
    assert "contract:" not in text


def test_bella_and_jo_jotte_are_on_the_board():
    """The trump marriage's 20 (KL-7.1 bella, JJ-7.1 jo-jotte) counts in the deal total, and
    was on no line of the board."""
    text = plain(render.board(_view("klaberjass", {"trump": "H", "bella": [0, 20]}), None, 0.0))
    assert "bella: seat 1 20" in text, text
    assert "bella" not in plain(render.board(_view("klaberjass", {"trump": "H", "bella": [0, 0]}), None, 0.0))
    text = plain(render.board(_view("jojotte", {"jo_jotte": [20, 0]}), None, 0.0))
    assert "jo-jotte: you 20" in text, text


def test_the_last_deal_is_explained_between_the_deals():
    """The deal results showed what each player entered ("0 | 105") and nothing else: not the
    deal totals compared (KL-9.1, JJ-9.2), what they were made of (melds, bella, the K-Q-J
    bonus, jo-jotte, tricks), nor who had more. Shown until a trump is fixed again, and at
    the end of the match."""
    kl_result = {"thrown_in": False, "trump": "H", "maker": 0, "melds": [0, 20], "card_points": [7, 78],
                 "bonuses": [0, 20], "scored": [0, 105]}
    detail = {"dealer": 1, "tricks": [1, 8], "bella": [0, 20], "trump_kqj": [0, 0], "deal_totals": [7, 118],
              "outcome": "opponent_more", "thrown_in": False, "last_trick": [0, 10]}
    view = _view("klaberjass", {"trump": None, "previous_deal": detail}, [kl_result])
    text = " ".join(plain(render.board(view, None, 0.0)).split())
    assert ("last deal: trump ♥, maker you: you 7, seat 1 118 (melds 20, bella 20, cards 78) — the opponent "
            "has more") in text, text
    view = _view("klaberjass", {"trump": "S", "previous_deal": detail}, [kl_result])
    assert "last deal" not in plain(render.board(view, None, 0.0))  # the next deal has begun
    view = _view("klaberjass", {"trump": None}, [kl_result, {"thrown_in": True}])
    assert "last deal: thrown in, nobody scores" in plain(render.board(view, None, 0.0))

    jj_result = {"thrown_in": False, "contract": {"kind": "normal", "strain": "H", "holder": 0, "multiplier": 2},
                 "trick_points": [20, 65], "below": [0, 170], "above": [0, 0], "pot": 0}
    last = {"melds": [0, 20], "jo_jotte": [0, 0], "trick_points": [20, 65], "tricks": [2, 7],
            "comparison": [20, 85], "outcome": "defender_more", "pot_to": None, "game_winner": 1,
            "rubber_winner": None, "quartet_winner": None, "sequence_winner": 1}
    view = _view("jojotte", {"contract": None, "last_deal": last}, [jj_result])
    text = " ".join(plain(render.board(view, None, 0.0)).split())
    assert ("last deal: ♥ doubled, declarer you: you 20, seat 1 85 (melds 20, tricks 65) — the defender has "
            "more; game to seat 1") in text, text
    nullo = {"thrown_in": False, "contract": {"kind": "nullo", "strain": "NT", "holder": 1, "multiplier": 1},
             "trick_points": [0, 0], "below": [0, 0], "above": [300, 0], "pot": 0}
    view = _view("jojotte", {"contract": None, "last_deal": dict(last, tricks=[7, 2], game_winner=None)},
                 [nullo])
    text = " ".join(plain(render.board(view, None, 0.0)).split())
    assert "last deal: nullo no trump, nullo player seat 1: lost, 2 tricks taken" in text, text


def test_the_meld_talk_is_on_the_board():
    """The meld dialogue is public (KL-5.5, JJ-5.9): the loser's value and the top card he
    named tell the winner which cards he holds (the engine counts them as revealed), but the
    board showed only what the winner scored."""
    view = _view("klaberjass", {"trump": "D", "meld_points": [0, 20], "melds": [
        {"seat": 0, "say": "value", "value": 20}, {"seat": 1, "say": "how_high"},
        {"seat": 0, "say": "top", "card": "9H"}, {"seat": 1, "say": "higher", "card": "AD"},
        {"seat": 1, "say": "scores", "points": 20, "sequences": [{"suit": "D", "top": "A", "length": 3}]}]})
    text = plain(render.board(view, None, 0.0))
    assert "meld talk: you 20, seat 1 how high?, you top 9♥, seat 1 higher A♦" in text, text
    assert "melds: seat 1 20 (run of 3 to A♦)" in text, text
    # equal sequences, neither in trumps: nobody scores, and only the talk says what was held
    view = _view("klaberjass", {"trump": "H", "meld_points": [0, 0], "melds": [
        {"seat": 0, "say": "value", "value": 50}, {"seat": 1, "say": "how_high"},
        {"seat": 0, "say": "top", "card": "QS"}, {"seat": 1, "say": "same", "card": "QD"},
        {"seat": None, "say": "trump_check", "seat0_trump": False, "seat1_trump": False, "result": None}]})
    assert ("meld talk: you 50, seat 1 how high?, you top Q♠, seat 1 same Q♦, equal: nobody scores "
            "sequences") in plain(render.board(view, None, 0.0))
    # the winner's own statement says no more than the melds line; nobody's meld: no talk
    view = _view("klaberjass", {"trump": "H", "meld_points": [50, 0], "melds": [
        {"seat": 0, "say": "value", "value": 50}, {"seat": 1, "say": "good"},
        {"seat": 0, "say": "scores", "points": 50, "sequences": [{"suit": "S", "top": "A", "length": 4}]}]})
    assert "meld talk" not in plain(render.board(view, None, 0.0))
    view = _view("jojotte", {"melds": {"points": [0, 0], "dialogue": [
        {"seat": 1, "say": "quartet none"}, {"seat": 0, "say": "good"},
        {"seat": 1, "say": "length 0"}, {"seat": 0, "say": "good"}]}})
    assert "meld talk" not in plain(render.board(view, None, 0.0))
    view = _view("jojotte", {"melds": {"points": [100, 20], "dialogue": [
        {"seat": 1, "say": "quartet Q"}, {"seat": 0, "say": "not_good 9"},
        {"seat": 0, "say": "scores", "quartets": ["9"], "points": 100},
        {"seat": 1, "say": "length 3"}, {"seat": 0, "say": "good"},
        {"seat": 1, "say": "scores", "points": 20, "sequences": [{"suit": "S", "top": "K", "length": 3}]}]}})
    text = plain(render.board(view, None, 0.0))
    # four queens were stated: in seat 1's hand, though its quartet lost (JJ-5.5)
    assert "meld talk: seat 1 quartet Q, you not good, 9, seat 1 length 3" in text, text
    # "not good" over nothing stated ("length 0") by the one who scores: the melds line says it
    view = _view("jojotte", {"melds": {"points": [20, 0], "dialogue": [
        {"seat": 1, "say": "quartet none"}, {"seat": 0, "say": "good"}, {"seat": 1, "say": "length 0"},
        {"seat": 0, "say": "not_good 3"},
        {"seat": 0, "say": "scores", "points": 20, "sequences": [{"suit": "D", "top": "9", "length": 3}]}]}})
    assert "meld talk" not in plain(render.board(view, None, 0.0))


def test_klaberjass_calls_say_what_they_do():
    """At a schmeiss table the answer read "accept" / "refuse" (in Jo-Jotte "accept" takes the
    turn-up: here it throws the deal in, KL-A7), and "keep", "declare", "conceal" said nothing
    of what they keep, score or hide."""
    from engine_service.transport.codec import action_message

    view = _view("klaberjass", {"auction_state": "SCHMEISS_ANSWER"})
    labels = [render.action_text(action_message(n), view).plain for n in ("accept", "refuse")]
    assert labels == ["accept (deal thrown in)", "refuse (caller plays)"], labels
    assert render.action_text(action_message("keep"), view).plain == "keep (no exchange)"
    assert render.action_text(action_message("declare"), view).plain == "declare (score them)"
    assert render.action_text(action_message("conceal"), view).plain == "conceal (say none)"
    # within the actions' box on 80 columns (25 columns of text): no label wraps
    assert all(len(render.action_text(action_message(n), view).plain) <= 25 for n in render.KLABERJASS_GLOSSES)
    # the event log says what was done, without the glosses of the choice
    from engine_service.transport.generated import card_games_pb2

    event = card_games_pb2.WatchMatchResponse(kind=match_pb2.EVENT_KIND_ACTION, seq=4, seat=1,
                                              action=action_message("declare"), view=view)
    assert render.event_text(event, None, 0).plain == "   4 seat 1: declare"
    # Jo-Jotte's accept takes the turn-up: no gloss there
    assert render.action_text(action_message("accept"), _view("jojotte", {})).plain == "accept"


def test_the_header_reads_as_words():
    """The header read "phase dix_window" / "phase meld_declaration", and at the end "phase
    over ... match over: <winner>", which wrapped on 80 columns beside a bot's name."""
    view = match_pb2.View(game="klaberjass", seat=0, hand_sizes=[9, 9], phase="dix_window", to_act=0,
                          status=match_pb2.MATCH_STATUS_ACTIVE)
    assert "phase dix window" in render.header_text(view, None, 0.0).plain
    summary = match_pb2.MatchSummary()
    summary.seats.add(seat=0, kind=match_pb2.SEAT_KIND_OPEN, taken=True, player_name="ada")
    summary.seats.add(seat=1, kind=match_pb2.SEAT_KIND_BOT, bot="heuristic")
    over = match_pb2.View(game="klaberjass", seat=0, hand_sizes=[0, 0], phase="over", over=True, winners=[1],
                          seq=149, status=match_pb2.MATCH_STATUS_FINISHED)
    text = render.header_text(over, summary, 0.0).plain
    assert "phase" not in text and text.endswith("match over: heuristic bot (seat 1)") and len(text) <= 78, text


def test_a_pulkas_premium_and_moshla_are_explained():
    """GJ-8: after a pulka's last deal the premium and moshla go on the totals, not on the
    deal's scores; the deal results showed the deal scores alone, so the score column jumped
    by them with no word why. The rulebook's example 15.6 (pulka II, default options)."""
    pulka_one = {"trump": "S", "bids": [0, 0, 0, 1], "taken": [1, 0, 0, 0], "scores": [10, 50, 50, -200],
                 "premium": [0, 0, 0, 0], "moshla": [0, 0, 0, 0]}
    deal = {"trump": "NT", "bids": [4, 2, 1, 1], "taken": [4, 2, 0, 3], "scores": [250, 150, -200, 30]}
    last = dict(deal, premium=[250, 0, 0, 0], moshla=[0, -200, -200, -40])
    view = _view("georgian_joker", {"options": {"pulka_premium": True}}, [pulka_one, deal, deal, deal, last],
                 hand_sizes=[9, 9, 9, 9])
    text = plain(render.deal_results_table(view, None))
    row = next(line for line in text.splitlines() if line.strip().startswith("pulka 2"))
    assert row.split() == ["pulka", "2", "+250", "premium", "-200", "moshla", "-200", "moshla", "-40", "moshla"], row
    assert "pulka 1" not in text  # nobody qualified: no row of zeros
    lines = [line.plain.strip() for line in render.deal_result_lines(view, None)]
    assert lines[-1] == ("pulka 2 settled: premium you +250 (every bid made: the best deal again); moshla "
                         "seat 1 -200, seat 2 -200, seat 3 -40 (their best deal cancelled)"), lines
    assert lines[0] == ("deal 5 scored, points (tricks taken/bid): you 250 (4/4), seat 1 150 (2/2), "
                        "seat 2 -200 (0/1, khishti), seat 3 30 (3/1)"), lines
    assert "seat 3 -200 (0/1, khishti)" in render.deal_result_lines(_view(
        "georgian_joker", {}, [pulka_one], hand_sizes=[1, 1, 1, 1]), None)[0].plain  # GJ-7.4
    nobody = _view("georgian_joker", {"options": {"pulka_premium": True}}, [pulka_one], hand_sizes=[1, 1, 1, 1])
    assert render.deal_result_lines(nobody, None)[-1].plain.strip() == \
        "pulka 1 settled: nobody made every bid, no premium or moshla"
    off = _view("georgian_joker", {"options": {"pulka_premium": False}}, [pulka_one], hand_sizes=[1, 1, 1, 1])
    assert "pulka_premium off" in render.deal_result_lines(off, None)[-1].plain
    japanese = _view("japanese_joker", {}, [{"trump": "D", "taken": [8, 10], "scores": [0, 2]}])
    assert len(render.deal_result_lines(japanese, None)) == 1


def test_a_high_joker_lead_a_trump_may_beat_does_not_promise_the_trick():
    """GJ-6.6 (table option ``high_joker_lead_trumpable``): a trump beats a high joker lead
    naming a non-trump suit, so its label says "high", not "takes"; the lead naming the trump,
    a no-trump deal and the default rules keep "takes". The play screen, the watch log and
    the admin's inspect pass the match's summary for its options."""
    from engine_service.transport.generated import card_games_pb2

    lead = cards_pb2.Action(notation="play:X1:high:S", kind=cards_pb2.ACTION_KIND_PLAY, verb="play",
                            card=cards_pb2.Card(code="X1", rank=cards_pb2.RANK_JOKER),
                            joker_mode=cards_pb2.JOKER_MODE_HIGH, named_suit=cards_pb2.SUIT_SPADES)

    def view(trump):
        v = match_pb2.View(game="georgian_joker")
        v.table.update({"trump": trump})
        return v

    def summary(**options):
        s = match_pb2.MatchSummary(game="georgian_joker")
        for name, value in options.items():
            s.options[name].bool_value = value
        return s

    on = summary(high_joker_lead_trumpable=True)
    assert render.action_text(lead, view("H"), on).plain == "Joker1 high: top ♠ due"
    assert render.action_text(lead, view("S"), on).plain == "Joker1 takes: top ♠ due"  # names the trump
    assert render.action_text(lead, view("NT"), on).plain == "Joker1 takes: top ♠ due"  # nothing to trump
    assert render.action_text(lead, view("H"), summary()).plain == "Joker1 takes: top ♠ due"  # GJ-5.4
    assert render.action_text(lead, view("H"), summary(high_joker_lead_trumpable=False)).plain \
        == "Joker1 takes: top ♠ due"
    low = cards_pb2.Action(notation="play:X1:low:S", kind=cards_pb2.ACTION_KIND_PLAY, verb="play",
                           card=cards_pb2.Card(code="X1"), joker_mode=cards_pb2.JOKER_MODE_LOW,
                           named_suit=cards_pb2.SUIT_SPADES)
    assert render.action_text(low, view("H"), on).plain == "Joker1 under: any ♠ due"
    event = card_games_pb2.WatchMatchResponse(kind=match_pb2.EVENT_KIND_ACTION, seq=7, seat=1, action=lead,
                                              view=view("H"))
    assert "Joker1 high: top ♠ due" in render.event_text(event, on, 0).plain


def test_a_joker_says_what_it_does_and_what_its_lead_demands():
    """A joker lead said "asks ♠" whether the highest spade was due (GJ-5.4 ``high``, every
    Japanese Joker lead, JJK-5.4) or any spade (GJ-5.5 ``low``), and a Japanese Joker joker
    (which always takes, JJK-6.1) said nothing of what it does."""
    def play(code, mode=cards_pb2.JOKER_MODE_UNSPECIFIED, suit=cards_pb2.SUIT_UNSPECIFIED):
        return cards_pb2.Action(kind=cards_pb2.ACTION_KIND_PLAY, verb="play", card=cards_pb2.Card(code=code),
                                joker_mode=mode, named_suit=suit)

    assert render.action_text(play("X2", cards_pb2.JOKER_MODE_LOW, cards_pb2.SUIT_HEARTS)).plain == \
        "Joker2 under: any ♥ due"
    assert render.action_text(play("X1", suit=cards_pb2.SUIT_CLUBS)).plain == "Joker1 takes: top ♣ due"  # JJK
    assert render.action_text(play("X1")).plain == "Joker1 takes"  # a Japanese Joker follow
    assert render.action_text(play("AS")).plain == "play A♠"
    # what the actions' box holds on one row of an 80-column terminal, beside its scrollbar
    assert max(len(render.action_text(play(j, m, s)).plain) for j in ("X1", "X2")
               for m in (cards_pb2.JOKER_MODE_HIGH, cards_pb2.JOKER_MODE_LOW)
               for s in (cards_pb2.SUIT_SPADES, cards_pb2.SUIT_CLUBS)) <= 23
    trick = match_pb2.Trick()
    trick.plays.add(seat=1, card=cards_pb2.Card(code="X1"), joker_mode=cards_pb2.JOKER_MODE_LOW,
                    named_suit=cards_pb2.SUIT_CLUBS)
    trick.plays.add(seat=2, card=cards_pb2.Card(code="X2"), joker_mode=cards_pb2.JOKER_MODE_HIGH)
    assert render.trick_text(trick, None, 0).plain == "seat 1: Joker1 low asks any ♣   seat 2: Joker2 high"
    high = match_pb2.Trick()
    high.plays.add(seat=1, card=cards_pb2.Card(code="X1"), joker_mode=cards_pb2.JOKER_MODE_HIGH,
                   named_suit=cards_pb2.SUIT_SPADES)
    assert render.trick_text(high, None, 0).plain == "seat 1: Joker1 high asks top ♠"
    japanese = match_pb2.Trick()
    japanese.plays.add(seat=1, card=cards_pb2.Card(code="X2"), named_suit=cards_pb2.SUIT_DIAMONDS)
    assert render.trick_text(japanese, None, 0).plain == "seat 1: Joker2 asks top ♦"


def test_a_japanese_joker_action_says_when_it_plays_a_column():
    """The actions listed hand cards and face-up column cards alike ("play Q♠" beside "play
    8♠"): an up card now says so, and one of the last two columns says it clears the table
    (JJK-4.2, 4.3: the hidden cards, and the other up card, go to the hand)."""
    def play(code):
        return cards_pb2.Action(kind=cards_pb2.ACTION_KIND_PLAY, verb="play", card=cards_pb2.Card(code=code))

    five = _view("japanese_joker", {"columns_up": [["QS", "9C", "6H", "X2", "TD"], ["AS"]],
                                    "column_counts": [5, 5]})
    assert render.action_text(play("QS"), five).plain == "play Q♠ (column)"
    assert render.action_text(play("X2"), five).plain == "Joker2 takes (column)"
    assert render.action_text(play("8S"), five).plain == "play 8♠"  # from the hand
    assert render.action_text(play("AS"), five).plain == "play A♠"  # the other player's column: not ours
    two = _view("japanese_joker", {"columns_up": [["QS", "9C"], []], "column_counts": [2, 0]})
    assert render.action_text(play("9C"), two).plain == "play 9♣ (clears table)"
    spectator = _view("japanese_joker", {"columns_up": [["QS"], []], "column_counts": [2, 0]})
    spectator.ClearField("seat")
    assert render.action_text(play("QS"), spectator).plain == "play Q♠"


def test_a_japanese_joker_table_play_says_what_went_to_the_hand():
    """JJK-9.2: "player p moved k hidden cards from the table to the hand" is public, with the
    up card a cleared table moved; the log said "seat 1: play K♦" for a hand card and a column
    card alike. The owner's own line names the cards it received (its view only)."""
    from engine_service.transport.generated import card_games_pb2

    def event(seat, notation, code, deal_actions, me_view=None):
        view = _view("japanese_joker", {"deal_actions": deal_actions})
        if me_view is None:
            view.ClearField("seat")
        else:
            view.seat = me_view
        return card_games_pb2.WatchMatchResponse(
            kind=match_pb2.EVENT_KIND_ACTION, seq=9, seat=seat, view=view,
            action=cards_pb2.Action(notation=notation, kind=cards_pb2.ACTION_KIND_PLAY, verb="play",
                                    card=cards_pb2.Card(code=code)))

    column = [{"seat": 1, "action": "play:KD", "from": "table", "moved_hidden": 1, "moved_public": []}]
    assert render.event_text(event(1, "play:KD", "KD", column), None, None).plain == \
        "   9 seat 1: play K♦ (column: a hidden card to the hand)"
    cleared = [{"seat": 1, "action": "play:9C", "from": "table", "moved_hidden": 2, "moved_public": ["X2"]}]
    assert render.event_text(event(1, "play:9C", "9C", cleared), None, 0).plain == \
        "   9 seat 1: play 9♣ (table cleared: 2 hidden cards and Joker2 to the hand)"
    own = [{"seat": 0, "action": "play:9C", "from": "table", "moved_hidden": 2, "moved_public": ["QS"],
            "moved_cards": ["AH", "7D"]}]
    assert render.event_text(event(0, "play:9C", "9C", own, me_view=0), None, 0).plain == \
        "   9 you: play 9♣ (table cleared: A♥ 7♦ and Q♠ to your hand)"
    hand = [{"seat": 1, "action": "play:KD", "from": "hand"}]
    assert render.event_text(event(1, "play:KD", "KD", hand), None, None).plain == "   9 seat 1: play K♦"


def test_georgian_joker_bids_are_added_up_against_the_tricks():
    """The four bids never add up to the cards dealt (GJ-4.4): the board showed each seat's
    bid alone, the sum (is the deal over- or underbid?) left to mental arithmetic; the
    dealer's forbidden bid (GJ-4.3) goes on the same line."""
    def lines(table):
        view = _view("georgian_joker", table, hand_sizes=[3, 3, 3, 3])
        return [line.plain for line in render.table_lines(view, None) if line.plain.startswith("bids:")]

    assert lines({"cards_per_player": 3, "bids": [None, None, None, None]}) == []
    assert lines({"cards_per_player": 3, "bids": [None, 1, 0, 1], "forbidden_bid": 1}) == \
        ["bids: 2 so far, for 3 tricks; the dealer may not bid 1"]  # the rulebook's 15.1
    assert lines({"cards_per_player": 3, "bids": [0, 1, 0, 1]}) == ["bids: 2 for 3 tricks, 1 under"]
    assert lines({"cards_per_player": 9, "bids": [2, 2, 3, 4]}) == ["bids: 11 for 9 tricks, 2 over"]
    assert lines({"cards_per_player": 1, "bids": [1, None, None, None]}) == ["bids: 1 so far, for 1 trick"]


def test_japanese_joker_says_the_first_card_comes_from_the_hand():
    """JJK-5.1: before a player's first card of the deal the up cards are not available; the
    actions left them out without a word. During the trump choice no column is dealt yet
    (JJK-3.7): "none" read as a table already played out."""
    columns = [[{"up": "9H", "on_table": True}], [{"up": "QH", "on_table": True}]]
    first = _view("japanese_joker", {"declarer": 1, "played_any": [False, True], "columns": columns},
                  phase="playing")
    text = [line.plain for line in render.table_lines(first, None)]
    assert "declarer: seat 1; your first card comes from the hand" in text, text
    later = _view("japanese_joker", {"declarer": 1, "played_any": [True, True], "columns": columns},
                  phase="playing")
    assert "declarer: seat 1" in [line.plain for line in render.table_lines(later, None)]
    choosing = _view("japanese_joker", {"declarer": 0, "played_any": [False, False], "columns": [[], []]},
                     phase="trump_choice")
    text = [line.plain for line in render.table_lines(choosing, None)]
    assert "declarer: you" in text and "your columns: not dealt yet" in text, text


def test_georgian_joker_names_the_trump_chooser_only_while_the_choice_is_awaited():
    """After the last nine-card deal the table has no trump and still names the chooser:
    the final screen read "trump chosen by: p3" as if a choice were pending."""
    table = {"deal": 16, "deals_in_match": 16, "pulka": 4, "cards_per_player": 9, "trump_chooser": 3, "trump": None}
    choosing = _view("georgian_joker", table, hand_sizes=[3, 3, 3, 3], phase="trump_choice")
    assert "trump chosen by: seat 3" in [line.plain for line in render.table_lines(choosing, None)]
    over = _view("georgian_joker", table, hand_sizes=[0, 0, 0, 0], phase="match_over", over=True)
    assert not any("chosen by" in line.plain for line in render.table_lines(over, None))


def test_an_event_line_says_who_took_the_trick_it_completed():
    """The logs (screens, --autoplay, --plain) listed every card and never who took a trick."""
    from engine_service.transport.generated import card_games_pb2

    def event(seat, code, view):
        return card_games_pb2.WatchMatchResponse(
            kind=match_pb2.EVENT_KIND_ACTION, seq=8, seat=seat, view=view,
            action=cards_pb2.Action(notation=f"play:{code}", kind=cards_pb2.ACTION_KIND_PLAY, verb="play",
                                    card=cards_pb2.Card(code=code)))

    done = match_pb2.View(game="georgian_joker", seat=0, hand_sizes=[2, 2, 2, 2])
    for seat, code in ((1, "X1"), (2, "AC"), (3, "9C"), (0, "7C")):
        done.last_trick.plays.add(seat=seat, card=cards_pb2.Card(code=code))
    done.last_trick.winner = 1
    assert render.event_text(event(0, "7C", done), None, 0).plain == "   8 you: play 7♣  → trick to seat 1"
    going = match_pb2.View(game="georgian_joker", seat=0, hand_sizes=[2, 2, 2, 2])
    going.CopyFrom(done)
    going.trick.plays.add(seat=1, card=cards_pb2.Card(code="KH"))  # the next trick's lead: not this one's end
    assert render.event_text(event(1, "KH", going), None, 0).plain == "   8 seat 1: play K♥"
    # Klaberjass / Jo-Jotte: the card points the trick carried (Trick.points), on the event line
    # and on the board's last trick
    kl = match_pb2.View(game="klaberjass", seat=0, hand_sizes=[3, 3])
    kl.last_trick.plays.add(seat=1, card=cards_pb2.Card(code="TH"))
    kl.last_trick.plays.add(seat=0, card=cards_pb2.Card(code="AH"))
    kl.last_trick.winner, kl.last_trick.points = 0, 21
    assert render.event_text(event(0, "AH", kl), None, 0).plain == "   8 you: play A♥  → trick to you (+21)"
    assert render.trick_text(kl.last_trick, None, 0).plain.endswith("→ you (+21)")
    assert render.event_text(event(3, "9C", done), None, 0).plain == "   8 seat 3: play 9♣"  # not the last card


def test_a_waiting_board_names_no_dealer_before_the_draw_is_shown():
    """A waiting view withholds the first-dealer draw (``dealer`` 0, the table's draw keys
    null: docs/api.md): the board marked seat 0 "D" as if it dealt, and Japanese Joker's
    board failed on the null declarer. Once started, the dealer is marked."""
    waiting = _view("japanese_joker", {"declarer": None, "first_declarer": None, "trump": None,
                                       "columns_up": [[], []], "column_counts": [0, 0]},
                    hand_sizes=[0, 0], status=match_pb2.MATCH_STATUS_WAITING)
    text = plain(render.board(waiting, None, 0.0))
    assert "drawn at the start" in text and " D " not in text and "D you" not in text, text
    started = _view("klaberjass", {"trump": None, "turn_up": "TD"}, status=match_pb2.MATCH_STATUS_ACTIVE)
    assert "D" in plain(render.board(started, None, 0.0)).split("you")[0].splitlines()[-1]


def test_the_plain_outputs_print_the_meld_talk_once_as_it_grows():
    """--autoplay and clients.watch --plain printed the meld steps (``declare``, ``conceal``)
    but never the dialogue the board's "meld talk" line shows (KL-5.5, JJ-5.9): each new
    state of it is printed once, nothing while it says nothing or the same."""
    import io

    from clients.play import print_meld_talk

    out = io.StringIO()
    console = Console(file=out, width=200, force_terminal=False)
    talk = [{"seat": 0, "say": "value", "value": 20}, {"seat": 1, "say": "how_high"}]
    said = print_meld_talk(console, _view("klaberjass", {"trump": "D", "melds": []}), None, 0, None)
    assert said is None and out.getvalue() == ""
    said = print_meld_talk(console, _view("klaberjass", {"trump": "D", "melds": talk}), None, 0, said)
    said = print_meld_talk(console, _view("klaberjass", {"trump": "D", "melds": talk}), None, 0, said)
    more = talk + [{"seat": 0, "say": "top", "card": "9H"}]
    said = print_meld_talk(console, _view("klaberjass", {"trump": "D", "melds": more}), None, 1, said)
    assert [line.strip() for line in out.getvalue().splitlines()] == [
        "meld talk: you 20, seat 1 how high?", "meld talk: seat 0 20, you how high?, seat 0 top 9♥"]
    jojotte = _view("jojotte", {"melds": {"points": [0, 0], "dialogue": [
        {"seat": 1, "say": "quartet Q"}, {"seat": 0, "say": "not_good 9"}]}})
    assert print_meld_talk(console, jojotte, None, None, said) == "seat 1 quartet Q, seat 0 not good, 9"
    georgian = _view("georgian_joker", {"trump": "D"}, hand_sizes=[1, 1, 1, 1])
    assert print_meld_talk(console, georgian, None, 0, "unchanged") == "unchanged"


def test_a_jo_jotte_meld_step_says_which_category_it_declares():
    """JJ-A21: the optional declaration is four steps, quartets twice then sequences twice;
    the actions read "declare" / "conceal" without saying which (the view's meld_category)."""
    declare = cards_pb2.Action(notation="declare", verb="declare")
    assert render.action_text(declare, _view("jojotte", {"meld_category": "quartets"})).plain == "declare (quartets)"
    conceal = cards_pb2.Action(notation="conceal", verb="conceal")
    assert render.action_text(conceal, _view("jojotte", {"meld_category": "sequences"})).plain \
        == "conceal (sequences)"
    assert render.action_text(declare, _view("jojotte", {"meld_category": None})).plain == "declare"


# ---- pinned by helper 3's mutants of clients/render.py --------------------------------------


def test_the_hand_reads_card_by_card():
    """Each card of the hand stands apart ("10♥ 9♥", not "10♥9♥"), and an empty hand says so
    rather than leaving the line blank."""
    view = match_pb2.View(game="klaberjass", seat=0, hand_sizes=[3, 3],
                          hand=[cards_pb2.Card(code=c) for c in ("TH", "9H", "X1")])
    assert render.hand_text(view).plain == "10♥ 9♥ Joker1"
    assert render.hand_text(match_pb2.View(game="klaberjass", seat=0, hand_sizes=[0, 0])).plain == "(no cards)"


def test_an_exchange_without_its_cards_says_what_it_does():
    """Without a view (or with one that does not show the turn-up) an exchange still says what
    it does: Jo-Jotte's ``exchange:7H`` gives its seven for the turn-up (JJ-4.2, NOTATION.md
    2.2), and Klaberjass's bare ``exchange`` names no card rather than a hidden one."""
    jj = cards_pb2.Action(notation="exchange:7H", kind=cards_pb2.ACTION_KIND_EXCHANGE, verb="exchange",
                          card=cards_pb2.Card(code="7H"))
    assert render.action_text(jj).plain == "exchange 7♥ for the turn-up"
    kl = cards_pb2.Action(notation="exchange", kind=cards_pb2.ACTION_KIND_EXCHANGE, verb="exchange")
    assert render.action_text(kl, _view("klaberjass", {"trump": "D"})).plain == "exchange"


def test_a_georgian_joker_joker_that_follows_says_whether_it_takes():
    """NOTATION.md: ``play:X1:high`` / ``play:X1:low`` follow a trick with a joker "taking or
    under" (GJ-5.2: played to win, or declining the trick)."""
    def follow(mode):
        return cards_pb2.Action(notation="play:X1", kind=cards_pb2.ACTION_KIND_PLAY, verb="play",
                                card=cards_pb2.Card(code="X1"), joker_mode=mode)

    assert render.action_text(follow(cards_pb2.JOKER_MODE_HIGH)).plain == "play Joker1 high (takes)"
    assert render.action_text(follow(cards_pb2.JOKER_MODE_LOW)).plain == "play Joker1 low (under)"


def test_a_seat_yet_to_bid_has_an_empty_bid_cell():
    """Georgian Joker: the bids of seats yet to bid are null in the table (GJ-4.1 order); their
    cell stays empty, never "None", and a bid of 0 (the pass, NOTATION.md ``bid:0``) reads 0."""
    view = _view("georgian_joker", {"cards_per_player": 3, "bids": [None, 1, 0, None]}, hand_sizes=[3, 3, 3, 3])
    header, *rows = [line.split() for line in plain(render.seats_table(view, None, 0.0)).splitlines()]
    assert header[:5] == ["player", "cards", "tricks", "bid", "score"], header
    assert [row[-2:] for row in rows] == [["3", "0"], ["0", "1"], ["0", "0"], ["3", "0"]], rows


def test_each_seat_row_marks_its_own_turn_deal_cards_and_tricks():
    """A seat's row: ▶ for the seat to act, D for the dealer (once the match has started: the
    waiting view withholds the draw, docs/api.md), its own count of cards and tricks."""
    view = _view("klaberjass", {"trump": "S"}, hand_sizes=[5, 6], to_act=1, dealer=0,
                 status=match_pb2.MATCH_STATUS_ACTIVE)
    view.scores.tricks_taken.extend([1, 2])
    rows = [line.split() for line in plain(render.seats_table(view, None, 0.0)).splitlines()[1:]]
    assert rows == [["D", "you", "5", "1"], ["▶", "seat", "1", "6", "2"]], rows
    view.status, view.to_act = match_pb2.MATCH_STATUS_WAITING, 0
    view.ClearField("to_act")
    rows = [line.split() for line in plain(render.seats_table(view, None, 0.0)).splitlines()[1:]]
    assert rows == [["you", "5", "1"], ["seat", "1", "6", "2"]], rows


def test_a_trick_shows_the_jo_and_jotte_announced_with_its_cards():
    """JJ-7.2: "jo" on the trump king while its player holds the trump queen, "jotte" on that
    queen later: the tricks show them beside the cards (NOTATION.md ``play:KS:jo``)."""
    trick = match_pb2.Trick()
    trick.plays.add(seat=1, card=cards_pb2.Card(code="KS"), announcement=cards_pb2.ANNOUNCEMENT_JO)
    trick.plays.add(seat=0, card=cards_pb2.Card(code="AS"))
    assert render.trick_text(trick, None, 0).plain == "seat 1: K♠ jo   you: A♠"
    later = match_pb2.Trick()
    later.plays.add(seat=1, card=cards_pb2.Card(code="QS"), announcement=cards_pb2.ANNOUNCEMENT_JOTTE)
    assert render.trick_text(later, None, 0).plain == "seat 1: Q♠ jotte"


def test_a_quartet_of_tens_reads_as_the_cards_do():
    """The melds line names a quartet's rank as a card shows it: four tens are "four 10" (the
    hand shows 10♠), not the notation's "T" (JJ-5.9: the quartets scored are public)."""
    view = _view("jojotte", {"melds": {"points": [100, 0], "dialogue": [
        {"seat": 0, "say": "scores", "quartets": ["T"], "points": 100}]}})  # JJ-5.1: 100 each
    assert "melds: you 100 (four 10)" in plain(render.board(view, None, 0.0))


def test_a_trick_worth_no_card_points_says_so():
    """Klaberjass and Jo-Jotte tricks carry their card points (``Trick.points``), a trick of
    sevens and eights none: "(+0)" says it, where the games without card points show nothing."""
    trick = match_pb2.Trick(winner=0, points=0)
    trick.plays.add(seat=1, card=cards_pb2.Card(code="7C"))
    trick.plays.add(seat=0, card=cards_pb2.Card(code="8C"))
    assert render.trick_text(trick, None, 0).plain == "seat 1: 7♣   you: 8♣  → you (+0)"
    trick.ClearField("points")
    assert render.trick_text(trick, None, 0).plain == "seat 1: 7♣   you: 8♣  → you"


def test_the_meld_talk_says_a_stated_length_and_keeps_quiet_on_a_scored_quartet():
    """Under ``kl_sequence_compare = length`` (KL-5.4, KL-A11) the value statement carries the
    sequence's length (KL-5.5 step 1), public: "you 50 (5 cards)". A Jo-Jotte player stating the
    quartet he then scores (JJ-5.9) says no more than the melds line: no meld talk."""
    view = _view("klaberjass", {"trump": "D", "meld_points": [0, 0], "melds": [
        {"seat": 0, "say": "value", "value": 50, "length": 5}, {"seat": 1, "say": "how_high"}]})
    assert "meld talk: you 50 (5 cards), seat 1 how high?" in plain(render.board(view, None, 0.0))
    view = _view("jojotte", {"melds": {"points": [100, 0], "dialogue": [
        {"seat": 0, "say": "quartet J"}, {"seat": 1, "say": "good"},
        {"seat": 0, "say": "scores", "quartets": ["J"], "points": 100}]}})
    text = plain(render.board(view, None, 0.0))
    assert "melds: you 100 (four J)" in text and "meld talk" not in text, text


def test_a_trump_check_won_by_seat_0_is_not_read_as_equal():
    """KL-5.5 step 4: after ``same`` the trump sequence wins; its winner may be seat 0, which
    read as "equal: nobody scores sequences" wherever a winner of 0 counted as none."""
    view = _view("klaberjass", {"trump": "S", "meld_points": [20, 0], "melds": [
        {"seat": 0, "say": "value", "value": 20}, {"seat": 1, "say": "how_high"},
        {"seat": 0, "say": "top", "card": "QS"}, {"seat": 1, "say": "same", "card": "QD"},
        {"seat": None, "say": "trump_check", "seat0_trump": True, "seat1_trump": False, "result": 0},
        {"seat": 0, "say": "scores", "points": 20, "sequences": [{"suit": "S", "top": "Q", "length": 3}]}]})
    assert ("meld talk: you 20, seat 1 how high?, you top Q♠, seat 1 same Q♦, the trump sequence wins"
            in plain(render.board(view, None, 0.0)))


def test_a_forbidden_bid_of_0_is_named():
    """GJ-4.3: the dealer may not bid ``n - s``, which is 0 when the others' bids already add
    up to the tricks; the line names that 0 as it names any other forbidden bid."""
    view = _view("georgian_joker", {"cards_per_player": 3, "bids": [None, 1, 1, 1], "forbidden_bid": 0},
                 hand_sizes=[3, 3, 3, 3])
    assert "bids: 3 so far, for 3 tricks; the dealer may not bid 0" in [
        line.plain for line in render.table_lines(view, None)]


def test_the_georgian_joker_deal_line_names_the_match_length_and_a_forehand_in_seat_0():
    """GJ-11.1: the forehand bids first and leads the first trick, seat 0 included (a forehand
    of 0 went unnamed wherever 0 counted as none); the deal line says how many deals the match
    has (GJ-2.4: 24, GJ-2.5: 16), not the deal's own number twice."""
    table = {"deal": 3, "deals_in_match": 24, "pulka": 1, "cards_per_player": 3, "forehand": 0}
    view = _view("georgian_joker", table, hand_sizes=[3, 3, 3, 3])
    assert "deal: 3 of 24, pulka 1, 3 card(s) each, forehand you" in [
        line.plain for line in render.table_lines(view, None)]


def test_the_jo_jotte_information_card_is_on_the_board():
    """JJ-2.7: the card turned up from the bottom of the stock after the second deal, seen by
    both players (unused in play, but a card neither holds)."""
    view = _view("jojotte", {"turn_up": "AD", "info_card": "9C"})
    assert "information card: 9♣" in plain(render.board(view, None, 0.0))


def test_a_maker_or_nullo_caller_in_seat_0_is_named_and_the_trump_comes_first():
    """Seat 0 is a seat like any other: the Klaberjass maker (KL-3.2) and the Jo-Jotte nullo
    caller (JJ-4.3) in seat 0 went unnamed wherever 0 counted as none. The trump heads the
    table's lines."""
    lines = [line.plain for line in render.table_lines(_view("klaberjass", {"trump": "S", "maker": 0}), None)]
    assert lines[0] == "trump: ♠" and "maker: you" in lines, lines
    contract = {"strain": "D", "bidder": 1, "multiplier": 1, "declarer": 1, "defender": 0,
                "kind": None, "holder": None, "play_strain": None}
    view = _view("jojotte", {"contract": contract, "auction_state": None,
                             "deal_actions": [{"seat": 0, "action": "nullo"}]})
    assert "contract: ♦, declarer seat 1; you called nullo" in plain(render.board(view, None, 0.0))


def test_the_last_deal_says_what_equal_totals_mean():
    """Equal deal totals are scored differently in the two games, and the line says how in the
    rulebooks' terms: Klaberjass's maker then scores nothing (KL-9.3), Jo-Jotte's tie puts the
    trick points in the frozen pot (JJ-9.4 (c), JJ-9.5)."""
    kl_result = {"thrown_in": False, "trump": "H", "maker": 0, "melds": [0, 0], "card_points": [81, 81],
                 "scored": [0, 81]}
    detail = {"bella": [0, 0], "trump_kqj": [0, 0], "deal_totals": [81, 81], "outcome": "equal"}
    view = _view("klaberjass", {"trump": None, "previous_deal": detail}, [kl_result])
    assert " ".join(plain(render.board(view, None, 0.0)).split()).count(
        "you 81, seat 1 81 — equal totals: the maker scores nothing") == 1
    jj_result = {"thrown_in": False, "contract": {"kind": "normal", "strain": "S", "holder": 0, "multiplier": 1},
                 "below": [0, 0], "above": [0, 0]}
    last = {"melds": [0, 0], "jo_jotte": [0, 0], "trick_points": [81, 81], "tricks": [4, 5],
            "comparison": [81, 81], "outcome": "tie", "pot_to": None, "game_winner": None, "rubber_winner": None}
    view = _view("jojotte", {"contract": None, "last_deal": last}, [jj_result])
    assert "you 81, seat 1 81 — a tie: the trick points go to the pot" in " ".join(
        plain(render.board(view, None, 0.0)).split())


def test_a_nullo_deal_is_not_called_doubled():
    """JJ-9.7: a nullo ignores the multiplier (the default ``jj_multiplier_scope``), so the last
    deal's line names no doubling for it, though the auction doubled the contract; under
    ``jj_multiplier_scope = all`` (JJ-A13) its premium is multiplied and the line says so."""
    nullo = {"thrown_in": False, "contract": {"kind": "nullo", "strain": "NT", "holder": 1, "multiplier": 2},
             "below": [0, 0], "above": [0, 200], "pot": 0}
    last = {"tricks": [9, 0], "pot_to": None, "game_winner": None, "rubber_winner": None}
    view = _view("jojotte", {"contract": None, "last_deal": last}, [nullo])
    line = render.last_deal_line(view, None).plain
    assert line == "last deal: nullo no trump, nullo player seat 1: made, no trick taken", line
    summary = match_pb2.MatchSummary(game="jojotte")
    summary.options["jj_multiplier_scope"].string_value = "trick_points"
    assert render.last_deal_line(view, summary).plain == line
    # JJ-A13: under jj_multiplier_scope = all the nullo premium is doubled too, and the line says so
    summary.options["jj_multiplier_scope"].string_value = "all"
    line = render.last_deal_line(view, summary).plain
    assert line == "last deal: nullo no trump doubled, nullo player seat 1: made, no trick taken", line


def test_a_nullo_player_who_took_one_trick_lost():
    """JJ-9.7: the nullo player undertakes to win no trick; one trick taken loses it."""
    nullo = {"thrown_in": False, "contract": {"kind": "nullo", "strain": "NT", "holder": 0, "multiplier": 1},
             "below": [0, 0], "above": [0, 200], "pot": 0}
    last = {"tricks": [1, 8], "pot_to": None, "game_winner": None, "rubber_winner": None}
    line = render.last_deal_line(_view("jojotte", {"contract": None, "last_deal": last}, [nullo]), None).plain
    assert line == "last deal: nullo no trump, nullo player you: lost, 1 trick taken", line


def test_a_slam_of_eight_tricks_is_lost_and_a_pot_won_by_seat_0_is_named():
    """JJ-9.6: a slam is all nine tricks, eight lose it; JJ-9.5: the frozen pot goes to the
    winner of the next decided deal, seat 0 too (unnamed wherever 0 counted as none)."""
    slam = {"thrown_in": False, "contract": {"kind": "slam", "strain": "S", "holder": 0, "multiplier": 1},
            "below": [0, 0], "above": [0, 500], "pot": 0}
    last = {"melds": [0, 0], "jo_jotte": [0, 0], "trick_points": [140, 22], "tricks": [8, 1],
            "comparison": [140, 22], "outcome": "declarer_more", "pot_to": 0, "game_winner": None,
            "rubber_winner": None}
    line = render.last_deal_line(_view("jojotte", {"contract": None, "last_deal": last}, [slam]), None).plain
    assert line.endswith("— the declarer has more, slam lost; the pot to you"), line


def test_a_game_and_rubber_won_by_seat_0_are_named():
    """JJ-10.1, JJ-10.3: the deal that ends a game, and the one that ends the rubber, say who won them;
    seat 0 went unnamed wherever 0 counted as none."""
    normal = {"thrown_in": False, "contract": {"kind": "normal", "strain": "H", "holder": 0, "multiplier": 1},
              "below": [90, 0], "above": [0, 0], "pot": 0}
    last = {"melds": [0, 0], "jo_jotte": [0, 0], "trick_points": [90, 72], "tricks": [5, 4],
            "comparison": [90, 72], "outcome": "declarer_more", "pot_to": None, "game_winner": 0,
            "rubber_winner": 0}
    line = render.last_deal_line(_view("jojotte", {"contract": None, "last_deal": last}, [normal]), None).plain
    assert line.endswith("; game to you; rubber to you"), line


def test_the_columns_of_the_viewer_in_seat_1_are_its_own():
    """JJK-4: "your columns" is the viewer's row whichever seat it holds; the other row is
    named by its seat."""
    view = _view("japanese_joker", {"declarer": 0, "columns": [[{"up": "9H", "on_table": True}],
                                                               [{"up": "QH", "on_table": True}]]})
    view.seat = 1
    lines = [line.plain for line in render.columns_lines(view, None)]
    assert lines == ["seat 0's columns: [9♥/▒▒]", "your columns: [Q♥/▒▒]"], lines


def test_the_countdown_turns_red_under_ten_seconds():
    """The time left for a decision (the server plays the auto-move after it): green, yellow
    under 20 s, red under 10 s, and never below 0."""
    view = match_pb2.View(game="klaberjass", seat=0, hand_sizes=[9, 9])
    view.deadline.FromNanoseconds(100 * 10**9)
    assert [(t.plain, str(t.style)) for t in (render.deadline_text(view, now) for now in (75, 85, 93, 105))] == [
        ("  25 s", "bold green"), ("  15 s", "bold yellow"), ("   7 s", "bold red"), ("   0 s", "bold red")]


def test_a_match_over_without_a_winner_says_so():
    """docs/api.md (View ``winners``): nobody wins after an abandonment or a termination; the
    header then reads "no winner", not a blank after "match over:"."""
    over = match_pb2.View(game="klaberjass", seat=0, hand_sizes=[0, 0], phase="over", over=True,
                          status=match_pb2.MATCH_STATUS_TERMINATED)
    assert render.header_text(over, None, 0.0).plain.endswith("match over: no winner")


def test_the_header_says_whose_turn_it_is_and_which_seat_waits_for_a_player():
    """"your turn" only when the seat to act is the viewer's (the header said it to a player
    whose opponent was to act); a waiting table names the open seats, not the taken ones."""
    view = match_pb2.View(game="klaberjass", seat=0, hand_sizes=[9, 9], phase="auction", to_act=1,
                          status=match_pb2.MATCH_STATUS_ACTIVE)
    assert render.header_text(view, None, 0.0).plain.endswith("seat 1 to act")
    view.to_act = 0
    assert render.header_text(view, None, 0.0).plain.endswith("your turn")
    summary = match_pb2.MatchSummary(seats=[
        match_pb2.SeatInfo(seat=0, kind=match_pb2.SEAT_KIND_OPEN, taken=True, player_name="ada"),
        match_pb2.SeatInfo(seat=1, kind=match_pb2.SEAT_KIND_OPEN)])
    waiting = match_pb2.View(game="klaberjass", seat=0, hand_sizes=[0, 0], phase="dealing",
                             status=match_pb2.MATCH_STATUS_WAITING)
    assert render.header_text(waiting, summary, 0.0).plain.endswith("waiting for a player in seat 1")


def test_the_last_deal_line_stays_at_the_end_and_goes_once_a_contract_is_settled():
    """README: the board shows what the last deal came to "until the next trump is fixed", and
    at the match's end (its final trump still on the table); a Jo-Jotte contract settled
    before its trump is shown (the exchange and nullo window) ends it too."""
    kl_result = {"thrown_in": False, "trump": "H", "maker": 0, "melds": [0, 0], "card_points": [100, 62],
                 "scored": [162, 0]}
    detail = {"bella": [0, 0], "trump_kqj": [0, 0], "deal_totals": [100, 62], "outcome": "maker_more"}
    over = _view("klaberjass", {"trump": "H", "previous_deal": detail}, [kl_result], over=True)
    assert "last deal: trump ♥, maker you: you 100, seat 1 62 — the maker has more" in " ".join(
        plain(render.board(over, None, 0.0)).split())
    jj_result = {"thrown_in": False, "contract": {"kind": "normal", "strain": "S", "holder": 0, "multiplier": 1},
                 "below": [90, 0], "above": [0, 0], "pot": 0}
    last = {"melds": [0, 0], "jo_jotte": [0, 0], "trick_points": [90, 72], "tricks": [5, 4],
            "comparison": [90, 72], "outcome": "declarer_more", "pot_to": None, "game_winner": None,
            "rubber_winner": None}
    contract = {"strain": "D", "bidder": 0, "multiplier": 1, "declarer": 0, "defender": 1,
                "kind": None, "holder": None, "play_strain": None}
    settled = _view("jojotte", {"contract": contract, "auction_state": None, "last_deal": last}, [jj_result])
    text = plain(render.board(settled, None, 0.0))
    assert "contract: ♦, declarer you" in text and "last deal" not in text, text


def test_a_spectators_board_has_no_hand():
    """A spectator holds no seat (``View.seat`` unset) and no hand: its board has no "your
    hand" line, not even an empty one."""
    view = match_pb2.View(game="klaberjass", hand_sizes=[9, 9], status=match_pb2.MATCH_STATUS_ACTIVE)
    assert "hand" not in plain(render.board(view, None, 0.0))


def test_a_pulka_row_leaves_the_seats_without_premium_or_moshla_blank():
    """GJ-8: a pulka's row names the premium and moshla that were settled; a seat with neither
    has an empty cell, not "+0 premium" (GJ-8.2 pays premium only to a player who made every
    bid)."""
    deal = {"trump": "S", "bids": [1, 0, 0, 1], "taken": [1, 0, 0, 0], "scores": [100, 50, 50, -200],
            "premium": [100, 0, 0, 0], "moshla": [0, 0, 0, 0]}
    view = _view("georgian_joker", {"options": {"pulka_premium": True}}, [deal], hand_sizes=[1, 1, 1, 1])
    row = next(line for line in plain(render.deal_results_table(view, None)).splitlines()
               if line.strip().startswith("pulka 1"))
    assert row.split() == ["pulka", "1", "+100", "premium"], row


def test_a_thrown_in_deal_reads_so_in_the_deal_results():
    """KL-3.1: both players pass twice and the deal is thrown in; its row says so for each
    player, where blank cells read as a deal not yet scored."""
    view = _view("klaberjass", {}, [{"thrown_in": False, "scored": [0, 105]}, {"thrown_in": True}])
    rows = [line.split() for line in plain(render.deal_results_table(view, None)).splitlines()]
    assert ["2", "thrown", "in", "thrown", "in"] in rows, rows
    assert render.deal_result_lines(view, None)[0].plain.strip() == "deal 2 scored: you thrown in, seat 1 thrown in"


def test_a_pass_made_is_not_a_khishti():
    """GJ-7.4: khishti is a bid of 1 or more with no trick taken; a pass (bid 0) that took no
    trick is made (GJ-7.2), and its line says nothing of a khishti."""
    deal = {"trump": "S", "bids": [0, 1, 0, 1], "taken": [0, 0, 1, 0], "scores": [50, -200, 10, -200]}
    line = render.deal_result_lines(_view("georgian_joker", {}, [deal], hand_sizes=[1, 1, 1, 1]), None)[0].plain
    assert line.strip() == ("deal 1 scored, points (tricks taken/bid): you 50 (0/0), seat 1 -200 (0/1, khishti), "
                            "seat 2 10 (1/0), seat 3 -200 (0/1, khishti)"), line
    # the table's cells keep their width: the title says what the numbers are, no word added
    row = plain(render.deal_results_table(_view("georgian_joker", {}, [deal], hand_sizes=[1, 1, 1, 1]),
                                          None)).splitlines()[-1]
    assert row.split() == ["1", "50", "(0/0)", "-200", "(0/1)", "10", "(1/0)", "-200", "(0/1)"], row


def test_the_cards_another_player_received_are_never_named():
    """JJK-9.2: what a column play moved to a hand is public as a count (and a cleared table's
    up card); the down cards received are named on the player's own line only. An entry of
    another seat that carried them (a view holding more than the seat's own) still reads the
    public form, never "to your hand"."""
    from engine_service.transport.generated import card_games_pb2

    view = _view("japanese_joker", {"deal_actions": [{"seat": 1, "action": "play:KD", "from": "table",
                                                       "moved_hidden": 1, "moved_public": [],
                                                       "moved_cards": ["AH"]}]})
    event = card_games_pb2.WatchMatchResponse(
        kind=match_pb2.EVENT_KIND_ACTION, seq=9, seat=1, view=view,
        action=cards_pb2.Action(notation="play:KD", kind=cards_pb2.ACTION_KIND_PLAY, verb="play",
                                card=cards_pb2.Card(code="KD")))
    assert render.event_text(event, None, 0).plain == "   9 seat 1: play K♦ (column: a hidden card to the hand)"


def test_an_event_line_says_a_bot_moved_for_a_player():
    """A move a bot made for a player's seat (GJ-12.4) says "(bot)" after the player's name;
    a bot's own seat says it by its name alone."""
    from engine_service.transport.generated import card_games_pb2

    summary = match_pb2.MatchSummary(seats=[
        match_pb2.SeatInfo(seat=0, kind=match_pb2.SEAT_KIND_OPEN, taken=True, player_name="ada"),
        match_pb2.SeatInfo(seat=1, kind=match_pb2.SEAT_KIND_BOT, bot="search")])
    bid = cards_pb2.Action(notation="bid:2", kind=cards_pb2.ACTION_KIND_BID, number=2)
    lines = [render.event_text(card_games_pb2.WatchMatchResponse(
        kind=match_pb2.EVENT_KIND_ACTION, seq=3, seat=seat, by=match_pb2.ACTOR_BOT, action=bid), summary, None).plain
        for seat in (0, 1)]
    assert lines == ["   3 ada (bot): bid 2", "   3 search bot (seat 1): bid 2"], lines


def test_the_event_lines_of_a_snapshot_a_presence_and_an_end_by_the_rules():
    """The log's other lines: the snapshot that opens a stream, who a presence event is about
    (by name, its change as docs/api.md names it), and an end without a session reason,
    which the rules made."""
    from engine_service.transport.generated import card_games_pb2

    summary = match_pb2.MatchSummary(seats=[
        match_pb2.SeatInfo(seat=0, kind=match_pb2.SEAT_KIND_OPEN, taken=True, player_name="ada"),
        match_pb2.SeatInfo(seat=1, kind=match_pb2.SEAT_KIND_OPEN, taken=True, player_name="bob")])

    def line(**fields):
        return render.event_text(card_games_pb2.WatchMatchResponse(**fields), summary, 1).plain

    assert line(kind=match_pb2.EVENT_KIND_SNAPSHOT, seq=7) == "   7 joined the table"
    assert line(kind=match_pb2.EVENT_KIND_PRESENCE, seq=8, seat=0, reason="bot_took_over") == "     ada: bot took over"
    assert line(kind=match_pb2.EVENT_KIND_MATCH_ENDED, seq=9) == "   9 match ended (rules)"


def test_only_a_bid_of_0_is_a_pass():
    """GJ-4.2: "a bid of 0 is called pass"; a bid of 1 undertakes a trick and is no pass."""
    def bid(number):
        return cards_pb2.Action(notation=f"bid:{number}", kind=cards_pb2.ACTION_KIND_BID, number=number)

    assert [render.action_text(bid(n)).plain for n in (0, 1, 2)] == ["bid 0 (pass)", "bid 1", "bid 2"]


def test_a_slam_answer_names_its_strain_as_a_suit():
    """JJ-4.4, NOTATION.md ``slam:S`` / ``slam:NT``: the declarer's slam answer reads as the
    other calls naming a strain do (``name ♠``, ``trump ♠``), from its structured suit."""
    from engine_service.transport.codec import action_message

    assert render.action_text(action_message("slam:S"), _view("jojotte", {})).plain == "slam ♠"
    assert render.action_text(action_message("slam:NT"), _view("jojotte", {})).plain == "slam NT"


def test_a_column_play_clears_the_table_only_from_two_columns():
    """JJK-4.2: from three or more columns an up card moves its own hidden card alone; JJK-4.3:
    from exactly two it clears the table."""
    def play(code):
        return cards_pb2.Action(kind=cards_pb2.ACTION_KIND_PLAY, verb="play", card=cards_pb2.Card(code=code))

    for count, note in ((5, "(column)"), (4, "(column)"), (3, "(column)"), (2, "(clears table)")):
        view = _view("japanese_joker", {"columns_up": [["QS", "9C", "6H", "TD", "AS"][:count], []],
                                        "column_counts": [count, 0]})
        assert render.action_text(play("QS"), view).plain == f"play Q♠ {note}", count


def test_an_open_seat_nobody_took_is_open_not_away():
    """A seat is away when its player has no stream open (docs/api.md: "to step away, close
    your watch stream"); an open seat nobody took has no player: it reads "(open)" alone."""
    summary = match_pb2.MatchSummary(seats=[
        match_pb2.SeatInfo(seat=0, kind=match_pb2.SEAT_KIND_OPEN, taken=True, present=True, player_name="ada"),
        match_pb2.SeatInfo(seat=1, kind=match_pb2.SEAT_KIND_OPEN, taken=False, present=False)])
    view = match_pb2.View(game="klaberjass", seat=0, hand_sizes=[0, 0], status=match_pb2.MATCH_STATUS_WAITING)
    lines = plain(render.seats_table(view, summary, 0.0)).splitlines()
    assert lines[2].split() == ["seat", "1", "(open)", "0", "0"], lines


def test_the_result_line_names_the_player_you_and_writes_the_totals_as_json():
    """The last line names the viewer's seat "you" among the winners, as every line of its
    screen does, and writes the totals as JSON for scripts: Jo-Jotte's are an object (NOTATION.md
    section 3: below, above, games_won), which Python's repr wrote with single quotes."""
    import json
    from google.protobuf import json_format

    summary = match_pb2.MatchSummary(match_id="m1", status=match_pb2.MATCH_STATUS_FINISHED)
    summary.seats.add(seat=0, player_name="ada")
    summary.seats.add(seat=1, player_name="bob")
    totals = {"below": [510, 230], "above": [400, 0], "games_won": [2, 0]}
    json_format.ParseDict({"winners": [0], "totals": totals, "outcome": "completed"}, summary.result)
    line = render.result_line(summary, 0)
    assert line.startswith("match m1 finished: winners you; totals {"), line
    assert json.loads(line.split("totals ", 1)[1]) == totals, line
    assert render.result_line(summary).startswith("match m1 finished: winners ada; ")


def test_a_jo_jotte_board_without_a_frozen_pot_has_no_pot_line():
    """The Jo-Jotte table always carries ``match.pot`` (docs/games/jojotte.md), 0 while no tie
    froze trick points (JJ-9.5): the board shows a pot line only when there is a pot."""
    view = _view("jojotte", {"match": {"game_target": 80, "game_points": [0, 0], "pot": 0}})
    assert "pot" not in plain(render.board(view, None, 0.0))
    view = _view("jojotte", {"match": {"game_target": 80, "game_points": [0, 0], "pot": 24}})
    assert "pot: 24 (frozen" in plain(render.board(view, None, 0.0))


def test_the_last_klaberjass_deal_names_a_maker_in_seat_1():
    """KL-9.1 to 9.4 compare the maker's deal total with the opponent's: the line names the
    maker the deal result gives, whichever seat fixed the trump."""
    kl_result = {"thrown_in": False, "trump": "C", "maker": 1, "melds": [0, 0], "card_points": [40, 122],
                 "scored": [0, 162]}
    detail = {"bella": [0, 0], "trump_kqj": [0, 0], "deal_totals": [40, 122], "outcome": "maker_more"}
    view = _view("klaberjass", {"trump": None, "previous_deal": detail}, [kl_result])
    assert "last deal: trump ♣, maker seat 1: you 40, seat 1 122 — the maker has more" in " ".join(
        plain(render.board(view, None, 0.0)).split())


def test_the_header_of_a_match_the_viewer_won_says_you():
    """The viewer's seat is "you" on every line of its screen (seat_name), the winners of the
    header's "match over" included; a spectator reads the player's name."""
    summary = match_pb2.MatchSummary()
    summary.seats.add(seat=0, kind=match_pb2.SEAT_KIND_OPEN, taken=True, player_name="ada")
    summary.seats.add(seat=1, kind=match_pb2.SEAT_KIND_BOT, bot="heuristic")
    over = match_pb2.View(game="klaberjass", seat=0, hand_sizes=[0, 0], phase="over", over=True, winners=[0],
                          status=match_pb2.MATCH_STATUS_FINISHED)
    assert render.header_text(over, summary, 0.0).plain.endswith("match over: you")
    over.ClearField("seat")
    assert render.header_text(over, summary, 0.0).plain.endswith("match over: ada")


def _play_event(seat, code, view, by=match_pb2.ACTOR_PLAYER):
    from engine_service.transport.generated import card_games_pb2

    return card_games_pb2.WatchMatchResponse(
        kind=match_pb2.EVENT_KIND_ACTION, seq=8, seat=seat, view=view, by=by,
        action=cards_pb2.Action(notation=f"play:{code}", kind=cards_pb2.ACTION_KIND_PLAY, verb="play",
                                card=cards_pb2.Card(code=code)))


def test_a_lead_with_the_card_that_ended_the_previous_deal_takes_no_trick():
    """trick_won_by: a play completed a trick when the trick in progress is empty again after
    it. The first lead of a deal may be the card its player ended the previous deal with
    (``last_trick`` is that deal's final trick while ``trick_history`` is empty, docs/api.md):
    that lead completed nothing."""
    view = match_pb2.View(game="klaberjass", seat=0, hand_sizes=[8, 9])
    view.last_trick.plays.add(seat=1, card=cards_pb2.Card(code="7S"))
    view.last_trick.plays.add(seat=0, card=cards_pb2.Card(code="AS"))
    view.last_trick.winner, view.last_trick.points = 0, 11
    view.trick.plays.add(seat=0, card=cards_pb2.Card(code="AS"))  # the new deal's lead
    assert render.event_text(_play_event(0, "AS", view), None, 0).plain == "   8 you: play A♠"


def test_an_event_trick_worth_no_card_points_says_plus_0():
    """README: the event log says who took each trick, in Klaberjass and Jo-Jotte with the card
    points it carried (``Trick.points``): a trick of sevens and eights carried none, "(+0)"."""
    view = match_pb2.View(game="klaberjass", seat=0, hand_sizes=[3, 3])
    view.last_trick.plays.add(seat=1, card=cards_pb2.Card(code="7C"))
    view.last_trick.plays.add(seat=0, card=cards_pb2.Card(code="8C"))
    view.last_trick.winner, view.last_trick.points = 0, 0
    assert render.event_text(_play_event(0, "8C", view), None, 0).plain == "   8 you: play 8♣  → trick to you (+0)"


def test_an_auto_move_for_a_failed_bot_says_auto():
    """docs/api.md: ``ACTOR_AUTO`` / ``bot_failed`` is the server's auto-move for a bot that
    failed: on a bot seat the line says "(auto)", the bot's name alone would say its bot chose."""
    summary = match_pb2.MatchSummary(seats=[
        match_pb2.SeatInfo(seat=0, kind=match_pb2.SEAT_KIND_OPEN, taken=True, player_name="ada"),
        match_pb2.SeatInfo(seat=1, kind=match_pb2.SEAT_KIND_BOT, bot="search")])
    view = match_pb2.View(game="georgian_joker", hand_sizes=[1, 1, 1, 1])
    view.trick.plays.add(seat=1, card=cards_pb2.Card(code="9D"))
    line = render.event_text(_play_event(1, "9D", view, by=match_pb2.ACTOR_AUTO), summary, None).plain
    assert line == "   8 search bot (seat 1) (auto): play 9♦", line


def test_the_last_jo_jotte_deal_counts_the_jo_jotte_in_its_parts():
    """README: the last deal's line gives each player's deal total and its parts; a Jo-Jotte
    total includes the jo-jotte (JJ-7.1, JJ-9.2), which goes beside the melds and tricks."""
    jj_result = {"thrown_in": False, "contract": {"kind": "normal", "strain": "S", "holder": 0, "multiplier": 1},
                 "below": [110, 0], "above": [0, 0], "pot": 0}
    last = {"melds": [0, 0], "jo_jotte": [20, 0], "trick_points": [90, 72], "tricks": [5, 4],
            "comparison": [110, 72], "outcome": "declarer_more", "pot_to": None, "game_winner": None,
            "rubber_winner": None}
    view = _view("jojotte", {"contract": None, "last_deal": last}, [jj_result])
    assert "you 110 (jo-jotte 20, tricks 90), seat 1 72 — the declarer has more" in " ".join(
        plain(render.board(view, None, 0.0)).split())
