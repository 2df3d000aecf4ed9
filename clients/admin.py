"""``python -m clients.admin``: the operator's command line over the admin API (AdminService).

    export CARDGAMES_ADMIN_TOKEN=...            # or --admin-token-file PATH
    python -m clients.admin list --status active
    python -m clients.admin inspect MATCH_ID
    python -m clients.admin terminate MATCH_ID --reason "stuck since the outage"
    python -m clients.admin export MATCH_ID -o match.json
    python -m clients.admin reissue-token MATCH_ID SEAT -o seat.token

Sub-commands:

* ``list``: matches, newest first (``--status``, ``--game``, ``--limit``), as a table, or one
  JSON object per line with ``--json``; one page (``--limit``, default 100), then the token
  of the next (``--page-token TOKEN`` lists it), or every page with ``--all``;
* ``inspect``: the omniscient view of a match: **every hand and hidden card**, the zones and
  the decks dealt (a readable summary; ``--json`` for everything);
* ``terminate``: ends a match now (status ``terminated``; its players get a MATCH_ENDED event
  with the reason); it asks nothing and prints the final summary;
* ``export``: the match as a ``card-transcript/1`` JSON document (every deck included), on
  stdout or in a file (``-o``) readable by its owner only; ``python -m engine_service replay
  --check FILE`` replays it;
* ``reissue-token``: a new seat token for a player's seat of an unfinished match (the player
  lost it, or it leaked); the old token stops working and its streams end. The new token goes
  to stdout alone (for a script), or to a file readable by its owner only (``-o``), made with
  its space set aside before the call; should its write fail after the call all the same, the
  token goes to stdout (exit status 1), never nowhere.

The admin token comes from ``--admin-token-file PATH`` (``-``: standard input) or the
environment variable ``CARDGAMES_ADMIN_TOKEN``, never from a flag's value (which ``ps``
shows); it is never printed. Exit status: 0 done; 1 the API refused or failed (one line on
stderr: the gRPC status, the engine's reason and its message); 2 a usage error; 130
interrupted (Ctrl-C, no traceback), as a shell reports a command SIGINT ended.

``--json`` output (``list``, ``inspect``, ``terminate``) uses the protobuf field names of
proto/cardgames/v1 (docs/api.md) for its keys, every field always present (``null`` when
unset): enums as lower-case names without their prefix (``"active"``, ``"bot"``; ``null`` for
unspecified), timestamps as ISO 8601 UTC strings, durations as seconds, table options as
their values, cards as their codes (``"TH"``). They and ``export`` need no ``rich`` (the
container image has none); the tables and summaries do (the clients extra).
"""

from __future__ import annotations

import argparse
import asyncio
import errno
import json
import os
import re
import sys
import tempfile
from datetime import timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Sequence

if __name__ == "__main__":
    # A command, not the library: gRPC's C core writes only its errors (as `serve` has it), so
    # that a failure is the one "error" line and not a plain INFO line per failed handshake
    # before it (a wrong --ca); GRPC_VERBOSITY=INFO brings them back. Before grpc is imported.
    os.environ.setdefault("GRPC_VERBOSITY", "ERROR")

import grpc  # noqa: E402

from .cardgames_client import (DEFAULT_PORT, INT32_MAX, AdminClient, CardGamesError, MatchSummary, command_parser,
                               ca_file_arg, connect,
                               header_safe, int32_arg, python_value, seconds_arg, struct_value,
                               target_arg, target_or_default)
from engine_service.bounded_read import TOKEN_LIMIT, UnreadableFile, read_named
from engine_service.command_line import check_text, drop_stdout, parse_args, printable, stdout_guarded
from engine_service.transport.generated import match_pb2

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

TOKEN_ENV = "CARDGAMES_ADMIN_TOKEN"
STATUSES = ("waiting", "active", "finished", "terminated")
#: Width of the output when it is not a terminal (a pipe, a file): wide enough that a table row
#: is never folded into several lines.
PIPE_WIDTH = 240


class UsageError(Exception):
    """A problem with the command line or its files (exit status 2)."""


def console() -> "Console":
    """The rich console of the readable output. rich comes with the clients extra; without it
    (the container image) the JSON forms and ``export`` still work."""
    try:
        from rich.console import Console
    except ImportError:
        raise UsageError("the readable output needs rich (pip install 'cardgames-engine[clients]'); "
                         "--json and export work without it") from None
    width = None if sys.stdout.isatty() or os.environ.get("COLUMNS") else PIPE_WIDTH
    out = Console(highlight=False, width=width)

    def reader_left() -> None:
        # rich's own answer to a closed pipe is SystemExit(1): `list | head` exited 1, "the
        # API refused or failed", whenever the table outgrew the pipe's buffer. main()
        # handles the reader leaving (exit 0, nothing more written), as for --json.
        out.quiet = True
        raise BrokenPipeError

    out.on_broken_pipe = reader_left  # type: ignore[method-assign]
    return out




# ---- protobuf messages as plain JSON values ----------------------------------------------------


def _enum_prefix(enum_name: str) -> str:
    """``MatchStatus`` -> ``MATCH_STATUS_``."""
    return re.sub(r"(?<!^)(?=[A-Z])", "_", enum_name).upper() + "_"


def _enum_value(field: Any, number: int) -> str | int | None:
    value = field.enum_type.values_by_number.get(number)
    if value is None:
        return number  # a value newer than these stubs
    if number == 0:
        return None  # *_UNSPECIFIED
    return value.name.removeprefix(_enum_prefix(field.enum_type.name)).lower()


def _scalar(field: Any, value: Any) -> Any:
    if field.type == field.TYPE_ENUM:
        return _enum_value(field, value)
    if field.type == field.TYPE_MESSAGE:
        return jsonable(value)
    return value


def jsonable(message: Any) -> Any:
    """A protobuf message as plain JSON values: every field present (``None`` when unset),
    integers as numbers (protobuf's own JSON mapping writes int64 as strings), enums as short
    names, Struct as its JSON, Timestamp as ISO 8601, Duration as seconds, a Card as its code,
    an OptionValue as its value."""
    name = message.DESCRIPTOR.full_name
    if name in ("google.protobuf.Struct", "google.protobuf.ListValue", "google.protobuf.Value"):
        return struct_value(message)
    if name == "google.protobuf.Timestamp":
        return iso_time(message)
    if name == "google.protobuf.Duration":
        return message.ToNanoseconds() / 1e9
    if name == "cardgames.v1.Card":
        return message.code or None
    if name == "cardgames.v1.OptionValue":
        return python_value(message)
    out: dict[str, Any] = {}
    for field in message.DESCRIPTOR.fields:
        value = getattr(message, field.name)
        if field.message_type is not None and field.message_type.GetOptions().map_entry:
            value_field = field.message_type.fields_by_name["value"]
            out[field.name] = {str(k): _scalar(value_field, v) for k, v in sorted(value.items())}
        elif field.is_repeated:
            out[field.name] = [_scalar(field, v) for v in value]
        elif field.has_presence and not message.HasField(field.name):
            out[field.name] = None
        else:
            out[field.name] = _scalar(field, value)
    return out


def iso_time(timestamp: Any) -> str | None:
    if not timestamp.seconds and not timestamp.nanos:
        return None
    when = timestamp.ToDatetime(tzinfo=timezone.utc)
    return when.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def status_name(status: int) -> str:
    return match_pb2.MatchStatus.Name(status).removeprefix("MATCH_STATUS_").lower()


# ---- readable output -----------------------------------------------------------------------


def seat_text(info: Any) -> str:
    """One seat, as an operator wants it: who sits there and whether they are connected."""
    prefix = f"{info.seat} "
    if info.kind == match_pb2.SEAT_KIND_BOT:
        return prefix + f"bot {info.bot}"
    if not info.taken:
        return prefix + "free"
    name = info.player_name or "(no name)"
    state = "left" if info.left else "present" if info.present else "away"
    if info.replaced_by_bot:
        state += f", bot {info.bot} plays" if info.bot else ", a bot plays"
    return prefix + f"{name} ({state})"


def created_text(summary: MatchSummary) -> str:
    when = iso_time(summary.created_at)
    return when.replace("T", " ").split(".")[0] + "Z" if when else ""


def matches_table(matches: Sequence[MatchSummary]) -> "Table":
    from rich.table import Table
    from rich.text import Text

    table = Table(show_header=True, header_style="bold", show_lines=True)
    table.add_column("match id", no_wrap=True)
    table.add_column("game", no_wrap=True)
    table.add_column("status", no_wrap=True)
    table.add_column("seq", justify="right", no_wrap=True)
    table.add_column("seats", no_wrap=True)
    table.add_column("created (UTC)", no_wrap=True)
    table.add_column("name", overflow="fold")
    styles = {"waiting": "yellow", "active": "green", "finished": "dim", "terminated": "red"}
    for m in matches:
        status = status_name(m.status)
        # names (the match's, the players') are anyone's to choose: text, never markup
        table.add_row(m.match_id, m.game, Text(status, style=styles.get(status, "")), str(m.seq),
                      Text("\n".join(seat_text(s) for s in m.seats)), created_text(m), Text(m.name))
    return table


def summary_lines(summary: MatchSummary) -> list["Text"]:
    """The match's public summary: id, game, status, seq, seats, result."""
    from rich.text import Text

    from . import render

    head = Text()
    head.append(f"match {summary.match_id}", style="bold")
    head.append(f"  {render.GAME_NAMES.get(summary.game, summary.game)} ({summary.game})")
    head.append(f"  {status_name(summary.status)}  seq {summary.seq}")
    if summary.name:
        head.append(f"  name {summary.name!r}")
    lines = [head]
    turn = summary.turn_time.ToNanoseconds() / 1e9
    details = [f"created {created_text(summary)}", f"turn time {turn:g} s" if turn else "no turn time",
               "spectators allowed" if summary.spectators_allowed else "no spectators"]
    if summary.spectators_allowed and summary.spectator_delay_actions:
        details[-1] += f" ({summary.spectator_delay_actions} actions late)"
    if summary.options:
        details.append("options " + ", ".join(f"{k}={python_value(v)}" for k, v in sorted(summary.options.items())))
    lines.append(Text(", ".join(details)))
    lines.append(Text("seats: " + "; ".join(seat_text(s) for s in summary.seats)))
    if summary.HasField("result"):
        result = render.struct_dict(summary.result)
        winners = ", ".join(render.seat_name(summary, w) for w in result.get("winners", [])) or "none"
        line = f"result: {result.get('outcome', 'ended')}"
        if result.get("reason"):
            line += f" ({result['reason']})"
        line += f"; winners {winners}; totals {result.get('totals')}"
        # The seats the result names besides the winners: who resigned or forfeited, who was
        # absent, whose player left (a bot played on, GJ-12.4, and may be among the winners;
        # what that means for prizes is the organizer's call). Only --json showed them.
        for key in ("resigned", "forfeited", "absent", "abandoned"):
            seats = result.get(key)
            if seats is None or seats == []:
                continue
            seats = seats if isinstance(seats, list) else [seats]
            line += f"; {key} " + ", ".join(render.seat_name(summary, s) for s in seats)
        lines.append(Text(line))
    return lines


def inspect_lines(reply: Any) -> list["Text"]:
    """A short readable account of InspectMatch: summary, state of play, hands, zones."""
    from rich.text import Text

    from . import render

    summary, view = reply.match, reply.view
    lines = summary_lines(summary)
    over = view.over or status_name(view.status) in ("finished", "terminated")
    scored = len(view.scores.deal_results.values)
    # the deal in progress is the one after the deals already scored (thrown-in deals included)
    play = Text(f"{scored} deal(s) scored, " if over else f"deal {scored + 1}, ")
    play.append(f"phase {view.phase or '-'}, dealer {render.seat_name(summary, view.dealer)}, "
                f"first dealer {render.seat_name(summary, reply.first_dealer)}")
    if view.HasField("to_act"):
        play.append(f", to act: {render.seat_name(summary, view.to_act)}", style="bold")
    if view.HasField("deadline"):
        play.append(f" (deadline {iso_time(view.deadline)})")
    lines.append(play)
    if view.legal_actions:
        legal = Text("legal actions: ")
        for i, action in enumerate(view.legal_actions):
            if i:
                legal.append(", ")
            legal.append_text(render.action_text(action, view, summary))
            legal.append(f" [{action.notation}]", style="dim")
        lines.append(legal)
    for row in view.scores.totals:
        lines.append(Text(f"scores {row.name}: {list(row.values)}"))
    if view.scores.tricks_taken and not over:
        lines.append(Text(f"tricks taken this deal: {list(view.scores.tricks_taken)}"))
    if view.trick.plays:
        lines.append(Text("trick: ").append_text(render.trick_text(view.trick, summary, None)))
    lines.append(Text("hands (hidden cards):", style="bold"))
    for hand in reply.hands:
        lines.append(_cards_line(f"{render.seat_name(summary, hand.seat)}", hand.cards))
    others = [z for z in reply.zones if not re.fullmatch(r"hand\d+", z.name)]
    if others:
        lines.append(Text("zones:", style="bold"))
        lines.extend(_cards_line(zone.name, zone.cards) for zone in others)
    lines.append(Text(f"decks dealt: {len(reply.decks)} (inspect --json or export for the cards)", style="dim"))
    return lines


def _cards_line(label: str, cards: Sequence[Any]) -> "Text":
    from rich.text import Text

    from . import render

    line = Text(f"  {label} [{len(cards)}]: ")
    if not cards:
        return line.append("—", style="dim")
    return line.append_text(render.cards_text(c.code for c in cards))


# ---- the sub-commands ------------------------------------------------------------------------


def print_json(value: Any, indent: int | None = None) -> None:
    sys.stdout.write(json.dumps(value, ensure_ascii=False, indent=indent) + "\n")


async def cmd_list(admin: AdminClient, args: argparse.Namespace) -> int:
    status = match_pb2.MatchStatus.Value("MATCH_STATUS_" + args.status.upper()) if args.status else 0
    out = None if args.json else console()
    game, limit = args.game or "", args.limit or 0
    # --all reads every page (--limit: the page size); otherwise one page, from --page-token
    # on, and the token of the next one is shown (stderr with --json: stdout stays JSON lines).
    matches: list[MatchSummary] = []
    token = args.page_token or ""
    while True:
        page = await admin.matches_page(status=status, game=game, limit=limit, page_token=token)
        token = page.next_page_token
        if out is None:
            for m in page.matches:
                print_json(jsonable(m))
            sys.stdout.flush()
        else:
            matches += page.matches
        if not args.all or not token:
            break
    if out is None:
        if token:
            sys.stderr.write(f"next page: --page-token {token}\n")
        return 0
    if matches:
        out.print(matches_table(matches))
    more = f"; more: --page-token {token} (or --all)" if token else ""
    count = f"{len(matches)} match{'es' if len(matches) != 1 else ''}" if matches else "no matches"
    out.print(f"{count}{more}", style="dim" if matches else None)
    return 0


async def cmd_inspect(admin: AdminClient, args: argparse.Namespace) -> int:
    out = None if args.json else console()
    reply = await admin.inspect(args.match_id)
    if out is None:
        print_json(jsonable(reply), indent=2)
    else:
        for line in inspect_lines(reply):
            out.print(line)
    return 0


async def cmd_terminate(admin: AdminClient, args: argparse.Namespace) -> int:
    out = None if args.json else console()
    summary = await admin.terminate(args.match_id, args.reason)
    if out is None:
        print_json(jsonable(summary))
    else:
        for line in summary_lines(summary):
            out.print(line)
    return 0


#: Bytes of the disk ``reissue-token -o`` sets aside before its call: a seat token is far shorter.
TOKEN_FILE_RESERVE = 4096


class PrivateFile:
    """``-o FILE``, written whole or not at all and readable by its owner only (0600, whatever
    the umask or the mode of a file already there). Made before the call, as a new file beside
    ``path`` with ``reserve`` bytes of the disk set aside, so that a path that cannot be written
    (a folder that does not exist, a directory, a full disk) is a UsageError before anything is
    asked of the engine: ``reissue-token`` changes the seat's token there, and a file that
    failed after the call lost the new token while the old one no longer worked. :meth:`commit`
    writes it, flushes it to disk and renames it over ``path``, which must be a regular file if
    it exists."""

    def __init__(self, path: Path, reserve: int = 0) -> None:
        self.path = path
        self._fd = -1
        if path.is_dir():
            raise UsageError(f"{path} is a directory")
        if path.exists() and not path.is_file():
            # the new file is renamed over it: -o /dev/stdout (or /dev/null, as root) replaced
            # the device with a file of the match's hidden cards or the seat token
            raise UsageError(f"{path} is not a regular file (a device, a pipe or a socket): -o writes a file "
                             "in its place; '-' is standard output")
        try:
            self._fd, self._tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        except OSError as exc:
            raise UsageError(f"cannot write {path}: {exc.strerror or exc}") from None
        try:
            os.fchmod(self._fd, 0o600)
            if reserve and hasattr(os, "posix_fallocate"):
                try:
                    os.posix_fallocate(self._fd, 0, reserve)
                except OSError as exc:
                    # a file system that sets no space aside: commit() may still fail
                    if exc.errno not in (errno.EOPNOTSUPP, errno.EINVAL, errno.ENOSYS):
                        raise
        except OSError as exc:
            self.discard()
            raise UsageError(f"cannot write {path}: {exc.strerror or exc}") from None

    def commit(self, text: str) -> None:
        """``text`` into the file, on the disk (fsync), renamed over ``path``. OSError: ``path``
        is as it was and the new file is gone."""
        data = memoryview(text.encode("utf-8"))
        try:
            written = 0
            while written < len(data):
                written += os.write(self._fd, data[written:])
            os.ftruncate(self._fd, len(data))  # the space set aside beyond the text
            os.fsync(self._fd)
            os.replace(self._tmp, self.path)
        except BaseException:
            self.discard()
            raise
        os.close(self._fd)
        self._fd = -1
        try:  # the rename itself on the disk: best effort (not every system opens a folder)
            folder = os.open(self.path.parent, os.O_RDONLY)
            try:
                os.fsync(folder)
            finally:
                os.close(folder)
        except OSError:
            pass

    def discard(self) -> None:
        """No file: the new one is closed and removed (``path`` is left as it was)."""
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
            try:
                os.unlink(self._tmp)
            except OSError:
                pass


async def cmd_export(admin: AdminClient, args: argparse.Namespace) -> int:
    out = None if args.output in (None, "-") else PrivateFile(Path(args.output))
    try:
        text = await admin.export_transcript(args.match_id)
    except BaseException:
        if out is not None:
            out.discard()
        raise
    if not text.endswith("\n"):
        text += "\n"
    if out is None:
        sys.stdout.write(text)
        return 0
    path = out.path
    try:
        out.commit(text)
    except OSError as exc:
        raise UsageError(f"cannot write {path}: {exc.strerror or exc}") from None
    data = json.loads(text)
    steps = sum(len(d.get("steps", ())) for d in data.get("deals", ()))
    print(f"match {args.match_id}: {len(data.get('deals', ()))} deal(s), {steps} action(s) "
          f"written to {printable(path)} (mode 0600: it holds every deck)")
    return 0


async def cmd_reissue_token(admin: AdminClient, args: argparse.Namespace) -> int:
    out = None if args.output in (None, "-") else PrivateFile(Path(args.output), reserve=TOKEN_FILE_RESERVE)
    try:
        reply = await admin.reissue_seat_token(args.match_id, args.seat)
    except BaseException:
        if out is not None:
            out.discard()
        raise
    note = (f"match {args.match_id}, seat {reply.seat}: new seat token; the old one no longer "
            "works. Give it to the player by a private channel.")
    if out is None:
        try:
            print(reply.seat_token, flush=True)
        except BrokenPipeError:
            raise  # the reader left (main): it chose not to read the token
        except OSError as exc:  # `> FILE` on a full disk: the token is gone, the old one too
            drop_stdout()
            print(f"error: cannot write the new seat token to standard output ({exc.strerror or exc}): it is "
                  "lost, and the old one no longer works; run reissue-token again (-o FILE writes it to a "
                  "file) to give the seat another", file=sys.stderr)
            return 1
        print(note, file=sys.stderr)
        return 0
    try:
        out.commit(reply.seat_token + "\n")
    except OSError as exc:
        # the old token no longer works and this one is the seat's only: it goes where it
        # goes without -o, the command's standard output, rather than nowhere
        print(reply.seat_token, flush=True)
        print(f"error: cannot write {out.path} ({exc.strerror or exc}): the new seat token is on standard "
              f"output instead. {note}", file=sys.stderr)
        return 1
    print(f"{note} Written to {printable(out.path)} (mode 0600).")
    return 0


COMMANDS: dict[str, Callable[..., Any]] = {"list": cmd_list, "inspect": cmd_inspect,
                                           "terminate": cmd_terminate, "export": cmd_export,
                                           "reissue-token": cmd_reissue_token}


# ---- the admin token -----------------------------------------------------------------------


def read_token(args: argparse.Namespace, environ: dict[str, str] | os._Environ) -> str | None:
    """The admin token from --admin-token-file (``-``: stdin), else the environment; None when
    neither gives one (the server then answers UNAUTHENTICATED). Errors never quote it. The
    file is read up to TOKEN_LIMIT (read_named): it was read whole, so ``/dev/zero`` filled
    the memory and a named pipe no one writes to waited for ever."""
    if args.admin_token_file:
        source = "standard input" if args.admin_token_file == "-" else args.admin_token_file
        try:
            if args.admin_token_file == "-":
                raw = sys.stdin.read(TOKEN_LIMIT + 1)
                if len(raw) > TOKEN_LIMIT:
                    raise UsageError(f"the admin token file {source}: larger than {TOKEN_LIMIT} bytes")
            else:
                raw = read_named(args.admin_token_file, TOKEN_LIMIT, "the admin token file").decode("utf-8")
        except UnreadableFile as exc:
            raise UsageError(str(exc)) from None
        except (OSError, UnicodeDecodeError) as exc:
            raise UsageError(f"cannot read the admin token file {source}: "
                             f"{getattr(exc, 'strerror', None) or type(exc).__name__}") from None
        token = raw.strip()
        if not token:
            raise UsageError(f"the admin token file {source} is empty")
    else:
        token = environ.get(TOKEN_ENV, "").strip()
        source = TOKEN_ENV
        if not token:
            return None
    if not header_safe(token):
        raise UsageError(f"the admin token from {source} has characters a gRPC header cannot carry "
                         "(spaces, control or non-ASCII characters)")
    return token


class _RefusePlainToken(argparse.Action):
    """``--admin-token VALUE`` is refused without echoing the value (it would show in ``ps``)."""

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: Any) -> None:
        kwargs["nargs"] = "?"
        super().__init__(option_strings, dest, **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: Any, option_string: str | None = None) -> None:
        parser.error(f"{option_string} is not accepted (a command line is visible to every user "
                     f"through ps): use --admin-token-file PATH or {TOKEN_ENV}")


# ---- the command line -----------------------------------------------------------------------


def _connection_options(p: argparse.ArgumentParser, top: bool) -> None:
    """The options of every sub-command, accepted before or after its name (the sub-command's
    copies default to nothing, so they never hide one given before it)."""
    default: Callable[[Any], Any] = (lambda v: v) if top else (lambda v: argparse.SUPPRESS)
    p.add_argument("--target", type=target_arg, default=default(None),
                   help="host:port of the engine (default: 127.0.0.1:$CARDGAMES_PORT, or "
                   f"{DEFAULT_PORT} when unset)")
    p.add_argument("--tls", action="store_true", default=default(False), help="connect with TLS")
    p.add_argument("--ca", "--ca-file", dest="ca", type=ca_file_arg, metavar="FILE", default=default(None),
                   help="PEM root certificate(s) for --tls (default: the system's)")
    p.add_argument("--server-name", default=default(None),
                   help="TLS name to verify instead of the target's host (implies --tls)")
    p.add_argument("--admin-token-file", metavar="PATH", default=default(None),
                   help=f"file holding the admin token ('-': standard input); default: the "
                   f"environment variable {TOKEN_ENV}")
    p.add_argument("--admin-token", action=_RefusePlainToken, help=argparse.SUPPRESS)
    p.add_argument("--timeout", type=seconds_arg, default=default(10.0), metavar="SECONDS",
                   help="deadline of the call (default 10)")


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    if value > INT32_MAX:  # the request's int32: protobuf's "Value out of range" traceback
        raise argparse.ArgumentTypeError(f"{text} is beyond the API's 32-bit integers")
    return value


def build_parser() -> argparse.ArgumentParser:
    p = command_parser("python -m clients.admin", "Operator commands over the engine's admin API: list, "
                       "inspect, terminate and export matches; reissue a seat token.",
                       epilog="The admin token: --admin-token-file PATH or the environment "
                       f"variable {TOKEN_ENV}. Exit status: 0 done, 1 the API refused or "
                       "failed (gRPC status and reason on stderr), 2 usage error, 130 interrupted (Ctrl-C).")
    _connection_options(p, top=True)
    sub = p.add_subparsers(dest="command", metavar="COMMAND", required=True)

    def command(name: str, help_text: str, description: str) -> argparse.ArgumentParser:
        c = sub.add_parser(name, help=help_text, description=description, allow_abbrev=False)
        _connection_options(c, top=False)
        return c

    c = command("list", "list matches, newest first",
                "Matches, newest first: id, game, status, seq (actions so far), seats (player names "
                "and whether they are present or away, bots, free seats), creation time, name.")
    c.add_argument("--status", choices=STATUSES, help="only matches in this state")
    c.add_argument("--game", metavar="ID", help="only matches of this game id (e.g. klaberjass)")
    c.add_argument("--limit", type=_positive, metavar="N",
                   help="at most N matches a page (default: the server's, 100; at most 1000)")
    c.add_argument("--all", action="store_true", help="every page, not only the first (--limit: the page size)")
    c.add_argument("--page-token", metavar="TOKEN",
                   help="the page after the previous one: the token it printed (same --status and --game)")
    c.add_argument("--json", action="store_true",
                   help="one JSON object per match and line (the MatchSummary fields) instead of the table; "
                        "the next page's token goes to stderr")

    c = command("inspect", "show a match's omniscient view: every hand and HIDDEN card",
                "The omniscient view of a match: its summary, the state of play and the legal "
                "actions of the seat to act, and EVERY HIDDEN CARD: each seat's hand, the stock "
                "and other zones; --json adds every deck dealt. Players must never see this.")
    c.add_argument("match_id", metavar="MATCH_ID")
    c.add_argument("--json", action="store_true",
                   help="everything (summary, view, hands, zones, first dealer, decks) as pretty JSON")

    c = command("terminate", "end a match now (status terminated)",
                "End a match now: its status becomes terminated, its players get a MATCH_ENDED "
                "event with the reason. Asks nothing; prints the match's final summary. A match "
                "already over is refused (FAILED_PRECONDITION, MATCH_NOT_ACTIVE).")
    c.add_argument("match_id", metavar="MATCH_ID")
    c.add_argument("--reason", required=True, metavar="TEXT",
                   help="why (logged, and sent to the players; at most 200 characters)")
    c.add_argument("--json", action="store_true", help="the final summary as JSON")

    c = command("export", "write a match's card-transcript/1 JSON (every deck included)",
                "The match as a card-transcript/1 document (NOTATION.md section 3): every deck, "
                "every action and legal set, the result. `python -m engine_service replay --check "
                "FILE` replays it. It shows every hidden card: a file written with -o is readable "
                "by its owner only (mode 0600).")
    c.add_argument("match_id", metavar="MATCH_ID")
    c.add_argument("-o", "--output", metavar="FILE", help="write it to FILE (mode 0600) instead of stdout")

    c = command("reissue-token", "give a player's seat a new token (the old one stops working)",
                "A new seat token for a seat a player has taken in an unfinished match, for a "
                "player who lost theirs or whose token leaked. The old token is refused from now "
                "on (UNAUTHENTICATED) and its open streams end (TOKEN_REVOKED); the seat is "
                "absent until the player connects with the new one. Prints the token alone on "
                "stdout, or writes it to a file readable by its owner only (-o).")
    c.add_argument("match_id", metavar="MATCH_ID")
    c.add_argument("seat", type=int32_arg, metavar="SEAT", help="the seat number (0-based)")
    c.add_argument("-o", "--output", metavar="FILE", help="write the token to FILE (mode 0600) instead of stdout")
    return p


def error_line(exc: CardGamesError, token: str | None) -> str:
    """One line naming the gRPC status, the engine's reason and its message (never the token)."""
    line = f"error: {exc.code.name}" + (f" ({exc.reason})" if exc.reason else "") + f": {exc.message}"
    if exc.code == grpc.StatusCode.UNAUTHENTICATED and token is None:
        line += f" (no admin token: give --admin-token-file PATH or set {TOKEN_ENV})"
    elif exc.reason == "ADMIN_DISABLED":
        # No token was compared: the engine has none (it logged admin_api_disabled at start).
        line += (f" (the engine was started without an admin token: set {TOKEN_ENV} or "
                 "--admin-token where it runs, and restart it)")
    elif exc.code in (grpc.StatusCode.UNAUTHENTICATED, grpc.StatusCode.PERMISSION_DENIED):
        line += " (the admin token was refused)"
    line = " ".join(line.split())  # one line
    return line.replace(token, "***") if token else line


async def run(args: argparse.Namespace, token: str | None) -> int:
    roots = args.ca.value if args.ca else None  # read as the command line was parsed (ca_file_arg)
    async with connect(args.target, tls=args.tls, root_certificates=roots, server_name=args.server_name,
                       timeout_s=args.timeout) as client:
        admin = AdminClient(client.channel, token, args.timeout)
        return await COMMANDS[args.command](admin, args)


_NEGATIVE_NUMBER = re.compile(r"^-\d+$|^-\d*\.\d+$")  # argparse's own test


def _unknown_option(parser: argparse.ArgumentParser, argv: Sequence[str]) -> str | None:
    """The first ``--option`` no command of ``parser`` has, or None. argparse took the value
    after such an option for the COMMAND and echoed it: ``--admin_token TOKEN list`` or
    ``--token TOKEN list`` printed "invalid choice: 'TOKEN'", the admin token on the screen
    (and in a CI log) that the refusal of ``--admin-token`` keeps out of it."""
    known = set(parser._option_string_actions)
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for command in action.choices.values():
                known |= set(command._option_string_actions)
    for arg in argv:
        if arg == "--":
            return None
        name = arg.split("=", 1)[0]
        # argparse reads these as values, not options: a negative number, or text with a space
        # (``terminate ID --reason "-- spam from seat 2"``)
        if not arg.startswith("-") or len(arg) == 1 or _NEGATIVE_NUMBER.match(arg) or " " in name:
            continue
        if arg.startswith("--") and name not in known:
            return name
        if not arg.startswith("--") and arg[:2] not in known:
            return arg[:2]  # -tTOKEN: the value may follow a short option directly
    return None


def main(argv: Sequence[str] | None = None, environ: dict[str, str] | None = None) -> int:
    parser = build_parser()
    unknown = _unknown_option(parser, sys.argv[1:] if argv is None else argv)
    if unknown:
        parser.error(f"unrecognized option {unknown} (what follows it is not shown: it may be a secret; "
                     "the admin token: --admin-token-file PATH or CARDGAMES_ADMIN_TOKEN)")
    # an argument no command takes here, a flag of another command among them (``list
    # --reason TEXT``): named, its value not shown (argparse echoed it: it may be a secret)
    args = parse_args(parser, argv)
    check_text(parser, args, paths={"ca", "admin_token_file", "output"})
    env = os.environ if environ is None else environ
    args.target = target_or_default(parser, args.target, env)
    token: str | None = None
    try:
        token = read_token(args, env)
        # `list | head`: the reader left, exit 0; stdout on a full disk: one line, exit 1
        return stdout_guarded(lambda: asyncio.run(run(args, token)), reader_left=0)
    except UsageError as exc:
        parser.error(str(exc))  # exit status 2
    except CardGamesError as exc:
        print(error_line(exc, token), file=sys.stderr, flush=True)
        return 1
    except KeyboardInterrupt:
        return 130
    return 2  # unreachable: parser.error exits


if __name__ == "__main__":
    sys.exit(main())
