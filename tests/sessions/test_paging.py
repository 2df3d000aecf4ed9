"""Page tokens (engine_service/sessions/paging.py): the cursor comes back exactly (a creation
time off by one unit in the last place would repeat or skip the match at the page's edge),
and a token is refused (BAD_PAGE_TOKEN, field page_token) for other filters, the other
listing, or a body that is not one of ours (a cursor id no match can have included)."""

from __future__ import annotations

import base64
import json
import random

import pytest

from engine_service.sessions.api import BadRequest
from engine_service.sessions.paging import MAX_CURSOR_ID_CHARS, MAX_TOKEN_CHARS, decode_page_token, encode_page_token


def test_the_cursor_comes_back_exactly():
    rng = random.Random(7)
    for _ in range(2000):
        at = rng.uniform(1e9, 2e9) if rng.random() < 0.8 else rng.choice([0.0, 1.0, 1e-300, 2 ** 53 + 0.0])
        # "?", ">" and "~" put a 62 or 63 into the base64 (standard: "+", "/"; urlsafe: "-", "_")
        match_id = "".join(rng.choice("abcXYZ019é?>~") for _ in range(rng.randint(1, 20)))
        filters = {"status": rng.choice(["", "active"]), "game": rng.choice(["", "klaberjass"])}
        token = encode_page_token("matches", filters, at, match_id)
        assert decode_page_token(token, "matches", filters) == (at, match_id)
        assert token.isascii() and "=" not in token and "+" not in token and "/" not in token
    assert decode_page_token("", "lobby", {"game": ""}) is None  # the first page


def _body(**changes) -> str:
    body = {"l": "lobby", "f": {"game": ""}, "c": 1.5, "m": "m1", **changes}
    return base64.urlsafe_b64encode(json.dumps(body).encode()).decode().rstrip("=")


@pytest.mark.parametrize("token", [
    encode_page_token("lobby", {"game": "klaberjass"}, 1.5, "m1"),  # other filters
    encode_page_token("matches", {"game": ""}, 1.5, "m1"),  # the other listing
    "not base64!", "e30", base64.urlsafe_b64encode(b"\xff\xfe").decode(), _body(c=True), _body(c="1.5"),
    _body(m=""), _body(m=3), _body(l="other"), _body(f=["game"]), _body(extra=1),
    _body(c=float("inf")), _body(c=float("nan")), "A" * 1025,
    " ", "\t",  # blank is not empty: only "" asks for the first page (docs/api.md, Paging: garbage)
    # a cursor id no store takes: a lone surrogate (SQLite's UTF-8 encoding failed, INTERNAL),
    # a NUL or another control character (PostgreSQL refuses NUL), longer than any match id
    _body(m="\ud800"), _body(m="m\x001"), _body(m="m\n1"), _body(m="m" * 65),
    _body(c=10 ** 400),  # a JSON integer no float holds (OverflowError: INTERNAL)
    # JSON that is not an object (read as one, it failed INTERNAL)
    *[base64.urlsafe_b64encode(raw).decode().rstrip("=") for raw in (b"[]", b'"lobby"', b"1.5", b"null")],
])
def test_a_token_not_for_this_listing_is_refused(token):
    with pytest.raises(BadRequest) as refused:
        decode_page_token(token, "lobby", {"game": ""})
    assert (refused.value.reason, refused.value.metadata) == ("BAD_PAGE_TOKEN", {"field": "page_token"})


def test_a_token_built_as_ours_is_read():
    """The format is the server's own (opaque to clients, stable within a version)."""
    assert decode_page_token(_body(), "lobby", {"game": ""}) == (1.5, "m1")


def test_a_token_of_exactly_the_longest_accepted_length_is_read():
    """paging.MAX_TOKEN_CHARS: a token of 1024 characters is read; a longer one is refused
    before it is decoded, well-formed or not (no token of ours is that long)."""
    game = next(g for g in ("g" * n for n in range(600, 800))
                if len(encode_page_token("lobby", {"game": g}, 1.5, "m1")) == MAX_TOKEN_CHARS)
    token = encode_page_token("lobby", {"game": game}, 1.5, "m1")
    assert decode_page_token(token, "lobby", {"game": game}) == (1.5, "m1")
    longer = encode_page_token("lobby", {"game": game + "g"}, 1.5, "m1")
    assert len(longer) > MAX_TOKEN_CHARS
    with pytest.raises(BadRequest) as refused:
        decode_page_token(longer, "lobby", {"game": game + "g"})
    assert refused.value.reason == "BAD_PAGE_TOKEN"


def test_an_integer_creation_time_comes_back_as_a_float():
    """paging._cursor_time: a token's ``c`` is the cursor as a float, also when the JSON holds
    an integer (a forged token; JSON integers have no bound): the stores bind it against
    their creation times, and SQLite cannot bind an integer beyond 64 bits (OverflowError,
    INTERNAL) where 1e30 as a float is an ordinary position past every match."""
    for c in (2, 10 ** 30):
        at, match_id = decode_page_token(_body(c=c), "lobby", {"game": ""})
        assert (type(at), at, match_id) == (float, float(c), "m1")


def test_a_cursor_id_of_the_longest_match_id_is_read():
    """paging.MAX_CURSOR_ID_CHARS: a match id of 64 characters (the longest the manager looks
    up) is a cursor; 65 is refused (test_a_token_not_for_this_listing_is_refused)."""
    assert decode_page_token(_body(m="m" * MAX_CURSOR_ID_CHARS), "lobby", {"game": ""}) == (1.5, "m" * 64)


def test_the_refusal_says_whether_the_filters_differ_or_the_token_is_not_ours():
    """The message tells a client what to fix: its filters (a token of this listing sent with
    other filters) or its token (one whose filters are not even an object is not ours)."""
    with pytest.raises(BadRequest) as other_filters:
        decode_page_token(encode_page_token("lobby", {"game": "klaberjass"}, 1.5, "m1"), "lobby", {"game": ""})
    assert "was issued for other filters" in str(other_filters.value)
    # and how: the previous page's token with the same filters, or none (docs/api.md, Errors:
    # BAD_PAGE_TOKEN, list again from the first page)
    assert str(other_filters.value).endswith("send the next_page_token of the previous page with the same "
                                             "filters, or none for the first page")
    for forged in (_body(f=[]), _body(f=["game"])):
        with pytest.raises(BadRequest) as not_ours:
            decode_page_token(forged, "lobby", {"game": ""})
        assert "is not a page token of this listing" in str(not_ours.value), forged
