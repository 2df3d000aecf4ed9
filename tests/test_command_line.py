"""The shared command-line helpers (engine_service/command_line.py) on their own: what the
commands' tests (tests/transport/test_settings.py, tests/clients/test_client_edge.py, the
``/dev/full`` and ``| head`` runs) reach only through one command each."""

from __future__ import annotations

import argparse
import errno
import sys

import pytest

from engine_service.command_line import check_text, parse_args, printable, stdout_guarded, unrecognized


@pytest.mark.parametrize("unknown, says", [
    (["--flag"], "--flag"),  # a flag alone hides nothing
    (["-x"], "-x"),
    (["--flag=s3cret"], "--flag (1 value not shown: it may hold a secret)"),
    (["-xs3cret"], "-x (1 value not shown: it may hold a secret)"),
    # "-" is a value (standard input, or a secret starting the word), never a flag's name
    (["-"], "(1 value not shown: it may hold a secret)"),
    (["--a", "s3cret", "-b", "s3cret"], "--a -b (2 values not shown: they may hold a secret)"),
])
def test_unrecognized_names_the_flags_and_counts_the_values(unknown, says):
    assert unrecognized(unknown) == f"unrecognized arguments: {says}"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="cmd", exit_on_error=False)
    parser.add_argument("--name")
    parser.add_argument("--file")
    parser.add_argument("--option", action="append")
    commands = parser.add_subparsers(dest="command")
    commands.add_parser("inspect").add_argument("match_id", metavar="MATCH_ID")
    return parser


@pytest.mark.parametrize("argv, named", [
    (["--name", "s3cret\udce9"], "--name"),
    (["--option", "a=1", "--option", "s3cret=\udcff"], "--option"),  # one of a list's values
    (["inspect", "s3cret\udcff"], "MATCH_ID"),  # a sub-command's argument
])
def test_check_text_names_the_argument_that_is_not_utf8(argv, named, capsys):
    """Named, its value not shown (the module's docstring: never its value)."""
    parser = _parser()
    with pytest.raises(SystemExit) as info:
        check_text(parser, parser.parse_args(argv), paths={"file"})
    err = capsys.readouterr().err
    assert info.value.code == 2 and f"error: argument {named}: not UTF-8 text" in err, err
    assert "s3cret" not in err, err


def test_check_text_leaves_paths_and_text_alone():
    parser = _parser()
    check_text(parser, parser.parse_args(["--file", "/tmp/\udcff.pem", "--name", "Zo\u00eb", "--option", "a=1",
                                          "inspect", "M1"]), paths={"file"})


def test_parse_args_refuses_an_unknown_argument_without_its_value(capsys):
    assert parse_args(_parser(), ["--name", "Ann", "inspect", "M1"]).match_id == "M1"
    with pytest.raises(SystemExit) as info:
        parse_args(_parser(), ["--name", "Ann", "--nmae=s3cret", "-zs3cret", "inspect", "M1"])
    err = capsys.readouterr().err
    assert info.value.code == 2 and "s3cret" not in err, err
    assert err.endswith("cmd: error: unrecognized arguments: --nmae -z (2 values not shown: they may hold a secret)\n")


def test_parse_args_refuses_a_single_unknown_argument(capsys):
    """One argument the command does not know is refused as well (a usage error, status 2),
    not only several: ``serve --admin-tokn=TOKEN`` alone would otherwise start the engine
    without its admin API (tests/transport/test_settings.py reaches it through ``serve``,
    where a command that is not refused serves until it is killed)."""
    with pytest.raises(SystemExit) as info:
        parse_args(_parser(), ["--nmae=s3cret", "inspect", "M1"])
    err = capsys.readouterr().err
    assert info.value.code == 2 and "s3cret" not in err, err
    assert err.endswith("cmd: error: unrecognized arguments: --nmae (1 value not shown: it may hold a secret)\n")


def test_printable_shows_a_byte_that_is_not_utf8_as_an_escape():
    """A path's byte that is not UTF-8 (a lone surrogate in Python) is shown as ``\\xff``, the
    rest of the text as it is, so that a UTF-8 standard output can print it; a path object
    alike."""
    from pathlib import Path

    assert printable("/tmp/caf\udce9s/\udcff.sqlite3") == "/tmp/caf\\xe9s/\\xff.sqlite3"
    assert printable(Path("/tmp/caf\udce9.pem")) == "/tmp/caf\\xe9.pem"
    assert printable("/var/lib/cardgames/Zo\u00eb \u2660.sqlite3") == "/var/lib/cardgames/Zo\u00eb \u2660.sqlite3"
    printable("caf\udce9").encode("utf-8")  # printable: no UnicodeEncodeError


def test_printable_shows_any_path_object_as_its_path(tmp_path):
    """``printable(text: str | os.PathLike[str])``: a path object is shown as the path it
    stands for (``os.fspath``), not as its ``str()``, which for a path object other than
    ``pathlib.Path`` is something else (``<DirEntry 'name'>`` for ``os.scandir``'s)."""
    import os

    (tmp_path / "caf\udce9.json").touch()
    entry, = os.scandir(tmp_path)
    assert printable(entry) == f"{tmp_path}/caf\\xe9.json"


class _Output:
    """A standard output that records its flushes, or fails to be written."""

    def __init__(self, fails: OSError | None = None):
        self.fails, self.flushed = fails, 0

    def write(self, text: str) -> int:
        return len(text)

    def flush(self) -> None:
        if self.fails is not None:
            raise self.fails
        self.flushed += 1


def test_stdout_guarded_returns_the_commands_status_its_output_flushed(monkeypatch):
    out = _Output()
    monkeypatch.setattr(sys, "stdout", out)
    assert stdout_guarded(lambda: 3, reader_left=0) == 3
    assert out.flushed == 1


@pytest.mark.parametrize("reader_left", [0, 1])
def test_a_reader_that_left_ends_the_command_with_the_status_given(reader_left, monkeypatch, capsys):
    dropped = []
    monkeypatch.setattr("engine_service.command_line.drop_stdout", lambda: dropped.append(1))
    monkeypatch.setattr(sys, "stdout", _Output(BrokenPipeError(errno.EPIPE, "Broken pipe")))
    assert stdout_guarded(lambda: 0, reader_left=reader_left) == reader_left
    assert dropped == [1] and capsys.readouterr().err == ""


@pytest.mark.parametrize("error, says", [
    (OSError(errno.ENOSPC, "No space left on device"), "No space left on device"),
    (OSError(errno.EDQUOT, "Disk quota exceeded"), "Disk quota exceeded"),  # a quota
    (OSError(errno.EFBIG, "File too large"), "File too large"),  # past the largest file allowed
    (OSError(errno.EIO, ""), "[Errno 5] "),  # no reason given: the error as it is
])
def test_an_output_that_cannot_be_written_is_one_line(error, says, monkeypatch, capsys):
    dropped = []
    monkeypatch.setattr("engine_service.command_line.drop_stdout", lambda: dropped.append(1))
    monkeypatch.setattr(sys, "stdout", _Output(error))
    assert stdout_guarded(lambda: 0, reader_left=0) == 1
    assert dropped == [1]
    assert capsys.readouterr().err == f"error: cannot write standard output ({says})\n"


@pytest.mark.parametrize("error", [
    FileNotFoundError(errno.ENOENT, "No such file or directory", "cards.sqlite3"),
    # a connection the command made (a database, the engine), reset: not a reader that left
    ConnectionResetError(errno.ECONNRESET, "Connection reset by peer"),
])
def test_another_os_error_is_the_commands_own(error, monkeypatch, capsys):
    """A file or a database the command could not open is not an output that could not be
    written: the error goes on to the command (its own message), never "cannot write
    standard output", nor the quiet end of a reader that left."""
    def command() -> int:
        raise error

    monkeypatch.setattr("engine_service.command_line.drop_stdout", lambda: pytest.fail("output dropped"))
    with pytest.raises(type(error)):
        stdout_guarded(command, reader_left=0)
    assert capsys.readouterr().err == ""


def test_drop_stdout_sends_what_is_left_nowhere(tmp_path, monkeypatch):
    """The interpreter's last flush at exit goes to /dev/null, not to the reader that left or
    the full disk (an "Exception ignored" message, exit status 120); no descriptor is left
    open."""
    import os

    from engine_service.command_line import drop_stdout

    path = tmp_path / "out.txt"
    with open(path, "w") as out:
        monkeypatch.setattr(sys, "stdout", out)
        before = sorted(os.listdir("/proc/self/fd"))
        drop_stdout()
        assert sorted(os.listdir("/proc/self/fd")) == before
        out.write("after the reader left\n")
        out.flush()
    assert path.read_text() == ""
