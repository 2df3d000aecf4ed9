"""The gRPC edge of the service: the only package that imports grpc (ARCHITECTURE.md section 2).

* :mod:`.generated` — protobuf / gRPC code generated from proto/cardgames/v1 (``make proto``);
* :mod:`.codec` — protobuf messages <-> the session layer's values (sessions/api.py), and the
  one parser of action notation strings into structured fields;
* :mod:`.errors` — the one table mapping exceptions to gRPC status codes and ErrorInfo reasons;
* :mod:`.auth` — bearer tokens from call metadata, the admin token check;
* :mod:`.interceptors` — one structlog line and the RPC metrics per call;
* :mod:`.ratelimit` — per-caller token buckets (request-rate limits, applied in server.py);
* :mod:`.servicers` — CardGamesService and AdminService over a MatchService;
* :mod:`.server` — the grpc.aio server: health, reflection, limits, TLS, graceful drain.
"""
