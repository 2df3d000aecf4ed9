"""Bearer tokens from call metadata, and the admin token check.

A client sends ``authorization: Bearer <token>`` (a seat token from JoinMatch, or the admin
token). The transport only *parses* the header and recognises the admin token; what a seat
token means is the session layer's business (``MatchService.authenticate``). Tokens are
secrets: they are never logged, never put in an error message, and compared in constant time.
"""

from __future__ import annotations

import hmac
from typing import Iterable

from ..sessions import api

_SCHEME = "bearer"
#: Longer values are refused before any comparison (a token is ~43 characters).
MAX_TOKEN_CHARS = 512


def bearer_token(metadata: Iterable[tuple[str, str | bytes]] | None) -> str | None:
    """The bearer token of a call, None without an ``authorization`` entry.

    A malformed header (another scheme, an empty token, white space inside the token, several
    headers) is Unauthenticated: a client that tried to authenticate must not silently become
    a spectator. A token is one word (RFC 6750's b64token; seat tokens are URL-safe base64):
    ``Bearer a b`` is a malformed header, not a token that matches no seat. So is a token
    holding a control character or a byte beyond ASCII (a client that sent raw bytes, or a
    NUL-terminated C string): no token is made of them (seat tokens are base64, the admin
    token printable ASCII), and "unknown or expired seat token" sent its author after a token
    that had never been the problem.
    """
    values = [v for k, v in (metadata or ()) if k.lower() == "authorization"]
    if not values:
        return None
    if len(values) > 1:
        raise api.Unauthenticated("send one authorization header", reason="MALFORMED_TOKEN")
    value = values[0]
    if isinstance(value, bytes):
        value = value.decode("utf-8", "replace")
    scheme, _, token = value.strip().partition(" ")
    token = token.strip()
    # printable ASCII has one white-space character, the space (the others, \t\n\x1c..., are
    # control characters): one search instead of a test of every character
    if (scheme.lower() != _SCHEME or not token or len(token) > MAX_TOKEN_CHARS
            or " " in token or not (token.isascii() and token.isprintable())):
        raise api.Unauthenticated("the authorization header must be 'Bearer <token>'",
                                  reason="MALFORMED_TOKEN")
    return token


class AdminGate:
    """Recognises the admin token. Without a configured token every admin call is refused
    (PERMISSION_DENIED, reason ADMIN_DISABLED): there is no default password."""

    def __init__(self, admin_token: str | None) -> None:
        self._token = (admin_token or "").encode() or None

    @property
    def enabled(self) -> bool:
        return self._token is not None

    def is_admin(self, token: str | None) -> bool:
        """True when ``token`` is the admin token (constant-time comparison)."""
        return (self._token is not None and token is not None
                and hmac.compare_digest(token.encode(), self._token))

    def require(self, token: str | None) -> None:
        """Raise unless ``token`` is the admin token."""
        if self._token is None:
            raise api.PermissionDenied("the admin API is disabled on this server",
                                       reason="ADMIN_DISABLED")
        if token is None:
            raise api.Unauthenticated("the admin token is required", reason="ADMIN_TOKEN_REQUIRED")
        if not self.is_admin(token):
            raise api.PermissionDenied("not the admin token", reason="NOT_ADMIN")
