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
import os
import shlex
import sys
from typing import TYPE_CHECKING, Any, Sequence

if __name__ == "__main__":
    # A command, not the library: gRPC's C core writes only its errors (as `serve` has it), so
    # that a failure is the one "error" line and not a plain INFO line per failed handshake
    # before it (--tls to an engine without TLS); GRPC_VERBOSITY=INFO brings them back.
    # Before grpc is imported.
    os.environ.setdefault("GRPC_VERBOSITY", "ERROR")

from rich.console import Console  # noqa: E402

from . import render, terminal_text
from .play import positive_int, print_meld_talk, print_scored_deals, stderr_notices, summary_now
from .cardgames_client import (CardGamesError, Spectator, ca_file_arg, command_parser, connect, target_arg,
                               target_or_default)
from engine_service.command_line import check_text, parse_args, stdout_guarded
from engine_service.transport.generated import match_pb2

if TYPE_CHECKING:  # the screen's module imports textual: only when a screen is shown
    from .watch_screen import WatchApp


#: Reopenings of a dropped event stream in a row before the screen gives up (as clients.play).
RECONNECT_TRIES = 30
#: Exit status once the connection is lost for good (1: an error the API answered).
EXIT_CONNECTION_LOST = 3


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
            from .watch_screen import WatchApp  # textual only when a screen is shown

            app = WatchApp(spectator, after, summary=summary, reconnect_tries=args.reconnect_tries)
            await app.run_async()
            if app.connection is not None:  # given up, or quit (q) while down
                print(connection_lost_line(app, args), file=sys.stderr)
                return EXIT_CONNECTION_LOST
            final = await spectator.summary()
    print_final(final, console)
    return 0


def print_final(final: Any, console: Console) -> None:
    """The last line: the match's status and, once it is over, its winners, totals and how it
    ended where it was not played out, as clients.play's last line (render.result_line)."""
    console.print(render.result_line(final), markup=False)


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
