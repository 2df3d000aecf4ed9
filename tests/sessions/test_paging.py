"""Page tokens (engine_service/sessions/paging.py): the cursor comes back exactly (a creation
time off by one unit in the last place would repeat or skip the match at the page's edge),
and a token is refused (BAD_PAGE_TOKEN, field page_token) for other filters, the other
listing, or a body that is not one of ours."""

from __future__ import annotations

import base64
import json
import random

import pytest

from engine_service.sessions.api import BadRequest
from engine_service.sessions.paging import decode_page_token, encode_page_token


def test_the_cursor_comes_back_exactly():
    rng = random.Random(7)
    for _ in range(2000):
        at = rng.uniform(1e9, 2e9) if rng.random() < 0.8 else rng.choice([0.0, 1.0, 1e-300, 2 ** 53 + 0.0])
        match_id = "".join(rng.choice("abcXYZ019é") for _ in range(rng.randint(1, 20)))
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
    _body(c=10 ** 400),  # a JSON integer no float holds (it was an OverflowError: INTERNAL)
])
def test_a_token_not_for_this_listing_is_refused(token):
    with pytest.raises(BadRequest) as refused:
        decode_page_token(token, "lobby", {"game": ""})
    assert (refused.value.reason, refused.value.metadata) == ("BAD_PAGE_TOKEN", {"field": "page_token"})


def test_a_token_built_as_ours_is_read():
    """The format is the server's own (opaque to clients, stable within a version)."""
    assert decode_page_token(_body(), "lobby", {"game": ""}) == (1.5, "m1")
