"""Per-caller request-rate limits: token buckets, pure logic (no grpc, no clock of its own).

The service runs on one event loop: a client calling in a tight loop (a bot that retries
without waiting, a script hammering CreateMatch) takes loop time from every other match. The
transport (server.py) therefore gives each caller a token bucket and refuses a call when its
bucket is empty (RESOURCE_EXHAUSTED, reason RATE_LIMITED, with a RetryInfo saying when a
token will be there: errors.py). Callers are

* a seat token (its hash, never the token itself) for calls a seat token authenticates;
* a peer address (the IP part of grpc's ``context.peer()``, an IPv6 address by its /64:
  :func:`peer_key`) for the rest; behind a proxy the operator trusts (``trusted_proxies``),
  the client's address that the proxy appended to ``x-forwarded-for`` (:func:`client_key`).

A bucket holds at most ``burst`` tokens and gains ``per_s`` tokens a second; a call takes
one. A refused call takes nothing, so a client that keeps hammering still gets ``per_s``
calls a second through, and one that waits the RetryInfo delay is served.

Memory is bounded: a bucket left alone for ``burst / per_s`` seconds is full again, exactly
like a bucket never seen, so it is dropped (buckets are kept in least-recently-used order, so
this is a look at the oldest few on each call); and beyond ``max_keys`` live buckets the
least recently used one is dropped early (its caller gets a full bucket: lenient, never
wrong about anyone else). The clock is passed in (``time.monotonic()`` in the server, a
fake in the tests).
"""

from __future__ import annotations

import ipaddress
import math
from collections import OrderedDict
from dataclasses import dataclass
from typing import Hashable, Iterable, NamedTuple, Union
from urllib.parse import unquote

#: Most buckets held per key kind before the least recently used is dropped early. A bucket is
#: ~150 bytes with its key: 65,536 of them stay under ~10 MB.
DEFAULT_MAX_KEYS = 65_536

Network = Union[ipaddress.IPv4Network, ipaddress.IPv6Network]
Address = Union[ipaddress.IPv4Address, ipaddress.IPv6Address]


@dataclass(frozen=True)
class Rate:
    """One limit: ``per_s`` calls a second with bursts of ``burst``; ``per_s`` 0 means no limit.

    ``burst`` 0 means one second's worth of calls (at least 1).
    """

    per_s: float = 0.0
    burst: int = 0

    def __post_init__(self) -> None:
        if not (math.isfinite(self.per_s) and self.per_s >= 0):
            raise ValueError(f"a rate must be a finite number >= 0, not {self.per_s!r}")
        if self.burst < 0:
            raise ValueError(f"a burst must be >= 0, not {self.burst!r}")

    @property
    def enabled(self) -> bool:
        return self.per_s > 0

    @property
    def capacity(self) -> float:
        """The bucket's size (tokens)."""
        return float(self.burst) if self.burst > 0 else max(1.0, math.ceil(self.per_s))


@dataclass(frozen=True)
class RateLimits:
    """The transport's limits: per seat token, per peer address. Both off by default (the
    benchmarks and the tests play at machine speed); docs/operations.md suggests values."""

    seat: Rate = Rate()
    peer: Rate = Rate()
    #: the proxies whose ``x-forwarded-for`` names the caller (:func:`client_key`)
    trusted_proxies: tuple[Network, ...] = ()

    @property
    def enabled(self) -> bool:
        return self.seat.enabled or self.peer.enabled


class Verdict(NamedTuple):
    """The answer for one call: ``delay`` 0.0 allowed (a token was taken), else refused and
    the seconds until a token is available; ``streak`` the refusals in a row for this key
    including this one (1: the first, worth a log line; 0 when allowed)."""

    delay: float
    streak: int

    @property
    def allowed(self) -> bool:
        return self.delay == 0.0


_ALLOWED = Verdict(0.0, 0)


class _Bucket:
    __slots__ = ("tokens", "stamp", "streak")

    def __init__(self, tokens: float, stamp: float) -> None:
        self.tokens = tokens
        self.stamp = stamp  # when ``tokens`` was last brought up to date
        self.streak = 0


class TokenBuckets:
    """One token bucket per key, for one :class:`Rate` (see the module docstring)."""

    def __init__(self, rate: Rate, *, max_keys: int = DEFAULT_MAX_KEYS) -> None:
        if not rate.enabled:
            raise ValueError("TokenBuckets needs a rate > 0 (0 means: do not limit)")
        if max_keys < 1:
            raise ValueError("max_keys must be >= 1")
        self._per_s = rate.per_s
        self._capacity = rate.capacity
        #: idle this long, a bucket is full again: the same as no bucket at all
        self.refill_s = self._capacity / self._per_s
        self._max_keys = max_keys
        self._buckets: OrderedDict[Hashable, _Bucket] = OrderedDict()

    def __len__(self) -> int:
        return len(self._buckets)

    def take(self, key: Hashable, now: float) -> Verdict:
        """Take a token from ``key``'s bucket at monotonic time ``now`` (seconds)."""
        buckets = self._buckets
        self._evict_idle(now)
        bucket = buckets.get(key)
        if bucket is None:
            if len(buckets) >= self._max_keys:
                buckets.popitem(last=False)
            bucket = buckets[key] = _Bucket(self._capacity, now)
        else:
            buckets.move_to_end(key)
            elapsed = now - bucket.stamp
            if elapsed > 0:  # a clock that went back (it should not) refills nothing
                bucket.tokens = min(self._capacity, bucket.tokens + elapsed * self._per_s)
                bucket.stamp = now
        if bucket.tokens >= 1.0:
            bucket.tokens -= 1.0
            bucket.streak = 0
            return _ALLOWED
        bucket.streak += 1
        return Verdict((1.0 - bucket.tokens) / self._per_s, bucket.streak)

    def _evict_idle(self, now: float) -> None:
        """Drop the buckets untouched for ``refill_s``: the least recently used come first,
        so this stops at the first bucket still in use."""
        buckets, horizon = self._buckets, now - self.refill_s
        while buckets:
            key, oldest = next(iter(buckets.items()))
            if oldest.stamp > horizon:
                return
            del buckets[key]


def peer_key(peer: str) -> str:
    """The key of a grpc peer string for the per-peer limit: its IPv4 address, or the /64
    network of its IPv6 address.

    ``ipv4:203.0.113.7:51234`` -> ``203.0.113.7``; ``ipv6:[2001:db8::1]:51234`` (or
    percent-encoded, ``ipv6:%5B2001:db8::1%5D:51234``) -> ``2001:db8::/64``: a single IPv6
    host is normally given a whole /64 and picks any address in it (privacy addresses), so a
    per-address bucket would give one client as many buckets as it likes. An IPv4 client of
    a dual-stack listener (``[::ffff:203.0.113.7]``) is its IPv4 address, so it shares one
    bucket whichever way it connects. Other peers (``unix:...``) are their own key.
    """
    ip = _peer_address(peer)
    return peer if ip is None else _address_key(ip)


def client_key(peer: str, metadata: Iterable[tuple[str, str | bytes]],
               trusted_proxies: tuple[Network, ...]) -> str:
    """The per-peer key of a call's client: :func:`peer_key` of the connection, unless the
    connection comes from a proxy in ``trusted_proxies``; then of the address that proxy
    appended to ``x-forwarded-for``.

    Behind a proxy (a gRPC-web proxy in front of browsers, a load balancer) every call comes
    from the proxy's address, so all its clients shared one bucket. The header's entries are
    read from the right, the proxies' own end: each trusted address is a further proxy of
    the operator's, and the first one that is not is the client. What a client wrote to the
    left of it is never read, so a client cannot pick its bucket by sending the header
    itself; nor does the header count from a connection that is not a trusted proxy. An
    entry that is not an address (a misconfigured proxy) stops the walk at the last proxy
    reached, whose key it is then. Multiple ``x-forwarded-for`` headers read as one list, in
    their order."""
    ip = _peer_address(peer)
    if ip is None:
        return peer
    if not trusted_proxies or not _within(ip, trusted_proxies):
        return _address_key(ip)
    hops = [hop.strip() for key, value in metadata if key == "x-forwarded-for"
            for hop in (value.decode("latin-1") if isinstance(value, bytes) else value).split(",")]
    for hop in reversed(hops):
        forwarded = _hop_address(hop)
        if forwarded is None:
            break
        ip = forwarded
        if not _within(ip, trusted_proxies):
            break
    return _address_key(ip)


def parse_networks(text: str) -> tuple[Network, ...]:
    """``"10.0.0.0/8, 192.0.2.7, fd00::/8"`` -> its networks (an address alone is a network of
    one); empty: none. ValueError naming the entry that is neither, or a network with host
    bits set (``10.0.0.1/8``: a typo of an address or of a prefix; widened, it would trust
    far more than meant)."""
    networks = []
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        try:
            networks.append(ipaddress.ip_network(part))
        except ValueError as exc:
            raise ValueError(f"not an IP address or network: {part!r} ({exc})") from None
    return tuple(networks)


def _peer_address(peer: str) -> Address | None:
    """The IP address of a grpc peer string (an IPv4-mapped one as IPv4); None for others."""
    kind, _, rest = peer.partition(":")
    if kind not in ("ipv4", "ipv6"):
        return None
    return _plain_address(unquote(rest).rpartition(":")[0].strip("[]"))


def _hop_address(hop: str) -> Address | None:
    """An ``x-forwarded-for`` entry: an address, and from some proxies ``[v6]:port`` or
    ``v4:port``."""
    if hop.startswith("["):
        hop = hop[1:].partition("]")[0]
    elif hop.count(":") == 1:
        hop = hop.partition(":")[0]
    return _plain_address(hop)


def _plain_address(text: str) -> Address | None:
    try:
        ip = ipaddress.ip_address(text)
    except ValueError:
        return None
    mapped = getattr(ip, "ipv4_mapped", None)
    return mapped if mapped is not None else ip


def _within(ip: Address, networks: tuple[Network, ...]) -> bool:
    return any(ip.version == net.version and ip in net for net in networks)


def _address_key(ip: Address) -> str:
    if ip.version == 6 and not ip.is_loopback:
        return str(ipaddress.ip_network((ip, 64), strict=False))
    return str(ip)
