"""Rendering a match for a terminal: protobuf View / MatchSummary -> rich renderables.

Shared by the player's client (``python -m clients.play``) and the spectator
(``python -m clients.watch``). Pure functions of the messages: no I/O, no clock (the deadline
countdown takes ``now`` as an argument), so they are tested on real views.

What is shown comes only from the view the server sent (a frontend never re-implements
rules): the hand, the trick in progress and the last trick, the scores and what the match is
played to (the target, the Jo-Jotte game and pot), and the game's public table
(``View.table``): Klaberjass / Jo-Jotte auction, turn-up (and the exchange made) and
information card, contract and melds (with the runs and quartets their ``scores`` statement
made public), bella / jo-jotte, and between the deals the last deal's breakdown; Georgian Joker deal
and forehand, trump indicator, bids (their sum against the tricks) and the dealer's forbidden
bid, and a pulka's premium and moshla; Japanese Joker's five columns per player (up card over
a hidden down card, and an up card a cleared table moved into a hand), declarer and trump, and
what a column play moved to the hand. Event lines say who took the trick a card completed.
"""

from __future__ import annotations

import json
from typing import Any, Iterable, Mapping

from rich.console import Group
from rich.table import Table
from rich.text import Text

from engine_service.transport.generated import cards_pb2, match_pb2

from .cardgames_client import GAVE_UP, RECONNECTING, RESUMED, StreamState, struct_value

SUIT_SYMBOLS = {"S": "♠", "H": "♥", "D": "♦", "C": "♣", "NT": "NT"}
SUIT_STYLES = {"S": "bold white", "H": "bold red", "D": "bold red", "C": "bold white", "NT": "bold cyan"}
RANK_NAMES = {"T": "10"}
GAME_NAMES = {"klaberjass": "Klaberjass", "jojotte": "Jo-Jotte", "georgian_joker": "Georgian Joker",
              "japanese_joker": "Japanese Joker"}
ACTOR_NAMES = {match_pb2.ACTOR_PLAYER: "", match_pb2.ACTOR_BOT: " (bot)", match_pb2.ACTOR_AUTO: " (auto)"}
HIDDEN_CARD = "▒▒"


def struct_dict(message: Any) -> dict[str, Any]:
    """A google.protobuf.Struct as a plain dict (integers stay integers where exact)."""
    return struct_value(message)




# ---- cards and actions --------------------------------------------------------------------


def card_text(code: str | None) -> Text:
    """``"TH"`` -> a red ``10♥``; ``"X1"`` -> a magenta ``Joker1``; None -> a hidden card."""
    if not code:
        return Text(HIDDEN_CARD, style="dim")
    if code.startswith("X"):
        return Text("Joker" + code[1:], style="bold magenta")
    rank, suit = code[:-1], code[-1]
    return Text(RANK_NAMES.get(rank, rank) + SUIT_SYMBOLS.get(suit, suit), style=SUIT_STYLES.get(suit, ""))


def suit_text(suit: str) -> Text:
    return Text(SUIT_SYMBOLS.get(suit, suit), style=SUIT_STYLES.get(suit, ""))


def cards_text(codes: Iterable[str], sep: str = " ") -> Text:
    out = Text()
    for i, code in enumerate(codes):
        if i:
            out.append(sep)
        out.append_text(card_text(code))
    return out


_SUIT_LETTERS = {cards_pb2.SUIT_SPADES: "S", cards_pb2.SUIT_HEARTS: "H", cards_pb2.SUIT_DIAMONDS: "D",
                 cards_pb2.SUIT_CLUBS: "C", cards_pb2.SUIT_NO_TRUMP: "NT"}


def _suit_letter(value: int) -> str:
    return _SUIT_LETTERS.get(value, "")


#: What a Klaberjass call does, beside its bare word on the actions (KL-A7, KL-4.2, KL-A20).
#: Short: the actions' box is 25 columns wide on an 80-column terminal.
KLABERJASS_GLOSSES = {"accept": "deal thrown in", "refuse": "caller plays", "keep": "no exchange",
                      "declare": "score them", "conceal": "say none"}


def exchange_cards(action: Any, table: Mapping[str, Any]) -> tuple[str | None, str | None]:
    """The seven an exchange gives and the turn-up it takes: ``(gives, takes)``, None where
    the table does not say. Before the exchange (a legal action) the turn-up is the card in
    the turn-up place, and the seven is the action's card (Jo-Jotte's ``exchange:7X``) or the
    dix (Klaberjass's ``exchange``: the seven of trumps, KL-4.1); after it (an event's view)
    the public ``exchange`` record names both (KL-4.3, JJ-4.2)."""
    done = table.get("exchange")
    if isinstance(done, Mapping):
        return done.get("gives") or done.get("seven"), done.get("takes") or done.get("turn_up")
    gives = action.card.code or (f"7{table['trump']}" if table.get("trump") in ("S", "H", "D", "C") else None)
    return gives, table.get("turn_up")


def joker_lead_text(card: str, mode: str, suit: str, trumpable: bool = False) -> Text:
    """A joker lead as what it does and what it demands of the named suit's holders:
    ``Joker1 takes: top ♠ due`` (Georgian Joker's ``high`` lead, GJ-5.4, and every Japanese
    Joker lead, JJK-5.4: the highest card of the suit must be given) or ``Joker1 under: any ♠
    due`` (``low``, GJ-5.5: any card of it, the joker declines the trick). It read "play Joker1
    high (takes), asks ♠", which said nothing of the highest-card duty and, 32 columns long,
    wrapped in the actions' box of an 80-column terminal (23 columns beside its scrollbar).
    ``trumpable`` (a high lead a trump may beat, GJ-6.6: :func:`high_lead_trumpable`) reads
    ``Joker1 high: top ♠ due``: "takes" promised a trick that a trump could take instead."""
    low = mode == "JOKER_MODE_LOW"
    out = card_text(card).append(" under: any " if low else " high: top " if trumpable else " takes: top ")
    return out.append_text(suit_text(suit)).append(" due")


def high_lead_trumpable(view: Any | None, summary: Any | None, suit: str) -> bool:
    """Whether a trump may beat a Georgian Joker ``high`` joker lead naming ``suit``: only
    under the table option ``high_joker_lead_trumpable``, in a deal with a trump suit, when
    the named suit is not the trump (GJ-6.6). The view does not carry the options: the
    match's summary (None: unknown, the default rules) does."""
    if view is None or summary is None or view.game != "georgian_joker":
        return False
    option = summary.options.get("high_joker_lead_trumpable")
    if option is None or not option.bool_value:
        return False
    trump = struct_dict(view.table).get("trump")
    return trump in ("S", "H", "D", "C") and trump != suit


def _multiplies_premiums(summary: Any | None) -> bool:
    """Whether a Jo-Jotte table multiplies the nullo premium by the contract's doubling: only
    under ``jj_multiplier_scope = all`` (JJ-A13); by default a nullo ignores the multiplier
    (JJ-9.7). The view does not carry the options: the match's summary (None: unknown, the
    default rules) does."""
    option = summary.options.get("jj_multiplier_scope") if summary is not None else None
    return option is not None and option.string_value == "all"


def column_play_note(card: str, view: Any) -> str:
    """Japanese Joker: what playing ``card`` does to the viewer's columns (JJK-4.2, 4.3):
    ``" (column)"`` for an up card (its hidden card goes to the hand), ``" (clears table)"``
    when it is one of the last two (both hidden cards and the other up card go to the hand);
    ``""`` for a hand card. The actions listed hand and up cards alike, "play Q♠" beside "play
    8♠", and nothing said that one of them empties the table."""
    table = struct_dict(view.table)
    me = view.seat if view.HasField("seat") else None
    if me is None or card not in _per_seat(table.get("columns_up"), me, []):
        return ""
    return " (clears table)" if _per_seat(table.get("column_counts"), me, 0) == 2 else " (column)"


def action_text(action: Any, view: Any | None = None, summary: Any | None = None) -> Text:
    """A human label for an Action message, from its structured fields (not its string);
    ``view`` (the one the action is legal in, or the view after an action event) lets an
    exchange name the two cards it swaps: Klaberjass's ``exchange`` names none, and Jo-Jotte's
    ``exchange:7X`` read "exchange 7♥ for the turn-up" without the card it takes. ``summary``
    (the match's, for its table options) says whether a high joker lead may be trumped."""
    kind = cards_pb2.ActionKind.Name(action.kind)
    if view is not None and view.game == "klaberjass" and action.notation in KLABERJASS_GLOSSES:
        # bare words whose meaning depends on the moment: "accept" answers a schmeiss here
        # (the deal is thrown in, KL-A7), not a turn-up as in Jo-Jotte; "keep" and "conceal"
        # say nothing of what they keep or hide
        return Text(action.notation).append(f" ({KLABERJASS_GLOSSES[action.notation]})", style="dim")
    if view is not None and view.game == "jojotte" and action.notation in ("declare", "conceal"):
        # JJ-A21: four steps, quartets then sequences; the bare word said not which
        category = struct_dict(view.table).get("meld_category")
        if category:
            return Text(action.notation).append(f" ({category})", style="dim")
    if kind == "ACTION_KIND_EXCHANGE" and view is not None:
        gives, takes = exchange_cards(action, struct_dict(view.table))
        if gives and takes:
            return Text("exchange ").append_text(card_text(gives)).append(" for the turn-up ").append_text(
                card_text(takes))
    out = Text()
    if kind == "ACTION_KIND_PLAY":
        mode = cards_pb2.JokerMode.Name(action.joker_mode)
        if action.named_suit and action.card.code.startswith("X"):
            suit = _suit_letter(action.named_suit)
            trumpable = mode == "JOKER_MODE_HIGH" and high_lead_trumpable(view, summary, suit)
            return joker_lead_text(action.card.code, mode, suit, trumpable)
        if action.card.code.startswith("X") and mode == "JOKER_MODE_UNSPECIFIED":
            # Japanese Joker: a joker that follows always takes (JJK-5.2, 6.1), as its lead reads
            out.append_text(card_text(action.card.code)).append(" takes")
        else:
            out.append("play ")
            out.append_text(card_text(action.card.code))
        if mode == "JOKER_MODE_HIGH":
            out.append(" high (takes)")
        elif mode == "JOKER_MODE_LOW":
            out.append(" low (under)")
        if view is not None and view.game == "japanese_joker":
            out.append(column_play_note(action.card.code, view), style="dim")
        announcement = cards_pb2.Announcement.Name(action.announcement)
        if announcement != "ANNOUNCEMENT_UNSPECIFIED":
            out.append(" + " + announcement.removeprefix("ANNOUNCEMENT_").lower(), style="bold yellow")
        return out
    if kind == "ACTION_KIND_BID":
        number = action.number if action.HasField("number") else 0
        return Text(f"bid {number}" + (" (pass)" if number == 0 else ""))
    if kind in ("ACTION_KIND_NAME", "ACTION_KIND_TRUMP", "ACTION_KIND_SLAM"):
        out.append(action.verb + " ")
        out.append_text(suit_text(_suit_letter(action.suit)))
        return out
    if kind == "ACTION_KIND_EXCHANGE" and action.card.code:
        out.append("exchange ")
        out.append_text(card_text(action.card.code))
        out.append(" for the turn-up")
        return out
    return Text(action.notation.replace("_", " ").replace(":", " "))


# ---- seats ---------------------------------------------------------------------------------


def seat_name(summary: Any | None, seat: int, me: int | None = None) -> str:
    """``"ada"``, ``"bot search"``, ``"seat 2 (open)"``; ``"you"`` for the viewer's seat. A
    player's seat that a bot plays (GJ-12.4) says by what: ``"ada [bot search]"``, or
    ``"ada [auto-play]"`` under a server without a takeover bot, whose stand-in is the
    rulebook's auto-move policy (GJ-12.2) and names no bot (it read ``"ada [bot ]"``)."""
    if me is not None and seat == me:
        return "you"
    if summary is not None and seat < len(summary.seats):
        info = summary.seats[seat]
        if info.player_name:
            if not info.replaced_by_bot:
                return info.player_name
            return info.player_name + (f" [bot {info.bot}]" if info.bot else " [auto-play]")
        if info.kind == match_pb2.SEAT_KIND_BOT:
            return f"{info.bot} bot (seat {seat})"
        if not info.taken:
            return f"seat {seat} (open)"
    return f"seat {seat}"


def result_line(summary: Any, me: int | None = None) -> str:
    """A match's last line, for its players (``clients.play``, ``me`` their seat) and its
    spectators (``clients.watch``) alike: ``"match m1 finished: winners ada; totals [21, 3]"``,
    and how it ended where it was not played out, ``"(resigned)"``, ``"(forfeit)"``,
    ``"(terminated: REASON)"``; the match and its status alone while it has no result. Totals
    as JSON, for scripts; print it as text (``markup=False``): anyone chooses their name."""
    result = struct_dict(summary.result) if summary.HasField("result") else {}
    status = match_pb2.MatchStatus.Name(summary.status).removeprefix("MATCH_STATUS_").lower()
    if not result:
        return f"match {summary.match_id} {status}"
    names = ", ".join(seat_name(summary, w, me) for w in result.get("winners", [])) or "none"
    how = [str(result[k]) for k in ("outcome", "reason") if result.get(k) and result[k] != "completed"]
    return (f"match {summary.match_id} {status}: winners {names}; totals {json.dumps(result.get('totals'))}"
            + (f" ({': '.join(how)})" if how else ""))


def _per_seat(values: Any, seat: int, default: Any = "") -> Any:
    if isinstance(values, list) and seat < len(values) and values[seat] is not None:
        return values[seat]
    return default


def score_heading(view: Any) -> str:
    """The score column's heading, with what the match is played to: the Klaberjass and
    Japanese Joker target (``table.target_score``, KL-10.1, JJK-8.1); a player had to know the
    table options by heart. Jo-Jotte's game (JJ-10.1) heads its own column
    (:func:`_total_heading`): its view always has three totals. Georgian Joker's end is its
    deal count, in the table lines."""
    table = struct_dict(view.table)
    if table.get("target_score"):
        return f"score (to {table['target_score']})"
    return "score"


def _total_heading(name: str, view: Any) -> str:
    """A column of a game with several totals (Jo-Jotte's game / below / above / games): the
    game's says what it is played to (JJ-10.1)."""
    match = struct_dict(view.table).get("match")
    if name == "game" and isinstance(match, Mapping) and match.get("game_target"):
        return f"game (to {match['game_target']})"
    return name


def seats_table(view: Any, summary: Any | None, now: float) -> Table:
    """One row per seat: name, role markers, cards in hand, tricks, bid (games with bids
    only), score (Jo-Jotte's with the points of the game in progress, JJ-10.1: the "below"
    total runs over the whole match)."""
    table = struct_dict(view.table)
    me = view.seat if view.HasField("seat") else None
    grid = Table(box=None, pad_edge=False, expand=False, show_header=True, header_style="bold")
    totals = {row.name.removesuffix("_won"): list(row.values) for row in view.scores.totals}
    match = table.get("match")
    game_points = match.get("game_points") if isinstance(match, Mapping) else None
    if isinstance(game_points, list) and totals:
        totals = {"game": game_points, **totals}
    # an always-empty bid column cost four columns that Jo-Jotte's scores needed on 80; and
    # Jo-Jotte's four totals in one cell ("game 55  below 55  above 400  games 0") wrapped on
    # 80 columns beside a bot's name: one column each, named once in the heading
    bidding = "bids" in table
    scores = [_total_heading(name_, view) for name_ in totals] if len(totals) > 1 else [score_heading(view)]
    for column in ("", "player", "cards", "tricks", *(("bid",) if bidding else ()), *scores):
        grid.add_column(column)
    for seat in range(len(view.hand_sizes)):
        marks = Text()
        if view.HasField("to_act") and view.to_act == seat:
            marks.append("▶ ", style="bold green")
        if seat == view.dealer and view.status != match_pb2.MATCH_STATUS_WAITING:  # drawn at the start
            marks.append("D", style="bold cyan")
        name = Text(seat_name(summary, seat, me), style="bold" if seat == me else "")
        if summary is not None and seat < len(summary.seats):
            info = summary.seats[seat]
            # not the viewer's own seat: once the match is over its stream has ended, and the
            # final screen read "you (away)" to the player looking at it
            if info.kind == match_pb2.SEAT_KIND_OPEN and info.taken and not info.present and seat != me:
                name.append(" (away)", style="yellow")
        bids = table.get("bids")
        bid = _per_seat(bids, seat, "")
        cells = [str(vals[seat]) if seat < len(vals) else "" for vals in totals.values()] or [""]
        grid.add_row(marks, name, str(view.hand_sizes[seat]),
                     str(_per_seat(list(view.scores.tricks_taken), seat, 0)), *((str(bid),) if bidding else ()),
                     *cells)
    return grid


# ---- the trick and the table ---------------------------------------------------------------


def trick_text(trick: Any, summary: Any | None, me: int | None) -> Text:
    out = Text()
    for i, play in enumerate(trick.plays):
        if i:
            out.append("   ")
        out.append(seat_name(summary, play.seat, me) + ": ", style="dim")
        out.append_text(card_text(play.card.code))
        mode = cards_pb2.JokerMode.Name(play.joker_mode)
        if mode != "JOKER_MODE_UNSPECIFIED":
            out.append(" " + mode.removeprefix("JOKER_MODE_").lower(), style="magenta")
        if play.named_suit:
            # what the lead demands of the others (GJ-5.4 / 5.5, JJK-5.4): "asks ♣" left the
            # follower to remember whether the highest club was due
            out.append(" asks any " if mode == "JOKER_MODE_LOW" else " asks top ")
            out.append_text(suit_text(_suit_letter(play.named_suit)))
        announcement = cards_pb2.Announcement.Name(play.announcement)
        if announcement != "ANNOUNCEMENT_UNSPECIFIED":
            out.append(" " + announcement.removeprefix("ANNOUNCEMENT_").lower(), style="bold yellow")
    if trick.HasField("winner"):
        out.append(f"  → {seat_name(summary, trick.winner, me)}", style="bold")
    if trick.HasField("points"):  # Klaberjass, Jo-Jotte: the card points it carried
        out.append(f" (+{trick.points})", style="dim")
    return out


def _labelled(label: str, value: Text | str) -> Text:
    out = Text(f"{label}: ", style="dim")
    out.append_text(value if isinstance(value, Text) else Text(str(value)))
    return out


def _scored_melds(dialogue: list[Any]) -> dict[int, list[str]]:
    """What each seat's ``scores`` statement of the meld dialogue made public, per seat
    (KL-5.5 step 5: suit, top card and length of every sequence scored; JJ-5.9: the quartets
    and sequences): ``["run of 3 to Q♥", "four J"]``. The board showed the points alone,
    though a player plays the rest of the deal knowing those cards are in that hand."""
    out: dict[int, list[str]] = {}
    for line in dialogue:
        if not isinstance(line, Mapping) or line.get("say") != "scores" or line.get("seat") is None:
            continue
        said = out.setdefault(int(line["seat"]), [])
        for rank in line.get("quartets") or []:
            said.append(f"four {RANK_NAMES.get(rank, rank)}")
        for run in line.get("sequences") or []:
            if isinstance(run, Mapping) and run.get("top") and run.get("suit"):
                top = RANK_NAMES.get(run["top"], run["top"]) + SUIT_SYMBOLS.get(run["suit"], run["suit"])
                said.append(f"run of {run.get('length', '?')} to {top}")
    return out


def meld_points_and_dialogue(table: Mapping[str, Any]) -> tuple[Any, list[Any]]:
    """The meld points per seat (None before they are settled) and the meld dialogue (a list,
    empty when there is none) of a Klaberjass (``meld_points``, ``melds``) or Jo-Jotte
    (``melds``: ``{dialogue, points}``) table."""
    melds = table.get("meld_points")
    dialogue = table.get("melds")
    if isinstance(dialogue, Mapping):
        if melds is None:
            melds = dialogue.get("points")
        dialogue = dialogue.get("dialogue")
    return melds, dialogue if isinstance(dialogue, list) else []


#: Statements of the meld dialogues that tell nothing (no meld of the kind).
_SILENT_SAYINGS = {"good", "scores", "quartet none", "length 0"}


def meld_talk(dialogue: list[Any], summary: Any | None, me: int | None) -> Text | None:
    """The meld dialogue as the players said it (KL-5.5, JJ-5.9), ``scores`` left to the melds
    line: ``"you 20, seat 1 how high?, you top Q♥, seat 1 higher A♦"``. The loser's statements
    (his value, the top card he named) are public and tell the winner which cards he holds,
    but the board showed only what the winner scored. None when it says no more than the
    melds line: nobody had a meld, or only the players who score a kind of meld spoke of it."""
    said, news = [], False
    # (seat, kind) of the melds scored: a scorer stating his own kind says what the melds line says
    scored = {(line.get("seat"), kind) for line in dialogue if isinstance(line, Mapping) and line.get("say") == "scores"
              for kind, key in (("quartet", "quartets"), ("sequence", "sequences")) if line.get(key)}
    kind = "sequence"  # Klaberjass has sequences only; Jo-Jotte settles quartets first (JJ-5.4)
    for line in dialogue:
        if not isinstance(line, Mapping):
            continue
        say, seat = str(line.get("say", "")), line.get("seat")
        if say == "value" and not line.get("value"):
            continue
        if say in _SILENT_SAYINGS:
            continue
        who = seat_name(summary, int(seat), me) if seat is not None else ""
        verb, _, arg = say.partition(" ")  # Jo-Jotte: "quartet J", "length 4", "top Q", ...
        kind = "quartet" if verb == "quartet" else "sequence" if verb in ("value", "length") else kind
        news = news or not (verb in ("value", "length", "quartet", "not_good") and (seat, kind) in scored)
        card = line.get("card")
        named = (RANK_NAMES.get(card[0], card[0]) + SUIT_SYMBOLS.get(card[1:], card[1:])) if card else \
            RANK_NAMES.get(arg, arg)
        if verb == "value":
            length = f" ({line['length']} cards)" if line.get("length") else ""
            said.append(f"{who} {line['value']}{length}")
        elif verb == "not_good":
            said.append(f"{who} not good, {line.get('value', named)}")
        elif verb == "how_high":
            said.append(f"{who} how high?")
        elif verb in ("top", "higher", "same", "quartet", "length"):
            said.append(f"{who} {verb} {named}".rstrip())
        elif verb == "trump_check":
            winner = line.get("result", line.get("winner"))
            said.append("the trump sequence wins" if winner is not None else "equal: nobody scores sequences")
        else:
            said.append(f"{who} {say.replace('_', ' ')}")
    if not said or not news:
        return None
    return Text(", ".join(said))


def call_text(call: str) -> Text:
    """An auction call in notation as the actions read it: ``name:S`` -> ``name ♠``,
    ``no_trump`` -> ``no trump`` (the auction line showed ``name S`` and ``no_trump`` beside
    actions labelled ``name ♠`` and ``no trump``)."""
    verb, _, suit = call.partition(":")
    out = Text(verb.replace("_", " "))
    if suit:
        out.append(" ")
        out.append_text(suit_text(suit))
    return out


def _trump(table: Mapping[str, Any]) -> Text | None:
    trump = table.get("trump")
    if not trump:
        return None
    return suit_text(trump) if trump != "NT" else Text("no trump", style=SUIT_STYLES["NT"])


def georgian_bids_text(table: Mapping[str, Any]) -> Text | None:
    """Georgian Joker: the bids against the tricks of the deal, which a player at the table
    keeps in mind while bidding and playing (the four bids never add up to ``n``, GJ-4.4: a
    deal is over- or underbid): ``7 for 9 tricks, 2 under``; ``1 so far, for 1 trick; the
    dealer may not bid 0`` while the dealer is to bid (GJ-4.3, public by GJ-11.1). None before
    the first bid. The board showed each seat's bid alone, the sum left to mental arithmetic."""
    bids = [b for b in table.get("bids") or [] if b is not None]
    n = table.get("cards_per_player")
    if not bids or not isinstance(n, int):
        return None
    total = sum(bids)
    tricks = f"{n} trick{'s' * (n != 1)}"
    if len(bids) < len(table.get("bids") or []):
        out = Text(f"{total} so far, for {tricks}")
    else:
        out = Text(f"{total} for {tricks}, " + (f"{n - total} under" if total < n else f"{total - n} over"))
    if table.get("forbidden_bid") is not None:
        out.append(f"; the dealer may not bid {table['forbidden_bid']}", style="bold")
    return out


def table_lines(view: Any, summary: Any | None) -> list[Text]:
    """The game's public table, one line per item (from View.table; docs/games/<game>.md)."""
    table = struct_dict(view.table)
    me = view.seat if view.HasField("seat") else None
    lines: list[Text] = []
    trump = _trump(table)
    game = view.game
    if game == "georgian_joker":
        if table.get("deal") is not None:
            lines.append(_labelled("deal", f"{table['deal']} of {table.get('deals_in_match', '?')}, pulka "
                                           f"{table.get('pulka', '?')}, {table.get('cards_per_player', '?')} "
                                           "card(s) each"
                                           # GJ-11.1: the forehand (bids first, leads the first trick)
                                           + (f", forehand {seat_name(summary, table['forehand'], me)}"
                                              if table.get("forehand") is not None else "")))
        if table.get("trump_indicator"):
            lines.append(_labelled("trump indicator", card_text(table["trump_indicator"])))
        # only while the choice is awaited: at the match's end (no trump, no deal) the line
        # named the last deal's chooser as if a choice were pending
        if table.get("trump_chooser") is not None and not table.get("trump") and view.phase == "trump_choice":
            lines.append(_labelled("trump chosen by", seat_name(summary, table["trump_chooser"], me)))
        bids_line = georgian_bids_text(table)
        if bids_line is not None:
            lines.append(_labelled("bids", bids_line))
    elif game == "japanese_joker":
        declarer = Text(seat_name(summary, table.get("declarer", view.dealer), me)
                        if table.get("declarer", view.dealer) is not None else "drawn at the start")
        if me is not None and view.phase == "playing" and _per_seat(table.get("played_any"), me, True) is False:
            # JJK-5.1: the up cards are not available before the player's first card, and the
            # actions then left them out without a word (nor do they count for following suit)
            declarer.append("; your first card comes from the hand", style="bold")
        lines.append(_labelled("declarer", declarer))
        lines.extend(columns_lines(view, summary))
    else:  # klaberjass, jojotte
        if table.get("turn_up"):
            turn_up = card_text(table["turn_up"])
            exchange = table.get("exchange")
            if isinstance(exchange, Mapping) and exchange.get("seat") is not None:
                # the seven now lies there (KL-4.3, JJ-4.2): without the note the turn-up just
                # changed, and who holds the card it was went unsaid although the event is public
                _, taken = exchange_cards(None, table)
                turn_up.append(f" ({seat_name(summary, exchange['seat'], me)} took ", style="dim")
                turn_up.append_text(card_text(taken)).append(" for it)", style="dim")
            lines.append(_labelled("turn-up", turn_up))
        if table.get("info_card"):
            lines.append(_labelled("information card", card_text(table["info_card"])))
        auction = table.get("auction") or []
        if auction:
            calls = Text()
            for i, call in enumerate(auction):
                if i:
                    calls.append(", ")
                calls.append(f"{seat_name(summary, call['seat'], me)} ")
                calls.append_text(call_text(call["call"]))
            lines.append(_labelled("auction", calls))
        contract = table.get("contract") or {}
        if contract.get("kind"):  # Jo-Jotte, once the nullo window is over (docs/games/jojotte.md)
            mult = {1: "", 2: " doubled", 4: " redoubled"}.get(contract.get("multiplier", 1), "")
            # the strain played and the seat that holds the contract: a nullo is the defender's,
            # played at no trump by default, and a slam may be at no trump (the auction's strain
            # and declarer named the wrong trump and player there)
            strain = contract.get("play_strain") or contract.get("strain", "")
            kind = contract["kind"]
            holder = contract.get("holder", contract.get("declarer", 0))
            trump = _trump({"trump": strain})
            contract_line = Text(f"{kind} ")
            contract_line.append_text(trump if strain else Text(""))
            contract_line.append(f"{mult}, {'nullo player' if kind == 'nullo' else 'declarer'} "
                                 f"{seat_name(summary, holder, me)}")
            lines.append(_labelled("contract", contract_line))
        elif contract.get("strain") and contract.get("declarer") is not None and not table.get("auction_state"):
            # Jo-Jotte between the auction and the end of the nullo window (the exchange, the
            # nullo call and its slam answer): the contract is settled but its kind is not yet;
            # the board showed neither trump nor contract, nor whether it was doubled
            mult = {1: "", 2: " doubled", 4: " redoubled"}.get(contract.get("multiplier", 1), "")
            contract_line = _trump({"trump": contract["strain"]}) or Text("")
            contract_line.append(f"{mult}, declarer {seat_name(summary, contract['declarer'], me)}")
            # the declarer answering a nullo call (JJ-4.4) saw no word of it but in the log
            nullo = [a for a in table.get("deal_actions") or []
                     if isinstance(a, Mapping) and a.get("action") == "nullo"]
            if nullo and nullo[-1].get("seat") is not None:
                contract_line.append(f"; {seat_name(summary, nullo[-1]['seat'], me)} called nullo", style="bold")
            lines.append(_labelled("contract", contract_line))
        if table.get("maker") is not None:
            lines.append(_labelled("maker", seat_name(summary, table["maker"], me)))
        match = table.get("match")
        if isinstance(match, Mapping) and match.get("pot"):
            # frozen trick points (JJ-9.5): on nobody's score, entered by the next decided deal
            lines.append(_labelled("pot", f"{match['pot']} (frozen: the winner of the next decided deal enters it)"))
        melds, dialogue = meld_points_and_dialogue(table)
        if melds and any(melds):
            scored = _scored_melds(dialogue)
            lines.append(_labelled("melds", ", ".join(
                f"{seat_name(summary, s, me)} {p}" + (f" ({', '.join(scored[s])})" if scored.get(s) else "")
                for s, p in enumerate(melds) if p)))
        talk = meld_talk(dialogue, summary, me)
        if talk is not None:
            lines.append(_labelled("meld talk", talk))
        # the trump marriage, credited when it is complete (KL-7.1 bella, JJ-7.1 jo-jotte): it
        # counts in the deal total like the melds, and was on no line of the board
        for key, label in (("bella", "bella"), ("jo_jotte", "jo-jotte")):
            bonus = table.get(key)
            if isinstance(bonus, list) and any(bonus):
                lines.append(_labelled(label, ", ".join(f"{seat_name(summary, s, me)} {p}"
                                                        for s, p in enumerate(bonus) if p)))
    if trump is not None:
        lines.insert(0, _labelled("trump", trump))
    return lines


#: KL-9.2 to KL-9.4 and JJ-9.2 / JJ-9.3: who had more, in the rulebooks' terms.
OUTCOME_WORDS = {"maker_more": "the maker has more", "equal": "equal totals: the maker scores nothing",
                 "opponent_more": "the opponent has more", "declarer_more": "the declarer has more",
                 "defender_more": "the defender has more", "tie": "a tie: the trick points go to the pot"}


def _deal_total(name: str, total: Any, label_values: Iterable[tuple[str, Any]]) -> str:
    """``"ada 85 (melds 20, tricks 65)"``; the parts only where the total is not just the
    points of the tricks (the line had to fit 80 columns)."""
    parts = [(label, value) for label, value in label_values if value]
    if not parts or (len(parts) == 1 and parts[0][0] in ("cards", "tricks")):
        return f"{name} {total}"
    return f"{name} {total} ({', '.join(f'{label} {value}' for label, value in parts)})"


def last_deal_line(view: Any, summary: Any | None, label: str = "last deal") -> Text | None:
    """The last scored deal's breakdown, in the rulebook's terms (Klaberjass KL-9.1 to 9.4 from
    ``previous_deal``, Jo-Jotte JJ-9 from ``last_deal``): each player's deal total and what it
    is made of, and who had more. The deal results showed what each player entered alone (a
    maker who went down read "0 | 105" with no word why), and the trick points, bella and the
    K-Q-J bonus were never on screen. None before the first deal is scored."""
    results = struct_value(view.scores.deal_results)
    if not results:
        return None
    me = view.seat if view.HasField("seat") else None
    table = struct_dict(view.table)
    result = results[-1]
    out = Text(f"{label}: ", style="dim")
    if result.get("thrown_in"):
        return out.append("thrown in, nobody scores")
    name = lambda seat: seat_name(summary, seat, me)  # noqa: E731
    if view.game == "klaberjass" and isinstance(table.get("previous_deal"), Mapping):
        detail = table["previous_deal"]
        totals = detail.get("deal_totals") or [0, 0]
        melds, cards = result.get("melds") or [0, 0], result.get("card_points") or [0, 0]
        bella, kqj = detail.get("bella") or [0, 0], detail.get("trump_kqj") or [0, 0]
        out.append("trump ").append_text(suit_text(result.get("trump", "")))
        out.append(f", maker {name(result.get('maker', 0))}: ")
        out.append(", ".join(_deal_total(name(s), totals[s], (("melds", melds[s]), ("bella", bella[s]),
                                                              ("K-Q-J", kqj[s]), ("cards", cards[s])))
                             for s in range(len(totals))))
        return out.append(f" — {OUTCOME_WORDS.get(detail.get('outcome'), detail.get('outcome') or '')}")
    if view.game == "jojotte" and isinstance(table.get("last_deal"), Mapping):
        detail = table["last_deal"]
        contract = result.get("contract") or {}
        kind, holder = contract.get("kind", ""), contract.get("holder", 0)
        tricks = detail.get("tricks") or [0, 0]
        out.append(f"{kind} " if kind != "normal" else "")
        out.append_text(_trump({"trump": contract.get("strain")}) or Text(""))
        if kind != "nullo" or _multiplies_premiums(summary):  # JJ-9.7, JJ-A13
            out.append({2: " doubled", 4: " redoubled"}.get(contract.get("multiplier", 1), ""))
        out.append(f", {'nullo player' if kind == 'nullo' else 'declarer'} {name(holder)}: ")
        if kind == "nullo":  # JJ-9.7: only the tricks the nullo player took count
            taken = tricks[holder]
            out.append("made, no trick taken" if taken == 0 else f"lost, {taken} trick{'s' * (taken != 1)} taken")
        else:
            totals = detail.get("comparison") or [0, 0]
            melds, jj = detail.get("melds") or [0, 0], detail.get("jo_jotte") or [0, 0]
            points = detail.get("trick_points") or [0, 0]
            out.append(", ".join(_deal_total(name(s), totals[s], (("melds", melds[s]), ("jo-jotte", jj[s]),
                                                                  ("tricks", points[s])))
                                 for s in range(len(totals))))
            out.append(f" — {OUTCOME_WORDS.get(detail.get('outcome'), detail.get('outcome') or '')}")
            if kind == "slam":  # JJ-9.6
                out.append(", slam made" if tricks[holder] == 9 else ", slam lost")
        if detail.get("pot_to") is not None:
            out.append(f"; the pot to {name(detail['pot_to'])}")
        if detail.get("game_winner") is not None:
            out.append(f"; game to {name(detail['game_winner'])}", style="bold")
        if detail.get("rubber_winner") is not None:
            out.append(f"; rubber to {name(detail['rubber_winner'])}", style="bold")
        return out
    return None


def columns_lines(view: Any, summary: Any | None) -> list[Text]:
    """Japanese Joker: each player's columns, up card over a hidden down card (JJK-4)."""
    table = struct_dict(view.table)
    me = view.seat if view.HasField("seat") else None
    lines = []
    for seat, columns in enumerate(table.get("columns") or []):
        owner = "your" if seat == me else f"{seat_name(summary, seat, me)}'s"
        row = Text(f"{owner} columns: ", style="dim")
        shown = [c for c in columns if c.get("on_table")]
        if not shown:
            # during the trump choice nothing is on the table yet (JJK-3.7): "none" read as a
            # table already played out
            row.append("not dealt yet" if view.phase == "trump_choice" else "none", style="dim")
        for i, column in enumerate(shown):
            if i:
                row.append("  ")
            row.append("[")
            row.append_text(card_text(column.get("up")))
            row.append("/")
            row.append(HIDDEN_CARD, style="dim")
            row.append("]")
        known = _per_seat(table.get("known_in_hand"), seat, [])
        if seat != me and known:
            # an up card that the clearing of a table (JJK-4.3) moved into that hand is public
            # (JJK-9.2) until played: it left the columns, and the board then lost it
            row.append("  in hand: ", style="dim")
            row.append_text(cards_text(known))
        lines.append(row)
    return lines


def hand_text(view: Any) -> Text:
    if not view.hand:
        return Text("(no cards)", style="dim")
    return cards_text(c.code for c in view.hand)


def deadline_text(view: Any, now: float) -> Text:
    """Seconds left for the current decision, or nothing without a deadline."""
    if not view.HasField("deadline"):
        return Text("")
    left = view.deadline.ToNanoseconds() / 1e9 - now
    style = "bold red" if left < 10 else "bold yellow" if left < 20 else "bold green"
    return Text(f"{max(0.0, left):4.0f} s", style=style)


def header_text(view: Any, summary: Any | None, now: float) -> Text:
    me = view.seat if view.HasField("seat") else None
    out = Text(GAME_NAMES.get(view.game, view.game), style="bold")
    over = view.over or view.status in (match_pb2.MATCH_STATUS_FINISHED, match_pb2.MATCH_STATUS_TERMINATED)
    scored = len(view.scores.deal_results.values)
    # The deal in progress is the one after the deals already scored (thrown-in deals included);
    # once the match is over there is none (a 24-deal Georgian Joker match ended on "deal 25").
    deal = f"{scored} deal(s) scored" if over else f"deal {scored + 1}"
    # "phase dix_window" read as a program's word; once over, "match over" says the phase, and
    # on 80 columns the header then wrapped the winner's name onto a row of its own
    phase = "" if over else f"  phase {view.phase.replace('_', ' ')}"
    out.append(f"  {deal}{phase}  seq {view.seq}", style="dim")
    if over:
        winners = ", ".join(seat_name(summary, w, me) for w in view.winners)
        out.append(f"  match over: {winners or 'no winner'}", style="bold green")
    elif view.status == match_pb2.MATCH_STATUS_WAITING:
        # a table waiting for people read "phase dealing" and nothing more: as if it had stalled
        waiting = [str(s.seat) for s in (summary.seats if summary is not None else []) if not s.taken]
        out.append("  waiting for a player" + (f" in seat {', '.join(waiting)}" if waiting else ""),
                   style="bold yellow")
    elif view.HasField("to_act"):
        out.append("  ")
        who = seat_name(summary, view.to_act, me)
        out.append("your turn" if me is not None and view.to_act == me else f"{who} to act",
                   style="bold green" if me is not None and view.to_act == me else "")
        countdown = deadline_text(view, now)
        if countdown.plain:
            out.append("  ")
            out.append_text(countdown)
    delay = summary.spectator_delay_actions if summary is not None else 0
    if me is None and delay and view.status == match_pb2.MATCH_STATUS_ACTIVE:
        # a spectator of a delayed match sees it as it was (docs/api.md, "Spectators")
        out.append(f"  ({delay} actions behind the table)", style="yellow")
    return out


def board(view: Any, summary: Any | None, now: float, compact: bool = False) -> Group:
    """Everything but the legal actions: header, seats, table, trick, hand; ``compact``
    without the blank lines between them (a short terminal's rows go to the actions)."""
    me = view.seat if view.HasField("seat") else None
    gap = [] if compact else [Text("")]
    parts: list[Any] = [header_text(view, summary, now), *gap, seats_table(view, summary, now), *gap]
    parts.extend(table_lines(view, summary))
    table = struct_dict(view.table)
    if view.game in ("klaberjass", "jojotte") and (view.over or not (table.get("trump") or table.get("contract"))):
        # between the deals (the auction, before a trump is fixed) and at the end: what the
        # last deal came to, while the players look at the scores it left
        last = last_deal_line(view, summary)
        if last is not None:
            parts.append(last)
    parts.append(_labelled("trick", trick_text(view.trick, summary, me) if view.trick.plays else Text("—")))
    if view.last_trick.plays:  # with an empty trick_history: the previous deal's final trick
        # once the match is over there is no deal after it: the final deal's ninth trick
        label = "last trick" if view.trick_history or view.over else "last trick (previous deal)"
        parts.append(_labelled(label, trick_text(view.last_trick, summary, me)))
    if me is not None:
        parts.extend([*gap, _labelled("your hand", hand_text(view))])
    return Group(*parts)


def deal_results_table(view: Any, summary: Any | None, last: int = 6) -> Table | Text:
    """The last ``last`` scored deals: one row per deal, one column per seat (nothing before
    the first deal is scored)."""
    me = view.seat if view.HasField("seat") else None
    if not view.scores.deal_results.values:
        return Text("")
    results = struct_value(view.scores.deal_results)
    seats = len(view.hand_sizes)
    # Georgian Joker's cells read "points (a/b)": say which number is the bid
    bidding = any(isinstance(r.get("bids"), list) and isinstance(r.get("taken"), list) for r in results)
    grid = Table(title="deals: points (tricks taken/bid)" if bidding else "deals", box=None, show_header=True,
                 header_style="bold")
    grid.add_column("#")
    for seat in range(seats):
        grid.add_column(Text(seat_name(summary, seat, me)))  # a name as written, never markup
    start = max(0, len(results) - last)
    for number, result in enumerate(results[start:], start=start + 1):
        cells = []
        for seat in range(seats):
            cells.append(_deal_cell(result, seat))
        grid.add_row(str(number), *cells)
        adjustments = pulka_adjustments(result)
        if any(adjustments):
            # GJ-8: the premium and moshla go on the totals, not on the deal's scores: without
            # this row the score column jumped by them at a pulka's end with no word why
            grid.add_row(f"pulka {pulka_number(results, number - 1)}",
                         *(_adjustment_cell(value) for value in adjustments))
    return grid


def pulka_number(results: list[Any], index: int) -> int:
    """Georgian Joker: the pulka that the deal ``results[index]`` ends (the deals that carry a
    settlement up to it, GJ-8: ``premium`` and ``moshla`` come after a pulka's last deal only)."""
    return sum(1 for r in results[:index + 1] if isinstance(r, Mapping) and "premium" in r)


def pulka_adjustments(result: Mapping[str, Any]) -> list[int]:
    """Per seat, the premium (positive, GJ-8.2) or moshla (negative, GJ-8.3) a pulka's last
    deal settled; ``[]`` for any other deal."""
    premium, moshla = result.get("premium"), result.get("moshla")
    if not isinstance(premium, list) or not isinstance(moshla, list):
        return []
    return [int(p or 0) + int(m or 0) for p, m in zip(premium, moshla)]


def _adjustment_cell(value: int) -> str:
    if value > 0:
        return f"+{value} premium"
    return f"{value} moshla" if value < 0 else ""


def pulka_line(view: Any, summary: Any | None, result: Mapping[str, Any], number: int) -> Text | None:
    """What a pulka's end settled (GJ-8), in the rulebook's words: ``pulka 1 settled: premium
    you +250 (every bid made: the best deal again); moshla p1 -200, p2 -40 (their best deal
    cancelled)``, or that nobody made every bid. None for a deal that ends no pulka."""
    premium, moshla = result.get("premium"), result.get("moshla")
    if not isinstance(premium, list) or not isinstance(moshla, list):
        return None
    me = view.seat if view.HasField("seat") else None
    options = struct_dict(view.table).get("options") or {}
    out = Text(f"pulka {number} settled: ", style="bold")
    if options.get("pulka_premium") is False:
        return out.append("no premium at this table (pulka_premium off)")
    made = [s for s in range(len(premium)) if premium[s]]
    if not made:
        # a qualifier's premium is never 0 (a made deal scores 50 at least, GJ-7.2, 7.3), so
        # no premium means nobody made every bid of the pulka (GJ-8.5)
        return out.append("nobody made every bid, no premium or moshla")
    out.append("premium " + ", ".join(f"{seat_name(summary, s, me)} +{premium[s]}" for s in made)
               + " (every bid made: the best deal again)")
    cancelled = [s for s in range(len(moshla)) if moshla[s]]
    if cancelled:
        out.append("; moshla " + ", ".join(f"{seat_name(summary, s, me)} {moshla[s]}" for s in cancelled)
                   + " (their best deal cancelled)")
    return out


def deal_result_lines(view: Any, summary: Any | None, last: int = 1) -> list[Text]:
    """The last ``last`` scored deals, one line each (``deal 3 scored: you 80, ada 22``): for
    the outputs read by scripts, where a table repeated its title and heading every deal."""
    me = view.seat if view.HasField("seat") else None
    results = struct_value(view.scores.deal_results)
    seats = len(view.hand_sizes)
    lines = []
    for number, result in enumerate(results[max(0, len(results) - last):], start=max(0, len(results) - last) + 1):
        bidding = isinstance(result.get("bids"), list) and isinstance(result.get("taken"), list)
        line = Text(f"     deal {number} scored" + (", points (tricks taken/bid)" if bidding else "") + ": ",
                    style="bold")
        line.append(", ".join(f"{seat_name(summary, seat, me)} {_deal_cell(result, seat, words=True)}"
                              for seat in range(seats)))
        lines.append(line)
        settled = pulka_line(view, summary, result, pulka_number(results, number - 1))
        if settled is not None:  # Georgian Joker's premium and moshla (GJ-8)
            lines.append(Text("     ").append_text(settled))
    return lines


def _deal_cell(result: Mapping[str, Any], seat: int, words: bool = False) -> str:
    """A seat's entry of a scored deal; ``words``: the line form (no column width to keep),
    where a Georgian Joker khishti (a bid of 1 or more, no trick: the table's penalty, GJ-7.4)
    says so, "-200 (0/2, khishti)", and not as a miss worth minus points."""
    if result.get("thrown_in"):
        return "thrown in"
    for key in ("scores", "scored", "below"):
        if isinstance(result.get(key), list) and seat < len(result[key]):
            value = result[key][seat]
            above = result.get("above")
            if key == "below" and isinstance(above, list) and seat < len(above) and above[seat]:
                # Jo-Jotte's premiums (nullo, slam, rubber bonus) are scored above the line
                return f"{value} (+{above[seat]} above)"
            bids, taken = result.get("bids"), result.get("taken")
            if isinstance(bids, list) and isinstance(taken, list):
                khishti = words and taken[seat] == 0 and (bids[seat] or 0) >= 1
                return f"{value} ({taken[seat]}/{bids[seat]}{', khishti' if khishti else ''})"
            if isinstance(taken, list):
                return f"{value} ({taken[seat]} tricks)"
            return str(value)
    return ""


def trick_won_by(view: Any, seat: int, action: Any) -> int | None:
    """The winner of the trick that ``seat``'s ``action`` completed, from the view after it
    (the trick in progress empty again, the last trick ending with that card), else None. The
    event lines (the screens' logs, --autoplay, --plain) listed the cards of every trick and
    never who took it: a reader of a log worked it out from who led next."""
    if action.kind != cards_pb2.ACTION_KIND_PLAY or view.trick.plays or not view.last_trick.plays:
        return None
    last = view.last_trick.plays[-1]
    if last.seat != seat or last.card.code != action.card.code or not view.last_trick.HasField("winner"):
        return None
    return view.last_trick.winner


def column_move_note(view: Any, seat: int, notation: str, me: int | None) -> str:
    """Japanese Joker: what a table play moved to the player's hand (JJK-4.2, 4.3, public by
    JJK-9.2), from the ``deal_actions`` entry of that play in the event's view: ``" (column: a
    hidden card to the hand)"``, ``" (table cleared: 2 hidden cards and Q♠ to the hand)"``;
    the viewer's own play names the cards it received (``moved_cards``, in its view only).
    The log said "p1: play K♦" for a hand card and a column card alike, so the opponent's
    growing hand went unexplained. ``""`` for a hand card or when the view has no such entry
    (the deal is over)."""
    actions = struct_dict(view.table).get("deal_actions") or []
    entry = next((a for a in reversed(actions) if isinstance(a, Mapping) and a.get("seat") == seat
                  and a.get("action") == notation), None)
    if entry is None or entry.get("from") != "table":
        return ""
    received = entry.get("moved_cards") if seat == me else None
    public = [card_text(c).plain for c in entry.get("moved_public") or []]
    hidden = int(entry.get("moved_hidden") or 0)
    if received:
        moved = " ".join(card_text(c).plain for c in received) + (" and " + " ".join(public) if public else "")
        return f" ({'table cleared' if public else 'column'}: {moved} to your hand)"
    moved = "a hidden card" if hidden == 1 else f"{hidden} hidden cards"
    return f" ({'table cleared' if public else 'column'}: {moved}{' and ' + ' '.join(public) if public else ''} to the hand)"


def _is_bot_seat(summary: Any | None, seat: int) -> bool:
    return (summary is not None and seat < len(summary.seats)
            and summary.seats[seat].kind == match_pb2.SEAT_KIND_BOT)


def event_text(event: Any, summary: Any | None, me: int | None) -> Text | None:
    """One log line for a WatchMatch event (None for heartbeats)."""
    kind = event.kind
    if kind == match_pb2.EVENT_KIND_HEARTBEAT:
        return None
    if kind == match_pb2.EVENT_KIND_ACTION:
        who = seat_name(summary, event.seat, me) if event.HasField("seat") else "?"
        actor = ACTOR_NAMES.get(event.by, "")
        if event.by == match_pb2.ACTOR_BOT and _is_bot_seat(summary, event.seat):
            actor = ""  # the seat's name already says it is a bot
        out = Text(f"{event.seq:>4} {who}{actor}: ", style="dim")
        # the view names the cards of an exchange and a joker lead's trump; the glosses of the
        # calls are for the choice
        context = event.view if event.HasField("view") and (
            event.action.kind == cards_pb2.ACTION_KIND_EXCHANGE or event.action.named_suit) else None
        out.append_text(action_text(event.action, context, summary))
        if event.HasField("view") and event.view.game == "japanese_joker" and event.HasField("seat"):
            out.append(column_move_note(event.view, event.seat, event.action.notation, me), style="dim")
        if event.HasField("view") and event.HasField("seat"):
            winner = trick_won_by(event.view, event.seat, event.action)
            if winner is not None:
                out.append(f"  → trick to {seat_name(summary, winner, me)}", style="bold")
                if event.view.last_trick.HasField("points"):  # Klaberjass, Jo-Jotte
                    out.append(f" (+{event.view.last_trick.points})", style="dim")
        return out
    if kind == match_pb2.EVENT_KIND_SNAPSHOT:
        return Text(f"{event.seq:>4} joined the table", style="dim")
    if kind == match_pb2.EVENT_KIND_PRESENCE:
        who = seat_name(summary, event.seat, me) if event.HasField("seat") else "someone"
        return Text(f"     {who}: {event.reason.replace('_', ' ')}", style="yellow")
    if kind == match_pb2.EVENT_KIND_MATCH_ENDED:
        return Text(f"{event.seq:>4} match ended ({event.reason or 'rules'})", style="bold green")
    return Text(f"{event.seq:>4} {match_pb2.EventKind.Name(kind)}")


def connection_text(state: StreamState | None) -> str:
    """The screens' banner for the watch stream's connection (``""`` while it is up): a
    frozen table must not pass for one where nobody moves."""
    if state is None:
        return ""
    if state.state == RECONNECTING:
        tries = f"try {state.attempt}" + (f" of {state.max_attempts}" if state.max_attempts else "")
        return f"connection lost — reconnecting ({tries})…"
    if state.state == GAVE_UP:
        return f"connection lost for good after {state.attempt} tries"
    return ""


def connection_lost_reason(state: StreamState) -> str:
    """Why a screen closed without its stream: the error (none: the server ended it), and the
    tries made once it was given up."""
    why = f"{state.error.code.name}: {state.error.message}" if state.error is not None else "the stream ended"
    return why + (f", {state.attempt} tries in a row" if state.state == GAVE_UP else "")


def connection_log_text(state: StreamState, was_down: bool) -> Text | None:
    """The event log's line for a connection change: the drop (its first try only, with the
    error), the return; None for the other tries and the end (the screen closes then)."""
    if state.state == RECONNECTING and not was_down:
        why = f" ({state.error.code.name}: {state.error.message})" if state.error else ""
        return Text(f"     connection lost{why}: reconnecting", style="bold red")
    if state.state == RESUMED:
        tries = f"{state.attempt} tr{'y' if state.attempt == 1 else 'ies'}"
        return Text(f"     connection back after {tries}: catching up", style="bold green")
    return None
