"""``trident-spark drpc-server``: a DRPC server; topologies serve its requests, callers ask it."""

from __future__ import annotations

import argparse
import contextlib
import signal
import sys
import threading
from typing import Any

from trident_spark.drpc.board import DEFAULT_MAX_QUEUE
from trident_spark.drpc.server import (
    DEFAULT_IDLE_TIMEOUT,
    DEFAULT_MAX_CONNECTIONS,
    DEFAULT_MAX_REQUEST_BYTES,
    DEFAULT_PORT,
)
from trident_spark.drpc.token import TOKEN_ENV

HELP = "run a DRPC server (running topologies answer its requests)"

EPILOG = f"""examples:
  trident-spark drpc-server                           on 127.0.0.1:3772
  trident-spark drpc-server --port 4000 --request-timeout 60 --token-file ~/.drpc-token
  curl -d "cat the dog" http://127.0.0.1:3772/drpc/words    ask it over HTTP

A topology reaches it with newDRPCStream(function, "host:port") or run(drpc="host:port")
(trident-spark run FILE --drpc host:port). With a token (--token-file PATH, a file only you
can read; or ${TOKEN_ENV}), every request but /health must carry it
(Authorization: Bearer <token>), callers and topologies alike: give it to them with
DRPCClient(token=...), run(drpc_token=...), trident-spark drpc --token-file, or the same
variable. --token TOKEN works too, but any local user sees it in `ps`. Without a token,
anyone who reaches the port can ask, take and answer requests: keep it on 127.0.0.1.
"""


def register(commands: Any) -> None:
    server = commands.add_parser("drpc-server", help=HELP, description="Run a DRPC server until Ctrl-C.",
                                 epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    server.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    server.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"port (default {DEFAULT_PORT})")
    server.add_argument("--request-timeout", type=float, default=600.0, metavar="SECONDS",
                        help="seconds a request waits for its answer (Storm's drpc.request.timeout.secs; "
                             "600)")
    server.add_argument("--lease", type=float, default=20.0, metavar="SECONDS",
                        help="seconds a topology that took requests may stay silent before they fail (20)")
    server.add_argument("--max-request-bytes", type=int, default=DEFAULT_MAX_REQUEST_BYTES, metavar="BYTES",
                        help="largest request body (args, results); more is refused with 413 before it is "
                             f"read (Storm's drpc.max_buffer_size; {DEFAULT_MAX_REQUEST_BYTES})")
    server.add_argument("--max-queue", type=int, default=DEFAULT_MAX_QUEUE, metavar="REQUESTS",
                        help="requests of one function that may wait to be taken; more is refused with 503 "
                             f"(Storm's drpc.queue.size; {DEFAULT_MAX_QUEUE})")
    server.add_argument("--idle-timeout", type=float, default=DEFAULT_IDLE_TIMEOUT, metavar="SECONDS",
                        help="seconds a connection may send nothing before it is closed "
                             f"({DEFAULT_IDLE_TIMEOUT:g})")
    server.add_argument("--max-connections", type=int, default=DEFAULT_MAX_CONNECTIONS, metavar="N",
                        help=f"connections served at once; one more gets 503 ({DEFAULT_MAX_CONNECTIONS})")
    token = server.add_mutually_exclusive_group()
    token.add_argument("--token-file", metavar="PATH",
                       help=f"ask every request for the token in PATH (mode 600); default: ${TOKEN_ENV} "
                            "if set, else no token")
    token.add_argument("--token", metavar="TOKEN",
                       help="the token itself (visible to every local user in `ps`: prefer --token-file)")
    server.set_defaults(handler=main)


def main(args: argparse.Namespace) -> int:
    from trident_spark.drpc.server import DRPCServer
    from trident_spark.drpc.token import check_token, read_token_file, token_from_env

    token: str | None
    if args.token_file:
        token = read_token_file(args.token_file)
    elif args.token:
        token = check_token(args.token, "--token")
    else:
        token = token_from_env()
    server = DRPCServer(args.host, args.port, request_timeout=args.request_timeout, lease=args.lease,
                        max_request_bytes=args.max_request_bytes, max_queue=args.max_queue,
                        idle_timeout=args.idle_timeout, max_connections=args.max_connections, token=token)
    print(f"DRPC server on {server.address} (request timeout {args.request_timeout:g} s, lease "
          f"{args.lease:g} s, requests up to {args.max_request_bytes} bytes, {args.max_queue} queued per "
          f"function, {'a token asked' if token else 'no token: anyone who reaches it may use it'}); "
          "Ctrl-C stops it", file=sys.stderr, flush=True)

    def stop(signum: int, frame: Any) -> None:
        threading.Thread(target=server.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, stop)
    with contextlib.suppress(KeyboardInterrupt):
        server.serve_forever()
    return 0
