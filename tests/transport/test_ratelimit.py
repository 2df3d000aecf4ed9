"""Token buckets (engine_service/transport/ratelimit.py) with a fake clock: bursts, refill, the
delay announced, refused calls taking nothing, idle buckets evicted, the key cap, peer keys."""

from __future__ import annotations

import dataclasses

import pytest

from engine_service.transport.ratelimit import (Rate, RateLimits, TokenBuckets, client_key, parse_networks,
                                                 peer_key)


def test_a_burst_then_one_call_per_interval():
    buckets = TokenBuckets(Rate(per_s=2, burst=3))
    assert [buckets.take("a", 10.0).allowed for _ in range(3)] == [True] * 3
    refused = buckets.take("a", 10.0)
    assert not refused.allowed and refused.delay == pytest.approx(0.5) and refused.streak == 1
    # a quarter of a token later, three quarters are missing: 0.375 s at 2 tokens a second
    again = buckets.take("a", 10.125)
    assert again.delay == pytest.approx(0.375) and again.streak == 2
    # waiting the announced delay is enough, and the run of refusals ends
    assert buckets.take("a", 10.5) == (0.0, 0)
    refused = buckets.take("a", 10.5)
    assert refused.delay == pytest.approx(0.5) and refused.streak == 1  # a new run of refusals


def test_a_refused_call_takes_nothing():
    """A client hammering an empty bucket still gets per_s calls a second through."""
    buckets = TokenBuckets(Rate(per_s=10, burst=1))
    now, allowed = 0.0, 0
    for _ in range(1000):  # 1000 calls in one second
        allowed += buckets.take("bot", now).allowed
        now += 0.001
    assert 10 <= allowed <= 11  # the first token, then one every 100 ms


def test_keys_have_their_own_buckets_and_the_bucket_never_overfills():
    buckets = TokenBuckets(Rate(per_s=1, burst=2))
    assert buckets.take("a", 0).allowed and buckets.take("a", 0).allowed
    assert not buckets.take("a", 0).allowed
    assert buckets.take("b", 0).allowed  # b is not a
    # an hour of rest refills to the burst, no more
    assert [buckets.take("a", 3600).allowed for _ in range(3)] == [True, True, False]


def test_a_bucket_refilling_while_still_held_stops_at_the_burst():
    """A bucket holds at most ``burst`` tokens even before it is idle long enough to be
    forgotten (refill_s): 2.9 s of refill on top of 2 tokens left fills 3, not 4.9."""
    buckets = TokenBuckets(Rate(per_s=1, burst=3))
    assert buckets.take("a", 0.0).allowed  # 2 left
    assert [buckets.take("a", 2.9).allowed for _ in range(4)] == [True, True, True, False]
    assert buckets.take("a", 2.9).delay == pytest.approx(1.0)  # empty: a whole token to wait for


def test_burst_zero_means_one_second_worth():
    assert Rate(per_s=20).capacity == 20
    assert Rate(per_s=2.5).capacity == 3
    assert Rate(per_s=0.2).capacity == 1
    assert Rate(per_s=20, burst=40).capacity == 40
    buckets = TokenBuckets(Rate(per_s=0.5))
    assert buckets.take("a", 0).allowed
    assert buckets.take("a", 0).delay == pytest.approx(2.0)


def test_idle_buckets_are_evicted():
    """A bucket untouched for burst/per_s is full, the same as a new one: it is dropped."""
    buckets = TokenBuckets(Rate(per_s=10, burst=50))
    assert buckets.refill_s == 5.0
    for i in range(1000):
        buckets.take(f"10.0.{i // 256}.{i % 256}", i * 0.001)  # 1000 addresses in one second
    assert len(buckets) == 1000
    buckets.take("10.9.9.9", 5.5005)  # addresses last seen at or before 0.5 s are gone
    assert len(buckets) == 1000 - 501 + 1
    buckets.take("10.9.9.9", 60.0)
    assert len(buckets) == 1  # only the caller itself


def test_a_clock_that_went_back_refills_nothing_and_takes_nothing():
    buckets = TokenBuckets(Rate(per_s=1, burst=2))
    assert buckets.take("a", 10.0).allowed  # one token left
    assert buckets.take("a", 9.5).allowed  # half a second earlier: the token is still there
    assert buckets.take("a", 10.5).delay == pytest.approx(0.5)  # and refilling counts from 10.0


def test_a_bucket_idle_exactly_refill_s_is_evicted():
    """At burst/per_s of rest the bucket is full again: it goes, to the second."""
    buckets = TokenBuckets(Rate(per_s=1, burst=2))
    buckets.take("a", 0.0)
    buckets.take("b", 1.0)
    buckets.take("b", 2.0)
    assert len(buckets) == 1  # a, idle 2 s, is gone; b stays


def test_eviction_forgets_nothing_that_matters():
    """An emptied bucket is kept until it has refilled: its caller stays limited."""
    buckets = TokenBuckets(Rate(per_s=1, burst=2))
    buckets.take("a", 0), buckets.take("a", 0)
    assert buckets.take("b", 1.5).allowed  # b is new
    assert buckets.take("a", 1.5).allowed  # 1.5 tokens refilled, one taken
    assert not buckets.take("a", 1.5).allowed  # 0.5 left: still limited, not forgotten


def test_the_key_cap_drops_the_least_recently_used():
    buckets = TokenBuckets(Rate(per_s=1, burst=1), max_keys=3)
    for key in "abc":
        assert buckets.take(key, 0).allowed
    assert not buckets.take("a", 0).allowed  # a is now the most recently used
    assert buckets.take("d", 0).allowed  # b (least recently used) makes room
    assert len(buckets) == 3
    assert buckets.take("b", 0).allowed  # b forgot it was empty: lenient...
    assert not buckets.take("a", 0).allowed  # ...never wrong about another caller


def test_rates_are_validated():
    for bad in (-1.0, float("inf"), float("nan")):
        with pytest.raises(ValueError, match=f"a rate must be a finite number >= 0, not {bad!r}"):
            Rate(per_s=bad)
    with pytest.raises(ValueError, match="a burst must be >= 0, not -1"):
        Rate(per_s=1, burst=-1)
    with pytest.raises(ValueError, match="needs a rate > 0"):
        TokenBuckets(Rate())  # 0: no limit, so no buckets either
    with pytest.raises(ValueError, match="max_keys"):
        TokenBuckets(Rate(per_s=1), max_keys=0)  # no room for even one caller
    one = TokenBuckets(Rate(per_s=1), max_keys=1)  # room for one: the latest caller
    assert one.take("a", 0).allowed and one.take("b", 0).allowed and len(one) == 1
    assert not RateLimits().enabled
    assert RateLimits(peer=Rate(1)).enabled and RateLimits(seat=Rate(1)).enabled


@pytest.mark.parametrize("peer, ip", [
    ("ipv4:203.0.113.7:51234", "203.0.113.7"),
    ("ipv6:[2001:db8::1]:51234", "2001:db8::/64"),  # an IPv6 host picks any address of its /64
    ("ipv6:%5B2001:db8:0:0:a:b:c:d%5D:51234", "2001:db8::/64"),
    ("ipv6:[2001:db8:0:1::1]:51234", "2001:db8:0:1::/64"),  # the next /64 is another caller
    ("ipv6:[::1]:443", "::1"),
    ("ipv6:[::ffff:203.0.113.7]:51234", "203.0.113.7"),  # IPv4 through a dual-stack listener
    ("ipv6:%5B::ffff:127.0.0.1%5D:1", "127.0.0.1"),
    ("unix:/run/cardgames.sock", "unix:/run/cardgames.sock"),
    ("ipv4:not-an-address:1", "ipv4:not-an-address:1"),
    ("", ""),
])
def test_peer_key(peer, ip):
    assert peer_key(peer) == ip


PROXIES = parse_networks("10.0.0.0/8, fd00::/8")


@pytest.mark.parametrize("peer, forwarded, key", [
    # not a trusted proxy: its header is ignored
    ("ipv4:203.0.113.7:5000", ["192.0.2.1"], "203.0.113.7"),
    # a trusted proxy: the address it appended
    ("ipv4:10.0.0.5:5000", ["192.0.2.1"], "192.0.2.1"),
    # a client's own entries are left of the proxy's: never read
    ("ipv4:10.0.0.5:5000", ["6.6.6.6, 192.0.2.1"], "192.0.2.1"),
    # a chain of the operator's proxies is skipped from the right
    ("ipv4:10.0.0.5:5000", ["6.6.6.6, 192.0.2.1, 10.1.2.3"], "192.0.2.1"),
    # two headers read as one list, in order
    ("ipv4:10.0.0.5:5000", ["6.6.6.6", "192.0.2.1"], "192.0.2.1"),
    # no header, or only proxies in it: the last proxy reached
    ("ipv4:10.0.0.5:5000", [], "10.0.0.5"),
    ("ipv4:10.0.0.5:5000", ["10.9.9.9"], "10.9.9.9"),
    # not an address (a misconfigured proxy): the walk stops at the last proxy reached
    ("ipv4:10.0.0.5:5000", ["192.0.2.1, unknown"], "10.0.0.5"),
    ("ipv4:10.0.0.5:5000", ["192.0.2.1, unknown, 10.1.2.3"], "10.1.2.3"),
    # the header's entries are separated by commas, with or without spaces
    ("ipv4:10.0.0.5:5000", ["6.6.6.6,192.0.2.1,10.1.2.3"], "192.0.2.1"),
    # a forwarded IPv6 client is its /64; ports and brackets some proxies write
    ("ipv6:[fd00::1]:5000", ["2001:db8::1"], "2001:db8::/64"),
    ("ipv4:10.0.0.5:5000", ["[2001:db8::1]:443"], "2001:db8::/64"),
    ("ipv4:10.0.0.5:5000", ["192.0.2.1:51234"], "192.0.2.1"),
    # a dual-stack listener's mapped IPv4 proxy is trusted as IPv4; a mapped client is IPv4
    ("ipv6:[::ffff:10.0.0.5]:5000", ["::ffff:192.0.2.1"], "192.0.2.1"),
    ("unix:/run/proxy.sock", ["192.0.2.1"], "unix:/run/proxy.sock"),
])
def test_client_key_behind_trusted_proxies(peer, forwarded, key):
    # only x-forwarded-for names the client: another header a client may send is never read
    metadata = [("x-forwarded-for", value) for value in forwarded] + [("authorization", "Bearer t"),
                                                                     ("x-real-ip", "198.51.100.9")]
    assert client_key(peer, metadata, PROXIES) == key
    assert client_key(peer, metadata, ()) == peer_key(peer)  # nobody trusted: the connection


def test_trusted_proxies_parse():
    assert parse_networks("") == () and parse_networks(" , ") == ()
    assert [str(n) for n in parse_networks("10.0.0.0/8, ::1")] == ["10.0.0.0/8", "::1/128"]
    with pytest.raises(ValueError, match="'10.0.0.0/33'"):
        parse_networks("10.0.0.0/33")
    with pytest.raises(ValueError, match="'10.1.2.3/8'.*host bits"):  # not silently 10.0.0.0/8
        parse_networks("10.1.2.3/8")


def test_the_default_key_cap_is_65536_buckets():
    """DEFAULT_MAX_KEYS bounds the memory of one key kind (~10 MB): the 65,537th caller seen at
    once makes room by dropping the least recently used bucket."""
    buckets = TokenBuckets(Rate(per_s=1, burst=1))
    for i in range(65_536):
        buckets.take(i, 0.0)
    assert len(buckets) == 65_536
    buckets.take("one more", 0.0)
    assert len(buckets) == 65_536
    assert buckets.take(1, 0.0).allowed is False  # 1 is still held; 0, the oldest, was dropped
    assert buckets.take(0, 0.0).allowed


def test_limits_are_values():
    """The server shares one RateLimits between its calls: it cannot be changed under them."""
    with pytest.raises(dataclasses.FrozenInstanceError):
        RateLimits().seat = Rate(per_s=1)
    with pytest.raises(dataclasses.FrozenInstanceError):
        Rate().per_s = 1.0


def test_only_ip_peers_are_read_as_addresses():
    """A Unix socket whose (relative) path looks like ``address:port`` is its own key, not that
    address's bucket."""
    assert peer_key("unix:203.0.113.7:51234") == "unix:203.0.113.7:51234"
    assert peer_key("unix-abstract:203.0.113.7:51234") == "unix-abstract:203.0.113.7:51234"
    assert client_key("unix:10.0.0.5:80", [("x-forwarded-for", "192.0.2.1")], PROXIES) == "unix:10.0.0.5:80"


def test_forwarded_for_given_as_bytes():
    """A metadata value may come as bytes: read as latin-1 text, so bytes that are not UTF-8
    are an entry that is no address (the walk stops), never an error."""
    assert client_key("ipv4:10.0.0.5:5000", [("x-forwarded-for", b"6.6.6.6, 192.0.2.1")], PROXIES) == "192.0.2.1"
    assert client_key("ipv4:10.0.0.5:5000", [("x-forwarded-for", b"192.0.2.1, \xff")], PROXIES) == "10.0.0.5"
