"""Seat tokens: 256 random bits, shown once to the player who joins, stored only as a hash.

A leaked database therefore gives no way to act for a seat. The hash is a plain SHA-256 (no
salt or stretching is needed: the token is a uniformly random 256-bit secret, not a
password), so the token -> seat lookup is one dictionary access.
"""

from __future__ import annotations

import hashlib
import secrets
import string

TOKEN_BYTES = 32


def new_token() -> str:
    return secrets.token_urlsafe(TOKEN_BYTES)


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


#: JoinMatch's ``client_join_id`` and CreateMatch's ``client_create_id``: secrets the client
#: chooses (a UUID), this long.
MIN_CLIENT_ID_LENGTH = 16
MAX_CLIENT_ID_LENGTH = 128


def join_id_hash(match_id: str, client_join_id: str) -> str:
    """What a seat keeps of the ``client_join_id`` its player joined with (SeatRecord.join_hash):
    the SHA-256 of the id salted with its match's id (95 random bits) under a prefix of its
    own. Unlike a token, the id is the client's choice and may be weak: the salt makes each
    guess good for one match only, and the prefix keeps the hash apart from the token hashes."""
    return hashlib.sha256(f"cardgames-join-id:{match_id}:{client_join_id}".encode("utf-8")).hexdigest()



def create_id_hash(client_create_id: str) -> str:
    """What a match keeps of the ``client_create_id`` it was created with (MatchRecord.create_hash):
    the SHA-256 of the id under a prefix of its own (apart from the token and join id hashes).
    There is no match id to salt it with (the id names the match before there is one), so it
    is looked up across every stored match: the id must be a secret the client chose at random
    (a UUID), which the 16-character minimum and the documentation ask for."""
    return hashlib.sha256(f"cardgames-create-id:{client_create_id}".encode("utf-8")).hexdigest()


#: Match ids are letters and digits only: an id is typed into commands (``clients.watch
#: MATCH_ID``) and URLs, and one starting with "-" (as a URL-safe base64 id may) reads as an
#: option to a command line.
MATCH_ID_ALPHABET = string.ascii_letters + string.digits
MATCH_ID_LENGTH = 16  # 62**16: 95 bits


def new_match_id() -> str:
    """An unguessable match id (95 bits): knowing an id is what lets a spectator watch."""
    return "".join(secrets.choice(MATCH_ID_ALPHABET) for _ in range(MATCH_ID_LENGTH))
