"""``python -m engine_service replay [--check] FILE...``: replay card-transcript/1 files.

Per file it prints ``FILE: ok`` or ``FILE: <first difference>`` (the step or result, expected
and actual values); a file that cannot be read or is not a transcript gets a one-line error.
The exit status is non-zero if any file differs or fails.
"""

from __future__ import annotations

import argparse
import json

from .command_line import printable, stdout_guarded
from .rules import transcript
from .rules.errors import RulesError


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("replay", help="replay / check card-transcript/1 files")
    p.add_argument("--check", action="store_true",
                   help="compare every legal set, action and result with the transcript (default: also on)")
    p.add_argument("--show", action="store_true", help="print the final match result of each file")
    p.add_argument("files", nargs="+", metavar="FILE")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    # `replay ... | head` (the files after it are not checked: status 1), or a full disk
    # behind `>`: not a traceback
    return stdout_guarded(lambda: _replay(args), reader_left=1)


def _replay(args: argparse.Namespace) -> int:
    failed = 0
    for path in args.files:
        shown = printable(path)  # a name that is not UTF-8 printed: not a traceback after the check
        try:
            data = transcript.load(path)
            diff, state = transcript.check(data)
        except RulesError as exc:
            print(f"{shown}: error: {printable(exc.message)}")
            failed += 1
            continue
        if diff is None:
            line = f"{shown}: ok"
            if args.show and state is not None:
                line += " " + json.dumps(state.result())
            print(line)
        else:
            print(f"{shown}: {diff}")
            failed += 1
    return 1 if failed else 0
