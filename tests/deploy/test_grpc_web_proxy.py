"""The gRPC-web proxy of the compose stack (deploy/envoy/envoy.yaml, Envoy's grpc_web filter)
checked without Envoy: the configuration is parsed into Envoy's own v3 API messages (the
xds-protos package, generated from envoyproxy/data-plane-api), so a misspelt field, a value of
the wrong type or an unknown filter type fails here as it would fail Envoy's start; and what a
browser frontend needs of it is checked against the service: the players' API routed to the
engine's real port with no timeout (WatchMatch lasts a match), CORS letting a page send its
seat token and read the status and ErrorInfo details, HTTP/2 to the engine, and the proxy's
address trusted by the engine's per-peer rate limit (x-forwarded-for)."""

from __future__ import annotations

import copy
import ipaddress
import re

import pytest
import yaml
from envoy.config.bootstrap.v3 import bootstrap_pb2
from envoy.extensions.filters.http.cors.v3 import cors_pb2
from envoy.extensions.filters.http.grpc_web.v3 import grpc_web_pb2  # noqa: F401 (registers the type)
from envoy.extensions.filters.http.router.v3 import router_pb2  # noqa: F401
from envoy.extensions.filters.network.http_connection_manager.v3 import http_connection_manager_pb2 as hcm_pb2
from envoy.extensions.upstreams.http.v3 import http_protocol_options_pb2
from google.protobuf import json_format

from engine_service.settings import Settings
from engine_service.transport.generated import admin_pb2, card_games_pb2
from engine_service.transport.ratelimit import parse_networks

from .promql import DEPLOY

ENVOY = DEPLOY / "envoy" / "envoy.yaml"


def bootstrap(config: dict | None = None) -> bootstrap_pb2.Bootstrap:
    """The configuration as Envoy reads it (ParseError on any field Envoy does not know)."""
    return json_format.ParseDict(config if config is not None else yaml.safe_load(ENVOY.read_text()),
                                 bootstrap_pb2.Bootstrap())


def connection_manager() -> hcm_pb2.HttpConnectionManager:
    (listener,) = bootstrap().static_resources.listeners
    (chain,) = listener.filter_chains
    (network_filter,) = chain.filters
    manager = hcm_pb2.HttpConnectionManager()
    assert network_filter.typed_config.Unpack(manager)
    return manager


def compose() -> dict:
    return yaml.safe_load((DEPLOY / "compose.yaml").read_text())


def test_the_configuration_is_envoy_v3_api():
    config = bootstrap()
    assert config.static_resources.listeners and config.static_resources.clusters


@pytest.mark.parametrize("path, bad", [
    (("static_resources", "listeners", 0, "filter_chains", 0, "filters", 0, "typed_config"),
     {"use_remote_addres": True}),  # a misspelt field
    (("static_resources", "clusters", 0), {"connect_timeout": "two seconds"}),  # not a duration
    (("static_resources", "clusters", 0, "typed_extension_protocol_options",
      "envoy.extensions.upstreams.http.v3.HttpProtocolOptions"),
     {"@type": "type.googleapis.com/envoy.extensions.upstreams.http.v3.NoSuchOptions"}),
])
def test_the_check_catches_what_envoy_would_refuse(path, bad):
    """The parse above is a real check: the mistakes Envoy refuses at start fail it."""
    broken = copy.deepcopy(yaml.safe_load(ENVOY.read_text()))
    target = broken
    for key in path:
        target = target[key]
    target.update(bad)
    with pytest.raises(json_format.ParseError):
        bootstrap(broken)


def test_grpc_web_and_cors_run_before_the_router():
    names = [f.name for f in connection_manager().http_filters]
    assert names == ["envoy.filters.http.grpc_web", "envoy.filters.http.cors", "envoy.filters.http.router"]


def test_the_players_api_reaches_the_engine_with_no_timeout():
    """A route timeout would cut every WatchMatch stream (a match lasts far longer than
    Envoy's default 15 s)."""
    (host,) = connection_manager().route_config.virtual_hosts
    services = [f"/{card_games_pb2.DESCRIPTOR.services_by_name['CardGamesService'].full_name}/",
                "/grpc.health.v1.Health/"]
    for service in services:
        route = next((r for r in host.routes if service.startswith(r.match.prefix)), None)
        assert route is not None, f"{service} is not routed"
        assert route.route.cluster == "engine"
        assert route.route.HasField("timeout") and route.route.timeout.ToTimedelta().total_seconds() == 0
        assert route.route.max_stream_duration.grpc_timeout_header_max.ToTimedelta().total_seconds() == 0


def test_the_public_proxy_routes_neither_the_admin_service_nor_reflection():
    """The proxy faces browsers on the internet with CORS open to any origin: AdminService
    behind it would let anyone try admin tokens, and reflection lists every call. Before,
    the route's prefix was all of ``/cardgames.v1.``, AdminService included."""
    (host,) = connection_manager().route_config.virtual_hosts
    for method in (f"/{admin_pb2.DESCRIPTOR.services_by_name['AdminService'].full_name}/ListMatches",
                   "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo"):
        assert not any(method.startswith(r.match.prefix) for r in host.routes), method


def test_cors_lets_a_page_send_its_token_and_read_errors():
    (host,) = connection_manager().route_config.virtual_hosts
    policy = cors_pb2.CorsPolicy()
    assert host.typed_per_filter_config["envoy.filters.http.cors"].Unpack(policy)
    allowed = {h.strip() for h in policy.allow_headers.split(",")}
    assert {"authorization", "content-type", "x-grpc-web", "x-user-agent", "grpc-timeout"} <= allowed
    exposed = {h.strip() for h in policy.expose_headers.split(",")}
    # the status, its message and the details (ErrorInfo, RetryInfo: docs/api.md)
    assert {"grpc-status", "grpc-message", "grpc-status-details-bin"} <= exposed
    assert "POST" in policy.allow_methods and policy.allow_origin_string_match


def test_cors_allows_every_header_docs_api_md_tells_a_client_to_send():
    """docs/api.md's Connecting table names the metadata a client sends: ``authorization`` and
    the optional ``x-request-id``. The proxy allowed the first only, so a page that sent a
    request id (to find its call in the server's logs) had every call blocked by the
    browser's CORS preflight ("x-request-id is not allowed by Access-Control-Allow-Headers";
    Connect-web reports a failed fetch, with no status) instead of naming the call."""
    api = (DEPLOY.parent / "docs" / "api.md").read_text()
    table = api[api.index("## Connecting"):api.index("## A match from start to end")]
    sent = set(re.findall(r"metadata `([a-z0-9-]+)", table))
    assert sent >= {"authorization", "x-request-id"}
    (host,) = connection_manager().route_config.virtual_hosts
    policy = cors_pb2.CorsPolicy()
    assert host.typed_per_filter_config["envoy.filters.http.cors"].Unpack(policy)
    allowed = {h.strip() for h in policy.allow_headers.split(",")}
    assert sent <= allowed, sent - allowed


def test_the_engine_is_reached_over_http2_at_its_compose_address():
    (cluster,) = bootstrap().static_resources.clusters
    options = http_protocol_options_pb2.HttpProtocolOptions()
    assert cluster.typed_extension_protocol_options[
        "envoy.extensions.upstreams.http.v3.HttpProtocolOptions"].Unpack(options)
    assert options.explicit_http_config.HasField("http2_protocol_options")
    (endpoints,) = cluster.load_assignment.endpoints
    (endpoint,) = endpoints.lb_endpoints
    address = endpoint.endpoint.address.socket_address
    engine = compose()["services"]["engine"]
    assert address.address == "engine"
    assert address.port_value == int(engine["environment"]["CARDGAMES_PORT"]) == Settings().port


def test_the_proxy_does_not_cap_open_calls_below_the_engines_limits():
    """Every browser's WatchMatch stream is a request open to the engine cluster for the whole
    match. Envoy's default circuit breaker (1,024 open requests a cluster) refused every call
    past about a thousand players and spectators with 503 while the engine had room for
    --max-matches tables of four seats and --max-watchers spectators: the proxy's threshold
    must hold at least that many streams."""
    (cluster,) = bootstrap().static_resources.clusters
    default = [t for t in cluster.circuit_breakers.thresholds if t.priority == 0]  # DEFAULT
    assert default, "no DEFAULT circuit breaker threshold: Envoy's 1,024 open requests apply"
    (threshold,) = default
    session = Settings().session
    streams = 4 * session.max_matches + session.max_watchers
    assert threshold.HasField("max_requests") and threshold.max_requests.value >= streams
    assert threshold.HasField("max_pending_requests") and threshold.max_pending_requests.value > 1024


def test_the_engine_trusts_the_proxy_and_only_it():
    """The proxy appends each browser's address to x-forwarded-for (use_remote_address), and
    the engine counts a call from the proxy's fixed address against that address; nothing
    else of the stack is trusted, so no other container picks a bucket with the header."""
    assert connection_manager().use_remote_address.value is True
    stack = compose()
    proxy = stack["services"]["grpc-web"]
    assert proxy["profiles"] == ["web"]
    address = ipaddress.ip_address(proxy["networks"]["default"]["ipv4_address"])
    (subnet,) = stack["networks"]["default"]["ipam"]["config"]
    assert address in ipaddress.ip_network(subnet["subnet"])
    trusted = parse_networks(stack["services"]["engine"]["environment"]["CARDGAMES_TRUSTED_PROXIES"])
    assert [n.num_addresses for n in trusted] == [1] and address in trusted[0]
    (listener,) = bootstrap().static_resources.listeners
    port = listener.address.socket_address.port_value
    assert f"{port}:{port}" in proxy["ports"]
    assert "./envoy/envoy.yaml:/etc/envoy/envoy.yaml:ro" in proxy["volumes"]
