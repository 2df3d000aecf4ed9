"""Page tokens of the listing calls (the admin's ListMatches, the lobby's ListOpenMatches).

Keyset paging, not offsets: a token holds the listing position of the last match of the page
it ends, ``(created_at, match_id)`` (the listing's order is total: the id breaks ties of
``created_at``), so the next page starts strictly after that match whatever was created,
ended or deleted meanwhile; an offset would repeat or skip a match for each one created or
deleted before it. The token also holds the request's filters, so that a token sent with
other filters is refused rather than silently continuing another listing from a position
that means nothing there.

The token is urlsafe base64 (no padding) of a small JSON object. It is opaque to clients but
not secret: the created_at and match_id of a listed match are shown in that very listing, and
the filters are the caller's own. Nor is it signed: a forged token can only start a listing
at a position the caller chose, which shows nothing a first page and paging would not.
"""

from __future__ import annotations

import base64
import binascii
import json
import math
from typing import Any, Mapping

from .api import BadRequest

#: The longest token accepted: a real one is 100 to 150 characters, about 300 with a game id
#: of the longest (128 characters); longer is not one of ours, refused before decoding.
MAX_TOKEN_CHARS = 1024

#: The longest match id a cursor may hold: the longest the manager looks up (its
#: MAX_MATCH_ID_LENGTH); the server's ids have 16 characters.
MAX_CURSOR_ID_CHARS = 64

#: The listings a token may belong to: a lobby token does not page the admin's listing.
LISTINGS = ("matches", "lobby")


def encode_page_token(listing: str, filters: Mapping[str, str], created_at: float, match_id: str) -> str:
    """The token of the page after the match at (``created_at``, ``match_id``) of ``listing``
    read with ``filters`` (their values as the caller sent them: "" for none)."""
    assert listing in LISTINGS, listing
    body = {"l": listing, "f": dict(sorted(filters.items())), "c": created_at, "m": match_id}
    raw = json.dumps(body, separators=(",", ":"), ensure_ascii=True).encode()
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


def _bad(why: str) -> BadRequest:
    return BadRequest(f"page_token {why}: send the next_page_token of the previous page with the same "
                      "filters, or none for the first page", reason="BAD_PAGE_TOKEN", field="page_token")


def _cursor_id(match_id: Any) -> bool:
    """Whether a token's ``m`` may be a match id. JSON lets a forged token carry any string,
    and the stores cannot take them all: a lone surrogate ("\\ud800") does not encode to UTF-8
    (the listing failed INTERNAL), a NUL is refused by PostgreSQL (UNAVAILABLE); a token
    holding one must be BAD_PAGE_TOKEN like any other that is not ours."""
    return (isinstance(match_id, str) and 0 < len(match_id) <= MAX_CURSOR_ID_CHARS
            and match_id.isprintable())


def _cursor_time(value: Any) -> float | None:
    """A token's ``c`` as a finite float, or None. JSON integers have no bound: a forged
    ``1`` followed by 400 zeros has no float (OverflowError, and the listing failed
    INTERNAL), so the conversion is checked rather than assumed."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        at = float(value)
    except OverflowError:
        return None
    return at if math.isfinite(at) else None


def decode_page_token(token: str, listing: str, filters: Mapping[str, str]) -> tuple[float, str] | None:
    """The ``(created_at, match_id)`` cursor of ``token`` ("": None, the first page).

    BadRequest (INVALID_ARGUMENT, reason BAD_PAGE_TOKEN, field page_token) for a token that
    does not decode, was issued by the other listing, or with other ``filters``."""
    if not token:
        return None
    if len(token) > MAX_TOKEN_CHARS:
        raise _bad("is not a page token of this listing")
    try:
        raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
        body: Any = json.loads(raw.decode("utf-8"))
    except (binascii.Error, ValueError, UnicodeDecodeError):
        raise _bad("is not a page token of this listing") from None
    at = _cursor_time(body.get("c")) if isinstance(body, dict) else None
    if (not isinstance(body, dict) or set(body) != {"l", "f", "c", "m"} or body["l"] not in LISTINGS
            or not isinstance(body["f"], dict) or not _cursor_id(body["m"]) or at is None):
        raise _bad("is not a page token of this listing")
    if body["l"] != listing:
        raise _bad("is not a page token of this listing")
    if body["f"] != dict(filters):
        raise _bad("was issued for other filters")
    return at, body["m"]
