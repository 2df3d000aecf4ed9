"""Consoles for the outputs without a screen (``clients.play --autoplay``, ``clients.watch
--plain``, their one-line errors) that survive a stream which cannot encode the suit symbols
(or the other symbols they write: the arrows, the dashes).

Under a non-UTF-8 locale (a ``latin-1`` terminal, ``PYTHONIOENCODING=ascii``, a log file
opened with another encoding) the first ``♥`` ended the program with UnicodeEncodeError and a
traceback. There the symbols are written in the rulebooks' own letters (``10♥`` -> ``10H``,
``trump ♠`` -> ``trump S``, GJ-0.2 / JJK-0.2), the arrows and dashes in ASCII, and anything
else the stream cannot hold as ``?``: the output stays readable and the program goes on.
"""

from __future__ import annotations

import codecs
import io
import sys
from typing import Any, TextIO

from rich.console import Console

#: What the renderers write, in ASCII (the suits as the rulebooks' card codes write them).
ASCII_FALLBACKS = str.maketrans({"♠": "S", "♥": "H", "♦": "D", "♣": "C", "▒": "#", "→": "->", "—": "-",
                                 "–": "-", "▶": ">", "…": "...", "·": "."})


def can_encode(stream: Any, text: str = "".join(map(chr, ASCII_FALLBACKS))) -> bool:
    """Whether ``stream``'s encoding holds ``text`` (no encoding said: UTF-8, as rich assumes);
    by default every symbol the renderers write (:data:`ASCII_FALLBACKS`), not the suits alone:
    a Japanese JIS X 0213 locale (``shift_jis_2004``, ``euc_jis_2004``) holds the suits but
    not the em dash of a Klaberjass deal's line, which ended the program there with
    UnicodeEncodeError."""
    encoding = getattr(stream, "encoding", None) or "utf-8"
    try:
        codecs.lookup(encoding)
        text.encode(encoding)
    except (LookupError, UnicodeEncodeError):
        return False
    return True


class FallbackWriter(io.TextIOBase):
    """A text stream over ``stream`` that writes what its encoding cannot hold by
    :data:`ASCII_FALLBACKS`, then ``?``; it says the same ``encoding`` so that rich draws its
    tables in ASCII there too."""

    def __init__(self, stream: TextIO) -> None:
        super().__init__()
        self.stream = stream

    @property
    def encoding(self) -> str:  # type: ignore[override]
        """The stream's encoding; ASCII when it says none or one Python does not know (which
        :func:`can_encode` counts as holding no suit symbol: writing in it failed with
        LookupError at the first line)."""
        encoding = getattr(self.stream, "encoding", None) or "ascii"
        try:
            codecs.lookup(encoding)
        except LookupError:
            return "ascii"
        return encoding

    def isatty(self) -> bool:
        return self.stream.isatty()

    def fileno(self) -> int:
        return self.stream.fileno()

    def write(self, text: str) -> int:
        try:
            text.encode(self.encoding)
        except UnicodeEncodeError:
            text = text.translate(ASCII_FALLBACKS)
            text = text.encode(self.encoding, errors="replace").decode(self.encoding)
        self.stream.write(text)
        return len(text)

    def flush(self) -> None:
        self.stream.flush()


def console(stderr: bool = False, **options: Any) -> Console:
    """A rich Console on stdout (or stderr) that never fails on the suit symbols; ``options``
    as rich's (``highlight``, ``soft_wrap``)."""
    stream = sys.stderr if stderr else sys.stdout
    if can_encode(stream):
        return Console(stderr=stderr, **options)
    return Console(file=FallbackWriter(stream), **options)
