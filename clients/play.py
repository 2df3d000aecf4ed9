"""``python -m clients.play``: play a match in the terminal, against bots or people.

    python -m clients.play --game georgian_joker --bots heuristic,heuristic,search

Without ``--target`` it starts an engine of its own (a child process, database in memory) and
stops it at the end; with ``--target host:port`` it uses a running service. It creates a match
whose other seats are the given bots (``open`` leaves a seat to another person), joins the
free seat and shows, from the server's view only:

* your hand; the table (trump, the Klaberjass / Jo-Jotte turn-up and who exchanged it,
  information card, auction and contract, melds, bella / jo-jotte, and between the deals what
  the last one came to; the Georgian Joker trump indicator and bids, Japanese Joker's columns); the
  trick in progress and the last trick; tricks taken; the scores and the last deals;
* your legal actions, chosen with the arrow keys and Enter or their number keys;
* the time left for the decision (the server plays the rulebook's auto-move after it);
* every event of the match as it happens, each deal's result as it is scored and what a Georgian
  Joker pulka's end settled (premium, moshla) (the stream resumes by itself after a network drop);
* while that stream is down, a red line at the top, "connection lost — reconnecting (try 3 of
  30)…", and your actions greyed out (a move is not sent); when it is back the line goes and the
  missed events are shown. After ``--reconnect-tries`` failed reopenings in a row it gives up
  (or you quit with q meanwhile): the screen closes with one line on stderr saying how to return
  to your seat (``--match ID --token-file PATH``: the seat token is saved to a file of its own
  for that) and exit status 3.

``q`` before the end leaves the match going on without you (your seat counts as away): the last
line says how to return to your seat (``--match ID --token-file PATH``, the seat token saved to
a file only you can read). ``--name`` is how the others see you (default: ``guest-`` and four random hex digits).

``--match ID`` joins an existing match instead (``--seat`` picks the seat), at the table it was
created with: the flags that set up a new one (``--game``, ``--bots``, ``--option``,
``--turn-time``, ``--listed``) are a usage error with it; with ``--token-file PATH`` it returns
to the seat of that seat token (one the operator reissued; ``--seat`` and ``--name`` are usage
errors with it). ``--listed`` shows the new match in the server's lobby while it waits for people
(``--bots open,...``), and ``--lobby`` lists the matches waiting there (then join one with ``--match ID``;
``--lobby`` and ``--list`` list and exit, and are usage errors with ``--match``). ``--autoplay
first|random`` plays without a screen (for scripts and demos): it prints the events, one line
each (never folded), each deal's result as it is scored and the final result, and exits 0
when the match is over; a dropped connection is one line on stderr, and its
return another (it keeps trying).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import secrets
import shlex
import sys
import tempfile
from typing import TYPE_CHECKING, Any, Callable, Sequence

if __name__ == "__main__":
    # A command, not the library: gRPC's C core writes only its errors (as `serve` has it), so
    # that a failure is the one "error" line and not a plain INFO line per failed handshake
    # before it (--tls to an engine without TLS); GRPC_VERBOSITY=INFO brings them back.
    # Before grpc is imported.
    os.environ.setdefault("GRPC_VERBOSITY", "ERROR")

import grpc  # noqa: E402
from rich.console import Console, Group
from rich.text import Text

from . import render, terminal_text
from .cardgames_client import (RESUMED, CardGamesError, Client, FileArgument, SeatSession, StreamState,
                               TableOptionAction, bot_names_arg, ca_file_arg, command_parser, connect, header_safe, int32_arg,
                               is_finished, is_my_turn, option_value, python_value, refuse_with_match, target_arg,
                               turn_time_arg)
from .local_service import LocalService, ServiceFailed
from engine_service.bounded_read import TOKEN_LIMIT, read_named
from engine_service.command_line import check_text, parse_args, stdout_guarded
from engine_service.transport.generated import match_pb2

if TYPE_CHECKING:  # the screen's modules import textual: only when a screen is shown
    from textual.widgets import RichLog

    from .play_screen import PlayApp


#: Where a seat's event stream starts: a seat is taken while its match waits at seq 0 (a match
#: starts when its last seat is taken, and a started match has no open seat), so after_seq 0
#: shows every action of the player's match, the ones made before the stream opened included
#: (a bot choosing trump the instant the last seat was taken). A match further along than the
#: server replays (docs/api.md) starts with a snapshot instead.
FROM_THE_START = 0
#: Reopenings of a dropped event stream in a row before the screen gives up (the library's
#: backoff waits up to 2 s between them: about half a minute; an engine restart takes seconds).
RECONNECT_TRIES = 30
#: Exit status once the connection is lost for good (1: an error the API answered).
EXIT_CONNECTION_LOST = 3
#: The status line for a move chosen while the connection is lost, and for one whose sending
#: lost it (no answer: it may have been played).
NOT_SENT = "not sent: the connection is lost — choose again once it is back"
SENDING_LOST = "the connection was lost while sending your move: once it is back the table shows whether it was played"


#: Board lines a short terminal drops, in this order, before the cut reaches the hand: each
#: says what another line or the player's memory also holds (the meld dialogue, the previous deal's last trick,
#: the information card, unused in play; the auction, once a contract or maker line says
#: how it ended; the breakdown of the deal before; the last trick of this deal).
SPARE_LINES = ("meld talk", "last trick (previous deal)", "information card", "auction", "last deal", "last trick")

#: How long the event stream waits for the match's summary after a presence event.
SUMMARY_WAIT_S = 2.0


async def summary_now(audience: Any, current: Any) -> Any:
    """The match's summary for a presence event (the names, who is away), or ``current`` when
    it cannot be had within :data:`SUMMARY_WAIT_S`: the event stream waits for it, and a call
    caught by a lost connection held the stream for a minute of retries, its failure (which
    says "connection lost" on the screen) unnoticed meanwhile."""
    try:
        return await asyncio.wait_for(audience.summary(), SUMMARY_WAIT_S)
    except (CardGamesError, asyncio.TimeoutError):
        return current


# ---- the screen ----------------------------------------------------------------------------


def log_scored_deals(log: RichLog, view: Any, summary: Any | None, logged: int | None) -> int:
    """Write to a screen's event log each deal scored since ``logged`` deals (None: the first
    view, whose deals were scored before the screen opened and are left to the deal results
    table), with what a Georgian Joker pulka's end settled, as --autoplay prints them; returns
    the deals now scored. On 80x24 the deal results below the board give way to the actions
    (or the spectator's log), and a pulka's premium and moshla were then on no line of the
    screen, the score column jumping by them."""
    scored = len(view.scores.deal_results.values)
    if logged is not None and scored > logged:
        for line in render.deal_result_lines(view, summary, last=scored - logged):
            log.write(line)
    return scored


def print_meld_talk(console: Console, view: Any, summary: Any | None, me: int | None, said: str | None) -> str | None:
    """Print the meld dialogue (KL-5.5, JJ-5.9: who said what of their melds) when it says
    something new; returns what it now says (``said``: what was printed last). --autoplay and
    clients.watch --plain showed the steps (``declare``, ``conceal``) but never the dialogue
    the board's "meld talk" line shows: what each player stated and who scored."""
    if view.game not in ("klaberjass", "jojotte"):
        return said
    _, dialogue = render.meld_points_and_dialogue(render.struct_dict(view.table))
    talk = render.meld_talk(dialogue, summary, me)
    text = talk.plain if talk is not None else None
    if text is not None and text != said:
        console.print(Text("     meld talk: ").append_text(talk), markup=False)
    return text


def print_scored_deals(console: Console, view: Any, summary: Any | None, seen: int | None, *,
                       table: bool = False) -> int:
    """Print each deal scored since ``seen`` deals (None: the first view, whose deals were
    scored before), as lines or as the deal results ``table``, then how the last one came to
    that (Klaberjass, Jo-Jotte: the entries alone, "you 0, bot 105", did not say the maker went
    down, nor what the totals were made of); returns the deals now scored. --autoplay and
    clients.watch --plain print them so: their output said who played what, never what a deal
    scored."""
    scored = len(view.scores.deal_results.values)
    if seen is not None and scored > seen:
        if table:
            console.print(render.deal_results_table(view, summary, last=scored - seen))
        else:
            for deal_line in render.deal_result_lines(view, summary, last=scored - seen):
                console.print(deal_line, markup=False)
        why = render.last_deal_line(view, summary, label=f"deal {scored}" if table else f"     deal {scored}")
        if why is not None and scored - seen == 1:
            console.print(why, markup=False)
    return scored


def board_rows(app: Any, renderable: Any) -> int:
    """The terminal rows ``renderable`` takes in ``app``'s board width (its width less the
    board's padding): what the play and watch screens measure to fit the deal results."""
    if not renderable:
        return 0
    options = app.console.options.update_width(max(1, app.size.width - 2))
    return len(app.console.render_lines(renderable, options, pad=False))


def fitted_board(view: Any, summary: Any | None, now: float, rows: Callable[[Any], int], room: int) -> Any:
    """The board for ``room`` rows (measured by ``rows``): whole if it fits, else without its
    blank lines, then without :data:`SPARE_LINES` one by one. The play screen cuts what is
    still too tall at the bottom, and its bottom row is the hand: a Jo-Jotte board with an
    exchange, a long auction, melds and a pot on 80x22 lost "your hand"; the spectator's
    screen squeezed its event log."""
    board = render.board(view, summary, now)
    if rows(board) > room:
        board = render.board(view, summary, now, compact=True)
    for label in SPARE_LINES:
        if rows(board) <= room:
            break
        plain = [part.plain for part in board.renderables if isinstance(part, Text)]
        if label == "auction" and not any(line.startswith(("contract:", "maker:")) for line in plain):
            continue  # the auction in progress is what the player answers
        board = Group(*(part for part in board.renderables
                        if not (isinstance(part, Text) and part.plain.startswith(label + ":"))))
    return board


def fitted_deals(view: Any, summary: Any | None, rows: Callable[[Any], int], room: int) -> Any | None:
    """The deal results table with as many of the last six scored deals as fit in ``room``
    rows (measured by ``rows``), None when not even the last one does. On 80x24 the whole
    table gave way to the actions after three Klaberjass or Japanese Joker deals, so that
    no deal's result was on screen again for the rest of the match."""
    if view is None or not view.scores.deal_results.values:
        return None
    for last in range(min(6, len(view.scores.deal_results.values)), 0, -1):
        table = render.deal_results_table(view, summary, last=last)
        if rows(table) <= room:
            return table
    return None


# ---- without a screen ----------------------------------------------------------------------


async def autoplay(session: SeatSession, policy: str, console: Console, summary: Any | None = None,
                   seed: int | None = None) -> Any:
    """Play the seat by ``policy`` (``first`` legal action, or ``random``) until the match ends,
    printing every event; returns the final MatchSummary."""
    rng = random.Random(seed)

    def decide(view: Any) -> str:
        legal = [a.notation for a in view.legal_actions]
        return legal[0] if policy == "first" else rng.choice(legal)

    newest = -1  # the seq of this seat's last action: an older event's view is out of date
    deals_seen: int | None = None
    talk: str | None = None  # the meld dialogue as last printed
    unsent = False  # a move whose sending lost the connection: decided again on the next event
    async for event in session.watch(after_seq=FROM_THE_START, on_connection=stderr_notices()):
        if event.kind == match_pb2.EVENT_KIND_PRESENCE:
            # a player who joined after the start had the name "seat 1 (open)" to the end
            summary = await summary_now(session, summary)
        line = render.event_text(event, summary, session.seat)
        if line is not None:
            console.print(line)
        if event.HasField("view"):
            # each deal's result as it is scored (clients.watch --plain prints them too): the
            # output said who played what, never what a deal scored, only the final totals
            talk = print_meld_talk(console, event.view, summary, session.seat, talk)
            deals_seen = print_scored_deals(console, event.view, summary, deals_seen)
        if event.kind == match_pb2.EVENT_KIND_MATCH_ENDED:
            break
        if event.kind == match_pb2.EVENT_KIND_SNAPSHOT:
            newest = min(newest, event.seq)  # the match as it stands: restored from a backup, it went back
        view = event.view if event.HasField("view") and event.view.seq >= newest else None
        if view is None and unsent:  # a heartbeat once the stream is back: the turn may still be ours
            with contextlib.suppress(CardGamesError):
                view = await session.view()
        if view is not None and is_my_turn(view) and not is_finished(view.status):
            try:
                reply = await session.act(decide, view)
            except CardGamesError as exc:
                if exc.code not in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED) or exc.reason:
                    raise
                # an engine restarting: the move went unanswered (its retries used up). It
                # ended the program with "error: UNAVAILABLE", while the stream reconnects
                # by itself; the next event (the move's, or a heartbeat) says what to do.
                unsent = True
                continue
            unsent = False
            if reply is not None:
                newest = reply.seq
    return await session.summary()


def stderr_notices() -> Callable[[StreamState], None]:
    """An ``on_connection`` hook for the modes without a screen (--autoplay, clients.watch
    --plain): the drop and the return, one line each on stderr, so that stdout stays the
    events' and a log shows why they paused."""
    console = terminal_text.console(stderr=True, highlight=False, soft_wrap=True)
    down = False

    def notice(state: StreamState) -> None:
        nonlocal down
        line = render.connection_log_text(state, down)
        down = state.state != RESUMED
        if line is not None:
            console.print(line.plain.strip(), markup=False)

    return notice


# ---- command line --------------------------------------------------------------------------


def parse_option(text: str, game: Any) -> tuple[str, str | int | bool]:
    """``name=value`` typed by the game's OptionSpec (ListGames)."""
    name, sep, raw = text.partition("=")
    if not sep:
        raise SystemExit(f"error: --option wants name=value, not {text!r}")
    spec = next((o for o in game.options if o.name == name), None)
    if spec is None:
        known = ", ".join(o.name for o in game.options) or "none"
        raise SystemExit(f"error: {game.id} has no option {name!r} (options: {known})")
    if spec.type == match_pb2.OPTION_TYPE_BOOL:
        if raw.lower() not in ("true", "false"):
            raise SystemExit(f"error: {name} is true or false")
        return name, raw.lower() == "true"
    if spec.type == match_pb2.OPTION_TYPE_INT:
        try:
            value = int(raw)
            option_value(value)  # within the API's int64
        except ValueError:
            raise SystemExit(f"error: {name} is an integer ({spec.allowed_text})") from None
        return name, value
    return name, raw


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"a whole number of 1 or more, not {text!r}")
    return value


def build_parser() -> argparse.ArgumentParser:
    p = command_parser("python -m clients.play", __doc__.split("\n\n")[0],
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--target", type=target_arg, help="host:port of a running engine (default: start one)")
    p.add_argument("--tls", action="store_true", help="connect with TLS")
    p.add_argument("--ca", type=ca_file_arg, metavar="FILE", help="PEM root certificate(s) for --tls")
    p.add_argument("--server-name", help="TLS name to verify instead of the target's host (implies --tls)")
    p.add_argument("--game", help="game id (klaberjass, jojotte, georgian_joker, japanese_joker)")
    # the flags of a new match's table default to None (not given), so that main can refuse
    # them with --match (NEW_TABLE_FLAGS)
    p.add_argument("--bots", type=bot_names_arg,
                   help="comma-separated bot names for the other seats, in seat order ('open' leaves a "
                        "seat for another person); default: 'random' in every other seat")
    p.add_argument("--seat", type=int32_arg, help="your seat (default: 0 for a new match, the first open one "
                   "for --match; not with --token-file, whose token holds the seat)")
    p.add_argument("--option", action=TableOptionAction, metavar="NAME=VALUE",
                   help="a table option (repeatable); each game has its own, listed by --list: e.g. "
                   "kl_target_score=300 (klaberjass), target_score=11 (japanese_joker)")
    p.add_argument("--turn-time", type=turn_time_arg, metavar="SECONDS",
                   help="time per decision before the server plays the rulebook's auto-move, 10 to 120 "
                   "(default: the game's; the screen counts it down)")
    p.add_argument("--match", metavar="MATCH_ID", help="join this match instead of creating one (its table "
                   "is set: not with --game, --bots, --option, --turn-time, --listed)")
    p.add_argument("--token-file", type=token_file_arg, metavar="PATH",
                   help="with --match: return to your seat with its seat token: the file named when the screen "
                   "lost its connection for good, or one the operator gave you (python -m clients.admin "
                   "reissue-token MATCH_ID SEAT -o PATH)")
    p.add_argument("--name", help="your player name, as the other players and spectators see it "
                   "(default: guest- and four random hex digits; not with --token-file, whose seat is named)")
    p.add_argument("--reconnect-tries", type=positive_int, default=RECONNECT_TRIES, metavar="N",
                   help="the screen gives up a lost connection after N reopenings of the event stream in a "
                   f"row (default {RECONNECT_TRIES}, about half a minute), then prints how to return to your "
                   f"seat and exits with status {EXIT_CONNECTION_LOST}")
    p.add_argument("--autoplay", choices=("first", "random"),
                   help="no screen: play by this policy, print the events and the result")
    p.add_argument("--seed", type=int, help="seed of --autoplay random (only with it)")
    p.add_argument("--db", help="database of the engine started without --target (default: memory:; not with "
                   "--target)")
    p.add_argument("--list", action="store_true", help="list the games and bots, then exit (not with --match)")
    p.add_argument("--listed", action="store_true",
                   help="show the new match in the lobby while it waits for people (seats 'open' in --bots)")
    p.add_argument("--lobby", action="store_true",
                   help="list the matches waiting for people in the lobby (only --game's with --game), then exit "
                   "(not with --match)")
    return p


def read_seat_token(path: str) -> str:
    """The seat token of ``--token-file``, read before the engine is reached; ValueError with one
    line naming the file when it holds none. It was read whole once connected: ``/dev/zero``
    filled the memory, a named pipe no one writes to waited for ever, and a file far larger
    than a token went to the engine as its header (read_named)."""
    raw = read_named(path, TOKEN_LIMIT, "the seat token file")  # UnreadableFile is a ValueError
    try:
        token = raw.decode("utf-8").strip()
    except UnicodeDecodeError:  # it said "UnicodeDecodeError"
        raise ValueError(f"the seat token file {path} is not text: no seat token") from None
    if not token:
        raise ValueError(f"the seat token file {path} is empty")
    if not header_safe(token):  # gRPC's ExecuteBatchError traceback; never quoted
        raise ValueError(f"the seat token file {path} has characters a seat token never has (spaces, "
                         "control or non-ASCII characters): no seat token")
    return token


def token_file_arg(path: str) -> FileArgument:
    """argparse ``type`` of ``--token-file``: the file and its seat token (:func:`read_seat_token`),
    a usage error (exit status 2) naming the file when it holds none, as a bad ``--ca`` file is
    (cardgames_client.ca_file_arg) and clients.admin's ``--admin-token-file``; it exited 1, as if
    the engine had refused something, after starting an engine of its own when no --target was
    given."""
    try:
        return FileArgument(path, read_seat_token(path))
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


async def open_seat(client: Client, args: argparse.Namespace, console: Console) -> tuple[SeatSession, Any]:
    """Create the match (or use --match) and join it."""
    if args.match and args.token_file:
        # back to a seat taken before (docs/operations.md, "A player lost their seat token"): a
        # join would take another seat, or none in a started match
        session = client.seat_session(args.match, -1, args.seat_token)
        view = await session.view()
        if not view.HasField("seat"):
            # a view of no seat is a spectator's: the screen showed it as seat 0's, "you" and all
            raise SystemExit(f"error: the seat token file {args.token_file} holds no seat token of match {args.match}")
        session.seat = view.seat
        return session, await session.summary()
    if args.match:
        session = await client.join(args.match, seat=args.seat, player_name=args.name)
        return session, await session.summary()
    games = {g.id: g for g in await client.list_games()}
    if args.game not in games:
        raise SystemExit(f"error: unknown game {args.game!r}; games: {', '.join(games)}")
    game = games[args.game]
    me = 0 if args.seat is None else args.seat
    if not 0 <= me < game.num_seats:
        raise SystemExit(f"error: {game.id} has seats 0 to {game.num_seats - 1}")
    others = [b.strip() for b in (args.bots or "").split(",") if b.strip()] or ["random"] * (game.num_seats - 1)
    if len(others) != game.num_seats - 1:
        wanted = game.num_seats - 1  # "give 1 bots" read in every two-player game
        raise SystemExit(f"error: {game.name} has {game.num_seats} seats: give {wanted} bot{'s' * (wanted != 1)} "
                         f"(or 'open'), not {len(others)}")
    seats: list[str | None] = list(others)
    seats.insert(me, None)
    options = dict(parse_option(o, game) for o in args.option or ())
    name = f"{args.name} vs bots" if "open" not in others else f"{args.name}'s table"
    summary = await client.create_match(game.id, options=options, seats=seats, turn_time_s=args.turn_time or 0.0,
                                        name=name, listed=args.listed)
    session = await client.join(summary.match_id, seat=me, player_name=args.name)
    console.print(f"match {summary.match_id}: {game.name}, you are seat {me}; spectators: "
                  f"python -m clients.watch {summary.match_id} --target {client.target}", style="dim")
    return session, await session.summary()


async def run(args: argparse.Namespace, target: str, console: Console) -> int:
    roots = args.ca.value if args.ca else None  # read as the command line was parsed (ca_file_arg)
    args.seat_token = args.token_file.value if args.token_file else None  # read by token_file_arg
    async with connect(target, tls=args.tls, root_certificates=roots, server_name=args.server_name) as client:
        await client.wait_ready()
        if args.list:
            for g in await client.list_games():
                console.print(f"{g.id}: {g.name}, {g.num_seats} seats; options: "
                              + ", ".join(f"{o.name} ({o.allowed_text}; default "
                                          f"{json.dumps(python_value(o.default_value))})" for o in g.options))
            for b in await client.list_bots():
                # the plugin wrote the description: '[/x]' in it was rich markup, a MarkupError
                # traceback instead of the list, and '[bold]' was styled rather than printed
                console.print(f"bot {b.name}: {', '.join(b.games)}: {b.description}",
                              markup=False, highlight=False)
            # a plugin that did not load is said, not just missing (the service's log has more)
            for f in await client.list_bot_load_failures():
                console.print(f"bot plugin {f.plugin} failed to load ({f.stage}): {f.reason}",
                              markup=False, highlight=False)
            return 0
        if args.lobby:
            # every page: the lobby answers at most 100 tables a page (docs/api.md, "Paging")
            tables = [m async for m in client.all_open_matches(args.game or "", limit=100)]
            print_lobby(tables, client.target, console)
            return 0
        session, summary = await open_seat(client, args, console)
        if args.autoplay:
            final = await autoplay(session, args.autoplay, console, summary, args.seed)
        else:
            from .play_screen import PlayApp  # textual only when a screen is shown

            app = PlayApp(session, summary, reconnect_tries=args.reconnect_tries)
            await app.run_async()
            if app.connection is not None:  # given up, or quit (q) while down
                print(connection_lost_line(app, session, args, target), file=sys.stderr)
                return EXIT_CONNECTION_LOST
            final = await session.summary()
            if not is_finished(final.status):  # quit (q) mid-match: the seat goes on without the screen
                print_result(final, session.seat, console, way_back=way_back(session, args, target))
                return 0
        print_result(final, session.seat, console)
        return 0


def connection_lost_line(app: PlayApp, session: SeatSession, args: argparse.Namespace, target: str) -> str:
    """The one line printed once the event stream is given up, or the screen quit while it
    was down: why, and the command that returns to the seat (its token saved to a file only
    the user can read, unless it came from ``--token-file``): the screen is gone, and a join
    would take another seat."""
    assert app.connection is not None
    why = render.connection_lost_reason(app.connection)
    what = ("the connection to the engine is lost for good" if app.lost
            else "you quit while the connection to the engine was lost")
    if not args.target:  # the engine of its own stops with the program, and the match with it
        return f"error: {what} ({why}); {OWN_ENGINE_ENDS}"
    return f"error: {what} ({why}); {way_back(session, args, target)}"


#: The way back from a match on the engine ``clients.play`` started itself: there is none.
OWN_ENGINE_ENDS = "the match was on this program's own engine and ends with it"


def way_back(session: SeatSession, args: argparse.Namespace, target: str) -> str:
    """``"to return to your seat: python -m clients.play ... --match ID --token-file PATH"``:
    the seat token saved to a file only the user can read (unless it came from
    ``--token-file``), since the screen that held it is gone and a join would take another
    seat (a started match has none); the token itself, on the user's terminal, when no file
    can be written; :data:`OWN_ENGINE_ENDS` without ``--target``."""
    if not args.target:
        return OWN_ENGINE_ENDS
    try:
        token_file = args.token_file.path if args.token_file else save_token(session)
    except OSError as exc:
        # a full disk (or no temporary folder): the screen that held the token is gone, and a
        # traceback ended the program with the only way back to the seat
        token_file = "FILE"
        lost = (f"your seat token could not be saved to a file ({exc.strerror or exc}): it is "
                f"{session.token}; put it in a file only you can read, then ")
    else:
        lost = ""
    command = ["python", "-m", "clients.play", "--target", target]
    if args.tls:
        command.append("--tls")
    if args.ca:
        command += ["--ca", args.ca.path]
    if args.server_name:
        command += ["--server-name", args.server_name]
    command += ["--match", session.match_id, "--token-file", token_file]
    return f"to return to your seat: {lost}{shlex.join(command)}"


def save_token(session: SeatSession) -> str:
    """The seat token in a new file readable by the user only (mkstemp: mode 0600); its path."""
    fd, path = tempfile.mkstemp(prefix=f"cardgames-{session.match_id}-seat{session.seat}-", suffix=".token")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(session.token + "\n")
    except BaseException:
        os.unlink(path)  # an empty or half-written file is no way back
        raise
    return path


def lobby_seat_text(seat: Any) -> str:
    """A lobby seat: ``search (bot)``, ``open``, ``ada``, or ``ada (away)`` for a player who
    joined and has no stream open (SeatInfo.present): a host who quit stayed listed as if
    waiting at the table, and whoever joined started a match with an absent opponent, to be
    won only by the grace period's forfeit."""
    if seat.kind == match_pb2.SEAT_KIND_BOT:
        return f"{seat.bot} (bot)"
    if not seat.taken:
        return "open"
    return (seat.player_name or "taken") + ("" if seat.present else " (away)")


def print_lobby(matches: Sequence[Any], target: str, console: Console) -> None:
    """One line per match waiting in the lobby: id, game, name, who sits where, the options."""
    if not matches:
        console.print("no match is waiting for players in the lobby")
        return
    for m in matches:
        seats = ", ".join(f"{s.seat}: " + lobby_seat_text(s) for s in m.seats)
        options = ", ".join(f"{k}={json.dumps(python_value(v))}" for k, v in sorted(m.options.items()))
        # names are anyone's to choose: printed as text, never read as markup
        console.print(f"{m.match_id}  {m.game}  {m.name!r}  seats {seats}"
                      + (f"  options {options}" if options else ""), highlight=False, markup=False)
    console.print(f"join one: python -m clients.play --target {target} --match MATCH_ID", style="dim")


def print_result(summary: Any, seat: int, console: Console, way_back: str | None = None) -> None:
    """The last line: winners and totals, or, for a match quit (q) before its end, that it goes
    on, what the absence means and ``way_back`` (:func:`way_back`)."""
    status = match_pb2.MatchStatus.Name(summary.status).removeprefix("MATCH_STATUS_").lower()
    if not is_finished(summary.status):
        # quit (q) before the end: it read "active: winners none; totals None", as if the match
        # had ended without a result, though it goes on and the player's absence counts
        if way_back == OWN_ENGINE_ENDS:
            console.print(f"match {summary.match_id} is still {status} (seq {summary.seq}): you quit "
                          f"without resigning; {OWN_ENGINE_ENDS}", markup=False)
            return
        # the seat token went with the screen: without the way back a player who quit by
        # mistake could not take the seat again (a join takes another seat, and there is none)
        console.print(f"match {summary.match_id} is still {status} (seq {summary.seq}): you quit without "
                      "resigning, so your seat counts as away; after the grace period the rulebook's "
                      "absence policy applies (a forfeit in a two-player game, a bot for your seat in "
                      "Georgian Joker)" + (f"; {way_back}" if way_back else ""), markup=False)
        return
    console.print(render.result_line(summary, seat), markup=False)


def default_name() -> str:
    """The player name without ``--name``: ``guest-`` and four random hex digits. It was "you",
    which is how every screen names its own seat, so the other players, the spectators and the
    lobby ("you's table") saw a player called "you", and two players who both left it out were
    both "you". Not the login name: that would show an account name to strangers at a listed
    table without the player choosing to."""
    return f"guest-{secrets.token_hex(2)}"


#: The flags that set up the table of a new match, with the ``args`` attribute of each: a usage
#: error with ``--match`` (refuse_with_match).
NEW_TABLE_FLAGS = (("--game", "game"), ("--bots", "bots"), ("--option", "option"), ("--turn-time", "turn_time"),
                   ("--listed", "listed"))


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parse_args(parser, argv)  # an unknown flag named, its value (a seat token?) not shown
    check_text(parser, args, paths={"ca", "token_file", "db"})
    if not args.game and not args.match and not args.list and not args.lobby:
        parser.error("give --game (a new match), --match ID (join one), --lobby or --list")
    if args.token_file and not args.match:
        parser.error("--token-file returns to a seat of --match ID: give both")
    # each was dropped without a word: the seat is the token's (the player came back to
    # another seat than the one asked for); --lobby and --list list and exit, joining nothing
    if args.token_file and args.seat is not None:
        parser.error("--seat picks the seat a join takes, and --token-file returns to the seat its token holds: "
                     "give one or the other")
    if args.token_file and args.name is not None:
        parser.error("--name names the player a join seats, and --token-file returns to a seat whose player is "
                     "named: give one or the other")
    if args.match and args.lobby:
        parser.error("--lobby lists the matches waiting for people, and --match ID joins one: give one or the other")
    if args.match and args.list:
        parser.error("--list lists the games and bots, and --match ID joins a match: give one or the other")
    refuse_with_match(parser, args, NEW_TABLE_FLAGS)
    if args.db is not None and args.target:
        # it was dropped without a word: the engine at --target keeps its own database
        parser.error("--db is the database of the engine started without --target: give one of them")
    if args.seed is not None and args.autoplay != "random":
        # it was dropped without a word: the screen's player, or --autoplay first, makes no random
        # choice, and a run thought repeatable was not
        parser.error("--seed seeds the choices of --autoplay random: give both")
    if args.name is None:
        args.name = default_name()
    # unfolded (soft_wrap): a line is one line in a pipe (--autoplay for scripts, where the
    # console folded at 80 columns, the spectator command and the result over two lines) and
    # a command shown on a terminal is copied whole (the terminal wraps it, not a newline)
    console = terminal_text.console(highlight=False, soft_wrap=True)
    service = None
    try:
        if args.target:
            target = args.target
        else:
            service = LocalService(db=args.db or "memory:")
            service.start()
            target = service.target
        # stdout on a full disk (--autoplay > FILE): one line, not rich's traceback
        return stdout_guarded(lambda: asyncio.run(run(args, target, console)), reader_left=1)
    except CardGamesError as exc:
        # on stderr, unfolded: a script reading the output (--autoplay, --plain) gets no error
        # among it, and a log one line per error (the console folds at 80 columns in a pipe)
        line = f"error: {exc}"
        if args.match and exc.reason == "MATCH_NOT_ACTIVE" and args.target:
            # a finished match has no seat to take; what a player who came to it can do is watch
            line += (f"; replay it with: python -m clients.watch {shlex.quote(args.match)} "
                     f"--target {shlex.quote(args.target)} --from-start")
        terminal_text.console(stderr=True, highlight=False, soft_wrap=True).print(line, style="bold red", markup=False)
        return 1
    except ServiceFailed as exc:  # the engine of its own (e.g. a --db it cannot open): no traceback
        assert service is not None
        print(f"error: the engine did not start: {service.failure(exc)}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    finally:
        if service is not None:
            service.stop()
            service.cleanup()


if __name__ == "__main__":
    sys.exit(main())
