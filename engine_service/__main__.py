"""Command line: ``python -m engine_service {serve,replay,prune,demo} ...``."""

from __future__ import annotations

import argparse
import importlib
import sys

#: Sub-command modules; each has ``add_parser(subparsers)``. A module that is not present in
#: this build is skipped so that the rules-only tools work on their own.
COMMANDS = ("engine_service.serve_cli", "engine_service.replay_cli", "engine_service.prune_cli",
            "engine_service.demo_cli")


def main(argv: list[str] | None = None) -> int:
    # no abbreviated flags: argparse's "ambiguous option: --d=VALUE could match --db, ..."
    # echoed the value (a PostgreSQL URL with its password, an admin token), and ``--admin=X``
    # was taken as ``--admin-token``; a flag not spelt out is refused as unrecognized, its value
    # not shown (_unrecognized)
    parser = argparse.ArgumentParser(prog="python -m engine_service", allow_abbrev=False,
                                     description="Card-game engine service and tools.")
    sub = parser.add_subparsers(dest="command", required=True)
    for name in COMMANDS:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name == name:
                continue
            raise
        module.add_parser(sub)
    for command in sub.choices.values():
        command.allow_abbrev = False
    given = sys.argv[1:] if argv is None else argv
    if given and given[0].startswith("-") and given[0] not in ("-h", "--help"):
        # an option before any command (``--db URL`` without ``serve``): argparse took the
        # option's value for the command and echoed it ("invalid choice: 'postgresql://u:pw@...'")
        parser.error(f"name the command first: {{{','.join(sub.choices)}}} "
                     f"(python -m engine_service serve --port ... --db ...)")
    args, unknown = parser.parse_known_args(argv)
    if unknown:
        parser.error(_unrecognized(unknown))
    return int(args.func(args) or 0)


def _unrecognized(unknown: list[str]) -> str:
    """argparse's "unrecognized arguments" without their values: a misspelt flag
    (``--admin_token TOKEN``, ``--database postgresql://u:pw@...``) left its value among the
    unknown arguments, and argparse printed them all, the admin token or the password on the
    engine's stderr (a container's log). The flags' names are shown, the values counted."""
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


if __name__ == "__main__":
    sys.exit(main())
