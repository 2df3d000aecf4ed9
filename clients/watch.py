"""``python -m clients.watch MATCH_ID``: follow a match live as a spectator.

    python -m clients.watch 7hG2x0vYk3Qw --target 127.0.0.1:50051

Without ``--target`` it watches the engine beside it, on ``127.0.0.1:$CARDGAMES_PORT`` (50051
when unset), as ``clients.health`` and ``clients.admin`` do.

A spectator sees exactly the public view (no hand, no legal actions): the table, the trick,
tricks taken, scores and every action as it happens. The stream resumes by itself after a
network drop or a server restart (``after_seq``), so no action is missed or shown twice; one
that dropped while the match waited reopens with a snapshot, so a match that started meanwhile
is shown started at once. While the stream is down the screen says so in a red line at the
top ("connection lost — reconnecting (try 3 of 30)…"), and the missed events follow once it is
back; after ``--reconnect-tries`` failed reopenings in a row (or q meanwhile) it closes with one
line on stderr saying how to watch again, exit status 3.

``--plain`` prints one line per event instead of the full-screen table (for logs and pipes;
a dropped connection and its return are a line each on stderr);
``--from-start`` replays the match from its first action before following it live (a match
far along starts with a snapshot instead: the server's replay limit, docs/api.md).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import shlex
import sys
import time
from typing import Any, Sequence

if __name__ == "__main__":
    # A command, not the library: gRPC's C core writes only its errors (as `serve` has it), so
    # that a failure is the one "error" line and not a plain INFO line per failed handshake
    # before it (--tls to an engine without TLS); GRPC_VERBOSITY=INFO brings them back.
    # Before grpc is imported.
    os.environ.setdefault("GRPC_VERBOSITY", "ERROR")

from rich.console import Console  # noqa: E402
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.css.query import NoMatches
from textual.widgets import Footer, RichLog, Static

from . import render, terminal_text
from .connection_sign import ConnectionSign
from .play import (board_rows, fitted_board, fitted_deals, log_scored_deals, positive_int, print_meld_talk,
                   print_scored_deals, stderr_notices, summary_now)
from .cardgames_client import (CardGamesError, ServerClock, Spectator, StreamState, connect,
                               ca_file_arg, command_parser, target_arg, target_or_default)
from engine_service.command_line import check_text, parse_args, stdout_guarded
from engine_service.transport.generated import match_pb2


#: Reopenings of a dropped event stream in a row before the screen gives up (as clients.play).
RECONNECT_TRIES = 30
#: Exit status once the connection is lost for good (1: an error the API answered).
EXIT_CONNECTION_LOST = 3


class WatchApp(ConnectionSign, App):
    """The spectator's screen: the public board and the event log."""

    TITLE = "cardgames spectator"
    CSS = """
    #connection { display: none; height: 1; padding: 0 1; background: $error; color: $text; text-style: bold; }
    #board { height: auto; padding: 0 1; }
    #deals { height: auto; padding: 0 1; }
    #log { height: 1fr; border: round $panel; }
    """
    BINDINGS = [Binding("q", "quit", "Quit"),
                # Ctrl-C ends the program (textual's own binding only showed "press ctrl+q")
                Binding("ctrl+c", "quit", "Quit", show=False, priority=True)]

    #: Rows the event log keeps (its box and three events): the deal results give way to it.
    #: On 80x24, six scored Georgian Joker deals took every row below the board, the log got
    #: its border only and the screen scrolled.
    MIN_LOG_ROWS = 5

    def __init__(self, spectator: Spectator, after_seq: int | None = None, *, summary: Any | None = None,
                 reconnect_tries: int | None = RECONNECT_TRIES) -> None:
        super().__init__()
        self.spectator = spectator
        self.after_seq = after_seq
        self.reconnect_tries = reconnect_tries
        #: The event stream's last connection change while it is down or given up (None: up).
        self.connection: StreamState | None = None
        self.view_msg: Any | None = None
        #: the server's clock, which the countdown's deadline is on (HEARTBEAT server_time)
        self.server_clock = ServerClock()
        self.summary = summary
        self.ended = False
        self.board: Any = None  # the renderables on screen (for tests and screenshots)
        self.deals: Any = None
        self._deals_logged: int | None = None  # scored deals written to the log (log_scored_deals)

    def compose(self) -> ComposeResult:
        yield Static(id="connection")
        yield Static(id="board")
        yield Static(id="deals")
        yield RichLog(id="log", wrap=True, markup=False)
        yield Footer()

    async def on_mount(self) -> None:
        self.query_one("#log", RichLog).border_title = "events"
        if self.summary is None:
            self.summary = await self.spectator.summary()
        self.set_interval(0.5, self.redraw)
        self.run_worker(self.follow(), exclusive=True)

    async def follow(self) -> None:
        log = self.query_one("#log", RichLog)
        try:
            async for event in self.spectator.watch(after_seq=self.after_seq, max_failures=self.reconnect_tries,
                                                    on_connection=self.on_connection):
                if event.kind == match_pb2.EVENT_KIND_HEARTBEAT:
                    self.server_clock.heard(event.details, time.time())
                if event.kind == match_pb2.EVENT_KIND_PRESENCE:
                    self.summary = await summary_now(self.spectator, self.summary)
                line = render.event_text(event, self.summary, None)
                if line is not None:
                    log.write(line)
                if event.HasField("view"):
                    self.view_msg = event.view
                    self._deals_logged = log_scored_deals(log, event.view, self.summary, self._deals_logged)
                if event.kind == match_pb2.EVENT_KIND_MATCH_ENDED:
                    self.summary = await self.spectator.summary()
                    self.ended = True
                self.redraw()
        except CardGamesError as exc:
            if self.lost:
                self.exit(return_code=EXIT_CONNECTION_LOST)  # run() says how to watch again
            else:  # an error that reconnecting cannot fix: no longer "reconnecting"
                self.connection = None
                self.show_connection()
                log.write(f"the stream failed: {exc}")

    def redraw(self) -> None:
        if self.view_msg is None:
            return
        # less the footer and the red line: the board, then as many recent deals as leave the
        # log its rows (a full Jo-Jotte board alone took them on 80x24)
        spare = self.size.height - 1 - (self.connection is not None) - self.MIN_LOG_ROWS
        self.board = fitted_board(self.view_msg, self.summary, self.server_clock.now(), lambda r: board_rows(self, r), spare)
        room = spare - board_rows(self, self.board)
        self.deals = fitted_deals(self.view_msg, self.summary, lambda r: board_rows(self, r), room)
        with contextlib.suppress(NoMatches):  # the screen may be closing
            self.query_one("#board", Static).update(self.board)
            deals = self.query_one("#deals", Static)
            deals.update(self.deals if self.deals is not None else "")
            deals.display = self.deals is not None


async def follow_plain(spectator: Spectator, console: Console, after_seq: int | None) -> Any:
    """Print one line per event, and each deal's result as it is scored, until the match
    ends; returns the final MatchSummary."""
    summary = await spectator.summary()
    deals_seen: int | None = None
    talk: str | None = None  # the meld dialogue as last printed
    async for event in spectator.watch(after_seq=after_seq, on_connection=stderr_notices()):
        if event.kind == match_pb2.EVENT_KIND_PRESENCE:
            summary = await summary_now(spectator, summary)
        line = render.event_text(event, summary, None)
        if line is not None:
            console.print(line)
        if event.HasField("view"):
            talk = print_meld_talk(console, event.view, summary, None, talk)
            deals_seen = print_scored_deals(console, event.view, summary, deals_seen, table=True)
    return await spectator.summary()


def connection_lost_line(app: WatchApp, args: argparse.Namespace) -> str:
    """The one line printed once the event stream is given up, or the screen quit while it
    was down (asking the engine for the final result would only fail): why, and the command
    that watches again."""
    assert app.connection is not None
    why = render.connection_lost_reason(app.connection)
    what = ("the connection to the engine is lost for good" if app.lost
            else "you quit while the connection to the engine was lost")
    command = ["python", "-m", "clients.watch", args.match_id, "--target", args.target]
    command += ["--tls"] * args.tls + (["--ca", args.ca.path] if args.ca else [])
    command += ["--server-name", args.server_name] * bool(args.server_name)
    return f"error: {what} ({why}); to watch again: {shlex.join(command)}"


async def run(args: argparse.Namespace, console: Console) -> int:
    roots = args.ca.value if args.ca else None  # read as the command line was parsed (ca_file_arg)
    async with connect(args.target, tls=args.tls, root_certificates=roots, server_name=args.server_name) as client:
        spectator = client.spectate(args.match_id)
        after = 0 if args.from_start else None
        if args.plain:
            final = await follow_plain(spectator, console, after)
        else:
            # asked before the screen opens: an engine that cannot be reached, or no such match,
            # is then one line (from the screen's start it came with textual's traceback)
            summary = await spectator.summary()
            app = WatchApp(spectator, after, summary=summary, reconnect_tries=args.reconnect_tries)
            await app.run_async()
            if app.connection is not None:  # given up, or quit (q) while down
                print(connection_lost_line(app, args), file=sys.stderr)
                return EXIT_CONNECTION_LOST
            final = await spectator.summary()
    print_final(final, console)
    return 0


def print_final(final: Any, console: Console) -> None:
    """The last line: the match's status and, once it is over, its winners and totals (the
    players' names printed as text, never read as markup: anyone chooses their name)."""
    result = render.struct_dict(final.result) if final.HasField("result") else {}
    status = match_pb2.MatchStatus.Name(final.status).removeprefix("MATCH_STATUS_").lower()
    console.print(f"match {final.match_id} {status}" + (
        f": winners {', '.join(render.seat_name(final, w) for w in result.get('winners', [])) or 'none'}; "
        f"totals {json.dumps(result.get('totals'))}" if result else ""), markup=False)


def build_parser() -> argparse.ArgumentParser:
    p = command_parser("python -m clients.watch", __doc__.split("\n\n")[0])
    p.add_argument("match_id", metavar="MATCH_ID")
    p.add_argument("--target", type=target_arg,
                   help="host:port of the engine (default: 127.0.0.1:$CARDGAMES_PORT or 50051)")
    p.add_argument("--tls", action="store_true", help="connect with TLS")
    p.add_argument("--ca", type=ca_file_arg, metavar="FILE", help="PEM root certificate(s) for --tls")
    p.add_argument("--server-name", help="TLS name to verify instead of the target's host (implies --tls)")
    p.add_argument("--plain", action="store_true", help="one line per event instead of the full screen")
    p.add_argument("--reconnect-tries", type=positive_int, default=RECONNECT_TRIES, metavar="N",
                   help="the screen gives up a lost connection after N reopenings of the event stream in a "
                   f"row (default {RECONNECT_TRIES}, about half a minute), then prints how to watch again and "
                   f"exits with status {EXIT_CONNECTION_LOST} (--plain keeps trying)")
    p.add_argument("--from-start", action="store_true",
                   help="replay the match from its first action (a snapshot first when the match "
                   "is too far along for the server to replay)")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parse_args(parser, argv)  # an unknown flag named, its value not shown
    check_text(parser, args, paths={"ca"})
    # the engine beside it, on its port, as clients.health and clients.admin find it: a fixed
    # 50051 missed an engine that CARDGAMES_PORT moved
    args.target = target_or_default(parser, args.target)
    # unfolded: one line per event in a pipe (--plain), where the console folded at 80 columns
    console = terminal_text.console(highlight=False, soft_wrap=True)
    try:
        # stdout on a full disk (--plain > FILE): one line, not rich's traceback
        return stdout_guarded(lambda: asyncio.run(run(args, console)), reader_left=1)
    except CardGamesError as exc:
        # on stderr, unfolded: a script reading the output (--autoplay, --plain) gets no error
        # among it, and a log one line per error (the console folds at 80 columns in a pipe)
        terminal_text.console(stderr=True, highlight=False, soft_wrap=True).print(f"error: {exc}", style="bold red")
        return 1
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
