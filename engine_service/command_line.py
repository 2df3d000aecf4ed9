"""What the project's command lines (``python -m engine_service ...``, the clients, the
arena) do alike with arguments they cannot take: refuse them as usage errors, naming the
argument and never its value.

* :func:`parse_args`: an argument the command does not know. A misspelt flag leaves its value
  among the unknown arguments (``--admin_token TOKEN``, ``--database postgresql://u:pw@...``),
  and so does a flag another command has (``clients.admin list --reason TEXT``); argparse
  printed them all in its "unrecognized arguments" error, the secret with them, on a
  terminal, a CI log or a container's log.
* :func:`check_text`: a value with a byte that is not UTF-8, which a request cannot carry
  (the clients).
* :func:`stdout_guarded`: a standard output that cannot be written, a reader that left
  (``| head``) or a full disk behind ``>``, for the commands whose output is their result
  (``replay``, ``prune``, ``clients.admin``): not a traceback.
"""

from __future__ import annotations

import argparse
import errno
import os
import sys
from typing import Callable, Collection, Iterator, Sequence


def unrecognized(unknown: Sequence[str]) -> str:
    """argparse's "unrecognized arguments" without their values: the flags' names are shown,
    the values counted."""
    names, hidden = [], 0
    for arg in unknown:
        if arg.startswith("--"):
            name = arg.split("=", 1)[0]  # --flag=VALUE
        elif arg.startswith("-") and arg != "-":
            name = arg[:2]  # -xVALUE: a short option's value may follow it directly
        else:
            name = ""
        if name:
            names.append(name)
        hidden += name != arg
    shown = names + ([f"({hidden} value{'s' if hidden != 1 else ''} not shown: "
                      f"{'they' if hidden != 1 else 'it'} may hold a secret)"] if hidden else [])
    return "unrecognized arguments: " + " ".join(shown)


def parse_args(parser: argparse.ArgumentParser, argv: Sequence[str] | None) -> argparse.Namespace:
    """``parser.parse_args(argv)``, with an argument it does not know refused as
    :func:`unrecognized` says it (a usage error, exit status 2)."""
    args, unknown = parser.parse_known_args(argv)
    if unknown:
        parser.error(unrecognized(unknown))
    return args


def _actions(parser: argparse.ArgumentParser) -> Iterator[argparse.Action]:
    """The arguments of ``parser`` and of its sub-commands."""
    for action in parser._actions:
        yield action
        if isinstance(action, argparse._SubParsersAction):
            for command in action.choices.values():
                yield from _actions(command)


def _not_text(value: object) -> bool:
    if isinstance(value, (list, tuple)):
        return any(_not_text(v) for v in value)
    if not isinstance(value, str):
        return False
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:  # a byte that is not UTF-8, kept by Python as a lone surrogate
        return True
    return False


def check_text(parser: argparse.ArgumentParser, args: argparse.Namespace, *, paths: Collection[str] = ()) -> None:
    """A usage error naming the argument, not its value, when one that is not a file's path
    (its ``dest`` in ``paths``: a path may hold any bytes) holds a byte that is not UTF-8 (a
    mistyped one, or a terminal in another encoding). Such a value went into a protobuf string
    of a request (a name, a match id, a reason, a target) and the command died with a
    UnicodeEncodeError traceback."""
    for action in _actions(parser):
        # an argument without a value in ``args`` (a sub-command's, the sub-commands' own
        # dest=SUPPRESS) is None here: nothing to check, and a value's action always has a name
        if action.dest in paths:
            continue
        if _not_text(getattr(args, action.dest, None)):
            name = argparse._get_action_name(action)
            parser.error(f"argument {name}: not UTF-8 text (it has a byte that is not UTF-8; the "
                         "value is not shown)")


#: The errors of a write to a file that cannot take it: a full disk or quota, a file too large,
#: a device's error.
_OUTPUT_FAILED = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EIO})


def printable(text: str | os.PathLike[str]) -> str:
    """``text`` (a path, or a message naming one) as any standard output can print. A path may
    hold bytes that are not UTF-8 (check_text leaves them to the paths it is told of); Python
    holds each as a lone surrogate, which a UTF-8 locale's stdout refuses (UnicodeEncodeError):
    the command had done its work and died with a traceback. Such a byte is shown as ``\\xff``."""
    return os.fspath(text).encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def drop_stdout() -> None:
    """What is left of the output goes nowhere: the interpreter's last flush of it at exit
    would fail again (a reader that left, a full disk) with an "Exception ignored" message and
    exit status 120."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)


def stdout_guarded(command: Callable[[], int], *, reader_left: int) -> int:
    """``command()``, its output flushed before it returns. A reader that left (``... | head``)
    ends it quietly with exit status ``reader_left``: 0 where the output is all there is to it
    (a listing), 1 where the work stopped unfinished with it (files not checked, a prune cut
    short); a standard output that cannot be written (a full disk behind ``>``) is one line on
    stderr, exit status 1. Both were a traceback."""
    try:
        status = command()
        sys.stdout.flush()
        return status
    except BrokenPipeError:
        drop_stdout()
        return reader_left
    except OSError as exc:
        # what writing output fails with; these commands turn their other I/O errors (a file,
        # the database) into their own messages
        if exc.errno not in _OUTPUT_FAILED:
            raise
        drop_stdout()
        print(f"error: cannot write standard output ({exc.strerror or exc})", file=sys.stderr)
        return 1
