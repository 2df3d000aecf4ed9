"""Command line: ``python -m engine_service {serve,replay,prune,demo} ...``."""

from __future__ import annotations

import argparse
import importlib
import sys

from engine_service.command_line import parse_args

#: Sub-command modules; each has ``add_parser(subparsers)``. A module that is not present in
#: this build is skipped so that the rules-only tools work on their own.
COMMANDS = ("engine_service.serve_cli", "engine_service.replay_cli", "engine_service.prune_cli",
            "engine_service.demo_cli")


def main(argv: list[str] | None = None) -> int:
    # no abbreviated flags: argparse's "ambiguous option: --d=VALUE could match --db, ..."
    # echoed the value (a PostgreSQL URL with its password, an admin token), and ``--admin=X``
    # was taken as ``--admin-token``; a flag not spelt out is refused as unrecognized, its value
    # not shown (command_line.unrecognized)
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
    args = parse_args(parser, argv)
    return int(args.func(args) or 0)


if __name__ == "__main__":
    sys.exit(main())
