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
    if (not isinstance(body, dict) or set(body) != {"l", "f", "c", "m"} or body["l"] not in LISTINGS
            or not isinstance(body["f"], dict) or not isinstance(body["m"], str) or not body["m"]
            or isinstance(body["c"], bool) or not isinstance(body["c"], (int, float))
            or not math.isfinite(_as_float(body["c"]))):
        raise _bad("is not a page token of this listing")
    if body["l"] != listing:
        raise _bad("is not a page token of this listing")
    if body["f"] != dict(filters):
        raise _bad("was issued for other filters")
    return float(body["c"]), body["m"]


def _as_float(number: int | float) -> float:
    """``number`` as a float, infinite when it has none: JSON integers are unbounded, and a
    forged token's integer too large for a float (``1e400`` written out) made ``float()``
    raise OverflowError, an INTERNAL error instead of BAD_PAGE_TOKEN."""
    try:
        return float(number)
    except OverflowError:
        return math.inf
