"""What the project's command lines (``python -m engine_service ...``, ``clients.admin``) do
alike with arguments they do not know: refuse them, naming the flags and never their values.

A misspelt flag leaves its value among the unknown arguments (``--admin_token TOKEN``,
``--database postgresql://u:pw@...``), and so does a flag another command has
(``clients.admin list --reason TEXT``); argparse printed them all in its "unrecognized
arguments" error, the secret with them, on a terminal, a CI log or a container's log.
"""

from __future__ import annotations

import argparse
from typing import Sequence


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
