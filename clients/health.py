"""``python -m clients.health``: ask a running engine whether it serves (grpc.health.v1).

The container image's HEALTHCHECK runs this module, because ``grpc_health_probe`` is not
available from the package registries this project builds from. It speaks only the standard
gRPC health protocol (grpcio-health-checking), so it works against any gRPC server.

Exit status: 0 when the service answers SERVING; 1 otherwise (NOT_SERVING while draining,
SERVICE_UNKNOWN, unreachable, timeout). Docker and most supervisors read 1 as "unhealthy"; the
reason is printed on stderr. 2: a usage error, the check's own command line is wrong (an
argument it does not take, a ``--ca`` file it cannot read or that holds no certificate), as
for every client; a supervisor counts it as a failed check too.

The target defaults to ``127.0.0.1:$CARDGAMES_PORT`` (50051 when unset) so that the image's
health check follows a port changed through the environment; a value the engine refuses, or 0,
is a usage error (``cardgames_client.default_target``).
"""

from __future__ import annotations

import argparse
import os
import sys

if __name__ == "__main__":
    # A command, not the library: gRPC's C core writes only its errors (as `serve` has it), so
    # that a failure is the one "error" line and not a plain INFO line per failed handshake
    # before it (a wrong --ca); GRPC_VERBOSITY=INFO brings them back. Before grpc is imported.
    os.environ.setdefault("GRPC_VERBOSITY", "ERROR")

import grpc  # noqa: E402
from grpc_health.v1 import health_pb2, health_pb2_grpc

from engine_service.command_line import check_text, parse_args  # noqa: E402

from .cardgames_client import (ca_file_arg, command_parser, seconds_arg,  # noqa: E402
                               target_arg, target_or_default)


def check(target: str, service: str = "", timeout_s: float = 3.0,
          credentials: grpc.ChannelCredentials | None = None,
          server_name: str | None = None) -> str:
    """The health status name (``SERVING``, ``NOT_SERVING``, ...) of ``service`` at ``target``.

    ``service=""`` asks about the server as a whole. Raises grpc.RpcError when the server does
    not answer in ``timeout_s`` or has no health service.
    """
    options = [("grpc.ssl_target_name_override", server_name)] if server_name else []
    channel = (grpc.secure_channel(target, credentials, options=options) if credentials
               else grpc.insecure_channel(target))
    with channel:
        reply = health_pb2_grpc.HealthStub(channel).Check(
            health_pb2.HealthCheckRequest(service=service), timeout=timeout_s)
    return health_pb2.HealthCheckResponse.ServingStatus.Name(reply.status)


def build_parser() -> argparse.ArgumentParser:
    parser = command_parser("python -m clients.health", __doc__.split("\n\n")[0])
    parser.add_argument("--target", type=target_arg,
                        help="host:port of the engine (default: 127.0.0.1:$CARDGAMES_PORT or 50051)")
    parser.add_argument("--service", default="",
                        help="service name to ask about (default: the whole server)")
    parser.add_argument("--timeout", type=seconds_arg, default=3.0, help="seconds to wait for the answer")
    parser.add_argument("--tls", action="store_true", help="connect with TLS")
    parser.add_argument("--ca", type=ca_file_arg, metavar="FILE", help="PEM root certificate(s) for --tls (default: system roots)")
    parser.add_argument("--server-name", help="TLS server name to verify instead of the target's host (implies --tls)")
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parse_args(parser, argv)  # an unknown flag named, its value not shown
    check_text(parser, args, paths={"ca"})
    args.target = target_or_default(parser, args.target)
    credentials = None
    if args.tls or args.ca or args.server_name:  # a name to verify means TLS, as --ca does
        roots = args.ca.value if args.ca else None  # read as the command line was parsed (ca_file_arg)
        credentials = grpc.ssl_channel_credentials(root_certificates=roots)
    try:
        status = check(args.target, args.service, args.timeout, credentials, args.server_name)
    except grpc.RpcError as exc:
        detail = exc.details()
        if not detail and exc.code() is grpc.StatusCode.NOT_FOUND:
            # the health service's answer to a name it does not know carries no message: it
            # printed "NOT_FOUND: " and nothing, whatever name was mistyped
            detail = f"the server has no service named {args.service!r}"
        print(f"{args.target}: {exc.code().name}" + (f": {detail}" if detail else ""), file=sys.stderr)
        return 1
    if status != "SERVING":
        print(f"{args.target}: {status}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
