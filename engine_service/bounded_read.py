"""Reading a file named on a command line, with a limit on its size.

``Path.read_bytes()`` reads until the end of the file: ``/dev/zero``, ``/dev/urandom`` or a
multi-gigabyte file given by mistake as a certificate (``serve --tls-cert``, a client's
``--ca``) or as a transcript (``replay``) grew the process until memory ran out, and the
command died without saying which file was wrong. Here the file is read up to its limit
and one byte more, so that a longer one is refused with its size named; a device, a
directory or a socket is refused before reading.

Stdlib only: the rules core (transcript loading) and the clients use it too.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

#: A PEM file: a certificate chain of a few certificates is a few KiB, a CA bundle of every
#: public root (Mozilla's, ~150 certificates) about 220 KiB.
PEM_LIMIT = 1024 * 1024

#: A card-transcript/1 file. A match ends at ``max_match_deals`` deals (1,000 by default);
#: a deal as exported (every legal set, indented) is at most ~10 KB, so the longest match of
#: default settings is ~10 MB.
TRANSCRIPT_LIMIT = 64 * 1024 * 1024


#: A token file (``clients.play --token-file``, ``clients.admin --admin-token-file``): one
#: token on a line, sent in a gRPC header, which carries 8 KiB by default.
TOKEN_LIMIT = 64 * 1024


class FileRefused(ValueError):
    """A file that is too large or not a file one can read to its end; the message says which
    and is meant to follow the file's name: ``FLAG PATH: <message>``."""


class UnreadableFile(ValueError):
    """A file :func:`read_named` could not read or refused; the message names it and says why."""


def _size(n: int) -> str:
    return f"{n // (1024 * 1024)} MiB" if n % (1024 * 1024) == 0 else f"{n} bytes"


def _kind(mode: int) -> str:
    """What a file that is not a regular one is, for its refusal (a mode as ``os.fstat`` gives
    it: a block device, /dev/sda given by mistake, cannot be made in a test)."""
    return ("a directory" if stat.S_ISDIR(mode) else
            "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) else
            "a pipe" if stat.S_ISFIFO(mode) else "a socket")


def read_bounded(path: str | os.PathLike[str], limit: int, *, pipes: bool = True) -> bytes:
    """The bytes of ``path`` if it is a regular file (or, with ``pipes``, a pipe such as
    ``<(gunzip -c FILE)``) of at most ``limit`` bytes. OSError as ``open``/``read`` raise it
    (the caller names the file); :class:`FileRefused` for any other kind of file or a longer
    one. ``pipes=False`` where the file is read again later by name (a pipe would then be
    empty or block)."""
    # O_NONBLOCK: opening a named pipe no one writes to would wait for a writer for ever
    fd = os.open(Path(path), os.O_RDONLY | os.O_NONBLOCK)
    try:
        mode = os.fstat(fd).st_mode
        if not (stat.S_ISREG(mode) or (pipes and stat.S_ISFIFO(mode))):
            raise FileRefused(f"{_kind(mode)}, not a regular file")
        os.set_blocking(fd, True)
        with open(fd, "rb", closefd=False) as f:
            data = f.read(limit + 1)
    finally:
        os.close(fd)
    if len(data) > limit:
        raise FileRefused(f"larger than {_size(limit)}")
    return data


def read_named(path: str | os.PathLike[str], limit: int, what: str = "", *, pipes: bool = True) -> bytes:
    """:func:`read_bounded`, its failures one :class:`UnreadableFile` naming the file (``what``,
    e.g. "the CA file", before its path): ``cannot read WHAT PATH: <the system's reason>`` or
    ``WHAT PATH: <the refusal>``, the one line each command shows of a file it cannot use."""
    name = f"{what} {path}" if what else str(path)
    try:
        return read_bounded(path, limit, pipes=pipes)
    except OSError as exc:
        raise UnreadableFile(f"cannot read {name}: {exc.strerror or exc}") from None
    except FileRefused as exc:
        raise UnreadableFile(f"{name}: {exc}") from None
