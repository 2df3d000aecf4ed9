"""Seat tokens: 256 random bits, shown once to the player who joins, stored only as a hash.

A leaked database therefore gives no way to act for a seat. The hash is a plain SHA-256 (no
salt or stretching is needed: the token is a uniformly random 256-bit secret, not a
password), so the token -> seat lookup is one dictionary access.
"""

from __future__ import annotations

import hashlib
import secrets

TOKEN_BYTES = 32


def new_token() -> str:
    return secrets.token_urlsafe(TOKEN_BYTES)


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def new_match_id() -> str:
    """An unguessable match id (96 bits): knowing an id is what lets a spectator watch."""
    return secrets.token_urlsafe(12)
