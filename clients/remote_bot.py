"""``python -m clients.remote_bot``: run a bot plugin in one seat of a match on a running
service, over gRPC, exactly as a remote player would.

    python -m clients.remote_bot --target host:50051 --bot search --match MATCH_ID --seat 1
    python -m clients.remote_bot --bot heuristic --game klaberjass --opponents search

The bot is any installed plugin of the ``cardgames.bots`` entry-point group (or a module given
with ``--plugin``), loaded by the same plugin manager as the service's. This is how a bot runs
on its author's machine, with the author's CPU and libraries, against the authoritative server
(the Lichess bot model): the server sees an ordinary player with a seat token.

What the bot sees is what the server sends that seat: the protobuf ``View`` of each event is
turned back into the rules core's view dict (:func:`view_dict`), so a plugin written against
the service's bot host runs here unchanged, and one object plays the whole match, so its
optional callbacks (``on_match_start``, ``on_deal_end``, ``on_match_end``) are called. Each
decision runs in a thread (the event stream stays served) with a budget of ``--budget-ms``,
shortened to the server's deadline when the match has a turn timer. A bot failure (exception,
illegal answer) is replaced by the rulebook's auto-move, computed here from the same event's
view (rebuilt: the bot's copy is its own to change), and
reported on stderr. Every action is submitted with ``expected_seq``, so an action decided on a
view that is no longer current is refused by the server and the bot decides again on the next
event.

Without ``--target`` an engine is started as a child process (database in memory) for the
duration of the match.
"""

from __future__ import annotations

import argparse
import asyncio
import contextvars
import os
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Sequence

if __name__ == "__main__":
    # A command, not the library: gRPC's C core writes only its errors (as `serve` has it), so
    # that a failure is the one "error" line and not a plain INFO line per failed handshake
    # before it (--tls to an engine without TLS); GRPC_VERBOSITY=INFO brings them back.
    # Before grpc is imported.
    os.environ.setdefault("GRPC_VERBOSITY", "ERROR")

import grpc  # noqa: E402
from google.protobuf import json_format

from engine_service.command_line import check_text, parse_args, stdout_guarded
from engine_service.plugins.manager import (BotCatalog, PluginNotLoaded, PluginSettings, check_named_plugins,
                                            load_catalog)
from engine_service.plugins.runner import TIMEOUT, BotRunner, Reply
from engine_service.rules import get_game
from engine_service.rules.errors import InvalidOptions, UnknownGame
from engine_service.rules.game import Game
from engine_service.rules.options import BOOL, INT
from engine_service.transport.generated import cards_pb2, match_pb2

from .cardgames_client import (CardGamesError, Client, FailedPrecondition, SeatSession, ServerClock, StaleSequence,
                               DAY_S, bot_names_arg, ca_file_arg, command_parser, connect, int32_arg, is_finished, is_my_turn, positive_arg,
                               TableOptionAction, refuse_with_match, struct_value, target_arg,
                               turn_time_arg, whole_numbers)
from .local_service import LocalService, ServiceFailed

#: A call that failed so after the client's own retries reached no engine (a restart, a drop).
_NO_ANSWER = (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED)

NETWORK_MARGIN_S = 0.25  # kept back from the server's deadline for the round trip

_JOKER_MODE = {cards_pb2.JOKER_MODE_HIGH: "high", cards_pb2.JOKER_MODE_LOW: "low"}
_ANNOUNCEMENT = {cards_pb2.ANNOUNCEMENT_JO: "jo", cards_pb2.ANNOUNCEMENT_JOTTE: "jotte",
                 cards_pb2.ANNOUNCEMENT_BELLA: "bella"}
_SUIT = {cards_pb2.SUIT_SPADES: "S", cards_pb2.SUIT_HEARTS: "H", cards_pb2.SUIT_DIAMONDS: "D",
         cards_pb2.SUIT_CLUBS: "C"}


# ---- View (protobuf) -> the rules core's view dict ------------------------------------------



def _play(p: Any) -> dict[str, Any]:
    play: dict[str, Any] = {"seat": p.seat, "card": p.card.code}
    if p.joker_mode in _JOKER_MODE:
        play["joker_mode"] = _JOKER_MODE[p.joker_mode]
    if p.named_suit in _SUIT:
        play["named_suit"] = _SUIT[p.named_suit]
    if p.announcement in _ANNOUNCEMENT:
        play["announce"] = _ANNOUNCEMENT[p.announcement]
    if p.HasField("details"):
        play.update(struct_value(p.details))
    return play


def view_dict(view: Any) -> dict[str, Any]:
    """The rules core's view (``state.view(seat)``, engine_service/rules/game.py) of a
    protobuf ``View``: the common keys, and the game-specific ``table`` as it was sent.

    The wire carries a trick as its plays, winner and card points (Klaberjass, Jo-Jotte): the
    other fields some games put in ``last_trick`` (Klaberjass ``number``/``leader``, Jo-Jotte
    ``leader``/``value``, Georgian Joker ``leader``) are not rebuilt. ``table`` comes as sent,
    its ``tricks`` (Klaberjass, Jo-Jotte, Georgian Joker) included. Everything else is the
    rules core's view."""
    scores = view.scores
    rows = list(scores.totals)
    if len(rows) == 1 and rows[0].name == "total":
        totals: Any = list(rows[0].values)
    elif rows:
        totals = {r.name: list(r.values) for r in rows}
    else:
        totals = []
    last = None
    if view.HasField("last_trick") and view.last_trick.plays:
        last = {"plays": [_play(p) for p in view.last_trick.plays]}
        if view.last_trick.HasField("winner"):
            last["winner"] = view.last_trick.winner
        if view.last_trick.HasField("points"):
            last["points"] = view.last_trick.points
    return {
        "game": view.game,
        "phase": view.phase,
        "deal_number": view.deal_number,
        "dealer": view.dealer,
        "to_act": view.to_act if view.HasField("to_act") else None,
        "seat": view.seat if view.HasField("seat") else None,
        "hand": [c.code for c in view.hand],
        "hand_sizes": list(view.hand_sizes),
        "legal": [a.notation for a in view.legal_actions],
        "trick": [_play(p) for p in view.trick.plays],
        "last_trick": last,
        "tricks_taken": list(scores.tricks_taken),
        "totals": totals,
        "deal_results": struct_value(scores.deal_results) if scores.HasField("deal_results") else [],
        "over": view.over,
        "winners": list(view.winners),
        "table": struct_value(view.table) if view.HasField("table") else {},
    }


# ---- playing a seat ----------------------------------------------------------------------------

def decision_budget(view: Any, budget_s: float, turn_time_s: float, clock: ServerClock) -> float:
    """The bot's budget for the decision of ``view``: ``budget_s``, shortened to the time left
    before the view's deadline (on the server's clock) less NETWORK_MARGIN_S, or, without a
    deadline in the view, to the match's turn time less the margin."""
    budget = budget_s
    if view.HasField("deadline"):
        deadline = view.deadline.seconds + view.deadline.nanos / 1e9  # unix time, the server's
        budget = min(budget, deadline - clock.now() - NETWORK_MARGIN_S)
    elif turn_time_s > 0:
        budget = min(budget, turn_time_s - NETWORK_MARGIN_S)
    return max(0.0, budget)


@dataclass
class SeatStats:
    decisions: int = 0
    failures: dict[str, int] = field(default_factory=dict)
    stale: int = 0
    think_s: float = 0.0
    unanswered: int = 0  # moves the engine did not answer (an outage): decided again


def _call(bot: Any, method: str, *args: Any) -> None:
    fn = getattr(bot, method, None)
    if callable(fn):
        try:
            fn(*args)
        # a callback's failure never stops the match (Bot protocol), a sys.exit in it neither:
        # docs/bots.md, "one that raises is ignored" (in decide it is a crash, played as such)
        except (Exception, SystemExit) as exc:
            print(f"remote_bot: {method} raised {type(exc).__name__}", file=sys.stderr)


async def play_seat(session: SeatSession, runner: BotRunner, bot_name: str, game_id: str, *,
                    budget_s: float, seed: int = 0, verbose: bool = False) -> tuple[Any, SeatStats]:
    """Play ``session``'s seat with bot ``bot_name`` until the match ends; returns the final
    MatchSummary and what happened."""
    game = get_game(game_id)
    bot = runner.bot(bot_name, game_id)
    stats = SeatStats()
    summary = await session.summary()
    # the match's turn timer bounds every decision, also when an event's view carries no
    # deadline of its own (one published just before the server armed the next timer)
    turn_time = summary.turn_time.ToTimedelta().total_seconds() if summary.HasField("turn_time") else 0.0
    started = False
    results_seen = 0
    newest = -1  # the seq of this seat's last action: an older event's view is out of date
    clock = ServerClock()
    # a move the engine did not answer (UNAVAILABLE after the client's retries, ~5 s: a restart,
    # a network drop): it ended the program while the stream reconnects by itself; the turn is
    # decided again on the current view at the next event, a heartbeat of the stream come back
    unsent = False
    async for event in session.watch(after_seq=None):
        if event.kind == match_pb2.EVENT_KIND_HEARTBEAT:
            clock.heard(event.details if event.HasField("details") else None, time.time())
        if event.kind == match_pb2.EVENT_KIND_MATCH_ENDED:
            if event.HasField("view"):
                _call(bot, "on_match_end", view_dict(event.view))
            break
        if event.kind == match_pb2.EVENT_KIND_SNAPSHOT:
            newest = min(newest, event.seq)  # the match as it stands: restored from a backup, it went back
        if event.HasField("view"):
            current = event.view
        elif unsent:
            try:
                current = await session.view()
            except CardGamesError as exc:
                if exc.code not in _NO_ANSWER:
                    raise
                continue  # still away: the next heartbeat asks again
        else:
            continue
        # every call gets a view of its own (docs/bots.md: the bot may change it), and the
        # auto-move reads a fresh one: a failed bot may have wrecked its copy
        view = view_dict(current)
        if not started:
            started = True
            results_seen = len(view["deal_results"])
            _call(bot, "on_match_start", game_id, session.seat, view_dict(current))
        if event.kind == match_pb2.EVENT_KIND_SNAPSHOT:
            # restored from a backup: deals it had seen scored are to be played (and scored) again
            results_seen = min(results_seen, len(view["deal_results"]))
        if len(view["deal_results"]) > results_seen:
            results_seen = len(view["deal_results"])
            _call(bot, "on_deal_end", view_dict(current))
        if current.seq < newest or not is_my_turn(current) or is_finished(current.status):
            continue
        budget = decision_budget(current, budget_s, turn_time, clock)
        reply = await _decide(runner, bot_name, game_id, session.seat, view,
                              seed * 1_000_003 + current.seq, budget)
        stats.decisions += 1
        stats.think_s += reply.elapsed_s
        action = reply.action
        if action is None:
            stats.failures[reply.failure or "?"] = stats.failures.get(reply.failure or "?", 0) + 1
            print(f"remote_bot: {bot_name} failed ({reply.failure}: {reply.detail}); auto-move",
                  file=sys.stderr)
            action = game.auto_move(view_dict(current))
        unsent = False
        try:
            newest = (await session.submit(action, expected_seq=current.seq)).seq
            if verbose:
                print(f"seq {current.seq}: {action}")
        except StaleSequence:
            stats.stale += 1  # the match moved on (e.g. the turn timer): the next event decides
        except FailedPrecondition as refused:
            if refused.reason != "MATCH_NOT_ACTIVE":
                raise
            stats.stale += 1  # the match ended meanwhile: its MATCH_ENDED event comes next
        except CardGamesError as exc:
            if exc.code not in _NO_ANSWER:
                raise
            unsent = True
            stats.unanswered += 1
            print(f"remote_bot: the engine did not answer {action} ({exc.code.name}); "
                  "deciding again once it is back", file=sys.stderr)
    return await session.summary(), stats


def _in_daemon_thread(fn: Any, *args: Any, **kwargs: Any) -> asyncio.Future[Any]:
    """``fn(*args, **kwargs)`` in a new daemon thread (with the caller's context variables); its
    result or exception completes the returned future, unless the loop is gone by then."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[Any] = loop.create_future()
    context = contextvars.copy_context()

    def settle(result: Any, error: BaseException | None) -> None:
        if future.done():
            return
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(result)

    def run() -> None:
        try:
            result, error = context.run(fn, *args, **kwargs), None
        except BaseException as exc:  # noqa: BLE001 (handed to the awaiting coroutine)
            result, error = None, exc
        try:
            loop.call_soon_threadsafe(settle, result, error)
        except RuntimeError:  # the loop closed meanwhile: nobody waits for this answer
            pass

    threading.Thread(target=run, name="remote-bot-decide", daemon=True).start()
    return future


async def _decide(runner: BotRunner, bot_name: str, game_id: str, seat: int, view: dict[str, Any],
                  seed: int, budget: float) -> Reply:
    """One decision in a thread, as a worker of the service would make it: a bot's
    ``sys.exit`` is a ``crash`` answer, and a bot still thinking half the network margin past
    its budget is a ``timeout`` (the auto-move is sent in time). A thread cannot be killed: an
    overrunning bot's thread runs on, and its answer is dropped. The thread is a daemon of its
    own, not one of the loop's executor, which ``asyncio.run`` waits for at its end: a bot that
    never returns must not keep the client running after the match."""
    thinking = _in_daemon_thread(runner.decide, bot_name, game_id, seat, view, view["legal"], seed,
                                 budget, in_process=True)
    try:
        return await asyncio.wait_for(asyncio.shield(thinking), budget + NETWORK_MARGIN_S / 2)
    except TimeoutError:
        return Reply(None, TIMEOUT, f"no answer within its budget ({budget:.2f}s)", budget)


# ---- command line ------------------------------------------------------------------------------

class TableRefused(ValueError):
    """A new match's --seat, --opponents or --option that cannot make one (a usage error)."""


def _options(texts: Sequence[str], game: Game) -> dict[str, str | int | bool]:
    """``--option name=value`` typed by the game's table options in this client's rules core
    (as ``clients.play`` types them by ListGames): a bool is ``true`` or ``false`` in any case,
    an int an integer; a name the game has not, a value it does not allow or no ``=`` is a
    usage error, before any engine (the engine refused them once started, exit 1)."""
    specs = {spec.name: spec for spec in game.option_specs}
    options: dict[str, str | int | bool] = {}
    for text in texts:
        name, sep, raw = text.partition("=")
        if not sep or not name:  # "=300": no option has no name (the engine refused it once started)
            raise TableRefused(f"--option wants name=value, not {text!r}")
        spec = specs.get(name)
        if spec is None:
            raise TableRefused(f"--option {name}: {game.id} has no such option (options: "
                               f"{', '.join(sorted(specs)) or 'none'})")
        value: str | int | bool = raw
        if spec.kind == BOOL and raw.lower() in ("true", "false"):
            value = raw.lower() == "true"
        elif spec.kind == INT:
            try:
                value = int(raw)
            except ValueError:
                pass  # refused below, with what the option allows
        try:
            spec.check_new(value)
        except InvalidOptions as exc:
            raise TableRefused(f"--option {exc}") from None
        options[name] = value
    return options


def new_table(args: argparse.Namespace, game: Game) -> tuple[int, list[str | None], dict[str, Any]]:
    """The bot's seat, the seats of a new match (None: the bot's) and its options, from
    ``--seat``, ``--opponents`` and ``--option``; TableRefused names what cannot make one.
    Asked before an engine is started or reached (main), and again by :func:`open_seat`."""
    num_seats = game.num_seats
    me = 0 if args.seat is None else args.seat
    if not 0 <= me < num_seats:
        # checked before the match exists: list.insert put the bot's seat last for a seat past
        # the end (first but one for -1), so a match was created, the join then failed
        # BAD_SEAT and the match was left waiting for a player nobody would send
        raise TableRefused(f"--seat {me}: {args.game} has seats 0 to {num_seats - 1}")
    others = [b.strip() for b in (args.opponents or "").split(",") if b.strip()] or ["random"]
    if len(others) == 1:
        others *= num_seats - 1  # one name plays every other seat
    if len(others) != num_seats - 1:
        raise TableRefused(f"--opponents: {args.game} has {num_seats} seats: give one bot name (it "
                           f"plays every other seat) or {num_seats - 1}, comma-separated")
    seats: list[str | None] = list(others)
    seats.insert(me, None)
    return me, seats, _options(args.option or (), game)


async def open_seat(client: Client, args: argparse.Namespace, game: Game) -> SeatSession:
    if args.match:
        return await client.join(args.match, seat=args.seat, player_name=args.name)
    try:
        me, seats, options = new_table(args, game)
    except TableRefused as exc:
        raise SystemExit(str(exc)) from None
    summary = await client.create_match(args.game, options=options, seats=seats, turn_time_s=args.turn_time or 0.0,
                                        name=f"{args.bot} (remote)")
    print(f"match {summary.match_id}: {args.game}, {args.bot} in seat {me}", file=sys.stderr)
    return await client.join(summary.match_id, seat=me, player_name=args.name)


def _quiet_logs() -> None:
    """Plugin-loading chatter to stderr, warnings and up: stdout carries the result."""
    import logging

    import structlog
    structlog.configure(logger_factory=structlog.PrintLoggerFactory(sys.stderr),
                        wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))


def bot_catalog(args: argparse.Namespace) -> BotCatalog:
    """The plugins' bots, ``--plugin``'s modules among them: a module that does not load is
    PluginNotLoaded (a usage error), as in the arena (check_named_plugins), before an engine is
    started or reached; it was "no installed bot" then, the module unnamed."""
    _quiet_logs()
    try:
        plugins = PluginSettings.resolve(extra=args.plugin)
    except ValueError as exc:  # CARDGAMES_DISABLE_PLUGIN_AUTOLOAD=y: one line, not a traceback
        raise SystemExit(f"error: {exc}") from None
    catalog = load_catalog(plugins)
    check_named_plugins(args.plugin, catalog)
    return catalog


async def run(args: argparse.Namespace, target: str, catalog: BotCatalog) -> int:
    runner = BotRunner(catalog)
    # an engine behind a private CA, as the other clients (it had only the system's roots); read
    # as the command line was parsed (ca_file_arg)
    roots = args.ca.value if args.ca else None
    async with connect(target, tls=args.tls, root_certificates=roots, server_name=args.server_name) as client:
        await client.wait_ready()
        if args.match:
            game_id = (await client.get_match(args.match)).game
        else:
            game_id = args.game
        try:  # a match of a game this client's rules core does not have (a newer engine)
            game = get_game(game_id)
        except UnknownGame:
            raise SystemExit(f"error: match {args.match} is a game of {game_id!r}, which this client's "
                             "rules do not have: the bot cannot play it here") from None
        if not catalog.plays(args.bot, game_id):
            raise SystemExit(f"bot {args.bot!r} does not play {game_id}")
        session = await open_seat(client, args, game)
        final, stats = await play_seat(session, runner, args.bot, game_id, budget_s=args.budget_ms / 1000.0,
                                       seed=args.seed, verbose=args.verbose)
    result = json_format.MessageToDict(final.result) if final.HasField("result") else {}
    status = match_pb2.MatchStatus.Name(final.status).removeprefix("MATCH_STATUS_").lower()
    print(f"match {final.match_id} {status}: seat {session.seat} ({args.bot}); winners "
          f"{whole_numbers(result.get('winners', []))}; totals {whole_numbers(result.get('totals'))}; "
          f"{stats.decisions} decisions, {stats.think_s:.1f}s thinking, failures {stats.failures or 'none'}")
    return 0


#: argparse ``type`` of ``--budget-ms`` (:func:`positive_arg`).
milliseconds_arg = positive_arg("milliseconds", DAY_S * 1000)


def build_parser() -> argparse.ArgumentParser:
    p = command_parser("python -m clients.remote_bot", __doc__.split("\n\n")[0],
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--bot", required=True, help="bot plugin name (see ListBots / the arena)")
    p.add_argument("--target", type=target_arg, help="host:port of a running engine (default: start one)")
    p.add_argument("--tls", action="store_true", help="connect with TLS (default roots: the system's)")
    p.add_argument("--ca", type=ca_file_arg, metavar="FILE", help="PEM root certificate(s) for --tls (a private CA)")
    p.add_argument("--server-name", help="TLS name to verify instead of the target's host (implies --tls)")
    p.add_argument("--match", help="join this match (else create one with --game); its table is set: not with "
                   "--game, --opponents, --option, --turn-time")
    p.add_argument("--seat", type=int32_arg, help="seat to take (default: the first open one / 0)")
    p.add_argument("--game", help="game of a new match")
    # a new match's flags default to None (not given), so that main can refuse them with
    # --match (NEW_TABLE_FLAGS)
    p.add_argument("--opponents", type=bot_names_arg, help="bots in the other seats of a new match, in seat order, "
                   "or one for all of them ('open' leaves a seat for someone else; default: random)")
    p.add_argument("--option", action=TableOptionAction, metavar="NAME=VALUE", help="table option of a new match")
    p.add_argument("--turn-time", type=turn_time_arg, help="per-decision timer of a new match")
    p.add_argument("--name", default="remote bot", help="player name")
    p.add_argument("--budget-ms", type=milliseconds_arg, default=1000.0,
                   help="time per decision, in milliseconds (default 1000; shortened to the turn timer)")
    p.add_argument("--seed", type=int, default=0,
                   help="seed of the bot's choices, with each view's seq (default 0; not the engine's decks)")
    p.add_argument("--plugin", action="append", default=[], help="extra plugin module (repeatable)")
    p.add_argument("--verbose", action="store_true", help="print every action submitted")
    p.add_argument("--db", help="database of the engine started without --target (default: memory:; not with "
                   "--target)")
    return p


#: The flags that set up the table of a new match, with the ``args`` attribute of each: a usage
#: error with ``--match`` (refuse_with_match), where they were dropped without a word.
NEW_TABLE_FLAGS = (("--game", "game"), ("--opponents", "opponents"), ("--option", "option"),
                   ("--turn-time", "turn_time"))


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parse_args(parser, argv)  # an unknown flag named, its value (a seat token?) not shown
    check_text(parser, args, paths={"ca", "db"})
    if not args.match and not args.game:
        parser.error("give --match ID (join) or --game (create a match)")
    refuse_with_match(parser, args, NEW_TABLE_FLAGS)
    if args.db is not None and args.target:
        # it was dropped without a word: the engine at --target keeps its own database
        parser.error("--db is the database of the engine started without --target: give one of them")
    if args.game and not args.match:
        try:  # before an engine is started or reached: it was a traceback once connected
            game = get_game(args.game)
        except UnknownGame as exc:
            parser.error(f"--game: {exc}")
        try:  # likewise: they were refused once an engine of its own had been started
            new_table(args, game)
        except TableRefused as exc:
            parser.error(str(exc))
    try:
        catalog = bot_catalog(args)
    except PluginNotLoaded as exc:
        parser.error(str(exc))
    if catalog.get(args.bot) is None:  # exit 1 before, as if an engine had refused something
        parser.error(f"--bot {args.bot!r}: no installed bot has this name (installed: {', '.join(catalog.names())})")
    if args.game and not args.match and not catalog.plays(args.bot, args.game):
        # known before any engine: it was said once an engine of its own had started (exit 1)
        parser.error(f"--bot {args.bot!r} does not play {args.game}")
    service = None
    try:
        if args.target:
            target = args.target
        else:
            # an engine of its own, where every player is a program: its bots need not be
            # paced (--bot-pace-s hides a forced move's timing from people, GJ-11.8)
            service = LocalService(db=args.db or "memory:", args=["--bot-pace-s", "0"])
            service.start()
            target = service.target
        # the result line to a full disk (> FILE): one line, not a traceback
        return stdout_guarded(lambda: asyncio.run(run(args, target, catalog)), reader_left=1)
    except CardGamesError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except ServiceFailed as exc:  # the engine of its own (a --db it cannot open): one line, as clients.play
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
